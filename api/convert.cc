// SPDX-License-Identifier: Apache-2.0
#include "api/convert.h"

#include "google/protobuf/util/time_util.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "common/units.h"
#include "engine_spec/options.h"
#include "engine_spec/types.h"
#include "flavors/registry.h"

namespace collbench {
namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;

// ---------------------------------------------------------------------------
// RunSpec -> arguments

// The shortest text that parses back to exactly `value`.
std::string ExactDouble(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

int64_t TotalNanos(const google::protobuf::Duration& d) {
  return d.seconds() * kNanosPerSecond + d.nanos();
}

// A duration in the largest unit that keeps it exact: "2s", "500ms", "7ns".
std::string DurationFlag(const google::protobuf::Duration& d) {
  const int64_t ns = TotalNanos(d);
  if (ns % kNanosPerSecond == 0) return absl::StrCat(ns / kNanosPerSecond, "s");
  if (ns % 1'000'000 == 0) return absl::StrCat(ns / 1'000'000, "ms");
  if (ns % 1'000 == 0) return absl::StrCat(ns / 1'000, "us");
  return absl::StrCat(ns, "ns");
}

google::protobuf::Duration DurationFromSeconds(double seconds) {
  const int64_t ns = std::llround(seconds * static_cast<double>(kNanosPerSecond));
  google::protobuf::Duration d;
  d.set_seconds(ns / kNanosPerSecond);
  d.set_nanos(static_cast<int32_t>(ns % kNanosPerSecond));
  return d;
}

void AppendFlag(std::vector<std::string>* args, const char* flag, std::string value) {
  args->push_back(flag);
  args->push_back(std::move(value));
}

void AppendSizeFlags(const v1::RunSpec& spec, std::vector<std::string>* args) {
  if (spec.sizes_bytes_size() > 0) {
    std::vector<std::string> sizes;
    for (uint64_t bytes : spec.sizes_bytes()) sizes.push_back(FormatBytes(bytes));
    AppendFlag(args, "--sizes", absl::StrJoin(sizes, ","));
  }
  if (spec.min_bytes() != 0) AppendFlag(args, "-b", FormatBytes(spec.min_bytes()));
  if (spec.max_bytes() != 0) AppendFlag(args, "-e", FormatBytes(spec.max_bytes()));
  if (spec.factor() != 0) AppendFlag(args, "-f", ExactDouble(spec.factor()));
}

void AppendIterationFlags(const v1::RunSpec& spec, std::vector<std::string>* args) {
  if (spec.iters() != 0) AppendFlag(args, "-n", absl::StrCat(spec.iters()));
  // RunSpec: warmup -1, or 0 with iters 0, means the default.
  if (spec.warmup() > 0 || (spec.warmup() == 0 && spec.iters() != 0)) {
    AppendFlag(args, "-w", absl::StrCat(spec.warmup()));
  }
  if (spec.has_time_budget()) {
    AppendFlag(args, "--time-budget", DurationFlag(spec.time_budget()));
  }
}

void AppendScenarioFlags(const v1::RunSpec& spec, std::vector<std::string>* args) {
  if (!spec.scenario().empty()) AppendFlag(args, "--scenario", spec.scenario());
  if (!spec.strategy().empty()) AppendFlag(args, "--strategy", spec.strategy());
  if (!spec.model().empty()) AppendFlag(args, "--model", spec.model());
  if (spec.bucket_bytes() != 0) {
    AppendFlag(args, "--bucket-bytes", FormatBytes(spec.bucket_bytes()));
  }
  if (spec.steps() != 0) AppendFlag(args, "--steps", absl::StrCat(spec.steps()));
  if (spec.has_compute_time()) {
    AppendFlag(args, "--compute-time", DurationFlag(spec.compute_time()));
  }
}

// ---------------------------------------------------------------------------
// Arguments -> RunSpec

// collbench-rank's short flags and their long names (engine_spec/options.cc).
constexpr std::pair<absl::string_view, absl::string_view> kShortFlags[] = {
    {"-b", "--min-bytes"}, {"-e", "--max-bytes"}, {"-f", "--factor"}, {"-n", "--iters"},
    {"-w", "--warmup"},    {"-d", "--dtype"},     {"-o", "--redop"},  {"-r", "--root"},
    {"-c", "--check"},     {"-h", "--help"},
};

std::string LongName(absl::string_view name) {
  for (const auto& [short_name, long_name] : kShortFlags) {
    if (name == short_name) return std::string(long_name);
  }
  return std::string(name);
}

// Which flags (by long name) and whether an operation word appear in
// `args`. REQUIRES: ParseEngineArgs(args) is OK, so every flag is known and
// every value-taking flag has its value.
struct GivenArgs {
  bool operation = false;
  std::set<std::string, std::less<>> flags;

  bool Has(absl::string_view flag) const { return flags.count(flag) > 0; }
};

GivenArgs ScanGiven(const std::vector<std::string>& args) {
  GivenArgs given;
  for (size_t i = 0; i < args.size(); ++i) {
    const absl::string_view arg = args[i];
    if (arg.empty() || arg[0] != '-' || arg == "-") {
      given.operation = true;
      continue;
    }
    const size_t eq = arg.find('=');
    std::string name = LongName(arg.substr(0, eq));
    const bool takes_value = name != "--check" && name != "--help" && name != "--in-place";
    if (takes_value && eq == absl::string_view::npos) ++i;  // skip the value
    given.flags.insert(std::move(name));
  }
  return given;
}

absl::Status RejectUnrepresentable(const EngineOptions& o, const GivenArgs& given) {
  for (absl::string_view flag : {"--help", "--debug-corrupt-rank",
                                 "--debug-slow-rank", "--debug-slow-delay"}) {
    if (given.Has(flag)) {
      return absl::InvalidArgumentError(absl::StrCat(flag, " cannot be part of a run spec"));
    }
  }
  if (o.warmup.has_value() && *o.warmup == 0 && !o.iters.has_value()) {
    return absl::InvalidArgumentError(
        "--warmup 0 needs --iters in a run spec (warmup 0 with the default "
        "iterations means the default warmup)");
  }
  return absl::OkStatus();
}

void SetSizesFromOptions(const EngineOptions& o, const GivenArgs& given, v1::RunSpec* spec) {
  for (uint64_t bytes : o.sizes_bytes) spec->add_sizes_bytes(bytes);
  if (given.Has("--min-bytes")) spec->set_min_bytes(o.min_bytes);
  if (given.Has("--max-bytes")) spec->set_max_bytes(o.max_bytes);
  if (given.Has("--factor")) spec->set_factor(o.factor);
}

void SetIterationsFromOptions(const EngineOptions& o, v1::RunSpec* spec) {
  if (o.iters.has_value()) spec->set_iters(*o.iters);
  if (o.warmup.has_value()) spec->set_warmup(*o.warmup);
  if (o.time_budget_s.has_value()) {
    *spec->mutable_time_budget() = DurationFromSeconds(*o.time_budget_s);
  }
}

void SetDataFromOptions(const EngineOptions& o, const GivenArgs& given, v1::RunSpec* spec) {
  if (given.Has("--backend")) spec->set_backend(o.backend);
  if (given.Has("--dtype")) {
    spec->set_dtype(o.all_dtypes ? "all" : std::string(DataTypeName(o.dtype)));
  }
  if (given.Has("--redop")) {
    spec->set_redop(o.all_redops ? "all" : std::string(ReduceOpName(o.redop)));
  }
  spec->set_root(o.root);
  spec->set_memory(o.memory);
  spec->set_check(o.check);
  spec->set_in_place(o.in_place);
  if (o.sync.has_value()) {
    spec->set_sync(IterationSyncFromText(IterationSyncName(*o.sync)));
  }
  if (given.Has("--window")) spec->set_window(o.window);
}

void SetScenarioFromOptions(const EngineOptions& o, const GivenArgs& given, v1::RunSpec* spec) {
  if (given.operation) spec->set_operation(o.operation);
  if (given.Has("--scenario")) spec->set_scenario(o.scenario);
  spec->set_strategy(o.strategy);
  if (given.Has("--model")) spec->set_model(o.model);
  if (given.Has("--bucket-bytes")) spec->set_bucket_bytes(o.bucket_bytes);
  if (given.Has("--steps")) spec->set_steps(o.steps);
  if (o.compute_time_s.has_value()) {
    *spec->mutable_compute_time() = DurationFromSeconds(*o.compute_time_s);
  }
}

}  // namespace

v1::Histogram HistogramToProto(const Histogram& histogram) {
  v1::Histogram proto;
  proto.set_sub_buckets(Histogram::kSubBuckets);
  auto& counts = *proto.mutable_counts();
  for (const auto& [index, count] : histogram.Sparse()) counts[index] = count;
  proto.set_sum_ns(histogram.sum_ns());
  proto.set_min_ns(histogram.min_ns());
  proto.set_max_ns(histogram.max_ns());
  return proto;
}

absl::StatusOr<Histogram> HistogramFromProto(const v1::Histogram& proto) {
  const bool unset = proto.sub_buckets() == 0 && proto.counts().empty();
  if (proto.sub_buckets() != Histogram::kSubBuckets && !unset) {
    return absl::InvalidArgumentError(absl::StrCat("histogram.sub_buckets is ", proto.sub_buckets(),
                                                   ", expected ", Histogram::kSubBuckets));
  }
  std::vector<std::pair<int, uint64_t>> buckets(proto.counts().begin(), proto.counts().end());
  ASSIGN_OR_RETURN(Histogram histogram, Histogram::FromSparse(buckets));
  histogram.SetExactStats(proto.sum_ns(), proto.min_ns(), proto.max_ns());
  return histogram;
}

v1::SizeResult SizeResultFromRecord(const SizeRecord& r, int64_t sequence) {
  v1::SizeResult out;
  out.set_sequence(sequence);
  out.set_operation(r.operation);
  out.set_bytes(r.bytes);
  out.set_count(r.count);
  out.set_dtype(r.dtype);
  out.set_redop(r.redop);
  out.set_root(r.root);
  out.set_iters(r.iters);
  out.set_avg_s(r.avg_s);
  out.set_min_s(r.min_s);
  out.set_max_s(r.max_s);
  out.set_p50_s(r.p50_s);
  out.set_p90_s(r.p90_s);
  out.set_p99_s(r.p99_s);
  out.set_algbw_bytes_per_s(r.algbw_Bps);
  out.set_busbw_bytes_per_s(r.busbw_Bps);
  out.set_wrong(r.wrong);
  out.set_checked(r.checked);
  *out.mutable_histogram() = HistogramToProto(r.histogram);
  out.mutable_scenario()->insert(r.scenario.begin(), r.scenario.end());
  out.set_sync(IterationSyncFromText(r.sync));
  for (const RankTiming& t : r.ranks) {
    v1::RankTiming* rank = out.add_ranks();
    rank->set_rank(t.rank);
    rank->set_host(t.host);
    rank->set_mean_s(t.mean_s);
    rank->set_p50_s(t.p50_s);
    rank->set_p99_s(t.p99_s);
    rank->set_straggler(t.straggler);
  }
  out.set_slowest_rank(r.slowest_rank);
  out.set_slowest_vs_median(r.slowest_vs_median);
  return out;
}

absl::StatusOr<SizeRecord> SizeRecordFromResult(const v1::SizeResult& in) {
  SizeRecord r;
  r.operation = in.operation();
  r.bytes = in.bytes();
  r.count = in.count();
  r.dtype = in.dtype();
  r.redop = in.redop();
  r.root = in.root();
  r.iters = in.iters();
  r.avg_s = in.avg_s();
  r.min_s = in.min_s();
  r.max_s = in.max_s();
  r.p50_s = in.p50_s();
  r.p90_s = in.p90_s();
  r.p99_s = in.p99_s();
  r.algbw_Bps = in.algbw_bytes_per_s();
  r.busbw_Bps = in.busbw_bytes_per_s();
  r.wrong = in.wrong();
  r.checked = in.checked();
  ASSIGN_OR_RETURN(r.histogram, HistogramFromProto(in.histogram()));
  r.scenario.insert(in.scenario().begin(), in.scenario().end());
  r.sync = IterationSyncText(in.sync());
  for (const v1::RankTiming& t : in.ranks()) {
    r.ranks.push_back({t.rank(), t.host(), t.mean_s(), t.p50_s(), t.p99_s(), t.straggler()});
  }
  r.slowest_rank = in.slowest_rank();
  r.slowest_vs_median = in.slowest_vs_median();
  return r;
}

namespace {

constexpr size_t kMaxArgWordChars = 64;

bool IsArgWord(absl::string_view word) {
  auto ok = [](char ch) {
    return absl::ascii_isalnum(ch) || ch == '_' || ch == '.' || ch == '+' || ch == '-' ||
           ch == ':';
  };
  return word.size() <= kMaxArgWordChars && absl::ascii_isalnum(word[0]) &&
         std::all_of(word.begin(), word.end(), ok);
}

}  // namespace

absl::Status CheckEngineArgWords(const v1::RunSpec& spec) {
  const std::pair<const char*, const std::string*> fields[] = {
      {"operation", &spec.operation()}, {"backend", &spec.backend()},
      {"dtype", &spec.dtype()},         {"redop", &spec.redop()},
      {"memory", &spec.memory()},       {"scenario", &spec.scenario()},
      {"strategy", &spec.strategy()},   {"model", &spec.model()}};
  for (const auto& [name, value] : fields) {
    if (value->empty() || IsArgWord(*value)) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.", name, ": '", absl::CHexEscape(value->substr(0, kMaxArgWordChars)),
        "' is not one word of letters, digits and _.+-: (starting with a letter or digit, at most ",
        kMaxArgWordChars, " characters)"));
  }
  return absl::OkStatus();
}

