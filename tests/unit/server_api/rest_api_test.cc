// SPDX-License-Identifier: Apache-2.0
// Every REST route over loopback: success, validation (400 naming the
// field), unknown resources (404), tokens (401, 403), malformed and
// oversized bodies, and the per-request callback.
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rest_http_fixture.h"

namespace collbench {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::StartsWith;

// The field a 400 reply names in its google.rpc.BadRequest detail.
std::string ViolatedField(const nlohmann::json& error) {
  if (!error.contains("details") || error["details"].empty()) return "";
  return error["details"][0]["fieldViolations"][0]["field"].get<std::string>();
}

TEST_F(RestHttpTest, HealthReadinessAndMetricsNeedNoToken) {
  Start();
  test_http::Result health = Get("/healthz", "");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "ok\n");
  test_http::Result ready = Get("/readyz", "");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  ready_ = false;
  ready = Get("/readyz", "");
  EXPECT_EQ(ready->status, 503);
  EXPECT_EQ(Json(ready)["status"], "UNAVAILABLE");
  test_http::Result metrics = Get("/metrics", "");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->body, "collbench_build_info 1\n");
  EXPECT_THAT(metrics->get_header_value("Content-Type"), StartsWith("text/plain; version=0.0.4"));
}

TEST_F(RestHttpTest, CreateGetAndListRuns) {
  c_.Register("a");
  Start();
  test_http::Result created = Post("/v1/runs", CreateBody());
  ASSERT_TRUE(created);
  ASSERT_EQ(created->status, 200) << created->body;
  const nlohmann::json run = Json(created);
  EXPECT_THAT(run["name"].get<std::string>(), StartsWith("runs/"));
  EXPECT_EQ(run["state"], "SCHEDULED");
  EXPECT_EQ(run["spec"]["ranks"], 2);

  test_http::Result got = Get("/v1/runs/" + Id(run));
  ASSERT_EQ(got->status, 200);
  EXPECT_EQ(Json(got)["name"], run["name"]);

  Post("/v1/runs", CreateBody());
  Post("/v1/runs", CreateBody());
  const nlohmann::json page = Json(Get("/v1/runs?page_size=2"));
  ASSERT_EQ(page["runs"].size(), 2u);
  const std::string token = page["nextPageToken"];
  ASSERT_FALSE(token.empty());
  const nlohmann::json rest = Json(Get("/v1/runs?pageSize=2&page_token=" + token));
  ASSERT_EQ(rest["runs"].size(), 1u);
  EXPECT_EQ(rest["nextPageToken"], "");
  EXPECT_EQ(Json(Get("/v1/runs?filter=state%3DQUEUED"))["runs"].size(), 2u);
  EXPECT_EQ(Json(Get("/v1/runs?filter=state=SCHEDULED"))["runs"].size(), 1u);
}

TEST_F(RestHttpTest, SameRequestIdSameRun) {
  Start();
  const nlohmann::json first = Json(Post("/v1/runs", CreateBody(2, "req-1")));
  const nlohmann::json second = Json(Post("/v1/runs", CreateBody(2, "req-1")));
  EXPECT_EQ(first["name"], second["name"]);
  EXPECT_EQ(first["requestId"], "req-1");
}

// The same requestId with another spec is a mistake, not a retry: 409, and
// nothing new is queued.
TEST_F(RestHttpTest, SameRequestIdOtherSpecIs409) {
  Start();
  const nlohmann::json first = Json(Post("/v1/runs", CreateBody(2, "req-1")));
  test_http::Result other = Post("/v1/runs", CreateBody(4, "req-1"));
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 409) << other->body;
  const nlohmann::json error = Json(other);
  EXPECT_EQ(error["status"], "ALREADY_EXISTS");
  EXPECT_THAT(error["message"].get<std::string>(),
              HasSubstr(absl::StrCat("was used for ", first["name"].get<std::string>())));
  EXPECT_EQ(Json(Get("/v1/runs"))["runs"].size(), 1u);
}

// An unset transport is stored as AUTO, so runs compare by what they ran.
TEST_F(RestHttpTest, TheStoredSpecSaysItsTransport) {
  Start();
  const nlohmann::json run = Json(Post("/v1/runs", CreateBody(2)));
  EXPECT_EQ(run["spec"]["transport"], "AUTO");
}

