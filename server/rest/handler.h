// SPDX-License-Identifier: Apache-2.0
// What a REST handler sees and returns, independent of the HTTP library:
// the dispatcher (http_server.cc) matches a route, checks the token and the
// query parameter names, builds a RestRequest, calls the route's handler and
// writes its RestReply. Handlers are plain functions, so tests can call them
// without a socket.
#ifndef COLLBENCH_SERVER_REST_HANDLER_H_
#define COLLBENCH_SERVER_REST_HANDLER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "server/auth/authorizer.h"
#include "server/core/run_manager.h"
#include "server/core/watch_hub.h"
#include "server/core/watcher_limits.h"

namespace collbench {

class SseSource;
class WorkflowManager;
class ScheduleManager;
class UiSessions;

// One request. Query parameter names are in snake_case (the dispatcher
// turns pageSize into page_size) and each appears at most once.
struct RestRequest {
  std::string id;  // the {id} path segment, if any
  std::string caller;  // who asks, for per-caller limits (Authorizer::CallerOf)
  std::string session;  // on /ui/ routes: the session id of the cookie, if any
  std::map<std::string, std::string> query;
  std::string body;
};

// One answer: a body with a content type, or an event stream.
struct RestReply {
  int http_status = 200;
  std::string content_type = "application/json";
  std::string body;
  // Extra response headers (e.g. Retry-After on a 429).
  std::map<std::string, std::string> headers;
  // When set, the answer is `text/event-stream` fed from this stream and
  // `body` is unused.
  std::shared_ptr<SseSource> stream;
};

// What handlers may use. Pointers are not owned and outlive every request.
struct RestContext {
  RunManager* manager = nullptr;
  WorkflowManager* workflows = nullptr;  // may be null: no workflow routes answer
  ScheduleManager* schedules = nullptr;  // may be null: /v1/schedules answers 503
  WatchHub* hub = nullptr;
  std::function<std::string()> metrics_text;     // may be empty
  std::function<bool()> ready;                   // may be empty: always ready
  absl::Duration keepalive = absl::Seconds(15);  // event stream comments
  WatcherLimits* watchers = nullptr;             // may be null: no watcher limits
  const Authorizer* authorizer = nullptr;        // may be null: no tokens (the /ui/ login)
  UiSessions* sessions = nullptr;                // the /ui/ sessions; null: no login
  bool tls = false;                              // served over TLS (the login cookie's Secure)
};

using RestHandler = RestReply (*)(const RestContext& context, const RestRequest& request);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_REST_HANDLER_H_
