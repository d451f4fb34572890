// SPDX-License-Identifier: Apache-2.0
// gradient-replay (docs/design/data-plane.md#scenarios): the communication of one
// data-parallel training step. Per step every bucket of the model's
// gradients (models.h) is all-reduced (sum) in gradient order through
// --backend, as DDP/Horovod do once a bucket is full. The step is measured
// at rank counts 1, 2, 4, ... and n (the job's size) on sub-communicators of
// the first k world ranks, and each rank count is reported as one "size"
// with its scaling efficiency against the smallest rank count:
//   efficiency(k) = (compute + t_smallest) / (compute + t_k)
// where compute is the nominal per-step compute time (an assumption, see
// models.h; --compute-time overrides it). Computation is not simulated:
// the steps are pure communication, so the model is that of no overlap.
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/records.h"
#include "common/status_macros.h"
#include "worker/engine/agreement.h"
#include "worker/engine/backends/backend.h"
#include "worker/engine/backends/registry.h"
#include "worker/engine/communicator.h"
#include "worker/engine/cuda/device_runtime.h"
#include "engine_spec/job_checks.h"
#include "worker/engine/memory/memory_kind.h"
#include "engine_spec/pattern.h"
#include "worker/engine/report/reporter.h"
#include "engine_spec/models.h"
#include "worker/engine/scenarios/scenario.h"
#include "worker/engine/sweep.h"
#include "worker/engine/timing.h"

namespace collbench {
namespace {

constexpr int kDefaultWarmupSteps = 3;
constexpr int kDefaultSteps = 20;

// What every rank replays, derived from the options alone.
struct ReplayPlan {
  std::vector<uint64_t> bucket_counts;  // elements per bucket, in order
  uint64_t total_count = 0;             // elements per step
  size_t tensors = 0;
  DataType dtype = DataType::kFloat32;
  double compute_s = 0;
  IterationPolicy policy;
};

// One flat send and one flat receive buffer holding every bucket back to
// back, as DDP's bucket views do. `kind` must outlive the buffers.
struct ReplayBuffers {
  std::unique_ptr<MemoryKind> kind;
  Buffer send;
  Buffer recv;
};

absl::StatusOr<ReplayPlan> MakePlan(const EngineOptions& options) {
  ASSIGN_OR_RETURN(ModelGradients model, LoadModel(options.model));
  ReplayPlan plan;
  plan.dtype = options.dtype;
  plan.tensors = model.tensors.size();
  const size_t width = ElementSize(plan.dtype);
  for (uint64_t bytes : ModelBucketBytes(model, options.bucket_bytes, width)) {
    plan.bucket_counts.push_back(bytes / width);
    plan.total_count += bytes / width;
  }
  plan.compute_s = options.compute_time_s.value_or(model.nominal_compute_s);
  plan.policy.warmup = options.warmup.value_or(kDefaultWarmupSteps);
  if (options.steps > 0) {
    plan.policy.iters = options.steps;  // explicit steps beat a time budget
  } else {
    plan.policy.iters = options.iters.value_or(kDefaultSteps);
    plan.policy.time_budget_s = options.time_budget_s;
  }
  plan.policy.barrier_after_each = BarrierAfterEachIteration(options);
  return plan;
}

// 1, 2, 4, ... below n, then n itself.
std::vector<int> RankCounts(int nranks) {
  std::vector<int> counts;
  for (int k = 1; k < nranks; k *= 2) counts.push_back(k);
  counts.push_back(nranks);
  return counts;
}

// Lets `write` fill `buffer` through host memory: the buffer itself when
// it is host memory, else a staging copy uploaded afterwards (so host
// buffers, which can be large, are never doubled).
absl::Status WriteThroughHost(DeviceRuntime& device, const Buffer& buffer,
                              const std::function<void(void*)>& write) {
  if (buffer.space() == MemorySpace::kHost) {
    write(buffer.data());
    return absl::OkStatus();
  }
  std::vector<char> staging(buffer.bytes());
  write(staging.data());
  return device.Copy(buffer.data(), staging.data(), staging.size());
}

// `buffer`'s contents readable on the host: the buffer itself, or a copy
// downloaded into `*staging`.
absl::StatusOr<const void*> ReadOnHost(DeviceRuntime& device, const Buffer& buffer,
                                       std::vector<char>* staging) {
  if (buffer.space() == MemorySpace::kHost) return buffer.data();
  staging->resize(buffer.bytes());
  RETURN_IF_ERROR(device.Copy(staging->data(), buffer.data(), staging->size()));
  return staging->data();
}

constexpr char kFitAdvice[] = "use a smaller --model or fewer ranks per host";

// Whether two gradient buffers per rank fit in what this host or device
// has free, before anything is allocated.
absl::Status CheckBuffersFit(const ScenarioEnv& env, MemorySpace space,
                             uint64_t bytes_per_buffer) {
  if (space == MemorySpace::kDevice) {
    ASSIGN_OR_RETURN(auto free_and_total, env.device->MemoryInfo());
    return CheckFits(2 * bytes_per_buffer, 1, free_and_total.first, "device memory",
                     kFitAdvice);
  }
  ASSIGN_OR_RETURN(uint64_t available, HostMemoryAvailable());
  return CheckFits(2 * bytes_per_buffer, env.comm->local_size(), available, "host memory",
                   kFitAdvice);
}

// Chooses the memory kind (--memory, else the backend's natural one),
// initialises the device if anything lives there, and allocates.
absl::Status SetUp(const ScenarioEnv& env, const ReplayPlan& plan,
                   ReplayBuffers* buffers) {
  const EngineOptions& options = *env.options;
  ASSIGN_OR_RETURN(const BackendSpec* info, env.backends->Info(options.backend));
  const bool on_device = info->space == MemorySpace::kDevice;
  const std::string kind_name =
      !options.memory.empty() ? options.memory : (on_device ? "device" : "default");
  // Pinned host memory comes from the CUDA runtime too.
  if (on_device || kind_name == "pinned") {
    RETURN_IF_ERROR(env.device->Init(env.comm->local_rank()));
  }
  ASSIGN_OR_RETURN(buffers->kind, env.memory->Create(kind_name, env.device));
  if (buffers->kind->space() != info->space) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--memory ", kind_name, " is ",
        std::string(MemorySpaceName(buffers->kind->space())),
        " memory but --backend ", options.backend, " needs ",
        std::string(MemorySpaceName(info->space)), " memory"));
  }
  RETURN_IF_ERROR(buffers->kind->CheckAvailable());
  const size_t bytes = plan.total_count * ElementSize(plan.dtype);
  RETURN_IF_ERROR(CheckBuffersFit(env, info->space, bytes));
  ASSIGN_OR_RETURN(buffers->send, Buffer::Allocate(buffers->kind.get(), bytes));
  ASSIGN_OR_RETURN(buffers->recv, Buffer::Allocate(buffers->kind.get(), bytes));
  return absl::OkStatus();
}

