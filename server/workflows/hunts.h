// SPDX-License-Identifier: Apache-2.0
// Hunts as workflows (docs/design/workflows.md#hunts; hunt.proto). The plan: the
// workers selected at create time (kept in the workflow's
// output.hunt.workers, so the rounds can be recomputed after a restart),
// and from them the survey's rounds (pairwise rounds, group deals, the
// ring), each round's runs on disjoint hosts so they run at the same time.
// Then the re-test rounds from the survey's findings, and the output.
// Plain functions of protos: tests drive them without a coordinator; the
// WorkflowManager creates and follows the runs and applies the quarantine.
#ifndef COLLBENCH_SERVER_WORKFLOWS_HUNTS_H_
#define COLLBENCH_SERVER_WORKFLOWS_HUNTS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/hunt_localise.h"
#include "analysis/hunt_plan.h"
#include "analysis/pairwise_rounds.h"
#include "analysis/run_set.h"
#include "collbench/v1/worker.pb.h"
#include "collbench/v1/workflow.pb.h"
#include "server/workflows/workflow_plan.h"

namespace collbench::workflows {

// Labels every run of a hunt carries: hunt=ID and hunt-phase=PHASE.
inline constexpr char kHuntLabel[] = "hunt";
inline constexpr char kHuntPhaseLabel[] = "hunt-phase";

// One run of a hunt.
struct HuntRun {
  std::string phase;    // pairwise | groups | ring | repeat | retest
  WorkerGroup workers;  // rank order, one rank each
};
using HuntRound = std::vector<HuntRun>;

struct HuntPlan {
  // The workers selected (worker, host_id and admission_order set), in the
  // fleet's order.
  std::vector<v1::HuntWorker> workers;
  std::vector<std::string> header;  // lines above the output's tables
  int survey_runs = 0;
};

// The hunt of `spec.hunt` over the workers `spec.workers` selects among
// `workers` (READY, BUSY or SUSPECT; not LOST nor DRAINING), its run specs
// checked with `check`. InvalidArgument naming the field: a bad pattern,
// operation, size, group size, threshold, or workers on fewer than two
// hosts.
absl::StatusOr<HuntPlan> PlanHunt(const v1::WorkflowSpec& spec, const std::string& id,
                                  const std::vector<v1::Worker>& workers,
                                  const RunChecker& check);

// The survey's rounds for the selected workers (deterministic): the
// pairwise rounds made one at a time (a hunt over 5,000 hosts has 12.5
// million pairs), then the group deals, then the ring.
class SurveyPlan {
 public:
  SurveyPlan(const v1::HuntSpec& spec, const std::vector<v1::HuntWorker>& selected);
  size_t rounds() const { return pairwise_.rounds() + rest_.size(); }
  size_t runs() const { return runs_; }
  // REQUIRES: r < rounds().
  HuntRound Round(size_t r) const;

 private:
  PairwisePlan pairwise_;
  std::vector<HuntRound> rest_;  // the group deals and the ring
  size_t runs_ = 0;
};

// What one of the hunt's runs runs: the spec's operation and sizes, one
// rank per worker in the given order, labelled.
v1::RunSpec HuntRunSpec(const v1::WorkflowSpec& spec, const std::string& id, const HuntRun& run);

// "pairwise w1 w2": a cell's label.
std::string HuntRunLabel(const HuntRun& run);

// The figure of one run (its largest size's bus bandwidth from the median
// iteration, its smallest size's median time), or why it has none.
v1::HuntMeasurement MeasurementOf(const HuntRun& planned, int round, const RunWithResults& run);

// Workers a ring run found well behind the others at its largest size.
std::vector<std::string> RingStragglers(const RunWithResults& run);

HuntThresholds ThresholdsOf(const v1::HuntSpec& spec);

// The suspects as a table, worst first, "(SUSPECT)" after the quarantined.
v1::OutputTable SuspectsTable(const v1::HuntOutput& hunt);

// A hunt's page: its header, the suspects, the pairwise heat map, the
// per-worker distribution, the workers' table and the notes. A hunt still
// going (no output.hunt measurements yet) gets its plan.
std::string HuntReportHtml(const v1::Workflow& workflow);

// The heat map and the distribution, for a page that already has the
// tables (the coordinator's /ui/workflows/ID).
std::string HuntFiguresHtml(const v1::HuntOutput& hunt);

// The survey judged: measurements scored in place, workers, findings, the
// reference the re-tests are scored against, and the re-test rounds.
struct HuntSurvey {
  std::vector<v1::HuntWorker> workers;
  HuntFindings findings;
  RobustCentre reference;
  std::vector<HuntRound> retest_rounds;
};
HuntSurvey AnalyseSurvey(const v1::HuntSpec& spec, const std::vector<v1::HuntWorker>& selected,
                         const std::vector<std::string>& stragglers,
                         std::vector<v1::HuntMeasurement>* survey);

// A slow link is measured once more before it is judged: a moment's
// contention on the fabric or the hosts slows one run, a bad link every
// one. The rounds that repeat the survey's slow links (phase "repeat"),
// on disjoint hosts; empty when there is none.
std::vector<HuntRound> RepeatRounds(const HuntSurvey& analysed,
                                    const std::vector<v1::HuntWorker>& selected);

// Folds the repeats into the survey: of a pair measured twice, the better
// run stands for it (phase pairwise, counted) and the other is set aside
// (phase repeat, not counted, appended to `set_aside`). Contention only
// ever slows a run, so the better of two is the truer figure of the link.
void FoldRepeats(std::vector<v1::HuntMeasurement> repeats,
                 std::vector<v1::HuntMeasurement>* survey,
                 std::vector<v1::HuntMeasurement>* set_aside);

// The hunt's output once its re-tests ran (re-tests scored in place):
// suspects ranked, measurements, workers, notes, and the tables.
// `set_aside`: the runs FoldRepeats did not count, listed with the pairs.
v1::WorkflowOutput HuntOutputOf(const v1::HuntSpec& spec, const HuntSurvey& survey,
                                const std::vector<v1::HuntMeasurement>& measurements,
                                std::vector<v1::HuntMeasurement>* retests,
                                std::vector<v1::HuntMeasurement> set_aside = {});

}  // namespace collbench::workflows

#endif  // COLLBENCH_SERVER_WORKFLOWS_HUNTS_H_
