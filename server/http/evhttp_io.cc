// SPDX-License-Identifier: Apache-2.0
#include "server/http/evhttp_io.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>

#include "absl/strings/str_cat.h"
#include "server/http/request_guard.h"

namespace collbench {
namespace {

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

}  // namespace

IncomingRequest ReadRequest(evhttp_request* req) {
  IncomingRequest incoming;
  HttpRequest& in = incoming.request;
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
  incoming.has_body =
      IsStateChanging(in.method) &&
      (Header(headers, "Transfer-Encoding").has_value() || (!length.empty() && length != "0"));
  char* address = nullptr;
  uint16_t port = 0;
  evhttp_connection_get_peer(evhttp_request_get_connection(req), &address, &port);
  if (address != nullptr) in.peer = address;
  evbuffer* body = evhttp_request_get_input_buffer(req);
  in.body.resize(evbuffer_get_length(body));
  evbuffer_copyout(body, in.body.data(), in.body.size());
  return incoming;
}

void SendReply(evhttp_request* req, const HttpReply& reply) {
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

absl::StatusOr<int> BindListener(evhttp* http, const std::string& listen, const std::string& host,
                                 int port, evhttp_bound_socket** bound) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (getaddrinfo(host.c_str(), service.c_str(), &hints, &found) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", listen));
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
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("cannot listen on ", listen));
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  const int bound_port = address.ss_family == AF_INET6
                             ? ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port)
                             : ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
  *bound = evhttp_accept_socket_with_handle(http, fd);
  if (*bound == nullptr) {
    close(fd);
    return absl::UnavailableError(absl::StrCat("cannot listen on ", listen));
  }
  return bound_port;
}

}  // namespace collbench
