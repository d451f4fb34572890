// SPDX-License-Identifier: Apache-2.0
// Helpers the flavours and Exec's daemon check (worker/agent/daemon_command.h)
// share for refusing a word of a daemon's argv.
#ifndef COLLBENCH_FLAVORS_DAEMON_WORDS_H_
#define COLLBENCH_FLAVORS_DAEMON_WORDS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace collbench {

// InvalidArgument "Exec argv[INDEX] 'WORD': WHY" (the word C-escaped, cut
// at 200 characters).
absl::Status BadDaemonWord(size_t index, const std::string& word, absl::string_view why);

// The last component of a path.
std::string PathBasename(absl::string_view path);

}  // namespace collbench

#endif  // COLLBENCH_FLAVORS_DAEMON_WORDS_H_
