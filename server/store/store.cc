// SPDX-License-Identifier: Apache-2.0
// The single writes of Store, each a batch of one (Store::Commit).
#include "server/store/store.h"

#include <utility>

#include "common/status_macros.h"

namespace collbench {

absl::Status Store::CommitOne(Write write) {
  std::vector<Write> batch;
  batch.push_back(std::move(write));
  return Commit(batch).status();
}

absl::StatusOr<std::vector<bool>> Store::AddResults(const std::vector<ResultRow>& rows) {
  std::vector<Write> batch;
  batch.push_back(AddResultsWrite{rows});
  ASSIGN_OR_RETURN(std::vector<WriteResult> results, Commit(batch));
  return std::move(results.front().inserted);
}

}  // namespace collbench
