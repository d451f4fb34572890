// SPDX-License-Identifier: Apache-2.0
// nccl: NCCL collectives on device memory, issued to the device runtime's
// stream. NCCL itself is loaded at run time (nccl/nccl_library.h), so the
// binary starts where it is not installed. The communicator is bootstrapped
// over MPI: rank 0 creates the unique id and broadcasts it. Gather, alltoall
// and Exchange have no NCCL collective and are grouped point-to-point calls,
// as in nccl-tests.
//
// Every call returns once the work is queued; Synchronize() waits for the
// stream while watching the communicator for asynchronous errors, so a
// failed peer ends the wait with an error instead of a hang.
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "common/status_macros.h"
#include "worker/engine/backends/backend.h"
#include "worker/engine/backends/device_backends.h"
#include "worker/engine/cuda/cuda_status.h"
#include "worker/engine/cuda/device_runtime.h"
#include "worker/engine/mpi/mpi_communicator.h"
#include "worker/engine/mpi/mpi_status.h"
#include "worker/engine/nccl/nccl_library.h"

namespace collbench {
namespace {

ncclDataType_t ToNcclType(DataType dtype) {
  switch (dtype) {
    case DataType::kInt8: return ncclInt8;
    case DataType::kInt32: return ncclInt32;
    case DataType::kInt64: return ncclInt64;
    case DataType::kFloat16: return ncclFloat16;
    case DataType::kBFloat16: return ncclBfloat16;
    case DataType::kFloat32: return ncclFloat32;
    case DataType::kFloat64: return ncclFloat64;
  }
  return ncclFloat32;
}

ncclRedOp_t ToNcclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return ncclSum;
    case ReduceOp::kProd: return ncclProd;
    case ReduceOp::kMin: return ncclMin;
    case ReduceOp::kMax: return ncclMax;
  }
  return ncclSum;
}

// Address of block `index` of `count` elements.
const void* Block(const void* base, size_t index, size_t count, DataType dtype) {
  return static_cast<const char*>(base) + index * count * ElementSize(dtype);
}
void* Block(void* base, size_t index, size_t count, DataType dtype) {
  return static_cast<char*>(base) + index * count * ElementSize(dtype);
}

// The bootstrap message rank 0 broadcasts: the id, or that it has none so
// the other ranks fail too instead of waiting in ncclCommInitRank.
struct Bootstrap {
  int ok = 0;
  ncclUniqueId id{};
};

absl::StatusOr<ncclUniqueId> ShareUniqueId(const NcclLibrary& nccl, MPI_Comm comm, int rank) {
  Bootstrap message;
  absl::Status created = absl::OkStatus();
  if (rank == 0) {
    created = nccl.StatusOf(nccl.api().ncclGetUniqueId(&message.id), "ncclGetUniqueId(&id)",
                            __FILE__, __LINE__);
    message.ok = created.ok() ? 1 : 0;
  }
  MPI_RETURN_IF_ERROR(MPI_Bcast(&message, sizeof message, MPI_BYTE, 0, comm));
  if (!created.ok()) return created;
  if (message.ok == 0) {
    return absl::UnavailableError(
        "rank 0 could not create the NCCL unique id; see its error");
  }
  return message.id;
}

// Loads NCCL on every rank. A rank that could not must not leave the others
// waiting in the bootstrap, so all learn whether every rank has it.
absl::StatusOr<std::unique_ptr<NcclLibrary>> LoadOnEveryRank(MpiCommunicator& comm) {
  absl::StatusOr<std::unique_ptr<NcclLibrary>> loaded = NcclLibrary::Load(DefaultNcclSearch());
  ASSIGN_OR_RETURN(bool all_loaded, comm.AllOk(loaded.ok()));
  if (!loaded.ok() || all_loaded) return loaded;
  return absl::FailedPreconditionError("another rank could not load NCCL; see its error");
}

class NcclBackend final : public Backend {
 public:
  NcclBackend(std::unique_ptr<NcclLibrary> nccl, ncclComm_t comm, cudaStream_t stream, int rank,
              int nranks)
      : nccl_(std::move(nccl)),
        comm_(comm),
        stream_(stream),
        rank_(rank),
        nranks_(nranks),
        version_(nccl_->VersionText()) {}
  NcclBackend(const NcclBackend&) = delete;
  NcclBackend& operator=(const NcclBackend&) = delete;
  ~NcclBackend() override;

