// SPDX-License-Identifier: Apache-2.0
#include "common/units.h"

#include <cctype>
#include <cmath>
#include <iterator>
#include <limits>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace collbench {
namespace {

absl::Status BadSize(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("malformed size '", text, "': ", why));
}

}  // namespace

absl::StatusOr<uint64_t> ParseBytes(absl::string_view text) {
  const absl::string_view s = absl::StripAsciiWhitespace(text);
  if (s.empty()) return BadSize(text, "empty");
  size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) {
    ++digits;
  }
  if (digits == 0) {
    return BadSize(text, "expected a non-negative whole number of bytes, "
                         "optionally with K, M, G or T");
  }
  uint64_t value = 0;
  if (!absl::SimpleAtoi(s.substr(0, digits), &value)) {
    return BadSize(text, "number too large");
  }
  std::string suffix = absl::AsciiStrToUpper(s.substr(digits));
  int shift = 0;
  if (!suffix.empty()) {
    switch (suffix[0]) {
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      case 'T': shift = 40; break;
      case 'B': shift = 0; break;
      default:
        return BadSize(text, absl::StrCat("unknown suffix '", s.substr(digits),
                                          "' (use K, M, G or T)"));
    }
    absl::string_view rest = absl::string_view(suffix).substr(suffix[0] == 'B' ? 0 : 1);
    if (!(rest.empty() || rest == "B" || (shift > 0 && rest == "IB"))) {
      return BadSize(text, absl::StrCat("unknown suffix '", s.substr(digits),
                                        "' (use K, M, G or T)"));
    }
  }
  if (shift > 0 && value > (std::numeric_limits<uint64_t>::max() >> shift)) {
    return BadSize(text, "too large");
  }
  return value << shift;
}

namespace {

// DeepBench's all-reduce sizes (its float counts, in bytes of float32).
constexpr uint64_t kDeepBenchBytes[] = {400000,   12390400,  16777216, 26214400,
                                        67108868, 153440000, 258000000};

// NetPIPE's sizes: every power of two from `min` to `max`, each with its
// neighbours 3 bytes below and above (where they lie in [min, max]).
absl::StatusOr<std::vector<uint64_t>> NetpipeSizes(absl::string_view range) {
  std::vector<absl::string_view> ends = absl::StrSplit(range, ':');
  if (ends.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("'netpipe:", range, "' is not netpipe:MIN:MAX"));
  }
  absl::StatusOr<uint64_t> min = ParseBytes(ends[0]);
  if (!min.ok()) return min.status();
  absl::StatusOr<uint64_t> max = ParseBytes(ends[1]);
  if (!max.ok()) return max.status();
  if (*min < 1 || *max < *min) {
    return absl::InvalidArgumentError(
        absl::StrCat("'netpipe:", range, "': MIN must be at least 1 and at most MAX"));
  }
  std::set<uint64_t> sizes;
  for (uint64_t p = 1; p <= *max && p != 0; p <<= 1) {
    for (uint64_t v : {p > 3 ? p - 3 : 0, p, p + 3}) {
      if (v >= *min && v <= *max) sizes.insert(v);
    }
  }
  return std::vector<uint64_t>(sizes.begin(), sizes.end());
}

}  // namespace

absl::StatusOr<std::vector<uint64_t>> ParseByteList(absl::string_view text) {
  if (text == "deepbench") {
    return std::vector<uint64_t>(std::begin(kDeepBenchBytes), std::end(kDeepBenchBytes));
  }
  if (absl::StartsWith(text, "netpipe:")) return NetpipeSizes(text.substr(8));
  std::vector<uint64_t> out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    auto bytes = ParseBytes(part);
    if (!bytes.ok()) return bytes.status();
    out.push_back(*bytes);
  }
  return out;
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kSuffixes[] = {"T", "G", "M", "K"};
  static constexpr int kShifts[] = {40, 30, 20, 10};
  if (bytes != 0) {
    for (int i = 0; i < 4; ++i) {
      const uint64_t unit = uint64_t{1} << kShifts[i];
      if (bytes % unit == 0) return absl::StrCat(bytes / unit, kSuffixes[i]);
    }
  }
  return absl::StrCat(bytes);
}

