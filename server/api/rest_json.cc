// SPDX-License-Identifier: Apache-2.0
#include "server/api/rest_json.h"

#include <google/protobuf/util/json_util.h>

#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "api/status_mapping.h"
#include "common/status_macros.h"
#include "server/core/admission.h"

namespace collbench {
namespace {

bool IsIdentifierStart(char c) { return absl::ascii_isalpha(c) || c == '_'; }
bool IsIdentifierChar(char c) { return absl::ascii_isalnum(c) || c == '_'; }

// Length of the field path at the start of `text` ("a.b[2].c"), 0 if none.
size_t FieldPathLength(absl::string_view text) {
  size_t i = 0;
  while (true) {
    if (i >= text.size() || !IsIdentifierStart(text[i])) return 0;
    while (i < text.size() && IsIdentifierChar(text[i])) ++i;
    while (i < text.size() && text[i] == '[') {
      const size_t close = text.find(']', i);
      if (close == absl::string_view::npos || close == i + 1) return 0;
      for (size_t j = i + 1; j < close; ++j) {
        if (!absl::ascii_isdigit(text[j])) return 0;
      }
      i = close + 1;
    }
    if (i < text.size() && text[i] == '.') {
      ++i;
      continue;
    }
    return i;
  }
}

// Percent-decodes one query component.
absl::StatusOr<std::string> DecodeComponent(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] != '%') {
      out += text[i];
    } else if (i + 2 < text.size() && absl::ascii_isxdigit(text[i + 1]) &&
               absl::ascii_isxdigit(text[i + 2])) {
      int value = 0;
      (void)absl::SimpleHexAtoi(text.substr(i + 1, 2), &value);
      out += static_cast<char>(value);
      i += 2;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("query: \"", text, "\" has a malformed %-escape"));
    }
  }
  return out;
}

// The field of `message` a JSON key names (its JSON name or its own).
const google::protobuf::FieldDescriptor* FieldNamed(const google::protobuf::Descriptor& message,
                                                    const std::string& key) {
  for (int i = 0; i < message.field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = message.field(i);
    if (field->json_name() == key || field->name() == key) return field;
  }
  return nullptr;
}

absl::Status NormalizeEnumsIn(nlohmann::json& value, const google::protobuf::Descriptor& message,
                              const std::string& path);

// One value of `field` (an element, for a repeated field): an enum given by
// name in any case becomes its canonical name; messages are walked.
absl::Status NormalizeValue(nlohmann::json& value, const google::protobuf::FieldDescriptor& field,
                            const std::string& path) {
  if (field.type() == google::protobuf::FieldDescriptor::TYPE_ENUM && value.is_string()) {
    const google::protobuf::EnumDescriptor& type = *field.enum_type();
    const std::string given = value.get<std::string>();
    std::vector<std::string> names;
    for (int i = 0; i < type.value_count(); ++i) {
      const std::string& name = type.value(i)->name();
      if (absl::EqualsIgnoreCase(name, given)) {
        value = name;
        return absl::OkStatus();
      }
      if (i > 0 || !absl::EndsWith(name, "_UNSPECIFIED")) names.push_back(name);
    }
    return absl::InvalidArgumentError(absl::StrCat(path, ": \"", given, "\" is not one of ",
                                                   absl::StrJoin(names, ", "), " (any case)"));
  }
  if (field.type() != google::protobuf::FieldDescriptor::TYPE_MESSAGE || !value.is_object()) {
    return absl::OkStatus();
  }
  const google::protobuf::Descriptor& type = *field.message_type();
  // Well-known types have JSON forms of their own (a duration is "1.5s").
  if (type.file()->package() == "google.protobuf") return absl::OkStatus();
  return NormalizeEnumsIn(value, type, path);
}

