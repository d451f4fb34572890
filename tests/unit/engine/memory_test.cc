// SPDX-License-Identifier: Apache-2.0
// Memory kinds (docs/design/data-plane.md#memory-kinds): the registry's names and errors, Buffer
// ownership, and that every host kind this machine offers gives writable,
// aligned memory where it promises.
//
// memkind reads MEMKIND_HBW_NODES once per process, so the cases that need it
// (MemkindHbwNodesTest) run in a second ctest entry with MEMKIND_HBW_NODES=0
// and skip themselves otherwise; the cases that need it unset skip when it is
// set.
#include <numaif.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/engine/cuda/device_runtime.h"
#include "engine_spec/memory_kinds.h"
#include "worker/engine/memory/memory_kind.h"

namespace collbench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

MemoryKindRegistry BuiltinRegistry() {
  MemoryKindRegistry registry;
  RegisterBuiltinMemoryKinds(&registry);
  return registry;
}

std::unique_ptr<MemoryKind> CreateOrDie(const std::string& text,
                                        DeviceRuntime* device = nullptr) {
  absl::StatusOr<std::unique_ptr<MemoryKind>> kind =
      BuiltinRegistry().Create(text, device);
  EXPECT_TRUE(kind.ok()) << kind.status();
  return kind.ok() ? std::move(*kind) : nullptr;
}

bool HbwNodesSet() { return std::getenv("MEMKIND_HBW_NODES") != nullptr; }

// The NUMA node backing the page at `ptr` (which must be touched).
int NodeOfPage(void* ptr) {
  int node = -1;
  EXPECT_EQ(get_mempolicy(&node, nullptr, 0, ptr, MPOL_F_NODE | MPOL_F_ADDR), 0)
      << std::strerror(errno);
  return node;
}

// Fills the buffer with a pattern and reads it back.
void ExpectWritable(void* data, size_t bytes) {
  auto* bytes_ptr = static_cast<unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i)
    bytes_ptr[i] = static_cast<unsigned char>(i * 7 + 1);
  for (size_t i = 0; i < bytes; ++i) {
    ASSERT_EQ(bytes_ptr[i], static_cast<unsigned char>(i * 7 + 1))
        << "byte " << i;
  }
}

// ---------------------------------------------------------------- registry

TEST(MemoryKindRegistryTest, ListsEveryKindInRegistrationOrder) {
  EXPECT_THAT(
      BuiltinRegistry().Names(),
      ElementsAre("default", "regular", "interleave", "hbw", "hbw_preferred",
                  "dax_kmem", "numa:N", "pinned", "device"));
}

TEST(MemoryKindRegistryTest, ImplementsEveryKindOfTheTable) {
  EXPECT_EQ(BuiltinRegistry().Names(), MemoryKindNames());
}

TEST(MemoryKindRegistryTest, CreatesEveryListedKindWithItsName) {
  for (const std::string& name : BuiltinRegistry().Names()) {
    const std::string text = name == "numa:N" ? "numa:0" : name;
    std::unique_ptr<MemoryKind> kind = CreateOrDie(text);
    ASSERT_NE(kind, nullptr) << text;
    EXPECT_EQ(kind->name(), text);
    EXPECT_EQ(kind->space(),
              text == "device" ? MemorySpace::kDevice : MemorySpace::kHost);
  }
}

