// SPDX-License-Identifier: Apache-2.0
#include "analysis/hunt_plots.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "analysis/html.h"
#include "analysis/hunt_localise.h"
#include "analysis/svg_plot.h"

namespace collbench {
namespace {

using Measurement = v1::HuntMeasurement;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kCharWidth = 6.4;       // an 11 px system font, roughly
constexpr double kLabelCharWidth = 7.0;  // the same, bold: a suspect's label
constexpr size_t kMaxLabelChars = 24;    // labels are cut; tooltips keep the whole name
constexpr double kLabelRow = 12;         // least distance between two labels
constexpr double kMaxRatio = 1.25;       // the colour scale's top: faster reads the same
constexpr char kSuspectColor[] = "#c0392b";
constexpr char kMissingColor[] = "#e3e6ec";  // a pair not measured, the diagonal
constexpr char kFailedColor[] = "#2b3240";   // a pair whose run failed
constexpr char kNeutralColor[] = "#5b6478";  // the fleet median, leader lines

std::string Num(double v) { return absl::StrFormat("%.1f", v); }
std::string RatioText(double ratio) { return absl::StrFormat("%.2f", ratio); }

std::string Text(double x, double y, absl::string_view text, absl::string_view extra = "") {
  return absl::StrCat("<text x=\"", Num(x), "\" y=\"", Num(y), "\"", extra, ">", HtmlEscape(text),
                      "</text>");
}

std::string Line(double x1, double y1, double x2, double y2, absl::string_view attributes) {
  return absl::StrCat("<line x1=\"", Num(x1), "\" y1=\"", Num(y1), "\" x2=\"", Num(x2), "\" y2=\"",
                      Num(y2), "\"", attributes, "/>");
}

std::string Rect(double x, double y, double w, double h, absl::string_view attributes) {
  return absl::StrCat("<rect x=\"", Num(x), "\" y=\"", Num(y), "\" width=\"", Num(w),
                      "\" height=\"", Num(h), "\"", attributes, "/>");
}

std::string Circle(double x, double y, double r, absl::string_view attributes) {
  return absl::StrCat("<circle cx=\"", Num(x), "\" cy=\"", Num(y), "\" r=\"", Num(r), "\"",
                      attributes, "/>");
}

// A worker's label: its id without "workers/", cut (on a character
// boundary) to kMaxLabelChars bytes.
std::string Label(absl::string_view worker) {
  absl::ConsumePrefix(&worker, "workers/");
  if (worker.size() <= kMaxLabelChars) return std::string(worker);
  size_t cut = kMaxLabelChars - 1;
  while (cut > 0 && (static_cast<unsigned char>(worker[cut]) & 0xC0) == 0x80) --cut;
  return absl::StrCat(worker.substr(0, cut), "…");
}

// The attributes of a worker's label. A suspect's is red, in a style
// attribute: the page's `svg.plot text` rule outranks a fill attribute.
std::string LabelAttributes(absl::string_view worker, bool suspect, absl::string_view anchor) {
  return absl::StrCat(
      " class=\"worker-label\" data-worker=\"", HtmlEscape(worker), "\" text-anchor=\"", anchor,
      "\"", suspect ? absl::StrCat(" style=\"fill:", kSuspectColor, ";font-weight:600\"") : "");
}

// Non-finite figures sort last.
double OrderKey(double v) { return std::isfinite(v) ? v : kInf; }

// Red through yellow (0.75, the default slow threshold) to green (1.0, the
// fleet median), darker green above; clamped to [0, kMaxRatio].
std::string RatioColor(double ratio) {
  struct Stop {
    double ratio;
    int r, g, b;
  };
  static constexpr Stop kScale[] = {{0, 0xa5, 0x00, 0x26},
                                    {0.5, 0xf4, 0x6d, 0x43},
                                    {0.75, 0xfe, 0xe0, 0x8b},
                                    {1.0, 0x66, 0xbd, 0x63},
                                    {kMaxRatio, 0x00, 0x68, 0x37}};
  const double v = std::isfinite(ratio) ? std::clamp(ratio, 0.0, kMaxRatio) : 0.0;
  size_t i = 1;
  while (i + 1 < std::size(kScale) && v > kScale[i].ratio) ++i;
  const Stop& lo = kScale[i - 1];
  const Stop& hi = kScale[i];
  const double t = (v - lo.ratio) / (hi.ratio - lo.ratio);
  auto mix = [t](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * t)); };
  return absl::StrFormat("#%02x%02x%02x", mix(lo.r, hi.r), mix(lo.g, hi.g), mix(lo.b, hi.b));
}

