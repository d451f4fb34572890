// SPDX-License-Identifier: Apache-2.0
// WorkflowManager: running a hunt (hunts.h). The survey's rounds one after
// another, every run of a round created at once so they run at the same
// time on their disjoint hosts; then the repeats of slow links and the
// re-test rounds; then the verdicts, and the quarantine of the workers
// confirmed bad. Driven as the cells of other workflows are: the round's
// runs' state changes wake the hunt, and each Advance goes as far as it
// can without waiting (HuntExecution keeps where it is between them).
//
// A hunt's cells are the runs of its current round only: a 1,000-worker
// pairwise hunt has half a million runs, which the workflow could not carry
// and store after every change. Its runs' request ids
// ("<workflow>/round-<r>-<i>") make a restarted coordinator adopt the runs
// a round had already created, and the rounds are recomputed from the
// workers the plan selected (output.hunt.workers).
#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "api/convert.h"
#include "server/core/run_manager.h"  // kScheduleLabel
#include "server/workflows/hunts.h"
#include "server/workflows/run_selection.h"
#include "server/workflows/workflow_execution.h"
#include "server/workflows/workflow_manager.h"

namespace collbench {
namespace {

int CountRuns(const std::vector<workflows::HuntRound>& rounds) {
  int runs = 0;
  for (const workflows::HuntRound& r : rounds) runs += static_cast<int>(r.size());
  return runs;
}

// Where the round's measurements go, by the phase it belongs to.
std::vector<v1::HuntMeasurement>* MeasurementsOf(HuntExecution* hunt) {
  switch (hunt->phase) {
    case HuntExecution::Phase::kSurvey:
      return &hunt->survey;
    case HuntExecution::Phase::kRepeat:
      return &hunt->repeats;
    case HuntExecution::Phase::kRetest:
      break;
  }
  return &hunt->retests;
}

}  // namespace

void WorkflowManager::AdvanceHunt(const std::string& name, const v1::Workflow& snapshot,
                                  HuntExecution* hunt) {
  for (;;) {
    if (StoppingOrGone(name)) return;
    if (!hunt->round_open) {
      if (Cancelling(name)) {  // between rounds: no next one
        Finish(name, v1::WORKFLOW_CANCELLED, "cancelled", {});
        return;
      }
      std::optional<workflows::HuntRound> next = NextHuntRound(name, hunt);
      if (!next.has_value()) {
        FinishHunt(name, snapshot, hunt);  // `hunt` is gone after this
        return;
      }
      OpenRound(name, hunt, *std::move(next));
    }
    if (!AdvanceRound(name, hunt)) return;  // a run's event or the tick wakes it
    CloseRound(name, hunt);
  }
}

std::optional<workflows::HuntRound> WorkflowManager::NextHuntRound(const std::string& name,
                                                                   HuntExecution* hunt) {
  const v1::HuntSpec& spec = hunt->spec;
  if (hunt->phase == HuntExecution::Phase::kSurvey) {
    if (hunt->phase_round < hunt->survey_plan.rounds()) {
      return hunt->survey_plan.Round(hunt->phase_round++);
    }
    hunt->analysed =
        workflows::AnalyseSurvey(spec, hunt->selected, hunt->stragglers, &hunt->survey);
    // The slow links once more, the better of two runs standing for each,
    // before anything is judged.
    hunt->repeat_rounds = workflows::RepeatRounds(hunt->analysed, hunt->selected);
    hunt->phase = HuntExecution::Phase::kRepeat;
    hunt->phase_round = 0;
    if (!hunt->repeat_rounds.empty()) {
      SetCellsTotal(name, static_cast<int>(hunt->survey.size()) + CountRuns(hunt->repeat_rounds));
    }
  }
  if (hunt->phase == HuntExecution::Phase::kRepeat) {
    if (hunt->phase_round < hunt->repeat_rounds.size()) {
      return hunt->repeat_rounds[hunt->phase_round++];
    }
    if (!hunt->repeat_rounds.empty()) {
      workflows::FoldRepeats(std::move(hunt->repeats), &hunt->survey, &hunt->set_aside);
      hunt->analysed =
          workflows::AnalyseSurvey(spec, hunt->selected, hunt->stragglers, &hunt->survey);
    }
    hunt->phase = HuntExecution::Phase::kRetest;
    hunt->phase_round = 0;
    SetCellsTotal(name, static_cast<int>(hunt->survey.size() + hunt->set_aside.size()) +
                            CountRuns(hunt->analysed.retest_rounds));
  }
  if (hunt->phase_round < hunt->analysed.retest_rounds.size()) {
    return hunt->analysed.retest_rounds[hunt->phase_round++];
  }
  return std::nullopt;
}

void WorkflowManager::OpenRound(const std::string& name, HuntExecution* hunt,
                                workflows::HuntRound planned) {
  ++hunt->round;
  hunt->planned = std::move(planned);
  hunt->round_open = true;
  hunt->cancel_sent = false;
  hunt->runs.assign(hunt->planned.size(), "");
  hunt->ended.assign(hunt->planned.size(), false);
  hunt->to_create.clear();
  for (size_t i = 0; i < hunt->planned.size(); ++i) hunt->to_create.push_back(i);
  const std::string id(absl::StripPrefix(name, "workflows/"));
  Update(name, [&](v1::Workflow& workflow) {
    const v1::WorkflowSpec& spec = workflow.spec();
    workflow.clear_cells();
    for (const workflows::HuntRun& run : hunt->planned) {
      v1::WorkflowCell* cell = workflow.add_cells();
      cell->set_label(workflows::HuntRunLabel(run));
      *cell->mutable_spec() = workflows::HuntRunSpec(spec, id, run);
      if (!spec.schedule().empty()) {
        (*cell->mutable_spec()->mutable_labels())[kScheduleLabel] =
            std::string(absl::StripPrefix(spec.schedule(), "schedules/"));
      }
      cell->set_round(hunt->round);
    }
  });
}

bool WorkflowManager::AdvanceRound(const std::string& name, HuntExecution* hunt) {
  CreateRoundRuns(name, hunt);
  if (!hunt->to_create.empty()) {  // not idle yet, or the queue or the rate was full
    WakeAt(name, clock_->Now());
    return false;
  }
  return FollowRoundRuns(name, hunt);
}

void WorkflowManager::CreateRoundRuns(const std::string& name, HuntExecution* hunt) {
  // The round is admitted as one group (WorkflowRuns::CreateRuns) before any
  // run is followed: the scheduler places it once and starts all whose
  // hosts are free together.
  const absl::StatusOr<v1::Workflow> snapshot = Get(name);
  if (!snapshot.ok()) return;
  const bool scheduled = !snapshot->spec().schedule().empty();
  while (!hunt->to_create.empty()) {
    // Cancelled: the runs not made yet never are.
    if (Cancelling(name)) {
      hunt->to_create.clear();
      return;
    }
    // A scheduled hunt's run waits for its workers to be idle, so a user's
    // run never waits behind it.
    std::vector<WorkflowRuns::Request> requests;
    std::vector<size_t> asked;
    std::vector<size_t> later;
    for (const size_t i : hunt->to_create) {
      const v1::RunSpec& spec = snapshot->cells(static_cast<int>(i)).spec();
      if (scheduled && !runs_->WorkersIdle(absl::StrJoin(spec.placement().workers(), ",")).ok()) {
        later.push_back(i);
        continue;
      }
      requests.push_back({spec, absl::StrCat(name, "/round-", hunt->round, "-", i)});
      asked.push_back(i);
    }
    std::vector<absl::StatusOr<v1::Run>> created;
    if (!requests.empty()) created = runs_->CreateRuns(requests, clock_->Now(), name);
    std::vector<std::string> made;
    Update(name, [&](v1::Workflow& workflow) {
      for (size_t k = 0; k < asked.size(); ++k) {
        const size_t i = asked[k];
        if (absl::IsResourceExhausted(created[k].status())) {
          later.push_back(i);
          continue;
        }
        v1::WorkflowCell* cell = workflow.mutable_cells(static_cast<int>(i));
        if (!created[k].ok()) {
          cell->set_state(v1::FAILED);
          cell->set_error(absl::StrCat("not accepted: ", created[k].status().message()));
          continue;
        }
        hunt->runs[i] = created[k]->name();
        cell->set_run(hunt->runs[i]);
        cell->set_state(created[k]->state());
        made.push_back(hunt->runs[i]);
      }
    });
    for (const std::string& run : made) Watch(name, run);
    std::sort(later.begin(), later.end());
    const bool progressed = later.size() < hunt->to_create.size();
    hunt->to_create = std::move(later);
    if (!progressed) return;  // the tick tries again
  }
}

std::optional<v1::Run> WorkflowManager::LookAtRoundRun(const std::string& run, bool may_cancel) {
  absl::StatusOr<v1::Run> now = runs_->GetRun(run);
  if (!now.ok()) return std::nullopt;
  if (now->state() == v1::QUEUED && may_cancel) {
    // A run of the round that waits for a worker that is gone would hold
    // the hunt: it is cancelled, and measured as failed.
    std::string lost;  // a copy: `now` is read again below
    for (const std::string& worker : now->spec().placement().workers()) {
      absl::StatusOr<v1::Worker> w = runs_->GetWorker(worker);
      if (!w.ok() || w->state() == v1::LOST) {
        lost = worker;
        break;
      }
    }
    if (!lost.empty()) {
      (void)runs_->CancelRun(run, clock_->Now());
      now = runs_->GetRun(run);
      if (now.ok()) now->set_error(absl::StrCat(lost, " is lost"));
    }
  }
  return now.ok() ? std::optional<v1::Run>(*now) : std::nullopt;
}

bool WorkflowManager::FollowRoundRuns(const std::string& name, HuntExecution* hunt) {
  if (Cancelling(name) && !hunt->cancel_sent) {  // Cancel() stopped one; the others here
    for (size_t i = 0; i < hunt->runs.size(); ++i) {
      if (!hunt->ended[i] && !hunt->runs[i].empty()) {
        (void)runs_->CancelRun(hunt->runs[i], clock_->Now());
      }
    }
    hunt->cancel_sent = true;
  }
  bool queued = false;  // a run still waits: its workers may be lost, which no run event says
  std::vector<std::string> finished;
  std::vector<std::optional<v1::Run>> seen(hunt->runs.size());
  for (size_t i = 0; i < hunt->runs.size(); ++i) {
    // Not accepted (or the workflow is being cancelled): nothing to follow.
    if (hunt->ended[i] || hunt->runs[i].empty()) continue;
    seen[i] = LookAtRoundRun(hunt->runs[i], !hunt->cancel_sent);
  }
  bool all_ended = true;
  Update(name, [&](v1::Workflow& workflow) {
    for (size_t i = 0; i < hunt->runs.size(); ++i) {
      if (hunt->ended[i]) continue;
      const std::optional<v1::Run>& now = seen[i];
      const bool ended =
          hunt->runs[i].empty() || !now.has_value() || IsFinalRunState(now->state());
      v1::WorkflowCell* cell = workflow.mutable_cells(static_cast<int>(i));
      if (now.has_value() && now->state() != cell->state()) {
        cell->set_state(now->state());
        cell->set_error(now->error());
      }
      if (!ended) {
        all_ended = false;
        queued = queued || now->state() == v1::QUEUED;
        continue;
      }
      hunt->ended[i] = true;
      workflow.set_cells_done(workflow.cells_done() + 1);
      if (!hunt->runs[i].empty()) finished.push_back(hunt->runs[i]);
    }
  });
  for (const std::string& run : finished) Unwatch(name, run);
  if (queued) WakeAt(name, clock_->Now());
  return all_ended;
}

void WorkflowManager::CloseRound(const std::string& name, HuntExecution* hunt) {
  // Index by index: a run never accepted (or deleted since) ends as FAILED
  // with its reason.
  std::vector<v1::HuntMeasurement>* into = MeasurementsOf(hunt);
  for (size_t i = 0; i < hunt->runs.size(); ++i) {
    std::vector<RunWithResults> fetched =
        hunt->runs[i].empty() ? std::vector<RunWithResults>()
                              : workflows::FetchRuns(*runs_, {hunt->runs[i]});
    if (fetched.empty()) {
      RunWithResults failed;
      failed.run.set_name(hunt->runs[i]);
      failed.run.set_state(v1::FAILED);
      absl::MutexLock lock(&mu_);
      const v1::WorkflowCell& cell = FindLocked(name)->cells(static_cast<int>(i));
      failed.run.set_error(cell.error().empty() ? "not created" : cell.error());
      fetched.push_back(std::move(failed));
    }
    into->push_back(workflows::MeasurementOf(hunt->planned[i], hunt->round, fetched.front()));
    if (hunt->planned[i].phase == "ring") {
      for (const std::string& w : workflows::RingStragglers(fetched.front())) {
        hunt->stragglers.push_back(w);
      }
    }
  }
  hunt->round_open = false;
}

void WorkflowManager::SetCellsTotal(const std::string& name, int runs) {
  Update(name, [runs](v1::Workflow& workflow) { workflow.set_cells_total(runs); });
}

void WorkflowManager::FinishHunt(const std::string& name, const v1::Workflow& snapshot,
                                 HuntExecution* hunt) {
  const v1::HuntSpec& spec = snapshot.spec().hunt();
  v1::WorkflowOutput output = workflows::HuntOutputOf(spec, hunt->analysed, hunt->survey,
                                                      &hunt->retests, std::move(hunt->set_aside));
  v1::HuntOutput& found = *output.mutable_hunt();
  for (const std::string& line : snapshot.output().header()) {  // the plan's caveats
    if (absl::StartsWith(line, "note: ")) found.add_notes(line.substr(6));
  }
  const std::vector<v1::HuntMeasurement>& survey = hunt->survey;
  const int measured = static_cast<int>(std::count_if(
      survey.begin(), survey.end(), [](const v1::HuntMeasurement& m) { return m.error().empty(); }));
  if (measured == 0) {
    Finish(name, v1::WORKFLOW_FAILED,
           absl::StrCat("none of the ", survey.size(), " survey runs succeeded",
                        survey.empty() ? "" : absl::StrCat(" (", survey[0].error(), ")")),
           output);
    return;
  }
  if (!spec.no_quarantine()) {
    Quarantine(name, spec, &found);
    for (v1::OutputTable& table : *output.mutable_tables()) {  // marks the quarantined
      if (table.id() == "suspects") table = workflows::SuspectsTable(found);
    }
  }
  Finish(name, v1::WORKFLOW_SUCCEEDED, "", output);
}

void WorkflowManager::Quarantine(const std::string& name, const v1::HuntSpec& spec,
                                 v1::HuntOutput* hunt) {
  const absl::Time now = clock_->Now();
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
  const HuntThresholds thresholds = workflows::ThresholdsOf(spec);
  for (const v1::HuntWorker& w : hunt->workers()) {
    const bool slow = SlowWorker(w, thresholds);
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

}  // namespace collbench
