// SPDX-License-Identifier: Apache-2.0
#include "analysis/suite.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "api/run_flags.h"

namespace collbench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kSmall[] = R"({
  "name": "small", "seed": "999", "paper": "A paper", "question": "Which is faster?",
  "profiles": {"ci": {"bytes": "1K"}, "paper": {"bytes": "1M"}},
  "parts": [{
    "name": "p", "operation": "allreduce", "flags": ["--sizes", "${bytes}"],
    "axes": [
      {"name": "lib", "values": [{"value": "openmpi", "flags": ["--mpi", "openmpi"]},
                                 {"value": "mpich", "flags": ["--mpi", "mpich"]}]},
      {"name": "place", "values": [{"value": "multi", "flags": ["--placement", "pack"]},
                                   {"value": "single", "flags": ["--placement", "spread"]},
                                   {"value": "gpu", "needs": {"gpus_per_worker": 2}}]}
    ],
    "exclude": [{"lib": "mpich", "place": "gpu"}],
    "tables": [
      {"id": "T1", "title": "single against multi", "rows": ["lib"], "pivot": "place",
       "measure": "avg_us", "ratios": [{"name": "single/multi", "of": "single", "to": "multi"}],
       "checks": [{"column": "single/multi", "relation": ">", "value": 1, "paper": "4.01"}]},
      {"id": "T2", "title": "best and worst", "kind": "best", "rows": [], "measure": "avg_us"},
      {"id": "T3", "title": "winner per size", "kind": "winner", "pivot": "lib", "measure": "avg_us",
       "where": {"place": "multi"},
       "checks": [{"column": "winners", "relation": ">", "value": 1, "paper": "no single winner"}]}
    ]
  }]
})";

Suite Small() {
  absl::StatusOr<Suite> suite = ParseSuite(kSmall);
  EXPECT_TRUE(suite.ok()) << suite.status();
  return *suite;
}

TEST(SuiteExpandTest, EveryCombinationLessTheExcludedInAxisOrder) {
  absl::StatusOr<std::vector<SuiteCell>> cells = ExpandSuite(Small(), "ci");
  ASSERT_TRUE(cells.ok()) << cells.status();
  std::vector<std::string> labels;
  for (const SuiteCell& c : *cells) labels.push_back(c.Label());
  EXPECT_THAT(labels, ElementsAre("p:lib=openmpi,place=multi", "p:lib=openmpi,place=single",
                                  "p:lib=openmpi,place=gpu", "p:lib=mpich,place=multi",
                                  "p:lib=mpich,place=single"));
  EXPECT_EQ((*cells)[1].operation, "allreduce");
  EXPECT_THAT((*cells)[1].flags,
              ElementsAre("--sizes", "1K", "--mpi", "openmpi", "--placement", "spread"));
  EXPECT_EQ((*cells)[2].needs.gpus_per_worker, 2);
}

TEST(SuiteExpandTest, ProfilesSetTheVariables) {
  absl::StatusOr<std::vector<SuiteCell>> cells = ExpandSuite(Small(), "paper");
  ASSERT_TRUE(cells.ok());
  EXPECT_EQ((*cells)[0].flags[1], "1M");
  absl::StatusOr<std::vector<SuiteCell>> none = ExpandSuite(Small(), "huge");
  EXPECT_THAT(none.status().message(), HasSubstr("no profile 'huge' (ci, paper)"));
}

TEST(SuiteExpandTest, AnUnsetVariableIsNamed) {
  std::string text = kSmall;
  text.replace(text.find("${bytes}"), 8, "${size}");
  absl::StatusOr<std::vector<SuiteCell>> cells = ExpandSuite(*ParseSuite(text), "ci");
  EXPECT_THAT(cells.status().message(), HasSubstr("profile 'ci' does not set ${size}"));
}

