// SPDX-License-Identifier: Apache-2.0
#include "server/auth/listen_policy.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/host_port.h"

namespace collbench {

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
