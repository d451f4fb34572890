// SPDX-License-Identifier: Apache-2.0
// The watch fan-out (server/api/watch.h) without HTTP or gRPC: a run's
// watch through its server-sent-events writer (server/api/sse_watch.h):
// replay then live events, no duplicates, the end after the final state,
// keep-alives while quiet, Close(), and the slow-reader bound.
#include "server/api/watch.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rest_test_support.h"
#include "server/api/sse_watch.h"
#include "server/http/sse_writer.h"

namespace collbench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The event names in `text`, in order.
std::vector<std::string> EventNames(const std::string& text) {
  std::vector<std::string> names;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::ConsumePrefix(&line, "event: ")) names.emplace_back(line);
  }
  return names;
}

using Chunk = SseSource::Chunk;

// A run's watch as the HTTP transport reads it: the SSE writer over
// RunWatch, with a reader of its own thread. Next() blocks until there is
// something to take or `keepalive` passed quietly (then the keep-alive
// comment the transport would send, kSseKeepAlive).
class EventStream {
 public:
  static absl::StatusOr<std::shared_ptr<EventStream>> Open(
      RunManager& manager, WatchHub& hub, const std::string& run_name, absl::Duration keepalive,
      WatcherLimits* limits = nullptr, std::unique_ptr<WatcherSlot> slot = nullptr) {
    absl::StatusOr<std::shared_ptr<RunWatch>> watch =
        RunWatch::Open(manager, hub, run_name, limits, std::move(slot));
    if (!watch.ok()) return watch.status();
    return std::make_shared<EventStream>(
        std::make_shared<SseWatchSource<v1::RunEvent>>(*std::move(watch), &FormatRunEvent),
        keepalive);
  }
  EventStream(std::shared_ptr<SseSource> source, absl::Duration keepalive)
      : source_(std::move(source)), keepalive_(keepalive) {
    source_->SetNotify([this] {
      absl::MutexLock lock(&mu_);
      notified_ = true;
    });
  }
  ~EventStream() { source_->SetNotify(nullptr); }

  Chunk Next() {
    for (;;) {
      {
        absl::MutexLock lock(&mu_);
        notified_ = false;
      }
      Chunk chunk = source_->Take();
      if (!chunk.text.empty() || chunk.last) return chunk;
      absl::MutexLock lock(&mu_);
      if (!mu_.AwaitWithTimeout(absl::Condition(&notified_), keepalive_)) {
        return Chunk{kSseKeepAlive, false};
      }
    }
  }
  Chunk Take() { return source_->Take(); }
  // The reader's own notification (replacing the blocking reader's).
  void SetNotify(std::function<void()> notify) { source_->SetNotify(std::move(notify)); }
  void Close() { source_->Close(); }
  void Detach() { source_->Detach(); }

 private:
  const std::shared_ptr<SseSource> source_;
  const absl::Duration keepalive_;
  absl::Mutex mu_;
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
};

// Everything the stream sends until its last chunk.
std::string Drain(EventStream& stream) {
  std::string text;
  for (int i = 0; i < 100; ++i) {
    Chunk chunk = stream.Next();
    text += chunk.text;
    if (chunk.last) return text;
  }
  ADD_FAILURE() << "the stream did not end";
  return text;
}

TEST(EventStreamTest, ReplaysStateAndResultsThenFollowsUntilTheFinalState) {
  FakeCoordinator c;
  c.Register("a");
  const v1::Run run = c.Create(3);
  c.Running(run.name(), 3);
  c.Result(run.name(), 0);
  absl::StatusOr<std::shared_ptr<EventStream>> stream =
      EventStream::Open(c.manager(), c.hub(), run.name(), absl::Seconds(30));
  ASSERT_TRUE(stream.ok()) << stream.status();
  Chunk first = (*stream)->Next();
  EXPECT_FALSE(first.last);
  EXPECT_THAT(EventNames(first.text), ElementsAre("state", "result"));
  EXPECT_THAT(first.text, HasSubstr("\"state\":\"RUNNING\""));

  c.Result(run.name(), 0);  // a re-send: neither stored again nor streamed
  c.Result(run.name(), 1);
  c.Result(run.name(), 2);
  c.Succeeded(run.name(), 3);
  const std::string rest = Drain(**stream);
  EXPECT_THAT(EventNames(rest), ElementsAre("result", "progress", "result", "progress", "state"));
  EXPECT_THAT(rest, HasSubstr("\"state\":\"SUCCEEDED\""));
  (*stream)->Detach();
  EXPECT_EQ(c.hub().watcher_count(), 0u);
}

TEST(EventStreamTest, AFinishedRunIsReplayedAndEnds) {
  FakeCoordinator c;
  c.Register("a");
  const v1::Run run = c.Create(2);
  c.Running(run.name(), 2);
  c.Result(run.name(), 0);
  c.Result(run.name(), 1);
  c.Succeeded(run.name(), 2);
  absl::StatusOr<std::shared_ptr<EventStream>> stream =
      EventStream::Open(c.manager(), c.hub(), run.name(), absl::Seconds(30));
  ASSERT_TRUE(stream.ok());
  Chunk chunk = (*stream)->Next();
  EXPECT_TRUE(chunk.last);
  EXPECT_THAT(EventNames(chunk.text), ElementsAre("state", "result", "result"));
  (*stream)->Detach();
}

