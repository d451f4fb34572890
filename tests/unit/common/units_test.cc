// SPDX-License-Identifier: Apache-2.0
// Sizes and durations as users type them
// (docs/design/command-lines.md#sizes-and-durations): K/M/G/T suffixes are
// powers of 1024; a bad value is an error that names the text.
#include "common/units.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace collbench {
namespace {

constexpr uint64_t kKiB = uint64_t{1} << 10;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kTiB = uint64_t{1} << 40;

// An InvalidArgument error whose message quotes `text`.
void ExpectRejected(const absl::Status& status, const std::string& text) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
      << "'" << text << "': " << status;
  EXPECT_NE(status.message().find("'" + text + "'"), std::string::npos)
      << "message does not name '" << text << "': " << status.message();
}

// ---------------------------------------------------------------------------
// ParseBytes

TEST(ParseBytesTest, PlainNumbersAreBytes) {
  EXPECT_EQ(ParseBytes("0").value(), 0u);
  EXPECT_EQ(ParseBytes("8").value(), 8u);
  EXPECT_EQ(ParseBytes("1000").value(), 1000u);
  EXPECT_EQ(ParseBytes("18446744073709551615").value(),
            std::numeric_limits<uint64_t>::max());
}

TEST(ParseBytesTest, SuffixesArePowersOf1024InAnyCase) {
  EXPECT_EQ(ParseBytes("1K").value(), kKiB);
  EXPECT_EQ(ParseBytes("64k").value(), 64 * kKiB);
  EXPECT_EQ(ParseBytes("1M").value(), kMiB);
  EXPECT_EQ(ParseBytes("16m").value(), 16 * kMiB);
  EXPECT_EQ(ParseBytes("2G").value(), 2 * kGiB);
  EXPECT_EQ(ParseBytes("2g").value(), 2 * kGiB);
  EXPECT_EQ(ParseBytes("1T").value(), kTiB);
  EXPECT_EQ(ParseBytes("3t").value(), 3 * kTiB);
}

TEST(ParseBytesTest, AcceptsBAndIBAfterTheSuffix) {
  EXPECT_EQ(ParseBytes("8B").value(), 8u);
  EXPECT_EQ(ParseBytes("8b").value(), 8u);
  EXPECT_EQ(ParseBytes("1KB").value(), kKiB);
  EXPECT_EQ(ParseBytes("1MiB").value(), kMiB);
  EXPECT_EQ(ParseBytes("1mib").value(), kMiB);
  EXPECT_EQ(ParseBytes("4GiB").value(), 4 * kGiB);
  EXPECT_EQ(ParseBytes("1TiB").value(), kTiB);
}

TEST(ParseBytesTest, SurroundingWhitespaceIsIgnored) {
  EXPECT_EQ(ParseBytes(" 64K ").value(), 64 * kKiB);
  EXPECT_EQ(ParseBytes("\t8\n").value(), 8u);
}

TEST(ParseBytesTest, LargestValuesThatFit) {
  EXPECT_EQ(ParseBytes("16777215T").value(), uint64_t{16777215} << 40);
  EXPECT_EQ(ParseBytes("17179869183G").value(), uint64_t{17179869183} << 30);
}

TEST(ParseBytesTest, RejectsMalformedTextNamingIt) {
  for (const std::string text :
       {"", "   ", "abc", "-1", "+1", "1.5K", "1X", "K", "KiB", "1KK", "1BB",
        "8iB", "1Ki", "1KiBs", "16 M", "0x10", "1,024", "1e3"}) {
    SCOPED_TRACE(text);
    auto bytes = ParseBytes(text);
    ASSERT_FALSE(bytes.ok()) << "parsed as " << *bytes;
    ExpectRejected(bytes.status(), text);
  }
}

TEST(ParseBytesTest, RejectsValuesThatOverflowSixtyFourBits) {
  for (const std::string text :
       {"18446744073709551616", "99999999999999999999999", "16777216T",
        "17179869184G", "17592186044416M", "18014398509481984K"}) {
    SCOPED_TRACE(text);
    auto bytes = ParseBytes(text);
    ASSERT_FALSE(bytes.ok()) << "parsed as " << *bytes;
    ExpectRejected(bytes.status(), text);
  }
}

