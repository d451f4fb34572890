// SPDX-License-Identifier: Apache-2.0
#include "engine_spec/options.h"

#include <cmath>
#include <functional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/units.h"
#include "engine_spec/operations.h"

namespace collbench {
namespace {

absl::Status BadValue(absl::string_view flag, absl::string_view value,
                      absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid ", flag, " '", value, "': ", why));
}

absl::StatusOr<int> ParseCount(absl::string_view flag, absl::string_view value,
                               int min) {
  int n = 0;
  if (!absl::SimpleAtoi(value, &n)) return BadValue(flag, value, "not a whole number");
  if (n < min) return BadValue(flag, value, absl::StrCat("must be at least ", min));
  return n;
}

using Setter = std::function<absl::Status(EngineOptions*, absl::string_view)>;

struct Flag {
  const char* long_name;
  const char* short_name;  // "" when none
  bool takes_value;
  Setter set;
};

absl::Status SetBytes(absl::string_view flag, absl::string_view value, uint64_t* out) {
  auto bytes = ParseBytes(value);
  if (!bytes.ok()) return BadValue(flag, value, bytes.status().message());
  *out = *bytes;
  return absl::OkStatus();
}

const std::vector<Flag>& Flags() {
  static const auto* flags = new std::vector<Flag>{
      {"--min-bytes", "-b", true,
       [](EngineOptions* o, absl::string_view v) { return SetBytes("--min-bytes", v, &o->min_bytes); }},
      {"--max-bytes", "-e", true,
       [](EngineOptions* o, absl::string_view v) { return SetBytes("--max-bytes", v, &o->max_bytes); }},
      {"--factor", "-f", true,
       [](EngineOptions* o, absl::string_view v) -> absl::Status {
         if (!absl::SimpleAtod(v, &o->factor) || !(o->factor > 1.0) || !std::isfinite(o->factor)) {
           return BadValue("--factor", v, "must be a number greater than 1");
         }
         return absl::OkStatus();
       }},
      {"--sizes", "", true,
       [](EngineOptions* o, absl::string_view v) -> absl::Status {
         auto sizes = ParseByteList(v);
         if (!sizes.ok()) return BadValue("--sizes", v, sizes.status().message());
         o->sizes_bytes = *sizes;
         return absl::OkStatus();
       }},
      {"--iters", "-n", true,
       [](EngineOptions* o, absl::string_view v) -> absl::Status {
         ASSIGN_OR_RETURN(o->iters, ParseCount("--iters", v, 1));
         return absl::OkStatus();
       }},
      {"--warmup", "-w", true,
       [](EngineOptions* o, absl::string_view v) -> absl::Status {
         ASSIGN_OR_RETURN(o->warmup, ParseCount("--warmup", v, 0));
         return absl::OkStatus();
       }},
      {"--time-budget", "", true,
       [](EngineOptions* o, absl::string_view v) -> absl::Status {
         auto s = ParseDurationSeconds(v);
         if (!s.ok()) return BadValue("--time-budget", v, s.status().message());
         o->time_budget_s = *s;
         return absl::OkStatus();
       }},
      {"--backend", "", true,
       [](EngineOptions* o, absl::string_view v) { o->backend = std::string(v); return absl::OkStatus(); }},
      {"--memory", "", true,
       [](EngineOptions* o, absl::string_view v) { o->memory = std::string(v); return absl::OkStatus(); }},
      {"--dtype", "-d", true,
       [](EngineOptions* o, absl::string_view v) -> absl::Status {
         o->all_dtypes = v == "all";
         if (!o->all_dtypes) {
           ASSIGN_OR_RETURN(o->dtype, ParseDataType(v));
         }
         return absl::OkStatus();
       }},
      {"--redop", "-o", true,
       [](EngineOptions* o, absl::string_view v) -> absl::Status {
         o->all_redops = v == "all";
         if (!o->all_redops) {
           ASSIGN_OR_RETURN(o->redop, ParseReduceOp(v));
         }
         return absl::OkStatus();
       }},
      {"--root", "-r", true,
       [](EngineOptions* o, absl::string_view v) -> absl::Status {
         ASSIGN_OR_RETURN(o->root, ParseCount("--root", v, 0));
         return absl::OkStatus();
       }},
      {"--check", "-c", false,
       [](EngineOptions* o, absl::string_view) { o->check = true; return absl::OkStatus(); }},
      {"--in-place", "", false,
       [](EngineOptions* o, absl::string_view) { o->in_place = true; return absl::OkStatus(); }},
      {"--sync", "", true,
       [](EngineOptions* o, absl::string_view v) -> absl::Status {
         ASSIGN_OR_RETURN(o->sync, ParseIterationSync(v));
         return absl::OkStatus();
       }},
      {"--format", "", true,
       [](EngineOptions* o, absl::string_view v) -> absl::Status {
         if (v == "table") o->format = OutputFormat::kTable;
         else if (v == "jsonl") o->format = OutputFormat::kJsonl;
         else return BadValue("--format", v, "use table or jsonl");
         return absl::OkStatus();
       }},
      {"--window", "", true,
       [](EngineOptions* o, absl::string_view v) -> absl::Status {
         ASSIGN_OR_RETURN(o->window, ParseCount("--window", v, 1));
         if (o->window > 1024) return BadValue("--window", v, "at most 1024");
         return absl::OkStatus();
       }},
      {"--scenario", "", true,
       [](EngineOptions* o, absl::string_view v) -> absl::Status {
         if (v != "parameter-server" && v != "gradient-replay") {
           return BadValue("--scenario", v, "use parameter-server or gradient-replay");
         }
         o->scenario = std::string(v);
         return absl::OkStatus();
       }},
      {"--strategy", "", true,
       [](EngineOptions* o, absl::string_view v) { o->strategy = std::string(v); return absl::OkStatus(); }},
      {"--model", "", true,
       [](EngineOptions* o, absl::string_view v) { o->model = std::string(v); return absl::OkStatus(); }},
      {"--bucket-bytes", "", true,
       [](EngineOptions* o, absl::string_view v) -> absl::Status {
         RETURN_IF_ERROR(SetBytes("--bucket-bytes", v, &o->bucket_bytes));
         if (o->bucket_bytes == 0) return BadValue("--bucket-bytes", v, "must be positive");
         return absl::OkStatus();
       }},
      {"--steps", "", true,
       [](EngineOptions* o, absl::string_view v) -> absl::Status {
         ASSIGN_OR_RETURN(o->steps, ParseCount("--steps", v, 1));
         return absl::OkStatus();
       }},
      {"--compute-time", "", true,
       [](EngineOptions* o, absl::string_view v) -> absl::Status {
         auto s = ParseDurationSeconds(v);
         if (!s.ok()) return BadValue("--compute-time", v, s.status().message());
         o->compute_time_s = *s;
         return absl::OkStatus();
       }},
      {"--debug-corrupt-rank", "", true,
       [](EngineOptions* o, absl::string_view v) -> absl::Status {
         ASSIGN_OR_RETURN(o->corrupt_rank, ParseCount("--debug-corrupt-rank", v, 0));
         return absl::OkStatus();
       }},
      {"--debug-slow-rank", "", true,
       [](EngineOptions* o, absl::string_view v) -> absl::Status {
         ASSIGN_OR_RETURN(o->slow_rank, ParseCount("--debug-slow-rank", v, 0));
         return absl::OkStatus();
       }},
      {"--debug-slow-delay", "", true,
       [](EngineOptions* o, absl::string_view v) -> absl::Status {
         auto s = ParseDurationSeconds(v);
         if (!s.ok()) return BadValue("--debug-slow-delay", v, s.status().message());
         if (*s > 1.0) return BadValue("--debug-slow-delay", v, "at most 1s");
         o->slow_delay_s = *s;
         return absl::OkStatus();
       }},
      {"--help", "-h", false,
       [](EngineOptions* o, absl::string_view) { o->help = true; return absl::OkStatus(); }},
  };
  return *flags;
}

const Flag* FindFlag(absl::string_view name) {
  for (const Flag& flag : Flags()) {
    if (name == flag.long_name || (flag.short_name[0] != '\0' && name == flag.short_name)) {
      return &flag;
    }
  }
  return nullptr;
}

absl::Status CheckConsistency(const EngineOptions& o, bool explicit_range) {
  if (o.operation.empty() && o.scenario.empty()) {
    return absl::InvalidArgumentError(
        "missing OPERATION (e.g. allreduce) or --scenario; see --help");
  }
  if (!o.sizes_bytes.empty() && explicit_range) {
    return absl::InvalidArgumentError(
        "--sizes conflicts with --min-bytes/--max-bytes; give one or the other");
  }
  if (o.sizes_bytes.empty() && o.max_bytes < o.min_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-bytes (", FormatBytes(o.max_bytes), ") is below --min-bytes (",
        FormatBytes(o.min_bytes), ")"));
  }
  if (o.sizes_bytes.empty() && GeometricSweep(o.min_bytes, o.max_bytes, o.factor, kMaxSweepSizes + 1).size() > kMaxSweepSizes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--factor ", o.factor, " from --min-bytes ", FormatBytes(o.min_bytes), " to --max-bytes ",
        FormatBytes(o.max_bytes), " gives more than ", kMaxSweepSizes,
        " sizes; use a larger factor or a narrower range"));
  }
  if (o.time_budget_s.has_value() && o.iters.has_value()) {
    return absl::InvalidArgumentError(
        "--time-budget conflicts with --iters; give one or the other");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<EngineOptions> ParseEngineArgs(const std::vector<std::string>& args) {
  EngineOptions options;
  bool explicit_range = false;
  bool dtype_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view arg = args[i];
    if (arg.empty() || arg[0] != '-' || arg == "-") {
      if (!options.operation.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "unexpected argument '", arg, "' (operation '", options.operation,
            "' already given)"));
      }
      options.operation = std::string(arg);
      continue;
    }
    absl::string_view name = arg, value;
    bool inline_value = false;
    if (const size_t eq = arg.find('='); eq != absl::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    const Flag* flag = FindFlag(name);
    if (flag == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag '", name, "'; see --help"));
    }
    if (flag->takes_value && !inline_value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat("flag ", name, " needs a value"));
      }
      value = args[++i];
    } else if (!flag->takes_value && inline_value) {
      return absl::InvalidArgumentError(absl::StrCat("flag ", name, " takes no value"));
    }
    RETURN_IF_ERROR(flag->set(&options, value));
    if (flag->long_name == absl::string_view("--dtype")) dtype_given = true;
    if (flag->long_name == absl::string_view("--min-bytes") ||
        flag->long_name == absl::string_view("--max-bytes")) {
      explicit_range = true;
    }
  }
  if (options.help) return options;
  // `collbench-rank gradient-replay ...` is the same as --scenario.
  if (options.scenario.empty() &&
      (options.operation == "parameter-server" || options.operation == "gradient-replay")) {
    options.scenario = options.operation;
  }
  if (!options.scenario.empty() && options.operation.empty()) {
    options.operation = options.scenario;
  }
  if (!dtype_given) options.dtype = DefaultDataType(options.operation);
  RETURN_IF_ERROR(CheckConsistency(options, explicit_range));
  return options;
}

