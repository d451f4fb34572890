// SPDX-License-Identifier: Apache-2.0
// The advisor (docs/design/workflows.md#advice-and-tuning-files): per operation
// and message-size range, the best configuration among stored runs, its margin
// over the runner-up and whether that margin is significant; and the tuning
// files users deploy — an Open MPI coll_tuned dynamic rules file, MPICH's
// algorithm CVARs and NCCL's NCCL_ALGO/NCCL_PROTO — written from the winners,
// with readers that parse them back.
#ifndef COLLBENCH_ANALYSIS_ADVISOR_H_
#define COLLBENCH_ANALYSIS_ADVISOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/run_set.h"
#include "analysis/table.h"

namespace collbench {

// One message size's contest: the fastest contender and the next one.
struct SizeContest {
  uint64_t bytes = 0;
  std::string winner;
  std::string runner_up;  // "" when the winner ran alone
  double winner_s = 0;
  double runner_up_s = 0;
  // runner_up_s / winner_s - 1; NaN without a runner-up.
  double margin = 0;
  // The two means' 95% intervals (from the stored histograms) do not
  // overlap. False without a runner-up or without histograms.
  bool significant = false;
};

// Adjacent sizes with the same winner, merged.
struct SizeRange {
  uint64_t from = 0;
  uint64_t to = 0;
  std::string winner;
  double margin_min = 0;  // NaN when no size had a runner-up
  double margin_max = 0;
  int sizes = 0;
  int significant_sizes = 0;
};

// "8-64K", or "1M" for a range of one size.
std::string SpanText(const SizeRange& range);

// "switch point: A -> B at 1M", one line per change of winner between
// adjacent ranges.
std::vector<std::string> SwitchPoints(const std::vector<SizeRange>& ranges);

// `contests` in increasing size; a range ends where the winner changes.
std::vector<SizeRange> MergeRanges(const std::vector<SizeContest>& contests);

// The runs of one operation on one communicator size that can be held
// against each other, and their verdicts.
struct AdviceGroup {
  std::string operation;
  int ranks = 0;
  std::string mpi;      // "openmpi", "mpich" or "mixed"
  std::string backend;  // "mpi", "nccl", … or "mixed"
  std::vector<std::string> configs;  // one per run, from what differs
  std::vector<const RunWithResults*> runs;
  std::vector<SizeContest> contests;
  std::vector<SizeRange> ranges;
};

struct Advice {
  std::vector<AdviceGroup> groups;
  // Runs left out and why (failed, no results, wrong results, alone).
  std::vector<std::string> notes;
};

// The runs must outlive the returned groups (they point into them).
Advice Advise(const std::vector<RunWithResults>& runs);

// The advice as tables: per group, its ranges with winner, runner-up,
// margin and significance.
std::vector<Table> AdviceTables(const Advice& advice);

// --- Open MPI coll_tuned dynamic rules (the classic text format) ---------

struct OpenMpiMessageRule {
  uint64_t min_bytes = 0;
  int algorithm = 0;  // 0: Open MPI's own decision
  int faninout = 0;
  int segsize = 0;
  std::string why;  // the evidence, written as the line's comment (not parsed)
};
struct OpenMpiCommRule {
  int comm_size = 0;
  std::vector<OpenMpiMessageRule> messages;  // the first one from 0 bytes
  std::string why;  // measured or not, written as a comment (not parsed)
};
struct OpenMpiCollectiveRules {
  int collective_id = 0;
  std::vector<OpenMpiCommRule> comms;  // in increasing comm size
};
struct OpenMpiRules {
  std::vector<OpenMpiCollectiveRules> collectives;  // in increasing id
};

// From the groups whose runs are all Open MPI over the mpi backend and
// differ only in their coll_tuned algorithm. A size's rule forces its
// winner only when the win is significant (SizeContest::significant);
// elsewhere, and below, between and above the communicator sizes and
// message sizes measured, the rules say 0 (Open MPI's own decision), so a
// 2-rank sweep's wins hold on 2 ranks and its sizes only. A collective with
// no significant win is left out; empty when no collective has one.
OpenMpiRules OpenMpiRulesFrom(const Advice& advice);
// The file Open MPI reads with coll_tuned_use_dynamic_rules=1 and
// coll_tuned_dynamic_rules_filename=FILE; comments say which range and
// margin each rule comes from.
std::string FormatOpenMpiRules(const OpenMpiRules& rules, const Advice& advice);
// Reads the format back ("#" starts a comment); InvalidArgument naming the
// line on a malformed file, as Open MPI would refuse it.
absl::StatusOr<OpenMpiRules> ParseOpenMpiRules(const std::string& text);

// --- Environment files (MPICH CVARs, NCCL) --------------------------------

// KEY=VALUE lines, "#" comments: what `--env` and `mpiexec -genv` take.
using EnvSettings = std::map<std::string, std::string>;

// Per MPICH group whose runs differ only in a forced algorithm: the
// algorithm variable, when one algorithm wins significantly at every size
// measured. A variable holds at every communicator and message size, so the
// setting is written commented out, with the ranks and sizes it was
// measured on and the evidence per size range; `settings` gets the
// suggestions. "" when there is none.
std::string FormatMpichEnv(const Advice& advice, EnvSettings* settings);
// NCCL_ALGO / NCCL_PROTO from the NCCL groups, the same way.
std::string FormatNcclEnv(const Advice& advice, EnvSettings* settings);
// KEY=VALUE lines; "#" starts a comment (a suggestion is not a setting).
absl::StatusOr<EnvSettings> ParseEnvFile(const std::string& text);

// Why advice has nothing to say: the refusal a workflow's output carries
// (WorkflowOutput.tuning_refusal) when no group of runs can be compared,
// as against the advisor's own refusal when a contest had no significant
// winner.
inline constexpr char kNothingToCompare[] =
    "no two successful runs of one operation on one rank count to compare";

// The name WriteTuningFiles gives the Open MPI rules file.
inline constexpr char kOpenMpiRulesFile[] = "openmpi-rules.conf";

// Writes openmpi-rules.conf, mpich.env and nccl.env (those that have
// content) into `dir`, creating it (not its parents); returns the paths
// written. FailedPrecondition, naming each group's significant sizes and
// writing nothing, when no file has a significant win to carry.
absl::StatusOr<std::vector<std::string>> WriteTuningFiles(const Advice& advice,
                                                          const std::string& dir);

// What WriteTuningFiles writes, as (file name, text) pairs, for a caller
// that sends them rather than writes them (the coordinator's workflows);
// the same FailedPrecondition when nothing is significant.
using TuningFileText = std::pair<std::string, std::string>;
absl::StatusOr<std::vector<TuningFileText>> TuningFiles(const Advice& advice);
// Writes `files` into `dir`, creating it (not its parents); the paths.
// InvalidArgument, with nothing written, when a name is not a bare file
// name (letters, digits, '.', '-', '_', not starting with '.'): the names
// may come from a coordinator.
absl::StatusOr<std::vector<std::string>> WriteTuningFileTexts(
    const std::vector<TuningFileText>& files, const std::string& dir);

}  // namespace collbench

#endif  // COLLBENCH_ANALYSIS_ADVISOR_H_