TEST(EventStreamTest, EventsAreOneLineOfJson) {
  v1::RunEvent event;
  event.set_run("runs/x");
  event.mutable_log()->set_text("two\nlines");
  const std::string text = FormatRunEvent(event);
  EXPECT_THAT(text, StartsWith("event: log\ndata: {"));
  EXPECT_THAT(text, HasSubstr("two\\nlines"));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);  // two lines, one blank
}

TEST(EventStreamTest, UnknownRunIsNotFound) {
  FakeCoordinator c;
  EXPECT_EQ(EventStream::Open(c.manager(), c.hub(), "runs/nope", absl::Seconds(1)).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(c.hub().watcher_count(), 0u);
}

TEST(EventStreamTest, KeepAliveWhileQuietAndCloseEndsAtOnce) {
  FakeCoordinator c;
  c.Register("a");
  const v1::Run run = c.Create(2);
  absl::StatusOr<std::shared_ptr<EventStream>> stream =
      EventStream::Open(c.manager(), c.hub(), run.name(), absl::Milliseconds(50));
  ASSERT_TRUE(stream.ok());
  EXPECT_THAT(EventNames((*stream)->Next().text), ElementsAre("state"));
  Chunk quiet = (*stream)->Next();
  EXPECT_EQ(quiet.text, ": keep-alive\n\n");
  EXPECT_FALSE(quiet.last);

  std::shared_ptr<EventStream> s = *stream;
  std::thread closer([s] {
    absl::SleepFor(absl::Milliseconds(20));
    s->Close();
  });
  const absl::Time start = absl::Now();
  // Keep-alives may come first; the close must end it well before long.
  std::string text = Drain(*s);
  closer.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_THAT(EventNames(text), ElementsAre());
  s->Detach();
}

TEST(EventStreamTest, HubEndAllEndsTheStream) {
  FakeCoordinator c;
  c.Register("a");
  const v1::Run run = c.Create(2);
  absl::StatusOr<std::shared_ptr<EventStream>> stream =
      EventStream::Open(c.manager(), c.hub(), run.name(), absl::Seconds(30));
  ASSERT_TRUE(stream.ok());
  (*stream)->Next();
  c.hub().EndAll();
  EXPECT_TRUE((*stream)->Next().last);
}

// A reader that falls behind by more than the buffer is ended with a final
// error event, what was queued is dropped, and the refusal is counted.
TEST(EventStreamTest, AReaderThatFallsBehindIsEndedWithAnError) {
  FakeCoordinator c;
  c.Register("a");
  const v1::Run run = c.Create(8);
  WatcherLimits limits(WatcherLimitOptions{.max_total = 10, .max_per_client = 10,
                                           .buffer_events = 3});
  absl::StatusOr<std::unique_ptr<WatcherSlot>> slot = limits.Acquire("token 1");
  ASSERT_TRUE(slot.ok());
  absl::StatusOr<std::shared_ptr<EventStream>> stream = EventStream::Open(
      c.manager(), c.hub(), run.name(), absl::Seconds(30), &limits, *std::move(slot));
  ASSERT_TRUE(stream.ok());
  EXPECT_THAT(EventNames((*stream)->Take().text), ElementsAre("state"));
  c.Running(run.name(), 8);  // state
  c.Result(run.name(), 0);   // result + progress: 3 queued
  EXPECT_EQ(limits.rejections().too_slow, 0);
  c.Result(run.name(), 1);  // one more than the buffer holds
  Chunk chunk = (*stream)->Take();
  EXPECT_TRUE(chunk.last);
  EXPECT_THAT(EventNames(chunk.text), ElementsAre("error"));
  EXPECT_THAT(chunk.text, HasSubstr("RESOURCE_EXHAUSTED"));
  EXPECT_THAT(chunk.text, HasSubstr("watcher too slow"));
  EXPECT_EQ(limits.rejections().too_slow, 1);
  EXPECT_EQ(limits.open(), 1);
  (*stream)->Detach();
  stream->reset();
  EXPECT_EQ(limits.open(), 0);  // the slot went with the stream
}

TEST(EventStreamTest, NotifyIsCalledWhenThereIsSomethingToTake) {
  FakeCoordinator c;
  c.Register("a");
  const v1::Run run = c.Create(2);
  absl::StatusOr<std::shared_ptr<EventStream>> stream =
      EventStream::Open(c.manager(), c.hub(), run.name(), absl::Seconds(30));
  ASSERT_TRUE(stream.ok());
  int notified = 0;
  (*stream)->SetNotify([&notified] { ++notified; });
  (*stream)->Take();
  EXPECT_EQ((*stream)->Take().text, "");
  c.Running(run.name(), 2);
  EXPECT_GE(notified, 1);
  EXPECT_THAT(EventNames((*stream)->Take().text), ElementsAre("state"));
  (*stream)->SetNotify(nullptr);
  const int before = notified;
  c.Result(run.name(), 0);
  EXPECT_EQ(notified, before);
  (*stream)->Detach();
}

}  // namespace
}  // namespace collbench