// docs/design/security.md#admission-and-fairness: beyond the caller's create
// rate (default 10/s, burst 20) the answer is 429 with Retry-After in whole
// seconds, and nothing is queued.
TEST_F(RestHttpTest, CreatesBeyondTheRateAre429WithRetryAfter) {
  Start();
  int accepted = 0;
  bool refused = false;
  std::string retry_after, body;
  for (int i = 0; i < 40 && !refused; ++i) {
    test_http::Result created = Post("/v1/runs", CreateBody());
    ASSERT_TRUE(created);
    if (created->status == 429) {
      refused = true;
      retry_after = created->get_header_value("Retry-After");
      body = created->body;
    } else {
      ASSERT_EQ(created->status, 200) << created->body;
      ++accepted;
    }
  }
  ASSERT_TRUE(refused) << "40 creates at once, none refused";
  EXPECT_GE(accepted, 20);  // the burst
  EXPECT_EQ(retry_after, "1");
  const nlohmann::json error = nlohmann::json::parse(body);
  EXPECT_EQ(error["status"], "RESOURCE_EXHAUSTED");
  EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("create rate limit"));
  EXPECT_EQ(Json(Get("/v1/runs?page_size=100"))["runs"].size(), static_cast<size_t>(accepted));
}

TEST_F(RestHttpTest, InvalidSpecIs400NamingTheField) {
  Start();
  test_http::Result bad = Post("/v1/runs", CreateBody(0));
  ASSERT_EQ(bad->status, 400);
  const nlohmann::json error = Json(bad);
  EXPECT_EQ(error["code"], 3);
  EXPECT_EQ(error["status"], "INVALID_ARGUMENT");
  EXPECT_THAT(error["message"].get<std::string>(), StartsWith("spec.ranks: "));
  EXPECT_EQ(ViolatedField(error), "spec.ranks");

  bad = Post("/v1/runs", R"({"spec": {"operation": "allreduce", "ranks": 2,
                                      "sizesBytes": ["8", "0"]}})");
  ASSERT_EQ(bad->status, 400);
  EXPECT_EQ(ViolatedField(Json(bad)), "spec.sizes_bytes[1]");

  bad = Post("/v1/runs", R"({"requestId": "x"})");
  ASSERT_EQ(bad->status, 400);
  EXPECT_EQ(ViolatedField(Json(bad)), "spec");
  EXPECT_EQ(Json(Get("/v1/runs"))["runs"].size(), 0u) << "nothing may be queued";
}

TEST_F(RestHttpTest, MalformedOrUnknownJsonIs400) {
  Start();
  test_http::Result bad = Post("/v1/runs", "{\"spec\": {");
  ASSERT_EQ(bad->status, 400);
  std::string message = Json(bad)["message"];
  EXPECT_THAT(message, StartsWith("request body: "));
  EXPECT_GT(message.size(), 20u) << "the parser's reason is missing";

  bad = Post("/v1/runs", R"({"spec": {"operation": "bcast", "rank": 2}})");
  ASSERT_EQ(bad->status, 400);
  EXPECT_THAT(Json(bad)["message"].get<std::string>(), HasSubstr("rank"));

  bad = Post("/v1/runs", "");
  ASSERT_EQ(bad->status, 400);
  EXPECT_THAT(Json(bad)["message"].get<std::string>(), StartsWith("request body: "));
}

TEST_F(RestHttpTest, BadQueryParametersAre400NamingThem) {
  Start();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/v1/runs?page_size=abc", "page_size"},
      {"/v1/runs?page_size=-1", "page_size"},
      {"/v1/runs?filter=RUNNING", "filter"},
      {"/v1/runs?page_token=garbage", "page_token"},
      {"/v1/runs?limit=3", "limit"},
      {"/v1/runs?page_size=1&page_size=2", "page_size"},
      {"/v1/workers?page_size=x", "page_size"},
      {"/v1/workers?page_token=x", "page_token"},
  };
  for (const auto& [path, field] : cases) {
    test_http::Result bad = Get(path);
    ASSERT_EQ(bad->status, 400) << path;
    EXPECT_EQ(ViolatedField(Json(bad)), field) << path;
  }
}

TEST_F(RestHttpTest, UnknownRunsAndWorkersAre404) {
  Start();
  for (const std::string& path :
       {"/v1/runs/nope", "/v1/runs/nope/results", "/v1/runs/nope:watch", "/v1/workers/nope"}) {
    test_http::Result missing = Get(path);
    ASSERT_TRUE(missing) << path;
    EXPECT_EQ(missing->status, 404) << path;
    EXPECT_EQ(Json(missing)["status"], "NOT_FOUND") << path;
  }
  test_http::Result cancel = Post("/v1/runs/nope:cancel", "");
  EXPECT_EQ(cancel->status, 404);
  EXPECT_EQ(Json(cancel)["code"], 5);
  EXPECT_EQ(Post("/v1/workers/nope:drain", "")->status, 404);
}

