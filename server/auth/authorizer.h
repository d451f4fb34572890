// SPDX-License-Identifier: Apache-2.0
// Bearer-token authorization (docs/design/security.md#credentials), shared by the gRPC services and
// the REST API. Four roles a token may hold: `read` (list, get, watch),
// `operator` (also create, cancel, drain), `worker` (join through
// WorkerGateway.Connect) and `launcher` (join the same way as the trusted
// launcher, which starts the runs that span workers:
// docs/design/security.md#the-launcher); a fifth, `public`, is what a call
// needs that needs no token at all (health, readiness, metrics, the /ui/
// login).
//
// Tokens come from a file, one per line: a role, white space, the token.
// Blank lines and lines starting with '#' are ignored; a role may have
// several tokens.
//
//   # role     token
//   read       r-4f1c…
//   operator   o-9a0e…
//   worker     w-77d2…
//
// The API and joining are protected separately: API calls need a token only
// when the file holds read or operator tokens, joining (as a worker or a
// launcher) only when it holds worker or launcher tokens. An Authorizer
// without tokens (collbench local, tests) allows everything.
//
// Token checks take the same time whichever token (or none) matches: the
// presented token's SHA-256 digest is compared with every known token's
// digest (CRYPTO_memcmp), with no early exit and no ordered lookup, so the
// time of a refusal tells nothing about how close a guess was. Only the
// digests are kept.
//
// Thread safety: immutable after construction; Check() may be called from
// any thread.
#ifndef COLLBENCH_SERVER_AUTH_AUTHORIZER_H_
#define COLLBENCH_SERVER_AUTH_AUTHORIZER_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace collbench {

// What a call needs, and what a token holds (never kPublic). The one role
// enum of the API: the method table (server/api/method_table.h) and every
// route name one of these.
enum class Role { kPublic, kRead, kOperator, kWorker, kLauncher };

// "public", "read", "operator", "worker", "launcher".
absl::string_view RoleName(Role role);

class Authorizer {
 public:
  // Allows every request.
  Authorizer() = default;

  // Parses the token file's text. InvalidArgument names the line.
  static absl::StatusOr<Authorizer> FromText(absl::string_view text);
  // Reads and parses a token file.
  static absl::StatusOr<Authorizer> FromFile(const std::string& path);

  // Adds one token (e.g. --join-token-file for the worker role).
  void Add(Role role, std::string token);

  // Whether calls that need `role` need a token at all (never for kPublic).
  bool Protects(Role role) const;

  // Checks the value of an HTTP `Authorization` header or a gRPC
  // `authorization` metadata entry ("Bearer TOKEN") for a call that needs
  // `needed`. OK when allowed; Unauthenticated when the header is missing,
  // malformed or names no known token; PermissionDenied when the token's
  // role is not enough. An operator token may do what a read token may.
  absl::Status Check(absl::string_view authorization, Role needed) const;
  // The same for a bare token (e.g. the join token of a worker's Register).
  absl::Status CheckToken(absl::string_view token, Role needed) const;

  // The role of a known token, or NotFound; constant time as CheckToken.
  absl::StatusOr<Role> RoleOf(absl::string_view token) const;

  // Who makes a call, for per-caller limits: "token N" (the token's place
  // in the file's sorted order, never the token itself) for a known API
  // token, else "peer HOST" from `peer` (an IP address, or gRPC's
  // "ipv4:HOST:PORT"; the port is dropped), or "anonymous" without one.
  std::string CallerOf(absl::string_view authorization, absl::string_view peer) const;

 private:
  using Digest = std::array<uint8_t, 32>;
  struct Entry {
    Digest digest;  // SHA-256 of the token
    Role role;
  };
  // The index in entries_ of the token, or -1; looks at every entry.
  int Find(absl::string_view token) const;

  std::vector<Entry> entries_;  // in the tokens' sorted order (CallerOf)
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_AUTH_AUTHORIZER_H_
