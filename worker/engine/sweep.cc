// SPDX-License-Identifier: Apache-2.0
#include "worker/engine/sweep.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/rank_spread.h"
#include "common/status_macros.h"
#include "worker/engine/agreement.h"
#include "worker/engine/backends/backend.h"
#include "worker/engine/communicator.h"
#include "worker/engine/cuda/device_runtime.h"
#include "worker/engine/memory/memory_kind.h"
#include "engine_spec/pattern.h"
#include "worker/engine/report/reporter.h"
#include "worker/engine/timing.h"
#include "common/progress_slot.h"

namespace collbench {
namespace {

// Send and receive buffers of one size, wherever they live. In place
// (--in-place) only `recv` is allocated and `send_data` points into it.
struct SizeBuffers {
  Buffer send;
  Buffer recv;
  void* send_data = nullptr;  // what the operation is given as its send buffer
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

// The in-place buffer's contents before a call: this rank's input where
// the layout puts it, the poison everywhere else.
absl::Status FillInPlace(const SweepEnv& env, const OpContext& ctx, const Buffer& buffer) {
  const InPlaceLayout layout = env.op->InPlace(ctx);
  return Fill(env, buffer, ctx.dtype, layout.buffer_count, [&](size_t i) {
    const bool input = i >= layout.input_offset && i - layout.input_offset < layout.input_count;
    return input ? env.op->InputValue(ctx, i - layout.input_offset) : kPoison;
  });
}

absl::StatusOr<SizeBuffers> PrepareInPlace(const SweepEnv& env, const OpContext& ctx) {
  const InPlaceLayout layout = env.op->InPlace(ctx);
  const size_t width = ElementSize(ctx.dtype);
  SizeBuffers buffers;
  ASSIGN_OR_RETURN(buffers.recv, AllocateIn(env, SpaceFor(env.op->Buffers(ctx).recv_space,
                                                          *env.backend),
                                            layout.buffer_count * width));
  buffers.send_data = static_cast<char*>(buffers.recv.data()) + layout.input_offset * width;
  RETURN_IF_ERROR(FillInPlace(env, ctx, buffers.recv));
  return buffers;
}

absl::StatusOr<SizeBuffers> Prepare(const SweepEnv& env, const OpContext& ctx) {
  if (ctx.in_place) return PrepareInPlace(env, ctx);
  const OpBuffers counts = env.op->Buffers(ctx);
  const size_t width = ElementSize(ctx.dtype);
  SizeBuffers buffers;
  ASSIGN_OR_RETURN(buffers.send, AllocateIn(env, SpaceFor(counts.send_space, *env.backend),
                                            counts.send_count * width));
  ASSIGN_OR_RETURN(buffers.recv, AllocateIn(env, SpaceFor(counts.recv_space, *env.backend),
                                            counts.recv_count * width));
  buffers.send_data = buffers.send.data();
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
  RETURN_IF_ERROR(env.op->Run(*env.backend, env.device, ctx, buffers.send_data,
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

// Poisons the receive buffer (in place: puts the input back, poisons the
// rest), runs one more call and counts elements that differ from the
// operation's expected values on this rank.
absl::StatusOr<uint64_t> CheckOnce(const SweepEnv& env, const OpContext& ctx,
                                   SizeBuffers& buffers) {
  const size_t n =
      ctx.in_place ? env.op->InPlace(ctx).buffer_count : env.op->Buffers(ctx).recv_count;
  RETURN_IF_ERROR(ctx.in_place
                      ? FillInPlace(env, ctx, buffers.recv)
                      : Fill(env, buffers.recv, ctx.dtype, n, [](size_t) { return kPoison; }));
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
  policy.barrier_after_each = op.traits().op_class == OpClass::kCollective &&
                              BarrierAfterEachIteration(options);
  return policy;
}

// The testing aid behind --debug-slow-rank: spins inside the timed
// interval, after the operation returned, as a rank whose completion is slow.
void SpinFor(double seconds) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::nanoseconds(static_cast<int64_t>(seconds * 1e9));
  while (std::chrono::steady_clock::now() < until) {
  }
}

absl::StatusOr<LocalTiming> TimeSize(const SweepEnv& env, const OpContext& ctx,
                                     SizeBuffers& buffers, uint64_t bytes, int index) {
  const bool synchronize = env.backend->completes_asynchronously();
  const IterationPolicy policy = PolicyFor(*env.options, *env.op, bytes);
  // The slot learns each iteration as it starts (a relaxed store into
  // shared memory), so a rank that stops is seen where it stopped.
  ProgressSlot* slot = env.progress;
  if (slot != nullptr) {
    slot->BeginSize(index, bytes,
                    policy.time_budget_s.has_value() ? 0 : policy.warmup + policy.iters);
  }
  int64_t started = 0;
  if (env.options->slow_rank == ctx.rank) {
    const double delay_s = env.options->slow_delay_s;
    return TimeIterations(*env.comm, policy, [&] {
      if (slot != nullptr) slot->Iteration(++started);
      absl::Status status = RunOnce(env, ctx, buffers, synchronize);
      SpinFor(delay_s);
      return status;
    });
  }
  return TimeIterations(*env.comm, policy, [&] {
    if (slot != nullptr) slot->Iteration(++started);
    return RunOnce(env, ctx, buffers, synchronize);
  });
}

// Measures one size and adds it to `totals`: the wrong count (summed over
// ranks) and, on rank 0, the size's busbw.
absl::Status RunSize(const SweepEnv& env, int index, uint64_t bytes, SweepTotals* totals) {
  const OpContext ctx = MakeOpContext(*env.options, *env.comm, bytes);
  absl::StatusOr<SizeBuffers> prepared = Prepare(env, ctx);
  RETURN_IF_ERROR(AgreeOnStatus(*env.comm, prepared.status()));
  SizeBuffers& buffers = *prepared;
  ASSIGN_OR_RETURN(LocalTiming local, TimeSize(env, ctx, buffers, bytes, index));
  uint64_t wrong = 0;
  if (env.options->check) {
    if (env.progress != nullptr) env.progress->SetPhase(RankPhase::kCheck);
    ASSIGN_OR_RETURN(uint64_t mine, CheckOnce(env, ctx, buffers));
    std::vector<double> total = {static_cast<double>(mine)};
    RETURN_IF_ERROR(env.comm->AllreduceSum(&total));
    wrong = static_cast<uint64_t>(total[0]);
  }
  if (env.progress != nullptr) env.progress->SetPhase(RankPhase::kSummarize);
  ASSIGN_OR_RETURN(RankSummary summary, SummarizeAcrossRanks(*env.comm, local));
  if (env.reporter != nullptr) {
    SizeRecord record = MakeSizeRecord(*env.op, ctx, summary, env.options->check, wrong);
    const bool collective = env.op->traits().op_class == OpClass::kCollective;
    FillRanks(summary, env.hosts, EffectiveSync(*env.options, collective), &record);
    env.reporter->Size(record);
    totals->busbw_sum_Bps += record.busbw_Bps;
  }
  totals->wrong += wrong;
  ++totals->sizes;
  return absl::OkStatus();
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
  ctx.in_place = options.in_place;
  return ctx;
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
  r.in_place = ctx.in_place;
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

void FillRanks(const RankSummary& summary, const std::vector<std::string>* hosts,
               IterationSync sync, SizeRecord* record) {
  record->sync = std::string(IterationSyncName(sync));
  record->ranks.clear();
  for (size_t i = 0; i < summary.ranks.size(); ++i) {
    RankTiming t;
    t.rank = static_cast<int>(i);
    if (hosts != nullptr && i < hosts->size()) t.host = (*hosts)[i];
    t.mean_s = summary.ranks[i].mean_s;
    t.p50_s = summary.ranks[i].p50_s;
    t.p99_s = summary.ranks[i].p99_s;
    record->ranks.push_back(std::move(t));
  }
  AttributeRanks(record);
}

bool BarrierAfterEachIteration(const EngineOptions& options) {
  return EffectiveSync(options, /*collective=*/true) == IterationSync::kBarrier;
}

absl::StatusOr<SweepTotals> RunSweep(const SweepEnv& env) {
  SweepTotals totals;
  int index = 0;
  for (uint64_t bytes : SweepSizes(*env.options)) {
    RETURN_IF_ERROR(RunSize(env, index++, bytes, &totals));
  }
  return totals;
}

}  // namespace collbench
