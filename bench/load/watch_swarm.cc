// SPDX-License-Identifier: Apache-2.0
#include "bench/load/watch_swarm.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace collbench::bench {

// One WatchRun stream.
class WatchSwarm::GrpcWatcher final : public grpc::ClientReadReactor<v1::RunEvent> {
 public:
  GrpcWatcher(WatchSwarm* swarm, std::mutex* mu) : swarm_(swarm), mu_(mu) {}

  void Start(v1::Coordinator::Stub* stub, const std::string& run, const std::string& token) {
    request_.set_name(run);
    if (!token.empty()) context_.AddMetadata("authorization", "Bearer " + token);
    stub->async()->WatchRun(&context_, &request_, this);
    StartRead(&event_);
    StartCall();
  }
  void Cancel() { context_.TryCancel(); }

  void OnReadDone(bool ok) override {
    if (!ok) return;
    {
      std::lock_guard<std::mutex> lock(*mu_);
      switch (event_.event_case()) {
        case v1::RunEvent::kStateChange:
          ++report_.states;
          report_.final_state = v1::RunState_Name(event_.state_change().state());
          break;
        case v1::RunEvent::kResult: ++report_.results; break;
        case v1::RunEvent::kProgress: ++report_.progress; break;
        case v1::RunEvent::kLog: ++report_.logs; break;
        default: break;
      }
    }
    swarm_->Changed();
    StartRead(&event_);
  }
  void OnDone(const grpc::Status& status) override {
    {
      std::lock_guard<std::mutex> lock(*mu_);
      report_.ended = true;
      static const char* const kNames[] = {
          "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
          "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
          "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
          "UNAUTHENTICATED"};
      const int code = status.error_code();
      report_.end_code = code >= 0 && code <= 16 ? kNames[code] : std::to_string(code);
      report_.end_message = status.error_message();
    }
    swarm_->Changed();
  }

  WatcherReport report_;  // guarded by *mu_

 private:
  WatchSwarm* const swarm_;
  std::mutex* const mu_;
  grpc::ClientContext context_;
  v1::WatchRunRequest request_;
  v1::RunEvent event_;
};

// One SSE watch over a plain socket: the response head, then the chunked
// body, then SSE events.
struct WatchSwarm::SseConnection {
  int fd = -1;
  std::string out;  // the request, until written
  std::string in;   // received and not yet parsed
  bool head_done = false;
  bool chunked = false;
  long chunk_left = -1;  // bytes left in the current chunk; -1: a size line is next
  std::string body;      // de-chunked SSE text not yet parsed
  std::string event_name, event_data;
  WatcherReport report;  // guarded by the swarm's mu_
  bool closed = false;   // the loop thread's own
};

