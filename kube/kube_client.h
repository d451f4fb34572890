// SPDX-License-Identifier: Apache-2.0
// A Kubernetes API client over HTTPS (libcurl), for the controller
// (docs/operations/kubernetes.md#the-controller): JSON requests with the
// credentials of a KubeConfig, a client-side rate limit (QPS and burst, as
// client-go's), and watches that stream events until the server ends them.
//
// Errors are Statuses naming the method, the path and the server's reason:
//   404 NotFound -> kNotFound           409 AlreadyExists -> kAlreadyExists
//   409 Conflict -> kAborted (retry)    410 Gone/Expired  -> kOutOfRange (relist)
//   401 -> kUnauthenticated             403 -> kPermissionDenied
//   400, 415, 422 -> kInvalidArgument   429, 5xx, no answer -> kUnavailable
//
// Thread safety: every method may be called from any thread; requests run
// at once (each its own connection), the rate limit is shared. Stop() ends
// watches in progress and makes later calls fail (kCancelled).
#ifndef COLLBENCH_KUBE_KUBE_CLIENT_H_
#define COLLBENCH_KUBE_KUBE_CLIENT_H_

#include <atomic>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/rate_limiter.h"
#include "kube/kube_config.h"

namespace collbench::kube {

using Json = nlohmann::json;

enum class PatchType {
  kMerge,           // application/merge-patch+json (RFC 7386)
  kStrategicMerge,  // application/strategic-merge-patch+json (lists merged by key)
  kJson,            // application/json-patch+json (RFC 6902)
};

struct KubeClientOptions {
  // Requests per second after a burst, as client-go's QPS and Burst
  // (defaults 5 and 10); 0 QPS: no limit. A watch is one request.
  double qps = 5;
  int burst = 10;
  absl::Duration request_timeout = absl::Seconds(30);
  std::string user_agent = "collbench-kube";
};

struct WatchOptions {
  std::string resource_version;  // resume after it; "" from the current state
  std::string label_selector;
  std::string field_selector;
  int timeout_seconds = 300;  // the server ends the watch after this long
  bool bookmarks = true;
};

class KubeClient {
 public:
  // `sleep` waits for the rate limit; null: the thread sleeps.
  KubeClient(KubeConfig config, KubeClientOptions options, const Clock* clock,
             std::function<void(absl::Duration)> sleep = nullptr);
  ~KubeClient();
  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;

  // `path` is the API path ("/api/v1/nodes/n1"), with its query if any.
  absl::StatusOr<Json> Get(const std::string& path);
  absl::StatusOr<Json> Create(const std::string& path, const Json& object);
  absl::StatusOr<Json> Patch(const std::string& path, PatchType type, const Json& patch);
  absl::StatusOr<Json> Delete(const std::string& path);

  // Streams the events of the list at `path` to `on_event` ({"type":
  // ADDED|MODIFIED|DELETED|BOOKMARK, "object": ...}) until the server ends
  // the watch (OK), `on_event` returns false (OK), Stop() (kCancelled), or
  // it fails. An ERROR event with code 410 (the resource version is too
  // old) is kOutOfRange: list again and watch from the list's version.
  absl::Status Watch(const std::string& path, const WatchOptions& options,
                     const std::function<bool(const Json& event)>& on_event);

  void Stop();
  const KubeConfig& config() const { return config_; }
  // Requests sent so far (for metrics and tests).
  int64_t requests() const { return requests_.load(); }

 private:
  struct Response {
    long code = 0;
    std::string body;
  };
  absl::StatusOr<Json> Unary(const std::string& method, const std::string& path,
                             const std::string& content_type, const std::string& body);
  // Runs one request; `on_data` gets the body as it comes (a watch), else
  // it is kept in the response.
  absl::StatusOr<Response> Perform(const std::string& method, const std::string& url,
                                   const std::string& content_type, const std::string& body,
                                   absl::Duration timeout,
                                   const std::function<bool(const char*, size_t)>& on_data);
  void Throttle() ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::string> Token() const;

  const KubeConfig config_;
  const KubeClientOptions options_;
  const Clock* const clock_;
  const std::function<void(absl::Duration)> sleep_;
  absl::Mutex mu_;
  RateLimiter limiter_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> stopped_{false};
  std::atomic<int64_t> requests_{0};
};

// The HTTP answer as a Status (OK for 2xx): the method, the path, the code
// and the server's Status message and reason when the body is one.
absl::Status StatusFromHttp(const std::string& method, const std::string& path, long code,
                            const std::string& body);

// Calls `attempt` until it is not kAborted (a 409 Conflict: someone wrote
// the object in between; `attempt` reads it again), at most `tries` times.
absl::Status RetryOnConflict(int tries, const std::function<absl::Status()>& attempt);

// "a=b,c" for a list path's query, URL-escaped.
std::string EscapeQueryValue(const std::string& value);

}  // namespace collbench::kube

#endif  // COLLBENCH_KUBE_KUBE_CLIENT_H_
