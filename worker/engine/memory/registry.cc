// SPDX-License-Identifier: Apache-2.0
// MemoryKindRegistry, Buffer and the list of built-in kinds.
//
// The registry matches `--memory` text on the part before any ':' and hands
// the whole text to the kind's factory, which parses its own argument.
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "engine_spec/memory_kinds.h"
#include "worker/engine/memory/memory_kind.h"

namespace collbench {
namespace {

// "numa:N" -> "numa"; "default" -> "default".
absl::string_view PrefixOf(absl::string_view text) {
  return text.substr(0, text.find(':'));
}

// Wraps the factory of a kind that takes no argument so that "name:arg"
// is refused before the factory sees it.
MemoryKindFactory RejectingArgument(MemoryKindFactory factory) {
  return [factory = std::move(factory)](absl::string_view text,
                                        DeviceRuntime* device)
             -> absl::StatusOr<std::unique_ptr<MemoryKind>> {
    if (PrefixOf(text).size() != text.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--memory '", text, "': '", PrefixOf(text), "' takes no argument"));
    }
    return factory(text, device);
  };
}

}  // namespace

void MemoryKindRegistry::Register(std::string prefix,
                                  MemoryKindFactory factory) {
  const bool takes_argument = PrefixOf(prefix).size() != prefix.size();
  factories_.emplace(std::string(PrefixOf(prefix)),
                     takes_argument ? std::move(factory)
                                    : RejectingArgument(std::move(factory)));
  names_.push_back(std::move(prefix));
}

absl::StatusOr<std::unique_ptr<MemoryKind>> MemoryKindRegistry::Create(
    absl::string_view text, DeviceRuntime* device) const {
  // The table's names and errors (engine_spec/memory_kinds.h) first.
  absl::StatusOr<ParsedMemoryKind> parsed = ParseMemoryKind(text);
  if (!parsed.ok()) return parsed.status();
  const auto it = factories_.find(PrefixOf(text));
  if (it == factories_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown --memory '", text, "' (one of ",
                     absl::StrJoin(names_, ", "), ")"));
  }
  return it->second(text, device);
}

std::vector<std::string> MemoryKindRegistry::Names() const { return names_; }

void RegisterBuiltinMemoryKinds(MemoryKindRegistry* registry) {
  RegisterMallocMemoryKind(registry);
  RegisterMemkindMemoryKinds(registry);
  RegisterNumaMemoryKind(registry);
  RegisterCudaMemoryKinds(registry);
}

absl::StatusOr<Buffer> Buffer::Allocate(MemoryKind* kind, size_t bytes) {
  if (kind == nullptr) {
    return absl::InvalidArgumentError("Buffer::Allocate: no memory kind");
  }
  if (bytes == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Buffer::Allocate: zero bytes of --memory ", kind->name()));
  }
  absl::StatusOr<void*> data = kind->Allocate(bytes);
  if (!data.ok()) return std::move(data).status();
  Buffer buffer;
  buffer.kind_ = kind;
  buffer.data_ = *data;
  buffer.bytes_ = bytes;
  buffer.space_ = kind->space();
  return buffer;
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this == &other) return *this;
  Reset();
  kind_ = std::exchange(other.kind_, nullptr);
  data_ = std::exchange(other.data_, nullptr);
  bytes_ = std::exchange(other.bytes_, 0);
  space_ = std::exchange(other.space_, MemorySpace::kHost);
  return *this;
}

void Buffer::Reset() {
  if (kind_ != nullptr && data_ != nullptr) kind_->Free(data_, bytes_);
  kind_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
  space_ = MemorySpace::kHost;
}

}  // namespace collbench
