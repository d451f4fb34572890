// SPDX-License-Identifier: Apache-2.0
// load_bench --hunt; see hunt_bench.h.
#include "bench/load/hunt_bench.h"

#include <deque>
#include <map>
#include <random>

#include "bench/load/load_common.h"
#include "collbench/v1/gateway.grpc.pb.h"

namespace collbench::load_bench {
namespace {

struct HuntOptions {
  std::string coordinator;
  std::string store = "memory";  // memory | sqlite
  std::string store_dir = "/var/tmp";
  int workers = 1000;
  int bad = 7;  // the slow worker's index
  int channels = 16;
  int max_rounds = 0;  // 0: the whole hunt
  double timeout_s = 3600;
  bool verbose = false;
};

void HuntUsage(FILE* out) {
  std::fputs(
      "usage: load_bench --hunt --coordinator PATH [options]\n"
      "  --workers N      fake workers, one host each (default 1000)\n"
      "  --bad I          the index of the slow worker (default 7)\n"
      "  --store memory|sqlite  the coordinator's store (default memory)\n"
      "  --store-dir DIR  where the SQLite file goes (default /var/tmp)\n"
      "  --channels N     HTTP/2 connections the streams share (default 16)\n"
      "  --max-rounds R   stop (cancel the hunt) after R rounds: the rates of a\n"
      "                   hunt too long to finish here (default 0: all of it)\n"
      "  --timeout S      give up after S seconds (default 3600)\n"
      "  --verbose        echo the coordinator's stderr\n",
      out);
}

bool ParseHuntOptions(int argc, char** argv, HuntOptions* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--hunt") continue;
    if (arg == "--verbose") {
      o->verbose = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "load_bench: %s needs a value\n", arg.c_str());
      return false;
    }
    const std::string value = argv[++i];
    char* end = nullptr;
    if (arg == "--coordinator") {
      o->coordinator = value;
    } else if (arg == "--store") {
      o->store = value;
    } else if (arg == "--store-dir") {
      o->store_dir = value;
    } else if (arg == "--workers") {
      o->workers = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    } else if (arg == "--bad") {
      o->bad = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    } else if (arg == "--max-rounds") {
      o->max_rounds = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    } else if (arg == "--channels") {
      o->channels = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    } else if (arg == "--timeout") {
      o->timeout_s = std::strtod(value.c_str(), &end);
    } else {
      std::fprintf(stderr, "load_bench: unknown argument '%s'\n", arg.c_str());
      return false;
    }
    if (end != nullptr && *end != '\0') {
      std::fprintf(stderr, "load_bench: %s: '%s' is not a number\n", arg.c_str(), value.c_str());
      return false;
    }
  }
  if (o->coordinator.empty() || o->workers < 5 || o->bad < 0 || o->bad >= o->workers ||
      o->channels < 1 || (o->store != "memory" && o->store != "sqlite")) {
    std::fprintf(stderr, "load_bench: --coordinator is required; --workers at least 5; --bad "
                         "one of them; --store memory or sqlite\n");
    return false;
  }
  return true;
}

bool Ended(v1::WorkflowState state) {
  return state == v1::WORKFLOW_SUCCEEDED || state == v1::WORKFLOW_FAILED ||
         state == v1::WORKFLOW_CANCELLED;
}

struct HuntFleet : StreamFleet {
  std::atomic<long> assigned{0};
  std::atomic<long> finished{0};
  std::string bad;  // workers/hunt-BAD
};

