// SPDX-License-Identifier: Apache-2.0
// HttpServer on libevent's evhttp (server/README.md says why this library).
// Only this file, event_loop.cc and sse_writer.cc include libevent; it
// stays private to server/rest (server/rest/CMakeLists.txt).
//
// Threads: one event loop (server/rest/event_loop.h) owns the listening
// socket and every connection, plain or TLS (a bufferevent_openssl per
// connection, made in the bevcb). evhttp reads a whole request, within
// the header, body and time limits, and calls Serve() on the loop. The
// request guard, the route match, the token check and the query names
// are checked there; quick routes (health, readiness, the login form)
// answer at once, the others run their handler on the WorkPool and post
// the reply back to the loop, which writes it. An event stream is started
// by the loop and written by the SseWriter, also from the loop: no
// connection ever holds a thread.
//
// Bodies: evhttp reads up to kDrainFactor times max_body_bytes (beyond
// that it answers 413 itself and closes); a body over max_body_bytes is
// answered 413 with the JSON error body here.
#include "server/rest/http_server.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "api/status_mapping.h"
#include "common/host_port.h"
#include "common/log.h"
#include "server/auth/listen_policy.h"
#include "server/core/admission.h"
#include "server/rest/event_loop.h"
#include "server/rest/event_stream.h"
#include "server/rest/request_guard.h"
#include "server/rest/request_log.h"
#include "server/rest/rest_json.h"
#include "server/rest/routes.h"
#include "server/rest/sse_writer.h"
#include "server/rest/tls_context.h"
#include "server/rest/ui_pages.h"
#include "server/rest/ui_session.h"
#include "server/rest/ui_sessions.h"
#include "server/rest/work_pool.h"

