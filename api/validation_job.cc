// SPDX-License-Identifier: Apache-2.0
// The checks of ValidateRunSpec that concern where the run goes and what
// surrounds it: ranks, placement, transport, env, timeout, labels, and the
// buffers of the largest size against the workers' memory.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/strings/string_view.h"
#include "api/ipc_sharing.h"
#include "api/tuning_env.h"
#include "api/validation_checks.h"
#include "common/units.h"
#include "engine_spec/job_checks.h"
#include "engine_spec/options.h"
#include "flavors/registry.h"

namespace collbench::validation_internal {
namespace {

constexpr int kMaxLabels = 64;
constexpr size_t kMaxLabelKeyChars = 63;
constexpr size_t kMaxLabelValueChars = 256;

// A POSIX variable name: [A-Za-z_][A-Za-z0-9_]* (and so one segment of a
// field path, spec.env.KEY).
bool IsEnvName(absl::string_view key) {
  return !key.empty() && !absl::ascii_isdigit(key[0]) &&
         std::all_of(key.begin(), key.end(),
                     [](char ch) { return absl::ascii_isalnum(ch) || ch == '_'; });
}

bool IsLabelKey(absl::string_view key) {
  return !key.empty() && key.size() <= kMaxLabelKeyChars &&
         std::all_of(key.begin(), key.end(), [](char ch) {
           return absl::ascii_islower(ch) || absl::ascii_isdigit(ch) || ch == '_' || ch == '-';
         });
}

// ---------------------------------------------------------------------------
// Buffer memory of the largest size against the workers' memory.

uint64_t LargestSize(const Context& c) {
  if (c.explicit_sizes()) {
    return *std::max_element(c.spec.sizes_bytes().begin(), c.spec.sizes_bytes().end());
  }
  const std::vector<uint64_t> sweep =
      GeometricSweep(c.min_bytes, c.max_bytes, c.factor, static_cast<size_t>(c.limits.max_sizes));
  return sweep.empty() ? 0 : sweep.back();
}

// Send + receive bytes on the rank that needs most (the root, for gather),
// as the engine computes them (PeakBufferBytes) for the largest size.
// Buffers hold whole elements, so the narrowest dtype run needs most.
uint64_t BufferBytesPerRank(const Context& c, uint64_t size_bytes) {
  EngineOptions options;
  options.sizes_bytes = {size_bytes};
  options.root = c.spec.root();
  for (DataType t : c.dtypes) {
    if (ElementSize(t) == c.narrowest_element()) options.dtype = t;
  }
  uint64_t most = 0;
  for (int rank : {c.spec.root(), c.spec.root() == 0 ? 1 : 0}) {
    if (rank >= c.spec.ranks()) continue;
    most = std::max(most, PeakBufferBytes(options, *c.op, rank, c.spec.ranks()));
  }
  return most;
}

int RanksOnOneWorker(const Context& c) {
  switch (c.spec.placement().policy()) {
    case v1::EXPLICIT:
      return c.spec.placement().ranks_per_worker();
    case v1::SPREAD:
      return 1;
    default:
      return std::min(c.spec.ranks(), c.limits.max_worker_slots.value_or(c.spec.ranks()));
  }
}

// Whether the placement may put ranks on more than one worker.
bool AcrossWorkers(const Context& c) {
  const v1::Placement& p = c.spec.placement();
  switch (p.policy()) {
    case v1::SPREAD:
      return c.spec.ranks() > 1;
    case v1::EXPLICIT:
      return p.workers_size() > 1;
    default:
      return c.limits.max_worker_slots.has_value() && c.spec.ranks() > *c.limits.max_worker_slots;
  }
}

// Open MPI joins ranks of different workers over the network only: mpirun
// makes each worker a node, vader connects the ranks of one node, and the
// UCX pml gives ranks on other nodes network-only addresses (UCX's shared
// memory unreachable, "Destination is unreachable" in MPI_Init).
absl::Status OpenMpiShmAcrossWorkers(const Context& c) {
  if (FlavorFor(c.spec.mpi()).ShmAcrossWorkers()) return absl::OkStatus();
  return FieldError("spec.transport",
                    "Open MPI cannot use SHM between ranks of different workers (each worker "
                    "is a node to mpirun; vader connects the ranks of one node, and its UCX pml "
                    "gives other nodes network addresses only); use MPICH (--mpi mpich), whose "
                    "UCX reaches workers that share IPC over shared memory, or TCP, or PACK");
}

// Whether EXPLICIT placement lists `worker` ("workers/{id}"), by full name
// or bare id.
bool Listed(const v1::Placement& p, const std::string& worker) {
  return std::any_of(p.workers().begin(), p.workers().end(), [&](const std::string& name) {
    return name == worker || absl::StrCat("workers/", name) == worker;
  });
}

}  // namespace

absl::Status CheckRanks(const Context& c) {
  const int ranks = c.spec.ranks();
  if (ranks < 1) return FieldError("spec.ranks", "must be at least 1");
  if (c.limits.max_total_slots.has_value() && ranks > *c.limits.max_total_slots) {
    return FieldError("spec.ranks", ranks, " ranks but the registered workers have ",
                      *c.limits.max_total_slots, " slots");
  }
  return absl::OkStatus();
}

absl::Status CheckPlacement(const Context& c) {
  const v1::Placement& p = c.spec.placement();
  if (!v1::PlacementPolicy_IsValid(p.policy())) {
    return FieldError("spec.placement.policy", "unknown PlacementPolicy value ", p.policy());
  }
  if (p.policy() != v1::EXPLICIT) {
    if (p.workers_size() > 0) {
      return FieldError("spec.placement.workers", "only for EXPLICIT placement");
    }
    if (p.ranks_per_worker() != 0) {
      return FieldError("spec.placement.ranks_per_worker", "only for EXPLICIT placement");
    }
    if (p.policy() == v1::SPREAD && c.limits.worker_count.has_value() &&
        c.spec.ranks() > *c.limits.worker_count) {
      return FieldError("spec.ranks", "SPREAD puts one rank on each worker: ", c.spec.ranks(),
                        " ranks but ", *c.limits.worker_count, " workers are registered");
    }
    return absl::OkStatus();
  }
  if (p.workers_size() == 0) {
    return FieldError("spec.placement.workers", "EXPLICIT placement needs at least one worker");
  }
  std::set<std::string> seen;
  for (int i = 0; i < p.workers_size(); ++i) {
    const std::string path = absl::StrCat("spec.placement.workers[", i, "]");
    if (p.workers(i).empty()) return FieldError(path, "empty worker name");
    if (!seen.insert(p.workers(i)).second) {
      return FieldError(path, "'", p.workers(i), "' is listed twice");
    }
  }
  if (p.ranks_per_worker() < 1) {
    return FieldError("spec.placement.ranks_per_worker", "must be at least 1 for EXPLICIT");
  }
  if (int64_t{p.workers_size()} * p.ranks_per_worker() != c.spec.ranks()) {
    return FieldError("spec.placement.ranks_per_worker", p.workers_size(), " workers x ",
                      p.ranks_per_worker(), " ranks is not spec.ranks (", c.spec.ranks(), ")");
  }
  return absl::OkStatus();
}

absl::Status CheckTransport(const Context& c) {
  if (!v1::Transport_IsValid(c.spec.transport())) {
    return FieldError("spec.transport", "unknown Transport value ", c.spec.transport());
  }
  if (c.spec.transport() != v1::SHM || !AcrossWorkers(c)) return absl::OkStatus();
  if (!c.limits.worker_ipc.has_value()) return OpenMpiShmAcrossWorkers(c);
  // Ranks on different workers share memory only when every worker the
  // placement may use sees one IPC namespace (and /dev/shm) on one host.
  std::vector<WorkerIpc> candidates;
  for (const WorkerIpc& w : *c.limits.worker_ipc) {
    if (c.spec.placement().policy() != v1::EXPLICIT || Listed(c.spec.placement(), w.name)) {
      candidates.push_back(w);
    }
  }
  if (candidates.size() < 2) {  // unknown names fail at scheduling
    return OpenMpiShmAcrossWorkers(c);
  }
  const IpcSharing sharing = DecideIpcSharing(candidates);
  if (sharing.shared && sharing.pid_reason.empty()) return OpenMpiShmAcrossWorkers(c);
  if (sharing.shared) return FieldError("spec.transport", ShmNeedsOnePidNamespace(sharing));
  return FieldError("spec.transport",
                    "SHM connects ranks on different workers only when they share one IPC "
                    "namespace on one host: ",
                    sharing.reason,
                    "; use TCP or UCX, PACK placement, or EXPLICIT workers that share IPC");
}

absl::Status CheckEnv(const Context& c) {
  // Sorted, so the first bad key reported does not depend on map order.
  const std::map<std::string, std::string> env(c.spec.env().begin(), c.spec.env().end());
  for (const auto& [key, value] : env) {
    // Only a variable name may become part of a field path ("spec.env.KEY");
    // anything else (':' or '.' would break the path) is quoted in the message.
    if (!IsEnvName(key)) {
      return FieldError("spec.env", "key '", absl::CHexEscape(key),
                        "' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)");
    }
    const std::string path = absl::StrCat("spec.env.", key);
    if (absl::Status s = CheckTuningParam(key, value); !s.ok()) {
      // The tuning table's message starts with the key; the path names it.
      absl::string_view message = s.message();
      absl::ConsumePrefix(&message, absl::StrCat(key, ": "));
      return FieldError(path, message);
    }
  }
  return absl::OkStatus();
}

// The shortest spec.hang_timeout: ranks report their progress once a
// second, through their worker.
constexpr double kMinHangTimeoutS = 5;

absl::Status CheckTimeout(const Context& c) {
  if (!c.spec.has_timeout()) return absl::OkStatus();
  absl::StatusOr<double> timeout_s = DurationSeconds("spec.timeout", c.spec.timeout());
  if (!timeout_s.ok()) return timeout_s.status();
  if (*timeout_s < 0) return FieldError("spec.timeout", "must not be negative");
  if (*timeout_s > c.limits.max_timeout_s) {
    return FieldError("spec.timeout", FormatDuration(*timeout_s), " exceeds the limit of ",
                      FormatDuration(c.limits.max_timeout_s));
  }
  if (!c.spec.has_hang_timeout()) return absl::OkStatus();
  // The hang timeout (docs/design/run-lifecycle.md#hang-attribution): 0 picks
  // the default; a shorter one than a few seconds would end runs whose ranks
  // only report once a second.
  absl::StatusOr<double> hang_s = DurationSeconds("spec.hang_timeout", c.spec.hang_timeout());
  if (!hang_s.ok()) return hang_s.status();
  if (*hang_s != 0 && (*hang_s < kMinHangTimeoutS || *hang_s > c.limits.max_timeout_s)) {
    return FieldError("spec.hang_timeout", FormatDuration(*hang_s), " is outside ",
                      FormatDuration(kMinHangTimeoutS), "..",
                      FormatDuration(c.limits.max_timeout_s), " (0: the default)");
  }
  return absl::OkStatus();
}

absl::Status CheckLabels(const Context& c) {
  if (c.spec.labels_size() > kMaxLabels) {
    return FieldError("spec.labels", c.spec.labels_size(), " labels, at most ", kMaxLabels);
  }
  const std::map<std::string, std::string> labels(c.spec.labels().begin(), c.spec.labels().end());
  for (const auto& [key, value] : labels) {
    if (!IsLabelKey(key)) {
      return FieldError("spec.labels", "key '", absl::CHexEscape(key), "' must be 1-",
                        kMaxLabelKeyChars, " characters of [a-z0-9_-]");
    }
    if (value.size() > kMaxLabelValueChars) {
      return FieldError("spec.labels", "value of ", key, " is longer than ", kMaxLabelValueChars,
                        " characters");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckBufferMemory(const Context& c) {
  if (c.op == nullptr) return absl::OkStatus();
  const uint64_t largest = LargestSize(c);
  const uint64_t per_rank = BufferBytesPerRank(c, largest);
  const char* path = c.explicit_sizes() ? "spec.sizes_bytes" : "spec.max_bytes";
  const int ranks_here = std::max(1, RanksOnOneWorker(c));
  const std::optional<uint64_t>& host = c.limits.min_worker_memory_bytes;
  if (host.has_value() && per_rank > *host / static_cast<uint64_t>(ranks_here)) {
    return FieldError(path, "the largest size (", FormatBytes(largest), ") needs ",
                      FormatBytesHuman(per_rank), " per rank x ", ranks_here,
                      " ranks on one worker, workers have ", FormatBytesHuman(*host));
  }
  const bool on_device =
      c.backend->space == MemorySpace::kDevice || c.op->traits.needs_device;
  const std::optional<uint64_t>& gpu = c.limits.min_gpu_memory_bytes;
  if (on_device && gpu.has_value() && per_rank > *gpu) {
    return FieldError(path, "the largest size (", FormatBytes(largest), ") needs ",
                      FormatBytesHuman(per_rank), " of GPU memory per rank, GPUs have ",
                      FormatBytesHuman(*gpu));
  }
  return absl::OkStatus();
}

}  // namespace collbench::validation_internal
