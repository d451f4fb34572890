// SPDX-License-Identifier: Apache-2.0
// What load_bench's modes share: a coordinator started as a child process,
// /proc samples of it, percentiles, channels and open-loop unary API calls.
//
// Thread safety: CoordinatorProcess is used from one thread (its stderr
// is drained on its own thread); UnaryStats is shared by the calls'
// completions under its mutex.
#ifndef COLLBENCH_BENCH_LOAD_LOAD_COMMON_H_
#define COLLBENCH_BENCH_LOAD_LOAD_COMMON_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "collbench/v1/coordinator.grpc.pb.h"
#include "collbench/v1/gateway.pb.h"

namespace collbench::load_bench {

namespace v1 = collbench::v1;
using Clock = std::chrono::steady_clock;
using std::chrono::duration;

// ---------------------------------------------------------------------------
// Small helpers

inline double Seconds(Clock::duration d) { return duration<double>(d).count(); }
inline double Millis(Clock::duration d) { return duration<double, std::milli>(d).count(); }

// p in [0, 100] of sorted values (nearest rank).
inline double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

inline std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

inline double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

// What /proc says about the coordinator process.
struct ProcSample {
  bool ok = false;
  double cpu_seconds = 0;  // utime + stime
  long rss_kb = 0;
  long hwm_kb = 0;
  int threads = 0;
  int sockets = 0;
};

inline ProcSample SampleProc(pid_t pid, bool count_sockets = false) {
  ProcSample s;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return s;
  // The command name is in parentheses and may hold spaces: fields after
  // the last ')' start with field 3 (state).
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return s;
  std::istringstream fields(line.substr(close + 2));
  std::vector<std::string> f;
  for (std::string x; fields >> x;) f.push_back(x);
  if (f.size() < 18) return s;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  s.cpu_seconds = (std::stod(f[11]) + std::stod(f[12])) / tick;  // fields 14, 15
  s.threads = std::stoi(f[17]);                                    // field 20
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kb = std::atol(line.c_str() + 6);
    if (line.rfind("VmHWM:", 0) == 0) s.hwm_kb = std::atol(line.c_str() + 6);
  }
  if (count_sockets) {
    std::error_code ec;
    for (const auto& entry :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
      std::error_code link_ec;
      const auto target = std::filesystem::read_symlink(entry.path(), link_ec);
      if (!link_ec && target.string().rfind("socket:", 0) == 0) ++s.sockets;
    }
  }
  s.ok = true;
  return s;
}

inline double Mib(long kb) { return static_cast<double>(kb) / 1024.0; }

// ---------------------------------------------------------------------------
// What both modes' fleets of fake Connect streams share: registration and
// end counts, the first few errors, and a wait on them.

struct StreamFleet {
  std::atomic<int> registered{0};
  std::atomic<int> done{0};  // Connect streams whose OnDone ran
  std::atomic<bool> tearing_down{false};
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> first_errors;

  void Note(const std::string& error) {
    std::lock_guard<std::mutex> lock(mu);
    if (first_errors.size() < 5) first_errors.push_back(error);
  }
  void Wake() {
    std::lock_guard<std::mutex> lock(mu);
    cv.notify_all();
  }
  template <typename Pred>
  bool WaitFor(double seconds, Pred pred) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, duration<double>(seconds), pred);
  }
  // A stream's OnDone: an error before the teardown is noted.
  void StreamEnded(const grpc::Status& status) {
    if (!status.ok() && !tearing_down.load()) {
      Note("Connect: " + std::to_string(status.error_code()) + " " + status.error_message());
    }
    done.fetch_add(1);
    Wake();
  }
};

// ---------------------------------------------------------------------------
// The coordinator as a child process

class CoordinatorProcess {
 public:
  ~CoordinatorProcess() { Stop(); }