// One fake worker: registers; as a launcher it runs each run it is
// assigned at once (RUNNING, its one result, SUCCEEDED).
class FakeWorker final
    : public grpc::ClientBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage> {
 public:
  FakeWorker(HuntFleet* fleet, int index) : fleet_(fleet), noise_(static_cast<unsigned>(index)) {
    FillFakeRegister("hunt", index, outgoing_.emplace_back().mutable_register_());
  }

  void Start(v1::WorkerGateway::Stub* stub) {
    stub->async()->Connect(&context_, this);
    writing_ = true;
    StartWrite(&outgoing_.front());
    StartRead(&incoming_);
    StartCall();
  }

  void Stop() { context_.TryCancel(); }

  // A heartbeat, as a worker sends one every few seconds: a worker that is
  // only ever a peer sends nothing else, and would be marked LOST.
  void Beat() {
    std::lock_guard<std::mutex> lock(mu_);
    outgoing_.emplace_back().mutable_heartbeat()->set_sequence(++beats_);
    WriteNextLocked();
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    outgoing_.pop_front();
    writing_ = false;
    if (ok) WriteNextLocked();
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;
    if (incoming_.has_registered()) {
      fleet_->registered.fetch_add(1);
      fleet_->Wake();
    } else if (incoming_.has_assignment()) {
      Run(incoming_.assignment());
    }
    StartRead(&incoming_);
  }

  void OnDone(const grpc::Status& status) override { fleet_->StreamEnded(status); }

 private:
  void Run(const v1::Assignment& a) {
    fleet_->assigned.fetch_add(1);
    bool slow = false;
    for (const v1::Peer& peer : a.peers()) slow = slow || peer.worker() == fleet_->bad;
    std::uniform_real_distribution<double> jitter(0.95, 1.05);
    std::lock_guard<std::mutex> lock(mu_);
    const double bytes_per_s = 10e9 * jitter(noise_) * (slow ? 1.0 / 3 : 1.0);
    const uint64_t bytes = a.spec().sizes_bytes_size() > 0 ? a.spec().sizes_bytes(0) : 1 << 20;
    const double time_s = static_cast<double>(bytes) / bytes_per_s;
    v1::RunStatus* running = outgoing_.emplace_back().mutable_run_status();
    running->set_run(a.run());
    running->set_state(v1::RUNNING);
    running->set_sizes_total(1);
    running->set_mpi_version("load-bench");
    v1::RunResult* result = outgoing_.emplace_back().mutable_result();
    result->set_run(a.run());
    v1::SizeResult* r = result->mutable_result();
    r->set_sequence(0);
    r->set_operation(a.spec().operation());
    r->set_bytes(bytes);
    r->set_count(bytes);
    r->set_dtype("byte");
    r->set_iters(100);
    r->set_avg_s(time_s);
    r->set_min_s(time_s * 0.9);
    r->set_max_s(time_s * 1.2);
    r->set_p50_s(time_s);
    r->set_p90_s(time_s * 1.05);
    r->set_p99_s(time_s * 1.1);
    r->set_algbw_bytes_per_s(bytes_per_s);
    r->set_busbw_bytes_per_s(bytes_per_s);
    v1::RunStatus* done = outgoing_.emplace_back().mutable_run_status();
    done->set_run(a.run());
    done->set_state(v1::SUCCEEDED);
    done->set_sizes_total(1);
    done->set_results_total(1);
    fleet_->finished.fetch_add(1);
    WriteNextLocked();
  }

  void WriteNextLocked() {
    if (writing_ || outgoing_.empty()) return;
    writing_ = true;
    StartWrite(&outgoing_.front());
  }

  HuntFleet* fleet_;
  std::mt19937 noise_;
  grpc::ClientContext context_;
  std::mutex mu_;
  std::deque<v1::WorkerMessage> outgoing_;
  bool writing_ = false;
  int64_t beats_ = 0;
  v1::CoordinatorMessage incoming_;
};

}  // namespace

