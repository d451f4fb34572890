// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the fuzz targets: an invariant check that stops the
// fuzzer with a message (libFuzzer then saves the input), and the split of
// an input into command-line arguments.
#ifndef COLLBENCH_TESTS_FUZZ_FUZZ_CHECK_H_
#define COLLBENCH_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

// Aborts with `what` (and the failed condition) when `condition` is false.
#define FUZZ_CHECK(condition, what)                                          \
  do {                                                                       \
    if (!(condition)) {                                                      \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n  %s\n", __FILE__, \
                   __LINE__, #condition, std::string(what).c_str());         \
      std::abort();                                                          \
    }                                                                        \
  } while (0)

namespace collbench::fuzz {

inline absl::string_view AsText(const uint8_t* data, size_t size) {
  return absl::string_view(reinterpret_cast<const char*>(data), size);
}

// One argument per line, so corpus files read as the command lines they
// stand for. An empty input is no arguments.
inline std::vector<std::string> ArgsOf(absl::string_view text) {
  if (text.empty()) return {};
  return absl::StrSplit(text, '\n');
}

}  // namespace collbench::fuzz

#endif  // COLLBENCH_TESTS_FUZZ_FUZZ_CHECK_H_
