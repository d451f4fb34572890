// SPDX-License-Identifier: Apache-2.0
// The JSON side of the REST API: proto3 JSON mapping in and out, the error
// body and its field violation, query parameters.
#include "server/api/rest_json.h"

#include <nlohmann/json.hpp>

#include "collbench/v1/coordinator.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;

TEST(RestJsonTest, FieldOfFindsTheLeadingFieldPath) {
  EXPECT_EQ(FieldOf("spec.ranks: must be at least 1"), "spec.ranks");
  EXPECT_EQ(FieldOf("spec.sizes_bytes[2]: 0 is not a size"), "spec.sizes_bytes[2]");
  EXPECT_EQ(FieldOf("page_size: \"x\" is not an integer"), "page_size");
  EXPECT_EQ(FieldOf("run runs/x not found"), "");
  EXPECT_EQ(FieldOf("request body: Unexpected token."), "");
  EXPECT_EQ(FieldOf("a[]: x"), "");
  EXPECT_EQ(FieldOf(""), "");
}

TEST(RestJsonTest, ErrorBodyCarriesCodeStatusMessageAndTheField) {
  const nlohmann::json body = nlohmann::json::parse(
      ErrorJson(absl::InvalidArgumentError("spec.ranks: must be at least 1")));
  EXPECT_EQ(body["code"], 3);
  EXPECT_EQ(body["status"], "INVALID_ARGUMENT");
  EXPECT_EQ(body["message"], "spec.ranks: must be at least 1");
  ASSERT_EQ(body["details"].size(), 1u);
  EXPECT_EQ(body["details"][0]["@type"], "type.googleapis.com/google.rpc.BadRequest");
  EXPECT_EQ(body["details"][0]["fieldViolations"][0]["field"], "spec.ranks");
  EXPECT_EQ(body["details"][0]["fieldViolations"][0]["description"], "must be at least 1");

  const nlohmann::json missing =
      nlohmann::json::parse(ErrorJson(absl::NotFoundError("run runs/x not found")));
  EXPECT_EQ(missing["code"], 5);
  EXPECT_EQ(missing["status"], "NOT_FOUND");
  EXPECT_TRUE(missing["details"].is_array());
  EXPECT_TRUE(missing["details"].empty());
}

TEST(RestJsonTest, ErrorReplyUsesTheSharedHttpMapping) {
  EXPECT_EQ(ErrorReply(absl::InvalidArgumentError("x")).http_status, 400);
  EXPECT_EQ(ErrorReply(absl::UnauthenticatedError("x")).http_status, 401);
  EXPECT_EQ(ErrorReply(absl::PermissionDeniedError("x")).http_status, 403);
  EXPECT_EQ(ErrorReply(absl::NotFoundError("x")).http_status, 404);
  EXPECT_EQ(ErrorReply(absl::FailedPreconditionError("x")).http_status, 412);
  EXPECT_EQ(ErrorReply(absl::UnavailableError("x")).http_status, 503);
}

TEST(RestJsonTest, BodiesAcceptBothFieldSpellings) {
  v1::CreateRunRequest request;
  ASSERT_TRUE(ProtoFromJson(R"({"spec": {"operation": "bcast", "sizesBytes": ["8", 16]},
                                "request_id": "r1"})",
                            false, &request)
                  .ok());
  EXPECT_EQ(request.spec().operation(), "bcast");
  EXPECT_EQ(request.spec().sizes_bytes_size(), 2);
  EXPECT_EQ(request.request_id(), "r1");
}

// Enums by name in any case, wherever they are; an unknown name is refused
// with its field path and the valid names (protobuf's own parser gives a
// type URL and no names).
TEST(RestJsonTest, EnumsInAnyCaseAndUnknownOnesListTheValidNames) {
  v1::CreateRunRequest request;
  ASSERT_TRUE(ProtoFromJson(R"({"spec": {"operation": "bcast", "mpi": "mpich",
                                         "transport": "Tcp", "sync": "sync_none",
                                         "placement": {"policy": "spread"}}})",
                            false, &request)
                  .ok());
  EXPECT_EQ(request.spec().mpi(), v1::MPICH);
  EXPECT_EQ(request.spec().transport(), v1::TCP);
  EXPECT_EQ(request.spec().sync(), v1::SYNC_NONE);
  EXPECT_EQ(request.spec().placement().policy(), v1::SPREAD);

  const absl::Status bad =
      ProtoFromJson(R"({"spec": {"operation": "bcast", "mpi": "mpich2"}})", false, &request);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "spec.mpi: \"mpich2\" is not one of OPENMPI, MPICH (any case)");
  EXPECT_EQ(FieldOf(bad.message()), "spec.mpi");
  const absl::Status nested = ProtoFromJson(
      R"({"spec": {"operation": "bcast", "placement": {"policy": "scatter"}}})", false, &request);
  EXPECT_THAT(nested.message(),
              HasSubstr("spec.placement.policy: \"scatter\" is not one of PACK, SPREAD, EXPLICIT"));
  // Numbers stay numbers; the parser judges them.
  EXPECT_TRUE(ProtoFromJson(R"({"spec": {"mpi": 2}})", false, &request).ok());
  EXPECT_EQ(request.spec().mpi(), v1::MPICH);
}

