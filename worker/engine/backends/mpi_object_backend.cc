// SPDX-License-Identifier: Apache-2.0
// mpi-object: the serialized-object message path (seed 002, docs/suites.md: the
// "object" API of mpi4py's lower-case methods) beside the buffer path of
// `mpi`. Every call serializes its message into a byte string that
// describes itself (a header naming the element type and count, then the
// elements), moves the bytes with MPI as MPI_BYTE — the lengths first, as
// the object path must — and deserializes them on the receiving side,
// checking the header, into the caller's buffer. Reductions run after
// deserialization, on the host: a binomial tree of object messages to the
// root, then (allreduce) a broadcast of the reduced object.
//
// What it measures is the object path's own cost — a copy and an
// allocation per message on each side, the length exchange, point-to-point
// trees instead of the library's reduction — not a Python interpreter.
// reduce_scatter has no object form (mpi4py's lower-case methods have
// none) and is refused.

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/engine/backends/mpi_backend.h"
#include "worker/engine/mpi/mpi_status.h"

namespace collbench {
namespace {

constexpr uint32_t kMagic = 0x43424f31;  // "CBO1"
constexpr int kTag = 0x4f42;

struct Header {
  uint32_t magic;
  uint32_t dtype;
  uint64_t count;
};

using Bytes = std::vector<unsigned char>;

Bytes Serialize(const void* data, size_t count, DataType dtype) {
  const size_t payload = count * ElementSize(dtype);
  Bytes bytes(sizeof(Header) + payload);
  const Header header{kMagic, static_cast<uint32_t>(dtype), count};
  std::memcpy(bytes.data(), &header, sizeof header);
  if (payload > 0) std::memcpy(bytes.data() + sizeof header, data, payload);
  return bytes;
}

// Copies the elements of `bytes` into `out`, which holds `count` elements.
absl::Status Deserialize(const unsigned char* bytes, size_t size, DataType dtype, size_t count,
                         void* out) {
  Header header;
  if (size < sizeof header) {
    return absl::DataLossError(absl::StrCat("mpi-object: a message of ", size,
                                            " bytes is shorter than its header"));
  }
  std::memcpy(&header, bytes, sizeof header);
  const size_t payload = count * ElementSize(dtype);
  if (header.magic != kMagic || header.dtype != static_cast<uint32_t>(dtype) ||
      header.count != count || size != sizeof header + payload) {
    return absl::DataLossError(absl::StrCat(
        "mpi-object: a message does not hold ", count, " ", DataTypeName(dtype),
        " elements (header says ", header.count, ", ", size, " bytes)"));
  }
  if (payload > 0) std::memcpy(out, bytes + sizeof header, payload);
  return absl::OkStatus();
}

absl::StatusOr<int> ByteCount(size_t bytes) {
  if (bytes > static_cast<size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mpi-object: a serialized message of ", bytes, " bytes exceeds MPI's int count limit"));
  }
  return static_cast<int>(bytes);
}

template <typename T>
void Combine(T* acc, const T* other, size_t count, ReduceOp op) {
  for (size_t i = 0; i < count; ++i) {
    switch (op) {
      case ReduceOp::kSum: acc[i] = static_cast<T>(acc[i] + other[i]); break;
      case ReduceOp::kProd: acc[i] = static_cast<T>(acc[i] * other[i]); break;
      case ReduceOp::kMin: acc[i] = std::min(acc[i], other[i]); break;
      case ReduceOp::kMax: acc[i] = std::max(acc[i], other[i]); break;
    }
  }
}

// acc = acc (op) other, elementwise, as the object path reduces after
// deserializing.
absl::Status CombineInto(void* acc, const void* other, size_t count, DataType dtype,
                         ReduceOp op) {
  switch (dtype) {
    case DataType::kInt8:
      Combine(static_cast<int8_t*>(acc), static_cast<const int8_t*>(other), count, op);
      return absl::OkStatus();
    case DataType::kInt32:
      Combine(static_cast<int32_t*>(acc), static_cast<const int32_t*>(other), count, op);
      return absl::OkStatus();
    case DataType::kInt64:
      Combine(static_cast<int64_t*>(acc), static_cast<const int64_t*>(other), count, op);
      return absl::OkStatus();
    case DataType::kFloat32:
      Combine(static_cast<float*>(acc), static_cast<const float*>(other), count, op);
      return absl::OkStatus();
    case DataType::kFloat64:
      Combine(static_cast<double*>(acc), static_cast<const double*>(other), count, op);
      return absl::OkStatus();
    case DataType::kFloat16:
    case DataType::kBFloat16:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("mpi-object cannot reduce ", DataTypeName(dtype)));
}

class MpiObjectBackend final : public Backend {
 public:
  explicit MpiObjectBackend(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }

