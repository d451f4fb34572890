#include "common/host_port.h"

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

}  // namespace

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

}  // namespace collbench
