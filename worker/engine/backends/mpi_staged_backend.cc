// SPDX-License-Identifier: Apache-2.0
// mpi-staged: the path a non-CUDA-aware MPI forces on a GPU application.
// Every call copies its device inputs into pinned host buffers, runs the
// `mpi` backend on those, and queues the copies of the results back to the
// device. The copies are part of what is measured.
//
// host-staged is the same path on a machine without a GPU: the run's host
// buffers stand in for device memory and memcpy for cudaMemcpy, so the
// staging copies a GPU application pays are measured on any host (the
// seeds' "MPI + cudaMemcpy" method, seed 000 in docs/suites.md).
//
// Ordering: all copies go to the device runtime's single stream. Each call
// synchronizes that stream before MPI touches the staging buffers, which
// also retires the previous call's host -> device copies out of them, so
// the buffers can be reused without further bookkeeping.
#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/status_macros.h"
#include "worker/engine/backends/backend.h"
#include "worker/engine/backends/device_backends.h"
#include "worker/engine/backends/mpi_backend.h"
#include "worker/engine/cuda/device_runtime.h"
#include "worker/engine/mpi/mpi_status.h"

namespace collbench {
namespace {

// A pinned host buffer that only grows; contents are not preserved.
class PinnedStage {
 public:
  explicit PinnedStage(DeviceRuntime* device) : device_(device) {}
  PinnedStage(const PinnedStage&) = delete;
  PinnedStage& operator=(const PinnedStage&) = delete;
  ~PinnedStage() { device_->FreePinned(data_); }

  // At least `bytes` of pinned memory (null when bytes is 0 and nothing
  // was needed before).
  absl::StatusOr<char*> Reserve(size_t bytes) {
    if (bytes <= capacity_) return data_;
    device_->FreePinned(data_);
    data_ = nullptr;
    capacity_ = 0;
    ASSIGN_OR_RETURN(void* fresh, device_->AllocatePinned(bytes));
    data_ = static_cast<char*>(fresh);
    capacity_ = bytes;
    return data_;
  }

 private:
  DeviceRuntime* device_;
  char* data_ = nullptr;
  size_t capacity_ = 0;
};

class MpiStagedBackend final : public Backend {
 public:
  // `owned`, when given, is the runtime `device` points to (host-staged's
  // stand-in), kept alive until the stages are freed.
  MpiStagedBackend(std::string name, MemorySpace space, std::unique_ptr<Backend> host,
                   DeviceRuntime* device, int nranks, int rank,
                   std::unique_ptr<DeviceRuntime> owned = nullptr)
      : owned_(std::move(owned)),
        name_(std::move(name)),
        space_(space),
        host_(std::move(host)),
        device_(device),
        nranks_(nranks),
        rank_(rank),
        send_stage_(device),
        recv_stage_(device) {}
  // Copies still queued out of the stages must land before they are freed.
  ~MpiStagedBackend() override { (void)device_->Synchronize(); }

  std::string name() const override { return name_; }
  MemorySpace buffer_space() const override { return space_; }
  absl::Status Supports(DataType dtype) const override {
    return host_->Supports(dtype);
  }

  absl::Status Bcast(void* buffer, size_t count, DataType dtype, int root) override;
  absl::Status Reduce(const void* send, void* recv, size_t count, DataType dtype,
                      ReduceOp op, int root) override;
  absl::Status Allreduce(const void* send, void* recv, size_t count, DataType dtype,
                         ReduceOp op) override;
  absl::Status Gather(const void* send, void* recv, size_t count, DataType dtype,
                      int root) override;
  absl::Status Allgather(const void* send, void* recv, size_t count,
                         DataType dtype) override;
  absl::Status ReduceScatter(const void* send, void* recv, size_t recv_count,
                             DataType dtype, ReduceOp op) override;
  absl::Status Alltoall(const void* send, void* recv, size_t count,
                        DataType dtype) override;
  absl::Status Exchange(absl::Span<const PeerTransfer> transfers,
                        DataType dtype) override;
  absl::Status Synchronize() override { return device_->Synchronize(); }

 private:
  // Host addresses MPI works on for one call.
  struct Staged {
    char* send;
    char* recv;
  };
  // Stages `send_elems` from device `send` into the send stage, reserves
  // `recv_elems` in the receive stage and waits until MPI may use both.
  absl::StatusOr<Staged> StageIn(const void* send, size_t send_elems,
                                 size_t recv_elems, DataType dtype);
  // Queues the copy of `elems` results from the receive stage to `recv`.
  absl::Status StageOut(void* recv, const char* staged, size_t elems, DataType dtype) {
    return device_->CopyAsync(recv, staged, elems * ElementSize(dtype));
  }

