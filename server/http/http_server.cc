// SPDX-License-Identifier: Apache-2.0
// HttpServer on libevent's evhttp (server/README.md says why this library).
// Only this file, evhttp_io.cc, event_loop.cc and sse_writer.cc include
// libevent; it stays private to server/http (server/http/CMakeLists.txt).
//
// Threads: one event loop (server/http/event_loop.h) owns the listening
// socket and every connection, plain or TLS (a bufferevent_openssl per
// connection, made in the bevcb). evhttp reads a whole request, within
// the header, body and time limits, and calls Serve() on the loop, which
// asks the HttpHandler how to answer, runs the transport's own checks and
// then answers at once (on_loop dispatches) or runs the answer on the
// WorkPool and posts the reply back to the loop, which writes it. An event
// stream is started by the loop and written by the SseWriter, also from
// the loop: no connection ever holds a thread.
//
// Bodies: a body over max_body_bytes is refused (413) from its
// Content-Length before any of it is read, a chunked one (411) likewise
// (ConnectionGuard::RefusedBody()); evhttp's own limit, the same, is the
// backstop: at most max_body_bytes of a body is ever buffered. Connections: every one's bufferevent
// is made here (the bevcb) and followed by the ConnectionGuard, which caps them, gives each request
// its deadline and counts evhttp's own 413s.
#include "server/http/http_server.h"

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/host_port.h"
#include "common/log.h"
#include "server/http/connection_guard.h"
#include "server/http/event_loop.h"
#include "server/http/evhttp_io.h"
#include "server/http/request_guard.h"
#include "server/http/request_log.h"
#include "server/http/sse_writer.h"
#include "server/http/tls_context.h"
#include "server/http/work_pool.h"

namespace collbench {
namespace {

// The request line and headers together.
constexpr ev_ssize_t kMaxHeaderBytes = 64 * 1024;
// A connection that sends nothing (while a request is due) or takes
// nothing (while an answer is due) for this long is closed.
constexpr int kIdleTimeoutS = 5;
// An event stream whose client takes nothing for this long is closed.
constexpr absl::Duration kStreamWriteTimeout = absl::Seconds(60);
// Requests waiting for a handler thread beyond which more are refused
// (429), per handler thread.
constexpr size_t kQueuedPerThread = 64;
constexpr int64_t kBusyRetryAfterS = 1;
// How long Shutdown() lets the last answers and chunks of the streams go
// out (a libevent timer on the loop).
constexpr absl::Duration kShutdownFlush = absl::Seconds(2);

class HttpServerImpl final : public HttpServer {
 public:
  HttpServerImpl(const HttpServerOptions& options, HttpServerDependencies deps)
      : options_(options), deps_(std::move(deps)) {
    guarded_listener_.tls = !options_.tls_cert.empty();
    guarded_listener_.form_path_prefix = options_.form_path_prefix;
  }
  ~HttpServerImpl() override { Shutdown(); }

  absl::Status Listen();
  int port() const override { return port_; }
  void Shutdown() override;
  HttpRefusalCounts refusals() const override;
  int open_connections() const override { return guard_ != nullptr ? guard_->open() : 0; }

 private:
  absl::Status CheckTlsOptions();
  absl::Status MakeHttp();
  // Frees what Listen() made when the loop never ran.
  void Discard();

  static void OnRequest(evhttp_request* req, void* arg);
  static bufferevent* MakeBufferevent(event_base* base, void* arg);
  static bufferevent* MakeTlsBufferevent(event_base* base, SSL_CTX* context);
  static void OnFlushDeadline(int fd, short what, void* arg);
  void Serve(evhttp_request* req);
  // The transport's own refusal of the request, if any: shutting down,
  // the request guard.
  std::optional<HttpReply> Refused(evhttp_request* req, const IncomingRequest& in);
  // Runs `answer` on the pool; the reply comes back to the loop.
  void RunOnPool(evhttp_request* req, std::function<HttpReply()> answer, RequestRecord record);
  // Writes the answer, logs the request and counts it.
  void Finish(evhttp_request* req, HttpReply reply, const RequestRecord& record);
  // During shutdown: tells Shutdown() once nothing is left to write.
  void CheckFlushed();

