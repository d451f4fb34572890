// SPDX-License-Identifier: Apache-2.0
// Network addresses written "HOST:PORT": "node1:7100", "198.18.0.2:7100",
// "[fe80::1]:7100", ":7100" (any host). One parser for every listen and
// advertise flag and for the Agent addresses peers exchange, so they all
// accept the same forms, IPv6 in brackets included.
#ifndef COLLBENCH_COMMON_HOST_PORT_H_
#define COLLBENCH_COMMON_HOST_PORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace collbench {

struct HostPort {
  std::string host;  // without IPv6 brackets; empty for ":PORT"
  int port = 0;
};

// Splits at the last colon; the port must be 0..65535. Errors name the text.
absl::StatusOr<HostPort> ParseHostPort(absl::string_view address);

// The host part of "HOST:PORT" without brackets, or `address` itself when it
// has no port (a bare host name).
std::string HostOf(absl::string_view address);

// "host:port", bracketing a host that contains a colon (IPv6).
std::string JoinHostPort(absl::string_view host, int port);

// Whether `host` (brackets stripped) means "every interface": empty,
// 0.0.0.0 or ::.
bool IsWildcardHost(absl::string_view host);

// Whether `host` (a listen address's or a Host header's host, without the
// port; IPv6 with or without brackets) names this machine's loopback:
// "localhost", an address in 127.0.0.0/8, or ::1 (also as ::ffff:127.x).
bool IsLoopbackHost(absl::string_view host);

// The address part of a gRPC peer string, port dropped:
// "ipv4:10.0.0.5:41234" -> "ipv4:10.0.0.5", "ipv6:[::1]:5000" ->
// "ipv6:[::1]"; anything else as it is. Limits kept per caller use it, so
// one caller's connections share one budget.
std::string PeerAddress(absl::string_view grpc_peer);

// OK if `address` is an address a peer can dial and that is safe to pass on
// (it ends up in an MPI launcher's host list): HOST:PORT with port 1..65535
// and a host that is a DNS name (labels of letters, digits, '-' and '_',
// at most 63 characters each, 253 in all, not starting with '-'), an IPv4
// address, or a bracketed IPv6 address (hex digits, ':' and '.'); not a
// wildcard. InvalidArgument saying what is wrong otherwise.
absl::Status ValidateDialAddress(absl::string_view address);

}  // namespace collbench

#endif  // COLLBENCH_COMMON_HOST_PORT_H_
