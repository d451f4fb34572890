// HttpServer on cpp-httplib, the only file of the project that includes it.
// Debian's libcpp-httplib is a compiled library built with OpenSSL, zlib
// and Brotli; its pkg-config module defines the matching CPPHTTPLIB_*
// macros for this target only (server/rest/CMakeLists.txt).
//
// Request flow: the pre-routing hook notes the start time, refuses what the
// request guard refuses (server/rest/request_guard.h: body types, foreign
// Origins, foreign Host names on loopback; a refused body is not read and
// its connection is closed) and serves every request without a body itself; requests with a body
// arrive through a content-reader handler that enforces max_body_bytes while reading (also for
// chunked or compressed bodies, which httplib does not limit). Both end in Serve(): route match,
// token check, query names, handler, reply. The logger reports each finished request to on_request.
//
// Event streams: httplib serves a request on one of its threads and offers
// no way to keep a connection past the handler without that thread. So an
// answered watch request's socket is taken over: found among the process's
// descriptors by its two endpoints (httplib gives them, not the
// descriptor), duplicated for the SseWriter, and replaced under httplib by
// /dev/null, where httplib's own reply goes nowhere and its close does not
// touch the connection. The thread is free at once. Over TLS the session
// lives inside httplib, so there a stream keeps its thread as before.
#include "server/rest/http_server.h"

#include <dirent.h>
#include <fcntl.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "api/status_mapping.h"
#include "common/host_port.h"
#include "server/auth/listen_policy.h"
#include "server/core/admission.h"
#include "server/rest/event_stream.h"
#include "server/rest/request_guard.h"
#include "server/rest/rest_json.h"
#include "server/rest/routes.h"
#include "server/rest/sse_writer.h"
#include "server/rest/ui_pages.h"
#include "server/rest/ui_session.h"
#include "server/rest/ui_sessions.h"

namespace collbench {
namespace {

// When the request served on this thread began: set before routing, read
// and cleared by the logger (httplib serves a request on one thread).
thread_local absl::Time request_start = absl::InfinitePast();

// Idle keep-alive connections hold a server thread and delay Shutdown()
// by up to this long.
constexpr int kKeepAliveTimeoutS = 1;
// Retry-After of a watch stream refused for want of a request thread (TLS).
constexpr int64_t kStreamRetryAfterS = 5;

// A body over the limit is read and dropped up to this many times the
// limit before the connection is given up.
constexpr size_t kDrainFactor = 16;

// Whether httplib would read a body for this request.
bool HasBody(const httplib::Request& req) {
  const bool body_method = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" ||
                           req.method == "DELETE";
  if (!body_method) return false;
  if (req.has_header("Transfer-Encoding")) return true;
  const std::string length = req.get_header_value("Content-Length");
  return !length.empty() && length != "0";
}

std::optional<absl::string_view> Header(const httplib::Request& req, const char* name) {
  if (!req.has_header(name)) return std::nullopt;
  // httplib keeps headers in a multimap; the reference outlives the check.
  return absl::string_view(req.headers.find(name)->second);
}

// The message of an error httplib itself answered (the body is empty then).
absl::string_view HttplibErrorMessage(int status) {
  switch (status) {
    case 400:
      return "malformed HTTP request";
    case 404:
      return "no such route";
    case 413:
      return "request body too large";
    case 414:
      return "request URI too long";
    case 416:
      return "bad Range header";
    default:
      return "internal error";
  }
}

// The port of a socket address; -1 for other families.
int PortOf(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
  }
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
  }
  return -1;
}

// The descriptor of this process's connected socket with the request's
// endpoints, or -1. httplib names addresses as getnameinfo() does.
int FindConnection(const httplib::Request& req) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int found = -1;
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    sockaddr_storage local{};
    socklen_t length = sizeof(local);
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &length) != 0 ||
        PortOf(local) != req.local_port) {
      continue;
    }
    sockaddr_storage peer{};
    length = sizeof(peer);
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &length) != 0 ||
        PortOf(peer) != req.remote_port) {
      continue;
    }
    char host[NI_MAXHOST];
    if (getnameinfo(reinterpret_cast<sockaddr*>(&peer), length, host, sizeof(host), nullptr, 0,
                    NI_NUMERICHOST) != 0 ||
        req.remote_addr != host) {
      continue;
    }
    found = static_cast<int>(fd);
    break;
  }
  closedir(dir);
  return found;
}

