// SPDX-License-Identifier: Apache-2.0
// The HTTP transport (server/http) on its own, over loopback with a small
// HttpHandler of the test's: the handler's answers on the loop and on the
// handler threads, the transport's own refusals (body limit, request
// guard) with the handler's error body and before its answer runs, the
// observer's labels, and an event stream whose keep-alives follow the
// injected clock and which Shutdown() ends cleanly.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
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
    dispatch.authenticated = request.authorization == "Bearer good";
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
  options.limits.max_body_bytes = 16;
  Start(options);
  test_http::Result big = client_->Post("/echo", std::string(64, 'x'), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_EQ(big->body,
            "refused: request body: Content-Length 64 is over the limit of 16 bytes "
            "(--max-body-bytes)");
  test_http::Client client("127.0.0.1", server_->port());
  test_http::Result text = client.Post("/echo", "{}", "text/plain");
  ASSERT_TRUE(text);
  EXPECT_EQ(text->status, 415);
  EXPECT_EQ(text->body.rfind("refused: Content-Type: 'text/plain'", 0), 0u) << text->body;
  test_http::Result form = client.Post("/echo", "a=1", "application/x-www-form-urlencoded");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->status, 415);  // no form path was given
  EXPECT_EQ(handler_.answered_.load(), 0);
  EXPECT_EQ(server_->refusals().request_guard, 2);
  EXPECT_EQ(server_->refusals().too_large, 1);
  EXPECT_EQ(Observed(3), (std::vector<std::pair<std::string, int>>{
                             {"POST /echo", 413}, {"POST /echo", 415}, {"POST /echo", 415}}));
  test_http::Result ok = client.Post("/echo", "{}", "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->body, "POST /echo {}");
}

