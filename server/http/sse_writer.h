// SPDX-License-Identifier: Apache-2.0
// Writes event streams (an HttpReply with an SseSource) from the HTTP
// server's event loop, with or without TLS: no stream holds a thread. The
// loop starts the response (chunked transfer coding, Connection: close),
// then writes each source's text as HTTP chunks when the source notifies
// it, a keep-alive comment (kSseKeepAlive) after `keepalive` without
// output (by the injected clock, looked at by a libevent timer), and the
// final chunk when the source ends.
//
// It takes more from a source only once what it took before is written,
// so a client that does not read leaves its events in the source's
// bounded queue (the source's slow-reader rule) and never slows the
// others; a write that makes no progress for `write_timeout` ends the
// connection. A client that closes its end, or a failed write, ends its
// stream at once (the hub forgets the watcher, its limit slot is freed).
//
// Thread safety: every method runs on the loop thread (the streams'
// notifications are posted to it).
#ifndef COLLBENCH_SERVER_HTTP_SSE_WRITER_H_
#define COLLBENCH_SERVER_HTTP_SSE_WRITER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "server/http/event_loop.h"
#include "server/http/sse_source.h"

struct event;
struct evhttp_connection;
struct evhttp_request;

namespace collbench {

// The comment an idle stream sends so that proxies keep the connection and
// a vanished client is noticed.
inline constexpr char kSseKeepAlive[] = ": keep-alive\n\n";

class SseWriter {
 public:
  // `loop` and `clock` outlive the writer; the writer is destroyed on the
  // loop thread or after the loop stopped.
  SseWriter(EventLoop* loop, const Clock* clock, absl::Duration keepalive,
            absl::Duration write_timeout);
  ~SseWriter();

  // Answers `req` with `http_status`, `headers` and then `stream` until it
  // ends.
  void Start(evhttp_request* req, int http_status,
             const std::map<std::string, std::string>& headers, std::shared_ptr<SseSource> stream);
  // Ends every stream with its final chunk, now and from now on (a stream
  // started later ends at once).
  void CloseAll();
  // Streams not yet completely written (ended ones whose last bytes are
  // still on their way count too).
  size_t size() const { return streams_.size(); }
  // The same, from any thread.
  int open() const { return open_.load(); }
  // Forgets every stream without touching its request or connection (the
  // caller is about to free them all). The streams are detached.
  void Abandon();
  // Called on the loop whenever the last stream is forgotten.
  void SetOnEmpty(std::function<void()> on_empty) { on_empty_ = std::move(on_empty); }

 private:
  struct Stream {
    SseWriter* writer;
    uint64_t id;
    evhttp_request* req;
    evhttp_connection* connection;
    std::shared_ptr<SseSource> events;
    bool writing = false;  // a chunk is on its way; take nothing more
    bool ended = false;    // the final chunk was queued
    absl::Time last_output;
  };

  void MarkReady(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_);
  void PumpReady() ABSL_LOCKS_EXCLUDED(mu_);
  // Takes what the stream has unless a chunk is on its way, and writes it.
  void Pump(Stream& s);
  void WriteChunk(Stream& s, const std::string& text);
  void KeepAlive();
  void Forget(Stream& s);

  static void OnWritten(evhttp_connection* connection, void* arg);
  static void OnComplete(evhttp_request* req, void* arg);
  static void OnClosed(evhttp_connection* connection, void* arg);
  static void OnTick(int fd, short what, void* arg);

  EventLoop* const loop_;
  const Clock* const clock_;
  const absl::Duration keepalive_;
  const absl::Duration write_timeout_;
  event* tick_ = nullptr;
  uint64_t next_id_ = 1;
  bool closing_ = false;
  std::map<uint64_t, std::unique_ptr<Stream>> streams_;
  std::function<void()> on_empty_;
  std::atomic<int> open_{0};  // streams_.size()

  absl::Mutex mu_;  // the streams' notifications, from any thread
  std::set<uint64_t> ready_ ABSL_GUARDED_BY(mu_);
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_HTTP_SSE_WRITER_H_
