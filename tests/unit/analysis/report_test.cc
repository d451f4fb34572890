// SPDX-License-Identifier: Apache-2.0
#include "analysis/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "analysis/svg_plot.h"
#include "common/histogram.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A run of `operation` over five sizes, 8 B .. 32 KiB, whose mean latency is
// `scale` µs times log2(size), with a histogram and two ranks per size.
RunWithResults MakeRun(const std::string& id, v1::MpiImplementation mpi, double scale,
                       const std::string& operation = "allreduce") {
  RunWithResults r;
  r.run.set_name(absl::StrCat("runs/", id));
  r.run.set_state(v1::SUCCEEDED);
  r.run.mutable_spec()->set_operation(operation);
  r.run.mutable_spec()->set_mpi(mpi);
  r.run.mutable_spec()->set_ranks(2);
  r.run.set_mpi_version(mpi == v1::MPICH ? "MPICH 4.0" : "Open MPI 4.1.4");
  for (uint64_t bytes = 8; bytes <= 32768; bytes *= 8) {
    v1::SizeResult s;
    s.set_operation(operation);
    s.set_bytes(bytes);
    s.set_avg_s(scale * 1e-6 * std::log2(static_cast<double>(bytes)));
    s.set_p50_s(s.avg_s());
    s.set_busbw_bytes_per_s(bytes / s.avg_s());
    s.set_slowest_rank(1);
    s.set_slowest_vs_median(1.8);
    Histogram h;
    h.RecordMany(static_cast<uint64_t>(s.avg_s() * 1e9), 90);
    h.RecordMany(static_cast<uint64_t>(s.avg_s() * 2e9), 10);
    for (const auto& [index, count] : h.Sparse()) (*s.mutable_histogram()->mutable_counts())[index] = count;
    for (int rank = 0; rank < 2; ++rank) {
      v1::RankTiming* t = s.add_ranks();
      t->set_rank(rank);
      t->set_host("node-a");
      t->set_mean_s(s.avg_s() * (rank + 1));
      t->set_straggler(rank == 1);
    }
    r.results.push_back(s);
  }
  return r;
}

// Every <svg class="plot">'s count of <g class="series".
std::vector<size_t> SeriesPerPlot(const std::string& html) {
  std::vector<size_t> counts;
  for (size_t at = html.find("<svg class=\"plot\""); at != std::string::npos;
       at = html.find("<svg class=\"plot\"", at + 1)) {
    const size_t end = html.find("</svg>", at);
    counts.push_back(Count(html.substr(at, end - at), "<g class=\"series\""));
  }
  return counts;
}

TEST(ReportTest, EveryPlotHasOneSeriesPerConfiguration) {
  const std::vector<RunWithResults> runs = {MakeRun("a", v1::OPENMPI, 2),
                                            MakeRun("b", v1::MPICH, 3)};
  const std::string html = RunsReport(runs);
  const std::vector<size_t> counts = SeriesPerPlot(html);
  // Latency, bandwidth and three distributions (8 B, 512 B, 32 KiB).
  ASSERT_EQ(counts.size(), 5u);
  for (size_t n : counts) EXPECT_EQ(n, 2u);
  EXPECT_THAT(html, HasSubstr("data-series=\"openmpi\""));
  EXPECT_THAT(html, HasSubstr("data-series=\"mpich\""));
  // The latency plot has a point per size per run.
  const size_t first_end = html.find("</svg>");
  EXPECT_EQ(Count(html.substr(0, first_end), "<circle class=\"point\""), 10u);
}

TEST(ReportTest, PageFetchesNothing) {
  const std::string html = RunsReport({MakeRun("a", v1::OPENMPI, 2), MakeRun("b", v1::MPICH, 3)});
  EXPECT_THAT(html, Not(HasSubstr("http://")));
  EXPECT_THAT(html, Not(HasSubstr("https://")));
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  EXPECT_THAT(html, Not(HasSubstr("url(")));
  EXPECT_THAT(html, Not(HasSubstr("@import")));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("<link")));
}