// A value with `profiles` is expanded only in those; a profile it names
// that the suite lacks is an error.
TEST(SuiteExpandTest, AValueLimitedToProfilesIsLeftOutElsewhere) {
  std::string text = kSmall;
  const std::string single = R"({"value": "single", "flags": ["--placement", "spread"]})";
  text.replace(text.find(single), single.size(),
               R"({"value": "single", "flags": ["--placement", "spread"], "profiles": ["paper"]})");
  absl::StatusOr<Suite> suite = ParseSuite(text);
  ASSERT_TRUE(suite.ok()) << suite.status();
  absl::StatusOr<std::vector<SuiteCell>> ci = ExpandSuite(*suite, "ci");
  absl::StatusOr<std::vector<SuiteCell>> paper = ExpandSuite(*suite, "paper");
  ASSERT_TRUE(ci.ok() && paper.ok());
  EXPECT_EQ(ci->size(), 3u);
  EXPECT_EQ(paper->size(), 5u);
  for (const SuiteCell& c : *ci) EXPECT_NE(c.Value("place"), "single");

  text.replace(text.find(R"(["paper"])"), 9, R"(["papr"])");
  EXPECT_THAT(ExpandSuite(*ParseSuite(text), "ci").status().message(),
              HasSubstr("value single names profile 'papr', which the suite does not have"));
}

TEST(SuiteParseTest, MistakesAreNamedWithTheirPlace) {
  std::string text = kSmall;
  text.replace(text.find("\"kind\": \"best\""), 14, "\"kind\": \"bset\"");
  EXPECT_THAT(ParseSuite(text).status().message(),
              HasSubstr("parts[0].tables[1].kind must be pivot, best or winner"));
  EXPECT_THAT(ParseSuite("{").status().message(), HasSubstr("not valid JSON"));
  EXPECT_THAT(ParseSuite(R"({"name": "x", "profiles": {}, "parts": [{"name": 3}]})").status().message(),
              HasSubstr("parts[0].name must be a string"));
}

TEST(SuiteSkipTest, ReasonsNameWhatIsMissing) {
  SuiteCapabilities caps;
  caps.workers = 4;
  caps.max_slots = 2;
  SuiteCell cell;
  EXPECT_EQ(SkipReason(cell, 2, 2, caps), "");
  EXPECT_EQ(SkipReason(cell, 4, 4, caps),
            "needs a worker with 4 slots (the largest has 2; e.g. collbench local --slots 4)");
  EXPECT_EQ(SkipReason(cell, 5, 1, caps), "needs 5 workers (4 registered)");
  cell.needs.gpus_per_worker = 2;
  EXPECT_EQ(SkipReason(cell, 2, 1, caps), "needs 2 GPUs on a worker");
  cell.needs = {};
  cell.needs.memory_kind = "hbw";
  EXPECT_EQ(SkipReason(cell, 2, 1, caps), "needs --memory hbw (no worker offers it)");
  cell.needs.missing = "the object path is not in the engine yet";
  EXPECT_EQ(SkipReason(cell, 2, 1, caps), "the object path is not in the engine yet");
}

// needs.worker_labels: a cell runs only where enough ready workers carry
// every label it names; the reason names the labels short and what such
// workers are.
TEST(SuiteSkipTest, WorkerLabelsAreMatchedOnEnoughWorkers) {
  SuiteCapabilities caps;
  caps.workers = 4;
  caps.max_slots = 3;
  caps.worker_labels = {{{"hosts", "netns"}, {"link", "veth"}},
                        {{"hosts", "netns"}, {"link", "veth"}},
                        {{"hosts", "netns"}, {"link", "tbf-1gbit"}},
                        {}};
  SuiteCell cell;
  cell.needs.worker_labels = {{"hosts", "netns"}, {"link", "veth"}};
  cell.needs.labelled = "hosts in network namespaces joined by unshaped veth links (tests/netns)";
  EXPECT_EQ(SkipReason(cell, 2, 1, caps), "");   // two carry both
  EXPECT_EQ(SkipReason(cell, 3, 3, caps), "");   // one worker suffices
  EXPECT_EQ(SkipReason(cell, 3, 1, caps),
            "needs 3 workers labelled link=veth (only 2 carry them): hosts in network namespaces "
            "joined by unshaped veth links (tests/netns)");

  cell.needs.worker_labels = {{"hosts", "netns"}, {"link", "tbf-1gbit"}};
  cell.needs.labelled =
      "hosts in network namespaces joined by a 1 Gbit/s tc tbf link (tests/netns)";
  EXPECT_EQ(SkipReason(cell, 1, 1, caps), "");
  EXPECT_EQ(SkipReason(cell, 2, 1, caps),
            "needs 2 workers labelled link=tbf-1gbit (only 1 carries them): hosts in network namespaces "
            "joined by a 1 Gbit/s tc tbf link (tests/netns)");

  caps.worker_labels = {{}, {}, {}, {}};  // collbench local: no labels at all
  EXPECT_EQ(SkipReason(cell, 2, 1, caps),
            "needs workers labelled hosts=netns, link=tbf-1gbit: hosts in network namespaces "
            "joined by a 1 Gbit/s tc tbf link (tests/netns)");
  cell.needs.labelled.clear();
  EXPECT_EQ(SkipReason(cell, 2, 1, caps), "needs workers labelled hosts=netns, link=tbf-1gbit");

  // Each label is carried by two workers, but no worker carries both.
  caps.worker_labels = {{{"hosts", "netns"}}, {{"hosts", "netns"}},
                        {{"link", "tbf-1gbit"}}, {{"link", "tbf-1gbit"}}};
  EXPECT_EQ(SkipReason(cell, 2, 1, caps), "needs workers labelled hosts=netns, link=tbf-1gbit");
}

