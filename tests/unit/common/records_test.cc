// SPDX-License-Identifier: Apache-2.0
// The JSON-lines contract of `collbench-rank --format jsonl`
// (docs/design/data-plane.md#output): one object per line with a "kind", field
// names fixed because the coordinator and external tools parse them, and
// malformed lines reported as errors rather than crashes.
#include "common/records.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gtest/gtest.h"

namespace collbench {
namespace {

using Json = nlohmann::json;

StartRecord SampleStart() {
  StartRecord r;
  r.spec = {{"operation", "allreduce"}, {"sizes", "8,1K,64K"},
            {"backend", "mpi"},         {"dtype", "float32"}};
  r.nranks = 4;
  r.mpi_library = "Open MPI";
  r.mpi_version = "Open MPI v4.1.4, package: Debian OpenMPI";
  r.nccl_version = "2.28.3";
  r.hosts = {"node-a", "node-a", "node-b", "node-b"};
  r.environment = {{"kernel", "6.1.0-18-amd64"},
                   {"NCCL_DEBUG", "WARN"},
                   {"OMPI_MCA_btl", "self,vader,tcp"}};
  r.fingerprint = "9f86d081884c7d65";
  r.collbench_version = "0.1.0";
  return r;
}

SizeRecord SampleSize() {
  SizeRecord r;
  r.operation = "allreduce";
  r.bytes = 65536;
  r.count = 16384;
  r.dtype = "float32";
  r.redop = "sum";
  r.iters = 1000;
  r.avg_s = 1.234567891234e-5;
  r.min_s = 1.1e-5;
  r.max_s = 1.4000000000000001e-5;
  r.p50_s = 1.2e-5;
  r.p90_s = 1.35e-5;
  r.p99_s = 2.5e-5;
  r.algbw_Bps = 65536 / 1.234567891234e-5;
  r.busbw_Bps = r.algbw_Bps * 2 * 3 / 4;
  r.wrong = 3;
  r.checked = true;
  for (uint64_t i = 0; i < 4000; ++i) {
    r.histogram.Record(9000 + (i * 7919) % 6000);
  }
  r.histogram.Record(0);
  r.histogram.Record(uint64_t{1} << 40);
  r.histogram.RecordMany(250000, 3);
  r.scenario = {{"ranks", 4}, {"efficiency", 0.8765432}, {"step_s", 0.0125}};
  r.sync = "barrier";
  r.ranks = {{0, "node-a", 1.5e-5, 1.4e-5, 3.1e-5, false},
             {1, "node-b", 4.25e-5, 4.0e-5, 9.9e-5, true}};
  r.slowest_rank = 1;
  r.slowest_vs_median = 2.8333333333333335;
  return r;
}

EndRecord SampleEnd() { return EndRecord{"wrong", 5, 3, 12.75}; }

ErrorRecord SampleError() {
  return ErrorRecord{"hbw: no high-bandwidth memory on \"node-a\"\n(see memkind)"};
}

Json ParseText(const std::string& line) {
  Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << line;
  return j;
}

template <typename T>
T RoundTrip(const T& record) {
  const std::string line = ToJsonLine(record);
  auto parsed = ParseJsonLine(line);
  EXPECT_TRUE(parsed.ok()) << parsed.status() << "\n" << line;
  if (!parsed.ok()) return T{};
  EXPECT_TRUE(std::holds_alternative<T>(*parsed)) << line;
  if (!std::holds_alternative<T>(*parsed)) return T{};
  return std::get<T>(*parsed);
}

// ---------------------------------------------------------------------------
// Round trips.

TEST(RecordsRoundTripTest, Start) {
  EXPECT_EQ(RoundTrip(SampleStart()), SampleStart());
  EXPECT_EQ(RoundTrip(StartRecord{}), StartRecord{});
}

TEST(RecordsRoundTripTest, SizeWithHistogramAndScenario) {
  const SizeRecord original = SampleSize();
  const SizeRecord back = RoundTrip(original);
  EXPECT_EQ(back, original);
  // Spelled out, so a failure says which part was lost.
  EXPECT_EQ(back.avg_s, original.avg_s);  // doubles survive bit for bit
  EXPECT_EQ(back.busbw_Bps, original.busbw_Bps);
  EXPECT_EQ(back.scenario, original.scenario);
  EXPECT_EQ(back.histogram.Sparse(), original.histogram.Sparse());
  EXPECT_EQ(back.histogram.count(), original.histogram.count());
  EXPECT_EQ(back.histogram.sum_ns(), original.histogram.sum_ns());
  EXPECT_EQ(back.histogram.min_ns(), 1u);
  EXPECT_EQ(back.histogram.max_ns(), uint64_t{1} << 40);
  for (double q : {0.5, 0.9, 0.99}) {
    EXPECT_EQ(back.histogram.QuantileNs(q), original.histogram.QuantileNs(q));
  }
}

TEST(RecordsRoundTripTest, SizeWithoutRedopRootOrScenario) {
  SizeRecord r = SampleSize();
  r.operation = "bcast";
  r.redop.clear();
  r.root = -1;
  r.scenario.clear();
  r.checked = false;
  r.wrong = 0;
  EXPECT_EQ(RoundTrip(r), r);
}

TEST(RecordsRoundTripTest, SizeWithRoot) {
  SizeRecord r = SampleSize();
  r.operation = "gather";
  r.redop.clear();
  r.root = 2;
  EXPECT_EQ(RoundTrip(r).root, 2);
  r.root = 0;
  EXPECT_EQ(RoundTrip(r).root, 0);
}

TEST(RecordsRoundTripTest, SizeWithEmptyHistogram) {
  SizeRecord r = SampleSize();
  r.histogram.Clear();
  EXPECT_EQ(RoundTrip(r), r);
}

TEST(RecordsRoundTripTest, End) { EXPECT_EQ(RoundTrip(SampleEnd()), SampleEnd()); }

TEST(RecordsRoundTripTest, ErrorWithQuotesAndNewlines) {
  EXPECT_EQ(RoundTrip(SampleError()), SampleError());
}

TEST(RecordsTest, ALineIsOneLineWithoutTrailingNewline) {
  for (const Record& r : std::vector<Record>{SampleStart(), SampleSize(),
                                             SampleEnd(), SampleError()}) {
    const std::string line = ToJsonLine(r);
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    EXPECT_EQ(line.front(), '{');
    EXPECT_EQ(line.back(), '}');
  }
}

TEST(RecordsTest, ParserAcceptsATrailingNewlineAndUnknownFields) {
  const std::string line = ToJsonLine(SampleEnd()) + "\n";
  auto parsed = ParseJsonLine(line);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(std::get<EndRecord>(*parsed), SampleEnd());

  Json j = ParseText(ToJsonLine(SampleSize()));
  j["added_by_a_newer_engine"] = {{"nested", true}};
  j["histogram"]["also_new"] = 1;
  parsed = ParseJsonLine(j.dump());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(std::get<SizeRecord>(*parsed), SampleSize());
}

TEST(RecordsTest, IntegersAreAcceptedWhereSecondsAreExpected) {
  // External tools may write 0 rather than 0.0.
  Json j = ParseText(ToJsonLine(SampleSize()));
  j["min_s"] = 0;
  j["busbw_Bps"] = 12345678901;
  auto parsed = ParseJsonLine(j.dump());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(std::get<SizeRecord>(*parsed).min_s, 0.0);
  EXPECT_EQ(std::get<SizeRecord>(*parsed).busbw_Bps, 12345678901.0);
}

// ---------------------------------------------------------------------------
// Field names (docs/design/data-plane.md#output).

TEST(RecordsFieldNamesTest, SizeRecordUsesTheDesignNames) {
  const SizeRecord r = SampleSize();
  const Json j = ParseText(ToJsonLine(r));
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j.at("kind"), "size");
  EXPECT_EQ(j.at("bytes"), 65536);
  EXPECT_EQ(j.at("count"), 16384);
  EXPECT_EQ(j.at("dtype"), "float32");
  EXPECT_EQ(j.at("iters"), 1000);
  EXPECT_EQ(j.at("avg_s"), r.avg_s);
  EXPECT_EQ(j.at("min_s"), r.min_s);
  EXPECT_EQ(j.at("max_s"), r.max_s);
  EXPECT_EQ(j.at("p50_s"), r.p50_s);
  EXPECT_EQ(j.at("p90_s"), r.p90_s);
  EXPECT_EQ(j.at("p99_s"), r.p99_s);
  EXPECT_EQ(j.at("algbw_Bps"), r.algbw_Bps);
  EXPECT_EQ(j.at("busbw_Bps"), r.busbw_Bps);
  EXPECT_EQ(j.at("wrong"), 3);
  EXPECT_EQ(j.at("operation"), "allreduce");
  EXPECT_EQ(j.at("redop"), "sum");
  EXPECT_EQ(j.at("scenario").at("efficiency"), 0.8765432);
  // Numbers are JSON numbers, not strings.
  for (const char* key : {"bytes", "count", "iters", "avg_s", "p99_s",
                          "algbw_Bps", "busbw_Bps", "wrong"}) {
    EXPECT_TRUE(j.at(key).is_number()) << key;
  }

