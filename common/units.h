// SPDX-License-Identifier: Apache-2.0
// Parsing and formatting of byte counts ("64K", "1G") and durations ("0.5s",
// "200ms"). Suffixes are powers of 1024
// (docs/design/command-lines.md#sizes-and-durations). Errors name the text that
// could not be read so callers can pass them straight to the user.
#ifndef COLLBENCH_COMMON_UNITS_H_
#define COLLBENCH_COMMON_UNITS_H_

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"

namespace collbench {

// Accepts a non-negative integer with an optional suffix K, M, G or T (any
// case, optionally followed by "B" or "iB"): "8", "64K", "1MiB", "2g".
absl::StatusOr<uint64_t> ParseBytes(absl::string_view text);

// A comma-separated list of ParseBytes values: "8,1K,64K"; or a preset:
// "deepbench" (DeepBench's seven all-reduce sizes, as float32 bytes) or
// "netpipe:MIN:MAX" (NetPIPE's perturbed sizes: each power of two in
// [MIN, MAX] with its neighbours 3 bytes below and above).
absl::StatusOr<std::vector<uint64_t>> ParseByteList(absl::string_view text);

// The shortest exact form: 65536 -> "64K", 1000 -> "1000".
std::string FormatBytes(uint64_t bytes);

// Rounded, for people: 1536 -> "1.5 KiB", 23622320128 -> "22.0 GiB".
std::string FormatBytesHuman(uint64_t bytes);

// Accepts a positive decimal number with a unit: ns, us, ms, s, m, h
// ("0.5s", "200ms"). A bare number is seconds.
absl::StatusOr<double> ParseDurationSeconds(absl::string_view text);

// "1.5s", "200ms", "12us".
std::string FormatDuration(double seconds);

// A link rate in bits per second, decimal as links are sold: a positive
// number with a unit bit, kbit, mbit, gbit or tbit (any case; "bps",
// "kbps" ... and "Gb/s" read the same): "25gbit", "400Gb/s", "100mbit".
absl::StatusOr<double> ParseBitRate(absl::string_view text);

// "25 Gbit/s", "100 Mbit/s", for people.
std::string FormatBitRate(double bits_per_s);

}  // namespace collbench

#endif  // COLLBENCH_COMMON_UNITS_H_
