// SPDX-License-Identifier: Apache-2.0
// A hunt's figures (analysis/hunt_plots.h): the pairwise heat map and the
// per-worker distribution keep their promises on the elements drawn (a
// cell per measured pair each way, a dot per worker), on order (suspects
// first, then the slowest), on labels (every worker up to 60, the suspects
// only past that), on size at 250 workers, and on escaping.
#include "analysis/hunt_plots.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

constexpr double kMedianBytesPerS = 12.5e9;
constexpr char kCell[] = "<rect class=\"cell\"";
constexpr char kDot[] = "<circle class=\"worker\"";
constexpr char kLabel[] = " class=\"worker-label\"";  // a <text>

std::string Worker(int i) { return absl::StrCat("workers/w", i); }

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The value of `attribute` in each element that starts with `opening`, in
// document order ("" where the element lacks it).
std::vector<std::string> Attributes(const std::string& svg, const std::string& opening,
                                    const std::string& attribute) {
  std::vector<std::string> values;
  const std::string key = absl::StrCat(" ", attribute, "=\"");
  for (size_t at = svg.find(opening); at != std::string::npos; at = svg.find(opening, at + 1)) {
    const size_t end = svg.find('>', at);  // '>' in a value is escaped
    const size_t start = svg.find(key, at);
    if (start == std::string::npos || start > end) {
      values.push_back("");
      continue;
    }
    const size_t from = start + key.size();
    values.push_back(svg.substr(from, svg.find('"', from) - from));
  }
  return values;
}

// `attribute` of each cell by (data-a, data-b).
std::map<std::pair<std::string, std::string>, std::string> CellAttribute(
    const std::string& svg, const std::string& attribute) {
  const std::vector<std::string> a = Attributes(svg, kCell, "data-a");
  const std::vector<std::string> b = Attributes(svg, kCell, "data-b");
  const std::vector<std::string> value = Attributes(svg, kCell, attribute);
  std::map<std::pair<std::string, std::string>, std::string> out;
  for (size_t i = 0; i < a.size(); ++i) out[{a[i], b[i]}] = value[i];
  return out;
}

// Each distinct value in order of first appearance.
std::vector<std::string> Distinct(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& v : values) {
    if (seen.insert(v).second) out.push_back(v);
  }
  return out;
}

double Number(const std::string& text) {
  double v = -1;
  EXPECT_TRUE(absl::SimpleAtod(text, &v)) << text;
  return v;
}

v1::HuntMeasurement* AddPair(v1::HuntOutput* hunt, const std::string& a, const std::string& b,
                             double ratio, const std::string& phase = "pairwise") {
  v1::HuntMeasurement* m = hunt->add_pairs();
  m->add_workers(a);
  m->add_workers(b);
  m->set_phase(phase);
  m->set_ratio(ratio);
  m->set_busbw_bytes_per_s(ratio * kMedianBytesPerS);
  m->set_slow(ratio < 0.75);
  return m;
}

// `n` workers w0.., one a host, every pair measured once. Worker `slow` is
// slow (0.4) in all its pairs and the one suspect; the others' median
// ratios fall with their index (w0 1.2, w1 1.199, ...), so the slowest
// healthy worker is the last by name.
v1::HuntOutput Survey(int n, int slow) {
  v1::HuntOutput hunt;
  hunt.set_metric("bw busbw at 1 MiB");
  hunt.set_fleet_median_bytes_per_s(kMedianBytesPerS);
  for (int i = 0; i < n; ++i) {
    v1::HuntWorker* w = hunt.add_workers();
    w->set_worker(Worker(i));
    w->set_host_id(absl::StrCat("host-", i));
    w->set_ratio(i == slow ? 0.4 : 1.2 - 0.001 * i);
    w->set_z(i == slow ? -12 : 0.1);
    w->set_measurements(n - 1);
    w->set_slow(i == slow ? n - 1 : 0);
  }
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      const double ratio = a == slow || b == slow ? 0.4 : 1.2 - 0.001 * b;
      AddPair(&hunt, Worker(a), Worker(b), ratio);
    }
  }
  v1::HuntSuspect* s = hunt.add_suspects();
  s->set_worker(Worker(slow));
  s->set_verdict("CONFIRMED_BAD");
  s->set_ratio(0.4);
  s->set_evidence("slow with every healthy peer");
  return hunt;
}

