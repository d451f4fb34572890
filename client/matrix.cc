// `collbench matrix`: one run per combination of operation x placement x
// transport x MPI library, each waited for in turn, then a table in the
// spirit of the best/worst tables of the studies collbench grew out of:
// for every operation and size, the fastest and slowest configuration and
// how far apart they are.
#include "client/matrix.h"

#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/run_flags.h"
#include "flavors/registry.h"

namespace collbench {
namespace {

struct Cell {
  std::string config;
  double avg_s = 0;
};

std::vector<std::string> List(const std::string& text) {
  return absl::StrSplit(text, ',', absl::SkipEmpty());
}

std::string Config(const std::string& placement, const std::string& transport,
                   const std::string& mpi) {
  return absl::StrCat(mpi, "/", placement, "/", transport);
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
  // Check every combination parses before anything runs.
  for (const auto& op : plan.operations) {
    for (const auto& placement : plan.placements) {
      for (const auto& transport : plan.transports) {
        for (const auto& mpi : plan.mpis) {
          absl::StatusOr<RunRequest> request = ParseRunFlags(plan.FlagsFor(op, placement, transport, mpi));
          if (!request.ok()) return request.status();
        }
      }
    }
  }
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
      cells[{r.operation(), r.dtype(), r.bytes()}].push_back({run.config, r.avg_s()});
    }
  }
  std::string out = absl::StrFormat("%-10s %10s  %-24s %10s  %-24s %10s %8s\n", "operation",
                                    "bytes", "fastest", "avg_us", "slowest", "avg_us", "ratio");
  for (const auto& [key, list] : cells) {
    const Cell* best = &list[0];
    const Cell* worst = &list[0];
    for (const Cell& c : list) {
      if (c.avg_s < best->avg_s) best = &c;
      if (c.avg_s > worst->avg_s) worst = &c;
    }
    absl::StrAppendFormat(&out, "%-10s %10d  %-24s %10.2f  %-24s %10.2f %7.2fx\n",
                          std::get<0>(key), std::get<2>(key), best->config, best->avg_s * 1e6,
                          worst->config, worst->avg_s * 1e6,
                          best->avg_s > 0 ? worst->avg_s / best->avg_s : 0.0);
  }
  return out;
}

std::string MatrixConfig(const std::string& placement, const std::string& transport,
                         const std::string& mpi) {
  return Config(placement, transport, mpi);
}

}  // namespace collbench
