// SPDX-License-Identifier: Apache-2.0
#include "server/scheduling/scheduler.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace collbench::scheduling {
namespace {

using Placement = std::vector<PlacedWorker>;
using HostWorkers =
    absl::btree_map<std::string, std::vector<const WorkerInfo*>>;

absl::string_view BareId(absl::string_view name) {
  absl::ConsumePrefix(&name, "workers/");
  return name;
}

const WorkerInfo* FindWorker(const std::vector<WorkerInfo>& workers,
                             absl::string_view requested) {
  for (const WorkerInfo& worker : workers) {
    if (WorkerNameMatches(requested, worker.name)) return &worker;
  }
  return nullptr;
}

absl::Status FieldError(absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", message));
}

absl::string_view PolicyName(PlacementPolicy policy) {
  switch (policy) {
    case PlacementPolicy::kPack:
      return "PACK";
    case PlacementPolicy::kSpread:
      return "SPREAD";
    case PlacementPolicy::kExplicit:
      return "EXPLICIT";
  }
  return "?";
}

bool Offers(const WorkerInfo& worker, absl::string_view need) {
  if (worker.offers == nullptr) return true;
  const absl::string_view field = need.substr(0, need.find('='));
  for (const std::string& offer : *worker.offers) {
    if (offer == need || offer == absl::StrCat(field, "=*")) return true;
  }
  // "field=a|b": any of the alternatives (a worker selector's names).
  const absl::string_view value = need.substr(field.size() + 1);
  if (absl::StrContains(value, '|')) {
    for (absl::string_view alternative : absl::StrSplit(value, '|')) {
      const std::string one = absl::StrCat(field, "=", alternative);
      for (const std::string& offer : *worker.offers) {
        if (offer == one) return true;
      }
    }
  }
  return false;
}

// The first need no worker with slots offers, as a field error listing what
// the workers do offer for that field.
absl::Status CheckNeedsOffered(const PendingRun& run, const std::vector<WorkerInfo>& workers) {
  for (const std::string& need : run.needs) {
    const size_t eq = need.find('=');
    const absl::string_view field = absl::string_view(need).substr(0, eq);
    const absl::string_view value = absl::string_view(need).substr(eq + 1);
    absl::btree_set<std::string> offered;
    bool found = false;
    for (const WorkerInfo& worker : workers) {
      if (worker.slots <= 0) continue;
      if (Offers(worker, need)) {
        found = true;
        break;
      }
      if (worker.offers == nullptr) continue;
      for (const std::string& offer : *worker.offers) {
        if (absl::StartsWith(offer, absl::StrCat(field, "="))) offered.insert(offer.substr(eq + 1));
      }
    }
    if (found) continue;
    return FieldError(field, absl::StrCat("no registered worker offers \"", value, "\" (",
                                          offered.empty() ? "they offer none"
                                                          : absl::StrCat("they offer ",
                                                                         absl::StrJoin(offered, ", ")),
                                          ")"));
  }
  return absl::OkStatus();
}

// The checks that need no workers, then those against the registered ones.
absl::Status CheckExplicit(const PendingRun& run,
                           const std::vector<WorkerInfo>& all_workers) {
  const int count = static_cast<int>(run.workers.size());
  if (count == 0) {
    return FieldError("placement.workers",
                      "EXPLICIT placement needs at least one worker");
  }
  if (run.ranks_per_worker < 1) {
    return FieldError("placement.ranks_per_worker",
                      absl::StrFormat("must be at least 1 for EXPLICIT "
                                      "placement, got %d",
                                      run.ranks_per_worker));
  }
  if (static_cast<int64_t>(count) * run.ranks_per_worker != run.ranks) {
    return FieldError(
        "ranks", absl::StrFormat("%d ranks, but EXPLICIT placement gives %d "
                                 "workers x %d ranks_per_worker = %d",
                                 run.ranks, count, run.ranks_per_worker,
                                 count * run.ranks_per_worker));
  }
  absl::flat_hash_set<absl::string_view> seen;
  for (const std::string& requested : run.workers) {
    if (!seen.insert(BareId(requested)).second) {
      return FieldError(
          "placement.workers",
          absl::StrCat("worker \"", requested, "\" is listed more than once"));
    }
    const WorkerInfo* worker = FindWorker(all_workers, requested);
    if (worker == nullptr) {
      return FieldError(
          "placement.workers",
          absl::StrCat("worker \"", requested, "\" is not registered"));
    }
    for (const std::string& need : run.needs) {
      if (!Offers(*worker, need)) {
        return FieldError("placement.workers",
                          absl::StrCat(worker->name, " does not offer ", need));
      }
    }
    if (worker->slots < run.ranks_per_worker) {
      return FieldError(
          "placement.ranks_per_worker",
          absl::StrFormat("%d ranks per worker exceed the %d slots of %s",
                          run.ranks_per_worker, worker->slots, worker->name));
    }
  }
  return absl::OkStatus();
}

// Workers and hosts a run may not use: held by running runs, or reserved for
// runs that wait.
struct Occupancy {
  absl::flat_hash_set<std::string> taken_workers;
  absl::flat_hash_set<std::string> whole_hosts;  // held by non-share runs
};

// The fleet's order (WorkerInfo::admit_time): first admitted first, then
// by name.
bool AdmittedBefore(const WorkerInfo* a, const WorkerInfo* b) {
  return std::tie(a->admit_time, a->name) < std::tie(b->admit_time, b->name);
}

// The registered workers, indexed by name and by host.
class Cluster {
 public:
  explicit Cluster(const std::vector<WorkerInfo>& workers) {
    for (const WorkerInfo& worker : workers) {
      if (!by_name_.emplace(worker.name, &worker).second) continue;
      by_host_[worker.host_id].push_back(&worker);
    }
    for (auto& [host, on_host] : by_host_) {
      std::sort(on_host.begin(), on_host.end(), AdmittedBefore);
    }
  }

