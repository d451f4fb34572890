// SPDX-License-Identifier: Apache-2.0
#include "client/verdict_commands.h"

#include <cstdio>
#include <utility>

#include <google/protobuf/util/json_util.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/time/time.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/table.h"
#include "api/convert.h"
#include "common/histogram.h"
#include "client/run_flags.h"
#include "client/workflow_client.h"
#include "common/units.h"
#include "common/flag_parser.h"

namespace collbench {
namespace {

constexpr char kBaselineUsage[] = R"(usage: collbench baseline save NAME (RUN... | --suite ID | --workflow ID) [--description TEXT] [--replace]
       collbench baseline list
       collbench baseline show NAME
       collbench baseline delete NAME
A baseline keeps, per configuration (operation, size, type, library,
backend, effective transport, placement, ranks, memory, sync mode, tuning
environment and the workers' `class` label), the merged latency histogram
of the runs it is made of. `collbench check` compares new runs with it.
The runs stay where they are; deleting a baseline deletes only it.
)";

constexpr char kCheckUsage[] = R"(usage: collbench check (RUN... | --suite ID | --workflow ID) --baseline NAME [--threshold F] [--alpha F] [--output table|json]
Compares the runs with the baseline like with like, from the stored
histograms: per configuration the median latency's ratio now/then with a
95% bootstrap interval, a Mann-Whitney test on the two distributions, and a
verdict: ok, faster, slower, or regression (slower by more than the
threshold, default 0.05 = 5%, and significant at alpha, default 0.01).
Configurations measured on one side only are listed. For a regression it
prints what differs between the environments (library versions, NCCL/MPI
environment, workers).
Exit status: 0 nothing regressed, 3 a regression, 2 bad input, 1 other failure.
)";

constexpr char kScheduleUsage[] = R"(usage: collbench schedule create NAME --every D (--suite S [--profile P] | --hunt PATTERN | OPERATION [run flags])
                                [--baseline B] [--workers SELECTOR] [--idle-window D] [--threshold F]
       collbench schedule list
       collbench schedule show NAME
       collbench schedule pause NAME | resume NAME | delete NAME
The coordinator fires the suite (or the one run) every period D (e.g. 1h,
at least its --min-schedule-period), first at once. A firing waits up to
--idle-window (default a quarter of the period, at most 10m) for its workers to
be idle and is recorded as skipped when they are not; its runs queue
behind every user run. With --baseline each firing is checked against it
and a regression is counted, shown by `schedule show` and exported as
metrics (collbench_schedule_*). --workers picks the workers: names
(workers/ID) or labels (KEY=VALUE), comma-separated. --hunt PATTERN
(pairwise, groups, ring, all) makes each firing a hunt with its defaults:
its CONFIRMED_BAD workers become SUSPECT (see collbench hunt --help).
Schedules are stored: they survive restarts, and a firing missed while the
coordinator was down is made once when it is back.
)";

std::string ScheduleName(const std::string& text) {
  return absl::StartsWith(text, "schedules/") ? text : absl::StrCat("schedules/", text);
}

std::string BaselineName(const std::string& text) {
  return absl::StartsWith(text, "baselines/") ? text : absl::StrCat("baselines/", text);
}

std::string Time(const google::protobuf::Timestamp& time) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixSeconds(time.seconds()),
                          absl::UTCTimeZone());
}

