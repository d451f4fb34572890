// SPDX-License-Identifier: Apache-2.0
// The HTTP transport (server/http) on its own, over loopback with a small
// HttpHandler of the test's: the handler's answers on the loop and on the
// handler threads, the transport's own refusals (body limit, request
// guard) with the handler's error body and before its answer runs, the
// observer's labels, and an event stream whose keep-alives follow the
// injected clock and which Shutdown() ends cleanly.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "http_test_client.h"
#include "server/http/http_server.h"
#include "server/http/sse_source.h"
#include "server/http/sse_writer.h"

namespace collbench {
namespace {

// A source with text queued by the test.
class TextSource final : public SseSource {
 public:
  void Push(const std::string& text) {
    {
      absl::MutexLock lock(&mu_);
      queued_ += text;
    }
    Notify();
  }
  Chunk Take() override {
    absl::MutexLock lock(&mu_);
    Chunk chunk{std::move(queued_), closed_};
    queued_.clear();
    return chunk;
  }
  void SetNotify(std::function<void()> notify) override {
    absl::MutexLock lock(&notify_mu_);
    notify_ = std::move(notify);
  }
  void Close() override {
    {
      absl::MutexLock lock(&mu_);
      closed_ = true;
    }
    Notify();
  }
  void Detach() override { detached_ = true; }
  bool detached() const { return detached_; }

 private:
  void Notify() {
    absl::MutexLock lock(&notify_mu_);
    if (notify_) notify_();
  }
  absl::Mutex notify_mu_;
  std::function<void()> notify_ ABSL_GUARDED_BY(notify_mu_);
  absl::Mutex mu_;
  std::string queued_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> detached_{false};
};

// Answers GET /echo with what it read (on a handler thread), GET /quick on
// the loop, GET /stream with `stream`; counts the answers it ran.
class TestHandler final : public HttpHandler {
 public:
  HttpDispatch Route(const HttpRequest& request) override {
    HttpDispatch dispatch;
    dispatch.label = absl::StrCat(request.method, " ", request.path);
    dispatch.caller = "peer " + request.peer;
    dispatch.on_loop = request.path == "/quick";
    dispatch.answer = [this, request] {
      answered_.fetch_add(1);
      HttpReply reply;
      if (request.path == "/stream") {
        reply.content_type = "text/event-stream";
        reply.stream = stream;
        return reply;
      }
      reply.content_type = "text/plain";
      reply.body = absl::StrCat(request.method, " ", request.target, " ", request.body);
      return reply;
    };
    return dispatch;
  }
  HttpReply ErrorReply(int http_status, const absl::Status& status) override {
    HttpReply reply;
    reply.http_status = http_status;
    reply.body = absl::StrCat("refused: ", status.message());
    return reply;
  }
  std::shared_ptr<TextSource> stream = std::make_shared<TextSource>();
  std::atomic<int> answered_{0};
};

class HttpTransportTest : public ::testing::Test {
 protected:
  void Start(HttpServerOptions options = {}) {
    options.listen = "127.0.0.1:0";
    HttpServerDependencies deps;
    deps.handler = &handler_;
    deps.clock = &clock_;
    deps.on_request = [this](absl::string_view label, int status, absl::Duration) {
      absl::MutexLock lock(&mu_);
      observed_.emplace_back(std::string(label), status);
    };
    absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Start(options, deps);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    client_ = std::make_unique<test_http::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(10, 0);
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }
  std::vector<std::pair<std::string, int>> Observed(size_t count) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, count]()
                      ABSL_SHARED_LOCKS_REQUIRED(mu_) { return observed_.size() >= count; };
    mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(5));
    return observed_;
  }

  FakeClock clock_;
  TestHandler handler_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<test_http::Client> client_;
  absl::Mutex mu_;
  std::vector<std::pair<std::string, int>> observed_ ABSL_GUARDED_BY(mu_);
};