int RunHuntBench(int argc, char** argv) {
  HuntOptions o;
  if (!ParseHuntOptions(argc, argv, &o)) {
    HuntUsage(stderr);
    return 2;
  }
  std::string store = ":memory:";
  if (o.store == "sqlite") {
    store = o.store_dir + "/load-bench-hunt-" + std::to_string(getpid()) + ".db";
  }
  CoordinatorProcess coordinator;
  if (!coordinator.Start(o.coordinator, store, 600, o.verbose)) return 1;
  const std::string target = "127.0.0.1:" + std::to_string(coordinator.port());
  HuntFleet fleet;
  fleet.bad = "workers/hunt-" + std::to_string(o.bad);
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<v1::WorkerGateway::Stub>> stubs;
  for (int c = 0; c < o.channels; ++c) {
    channels.push_back(NewChannel(target, c));
    stubs.push_back(v1::WorkerGateway::NewStub(channels.back()));
  }
  std::vector<std::unique_ptr<FakeWorker>> workers;
  const auto register_start = Clock::now();
  for (int i = 0; i < o.workers; ++i) {
    workers.push_back(std::make_unique<FakeWorker>(&fleet, i));
    workers.back()->Start(stubs[i % o.channels].get());
  }
  const bool all_registered =
      fleet.WaitFor(120, [&] { return fleet.registered.load() >= o.workers; });
  std::printf("hunt bench: %d fake workers on %d hosts registered in %.1f s%s\n",
              fleet.registered.load(), o.workers, Seconds(Clock::now() - register_start),
              all_registered ? "" : " (not all)");
  int status = 0;
  auto api = v1::Coordinator::NewStub(NewChannel(target, o.channels));
  v1::CreateWorkflowRequest create;
  create.mutable_spec()->mutable_hunt()->set_pattern("pairwise");
  create.mutable_spec()->mutable_hunt()->add_sizes_bytes(1 << 20);
  v1::Workflow workflow;
  const ProcSample before = SampleProc(coordinator.pid());
  const auto start = Clock::now();
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(600));
    const grpc::Status created = api->CreateWorkflow(&context, create, &workflow);
    if (!created.ok()) {
      std::fprintf(stderr, "load_bench: CreateWorkflow: %s\n", created.error_message().c_str());
      status = 1;
    }
  }
  const double plan_s = Seconds(Clock::now() - start);
  long peak_rss_kb = 0;
  int last_round = 0;
  bool cancelled = false;
  double stopped_s = 0;
  long stopped_runs = 0;
  int stopped_rounds = 0;
  auto last_beat = Clock::now();
  while (status == 0) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    if (Clock::now() - last_beat > std::chrono::seconds(5)) {
      for (auto& w : workers) w->Beat();
      last_beat = Clock::now();
    }
    const ProcSample now = SampleProc(coordinator.pid());
    peak_rss_kb = std::max(peak_rss_kb, now.rss_kb);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    v1::GetWorkflowRequest get;
    get.set_name(workflow.name());
    if (!api->GetWorkflow(&context, get, &workflow).ok()) continue;
    const int round = workflow.cells_size() > 0 ? workflow.cells(0).round() : last_round;
    if (round != last_round && (round % 50 == 0 || round < 3)) {
      std::printf("  round %d: %d of %d runs ended, %.0f s, coordinator %.0f MiB\n", round,
                  workflow.cells_done(), workflow.cells_total(), Seconds(Clock::now() - start),
                  Mib(now.rss_kb));
      std::fflush(stdout);
    }
    last_round = round;
    if (Ended(workflow.state())) break;
    if (o.max_rounds > 0 && round > o.max_rounds && !cancelled) {
      stopped_s = Seconds(Clock::now() - start);
      stopped_runs = workflow.cells_done();
      stopped_rounds = round - 1;
      grpc::ClientContext cancel_context;
      v1::CancelWorkflowRequest cancel;
      cancel.set_name(workflow.name());
      v1::Workflow ignored;
      (void)api->CancelWorkflow(&cancel_context, cancel, &ignored);
      cancelled = true;
    }
    if (Seconds(Clock::now() - start) > o.timeout_s || !coordinator.Alive()) {
      std::fprintf(stderr, "load_bench: the hunt did not end within %.0f s\n", o.timeout_s);
      status = 1;
    }
  }
  double took_s = Seconds(Clock::now() - start);
  const ProcSample after = SampleProc(coordinator.pid());
  if (status == 0) {
    const int n = o.workers;
    long runs = workflow.cells_total();
    int rounds = last_round;
    if (cancelled) {  // the rates over the rounds that ran
      runs = stopped_runs;
      rounds = stopped_rounds;
      took_s = stopped_s;
    }
    std::printf("hunt bench: %s %s in %.1f s (plan and create %.2f s)\n", workflow.name().c_str(),
                v1::WorkflowState_Name(workflow.state()).c_str(), took_s, plan_s);
    std::printf("  pairwise over %d hosts: %d rounds, %ld runs%s (the whole survey: %ld runs in "
                "%d rounds)\n",
                n, rounds, runs, cancelled ? " before it was stopped" : "",
                static_cast<long>(n) * (n - 1) / 2, n % 2 == 0 ? n - 1 : n);
    std::printf("  admitted and completed: %.1f rounds/s, %.0f runs/s\n", rounds / took_s,
                runs / took_s);
    std::printf("  coordinator: %.2f cores over the hunt, peak RSS %.0f MiB (%.0f MiB before)\n",
                (after.cpu_seconds - before.cpu_seconds) / took_s, Mib(peak_rss_kb),
                Mib(before.rss_kb));
    if (cancelled) {
      std::printf("  stopped after %d rounds (--max-rounds): no verdict\n", rounds);
    }
    if (!cancelled) {
      int confirmed = 0;
      bool named = false;
      for (const v1::HuntSuspect& s : workflow.output().hunt().suspects()) {
        if (s.verdict() == "CONFIRMED_BAD") {
          ++confirmed;
          named = named || s.worker() == fleet.bad;
        }
      }
      std::printf("  verdict: %s CONFIRMED_BAD %s, %d CONFIRMED_BAD in all, %d suspects\n",
                  fleet.bad.c_str(), named ? "yes" : "NO", confirmed,
                  workflow.output().hunt().suspects_size());
    }
    if (workflow.state() != v1::WORKFLOW_SUCCEEDED && !cancelled) {
      std::printf("  error: %s\n", workflow.error().c_str());
    }
  }
  fleet.tearing_down = true;
  for (auto& w : workers) w->Stop();
  fleet.WaitFor(30, [&] { return fleet.done.load() >= o.workers; });
  std::printf("  coordinator %s\n", coordinator.Stop().c_str());
  if (o.store == "sqlite") std::remove(store.c_str());
  return status;
}

}  // namespace collbench::load_bench
