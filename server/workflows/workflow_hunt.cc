// SPDX-License-Identifier: Apache-2.0
// WorkflowManager: running a hunt (hunts.h). The survey's rounds one after
// another, every run of a round created at once so they run at the same
// time on their disjoint hosts; then the re-test rounds; then the verdicts,
// and the quarantine of the workers confirmed bad.
//
// A hunt's cells are the runs of its current round only: a 1,000-worker
// pairwise hunt has half a million runs, which the workflow could not carry
// and store after every change. Its runs' request ids
// ("<workflow>/round-<r>-<i>") make a restarted coordinator adopt the runs
// a round had already created, and the rounds are recomputed from the
// workers the plan selected (output.hunt.workers).
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "api/convert.h"
#include "common/log.h"
#include "server/workflows/hunts.h"
#include "server/workflows/workflow_manager.h"

namespace collbench {

bool WorkflowManager::RunHuntRound(const std::string& name, int round,
                                   const workflows::HuntRound& planned,
                                   std::vector<RunWithResults>* ended) {
  {
    absl::MutexLock lock(&mu_);
    if (StopOrCancelLocked(name)) return false;
    v1::Workflow* workflow = FindLocked(name);
    const v1::WorkflowSpec& spec = workflow->spec();
    const std::string id(absl::StripPrefix(name, "workflows/"));
    workflow->clear_cells();
    for (const workflows::HuntRun& run : planned) {
      v1::WorkflowCell* cell = workflow->add_cells();
      cell->set_label(workflows::HuntRunLabel(run));
      *cell->mutable_spec() = workflows::HuntRunSpec(spec, id, run);
      if (!spec.schedule().empty()) {
        (*cell->mutable_spec()->mutable_labels())[kScheduleLabel] =
            std::string(absl::StripPrefix(spec.schedule(), "schedules/"));
      }
      cell->set_round(round);
    }
    SaveLocked(*workflow);
  }
  const std::vector<std::string> runs = CreateRoundRuns(name, round);
  if (!FollowRoundRuns(name, runs)) return false;
  // Index by index: a run never accepted (or deleted since) ends as FAILED
  // with its reason.
  ended->clear();
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<RunWithResults> fetched =
        runs[i].empty() ? std::vector<RunWithResults>() : FetchRuns({runs[i]});
    if (fetched.empty()) {
      RunWithResults failed;
      failed.run.set_name(runs[i]);
      failed.run.set_state(v1::FAILED);
      absl::MutexLock lock(&mu_);
      const v1::WorkflowCell& cell = FindLocked(name)->cells(static_cast<int>(i));
      failed.run.set_error(cell.error().empty() ? "not created" : cell.error());
      fetched.push_back(std::move(failed));
    }
    ended->push_back(std::move(fetched.front()));
  }
  absl::MutexLock lock(&mu_);
  return !StopOrCancelLocked(name);
}

std::vector<std::string> WorkflowManager::CreateRoundRuns(const std::string& name, int round) {
  // The round is admitted as one group (RunManager::CreateRuns) before any
  // run is followed: the scheduler places it once and starts all whose
  // hosts are free together. After a restart the request ids adopt the
  // runs the round had already created.
  std::vector<v1::RunSpec> specs;
  bool scheduled = false;
  {
    absl::MutexLock lock(&mu_);
    const v1::Workflow* workflow = FindLocked(name);
    scheduled = !workflow->spec().schedule().empty();
    for (const v1::WorkflowCell& cell : workflow->cells()) specs.push_back(cell.spec());
  }
  std::vector<std::string> runs(specs.size());
  std::vector<size_t> pending(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) pending[i] = i;
  while (!pending.empty()) {
    {
      absl::MutexLock lock(&mu_);
      if (StopOrCancelLocked(name)) return runs;
    }
    // A scheduled hunt's run waits for its workers to be idle, so a user's
    // run never waits behind it.
    std::vector<RunManager::RunRequest> requests;
    std::vector<size_t> asked;
    std::vector<size_t> later;  // asked again: not idle yet, or the queue or the rate was full
    for (const size_t i : pending) {
      if (scheduled &&
          !runs_->WorkersIdle(absl::StrJoin(specs[i].placement().workers(), ",")).ok()) {
        later.push_back(i);
        continue;
      }
      requests.push_back({specs[i], absl::StrCat(name, "/round-", round, "-", i)});
      asked.push_back(i);
    }
    std::vector<absl::StatusOr<v1::Run>> created;
    if (!requests.empty()) created = runs_->CreateRuns(requests, absl::Now(), name);
    {
      absl::MutexLock lock(&mu_);
      for (size_t k = 0; k < asked.size(); ++k) {
        const size_t i = asked[k];
        if (absl::IsResourceExhausted(created[k].status())) {
          later.push_back(i);
          continue;
        }
        v1::WorkflowCell* cell = FindLocked(name)->mutable_cells(static_cast<int>(i));
        if (!created[k].ok()) {
          cell->set_state(v1::FAILED);
          cell->set_error(absl::StrCat("not accepted: ", created[k].status().message()));
        } else {
          runs[i] = created[k]->name();
          cell->set_run(runs[i]);
          cell->set_state(created[k]->state());
        }
      }
    }
    std::sort(later.begin(), later.end());
    const bool progressed = later.size() < pending.size();
    pending = std::move(later);
    if (!pending.empty() && !progressed) absl::SleepFor(options_.poll_interval);
  }
  absl::MutexLock lock(&mu_);
  SaveLocked(*FindLocked(name));
  return runs;
}