std::string SvgOpen(absl::string_view cls, double width, double height, absl::string_view title) {
  return absl::StrCat("<svg class=\"plot ", cls, "\" width=\"", Num(width), "\" height=\"",
                      Num(height), "\" viewBox=\"0 0 ", Num(width), " ", Num(height),
                      "\" role=\"img\" aria-label=\"", HtmlEscape(title), "\">",
                      Text(12, 18, title, " class=\"title\""));
}

// "ratio to the fleet median (12.3 GB/s)" for the hunt's metric.
std::string MedianCaption(const v1::HuntOutput& hunt) {
  std::string out = "ratio to the fleet median";
  if (hunt.fleet_median_bytes_per_s() > 0) {
    absl::StrAppend(&out, " (",
                    FormatUnitValue(hunt.fleet_median_bytes_per_s(), AxisUnit::kBytesPerSecond),
                    ")");
  }
  return out;
}

std::string Metric(const v1::HuntOutput& hunt) {
  return hunt.metric().empty() ? "bandwidth" : hunt.metric();
}

// Each suspect once (a worker named twice keeps its first, best-ranked
// entry), in the hunt's order.
std::vector<const v1::HuntSuspect*> DistinctSuspects(const v1::HuntOutput& hunt) {
  std::vector<const v1::HuntSuspect*> out;
  std::set<std::string> seen;
  for (const v1::HuntSuspect& s : hunt.suspects()) {
    if (!s.worker().empty() && seen.insert(s.worker()).second) out.push_back(&s);
  }
  return out;
}

std::string SuspectTip(const v1::HuntSuspect& s) {
  std::string tip = absl::StrCat(s.worker(), ": ", s.verdict().empty() ? "suspect" : s.verdict());
  if (!s.evidence().empty()) absl::StrAppend(&tip, ". ", s.evidence());
  return tip;
}

std::string SuspectGroupOpen(const v1::HuntSuspect& s) {
  return absl::StrCat("<g class=\"suspect\" data-worker=\"", HtmlEscape(s.worker()), "\"><title>",
                      HtmlEscape(SuspectTip(s)), "</title>");
}

// Spreads label baselines (in drawing order, top down) at least kLabelRow
// apart, each as close to its own place as that allows.
std::vector<double> Spread(std::vector<double> ys) {
  for (size_t i = 1; i < ys.size(); ++i) ys[i] = std::max(ys[i], ys[i - 1] + kLabelRow);
  return ys;
}

// ---- The heat map ----

using PairKey = std::pair<std::string, std::string>;  // the two names, in order
using PairCells = std::map<PairKey, const Measurement*>;

constexpr double kMatrixSide = 720, kMinCell = 2, kMaxCell = 28;
constexpr size_t kMaxLabelledWorkers = 60;
// The most rows (and columns) a heat map draws.
constexpr size_t kMaxHeatMapWorkers = 400;
constexpr double kGutter = 12;  // between labels and matrix, where suspects are marked
constexpr double kLeader = 28;  // a leader line's run, when only suspects are labelled
constexpr double kLegendBar = 250, kLegendSpan = 480, kLegendHeight = 62;

bool Failed(const Measurement& m) { return !m.error().empty(); }

// The median successful measurement by ratio (the lower middle), or the
// last one when all failed.
const Measurement* MedianOf(const std::vector<const Measurement*>& runs) {
  std::vector<const Measurement*> ok;
  for (const Measurement* m : runs) {
    if (!Failed(*m)) ok.push_back(m);
  }
  if (ok.empty()) return runs.back();
  std::stable_sort(ok.begin(), ok.end(), [](const Measurement* a, const Measurement* b) {
    return OrderKey(a->ratio()) < OrderKey(b->ratio());
  });
  return ok[(ok.size() - 1) / 2];
}

PairCells SurveyPairs(const v1::HuntOutput& hunt) {
  std::map<PairKey, std::vector<const Measurement*>> runs;
  for (const Measurement& m : hunt.pairs()) {
    if (!SurveyPairPhase(m.phase()) || m.workers_size() != 2) continue;
    const std::string& a = m.workers(0);
    const std::string& b = m.workers(1);
    if (a == b) continue;
    runs[a < b ? PairKey{a, b} : PairKey{b, a}].push_back(&m);
  }
  PairCells cells;
  for (const auto& [key, measured] : runs) cells.emplace(key, MedianOf(measured));
  return cells;
}