TEST_F(HttpTransportTest, TheHandlersAnswersGoOutWithTheRequestId) {
  Start();
  test_http::Result echo = client_->Get("/echo?a=1", {{"X-Request-Id", "req-7"}});
  ASSERT_TRUE(echo);
  EXPECT_EQ(echo->status, 200);
  EXPECT_EQ(echo->body, "GET /echo?a=1 ");
  EXPECT_EQ(echo->get_header_value("Content-Type"), "text/plain");
  EXPECT_EQ(echo->get_header_value("X-Request-Id"), "req-7");
  test_http::Result quick = client_->Get("/quick");
  ASSERT_TRUE(quick);
  EXPECT_EQ(quick->body, "GET /quick ");
  EXPECT_EQ(Observed(2),
            (std::vector<std::pair<std::string, int>>{{"GET /echo", 200}, {"GET /quick", 200}}));
}

// The transport's own refusals carry the handler's error body and the
// route's label, and the handler's answer never runs for them.
TEST_F(HttpTransportTest, RefusalsComeBeforeTheAnswerWithTheHandlersBody) {
  HttpServerOptions options;
  options.max_body_bytes = 16;
  Start(options);
  test_http::Result big = client_->Post("/echo", std::string(64, 'x'), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_EQ(big->body, "refused: request body: larger than 16 bytes");
  test_http::Result text = client_->Post("/echo", "{}", "text/plain");
  ASSERT_TRUE(text);
  EXPECT_EQ(text->status, 415);
  EXPECT_EQ(text->body.rfind("refused: Content-Type: 'text/plain'", 0), 0u) << text->body;
  test_http::Result form = client_->Post("/echo", "a=1", "application/x-www-form-urlencoded");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->status, 415);  // no form path was given
  EXPECT_EQ(handler_.answered_.load(), 0);
  EXPECT_EQ(server_->guard_refusals(), 2);
  EXPECT_EQ(Observed(3), (std::vector<std::pair<std::string, int>>{
                             {"POST /echo", 413}, {"POST /echo", 415}, {"POST /echo", 415}}));
  test_http::Result ok = client_->Post("/echo", "{}", "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->body, "POST /echo {}");
}

// Keep-alives go out once the injected clock says the stream was quiet for
// `event_keepalive`, not by the machine's time; Shutdown() ends the stream
// with a clean end of its response and detaches its source.
TEST_F(HttpTransportTest, StreamsKeepAliveByTheClockAndEndAtShutdown) {
  HttpServerOptions options;
  options.event_keepalive = absl::Seconds(30);
  Start(options);
  std::string text;
  absl::Mutex text_mu;
  int status = 0;
  std::thread reader([&] {
    test_http::Client client("127.0.0.1", server_->port());
    client.set_read_timeout(30, 0);
    test_http::Result result = client.Get(
        "/stream", {},
        [&](const test_http::Response& response) {
          status = response.status;
          return true;
        },
        [&](const char* data, size_t size) {
          absl::MutexLock lock(&text_mu);
          text.append(data, size);
          return true;
        });
  });
  auto wait_for = [&](const std::string& needle) {
    absl::MutexLock lock(&text_mu);
    auto found = [&]() ABSL_SHARED_LOCKS_REQUIRED(text_mu) {
      return text.find(needle) != std::string::npos;
    };
    return text_mu.AwaitWithTimeout(absl::Condition(&found), absl::Seconds(10));
  };
  handler_.stream->Push("event: a\ndata: 1\n\n");
  ASSERT_TRUE(wait_for("data: 1"));
  // Real time passes, the clock stands still: no keep-alive.
  absl::SleepFor(absl::Seconds(1));
  {
    absl::MutexLock lock(&text_mu);
    EXPECT_EQ(text.find(kSseKeepAlive), std::string::npos) << text;
  }
  clock_.Advance(absl::Seconds(31));
  EXPECT_TRUE(wait_for(kSseKeepAlive));
  server_->Shutdown();
  reader.join();
  EXPECT_EQ(status, 200);
  EXPECT_TRUE(handler_.stream->detached());
}

}  // namespace
}  // namespace collbench