// ---------------------------------------------------------------------------
// ParseByteList

TEST(ParseByteListTest, ParsesEachElementInOrder) {
  EXPECT_EQ(ParseByteList("8,1K,64K,1M,16M").value(),
            (std::vector<uint64_t>{8, kKiB, 64 * kKiB, kMiB, 16 * kMiB}));
  EXPECT_EQ(ParseByteList("4096").value(), (std::vector<uint64_t>{4096}));
  EXPECT_EQ(ParseByteList("1M, 2M").value(),
            (std::vector<uint64_t>{kMiB, 2 * kMiB}));
  // Order and duplicates are the caller's business.
  EXPECT_EQ(ParseByteList("1K,8,1K").value(),
            (std::vector<uint64_t>{kKiB, 8, kKiB}));
}

TEST(ParseByteListTest, PresetsGiveTheirSizes) {
  EXPECT_EQ(ParseByteList("deepbench").value(),
            (std::vector<uint64_t>{400000, 12390400, 16777216, 26214400, 67108868, 153440000,
                                   258000000}));
  // Powers of two with their neighbours 3 B away, inside [MIN, MAX].
  EXPECT_EQ(ParseByteList("netpipe:1:16").value(),
            (std::vector<uint64_t>{1, 2, 4, 5, 7, 8, 11, 13, 16}));
  EXPECT_EQ(ParseByteList("netpipe:1K:1K").value(), (std::vector<uint64_t>{kKiB}));
  EXPECT_NE(ParseByteList("netpipe:1K").status().message().find("is not netpipe:MIN:MAX"),
            std::string::npos);
  EXPECT_NE(ParseByteList("netpipe:2K:1K").status().message().find(
                "MIN must be at least 1 and at most MAX"),
            std::string::npos);
}

TEST(ParseByteListTest, RejectsAListWithABadElementNamingIt) {
  auto list = ParseByteList("8,1X,64K");
  ASSERT_FALSE(list.ok());
  ExpectRejected(list.status(), "1X");
}

