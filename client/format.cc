// SPDX-License-Identifier: Apache-2.0
#include "client/format.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "analysis/run_set.h"
#include "api/convert.h"
#include "client/container_format.h"
#include "common/rank_spread.h"
#include "common/records.h"

namespace collbench {
namespace {

constexpr double kUs = 1e6;
constexpr double kGB = 1e9;

std::string Lower(absl::string_view name) { return absl::AsciiStrToLower(name); }

std::string TimeText(const google::protobuf::Timestamp& t) {
  if (t.seconds() == 0 && t.nanos() == 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixSeconds(t.seconds()),
                          absl::UTCTimeZone());
}

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }

// The run's synchronization as stored ("barrier", "none"), or "?" for runs
// stored before the field existed.
std::string SyncOf(const v1::Run& run) {
  const std::string text = IterationSyncText(run.spec().sync());
  return text.empty() ? "?" : text;
}

// The per-rank part of a result as the engine's record, so the slowest
// rank is shown by the same code as in collbench-rank's table
// (common/rank_spread.h). No ranks: no slowest rank.
SizeRecord RankView(const v1::SizeResult& r) {
  SizeRecord view;
  for (const v1::RankTiming& t : r.ranks()) {
    view.ranks.push_back({t.rank(), t.host(), t.mean_s(), t.p50_s(), t.p99_s(), t.straggler()});
  }
  view.slowest_rank = view.ranks.empty() ? -1 : r.slowest_rank();
  view.slowest_vs_median = r.slowest_vs_median();
  return view;
}

using Key = std::tuple<std::string, std::string, std::string, uint64_t>;

Key KeyOf(const v1::SizeResult& r) { return {r.operation(), r.dtype(), r.redop(), r.bytes()}; }

// Right-aligns every column to its widest cell, two spaces apart.
std::string AlignColumns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      absl::StrAppend(&out, i == 0 ? "" : "  ", std::string(widths[i] - row[i].size(), ' '),
                      row[i]);
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

}  // namespace

absl::StatusOr<OutputKind> ParseOutputKind(absl::string_view text) {
  if (text == "table") return OutputKind::kTable;
  if (text == "jsonl") return OutputKind::kJsonl;
  if (text == "csv") return OutputKind::kCsv;
  return absl::InvalidArgumentError(
      absl::StrCat("invalid --output '", text, "': use table, jsonl or csv"));
}

std::string RunStateName(v1::RunState state) { return Lower(v1::RunState_Name(state)); }

std::string RunStateText(const v1::Run& run) {
  if (run.waiting_reason().empty()) return RunStateName(run.state());
  return absl::StrCat(RunStateName(run.state()), " (", run.waiting_reason(), ")");
}
std::string WorkerStateName(v1::WorkerState state) { return Lower(v1::WorkerState_Name(state)); }

std::string WorkerStateText(const v1::Worker& worker) {
  // Connected, a drained worker is DRAINING; gone, the drain still holds.
  if (worker.draining() && worker.state() == v1::LOST) return "lost/draining";
  return WorkerStateName(worker.state());
}

std::string DescribeRun(const v1::Run& run) {
  const v1::RunSpec& s = run.spec();
  return absl::StrFormat("%s %s/%s %d ranks %s %s sync=%s", s.operation(),
                         s.backend().empty() ? "mpi" : s.backend(), MpiName(s.mpi()), s.ranks(),
                         PlacementName(s.placement()), TransportText(run),
                         SyncOf(run));
}

std::string FormatRunList(const std::vector<v1::Run>& runs) {
  std::string out = absl::StrFormat("%-28s %-10s %-14s %-16s %5s %-8s %9s %-19s %s\n", "RUN",
                                    "STATE", "OPERATION", "BACKEND/MPI", "RANKS", "PLACE",
                                    "SIZES", "CREATED", "ERROR");
  for (const v1::Run& run : runs) {
    const v1::RunSpec& s = run.spec();
    absl::StrAppendFormat(&out, "%-28s %-10s %-14s %-16s %5d %-8s %4d/%-4d %-19s %s\n",
                          run.name(), RunStateName(run.state()), s.operation(),
                          absl::StrCat(s.backend().empty() ? "mpi" : s.backend(), "/",
                                       MpiName(s.mpi())),
                          s.ranks(), PlacementName(s.placement()), run.sizes_done(),
                          run.sizes_total(), TimeText(run.create_time()),
                          OrDash(run.error().empty() ? run.waiting_reason() : run.error()));
  }
  return out;
}