TEST(HuntPlotsTest, HeatMapDrawsEveryMeasuredPairBothWays) {
  const std::string svg = HuntHeatMapSvg(Survey(6, 2));
  EXPECT_EQ(Count(svg, kCell), 2u * 15u);
  const auto ratio = CellAttribute(svg, "data-ratio");
  ASSERT_EQ(ratio.size(), 30u);
  EXPECT_EQ(ratio.at({"workers/w2", "workers/w4"}), "0.40");
  EXPECT_EQ(ratio.at({"workers/w4", "workers/w2"}), "0.40");
  EXPECT_EQ(ratio.at({"workers/w0", "workers/w1"}), "1.20");
  EXPECT_EQ(ratio.count({"workers/w1", "workers/w1"}), 0u);  // no diagonal
  // Slow cells are coloured apart from healthy ones.
  const auto fill = CellAttribute(svg, "fill");
  EXPECT_NE(fill.at({"workers/w2", "workers/w4"}), fill.at({"workers/w0", "workers/w1"}));
  EXPECT_NE(svg.find("workers/w2 ↔ workers/w4: 5 GB/s, 0.40 of median"), std::string::npos)
      << "tooltip";
}

TEST(HuntPlotsTest, HeatMapPutsSuspectsFirstThenSlowestWorkers) {
  const std::string svg = HuntHeatMapSvg(Survey(6, 2));
  const std::vector<std::string> rows = Distinct(Attributes(svg, kCell, "data-a"));
  EXPECT_EQ(rows, (std::vector<std::string>{"workers/w2", "workers/w5", "workers/w4", "workers/w3",
                                            "workers/w1", "workers/w0"}));
  // Columns in the same order within a row.
  EXPECT_EQ(Distinct(Attributes(svg, kCell, "data-b")),
            (std::vector<std::string>{"workers/w5", "workers/w4", "workers/w3", "workers/w1",
                                      "workers/w0", "workers/w2"}));
  EXPECT_EQ(Attributes(svg, "<g class=\"suspect\"", "data-worker"),
            std::vector<std::string>{"workers/w2"});
}

// Workers in racks (w0-w2 rack a, w3-w5 rack b, w6-w8 rack c), rack c a
// RACK_SUSPECT and w4 a node suspect: rows go rack by rack, the rack
// suspect's first, then the rack holding the node suspect (the suspect at
// its top), then the rest; each rack is a group with its name, the rack
// suspect's marked.
TEST(HuntPlotsTest, HeatMapGroupsRowsByRackTheSuspectRacksFirst) {
  v1::HuntOutput hunt = Survey(9, 4);
  for (v1::HuntWorker& w : *hunt.mutable_workers()) {
    const int i = w.worker().back() - '0';
    w.set_rack(std::string(1, static_cast<char>('a' + i / 3)));
  }
  v1::HuntSuspect* rack = hunt.add_suspects();
  rack->set_rack("c");
  rack->set_verdict("RACK_SUSPECT");
  const std::string svg = HuntHeatMapSvg(hunt);
  const std::vector<std::string> rows = Distinct(Attributes(svg, kCell, "data-a"));
  EXPECT_EQ(rows, (std::vector<std::string>{"workers/w8", "workers/w7", "workers/w6", "workers/w4",
                                            "workers/w5", "workers/w3", "workers/w2", "workers/w1",
                                            "workers/w0"}));
  EXPECT_EQ(Attributes(svg, "<g class=\"rack\"", "data-rack"),
            (std::vector<std::string>{"c", "b", "a"}));
  EXPECT_NE(svg.find("data-rack=\"c\" data-suspect=\"true\""), std::string::npos);
  EXPECT_EQ(svg.find("data-rack=\"b\" data-suspect"), std::string::npos);
  EXPECT_NE(svg.find(">rack c</text>"), std::string::npos);
  // The node suspect is still outlined, on its own row.
  EXPECT_EQ(Attributes(svg, "<g class=\"suspect\"", "data-worker"),
            std::vector<std::string>{"workers/w4"});
  // Without racks, no rack groups.
  EXPECT_EQ(HuntHeatMapSvg(Survey(9, 4)).find("class=\"rack\""), std::string::npos);
}

