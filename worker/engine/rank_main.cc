// SPDX-License-Identifier: Apache-2.0
#include "worker/engine/rank_main.h"

#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "flavors/registry.h"
#include "worker/engine/backends/registry.h"
#include "worker/engine/collectives/operation.h"
#include "worker/engine/agreement.h"
#include "worker/engine/cuda/device_runtime.h"
#include "engine_spec/job_checks.h"
#include "worker/engine/memory/memory_kind.h"
#include "worker/engine/mpi/mpi_communicator.h"
#include "worker/engine/oversubscription.h"
#include "engine_spec/options.h"
#include "worker/engine/report/fingerprint.h"
#include "worker/engine/report/reporter.h"
#include "worker/engine/scenarios/scenario.h"
#include "worker/engine/sweep.h"
#include "common/progress_slot.h"

#ifndef COLLBENCH_MPI_FLAVOR
#define COLLBENCH_MPI_FLAVOR "mpi"
#endif

namespace collbench {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr char kVersion[] = "0.1.0";

int ExitCodeFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk: return kExitOk;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kOutOfRange:
      return kExitUsage;
    default:
      return kExitFailed;
  }
}

// The rank the launcher assigned, readable before MPI_Init so that a usage
// error is printed once rather than by every process.
int LauncherRank() {
  for (const MpiFlavor* flavor : Flavors().List()) {
    for (const std::string& name : flavor->RankVariables()) {
      if (const char* value = std::getenv(name.c_str())) return std::atoi(value);
    }
  }
  return 0;
}

std::string HostName() {
  char name[256] = {0};
  gethostname(name, sizeof name - 1);
  return name;
}

