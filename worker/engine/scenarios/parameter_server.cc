// SPDX-License-Identifier: Apache-2.0
// parameter-server (docs/design/data-plane.md#scenarios): world rank 0 is a CPU parameter
// server (PS), ranks 1..n-1 are workers. Each iteration the PS sends the
// parameters (one sweep size, in bytes) to every worker and gathers every
// worker's gradients of the same size. Strategies:
//   host        plain MPI bcast + gather on host memory everywhere;
//   mpi-staged  workers' buffers on the device, the mpi-staged backend
//               copying around host MPI; the PS uses plain MPI on host
//               memory in the same collectives (it needs no GPU);
//   mpi-cuda    as mpi-staged but MPI on the device pointers (CUDA-aware
//               MPI; the backend refuses cleanly otherwise);
//   nccl-chief  PS <-> chief (rank 1) over MPI point-to-point; chief ->
//               workers with an NCCL broadcast, and an NCCL gather back to
//               the chief, on a workers-only communicator.
// The default strategy follows --backend: mpi -> host, mpi-staged,
// mpi-cuda, nccl -> nccl-chief.
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "common/records.h"
#include "common/status_macros.h"
#include "worker/engine/agreement.h"
#include "worker/engine/backends/backend.h"
#include "worker/engine/backends/registry.h"
#include "worker/engine/communicator.h"
#include "worker/engine/cuda/device_runtime.h"
#include "worker/engine/memory/memory_kind.h"
#include "engine_spec/backends.h"
#include "engine_spec/pattern.h"
#include "engine_spec/scenarios.h"
#include "worker/engine/report/reporter.h"
#include "worker/engine/scenarios/scenario.h"
#include "worker/engine/sweep.h"
#include "worker/engine/timing.h"

namespace collbench {
namespace {

constexpr int kPs = 0;
constexpr int kChief = 1;

// Everything one rank holds for the run. Declaration order is destruction
// order reversed: buffers go before their kinds, backends before the
// communicators they borrow.
struct PsRun {
  const StrategySpec* strategy = nullptr;
  int rank = 0;
  int nranks = 0;
  DataType dtype = DataType::kFloat32;
  std::unique_ptr<Communicator> workers_comm;  // nccl-chief: ranks 1..n-1
  std::unique_ptr<Communicator> link_comm;     // nccl-chief: PS and chief
  std::unique_ptr<Backend> data;  // world; nccl-chief: NCCL on workers_comm
  std::unique_ptr<Backend> link;  // nccl-chief: mpi on link_comm
  std::unique_ptr<MemoryKind> kind;
  std::unique_ptr<MemoryKind> stage_kind;  // chief's pinned staging
  Buffer params;        // PS: parameters to send; workers: received copy
  Buffer grads;         // workers: gradients to send
  Buffer gathered;      // PS (and nccl-chief chief): every worker's gradients
  Buffer stage_params;  // nccl-chief chief: host side of the MPI link
  Buffer stage_gathered;

