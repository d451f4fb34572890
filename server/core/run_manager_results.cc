// SPDX-License-Identifier: Apache-2.0
// RunManager: the result path. OnResult checks a result and queues it for
// the ResultWriter; OnResultsStored, on the writer's thread once a batch is
// durable, publishes it and acknowledges it to its launcher.
#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "api/convert.h"
#include "api/result_bounds.h"
#include "server/core/run_manager.h"

namespace collbench {

void RunManager::OnResult(const std::string& worker, const v1::RunResult& message,
                          absl::Time now) {
  absl::MutexLock lock(&mu_);
  const v1::SizeResult& result = message.result();
  LiveRun* live = FindLiveLocked(message.run());
  if (live == nullptr) {
    OnResultOfEndedRunLocked(worker, message);
    return;
  }
  if (live->run.launcher() != worker) {
    RefuseMessageLocked(worker, message.run(), "result_not_launcher");
    return;
  }
  if (live->max_results < 0) live->max_results = BoundsOfSpec(live->run.spec()).max_results;
  if (result.sequence() < 0 || result.sequence() >= live->max_results) {
    // Not stored and not acknowledged: no real run reports it.
    RefuseMessageLocked(worker, message.run(), "results_beyond_spec");
    return;
  }
  // Stored already (a re-send after a reconnect): acknowledged at once.
  if (result.sequence() <= live->stored_through || live->stored_ahead.count(result.sequence())) {
    SendAckLocked(worker, live->run.name(), live->stored_through);
    return;
  }
  if (!live->path.has_value()) {
    std::map<std::string, std::shared_ptr<const v1::Inventory>> held;
    for (const v1::RankHost& host : live->run.hosts()) held[host.worker()] = InventoryOf(host.worker());
    auto inventory = [&held](const std::string& name) -> const v1::Inventory* {
      auto it = held.find(name);
      return it == held.end() ? nullptr : it->second.get();
    };
    live->path = PathFactsOf(live->run, inventory);
    live->run_class = RunClassOf(live->run, inventory);
  }
  v1::SizeResult annotated = result;
  *annotated.mutable_references() =
      ReferencesOf(*live->path, live->run_class, result,
                   options_.references ? *options_.references : ReferenceTable::Embedded());
  writer_->Submit({worker, {live->run.name(), std::move(annotated)}, now});
}

void RunManager::OnResultOfEndedRunLocked(const std::string& worker,
                                          const v1::RunResult& message) {
  absl::StatusOr<v1::Run> stored = store_->GetRun(message.run());
  if (absl::IsNotFound(stored.status())) {
    // Deleted (or never known): nothing will ever store it, so the sender
    // may drop it rather than re-send it after every reconnect. Only its
    // own spool is affected.
    SendAckLocked(worker, message.run(), message.result().sequence());
    return;
  }
  if (!stored.ok()) return;
  if (stored->launcher() != worker) {
    // A finished run's launcher re-sending after a reconnect is acked; no
    // other worker is.
    RefuseMessageLocked(worker, message.run(), "result_not_launcher");
    return;
  }
  SendAckLocked(worker, message.run(), message.result().sequence());
}

void RunManager::OnResultsStored(const ResultWriter::Batch& batch,
                                 const absl::StatusOr<std::vector<bool>>& inserted) {
  // A failed write stored none of the batch: nothing is acknowledged, the
  // launchers keep the results and send them again (the writer logged it).
  if (!inserted.ok()) return;
  absl::MutexLock lock(&mu_);
  // One ack per (worker, run) of the batch, for the latest stored sequence.
  std::map<std::pair<std::string, std::string>, int64_t> acks;
  std::map<std::string, absl::Time> touched;  // live runs, by name
  for (size_t i = 0; i < batch.rows.size(); ++i) {
    const Store::ResultRow& row = batch.rows[i];
    const int64_t sequence = row.result.sequence();
    int64_t& ack = acks.try_emplace({batch.workers[i], row.run}, -1).first->second;
    LiveRun* live = FindLiveLocked(row.run);
    if (live == nullptr) {  // ended meanwhile (cancelled, failed): stored all the same
      ack = std::max(ack, sequence);
      continue;
    }
    if ((*inserted)[i]) PublishResultLocked(*live, row.result, batch.received[i]);
    // A reconnect's re-sends interleave with new results, so they can come
    // out of order: advance over every stored one that is contiguous now.
    if (sequence > live->stored_through) live->stored_ahead.insert(sequence);
    while (!live->stored_ahead.empty() &&
           *live->stored_ahead.begin() <= live->stored_through + 1) {
      live->stored_through = std::max(live->stored_through, *live->stored_ahead.begin());
      live->stored_ahead.erase(live->stored_ahead.begin());
    }
    ack = live->stored_through;
    touched[row.run] = batch.received[i];
  }
  for (const auto& [to, sequence] : acks) {
    if (sequence >= 0) SendAckLocked(to.first, to.second, sequence);
  }
  for (const auto& [name, now] : touched) {
    if (LiveRun* live = FindLiveLocked(name)) FinishIfCompleteLocked(*live, now);
  }
}

void RunManager::PublishResultLocked(LiveRun& live, const v1::SizeResult& result,
                                     absl::Time now) {
  live.run.set_sizes_done(live.run.sizes_done() + 1);
  live.run.set_wrong(live.run.wrong() + result.wrong());
  v1::RunEvent event;
  event.set_run(live.run.name());
  *event.mutable_time() = TimestampFromTime(now);
  *event.mutable_result() = result;
  hub_->Publish(event);
  event.mutable_progress()->set_sizes_done(live.run.sizes_done());
  event.mutable_progress()->set_sizes_total(live.run.sizes_total());
  hub_->Publish(event);
}

void RunManager::SendAckLocked(const std::string& worker, const std::string& run,
                               int64_t sequence) {
  v1::CoordinatorMessage ack;
  ack.mutable_ack()->set_run(run);
  ack.mutable_ack()->set_sequence(sequence);
  link_->Send(worker, ack);
}

void RunManager::FlushResults() { writer_->Flush(); }

ResultWriter::Stats RunManager::result_writer_stats() { return writer_->stats(); }

}  // namespace collbench