  const WorkerInfo* Get(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
  }
  // `requested` as given, else as "workers/{id}", else its bare id.
  const WorkerInfo* Find(absl::string_view requested) const {
    for (const std::string& name :
         {std::string(requested), absl::StrCat("workers/", requested),
          std::string(BareId(requested))}) {
      if (const WorkerInfo* worker = Get(name)) return worker;
    }
    return nullptr;
  }
  const HostWorkers& by_host() const { return by_host_; }
  // When the first of the host's registered workers was admitted (its
  // list is in the fleet's order): hosts are ordered by it, then by host
  // id, whichever of their workers are free.
  absl::Time HostAdmitTime(const std::string& host) const {
    return by_host_.at(host).front()->admit_time;
  }
  size_t WorkersOnHost(const std::string& host) const {
    auto it = by_host_.find(host);
    return it == by_host_.end() ? 0 : it->second.size();
  }

  void Occupy(const std::vector<std::string>& held, bool share_host,
              Occupancy* occupancy) const {
    for (const std::string& name : held) {
      occupancy->taken_workers.insert(name);
      const WorkerInfo* worker = Get(name);
      if (worker != nullptr && !share_host) {
        occupancy->whole_hosts.insert(worker->host_id);
      }
    }
  }

  // The workers a run placed on `placement` holds, sorted by name.
  std::vector<std::string> Held(const Placement& placement,
                                bool share_host) const {
    absl::btree_set<std::string> held;
    for (const PlacedWorker& placed : placement) {
      held.insert(placed.worker);
      if (share_host) continue;
      for (const WorkerInfo* worker : by_host_.at(placed.host_id)) {
        held.insert(worker->name);
      }
    }
    return {held.begin(), held.end()};
  }

