// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/launch_shim.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/secrets.h"
#include "gmock/gmock.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "tests/unit/agent/test_util.h"
#include "worker/agent/exec_service.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;

// The daemon launch exactly as Open MPI 4.1 passes it to plm_rsh_agent.
const std::vector<std::string> kOpenMpiArgs = {"fakehost1",
                                               " orted",
                                               "-mca",
                                               "ess",
                                               "\"env\"",
                                               "-mca",
                                               "ess_base_jobid",
                                               "\"411893760\"",
                                               "-mca",
                                               "ess_base_vpid",
                                               "1",
                                               "-mca",
                                               "orte_node_regex",
                                               "\"vm,fakehost[1:1-2]@0(3)\"",
                                               "-mca",
                                               "orte_hnp_uri",
                                               "\"411893760.0;tcp://192.0.2.2:60279\"",
                                               "--mca",
                                               "plm_rsh_agent",
                                               "\"/usr/bin/collbench-worker launch-shim\"",
                                               "-mca",
                                               "plm",
                                               "\"rsh\""};

// The proxy launch exactly as MPICH 4.0 hydra passes it to -launcher-exec.
const std::vector<std::string> kHydraArgs = {"-x",
                                             "fakehost2",
                                             "\"/usr/bin/hydra_pmi_proxy\"",
                                             "--control-port",
                                             "vm:45529",
                                             "--rmk",
                                             "user",
                                             "--launcher",
                                             "ssh",
                                             "--launcher-exec",
                                             "/tmp/shim.sh",
                                             "--demux",
                                             "poll",
                                             "--pgid",
                                             "0",
                                             "--retries",
                                             "10",
                                             "--usize",
                                             "-2",
                                             "--pmi-port",
                                             "0",
                                             "--gpus-per-proc",
                                             "-2",
                                             "--proxy-id",
                                             "1"};

TEST(ParseShimArgsTest, OpenMpiDaemonLaunch) {
  absl::StatusOr<ShimCommand> parsed = ParseShimArgs(kOpenMpiArgs);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->host, "fakehost1");
  EXPECT_EQ(parsed->command,
            " orted -mca ess \"env\" -mca ess_base_jobid \"411893760\" -mca "
            "ess_base_vpid 1 -mca orte_node_regex \"vm,fakehost[1:1-2]@0(3)\" -mca "
            "orte_hnp_uri \"411893760.0;tcp://192.0.2.2:60279\" --mca plm_rsh_agent "
            "\"/usr/bin/collbench-worker launch-shim\" -mca plm \"rsh\"");
}

TEST(ParseShimArgsTest, HydraProxyLaunch) {
  absl::StatusOr<ShimCommand> parsed = ParseShimArgs(kHydraArgs);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->host, "fakehost2");
  EXPECT_EQ(parsed->command.rfind("\"/usr/bin/hydra_pmi_proxy\" --control-port vm:45529 ", 0), 0u);
  EXPECT_THAT(parsed->command, HasSubstr("--usize -2 --pmi-port 0"));
  EXPECT_THAT(parsed->command, ::testing::EndsWith("--proxy-id 1"));
}

TEST(ParseShimArgsTest, SshOptionsWithAndWithoutValues) {
  absl::StatusOr<ShimCommand> parsed =
      ParseShimArgs({"-o", "StrictHostKeyChecking=no", "-p", "22", "-l", "root", "-xqT", "-p2222",
                     "-oBatchMode=yes", "user@alias", "-n", "-i", "key", "echo", "-x", "a  b"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->host, "alias");
  // Options after the host are ssh's too, up to the first word that is not.
  EXPECT_EQ(parsed->command, "echo -x a  b");
}

TEST(ParseShimArgsTest, DoubleDashEndsOptions) {
  absl::StatusOr<ShimCommand> parsed = ParseShimArgs({"-x", "--", "alias", "-v", "x"});
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->host, "alias");
  EXPECT_EQ(parsed->command, "-v x");
}

