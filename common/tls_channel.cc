#include "common/tls_channel.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace collbench {

absl::StatusOr<ChannelSetup> MakeChannelSetup(const ClientTlsOptions& options) {
  ChannelSetup setup;
  if (options.ca_file.empty()) {
    if (!options.server_name.empty()) {
      return absl::InvalidArgumentError("--tls-server-name needs --tls-ca FILE");
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
  setup.credentials = grpc::SslCredentials(ssl);
  if (!options.server_name.empty()) setup.arguments.SetSslTargetNameOverride(options.server_name);
  return setup;
}

std::shared_ptr<grpc::Channel> CreateCoordinatorChannel(const std::string& address,
                                                        const ChannelSetup& setup) {
  return grpc::CreateCustomChannel(address, setup.credentials, setup.arguments);
}

}  // namespace collbench
