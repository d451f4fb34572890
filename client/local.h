// `collbench local [--workers K] [--slots N] COMMAND...`: an embedded
// coordinator and K collbench-worker processes on 127.0.0.1 for one
// command, torn down afterwards (also on Ctrl-C), so nothing is left
// running. No tokens: everything listens on loopback only.
#ifndef COLLBENCH_CLIENT_LOCAL_H_
#define COLLBENCH_CLIENT_LOCAL_H_

#include <string>
#include <vector>

namespace collbench {

int RunLocal(const std::vector<std::string>& args);

}  // namespace collbench

#endif  // COLLBENCH_CLIENT_LOCAL_H_
