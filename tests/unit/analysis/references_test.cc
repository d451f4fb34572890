// SPDX-License-Identifier: Apache-2.0
// The three references' first two (docs/design/workflows.md#verdicts): the roofline of each path
// from given bandwidths (cases computed by hand below), and the published
// table's lookup (class matching, size interpolation, a missing class).
#include "analysis/references.h"

#include <cmath>
#include <map>
#include <tuple>

#include "analysis/roofline.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;

constexpr double kGB = 1e9;

HostPath Host(const std::string& name, int ranks, double copy_gb, double all_gb,
              double link_gbit = 0) {
  HostPath host;
  host.host = name;
  host.ranks = ranks;
  host.copy_bytes_per_s = copy_gb * kGB;
  host.copy_all_bytes_per_s = all_gb * kGB;
  host.link_bits_per_s = link_gbit * 1e9;
  host.link = link_gbit > 0 ? "eth0 (sysfs)" : "";
  return host;
}

PathFacts Path(const std::string& transport, bool cma, std::vector<HostPath> hosts) {
  PathFacts path;
  path.backend = "mpi";
  path.transport = transport;
  path.single_copy = cma;
  path.hosts = std::move(hosts);
  return path;
}

// One host, 2 ranks, CMA: a collective copies each received byte once; a
// rank gets min(10, 16 / 2) = 8 GB/s.
TEST(RooflineTest, ShmWithSingleCopyIsTheRanksShareOfTheCopyRate) {
  std::optional<Limit> limit = PathLimit(Path("shm", true, {Host("a", 2, 10, 16)}), "allreduce");
  ASSERT_TRUE(limit.has_value());
  EXPECT_DOUBLE_EQ(limit->busbw_bytes_per_s, 8 * kGB);
  EXPECT_THAT(limit->derivation, HasSubstr("shm (cma)"));
}

// Without CMA a byte goes into and out of a shared segment: two copies.
// 4 ranks on a host of 24 GB/s all-thread, 10 GB/s one thread:
// min(10, 24 / 4) / 2 = 3 GB/s.
TEST(RooflineTest, ShmWithoutSingleCopyCostsTwoCopies) {
  std::optional<Limit> limit = PathLimit(Path("shm", false, {Host("a", 4, 10, 24)}), "allgather");
  ASSERT_TRUE(limit.has_value());
  EXPECT_DOUBLE_EQ(limit->busbw_bytes_per_s, 3 * kGB);
}

// One thread's rate caps a rank even when the host has more to share:
// 1 rank, min(10, 40 / 1) / 2 = 5 GB/s for TCP over loopback.
TEST(RooflineTest, TcpOnOneHostIsTwoKernelCopies) {
  std::optional<Limit> limit = PathLimit(Path("tcp", false, {Host("a", 1, 10, 40)}), "reduce_scatter");
  ASSERT_TRUE(limit.has_value());
  EXPECT_DOUBLE_EQ(limit->busbw_bytes_per_s, 5 * kGB);
}

// Across hosts the slowest link bounds busbw: 10 Gbit/s = 1.25 GB/s, far
// under memory (min(10, 16 / 2) / 2 = 4 GB/s).
TEST(RooflineTest, TcpAcrossHostsIsTheSlowestLink) {
  std::optional<Limit> limit = PathLimit(
      Path("tcp", false, {Host("a", 2, 10, 16, 25), Host("b", 2, 10, 16, 10)}), "allreduce");
  ASSERT_TRUE(limit.has_value());
  EXPECT_DOUBLE_EQ(limit->busbw_bytes_per_s, 1.25 * kGB);
  EXPECT_THAT(limit->derivation, HasSubstr("link 10 Gbit/s"));
  EXPECT_THAT(limit->derivation, HasSubstr("of b"));
}

// A fast link leaves memory as the bound: 400 Gbit/s = 50 GB/s over
// min(10, 16 / 2) / 2 = 4 GB/s.
TEST(RooflineTest, MemoryBoundsAFastLink) {
  std::optional<Limit> limit = PathLimit(
      Path("tcp", false, {Host("a", 2, 10, 16, 400), Host("b", 2, 10, 16, 400)}), "bcast");
  ASSERT_TRUE(limit.has_value());
  EXPECT_DOUBLE_EQ(limit->busbw_bytes_per_s, 4 * kGB);
}