// Whether `path` can be read and holds a PEM certificate.
bool HoldsPemCertificate(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return in && absl::StrContains(text.str(), "-----BEGIN CERTIFICATE-----");
}

class HttpServerImpl final : public HttpServer {
 public:
  HttpServerImpl(const HttpServerOptions& options, HttpServerDependencies deps)
      : options_(options), deps_(std::move(deps)), sessions_(options.ui_sessions) {
    context_.manager = deps_.manager;
    context_.hub = deps_.hub;
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
  // Answers a request the guard refuses; false when it may be routed.
  bool Refused(const httplib::Request& req, httplib::Response& res);
  absl::Status MakeServer();
  void Install();
  void ServeWithBody(const httplib::Request& req, httplib::Response& res,
                     const httplib::ContentReader& reader);
  void Serve(const httplib::Request& req, httplib::Response& res, std::string body);
  // The token check for a route; OK for public routes and without tokens.
  absl::Status Authorize(const httplib::Request& req, const RestRoute& route) const;
  // The /ui/ session's check: a route of `needed` with the cookie's session.
  absl::Status AuthorizeSession(const httplib::Request& req, Role needed) const;
  absl::Status ParseQuery(const httplib::Request& req, const RestRoute& route,
                          RestRequest* request) const;
  void Write(RestReply reply, httplib::Response& res);
  // Gives the request's connection and `reply`'s stream to the writer;
  // false when it cannot (TLS), and nothing changed.
  bool HandOver(const httplib::Request& req, RestReply& reply, httplib::Response& res);
  // Streams that keep a request thread (TLS) may take StreamThreadLimit()
  // threads; the others (an eighth, at least 2) stay for other requests.
  int StreamThreadLimit() const;
  bool ThreadForStream() const;
  void LogRequest(const httplib::Request& req, const httplib::Response& res);

  const HttpServerOptions options_;
  const HttpServerDependencies deps_;
  RestContext context_;
  mutable UiSessions sessions_;       // Find() drops an expired session
  GuardedListener guarded_listener_;  // set by Listen()
  std::atomic<int64_t> guard_refusals_{0};
  EventStreams streams_;  // those served on request threads (TLS)
  std::unique_ptr<SseWriter> writer_;  // null with TLS
  std::unique_ptr<httplib::Server> server_;
  std::thread listener_;
  int port_ = 0;
  int listen_socket_ = -1;  // httplib's, to lengthen its backlog
  bool shut_down_ = false;
};

absl::Status HttpServerImpl::MakeServer() {
  if (options_.tls_cert.empty() != options_.tls_key.empty()) {
    return absl::InvalidArgumentError("TLS needs both a certificate and a key");
  }
  if (options_.tls_cert.empty()) {
    if (!options_.tls_client_ca.empty()) {
      return absl::InvalidArgumentError("--tls-client-ca needs --tls-cert and --tls-key");
    }
    server_ = std::make_unique<httplib::Server>();
    absl::StatusOr<std::unique_ptr<SseWriter>> writer = SseWriter::Start(options_.event_keepalive);
    if (!writer.ok()) return writer.status();
    writer_ = *std::move(writer);
    return absl::OkStatus();
  }
  // httplib ignores a client CA file it cannot load (every client is then
  // refused), so an unreadable one is named here instead.
  if (!options_.tls_client_ca.empty() && !HoldsPemCertificate(options_.tls_client_ca)) {
    return absl::InvalidArgumentError(absl::StrCat("--tls-client-ca: '", options_.tls_client_ca,
                                                   "' cannot be read or holds no certificate"));
  }
  // With a client CA, httplib's SSLServer sets SSL_VERIFY_PEER |
  // SSL_VERIFY_FAIL_IF_NO_PEER_CERT: no certificate from that CA, no request.
  auto tls = std::make_unique<httplib::SSLServer>(
      options_.tls_cert.c_str(), options_.tls_key.c_str(),
      options_.tls_client_ca.empty() ? nullptr : options_.tls_client_ca.c_str());
  if (!tls->is_valid()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot load the TLS certificate ", options_.tls_cert, " and key ", options_.tls_key));
  }
  server_ = std::move(tls);
  return absl::OkStatus();
}

void HttpServerImpl::Install() {
  const int threads = std::max(options_.threads, 1);
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server_->set_payload_max_length(options_.max_body_bytes);
  server_->set_keep_alive_timeout(kKeepAliveTimeoutS);
  // httplib's default adds SO_REUSEPORT, which would let a second server
  // share the port and take part of its requests. A restart may still
  // rebind while old connections linger.
  server_->set_socket_options([this](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_socket_ = sock;  // the last one offered is the one bound
  });
  server_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    request_start = absl::Now();
    if (Refused(req, res)) return httplib::Server::HandlerResponse::Handled;
    if (HasBody(req)) return httplib::Server::HandlerResponse::Unhandled;
    Serve(req, res, "");
    return httplib::Server::HandlerResponse::Handled;
  });
  auto with_body = [this](const httplib::Request& req, httplib::Response& res,
                          const httplib::ContentReader& reader) {
    ServeWithBody(req, res, reader);
  };
  server_->Post(".*", with_body);
  server_->Put(".*", with_body);
  server_->Patch(".*", with_body);
  server_->Delete(".*", with_body);
  // Errors httplib answers itself (malformed requests, bodies over the
  // limit) get the JSON error body too; replies of ours already have one.
  server_->set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        const absl::StatusCode code = res.status == 413  ? absl::StatusCode::kResourceExhausted
                                      : res.status < 500 ? absl::StatusCode::kInvalidArgument
                                                         : absl::StatusCode::kInternal;
        res.set_content(ErrorJson(absl::Status(code, HttplibErrorMessage(res.status))),
                        "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }));
  server_->set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr error) {
        res.status = 500;
        res.set_content(ErrorJson(absl::InternalError("internal error")), "application/json");
      });
  server_->set_logger(
      [this](const httplib::Request& req, const httplib::Response& res) { LogRequest(req, res); });
}

