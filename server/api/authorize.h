// SPDX-License-Identifier: Apache-2.0
// The one authorization check of the API (docs/design/security.md#credentials),
// made by both adapters before a method's handler runs: the gRPC adapter
// with the call's `authorization` metadata, the REST router with the
// Authorization header (server/api/grpc_adapter.h, server/api/rest_router.h).
// A method's role comes from the method table, so the two cannot differ.
//
// Pure; safe from any thread.
#ifndef COLLBENCH_SERVER_API_AUTHORIZE_H_
#define COLLBENCH_SERVER_API_AUTHORIZE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/auth/authorizer.h"

namespace collbench {

// OK when a call that needs `needed` may go on with `authorization` ("Bearer
// TOKEN", or ""): always for Role::kPublic and without an authorizer.
// Otherwise Authorizer::Check's answer: Unauthenticated (no or an unknown
// token) or PermissionDenied (a token whose role is not enough).
absl::Status Authorize(const Authorizer* authorizer, absl::string_view authorization, Role needed);

// Who makes the call (Authorizer::CallerOf), also without an authorizer.
std::string CallerOf(const Authorizer* authorizer, absl::string_view authorization,
                     absl::string_view peer);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_API_AUTHORIZE_H_
