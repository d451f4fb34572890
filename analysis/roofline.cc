// SPDX-License-Identifier: Apache-2.0
#include "analysis/roofline.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/run_set.h"
#include "api/convert.h"
#include "common/units.h"
#include "common/worker_labels.h"

namespace collbench {
namespace {

std::string GBps(double bytes_per_s) { return absl::StrFormat("%.3g GB/s", bytes_per_s / 1e9); }

// The memory kinds the copy probe measured (ordinary DRAM, wherever it is
// placed); hbw and dax_kmem are other memories.
bool ProbedMemory(absl::string_view memory) {
  return memory.empty() || memory == "default" || memory == "regular" ||
         memory == "interleave" || memory == "pinned" || absl::StartsWith(memory, "numa:");
}

// A worker's link: the declared rate first, else the fastest sysfs link.
std::pair<double, std::string> LinkOf(const v1::Inventory& inventory) {
  double best = 0;
  std::string name;
  for (const v1::NetworkLink& link : inventory.links()) {
    if (link.source() == "label") return {link.bits_per_s(), "declared link-rate label"};
  }
  for (const v1::NetworkLink& link : inventory.links()) {
    if (link.bits_per_s() > best) {
      best = link.bits_per_s();
      name = absl::StrCat(link.name(), " (sysfs)");
    }
  }
  return {best, name};
}

}  // namespace

PathFacts PathFactsOf(const v1::Run& run,
                      const std::function<const v1::Inventory*(const std::string& worker)>& inventory) {
  PathFacts facts;
  facts.backend = run.spec().backend().empty() ? "mpi" : run.spec().backend();
  facts.transport = TransportName(EffectiveTransport(run));
  facts.memory = run.spec().memory();
  facts.single_copy = run.single_copy_mechanism() == "cma";
  std::map<std::string, HostPath> hosts;
  std::vector<std::string> order;
  for (const v1::RankHost& rank_host : run.hosts()) {
    const std::string host = rank_host.host_id().empty() ? rank_host.worker() : rank_host.host_id();
    auto [it, inserted] = hosts.try_emplace(host);
    HostPath& path = it->second;
    const v1::Inventory* worker = inventory(rank_host.worker());
    const double copy = worker == nullptr ? 0 : worker->memory_bandwidth().copy_bytes_per_s();
    const double all = worker == nullptr ? 0 : worker->memory_bandwidth().copy_all_bytes_per_s();
    const std::pair<double, std::string> link =
        worker == nullptr ? std::pair<double, std::string>{0, ""} : LinkOf(*worker);
    if (inserted) {
      order.push_back(host);
      path.host = host;
      path.copy_bytes_per_s = copy;
      path.copy_all_bytes_per_s = all;
      path.link_bits_per_s = link.first;
      path.link = link.second;
    } else {
      // Co-resident workers measured one host: the smaller figure holds.
      path.copy_bytes_per_s = std::min(path.copy_bytes_per_s, copy);
      path.copy_all_bytes_per_s = std::min(path.copy_all_bytes_per_s, all);
      if (link.first < path.link_bits_per_s) {
        path.link_bits_per_s = link.first;
        path.link = link.second;
      }
    }
    path.ranks += rank_host.slots();
  }
  for (const std::string& host : order) facts.hosts.push_back(hosts[host]);
  return facts;
}

std::optional<Limit> PathLimit(const PathFacts& path, absl::string_view operation) {
  if (path.backend != "mpi" || !ProbedMemory(path.memory) || path.hosts.empty()) return std::nullopt;
  if (path.transport != "shm" && path.transport != "tcp") return std::nullopt;
  // h2h is one rank's memcpy: one copy per byte, like a message.
  const bool point_to_point =
      operation == "latency" || operation == "bw" || operation == "bibw" || operation == "h2h";
  static const char* const kCollectives[] = {"allreduce", "allgather", "reduce_scatter", "alltoall",
                                             "bcast",     "reduce",    "gather",         "scatter"};
  const bool collective = std::find(std::begin(kCollectives), std::end(kCollectives), operation) !=
                          std::end(kCollectives);
  if (!point_to_point && !collective) return std::nullopt;
  const bool both_ways = operation == "bibw";
  const bool cma = path.transport == "shm" && path.single_copy;

  // Copies in host memory per bus byte, per rank.
  double copies = 2;
  if (point_to_point) copies = 1;
  else if (cma) copies = 1;
  if (both_ways && cma) copies = 0.5;
  const std::string copies_text =
      copies == 1 ? "1 copy" : absl::StrCat(absl::SixDigits(copies), " copies");

  double memory = 0;
  std::string memory_text;
  for (const HostPath& host : path.hosts) {
    if (host.copy_bytes_per_s <= 0 || host.ranks <= 0) return std::nullopt;
    const double shared = host.copy_all_bytes_per_s > 0
                              ? host.copy_all_bytes_per_s / host.ranks
                              : host.copy_bytes_per_s;
    const double per_rank = std::min(host.copy_bytes_per_s, shared) / copies;
    if (memory == 0 || per_rank < memory) {
      memory = per_rank;
      memory_text = absl::StrCat("memory min(copy ", GBps(host.copy_bytes_per_s), ", ",
                                 GBps(host.copy_all_bytes_per_s), " / ", host.ranks,
                                 host.ranks == 1 ? " rank" : " ranks", ") / ", copies_text);
    }
  }
  Limit limit;
  limit.busbw_bytes_per_s = memory;
  const std::string where = absl::StrCat(
      path.transport, cma ? " (cma)" : "", ", ", path.hosts.size(),
      path.hosts.size() == 1 ? " host" : " hosts", ": ");
  limit.derivation = absl::StrCat(where, memory_text, " = ", GBps(memory));
  if (path.hosts.size() > 1) {
    double link = 0;
    std::string link_text;
    for (const HostPath& host : path.hosts) {
      if (host.link_bits_per_s <= 0) continue;  // unknown: the memory bound alone
      if (link == 0 || host.link_bits_per_s < link) {
        link = host.link_bits_per_s;
        link_text = absl::StrCat(FormatBitRate(host.link_bits_per_s), " ", host.link, " of ",
                                 host.host);
      }
    }
    if (link > 0) {
      const double link_bytes = link / 8 * (both_ways ? 2 : 1);
      const std::string link_part = absl::StrCat("link ", link_text, both_ways ? " x2 ways" : "",
                                                  " = ", GBps(link_bytes));
      if (link_bytes < memory) {
        limit.busbw_bytes_per_s = link_bytes;
        limit.derivation = absl::StrCat(where, link_part, " (below ", memory_text, " = ",
                                        GBps(memory), ")");
      } else {
        limit.derivation = absl::StrCat(where, memory_text, " = ", GBps(memory), " (below ",
                                        link_part, ")");
      }
    } else {
      limit.derivation += " (no link rate known)";
    }
  }
  return limit;
}

}  // namespace collbench
