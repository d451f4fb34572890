// SPDX-License-Identifier: Apache-2.0
// GET /v1/runs/{id}:watch over loopback: each result arrives as it is
// reported, the stream ends after the final state, keep-alives flow while
// nothing happens, and shutdown ends open streams at once.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rest_http_fixture.h"

namespace collbench {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Pair;

// One SSE client on its own thread, collecting what arrives.
class Watcher {
 public:
  struct Event {
    std::string name;
    nlohmann::json data;
  };

  // Over TLS when `tls` (the server's certificate is not checked).
  Watcher(int port, const std::string& path, const std::string& token, bool tls = false)
      : client_((tls ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port)) {
    client_.set_read_timeout(60, 0);
    if (tls) client_.enable_server_certificate_verification(false);
    thread_ = std::thread([this, path, token] {
      test_http::Headers headers;
      if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
      test_http::Result result = client_.Get(
          path.c_str(), headers,
          [this](const test_http::Response& response) {
            absl::MutexLock lock(&mu_);
            status_ = response.status;
            content_type_ = response.get_header_value("Content-Type");
            return true;
          },
          [this](const char* data, size_t size) {
            absl::MutexLock lock(&mu_);
            text_.append(data, size);
            return true;
          });
      absl::MutexLock lock(&mu_);
      done_ = true;
      if (!result) status_ = -1;
    });
  }
  // Ends the request if it still runs (a failed test), then the thread.
  ~Watcher() {
    client_.stop();
    thread_.join();
  }

  // Complete events received so far (comments skipped).
  std::vector<Event> Events() {
    absl::MutexLock lock(&mu_);
    return ParseLocked();
  }
  bool WaitForEvents(size_t count, absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, count]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return done_ || ParseLocked().size() >= count;
    };
    mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
    return ParseLocked().size() >= count;
  }
  bool WaitDone(absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&done_), timeout);
  }
  bool WaitForText(const std::string& needle, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto found = [this, &needle]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return done_ || absl::StrContains(text_, needle);
    };
    mu_.AwaitWithTimeout(absl::Condition(&found), timeout);
    return absl::StrContains(text_, needle);
  }
  int status() {
    absl::MutexLock lock(&mu_);
    return status_;
  }
  std::string content_type() {
    absl::MutexLock lock(&mu_);
    return content_type_;
  }

 private:
  std::vector<Event> ParseLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    std::vector<Event> events;
    // Only whole events: up to the last blank line.
    const size_t end = text_.rfind("\n\n");
    if (end == std::string::npos) return events;
    for (absl::string_view block :
         absl::StrSplit(absl::string_view(text_).substr(0, end), "\n\n")) {
      Event event;
      for (absl::string_view line : absl::StrSplit(block, '\n')) {
        if (absl::ConsumePrefix(&line, "event: ")) event.name = std::string(line);
        if (absl::ConsumePrefix(&line, "data: ")) {
          event.data = nlohmann::json::parse(line, nullptr, false);
        }
      }
      if (!event.name.empty()) events.push_back(std::move(event));
    }
    return events;
  }

  absl::Mutex mu_;
  std::string text_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  int status_ ABSL_GUARDED_BY(mu_) = 0;
  std::string content_type_ ABSL_GUARDED_BY(mu_);
  test_http::Client client_;
  std::thread thread_;
};

std::vector<std::string> Names(const std::vector<Watcher::Event>& events) {
  std::vector<std::string> names;
  for (const auto& e : events) names.push_back(e.name);
  return names;
}

class RestStreamTest : public RestHttpTest {
 protected:
  // A scheduled run on worker a.
  std::string NewRun(int sizes) {
    c_.Register("a");
    return c_.Create(sizes).name();
  }
  std::string WatchPath(const std::string& run) { return "/v1/" + run + ":watch"; }
};

