// SPDX-License-Identifier: Apache-2.0
// The shared driver, run without MPI: iteration counts, validation catching
// a corrupted buffer, the numbers each size record carries, and the timing
// loop's fixed and adaptive modes.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/unit/engine/fakes.h"
#include "worker/engine/collectives/operation.h"
#include "worker/engine/memory/memory_kind.h"
#include "worker/engine/report/reporter.h"
#include "worker/engine/sweep.h"
#include "worker/engine/timing.h"

namespace collbench {
namespace {

// An iteration that keeps the CPU busy for `us` microseconds.
auto SpinningIteration(int us) {
  return [us] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
    while (std::chrono::steady_clock::now() < until) {
    }
    return absl::OkStatus();
  };
}

class RecordingReporter final : public Reporter {
 public:
  void Start(const StartRecord&) override {}
  void Size(const SizeRecord& r) override { sizes.push_back(r); }
  void End(const EndRecord&) override {}
  void Error(const ErrorRecord&) override {}
  std::vector<SizeRecord> sizes;
};

class SweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterBuiltinOperations(&operations_);
    RegisterBuiltinMemoryKinds(&memory_);
    host_ = *memory_.Create("default", nullptr);
    options_.sizes_bytes = {8, 1024, 65536};
    options_.iters = 7;
    options_.warmup = 3;
    options_.check = true;
  }

  absl::StatusOr<SweepTotals> Run(const std::string& op_name) {
    env_.options = &options_;
    env_.op = *operations_.Find(op_name);
    env_.backend = &backend_;
    env_.comm = &comm_;
    env_.host_memory = host_.get();
    env_.reporter = &reporter_;
    return RunSweep(env_);
  }

  OperationRegistry operations_;
  MemoryKindRegistry memory_;
  std::unique_ptr<MemoryKind> host_;
  EngineOptions options_;
  SingleRankCommunicator comm_;
  LoopbackBackend backend_;
  RecordingReporter reporter_;
  SweepEnv env_;
};

// gemm: the checked call must reproduce the exact product (n = 1, 16, 128
// for these sizes), in both float types; integers are refused by name.
TEST_F(SweepTest, GemmComputesTheExactProduct) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
    options_.dtype = dtype;
    auto totals = Run("gemm");
    ASSERT_TRUE(totals.ok()) << totals.status();
    EXPECT_EQ(totals->wrong, 0u) << DataTypeName(dtype);
  }
  options_.dtype = DataType::kInt32;
  auto refused = Run("gemm");
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("float32 or float64"), std::string::npos)
      << refused.status();
}

TEST_F(SweepTest, RunsWarmupThenTimedIterationsThenOneCheckedCall) {
  auto totals = Run("allreduce");
  ASSERT_TRUE(totals.ok()) << totals.status();
  EXPECT_EQ(totals->sizes, 3u);
  EXPECT_EQ(totals->wrong, 0u);
  EXPECT_EQ(backend_.calls, 3 * (3 + 7 + 1));
  // One before each timed loop and, by default (--sync barrier), one after
  // each timed iteration.
  EXPECT_EQ(comm_.barriers, 3 * (1 + 7));
  ASSERT_EQ(reporter_.sizes.size(), 3u);
  for (const SizeRecord& r : reporter_.sizes) {
    EXPECT_EQ(r.iters, 7u);
    EXPECT_EQ(r.histogram.count(), 7u);
    EXPECT_TRUE(r.checked);
    EXPECT_GT(r.avg_s, 0);
    EXPECT_LE(r.min_s, r.avg_s);
    EXPECT_GE(r.max_s, r.avg_s);
    EXPECT_DOUBLE_EQ(r.algbw_Bps, r.bytes / r.avg_s);
    // One rank: allreduce's bus factor 2(n-1)/n is 0.
    EXPECT_DOUBLE_EQ(r.busbw_Bps, 0.0);
  }
  EXPECT_EQ(reporter_.sizes[1].count, 256u);
  EXPECT_EQ(reporter_.sizes[1].redop, "sum");
}

TEST_F(SweepTest, SyncNoneRunsIterationsBackToBack) {
  options_.sync = IterationSync::kNone;
  ASSERT_TRUE(Run("allreduce").ok());
  EXPECT_EQ(comm_.barriers, 3);  // one before each timed loop, none inside
  for (const SizeRecord& r : reporter_.sizes) EXPECT_EQ(r.sync, "none");
}

