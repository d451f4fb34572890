// SPDX-License-Identifier: Apache-2.0
// load_bench: how one coordinator holds up under a fleet's worth of
// streams. One process plays every client:
//
//   * starts collbench-coordinator as a separate process (so its CPU and
//     memory are its own) on 127.0.0.1 with a free port and a fresh store
//     (a temporary SQLite file, or :memory:);
//   * opens --workers WorkerGateway.Connect streams spread over --channels
//     HTTP/2 connections (gRPC callback API: no thread per stream); each
//     registers as workers/load-N and then heartbeats every
//     --heartbeat-ms, the fleet staggered evenly over the interval;
//   * creates --runs runs and opens one WatchRun stream on each;
//   * with --watchers N, opens N more watchers spread over the runs, half
//     WatchRun streams and half SSE watches (GET /v1/runs/{id}:watch on
//     the coordinator's HTTP listener), and reports how many got events
//     and stayed open (bench/load/watch_swarm.h);
//   * after a warm-up, for --seconds issues unary calls at a steady
//     --rate (open loop: a slow answer does not delay the next call), a mix
//     of GetRun, ListRuns (page_size 50), ListWorkers and GetWorker, and
//     records each call's latency;
//   * reads the coordinator's /proc/PID/stat (utime+stime) at both ends of
//     that window and its VmRSS/VmHWM, then checks that every worker is
//     still connected and none was marked LOST.
//
// It prints a summary with PASS / ABOVE TARGET for the two targets (p99 of
// unary calls < 20 ms, coordinator CPU < 0.5 core). Like every benchmark
// here it reports numbers and exits 0 whatever they are; it exits non-zero
// only when it could not run (no coordinator, streams refused).
//
//   load_bench --coordinator build/bin/collbench-coordinator [--store both]
//
// With --results it measures the result path instead (results_bench.h):
//
//   load_bench --results --coordinator build/bin/collbench-coordinator
//
// With --hunt, a pairwise hunt over fake workers (hunt_bench.h):
//
//   load_bench --hunt --workers 1000 --coordinator build/bin/collbench-coordinator
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "collbench/v1/coordinator.grpc.pb.h"
#include "collbench/v1/gateway.grpc.pb.h"
#include "bench/load/load_common.h"
#include "bench/load/hunt_bench.h"
#include "bench/load/results_bench.h"
#include "bench/load/watch_swarm.h"

