// SPDX-License-Identifier: Apache-2.0
#include "worker/engine/collectives/gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace collbench {
namespace {

constexpr size_t kBlock = 64;  // 3 blocks of 64x64 doubles stay in a 2nd-level cache

// Small integers (-2..2), so every product sum is exact in float32 for any
// matrix that fits in memory and the check can demand equality.
double Entry(size_t i, int rank) { return static_cast<double>((i * 7 + rank) % 5) - 2; }

// C = A * B for row-major n x n matrices, blocked; the innermost loop runs
// along a row of B and of C so the compiler can vectorize it.
template <typename T>
void Multiply(const T* a, const T* b, T* c, size_t n) {
  std::memset(c, 0, n * n * sizeof(T));
  for (size_t ii = 0; ii < n; ii += kBlock) {
    const size_t i_end = std::min(ii + kBlock, n);
    for (size_t kk = 0; kk < n; kk += kBlock) {
      const size_t k_end = std::min(kk + kBlock, n);
      for (size_t jj = 0; jj < n; jj += kBlock) {
        const size_t j_end = std::min(jj + kBlock, n);
        for (size_t i = ii; i < i_end; ++i) {
          T* c_row = c + i * n;
          for (size_t k = kk; k < k_end; ++k) {
            const T a_ik = a[i * n + k];
            const T* b_row = b + k * n;
            for (size_t j = jj; j < j_end; ++j) c_row[j] += a_ik * b_row[j];
          }
        }
      }
    }
  }
}

class Gemm final : public Operation {
 public:
  Gemm() : Operation(OperationSpecNamed("gemm")) {}
  // The bytes of A, B and C; the flop count is 2n^3 (README).
  double AlgBytes(const OpContext& ctx) const override {
    const double n = static_cast<double>(GemmSide(ctx.count));
    return 3 * n * n * static_cast<double>(ElementSize(ctx.dtype));
  }
  double BusFactor(int) const override { return 1.0; }
  double InputValue(const OpContext& ctx, size_t i) const override {
    return Entry(i, ctx.rank);
  }
  std::optional<double> ExpectedValue(const OpContext& ctx, size_t i) const override {
    const size_t n = GemmSide(ctx.count);
    const size_t row = i / n, col = i % n;
    double sum = 0;
    for (size_t k = 0; k < n; ++k) {
      sum += Entry(row * n + k, ctx.rank) * Entry(n * n + k * n + col, ctx.rank);
    }
    return sum;
  }

  absl::Status Run(Backend&, DeviceRuntime*, const OpContext& ctx, void* send,
                   void* recv) const override {
    const size_t n = GemmSide(ctx.count);
    switch (ctx.dtype) {
      case DataType::kFloat32: {
        const float* a = static_cast<const float*>(send);
        Multiply(a, a + n * n, static_cast<float*>(recv), n);
        return absl::OkStatus();
      }
      case DataType::kFloat64: {
        const double* a = static_cast<const double*>(send);
        Multiply(a, a + n * n, static_cast<double*>(recv), n);
        return absl::OkStatus();
      }
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("gemm multiplies float32 or float64 matrices, not ",
                         DataTypeName(ctx.dtype)));
    }
  }
};

}  // namespace

std::unique_ptr<Operation> NewGemmOperation() { return std::make_unique<Gemm>(); }

}  // namespace collbench
