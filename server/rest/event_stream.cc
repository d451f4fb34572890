// SPDX-License-Identifier: Apache-2.0
#include "server/rest/event_stream.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/rest/rest_json.h"

namespace collbench {

absl::StatusOr<std::shared_ptr<EventStream>> EventStream::Open(RunManager& manager, WatchHub& hub,
                                                               const std::string& run_name,
                                                               absl::Duration keepalive,
                                                               WatcherLimits* limits,
                                                               std::unique_ptr<WatcherSlot> slot) {
  absl::StatusOr<v1::Run> run = manager.GetRun(run_name);
  if (!run.ok()) return run.status();
  std::shared_ptr<EventStream> stream(
      new EventStream(&hub, run->name(), keepalive, limits, std::move(slot)));
  absl::MutexLock lock(&stream->mu_);
  // Subscribe before reading the store; live events wait for the lock and
  // queue behind the replay.
  hub.Subscribe(stream->run_, stream);
  stream->subscribed_ = true;
  if (absl::StatusOr<std::string> replayed = stream->feed_.Replay(manager, stream->run_);
      !replayed.ok()) {
    return replayed.status();
  }
  return stream;
}

EventStream::EventStream(WatchHub* hub, std::string run, absl::Duration keepalive,
                         WatcherLimits* limits, std::unique_ptr<WatcherSlot> slot)
    : hub_(hub),
      run_(std::move(run)),
      keepalive_(keepalive),
      limits_(limits),
      slot_(std::move(slot)) {}

void EventStream::OnEvent(const v1::RunEvent& event) {
  {
    absl::MutexLock lock(&mu_);
    if (closed_ || feed_.ended()) return;
    const size_t limit =
        limits_ != nullptr ? static_cast<size_t>(std::max(limits_->options().buffer_events, 1)) : 0;
    if (limit > 0 && feed_.queue().size() >= limit) {
      // Falling behind: end it rather than queue without bound.
      limits_->CountTooSlow();
      too_slow_ = absl::StrCat(
          "event: error\ndata: ",
          ErrorJson(absl::ResourceExhaustedError(absl::StrCat(
              "watcher too slow: ", feed_.queue().size(),
              " events not yet read (the coordinator buffers at most ", limit,
              " per watcher); watch again to resume from the stored state"))),
          "\n\n");
      feed_.queue().clear();
      closed_ = true;
    } else {
      feed_.Add(event);
    }
  }
  Notify();
}

void EventStream::OnEnd() {
  {
    absl::MutexLock lock(&mu_);
    feed_.End();
  }
  Notify();
}

EventStream::Chunk EventStream::Next() {
  absl::MutexLock lock(&mu_);
  const bool woken =
      mu_.AwaitWithTimeout(absl::Condition(this, &EventStream::HasWork), keepalive_);
  Chunk chunk = TakeLocked();
  if (!woken && chunk.text.empty() && !chunk.last) chunk.text = ": keep-alive\n\n";
  return chunk;
}

EventStream::Chunk EventStream::Take() {
  absl::MutexLock lock(&mu_);
  return TakeLocked();
}

EventStream::Chunk EventStream::TakeLocked() {
  Chunk chunk;
  for (const v1::RunEvent& event : feed_.queue()) chunk.text += Format(event);
  feed_.queue().clear();
  chunk.text += too_slow_;
  too_slow_.clear();
  chunk.last = feed_.ended() || closed_;
  return chunk;
}

void EventStream::SetNotify(std::function<void()> notify) {
  absl::MutexLock lock(&notify_mu_);
  notify_ = std::move(notify);
}

void EventStream::Notify() {
  absl::MutexLock lock(&notify_mu_);
  if (notify_) notify_();
}

void EventStream::Close() {
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }
  Notify();
}

void EventStream::Detach() {
  {
    absl::MutexLock lock(&mu_);
    if (!subscribed_) return;
    subscribed_ = false;
  }
  hub_->Unsubscribe(run_, this);
}

std::string EventStream::Format(const v1::RunEvent& event) {
  absl::string_view name = "message";
  switch (event.event_case()) {
    case v1::RunEvent::kStateChange:
      name = "state";
      break;
    case v1::RunEvent::kResult:
      name = "result";
      break;
    case v1::RunEvent::kProgress:
      name = "progress";
      break;
    case v1::RunEvent::kLog:
      name = "log";
      break;
    case v1::RunEvent::EVENT_NOT_SET:
      break;
  }
  return absl::StrCat("event: ", name, "\ndata: ", ProtoToJson(event), "\n\n");
}

}  // namespace collbench