std::string FormatWorkerList(const std::vector<v1::Worker>& workers) {
  std::string out =
      absl::StrFormat("%-24s %-13s %-20s %-16s %5s %5s %9s %4s %-10s %-10s %s\n", "WORKER",
                      "STATE", "HOSTNAME", "HOST ID", "SLOTS", "CPUS", "MEMORY", "GPUS",
                      "CONTAINER", "IPC", "RUN");
  for (const v1::Worker& w : workers) {
    const v1::Inventory& inv = w.inventory();
    const uint64_t ipc = inv.container().namespaces().ipc();
    absl::StrAppendFormat(&out, "%-24s %-13s %-20s %-16s %5d %5d %8.1fG %4d %-10s %-10s %s\n",
                          w.name(), WorkerStateText(w), inv.hostname(),
                          inv.host_id().substr(0, 16), w.slots(), inv.cpus(),
                          inv.memory_bytes() / double(1 << 30), inv.gpus_size(),
                          ContainerLabel(inv.container()), ipc == 0 ? "-" : absl::StrCat(ipc),
                          OrDash(w.current_run()));
  }
  // Why each quarantined worker is: the hunt's verdict and its evidence.
  for (const v1::Worker& w : workers) {
    if (!w.has_suspect()) continue;
    absl::StrAppendFormat(&out, "%s: SUSPECT since %s (%s): %s\n", w.name(),
                          TimeText(w.suspect().time()), w.suspect().hunt(),
                          w.suspect().reason());
  }
  return out;
}

namespace {

std::string LimitText(const v1::ResultReferences& references) {
  if (references.limit_ratio() <= 0) return "-";
  return absl::StrFormat("%.0f%%", references.limit_ratio() * 100);
}

std::string ExpectedText(const v1::ResultReferences& references) {
  if (references.expected_ratio() <= 0) return "-";
  return absl::StrFormat("%.0f%% %s", references.expected_ratio() * 100,
                         references.expected_verdict());
}

}  // namespace

std::string ResultHeader() {
  return absl::StrFormat("%12s %9s %6s %10s %10s %10s %10s %11s %11s %7s %20s %8s %6s %-16s\n",
                         "bytes", "type", "redop", "avg_us", "p50_us", "p99_us", "max_us",
                         "algbw_GBps", "busbw_GBps", "wrong", "slowest", "vs_med", "%limit",
                         "%expected");
}

std::string FormatResultRow(const v1::SizeResult& r) {
  const SizeRecord ranks = RankView(r);
  return absl::StrFormat(
      "%12d %9s %6s %10.2f %10.2f %10.2f %10.2f %11.3f %11.3f %7s %20s %8s %6s %-16s\n", r.bytes(),
      r.dtype(), r.redop().empty() ? "-" : r.redop(), r.avg_s() * kUs, r.p50_s() * kUs,
      r.p99_s() * kUs, r.max_s() * kUs, r.algbw_bytes_per_s() / kGB, r.busbw_bytes_per_s() / kGB,
      r.checked() ? absl::StrCat(r.wrong()) : "N/A", SlowestRankText(ranks),
      SlowestVsMedianText(ranks), LimitText(r.references()), ExpectedText(r.references()));
}

std::string SyncMismatchWarning(const std::vector<RunWithResults>& runs) {
  std::vector<std::string> modes;
  bool differ = false;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string sync = SyncOf(runs[i].run);
    differ = differ || sync != SyncOf(runs[0].run);
    modes.push_back(absl::StrCat("[", i, "] ", sync));
  }
  if (!differ) return "";
  return absl::StrCat(
      "WARNING: these runs differ in iteration synchronization (", absl::StrJoin(modes, ", "),
      "): barrier times one isolated operation, none lets iterations overlap, so their "
      "ratios mix two methods and say nothing about the configurations alone");
}