TEST_F(RestStreamTest, EachResultArrivesAsItCompletesThenTheFinalState) {
  Start();
  const std::string run = NewRun(4);
  Watcher watcher(server_->port(), WatchPath(run), kRead);
  ASSERT_TRUE(watcher.WaitForEvents(1));
  EXPECT_EQ(watcher.status(), 200);
  EXPECT_EQ(watcher.content_type(), "text/event-stream");
  c_.Running(run, 4);
  ASSERT_TRUE(watcher.WaitForEvents(2));
  for (int i = 0; i < 4; ++i) {
    c_.Result(run, i);
    // The result (and its progress event) is out before the next exists.
    ASSERT_TRUE(watcher.WaitForEvents(2 + 2 * (i + 1))) << "result " << i << " did not arrive";
    const std::vector<Watcher::Event> events = watcher.Events();
    EXPECT_EQ(events[2 + 2 * i].name, "result");
    EXPECT_EQ(events[2 + 2 * i].data["result"]["sequence"], std::to_string(i));
  }
  c_.Succeeded(run, 4);
  ASSERT_TRUE(watcher.WaitDone()) << "the stream did not end after the final state";
  const std::vector<Watcher::Event> events = watcher.Events();
  EXPECT_THAT(Names(events),
              ElementsAre("state", "state", "result", "progress", "result", "progress", "result",
                          "progress", "result", "progress", "state"));
  EXPECT_EQ(events[0].data["stateChange"]["state"], "SCHEDULED");
  EXPECT_EQ(events[1].data["stateChange"]["state"], "RUNNING");
  EXPECT_EQ(events.back().data["stateChange"]["state"], "SUCCEEDED");
  EXPECT_EQ(events.back().data["run"], run);
  EXPECT_EQ(events[9].data["progress"]["sizesDone"], 4);
  EXPECT_THAT(Requests(1), Contains(Pair("GET /v1/runs/{id}:watch", 200)));
  EXPECT_EQ(c_.hub().watcher_count(), 0u);
}

TEST_F(RestStreamTest, AFinishedRunIsReplayedAndTheStreamEnds) {
  Start();
  const std::string run = NewRun(2);
  c_.Running(run, 2);
  c_.Result(run, 0);
  c_.Result(run, 1);
  c_.Succeeded(run, 2);
  Watcher watcher(server_->port(), WatchPath(run), kRead);
  ASSERT_TRUE(watcher.WaitDone());
  EXPECT_THAT(Names(watcher.Events()), ElementsAre("state", "result", "result"));
}

TEST_F(RestStreamTest, WatchNeedsAReadToken) {
  Start();
  const std::string run = NewRun(2);
  Watcher watcher(server_->port(), WatchPath(run), "");
  ASSERT_TRUE(watcher.WaitDone());
  EXPECT_EQ(watcher.status(), 401);
  EXPECT_EQ(c_.hub().watcher_count(), 0u);
}

TEST_F(RestStreamTest, KeepAliveCommentsWhileNothingHappens) {
  HttpFrontendOptions options;
  options.http.event_keepalive = absl::Milliseconds(100);
  Start(options);
  const std::string run = NewRun(2);
  Watcher watcher(server_->port(), WatchPath(run), kRead);
  EXPECT_TRUE(watcher.WaitForText(": keep-alive\n\n", absl::Seconds(5)));
  server_->Shutdown();
  EXPECT_TRUE(watcher.WaitDone());
}

TEST_F(RestStreamTest, ShutdownEndsOpenStreamsPromptly) {
  Start();
  const std::string run = NewRun(2);
  std::vector<std::unique_ptr<Watcher>> watchers;
  for (int i = 0; i < 8; ++i) {
    watchers.push_back(std::make_unique<Watcher>(server_->port(), WatchPath(run), kRead));
  }
  for (auto& w : watchers) ASSERT_TRUE(w->WaitForEvents(1));
  const absl::Time start = absl::Now();
  server_->Shutdown();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  for (auto& w : watchers) {
    EXPECT_TRUE(w->WaitDone(absl::Seconds(1)));
    EXPECT_EQ(w->status(), 200);  // a clean end of the response
  }
  EXPECT_EQ(c_.hub().watcher_count(), 0u);
}

