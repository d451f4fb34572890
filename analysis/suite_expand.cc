// SPDX-License-Identifier: Apache-2.0
// A suite's data into cells (one run each) and whether the workers at hand
// can run a cell.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/suite.h"
#include "analysis/suites_embedded.h"

namespace collbench {
namespace {

// "${name}" anywhere in `text` becomes the profile's value.
absl::StatusOr<std::string> Substitute(const std::string& text,
                                       const std::map<std::string, std::string>& vars,
                                       const std::string& profile) {
  std::string out;
  size_t at = 0;
  while (true) {
    const size_t open = text.find("${", at);
    if (open == std::string::npos) break;
    const size_t close = text.find('}', open);
    if (close == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("suite: unclosed ${ in '", text, "'"));
    }
    const std::string name = text.substr(open + 2, close - open - 2);
    auto it = vars.find(name);
    if (it == vars.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("suite: profile '", profile, "' does not set ${", name, "}"));
    }
    absl::StrAppend(&out, text.substr(at, open - at), it->second);
    at = close + 1;
  }
  absl::StrAppend(&out, text.substr(at));
  return out;
}

bool Excluded(const SuitePart& part, const SuiteCell& cell) {
  for (const auto& rule : part.exclude) {
    bool all = true;
    for (const auto& [axis, value] : rule) all &= cell.Value(axis) == value;
    if (all && !rule.empty()) return true;
  }
  return false;
}

void Merge(const SuiteNeeds& from, SuiteNeeds* into) {
  into->gpus_per_worker = std::max(into->gpus_per_worker, from.gpus_per_worker);
  into->numa_nodes = std::max(into->numa_nodes, from.numa_nodes);
  if (!from.memory_kind.empty()) into->memory_kind = from.memory_kind;
  for (const auto& [key, value] : from.worker_labels) into->worker_labels[key] = value;
  if (!from.labelled.empty()) into->labelled = from.labelled;
  if (!from.missing.empty()) into->missing = from.missing;
}

// The next combination of axis values, the last axis turning fastest;
// false after the last one.
bool Advance(const std::vector<SuiteAxis>& axes, std::vector<size_t>* index) {
  for (size_t a = axes.size(); a-- > 0;) {
    if (++(*index)[a] < axes[a].values.size()) return true;
    (*index)[a] = 0;
  }
  return false;
}


// Why too few workers carry the labels `needs` names ("" when enough do):
// the labels short of `workers_needed` workers (all of them when each is
// carried by enough workers but not together), then what such workers are.
std::string LabelShortfall(const SuiteNeeds& needs, int workers_needed,
                           const SuiteCapabilities& caps) {
  if (needs.worker_labels.empty()) return "";
  int carrying = 0;
  for (const auto& labels : caps.worker_labels) {
    carrying += CarriesLabels(labels, needs.worker_labels);
  }
  if (carrying >= workers_needed) return "";
  std::vector<std::string> short_labels, all_labels;
  for (const auto& [key, value] : needs.worker_labels) {
    const std::string label = absl::StrCat(key, "=", value);
    all_labels.push_back(label);
    int with = 0;
    for (const auto& labels : caps.worker_labels) with += CarriesLabels(labels, {{key, value}});
    if (with < workers_needed) short_labels.push_back(label);
  }
  const std::string names = absl::StrJoin(short_labels.empty() ? all_labels : short_labels, ", ");
  std::string out = carrying == 0 ? absl::StrCat("needs workers labelled ", names)
                                  : absl::StrCat("needs ", workers_needed, " workers labelled ",
                                                 names, " (only ", carrying,
                                                 carrying == 1 ? " carries" : " carry", " them)");
  if (!needs.labelled.empty()) absl::StrAppend(&out, ": ", needs.labelled);
  return out;
}
}  // namespace

std::string SuiteCell::Label() const {
  std::vector<std::string> parts;
  for (const auto& [axis, value] : key) parts.push_back(absl::StrCat(axis, "=", value));
  return absl::StrCat(part, ":", absl::StrJoin(parts, ","));
}

std::string SuiteCell::Value(const std::string& axis) const {
  for (const auto& [name, value] : key) {
    if (name == axis) return value;
  }
  return "";
}

