// SPDX-License-Identifier: Apache-2.0
// The commands the CLI prints for a person to run next ("again: ...",
// "cancel it: ..."), written so that they run as printed: the program as
// it was invoked, then the words that reach the same coordinator and store
// (`--coordinator HOST:PORT --token-file F ...`, or `local --store FILE`),
// then the command, each word quoted for a POSIX shell where it needs it.
// A bearer token given with --token is never printed: such a follow-up
// needs the token again (COLLBENCH_TOKEN or --token-file).
#ifndef COLLBENCH_CLIENT_FOLLOW_UP_H_
#define COLLBENCH_CLIENT_FOLLOW_UP_H_

#include <string>
#include <utility>
#include <vector>

namespace collbench {

class FollowUp {
 public:
  // `kept`: false where the runs end with the command (`collbench local`
  // without --store), so no later command can find them.
  FollowUp(std::string program, std::vector<std::string> reach, bool kept)
      : program_(std::move(program)), reach_(std::move(reach)), kept_(kept) {}

  bool kept() const { return kept_; }
  const std::string& program() const { return program_; }

  // "PROGRAM REACH... COMMAND...", quoted.
  std::string Command(const std::vector<std::string>& command) const;

  // "LABEL: COMMAND" for a command that looks at the runs later (e.g.
  // "again: collbench local --store runs.db suite show ID"), or, where the
  // runs are not kept, a note saying so and how to keep them next time.
  std::string Line(const std::string& label, const std::vector<std::string>& command) const;

 private:
  std::string program_;
  std::vector<std::string> reach_;
  bool kept_;
};

// `word` as a POSIX shell reads it back: as is when it has only safe
// characters, else in single quotes.
std::string ShellQuote(const std::string& word);

}  // namespace collbench

#endif  // COLLBENCH_CLIENT_FOLLOW_UP_H_
