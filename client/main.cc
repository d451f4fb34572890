// SPDX-License-Identifier: Apache-2.0
// The `collbench` binary: the CLI, with `collbench local` wired to the
// embedded coordinator (local/).
#include "client/cli.h"
#include "client/terminal_text.h"
#include "local/local.h"

int main(int argc, char** argv) {
  // Whatever a server sent is printed inert (client/terminal_text.h).
  collbench::InstallTerminalSafeStdio();
  return collbench::RunCli(argc, argv, collbench::RunLocal);
}
