// SPDX-License-Identifier: Apache-2.0
// The coordinator's side of every connected worker's Connect stream: one
// bounded send queue per worker, by name. It is the WorkerLink the core
// sends through, and it is made before the core and the gateway service,
// which both use it: nothing is wired in a second step.
//
// A queue holds at most `max_queued` messages
// (docs/design/security.md#bounds); a worker whose queue overflows has its
// stream ended with RESOURCE_EXHAUSTED (it reconnects and re-sends what was
// not acknowledged), counted in send_queue_overflows(). Streams not
// registered yet are capped per source address: beyond the cap a new
// stream is refused (AdmitUnregistered).
//
// Thread safety: every method may be called from any thread; Send never
// blocks (each stream writes from its own queue, one message at a time).
#ifndef COLLBENCH_SERVER_API_WORKER_STREAMS_H_
#define COLLBENCH_SERVER_API_WORKER_STREAMS_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "collbench/v1/gateway.grpc.pb.h"
#include "server/core/worker_link.h"

namespace collbench {

struct WorkerStreamsOptions {
  // Messages queued to one worker beyond which its stream is ended (0: no
  // limit). The core sends a handful per run and heartbeat interval; a
  // healthy worker's queue stays near empty.
  size_t max_queued = 4096;
  // Worker streams of one source address that have not registered yet,
  // beyond which a new one is refused (0: no limit).
  int max_unregistered_per_source = 32;
};

// One worker's outgoing queue. The streams hold it by worker name; the
// stream's reactor owns the call and drives the writes.
class WorkerStream {
 public:
  using Reactor = grpc::ServerBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage>;
  WorkerStream(Reactor* reactor, size_t max_queued) : reactor_(reactor), max_queued_(max_queued) {}

  // False when the stream is closed or overflowed (the message is dropped);
  // `*overflowed_now` is set the first time it overflows. On overflow the
  // queue is dropped and the stream marked to end (its reactor ends it on
  // its next callback, outside the caller's locks).
  bool Send(const v1::CoordinatorMessage& message, bool* overflowed_now) ABSL_LOCKS_EXCLUDED(mu_);
  bool overflowed() ABSL_LOCKS_EXCLUDED(mu_);
  // The previous write finished; starts the next unless the stream broke.
  void WriteDone(bool ok) ABSL_LOCKS_EXCLUDED(mu_);
  // No write is started after this.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  Reactor* reactor_ ABSL_GUARDED_BY(mu_);
  const size_t max_queued_;
  std::deque<v1::CoordinatorMessage> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool overflowed_ ABSL_GUARDED_BY(mu_) = false;
};

class WorkerStreams final : public WorkerLink {
 public:
  explicit WorkerStreams(WorkerStreamsOptions options = {}) : options_(options) {}

  // WorkerLink: queues `message` on the worker's stream; false when it has
  // none (or it just overflowed).
  bool Send(const std::string& worker, const v1::CoordinatorMessage& message) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // The registered stream of `worker` (replacing an earlier one), and its
  // removal when it ends (only if it is still the one attached).
  void Attach(const std::string& worker, std::shared_ptr<WorkerStream> stream)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Detach(const std::string& worker, const WorkerStream* stream) ABSL_LOCKS_EXCLUDED(mu_);
  // A stream from `source` that has not registered yet: false when the
  // source is at its cap (the stream is then refused). Each admitted one is
  // released once, when it registers or ends.
  bool AdmitUnregistered(const std::string& source) ABSL_LOCKS_EXCLUDED(mu_);
  void ReleaseUnregistered(const std::string& source) ABSL_LOCKS_EXCLUDED(mu_);

  size_t max_queued() const { return options_.max_queued; }
  size_t connected() const ABSL_LOCKS_EXCLUDED(mu_);
  // Streams ended because their send queue overflowed.
  int64_t send_queue_overflows() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const WorkerStreamsOptions options_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<WorkerStream>> streams_ ABSL_GUARDED_BY(mu_);
  int64_t send_queue_overflows_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int> unregistered_ ABSL_GUARDED_BY(mu_);  // by source
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_API_WORKER_STREAMS_H_