// "rack R", or "no rack" for the workers of no known rack.
std::string RackLabel(const std::string& rack) {
  return rack.empty() ? "no rack" : absl::StrCat("rack ", Label(rack));
}

// A rack's rows in the heat map: rows first .. first + count - 1.
struct RackBand {
  std::string rack;  // "" for the workers of no known rack
  size_t first = 0, count = 0;
};

struct HeatOrder {
  std::vector<std::string> workers;  // rows (and columns), top down
  std::vector<RackBand> racks;       // empty when no worker has a rack
};

// Without racks: the suspects, then the rest by median ratio and name.
// With racks (any of hunt.workers() has one, and `by_rack`): rack by rack, each rack's
// workers as above within it; the racks named by a RACK_SUSPECT first (in
// the hunt's order), then those holding a suspect, then by name, the
// workers of no known rack last.
HeatOrder HeatMapOrder(const std::vector<const v1::HuntSuspect*>& suspects,
                       const v1::HuntOutput& hunt, const PairCells& cells, bool by_rack) {
  std::vector<std::string> order;
  std::set<std::string> placed;
  for (const v1::HuntSuspect* s : suspects) {
    order.push_back(s->worker());
    placed.insert(s->worker());
  }
  std::map<std::string, double> ratio_of;
  std::map<std::string, std::string> rack_of;
  for (const v1::HuntWorker& w : hunt.workers()) {
    ratio_of.emplace(w.worker(), OrderKey(w.ratio()));
    if (!w.rack().empty()) rack_of.emplace(w.worker(), w.rack());
  }
  std::vector<std::pair<double, std::string>> rest;
  for (const auto& [key, m] : cells) {
    for (const std::string* name : {&key.first, &key.second}) {
      if (!placed.insert(*name).second) continue;
      const auto it = ratio_of.find(*name);
      rest.emplace_back(it == ratio_of.end() ? kInf : it->second, *name);
    }
  }
  std::sort(rest.begin(), rest.end());
  for (auto& [ratio, name] : rest) order.push_back(std::move(name));
  HeatOrder out;
  if (rack_of.empty() || !by_rack) {
    out.workers = std::move(order);
    return out;
  }
  // The racks' order: (rank, name), rank 0 a rack suspect's, 1 a suspect's,
  // 2 the rest, 3 no known rack.
  std::map<std::string, std::pair<int, size_t>> rank_of;  // rack -> (rank, place)
  auto rank = [&](const std::string& rack, int r) {
    auto [it, inserted] = rank_of.try_emplace(rack, r, rank_of.size());
    if (!inserted && r < it->second.first) it->second.first = r;
  };
  for (const v1::HuntSuspect& s : hunt.suspects()) {
    if (s.verdict() == "RACK_SUSPECT" && !s.rack().empty()) rank(s.rack(), 0);
  }
  auto rack = [&](const std::string& worker) {
    auto it = rack_of.find(worker);
    return it == rack_of.end() ? std::string() : it->second;
  };
  for (const v1::HuntSuspect* s : suspects)
    rank(rack(s->worker()), rack(s->worker()).empty() ? 3 : 1);
  for (const std::string& w : order) rank(rack(w), rack(w).empty() ? 3 : 2);
  std::vector<std::pair<std::tuple<int, size_t, std::string>, std::string>> racks;
  for (const auto& [name, r] : rank_of) {
    // Racks of one rank by name, but a rack suspect's in the hunt's order.
    racks.push_back({{r.first, r.first == 0 ? r.second : 0, name}, name});
  }
  std::sort(racks.begin(), racks.end());
  for (const auto& [key, name] : racks) {
    RackBand band{name, out.workers.size(), 0};
    for (const std::string& w : order) {
      if (rack(w) == name) out.workers.push_back(w);
    }
    band.count = out.workers.size() - band.first;
    if (band.count > 0) out.racks.push_back(std::move(band));
  }
  return out;
}

struct HeatLayout {
  size_t n = 0;
  bool all_labels = false;  // every worker labelled; else the suspects only
  double cell = 0, side = 0;
  double left = 0, top = 0;  // the matrix's corner
  double width = 0, height = 0;
  double rack_labels = 0;  // the width right of the matrix for the racks' names

  double X(size_t i) const { return left + i * cell; }
  double Y(size_t i) const { return top + i * cell; }
  double Centre(size_t i) const { return (i + 0.5) * cell; }  // from the matrix's edge
};