TEST_F(SweepTest, RecordsCarryTheSyncAndEveryRanksStatistics) {
  const std::vector<std::string> hosts = {"node-a"};
  env_.hosts = &hosts;
  ASSERT_TRUE(Run("bcast").ok());
  for (const SizeRecord& r : reporter_.sizes) {
    EXPECT_EQ(r.sync, "barrier");
    ASSERT_EQ(r.ranks.size(), 1u);
    EXPECT_EQ(r.ranks[0].host, "node-a");
    EXPECT_DOUBLE_EQ(r.ranks[0].mean_s, r.avg_s);  // one rank: its mean is the average
    EXPECT_GT(r.ranks[0].p50_s, 0);
    EXPECT_GE(r.ranks[0].p99_s, r.ranks[0].p50_s);
    EXPECT_EQ(r.slowest_rank, 0);
    EXPECT_DOUBLE_EQ(r.slowest_vs_median, 1.0);
  }
}

TEST_F(SweepTest, PointToPointKeepsItsOwnLoop) {
  // latency needs a pair; the sync it reports does not depend on running.
  options_.sync = EffectiveSync(options_, /*collective=*/false);
  EXPECT_EQ(options_.sync, IterationSync::kNone);
  EngineOptions asked;
  asked.sync = IterationSync::kBarrier;
  EXPECT_EQ(CheckSyncApplies(asked, /*collective=*/false, "latency").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckSyncApplies(asked, /*collective=*/true, "bcast").ok());
}

TEST_F(SweepTest, CheckCountsACorruptedElement) {
  backend_.corrupt = true;
  auto totals = Run("allreduce");
  ASSERT_TRUE(totals.ok()) << totals.status();
  EXPECT_EQ(totals->wrong, 3u);  // one element in each of three sizes
  for (const SizeRecord& r : reporter_.sizes) EXPECT_EQ(r.wrong, 1u);
}

TEST_F(SweepTest, DebugCorruptFlagIsCaughtToo) {
  options_.corrupt_rank = 0;
  auto totals = Run("alltoall");
  ASSERT_TRUE(totals.ok()) << totals.status();
  EXPECT_EQ(totals->wrong, 3u);
}

TEST_F(SweepTest, EveryCollectiveValidatesOnOneRank) {
  for (const char* op : {"gather", "allgather", "reduce", "reduce_scatter", "alltoall"}) {
    for (DataType t : AllDataTypes()) {
      options_.dtype = t;
      auto totals = Run(op);
      ASSERT_TRUE(totals.ok()) << op << ": " << totals.status();
      EXPECT_EQ(totals->wrong, 0u) << op << " " << DataTypeName(t);
    }
  }
}

TEST_F(SweepTest, UncheckedRunsReportNotChecked) {
  options_.check = false;
  ASSERT_TRUE(Run("allreduce").ok());
  EXPECT_EQ(backend_.calls, 3 * (3 + 7));
  EXPECT_FALSE(reporter_.sizes[0].checked);
}

// --in-place: one buffer holds the input and receives the result (the send
// pointer is the buffer itself, or this rank's block of it for allgather and
// gather), every size is validated, and the records say so.
TEST_F(SweepTest, InPlacePassesOneBufferAndValidatesIt) {
  options_.in_place = true;
  for (const char* op : {"allreduce", "reduce", "bcast", "allgather", "gather", "alltoall"}) {
    for (DataType t : {DataType::kInt8, DataType::kFloat32, DataType::kFloat64}) {
      options_.dtype = t;
      reporter_.sizes.clear();
      backend_.last_send = backend_.last_recv = nullptr;
      auto totals = Run(op);
      ASSERT_TRUE(totals.ok()) << op << ": " << totals.status();
      EXPECT_EQ(totals->wrong, 0u) << op << " " << DataTypeName(t);
      ASSERT_EQ(reporter_.sizes.size(), 3u);
      for (const SizeRecord& r : reporter_.sizes) EXPECT_TRUE(r.in_place) << op;
      // One rank: the input sits at offset 0 for every operation.
      if (std::string(op) != "bcast") EXPECT_EQ(backend_.last_send, backend_.last_recv) << op;
    }
  }
}

