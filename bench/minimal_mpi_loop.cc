// The smallest honest MPI timing loop, as the OSU Micro-Benchmarks write it:
// the reference collbench-rank is compared against (bench/fidelity.py).
//
// For each size: `warmup` untimed calls, MPI_Barrier, then `iters` calls each
// timed with MPI_Wtime on every rank; the reported average is the mean over
// ranks of each rank's mean (OSU's avg, DESIGN §2). Buffers are float32 with
// the same element counts and layout collbench-rank uses: allreduce (sum)
// from a send into a separate receive buffer; bcast from the root's send
// buffer into the others' receive buffers; gather of `count` elements from
// every rank into a count * nranks buffer on the root. Root is rank 0.
// The median (nearest rank) of every rank's iteration times is reported too:
// unlike the average it shrugs off the descheduling of a busy machine.
//
// Usage: minimal_mpi_loop allreduce|bcast|gather ITERS WARMUP BYTES...
// Prints one line per size on rank 0: "OP BYTES COUNT ITERS AVG_S P50_S".
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

enum class Op { kAllreduce, kBcast, kGather };

bool ParseOp(const char* name, Op* op) {
  if (std::strcmp(name, "allreduce") == 0) *op = Op::kAllreduce;
  else if (std::strcmp(name, "bcast") == 0) *op = Op::kBcast;
  else if (std::strcmp(name, "gather") == 0) *op = Op::kGather;
  else return false;
  return true;
}

void Call(Op op, float* send, float* recv, int count, int rank) {
  switch (op) {
    case Op::kAllreduce:
      MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case Op::kBcast:
      MPI_Bcast(rank == 0 ? send : recv, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
      break;
    case Op::kGather:
      MPI_Gather(send, count, MPI_FLOAT, recv, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
      break;
  }
}

struct Result {
  double avg_s = 0;  // mean over ranks of each rank's mean
  double p50_s = 0;  // median of all ranks' iterations
};

// Valid on rank 0 only.
// Page-aligned like collbench-rank's `default` memory kind: the alignment
// changes how fast MPI copies, so both programs must use the same.
struct PageBuffer {
  explicit PageBuffer(size_t count, float value) {
    if (count == 0) return;
    void* p = nullptr;
    if (posix_memalign(&p, 4096, count * sizeof(float)) != 0) std::abort();
    data = static_cast<float*>(p);
    std::fill(data, data + count, value);
  }
  ~PageBuffer() { std::free(data); }
  float* data = nullptr;
};

Result TimeOneSize(Op op, int count, int iters, int warmup, int rank, int nranks) {
  PageBuffer send_buffer(count, 1.0f);
  float* const send_ptr = send_buffer.data;
  const size_t recv_count =
      op == Op::kGather ? (rank == 0 ? size_t(count) * nranks : 0) : count;
  PageBuffer recv_buffer(recv_count, -1.0f);
  float* recv_ptr = recv_buffer.data;

  for (int i = 0; i < warmup; ++i) Call(op, send_ptr, recv_ptr, count, rank);
  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<double> times_s(iters);
  double total_s = 0;
  for (int i = 0; i < iters; ++i) {
    const double t0 = MPI_Wtime();
    Call(op, send_ptr, recv_ptr, count, rank);
    const double t1 = MPI_Wtime();
    total_s += t1 - t0;
    times_s[i] = t1 - t0;
  }
  const double mean_s = total_s / iters;
  double sum_of_means_s = 0;
  MPI_Reduce(&mean_s, &sum_of_means_s, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  std::vector<double> all_s(rank == 0 ? size_t(iters) * nranks : 0);
  MPI_Gather(times_s.data(), iters, MPI_DOUBLE, all_s.data(), iters, MPI_DOUBLE, 0,
             MPI_COMM_WORLD);
  Result result;
  if (rank == 0) {
    result.avg_s = sum_of_means_s / nranks;
    const size_t median_rank = (all_s.size() + 1) / 2;  // nearest rank, 1-based
    std::nth_element(all_s.begin(), all_s.begin() + (median_rank - 1), all_s.end());
    result.p50_s = all_s[median_rank - 1];
  }
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  Op op;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 0;
  const int warmup = argc > 3 ? std::atoi(argv[3]) : -1;
  if (argc < 5 || !ParseOp(argv[1], &op) || iters <= 0 || warmup < 0) {
    if (rank == 0) {
      std::fprintf(stderr,
                   "usage: %s allreduce|bcast|gather ITERS WARMUP BYTES...\n",
                   argv[0]);
    }
    MPI_Finalize();
    return 2;
  }
  for (int a = 4; a < argc; ++a) {
    const long long bytes = std::atoll(argv[a]);
    if (bytes < static_cast<long long>(sizeof(float)) || bytes % sizeof(float) != 0) {
      if (rank == 0) std::fprintf(stderr, "bad size '%s' (a multiple of 4)\n", argv[a]);
      MPI_Finalize();
      return 2;
    }
    const int count = static_cast<int>(bytes / sizeof(float));
    const Result result = TimeOneSize(op, count, iters, warmup, rank, nranks);
    if (rank == 0) {
      std::printf("%s %lld %d %d %.9e %.9e\n", argv[1], bytes, count, iters,
                  result.avg_s, result.p50_s);
      std::fflush(stdout);
    }
  }
  MPI_Finalize();
  return 0;
}
