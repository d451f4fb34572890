// SPDX-License-Identifier: Apache-2.0
#include "worker/engine/mpi/mpi_communicator.h"

#include <cstring>
#include <vector>

#include "absl/strings/ascii.h"
#include "common/status_macros.h"
#include "flavors/registry.h"
#include "worker/engine/mpi/mpi_status.h"

namespace collbench {

absl::StatusOr<std::unique_ptr<MpiCommunicator>> MpiCommunicator::Create(MPI_Comm comm) {
  std::unique_ptr<MpiCommunicator> c(new MpiCommunicator(comm));
  MPI_RETURN_IF_ERROR(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  MPI_RETURN_IF_ERROR(MPI_Comm_rank(comm, &c->rank_));
  MPI_RETURN_IF_ERROR(MPI_Comm_size(comm, &c->size_));
  // Ranks on this machine, by host name. MPI_Comm_split_type(SHARED) would
  // be the usual way, but Open MPI 4.1 crashes in it when the ranks of one
  // machine come from several daemons (one per worker container).
  char name[MPI_MAX_PROCESSOR_NAME] = {0};
  int length = 0;
  MPI_RETURN_IF_ERROR(MPI_Get_processor_name(name, &length));
  std::vector<char> names(static_cast<size_t>(c->size_) * MPI_MAX_PROCESSOR_NAME);
  MPI_RETURN_IF_ERROR(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(),
                                    MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm));
  c->local_rank_ = 0;
  c->local_size_ = 0;
  for (int r = 0; r < c->size_; ++r) {
    if (std::strncmp(names.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME, name,
                     MPI_MAX_PROCESSOR_NAME) != 0) {
      continue;
    }
    if (r < c->rank_) ++c->local_rank_;
    ++c->local_size_;
  }
  return c;
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_NULL) {
    MPI_Comm_free(&comm_);
  }
}

absl::Status MpiCommunicator::Barrier() {
  MPI_RETURN_IF_ERROR(MPI_Barrier(comm_));
  return absl::OkStatus();
}

absl::Status MpiCommunicator::Allreduce(std::vector<double>* values, MPI_Op op) {
  MPI_RETURN_IF_ERROR(MPI_Allreduce(MPI_IN_PLACE, values->data(),
                                    static_cast<int>(values->size()), MPI_DOUBLE, op,
                                    comm_));
  return absl::OkStatus();
}

absl::Status MpiCommunicator::AllreduceSum(std::vector<double>* v) { return Allreduce(v, MPI_SUM); }
absl::Status MpiCommunicator::AllreduceMin(std::vector<double>* v) { return Allreduce(v, MPI_MIN); }
absl::Status MpiCommunicator::AllreduceMax(std::vector<double>* v) { return Allreduce(v, MPI_MAX); }

absl::StatusOr<bool> MpiCommunicator::AllOk(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_RETURN_IF_ERROR(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm_));
  return all == 1;
}

absl::Status MpiCommunicator::MergeHistogramsToRoot(Histogram* histogram) {
  // Bucket counts and the sum add up; min and max reduce separately.
  std::vector<uint64_t> counts(Histogram::kNumBuckets + 1);
  for (int i = 0; i < Histogram::kNumBuckets; ++i) counts[i] = histogram->bucket_count(i);
  counts[Histogram::kNumBuckets] = histogram->sum_ns();
  std::vector<uint64_t> total(counts.size());
  MPI_RETURN_IF_ERROR(MPI_Reduce(counts.data(), total.data(), static_cast<int>(counts.size()),
                                 MPI_UINT64_T, MPI_SUM, 0, comm_));
  uint64_t extremes[2] = {histogram->count() ? histogram->min_ns() : UINT64_MAX,
                          histogram->max_ns()};
  uint64_t min_ns = 0, max_ns = 0;
  MPI_RETURN_IF_ERROR(MPI_Reduce(&extremes[0], &min_ns, 1, MPI_UINT64_T, MPI_MIN, 0, comm_));
  MPI_RETURN_IF_ERROR(MPI_Reduce(&extremes[1], &max_ns, 1, MPI_UINT64_T, MPI_MAX, 0, comm_));
  if (rank_ != 0) return absl::OkStatus();
  Histogram merged;
  for (int i = 0; i < Histogram::kNumBuckets; ++i) {
    if (total[i] != 0) merged.RecordMany(Histogram::UpperBound(i), total[i]);
  }
  merged.SetExactStats(total[Histogram::kNumBuckets], min_ns, max_ns);
  *histogram = merged;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<double>> MpiCommunicator::GatherDoubles(
    const std::vector<double>& mine) {
  const int n = static_cast<int>(mine.size());
  std::vector<double> all(rank_ == 0 ? mine.size() * size_ : 0);
  MPI_RETURN_IF_ERROR(MPI_Gather(mine.data(), n, MPI_DOUBLE, all.data(), n, MPI_DOUBLE, 0, comm_));
  return all;
}

absl::StatusOr<std::vector<std::string>> MpiCommunicator::GatherStrings(
    const std::string& mine) {
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(rank_ == 0 ? size_ : 0);
  MPI_RETURN_IF_ERROR(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm_));
  std::vector<int> offsets(lengths.size());
  int total = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    offsets[i] = total;
    total += lengths[i];
  }
  std::vector<char> all(total);
  MPI_RETURN_IF_ERROR(MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(),
                                  offsets.data(), MPI_CHAR, 0, comm_));
  std::vector<std::string> out;
  for (size_t i = 0; i < lengths.size(); ++i) {
    out.emplace_back(all.data() + offsets[i], lengths[i]);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<Communicator>> MpiCommunicator::Split(int color, int key) {
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_RETURN_IF_ERROR(
      MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &sub));
  if (sub == MPI_COMM_NULL) return std::unique_ptr<Communicator>();
  ASSIGN_OR_RETURN(std::unique_ptr<MpiCommunicator> c, Create(sub));
  return std::unique_ptr<Communicator>(std::move(c));
}

std::string MpiCommunicator::library_name() const {
  const MpiFlavor* flavor = Flavors().OfVersionLine(library_version());
  return flavor == nullptr ? "MPI" : std::string(flavor->display_name());
}

std::string MpiCommunicator::library_version() const {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int length = 0;
  MPI_Get_library_version(text, &length);
  // Some libraries count the terminating NUL in `length`.
  std::string version(text, strnlen(text, static_cast<size_t>(length)));
  // Keep the first line: MPICH appends its whole configure line.
  version = version.substr(0, version.find('\n'));
  return std::string(absl::StripAsciiWhitespace(version));
}

}  // namespace collbench