absl::Status HttpServerImpl::Listen() {
  absl::StatusOr<HostPort> address = ParseHostPort(options_.listen);
  if (!address.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("http listen address: ", address.status().message()));
  }
  const std::string host = address->host.empty() ? "0.0.0.0" : address->host;
  int port = address->port;
  guarded_listener_.loopback = IsLoopbackHost(host);
  if (absl::Status made = MakeServer(); !made.ok()) return made;
  Install();
  if (port == 0) {
    port = server_->bind_to_any_port(host);
  } else if (!server_->bind_to_port(host, port)) {
    port = -1;
  }
  if (port <= 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.listen));
  }
  // httplib listens with a backlog of 5: a burst of connections (hundreds
  // of watchers reconnecting) would see SYNs dropped and wait a second or
  // more each. Listening again only lengthens the queue.
  if (listen_socket_ >= 0) listen(listen_socket_, SOMAXCONN);
  port_ = port;
  listener_ = std::thread([this] { server_->listen_after_bind(); });
  // Wait until it accepts, so that a Shutdown() right away stops it.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!server_->is_running() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  return absl::OkStatus();
}

void HttpServerImpl::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (server_ == nullptr) return;
  // Stop first: a stream that ends then does not go back to waiting for
  // another request on its connection.
  server_->stop();
  streams_.CloseAll();
  if (writer_ != nullptr) writer_->Shutdown();
  if (listener_.joinable()) listener_.join();
}

bool HttpServerImpl::Refused(const httplib::Request& req, httplib::Response& res) {
  GuardedRequest guarded;
  guarded.method = req.method;
  guarded.path = req.path;
  guarded.host = Header(req, "Host");
  guarded.origin = Header(req, "Origin");
  guarded.content_type = Header(req, "Content-Type");
  guarded.has_body = HasBody(req);
  const std::optional<GuardRefusal> refusal = CheckRequest(guarded, guarded_listener_);
  if (!refusal) return false;
  guard_refusals_.fetch_add(1);
  const absl::StatusCode code = refusal->http_status == 415 ? absl::StatusCode::kInvalidArgument
                                                            : absl::StatusCode::kPermissionDenied;
  res.status = refusal->http_status;
  res.set_content(ErrorJson(absl::Status(code, refusal->message)), "application/json");
  // The body, if any, is not read: the connection cannot serve another.
  if (guarded.has_body) res.set_header("Connection", "close");
  return true;
}

