// SPDX-License-Identifier: Apache-2.0
// The coordinator's one path to its store for the state it changes under a
// lock (docs/design/store.md#the-journal): the run lifecycle and the worker
// directory change their state in memory under their own locks and append
// what the store must learn here; one journal thread commits the appended
// writes many per transaction (Store::Commit: one fsync for all), with none
// of those locks held, then tells each client what became durable. So no
// request ever waits behind a disk write it did not ask for, and whoever
// must not go on before a write is durable (an API call that returns the
// run it created, a worker that must not get a secret the store may lose)
// waits for that write alone with Await(), after letting go of its lock.
// leveldb's DBImpl::Write is the model: state under the lock, the log write
// outside it.
//
// Order: writes commit in append order, and each client's OnCommitted sees
// its writes in that order, once per transaction, on the journal thread.
// Batching: the journal takes what is appended when it is free; a batch
// that is not full waits up to `max_delay` after its first write for more,
// unless it holds a write that someone waits for (awaited or prompt: it goes
// at once; what is appended while it commits forms the next batch).
//
// Failures: a batch the store refuses because of one write (its own check:
// NotFound, AlreadyExists, InvalidArgument, FailedPrecondition) is committed
// again one write at a time, so only that write fails; a failure of the
// store itself (a full disk, an I/O error) fails every write of the batch
// and nothing of it is kept. A failed write is reported to its client with
// the error, and to whoever awaits it.
//
// Shutdown: Stop() (and the destructor) commit everything appended before
// it and report it, then end the thread. An Append after Stop is dropped:
// never committed, never reported, Await returns Unavailable.
//
// Thread safety: Append, Await, Flush and stats may be called from any
// thread; Append never blocks on the disk, so it may be called under the
// clients' locks (the journal's own lock is a leaf). Await and Flush block:
// never call them under a NoIoLock (server/core/no_io_lock.h; checked).
// OnCommitted runs on the journal thread with no journal lock held; it may
// take the client's locks and Append, but must not Await or Flush.
#ifndef COLLBENCH_SERVER_CORE_JOURNAL_H_
#define COLLBENCH_SERVER_CORE_JOURNAL_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/store/store.h"

namespace collbench {

struct JournalOptions {
  // How long a batch that is not full waits after its first write.
  absl::Duration max_delay = absl::Milliseconds(2);
  // Writes per transaction at most (an AddResultsWrite of n rows counts n).
  size_t max_batch_rows = 4096;
};

// What a client adds to a write, for itself (Journal::Append).
struct JournalNote {
  // Keep the write's outcome for Await.
  bool awaited = false;
  // Someone waits for it (Await, or a reply sent from OnCommitted): the
  // batch it is in goes at once, not after max_delay. Awaited writes are.
  bool prompt = false;
  // When the client made the change, and who caused it (e.g. the worker
  // whose result it is): handed back in Committed.
  absl::Time time = absl::InfinitePast();
  std::string origin;
};

// What a client learns of its writes once their transaction ended.
struct Committed {
  Store::Write write;
  absl::Status status;        // OK: durable
  Store::WriteResult result;  // when OK
  absl::Time time;            // the write's JournalNote
  std::string origin;
};

class JournalClient {
 public:
  virtual ~JournalClient() = default;
  // This client's writes of one transaction, in append order (see the file
  // comment for the thread and what it may do).
  virtual void OnCommitted(std::vector<Committed>& writes) = 0;
};

class Journal {
 public:
  struct Stats {
    int64_t batches = 0;
    int64_t writes = 0;
    int64_t rows = 0;  // results and worker rows in those writes
    int64_t failed_batches = 0;
    int64_t largest_batch_rows = 0;
  };

  // `store` is not owned and must outlive the journal. Starts the thread.
  Journal(Store* store, JournalOptions options = {});
  ~Journal();  // Stop()
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Queues `write` for `client` (null: nobody is told) and returns its
  // sequence number, for Await. With `note.awaited`, the write's outcome is
  // kept until Await collects it; otherwise Await only waits.
  uint64_t Append(JournalClient* client, Store::Write write, JournalNote note = {})
      ABSL_LOCKS_EXCLUDED(mu_);
  // The sequence of the last write appended (0: none yet).
  uint64_t last_appended() ABSL_LOCKS_EXCLUDED(mu_);
  // Returns once the write `sequence` (and everything before it) is
  // committed or failed and reported to its client: its outcome when it was
  // appended `awaited`, else OK. Unavailable for a write dropped by Stop.
  absl::Status Await(uint64_t sequence) ABSL_LOCKS_EXCLUDED(mu_);
  // Await of the last write appended.
  void Flush() ABSL_LOCKS_EXCLUDED(mu_);
  // Commits what is queued, then ends the thread. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  Stats stats() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Pending {
    uint64_t sequence;
    JournalClient* client;
    Store::Write write;
    JournalNote note;
  };
  void Loop();
  // The next batch, waiting for one; empty once stopped and drained.
  std::vector<Pending> NextBatch() ABSL_LOCKS_EXCLUDED(mu_);
  // Commits `batch` and reports it; records the outcomes of awaited writes.
  void Write(std::vector<Pending>& batch) ABSL_LOCKS_EXCLUDED(mu_);
  // The outcome of each write: the batch's, or each write alone when the
  // batch was refused for one of them.
  std::vector<Committed> CommitBatch(std::vector<Pending>& batch);

  Store* const store_;
  const JournalOptions options_;
  absl::Mutex mu_;
  std::deque<Pending> queue_ ABSL_GUARDED_BY(mu_);
  size_t queued_rows_ ABSL_GUARDED_BY(mu_) = 0;
  size_t prompt_queued_ ABSL_GUARDED_BY(mu_) = 0;  // queued writes someone waits for
  uint64_t appended_ ABSL_GUARDED_BY(mu_) = 0;  // last sequence handed out
  uint64_t done_ ABSL_GUARDED_BY(mu_) = 0;      // every write up to it is reported
  std::map<uint64_t, absl::Status> outcomes_ ABSL_GUARDED_BY(mu_);  // awaited, not collected
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  Stats stats_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_JOURNAL_H_
