// SPDX-License-Identifier: Apache-2.0
// The collbench command line (docs/design/command-lines.md#collbench). Exit
// codes: 0 success, 1 the run failed, 2 bad usage or input (one line on stderr
// naming the problem).
#ifndef COLLBENCH_CLIENT_CLI_H_
#define COLLBENCH_CLIENT_CLI_H_

#include <string>
#include <vector>

#include "client/follow_up.h"
#include "client/local_flags.h"
#include "common/tls_channel.h"

namespace collbench {

// The whole command line; `collbench local ...` goes to `local` (the
// binary's main wires local/local.h's RunLocal: the embedded coordinator is
// not part of the client library).
int RunCli(int argc, char** argv, const LocalCommand& local);

// `collbench --help`: the commands, `local`'s flags from its flag table.
std::string CliUsage();

// One command (`workers`, `run ...`, ...) against the coordinator at
// `coordinator`, over TLS when `tls` names a CA file. `follow_up` reaches
// that coordinator again in the commands it prints for later. A command
// asked for --help prints it without calling the coordinator.
int RunCommand(const std::string& coordinator, const std::string& token,
               const std::vector<std::string>& command, const FollowUp& follow_up,
               const ClientTlsOptions& tls = {});

}  // namespace collbench

#endif  // COLLBENCH_CLIENT_CLI_H_