 private:
  absl::flat_hash_map<std::string, const WorkerInfo*> by_name_;
  HostWorkers by_host_;
};

using Occupancies = std::vector<const Occupancy*>;

// Whether `worker` could ever take ranks of `run`: it has slots and offers
// every need. Held, draining and lost workers included.
bool CanHost(const WorkerInfo& worker, const PendingRun& run) {
  return worker.slots > 0 && OffersAll(worker, run.needs);
}

// Whether `run` names `worker`: in its EXPLICIT placement or by a worker
// selector's name ("workers=a|b").
bool Names(const PendingRun& run, const WorkerInfo& worker) {
  const absl::string_view id = BareId(worker.name);
  if (run.policy == PlacementPolicy::kExplicit) {
    for (const std::string& requested : run.workers) {
      if (BareId(requested) == id) return true;
    }
    return false;
  }
  for (const std::string& need : run.needs) {
    absl::string_view value = need;
    if (!absl::ConsumePrefix(&value, "workers=") || absl::StrContains(value, '=')) continue;
    for (absl::string_view name : absl::StrSplit(value, '|')) {
      if (name == id) return true;
    }
  }
  return false;
}

// Whether `run` may put ranks on `worker` given what is held or reserved.
bool Usable(const Cluster& cluster, const WorkerInfo& worker,
            const PendingRun& run, const Occupancies& occupied) {
  if (!worker.schedulable || !CanHost(worker, run)) return false;
  if (worker.suspect && !Names(run, worker)) return false;
  for (const Occupancy* occupancy : occupied) {
    if (occupancy->taken_workers.contains(worker.name)) return false;
    if (occupancy->whole_hosts.contains(worker.host_id)) return false;
    if (run.share_host) continue;
    for (const WorkerInfo* neighbour : cluster.by_host().at(worker.host_id)) {
      if (occupancy->taken_workers.contains(neighbour->name)) return false;
    }
  }
  return true;
}

// The usable workers, by host; each host's list in the fleet's order.
HostWorkers Candidates(const Cluster& cluster, const PendingRun& run,
                       const Occupancies& occupied) {
  HostWorkers candidates;
  for (const auto& [host, on_host] : cluster.by_host()) {
    for (const WorkerInfo* worker : on_host) {
      if (Usable(cluster, *worker, run, occupied)) {
        candidates[host].push_back(worker);
      }
    }
  }
  return candidates;
}

int TotalSlots(const std::vector<const WorkerInfo*>& workers) {
  int total = 0;
  for (const WorkerInfo* worker : workers) total += worker->slots;
  return total;
}

// Fills `workers` in order, each up to its slots, until `ranks` are placed.
// Returns the placement, or nothing if the workers have too few slots.
std::optional<Placement> Fill(const std::vector<const WorkerInfo*>& workers,
                              int ranks) {
  Placement placement;
  for (const WorkerInfo* worker : workers) {
    if (ranks == 0) break;
    const int on_worker = std::min(ranks, worker->slots);
    placement.push_back({worker->name, worker->host_id, on_worker});
    ranks -= on_worker;
  }
  if (ranks > 0) return std::nullopt;
  return placement;
}

int WorkersNeeded(const std::vector<const WorkerInfo*>& by_slots, int ranks) {
  int needed = 0;
  for (const WorkerInfo* worker : by_slots) {
    if (ranks <= 0) break;
    ranks -= worker->slots;
    ++needed;
  }
  return needed;
}

std::optional<Placement> PlacePack(const Cluster& cluster, HostWorkers candidates, int ranks) {
  auto most_slots_first = [](const WorkerInfo* a, const WorkerInfo* b) {
    return b->slots != a->slots ? b->slots < a->slots : AdmittedBefore(a, b);
  };
  // (workers needed, free slots, first admitted, host_id) of the best
  // single-host fit.
  std::optional<std::tuple<int, int, absl::Time, std::string>> best;
  // (-free slots, first admitted, host_id)
  std::vector<std::tuple<int, absl::Time, std::string>> hosts;
  for (auto& [host, workers] : candidates) {
    std::sort(workers.begin(), workers.end(), most_slots_first);
    const int free_slots = TotalSlots(workers);
    const absl::Time admitted = cluster.HostAdmitTime(host);
    hosts.emplace_back(-free_slots, admitted, host);
    if (free_slots < ranks) continue;
    std::tuple<int, int, absl::Time, std::string> fit(WorkersNeeded(workers, ranks), free_slots,
                                                      admitted, host);
    if (!best.has_value() || fit < *best) best = std::move(fit);
  }
  if (best.has_value()) return Fill(candidates.at(std::get<3>(*best)), ranks);
  std::sort(hosts.begin(), hosts.end());
  std::vector<const WorkerInfo*> order;
  for (const auto& [unused, admitted, host] : hosts) {
    const auto& workers = candidates.at(host);
    order.insert(order.end(), workers.begin(), workers.end());
  }
  return Fill(order, ranks);
}

std::optional<Placement> PlaceSpread(const Cluster& cluster,
                                     const HostWorkers& candidates, int ranks) {
  // (registered, first admitted, host_id)
  std::vector<std::tuple<size_t, absl::Time, std::string>> hosts;
  for (const auto& [host, workers] : candidates) {
    hosts.emplace_back(cluster.WorkersOnHost(host), cluster.HostAdmitTime(host), host);
  }
  std::sort(hosts.begin(), hosts.end());
  Placement placement;
  bool took_any = true;
  for (size_t round = 0; took_any; ++round) {
    took_any = false;
    for (const auto& [unused, admitted, host] : hosts) {
      const auto& workers = candidates.at(host);
      if (round >= workers.size()) continue;
      if (static_cast<int>(placement.size()) == ranks) return placement;
      placement.push_back({workers[round]->name, host, 1});
      took_any = true;
    }
  }
  if (static_cast<int>(placement.size()) == ranks) return placement;
  return std::nullopt;
}

std::optional<Placement> PlaceExplicit(const Cluster& cluster,
                                       const PendingRun& run,
                                       const Occupancies& occupied) {
  Placement placement;
  for (const std::string& requested : run.workers) {
    const WorkerInfo* worker = cluster.Find(requested);
    if (worker == nullptr || worker->slots < run.ranks_per_worker ||
        !Usable(cluster, *worker, run, occupied)) {
      return std::nullopt;
    }
    placement.push_back({worker->name, worker->host_id, run.ranks_per_worker});
  }
  return placement;
}

// Where `run` goes if it may use what `occupied` leaves free.
// REQUIRES: CheckSatisfiable(run, ...) is OK.
std::optional<Placement> Place(const Cluster& cluster, const PendingRun& run,
                               const Occupancies& occupied) {
  switch (run.policy) {
    case PlacementPolicy::kPack:
      return PlacePack(cluster, Candidates(cluster, run, occupied), run.ranks);
    case PlacementPolicy::kSpread:
      return PlaceSpread(cluster, Candidates(cluster, run, occupied),
                         run.ranks);
    case PlacementPolicy::kExplicit:
      return PlaceExplicit(cluster, run, occupied);
  }
  return std::nullopt;
}

// The registered workers `run` could ever put ranks on: the named ones
// for EXPLICIT, else every one with slots that offers its needs.
std::vector<const WorkerInfo*> Eligible(const Cluster& cluster, const PendingRun& run,
                                        const std::vector<WorkerInfo>& workers) {
  std::vector<const WorkerInfo*> eligible;
  if (run.policy == PlacementPolicy::kExplicit) {
    for (const std::string& requested : run.workers) {
      if (const WorkerInfo* worker = cluster.Find(requested)) eligible.push_back(worker);
    }
    return eligible;
  }
  for (const WorkerInfo& worker : workers) {
    if (CanHost(worker, run)) eligible.push_back(&worker);
  }
  return eligible;
}

// Names, at most a few, then how many more.
std::string FewOf(const std::vector<std::string>& names) {
  constexpr size_t kShown = 4;
  if (names.size() <= kShown) return absl::StrJoin(names, ", ");
  return absl::StrCat(absl::StrJoin(names.begin(), names.begin() + kShown, ", "), " and ",
                      names.size() - kShown, " more");
}

// Why `run`, which fits on the registered workers, does not start now.
// `fits_when_free`: whether it fits once nothing is held or reserved.
std::string WhyWaiting(const Cluster& cluster, const PendingRun& run,
                       const std::vector<WorkerInfo>& workers,
                       const std::vector<ActiveRun>& active, const Occupancy& held,
                       bool fits_when_free) {
  const std::vector<const WorkerInfo*> eligible = Eligible(cluster, run, workers);
  if (!fits_when_free) {
    // Even with nothing held it does not fit: it needs workers that take
    // no work now.
    std::vector<std::string> away;
    for (const WorkerInfo* worker : eligible) {
      if (!worker->schedulable) {
        away.push_back(absl::StrCat(worker->name, " (",
                                    worker->unavailable.empty() ? "unavailable" : worker->unavailable,
                                    ")"));
      } else if (worker->suspect && !Names(run, *worker)) {
        away.push_back(absl::StrCat(worker->name,
                                    " (SUSPECT: name it to use it, or clear it with collbench "
                                    "workers clear)"));
      }
    }
    return absl::StrCat("waiting for ", away.empty() ? "free slots" : FewOf(away));
  }
  if (!Place(cluster, run, {&held}).has_value()) {
    absl::flat_hash_set<std::string> hosts;
    absl::flat_hash_set<std::string> names;
    for (const WorkerInfo* worker : eligible) {
      hosts.insert(worker->host_id);
      names.insert(worker->name);
    }
    std::vector<std::string> holders;
    for (const ActiveRun& a : active) {
      for (const std::string& held_worker : a.held_workers) {
        const WorkerInfo* worker = cluster.Find(held_worker);
        if (names.contains(held_worker) ||
            (worker != nullptr && !run.share_host && hosts.contains(worker->host_id))) {
          holders.push_back(a.name);
          break;
        }
      }
    }
    return absl::StrCat("waiting for ", holders.empty() ? "running runs" : FewOf(holders),
                        " to release workers");
  }
  return "waiting behind runs queued earlier (the workers it needs are kept for them)";
}

}  // namespace

