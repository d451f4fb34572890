// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the agent tests.
#ifndef COLLBENCH_TESTS_UNIT_AGENT_TEST_UTIL_H_
#define COLLBENCH_TESTS_UNIT_AGENT_TEST_UTIL_H_

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "absl/time/time.h"

namespace collbench::testing {

// True when `pid` names no process, or only a zombie (killed and awaiting
// its reaper, which for re-parented grandchildren is init).
inline bool ProcessGone(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

// True when kill(-pgid, 0) fails with ESRCH, or every member left is a
// zombie (killed, awaiting init).
inline bool GroupGone(pid_t pgid) {
  if (kill(-pgid, 0) != 0 && errno == ESRCH) return true;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return false;
  bool live_member = false;
  while (dirent* entry = readdir(dir)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid > 0 && getpgid(pid) == pgid && !ProcessGone(pid)) live_member = true;
  }
  closedir(dir);
  return !live_member;
}

// A stand-in for orted, for tests that drive real processes through Exec's
// daemon check (ExecManagerOptions.daemons["orted"] = FakeOrtedPath()): it
// runs the value of its first `-mca ess VALUE` pair as a shell script. The
// real orted does nothing of the kind; Exec itself runs no shell. Its
// folder is removed when the test process exits.
class FakeDaemonDir {
 public:
  FakeDaemonDir()
      : dir_(::testing::TempDir() + "/collbench-fake-daemons-" + std::to_string(getpid())),
        orted_(dir_ + "/orted") {
    mkdir(dir_.c_str(), 0700);
    std::ofstream(orted_) << "#!/bin/sh\nexec /bin/sh -c \"$3\"\n";
    chmod(orted_.c_str(), 0700);
  }
  ~FakeDaemonDir() {
    unlink(orted_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string& orted() const { return orted_; }

 private:
  const std::string dir_;
  const std::string orted_;
};

inline std::string FakeOrtedPath() {
  static const FakeDaemonDir fake;
  return fake.orted();
}

// Polls `condition` until it holds or `timeout` passes.
template <typename Condition>
bool Eventually(Condition condition, absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (condition()) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return condition();
}

}  // namespace collbench::testing

#endif  // COLLBENCH_TESTS_UNIT_AGENT_TEST_UTIL_H_
