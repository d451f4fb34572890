// SPDX-License-Identifier: Apache-2.0
// load_bench --results; see results_bench.h.
#include "bench/load/results_bench.h"

#include <cerrno>
#include <condition_variable>
#include <limits>
#include <random>

#include "bench/load/load_common.h"
#include "collbench/v1/gateway.grpc.pb.h"

namespace collbench::load_bench {
namespace {

constexpr double kTargetResultsPerSecond = 50000;
constexpr double kTargetAckP99Ms = 50;
constexpr double kTargetApiP99Ms = 20;
constexpr int kMaxSeconds = 3600;  // per-second ack buckets

struct ResultsOptions {
  std::string coordinator;
  std::string store = "sqlite";  // sqlite | memory
  std::string store_dir = "/var/tmp";
  int runs = 1000;
  int results_per_run = 1500;
  double rate = 50000;  // offered results/s over the fleet; 0: closed loop
  int window = 1000;    // unacknowledged results per run at most
  double api_rate = 50;
  int channels = 16;
  double seconds = 60;  // the most the stream lasts
  double drain_s = 15;  // after the last send, for the acks
  bool verbose = false;
};

void ResultsUsage(FILE* out) {
  std::fputs(
      "usage: load_bench --results --coordinator PATH [options]\n"
      "  --store sqlite|memory   the coordinator's store (default sqlite, on disk)\n"
      "  --store-dir DIR         where the SQLite file goes (default /var/tmp)\n"
      "  --runs N                concurrent runs, one fake launcher each (default 1000)\n"
      "  --results-per-run N     results each launcher sends (default 1500, at most\n"
      "                          the 1820 its run's spec allows)\n"
      "  --rate R                results/s offered by the whole fleet, open loop\n"
      "                          (default 50000; 0: as fast as the window allows)\n"
      "  --window N              unacknowledged results per run at most (default 1000)\n"
      "  --api-rate R            GetRun / ListRuns calls per second (default 50)\n"
      "  --channels N            HTTP/2 connections the streams share (default 16)\n"
      "  --seconds S             stop sending after S (default 60)\n"
      "  --drain S               then wait S for the acks (default 15)\n"
      "  --verbose               echo the coordinator's stderr\n",
      out);
}

bool ParseResultsOptions(int argc, char** argv, ResultsOptions* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--results") continue;
    if (arg == "--verbose") {
      o->verbose = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      ResultsUsage(stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "load_bench: %s needs a value\n", arg.c_str());
      return false;
    }
    const std::string value = argv[++i];
    char* end = nullptr;
    const double number = std::strtod(value.c_str(), &end);
    const bool numeric = end != value.c_str() && *end == '\0' && number >= 0;
    auto count = [&](int* target) {
      if (!numeric) return false;
      *target = static_cast<int>(number);
      return true;
    };
    auto real = [&](double* target) {
      if (!numeric) return false;
      *target = number;
      return true;
    };
    bool ok = true;
    if (arg == "--coordinator") {
      o->coordinator = value;
    } else if (arg == "--store") {
      o->store = value;
      ok = value == "sqlite" || value == "memory";
    } else if (arg == "--store-dir") {
      o->store_dir = value;
    } else if (arg == "--runs") {
      ok = count(&o->runs);
    } else if (arg == "--results-per-run") {
      ok = count(&o->results_per_run);
    } else if (arg == "--rate") {
      ok = real(&o->rate);
    } else if (arg == "--window") {
      ok = count(&o->window);
    } else if (arg == "--api-rate") {
      ok = real(&o->api_rate);
    } else if (arg == "--channels") {
      ok = count(&o->channels);
    } else if (arg == "--seconds") {
      ok = real(&o->seconds);
    } else if (arg == "--drain") {
      ok = real(&o->drain_s);
    } else {
      std::fprintf(stderr, "load_bench: unknown argument '%s'\n", arg.c_str());
      return false;
    }
    if (!ok) {
      std::fprintf(stderr, "load_bench: %s: '%s' is not valid\n", arg.c_str(), value.c_str());
      return false;
    }
  }
  if (o->coordinator.empty() || o->runs < 1 || o->results_per_run < 1 || o->window < 1 ||
      o->channels < 1 || o->seconds <= 0 || o->seconds > kMaxSeconds) {
    std::fprintf(stderr, "load_bench: --coordinator is required; --runs, --results-per-run, "
                         "--window, --channels and --seconds (<= 3600) must be positive\n");
    return false;
  }
  return true;
}

// The sizes of the runs' spec: 64 (the most a spec may list), every
// dtype and redop, so a run may report (64 + 1) * 7 * 4 = 1820 results.
std::vector<uint64_t> BenchSizes() {
  std::vector<uint64_t> sizes;
  for (int i = 0; i < 64; ++i) sizes.push_back(64u * static_cast<uint64_t>(i + 1));
  return sizes;
}

v1::RunSpec ResultsRunSpec() {
  v1::RunSpec spec;
  spec.set_operation("allreduce");
  for (uint64_t size : BenchSizes()) spec.add_sizes_bytes(size);
  spec.set_dtype("all");
  spec.set_redop("all");
  spec.set_iters(10);
  spec.set_ranks(1);
  spec.mutable_placement()->set_policy(v1::PACK);
  spec.mutable_timeout()->set_seconds(3600);
  (*spec.mutable_labels())["purpose"] = "load-bench-results";
  return spec;
}

// Counters shared by the launchers.
struct ResultsFleet : StreamFleet {
  std::atomic<int> assigned{0};
  std::atomic<int> finished{0};  // every result acked, SUCCEEDED sent
  std::atomic<long> sent{0};
  std::atomic<long> acked{0};
  Clock::time_point start;  // of the stream; set before the first result
  std::unique_ptr<std::atomic<long>[]> acks_per_second{new std::atomic<long>[kMaxSeconds + 60]()};
};

// One fake launcher: registers, takes the run it is assigned, reports it
// RUNNING and sends its results when Drive() says they are due.
class FakeLauncher final
    : public grpc::ClientBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage> {
 public:
  FakeLauncher(ResultsFleet* fleet, int index, int results)
      : fleet_(fleet), results_(results), due_at_(results) {
    FillFakeRegister("results", index, outgoing_.emplace_back().mutable_register_());
    latencies_ms_.reserve(results);
  }

  void Start(v1::WorkerGateway::Stub* stub) {
    stub->async()->Connect(&context_, this);
    writing_ = true;
    StartWrite(&outgoing_.front());
    StartRead(&incoming_);
    AddHold();  // results are written from the driver thread
    StartCall();
  }

  // From the driver thread: sends the results due by now (`due` of them
  // in all, each due at start + (k + phase) / per_run_rate), at most
  // `window` unacknowledged.
  void Drive(int64_t due, double phase, double per_run_rate, int window) {
    std::lock_guard<std::mutex> lock(mu_);
    if (run_.empty() || failed_) return;
    due = std::min<int64_t>(due, results_);
    while (next_ < due && next_ - (acked_through_ + 1) < window) {
      due_at_[next_] = per_run_rate > 0
                           ? fleet_->start + std::chrono::duration_cast<Clock::duration>(
                                                 duration<double>((next_ + phase) / per_run_rate))
                           : Clock::now();
      v1::RunResult* result = outgoing_.emplace_back().mutable_result();
      result->set_run(run_);
      FillResult(next_, result->mutable_result());
      ++next_;
      fleet_->sent.fetch_add(1, std::memory_order_relaxed);
      WriteNextLocked();
    }
  }

  // Ends the stream; OnDone follows.
  void Stop() {
    context_.TryCancel();
    RemoveHold();
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    outgoing_.pop_front();
    writing_ = false;
    if (!ok) {
      failed_ = true;
      return;
    }
    WriteNextLocked();
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      std::lock_guard<std::mutex> lock(mu_);
      failed_ = true;
      return;
    }
    switch (incoming_.message_case()) {
      case v1::CoordinatorMessage::kRegistered:
        fleet_->registered.fetch_add(1);
        fleet_->Wake();
        break;
      case v1::CoordinatorMessage::kAssignment:
        Assigned(incoming_.assignment().run());
        break;
      case v1::CoordinatorMessage::kAck:
        Acked(incoming_.ack().sequence());
        break;
      case v1::CoordinatorMessage::kCancel:
        fleet_->Note("cancelled: " + incoming_.cancel().reason());
        break;
      default:
        break;
    }
    StartRead(&incoming_);
  }

