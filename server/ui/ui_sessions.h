// SPDX-License-Identifier: Apache-2.0
// The /ui/ pages' server-side sessions (docs/design/security.md#credentials): a
// login with a token of read access creates a session and the browser's cookie
// holds only its random id (256 bits), never the token. A session ends at its
// expiry or at logout; the table is capped, the oldest session giving way. Only
// SHA-256 digests of the ids are kept, so the table's lookups reveal nothing
// usable about a live id.
//
// Logins are throttled per client (a token bucket: `login_burst` attempts,
// then `login_per_minute`); refusals are counted.
//
// Time is passed in (`now`) so tests drive the clock.
//
// Thread safety: all methods may be called from any thread.
#ifndef COLLBENCH_SERVER_UI_UI_SESSIONS_H_
#define COLLBENCH_SERVER_UI_UI_SESSIONS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/auth/authorizer.h"
#include "common/rate_limiter.h"

namespace collbench {

struct UiSessionOptions {
  absl::Duration lifetime = absl::Hours(12);
  size_t max_sessions = 10'000;
  int login_burst = 10;         // attempts a client may make at once
  double login_per_minute = 6;  // then this many a minute
};

class UiSessions {
 public:
  explicit UiSessions(UiSessionOptions options = {});

  // A new session for a token of `role`; returns its id (64 hex digits).
  std::string Create(Role role, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // The role of the live session `id`; Unauthenticated when there is none
  // (unknown, expired or revoked).
  absl::StatusOr<Role> Find(absl::string_view id, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // Ends the session `id` (no effect when there is none).
  void Revoke(absl::string_view id) ABSL_LOCKS_EXCLUDED(mu_);

  // Takes one login attempt of `client`: zero when it may go ahead, else
  // how long until it may (the refusal is counted).
  absl::Duration AdmitLogin(absl::string_view client, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  absl::Duration lifetime() const { return options_.lifetime; }
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);
  int64_t login_refusals() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Session {
    Role role;
    absl::Time expires;
  };
  void DropExpired(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const UiSessionOptions options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Session> sessions_ ABSL_GUARDED_BY(mu_);  // digest -> session
  RateLimiter logins_ ABSL_GUARDED_BY(mu_);
  int64_t login_refusals_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_UI_UI_SESSIONS_H_