HeatLayout LayOutHeatMap(const HeatOrder& order, const std::vector<size_t>& suspect_rows,
                         absl::string_view title) {
  HeatLayout l;
  l.n = order.workers.size();
  l.all_labels = l.n <= kMaxLabelledWorkers;
  l.cell = std::clamp(kMatrixSide / l.n, kMinCell, kMaxCell);
  l.side = l.cell * l.n;
  size_t chars = 0;
  if (l.all_labels) {
    for (const std::string& w : order.workers) chars = std::max(chars, Label(w).size());
  } else {
    for (size_t row : suspect_rows) chars = std::max(chars, Label(order.workers[row]).size());
  }
  for (const RackBand& band : order.racks) {
    l.rack_labels = std::max(l.rack_labels, 16 + kCharWidth * RackLabel(band.rack).size());
  }
  const double label_width = kLabelCharWidth * chars;
  l.left = 12 + label_width + kGutter + (l.all_labels ? 0 : kLeader);
  l.top = 30 + (l.all_labels ? label_width : 0) + kGutter;
  const double title_width = 24 + 7.5 * title.size();  // 13 px bold
  l.width = std::max({l.left + l.side + l.rack_labels + 16, 12 + kLegendSpan + 16, title_width});
  l.height = l.top + l.side + kLegendHeight;
  return l;
}

std::string CellRect(const std::string& a, const std::string& b, const Measurement& m, double x,
                     double y, double size, bool with_tip) {
  // `a`, `b` are escaped already; the rest is escaped here.
  std::string out = absl::StrCat("<rect class=\"cell\" data-a=\"", a, "\" data-b=\"", b);
  std::string tip = absl::StrCat(a, " ↔ ", b, ": ");
  if (Failed(m)) {
    absl::StrAppend(&out, "\" data-failed=\"true\" fill=\"", kFailedColor);
    absl::StrAppend(&tip, "failed: ", HtmlEscape(m.error()));
  } else {
    absl::StrAppend(&out, "\" data-ratio=\"", RatioText(m.ratio()), "\" fill=\"",
                    RatioColor(m.ratio()));
    absl::StrAppend(&tip, FormatUnitValue(m.busbw_bytes_per_s(), AxisUnit::kBytesPerSecond), ", ",
                    RatioText(m.ratio()), " of median", m.slow() ? ", slow" : "");
  }
  absl::StrAppend(&out, "\" x=\"", Num(x), "\" y=\"", Num(y), "\" width=\"", Num(size),
                  "\" height=\"", Num(size));
  if (!with_tip) return absl::StrCat(out, "\"/>");
  return absl::StrCat(out, "\"><title>", tip, "</title></rect>");
}

// The grey ground (pairs not measured, the diagonal), then every cell in
// row order.
std::string Cells(const std::vector<std::string>& order, const HeatLayout& l,
                  const PairCells& cells) {
  std::map<std::string, size_t> index;
  std::vector<std::string> escaped;
  for (size_t i = 0; i < order.size(); ++i) {
    index.emplace(order[i], i);
    escaped.push_back(HtmlEscape(order[i]));
  }
  std::vector<const Measurement*> grid(l.n * l.n, nullptr);
  for (const auto& [key, m] : cells) {
    const size_t a = index.at(key.first), b = index.at(key.second);
    grid[a * l.n + b] = grid[b * l.n + a] = m;
  }
  std::string out =
      absl::StrCat("<g class=\"cells\" shape-rendering=\"crispEdges\">",
                   Rect(l.left, l.top, l.side, l.side,
                        absl::StrCat(" class=\"missing\" fill=\"", kMissingColor, "\"")));
  // Above kMaxLabelledWorkers a cell is a few pixels: a tooltip each would
  // make the page tens of megabytes for a few hundred workers. Each row
  // then carries one, its worker's.
  const bool cell_tips = l.n <= kMaxLabelledWorkers;
  for (size_t i = 0; i < l.n; ++i) {
    if (!cell_tips) {
      absl::StrAppend(&out, "<g class=\"row\" data-worker=\"", escaped[i], "\"><title>",
                      escaped[i], "</title>");
    }
    // Above it too, the matrix is drawn below its diagonal only (it is
    // symmetric): half the cells, the same picture.
    for (size_t j = 0; j < (cell_tips ? l.n : i); ++j) {
      const Measurement* m = grid[i * l.n + j];
      if (m != nullptr) {
        out += CellRect(escaped[i], escaped[j], *m, l.X(j), l.Y(i), l.cell, cell_tips);
      }
    }
    if (!cell_tips) out += "</g>";
  }
  return out + "</g>";
}

