// SPDX-License-Identifier: Apache-2.0
#include "analysis/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/html.h"

namespace collbench {
namespace {

// Geometry in SVG pixels.
constexpr double kWidth = 540;
constexpr double kPlotHeight = 300;  // above the legend
constexpr double kLeft = 74, kRight = 30, kTop = 30, kBottom = 46;
constexpr double kLegendRow = 18;
constexpr double kCharWidth = 6.4;  // an 11 px system font, roughly
constexpr size_t kMaxLegendChars = 44;

constexpr const char* kPalette[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7",
                                    "#e69f00", "#56b4e9", "#1d2330", "#8c564b"};
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);
constexpr char kReferenceColor[] = "#5b6478";  // a reference of no one series
constexpr double kLoneDash = 12;               // half the width of a one-point reference
constexpr double kLabelRow = 12;               // least distance between two references' labels

std::string Num(double v) { return absl::StrFormat("%.1f", v); }

// "%.3g" without a trailing ".0".
std::string Short(double v) { return absl::StrFormat("%.3g", v); }

struct Scale {
  double lo = 0, hi = 1;  // data range shown (log10 or log2 already applied when log)
  bool log = false;
  double base = 10;
  std::vector<double> ticks;  // in data units

  double Map(double v) const {
    const double t = log ? std::log(v) / std::log(base) : v;
    return hi > lo ? (t - lo) / (hi - lo) : 0.5;
  }
};

bool Drawable(double v, bool log) { return std::isfinite(v) && (!log || v > 0); }

// Log axis over [min, max]: bytes on powers of two, the rest on decades
// (with 2 and 5 between when the range is narrow).
Scale MakeLogScale(double min, double max, AxisUnit unit) {
  Scale s;
  s.log = true;
  s.base = unit == AxisUnit::kBytes ? 2 : 10;
  const double lmin = std::log(min) / std::log(s.base), lmax = std::log(max) / std::log(s.base);
  s.lo = std::floor(lmin + 1e-9);
  s.hi = std::ceil(lmax - 1e-9);
  if (s.hi <= s.lo) {  // one value: put it in the middle
    s.lo -= 1;
    s.hi += 1;
  }
  const int span = static_cast<int>(s.hi - s.lo);
  if (unit == AxisUnit::kBytes) {
    // Ticks on multiples of the step, so 1 KiB and 1 MiB are marked when
    // in range; at most nine.
    int step = 10;
    for (int candidate : {1, 2, 5}) {
      if (span / candidate + 1 <= 9) {
        step = candidate;
        break;
      }
    }
    for (int e = static_cast<int>(s.lo); e <= s.hi; ++e) {
      if (e % step == 0) s.ticks.push_back(std::pow(2.0, e));
    }
    return s;
  }
  const int step = std::max(1, (span + 6) / 7);
  for (int e = static_cast<int>(s.lo); e <= s.hi; e += step) {
    s.ticks.push_back(std::pow(10.0, e));
    if (span <= 2 && e < s.hi) {
      s.ticks.push_back(2 * std::pow(10.0, e));
      s.ticks.push_back(5 * std::pow(10.0, e));
    }
  }
  return s;
}

Scale MakeScale(const PlotAxis& axis, double min, double max) {
  if (axis.unit != AxisUnit::kFraction && axis.log) return MakeLogScale(min, max, axis.unit);
  Scale s;
  s.lo = axis.unit == AxisUnit::kFraction ? 0 : std::min(0.0, min);
  s.hi = axis.unit == AxisUnit::kFraction ? 1 : (max > s.lo ? max * 1.05 : s.lo + 1);
  for (int i = 0; i <= 4; ++i) s.ticks.push_back(s.lo + (s.hi - s.lo) * i / 4);
  return s;
}

std::string Text(double x, double y, const std::string& text, const std::string& extra = "") {
  return absl::StrCat("<text x=\"", Num(x), "\" y=\"", Num(y), "\"", extra, ">", HtmlEscape(text),
                      "</text>");
}

std::string Truncate(const std::string& name) {
  if (name.size() <= kMaxLegendChars) return name;
  return name.substr(0, kMaxLegendChars - 1) + "…";
}

// `v` in the largest of `names` (each `step` times the one before) that
// keeps it at least 1: "64 KiB".
std::string Scaled(double v, double step, const std::vector<const char*>& names) {
  size_t i = 0;
  while (v >= step && i + 1 < names.size()) v /= step, ++i;
  return absl::StrCat(Short(v), " ", names[i]);
}

// Legend rows under the plot: (x, row) for each series.
std::vector<std::pair<double, int>> LegendLayout(const std::vector<PlotSeries>& series) {
  std::vector<std::pair<double, int>> at;
  double x = kLeft;
  int row = 0;
  for (const PlotSeries& s : series) {
    const double width = 30 + kCharWidth * Truncate(s.name).size() + 16;
    if (x > kLeft && x + width > kWidth - kRight) {
      x = kLeft;
      ++row;
    }
    at.emplace_back(x, row);
    x += width;
  }
  return at;
}

}  // namespace