// Point to point copies once per byte; bibw moves both ways, twice the
// one-way link: 2 x 1 Gbit/s = 0.25 GB/s; bw 0.125 GB/s.
TEST(RooflineTest, PointToPointAndBothWays) {
  const PathFacts path = Path("tcp", false, {Host("a", 1, 10, 16, 1), Host("b", 1, 10, 16, 1)});
  EXPECT_DOUBLE_EQ(PathLimit(path, "bw")->busbw_bytes_per_s, 0.125 * kGB);
  EXPECT_DOUBLE_EQ(PathLimit(path, "bibw")->busbw_bytes_per_s, 0.25 * kGB);
  EXPECT_DOUBLE_EQ(PathLimit(path, "latency")->busbw_bytes_per_s, 0.125 * kGB);
  // On one host with CMA, bibw's two directions are one copy each: 2 x min(10, 16 / 2).
  EXPECT_DOUBLE_EQ(PathLimit(Path("shm", true, {Host("a", 2, 10, 16)}), "bibw")->busbw_bytes_per_s,
                   16 * kGB);
}

TEST(RooflineTest, UnknownWhereThePathCannotBeKnown) {
  EXPECT_FALSE(PathLimit(Path("auto", false, {Host("a", 2, 10, 16)}), "allreduce").has_value());
  EXPECT_FALSE(PathLimit(Path("ucx", false, {Host("a", 2, 10, 16)}), "allreduce").has_value());
  EXPECT_FALSE(PathLimit(Path("shm", true, {Host("a", 2, 0, 0)}), "allreduce").has_value());
  EXPECT_FALSE(PathLimit(Path("shm", true, {Host("a", 2, 10, 16)}), "gemm").has_value());
  PathFacts gpu = Path("shm", true, {Host("a", 2, 10, 16)});
  gpu.backend = "nccl";
  EXPECT_FALSE(PathLimit(gpu, "allreduce").has_value());
  PathFacts hbw = Path("shm", true, {Host("a", 2, 10, 16)});
  hbw.memory = "hbw";
  EXPECT_FALSE(PathLimit(hbw, "allreduce").has_value());
}

// Hosts' figures come from the run's workers; co-resident workers measured
// one host, and the smaller figure holds.
TEST(RooflineTest, FactsOfARunGroupWorkersByHost) {
  v1::Run run;
  run.mutable_spec()->set_operation("allreduce");
  run.set_effective_transport(v1::TCP);
  for (const auto& [worker, host] : {std::pair{"workers/a", "h1"}, std::pair{"workers/b", "h1"},
                                     std::pair{"workers/c", "h2"}}) {
    v1::RankHost* rank_host = run.add_hosts();
    rank_host->set_worker(worker);
    rank_host->set_host_id(host);
    rank_host->set_slots(1);
  }
  std::map<std::string, v1::Inventory> inventories;
  for (const auto& [name, copy, link] :
       {std::tuple{"workers/a", 10.0, 25.0}, std::tuple{"workers/b", 8.0, 25.0},
        std::tuple{"workers/c", 12.0, 1.0}}) {
    v1::Inventory& inventory = inventories[name];
    inventory.mutable_memory_bandwidth()->set_copy_bytes_per_s(copy * kGB);
    inventory.mutable_memory_bandwidth()->set_copy_all_bytes_per_s(copy * 2 * kGB);
    v1::NetworkLink* l = inventory.add_links();
    l->set_name("eth0");
    l->set_bits_per_s(link * 1e9);
    l->set_source("sysfs");
  }
  // A declared rate wins over sysfs.
  v1::NetworkLink* declared = inventories["workers/c"].add_links();
  declared->set_name("label");
  declared->set_bits_per_s(0.5e9);
  declared->set_source("label");
  const PathFacts facts = PathFactsOf(run, [&](const std::string& name) -> const v1::Inventory* {
    return &inventories.at(name);
  });
  ASSERT_EQ(facts.hosts.size(), 2u);
  EXPECT_EQ(facts.transport, "tcp");
  EXPECT_EQ(facts.hosts[0].ranks, 2);
  EXPECT_DOUBLE_EQ(facts.hosts[0].copy_bytes_per_s, 8 * kGB);
  EXPECT_DOUBLE_EQ(facts.hosts[1].link_bits_per_s, 0.5e9);
  EXPECT_EQ(facts.hosts[1].link, "declared link-rate label");
  EXPECT_DOUBLE_EQ(PathLimit(facts, "allreduce")->busbw_bytes_per_s, 0.5e9 / 8);
}

