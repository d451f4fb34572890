// SPDX-License-Identifier: Apache-2.0
#include "analysis/advisor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "analysis/algorithms.h"
#include "api/convert.h"
#include "common/histogram.h"

namespace collbench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A result of `bytes` whose samples are spread ±`spread` around `mean_us`.
v1::SizeResult Result(uint64_t bytes, double mean_us, double spread = 0.01, int samples = 400) {
  Histogram h;
  std::mt19937 rng(static_cast<uint32_t>(bytes + mean_us * 1000));
  std::uniform_real_distribution<double> jitter(1 - spread, 1 + spread);
  double sum = 0;
  for (int i = 0; i < samples; ++i) {
    const double ns = mean_us * 1000 * jitter(rng);
    h.Record(static_cast<uint64_t>(ns));
    sum += ns;
  }
  v1::SizeResult r;
  r.set_bytes(bytes);
  r.set_avg_s(sum / samples * 1e-9);
  r.set_iters(samples);
  *r.mutable_histogram() = HistogramToProto(h);
  return r;
}

// An Open MPI allreduce run forcing `algorithm` ("" for the default), with
// one result per (bytes, mean µs).
RunWithResults OpenMpiRun(const std::string& name, const std::string& algorithm,
                          const std::vector<std::pair<uint64_t, double>>& points, int ranks = 2,
                          double spread = 0.01) {
  RunWithResults r;
  r.run.set_name(name);
  r.run.set_state(v1::SUCCEEDED);
  v1::RunSpec* s = r.run.mutable_spec();
  s->set_operation("allreduce");
  s->set_ranks(ranks);
  s->set_mpi(v1::OPENMPI);
  if (!algorithm.empty()) {
    (*s->mutable_env())["OMPI_MCA_coll_tuned_use_dynamic_rules"] = "1";
    (*s->mutable_env())["OMPI_MCA_coll_tuned_allreduce_algorithm"] =
        absl::StrCat(OpenMpiAlgorithmNumber("allreduce", algorithm));
  }
  (*s->mutable_labels())["sweep"] = "sweep-1";
  for (const auto& [bytes, us] : points) r.results.push_back(Result(bytes, us, spread));
  return r;
}

TEST(AlgorithmsTest, ForcedAlgorithmReadsTheLibrariesVariables) {
  RunWithResults ring = OpenMpiRun("runs/a", "ring", {});
  EXPECT_EQ(ForcedAlgorithm(ring.run.spec()), "ring");
  // Without use_dynamic_rules Open MPI ignores the number.
  ring.run.mutable_spec()->mutable_env()->erase("OMPI_MCA_coll_tuned_use_dynamic_rules");
  EXPECT_EQ(ForcedAlgorithm(ring.run.spec()), "");
  v1::RunSpec mpich;
  mpich.set_operation("bcast");
  mpich.set_mpi(v1::MPICH);
  (*mpich.mutable_env())["MPIR_CVAR_BCAST_INTRA_ALGORITHM"] = "binomial";
  EXPECT_EQ(ForcedAlgorithm(mpich), "binomial");
  EXPECT_EQ(MpichAlgorithmVariable("reduce_scatter"),
            "MPIR_CVAR_REDUCE_SCATTER_BLOCK_INTRA_ALGORITHM");
  EXPECT_EQ(OpenMpiAlgorithmNumber("allreduce", "ring"), 4);
  EXPECT_EQ(OpenMpiAlgorithmNumber("allreduce", "no-such"), 0);
  EXPECT_EQ(OpenMpiCollectiveId("allreduce"), 2);
  EXPECT_EQ(OpenMpiCollectiveId("bcast"), 7);
  EXPECT_EQ(OpenMpiCollectiveId("latency"), -1);
}