TEST(ReportTest, TextIsEscaped) {
  RunWithResults a = MakeRun("a", v1::OPENMPI, 2);
  RunWithResults b = MakeRun("b", v1::OPENMPI, 3);
  (*a.run.mutable_spec()->mutable_labels())["note"] = "<script>alert('x')</script>";
  (*b.run.mutable_spec()->mutable_labels())["note"] = "a&b \"quoted\"";
  a.results[0].mutable_ranks(0)->set_host("<img src=x>");
  const std::string html = RunsReport({a, b});
  EXPECT_THAT(html, Not(HasSubstr("<script>")));
  EXPECT_THAT(html, Not(HasSubstr("<img")));
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
  EXPECT_THAT(html, HasSubstr("data-series=\"note=a&amp;b &quot;quoted&quot;\""));
  EXPECT_EQ(HtmlEscape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
}

TEST(ReportTest, EmptyResultsAndNoRuns) {
  RunWithResults running = MakeRun("r", v1::OPENMPI, 2);
  running.results.clear();
  running.run.set_state(v1::RUNNING);
  running.run.set_sizes_total(5);
  const std::string html = RunsReport({running});
  EXPECT_THAT(html, HasSubstr("no results yet"));
  EXPECT_THAT(html, HasSubstr("0 of 5 sizes"));
  EXPECT_THAT(html, HasSubstr("data-state=\"running\""));
  for (size_t n : SeriesPerPlot(html)) EXPECT_EQ(n, 1u);
  EXPECT_THAT(RunsReport({}), HasSubstr("no runs to report"));
}

TEST(ReportTest, RatioTableComparesWithTheBaseline) {
  const std::string html = RunsReport({MakeRun("a", v1::OPENMPI, 2), MakeRun("b", v1::MPICH, 3)});
  EXPECT_THAT(html, HasSubstr("Against the baseline [0]"));
  // b is 1.5x a at every size, and the histograms separate the means.
  EXPECT_EQ(Count(html, ">1.50x *<"), 5u);
  EXPECT_THAT(html, HasSubstr("class=\"num slower\""));
}

TEST(ReportTest, ComparableRunsGetTheAdvisorsRanges) {
  const std::string page = RunsReport({MakeRun("a", v1::OPENMPI, 2), MakeRun("b", v1::MPICH, 3)});
  EXPECT_THAT(page, HasSubstr("Advice: the fastest configuration per size range"));
  EXPECT_THAT(page, HasSubstr("allreduce on 2 ranks: the fastest of 2 configurations"));
  // Different operations: nothing to hold against each other.
  EXPECT_THAT(RunsReport({MakeRun("a", v1::OPENMPI, 2), MakeRun("b", v1::MPICH, 3, "bcast")}),
              Not(HasSubstr("Advice:")));
}

TEST(ReportTest, RunsOfDifferentSynchronizationAreFlagged) {
  RunWithResults a = MakeRun("a", v1::OPENMPI, 2);
  RunWithResults b = MakeRun("b", v1::OPENMPI, 3);
  a.run.mutable_spec()->set_sync(v1::SYNC_BARRIER);
  b.run.mutable_spec()->set_sync(v1::SYNC_NONE);
  EXPECT_THAT(RunsReport({a, b}),
              HasSubstr("differ in iteration synchronization (barrier: [0]; none: [1])"));
  b.run.mutable_spec()->set_sync(v1::SYNC_BARRIER);
  EXPECT_THAT(RunsReport({a, b}), Not(HasSubstr("class=\"warning\"")));
}

TEST(ReportTest, EnvironmentDifferencesNameTheFieldsThatDiffer) {
  const std::string html = RunsReport({MakeRun("a", v1::OPENMPI, 2), MakeRun("b", v1::MPICH, 3)});
  const size_t at = html.find("Environment differences");
  ASSERT_NE(at, std::string::npos);
  const std::string section = html.substr(at);
  EXPECT_THAT(section, HasSubstr("<td>mpi version</td><td>Open MPI 4.1.4</td><td>MPICH 4.0</td>"));
  EXPECT_THAT(section, HasSubstr("The same in every run: operation=allreduce"));
}

TEST(ReportTest, PerRankViewFlagsStragglers) {
  const std::string html = RunsReport({MakeRun("a", v1::OPENMPI, 2)});
  EXPECT_THAT(html, HasSubstr("Per-rank view"));
  EXPECT_EQ(Count(html, "<tr class=\"straggler\">"), 5u);
  EXPECT_THAT(html, HasSubstr("<td>slowest, straggler</td>"));
}

TEST(ReportTest, SuiteTablesMarkAgreementAndKeepSkippedRows) {
  SuiteView view;
  view.suite.name = "small";
  view.suite.paper = "A <paper>";
  view.profile = "ci";
  view.tables.push_back({"T1", "single against multi", {"lib", "single/multi", "paper", "agrees"},
                         {{"openmpi", "1.2", "4.01", "yes (single/multi > 1)"},
                          {"mpich", "0.9", "4.01", "no (single/multi > 1)"}},
                         {"skipped: needs 2 GPUs per worker (1 cell: place=gpu)"}});
  const std::string html = SuiteReport("small-1", view, {MakeRun("a", v1::OPENMPI, 2)});
  EXPECT_THAT(html, HasSubstr("<tr class=\"agree\"><td>openmpi</td>"));
  EXPECT_THAT(html, HasSubstr("<tr class=\"disagree\"><td>mpich</td>"));
  EXPECT_THAT(html, HasSubstr("<li class=\"missing\">skipped: needs 2 GPUs per worker"));
  EXPECT_THAT(html, HasSubstr("Paper checks: 1 agree, 1 disagree"));
  EXPECT_THAT(html, HasSubstr("A &lt;paper&gt;"));
}

TEST(SvgPlotTest, TicksReadInUnits) {
  EXPECT_EQ(FormatUnitValue(65536, AxisUnit::kBytes), "64 KiB");
  EXPECT_EQ(FormatUnitValue(8, AxisUnit::kBytes), "8 B");
  EXPECT_EQ(FormatUnitValue(1 << 20, AxisUnit::kBytes), "1 MiB");
  EXPECT_EQ(FormatUnitValue(1.25e-5, AxisUnit::kSeconds), "12.5 µs");
  EXPECT_EQ(FormatUnitValue(2e-3, AxisUnit::kSeconds), "2 ms");
  EXPECT_EQ(FormatUnitValue(5e-7, AxisUnit::kSeconds), "500 ns");
  EXPECT_EQ(FormatUnitValue(1.2e9, AxisUnit::kBytesPerSecond), "1.2 GB/s");
  Plot plot{"t", {"size", AxisUnit::kBytes, true}, {"latency", AxisUnit::kSeconds, true}, {}};
  plot.series.push_back({"one", {{8, 1e-6, ""}, {1 << 20, 1e-3, ""}}});
  const std::string svg = RenderSvgPlot(plot);
  // Powers of two on multiples of the step: 1 KiB and 1 MiB are marked.
  EXPECT_THAT(svg, HasSubstr(">16 B</text>"));
  EXPECT_THAT(svg, HasSubstr(">1 KiB</text>"));
  EXPECT_THAT(svg, HasSubstr(">1 MiB</text>"));
  EXPECT_THAT(svg, HasSubstr(">1 µs</text>"));
  EXPECT_THAT(svg, HasSubstr(">1 ms</text>"));
  EXPECT_NE(SeriesColor(0), SeriesColor(1));
}

}  // namespace
}  // namespace collbench