  bool chief_mode() const { return strategy->strategy == Strategy::kNcclChief; }
  bool ps() const { return rank == kPs; }
  bool chief() const { return chief_mode() && rank == kChief; }
  // Gathered block of world rank r starts at block r - first_block().
  int first_block() const { return chief_mode() ? 1 : 0; }
  int gathered_blocks() const { return nranks - first_block(); }
};

// Copies between host memory and a buffer wherever it lives.
absl::Status Upload(DeviceRuntime& device, const Buffer& dst, const void* host,
                    size_t bytes) {
  if (dst.space() == MemorySpace::kHost) {
    std::memcpy(dst.data(), host, bytes);
    return absl::OkStatus();
  }
  return device.Copy(dst.data(), host, bytes);
}
absl::Status Download(DeviceRuntime& device, void* host, const Buffer& src,
                      size_t bytes) {
  if (src.space() == MemorySpace::kHost) {
    std::memcpy(host, src.data(), bytes);
    return absl::OkStatus();
  }
  return device.Copy(host, src.data(), bytes);
}

// Device init (workers of device strategies), memory kinds and buffers
// for the largest size. Local to this rank.
absl::Status AllocateBuffers(const ScenarioEnv& env, size_t max_count, PsRun* run) {
  const EngineOptions& options = *env.options;
  const bool host = run->strategy->strategy == Strategy::kHost;
  std::string kind_name = options.memory;
  if (run->ps() && !(host && !kind_name.empty())) kind_name = "default";
  if (kind_name.empty()) kind_name = host ? "default" : "device";
  const MemorySpace space =
      host || run->ps() ? MemorySpace::kHost : MemorySpace::kDevice;
  // Pinned host memory comes from the CUDA runtime too.
  if (space == MemorySpace::kDevice || kind_name == "pinned") {
    RETURN_IF_ERROR(env.device->Init(env.comm->local_rank()));
  }
  ASSIGN_OR_RETURN(run->kind, env.memory->Create(kind_name, env.device));
  if (run->kind->space() != space) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--memory ", kind_name, " is not ", std::string(MemorySpaceName(space)),
        " memory, which --strategy ", run->strategy->name, " needs for workers"));
  }
  RETURN_IF_ERROR(run->kind->CheckAvailable());
  const size_t bytes = max_count * ElementSize(run->dtype);
  const size_t all_bytes = bytes * run->gathered_blocks();
  ASSIGN_OR_RETURN(run->params, Buffer::Allocate(run->kind.get(), bytes));
  if (run->ps() || run->chief()) {
    ASSIGN_OR_RETURN(run->gathered, Buffer::Allocate(run->kind.get(), all_bytes));
  }
  if (run->ps()) return absl::OkStatus();
  ASSIGN_OR_RETURN(run->grads, Buffer::Allocate(run->kind.get(), bytes));
  if (!run->chief()) return absl::OkStatus();
  ASSIGN_OR_RETURN(run->stage_kind, env.memory->Create("pinned", env.device));
  ASSIGN_OR_RETURN(run->stage_params, Buffer::Allocate(run->stage_kind.get(), bytes));
  ASSIGN_OR_RETURN(run->stage_gathered,
                   Buffer::Allocate(run->stage_kind.get(), all_bytes));
  return absl::OkStatus();
}

// Sub-communicators and backends; collective over the world.
absl::Status ConnectBackends(const ScenarioEnv& env, PsRun* run) {
  Communicator& world = *env.comm;
  const char* worker_backend = run->strategy->worker_backend;
  if (!run->chief_mode()) {
    absl::StatusOr<std::unique_ptr<Backend>> data = env.backends->Create(
        run->ps() ? "mpi" : worker_backend, {&world, env.device});
    absl::Status status = data.status();
    if (data.ok()) run->data = *std::move(data);
    if (status.ok()) status = run->data->Supports(run->dtype);
    return AgreeOnStatus(world, status);
  }
  ASSIGN_OR_RETURN(run->workers_comm, world.Split(run->ps() ? -1 : 0, run->rank));
  ASSIGN_OR_RETURN(run->link_comm, world.Split(run->rank <= kChief ? 0 : -1, run->rank));
  absl::Status status = absl::OkStatus();
  if (run->link_comm != nullptr) {
    absl::StatusOr<std::unique_ptr<Backend>> link =
        env.backends->Create("mpi", {run->link_comm.get(), env.device});
    status = link.status();
    if (link.ok()) run->link = *std::move(link);
  }
  RETURN_IF_ERROR(AgreeOnStatus(world, status));
  if (run->workers_comm != nullptr) {
    absl::StatusOr<std::unique_ptr<Backend>> data =
        env.backends->Create(worker_backend, {run->workers_comm.get(), env.device});
    status = data.status();
    if (data.ok()) run->data = *std::move(data);
    if (status.ok()) status = run->data->Supports(run->dtype);
  }
  return AgreeOnStatus(world, status);
}

// The PS's parameters and each worker's gradients: values unique per
// source rank and element, so a misplaced block is caught.
absl::Status FillInputs(DeviceRuntime& device, const PsRun& run, size_t count) {
  std::vector<char> host(count * ElementSize(run.dtype));
  FillBuffer(host.data(), run.dtype, count,
             [&](size_t i) { return MovedValue(run.dtype, run.rank, i); });
  return Upload(device, run.ps() ? run.params : run.grads, host.data(), host.size());
}

