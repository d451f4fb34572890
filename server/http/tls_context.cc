// SPDX-License-Identifier: Apache-2.0
#include "server/http/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace collbench {
namespace {

// Whether `path` can be read and holds a PEM certificate.
bool HoldsPemCertificate(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return in && absl::StrContains(text.str(), "-----BEGIN CERTIFICATE-----");
}

}  // namespace

void SslContextFree::operator()(SSL_CTX* context) const { SSL_CTX_free(context); }

absl::StatusOr<SslContext> MakeServerTlsContext(const std::string& cert, const std::string& key,
                                                const std::string& client_ca) {
  // A client CA file that cannot be used would refuse every client; name
  // it instead.
  if (!client_ca.empty() && !HoldsPemCertificate(client_ca)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-client-ca: '", client_ca, "' cannot be read or holds no certificate"));
  }
  SslContext context(SSL_CTX_new(TLS_server_method()));
  if (context == nullptr) return absl::InternalError("OpenSSL: SSL_CTX_new failed");
  SSL_CTX_set_min_proto_version(context.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(context.get(), SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_use_certificate_chain_file(context.get(), cert.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(context.get(), key.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(context.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat("cannot load the TLS certificate ", cert, " and key ", key));
  }
  if (!client_ca.empty()) {
    if (SSL_CTX_load_verify_locations(context.get(), client_ca.c_str(), nullptr) != 1) {
      ERR_clear_error();
      return absl::InvalidArgumentError(
          absl::StrCat("--tls-client-ca: '", client_ca, "' cannot be loaded"));
    }
    SSL_CTX_set_client_CA_list(context.get(), SSL_load_client_CA_file(client_ca.c_str()));
    SSL_CTX_set_verify(context.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return context;
}

}  // namespace collbench