namespace {

// The engine's size record (collbench-rank --format jsonl), with the run
// and the sequence: one schema for both. Only the histogram can fail to
// convert; one that does is left out rather than the result.
std::string StoredJsonLine(const v1::Run& run, const v1::SizeResult& r) {
  absl::StatusOr<SizeRecord> record = SizeRecordFromResult(r);
  if (!record.ok()) {
    v1::SizeResult without = r;
    without.clear_histogram();
    record = SizeRecordFromResult(without);  // an unset histogram always converts
  }
  std::string line = ToStoredJsonLine(*record, run.name(), r.sequence());
  // The engine's record knows nothing of references: the coordinator's
  // ResultReferences go in as one more member, in the API's JSON names.
  if (r.has_references() && !line.empty() && line.back() == '}') {
    std::string references;
    if (google::protobuf::util::MessageToJsonString(r.references(), &references).ok()) {
      line.insert(line.size() - 1, absl::StrCat(",\"references\":", references));
    }
  }
  return line;
}

}  // namespace

std::string FormatRunResults(const v1::Run& run, const std::vector<v1::SizeResult>& results,
                             OutputKind kind) {
  std::string out;
  if (kind == OutputKind::kJsonl) {
    for (const v1::SizeResult& r : results) absl::StrAppend(&out, StoredJsonLine(run, r), "\n");
    return out;
  }
  if (kind == OutputKind::kCsv) {
    out = "run,operation,bytes,count,dtype,redop,iters,avg_s,min_s,max_s,p50_s,p90_s,p99_s,"
          "algbw_Bps,busbw_Bps,wrong,sync,slowest_rank,slowest_vs_median,straggler\n";
    for (const v1::SizeResult& r : results) {
      const SizeRecord ranks = RankView(r);
      absl::StrAppendFormat(
          &out, "%s,%s,%d,%d,%s,%s,%d,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.6g,%.6g,%d,%s,%d,%.4g,%d\n",
          run.name(), r.operation(), r.bytes(), r.count(), r.dtype(), r.redop(), r.iters(),
          r.avg_s(), r.min_s(), r.max_s(), r.p50_s(), r.p90_s(), r.p99_s(),
          r.algbw_bytes_per_s(), r.busbw_bytes_per_s(), r.wrong(), IterationSyncText(r.sync()),
          ranks.slowest_rank, r.slowest_vs_median(), SlowestIsStraggler(ranks) ? 1 : 0);
    }
    return out;
  }
  out = absl::StrFormat("# %s: %s, %s\n", run.name(), DescribeRun(run), RunStateText(run));
  absl::StrAppend(&out, "# sync ", SyncOf(run), ": ", IterationSyncMeaning(SyncOf(run)), "\n");
  if (!run.mpi_version().empty()) absl::StrAppend(&out, "# ", run.mpi_version(), "\n");
  if (const std::string placement = DescribePlacement(run); !placement.empty()) {
    absl::StrAppend(&out, "# placement: ", placement, "\n", FormatRankHosts(run));
  }
  if (absl::StartsWith(run.launcher(), "launchers/")) {
    absl::StrAppend(&out, "# launched by ", run.launcher(), " (the trusted launcher)\n");
  } else if (!run.launcher().empty()) {
    absl::StrAppend(&out, "# launched by ", run.launcher(),
                    run.hosts_size() > 1 ? " (a worker of the run: --worker-launch=fallback)"
                                         : " (its one worker)",
                    "\n");
  }
  if (!run.error().empty()) absl::StrAppend(&out, "# error: ", run.error(), "\n");
  absl::StrAppend(&out, ResultHeader());
  int stragglers = 0;
  for (const v1::SizeResult& r : results) {
    absl::StrAppend(&out, FormatResultRow(r));
    stragglers += SlowestIsStraggler(RankView(r)) ? 1 : 0;
  }
  if (stragglers > 0) absl::StrAppend(&out, StragglerNote(stragglers));
  return out;
}