std::string FormatBytesHuman(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return absl::StrCat(bytes, " B");
  return absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

namespace {

// "25gbit" into 25 and "gbit"; false when it does not start with a number.
bool SplitNumber(absl::string_view text, double* value, absl::string_view* unit) {
  const absl::string_view s = absl::StripAsciiWhitespace(text);
  size_t end = 0;
  while (end < s.size() &&
         (std::isdigit(static_cast<unsigned char>(s[end])) || s[end] == '.')) {
    ++end;
  }
  *unit = s.substr(end);
  return end > 0 && absl::SimpleAtod(s.substr(0, end), value);
}

}  // namespace

absl::StatusOr<double> ParseDurationSeconds(absl::string_view text) {
  double value = 0;
  absl::string_view unit;
  if (!SplitNumber(text, &value, &unit)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "malformed duration '", text, "': expected a number with a unit "
        "(ns, us, ms, s, m, h), e.g. 0.5s"));
  }
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1;
  else if (unit == "ms") scale = 1e-3;
  else if (unit == "us") scale = 1e-6;
  else if (unit == "ns") scale = 1e-9;
  else if (unit == "m") scale = 60;
  else if (unit == "h") scale = 3600;
  else {
    return absl::InvalidArgumentError(absl::StrCat(
        "malformed duration '", text, "': unknown unit '", unit,
        "' (use ns, us, ms, s, m or h)"));
  }
  const double seconds = value * scale;
  if (!(seconds > 0) || !std::isfinite(seconds)) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed duration '", text, "': must be positive"));
  }
  return seconds;
}

std::string FormatDuration(double seconds) {
  if (seconds >= 1) return absl::StrFormat("%gs", seconds);
  if (seconds >= 1e-3) return absl::StrFormat("%gms", seconds * 1e3);
  if (seconds >= 1e-6) return absl::StrFormat("%gus", seconds * 1e6);
  return absl::StrFormat("%gns", seconds * 1e9);
}

absl::StatusOr<double> ParseBitRate(absl::string_view text) {
  double value = 0;
  absl::string_view number_unit;
  if (!SplitNumber(text, &value, &number_unit) || !(value > 0) || !std::isfinite(value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "malformed link rate '", text, "': expected a positive number with a unit "
        "(bit, kbit, mbit, gbit, tbit), e.g. 25gbit"));
  }
  if (absl::StrContains(number_unit, 'B')) {
    return absl::InvalidArgumentError(absl::StrCat(
        "malformed link rate '", text, "': link rates are in bits (25gbit, 400Gb/s), not bytes"));
  }
  std::string unit = absl::AsciiStrToLower(absl::StripAsciiWhitespace(number_unit));
  if (absl::EndsWith(unit, "/s")) unit.resize(unit.size() - 2);
  if (absl::EndsWith(unit, "it") || absl::EndsWith(unit, "ps")) unit.resize(unit.size() - 2);
  // Left: "b", "kb", "mb", "gb", "tb" (from bit, bps, b/s).
  double scale = 0;
  if (unit == "b") scale = 1;
  else if (unit == "kb") scale = 1e3;
  else if (unit == "mb") scale = 1e6;
  else if (unit == "gb") scale = 1e9;
  else if (unit == "tb") scale = 1e12;
  else {
    return absl::InvalidArgumentError(absl::StrCat(
        "malformed link rate '", text, "': unknown unit (use bit, kbit, mbit, gbit or tbit)"));
  }
  return value * scale;
}

std::string FormatBitRate(double bits_per_s) {
  static constexpr struct {
    double scale;
    const char* unit;
  } kUnits[] = {{1e12, "Tbit/s"}, {1e9, "Gbit/s"}, {1e6, "Mbit/s"}, {1e3, "kbit/s"}};
  for (const auto& unit : kUnits) {
    if (bits_per_s >= unit.scale) {
      return absl::StrCat(absl::SixDigits(bits_per_s / unit.scale), " ", unit.unit);
    }
  }
  return absl::StrCat(absl::SixDigits(bits_per_s), " bit/s");
}

}  // namespace collbench
