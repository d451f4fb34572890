// SPDX-License-Identifier: Apache-2.0
#include "server/core/live_run.h"

#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "api/capabilities.h"
#include "common/log.h"

namespace collbench {
namespace {

scheduling::PlacementPolicy PolicyOf(const v1::Placement& placement) {
  switch (placement.policy()) {
    case v1::SPREAD: return scheduling::PlacementPolicy::kSpread;
    case v1::EXPLICIT: return scheduling::PlacementPolicy::kExplicit;
    default: return scheduling::PlacementPolicy::kPack;
  }
}

}  // namespace

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kCreating: return "CREATING";
    case Phase::kQueued: return "QUEUED";
    case Phase::kWithdrawing: return "WITHDRAWING";
    case Phase::kScheduled: return "SCHEDULED";
    case Phase::kRunning: return "RUNNING";
    case Phase::kEnding: return "ENDING";
    case Phase::kCancelling: return "CANCELLING";
  }
  return "UNKNOWN";
}

std::string RandomHex(int bytes) {
  std::random_device random;
  std::string out;
  for (int i = 0; i < bytes; ++i) absl::StrAppendFormat(&out, "%02x", random() & 0xff);
  return out;
}

std::string NewRunName(absl::Time now) {
  return absl::StrCat("runs/", absl::FormatTime("%Y%m%d-%H%M%S", now, absl::UTCTimeZone()), "-",
                      RandomHex(3));
}

std::string FullRunName(absl::string_view name) {
  return absl::StartsWith(name, "runs/") ? std::string(name) : absl::StrCat("runs/", name);
}

absl::Status NotDeletable(const v1::Run& run, Phase phase) {
  if (phase == Phase::kCancelling || phase == Phase::kWithdrawing) {
    return absl::FailedPreconditionError(absl::StrCat(
        run.name(), " is ", v1::RunState_Name(run.state()),
        " but its launcher has not yet confirmed that every process ended; delete it once it "
        "has (or once the cancel grace is over)"));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      run.name(), " is ", v1::RunState_Name(run.state()), "; cancel it first, then delete it"));
}

scheduling::PendingRun PendingOf(const v1::RunSpec& spec, const std::string& name) {
  scheduling::PendingRun pending;
  pending.name = name;
  pending.ranks = spec.ranks();
  pending.policy = PolicyOf(spec.placement());
  pending.workers.assign(spec.placement().workers().begin(), spec.placement().workers().end());
  pending.ranks_per_worker = spec.placement().ranks_per_worker();
  pending.share_host = spec.placement().share_host();
  pending.needs = NeedsOf(spec);
  return pending;
}

void LogRunState(const v1::Run& run) {
  const LogLevel level = run.state() == v1::FAILED ? LogLevel::kWarn : LogLevel::kInfo;
  if (!LogEnabled(level)) return;
  const std::string state = v1::RunState_Name(run.state());
  LogEvent(level, "run.state",
           absl::StrCat(run.name(), " ", state, run.error().empty() ? "" : ": ", run.error()))
      .Str("run", run.name())
      .Str("state", state)
      .StrIfSet("error", run.error())
      .StrIfSet("waiting_reason", run.waiting_reason())
      .StrIfSet("launcher", run.launcher())
      .StrIfSet("workers", absl::StrJoin(run.held_workers(), ","))
      .Str("operation", run.spec().operation())
      .Int("ranks", run.spec().ranks());
}

}  // namespace collbench