void HttpServerImpl::ServeWithBody(const httplib::Request& req, httplib::Response& res,
                                   const httplib::ContentReader& reader) {
  std::string body;
  bool too_large = false;
  // Past the limit the rest is read and dropped (up to a bound), so the
  // client, still sending, sees the 413 rather than a reset connection.
  const size_t drain_limit = options_.max_body_bytes * kDrainFactor;
  size_t received = 0;
  const bool read = reader([&](const char* data, size_t size) {
    received += size;
    too_large = too_large || received > options_.max_body_bytes;
    if (!too_large) body.append(data, size);
    return received <= drain_limit;
  });
  if (read && !too_large) {
    Serve(req, res, std::move(body));
    return;
  }
  // Part of the body may still be unread: this connection is done.
  if (!read) res.set_header("Connection", "close");
  if (too_large || res.status == 413) {
    res.status = 413;
    res.set_content(ErrorJson(absl::ResourceExhaustedError(absl::StrCat(
                        "request body: larger than ", options_.max_body_bytes, " bytes"))),
                    "application/json");
    return;
  }
  const absl::Status error = absl::InvalidArgumentError("request body: could not be read");
  res.status = HttpStatusFor(error.code());
  res.set_content(ErrorJson(error), "application/json");
}

void HttpServerImpl::Serve(const httplib::Request& req, httplib::Response& res, std::string body) {
  const RouteMatch match = MatchRoute(req.method, req.path);
  if (match.route == nullptr && match.path_known) {
    res.set_header("Allow", match.allow);
    RestReply reply = ErrorReply(absl::UnimplementedError(absl::StrCat(
        req.method, " is not allowed on ", req.path, " (allowed: ", match.allow, ")")));
    reply.http_status = 405;
    return Write(std::move(reply), res);
  }
  if (match.route == nullptr) {
    return Write(
        ErrorReply(absl::NotFoundError(absl::StrCat("no route for ", req.method, " ", req.path))),
        res);
  }
  if (absl::Status allowed = Authorize(req, *match.route); !allowed.ok()) {
    if (IsUiPath(match.route->path)) {  // a browser: the login form, not JSON
      const std::string why = absl::IsUnauthenticated(allowed)
                                  ? "Sign in with a token that has read access."
                                  : std::string(allowed.message());
      return Write(UiLoginReply(HttpStatusFor(allowed.code()), SafeUiTarget(req.target), why),
                   res);
    }
    if (absl::IsUnauthenticated(allowed)) {
      res.set_header("WWW-Authenticate", "Bearer realm=\"collbench\"");
    }
    return Write(ErrorReply(allowed), res);
  }
  RestRequest request;
  request.id = match.id;
  request.body = std::move(body);
  request.caller =
      deps_.authorizer != nullptr
          ? deps_.authorizer->CallerOf(req.get_header_value("Authorization"), req.remote_addr)
          : Authorizer().CallerOf("", req.remote_addr);
  if (IsUiPath(match.route->path)) {
    request.session = UiSessionFromCookies(req.get_header_value("Cookie"));
  }
  if (absl::Status parsed = ParseQuery(req, *match.route, &request); !parsed.ok()) {
    return Write(ErrorReply(parsed), res);
  }
  RestReply reply = match.route->handler(context_, request);
  if (reply.stream != nullptr && HandOver(req, reply, res)) return;
  if (reply.stream != nullptr && !ThreadForStream()) {
    // Over TLS a stream keeps its request thread: refuse it before the
    // threads /healthz, /readyz, /metrics and the API need are all taken.
    if (deps_.watchers != nullptr) deps_.watchers->CountThreadsBusy();
    return Write(ErrorReply(WithRetryAfter(
                     absl::ResourceExhaustedError(absl::StrCat(
                         "watcher limit: over TLS each watch stream holds one of the ",
                         options_.threads, " HTTP request threads, and ", StreamThreadLimit(),
                         " are taken (the rest are kept for other requests); retry after ",
                         kStreamRetryAfterS, " s, or watch over gRPC")),
                     kStreamRetryAfterS)),
                 res);
  }
  Write(std::move(reply), res);
}

int HttpServerImpl::StreamThreadLimit() const {
  return std::max(1, options_.threads - std::max(2, options_.threads / 8));
}

bool HttpServerImpl::ThreadForStream() const {
  return static_cast<int>(streams_.size()) < StreamThreadLimit();
}

