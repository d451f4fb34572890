// SPDX-License-Identifier: Apache-2.0
// A table as the analysis library hands it to its renderers: the CLI's
// aligned text and the HTML reports draw the same tables (suite tables,
// the advisor's ranges) without knowing what is in them.
#ifndef COLLBENCH_ANALYSIS_TABLE_H_
#define COLLBENCH_ANALYSIS_TABLE_H_

#include <string>
#include <vector>

#include "collbench/v1/workflow.pb.h"

namespace collbench {

struct Table {
  std::string id;     // short and stable: "A1", "E2", "advice"
  std::string title;  // one line saying what the table answers
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;  // each as wide as `columns`
  // Lines printed under the table: switch points, what was skipped and why,
  // how a column is derived.
  std::vector<std::string> notes;
};

// Column names on a line, then the rows, each column padded to its widest
// cell (numbers are already formatted by whoever filled the table); the
// title above as "== ID title" and the notes below, one per line.
std::string FormatTableText(const Table& table);

// The table as the API carries it (a workflow's output) and back.
v1::OutputTable TableToProto(const Table& table);
Table TableFromProto(const v1::OutputTable& table);

}  // namespace collbench

#endif  // COLLBENCH_ANALYSIS_TABLE_H_
