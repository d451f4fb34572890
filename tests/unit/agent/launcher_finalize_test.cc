// SPDX-License-Identifier: Apache-2.0
// The launcher's guard against a job stuck in MPI_Finalize: the engine has
// written its end record, the MPI launcher does not exit. A runner that
// ignores the launch command and runs a shell writing the engine's records
// and then sleeping stands in for such a job.
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "common/records.h"
#include "tests/unit/agent/test_util.h"
#include "worker/agent/launcher.h"
#include "worker/agent/line_buffer.h"

namespace collbench {
namespace {

using ::collbench::testing::Eventually;
using ::testing::HasSubstr;

// Runs `sh -c script` with the launcher's environment (plus a PATH), and
// remembers what the launcher asked for.
class ScriptRunner final : public ProcessRunner {
 public:
  explicit ScriptRunner(std::string script) : script_(std::move(script)) {}
  absl::StatusOr<std::unique_ptr<Process>> Start(const ProcessOptions& options) override {
    {
      absl::MutexLock lock(&mu_);
      asked_ = options;
    }
    ProcessOptions own;
    own.argv = {"/bin/sh", "-c", script_};
    own.env = options.env;
    own.env["PATH"] = "/usr/bin:/bin";
    return real_->Start(own);
  }
  ProcessOptions asked() const {
    absl::MutexLock lock(&mu_);
    return asked_;
  }

 private:
  const std::string script_;
  std::unique_ptr<ProcessRunner> real_ = NewPosixProcessRunner();
  mutable absl::Mutex mu_;
  ProcessOptions asked_ ABSL_GUARDED_BY(mu_);
};

class RecordingSink final : public ReportSink {
 public:
  void Send(const v1::WorkerMessage& message) override {
    absl::MutexLock lock(&mu_);
    messages_.push_back(message);
  }
  // The run's last reported state, and every log line so far.
  v1::RunState State() const {
    absl::MutexLock lock(&mu_);
    v1::RunState state = v1::RUN_STATE_UNSPECIFIED;
    for (const auto& m : messages_) {
      if (m.has_run_status()) state = m.run_status().state();
    }
    return state;
  }
  std::string Error() const {
    absl::MutexLock lock(&mu_);
    std::string error;
    for (const auto& m : messages_) {
      if (m.has_run_status()) error = m.run_status().error();
    }
    return error;
  }
  std::string Logs() const {
    absl::MutexLock lock(&mu_);
    std::string out;
    for (const auto& m : messages_) {
      if (m.has_log()) absl::StrAppend(&out, m.log().line().text(), "\n");
    }
    return out;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<v1::WorkerMessage> messages_ ABSL_GUARDED_BY(mu_);
};

// A shell command printing `records` as JSON lines, then sleeping `sleep_s`
// and exiting with `code`.
std::string Job(const std::vector<Record>& records, int sleep_s, int code) {
  // One record per positional argument, quoted for the shell.
  std::string script = "sh -c 'for line in \"$@\"; do echo \"$line\"; done; sleep " +
           std::to_string(sleep_s) + "; exit " + std::to_string(code) + "' job";
  for (const Record& r : records) {
    std::string line = ToJsonLine(r);
    std::string quoted = "'";
    for (char c : line) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    absl::StrAppend(&script, " ", quoted, "'");
  }
  return script;
}

class LauncherFinalizeTest : public ::testing::Test {
 protected:
  LauncherFinalizeTest() {
    assignment_.set_run("runs/finalize");
    assignment_.mutable_spec()->set_operation("allreduce");
    assignment_.mutable_spec()->add_sizes_bytes(8);
    v1::Peer* peer = assignment_.add_peers();
    peer->set_worker("workers/a");
    peer->set_agent_address("127.0.0.1:1");
    peer->set_slots(2);
    options_.paths.self = "/bin/true";
    options_.paths.flavors = {{"openmpi", {"/bin/true", "/bin/true"}},
                              {"mpich", {"/bin/true", "/bin/true"}}};
    options_.self_worker = "workers/a";
    options_.work_dir = ::testing::TempDir();
    options_.kill_grace = absl::Seconds(1);
    options_.finalize_grace = absl::Seconds(2);
  }

  // Runs the job to its end; returns how long that took.
  absl::Duration Run(const std::string& job) {
    ScriptRunner runner(job);
    Launcher launcher(&runner, &spool_, &sink_, options_);
    const absl::Time start = absl::Now();
    EXPECT_TRUE(launcher.Start(assignment_).ok());
    EXPECT_TRUE(Eventually([&] { return launcher.Active().empty(); }, absl::Seconds(30)));
    asked_ = runner.asked();
    return absl::Now() - start;
  }

  ProcessOptions asked_;

