// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/agent/test_util.h"

namespace collbench {
namespace {

using ::collbench::testing::Eventually;
using ::collbench::testing::GroupGone;
using ::collbench::testing::ProcessGone;

// The runner runs no shell: these tests ask for one to write short scripts.
std::unique_ptr<Process> StartOrDie(const std::string& script,
                                    std::map<std::string, std::string> env = {}) {
  std::unique_ptr<ProcessRunner> runner = NewPosixProcessRunner();
  ProcessOptions options;
  options.argv = {"/bin/sh", "-c", script};
  env.emplace("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
  options.env = std::move(env);
  absl::StatusOr<std::unique_ptr<Process>> process = runner->Start(options);
  EXPECT_TRUE(process.ok()) << process.status();
  return process.ok() ? *std::move(process) : nullptr;
}

// Reads stdout until a full line arrives; returns it without the newline.
std::string ReadLine(Process* process) {
  std::string text;
  while (text.find('\n') == std::string::npos) {
    absl::StatusOr<ProcessEvent> event = process->Next(absl::Seconds(10));
    if (!event.ok() || event->kind == ProcessEvent::Kind::kExit ||
        event->kind == ProcessEvent::Kind::kTimeout) {
      break;
    }
    if (event->kind == ProcessEvent::Kind::kStdout) text += event->data;
  }
  return std::string(absl::StripSuffix(text.substr(0, text.find('\n')), "\r"));
}

pid_t ReadPid(Process* process) {
  pid_t pid = 0;
  EXPECT_TRUE(absl::SimpleAtoi(ReadLine(process), &pid));
  return pid;
}

TEST(PosixProcessTest, CapturesStdoutStderrAndExitCode) {
  auto process = StartOrDie("echo out; echo err >&2; exit 3");
  absl::StatusOr<ProcessResult> result = CollectOutput(process.get(), absl::Seconds(10));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->stdout_data, "out\n");
  EXPECT_EQ(result->stderr_data, "err\n");
  EXPECT_EQ(result->exit_code, 3);
}

TEST(PosixProcessTest, KilledBySignalIs128PlusSignal) {
  auto process = StartOrDie("kill -KILL $$");
  absl::StatusOr<ProcessResult> result = CollectOutput(process.get(), absl::Seconds(10));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 128 + SIGKILL);
}

TEST(PosixProcessTest, ExitEventRepeats) {
  auto process = StartOrDie("exit 5");
  ASSERT_TRUE(CollectOutput(process.get(), absl::Seconds(10)).ok());
  absl::StatusOr<ProcessEvent> again = process->Next(absl::ZeroDuration());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->kind, ProcessEvent::Kind::kExit);
  EXPECT_EQ(again->exit_code, 5);
}

TEST(PosixProcessTest, ExtraEnvironmentAndDevNullStdin) {
  auto process = StartOrDie("printf %s \"$COLLBENCH_TEST_VALUE\"; cat; echo done",
                            {{"COLLBENCH_TEST_VALUE", "a b"}});
  absl::StatusOr<ProcessResult> result = CollectOutput(process.get(), absl::Seconds(10));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->stdout_data, "a bdone\n");  // cat saw EOF at once
}

TEST(PosixProcessTest, RunsTheProgramWithItsArgvAndNoShell) {
  const std::string proof = ::testing::TempDir() + "/collbench-noshell-" + std::to_string(getpid());
  std::unique_ptr<ProcessRunner> runner = NewPosixProcessRunner();
  ProcessOptions options;
  options.argv = {"/bin/echo", "$(touch " + proof + ")", "a;b", "`id`"};
  absl::StatusOr<std::unique_ptr<Process>> process = runner->Start(options);
  ASSERT_TRUE(process.ok()) << process.status();
  absl::StatusOr<ProcessResult> result = CollectOutput(process->get(), absl::Seconds(10));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->stdout_data, "$(touch " + proof + ") a;b `id`\n");
  EXPECT_NE(access(proof.c_str(), F_OK), 0);
}