// Every row and column labelled (up to kMaxLabelledWorkers).
std::string WorkerLabels(const std::vector<std::string>& order,
                         const std::vector<size_t>& suspect_rows, const HeatLayout& l) {
  const std::set<size_t> suspects(suspect_rows.begin(), suspect_rows.end());
  std::string out;
  for (size_t i = 0; i < l.n; ++i) {
    const bool suspect = suspects.count(i) > 0;
    const double row_y = l.top + l.Centre(i) + 4;
    const double column_x = l.left + l.Centre(i) + 4, column_y = l.top - kGutter;
    absl::StrAppend(
        &out,
        Text(l.left - kGutter, row_y, Label(order[i]), LabelAttributes(order[i], suspect, "end")),
        Text(column_x, column_y, Label(order[i]),
             absl::StrCat(LabelAttributes(order[i], suspect, "start"), " transform=\"rotate(-90 ",
                          Num(column_x), " ", Num(column_y), ")\"")));
  }
  return out;
}

// Each suspect's row and column outlined and marked in the gutters; when
// not every worker is labelled, its label left of the matrix with a leader
// line to its row.
// `suspects` in row order, `rows` their rows.
std::string HeatSuspects(const std::vector<const v1::HuntSuspect*>& suspects,
                         const std::vector<size_t>& rows, const HeatLayout& l) {
  std::vector<double> baselines;
  for (size_t row : rows) baselines.push_back(l.top + l.Centre(row) + 4);
  baselines = Spread(baselines);
  const std::string outline =
      absl::StrCat(" fill=\"none\" stroke=\"", kSuspectColor, "\" stroke-width=\"1\"");
  const std::string marker = absl::StrCat(" fill=\"", kSuspectColor, "\"");
  std::string out;
  for (size_t i = 0; i < suspects.size(); ++i) {
    const std::string& worker = suspects[i]->worker();
    const size_t row = rows[i];
    const double row_y = l.top + l.Centre(row), column_x = l.left + l.Centre(row);
    absl::StrAppend(&out, SuspectGroupOpen(*suspects[i]),
                    Rect(l.left - 1, l.Y(row) - 1, l.side + 2, l.cell + 2, outline),
                    Rect(l.X(row) - 1, l.top - 1, l.cell + 2, l.side + 2, outline),
                    Circle(l.left - kGutter / 2, row_y, 3, marker),
                    Circle(column_x, l.top - kGutter / 2, 3, marker));
    if (!l.all_labels) {
      const double label_x = l.left - kGutter - kLeader;
      absl::StrAppend(
          &out,
          Line(label_x + 3, baselines[i] - 4, l.left - kGutter / 2 - 3, row_y,
               absl::StrCat(" stroke=\"", kSuspectColor, "\" stroke-width=\"0.75\"")),
          Text(label_x, baselines[i], Label(worker), LabelAttributes(worker, true, "end")));
    }
    out += "</g>";
  }
  return out;
}

// Each rack's block on the diagonal (its pairs within it) outlined, the
// lines between racks across the matrix, and the rack's name right of its
// rows: <g class="rack" data-rack="R">, red for a RACK_SUSPECT.
std::string HeatRacks(const std::vector<RackBand>& racks,
                      const std::set<std::string>& suspect_racks, const HeatLayout& l) {
  std::string out = "<g class=\"racks\">";
  for (const RackBand& band : racks) {
    const bool suspect = suspect_racks.count(band.rack) > 0;
    const std::string color = suspect ? kSuspectColor : kNeutralColor;
    const double from = l.Y(band.first), size = band.count * l.cell;
    absl::StrAppend(&out, "<g class=\"rack\" data-rack=\"", HtmlEscape(band.rack), "\"",
                    suspect ? " data-suspect=\"true\"" : "", ">");
    if (band.first > 0) {
      const std::string rule = absl::StrCat(" stroke=\"", kNeutralColor, "\" stroke-width=\"1\"");
      absl::StrAppend(&out, Line(l.left, from, l.left + l.side, from, rule),
                      Line(l.X(band.first), l.top, l.X(band.first), l.top + l.side, rule));
    }
    absl::StrAppend(&out,
                    Rect(l.X(band.first), from, size, size,
                         absl::StrCat(" fill=\"none\" stroke=\"", color, "\" stroke-width=\"",
                                      suspect ? 2 : 1, "\"")),
                    Text(l.left + l.side + 8, from + size / 2 + 4, RackLabel(band.rack),
                         absl::StrCat(" class=\"rack-label\"",
                                      suspect ? absl::StrCat(" style=\"fill:", kSuspectColor,
                                                             ";font-weight:600\"")
                                              : "")),
                    "</g>");
  }
  return out + "</g>";
}

