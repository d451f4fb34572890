// SPDX-License-Identifier: Apache-2.0
// The HTTP listener's OpenSSL context (docs/design/security.md#tls): the server's
// certificate chain and key and, with a client CA, mutual TLS: a client
// without a certificate that chains to that CA fails the handshake and
// reaches no handler. TLS 1.2 at least.
//
// Thread safety: the context is read-only once made; SSL objects made
// from it belong to one connection each.
#ifndef COLLBENCH_SERVER_HTTP_TLS_CONTEXT_H_
#define COLLBENCH_SERVER_HTTP_TLS_CONTEXT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace collbench {

struct SslContextFree {
  void operator()(SSL_CTX* context) const;
};
using SslContext = std::unique_ptr<SSL_CTX, SslContextFree>;

// A server context from PEM files; `client_ca` may be empty (no client
// certificates asked for). InvalidArgument naming the file that cannot be
// loaded.
absl::StatusOr<SslContext> MakeServerTlsContext(const std::string& cert, const std::string& key,
                                                const std::string& client_ca);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_HTTP_TLS_CONTEXT_H_