int Save(CoordinatorClient& client, const std::vector<std::string>& args) {
  std::string suite, workflow, description;
  bool replace = false;
  FlagParser flags;
  flags.String("suite", &suite, "make it of a suite run's runs (its workflow id)");
  flags.String("workflow", &workflow, "make it of a workflow's runs (a matrix, a sweep)");
  flags.String("description", &description, "what it is (shown by `baseline list`)");
  flags.Bool("replace", &replace, "replace a baseline of that name");
  if (std::optional<int> done = ParseCommandFlags(flags, args, kBaselineUsage)) return *done;
  if (flags.rest().empty()) {
    return Report(absl::InvalidArgumentError("baseline save: name the baseline (NAME)"));
  }
  if (!suite.empty() && !workflow.empty()) {
    return Report(absl::InvalidArgumentError("baseline save: give --suite or --workflow, not both"));
  }
  const std::vector<std::string> runs(flags.rest().begin() + 1, flags.rest().end());
  const std::string from = suite.empty() ? workflow : suite;
  if (runs.empty() == from.empty()) {
    return Report(absl::InvalidArgumentError(
        "baseline save: name the runs (RUN...) or one workflow (--suite ID, --workflow ID)"));
  }
  v1::CreateBaselineRequest request;
  request.set_baseline_id(flags.rest()[0]);
  for (const std::string& run : runs) request.add_runs(RunName(run));
  if (!from.empty()) request.set_workflow(WorkflowName(from));
  request.set_description(description);
  request.set_replace(replace);
  v1::Baseline baseline;
  if (absl::Status s = client.Call(&v1::Coordinator::Stub::CreateBaseline, request, &baseline);
      !s.ok()) {
    return Report(s);
  }
  absl::PrintF("%s: %d configurations from %d runs\n", baseline.name(), baseline.entries_size(),
               baseline.runs_size());
  absl::PrintF("check new runs against it: collbench check RUN... --baseline %s\n",
               baseline.name().substr(baseline.name().find('/') + 1));
  return kExitOk;
}

int List(CoordinatorClient& client) {
  v1::ListBaselinesRequest request;
  request.set_page_size(1000);
  std::vector<v1::Baseline> all;
  while (true) {
    v1::ListBaselinesResponse response;
    if (absl::Status s = client.Call(&v1::Coordinator::Stub::ListBaselines, request, &response);
        !s.ok()) {
      return Report(s);
    }
    for (const v1::Baseline& b : response.baselines()) all.push_back(b);
    if (response.next_page_token().empty()) break;
    request.set_page_token(response.next_page_token());
  }
  absl::PrintF("%-32s %-20s %8s %5s  %s\n", "BASELINE", "CREATED", "CONFIGS", "RUNS", "DESCRIPTION");
  for (const v1::Baseline& b : all) {
    absl::PrintF("%-32s %-20s %8d %5d  %s\n", b.name(), Time(b.create_time()), b.entries_total(),
                 b.runs_size(), b.description().empty() ? "-" : b.description());
  }
  return kExitOk;
}

int Show(CoordinatorClient& client, const std::string& name) {
  v1::GetBaselineRequest request;
  request.set_name(BaselineName(name));
  v1::Baseline b;
  if (absl::Status s = client.Call(&v1::Coordinator::Stub::GetBaseline, request, &b); !s.ok()) {
    return Report(s);
  }
  absl::PrintF("%s, made %s of %s%s\n", b.name(), Time(b.create_time()),
               absl::StrJoin(b.runs(), " "), b.workflow().empty() ? "" : absl::StrCat(" (", b.workflow(), ")"));
  if (!b.description().empty()) absl::PrintF("%s\n", b.description());
  Table table;
  table.columns = {"configuration", "p50", "samples", "results", "run"};
  for (const v1::BaselineEntry& entry : b.entries()) {
    absl::StatusOr<Histogram> histogram = HistogramFromProto(entry.histogram());
    const double p50_us = histogram.ok() ? histogram->QuantileNs(0.5) * 1e-3 : 0;
    table.rows.push_back({entry.key_text(), absl::StrFormat("%.2f us", p50_us),
                          histogram.ok() ? absl::StrCat(histogram->count()) : "-",
                          absl::StrCat(entry.results()), entry.run()});
  }
  absl::PrintF("%s", FormatTableText(table));
  return kExitOk;
}

int Delete(CoordinatorClient& client, const std::string& name) {
  v1::DeleteBaselineRequest request;
  request.set_name(BaselineName(name));
  google::protobuf::Empty empty;
  if (absl::Status s = client.Call(&v1::Coordinator::Stub::DeleteBaseline, request, &empty);
      !s.ok()) {
    return Report(s);
  }
  absl::PrintF("deleted %s\n", request.name());
  return kExitOk;
}

absl::StatusOr<double> Fraction(const std::string& text, const char* flag) {
  double value = 0;
  if (text.empty()) return 0.0;
  if (!absl::SimpleAtod(text, &value)) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": '", text, "' is not a number"));
  }
  return value;
}

}  // namespace

