// SPDX-License-Identifier: Apache-2.0
#include "worker/engine/backends/mpi_backend.h"

#include <climits>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/engine/mpi/mpi_status.h"

namespace collbench {
namespace {

// MPI counts are ints; larger messages would need derived types.
absl::StatusOr<int> MpiCount(size_t count) {
  if (count > static_cast<size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "message of ", count, " elements exceeds MPI's int count limit (", INT_MAX, ")"));
  }
  return static_cast<int>(count);
}

// The MPI count and type of a call. Inline and branch-light: it runs inside
// the timed loop, where the minimal MPI loop it is compared with passes
// constants.
inline bool MpiArgs(size_t count, DataType dtype, int* n, MPI_Datatype* type) {
  if (ABSL_PREDICT_FALSE(count > static_cast<size_t>(INT_MAX))) return false;
  *n = static_cast<int>(count);
  return MpiDatatypeFor(dtype, type);
}

// The send buffer of an in-place call (--in-place, engine_spec's
// InPlaceLayoutOf): `send` is `recv` plus `offset_bytes`. MPI spells it
// MPI_IN_PLACE.
inline bool InPlaceAt(const void* send, const void* recv, size_t offset_bytes) {
  return send == static_cast<const char*>(recv) + offset_bytes;
}

// Why MpiArgs() refused (out of line: never on the timed path).
ABSL_ATTRIBUTE_NOINLINE absl::Status MpiArgsError(size_t count, DataType dtype) {
  MPI_Datatype unused;
  if (absl::Status s = ToMpiDatatype(dtype, &unused); !s.ok()) return s;
  return MpiCount(count).status();
}

