// SPDX-License-Identifier: Apache-2.0
// The transport's bounds on connections (docs/operations/limits.md#http):
// how many are open at once, how many of them have not yet made an
// authenticated request, and how long one may take to send one whole
// request (request line, headers and body) — the slow-sender ("slowloris")
// attack holds connections by sending a byte at a time, which the idle
// timer alone never ends.
//
// Memory: besides the count, the bytes unauthenticated connections have
// sent toward requests not yet read whole are capped together; over the
// budget the oldest such connection is closed, so that many idle
// connections cost little and few fat ones cannot hold much.
//
// A connection is new, and unauthenticated, from its accept until a
// request on it is routed as authenticated (HttpDispatch::authenticated);
// it stays authenticated for the rest of its life. Beyond either cap the
// oldest unauthenticated connection still waiting for a request is closed
// to make room (a client that sends its request at once gets in while
// others hold connections without finishing theirs), or, with none, the
// new one: a plain one gets a short 429 written to its socket, a TLS one is
// closed (nothing can be written before its handshake); both counted. A connection's deadline runs
// while a request is due: from its accept, and again from the end of each answer; the request read
// whole, or an answer or event stream in progress, stops it. A connection that misses it is closed
// and counted.
//
// Bodies: as a request's headers arrive, the guard reads its
// Content-Length; over the body limit, or a chunked body (whose size
// nothing announces), it makes the length 0 in the input buffer, so that
// evhttp hands the server the request without reading any of the body,
// and the server answers 413 (or 411) with the handler's error body and
// closes the connection (RefusedBody()). It looks only while the request
// is whole at the front of the buffer, before evhttp has taken any of it.
// What it cannot see in time (headers that arrive over several reads,
// which evhttp takes line by line; request line and headers over their
// limit; a pipelined request already buffered) evhttp refuses with a 413
// of its own, body limit included, or, a chunked body, takes up to the
// limit; the
// guard counts those when their status line leaves on a connection where
// no answer of the server's is being written.
//
// How it follows connections without evhttp's help (libevent 2.1 has no
// hook for a new connection or request): the server creates every
// connection's bufferevent (evhttp's bevcb) and hands it to Opened(); one
// loop turn later evhttp has made the connection around it, and the guard
// finds it (the bufferevent's callback argument), asks evhttp to call it
// when the connection closes and applies the caps. A reference held on the
// bufferevent until then keeps its address from being reused.
//
// Internal to server/http; it includes no libevent header itself.
//
// Thread safety: every method but counts() and open() on the event loop's
// thread.
#ifndef COLLBENCH_SERVER_HTTP_CONNECTION_GUARD_H_
#define COLLBENCH_SERVER_HTTP_CONNECTION_GUARD_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "absl/time/time.h"
#include "server/http/http_server.h"

struct bufferevent;
struct event;
struct event_base;
struct evhttp_connection;
struct evhttp_request;

namespace collbench {

struct ConnectionLimits {
  size_t max_body_bytes = 0;
  int max_connections = 0;      // 0: none
  int max_unauthenticated = 0;  // 0: none
  // Bytes all unauthenticated connections together have sent toward
  // requests not yet read whole; 0: none.
  size_t max_unauthenticated_bytes = 0;
  absl::Duration request_deadline;  // for an authenticated connection
  absl::Duration unauthenticated_deadline;
  bool tls = false;  // refused connections are closed unanswered
  // The 429's JSON body for a refusal saying `message`.
  std::function<std::string(const std::string& message)> refusal_body;
  // Connections handed over (event streams) still open; any thread.
  std::function<int()> handed_over;
};

// A request body refused before any of it was read.
struct BodyRefusal {
  bool chunked = false;    // sent without a Content-Length (411)
  uint64_t announced = 0;  // else its Content-Length, over the limit (413)
};

class ConnectionGuard {
 public:
  ConnectionGuard(event_base* base, ConnectionLimits limits);
  ~ConnectionGuard();  // after evhttp_free: lets go of connections never found

  // A new connection's bufferevent, before evhttp takes it.
  void Opened(bufferevent* bev);
  // A request was read whole on its connection: the deadline stops. An
  // authenticated request makes the connection authenticated.
  void RequestRead(evhttp_request* req, bool authenticated);
  // Why `req`'s body is refused, if it is: the guard made its length 0 as
  // the headers came in, so that no byte of the body is read, and the
  // server answers the refusal itself.
  std::optional<BodyRefusal> RefusedBody(evhttp_request* req);
  // An answer to `req` is about to be written: the deadline starts again
  // once it has gone out.
  void Answering(evhttp_request* req);
  // An event stream takes over `req`'s connection for the rest of its life
  // (the SseWriter follows it; it reads no more requests): the guard lets
  // go of it, and counts it through ConnectionLimits::handed_over.
  void HandOver(evhttp_request* req);

  HttpRefusalCounts counts() const;
  // Connections open now, handed over ones included; any thread.
  int open() const;

 private:
  struct Conn;
  static void OnTimer(int fd, short what, void* arg);
  static void OnClose(evhttp_connection* evcon, void* arg);
  static void OnComplete(evhttp_request* req, void* arg);
  Conn* Find(evhttp_connection* evcon);
  // evhttp has made the connection around conn->bev (or already freed it).
  void Attach(Conn* conn);
  void Adopt(Conn* conn, evhttp_connection* evcon);
  // Over a cap, closes the oldest unauthenticated connection waiting for a
  // request, or else `newcomer`; whether `newcomer` stays.
  bool MakeRoomFor(Conn* newcomer);
  // The unauthenticated connection, other than `except`, waiting longest
  // for its request (with bytes of it received, when `by_bytes`).
  Conn* OldestWaiting(const Conn* except, bool by_bytes);
  void CountReceived(Conn* conn, size_t bytes);
  void ReleaseReceived(Conn* conn);
  static void OnOverBudget(int fd, short what, void* arg);
  void Refuse(Conn* conn, std::atomic<int64_t>* counter, const std::string& why);
  // The time `conn` has to send a whole request.
  absl::Duration DeadlineOf(const Conn& conn) const;
  void ArmDeadline(Conn* conn);
  void DeadlinePassed(Conn* conn);
  // Forgets the connection, then has evhttp close it.
  void Close(Conn* conn);
  void Forget(Conn* conn);

  event_base* const base_;
  const ConnectionLimits limits_;
  std::unordered_map<bufferevent*, std::unique_ptr<Conn>> conns_;
  std::atomic<int> open_{0};
  int unauthenticated_ = 0;
  uint64_t accepted_ = 0;
  size_t unauthenticated_bytes_ = 0;
  event* const over_budget_;  // closes the oldest until under the byte budget
  std::atomic<int64_t> too_large_{0};
  std::atomic<int64_t> over_connections_{0};
  std::atomic<int64_t> over_unauthenticated_{0};
  std::atomic<int64_t> deadline_{0};
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_HTTP_CONNECTION_GUARD_H_