  void OnDone(const grpc::Status& status) override { fleet_->StreamEnded(status); }

  // Latencies of the results sent (ms); one not acknowledged counts as
  // +infinity. Call after the stream is quiet.
  std::vector<double> Latencies() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<double> all = latencies_ms_;
    all.resize(next_, std::numeric_limits<double>::infinity());
    return all;
  }
  std::string run() {
    std::lock_guard<std::mutex> lock(mu_);
    return run_;
  }
  int64_t sent() {
    std::lock_guard<std::mutex> lock(mu_);
    return next_;
  }
  int64_t results() const { return results_; }
  // Every result sent is acknowledged.
  bool all_acked() {
    std::lock_guard<std::mutex> lock(mu_);
    return next_ > 0 && acked_through_ + 1 == next_;
  }

 private:
  void Assigned(const std::string& run) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!run_.empty()) return;
    run_ = run;
    v1::RunStatus* status = outgoing_.emplace_back().mutable_run_status();
    status->set_run(run);
    status->set_state(v1::RUNNING);
    status->set_sizes_total(results_);
    status->set_mpi_version("load-bench");
    WriteNextLocked();
    fleet_->assigned.fetch_add(1);
    fleet_->Wake();
  }

  void Acked(int64_t sequence) {
    const Clock::time_point now = Clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    sequence = std::min<int64_t>(sequence, next_ - 1);
    const long newly = static_cast<long>(sequence - acked_through_);
    if (newly <= 0) return;
    for (int64_t s = acked_through_ + 1; s <= sequence; ++s) {
      latencies_ms_.push_back(std::max(0.0, Millis(now - due_at_[s])));
    }
    acked_through_ = sequence;
    fleet_->acked.fetch_add(newly, std::memory_order_relaxed);
    const auto second = static_cast<size_t>(Seconds(now - fleet_->start));
    if (second < kMaxSeconds + 60) fleet_->acks_per_second[second].fetch_add(newly);
    if (acked_through_ + 1 == results_) {
      v1::RunStatus* status = outgoing_.emplace_back().mutable_run_status();
      status->set_run(run_);
      status->set_state(v1::SUCCEEDED);
      status->set_sizes_total(results_);
      status->set_results_total(results_);
      WriteNextLocked();
      fleet_->finished.fetch_add(1);
      fleet_->Wake();
    }
  }

  // A result as the launcher would send it: one (size, dtype, redop) of
  // the sweep with its timing statistics.
  static void FillResult(int64_t sequence, v1::SizeResult* r) {
    static const std::vector<uint64_t> sizes = BenchSizes();
    static const char* const kDtypes[] = {"int8",    "int32",   "int64",  "float16",
                                          "bfloat16", "float32", "float64"};
    static const char* const kRedops[] = {"sum", "prod", "min", "max"};
    r->set_sequence(sequence);
    r->set_operation("allreduce");
    r->set_bytes(sizes[sequence % sizes.size()]);
    r->set_count(r->bytes() / 4);
    r->set_dtype(kDtypes[(sequence / 64) % 7]);
    r->set_redop(kRedops[(sequence / 448) % 4]);
    r->set_iters(10);
    r->set_avg_s(2.0e-6);
    r->set_min_s(1.5e-6);
    r->set_max_s(4.0e-6);
    r->set_p50_s(1.9e-6);
    r->set_p90_s(2.5e-6);
    r->set_p99_s(3.9e-6);
    r->set_algbw_bytes_per_s(static_cast<double>(r->bytes()) / 2.0e-6);
    r->set_busbw_bytes_per_s(r->algbw_bytes_per_s());
    r->set_checked(true);
  }

  void WriteNextLocked() {
    if (writing_ || failed_ || outgoing_.empty()) return;
    writing_ = true;
    StartWrite(&outgoing_.front());
  }

  ResultsFleet* const fleet_;
  const int64_t results_;
  grpc::ClientContext context_;
  v1::CoordinatorMessage incoming_;
  std::mutex mu_;
  std::deque<v1::WorkerMessage> outgoing_;  // front: being written
  bool writing_ = false;
  bool failed_ = false;
  std::string run_;
  int64_t next_ = 0;            // results sent
  int64_t acked_through_ = -1;
  std::vector<Clock::time_point> due_at_;
  std::vector<double> latencies_ms_;
};

