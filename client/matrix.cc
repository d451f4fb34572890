// `collbench matrix`: one run per combination of operation x placement x
// transport x MPI library, each waited for in turn, then a table in the
// spirit of the best/worst tables of the studies collbench grew out of:
// for every operation and size, the fastest and slowest configuration and
// how far apart they are.
#include "client/matrix.h"

#include <array>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "analysis/run_set.h"
#include "api/validation.h"
#include "client/format.h"
#include "client/run_flags.h"
#include "common/status_macros.h"
#include "flavors/registry.h"

namespace collbench {
namespace {

struct Cell {
  std::string config;
  const v1::SizeResult* result = nullptr;
};

std::vector<std::string> List(const std::string& text) {
  return absl::StrSplit(text, ',', absl::SkipEmpty());
}

std::string Config(const std::string& placement, const std::string& transport,
                   const std::string& mpi) {
  return absl::StrCat(mpi, "/", placement, "/", transport);
}

using CellKey = std::array<std::string, 4>;  // operation, placement, transport, MPI

// Each combination's verdict from the checks that need no workers: the run
// flags parse, and the spec passes ValidateRunSpec with no fleet facts.
std::map<CellKey, absl::Status> CheckCells(const MatrixPlan& plan) {
  std::map<CellKey, absl::Status> verdicts;
  for (const auto& op : plan.operations) {
    for (const auto& placement : plan.placements) {
      for (const auto& transport : plan.transports) {
        for (const auto& mpi : plan.mpis) {
          absl::StatusOr<RunRequest> request =
              ParseRunFlags(plan.FlagsFor(op, placement, transport, mpi));
          verdicts[{op, placement, transport, mpi}] =
              request.ok() ? ValidateRunSpec(request->spec, ValidationLimits()) : request.status();
        }
      }
    }
  }
  return verdicts;
}

// A list value that no combination can run (a misspelled operation, an
// option no cell can take) refuses the matrix whole, naming the flag, the
// value and why, before anything runs. A value that fails only in some
// combinations (Open MPI's SHM across workers) leaves those cells to be
// skipped, each with its reason, while the others run.
absl::Status CheckEveryValue(const MatrixPlan& plan) {
  const std::map<CellKey, absl::Status> verdicts = CheckCells(plan);
  const std::array<std::pair<const char*, const std::vector<std::string>*>, 4> lists = {{
      {"--operations", &plan.operations},
      {"--placements", &plan.placements},
      {"--transports", &plan.transports},
      {"--mpis", &plan.mpis},
  }};
  for (size_t axis = 0; axis < lists.size(); ++axis) {
    for (const std::string& value : *lists[axis].second) {
      const absl::Status* first_refusal = nullptr;
      bool runs_somewhere = false;
      for (const auto& [cell, status] : verdicts) {
        if (cell[axis] != value) continue;
        runs_somewhere = runs_somewhere || status.ok();
        if (!status.ok() && first_refusal == nullptr) first_refusal = &status;
      }
      if (!runs_somewhere && first_refusal != nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(lists[axis].first, ": '", value,
                                                       "' fits no combination: ",
                                                       first_refusal->message()));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> DefaultMatrixMpis() { return {std::string(Flavors().Default().name())}; }

absl::StatusOr<MatrixPlan> ParseMatrixFlags(const std::vector<std::string>& args) {
  MatrixPlan plan;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    auto take = [&](std::vector<std::string>* into) -> absl::Status {
      if (i + 1 >= args.size()) return absl::InvalidArgumentError(arg + " needs a value");
      *into = List(args[++i]);
      return absl::OkStatus();
    };
    absl::Status s;
    if (arg == "--operations") s = take(&plan.operations);
    else if (arg == "--placements") s = take(&plan.placements);
    else if (arg == "--transports") s = take(&plan.transports);
    else if (arg == "--mpis") s = take(&plan.mpis);
    else rest.push_back(arg);
    if (!s.ok()) return s;
  }
  plan.common_flags = rest;
  RETURN_IF_ERROR(CheckEveryValue(plan));
  return plan;
}

std::vector<std::string> MatrixPlan::FlagsFor(const std::string& op, const std::string& placement,
                                              const std::string& transport,
                                              const std::string& mpi) const {
  std::vector<std::string> flags = {op, "--placement", placement, "--transport", transport,
                                    "--mpi", mpi};
  flags.insert(flags.end(), common_flags.begin(), common_flags.end());
  return flags;
}

int MatrixPlan::size() const {
  return static_cast<int>(operations.size() * placements.size() * transports.size() * mpis.size());
}

std::string FormatBestWorst(const std::vector<MatrixRun>& runs) {
  using Key = std::tuple<std::string, std::string, uint64_t>;  // op, dtype, bytes
  std::map<Key, std::vector<Cell>> cells;
  for (const MatrixRun& run : runs) {
    for (const v1::SizeResult& r : run.results) {
      cells[{r.operation(), r.dtype(), r.bytes()}].push_back({run.config, &r});
    }
  }
  std::string out = absl::StrCat("# ", kFastestLegend, "\n");
  absl::StrAppendFormat(&out, "%-10s %10s  %-24s %10s  %-24s %10s %8s\n", "operation", "bytes",
                        "fastest", "avg_us", "slowest", "avg_us", "ratio");
  for (const auto& [key, list] : cells) {
    std::vector<const v1::SizeResult*> results;
    for (const Cell& c : list) results.push_back(c.result);
    const Cell* best = &list[0];
    const Cell* worst = &list[0];
    for (const Cell& c : list) {
      if (c.result->avg_s() < best->result->avg_s()) best = &c;
      if (c.result->avg_s() > worst->result->avg_s()) worst = &c;
    }
    // The lowest mean is always shown; its name only where the win is significant.
    const std::string fastest = SignificantFastest(results) < 0 ? "~" : best->config;
    const double best_s = best->result->avg_s(), worst_s = worst->result->avg_s();
    absl::StrAppendFormat(&out, "%-10s %10d  %-24s %10.2f  %-24s %10.2f %7.2fx\n",
                          std::get<0>(key), std::get<2>(key), fastest, best_s * 1e6,
                          worst->config, worst_s * 1e6, best_s > 0 ? worst_s / best_s : 0.0);
  }
  return out;
}

std::string MatrixConfig(const std::string& placement, const std::string& transport,
                         const std::string& mpi) {
  return Config(placement, transport, mpi);
}

}  // namespace collbench
