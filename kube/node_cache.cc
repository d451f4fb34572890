// SPDX-License-Identifier: Apache-2.0
#include "kube/node_cache.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "kube/json_fields.h"

namespace collbench::kube {
namespace {

constexpr char kNodes[] = "/api/v1/nodes";

}  // namespace

NodeCache::NodeCache(KubeClient* client, NodeCacheOptions options,
                     std::function<void(absl::Duration)> sleep)
    : client_(client), options_(std::move(options)), sleep_(std::move(sleep)) {}

std::map<std::string, Json> NodeCache::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return nodes_;
}

absl::StatusOr<NodeList> ListNodes(KubeClient& client, const std::string& label_selector) {
  std::string path = kNodes;
  if (!label_selector.empty()) path += "?labelSelector=" + EscapeQueryValue(label_selector);
  absl::StatusOr<Json> list = client.Get(path);
  if (!list.ok()) return list.status();
  NodeList out;
  for (const Json& node : ArrayOf(*list, "items")) out.nodes[NameOf(node)] = node;
  out.resource_version = ResourceVersionOf(*list);
  return out;
}

absl::StatusOr<std::string> NodeCache::List() {
  absl::StatusOr<NodeList> list = ListNodes(*client_, options_.label_selector);
  if (!list.ok()) return list.status();
  {
    absl::MutexLock lock(&mu_);
    nodes_ = std::move(list->nodes);
  }
  ++lists_;
  synced_ = true;
  return list->resource_version;
}

bool NodeCache::Apply(const Json& event, std::string* resource_version) {
  const std::string type = Text(event, "type");
  const Json& object = Field(event, "object");
  const std::string version = ResourceVersionOf(object);
  if (!version.empty()) *resource_version = version;
  if (type == "BOOKMARK") return true;
  const std::string name = NameOf(object);
  if (name.empty()) return false;
  absl::MutexLock lock(&mu_);
  if (type == "DELETED") {
    nodes_.erase(name);
  } else {
    nodes_[name] = object;
  }
  return true;
}

void NodeCache::Run() {
  absl::Duration backoff = options_.backoff;
  std::string version;
  bool listed = false;
  while (!stopped_) {
    if (!listed) {
      absl::StatusOr<std::string> listed_version = List();
      if (!listed_version.ok()) {
        if (stopped_) break;
        LogWarn("kube.nodes", absl::StrCat("listing nodes: ", listed_version.status().message(),
                                           "; again in ", absl::FormatDuration(backoff)));
        sleep_(backoff);
        backoff = std::min(backoff * 2, options_.max_backoff);
        continue;
      }
      version = *listed_version;
      listed = true;
      backoff = options_.backoff;
    }
    WatchOptions watch;
    watch.resource_version = version;
    watch.label_selector = options_.label_selector;
    watch.timeout_seconds = options_.watch_timeout_s;
    watch.bookmarks = options_.bookmarks;
    ++watches_;
    const absl::Status ended = client_->Watch(kNodes, watch, [&](const Json& event) {
      Apply(event, &version);
      return !stopped_.load();
    });
    if (ended.ok() || stopped_) continue;  // the server ended it: watch again from `version`
    if (ended.code() == absl::StatusCode::kOutOfRange) {
      LogInfo("kube.nodes.relist", absl::StrCat("the node watch's version is too old (",
                                                ended.message(), "): listing again"));
    } else {
      LogWarn("kube.nodes", absl::StrCat("watching nodes: ", ended.message(), "; listing again in ",
                                         absl::FormatDuration(backoff)));
      sleep_(backoff);
      backoff = std::min(backoff * 2, options_.max_backoff);
    }
    listed = false;
  }
}

}  // namespace collbench::kube
