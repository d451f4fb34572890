// Bearer-token authorization (DESIGN §5), shared by the gRPC services and
// the REST API. Three roles: `read` (list, get, watch), `operator` (also
// create, cancel, drain) and `worker` (join through WorkerGateway.Connect).
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
// when the file holds read or operator tokens, joining only when it holds
// worker tokens. An Authorizer without tokens (collbench local, tests)
// allows everything.
//
// Thread safety: immutable after construction; Check() may be called from
// any thread.
#ifndef COLLBENCH_SERVER_AUTH_AUTHORIZER_H_
#define COLLBENCH_SERVER_AUTH_AUTHORIZER_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace collbench {

enum class Role { kRead, kOperator, kWorker };

// "read", "operator", "worker".
absl::string_view RoleName(Role role);

class Authorizer {
 public:
  // Allows every request.
  Authorizer() = default;

  // Parses the token file's text. InvalidArgument names the line.
  static absl::StatusOr<Authorizer> FromText(absl::string_view text);
  // Reads and parses a token file.
  static absl::StatusOr<Authorizer> FromFile(const std::string& path);

  // Adds one token (e.g. --join-token for the worker role).
  void Add(Role role, std::string token);

  // Whether calls that need `role` need a token at all.
  bool Protects(Role role) const;

  // Checks the value of an HTTP `Authorization` header or a gRPC
  // `authorization` metadata entry ("Bearer TOKEN") for a call that needs
  // `needed`. OK when allowed; Unauthenticated when the header is missing,
  // malformed or names no known token; PermissionDenied when the token's
  // role is not enough. An operator token may do what a read token may.
  absl::Status Check(absl::string_view authorization, Role needed) const;
  // The same for a bare token (e.g. the join token of a worker's Register).
  absl::Status CheckToken(absl::string_view token, Role needed) const;

  // Who makes a call, for per-caller limits: "token N" (the token's place
  // in the file's sorted order, never the token itself) for a known API
  // token, else "peer HOST" from `peer` (an IP address, or gRPC's
  // "ipv4:HOST:PORT"; the port is dropped), or "anonymous" without one.
  std::string CallerOf(absl::string_view authorization, absl::string_view peer) const;

 private:
  std::map<std::string, Role, std::less<>> roles_;  // token -> role
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_AUTH_AUTHORIZER_H_