absl::StatusOr<std::vector<SuiteCell>> ExpandSuite(const Suite& suite, const std::string& profile) {
  auto vars = suite.profiles.find(profile);
  if (vars == suite.profiles.end()) {
    std::vector<std::string> known;
    for (const auto& [name, unused] : suite.profiles) known.push_back(name);
    return absl::InvalidArgumentError(absl::StrCat("suite ", suite.name, ": no profile '",
                                                   profile, "' (", absl::StrJoin(known, ", "),
                                                   ")"));
  }
  std::vector<SuiteCell> cells;
  for (const SuitePart& part : suite.parts) {
    // Odometer over the axes, the last one turning fastest.
    std::vector<size_t> index(part.axes.size(), 0);
    do {
      SuiteCell cell;
      cell.part = part.name;
      cell.operation = part.operation;
      std::vector<std::string> raw = part.flags;
      bool in_profile = true;
      for (size_t a = 0; a < part.axes.size(); ++a) {
        const SuiteAxisValue& v = part.axes[a].values[index[a]];
        for (const std::string& p : v.profiles) {
          if (suite.profiles.count(p) == 0) {
            return absl::InvalidArgumentError(absl::StrCat(
                "suite ", suite.name, ": axis ", part.axes[a].name, " value ", v.value,
                " names profile '", p, "', which the suite does not have"));
          }
        }
        if (!v.profiles.empty()) {
          in_profile &= std::find(v.profiles.begin(), v.profiles.end(), profile) != v.profiles.end();
        }
        cell.key.emplace_back(part.axes[a].name, v.value);
        if (!v.operation.empty()) cell.operation = v.operation;
        raw.insert(raw.end(), v.flags.begin(), v.flags.end());
        Merge(v.needs, &cell.needs);
      }
      if (cell.operation.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("suite ", suite.name, ": cell ", cell.Label(), " has no operation"));
      }
      for (const std::string& flag : raw) {
        absl::StatusOr<std::string> text = Substitute(flag, vars->second, profile);
        if (!text.ok()) return text.status();
        cell.flags.push_back(*text);
      }
      if (in_profile && !Excluded(part, cell)) cells.push_back(cell);
    } while (Advance(part.axes, &index));
  }
  return cells;
}

bool CarriesLabels(const std::map<std::string, std::string>& labels,
                   const std::map<std::string, std::string>& needed) {
  for (const auto& [key, value] : needed) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  return true;
}

std::string SkipReason(const SuiteCell& cell, int ranks, int per_worker,
                       const SuiteCapabilities& caps) {
  const SuiteNeeds& n = cell.needs;
  if (!n.missing.empty()) return n.missing;
  if (n.gpus_per_worker > caps.max_gpus_per_worker) {
    return absl::StrCat("needs ", n.gpus_per_worker, " GPU", n.gpus_per_worker > 1 ? "s" : "",
                        " on a worker");
  }
  if (!n.memory_kind.empty() && caps.memory_kinds.count(n.memory_kind) == 0) {
    return absl::StrCat("needs --memory ", n.memory_kind, " (no worker offers it)");
  }
  if (n.numa_nodes > caps.max_numa_nodes) {
    return absl::StrCat("needs ", n.numa_nodes, " NUMA nodes on a host");
  }
  const int workers_needed = (ranks + per_worker - 1) / std::max(per_worker, 1);
  if (std::string labels = LabelShortfall(n, workers_needed, caps); !labels.empty()) {
    return labels;
  }
  if (per_worker > caps.max_slots) {
    return absl::StrCat("needs a worker with ", per_worker, " slots (the largest has ",
                        caps.max_slots, "; e.g. collbench local --slots ", per_worker, ")");
  }
  if (workers_needed > caps.workers) {
    return absl::StrCat("needs ", workers_needed, " workers (", caps.workers, " registered)");
  }
  return "";
}

const std::vector<Suite>& BuiltinSuites() {
  static const std::vector<Suite>* suites = [] {
    auto* list = new std::vector<Suite>;
    for (const EmbeddedSuite& embedded : EmbeddedSuites()) {
      absl::StatusOr<Suite> suite = ParseSuite(embedded.json);
      // The suites are checked by the unit tests; a broken one is a build
      // error in spirit, so it is left out rather than crashing the CLI.
      if (suite.ok()) list->push_back(*std::move(suite));
    }
    return list;
  }();
  return *suites;
}

absl::StatusOr<Suite> FindSuite(const std::string& name) {
  std::vector<std::string> names;
  for (const Suite& suite : BuiltinSuites()) {
    if (suite.name == name) return suite;
    names.push_back(suite.name);
  }
  return absl::NotFoundError(
      absl::StrCat("no suite '", name, "' (", absl::StrJoin(names, ", "), ")"));
}

absl::StatusOr<SuiteView> ViewSuiteRun(const std::vector<RunWithResults>& runs) {
  if (runs.empty()) return absl::NotFoundError("the suite run has no runs");
  const auto& labels = runs.front().run.spec().labels();
  auto name = labels.find("suite");
  auto profile = labels.find("suite-profile");
  if (name == labels.end() || profile == labels.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(runs.front().run.name(), " carries no suite and suite-profile labels"));
  }
  absl::StatusOr<Suite> suite = FindSuite(name->second);
  if (!suite.ok()) return suite.status();
  absl::StatusOr<std::vector<SuiteCell>> cells = ExpandSuite(*suite, profile->second);
  if (!cells.ok()) return cells.status();
  SuiteOutcome outcome;
  for (const RunWithResults& run : runs) {
    auto cell = run.run.spec().labels().find("suite-cell");
    if (cell != run.run.spec().labels().end()) outcome.runs[cell->second] = run;
  }
  return SuiteView{*suite, profile->second, RenderSuite(*suite, *cells, outcome)};
}

std::string SuiteHeader(const Suite& suite, const std::string& profile) {
  std::string out = absl::StrCat("# suite ", suite.name, " (profile ", profile, ")\n");
  if (!suite.paper.empty()) absl::StrAppend(&out, "# seed ", suite.seed, ": ", suite.paper, "\n");
  if (!suite.question.empty()) absl::StrAppend(&out, "# question: ", suite.question, "\n");
  for (const std::string& note : suite.notes) absl::StrAppend(&out, "# ", note, "\n");
  return out;
}

}  // namespace collbench
