// SPDX-License-Identifier: Apache-2.0
// What collbench-kube writes to each node (docs/operations/kubernetes.md
// #what-the-controller-writes-to-nodes), from what the coordinator knows:
// pure functions of a view, so that tests check every rule without a
// cluster.
//
// A node is the Kubernetes node of the workers that report it
// (Inventory.node_name). Its verdict:
//   degraded  a worker of it is SUSPECT, quarantined by a hunt's
//             CONFIRMED_BAD (the coordinator's durable state): condition
//             CollectivePerformanceDegraded=True (reason ConfirmedBad, the
//             hunt's evidence, the hunt and the time), label
//             collbench.io/health=degraded and, with `taint`, the taint
//             collbench.io/degraded:NoSchedule;
//   healthy   no worker of it is SUSPECT, and the newest hunt that measured
//             it named none of its workers a suspect, or it carries the
//             condition True from before (cleared by a later hunt or by
//             hand): condition False (reason Healthy or Cleared), label
//             collbench.io/health=healthy, and the taint collbench set
//             removed;
//   named     that newest hunt named a worker of it a suspect without a
//             quarantine (CONFIRMED_BAD under no_quarantine, LINK_SUSPECT,
//             INCONCLUSIVE): its Event says so, the node is left as it is;
//   unknown   never measured: left as it is.
// A taint collbench set is noted in the annotation collbench.io/quarantine
// (the hunt it was set for and when). A node whose annotation names the
// SUSPECT worker's hunt but has no taint had it removed by hand: it is not
// put back until another hunt confirms the node.
//
// The circuit breaker: a new quarantine (the degraded label and the taint
// where the node had neither) is withheld while the nodes quarantined
// within `breaker_window` (by their annotation's time), with this one,
// would be more than `breaker_fraction` of the nodes with a worker. The
// condition is still set (it is what the hunt found), its message says the
// quarantine was withheld, and the plan says so (a metric, a log line, an
// Event on the node).
//
// Events, once per hunt (their names are derived from the hunt, the node
// and the verdict, so a second pass creates nothing new): each suspect's
// nodes get one, Warning for CONFIRMED_BAD (ConfirmedBad), RACK_SUSPECT
// (RackSuspect) and LINK_SUSPECT (LinkSuspect), Normal for INCONCLUSIVE
// (Inconclusive).
//
// Testing marks (`mark_testing`): the nodes of the workers in a hunt's
// runs now scheduled or running carry collbench.io/testing=true (a label,
// or the taint collbench.io/testing:NoSchedule with `mark_testing_taint`),
// and lose it when none is: a failed round leaves no mark behind.
#ifndef COLLBENCH_KUBE_NODE_PLAN_H_
#define COLLBENCH_KUBE_NODE_PLAN_H_

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "collbench/v1/run.pb.h"
#include "collbench/v1/worker.pb.h"
#include "collbench/v1/workflow.pb.h"

namespace collbench::kube {

inline constexpr char kConditionType[] = "CollectivePerformanceDegraded";
inline constexpr char kHealthLabel[] = "collbench.io/health";
inline constexpr char kDegradedTaint[] = "collbench.io/degraded";
inline constexpr char kTestingKey[] = "collbench.io/testing";
inline constexpr char kQuarantineAnnotation[] = "collbench.io/quarantine";

struct PlanOptions {
  bool taint = false;
  bool mark_testing = false;
  bool mark_testing_taint = false;
  double breaker_fraction = 0.5;
  absl::Duration breaker_window = absl::Minutes(5);
  std::string event_namespace = "default";
  std::string component = "collbench-kube";  // an Event's source
};

// What the coordinator says, read in one pass.
struct CoordinatorView {
  std::vector<v1::Worker> workers;
  std::vector<v1::Workflow> hunts;   // finished hunts, newest first
  std::vector<v1::Run> active_runs;  // SCHEDULED and RUNNING
};

// One node's changes. Empty optionals and maps: nothing to change.
struct NodeChange {
  std::string node;
  std::map<std::string, std::optional<std::string>> labels;       // nullopt: remove
  std::map<std::string, std::optional<std::string>> annotations;  // nullopt: remove
  std::optional<nlohmann::json> condition;  // the whole condition, to merge by type
  std::optional<nlohmann::json> taints;     // the node's whole new taint list
  std::string resource_version;             // of the node planned from
  std::vector<std::string> why;             // one line per change, for the log
  bool empty() const { return labels.empty() && annotations.empty() && !condition && !taints; }
};

struct NodePlan {
  std::vector<NodeChange> changes;     // by node name
  std::vector<nlohmann::json> events;  // core/v1 Events to create
  // Quarantines the breaker withheld this pass, and whether it is open.
  std::vector<std::string> withheld;
  bool breaker_open = false;
  int nodes = 0;  // with a worker
  int quarantined_in_window = 0;
};

// `nodes`: the cluster's Node objects by name (as the API returns them).
// Nodes with no worker are left alone; workers whose node is not among
// `nodes` are skipped.
NodePlan PlanNodes(const CoordinatorView& view, const std::map<std::string, nlohmann::json>& nodes,
                   const PlanOptions& options, absl::Time now);

}  // namespace collbench::kube

#endif  // COLLBENCH_KUBE_NODE_PLAN_H_