// Everything one run owns. Members are destroyed before MPI_Finalize.
struct Engine {
  EngineOptions options;
  OperationRegistry operations;
  BackendRegistry backends;
  MemoryKindRegistry memory;
  std::unique_ptr<DeviceRuntime> device = NewDeviceRuntime();
  std::unique_ptr<MpiCommunicator> world;
  std::unique_ptr<Reporter> reporter;  // rank 0 only
  std::unique_ptr<Backend> backend;
  std::unique_ptr<MemoryKind> host_memory;
  std::unique_ptr<MemoryKind> device_memory;
  std::vector<std::string> hosts;  // by rank; filled on rank 0 by ReportStart
  // Where this rank is, for its worker (null without kProgressDirEnv).
  std::unique_ptr<ProgressSlot> progress;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

// Rank 0 speaks for errors every rank shares (usage, agreed failures);
// `every_rank` lets a rank that failed alone say so before the job aborts.
void PrintError(const Engine& engine, const absl::Status& status, bool every_rank) {
  const int rank = engine.world ? engine.world->rank() : LauncherRank();
  if (rank != 0 && !every_rank) return;
  if (engine.reporter) engine.reporter->Error({std::string(status.message())});
  if (rank == 0) {
    absl::FPrintF(stderr, "collbench-rank: %s\n", status.message());
  } else {
    absl::FPrintF(stderr, "collbench-rank: rank %d: %s\n", rank, status.message());
  }
}

// Allocating the kinds and bringing up the device can fail on one host and
// not another: each rank checks, then all agree.
absl::Status PrepareLocal(Engine& e, const OperationSpec& op, const EngineOptions& options,
                          const MemoryPlan& plan) {
  if (plan.needs_device) RETURN_IF_ERROR(e.device->Init(e.world->local_rank()));
  if (!plan.host_kind.empty()) {
    ASSIGN_OR_RETURN(e.host_memory, e.memory.Create(plan.host_kind, e.device.get()));
    RETURN_IF_ERROR(e.host_memory->CheckAvailable());
    ASSIGN_OR_RETURN(uint64_t available, HostMemoryAvailable());
    RETURN_IF_ERROR(CheckFits(PeakBufferBytes(options, op, e.world->rank(), e.world->size()),
                              e.world->local_size(), available, "host memory", "lower --max-bytes"));
  }
  if (!plan.device_kind.empty()) {
    ASSIGN_OR_RETURN(e.device_memory, e.memory.Create(plan.device_kind, e.device.get()));
    RETURN_IF_ERROR(e.device_memory->CheckAvailable());
    ASSIGN_OR_RETURN(auto info, e.device->MemoryInfo());
    RETURN_IF_ERROR(CheckFits(PeakBufferBytes(options, op, e.world->rank(), e.world->size()),
                              1, info.first, "device memory", "lower --max-bytes"));
  }
  return absl::OkStatus();
}

absl::Status Agree(Engine& e, const absl::Status& local) {
  return AgreeOnStatus(*e.world, local);
}

// Warns once, from rank 0, when a host has more ranks than CPUs for them.
absl::Status WarnIfOversubscribed(Engine& e) {
  ASSIGN_OR_RETURN(std::vector<std::string> cpus, e.world->GatherStrings(AllowedCpus()));
  if (e.world->rank() != 0) return absl::OkStatus();
  const std::string warning = OversubscriptionWarning(e.hosts, cpus);
  if (!warning.empty()) absl::FPrintF(stderr, "collbench-rank: %s\n", warning);
  return absl::OkStatus();
}

absl::Status ReportStart(Engine& e) {
  ASSIGN_OR_RETURN(e.hosts, e.world->GatherStrings(HostName()));
  RETURN_IF_ERROR(WarnIfOversubscribed(e));
  if (!e.reporter) return absl::OkStatus();
  StartRecord start;
  start.spec = SpecEcho(e.options);
  start.sizes_total = PlannedSizeRecords(e.options);
  start.spec["mpi_flavor"] = COLLBENCH_MPI_FLAVOR;
  start.nranks = e.world->size();
  start.mpi_library = e.world->library_name();
  start.mpi_version = e.world->library_version();
  if (e.backend) start.nccl_version = e.backend->library_version();
  start.hosts = e.hosts;
  start.environment = EnvironmentFacts();
  start.fingerprint = Fingerprint(start.environment);
  start.collbench_version = kVersion;
  e.reporter->Start(start);
  return absl::OkStatus();
}

// A library's known in-place defect (MpiFlavor::CheckInPlace), refused on
// every rank before anything runs, rather than crashing the job.
absl::Status CheckLibraryInPlace(const EngineOptions& options) {
  if (!options.in_place) return absl::OkStatus();
  const MpiFlavor* flavor = Flavors().Find(COLLBENCH_MPI_FLAVOR);
  return flavor == nullptr ? absl::OkStatus()
                           : flavor->CheckInPlace(options.operation, options.root);
}

// Runs an operation sweep for every combination; returns the totals.
absl::StatusOr<SweepTotals> RunOperation(Engine& e) {
  RunPlan plan;
  if (std::optional<RuleError> broken = PlanRun(e.options, e.world->size(), &plan)) {
    return EngineError(*broken);
  }
  RETURN_IF_ERROR(CheckLibraryInPlace(e.options));
  ASSIGN_OR_RETURN(const Operation* op, e.operations.Find(plan.op->name));
  RETURN_IF_ERROR(e.backends.Info(plan.backend->name).status());
  e.options.sync = plan.runs.front().sync;
  // The largest buffers: the narrowest dtype has the most elements.
  const EngineOptions* widest_count = &plan.runs.front();
  for (const EngineOptions& run : plan.runs) {
    if (ElementSize(run.dtype) < ElementSize(widest_count->dtype)) widest_count = &run;
  }
  RETURN_IF_ERROR(Agree(e, PrepareLocal(e, *plan.op, *widest_count, plan.memory)));
  absl::StatusOr<std::unique_ptr<Backend>> backend =
      e.backends.Create(plan.backend->name, {e.world.get(), e.device.get()});
  RETURN_IF_ERROR(Agree(e, backend.status()));
  e.backend = *std::move(backend);
  RETURN_IF_ERROR(ReportStart(e));
  SweepTotals totals;
  for (const EngineOptions& run : plan.runs) {
    SweepEnv env;
    env.options = &run;
    env.op = op;
    env.backend = e.backend.get();
    env.comm = e.world.get();
    env.host_memory = e.host_memory.get();
    env.device_memory = e.device_memory.get();
    env.device = e.device.get();
    env.reporter = e.reporter.get();
    env.hosts = &e.hosts;
    env.progress = e.progress.get();
    ASSIGN_OR_RETURN(SweepTotals one, RunSweep(env));
    totals.sizes += one.sizes;
    totals.wrong += one.wrong;
    totals.busbw_sum_Bps += one.busbw_sum_Bps;
  }
  return totals;
}

absl::StatusOr<SweepTotals> RunScenario(Engine& e) {
  const bool ps = e.options.scenario == "parameter-server";
  RETURN_IF_ERROR(ps ? ValidateParameterServer(e.options, e.world->size())
                     : ValidateGradientReplay(e.options, e.world->size()));
  e.options.sync = EffectiveSync(e.options, /*collective=*/true);
  RETURN_IF_ERROR(ReportStart(e));
  ScenarioEnv env;
  env.options = &e.options;
  env.comm = e.world.get();
  env.backends = &e.backends;
  env.memory = &e.memory;
  env.device = e.device.get();
  env.reporter = e.reporter.get();
  env.hosts = &e.hosts;
  return ps ? RunParameterServer(env) : RunGradientReplay(env);
}

int Finish(Engine& e, const absl::StatusOr<SweepTotals>& result) {
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - e.start).count();
  if (!result.ok()) {
    const absl::Status& status = result.status();
    // Job errors (usage, agreed failures) are known on every rank and rank 0
    // reports them. Anything else failed on this rank alone, possibly with
    // peers inside a collective: say so and abort the job.
    const bool shared = IsAgreed(status) || status.code() == absl::StatusCode::kInvalidArgument ||
                        status.code() == absl::StatusCode::kUnimplemented;
    PrintError(e, status, /*every_rank=*/!shared);
    if (e.reporter) e.reporter->End({"failed", 0, 0, elapsed_s});
    // Ranks other than 0 hold only "another rank failed": take rank 0's code
    // for usage-class failures so every process exits alike.
    const int code = ExitCodeFor(status);
    if (!shared) {
      std::fflush(nullptr);
      MPI_Abort(MPI_COMM_WORLD, code);
    }
    return code;
  }
  const bool wrong = result->wrong > 0;
  if (e.reporter) {
    e.reporter->End({wrong ? "wrong" : "ok", result->sizes, result->wrong, elapsed_s,
                     result->AverageBusbwBps()});
  }
  if (wrong && e.world->rank() == 0) {
    absl::FPrintF(stderr, "collbench-rank: validation failed: %d wrong elements\n", result->wrong);
  }
  return wrong ? kExitFailed : kExitOk;
}