std::vector<std::string> EngineArgs(const v1::RunSpec& spec) {
  std::vector<std::string> args;
  if (!spec.operation().empty()) args.push_back(spec.operation());
  if (!spec.backend().empty()) AppendFlag(&args, "--backend", spec.backend());
  AppendSizeFlags(spec, &args);
  AppendIterationFlags(spec, &args);
  if (!spec.dtype().empty()) AppendFlag(&args, "--dtype", spec.dtype());
  if (!spec.redop().empty()) AppendFlag(&args, "--redop", spec.redop());
  if (spec.root() != 0) AppendFlag(&args, "--root", absl::StrCat(spec.root()));
  if (!spec.memory().empty()) AppendFlag(&args, "--memory", spec.memory());
  if (spec.check()) args.push_back("--check");
  if (spec.in_place()) args.push_back("--in-place");
  if (spec.sync() != v1::ITERATION_SYNC_UNSPECIFIED) {
    AppendFlag(&args, "--sync", IterationSyncText(spec.sync()));
  }
  if (spec.window() != 0) AppendFlag(&args, "--window", absl::StrCat(spec.window()));
  AppendScenarioFlags(spec, &args);
  AppendFlag(&args, "--format", "jsonl");
  return args;
}

std::string EngineBinary(v1::MpiImplementation mpi) {
  return std::string(FlavorFor(mpi).rank_binary());
}

