// SPDX-License-Identifier: Apache-2.0
// WatchSwarm: many run watchers from one process, for load_bench and the
// watcher acceptance test (tests/integration/rest). gRPC WatchRun streams
// use the callback API over a few channels; SSE watches
// (GET /v1/runs/{id}:watch) are plain sockets served by one epoll thread.
// Each watcher counts the events it got by kind and keeps how it ended.
//
// Thread safety: Add*() and Stop() from one thread; Snapshot() and
// WaitFor() from any.
#ifndef COLLBENCH_BENCH_LOAD_WATCH_SWARM_H_
#define COLLBENCH_BENCH_LOAD_WATCH_SWARM_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "collbench/v1/coordinator.grpc.pb.h"

namespace collbench::bench {

// What one watcher saw.
struct WatcherReport {
  bool sse = false;
  int states = 0, results = 0, progress = 0, logs = 0, errors = 0;
  std::string final_state;  // the last state event's state (e.g. "SUCCEEDED")
  bool ended = false;
  // gRPC: the status code name and message; SSE: the HTTP status, then the
  // message of an `event: error`, or why the socket ended.
  std::string end_code;
  std::string end_message;
  int http_status = 0;      // SSE only
  std::string retry_after;  // SSE only: the Retry-After header, if any
  int events() const { return states + results + progress + logs + errors; }
};

class WatchSwarm {
 public:
  // grpc_target and http "HOST:PORT"; either may be empty when unused.
  WatchSwarm(std::string grpc_target, std::string http_host, int http_port, int channels);
  ~WatchSwarm();  // Stop()

  // Opens one watcher of `run` ("runs/ID") with a bearer token ("" for none).
  void AddGrpc(const std::string& run, const std::string& token);
  // False, with the reason, when it could not connect.
  bool AddSse(const std::string& run, const std::string& token, std::string* error);

  // Every watcher's report so far, gRPC ones first in the order added.
  std::vector<WatcherReport> Snapshot();
  // Waits until `done(Snapshot())` holds or `seconds` passed; whether it held.
  bool WaitFor(double seconds, const std::function<bool(const std::vector<WatcherReport>&)>& done);
  // Cancels every stream and waits (up to 30 s) for them to end.
  void Stop();

  class GrpcWatcher;
  struct SseConnection;

 private:
  void Changed();
  void SseLoop();

  const std::string http_host_;
  const int http_port_;
  std::vector<std::unique_ptr<v1::Coordinator::Stub>> stubs_;
  std::vector<std::unique_ptr<GrpcWatcher>> grpc_;
  std::vector<std::unique_ptr<SseConnection>> sse_;  // owned; read by the loop thread
  int epoll_fd_ = -1;
  std::thread sse_thread_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
};

}  // namespace collbench::bench

#endif  // COLLBENCH_BENCH_LOAD_WATCH_SWARM_H_
