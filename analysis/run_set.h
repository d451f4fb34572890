// SPDX-License-Identifier: Apache-2.0
// What the analysis library (docs/design/workflows.md#reports) takes: runs with their results, as
// stored, and the few facts every analysis asks of them — what sets one
// run's configuration apart from another's, and how precisely a size's
// mean latency is known. No gRPC here: only the collbench.v1 messages.
#ifndef COLLBENCH_ANALYSIS_RUN_SET_H_
#define COLLBENCH_ANALYSIS_RUN_SET_H_

#include <string>
#include <utility>
#include <vector>

#include "collbench/v1/run.pb.h"

namespace collbench {

struct RunWithResults {
  v1::Run run;
  std::vector<v1::SizeResult> results;
};

// The spec's enums as the command line spells them.
std::string MpiName(v1::MpiImplementation mpi);          // the flavour's name (flavors/)
std::string TransportName(v1::Transport transport);      // "auto", "shm", "tcp", "ucx"
// The transport the run used, and what it asked for when that differs:
// "tcp", or "tcp (auto)" for an AUTO run that the placement made TCP.
std::string TransportText(const v1::Run& run);
std::string PlacementName(const v1::Placement& placement);  // "pack", "spread", "explicit"

// The fields that make a run's configuration, in a fixed order, as
// (name, value): mpi, backend, transport, placement, ranks, memory, sync,
// algorithm (the one the environment forces, or "default"), the rest of the
// environment (every other --env key) and the run's labels other than the
// bookkeeping ones ("suite", "suite-run", "suite-profile", "sweep").
std::vector<std::pair<std::string, std::string>> ConfigFields(const v1::Run& run);

// Whether a run's labels count as configuration fields: a report tells
// runs apart by them; the advisor compares how runs ran, not how they were
// filed.
enum class LabelFields { kIncluded, kLeftOut };

// The names of the configuration fields whose values differ between the
// runs, in ConfigFields' order.
std::vector<std::string> VaryingConfigFields(const std::vector<const v1::Run*>& runs,
                                             LabelFields labels);

// One short name per run, made of only the fields that differ between the
// runs ("mpich/tcp", "openmpi/shm"), so a plot or a table can name its
// series. Runs alike in every field are told apart by their ids.
std::vector<std::string> DistinctConfigNames(const std::vector<RunWithResults>& runs);
std::vector<std::string> DistinctConfigNames(const std::vector<const v1::Run*>& runs,
                                             LabelFields labels);

// An interval that holds the true mean latency of one size with about 95%
// confidence, from the size's stored histogram: mean ± 1.96 s/√n, with s
// taken from the bucket midpoints. `known` is false when the result has no
// histogram (then low = high = avg_s).
struct Interval {
  double low_s = 0;
  double high_s = 0;
  bool known = false;
};
Interval MeanInterval(const v1::SizeResult& result);

// Two intervals that do not overlap: the difference between the two means
// is significant. Unknown intervals never are.
bool Separated(const Interval& a, const Interval& b);

// The index of the fastest (lowest mean) of `results` when its mean's
// interval is apart from the runner-up's, -1 otherwise: when fewer than
// two are present (null entries are absent) or the two fastest are not
// told apart. Ties on the mean go to the lower index.
int SignificantFastest(const std::vector<const v1::SizeResult*>& results);

// What a "fastest" mark means, for every table that has one (the CLI's
// comparisons, a matrix's best-worst table).
inline constexpr char kFastestLegend[] =
    "fastest: only where its mean's 95% interval (from the histograms) is apart from the "
    "runner-up's; ~ where the two fastest are not told apart";

}  // namespace collbench

#endif  // COLLBENCH_ANALYSIS_RUN_SET_H_
