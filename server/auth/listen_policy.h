// SPDX-License-Identifier: Apache-2.0
// Fail closed (docs/design/security.md#fail-closed): which listeners a
// coordinator may open with the tokens it has.
//
// - Beyond loopback (any listen host other than localhost, 127.0.0.0/8 or
//   ::1; the wildcard 0.0.0.0 / :: / an empty host included) only with API
//   tokens (read or operator), unless `insecure_no_auth` says the operator
//   chose an open coordinator on purpose.
// - With API tokens, workers need a credential too: a worker token. A
//   coordinator whose API is closed but whose join is open would let anyone
//   who reaches it put a worker into runs.
//
// Pure functions; safe from any thread.
#ifndef COLLBENCH_SERVER_AUTH_LISTEN_POLICY_H_
#define COLLBENCH_SERVER_AUTH_LISTEN_POLICY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/host_port.h"  // IsLoopbackHost
#include "server/auth/authorizer.h"

namespace collbench {

// Whether a listen address ("HOST:PORT", gRPC's "unix:PATH") is reachable
// from this machine only: a loopback host, or a Unix socket.
bool IsLocalListenAddress(absl::string_view address);

// One listener: the flag that set it (for messages) and its address; an
// empty address is no listener.
struct Listener {
  std::string flag;     // e.g. "--grpc-listen"
  std::string address;  // HOST:PORT
};

// OK when the listeners may open with `tokens`. FailedPrecondition saying
// what to do otherwise (naming the flag and address, or the missing worker
// credential).
absl::Status CheckListenPolicy(const std::vector<Listener>& listeners, const Authorizer& tokens,
                               bool insecure_no_auth);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_AUTH_LISTEN_POLICY_H_