TEST(MergeRangesTest, AdjacentSizesWithTheSameWinnerMerge) {
  std::vector<SizeContest> contests = {
      {8, "a", "b", 1e-6, 1.2e-6, 0.2, true},   {16, "a", "b", 1e-6, 1.1e-6, 0.1, false},
      {32, "b", "a", 1e-6, 1.3e-6, 0.3, true},  {64, "a", "b", 1e-6, 1.05e-6, 0.05, true},
      {128, "a", "", 1e-6, 0, NAN, false},
  };
  std::vector<SizeRange> ranges = MergeRanges(contests);
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_EQ(ranges[0].from, 8u);
  EXPECT_EQ(ranges[0].to, 16u);
  EXPECT_EQ(ranges[0].winner, "a");
  EXPECT_DOUBLE_EQ(ranges[0].margin_min, 0.1);
  EXPECT_DOUBLE_EQ(ranges[0].margin_max, 0.2);
  EXPECT_EQ(ranges[0].sizes, 2);
  EXPECT_EQ(ranges[0].significant_sizes, 1);
  EXPECT_EQ(ranges[1].winner, "b");
  EXPECT_EQ(ranges[2].from, 64u);
  EXPECT_EQ(ranges[2].to, 128u);
  EXPECT_DOUBLE_EQ(ranges[2].margin_min, 0.05);  // the lone size's NaN does not erase it
}

TEST(AdviseTest, PicksTheFastestPerSizeAndMergesRanges) {
  std::vector<RunWithResults> runs = {
      OpenMpiRun("runs/d", "", {{8, 5}, {1024, 9}, {1 << 20, 400}}),
      OpenMpiRun("runs/r", "recursive_doubling", {{8, 3}, {1024, 6}, {1 << 20, 500}}),
      OpenMpiRun("runs/g", "ring", {{8, 6}, {1024, 10}, {1 << 20, 300}}),
  };
  const Advice advice = Advise(runs);
  ASSERT_EQ(advice.groups.size(), 1u);
  const AdviceGroup& g = advice.groups[0];
  EXPECT_THAT(g.configs, ElementsAre("default", "recursive_doubling", "ring"));
  ASSERT_EQ(g.ranges.size(), 2u);
  EXPECT_EQ(g.ranges[0].winner, "recursive_doubling");
  EXPECT_EQ(g.ranges[0].from, 8u);
  EXPECT_EQ(g.ranges[0].to, 1024u);
  EXPECT_EQ(g.ranges[1].winner, "ring");
  EXPECT_NEAR(g.contests[2].margin, 400.0 / 300 - 1, 0.01);
  EXPECT_TRUE(g.contests[2].significant);
  const std::vector<Table> tables = AdviceTables(advice);
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_THAT(tables[0].rows[0], ElementsAre("8-1K", "recursive_doubling", "3-6", "default",
                                             testing::_, "yes"));
  EXPECT_THAT(tables[0].notes[0], HasSubstr("switch point: recursive_doubling -> ring at 1M"));
}

TEST(AdviseTest, OverlappingIntervalsAreNotSignificant) {
  // 1% apart with ±30% noise over few samples: the intervals overlap.
  std::vector<RunWithResults> runs = {
      OpenMpiRun("runs/a", "ring", {{1024, 100}}, 2, 0.3),
      OpenMpiRun("runs/b", "recursive_doubling", {{1024, 101}}, 2, 0.3),
  };
  runs[0].results[0] = Result(1024, 100, 0.3, 20);
  runs[1].results[0] = Result(1024, 101, 0.3, 20);
  const Advice noisy = Advise(runs);
  ASSERT_EQ(noisy.groups.size(), 1u);
  EXPECT_FALSE(noisy.groups[0].contests[0].significant);
  // 30% apart with 1% noise: they do not.
  runs[1].results[0] = Result(1024, 130, 0.01);
  runs[0].results[0] = Result(1024, 100, 0.01);
  EXPECT_TRUE(Advise(runs).groups[0].contests[0].significant);
  // Without histograms nothing is significant.
  runs[0].results[0].clear_histogram();
  EXPECT_FALSE(Advise(runs).groups[0].contests[0].significant);
}

