// SPDX-License-Identifier: Apache-2.0
// The HTTP listener's request log (server/http/request_log.h) through a
// real HttpServer: refusals at warn naming the caller and never a token,
// writes at info, reads at debug, the request id echoed and set on the
// lines the handler writes.
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/log.h"
#include "gmock/gmock.h"
#include "rest_http_fixture.h"
#include "server/http/request_log.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class RequestLogTest : public RestHttpTest {
 protected:
  void SetUp() override {
    RestHttpTest::SetUp();
    LogOptions options;
    options.format = LogFormat::kJson;
    options.level = LogLevel::kDebug;
    options.sink = [this](absl::string_view line) {
      std::lock_guard<std::mutex> lock(lines_mu_);
      text_.append(line.data(), line.size());
      lines_.push_back(nlohmann::json::parse(line.begin(), line.end()));
    };
    SetLogOptions(std::move(options));
  }
  void TearDown() override {
    RestHttpTest::TearDown();
    SetLogOptions(LogOptions());
  }

  // The first line of `event` with `status`, after the server reported
  // `requests` requests.
  nlohmann::json Line(size_t requests, const std::string& event, int status) {
    Requests(requests);
    std::lock_guard<std::mutex> lock(lines_mu_);
    for (const nlohmann::json& line : lines_) {
      if (line["event"] == event && line.value("status", 0) == status) return line;
    }
    ADD_FAILURE() << "no " << event << " " << status << " line in:\n" << text_;
    return nlohmann::json::object();
  }
  std::string Text() {
    std::lock_guard<std::mutex> lock(lines_mu_);
    return text_;
  }

  std::mutex lines_mu_;
  std::string text_;
  std::vector<nlohmann::json> lines_;
};

TEST_F(RequestLogTest, AWrongTokenIsLoggedWithThePeerAndWithoutTheToken) {
  Start();
  const std::string wrong = "not-a-token-9d2f41";
  ASSERT_EQ(Get("/v1/runs", wrong)->status, 401);
  const nlohmann::json line = Line(1, "http.refused", 401);
  EXPECT_EQ(line["level"], "warn");
  EXPECT_EQ(line["method"], "GET");
  EXPECT_EQ(line["path"], "/v1/runs");
  EXPECT_EQ(line["peer"], "127.0.0.1");
  EXPECT_EQ(line["caller"], "peer 127.0.0.1");
  EXPECT_FALSE(line["error"].get<std::string>().empty());
  EXPECT_EQ(Text().find(wrong), std::string::npos) << Text();
}

TEST_F(RequestLogTest, AReadTokenOnAWriteIsLoggedAsItsTokenNumber) {
  Start();
  ASSERT_EQ(Post("/v1/runs", CreateBody(), kRead)->status, 403);
  const nlohmann::json line = Line(1, "http.refused", 403);
  EXPECT_THAT(line["caller"].get<std::string>(), StartsWith("token "));
  EXPECT_THAT(line["error"].get<std::string>(), HasSubstr("operator"));
  EXPECT_EQ(Text().find(kRead), std::string::npos) << Text();
}

TEST_F(RequestLogTest, WritesAreInfoReadsDebugAndTheRequestIdFollowsTheRun) {
  c_.Register("a");
  Start();
  test_http::Headers headers = Auth(kOperator);
  headers.emplace("X-Request-Id", "portal-7");
  test_http::Result created =
      client_->Post("/v1/runs", headers, CreateBody(), "application/json");
  ASSERT_EQ(created->status, 200) << created->body;
  EXPECT_EQ(created->get_header_value("X-Request-Id"), "portal-7");
  ASSERT_EQ(Get("/v1/runs")->status, 200);
  const nlohmann::json write = Line(2, "http.request", 200);
  EXPECT_EQ(write["level"], "info");
  EXPECT_EQ(write["method"], "POST");
  EXPECT_EQ(write["request_id"], "portal-7");
  std::lock_guard<std::mutex> lock(lines_mu_);
  bool read_at_debug = false, queued_with_id = false;
  for (const nlohmann::json& line : lines_) {
    read_at_debug |= line["event"] == "http.request" && line["method"] == "GET" &&
                     line["level"] == "debug";
    queued_with_id |= line["event"] == "run.state" && line.value("request_id", "") == "portal-7";
  }
  EXPECT_TRUE(read_at_debug) << text_;
  EXPECT_TRUE(queued_with_id) << text_;
}

TEST_F(RequestLogTest, AnUnsafeRequestIdIsReplaced) {
  Start();
  test_http::Headers headers = Auth(kRead);
  headers.emplace("X-Request-Id", "evil id\" with=quotes");
  test_http::Result got = client_->Get("/v1/runs", headers);
  ASSERT_EQ(got->status, 200);
  EXPECT_THAT(got->get_header_value("X-Request-Id"), ::testing::MatchesRegex("[0-9a-f]{16}"));
}

TEST(ErrorMessageOfTest, ReadsTheMessageOfAnErrorBodyOnly) {
  EXPECT_EQ(ErrorMessageOf(R"({"code":3,"message":"spec.ranks: must be at least 1"})"),
            "spec.ranks: must be at least 1");
  EXPECT_EQ(ErrorMessageOf("<html>sign in</html>"), "");
  EXPECT_EQ(ErrorMessageOf(R"({"message":7})"), "");
}

}  // namespace
}  // namespace collbench
