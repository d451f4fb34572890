// SPDX-License-Identifier: Apache-2.0
#include "analysis/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "analysis/html.h"
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

constexpr char kLimitPath[] =
    "shm, 1 host: memory min(copy 10 GB/s, 20 GB/s / 2 ranks) / 2 copies = 5 GB/s";

// MakeRun's results with references as the coordinator sets them: none at
// 8 B; a 5 GB/s limit from 64 B on; an expected value at 512 B (low) and
// 32 KiB (ok), and only a floor at 4 KiB (below it).
RunWithResults WithReferences(RunWithResults r) {
  for (size_t i = 1; i < r.results.size(); ++i) {
    v1::ResultReferences* refs = r.results[i].mutable_references();
    refs->set_limit_busbw_bytes_per_s(5e9);
    refs->set_limit_ratio(i == 4 ? 0.62 : 0.1);
    refs->set_limit_path(kLimitPath);
    refs->set_expected_class("2x test host, shared memory");
    refs->set_expected_source("https://example.org/reference");
  }
  v1::ResultReferences* low = r.results[2].mutable_references();
  low->set_expected_busbw_bytes_per_s(4e9);
  low->set_expected_ratio(0.5);
  low->set_expected_verdict("low");
  v1::ResultReferences* below = r.results[3].mutable_references();
  below->set_expected_floor_bytes_per_s(2e9);
  below->set_expected_ratio(0.3);
  below->set_expected_verdict("below-floor");
  v1::ResultReferences* ok = r.results[4].mutable_references();
  ok->set_expected_busbw_bytes_per_s(3.2e9);
  ok->set_expected_ratio(0.97);
  ok->set_expected_verdict("ok");
  r.results[1].mutable_references()->clear_expected_class();
  r.results[1].mutable_references()->clear_expected_source();
  return r;
}