  v1::Assignment assignment_;
  LauncherOptions options_;
  ResultSpool spool_;
  RecordingSink sink_;
};

TEST_F(LauncherFinalizeTest, AJobHangingAfterItsEndRecordIsEndedAndSucceeds) {
  const absl::Duration took =
      Run(Job({EndRecord{"ok", 1, 0, 0.1}}, /*sleep_s=*/60, /*code=*/0));
  EXPECT_LT(took, absl::Seconds(20));
  EXPECT_EQ(sink_.State(), v1::SUCCEEDED) << sink_.Error();
  EXPECT_THAT(sink_.Logs(), HasSubstr("stuck in MPI_Finalize"));
}

TEST_F(LauncherFinalizeTest, AHangingJobWithWrongResultsStillFails) {
  Run(Job({EndRecord{"wrong", 1, 3, 0.1}}, /*sleep_s=*/60, /*code=*/0));
  EXPECT_EQ(sink_.State(), v1::FAILED);
  EXPECT_THAT(sink_.Error(), HasSubstr("wrong"));
}

// Without an end record a slow job is left alone, however long it takes
// past the grace (the run's own timeout is the coordinator's business).
TEST_F(LauncherFinalizeTest, ASlowJobWithoutAnEndRecordIsLeftToFinish) {
  Run(Job({}, /*sleep_s=*/4, /*code=*/0));
  EXPECT_EQ(sink_.State(), v1::SUCCEEDED) << sink_.Error();
  EXPECT_THAT(sink_.Logs(), ::testing::Not(HasSubstr("MPI_Finalize")));
}

// The token reaches the shim through a private file, never an environment
// or an argv, and the run's directory goes with the run.
TEST_F(LauncherFinalizeTest, TokenFileIsPrivateAndRemovedWithTheRun) {
  assignment_.set_token("tok-3f9a-never-in-env");
  Run("stat -c '%a' \"$COLLBENCH_RUN_TOKEN_FILE\" \"$(dirname \"$COLLBENCH_RUN_TOKEN_FILE\")\" >&2;"
      " grep -c never-in-env \"$COLLBENCH_RUN_TOKEN_FILE\" >&2");
  EXPECT_EQ(sink_.State(), v1::SUCCEEDED) << sink_.Error();
  EXPECT_THAT(sink_.Logs(), HasSubstr("600\n700\n1\n"));
  ASSERT_TRUE(asked_.env.count("COLLBENCH_RUN_TOKEN_FILE"));
  const std::string file = asked_.env.at("COLLBENCH_RUN_TOKEN_FILE");
  EXPECT_NE(access(file.c_str(), F_OK), 0);
  EXPECT_NE(access(file.substr(0, file.rfind('/')).c_str(), F_OK), 0);
  for (const auto& [key, value] : asked_.env) {
    EXPECT_THAT(value, ::testing::Not(HasSubstr("never-in-env"))) << key;
  }
  for (const std::string& arg : asked_.argv) {
    EXPECT_THAT(arg, ::testing::Not(HasSubstr("never-in-env")));
  }
}

// A line beyond the bound is cut, the run goes on, and the cut is logged once.
TEST_F(LauncherFinalizeTest, OverlongOutputLinesAreCutAndLoggedOnce) {
  Run("head -c 3000000 /dev/zero | tr '\\0' x >&2; echo >&2; "
      "head -c 3000000 /dev/zero | tr '\\0' y >&2; echo >&2; echo short >&2");
  EXPECT_EQ(sink_.State(), v1::SUCCEEDED) << sink_.Error();
  const std::string logs = sink_.Logs();
  EXPECT_THAT(logs, HasSubstr("short\n"));
  // Each letter's longest run anywhere and its longest that ends a line,
  // counted in one pass: a substring search for a megabyte of 'x' in
  // megabytes of them is quadratic (most of a minute).
  auto runs_of = [&logs](char letter) {
    size_t anywhere = 0, ending_a_line = 0, run = 0;
    for (const char c : logs) {
      if (c == letter) {
        anywhere = std::max(anywhere, ++run);
        continue;
      }
      if (c == '\n') ending_a_line = std::max(ending_a_line, run);
      run = 0;
    }
    return std::pair(anywhere, ending_a_line);
  };
  const size_t bound = LineBuffer::kDefaultMaxLineBytes;
  EXPECT_EQ(runs_of('x'), std::pair(bound, bound));
  EXPECT_EQ(runs_of('y'), std::pair(bound, bound));
  size_t cuts = 0;
  for (size_t at = 0; (at = logs.find("was cut", at)) != std::string::npos; ++at) ++cuts;
  EXPECT_EQ(cuts, 1u);
}

}  // namespace
}  // namespace collbench