TEST_F(RestHttpTest, UnknownPathsAre404AndOtherMethods405) {
  Start();
  test_http::Result missing = Get("/v2/runs");
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(Json(missing)["status"], "NOT_FOUND");
  test_http::Result wrong = client_->Delete("/v1/runs", Auth(kOperator));
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 405);
  EXPECT_EQ(wrong->get_header_value("Allow"), "POST, GET");
  EXPECT_EQ(Json(wrong)["status"], "UNIMPLEMENTED");
}

TEST_F(RestHttpTest, CancelQueuedThenCancelAgainIs412) {
  c_.Register("a");  // two slots: the second 2-rank run waits in the queue
  Start();
  Post("/v1/runs", CreateBody());
  const nlohmann::json queued = Json(Post("/v1/runs", CreateBody()));
  ASSERT_EQ(queued["state"], "QUEUED");
  test_http::Result cancelled = Post("/v1/runs/" + Id(queued) + ":cancel", "");
  ASSERT_EQ(cancelled->status, 200) << cancelled->body;
  EXPECT_EQ(Json(cancelled)["state"], "CANCELLED");
  test_http::Result again = Post("/v1/runs/" + Id(queued) + ":cancel", "{}");
  EXPECT_EQ(again->status, 412);
  EXPECT_EQ(Json(again)["status"], "FAILED_PRECONDITION");
  test_http::Result mismatch = Post("/v1/runs/" + Id(queued) + ":cancel", R"({"name": "runs/x"})");
  EXPECT_EQ(mismatch->status, 400);
  EXPECT_EQ(ViolatedField(Json(mismatch)), "name");
}

TEST_F(RestHttpTest, CancelWithAnEmptyBody) {
  Start();
  const nlohmann::json run = Json(Post("/v1/runs", CreateBody()));
  test_http::Result cancelled =
      client_->Post(("/v1/runs/" + Id(run) + ":cancel").c_str(), Auth(kOperator));
  ASSERT_TRUE(cancelled);
  EXPECT_EQ(cancelled->status, 200);
}

TEST_F(RestHttpTest, ResultsOfAFinishedRun) {
  c_.Register("a");
  Start();
  const nlohmann::json run = Json(Post("/v1/runs", CreateBody()));
  const std::string name = run["name"];
  c_.Running(name, 2);
  c_.Result(name, 0);
  c_.Result(name, 1);
  c_.Succeeded(name, 2);
  const nlohmann::json results = Json(Get("/v1/runs/" + Id(run) + "/results"));
  EXPECT_EQ(results["run"]["state"], "SUCCEEDED");
  ASSERT_EQ(results["results"].size(), 2u);
  EXPECT_EQ(results["results"][0]["bytes"], "8");  // uint64 is a string in JSON
  EXPECT_EQ(results["results"][1]["sequence"], "1");
}

TEST_F(RestHttpTest, ListGetAndDrainWorkers) {
  c_.Register("a");
  c_.Register("b");
  Start();
  const nlohmann::json all = Json(Get("/v1/workers"));
  ASSERT_EQ(all["workers"].size(), 2u);
  EXPECT_EQ(all["workers"][0]["name"], "workers/a");
  const nlohmann::json page = Json(Get("/v1/workers?page_size=1"));
  ASSERT_EQ(page["workers"].size(), 1u);
  const nlohmann::json next =
      Json(Get("/v1/workers?page_size=1&page_token=" + page["nextPageToken"].get<std::string>()));
  ASSERT_EQ(next["workers"].size(), 1u);
  EXPECT_EQ(next["workers"][0]["name"], "workers/b");
  const nlohmann::json worker = Json(Get("/v1/workers/a"));
  EXPECT_EQ(worker["name"], "workers/a");
  EXPECT_EQ(worker["slots"], 2);
  EXPECT_EQ(worker["state"], "READY");
  test_http::Result drained = Post("/v1/workers/b:drain", "");
  ASSERT_EQ(drained->status, 200);
  EXPECT_EQ(Json(drained)["state"], "DRAINING");
}