TEST(SuiteSkipTest, CarriesLabelsWantsEveryOneWithItsValue) {
  EXPECT_TRUE(CarriesLabels({{"link", "veth"}, {"rack", "a"}}, {{"link", "veth"}}));
  EXPECT_TRUE(CarriesLabels({}, {}));
  EXPECT_FALSE(CarriesLabels({{"link", "veth"}}, {{"link", "tbf-1gbit"}}));
  EXPECT_FALSE(CarriesLabels({{"link", "veth"}}, {{"link", "veth"}, {"hosts", "netns"}}));
}

TEST(SuiteParseTest, NeedsNameWorkerLabelsAndNothingUnknown) {
  std::string text = kSmall;
  const std::string gpu = R"({"value": "gpu", "needs": {"gpus_per_worker": 2}})";
  text.replace(text.find(gpu), gpu.size(),
               R"({"value": "gpu", "needs": {"worker_labels": {"link": "tbf-1gbit"},
                                              "labelled": "behind a 1 Gbit/s link"}})");
  absl::StatusOr<Suite> suite = ParseSuite(text);
  ASSERT_TRUE(suite.ok()) << suite.status();
  absl::StatusOr<std::vector<SuiteCell>> cells = ExpandSuite(*suite, "ci");
  ASSERT_TRUE(cells.ok()) << cells.status();
  const SuiteCell& cell = (*cells)[2];
  ASSERT_EQ(cell.Label(), "p:lib=openmpi,place=gpu");
  EXPECT_EQ(cell.needs.worker_labels, (std::map<std::string, std::string>{{"link", "tbf-1gbit"}}));
  EXPECT_EQ(cell.needs.labelled, "behind a 1 Gbit/s link");
  EXPECT_TRUE((*cells)[0].needs.worker_labels.empty());

  std::string bad = text;
  bad.replace(bad.find("\"link\": \"tbf-1gbit\""), 19, "\"Link\": \"tbf-1gbit\"");
  EXPECT_THAT(ParseSuite(bad).status().message(),
              HasSubstr("parts[0].axes[1].values[2].needs.worker_labels label key 'Link' must "
                        "start with a lower-case letter or a digit"));
  bad = kSmall;
  bad.replace(bad.find("\"gpus_per_worker\""), 17, "\"netns_hosts\"");
  EXPECT_THAT(ParseSuite(bad).status().message(),
              HasSubstr("parts[0].axes[1].values[2].needs.netns_hosts is not a need"));
}

