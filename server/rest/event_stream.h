// SPDX-License-Identifier: Apache-2.0
// One server-sent-events watch of a run (GET /v1/runs/{id}:watch): what
// WatchRun streams over gRPC, as `text/event-stream`. Each RunEvent is one
// event, named after what it carries, with the event as one line of JSON:
//
//   event: state | result | progress | log
//   data: {"run": "runs/…", "stateChange": {…}}
//   <blank line>
//
// Open() subscribes to the WatchHub first, then replays what is stored; a
// WatchFeed (server/core/watch_feed.h) orders and deduplicates, as for
// WatchRun. The stream ends after the run's final state event, or when the
// hub ends it; for a run that had already ended, after the replay. A comment line (": keep-alive")
// goes out whenever nothing else did for `keepalive`, so proxies keep the
// connection and a vanished client is noticed.
//
// Slow readers: with WatcherLimits, at most buffer_events events wait to be
// taken; one more ends the stream with a final
//
//   event: error
//   data: {"code": 8, "status": "RESOURCE_EXHAUSTED", "message": "watcher too slow: …"}
//
// and the events still queued are dropped, so a stalled reader costs
// bounded memory and delays nobody.
//
// Two ways to read it: Take() does not block and the notify callback says
// when to call it again (the HTTP server's event loop,
// server/rest/sse_writer.h); Next() blocks, for a reader with a thread of
// its own (tests).
//
// Ownership: shared by the hub (until Detach) and the HTTP response.
// Thread safety: the hub calls OnEvent/OnEnd from any thread; one reader
// calls Next() or Take(); the others may be called from any thread.
#ifndef COLLBENCH_SERVER_REST_EVENT_STREAM_H_
#define COLLBENCH_SERVER_REST_EVENT_STREAM_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collbench/v1/run.pb.h"
#include "server/core/run_manager.h"
#include "server/core/watch_feed.h"
#include "server/core/watch_hub.h"
#include "server/core/watcher_limits.h"
#include "server/rest/sse_source.h"

namespace collbench {

class EventStream final : public RunEventSink, public SseSource {
 public:
  // Watches the run named `run_name` ("runs/{id}"). The run's error (e.g.
  // NotFound) when it cannot be read.
  // `limits` (may be null: no bound) gives the buffer bound; `slot`, the
  // watcher's place in it, is held until the stream is destroyed.
  static absl::StatusOr<std::shared_ptr<EventStream>> Open(
      RunManager& manager, WatchHub& hub, const std::string& run_name, absl::Duration keepalive,
      WatcherLimits* limits = nullptr, std::unique_ptr<WatcherSlot> slot = nullptr);
  void OnEvent(const v1::RunEvent& event) override;
  void OnEnd() override;

  using Chunk = SseSource::Chunk;
  // Blocks until an event is queued, the stream ends or is closed, or
  // `keepalive` passed (then `text` is a keep-alive comment).
  Chunk Next();
  // What is queued now, without waiting (`text` may be "").
  Chunk Take() override;
  // Called, with no lock of the caller's held, whenever there is something
  // to Take(); nullptr stops the calls (before the callee goes away).
  void SetNotify(std::function<void()> notify) override;

  // Ends the stream at once (server shutdown): Next() returns what is
  // queued with `last` set.
  void Close() override;
  // Stops receiving events from the hub. Idempotent.
  void Detach() override;

  const std::string& run() const { return run_; }

  // One RunEvent as an SSE event ("event: …\ndata: …\n\n").
  static std::string Format(const v1::RunEvent& event);

 private:
  EventStream(WatchHub* hub, std::string run, absl::Duration keepalive, WatcherLimits* limits,
              std::unique_ptr<WatcherSlot> slot);

  bool HasWork() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return !feed_.empty() || feed_.ended() || closed_;
  }
  Chunk TakeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Notify();

  WatchHub* const hub_;
  const std::string run_;
  const absl::Duration keepalive_;
  WatcherLimits* const limits_;
  const std::unique_ptr<WatcherSlot> slot_;

  absl::Mutex notify_mu_;  // after mu_ when both are held
  std::function<void()> notify_ ABSL_GUARDED_BY(notify_mu_);

  absl::Mutex mu_;
  WatchFeed feed_ ABSL_GUARDED_BY(mu_);       // replay, then live events, deduplicated
  bool closed_ ABSL_GUARDED_BY(mu_) = false;  // end now
  bool subscribed_ ABSL_GUARDED_BY(mu_) = false;
  std::string too_slow_ ABSL_GUARDED_BY(mu_);  // the final error event, once it fell behind
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_REST_EVENT_STREAM_H_