  // Starts it listening on 127.0.0.1:0 and waits for the port it reports.
  bool Start(const std::string& binary, const std::string& store, int heartbeat_timeout_s,
             bool verbose) {
    verbose_ = verbose;
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) return false;
    std::vector<std::string> args = {binary,
                                     "--grpc-listen=127.0.0.1:0",
                                     "--store=" + store,
                                     "--heartbeat-timeout=" + std::to_string(heartbeat_timeout_s),
                                     // One client creates every run at
                                     // once: beyond any per-caller rate.
                                     "--create-rate=off",
                                     // Every simulated worker registers a
                                     // new name from this one address.
                                     "--register-rate=off",
                                     "--max-workers=0",
                                     "--max-unregistered-streams=0",
                                     // One client opens every watcher.
                                     "--max-watchers=0",
                                     "--max-watchers-per-client=0",
                                     "--http-listen=127.0.0.1:0"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
    posix_spawn_file_actions_addclose(&actions, pipe_fds[1]);
    const int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      std::fprintf(stderr, "load_bench: cannot start %s: %s\n", argv[0], std::strerror(rc));
      close(pipe_fds[0]);
      close(pipe_fds[1]);
      pid_ = -1;
      return false;
    }
    close(pipe_fds[1]);
    fd_ = pipe_fds[0];
    // Read lines until "serving gRPC on port N" (or give up after 20 s).
    const auto give_up = Clock::now() + std::chrono::seconds(20);
    std::string pending;
    while ((port_ == 0 || http_port_ == 0) && Clock::now() < give_up) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 200) <= 0) continue;
      char buf[4096];
      const ssize_t n = read(fd_, buf, sizeof(buf));
      if (n <= 0) break;
      pending.append(buf, static_cast<size_t>(n));
      for (size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
        const std::string line = pending.substr(0, nl);
        pending.erase(0, nl + 1);
        Keep(line);
        const size_t at = line.find("serving gRPC on port ");
        if (at != std::string::npos) port_ = std::atoi(line.c_str() + at + 21);
        const char kHttp[] = "on port ";
        const size_t http_at = line.find("serving HTTP");
        if (http_at != std::string::npos && line.find(kHttp, http_at) != std::string::npos) {
          http_port_ = std::atoi(line.c_str() + line.find(kHttp, http_at) + sizeof(kHttp) - 1);
        }
      }
    }
    if (port_ == 0) {
      std::fprintf(stderr, "load_bench: the coordinator did not report a port; its stderr:\n");
      for (const std::string& l : tail_) std::fprintf(stderr, "  %s\n", l.c_str());
      return false;
    }
    drain_ = std::thread([this] { Drain(); });
    return true;
  }

  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  int http_port() const { return http_port_; }

  bool Alive() const {
    if (pid_ <= 0) return false;
    int status = 0;
    return waitpid(pid_, &status, WNOHANG) == 0;
  }

  // SIGTERM, then SIGKILL after `grace_s`. Returns how it ended.
  std::string Stop(int grace_s = 5) {
    if (pid_ <= 0) return "";
    std::string how;
    kill(pid_, SIGTERM);
    int status = 0;
    const auto sent = Clock::now();
    const auto give_up = sent + std::chrono::seconds(grace_s);
    pid_t done = 0;
    while ((done = waitpid(pid_, &status, WNOHANG)) == 0 && Clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (done == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      how = "did not stop within " + std::to_string(grace_s) + " s of SIGTERM; killed";
    } else if (WIFEXITED(status)) {
      char took[64];
      std::snprintf(took, sizeof(took), " %.2f s after SIGTERM", Seconds(Clock::now() - sent));
      how = "exited " + std::to_string(WEXITSTATUS(status)) + took;
    } else if (WIFSIGNALED(status)) {
      how = std::string("killed by signal ") + strsignal(WTERMSIG(status));
    }
    pid_ = -1;
    if (drain_.joinable()) drain_.join();
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    return how;
  }

  // Lines the coordinator wrote to stderr (the last 20 of them).
  std::vector<std::string> StderrTail() {
    std::lock_guard<std::mutex> lock(mu_);
    return {tail_.begin(), tail_.end()};
  }
  int stderr_lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }

 private:
  void Keep(const std::string& line) {
    std::lock_guard<std::mutex> lock(mu_);
    ++lines_;
    tail_.push_back(line);
    if (tail_.size() > 20) tail_.pop_front();
    if (verbose_) std::fprintf(stderr, "[coordinator] %s\n", line.c_str());
  }

  void Drain() {
    std::string pending;
    char buf[4096];
    for (;;) {
      const ssize_t n = read(fd_, buf, sizeof(buf));
      if (n <= 0) break;
      pending.append(buf, static_cast<size_t>(n));
      for (size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
        Keep(pending.substr(0, nl));
        pending.erase(0, nl + 1);
      }
    }
  }

  pid_t pid_ = -1;
  int fd_ = -1;
  int port_ = 0;
  int http_port_ = 0;
  bool verbose_ = false;
  std::thread drain_;
  std::mutex mu_;
  std::deque<std::string> tail_;
  int lines_ = 0;
};