// The <svg class="plot"> elements in order.
std::vector<std::string> Plots(const std::string& html) {
  std::vector<std::string> plots;
  for (size_t at = html.find("<svg class=\"plot\""); at != std::string::npos;
       at = html.find("<svg class=\"plot\"", at + 1)) {
    plots.push_back(html.substr(at, html.find("</svg>", at) - at));
  }
  return plots;
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

TEST(ReportTest, ResultsShowTheirShareOfLimitAndExpected) {
  const std::string html = RunsReport({WithReferences(MakeRun("a", v1::OPENMPI, 2))});
  EXPECT_THAT(html, HasSubstr("<th>% of limit</th><th>% of expected</th>"));
  // The derivation of the limit and the reference's class and source are
  // the cells' tooltips; the verdict colours the cell.
  EXPECT_THAT(html,
              HasSubstr(absl::StrCat("<td class=\"num\" title=\"", kLimitPath, "\">62%</td>")));
  EXPECT_THAT(html, HasSubstr("<td class=\"num verdict-ok\" title=\"2x test host, shared "
                              "memory: expected 3.2 GB/s; source "
                              "https://example.org/reference\">97% ok</td>"));
  EXPECT_THAT(html, HasSubstr("<td class=\"num verdict-low\" title=\"2x test host, shared "
                              "memory: expected 4 GB/s; source "
                              "https://example.org/reference\">50% low</td>"));
  EXPECT_THAT(html, HasSubstr("<td class=\"num verdict-below-floor\" title=\"2x test host, "
                              "shared memory: floor 2 GB/s; source "
                              "https://example.org/reference\">30% below-floor</td>"));
  // 8 B has no references; 64 B a limit and no reference for its class.
  EXPECT_THAT(html, HasSubstr("<td>-</td><td class=\"num\">-</td><td class=\"num\">-</td></tr>"));
  EXPECT_THAT(html, HasSubstr(absl::StrCat("<td class=\"num\" title=\"", kLimitPath,
                                           "\">10%</td><td class=\"num\">-</td></tr>")));
  // Without references every row says so.
  EXPECT_EQ(Count(RunsReport({MakeRun("a", v1::OPENMPI, 2)}),
                  "<td class=\"num\">-</td><td class=\"num\">-</td></tr>"),
            5u);
}

TEST(ReportTest, BandwidthPlotDrawsTheReferencesAsDashedLines) {
  const std::vector<std::string> plots =
      Plots(RunsReport({WithReferences(MakeRun("a", v1::OPENMPI, 2))}));
  ASSERT_GE(plots.size(), 2u);
  const std::string& latency = plots[0];
  const std::string& bandwidth = plots[1];
  EXPECT_THAT(latency, Not(HasSubstr("class=\"reference\"")));
  // Limit, expected and floor, behind the run's series, in its colour.
  EXPECT_EQ(Count(bandwidth, "<g class=\"reference\""), 3u);
  for (const char* label : {"limit", "expected", "floor"}) {
    EXPECT_THAT(bandwidth, HasSubstr(absl::StrCat("data-reference=\"", label, "\">")));
    EXPECT_THAT(bandwidth, HasSubstr(absl::StrCat(">", label, "</text>")));
  }
  EXPECT_LT(bandwidth.find("class=\"reference\""), bandwidth.find("class=\"series\""));
  EXPECT_EQ(Count(bandwidth, absl::StrCat("stroke=\"", SeriesColor(0),
                                          "\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"")),
            3u);
  EXPECT_THAT(bandwidth, HasSubstr(absl::StrCat("limit 5 GB/s (", kLimitPath, ")")));
  // No references, no lines.
  EXPECT_EQ(Count(Plots(RunsReport({MakeRun("a", v1::OPENMPI, 2)}))[1], "class=\"reference\""), 0u);
}

TEST(ReportTest, RunsOnOnePathShareOneGreyReferenceLine) {
  const std::vector<std::string> plots = Plots(RunsReport(
      {WithReferences(MakeRun("a", v1::OPENMPI, 2)), WithReferences(MakeRun("b", v1::MPICH, 3))}));
  ASSERT_GE(plots.size(), 2u);
  EXPECT_EQ(Count(plots[1], "data-reference=\"limit\""), 1u);
  EXPECT_EQ(Count(plots[1], "<g class=\"reference\""), 3u);
  EXPECT_THAT(plots[1], HasSubstr("stroke=\"#5b6478\""));
  EXPECT_THAT(plots[1],
              Not(HasSubstr(absl::StrCat("stroke=\"", SeriesColor(0), "\" stroke-width=\"1.5\""))));
}

TEST(ReportTest, SuiteTablesMarkAgreementAndKeepSkippedRows) {
  SuiteView view;
  view.suite.name = "small";
  view.suite.paper = "A <paper>";
  view.profile = "ci";
  view.tables.push_back({"T1",
                         "single against multi",
                         {"lib", "single/multi", "paper", "agrees"},
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

// A check's verdicts are coloured wherever a table has a "verdict" column:
// regression red, slower amber, ok and faster green; other cells keep their
// automatic classes, and without the hook nothing changes.
TEST(HtmlTableTest, CheckVerdictCellsAreClassedByTheHook) {
  const Table table{"check",
                    "Check against baselines/b",
                    {"verdict", "configuration", "change"},
                    {{"regression", "allreduce 1 KiB", "+20.0%"},
                     {"slower", "allreduce 8 B", "+3.0%"},
                     {"ok", "allreduce 64 KiB", "+0.1%"},
                     {"faster", "allreduce 1 MiB", "-9.0%"},
                     {"unknown", "regression", "12"}},
                    {}};
  const std::string html = HtmlTable(table, CheckVerdictClass);
  EXPECT_THAT(html, HasSubstr("<tr><td class=\"verdict-regression\">regression</td>"));
  EXPECT_THAT(html, HasSubstr("<tr><td class=\"verdict-slower\">slower</td>"));
  EXPECT_THAT(html, HasSubstr("<tr><td class=\"verdict-ok\">ok</td>"));
  EXPECT_THAT(html, HasSubstr("<tr><td class=\"verdict-faster\">faster</td>"));
  // Only the verdict column, and only the four verdicts.
  EXPECT_THAT(html, HasSubstr("<tr><td>unknown</td><td>regression</td><td class=\"num\">12</td>"));
  EXPECT_THAT(html, HasSubstr("<td class=\"num\">+20.0%</td>"));
  EXPECT_EQ(Count(html, "verdict-"), 4u);
  // The style sheet colours them.
  const std::string page = RenderHtmlPage({"t", "", html, "", ""});
  for (const char* cls : {"td.verdict-regression", "td.verdict-slower", "td.verdict-ok",
                          "td.verdict-faster", ".badge.regression", ".badge.skipped"}) {
    EXPECT_THAT(page, HasSubstr(cls));
  }
  EXPECT_THAT(HtmlTable(table), Not(HasSubstr("verdict-")));
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

TEST(SvgPlotTest, ReferencesAreDashedLabelledAndKeptInView) {
  Plot plot{"t", {"size", AxisUnit::kBytes, true}, {"bw", AxisUnit::kBytesPerSecond, true}, {}};
  plot.series.push_back({"one", {{8, 1e6, ""}, {1024, 1e7, ""}}});
  const std::string without = RenderSvgPlot(plot);
  EXPECT_THAT(without, Not(HasSubstr(">1 GB/s</text>")));
  plot.references.push_back({"limit", {{8, 1e9, ""}, {1024, 1e9, ""}}, "how", 0});
  plot.references.push_back({"floor", {{1024, 5e6, ""}}, "", -1});
  const std::string svg = RenderSvgPlot(plot);
  // The limit, far above the points, widens the axis to show it.
  EXPECT_THAT(svg, HasSubstr(">1 GB/s</text>"));
  EXPECT_THAT(svg, HasSubstr("<g class=\"reference\" data-reference=\"limit\"><title>how</title>"
                             "<path d=\"M"));
  EXPECT_THAT(svg, HasSubstr(">limit</text>"));
  EXPECT_THAT(svg, HasSubstr(">floor</text>"));
  EXPECT_EQ(Count(svg, "stroke-dasharray=\"6 4\""), 2u);
  // A one-point reference is a short level dash in grey.
  const size_t floor_at = svg.find("data-reference=\"floor\"");
  ASSERT_NE(floor_at, std::string::npos);
  EXPECT_THAT(svg.substr(floor_at, 120), HasSubstr(" H"));
  EXPECT_THAT(svg.substr(floor_at), HasSubstr("stroke=\"#5b6478\""));
  // Not in the legend: one legend item, for the series.
  EXPECT_EQ(Count(svg, "<g class=\"legend-item\">"), 1u);
}

}  // namespace
}  // namespace collbench