TEST(ParseShimArgsTest, MissingHostOrCommand) {
  EXPECT_EQ(ParseShimArgs({}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseShimArgs({"-x", "-p", "22"}).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<ShimCommand> parsed = ParseShimArgs({"-x", "alias"});
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parsed.status().message(), HasSubstr("alias"));
}

TEST(HostMapTest, ParsesAndFormats) {
  absl::StatusOr<std::map<std::string, std::string>> parsed =
      ParseHostMap(" w1=10.0.0.1:7001, w2=[::1]:7002 ,");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->at("w1"), "10.0.0.1:7001");
  EXPECT_EQ(parsed->at("w2"), "[::1]:7002");
  EXPECT_EQ(FormatHostMap(*parsed), "w1=10.0.0.1:7001,w2=[::1]:7002");
  EXPECT_EQ(*ParseHostMap(FormatHostMap(*parsed)), *parsed);
  EXPECT_TRUE(ParseHostMap("")->empty());
}

TEST(HostMapTest, RejectsMalformedEntries) {
  for (const char* text : {"w1", "=1.2.3.4:5", "w1=", "w1=a:1,w1=b:2"}) {
    EXPECT_EQ(ParseHostMap(text).status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
}

// A token file as the launcher writes it; removed by the caller.
std::string WriteTokenFile(const std::string& token) {
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/collbench-token-", getpid(), "-", token.size());
  std::ofstream(path) << token;
  chmod(path.c_str(), 0600);
  return path;
}

TEST(ShimEnvironmentTest, NamesTheMissingVariable) {
  const std::string token_file = WriteTokenFile("t0k");
  setenv(kRunEnv, "runs/x", 1);
  setenv(kRunTokenFileEnv, token_file.c_str(), 1);
  unsetenv(kHostMapEnv);
  absl::StatusOr<ShimEnvironment> env = ReadShimEnvironment();
  EXPECT_EQ(env.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(env.status().message(), HasSubstr(kHostMapEnv));
  setenv(kHostMapEnv, "a=127.0.0.1:1", 1);
  env = ReadShimEnvironment();
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->run, "runs/x");
  EXPECT_EQ(env->token, "t0k");
  EXPECT_EQ(env->host_map.at("a"), "127.0.0.1:1");
  unlink(token_file.c_str());
  env = ReadShimEnvironment();  // the file is gone
  EXPECT_EQ(env.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(env.status().message(), HasSubstr(kRunTokenFileEnv));
  EXPECT_THAT(env.status().message(), ::testing::Not(HasSubstr("t0k")));
  for (const char* name : {kRunEnv, kRunTokenFileEnv, kHostMapEnv}) unsetenv(name);
}

// The shim against a real in-process Agent.
class LaunchShimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runner_ = NewPosixProcessRunner();
    ExecManagerOptions options;
    options.daemons["orted"] = ::collbench::testing::FakeOrtedPath();
    options.base_env = {{"PATH", "/usr/bin:/bin"}};
    manager_ = std::make_unique<ExecManager>(runner_.get(), options);
    service_ = std::make_unique<ExecService>(manager_.get());
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    manager_->Allow("runs/s", TokenDigest("tok"), v1::OPENMPI);
    env_.run = "runs/s";
    env_.token = "tok";
    env_.host_map = {{"alias1", absl::StrCat("127.0.0.1:", port)}};
  }

  void TearDown() override {
    manager_->KillAll();
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    server_->Wait();
  }

  // Runs the shim with stdout and stderr captured.
  int Shim(const std::vector<std::string>& args, const ShimEnvironment& env) {
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    ShimOptions options;
    options.connect_timeout = absl::Milliseconds(500);
    const int rc = RunShim(args, env, options);
    stdout_ = ::testing::internal::GetCapturedStdout();
    stderr_ = ::testing::internal::GetCapturedStderr();
    return rc;
  }

  std::unique_ptr<ProcessRunner> runner_;
  std::unique_ptr<ExecManager> manager_;
  std::unique_ptr<ExecService> service_;
  std::unique_ptr<grpc::Server> server_;
  ShimEnvironment env_;
  std::string stdout_;
  std::string stderr_;
};

TEST_F(LaunchShimTest, RunLaunchShimRelaysOutputFromTheEnvironment) {
  const std::string token_file = WriteTokenFile(env_.token);
  setenv(kRunEnv, env_.run.c_str(), 1);
  setenv(kRunTokenFileEnv, token_file.c_str(), 1);
  setenv(kHostMapEnv, FormatHostMap(env_.host_map).c_str(), 1);
  std::vector<std::string> words = {"shim", "alias1", "orted", "-mca", "ess", "'echo hello'"};
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  ::testing::internal::CaptureStdout();
  const int rc = RunLaunchShim(static_cast<int>(words.size()), argv.data());
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "hello\n");
  EXPECT_EQ(rc, 0);
  for (const char* name : {kRunEnv, kRunTokenFileEnv, kHostMapEnv}) unsetenv(name);
  unlink(token_file.c_str());
}