int BaselineCommand(CoordinatorClient& client, const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kBaselineUsage, args.empty() ? stderr : stdout);
    return args.empty() ? kExitUsage : kExitOk;
  }
  const std::string& sub = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (sub == "save") return Save(client, rest);
  if (sub == "list") return List(client);
  if ((sub == "show" || sub == "delete") && rest.size() == 1 && !AsksForHelp(rest)) {
    return sub == "show" ? Show(client, rest[0]) : Delete(client, rest[0]);
  }
  if (AsksForHelp(rest)) {
    std::fputs(kBaselineUsage, stdout);
    return kExitOk;
  }
  std::fputs(kBaselineUsage, stderr);
  return Report(absl::InvalidArgumentError(
      absl::StrCat("baseline: '", absl::StrJoin(args, " "), "' is not a baseline command")));
}

int CheckCommand(CoordinatorClient& client, const std::vector<std::string>& args) {
  std::string baseline, suite, workflow, threshold_text, alpha_text, output = "table";
  FlagParser flags;
  flags.String("baseline", &baseline, "the baseline to compare with (required)");
  flags.String("suite", &suite, "check a suite run's runs (its workflow id)");
  flags.String("workflow", &workflow, "check a workflow's runs (a matrix, a sweep)");
  flags.String("threshold", &threshold_text,
               "slower by more than this fraction is a regression (default 0.05)");
  flags.String("alpha", &alpha_text, "significance level of the rank test (default 0.01)");
  flags.String("output", &output, "table (default) or json: one object with rows, "
                                   "only_baseline, only_candidate, regressions");
  if (std::optional<int> done = ParseCommandFlags(flags, args, kCheckUsage)) return *done;
  if (output != "table" && output != "json") {
    return Report(absl::InvalidArgumentError(
        absl::StrCat("--output: '", output, "' is not table or json")));
  }
  if (baseline.empty()) return Report(absl::InvalidArgumentError("check: --baseline NAME is required"));
  const std::string from = suite.empty() ? workflow : suite;
  if ((!suite.empty() && !workflow.empty()) || flags.rest().empty() == from.empty()) {
    return Report(absl::InvalidArgumentError(
        "check: name the runs (RUN...) or one workflow (--suite ID, --workflow ID)"));
  }
  absl::StatusOr<double> threshold = Fraction(threshold_text, "threshold");
  if (!threshold.ok()) return Report(threshold.status());
  absl::StatusOr<double> alpha = Fraction(alpha_text, "alpha");
  if (!alpha.ok()) return Report(alpha.status());
  v1::WorkflowSpec spec;
  v1::CheckSpec* check = spec.mutable_check();
  check->set_baseline(BaselineName(baseline));
  for (const std::string& run : flags.rest()) check->mutable_runs()->add_runs(RunName(run));
  if (!from.empty()) check->mutable_runs()->set_workflow(WorkflowName(from));
  check->set_threshold(*threshold);
  check->set_alpha(*alpha);
  absl::StatusOr<v1::Workflow> done = RunWorkflow(client, spec);
  if (!done.ok()) return Report(done.status());
  if (done->state() != v1::WORKFLOW_SUCCEEDED) {
    return Report(absl::InternalError(absl::StrCat(done->name(), ": ", done->error())));
  }
  const v1::CheckOutput& result = done->output().check();
  if (output == "json") {
    google::protobuf::util::JsonPrintOptions options;
    options.preserve_proto_field_names = true;
    options.always_print_primitive_fields = true;
    std::string json;
    if (const auto printed = google::protobuf::util::MessageToJsonString(result, &json, options);
        !printed.ok()) {
      return Report(absl::InternalError(
          absl::StrCat("check as JSON: ", std::string(printed.message()))));
    }
    absl::PrintF("%s\n", json);
  } else {
    PrintWorkflowOutput(*done);
    absl::PrintF("\n%s\n", result.regressed()
                               ? absl::StrCat("REGRESSION: ", result.regressions(), " of ",
                                              result.rows_size(), " configurations")
                               : absl::StrCat("ok: no regression in ", result.rows_size(),
                                              " configurations"));
  }
  return result.regressed() ? kExitRegression : kExitOk;
}

