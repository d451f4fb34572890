// SPDX-License-Identifier: Apache-2.0
// Sizes and durations (common/units): ParseBytes, ParseByteList and
// ParseDurationSeconds. A parsed size formats back to text that parses to
// the same value; a parsed duration is positive and finite; every error
// quotes what it could not read.
#include <cmath>

#include "absl/strings/match.h"
#include "common/units.h"
#include "tests/fuzz/fuzz_check.h"

namespace collbench {
namespace {

void CheckBytesRoundTrip(uint64_t bytes) {
  const std::string text = FormatBytes(bytes);
  const absl::StatusOr<uint64_t> again = ParseBytes(text);
  FUZZ_CHECK(again.ok() && *again == bytes, "FormatBytes(" + std::to_string(bytes) +
                                                ") = '" + text + "' does not parse back");
  FUZZ_CHECK(!FormatBytesHuman(bytes).empty(), text);
}

void FuzzOne(absl::string_view text) {
  if (absl::StatusOr<uint64_t> bytes = ParseBytes(text); bytes.ok()) {
    CheckBytesRoundTrip(*bytes);
  } else {
    FUZZ_CHECK(absl::IsInvalidArgument(bytes.status()), bytes.status().ToString());
  }

  if (absl::StatusOr<std::vector<uint64_t>> list = ParseByteList(text); list.ok()) {
    for (uint64_t bytes : *list) CheckBytesRoundTrip(bytes);
  } else {
    FUZZ_CHECK(absl::IsInvalidArgument(list.status()), list.status().ToString());
  }

  if (absl::StatusOr<double> seconds = ParseDurationSeconds(text); seconds.ok()) {
    FUZZ_CHECK(*seconds > 0 && std::isfinite(*seconds), std::string(text));
    // FormatDuration is for people (%g): it reads back, to its 6 digits,
    // over the range a run's durations take.
    if (*seconds >= 1e-9 && *seconds < 1e5) {
      const std::string shown = FormatDuration(*seconds);
      const absl::StatusOr<double> again = ParseDurationSeconds(shown);
      FUZZ_CHECK(again.ok() && std::fabs(*again - *seconds) <= 1e-5 * *seconds,
                 "'" + std::string(text) + "' is shown as '" + shown + "'");
    }
  } else {
    FUZZ_CHECK(absl::StrContains(seconds.status().message(), "duration"),
               seconds.status().ToString());
  }
}

}  // namespace
}  // namespace collbench

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  collbench::FuzzOne(collbench::fuzz::AsText(data, size));
  return 0;
}
