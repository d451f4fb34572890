// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/agent_tls.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/tls_channel.h"

namespace collbench {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> AgentServerCredentials(
    const AgentTlsOptions& options) {
  if (!options.cert_file.empty() && options.peer_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert: the Agent serves TLS, so launches need a CA to verify peers with: give "
        "--tls-client-ca (or --tls-ca)");
  }
  return MakeServerCredentials(
      ServerTlsOptions{options.cert_file, options.key_file, options.client_ca_file});
}

std::map<std::string, std::string> ShimTlsEnv(const AgentTlsOptions& options) {
  if (options.cert_file.empty()) return {};
  return {{kAgentTlsCaEnv, options.peer_ca_file},
          {kAgentTlsCertEnv, options.cert_file},
          {kAgentTlsKeyEnv, options.key_file}};
}

absl::StatusOr<ShimOptions> ShimOptionsFromEnv() {
  ShimOptions options;
  ClientTlsOptions tls;
  tls.ca_file = Env(kAgentTlsCaEnv);
  tls.cert_file = Env(kAgentTlsCertEnv);
  tls.key_file = Env(kAgentTlsKeyEnv);
  if (tls.ca_file.empty()) {
    if (!tls.cert_file.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(kAgentTlsCertEnv, " is set without ", kAgentTlsCaEnv));
    }
    return options;  // plaintext, as the peers' Agents serve then
  }
  absl::StatusOr<ChannelSetup> setup = MakeChannelSetup(tls);
  if (!setup.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kAgentTlsCaEnv, ": ", setup.status().message()));
  }
  options.credentials = setup->credentials;
  return options;
}

}  // namespace collbench
