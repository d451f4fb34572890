// SPDX-License-Identifier: Apache-2.0
#include "server/workflows/workflow_plan.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "analysis/algorithms.h"
#include "analysis/suite.h"
#include "api/capabilities.h"
#include "api/run_flags.h"
#include "common/status_macros.h"
#include "flavors/registry.h"
#include "server/core/request_bounds.h"

namespace collbench::workflows {
namespace {

void AddLabels(v1::RunSpec* spec, const v1::WorkflowSpec& workflow,
               const std::vector<std::pair<std::string, std::string>>& labels) {
  for (const auto& [key, value] : workflow.labels()) (*spec->mutable_labels())[key] = value;
  for (const auto& [key, value] : labels) (*spec->mutable_labels())[key] = value;
}

v1::WorkflowCell Cell(std::string label, v1::RunSpec spec, std::string skipped = "") {
  v1::WorkflowCell cell;
  cell.set_label(std::move(label));
  *cell.mutable_spec() = std::move(spec);
  cell.set_skipped(std::move(skipped));
  return cell;
}

// --- Matrix ------------------------------------------------------------------

using CellKey = std::array<std::string, 4>;  // operation, placement, transport, MPI

// The list's values (an item may hold several, comma-separated), each once
// where first given; `fallback` when it names none.
std::vector<std::string> OrDefault(const google::protobuf::RepeatedPtrField<std::string>& list,
                                   std::vector<std::string> fallback) {
  std::vector<std::string> out;
  std::set<std::string, std::less<>> seen;
  for (const std::string& item : list) {
    for (absl::string_view part : absl::StrSplit(item, ',', absl::SkipEmpty())) {
      if (seen.insert(std::string(part)).second) out.emplace_back(part);
    }
  }
  return out.empty() ? fallback : out;
}

using MatrixAxes = std::array<std::pair<const char*, std::vector<std::string>>, 4>;

// The matrix's four lists, defaults filled in, in CellKey's order.
MatrixAxes AxesOf(const v1::MatrixSpec& m) {
  std::vector<std::string> default_ops = {"allreduce", "bcast", "gather"};
  if (!m.base().operation().empty()) default_ops = {m.base().operation()};
  return {{
      {"operations", OrDefault(m.operations(), default_ops)},
      {"placements", OrDefault(m.placements(), {"pack", "spread"})},
      {"transports", OrDefault(m.transports(), {"shm", "tcp"})},
      {"mpis", OrDefault(m.mpis(), {std::string(Flavors().Default().name())})},
  }};
}

// `base` with one combination's operation, placement policy, transport and
// MPI library, each named as the run flags name them (api/run_flags.h).
absl::StatusOr<v1::RunSpec> MatrixCellSpec(const v1::RunSpec& base, const CellKey& key) {
  v1::RunSpec spec = base;
  spec.set_operation(key[0]);
  ASSIGN_OR_RETURN(const v1::PlacementPolicy policy, PlacementPolicyNamed(key[1]));
  spec.mutable_placement()->set_policy(policy);
  ASSIGN_OR_RETURN(const v1::Transport transport, TransportNamed(key[2]));
  spec.set_transport(transport);
  ASSIGN_OR_RETURN(const v1::MpiImplementation mpi, MpiNamed(key[3]));
  spec.set_mpi(mpi);
  return spec;
}

// An axis value's name, checked as the axis names it.
absl::Status CheckAxisValue(size_t axis, const std::string& value) {
  switch (axis) {
    case 1:
      return PlacementPolicyNamed(value).status();
    case 2:
      return TransportNamed(value).status();
    case 3:
      return MpiNamed(value).status();
    default:  // operations: judged by the check of each combination
      return absl::OkStatus();
  }
}

absl::StatusOr<Plan> PlanMatrix(const v1::WorkflowSpec& workflow, const std::string& id,
                                const RunChecker& check) {
  const v1::MatrixSpec& m = workflow.matrix();
  const MatrixAxes axes = AxesOf(m);
  // A value that does not parse (a misspelled placement, transport or
  // library) is named on its own, before any combination is judged.
  for (size_t axis = 1; axis < axes.size(); ++axis) {
    for (const std::string& value : axes[axis].second) {
      if (absl::Status named = CheckAxisValue(axis, value); !named.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("spec.matrix.", axes[axis].first, ": '",
                                                       value, "': ", named.message()));
      }
    }
  }
  Plan plan;
  std::map<CellKey, absl::Status> verdicts;
  for (const std::string& op : axes[0].second) {
    for (const std::string& placement : axes[1].second) {
      for (const std::string& transport : axes[2].second) {
        for (const std::string& mpi : axes[3].second) {
          const CellKey key = {op, placement, transport, mpi};
          const std::string config = absl::StrCat(mpi, "/", placement, "/", transport);
          absl::StatusOr<v1::RunSpec> spec = MatrixCellSpec(m.base(), key);
          absl::Status verdict = spec.ok() ? check(*spec) : spec.status();
          v1::RunSpec planned = spec.ok() ? *spec : m.base();
          AddLabels(&planned, workflow, {{"workflow", id}, {"matrix-config", config}});
          plan.cells.push_back(Cell(absl::StrCat(op, " ", config), std::move(planned),
                                    verdict.ok() ? "" : std::string(verdict.message())));
          verdicts[key] = std::move(verdict);
        }
      }
    }
  }
  // A value no combination can run (a typo) refuses the matrix whole; a
  // combination that cannot be (Open MPI's shm across workers) is skipped.
  for (size_t axis = 0; axis < axes.size(); ++axis) {
    for (const std::string& value : axes[axis].second) {
      const absl::Status* first_refusal = nullptr;
      bool runs_somewhere = false;
      for (const auto& [key, status] : verdicts) {
        if (key[axis] != value) continue;
        runs_somewhere = runs_somewhere || status.ok();
        if (!status.ok() && first_refusal == nullptr) first_refusal = &status;
      }
      if (!runs_somewhere && first_refusal != nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("spec.matrix.", axes[axis].first, ": '",
                                                       value, "' fits no combination: ",
                                                       first_refusal->message()));
      }
    }
  }
  return plan;
}