// DELETE /v1/runs/{id}, DELETE /v1/workers/{id} and :undrain are operator
// calls: a read token changes nothing; an operator's delete of a finished
// run leaves 404s, of an active run 412 and the run as it was.
TEST_F(RestHttpTest, LifecycleRoutesNeedTheOperatorAndRefuseActiveRuns) {
  c_.Register("a");
  const v1::Run done = c_.Create(1);
  c_.Running(done.name(), 1);
  c_.Result(done.name(), 0);
  c_.Succeeded(done.name(), 1);
  const v1::Run active = c_.Create(1);
  const std::string done_id = done.name().substr(5), active_id = active.name().substr(5);
  Start();
  ASSERT_EQ(Post("/v1/workers/a:drain", "")->status, 200);
  EXPECT_EQ(Delete("/v1/runs/" + done_id, kRead)->status, 403);
  EXPECT_EQ(Post("/v1/workers/a:undrain", "", kRead)->status, 403);
  EXPECT_EQ(Delete("/v1/workers/a", kRead)->status, 403);
  EXPECT_EQ(Json(Get("/v1/runs/" + done_id + "/results"))["results"].size(), 1u);
  EXPECT_EQ(Json(Get("/v1/workers/a"))["draining"], true);

  test_http::Result refused = Delete("/v1/runs/" + active_id);
  ASSERT_EQ(refused->status, 412);
  EXPECT_THAT(Json(refused)["message"].get<std::string>(), HasSubstr("cancel it first"));
  EXPECT_EQ(Json(Get("/v1/runs/" + active_id))["state"], "SCHEDULED");
  test_http::Result deleted = Delete("/v1/runs/" + done_id);
  ASSERT_EQ(deleted->status, 200);
  EXPECT_EQ(deleted->body, "{}");
  EXPECT_EQ(Get("/v1/runs/" + done_id)->status, 404);
  EXPECT_EQ(Get("/v1/runs/" + done_id + "/results")->status, 404);

  const nlohmann::json undrained = Json(Post("/v1/workers/a:undrain", "{}"));
  EXPECT_EQ(undrained["draining"], false);
  EXPECT_EQ(undrained["state"], "BUSY");
  EXPECT_EQ(Post("/v1/workers/a:undrain", R"({"name": "workers/b"})")->status, 400);
  test_http::Result connected = Delete("/v1/workers/a");
  ASSERT_EQ(connected->status, 412);
  EXPECT_THAT(Json(connected)["message"].get<std::string>(), HasSubstr("drain it, stop it"));
  EXPECT_EQ(Delete("/v1/workers/nope")->status, 404);
}

// Clearing a quarantine is an operator's call: a read token leaves the
// worker SUSPECT; the operator's clear ends it, and a second clear is 412.
TEST_F(RestHttpTest, ClearingASuspectWorkerNeedsTheOperator) {
  c_.Register("a");
  v1::WorkerSuspicion why;
  why.set_reason("slow with every healthy peer");
  ASSERT_TRUE(c_.fleet().SuspectWorker("workers/a", why).ok());
  Start();
  EXPECT_EQ(Post("/v1/workers/a:clear", "", kRead)->status, 403);
  EXPECT_EQ(Post("/v1/workers/a:clear", "", "")->status, 401);
  EXPECT_EQ(Json(Get("/v1/workers/a"))["state"], "SUSPECT");
  const nlohmann::json cleared = Json(Post("/v1/workers/a:clear", "{}"));
  EXPECT_EQ(cleared["state"], "READY");
  EXPECT_FALSE(cleared.contains("suspect"));
  test_http::Result again = Post("/v1/workers/a:clear", "");
  ASSERT_EQ(again->status, 412);
  EXPECT_THAT(Json(again)["message"].get<std::string>(), HasSubstr("is not SUSPECT"));
}

TEST_F(RestHttpTest, TokensAreCheckedPerRole) {
  Start();
  test_http::Result none = Get("/v1/runs", "");
  ASSERT_EQ(none->status, 401);
  EXPECT_EQ(Json(none)["status"], "UNAUTHENTICATED");
  EXPECT_THAT(none->get_header_value("WWW-Authenticate"), StartsWith("Bearer"));
  EXPECT_EQ(Get("/v1/runs", "wrong")->status, 401);
  EXPECT_EQ(Get("/v1/runs", "w-token")->status, 403);  // a worker token may not read
  EXPECT_EQ(Post("/v1/runs", CreateBody(), "")->status, 401);
  test_http::Result denied = Post("/v1/runs", CreateBody(), kRead);
  ASSERT_EQ(denied->status, 403);
  EXPECT_EQ(Json(denied)["status"], "PERMISSION_DENIED");
  EXPECT_EQ(Json(Get("/v1/runs"))["runs"].size(), 0u) << "a denied create queued a run";
  EXPECT_EQ(Post("/v1/runs/x:cancel", "", kRead)->status, 403);
  EXPECT_EQ(Post("/v1/workers/x:drain", "", kRead)->status, 403);
  EXPECT_EQ(Get("/v1/runs", kOperator)->status, 200);  // operators may read
}

