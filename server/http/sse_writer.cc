// SPDX-License-Identifier: Apache-2.0
#include "server/http/sse_writer.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace collbench {
namespace {

// What a stream reads of its client (which sends nothing after its
// request) before it stops reading: enough to notice the close.
constexpr size_t kReadHighWater = 4096;

}  // namespace

SseWriter::SseWriter(EventLoop* loop, const Clock* clock, absl::Duration keepalive,
                     absl::Duration write_timeout)
    : loop_(loop), clock_(clock), keepalive_(keepalive), write_timeout_(write_timeout) {
  tick_ = event_new(loop_->base(), -1, EV_PERSIST, &SseWriter::OnTick, this);
  // Quiet streams are looked for at least this often.
  const timeval period =
      absl::ToTimeval(std::clamp(keepalive_ / 2, absl::Milliseconds(10), absl::Milliseconds(500)));
  event_add(tick_, &period);
}

SseWriter::~SseWriter() {
  Abandon();
  event_free(tick_);
}

void SseWriter::Start(evhttp_request* req, int http_status,
                      const std::map<std::string, std::string>& headers,
                      std::shared_ptr<SseSource> events) {
  evhttp_connection* connection = evhttp_request_get_connection(req);
  evkeyvalq* out = evhttp_request_get_output_headers(req);
  evhttp_add_header(out, "Content-Type", "text/event-stream");
  evhttp_add_header(out, "Cache-Control", "no-cache");
  evhttp_add_header(out, "X-Accel-Buffering", "no");  // proxies: pass events on at once
  evhttp_add_header(out, "Connection", "close");
  for (const auto& [name, value] : headers) evhttp_add_header(out, name.c_str(), value.c_str());
  evhttp_send_reply_start(req, http_status, nullptr);
  bufferevent* bev = evhttp_connection_get_bufferevent(connection);
  bufferevent_setwatermark(bev, EV_READ, 0, kReadHighWater);
  const timeval write_timeout = absl::ToTimeval(write_timeout_);
  bufferevent_set_timeouts(bev, nullptr, &write_timeout);

  auto owned = std::make_unique<Stream>();
  Stream& s = *owned;
  s.writer = this;
  s.id = next_id_++;
  s.req = req;
  s.connection = connection;
  s.events = std::move(events);
  s.last_output = clock_->Now();
  streams_[s.id] = std::move(owned);
  open_.store(static_cast<int>(streams_.size()));
  evhttp_connection_set_closecb(connection, &SseWriter::OnClosed, &s);
  evhttp_request_set_on_complete_cb(req, &SseWriter::OnComplete, &s);
  s.events->SetNotify([this, id = s.id] { MarkReady(id); });
  if (closing_) s.events->Close();
  Pump(s);
}

void SseWriter::MarkReady(uint64_t id) {
  bool first;
  {
    absl::MutexLock lock(&mu_);
    first = ready_.empty();
    ready_.insert(id);
  }
  if (first) loop_->Post([this] { PumpReady(); });
}

void SseWriter::PumpReady() {
  std::set<uint64_t> ready;
  {
    absl::MutexLock lock(&mu_);
    ready.swap(ready_);
  }
  for (uint64_t id : ready) {
    auto it = streams_.find(id);
    if (it != streams_.end()) Pump(*it->second);
  }
}

void SseWriter::Pump(Stream& s) {
  if (s.writing || s.ended) return;
  SseSource::Chunk chunk = s.events->Take();
  if (!chunk.text.empty()) WriteChunk(s, chunk.text);
  if (!chunk.last) return;
  s.ended = true;
  s.events->SetNotify(nullptr);
  s.events->Detach();
  // The last chunk goes out after what is queued; OnComplete follows.
  evhttp_send_reply_end(s.req);
}

void SseWriter::WriteChunk(Stream& s, const std::string& text) {
  evbuffer* chunk = evbuffer_new();
  evbuffer_add(chunk, text.data(), text.size());
  evhttp_send_reply_chunk_with_cb(s.req, chunk, &SseWriter::OnWritten, &s);
  evbuffer_free(chunk);
  s.writing = true;
  s.last_output = clock_->Now();
}

void SseWriter::KeepAlive() {
  const absl::Time now = clock_->Now();
  for (auto& [id, s] : streams_) {
    if (!s->writing && !s->ended && now - s->last_output >= keepalive_) {
      WriteChunk(*s, kSseKeepAlive);
    }
  }
}

void SseWriter::CloseAll() {
  closing_ = true;
  std::vector<uint64_t> ids;
  for (const auto& [id, s] : streams_) ids.push_back(id);
  for (uint64_t id : ids) {
    auto it = streams_.find(id);
    if (it == streams_.end()) continue;
    it->second->events->Close();
    Pump(*it->second);
  }
}

void SseWriter::Forget(Stream& s) {
  s.events->SetNotify(nullptr);
  s.events->Detach();
  const uint64_t id = s.id;  // `s` goes with the erase
  streams_.erase(id);
  open_.store(static_cast<int>(streams_.size()));
  if (streams_.empty() && on_empty_) on_empty_();
}

void SseWriter::Abandon() {
  for (auto& [id, s] : streams_) {
    evhttp_connection_set_closecb(s->connection, nullptr, nullptr);
    evhttp_request_set_on_complete_cb(s->req, nullptr, nullptr);
    s->events->SetNotify(nullptr);
    s->events->Detach();
  }
  streams_.clear();
  open_.store(0);
}

void SseWriter::OnWritten(evhttp_connection* connection, void* arg) {
  Stream& s = *static_cast<Stream*>(arg);
  s.writing = false;
  s.last_output = s.writer->clock_->Now();
  s.writer->Pump(s);
}

void SseWriter::OnComplete(evhttp_request* req, void* arg) {
  // Every byte is written; the connection closes next (Connection: close)
  // and must not call back into a stream that is gone.
  Stream& s = *static_cast<Stream*>(arg);
  evhttp_connection_set_closecb(s.connection, nullptr, nullptr);
  s.writer->Forget(s);
}

void SseWriter::OnClosed(evhttp_connection* connection, void* arg) {
  // The client went away, or a write failed or timed out. Until the last
  // chunk was queued, libevent has let go of the request: it is ours to free.
  Stream& s = *static_cast<Stream*>(arg);
  if (!s.ended) evhttp_request_free(s.req);
  s.writer->Forget(s);
}

void SseWriter::OnTick(int fd, short what, void* arg) { static_cast<SseWriter*>(arg)->KeepAlive(); }

}  // namespace collbench
