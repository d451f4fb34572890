// SPDX-License-Identifier: Apache-2.0
#include "analysis/table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace collbench {

std::string FormatTableText(const Table& table) {
  std::vector<size_t> width(table.columns.size(), 0);
  auto widen = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  };
  widen(table.columns);
  for (const auto& row : table.rows) widen(row);
  auto line = [&](const std::vector<std::string>& row) {
    std::string out;
    for (size_t i = 0; i < width.size(); ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      if (i + 1 == width.size()) {
        absl::StrAppend(&out, cell);
      } else {
        absl::StrAppend(&out, cell, std::string(width[i] - cell.size() + 2, ' '));
      }
    }
    return absl::StrCat(out, "\n");
  };
  std::string out = absl::StrCat("== ", table.id, table.id.empty() ? "" : " ", table.title, "\n");
  out += line(table.columns);
  for (const auto& row : table.rows) out += line(row);
  for (const std::string& note : table.notes) absl::StrAppend(&out, "   ", note, "\n");
  return out;
}

v1::OutputTable TableToProto(const Table& table) {
  v1::OutputTable out;
  out.set_id(table.id);
  out.set_title(table.title);
  for (const std::string& c : table.columns) out.add_columns(c);
  for (const auto& row : table.rows) {
    v1::OutputTable::Row* r = out.add_rows();
    for (const std::string& cell : row) r->add_cells(cell);
  }
  for (const std::string& n : table.notes) out.add_notes(n);
  return out;
}

Table TableFromProto(const v1::OutputTable& table) {
  Table out{table.id(), table.title(), {table.columns().begin(), table.columns().end()}, {}, {}};
  for (const auto& row : table.rows()) out.rows.emplace_back(row.cells().begin(), row.cells().end());
  out.notes.assign(table.notes().begin(), table.notes().end());
  return out;
}

}  // namespace collbench