  std::unique_ptr<DeviceRuntime> owned_;  // first: destroyed after the stages
  const std::string name_;
  const MemorySpace space_;
  std::unique_ptr<Backend> host_;
  DeviceRuntime* device_;
  const int nranks_;
  const int rank_;
  PinnedStage send_stage_;
  PinnedStage recv_stage_;
};

absl::StatusOr<MpiStagedBackend::Staged> MpiStagedBackend::StageIn(
    const void* send, size_t send_elems, size_t recv_elems, DataType dtype) {
  const size_t width = ElementSize(dtype);
  ASSIGN_OR_RETURN(char* host_send, send_stage_.Reserve(send_elems * width));
  ASSIGN_OR_RETURN(char* host_recv, recv_stage_.Reserve(recv_elems * width));
  if (send_elems > 0) {
    RETURN_IF_ERROR(device_->CopyAsync(host_send, send, send_elems * width));
  }
  RETURN_IF_ERROR(device_->Synchronize());
  return Staged{host_send, host_recv};
}

absl::Status MpiStagedBackend::Bcast(void* buffer, size_t count, DataType dtype,
                                     int root) {
  const bool is_root = rank_ == root;
  const size_t bytes = count * ElementSize(dtype);
  // One stage serves both directions: the root sends it, the others receive.
  ASSIGN_OR_RETURN(char* host, send_stage_.Reserve(bytes));
  if (is_root && bytes > 0) RETURN_IF_ERROR(device_->CopyAsync(host, buffer, bytes));
  RETURN_IF_ERROR(device_->Synchronize());
  RETURN_IF_ERROR(host_->Bcast(host, count, dtype, root));
  if (is_root) return absl::OkStatus();
  return StageOut(buffer, host, count, dtype);
}

absl::Status MpiStagedBackend::Reduce(const void* send, void* recv, size_t count,
                                      DataType dtype, ReduceOp op, int root) {
  ASSIGN_OR_RETURN(Staged stage, StageIn(send, count, count, dtype));
  RETURN_IF_ERROR(host_->Reduce(stage.send, stage.recv, count, dtype, op, root));
  if (rank_ != root) return absl::OkStatus();
  return StageOut(recv, stage.recv, count, dtype);
}

absl::Status MpiStagedBackend::Allreduce(const void* send, void* recv, size_t count,
                                         DataType dtype, ReduceOp op) {
  ASSIGN_OR_RETURN(Staged stage, StageIn(send, count, count, dtype));
  RETURN_IF_ERROR(host_->Allreduce(stage.send, stage.recv, count, dtype, op));
  return StageOut(recv, stage.recv, count, dtype);
}

absl::Status MpiStagedBackend::Gather(const void* send, void* recv, size_t count,
                                      DataType dtype, int root) {
  const bool is_root = rank_ == root;
  const size_t recv_elems = is_root ? count * nranks_ : 0;
  ASSIGN_OR_RETURN(Staged stage, StageIn(send, count, recv_elems, dtype));
  RETURN_IF_ERROR(host_->Gather(stage.send, stage.recv, count, dtype, root));
  if (!is_root) return absl::OkStatus();
  return StageOut(recv, stage.recv, recv_elems, dtype);
}

absl::Status MpiStagedBackend::Allgather(const void* send, void* recv, size_t count,
                                         DataType dtype) {
  const size_t recv_elems = count * nranks_;
  ASSIGN_OR_RETURN(Staged stage, StageIn(send, count, recv_elems, dtype));
  RETURN_IF_ERROR(host_->Allgather(stage.send, stage.recv, count, dtype));
  return StageOut(recv, stage.recv, recv_elems, dtype);
}

absl::Status MpiStagedBackend::ReduceScatter(const void* send, void* recv,
                                             size_t recv_count, DataType dtype,
                                             ReduceOp op) {
  ASSIGN_OR_RETURN(Staged stage,
                   StageIn(send, recv_count * nranks_, recv_count, dtype));
  RETURN_IF_ERROR(host_->ReduceScatter(stage.send, stage.recv, recv_count, dtype, op));
  return StageOut(recv, stage.recv, recv_count, dtype);
}

absl::Status MpiStagedBackend::Alltoall(const void* send, void* recv, size_t count,
                                        DataType dtype) {
  const size_t elems = count * nranks_;
  ASSIGN_OR_RETURN(Staged stage, StageIn(send, elems, elems, dtype));
  RETURN_IF_ERROR(host_->Alltoall(stage.send, stage.recv, count, dtype));
  return StageOut(recv, stage.recv, elems, dtype);
}

// Each transfer gets its own slice of one stage: sends are copied in before
// MPI runs, receives copied out after.
absl::Status MpiStagedBackend::Exchange(absl::Span<const PeerTransfer> transfers,
                                        DataType dtype) {
  const size_t width = ElementSize(dtype);
  size_t total_bytes = 0;
  for (const PeerTransfer& t : transfers) total_bytes += t.count * width;
  ASSIGN_OR_RETURN(char* host, send_stage_.Reserve(total_bytes));

  std::vector<PeerTransfer> staged(transfers.begin(), transfers.end());
  size_t offset = 0;
  for (PeerTransfer& t : staged) {
    char* slice = host + offset;
    if (t.direction == PeerTransfer::Direction::kSend && t.count > 0) {
      RETURN_IF_ERROR(device_->CopyAsync(slice, t.buffer, t.count * width));
    }
    t.buffer = slice;
    offset += t.count * width;
  }
  RETURN_IF_ERROR(device_->Synchronize());
  RETURN_IF_ERROR(host_->Exchange(staged, dtype));

  for (size_t i = 0; i < staged.size(); ++i) {
    if (staged[i].direction != PeerTransfer::Direction::kRecv) continue;
    RETURN_IF_ERROR(StageOut(transfers[i].buffer, static_cast<char*>(staged[i].buffer),
                             staged[i].count, dtype));
  }
  return absl::OkStatus();
}

// Host memory standing in for a device: "device" copies are memcpy, done
// when they are queued, and staging buffers are plain aligned allocations.
class HostStandInRuntime final : public DeviceRuntime {
 public:
  bool built_with_cuda() const override { return false; }
  absl::Status Init(int) override { return absl::OkStatus(); }
  absl::StatusOr<void*> AllocateDevice(size_t bytes) override { return AllocatePinned(bytes); }
  absl::StatusOr<void*> AllocatePinned(size_t bytes) override {
    constexpr size_t kAlign = 64;
    void* p = std::aligned_alloc(kAlign, std::max(kAlign, (bytes + kAlign - 1) / kAlign * kAlign));
    if (p == nullptr) return absl::ResourceExhaustedError("host-staged: out of memory");
    return p;
  }
  void FreeDevice(void* ptr) override { std::free(ptr); }
  void FreePinned(void* ptr) override { std::free(ptr); }
  absl::Status CopyAsync(void* dst, const void* src, size_t bytes) override {
    return Copy(dst, src, bytes);
  }
  absl::Status Copy(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status Synchronize() override { return absl::OkStatus(); }
  void* stream() const override { return nullptr; }
  absl::StatusOr<std::pair<size_t, size_t>> MemoryInfo() override {
    return absl::UnimplementedError("host-staged has no device");
  }
  std::string Describe() override { return "host memory standing in for a device"; }
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> NewHostStagedBackend(MPI_Comm comm) {
  int nranks = 0;
  int rank = 0;
  MPI_RETURN_IF_ERROR(MPI_Comm_size(comm, &nranks));
  MPI_RETURN_IF_ERROR(MPI_Comm_rank(comm, &rank));
  auto runtime = std::make_unique<HostStandInRuntime>();
  DeviceRuntime* device = runtime.get();
  return std::unique_ptr<Backend>(std::make_unique<MpiStagedBackend>(
      "host-staged", MemorySpace::kHost, NewMpiBackend(comm), device, nranks, rank,
      std::move(runtime)));
}

absl::StatusOr<std::unique_ptr<Backend>> NewMpiStagedBackend(MPI_Comm comm,
                                                             DeviceRuntime* device) {
  if (device == nullptr || device->stream() == nullptr) {
    return absl::FailedPreconditionError(
        "--backend mpi-staged needs an initialised CUDA device runtime");
  }
  int nranks = 0;
  int rank = 0;
  MPI_RETURN_IF_ERROR(MPI_Comm_size(comm, &nranks));
  MPI_RETURN_IF_ERROR(MPI_Comm_rank(comm, &rank));
  return std::unique_ptr<Backend>(std::make_unique<MpiStagedBackend>(
      "mpi-staged", MemorySpace::kDevice, NewMpiBackend(comm), device, nranks, rank));
}

}  // namespace collbench