std::optional<v1::Run> WorkflowManager::LookAtRoundRun(const std::string& run, bool may_cancel) {
  absl::StatusOr<v1::Run> now = runs_->GetRun(run);
  if (!now.ok()) return std::nullopt;
  if (now->state() == v1::QUEUED && may_cancel) {
    // A run of the round that waits for a worker that is gone would hold
    // the hunt: it is cancelled, and measured as failed.
    for (const std::string& worker : now->spec().placement().workers()) {
      absl::StatusOr<v1::Worker> w = fleet_->GetWorker(worker);
      if (!w.ok() || w->state() == v1::LOST) {
        (void)runs_->CancelRun(run, absl::Now());
        now = runs_->GetRun(run);
        if (now.ok()) now->set_error(absl::StrCat(worker, " is lost"));
        break;
      }
    }
  }
  return now.ok() ? std::optional<v1::Run>(*now) : std::nullopt;
}

bool WorkflowManager::FollowRoundRuns(const std::string& name,
                                      const std::vector<std::string>& runs) {
  std::vector<bool> done(runs.size(), false);
  size_t remaining = runs.size();
  bool cancel_sent = false;
  while (remaining > 0) {
    bool cancel = false;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return false;
      cancel = cancelling_.count(name) > 0;
    }
    if (cancel && !cancel_sent) {  // Cancel() stopped one; the others here
      for (size_t i = 0; i < runs.size(); ++i) {
        if (!done[i] && !runs[i].empty()) (void)runs_->CancelRun(runs[i], absl::Now());
      }
      cancel_sent = true;
    }
    bool changed = false;
    for (size_t i = 0; i < runs.size(); ++i) {
      if (done[i]) continue;
      // Not accepted (or the workflow is being cancelled): nothing to follow.
      const std::optional<v1::Run> now =
          runs[i].empty() ? std::nullopt : LookAtRoundRun(runs[i], !cancel_sent);
      const bool final = runs[i].empty() || !now.has_value() || IsFinalRunState(now->state());
      absl::MutexLock lock(&mu_);
      v1::Workflow* workflow = FindLocked(name);
      v1::WorkflowCell* cell = workflow->mutable_cells(static_cast<int>(i));
      if (now.has_value() && now->state() != cell->state()) {
        cell->set_state(now->state());
        cell->set_error(now->error());
        changed = true;
      }
      if (final) {
        done[i] = true;
        --remaining;
        workflow->set_cells_done(workflow->cells_done() + 1);
        changed = true;
      }
    }
    if (changed) {
      absl::MutexLock lock(&mu_);
      SaveLocked(*FindLocked(name));
    }
    if (remaining > 0) absl::SleepFor(options_.poll_interval);
  }
  return true;
}

