// SPDX-License-Identifier: Apache-2.0
// The device runtime's behaviour without a GPU (docs/design/data-plane.md#backends: no CUDA
// device is reported cleanly at run time where there is none) and the copy operations'
// slots (h2d, d2h, d2d). A fake runtime stands in for the GPU so the copy
// operations are checked on any machine.
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "worker/engine/backends/backend.h"
#include "worker/engine/collectives/copy.h"
#include "worker/engine/collectives/operation.h"
#include "worker/engine/cuda/device_runtime.h"
#include "engine_spec/pattern.h"

namespace collbench {
namespace {

// The code a runtime returns for any use on this machine.
absl::StatusCode NoDeviceCode(const DeviceRuntime& runtime) {
  return runtime.built_with_cuda() ? absl::StatusCode::kFailedPrecondition
                                   : absl::StatusCode::kUnimplemented;
}

TEST(DeviceRuntimeTest, InitWithoutDeviceFailsWithOneClearLine) {
  std::unique_ptr<DeviceRuntime> runtime = NewDeviceRuntime();
  const absl::Status status = runtime->Init(0);
  if (runtime->built_with_cuda() && status.ok()) {
    GTEST_SKIP() << "a CUDA device is present: " << runtime->Describe();
  }
  EXPECT_EQ(status.code(), NoDeviceCode(*runtime)) << status;
  EXPECT_FALSE(absl::StrContains(status.message(), "\n")) << status;
  if (runtime->built_with_cuda()) {
    EXPECT_TRUE(absl::StartsWith(status.message(), "no CUDA device")) << status;
  } else {
    EXPECT_TRUE(absl::StrContains(status.message(), "COLLBENCH_WITH_CUDA=ON")) << status;
  }
  EXPECT_EQ(runtime->stream(), nullptr);
}

TEST(DeviceRuntimeTest, EveryCallBeforeInitFailsCleanly) {
  std::unique_ptr<DeviceRuntime> runtime = NewDeviceRuntime();
  const absl::StatusCode expected = NoDeviceCode(*runtime);
  char host[16] = {};
  EXPECT_EQ(runtime->AllocateDevice(64).status().code(), expected);
  EXPECT_EQ(runtime->AllocatePinned(64).status().code(), expected);
  EXPECT_EQ(runtime->CopyAsync(host, host + 8, 8).code(), expected);
  EXPECT_EQ(runtime->Copy(host, host + 8, 8).code(), expected);
  EXPECT_EQ(runtime->Synchronize().code(), expected);
  EXPECT_EQ(runtime->MemoryInfo().status().code(), expected);
  EXPECT_EQ(runtime->stream(), nullptr);
  runtime->FreeDevice(nullptr);  // must be harmless
  runtime->FreePinned(nullptr);
}

TEST(DeviceRuntimeTest, AllocationAfterFailedInitStillFails) {
  std::unique_ptr<DeviceRuntime> runtime = NewDeviceRuntime();
  if (runtime->Init(0).ok()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_FALSE(runtime->AllocateDevice(64).ok());
  EXPECT_FALSE(runtime->AllocatePinned(64).ok());
}

TEST(DeviceRuntimeTest, DescribeIsOneLine) {
  std::unique_ptr<DeviceRuntime> runtime = NewDeviceRuntime();
  const std::string text = runtime->Describe();
  EXPECT_FALSE(text.empty());
  EXPECT_FALSE(absl::StrContains(text, "\n")) << text;
}

// Only where a GPU exists: a round trip through device memory.
TEST(DeviceRuntimeTest, RoundTripThroughDeviceWhenPresent) {
  std::unique_ptr<DeviceRuntime> runtime = NewDeviceRuntime();
  if (!runtime->Init(0).ok()) GTEST_SKIP() << "no CUDA device";
  ASSERT_TRUE(runtime->Init(0).ok());  // idempotent
  EXPECT_NE(runtime->stream(), nullptr);
  constexpr size_t kBytes = 4096;
  absl::StatusOr<void*> device = runtime->AllocateDevice(kBytes);
  absl::StatusOr<void*> pinned = runtime->AllocatePinned(kBytes);
  ASSERT_TRUE(device.ok()) << device.status();
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  std::vector<char> in(kBytes), out(kBytes, 0);
  for (size_t i = 0; i < kBytes; ++i) in[i] = static_cast<char>(i * 7 + 1);
  EXPECT_TRUE(runtime->Copy(*device, in.data(), kBytes).ok());
  EXPECT_TRUE(runtime->CopyAsync(*pinned, *device, kBytes).ok());
  EXPECT_TRUE(runtime->Synchronize().ok());
  EXPECT_TRUE(runtime->Copy(out.data(), *pinned, kBytes).ok());
  EXPECT_EQ(in, out);
  absl::StatusOr<std::pair<size_t, size_t>> info = runtime->MemoryInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_LE(info->first, info->second);
  runtime->FreeDevice(*device);
  runtime->FreePinned(*pinned);
}

// Host memory posing as a GPU. Copies are deferred until Synchronize(), as
// on a real stream, so an operation that does not wait is caught.
class FakeDeviceRuntime final : public DeviceRuntime {
 public:
  bool built_with_cuda() const override { return true; }
  absl::Status Init(int) override { return absl::OkStatus(); }
  absl::StatusOr<void*> AllocateDevice(size_t) override {
    return absl::UnimplementedError("fake");
  }
  absl::StatusOr<void*> AllocatePinned(size_t) override {
    return absl::UnimplementedError("fake");
  }
  void FreeDevice(void*) override {}
  void FreePinned(void*) override {}
  absl::Status CopyAsync(void* dst, const void* src, size_t bytes) override {
    pending_.push_back({dst, src, bytes});
    return absl::OkStatus();
  }
  absl::Status Copy(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status Synchronize() override {
    for (const Pending& p : pending_) std::memcpy(p.dst, p.src, p.bytes);
    pending_.clear();
    ++synchronized_;
    return absl::OkStatus();
  }
  void* stream() const override { return nullptr; }
  absl::StatusOr<std::pair<size_t, size_t>> MemoryInfo() override {
    return std::make_pair(size_t{0}, size_t{0});
  }
  std::string Describe() override { return "fake"; }

  int synchronized() const { return synchronized_; }

 private:
  struct Pending {
    void* dst;
    const void* src;
    size_t bytes;
  };
  std::vector<Pending> pending_;
  int synchronized_ = 0;
};

// Copies must not touch the backend at all.
class UnusedBackend final : public Backend {
 public:
  std::string name() const override { return "unused"; }
  MemorySpace buffer_space() const override { return MemorySpace::kHost; }
  absl::Status Supports(DataType) const override { return Fail(); }
  absl::Status Bcast(void*, size_t, DataType, int) override { return Fail(); }
  absl::Status Reduce(const void*, void*, size_t, DataType, ReduceOp, int) override {
    return Fail();
  }
  absl::Status Allreduce(const void*, void*, size_t, DataType, ReduceOp) override {
    return Fail();
  }
  absl::Status Gather(const void*, void*, size_t, DataType, int) override { return Fail(); }
  absl::Status Allgather(const void*, void*, size_t, DataType) override { return Fail(); }
  absl::Status ReduceScatter(const void*, void*, size_t, DataType, ReduceOp) override {
    return Fail();
  }
  absl::Status Alltoall(const void*, void*, size_t, DataType) override { return Fail(); }
  absl::Status Exchange(absl::Span<const PeerTransfer>, DataType) override {
    return Fail();
  }
  absl::Status Synchronize() override { return Fail(); }

 private:
  static absl::Status Fail() { return absl::InternalError("backend used by a copy"); }
};

struct CopyCase {
  const char* name;
  MemorySpace send_space;
  MemorySpace recv_space;
};

class CopyOperationTest : public ::testing::TestWithParam<CopyCase> {
 protected:
  void SetUp() override {
    RegisterCopyOperations(&registry_);
    absl::StatusOr<const Operation*> found = registry_.Find(GetParam().name);
    ASSERT_TRUE(found.ok()) << found.status();
    op_ = *found;
  }

  OperationRegistry registry_;
  const Operation* op_ = nullptr;
};

TEST_P(CopyOperationTest, IsACopyThatNeedsTheDevice) {
  EXPECT_EQ(op_->name(), GetParam().name);
  const OpTraits traits = op_->traits();
  EXPECT_EQ(traits.op_class, OpClass::kCopy);
  EXPECT_TRUE(traits.needs_device);
  EXPECT_FALSE(traits.rooted);
  EXPECT_FALSE(traits.reduces);
}

TEST_P(CopyOperationTest, BuffersHoldCountElementsInTheirSpaces) {
  const OpContext ctx{.rank = 3, .nranks = 8, .count = 1000};
  const OpBuffers buffers = op_->Buffers(ctx);
  EXPECT_EQ(buffers.send_count, 1000u);
  EXPECT_EQ(buffers.recv_count, 1000u);
  EXPECT_EQ(buffers.send_space, GetParam().send_space);
  EXPECT_EQ(buffers.recv_space, GetParam().recv_space);
}

TEST_P(CopyOperationTest, BandwidthIsBytesCopiedWithFactorOne) {
  for (DataType dtype : AllDataTypes()) {
    const OpContext ctx{.nranks = 4, .count = 1 << 20, .dtype = dtype};
    EXPECT_DOUBLE_EQ(op_->AlgBytes(ctx), (1 << 20) * ElementSize(dtype));
  }
  for (int nranks : {1, 2, 8, 64}) EXPECT_DOUBLE_EQ(op_->BusFactor(nranks), 1.0);
}

TEST_P(CopyOperationTest, ExpectedOutputIsTheInput) {
  for (DataType dtype : AllDataTypes()) {
    for (int rank : {0, 1, 5}) {
      const OpContext ctx{.rank = rank, .nranks = 6, .count = 4096, .dtype = dtype};
      for (size_t i = 0; i < ctx.count; i += 17) {
        const double input = op_->InputValue(ctx, i);
        EXPECT_EQ(input, MovedValue(dtype, rank, i));
        EXPECT_NE(input, kPoison);
        EXPECT_NE(input, 0.0);
        EXPECT_EQ(op_->ExpectedValue(ctx, i), input);
      }
    }
  }
}

TEST_P(CopyOperationTest, RunWithoutDeviceIsFailedPrecondition) {
  UnusedBackend backend;
  const OpContext ctx{.count = 16};
  std::vector<float> send(16, 1.0f), recv(16, 0.0f);
  const absl::Status status = op_->Run(backend, nullptr, ctx, send.data(), recv.data());
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
}

TEST_P(CopyOperationTest, RunCopiesAndWaitsForCompletion) {
  UnusedBackend backend;
  FakeDeviceRuntime device;
  const OpContext ctx{.rank = 2, .nranks = 4, .count = 333, .dtype = DataType::kInt32};
  std::vector<int32_t> send(ctx.count), recv(ctx.count);
  FillBuffer(send.data(), ctx.dtype, ctx.count,
             [&](size_t i) { return op_->InputValue(ctx, i); });
  FillConstant(recv.data(), ctx.dtype, ctx.count, kPoison);

  ASSERT_TRUE(op_->Run(backend, &device, ctx, send.data(), recv.data()).ok());
  EXPECT_EQ(device.synchronized(), 1);
  for (size_t i = 0; i < ctx.count; ++i) {
    ASSERT_EQ(LoadElement(recv.data(), ctx.dtype, i), *op_->ExpectedValue(ctx, i))
        << "element " << i;
  }
}

TEST_P(CopyOperationTest, RunReportsTheRuntimesError) {
  UnusedBackend backend;
  std::unique_ptr<DeviceRuntime> runtime = NewDeviceRuntime();  // never initialised
  const OpContext ctx{.count = 16};
  std::vector<float> send(16, 1.0f), recv(16, 0.0f);
  const absl::Status status =
      op_->Run(backend, runtime.get(), ctx, send.data(), recv.data());
  EXPECT_EQ(status.code(), NoDeviceCode(*runtime)) << status;
}

INSTANTIATE_TEST_SUITE_P(
    Copies, CopyOperationTest,
    ::testing::Values(CopyCase{"h2d", MemorySpace::kHost, MemorySpace::kDevice},
                      CopyCase{"d2h", MemorySpace::kDevice, MemorySpace::kHost},
                      CopyCase{"d2d", MemorySpace::kDevice, MemorySpace::kDevice}),
    [](const ::testing::TestParamInfo<CopyCase>& info) { return info.param.name; });

}  // namespace
}  // namespace collbench