// The colour scale from 0 to kMaxRatio, and the swatches of the cells
// that are not a ratio.
std::string HeatLegend(double y, const std::string& caption) {
  constexpr int kSteps = 50;
  constexpr double kX = 12;
  std::string out = "<g class=\"legend\">";
  for (int i = 0; i < kSteps; ++i) {
    const double ratio = kMaxRatio * (i + 0.5) / kSteps;
    absl::StrAppend(&out, Rect(kX + i * kLegendBar / kSteps, y, kLegendBar / kSteps + 0.3, 10,
                               absl::StrCat(" fill=\"", RatioColor(ratio), "\"")));
  }
  for (double tick : {0.0, 0.25, 0.5, 0.75, 1.0, 1.25}) {
    const double x = kX + kLegendBar * tick / kMaxRatio;
    absl::StrAppend(
        &out, Line(x, y + 10, x, y + 14, absl::StrCat(" stroke=\"", kNeutralColor, "\"")),
        Text(x, y + 25, FormatUnitValue(tick, AxisUnit::kFraction), " text-anchor=\"middle\""));
  }
  absl::StrAppend(&out, Text(kX, y + 42, caption, " class=\"axis-label\""));
  struct Swatch {
    const char* color;
    absl::string_view name;
  };
  constexpr Swatch kSwatches[] = {{kMissingColor, "not measured"}, {kFailedColor, "failed"}};
  double x = kX + kLegendBar + 24;
  for (const Swatch& swatch : kSwatches) {
    absl::StrAppend(&out, Rect(x, y, 10, 10, absl::StrCat(" fill=\"", swatch.color, "\"")),
                    Text(x + 14, y + 9, swatch.name));
    x += 24 + kCharWidth * swatch.name.size();
  }
  return out + "</g>";
}

// ---- The distribution ----

using SuspectsByWorker = std::map<std::string, const v1::HuntSuspect*>;

constexpr size_t kMaxListedWorkers = 40;  // every worker labelled up to this many
constexpr size_t kLowestLabelled = 5;     // past it: the suspects and these many slowest
constexpr double kRow = 14, kStripHeight = 280, kPlotWidth = 420;

struct DistLayout {
  size_t n = 0;
  bool all_labels = false;
  double left = 0, top = 44;
  double row = kRow, plot_height = 0;
  double hi = kMaxRatio, step = 0.25;  // the x axis: 0 .. hi, ticked every step
  double width = 0, height = 0;

  double X(double ratio) const {
    const double v = std::isfinite(ratio) ? std::clamp(ratio, 0.0, hi) : 0.0;
    return left + v / hi * kPlotWidth;
  }
  double Y(size_t rank) const { return top + (rank + 0.5) * row; }
};

DistLayout LayOutDistribution(const std::vector<const v1::HuntWorker*>& ranked) {
  DistLayout l;
  l.n = ranked.size();
  l.all_labels = l.n <= kMaxListedWorkers;
  l.plot_height = l.all_labels ? std::max(2.0, static_cast<double>(l.n)) * kRow : kStripHeight;
  l.row = l.plot_height / l.n;
  double max_ratio = kMaxRatio;
  size_t chars = 0;
  for (const v1::HuntWorker* w : ranked) {
    if (std::isfinite(w->ratio())) max_ratio = std::max(max_ratio, w->ratio());
    chars = std::max(chars, Label(w->worker()).size());
  }
  while (max_ratio / l.step > 8) l.step *= 2;
  l.hi = std::ceil(max_ratio / l.step - 1e-9) * l.step;
  l.left = l.all_labels ? 12 + kLabelCharWidth * chars + 10 : 40;
  l.width = l.left + kPlotWidth + 24;
  l.height = l.top + l.plot_height + 44;
  return l;
}