absl::StatusOr<v1::RunSpec> SpecFromEngineArgs(const std::vector<std::string>& engine_args) {
  ASSIGN_OR_RETURN(const EngineOptions options, ParseEngineArgs(engine_args));
  const GivenArgs given = ScanGiven(engine_args);
  RETURN_IF_ERROR(RejectUnrepresentable(options, given));
  v1::RunSpec spec;
  SetScenarioFromOptions(options, given, &spec);
  SetSizesFromOptions(options, given, &spec);
  SetIterationsFromOptions(options, &spec);
  SetDataFromOptions(options, given, &spec);
  return spec;
}

std::string IterationSyncText(v1::IterationSync sync) {
  switch (sync) {
    case v1::SYNC_BARRIER: return "barrier";
    case v1::SYNC_NONE: return "none";
    default: return "";
  }
}

v1::IterationSync IterationSyncFromText(absl::string_view text) {
  if (text == "barrier") return v1::SYNC_BARRIER;
  if (text == "none") return v1::SYNC_NONE;
  return v1::ITERATION_SYNC_UNSPECIFIED;
}

v1::Transport EffectiveTransport(const v1::Run& run) {
  if (run.effective_transport() != v1::TRANSPORT_UNSPECIFIED) return run.effective_transport();
  return run.spec().transport() == v1::TRANSPORT_UNSPECIFIED ? v1::AUTO : run.spec().transport();
}