TEST(ParseByteListTest, RejectsEmptyElements) {
  for (const std::string text : {"", ",", "8,", ",8", "8,,16"}) {
    SCOPED_TRACE(text);
    auto list = ParseByteList(text);
    EXPECT_FALSE(list.ok());
    EXPECT_EQ(list.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

// ---------------------------------------------------------------------------
// FormatBytes

TEST(FormatBytesTest, UsesTheLargestExactSuffix) {
  EXPECT_EQ(FormatBytes(0), "0");
  EXPECT_EQ(FormatBytes(8), "8");
  EXPECT_EQ(FormatBytes(1000), "1000");
  EXPECT_EQ(FormatBytes(1023), "1023");
  EXPECT_EQ(FormatBytes(kKiB), "1K");
  EXPECT_EQ(FormatBytes(65536), "64K");
  EXPECT_EQ(FormatBytes(1536), "1536");  // 1.5K is not a whole number of K
  EXPECT_EQ(FormatBytes(3 * kKiB), "3K");
  EXPECT_EQ(FormatBytes(1025 * kKiB), "1025K");
  EXPECT_EQ(FormatBytes(kMiB), "1M");
  EXPECT_EQ(FormatBytes(16 * kMiB), "16M");
  EXPECT_EQ(FormatBytes(kGiB), "1G");
  EXPECT_EQ(FormatBytes(kTiB), "1T");
  EXPECT_EQ(FormatBytes(kTiB * 1024), "1024T");
}

TEST(FormatBytesTest, RoundTripsThroughParseBytes) {
  std::vector<uint64_t> values = {0, 1, 7, 8, 1000, 1023, 1536,
                                  std::numeric_limits<uint64_t>::max(),
                                  uint64_t{1} << 63, (uint64_t{1} << 63) + 1024};
  for (int shift = 0; shift < 64; ++shift) {
    values.push_back(uint64_t{1} << shift);
    values.push_back(3 * (uint64_t{1} << shift));
    values.push_back((uint64_t{1} << shift) - 1);
  }
  for (uint64_t bytes : values) {
    const std::string text = FormatBytes(bytes);
    auto back = ParseBytes(text);
    ASSERT_TRUE(back.ok()) << bytes << " -> '" << text << "': " << back.status();
    EXPECT_EQ(*back, bytes) << "'" << text << "'";
  }
}

// ---------------------------------------------------------------------------
// Durations

TEST(ParseDurationSecondsTest, AcceptsEveryUnit) {
  EXPECT_DOUBLE_EQ(ParseDurationSeconds("0.5s").value(), 0.5);
  EXPECT_DOUBLE_EQ(ParseDurationSeconds("200ms").value(), 0.2);
  EXPECT_DOUBLE_EQ(ParseDurationSeconds("10us").value(), 10e-6);
  EXPECT_DOUBLE_EQ(ParseDurationSeconds("250ns").value(), 250e-9);
  EXPECT_DOUBLE_EQ(ParseDurationSeconds("1m").value(), 60.0);
  EXPECT_DOUBLE_EQ(ParseDurationSeconds("1.5m").value(), 90.0);
  EXPECT_DOUBLE_EQ(ParseDurationSeconds("2h").value(), 7200.0);
}

TEST(ParseDurationSecondsTest, ABareNumberIsSeconds) {
  EXPECT_DOUBLE_EQ(ParseDurationSeconds("2").value(), 2.0);
  EXPECT_DOUBLE_EQ(ParseDurationSeconds("0.25").value(), 0.25);
  EXPECT_DOUBLE_EQ(ParseDurationSeconds(" 3s ").value(), 3.0);
}

TEST(ParseDurationSecondsTest, RejectsMalformedTextNamingIt) {
  for (const std::string text :
       {"", "s", "abc", "-1s", "-1", "1.2.3s", "5 ms", "5sec", "5S", "1e3s",
        "ms200", ".", "1d", "inf", "nan"}) {
    SCOPED_TRACE(text);
    auto seconds = ParseDurationSeconds(text);
    ASSERT_FALSE(seconds.ok()) << "parsed as " << *seconds;
    ExpectRejected(seconds.status(), text);
  }
}

TEST(ParseDurationSecondsTest, RejectsZero) {
  for (const std::string text : {"0", "0s", "0.0ms", "0ns"}) {
    SCOPED_TRACE(text);
    auto seconds = ParseDurationSeconds(text);
    ASSERT_FALSE(seconds.ok());
    ExpectRejected(seconds.status(), text);
    EXPECT_NE(seconds.status().message().find("positive"), std::string::npos);
  }
}

TEST(ParseDurationSecondsTest, RejectsValuesTooLargeForADouble) {
  const std::string text = "1" + std::string(400, '0') + "h";
  auto seconds = ParseDurationSeconds(text);
  ASSERT_FALSE(seconds.ok()) << "parsed as " << *seconds;
  ExpectRejected(seconds.status(), text);
}

TEST(FormatDurationTest, PicksAReadableUnit) {
  EXPECT_EQ(FormatDuration(1.5), "1.5s");
  EXPECT_EQ(FormatDuration(2), "2s");
  EXPECT_EQ(FormatDuration(0.2), "200ms");
  EXPECT_EQ(FormatDuration(12e-6), "12us");
  EXPECT_EQ(FormatDuration(250e-9), "250ns");
}

TEST(FormatDurationTest, RoundTripsThroughParse) {
  for (double seconds : {3600.0, 1.5, 0.2, 0.001, 12e-6, 250e-9}) {
    auto back = ParseDurationSeconds(FormatDuration(seconds));
    ASSERT_TRUE(back.ok()) << FormatDuration(seconds) << ": " << back.status();
    EXPECT_NEAR(*back, seconds, seconds * 1e-5) << FormatDuration(seconds);
  }
}

}  // namespace
}  // namespace collbench