// Fills the send buffer with the sum pattern of `rank` among `nranks`.
absl::Status FillGradients(DeviceRuntime& device, const ReplayPlan& plan, int nranks,
                           int rank, const ReplayBuffers& buffers) {
  return WriteThroughHost(device, buffers.send, [&](void* host) {
    FillBuffer(host, plan.dtype, plan.total_count, [&](size_t i) {
      return ReductionInput(plan.dtype, ReduceOp::kSum, nranks, rank, i);
    });
  });
}

// One training step's communication: every bucket, in order.
absl::Status Step(Backend& backend, const ReplayPlan& plan,
                  const ReplayBuffers& buffers) {
  const size_t width = ElementSize(plan.dtype);
  const char* send = static_cast<const char*>(buffers.send.data());
  char* recv = static_cast<char*>(buffers.recv.data());
  uint64_t offset = 0;
  for (uint64_t count : plan.bucket_counts) {
    RETURN_IF_ERROR(backend.Allreduce(send + offset * width, recv + offset * width,
                                      count, plan.dtype, ReduceOp::kSum));
    offset += count;
  }
  return backend.Synchronize();
}

// Poisons the receive buffers before the checked step, so an element the
// library does not write is counted.
absl::Status PoisonResults(DeviceRuntime& device, const ReplayPlan& plan,
                           const ReplayBuffers& buffers) {
  return WriteThroughHost(device, buffers.recv, [&](void* host) {
    FillConstant(host, plan.dtype, plan.total_count, kPoison);
  });
}

// This rank's elements of the checked step that differ from the exact sum.
absl::StatusOr<uint64_t> CountWrong(DeviceRuntime& device, const ReplayPlan& plan,
                                    int nranks, const ReplayBuffers& buffers) {
  std::vector<char> staging;
  ASSIGN_OR_RETURN(const void* result, ReadOnHost(device, buffers.recv, &staging));
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < plan.total_count; ++i) {
    const double expected = ReducedValue(plan.dtype, ReduceOp::kSum, nranks, i);
    if (LoadElement(result, plan.dtype, i) != expected) ++wrong;
  }
  return wrong;
}

// One more step after the timed loop, checked; wrong elements over `sub`.
absl::StatusOr<uint64_t> CheckStep(DeviceRuntime& device, Backend& backend,
                                   const ReplayPlan& plan, Communicator& sub,
                                   const ReplayBuffers& buffers) {
  RETURN_IF_ERROR(AgreeOnStatus(sub, PoisonResults(device, plan, buffers)));
  RETURN_IF_ERROR(Step(backend, plan, buffers));
  absl::StatusOr<uint64_t> mine = CountWrong(device, plan, sub.size(), buffers);
  RETURN_IF_ERROR(AgreeOnStatus(sub, mine.status()));
  std::vector<double> wrong = {static_cast<double>(*mine)};
  RETURN_IF_ERROR(sub.AllreduceSum(&wrong));
  return static_cast<uint64_t>(wrong[0]);
}