namespace {

using namespace collbench::load_bench;  // NOLINT: the bench's own helpers

constexpr double kTargetP99Ms = 20.0;
constexpr double kTargetCores = 0.5;

// ---------------------------------------------------------------------------
// Options

struct Options {
  std::string coordinator;  // path of collbench-coordinator
  std::string store = "sqlite";  // sqlite | memory | both
  int workers = 1000;
  int channels = 16;
  int heartbeat_ms = 1000;
  int runs = 100;
  int watchers = 0;  // more watchers, gRPC and SSE mixed
  std::string runs_mode = "scheduled";  // scheduled | queued
  double rate = 50;      // unary calls per second
  double seconds = 30;   // measurement window
  double warmup = 5;     // after everything is connected
  int heartbeat_timeout_s = 6;
  int stop_grace_s = 5;  // SIGTERM, then SIGKILL after this long
  double disconnect_wait_s = 30;  // for the fleet to be marked LOST at the end
  // Relative weights of GetRun, ListRuns, ListWorkers, GetWorker.
  int mix[4] = {4, 2, 2, 2};
  bool verbose = false;
};

void Usage(FILE* out) {
  std::fputs(
      "usage: load_bench --coordinator PATH [options]\n"
      "  --coordinator PATH      collbench-coordinator binary (required)\n"
      "  --store sqlite|memory|both   store of the coordinator (default sqlite)\n"
      "  --workers N             Connect streams, one worker each (default 1000)\n"
      "  --channels N            HTTP/2 connections the streams share (default 16)\n"
      "  --heartbeat-ms N        heartbeat interval per worker (default 1000)\n"
      "  --runs N                runs created, one WatchRun stream each (default 100)\n"
      "  --watchers N            N more watchers over the runs, every other one an SSE\n"
      "                          watch on the coordinator's HTTP listener (default 0)\n"
      "  --runs-mode M           scheduled: each run takes one worker and stays\n"
      "                          SCHEDULED (the fake launcher never answers);\n"
      "                          queued: one run scheduled, the others ask for every\n"
      "                          slot and wait in the queue (default scheduled)\n"
      "  --rate R                unary calls per second in the window (default 50)\n"
      "  --seconds S             measurement window (default 30)\n"
      "  --warmup S              settle time before the window (default 5)\n"
      "  --heartbeat-timeout S   passed to the coordinator (default 6)\n"
      "  --disconnect-wait S     at the end, wait this long for every worker to be\n"
      "                          marked LOST after the streams close (default 30)\n"
      "  --stop-grace S          SIGKILL the coordinator this long after SIGTERM (default 5)\n"
      "  --mix A,B,C,D           weights of GetRun, ListRuns, ListWorkers, GetWorker\n"
      "                          (default 4,2,2,2)\n"
      "  --verbose               echo the coordinator's stderr\n",
      out);
}

bool ParseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    const size_t eq = arg.find('=');
    bool has_value = false;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    auto next = [&]() -> bool {
      if (has_value) return true;
      if (i + 1 >= argc) {
        std::fprintf(stderr, "load_bench: %s needs a value\n", arg.c_str());
        return false;
      }
      value = argv[++i];
      return true;
    };
    auto as_int = [&](int* target) {
      if (!next()) return false;
      char* end = nullptr;
      const long v = std::strtol(value.c_str(), &end, 10);
      if (end == value.c_str() || *end != '\0' || v < 0) {
        std::fprintf(stderr, "load_bench: %s: '%s' is not a count\n", arg.c_str(), value.c_str());
        return false;
      }
      *target = static_cast<int>(v);
      return true;
    };
    auto as_double = [&](double* target) {
      if (!next()) return false;
      char* end = nullptr;
      const double v = std::strtod(value.c_str(), &end);
      if (end == value.c_str() || *end != '\0' || v < 0) {
        std::fprintf(stderr, "load_bench: %s: '%s' is not a number\n", arg.c_str(), value.c_str());
        return false;
      }
      *target = v;
      return true;
    };
    bool ok = true;
    if (arg == "--help" || arg == "-h") {
      Usage(stdout);
      std::exit(0);
    } else if (arg == "--coordinator") {
      ok = next() && (o->coordinator = value, true);
    } else if (arg == "--store") {
      ok = next() && (o->store = value, true);
      if (ok && o->store != "sqlite" && o->store != "memory" && o->store != "both") {
        std::fprintf(stderr, "load_bench: --store: sqlite, memory or both\n");
        ok = false;
      }
    } else if (arg == "--workers") {
      ok = as_int(&o->workers);
    } else if (arg == "--channels") {
      ok = as_int(&o->channels);
    } else if (arg == "--heartbeat-ms") {
      ok = as_int(&o->heartbeat_ms);
    } else if (arg == "--runs") {
      ok = as_int(&o->runs);
    } else if (arg == "--watchers") {
      ok = as_int(&o->watchers);
    } else if (arg == "--runs-mode") {
      ok = next() && (o->runs_mode = value, true);
      if (ok && o->runs_mode != "scheduled" && o->runs_mode != "queued") {
        std::fprintf(stderr, "load_bench: --runs-mode: scheduled or queued\n");
        ok = false;
      }
    } else if (arg == "--rate") {
      ok = as_double(&o->rate);
    } else if (arg == "--seconds") {
      ok = as_double(&o->seconds);
    } else if (arg == "--warmup") {
      ok = as_double(&o->warmup);
    } else if (arg == "--heartbeat-timeout") {
      ok = as_int(&o->heartbeat_timeout_s);
    } else if (arg == "--disconnect-wait") {
      ok = as_double(&o->disconnect_wait_s);
    } else if (arg == "--stop-grace") {
      ok = as_int(&o->stop_grace_s);
    } else if (arg == "--mix") {
      if (!next()) return false;
      int w[4];
      char tail = 0;
      if (std::sscanf(value.c_str(), "%d,%d,%d,%d%c", &w[0], &w[1], &w[2], &w[3], &tail) != 4 ||
          std::min({w[0], w[1], w[2], w[3]}) < 0 || w[0] + w[1] + w[2] + w[3] == 0) {
        std::fprintf(stderr, "load_bench: --mix: four weights, e.g. 4,2,2,2\n");
        return false;
      }
      std::copy(w, w + 4, o->mix);
    } else if (arg == "--verbose") {
      o->verbose = true;
    } else {
      std::fprintf(stderr, "load_bench: unknown argument '%s'\n", argv[i]);
      ok = false;
    }
    if (!ok) return false;
  }
  if (o->coordinator.empty()) {
    std::fprintf(stderr, "load_bench: --coordinator PATH is required\n");
    return false;
  }
  if (o->workers < 1 || o->channels < 1 || o->heartbeat_ms < 1 || o->rate <= 0 ||
      o->seconds <= 0) {
    std::fprintf(stderr, "load_bench: --workers, --channels, --heartbeat-ms, --rate and "
                         "--seconds must be positive\n");
    return false;
  }
  if (o->runs_mode == "scheduled" && o->runs > o->workers) {
    std::fprintf(stderr, "load_bench: scheduled runs take one worker each: --runs <= --workers\n");
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Fleet: counters shared by the streams

struct Fleet : StreamFleet {
  std::atomic<int> broken{0};  // streams that failed before the teardown
  std::atomic<long> heartbeats_sent{0};
  std::atomic<long> heartbeats_skipped{0};  // previous write still pending
  std::atomic<long> write_failures{0};
  std::atomic<long> assignments{0};
  std::atomic<long> run_tokens{0};
  std::atomic<long> other_messages{0};
  std::vector<double> register_ms;  // Register sent -> Registered received (under mu)
};

// One simulated worker: a Connect stream that registers, then heartbeats
// when the fleet's heartbeat thread says so.
class FakeWorker final : public grpc::ClientBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage> {
 public:
  FakeWorker(Fleet* fleet, int index) : fleet_(fleet) {
    FillFakeRegister("load", index, register_.mutable_register_());
  }

  void Start(v1::WorkerGateway::Stub* stub) {
    stub->async()->Connect(&context_, this);
    writing_ = true;
    started_ = Clock::now();
    StartWrite(&register_);
    StartRead(&incoming_);
    AddHold();  // heartbeats are written from outside the reactions
    StartCall();
  }

  // From the heartbeat thread only.
  void Heartbeat() {
    if (failed_.load()) return;
    if (writing_.exchange(true)) {
      fleet_->heartbeats_skipped.fetch_add(1);
      return;
    }
    heartbeat_.mutable_heartbeat()->set_sequence(++sequence_);
    fleet_->heartbeats_sent.fetch_add(1);
    StartWrite(&heartbeat_);
  }

  // Ends the stream; OnDone follows.
  void Stop() {
    context_.TryCancel();
    RemoveHold();
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      fleet_->write_failures.fetch_add(1);
      failed_ = true;
    }
    writing_ = false;
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      if (!failed_.exchange(true) && !fleet_->tearing_down.load()) fleet_->broken.fetch_add(1);
      return;
    }
    switch (incoming_.message_case()) {
      case v1::CoordinatorMessage::kRegistered: {
        const double ms = Millis(Clock::now() - started_);
        {
          std::lock_guard<std::mutex> lock(fleet_->mu);
          fleet_->register_ms.push_back(ms);
        }
        fleet_->registered.fetch_add(1);
        fleet_->Wake();
        break;
      }
      case v1::CoordinatorMessage::kAssignment:
        fleet_->assignments.fetch_add(1);
        break;
      case v1::CoordinatorMessage::kRunToken:
        fleet_->run_tokens.fetch_add(1);
        break;
      default:
        fleet_->other_messages.fetch_add(1);
        break;
    }
    StartRead(&incoming_);
  }

  void OnDone(const grpc::Status& status) override { fleet_->StreamEnded(status); }

  bool failed() const { return failed_.load(); }

 private:
  Fleet* const fleet_;
  grpc::ClientContext context_;
  v1::WorkerMessage register_;
  v1::WorkerMessage heartbeat_;
  v1::CoordinatorMessage incoming_;
  std::atomic<bool> writing_{false};
  std::atomic<bool> failed_{false};
  int64_t sequence_ = 0;
  Clock::time_point started_;
};

