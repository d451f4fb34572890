// SPDX-License-Identifier: Apache-2.0
// The memkind kinds: regular, interleave, hbw, hbw_preferred, dax_kmem.
//
// memkind (1.14) decides which NUMA nodes are high-bandwidth or KMEM DAX
// nodes the first time such a kind is used, reading MEMKIND_HBW_NODES and
// MEMKIND_DAX_KMEM_NODES once per process; setting them later has no effect.
//
// hbw_preferred: memkind documents MEMKIND_HBW_PREFERRED as "high-bandwidth
// memory, falling back to standard memory when there is not enough", but on
// a machine with no high-bandwidth node at all memkind 1.14 reports the kind
// unavailable and every allocation fails (ENOMEM). We keep the documented
// meaning: when memkind cannot offer MEMKIND_HBW_PREFERRED, the kind
// allocates MEMKIND_REGULAR memory and says so in Describe().
#include <memkind.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "worker/engine/memory/memory_kind.h"

namespace collbench {
namespace {

// memkind's text for one of its error codes, without its "<memkind> " tag.
std::string MemkindErrorText(int error) {
  if (error > 0) return std::strerror(error);  // posix_memalign's errno values
  char message[MEMKIND_ERROR_MESSAGE_SIZE] = {};
  memkind_error_message(error, message, sizeof(message));
  return std::string(absl::StripPrefix(message, "<memkind> "));
}

// Why the machine cannot offer a kind, given memkind's own words.
using UnavailableMessage = std::string (*)(const std::string& memkind_text);

std::string HbwUnavailable(const std::string& memkind_text) {
  if (const char* nodes = std::getenv("MEMKIND_HBW_NODES"); nodes != nullptr) {
    return absl::StrCat(
        "MEMKIND_HBW_NODES='", nodes,
        "' does not name usable NUMA nodes (memkind: ", memkind_text, ")");
  }
  return absl::StrCat(
      "no high-bandwidth memory found on this machine (memkind: ", memkind_text,
      "); set MEMKIND_HBW_NODES to a NUMA node list to treat those nodes as "
      "high-bandwidth");
}

std::string DaxKmemUnavailable(const std::string& memkind_text) {
  return absl::StrCat(
      "no persistent memory exposed as a NUMA node (KMEM DAX) found on this "
      "machine (memkind: ",
      memkind_text,
      "); bring a devdax namespace online with `daxctl reconfigure-device "
      "--mode=system-ram`, or set MEMKIND_DAX_KMEM_NODES to a NUMA node list");
}

std::string PlainUnavailable(const std::string& memkind_text) {
  return absl::StrCat(
      "memkind cannot provide this kind here (memkind: ", memkind_text, ")");
}

class MemkindMemoryKind final : public MemoryKind {
 public:
  MemkindMemoryKind(std::string name, memkind_t kind, std::string description,
                    UnavailableMessage unavailable)
      : name_(std::move(name)),
        kind_(kind),
        description_(std::move(description)),
        unavailable_(unavailable) {}

  std::string name() const override { return name_; }
  MemorySpace space() const override { return MemorySpace::kHost; }
  std::string Describe() const override { return description_; }

  absl::Status CheckAvailable() override {
    const int error = memkind_check_available(kind_);
    if (error == 0) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "--memory ", name_, ": ", unavailable_(MemkindErrorText(error))));
  }

  absl::StatusOr<void*> Allocate(size_t bytes) override {
    RETURN_IF_ERROR(CheckAvailable());  // the clear message, not ENOMEM
    void* ptr = nullptr;
    const int error =
        memkind_posix_memalign(kind_, &ptr, kHostBufferAlignmentBytes, bytes);
    if (error != 0) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "memkind_posix_memalign(", bytes, " bytes) for --memory ", name_,
          " failed: ", MemkindErrorText(error)));
    }
    return ptr;
  }

  void Free(void* ptr, size_t /*bytes*/) override { memkind_free(kind_, ptr); }

 private:
  const std::string name_;
  const memkind_t kind_;
  const std::string description_;
  const UnavailableMessage unavailable_;
};

using KindOrError = absl::StatusOr<std::unique_ptr<MemoryKind>>;

// Registers `name` for one fixed memkind kind.
void RegisterFixed(MemoryKindRegistry* registry, std::string name,
                   memkind_t kind, UnavailableMessage unavailable) {
  registry->Register(name,
                     [name, kind, unavailable](absl::string_view,
                                               DeviceRuntime*) -> KindOrError {
                       return std::make_unique<MemkindMemoryKind>(
                           name, kind, name, unavailable);
                     });
}

// hbw_preferred: the choice between high-bandwidth and regular memory is
// made when the kind is created (see the top of this file).
KindOrError NewHbwPreferredKind() {
  const int error = memkind_check_available(MEMKIND_HBW_PREFERRED);
  if (error == 0) {
    return std::make_unique<MemkindMemoryKind>(
        "hbw_preferred", MEMKIND_HBW_PREFERRED,
        "hbw_preferred (high-bandwidth memory, regular when it runs out)",
        PlainUnavailable);
  }
  return std::make_unique<MemkindMemoryKind>(
      "hbw_preferred", MEMKIND_REGULAR,
      absl::StrCat(
          "hbw_preferred (regular memory: no high-bandwidth memory; memkind: ",
          MemkindErrorText(error), ")"),
      PlainUnavailable);
}

}  // namespace

void RegisterMemkindMemoryKinds(MemoryKindRegistry* registry) {
  RegisterFixed(registry, "regular", MEMKIND_REGULAR, PlainUnavailable);
  RegisterFixed(registry, "interleave", MEMKIND_INTERLEAVE, PlainUnavailable);
  RegisterFixed(registry, "hbw", MEMKIND_HBW, HbwUnavailable);
  registry->Register("hbw_preferred", [](absl::string_view, DeviceRuntime*) {
    return NewHbwPreferredKind();
  });
  RegisterFixed(registry, "dax_kmem", MEMKIND_DAX_KMEM, DaxKmemUnavailable);
}

}  // namespace collbench