// --- Sweep -------------------------------------------------------------------

absl::StatusOr<Plan> PlanSweep(const v1::WorkflowSpec& workflow, const std::string& id,
                               const RunChecker& check) {
  const v1::RunSpec& base = workflow.sweep().base();
  const std::string& op = base.operation();
  if (op.empty()) {
    return absl::InvalidArgumentError("spec.sweep.base.operation: name the collective to sweep");
  }
  const std::string library = MpiName(base.mpi());
  if (!base.backend().empty() && base.backend() != "mpi") {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.sweep.base.backend: algorithms are chosen for the mpi backend; ",
                     base.backend(), " has none to sweep"));
  }
  const MpiFlavor& flavor = FlavorFor(base.mpi());
  const std::vector<std::string>& offered = flavor.Algorithms(op);
  if (offered.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.sweep.base.operation: ", library, " offers no algorithm choice for ", op));
  }
  for (const auto& [key, value] : base.env()) {
    if (IsAlgorithmVariable(key)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spec.sweep.base.env: ", key, " sets the algorithm the sweep varies; leave it out"));
    }
  }
  std::vector<std::string> algorithms = {""};  // the library's own choice first
  const std::vector<std::string> only = OrDefault(workflow.sweep().algorithms(), {});
  if (only.empty()) {
    algorithms.insert(algorithms.end(), offered.begin(), offered.end());
  }
  for (const std::string& name : only) {
    if (std::find(offered.begin(), offered.end(), name) == offered.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.sweep.algorithms: ", library, " has no ", op, " algorithm '", name,
                       "' (it has ", absl::StrJoin(offered, ", "), ")"));
    }
    algorithms.push_back(name);
  }
  Plan plan;
  for (const std::string& algorithm : algorithms) {
    v1::RunSpec spec = base;
    if (!algorithm.empty()) {
      for (const auto& [key, value] : flavor.AlgorithmEnv(op, algorithm)) {
        (*spec.mutable_env())[key] = value;
      }
    }
    AddLabels(&spec, workflow, {{"workflow", id}, {"sweep", id}});
    if (absl::Status s = check(spec); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("spec.sweep.base: ", s.message()));
    }
    plan.cells.push_back(
        Cell(absl::StrCat(op, " ", algorithm.empty() ? "default" : algorithm), std::move(spec)));
  }
  plan.header.push_back(absl::StrFormat("sweep %s: %s %s, %d runs (the library's choice and %d "
                                        "algorithms)",
                                        id, library, op, algorithms.size(),
                                        algorithms.size() - 1));
  return plan;
}

