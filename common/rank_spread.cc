// SPDX-License-Identifier: Apache-2.0
#include "common/rank_spread.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace collbench {

void AttributeRanks(SizeRecord* record) {
  record->slowest_rank = -1;
  record->slowest_vs_median = 0;
  if (record->ranks.empty()) return;
  std::vector<double> means;
  for (const RankTiming& t : record->ranks) means.push_back(t.mean_s);
  std::sort(means.begin(), means.end());
  const double median_s = means[(means.size() - 1) / 2];
  const RankTiming* slowest = &record->ranks.front();
  for (RankTiming& t : record->ranks) {
    if (t.mean_s > slowest->mean_s) slowest = &t;
    const bool is_root = record->root >= 0 && t.rank == record->root;
    t.straggler = !is_root && median_s > 0 && t.mean_s > kStragglerRatio * median_s;
  }
  record->slowest_rank = slowest->rank;
  record->slowest_vs_median = median_s > 0 ? slowest->mean_s / median_s : 0;
}

std::string SlowestRankText(const SizeRecord& record) {
  for (const RankTiming& t : record.ranks) {
    if (t.rank == record.slowest_rank) {
      return t.host.empty() ? absl::StrCat(t.rank) : absl::StrCat(t.rank, "@", t.host);
    }
  }
  return "-";
}

bool SlowestIsStraggler(const SizeRecord& record) {
  for (const RankTiming& t : record.ranks) {
    if (t.rank == record.slowest_rank) return t.straggler;
  }
  return false;
}

std::string SlowestVsMedianText(const SizeRecord& record) {
  if (record.slowest_rank < 0) return "-";
  return absl::StrFormat("%.2fx%s", record.slowest_vs_median,
                         SlowestIsStraggler(record) ? "!" : "");
}

std::string StragglerNote(int sizes) {
  return absl::StrFormat("# ! straggler: a rank's mean above %.1fx the median rank's (%d sizes)\n",
                         kStragglerRatio, sizes);
}

std::string IterationSyncMeaning(absl::string_view sync) {
  if (sync == "barrier") return "an untimed barrier after each timed iteration (as OSU)";
  if (sync == "none") return "iterations back to back (as nccl-tests)";
  return "not recorded";
}

}  // namespace collbench