TEST(HuntPlotsTest, HeatMapLabelsEveryWorkerOfASmallFleet) {
  const std::string svg = HuntHeatMapSvg(Survey(6, 2));
  // A row and a column label each, without "workers/".
  EXPECT_EQ(Count(svg, kLabel), 12u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(Count(svg, absl::StrCat(">w", i, "</text>")), 2u) << i;
  }
  for (const char* tick :
       {">0</text>", ">0.25</text>", ">0.5</text>", ">0.75</text>", ">1</text>", ">1.25</text>"}) {
    EXPECT_NE(svg.find(tick), std::string::npos) << "legend tick " << tick;
  }
}

TEST(HuntPlotsTest, HeatMapOfALargeFleetStaysInBoundsAndLabelsOnlySuspects) {
  constexpr int kWorkers = 250;
  const std::string svg = HuntHeatMapSvg(Survey(kWorkers, 17));
  // One cell per pair: the lower triangle of a symmetric matrix.
  EXPECT_EQ(Count(svg, kCell), 1u * kWorkers * (kWorkers - 1) / 2);
  EXPECT_EQ(Attributes(svg, kLabel, "data-worker"), std::vector<std::string>{"workers/w17"});
  // The suspect's row is first: its pairs are in its column, below it.
  EXPECT_EQ(Attributes(svg, kCell, "data-b").front(), "workers/w17");
  const double width = Number(Attributes(svg, "<svg", "width").front());
  const double height = Number(Attributes(svg, "<svg", "height").front());
  EXPECT_GE(width, 720);  // the matrix at its full side
  EXPECT_LE(width, 900);
  EXPECT_LE(height, 900);
  // Cells shrank to fit: 720 px over 250 workers.
  EXPECT_EQ(Attributes(svg, kCell, "width").front(), "2.9");
  // A tooltip per row, not per cell: the page stays a few megabytes.
  EXPECT_EQ(Count(svg, "<g class=\"row\""), static_cast<size_t>(kWorkers));
  EXPECT_LT(svg.size(), 6u << 20) << svg.size() << " bytes";
}

TEST(HuntPlotsTest, HeatMapDrawsSurveyMediansAndFailuresNotRetests) {
  v1::HuntOutput hunt;
  const std::vector<std::string> w = {"workers/a", "workers/b", "workers/c", "workers/d"};
  AddPair(&hunt, w[0], w[1], 0.5);
  AddPair(&hunt, w[1], w[0], 1.0);  // the same pair, the other way
  AddPair(&hunt, w[0], w[1], 0.9);
  AddPair(&hunt, w[2], w[3], 1.0)->set_error("mpirun exited with 1");
  AddPair(&hunt, w[0], w[2], 0.3, "retest");
  AddPair(&hunt, w[0], w[0], 1.0);  // not a pair
  const std::string svg = HuntHeatMapSvg(hunt);
  EXPECT_EQ(Count(svg, kCell), 4u);  // a-b and c-d, each both ways
  const auto ratio = CellAttribute(svg, "data-ratio");
  EXPECT_EQ(ratio.at({w[0], w[1]}), "0.90");  // the median of 0.5, 1.0 and 0.9
  EXPECT_EQ(ratio.at({w[2], w[3]}), "");      // failed: no ratio
  EXPECT_EQ(CellAttribute(svg, "data-failed").at({w[3], w[2]}), "true");
  EXPECT_EQ(ratio.count({w[0], w[2]}), 0u);  // the re-test is not a cell
  EXPECT_NE(svg.find("failed: mpirun exited with 1"), std::string::npos);
}

