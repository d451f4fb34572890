// SPDX-License-Identifier: Apache-2.0
#include "server/core/watcher_limits.h"

#include "absl/strings/str_cat.h"
#include "server/core/admission.h"

namespace collbench {
namespace {

// Watchers usually last as long as a run; a refused one may try again
// after this.
constexpr int64_t kRetryAfterS = 5;

}  // namespace

WatcherSlot::~WatcherSlot() { limits_->Release(client_); }

absl::StatusOr<std::unique_ptr<WatcherSlot>> WatcherLimits::Acquire(absl::string_view client) {
  const std::string who = client.empty() ? "anonymous" : std::string(client);
  absl::MutexLock lock(&mu_);
  if (options_.max_total > 0 && open_ >= options_.max_total) {
    ++rejections_.total;
    return WithRetryAfter(
        absl::ResourceExhaustedError(absl::StrCat(
            "watcher limit: ", options_.max_total,
            " watchers are open on this coordinator (--max-watchers); retry after ",
            kRetryAfterS, " s")),
        kRetryAfterS);
  }
  int64_t& mine = by_client_[who];
  if (options_.max_per_client > 0 && mine >= options_.max_per_client) {
    ++rejections_.per_client;
    if (mine == 0) by_client_.erase(who);
    return WithRetryAfter(
        absl::ResourceExhaustedError(absl::StrCat(
            "watcher limit: this client (", who, ") has ", mine,
            " watchers open, the most allowed (--max-watchers-per-client); retry after ",
            kRetryAfterS, " s")),
        kRetryAfterS);
  }
  ++mine;
  ++open_;
  return std::unique_ptr<WatcherSlot>(new WatcherSlot(this, who));
}

void WatcherLimits::Release(const std::string& client) {
  absl::MutexLock lock(&mu_);
  --open_;
  auto it = by_client_.find(client);
  if (it != by_client_.end() && --it->second <= 0) by_client_.erase(it);
}

void WatcherLimits::CountTooSlow() {
  absl::MutexLock lock(&mu_);
  ++rejections_.too_slow;
}

void WatcherLimits::CountThreadsBusy() {
  absl::MutexLock lock(&mu_);
  ++rejections_.threads;
}

int64_t WatcherLimits::open() const {
  absl::MutexLock lock(&mu_);
  return open_;
}

WatcherRejections WatcherLimits::rejections() const {
  absl::MutexLock lock(&mu_);
  return rejections_;
}

}  // namespace collbench
