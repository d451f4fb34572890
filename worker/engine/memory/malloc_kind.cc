// SPDX-License-Identifier: Apache-2.0
// `--memory default`: ordinary host memory from the C library, page-aligned
// so that every host kind starts its buffers on the same boundary. Large
// requests are served by fresh mmap'd pages, so the memory is untouched until
// the caller fills it.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "worker/engine/memory/memory_kind.h"

namespace collbench {
namespace {

class MallocMemoryKind final : public MemoryKind {
 public:
  std::string name() const override { return "default"; }
  MemorySpace space() const override { return MemorySpace::kHost; }
  absl::Status CheckAvailable() override { return absl::OkStatus(); }

  absl::StatusOr<void*> Allocate(size_t bytes) override {
    void* ptr = nullptr;
    const int error = posix_memalign(&ptr, kHostBufferAlignmentBytes, bytes);
    if (error != 0) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "posix_memalign(", bytes,
          " bytes) for --memory default failed: ", std::strerror(error)));
    }
    return ptr;
  }

  void Free(void* ptr, size_t /*bytes*/) override { std::free(ptr); }
};

}  // namespace

void RegisterMallocMemoryKind(MemoryKindRegistry* registry) {
  registry->Register(
      "default",
      [](absl::string_view,
         DeviceRuntime*) -> absl::StatusOr<std::unique_ptr<MemoryKind>> {
        return std::make_unique<MallocMemoryKind>();
      });
}

}  // namespace collbench
