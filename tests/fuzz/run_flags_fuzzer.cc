// SPDX-License-Identifier: Apache-2.0
// `collbench run`'s command line (client/run_flags): one argument per input
// line. An accepted command line gives a RunSpec whose validation (as the
// CLI does it, with default limits) never crashes and names a spec field
// when it refuses; errors are InvalidArgument.
#include "absl/strings/match.h"
#include "api/validation.h"
#include "client/run_flags.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace collbench;
  const std::vector<std::string> args = fuzz::ArgsOf(fuzz::AsText(data, size));
  const absl::StatusOr<RunRequest> request = ParseRunFlags(args);
  if (!request.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(request.status()), request.status().ToString());
    return 0;
  }
  const absl::Status valid = ValidateRunSpec(request->spec, ValidationLimits{});
  if (!valid.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(valid), valid.ToString());
    FUZZ_CHECK(absl::StartsWith(valid.message(), "spec"), valid.ToString());
  }
  return 0;
}