  std::string name() const override { return "nccl"; }
  MemorySpace buffer_space() const override { return MemorySpace::kDevice; }
  absl::Status Supports(DataType) const override { return absl::OkStatus(); }

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
  absl::Status Synchronize() override;
  std::string library_version() const override { return version_; }

 private:
  absl::Status CheckUsable() const;
  // Ends a group opened by ncclGroupStart, returning the first error.
  absl::Status EndGroup(absl::Status body);

  const std::unique_ptr<NcclLibrary> nccl_;  // outlives comm_
  ncclComm_t comm_;                          // null once aborted after an asynchronous error
  cudaStream_t stream_;
  const int rank_;
  const int nranks_;
  const std::string version_;
};

NcclBackend::~NcclBackend() {
  if (comm_ == nullptr) return;
  const NcclApi& api = nccl_->api();
  ncclResult_t async_error = ncclSuccess;
  const bool healthy =
      api.ncclCommGetAsyncError(comm_, &async_error) == ncclSuccess && async_error == ncclSuccess;
  // Destroy waits for outstanding work; abort does not, which is what a
  // communicator with a failed peer needs.
  (void)(healthy ? api.ncclCommDestroy(comm_) : api.ncclCommAbort(comm_));
}

absl::Status NcclBackend::CheckUsable() const {
  if (comm_ != nullptr) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "the NCCL communicator was aborted after an earlier error");
}

absl::Status NcclBackend::EndGroup(absl::Status body) {
  const absl::Status ended =
      nccl_->StatusOf(nccl_->api().ncclGroupEnd(), "ncclGroupEnd()", __FILE__, __LINE__);
  return body.ok() ? ended : body;
}

absl::Status NcclBackend::Bcast(void* buffer, size_t count, DataType dtype, int root) {
  RETURN_IF_ERROR(CheckUsable());
  NCCL_RETURN_IF_ERROR(
      *nccl_, ncclBroadcast(buffer, buffer, count, ToNcclType(dtype), root, comm_, stream_));
  return absl::OkStatus();
}

absl::Status NcclBackend::Reduce(const void* send, void* recv, size_t count,
                                 DataType dtype, ReduceOp op, int root) {
  RETURN_IF_ERROR(CheckUsable());
  NCCL_RETURN_IF_ERROR(
      *nccl_, ncclReduce(send, recv, count, ToNcclType(dtype), ToNcclOp(op), root, comm_, stream_));
  return absl::OkStatus();
}

absl::Status NcclBackend::Allreduce(const void* send, void* recv, size_t count,
                                    DataType dtype, ReduceOp op) {
  RETURN_IF_ERROR(CheckUsable());
  NCCL_RETURN_IF_ERROR(
      *nccl_, ncclAllReduce(send, recv, count, ToNcclType(dtype), ToNcclOp(op), comm_, stream_));
  return absl::OkStatus();
}

absl::Status NcclBackend::Allgather(const void* send, void* recv, size_t count,
                                    DataType dtype) {
  RETURN_IF_ERROR(CheckUsable());
  NCCL_RETURN_IF_ERROR(*nccl_, ncclAllGather(send, recv, count, ToNcclType(dtype), comm_, stream_));
  return absl::OkStatus();
}

absl::Status NcclBackend::ReduceScatter(const void* send, void* recv,
                                        size_t recv_count, DataType dtype,
                                        ReduceOp op) {
  RETURN_IF_ERROR(CheckUsable());
  NCCL_RETURN_IF_ERROR(*nccl_, ncclReduceScatter(send, recv, recv_count, ToNcclType(dtype),
                                                 ToNcclOp(op), comm_, stream_));
  return absl::OkStatus();
}

