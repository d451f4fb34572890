// SPDX-License-Identifier: Apache-2.0
// Secrets passed in the environment (COLLBENCH_JOIN_TOKEN, COLLBENCH_TOKEN)
// are read once and scrubbed: unsetenv() alone leaves the bytes in the
// process's initial environment block, which /proc/PID/environ shows to
// whoever may read it, so the "NAME=value" string is overwritten in place
// first. Children started afterwards do not inherit the variable.
//
// Not thread safe (the environment is process-wide): call from main()
// before starting threads.
#ifndef COLLBENCH_SERVER_AUTH_SECRET_ENV_H_
#define COLLBENCH_SERVER_AUTH_SECRET_ENV_H_

#include <string>

namespace collbench {

// The value of the environment variable `name` ("" when unset), which is
// then erased from the process's memory and environment.
std::string TakeSecretFromEnv(const char* name);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_AUTH_SECRET_ENV_H_
