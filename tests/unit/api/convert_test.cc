// SPDX-License-Identifier: Apache-2.0
// api/convert.h: engine records <-> protos exactly, RunSpec <-> the
// collbench-rank command line both ways.
#include "api/convert.h"

#include <google/protobuf/util/message_differencer.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "engine_spec/options.h"

namespace collbench {
namespace {

using ::google::protobuf::util::MessageDifferencer;

SizeRecord SampleRecord() {
  SizeRecord r;
  r.operation = "allreduce";
  r.bytes = 1 << 20;
  r.count = (1 << 20) / 4;
  r.dtype = "float32";
  r.redop = "sum";
  r.root = -1;
  r.iters = 100;
  r.avg_s = 1.25e-4;
  r.min_s = 1.0e-4;
  r.max_s = 1.5e-4;
  r.p50_s = 1.2e-4;
  r.p90_s = 1.4e-4;
  r.p99_s = 1.49e-4;
  r.algbw_Bps = 8.388608e9;
  r.busbw_Bps = 1.2582912e10;
  r.wrong = 3;
  r.checked = true;
  // Values across the linear range, several powers of two and the clamp.
  for (uint64_t ns :
       {1ull, 7ull, 63ull, 64ull, 65ull, 1000ull, 123457ull, 99999999ull, 5000000000ull}) {
    r.histogram.RecordMany(ns, ns % 5 + 1);
  }
  r.scenario = {{"ranks", 4}, {"efficiency", 0.875}};
  r.sync = "barrier";
  r.ranks = {{0, "node-a", 1.2e-4, 1.1e-4, 1.4e-4, false},
             {1, "node-b", 1.3e-4, 1.25e-4, 1.49e-4, false}};
  r.slowest_rank = 1;
  r.slowest_vs_median = 1.3e-4 / 1.2e-4;
  return r;
}

TEST(SizeResultTest, RecordSurvivesTheRoundTripExactly) {
  const SizeRecord record = SampleRecord();
  const v1::SizeResult result = SizeResultFromRecord(record, 7);
  EXPECT_EQ(result.sequence(), 7);
  absl::StatusOr<SizeRecord> back = SizeRecordFromResult(result);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, record);
  EXPECT_EQ(back->histogram.count(), record.histogram.count());
  EXPECT_EQ(back->histogram.sum_ns(), record.histogram.sum_ns());
  EXPECT_EQ(back->histogram.min_ns(), 1u);
  EXPECT_EQ(back->histogram.max_ns(), 5000000000u);
}

TEST(SizeResultTest, SyncAndRanksLandInTheProto) {
  const v1::SizeResult result = SizeResultFromRecord(SampleRecord());
  EXPECT_EQ(result.sync(), v1::SYNC_BARRIER);
  ASSERT_EQ(result.ranks_size(), 2);
  EXPECT_EQ(result.ranks(1).host(), "node-b");
  EXPECT_EQ(result.ranks(1).p99_s(), 1.49e-4);
  EXPECT_EQ(result.slowest_rank(), 1);
  SizeRecord none = SampleRecord();
  none.sync = "none";
  EXPECT_EQ(SizeResultFromRecord(none).sync(), v1::SYNC_NONE);
  none.sync.clear();  // an engine older than the field
  EXPECT_EQ(SizeResultFromRecord(none).sync(), v1::ITERATION_SYNC_UNSPECIFIED);
}

TEST(SizeResultTest, FieldsLandInTheProto) {
  const SizeRecord record = SampleRecord();
  const v1::SizeResult result = SizeResultFromRecord(record);
  EXPECT_EQ(result.operation(), "allreduce");
  EXPECT_EQ(result.bytes(), record.bytes);
  EXPECT_EQ(result.root(), -1);
  EXPECT_EQ(result.busbw_bytes_per_s(), record.busbw_Bps);
  EXPECT_EQ(result.wrong(), 3u);
  EXPECT_TRUE(result.checked());
  EXPECT_EQ(result.scenario().at("efficiency"), 0.875);
  const v1::Histogram& h = result.histogram();
  EXPECT_EQ(h.sub_buckets(), 64);
  EXPECT_EQ(h.counts().size(), record.histogram.Sparse().size());
  for (const auto& [index, count] : record.histogram.Sparse()) {
    EXPECT_EQ(h.counts().at(index), count) << "bucket " << index;
  }
  EXPECT_EQ(h.sum_ns(), record.histogram.sum_ns());
  EXPECT_EQ(h.min_ns(), 1u);
  EXPECT_EQ(h.max_ns(), 5000000000u);
}

TEST(SizeResultTest, EmptyHistogramRoundTrips) {
  SizeRecord record;
  record.operation = "bcast";
  absl::StatusOr<SizeRecord> back = SizeRecordFromResult(SizeResultFromRecord(record));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, record);
  // A result whose histogram was never set reads as empty.
  v1::SizeResult unset;
  absl::StatusOr<SizeRecord> from_unset = SizeRecordFromResult(unset);
  ASSERT_TRUE(from_unset.ok()) << from_unset.status();
  EXPECT_EQ(from_unset->histogram.count(), 0u);
}

