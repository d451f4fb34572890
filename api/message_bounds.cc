// SPDX-License-Identifier: Apache-2.0
#include "api/message_bounds.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"

namespace collbench {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

absl::Status CheckFields(const Message& message, const MessageBounds& bounds,
                         const std::string& path) {
  const Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    const std::string where = absl::StrCat(path, ".", field->name());
    if (field->is_repeated()) {
      const size_t entries = static_cast<size_t>(reflection->FieldSize(message, field));
      const size_t limit = field->is_map() ? bounds.max_map_entries : bounds.max_entries;
      if (entries > limit) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": ", entries, " entries, at most ", limit));
      }
    }
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      const int count = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
      for (int i = 0; i < count; ++i) {
        std::string scratch;
        const std::string& value =
            field->is_repeated()
                ? reflection->GetRepeatedStringReference(message, field, i, &scratch)
                : reflection->GetStringReference(message, field, &scratch);
        if (value.size() > bounds.max_string_bytes) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ": ", value.size(), " bytes, at most ", bounds.max_string_bytes));
        }
      }
    }
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (!field->is_repeated()) {
        if (absl::Status inner = CheckFields(reflection->GetMessage(message, field), bounds, where);
            !inner.ok()) {
          return inner;
        }
        continue;
      }
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        // A map's entries are messages of key and value: their strings are
        // checked as any other.
        if (absl::Status inner =
                CheckFields(reflection->GetRepeatedMessage(message, field, i), bounds,
                            field->is_map() ? where : absl::StrCat(where, "[", i, "]"));
            !inner.ok()) {
          return inner;
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

MessageBounds InventoryBounds() { return MessageBounds{}; }

absl::Status CheckMessageBounds(const Message& message, const MessageBounds& bounds,
                                absl::string_view path) {
  // Field by field first: their errors say more.
  if (absl::Status fields = CheckFields(message, bounds, std::string(path)); !fields.ok()) {
    return fields;
  }
  const size_t total = message.ByteSizeLong();
  if (total > bounds.max_total_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", total, " bytes in all, at most ", bounds.max_total_bytes));
  }
  return absl::OkStatus();
}

}  // namespace collbench
