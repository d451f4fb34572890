// SPDX-License-Identifier: Apache-2.0
#include "server/api/authorize.h"

#include <string>

namespace collbench {

absl::Status Authorize(const Authorizer* authorizer, absl::string_view authorization, Role needed) {
  if (needed == Role::kPublic || authorizer == nullptr) return absl::OkStatus();
  return authorizer->Check(authorization, needed);
}

std::string CallerOf(const Authorizer* authorizer, absl::string_view authorization,
                     absl::string_view peer) {
  return authorizer != nullptr ? authorizer->CallerOf(authorization, peer)
                               : Authorizer().CallerOf("", peer);
}

}  // namespace collbench
