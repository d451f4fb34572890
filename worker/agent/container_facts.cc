// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/container_facts.h"

#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "worker/agent/host_facts_io.h"

namespace collbench {
namespace {

// Runtimes in the order a conclusion prefers them: the orchestrator first,
// then the engine that runs its pods.
constexpr const char* kRuntimeOrder[] = {"kubernetes", "podman", "cri-o",         "containerd",
                                         "docker",     "lxc",    "systemd-nspawn"};

void Add(v1::ContainerFacts* facts, std::string source, std::string observed, std::string runtime,
         bool conclusive) {
  v1::ContainerSignal* signal = facts->add_signals();
  signal->set_source(std::move(source));
  signal->set_observed(std::move(observed));
  signal->set_runtime(std::move(runtime));
  signal->set_conclusive(conclusive);
}

// The runtime a `container=` value names ("" for e.g. "oci").
std::string RuntimeOfContainerVariable(absl::string_view value) {
  if (absl::StartsWith(value, "podman")) return "podman";
  if (value == "docker") return "docker";
  if (absl::StartsWith(value, "lxc")) return "lxc";
  if (value == "systemd-nspawn") return "systemd-nspawn";
  return "";
}

// The runtime a cgroup path names, or "".
std::string RuntimeOfCgroupPath(absl::string_view path) {
  const std::pair<const char*, const char*> markers[] = {
      {"kubepods", "kubernetes"},
      {"libpod", "podman"},
      {"crio-", "cri-o"},
      {"cri-containerd", "containerd"},
      {"/containerd", "containerd"},
      {"docker", "docker"},
      {"/lxc", "lxc"},
      {"lxc.payload", "lxc"},
      {"machine.slice/machine-", "systemd-nspawn"}};
  for (const auto& [marker, runtime] : markers) {
    if (absl::StrContains(path, marker)) return runtime;
  }
  return "";
}

// The runtime whose store an /etc/hostname bind mount comes from, or "".
std::string RuntimeOfHostnameSource(absl::string_view root) {
  const std::pair<const char*, const char*> markers[] = {
      {"/kubelet/pods/", "kubernetes"}, {"/containers/storage/", "podman"},
      {"/userdata/hostname", "podman"}, {"/docker/containers/", "docker"},
      {"/containerd/", "containerd"},   {"/crio/", "cri-o"}};
  for (const auto& [marker, runtime] : markers) {
    if (absl::StrContains(root, marker)) return runtime;
  }
  return "";
}

// PID 1's `container` variable; nullopt when its environment is unreadable.
std::optional<std::string> Pid1ContainerVariable(const std::string& proc_root, bool* readable) {
  std::optional<std::string> environ = ReadWholeFile(proc_root + "/1/environ");
  *readable = environ.has_value();
  if (!environ.has_value()) return std::nullopt;
  for (absl::string_view entry : absl::StrSplit(*environ, '\0')) {
    if (absl::ConsumePrefix(&entry, "container=")) return std::string(entry);
  }
  return std::nullopt;
}

void ContainerFiles(const ContainerProbe& probe, v1::ContainerFacts* facts) {
  if (PathExists(probe.root + "/.dockerenv")) Add(facts, "/.dockerenv", "present", "docker", false);
  if (std::optional<std::string> text = ReadWholeFile(probe.root + "/run/.containerenv")) {
    std::string engine = "present";
    for (absl::string_view line : absl::StrSplit(*text, '\n')) {
      if (absl::ConsumePrefix(&line, "engine=")) {
        engine = absl::StrCat("engine=", absl::StripSuffix(absl::StripPrefix(line, "\""), "\""));
      }
    }
    Add(facts, "/run/.containerenv", engine, "podman", true);
  }
}

void ContainerVariables(const ContainerProbe& probe, v1::ContainerFacts* facts) {
  bool readable = false;
  std::optional<std::string> pid1 = Pid1ContainerVariable(probe.proc_root, &readable);
  if (!readable) {
    Add(facts, "/proc/1/environ container", "unreadable", "", false);
  } else if (pid1.has_value()) {
    Add(facts, "/proc/1/environ container", *pid1, RuntimeOfContainerVariable(*pid1), true);
  }
  if (std::optional<std::string> own = LookupEnv(probe.get_env, "container");
      own.has_value() && !own->empty()) {
    Add(facts, "environ container", *own, RuntimeOfContainerVariable(*own), true);
  }
  if (std::optional<std::string> k8s = LookupEnv(probe.get_env, "KUBERNETES_SERVICE_HOST");
      k8s.has_value()) {
    Add(facts, "KUBERNETES_SERVICE_HOST", *k8s, "kubernetes", true);
  }
}

void CgroupPaths(const ContainerProbe& probe, v1::ContainerFacts* facts) {
  std::optional<std::string> text = ReadWholeFile(probe.proc_root + "/self/cgroup");
  if (!text.has_value()) return;
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipWhitespace())) {
    std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (parts.size() != 3) continue;
    const std::string runtime = RuntimeOfCgroupPath(parts[2]);
    if (!runtime.empty()) {
      Add(facts, "/proc/self/cgroup", std::string(line), runtime, true);
      return;
    }
  }
}

