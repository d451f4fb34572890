// SPDX-License-Identifier: Apache-2.0
// The cluster's nodes as the controller sees them, kept by a list and a
// watch, as client-go's informers keep theirs: list once, then watch from
// the list's resourceVersion; each event updates the copy and the version
// it resumes from; when the server ends the watch, watch again from there;
// when it says the version is too old (410 Expired), list again. Errors
// wait `backoff` (doubling up to `max_backoff`) before the next list.
//
// Thread safety: Run() on one thread (the cache's); Snapshot() and
// synced() from any.
#ifndef COLLBENCH_KUBE_NODE_CACHE_H_
#define COLLBENCH_KUBE_NODE_CACHE_H_

#include <atomic>
#include <functional>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kube/kube_client.h"

namespace collbench::kube {

// One list of the nodes `label_selector` selects ("" all), by name, and
// the list's resourceVersion (to watch from).
struct NodeList {
  std::map<std::string, Json> nodes;
  std::string resource_version;
};
absl::StatusOr<NodeList> ListNodes(KubeClient& client, const std::string& label_selector);

struct NodeCacheOptions {
  std::string label_selector;  // only these nodes ("" all)
  int watch_timeout_s = 300;
  bool bookmarks = true;  // ask for BOOKMARK events (the version moves on while nodes do not)
  absl::Duration backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Seconds(30);
};

class NodeCache {
 public:
  // `sleep` waits between failed lists (a test's returns at once).
  NodeCache(KubeClient* client, NodeCacheOptions options,
            std::function<void(absl::Duration)> sleep);

  // Lists and watches until Stop(). Returns when stopped.
  void Run();
  void Stop() { stopped_ = true; }

  // The nodes by name, as last seen; empty before the first list.
  std::map<std::string, Json> Snapshot() const ABSL_LOCKS_EXCLUDED(mu_);
  bool synced() const { return synced_.load(); }
  // How often it listed (the first list and every relist) and watched.
  int lists() const { return lists_.load(); }
  int watches() const { return watches_.load(); }

 private:
  // Lists into the cache; returns the list's resourceVersion.
  absl::StatusOr<std::string> List() ABSL_LOCKS_EXCLUDED(mu_);
  // Applies one watch event; false for an event it cannot read.
  bool Apply(const Json& event, std::string* resource_version) ABSL_LOCKS_EXCLUDED(mu_);

  KubeClient* const client_;
  const NodeCacheOptions options_;
  const std::function<void(absl::Duration)> sleep_;
  mutable absl::Mutex mu_;
  std::map<std::string, Json> nodes_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> synced_{false};
  std::atomic<bool> stopped_{false};
  std::atomic<int> lists_{0};
  std::atomic<int> watches_{0};
};

}  // namespace collbench::kube

#endif  // COLLBENCH_KUBE_NODE_CACHE_H_