TEST(RestJsonTest, MalformedJsonAndUnknownFieldsAreInvalidArguments) {
  v1::CreateRunRequest request;
  absl::Status malformed = ProtoFromJson("{\"spec\": ", false, &request);
  EXPECT_EQ(malformed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(malformed.message(), HasSubstr("request body: "));
  EXPECT_GT(malformed.message().size(), std::string("request body: ").size());

  absl::Status unknown = ProtoFromJson(R"({"spec": {"bogus": 1}})", false, &request);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.message(), HasSubstr("bogus"));

  absl::Status wrong_type = ProtoFromJson(R"({"spec": {"ranks": "many"}})", false, &request);
  EXPECT_EQ(wrong_type.code(), absl::StatusCode::kInvalidArgument);

  EXPECT_EQ(ProtoFromJson("  ", false, &request).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ProtoFromJson("", true, &request).ok());
}

TEST(RestJsonTest, OutputIsOneLineOfLowerCamelCaseWithDefaults) {
  v1::Run run;
  run.set_name("runs/a");
  run.set_state(v1::QUEUED);
  const std::string json = ProtoToJson(run);
  EXPECT_EQ(json.find('\n'), std::string::npos);
  const nlohmann::json parsed = nlohmann::json::parse(json);
  EXPECT_EQ(parsed["name"], "runs/a");
  EXPECT_EQ(parsed["state"], "QUEUED");
  EXPECT_EQ(parsed["sizesDone"], 0);  // printed although it is the default
}

// Query parameters fill the request message's fields of their names: an
// integer from a decimal integer of its range (empty or absent: 0), a
// string verbatim; a bad integer names its parameter.
TEST(RestJsonTest, QueryParameters) {
  v1::ListRunsRequest list;
  ASSERT_TRUE(QueryToProto({{"page_size", "25"}, {"page_token", "t"}}, &list).ok());
  EXPECT_EQ(list.page_size(), 25);
  EXPECT_EQ(list.page_token(), "t");
  EXPECT_EQ(list.filter(), "");  // absent
  v1::ListRunsRequest empty;
  ASSERT_TRUE(QueryToProto({{"page_size", ""}}, &empty).ok());
  EXPECT_EQ(empty.page_size(), 0);
  const absl::Status bad = QueryToProto({{"page_size", "x1"}}, &empty);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FieldOf(bad.message()), "page_size");
  EXPECT_EQ(bad.message(), "page_size: \"x1\" is not an integer");
  EXPECT_FALSE(QueryToProto({{"page_size", "99999999999"}}, &empty).ok());
  EXPECT_FALSE(QueryToProto({{"absent", "1"}}, &empty).ok());  // no such field
  EXPECT_EQ(SnakeCase("pageSize"), "page_size");
  EXPECT_EQ(SnakeCase("page_token"), "page_token");
}

TEST(RestJsonTest, QueryStringsDecodeAndKeepEverythingAfterTheFirstEquals) {
  auto params = ParseQueryString("filter=state=RUNNING&page_token=a%3Db+c&&flag&x=%2f");
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_THAT(*params,
              ::testing::ElementsAre(::testing::Pair("filter", "state=RUNNING"),
                                     ::testing::Pair("page_token", "a=b c"),
                                     ::testing::Pair("flag", ""), ::testing::Pair("x", "/")));
  EXPECT_FALSE(ParseQueryString("a=%zz").ok());
  EXPECT_FALSE(ParseQueryString("a=%4").ok());
  EXPECT_TRUE(ParseQueryString("")->empty());
}

}  // namespace
}  // namespace collbench
