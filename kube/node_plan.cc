// SPDX-License-Identifier: Apache-2.0
#include "kube/node_plan.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "kube/json_fields.h"

namespace collbench::kube {
namespace {

using Json = nlohmann::json;

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

absl::Time TimeOf(const google::protobuf::Timestamp& ts) {
  return absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
}

// FNV-1a: a name that is the same for the same text in every build.
std::string StableHash(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return absl::StrFormat("%016x", h);
}

// A node's state as the API returned it.
struct NodeState {
  const Json* object = nullptr;
  std::map<std::string, std::string> labels, annotations;
  Json taints = Json::array();
  Json condition;  // ours, or null

  std::string Label(const std::string& key) const {
    auto it = labels.find(key);
    return it == labels.end() ? "" : it->second;
  }
  bool HasTaint(const std::string& key) const {
    return std::any_of(taints.begin(), taints.end(),
                       [&](const Json& t) { return Text(t, "key") == key; });
  }
};

NodeState StateOf(const Json& node) {
  NodeState s;
  s.object = &node;
  const Json& metadata = Field(node, "metadata");
  for (const char* field : {"labels", "annotations"}) {
    const Json& map = Field(metadata, field);
    if (!map.is_object()) continue;
    auto& out = std::string(field) == "labels" ? s.labels : s.annotations;
    for (const auto& [key, value] : map.items()) {
      if (value.is_string()) out[key] = value.get<std::string>();
    }
  }
  for (const Json& taint : ArrayOf(Field(node, "spec"), "taints")) {
    if (taint.is_object()) s.taints.push_back(taint);
  }
  for (const Json& c : ArrayOf(Field(node, "status"), "conditions")) {
    if (Text(c, "type") == kConditionType) s.condition = c;
  }
  return s;
}

// The quarantine annotation: the hunt a taint was set for and when.
struct Quarantine {
  std::string hunt;
  absl::Time time = absl::InfinitePast();
};

Quarantine QuarantineOf(const NodeState& s) {
  Quarantine q;
  auto it = s.annotations.find(kQuarantineAnnotation);
  if (it == s.annotations.end()) return q;
  const Json value = Json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  if (!value.is_object()) return q;
  q.hunt = Text(value, "hunt");
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, Text(value, "time"), &q.time, &error)) {
    q.time = absl::InfinitePast();
  }
  return q;
}

std::string QuarantineText(const std::string& hunt, absl::Time now) {
  return Json{{"hunt", hunt}, {"time", Rfc3339(now)}}.dump();
}

// What a node's workers say: the SUSPECT one (if any), and the newest hunt
// that measured one of them.
struct Verdict {
  const v1::Worker* suspect = nullptr;
  const v1::Workflow* measured_by = nullptr;
  const v1::HuntWorker* measured = nullptr;
};

Json Condition(const NodeState& s, bool degraded, const std::string& reason,
               const std::string& message, absl::Time now) {
  const std::string status = degraded ? "True" : "False";
  std::string transition = Rfc3339(now);
  if (Text(s.condition, "status") == status) {
    if (const std::string kept = Text(s.condition, "lastTransitionTime"); !kept.empty()) {
      transition = kept;
    }
  }
  return Json{{"type", kConditionType},
              {"status", status},
              {"reason", reason},
              {"message", message},
              {"lastHeartbeatTime", Rfc3339(now)},
              {"lastTransitionTime", transition}};
}

bool SameCondition(const Json& current, const Json& wanted) {
  if (current.is_null()) return false;
  for (const char* field : {"status", "reason", "message"}) {
    if (Text(current, field) != Text(wanted, field)) return false;
  }
  return true;
}

Json Event(const PlanOptions& options, const NodeState& s, const std::string& node,
           const std::string& key, const std::string& type, const std::string& reason,
           const std::string& message, absl::Time now) {
  const Json& metadata = Field(*s.object, "metadata");
  return Json{{"apiVersion", "v1"},
              {"kind", "Event"},
              {"metadata",
               {{"name", absl::StrCat(node, ".", StableHash(key))},
                {"namespace", options.event_namespace}}},
              {"involvedObject",
               {{"apiVersion", "v1"},
                {"kind", "Node"},
                {"name", node},
                {"uid", Text(metadata, "uid").empty() ? node : Text(metadata, "uid")}}},
              {"type", type},
              {"reason", reason},
              {"message", message.substr(0, 1024)},
              {"source", {{"component", options.component}}},
              {"reportingComponent", options.component},
              {"reportingInstance", options.component},
              {"firstTimestamp", Rfc3339(now)},
              {"lastTimestamp", Rfc3339(now)},
              {"count", 1}};
}

struct SuspectKind {
  const char* type;
  const char* reason;
};

