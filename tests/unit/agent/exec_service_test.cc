// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/exec_service.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/secrets.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "tests/unit/agent/test_util.h"

namespace collbench {
namespace {

using ::collbench::testing::Eventually;
using ::collbench::testing::GroupGone;

constexpr char kRun[] = "runs/r1";
constexpr char kToken[] = "s3cret-token-value";

ExecManagerOptions TestOptions() {
  ExecManagerOptions options;
  options.kill_grace = absl::Seconds(1);
  options.daemons["orted"] = ::collbench::testing::FakeOrtedPath();
  options.base_env = {{"PATH", "/usr/bin:/bin"}, {"COLLBENCH_TEST_BASE", "b"}};
  options.default_env = {{"COLLBENCH_TEST_DEFAULT", "d"}};
  return options;
}

// What one Exec call returned.
struct ExecResult {
  std::string stdout_data;
  std::string stderr_data;
  int exit_code = -1;
  bool exit_code_was_last = true;
  grpc::Status status;
};

// An Agent server with a real process runner on 127.0.0.1:<any port>.
class ExecServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runner_ = NewPosixProcessRunner();
    manager_ = std::make_unique<ExecManager>(runner_.get(), TestOptions());
    service_ = std::make_unique<ExecService>(manager_.get());
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port, 0);
    stub_ = v1::Agent::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
    manager_->Allow(kRun, TokenDigest(kToken), v1::OPENMPI);
  }

  void TearDown() override {
    manager_->KillAll();
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    server_->Wait();
  }

  // The fake daemon running `script` (see FakeOrted).
  static v1::ExecRequest Request(const std::string& script, const std::string& token = kToken) {
    return ArgvRequest({" orted", "-mca", "ess", script}, token);
  }

  static v1::ExecRequest ArgvRequest(const std::vector<std::string>& argv,
                                     const std::string& token = kToken) {
    v1::ExecRequest request;
    request.set_run(kRun);
    request.set_token(token);
    for (const std::string& word : argv) request.add_argv(word);
    return request;
  }

  ExecResult Exec(const v1::ExecRequest& request) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    auto reader = stub_->Exec(&context, request);
    ExecResult result;
    v1::ExecOutput output;
    while (reader->Read(&output)) {
      if (result.exit_code >= 0) result.exit_code_was_last = false;
      if (output.has_stdout()) result.stdout_data += output.stdout();
      if (output.has_stderr()) result.stderr_data += output.stderr();
      if (output.has_exit_code()) result.exit_code = output.exit_code();
    }
    result.status = reader->Finish();
    return result;
  }

  // Starts `command` (which must print its pid first) and returns that pid.
  pid_t StartAndReadPid(grpc::ClientContext* context, const std::string& command,
                        std::unique_ptr<grpc::ClientReader<v1::ExecOutput>>* reader) {
    *reader = stub_->Exec(context, Request(command));
    std::string text;
    v1::ExecOutput output;
    while (text.find('\n') == std::string::npos && (*reader)->Read(&output)) {
      text += output.stdout();
    }
    pid_t pid = 0;
    EXPECT_TRUE(absl::SimpleAtoi(text.substr(0, text.find('\n')), &pid)) << text;
    return pid;
  }

  std::unique_ptr<ProcessRunner> runner_;
  std::unique_ptr<ExecManager> manager_;
  std::unique_ptr<ExecService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Agent::Stub> stub_;
};

TEST_F(ExecServiceTest, GoodTokenStreamsOutputAndExitCode) {
  ExecResult result = Exec(Request("echo hi; echo err >&2; exit 3"));
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  EXPECT_EQ(result.stdout_data, "hi\n");
  EXPECT_EQ(result.stderr_data, "err\n");
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_TRUE(result.exit_code_was_last);
  EXPECT_EQ(manager_->running(), 0);
}

TEST_F(ExecServiceTest, DaemonGetsTheWorkersAllowedEnvironmentOnly) {
  setenv("COLLBENCH_TEST_WORKER_SECRET", "never-in-a-child", 1);
  ExecResult result = Exec(Request("env"));
  unsetenv("COLLBENCH_TEST_WORKER_SECRET");
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  EXPECT_NE(result.stdout_data.find("COLLBENCH_TEST_BASE=b\n"), std::string::npos);
  EXPECT_NE(result.stdout_data.find("COLLBENCH_TEST_DEFAULT=d\n"), std::string::npos);
  EXPECT_NE(result.stdout_data.find(std::string(kContainmentEnv) + "="), std::string::npos);
  EXPECT_EQ(result.stdout_data.find("never-in-a-child"), std::string::npos);
  EXPECT_EQ(result.stdout_data.find(kToken), std::string::npos);
}

