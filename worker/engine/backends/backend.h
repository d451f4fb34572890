// SPDX-License-Identifier: Apache-2.0
// A Backend is the library that moves the bytes being measured
// (docs/design/data-plane.md#backends): mpi, mpi-staged, mpi-cuda or nccl.
// Operations call exactly one Backend method per iteration; the sweep driver
// owns timing.
//
// Buffers passed in live in buffer_space(). Counts are elements of `dtype`.
// Calls may complete asynchronously on device backends; Synchronize() waits
// for everything issued so far and is called by the driver inside the timed
// region when the backend completes_asynchronously(). Every call returns a Status naming the failing library call, the
// library's error text and file:line.
//
// Thread safety: one thread per backend. Backends are created by a
// BackendRegistry (backends/registry.h) and borrow the communicator and
// device runtime they were created with.
#ifndef COLLBENCH_WORKER_ENGINE_BACKENDS_BACKEND_H_
#define COLLBENCH_WORKER_ENGINE_BACKENDS_BACKEND_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "engine_spec/types.h"

namespace collbench {

// One half of a point-to-point transfer, for Backend::Exchange.
struct PeerTransfer {
  enum class Direction { kSend, kRecv };
  Direction direction;
  void* buffer;
  size_t count;
  int peer;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  virtual MemorySpace buffer_space() const = 0;
  // Whether `dtype` and `op` can be used with this backend (MPI has no
  // 16-bit float types). Unsupported is InvalidArgument naming both.
  virtual absl::Status Supports(DataType dtype) const = 0;

  virtual absl::Status Bcast(void* buffer, size_t count, DataType dtype, int root) = 0;
  virtual absl::Status Reduce(const void* send, void* recv, size_t count,
                              DataType dtype, ReduceOp op, int root) = 0;
  virtual absl::Status Allreduce(const void* send, void* recv, size_t count,
                                 DataType dtype, ReduceOp op) = 0;
  // `recv` (significant at root only) holds size()*count elements.
  virtual absl::Status Gather(const void* send, void* recv, size_t count,
                              DataType dtype, int root) = 0;
  virtual absl::Status Allgather(const void* send, void* recv, size_t count,
                                 DataType dtype) = 0;
  // `send` holds size()*recv_count elements; block r goes to rank r.
  virtual absl::Status ReduceScatter(const void* send, void* recv, size_t recv_count,
                                     DataType dtype, ReduceOp op) = 0;
  // `count` elements to and from each rank.
  virtual absl::Status Alltoall(const void* send, void* recv, size_t count,
                                DataType dtype) = 0;

  // Posts every transfer at once and returns when all have completed
  // (MPI Isend/Irecv + Waitall; an NCCL group). Tag/ordering: transfers
  // between the same pair complete in posting order.
  virtual absl::Status Exchange(absl::Span<const PeerTransfer> transfers,
                                DataType dtype) = 0;

  // Waits for issued work to finish (stream synchronize on device backends).
  virtual absl::Status Synchronize() = 0;
  // Whether calls may return before their work is done; the driver calls
  // Synchronize() after each timed call only then.
  virtual bool completes_asynchronously() const { return true; }

  // Library version for the "start" record, e.g. "NCCL 2.28.9"; empty if the
  // backend adds nothing beyond the MPI library.
  virtual std::string library_version() const { return ""; }
};

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_BACKENDS_BACKEND_H_
