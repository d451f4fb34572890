// SPDX-License-Identifier: Apache-2.0
// What collbench-kube writes to nodes (kube/node_plan.h), from views of the
// coordinator and the nodes as the API returns them: a quarantined worker's
// node degraded (condition, label, taint), a node measured healthy cleared,
// a taint removed by hand left off, the circuit breaker, events once per
// hunt, testing marks.
#include "kube/node_plan.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace collbench::kube {
namespace {

using Json = nlohmann::json;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

Json Node(const std::string& name) {
  return Json{{"apiVersion", "v1"},
              {"kind", "Node"},
              {"metadata", {{"name", name}, {"uid", "uid-" + name}, {"resourceVersion", "7"}}},
              {"spec", Json::object()},
              {"status", {{"conditions", Json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

v1::Worker Worker(const std::string& id, const std::string& node) {
  v1::Worker w;
  w.set_name("workers/" + id);
  w.mutable_inventory()->set_node_name(node);
  w.set_state(v1::READY);
  return w;
}

void Quarantine(v1::Worker* w, const std::string& hunt) {
  w->set_state(v1::SUSPECT);
  w->mutable_suspect()->set_reason(
      "CONFIRMED_BAD: 0.20 of the fleet median with 3 of 3 healthy peers");
  w->mutable_suspect()->set_hunt(hunt);
  w->mutable_suspect()->mutable_time()->set_seconds(1'799'999'000);
}

// A finished hunt that measured `healthy` workers at ratio 1 and names
// `suspects` (worker, verdict, peers).
v1::Workflow Hunt(const std::string& name, const std::vector<std::string>& healthy,
                  const std::vector<std::tuple<std::string, std::string, std::vector<std::string>>>&
                      suspects = {}) {
  v1::Workflow w;
  w.set_name(name);
  w.set_state(v1::WORKFLOW_SUCCEEDED);
  for (const std::string& worker : healthy) {
    v1::HuntWorker* hw = w.mutable_output()->mutable_hunt()->add_workers();
    hw->set_worker(worker);
    hw->set_ratio(1.0);
    hw->set_measurements(4);
  }
  for (const auto& [worker, verdict, peers] : suspects) {
    v1::HuntSuspect* s = w.mutable_output()->mutable_hunt()->add_suspects();
    s->set_worker(worker);
    s->set_verdict(verdict);
    for (const std::string& p : peers) s->add_peers(p);
    s->set_evidence("evidence of " + verdict);
  }
  return w;
}

struct Cluster {
  CoordinatorView view;
  std::map<std::string, Json> nodes;
  explicit Cluster(int n) {
    for (int i = 0; i < n; ++i) {
      const std::string node = absl::StrCat("node", i);
      nodes[node] = Node(node);
      view.workers.push_back(Worker(absl::StrCat("w", i), node));
    }
  }
  // Applies a plan's changes to the nodes, as the API server would.
  void Apply(const NodePlan& plan) {
    for (const NodeChange& c : plan.changes) {
      Json& node = nodes.at(c.node);
      for (const auto& [key, value] : c.labels) {
        if (value) {
          node["metadata"]["labels"][key] = *value;
        } else if (node["metadata"].contains("labels")) {
          node["metadata"]["labels"].erase(key);
        }
      }
      for (const auto& [key, value] : c.annotations) {
        if (value) {
          node["metadata"]["annotations"][key] = *value;
        } else if (node["metadata"].contains("annotations")) {
          node["metadata"]["annotations"].erase(key);
        }
      }
      if (c.taints) node["spec"]["taints"] = *c.taints;
      if (c.condition) {
        Json conditions = Json::array();
        for (const Json& old : node["status"]["conditions"]) {
          if (old["type"] != (*c.condition)["type"]) conditions.push_back(old);
        }
        conditions.push_back(*c.condition);
        node["status"]["conditions"] = conditions;
      }
    }
  }
};

Json ConditionOf(const Json& node) {
  for (const Json& c : node["status"]["conditions"]) {
    if (c["type"] == kConditionType) return c;
  }
  return nullptr;
}

bool Tainted(const Json& node, const std::string& key) {
  if (!node["spec"].contains("taints")) return false;
  for (const Json& t : node["spec"]["taints"]) {
    if (t["key"] == key && t["effect"] == "NoSchedule") return true;
  }
  return false;
}

std::string LabelOf(const Json& node, const std::string& key) {
  const Json& labels = node["metadata"].value("labels", Json::object());
  return labels.value(key, "");
}

PlanOptions Tainting() {
  PlanOptions o;
  o.taint = true;
  return o;
}

TEST(NodePlanTest, AQuarantinedWorkersNodeIsDegradedAndOnlyIt) {
  Cluster c(6);
  Quarantine(&c.view.workers[3], "workflows/hunt-1");
  c.view.hunts.push_back(Hunt(
      "workflows/hunt-1", {"workers/w0", "workers/w1", "workers/w2", "workers/w4", "workers/w5"},
      {{"workers/w3", "CONFIRMED_BAD", {}}}));
  const NodePlan plan = PlanNodes(c.view, c.nodes, Tainting(), kNow);
  c.Apply(plan);
  const Json degraded = ConditionOf(c.nodes["node3"]);
  ASSERT_FALSE(degraded.is_null());
  EXPECT_EQ(degraded["status"], "True");
  EXPECT_EQ(degraded["reason"], "ConfirmedBad");
  EXPECT_NE(degraded["message"].get<std::string>().find("0.20 of the fleet median"),
            std::string::npos);
  EXPECT_NE(degraded["message"].get<std::string>().find("hunt-1"), std::string::npos);
  EXPECT_EQ(LabelOf(c.nodes["node3"], kHealthLabel), "degraded");
  EXPECT_TRUE(Tainted(c.nodes["node3"], kDegradedTaint));
  for (const std::string node : {"node0", "node1", "node2", "node4", "node5"}) {
    EXPECT_EQ(ConditionOf(c.nodes[node])["status"], "False") << node;
    EXPECT_EQ(ConditionOf(c.nodes[node])["reason"], "Healthy") << node;
    EXPECT_EQ(LabelOf(c.nodes[node], kHealthLabel), "healthy") << node;
    EXPECT_FALSE(Tainted(c.nodes[node], kDegradedTaint)) << node;
  }
  // The other conditions are kept.
  EXPECT_EQ(c.nodes["node3"]["status"]["conditions"].size(), 2u);
  // A second pass over the same state changes nothing and re-plans the same
  // event (created once: its name is the same).
  const NodePlan again = PlanNodes(c.view, c.nodes, Tainting(), kNow + absl::Minutes(1));
  EXPECT_TRUE(again.changes.empty()) << again.changes[0].node;
  ASSERT_EQ(plan.events.size(), 1u);
  ASSERT_EQ(again.events.size(), 1u);
  EXPECT_EQ(plan.events[0]["metadata"]["name"], again.events[0]["metadata"]["name"]);
  EXPECT_EQ(plan.events[0]["involvedObject"]["name"], "node3");
  EXPECT_EQ(plan.events[0]["reason"], "ConfirmedBad");
}

TEST(NodePlanTest, WithoutTaintTheNodeIsLabelledNotTainted) {
  Cluster c(4);
  Quarantine(&c.view.workers[1], "workflows/hunt-1");
  c.Apply(PlanNodes(c.view, c.nodes, PlanOptions(), kNow));
  EXPECT_EQ(LabelOf(c.nodes["node1"], kHealthLabel), "degraded");
  EXPECT_FALSE(Tainted(c.nodes["node1"], kDegradedTaint));
}

TEST(NodePlanTest, AHealthyHuntClearsTheNodeAndOnlyTheTaintCollbenchSet) {
  Cluster c(4);
  Quarantine(&c.view.workers[2], "workflows/hunt-1");
  c.nodes["node2"]["spec"]["taints"] =
      Json::array({{{"key", "gpu-maintenance"}, {"effect", "NoSchedule"}}});
  c.Apply(PlanNodes(c.view, c.nodes, Tainting(), kNow));
  ASSERT_TRUE(Tainted(c.nodes["node2"], kDegradedTaint));
  // Cleared by a later hunt that measured it healthy.
  c.view.workers[2] = Worker("w2", "node2");
  c.view.hunts.insert(c.view.hunts.begin(), Hunt("workflows/hunt-2", {"workers/w2"}));
  c.Apply(PlanNodes(c.view, c.nodes, Tainting(), kNow + absl::Hours(1)));
  EXPECT_EQ(ConditionOf(c.nodes["node2"])["status"], "False");
  EXPECT_EQ(ConditionOf(c.nodes["node2"])["reason"], "Healthy");
  EXPECT_EQ(LabelOf(c.nodes["node2"], kHealthLabel), "healthy");
  EXPECT_FALSE(Tainted(c.nodes["node2"], kDegradedTaint));
  EXPECT_TRUE(Tainted(c.nodes["node2"], "gpu-maintenance"));  // not collbench's
  EXPECT_FALSE(c.nodes["node2"]["metadata"]
                   .value("annotations", Json::object())
                   .contains(kQuarantineAnnotation));
}

TEST(NodePlanTest, ATaintRemovedByHandStaysOffUntilAnotherHuntConfirmsTheNode) {
  Cluster c(4);
  Quarantine(&c.view.workers[0], "workflows/hunt-1");
  c.Apply(PlanNodes(c.view, c.nodes, Tainting(), kNow));
  ASSERT_TRUE(Tainted(c.nodes["node0"], kDegradedTaint));
  c.nodes["node0"]["spec"]["taints"] =
      Json::array();  // kubectl taint node node0 collbench.io/degraded-
  const NodePlan after = PlanNodes(c.view, c.nodes, Tainting(), kNow + absl::Minutes(1));
  c.Apply(after);
  EXPECT_FALSE(Tainted(c.nodes["node0"], kDegradedTaint));
  EXPECT_EQ(ConditionOf(c.nodes["node0"])["status"], "True");  // still what the hunt found
  // Another hunt confirms it: tainted again.
  Quarantine(&c.view.workers[0], "workflows/hunt-2");
  c.Apply(PlanNodes(c.view, c.nodes, Tainting(), kNow + absl::Hours(1)));
  EXPECT_TRUE(Tainted(c.nodes["node0"], kDegradedTaint));
}

TEST(NodePlanTest, TheCircuitBreakerWithholdsQuarantinesPastItsShareAndSaysSo) {
  Cluster c(6);
  for (int i : {0, 1, 2, 3}) Quarantine(&c.view.workers[i], "workflows/hunt-1");
  PlanOptions options = Tainting();
  options.breaker_fraction = 0.5;  // 3 of 6 nodes within the window
  const NodePlan plan = PlanNodes(c.view, c.nodes, options, kNow);
  c.Apply(plan);
  int tainted = 0;
  for (int i : {0, 1, 2, 3}) tainted += Tainted(c.nodes[absl::StrCat("node", i)], kDegradedTaint);
  EXPECT_EQ(tainted, 3);
  EXPECT_TRUE(plan.breaker_open);
  ASSERT_EQ(plan.withheld.size(), 1u);
  const Json& held = c.nodes[plan.withheld[0]];
  EXPECT_EQ(ConditionOf(held)["status"], "True");  // what the hunt found is still said
  EXPECT_NE(ConditionOf(held)["message"].get<std::string>().find("circuit breaker"),
            std::string::npos);
  EXPECT_EQ(LabelOf(held, kHealthLabel), "");
  bool event = false;
  for (const Json& e : plan.events) event = event || e["reason"] == "QuarantineWithheld";
  EXPECT_TRUE(event);
  // Past the window the withheld node is quarantined.
  const NodePlan later = PlanNodes(c.view, c.nodes, options, kNow + absl::Minutes(6));
  EXPECT_FALSE(later.breaker_open);
  c.Apply(later);
  EXPECT_TRUE(Tainted(held, kDegradedTaint));
}

TEST(NodePlanTest, LinkRackAndInconclusiveVerdictsAreEventsOnTheNodesInvolved) {
  Cluster c(6);
  c.view.hunts.push_back(Hunt("workflows/hunt-1", {},
                              {{"workers/w1", "LINK_SUSPECT", {"workers/w4"}},
                               {"", "RACK_SUSPECT", {"workers/w2", "workers/w3"}},
                               {"workers/w5", "INCONCLUSIVE", {}}}));
  const NodePlan plan = PlanNodes(c.view, c.nodes, PlanOptions(), kNow);
  std::map<std::string, std::string> reason_of;
  for (const Json& e : plan.events) {
    reason_of[e["involvedObject"]["name"]] = e["reason"];
    EXPECT_EQ(e["involvedObject"]["kind"], "Node");
    EXPECT_EQ(e["metadata"]["namespace"], "default");
  }
  EXPECT_EQ(reason_of, (std::map<std::string, std::string>{{"node1", "LinkSuspect"},
                                                           {"node4", "LinkSuspect"},
                                                           {"node2", "RackSuspect"},
                                                           {"node3", "RackSuspect"},
                                                           {"node5", "Inconclusive"}}));
  for (const NodeChange& change : plan.changes) EXPECT_FALSE(change.condition) << change.node;
}

TEST(NodePlanTest, NodesOfAHuntsActiveRunsAreMarkedWhileItRunsAndUnmarkedAfter) {
  Cluster c(4);
  v1::Run run;
  run.set_name("runs/r1");
  (*run.mutable_spec()->mutable_labels())["hunt"] = "hunt-1";
  run.add_hosts()->set_worker("workers/w0");
  run.add_hosts()->set_worker("workers/w2");
  c.view.active_runs.push_back(run);
  PlanOptions options;
  options.mark_testing = true;
  c.Apply(PlanNodes(c.view, c.nodes, options, kNow));
  EXPECT_EQ(LabelOf(c.nodes["node0"], kTestingKey), "true");
  EXPECT_EQ(LabelOf(c.nodes["node2"], kTestingKey), "true");
  EXPECT_EQ(LabelOf(c.nodes["node1"], kTestingKey), "");
  c.view.active_runs.clear();  // the round ended (or failed)
  c.Apply(PlanNodes(c.view, c.nodes, options, kNow));
  EXPECT_FALSE(c.nodes["node0"]["metadata"]["labels"].contains(kTestingKey));
  // As a taint.
  options.mark_testing_taint = true;
  c.view.active_runs.push_back(run);
  c.Apply(PlanNodes(c.view, c.nodes, options, kNow));
  EXPECT_TRUE(Tainted(c.nodes["node0"], kTestingKey));
  c.view.active_runs.clear();
  c.Apply(PlanNodes(c.view, c.nodes, options, kNow));
  EXPECT_FALSE(Tainted(c.nodes["node0"], kTestingKey));
  // A run that is not a hunt's marks nothing.
  run.mutable_spec()->mutable_labels()->erase("hunt");
  c.view.active_runs.push_back(run);
  EXPECT_TRUE(PlanNodes(c.view, c.nodes, options, kNow).changes.empty());
}

TEST(NodePlanTest, ANodeTheNewestHuntNamedWithoutAQuarantineIsNotCalledHealthy) {
  Cluster c(3);
  // A report-only hunt confirmed w1 bad (no SUSPECT), and found w2's link
  // suspect: their nodes are not marked healthy; w0's is.
  c.view.hunts.push_back(
      Hunt("workflows/hunt-1", {"workers/w0", "workers/w1", "workers/w2"},
           {{"workers/w1", "CONFIRMED_BAD", {}}, {"workers/w2", "LINK_SUSPECT", {"workers/w0"}}}));
  const NodePlan plan = PlanNodes(c.view, c.nodes, Tainting(), kNow);
  c.Apply(plan);
  EXPECT_TRUE(ConditionOf(c.nodes["node1"]).is_null());
  EXPECT_TRUE(ConditionOf(c.nodes["node2"]).is_null());
  EXPECT_EQ(LabelOf(c.nodes["node0"], kHealthLabel), "healthy");
  EXPECT_EQ(plan.events.size(), 3u);  // node1; node2 and node0 for the link
}

// A node name is the worker's word: one that is no node (a path, say)
// reaches no request.
TEST(NodePlanTest, ANodeNameThatIsNoNodeOfTheClusterChangesNothing) {
  Cluster c(2);
  c.view.workers.push_back(Worker("evil", "../../namespaces/kube-system/secrets/x"));
  Quarantine(&c.view.workers.back(), "workflows/hunt-1");
  EXPECT_TRUE(PlanNodes(c.view, c.nodes, Tainting(), kNow).changes.empty());
}

TEST(NodePlanTest, WorkersOfNoKnownNodeAndNodesOfNoWorkerAreLeftAlone) {
  Cluster c(2);
  c.nodes["node9"] = Node("node9");  // no worker
  c.view.workers.push_back(Worker("stray", "not-a-node"));
  Quarantine(&c.view.workers.back(), "workflows/hunt-1");
  c.view.workers.push_back(Worker("bare", ""));
  Quarantine(&c.view.workers.back(), "workflows/hunt-1");
  const NodePlan plan = PlanNodes(c.view, c.nodes, Tainting(), kNow);
  EXPECT_TRUE(plan.changes.empty());
  EXPECT_EQ(plan.nodes, 2);
}

}  // namespace
}  // namespace collbench::kube
