#include "worker/engine/sweep.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/engine/agreement.h"
#include "worker/engine/backends/backend.h"
#include "worker/engine/communicator.h"
#include "worker/engine/cuda/device_runtime.h"
#include "worker/engine/memory/memory_kind.h"
#include "worker/engine/pattern.h"
#include "worker/engine/report/reporter.h"
#include "worker/engine/timing.h"

namespace collbench {
namespace {

// Send and receive buffers of one size, wherever they live.
struct SizeBuffers {
  Buffer send;
  Buffer recv;
};

MemorySpace SpaceFor(const std::optional<MemorySpace>& wanted, const Backend& backend) {
  return wanted.value_or(backend.buffer_space());
}

absl::StatusOr<Buffer> AllocateIn(const SweepEnv& env, MemorySpace space, size_t bytes) {
  if (bytes == 0) return Buffer();
  MemoryKind* kind = space == MemorySpace::kDevice ? env.device_memory : env.host_memory;
  if (kind == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "operation ", env.op->name(), " needs ", MemorySpaceName(space),
        " memory, which this run has none of"));
  }
  return Buffer::Allocate(kind, bytes);
}

// Writes `n` elements from value(i) into `buffer`, staging through host
// memory when the buffer is on the device.
absl::Status Fill(const SweepEnv& env, const Buffer& buffer, DataType dtype, size_t n,
                  const std::function<double(size_t)>& value) {
  if (n == 0) return absl::OkStatus();
  if (buffer.space() == MemorySpace::kHost) {
    FillBuffer(buffer.data(), dtype, n, value);
    return absl::OkStatus();
  }
  std::vector<char> staging(n * ElementSize(dtype));
  FillBuffer(staging.data(), dtype, n, value);
  return env.device->Copy(buffer.data(), staging.data(), staging.size());
}

absl::StatusOr<SizeBuffers> Prepare(const SweepEnv& env, const OpContext& ctx) {
  const OpBuffers counts = env.op->Buffers(ctx);
  const size_t width = ElementSize(ctx.dtype);
  SizeBuffers buffers;
  ASSIGN_OR_RETURN(buffers.send, AllocateIn(env, SpaceFor(counts.send_space, *env.backend),
                                            counts.send_count * width));
  ASSIGN_OR_RETURN(buffers.recv, AllocateIn(env, SpaceFor(counts.recv_space, *env.backend),
                                            counts.recv_count * width));
  RETURN_IF_ERROR(Fill(env, buffers.send, ctx.dtype, counts.send_count,
                       [&](size_t i) { return env.op->InputValue(ctx, i); }));
  // Receive buffers start poisoned too, so untouched memory never looks right.
  RETURN_IF_ERROR(Fill(env, buffers.recv, ctx.dtype, counts.recv_count,
                       [](size_t) { return kPoison; }));
  return buffers;
}

// One call of the operation; `synchronize` is the backend's
// completes_asynchronously(), asked once per size rather than per call.
absl::Status RunOnce(const SweepEnv& env, const OpContext& ctx, SizeBuffers& buffers,
                     bool synchronize) {
  RETURN_IF_ERROR(env.op->Run(*env.backend, env.device, ctx, buffers.send.data(),
                              buffers.recv.data()));
  return synchronize ? env.backend->Synchronize() : absl::OkStatus();
}

// The testing aid behind --debug-corrupt-rank: changes the middle element
// of the receive buffer to a value no pattern produces.
absl::Status CorruptOne(const SweepEnv& env, const OpContext& ctx, const Buffer& recv,
                        size_t n) {
  const size_t width = ElementSize(ctx.dtype);
  size_t index = n / 2;  // the first element from the middle that is checked
  while (index < n && !env.op->ExpectedValue(ctx, index).has_value()) ++index;
  if (index == n) index = 0;
  char* target = static_cast<char*>(recv.data()) + index * width;
  std::vector<char> wrong(width);
  StoreElement(wrong.data(), ctx.dtype, 0, -3.0);
  if (recv.space() == MemorySpace::kHost) {
    std::memcpy(target, wrong.data(), width);
    return absl::OkStatus();
  }
  return env.device->Copy(target, wrong.data(), width);
}

// Poisons the receive buffer, runs one more call and counts elements that
// differ from the operation's expected values on this rank.
absl::StatusOr<uint64_t> CheckOnce(const SweepEnv& env, const OpContext& ctx,
                                   SizeBuffers& buffers) {
  const size_t n = env.op->Buffers(ctx).recv_count;
  RETURN_IF_ERROR(Fill(env, buffers.recv, ctx.dtype, n, [](size_t) { return kPoison; }));
  RETURN_IF_ERROR(RunOnce(env, ctx, buffers, env.backend->completes_asynchronously()));
  if (n == 0) return uint64_t{0};
  if (env.options->corrupt_rank == ctx.rank) RETURN_IF_ERROR(CorruptOne(env, ctx, buffers.recv, n));
  std::vector<char> staging;
  const void* host = buffers.recv.data();
  if (buffers.recv.space() == MemorySpace::kDevice) {
    staging.resize(n * ElementSize(ctx.dtype));
    RETURN_IF_ERROR(env.device->Copy(staging.data(), buffers.recv.data(), staging.size()));
    host = staging.data();
  }
  uint64_t wrong = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::optional<double> expected = env.op->ExpectedValue(ctx, i);
    if (expected.has_value() && LoadElement(host, ctx.dtype, i) != *expected) ++wrong;
  }
  return wrong;
}

