// SPDX-License-Identifier: Apache-2.0
// collbench-rank's JSON-lines records (common/records), as the agent reads
// them from the engine's output. An accepted line writes back to a line
// that parses to the same text again; errors are InvalidArgument.
#include "common/records.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace collbench;
  const absl::StatusOr<Record> record = ParseJsonLine(fuzz::AsText(data, size));
  if (!record.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(record.status()), record.status().ToString());
    return 0;
  }
  const std::string line = ToJsonLine(*record);
  const absl::StatusOr<Record> again = ParseJsonLine(line);
  FUZZ_CHECK(again.ok(), "'" + line + "' does not parse back: " + again.status().ToString());
  FUZZ_CHECK(ToJsonLine(*again) == line, "'" + line + "' changes when read back");
  return 0;
}
