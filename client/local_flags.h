// SPDX-License-Identifier: Apache-2.0
// `collbench local`'s flags (docs/design/processes.md#collbench-and-collbench-local):
// the one table its parser, its --help and `collbench --help` are made from.
// The embedding itself (a coordinator and workers in this process's care)
// is local/local.h, which the `collbench` binary's main hands to RunCli;
// the client library knows only this table and the command's signature.
#ifndef COLLBENCH_CLIENT_LOCAL_FLAGS_H_
#define COLLBENCH_CLIENT_LOCAL_FLAGS_H_

#include <functional>
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

// `local`'s flags, into `options`.
void AddLocalFlags(FlagParser* flags, LocalOptions* options);

// `collbench local ARGS…`: `program` is argv[0] (for the follow-up commands
// it prints), `args` what follows "local". Returns the exit code.
using LocalCommand =
    std::function<int(const std::string& program, const std::vector<std::string>& args)>;

}  // namespace collbench

#endif  // COLLBENCH_CLIENT_LOCAL_FLAGS_H_
