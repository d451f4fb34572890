// SPDX-License-Identifier: Apache-2.0
#include "client/container_format.h"

#include <map>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/worker_labels.h"

namespace collbench {
namespace {

std::string Bytes(uint64_t bytes) {
  if (bytes == 0) return "-";
  if (bytes >= (uint64_t{1} << 30)) return absl::StrFormat("%.1fG", bytes / double(1 << 30));
  return absl::StrFormat("%.0fM", bytes / double(1 << 20));
}

std::string Inode(uint64_t inode) { return inode == 0 ? "?" : absl::StrCat(inode); }

bool HasFacts(const v1::ContainerFacts& facts) {
  return !facts.confidence().empty() || facts.namespaces().ipc() != 0;
}

// "private IPC", "shared IPC", "IPC in 2 namespaces" or "IPC unknown" over
// the run's workers, with namespace ids compared within one host only.
std::string Sharing(const v1::Run& run, const char* what,
                    uint64_t (v1::Namespaces::*inode)() const) {
  std::set<std::pair<std::string, uint64_t>> distinct;
  for (const v1::RankHost& h : run.hosts()) {
    const uint64_t id = (h.container().namespaces().*inode)();
    if (id == 0) return absl::StrCat(what, " unknown");
    distinct.insert({h.host_id(), id});
  }
  if (distinct.size() == 1) return absl::StrCat("shared ", what);
  if (distinct.size() == static_cast<size_t>(run.hosts_size())) {
    return absl::StrCat("private ", what);
  }
  return absl::StrCat(what, " in ", distinct.size(), " namespaces");
}

}  // namespace

std::string ContainerLabel(const v1::ContainerFacts& facts) {
  if (!HasFacts(facts)) return "-";
  if (facts.in_container()) return facts.runtime();
  return facts.confidence() == "low" ? "host?" : "host";
}

std::string CpuLimitText(const v1::CgroupLimits& limits) {
  return limits.cpu_limit() > 0 ? absl::StrFormat("%.3g", limits.cpu_limit()) : "-";
}

std::string FormatWorkerDetail(const v1::Worker& worker) {
  const v1::Inventory& inv = worker.inventory();
  const v1::ContainerFacts& c = inv.container();
  std::string out = absl::StrFormat("%s: %s (confidence %s)\n", worker.name(), ContainerLabel(c),
                                    c.confidence().empty() ? "-" : c.confidence());
  for (const v1::ContainerSignal& s : c.signals()) {
    absl::StrAppendFormat(
        &out, "    signal %-36s %s%s\n", s.source(), s.observed(),
        s.runtime().empty() ? (s.conclusive() ? "" : "  [hint]")
                            : absl::StrCat("  -> ", s.runtime(), s.conclusive() ? "" : " [hint]"));
  }
  const v1::Namespaces& ns = c.namespaces();
  absl::StrAppendFormat(&out, "    namespaces ipc %s net %s pid %s mnt %s uts %s\n",
                        Inode(ns.ipc()), Inode(ns.net()), Inode(ns.pid()), Inode(ns.mnt()),
                        Inode(ns.uts()));
  const v1::CgroupLimits& cg = c.cgroup();
  absl::StrAppendFormat(&out,
                        "    cgroup v%d %s: cpu limit %s (host %d CPUs), memory limit %s (host "
                        "%s); /dev/shm %s\n",
                        cg.version(), cg.path().empty() ? "-" : cg.path(), CpuLimitText(cg),
                        inv.host_cpus(), Bytes(cg.memory_limit_bytes()),
                        Bytes(inv.host_memory_bytes()), Bytes(c.dev_shm_bytes()));
  const std::map<std::string, std::string> labels(inv.labels().begin(), inv.labels().end());
  absl::StrAppendFormat(&out, "    labels %s\n",
                        labels.empty() ? "-" : FormatWorkerLabels(labels));
  if (!inv.node_name().empty()) absl::StrAppendFormat(&out, "    node %s\n", inv.node_name());
  return out;
}

std::string DescribePlacement(const v1::Run& run) {
  if (run.hosts().empty()) return "";
  std::set<std::string> hosts;
  std::set<int> slots;
  std::map<std::string, int> runtimes;
  bool facts = true;
  for (const v1::RankHost& h : run.hosts()) {
    hosts.insert(h.host_id());
    slots.insert(h.slots());
    facts &= HasFacts(h.container());
    ++runtimes[ContainerLabel(h.container())];
  }
  const int workers = run.hosts_size();
  std::string out = absl::StrFormat("%d worker%s on %d host%s", workers, workers == 1 ? "" : "s",
                                    hosts.size(), hosts.size() == 1 ? "" : "s");
  if (slots.size() == 1) {
    const int each = *slots.begin();
    absl::StrAppend(&out, workers == 1
                              ? absl::StrCat(", ", each, each == 1 ? " rank" : " ranks")
                              : absl::StrCat(", ", each, each == 1 ? " rank" : " ranks", " each"));
  }
  if (!facts) return absl::StrCat(out, "; container facts not recorded");
  std::vector<std::string> kinds;
  for (const auto& [label, count] : runtimes) kinds.push_back(absl::StrCat(label, " x", count));
  absl::StrAppend(&out, "; containers: ", absl::StrJoin(kinds, ", "));
  if (workers > 1) {
    absl::StrAppend(&out, ", ", Sharing(run, "IPC", &v1::Namespaces::ipc), ", ",
                    Sharing(run, "net", &v1::Namespaces::net));
  }
  if (run.shared_ipc() && run.spec().transport() == v1::SHM) {
    absl::StrAppend(&out, "; shm across workers, single-copy ", run.single_copy_mechanism());
  }
  return out;
}

std::string FormatRankHosts(const v1::Run& run) {
  std::string out;
  for (const v1::RankHost& h : run.hosts()) {
    const v1::ContainerFacts& c = h.container();
    const v1::CgroupLimits& cg = c.cgroup();
    absl::StrAppendFormat(
        &out,
        "#   %s on %s (host %s): %s, %d rank%s, ipc %s net %s pid %s, cpu "
        "limit %s, memory limit %s, /dev/shm %s\n",
        h.worker(), h.hostname().empty() ? "-" : h.hostname(), h.host_id().substr(0, 16),
        ContainerLabel(c), h.slots(), h.slots() == 1 ? "" : "s", Inode(c.namespaces().ipc()),
        Inode(c.namespaces().net()), Inode(c.namespaces().pid()), CpuLimitText(cg),
        Bytes(cg.memory_limit_bytes()), Bytes(c.dev_shm_bytes()));
  }
  return out;
}

}  // namespace collbench
