// SPDX-License-Identifier: Apache-2.0
// JSON in and out of the REST API: the proto3 JSON mapping for bodies
// (lowerCamelCase out; both spellings in; unknown fields rejected; enums
// by name in any case), the error body every failed request gets, query
// strings, and query parameters onto a request message's fields.
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
#ifndef COLLBENCH_SERVER_API_REST_JSON_H_
#define COLLBENCH_SERVER_API_REST_JSON_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "server/http/http_handler.h"

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
// with HttpStatusFor(status.code()) and, for a refusal that carries a
// retry-after (server/core/admission.h), a Retry-After header.
HttpReply JsonReply(const google::protobuf::Message& message);
HttpReply ErrorReply(const absl::Status& status);

// The value as JSON, or its error.
template <typename T>
HttpReply Answer(const absl::StatusOr<T>& value) {
  return value.ok() ? JsonReply(*value) : ErrorReply(value.status());
}

// Sets the fields of `message` that `query` names (snake_case names, each
// once): an integer field from a decimal integer of its range (an empty
// value is 0), a string field verbatim. InvalidArgument naming the
// parameter ("page_size: \"x\" is not an integer"), or naming one that is
// no scalar field of the message.
absl::Status QueryToProto(const std::map<std::string, std::string>& query,
                          google::protobuf::Message* message);

// The parameters of a URL query string ("a=1&b=x%20y&filter=state=RUNNING"),
// percent-decoded and in order; '+' is a space and the value runs from the
// first '=' to the next '&'. InvalidArgument for a malformed %-escape.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ParseQueryString(
    absl::string_view query);

// "pageSize" -> "page_size"; snake_case names are returned unchanged.
std::string SnakeCase(absl::string_view name);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_API_REST_JSON_H_
