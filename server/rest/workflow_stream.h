// SPDX-License-Identifier: Apache-2.0
// One server-sent-events watch of a workflow (GET
// /v1/workflows/{id}:watch): the workflow now, then after each change, as
//
//   event: workflow
//   data: {"workflow": "workflows/…", "time": …, "snapshot": {…}}
//   <blank line>
//
// ending after the version in a final state. Each event carries the whole
// workflow, so a reader that falls behind loses nothing by skipping: only
// the newest version waits to be taken (a slow reader costs one workflow
// of memory, however many changes it missed). A keep-alive comment goes
// out as for run watches (the SseWriter's timer).
//
// Ownership: shared by the WorkflowManager (until Detach) and the response.
// Thread safety: the manager calls OnWorkflow/OnEnd from any thread; one
// reader calls Take(); the rest from any thread.
#ifndef COLLBENCH_SERVER_REST_WORKFLOW_STREAM_H_
#define COLLBENCH_SERVER_REST_WORKFLOW_STREAM_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/core/watcher_limits.h"
#include "server/rest/sse_source.h"
#include "server/workflows/workflow_manager.h"

namespace collbench {

class WorkflowStream final : public WorkflowSink,
                             public SseSource,
                             public std::enable_shared_from_this<WorkflowStream> {
 public:
  // NotFound (or the manager's error) when the workflow cannot be read.
  // `slot`, the watcher's place in the limits, is held while it lives.
  static absl::StatusOr<std::shared_ptr<WorkflowStream>> Open(
      WorkflowManager& manager, const std::string& name, std::unique_ptr<WatcherSlot> slot);

  void OnWorkflow(const v1::Workflow& workflow) override;
  void OnEnd() override;
  Chunk Take() override;
  void SetNotify(std::function<void()> notify) override;
  void Close() override;
  void Detach() override;

  // One version as an SSE event.
  static std::string Format(const v1::Workflow& workflow);

 private:
  WorkflowStream(WorkflowManager* manager, std::unique_ptr<WatcherSlot> slot)
      : manager_(manager), slot_(std::move(slot)) {}
  void Notify();

  WorkflowManager* const manager_;
  const std::unique_ptr<WatcherSlot> slot_;
  std::string name_;

  absl::Mutex notify_mu_;
  std::function<void()> notify_ ABSL_GUARDED_BY(notify_mu_);

  absl::Mutex mu_;
  std::optional<v1::Workflow> newest_ ABSL_GUARDED_BY(mu_);  // not yet taken
  int64_t sent_version_ ABSL_GUARDED_BY(mu_) = -1;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool subscribed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_REST_WORKFLOW_STREAM_H_
