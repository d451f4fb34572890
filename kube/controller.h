// SPDX-License-Identifier: Apache-2.0
// collbench-kube's reconcile pass (docs/operations/kubernetes.md#the-controller):
// read what the coordinator knows (workers, finished hunts, active runs),
// plan each node's changes (node_plan.h) against the nodes as the cache
// last saw them, and write them: labels, annotations and taints as one
// merge patch of the node (carrying its resourceVersion when the taints
// change, so a concurrent change is a 409 and the node is read and planned
// again, up to 3 times), the condition as a strategic merge patch of its
// status (merged by type: other conditions stay), Events created once. In
// dry-run every change is logged and none is made.
//
// Level-triggered: each pass plans from the whole state, so a pass that
// failed half-way is finished by the next, and a restart needs no memory
// but the nodes' own annotations.
//
// Thread safety: Reconcile() from one thread at a time; stats() from any.
#ifndef COLLBENCH_KUBE_CONTROLLER_H_
#define COLLBENCH_KUBE_CONTROLLER_H_

#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "kube/kube_client.h"
#include "kube/node_cache.h"
#include "kube/node_plan.h"

namespace collbench::kube {

// Where the controller reads the coordinator's state.
class CoordinatorSource {
 public:
  virtual ~CoordinatorSource() = default;
  virtual absl::StatusOr<CoordinatorView> Read() = 0;
};

struct ControllerOptions {
  PlanOptions plan;
  bool dry_run = false;
  // The worker pods that vouch for workers' nodes (worker_nodes.h): a label
  // selector and their namespace. Empty selector: workers are taken on
  // their word (a lab, or a cluster whose workers are not pods).
  std::string worker_pods;
  std::string worker_namespace = "collbench";
  // Only these nodes (a label selector; "" all), as the node cache lists.
  std::string node_selector;
};

struct ControllerStats {
  int64_t passes = 0;
  int64_t failed_passes = 0;
  int64_t node_patches = 0;
  int64_t events = 0;
  int64_t withheld = 0;  // quarantines the breaker withheld, over all passes
  int64_t api_errors = 0;
  int64_t dry_run_changes = 0;  // changes logged and not made
  bool breaker_open = false;
  int nodes = 0;
  absl::Time last_success = absl::InfinitePast();
};

class Controller {
 public:
  // `nodes`: the cache the plan reads (its owner runs it); null: each pass
  // lists the nodes itself.
  Controller(KubeClient* kube, CoordinatorSource* coordinator, const NodeCache* nodes,
             ControllerOptions options, const Clock* clock);

  // One pass; the plan it acted on. Fails when the coordinator or the node
  // list cannot be read (nothing is written then); a node's failed write is
  // logged and counted, and the pass goes on with the others.
  absl::StatusOr<NodePlan> Reconcile() ABSL_LOCKS_EXCLUDED(mu_);

  ControllerStats stats() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::StatusOr<std::map<std::string, Json>> Nodes();
  // Writes one node's change; on a conflict reads the node again and asks
  // `replan` for its change against the fresh copy.
  absl::Status Write(NodeChange change,
                     const std::function<std::optional<NodeChange>(const Json&)>& replan);
  void CreateEvents(const NodePlan& plan) ABSL_LOCKS_EXCLUDED(mu_);
  // Leaves out of `view` the node claims no worker pod vouches for.
  absl::Status VerifyWorkers(CoordinatorView* view) ABSL_LOCKS_EXCLUDED(mu_);

  KubeClient* const kube_;
  CoordinatorSource* const coordinator_;
  const NodeCache* const nodes_;
  const ControllerOptions options_;
  const Clock* const clock_;
  mutable absl::Mutex mu_;
  ControllerStats stats_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> events_done_ ABSL_GUARDED_BY(mu_);  // created or found existing
  std::set<std::string> rejected_ ABSL_GUARDED_BY(mu_);     // claims already logged
};

}  // namespace collbench::kube

#endif  // COLLBENCH_KUBE_CONTROLLER_H_
