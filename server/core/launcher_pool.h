// SPDX-License-Identifier: Apache-2.0
// The launchers connected now (docs/design/security.md#the-launcher): the
// collbench-launcher processes the operator deploys and trusts like the
// coordinator, which start every run that spans more than one worker. A
// launcher joins on the workers' gateway stream with Register.launcher set
// and a `launcher` token; it is named launchers/{id}, takes no ranks, is
// never placed and never appears among the workers.
//
// The pool knows each launcher's stream session and when it was last heard
// from; the run lifecycle asks it for one (Pick) when a run spanning
// workers starts, and is told when one is lost.
//
// Thread safety: every method may be called from any thread; the pool's
// lock is a leaf (nothing is called under it).
#ifndef COLLBENCH_SERVER_CORE_LAUNCHER_POOL_H_
#define COLLBENCH_SERVER_CORE_LAUNCHER_POOL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collbench/v1/gateway.pb.h"
#include "server/auth/authorizer.h"
#include "server/core/worker_directory.h"

namespace collbench {

struct LauncherPoolOptions {
  // The gateway's tokens: a launcher presents one of role `launcher`
  // (with no gateway tokens at all, as under `collbench local`, none is
  // needed).
  Authorizer tokens;
  // What launchers are told to use (Registered.heartbeat_interval_ms).
  absl::Duration heartbeat_interval = absl::Seconds(1);
};

class LauncherPool {
 public:
  // name is "launchers/{id}".
  using Registration = WorkerDirectory::Registration;

  explicit LauncherPool(LauncherPoolOptions options) : options_(std::move(options)) {}

  // Whether `name` is a launcher's ("launchers/...").
  static bool IsLauncherName(absl::string_view name);

  // A launcher's Register (hello.launcher set). PermissionDenied or
  // Unauthenticated when the token is not a launcher token, InvalidArgument
  // naming the field for a bad id. A launcher already connected under the
  // same id is replaced (its session ends: Heartbeat and Disconnect for the
  // old session are ignored).
  absl::StatusOr<Registration> Register(const v1::Register& hello, absl::Time now);
  void Heartbeat(const std::string& name, uint64_t session, absl::Time now);
  // True when `session` was the launcher's current one (it is now gone).
  bool Disconnect(const std::string& name, uint64_t session);
  // Launchers not heard from within `timeout` that were not yet silent:
  // they are not picked until heard from again (or they reconnect).
  std::vector<std::string> ExpireStale(absl::Time now, absl::Duration timeout);

  // The connected launcher with the fewest runs in `load` (launcher name ->
  // runs it starts now), ties broken by name; nullopt when none is
  // connected.
  std::optional<std::string> Pick(const absl::flat_hash_map<std::string, int>& load) const;
  int connected() const;
  // Registrations by outcome ("launcher", "launcher_refused_token",
  // "launcher_refused_invalid"), counted beside the workers' in
  // collbench_worker_registrations_total (Fleet::worker_counts).
  std::map<std::string, int64_t> registrations() const;

 private:
  struct Connected {
    uint64_t session = 0;
    absl::Time last_heard;
    // Not heard from within the timeout: not picked until it is again.
    bool silent = false;
  };

  const LauncherPoolOptions options_;
  mutable absl::Mutex mu_;
  std::map<std::string, Connected> connected_ ABSL_GUARDED_BY(mu_);
  uint64_t next_session_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::string, int64_t> registrations_ ABSL_GUARDED_BY(mu_);
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_LAUNCHER_POOL_H_
