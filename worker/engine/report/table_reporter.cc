// SPDX-License-Identifier: Apache-2.0
// The human table: one header, one row per size, columns like nccl-tests
// plus percentiles and the slowest rank (rank@host and its mean over the
// median rank's, "!" when it is a straggler). Scenario numbers become extra
// columns, named after the keys of the first record that carries them. The
// end has nccl-tests' summary line, "# Avg bus bandwidth    : X" in GB/s,
// which scripts written for nccl-tests read as the last field.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/rank_spread.h"
#include "worker/engine/report/reporter.h"

namespace collbench {
namespace {

constexpr double kUs = 1e6;
constexpr double kGB = 1e9;

class TableReporter final : public Reporter {
 public:
  explicit TableReporter(std::FILE* out) : out_(out) {}

  void Start(const StartRecord& r) override {
    absl::FPrintF(out_, "# collbench-rank %s: %d ranks on %d hosts, %s\n",
                  Spec(r, "operation"), r.nranks, DistinctHosts(r), FirstLine(r.mpi_version));
    absl::FPrintF(out_, "# backend %s, memory %s, dtype %s, check %s, iters %s, warmup %s, %s%s\n",
                  Spec(r, "backend"), Spec(r, "memory"), Spec(r, "dtype"), Spec(r, "check"),
                  Spec(r, "iters"), Spec(r, "warmup"),
                  r.spec.count("in_place") > 0 ? "in-place" : "out-of-place",
                  r.nccl_version.empty() ? "" : ", " + r.nccl_version);
    absl::FPrintF(out_, "# sync %s: %s\n", Spec(r, "sync"), IterationSyncMeaning(Spec(r, "sync")));
    std::fflush(out_);
  }

  void Size(const SizeRecord& r) override {
    if (!header_printed_) PrintHeader(r);
    absl::FPrintF(out_, "%12d %12d %9s %6s %5s %10.2f %10.2f %10.2f %10.2f %10.2f %11.3f %11.3f %7s",
                  r.bytes, r.count, r.dtype, r.redop.empty() ? "-" : r.redop,
                  r.root < 0 ? "-" : absl::StrCat(r.root), r.avg_s * kUs, r.p50_s * kUs,
                  r.p99_s * kUs, r.min_s * kUs, r.max_s * kUs, r.algbw_Bps / kGB,
                  r.busbw_Bps / kGB, r.checked ? absl::StrCat(r.wrong) : "N/A");
    absl::FPrintF(out_, " %20s %8s", SlowestRankText(r), SlowestVsMedianText(r));
    stragglers_ += SlowestIsStraggler(r) ? 1 : 0;
    for (const std::string& key : scenario_keys_) {
      auto it = r.scenario.find(key);
      absl::FPrintF(out_, " %12s", it == r.scenario.end() ? "-" : absl::StrFormat("%.4g", it->second));
    }
    absl::FPrintF(out_, "\n");
    std::fflush(out_);
  }

  void End(const EndRecord& r) override {
    if (stragglers_ > 0) absl::FPrintF(out_, "%s", StragglerNote(stragglers_));
    if (r.avg_busbw_Bps > 0) {
      absl::FPrintF(out_, "# Avg bus bandwidth    : %g\n", r.avg_busbw_Bps / kGB);
    }
    absl::FPrintF(out_, "# %s: %d sizes, %d wrong, %.2f s\n", r.status, r.sizes, r.wrong,
                  r.elapsed_s);
    std::fflush(out_);
  }

  void Error(const ErrorRecord& r) override {
    absl::FPrintF(out_, "# error: %s\n", r.message);
    std::fflush(out_);
  }

 private:
  static std::string Spec(const StartRecord& r, const std::string& key) {
    auto it = r.spec.find(key);
    return it == r.spec.end() ? "?" : it->second;
  }
  static std::string FirstLine(const std::string& text) {
    return text.substr(0, text.find_first_of("\n,"));
  }
  static int DistinctHosts(const StartRecord& r) {
    std::vector<std::string> hosts = r.hosts;
    std::sort(hosts.begin(), hosts.end());
    return static_cast<int>(std::unique(hosts.begin(), hosts.end()) - hosts.begin());
  }

  void PrintHeader(const SizeRecord& first) {
    for (const auto& [key, value] : first.scenario) scenario_keys_.push_back(key);
    absl::FPrintF(out_, "%12s %12s %9s %6s %5s %10s %10s %10s %10s %10s %11s %11s %7s",
                  "bytes", "count", "type", "redop", "root", "avg_us", "p50_us", "p99_us",
                  "min_us", "max_us", "algbw_GBps", "busbw_GBps", "wrong");
    absl::FPrintF(out_, " %20s %8s", "slowest", "vs_med");
    for (const std::string& key : scenario_keys_) absl::FPrintF(out_, " %12s", key);
    absl::FPrintF(out_, "\n");
    header_printed_ = true;
  }

  std::FILE* out_;
  bool header_printed_ = false;
  int stragglers_ = 0;
  std::vector<std::string> scenario_keys_;
};

}  // namespace

std::unique_ptr<Reporter> NewTableReporter(std::FILE* out) {
  return std::make_unique<TableReporter>(out);
}

std::unique_ptr<Reporter> NewReporter(OutputFormat format, std::FILE* out) {
  return format == OutputFormat::kJsonl ? NewJsonlReporter(out) : NewTableReporter(out);
}

}  // namespace collbench