// --- Suite -------------------------------------------------------------------

// The workers at hand, as a suite needs to know them.
struct Fleet {
  SuiteCapabilities caps;
  std::vector<std::string> ready;  // READY worker names, sorted
  std::map<std::string, std::map<std::string, std::string>> labels;  // by READY worker name
  std::set<std::string> hosts;
  int in_containers = 0;
};

Fleet ReadFleet(const std::vector<v1::Worker>& workers) {
  Fleet fleet;
  bool first = true;
  for (const v1::Worker& w : workers) {
    if (w.state() != v1::READY) continue;
    const v1::Inventory& inv = w.inventory();
    fleet.ready.push_back(w.name());
    fleet.labels[w.name()] = {inv.labels().begin(), inv.labels().end()};
    fleet.caps.worker_labels.push_back(fleet.labels[w.name()]);
    fleet.hosts.insert(inv.host_id());
    fleet.in_containers += inv.in_container() ? 1 : 0;
    SuiteCapabilities& c = fleet.caps;
    ++c.workers;
    c.max_slots = std::max(c.max_slots, w.slots());
    c.max_gpus_per_worker = std::max(c.max_gpus_per_worker, inv.gpus_size());
    c.max_numa_nodes = std::max(c.max_numa_nodes, inv.numa_nodes_size());
    std::set<std::string> kinds(inv.memory_kinds().begin(), inv.memory_kinds().end());
    if (first) {
      c.memory_kinds = kinds;
    } else {
      std::set<std::string> both;
      for (const std::string& k : c.memory_kinds) {
        if (kinds.count(k)) both.insert(k);
      }
      c.memory_kinds = both;
    }
    first = false;
  }
  std::sort(fleet.ready.begin(), fleet.ready.end());
  return fleet;
}

// The READY workers a cell may run on, sorted: those carrying the labels it
// needs (all of them when it needs none).
std::vector<std::string> CellWorkers(const SuiteCell& cell, const Fleet& fleet) {
  std::vector<std::string> out;
  for (const std::string& name : fleet.ready) {
    if (CarriesLabels(fleet.labels.at(name), cell.needs.worker_labels)) out.push_back(name);
  }
  return out;
}

// Places `ranks` on the first of `workers`, `per_worker` each (EXPLICIT).
// Too few workers leave the placement short; SkipReason skips such a cell.
void PlaceOn(const std::vector<std::string>& workers, int ranks, int per_worker,
             v1::Placement* placement) {
  placement->set_policy(v1::EXPLICIT);
  placement->set_ranks_per_worker(per_worker);
  placement->clear_workers();
  const int count = (ranks + per_worker - 1) / std::max(per_worker, 1);
  for (int i = 0; i < count && i < static_cast<int>(workers.size()); ++i) {
    placement->add_workers(workers[i]);
  }
}

struct CellRun {
  v1::RunSpec spec;
  int per_worker = 1;
};

