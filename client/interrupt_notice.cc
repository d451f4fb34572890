// SPDX-License-Identifier: Apache-2.0
#include "client/interrupt_notice.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace collbench {
namespace {

// A signal handler can reach only static storage, and may call only
// async-signal-safe functions (write, _exit): the notice is copied here
// before the handler is installed and read only by it.
char notice_text[2048];
size_t notice_size = 0;

void PrintNoticeAndExit(int) {
  size_t written = 0;
  while (written < notice_size) {
    const ssize_t n = write(STDERR_FILENO, notice_text + written, notice_size - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  _exit(128 + SIGINT);
}

}  // namespace

ScopedInterruptNotice::ScopedInterruptNotice(const std::string& notice) {
  notice_size = std::min(notice.size(), sizeof notice_text);
  std::memcpy(notice_text, notice.data(), notice_size);
  struct sigaction action = {};
  action.sa_handler = PrintNoticeAndExit;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous_);
}

ScopedInterruptNotice::~ScopedInterruptNotice() { sigaction(SIGINT, &previous_, nullptr); }

}  // namespace collbench