IterationSync EffectiveSync(const EngineOptions& options, bool collective) {
  if (!collective) return IterationSync::kNone;
  return options.sync.value_or(IterationSync::kBarrier);
}

absl::Status CheckSyncApplies(const EngineOptions& options, bool collective,
                              absl::string_view operation) {
  if (collective || options.sync != IterationSync::kBarrier) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--sync barrier does not apply to ", operation,
      ": point-to-point patterns and copies keep their own back-to-back loop (OSU's)"));
}

std::vector<uint64_t> GeometricSweep(uint64_t min_bytes, uint64_t max_bytes, double factor,
                                     size_t limit) {
  std::vector<uint64_t> sizes;
  for (double s = static_cast<double>(min_bytes);
       s <= static_cast<double>(max_bytes) && sizes.size() < limit;) {
    const uint64_t bytes = static_cast<uint64_t>(std::llround(s));
    if (sizes.empty() || bytes > sizes.back()) sizes.push_back(bytes);
    const double next = s * factor;
    s = next > s + 1 ? next : s + 1;
  }
  return sizes;
}

std::vector<uint64_t> SweepSizes(const EngineOptions& options) {
  if (!options.sizes_bytes.empty()) return options.sizes_bytes;
  return GeometricSweep(options.min_bytes, options.max_bytes, options.factor, kMaxSweepSizes);
}

