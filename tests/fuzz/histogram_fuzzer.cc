// SPDX-License-Identifier: Apache-2.0
// The histogram's wire form: a v1::Histogram in protobuf encoding (as the
// worker relays it) through HistogramFromProto and Histogram::FromSparse.
// An accepted histogram converts back to the same proto form, and its
// quantiles never decrease as q grows.
#include "api/convert.h"
#include "common/histogram.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace collbench;
  v1::Histogram proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  const absl::StatusOr<Histogram> histogram = HistogramFromProto(proto);
  if (!histogram.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(histogram.status()), histogram.status().ToString());
    return 0;
  }
  const absl::StatusOr<Histogram> again = HistogramFromProto(HistogramToProto(*histogram));
  FUZZ_CHECK(again.ok() && *again == *histogram, "the proto form does not round-trip");
  double previous = 0;
  for (double q : {0.0, 0.5, 0.9, 0.99, 1.0}) {
    const double quantile = histogram->QuantileNs(q);
    FUZZ_CHECK(quantile >= previous, "quantile " + std::to_string(q) + " decreases");
    previous = quantile;
  }
  Histogram merged = *histogram;
  merged.Merge(*histogram);
  (void)merged.Sparse();
  return 0;
}
