#include "server/rest/sse_writer.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace collbench {
namespace {

constexpr uint64_t kWakeId = 0;  // epoll data of the wake eventfd
constexpr int kMaxEvents = 256;
// The loop looks for quiet streams at least this often.
constexpr int kTickMs = 500;

// `text` as one chunk of the chunked transfer coding.
std::string HttpChunk(const std::string& text) {
  return absl::StrCat(absl::Hex(text.size()), "\r\n", text, "\r\n");
}

constexpr char kLastChunk[] = "0\r\n\r\n";

}  // namespace

absl::StatusOr<std::unique_ptr<SseWriter>> SseWriter::Start(absl::Duration keepalive) {
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0) return absl::ErrnoToStatus(errno, "event stream writer: epoll_create1");
  const int wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) {
    const int error = errno;
    close(epoll_fd);
    return absl::ErrnoToStatus(error, "event stream writer: eventfd");
  }
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = kWakeId;
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd, &event);
  std::unique_ptr<SseWriter> writer(new SseWriter(epoll_fd, wake_fd, keepalive));
  writer->thread_ = std::thread([w = writer.get()] { w->Loop(); });
  return writer;
}

SseWriter::~SseWriter() {
  Shutdown();
  close(wake_fd_);
  close(epoll_fd_);
}

void SseWriter::Add(int fd, std::string head, std::shared_ptr<EventStream> stream) {
  uint64_t id;
  {
    absl::MutexLock lock(&mu_);
    id = next_id_++;
  }
  // Before the loop can see it, so that the loop's clearing it (when the
  // stream ends or the writer stops) always comes after.
  stream->SetNotify([this, id] { MarkReady(id); });
  bool added = false;
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      ++open_;
      added_.push_back(Added{id, fd, std::move(head), stream});
      added = true;
    }
  }
  if (!added) {  // shutting down: no stream starts now
    stream->SetNotify(nullptr);
    stream->Detach();
    close(fd);
    return;
  }
  Wake();
}

size_t SseWriter::size() const {
  absl::MutexLock lock(&mu_);
  return open_;
}

void SseWriter::Wake() {
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

void SseWriter::MarkReady(uint64_t id) {
  bool first;
  {
    absl::MutexLock lock(&mu_);
    first = ready_.empty();
    ready_.insert(id);
  }
  if (first) Wake();
}

void SseWriter::Loop() {
  epoll_event events[kMaxEvents];
  absl::Time next_tick = absl::Now() + absl::Milliseconds(kTickMs);
  for (;;) {
    const int n = epoll_wait(epoll_fd_, events, kMaxEvents, kTickMs);
    for (int i = 0; i < n; ++i) {
      const uint64_t id = events[i].data.u64;
      if (id == kWakeId) {
        uint64_t count;
        (void)!read(wake_fd_, &count, sizeof(count));
        continue;
      }
      auto it = connections_.find(id);
      if (it == connections_.end()) continue;
      Connection& c = it->second;
      if (events[i].events & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)) {
        Drop(id);  // the client went away
        continue;
      }
      if (events[i].events & EPOLLIN) {
        // A client sends nothing after its request; read and drop it, and
        // notice when it closes.
        char scratch[4096];
        const ssize_t got = recv(c.fd, scratch, sizeof(scratch), MSG_DONTWAIT);
        if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
          Drop(id);
          continue;
        }
      }
      if (events[i].events & EPOLLOUT) Pump(id, c);
    }
    std::vector<Added> added;
    std::set<uint64_t> ready;
    bool stopping;
    {
      absl::MutexLock lock(&mu_);
      added.swap(added_);
      ready.swap(ready_);
      stopping = stopping_;
    }
    if (stopping) {
      for (Added& a : added) {
        a.stream->SetNotify(nullptr);
        a.stream->Detach();
        close(a.fd);
      }
      return;
    }
    const absl::Time now = absl::Now();
    for (Added& a : added) {
      Connection& c = connections_[a.id];
      c.fd = a.fd;
      c.stream = std::move(a.stream);
      c.out = std::move(a.head);
      c.last_output = now;
      epoll_event event{};
      event.events = EPOLLIN | EPOLLRDHUP;
      event.data.u64 = a.id;
      if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c.fd, &event) != 0) {
        Drop(a.id);
        continue;
      }
      Pump(a.id, c);
    }
    for (uint64_t id : ready) {
      auto it = connections_.find(id);
      if (it != connections_.end()) Pump(id, it->second);
    }
    if (now >= next_tick) {
      KeepAlive(now);
      next_tick = now + absl::Milliseconds(kTickMs);
    }
  }
}

void SseWriter::Pump(uint64_t id, Connection& c) {
  for (;;) {
    if (c.sent < c.out.size()) {
      if (!Flush(id, c)) return;
      if (c.sent < c.out.size()) return;  // the socket is full; EPOLLOUT resumes
    }
    c.out.clear();
    c.sent = 0;
    if (c.last) {
      Drop(id);
      return;
    }
    EventStream::Chunk chunk = c.stream->Take();
    if (!chunk.text.empty()) c.out = HttpChunk(chunk.text);
    if (chunk.last) {
      c.out += kLastChunk;
      c.last = true;
    }
    if (c.out.empty()) break;
  }
  if (c.want_writable) {
    epoll_event event{};
    event.events = EPOLLIN | EPOLLRDHUP;
    event.data.u64 = id;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &event);
    c.want_writable = false;
  }
}

bool SseWriter::Flush(uint64_t id, Connection& c) {
  while (c.sent < c.out.size()) {
    const ssize_t wrote =
        send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (wrote > 0) {
      c.sent += static_cast<size_t>(wrote);
      c.last_output = absl::Now();
      continue;
    }
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!c.want_writable) {
        epoll_event event{};
        event.events = EPOLLIN | EPOLLRDHUP | EPOLLOUT;
        event.data.u64 = id;
        epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &event);
        c.want_writable = true;
      }
      return true;
    }
    Drop(id);  // the client went away
    return false;
  }
  return true;
}

void SseWriter::KeepAlive(absl::Time now) {
  std::vector<uint64_t> quiet;
  for (const auto& [id, c] : connections_) {
    if (c.out.empty() && now - c.last_output >= keepalive_) quiet.push_back(id);
  }
  for (uint64_t id : quiet) {
    auto it = connections_.find(id);
    if (it == connections_.end()) continue;
    Connection& c = it->second;
    c.out = HttpChunk(": keep-alive\n\n");
    c.sent = 0;
    c.last_output = now;  // also when the write waits: one comment per period
    Pump(id, c);
  }
}

void SseWriter::Drop(uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  Connection& c = it->second;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  close(c.fd);
  c.stream->SetNotify(nullptr);
  c.stream->Detach();
  connections_.erase(it);
  absl::MutexLock lock(&mu_);
  --open_;
}

void SseWriter::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  Wake();
  if (thread_.joinable()) thread_.join();
  // The loop has stopped: end what it owned, without waiting on anyone.
  for (auto& [id, c] : connections_) {
    c.stream->SetNotify(nullptr);
    c.stream->Detach();
    c.stream->Close();
    std::string rest = c.out.substr(c.sent);
    if (!c.last) {
      EventStream::Chunk chunk = c.stream->Take();
      if (!chunk.text.empty()) rest += HttpChunk(chunk.text);
      rest += kLastChunk;
    }
    (void)!send(c.fd, rest.data(), rest.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    shutdown(c.fd, SHUT_RDWR);
    close(c.fd);
  }
  connections_.clear();
  absl::MutexLock lock(&mu_);
  open_ = 0;
}

}  // namespace collbench
