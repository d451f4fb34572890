// SPDX-License-Identifier: Apache-2.0
// `collbench local [flags] COMMAND...`: an embedded
// coordinator and K collbench-worker processes on 127.0.0.1 for one
// command, torn down afterwards (also on Ctrl-C), so nothing is left
// running. Everything listens on loopback only, and other users of the
// machine can reach loopback too: the coordinator takes only random tokens
// made for this session (an operator token the command uses in-process, a
// worker join token the workers read from a 0600 file in the session's 0700
// temporary folder), so nobody else can drive it.
//
// Wiring, not client code: it embeds the coordinator (server/coordinator.h)
// and starts workers, so it is a module of its own that the `collbench`
// binary's main hands to RunCli (client/cli.h) as its LocalCommand; the
// client library includes no server header. Its flags are
// client/local_flags.h.
#ifndef COLLBENCH_LOCAL_LOCAL_H_
#define COLLBENCH_LOCAL_LOCAL_H_

#include <string>
#include <vector>

namespace collbench {

// `program`: argv[0], for the follow-up commands it prints. A COMMAND asked
// for --help prints its help without starting anything. Ctrl-C or SIGTERM
// cancels the runs not yet ended (the embedded coordinator stops with this
// process), says which, and stops everything.
int RunLocal(const std::string& program, const std::vector<std::string>& args);

}  // namespace collbench

#endif  // COLLBENCH_LOCAL_LOCAL_H_