bool WorkerNameMatches(absl::string_view requested,
                       absl::string_view worker_name) {
  return !requested.empty() && BareId(requested) == BareId(worker_name);
}

bool OffersAll(const WorkerInfo& worker, const std::vector<std::string>& needs) {
  for (const std::string& need : needs) {
    if (!Offers(worker, need)) return false;
  }
  return true;
}

absl::Status CheckSatisfiable(const PendingRun& run,
                              const std::vector<WorkerInfo>& all_workers) {
  if (run.ranks < 1) {
    return FieldError("ranks",
                      absl::StrFormat("must be at least 1, got %d", run.ranks));
  }
  if (run.policy == PlacementPolicy::kExplicit) {
    return CheckExplicit(run, all_workers);  // judges each named worker's offers
  }
  if (!run.workers.empty()) {
    return FieldError("placement.workers",
                      absl::StrCat("only EXPLICIT placement takes a worker "
                                   "list; the policy is ",
                                   PolicyName(run.policy)));
  }
  if (absl::Status offered = CheckNeedsOffered(run, all_workers); !offered.ok()) {
    return offered;
  }
  int total_slots = 0;
  int usable_workers = 0;
  for (const WorkerInfo& worker : all_workers) {
    if (!CanHost(worker, run)) continue;
    total_slots += worker.slots;
    ++usable_workers;
  }
  const std::string which =
      run.needs.empty() ? "registered workers"
                        : absl::StrCat("registered workers that offer ", absl::StrJoin(run.needs, ", "));
  if (run.policy == PlacementPolicy::kSpread && run.ranks > usable_workers) {
    return FieldError(
        "ranks", absl::StrFormat("SPREAD places one rank per worker, and %d "
                                 "ranks exceed the %d %s",
                                 run.ranks, usable_workers, which));
  }
  if (run.ranks > total_slots) {
    return FieldError("ranks",
                      absl::StrFormat("%d ranks exceed the %d slots of all %d %s",
                                      run.ranks, total_slots, usable_workers, which));
  }
  return absl::OkStatus();
}