// The veth rows of dl-framework-scaling run on labelled workers only: on
// `collbench local` (no labels) they are skipped saying which labels.
TEST(BuiltinSuitesTest, TheVethRowsNeedLabelledWorkers) {
  absl::StatusOr<Suite> suite = FindSuite("dl-framework-scaling");
  ASSERT_TRUE(suite.ok()) << suite.status();
  absl::StatusOr<std::vector<SuiteCell>> cells = ExpandSuite(*suite, "ci");
  ASSERT_TRUE(cells.ok()) << cells.status();
  std::map<std::string, std::map<std::string, std::string>> labels;
  for (const SuiteCell& c : *cells) {
    EXPECT_TRUE(c.needs.missing.empty()) << c.Label();
    if (!c.needs.worker_labels.empty()) labels[c.Label()] = c.needs.worker_labels;
  }
  using Labels = std::map<std::string, std::string>;
  const Labels veth = {{"hosts", "netns"}, {"link", "veth"}};
  const Labels tbf = {{"hosts", "netns"}, {"link", "tbf-1gbit"}};
  EXPECT_EQ(labels, (std::map<std::string, Labels>{{"netpipe:transport=tcp-veth", veth},
                                                   {"netpipe:transport=tcp-veth-1g", tbf},
                                                   {"scaling:fabric=slow-1g", tbf}}));
  SuiteCapabilities local;
  local.workers = 4;
  local.max_slots = 4;
  local.worker_labels.resize(4);
  for (const SuiteCell& c : *cells) {
    if (c.Label() != "scaling:fabric=slow-1g") continue;
    EXPECT_EQ(SkipReason(c, 4, 1, local),
              "needs workers labelled hosts=netns, link=tbf-1gbit: hosts in network namespaces "
              "joined by a 1 Gbit/s tc tbf link (tests/netns)");
  }
}

// A finished run of `cell` with one result per (bytes, avg_us).
RunWithResults Ran(const std::vector<std::pair<uint64_t, double>>& sizes) {
  RunWithResults run;
  run.run.set_state(v1::SUCCEEDED);
  for (const auto& [bytes, avg_us] : sizes) {
    v1::SizeResult r;
    r.set_operation("allreduce");
    r.set_bytes(bytes);
    r.set_avg_s(avg_us * 1e-6);
    run.results.push_back(r);
  }
  return run;
}

const Table& Find(const std::vector<Table>& tables, const std::string& id) {
  for (const Table& t : tables) {
    if (t.id == id) return t;
  }
  ADD_FAILURE() << "no table " << id;
  static Table none;
  return none;
}

class SuiteRenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    suite_ = Small();
    cells_ = *ExpandSuite(suite_, "ci");
    // openmpi: single 4x slower than multi; mpich: single faster than multi.
    outcome_.runs["p:lib=openmpi,place=multi"] = Ran({{8, 10}, {1024, 20}, {65536, 400}});
    outcome_.runs["p:lib=openmpi,place=single"] = Ran({{8, 40}, {1024, 80}, {65536, 800}});
    outcome_.runs["p:lib=mpich,place=multi"] = Ran({{8, 12}, {1024, 25}, {65536, 200}});
    outcome_.runs["p:lib=mpich,place=single"] = Ran({{8, 11}, {1024, 24}, {65536, 150}});
    outcome_.skipped["p:lib=openmpi,place=gpu"] = "needs 2 GPUs on a worker";
    tables_ = RenderSuite(suite_, cells_, outcome_);
  }
  Suite suite_;
  std::vector<SuiteCell> cells_;
  SuiteOutcome outcome_;
  std::vector<Table> tables_;
};

TEST_F(SuiteRenderTest, PivotHasTheValuesTheRatioAndTheVerdict) {
  const Table& t = Find(tables_, "T1");
  EXPECT_THAT(t.columns, ElementsAre("lib", "multi", "single", "gpu", "single/multi", "paper", "agrees"));
  ASSERT_EQ(t.rows.size(), 2u);
  // The largest size is the one a table without @bytes reads.
  EXPECT_THAT(t.rows[0], ElementsAre("openmpi", "400", "800", "-", "2.000", "4.01",
                                     "yes (single/multi > 1)"));
  EXPECT_THAT(t.rows[1], ElementsAre("mpich", "200", "150", "-", "0.750", "4.01",
                                     "no (single/multi > 1)"));
}

// Two checks quoting the same paper figure: the figure once, each verdict.
TEST_F(SuiteRenderTest, APaperFigureTwoChecksQuoteIsPrintedOnce) {
  SuiteCheck second = suite_.parts[0].tables[0].checks[0];
  second.relation = "<";
  suite_.parts[0].tables[0].checks.push_back(second);
  const Table t = Find(RenderSuite(suite_, cells_, outcome_), "T1");
  EXPECT_THAT(t.rows[0], ElementsAre("openmpi", "400", "800", "-", "2.000", "4.01",
                                     "yes (single/multi > 1); no (single/multi < 1)"));
}