SuspectKind KindOf(const std::string& verdict) {
  if (verdict == "CONFIRMED_BAD") return {"Warning", "ConfirmedBad"};
  if (verdict == "RACK_SUSPECT") return {"Warning", "RackSuspect"};
  if (verdict == "LINK_SUSPECT") return {"Warning", "LinkSuspect"};
  return {"Normal", "Inconclusive"};
}

std::string Short(const std::string& name) {
  return std::string(absl::StripPrefix(absl::StripPrefix(name, "workers/"), "workflows/"));
}

// The taint list with `key` (NoSchedule) present or not.
void SetTaint(Json* taints, const std::string& key, bool present) {
  Json out = Json::array();
  for (const Json& t : *taints) {
    if (Text(t, "key") != key) out.push_back(t);
  }
  if (present) out.push_back(Json{{"key", key}, {"effect", "NoSchedule"}});
  *taints = std::move(out);
}

// Whether `hunt` names a worker of `node` as a suspect (a node's own
// verdict: a rack's lists its workers as peers and is not one).
bool NamedSuspect(const v1::Workflow& hunt, const std::map<std::string, std::string>& node_of,
                  const std::string& node) {
  for (const v1::HuntSuspect& s : hunt.output().hunt().suspects()) {
    auto it = node_of.find(s.worker());
    if (it != node_of.end() && it->second == node) return true;
  }
  return false;
}

}  // namespace

