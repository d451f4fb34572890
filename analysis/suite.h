// SPDX-License-Identifier: Apache-2.0
// Suites (docs/design/workflows.md#suites): a seed paper's experiment as data — the runs to make
// (axes whose values add `collbench run` flags), the tables to print and the
// paper's values to hold them against — and the one engine that expands,
// judges and renders every suite. The JSON form is documented in
// analysis/suites/README.md; the built-in suites live beside it.
//
// Nothing here talks to a coordinator: the CLI runs the cells a suite
// expands to and hands the results back (client/suite_command.cc).
#ifndef COLLBENCH_ANALYSIS_SUITE_H_
#define COLLBENCH_ANALYSIS_SUITE_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/run_set.h"
#include "analysis/table.h"

namespace collbench {

// What a cell needs of the workers beyond what every worker has.
struct SuiteNeeds {
  int gpus_per_worker = 0;
  std::string memory_kind;  // a --memory kind the workers must offer
  int numa_nodes = 0;       // NUMA nodes on a worker
  // Labels (collbench-worker --label KEY=VALUE) every worker the cell runs
  // on must carry: what no worker can discover, such as the link between
  // hosts. `labelled` says what such workers are, for the skip reason.
  std::map<std::string, std::string> worker_labels;
  std::string labelled;
  // A piece the engine does not have yet: the cell is skipped with this
  // sentence, so the table says what is missing instead of hiding the row.
  std::string missing;
};

struct SuiteAxisValue {
  std::string value;
  std::vector<std::string> flags;  // appended to the cell's `run` flags
  std::string operation;           // sets the cell's operation when given
  SuiteNeeds needs;
  // The profiles this value is part of (empty: every profile): a value
  // too big for the ci profile's machine is left out there.
  std::vector<std::string> profiles;
};

struct SuiteAxis {
  std::string name;
  std::vector<SuiteAxisValue> values;
};

// A claim of the paper, checked on every table row it applies to.
struct SuiteCheck {
  std::string column;    // the table column it reads ("single/multi")
  std::string relation;  // ">", ">=", "<", "<=", "~" (within `tolerance`)
  double value = 0;
  double tolerance = 0.1;
  std::map<std::string, std::string> where;  // row keys it applies to
  std::string paper;  // the paper's value or ordering, as printed
};

struct SuiteRatio {
  std::string name;  // column name
  std::string of;    // pivot value of the numerator
  std::string to;    // pivot value of the denominator
};

struct SuiteTable {
  std::string id;
  std::string title;
  // "pivot": one row per combination of `rows`, one column per `pivot`
  //          value and per ratio;
  // "best":  per combination of `rows`, the best and the worst cell over
  //          the other axes, their ratio and the reduction;
  // "winner": per size, the best `pivot` value; sizes with the same winner
  //          merge into ranges, and the switch point is named.
  std::string kind = "pivot";
  std::vector<std::string> rows;  // axis names, or "@bytes", "@ranks"
  std::string pivot;
  std::string measure = "avg_us";  // see MeasureValue
  bool higher_is_better = false;
  uint64_t at_bytes = 0;  // without "@bytes" in rows: this size (0: the largest)
  std::map<std::string, std::string> where;  // only cells with these values
  std::vector<SuiteRatio> ratios;
  std::vector<SuiteCheck> checks;
  std::vector<std::string> notes;
};

// One experiment of a suite: its axes (every combination is a cell, less
// the excluded ones), the flags every cell shares and its tables.
struct SuitePart {
  std::string name;
  std::string operation;  // default operation of its cells
  std::vector<std::string> flags;
  std::vector<SuiteAxis> axes;
  std::vector<std::map<std::string, std::string>> exclude;
  std::vector<SuiteTable> tables;
};

struct Suite {
  std::string name;
  std::string seed;      // "004"
  std::string paper;     // authors and title
  std::string question;  // what it answers, one sentence
  std::vector<std::string> notes;  // printed under the suite's header
  // Per profile ("ci", "paper"), the values of the ${VAR}s in flags.
  std::map<std::string, std::map<std::string, std::string>> profiles;
  std::vector<SuitePart> parts;
};

// One run a suite asks for.
struct SuiteCell {
  std::string part;
  std::vector<std::pair<std::string, std::string>> key;  // axis -> value, axis order
  std::string operation;
  std::vector<std::string> flags;  // `collbench run` flags after OPERATION
  SuiteNeeds needs;
  // "part:axis=value,axis=value": the run's `suite-cell` label.
  std::string Label() const;
  std::string Value(const std::string& axis) const;  // "" when not an axis
};

// The suite in its JSON form; InvalidArgument naming the field otherwise.
absl::StatusOr<Suite> ParseSuite(const std::string& json);

// The built-in suites, in a fixed order (analysis/suites/*.json).
const std::vector<Suite>& BuiltinSuites();
absl::StatusOr<Suite> FindSuite(const std::string& name);

// Every cell of every part for `profile`, ${VAR}s replaced. InvalidArgument
// for an unknown profile or a ${VAR} the profile does not set.
absl::StatusOr<std::vector<SuiteCell>> ExpandSuite(const Suite& suite, const std::string& profile);

// What the workers at hand can offer a cell.
struct SuiteCapabilities {
  int workers = 0;
  int max_slots = 0;  // ranks one worker can take
  int max_gpus_per_worker = 0;
  int max_numa_nodes = 0;
  std::set<std::string> memory_kinds;  // offered by every worker
  std::vector<std::map<std::string, std::string>> worker_labels;  // each worker's
};

// Whether a worker with `labels` carries every one of `needed`.
bool CarriesLabels(const std::map<std::string, std::string>& labels,
                   const std::map<std::string, std::string>& needed);

// Why `cell` cannot run here ("" when it can). `ranks` and `per_worker` are
// what the cell's flags ask for (the ranks in all and the most on one
// worker), as the CLI reads them from the parsed spec. A cell that needs
// worker labels runs only on workers carrying them (the CLI places it
// there), so enough of those must be at hand.
std::string SkipReason(const SuiteCell& cell, int ranks, int per_worker,
                       const SuiteCapabilities& caps);

// A suite's outcome: the cells run (by Label) and those skipped, with why.
struct SuiteOutcome {
  std::map<std::string, RunWithResults> runs;
  std::map<std::string, std::string> skipped;
};

// A number read off a run for a table: "avg_us", "avg_ms", "p50_us", "p99_us",
// "algbw_MBps",
// "busbw_GBps", "throughput_MBps" (bytes over the mean latency, as NetPIPE
// shows a ping-pong), "scenario:KEY" (the scenario's value; seconds — a KEY
// ending in _s or holding _s_per_ — are shown in ms). False when the result lacks it.
bool MeasureValue(const std::string& measure, const v1::SizeResult& result, double* value);

// The suite's tables for the cells of `cells` that ran. Every row of a
// paper claim gets the paper's value and "yes" or "no"; skipped cells are
// named in the notes with their reasons.
std::vector<Table> RenderSuite(const Suite& suite, const std::vector<SuiteCell>& cells,
                               const SuiteOutcome& outcome);

// A stored suite run's suite, profile and tables, from its runs (those
// with the label suite-run=ID): what `suite show` prints and what reports
// and /ui/ draw.
struct SuiteView {
  Suite suite;
  std::string profile;
  std::vector<Table> tables;
};
absl::StatusOr<SuiteView> ViewSuiteRun(const std::vector<RunWithResults>& runs);

// The header printed above a suite's tables: the paper, the question, the
// profile, where "containers" came from, and the notes.
std::string SuiteHeader(const Suite& suite, const std::string& profile);

}  // namespace collbench

#endif  // COLLBENCH_ANALYSIS_SUITE_H_
