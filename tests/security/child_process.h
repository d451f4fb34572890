// SPDX-License-Identifier: Apache-2.0
// What the attack tests that spawn the real binaries share: a child
// process in its own group with its output in a log file, and polling for
// a condition. Header-only test support; not thread-safe.
#ifndef COLLBENCH_TESTS_SECURITY_CHILD_PROCESS_H_
#define COLLBENCH_TESTS_SECURITY_CHILD_PROCESS_H_

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace collbench {

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Calls `condition` every 100 ms until it holds or `timeout` passes;
// returns its last answer.
template <typename F>
bool WaitFor(F condition, absl::Duration timeout) {
  const absl::Time give_up = absl::Now() + timeout;
  while (absl::Now() < give_up) {
    if (condition()) return true;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return condition();
}

// One child process in its own group, stdout and stderr appended to `log`.
// The destructor ends the whole group (SIGTERM, then SIGKILL).
class Child {
 public:
  Child(std::vector<std::string> argv, const std::string& log) : log_(log) {
    pid_ = fork();
    group_ = pid_;
    if (pid_ == 0) {
      setpgid(0, 0);
      // A test that dies (a crash, a signal) leaves no server behind.
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<char*> args;
      for (std::string& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
  }
  ~Child() { Stop(); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  bool Alive() {
    if (pid_ <= 0) return false;
    const pid_t done = waitpid(pid_, &status_, WNOHANG);
    if (done == 0) return true;
    pid_ = -1;  // reaped: status_ holds how it ended
    return false;
  }
  // Its exit code once it has exited by itself within `timeout`; -1 when
  // it is still running then or was killed by a signal.
  int ExitCode(absl::Duration timeout) {
    WaitFor([&] { return !Alive(); }, timeout);
    if (pid_ > 0 || !WIFEXITED(status_)) return -1;
    return WEXITSTATUS(status_);
  }
  // Ends what is left of the group, the leader first given time to exit.
  void Stop() {
    if (group_ <= 0) return;
    if (pid_ > 0) kill(-group_, SIGTERM);
    for (int i = 0; i < 100 && Alive(); ++i) absl::SleepFor(absl::Milliseconds(100));
    kill(-group_, SIGKILL);
    if (pid_ > 0) waitpid(pid_, &status_, 0);
    pid_ = -1;
    group_ = -1;
  }
  std::string log() const { return ReadFile(log_); }

 private:
  pid_t pid_ = -1;    // the leader until reaped
  pid_t group_ = -1;  // its process group, until Stop()
  int status_ = 0;
  std::string log_;
};

}  // namespace collbench

#endif  // COLLBENCH_TESTS_SECURITY_CHILD_PROCESS_H_