// Every rank sends its block to the root; the root receives block r from
// rank r (itself included: NCCL pairs a send and receive to self).
absl::Status NcclBackend::Gather(const void* send, void* recv, size_t count,
                                 DataType dtype, int root) {
  RETURN_IF_ERROR(CheckUsable());
  const ncclDataType_t type = ToNcclType(dtype);
  NCCL_RETURN_IF_ERROR(*nccl_, ncclGroupStart());
  absl::Status body = [&]() -> absl::Status {
    if (rank_ == root) {
      for (int r = 0; r < nranks_; ++r) {
        NCCL_RETURN_IF_ERROR(
            *nccl_, ncclRecv(Block(recv, r, count, dtype), count, type, r, comm_, stream_));
      }
    }
    NCCL_RETURN_IF_ERROR(*nccl_, ncclSend(send, count, type, root, comm_, stream_));
    return absl::OkStatus();
  }();
  return EndGroup(std::move(body));
}

absl::Status NcclBackend::Alltoall(const void* send, void* recv, size_t count,
                                   DataType dtype) {
  RETURN_IF_ERROR(CheckUsable());
  const ncclDataType_t type = ToNcclType(dtype);
  NCCL_RETURN_IF_ERROR(*nccl_, ncclGroupStart());
  absl::Status body = [&]() -> absl::Status {
    for (int r = 0; r < nranks_; ++r) {
      NCCL_RETURN_IF_ERROR(*nccl_,
                           ncclSend(Block(send, r, count, dtype), count, type, r, comm_, stream_));
      NCCL_RETURN_IF_ERROR(*nccl_,
                           ncclRecv(Block(recv, r, count, dtype), count, type, r, comm_, stream_));
    }
    return absl::OkStatus();
  }();
  return EndGroup(std::move(body));
}

absl::Status NcclBackend::Exchange(absl::Span<const PeerTransfer> transfers,
                                   DataType dtype) {
  RETURN_IF_ERROR(CheckUsable());
  const ncclDataType_t type = ToNcclType(dtype);
  NCCL_RETURN_IF_ERROR(*nccl_, ncclGroupStart());
  absl::Status body = [&]() -> absl::Status {
    for (const PeerTransfer& t : transfers) {
      if (t.direction == PeerTransfer::Direction::kSend) {
        NCCL_RETURN_IF_ERROR(*nccl_, ncclSend(t.buffer, t.count, type, t.peer, comm_, stream_));
      } else {
        NCCL_RETURN_IF_ERROR(*nccl_, ncclRecv(t.buffer, t.count, type, t.peer, comm_, stream_));
      }
    }
    return absl::OkStatus();
  }();
  return EndGroup(std::move(body));
}

// Polls instead of cudaStreamSynchronize so an asynchronous NCCL error (a
// peer gone, a network failure) ends the wait; nccl-tests does the same.
absl::Status NcclBackend::Synchronize() {
  RETURN_IF_ERROR(CheckUsable());
  while (true) {
    const cudaError_t state = cudaStreamQuery(stream_);
    if (state == cudaSuccess) return absl::OkStatus();
    if (state != cudaErrorNotReady) {
      return CudaStatus(state, "cudaStreamQuery(stream)", __FILE__, __LINE__);
    }
    ncclResult_t async_error = ncclSuccess;
    NCCL_RETURN_IF_ERROR(*nccl_, ncclCommGetAsyncError(comm_, &async_error));
    if (async_error != ncclSuccess) {
      const absl::Status failed = nccl_->StatusOf(
          async_error, "NCCL communicator (asynchronous error)", __FILE__, __LINE__);
      (void)nccl_->api().ncclCommAbort(comm_);
      comm_ = nullptr;
      return failed;
    }
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> NewNcclBackend(MpiCommunicator& comm,
                                                        DeviceRuntime* device) {
  if (device == nullptr || device->stream() == nullptr) {
    return absl::FailedPreconditionError(
        "--backend nccl needs an initialised CUDA device runtime");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<NcclLibrary> nccl, LoadOnEveryRank(comm));
  ASSIGN_OR_RETURN(ncclUniqueId id, ShareUniqueId(*nccl, comm.handle(), comm.rank()));
  ncclComm_t nccl_comm = nullptr;
  NCCL_RETURN_IF_ERROR(*nccl, ncclCommInitRank(&nccl_comm, comm.size(), id, comm.rank()));
  return std::unique_ptr<Backend>(std::make_unique<NcclBackend>(
      std::move(nccl), nccl_comm, static_cast<cudaStream_t>(device->stream()), comm.rank(),
      comm.size()));
}

}  // namespace collbench