  std::string name() const override { return "mpi-object"; }
  MemorySpace buffer_space() const override { return MemorySpace::kHost; }
  absl::Status Supports(DataType dtype) const override {
    MPI_Datatype unused;
    return ToMpiDatatype(dtype, &unused);
  }
  bool completes_asynchronously() const override { return false; }
  absl::Status Synchronize() override { return absl::OkStatus(); }

  absl::Status Bcast(void* buffer, size_t count, DataType dtype, int root) override {
    return BcastObject(buffer, count, dtype, root);
  }

  absl::Status Reduce(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op,
                      int root) override {
    return ReduceObject(send, recv, count, dtype, op, root);
  }

  // A reduce to rank 0, then the reduced object broadcast from there.
  absl::Status Allreduce(const void* send, void* recv, size_t count, DataType dtype,
                         ReduceOp op) override {
    RETURN_IF_ERROR(ReduceObject(send, recv, count, dtype, op, 0));
    return BcastObject(recv, count, dtype, 0);
  }

  absl::Status Gather(const void* send, void* recv, size_t count, DataType dtype,
                      int root) override {
    const Bytes mine = Serialize(send, count, dtype);
    ASSIGN_OR_RETURN(const int length, ByteCount(mine.size()));
    std::vector<int> lengths(rank_ == root ? size_ : 0);
    MPI_RETURN_IF_ERROR(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, root, comm_));
    std::vector<int> offsets;
    Bytes all;
    if (rank_ == root) {
      ASSIGN_OR_RETURN(offsets, Offsets(lengths));
      all.resize(static_cast<size_t>(offsets.back()) + lengths.back());
    }
    MPI_RETURN_IF_ERROR(MPI_Gatherv(mine.data(), length, MPI_BYTE, all.data(), lengths.data(),
                                    offsets.data(), MPI_BYTE, root, comm_));
    if (rank_ != root) return absl::OkStatus();
    return DeserializeBlocks(all, lengths, offsets, dtype, count, recv);
  }

  absl::Status Allgather(const void* send, void* recv, size_t count, DataType dtype) override {
    const Bytes mine = Serialize(send, count, dtype);
    ASSIGN_OR_RETURN(const int length, ByteCount(mine.size()));
    std::vector<int> lengths(size_);
    MPI_RETURN_IF_ERROR(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm_));
    ASSIGN_OR_RETURN(const std::vector<int> offsets, Offsets(lengths));
    Bytes all(static_cast<size_t>(offsets.back()) + lengths.back());
    MPI_RETURN_IF_ERROR(MPI_Allgatherv(mine.data(), length, MPI_BYTE, all.data(), lengths.data(),
                                       offsets.data(), MPI_BYTE, comm_));
    return DeserializeBlocks(all, lengths, offsets, dtype, count, recv);
  }

  absl::Status ReduceScatter(const void*, void*, size_t, DataType, ReduceOp) override {
    return absl::UnimplementedError(
        "mpi-object has no reduce_scatter: the object path (mpi4py's lower-case methods) has "
        "no such call");
  }

  // One object per destination, lengths exchanged first.
  absl::Status Alltoall(const void* send, void* recv, size_t count, DataType dtype) override {
    const size_t block = count * ElementSize(dtype);
    Bytes out;
    std::vector<int> send_lengths(size_);
    for (int r = 0; r < size_; ++r) {
      const Bytes one = Serialize(static_cast<const unsigned char*>(send) + r * block, count, dtype);
      ASSIGN_OR_RETURN(send_lengths[r], ByteCount(one.size()));
      out.insert(out.end(), one.begin(), one.end());
    }
    std::vector<int> recv_lengths(size_);
    MPI_RETURN_IF_ERROR(MPI_Alltoall(send_lengths.data(), 1, MPI_INT, recv_lengths.data(), 1,
                                     MPI_INT, comm_));
    ASSIGN_OR_RETURN(const std::vector<int> send_offsets, Offsets(send_lengths));
    ASSIGN_OR_RETURN(const std::vector<int> recv_offsets, Offsets(recv_lengths));
    Bytes in(static_cast<size_t>(recv_offsets.back()) + recv_lengths.back());
    MPI_RETURN_IF_ERROR(MPI_Alltoallv(out.data(), send_lengths.data(), send_offsets.data(),
                                      MPI_BYTE, in.data(), recv_lengths.data(),
                                      recv_offsets.data(), MPI_BYTE, comm_));
    return DeserializeBlocks(in, recv_lengths, recv_offsets, dtype, count, recv);
  }

