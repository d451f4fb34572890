// SPDX-License-Identifier: Apache-2.0
#include "server/api/rest_adapter.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

namespace collbench {
namespace {

// The collection a binding's `{id}` belongs to: the path segment before
// it ("runs" in /v1/runs/{id}:cancel, and in /ui/runs/{id}/events).
absl::string_view CollectionOf(absl::string_view path) {
  const size_t open = path.find("/{id}");
  if (open == absl::string_view::npos) return "";
  absl::string_view before = path.substr(0, open);
  return before.substr(before.rfind('/') + 1);
}

// The request's `name` field; null when it has none.
const google::protobuf::FieldDescriptor* NameField(const google::protobuf::Message& message) {
  const google::protobuf::FieldDescriptor* field = message.GetDescriptor()->FindFieldByName("name");
  return field != nullptr && field->type() == google::protobuf::FieldDescriptor::TYPE_STRING
             ? field
             : nullptr;
}

// Sets `name` to the path's resource; a body that named another is refused.
absl::Status BindName(const HttpBinding& binding, const RestRequest& request,
                      google::protobuf::Message* message) {
  const absl::string_view collection = CollectionOf(binding.path);
  const google::protobuf::FieldDescriptor* field = NameField(*message);
  if (collection.empty() || field == nullptr) return absl::OkStatus();
  const std::string name = absl::StrCat(collection, "/", request.id);
  const google::protobuf::Reflection& reflection = *message->GetReflection();
  const std::string given = reflection.GetString(*message, field);
  if (!given.empty() && given != name) {
    absl::string_view kind = collection;
    absl::ConsumeSuffix(&kind, "s");
    return absl::InvalidArgumentError(
        absl::StrCat("name: \"", given, "\" is not the ", kind, " in the path (", name, ")"));
  }
  reflection.SetString(message, field, name);
  return absl::OkStatus();
}

}  // namespace

absl::Status DecodeRestRequest(RestBody body, const HttpBinding& binding,
                               const RestRequest& request, google::protobuf::Message* message) {
  switch (body) {
    case RestBody::kNone:
      break;
    case RestBody::kRequest:
      RETURN_IF_ERROR(ProtoFromJson(request.body, /*empty_ok=*/false, message));
      break;
    case RestBody::kOptional:
      RETURN_IF_ERROR(ProtoFromJson(request.body, /*empty_ok=*/true, message));
      break;
  }
  RETURN_IF_ERROR(BindName(binding, request, message));
  return QueryToProto(request.query, message);
}

std::vector<std::string> QueryFields(const ApiMethod& method, const HttpBinding& binding) {
  std::vector<std::string> fields;
  if (binding.method != "GET" || method.request == nullptr) return fields;
  const bool named = !CollectionOf(binding.path).empty();
  for (int i = 0; i < method.request->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = method.request->field(i);
    if (named && field->name() == "name") continue;
    fields.push_back(field->name());
  }
  return fields;
}

std::vector<RestRoute> ApiRestRoutes(CoordinatorApi* api) {
  std::vector<RestRoute> routes;
  for (const ApiMethod& method : ApiMethods()) {
    for (const HttpBinding& binding : method.http) {
      RestRoute route;
      route.method = binding.method;
      route.path = binding.path;
      route.role = method.role;
      route.summary = binding.summary;
      route.query_params = QueryFields(method, binding);
      route.browser = binding.browser;
      route.handler = [api, &method, &binding](const RestRequest& request) {
        return method.rest_handler(*api, binding, request);
      };
      routes.push_back(std::move(route));
    }
  }
  return routes;
}

}  // namespace collbench
