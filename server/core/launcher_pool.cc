// SPDX-License-Identifier: Apache-2.0
#include "server/core/launcher_pool.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "server/core/worker_directory.h"

namespace collbench {

namespace {
constexpr absl::string_view kPrefix = "launchers/";
}  // namespace

bool LauncherPool::IsLauncherName(absl::string_view name) {
  return absl::StartsWith(name, kPrefix);
}

absl::StatusOr<LauncherPool::Registration> LauncherPool::Register(const v1::Register& hello,
                                                                  absl::Time now) {
  absl::Status refused = options_.tokens.CheckToken(hello.join_token(), Role::kLauncher);
  const char* outcome = "launcher_refused_token";
  if (refused.ok()) {
    refused = ValidateWorkerId(hello.worker_id());
    outcome = "launcher_refused_invalid";
  }
  if (!refused.ok()) {
    int64_t count = 0;
    {
      absl::MutexLock lock(&mu_);
      count = ++registrations_[outcome];
    }
    // At the 1st, 2nd, 4th, 8th... refusal of a kind, as the workers' are:
    // a flood of guesses does not flood the log.
    if ((count & (count - 1)) == 0) {
      LogWarn("launcher.register_refused",
              absl::StrCat("a launcher's registration was refused (", outcome, ", ", count,
                           " so far): ", refused.message()))
          .Str("reason", outcome)
          .Int("count", count)
          .Error(refused);
    }
    if (absl::IsInvalidArgument(refused)) return refused;
    return absl::PermissionDeniedError(
        absl::StrCat("the launcher's token is not accepted: ", refused.message()));
  }
  Registration registration;
  registration.name = absl::StrCat(kPrefix, hello.worker_id());
  {
    absl::MutexLock lock(&mu_);
    registration.session = next_session_++;
    connected_[registration.name] = {registration.session, now, /*silent=*/false};
    ++registrations_["launcher"];
  }
  registration.reply.set_name(registration.name);
  registration.reply.set_heartbeat_interval_ms(
      static_cast<int32_t>(absl::ToInt64Milliseconds(options_.heartbeat_interval)));
  LogInfo("launcher.registered", absl::StrCat(registration.name, " registered"))
      .Str("launcher", registration.name)
      .Int("active_runs", hello.active_runs_size());
  return registration;
}

void LauncherPool::Heartbeat(const std::string& name, uint64_t session, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = connected_.find(name);
  if (it == connected_.end() || it->second.session != session) return;
  it->second.last_heard = now;
  it->second.silent = false;  // heard again on the same stream
}

bool LauncherPool::Disconnect(const std::string& name, uint64_t session) {
  absl::MutexLock lock(&mu_);
  auto it = connected_.find(name);
  if (it == connected_.end() || it->second.session != session) return false;
  connected_.erase(it);
  return true;
}

std::vector<std::string> LauncherPool::ExpireStale(absl::Time now, absl::Duration timeout) {
  std::vector<std::string> lost;
  absl::MutexLock lock(&mu_);
  for (auto& [name, launcher] : connected_) {
    if (!launcher.silent && now - launcher.last_heard > timeout) {
      launcher.silent = true;
      lost.push_back(name);
    }
  }
  return lost;
}

std::optional<std::string> LauncherPool::Pick(
    const absl::flat_hash_map<std::string, int>& load) const {
  absl::MutexLock lock(&mu_);
  std::optional<std::string> best;
  int best_load = 0;
  for (const auto& [name, launcher] : connected_) {  // by name: the first of equals wins
    if (launcher.silent) continue;
    auto it = load.find(name);
    const int runs = it == load.end() ? 0 : it->second;
    if (!best.has_value() || runs < best_load) {
      best = name;
      best_load = runs;
    }
  }
  return best;
}

int LauncherPool::connected() const {
  absl::MutexLock lock(&mu_);
  int count = 0;
  for (const auto& [name, launcher] : connected_) count += launcher.silent ? 0 : 1;
  return count;
}

std::map<std::string, int64_t> LauncherPool::registrations() const {
  absl::MutexLock lock(&mu_);
  return registrations_;
}

}  // namespace collbench