// One point-to-point transfer of `bytes` over the PS-chief MPI link.
absl::Status LinkTransfer(Backend& link, PeerTransfer::Direction direction,
                          void* buffer, size_t bytes, int peer) {
  const PeerTransfer transfer{direction, buffer, bytes, peer};
  return link.Exchange(absl::MakeConstSpan(&transfer, 1), DataType::kInt8);
}

// One iteration over the MPI link and NCCL (nccl-chief). The link carries
// bytes (int8), so 16-bit float types work too.
absl::Status ChiefIteration(DeviceRuntime& device, PsRun& run, size_t count) {
  using Dir = PeerTransfer::Direction;
  const size_t bytes = count * ElementSize(run.dtype);
  const size_t all_bytes = bytes * run.gathered_blocks();
  if (run.ps()) {
    RETURN_IF_ERROR(LinkTransfer(*run.link, Dir::kSend, run.params.data(), bytes, kChief));
    return LinkTransfer(*run.link, Dir::kRecv, run.gathered.data(), all_bytes, kChief);
  }
  if (run.chief()) {
    RETURN_IF_ERROR(
        LinkTransfer(*run.link, Dir::kRecv, run.stage_params.data(), bytes, kPs));
    RETURN_IF_ERROR(device.CopyAsync(run.params.data(), run.stage_params.data(), bytes));
  }
  RETURN_IF_ERROR(run.data->Bcast(run.params.data(), count, run.dtype, 0));
  RETURN_IF_ERROR(run.data->Gather(run.grads.data(),
                                   run.chief() ? run.gathered.data() : nullptr, count,
                                   run.dtype, 0));
  if (!run.chief()) return run.data->Synchronize();
  RETURN_IF_ERROR(
      device.CopyAsync(run.stage_gathered.data(), run.gathered.data(), all_bytes));
  RETURN_IF_ERROR(run.data->Synchronize());
  RETURN_IF_ERROR(device.Synchronize());
  return LinkTransfer(*run.link, Dir::kSend, run.stage_gathered.data(), all_bytes,
                      kPs);
}

// One iteration: parameters out to every worker, gradients back to the PS.
absl::Status Iteration(DeviceRuntime& device, PsRun& run, size_t count) {
  if (run.chief_mode()) return ChiefIteration(device, run, count);
  RETURN_IF_ERROR(run.data->Bcast(run.params.data(), count, run.dtype, kPs));
  // The PS's own block of the gather is its parameters; it is ignored.
  const void* send = run.ps() ? run.params.data() : run.grads.data();
  RETURN_IF_ERROR(run.data->Gather(send, run.ps() ? run.gathered.data() : nullptr,
                                   count, run.dtype, kPs));
  return run.data->Synchronize();
}

// What --check reads on this rank: every worker's block on the PS, the
// received parameters on a worker.
const Buffer& CheckedBuffer(const PsRun& run) {
  return run.ps() ? run.gathered : run.params;
}
size_t CheckedElements(const PsRun& run, size_t count) {
  return run.ps() ? count * run.gathered_blocks() : count;
}

// This rank's elements of the checked iteration that differ from what
// their source rank sent.
absl::StatusOr<uint64_t> CountWrong(DeviceRuntime& device, const PsRun& run,
                                    size_t count) {
  std::vector<char> host(CheckedElements(run, count) * ElementSize(run.dtype));
  RETURN_IF_ERROR(Download(device, host.data(), CheckedBuffer(run), host.size()));
  uint64_t wrong = 0;
  const int first_source = run.ps() ? 1 : kPs;
  const int last_source = run.ps() ? run.nranks - 1 : kPs;
  for (int source = first_source; source <= last_source; ++source) {
    const size_t base = run.ps() ? (source - run.first_block()) * count : 0;
    for (size_t i = 0; i < count; ++i) {
      if (LoadElement(host.data(), run.dtype, base + i) !=
          MovedValue(run.dtype, source, i)) {
        ++wrong;
      }
    }
  }
  return wrong;
}