namespace {

void PrintSchedule(const v1::Schedule& s) {
  const v1::ScheduleSpec& spec = s.spec();
  absl::PrintF("%s: every %s, %s%s%s%s\n", s.name(), FormatDuration(spec.every_seconds()),
               spec.has_suite() ? absl::StrCat("suite ", spec.suite().suite(),
                                               spec.suite().profile().empty() ? "" : absl::StrCat(" (", spec.suite().profile(), ")"))
               : spec.has_hunt() ? absl::StrCat("hunt ", spec.hunt().pattern().empty() ? "pairwise" : spec.hunt().pattern())
                                : absl::StrCat("run ", spec.run().operation()),
               spec.baseline().empty() ? "" : absl::StrCat(", checked against ", spec.baseline()),
               spec.workers().empty() ? "" : absl::StrCat(", workers ", spec.workers()),
               s.paused() ? ", PAUSED" : "");
  absl::PrintF("next firing %s; %d firings, %d regressions found; last %s\n",
               s.paused() ? "none (paused)" : Time(s.next_fire_time()), s.firings(),
               s.regressions_found(), s.last_outcome().empty() ? "-" : s.last_outcome());
  if (s.history_size() == 0) return;
  absl::PrintF("%-20s %-11s %-32s %5s  %s\n", "FIRED", "OUTCOME", "WORKFLOW", "REGR", "REASON");
  for (const v1::ScheduleFiring& f : s.history()) {
    absl::PrintF("%-20s %-11s %-32s %5d  %s\n", Time(f.time()), f.outcome(),
                 f.workflow().empty() ? "-" : f.workflow(), f.regressions(),
                 f.reason().empty() ? "-" : f.reason());
  }
}

int CreateSchedule(CoordinatorClient& client, const std::vector<std::string>& args) {
  if (args.empty() || absl::StartsWith(args[0], "--")) {
    return Report(absl::InvalidArgumentError("schedule create: name the schedule (NAME) first"));
  }
  v1::CreateScheduleRequest request;
  request.set_schedule_id(args[0]);
  std::vector<std::string> rest;
  std::string every, suite, profile, baseline, workers, window, threshold, hunt;
  struct Own {
    const char* flag;
    std::string* value;
  };
  const Own own[] = {{"--every", &every},       {"--suite", &suite},     {"--profile", &profile},
                     {"--baseline", &baseline}, {"--workers", &workers}, {"--idle-window", &window},
                     {"--threshold", &threshold}, {"--hunt", &hunt}};
  for (size_t i = 1; i < args.size(); ++i) {
    const Own* match = nullptr;
    for (const Own& o : own) {
      if (args[i] == o.flag) match = &o;
    }
    if (match == nullptr) {
      rest.push_back(args[i]);
      continue;
    }
    if (i + 1 >= args.size()) return Report(absl::InvalidArgumentError(absl::StrCat(match->flag, " needs a value")));
    *match->value = args[++i];
  }
  v1::ScheduleSpec* spec = request.mutable_spec();
  if (every.empty()) return Report(absl::InvalidArgumentError("--every: the period is required (e.g. 1h)"));
  absl::StatusOr<double> period = ParseDurationSeconds(every);
  if (!period.ok()) return Report(absl::InvalidArgumentError(absl::StrCat("--every: ", period.status().message())));
  spec->set_every_seconds(static_cast<int64_t>(*period));
  if (!window.empty()) {
    absl::StatusOr<double> seconds = ParseDurationSeconds(window);
    if (!seconds.ok()) return Report(absl::InvalidArgumentError(absl::StrCat("--idle-window: ", seconds.status().message())));
    spec->set_window_seconds(static_cast<int64_t>(*seconds));
  }
  absl::StatusOr<double> fraction = Fraction(threshold, "threshold");
  if (!fraction.ok()) return Report(fraction.status());
  spec->set_threshold(*fraction);
  if (!hunt.empty()) {
    if (!rest.empty() || !suite.empty()) {
      return Report(absl::InvalidArgumentError(
          "schedule create: --hunt excludes --suite and a run"));
    }
    spec->mutable_hunt()->set_pattern(hunt);
  } else if (!suite.empty()) {
    if (!rest.empty()) {
      return Report(absl::InvalidArgumentError(absl::StrCat(
          "schedule create: --suite and a run (", rest[0], " ...) exclude each other")));
    }
    spec->mutable_suite()->set_suite(suite);
    spec->mutable_suite()->set_profile(profile);
  } else {
    if (rest.empty()) {
      return Report(absl::InvalidArgumentError(
          "schedule create: give --suite NAME or a run (OPERATION [run flags])"));
    }
    absl::StatusOr<RunRequest> run = ParseRunFlags(rest);
    if (!run.ok()) return Report(run.status());
    *spec->mutable_run() = run->spec;
  }
  spec->set_baseline(baseline.empty() ? "" : BaselineName(baseline));
  spec->set_workers(workers);
  v1::Schedule schedule;
  if (absl::Status s = client.Call(&v1::Coordinator::Stub::CreateSchedule, request, &schedule);
      !s.ok()) {
    return Report(s);
  }
  PrintSchedule(schedule);
  absl::PrintF("follow it: collbench schedule show %s\n", args[0]);
  return kExitOk;
}

template <typename Request, typename Method>
int OnOne(CoordinatorClient& client, Method method, const std::string& name, const char* done) {
  Request request;
  request.set_name(ScheduleName(name));
  v1::Schedule schedule;
  if (absl::Status s = client.Call(method, request, &schedule); !s.ok()) return Report(s);
  if (done != nullptr) absl::PrintF("%s %s\n", done, schedule.name());
  PrintSchedule(schedule);
  return kExitOk;
}

}  // namespace

