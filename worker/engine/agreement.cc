// SPDX-License-Identifier: Apache-2.0
#include "worker/engine/agreement.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "worker/engine/communicator.h"

namespace collbench {
namespace {

constexpr char kAgreedPayload[] = "collbench.agreed";

// Rank 0's view: the distinct messages with the ranks that sent them.
absl::Status Combine(const std::vector<std::string>& reports, int nranks) {
  std::map<std::string, std::vector<int>> ranks_by_message;
  absl::StatusCode code = absl::StatusCode::kAborted;
  bool first = true;
  for (int rank = 0; rank < static_cast<int>(reports.size()); ++rank) {
    const std::string& report = reports[rank];
    if (report.empty()) continue;
    const size_t bar = report.find('|');
    int raw_code = 0;
    if (first && absl::SimpleAtoi(report.substr(0, bar), &raw_code)) {
      code = static_cast<absl::StatusCode>(raw_code);
      first = false;
    }
    ranks_by_message[report.substr(bar + 1)].push_back(rank);
  }
  std::vector<std::string> lines;
  for (const auto& [message, ranks] : ranks_by_message) {
    if (static_cast<int>(ranks.size()) == nranks) {
      lines.push_back(message);
    } else {
      lines.push_back(absl::StrCat(ranks.size() == 1 ? "rank " : "ranks ",
                                   absl::StrJoin(ranks, ","), ": ", message));
    }
  }
  return absl::Status(code, absl::StrJoin(lines, "; "));
}

}  // namespace

absl::Status AgreeOnStatus(Communicator& comm, const absl::Status& local) {
  ASSIGN_OR_RETURN(bool all_ok, comm.AllOk(local.ok()));
  if (all_ok) return absl::OkStatus();
  const std::string report =
      local.ok() ? "" : absl::StrCat(static_cast<int>(local.code()), "|", local.message());
  ASSIGN_OR_RETURN(std::vector<std::string> reports, comm.GatherStrings(report));
  // Every rank learns the lowest failing rank's code, so all exit alike.
  std::vector<double> first = {local.ok() ? 1e18 : comm.rank() * 64.0 + static_cast<int>(local.code())};
  RETURN_IF_ERROR(comm.AllreduceMin(&first));
  const auto code = static_cast<absl::StatusCode>(static_cast<int64_t>(first[0]) % 64);
  if (comm.rank() != 0) {
    return MarkAgreed(local.ok() ? absl::Status(code, "another rank failed") : local);
  }
  return MarkAgreed(Combine(reports, comm.size()));
}

absl::Status MarkAgreed(absl::Status status) {
  if (!status.ok()) status.SetPayload(kAgreedPayload, absl::Cord("1"));
  return status;
}

bool IsAgreed(const absl::Status& status) {
  return status.GetPayload(kAgreedPayload).has_value();
}

}  // namespace collbench
