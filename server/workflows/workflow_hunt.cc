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
#include <map>
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
  v1::WorkflowSpec spec;
  {
    absl::MutexLock lock(&mu_);
    if (StopOrCancelLocked(name)) return false;
    v1::Workflow* workflow = FindLocked(name);
    spec = workflow->spec();
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
  const int count = static_cast<int>(planned.size());
  std::vector<std::string> runs(count);
  std::vector<bool> done(count, false);
  // A round already run before a restart: its runs are adopted by their
  // request ids, and those that ended are not followed again.
  // Create every run of the round; the scheduler starts all whose hosts
  // are free at once.
  for (int i = 0; i < count; ++i) {
    v1::RunSpec run_spec;
    {
      absl::MutexLock lock(&mu_);
      run_spec = FindLocked(name)->cells(i).spec();
    }
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        if (StopOrCancelLocked(name)) break;
      }
      if (!spec.schedule().empty() &&
          !runs_->WorkersIdle(absl::StrJoin(run_spec.placement().workers(), ",")).ok()) {
        absl::SleepFor(options_.poll_interval);
        continue;
      }
      absl::StatusOr<v1::Run> created = runs_->CreateRun(
          run_spec, absl::StrCat(name, "/round-", round, "-", i), absl::Now(), name);
      if (absl::IsResourceExhausted(created.status())) {  // the queue or the rate: wait
        absl::SleepFor(options_.poll_interval);
        continue;
      }
      absl::MutexLock lock(&mu_);
      v1::WorkflowCell* cell = FindLocked(name)->mutable_cells(i);
      if (!created.ok()) {
        cell->set_state(v1::FAILED);
        cell->set_error(absl::StrCat("not accepted: ", created.status().message()));
      } else {
        runs[i] = created->name();
        cell->set_run(runs[i]);
        cell->set_state(created->state());
      }
      break;
    }
  }
  {
    absl::MutexLock lock(&mu_);
    SaveLocked(*FindLocked(name));
  }
  // Follow them until every one has ended.
  int remaining = static_cast<int>(std::count(done.begin(), done.end(), false));
  bool cancel_sent = false;
  while (remaining > 0) {
    bool cancel = false;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return false;
      cancel = cancelling_.count(name) > 0;
    }
    if (cancel && !cancel_sent) {
      for (int i = 0; i < count; ++i) {
        if (!done[i] && !runs[i].empty()) (void)runs_->CancelRun(runs[i], absl::Now());
      }
      cancel_sent = true;
    }
    bool changed = false;
    for (int i = 0; i < count; ++i) {
      if (done[i]) continue;
      if (runs[i].empty()) {  // not accepted, or the workflow is being cancelled
        done[i] = true;
        --remaining;
        absl::MutexLock lock(&mu_);
        v1::Workflow* workflow = FindLocked(name);
        workflow->set_cells_done(workflow->cells_done() + 1);
        changed = true;
        continue;
      }
      absl::StatusOr<v1::Run> now = runs_->GetRun(runs[i]);
      if (now.ok() && now->state() == v1::QUEUED && !cancel_sent) {
        // A run of the round that waits for a worker that is gone would
        // hold the hunt: it is cancelled, and measured as failed.
        for (const std::string& worker : now->spec().placement().workers()) {
          absl::StatusOr<v1::Worker> w = runs_->GetWorker(worker);
          if (!w.ok() || w->state() == v1::LOST) {
            (void)runs_->CancelRun(runs[i], absl::Now());
            now = runs_->GetRun(runs[i]);
            if (now.ok()) now->set_error(absl::StrCat(worker, " is lost"));
            break;
          }
        }
      }
      const bool final = !now.ok() || IsFinalRunState(now->state());
      absl::MutexLock lock(&mu_);
      v1::Workflow* workflow = FindLocked(name);
      v1::WorkflowCell* cell = workflow->mutable_cells(i);
      const v1::RunState state = now.ok() ? now->state() : v1::FAILED;
      if (state != cell->state()) {
        cell->set_state(state);
        cell->set_error(now.ok() ? now->error() : std::string(now.status().message()));
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
  // Index by index: a run never accepted (or deleted since) ends as FAILED
  // with its reason.
  ended->clear();
  for (int i = 0; i < count; ++i) {
    std::vector<RunWithResults> fetched =
        runs[i].empty() ? std::vector<RunWithResults>() : FetchRuns({runs[i]});
    if (fetched.empty()) {
      RunWithResults failed;
      failed.run.set_name(runs[i]);
      failed.run.set_state(v1::FAILED);
      absl::MutexLock lock(&mu_);
      const v1::WorkflowCell& cell = FindLocked(name)->cells(i);
      failed.run.set_error(cell.error().empty() ? "not created" : cell.error());
      fetched.push_back(std::move(failed));
    }
    ended->push_back(std::move(fetched.front()));
  }
  absl::MutexLock lock(&mu_);
  return !StopOrCancelLocked(name);
}

void WorkflowManager::ExecuteHunt(const std::string& name, const v1::Workflow& snapshot) {
  const v1::HuntSpec& spec = snapshot.spec().hunt();
  const std::vector<v1::HuntWorker> selected(snapshot.output().hunt().workers().begin(),
                                             snapshot.output().hunt().workers().end());
  const std::vector<workflows::HuntRound> survey_rounds =
      workflows::SurveyRounds(spec, selected);
  std::vector<v1::HuntMeasurement> survey;
  std::vector<std::string> stragglers;
  int round = 0;
  auto run_rounds = [&](const std::vector<workflows::HuntRound>& rounds,
                        std::vector<v1::HuntMeasurement>* into) {
    for (const workflows::HuntRound& planned : rounds) {
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
  if (!run_rounds(survey_rounds, &survey)) return end_stopped();
  workflows::HuntSurvey analysed = workflows::AnalyseSurvey(spec, selected, stragglers, &survey);
  int retest_runs = 0;
  for (const workflows::HuntRound& r : analysed.retest_rounds) retest_runs += r.size();
  {
    absl::MutexLock lock(&mu_);
    v1::Workflow* workflow = FindLocked(name);
    workflow->set_cells_total(static_cast<int>(survey.size()) + retest_runs);
    SaveLocked(*workflow);
  }
  std::vector<v1::HuntMeasurement> retests;
  if (!run_rounds(analysed.retest_rounds, &retests)) return end_stopped();
  v1::WorkflowOutput output = workflows::HuntOutputOf(spec, analysed, survey, &retests);
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
  if (!spec.no_quarantine()) Quarantine(name, &hunt);
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
    if (runs_->SuspectWorker(s.worker(), why).ok()) s.set_quarantined(true);
  }
  // A SUSPECT worker this hunt measured healthy (in the survey, not slow by
  // the hunt's rule, and no suspect of any kind now) is cleared.
  std::set<std::string> measured_healthy;
  const HuntThresholds thresholds = workflows::ThresholdsOf(FindSpecHunt(name));
  for (const v1::HuntWorker& w : hunt->workers()) {
    const bool slow = w.ratio() < thresholds.ratio && w.z() < -thresholds.z;
    if (w.measurements() > 0 && !slow && !suspects.count(w.worker())) {
      measured_healthy.insert(w.worker());
    }
  }
  for (const v1::Worker& w : runs_->ListWorkers()) {
    if (!w.has_suspect() || !measured_healthy.count(w.name())) continue;
    if (runs_->ClearWorker(w.name(), absl::StrCat("measured healthy by ", name), now).ok()) {
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
