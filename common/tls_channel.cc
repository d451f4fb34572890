// SPDX-License-Identifier: Apache-2.0
#include "common/tls_channel.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace collbench {

absl::StatusOr<std::string> ReadPemFile(const std::string& path, const std::string& flag) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": cannot read '", path, "': ", std::strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  if (!absl::StrContains(text.str(), "-----BEGIN ")) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": '", path, "' holds no PEM block"));
  }
  return text.str();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerTlsOptions& options, const std::string& flag_prefix) {
  if (options.cert_file.empty() != options.key_file.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag_prefix, "cert and ", flag_prefix, "key go together"));
  }
  if (options.cert_file.empty()) {
    if (!options.client_ca_file.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(flag_prefix, "client-ca needs ", flag_prefix,
                                                     "cert and ", flag_prefix, "key"));
    }
    return grpc::InsecureServerCredentials();
  }
  grpc::SslServerCredentialsOptions ssl;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  auto cert = ReadPemFile(options.cert_file, flag_prefix + "cert");
  if (!cert.ok()) return cert.status();
  auto key = ReadPemFile(options.key_file, flag_prefix + "key");
  if (!key.ok()) return key.status();
  pair.cert_chain = *std::move(cert);
  pair.private_key = *std::move(key);
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  if (!options.client_ca_file.empty()) {
    auto roots = ReadPemFile(options.client_ca_file, flag_prefix + "client-ca");
    if (!roots.ok()) return roots.status();
    ssl.pem_root_certs = *std::move(roots);
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

absl::StatusOr<ChannelSetup> MakeChannelSetup(const ClientTlsOptions& options) {
  ChannelSetup setup;
  if (options.cert_file.empty() != options.key_file.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  if (options.ca_file.empty()) {
    if (!options.server_name.empty()) {
      return absl::InvalidArgumentError("--tls-server-name needs --tls-ca FILE");
    }
    if (!options.cert_file.empty()) {
      return absl::InvalidArgumentError("--tls-cert needs --tls-ca FILE to verify the server with");
    }
    setup.credentials = grpc::InsecureChannelCredentials();
    return setup;
  }
  std::ifstream in(options.ca_file);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-ca: cannot read '", options.ca_file, "': ", std::strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  if (!absl::StrContains(text.str(), "-----BEGIN CERTIFICATE-----")) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-ca: '", options.ca_file, "' holds no PEM certificate"));
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = text.str();
  if (!options.cert_file.empty()) {
    auto cert = ReadPemFile(options.cert_file, "--tls-cert");
    if (!cert.ok()) return cert.status();
    auto key = ReadPemFile(options.key_file, "--tls-key");
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = *std::move(cert);
    ssl.pem_private_key = *std::move(key);
  }
  setup.credentials = grpc::SslCredentials(ssl);
  if (!options.server_name.empty()) setup.arguments.SetSslTargetNameOverride(options.server_name);
  return setup;
}

std::shared_ptr<grpc::Channel> CreateCoordinatorChannel(const std::string& address,
                                                        const ChannelSetup& setup) {
  // A large workflow's answer (a hunt over hundreds of workers keeps tens of
  // thousands of measurements) is past gRPC's default 4 MB.
  constexpr int kMaxAnswerBytes = 256 << 20;
  grpc::ChannelArguments arguments = setup.arguments;
  arguments.SetMaxReceiveMessageSize(kMaxAnswerBytes);
  return grpc::CreateCustomChannel(address, setup.credentials, arguments);
}

}  // namespace collbench