TEST_F(SweepTest, InPlaceCheckCatchesACorruptedElement) {
  options_.in_place = true;
  backend_.corrupt = true;
  auto totals = Run("allreduce");
  ASSERT_TRUE(totals.ok()) << totals.status();
  EXPECT_EQ(totals->wrong, 3u);
}

TEST_F(SweepTest, OutOfPlaceKeepsTwoBuffers) {
  ASSERT_TRUE(Run("allreduce").ok());
  EXPECT_NE(backend_.last_send, backend_.last_recv);
  for (const SizeRecord& r : reporter_.sizes) EXPECT_FALSE(r.in_place);
}

// The run's "Avg bus bandwidth" is the mean of the reported sizes' busbw.
TEST_F(SweepTest, TotalsAverageTheReportedBusBandwidth) {
  auto totals = Run("bcast");  // bus factor 1: busbw = algbw > 0
  ASSERT_TRUE(totals.ok()) << totals.status();
  double sum = 0;
  for (const SizeRecord& r : reporter_.sizes) sum += r.busbw_Bps;
  ASSERT_GT(sum, 0);
  EXPECT_DOUBLE_EQ(totals->AverageBusbwBps(), sum / 3);
  EXPECT_DOUBLE_EQ(SweepTotals().AverageBusbwBps(), 0.0);
}

std::string Report(OutputFormat format, const std::function<void(Reporter&)>& write) {
  char* text = nullptr;
  size_t length = 0;
  std::FILE* out = open_memstream(&text, &length);
  {
    std::unique_ptr<Reporter> reporter = NewReporter(format, out);
    write(*reporter);
  }
  std::fclose(out);
  std::string result(text, length);
  std::free(text);
  return result;
}

// nccl-tests' summary line, in GB/s, before the end line; scripts written
// for nccl-tests take its last field.
TEST(ReporterTest, TableEndsWithNcclTestsAverageBusBandwidth) {
  const std::string table = Report(OutputFormat::kTable, [](Reporter& r) {
    r.End({"ok", 2, 0, 1.5, 12.25e9});
  });
  EXPECT_EQ(table, "# Avg bus bandwidth    : 12.25\n# ok: 2 sizes, 0 wrong, 1.50 s\n");
  const std::string nothing = Report(OutputFormat::kTable, [](Reporter& r) {
    r.End({"failed", 0, 0, 0.5});
  });
  EXPECT_EQ(nothing.find("Avg bus bandwidth"), std::string::npos) << nothing;
}

TEST(ReporterTest, JsonEndRecordCarriesTheSameAverage) {
  const std::string jsonl = Report(OutputFormat::kJsonl, [](Reporter& r) {
    r.End({"ok", 2, 0, 1.5, 12.25e9});
  });
  absl::StatusOr<Record> end = ParseJsonLine(jsonl.substr(0, jsonl.find('\n')));
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_DOUBLE_EQ(std::get<EndRecord>(*end).avg_busbw_Bps, 12.25e9);
  EXPECT_NE(jsonl.find("\"avg_busbw_Bps\""), std::string::npos) << jsonl;
}

// The table's header says which variant ran, as nccl-tests' column groups.
TEST(ReporterTest, TableHeaderNamesInPlaceOrOutOfPlace) {
  StartRecord start;
  start.spec = {{"operation", "allreduce"}};
  EXPECT_NE(Report(OutputFormat::kTable, [&](Reporter& r) { r.Start(start); }).find(", out-of-place"),
            std::string::npos);
  start.spec["in_place"] = "true";
  EXPECT_NE(Report(OutputFormat::kTable, [&](Reporter& r) { r.Start(start); }).find(", in-place"),
            std::string::npos);
}

TEST(TimingTest, FixedModeRecordsEveryIteration) {
  SingleRankCommunicator comm;
  IterationPolicy policy;
  policy.warmup = 2;
  policy.iters = 50;
  int calls = 0;
  auto timing = TimeIterations(comm, policy, [&] {
    ++calls;
    return absl::OkStatus();
  });
  ASSERT_TRUE(timing.ok());
  EXPECT_EQ(calls, 52);
  EXPECT_EQ(timing->iters, 50u);
  EXPECT_EQ(timing->histogram.count(), 50u);
  EXPECT_EQ(timing->histogram.sum_ns(), timing->total_ns);
}