TEST(HistogramProtoTest, RejectsOtherGeometryAndBadIndices) {
  v1::Histogram h;
  h.set_sub_buckets(32);
  (*h.mutable_counts())[3] = 1;
  EXPECT_EQ(HistogramFromProto(h).status().code(), absl::StatusCode::kInvalidArgument);
  h.set_sub_buckets(64);
  (*h.mutable_counts())[Histogram::kNumBuckets] = 1;
  EXPECT_EQ(HistogramFromProto(h).status().code(), absl::StatusCode::kInvalidArgument);
  h.mutable_counts()->erase(Histogram::kNumBuckets);
  (*h.mutable_counts())[-1] = 1;
  EXPECT_EQ(HistogramFromProto(h).status().code(), absl::StatusCode::kInvalidArgument);
}

v1::RunSpec FullCollectiveSpec() {
  v1::RunSpec s;
  s.set_operation("gather");
  s.set_backend("mpi");
  s.add_sizes_bytes(8);
  s.add_sizes_bytes(1024);
  s.add_sizes_bytes(1000);
  s.add_sizes_bytes(uint64_t{3} << 30);
  s.set_factor(1.1);  // the engine allows -f beside --sizes
  s.set_iters(50);
  s.set_warmup(0);
  s.set_dtype("int64");
  s.set_redop("max");
  s.set_root(3);
  s.set_memory("numa:1");
  s.set_check(true);
  s.set_window(16);
  s.set_sync(v1::SYNC_NONE);
  return s;
}

TEST(EngineArgsTest, FullSpec) {
  EXPECT_EQ(EngineArgs(FullCollectiveSpec()),
            (std::vector<std::string>{
                "gather", "--backend", "mpi",  "--sizes",  "8,1K,1000,3G", "-f",      "1.1",
                "-n",     "50",        "-w",   "0",        "--dtype",      "int64",   "--redop",
                "max",    "--root",    "3",    "--memory", "numa:1",       "--check", "--sync",
                "none",   "--window",  "16",   "--format", "jsonl"}));
}

TEST(EngineArgsTest, DefaultsAreLeftToTheEngine) {
  v1::RunSpec s;
  s.set_operation("allreduce");
  s.set_warmup(-1);
  s.set_ranks(8);  // not an engine flag
  (*s.mutable_env())["NCCL_DEBUG"] = "INFO";
  EXPECT_EQ(EngineArgs(s), (std::vector<std::string>{"allreduce", "--format", "jsonl"}));
}

TEST(EngineArgsTest, TheEngineParsesWhatItIsGiven) {
  v1::RunSpec s = FullCollectiveSpec();
  s.clear_sizes_bytes();
  s.set_min_bytes(64);
  s.set_max_bytes(uint64_t{1} << 20);
  s.set_factor(4);
  s.set_iters(0);
  s.set_warmup(3);
  s.mutable_time_budget()->set_nanos(250'000'000);
  absl::StatusOr<EngineOptions> o = ParseEngineArgs(EngineArgs(s));
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->operation, "gather");
  EXPECT_EQ(o->min_bytes, 64u);
  EXPECT_EQ(o->max_bytes, uint64_t{1} << 20);
  EXPECT_EQ(o->factor, 4.0);
  EXPECT_FALSE(o->iters.has_value());
  EXPECT_EQ(o->warmup, 3);
  EXPECT_EQ(o->time_budget_s, 0.25);
  EXPECT_EQ(o->root, 3);
  EXPECT_EQ(o->window, 16);
  EXPECT_EQ(o->format, OutputFormat::kJsonl);
}

TEST(EngineArgsTest, BinaryFollowsTheMpiImplementation) {
  EXPECT_EQ(EngineBinary(v1::MPI_IMPLEMENTATION_UNSPECIFIED), "collbench-rank");
  EXPECT_EQ(EngineBinary(v1::OPENMPI), "collbench-rank");
  EXPECT_EQ(EngineBinary(v1::MPICH), "collbench-rank-mpich");
}

