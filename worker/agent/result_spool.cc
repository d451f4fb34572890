// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/result_spool.h"

#include <iterator>

#include "absl/strings/str_cat.h"
#include "api/convert.h"

namespace collbench {

absl::StatusOr<v1::RunResult> ResultSpool::AddResult(const std::string& run,
                                                     v1::SizeResult result) {
  absl::MutexLock lock(&mu_);
  if (unacked_ >= max_unacked_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "result spool full: ", unacked_, " results not yet acknowledged by the coordinator"));
  }
  RunEntry& entry = runs_[run];
  result.set_sequence(entry.next_sequence++);
  entry.unacked[result.sequence()] = result;
  ++unacked_;
  v1::RunResult message;
  message.set_run(run);
  *message.mutable_result() = std::move(result);
  return message;
}

v1::RunStatus ResultSpool::SetStatus(const std::string& run, v1::RunStatus status) {
  absl::MutexLock lock(&mu_);
  RunEntry& entry = runs_[run];
  status.set_run(run);
  status.set_results_total(entry.next_sequence);
  entry.status = status;
  return status;
}

void ResultSpool::Ack(const std::string& run, int64_t sequence) {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(run);
  if (it == runs_.end()) return;
  RunEntry& entry = it->second;
  if (sequence <= entry.acked_through) return;
  entry.acked_through = sequence;
  auto end = entry.unacked.upper_bound(sequence);
  unacked_ -= std::distance(entry.unacked.begin(), end);
  entry.unacked.erase(entry.unacked.begin(), end);
}

void ResultSpool::Release(const std::string& run) {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(run);
  if (it == runs_.end()) return;
  unacked_ -= it->second.unacked.size();
  runs_.erase(it);
}

std::vector<v1::WorkerMessage> ResultSpool::Pending() const {
  absl::MutexLock lock(&mu_);
  std::vector<v1::WorkerMessage> out;
  for (const auto& [run, entry] : runs_) {
    for (const auto& [sequence, result] : entry.unacked) {
      v1::WorkerMessage message;
      message.mutable_result()->set_run(run);
      *message.mutable_result()->mutable_result() = result;
      out.push_back(std::move(message));
    }
    if (entry.status.has_value()) {
      v1::WorkerMessage message;
      *message.mutable_run_status() = *entry.status;
      out.push_back(std::move(message));
    }
  }
  return out;
}

std::vector<std::string> ResultSpool::ActiveRuns() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [run, entry] : runs_) {
    if (!entry.status.has_value() || !IsFinalRunState(entry.status->state()) || !entry.unacked.empty()) {
      out.push_back(run);
    }
  }
  return out;
}

size_t ResultSpool::UnackedCount() const {
  absl::MutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& [run, entry] : runs_) n += entry.unacked.size();
  return n;
}

}  // namespace collbench
