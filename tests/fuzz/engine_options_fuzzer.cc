// SPDX-License-Identifier: Apache-2.0
// collbench-rank's command line (engine_spec/options): one argument per
// input line. Accepted options give at most kMaxSweepSizes sizes, and a
// geometric sweep that is strictly increasing within [min, max]; errors are
// InvalidArgument.
#include "tests/fuzz/fuzz_check.h"
#include "engine_spec/options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace collbench;
  const std::vector<std::string> args = fuzz::ArgsOf(fuzz::AsText(data, size));
  const absl::StatusOr<EngineOptions> options = ParseEngineArgs(args);
  if (!options.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(options.status()), options.status().ToString());
    return 0;
  }
  if (options->help) return 0;
  (void)SpecEcho(*options);
  const std::vector<uint64_t> sizes = SweepSizes(*options);
  FUZZ_CHECK(sizes.size() <= kMaxSweepSizes, std::to_string(sizes.size()) + " sizes");
  // An explicit --sizes list runs as given; the geometric sweep increases.
  if (!options->sizes_bytes.empty()) return 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i > 0) FUZZ_CHECK(sizes[i] > sizes[i - 1], "sweep not increasing");
    FUZZ_CHECK(sizes[i] >= options->min_bytes && sizes[i] <= options->max_bytes,
               std::to_string(sizes[i]) + " outside the range");
  }
  return 0;
}
