// SPDX-License-Identifier: Apache-2.0
// Log-linear latency histogram shared by the engine, the agent and the
// coordinator.
//
// Geometry (docs/design/data-plane.md#histogram): values are integer
// nanoseconds from 1 ns to 2^40 ns. Below 64 ns every nanosecond has its own
// bucket; above, every power of two [2^e, 2^(e+1)) is split into 64 equal
// sub-buckets, so a bucket is never wider than 1/64 of its lower edge and the
// midpoint answers any quantile within 1/128 (< 1%) relative error.
//
// Buckets are closed on the right: bucket i holds values in
// (LowerBound(i), UpperBound(i)]. Every power of two 2^k (0 <= k <= 40) is an
// upper bound of some bucket, so the number of samples <= 2^k ns is an exact
// prefix sum. That is what lets Prometheus' cumulative `le` buckets be filled
// from this histogram without loss.
//
// Thread safety: none; one owner records, merge copies are taken explicitly.
#ifndef COLLBENCH_COMMON_HISTOGRAM_H_
#define COLLBENCH_COMMON_HISTOGRAM_H_

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace collbench {

class Histogram {
 public:
  static constexpr int kSubBucketBits = 6;
  static constexpr int kSubBuckets = 1 << kSubBucketBits;  // 64
  static constexpr int kMaxExponent = 40;
  static constexpr uint64_t kMaxValueNs = uint64_t{1} << kMaxExponent;
  // 64 linear buckets, then 64 per power of two from 2^6 up to 2^40.
  static constexpr int kNumBuckets =
      kSubBuckets + (kMaxExponent - kSubBucketBits) * kSubBuckets;

  Histogram() { Clear(); }

  // Records one sample. Values below 1 ns count as 1 ns, values above 2^40 ns
  // as 2^40 ns (and are counted in clamped()).
  void Record(uint64_t value_ns) {
    if (value_ns > kMaxValueNs) {
      value_ns = kMaxValueNs;
      ++clamped_;
    }
    if (value_ns == 0) value_ns = 1;
    ++counts_[IndexOf(value_ns)];
    ++count_;
    sum_ns_ += value_ns;
    if (value_ns < min_ns_) min_ns_ = value_ns;
    if (value_ns > max_ns_) max_ns_ = value_ns;
  }

  // Adds `count` samples of `value_ns`.
  void RecordMany(uint64_t value_ns, uint64_t count);

  // Adds every sample of `other`.
  void Merge(const Histogram& other);
  void Clear();

  uint64_t count() const { return count_; }
  // Sum of recorded values (after clamping), for Prometheus' _sum.
  uint64_t sum_ns() const { return sum_ns_; }
  // Exact extremes; 0 when empty.
  uint64_t min_ns() const { return count_ == 0 ? 0 : min_ns_; }
  uint64_t max_ns() const { return max_ns_; }
  uint64_t clamped() const { return clamped_; }
  double mean_ns() const {
    return count_ == 0 ? 0.0 : static_cast<double>(sum_ns_) / count_;
  }

  // Nearest-rank quantile (the smallest recorded value v such that at least
  // q*count samples are <= v), answered by the midpoint of v's bucket and
  // clamped to the exact [min, max]. REQUIRES: 0 <= q <= 1. 0 when empty.
  double QuantileNs(double q) const;

  // Number of samples <= 2^k ns, exact. REQUIRES: 0 <= k <= kMaxExponent.
  uint64_t CountAtOrBelowPowerOfTwo(int k) const;

  uint64_t bucket_count(int index) const { return counts_[index]; }

  // Bucket geometry.
  static int IndexOf(uint64_t value_ns) {
    const uint64_t w = value_ns - 1;  // shift to make buckets right-closed
    if (w < kSubBuckets) return static_cast<int>(w);
    const int exponent = 63 - __builtin_clzll(w);
    const int shift = exponent - kSubBucketBits;
    return kSubBuckets + (shift << kSubBucketBits) +
           static_cast<int>((w >> shift) - kSubBuckets);
  }
  // Exclusive lower edge of bucket `index`, in ns.
  static uint64_t LowerBound(int index);
  // Inclusive upper edge of bucket `index`, in ns.
  static uint64_t UpperBound(int index);
  // Index of the bucket whose upper edge is 2^k ns.
  static int IndexOfPowerOfTwoEdge(int k);

  // Sparse form for the wire: (index, count) for every non-empty bucket, in
  // increasing index order.
  std::vector<std::pair<int, uint64_t>> Sparse() const;
  // Rebuilds from the sparse form. Sum, min and max are estimated from bucket
  // midpoints unless given exactly with SetExactStats().
  static absl::StatusOr<Histogram> FromSparse(
      const std::vector<std::pair<int, uint64_t>>& buckets);
  void SetExactStats(uint64_t sum_ns, uint64_t min_ns, uint64_t max_ns);

  bool operator==(const Histogram& other) const;

 private:
  std::array<uint64_t, kNumBuckets> counts_;
  uint64_t count_;
  uint64_t sum_ns_;
  uint64_t min_ns_;
  uint64_t max_ns_;
  uint64_t clamped_;
};

}  // namespace collbench

#endif  // COLLBENCH_COMMON_HISTOGRAM_H_
