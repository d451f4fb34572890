// SPDX-License-Identifier: Apache-2.0
// Fakes for driving the engine without MPI (CONTRIBUTING.md#style): a one-rank
// communicator and a loopback backend that implements every collective for
// a single rank by copying, optionally corrupting one element.
#ifndef COLLBENCH_TESTS_UNIT_ENGINE_FAKES_H_
#define COLLBENCH_TESTS_UNIT_ENGINE_FAKES_H_

#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include "worker/engine/backends/backend.h"
#include "worker/engine/communicator.h"
#include "engine_spec/pattern.h"

namespace collbench {

class SingleRankCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  absl::Status Barrier() override {
    ++barriers;
    if (barrier_sleep.count() > 0) std::this_thread::sleep_for(barrier_sleep);
    return absl::OkStatus();
  }
  absl::Status AllreduceSum(std::vector<double>*) override { return absl::OkStatus(); }
  absl::Status AllreduceMin(std::vector<double>*) override { return absl::OkStatus(); }
  absl::Status AllreduceMax(std::vector<double>*) override { return absl::OkStatus(); }
  absl::StatusOr<bool> AllOk(bool ok) override { return ok; }
  absl::Status MergeHistogramsToRoot(Histogram*) override { return absl::OkStatus(); }
  absl::StatusOr<std::vector<std::string>> GatherStrings(const std::string& mine) override {
    return std::vector<std::string>{mine};
  }
  absl::StatusOr<std::vector<double>> GatherDoubles(const std::vector<double>& mine) override {
    return mine;
  }
  absl::StatusOr<std::unique_ptr<Communicator>> Split(int color, int) override {
    if (color < 0) return std::unique_ptr<Communicator>();
    return std::unique_ptr<Communicator>(new SingleRankCommunicator);
  }
  std::string library_name() const override { return "fake"; }
  std::string library_version() const override { return "fake 1.0"; }

  int barriers = 0;
  // How long each barrier takes: a barrier that is timed would show it.
  std::chrono::microseconds barrier_sleep{0};
};

// With one rank every collective's result is its input, so copying is a
// correct implementation. `corrupt` makes every call damage one element.
class LoopbackBackend final : public Backend {
 public:
  bool corrupt = false;
  int calls = 0;
  // The buffers of the last call that has two (in place: one and the same,
  // or the send buffer inside the receive buffer).
  const void* last_send = nullptr;
  const void* last_recv = nullptr;

  std::string name() const override { return "loopback"; }
  MemorySpace buffer_space() const override { return MemorySpace::kHost; }
  absl::Status Supports(DataType) const override { return absl::OkStatus(); }
  absl::Status Bcast(void*, size_t, DataType, int) override { return Done(nullptr, 0, {}); }
  absl::Status Reduce(const void* s, void* r, size_t n, DataType t, ReduceOp, int) override {
    return Copy(s, r, n, t);
  }
  absl::Status Allreduce(const void* s, void* r, size_t n, DataType t, ReduceOp) override {
    return Copy(s, r, n, t);
  }
  absl::Status Gather(const void* s, void* r, size_t n, DataType t, int) override {
    return Copy(s, r, n, t);
  }
  absl::Status Allgather(const void* s, void* r, size_t n, DataType t) override {
    return Copy(s, r, n, t);
  }
  absl::Status ReduceScatter(const void* s, void* r, size_t n, DataType t, ReduceOp) override {
    return Copy(s, r, n, t);
  }
  absl::Status Alltoall(const void* s, void* r, size_t n, DataType t) override {
    return Copy(s, r, n, t);
  }
  absl::Status Exchange(absl::Span<const PeerTransfer>, DataType) override {
    return absl::UnimplementedError("no peers");
  }
  absl::Status Synchronize() override { return absl::OkStatus(); }

 private:
  absl::Status Copy(const void* send, void* recv, size_t n, DataType t) {
    last_send = send;
    last_recv = recv;
    std::memmove(recv, send, n * ElementSize(t));
    return Done(recv, n, t);
  }
  absl::Status Done(void* recv, size_t n, DataType t) {
    ++calls;
    if (corrupt && recv != nullptr && n > 0) StoreElement(recv, t, n - 1, 99.0);
    return absl::OkStatus();
  }
};

}  // namespace collbench

#endif  // COLLBENCH_TESTS_UNIT_ENGINE_FAKES_H_