TEST(MemoryKindRegistryTest, UnknownNameIsInvalidArgumentNamingItAndTheKinds) {
  for (const char* text : {"bogus", "", "DEFAULT", "hbw-preferred", ":0"}) {
    absl::StatusOr<std::unique_ptr<MemoryKind>> kind =
        BuiltinRegistry().Create(text, nullptr);
    ASSERT_FALSE(kind.ok()) << text;
    EXPECT_EQ(kind.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(kind.status().message(),
                HasSubstr(std::string("unknown --memory '") + text + "'"));
    EXPECT_THAT(
        kind.status().message(),
        HasSubstr("(one of default, regular, interleave, hbw, hbw_preferred, "
                  "dax_kmem, numa:N, pinned, device)"));
  }
}

TEST(MemoryKindRegistryTest, MalformedNumaIsInvalidArgumentNamingTheText) {
  for (const char* text : {"numa", "numa:", "numa:x", "numa:-1", "numa:+1",
                           "numa:1x", "numa: 1", "numa:99999999999"}) {
    absl::StatusOr<std::unique_ptr<MemoryKind>> kind =
        BuiltinRegistry().Create(text, nullptr);
    ASSERT_FALSE(kind.ok()) << text;
    EXPECT_EQ(kind.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(kind.status().message(),
                HasSubstr(std::string("'") + text + "'"));
  }
}

TEST(MemoryKindRegistryTest, ArgumentToKindWithoutOneIsInvalidArgument) {
  absl::StatusOr<std::unique_ptr<MemoryKind>> kind =
      BuiltinRegistry().Create("regular:1", nullptr);
  ASSERT_FALSE(kind.ok());
  EXPECT_EQ(kind.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(kind.status().message(), HasSubstr("'regular:1'"));
}

// ------------------------------------------------------------------ Buffer

// Counts what Buffer asks of its kind.
class FakeMemoryKind final : public MemoryKind {
 public:
  std::string name() const override { return "fake"; }
  MemorySpace space() const override { return MemorySpace::kDevice; }
  absl::Status CheckAvailable() override { return absl::OkStatus(); }
  absl::StatusOr<void*> Allocate(size_t bytes) override {
    if (fail_) return absl::ResourceExhaustedError("fake out of memory");
    ++live_;
    return static_cast<void*>(new char[bytes]);
  }
  void Free(void* ptr, size_t bytes) override {
    --live_;
    freed_bytes_.push_back(bytes);
    delete[] static_cast<char*>(ptr);
  }

  bool fail_ = false;
  int live_ = 0;
  std::vector<size_t> freed_bytes_;
};

TEST(BufferTest, OwnsOneAllocationAndFreesItOnce) {
  FakeMemoryKind kind;
  {
    absl::StatusOr<Buffer> buffer = Buffer::Allocate(&kind, 100);
    ASSERT_TRUE(buffer.ok()) << buffer.status();
    EXPECT_NE(buffer->data(), nullptr);
    EXPECT_EQ(buffer->bytes(), 100u);
    EXPECT_EQ(buffer->space(), MemorySpace::kDevice);
    EXPECT_EQ(kind.live_, 1);
  }
  EXPECT_EQ(kind.live_, 0);
  EXPECT_THAT(kind.freed_bytes_, ElementsAre(100u));
}

TEST(BufferTest, MoveTransfersOwnership) {
  FakeMemoryKind kind;
  absl::StatusOr<Buffer> first = Buffer::Allocate(&kind, 10);
  absl::StatusOr<Buffer> second = Buffer::Allocate(&kind, 20);
  ASSERT_TRUE(first.ok() && second.ok());
  void* first_data = first->data();

  Buffer moved(std::move(*first));
  EXPECT_EQ(moved.data(), first_data);
  EXPECT_EQ(first->data(), nullptr);
  EXPECT_EQ(first->bytes(), 0u);

  moved = std::move(*second);  // frees the 10 bytes, takes the 20
  EXPECT_THAT(kind.freed_bytes_, ElementsAre(10u));
  EXPECT_EQ(moved.bytes(), 20u);

  moved.Reset();
  EXPECT_EQ(moved.data(), nullptr);
  moved.Reset();  // a second Reset frees nothing
  EXPECT_EQ(kind.live_, 0);
  EXPECT_THAT(kind.freed_bytes_, ElementsAre(10u, 20u));
}

TEST(BufferTest, RefusesZeroBytesAndNoKind) {
  FakeMemoryKind kind;
  EXPECT_EQ(Buffer::Allocate(&kind, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Buffer::Allocate(nullptr, 8).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(kind.live_, 0);
}

TEST(BufferTest, PassesTheKindsErrorOn) {
  FakeMemoryKind kind;
  kind.fail_ = true;
  absl::StatusOr<Buffer> buffer = Buffer::Allocate(&kind, 8);
  EXPECT_EQ(buffer.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(buffer.status().message(), HasSubstr("fake out of memory"));
}

// -------------------------------------------------------------- host kinds

class HostKindTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HostKindTest, AllocatesWritableAlignedHostMemory) {
  std::unique_ptr<MemoryKind> kind = CreateOrDie(GetParam());
  ASSERT_NE(kind, nullptr);
  ASSERT_TRUE(kind->CheckAvailable().ok()) << kind->CheckAvailable();
  EXPECT_EQ(kind->space(), MemorySpace::kHost);
  for (size_t bytes : {size_t{1}, size_t{4097}, size_t{1} << 20}) {
    absl::StatusOr<Buffer> buffer = Buffer::Allocate(kind.get(), bytes);
    ASSERT_TRUE(buffer.ok()) << GetParam() << ": " << buffer.status();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer->data()) % 64, 0u) << bytes;
    ExpectWritable(buffer->data(), bytes);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryHostKind, HostKindTest,
                         ::testing::Values("default", "regular", "interleave",
                                           "hbw_preferred", "numa:0"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == ':') c = '_';
                           }
                           return name;
                         });

// -------------------------------------------------------------------- numa

TEST(NumaKindTest, BindsEveryPageToTheNode) {
  std::unique_ptr<MemoryKind> kind = CreateOrDie("numa:0");
  ASSERT_NE(kind, nullptr);
  const size_t bytes = size_t{4} << 20;
  absl::StatusOr<Buffer> buffer = Buffer::Allocate(kind.get(), bytes);
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  std::memset(buffer->data(), 1, bytes);

  int mode = -1;
  unsigned long nodemask = 0;
  ASSERT_EQ(get_mempolicy(&mode, &nodemask, sizeof(nodemask) * 8,
                          buffer->data(), MPOL_F_ADDR),
            0)
      << std::strerror(errno);
  EXPECT_EQ(mode, MPOL_BIND);
  EXPECT_EQ(nodemask, 1ul);
  auto* last_page = static_cast<char*>(buffer->data()) + bytes - 1;
  EXPECT_EQ(NodeOfPage(buffer->data()), 0);
  EXPECT_EQ(NodeOfPage(last_page), 0);
}

TEST(NumaKindTest, MissingNodeIsFailedPrecondition) {
  std::unique_ptr<MemoryKind> kind = CreateOrDie("numa:99");
  ASSERT_NE(kind, nullptr);
  const absl::Status available = kind->CheckAvailable();
  EXPECT_EQ(available.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(
      available.message(),
      HasSubstr("NUMA node 99 does not exist (this machine has nodes 0-"));
  EXPECT_EQ(kind->Allocate(4096).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// ----------------------------------------------------------------- memkind

TEST(MemkindKindTest, HbwWithoutHighBandwidthMemoryFailsClearly) {
  if (HbwNodesSet()) GTEST_SKIP() << "MEMKIND_HBW_NODES is set";
  std::unique_ptr<MemoryKind> kind = CreateOrDie("hbw");
  ASSERT_NE(kind, nullptr);
  const absl::Status available = kind->CheckAvailable();
  if (available.ok()) GTEST_SKIP() << "this machine has high-bandwidth memory";
  EXPECT_EQ(available.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(available.message(), HasSubstr("no high-bandwidth memory"));
  EXPECT_THAT(available.message(), HasSubstr("MEMKIND_HBW_NODES"));
  EXPECT_EQ(kind->Allocate(4096).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(MemkindKindTest, HbwPreferredFallsBackToRegularMemory) {
  if (HbwNodesSet()) GTEST_SKIP() << "MEMKIND_HBW_NODES is set";
  if (CreateOrDie("hbw")->CheckAvailable().ok()) {
    GTEST_SKIP() << "this machine has high-bandwidth memory";
  }
  std::unique_ptr<MemoryKind> kind = CreateOrDie("hbw_preferred");
  ASSERT_NE(kind, nullptr);
  EXPECT_TRUE(kind->CheckAvailable().ok());
  EXPECT_THAT(kind->Describe(), HasSubstr("regular memory"));
  absl::StatusOr<Buffer> buffer = Buffer::Allocate(kind.get(), 1 << 16);
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  ExpectWritable(buffer->data(), 1 << 16);
}

TEST(MemkindKindTest, DaxKmemWithoutPersistentMemoryFailsClearly) {
  std::unique_ptr<MemoryKind> kind = CreateOrDie("dax_kmem");
  ASSERT_NE(kind, nullptr);
  const absl::Status available = kind->CheckAvailable();
  if (available.ok()) GTEST_SKIP() << "this machine has KMEM DAX memory";
  EXPECT_EQ(available.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(available.message(), HasSubstr("KMEM DAX"));
}

// Runs with MEMKIND_HBW_NODES=0 (ctest entry memory_test_hbw_nodes).
class MemkindHbwNodesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* nodes = std::getenv("MEMKIND_HBW_NODES");
    if (nodes == nullptr || std::string(nodes) != "0") {
      GTEST_SKIP() << "needs MEMKIND_HBW_NODES=0";
    }
  }
};

TEST_F(MemkindHbwNodesTest, HbwAllocatesOnTheNamedNode) {
  std::unique_ptr<MemoryKind> kind = CreateOrDie("hbw");
  ASSERT_NE(kind, nullptr);
  ASSERT_TRUE(kind->CheckAvailable().ok()) << kind->CheckAvailable();
  const size_t bytes = size_t{1} << 20;
  absl::StatusOr<Buffer> buffer = Buffer::Allocate(kind.get(), bytes);
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer->data()) % 64, 0u);
  ExpectWritable(buffer->data(), bytes);
  EXPECT_EQ(NodeOfPage(buffer->data()), 0);
}

TEST_F(MemkindHbwNodesTest, HbwPreferredUsesHighBandwidthMemory) {
  std::unique_ptr<MemoryKind> kind = CreateOrDie("hbw_preferred");
  ASSERT_NE(kind, nullptr);
  EXPECT_THAT(kind->Describe(), HasSubstr("high-bandwidth memory,"));
  absl::StatusOr<Buffer> buffer = Buffer::Allocate(kind.get(), 4096);
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  ExpectWritable(buffer->data(), 4096);
}

// ------------------------------------------------------------- CUDA kinds

// A runtime that hands out host memory and records which calls were made.
class FakeDeviceRuntime final : public DeviceRuntime {
 public:
  bool built_with_cuda() const override { return true; }
  absl::Status Init(int) override { return absl::OkStatus(); }
  absl::StatusOr<void*> AllocateDevice(size_t bytes) override {
    calls_.push_back("AllocateDevice");
    return static_cast<void*>(new char[bytes]);
  }
  absl::StatusOr<void*> AllocatePinned(size_t bytes) override {
    calls_.push_back("AllocatePinned");
    return static_cast<void*>(new char[bytes]);
  }
  void FreeDevice(void* ptr) override {
    calls_.push_back("FreeDevice");
    delete[] static_cast<char*>(ptr);
  }
  void FreePinned(void* ptr) override {
    calls_.push_back("FreePinned");
    delete[] static_cast<char*>(ptr);
  }
  absl::Status CopyAsync(void*, const void*, size_t) override {
    return absl::OkStatus();
  }
  absl::Status Copy(void*, const void*, size_t) override {
    return absl::OkStatus();
  }
  absl::Status Synchronize() override { return absl::OkStatus(); }
  void* stream() const override { return nullptr; }
  absl::StatusOr<std::pair<size_t, size_t>> MemoryInfo() override {
    return std::make_pair(size_t{0}, size_t{0});
  }
  std::string Describe() override { return "fake"; }

  std::vector<std::string> calls_;
};

TEST(CudaKindTest, PinnedAndDeviceUseTheirRuntimeCalls) {
  FakeDeviceRuntime runtime;
  std::unique_ptr<MemoryKind> pinned = CreateOrDie("pinned", &runtime);
  std::unique_ptr<MemoryKind> device = CreateOrDie("device", &runtime);
  ASSERT_TRUE(pinned && device);
  EXPECT_TRUE(pinned->CheckAvailable().ok());
  { ASSERT_TRUE(Buffer::Allocate(pinned.get(), 8).ok()); }
  EXPECT_TRUE(device->CheckAvailable().ok());
  { ASSERT_TRUE(Buffer::Allocate(device.get(), 8).ok()); }
  EXPECT_THAT(runtime.calls_,
              ElementsAre("AllocatePinned", "FreePinned", "AllocatePinned",
                          "FreePinned", "AllocateDevice", "FreeDevice",
                          "AllocateDevice", "FreeDevice"));
}

TEST(CudaKindTest, NoRuntimeIsFailedPrecondition) {
  for (const char* text : {"pinned", "device"}) {
    std::unique_ptr<MemoryKind> kind = CreateOrDie(text, nullptr);
    ASSERT_NE(kind, nullptr);
    const absl::Status available = kind->CheckAvailable();
    EXPECT_EQ(available.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(available.message(), HasSubstr(std::string("--memory ") + text +
                                               " needs a CUDA device"));
    EXPECT_EQ(kind->Allocate(8).status().code(),
              absl::StatusCode::kFailedPrecondition);
  }
}

// This build's real runtime: with a GPU both kinds work; without one (or
// without CUDA) they fail with a status, never a crash.
TEST(CudaKindTest, RealRuntimeAllocatesOrFailsCleanly) {
  std::unique_ptr<DeviceRuntime> runtime = NewDeviceRuntime();
  ASSERT_NE(runtime, nullptr);
  const absl::Status init = runtime->Init(0);
  for (const char* text : {"pinned", "device"}) {
    std::unique_ptr<MemoryKind> kind = CreateOrDie(text, runtime.get());
    ASSERT_NE(kind, nullptr);
    const absl::Status available = kind->CheckAvailable();
    if (init.ok()) {
      ASSERT_TRUE(available.ok()) << text << ": " << available;
      absl::StatusOr<Buffer> buffer = Buffer::Allocate(kind.get(), 1 << 20);
      ASSERT_TRUE(buffer.ok()) << text << ": " << buffer.status();
      EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer->data()) % 64, 0u);
    } else {
      EXPECT_EQ(available.code(), absl::StatusCode::kFailedPrecondition)
          << available;
      EXPECT_THAT(available.message(),
                  HasSubstr(std::string("--memory ") + text));
      EXPECT_FALSE(Buffer::Allocate(kind.get(), 1 << 20).ok());
    }
  }
}

}  // namespace
}  // namespace collbench
