// SPDX-License-Identifier: Apache-2.0
// Rules both Store implementations share, so they keep one contract: name
// checks, the run order and the ListRuns page token. Not for use outside
// server/store/.
#ifndef COLLBENCH_SERVER_STORE_STORE_INTERNAL_H_
#define COLLBENCH_SERVER_STORE_STORE_INTERNAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "collbench/v1/run.pb.h"
#include "collbench/v1/workflow.pb.h"
#include "google/protobuf/timestamp.pb.h"

namespace collbench::store_internal {

// OK if `name` is "runs/{id}" with a non-empty id, else InvalidArgument.
absl::Status ValidateRunName(absl::string_view name);
// OK if `name` is "workers/{id}" with a non-empty id, else InvalidArgument.
absl::Status ValidateWorkerName(absl::string_view name);
// InvalidArgument unless `name` is "workflows/{id}" with a non-empty id.
absl::Status ValidateWorkflowName(absl::string_view name);
absl::Status WorkflowNotFound(absl::string_view name);
absl::Status ValidateBaselineName(absl::string_view name);
absl::Status ValidateScheduleName(absl::string_view name);
// "baseline baselines/x not found", "schedule schedules/x not found".
absl::Status NotFoundNamed(absl::string_view what, absl::string_view name);
// Newest first, as ListWorkflows returns them.
void SortWorkflowsNewestFirst(std::vector<v1::Workflow>* workflows);
// SetWorkerSecretHash's arguments: a worker name and a non-empty hash.
absl::Status ValidateWorkerSecretHash(absl::string_view name, absl::string_view secret_hash);

// The NotFound every implementation returns for a run it does not hold.
absl::Status RunNotFound(absl::string_view name);

// InvalidArgument for a result whose sequence is negative.
absl::Status ValidateResultSequence(const v1::SizeResult& result);

// `time` in nanoseconds since the Unix epoch (0 when unset).
int64_t TimestampNs(const google::protobuf::Timestamp& time);
// `run.create_time()` in nanoseconds since the Unix epoch.
int64_t CreateTimeNs(const v1::Run& run);

// QUEUED, SCHEDULED and RUNNING: the states a restarted coordinator resumes.
bool IsUnfinished(v1::RunState state);
// SUCCEEDED, FAILED and CANCELLED: the states a run ends in.
bool IsFinished(v1::RunState state);

// A run's position in ListRuns order: newest first, that is descending by
// (create_time_ns, name).
struct RunPosition {
  int64_t create_time_ns = 0;
  std::string name;
};

// True if `a` is listed before `b` (it is newer, or as new with a greater
// name).
bool ListedBefore(const RunPosition& a, const RunPosition& b);

// ListRuns' page size: 0 -> default, capped at the maximum; InvalidArgument
// if negative.
absl::StatusOr<int> EffectivePageSize(int page_size);

// The opaque page token for "the runs after `last`, filtered by `state`".
std::string EncodePageToken(const RunPosition& last, v1::RunState state);
// Inverse of EncodePageToken. InvalidArgument if `token` was not made by it,
// or was made for another `state` filter.
absl::StatusOr<RunPosition> DecodePageToken(absl::string_view token,
                                            v1::RunState state);

}  // namespace collbench::store_internal

#endif  // COLLBENCH_SERVER_STORE_STORE_INTERNAL_H_