TEST_F(RestStreamTest, TheHubEndingAllWatchersEndsTheStreams) {
  Start();
  const std::string run = NewRun(2);
  Watcher watcher(server_->port(), WatchPath(run), kRead);
  ASSERT_TRUE(watcher.WaitForEvents(1));
  c_.hub().EndAll();  // what the coordinator does first when it stops
  EXPECT_TRUE(watcher.WaitDone());
}

TEST_F(RestStreamTest, ManyWatchersEachGetEveryEvent) {
  Start();
  const std::string run = NewRun(3);
  std::vector<std::unique_ptr<Watcher>> watchers;
  for (int i = 0; i < 24; ++i) {
    watchers.push_back(std::make_unique<Watcher>(server_->port(), WatchPath(run), kRead));
  }
  for (auto& w : watchers) ASSERT_TRUE(w->WaitForEvents(1));
  c_.Running(run, 3);
  for (int i = 0; i < 3; ++i) c_.Result(run, i);
  c_.Succeeded(run, 3);
  for (auto& w : watchers) {
    ASSERT_TRUE(w->WaitDone());
    EXPECT_EQ(w->Events().size(), 9u);  // 3 states, 3 results, 3 progress
  }
}

// Open streams hold none of the request threads: with 2 threads and 16
// streams open, other requests are still answered at once.
TEST_F(RestStreamTest, OpenStreamsLeaveTheRequestThreadsFree) {
  HttpFrontendOptions options;
  options.http.threads = 2;
  Start(options);
  const std::string run = NewRun(2);
  std::vector<std::unique_ptr<Watcher>> watchers;
  for (int i = 0; i < 16; ++i) {
    watchers.push_back(std::make_unique<Watcher>(server_->port(), WatchPath(run), kRead));
  }
  for (auto& w : watchers) ASSERT_TRUE(w->WaitForEvents(1));
  for (int i = 0; i < 3; ++i) {
    auto client = NewClient();
    client->set_read_timeout(2, 0);
    const absl::Time start = absl::Now();
    test_http::Result health = client->Get("/healthz");
    ASSERT_TRUE(health) << "no answer to /healthz with 16 streams open on 2 threads";
    EXPECT_EQ(health->status, 200);
    EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  }
  // And the streams still get their events.
  c_.Running(run, 2);
  c_.Result(run, 0);
  c_.Result(run, 1);
  c_.Succeeded(run, 2);
  for (auto& w : watchers) {
    ASSERT_TRUE(w->WaitDone());
    EXPECT_EQ(w->Events().size(), 7u);  // 3 states, 2 results, 2 progress
  }
}

// Over TLS too, open streams hold no thread: with 2 handler threads and
// 16 TLS streams open, /healthz is answered at once, no watcher is refused
// for want of a thread, and every stream gets every event.
TEST_F(RestStreamTest, OverTlsOpenStreamsLeaveTheThreadsFree) {
  const std::string dir = ::testing::TempDir() + "/rest_stream_tls";
  if (!MakeLoopbackCertificate(dir)) GTEST_SKIP() << "no openssl command to make a certificate";
  WatcherLimits limits(WatcherLimitOptions{});
  watchers_ = &limits;
  HttpFrontendOptions options;
  options.http.threads = 2;
  options.http.tls_cert = dir + "/cert.pem";
  options.http.tls_key = dir + "/key.pem";
  Start(options);
  const std::string run = NewRun(1);
  std::vector<std::unique_ptr<Watcher>> watchers;
  for (int i = 0; i < 16; ++i) {
    watchers.push_back(
        std::make_unique<Watcher>(server_->port(), WatchPath(run), kRead, /*tls=*/true));
  }
  for (auto& w : watchers) ASSERT_TRUE(w->WaitForEvents(1));
  EXPECT_EQ(limits.open(), 16);
  test_http::Client tls("https://127.0.0.1:" + std::to_string(server_->port()));
  tls.enable_server_certificate_verification(false);
  tls.set_read_timeout(2, 0);
  const absl::Time start = absl::Now();
  test_http::Result health = tls.Get("/healthz");
  ASSERT_TRUE(health) << "no answer to /healthz with 16 TLS streams open on 2 threads";
  EXPECT_EQ(health->status, 200);
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  c_.Running(run, 1);
  c_.Result(run, 0);
  c_.Succeeded(run, 1);
  for (auto& w : watchers) {
    ASSERT_TRUE(w->WaitDone());
    EXPECT_EQ(w->status(), 200);
    EXPECT_EQ(Names(w->Events()).back(), "state");
    EXPECT_EQ(w->Events().size(), 5u);  // 3 states, 1 result, 1 progress
  }
  EXPECT_EQ(limits.rejections().threads, 0);
  // The streams held places in `limits`: the server ends them before it goes.
  server_->Shutdown();
  server_.reset();
}