int DefaultIters(uint64_t bytes) {
  if (bytes <= 8192) return 1000;
  if (bytes <= (uint64_t{1} << 20)) return 100;
  return 20;
}

int DefaultWarmup(uint64_t bytes) {
  if (bytes <= 8192) return 100;
  if (bytes <= (uint64_t{1} << 20)) return 10;
  return 5;
}

std::map<std::string, std::string> SpecEcho(const EngineOptions& o) {
  std::map<std::string, std::string> spec = {
      {"operation", o.operation},
      {"backend", o.backend},
      {"memory", o.memory.empty() ? "auto" : o.memory},
      {"dtype", o.all_dtypes ? "all" : std::string(DataTypeName(o.dtype))},
      {"redop", o.all_redops ? "all" : std::string(ReduceOpName(o.redop))},
      {"root", absl::StrCat(o.root)},
      {"check", o.check ? "true" : "false"},
      {"sync", o.sync ? std::string(IterationSyncName(*o.sync)) : "auto"},
      {"window", absl::StrCat(o.window)},
  };
  std::vector<std::string> sizes;
  for (uint64_t b : SweepSizes(o)) sizes.push_back(FormatBytes(b));
  spec["sizes"] = absl::StrJoin(sizes, ",");
  if (o.in_place) spec["in_place"] = "true";
  spec["iters"] = o.iters ? absl::StrCat(*o.iters) : "auto";
  spec["warmup"] = o.warmup ? absl::StrCat(*o.warmup) : "auto";
  if (o.time_budget_s) spec["time_budget"] = FormatDuration(*o.time_budget_s);
  if (!o.scenario.empty()) {
    spec["scenario"] = o.scenario;
    if (!o.strategy.empty()) spec["strategy"] = o.strategy;
    if (o.scenario == "gradient-replay") {
      spec["model"] = o.model;
      spec["bucket_bytes"] = FormatBytes(o.bucket_bytes);
    }
  }
  return spec;
}