ScheduleResult Scheduler::Schedule(const ScheduleInput& input) const {
  const Cluster cluster(input.workers);
  Occupancy held;
  for (const ActiveRun& active : input.active) {
    cluster.Occupy(active.held_workers, active.share_host, &held);
  }
  Occupancy reserved;
  ScheduleResult result;
  bool someone_waits = false;
  for (const PendingRun& run : input.queue) {
    if (absl::Status status = CheckSatisfiable(run, input.workers);
        !status.ok()) {
      result.unsatisfiable.push_back({run.name, std::move(status)});
      continue;
    }
    if (someone_waits && !options_.backfill) {
      result.waiting.push_back({run.name, "waiting behind runs queued earlier (no backfill)"});
      continue;
    }
    if (std::optional<Placement> placement =
            Place(cluster, run, {&held, &reserved})) {
      Assignment started{run.name, std::move(*placement), {}, run.share_host};
      started.held_workers = cluster.Held(started.placement, run.share_host);
      cluster.Occupy(started.held_workers, run.share_host, &held);
      result.started.push_back(std::move(started));
      continue;
    }
    someone_waits = true;
    // Where it would go once the held workers are free: keep that for it,
    // apart from earlier reservations when it fits beside them.
    std::optional<Placement> future = Place(cluster, run, {&reserved});
    if (!future.has_value()) future = Place(cluster, run, {});
    result.waiting.push_back({run.name, WhyWaiting(cluster, run, input.workers, input.active,
                                                   held, future.has_value())});
    if (future.has_value()) {
      cluster.Occupy(cluster.Held(*future, run.share_host), run.share_host,
                     &reserved);
    }
  }
  result.reserved_workers.assign(reserved.taken_workers.begin(),
                                 reserved.taken_workers.end());
  std::sort(result.reserved_workers.begin(), result.reserved_workers.end());
  return result;
}

}  // namespace collbench::scheduling