// One WatchRun stream.
class Watcher final : public grpc::ClientReadReactor<v1::RunEvent> {
 public:
  explicit Watcher(Fleet* fleet) : fleet_(fleet) {}

  void Start(v1::Coordinator::Stub* stub, const std::string& run) {
    request_.set_name(run);
    stub->async()->WatchRun(&context_, &request_, this);
    StartRead(&event_);
    StartCall();
  }
  void Stop() { context_.TryCancel(); }

  void OnReadDone(bool ok) override {
    if (!ok) return;
    events_.fetch_add(1);
    fleet_->Wake();
    StartRead(&event_);
  }
  void OnDone(const grpc::Status& status) override {
    if (!fleet_->tearing_down.load()) {
      ended_early_ = true;
      fleet_->Note("WatchRun " + request_.name() + " ended: " +
                   std::to_string(status.error_code()) + " " + status.error_message());
    }
    done_ = true;
    fleet_->Wake();
  }

  long events() const { return events_.load(); }
  bool done() const { return done_.load(); }
  bool ended_early() const { return ended_early_.load(); }

 private:
  Fleet* const fleet_;
  grpc::ClientContext context_;
  v1::WatchRunRequest request_;
  v1::RunEvent event_;
  std::atomic<long> events_{0};
  std::atomic<bool> done_{false};
  std::atomic<bool> ended_early_{false};
};