bool HttpServerImpl::HandOver(const httplib::Request& req, RestReply& reply,
                              httplib::Response& res) {
  if (writer_ == nullptr) return false;
  const int fd = FindConnection(req);
  if (fd < 0) return false;
  const int mine = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (mine < 0) return false;
  const int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0 || dup3(null_fd, fd, O_CLOEXEC) < 0) {
    if (null_fd >= 0) close(null_fd);
    close(mine);
    return false;
  }
  close(null_fd);
  fcntl(mine, F_SETFL, fcntl(mine, F_GETFL) | O_NONBLOCK);
  std::string head = absl::StrCat("HTTP/1.1 ", reply.http_status,
                                  " OK\r\nContent-Type: text/event-stream\r\n"
                                  "Cache-Control: no-cache\r\n"
                                  "X-Accel-Buffering: no\r\n"  // proxies: pass events on at once
                                  "Transfer-Encoding: chunked\r\nConnection: close\r\n");
  for (const auto& [name, value] : reply.headers) absl::StrAppend(&head, name, ": ", value, "\r\n");
  head += "\r\n";
  writer_->Add(mine, std::move(head), std::move(reply.stream));
  // httplib answers into /dev/null and ends the connection it thinks it has.
  res.status = reply.http_status;
  res.set_header("Connection", "close");
  return true;
}

absl::Status HttpServerImpl::AuthorizeSession(const httplib::Request& req, Role needed) const {
  absl::StatusOr<Role> role =
      sessions_.Find(UiSessionFromCookies(req.get_header_value("Cookie")), absl::Now());
  if (!role.ok()) return role.status();
  if (needed == Role::kOperator && *role != Role::kOperator) {
    return absl::PermissionDeniedError(
        "this page needs a session signed in with an operator token");
  }
  return absl::OkStatus();
}

absl::Status HttpServerImpl::Authorize(const httplib::Request& req, const RestRoute& route) const {
  if (route.access == Access::kPublic || deps_.authorizer == nullptr) return absl::OkStatus();
  const Role needed = route.access == Access::kOperator ? Role::kOperator : Role::kRead;
  const std::string header = req.get_header_value("Authorization");
  if (!header.empty() || !IsUiPath(route.path) || !deps_.authorizer->Protects(needed)) {
    return deps_.authorizer->Check(header, needed);
  }
  return AuthorizeSession(req, needed);
}

absl::Status HttpServerImpl::ParseQuery(const httplib::Request& req, const RestRoute& route,
                                        RestRequest* request) const {
  // From the raw target: httplib's own parsing cuts a value at its second
  // '=' (filter=state=RUNNING).
  const size_t mark = req.target.find('?');
  if (mark == std::string::npos) return absl::OkStatus();
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> params =
      ParseQueryString(absl::string_view(req.target).substr(mark + 1));
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

void HttpServerImpl::Write(RestReply reply, httplib::Response& res) {
  res.status = reply.http_status;
  for (const auto& [name, value] : reply.headers) res.set_header(name, value);
  if (reply.stream == nullptr) {
    res.set_content(reply.body, reply.content_type);
    return;
  }
  std::shared_ptr<EventStream> stream = std::move(reply.stream);
  streams_.Add(stream);
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");  // proxies: pass events on at once
  res.set_chunked_content_provider(
      "text/event-stream",
      [stream](size_t offset, httplib::DataSink& sink) {
        EventStream::Chunk chunk = stream->Next();
        // An empty write would end httplib's loop; only write text.
        if (!chunk.text.empty() && !sink.write(chunk.text.data(), chunk.text.size())) {
          return false;  // the client went away
        }
        if (chunk.last) sink.done();
        return true;
      },
      [this, stream](bool success) {
        stream->Detach();
        streams_.Remove(stream.get());
      });
}

void HttpServerImpl::LogRequest(const httplib::Request& req, const httplib::Response& res) {
  const absl::Time start = request_start;
  request_start = absl::InfinitePast();
  if (!deps_.on_request) return;
  const RouteMatch match = MatchRoute(req.method, req.path);
  const absl::Duration latency =
      start == absl::InfinitePast() ? absl::ZeroDuration() : absl::Now() - start;
  deps_.on_request(match.route != nullptr ? match.route->Template() : "unmatched", res.status,
                   latency);
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
