// SPDX-License-Identifier: Apache-2.0
#include "server/core/watch_hub.h"

#include <algorithm>

namespace collbench {

void WatchHub::AddObserver(std::shared_ptr<RunEventSink> observer) {
  absl::MutexLock lock(&mu_);
  observers_.push_back(std::move(observer));
}

void WatchHub::Subscribe(const std::string& run, std::shared_ptr<RunEventSink> sink) {
  absl::MutexLock lock(&mu_);
  sinks_[run].push_back(std::move(sink));
}

void WatchHub::Unsubscribe(const std::string& run, const RunEventSink* sink) {
  absl::MutexLock lock(&mu_);
  auto it = sinks_.find(run);
  if (it == sinks_.end()) return;
  auto& list = it->second;
  list.erase(std::remove_if(list.begin(), list.end(),
                            [sink](const auto& s) { return s.get() == sink; }),
             list.end());
  if (list.empty()) sinks_.erase(it);
}

void WatchHub::Publish(const v1::RunEvent& event) {
  std::vector<std::shared_ptr<RunEventSink>> targets;
  {
    absl::MutexLock lock(&mu_);
    targets = observers_;
    auto it = sinks_.find(event.run());
    if (it != sinks_.end()) targets.insert(targets.end(), it->second.begin(), it->second.end());
  }
  for (const auto& sink : targets) sink->OnEvent(event);
}

void WatchHub::PublishDeleted(const std::vector<std::string>& runs) {
  if (runs.empty()) return;
  std::vector<std::shared_ptr<RunEventSink>> targets;
  {
    absl::MutexLock lock(&mu_);
    targets = observers_;
  }
  for (const auto& observer : targets) observer->OnRunsDeleted(runs);
}

void WatchHub::End(const std::string& run) {
  std::vector<std::shared_ptr<RunEventSink>> targets;
  {
    absl::MutexLock lock(&mu_);
    auto it = sinks_.find(run);
    if (it == sinks_.end()) return;
    targets = std::move(it->second);
    sinks_.erase(it);
  }
  for (const auto& sink : targets) sink->OnEnd();
}

void WatchHub::EndAll() {
  std::map<std::string, std::vector<std::shared_ptr<RunEventSink>>> all;
  {
    absl::MutexLock lock(&mu_);
    all.swap(sinks_);
  }
  for (auto& [run, list] : all) {
    for (const auto& sink : list) sink->OnEnd();
  }
}

size_t WatchHub::watcher_count() const {
  absl::MutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& [run, list] : sinks_) n += list.size();
  return n;
}

}  // namespace collbench