IterationPolicy PolicyFor(const EngineOptions& options, const Operation& op,
                          uint64_t bytes) {
  IterationPolicy policy;
  policy.warmup = options.warmup.value_or(DefaultWarmup(bytes));
  policy.iters = options.iters.value_or(DefaultIters(bytes));
  policy.time_budget_s = options.time_budget_s;
  policy.time_scale = op.TimeScale();
  return policy;
}

// Measures one size; returns this rank's view of the wrong count (summed
// over ranks).
absl::StatusOr<uint64_t> RunSize(const SweepEnv& env, uint64_t bytes) {
  const OpContext ctx = MakeOpContext(*env.options, *env.comm, bytes);
  absl::StatusOr<SizeBuffers> prepared = Prepare(env, ctx);
  RETURN_IF_ERROR(AgreeOnStatus(*env.comm, prepared.status()));
  SizeBuffers& buffers = *prepared;
  const bool synchronize = env.backend->completes_asynchronously();
  ASSIGN_OR_RETURN(LocalTiming local,
                   TimeIterations(*env.comm, PolicyFor(*env.options, *env.op, bytes),
                                  [&] { return RunOnce(env, ctx, buffers, synchronize); }));
  uint64_t wrong = 0;
  if (env.options->check) {
    ASSIGN_OR_RETURN(uint64_t mine, CheckOnce(env, ctx, buffers));
    std::vector<double> total = {static_cast<double>(mine)};
    RETURN_IF_ERROR(env.comm->AllreduceSum(&total));
    wrong = static_cast<uint64_t>(total[0]);
  }
  ASSIGN_OR_RETURN(RankSummary summary, SummarizeAcrossRanks(*env.comm, local));
  if (env.reporter != nullptr) {
    env.reporter->Size(MakeSizeRecord(*env.op, ctx, summary, env.options->check, wrong));
  }
  return wrong;
}

}  // namespace

OpContext MakeOpContext(const EngineOptions& options, const Communicator& comm,
                        uint64_t bytes) {
  OpContext ctx;
  ctx.rank = comm.rank();
  ctx.nranks = comm.size();
  ctx.dtype = options.dtype;
  ctx.count = bytes / ElementSize(options.dtype);
  ctx.redop = options.redop;
  ctx.root = options.root;
  ctx.window = options.window;
  return ctx;
}

uint64_t PeakBufferBytes(const EngineOptions& options, const Operation& op, int rank,
                         int nranks) {
  uint64_t peak = 0;
  for (uint64_t bytes : SweepSizes(options)) {
    OpContext ctx;
    ctx.rank = rank;
    ctx.nranks = nranks;
    ctx.dtype = options.dtype;
    ctx.count = bytes / ElementSize(options.dtype);
    ctx.root = options.root;
    const OpBuffers b = op.Buffers(ctx);
    peak = std::max<uint64_t>(peak, (b.send_count + b.recv_count) * ElementSize(ctx.dtype));
  }
  return peak;
}

SizeRecord MakeSizeRecord(const Operation& op, const OpContext& ctx,
                          const RankSummary& summary, bool checked, uint64_t wrong) {
  SizeRecord r;
  const OpTraits traits = op.traits();
  r.operation = op.name();
  r.bytes = ctx.count * ElementSize(ctx.dtype);
  r.count = ctx.count;
  r.dtype = std::string(DataTypeName(ctx.dtype));
  if (traits.reduces) r.redop = std::string(ReduceOpName(ctx.redop));
  if (traits.rooted) r.root = ctx.root;
  FillTimings(summary, op.AlgBytes(ctx), op.BusFactor(ctx.nranks), &r);
  r.checked = checked;
  r.wrong = wrong;
  return r;
}

void FillTimings(const RankSummary& summary, double alg_bytes, double bus_factor,
                 SizeRecord* record) {
  record->iters = summary.iters;
  record->avg_s = summary.avg_s;
  record->min_s = summary.min_s;
  record->max_s = summary.max_s;
  record->p50_s = summary.p50_s;
  record->p90_s = summary.p90_s;
  record->p99_s = summary.p99_s;
  record->algbw_Bps = summary.avg_s > 0 ? alg_bytes / summary.avg_s : 0.0;
  record->busbw_Bps = record->algbw_Bps * bus_factor;
  record->histogram = summary.histogram;
}

absl::StatusOr<SweepTotals> RunSweep(const SweepEnv& env) {
  SweepTotals totals;
  for (uint64_t bytes : SweepSizes(*env.options)) {
    ASSIGN_OR_RETURN(uint64_t wrong, RunSize(env, bytes));
    totals.wrong += wrong;
    ++totals.sizes;
  }
  return totals;
}

}  // namespace collbench