// A cell's run. `--groups K` (a suite's own flag) puts the ranks on K
// workers, ranks/K each: K "containers"; it needs the fleet's names. A
// cell that needs worker labels is placed on workers carrying them.
absl::StatusOr<CellRun> PrepareCell(const SuiteCell& cell, const Fleet& fleet) {
  std::vector<std::string> flags = {cell.operation};
  int groups = 0;
  for (size_t i = 0; i < cell.flags.size(); ++i) {
    if (cell.flags[i] == "--groups" && i + 1 < cell.flags.size()) {
      if (!absl::SimpleAtoi(cell.flags[++i], &groups) || groups < 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(cell.Label(), ": --groups wants a positive count"));
      }
      continue;
    }
    flags.push_back(cell.flags[i]);
  }
  // A suite's cells are written in the run flags' words (its data, not
  // words made up here).
  absl::StatusOr<v1::RunSpec> spec = SpecFromRunFlags(flags);
  if (!spec.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(cell.Label(), ": ", spec.status().message()));
  }
  CellRun out{*std::move(spec), 1};
  const int ranks = out.spec.ranks();
  if (groups > 0) {
    if (ranks % groups != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(cell.Label(), ": ", ranks, " ranks do not split into ", groups, " groups"));
    }
    out.per_worker = ranks / groups;
    PlaceOn(CellWorkers(cell, fleet), ranks, out.per_worker, out.spec.mutable_placement());
  } else if (out.spec.placement().policy() == v1::EXPLICIT) {
    out.per_worker = out.spec.placement().ranks_per_worker();
  } else if (out.spec.placement().policy() == v1::SPREAD) {
    out.per_worker = 1;
  } else {
    out.per_worker = ranks;  // pack: the suite means "all in one container"
  }
  if (!cell.needs.worker_labels.empty() && groups == 0 &&
      out.spec.placement().policy() != v1::EXPLICIT) {
    PlaceOn(CellWorkers(cell, fleet), ranks, out.per_worker, out.spec.mutable_placement());
  }
  return out;
}

std::string FleetNote(const Fleet& fleet) {
  std::string note = absl::StrFormat("workers: %d ready on %d host%s", fleet.caps.workers,
                                     fleet.hosts.size(), fleet.hosts.size() == 1 ? "" : "s");
  if (fleet.in_containers == 0) {
    absl::StrAppend(&note, ", none in a container: a \"container\" row uses separate workers ",
                    "on the same host (same kernel and IPC namespace), not real containers");
  } else {
    absl::StrAppend(&note, ", ", fleet.in_containers, " in containers");
  }
  return note;
}


absl::StatusOr<Plan> PlanSuite(const v1::WorkflowSpec& workflow, const std::string& id,
                               const std::vector<v1::Worker>& workers, const RunChecker& check) {
  const std::string profile = SuiteProfile(workflow.suite());
  absl::StatusOr<Suite> suite = FindSuite(workflow.suite().suite());
  if (!suite.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("spec.suite.suite: ", suite.status().message()));
  }
  absl::StatusOr<std::vector<SuiteCell>> cells = ExpandSuite(*suite, profile);
  if (!cells.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.suite.profile: ", cells.status().message()));
  }
  const Fleet fleet = ReadFleet(workers);
  Plan plan;
  for (const SuiteCell& cell : *cells) {
    absl::StatusOr<CellRun> run = PrepareCell(cell, fleet);
    if (!run.ok()) return run.status();
    AddLabels(&run->spec, workflow,
              {{"workflow", id}, {"suite", suite->name}, {"suite-run", id},
               {"suite-profile", profile}, {"suite-cell", cell.Label()}});
    std::string skipped = SkipReason(cell, run->spec.ranks(), run->per_worker, fleet.caps);
    if (skipped.empty()) {
      if (absl::Status s = check(run->spec); !s.ok()) {
        skipped = absl::StrCat("not accepted: ", s.message());
      }
    }
    plan.cells.push_back(Cell(cell.Label(), std::move(run->spec), std::move(skipped)));
  }
  for (absl::string_view line : absl::StrSplit(SuiteHeader(*suite, profile), '\n',
                                               absl::SkipEmpty())) {
    plan.header.emplace_back(line);
  }
  plan.header.push_back(absl::StrCat("# suite run: ", id));
  plan.header.push_back(absl::StrCat("# ", FleetNote(fleet)));
  return plan;
}

}  // namespace

std::string SuiteProfile(const v1::SuiteSpec& spec) {
  return spec.profile().empty() ? "ci" : spec.profile();
}