namespace {

// The value of `"state":"…"` after `"stateChange"` in an event's JSON.
std::string StateOf(const std::string& json) {
  size_t at = json.find("\"stateChange\"");
  if (at == std::string::npos) return "";
  at = json.find("\"state\":\"", at);
  if (at == std::string::npos) return "";
  at += 9;
  return json.substr(at, json.find('"', at) - at);
}

std::string MessageOf(const std::string& json) {
  size_t at = json.find("\"message\":\"");
  if (at == std::string::npos) return json;
  at += 11;
  return json.substr(at, json.find('"', at) - at);
}

// Handles the SSE lines in `c.body`; caller holds the swarm's lock.
void ParseEvents(WatchSwarm::SseConnection& c) {
  size_t nl;
  while ((nl = c.body.find('\n')) != std::string::npos) {
    std::string line = c.body.substr(0, nl);
    c.body.erase(0, nl + 1);
    if (line.rfind("event: ", 0) == 0) {
      c.event_name = line.substr(7);
    } else if (line.rfind("data: ", 0) == 0) {
      c.event_data = line.substr(6);
    } else if (line.empty() && !c.event_name.empty()) {
      WatcherReport& r = c.report;
      if (c.event_name == "state") {
        ++r.states;
        r.final_state = StateOf(c.event_data);
      } else if (c.event_name == "result") {
        ++r.results;
      } else if (c.event_name == "progress") {
        ++r.progress;
      } else if (c.event_name == "log") {
        ++r.logs;
      } else if (c.event_name == "error") {
        ++r.errors;
        r.end_message = MessageOf(c.event_data);
      }
      c.event_name.clear();
      c.event_data.clear();
    }
  }
}

// Moves the de-chunked body out of `c.in`; false on a malformed chunk.
bool Dechunk(WatchSwarm::SseConnection& c) {
  if (!c.chunked) {
    c.body += c.in;
    c.in.clear();
    return true;
  }
  for (;;) {
    if (c.chunk_left < 0) {
      const size_t eol = c.in.find("\r\n");
      if (eol == std::string::npos) return true;
      char* end = nullptr;
      c.chunk_left = std::strtol(c.in.c_str(), &end, 16);
      if (end == c.in.c_str()) return false;
      c.in.erase(0, eol + 2);
      if (c.chunk_left == 0) return true;  // the last chunk
    }
    if (c.in.size() < static_cast<size_t>(c.chunk_left) + 2) return true;
    c.body.append(c.in, 0, static_cast<size_t>(c.chunk_left));
    c.in.erase(0, static_cast<size_t>(c.chunk_left) + 2);
    c.chunk_left = -1;
  }
}

}  // namespace

WatchSwarm::WatchSwarm(std::string grpc_target, std::string http_host, int http_port,
                       int channels)
    : http_host_(std::move(http_host)), http_port_(http_port) {
  if (!grpc_target.empty()) {
    for (int i = 0; i < std::max(channels, 1); ++i) {
      grpc::ChannelArguments args;
      // A connection of its own per channel (see load_bench's NewChannel).
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      args.SetInt("collbench.watch_swarm.channel", i);
      stubs_.push_back(v1::Coordinator::NewStub(
          grpc::CreateCustomChannel(grpc_target, grpc::InsecureChannelCredentials(), args)));
    }
  }
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  sse_thread_ = std::thread([this] { SseLoop(); });
}

WatchSwarm::~WatchSwarm() {
  Stop();
  close(epoll_fd_);
}

void WatchSwarm::AddGrpc(const std::string& run, const std::string& token) {
  GrpcWatcher* watcher;
  {
    std::lock_guard<std::mutex> lock(mu_);
    grpc_.push_back(std::make_unique<GrpcWatcher>(this, &mu_));
    watcher = grpc_.back().get();
  }
  watcher->Start(stubs_[(grpc_.size() - 1) % stubs_.size()].get(), run, token);
}

bool WatchSwarm::AddSse(const std::string& run, const std::string& token, std::string* error) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(http_port_));
  if (fd < 0 || inet_pton(AF_INET, http_host_.c_str(), &address.sin_addr) != 1 ||
      connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    *error = std::string("connect to ") + http_host_ + ":" + std::to_string(http_port_) + ": " +
             std::strerror(errno);
    if (fd >= 0) close(fd);
    return false;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  auto c = std::make_unique<SseConnection>();
  c->fd = fd;
  c->report.sse = true;
  c->out = "GET /v1/" + run + ":watch HTTP/1.1\r\nHost: " + http_host_ +
           "\r\nAccept: text/event-stream\r\n" +
           (token.empty() ? "" : "Authorization: Bearer " + token + "\r\n") + "\r\n";
  SseConnection* raw = c.get();
  {
    std::lock_guard<std::mutex> lock(mu_);
    sse_.push_back(std::move(c));
  }
  epoll_event event{};
  event.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP;
  event.data.ptr = raw;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event);
  return true;
}

