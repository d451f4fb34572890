// SPDX-License-Identifier: Apache-2.0
#include "common/histogram.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace collbench {

void Histogram::Clear() {
  counts_.fill(0);
  count_ = 0;
  sum_ns_ = 0;
  min_ns_ = std::numeric_limits<uint64_t>::max();
  max_ns_ = 0;
  clamped_ = 0;
}

void Histogram::RecordMany(uint64_t value_ns, uint64_t count) {
  if (count == 0) return;
  if (value_ns > kMaxValueNs) {
    value_ns = kMaxValueNs;
    clamped_ += count;
  }
  if (value_ns == 0) value_ns = 1;
  counts_[IndexOf(value_ns)] += count;
  count_ += count;
  sum_ns_ += value_ns * count;
  min_ns_ = std::min(min_ns_, value_ns);
  max_ns_ = std::max(max_ns_, value_ns);
}

void Histogram::Merge(const Histogram& other) {
  for (int i = 0; i < kNumBuckets; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ns_ += other.sum_ns_;
  clamped_ += other.clamped_;
  if (other.count_ > 0) {
    min_ns_ = std::min(min_ns_, other.min_ns_);
    max_ns_ = std::max(max_ns_, other.max_ns_);
  }
}

uint64_t Histogram::LowerBound(int index) {
  if (index < kSubBuckets) return static_cast<uint64_t>(index);
  const int j = index - kSubBuckets;
  const int shift = j >> kSubBucketBits;
  const uint64_t mantissa = kSubBuckets + (j & (kSubBuckets - 1));
  return mantissa << shift;
}

uint64_t Histogram::UpperBound(int index) {
  if (index < kSubBuckets) return static_cast<uint64_t>(index) + 1;
  const int shift = (index - kSubBuckets) >> kSubBucketBits;
  return LowerBound(index) + (uint64_t{1} << shift);
}

int Histogram::IndexOfPowerOfTwoEdge(int k) {
  return IndexOf(uint64_t{1} << k);
}

uint64_t Histogram::CountAtOrBelowPowerOfTwo(int k) const {
  const int last = IndexOfPowerOfTwoEdge(k);
  uint64_t total = 0;
  for (int i = 0; i <= last; ++i) total += counts_[i];
  return total;
}

double Histogram::QuantileNs(double q) const {
  if (count_ == 0) return 0.0;
  q = std::clamp(q, 0.0, 1.0);
  // q * count carries rounding error (0.28 * 25 == 7.000000000000001), and a
  // plain ceil would then answer with the next sample up, far more than 1%
  // off for small counts. The tolerance is far below any real fraction.
  const double target = q * static_cast<double>(count_);
  uint64_t rank = static_cast<uint64_t>(std::ceil(target - target * 1e-12));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (int i = 0; i < kNumBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      // Integer values in the bucket are LowerBound+1 .. UpperBound.
      const double mid =
          (static_cast<double>(LowerBound(i)) + 1.0 + UpperBound(i)) / 2.0;
      return std::clamp(mid, static_cast<double>(min_ns_),
                        static_cast<double>(max_ns_));
    }
  }
  return static_cast<double>(max_ns_);
}

std::vector<std::pair<int, uint64_t>> Histogram::Sparse() const {
  std::vector<std::pair<int, uint64_t>> out;
  for (int i = 0; i < kNumBuckets; ++i) {
    if (counts_[i] != 0) out.emplace_back(i, counts_[i]);
  }
  return out;
}

absl::StatusOr<Histogram> Histogram::FromSparse(
    const std::vector<std::pair<int, uint64_t>>& buckets) {
  Histogram h;
  for (const auto& [index, count] : buckets) {
    if (index < 0 || index >= kNumBuckets) {
      return absl::InvalidArgumentError(absl::StrCat(
          "histogram bucket index ", index, " outside [0, ", kNumBuckets, ")"));
    }
    if (count == 0) continue;
    h.counts_[index] += count;
    h.count_ += count;
    const uint64_t mid = (LowerBound(index) + 1 + UpperBound(index)) / 2;
    h.sum_ns_ += mid * count;
    h.min_ns_ = std::min(h.min_ns_, LowerBound(index) + 1);
    h.max_ns_ = std::max(h.max_ns_, UpperBound(index));
  }
  return h;
}

void Histogram::SetExactStats(uint64_t sum_ns, uint64_t min_ns,
                              uint64_t max_ns) {
  sum_ns_ = sum_ns;
  if (count_ > 0) {
    min_ns_ = min_ns;
    max_ns_ = max_ns;
  }
}

bool Histogram::operator==(const Histogram& other) const {
  return counts_ == other.counts_ && count_ == other.count_ &&
         sum_ns_ == other.sum_ns_ && min_ns() == other.min_ns() &&
         max_ns_ == other.max_ns_;
}

}  // namespace collbench