constexpr char kTable[] = R"json({"version": 1, "entries": [
  {"class": {"gpu": "H200", "gpus": 8, "interconnect": "NVLink4/NVSwitch (NVLS)"},
   "operation": "allreduce", "metric": "busbw_GBps", "value": 400, "floor": null, "at_bytes": 1073741824,
   "source": {"url": "https://example.org/a"}},
  {"class": {"gpu": "H200", "gpus": 8, "interconnect": "NVLink4/NVSwitch (NVLS)"},
   "operation": "allreduce", "metric": "busbw_GBps", "value": 480, "at_bytes": 17179869184,
   "source": {"url": "https://example.org/b"}},
  {"class": {"gpu": "H200", "gpus": 8, "interconnect": "NVLink4/NVSwitch (NVLS)"},
   "operation": "allreduce", "metric": "busbw_GBps", "floor": 431, "at_bytes": 17179869184,
   "source": {"url": "https://example.org/c"}},
  {"class": {"gpu": "H200", "gpus": 8, "interconnect": "NVLink4/NVSwitch (NVLS off)"},
   "operation": "allreduce", "metric": "busbw_GBps", "value": 360, "at_bytes": 17179869184,
   "source": {"url": "https://example.org/d"}},
  {"class": {"gpu": "H200", "gpus": 8, "interconnect": "NVLink4/NVSwitch (NVLS)"},
   "operation": "allreduce", "metric": "busbw_GBps", "value": 475, "at_bytes": null,
   "source": {"url": "https://example.org/e"}},
  {"class": {"gpu": "H100", "gpus": 1, "interconnect": "PCIe Gen5 x16"},
   "operation": "h2d", "metric": "algbw_GBps", "range": [54, 56], "at_bytes": 67108864,
   "source": {"url": "https://example.org/f"}}
]})json";

RunClass H200(int gpus = 8) {
  RunClass run;
  run.gpu = "NVIDIA H200";
  run.gpus = gpus;
  run.on_gpu = true;
  run.hosts = 1;
  run.nccl = true;
  return run;
}

TEST(ReferenceTableTest, InterpolatesOnLogSizeBetweenPublishedSizes) {
  absl::StatusOr<ReferenceTable> table = ReferenceTable::Parse(kTable);
  ASSERT_TRUE(table.ok()) << table.status();
  // 4 GiB is halfway (in log2) between 1 GiB and 16 GiB: (400 + 480) / 2.
  std::optional<Expected> at_4g = table->Lookup(H200(), "allreduce", uint64_t{4} << 30);
  ASSERT_TRUE(at_4g.has_value());
  EXPECT_NEAR(at_4g->value_bytes_per_s, 440 * kGB, 1e-3 * kGB);
  // The floor holds from its own size only.
  EXPECT_EQ(at_4g->floor_bytes_per_s, 0);
  std::optional<Expected> at_32g = table->Lookup(H200(), "allreduce", uint64_t{32} << 30);
  ASSERT_TRUE(at_32g.has_value());
  EXPECT_DOUBLE_EQ(at_32g->value_bytes_per_s, 480 * kGB);
  EXPECT_DOUBLE_EQ(at_32g->floor_bytes_per_s, 431 * kGB);
  EXPECT_EQ(at_32g->source_url, "https://example.org/b");
  EXPECT_THAT(at_32g->class_text, HasSubstr("8x H200"));
  // Below the smallest published size there is no reference (the
  // unsized entry never gives one).
  EXPECT_FALSE(table->Lookup(H200(), "allreduce", 1 << 20).has_value());
}

TEST(ReferenceTableTest, MatchesTheClassOnly) {
  absl::StatusOr<ReferenceTable> table = ReferenceTable::Parse(kTable);
  ASSERT_TRUE(table.ok());
  const uint64_t big = uint64_t{16} << 30;
  // Another model, a model whose name merely contains it, another count,
  // several hosts, host memory: no reference.
  RunClass h100 = H200();
  h100.gpu = "NVIDIA H100 80GB HBM3";
  EXPECT_FALSE(table->Lookup(h100, "allreduce", big).has_value());
  RunClass gh200 = H200();
  gh200.gpu = "NVIDIA GH200 480GB";
  EXPECT_FALSE(table->Lookup(gh200, "allreduce", big).has_value());
  EXPECT_FALSE(table->Lookup(H200(4), "allreduce", big).has_value());
  RunClass two_hosts = H200();
  two_hosts.hosts = 2;
  EXPECT_FALSE(table->Lookup(two_hosts, "allreduce", big).has_value());
  RunClass host_memory;
  host_memory.hosts = 1;
  host_memory.gpus = 8;
  EXPECT_FALSE(table->Lookup(host_memory, "allreduce", big).has_value());
  EXPECT_FALSE(table->Lookup(H200(), "allgather", big).has_value());
  // NVLS off: the NVLS-off entry, not the NVLS one.
  RunClass off = H200();
  off.nvls_off = true;
  std::optional<Expected> expected = table->Lookup(off, "allreduce", big);
  ASSERT_TRUE(expected.has_value());
  EXPECT_DOUBLE_EQ(expected->value_bytes_per_s, 360 * kGB);
  // algbw entries hold where busbw equals algbw; a range counts from its low end.
  RunClass copy;
  copy.gpu = "NVIDIA H100 PCIe";
  copy.gpus = 1;
  copy.on_gpu = true;
  copy.hosts = 1;
  expected = table->Lookup(copy, "h2d", 1 << 30);
  ASSERT_TRUE(expected.has_value());
  EXPECT_DOUBLE_EQ(expected->value_bytes_per_s, 54 * kGB);
}