struct RoundResult {
  bool ran = false;
  double p99_ms = 0;
  double cores = 0;
};

// Every worker, over all pages (a page holds at most 1,000). False, with
// the error, when a call failed.
bool ListAllWorkers(v1::Coordinator::Stub* api, std::chrono::system_clock::time_point deadline,
                    std::vector<v1::Worker>* workers, std::string* error) {
  workers->clear();
  std::string token;
  do {
    v1::ListWorkersRequest request;
    request.set_page_size(1000);
    request.set_page_token(token);
    v1::ListWorkersResponse response;
    grpc::ClientContext context;
    context.set_deadline(deadline);
    const grpc::Status status = api->ListWorkers(&context, request, &response);
    if (!status.ok()) {
      *error = status.error_message();
      return false;
    }
    for (v1::Worker& w : *response.mutable_workers()) workers->push_back(std::move(w));
    token = response.next_page_token();
  } while (!token.empty());
  return true;
}

v1::RunSpec LoadRunSpec(int ranks) {
  v1::RunSpec spec;
  spec.set_operation("allreduce");
  spec.add_sizes_bytes(1024);
  spec.set_iters(10);
  spec.set_ranks(ranks);
  spec.mutable_placement()->set_policy(v1::PACK);
  spec.mutable_timeout()->set_seconds(3600);
  (*spec.mutable_labels())["purpose"] = "load-bench";
  return spec;
}

void PrintLatencyRow(const char* name, std::vector<double> v, long errors) {
  std::sort(v.begin(), v.end());
  std::printf("  %-16s %7zu %6ld %8.2f %8.2f %8.2f %8.2f\n", name, v.size(), errors,
              Percentile(v, 50), Percentile(v, 90), Percentile(v, 99),
              v.empty() ? 0.0 : v.back());
}

