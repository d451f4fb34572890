// SPDX-License-Identifier: Apache-2.0
#include "flavors/daemon_words.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace collbench {

absl::Status BadDaemonWord(size_t index, const std::string& word, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("Exec argv[", index, "] '",
                                                 absl::CHexEscape(word.substr(0, 200)), "': ", why));
}

std::string PathBasename(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == absl::string_view::npos ? path : path.substr(slash + 1));
}

}  // namespace collbench