void Mounts(const ContainerProbe& probe, v1::ContainerFacts* facts) {
  std::optional<std::string> text = ReadWholeFile(probe.proc_root + "/self/mountinfo");
  if (!text.has_value()) return;
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipWhitespace())) {
    // ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    const auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 5 || dash == fields.end() || dash + 1 == fields.end()) continue;
    const absl::string_view root = fields[3], mount_point = fields[4], type = *(dash + 1);
    if (mount_point == "/" && type == "overlay") {
      Add(facts, "/proc/self/mountinfo /", "overlay", "", false);
    }
    if (mount_point == "/etc/hostname") {
      const std::string runtime = RuntimeOfHostnameSource(root);
      Add(facts, "/proc/self/mountinfo /etc/hostname", std::string(root), runtime,
          !runtime.empty());
    }
  }
}

void PidNamespace(const ContainerProbe& probe, v1::ContainerFacts* facts) {
  char link[256] = {};
  const std::string path = probe.proc_root + "/self/ns/pid";
  const ssize_t n = readlink(path.c_str(), link, sizeof(link) - 1);
  if (n <= 0) return;
  const uint64_t inode = NamespaceInode(absl::string_view(link, n));
  Add(facts, "/proc/self/ns/pid",
      inode == kInitialPidNamespace ? "the initial (host) namespace" : "a private namespace", "",
      false);
}

void Conclude(v1::ContainerFacts* facts) {
  bool conclusive = false, hint = false;
  std::string runtime;
  for (const char* candidate : kRuntimeOrder) {
    for (const v1::ContainerSignal& signal : facts->signals()) {
      if (signal.conclusive() && signal.runtime() == candidate && runtime.empty()) {
        runtime = candidate;
      }
    }
  }
  for (const v1::ContainerSignal& signal : facts->signals()) {
    conclusive |= signal.conclusive();
    hint |= !signal.conclusive() && signal.source() != "/proc/self/ns/pid" &&
            signal.observed() != "unreadable";
  }
  facts->set_in_container(conclusive);
  facts->set_runtime(conclusive ? (runtime.empty() ? "unknown" : runtime) : "");
  facts->set_confidence(conclusive ? "high" : hint ? "low" : "none");
}

}  // namespace

uint64_t NamespaceInode(absl::string_view link) {
  const size_t open = link.find(":[");
  uint64_t inode = 0;
  if (open == absl::string_view::npos || !absl::EndsWith(link, "]")) return 0;
  const absl::string_view digits = link.substr(open + 2, link.size() - open - 3);
  return absl::SimpleAtoi(digits, &inode) ? inode : 0;
}

v1::Namespaces ReadNamespaces(const std::string& proc_root) {
  auto inode = [&proc_root](const char* name) -> uint64_t {
    char link[256] = {};
    const std::string path = absl::StrCat(proc_root, "/self/ns/", name);
    const ssize_t n = readlink(path.c_str(), link, sizeof(link) - 1);
    return n > 0 ? NamespaceInode(absl::string_view(link, n)) : 0;
  };
  v1::Namespaces ns;
  ns.set_ipc(inode("ipc"));
  ns.set_net(inode("net"));
  ns.set_pid(inode("pid"));
  ns.set_mnt(inode("mnt"));
  ns.set_uts(inode("uts"));
  return ns;
}

uint64_t FileSystemBytes(const std::string& path) {
  struct statfs info;
  if (statfs(path.c_str(), &info) != 0) return 0;
  return static_cast<uint64_t>(info.f_blocks) * static_cast<uint64_t>(info.f_bsize);
}

v1::ContainerFacts DetectContainer(const ContainerProbe& probe) {
  v1::ContainerFacts facts;
  ContainerFiles(probe, &facts);
  ContainerVariables(probe, &facts);
  CgroupPaths(probe, &facts);
  Mounts(probe, &facts);
  PidNamespace(probe, &facts);
  Conclude(&facts);
  return facts;
}

}  // namespace collbench