namespace collbench {
namespace {

// A body over the limit is still read, up to this many times the limit,
// so the client, still sending, sees the JSON 413 rather than a reset.
constexpr size_t kDrainFactor = 16;
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
// How long Shutdown() lets the last chunks of the streams go out.
constexpr absl::Duration kShutdownFlush = absl::Seconds(2);

// A request as the dispatcher needs it, copied out of evhttp's.
struct Incoming {
  std::string method;
  std::string target;  // as sent: path and query
  std::string path;    // percent-decoded, without the query
  std::string peer;    // the client's address
  std::optional<std::string> host, origin, content_type, request_id;
  std::string authorization, cookie;
  bool has_body = false;
  std::string body;
};

std::string MethodName(evhttp_cmd_type type) {
  switch (type) {
    case EVHTTP_REQ_GET:
      return "GET";
    case EVHTTP_REQ_POST:
      return "POST";
    case EVHTTP_REQ_HEAD:
      return "HEAD";
    case EVHTTP_REQ_PUT:
      return "PUT";
    case EVHTTP_REQ_DELETE:
      return "DELETE";
    case EVHTTP_REQ_OPTIONS:
      return "OPTIONS";
    case EVHTTP_REQ_TRACE:
      return "TRACE";
    case EVHTTP_REQ_CONNECT:
      return "CONNECT";
    case EVHTTP_REQ_PATCH:
      return "PATCH";
  }
  return "UNKNOWN";
}

std::optional<std::string> Header(evkeyvalq* headers, const char* name) {
  const char* value = evhttp_find_header(headers, name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

// The path of a request target, percent-decoded ('+' stays).
std::string DecodedPath(absl::string_view target) {
  const std::string raw(target.substr(0, target.find('?')));
  size_t size = 0;
  char* decoded = evhttp_uridecode(raw.c_str(), /*decode_plus=*/0, &size);
  if (decoded == nullptr) return raw;
  std::string path(decoded, size);
  std::free(decoded);
  return path;
}

Incoming Read(evhttp_request* req) {
  Incoming in;
  in.method = MethodName(evhttp_request_get_command(req));
  in.target = evhttp_request_get_uri(req);
  in.path = DecodedPath(in.target);
  evkeyvalq* headers = evhttp_request_get_input_headers(req);
  in.host = Header(headers, "Host");
  in.origin = Header(headers, "Origin");
  in.content_type = Header(headers, "Content-Type");
  in.request_id = Header(headers, "X-Request-Id");
  in.authorization = Header(headers, "Authorization").value_or("");
  in.cookie = Header(headers, "Cookie").value_or("");
  const std::string length = Header(headers, "Content-Length").value_or("");
  in.has_body = IsStateChanging(in.method) && (Header(headers, "Transfer-Encoding").has_value() ||
                                               (!length.empty() && length != "0"));
  char* address = nullptr;
  uint16_t port = 0;
  evhttp_connection_get_peer(evhttp_request_get_connection(req), &address, &port);
  if (address != nullptr) in.peer = address;
  evbuffer* body = evhttp_request_get_input_buffer(req);
  in.body.resize(evbuffer_get_length(body));
  evbuffer_copyout(body, in.body.data(), in.body.size());
  return in;
}

// libevent knows the phrases of RFC 2616 only.
const char* ReasonPhrase(int status) {
  switch (status) {
    case 413:
      return "Payload Too Large";
    case 421:
      return "Misdirected Request";
    case 429:
      return "Too Many Requests";
    default:
      return nullptr;  // libevent's
  }
}

class HttpServerImpl final : public HttpServer {
 public:
  HttpServerImpl(const HttpServerOptions& options, HttpServerDependencies deps)
      : options_(options), deps_(std::move(deps)), sessions_(options.ui_sessions) {
    context_.manager = deps_.manager;
    context_.hub = deps_.hub;
    context_.workflows = deps_.workflows;
    context_.schedules = deps_.schedules;
    context_.metrics_text = deps_.metrics_text;
    context_.ready = deps_.ready;
    context_.keepalive = options_.event_keepalive;
    context_.watchers = deps_.watchers;
    context_.authorizer = deps_.authorizer;
    context_.tls = !options_.tls_cert.empty();
    context_.sessions = &sessions_;
    guarded_listener_.tls = context_.tls;
  }
  ~HttpServerImpl() override { Shutdown(); }

  absl::Status Listen();
  int port() const override { return port_; }
  void Shutdown() override;
  int64_t login_refusals() const override { return sessions_.login_refusals(); }
  int64_t guard_refusals() const override { return guard_refusals_.load(); }

 private:
  absl::Status CheckTlsOptions();
  absl::Status MakeHttp();
  // Binds and listens on host:port (port 0: any); the socket's port.
  absl::StatusOr<int> Bind(const std::string& host, int port);
  // Frees what Listen() made when the loop never ran.
  void Discard();

  static void OnRequest(evhttp_request* req, void* arg);
  static bufferevent* MakeBufferevent(event_base* base, void* arg);
  void Serve(evhttp_request* req);
  // The answer when the request guard refuses the request.
  std::optional<RestReply> Refused(const Incoming& in);
  // Runs the route's handler on the pool; the reply comes back to the loop.
  void Dispatch(evhttp_request* req, const RestRoute& route, RestRequest request,
                RequestRecord record);
  // Writes the answer, logs the request and counts it.
  void Finish(evhttp_request* req, RestReply reply, const RequestRecord& record);
  void Reply(evhttp_request* req, const RestReply& reply);
  // The token check for a route; OK for public routes and without tokens.
  absl::Status Authorize(const Incoming& in, const RestRoute& route) const;
  // The /ui/ session's check: a route of `needed` with the cookie's session.
  absl::Status AuthorizeSession(const Incoming& in, Role needed) const;
  absl::Status ParseQuery(const Incoming& in, const RestRoute& route, RestRequest* request) const;

  const HttpServerOptions options_;
  const HttpServerDependencies deps_;
  RestContext context_;
  mutable UiSessions sessions_;       // Find() drops an expired session
  GuardedListener guarded_listener_;  // set by Listen()
  std::atomic<int64_t> guard_refusals_{0};
  SslContext tls_;  // null without TLS
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<WorkPool> pool_;
  // The loop thread's (and Listen()'s, before the loop runs):
  evhttp* http_ = nullptr;
  evhttp_bound_socket* bound_ = nullptr;
  std::unique_ptr<SseWriter> streams_;
  int pending_ = 0;        // requests whose handler has not answered yet
  bool stopping_ = false;  // Shutdown() began: new requests get 503
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
  const size_t drain_limit = options_.max_body_bytes * kDrainFactor;
  evhttp_set_max_body_size(http_, static_cast<ev_ssize_t>(
                                      std::min<size_t>(drain_limit, size_t{1} << 40)));
  evhttp_set_max_headers_size(http_, kMaxHeaderBytes);
  evhttp_set_timeout(http_, kIdleTimeoutS);
  evhttp_set_default_content_type(http_, nullptr);
  evhttp_set_gencb(http_, &HttpServerImpl::OnRequest, this);
  if (tls_ != nullptr) evhttp_set_bevcb(http_, &HttpServerImpl::MakeBufferevent, this);
  streams_ = std::make_unique<SseWriter>(loop_.get(), options_.event_keepalive,
                                         kStreamWriteTimeout);
  return absl::OkStatus();
}

absl::StatusOr<int> HttpServerImpl::Bind(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (getaddrinfo(host.c_str(), service.c_str(), &hints, &found) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.listen));
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR only: a restart may rebind while old connections
    // linger, but no second server shares the port (no SO_REUSEPORT).
    const int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    // A burst of connections (hundreds of watchers reconnecting) must not
    // see SYNs dropped: the longest backlog there is.
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.listen));
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
  const int bound_port =
      bound.ss_family == AF_INET6
          ? ntohs(reinterpret_cast<const sockaddr_in6&>(bound).sin6_port)
          : ntohs(reinterpret_cast<const sockaddr_in&>(bound).sin_port);
  bound_ = evhttp_accept_socket_with_handle(http_, fd);
  if (bound_ == nullptr) {
    close(fd);
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.listen));
  }
  return bound_port;
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
  absl::StatusOr<int> port = Bind(host, address->port);
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
  if (http_ != nullptr) evhttp_free(http_);
  http_ = nullptr;
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
  // Every handler answers; its reply is posted to the loop before the
  // pool's threads end.
  pool_->Shutdown();
  const absl::Time deadline = absl::Now() + kShutdownFlush;
  for (;;) {
    bool flushed = false;
    loop_->RunAndWait([this, &flushed] { flushed = pending_ == 0 && streams_->size() == 0; });
    if (flushed || absl::Now() >= deadline) break;
    absl::SleepFor(absl::Milliseconds(5));
  }
  loop_->RunAndWait([this] {
    streams_->Abandon();  // a client too slow to take its last chunk
    evhttp_free(http_);   // closes every connection
    http_ = nullptr;
  });
  // Work posted from now on (a stream's last notification) never runs, so
  // the writer may go once the loop has stopped.
  loop_->Stop();
  streams_.reset();
  loop_.reset();
}

