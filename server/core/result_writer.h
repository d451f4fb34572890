// SPDX-License-Identifier: Apache-2.0
// Group commit for size results (docs/design/store.md#the-result-journal-group-commit):
// results submitted from any thread are written by one writer thread, many
// per store transaction (Store::AddResults: each result and its run's
// progress together, one fsync for the batch), and reported back once the
// transaction ended, so the caller acknowledges a result to its worker only
// when it is durable.
//
// Batching: the writer takes what is queued when it is free; a batch that
// is not full waits up to `max_delay` after its first row for more, so a
// busy fleet shares fsyncs while a lone result waits at most that long.
// Rows keep their submission order within and across batches.
//
// Failures: a batch the store refuses (a full disk, an I/O error) is
// reported with the error and none of it is stored; the caller acks none
// of it, so the workers keep those results and send them again. Nothing
// acknowledged is lost.
//
// Shutdown: Stop() (and the destructor) write everything submitted before
// it, report it, then end the thread. A Submit after Stop is dropped: not
// stored and never reported, so never acknowledged (the worker keeps it).
//
// Thread safety: Submit, Flush and stats may be called from any thread.
// `done` runs on the writer thread, one batch at a time, in order; it may
// take the caller's locks (the writer holds none of its own then) but must
// not call Flush or Stop.
#ifndef COLLBENCH_SERVER_CORE_RESULT_WRITER_H_
#define COLLBENCH_SERVER_CORE_RESULT_WRITER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/store/store.h"

namespace collbench {

struct ResultWriterOptions {
  // How long a batch that is not full waits after its first row.
  absl::Duration max_delay = absl::Milliseconds(2);
  // Rows per transaction at most.
  size_t max_batch_rows = 4096;
};

class ResultWriter {
 public:
  // A result to store and who sent it (acknowledged once it is durable).
  struct Pending {
    std::string worker;
    Store::ResultRow row;
    absl::Time received;
  };
  // One transaction's rows, in submission order, with their senders and
  // the times they arrived.
  struct Batch {
    std::vector<Store::ResultRow> rows;
    std::vector<std::string> workers;
    std::vector<absl::Time> received;
  };
  // What one transaction did: per row of `batch`, whether it was new, or
  // the store's error (then nothing of the batch is stored).
  using BatchDone =
      std::function<void(const Batch& batch, const absl::StatusOr<std::vector<bool>>& inserted)>;
  struct Stats {
    int64_t batches = 0;
    int64_t rows = 0;
    int64_t failed_batches = 0;
    int64_t largest_batch = 0;
  };

  // `store` is not owned and must outlive the writer. Starts the thread.
  ResultWriter(Store* store, BatchDone done, ResultWriterOptions options = {});
  // Stop().
  ~ResultWriter();
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  // Queues `result`; never waits on the disk (nor calls `done`).
  void Submit(Pending result) ABSL_LOCKS_EXCLUDED(mu_);
  // Returns once everything submitted before the call is written and its
  // `done` has returned.
  void Flush() ABSL_LOCKS_EXCLUDED(mu_);
  // Writes what is queued, then ends the thread. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  Stats stats() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop();
  // Takes the next batch, waiting for one. Empty once stopped and drained.
  Batch NextBatch() ABSL_LOCKS_EXCLUDED(mu_);
  void Write(const Batch& batch) ABSL_LOCKS_EXCLUDED(mu_);

  Store* const store_;
  const BatchDone done_;
  const ResultWriterOptions options_;
  absl::Mutex mu_;
  std::deque<Pending> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  int64_t submitted_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t completed_ ABSL_GUARDED_BY(mu_) = 0;  // rows whose done_ returned
  Stats stats_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_RESULT_WRITER_H_
