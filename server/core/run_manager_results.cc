// SPDX-License-Identifier: Apache-2.0
// RunManager: the result path and the journal's reports. OnResult checks a
// result and appends it; OnCommitted, on the journal thread once a
// transaction is durable, publishes what it stored (runs, their state
// changes, results), acknowledges results to their launchers and finishes
// the runs that are complete now.
#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/convert.h"
#include "api/result_bounds.h"
#include "common/log.h"
#include "server/core/live_run.h"
#include "server/core/no_io_lock.h"
#include "server/core/run_manager.h"

namespace collbench {
namespace {

void SendAck(WorkerLink* link, const std::string& worker, const std::string& run,
             int64_t sequence) {
  v1::CoordinatorMessage ack;
  ack.mutable_ack()->set_run(run);
  ack.mutable_ack()->set_sequence(sequence);
  link->Send(worker, ack);
}


}  // namespace

void RunManager::OnResult(const std::string& worker, v1::RunResult message, absl::Time now) {
  {
    NoIoLock lock(&mu_, kRunLockName);
    const v1::SizeResult& result = message.result();
    LiveRun* live = FindLiveLocked(message.run());
    if (live != nullptr && live->phase != Phase::kCreating) {
      if (live->run.launcher() != worker) {
        RefuseMessageLocked(worker, message.run(), "result_not_launcher");
        return;
      }
      if (!live->max_results.has_value()) {
        live->max_results = BoundsOfSpec(live->run.spec()).max_results;
      }
      if (result.sequence() < 0 || result.sequence() >= *live->max_results) {
        // Not stored and not acknowledged: no real run reports it.
        RefuseMessageLocked(worker, message.run(), "results_beyond_spec");
        return;
      }
      // Stored already (a re-send after a reconnect): acknowledged at once.
      if (result.sequence() <= live->stored_through ||
          live->stored_ahead.count(result.sequence())) {
        SendAck(link_, worker, live->run.name(), live->stored_through);
        return;
      }
      if (!live->path.has_value()) {
        std::map<std::string, std::shared_ptr<const v1::Inventory>> held;
        for (const v1::RankHost& host : live->run.hosts()) {
          held[host.worker()] = workers_->InventoryOf(host.worker());
        }
        auto inventory = [&held](const std::string& name) -> const v1::Inventory* {
          auto it = held.find(name);
          return it == held.end() ? nullptr : it->second.get();
        };
        live->path = PathFactsOf(live->run, inventory);
        live->run_class = RunClassOf(live->run, inventory);
      }
      v1::ResultReferences references =
          ReferencesOf(*live->path, live->run_class, result,
                       options_.references ? *options_.references : ReferenceTable::Embedded());
      Store::AddResultsWrite write;
      write.rows.push_back({live->run.name(), std::move(*message.mutable_result())});
      *write.rows.back().result.mutable_references() = std::move(references);
      journal_->Append(this, std::move(write), {.time = now, .origin = worker});
      return;
    }
  }
  OnResultOfEndedRun(worker, message);
}

void RunManager::OnResultOfEndedRun(const std::string& worker, const v1::RunResult& message) {
  absl::StatusOr<v1::Run> stored = store_->GetRun(message.run());
  if (absl::IsNotFound(stored.status())) {
    // Deleted (or never known): nothing will ever store it, so the sender
    // may drop it rather than re-send it after every reconnect. Only its
    // own spool is affected.
    SendAck(link_, worker, message.run(), message.result().sequence());
    return;
  }
  if (!stored.ok()) return;
  if (stored->launcher() != worker) {
    // A finished run's launcher re-sending after a reconnect is acked; no
    // other worker is.
    NoIoLock lock(&mu_, kRunLockName);
    RefuseMessageLocked(worker, message.run(), "result_not_launcher");
    return;
  }
  SendAck(link_, worker, message.run(), message.result().sequence());
}

void RunManager::OnCommitted(std::vector<Committed>& writes) {
  Outbox out;
  {
    NoIoLock lock(&mu_, kRunLockName);
    Stored stored;
    absl::Time last = absl::InfinitePast();
    for (Committed& committed : writes) {
      last = std::max(last, committed.time);
      if (std::holds_alternative<Store::AddResultsWrite>(committed.write)) {
        ResultsStoredLocked(committed, stored, out);
      } else {
        RunStoredLocked(committed, stored, out);
      }
    }
    // One acknowledgement per (launcher, run), for the latest stored result.
    for (const auto& [to, sequence] : stored.acks) SendAck(link_, to.first, to.second, sequence);
    for (const auto& [name, when] : stored.results_of) {
      if (LiveRun* live = FindLiveLocked(name)) FinishIfCompleteLocked(*live, when);
    }
    // New runs of one transaction are placed together: a group's runs on
    // disjoint hosts start at once.
    if (stored.queue_changed) ScheduleLocked(last);
  }
  out.Deliver(hub_);
}

void RunManager::RunStoredLocked(const Committed& committed, Stored& stored, Outbox& out) {
  const v1::Run& run = std::holds_alternative<Store::CreateRunWrite>(committed.write)
                           ? std::get<Store::CreateRunWrite>(committed.write).run
                           : std::get<Store::UpdateRunWrite>(committed.write).run;
  LiveRun* live = FindLiveLocked(run.name());
  if (live != nullptr && live->phase == Phase::kCreating) {
    --creating_;
    if (!committed.status.ok()) {  // its creator is told by Await
      live_.erase(run.name());
      return;
    }
    live->phase = Phase::kQueued;
    queue_.push_back(run.name());
    stored.queue_changed = true;
  } else if (live != nullptr && live->phase == Phase::kWithdrawing) {
    if (!committed.status.ok()) {  // the cancel is refused whole: queued again
      live->phase = Phase::kQueued;
      live->run.set_state(v1::QUEUED);
      live->run.clear_error();
      live->run.clear_end_time();
      return;
    }
    queue_.erase(std::find(queue_.begin(), queue_.end(), run.name()));
    live_.erase(run.name());
    stored.queue_changed = true;
  }
  // Told whether or not the store kept it: the change happened, and a
  // watcher must not wait for a state the coordinator already left.
  v1::RunEvent event;
  event.set_run(run.name());
  *event.mutable_time() = TimestampFromTime(committed.time);
  *event.mutable_state_change() = run;
  out.Publish(std::move(event));
  if (IsFinalRunState(run.state())) out.End(run.name());
}

void RunManager::ResultsStoredLocked(Committed& committed, Stored& stored, Outbox& out) {
  // A failed write stored none of it: nothing is acknowledged, the launcher
  // keeps the results and sends them again (the journal logged it).
  if (!committed.status.ok()) return;
  // The rows are this client's own now: each result moves into its event.
  auto& rows = std::get<Store::AddResultsWrite>(committed.write).rows;
  for (size_t i = 0; i < rows.size(); ++i) {
    Store::ResultRow& row = rows[i];
    const int64_t sequence = row.result.sequence();
    int64_t& ack = stored.acks.try_emplace({committed.origin, row.run}, -1).first->second;
    LiveRun* live = FindLiveLocked(row.run);
    if (live == nullptr) {  // ended meanwhile (cancelled, failed): stored all the same
      ack = std::max(ack, sequence);
      continue;
    }
    if (committed.result.inserted[i]) {
      live->run.set_sizes_done(live->run.sizes_done() + 1);
      live->run.set_wrong(live->run.wrong() + row.result.wrong());
      v1::RunEvent event;
      event.set_run(row.run);
      *event.mutable_time() = TimestampFromTime(committed.time);
      v1::RunEvent progress = event;
      *event.mutable_result() = std::move(row.result);
      out.Publish(std::move(event));
      progress.mutable_progress()->set_sizes_done(live->run.sizes_done());
      progress.mutable_progress()->set_sizes_total(live->run.sizes_total());
      out.Publish(std::move(progress));
    }
    // A reconnect's re-sends interleave with new results, so they can come
    // out of order: advance over every stored one that is contiguous now.
    if (sequence > live->stored_through) live->stored_ahead.insert(sequence);
    while (!live->stored_ahead.empty() &&
           *live->stored_ahead.begin() <= live->stored_through + 1) {
      live->stored_through = std::max(live->stored_through, *live->stored_ahead.begin());
      live->stored_ahead.erase(live->stored_ahead.begin());
    }
    ack = live->stored_through;
    stored.results_of[row.run] = committed.time;
  }
}

}  // namespace collbench
