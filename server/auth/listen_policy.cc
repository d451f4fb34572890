// SPDX-License-Identifier: Apache-2.0
#include "server/auth/listen_policy.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/host_port.h"

namespace collbench {

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

bool IsLocalListenAddress(absl::string_view address) {
  if (absl::StartsWith(address, "unix:") || absl::StartsWith(address, "unix-abstract:")) {
    return true;
  }
  absl::StatusOr<HostPort> parsed = ParseHostPort(address);
  return parsed.ok() && !parsed->host.empty() && IsLoopbackHost(parsed->host);
}

absl::Status CheckListenPolicy(const std::vector<Listener>& listeners, const Authorizer& tokens,
                               bool insecure_no_auth) {
  if (tokens.Protects(Role::kRead) && !tokens.Protects(Role::kWorker)) {
    return absl::FailedPreconditionError(
        "the API has tokens but workers need none to join: add a line 'worker TOKEN' to the "
        "--tokens file, or give the coordinator --join-token-file FILE (or COLLBENCH_JOIN_TOKEN), "
        "and start the workers with the same token in --join-token-file");
  }
  if (tokens.Protects(Role::kRead) || insecure_no_auth) return absl::OkStatus();
  for (const Listener& listener : listeners) {
    if (listener.address.empty() || IsLocalListenAddress(listener.address)) continue;
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing to serve ", listener.flag, " ", listener.address,
        " beyond loopback without API tokens: anyone who reaches it could create runs. Give "
        "--tokens FILE (lines 'read TOKEN', 'operator TOKEN', 'worker TOKEN'; chmod 600), or "
        "listen on 127.0.0.1, or pass --insecure-no-auth to serve everyone on purpose"));
  }
  return absl::OkStatus();
}

}  // namespace collbench