  const Json& h = j.at("histogram");
  EXPECT_EQ(h.at("sub_buckets"), 64);
  const Json& counts = h.at("counts");
  ASSERT_TRUE(counts.is_object());
  // {index: count} for every non-empty bucket, nothing else.
  const auto sparse = r.histogram.Sparse();
  EXPECT_EQ(counts.size(), sparse.size());
  for (const auto& [index, count] : sparse) {
    EXPECT_EQ(counts.at(std::to_string(index)), count) << index;
  }
}

TEST(RecordsFieldNamesTest, SizeRecordNamesTheSyncAndEveryRank) {
  const Json j = ParseText(ToJsonLine(SampleSize()));
  EXPECT_EQ(j.at("sync"), "barrier");
  ASSERT_TRUE(j.at("ranks").is_array());
  ASSERT_EQ(j.at("ranks").size(), 2u);
  const Json& slow = j.at("ranks")[1];
  EXPECT_EQ(slow.at("rank"), 1);
  EXPECT_EQ(slow.at("host"), "node-b");
  EXPECT_EQ(slow.at("mean_s"), 4.25e-5);
  EXPECT_EQ(slow.at("p50_s"), 4.0e-5);
  EXPECT_EQ(slow.at("p99_s"), 9.9e-5);
  EXPECT_EQ(slow.at("straggler"), true);
  EXPECT_EQ(j.at("slowest_rank"), 1);
  EXPECT_EQ(j.at("slowest_vs_median"), 2.8333333333333335);
}

TEST(RecordsFieldNamesTest, OptionalSizeFieldsAreOmittedWhenUnset) {
  SizeRecord r = SampleSize();
  r.redop.clear();
  r.root = -1;
  r.scenario.clear();
  r.sync.clear();
  r.ranks.clear();
  const Json j = ParseText(ToJsonLine(r));
  EXPECT_FALSE(j.contains("sync"));
  EXPECT_FALSE(j.contains("ranks"));
  EXPECT_FALSE(j.contains("slowest_rank"));
  EXPECT_FALSE(j.contains("redop"));
  EXPECT_FALSE(j.contains("root"));
  EXPECT_FALSE(j.contains("scenario"));
  r.root = 1;
  EXPECT_EQ(ParseText(ToJsonLine(r)).at("root"), 1);
}

TEST(RecordsFieldNamesTest, StartRecordUsesTheDesignNames) {
  const Json j = ParseText(ToJsonLine(SampleStart()));
  EXPECT_EQ(j.at("kind"), "start");
  EXPECT_EQ(j.at("nranks"), 4);
  EXPECT_EQ(j.at("spec").at("operation"), "allreduce");
  EXPECT_EQ(j.at("mpi_library"), "Open MPI");
  EXPECT_EQ(j.at("mpi_version"), SampleStart().mpi_version);
  EXPECT_EQ(j.at("nccl_version"), "2.28.3");
  EXPECT_EQ(j.at("hosts"), Json({"node-a", "node-a", "node-b", "node-b"}));
  EXPECT_EQ(j.at("environment").at("NCCL_DEBUG"), "WARN");
  EXPECT_EQ(j.at("fingerprint"), "9f86d081884c7d65");
}

TEST(RecordsFieldNamesTest, EndAndErrorRecordsUseTheDesignNames) {
  const Json end = ParseText(ToJsonLine(SampleEnd()));
  EXPECT_EQ(end.at("kind"), "end");
  EXPECT_EQ(end.at("status"), "wrong");
  EXPECT_EQ(end.at("sizes"), 5);
  EXPECT_EQ(end.at("wrong"), 3);
  EXPECT_EQ(end.at("elapsed_s"), 12.75);

  const Json error = ParseText(ToJsonLine(SampleError()));
  EXPECT_EQ(error.at("kind"), "error");
  EXPECT_EQ(error.at("message"), SampleError().message);
}

// ---------------------------------------------------------------------------
// Malformed lines are errors, not crashes.

void ExpectInvalid(const std::string& line) {
  auto parsed = ParseJsonLine(line);
  EXPECT_FALSE(parsed.ok()) << "accepted: " << line;
  if (!parsed.ok()) {
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument)
        << parsed.status();
    EXPECT_FALSE(parsed.status().message().empty());
  }
}

