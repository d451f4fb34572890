// SPDX-License-Identifier: Apache-2.0
// `--memory numa:N`: host memory bound strictly to NUMA node N.
//
// Fresh anonymous pages are mapped and bound with mbind(MPOL_BIND) before
// anything touches them, so every page the caller faults in comes from node
// N or the fault fails; the kernel never silently falls back to another
// node. (libnuma's numa_alloc_onnode only prints a warning when the binding
// fails, which would leave the memory unbound without a status.)
#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "engine_spec/memory_kinds.h"
#include "worker/engine/memory/memory_kind.h"

namespace collbench {
namespace {

struct NodemaskDeleter {
  void operator()(bitmask* mask) const { numa_bitmask_free(mask); }
};
using Nodemask = std::unique_ptr<bitmask, NodemaskDeleter>;

size_t RoundUpToPages(size_t bytes) {
  const size_t page_bytes = static_cast<size_t>(numa_pagesize());
  return (bytes + page_bytes - 1) / page_bytes * page_bytes;
}

class NumaMemoryKind final : public MemoryKind {
 public:
  explicit NumaMemoryKind(int node) : node_(node) {}

  std::string name() const override { return absl::StrCat("numa:", node_); }
  MemorySpace space() const override { return MemorySpace::kHost; }

  absl::Status CheckAvailable() override {
    if (numa_available() < 0) {
      return absl::FailedPreconditionError(
          "--memory numa:N: this kernel offers no NUMA support "
          "(numa_available)");
    }
    const int max_node = numa_max_node();
    if (node_ > max_node || !numa_bitmask_isbitset(numa_nodes_ptr, node_)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "NUMA node ", node_, " does not exist (this machine has nodes 0-",
          max_node, ")"));
    }
    if (!numa_bitmask_isbitset(numa_all_nodes_ptr, node_)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "NUMA node ", node_, " is not allowed to this process (cpuset)"));
    }
    if (numa_node_size64(node_, nullptr) <= 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "NUMA node ", node_, " has no memory (a CPU-only node)"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<void*> Allocate(size_t bytes) override {
    RETURN_IF_ERROR(CheckAvailable());
    const size_t mapped_bytes = RoundUpToPages(bytes);
    void* ptr = mmap(nullptr, mapped_bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ptr == MAP_FAILED) {
      return absl::ResourceExhaustedError(
          absl::StrCat("mmap(", mapped_bytes, " bytes) for --memory ", name(),
                       " failed: ", std::strerror(errno)));
    }
    if (absl::Status bound = Bind(ptr, mapped_bytes); !bound.ok()) {
      munmap(ptr, mapped_bytes);
      return bound;
    }
    return ptr;
  }

  void Free(void* ptr, size_t bytes) override {
    munmap(ptr, RoundUpToPages(bytes));
  }

 private:
  absl::Status Bind(void* ptr, size_t mapped_bytes) const {
    Nodemask mask(numa_allocate_nodemask());
    numa_bitmask_setbit(mask.get(), node_);
    // mbind counts maxnode one past the last bit it reads, as libnuma does.
    if (mbind(ptr, mapped_bytes, MPOL_BIND, mask->maskp, mask->size + 1,
              MPOL_MF_STRICT) != 0) {
      return absl::InternalError(absl::StrCat(
          "mbind(MPOL_BIND, node ", node_, ") failed: ", std::strerror(errno)));
    }
    return absl::OkStatus();
  }

  const int node_;
};

}  // namespace

void RegisterNumaMemoryKind(MemoryKindRegistry* registry) {
  registry->Register(
      "numa:N",
      [](absl::string_view text,
         DeviceRuntime*) -> absl::StatusOr<std::unique_ptr<MemoryKind>> {
        absl::StatusOr<ParsedMemoryKind> parsed = ParseMemoryKind(text);
        if (!parsed.ok()) return std::move(parsed).status();
        if (!parsed->numa_node.has_value()) {
          return absl::InvalidArgumentError(absl::StrCat("--memory '", text, "': not numa:N"));
        }
        return std::make_unique<NumaMemoryKind>(*parsed->numa_node);
      });
}

}  // namespace collbench
