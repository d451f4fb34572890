// SPDX-License-Identifier: Apache-2.0
// `collbench local [flags] COMMAND...`: an embedded
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

#include "common/flag_parser.h"

namespace collbench {

struct LocalOptions {
  int workers = 2;
  int slots = 0;           // ranks per worker; 0: the CPUs
  std::string store;       // a SQLite file that keeps the runs; "": in memory
  std::string tuning_dir;  // every worker's --tuning-dir; "": none
};

// `local`'s flags, into `options`: the one table its parser, its --help and
// `collbench --help` are made from.
void AddLocalFlags(FlagParser* flags, LocalOptions* options);

// `program`: argv[0], for the follow-up commands it prints. A COMMAND asked
// for --help prints its help without starting anything. Ctrl-C or SIGTERM
// cancels the runs not yet ended (the embedded coordinator stops with this
// process), says which, and stops everything.
int RunLocal(const std::string& program, const std::vector<std::string>& args);

}  // namespace collbench

#endif  // COLLBENCH_CLIENT_LOCAL_H_
