// SPDX-License-Identifier: Apache-2.0
// Which rank is slow (docs/design/data-plane.md#statistics-over-ranks). Every
// size record carries each rank's mean, p50 and p99; AttributeRanks names the
// slowest rank, its mean over the median rank's, and flags stragglers.
//
// The median rank is the lower middle of the ranks sorted by mean, so it is
// always a real rank (with two ranks, the faster one). A rank is a
// straggler when its mean exceeds kStragglerRatio x the median rank's. The
// root of a rooted operation (bcast, gather, reduce) does different work by
// design — it sends or receives everything — so it is named when slowest but
// never flagged.
//
// What the per-rank view can show: a rank's own time inside its timed
// interval. In operations that synchronize every rank (allreduce,
// allgather, alltoall) a rank that arrives late makes all ranks wait, so
// their means move together; a rank whose own part is slow (its completion,
// its copy, its link in a rooted operation) stands out.
#ifndef COLLBENCH_COMMON_RANK_SPREAD_H_
#define COLLBENCH_COMMON_RANK_SPREAD_H_

#include <string>

#include "absl/strings/string_view.h"
#include "common/records.h"

namespace collbench {

inline constexpr double kStragglerRatio = 1.5;

// Sets record->slowest_rank, slowest_vs_median and every rank's straggler
// flag from record->ranks and record->root (-1: not rooted). With no ranks,
// slowest_rank is -1 and the ratio 0.
void AttributeRanks(SizeRecord* record);

// "1@node-b" for the slowest rank, or "-" when there is none.
std::string SlowestRankText(const SizeRecord& record);

// Whether the slowest rank is flagged a straggler.
bool SlowestIsStraggler(const SizeRecord& record);

// "1.62x" (its mean over the median rank's), "!" appended for a straggler;
// "-" when there is no slowest rank.
std::string SlowestVsMedianText(const SizeRecord& record);

// The line under a table with `sizes` straggler rows (> 0), newline included.
std::string StragglerNote(int sizes);

// What a record's `sync` means, for table headers: "barrier", "none", or
// anything else (not recorded).
std::string IterationSyncMeaning(absl::string_view sync);

}  // namespace collbench

#endif  // COLLBENCH_COMMON_RANK_SPREAD_H_
