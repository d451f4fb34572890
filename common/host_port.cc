// SPDX-License-Identifier: Apache-2.0
#include "common/host_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace collbench {
namespace {

absl::string_view StripBrackets(absl::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    return host.substr(1, host.size() - 2);
  }
  return host;
}

bool IsDnsName(absl::string_view host) {
  if (host.empty() || host.size() > 253) return false;
  size_t label = 0;
  for (size_t i = 0; i < host.size(); ++i) {
    const char c = host[i];
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_') return false;
    if (label == 0 && c == '-') return false;
    if (++label > 63) return false;
  }
  return label > 0;
}

bool IsIpv6Text(absl::string_view host) {
  if (host.size() < 2 || host.size() > 45) return false;
  for (const char c : host) {
    if (!absl::ascii_isxdigit(c) && c != ':' && c != '.') return false;
  }
  return absl::StrContains(host, ':');
}

}  // namespace

std::string PeerAddress(absl::string_view grpc_peer) {
  const size_t colon = grpc_peer.rfind(':');
  if (colon == absl::string_view::npos || colon == grpc_peer.find(':')) {
    return std::string(grpc_peer);
  }
  return std::string(grpc_peer.substr(0, colon));
}

absl::Status ValidateDialAddress(absl::string_view address) {
  absl::StatusOr<HostPort> parsed = ParseHostPort(address);
  if (!parsed.ok()) return parsed.status();
  if (parsed->port < 1) {
    return absl::InvalidArgumentError(absl::StrCat("\"", address, "\" has no port to dial"));
  }
  const bool bracketed = absl::StrContains(address, '[');
  const bool valid = bracketed ? IsIpv6Text(parsed->host) : IsDnsName(parsed->host);
  if (!valid || IsWildcardHost(parsed->host)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", address, "\" does not name a host to dial (a DNS name, an IPv4 address or a "
        "bracketed IPv6 address)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<HostPort> ParseHostPort(absl::string_view address) {
  const size_t colon = address.rfind(':');
  HostPort parsed;
  const absl::string_view host =
      colon == absl::string_view::npos ? address : address.substr(0, colon);
  // An unbracketed IPv6 address ("::1:7100") is ambiguous: refuse it.
  const bool ambiguous = !absl::StartsWith(host, "[") && absl::StrContains(host, ':');
  if (colon == absl::string_view::npos || ambiguous ||
      !absl::SimpleAtoi(address.substr(colon + 1), &parsed.port) || parsed.port < 0 ||
      parsed.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", address, "\" is not HOST:PORT (an IPv6 host goes in brackets: [::1]:7100)"));
  }
  parsed.host = std::string(StripBrackets(host));
  return parsed;
}

std::string HostOf(absl::string_view address) {
  if (absl::StatusOr<HostPort> parsed = ParseHostPort(address); parsed.ok()) {
    return parsed->host;
  }
  return std::string(StripBrackets(address));
}

std::string JoinHostPort(absl::string_view host, int port) {
  if (absl::StrContains(host, ':')) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

bool IsWildcardHost(absl::string_view host) {
  host = StripBrackets(host);
  return host.empty() || host == "0.0.0.0" || host == "::";
}

bool IsLoopbackHost(absl::string_view host) {
  std::string name = absl::AsciiStrToLower(host);
  if (name == "localhost" || name == "localhost.") return true;
  if (absl::StartsWith(name, "[") && absl::EndsWith(name, "]")) {
    name = name.substr(1, name.size() - 2);
  }
  in_addr v4;
  if (inet_pton(AF_INET, name.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6;
  if (inet_pton(AF_INET6, name.c_str(), &v6) != 1) return false;
  if (std::memcmp(&v6, &in6addr_loopback, sizeof v6) == 0) return true;
  static constexpr unsigned char kV4Mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(v6.s6_addr, kV4Mapped, sizeof kV4Mapped) == 0 && v6.s6_addr[12] == 127;
}

}  // namespace collbench
