// SPDX-License-Identifier: Apache-2.0
#include "kube/controller.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "kube/json_fields.h"
#include "kube/worker_nodes.h"

namespace collbench::kube {
namespace {

constexpr int kConflictTries = 3;

std::string NodePath(const std::string& node) { return absl::StrCat("/api/v1/nodes/", node); }

Json MapPatch(const std::map<std::string, std::optional<std::string>>& changes) {
  Json out = Json::object();
  for (const auto& [key, value] : changes) out[key] = value ? Json(*value) : Json(nullptr);
  return out;
}

}  // namespace

Controller::Controller(KubeClient* kube, CoordinatorSource* coordinator, const NodeCache* nodes,
                       ControllerOptions options, const Clock* clock)
    : kube_(kube),
      coordinator_(coordinator),
      nodes_(nodes),
      options_(std::move(options)),
      clock_(clock) {}

ControllerStats Controller::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

absl::StatusOr<std::map<std::string, Json>> Controller::Nodes() {
  if (nodes_ != nullptr && nodes_->synced()) return nodes_->Snapshot();
  absl::StatusOr<NodeList> list = ListNodes(*kube_, options_.node_selector);
  if (!list.ok()) return list.status();
  return std::move(list->nodes);
}

absl::Status Controller::Write(
    NodeChange change, const std::function<std::optional<NodeChange>(const Json&)>& replan) {
  for (int attempt = 1;; ++attempt) {
    absl::Status status;
    if (!change.labels.empty() || !change.annotations.empty() || change.taints) {
      Json patch = {{"metadata", Json::object()}};
      if (!change.labels.empty()) patch["metadata"]["labels"] = MapPatch(change.labels);
      if (!change.annotations.empty()) {
        patch["metadata"]["annotations"] = MapPatch(change.annotations);
      }
      if (change.taints) {
        // The taints list is replaced whole: only over the version planned
        // from, so that a taint someone added meanwhile is not lost.
        patch["spec"] = {{"taints", *change.taints}};
        if (!change.resource_version.empty()) {
          patch["metadata"]["resourceVersion"] = change.resource_version;
        }
      }
      status = kube_->Patch(NodePath(change.node), PatchType::kMerge, patch).status();
    }
    if (status.ok() && change.condition) {
      const Json patch = {{"status", {{"conditions", Json::array({*change.condition})}}}};
      status = kube_->Patch(NodePath(change.node) + "/status", PatchType::kStrategicMerge, patch)
                   .status();
    }
    if (status.code() != absl::StatusCode::kAborted || attempt >= kConflictTries) return status;
    absl::StatusOr<Json> fresh = kube_->Get(NodePath(change.node));
    if (!fresh.ok()) return fresh.status();
    std::optional<NodeChange> again = replan(*fresh);
    if (!again) return absl::OkStatus();  // nothing left to do
    change = *std::move(again);
  }
}

void Controller::CreateEvents(const NodePlan& plan) {
  {
    // Only the names this plan still makes are remembered: the set stays
    // as small as the hunts a pass reads.
    std::set<std::string> planned;
    for (const Json& event : plan.events) planned.insert(NameOf(event));
    absl::MutexLock lock(&mu_);
    for (auto it = events_done_.begin(); it != events_done_.end();) {
      it = planned.count(*it) ? std::next(it) : events_done_.erase(it);
    }
  }
  for (const Json& event : plan.events) {
    const std::string name = NameOf(event);
    {
      absl::MutexLock lock(&mu_);
      if (events_done_.count(name)) continue;
    }
    if (options_.dry_run) {
      LogInfo("kube.dry_run", absl::StrCat("would create Event ", name, " on node ",
                                           Text(Field(event, "involvedObject"), "name"), ": ",
                                           Text(event, "reason"), ": ", Text(event, "message")));
      absl::MutexLock lock(&mu_);
      events_done_.insert(name);
      ++stats_.dry_run_changes;
      continue;
    }
    const absl::Status created =
        kube_
            ->Create(absl::StrCat("/api/v1/namespaces/", options_.plan.event_namespace, "/events"),
                     event)
            .status();
    absl::MutexLock lock(&mu_);
    if (created.ok() || created.code() == absl::StatusCode::kAlreadyExists) {
      events_done_.insert(name);
      stats_.events += created.ok() ? 1 : 0;
    } else {
      ++stats_.api_errors;
      LogWarn("kube.event", absl::StrCat("creating Event ", name, ": ", created.message()));
    }
  }
}

absl::Status Controller::VerifyWorkers(CoordinatorView* view) {
  if (options_.worker_pods.empty()) return absl::OkStatus();
  absl::StatusOr<Json> pods =
      kube_->Get(absl::StrCat("/api/v1/namespaces/", options_.worker_namespace,
                              "/pods?labelSelector=", EscapeQueryValue(options_.worker_pods)));
  if (!pods.ok()) return pods.status();
  for (const std::string& why : VerifyWorkerNodes(&view->workers, *pods)) {
    absl::MutexLock lock(&mu_);
    if (rejected_.insert(why).second) LogWarn("kube.worker", why);
  }
  return absl::OkStatus();
}

absl::StatusOr<NodePlan> Controller::Reconcile() {
  auto failed = [&](const absl::Status& status) {
    absl::MutexLock lock(&mu_);
    ++stats_.passes;
    ++stats_.failed_passes;
    return status;
  };
  absl::StatusOr<CoordinatorView> view = coordinator_->Read();
  if (!view.ok()) return failed(view.status());
  if (absl::Status verified = VerifyWorkers(&*view); !verified.ok()) return failed(verified);
  absl::StatusOr<std::map<std::string, Json>> nodes = Nodes();
  if (!nodes.ok()) return failed(nodes.status());
  const absl::Time now = clock_->Now();
  NodePlan plan = PlanNodes(*view, *nodes, options_.plan, now);
  if (plan.breaker_open) {
    LogWarn("kube.breaker",
            absl::StrCat("circuit breaker open: quarantine of ", absl::StrJoin(plan.withheld, ", "),
                         " withheld (", plan.quarantined_in_window, " of ", plan.nodes,
                         " nodes quarantined within ",
                         absl::FormatDuration(options_.plan.breaker_window), ")"));
  }
  int patched = 0, errors = 0, logged = 0;
  for (const NodeChange& change : plan.changes) {
    const std::string what = absl::StrJoin(change.why, "; ");
    if (options_.dry_run) {
      LogInfo("kube.dry_run", absl::StrCat("would change node ", change.node, ": ", what));
      ++logged;
      continue;
    }
    auto replan = [&](const Json& fresh) -> std::optional<NodeChange> {
      std::map<std::string, Json> again = *nodes;
      again[change.node] = fresh;
      for (NodeChange& c : PlanNodes(*view, again, options_.plan, now).changes) {
        if (c.node == change.node) return std::move(c);
      }
      return std::nullopt;
    };
    if (absl::Status written = Write(change, replan); !written.ok()) {
      ++errors;
      LogWarn("kube.node", absl::StrCat("node ", change.node, ": ", written.message()));
      continue;
    }
    ++patched;
    LogInfo("kube.node", absl::StrCat("node ", change.node, ": ", what));
  }
  CreateEvents(plan);
  absl::MutexLock lock(&mu_);
  ++stats_.passes;
  stats_.node_patches += patched;
  stats_.api_errors += errors;
  stats_.dry_run_changes += logged;
  stats_.withheld += static_cast<int64_t>(plan.withheld.size());
  stats_.breaker_open = plan.breaker_open;
  stats_.nodes = plan.nodes;
  stats_.last_success = now;
  return plan;
}

}  // namespace collbench::kube