TEST(AdviseTest, LeavesOutFailedWrongAndLoneRunsAndSaysWhy) {
  std::vector<RunWithResults> runs = {
      OpenMpiRun("runs/ok1", "ring", {{8, 1}}),   OpenMpiRun("runs/ok2", "", {{8, 2}}),
      OpenMpiRun("runs/bad", "ring", {{8, 1}}),   OpenMpiRun("runs/wrong", "ring", {{8, 1}}),
      OpenMpiRun("runs/lone", "ring", {{8, 1}}, 3),
  };
  runs[2].run.set_state(v1::FAILED);
  runs[3].run.set_wrong(2);
  const Advice advice = Advise(runs);
  ASSERT_EQ(advice.groups.size(), 1u);
  EXPECT_EQ(advice.groups[0].runs.size(), 2u);
  ASSERT_EQ(advice.notes.size(), 3u);
  EXPECT_THAT(advice.notes[0], HasSubstr("runs/bad: left out, it did not succeed"));
  EXPECT_THAT(advice.notes[1], HasSubstr("runs/wrong: left out, 2 wrong results"));
  EXPECT_THAT(advice.notes[2], HasSubstr("runs/lone: the only allreduce run on 3 ranks"));
}

TEST(AdviseTest, RunsAlikeInHowTheyRanAreNamedByTheirLabels) {
  std::vector<RunWithResults> runs = {OpenMpiRun("runs/a", "", {{8, 1}}),
                                      OpenMpiRun("runs/b", "", {{8, 2}})};
  (*runs[0].run.mutable_spec()->mutable_labels())["suite-cell"] = "p:env=host";
  (*runs[1].run.mutable_spec()->mutable_labels())["suite-cell"] = "p:env=container";
  EXPECT_THAT(Advise(runs).groups[0].configs,
              ElementsAre("suite-cell=p:env=host", "suite-cell=p:env=container"));
}