// A client that closes its connection is forgotten at once: the hub drops
// its watcher and its place in the limits is free again, without waiting
// for an event or a keep-alive to fail.
TEST_F(RestStreamTest, AClientThatClosesIsForgottenAtOnce) {
  WatcherLimits limits(WatcherLimitOptions{});
  watchers_ = &limits;
  Start();
  const std::string run = NewRun(2);
  {
    Watcher watcher(server_->port(), WatchPath(run), kRead);
    ASSERT_TRUE(watcher.WaitForEvents(1));
    ASSERT_EQ(limits.open(), 1);
    ASSERT_EQ(c_.hub().watcher_count(), 1u);
  }  // the client ends its request and closes the connection
  for (int i = 0; i < 300 && (limits.open() != 0 || c_.hub().watcher_count() != 0); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(limits.open(), 0);
  EXPECT_EQ(c_.hub().watcher_count(), 0u);
}

// A client that stops reading is ended with a final `event: error` once it
// is more than the buffer behind; the server neither blocks nor buffers
// without bound meanwhile.
TEST_F(RestStreamTest, AClientThatStopsReadingIsEndedAsTooSlow) {
  WatcherLimits limits(WatcherLimitOptions{.max_total = 10, .max_per_client = 10,
                                           .buffer_events = 32});
  watchers_ = &limits;
  Start();
  const std::string run = NewRun(2);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  const int small = 4096;  // a small window: the server's writes block soon
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(server_->port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  const std::string request = "GET " + WatchPath(run) +
                              " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + kRead +
                              "\r\n\r\n";
  ASSERT_EQ(send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  // Wait until the stream is open, then publish far more than any socket
  // buffer holds while the client reads nothing.
  for (int i = 0; i < 500 && limits.open() == 0; ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_EQ(limits.open(), 1);
  absl::SleepFor(absl::Milliseconds(100));  // the writer has the socket
  v1::RunEvent log;
  log.set_run(run);
  log.mutable_log()->set_text(std::string(4096, 'x'));
  const absl::Time start = absl::Now();
  int published = 0;
  for (; published < 20000 && limits.rejections().too_slow == 0; ++published) {
    c_.hub().Publish(log);
    // Paced, so the writer keeps up until the socket is full: the stream
    // falls behind only because the client does not read.
    absl::SleepFor(absl::Microseconds(200));
  }
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  EXPECT_EQ(limits.rejections().too_slow, 1);
  // More than the buffer went out before it: the socket took some.
  EXPECT_GT(published, 32) << "ended before the socket could have filled";
  // Now read it all: the events that fit, then the error, then the end.
  std::string text;
  char buffer[65536];
  for (ssize_t got; (got = recv(fd, buffer, sizeof(buffer), 0)) > 0;) text.append(buffer, got);
  close(fd);
  const size_t error = text.find("event: error\ndata: {");
  ASSERT_NE(error, std::string::npos);
  EXPECT_NE(text.find("\"status\":\"RESOURCE_EXHAUSTED\"", error), std::string::npos);
  EXPECT_NE(text.find("watcher too slow"), std::string::npos);
  EXPECT_TRUE(absl::EndsWith(text, "0\r\n\r\n")) << "no final chunk";
  EXPECT_EQ(c_.hub().watcher_count(), 0u);
  for (int i = 0; i < 500 && limits.open() != 0; ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_EQ(limits.open(), 0);
}

}  // namespace
}  // namespace collbench