TEST(ReferenceTableTest, VerdictsAgainstValueAndFloor) {
  Expected expected;
  expected.value_bytes_per_s = 480 * kGB;
  expected.floor_bytes_per_s = 431 * kGB;
  EXPECT_EQ(ExpectedVerdict(470 * kGB, expected), "ok");
  EXPECT_EQ(ExpectedVerdict(432 * kGB, expected), "ok");  // 90% of 480 is 432
  EXPECT_EQ(ExpectedVerdict(431.5 * kGB, expected), "low");
  EXPECT_EQ(ExpectedVerdict(400 * kGB, expected), "below-floor");
}

TEST(ReferenceTableTest, RefusesMalformedEntries) {
  EXPECT_FALSE(ReferenceTable::Parse("[]").ok());
  EXPECT_FALSE(ReferenceTable::Parse(R"({"version": 2, "entries": []})").ok());
  absl::StatusOr<ReferenceTable> no_source = ReferenceTable::Parse(
      R"({"version": 1, "entries": [{"class": {}, "operation": "allreduce",
          "metric": "busbw_GBps", "value": 1, "source": {"url": ""}}]})");
  ASSERT_FALSE(no_source.ok());
  EXPECT_THAT(no_source.status().message(), HasSubstr("entry 0"));
  EXPECT_FALSE(ReferenceTable::Parse(
                   R"({"version": 1, "entries": [{"class": {}, "operation": "allreduce",
          "metric": "busbw_GBps", "value": -3, "source": {"url": "https://x"}}]})")
                   .ok());
}

// The data file in the repository parses, every entry has its source, and
// it has entries for the classes the issue names.
TEST(ReferenceTableTest, TheCompiledInTableParses) {
  absl::StatusOr<ReferenceTable> table = ReferenceTable::Parse(EmbeddedReferencesJson());
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_GE(table->entries().size(), 40u);
  EXPECT_EQ(ReferenceTable::Embedded().entries().size(), table->entries().size());
  std::optional<Expected> h200 =
      table->Lookup(H200(), "allreduce", uint64_t{16} << 30);
  ASSERT_TRUE(h200.has_value());
  EXPECT_GT(h200->floor_bytes_per_s, 0);
}

// A result's references: ratio to limit, ratio to expected, verdict.
TEST(ReferencesOfTest, FillsTheRatios) {
  absl::StatusOr<ReferenceTable> table = ReferenceTable::Parse(kTable);
  ASSERT_TRUE(table.ok());
  v1::SizeResult result;
  result.set_operation("allreduce");
  result.set_bytes(uint64_t{16} << 30);
  result.set_busbw_bytes_per_s(420 * kGB);
  PathFacts gpu_path;
  gpu_path.backend = "nccl";
  v1::ResultReferences references = ReferencesOf(gpu_path, H200(), result, *table);
  EXPECT_EQ(references.limit_ratio(), 0);
  EXPECT_NEAR(references.expected_ratio(), 420.0 / 480, 1e-12);
  EXPECT_EQ(references.expected_verdict(), "below-floor");

  result.set_bytes(1 << 20);
  result.set_busbw_bytes_per_s(2 * kGB);
  references = ReferencesOf(Path("shm", true, {Host("a", 2, 10, 16)}), RunClass{}, result, *table);
  EXPECT_DOUBLE_EQ(references.limit_ratio(), 0.25);
  EXPECT_THAT(references.limit_path(), HasSubstr("8 GB/s"));
  EXPECT_EQ(references.expected_ratio(), 0);
  EXPECT_EQ(references.expected_verdict(), "");
}

}  // namespace
}  // namespace collbench
