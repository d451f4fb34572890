// SPDX-License-Identifier: Apache-2.0
// The physical limit of the path a result used
// (docs/design/workflows.md#verdicts): the best bus bandwidth the run's memory
// and links allow, from what its workers measured (the copy probe) and can read
// (link rates), so a result can say "62% of limit".
//
// The model, per rank, in nccl-tests' bus-bandwidth terms (a ring moves
// busbw bytes per second into and out of every rank):
//   memory    each byte a rank receives costs copies in host memory: one
//             with a single-copy mechanism (CMA) on shared memory, two
//             otherwise (copy into and out of a shared segment; for TCP,
//             the kernel's copy on send and on receive). A rank copies at
//             most min(one thread's copy rate, the host's all-thread rate
//             shared by the host's ranks).
//   link      ranks spanning hosts send every bus byte over the host's
//             link at most once per direction (a ring enters and leaves a
//             host once), so busbw is at most the slowest host's link
//             rate (the declared link-rate label, else the fastest link
//             sysfs reports).
//   point to point   latency and bw copy once per byte (the receiver);
//             bibw moves both directions at once: twice the one-way limit
//             on links, and on shared memory with CMA.
// The limit is the minimum of the memory and link bounds. It is unknown
// (none) for GPU memory and GPU backends, for memory kinds the probe did
// not measure (hbw, dax_kmem), for transports whose mechanism cannot be
// known here (auto left to the library, ucx), for gemm, and when a host
// has no probe figure.
#ifndef COLLBENCH_ANALYSIS_ROOFLINE_H_
#define COLLBENCH_ANALYSIS_ROOFLINE_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "collbench/v1/run.pb.h"
#include "collbench/v1/worker.pb.h"

namespace collbench {

// What the limit is computed from, for one host of a run.
struct HostPath {
  std::string host;  // host_id
  int ranks = 0;
  double copy_bytes_per_s = 0;      // one thread (0: not measured)
  double copy_all_bytes_per_s = 0;  // every thread at once
  double link_bits_per_s = 0;       // 0: unknown
  std::string link;                 // where the rate came from: "eth0 (sysfs)", "label"
};

struct PathFacts {
  std::string backend;    // mpi, mpi-staged, mpi-cuda, nccl
  std::string transport;  // the effective transport: shm, tcp, auto, ucx
  std::string memory;     // the memory kind ("" is the backend's natural one)
  bool single_copy = false;  // CMA available between the ranks
  std::vector<HostPath> hosts;
};

struct Limit {
  double busbw_bytes_per_s = 0;
  std::string derivation;  // "shm, 2 ranks on 1 host: min(copy 9.8 GB/s, 14.1 GB/s / 2) / 1 copy"
};

// The facts of a scheduled run: its hosts (Run.hosts grouped by host_id),
// each with its workers' smallest measured bandwidths and link rates
// (`inventory` returns a worker's inventory, nullptr when unknown).
PathFacts PathFactsOf(const v1::Run& run,
                      const std::function<const v1::Inventory*(const std::string& worker)>& inventory);

// The limit of `operation` on that path; nullopt where it cannot be known
// (above).
std::optional<Limit> PathLimit(const PathFacts& path, absl::string_view operation);

}  // namespace collbench

#endif  // COLLBENCH_ANALYSIS_ROOFLINE_H_