std::string DistAxes(const DistLayout& l, const v1::HuntOutput& hunt) {
  std::string out;
  const double bottom = l.top + l.plot_height;
  for (double t = 0; t <= l.hi + 1e-9; t += l.step) {
    absl::StrAppend(&out, Line(l.X(t), l.top, l.X(t), bottom, " class=\"grid\""),
                    Text(l.X(t), bottom + 15, FormatUnitValue(t, AxisUnit::kFraction),
                         " text-anchor=\"middle\""));
  }
  absl::StrAppend(&out, Rect(l.left, l.top, kPlotWidth, l.plot_height, " class=\"frame\""),
                  Text(l.left + kPlotWidth / 2, bottom + 34,
                       absl::StrCat("each worker's median ", MedianCaption(hunt)),
                       " class=\"axis-label\" text-anchor=\"middle\""));
  if (!l.all_labels) {
    const double mid = l.top + l.plot_height / 2;
    absl::StrAppend(&out, Text(20, mid, absl::StrCat(l.n, " workers, slowest at the top"),
                               absl::StrCat(" class=\"axis-label\" text-anchor=\"middle\" "
                                            "transform=\"rotate(-90 20 ",
                                            Num(mid), ")\"")));
  }
  absl::StrAppend(
      &out, "<g class=\"reference\" data-reference=\"fleet median\">",
      Line(l.X(1), l.top, l.X(1), bottom,
           absl::StrCat(" stroke=\"", kNeutralColor, "\" stroke-width=\"1.5\"")),
      Text(l.X(1), l.top - 5, "fleet median", " class=\"reference-label\" text-anchor=\"middle\""),
      "</g>");
  return out;
}

std::string WorkerDot(const v1::HuntWorker& w, double x, double y, double r, bool suspect) {
  std::string tip = w.worker();
  if (!w.host_id().empty()) absl::StrAppend(&tip, " (", w.host_id(), ")");
  std::string paint;
  if (w.measurements() == 0) {
    absl::StrAppend(&tip, ": no successful measurement");
    paint = absl::StrCat(" fill=\"none\" stroke=\"", suspect ? kSuspectColor : kNeutralColor, "\"");
  } else {
    absl::StrAppend(&tip, ": ", RatioText(w.ratio()), " of median, z ",
                    absl::StrFormat("%.1f", w.z()), ", ", w.measurements(), " measurements, ",
                    w.slow(), " slow");
    paint = absl::StrCat(" fill=\"",
                         suspect        ? kSuspectColor
                         : w.slow() > 0 ? SeriesColor(4)
                                        : SeriesColor(0),
                         "\"");
  }
  return absl::StrCat("<circle class=\"worker\" data-worker=\"", HtmlEscape(w.worker()),
                      "\" data-ratio=\"", RatioText(w.ratio()), "\" cx=\"", Num(x), "\" cy=\"",
                      Num(y), "\" r=\"", Num(r), "\"", paint, "><title>", HtmlEscape(tip),
                      "</title></circle>");
}

// Labels: every worker's left of the plot, or, in a strip, the suspects'
// and the slowest few beside their dots (on the side with more room),
// spread apart with leader lines.
std::string DistLabels(const std::vector<const v1::HuntWorker*>& ranked,
                       const SuspectsByWorker& suspects, const DistLayout& l) {
  std::string out;
  std::vector<size_t> labelled;
  for (size_t i = 0; i < ranked.size(); ++i) {
    const bool suspect = suspects.count(ranked[i]->worker()) > 0;
    if (l.all_labels) {
      out += Text(l.left - 8, l.Y(i) + 4, Label(ranked[i]->worker()),
                  LabelAttributes(ranked[i]->worker(), suspect, "end"));
    } else if (suspect || i < kLowestLabelled) {
      labelled.push_back(i);
    }
  }
  std::vector<double> baselines;
  for (size_t i : labelled) baselines.push_back(l.Y(i) + 4);
  baselines = Spread(baselines);
  for (size_t k = 0; k < labelled.size(); ++k) {
    const v1::HuntWorker& w = *ranked[labelled[k]];
    const double x = l.X(w.ratio()), y = l.Y(labelled[k]);
    const bool right = x < l.left + kPlotWidth / 2;
    const double label_x = right ? x + 10 : x - 10;
    if (baselines[k] - 4 - y > 1) {
      out += Line(x, y, label_x, baselines[k] - 4,
                  absl::StrCat(" stroke=\"", kNeutralColor, "\" stroke-width=\"0.75\""));
    }
    out +=
        Text(label_x, baselines[k], Label(w.worker()),
             LabelAttributes(w.worker(), suspects.count(w.worker()) > 0, right ? "start" : "end"));
  }
  return out;
}

}  // namespace

