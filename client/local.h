// `collbench local [--workers K] [--slots N] COMMAND...`: an embedded
// coordinator and K collbench-worker processes on 127.0.0.1 for one
// command, torn down afterwards (also on Ctrl-C), so nothing is left
// running. Everything listens on loopback only, and other users of the
// machine can reach loopback too: the coordinator takes only random tokens
// made for this session (an operator token the command uses in-process, a
// worker join token the workers read from a 0600 file in the session's 0700
// temporary folder), so nobody else can drive it.
#ifndef COLLBENCH_CLIENT_LOCAL_H_
#define COLLBENCH_CLIENT_LOCAL_H_

#include <string>
#include <vector>

namespace collbench {

int RunLocal(const std::vector<std::string>& args);

}  // namespace collbench

#endif  // COLLBENCH_CLIENT_LOCAL_H_
