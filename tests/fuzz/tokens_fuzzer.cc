// SPDX-License-Identifier: Apache-2.0
// The coordinator's token file (server/auth): Authorizer::FromText, then a
// check of an Authorization header taken from the same input. A refusal of
// the file names the line; Check answers OK, Unauthenticated or
// PermissionDenied and nothing else.
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "server/auth/authorizer.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace collbench;
  const absl::string_view text = fuzz::AsText(data, size);
  const absl::StatusOr<Authorizer> authorizer = Authorizer::FromText(text);
  if (!authorizer.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(authorizer.status()), authorizer.status().ToString());
    FUZZ_CHECK(absl::StrContains(authorizer.status().message(), "line "),
               authorizer.status().ToString());
    return 0;
  }
  // The last line doubles as a header value.
  const size_t newline = text.rfind('\n');
  const absl::string_view header =
      newline == absl::string_view::npos ? text : text.substr(newline + 1);
  for (Role role : {Role::kRead, Role::kOperator, Role::kWorker}) {
    const absl::Status status = authorizer->Check(header, role);
    FUZZ_CHECK(status.ok() || absl::IsUnauthenticated(status) || absl::IsPermissionDenied(status),
               status.ToString());
    const absl::Status bare = authorizer->CheckToken(header, role);
    FUZZ_CHECK(bare.ok() || absl::IsUnauthenticated(bare) || absl::IsPermissionDenied(bare),
               bare.ToString());
  }
  // A known API token is named by its place, never shown.
  const std::string caller = authorizer->CallerOf(header, "");
  FUZZ_CHECK(!caller.empty(), "empty caller");
  absl::string_view token = header;
  if (absl::ConsumePrefix(&token, "Bearer ") && !token.empty() &&
      authorizer->Protects(Role::kRead) &&
      authorizer->CheckToken(token, Role::kRead).ok()) {
    FUZZ_CHECK(absl::StartsWith(caller, "token ") && !absl::StrContains(caller, token),
               "CallerOf shows a token: " + caller);
  }
  return 0;
}