  const HttpServerOptions options_;
  const HttpServerDependencies deps_;
  GuardedListener guarded_listener_;  // loopback set by Listen()
  std::atomic<int64_t> guard_refusals_{0};
  SslContext tls_;  // null without TLS
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<WorkPool> pool_;
  absl::Notification flushed_;  // the last answers went out, or the flush deadline passed
  // The loop thread's (and Listen()'s, before the loop runs):
  evhttp* http_ = nullptr;
  evhttp_bound_socket* bound_ = nullptr;
  event* flush_deadline_ = nullptr;
  std::unique_ptr<SseWriter> streams_;
  std::unique_ptr<ConnectionGuard> guard_;
  int pending_ = 0;        // requests whose answer has not come back yet
  bool stopping_ = false;  // Shutdown() began: new requests get 503
  bool flushing_ = false;  // Shutdown() waits for flushed_
  int port_ = 0;
  bool started_ = false;  // the loop runs
  bool shut_down_ = false;
};

absl::Status HttpServerImpl::CheckTlsOptions() {
  if (options_.tls_cert.empty() != options_.tls_key.empty()) {
    return absl::InvalidArgumentError("TLS needs both a certificate and a key");
  }
  if (options_.tls_cert.empty()) {
    if (!options_.tls_client_ca.empty()) {
      return absl::InvalidArgumentError("--tls-client-ca needs --tls-cert and --tls-key");
    }
    return absl::OkStatus();
  }
  absl::StatusOr<SslContext> tls =
      MakeServerTlsContext(options_.tls_cert, options_.tls_key, options_.tls_client_ca);
  if (!tls.ok()) return tls.status();
  tls_ = *std::move(tls);
  return absl::OkStatus();
}

absl::Status HttpServerImpl::MakeHttp() {
  absl::StatusOr<std::unique_ptr<EventLoop>> loop = EventLoop::Create();
  if (!loop.ok()) return loop.status();
  loop_ = *std::move(loop);
  http_ = evhttp_new(loop_->base());
  if (http_ == nullptr) return absl::InternalError("libevent: evhttp_new failed");
  evhttp_set_allowed_methods(http_, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                        EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_PATCH |
                                        EVHTTP_REQ_OPTIONS);
  evhttp_set_max_body_size(http_, static_cast<ev_ssize_t>(std::min<size_t>(
                                      options_.limits.max_body_bytes, size_t{1} << 40)));
  evhttp_set_max_headers_size(http_, kMaxHeaderBytes);
  evhttp_set_timeout(http_, kIdleTimeoutS);
  evhttp_set_default_content_type(http_, nullptr);
  evhttp_set_gencb(http_, &HttpServerImpl::OnRequest, this);
  streams_ = std::make_unique<SseWriter>(loop_.get(), deps_.clock, options_.event_keepalive,
                                         kStreamWriteTimeout);
  streams_->SetOnEmpty([this] { CheckFlushed(); });
  ConnectionLimits limits;
  limits.max_body_bytes = options_.limits.max_body_bytes;
  limits.max_connections = options_.limits.max_connections;
  limits.max_unauthenticated = options_.limits.max_unauthenticated_connections;
  limits.max_unauthenticated_bytes = options_.limits.max_unauthenticated_bytes;
  limits.request_deadline = options_.limits.request_deadline;
  limits.unauthenticated_deadline = options_.limits.unauthenticated_request_deadline;
  limits.tls = tls_ != nullptr;
  HttpHandler* handler = deps_.handler;
  limits.refusal_body = [handler](const std::string& message) {
    return handler->ErrorReply(429, absl::ResourceExhaustedError(message)).body;
  };
  SseWriter* streams = streams_.get();
  limits.handed_over = [streams] { return streams->open(); };
  guard_ = std::make_unique<ConnectionGuard>(loop_->base(), std::move(limits));
  evhttp_set_bevcb(http_, &HttpServerImpl::MakeBufferevent, this);
  flush_deadline_ = evtimer_new(loop_->base(), &HttpServerImpl::OnFlushDeadline, this);
  if (flush_deadline_ == nullptr) return absl::InternalError("libevent: evtimer_new failed");
  return absl::OkStatus();
}

absl::Status HttpServerImpl::Listen() {
  absl::StatusOr<HostPort> address = ParseHostPort(options_.listen);
  if (!address.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("http listen address: ", address.status().message()));
  }
  const std::string host = address->host.empty() ? "0.0.0.0" : address->host;
  guarded_listener_.loopback = IsLoopbackHost(host);
  if (absl::Status tls = CheckTlsOptions(); !tls.ok()) return tls;
  if (absl::Status made = MakeHttp(); !made.ok()) return made;
  absl::StatusOr<int> port = BindListener(http_, options_.listen, host, address->port, &bound_);
  if (!port.ok()) return port.status();
  port_ = *port;
  const int threads = std::max(options_.threads, 1);
  pool_ = std::make_unique<WorkPool>(threads, kQueuedPerThread * static_cast<size_t>(threads));
  loop_->Start();
  started_ = true;
  return absl::OkStatus();
}

void HttpServerImpl::Discard() {
  streams_.reset();
  if (flush_deadline_ != nullptr) event_free(flush_deadline_);
  flush_deadline_ = nullptr;
  if (http_ != nullptr) evhttp_free(http_);
  http_ = nullptr;
  guard_.reset();
  loop_.reset();
}

void HttpServerImpl::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (!started_) return Discard();
  // Stop taking connections and requests, and end every stream.
  loop_->RunAndWait([this] {
    stopping_ = true;
    if (bound_ != nullptr) evhttp_del_accept_socket(http_, bound_);
    bound_ = nullptr;
    streams_->CloseAll();
  });
  // Every answer on the pool is computed; its reply is posted to the loop
  // before the pool's threads end.
  pool_->Shutdown();
  // Then the loop writes what is left, until nothing is or the deadline.
  loop_->Post([this] {
    flushing_ = true;
    const timeval deadline = absl::ToTimeval(kShutdownFlush);
    evtimer_add(flush_deadline_, &deadline);
    CheckFlushed();
  });
  flushed_.WaitForNotification();
  loop_->RunAndWait([this] {
    event_free(flush_deadline_);
    flush_deadline_ = nullptr;
    streams_->Abandon();  // a client too slow to take its last chunk
    evhttp_free(http_);   // closes every connection
    http_ = nullptr;
    guard_.reset();
  });
  // Work posted from now on (a stream's last notification) never runs, so
  // the writer may go once the loop has stopped.
  loop_->Stop();
  streams_.reset();
  loop_.reset();
}