TEST(RecordsMalformedTest, NotJson) {
  for (const std::string& line : std::vector<std::string>{
           "", " ", "{", "}", "hello", "{\"kind\": \"end\"", "{'kind': 'end'}",
        "{\"kind\": \"end\", \"status\": \"ok\"} trailing",
        "{\"kind\":\"end\",\"status\":\"ok\"}{\"kind\":\"end\",\"status\":\"ok\"}",
        std::string("{\"kind\":\"error\",\"message\":\"\xff\xfe\"}")}) {
    SCOPED_TRACE(line);
    ExpectInvalid(line);
  }
}

TEST(RecordsMalformedTest, NotAnObject) {
  for (const std::string line : {"[]", "[{\"kind\":\"end\"}]", "42", "\"size\"",
                                 "null", "true"}) {
    SCOPED_TRACE(line);
    ExpectInvalid(line);
  }
}

TEST(RecordsMalformedTest, MissingOrBadKind) {
  ExpectInvalid("{}");
  ExpectInvalid(R"({"status": "ok"})");
  ExpectInvalid(R"({"kind": "sizes", "status": "ok"})");
  ExpectInvalid(R"({"kind": "", "status": "ok"})");
  ExpectInvalid(R"({"kind": 3, "status": "ok"})");
  ExpectInvalid(R"({"kind": null, "status": "ok"})");
  ExpectInvalid(R"({"kind": ["end"], "status": "ok"})");
}