int ScheduleCommand(CoordinatorClient& client, const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kScheduleUsage, args.empty() ? stderr : stdout);
    return args.empty() ? kExitUsage : kExitOk;
  }
  const std::string& sub = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (AsksForHelp(rest)) {
    std::fputs(kScheduleUsage, stdout);
    return kExitOk;
  }
  if (sub == "create") return CreateSchedule(client, rest);
  if (sub == "list") {
    v1::ListSchedulesRequest request;
    request.set_page_size(1000);
    v1::ListSchedulesResponse response;
    if (absl::Status s = client.Call(&v1::Coordinator::Stub::ListSchedules, request, &response);
        !s.ok()) {
      return Report(s);
    }
    absl::PrintF("%-28s %8s %-10s %-20s %-11s %7s %s\n", "SCHEDULE", "EVERY", "STATE", "NEXT",
                 "LAST", "REGRESS", "BASELINE");
    for (const v1::Schedule& s : response.schedules()) {
      absl::PrintF("%-28s %8s %-10s %-20s %-11s %7d %s\n", s.name(),
                   FormatDuration(s.spec().every_seconds()), s.paused() ? "paused" : "active",
                   s.paused() ? "-" : Time(s.next_fire_time()),
                   s.last_outcome().empty() ? "-" : s.last_outcome(), s.regressions_found(),
                   s.spec().baseline().empty() ? "-" : s.spec().baseline());
    }
    return kExitOk;
  }
  if (rest.size() == 1) {
    if (sub == "show") {
      return OnOne<v1::GetScheduleRequest>(client, &v1::Coordinator::Stub::GetSchedule, rest[0],
                                           nullptr);
    }
    if (sub == "pause") {
      return OnOne<v1::PauseScheduleRequest>(client, &v1::Coordinator::Stub::PauseSchedule,
                                             rest[0], "paused");
    }
    if (sub == "resume") {
      return OnOne<v1::ResumeScheduleRequest>(client, &v1::Coordinator::Stub::ResumeSchedule,
                                              rest[0], "resumed");
    }
    if (sub == "delete") {
      v1::DeleteScheduleRequest request;
      request.set_name(ScheduleName(rest[0]));
      google::protobuf::Empty empty;
      if (absl::Status s = client.Call(&v1::Coordinator::Stub::DeleteSchedule, request, &empty);
          !s.ok()) {
        return Report(s);
      }
      absl::PrintF("deleted %s\n", request.name());
      return kExitOk;
    }
  }
  std::fputs(kScheduleUsage, stderr);
  return Report(absl::InvalidArgumentError(
      absl::StrCat("schedule: '", absl::StrJoin(args, " "), "' is not a schedule command")));
}

}  // namespace collbench