RoundResult RunRound(const Options& o, const std::string& store_kind) {
  RoundResult result;
  std::string temp_dir;
  std::string store = ":memory:";
  if (store_kind == "sqlite") {
    char dir_template[] = "/tmp/collbench-load-XXXXXX";
    if (mkdtemp(dir_template) == nullptr) {
      std::fprintf(stderr, "load_bench: mkdtemp: %s\n", std::strerror(errno));
      return result;
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

  std::printf("\n=== load_bench: store %s (%s), %d workers, %d channels, %d runs (%s), "
              "%.0f unary calls/s for %.0f s ===\n",
              store_kind.c_str(), store.c_str(), o.workers, o.channels, o.runs,
              o.runs_mode.c_str(), o.rate, o.seconds);
  std::fflush(stdout);
  const std::string load_at_start = LoadAverage();

  CoordinatorProcess coordinator;
  if (!coordinator.Start(o.coordinator, store, o.heartbeat_timeout_s, o.verbose)) {
    return result;
  }
  const pid_t pid = coordinator.pid();
  const std::string target = "127.0.0.1:" + std::to_string(coordinator.port());
  const ProcSample at_start = SampleProc(pid);
  const auto t_start = Clock::now();

  // --- Connect streams -----------------------------------------------------
  Fleet fleet;
  fleet.register_ms.reserve(o.workers);
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<v1::WorkerGateway::Stub>> gateway_stubs;
  for (int c = 0; c < o.channels; ++c) {
    channels.push_back(NewChannel(target, c));
    gateway_stubs.push_back(v1::WorkerGateway::NewStub(channels.back()));
  }
  auto api_channel = NewChannel(target, o.channels);
  auto api = v1::Coordinator::NewStub(api_channel);

  std::vector<std::unique_ptr<FakeWorker>> workers;
  workers.reserve(o.workers);
  for (int i = 0; i < o.workers; ++i) {
    workers.push_back(std::make_unique<FakeWorker>(&fleet, i));
    workers.back()->Start(gateway_stubs[i % o.channels].get());
  }

  // Heartbeats: the k-th heartbeat of the fleet is due at k * interval / N,
  // going round the workers in order, so each worker beats once per
  // interval and the fleet's beats are spread evenly.
  std::atomic<bool> stop_heartbeats{false};
  std::thread heartbeat_thread([&] {
    const auto start = Clock::now();
    const double per_beat_s = o.heartbeat_ms / 1000.0 / o.workers;
    long issued = 0;
    while (!stop_heartbeats.load()) {
      const long due = static_cast<long>(Seconds(Clock::now() - start) / per_beat_s);
      for (; issued < due; ++issued) workers[issued % o.workers]->Heartbeat();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });

  const bool all_registered =
      fleet.WaitFor(120, [&] { return fleet.registered.load() >= o.workers; });
  const double ramp_s = Seconds(Clock::now() - t_start);
  const ProcSample after_ramp = SampleProc(pid);
  if (!all_registered) {
    std::printf("only %d of %d workers registered within 120 s\n", fleet.registered.load(),
                o.workers);
  }

  // --- Runs and watchers -----------------------------------------------------
  std::vector<std::string> run_names;
  std::vector<double> create_ms;
  std::string create_error;
  for (int r = 0; r < o.runs; ++r) {
    v1::CreateRunRequest request;
    const int ranks = (o.runs_mode == "queued" && r > 0) ? o.workers : 1;
    *request.mutable_spec() = LoadRunSpec(ranks);
    request.set_request_id("load-bench-" + std::to_string(r));
    v1::Run run;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    const auto t0 = Clock::now();
    const grpc::Status status = api->CreateRun(&context, request, &run);
    create_ms.push_back(Millis(Clock::now() - t0));
    if (!status.ok()) {
      if (create_error.empty()) create_error = status.error_message();
      continue;
    }
    run_names.push_back(run.name());
  }
  if (!create_error.empty()) {
    std::printf("CreateRun failed for %d of %d runs: %s\n",
                o.runs - static_cast<int>(run_names.size()), o.runs, create_error.c_str());
  }
  std::vector<std::unique_ptr<Watcher>> watchers;
  for (const std::string& run : run_names) {
    watchers.push_back(std::make_unique<Watcher>(&fleet));
    watchers.back()->Start(api.get(), run);
  }
  // Each watcher first gets the run's current state.
  fleet.WaitFor(30, [&] {
    for (const auto& w : watchers) {
      if (w->events() == 0) return false;
    }
    return true;
  });
  // The extra watchers: every other one an SSE watch.
  collbench::bench::WatchSwarm swarm(target, "127.0.0.1", coordinator.http_port(), 8);
  double swarm_open_s = 0;
  if (o.watchers > 0 && !run_names.empty()) {
    const auto s_start = Clock::now();
    for (int i = 0; i < o.watchers; ++i) {
      const std::string& run = run_names[i % run_names.size()];
      std::string error;
      if (i % 2 == 0) {
        swarm.AddGrpc(run, "");
      } else if (!swarm.AddSse(run, "", &error)) {
        std::printf("SSE watcher %d: %s\n", i, error.c_str());
        break;
      }
    }
    swarm.WaitFor(60, [](const std::vector<collbench::bench::WatcherReport>& all) {
      for (const auto& r : all) {
        if (r.events() == 0 && !r.ended) return false;
      }
      return true;
    });
    swarm_open_s = Seconds(Clock::now() - s_start);
  }
  const double setup_s = Seconds(Clock::now() - t_start);

  // --- Warm-up, then the window ---------------------------------------------
  std::this_thread::sleep_for(duration<double>(o.warmup));
  const long beats_before = fleet.heartbeats_sent.load();
  const long skipped_before = fleet.heartbeats_skipped.load();
  const ProcSample window_start = SampleProc(pid);
  const double self_cpu_start = ProcessCpuSeconds();
  const auto w_start = Clock::now();

  UnaryStats unary;
  std::mt19937 random(12345);
  std::vector<long> rss_samples_kb;
  {
    std::vector<Method> mix;
    for (int m = 0; m < kMethods; ++m) mix.insert(mix.end(), o.mix[m], static_cast<Method>(m));
    const long calls = static_cast<long>(o.rate * o.seconds);
    auto next_sample = w_start;
    for (long k = 0; k < calls; ++k) {
      const auto due = w_start + std::chrono::duration_cast<Clock::duration>(
                                     duration<double>(static_cast<double>(k) / o.rate));
      while (Clock::now() < due) {
        if (Clock::now() >= next_sample) {
          rss_samples_kb.push_back(SampleProc(pid).rss_kb);
          next_sample += std::chrono::seconds(1);
        }
        std::this_thread::sleep_until(std::min(due, next_sample));
      }
      const Method method = mix[random() % mix.size()];
      const std::string& run = run_names.empty() ? std::string("runs/none")
                                                 : run_names[random() % run_names.size()];
      const std::string worker = "workers/load-" + std::to_string(random() % o.workers);
      Issue(api.get(), &unary, method, run, worker);
    }
    const auto w_end_due = w_start + std::chrono::duration_cast<Clock::duration>(
                                         duration<double>(o.seconds));
    std::this_thread::sleep_until(w_end_due);
  }
  const auto w_end = Clock::now();
  const ProcSample window_end = SampleProc(pid, /*count_sockets=*/true);
  const double self_cpu_end = ProcessCpuSeconds();
  const long beats_in_window = fleet.heartbeats_sent.load() - beats_before;
  const long skipped_in_window = fleet.heartbeats_skipped.load() - skipped_before;
  const std::string load_at_end = LoadAverage();
  // Let the last calls finish (outside the window: they do not count
  // towards CPU, but their latencies do).
  for (int i = 0; i < 1000 && unary.in_flight.load() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  // --- Final checks ----------------------------------------------------------
  int ready = 0, busy = 0, lost = 0, draining = 0, other = 0, listed = 0;
  double oldest_heartbeat_s = 0;
  std::string list_error;
  {
    const auto now = std::chrono::system_clock::now();
    std::vector<v1::Worker> all;
    ListAllWorkers(api.get(), now + std::chrono::seconds(30), &all, &list_error);
    for (const v1::Worker& w : all) {
      if (w.name().rfind("workers/load-", 0) != 0) continue;
      ++listed;
      switch (w.state()) {
        case v1::READY: ++ready; break;
        case v1::BUSY: ++busy; break;
        case v1::LOST: ++lost; break;
        case v1::DRAINING: ++draining; break;
        default: ++other; break;
      }
      if (w.state() != v1::LOST) {
        const auto beat = std::chrono::system_clock::time_point(
            std::chrono::duration_cast<std::chrono::system_clock::duration>(
                std::chrono::seconds(w.last_heartbeat_time().seconds()) +
                std::chrono::nanoseconds(w.last_heartbeat_time().nanos())));
        oldest_heartbeat_s = std::max(oldest_heartbeat_s, duration<double>(now - beat).count());
      }
    }
  }
  int run_states[8] = {};
  for (const std::string& name : run_names) {
    v1::GetRunRequest request;
    request.set_name(name);
    v1::Run run;
    grpc::ClientContext context;
    if (api->GetRun(&context, request, &run).ok() && run.state() >= 0 && run.state() < 8) {
      ++run_states[run.state()];
    }
  }
  int streams_open = 0;
  for (const auto& w : workers) streams_open += w->failed() ? 0 : 1;
  int watchers_open = 0;
  long watch_events = 0;
  for (const auto& w : watchers) {
    watchers_open += w->done() ? 0 : 1;
    watch_events += w->events();
  }
  const bool coordinator_alive = coordinator.Alive();
  int swarm_grpc = 0, swarm_sse = 0, swarm_with_events = 0, swarm_open = 0;
  long swarm_events = 0;
  std::string swarm_first_end;
  for (const collbench::bench::WatcherReport& r : swarm.Snapshot()) {
    (r.sse ? swarm_sse : swarm_grpc) += 1;
    swarm_with_events += r.events() > 0;
    swarm_open += !r.ended;
    swarm_events += r.events();
    if (r.ended && swarm_first_end.empty()) {
      swarm_first_end = (r.sse ? "SSE " : "gRPC ") + r.end_code + " " + r.end_message;
    }
  }

  // --- Teardown --------------------------------------------------------------
  fleet.tearing_down = true;
  swarm.Stop();
  stop_heartbeats = true;
  heartbeat_thread.join();
  for (auto& w : workers) w->Stop();
  for (auto& w : watchers) w->Stop();
  const bool all_done = fleet.WaitFor(30, [&] {
    if (fleet.done.load() < o.workers) return false;
    for (const auto& w : watchers) {
      if (!w->done()) return false;
    }
    return true;
  });
  // The coordinator notices each closed stream: how long until it has
  // marked the whole fleet LOST (a disconnect storm, as after a network
  // partition).
  const auto disconnect_start = Clock::now();
  double all_lost_after_s = -1;
  int lost_seen = 0;
  while (Seconds(Clock::now() - disconnect_start) < o.disconnect_wait_s) {
    // Every page: a page holds at most 1,000 workers, and counting only the
    // first would never see more than 1,000 LOST.
    std::vector<v1::Worker> all;
    std::string error;
    if (ListAllWorkers(api.get(), std::chrono::system_clock::now() + std::chrono::seconds(10),
                       &all, &error)) {
      lost_seen = 0;
      for (const v1::Worker& w : all) lost_seen += w.state() == v1::LOST;
      if (lost_seen >= o.workers) {
        all_lost_after_s = Seconds(Clock::now() - disconnect_start);
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string how_stopped = coordinator.Stop(o.stop_grace_s);
  if (!all_done) {
    // Streams still referenced by gRPC: leak them rather than free memory
    // in use.
    for (auto& w : workers) w.release();
    for (auto& w : watchers) w.release();
  }

  // --- Report ----------------------------------------------------------------
  const double window_s = Seconds(w_end - w_start);
  const double cpu_s = window_end.cpu_seconds - window_start.cpu_seconds;
  const double cores = cpu_s / window_s;
  const double ramp_cpu_s = after_ramp.cpu_seconds - at_start.cpu_seconds;
  std::vector<double> all_ms;
  long all_errors = 0;
  for (int m = 0; m < kMethods; ++m) {
    all_ms.insert(all_ms.end(), unary.latency_ms[m].begin(), unary.latency_ms[m].end());
    all_errors += unary.errors[m];
  }
  std::sort(all_ms.begin(), all_ms.end());
  std::vector<double> register_ms = fleet.register_ms;
  std::sort(register_ms.begin(), register_ms.end());
  std::sort(create_ms.begin(), create_ms.end());
  long rss_min = window_start.rss_kb, rss_max = window_start.rss_kb;
  for (long kb : rss_samples_kb) {
    rss_min = std::min(rss_min, kb);
    rss_max = std::max(rss_max, kb);
  }

  std::printf("host: %u CPUs; load average %s at start, %s at end of the window\n",
              std::thread::hardware_concurrency(), load_at_start.c_str(), load_at_end.c_str());
  std::printf("setup: %d/%d workers registered in %.2f s (Registered after p50 %.1f ms, "
              "p99 %.1f ms, max %.1f ms; coordinator CPU %.2f s)\n",
              fleet.registered.load(), o.workers, ramp_s, Percentile(register_ms, 50),
              Percentile(register_ms, 99), register_ms.empty() ? 0.0 : register_ms.back(),
              ramp_cpu_s);
  std::printf("       %zu/%d runs created (CreateRun p50 %.1f ms, max %.1f ms), %zu WatchRun "
              "streams; everything up after %.2f s, then %.0f s warm-up\n",
              run_names.size(), o.runs, Percentile(create_ms, 50),
              create_ms.empty() ? 0.0 : create_ms.back(), watchers.size(), setup_s, o.warmup);
  std::printf("window: %.1f s, %zu unary calls answered, %ld failed (mix GetRun:ListRuns:"
              "ListWorkers:GetWorker %d:%d:%d:%d)\n",
              window_s, all_ms.size(), all_errors, o.mix[0], o.mix[1], o.mix[2], o.mix[3]);
  if (!unary.first_error.empty()) std::printf("  first failure: %s\n", unary.first_error.c_str());
  std::printf("\n  unary latency ms   calls errors      p50      p90      p99      max\n");
  for (int m = 0; m < kMethods; ++m) {
    PrintLatencyRow(kMethodNames[m], unary.latency_ms[m], unary.errors[m]);
  }
  PrintLatencyRow("all", all_ms, all_errors);
  std::printf("\ncoordinator (pid %d, alone in its process):\n", static_cast<int>(pid));
  std::printf("  CPU     %.3f cores (%.2f s user+sys over %.1f s)\n", cores, cpu_s, window_s);
  std::printf("  memory  VmRSS %.1f MiB at end (%.1f..%.1f MiB sampled each second in the "
              "window), VmHWM %.1f MiB\n",
              Mib(window_end.rss_kb), Mib(rss_min), Mib(rss_max), Mib(window_end.hwm_kb));
  std::printf("  VmRSS every 10 s of the window, MiB:");
  for (size_t i = 0; i < rss_samples_kb.size(); i += 10) std::printf(" %.1f", Mib(rss_samples_kb[i]));
  std::printf(" %.1f\n", Mib(window_end.rss_kb));
  std::printf("  threads %d, sockets %d; %d stderr lines; stopped: %s\n", window_end.threads,
              window_end.sockets, coordinator.stderr_lines(), how_stopped.c_str());
  std::printf("load_bench itself: %.3f cores in the window\n",
              (self_cpu_end - self_cpu_start) / window_s);
  const double expected_beats = window_s * 1000.0 / o.heartbeat_ms * o.workers;
  std::printf("heartbeats in the window: %ld sent (%.0f expected), %ld skipped (previous write "
              "still pending), %ld write failures overall\n",
              beats_in_window, expected_beats, skipped_in_window, fleet.write_failures.load());
  std::printf("worker streams: %d/%d open at the end, %d broke; down the streams: %ld "
              "assignments, %ld run tokens, %ld other\n",
              streams_open, o.workers, fleet.broken.load(), fleet.assignments.load(),
              fleet.run_tokens.load(), fleet.other_messages.load());
  if (list_error.empty()) {
    std::printf("ListWorkers at the end: %d load workers: %d READY, %d BUSY, %d DRAINING, "
                "%d LOST, %d other; oldest heartbeat %.2f s ago\n",
                listed, ready, busy, draining, lost, other, oldest_heartbeat_s);
  } else {
    std::printf("ListWorkers at the end failed: %s\n", list_error.c_str());
  }
  if (all_lost_after_s >= 0) {
    std::printf("disconnect storm: all %d streams closed; the coordinator had marked every "
                "worker LOST after %.2f s\n", o.workers, all_lost_after_s);
  } else {
    std::printf("disconnect storm: all %d streams closed; after %.0f s only %d workers were "
                "marked LOST\n", o.workers, o.disconnect_wait_s, lost_seen);
  }
  std::printf("runs at the end: %d QUEUED, %d SCHEDULED, %d RUNNING, %d FAILED, %d other; "
              "WatchRun streams open %d/%zu (%ld events)\n",
              run_states[v1::QUEUED], run_states[v1::SCHEDULED], run_states[v1::RUNNING],
              run_states[v1::FAILED],
              run_states[v1::SUCCEEDED] + run_states[v1::CANCELLED] + run_states[0],
              watchers_open, watchers.size(), watch_events);
  if (o.watchers > 0) {
    std::printf("extra watchers: %d gRPC + %d SSE opened in %.2f s; %d got events (%ld in all), "
                "%d still open at the end of the window%s%s\n",
                swarm_grpc, swarm_sse, swarm_open_s, swarm_with_events, swarm_events, swarm_open,
                swarm_first_end.empty() ? "" : "; first to end: ", swarm_first_end.c_str());
  }
  for (const std::string& e : fleet.first_errors) std::printf("  stream error: %s\n", e.c_str());
  if (!coordinator_alive) std::printf("THE COORDINATOR DIED during the benchmark\n");
  const auto tail = coordinator.StderrTail();
  if (tail.size() > 1) {
    std::printf("coordinator stderr (last lines):\n");
    for (const std::string& l : tail) std::printf("  %s\n", l.c_str());
  }

  const double p99 = Percentile(all_ms, 99);
  const bool healthy = streams_open == o.workers && lost == 0 && listed == o.workers &&
                       watchers_open == static_cast<int>(watchers.size()) &&
                       swarm_with_events == swarm_grpc + swarm_sse &&
                       swarm_open == swarm_grpc + swarm_sse;
  std::printf("\n  %-34s %s (p99 %.2f ms)\n", "target p99 unary latency < 20 ms:",
              p99 < kTargetP99Ms && all_errors == 0 ? "PASS" : "ABOVE TARGET", p99);
  std::printf("  %-34s %s (%.3f cores)\n", "target coordinator CPU < 0.5 core:",
              cores < kTargetCores ? "PASS" : "ABOVE TARGET", cores);
  std::printf("  %-34s %s\n", "all streams up, no worker LOST:", healthy ? "YES" : "NO");
  std::fflush(stdout);
  result.ran = true;
  result.p99_ms = p99;
  result.cores = cores;
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--results") == 0) {
      return collbench::load_bench::RunResultsBench(argc, argv);
    }
    if (std::strcmp(argv[i], "--hunt") == 0) {
      return collbench::load_bench::RunHuntBench(argc, argv);
    }
  }
  Options options;
  if (!ParseOptions(argc, argv, &options)) {
    Usage(stderr);
    return 2;
  }
  std::vector<std::string> stores;
  if (options.store == "both") {
    stores = {"sqlite", "memory"};
  } else {
    stores = {options.store};
  }
  bool ran_all = true;
  for (const std::string& store : stores) ran_all &= RunRound(options, store).ran;
  return ran_all ? 0 : 1;
}
