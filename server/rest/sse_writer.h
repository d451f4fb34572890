// Writes event streams (GET /v1/runs/{id}:watch) from one thread of its
// own, so open watchers hold none of the HTTP server's request threads:
// once a watch request is answered, its socket is handed here and the
// request thread goes back to serving /healthz, /metrics and the API.
//
// One epoll loop owns every handed-over socket (non-blocking). It writes
// the response head, then each EventStream's events as HTTP chunks when
// the stream notifies it, a keep-alive comment after `keepalive` without
// output, and the final chunk when the stream ends. It takes more from a
// stream only once what it took before is written, so a client that does
// not read leaves its events in the stream's bounded queue
// (EventStream's slow-reader rule) and never slows the others. A client
// that closes its end, or a write that fails, ends its stream.
//
// Thread safety: Add() and Shutdown() from any thread.
#ifndef COLLBENCH_SERVER_REST_SSE_WRITER_H_
#define COLLBENCH_SERVER_REST_SSE_WRITER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/rest/event_stream.h"

namespace collbench {

class SseWriter {
 public:
  static absl::StatusOr<std::unique_ptr<SseWriter>> Start(absl::Duration keepalive);
  ~SseWriter();  // Shutdown()

  // Takes `fd` (a connected socket whose request was read; closed by the
  // writer) and writes `head` (status line and headers, chunked transfer
  // coding), then `stream` until it ends.
  void Add(int fd, std::string head, std::shared_ptr<EventStream> stream);
  // Ends every stream with the final chunk (best effort, without waiting
  // on slow clients), closes the sockets and joins the thread. Idempotent.
  void Shutdown();
  size_t size() const;

 private:
  struct Connection {
    int fd = -1;
    std::shared_ptr<EventStream> stream;
    std::string out;  // bytes still to write, from `sent`
    size_t sent = 0;
    bool last = false;          // `out` ends the response
    bool want_writable = false;  // registered for EPOLLOUT
    absl::Time last_output;
  };
  struct Added {
    uint64_t id;
    int fd;
    std::string head;
    std::shared_ptr<EventStream> stream;
  };

  SseWriter(int epoll_fd, int wake_fd, absl::Duration keepalive)
      : epoll_fd_(epoll_fd), wake_fd_(wake_fd), keepalive_(keepalive) {}
  void Loop();
  void Wake();
  void MarkReady(uint64_t id);
  // Takes what the stream has when nothing is pending, then writes.
  void Pump(uint64_t id, Connection& c);
  // Writes what is pending; false when the connection is done (closed).
  bool Flush(uint64_t id, Connection& c);
  void KeepAlive(absl::Time now);
  void Drop(uint64_t id);

  const int epoll_fd_;
  const int wake_fd_;
  const absl::Duration keepalive_;
  std::thread thread_;

  // The loop thread's own.
  std::map<uint64_t, Connection> connections_;

  mutable absl::Mutex mu_;
  std::vector<Added> added_ ABSL_GUARDED_BY(mu_);
  std::set<uint64_t> ready_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  size_t open_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool shut_down_ = false;  // Shutdown()'s caller only
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_REST_SSE_WRITER_H_
