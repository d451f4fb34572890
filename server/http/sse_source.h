// SPDX-License-Identifier: Apache-2.0
// What the HTTP server's SseWriter streams: ready-made server-sent-events
// text from a source above the transport (in the coordinator, a watch of a
// run or a workflow: server/api/sse_watch.h).
//
// Thread safety: Take() is called by one reader (the event loop); the
// notify callback may be called from any thread and must only post work.
#ifndef COLLBENCH_SERVER_HTTP_SSE_SOURCE_H_
#define COLLBENCH_SERVER_HTTP_SSE_SOURCE_H_

#include <functional>
#include <string>

namespace collbench {

class SseSource {
 public:
  // What to write next.
  struct Chunk {
    std::string text;   // whole SSE events or a keep-alive comment; may be ""
    bool last = false;  // nothing follows: end the response after `text`
  };
  virtual ~SseSource() = default;
  // What is queued now, without waiting (`text` may be "").
  virtual Chunk Take() = 0;
  // Called, with no lock of the caller's held, whenever there is something
  // to Take(); nullptr stops the calls (before the callee goes away).
  virtual void SetNotify(std::function<void()> notify) = 0;
  // Ends the stream at once (server shutdown): Take() returns what is
  // queued with `last` set.
  virtual void Close() = 0;
  // Stops receiving events from the source. Idempotent.
  virtual void Detach() = 0;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_HTTP_SSE_SOURCE_H_
