// SPDX-License-Identifier: Apache-2.0
#include "server/http/request_guard.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/host_port.h"

namespace collbench {
namespace {

constexpr absl::string_view kJson = "application/json";
constexpr absl::string_view kForm = "application/x-www-form-urlencoded";

// A host and port as a Host header or an Origin names them; port 0 when
// none was given.
struct Authority {
  std::string host;  // lower case, IPv6 without brackets
  int port = 0;
  bool valid = false;
};

Authority ParseAuthority(absl::string_view text) {
  Authority out;
  absl::string_view host = text;
  absl::string_view port;
  if (absl::ConsumePrefix(&host, "[")) {
    const size_t close = host.find(']');
    if (close == absl::string_view::npos) return out;
    port = host.substr(close + 1);
    host = host.substr(0, close);
    if (!port.empty() && !absl::ConsumePrefix(&port, ":")) return out;
  } else if (const size_t colon = host.rfind(':'); colon != absl::string_view::npos) {
    port = host.substr(colon + 1);
    host = host.substr(0, colon);
    if (absl::StrContains(host, ':')) return out;  // IPv6 needs brackets
  }
  if (host.empty()) return out;
  for (char c : host) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != ':' &&
        c != '_') {
      return out;
    }
  }
  if (!port.empty() && (!absl::SimpleAtoi(port, &out.port) || out.port <= 0 || out.port > 65535)) {
    return out;
  }
  out.host = absl::AsciiStrToLower(host);
  out.valid = true;
  return out;
}

// The media type of a Content-Type value, lower case, parameters dropped.
std::string MediaType(absl::string_view content_type) {
  const size_t semicolon = content_type.find(';');
  return absl::AsciiStrToLower(absl::StripAsciiWhitespace(content_type.substr(0, semicolon)));
}

std::optional<GuardRefusal> CheckBody(const GuardedRequest& request,
                                      const GuardedListener& listener) {
  if (!request.has_body) return std::nullopt;
  const bool ui = !listener.form_path_prefix.empty() &&
                  absl::StartsWith(request.path, listener.form_path_prefix);
  const std::string type = request.content_type ? MediaType(*request.content_type) : "";
  if (type == kJson || (ui && type == kForm)) return std::nullopt;
  return GuardRefusal{
      415, absl::StrCat(
               "Content-Type: ", type.empty() ? "a request body without a type" : "'" + type + "'",
               " is not accepted; send the body as ", kJson,
               ui ? absl::StrCat(" (or ", kForm, " from this server's forms)") : "")};
}

std::optional<GuardRefusal> CheckHost(const GuardedRequest& request,
                                      const GuardedListener& listener) {
  if (!listener.loopback || !request.host) return std::nullopt;
  const Authority host = ParseAuthority(*request.host);
  if (host.valid && IsLoopbackHost(host.host)) return std::nullopt;
  return GuardRefusal{
      421, absl::StrCat("Host: '", *request.host,
                        "' is not this server: on loopback it answers only localhost, 127.x.y.z "
                        "and [::1]")};
}

std::optional<GuardRefusal> CheckOrigin(const GuardedRequest& request,
                                        const GuardedListener& listener) {
  if (!IsStateChanging(request.method) || !request.origin) return std::nullopt;
  const absl::string_view scheme = listener.tls ? "https" : "http";
  const int default_port = listener.tls ? 443 : 80;
  absl::string_view origin = *request.origin;
  bool same = false;
  if (absl::ConsumePrefix(&origin, scheme) && absl::ConsumePrefix(&origin, "://") && request.host) {
    const Authority from = ParseAuthority(origin);
    const Authority own = ParseAuthority(*request.host);
    same = from.valid && own.valid && from.host == own.host &&
           (from.port == 0 ? default_port : from.port) == (own.port == 0 ? default_port : own.port);
  }
  if (same) return std::nullopt;
  return GuardRefusal{
      403, absl::StrCat("Origin: '", *request.origin, "' is not this server's own (", scheme, "://",
                        request.host ? *request.host : "?",
                        "): a state-changing request from another site's page is refused")};
}

}  // namespace

bool IsStateChanging(absl::string_view method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
}

std::optional<GuardRefusal> CheckRequest(const GuardedRequest& request,
                                         const GuardedListener& listener) {
  if (std::optional<GuardRefusal> refused = CheckHost(request, listener)) return refused;
  if (std::optional<GuardRefusal> refused = CheckOrigin(request, listener)) return refused;
  return CheckBody(request, listener);
}

}  // namespace collbench
