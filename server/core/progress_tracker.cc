// SPDX-License-Identifier: Apache-2.0
#include "server/core/progress_tracker.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/convert.h"

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

// The ranks that hold the others up: those at the earliest position; where
// every rank is at the same one (a collective waits for a rank inside it),
// those whose process is stopped or gone, else those that used no CPU
// since they last moved while the others spin.
std::vector<int> Behind(const std::map<int, v1::RankProgress>& ranks,
                        const std::map<int, double>& cpu_at_advance) {
  const auto earliest = std::min_element(ranks.begin(), ranks.end(), [](const auto& a,
                                                                        const auto& b) {
    return Position(a.second) < Position(b.second);
  });
  std::vector<int> behind;
  for (const auto& [rank, r] : ranks) {
    if (Position(r) == Position(earliest->second)) behind.push_back(rank);
  }
  if (behind.size() < ranks.size()) return behind;
  std::vector<int> gone, idle;
  for (const auto& [rank, r] : ranks) {
    if (ProcessGone(r)) gone.push_back(rank);
    auto cpu = cpu_at_advance.find(rank);
    if (r.cpu_seconds() - (cpu == cpu_at_advance.end() ? 0 : cpu->second) < 0.05) {
      idle.push_back(rank);
    }
  }
  if (!gone.empty()) return gone;
  if (!idle.empty() && idle.size() < ranks.size()) return idle;
  return behind;
}

// "hang: no rank advanced for 31s (hang timeout 30s): rank 1 on h (w)
// stopped in ...; 3 ranks wait in ... (ranks 0, 2, 3)".
std::string Diagnose(const std::map<int, v1::RankProgress>& ranks, absl::Duration still,
                     absl::Duration timeout) {
  std::vector<std::string> named;
  std::map<std::string, std::vector<int>> waiting;  // place -> ranks
  for (const auto& [rank, r] : ranks) {
    if (!r.behind()) {
      waiting[RankPlace(r)].push_back(rank);
      continue;
    }
    named.push_back(absl::StrCat("rank ", rank, " on ", r.host(), " (", r.worker(), ") ",
                                 r.process() == "stopped"  ? "stopped"
                                 : r.process() == "exited" ? "exited"
                                                           : "stands",
                                 " in ", RankPlace(r)));
  }
  std::vector<std::string> others;
  for (const auto& [place, waiters] : waiting) {
    others.push_back(absl::StrCat(waiters.size(), waiters.size() == 1 ? " rank waits" : " ranks wait",
                                  " in ", place, " (", waiters.size() == 1 ? "rank " : "ranks ",
                                  absl::StrJoin(waiters, ", "), ")"));
  }
  return absl::StrCat("hang: no rank advanced for ", absl::FormatDuration(still),
                      " (hang timeout ", absl::FormatDuration(timeout), "): ",
                      absl::StrJoin(named, "; "), others.empty() ? "" : "; ",
                      absl::StrJoin(others, "; "));
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

std::optional<ProgressTracker::Ranks> ProgressTracker::Apply(
    const std::string& run, const std::string& worker, const Ranks& reported,
    const google::protobuf::RepeatedPtrField<v1::RankHost>& hosts, absl::Time now) {
  // Rank -> worker, from the placement (ranks in order, `slots` each).
  std::vector<std::string> worker_of;
  for (const v1::RankHost& h : hosts) {
    for (int i = 0; i < std::max(1, h.slots()); ++i) worker_of.push_back(h.worker());
  }
  absl::MutexLock lock(&mu_);
  Table& table = runs_[run];
  bool changed = false;
  for (const v1::RankProgress& incoming : reported) {
    if (incoming.rank() < 0 || incoming.rank() >= static_cast<int>(worker_of.size()) ||
        worker_of[incoming.rank()] != worker) {
      continue;
    }
    v1::RankProgress r = incoming;
    r.set_worker(worker);
    r.set_behind(false);
    auto it = table.ranks.find(r.rank());
    const bool moved = it == table.ranks.end() || Moved(it->second, r);
    if (moved) {
      *r.mutable_update_time() = TimestampFromTime(now);
      table.last_advance = now;
      table.cpu_at_advance[r.rank()] = r.cpu_seconds();
    } else {
      *r.mutable_update_time() = it->second.update_time();
    }
    changed = changed || moved || it->second.process() != r.process();
    table.ranks[r.rank()] = std::move(r);
  }
  if (!changed) return std::nullopt;
  return AsRepeated(table);
}

std::optional<ProgressTracker::Hang> ProgressTracker::CheckHang(const std::string& run,
                                                                const v1::RunSpec& spec,
                                                                absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(run);
  if (it == runs_.end()) return std::nullopt;
  Table& table = it->second;
  if (table.ranks.empty() || table.last_advance == absl::InfinitePast()) return std::nullopt;
  const absl::Duration timeout = HangTimeout(spec);
  if (now - table.last_advance < timeout) return std::nullopt;
  auto all_in = [&table](absl::string_view phase) {
    return std::all_of(table.ranks.begin(), table.ranks.end(),
                       [phase](const auto& r) { return r.second.phase() == phase; });
  };
  if (all_in("done")) return std::nullopt;  // finishing: the launcher reports the end
  // Setting up (buffers, a library's first call) is not timed: the clock
  // starts once a rank measures. A scenario's ranks never leave init.
  if (all_in("init")) return std::nullopt;
  for (int rank : Behind(table.ranks, table.cpu_at_advance)) table.ranks[rank].set_behind(true);
  return Hang{Diagnose(table.ranks, now - table.last_advance, timeout), AsRepeated(table)};
}

ProgressTracker::Ranks ProgressTracker::Progress(const std::string& run) const {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(run);
  return it == runs_.end() ? Ranks() : AsRepeated(it->second);
}

std::string ProgressTracker::Positions(const std::string& run) const {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(run);
  return it == runs_.end() ? "" : RankPositions(it->second.ranks);
}

void ProgressTracker::Drop(const std::string& run) {
  absl::MutexLock lock(&mu_);
  runs_.erase(run);
}

ProgressTracker::Ranks ProgressTracker::AsRepeated(const Table& table) {
  Ranks ranks;
  for (const auto& [rank, r] : table.ranks) *ranks.Add() = r;
  return ranks;
}

}  // namespace collbench