  // Sends go out at once; each receive probes its message for the length,
  // as an object receive must, and deserializes it.
  absl::Status Exchange(absl::Span<const PeerTransfer> transfers, DataType dtype) override {
    std::vector<Bytes> outgoing;
    std::vector<MPI_Request> requests;
    outgoing.reserve(transfers.size());
    for (const PeerTransfer& t : transfers) {
      if (t.direction != PeerTransfer::Direction::kSend) continue;
      outgoing.push_back(Serialize(t.buffer, t.count, dtype));
      ASSIGN_OR_RETURN(const int length, ByteCount(outgoing.back().size()));
      requests.emplace_back();
      MPI_RETURN_IF_ERROR(MPI_Isend(outgoing.back().data(), length, MPI_BYTE, t.peer, kTag,
                                    comm_, &requests.back()));
    }
    for (const PeerTransfer& t : transfers) {
      if (t.direction != PeerTransfer::Direction::kRecv) continue;
      Bytes in;
      RETURN_IF_ERROR(ReceiveObject(t.peer, &in));
      RETURN_IF_ERROR(Deserialize(in.data(), in.size(), dtype, t.count, t.buffer));
    }
    MPI_RETURN_IF_ERROR(
        MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
    return absl::OkStatus();
  }

 private:
  absl::Status BcastObject(void* buffer, size_t count, DataType dtype, int root) {
    Bytes bytes;
    int length = 0;
    if (rank_ == root) {
      bytes = Serialize(buffer, count, dtype);
      ASSIGN_OR_RETURN(length, ByteCount(bytes.size()));
    }
    MPI_RETURN_IF_ERROR(MPI_Bcast(&length, 1, MPI_INT, root, comm_));
    if (rank_ != root) bytes.resize(static_cast<size_t>(length));
    MPI_RETURN_IF_ERROR(MPI_Bcast(bytes.data(), length, MPI_BYTE, root, comm_));
    if (rank_ == root) return absl::OkStatus();
    return Deserialize(bytes.data(), bytes.size(), dtype, count, buffer);
  }

  // Binomial tree on ranks relative to the root: each rank reduces what
  // its children send into its own object, then sends that to its parent.
  absl::Status ReduceObject(const void* send, void* recv, size_t count, DataType dtype,
                            ReduceOp op, int root) {
    const size_t bytes = count * ElementSize(dtype);
    std::vector<unsigned char> acc(bytes), child(bytes);
    if (bytes > 0) std::memcpy(acc.data(), send, bytes);
    const int relative = (rank_ - root + size_) % size_;
    for (int mask = 1; mask < size_; mask <<= 1) {
      if ((relative & mask) != 0) {
        const int parent = (relative - mask + root) % size_;
        const Bytes out = Serialize(acc.data(), count, dtype);
        ASSIGN_OR_RETURN(const int length, ByteCount(out.size()));
        MPI_RETURN_IF_ERROR(MPI_Send(out.data(), length, MPI_BYTE, parent, kTag, comm_));
        return absl::OkStatus();
      }
      if (relative + mask < size_) {
        Bytes in;
        RETURN_IF_ERROR(ReceiveObject((relative + mask + root) % size_, &in));
        RETURN_IF_ERROR(Deserialize(in.data(), in.size(), dtype, count, child.data()));
        RETURN_IF_ERROR(CombineInto(acc.data(), child.data(), count, dtype, op));
      }
    }
    if (bytes > 0) std::memcpy(recv, acc.data(), bytes);  // the root
    return absl::OkStatus();
  }

  absl::Status ReceiveObject(int peer, Bytes* out) {
    MPI_Message message;
    MPI_Status status;
    MPI_RETURN_IF_ERROR(MPI_Mprobe(peer, kTag, comm_, &message, &status));
    int length = 0;
    MPI_RETURN_IF_ERROR(MPI_Get_count(&status, MPI_BYTE, &length));
    out->resize(static_cast<size_t>(length));
    MPI_RETURN_IF_ERROR(MPI_Mrecv(out->data(), length, MPI_BYTE, &message, MPI_STATUS_IGNORE));
    return absl::OkStatus();
  }

  static absl::StatusOr<std::vector<int>> Offsets(const std::vector<int>& lengths) {
    std::vector<int> offsets(lengths.size());
    int64_t at = 0;
    for (size_t r = 0; r < lengths.size(); ++r) {
      offsets[r] = static_cast<int>(at);
      at += lengths[r];
      if (at > INT_MAX) return ByteCount(static_cast<size_t>(at)).status();
    }
    return offsets;
  }

  static absl::Status DeserializeBlocks(const Bytes& all, const std::vector<int>& lengths,
                                        const std::vector<int>& offsets, DataType dtype,
                                        size_t count, void* out) {
    const size_t block = count * ElementSize(dtype);
    for (size_t r = 0; r < lengths.size(); ++r) {
      RETURN_IF_ERROR(Deserialize(all.data() + offsets[r], lengths[r], dtype, count,
                                  static_cast<unsigned char*>(out) + r * block));
    }
    return absl::OkStatus();
  }

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

std::unique_ptr<Backend> NewMpiObjectBackend(MPI_Comm comm) {
  return std::make_unique<MpiObjectBackend>(comm);
}

}  // namespace collbench