// ---------------------------------------------------------------------------
// Unary calls

enum Method { kGetRun, kListRuns, kListWorkers, kGetWorker, kMethods };
inline constexpr const char* kMethodNames[kMethods] = {"GetRun", "ListRuns(50)", "ListWorkers",
                                                "GetWorker"};

struct UnaryStats {
  std::mutex mu;
  std::vector<double> latency_ms[kMethods];
  long errors[kMethods] = {};
  std::string first_error;
  std::atomic<int> in_flight{0};
};

struct UnaryCall {
  grpc::ClientContext context;
  Method method;
  Clock::time_point start;
  v1::GetRunRequest get_run;
  v1::ListRunsRequest list_runs;
  v1::ListWorkersRequest list_workers;
  v1::GetWorkerRequest get_worker;
  v1::Run run;
  v1::ListRunsResponse runs;
  v1::ListWorkersResponse workers;
  v1::Worker worker;
};

inline void Issue(v1::Coordinator::Stub* stub, UnaryStats* stats, Method method,
           const std::string& run, const std::string& worker) {
  auto* call = new UnaryCall;
  call->method = method;
  call->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  stats->in_flight.fetch_add(1);
  auto done = [stats, call](grpc::Status status) {
    const double ms = Millis(Clock::now() - call->start);
    {
      std::lock_guard<std::mutex> lock(stats->mu);
      if (status.ok()) {
        stats->latency_ms[call->method].push_back(ms);
      } else {
        ++stats->errors[call->method];
        if (stats->first_error.empty()) {
          stats->first_error = std::string(kMethodNames[call->method]) + ": " +
                               std::to_string(status.error_code()) + " " + status.error_message();
        }
      }
    }
    delete call;
    stats->in_flight.fetch_sub(1);
  };
  call->start = Clock::now();
  switch (method) {
    case kGetRun:
      call->get_run.set_name(run);
      stub->async()->GetRun(&call->context, &call->get_run, &call->run, done);
      break;
    case kListRuns:
      call->list_runs.set_page_size(50);
      stub->async()->ListRuns(&call->context, &call->list_runs, &call->runs, done);
      break;
    case kListWorkers:
      stub->async()->ListWorkers(&call->context, &call->list_workers, &call->workers, done);
      break;
    case kGetWorker:
      call->get_worker.set_name(worker);
      stub->async()->GetWorker(&call->context, &call->get_worker, &call->worker, done);
      break;
    case kMethods:
      break;
  }
}

// ---------------------------------------------------------------------------
// One round against one coordinator

// The Register of simulated worker `index`: id "PREFIX-INDEX", one slot,
// a host of its own, an inventory like a small real one.
inline void FillFakeRegister(const std::string& prefix, int index, v1::Register* r) {
  const std::string id = prefix + "-" + std::to_string(index);
  r->set_worker_id(id);
  r->set_display_name(id);
  r->set_agent_address("127.0.0.1:1");
  r->set_slots(1);
  v1::Inventory* inv = r->mutable_inventory();
  inv->set_hostname(prefix + "-host-" + std::to_string(index));
  inv->set_host_id(prefix + "-host-" + std::to_string(index));
  inv->set_cpus(2);
  inv->set_memory_bytes(8ull << 30);
  inv->add_backends("mpi");
  inv->add_mpi_implementations("openmpi");
  inv->set_collbench_version("load-bench");
}

inline std::shared_ptr<grpc::Channel> NewChannel(const std::string& target, int index) {
  grpc::ChannelArguments args;
  // Channels with equal arguments share one connection through the global
  // subchannel pool; a local pool (and a distinct argument) gives each
  // channel its own TCP connection.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt("collbench.load_bench.channel", index);
  args.SetMaxReceiveMessageSize(64 << 20);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}
}  // namespace collbench::load_bench

#endif  // COLLBENCH_BENCH_LOAD_LOAD_COMMON_H_
