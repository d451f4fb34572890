// SPDX-License-Identifier: Apache-2.0
// collbench-kube's readers of outside input: a kubeconfig's text
// (kube/kube_config.h), and the API server's JSON as a Node the plan reads
// (kube/node_plan.h) and as a PodList that vouches for workers' nodes
// (kube/worker_nodes.h). None may crash or throw, whatever the shape: a
// kubeconfig is a config or InvalidArgument/NotFound naming the file; a
// node of any shape gets changes for that node only; a pod list clears
// claims or keeps them, never invents one.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kube/kube_config.h"
#include "kube/node_plan.h"
#include "kube/worker_nodes.h"
#include "tests/fuzz/fuzz_check.h"

namespace collbench::kube {
namespace {

void FuzzKubeconfig(const std::string& text) {
  absl::StatusOr<KubeConfig> config = ParseKubeconfig(text, "/nonexistent/kubeconfig");
  if (config.ok()) {
    FUZZ_CHECK(config->server.rfind("http", 0) == 0, config->server);
  } else {
    FUZZ_CHECK(absl::IsInvalidArgument(config.status()) || absl::IsNotFound(config.status()),
               config.status().ToString());
  }
}

void FuzzNode(const nlohmann::json& node) {
  CoordinatorView view;
  v1::Worker w;
  w.set_name("workers/w");
  w.set_agent_address("10.0.0.1:50052");
  w.mutable_inventory()->set_node_name("n");
  w.mutable_suspect()->set_hunt("workflows/h");
  view.workers.push_back(w);
  PlanOptions options;
  options.taint = true;
  options.mark_testing = true;
  const NodePlan plan =
      PlanNodes(view, {{"n", node}}, options, absl::FromUnixSeconds(1'800'000'000));
  for (const NodeChange& change : plan.changes) FUZZ_CHECK(change.node == "n", change.node);

  std::vector<v1::Worker> workers = {w};
  VerifyWorkerNodes(&workers, node);
  const std::string& kept = workers[0].inventory().node_name();
  FUZZ_CHECK(kept.empty() || kept == "n", kept);
}

}  // namespace
}  // namespace collbench::kube

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(collbench::fuzz::AsText(data, size));
  collbench::kube::FuzzKubeconfig(text);
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_discarded()) collbench::kube::FuzzNode(json);
  return 0;
}