TEST(RecordsMalformedTest, UnknownKindIsNamed) {
  auto parsed = ParseJsonLine(R"({"kind": "progress"})");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("progress"), std::string::npos)
      << parsed.status();
}

TEST(RecordsMalformedTest, SizeRecordMissingARequiredField) {
  const Json good = ParseText(ToJsonLine(SampleSize()));
  for (const char* key :
       {"bytes", "count", "dtype", "iters", "avg_s", "min_s", "max_s", "p50_s",
        "p90_s", "p99_s", "algbw_Bps", "busbw_Bps", "wrong", "histogram"}) {
    SCOPED_TRACE(key);
    Json j = good;
    j.erase(key);
    ExpectInvalid(j.dump());
  }
}

TEST(RecordsMalformedTest, SizeRecordFieldOfTheWrongType) {
  const Json good = ParseText(ToJsonLine(SampleSize()));
  const std::vector<std::pair<std::string, Json>> bad = {
      {"bytes", "65536"},    {"bytes", nullptr},       {"bytes", Json::array()},
      {"count", "many"},     {"dtype", 4},             {"iters", true},
      {"avg_s", "1e-5"},     {"avg_s", nullptr},       {"p99_s", Json::object()},
      {"busbw_Bps", "fast"}, {"wrong", "none"},        {"histogram", 7},
      {"histogram", "{}"},   {"scenario", "ranks=4"},  {"redop", 1},
      {"root", "0"},         {"checked", "yes"},       {"operation", 5},
  };
  for (const auto& [key, value] : bad) {
    SCOPED_TRACE(key + " = " + value.dump());
    Json j = good;
    j[key] = value;
    ExpectInvalid(j.dump());
  }
}