TEST(PosixProcessTest, RefusesARelativeProgram) {
  std::unique_ptr<ProcessRunner> runner = NewPosixProcessRunner();
  ProcessOptions options;
  options.argv = {"sh", "-c", "true"};
  EXPECT_EQ(runner->Start(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.argv = {};
  EXPECT_EQ(runner->Start(options).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PosixProcessTest, EnvironmentIsExactlyTheGivenOnePlusTheContainmentId) {
  setenv("COLLBENCH_TEST_WORKER_SECRET", "s3cret", 1);
  std::unique_ptr<ProcessRunner> runner = NewPosixProcessRunner();
  ProcessOptions options;
  options.argv = {"/usr/bin/env"};
  options.env = {{"A", "1"}, {"B", "two words"}};
  absl::StatusOr<std::unique_ptr<Process>> process = runner->Start(options);
  ASSERT_TRUE(process.ok()) << process.status();
  absl::StatusOr<ProcessResult> result = CollectOutput(process->get(), absl::Seconds(10));
  unsetenv("COLLBENCH_TEST_WORKER_SECRET");
  ASSERT_TRUE(result.ok());
  std::vector<std::string> lines = absl::StrSplit(result->stdout_data, '\n', absl::SkipEmpty());
  std::sort(lines.begin(), lines.end());
  ASSERT_EQ(lines.size(), 3u) << result->stdout_data;
  EXPECT_EQ(lines[0], "A=1");
  EXPECT_EQ(lines[1], "B=two words");
  EXPECT_THAT(lines[2], ::testing::StartsWith(std::string(kContainmentEnv) + "="));
}

TEST(PosixProcessTest, SignalDispositionsAreReset) {
  // The agent ignores SIGPIPE (gRPC does); the child must not inherit that.
  signal(SIGPIPE, SIG_IGN);
  auto process = StartOrDie("grep SigIgn /proc/self/status");
  absl::StatusOr<ProcessResult> result = CollectOutput(process.get(), absl::Seconds(10));
  ASSERT_TRUE(result.ok());
  // SigIgn is a hex mask, bit N-1 for signal N. Only the classic signals
  // count: glibc's posix_spawn leaves its internal 32 and 33 ignored, and
  // every glibc program re-arms them at start-up.
  const std::string mask(
      absl::StripAsciiWhitespace(absl::StripPrefix(result->stdout_data, "SigIgn:")));
  uint64_t ignored = ~0ull;
  ASSERT_TRUE(absl::SimpleHexAtoi(mask, &ignored)) << result->stdout_data;
  EXPECT_EQ(ignored & 0x7fffffffull, 0u) << result->stdout_data;
}

TEST(PosixProcessTest, RunsInItsOwnProcessGroup) {
  auto process = StartOrDie("echo $$; sleep 100");
  const pid_t pid = ReadPid(process.get());
  EXPECT_EQ(pid, process->pid());
  EXPECT_EQ(getpgid(pid), pid);
  EXPECT_NE(getpgid(pid), getpgrp());
  process->Kill(absl::Seconds(1));
  ASSERT_TRUE(CollectOutput(process.get(), absl::Seconds(10)).ok());
}

TEST(PosixProcessTest, NextTimesOutWhileNothingHappens) {
  auto process = StartOrDie("sleep 100");
  absl::StatusOr<ProcessEvent> event = process->Next(absl::Milliseconds(100));
  ASSERT_TRUE(event.ok());
  EXPECT_EQ(event->kind, ProcessEvent::Kind::kTimeout);
  EXPECT_EQ(CollectOutput(process.get(), absl::Milliseconds(100)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  process->Kill(absl::Seconds(1));
}

TEST(PosixProcessTest, KillStopsTheWholeGroup) {
  auto process = StartOrDie("sleep 100 & sleep 100 & echo ready; wait");
  ASSERT_EQ(ReadLine(process.get()), "ready");
  const pid_t pgid = process->pgid();
  process->Kill(absl::Seconds(2));
  absl::StatusOr<ProcessResult> result = CollectOutput(process.get(), absl::Seconds(10));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 128 + SIGTERM);
  EXPECT_TRUE(Eventually([pgid] { return GroupGone(pgid); }));
  // Strictly: no process of the group remains at all.
  EXPECT_TRUE(Eventually([pgid] { return kill(-pgid, 0) != 0 && errno == ESRCH; }));
}

TEST(PosixProcessTest, KillEscalatesToSigkillAfterGrace) {
  auto process = StartOrDie("trap '' TERM; echo ready; sleep 100");
  ASSERT_EQ(ReadLine(process.get()), "ready");
  const absl::Time start = absl::Now();
  process->Kill(absl::Milliseconds(300));
  absl::StatusOr<ProcessResult> result = CollectOutput(process.get(), absl::Seconds(10));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 128 + SIGKILL);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(250));
  EXPECT_TRUE(Eventually([&] { return GroupGone(process->pgid()); }));
}

TEST(PosixProcessTest, KillReachesDescendantsThatLeftTheGroup) {
  // MPI daemons put each rank in a group of its own; Kill must reach them.
  auto process = StartOrDie(
      "trap '' TERM; setsid sh -c 'trap \"\" TERM; sleep 100' & "
      "echo $!; wait");
  const pid_t escaped = ReadPid(process.get());
  ASSERT_GT(escaped, 0);
  ASSERT_TRUE(Eventually([escaped] { return getpgid(escaped) == escaped; }));
  process->Kill(absl::Milliseconds(200));
  ASSERT_TRUE(CollectOutput(process.get(), absl::Seconds(10)).ok());
  EXPECT_TRUE(Eventually([escaped] { return ProcessGone(escaped); }));
}

TEST(PosixProcessTest, LeftoversDieWithTheLeader) {
  auto process = StartOrDie("sleep 100 & echo $!");
  const pid_t background = ReadPid(process.get());
  absl::StatusOr<ProcessResult> result = CollectOutput(process.get(), absl::Seconds(10));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 0);
  EXPECT_TRUE(Eventually([background] { return ProcessGone(background); }));
}

// A double-forked, setsid'd child whose parent has exited: neither in the
// group nor below the leader, found by its containment id. It would write
// `proof` after two seconds.
TEST(PosixProcessTest, SetsidGrandchildOfAnExitedParentIsSwept) {
  EnableChildSubreaper();
  const std::string proof =
      ::testing::TempDir() + "/collbench-escape-" + std::to_string(getpid());
  unlink(proof.c_str());
  auto process = StartOrDie("sh -c 'setsid sh -c \"sleep 2; touch " + proof +
                            "\" </dev/null >/dev/null 2>&1 & echo $!'; sleep 0.3");
  const pid_t escaped = ReadPid(process.get());
  ASSERT_GT(escaped, 0);
  absl::StatusOr<ProcessResult> result = CollectOutput(process.get(), absl::Seconds(10));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(Eventually([escaped] { return ProcessGone(escaped); }));
  absl::SleepFor(absl::Seconds(3));
  EXPECT_NE(access(proof.c_str(), F_OK), 0) << "the setsid'd grandchild survived";
  // Killed orphans came back to this (subreaper) process; none is left a zombie.
  ReapAdoptedOrphans();
  EXPECT_EQ(kill(escaped, 0), -1);
}

// The same with a cleared environment: no containment id to find it by.
// The subreaper adopts it and ends it once no Process is live.
TEST(PosixProcessTest, StrayOrphanWithoutAnIdIsEndedOnceNoProcessIsLive) {
  ASSERT_TRUE(EnableChildSubreaper());
  auto process = StartOrDie("setsid /usr/bin/env -i /bin/sleep 60 </dev/null >/dev/null 2>&1 & "
                            "echo $!; sleep 0.3");
  const pid_t stray = ReadPid(process.get());
  ASSERT_GT(stray, 0);
  ASSERT_TRUE(CollectOutput(process.get(), absl::Seconds(10)).ok());
  process.reset();
  ASSERT_TRUE(Eventually([stray] {
    std::ifstream stat("/proc/" + std::to_string(stray) + "/stat");
    std::string line;
    return std::getline(stat, line) &&
           line.substr(line.rfind(')') + 2).find(" " + std::to_string(getpid()) + " ") == 1;
  })) << "the orphan was not adopted by this process";
  EXPECT_GE(EndStrayOrphans(), 1);
  EXPECT_TRUE(Eventually([stray] {
    ReapAdoptedOrphans();
    return kill(stray, 0) != 0;
  }));
}

TEST(PosixProcessTest, FindContainedSeesEveryDescendant) {
  auto process = StartOrDie("sleep 100 & sleep 100 & echo ready; wait");
  ASSERT_EQ(ReadLine(process.get()), "ready");
  std::ifstream environ_file("/proc/" + std::to_string(process->pid()) + "/environ");
  std::string environ_data((std::istreambuf_iterator<char>(environ_file)), {});
  const size_t at = environ_data.find(std::string(kContainmentEnv) + "=");
  ASSERT_NE(at, std::string::npos);
  const std::string id =
      environ_data.substr(at + std::strlen(kContainmentEnv) + 1).c_str();  // up to the NUL
  // sh and two sleeps. A child caught in the middle of its exec has no
  // readable environment for an instant, so the count is awaited.
  EXPECT_TRUE(Eventually([&id] { return FindContained(id).size() == 3u; }))
      << FindContained(id).size() << " contained";
  process->Kill(absl::Milliseconds(100));
  ASSERT_TRUE(CollectOutput(process.get(), absl::Seconds(10)).ok());
  EXPECT_TRUE(Eventually([&id] { return FindContained(id).empty(); }));
}

TEST(PosixProcessTest, ReapAdoptedOrphansLeavesLeadersAlone) {
  EnableChildSubreaper();
  auto leader = StartOrDie("exit 7");
  // The leader exits at once; a reaper pass must not take its status.
  absl::SleepFor(absl::Milliseconds(200));
  ReapAdoptedOrphans();
  absl::StatusOr<ProcessResult> result = CollectOutput(leader.get(), absl::Seconds(10));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 7);
}