void HttpServerImpl::CheckFlushed() {
  if (!flushing_ || flushed_.HasBeenNotified()) return;
  if (pending_ == 0 && streams_->size() == 0) flushed_.Notify();
}

void HttpServerImpl::OnFlushDeadline(int fd, short what, void* arg) {
  auto* self = static_cast<HttpServerImpl*>(arg);
  if (!self->flushed_.HasBeenNotified()) self->flushed_.Notify();
}

void HttpServerImpl::OnRequest(evhttp_request* req, void* arg) {
  static_cast<HttpServerImpl*>(arg)->Serve(req);
}

bufferevent* HttpServerImpl::MakeBufferevent(event_base* base, void* arg) {
  auto* self = static_cast<HttpServerImpl*>(arg);
  bufferevent* bev = self->tls_ != nullptr
                         ? MakeTlsBufferevent(base, self->tls_.get())
                         : bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
  // Without one evhttp makes its own, which the guard would not follow.
  if (bev == nullptr) {
    std::fputs("collbench-coordinator: out of memory for a connection\n", stderr);
    std::abort();
  }
  self->guard_->Opened(bev);
  return bev;
}

bufferevent* HttpServerImpl::MakeTlsBufferevent(event_base* base, SSL_CTX* context) {
  SSL* ssl = SSL_new(context);
  // Without an SSL object libevent would serve the connection in plain
  // text: never.
  if (ssl == nullptr) {
    std::fputs("collbench-coordinator: out of memory for a TLS connection\n", stderr);
    std::abort();
  }
  bufferevent* bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                    BEV_OPT_CLOSE_ON_FREE);
  // Clients that close without a close_notify are common (and harmless
  // here: every message has its own length).
  if (bev != nullptr) bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
  return bev;
}