TEST(RecordsMalformedTest, NegativeOrFractionalCountsAreRejected) {
  const Json good = ParseText(ToJsonLine(SampleSize()));
  for (const char* key : {"bytes", "count", "iters", "wrong"}) {
    for (const Json& value : {Json(-1), Json(-65536), Json(1.5)}) {
      SCOPED_TRACE(std::string(key) + " = " + value.dump());
      Json j = good;
      j[key] = value;
      ExpectInvalid(j.dump());
    }
  }
}

TEST(RecordsMalformedTest, BadHistograms) {
  const Json good = ParseText(ToJsonLine(SampleSize()));
  auto with_histogram = [&](const Json& histogram) {
    Json j = good;
    j["histogram"] = histogram;
    return j.dump();
  };
  const Json counts = good.at("histogram").at("counts");
  ExpectInvalid(with_histogram({{"counts", counts}}));  // no sub_buckets
  ExpectInvalid(with_histogram({{"sub_buckets", 32}, {"counts", counts}}));
  ExpectInvalid(with_histogram({{"sub_buckets", "64"}, {"counts", counts}}));
  ExpectInvalid(with_histogram({{"sub_buckets", 64.5}, {"counts", counts}}));
  ExpectInvalid(with_histogram({{"sub_buckets", 1e300}, {"counts", counts}}));
  ExpectInvalid(with_histogram({{"sub_buckets", nullptr}, {"counts", counts}}));
  ExpectInvalid(with_histogram({{"sub_buckets", 64}}));  // no counts
  ExpectInvalid(with_histogram({{"sub_buckets", 64}, {"counts", 5}}));
  ExpectInvalid(with_histogram({{"sub_buckets", 64}, {"counts", {1, 2, 3}}}));
  ExpectInvalid(with_histogram({{"sub_buckets", 64}, {"counts", {{"x", 1}}}}));
  ExpectInvalid(with_histogram({{"sub_buckets", 64}, {"counts", {{"1.5", 1}}}}));
  ExpectInvalid(with_histogram({{"sub_buckets", 64}, {"counts", {{"-1", 1}}}}));
  ExpectInvalid(with_histogram(
      {{"sub_buckets", 64},
       {"counts", {{std::to_string(Histogram::kNumBuckets), 1}}}}));
  ExpectInvalid(with_histogram(
      {{"sub_buckets", 64}, {"counts", {{"99999999999999999999", 1}}}}));
  ExpectInvalid(with_histogram({{"sub_buckets", 64}, {"counts", {{"10", "1"}}}}));
  ExpectInvalid(with_histogram({{"sub_buckets", 64}, {"counts", {{"10", -1}}}}));
  ExpectInvalid(with_histogram({{"sub_buckets", 64}, {"counts", {{"10", 2.5}}}}));
  ExpectInvalid(with_histogram(
      {{"sub_buckets", 64}, {"counts", {{"10", 1}}}, {"sum_ns", "big"}}));
  ExpectInvalid(with_histogram(
      {{"sub_buckets", 64}, {"counts", {{"10", 1}}}, {"sum_ns", -5}}));
}

TEST(RecordsMalformedTest, OtherKindsMissingRequiredFields) {
  ExpectInvalid(R"({"kind": "start"})");                   // no nranks
  ExpectInvalid(R"({"kind": "start", "nranks": "4"})");
  ExpectInvalid(R"({"kind": "start", "nranks": 4, "hosts": "a,b"})");
  ExpectInvalid(R"({"kind": "start", "nranks": 4, "spec": {"n": 5}})");
  ExpectInvalid(R"({"kind": "end"})");                     // no status
  ExpectInvalid(R"({"kind": "end", "status": 0})");
  ExpectInvalid(R"({"kind": "end", "status": "ok", "sizes": -2})");
  ExpectInvalid(R"({"kind": "error"})");                   // no message
  ExpectInvalid(R"({"kind": "error", "message": null})");
}

TEST(RecordsMalformedTest, MinimalValidLinesParse) {
  EXPECT_TRUE(ParseJsonLine(R"({"kind": "start", "nranks": 2})").ok());
  EXPECT_TRUE(ParseJsonLine(R"({"kind": "end", "status": "ok"})").ok());
  EXPECT_TRUE(ParseJsonLine(R"({"kind": "error", "message": "x"})").ok());
}

}  // namespace
}  // namespace collbench