std::string EngineUsage(const std::string& program) {
  return absl::StrFormat(R"(usage: %1$s OPERATION [flags]
       mpirun -np N %1$s OPERATION [flags]

Operations:
  collectives   bcast gather allreduce allgather reduce reduce_scatter alltoall
  point-to-pt   latency (half round trip) bw (windowed) bibw   (pairs r, r+N/2)
  copies        h2d d2h d2d (CUDA builds), h2h (host memcpy)
  compute       gemm (C = A*B per rank, n x n with n*n elements in a size; float32/64)
  scenarios     parameter-server gradient-replay (or --scenario NAME)

Sizes (per-rank message, K/M/G/T = powers of 1024):
  -b, --min-bytes SIZE      smallest size (default 8)
  -e, --max-bytes SIZE      largest size (default 16M)
  -f, --factor F            multiply by F between sizes (default 2)
      --sizes LIST          explicit list instead, e.g. 8,1K,64K,1M; or a
                            preset: deepbench (DeepBench's all-reduce sizes),
                            netpipe:MIN:MAX (powers of two and +-3 B)
Iterations:
  -n, --iters N             timed iterations per size (default: 1000 up to 8K,
                            100 up to 1M, 20 above)
  -w, --warmup N            untimed iterations first (default: 100/10/5)
      --time-budget T       adaptive: spend up to T per size (e.g. 0.5s), stop
                            early once the p50 is known to within 1%%
Data:
      --backend B           mpi | host-staged | mpi-object | mpi-staged |
                            mpi-cuda | nccl (default mpi; host-staged: memcpy
                            staging, no GPU; mpi-object: serialized messages)
      --memory KIND         default regular interleave hbw hbw_preferred
                            dax_kmem numa:N pinned device
  -d, --dtype T             int8 int32 int64 float32 float64; float16 bfloat16
                            on nccl; all = every type the backend carries
                            (default float32 for reductions and gemm, int8
                            for operations that only move bytes); every
                            size must be a whole number of elements
  -o, --redop OP            sum prod min max, or all (default sum)
  -r, --root R              root of bcast, gather, reduce (default 0)
  -c, --check               validate every size; count wrong elements
      --in-place            one buffer for input and output (MPI_IN_PLACE,
                            NCCL's same pointer): allreduce reduce bcast
                            allgather gather alltoall, on mpi and mpi-cuda
                            (nccl: allreduce reduce bcast allgather)
      --sync S              between timed iterations of a collective:
                            barrier (default: an untimed barrier, each sample
                            one isolated operation, as OSU) or none (back to
                            back, as nccl-tests)
      --window N            messages in flight for bw and bibw (default 64)
Scenarios:
      --strategy S          parameter-server: host mpi-staged nccl-chief mpi-cuda
      --model M             gradient-replay: resnet50 vgg16 bert-base or
                            sizes:LIST of tensor sizes
      --bucket-bytes SIZE   gradient fusion bucket (default 25M)
      --steps N             gradient-replay steps per rank count
      --compute-time T      gradient-replay assumed compute per step
Output:
      --format F            table (default) or jsonl
  -h, --help                this text

Exit codes: 0 success, 1 run failed or results wrong, 2 bad usage or input.
)",
                         program);
}

}  // namespace collbench
