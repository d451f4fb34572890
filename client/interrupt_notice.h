// SPDX-License-Identifier: Apache-2.0
// What Ctrl-C says while the CLI follows a run. Interrupting the CLI ends
// the command, not the run: the coordinator goes on with it. So for the
// lifetime of a ScopedInterruptNotice, SIGINT prints its notice (the run
// and the exact commands to watch or cancel it) to stderr and exits 130,
// as a shell reports a process ended by SIGINT.
//
// `collbench local` blocks SIGINT in every thread and handles it itself
// (its embedded coordinator stops with it, so it cancels the runs): there
// the notice never fires. One notice at a time; not thread-safe.
#ifndef COLLBENCH_CLIENT_INTERRUPT_NOTICE_H_
#define COLLBENCH_CLIENT_INTERRUPT_NOTICE_H_

#include <signal.h>

#include <string>

namespace collbench {

class ScopedInterruptNotice {
 public:
  explicit ScopedInterruptNotice(const std::string& notice);
  ~ScopedInterruptNotice();
  ScopedInterruptNotice(const ScopedInterruptNotice&) = delete;
  ScopedInterruptNotice& operator=(const ScopedInterruptNotice&) = delete;

 private:
  struct sigaction previous_;
};

}  // namespace collbench

#endif  // COLLBENCH_CLIENT_INTERRUPT_NOTICE_H_