TEST_F(SuiteRenderTest, SkippedCellsAreNamedWithTheirReason) {
  const Table& t = Find(tables_, "T1");
  bool found = false;
  for (const std::string& note : t.notes) {
    found |= note == "skipped: needs 2 GPUs on a worker (1 cell: lib=openmpi,place=gpu)";
  }
  EXPECT_TRUE(found) << testing::PrintToString(t.notes);
}

TEST_F(SuiteRenderTest, BestAndWorstWithTheReduction) {
  const Table& t = Find(tables_, "T2");
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_THAT(t.rows[0], ElementsAre("mpich/single", "150", "openmpi/single", "800", "5.333", "81.2"));
}

TEST_F(SuiteRenderTest, WinnersMergeIntoRangesWithTheSwitchPoint) {
  const Table& t = Find(tables_, "T3");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_THAT(t.rows[0], ElementsAre("8-1K", "openmpi", "20-25"));
  EXPECT_THAT(t.rows[1], ElementsAre("64K", "mpich", "100"));
  EXPECT_THAT(t.notes, testing::Contains("switch point: openmpi -> mpich at 64K"));
  EXPECT_THAT(t.notes, testing::Contains("paper: no single winner; this run: 2 winner(s) — agrees: yes"));
}

TEST(MeasureTest, DerivedMeasures) {
  v1::SizeResult r;
  r.set_bytes(1000000);
  r.set_avg_s(0.001);
  (*r.mutable_scenario())["comm_s_per_step"] = 0.25;
  (*r.mutable_scenario())["efficiency"] = 0.9;
  double v = 0;
  ASSERT_TRUE(MeasureValue("throughput_MBps", r, &v));
  EXPECT_DOUBLE_EQ(v, 1000);
  ASSERT_TRUE(MeasureValue("scenario:comm_s_per_step", r, &v));
  EXPECT_DOUBLE_EQ(v, 250);  // _s values are shown in ms
  ASSERT_TRUE(MeasureValue("scenario:efficiency", r, &v));
  EXPECT_DOUBLE_EQ(v, 0.9);
  EXPECT_FALSE(MeasureValue("scenario:missing", r, &v));
  EXPECT_FALSE(MeasureValue("furlongs", r, &v));
}

// Every built-in suite parses, expands in both profiles, and every cell's
// flags are flags `collbench run` accepts (the suite's own --groups aside).
TEST(BuiltinSuitesTest, AllFiveParseExpandAndMakeValidRuns) {
  ASSERT_EQ(BuiltinSuites().size(), 5u);
  for (const Suite& suite : BuiltinSuites()) {
    for (const std::string profile : {"ci", "paper"}) {
      absl::StatusOr<std::vector<SuiteCell>> cells = ExpandSuite(suite, profile);
      ASSERT_TRUE(cells.ok()) << suite.name << " " << profile << ": " << cells.status();
      EXPECT_FALSE(cells->empty());
      for (const SuiteCell& cell : *cells) {
        std::vector<std::string> flags = {cell.operation};
        for (size_t i = 0; i < cell.flags.size(); ++i) {
          if (cell.flags[i] == "--groups") {
            ++i;
            continue;
          }
          flags.push_back(cell.flags[i]);
        }
        absl::StatusOr<v1::RunSpec> spec = SpecFromRunFlags(flags);  // as the coordinator plans it
        EXPECT_TRUE(spec.ok()) << suite.name << " " << cell.Label() << ": " << spec.status();
        EXPECT_LE(cell.Label().size(), 256u) << "a label value holds at most 256 characters";
      }
    }
  }
}

// A check's `where` names row keys of its table, so it applies somewhere.
TEST(BuiltinSuitesTest, ChecksApplyToTheirTablesRows) {
  for (const Suite& suite : BuiltinSuites()) {
    for (const SuitePart& part : suite.parts) {
      for (const SuiteTable& table : part.tables) {
        for (const SuiteCheck& check : table.checks) {
          for (const auto& [key, value] : check.where) {
            EXPECT_THAT(table.rows, testing::Contains(key))
                << suite.name << " " << table.id << ": check on " << check.column;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace collbench