// The barrier of --sync barrier is outside the timed interval: a barrier
// that takes 2 ms does not show in any recorded time of a 20 us iteration.
TEST(TimingTest, TheBarrierBetweenIterationsIsNotTimed) {
  SingleRankCommunicator comm;
  comm.barrier_sleep = std::chrono::milliseconds(2);
  IterationPolicy policy;
  policy.iters = 30;
  policy.barrier_after_each = true;
  auto timing = TimeIterations(comm, policy, SpinningIteration(20));
  ASSERT_TRUE(timing.ok());
  EXPECT_EQ(comm.barriers, 1 + 30);  // before the loop, then after each iteration
  EXPECT_EQ(timing->histogram.count(), 30u);
  EXPECT_GE(timing->histogram.min_ns(), 20000u);
  // Far below the 2 ms a timed barrier would add to every sample (a
  // descheduled iteration may take longer, but not 30 of them).
  EXPECT_LT(timing->histogram.QuantileNs(0.5), 1e6);
  EXPECT_LT(static_cast<double>(timing->total_ns) / 30, 1e6);
}

TEST(TimingTest, AnIterationErrorStopsTheLoop) {
  SingleRankCommunicator comm;
  IterationPolicy policy;
  policy.iters = 10;
  int calls = 0;
  auto timing = TimeIterations(comm, policy, [&] {
    return ++calls == 4 ? absl::InternalError("boom") : absl::OkStatus();
  });
  EXPECT_EQ(timing.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(calls, 4);
}

TEST(TimingTest, TimeScaleHalvesRecordedTimes) {
  SingleRankCommunicator comm;
  IterationPolicy policy;
  policy.iters = 20;
  policy.time_scale = 0.5;
  auto timing = TimeIterations(comm, policy, SpinningIteration(50));
  ASSERT_TRUE(timing.ok());
  EXPECT_GE(timing->histogram.min_ns(), 25000u);
  EXPECT_LT(timing->histogram.min_ns(), 50000u);
}

TEST(TimingTest, AdaptiveModeStopsOnPrecisionForSteadyIterations) {
  SingleRankCommunicator comm;
  IterationPolicy policy;
  policy.time_budget_s = 5.0;
  policy.min_iters = 10;
  // A steady 20 us iteration: the median is pinned down long before 5 s.
  auto steady = SpinningIteration(20);
  const auto start = std::chrono::steady_clock::now();
  auto timing = TimeIterations(comm, policy, steady);
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(timing.ok());
  EXPECT_GE(timing->iters, 10u);
  EXPECT_LT(elapsed_s, 4.0);
  EXPECT_LE(RelativeMedianCi(timing->histogram), 0.01);
}

TEST(TimingTest, AdaptiveModeRespectsTheBudget) {
  SingleRankCommunicator comm;
  IterationPolicy policy;
  policy.time_budget_s = 0.2;
  policy.target_relative_ci = 0.0;  // never precise enough: only the budget stops it
  int calls = 0;
  const auto start = std::chrono::steady_clock::now();
  auto timing = TimeIterations(comm, policy, [&] {
    ++calls;
    return SpinningIteration(calls % 2 == 0 ? 100 : 300)();
  });
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(timing.ok());
  // The budget is wall time; the recorded iterations are nearly all of it.
  EXPECT_GE(wall_s, 0.2);
  EXPECT_GE(timing->total_ns * 1e-9, 0.9 * 0.2);
  // The last batch is sized to what is left, so the loop overshoots by at
  // most a batch; a run that ignored the budget would go on far longer. The
  // bound is loose because this machine is shared.
  EXPECT_LT(wall_s, 2.0);
}

TEST(TimingTest, RelativeMedianCiShrinksWithSamples) {
  Histogram few, many;
  for (int i = 0; i < 20; ++i) few.Record(1000 + (i % 5) * 100);
  for (int i = 0; i < 20000; ++i) many.Record(1000 + (i % 5) * 100);
  EXPECT_GT(RelativeMedianCi(few), RelativeMedianCi(many));
}

}  // namespace
}  // namespace collbench
