// SPDX-License-Identifier: Apache-2.0
// Communicator over an MPI communicator. The communicator is set to return
// errors (MPI_ERRORS_RETURN) so failures become Status values.
#ifndef COLLBENCH_WORKER_ENGINE_MPI_MPI_COMMUNICATOR_H_
#define COLLBENCH_WORKER_ENGINE_MPI_MPI_COMMUNICATOR_H_

#include <mpi.h>

#include <memory>

#include "absl/status/statusor.h"
#include "worker/engine/communicator.h"

namespace collbench {

class MpiCommunicator final : public Communicator {
 public:
  // Takes ownership of `comm` (freed on destruction unless MPI_COMM_WORLD).
  static absl::StatusOr<std::unique_ptr<MpiCommunicator>> Create(MPI_Comm comm);
  ~MpiCommunicator() override;

  MPI_Comm handle() const { return comm_; }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  absl::Status Barrier() override;
  absl::Status AllreduceSum(std::vector<double>* values) override;
  absl::Status AllreduceMin(std::vector<double>* values) override;
  absl::Status AllreduceMax(std::vector<double>* values) override;
  absl::StatusOr<bool> AllOk(bool ok) override;
  absl::Status MergeHistogramsToRoot(Histogram* histogram) override;
  absl::StatusOr<std::vector<std::string>> GatherStrings(const std::string& mine) override;
  absl::StatusOr<std::vector<double>> GatherDoubles(const std::vector<double>& mine) override;
  absl::StatusOr<std::unique_ptr<Communicator>> Split(int color, int key) override;
  std::string library_name() const override;
  std::string library_version() const override;

 private:
  explicit MpiCommunicator(MPI_Comm comm) : comm_(comm) {}
  absl::Status Allreduce(std::vector<double>* values, MPI_Op op);

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
};

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_MPI_MPI_COMMUNICATOR_H_