std::string SeriesColor(int index) { return kPalette[index % kPaletteSize]; }

std::string FormatUnitValue(double v, AxisUnit unit) {
  switch (unit) {
    case AxisUnit::kBytes:
      return Scaled(v, 1024, {"B", "KiB", "MiB", "GiB", "TiB"});
    case AxisUnit::kSeconds:
      if (v == 0) return "0";
      if (v < 1e-6) return absl::StrCat(Short(v * 1e9), " ns");
      if (v < 1e-3) return absl::StrCat(Short(v * 1e6), " µs");
      if (v < 1) return absl::StrCat(Short(v * 1e3), " ms");
      return absl::StrCat(Short(v), " s");
    case AxisUnit::kBytesPerSecond:
      return Scaled(v, 1000, {"B/s", "kB/s", "MB/s", "GB/s", "TB/s"});
    case AxisUnit::kFraction:
      return Short(v);
  }
  return Short(v);
}

namespace {

// Where one plot's data lands: its scales and the plot area in pixels.
struct Frame {
  Scale xs, ys;
  bool x_log = true, y_log = true;
  bool empty = false;  // nothing drawable
  double pw = kWidth - kLeft - kRight, ph = kPlotHeight - kTop - kBottom;

  double X(double v) const { return kLeft + xs.Map(v) * pw; }
  double Y(double v) const { return kTop + (1 - ys.Map(v)) * ph; }
  bool Drawn(const PlotPoint& p) const { return Drawable(p.x, x_log) && Drawable(p.y, y_log); }
};

Frame MakeFrame(const Plot& plot) {
  Frame f;
  f.x_log = plot.x.log && plot.x.unit != AxisUnit::kFraction;
  f.y_log = plot.y.log && plot.y.unit != AxisUnit::kFraction;
  double x_min = std::numeric_limits<double>::infinity(), x_max = -x_min;
  double y_min = x_min, y_max = -x_min;
  auto include = [&](const std::vector<PlotPoint>& points) {
    for (const PlotPoint& p : points) {
      if (!f.Drawn(p)) continue;
      x_min = std::min(x_min, p.x), x_max = std::max(x_max, p.x);
      y_min = std::min(y_min, p.y), y_max = std::max(y_max, p.y);
    }
  };
  for (const PlotSeries& s : plot.series) include(s.points);
  for (const PlotReference& r : plot.references) include(r.points);
  f.empty = !(x_min <= x_max);
  if (f.empty) x_min = 1, x_max = 2, y_min = 1, y_max = 2;
  // Room right of the plot for the references' labels.
  size_t longest_label = 0;
  for (const PlotReference& r : plot.references) {
    longest_label = std::max(longest_label, r.label.size());
  }
  if (longest_label > 0) f.pw -= std::max(0.0, 8 + kCharWidth * longest_label - kRight);
  f.xs = MakeScale(plot.x, x_min, x_max);
  f.ys = MakeScale(plot.y, y_min, y_max);
  return f;
}

std::string Line(double x1, double y1, double x2, double y2, const std::string& attributes) {
  return absl::StrCat("<line x1=\"", Num(x1), "\" y1=\"", Num(y1), "\" x2=\"", Num(x2),
                      "\" y2=\"", Num(y2), "\"", attributes, "/>");
}

// Series past the palette repeat its colours with a dashed line.
std::string Dash(size_t index) {
  return index >= static_cast<size_t>(kPaletteSize) ? " stroke-dasharray=\"6 3\"" : "";
}

// Title, grid, ticks, frame and axis labels.
std::string Axes(const Plot& plot, const Frame& f) {
  std::string out = Text(kLeft, 18, plot.title, " class=\"title\"");
  for (double t : f.xs.ticks) {
    const double x = f.X(t);
    absl::StrAppend(&out, Line(x, kTop, x, kTop + f.ph, " class=\"grid\""),
                    Text(x, kTop + f.ph + 15, FormatUnitValue(t, plot.x.unit),
                         " text-anchor=\"middle\""));
  }
  for (double t : f.ys.ticks) {
    const double y = f.Y(t);
    absl::StrAppend(&out, Line(kLeft, y, kLeft + f.pw, y, " class=\"grid\""),
                    Text(kLeft - 6, y + 4, FormatUnitValue(t, plot.y.unit),
                         " text-anchor=\"end\""));
  }
  absl::StrAppend(&out, "<rect class=\"frame\" x=\"", Num(kLeft), "\" y=\"", Num(kTop),
                  "\" width=\"", Num(f.pw), "\" height=\"", Num(f.ph), "\"/>");
  absl::StrAppend(&out, Text(kLeft + f.pw / 2, kTop + f.ph + 34, plot.x.label,
                             " class=\"axis-label\" text-anchor=\"middle\""));
  const double mid = kTop + f.ph / 2;
  absl::StrAppend(&out, Text(14, mid, plot.y.label,
                             absl::StrCat(" class=\"axis-label\" text-anchor=\"middle\" "
                                          "transform=\"rotate(-90 14 ",
                                          Num(mid), ")\"")));
  if (f.empty) {
    absl::StrAppend(&out, Text(kLeft + f.pw / 2, mid, "no results yet",
                               " class=\"empty\" text-anchor=\"middle\""));
  }
  return out;
}

// One series: its line and, with markers, a circle per point.
std::string SeriesGroup(const Plot& plot, size_t index, const Frame& f) {
  const PlotSeries& s = plot.series[index];
  const std::string color = SeriesColor(static_cast<int>(index));
  std::string path, marks;
  for (const PlotPoint& p : s.points) {
    if (!f.Drawn(p)) continue;
    const double x = f.X(p.x), y = f.Y(p.y);
    if (path.empty()) {
      absl::StrAppend(&path, "M", Num(x), " ", Num(y));
    } else if (plot.steps) {
      absl::StrAppend(&path, " H", Num(x), " V", Num(y));
    } else {
      absl::StrAppend(&path, " L", Num(x), " ", Num(y));
    }
    if (plot.markers) {
      absl::StrAppend(&marks, "<circle class=\"point\" cx=\"", Num(x), "\" cy=\"", Num(y),
                      "\" r=\"3\" fill=\"", color, "\"><title>", HtmlEscape(s.name), ": ",
                      HtmlEscape(p.tip), "</title></circle>");
    }
  }
  std::string out = absl::StrCat("<g class=\"series\" data-series=\"", HtmlEscape(s.name), "\">");
  if (!path.empty()) {
    absl::StrAppend(&out, "<path d=\"", path, "\" fill=\"none\" stroke=\"", color,
                    "\" stroke-width=\"2\"", Dash(index), "/>");
  }
  return absl::StrCat(out, marks, "</g>");
}

// Where one reference is drawn: its line and its label's place.
struct ReferenceShape {
  std::string path;  // SVG path data; empty when no point is drawable
  double label_x = 0, label_y = 0;
};

// A dashed line through the drawable points (a short level dash for one),
// labelled in the right margin level with its right end.
ReferenceShape ShapeOf(const PlotReference& r, const Frame& f) {
  ReferenceShape shape;
  double end_x = 0, end_y = 0;
  int drawn = 0;
  for (const PlotPoint& p : r.points) {
    if (!f.Drawn(p)) continue;
    end_x = f.X(p.x), end_y = f.Y(p.y);
    absl::StrAppend(&shape.path, drawn == 0 ? "M" : " L", Num(end_x), " ", Num(end_y));
    ++drawn;
  }
  if (drawn == 1) {
    shape.path =
        absl::StrCat("M", Num(end_x - kLoneDash), " ", Num(end_y), " H", Num(end_x + kLoneDash));
    end_x += kLoneDash;
  }
  shape.label_x = std::max(end_x, kLeft + f.pw) + 4;
  shape.label_y = end_y + 4;
  return shape;
}

// Labels of references close in height would print over each other: from
// the top down, each is moved below the one above it when closer than a
// row (their order stays the lines' order).
void SpreadLabels(std::vector<ReferenceShape>* shapes) {
  std::vector<ReferenceShape*> drawn;
  for (ReferenceShape& shape : *shapes) {
    if (!shape.path.empty()) drawn.push_back(&shape);
  }
  std::stable_sort(
      drawn.begin(), drawn.end(),
      [](const ReferenceShape* a, const ReferenceShape* b) { return a->label_y < b->label_y; });
  for (size_t i = 1; i < drawn.size(); ++i) {
    drawn[i]->label_y = std::max(drawn[i]->label_y, drawn[i - 1]->label_y + kLabelRow);
  }
}

std::string ReferenceGroup(const PlotReference& r, const ReferenceShape& shape) {
  std::string out =
      absl::StrCat("<g class=\"reference\" data-reference=\"", HtmlEscape(r.label), "\">");
  if (!r.tip.empty()) absl::StrAppend(&out, "<title>", HtmlEscape(r.tip), "</title>");
  if (!shape.path.empty()) {
    const std::string color = r.series >= 0 ? SeriesColor(r.series) : kReferenceColor;
    absl::StrAppend(&out, "<path d=\"", shape.path, "\" fill=\"none\" stroke=\"", color,
                    "\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>",
                    Text(shape.label_x, shape.label_y, r.label, " class=\"reference-label\""));
  }
  return out + "</g>";
}

std::string Legend(const Plot& plot, const std::vector<std::pair<double, int>>& layout) {
  std::string out;
  for (size_t i = 0; i < layout.size(); ++i) {
    const double x = layout[i].first, y = kPlotHeight + layout[i].second * kLegendRow;
    const std::string color = SeriesColor(static_cast<int>(i));
    absl::StrAppend(
        &out, "<g class=\"legend-item\">",
        Line(x, y - 4, x + 22, y - 4,
             absl::StrCat(" stroke=\"", color, "\" stroke-width=\"2.5\"", Dash(i))),
        "<circle cx=\"", Num(x + 11), "\" cy=\"", Num(y - 4), "\" r=\"3\" fill=\"", color, "\"/>",
        Text(x + 28, y, Truncate(plot.series[i].name)), "<title>",
        HtmlEscape(plot.series[i].name), "</title></g>");
  }
  return out;
}

}  // namespace

std::string RenderSvgPlot(const Plot& plot) {
  const Frame frame = MakeFrame(plot);
  const std::vector<std::pair<double, int>> legend = LegendLayout(plot.series);
  const int legend_rows = legend.empty() ? 0 : legend.back().second + 1;
  const double height = kPlotHeight + legend_rows * kLegendRow + 6;
  std::string out = absl::StrCat(
      "<svg class=\"plot\" width=\"", Num(kWidth), "\" height=\"", Num(height),
      "\" viewBox=\"0 0 ", Num(kWidth), " ", Num(height), "\" role=\"img\" aria-label=\"",
      HtmlEscape(plot.title), "\">", Axes(plot, frame));
  std::vector<ReferenceShape> shapes;
  for (const PlotReference& r : plot.references) shapes.push_back(ShapeOf(r, frame));
  SpreadLabels(&shapes);
  for (size_t i = 0; i < shapes.size(); ++i) out += ReferenceGroup(plot.references[i], shapes[i]);
  for (size_t i = 0; i < plot.series.size(); ++i) out += SeriesGroup(plot, i, frame);
  return absl::StrCat(out, Legend(plot, legend), "</svg>\n");
}

}  // namespace collbench