void PrintRow(const char* name, std::vector<double> v, long errors) {
  std::sort(v.begin(), v.end());
  std::printf("  %-26s %9zu %6ld %9.2f %9.2f %9.2f %9.2f\n", name, v.size(), errors,
              Percentile(v, 50), Percentile(v, 90), Percentile(v, 99),
              v.empty() ? 0.0 : v.back());
}

// Every run whose results were all acknowledged, read back: SUCCEEDED (or
// RUNNING when --seconds cut it short) with sizes_done equal to what its
// launcher sent. Waits up to 15 s in all for
// the last ones to finish; runs not read by then do not count.
int CountStoredRuns(v1::Coordinator::Stub* api,
                    const std::vector<std::unique_ptr<FakeLauncher>>& launchers,
                    std::string* first_mismatch) {
  const auto give_up = Clock::now() + std::chrono::seconds(15);
  int good = 0;
  for (const auto& launcher : launchers) {
    const std::string run = launcher->run();
    if (run.empty() || !launcher->all_acked() || Clock::now() > give_up) continue;
    for (;;) {
      v1::GetRunRequest request;
      request.set_name(run);
      v1::Run got;
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      const grpc::Status status = api->GetRun(&context, request, &got);
      // A run cut short by --seconds is still RUNNING.
      const v1::RunState expected =
          launcher->sent() == launcher->results() ? v1::SUCCEEDED : v1::RUNNING;
      const bool right = status.ok() && got.state() == expected &&
                         got.sizes_done() == launcher->sent();
      if (right) {
        ++good;
        break;
      }
      if (Clock::now() > give_up) {
        if (first_mismatch->empty()) {
          *first_mismatch = run + ": " + (status.ok() ? v1::RunState_Name(got.state()) +
                                                            " sizes_done " +
                                                            std::to_string(got.sizes_done())
                                                      : status.error_message()) +
                            ", sent " + std::to_string(launcher->sent());
        }
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return good;
}

// Acks per whole second of the stream, the first and the last (partial)
// seconds left out.
std::vector<double> SteadySeconds(const ResultsFleet& fleet, double stream_s) {
  std::vector<double> per_second;
  const int whole = static_cast<int>(stream_s);
  for (int s = 1; s + 1 < whole && s < kMaxSeconds; ++s) {
    per_second.push_back(static_cast<double>(fleet.acks_per_second[s].load()));
  }
  std::sort(per_second.begin(), per_second.end());
  return per_second;
}

const char* Verdict(bool pass) { return pass ? "PASS" : "MISSED"; }

}  // namespace

int RunResultsBench(int argc, char** argv) {
  ResultsOptions o;
  if (!ParseResultsOptions(argc, argv, &o)) {
    ResultsUsage(stderr);
    return 2;
  }
  o.results_per_run = std::min(o.results_per_run, 1820);
  std::string temp_dir;
  std::string store = ":memory:";
  if (o.store == "sqlite") {
    std::string dir_template = o.store_dir + "/collbench-results-XXXXXX";
    if (mkdtemp(dir_template.data()) == nullptr) {
      std::fprintf(stderr, "load_bench: mkdtemp in %s: %s\n", o.store_dir.c_str(),
                   std::strerror(errno));
      return 1;
    }
    temp_dir = dir_template;
    store = temp_dir + "/collbench.db";
  }
  struct TempDirCleanup {
    std::string dir;
    ~TempDirCleanup() {
      std::error_code ec;
      if (!dir.empty()) std::filesystem::remove_all(dir, ec);
    }
  } cleanup{temp_dir};
  std::printf("\n=== load_bench --results: store %s (%s), %d runs x %d results, offered %s "
              "results/s, window %d, %.0f API calls/s; load average %s ===\n",
              o.store.c_str(), store.c_str(), o.runs, o.results_per_run,
              o.rate > 0 ? std::to_string(static_cast<long>(o.rate)).c_str() : "unlimited",
              o.window, o.api_rate, LoadAverage().c_str());
  std::fflush(stdout);

  CoordinatorProcess coordinator;
  if (!coordinator.Start(o.coordinator, store, /*heartbeat_timeout_s=*/3600, o.verbose)) return 1;
  const std::string target = "127.0.0.1:" + std::to_string(coordinator.port());
  std::vector<std::unique_ptr<v1::WorkerGateway::Stub>> stubs;
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (int c = 0; c < o.channels; ++c) {
    channels.push_back(NewChannel(target, c));
    stubs.push_back(v1::WorkerGateway::NewStub(channels.back()));
  }
  auto api = v1::Coordinator::NewStub(NewChannel(target, o.channels));

  ResultsFleet fleet;
  const auto t0 = Clock::now();
  std::vector<std::unique_ptr<FakeLauncher>> launchers;
  for (int i = 0; i < o.runs; ++i) {
    launchers.push_back(std::make_unique<FakeLauncher>(&fleet, i, o.results_per_run));
    launchers.back()->Start(stubs[i % o.channels].get());
  }
  const bool registered = fleet.WaitFor(120, [&] { return fleet.registered.load() >= o.runs; });
  const double register_s = Seconds(Clock::now() - t0);
  std::string create_error;
  for (int r = 0; r < o.runs && registered; ++r) {
    v1::CreateRunRequest request;
    *request.mutable_spec() = ResultsRunSpec();
    v1::Run run;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    const grpc::Status status = api->CreateRun(&context, request, &run);
    if (!status.ok() && create_error.empty()) create_error = status.error_message();
  }
  const bool assigned = fleet.WaitFor(120, [&] { return fleet.assigned.load() >= o.runs; });
  std::printf("  %d launchers registered in %.1f s; %d runs assigned in %.1f s\n",
              fleet.registered.load(), register_s, fleet.assigned.load(),
              Seconds(Clock::now() - t0));
  if (!create_error.empty()) std::printf("  CreateRun failed: %s\n", create_error.c_str());
  if (!registered || !assigned) {
    for (const std::string& l : coordinator.StderrTail()) std::printf("  [coordinator] %s\n", l.c_str());
    return 1;
  }

  // --- The stream, with API calls alongside ---------------------------------
  const ProcSample cpu_before = SampleProc(coordinator.pid());
  const double bench_cpu_before = ProcessCpuSeconds();
  fleet.start = Clock::now();
  const double per_run_rate = o.rate / o.runs;
  std::atomic<bool> stop_api{false};
  UnaryStats unary;
  std::thread api_thread([&] {
    std::mt19937 random(7);
    long issued = 0;
    while (!stop_api.load()) {
      const long due = static_cast<long>(Seconds(Clock::now() - fleet.start) * o.api_rate);
      for (; issued < due; ++issued) {
        const std::string run = launchers[random() % launchers.size()]->run();
        Issue(api.get(), &unary, issued % 2 == 0 ? kGetRun : kListRuns, run, "");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  const long total = static_cast<long>(o.runs) * o.results_per_run;
  Clock::time_point sending_ended;
  for (;;) {
    const double t = Seconds(Clock::now() - fleet.start);
    for (int i = 0; i < o.runs; ++i) {
      const double phase = static_cast<double>(i) / o.runs;
      const int64_t due = per_run_rate > 0
                              ? static_cast<int64_t>(std::floor(t * per_run_rate - phase)) + 1
                              : o.results_per_run;
      launchers[i]->Drive(due, phase, per_run_rate, o.window);
    }
    sending_ended = Clock::now();
    if (fleet.sent.load() >= total || t >= o.seconds) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const long sent = fleet.sent.load();
  const auto drain_until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                              duration<double>(o.drain_s));
  while (fleet.acked.load() < sent && Clock::now() < drain_until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // The stream's window ends at the last ack (or the end of the drain).
  const auto last = Clock::now();
  stop_api.store(true);
  api_thread.join();
  const ProcSample cpu_after = SampleProc(coordinator.pid());
  const double bench_cpu_after = ProcessCpuSeconds();
  const double stream_s = Seconds(last - fleet.start);
  const long acked = fleet.acked.load();

  std::vector<double> latencies;
  latencies.reserve(sent);
  for (const auto& launcher : launchers) {
    std::vector<double> l = launcher->Latencies();
    latencies.insert(latencies.end(), l.begin(), l.end());
  }
  std::string mismatch;
  const int stored_runs = CountStoredRuns(api.get(), launchers, &mismatch);
  while (unary.in_flight.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));

  // --- Report ---------------------------------------------------------------
  const double sustained = static_cast<double>(acked) / stream_s;
  const std::vector<double> per_second = SteadySeconds(fleet, Seconds(sending_ended - fleet.start));
  std::printf("  results sent %ld in %.2f s, acknowledged %ld (%ld not) by %.2f s\n", sent,
              Seconds(sending_ended - fleet.start), acked, sent - acked, stream_s);
  std::printf("  sustained: %.0f results/s (acks / stream time)", sustained);
  if (!per_second.empty()) {
    std::printf("; per whole second: min %.0f, median %.0f, max %.0f", per_second.front(),
                Percentile(per_second, 50), per_second.back());
  }
  std::printf("\n  %-26s %9s %6s %9s %9s %9s %9s\n", "latency (ms)", "count", "errors", "p50",
              "p90", "p99", "max");
  std::sort(latencies.begin(), latencies.end());
  PrintRow("result -> durable ack", latencies, sent - acked);
  std::vector<double> all_unary;
  long unary_errors = 0;
  for (int m : {kGetRun, kListRuns}) {
    PrintRow(kMethodNames[m], unary.latency_ms[m], unary.errors[m]);
    all_unary.insert(all_unary.end(), unary.latency_ms[m].begin(), unary.latency_ms[m].end());
    unary_errors += unary.errors[m];
  }
  // A failed call (a deadline exceeded, mostly) counts as slower than any
  // answer in the percentiles below.
  all_unary.insert(all_unary.end(), unary_errors, std::numeric_limits<double>::infinity());
  PrintRow("unary (all, failed = inf)", all_unary, unary_errors);
  if (!unary.first_error.empty()) std::printf("  first API error: %s\n", unary.first_error.c_str());
  std::printf("  coordinator: %.2f cores over the stream, RSS %.0f MiB (peak %.0f MiB)\n",
              (cpu_after.cpu_seconds - cpu_before.cpu_seconds) / stream_s, Mib(cpu_after.rss_kb),
              Mib(cpu_after.hwm_kb));
  std::printf("  load_bench itself (every launcher and API caller): %.2f cores; load average %s\n",
              (bench_cpu_after - bench_cpu_before) / stream_s, LoadAverage().c_str());
  std::printf("  runs all acknowledged, read back with sizes_done = results sent: %d of %d\n",
              stored_runs, o.runs);
  if (!mismatch.empty()) std::printf("  first mismatch: %s\n", mismatch.c_str());
  for (const std::string& e : fleet.first_errors) std::printf("  error: %s\n", e.c_str());
  std::sort(all_unary.begin(), all_unary.end());
  const double ack_p99 = Percentile(latencies, 99);
  const double api_p99 = Percentile(all_unary, 99);
  std::printf("  target >= %.0f results/s sustained:  %s (%.0f)\n", kTargetResultsPerSecond,
              Verdict(sustained >= kTargetResultsPerSecond), sustained);
  if (o.rate > 0) {
    // "All of it": the acks over the stream (sending, then the last ack)
    // keep up with what was offered, short only by the last ack's delay.
    std::printf("  target all %.0f results/s offered sustained (>= 99%%):  %s (%.1f%%)\n", o.rate,
                Verdict(sustained >= 0.99 * o.rate), 100.0 * sustained / o.rate);
  }
  std::printf("  target result-to-ack p99 < %.0f ms:   %s (%.2f)\n", kTargetAckP99Ms,
              Verdict(ack_p99 < kTargetAckP99Ms), ack_p99);
  std::printf("  target unary API p99 < %.0f ms:       %s (%.2f)\n", kTargetApiP99Ms,
              Verdict(!all_unary.empty() && api_p99 < kTargetApiP99Ms), api_p99);
  std::fflush(stdout);

  fleet.tearing_down = true;
  for (auto& launcher : launchers) launcher->Stop();
  fleet.WaitFor(30, [&] { return fleet.done.load() >= o.runs; });
  const std::string how = coordinator.Stop();
  std::printf("  coordinator %s\n", how.c_str());
  return 0;
}

}  // namespace collbench::load_bench