TEST_F(ExecServiceTest, RunsTheInstalledDaemonNotTheRequestedPath) {
  ExecResult result = Exec(ArgvRequest({"/tmp/evil/orted", "-mca", "ess", "echo $0"}));
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  EXPECT_EQ(result.stdout_data, "/bin/sh\n");  // the fake orted's exec, not /tmp/evil
}

TEST_F(ExecServiceTest, NonDaemonArgvIsRefusedAndNothingRuns) {
  const std::string proof = absl::StrCat(::testing::TempDir(), "/collbench-exec-proof-", getpid());
  unlink(proof.c_str());
  for (const std::vector<std::string>& argv : std::vector<std::vector<std::string>>{
           {"/bin/sh", "-c", "touch " + proof},
           {"sh", "-c", "touch " + proof},
           {"orted", "-mca", "orte_fork_agent", "/usr/bin/touch " + proof},
           {"orted", "-mca", "ess", "env", "-mca", "mca_base_param_files", proof},
           {"orted", "--exec", "/usr/bin/touch", proof},
           {"hydra_pmi_proxy", "--control-port", "x:1"},  // not installed here
           {}}) {
    ExecResult result = Exec(ArgvRequest(argv));
    EXPECT_EQ(result.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << (argv.empty() ? "(empty)" : argv[0]) << ": " << result.status.error_message();
    EXPECT_EQ(result.status.error_message().find(kToken), std::string::npos);
  }
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_NE(access(proof.c_str(), F_OK), 0) << "a refused Exec ran something";
  EXPECT_EQ(manager_->running(), 0);
}

TEST_F(ExecServiceTest, TokenIsCheckedBeforeTheArgv) {
  ExecResult result = Exec(ArgvRequest({"/bin/sh", "-c", "true"}, "wrong"));
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(ExecServiceTest, LargeOutputArrivesWhole) {
  ExecResult result = Exec(Request("head -c 3000000 /dev/zero | tr '\\0' x"));
  ASSERT_TRUE(result.status.ok());
  EXPECT_EQ(result.stdout_data, std::string(3000000, 'x'));
  EXPECT_EQ(result.exit_code, 0);
}

TEST_F(ExecServiceTest, WrongTokenIsPermissionDeniedNamingTheRun) {
  ExecResult result = Exec(Request("echo never", "not-the-token"));
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(result.status.error_message().find(kRun), std::string::npos);
  EXPECT_EQ(result.status.error_message().find("not-the-token"), std::string::npos);
  EXPECT_EQ(result.status.error_message().find(kToken), std::string::npos);
  EXPECT_TRUE(result.stdout_data.empty());

  // A run whose token has not come (yet) is refused at once as retryable.
  v1::ExecRequest other_run = Request("echo never");
  other_run.set_run("runs/unknown");
  result = Exec(other_run);
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(result.status.error_message().find("runs/unknown"), std::string::npos);
  EXPECT_TRUE(result.stdout_data.empty());

  result = Exec(Request("echo never", ""));
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

// What a worker of the run holds is the token's digest: presenting it, as a
// worker that wants to start something on a peer would, starts nothing.
TEST_F(ExecServiceTest, TheDigestAWorkerHoldsIsNotAToken) {
  ExecResult result = Exec(Request("echo never", TokenDigest(kToken)));
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(result.stdout_data.empty());
  EXPECT_EQ(manager_->running(), 0);
}

TEST_F(ExecServiceTest, ClientCancelKillsTheGroup) {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<v1::ExecOutput>> reader;
  const pid_t pgid = StartAndReadPid(&context, "sleep 100 & sleep 100 & echo $$; wait", &reader);
  ASSERT_GT(pgid, 0);
  EXPECT_EQ(manager_->running(kRun), 1);
  context.TryCancel();
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(Eventually([pgid] { return GroupGone(pgid); }));
  EXPECT_TRUE(Eventually([this] { return manager_->running() == 0; }));
}

TEST_F(ExecServiceTest, RevokeKillsRunningCommandsAndRefusesNewOnes) {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<v1::ExecOutput>> reader;
  const pid_t pgid = StartAndReadPid(&context, "echo $$; exec sleep 100", &reader);
  ASSERT_GT(pgid, 0);
  manager_->Revoke(kRun);
  v1::ExecOutput output;
  int exit_code = -1;
  while (reader->Read(&output)) {
    if (output.has_exit_code()) exit_code = output.exit_code();
  }
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(exit_code, 128 + SIGTERM);
  EXPECT_TRUE(GroupGone(pgid));
  EXPECT_EQ(manager_->running(), 0);
  EXPECT_EQ(Exec(Request("echo never")).status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(ExecServiceTest, KillAllStopsEverythingAndRefusesNewCommands) {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<v1::ExecOutput>> reader;
  const pid_t pgid = StartAndReadPid(&context, "echo $$; exec sleep 100", &reader);
  EXPECT_TRUE(manager_->KillAll(absl::Seconds(10)));
  EXPECT_TRUE(GroupGone(pgid));
  v1::ExecOutput output;
  while (reader->Read(&output)) {
  }
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(Exec(Request("echo never")).status.error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST(ExecManagerTest, RevokeKillsOnlyThatRunsCommands) {
  FakeProcessRunner runner;
  FakeProcessRunner::Script daemon;
  daemon.wait_for_kill = true;
  runner.SetScript("/opt/mpi/orted", daemon);
  ExecManagerOptions options;
  options.daemons["orted"] = "/opt/mpi/orted";
  options.base_env = {{"K", "V"}};
  ExecManager manager(&runner, options);
  manager.Allow("runs/a", TokenDigest("ta"), v1::OPENMPI);
  manager.Allow("runs/b", TokenDigest("tb"), v1::OPENMPI);
  auto a = manager.Start("runs/a", "ta", {"orted"});
  auto b = manager.Start("runs/b", "tb", {"orted"});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(manager.running(), 2);
  manager.Revoke("runs/a");
  EXPECT_EQ(runner.kill_count(), 1);
  EXPECT_EQ(manager.Start("runs/a", "ta", {"orted"}).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(runner.started()[1].env.at("K"), "V");
  a->reset();
  EXPECT_EQ(manager.running("runs/a"), 0);
  EXPECT_EQ(manager.running("runs/b"), 1);
  b->reset();
  EXPECT_EQ(manager.running(), 0);
}

TEST(ExecManagerTest, AllowReplacesTheToken) {
  FakeProcessRunner runner;
  ExecManagerOptions options;
  options.daemons["hydra_pmi_proxy"] = "/opt/mpi/hydra_pmi_proxy";
  ExecManager manager(&runner, options);
  manager.Allow("runs/a", TokenDigest("old"), v1::MPICH);
  manager.Allow("runs/a", TokenDigest("new"), v1::MPICH);
  EXPECT_EQ(manager.Start("runs/a", "old", {"hydra_pmi_proxy"}).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(manager.Start("runs/a", "new", {"hydra_pmi_proxy"}).ok());
  EXPECT_EQ(manager.Start("runs/a", "new", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The token carries the run's library: an MPICH run's token cannot start
// orted (or prted), an Open MPI run's cannot start hydra_pmi_proxy, and
// nothing runs when refused.
TEST(ExecManagerTest, ATokenStartsOnlyTheDaemonOfItsRunsLibrary) {
  FakeProcessRunner runner;
  ExecManagerOptions options;
  options.daemons["orted"] = "/opt/mpi/orted";
  options.daemons["prted"] = "/opt/mpi/prted";
  options.daemons["hydra_pmi_proxy"] = "/opt/mpi/hydra_pmi_proxy";
  ExecManager manager(&runner, options);
  manager.Allow("runs/mpich", TokenDigest("tm"), v1::MPICH);
  manager.Allow("runs/openmpi", TokenDigest("to"), v1::OPENMPI);
  for (const char* daemon : {"orted", "prted"}) {
    auto refused = manager.Start("runs/mpich", "tm", {daemon});
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << daemon;
    EXPECT_NE(refused.status().message().find("MPICH run"), absl::string_view::npos);
  }
  auto refused = manager.Start("runs/openmpi", "to", {"hydra_pmi_proxy", "--proxy-id", "1"});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("Open MPI run"), absl::string_view::npos);
  EXPECT_TRUE(runner.started().empty());
  EXPECT_EQ(manager.running(), 0);

  auto proxy = manager.Start("runs/mpich", "tm", {"hydra_pmi_proxy", "--proxy-id", "1"});
  auto orted = manager.Start("runs/openmpi", "to", {"orted"});
  ASSERT_TRUE(proxy.ok()) << proxy.status();
  ASSERT_TRUE(orted.ok()) << orted.status();
  ASSERT_EQ(runner.started().size(), 2u);
  EXPECT_EQ(runner.started()[0].argv[0], "/opt/mpi/hydra_pmi_proxy");
  EXPECT_EQ(runner.started()[1].argv[0], "/opt/mpi/orted");
}

}  // namespace
}  // namespace collbench
