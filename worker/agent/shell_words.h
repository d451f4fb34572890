// SPDX-License-Identifier: Apache-2.0
// The remote command of an ssh-style call, taken apart without a shell.
//
// mpirun and mpiexec call their remote-shell agent like ssh: the words after
// the host carry quoting meant for the remote shell (Open MPI passes
// `" orted"` with a leading space and values such as
// `"1320222720.0;tcp://10.0.0.2:51943"` in double quotes). ssh would join
// the words with spaces and hand the line to `sh -c`; the launch shim joins
// them the same way and parses the line here with the quoting rules of a
// POSIX shell (single quotes, double quotes, backslash), but anything that
// would need a shell to interpret is refused instead of interpreted:
// unquoted $ ` ; | & < > ( ) { } [ ] * ? ~ # ! and line breaks, and $ or `
// inside double quotes. So the resulting argv is exactly what a shell would
// have run for every command the MPI launchers produce, and no expansion,
// substitution, redirection or second command can be expressed.
//
// Pure functions; thread-safe.
#ifndef COLLBENCH_WORKER_AGENT_SHELL_WORDS_H_
#define COLLBENCH_WORKER_AGENT_SHELL_WORDS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace collbench {

// Parses one command line. InvalidArgument naming the word (as written,
// escaped) and the character that would need a shell, or an unterminated
// quote. An empty or blank line gives no words.
absl::StatusOr<std::vector<std::string>> SplitShellWords(absl::string_view line);

// Open MPI's rsh launcher wraps the daemon's command in
// `( test ! -r ./.profile || . ./.profile; ... )` when it takes the remote
// shell for sh or ksh (the login shell of the user in the passwd file, e.g.
// a container user whose shell is /bin/sh), so that the shell reads the
// user's profile first. Nothing here runs a shell, so there is no profile
// to read: that exact wrapper is taken off and only what it wraps is
// parsed. Returns `line` unchanged when it is not wrapped so.
absl::string_view StripProfileWrapper(absl::string_view line);

// ssh's view of a remote command: the words joined with single spaces, then
// StripProfileWrapper and SplitShellWords.
absl::StatusOr<std::vector<std::string>> SplitRemoteCommand(const std::vector<std::string>& words);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_AGENT_SHELL_WORDS_H_