void HttpServerImpl::OnRequest(evhttp_request* req, void* arg) {
  static_cast<HttpServerImpl*>(arg)->Serve(req);
}

bufferevent* HttpServerImpl::MakeBufferevent(event_base* base, void* arg) {
  auto* self = static_cast<HttpServerImpl*>(arg);
  SSL* ssl = SSL_new(self->tls_.get());
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

std::optional<RestReply> HttpServerImpl::Refused(const Incoming& in) {
  GuardedRequest guarded;
  guarded.method = in.method;
  guarded.path = in.path;
  guarded.host = in.host;
  guarded.origin = in.origin;
  guarded.content_type = in.content_type;
  guarded.has_body = in.has_body;
  const std::optional<GuardRefusal> refusal = CheckRequest(guarded, guarded_listener_);
  if (!refusal) return std::nullopt;
  guard_refusals_.fetch_add(1);
  const absl::StatusCode code = refusal->http_status == 415 ? absl::StatusCode::kInvalidArgument
                                                            : absl::StatusCode::kPermissionDenied;
  RestReply reply = ErrorReply(absl::Status(code, refusal->message));
  reply.http_status = refusal->http_status;
  // A refused body is never used: the connection serves no other request.
  if (in.has_body) reply.headers["Connection"] = "close";
  return reply;
}

void HttpServerImpl::Serve(evhttp_request* req) {
  const absl::Time start = absl::Now();
  const Incoming in = Read(req);
  const RouteMatch match = MatchRoute(in.method, in.path);
  RequestRecord record;
  record.route = match.route != nullptr ? match.route->Template() : "unmatched";
  record.method = in.method;
  record.target = in.target;
  record.peer = in.peer;
  record.caller = deps_.authorizer != nullptr
                      ? deps_.authorizer->CallerOf(in.authorization, in.peer)
                      : Authorizer().CallerOf("", in.peer);
  record.request_id = RequestIdFor(in.request_id.value_or(""));
  record.start = start;
  auto answer = [&](RestReply reply) { Finish(req, std::move(reply), record); };
  if (stopping_) {
    RestReply reply = ErrorReply(absl::UnavailableError("the coordinator is shutting down"));
    reply.headers["Connection"] = "close";
    return answer(std::move(reply));
  }
  if (std::optional<RestReply> refused = Refused(in)) return answer(*std::move(refused));
  if (in.body.size() > options_.max_body_bytes) {
    RestReply reply = ErrorReply(absl::ResourceExhaustedError(
        absl::StrCat("request body: larger than ", options_.max_body_bytes, " bytes")));
    reply.http_status = 413;
    return answer(std::move(reply));
  }
  if (match.route == nullptr && match.path_known) {
    RestReply reply = ErrorReply(absl::UnimplementedError(absl::StrCat(
        in.method, " is not allowed on ", in.path, " (allowed: ", match.allow, ")")));
    reply.http_status = 405;
    reply.headers["Allow"] = match.allow;
    return answer(std::move(reply));
  }
  if (match.route == nullptr) {
    return answer(
        ErrorReply(absl::NotFoundError(absl::StrCat("no route for ", in.method, " ", in.path))));
  }
  if (absl::Status allowed = Authorize(in, *match.route); !allowed.ok()) {
    if (IsUiPath(match.route->path)) {  // a browser: the login form, not JSON
      const std::string why = absl::IsUnauthenticated(allowed)
                                  ? "Sign in with a token that has read access."
                                  : std::string(allowed.message());
      return answer(UiLoginReply(HttpStatusFor(allowed.code()), SafeUiTarget(in.target), why));
    }
    RestReply reply = ErrorReply(allowed);
    if (absl::IsUnauthenticated(allowed)) {
      reply.headers["WWW-Authenticate"] = "Bearer realm=\"collbench\"";
    }
    return answer(std::move(reply));
  }
  RestRequest request;
  request.id = match.id;
  request.body = in.body;
  request.caller = record.caller;
  if (IsUiPath(match.route->path)) request.session = UiSessionFromCookies(in.cookie);
  if (absl::Status parsed = ParseQuery(in, *match.route, &request); !parsed.ok()) {
    return answer(ErrorReply(parsed));
  }
  if (match.route->quick) return answer(match.route->handler(context_, request));
  Dispatch(req, *match.route, std::move(request), std::move(record));
}

void HttpServerImpl::Dispatch(evhttp_request* req, const RestRoute& route, RestRequest request,
                              RequestRecord record) {
  // Until the answer, nothing more is read from the connection (bytes a
  // client sends ahead would reach evhttp in a state it does not expect).
  bufferevent_disable(evhttp_connection_get_bufferevent(evhttp_request_get_connection(req)),
                      EV_READ);
  ++pending_;
  const bool queued =
      pool_->TrySubmit([this, req, handler = route.handler, request = std::move(request),
                        record]() mutable {
        RestReply reply;
        {
          const ScopedLogField id("request_id", record.request_id);
          reply = handler(context_, request);
        }
        loop_->Post([this, req, reply = std::move(reply), record = std::move(record)]() mutable {
          --pending_;
          Finish(req, std::move(reply), record);
        });
      });
  if (queued) return;
  --pending_;
  Finish(req,
         ErrorReply(WithRetryAfter(absl::ResourceExhaustedError(absl::StrCat(
                                       "the coordinator's ", options_.threads,
                                       " HTTP handler threads are all busy and their queue is "
                                       "full; retry after ",
                                       kBusyRetryAfterS, " s")),
                                   kBusyRetryAfterS)),
         record);
}

void HttpServerImpl::Finish(evhttp_request* req, RestReply reply, const RequestRecord& record) {
  const int status = reply.http_status;
  reply.headers["X-Request-Id"] = record.request_id;
  LogHttpRequest(record, status, reply.body);
  if (reply.stream != nullptr) {
    streams_->Start(req, status, reply.headers, std::move(reply.stream));
  } else {
    Reply(req, reply);
  }
  if (deps_.on_request) deps_.on_request(record.route, status, absl::Now() - record.start);
}

void HttpServerImpl::Reply(evhttp_request* req, const RestReply& reply) {
  evkeyvalq* out = evhttp_request_get_output_headers(req);
  evhttp_add_header(out, "Content-Type", reply.content_type.c_str());
  for (const auto& [name, value] : reply.headers) {
    evhttp_add_header(out, name.c_str(), value.c_str());
  }
  evbuffer* body = evbuffer_new();
  evbuffer_add(body, reply.body.data(), reply.body.size());
  evhttp_send_reply(req, reply.http_status, ReasonPhrase(reply.http_status), body);
  evbuffer_free(body);
}

absl::Status HttpServerImpl::AuthorizeSession(const Incoming& in, Role needed) const {
  absl::StatusOr<Role> role = sessions_.Find(UiSessionFromCookies(in.cookie), absl::Now());
  if (!role.ok()) return role.status();
  if (needed == Role::kOperator && *role != Role::kOperator) {
    return absl::PermissionDeniedError(
        "this page needs a session signed in with an operator token");
  }
  return absl::OkStatus();
}

absl::Status HttpServerImpl::Authorize(const Incoming& in, const RestRoute& route) const {
  if (route.access == Access::kPublic || deps_.authorizer == nullptr) return absl::OkStatus();
  const Role needed = route.access == Access::kOperator ? Role::kOperator : Role::kRead;
  if (!in.authorization.empty() || !IsUiPath(route.path) || !deps_.authorizer->Protects(needed)) {
    return deps_.authorizer->Check(in.authorization, needed);
  }
  return AuthorizeSession(in, needed);
}

absl::Status HttpServerImpl::ParseQuery(const Incoming& in, const RestRoute& route,
                                        RestRequest* request) const {
  const size_t mark = in.target.find('?');
  if (mark == std::string::npos) return absl::OkStatus();
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> params =
      ParseQueryString(absl::string_view(in.target).substr(mark + 1));
  if (!params.ok()) return params.status();
  for (auto& [raw_name, value] : *params) {
    const std::string name = SnakeCase(raw_name);
    const auto& known = route.query_params;
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": not a query parameter of ", route.Template(),
          known.empty() ? " (it takes none)"
                        : absl::StrCat(" (it takes ", absl::StrJoin(known, ", "), ")")));
    }
    if (!request->query.emplace(name, std::move(value)).second) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": given more than once"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                              HttpServerDependencies deps) {
  if (deps.manager == nullptr || deps.hub == nullptr) {
    return absl::InvalidArgumentError("HttpServer needs a run manager and a watch hub");
  }
  auto server = std::make_unique<HttpServerImpl>(options, std::move(deps));
  if (absl::Status listening = server->Listen(); !listening.ok()) return listening;
  return std::unique_ptr<HttpServer>(std::move(server));
}

}  // namespace collbench