TEST_F(RestHttpTest, NoTokensNeededWithoutATokenFile) {
  authorizer_ = Authorizer();
  Start();
  EXPECT_EQ(Get("/v1/runs", "")->status, 200);
  EXPECT_EQ(Post("/v1/runs", CreateBody(), "")->status, 200);
}

TEST_F(RestHttpTest, BodiesOverTheLimitAre413) {
  HttpFrontendOptions options;
  options.http.limits.max_body_bytes = 4096;
  Start(options);
  const std::string big(8192, ' ');
  test_http::Result large = Post("/v1/runs", big);
  ASSERT_TRUE(large);
  EXPECT_EQ(large->status, 413);
  EXPECT_EQ(Json(large)["status"], "RESOURCE_EXHAUSTED");

  // Chunked, so the server cannot see the length up front: refused, 411.
  std::unique_ptr<test_http::Client> client = NewClient();
  test_http::Result chunked = client->Post(
      "/v1/runs", Auth(kOperator),
      [&big](size_t offset, test_http::DataSink& sink) {
        sink.write(big.data(), big.size());
        sink.done();
        return true;
      },
      "application/json");
  ASSERT_TRUE(chunked) << test_http::to_string(chunked.error());
  EXPECT_EQ(chunked->status, 411);
  EXPECT_EQ(Json(chunked)["status"], "INVALID_ARGUMENT");
  // A body within the limit still works.
  EXPECT_EQ(
      NewClient()->Post("/v1/runs", Auth(kOperator), CreateBody(), "application/json")->status,
      200);
}

TEST_F(RestHttpTest, EveryRequestIsReportedOnceWithItsRoute) {
  Start();
  Get("/healthz", "");
  Get("/v1/runs/nope");
  Get("/v1/runs", "");
  Get("/nowhere");
  Post("/v1/runs", CreateBody(0));
  // Reports come after each answer is written, so their order may differ.
  EXPECT_THAT(Requests(5),
              testing::UnorderedElementsAre(
                  Pair("GET /healthz", 200), Pair("GET /v1/runs/{id}", 404),
                  Pair("GET /v1/runs", 401), Pair("unmatched", 404), Pair("POST /v1/runs", 400)));
}

TEST_F(RestHttpTest, ServesTlsWhenGivenACertificate) {
  if (!StartTls("rest_tls")) GTEST_SKIP() << "no openssl command to make a certificate";
  test_http::Result health = tls_client_->Get("/healthz");
  ASSERT_TRUE(health) << test_http::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  test_http::Result runs = tls_client_->Get("/v1/runs", Auth(kRead));
  ASSERT_TRUE(runs);
  EXPECT_EQ(runs->status, 200);
  test_http::Result plain = client_->Get("/healthz");  // plain HTTP gets no answer
  EXPECT_FALSE(plain && plain->status == 200);
}

TEST_F(RestHttpTest, ListenErrors) {
  HttpFrontendOptions options;
  options.http.listen = "nonsense";
  EXPECT_EQ(HttpFrontend::Start(options, Parts()).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.http.listen = "127.0.0.1:0";
  options.http.tls_cert = "/nonexistent/cert.pem";
  EXPECT_FALSE(HttpFrontend::Start(options, Parts()).ok());
  options.http.tls_key = "/nonexistent/key.pem";
  EXPECT_FALSE(HttpFrontend::Start(options, Parts()).ok());
  // A client CA (mutual TLS) needs a certificate to serve.
  HttpFrontendOptions client_ca_only;
  client_ca_only.http.listen = "127.0.0.1:0";
  client_ca_only.http.tls_client_ca = "/nonexistent/ca.pem";
  const absl::Status no_cert = HttpFrontend::Start(client_ca_only, Parts()).status();
  EXPECT_EQ(no_cert.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(no_cert.message(), "--tls-client-ca needs --tls-cert and --tls-key");
  Start();
  options = HttpFrontendOptions();
  options.http.listen = "127.0.0.1:" + std::to_string(server_->port());  // taken
  EXPECT_EQ(HttpFrontend::Start(options, Parts()).status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace collbench
