#include "client/suite_command.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "analysis/suite.h"
#include "client/format.h"
#include "client/run_flags.h"
#include "common/flag_parser.h"

namespace collbench {
namespace {

constexpr char kUsage[] = R"(usage: collbench suite list
       collbench suite run NAME [--profile ci|paper] [--dry-run]
       collbench suite show ID
A suite is one seed paper's experiment (the seeds are the five published
studies collbench reproduces; docs/suites.md names them): the runs it makes,
its tables and the paper's values, with a column saying whether this run
agrees.
)";

// The workers at hand, as a suite needs to know them.
struct Fleet {
  SuiteCapabilities caps;
  std::vector<std::string> ready;  // READY worker names, sorted
  std::map<std::string, std::map<std::string, std::string>> labels;  // by READY worker name
  std::set<std::string> hosts;
  int in_containers = 0;
};

absl::StatusOr<Fleet> ReadFleet(CoordinatorClient& client) {
  v1::ListWorkersRequest request;
  request.set_page_size(1000);
  v1::ListWorkersResponse response;
  if (absl::Status s = client.Call(&v1::Coordinator::Stub::ListWorkers, request, &response);
      !s.ok()) {
    return s;
  }
  Fleet fleet;
  bool first = true;
  for (const v1::Worker& w : response.workers()) {
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

// A cell's run request. `--groups K` (a suite's own flag) puts the ranks on
// K workers, ranks/K each: K "containers"; it needs the fleet's names. A
// cell that needs worker labels is placed on workers carrying them.
struct CellRun {
  v1::RunSpec spec;
  int per_worker = 1;
};

absl::StatusOr<CellRun> PrepareCell(const SuiteCell& cell, const Fleet& fleet,
                                    const std::map<std::string, std::string>& labels) {
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
  for (const auto& [key, value] : labels) flags.insert(flags.end(), {"--label", key + "=" + value});
  absl::StatusOr<RunRequest> request = ParseRunFlags(flags);
  if (!request.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(cell.Label(), ": ", request.status().message()));
  }
  CellRun out{request->spec, 1};
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

// Prints the tables and a closing line counting agreement.
void PrintTables(const std::vector<Table>& tables) {
  int yes = 0, no = 0;
  for (const Table& t : tables) {
    absl::PrintF("\n%s", FormatTableText(t));
    auto col = std::find(t.columns.begin(), t.columns.end(), "agrees");
    if (col == t.columns.end()) continue;
    for (const auto& row : t.rows) {
      const std::string& cell = row[col - t.columns.begin()];
      for (size_t at = 0; (at = cell.find("yes", at)) != std::string::npos; ++at) ++yes;
      for (size_t at = 0; (at = cell.find("no ", at)) != std::string::npos; ++at) ++no;
    }
  }
  absl::PrintF("\n# paper checks: %d agree, %d disagree\n", yes, no);
}

std::string NewSuiteRunId(const std::string& name) {
  return absl::StrCat(name, "-",
                      absl::FormatTime("%Y%m%d-%H%M%S", absl::Now(), absl::UTCTimeZone()));
}

int List() {
  Table table{"", "built-in suites", {"suite", "seed", "parts", "cells(ci)", "question"}, {}, {}};
  for (const Suite& suite : BuiltinSuites()) {
    absl::StatusOr<std::vector<SuiteCell>> cells = ExpandSuite(suite, "ci");
    table.rows.push_back({suite.name, suite.seed, absl::StrCat(suite.parts.size()),
                          cells.ok() ? absl::StrCat(cells->size()) : "?", suite.question});
  }
  std::fputs(FormatTableText(table).c_str(), stdout);
  return kExitOk;
}

int RunSuite(CoordinatorClient& client, const std::vector<std::string>& args) {
  std::string profile = "ci";
  bool dry_run = false;
  FlagParser flags;
  flags.String("profile", &profile, "ci (minutes on 2 cores) or paper (the paper's sizes)");
  flags.Bool("dry-run", &dry_run, "print the cells and why any would be skipped; run nothing");
  if (absl::Status s = flags.Parse(args); !s.ok()) return Report(s);
  if (flags.rest().size() != 1) {
    return Report(absl::InvalidArgumentError("usage: suite run NAME [--profile ci|paper]"));
  }
  absl::StatusOr<Suite> suite = FindSuite(flags.rest()[0]);
  if (!suite.ok()) return Report(suite.status());
  absl::StatusOr<std::vector<SuiteCell>> cells = ExpandSuite(*suite, profile);
  if (!cells.ok()) return Report(cells.status());
  absl::StatusOr<Fleet> fleet = ReadFleet(client);
  if (!fleet.ok()) return Report(fleet.status());
  const std::string id = NewSuiteRunId(suite->name);

  // Every cell is checked before anything runs.
  std::vector<CellRun> prepared;
  SuiteOutcome outcome;
  for (const SuiteCell& cell : *cells) {
    absl::StatusOr<CellRun> run = PrepareCell(
        cell, *fleet,
        {{"suite", suite->name}, {"suite-run", id}, {"suite-profile", profile},
         {"suite-cell", cell.Label()}});
    if (!run.ok()) return Report(run.status());
    const std::string reason = SkipReason(cell, run->spec.ranks(), run->per_worker, fleet->caps);
    if (!reason.empty()) outcome.skipped[cell.Label()] = reason;
    prepared.push_back(*std::move(run));
  }
  std::fputs(SuiteHeader(*suite, profile).c_str(), stdout);
  absl::PrintF("# suite run: %s\n# %s\n", id, FleetNote(*fleet));
  const int to_run = static_cast<int>(cells->size() - outcome.skipped.size());
  absl::FPrintF(stderr, "suite %s: %d cells, %d to run, %d skipped\n", suite->name,
                cells->size(), to_run, outcome.skipped.size());
  if (dry_run) {
    for (const SuiteCell& cell : *cells) {
      auto skipped = outcome.skipped.find(cell.Label());
      absl::PrintF("%s  %s %s%s\n", cell.Label(), cell.operation, absl::StrJoin(cell.flags, " "),
                   skipped == outcome.skipped.end() ? "" : "  # skipped: " + skipped->second);
    }
    return kExitOk;
  }
  const absl::Time start = absl::Now();
  int done = 0, failed = 0;
  for (size_t i = 0; i < cells->size(); ++i) {
    const SuiteCell& cell = (*cells)[i];
    if (outcome.skipped.count(cell.Label())) continue;
    const absl::Time cell_start = absl::Now();
    absl::FPrintF(stderr, "[%d/%d] %s ...", ++done, to_run, cell.Label());
    v1::CreateRunRequest create;
    *create.mutable_spec() = prepared[i].spec;
    v1::Run run;
    absl::Status s = client.Call(&v1::Coordinator::Stub::CreateRun, create, &run);
    if (!s.ok()) {
      absl::FPrintF(stderr, " not accepted: %s\n", s.message());
      outcome.skipped[cell.Label()] = absl::StrCat("not accepted: ", s.message());
      continue;
    }
    absl::StatusOr<v1::Run> ended = client.Watch(run.name(), [](const v1::RunEvent&) {});
    if (!ended.ok()) return Report(ended.status());
    absl::StatusOr<RunWithResults> full = Fetch(client, run.name());
    if (!full.ok()) return Report(full.status());
    failed += full->run.state() == v1::SUCCEEDED ? 0 : 1;
    absl::FPrintF(stderr, " %s %s, %.1f s%s\n", run.name(), RunStateName(full->run.state()),
                  absl::ToDoubleSeconds(absl::Now() - cell_start),
                  full->run.error().empty() ? "" : ": " + full->run.error());
    outcome.runs[cell.Label()] = *std::move(full);
  }
  PrintTables(RenderSuite(*suite, *cells, outcome));
  absl::PrintF("# %d runs (%d failed), %d skipped, %.0f s; %s\n", outcome.runs.size(), failed,
               outcome.skipped.size(), absl::ToDoubleSeconds(absl::Now() - start),
               client.follow_up().Line("again", {"suite", "show", id}));
  return failed == 0 ? kExitOk : kExitFailed;
}

int Show(CoordinatorClient& client, const std::vector<std::string>& args) {
  if (args.size() != 1) return Report(absl::InvalidArgumentError("usage: suite show ID"));
  absl::StatusOr<std::vector<RunWithResults>> runs = FetchLabelled(client, "suite-run", args[0]);
  if (!runs.ok()) return Report(runs.status());
  absl::StatusOr<SuiteView> view = ViewSuiteRun(*runs);
  if (!view.ok()) return Report(view.status());
  std::fputs(SuiteHeader(view->suite, view->profile).c_str(), stdout);
  absl::PrintF("# suite run: %s (%d runs)\n", args[0], runs->size());
  PrintTables(view->tables);
  return kExitOk;
}

}  // namespace

int SuiteCommand(CoordinatorClient& client, const std::vector<std::string>& args) {
  if (args.empty() || AsksForHelp(args)) {  // `suite show --help` too
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? kExitUsage : kExitOk;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "list") return List();
  if (args[0] == "run") return RunSuite(client, rest);
  if (args[0] == "show") return Show(client, rest);
  return Report(absl::InvalidArgumentError(
      absl::StrCat("suite: unknown subcommand '", args[0], "' (list, run, show)")));
}

}  // namespace collbench