// Walks a JSON object against `message`: every enum field, wherever it is
// (nested, repeated, a map's values), is matched by name in any case, and
// one that matches no name is refused naming its path and the valid names.
absl::Status NormalizeEnumsIn(nlohmann::json& value, const google::protobuf::Descriptor& message,
                              const std::string& path) {
  for (auto& [key, child] : value.items()) {
    const google::protobuf::FieldDescriptor* field = FieldNamed(message, key);
    if (field == nullptr) continue;  // the parser names unknown fields
    const std::string child_path = path.empty() ? field->name() : absl::StrCat(path, ".", field->name());
    if (field->is_map()) {
      if (!child.is_object()) continue;
      const google::protobuf::FieldDescriptor& mapped = *field->message_type()->map_value();
      for (auto& [map_key, map_value] : child.items()) {
        RETURN_IF_ERROR(
            NormalizeValue(map_value, mapped, absl::StrCat(child_path, ".", map_key)));
      }
    } else if (field->is_repeated() && child.is_array()) {
      for (size_t i = 0; i < child.size(); ++i) {
        RETURN_IF_ERROR(NormalizeValue(child[i], *field, absl::StrCat(child_path, "[", i, "]")));
      }
    } else {
      RETURN_IF_ERROR(NormalizeValue(child, *field, child_path));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ParseQueryString(
    absl::string_view query) {
  std::vector<std::pair<std::string, std::string>> params;
  for (absl::string_view part : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    const size_t eq = part.find('=');
    absl::StatusOr<std::string> name = DecodeComponent(part.substr(0, eq));
    if (!name.ok()) return name.status();
    absl::StatusOr<std::string> value =
        DecodeComponent(eq == absl::string_view::npos ? "" : part.substr(eq + 1));
    if (!value.ok()) return value.status();
    params.emplace_back(*std::move(name), *std::move(value));
  }
  return params;
}

std::string ProtoToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string out;
  // Printing a valid message cannot fail.
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

absl::Status ProtoFromJson(absl::string_view body, bool empty_ok,
                           google::protobuf::Message* message) {
  if (absl::StripAsciiWhitespace(body).empty()) {
    if (empty_ok) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("request body: expected a JSON object (",
                                                   message->GetDescriptor()->name(), ")"));
  }
  // Enums by name in any case ("mpich" as well as "MPICH"): rewritten to
  // their canonical names first, which protobuf's parser requires.
  std::string normalized(body);
  nlohmann::json json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_object()) {
    RETURN_IF_ERROR(NormalizeEnumsIn(json, *message->GetDescriptor(), ""));
    normalized = json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(normalized.data(), normalized.size()), message, options);
  if (status.ok()) return absl::OkStatus();
  const auto what = status.message();
  return absl::InvalidArgumentError(
      absl::StrCat("request body: ", absl::string_view(what.data(), what.size())));
}

std::string FieldOf(absl::string_view message) {
  const size_t length = FieldPathLength(message);
  if (length == 0 || message.substr(length, 2) != ": ") return "";
  return std::string(message.substr(0, length));
}

std::string ErrorJson(const absl::Status& status) {
  const std::string message(status.message());
  nlohmann::json details = nlohmann::json::array();
  const std::string field = FieldOf(message);
  if (status.code() == absl::StatusCode::kInvalidArgument && !field.empty()) {
    nlohmann::json violation = {{"field", field},
                                {"description", message.substr(field.size() + 2)}};
    nlohmann::json bad_request = {{"@type", "type.googleapis.com/google.rpc.BadRequest"},
                                  {"fieldViolations", nlohmann::json::array({violation})}};
    details.push_back(std::move(bad_request));
  }
  nlohmann::json body = nlohmann::json::object();
  body["code"] = static_cast<int>(status.code());
  body["status"] = absl::StatusCodeToString(status.code());
  body["message"] = message;
  body["details"] = std::move(details);
  // Invalid UTF-8 (a path or body echoed back) is replaced, not thrown.
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

HttpReply JsonReply(const google::protobuf::Message& message) {
  HttpReply reply;
  reply.body = ProtoToJson(message);
  return reply;
}

HttpReply ErrorReply(const absl::Status& status) {
  HttpReply reply;
  reply.http_status = HttpStatusFor(status.code());
  reply.body = ErrorJson(status);
  if (const std::optional<int64_t> retry_s = RetryAfterSeconds(status)) {
    reply.headers["Retry-After"] = std::to_string(*retry_s);
  }
  return reply;
}

std::string SnakeCase(absl::string_view name) {
  std::string out;
  for (char c : name) {
    if (absl::ascii_isupper(c)) {
      out += '_';
      out += absl::ascii_tolower(c);
    } else {
      out += c;
    }
  }
  return out;
}

absl::Status QueryToProto(const std::map<std::string, std::string>& query,
                          google::protobuf::Message* message) {
  const google::protobuf::Reflection& reflection = *message->GetReflection();
  for (const auto& [name, value] : query) {
    const google::protobuf::FieldDescriptor* field =
        message->GetDescriptor()->FindFieldByName(name);
    if (field == nullptr || field->is_repeated()) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": not a field of ", message->GetDescriptor()->name()));
    }
    switch (field->cpp_type()) {
      case google::protobuf::FieldDescriptor::CPPTYPE_INT32: {
        int32_t number = 0;
        if (!value.empty() && !absl::SimpleAtoi(value, &number)) {
          return absl::InvalidArgumentError(
              absl::StrCat(name, ": \"", value, "\" is not an integer"));
        }
        reflection.SetInt32(message, field, number);
        break;
      }
      case google::protobuf::FieldDescriptor::CPPTYPE_STRING:
        reflection.SetString(message, field, value);
        break;
      default:
        return absl::InvalidArgumentError(absl::StrCat(
            name, ": a field of type ", field->cpp_type_name(), " cannot be given in the query"));
    }
  }
  return absl::OkStatus();
}

}  // namespace collbench