void WatchSwarm::SseLoop() {
  epoll_event events[256];
  char buffer[65536];
  while (!stopping_.load()) {
    const int n = epoll_wait(epoll_fd_, events, 256, 100);
    bool changed = false;
    for (int i = 0; i < n; ++i) {
      auto* c = static_cast<SseConnection*>(events[i].data.ptr);
      if (c->closed) continue;
      if (!c->out.empty() && (events[i].events & EPOLLOUT)) {
        const ssize_t wrote = send(c->fd, c->out.data(), c->out.size(), MSG_NOSIGNAL);
        if (wrote > 0) c->out.erase(0, static_cast<size_t>(wrote));
        if (c->out.empty()) {
          epoll_event event{};
          event.events = EPOLLIN | EPOLLRDHUP;
          event.data.ptr = c;
          epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &event);
        }
      }
      std::string why;
      bool end = false;
      for (;;) {
        const ssize_t got = recv(c->fd, buffer, sizeof(buffer), 0);
        if (got > 0) {
          c->in.append(buffer, static_cast<size_t>(got));
          continue;
        }
        if (got == 0) {
          end = true;
          why = "closed by the server";
        } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
          end = true;
          why = std::strerror(errno);
        }
        break;
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (!c->head_done) {
        const size_t head_end = c->in.find("\r\n\r\n");
        if (head_end != std::string::npos) {
          const std::string head = c->in.substr(0, head_end + 2);
          c->in.erase(0, head_end + 4);
          c->head_done = true;
          c->report.http_status = std::atoi(head.c_str() + head.find(' ') + 1);
          std::string lower = head;
          for (char& ch : lower) ch = static_cast<char>(std::tolower(ch));
          c->chunked = lower.find("transfer-encoding: chunked") != std::string::npos;
          const size_t retry = lower.find("retry-after: ");
          if (retry != std::string::npos) {
            c->report.retry_after = head.substr(retry + 13, head.find("\r\n", retry) - retry - 13);
          }
        }
      }
      if (c->head_done) {
        if (!Dechunk(*c)) {
          end = true;
          why = "malformed chunked body";
        }
        if (c->report.http_status == 200) {
          ParseEvents(*c);
        } else if (end) {
          c->report.end_message = MessageOf(c->body);
        }
      }
      if (end) {
        c->report.ended = true;
        c->report.end_code = std::to_string(c->report.http_status);
        if (c->report.end_message.empty()) c->report.end_message = why;
        c->closed = true;
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
        close(c->fd);
      }
      changed = true;
    }
    if (changed) cv_.notify_all();
  }
}

void WatchSwarm::Changed() {
  { std::lock_guard<std::mutex> lock(mu_); }
  cv_.notify_all();
}

std::vector<WatcherReport> WatchSwarm::Snapshot() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<WatcherReport> all;
  for (const auto& w : grpc_) all.push_back(w->report_);
  for (const auto& c : sse_) all.push_back(c->report);
  return all;
}

bool WatchSwarm::WaitFor(double seconds,
                         const std::function<bool(const std::vector<WatcherReport>&)>& done) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(seconds));
  for (;;) {
    if (done(Snapshot())) return true;
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() +
                                                    std::chrono::milliseconds(200))) ==
            std::cv_status::timeout &&
        std::chrono::steady_clock::now() >= deadline) {
      lock.unlock();
      return done(Snapshot());
    }
  }
}

void WatchSwarm::Stop() {
  if (stopped_) return;
  stopped_ = true;
  stopping_ = true;
  if (sse_thread_.joinable()) sse_thread_.join();
  for (auto& c : sse_) {
    if (!c->closed) close(c->fd);
    c->closed = true;
  }
  for (auto& w : grpc_) w->Cancel();
  const bool all_done = WaitFor(30, [](const std::vector<WatcherReport>& all) {
    for (const WatcherReport& r : all) {
      if (!r.sse && !r.ended) return false;
    }
    return true;
  });
  // Streams gRPC still references: leak rather than free memory in use.
  if (!all_done) {
    for (auto& w : grpc_) w.release();
  }
}

}  // namespace collbench::bench
