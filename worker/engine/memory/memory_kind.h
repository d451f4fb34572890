// SPDX-License-Identifier: Apache-2.0
// Where benchmark buffers live (docs/design/data-plane.md#memory-kinds). One MemoryKind per
// `--memory` name; the registry is filled explicitly by
// RegisterBuiltinMemoryKinds() from main, never by static initialisers.
//
// Kinds: default (malloc), regular, interleave, hbw, hbw_preferred, dax_kmem
// (memkind), numa:N (libnuma, bound to node N), pinned (cudaHostAlloc),
// device (cudaMalloc).
#ifndef COLLBENCH_WORKER_ENGINE_MEMORY_MEMORY_KIND_H_
#define COLLBENCH_WORKER_ENGINE_MEMORY_MEMORY_KIND_H_

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine_spec/types.h"

namespace collbench {

class DeviceRuntime;

// Where every host kind starts its buffers: one page, so that kinds compare
// on the same alignment.
inline constexpr size_t kHostBufferAlignmentBytes = 4096;

class MemoryKind {
 public:
  virtual ~MemoryKind() = default;
  virtual std::string name() const = 0;
  virtual MemorySpace space() const = 0;
  // One line for the run record: the name plus what backs it where that is
  // not obvious (hbw_preferred falling back to regular memory).
  virtual std::string Describe() const { return name(); }

  // Whether this machine can provide the kind at all. Not available is
  // FailedPrecondition with a message saying what is missing (e.g. "no
  // high-bandwidth memory found ..."), which collbench-rank reports with
  // exit code 2 before any allocation.
  virtual absl::Status CheckAvailable() = 0;

  // Allocates `bytes` (> 0), aligned to at least 64 bytes. Host kinds return
  // memory that is not yet touched; the caller fills it.
  virtual absl::StatusOr<void*> Allocate(size_t bytes) = 0;
  // REQUIRES: ptr came from Allocate(bytes) on this object.
  virtual void Free(void* ptr, size_t bytes) = 0;
};

// Builds a kind from its `--memory` text. `text` may carry an argument
// ("numa:1"); `device` is the runtime for pinned/device kinds and outlives
// the kind.
using MemoryKindFactory = std::function<absl::StatusOr<std::unique_ptr<MemoryKind>>(
    absl::string_view text, DeviceRuntime* device)>;

// Thread safety: filled once at start-up, then only read.
class MemoryKindRegistry {
 public:
  // `prefix` is the name before any ':' ("numa" for "numa:1"). A kind that
  // takes an argument is registered with a placeholder after ':' ("numa:N"):
  // only "numa" is matched, "numa:N" is what Names() and errors show.
  // Kinds registered without one reject "name:arg" with InvalidArgument.
  // REQUIRES: no kind with the same prefix is registered yet.
  void Register(std::string prefix, MemoryKindFactory factory);
  // InvalidArgument naming the known kinds when `text` names none.
  absl::StatusOr<std::unique_ptr<MemoryKind>> Create(absl::string_view text,
                                                     DeviceRuntime* device) const;
  // Display names ("numa:N" for numa) in registration order.
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, MemoryKindFactory, std::less<>> factories_;
  std::vector<std::string> names_;  // as registered, for Names()
};

// Registers default, regular, interleave, hbw, hbw_preferred, dax_kmem,
// numa:N, pinned and device.
void RegisterBuiltinMemoryKinds(MemoryKindRegistry* registry);

// The built-in kinds, one file each; RegisterBuiltinMemoryKinds() calls them:
// default; regular, interleave, hbw, hbw_preferred, dax_kmem; numa:N;
// pinned, device.
void RegisterMallocMemoryKind(MemoryKindRegistry* registry);
void RegisterMemkindMemoryKinds(MemoryKindRegistry* registry);
void RegisterNumaMemoryKind(MemoryKindRegistry* registry);
void RegisterCudaMemoryKinds(MemoryKindRegistry* registry);

// Owns one allocation from a kind; frees it on destruction. Move-only.
class Buffer {
 public:
  Buffer() = default;
  // InvalidArgument for a null kind or zero bytes, else the kind's status.
  // REQUIRES: `kind` outlives the buffer.
  static absl::StatusOr<Buffer> Allocate(MemoryKind* kind, size_t bytes);
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { Reset(); }

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  MemorySpace space() const { return space_; }
  void Reset();

 private:
  MemoryKind* kind_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  MemorySpace space_ = MemorySpace::kHost;
};

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_MEMORY_MEMORY_KIND_H_