std::string HuntHeatMapSvg(const v1::HuntOutput& hunt) {
  PairCells cells = SurveyPairs(hunt);
  if (cells.empty()) return "";
  std::vector<const v1::HuntSuspect*> suspects = DistinctSuspects(hunt);
  HeatOrder order = HeatMapOrder(suspects, hunt, cells, /*by_rack=*/true);
  std::string title = absl::StrCat("Pairs: ", Metric(hunt), ", ", MedianCaption(hunt));
  if (order.workers.size() > kMaxHeatMapWorkers) {
    // A million cells is no figure: the suspects and the slowest workers,
    // and the pairs among them, not grouped by rack (the racks' own rows
    // would not fit).
    absl::StrAppend(&title, " (the first ", kMaxHeatMapWorkers, " of ", order.workers.size(),
                    " workers: suspects, then the slowest)");
    order = HeatMapOrder(suspects, hunt, cells, /*by_rack=*/false);
    order.workers.resize(kMaxHeatMapWorkers);
    const std::set<std::string> kept(order.workers.begin(), order.workers.end());
    for (auto it = cells.begin(); it != cells.end();) {
      it = kept.count(it->first.first) && kept.count(it->first.second) ? std::next(it)
                                                                         : cells.erase(it);
    }
  }
  // The suspects in row order, and their rows.
  std::map<std::string, size_t> row_of;
  for (size_t i = 0; i < order.workers.size(); ++i) row_of.emplace(order.workers[i], i);
  std::stable_sort(suspects.begin(), suspects.end(),
                   [&](const v1::HuntSuspect* a, const v1::HuntSuspect* b) {
                     return row_of.at(a->worker()) < row_of.at(b->worker());
                   });
  std::vector<size_t> rows;
  for (const v1::HuntSuspect* s : suspects) rows.push_back(row_of.at(s->worker()));
  std::set<std::string> suspect_racks;
  for (const v1::HuntSuspect& s : hunt.suspects()) {
    if (s.verdict() == "RACK_SUSPECT") suspect_racks.insert(s.rack());
  }
  const HeatLayout l = LayOutHeatMap(order, rows, title);
  std::string out = SvgOpen("hunt-heatmap", l.width, l.height, title);
  absl::StrAppend(&out, Cells(order.workers, l, cells),
                  order.racks.empty() ? "" : HeatRacks(order.racks, suspect_racks, l),
                  l.all_labels ? WorkerLabels(order.workers, rows, l) : "",
                  HeatSuspects(suspects, rows, l),
                  HeatLegend(l.top + l.side + 18,
                             absl::StrCat("colour: ", MedianCaption(hunt), ", clamped to 1.25")),
                  "</svg>\n");
  return out;
}

bool HuntHasRacks(const v1::HuntOutput& hunt) {
  return std::any_of(hunt.workers().begin(), hunt.workers().end(),
                     [](const v1::HuntWorker& w) { return !w.rack().empty(); });
}

std::string HuntDistributionSvg(const v1::HuntOutput& hunt) {
  if (hunt.workers().empty()) return "";
  std::vector<const v1::HuntWorker*> ranked;
  for (const v1::HuntWorker& w : hunt.workers()) ranked.push_back(&w);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const v1::HuntWorker* a, const v1::HuntWorker* b) {
                     return std::pair(OrderKey(a->ratio()), a->worker()) <
                            std::pair(OrderKey(b->ratio()), b->worker());
                   });
  SuspectsByWorker suspect_of;
  for (const v1::HuntSuspect* s : DistinctSuspects(hunt)) suspect_of.emplace(s->worker(), s);
  const DistLayout l = LayOutDistribution(ranked);
  const std::string title = absl::StrCat("Workers: ", Metric(hunt), ", median ratio");
  std::string out = SvgOpen("hunt-distribution", l.width, l.height, title) + DistAxes(l, hunt);
  const double r = l.all_labels ? 4 : 2.5;
  for (size_t i = 0; i < ranked.size(); ++i) {
    const double x = l.X(ranked[i]->ratio()), y = l.Y(i);
    if (l.all_labels) {
      out += Line(l.left, y, x, y, " stroke=\"#c9ced8\" stroke-width=\"1\"");
    }
    const auto it = suspect_of.find(ranked[i]->worker());
    out += WorkerDot(*ranked[i], x, y, r, it != suspect_of.end());
    if (it != suspect_of.end()) {
      absl::StrAppend(&out, SuspectGroupOpen(*it->second),
                      Circle(x, y, r + 3.5,
                             absl::StrCat(" fill=\"none\" stroke=\"", kSuspectColor,
                                          "\" stroke-width=\"1.5\"")),
                      "</g>");
    }
  }
  return absl::StrCat(out, DistLabels(ranked, suspect_of, l), "</svg>\n");
}

}  // namespace collbench