TEST(OpenMpiRulesTest, WrittenFromTheWinnersAndParsedBack) {
  std::vector<RunWithResults> runs = {
      OpenMpiRun("runs/d", "", {{8, 2}, {1024, 9}, {65536, 50}, {1 << 20, 400}}),
      OpenMpiRun("runs/r", "recursive_doubling", {{8, 3}, {1024, 6}, {65536, 40}, {1 << 20, 500}}),
      OpenMpiRun("runs/g", "ring", {{8, 6}, {1024, 10}, {65536, 60}, {1 << 20, 300}}),
      OpenMpiRun("runs/r4", "recursive_doubling", {{8, 3}}, 4),
      OpenMpiRun("runs/g4", "ring", {{8, 6}}, 4),
  };
  const Advice advice = Advise(runs);
  const OpenMpiRules rules = OpenMpiRulesFrom(advice);
  const std::string text = FormatOpenMpiRules(rules, advice);
  absl::StatusOr<OpenMpiRules> parsed = ParseOpenMpiRules(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  ASSERT_EQ(parsed->collectives.size(), 1u);
  EXPECT_EQ(parsed->collectives[0].collective_id, 2);
  // Measured on 2 and 4 ranks: Open MPI's own decision below 2, on 3 and
  // from 5 ranks up.
  const std::vector<OpenMpiCommRule>& comms = parsed->collectives[0].comms;
  ASSERT_EQ(comms.size(), 5u) << text;
  EXPECT_EQ(comms[0].comm_size, 1);
  EXPECT_EQ(comms[2].comm_size, 3);
  EXPECT_EQ(comms[4].comm_size, 5);
  for (int unmeasured : {0, 2, 4}) {
    ASSERT_EQ(comms[unmeasured].messages.size(), 1u);
    EXPECT_EQ(comms[unmeasured].messages[0].algorithm, 0);
  }
  const OpenMpiCommRule& two = comms[1];
  EXPECT_EQ(two.comm_size, 2);
  // 8 B: default (0); 1 KiB-64 KiB: recursive_doubling (3); 1 MiB: ring (4);
  // above 1 MiB: not measured (0).
  ASSERT_EQ(two.messages.size(), 4u) << text;
  EXPECT_EQ(two.messages[0].min_bytes, 0u);
  EXPECT_EQ(two.messages[0].algorithm, 0);
  EXPECT_EQ(two.messages[1].min_bytes, 1024u);
  EXPECT_EQ(two.messages[1].algorithm, 3);
  EXPECT_EQ(two.messages[2].min_bytes, 1u << 20);
  EXPECT_EQ(two.messages[2].algorithm, 4);
  EXPECT_EQ(two.messages[3].min_bytes, (1u << 20) + 1);
  EXPECT_EQ(two.messages[3].algorithm, 0);
  const OpenMpiCommRule& four = comms[3];
  EXPECT_EQ(four.comm_size, 4);
  // Below 8 B: not measured; 8 B: recursive_doubling; above: not measured.
  ASSERT_EQ(four.messages.size(), 3u) << text;
  EXPECT_EQ(four.messages[1].min_bytes, 8u);
  EXPECT_EQ(four.messages[1].algorithm, 3);
  EXPECT_EQ(four.messages[2].min_bytes, 9u);
  EXPECT_EQ(four.messages[2].algorithm, 0);
  EXPECT_THAT(text, HasSubstr("coll_tuned_use_dynamic_rules"));
  EXPECT_THAT(text, HasSubstr("1K: recursive_doubling 50."));  // the evidence
  EXPECT_THAT(text, HasSubstr("% ahead of default; 64K: recursive_doubling"));
}

// A 2-rank sweep holds on 2 ranks only, and a win whose interval overlaps
// the runner-up's forces nothing.
TEST(OpenMpiRulesTest, ATwoRankSweepIsScopedToTwoRanksAndSignificantWins) {
  std::vector<RunWithResults> runs = {
      // 8 B: ring ahead by 0.4% with ±20% noise (not significant); 64 KiB:
      // ring far ahead (significant).
      OpenMpiRun("runs/d", "", {{8, 10.04}, {65536, 80}}, 2, 0.2),
      OpenMpiRun("runs/g", "ring", {{8, 10.0}, {65536, 40}}, 2, 0.2),
  };
  const Advice advice = Advise(runs);
  ASSERT_EQ(advice.groups.size(), 1u);
  ASSERT_FALSE(advice.groups[0].contests[0].significant);
  ASSERT_TRUE(advice.groups[0].contests[1].significant);
  const std::string text = FormatOpenMpiRules(OpenMpiRulesFrom(advice), advice);
  absl::StatusOr<OpenMpiRules> parsed = ParseOpenMpiRules(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  const std::vector<OpenMpiCommRule>& comms = parsed->collectives[0].comms;
  ASSERT_EQ(comms.size(), 3u) << text;
  EXPECT_EQ(comms[0].comm_size, 1);
  EXPECT_EQ(comms[1].comm_size, 2);
  EXPECT_EQ(comms[2].comm_size, 3);  // from 3 ranks up: Open MPI's own decision
  EXPECT_THAT(comms[2].messages, ::testing::SizeIs(1));
  EXPECT_EQ(comms[2].messages[0].algorithm, 0);
  // On 2 ranks: 0 up to 64 KiB (8 B's win is not significant), ring (4) at
  // 64 KiB, 0 above it.
  const std::vector<OpenMpiMessageRule>& two = comms[1].messages;
  ASSERT_EQ(two.size(), 3u) << text;
  EXPECT_EQ(two[0].algorithm, 0);
  EXPECT_EQ(two[1].min_bytes, 65536u);
  EXPECT_EQ(two[1].algorithm, 4);
  EXPECT_EQ(two[2].min_bytes, 65537u);
  EXPECT_EQ(two[2].algorithm, 0);
  EXPECT_THAT(text, HasSubstr("not significant"));
  EXPECT_THAT(text, HasSubstr("from 3 ranks up: not measured"));
}

TEST(WriteTuningFilesTest, NothingSignificantIsRefusedWithTheReason) {
  std::vector<RunWithResults> runs = {OpenMpiRun("runs/d", "", {{8, 10.04}}, 2, 0.2),
                                      OpenMpiRun("runs/g", "ring", {{8, 10.0}}, 2, 0.2)};
  const std::string dir = ::testing::TempDir() + "/advisor_nothing_significant";
  absl::StatusOr<std::vector<std::string>> written = WriteTuningFiles(Advise(runs), dir);
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(written.status().message(),
              HasSubstr("allreduce on 2 ranks (openmpi, mpi): 0 of 1 sizes significant"));
  EXPECT_FALSE(std::filesystem::exists(dir));  // nothing written, not even the folder
}

TEST(OpenMpiRulesTest, GroupsThatDifferInMoreThanTheAlgorithmWriteNoRules) {
  std::vector<RunWithResults> runs = {OpenMpiRun("runs/a", "ring", {{8, 1}}),
                                      OpenMpiRun("runs/b", "", {{8, 2}})};
  runs[1].run.mutable_spec()->set_transport(v1::TCP);
  EXPECT_TRUE(OpenMpiRulesFrom(Advise(runs)).collectives.empty());
}

TEST(OpenMpiRulesTest, MalformedFilesAreRefusedWithTheLine) {
  EXPECT_THAT(ParseOpenMpiRules("1\n2\n1\n2\n1\n8 3 0 0\n").status().message(),
              HasSubstr("line 6: the first message rule must start at size 0"));
  EXPECT_THAT(ParseOpenMpiRules("1\n2\n1\n2\n2\n0 3 0 0\n").status().message(),
              HasSubstr("ends where a message rule"));
  EXPECT_THAT(ParseOpenMpiRules("1 # c\n2\nx\n").status().message(),
              HasSubstr("line 3: 'x' is not a count or size"));
  EXPECT_THAT(ParseOpenMpiRules("1\n2\n1\n2\n1\n0 3 0 0\n9\n").status().message(),
              HasSubstr("line 7: more numbers than the counts say"));
}

TEST(EnvFilesTest, MpichCvarOnlyFromOneSignificantWinnerAndCommentedOut) {
  auto mpich = [](const std::string& name, const std::string& algorithm,
                  const std::vector<std::pair<uint64_t, double>>& points) {
    RunWithResults r = OpenMpiRun(name, "", points);
    r.run.mutable_spec()->set_mpi(v1::MPICH);
    if (!algorithm.empty()) {
      (*r.run.mutable_spec()->mutable_env())["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] = algorithm;
    }
    return r;
  };
  std::vector<RunWithResults> runs = {
      mpich("runs/d", "", {{8, 5}, {1024, 9}, {65536, 70}}),
      mpich("runs/r", "recursive_doubling", {{8, 3}, {1024, 6}, {65536, 90}}),
      mpich("runs/s", "reduce_scatter_allgather", {{8, 6}, {1024, 10}, {65536, 50}}),
  };
  EnvSettings settings;
  const std::string text = FormatMpichEnv(Advise(runs), &settings);
  // recursive_doubling wins 8 B and 1 KiB, reduce_scatter_allgather 64 KiB:
  // no one algorithm holds at every size, so nothing is suggested.
  EXPECT_TRUE(settings.empty()) << text;
  EXPECT_EQ(text, "");
  std::vector<RunWithResults> one_winner = {
      mpich("runs/d", "", {{8, 5}, {1024, 9}}),
      mpich("runs/r", "recursive_doubling", {{8, 3}, {1024, 6}}),
  };
  const std::string suggested = FormatMpichEnv(Advise(one_winner), &settings);
  EXPECT_EQ(settings.at("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"), "recursive_doubling");
  EXPECT_THAT(suggested, HasSubstr("measured on 2 ranks (8-1K)"));
  // Commented out: a variable holds beyond the sizes measured.
  absl::StatusOr<EnvSettings> parsed = ParseEnvFile(suggested);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->empty()) << suggested;
  EXPECT_THAT(suggested, HasSubstr("# MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=recursive_doubling\n"));
  EXPECT_THAT(ParseEnvFile("# c\nNOEQUALS\n").status().message(), HasSubstr("line 2"));
}

TEST(EnvFilesTest, NcclAlgoAndProtoFromTheWinners) {
  auto nccl = [](const std::string& name, const std::string& algo, double us) {
    RunWithResults r = OpenMpiRun(name, "", {{1 << 20, us}});
    r.run.mutable_spec()->set_backend("nccl");
    (*r.run.mutable_spec()->mutable_env())["NCCL_ALGO"] = algo;
    return r;
  };
  std::vector<RunWithResults> runs = {nccl("runs/t", "Tree", 30), nccl("runs/r", "Ring", 20)};
  EnvSettings settings;
  const std::string text = FormatNcclEnv(Advise(runs), &settings);
  EXPECT_EQ(settings.at("NCCL_ALGO"), "Ring");
  EXPECT_EQ(settings.count("NCCL_PROTO"), 0u);
  EXPECT_THAT(text, HasSubstr("# NCCL_ALGO=Ring\n"));
  EXPECT_TRUE(ParseEnvFile(text)->empty());  // a suggestion, not a setting
}

// Names a coordinator sends are written only as bare names in the folder:
// a path, a parent, a hidden file is refused before anything is written.
TEST(WriteTuningFilesTest, NamesThatAreNotBareFileNamesWriteNothing) {
  const std::string base = ::testing::TempDir() + "/write_rules_names";
  std::filesystem::remove_all(base);
  const std::string dir = base + "/rules";
  std::filesystem::create_directories(base);
  for (const std::string bad : {"../outside.conf", "/etc/passwd", "sub/x.conf", ".bashrc", "",
                                "a\nb.conf", "..", "x\x1b[2J.conf"}) {
    const std::vector<TuningFileText> files = {{"openmpi-rules.conf", "ok\n"}, {bad, "evil\n"}};
    absl::StatusOr<std::vector<std::string>> written = WriteTuningFileTexts(files, dir);
    EXPECT_EQ(written.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(written.status().message()), HasSubstr("not a bare file name"));
    EXPECT_FALSE(std::filesystem::exists(dir)) << bad;  // not even the folder
  }
  EXPECT_FALSE(std::filesystem::exists(base + "/outside.conf"));
  ASSERT_TRUE(WriteTuningFileTexts({{"openmpi-rules.conf", "ok\n"}}, dir).ok());
  EXPECT_TRUE(std::filesystem::exists(dir + "/openmpi-rules.conf"));
  std::filesystem::remove_all(base);
}

TEST(WriteTuningFilesTest, WritesOnlyTheFilesWithContent) {
  std::vector<RunWithResults> runs = {OpenMpiRun("runs/a", "ring", {{8, 1}}),
                                      OpenMpiRun("runs/b", "", {{8, 2}})};
  const std::string dir = ::testing::TempDir() + "/advisor_rules";
  absl::StatusOr<std::vector<std::string>> written = WriteTuningFiles(Advise(runs), dir);
  ASSERT_TRUE(written.ok()) << written.status();
  ASSERT_EQ(written->size(), 1u);
  EXPECT_TRUE(absl::EndsWith((*written)[0], "/openmpi-rules.conf"));
  std::ifstream in((*written)[0]);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_TRUE(ParseOpenMpiRules(text.str()).ok());
  std::remove((*written)[0].c_str());
}

}  // namespace
}  // namespace collbench