int RunInitialized(Engine& e) {
  absl::StatusOr<std::unique_ptr<MpiCommunicator>> world = MpiCommunicator::Create(MPI_COMM_WORLD);
  if (!world.ok()) {
    PrintError(e, world.status(), true);
    return kExitFailed;
  }
  e.world = *std::move(world);
  if (const char* dir = std::getenv(kProgressDirEnv); dir != nullptr) {
    e.progress = ProgressSlot::Open(dir, e.world->rank(), e.options.operation);
  }
  if (e.world->rank() == 0) e.reporter = NewReporter(e.options.format, stdout);
  RegisterBuiltinOperations(&e.operations);
  RegisterBuiltinBackends(&e.backends);
  RegisterBuiltinMemoryKinds(&e.memory);
  absl::StatusOr<SweepTotals> result =
      e.options.scenario.empty() ? RunOperation(e) : RunScenario(e);
  if (e.progress != nullptr) e.progress->SetPhase(RankPhase::kDone);
  return Finish(e, result);
}

}  // namespace

int RunRankMain(int argc, char** argv) {
  const std::string program = "collbench-rank";
  std::vector<std::string> args(argv + 1, argv + argc);
  absl::StatusOr<EngineOptions> options = ParseEngineArgs(args);
  if (!options.ok()) {
    if (LauncherRank() == 0) {
      absl::FPrintF(stderr, "%s: %s\n", program, options.status().message());
    }
    return kExitUsage;
  }
  if (options->help) {
    if (LauncherRank() == 0) std::fputs(EngineUsage(program).c_str(), stdout);
    return kExitOk;
  }
  MPI_Init(&argc, &argv);
  int code;
  {
    Engine engine;
    engine.options = *std::move(options);
    code = RunInitialized(engine);
  }
  MPI_Finalize();
  return code;
}

}  // namespace collbench