v1::RunSpec SpecAsRun(const v1::Run& run) {
  v1::RunSpec spec = run.spec();
  spec.set_transport(EffectiveTransport(run));
  return spec;
}

std::string WorkflowStateName(v1::WorkflowState state) {
  if (state == v1::WORKFLOW_STATE_UNSPECIFIED) return "UNSPECIFIED";
  const std::string& name = v1::WorkflowState_Name(state);
  return name.rfind("WORKFLOW_", 0) == 0 ? name.substr(9) : name;
}

bool IsFinalWorkflowState(v1::WorkflowState state) {
  return state == v1::WORKFLOW_SUCCEEDED || state == v1::WORKFLOW_FAILED ||
         state == v1::WORKFLOW_CANCELLED;
}

google::protobuf::Timestamp StateTimeOf(const v1::Run& run) {
  if (run.has_end_time()) return run.end_time();
  if (run.has_start_time()) return run.start_time();
  return run.create_time();
}

bool IsFinalRunState(v1::RunState state) {
  return state == v1::SUCCEEDED || state == v1::FAILED || state == v1::CANCELLED;
}

google::protobuf::Timestamp TimestampFromTime(absl::Time time) {
  return google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(time));
}

absl::Time TimeFromTimestamp(const google::protobuf::Timestamp& timestamp) {
  return absl::FromUnixNanos(google::protobuf::util::TimeUtil::TimestampToNanoseconds(timestamp));
}

std::string RankPlace(const v1::RankProgress& r) {
  std::string place = absl::StrCat(r.operation(), " ", FormatBytes(r.bytes()));
  if (r.iteration() > 0) {
    absl::StrAppend(&place, " iteration ", r.iteration(),
                    r.iterations() > 0 ? absl::StrCat("/", r.iterations()) : "");
  }
  if (r.phase() != "measure") absl::StrAppend(&place, " (", r.phase(), ")");
  return place;
}

}  // namespace collbench
