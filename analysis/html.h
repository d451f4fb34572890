// SPDX-License-Identifier: Apache-2.0
// The HTML pieces every report is made of (docs/design/workflows.md#reports): escaping, a Table
// as an HTML table, and the page around a report's body. A page is
// self-contained: its style is inline, its plots are inline SVG, and it
// names no script, font, image or stylesheet elsewhere, so it opens from a
// file with no network and passes a Content-Security-Policy of
// `default-src 'none'` (plus a nonce for the one inline script the
// coordinator's live page adds).
//
// Functions taking "html" trust it as markup; every other string is text
// and is escaped here.
#ifndef COLLBENCH_ANALYSIS_HTML_H_
#define COLLBENCH_ANALYSIS_HTML_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "analysis/table.h"

namespace collbench {

// &, <, >, " and ' as character references: safe in text and in quoted
// attribute values.
std::string HtmlEscape(absl::string_view text);

// Picks a data cell's class from its column's name and its text; "" keeps
// the automatic one ("num", "wrap").
using HtmlCellClass =
    std::function<std::string(const std::string& column, const std::string& cell)>;

// `table` as <table class="data">, its id and title as a heading above and
// its notes as a list below. Cells that read as numbers are aligned right.
// A column named "agrees" marks its row agree (every verdict "yes"),
// disagree (any "no") or unknown; notes saying a cell was skipped, failed
// or not run are marked too. `cell_class`, when given, classes the data
// cells (e.g. CheckVerdictClass). Nothing is left out.
std::string HtmlTable(const Table& table, const HtmlCellClass& cell_class = nullptr);

// For HtmlTable: a check's verdict (a cell of a column named "verdict":
// ok, faster, slower, regression) as "verdict-ok", "verdict-faster"
// (green), "verdict-slower" (amber) or "verdict-regression" (red); a
// hunt's CONFIRMED_BAD and RACK_SUSPECT red and LINK_SUSPECT amber; "" for
// any other cell.
std::string CheckVerdictClass(const std::string& column, const std::string& cell);

// A <table class="data"> of plain rows, the first being the header; for
// the reports' own tables (results, ratios, per-rank views).
// `row_classes`, when given, has one class name (or "") per data row.
std::string HtmlRows(const std::vector<std::vector<std::string>>& rows,
                     const std::vector<std::string>& row_classes = {});

// One cell of HtmlCellRows, all text: what it shows, its class (replacing
// the automatic "num"/"wrap"; "" keeps them) and a tooltip (its title
// attribute; "" for none).
struct HtmlCell {
  std::string text;
  std::string cls;
  std::string title;
};

// As HtmlRows, with a class and a tooltip per cell: `header` is the first
// row, `rows` the data rows.
std::string HtmlCellRows(const std::vector<std::string>& header,
                         const std::vector<std::vector<HtmlCell>>& rows,
                         const std::vector<std::string>& row_classes = {});

struct HtmlPage {
  std::string title;  // text
  std::string nav_html;   // links above the title (the /ui/ pages); may be empty
  std::string body_html;
  // An inline script (the live page's) and the nonce that allows it; both
  // empty for a report file, which has no script at all.
  std::string script;
  std::string script_nonce;
};

// The whole document: doctype, charset, viewport, the inline style sheet,
// the title as <h1>, the body.
std::string RenderHtmlPage(const HtmlPage& page);

}  // namespace collbench

#endif  // COLLBENCH_ANALYSIS_HTML_H_