TEST(HuntPlotsTest, HeatMapIsEmptyWithoutPairwiseMeasurements) {
  v1::HuntOutput hunt = Survey(4, 1);
  hunt.clear_pairs();
  EXPECT_EQ(HuntHeatMapSvg(hunt), "");
  // A groups hunt re-tests its suspects in pairs: still no survey to draw.
  AddPair(&hunt, Worker(1), Worker(2), 0.4, "retest");
  EXPECT_EQ(HuntHeatMapSvg(hunt), "");
  EXPECT_NE(HuntDistributionSvg(hunt), "");
}

TEST(HuntPlotsTest, EscapesNamesVerdictsAndErrors) {
  v1::HuntOutput hunt = Survey(3, 0);
  hunt.mutable_workers(1)->set_worker("workers/a<b");
  hunt.mutable_suspects(0)->set_evidence("<script>alert(1)</script>");
  AddPair(&hunt, "workers/a<b", Worker(2), 1.0)->set_error("\"quoted\" & <bad>");
  for (const std::string& svg : {HuntHeatMapSvg(hunt), HuntDistributionSvg(hunt)}) {
    ASSERT_FALSE(svg.empty());
    EXPECT_EQ(svg.find("a<b"), std::string::npos);
    EXPECT_NE(svg.find("workers/a&lt;b"), std::string::npos);
    EXPECT_EQ(svg.find("<script"), std::string::npos);
    EXPECT_EQ(svg.find("<bad>"), std::string::npos);
  }
}

TEST(HuntPlotsTest, DistributionDrawsEveryWorkerSlowestFirst) {
  const std::string svg = HuntDistributionSvg(Survey(6, 2));
  const std::vector<std::string> workers = Attributes(svg, kDot, "data-worker");
  EXPECT_EQ(workers, (std::vector<std::string>{"workers/w2", "workers/w5", "workers/w4",
                                               "workers/w3", "workers/w1", "workers/w0"}));
  const std::vector<std::string> ratios = Attributes(svg, kDot, "data-ratio");
  ASSERT_EQ(ratios.size(), 6u);
  EXPECT_EQ(ratios.front(), "0.40");
  EXPECT_EQ(ratios.back(), "1.20");
  EXPECT_EQ(Attributes(svg, "<g class=\"suspect\"", "data-worker"),
            std::vector<std::string>{"workers/w2"});
  EXPECT_EQ(Count(svg, kLabel), 6u);  // every worker
  EXPECT_NE(svg.find(">fleet median</text>"), std::string::npos);
  EXPECT_NE(svg.find("workers/w2 (host-2): 0.40 of median, z -12.0, 5 measurements, 5 slow"),
            std::string::npos);
}

TEST(HuntPlotsTest, DistributionOfALargeFleetLabelsSuspectsAndTheSlowest) {
  constexpr int kWorkers = 250;
  v1::HuntOutput hunt = Survey(kWorkers, 17);
  // A second suspect the survey found healthy enough: labelled too.
  v1::HuntSuspect* inconclusive = hunt.add_suspects();
  inconclusive->set_worker(Worker(100));
  inconclusive->set_verdict("INCONCLUSIVE");
  hunt.clear_pairs();  // the distribution reads hunt.workers() only
  const std::string svg = HuntDistributionSvg(hunt);
  EXPECT_EQ(Count(svg, kDot), static_cast<size_t>(kWorkers));
  EXPECT_EQ(Attributes(svg, kLabel, "data-worker"),
            (std::vector<std::string>{"workers/w17", "workers/w249", "workers/w248", "workers/w247",
                                      "workers/w246", "workers/w100"}));
  EXPECT_EQ(Count(svg, "<g class=\"suspect\""), 2u);
  EXPECT_LE(Number(Attributes(svg, "<svg", "width").front()), 900);
  EXPECT_LE(Number(Attributes(svg, "<svg", "height").front()), 450);
}

TEST(HuntPlotsTest, DistributionIsEmptyWithoutWorkers) {
  EXPECT_EQ(HuntDistributionSvg(v1::HuntOutput()), "");
  v1::HuntOutput hunt = Survey(4, 1);
  hunt.clear_workers();
  EXPECT_EQ(HuntDistributionSvg(hunt), "");
  EXPECT_NE(HuntHeatMapSvg(hunt), "");  // the pairs are still drawn
}

}  // namespace
}  // namespace collbench
