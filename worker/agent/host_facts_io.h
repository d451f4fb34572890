// SPDX-License-Identifier: Apache-2.0
// The small reads the inventory modules (inventory.cc, container_facts.cc,
// cgroup_limits.cc) share: a whole file, whether a path exists, and an
// environment variable through a replaceable lookup (tests pass a fake).
// Thread-safe: reads only.
#ifndef COLLBENCH_WORKER_AGENT_HOST_FACTS_IO_H_
#define COLLBENCH_WORKER_AGENT_HOST_FACTS_IO_H_

#include <functional>
#include <optional>
#include <string>

namespace collbench {

// The environment as the inventory sees it; an empty function means the
// process environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The contents of `path`, or nullopt when it cannot be opened.
std::optional<std::string> ReadWholeFile(const std::string& path);

bool PathExists(const std::string& path);

// `name` through `lookup`, or from the process environment when `lookup` is
// empty; nullopt when unset.
std::optional<std::string> LookupEnv(const EnvLookup& lookup, const std::string& name);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_AGENT_HOST_FACTS_IO_H_