// A raw connection to the server under test, for what no HTTP client
// sends: announced bodies that never come, a byte at a time.
class RawHttpPeer {
 public:
  explicit RawHttpPeer(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    const timeval wait{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  }
  ~RawHttpPeer() { close(fd_); }
  bool connected() const { return connected_; }
  bool Send(absl::string_view bytes) {
    return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // What the server sent until `text` ended it (or 5 s passed).
  std::string ReadUntil(absl::string_view end) {
    std::string text;
    char buffer[4096];
    while (!absl::EndsWith(text, end)) {
      const ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      text.append(buffer, static_cast<size_t>(n));
    }
    return text;
  }
  // What the server sent until it closed (or 5 s passed, or a reset).
  std::string ReadUntilClosed(bool* closed) {
    std::string text;
    char buffer[4096];
    for (;;) {
      const ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
      if (n > 0) {
        text.append(buffer, static_cast<size_t>(n));
        continue;
      }
      *closed = n == 0 || errno == ECONNRESET;
      return text;
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

// Waits until the server holds `count` connections.
bool AwaitOpenConnections(const HttpServer& server, int count) {
  const absl::Time give_up = absl::Now() + absl::Seconds(5);
  while (server.open_connections() != count) {
    if (absl::Now() > give_up) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

// A body announced over the limit is refused from its Content-Length: the
// 413 comes while the client has sent none of it.
TEST_F(HttpTransportTest, AnAnnouncedBodyOverTheLimitIsRefusedBeforeItIsSent) {
  HttpServerOptions options;
  options.limits.max_body_bytes = 4096;
  Start(options);
  RawHttpPeer peer(server_->port());
  ASSERT_TRUE(peer.connected());
  ASSERT_TRUE(
      peer.Send("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Content-Type: application/json\r\nContent-Length: 1073741824\r\n\r\n"));
  bool closed = false;
  const std::string answer = peer.ReadUntilClosed(&closed);
  EXPECT_EQ(answer.rfind("HTTP/1.1 413 ", 0), 0u) << answer;
  EXPECT_NE(answer.find("Content-Length 1073741824 is over the limit of 4096 bytes"),
            std::string::npos)
      << answer;
  EXPECT_TRUE(closed);
  EXPECT_EQ(server_->refusals().too_large, 1);
  EXPECT_EQ(handler_.answered_.load(), 0);
}

// The guard reads a request's headers only while they are whole at the
// front of the buffer: headers that come in pieces are left to evhttp, and
// a body that looks like headers is never taken for them.
TEST_F(HttpTransportTest, ABodyAfterHeadersInPiecesIsNeverTakenForHeaders) {
  Start();
  RawHttpPeer peer(server_->port());
  ASSERT_TRUE(peer.connected());
  const std::string body = "x\r\nTransfer-Encoding: chunked\r\nContent-Length: 9999999\r\n\r\ny";
  ASSERT_TRUE(
      peer.Send(absl::StrCat("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                             "Content-Type: application/json\r\nContent-Length: ",
                             body.size(), "\r\n")));
  absl::SleepFor(absl::Milliseconds(50));  // each piece its own read
  ASSERT_TRUE(peer.Send("\r\n"));
  absl::SleepFor(absl::Milliseconds(50));
  ASSERT_TRUE(peer.Send(body));
  EXPECT_TRUE(absl::StrContains(peer.ReadUntil(body), "200 OK"));
  EXPECT_EQ(server_->refusals().too_large, 0);
  EXPECT_EQ(handler_.answered_.load(), 1);
}

// A chunked body, whose size nothing announces, is refused (411) before
// any of it is read.
TEST_F(HttpTransportTest, AChunkedBodyIsRefusedBeforeItIsRead) {
  Start();
  RawHttpPeer peer(server_->port());
  ASSERT_TRUE(peer.connected());
  ASSERT_TRUE(peer.Send(
      absl::StrCat("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n2000\r\n",
                   std::string(8192, 'x'), "\r\n")));
  bool closed = false;
  const std::string answer = peer.ReadUntilClosed(&closed);
  EXPECT_EQ(answer.rfind("HTTP/1.1 411 ", 0), 0u) << answer;
  EXPECT_NE(answer.find("send it with a Content-Length"), std::string::npos) << answer;
  EXPECT_EQ(server_->refusals().too_large, 1);
  EXPECT_EQ(handler_.answered_.load(), 0);
}

// A client that sends a byte at a time never lets the idle timer (5 s)
// fire; the request deadline closes it all the same, and counts it.
TEST_F(HttpTransportTest, ASlowSenderIsClosedAtTheRequestDeadline) {
  HttpServerOptions options;
  options.limits.unauthenticated_request_deadline = absl::Milliseconds(300);
  Start(options);
  RawHttpPeer peer(server_->port());
  ASSERT_TRUE(peer.connected());
  ASSERT_TRUE(peer.Send("GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "));
  const absl::Time start = absl::Now();
  bool still_open = true;
  // Far less than the idle timer, far more than the deadline.
  while (still_open && absl::Now() - start < absl::Seconds(3)) {
    absl::SleepFor(absl::Milliseconds(50));
    still_open = peer.Send("a");
  }
  EXPECT_FALSE(still_open) << "the connection outlived its deadline";
  EXPECT_TRUE(AwaitOpenConnections(*server_, 0));
  EXPECT_EQ(server_->refusals().request_deadline, 1);
  EXPECT_EQ(handler_.answered_.load(), 0);
  // An ordinary client is served as before.
  test_http::Result echo = client_->Get("/echo");
  ASSERT_TRUE(echo);
  EXPECT_EQ(echo->status, 200);
}

// Whether the server answered `peer` 429 naming `flag`, and closed it.
::testing::AssertionResult ClosedWith429Naming(RawHttpPeer& peer, const std::string& flag) {
  bool closed = false;
  const std::string answer = peer.ReadUntilClosed(&closed);
  if (!closed) return ::testing::AssertionFailure() << "still open after: " << answer;
  if (answer.rfind("HTTP/1.1 429 ", 0) != 0 || answer.find(flag) == std::string::npos) {
    return ::testing::AssertionFailure() << "not a 429 naming " << flag << ": " << answer;
  }
  return ::testing::AssertionSuccess();
}

// A request on a raw connection, authenticated or not; whether it was
// answered 200.
bool EchoOn(RawHttpPeer& peer, bool authenticated) {
  return peer.Send(absl::StrCat("GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\n",
                                authenticated ? "Authorization: Bearer good\r\n" : "", "\r\n")) &&
         absl::StrContains(peer.ReadUntil("GET /echo "), "200 OK");
}

// New connections count as unauthenticated until a request on them
// authenticates. Beyond that cap the oldest one still waiting for its
// request is closed with a 429 to make room: the newcomer, which sends its
// request at once, is served.
TEST_F(HttpTransportTest, BeyondTheUnauthenticatedCapTheOldestWaitingConnectionGoes) {
  HttpServerOptions options;
  options.limits.max_unauthenticated_connections = 2;
  Start(options);
  RawHttpPeer authenticated(server_->port());
  ASSERT_TRUE(EchoOn(authenticated, true));
  RawHttpPeer first(server_->port());
  ASSERT_TRUE(AwaitOpenConnections(*server_, 2));
  RawHttpPeer second(server_->port());
  ASSERT_TRUE(AwaitOpenConnections(*server_, 3));
  RawHttpPeer third(server_->port());
  EXPECT_TRUE(ClosedWith429Naming(first, "--max-unauthenticated-connections"));
  EXPECT_EQ(server_->refusals().unauthenticated_connections, 1);
  EXPECT_TRUE(EchoOn(third, false));
  EXPECT_TRUE(EchoOn(second, false));
  EXPECT_TRUE(EchoOn(authenticated, true));
  EXPECT_EQ(server_->open_connections(), 3);
}

// Unauthenticated connections together may hold only so many bytes of
// requests not yet read: beyond, the oldest holding some is closed, and
// the others finish theirs.
TEST_F(HttpTransportTest, BeyondTheUnauthenticatedByteBudgetTheOldestHolderGoes) {
  HttpServerOptions options;
  options.limits.max_unauthenticated_bytes = 64 << 10;
  Start(options);
  const std::string head =
      "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: 50000\r\n\r\n";
  RawHttpPeer older(server_->port()), newer(server_->port());
  ASSERT_TRUE(older.Send(head + std::string(40000, 'a')));
  ASSERT_TRUE(AwaitOpenConnections(*server_, 2));
  ASSERT_TRUE(newer.Send(head + std::string(40000, 'b')));
  EXPECT_TRUE(ClosedWith429Naming(older, "--max-unauthenticated-bytes"));
  ASSERT_TRUE(newer.Send(std::string(10000, 'b')));
  EXPECT_TRUE(absl::StrContains(newer.ReadUntil(std::string(50000, 'b')), "200 OK"));
  EXPECT_EQ(server_->refusals().unauthenticated_connections, 1);
  EXPECT_EQ(handler_.answered_.load(), 1);
}

// Beyond the total cap with none left to make room, a new connection is
// refused with a 429 naming the flag; those open are served as before.
TEST_F(HttpTransportTest, BeyondTheConnectionCapANewConnectionIsRefused) {
  HttpServerOptions options;
  options.limits.max_connections = 2;
  Start(options);
  RawHttpPeer one(server_->port()), two(server_->port());
  ASSERT_TRUE(EchoOn(one, true));
  ASSERT_TRUE(EchoOn(two, true));
  RawHttpPeer three(server_->port());
  EXPECT_TRUE(ClosedWith429Naming(three, "--max-connections"));
  EXPECT_EQ(server_->refusals().connections, 1);
  EXPECT_TRUE(EchoOn(one, true));
  EXPECT_EQ(handler_.answered_.load(), 3);
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
