// SPDX-License-Identifier: Apache-2.0
#include "client/workflow_client.h"

#include <cstdio>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "analysis/table.h"
#include "api/convert.h"
#include "client/format.h"
#include "google/protobuf/empty.pb.h"

namespace collbench {
namespace {

constexpr char kWorkflowsUsage[] = R"(usage: collbench workflows [list] [--kind KIND]
       collbench workflows show ID
       collbench workflows watch ID
       collbench workflows cancel ID
       collbench workflows delete ID
Workflows are the coordinator's multi-run work: matrices, suite runs, sweeps,
advice and reports (collbench matrix, suite run, sweep, advise, report make
them; a portal makes them with POST /v1/workflows). The coordinator runs them,
one run at a time, and keeps them: show prints one's tables, watch follows it,
cancel stops it and its run in progress, delete forgets a finished one (its
runs stay).
)";

// Prints what changed between two versions: each cell that was skipped or
// whose run ended, once. A hunt's cells are its current round's runs, so a
// cell is known by its round and place.
class Progress {
 public:
  void Show(const v1::Workflow& workflow) {
    const int total = workflow.cells_total();
    for (int i = 0; i < workflow.cells_size(); ++i) {
      const v1::WorkflowCell& cell = workflow.cells(i);
      const int64_t key = int64_t{cell.round()} << 32 | i;
      if (said_.count(key)) continue;
      if (!cell.skipped().empty()) {
        said_.insert(key);
        absl::FPrintF(stderr, "[%d/%d] %s ... skipped: %s\n", ++count_, total, cell.label(),
                      cell.skipped());
        continue;
      }
      if (!cell.run().empty() && !started_.count(key)) started_[key] = absl::Now();
      const bool ended = IsFinalRunState(cell.state()) || (cell.run().empty() && !cell.error().empty());
      if (!ended) continue;
      said_.insert(key);
      const double took_s =
          started_.count(key) ? absl::ToDoubleSeconds(absl::Now() - started_[key]) : 0.0;
      absl::FPrintF(stderr, "[%d/%d] %s ... %s %s, %.1f s%s\n", ++count_, total, cell.label(),
                    cell.run().empty() ? "(no run)" : cell.run(), RunStateName(cell.state()),
                    took_s, cell.error().empty() ? "" : ": " + cell.error());
    }
  }

 private:
  std::set<int64_t> said_;
  std::map<int64_t, absl::Time> started_;
  int count_ = 0;
};

}  // namespace

std::string WorkflowName(const std::string& text) {
  return absl::StartsWith(text, "workflows/") ? text : absl::StrCat("workflows/", text);
}

std::string WorkflowId(const std::string& name) {
  absl::string_view id = name;
  absl::ConsumePrefix(&id, "workflows/");
  return std::string(id);
}

absl::StatusOr<v1::Workflow> RunWorkflow(CoordinatorClient& client, const v1::WorkflowSpec& spec) {
  v1::CreateWorkflowRequest create;
  *create.mutable_spec() = spec;
  v1::Workflow created;
  if (absl::Status s = client.Call(&v1::Coordinator::Stub::CreateWorkflow, create, &created);
      !s.ok()) {
    return s;
  }
  absl::FPrintF(stderr, "%s: %s, %d runs planned\n", created.name(), created.kind(),
                created.cells_total());
  Progress progress;
  progress.Show(created);
  return client.FollowWorkflow(created.name(),
                               [&](const v1::Workflow& w) { progress.Show(w); });
}

void PrintWorkflowOutput(const v1::Workflow& workflow) {
  for (const std::string& line : workflow.output().header()) absl::PrintF("%s\n", line);
  for (const v1::OutputTable& table : workflow.output().tables()) {
    absl::PrintF("\n%s", FormatTableText(TableFromProto(table)));
  }
}

absl::StatusOr<v1::Workflow> GetWorkflow(CoordinatorClient& client, const std::string& text) {
  v1::GetWorkflowRequest request;
  request.set_name(WorkflowName(text));
  v1::Workflow workflow;
  if (absl::Status s = client.Call(&v1::Coordinator::Stub::GetWorkflow, request, &workflow);
      !s.ok()) {
    return s;
  }
  return workflow;
}

