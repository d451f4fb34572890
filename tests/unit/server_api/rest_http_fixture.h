// SPDX-License-Identifier: Apache-2.0
// The coordinator's HTTP frontend (server/app/http_frontend.h: the REST
// router over the method table's routes, the service routes and the /ui/
// pages, on the HTTP transport) on 127.0.0.1 (port 0) over a
// FakeCoordinator, with a read token "r-token" and an operator token
// "o-token", and an HTTP client (http_test_client.h).
// Records every on_request call.
#ifndef COLLBENCH_TESTS_UNIT_SERVER_API_REST_HTTP_FIXTURE_H_
#define COLLBENCH_TESTS_UNIT_SERVER_API_REST_HTTP_FIXTURE_H_

#include <atomic>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "gtest/gtest.h"
#include "http_test_client.h"
#include "rest_test_support.h"
#include "server/api/handlers.h"
#include "server/app/http_frontend.h"
#include "server/auth/authorizer.h"

namespace collbench {

// Writes a self-signed certificate for 127.0.0.1 to DIR/cert.pem and its key
// to DIR/key.pem; false when there is no openssl command.
inline bool MakeLoopbackCertificate(const std::string& dir) {
  const std::string command =
      "mkdir -p " + dir +
      " && openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -keyout " + dir +
      "/key.pem -out " + dir + "/cert.pem >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

class RestHttpTest : public ::testing::Test {
 protected:
  static constexpr char kRead[] = "r-token";
  static constexpr char kOperator[] = "o-token";

  void SetUp() override {
    absl::StatusOr<Authorizer> tokens =
        Authorizer::FromText("read r-token\noperator o-token\nworker w-token\n");
    ASSERT_TRUE(tokens.ok()) << tokens.status();
    authorizer_ = *tokens;
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  // The parts of a frontend over c_, with what the test set before.
  HttpFrontendParts Parts() {
    api_ = std::make_unique<CoordinatorApi>(
        ApiParts{&c_.manager(), &c_.fleet(), &c_.hub(), watchers_, workflows_, schedules_, clock_});
    HttpFrontendParts parts;
    parts.api = api_.get();
    parts.authorizer = &authorizer_;
    parts.clock = clock_;
    parts.service.metrics_text = [] { return std::string("collbench_build_info 1\n"); };
    parts.service.ready = [this] { return ready_.load(); };
    parts.on_request = [this](absl::string_view route, int status, absl::Duration latency) {
      absl::MutexLock lock(&mu_);
      requests_.emplace_back(std::string(route), status);
    };
    return parts;
  }

  void Start(HttpFrontendOptions options = {}) {
    options.http.listen = "127.0.0.1:0";
    absl::StatusOr<std::unique_ptr<HttpFrontend>> server = HttpFrontend::Start(options, Parts());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    client_ = NewClient();
  }

  // Starts the server over TLS with a fresh self-signed certificate, and a
  // client for it in tls_client_; false (nothing started) when there is no
  // openssl command to make the certificate.
  bool StartTls(const std::string& name) {
    const std::string dir = ::testing::TempDir() + "/" + name;
    if (!MakeLoopbackCertificate(dir)) return false;
    HttpFrontendOptions options;
    options.http.tls_cert = dir + "/cert.pem";
    options.http.tls_key = dir + "/key.pem";
    Start(options);
    tls_client_ =
        std::make_unique<test_http::Client>("https://127.0.0.1:" + std::to_string(server_->port()));
    tls_client_->enable_server_certificate_verification(false);
    return true;
  }

  std::unique_ptr<test_http::Client> NewClient() {
    auto client = std::make_unique<test_http::Client>("127.0.0.1", server_->port());
    client->set_read_timeout(30, 0);
    return client;
  }

  static test_http::Headers Auth(const std::string& token) {
    if (token.empty()) return {};
    return {{"Authorization", "Bearer " + token}};
  }

  test_http::Result Get(const std::string& path, const std::string& token = kRead) {
    return client_->Get(path.c_str(), Auth(token));
  }
  test_http::Result Post(const std::string& path, const std::string& body,
                       const std::string& token = kOperator) {
    return client_->Post(path.c_str(), Auth(token), body, "application/json");
  }

  test_http::Result Delete(const std::string& path, const std::string& token = kOperator) {
    return client_->Delete(path.c_str(), Auth(token));
  }

  static nlohmann::json Json(const test_http::Result& result) {
    EXPECT_TRUE(result) << "no response: " << test_http::to_string(result.error());
    if (!result) return nlohmann::json();
    EXPECT_EQ(result->get_header_value("Content-Type"), "application/json") << result->body;
    return nlohmann::json::parse(result->body, nullptr, /*allow_exceptions=*/false);
  }

  // A valid CreateRunRequest body.
  static std::string CreateBody(int ranks = 2, const std::string& request_id = "") {
    nlohmann::json body = {
        {"spec", {{"operation", "allreduce"}, {"ranks", ranks}, {"sizesBytes", {"8", "1024"}}}}};
    if (!request_id.empty()) body["requestId"] = request_id;
    return body.dump();
  }

  // The bare id of "runs/{id}".
  static std::string Id(const nlohmann::json& run) {
    return run["name"].get<std::string>().substr(5);
  }

  // What on_request was told. The server reports a request after writing
  // its answer, so this waits (briefly) for at least `count` reports.
  std::vector<std::pair<std::string, int>> Requests(size_t count = 0) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, count]()
                      ABSL_SHARED_LOCKS_REQUIRED(mu_) { return requests_.size() >= count; };
    mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(5));
    return requests_;
  }

  FakeCoordinator c_;
  Authorizer authorizer_;
  const Clock* clock_ = RealClock();   // set before Start() to drive the time
  WatcherLimits* watchers_ = nullptr;  // set before Start() to bound watchers
  WorkflowManager* workflows_ = nullptr;  // set before Start() to serve workflows
  ScheduleManager* schedules_ = nullptr;  // set before Start() to serve schedules
  std::atomic<bool> ready_{true};
  std::unique_ptr<CoordinatorApi> api_;  // Parts()
  std::unique_ptr<HttpFrontend> server_;
  std::unique_ptr<test_http::Client> client_;
  std::unique_ptr<test_http::Client> tls_client_;  // after StartTls()
  absl::Mutex mu_;
  std::vector<std::pair<std::string, int>> requests_ ABSL_GUARDED_BY(mu_);
};

}  // namespace collbench

#endif  // COLLBENCH_TESTS_UNIT_SERVER_API_REST_HTTP_FIXTURE_H_
