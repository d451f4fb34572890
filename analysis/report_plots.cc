// SPDX-License-Identifier: Apache-2.0
// The reports' plots: latency and bandwidth against size, and latency
// distributions.
#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/html.h"
#include "analysis/report_sections.h"
#include "analysis/svg_plot.h"
#include "common/histogram.h"

namespace collbench::report_internal {
namespace {

std::string SizeTip(const v1::SizeResult& r, double value, AxisUnit unit) {
  return absl::StrCat(FormatUnitValue(static_cast<double>(r.bytes()), AxisUnit::kBytes), ": ",
                      FormatUnitValue(value, unit));
}

// The CDF of one stored histogram: at each bucket's upper edge, the share
// of samples at or below it.
std::vector<PlotPoint> CdfPoints(const v1::Histogram& h) {
  std::vector<std::pair<int, uint64_t>> buckets(h.counts().begin(), h.counts().end());
  std::sort(buckets.begin(), buckets.end());
  uint64_t total = 0;
  for (const auto& [index, count] : buckets) total += count;
  std::vector<PlotPoint> points;
  if (total == 0) return points;
  uint64_t below = 0;
  for (const auto& [index, count] : buckets) {
    if (index < 0 || index >= Histogram::kNumBuckets) continue;
    below += count;
    const double edge_s = static_cast<double>(Histogram::UpperBound(index)) * 1e-9;
    const double share = static_cast<double>(below) / total;
    points.push_back({edge_s, share,
                      absl::StrCat(FormatUnitValue(edge_s, AxisUnit::kSeconds), ": ",
                                   static_cast<int>(share * 1000) / 10.0, "% at or below")});
  }
  return points;
}

// The sizes to show distributions for: smallest, middle, largest.
std::vector<uint64_t> ChosenSizes(const std::vector<RunWithResults>& runs) {
  std::set<uint64_t> all;
  for (const RunWithResults& r : runs) {
    for (const v1::SizeResult& s : r.results) {
      if (!s.histogram().counts().empty()) all.insert(s.bytes());
    }
  }
  std::vector<uint64_t> sizes(all.begin(), all.end());
  if (sizes.size() <= 3) return sizes;
  return {sizes.front(), sizes[sizes.size() / 2], sizes.back()};
}

std::string RateText(double bytes_per_s) {
  return FormatUnitValue(bytes_per_s, AxisUnit::kBytesPerSecond);
}

// The references of run `index`'s results (ResultReferences) as lines: its
// path's limit, the published expected value and floor, each through the
// sizes that have one, in the run's colour, with their derivation as tip.
std::vector<PlotReference> ReferenceLines(const RunWithResults& run, int index,
                                          const std::string& name) {
  PlotReference limit{"limit", {}, "", index};
  PlotReference expected{"expected", {}, "", index};
  PlotReference floor_line{"floor", {}, "", index};
  for (const v1::SizeResult& r : run.results) {
    const v1::ResultReferences& refs = r.references();
    const double x = static_cast<double>(r.bytes());
    const std::string source =
        refs.expected_source().empty() ? "" : absl::StrCat("; source ", refs.expected_source());
    if (refs.limit_busbw_bytes_per_s() > 0) {
      limit.points.push_back({x, refs.limit_busbw_bytes_per_s(), ""});
      limit.tip = absl::StrCat(name, ": limit ", RateText(refs.limit_busbw_bytes_per_s()), " (",
                               refs.limit_path(), ")");
    }
    if (refs.expected_busbw_bytes_per_s() > 0) {
      expected.points.push_back({x, refs.expected_busbw_bytes_per_s(), ""});
      expected.tip = absl::StrCat(name, ": expected for ", refs.expected_class(), source);
    }
    if (refs.expected_floor_bytes_per_s() > 0) {
      floor_line.points.push_back({x, refs.expected_floor_bytes_per_s(), ""});
      floor_line.tip = absl::StrCat(name, ": floor for ", refs.expected_class(), source);
    }
  }
  std::vector<PlotReference> lines;
  for (PlotReference* line : {&limit, &expected, &floor_line}) {
    if (!line->points.empty()) lines.push_back(std::move(*line));
  }
  return lines;
}

bool SamePoints(const std::vector<PlotPoint>& a, const std::vector<PlotPoint>& b) {
  return std::equal(
      a.begin(), a.end(), b.begin(), b.end(),
      [](const PlotPoint& p, const PlotPoint& q) { return p.x == q.x && p.y == q.y; });
}

// Adds `line` to `plot`, unless a line of its label through the same
// points is there already (runs on one path): that one then stands for
// both, in grey, with both tips.
void AddReference(Plot* plot, PlotReference line) {
  for (PlotReference& drawn : plot->references) {
    if (drawn.label == line.label && SamePoints(drawn.points, line.points)) {
      drawn.series = -1;
      absl::StrAppend(&drawn.tip, "\n", line.tip);
      return;
    }
  }
  plot->references.push_back(std::move(line));
}

}  // namespace

std::string SizePlots(const std::vector<RunWithResults>& runs,
                      const std::vector<std::string>& names, const std::string& heading) {
  bool any_busbw = false;
  for (const RunWithResults& r : runs) {
    for (const v1::SizeResult& s : r.results) any_busbw |= s.busbw_bytes_per_s() > 0;
  }
  Plot latency{"Mean latency against message size",
               {"message size", AxisUnit::kBytes, true},
               {"mean latency per operation", AxisUnit::kSeconds, true},
               {}};
  Plot bandwidth{any_busbw ? "Bus bandwidth against message size"
                           : "Algorithm bandwidth against message size",
                 {"message size", AxisUnit::kBytes, true},
                 {any_busbw ? "bus bandwidth" : "algorithm bandwidth", AxisUnit::kBytesPerSecond,
                  true},
                 {}};
  for (size_t i = 0; i < runs.size(); ++i) {
    PlotSeries lat{names[i], {}}, bw{names[i], {}};
    for (const v1::SizeResult& r : runs[i].results) {
      const double x = static_cast<double>(r.bytes());
      lat.points.push_back({x, r.avg_s(), SizeTip(r, r.avg_s(), AxisUnit::kSeconds)});
      const double b = any_busbw ? r.busbw_bytes_per_s() : r.algbw_bytes_per_s();
      bw.points.push_back({x, b, SizeTip(r, b, AxisUnit::kBytesPerSecond)});
    }
    latency.series.push_back(std::move(lat));
    bandwidth.series.push_back(std::move(bw));
    // The references are bus bandwidths: nothing to read an algbw plot against.
    if (!any_busbw) continue;
    for (PlotReference& line : ReferenceLines(runs[i], static_cast<int>(i), names[i])) {
      AddReference(&bandwidth, std::move(line));
    }
  }
  return absl::StrCat("<h2>", HtmlEscape(heading), "</h2>\n<div class=\"plots\">",
                      RenderSvgPlot(latency), RenderSvgPlot(bandwidth), "</div>\n");
}

std::string DistributionPlots(const std::vector<RunWithResults>& runs,
                              const std::vector<std::string>& names) {
  const std::vector<uint64_t> sizes = ChosenSizes(runs);
  std::string out = "<h2>Latency distribution</h2>\n";
  if (sizes.empty()) {
    return out + "<p class=\"note\">no stored histograms yet</p>\n";
  }
  absl::StrAppend(&out, "<p class=\"meta\">Share of timed iterations at or below a latency, from "
                        "each size's stored histogram (buckets at most 1/64 wide).</p>\n"
                        "<div class=\"plots\">");
  for (uint64_t bytes : sizes) {
    Plot cdf{absl::StrCat("Latency CDF at ",
                          FormatUnitValue(static_cast<double>(bytes), AxisUnit::kBytes)),
             {"latency of one iteration", AxisUnit::kSeconds, true},
             {"share of iterations", AxisUnit::kFraction, false},
             {}};
    cdf.markers = false;
    cdf.steps = true;
    for (size_t i = 0; i < runs.size(); ++i) {
      PlotSeries s{names[i], {}};
      for (const v1::SizeResult& r : runs[i].results) {
        if (r.bytes() == bytes) s.points = CdfPoints(r.histogram());
      }
      cdf.series.push_back(std::move(s));
    }
    out += RenderSvgPlot(cdf);
  }
  return out + "</div>\n";
}

std::string PerRankSection(const std::vector<RunWithResults>& runs,
                           const std::vector<std::string>& names) {
  std::string out = "<h2>Per-rank view</h2>\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<std::vector<std::string>> rows = {
        {"size", "rank", "host", "mean", "p50", "p99", "vs median rank", "flags"}};
    std::vector<std::string> classes;
    int stragglers = 0;
    for (const v1::SizeResult& r : runs[i].results) {
      for (const v1::RankTiming& t : r.ranks()) {
        const bool slowest = t.rank() == r.slowest_rank();
        std::string flags = slowest ? "slowest" : "";
        if (t.straggler()) {
          absl::StrAppend(&flags, flags.empty() ? "" : ", ", "straggler");
          ++stragglers;
        }
        rows.push_back({FormatUnitValue(static_cast<double>(r.bytes()), AxisUnit::kBytes),
                        absl::StrCat(t.rank()), t.host(),
                        FormatUnitValue(t.mean_s(), AxisUnit::kSeconds),
                        FormatUnitValue(t.p50_s(), AxisUnit::kSeconds),
                        FormatUnitValue(t.p99_s(), AxisUnit::kSeconds),
                        slowest && r.slowest_vs_median() > 0
                            ? absl::StrFormat("%.2fx", r.slowest_vs_median())
                            : "",
                        flags});
        classes.push_back(t.straggler() ? "straggler" : "");
      }
    }
    const std::string summary =
        absl::StrCat(runs.size() > 1 ? absl::StrCat("[", i, "] ", names[i], ": ") : "",
                     rows.size() - 1, " rank rows", stragglers > 0 ? ", " : "",
                     stragglers > 0 ? absl::StrCat(stragglers, " straggler(s)") : "");
    absl::StrAppend(&out, "<details", runs.size() == 1 ? " open" : "", "><summary>",
                    HtmlEscape(summary), "</summary>");
    if (rows.size() == 1) {
      out += "<p class=\"note\">the engine sent no per-rank timings</p>";
    } else {
      out += HtmlRows(rows, classes);
    }
    out += "</details>\n";
  }
  return absl::StrCat(out, "<p class=\"meta\">A straggler's mean is above 1.5x the median "
                           "rank's; the root of a rooted operation is never flagged.</p>\n");
}

}  // namespace collbench::report_internal
