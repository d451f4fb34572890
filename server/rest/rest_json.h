// SPDX-License-Identifier: Apache-2.0
// JSON in and out of the REST API: the proto3 JSON mapping for bodies
// (lowerCamelCase out; both spellings in; unknown fields rejected), the
// error body every failed request gets, and query parameter parsing.
//
// The error body mirrors google.rpc.Status:
//   {"code": 3, "status": "INVALID_ARGUMENT", "message": "spec.ranks: ...",
//    "details": [{"@type": "type.googleapis.com/google.rpc.BadRequest",
//                 "fieldViolations": [{"field": "spec.ranks",
//                                      "description": "..."}]}]}
// `details` names the field when the message starts with a field path
// ("spec.sizes_bytes[2]: ..."), and is empty otherwise.
//
// All functions are pure and thread-safe.
#ifndef COLLBENCH_SERVER_REST_REST_JSON_H_
#define COLLBENCH_SERVER_REST_REST_JSON_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "server/rest/handler.h"

namespace collbench {

// `message` in the proto3 JSON mapping, on one line. Fields with default
// values are printed too, so clients see e.g. "sizesDone": 0.
std::string ProtoToJson(const google::protobuf::Message& message);

// Parses a request body into `message`. An empty body is an empty message
// when `empty_ok`; otherwise it, malformed JSON and unknown fields are
// InvalidArgument "request body: <what the parser said>".
absl::Status ProtoFromJson(absl::string_view body, bool empty_ok,
                           google::protobuf::Message* message);

// The error body for `status` (REQUIRES: !status.ok()).
std::string ErrorJson(const absl::Status& status);

// The field path a message starts with ("spec.ranks" for "spec.ranks: must
// be ..."), or "" when it starts with none.
std::string FieldOf(absl::string_view message);

// Replies: `message` as JSON with status 200, or `status` as an error body
// with HttpStatusFor(status.code()).
RestReply JsonReply(const google::protobuf::Message& message);
RestReply ErrorReply(const absl::Status& status);

// The value as JSON, or its error.
template <typename T>
RestReply Answer(const absl::StatusOr<T>& value) {
  return value.ok() ? JsonReply(*value) : ErrorReply(value.status());
}

// A 503 saying `why` (a route whose manager this server does not run),
// made once per distinct text and kept.
const RestReply* Unavailable(absl::string_view why);

// The optional body of a method on one resource (a custom method such as
// :cancel, or a delete): nothing, {}, or a `Request` whose `name` is
// `name`, the resource of the path. Otherwise the body's parse error, or
// InvalidArgument naming "name" ("... is not the `kind` in the path").
template <typename Request>
absl::Status CheckBodyName(const RestRequest& request, const std::string& name,
                           absl::string_view kind) {
  Request body;
  if (absl::Status parsed = ProtoFromJson(request.body, /*empty_ok=*/true, &body); !parsed.ok()) {
    return parsed;
  }
  if (body.name().empty() || body.name() == name) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("name: \"", body.name(), "\" is not the ", kind, " in the path (", name, ")"));
}

// The query parameter `name` as an int32: 0 when absent, InvalidArgument
// naming the parameter when it is not a decimal integer of that range.
absl::StatusOr<int32_t> QueryInt(const RestRequest& request, const std::string& name);
// The query parameter `name`, "" when absent.
std::string QueryString(const RestRequest& request, const std::string& name);

// The parameters of a URL query string ("a=1&b=x%20y&filter=state=RUNNING"),
// percent-decoded and in order; '+' is a space and the value runs from the
// first '=' to the next '&'. InvalidArgument for a malformed %-escape.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ParseQueryString(
    absl::string_view query);

// The caller's place among the event-stream watchers (null when the server
// has no watcher limits), or the refusal (429) to answer with.
absl::StatusOr<std::unique_ptr<WatcherSlot>> AcquireWatcherSlot(const RestContext& context,
                                                                const RestRequest& request);

// "pageSize" -> "page_size"; snake_case names are returned unchanged.
std::string SnakeCase(absl::string_view name);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_REST_REST_JSON_H_
