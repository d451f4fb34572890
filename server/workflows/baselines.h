// SPDX-License-Identifier: Apache-2.0
// Baselines as coordinator resources (docs/design/workflows.md#baselines-and-checks;
// baseline.proto): made of ended runs, or of an ended workflow's runs; kept
// in the store; found by the checks of check workflows and of matrices and
// suites with spec.baseline. The statistics are analysis/baseline.h's and
// checks.h's; this class owns the resource.
//
// Errors: InvalidArgument naming the field (a bad id, an unknown run or
// workflow, no result with a histogram), FailedPrecondition for a run or
// workflow that has not ended, AlreadyExists unless `replace`, NotFound.
//
// Thread safety: every method may be called from any thread; creates and
// deletes are made one at a time (a mutex held across the store's read and
// write of one name), nothing else is kept here.
#ifndef COLLBENCH_SERVER_WORKFLOWS_BASELINES_H_
#define COLLBENCH_SERVER_WORKFLOWS_BASELINES_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "analysis/run_set.h"
#include "collbench/v1/baseline.pb.h"
#include "collbench/v1/workflow.pb.h"
#include "server/core/request_bounds.h"
#include "server/store/store.h"
#include "server/workflows/run_selection.h"
#include "server/workflows/workflow_runs.h"

namespace collbench {

class Baselines {
 public:
  // No pointer is owned; all outlive this object. `workflows` reads the
  // workflow a baseline is made of; `bounds` bounds the runs one names.
  Baselines(Store* store, WorkflowRuns* runs, workflows::WorkflowLookup workflows,
            RequestBounds* bounds)
      : store_(store), runs_(runs), workflows_(std::move(workflows)), bounds_(bounds) {}

  absl::StatusOr<v1::Baseline> Create(const v1::CreateBaselineRequest& request, absl::Time now,
                                      absl::string_view caller) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<v1::Baseline> Get(absl::string_view name);
  // By name, without their entries (entries_total says how many).
  absl::StatusOr<std::vector<v1::Baseline>> List();
  absl::Status Delete(absl::string_view name) ABSL_LOCKS_EXCLUDED(mu_);

  // The stored baseline a spec names; InvalidArgument naming `field` when
  // the name is malformed or unknown.
  absl::StatusOr<v1::Baseline> Find(const std::string& text, absl::string_view field);
  // `runs` checked against the baseline `name` names: the check and its
  // table added to `output`.
  absl::Status Check(const std::string& name, const std::vector<RunWithResults>& runs,
                     double threshold, double alpha, v1::WorkflowOutput* output);

 private:
  Store* const store_;
  WorkflowRuns* const runs_;
  const workflows::WorkflowLookup workflows_;
  RequestBounds* const bounds_;
  absl::Mutex mu_;  // a create or delete of one baseline at a time
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_WORKFLOWS_BASELINES_H_
