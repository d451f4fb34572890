// SPDX-License-Identifier: Apache-2.0
// The Kubernetes client (kube/kube_client.h) and the node cache
// (kube/node_cache.h) against the test API server (tests/kube/
// kube_apiserver.py, started per test in a temporary folder): requests,
// the three patch types, conflicts and their retry, credentials, watches
// that resume and expire, the cache's relist after a 410, and the client's
// rate limit. Skipped when python3 or openssl is missing.
#include "kube/kube_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/clock.h"
#include "gtest/gtest.h"
#include "kube/kube_config.h"
#include "kube/node_cache.h"
#include "kube/node_labels.h"

namespace collbench::kube {
namespace {

bool OnPath(const char* program) {
  return std::system(absl::StrCat("command -v ", program, " >/dev/null 2>&1").c_str()) == 0;
}

class KubeClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!OnPath("python3") || !OnPath("openssl")) GTEST_SKIP() << "python3 or openssl missing";
    char tmpl[] = "/tmp/kube-client-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    int out[2];
    ASSERT_EQ(pipe(out), 0);
    server_ = fork();
    ASSERT_GE(server_, 0);
    if (server_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      execlp("python3", "python3", COLLBENCH_TEST_APISERVER, "--dir", dir_.c_str(), "--history",
             "1000", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    // "READY https://127.0.0.1:PORT"
    std::string line;
    pollfd wait{out[0], POLLIN, 0};
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (!absl::StrContains(line, "\n") && absl::Now() < deadline) {
      if (poll(&wait, 1, 1000) <= 0) continue;
      char c;
      if (read(out[0], &c, 1) != 1) break;
      line += c;
    }
    close(out[0]);
    ASSERT_TRUE(absl::StartsWith(line, "READY ")) << "the test API server said: " << line;
    absl::StatusOr<KubeConfig> admin = LoadKubeconfig(dir_ + "/kubeconfig-admin");
    ASSERT_TRUE(admin.ok()) << admin.status();
    admin_config_ = *admin;
    admin_ = std::make_unique<KubeClient>(admin_config_, KubeClientOptions{0, 1}, &clock_);
  }
  void TearDown() override {
    admin_.reset();
    if (server_ > 0) {
      kill(server_, SIGTERM);
      waitpid(server_, nullptr, 0);
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  Json NodeObject(const std::string& name) {
    return Json{
        {"apiVersion", "v1"},
        {"kind", "Node"},
        {"metadata", {{"name", name}, {"labels", {{"rack", "r1"}}}}},
        {"status", {{"conditions", Json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  }
  std::string RvOf(const Json& object) { return object["metadata"].value("resourceVersion", ""); }

  FakeClock clock_;
  std::string dir_;
  pid_t server_ = -1;
  KubeConfig admin_config_;
  std::unique_ptr<KubeClient> admin_;
};

TEST_F(KubeClientTest, RequestsPatchesAndTheirErrors) {
  ASSERT_TRUE(admin_->Create("/api/v1/nodes", NodeObject("n1")).ok());
  EXPECT_EQ(admin_->Create("/api/v1/nodes", NodeObject("n1")).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(admin_->Get("/api/v1/nodes/n2").status().code(), absl::StatusCode::kNotFound);
  // Merge patch: a label set, one removed.
  absl::StatusOr<Json> node = admin_->Patch(
      "/api/v1/nodes/n1", PatchType::kMerge,
      Json{{"metadata", {{"labels", {{"collbench.io/health", "degraded"}, {"rack", nullptr}}}}}});
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ((*node)["metadata"]["labels"], (Json{{"collbench.io/health", "degraded"}}));
  // Strategic merge of the status' conditions: merged by type.
  node =
      admin_->Patch("/api/v1/nodes/n1/status", PatchType::kStrategicMerge,
                    Json{{"status",
                          {{"conditions", Json::array({{{"type", "CollectivePerformanceDegraded"},
                                                        {"status", "True"},
                                                        {"reason", "ConfirmedBad"}}})}}}});
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ((*node)["status"]["conditions"].size(), 2u);
  // A merge patch over a stale version is a conflict (kAborted), which
  // RetryOnConflict answers by reading again.
  const std::string stale = RvOf(*node);
  ASSERT_TRUE(admin_
                  ->Patch("/api/v1/nodes/n1", PatchType::kMerge,
                          Json{{"metadata", {{"labels", {{"other", "x"}}}}}})
                  .ok());
  const Json over_stale = {
      {"metadata", {{"resourceVersion", stale}}},
      {"spec", {{"taints", Json::array({{{"key", "k"}, {"effect", "NoSchedule"}}})}}}};
  absl::Status conflict = admin_->Patch("/api/v1/nodes/n1", PatchType::kMerge, over_stale).status();
  EXPECT_EQ(conflict.code(), absl::StatusCode::kAborted) << conflict;
  EXPECT_TRUE(absl::StrContains(conflict.message(), "PATCH /api/v1/nodes/n1: 409")) << conflict;
  int tries = 0;
  std::string version = stale;
  const absl::Status retried = RetryOnConflict(3, [&]() -> absl::Status {
    ++tries;
    Json patch = over_stale;
    patch["metadata"]["resourceVersion"] = version;
    absl::Status s = admin_->Patch("/api/v1/nodes/n1", PatchType::kMerge, patch).status();
    if (s.code() == absl::StatusCode::kAborted) version = RvOf(*admin_->Get("/api/v1/nodes/n1"));
    return s;
  });
  EXPECT_TRUE(retried.ok()) << retried;
  EXPECT_EQ(tries, 2);
  // JSON patch, and a failed test operation changes nothing.
  EXPECT_EQ(
      admin_
          ->Patch("/api/v1/nodes/n1", PatchType::kJson,
                  Json::array({{{"op", "test"}, {"path", "/metadata/labels/other"}, {"value", "y"}},
                               {{"op", "remove"}, {"path", "/metadata/labels/other"}}}))
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*admin_->Get("/api/v1/nodes/n1"))["metadata"]["labels"]["other"], "x");
  EXPECT_TRUE(admin_->Delete("/api/v1/nodes/n1").ok());
  EXPECT_EQ(admin_->Get("/api/v1/nodes/n1").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(KubeClientTest, CredentialsAreCheckedAndTheAnswerSaysWhich) {
  KubeConfig wrong = admin_config_;
  wrong.token = "not-a-token";
  EXPECT_EQ(KubeClient(wrong, {}, &clock_).Get("/api/v1/nodes").status().code(),
            absl::StatusCode::kUnauthenticated);
  // The controller's token and the client certificate authenticate; with no
  // rules given to them the server refuses them (403, not 401).
  for (const char* file : {"kubeconfig-token", "kubeconfig-cert"}) {
    absl::StatusOr<KubeConfig> config = LoadKubeconfig(dir_ + "/" + file);
    ASSERT_TRUE(config.ok()) << config.status();
    const absl::Status refused = KubeClient(*config, {}, &clock_).Get("/api/v1/nodes").status();
    EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied) << file << ": " << refused;
  }
  // A certificate that did not sign the server's as the CA: no answer is
  // trusted.
  absl::StatusOr<KubeConfig> cert = LoadKubeconfig(dir_ + "/kubeconfig-cert");
  ASSERT_TRUE(cert.ok()) << cert.status();
  KubeConfig other_ca = admin_config_;
  other_ca.ca_pem = cert->client_cert_pem;
  EXPECT_EQ(KubeClient(other_ca, {}, &clock_).Get("/api/v1/nodes").status().code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(KubeClientTest, AWatchResumesFromAVersionAndExpiresWhenItIsCompactedAway) {
  ASSERT_TRUE(admin_->Create("/api/v1/nodes", NodeObject("n1")).ok());
  absl::StatusOr<Json> list = admin_->Get("/api/v1/nodes");
  ASSERT_TRUE(list.ok());
  const std::string version = RvOf(*list);
  ASSERT_TRUE(admin_->Create("/api/v1/nodes", NodeObject("n2")).ok());
  std::vector<std::string> seen;
  WatchOptions from;
  from.resource_version = version;
  from.timeout_seconds = 5;
  ASSERT_TRUE(admin_
                  ->Watch("/api/v1/nodes", from,
                          [&](const Json& event) {
                            if (event["type"] == "BOOKMARK") return true;
                            seen.push_back(absl::StrCat(
                                event["type"].get<std::string>(), " ",
                                event["object"]["metadata"]["name"].get<std::string>()));
                            return false;  // the first is enough
                          })
                  .ok());
  EXPECT_EQ(seen, std::vector<std::string>{"ADDED n2"});
  ASSERT_TRUE(admin_->Create("/testing/compact", Json::object()).ok());
  const absl::Status expired =
      admin_->Watch("/api/v1/nodes", from, [](const Json&) { return true; });
  EXPECT_EQ(expired.code(), absl::StatusCode::kOutOfRange) << expired;
}

TEST_F(KubeClientTest, TheNodeCacheListsAgainAfterA410AndKeepsFollowing) {
  ASSERT_TRUE(admin_->Create("/api/v1/nodes", NodeObject("n1")).ok());
  NodeCacheOptions options;
  options.watch_timeout_s = 1;
  options.bookmarks = false;  // its version stays at the last node event
  NodeCache cache(admin_.get(), options, [](absl::Duration d) { absl::SleepFor(d); });
  std::thread run([&] { cache.Run(); });
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (!cache.synced() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
  ASSERT_TRUE(cache.synced());
  // Something other than a node moves the version on; the history is
  // dropped: the next watch, from the last node event's version, gets 410.
  ASSERT_TRUE(
      admin_
          ->Create(
              "/api/v1/namespaces/default/configmaps",
              Json{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "bump"}}}})
          .ok());
  ASSERT_TRUE(admin_->Create("/testing/compact", Json::object()).ok());
  while (cache.lists() < 2 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(50));
  EXPECT_GE(cache.lists(), 2);
  ASSERT_TRUE(admin_->Create("/api/v1/nodes", NodeObject("n2")).ok());
  while (cache.Snapshot().count("n2") == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(cache.Snapshot().count("n2"), 1u);
  cache.Stop();
  admin_->Stop();
  run.join();
}

TEST_F(KubeClientTest, ANodesLabelsNamedAreReadForItsWorker) {
  Json node = NodeObject("n1");
  node["metadata"]["labels"] = {{"collbench.io/rack", "r7"},
                                {"topology.kubernetes.io/zone", "z1"},
                                {"kubernetes.io/hostname", "n1"}};
  ASSERT_TRUE(admin_->Create("/api/v1/nodes", node).ok());
  absl::StatusOr<std::map<std::string, std::string>> labels = NodeLabels(
      *admin_, "n1",
      {"collbench.io/rack", "topology.kubernetes.io/zone", "network.topology.nvidia.com/leaf"});
  ASSERT_TRUE(labels.ok()) << labels.status();
  EXPECT_EQ(*labels, (std::map<std::string, std::string>{{"collbench.io/rack", "r7"},
                                                         {"topology.kubernetes.io/zone", "z1"}}));
  EXPECT_EQ(NodeLabels(*admin_, "n2", {"collbench.io/rack"}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(KubeClientTest, TheRateLimitSpacesRequestsAfterTheBurst) {
  absl::Duration slept;
  KubeClient limited(admin_config_, KubeClientOptions{2, 1}, &clock_, [&](absl::Duration d) {
    slept += d;
    clock_.Advance(d);
  });
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(limited.Get("/api/v1/nodes").ok());
  // One at once, then one every half second.
  EXPECT_GE(slept, absl::Milliseconds(1999));
  EXPECT_LE(slept, absl::Milliseconds(2001));
  EXPECT_EQ(limited.requests(), 5);
}

}  // namespace
}  // namespace collbench::kube
