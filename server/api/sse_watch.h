// SPDX-License-Identifier: Apache-2.0
// A watch (server/api/watch.h) as a server-sent-events response: the thin
// writer that the HTTP transport's SseWriter (server/http/sse_writer.h)
// reads. Each event is one SSE event, named after what it carries, with
// the event as one line of JSON (the proto3 JSON mapping):
//
//   event: state | result | progress | log      (a run's RunEvent)
//   event: workflow                             (a workflow's WorkflowEvent)
//   data: {"run": "runs/…", "stateChange": {…}}
//   <blank line>
//
// A watch cut short ends with a final
//
//   event: error
//   data: {"code": 8, "status": "RESOURCE_EXHAUSTED", "message": "watcher too slow: …"}
//
// Ownership: holds the watch; the SseWriter holds the source.
// Thread safety: as SseSource's.
#ifndef COLLBENCH_SERVER_API_SSE_WATCH_H_
#define COLLBENCH_SERVER_API_SSE_WATCH_H_

#include <cstddef>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "collbench/v1/run.pb.h"
#include "collbench/v1/workflow.pb.h"
#include "server/api/watch.h"
#include "server/http/sse_source.h"

namespace collbench {

// One RunEvent as an SSE event ("event: state\ndata: {…}\n\n").
std::string FormatRunEvent(const v1::RunEvent& event);
// One WorkflowEvent as an SSE event ("event: workflow\ndata: {…}\n\n").
std::string FormatWorkflowEvent(const v1::WorkflowEvent& event);
// The final event of a watch cut short (REQUIRES: !status.ok()).
std::string FormatErrorEvent(const absl::Status& status);

template <typename Event>
class SseWatchSource final : public SseSource {
 public:
  using Formatter = std::string (*)(const Event&);

  SseWatchSource(std::shared_ptr<Watch<Event>> watch, Formatter format)
      : watch_(std::move(watch)), format_(format) {}

  Chunk Take() override {
    typename Watch<Event>::Batch batch = watch_->Take(std::numeric_limits<size_t>::max());
    Chunk chunk;
    for (const Event& event : batch.events) chunk.text += format_(event);
    if (batch.last && !batch.end.ok()) chunk.text += FormatErrorEvent(batch.end);
    chunk.last = batch.last;
    return chunk;
  }
  void SetNotify(std::function<void()> notify) override { watch_->SetNotify(std::move(notify)); }
  void Close() override { watch_->Close(); }
  void Detach() override { watch_->Detach(); }

 private:
  const std::shared_ptr<Watch<Event>> watch_;
  const Formatter format_;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_API_SSE_WATCH_H_
