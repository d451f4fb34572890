// SPDX-License-Identifier: Apache-2.0
// The reports' tables: a run's results, ratios against the baseline, and
// the environment fields that differ.
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "analysis/html.h"
#include "analysis/report_sections.h"
#include "analysis/svg_plot.h"
#include "api/convert.h"
#include "common/units.h"
#include "engine_spec/operations.h"
#include "engine_spec/types.h"

namespace collbench::report_internal {
namespace {

std::string Seconds(double s) { return FormatUnitValue(s, AxisUnit::kSeconds); }
std::string Bytes(uint64_t b) { return FormatUnitValue(static_cast<double>(b), AxisUnit::kBytes); }
std::string Rate(double r) { return FormatUnitValue(r, AxisUnit::kBytesPerSecond); }

std::string TimeText(const google::protobuf::Timestamp& t) {
  if (t.seconds() == 0) return "";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", TimeFromTimestamp(t), absl::UTCTimeZone());
}

std::string SizesText(const v1::RunSpec& s) {
  if (s.sizes_bytes_size() > 0) {
    std::vector<std::string> sizes;
    for (uint64_t b : s.sizes_bytes()) sizes.push_back(FormatBytes(b));
    return absl::StrJoin(sizes, ",");
  }
  if (s.max_bytes() == 0) return "default";
  return absl::StrFormat("%s..%s x%g", FormatBytes(s.min_bytes()), FormatBytes(s.max_bytes()),
                         s.factor());
}

// Every field a reader may want to hold two runs apart by, in a fixed order.
std::vector<std::pair<std::string, std::string>> Facts(const v1::Run& run) {
  const v1::RunSpec& s = run.spec();
  std::vector<std::pair<std::string, std::string>> facts = {
      {"operation", s.operation()},
      {"state", v1::RunState_Name(run.state())},
      {"sizes", SizesText(s)},
      {"iters", s.iters() > 0 ? absl::StrCat(s.iters()) : "default"},
      {"time budget", s.has_time_budget() ? absl::StrCat(s.time_budget().seconds() +
                                                         s.time_budget().nanos() * 1e-9, " s")
                                          : "none"},
      {"dtype", s.dtype().empty() ? std::string(DataTypeName(DefaultDataType(s.operation())))
                                  : s.dtype()},
      {"redop", s.redop().empty() ? "sum" : s.redop()},
      {"root", absl::StrCat(s.root())},
      {"check", s.check() ? "yes" : "no"},
  };
  if (!s.scenario().empty()) facts.emplace_back("scenario", s.scenario());
  for (auto& field : ConfigFields(run)) facts.push_back(std::move(field));
  facts.emplace_back("mpi version", run.mpi_version());
  if (!run.nccl_version().empty()) facts.emplace_back("nccl version", run.nccl_version());
  facts.emplace_back("environment fingerprint", run.environment_fingerprint());
  std::vector<std::string> hosts;
  for (const v1::RankHost& h : run.hosts()) {
    hosts.push_back(absl::StrCat(h.hostname().empty() ? h.worker() : h.hostname(), " x",
                                 h.slots()));
  }
  facts.emplace_back("hosts", absl::StrJoin(hosts, ", "));
  facts.emplace_back("rank hosts", absl::StrJoin(run.rank_hosts(), ", "));
  facts.emplace_back("shared IPC", run.shared_ipc() ? "yes" : "no");
  facts.emplace_back("single copy", run.single_copy_mechanism());
  facts.emplace_back("created", TimeText(run.create_time()));
  return facts;
}

// "62%" of the path's limit, its derivation as the tooltip; "-" unknown.
HtmlCell LimitCell(const v1::ResultReferences& references) {
  HtmlCell cell{"-", "num", references.limit_path()};
  if (references.limit_ratio() > 0) {
    cell.text = absl::StrFormat("%.0f%%", references.limit_ratio() * 100);
  }
  return cell;
}

// "97% ok" of the published value (or floor), coloured by its verdict, the
// class, values and source as the tooltip; "-" without a reference.
HtmlCell ExpectedCell(const v1::ResultReferences& references) {
  HtmlCell cell{"-", "num", ""};
  std::vector<std::string> values;
  if (references.expected_busbw_bytes_per_s() > 0) {
    values.push_back(absl::StrCat("expected ", Rate(references.expected_busbw_bytes_per_s())));
  }
  if (references.expected_floor_bytes_per_s() > 0) {
    values.push_back(absl::StrCat("floor ", Rate(references.expected_floor_bytes_per_s())));
  }
  if (!references.expected_class().empty() || !values.empty()) {
    cell.title = absl::StrCat(references.expected_class(), ": ", absl::StrJoin(values, ", "));
    if (!references.expected_source().empty()) {
      absl::StrAppend(&cell.title, "; source ", references.expected_source());
    }
  }
  if (references.expected_ratio() <= 0) return cell;
  cell.text = absl::StrFormat("%.0f%%", references.expected_ratio() * 100);
  const std::string& verdict = references.expected_verdict();
  if (!verdict.empty()) absl::StrAppend(&cell.text, " ", verdict);
  if (verdict == "ok" || verdict == "low" || verdict == "below-floor") {
    cell.cls = absl::StrCat("num verdict-", verdict);
  }
  return cell;
}

std::string Cell(const std::string& text, const std::string& cls = "") {
  return absl::StrCat(cls.empty() ? "<td>" : absl::StrCat("<td class=\"", cls, "\">"),
                      HtmlEscape(text), "</td>");
}

}  // namespace

std::string ResultsTable(const RunWithResults& run) {
  if (run.results.empty()) return "<p class=\"note\">no results yet</p>\n";
  const std::vector<std::string> header = {
      "size", "count", "iters", "mean",         "min",   "p50",        "p99",
      "max",  "algbw", "busbw", "slowest rank", "wrong", "% of limit", "% of expected"};
  std::vector<std::vector<HtmlCell>> rows;
  std::vector<std::string> classes;
  for (const v1::SizeResult& r : run.results) {
    std::string slowest;
    if (r.slowest_rank() >= 0 && r.slowest_rank() < r.ranks_size()) {
      const v1::RankTiming& t = r.ranks(r.slowest_rank());
      slowest = absl::StrFormat("%d@%s %.2fx%s", t.rank(), t.host(), r.slowest_vs_median(),
                                t.straggler() ? " straggler" : "");
    }
    std::vector<HtmlCell>& row = rows.emplace_back();
    for (std::string& text : std::vector<std::string>{
             Bytes(r.bytes()), absl::StrCat(r.count()), absl::StrCat(r.iters()), Seconds(r.avg_s()),
             Seconds(r.min_s()), Seconds(r.p50_s()), Seconds(r.p99_s()), Seconds(r.max_s()),
             Rate(r.algbw_bytes_per_s()), Rate(r.busbw_bytes_per_s()), slowest,
             r.checked() ? absl::StrCat(r.wrong()) : "-"}) {
      row.push_back({std::move(text), "", ""});
    }
    row.push_back(LimitCell(r.references()));
    row.push_back(ExpectedCell(r.references()));
    classes.push_back(r.wrong() > 0 ? "disagree" : "");
  }
  return HtmlCellRows(header, rows, classes) +
         "<p class=\"meta\">% of limit: the bus bandwidth against the best its path allows "
         "(from the workers' measured memory bandwidth and link rates). % of expected: against "
         "the published figure for the hardware class (or its floor): ok from 90% of it, low "
         "below, below-floor under a published floor. Hover a cell for its derivation and "
         "source; - where none is known.</p>\n";
}

std::string RatioTable(const std::vector<RunWithResults>& runs,
                       const std::vector<std::string>& names) {
  using Key = std::tuple<std::string, uint64_t>;  // operation, bytes
  std::map<Key, std::vector<const v1::SizeResult*>> rows;
  std::set<std::string> operations;
  for (size_t i = 0; i < runs.size(); ++i) {
    for (const v1::SizeResult& r : runs[i].results) {
      auto& row = rows[{r.operation(), r.bytes()}];
      row.resize(runs.size(), nullptr);
      row[i] = &r;
      operations.insert(r.operation());
    }
  }
  std::string out = "<table class=\"data ratios\"><thead><tr>";
  if (operations.size() > 1) out += "<th>operation</th>";
  out += "<th>size</th>";
  for (size_t i = 0; i < runs.size(); ++i) {
    absl::StrAppend(&out, "<th>[", i, "] ", HtmlEscape(names[i]), " mean</th>");
    if (i > 0) absl::StrAppend(&out, "<th>[", i, "]/[0]</th>");
  }
  out += "</tr></thead><tbody>";
  for (const auto& [key, row] : rows) {
    out += "<tr>";
    if (operations.size() > 1) out += Cell(std::get<0>(key));
    out += Cell(Bytes(std::get<1>(key)), "num");
    for (size_t i = 0; i < row.size(); ++i) {
      out += Cell(row[i] ? Seconds(row[i]->avg_s()) : "-", "num");
      if (i == 0) continue;
      if (!row[i] || !row[0] || row[0]->avg_s() <= 0) {
        out += Cell("-", "num");
        continue;
      }
      const double ratio = row[i]->avg_s() / row[0]->avg_s();
      const bool significant = Separated(MeanInterval(*row[i]), MeanInterval(*row[0]));
      const std::string cls = !significant ? "num" : ratio < 1 ? "num faster" : "num slower";
      out += Cell(absl::StrFormat("%.2fx%s", ratio, significant ? " *" : ""), cls);
    }
    out += "</tr>";
  }
  return out + "</tbody></table>\n<p class=\"meta\">Ratios below 1 are faster than [0]. "
               "* the 95% intervals of the two means (from the stored histograms) do not "
               "overlap: the difference is significant.</p>\n";
}

std::string EnvironmentSection(const std::vector<RunWithResults>& runs,
                               const std::vector<std::string>& names) {
  std::vector<std::map<std::string, std::string>> values;
  std::vector<std::string> order;
  std::set<std::string> seen;
  for (const RunWithResults& r : runs) {
    values.emplace_back();
    for (const auto& [field, value] : Facts(r.run)) {
      values.back()[field] = value;
      if (seen.insert(field).second) order.push_back(field);
    }
  }
  if (runs.size() == 1) {
    std::vector<std::vector<std::string>> rows = {{"field", "value"}};
    for (const std::string& field : order) rows.push_back({field, values[0][field]});
    return absl::StrCat("<h2>Run</h2>\n", HtmlRows(rows));
  }
  std::vector<std::vector<std::string>> rows = {{"field"}};
  for (size_t i = 0; i < runs.size(); ++i) rows[0].push_back(absl::StrCat("[", i, "] ", names[i]));
  std::vector<std::string> same;
  for (const std::string& field : order) {
    std::set<std::string> distinct;
    std::vector<std::string> row = {field};
    for (auto& v : values) {
      distinct.insert(v[field]);
      row.push_back(v[field].empty() ? "-" : v[field]);
    }
    if (distinct.size() > 1) {
      rows.push_back(std::move(row));
    } else if (!values[0][field].empty()) {
      same.push_back(absl::StrCat(field, "=", values[0][field]));
    }
  }
  std::string out = "<h2>Environment differences</h2>\n";
  out += rows.size() > 1 ? HtmlRows(rows) : "<p class=\"note\">none: the runs differ in no "
                                            "spec or environment field</p>\n";
  return absl::StrCat(out, "<p class=\"meta\">The same in every run: ",
                      HtmlEscape(absl::StrJoin(same, "; ")), "</p>\n");
}

}  // namespace collbench::report_internal
