// SPDX-License-Identifier: Apache-2.0
// A suite's tables from the runs its cells made: the values, the derived
// quantities (ratios, best/worst, winners per size range) and, row by row,
// whether this run agrees with the paper.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/advisor.h"
#include "analysis/suite.h"
#include "common/units.h"

namespace collbench {
namespace {

// One number a table shows: where it goes (row key, pivot value) and what
// cell it came from.
struct Point {
  std::vector<std::string> row;
  std::string pivot;
  std::string config;  // the cell's other axis values, for "best" tables
  double value = 0;
  uint64_t bytes = 0;
};

std::string Number(double v) {
  if (std::isnan(v)) return "-";
  if (std::fabs(v) >= 1e5) return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%.4g", v);
}

// The value of a row key for one result of a cell: an axis, or a field of
// the result ("@bytes", "@ranks").
std::string KeyValue(const std::string& key, const SuiteCell& cell, const v1::SizeResult& r) {
  if (key == "@bytes") return FormatBytes(r.bytes());
  if (key == "@ranks") {
    auto it = r.scenario().find("ranks");
    return it == r.scenario().end() ? "-" : absl::StrCat(static_cast<int>(it->second));
  }
  return cell.Value(key);
}

bool PerResult(const SuiteTable& t) {
  return std::find(t.rows.begin(), t.rows.end(), "@bytes") != t.rows.end() ||
         std::find(t.rows.begin(), t.rows.end(), "@ranks") != t.rows.end() || t.kind == "winner";
}

bool Matches(const std::map<std::string, std::string>& where, const SuiteCell& cell) {
  for (const auto& [axis, value] : where) {
    if (cell.Value(axis) != value) return false;
  }
  return true;
}

// The result a table reads from a run that measured several sizes.
const v1::SizeResult* ChosenResult(const SuiteTable& t, const RunWithResults& run) {
  const v1::SizeResult* chosen = nullptr;
  for (const v1::SizeResult& r : run.results) {
    if (t.at_bytes != 0) {
      if (r.bytes() == t.at_bytes) return &r;
    } else if (chosen == nullptr || r.bytes() >= chosen->bytes()) {  // ties: the last
      chosen = &r;
    }
  }
  return chosen;
}

std::string OtherAxes(const SuiteTable& t, const SuiteCell& cell) {
  std::vector<std::string> parts;
  for (const auto& [axis, value] : cell.key) {
    if (std::find(t.rows.begin(), t.rows.end(), axis) == t.rows.end() &&
        t.where.count(axis) == 0) {
      parts.push_back(value);
    }
  }
  return absl::StrJoin(parts, "/");
}

std::vector<Point> PointsOf(const SuiteTable& t, const std::string& part,
                            const std::vector<SuiteCell>& cells, const SuiteOutcome& outcome) {
  std::vector<Point> points;
  for (const SuiteCell& cell : cells) {
    if (cell.part != part || !Matches(t.where, cell)) continue;
    auto run = outcome.runs.find(cell.Label());
    if (run == outcome.runs.end() || run->second.run.state() != v1::SUCCEEDED) continue;
    auto add = [&](const v1::SizeResult& r) {
      Point p;
      for (const std::string& key : t.rows) p.row.push_back(KeyValue(key, cell, r));
      p.pivot = t.pivot.empty() ? "" : cell.Value(t.pivot);
      p.config = OtherAxes(t, cell);
      p.bytes = r.bytes();
      if (MeasureValue(t.measure, r, &p.value)) points.push_back(p);
    };
    if (PerResult(t)) {
      for (const v1::SizeResult& r : run->second.results) add(r);
    } else if (const v1::SizeResult* r = ChosenResult(t, run->second)) {
      add(*r);
    }
  }
  return points;
}

// Row keys in the order their cells were expanded (first seen first).
std::vector<std::vector<std::string>> RowOrder(const std::vector<Point>& points) {
  std::vector<std::vector<std::string>> rows;
  for (const Point& p : points) {
    if (std::find(rows.begin(), rows.end(), p.row) == rows.end()) rows.push_back(p.row);
  }
  return rows;
}

bool Holds(const SuiteCheck& check, double v) {
  if (check.relation == ">") return v > check.value;
  if (check.relation == ">=") return v >= check.value;
  if (check.relation == "<") return v < check.value;
  if (check.relation == "<=") return v <= check.value;
  return std::fabs(v / check.value - 1) <= check.tolerance;  // "~"
}

// Appends "paper" and "agrees" to a row whose columns are named `columns`.
void Judge(const SuiteTable& t, const std::vector<std::string>& columns,
           std::vector<std::string>* row) {
  std::vector<std::string> paper, agrees;
  for (const SuiteCheck& check : t.checks) {
    bool applies = true;
    for (const auto& [key, value] : check.where) {
      auto col = std::find(t.rows.begin(), t.rows.end(), key);
      applies &= col != t.rows.end() && (*row)[col - t.rows.begin()] == value;
    }
    if (!applies) continue;
    // Two claims may quote the same figure of the paper (one per row pair
    // held against it): it is printed once.
    if (std::find(paper.begin(), paper.end(), check.paper) == paper.end()) {
      paper.push_back(check.paper);
    }
    auto col = std::find(columns.begin(), columns.end(), check.column);
    double v = NAN;
    if (col != columns.end()) {
      const std::string& cell = (*row)[col - columns.begin()];
      if (cell != "-" && !cell.empty()) v = std::strtod(cell.c_str(), nullptr);
    }
    if (std::isnan(v)) {
      agrees.push_back("n/a");
    } else {
      const std::string relation = check.relation == "~" ? "≈" : check.relation;
      agrees.push_back(absl::StrCat(Holds(check, v) ? "yes" : "no", " (", check.column, " ",
                                    relation, " ", Number(check.value), ")"));
    }
  }
  row->push_back(paper.empty() ? "" : absl::StrJoin(paper, "; "));
  row->push_back(agrees.empty() ? "" : absl::StrJoin(agrees, "; "));
}

Table PivotTable(const SuiteTable& t, const std::vector<Point>& points,
                 const std::vector<std::string>& pivot_values) {
  Table table{t.id, t.title, t.rows, {}, {}};
  for (const std::string& v : pivot_values) table.columns.push_back(v);
  for (const SuiteRatio& r : t.ratios) table.columns.push_back(r.name);
  for (const std::vector<std::string>& key : RowOrder(points)) {
    std::map<std::string, double> by_pivot;
    for (const Point& p : points) {
      if (p.row == key) by_pivot[p.pivot] = p.value;
    }
    std::vector<std::string> row = key;
    for (const std::string& v : pivot_values) {
      row.push_back(by_pivot.count(v) ? Number(by_pivot[v]) : "-");
    }
    for (const SuiteRatio& r : t.ratios) {
      const bool both = by_pivot.count(r.of) && by_pivot.count(r.to) && by_pivot[r.to] != 0;
      row.push_back(both ? absl::StrFormat("%.3f", by_pivot[r.of] / by_pivot[r.to]) : "-");
    }
    if (!t.checks.empty()) Judge(t, table.columns, &row);
    table.rows.push_back(row);
  }
  if (!t.checks.empty()) table.columns.insert(table.columns.end(), {"paper", "agrees"});
  return table;
}

Table BestTable(const SuiteTable& t, const std::vector<Point>& points) {
  Table table{t.id, t.title, t.rows, {}, {}};
  table.columns.insert(table.columns.end(),
                       {"best", "best_value", "worst", "worst_value", "worst/best", "reduction_%"});
  for (const std::vector<std::string>& key : RowOrder(points)) {
    const Point* best = nullptr;
    const Point* worst = nullptr;
    for (const Point& p : points) {
      if (p.row != key) continue;
      const bool better = best == nullptr ||
                          (t.higher_is_better ? p.value > best->value : p.value < best->value);
      const bool worse = worst == nullptr ||
                         (t.higher_is_better ? p.value < worst->value : p.value > worst->value);
      if (better) best = &p;
      if (worse) worst = &p;
    }
    const double ratio = t.higher_is_better ? best->value / worst->value : worst->value / best->value;
    std::vector<std::string> row = key;
    row.insert(row.end(), {best->config, Number(best->value), worst->config, Number(worst->value),
                           absl::StrFormat("%.3f", ratio),
                           absl::StrFormat("%.1f", (1 - 1 / ratio) * 100)});
    if (!t.checks.empty()) Judge(t, table.columns, &row);
    table.rows.push_back(row);
  }
  if (!t.checks.empty()) table.columns.insert(table.columns.end(), {"paper", "agrees"});
  return table;
}

// Per size, the best pivot value; runs of sizes with the same winner merge.
Table WinnerTable(const SuiteTable& t, const std::vector<Point>& points) {
  Table table{t.id, t.title, {"size_range", "best", "runner_up_margin_%"}, {}, {}};
  std::map<uint64_t, std::vector<const Point*>> by_size;
  for (const Point& p : points) by_size[p.bytes].push_back(&p);
  std::vector<SizeContest> contests;
  for (const auto& [bytes, list] : by_size) {
    std::vector<const Point*> sorted = list;
    std::sort(sorted.begin(), sorted.end(), [&](const Point* a, const Point* b) {
      return t.higher_is_better ? a->value > b->value : a->value < b->value;
    });
    SizeContest c;
    c.bytes = bytes;
    c.winner = sorted[0]->pivot;
    c.margin = NAN;
    if (sorted.size() > 1) {
      c.runner_up = sorted[1]->pivot;
      c.margin = (t.higher_is_better ? sorted[0]->value / sorted[1]->value
                                     : sorted[1]->value / sorted[0]->value) - 1;
    }
    contests.push_back(c);
  }
  const std::vector<SizeRange> ranges = MergeRanges(contests);
  std::set<std::string> winners;
  for (const SizeRange& r : ranges) {
    winners.insert(r.winner);
    const std::string margin = std::isnan(r.margin_min) ? "-"
                               : r.margin_min == r.margin_max
                                   ? absl::StrFormat("%.0f", r.margin_min * 100)
                                   : absl::StrFormat("%.0f-%.0f", r.margin_min * 100,
                                                     r.margin_max * 100);
    table.rows.push_back({SpanText(r), r.winner, margin});
  }
  for (std::string& line : SwitchPoints(ranges)) table.notes.push_back(std::move(line));
  for (const SuiteCheck& check : t.checks) {
    if (check.column != "winners") continue;
    const double n = static_cast<double>(winners.size());
    table.notes.push_back(absl::StrCat("paper: ", check.paper, "; this run: ", winners.size(),
                                       " winner(s) — agrees: ", Holds(check, n) ? "yes" : "no"));
  }
  return table;
}

// The table's skipped and failed cells, one note per reason.
void NoteMissing(const SuiteTable& t, const std::string& part, const std::vector<SuiteCell>& cells,
                 const SuiteOutcome& outcome, Table* table) {
  std::map<std::string, std::vector<std::string>> by_reason;
  for (const SuiteCell& cell : cells) {
    if (cell.part != part || !Matches(t.where, cell)) continue;
    auto skipped = outcome.skipped.find(cell.Label());
    auto run = outcome.runs.find(cell.Label());
    std::string reason;
    if (skipped != outcome.skipped.end()) {
      reason = absl::StrCat("skipped: ", skipped->second);
    } else if (run == outcome.runs.end()) {
      reason = "not run in this suite run";
    } else if (run->second.run.state() != v1::SUCCEEDED) {
      reason = absl::StrCat("failed: ", run->second.run.error());
    } else {
      continue;
    }
    std::vector<std::string> parts;
    for (const auto& [axis, value] : cell.key) parts.push_back(absl::StrCat(axis, "=", value));
    by_reason[reason].push_back(absl::StrJoin(parts, ","));
  }
  for (const auto& [reason, list] : by_reason) {
    const size_t shown = std::min<size_t>(list.size(), 4);
    std::string names = absl::StrJoin(list.begin(), list.begin() + shown, "; ");
    if (list.size() > shown) absl::StrAppend(&names, "; and ", list.size() - shown, " more");
    table->notes.push_back(absl::StrCat(reason, " (", list.size(), " cell",
                                        list.size() > 1 ? "s" : "", ": ", names, ")"));
  }
}

std::vector<std::string> PivotValues(const SuitePart& part, const std::string& axis) {
  std::vector<std::string> values;
  for (const SuiteAxis& a : part.axes) {
    if (a.name != axis) continue;
    for (const SuiteAxisValue& v : a.values) values.push_back(v.value);
  }
  return values;
}

// A scenario value in seconds: its key ends in "_s" ("step_s") or names
// seconds per something ("comm_s_per_step").
bool SecondsKey(const std::string& key) {
  return absl::EndsWith(key, "_s") || absl::StrContains(key, "_s_per_");
}

}  // namespace

bool MeasureValue(const std::string& measure, const v1::SizeResult& r, double* value) {
  if (measure == "avg_us") *value = r.avg_s() * 1e6;
  else if (measure == "avg_ms") *value = r.avg_s() * 1e3;
  else if (measure == "algbw_MBps") *value = r.algbw_bytes_per_s() / 1e6;
  else if (measure == "p50_us") *value = r.p50_s() * 1e6;
  else if (measure == "p99_us") *value = r.p99_s() * 1e6;
  else if (measure == "busbw_GBps") *value = r.busbw_bytes_per_s() / 1e9;
  else if (measure == "throughput_MBps") *value = r.avg_s() > 0 ? r.bytes() / r.avg_s() / 1e6 : 0;
  else if (absl::StartsWith(measure, "scenario:")) {
    const std::string key = measure.substr(9);
    auto it = r.scenario().find(key);
    if (it == r.scenario().end()) return false;
    *value = SecondsKey(key) ? it->second * 1e3 : it->second;
  } else {
    return false;
  }
  return true;
}

std::vector<Table> RenderSuite(const Suite& suite, const std::vector<SuiteCell>& cells,
                               const SuiteOutcome& outcome) {
  std::vector<Table> tables;
  for (const SuitePart& part : suite.parts) {
    for (const SuiteTable& t : part.tables) {
      const std::vector<Point> points = PointsOf(t, part.name, cells, outcome);
      Table table;
      if (t.kind == "best") {
        table = BestTable(t, points);
      } else if (t.kind == "winner") {
        table = WinnerTable(t, points);
      } else {
        table = PivotTable(t, points, PivotValues(part, t.pivot));
      }
      table.notes.insert(table.notes.begin(), absl::StrCat("values: ", t.measure));
      table.notes.insert(table.notes.end(), t.notes.begin(), t.notes.end());
      NoteMissing(t, part.name, cells, outcome, &table);
      tables.push_back(std::move(table));
    }
  }
  return tables;
}

}  // namespace collbench