TEST(PosixProcessTest, DestructorKillsAndReaps) {
  auto process = StartOrDie("sleep 100");
  const pid_t pid = process->pid();
  process.reset();
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), -1);  // already reaped: ECHILD
  EXPECT_EQ(errno, ECHILD);
  EXPECT_TRUE(ProcessGone(pid));
}

ProcessOptions Command(std::string program) {
  ProcessOptions options;
  options.argv = {std::move(program)};
  return options;
}

TEST(FakeProcessRunnerTest, PlaysScriptsAndCountsKills) {
  FakeProcessRunner runner;
  FakeProcessRunner::Script hello_script;
  hello_script.stdout_data = "hi\n";
  hello_script.exit_code = 4;
  runner.SetScript("hello", hello_script);
  FakeProcessRunner::Script daemon_script;
  daemon_script.stderr_data = "up\n";
  daemon_script.wait_for_kill = true;
  runner.SetScript("daemon", daemon_script);
  auto hello = runner.Start(Command("hello"));
  ASSERT_TRUE(hello.ok());
  absl::StatusOr<ProcessResult> result = CollectOutput(hello->get(), absl::Seconds(1));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->stdout_data, "hi\n");
  EXPECT_EQ(result->exit_code, 4);

  auto daemon = runner.Start(Command("daemon"));
  ASSERT_TRUE(daemon.ok());
  EXPECT_EQ(CollectOutput(daemon->get(), absl::Milliseconds(50)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  (*daemon)->Kill(absl::ZeroDuration());
  result = CollectOutput(daemon->get(), absl::Seconds(1));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->exit_code, 128 + SIGTERM);
  EXPECT_EQ(runner.kill_count(), 1);
  ASSERT_EQ(runner.started().size(), 2u);
  EXPECT_EQ(runner.started()[1].argv, std::vector<std::string>{"daemon"});

  runner.SetStartError(absl::ResourceExhaustedError("no more"));
  EXPECT_EQ(runner.Start(Command("x")).status().code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace collbench