// One more iteration into poisoned buffers; wrong elements over all ranks.
absl::StatusOr<uint64_t> CheckIteration(DeviceRuntime& device, Communicator& world,
                                        PsRun& run, size_t count) {
  const size_t elements = CheckedElements(run, count);
  std::vector<char> poison(elements * ElementSize(run.dtype));
  FillConstant(poison.data(), run.dtype, elements, kPoison);
  RETURN_IF_ERROR(AgreeOnStatus(
      world, Upload(device, CheckedBuffer(run), poison.data(), poison.size())));
  RETURN_IF_ERROR(Iteration(device, run, count));
  absl::StatusOr<uint64_t> mine = CountWrong(device, run, count);
  RETURN_IF_ERROR(AgreeOnStatus(world, mine.status()));
  std::vector<double> wrong = {static_cast<double>(*mine)};
  RETURN_IF_ERROR(world.AllreduceSum(&wrong));
  return static_cast<uint64_t>(wrong[0]);
}

SizeRecord MakeRecord(const PsRun& run, size_t count, const RankSummary& summary,
                      uint64_t wrong, bool checked) {
  SizeRecord record;
  record.operation = "parameter-server";
  record.count = count;
  record.bytes = count * ElementSize(run.dtype);
  record.dtype = std::string(DataTypeName(run.dtype));
  record.root = kPs;
  // Each worker receives and sends `bytes`; the PS's link carries that for
  // every worker.
  FillTimings(summary, 2.0 * record.bytes, run.nranks - 1, &record);
  record.wrong = wrong;
  record.checked = checked;
  record.scenario = {
      {"workers", static_cast<double>(run.nranks - 1)},
      {"strategy_code", static_cast<double>(run.strategy - StrategySpecs().data())},
  };
  return record;
}

// Measures one size; returns the wrong elements over all ranks. Failures
// inside the data path come back unagreed (peers may be in a collective).
absl::StatusOr<uint64_t> MeasureSize(const ScenarioEnv& env, PsRun& run,
                                     uint64_t size_bytes) {
  const EngineOptions& options = *env.options;
  Communicator& world = *env.comm;
  const size_t count = size_bytes / ElementSize(run.dtype);
  RETURN_IF_ERROR(AgreeOnStatus(world, FillInputs(*env.device, run, count)));
  IterationPolicy policy;
  const uint64_t bytes = count * ElementSize(run.dtype);
  policy.warmup = options.warmup.value_or(DefaultWarmup(bytes));
  policy.iters = options.iters.value_or(DefaultIters(bytes));
  policy.time_budget_s = options.time_budget_s;
  policy.barrier_after_each = BarrierAfterEachIteration(options);
  ASSIGN_OR_RETURN(LocalTiming local, TimeIterations(world, policy, [&] {
                     return Iteration(*env.device, run, count);
                   }));
  uint64_t wrong = 0;
  if (options.check) {
    ASSIGN_OR_RETURN(wrong, CheckIteration(*env.device, world, run, count));
  }
  ASSIGN_OR_RETURN(RankSummary summary, SummarizeAcrossRanks(world, local));
  if (env.reporter != nullptr) {
    SizeRecord record = MakeRecord(run, count, summary, wrong, options.check);
    FillRanks(summary, env.hosts, EffectiveSync(options, /*collective=*/true), &record);
    env.reporter->Size(record);
  }
  return wrong;
}

absl::StatusOr<SweepTotals> ServeAllSizes(const ScenarioEnv& env) {
  const EngineOptions& options = *env.options;
  RETURN_IF_ERROR(ValidateParameterServer(options, env.comm->size()));
  PsRun run;
  ASSIGN_OR_RETURN(run.strategy, ResolveStrategy(options.strategy, options.backend));
  run.rank = env.comm->rank();
  run.nranks = env.comm->size();
  run.dtype = options.dtype;
  const std::vector<uint64_t> sizes = SweepSizes(options);
  const uint64_t max_bytes = *std::max_element(sizes.begin(), sizes.end());
  const size_t max_count = max_bytes / ElementSize(run.dtype);
  RETURN_IF_ERROR(AgreeOnStatus(*env.comm, AllocateBuffers(env, max_count, &run)));
  RETURN_IF_ERROR(ConnectBackends(env, &run));
  SweepTotals totals;
  for (uint64_t bytes : sizes) {
    ASSIGN_OR_RETURN(uint64_t wrong, MeasureSize(env, run, bytes));
    totals.sizes += 1;
    totals.wrong += wrong;
  }
  return totals;
}

}  // namespace

absl::StatusOr<SweepTotals> RunParameterServer(const ScenarioEnv& env) {
  return ServeAllSizes(env);
}

}  // namespace collbench