SizeRecord MakeRecord(const EngineOptions& options, const ReplayPlan& plan, int nranks,
                      const RankSummary& summary, uint64_t wrong,
                      double smallest_s) {
  SizeRecord record;
  record.operation = "gradient-replay";
  record.count = plan.total_count;
  record.bytes = plan.total_count * ElementSize(plan.dtype);
  record.dtype = std::string(DataTypeName(plan.dtype));
  record.redop = std::string(ReduceOpName(ReduceOp::kSum));
  // An all-reduce of every bucket: allreduce's bus factor 2(n-1)/n.
  FillTimings(summary, static_cast<double>(record.bytes), 2.0 * (nranks - 1) / nranks,
              &record);
  record.wrong = wrong;
  record.checked = options.check;
  const double step_s = plan.compute_s + summary.avg_s;
  record.scenario = {
      {"ranks", static_cast<double>(nranks)},
      {"buckets", static_cast<double>(plan.bucket_counts.size())},
      {"tensors", static_cast<double>(plan.tensors)},
      {"bucket_bytes", static_cast<double>(options.bucket_bytes)},
      {"comm_s_per_step", summary.avg_s},
      {"compute_s_per_step", plan.compute_s},
      {"efficiency", step_s > 0 ? (plan.compute_s + smallest_s) / step_s : 0.0},
  };
  return record;
}

// Measures the step on `sub` (the first k world ranks) and returns the
// wrong elements over its ranks. `smallest_s` is the step time at the
// smallest rank count, set by the first call (on rank 0, the only rank that
// uses it). Failures inside the data path come back unagreed: peers may be
// left inside a collective.
absl::StatusOr<uint64_t> MeasureRankCount(const ScenarioEnv& env,
                                          const ReplayPlan& plan,
                                          const ReplayBuffers& buffers,
                                          Communicator& sub, double* smallest_s) {
  const EngineOptions& options = *env.options;
  absl::StatusOr<std::unique_ptr<Backend>> backend =
      env.backends->Create(options.backend, {&sub, env.device});
  absl::Status ready = backend.ok() ? (*backend)->Supports(plan.dtype) : backend.status();
  if (ready.ok()) ready = FillGradients(*env.device, plan, sub.size(), sub.rank(), buffers);
  RETURN_IF_ERROR(AgreeOnStatus(sub, ready));

  ASSIGN_OR_RETURN(LocalTiming local,
                   TimeIterations(sub, plan.policy, [&] {
                     return Step(**backend, plan, buffers);
                   }));
  uint64_t wrong = 0;
  if (options.check) {
    ASSIGN_OR_RETURN(wrong, CheckStep(*env.device, **backend, plan, sub, buffers));
  }
  ASSIGN_OR_RETURN(RankSummary summary, SummarizeAcrossRanks(sub, local));
  if (*smallest_s < 0) *smallest_s = summary.avg_s;
  if (env.reporter != nullptr) {
    SizeRecord record = MakeRecord(options, plan, sub.size(), summary, wrong, *smallest_s);
    FillRanks(summary, env.hosts, EffectiveSync(options, /*collective=*/true), &record);
    env.reporter->Size(record);
  }
  return wrong;
}

// Every rank count in turn. Totals are rank 0's (it takes part in every
// rank count), shared with every rank so they all end alike.
absl::StatusOr<SweepTotals> ReplayAllRankCounts(const ScenarioEnv& env) {
  ASSIGN_OR_RETURN(ReplayPlan plan, MakePlan(*env.options));
  Communicator& world = *env.comm;
  ReplayBuffers buffers;
  RETURN_IF_ERROR(AgreeOnStatus(world, SetUp(env, plan, &buffers)));
  double smallest_s = -1;
  std::vector<double> totals = {0, 0};  // sizes, wrong
  for (int k : RankCounts(world.size())) {
    // World ranks 0..k-1 in world order, so world rank 0 (the reporter) is
    // rank 0 of every sub-communicator; the others wait at the next split.
    const bool member = world.rank() < k;
    ASSIGN_OR_RETURN(std::unique_ptr<Communicator> sub,
                     world.Split(member ? 0 : -1, world.rank()));
    absl::StatusOr<uint64_t> wrong = uint64_t{0};
    if (sub != nullptr) {
      wrong = MeasureRankCount(env, plan, buffers, *sub, &smallest_s);
      if (!wrong.ok() && !IsAgreed(wrong.status())) return wrong.status();
      totals[0] += 1;
      if (wrong.ok()) totals[1] += static_cast<double>(*wrong);
    }
    RETURN_IF_ERROR(AgreeOnStatus(world, wrong.status()));
  }
  RETURN_IF_ERROR(world.AllreduceMax(&totals));
  return SweepTotals{static_cast<uint64_t>(totals[0]), static_cast<uint64_t>(totals[1])};
}

}  // namespace

absl::StatusOr<SweepTotals> RunGradientReplay(const ScenarioEnv& env) {
  return ReplayAllRankCounts(env);
}

}  // namespace collbench