absl::StatusOr<std::string> KindOf(const v1::WorkflowSpec& spec) {
  switch (spec.kind_case()) {
    case v1::WorkflowSpec::kMatrix:
      return std::string("matrix");
    case v1::WorkflowSpec::kSuite:
      return std::string("suite");
    case v1::WorkflowSpec::kSweep:
      return std::string("sweep");
    case v1::WorkflowSpec::kAdvice:
      return std::string("advice");
    case v1::WorkflowSpec::kReport:
      return std::string("report");
    case v1::WorkflowSpec::kCheck:
      return std::string("check");
    case v1::WorkflowSpec::kHunt:
      return std::string("hunt");
    case v1::WorkflowSpec::KIND_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      "spec: set one of matrix, suite, sweep, advice, report, check or hunt (the workflow's kind)");
}

uint64_t CountCells(const v1::WorkflowSpec& spec) {
  switch (spec.kind_case()) {
    case v1::WorkflowSpec::kMatrix: {
      std::vector<uint64_t> sizes;
      for (const auto& [field, values] : AxesOf(spec.matrix())) sizes.push_back(values.size());
      return SaturatingProduct(sizes);
    }
    case v1::WorkflowSpec::kSweep: {
      const v1::RunSpec& base = spec.sweep().base();
      const size_t only = OrDefault(spec.sweep().algorithms(), {}).size();
      return 1 + (only > 0 ? only : FlavorFor(base.mpi()).Algorithms(base.operation()).size());
    }
    case v1::WorkflowSpec::kSuite: {
      absl::StatusOr<Suite> suite = FindSuite(spec.suite().suite());
      if (!suite.ok()) return 0;
      absl::StatusOr<std::vector<SuiteCell>> cells =
          ExpandSuite(*suite, SuiteProfile(spec.suite()));
      return cells.ok() ? cells->size() : 0;
    }
    default:
      return 0;
  }
}

namespace {
// The plan of the spec's kind.
absl::StatusOr<Plan> PlanKind(const v1::WorkflowSpec& spec, const std::string& id,
                              const std::vector<v1::Worker>& workers, const RunChecker& check);
}  // namespace

absl::StatusOr<Plan> PlanWorkflow(const v1::WorkflowSpec& spec, const std::string& id,
                                  const std::vector<v1::Worker>& workers,
                                  const RunChecker& check) {
  if (spec.workers().empty()) return PlanKind(spec, id, workers, check);
  if (absl::Status valid = ValidateWorkerSelector(spec.workers(), "spec.workers"); !valid.ok()) {
    return valid;
  }
  // Every cell runs on the selected workers (a cell that names its own
  // keeps them), and is checked as it will run.
  auto select = [&spec](v1::RunSpec run) {
    if (run.workers().empty()) run.set_workers(spec.workers());
    return run;
  };
  absl::StatusOr<Plan> plan = PlanKind(
      spec, id, workers, [&](const v1::RunSpec& run) { return check(select(run)); });
  if (!plan.ok()) return plan;
  for (v1::WorkflowCell& cell : plan->cells) *cell.mutable_spec() = select(cell.spec());
  return plan;
}

namespace {
absl::StatusOr<Plan> PlanKind(const v1::WorkflowSpec& spec, const std::string& id,
                              const std::vector<v1::Worker>& workers, const RunChecker& check) {
  switch (spec.kind_case()) {
    case v1::WorkflowSpec::kMatrix:
      return PlanMatrix(spec, id, check);
    case v1::WorkflowSpec::kSuite:
      return PlanSuite(spec, id, workers, check);
    case v1::WorkflowSpec::kSweep:
      return PlanSweep(spec, id, check);
    case v1::WorkflowSpec::kAdvice:
    case v1::WorkflowSpec::kReport:
    case v1::WorkflowSpec::kCheck:
    case v1::WorkflowSpec::kHunt:  // hunts.h plans a hunt
      return Plan{};
    case v1::WorkflowSpec::KIND_NOT_SET:
      break;
  }
  return KindOf(spec).status();
}
}  // namespace

}  // namespace collbench::workflows