NodePlan PlanNodes(const CoordinatorView& view, const std::map<std::string, Json>& nodes,
                   const PlanOptions& options, absl::Time now) {
  NodePlan plan;
  // Nodes and their workers.
  std::map<std::string, std::vector<const v1::Worker*>> workers_of;
  std::map<std::string, std::string> node_of;  // worker -> node
  for (const v1::Worker& w : view.workers) {
    const std::string& node = w.inventory().node_name();
    if (node.empty() || !nodes.count(node)) continue;
    workers_of[node].push_back(&w);
    node_of[w.name()] = node;
  }
  plan.nodes = static_cast<int>(workers_of.size());
  std::map<std::string, NodeState> state;
  for (const auto& [node, unused] : workers_of) state.emplace(node, StateOf(nodes.at(node)));

  // The breaker's count: nodes quarantined within the window.
  for (const auto& [node, s] : state) {
    if (QuarantineOf(s).time > now - options.breaker_window) ++plan.quarantined_in_window;
  }
  int in_window = plan.quarantined_in_window;

  // Nodes in a hunt's active runs.
  std::set<std::string> testing;
  for (const v1::Run& run : view.active_runs) {
    if (!run.spec().labels().count("hunt")) continue;
    for (const v1::RankHost& host : run.hosts()) {
      auto it = node_of.find(host.worker());
      if (it != node_of.end()) testing.insert(it->second);
    }
  }

  for (const auto& [node, workers] : workers_of) {
    const NodeState& s = state.at(node);
    Verdict verdict;
    for (const v1::Worker* w : workers) {
      if (w->has_suspect() && verdict.suspect == nullptr) verdict.suspect = w;
    }
    for (const v1::Workflow& hunt : view.hunts) {  // newest first
      for (const v1::HuntWorker& hw : hunt.output().hunt().workers()) {
        if (hw.measurements() > 0 && node_of.count(hw.worker()) &&
            node_of.at(hw.worker()) == node) {
          verdict.measured_by = &hunt;
          verdict.measured = &hw;
          break;
        }
      }
      if (verdict.measured_by != nullptr) break;
    }
    NodeChange change;
    change.node = node;
    change.resource_version = ResourceVersionOf(*s.object);
    Json taints = s.taints;
    const Quarantine quarantine = QuarantineOf(s);
    std::optional<Json> condition;
    if (verdict.suspect != nullptr) {
      const v1::WorkerSuspicion& why = verdict.suspect->suspect();
      std::string message =
          absl::StrCat(Short(verdict.suspect->name()), ": ", why.reason(), " (hunt ",
                       Short(why.hunt()), ", ", Rfc3339(TimeOf(why.time())), ")");
      const bool removed_by_hand =
          quarantine.hunt == why.hunt() && !s.HasTaint(kDegradedTaint) && options.taint;
      const bool quarantined = s.Label(kHealthLabel) == "degraded" || s.HasTaint(kDegradedTaint) ||
                               quarantine.hunt == why.hunt();
      bool act = true;
      if (!quarantined) {
        if (in_window + 1 > options.breaker_fraction * plan.nodes) {
          act = false;
          plan.breaker_open = true;
          plan.withheld.push_back(node);
          absl::StrAppend(&message, "; quarantine withheld: the circuit breaker is open (",
                          in_window, " of ", plan.nodes, " nodes quarantined within ",
                          absl::FormatDuration(options.breaker_window), ", at most ",
                          options.breaker_fraction, " of them)");
          plan.events.push_back(Event(options, s, node, absl::StrCat("withheld/", why.hunt()),
                                      "Warning", "QuarantineWithheld", message, now));
        } else {
          ++in_window;
          change.annotations[kQuarantineAnnotation] = QuarantineText(why.hunt(), now);
          change.why.push_back(absl::StrCat("quarantined for ", why.hunt()));
        }
      }
      if (!act) {
        if (s.labels.count(kHealthLabel)) change.labels[kHealthLabel] = std::nullopt;
      } else {
        if (s.Label(kHealthLabel) != "degraded") change.labels[kHealthLabel] = "degraded";
        if (options.taint && !removed_by_hand) SetTaint(&taints, kDegradedTaint, true);
        if (removed_by_hand) {
          change.why.push_back(
              "its taint was removed by hand: not put back until another hunt "
              "confirms it");
        }
      }
      condition = Condition(s, true, "ConfirmedBad", message, now);
    } else if (verdict.measured_by != nullptr &&
               NamedSuspect(*verdict.measured_by, node_of, node)) {
      // The newest hunt that measured it named it a suspect without a
      // quarantine (--no-quarantine, INCONCLUSIVE): its Event says so; the
      // node is left as it is.
    } else if (verdict.measured_by != nullptr || !s.condition.is_null()) {
      const bool measured = verdict.measured_by != nullptr;
      const std::string message =
          measured ? absl::StrFormat("measured healthy by hunt %s (%.2f of the fleet median)",
                                     Short(verdict.measured_by->name()), verdict.measured->ratio())
                   : "no worker of it is SUSPECT any more (cleared)";
      condition = Condition(s, false, measured ? "Healthy" : "Cleared", message, now);
      if (s.Label(kHealthLabel) != "healthy") change.labels[kHealthLabel] = "healthy";
      SetTaint(&taints, kDegradedTaint, false);
      if (s.annotations.count(kQuarantineAnnotation)) {
        change.annotations[kQuarantineAnnotation] = std::nullopt;
      }
    }
    if (condition && !SameCondition(s.condition, *condition)) {
      change.why.push_back(absl::StrCat("condition ", kConditionType, "=",
                                        Text(*condition, "status"), " (",
                                        Text(*condition, "reason"), ")"));
      change.condition = *condition;
    }
    // Testing marks.
    const bool mark = options.mark_testing && testing.count(node) > 0;
    const bool label_mark = mark && !options.mark_testing_taint;
    const bool taint_mark = mark && options.mark_testing_taint;
    if (label_mark && s.Label(kTestingKey) != "true") change.labels[kTestingKey] = "true";
    if (!label_mark && s.labels.count(kTestingKey)) change.labels[kTestingKey] = std::nullopt;
    SetTaint(&taints, kTestingKey, taint_mark);
    if (taints != s.taints) {
      // Same keys in another order is no change.
      auto keys = [](const Json& list) {
        std::set<std::string> out;
        for (const Json& t : list) out.insert(t.dump());
        return out;
      };
      if (keys(taints) != keys(s.taints)) {
        change.taints = taints;
        change.why.push_back(absl::StrCat("taints: ", taints.dump()));
      }
    }
    for (const auto& [key, value] : change.labels) {
      change.why.push_back(value ? absl::StrCat("label ", key, "=", *value)
                                 : absl::StrCat("label ", key, " removed"));
    }
    if (!change.empty()) plan.changes.push_back(std::move(change));
  }

  // Events, once per hunt and node and verdict.
  for (const v1::Workflow& hunt : view.hunts) {
    for (const v1::HuntSuspect& s : hunt.output().hunt().suspects()) {
      std::set<std::string> involved;
      if (!s.worker().empty() && node_of.count(s.worker())) involved.insert(node_of.at(s.worker()));
      for (const std::string& peer : s.peers()) {
        if (node_of.count(peer)) involved.insert(node_of.at(peer));
      }
      const SuspectKind kind = KindOf(s.verdict());
      const std::string who =
          s.worker().empty() ? absl::StrCat("rack ", s.rack()) : Short(s.worker());
      for (const std::string& node : involved) {
        plan.events.push_back(Event(
            options, state.at(node), node, absl::StrCat(hunt.name(), "/", s.verdict(), "/", who),
            kind.type, kind.reason,
            absl::StrCat(s.verdict(), " ", who, " (hunt ", Short(hunt.name()), "): ", s.evidence()),
            now));
      }
    }
  }
  return plan;
}

}  // namespace collbench::kube