class MpiBackend final : public Backend {
 public:
  MpiBackend(MPI_Comm comm, std::string name, MemorySpace space)
      : comm_(comm), name_(std::move(name)), space_(space) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }

  std::string name() const override { return name_; }
  MemorySpace buffer_space() const override { return space_; }
  absl::Status Supports(DataType dtype) const override {
    MPI_Datatype unused;
    return ToMpiDatatype(dtype, &unused);
  }

  absl::Status Bcast(void* buffer, size_t count, DataType dtype, int root) override {
    int n;
    MPI_Datatype type;
    if (!MpiArgs(count, dtype, &n, &type)) return MpiArgsError(count, dtype);
    MPI_RETURN_IF_ERROR(MPI_Bcast(buffer, n, type, root, comm_));
    return absl::OkStatus();
  }

  absl::Status Reduce(const void* send, void* recv, size_t count, DataType dtype,
                      ReduceOp op, int root) override {
    int n;
    MPI_Datatype type;
    if (!MpiArgs(count, dtype, &n, &type)) return MpiArgsError(count, dtype);
    if (InPlaceAt(send, recv, 0)) {
      // The root reduces into its input; elsewhere the receive buffer is
      // not significant and must not alias the input.
      if (rank_ == root) send = MPI_IN_PLACE; else recv = nullptr;
    }
    MPI_RETURN_IF_ERROR(MPI_Reduce(send, recv, n, type, ToMpiOp(op), root, comm_));
    return absl::OkStatus();
  }

  absl::Status Allreduce(const void* send, void* recv, size_t count, DataType dtype,
                         ReduceOp op) override {
    int n;
    MPI_Datatype type;
    if (!MpiArgs(count, dtype, &n, &type)) return MpiArgsError(count, dtype);
    if (InPlaceAt(send, recv, 0)) send = MPI_IN_PLACE;
    MPI_RETURN_IF_ERROR(MPI_Allreduce(send, recv, n, type, ToMpiOp(op), comm_));
    return absl::OkStatus();
  }

  absl::Status Gather(const void* send, void* recv, size_t count, DataType dtype,
                      int root) override {
    int n;
    MPI_Datatype type;
    if (!MpiArgs(count, dtype, &n, &type)) return MpiArgsError(count, dtype);
    if (rank_ == root && InPlaceAt(send, recv, root * count * ElementSize(dtype))) {
      send = MPI_IN_PLACE;
    } else if (rank_ != root && InPlaceAt(send, recv, 0)) {
      recv = nullptr;  // not significant off the root
    }
    MPI_RETURN_IF_ERROR(MPI_Gather(send, n, type, recv, n, type, root, comm_));
    return absl::OkStatus();
  }

  absl::Status Allgather(const void* send, void* recv, size_t count,
                         DataType dtype) override {
    int n;
    MPI_Datatype type;
    if (!MpiArgs(count, dtype, &n, &type)) return MpiArgsError(count, dtype);
    if (InPlaceAt(send, recv, rank_ * count * ElementSize(dtype))) send = MPI_IN_PLACE;
    MPI_RETURN_IF_ERROR(MPI_Allgather(send, n, type, recv, n, type, comm_));
    return absl::OkStatus();
  }

  absl::Status ReduceScatter(const void* send, void* recv, size_t recv_count,
                             DataType dtype, ReduceOp op) override {
    int n;
    MPI_Datatype type;
    if (!MpiArgs(recv_count, dtype, &n, &type)) return MpiArgsError(recv_count, dtype);
    MPI_RETURN_IF_ERROR(MPI_Reduce_scatter_block(send, recv, n, type, ToMpiOp(op), comm_));
    return absl::OkStatus();
  }

  absl::Status Alltoall(const void* send, void* recv, size_t count,
                        DataType dtype) override {
    int n;
    MPI_Datatype type;
    if (!MpiArgs(count, dtype, &n, &type)) return MpiArgsError(count, dtype);
    if (InPlaceAt(send, recv, 0)) send = MPI_IN_PLACE;
    MPI_RETURN_IF_ERROR(MPI_Alltoall(send, n, type, recv, n, type, comm_));
    return absl::OkStatus();
  }

  absl::Status Exchange(absl::Span<const PeerTransfer> transfers, DataType dtype) override {
    MPI_Datatype type;
    RETURN_IF_ERROR(ToMpiDatatype(dtype, &type));
    if (transfers.size() == 1) return Blocking(transfers[0], type);
    requests_.resize(transfers.size());
    for (size_t i = 0; i < transfers.size(); ++i) {
      const PeerTransfer& t = transfers[i];
      ASSIGN_OR_RETURN(int n, MpiCount(t.count));
      if (t.direction == PeerTransfer::Direction::kSend) {
        MPI_RETURN_IF_ERROR(MPI_Isend(t.buffer, n, type, t.peer, kTag, comm_, &requests_[i]));
      } else {
        MPI_RETURN_IF_ERROR(MPI_Irecv(t.buffer, n, type, t.peer, kTag, comm_, &requests_[i]));
      }
    }
    MPI_RETURN_IF_ERROR(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(),
                                    MPI_STATUSES_IGNORE));
    return absl::OkStatus();
  }

  // MPI calls are blocking: nothing to wait for.
  bool completes_asynchronously() const override { return false; }
  absl::Status Synchronize() override { return absl::OkStatus(); }

 private:
  static constexpr int kTag = 7;

  // A lone transfer uses blocking send/recv, as osu_latency does.
  absl::Status Blocking(const PeerTransfer& t, MPI_Datatype type) {
    ASSIGN_OR_RETURN(int n, MpiCount(t.count));
    if (t.direction == PeerTransfer::Direction::kSend) {
      MPI_RETURN_IF_ERROR(MPI_Send(t.buffer, n, type, t.peer, kTag, comm_));
    } else {
      MPI_RETURN_IF_ERROR(
          MPI_Recv(t.buffer, n, type, t.peer, kTag, comm_, MPI_STATUS_IGNORE));
    }
    return absl::OkStatus();
  }

  MPI_Comm comm_;
  std::string name_;
  MemorySpace space_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<MPI_Request> requests_;  // reused across calls
};

}  // namespace

std::unique_ptr<Backend> NewMpiBackend(MPI_Comm comm, std::string name, MemorySpace space) {
  return std::make_unique<MpiBackend>(comm, std::move(name), space);
}

}  // namespace collbench
