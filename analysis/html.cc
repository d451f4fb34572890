// SPDX-License-Identifier: Apache-2.0
#include "analysis/html.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace collbench {
namespace {

// One style sheet for every page; system fonts only (nothing fetched).
constexpr char kStyle[] = R"css(
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       margin: 18px 28px; color: #1d2330; background: #fff; }
h1 { font-size: 21px; margin: 4px 0 10px; }
h2 { font-size: 17px; margin: 26px 0 8px; border-bottom: 1px solid #d5dae3; padding-bottom: 3px; }
h3 { font-size: 14px; margin: 16px 0 6px; }
nav { font-size: 13px; margin-bottom: 6px; }
nav a { margin-right: 14px; }
a { color: #1f5fbf; }
p.meta, p.note { color: #4a5366; margin: 4px 0; }
.plots { display: flex; flex-wrap: wrap; gap: 14px; }
svg.plot { background: #fff; border: 1px solid #d5dae3; border-radius: 4px; }
svg.plot text { font: 11px system-ui, "DejaVu Sans", sans-serif; fill: #2b3240; }
svg.plot .title { font-size: 13px; font-weight: 600; }
svg.plot .axis-label { font-size: 12px; }
svg.plot .grid { stroke: #e6e9ef; stroke-width: 1; }
svg.plot .frame { fill: none; stroke: #8a93a6; stroke-width: 1; }
svg.plot .empty { fill: #8a93a6; font-size: 13px; }
svg.plot .reference-label { fill: #4a5366; font-style: italic; }
table.data { border-collapse: collapse; margin: 4px 0 8px; font-size: 13px; }
table.data th, table.data td { border: 1px solid #d5dae3; padding: 3px 8px; text-align: left;
                                vertical-align: top; white-space: nowrap; }
table.data td.wrap { white-space: normal; min-width: 200px; max-width: 460px; }
table.data th { background: #f1f3f7; font-weight: 600; white-space: nowrap; }
table.data td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.data tr.agree td { background: #e7f6ea; }
table.data tr.disagree td { background: #fde8e6; }
table.data tr.straggler td { background: #fff1d6; }
table.data td.faster { color: #11702f; font-weight: 600; }
table.data td.slower { color: #b3261e; font-weight: 600; }
table.data td[title] { cursor: help; }
table.data tr td.verdict-ok, table.data tr td.verdict-faster { background: #e7f6ea;
                                                               color: #11702f; }
table.data tr td.verdict-low, table.data tr td.verdict-slower { background: #fff1d6;
                                                               color: #8a4b00; }
table.data tr td.verdict-below-floor, table.data tr td.verdict-regression {
  background: #fde8e6; color: #b3261e; font-weight: 600; }
p.warning { background: #fff1d6; border: 1px solid #e0a040; border-radius: 4px;
            padding: 6px 10px; color: #5c3b00; font-weight: 600; }
ul.notes { margin: 2px 0 10px; padding-left: 20px; color: #4a5366; font-size: 13px; }
ul.notes li.missing { color: #8a4b00; }
.badge { display: inline-block; padding: 1px 7px; border-radius: 9px; font-size: 12px;
         background: #e6e9ef; }
.badge.running { background: #d9e8ff; color: #123f80; }
.badge.succeeded { background: #e7f6ea; color: #11702f; }
.badge.failed, .badge.cancelled, .badge.regression { background: #fde8e6; color: #b3261e; }
.badge.skipped { background: #fff1d6; color: #8a4b00; }
details { margin: 6px 0; }
summary { cursor: pointer; font-weight: 600; }
form.login input[type=password] { width: 320px; padding: 4px; }
)css";

bool LooksNumeric(const std::string& cell) {
  if (cell.empty()) return false;
  absl::string_view v(cell);
  for (absl::string_view unit :
       {"x", "%", " ns", " µs", " ms", " s", " B", " KiB", " MiB", " GiB", " TiB", " B/s",
        " kB/s", " MB/s", " GB/s", " TB/s"}) {
    if (absl::ConsumeSuffix(&v, unit)) break;
  }
  std::string s(v);
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end != s.c_str() && *end == '\0';
}

// Long text (a paper's claim) may wrap; the rest keeps to one line.
constexpr size_t kWrapChars = 40;

// `cls`, when given, replaces the automatic class; `title` is a tooltip.
std::string Cell(absl::string_view tag, const std::string& text, const std::string& cls = "",
                 const std::string& title = "") {
  std::string attributes;
  if (!cls.empty()) {
    attributes = absl::StrCat(" class=\"", HtmlEscape(cls), "\"");
  } else if (tag == "td" && text.size() > kWrapChars) {
    attributes = " class=\"wrap\"";
  } else if (tag == "td" && LooksNumeric(text)) {
    attributes = " class=\"num\"";
  }
  if (!title.empty()) absl::StrAppend(&attributes, " title=\"", HtmlEscape(title), "\"");
  return absl::StrCat("<", tag, attributes, ">", HtmlEscape(text), "</", tag, ">");
}

std::string RowStart(const std::vector<std::string>& row_classes, size_t index) {
  const std::string cls = index < row_classes.size() ? row_classes[index] : "";
  return cls.empty() ? "<tr>" : absl::StrCat("<tr class=\"", HtmlEscape(cls), "\">");
}

// "agree", "disagree" or "" for an "agrees" cell ("yes (…)", "no (…); yes (…)").
std::string VerdictClass(const std::string& cell) {
  if (absl::StrContains(cell, "no (") || absl::StartsWith(cell, "no")) return "disagree";
  if (absl::StartsWith(cell, "yes")) return "agree";
  return "";
}

bool NotesMissing(const std::string& note) {
  return absl::StartsWith(note, "skipped") || absl::StartsWith(note, "failed") ||
         absl::StartsWith(note, "not run");
}

}  // namespace

std::string HtmlEscape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string HtmlRows(const std::vector<std::vector<std::string>>& rows,
                     const std::vector<std::string>& row_classes) {
  if (rows.empty()) return "";
  std::string out = "<table class=\"data\"><thead><tr>";
  for (const std::string& h : rows[0]) out += Cell("th", h);
  out += "</tr></thead><tbody>";
  for (size_t i = 1; i < rows.size(); ++i) {
    out += RowStart(row_classes, i - 1);
    for (const std::string& c : rows[i]) out += Cell("td", c);
    out += "</tr>";
  }
  return out + "</tbody></table>\n";
}

std::string HtmlCellRows(const std::vector<std::string>& header,
                         const std::vector<std::vector<HtmlCell>>& rows,
                         const std::vector<std::string>& row_classes) {
  std::string out = "<table class=\"data\"><thead><tr>";
  for (const std::string& h : header) out += Cell("th", h);
  out += "</tr></thead><tbody>";
  for (size_t i = 0; i < rows.size(); ++i) {
    out += RowStart(row_classes, i);
    for (const HtmlCell& c : rows[i]) out += Cell("td", c.text, c.cls, c.title);
    out += "</tr>";
  }
  return out + "</tbody></table>\n";
}

std::string HtmlTable(const Table& table, const HtmlCellClass& cell_class) {
  std::string out = absl::StrCat("<h3>", HtmlEscape(table.id), table.id.empty() ? "" : " ",
                                 HtmlEscape(table.title), "</h3>\n");
  const auto agrees = std::find(table.columns.begin(), table.columns.end(), "agrees");
  std::vector<std::vector<HtmlCell>> rows;
  std::vector<std::string> classes;
  for (const auto& row : table.rows) {
    std::vector<HtmlCell>& cells = rows.emplace_back();
    for (size_t i = 0; i < row.size(); ++i) {
      const std::string& column = i < table.columns.size() ? table.columns[i] : "";
      cells.push_back({row[i], cell_class ? cell_class(column, row[i]) : "", ""});
    }
    const size_t col = agrees - table.columns.begin();
    classes.push_back(agrees != table.columns.end() && col < row.size() ? VerdictClass(row[col])
                                                                        : "");
  }
  if (table.rows.empty()) {
    absl::StrAppend(&out, "<p class=\"note\">no rows: none of its cells ran</p>\n");
  } else {
    out += HtmlCellRows(table.columns, rows, classes);
  }
  if (!table.notes.empty()) {
    out += "<ul class=\"notes\">";
    for (const std::string& note : table.notes) {
      absl::StrAppend(&out, NotesMissing(note) ? "<li class=\"missing\">" : "<li>",
                      HtmlEscape(note), "</li>");
    }
    out += "</ul>\n";
  }
  return out;
}

std::string CheckVerdictClass(const std::string& column, const std::string& cell) {
  if (column != "verdict") return "";
  if (cell == "ok" || cell == "faster" || cell == "slower" || cell == "regression") {
    return absl::StrCat("verdict-", cell);
  }
  // A hunt's suspects: a bad node or rack as a regression, a link as a
  // slowdown.
  if (cell == "CONFIRMED_BAD" || cell == "RACK_SUSPECT") return "verdict-regression";
  if (cell == "LINK_SUSPECT") return "verdict-slower";
  return "";
}

std::string RenderHtmlPage(const HtmlPage& page) {
  std::string out = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>",
      HtmlEscape(page.title), "</title><style>", kStyle, "</style></head>\n<body>\n");
  if (!page.nav_html.empty()) absl::StrAppend(&out, "<nav>", page.nav_html, "</nav>\n");
  absl::StrAppend(&out, "<h1>", HtmlEscape(page.title), "</h1>\n", page.body_html);
  if (!page.script.empty()) {
    absl::StrAppend(&out, "<script nonce=\"", HtmlEscape(page.script_nonce), "\">", page.script,
                    "</script>\n");
  }
  return out + "</body></html>\n";
}

}  // namespace collbench