absl::StatusOr<std::vector<RunWithResults>> FetchWorkflowRuns(CoordinatorClient& client,
                                                              const v1::Workflow& workflow) {
  std::vector<RunWithResults> runs;
  for (const v1::WorkflowCell& cell : workflow.cells()) {
    if (cell.run().empty()) continue;
    absl::StatusOr<RunWithResults> run = Fetch(client, cell.run());
    if (!run.ok()) return run.status();
    runs.push_back(*std::move(run));
  }
  return runs;
}

int WorkflowsCommand(CoordinatorClient& client, const std::vector<std::string>& args) {
  if (AsksForHelp(args)) {
    std::fputs(kWorkflowsUsage, stdout);
    return kExitOk;
  }
  const std::string sub = args.empty() ? "list" : args[0];
  const std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
  if (sub == "list" || absl::StartsWith(sub, "--")) {
    std::string kind;
    FlagParser flags;
    flags.String("kind", &kind,
                 "only this kind: matrix, suite, sweep, advice, report, check, hunt");
    if (absl::Status s = flags.Parse(sub == "list" ? rest : args); !s.ok()) return Report(s);
    v1::ListWorkflowsRequest request;
    request.set_page_size(1000);
    if (!kind.empty()) request.set_filter("kind=" + kind);
    v1::ListWorkflowsResponse response;
    if (absl::Status s = client.Call(&v1::Coordinator::Stub::ListWorkflows, request, &response);
        !s.ok()) {
      return Report(s);
    }
    Table table{"", "workflows, newest first",
                {"workflow", "kind", "state", "runs", "created (UTC)", "error"}, {}, {}};
    for (const v1::Workflow& w : response.workflows()) {
      table.rows.push_back(
          {WorkflowId(w.name()), w.kind(), WorkflowStateName(w.state()),
           absl::StrCat(w.cells_done(), "/", w.cells_total()),
           absl::FormatTime("%Y-%m-%d %H:%M:%S", TimeFromTimestamp(w.create_time()),
                            absl::UTCTimeZone()),
           w.error()});
    }
    std::fputs(FormatTableText(table).c_str(), stdout);
    return kExitOk;
  }
  if (rest.size() != 1) {
    return Report(absl::InvalidArgumentError(absl::StrCat("usage: workflows ", sub, " ID")));
  }
  const std::string name = WorkflowName(rest[0]);
  if (sub == "show" || sub == "watch") {
    absl::StatusOr<v1::Workflow> workflow = GetWorkflow(client, name);
    if (!workflow.ok()) return Report(workflow.status());
    if (sub == "watch" && !IsFinalWorkflowState(workflow->state())) {
      Progress progress;
      workflow = client.FollowWorkflow(name, [&](const v1::Workflow& w) { progress.Show(w); });
      if (!workflow.ok()) return Report(workflow.status());
    }
    absl::PrintF("# %s: %s %s, %d of %d runs ended%s\n", workflow->name(), workflow->kind(),
                 WorkflowStateName(workflow->state()), workflow->cells_done(), workflow->cells_total(),
                 workflow->error().empty() ? "" : ": " + workflow->error());
    PrintWorkflowOutput(*workflow);
    for (const v1::TuningFile& file : workflow->output().tuning_files()) {
      absl::PrintF("\n== %s\n%s", file.name(), file.content());
    }
    return workflow->state() == v1::WORKFLOW_SUCCEEDED ? kExitOk : kExitFailed;
  }
  if (sub == "cancel") {
    v1::CancelWorkflowRequest request;
    request.set_name(name);
    v1::Workflow workflow;
    if (absl::Status s = client.Call(&v1::Coordinator::Stub::CancelWorkflow, request, &workflow);
        !s.ok()) {
      return Report(s);
    }
    absl::PrintF("%s: cancelling (%s)\n", workflow.name(), WorkflowStateName(workflow.state()));
    return kExitOk;
  }
  if (sub == "delete") {
    v1::DeleteWorkflowRequest request;
    request.set_name(name);
    google::protobuf::Empty empty;
    if (absl::Status s = client.Call(&v1::Coordinator::Stub::DeleteWorkflow, request, &empty);
        !s.ok()) {
      return Report(s);
    }
    absl::PrintF("%s: deleted (its runs stay)\n", name);
    return kExitOk;
  }
  return Report(absl::InvalidArgumentError(absl::StrCat(
      "workflows: unknown subcommand '", sub, "' (list, show, watch, cancel, delete)")));
}

}  // namespace collbench
