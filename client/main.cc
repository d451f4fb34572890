// SPDX-License-Identifier: Apache-2.0
#include "client/cli.h"

int main(int argc, char** argv) { return collbench::RunCli(argc, argv); }
