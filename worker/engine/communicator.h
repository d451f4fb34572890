// SPDX-License-Identifier: Apache-2.0
// The control traffic the sweep driver needs between ranks: barriers,
// agreement on errors and stopping, and gathering statistics and histograms
// to rank 0. It is not the data path being measured; backends own that.
//
// Implementations: MpiCommunicator (mpi_communicator.h, one per MPI build)
// and, in tests, a single-rank fake. Collective calls must be made by every
// rank of the communicator in the same order.
#ifndef COLLBENCH_WORKER_ENGINE_COMMUNICATOR_H_
#define COLLBENCH_WORKER_ENGINE_COMMUNICATOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/histogram.h"

namespace collbench {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Rank and count among the ranks on this host (shared memory domain).
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;

  virtual absl::Status Barrier() = 0;

  // Element-wise reductions over every rank; every rank gets the result.
  virtual absl::Status AllreduceSum(std::vector<double>* values) = 0;
  virtual absl::Status AllreduceMin(std::vector<double>* values) = 0;
  virtual absl::Status AllreduceMax(std::vector<double>* values) = 0;

  // True on every rank iff `ok` is true on every rank. The driver calls this
  // after each step that can fail locally (allocation, fill) so that one
  // rank's failure stops all of them instead of leaving peers in a
  // collective.
  virtual absl::StatusOr<bool> AllOk(bool ok) = 0;

  // Merges every rank's histogram into rank 0's `*histogram` (exact
  // counts, sum, min and max). Other ranks' histograms are left unchanged.
  virtual absl::Status MergeHistogramsToRoot(Histogram* histogram) = 0;

  // Every rank's string, by rank, on rank 0 (empty vector elsewhere).
  virtual absl::StatusOr<std::vector<std::string>> GatherStrings(
      const std::string& mine) = 0;

  // Every rank's `mine` (the same length on every rank), concatenated by
  // rank, on rank 0 (empty vector elsewhere).
  virtual absl::StatusOr<std::vector<double>> GatherDoubles(
      const std::vector<double>& mine) = 0;

  // A communicator of the ranks that pass the same `color` (>= 0), ordered
  // by `key`; ranks passing a negative color get nullptr.
  virtual absl::StatusOr<std::unique_ptr<Communicator>> Split(int color,
                                                              int key) = 0;

  // "Open MPI" / "MPICH" and the library's version line.
  virtual std::string library_name() const = 0;
  virtual std::string library_version() const = 0;
};

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_COMMUNICATOR_H_
