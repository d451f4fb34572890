// SPDX-License-Identifier: Apache-2.0
// The request guard in front of the routes, over loopback: what another
// site's page or a DNS-rebinding page can send is refused before any
// handler runs, and no run exists afterwards.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rest_http_fixture.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;

class HttpGuardTest : public RestHttpTest {
 protected:
  // Even without tokens (the case a browser attack aims at).
  void SetUp() override { authorizer_ = Authorizer(); }

  test_http::Result Send(const std::string& content_type, test_http::Headers headers,
                       const std::string& body) {
    return NewClient()->Post("/v1/runs", headers, body, content_type);
  }
  size_t RunCount() {
    const nlohmann::json runs = Json(Get("/v1/runs", ""));
    return runs.contains("runs") ? runs["runs"].size() : 0;
  }
  std::string Own() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
};

TEST_F(HttpGuardTest, CrossOriginTextPlainCreateIsRefusedAndCreatesNothing) {
  Start();
  // What a form or fetch(no-cors) on another site sends: a "simple" request.
  test_http::Result simple = Send("text/plain", {{"Origin", "http://evil.example"}}, CreateBody());
  ASSERT_TRUE(simple);
  EXPECT_EQ(simple->status, 403);
  EXPECT_THAT(Json(simple)["message"].get<std::string>(), HasSubstr("evil.example"));
  // The same body as text/plain without an Origin: still not JSON.
  test_http::Result plain = Send("text/plain", {}, CreateBody());
  EXPECT_EQ(plain->status, 415);
  EXPECT_THAT(Json(plain)["message"].get<std::string>(), HasSubstr("text/plain"));
  EXPECT_EQ(Send("", {}, CreateBody())->status, 415);
  EXPECT_EQ(Send("application/x-www-form-urlencoded", {}, CreateBody())->status, 415);
  EXPECT_EQ(Send("application/json", {{"Origin", "null"}}, CreateBody())->status, 403);
  EXPECT_EQ(RunCount(), 0u);
  EXPECT_EQ(server_->refusals().request_guard, 5);
  // The server's own page and the non-browser clients still create runs.
  EXPECT_EQ(Send("application/json", {{"Origin", Own()}}, CreateBody())->status, 200);
  EXPECT_EQ(Send("application/json; charset=utf-8", {}, CreateBody())->status, 200);
  EXPECT_EQ(RunCount(), 2u);
}

TEST_F(HttpGuardTest, AForeignHostOnLoopbackIsRefused) {
  Start();
  test_http::Result rebound = Send("application/json", {{"Host", "evil.example:8080"}}, CreateBody());
  ASSERT_TRUE(rebound);
  EXPECT_EQ(rebound->status, 421);
  EXPECT_THAT(Json(rebound)["message"].get<std::string>(), HasSubstr("evil.example:8080"));
  test_http::Result read = NewClient()->Get("/v1/runs", {{"Host", "evil.example"}});
  EXPECT_EQ(read->status, 421);
  EXPECT_EQ(RunCount(), 0u);
  EXPECT_EQ(NewClient()->Get("/healthz", {{"Host", "localhost:1"}})->status, 200);
  EXPECT_EQ(NewClient()->Get("/healthz", {{"Host", "[::1]:1"}})->status, 200);
}

TEST_F(HttpGuardTest, ARefusedBodyIsNotReadAndTheConnectionCloses) {
  Start();
  std::unique_ptr<test_http::Client> client = NewClient();
  client->set_keep_alive(true);
  test_http::Result refused = client->Post("/v1/runs", CreateBody(), "text/plain");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 415);
  EXPECT_EQ(refused->get_header_value("Connection"), "close");
  // The next request on the same client is answered normally.
  test_http::Result next = client->Get("/healthz");
  ASSERT_TRUE(next) << test_http::to_string(next.error());
  EXPECT_EQ(next->status, 200);
}

TEST_F(HttpGuardTest, RefusalsAreReportedWithTheirRoute) {
  Start();
  Send("text/plain", {}, CreateBody());
  EXPECT_THAT(Requests(1), testing::ElementsAre(testing::Pair("POST /v1/runs", 415)));
}

}  // namespace
}  // namespace collbench
