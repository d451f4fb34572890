// SPDX-License-Identifier: Apache-2.0
// The smallest honest MPI timing loop, as the OSU Micro-Benchmarks write it:
// the reference collbench-rank is compared against (bench/fidelity.py).
//
// For each size: `warmup` untimed calls, MPI_Barrier, then `iters` calls;
// the reported average is the mean over ranks of each rank's mean (OSU's
// avg, docs/design/data-plane.md#statistics-over-ranks). Buffers are float32
// with the same element counts and layout collbench-rank uses: allreduce (sum)
// from a send into a separate receive buffer; bcast from the root's send buffer
// into the others' receive buffers; gather of `count` elements from every rank
// into a count * nranks buffer on the root. Root is rank 0.
//
// How the calls are timed (--clock), the one thing the three references of
// bench/fidelity.py differ in:
//   wtime  each call between two MPI_Wtime() reads, as osu_allreduce does;
//   tsc    each call between the x86-64 time-stamp counter reads
//          collbench-rank's clock uses (lfence; rdtsc ... rdtscp), converted
//          to seconds by MPI_Wtime over the whole pass: the same loop with the
//          same clock cost per interval as collbench-rank, so any difference
//          is what collbench-rank's own code adds;
//   loop   no clock inside the loop: one MPI_Wtime() before the calls, one
//          after, as nccl-tests times. It carries no per-call clock cost,
//          so it is the undisturbed cost that every per-call clock adds to.
// For wtime and tsc the median (nearest rank) of every rank's call times is
// reported too: unlike the average it shrugs off the descheduling of a busy
// machine. For loop there are no per-call times; the median printed is 0.
//
// What separates the calls (--sync), as collbench-rank's --sync:
//   none     back to back (the default here, as nccl-tests);
//   barrier  an untimed MPI_Barrier after each timed call, as the OSU
//            benchmarks do, so each call is one isolated operation (not
//            with --clock loop, whose one interval would include them).
//
// Usage: minimal_mpi_loop [--clock wtime|tsc|loop] [--sync none|barrier]
//                         allreduce|bcast|gather ITERS WARMUP BYTES...
// Prints one line per size on rank 0: "OP BYTES COUNT ITERS AVG_S P50_S".
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace {

enum class Op { kAllreduce, kBcast, kGather };
enum class ClockKind { kWtime, kTsc, kLoop };

bool ParseClock(const char* name, ClockKind* clock) {
  if (std::strcmp(name, "wtime") == 0) *clock = ClockKind::kWtime;
  else if (std::strcmp(name, "tsc") == 0) *clock = ClockKind::kTsc;
  else if (std::strcmp(name, "loop") == 0) *clock = ClockKind::kLoop;
  else return false;
  return true;
}

#if defined(__x86_64__)
constexpr bool kHaveTsc = true;
inline uint64_t TscStart() {
  _mm_lfence();
  return __rdtsc();
}
inline uint64_t TscEnd() {
  unsigned int processor;
  return __rdtscp(&processor);
}
#else
constexpr bool kHaveTsc = false;
inline uint64_t TscStart() { return 0; }
inline uint64_t TscEnd() { return 0; }
#endif

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

Result TimeOneSize(Op op, ClockKind clock, bool barrier, int count, int iters, int warmup,
                   int rank, int nranks) {
  PageBuffer send_buffer(count, 1.0f);
  float* const send_ptr = send_buffer.data;
  const size_t recv_count =
      op == Op::kGather ? (rank == 0 ? size_t(count) * nranks : 0) : count;
  PageBuffer recv_buffer(recv_count, -1.0f);
  float* recv_ptr = recv_buffer.data;

  for (int i = 0; i < warmup; ++i) Call(op, send_ptr, recv_ptr, count, rank);
  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<double> times_s(clock == ClockKind::kLoop ? 0 : iters);
  double total_s = 0;
  if (clock == ClockKind::kWtime) {
    for (int i = 0; i < iters; ++i) {
      const double t0 = MPI_Wtime();
      Call(op, send_ptr, recv_ptr, count, rank);
      const double t1 = MPI_Wtime();
      total_s += t1 - t0;
      times_s[i] = t1 - t0;
      if (barrier) MPI_Barrier(MPI_COMM_WORLD);
    }
  } else if (clock == ClockKind::kTsc) {
    std::vector<uint64_t> ticks(iters);
    const double pass_start_s = MPI_Wtime();
    const uint64_t pass_start_ticks = TscStart();
    for (int i = 0; i < iters; ++i) {
      const uint64_t t0 = TscStart();
      Call(op, send_ptr, recv_ptr, count, rank);
      const uint64_t t1 = TscEnd();
      ticks[i] = t1 - t0;
      if (barrier) MPI_Barrier(MPI_COMM_WORLD);
    }
    const uint64_t pass_ticks = TscEnd() - pass_start_ticks;
    const double s_per_tick = (MPI_Wtime() - pass_start_s) / static_cast<double>(pass_ticks);
    for (int i = 0; i < iters; ++i) {
      times_s[i] = static_cast<double>(ticks[i]) * s_per_tick;
      total_s += times_s[i];
    }
  } else {
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) Call(op, send_ptr, recv_ptr, count, rank);
    total_s = MPI_Wtime() - t0;
  }
  const double mean_s = total_s / iters;
  double sum_of_means_s = 0;
  MPI_Reduce(&mean_s, &sum_of_means_s, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  Result result;
  if (rank == 0) result.avg_s = sum_of_means_s / nranks;
  if (clock == ClockKind::kLoop) return result;
  std::vector<double> all_s(rank == 0 ? size_t(iters) * nranks : 0);
  MPI_Gather(times_s.data(), iters, MPI_DOUBLE, all_s.data(), iters, MPI_DOUBLE, 0,
             MPI_COMM_WORLD);
  if (rank == 0) {
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

  // Optional "--clock KIND" and "--sync MODE" first, then OP ITERS WARMUP BYTES...
  ClockKind clock = ClockKind::kWtime;
  bool barrier = false;
  int first = 1;
  bool ok = true;
  while (ok && argc > first + 1 && std::strncmp(argv[first], "--", 2) == 0) {
    if (std::strcmp(argv[first], "--clock") == 0) {
      ok = ParseClock(argv[first + 1], &clock) && (clock != ClockKind::kTsc || kHaveTsc);
    } else if (std::strcmp(argv[first], "--sync") == 0) {
      barrier = std::strcmp(argv[first + 1], "barrier") == 0;
      ok = barrier || std::strcmp(argv[first + 1], "none") == 0;
    } else {
      ok = false;
    }
    first += 2;
  }
  ok = ok && !(barrier && clock == ClockKind::kLoop);
  Op op;
  const int iters = argc > first + 1 ? std::atoi(argv[first + 1]) : 0;
  const int warmup = argc > first + 2 ? std::atoi(argv[first + 2]) : -1;
  if (!ok || argc < first + 4 || !ParseOp(argv[first], &op) || iters <= 0 || warmup < 0) {
    if (rank == 0) {
      std::fprintf(stderr,
                   "usage: %s [--clock wtime|tsc|loop] [--sync none|barrier] "
                   "allreduce|bcast|gather ITERS WARMUP BYTES...\n(tsc needs x86-64; "
                   "loop cannot time barrier-separated calls)\n",
                   argv[0]);
    }
    MPI_Finalize();
    return 2;
  }
  for (int a = first + 3; a < argc; ++a) {
    const long long bytes = std::atoll(argv[a]);
    if (bytes < static_cast<long long>(sizeof(float)) || bytes % sizeof(float) != 0) {
      if (rank == 0) std::fprintf(stderr, "bad size '%s' (a multiple of 4)\n", argv[a]);
      MPI_Finalize();
      return 2;
    }
    const int count = static_cast<int>(bytes / sizeof(float));
    const Result result = TimeOneSize(op, clock, barrier, count, iters, warmup, rank, nranks);
    if (rank == 0) {
      std::printf("%s %lld %d %d %.9e %.9e\n", argv[first], bytes, count, iters,
                  result.avg_s, result.p50_s);
      std::fflush(stdout);
    }
  }
  MPI_Finalize();
  return 0;
}
