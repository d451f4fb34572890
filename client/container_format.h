// SPDX-License-Identifier: Apache-2.0
// How the CLI shows container facts
// (docs/design/deployment.md#container-awareness): a worker's runtime,
// namespaces and limits, and a run's placement in one line, so every result
// says how its ranks were spread over containers and what they shared. Pure
// functions over the API messages.
#ifndef COLLBENCH_CLIENT_CONTAINER_FORMAT_H_
#define COLLBENCH_CLIENT_CONTAINER_FORMAT_H_

#include <string>

#include "collbench/v1/run.pb.h"
#include "collbench/v1/worker.pb.h"

namespace collbench {

// "podman", "host" (no container), "host?" (hints only, e.g. a VM's
// /.dockerenv), or "-" for a worker that reported no facts.
std::string ContainerLabel(const v1::ContainerFacts& facts);

// "1.5" CPUs or "-" (no limit).
std::string CpuLimitText(const v1::CgroupLimits& limits);

// The indented lines of `collbench workers --long` for one worker: its
// signals, namespaces, /dev/shm and cgroup limits beside the host figures.
std::string FormatWorkerDetail(const v1::Worker& worker);

// One line for a run's placement, e.g.
//   "2 workers on 1 host, 1 rank each; containers: podman x2, private IPC,
//    private net", with "; shm across workers, single-copy cma" for an SHM
//   run between workers that share IPC
// or "1 worker on 1 host, 4 ranks; host x1"; "" before the run is placed.
// Runs stored before workers reported facts say "container facts not
// recorded".
std::string DescribePlacement(const v1::Run& run);

// One line per worker of the run: host, runtime, ranks, namespace ids,
// cgroup limits and /dev/shm.
std::string FormatRankHosts(const v1::Run& run);

}  // namespace collbench

#endif  // COLLBENCH_CLIENT_CONTAINER_FORMAT_H_