std::optional<HttpReply> HttpServerImpl::Refused(evhttp_request* req,
                                                 const IncomingRequest& incoming) {
  const HttpRequest& in = incoming.request;
  if (stopping_) {
    HttpReply reply =
        deps_.handler->ErrorReply(503, absl::UnavailableError("the coordinator is shutting down"));
    reply.headers["Connection"] = "close";
    return reply;
  }
  if (const std::optional<BodyRefusal> body = guard_->RefusedBody(req)) {
    HttpReply reply =
        body->chunked
            ? deps_.handler->ErrorReply(
                  411, absl::InvalidArgumentError("request body: send it with a Content-Length; "
                                                  "chunked bodies are not accepted"))
            : deps_.handler->ErrorReply(
                  413,
                  absl::ResourceExhaustedError(absl::StrCat(
                      "request body: Content-Length ", body->announced, " is over the limit of ",
                      options_.limits.max_body_bytes, " bytes (--max-body-bytes)")));
    reply.headers["Connection"] = "close";  // the body was never read
    return reply;
  }
  GuardedRequest guarded;
  guarded.method = in.method;
  guarded.path = in.path;
  guarded.host = in.host;
  guarded.origin = in.origin;
  guarded.content_type = in.content_type;
  guarded.has_body = incoming.has_body;
  if (const std::optional<GuardRefusal> refusal = CheckRequest(guarded, guarded_listener_)) {
    guard_refusals_.fetch_add(1);
    const absl::StatusCode code = refusal->http_status == 415 ? absl::StatusCode::kInvalidArgument
                                                              : absl::StatusCode::kPermissionDenied;
    HttpReply reply =
        deps_.handler->ErrorReply(refusal->http_status, absl::Status(code, refusal->message));
    // A refused body is never used: the connection serves no other request.
    if (incoming.has_body) reply.headers["Connection"] = "close";
    return reply;
  }
  return std::nullopt;
}

void HttpServerImpl::Serve(evhttp_request* req) {
  const absl::Time start = deps_.clock->Now();
  const IncomingRequest incoming = ReadRequest(req);
  const HttpRequest& in = incoming.request;
  HttpDispatch dispatch = deps_.handler->Route(in);
  RequestRecord record;
  record.route = std::move(dispatch.label);
  record.method = in.method;
  record.target = in.target;
  record.peer = in.peer;
  record.caller = std::move(dispatch.caller);
  record.request_id = RequestIdFor(in.request_id.value_or(""));
  record.start = start;
  guard_->RequestRead(req, dispatch.authenticated);
  if (std::optional<HttpReply> refused = Refused(req, incoming)) {
    return Finish(req, *std::move(refused), record);
  }
  if (dispatch.on_loop) return Finish(req, dispatch.answer(), record);
  RunOnPool(req, std::move(dispatch.answer), std::move(record));
}

void HttpServerImpl::RunOnPool(evhttp_request* req, std::function<HttpReply()> answer,
                               RequestRecord record) {
  // Until the answer, nothing more is read from the connection (bytes a
  // client sends ahead would reach evhttp in a state it does not expect).
  bufferevent_disable(evhttp_connection_get_bufferevent(evhttp_request_get_connection(req)),
                      EV_READ);
  ++pending_;
  const bool queued = pool_->TrySubmit([this, req, answer = std::move(answer), record]() mutable {
    HttpReply reply;
    {
      const ScopedLogField id("request_id", record.request_id);
      reply = answer();
    }
    loop_->Post([this, req, reply = std::move(reply), record = std::move(record)]() mutable {
      --pending_;
      Finish(req, std::move(reply), record);
      CheckFlushed();
    });
  });
  if (queued) return;
  --pending_;
  HttpReply busy = deps_.handler->ErrorReply(
      429, absl::ResourceExhaustedError(absl::StrCat(
               "the coordinator's ", options_.threads,
               " HTTP handler threads are all busy and their queue is full; retry after ",
               kBusyRetryAfterS, " s")));
  busy.headers["Retry-After"] = absl::StrCat(kBusyRetryAfterS);
  Finish(req, std::move(busy), record);
}

void HttpServerImpl::Finish(evhttp_request* req, HttpReply reply, const RequestRecord& record) {
  const int status = reply.http_status;
  reply.headers["X-Request-Id"] = record.request_id;
  const absl::Time now = deps_.clock->Now();
  LogHttpRequest(record, status, reply.body, now);
  if (reply.stream != nullptr) {
    guard_->HandOver(req);
    streams_->Start(req, status, reply.headers, std::move(reply.stream));
  } else {
    guard_->Answering(req);
    SendReply(req, reply);
  }
  if (deps_.on_request) deps_.on_request(record.route, status, now - record.start);
}

HttpRefusalCounts HttpServerImpl::refusals() const {
  HttpRefusalCounts counts = guard_ != nullptr ? guard_->counts() : HttpRefusalCounts{};
  counts.request_guard = guard_refusals_.load();
  return counts;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                              HttpServerDependencies deps) {
  if (deps.handler == nullptr || deps.clock == nullptr) {
    return absl::InvalidArgumentError("HttpServer needs a handler and a clock");
  }
  auto server = std::make_unique<HttpServerImpl>(options, std::move(deps));
  if (absl::Status listening = server->Listen(); !listening.ok()) return listening;
  return std::unique_ptr<HttpServer>(std::move(server));
}

}  // namespace collbench
