// SPDX-License-Identifier: Apache-2.0
// Internal to api/: the pieces ValidateRunSpec (validation.h) is built
// from, shared by validation.cc (the ranges of the engine's fields and the
// engine's own rules) and validation_job.cc (ranks, placement and the run's
// surroundings). Not for use outside api/.
//
// Each check looks at one concern and returns OK or InvalidArgument whose
// message starts with the field path. Checks run in the order of the table
// in validation.cc, and a check may rely on the ones before it having
// passed (e.g. the buffer check on a known operation and valid ranks).
#ifndef COLLBENCH_API_VALIDATION_CHECKS_H_
#define COLLBENCH_API_VALIDATION_CHECKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "api/validation.h"
#include "collbench/v1/run.pb.h"
#include "engine_spec/backends.h"
#include "engine_spec/job_checks.h"
#include "engine_spec/operations.h"
#include "engine_spec/types.h"

namespace collbench::validation_internal {

// The spec's names and defaults, resolved once. A name that does not
// resolve leaves its member null / empty; the check that owns the field
// reports it before any later check uses the member.
struct Context {
  Context(const v1::RunSpec& s, const ValidationLimits& l) : spec(s), limits(l) {}

  const v1::RunSpec& spec;
  const ValidationLimits& limits;
  std::string scenario;           // the scenario run, "" for an operation
  const OperationSpec* op = nullptr;  // the operation run; null for a scenario
  const BackendSpec* backend = nullptr;
  std::vector<DataType> dtypes;  // the types run: several for "all"
  std::vector<ReduceOp> redops;  // the operators run: several for "all"
  // The min..max sweep with the engine's defaults filled in.
  uint64_t min_bytes = 0;
  uint64_t max_bytes = 0;
  double factor = 0;

  bool explicit_sizes() const { return spec.sizes_bytes_size() > 0; }
  // The narrowest element among `dtypes`, in bytes.
  size_t narrowest_element() const;
};

Context Resolve(const v1::RunSpec& spec, const ValidationLimits& limits);

// True for collectives and scenarios: the runs --sync applies to.
bool SyncApplies(const Context& c);

template <typename... Args>
absl::Status FieldError(absl::string_view path, const Args&... args) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", args...));
}

// Seconds in `d`, or InvalidArgument naming `path` when protobuf's rules
// call it invalid (nanos out of range, signs differ, beyond 10000 years).
absl::StatusOr<double> DurationSeconds(absl::string_view path, const google::protobuf::Duration& d);

// The field path of the RunSpec field that holds `error`'s setting
// ("spec.root"; "spec.sizes_bytes[2]" for one entry of the list).
std::string FieldPathOf(const RuleError& error);

// validation_job.cc.
absl::Status CheckRanks(const Context& c);
absl::Status CheckPlacement(const Context& c);
absl::Status CheckTransport(const Context& c);
absl::Status CheckEnv(const Context& c);
absl::Status CheckTimeout(const Context& c);
absl::Status CheckLabels(const Context& c);
absl::Status CheckBufferMemory(const Context& c);

}  // namespace collbench::validation_internal

#endif  // COLLBENCH_API_VALIDATION_CHECKS_H_
