// SPDX-License-Identifier: Apache-2.0
// The operations' slots, checked against docs/design/data-plane.md#bandwidth: nccl-tests' algbw
// sizes and busbw factors, buffer sizes, and that the validation pattern
// predicts exactly what a correct collective produces.
#include <cmath>
#include <map>
#include <string>

#include "gtest/gtest.h"
#include "worker/engine/collectives/operation.h"
#include "engine_spec/pattern.h"

namespace collbench {
namespace {

class OperationsTest : public ::testing::Test {
 protected:
  void SetUp() override { RegisterBuiltinOperations(&registry_); }
  const Operation& Op(const std::string& name) {
    auto op = registry_.Find(name);
    EXPECT_TRUE(op.ok()) << op.status();
    return **op;
  }
  OperationRegistry registry_;
};

TEST_F(OperationsTest, RegistryHasEveryOperationOfTheDesign) {
  for (const char* name : {"bcast", "gather", "allreduce", "allgather", "reduce",
                           "reduce_scatter", "alltoall", "latency", "bw", "bibw", "h2d",
                           "d2h", "d2d", "h2h", "gemm"}) {
    EXPECT_TRUE(registry_.Find(name).ok()) << name;
  }
  auto missing = registry_.Find("allreduse");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("allreduse"), std::string::npos);
}

TEST_F(OperationsTest, RegistryImplementsEveryEntryOfTheTable) {
  EXPECT_EQ(registry_.Names(), OperationNames());
  for (const OperationSpec& spec : OperationSpecs()) {
    EXPECT_EQ(Op(spec.name).name(), spec.name);
  }
}

TEST_F(OperationsTest, BusFactorsAreNcclTests) {
  for (int n : {2, 3, 4, 8, 64}) {
    const double ring = static_cast<double>(n - 1) / n;
    EXPECT_DOUBLE_EQ(Op("allreduce").BusFactor(n), 2 * ring) << n;
    EXPECT_DOUBLE_EQ(Op("allgather").BusFactor(n), ring) << n;
    EXPECT_DOUBLE_EQ(Op("reduce_scatter").BusFactor(n), ring) << n;
    EXPECT_DOUBLE_EQ(Op("alltoall").BusFactor(n), ring) << n;
    EXPECT_DOUBLE_EQ(Op("gather").BusFactor(n), ring) << n;
    EXPECT_DOUBLE_EQ(Op("bcast").BusFactor(n), 1.0) << n;
    EXPECT_DOUBLE_EQ(Op("reduce").BusFactor(n), 1.0) << n;
    EXPECT_DOUBLE_EQ(Op("latency").BusFactor(n), 1.0) << n;
    EXPECT_DOUBLE_EQ(Op("bw").BusFactor(n), 1.0) << n;
    EXPECT_DOUBLE_EQ(Op("bibw").BusFactor(n), 1.0) << n;
  }
}

TEST_F(OperationsTest, AlgBytesAreNcclTests) {
  OpContext ctx;
  ctx.nranks = 4;
  ctx.count = 1000;
  ctx.dtype = DataType::kFloat64;
  ctx.window = 64;
  const double s = 1000 * 8;
  EXPECT_DOUBLE_EQ(Op("allreduce").AlgBytes(ctx), s);
  EXPECT_DOUBLE_EQ(Op("bcast").AlgBytes(ctx), s);
  EXPECT_DOUBLE_EQ(Op("reduce").AlgBytes(ctx), s);
  EXPECT_DOUBLE_EQ(Op("allgather").AlgBytes(ctx), s * 4);
  EXPECT_DOUBLE_EQ(Op("reduce_scatter").AlgBytes(ctx), s * 4);
  EXPECT_DOUBLE_EQ(Op("alltoall").AlgBytes(ctx), s * 4);
  EXPECT_DOUBLE_EQ(Op("gather").AlgBytes(ctx), s * 4);
  EXPECT_DOUBLE_EQ(Op("latency").AlgBytes(ctx), s);
  EXPECT_DOUBLE_EQ(Op("bw").AlgBytes(ctx), s * 64);
  EXPECT_DOUBLE_EQ(Op("bibw").AlgBytes(ctx), 2 * s * 64);
  EXPECT_DOUBLE_EQ(Op("latency").TimeScale(), 0.5);
  EXPECT_DOUBLE_EQ(Op("allreduce").TimeScale(), 1.0);
}

TEST_F(OperationsTest, BufferSizes) {
  OpContext ctx;
  ctx.nranks = 3;
  ctx.count = 10;
  ctx.root = 1;
  ctx.rank = 1;
  EXPECT_EQ(Op("allgather").Buffers(ctx).recv_count, 30u);
  EXPECT_EQ(Op("reduce_scatter").Buffers(ctx).send_count, 30u);
  EXPECT_EQ(Op("reduce_scatter").Buffers(ctx).recv_count, 10u);
  EXPECT_EQ(Op("alltoall").Buffers(ctx).send_count, 30u);
  EXPECT_EQ(Op("gather").Buffers(ctx).recv_count, 30u);
  ctx.rank = 0;  // off-root ranks receive nothing in gather
  EXPECT_EQ(Op("gather").Buffers(ctx).recv_count, 0u);
}

// Simulates each collective on the pattern in double precision and checks
// that ExpectedValue agrees with what a correct library would produce.
class SimulatedCollective : public OperationsTest,
                            public ::testing::WithParamInterface<
                                std::tuple<DataType, ReduceOp, int>> {};

TEST_P(SimulatedCollective, ExpectedValuesMatchSimulation) {
  // Plain variables, not a structured binding: the lambdas below capture
  // them, which clang before 16 refuses for bindings.
  const DataType dtype = std::get<0>(GetParam());
  const ReduceOp redop = std::get<1>(GetParam());
  const int n = std::get<2>(GetParam());
  const size_t count = 37;
  auto ctx_for = [&](int rank) {
    OpContext ctx;
    ctx.rank = rank;
    ctx.nranks = n;
    ctx.count = count;
    ctx.dtype = dtype;
    ctx.redop = redop;
    ctx.root = n - 1;
    return ctx;
  };
  auto fold = [&](double a, double b) {
    switch (redop) {
      case ReduceOp::kSum: return a + b;
      case ReduceOp::kProd: return a * b;
      case ReduceOp::kMin: return std::min(a, b);
      case ReduceOp::kMax: return std::max(a, b);
    }
    return a;
  };
  const Operation& allreduce = Op("allreduce");
  const Operation& reduce_scatter = Op("reduce_scatter");
  const Operation& alltoall = Op("alltoall");
  const Operation& allgather = Op("allgather");
  for (int r = 0; r < n; ++r) {
    const OpContext me = ctx_for(r);
    for (size_t i = 0; i < count; ++i) {
      double acc = allreduce.InputValue(ctx_for(0), i);
      for (int q = 1; q < n; ++q) acc = fold(acc, allreduce.InputValue(ctx_for(q), i));
      // The result must be representable exactly, or the check is unfair.
      std::vector<char> one(8);
      StoreElement(one.data(), dtype, 0, acc);
      ASSERT_EQ(LoadElement(one.data(), dtype, 0), acc);
      ASSERT_EQ(*allreduce.ExpectedValue(me, i), acc);

      double rs = reduce_scatter.InputValue(ctx_for(0), r * count + i);
      for (int q = 1; q < n; ++q) rs = fold(rs, reduce_scatter.InputValue(ctx_for(q), r * count + i));
      ASSERT_EQ(*reduce_scatter.ExpectedValue(me, i), rs);
    }
    for (size_t i = 0; i < count * n; ++i) {
      const int source = static_cast<int>(i / count);
      ASSERT_EQ(*alltoall.ExpectedValue(me, i),
                alltoall.InputValue(ctx_for(source), r * count + i % count));
      ASSERT_EQ(*allgather.ExpectedValue(me, i), allgather.InputValue(ctx_for(source), i % count));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, SimulatedCollective,
    ::testing::Combine(::testing::ValuesIn(AllDataTypes()), ::testing::ValuesIn(AllReduceOps()),
                       ::testing::Values(1, 2, 3, 4, 7, 16)));

TEST(PatternTest, NeverZeroNorPoison) {
  for (DataType t : AllDataTypes()) {
    for (int r = 0; r < 8; ++r) {
      for (size_t i = 0; i < 1000; ++i) {
        const double v = MovedValue(t, r, i);
        EXPECT_NE(v, 0.0);
        EXPECT_NE(v, kPoison);
        EXPECT_LE(v, ExactIntegerLimit(t));
      }
    }
  }
}

TEST(PatternTest, MovedValuesTellRanksApart) {
  // Two different source ranks never put the same value at one element.
  for (DataType t : {DataType::kInt32, DataType::kFloat32, DataType::kFloat16}) {
    for (size_t i = 0; i < 500; ++i) {
      EXPECT_NE(MovedValue(t, 0, i), MovedValue(t, 1, i));
      EXPECT_NE(MovedValue(t, 1, i), MovedValue(t, 2, i));
    }
  }
}

TEST(PatternTest, Int8SumOverTooManyRanksIsRefused) {
  EXPECT_TRUE(CheckReductionExact(DataType::kInt8, ReduceOp::kSum, 127).ok());
  EXPECT_EQ(CheckReductionExact(DataType::kInt8, ReduceOp::kSum, 128).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(CheckReductionExact(DataType::kInt8, ReduceOp::kProd, 1000).ok());
}

}  // namespace
}  // namespace collbench