// Specs covering every engine field; each must survive spec -> args -> spec.
std::vector<v1::RunSpec> RoundTripSpecs() {
  std::vector<v1::RunSpec> specs;
  specs.push_back(FullCollectiveSpec());

  v1::RunSpec range;
  range.set_operation("allreduce");
  range.set_backend("nccl");
  range.set_min_bytes(8);  // equal to the default, still given explicitly
  range.set_max_bytes((uint64_t{1} << 30) + 1);
  range.set_factor(1.5);
  range.set_warmup(7);
  range.mutable_time_budget()->set_seconds(2);
  range.mutable_time_budget()->set_nanos(7);
  range.set_dtype("bfloat16");
  range.set_redop("sum");
  range.set_memory("device");
  specs.push_back(range);

  v1::RunSpec all;
  all.set_operation("reduce");
  all.set_max_bytes(4096);
  all.set_dtype("all");
  all.set_redop("all");
  all.set_window(64);
  all.mutable_time_budget()->set_nanos(500'000'000);
  specs.push_back(all);

  v1::RunSpec replay;
  replay.set_scenario("gradient-replay");
  replay.set_model("sizes:1M,4M");
  replay.set_bucket_bytes(uint64_t{25} << 20);
  replay.set_backend("nccl");
  replay.set_steps(7);
  replay.mutable_compute_time()->set_nanos(25'000'000);
  specs.push_back(replay);

  v1::RunSpec ps;
  ps.set_operation("parameter-server");  // the scenario as the operation word
  ps.set_strategy("nccl-chief");
  ps.set_iters(10);
  ps.set_warmup(2);
  specs.push_back(ps);

  v1::RunSpec both;
  both.set_operation("gradient-replay");
  both.set_scenario("gradient-replay");
  both.set_model("vgg16");
  specs.push_back(both);
  return specs;
}

TEST(SpecFromEngineArgsTest, SpecToArgsToSpecIsTheIdentity) {
  for (const v1::RunSpec& spec : RoundTripSpecs()) {
    absl::StatusOr<v1::RunSpec> back = SpecFromEngineArgs(EngineArgs(spec));
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << spec.DebugString();
    std::string diff;
    MessageDifferencer differencer;
    differencer.ReportDifferencesToString(&diff);
    EXPECT_TRUE(differencer.Compare(spec, *back)) << diff;
  }
}

TEST(SpecFromEngineArgsTest, CliEngineFlags) {
  absl::StatusOr<v1::RunSpec> spec =
      SpecFromEngineArgs({"allreduce", "-b", "8", "-e", "1M", "--check", "--dtype=float64"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->operation(), "allreduce");
  EXPECT_EQ(spec->min_bytes(), 8u);
  EXPECT_EQ(spec->max_bytes(), uint64_t{1} << 20);
  EXPECT_EQ(spec->factor(), 0.0);  // not given: the engine's default
  EXPECT_TRUE(spec->check());
  EXPECT_EQ(spec->dtype(), "float64");
  EXPECT_EQ(spec->backend(), "");
  EXPECT_EQ(spec->window(), 0);
  EXPECT_FALSE(spec->has_time_budget());
  EXPECT_EQ(spec->iters(), 0);
}

// --in-place is RunSpec.in_place, both ways; a flag without a value, so the
// word after it is still the operation.
TEST(SpecFromEngineArgsTest, InPlaceIsCarried) {
  absl::StatusOr<v1::RunSpec> spec = SpecFromEngineArgs({"--in-place", "allgather"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->in_place());
  EXPECT_EQ(spec->operation(), "allgather");
  EXPECT_EQ(EngineArgs(*spec),
            (std::vector<std::string>{"allgather", "--in-place", "--format", "jsonl"}));
  spec = SpecFromEngineArgs({"allgather"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_FALSE(spec->in_place());
}

TEST(SpecFromEngineArgsTest, FormatIsIgnored) {
  absl::StatusOr<v1::RunSpec> spec = SpecFromEngineArgs({"bcast", "--format", "table"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->operation(), "bcast");
}

TEST(SpecFromEngineArgsTest, RejectsWhatARunSpecCannotCarry) {
  const std::vector<std::vector<std::string>> cases = {
      {"allreduce", "--help"},
      {"allreduce", "--debug-corrupt-rank", "1"},
      {"allreduce", "-w", "0"},
  };
  for (const auto& args : cases) {
    absl::Status status = SpecFromEngineArgs(args).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << args[1];
    EXPECT_NE(status.message().find(args[1] == "-w" ? "--warmup" : args[1]),
              absl::string_view::npos)
        << status;
  }
}

TEST(SpecFromEngineArgsTest, PassesTheEngineParsersErrorsOn) {
  EXPECT_EQ(SpecFromEngineArgs({"allreduce", "--bogus"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SpecFromEngineArgs({"allreduce", "--sizes", "8", "-b", "8"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SpecFromEngineArgs({}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace collbench
