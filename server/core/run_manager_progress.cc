// SPDX-License-Identifier: Apache-2.0
// RunManager: hang attribution (docs/design/run-lifecycle.md#hang-attribution).
// Every worker of a run relays where the run's ranks on its host are
// (common/progress_slot.h); the run keeps them (Run.rank_progress) and its
// watchers see them. A run in which no rank moves for its hang timeout is ended
// here, with a diagnosis that names the ranks that hold the others up and where
// every rank is.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/units.h"
#include "api/convert.h"
#include "server/core/run_manager.h"

namespace collbench {
namespace {

// The shortest hang timeout; a run's own (spec.hang_timeout) may be longer.
constexpr absl::Duration kMinHangTimeout = absl::Seconds(30);
// Without one: this many times the time budget of a size.
constexpr double kBudgetsPerHang = 3;

std::tuple<int, int64_t> Position(const v1::RankProgress& r) {
  return {r.size_index(), r.iteration()};
}

bool Moved(const v1::RankProgress& before, const v1::RankProgress& now) {
  return Position(before) != Position(now) || before.phase() != now.phase();
}

// A process that is not waiting: stopped, gone, or a zombie.
bool ProcessGone(const v1::RankProgress& r) {
  return r.process() == "stopped" || r.process() == "exited" || r.process() == "zombie";
}

absl::Duration HangTimeout(const v1::RunSpec& spec) {
  if (spec.has_hang_timeout() &&
      (spec.hang_timeout().seconds() > 0 || spec.hang_timeout().nanos() > 0)) {
    return absl::Seconds(spec.hang_timeout().seconds()) +
           absl::Nanoseconds(spec.hang_timeout().nanos());
  }
  absl::Duration timeout = kMinHangTimeout;
  if (spec.has_time_budget()) {
    const absl::Duration budget = absl::Seconds(spec.time_budget().seconds()) +
                                  absl::Nanoseconds(spec.time_budget().nanos());
    timeout = std::max(timeout, budget * kBudgetsPerHang);
  }
  return timeout;
}

}  // namespace

std::string RankPositions(const std::map<int, v1::RankProgress>& ranks) {
  std::vector<std::string> parts;
  for (const auto& [rank, r] : ranks) {
    parts.push_back(absl::StrCat("rank ", rank, " on ", r.host(), " in ", RankPlace(r),
                                 r.process().empty() ? "" : absl::StrCat(", ", r.process())));
  }
  return absl::StrJoin(parts, "; ");
}

void RunManager::OnRankProgress(const std::string& worker, const v1::RankProgressReport& report,
                                absl::Time now) {
  absl::MutexLock lock(&mu_);
  LiveRun* live = FindLiveLocked(report.run());
  if (live == nullptr) return;  // ended meanwhile
  const bool ours = std::any_of(live->run.hosts().begin(), live->run.hosts().end(),
                                [&](const v1::RankHost& h) { return h.worker() == worker; });
  if (!ours) {
    RefuseMessageLocked(worker, report.run(), "progress_not_a_worker_of_the_run");
    return;
  }
  if (live->run.state() != v1::RUNNING || live->cancelling) return;
  // Rank -> worker, from the placement (ranks in order, `slots` each).
  std::vector<std::string> worker_of;
  for (const v1::RankHost& h : live->run.hosts()) {
    for (int i = 0; i < std::max(1, h.slots()); ++i) worker_of.push_back(h.worker());
  }
  bool changed = false;
  for (const v1::RankProgress& incoming : report.ranks()) {
    // A worker speaks only for the ranks placed on it: where co-resident
    // workers see each other's slots, each relays its own, and one worker
    // can neither hide another's hang nor frame it.
    if (incoming.rank() < 0 || incoming.rank() >= static_cast<int>(worker_of.size()) ||
        worker_of[incoming.rank()] != worker) {
      continue;
    }
    v1::RankProgress r = incoming;
    r.set_worker(worker_of[r.rank()]);
    r.set_behind(false);
    auto it = live->ranks.find(r.rank());
    const bool moved = it == live->ranks.end() || Moved(it->second, r);
    if (moved) {
      *r.mutable_update_time() = TimestampFromTime(now);
      live->last_advance = now;
      live->cpu_at_advance[r.rank()] = r.cpu_seconds();
    } else {
      *r.mutable_update_time() = it->second.update_time();
    }
    changed = changed || moved || it->second.process() != r.process();
    live->ranks[r.rank()] = std::move(r);
  }
  if (!changed) return;
  live->run.clear_rank_progress();
  for (const auto& [rank, r] : live->ranks) *live->run.add_rank_progress() = r;
  {
    absl::MutexLock progress(&rank_progress_mu_);
    rank_progress_[live->run.name()] = live->run.rank_progress();
  }
  v1::RunEvent event;
  event.set_run(live->run.name());
  *event.mutable_time() = TimestampFromTime(now);
  v1::Progress* progress = event.mutable_progress();
  progress->set_sizes_done(live->run.sizes_done());
  progress->set_sizes_total(live->run.sizes_total());
  *progress->mutable_ranks() = live->run.rank_progress();
  hub_->Publish(event);
}

void RunManager::CheckHangLocked(LiveRun& live, absl::Time now) {
  if (live.ranks.empty() || live.last_advance == absl::InfinitePast()) return;
  const absl::Duration timeout = HangTimeout(live.run.spec());
  if (now - live.last_advance < timeout) return;
  const bool all_done = std::all_of(live.ranks.begin(), live.ranks.end(),
                                    [](const auto& r) { return r.second.phase() == "done"; });
  if (all_done) return;  // finishing: the launcher reports the end
  // Setting up (buffers, a library's first call) is not timed: the clock
  // starts once a rank measures. A scenario's ranks never leave init.
  const bool all_init = std::all_of(live.ranks.begin(), live.ranks.end(),
                                    [](const auto& r) { return r.second.phase() == "init"; });
  if (all_init) return;
  // Behind: the ranks at the earliest position. Where every rank is at the
  // same one (a collective waits for a rank inside it), those whose process
  // is stopped or gone, else those that used no CPU since they last moved
  // while the others spin.
  const auto earliest = std::min_element(
      live.ranks.begin(), live.ranks.end(),
      [](const auto& a, const auto& b) { return Position(a.second) < Position(b.second); });
  std::vector<int> behind;
  for (const auto& [rank, r] : live.ranks) {
    if (Position(r) == Position(earliest->second)) behind.push_back(rank);
  }
  if (behind.size() == live.ranks.size()) {
    std::vector<int> gone, idle;
    for (const auto& [rank, r] : live.ranks) {
      if (ProcessGone(r)) gone.push_back(rank);
      if (r.cpu_seconds() - live.cpu_at_advance[rank] < 0.05) idle.push_back(rank);
    }
    if (!gone.empty()) {
      behind = gone;
    } else if (!idle.empty() && idle.size() < live.ranks.size()) {
      behind = idle;
    }
  }
  std::vector<std::string> named;
  for (int rank : behind) {
    v1::RankProgress& r = live.ranks[rank];
    r.set_behind(true);
    named.push_back(absl::StrCat("rank ", rank, " on ", r.host(), " (", r.worker(), ") ",
                                 r.process() == "stopped"  ? "stopped"
                                 : r.process() == "exited" ? "exited"
                                                           : "stands",
                                 " in ", RankPlace(r)));
  }
  std::map<std::string, std::vector<int>> waiting;  // place -> ranks
  for (const auto& [rank, r] : live.ranks) {
    if (!r.behind()) waiting[RankPlace(r)].push_back(rank);
  }
  std::vector<std::string> others;
  for (const auto& [place, ranks] : waiting) {
    others.push_back(absl::StrCat(ranks.size(), ranks.size() == 1 ? " rank waits" : " ranks wait",
                                  " in ", place, " (", ranks.size() == 1 ? "rank " : "ranks ",
                                  absl::StrJoin(ranks, ", "), ")"));
  }
  const std::string diagnosis = absl::StrCat(
      "hang: no rank advanced for ", absl::FormatDuration(now - live.last_advance), " (hang timeout ",
      absl::FormatDuration(timeout), "): ", absl::StrJoin(named, "; "),
      others.empty() ? "" : "; ", absl::StrJoin(others, "; "));
  live.run.clear_rank_progress();
  for (const auto& [rank, r] : live.ranks) *live.run.add_rank_progress() = r;
  LogWarn("run.hang", absl::StrCat(live.run.name(), " ", diagnosis))
      .Str("run", live.run.name());
  (void)AbortLocked(live, v1::FAILED, diagnosis, now);
}

}  // namespace collbench
