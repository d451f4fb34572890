// SPDX-License-Identifier: Apache-2.0
// Line plots as inline SVG for the reports (docs/design/workflows.md#reports): latency and bus
// bandwidth against message size on log axes, and latency distributions.
// One <g class="series" data-series="NAME"> per series (also for a series
// with nothing to draw), each point a <circle class="point">, so a page's
// plots can be checked by counting; a legend names every series in its
// colour. Reference lines (a physical limit, a published value) are drawn
// behind the series, dashed and labelled, one <g class="reference"
// data-reference="LABEL"> each, and are not in the legend. Ticks read as
// people write the unit: B/KiB/MiB, ns/µs/ms/s, MB/s/GB/s.
//
// Pure functions; no state.
#ifndef COLLBENCH_ANALYSIS_SVG_PLOT_H_
#define COLLBENCH_ANALYSIS_SVG_PLOT_H_

#include <string>
#include <vector>

namespace collbench {

enum class AxisUnit {
  kBytes,           // powers of 1024: "64 KiB"
  kSeconds,         // "850 ns", "12 µs", "1.5 ms"
  kBytesPerSecond,  // decimal, as nccl-tests prints: "1.2 GB/s"
  kFraction,        // 0..1, linear: "0.5"
};

struct PlotAxis {
  std::string label;  // text under (x) or beside (y) the axis
  AxisUnit unit = AxisUnit::kSeconds;
  bool log = true;  // kFraction is always linear
};

struct PlotPoint {
  double x = 0;
  double y = 0;
  std::string tip;  // shown on hover; text
};

struct PlotSeries {
  std::string name;
  std::vector<PlotPoint> points;  // in x order; points <= 0 on a log axis are not drawn
};

// A value the series are read against, such as the limit of the path a
// run used: a dashed line through its points (a short level dash when only
// one point is drawable), its label in the plot's right margin, level with
// the line's right end. Its points count in the y range, so a limit above
// every result stays in view.
struct PlotReference {
  std::string label;              // "limit", "expected"; text
  std::vector<PlotPoint> points;  // in x order; the points' tips are unused
  std::string tip;                // the whole line's hover text: how it was derived
  int series = -1;                // drawn in SeriesColor(series); -1: a neutral grey
};

struct Plot {
  std::string title;
  PlotAxis x;
  PlotAxis y;
  std::vector<PlotSeries> series;
  bool markers = true;  // a circle per point (false for dense curves: CDFs)
  bool steps = false;   // draw as a staircase (a CDF) instead of straight segments
  std::vector<PlotReference> references = {};  // drawn behind the series
};

// The plot as one <svg class="plot"> element.
std::string RenderSvgPlot(const Plot& plot);

// The colour of series `index` ("#0072b2"): distinct for the first eight,
// then repeating with a dashed line.
std::string SeriesColor(int index);

// A value as an axis tick or a table reads it, in `unit`, with about three
// significant digits: 65536 -> "64 KiB", 1.25e-5 -> "12.5 µs".
std::string FormatUnitValue(double value, AxisUnit unit);

}  // namespace collbench

#endif  // COLLBENCH_ANALYSIS_SVG_PLOT_H_