void WorkflowManager::ExecuteHunt(const std::string& name, const v1::Workflow& snapshot) {
  const v1::HuntSpec& spec = snapshot.spec().hunt();
  const std::vector<v1::HuntWorker> selected(snapshot.output().hunt().workers().begin(),
                                             snapshot.output().hunt().workers().end());
  const workflows::SurveyPlan survey_plan(spec, selected);
  std::vector<v1::HuntMeasurement> survey;
  std::vector<std::string> stragglers;
  int round = 0;
  // Runs rounds [0, count) of `round_of`, measuring into `into`.
  auto run_rounds = [&](size_t count, const std::function<workflows::HuntRound(size_t)>& round_of,
                        std::vector<v1::HuntMeasurement>* into) {
    for (size_t r = 0; r < count; ++r) {
      const workflows::HuntRound planned = round_of(r);
      ++round;
      std::vector<RunWithResults> ended;
      const bool go_on = RunHuntRound(name, round, planned, &ended);
      for (size_t i = 0; i < planned.size() && i < ended.size(); ++i) {
        into->push_back(workflows::MeasurementOf(planned[i], round, ended[i]));
        if (planned[i].phase == "ring") {
          for (const std::string& w : workflows::RingStragglers(ended[i])) stragglers.push_back(w);
        }
      }
      if (!go_on) return false;
    }
    return true;
  };
  auto end_stopped = [&]() {
    bool cancelled = false;
    {
      absl::MutexLock lock(&mu_);
      cancelled = cancelling_.erase(name) > 0;
      if (stopping_ && !cancelled) return;  // it goes on after the restart
    }
    Finish(name, v1::WORKFLOW_CANCELLED, "cancelled", {}, absl::Now());
  };
  if (!run_rounds(survey_plan.rounds(),
                  [&](size_t r) { return survey_plan.Round(r); }, &survey)) {
    return end_stopped();
  }
  workflows::HuntSurvey analysed = workflows::AnalyseSurvey(spec, selected, stragglers, &survey);
  auto count_runs = [](const std::vector<workflows::HuntRound>& rounds) {
    int runs = 0;
    for (const workflows::HuntRound& r : rounds) runs += static_cast<int>(r.size());
    return runs;
  };
  auto set_total = [&](int runs) {
    absl::MutexLock lock(&mu_);
    v1::Workflow* workflow = FindLocked(name);
    workflow->set_cells_total(runs);
    SaveLocked(*workflow);
  };
  // The slow links once more, the better of two runs standing for each,
  // before anything is judged.
  std::vector<v1::HuntMeasurement> set_aside;
  const std::vector<workflows::HuntRound> repeat_rounds = workflows::RepeatRounds(analysed, selected);
  if (!repeat_rounds.empty()) {
    set_total(static_cast<int>(survey.size()) + count_runs(repeat_rounds));
    std::vector<v1::HuntMeasurement> repeats;
    if (!run_rounds(repeat_rounds.size(), [&](size_t r) { return repeat_rounds[r]; }, &repeats)) {
      return end_stopped();
    }
    workflows::FoldRepeats(std::move(repeats), &survey, &set_aside);
    analysed = workflows::AnalyseSurvey(spec, selected, stragglers, &survey);
  }
  set_total(static_cast<int>(survey.size() + set_aside.size()) +
            count_runs(analysed.retest_rounds));
  std::vector<v1::HuntMeasurement> retests;
  if (!run_rounds(analysed.retest_rounds.size(),
                  [&](size_t r) { return analysed.retest_rounds[r]; }, &retests)) {
    return end_stopped();
  }
  v1::WorkflowOutput output =
      workflows::HuntOutputOf(spec, analysed, survey, &retests, std::move(set_aside));
  v1::HuntOutput& hunt = *output.mutable_hunt();
  for (const std::string& line : snapshot.output().header()) {  // the plan's caveats
    if (absl::StartsWith(line, "note: ")) hunt.add_notes(line.substr(6));
  }
  const int measured = static_cast<int>(std::count_if(
      survey.begin(), survey.end(), [](const v1::HuntMeasurement& m) { return m.error().empty(); }));
  if (measured == 0) {
    Finish(name, v1::WORKFLOW_FAILED,
           absl::StrCat("none of the ", survey.size(), " survey runs succeeded",
                        survey.empty() ? "" : absl::StrCat(" (", survey[0].error(), ")")),
           output, absl::Now());
    return;
  }
  if (!spec.no_quarantine()) {
    Quarantine(name, &hunt);
    for (v1::OutputTable& table : *output.mutable_tables()) {  // marks the quarantined
      if (table.id() == "suspects") table = workflows::SuspectsTable(hunt);
    }
  }
  Finish(name, v1::WORKFLOW_SUCCEEDED, "", output, absl::Now());
}

void WorkflowManager::Quarantine(const std::string& name, v1::HuntOutput* hunt) {
  const absl::Time now = absl::Now();
  std::set<std::string> suspects;
  for (v1::HuntSuspect& s : *hunt->mutable_suspects()) {
    suspects.insert(s.worker());
    if (s.verdict() != "CONFIRMED_BAD") continue;
    v1::WorkerSuspicion why;
    why.set_reason(absl::StrCat("CONFIRMED_BAD: ", s.evidence()));
    *why.mutable_time() = TimestampFromTime(now);
    why.set_hunt(name);
    *why.mutable_runs() = s.runs();
    if (fleet_->SuspectWorker(s.worker(), why).ok()) s.set_quarantined(true);
  }
  // A SUSPECT worker this hunt measured healthy (in the survey, not slow by
  // the hunt's rule, and no suspect of any kind now) is cleared.
  std::set<std::string> measured_healthy;
  const HuntThresholds thresholds = workflows::ThresholdsOf(FindSpecHunt(name));
  for (const v1::HuntWorker& w : hunt->workers()) {
    const bool slow = SlowWorker(w, thresholds);
    if (w.measurements() > 0 && !slow && !suspects.count(w.worker())) {
      measured_healthy.insert(w.worker());
    }
  }
  for (const v1::Worker& w : fleet_->ListWorkers()) {
    if (!w.has_suspect() || !measured_healthy.count(w.name())) continue;
    if (fleet_->ClearWorker(w.name(), absl::StrCat("measured healthy by ", name), now).ok()) {
      hunt->add_cleared(w.name());
    }
  }
}

v1::HuntSpec WorkflowManager::FindSpecHunt(const std::string& name) {
  absl::MutexLock lock(&mu_);
  const v1::Workflow* workflow = FindLocked(name);
  return workflow == nullptr ? v1::HuntSpec() : workflow->spec().hunt();
}

}  // namespace collbench
