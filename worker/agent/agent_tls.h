// SPDX-License-Identifier: Apache-2.0
// TLS on the Agent listener and on the launch shim's calls to peers
// (docs/design/security.md#tls: mutual where certificates are given, the workers' Agent
// listener included).
//
// collbench-worker --tls-cert F --tls-key F serves its Agent over TLS; with
// --tls-client-ca F every caller must present a certificate that chains to
// that CA (mutual TLS). The shim, which mpirun runs as `collbench-worker
// launch-shim` on the launcher worker, dials peers with the worker's own
// certificate and verifies theirs against the peer CA (--tls-client-ca, or
// --tls-ca when there is none). It learns those settings from file paths
// in its environment, which the launcher passes to mpirun (ShimTlsEnv):
// paths, never key material. A peer's certificate must name the host of
// its advertised agent address (a DNS name or an IP SAN).
//
// Thread safety: plain functions.
#ifndef COLLBENCH_WORKER_AGENT_AGENT_TLS_H_
#define COLLBENCH_WORKER_AGENT_AGENT_TLS_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/security/server_credentials.h"
#include "worker/agent/launch_shim.h"

namespace collbench {

inline constexpr char kAgentTlsCaEnv[] = "COLLBENCH_AGENT_TLS_CA";
inline constexpr char kAgentTlsCertEnv[] = "COLLBENCH_AGENT_TLS_CERT";
inline constexpr char kAgentTlsKeyEnv[] = "COLLBENCH_AGENT_TLS_KEY";

struct AgentTlsOptions {
  std::string cert_file;       // --tls-cert: this worker's certificate chain
  std::string key_file;        // --tls-key
  std::string client_ca_file;  // --tls-client-ca: callers must present a certificate
  std::string peer_ca_file;    // verifies peers' Agent certificates
};

// The Agent listener's credentials: insecure without a certificate.
// InvalidArgument naming the flag (see MakeServerCredentials), or when TLS
// is on but there is no CA to verify peers with.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> AgentServerCredentials(
    const AgentTlsOptions& options);

// What the launcher adds to mpirun's environment for the shim: the three
// paths when TLS is on, nothing otherwise.
std::map<std::string, std::string> ShimTlsEnv(const AgentTlsOptions& options);

// The shim's options from its environment (ShimTlsEnv): TLS credentials
// when COLLBENCH_AGENT_TLS_CA is set, with the client certificate when the
// cert and key are set; insecure otherwise. InvalidArgument naming the
// variable when a file cannot be read.
absl::StatusOr<ShimOptions> ShimOptionsFromEnv();

}  // namespace collbench

#endif  // COLLBENCH_WORKER_AGENT_AGENT_TLS_H_
