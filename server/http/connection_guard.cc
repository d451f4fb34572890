// SPDX-License-Identifier: Apache-2.0
#include "server/http/connection_guard.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <sys/socket.h>

#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/log.h"

namespace collbench {

struct ConnectionGuard::Conn {
  ConnectionGuard* guard = nullptr;
  bufferevent* bev = nullptr;
  evhttp_connection* evcon = nullptr;  // once found
  event* timer = nullptr;              // first to find the connection, then its deadline
  evbuffer_cb_entry* output_watch = nullptr;
  bool holds_ref = true;  // the reference taken in Opened()
  bool authenticated = false;
  bool request_due = true;  // reading a request: the deadline runs
  bool answering = false;   // an answer of the server's is being written
  uint64_t seq = 0;         // the order of the accepts
  evbuffer_cb_entry* input_watch = nullptr;
  bool headers_checked = false;  // of the request now due
  // The body of the request now due, when it is refused (the request goes
  // on with Content-Length 0, to be answered 413 or 411).
  std::optional<BodyRefusal> refused_body;
  bool rewriting = false;  // our own change to the input is under way
  // Bytes received toward the request now due while unauthenticated
  // (counted in unauthenticated_bytes_).
  size_t received = 0;
};

namespace {

// Whether the bytes that start an empty output buffer are a status line
// with `status`.
bool StartsWithStatus(evbuffer* output, const char* status) {
  char head[12];
  if (evbuffer_copyout(output, head, sizeof head) != static_cast<ev_ssize_t>(sizeof head)) {
    return false;
  }
  return std::memcmp(head, "HTTP/1.", 7) == 0 && head[8] == ' ' &&
         std::memcmp(head + 9, status, 3) == 0;
}

// The peer's address, for logs.
std::string PeerOf(evhttp_connection* evcon) {
  char* address = nullptr;
  uint16_t port = 0;
  evhttp_connection_get_peer(evcon, &address, &port);
  return address != nullptr ? address : "";
}

// Reads the request line and headers at the front of `input`, which end
// at `end`: a Content-Length over `limit`, or a chunked body, is disarmed
// there (the length made 0, Transfer-Encoding dropped) so that evhttp reads
// no body, and returned; nothing for a request that may go on as it is.
std::optional<BodyRefusal> DisarmBody(evbuffer* input, const evbuffer_ptr& end, size_t limit) {
  const size_t size = static_cast<size_t>(end.pos) + 4;
  std::string head(size, '\0');
  evbuffer_copyout(input, head.data(), size);
  BodyRefusal refusal;
  bool refused = false;
  std::string rewritten;
  for (absl::string_view line : absl::StrSplit(head.substr(0, size - 4), "\r\n")) {
    const size_t colon = line.find(':');
    const absl::string_view name =
        colon == absl::string_view::npos ? absl::string_view() : line.substr(0, colon);
    const absl::string_view value = colon == absl::string_view::npos
                                        ? absl::string_view()
                                        : absl::StripAsciiWhitespace(line.substr(colon + 1));
    uint64_t length = 0;
    if (absl::EqualsIgnoreCase(name, "content-length") && absl::SimpleAtoi(value, &length) &&
        length > limit) {
      refusal.announced = length;
      refused = true;
      continue;
    }
    if (absl::EqualsIgnoreCase(name, "transfer-encoding")) {
      refusal.chunked = true;
      refused = true;
      continue;
    }
    absl::StrAppend(&rewritten, line, "\r\n");
  }
  if (!refused) return std::nullopt;
  rewritten += "Content-Length: 0\r\n\r\n";
  evbuffer_drain(input, size);
  evbuffer_prepend(input, rewritten.data(), rewritten.size());
  return refusal;
}

}  // namespace

ConnectionGuard::ConnectionGuard(event_base* base, ConnectionLimits limits)
    : base_(base),
      limits_(std::move(limits)),
      over_budget_(event_new(base, -1, 0, &ConnectionGuard::OnOverBudget, this)) {}

ConnectionGuard::~ConnectionGuard() {
  event_free(over_budget_);
  // evhttp_free closed every connection evhttp knew (each came through
  // OnClose); what is left never got that far.
  for (auto& [bev, conn] : conns_) {
    event_free(conn->timer);
    evbuffer_remove_cb_entry(bufferevent_get_output(bev), conn->output_watch);
    evbuffer_remove_cb_entry(bufferevent_get_input(bev), conn->input_watch);
    if (conn->holds_ref) bufferevent_decref(bev);
  }
}

void ConnectionGuard::Opened(bufferevent* bev) {
  if (auto stale = conns_.find(bev); stale != conns_.end()) {
    // Never expected: a connection evhttp freed without telling OnClose,
    // whose bufferevent's memory now serves a new one.
    LogError("http.connection_untracked", "a closed connection was never seen closing");
    event_free(stale->second->timer);
    --open_;
    if (!stale->second->authenticated) --unauthenticated_;
    conns_.erase(stale);
  }
  auto conn = std::make_unique<Conn>();
  conn->guard = this;
  conn->bev = bev;
  conn->seq = ++accepted_;
  conn->timer = evtimer_new(base_, &ConnectionGuard::OnTimer, conn.get());
  bufferevent_incref(bev);
  conn->output_watch = evbuffer_add_cb(
      bufferevent_get_output(bev),
      [](evbuffer* output, const evbuffer_cb_info* info, void* arg) {
        auto* c = static_cast<Conn*>(arg);
        if (info->n_added == 0 || info->orig_size != 0 || c->answering) return;
        if (StartsWithStatus(output, "413")) c->guard->too_large_.fetch_add(1);
      },
      conn.get());
  conn->input_watch = evbuffer_add_cb(
      bufferevent_get_input(bev),
      [](evbuffer* input, const evbuffer_cb_info* info, void* arg) {
        auto* c = static_cast<Conn*>(arg);
        if (c->rewriting || !c->request_due) return;
        // Once evhttp has taken bytes of this request (its request line,
        // header lines), the front of the buffer is no longer its start:
        // too late to look, and what follows may be the body.
        if (info->n_deleted > 0) c->headers_checked = true;
        if (info->n_added == 0) return;
        if (!c->authenticated) c->guard->CountReceived(c, info->n_added);
        if (c->headers_checked) return;
        // Only where the new bytes can complete the blank line.
        evbuffer_ptr from;
        evbuffer_ptr_set(input, &from, info->orig_size > 3 ? info->orig_size - 3 : 0,
                         EVBUFFER_PTR_SET);
        const evbuffer_ptr end = evbuffer_search(input, "\r\n\r\n", 4, &from);
        if (end.pos < 0) return;
        c->headers_checked = true;
        c->rewriting = true;
        c->refused_body = DisarmBody(input, end, c->guard->limits_.max_body_bytes);
        c->rewriting = false;
        if (c->refused_body) c->guard->too_large_.fetch_add(1);
      },
      conn.get());
  ++open_;
  ++unauthenticated_;
  // evhttp makes the connection around `bev` once this returns; look for
  // it on the loop's next turn.
  const timeval now{0, 0};
  evtimer_add(conn->timer, &now);
  conns_.emplace(bev, std::move(conn));
}

ConnectionGuard::Conn* ConnectionGuard::Find(evhttp_connection* evcon) {
  if (evcon == nullptr) return nullptr;
  auto it = conns_.find(evhttp_connection_get_bufferevent(evcon));
  return it == conns_.end() ? nullptr : it->second.get();
}

void ConnectionGuard::OnTimer(int fd, short what, void* arg) {
  auto* conn = static_cast<Conn*>(arg);
  if (conn->evcon == nullptr) return conn->guard->Attach(conn);
  conn->guard->DeadlinePassed(conn);
}

void ConnectionGuard::Attach(Conn* conn) {
  void* owner = nullptr;
  bufferevent_getcb(conn->bev, nullptr, nullptr, nullptr, &owner);
  // bufferevent_free() clears the callbacks: evhttp has closed it already.
  if (owner == nullptr) return Forget(conn);
  Adopt(conn, static_cast<evhttp_connection*>(owner));
  if (!conn->request_due) return;  // its first request is being answered
  if (MakeRoomFor(conn)) ArmDeadline(conn);
}

bool ConnectionGuard::MakeRoomFor(Conn* newcomer) {
  for (;;) {
    const bool over_total = limits_.max_connections > 0 && open() > limits_.max_connections;
    const bool over_unauthenticated =
        limits_.max_unauthenticated > 0 && unauthenticated_ > limits_.max_unauthenticated;
    if (!over_total && !over_unauthenticated) return true;
    std::atomic<int64_t>* counter = over_total ? &over_connections_ : &over_unauthenticated_;
    const std::string why = over_total ? absl::StrCat("more than ", limits_.max_connections,
                                                      " connections are open (--max-connections)")
                                       : absl::StrCat("more than ", limits_.max_unauthenticated,
                                                      " connections have not authenticated yet "
                                                      "(--max-unauthenticated-connections)");
    // The oldest connection still waiting for its request goes first: a
    // client that sends its request at once gets in even while others
    // hold connections open without finishing theirs.
    Conn* victim = OldestWaiting(newcomer, /*by_bytes=*/false);
    if (victim == nullptr) {
      Refuse(newcomer, counter, why);
      return false;
    }
    Refuse(victim, counter, why);
  }
}

void ConnectionGuard::Adopt(Conn* conn, evhttp_connection* evcon) {
  if (conn->evcon != nullptr) return;
  conn->evcon = evcon;
  evtimer_del(conn->timer);
  evhttp_connection_set_closecb(evcon, &ConnectionGuard::OnClose, this);
  // evhttp holds its own reference from here on.
  bufferevent_decref(conn->bev);
  conn->holds_ref = false;
}

void ConnectionGuard::Refuse(Conn* conn, std::atomic<int64_t>* counter, const std::string& why) {
  counter->fetch_add(1);
  LogWarn("http.connection_refused", absl::StrCat("connection refused: ", why))
      .Str("peer", PeerOf(conn->evcon));
  if (!limits_.tls) {
    // Best effort, never blocking: a client that has not sent its whole
    // request yet reads this answer; one that has may see a reset.
    const std::string body =
        limits_.refusal_body(absl::StrCat("connection refused: ", why, "; retry after 1 s"));
    const std::string reply = absl::StrCat(
        "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
        "Retry-After: 1\r\nConnection: close\r\nContent-Length: ",
        body.size(), "\r\n\r\n", body);
    const int fd = bufferevent_getfd(conn->bev);
    if (fd >= 0) {
      (void)send(fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      shutdown(fd, SHUT_WR);
    }
  }
  Close(conn);
}

void ConnectionGuard::Close(Conn* conn) {
  evhttp_connection* evcon = conn->evcon;
  evhttp_connection_set_closecb(evcon, nullptr, nullptr);
  Forget(conn);
  evhttp_connection_free(evcon);
}

absl::Duration ConnectionGuard::DeadlineOf(const Conn& conn) const {
  return conn.authenticated ? limits_.request_deadline : limits_.unauthenticated_deadline;
}

void ConnectionGuard::ArmDeadline(Conn* conn) {
  const absl::Duration budget = DeadlineOf(*conn);
  if (budget <= absl::ZeroDuration()) return;
  const timeval tv = absl::ToTimeval(budget);
  evtimer_add(conn->timer, &tv);
}

void ConnectionGuard::DeadlinePassed(Conn* conn) {
  if (!conn->request_due) return;
  deadline_.fetch_add(1);
  LogWarn("http.request_deadline",
          absl::StrCat("closed a connection that did not send a whole request within ",
                       absl::FormatDuration(DeadlineOf(*conn)),
                       conn->authenticated ? " (--request-deadline)"
                                           : " (--unauthenticated-request-deadline)"))
      .Str("peer", PeerOf(conn->evcon));
  Close(conn);
}

void ConnectionGuard::CountReceived(Conn* conn, size_t bytes) {
  conn->received += bytes;
  unauthenticated_bytes_ += bytes;
  // Closing a connection cannot happen inside its own read: on the loop's
  // next turn.
  if (limits_.max_unauthenticated_bytes > 0 &&
      unauthenticated_bytes_ > limits_.max_unauthenticated_bytes) {
    event_active(over_budget_, EV_TIMEOUT, 0);
  }
}

void ConnectionGuard::ReleaseReceived(Conn* conn) {
  unauthenticated_bytes_ -= conn->received;
  conn->received = 0;
}

void ConnectionGuard::OnOverBudget(int fd, short what, void* arg) {
  auto* guard = static_cast<ConnectionGuard*>(arg);
  while (guard->unauthenticated_bytes_ > guard->limits_.max_unauthenticated_bytes) {
    Conn* victim = guard->OldestWaiting(nullptr, /*by_bytes=*/true);
    if (victim == nullptr) return;
    guard->Refuse(victim, &guard->over_unauthenticated_,
                  absl::StrCat("connections that have not authenticated hold more than ",
                               guard->limits_.max_unauthenticated_bytes,
                               " bytes of requests not yet read whole "
                               "(--max-unauthenticated-bytes)"));
  }
}

ConnectionGuard::Conn* ConnectionGuard::OldestWaiting(const Conn* except, bool by_bytes) {
  Conn* victim = nullptr;
  for (const auto& [bev, conn] : conns_) {
    if (conn.get() == except || conn->authenticated || !conn->request_due ||
        conn->evcon == nullptr || (by_bytes && conn->received == 0)) {
      continue;
    }
    if (victim == nullptr || conn->seq < victim->seq) victim = conn.get();
  }
  return victim;
}

void ConnectionGuard::RequestRead(evhttp_request* req, bool authenticated) {
  evhttp_connection* evcon = evhttp_request_get_connection(req);
  Conn* conn = Find(evcon);
  if (conn == nullptr) return;
  Adopt(conn, evcon);  // a request may come before the loop's next turn
  ReleaseReceived(conn);
  conn->request_due = false;
  evtimer_del(conn->timer);
  if (authenticated && !conn->authenticated) {
    conn->authenticated = true;
    --unauthenticated_;
  }
}

std::optional<BodyRefusal> ConnectionGuard::RefusedBody(evhttp_request* req) {
  Conn* conn = Find(evhttp_request_get_connection(req));
  if (conn == nullptr) return std::nullopt;
  return conn->refused_body;
}

void ConnectionGuard::Answering(evhttp_request* req) {
  Conn* conn = Find(evhttp_request_get_connection(req));
  if (conn == nullptr) return;  // the client is gone
  conn->answering = true;
  evhttp_request_set_on_complete_cb(req, &ConnectionGuard::OnComplete, this);
}

void ConnectionGuard::HandOver(evhttp_request* req) {
  evhttp_connection* evcon = evhttp_request_get_connection(req);
  Conn* conn = Find(evcon);
  if (conn == nullptr) return;
  evhttp_connection_set_closecb(evcon, nullptr, nullptr);
  Forget(conn);
}

int ConnectionGuard::open() const {
  return open_.load() + (limits_.handed_over ? limits_.handed_over() : 0);
}

void ConnectionGuard::OnComplete(evhttp_request* req, void* arg) {
  auto* guard = static_cast<ConnectionGuard*>(arg);
  Conn* conn = guard->Find(evhttp_request_get_connection(req));
  if (conn == nullptr) return;
  conn->answering = false;
  conn->request_due = true;
  conn->headers_checked = false;
  conn->refused_body.reset();
  guard->ArmDeadline(conn);
}

void ConnectionGuard::OnClose(evhttp_connection* evcon, void* arg) {
  auto* guard = static_cast<ConnectionGuard*>(arg);
  if (Conn* conn = guard->Find(evcon)) guard->Forget(conn);
}

void ConnectionGuard::Forget(Conn* conn) {
  bufferevent* bev = conn->bev;
  event_free(conn->timer);
  evbuffer_remove_cb_entry(bufferevent_get_output(bev), conn->output_watch);
  evbuffer_remove_cb_entry(bufferevent_get_input(bev), conn->input_watch);
  if (conn->holds_ref) bufferevent_decref(bev);
  ReleaseReceived(conn);
  --open_;
  if (!conn->authenticated) --unauthenticated_;
  conns_.erase(bev);
}

HttpRefusalCounts ConnectionGuard::counts() const {
  HttpRefusalCounts counts;
  counts.too_large = too_large_.load();
  counts.connections = over_connections_.load();
  counts.unauthenticated_connections = over_unauthenticated_.load();
  counts.request_deadline = deadline_.load();
  return counts;
}

}  // namespace collbench
