// SPDX-License-Identifier: Apache-2.0
#include "server/ui/ui_sessions.h"

#include <openssl/rand.h>
#include <openssl/sha.h>

#include <algorithm>
#include <random>

#include "absl/strings/escaping.h"

namespace collbench {
namespace {

constexpr size_t kIdBytes = 32;

std::string Digest(absl::string_view id) {
  std::string digest(SHA256_DIGEST_LENGTH, '\0');
  SHA256(reinterpret_cast<const unsigned char*>(id.data()), id.size(),
         reinterpret_cast<unsigned char*>(digest.data()));
  return digest;
}

std::string RandomId() {
  std::string bytes(kIdBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()), kIdBytes) != 1) {
    std::random_device random;  // the kernel's getrandom(), as a fallback
    for (char& b : bytes) b = static_cast<char>(random() & 0xff);
  }
  return absl::BytesToHexString(bytes);
}

}  // namespace

UiSessions::UiSessions(UiSessionOptions options)
    : options_(options),
      logins_(RateLimit{options.login_per_minute / 60.0, std::max(1, options.login_burst)}) {}

std::string UiSessions::Create(Role role, absl::Time now) {
  std::string id = RandomId();
  absl::MutexLock lock(&mu_);
  DropExpired(now);
  while (!sessions_.empty() && sessions_.size() >= std::max<size_t>(1, options_.max_sessions)) {
    auto oldest = std::min_element(
        sessions_.begin(), sessions_.end(),
        [](const auto& a, const auto& b) { return a.second.expires < b.second.expires; });
    sessions_.erase(oldest);
  }
  sessions_[Digest(id)] = Session{role, now + options_.lifetime};
  return id;
}

absl::StatusOr<Role> UiSessions::Find(absl::string_view id, absl::Time now) {
  if (id.empty()) return absl::UnauthenticatedError("no session; sign in at /ui/login");
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(Digest(id));
  if (it == sessions_.end()) {
    return absl::UnauthenticatedError("the session has ended; sign in again at /ui/login");
  }
  if (it->second.expires <= now) {
    sessions_.erase(it);
    return absl::UnauthenticatedError("the session has expired; sign in again at /ui/login");
  }
  return it->second.role;
}

void UiSessions::Revoke(absl::string_view id) {
  absl::MutexLock lock(&mu_);
  sessions_.erase(Digest(id));
}

absl::Duration UiSessions::AdmitLogin(absl::string_view client, absl::Time now) {
  absl::MutexLock lock(&mu_);
  const absl::Duration wait = logins_.Acquire(client, now);
  if (wait > absl::ZeroDuration()) ++login_refusals_;
  return wait;
}

size_t UiSessions::size() const {
  absl::MutexLock lock(&mu_);
  return sessions_.size();
}

int64_t UiSessions::login_refusals() const {
  absl::MutexLock lock(&mu_);
  return login_refusals_;
}

void UiSessions::DropExpired(absl::Time now) {
  absl::erase_if(sessions_, [now](const auto& entry) { return entry.second.expires <= now; });
}

}  // namespace collbench
