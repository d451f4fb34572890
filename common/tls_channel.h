// SPDX-License-Identifier: Apache-2.0
// Client channels to the coordinator, plain or TLS (docs/design/security.md#tls): what
// collbench-worker and the collbench CLI dial with `--tls-ca FILE` and
// `--tls-server-name NAME`, presenting `--tls-cert`/`--tls-key` to a
// coordinator that requires client certificates (--tls-client-ca).
//
// With no CA file the channel is insecure (the coordinator serves TLS only
// when it is given --tls-cert and --tls-key). With one, the coordinator's
// certificate must chain to that CA and name the host dialled, or
// `server_name` when it is set (the certificate names the Service, the
// client dials an address).
//
// Thread safety: plain functions; the results may be shared across threads.
#ifndef COLLBENCH_COMMON_TLS_CHANNEL_H_
#define COLLBENCH_COMMON_TLS_CHANNEL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"

namespace collbench {

struct ClientTlsOptions {
  std::string ca_file;      // PEM roots; empty: insecure channel
  std::string server_name;  // expected name in the certificate; empty: the host dialled
  // A client certificate chain and its key (PEM), presented when the server
  // asks (mutual TLS); both or neither, and only with ca_file.
  std::string cert_file;
  std::string key_file;
};

// Credentials and channel arguments for `options`. InvalidArgument naming
// the flag and the file when the CA file cannot be read or holds no PEM
// certificate, when a server name or a client certificate is given without
// a CA file, or only one of the client certificate and key.
struct ChannelSetup {
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  grpc::ChannelArguments arguments;
};
absl::StatusOr<ChannelSetup> MakeChannelSetup(const ClientTlsOptions& options);

// The server side (docs/design/security.md#tls: mutual where certificates are given):
// TLS with `cert_file` and `key_file` (PEM); with `client_ca_file` too,
// every client must present a certificate that chains to it (mutual TLS).
// None of them: insecure.
struct ServerTlsOptions {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
};

// Credentials for a listener. InvalidArgument naming the flag and the file
// when one cannot be read or holds no PEM block, when only one of cert and
// key is given, or a client CA without them. `flag_prefix` names the flags
// in errors (e.g. "--tls-").
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerTlsOptions& options, const std::string& flag_prefix = "--tls-");

// The whole of a PEM file; InvalidArgument naming `flag` and the file when
// it cannot be read or holds no "-----BEGIN " block.
absl::StatusOr<std::string> ReadPemFile(const std::string& path, const std::string& flag);

// A channel to `address` with `setup`.
std::shared_ptr<grpc::Channel> CreateCoordinatorChannel(const std::string& address,
                                                        const ChannelSetup& setup);

}  // namespace collbench

#endif  // COLLBENCH_COMMON_TLS_CHANNEL_H_
