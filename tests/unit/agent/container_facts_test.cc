// SPDX-License-Identifier: Apache-2.0
// Container detection (worker/agent/container_facts.h) on fake /proc trees:
// each runtime is concluded from its own signals, every signal is shown as
// read, and a VM's stray /.dockerenv is not taken for a container.
#include "worker/agent/container_facts.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/agent/fake_tree.h"

namespace collbench {
namespace {

using ::testing::Contains;
using ::testing::IsEmpty;

// An overlay root and an /etc/hostname bind-mounted from `hostname_source`.
std::string ContainerMountinfo(const std::string& hostname_source) {
  return "600 500 0:50 / / rw,relatime - overlay overlay rw,lowerdir=/l,upperdir=/u\n"
         "601 600 0:51 / /proc rw - proc proc rw\n"
         "610 600 254:1 " +
         hostname_source + " /etc/hostname rw - ext4 /dev/vda1 rw\n";
}

ContainerProbe Probe(const testing::FakeTree& tree, std::map<std::string, std::string> env = {}) {
  ContainerProbe probe;
  probe.root = tree.root();
  probe.proc_root = tree.proc();
  probe.get_env = [env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  return probe;
}

// "source=observed (runtime, conclusive|hint)" for readable failures.
std::map<std::string, std::string> Signals(const v1::ContainerFacts& facts) {
  std::map<std::string, std::string> out;
  for (const v1::ContainerSignal& s : facts.signals()) {
    out[s.source()] = s.observed() + " -> " + (s.runtime().empty() ? "-" : s.runtime()) +
                      (s.conclusive() ? "" : " (hint)");
  }
  return out;
}

TEST(ContainerFactsTest, DockerOnCgroupV1) {
  testing::FakeTree tree;
  tree.Write(".dockerenv", "");
  tree.Write("proc/1/environ", std::string("PATH=/bin\0HOME=/root\0", 21));
  tree.Write("proc/self/cgroup", "12:memory:/docker/0123abcd\n0::/\n");
  tree.Write("proc/self/mountinfo",
             ContainerMountinfo("/var/lib/docker/containers/0123abcd/hostname"));
  const v1::ContainerFacts facts = DetectContainer(Probe(tree));
  EXPECT_TRUE(facts.in_container());
  EXPECT_EQ(facts.runtime(), "docker");
  EXPECT_EQ(facts.confidence(), "high");
  EXPECT_EQ(Signals(facts), (std::map<std::string, std::string>{
                                {"/.dockerenv", "present -> docker (hint)"},
                                {"/proc/self/cgroup", "12:memory:/docker/0123abcd -> docker"},
                                {"/proc/self/mountinfo /", "overlay -> - (hint)"},
                                {"/proc/self/mountinfo /etc/hostname",
                                 "/var/lib/docker/containers/0123abcd/hostname -> docker"}}));
}

TEST(ContainerFactsTest, DockerWithItsOwnCgroupNamespaceIsKnownByItsHostnameMount) {
  testing::FakeTree tree;
  tree.Write(".dockerenv", "");
  tree.Write("proc/1/environ", "");
  tree.Write("proc/self/cgroup", "0::/\n");  // cgroup v2, private namespace: no path
  tree.Write("proc/self/mountinfo",
             ContainerMountinfo("/var/lib/docker/containers/0123abcd/hostname"));
  const v1::ContainerFacts facts = DetectContainer(Probe(tree));
  EXPECT_TRUE(facts.in_container());
  EXPECT_EQ(facts.runtime(), "docker");
}

TEST(ContainerFactsTest, Podman) {
  testing::FakeTree tree;
  tree.Write("run/.containerenv", "engine=\"podman-4.3.1\"\nname=\"worker-a\"\nrootless=0\n");
  tree.Write("proc/1/environ", std::string("container=podman\0TERM=xterm\0", 28));
  tree.Write("proc/self/cgroup", "0::/machine.slice/libpod-5678ef.scope/container\n");
  tree.Write("proc/self/mountinfo",
             ContainerMountinfo("/var/lib/containers/storage/overlay-containers/5678ef/"
                                "userdata/hostname"));
  tree.Link("proc/self/ns/pid", "pid:[4026532290]");
  const v1::ContainerFacts facts = DetectContainer(Probe(tree, {{"container", "podman"}}));
  EXPECT_TRUE(facts.in_container());
  EXPECT_EQ(facts.runtime(), "podman");
  EXPECT_EQ(facts.confidence(), "high");
  const std::map<std::string, std::string> signals = Signals(facts);
  EXPECT_EQ(signals.at("/run/.containerenv"), "engine=podman-4.3.1 -> podman");
  EXPECT_EQ(signals.at("/proc/1/environ container"), "podman -> podman");
  EXPECT_EQ(signals.at("environ container"), "podman -> podman");
  EXPECT_EQ(signals.at("/proc/self/cgroup"),
            "0::/machine.slice/libpod-5678ef.scope/container -> podman");
  EXPECT_EQ(signals.at("/proc/self/ns/pid"), "a private namespace -> - (hint)");
}

TEST(ContainerFactsTest, KubernetesWinsOverTheEngineThatRunsThePod) {
  testing::FakeTree tree;
  tree.Write("proc/1/environ", "");
  tree.Write("proc/self/cgroup",
             "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12.slice/"
             "crio-9abc.scope\n");
  // The pod's hostname file comes from the engine's sandbox: that signal
  // names containerd, the orchestrator still wins.
  tree.Write("proc/self/mountinfo",
             ContainerMountinfo("/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/"
                                "4f/hostname"));
  const v1::ContainerFacts facts =
      DetectContainer(Probe(tree, {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}}));
  EXPECT_TRUE(facts.in_container());
  EXPECT_EQ(facts.runtime(), "kubernetes");
  const std::map<std::string, std::string> signals = Signals(facts);
  EXPECT_EQ(signals.at("KUBERNETES_SERVICE_HOST"), "10.96.0.1 -> kubernetes");
  EXPECT_THAT(signals.at("/proc/self/cgroup"),
              ::testing::EndsWith("crio-9abc.scope -> kubernetes"));
  EXPECT_THAT(signals.at("/proc/self/mountinfo /etc/hostname"),
              ::testing::EndsWith("/hostname -> containerd"));
}

TEST(ContainerFactsTest, CriOAndContainerdAreNamedByTheirCgroups) {
  testing::FakeTree tree;
  tree.Write("proc/1/environ", "");
  tree.Write("proc/self/cgroup", "0::/system.slice/crio-77aa.scope\n");
  EXPECT_EQ(DetectContainer(Probe(tree)).runtime(), "cri-o");
  tree.Write("proc/self/cgroup", "0::/system.slice/cri-containerd-88bb.scope\n");
  EXPECT_EQ(DetectContainer(Probe(tree)).runtime(), "containerd");
}

TEST(ContainerFactsTest, AVmWithOnlyADockerenvFileIsNotAContainer) {
  testing::FakeTree tree;
  tree.Write(".dockerenv", "");
  tree.Write("proc/1/environ", std::string("HOME=/\0TERM=linux\0", 18));
  tree.Write("proc/self/cgroup", "4:memory:/process_api/2d91\n1:cpu:/\n0::/\n");
  tree.Write("proc/self/mountinfo", "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n");
  tree.Link("proc/self/ns/pid", "pid:[4026531836]");
  const v1::ContainerFacts facts = DetectContainer(Probe(tree));
  EXPECT_FALSE(facts.in_container());
  EXPECT_EQ(facts.runtime(), "");
  EXPECT_EQ(facts.confidence(), "low");
  EXPECT_EQ(Signals(facts),
            (std::map<std::string, std::string>{
                {"/.dockerenv", "present -> docker (hint)"},
                {"/proc/self/ns/pid", "the initial (host) namespace -> - (hint)"}}));
}

TEST(ContainerFactsTest, ABareHostHasNoSignal) {
  testing::FakeTree tree;
  tree.Write("proc/1/environ", "");
  tree.Write("proc/self/cgroup", "0::/user.slice/user-0.slice/session-1.scope\n");
  const v1::ContainerFacts facts = DetectContainer(Probe(tree));
  EXPECT_FALSE(facts.in_container());
  EXPECT_EQ(facts.confidence(), "none");
  EXPECT_THAT(facts.signals(), IsEmpty());
}

TEST(ContainerFactsTest, AContainerVariableNamingNoRuntimeIsAnUnknownContainer) {
  testing::FakeTree tree;  // no /proc/1/environ: unreadable, reported, no vote
  const v1::ContainerFacts facts = DetectContainer(Probe(tree, {{"container", "oci"}}));
  EXPECT_TRUE(facts.in_container());
  EXPECT_EQ(facts.runtime(), "unknown");
  EXPECT_EQ(Signals(facts).at("/proc/1/environ container"), "unreadable -> - (hint)");
  EXPECT_EQ(Signals(facts).at("environ container"), "oci -> -");
}

TEST(ContainerFactsTest, NamespaceIdentitiesAreTheLinkInodes) {
  EXPECT_EQ(NamespaceInode("ipc:[4026531839]"), 4026531839u);
  EXPECT_EQ(NamespaceInode("ipc:4026531839"), 0u);
  EXPECT_EQ(NamespaceInode("net:[x]"), 0u);
  testing::FakeTree tree;
  tree.Link("proc/self/ns/ipc", "ipc:[4026532281]");
  tree.Link("proc/self/ns/net", "net:[4026532284]");
  tree.Link("proc/self/ns/pid", "pid:[4026532282]");
  const v1::Namespaces ns = ReadNamespaces(tree.proc());
  EXPECT_EQ(ns.ipc(), 4026532281u);
  EXPECT_EQ(ns.net(), 4026532284u);
  EXPECT_EQ(ns.pid(), 4026532282u);
  EXPECT_EQ(ns.mnt(), 0u);  // not there: unknown
}

TEST(ContainerFactsTest, ThisProcessHasNamespacesAndADevShm) {
  const v1::Namespaces ns = ReadNamespaces("/proc");
  EXPECT_GT(ns.ipc(), 0u);
  EXPECT_GT(ns.net(), 0u);
  EXPECT_GT(ns.pid(), 0u);
  EXPECT_GT(FileSystemBytes("/dev/shm"), 0u);
  EXPECT_EQ(FileSystemBytes("/nonexistent"), 0u);
}

}  // namespace
}  // namespace collbench
