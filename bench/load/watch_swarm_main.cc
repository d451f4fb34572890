// SPDX-License-Identifier: Apache-2.0
// watch_swarm: opens many watchers of one run and reports what they got,
// for the watcher acceptance test (tests/integration/rest, case watchers).
//
//   watch_swarm --grpc HOST:PORT --http HOST:PORT --run runs/ID
//               --grpc-watchers N --grpc-token T --sse-watchers M --sse-token T
//               [--extra] [--timeout S]
//
// 1. Opens N WatchRun streams and M SSE watches and waits until each got
//    its first event; prints "opened grpc=N sse=M in S s" (exit 1 if not).
// 2. With --extra, opens one more of each with the same tokens and prints
//    how each ended: "extra grpc CODE MESSAGE", "extra sse STATUS
//    retry-after=R MESSAGE".
// 3. Prints "READY" and waits for every watcher to end (or --timeout),
//    then prints one line per kind:
//    "summary KIND watchers=N ended=E final=STATE:COUNT,… results=MIN..MAX
//     events=MIN..MAX errors=K first_end=CODE MESSAGE"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "bench/load/watch_swarm.h"

namespace {

using collbench::bench::WatcherReport;
using collbench::bench::WatchSwarm;

struct Args {
  std::string grpc, http_host, run, grpc_token, sse_token;
  int http_port = 0, grpc_watchers = 0, sse_watchers = 0;
  bool extra = false;
  double timeout = 300;
};

bool Parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--extra") {
      a->extra = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "watch_swarm: %s needs a value\n", arg.c_str());
      return false;
    }
    const std::string v = argv[++i];
    if (arg == "--grpc") {
      a->grpc = v;
    } else if (arg == "--http") {
      const size_t colon = v.rfind(':');
      if (colon == std::string::npos) {
        std::fprintf(stderr, "watch_swarm: --http: HOST:PORT, not '%s'\n", v.c_str());
        return false;
      }
      a->http_host = v.substr(0, colon);
      a->http_port = std::atoi(v.c_str() + colon + 1);
    } else if (arg == "--run") {
      a->run = v;
    } else if (arg == "--grpc-token") {
      a->grpc_token = v;
    } else if (arg == "--sse-token") {
      a->sse_token = v;
    } else if (arg == "--grpc-watchers") {
      a->grpc_watchers = std::atoi(v.c_str());
    } else if (arg == "--sse-watchers") {
      a->sse_watchers = std::atoi(v.c_str());
    } else if (arg == "--timeout") {
      a->timeout = std::atof(v.c_str());
    } else {
      std::fprintf(stderr, "watch_swarm: unknown argument '%s'\n", arg.c_str());
      return false;
    }
  }
  if (a->run.empty() || a->grpc.empty() || a->http_port <= 0) {
    std::fprintf(stderr, "watch_swarm: --run, --grpc and --http are required\n");
    return false;
  }
  return true;
}

void Summarize(const char* kind, const std::vector<WatcherReport>& all, bool sse) {
  int n = 0, ended = 0, errors = 0;
  int min_results = 1 << 30, max_results = 0, min_events = 1 << 30, max_events = 0;
  std::map<std::string, int> finals;
  std::string first_end;
  for (const WatcherReport& r : all) {
    if (r.sse != sse) continue;
    ++n;
    ended += r.ended;
    errors += r.errors;
    ++finals[r.final_state.empty() ? "none" : r.final_state];
    min_results = std::min(min_results, r.results);
    max_results = std::max(max_results, r.results);
    min_events = std::min(min_events, r.events());
    max_events = std::max(max_events, r.events());
    if (first_end.empty() && r.ended) first_end = r.end_code + " " + r.end_message;
  }
  std::string final_text;
  for (const auto& [state, count] : finals) {
    final_text += (final_text.empty() ? "" : ",") + state + ":" + std::to_string(count);
  }
  std::printf("summary %s watchers=%d ended=%d final=%s results=%d..%d events=%d..%d errors=%d "
              "first_end=%s\n",
              kind, n, ended, final_text.c_str(), n ? min_results : 0, max_results,
              n ? min_events : 0, max_events, errors, first_end.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!Parse(argc, argv, &a)) return 2;
  const auto start = std::chrono::steady_clock::now();
  WatchSwarm swarm(a.grpc, a.http_host, a.http_port, 8);
  for (int i = 0; i < a.grpc_watchers; ++i) swarm.AddGrpc(a.run, a.grpc_token);
  for (int i = 0; i < a.sse_watchers; ++i) {
    std::string error;
    if (!swarm.AddSse(a.run, a.sse_token, &error)) {
      std::printf("cannot open SSE watcher %d: %s\n", i, error.c_str());
      return 1;
    }
  }
  const size_t opened = static_cast<size_t>(a.grpc_watchers + a.sse_watchers);
  const bool started = swarm.WaitFor(60, [](const std::vector<WatcherReport>& all) {
    for (const WatcherReport& r : all) {
      if (r.events() == 0 && !r.ended) return false;
    }
    return true;
  });
  std::vector<WatcherReport> now = swarm.Snapshot();
  const long with_events = std::count_if(now.begin(), now.end(),
                                         [](const WatcherReport& r) { return r.events() > 0; });
  std::printf("opened grpc=%d sse=%d in %.2f s; %ld of %zu got their first event\n",
              a.grpc_watchers, a.sse_watchers,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
              with_events, opened);
  std::fflush(stdout);
  if (!started || with_events != static_cast<long>(opened)) {
    Summarize("grpc", now, false);
    Summarize("sse", now, true);
    return 1;
  }
  if (a.extra) {
    swarm.AddGrpc(a.run, a.grpc_token);
    std::string error;
    if (!swarm.AddSse(a.run, a.sse_token, &error)) {
      std::printf("cannot open the extra SSE watcher: %s\n", error.c_str());
      return 1;
    }
    // The extra ones are the last gRPC watcher and the last SSE one.
    const size_t extra_grpc = static_cast<size_t>(a.grpc_watchers);
    swarm.WaitFor(30, [extra_grpc](const std::vector<WatcherReport>& all) {
      return all[extra_grpc].ended || all[extra_grpc].events() > 0;
    });
    swarm.WaitFor(30, [](const std::vector<WatcherReport>& all) {
      return all.back().ended || all.back().events() > 0;
    });
    now = swarm.Snapshot();
    const WatcherReport& g = now[extra_grpc];
    const WatcherReport& s = now.back();
    std::printf("extra grpc %s %s\n", g.ended ? g.end_code.c_str() : "OPEN",
                g.end_message.c_str());
    std::printf("extra sse %d retry-after=%s %s\n", s.http_status, s.retry_after.c_str(),
                s.end_message.c_str());
  }
  std::printf("READY\n");
  std::fflush(stdout);
  const bool all_ended = swarm.WaitFor(a.timeout, [](const std::vector<WatcherReport>& all) {
    for (const WatcherReport& r : all) {
      if (!r.ended) return false;
    }
    return true;
  });
  now = swarm.Snapshot();
  if (a.extra) {  // the summaries are of the first N and M only
    now.erase(now.begin() + a.grpc_watchers);
    now.pop_back();
  }
  if (!all_ended) std::printf("not every watcher ended within %.0f s\n", a.timeout);
  Summarize("grpc", now, false);
  Summarize("sse", now, true);
  std::fflush(stdout);
  swarm.Stop();
  return 0;
}