TEST_F(LaunchShimTest, RelaysStderrAndExitCode) {
  EXPECT_EQ(Shim({"-x", "alias1", " orted", "-mca", "ess", "\"echo out; echo oops >&2; exit 7\""},
                 env_),
            7);
  EXPECT_EQ(stdout_, "out\n");
  EXPECT_EQ(stderr_, "oops\n");
}

// What a shell would have interpreted is refused by the shim, naming the
// word, and nothing runs on the peer.
TEST_F(LaunchShimTest, ShellMetacharactersAreRefusedNotRun) {
  const std::string proof = absl::StrCat(::testing::TempDir(), "/collbench-shim-proof-", getpid());
  unlink(proof.c_str());
  const std::vector<std::vector<std::string>> attacks = {
      {"alias1", "orted", "-mca", "ess", "env;touch", proof},
      {"alias1", "orted", "-mca", "ess", "$(touch", proof + ")"},
      {"alias1", "orted", "-mca", "ess", "\"`touch " + proof + "`\""},
      {"alias1", "orted", "-mca", "ess", "\"$(touch " + proof + ")\""},
      {"alias1", "orted", "-mca", "ess", "env", "|", "touch", proof},
      {"alias1", "orted", "-mca", "ess", "env", ">", proof},
      {"alias1", "orted", "&&", "touch", proof},
  };
  for (const std::vector<std::string>& args : attacks) {
    EXPECT_EQ(Shim(args, env_), 255) << args[4];
    EXPECT_THAT(stderr_, HasSubstr("would need a shell")) << stderr_;
  }
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_NE(access(proof.c_str(), F_OK), 0);
  EXPECT_EQ(manager_->running(), 0);
}

TEST_F(LaunchShimTest, UnknownAliasIs255) {
  EXPECT_EQ(Shim({"nohost", "orted"}, env_), 255);
  EXPECT_THAT(stderr_, HasSubstr("unknown host alias \"nohost\""));
}

TEST_F(LaunchShimTest, UnreachableAgentIs255NamingAliasAndAddress) {
  ShimEnvironment env = env_;
  env.host_map["alias2"] = "127.0.0.1:1";
  EXPECT_EQ(Shim({"alias2", "orted"}, env), 255);
  EXPECT_THAT(stderr_, HasSubstr("alias2"));
  EXPECT_THAT(stderr_, HasSubstr("127.0.0.1:1"));
  EXPECT_EQ(std::count(stderr_.begin(), stderr_.end(), '\n'), 1);
}

TEST_F(LaunchShimTest, RefusedTokenIs255) {
  ShimEnvironment env = env_;
  env.token = "bad-token-xyz";
  EXPECT_EQ(Shim({"alias1", "orted", "-mca", "ess", "'echo never'"}, env), 255);
  EXPECT_THAT(stderr_, HasSubstr("runs/s"));
  EXPECT_THAT(stderr_, ::testing::Not(HasSubstr("bad-token-xyz")));
  EXPECT_TRUE(stdout_.empty());
}

}  // namespace
}  // namespace collbench
