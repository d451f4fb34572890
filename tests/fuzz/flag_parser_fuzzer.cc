// SPDX-License-Identifier: Apache-2.0
// The service binaries' flag parser (common/flag_parser): one argument per
// input line, against a parser with every kind of flag. Parsing never
// crashes, an error is InvalidArgument, and a flag error names the flag.
#include "absl/strings/match.h"
#include "common/flag_parser.h"
#include "common/units.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace collbench;
  std::string address;
  int port = 0;
  bool verbose = false;
  uint64_t size_bytes = 0;
  double timeout_s = 0;
  FlagParser flags;
  flags.String("listen", &address, "address to listen on");
  flags.Int("port", &port, "port");
  flags.Bool("verbose", &verbose, "say more");
  flags.Custom("max-bytes", "SIZE",
               [&](absl::string_view v) -> absl::Status {
                 absl::StatusOr<uint64_t> parsed = ParseBytes(v);
                 if (!parsed.ok()) return parsed.status();
                 size_bytes = *parsed;
                 return absl::OkStatus();
               },
               "largest size");
  flags.Custom("timeout", "DURATION",
               [&](absl::string_view v) -> absl::Status {
                 absl::StatusOr<double> parsed = ParseDurationSeconds(v);
                 if (!parsed.ok()) return parsed.status();
                 timeout_s = *parsed;
                 return absl::OkStatus();
               },
               "how long");

  const std::vector<std::string> args = fuzz::ArgsOf(fuzz::AsText(data, size));
  const bool stop_at_positional = size > 0 && data[0] % 2 == 0;
  const absl::Status status = flags.Parse(args, stop_at_positional);
  if (status.ok()) {
    FUZZ_CHECK(flags.rest().size() <= args.size(), "more positionals than arguments");
  } else {
    FUZZ_CHECK(absl::IsInvalidArgument(status), status.ToString());
    FUZZ_CHECK(!status.message().empty(), "empty error");
  }
  FUZZ_CHECK(absl::StrContains(flags.Usage(), "--max-bytes SIZE"), flags.Usage());
  return 0;
}