namespace {

using ComparisonRows = std::map<Key, std::vector<const v1::SizeResult*>>;

// Per (operation, dtype, redop, bytes): each run's result, null where absent.
ComparisonRows MatchRows(const std::vector<RunWithResults>& runs) {
  ComparisonRows rows;
  for (size_t i = 0; i < runs.size(); ++i) {
    for (const v1::SizeResult& r : runs[i].results) {
      auto& row = rows[KeyOf(r)];
      row.resize(runs.size(), nullptr);
      row[i] = &r;
    }
  }
  return rows;
}

// Long form, one line per run and size, every run named: the ratio to the
// first run as a number (empty where either is absent) and fastest = 1 on
// the run whose win at that size is significant.
std::string ComparisonCsv(const std::vector<RunWithResults>& runs, const ComparisonRows& rows) {
  std::string out = "run,operation,dtype,redop,bytes,avg_us,ratio_to_first,fastest\n";
  for (const auto& [key, row] : rows) {
    const int fastest = SignificantFastest(row);
    for (size_t i = 0; i < row.size(); ++i) {
      const v1::SizeResult* r = row[i];
      if (r == nullptr) continue;
      const std::string ratio = row[0] != nullptr && row[0]->avg_s() > 0
                                    ? absl::StrFormat("%.6g", r->avg_s() / row[0]->avg_s())
                                    : "";
      absl::StrAppendFormat(&out, "%s,%s,%s,%s,%d,%.6g,%s,%d\n", runs[i].run.name(),
                            std::get<0>(key), std::get<1>(key), std::get<2>(key),
                            std::get<3>(key), r->avg_s() * kUs, ratio,
                            static_cast<int>(i) == fastest ? 1 : 0);
    }
  }
  return out;
}

std::string ComparisonTable(const std::vector<RunWithResults>& runs, const ComparisonRows& rows) {
  std::vector<std::string> header = {"operation", "dtype", "bytes"};
  for (size_t i = 0; i < runs.size(); ++i) {
    header.push_back(absl::StrCat("[", i, "]_avg_us"));
    if (i > 0) header.push_back(absl::StrCat("[", i, "]/[0]"));
  }
  header.push_back("fastest");
  std::vector<std::vector<std::string>> table = {header};
  for (const auto& [key, row] : rows) {
    std::vector<std::string> cells = {std::get<0>(key), std::get<1>(key),
                                      absl::StrCat(std::get<3>(key))};
    for (size_t i = 0; i < row.size(); ++i) {
      const v1::SizeResult* r = row[i];
      cells.push_back(r ? absl::StrFormat("%.2f", r->avg_s() * kUs) : "-");
      if (i > 0) {
        cells.push_back(r && row[0] && row[0]->avg_s() > 0
                            ? absl::StrFormat("%.2fx", r->avg_s() / row[0]->avg_s())
                            : "-");
      }
    }
    const int fastest = SignificantFastest(row);
    cells.push_back(fastest < 0 ? "~" : absl::StrCat("[", fastest, "]"));
    table.push_back(std::move(cells));
  }
  return AlignColumns(table);
}

}  // namespace

std::string FormatComparison(const std::vector<RunWithResults>& runs, OutputKind kind) {
  const ComparisonRows rows = MatchRows(runs);
  if (kind == OutputKind::kCsv) return ComparisonCsv(runs, rows);
  std::string out;
  if (const std::string warning = SyncMismatchWarning(runs); !warning.empty()) {
    absl::StrAppend(&out, "# ", warning, "\n");
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    absl::StrAppendFormat(&out, "# [%d] %s: %s\n", i, runs[i].run.name(),
                          DescribeRun(runs[i].run));
    if (const std::string placement = DescribePlacement(runs[i].run); !placement.empty()) {
      absl::StrAppendFormat(&out, "#     placement: %s\n", placement);
    }
  }
  absl::StrAppend(&out, "# ", kFastestLegend, "\n");
  return out + ComparisonTable(runs, rows);
}

}  // namespace collbench
