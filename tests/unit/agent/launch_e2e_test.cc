// SPDX-License-Identifier: Apache-2.0
// mpirun / mpiexec → launch shim → Exec → orted / hydra_pmi_proxy, on one
// machine: the launcher runs on this host, and two host aliases both map to
// an in-process Agent, which starts the daemons here. This binary is the
// agent (`agent_test launch-shim`, see test_main.cc). The flags are the ones
// launch_shim.h documents for the launcher.
#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/secrets.h"
#include "gmock/gmock.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "tests/unit/agent/test_util.h"
#include "worker/agent/clean_env.h"
#include "worker/agent/daemon_command.h"
#include "worker/agent/exec_service.h"
#include "worker/agent/launch_shim.h"

namespace collbench {
namespace {

using ::collbench::testing::Eventually;
using ::testing::HasSubstr;

constexpr char kE2eRun[] = "runs/e2e";
constexpr char kE2eToken[] = "e2e-token";

std::string SelfExe() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  return n > 0 ? std::string(path, n) : "";
}

bool IsExecutable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

// Live `sleep SECONDS` processes: the ranks of the teardown tests.
int CountSleeps(const std::string& seconds) {
  const std::string wanted = std::string("sleep") + '\0' + seconds + '\0';
  int count = 0;
  DIR* dir = opendir("/proc");
  while (dirent* entry = dir != nullptr ? readdir(dir) : nullptr) {
    const int pid = std::atoi(entry->d_name);
    if (pid <= 0) continue;
    std::ifstream file(absl::StrCat("/proc/", pid, "/cmdline"));
    const std::string cmdline((std::istreambuf_iterator<char>(file)), {});
    if (cmdline == wanted && !testing::ProcessGone(pid)) ++count;
  }
  if (dir != nullptr) closedir(dir);
  return count;
}

// Records the commands the Agent runs, then runs them for real. All the
// "hosts" here are one machine with one hostname, so daemons of one job
// would share Open MPI's session directory and race on creating it and on
// its hwloc.sm file (orted fails with "mkdir ... File exists" or crashes in
// hwloc_shmem_topology_write now and then). Each command therefore gets a
// session directory base of its own, as separate hosts would have.
class RecordingRunner final : public ProcessRunner {
 public:
  ~RecordingRunner() override { std::filesystem::remove_all(root_); }

  absl::StatusOr<std::unique_ptr<Process>> Start(const ProcessOptions& options) override {
    ProcessOptions own = options;
    {
      absl::MutexLock lock(&mu_);
      commands_.push_back(absl::StrJoin(options.argv, " "));
      const std::string tmp = absl::StrCat(root_, "/", commands_.size());
      std::filesystem::create_directories(tmp);
      own.env["OMPI_MCA_orte_tmpdir_base"] = tmp;
    }
    return real_->Start(own);
  }
  std::vector<std::string> commands() const {
    absl::MutexLock lock(&mu_);
    return commands_;
  }

 private:
  const std::string root_ = absl::StrCat(::testing::TempDir(), "/collbench-e2e-", getpid());
  std::unique_ptr<ProcessRunner> real_ = NewPosixProcessRunner();
  mutable absl::Mutex mu_;
  std::vector<std::string> commands_ ABSL_GUARDED_BY(mu_);
};

class LaunchE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ExecManagerOptions options;
    options.daemons = ResolveDaemonPaths(
        {{"openmpi", COLLBENCH_TEST_MPIRUN}, {"mpich", COLLBENCH_TEST_MPIEXEC_MPICH}});
    options.base_env = AllowedOwnEnvironment();
    manager_ = std::make_unique<ExecManager>(&recorder_, options);
    service_ = std::make_unique<ExecService>(manager_.get());
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    // HydraCommand() makes it MPICH's.
    manager_->Allow(kE2eRun, TokenDigest(kE2eToken), v1::OPENMPI);
    const std::string address = absl::StrCat("127.0.0.1:", port);
    dir_ = absl::StrCat(::testing::TempDir(), "/collbench-e2e-run-", getpid());
    std::filesystem::create_directories(dir_);
    chmod(dir_.c_str(), 0700);
    token_file_ = dir_ + "/token";
    std::ofstream(token_file_) << kE2eToken;
    chmod(token_file_.c_str(), 0600);
    env_ = AllowedOwnEnvironment();
    env_[kRunEnv] = kE2eRun;
    env_[kRunTokenFileEnv] = token_file_;
    env_[kHostMapEnv] = FormatHostMap({{"alias1", address}, {"alias2", address}});
    self_ = SelfExe();
  }

  void TearDown() override {
    if (launcher_ != nullptr) launcher_.reset();  // kills and reaps mpirun
    EXPECT_TRUE(manager_->KillAll(absl::Seconds(15)));
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    server_->Wait();
    std::filesystem::remove_all(dir_);
  }

  // Starts the launcher command with the shim's environment.
  void StartLauncher(const std::vector<std::string>& argv) {
    ProcessOptions options;
    options.argv = argv;
    options.env = env_;
    absl::StatusOr<std::unique_ptr<Process>> process = launcher_runner_->Start(options);
    ASSERT_TRUE(process.ok()) << process.status();
    launcher_ = *std::move(process);
  }

  ProcessResult RunLauncher(const std::vector<std::string>& argv) {
    StartLauncher(argv);
    absl::StatusOr<ProcessResult> result = CollectOutput(launcher_.get(), absl::Seconds(90));
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : ProcessResult{};
  }

  // For failure messages: stops the launcher and returns what it printed.
  std::string LauncherOutputAfterKill() {
    launcher_->Kill(absl::Seconds(1));
    absl::StatusOr<ProcessResult> result = CollectOutput(launcher_.get(), absl::Seconds(10));
    if (!result.ok()) return result.status().ToString();
    return absl::StrCat("launcher exit ", result->exit_code, "\nstdout:\n", result->stdout_data,
                        "\nstderr:\n", result->stderr_data);
  }

  // mpirun (Open MPI) with the shim as its remote-shell agent.
  std::vector<std::string> OpenMpiCommand(std::vector<std::string> program) const {
    std::vector<std::string> argv = {
        COLLBENCH_TEST_MPIRUN, "--noprefix", "--allow-run-as-root", "--mca", "plm_rsh_agent",
        self_ + " launch-shim", "--mca", "plm_rsh_no_tree_spawn", "1", "--mca",
        "orte_leave_session_attached", "1", "--mca", "rtc_hwloc_vmhole", "none", "-H",
        "alias1:1,alias2:1", "-np", "2"};
    argv.insert(argv.end(), program.begin(), program.end());
    return argv;
  }

  // mpiexec (MPICH hydra) with the shim as its launcher. hydra execs
  // -launcher-exec as one word, so it gets a link to this binary named
  // collbench-launch-shim; -localhost is the address the proxies call back.
  std::vector<std::string> HydraCommand(std::vector<std::string> program) {
    // The run's token starts hydra_pmi_proxy only.
    manager_->Allow(kE2eRun, TokenDigest(kE2eToken), v1::MPICH);
    const std::string link = dir_ + "/" + kShimLinkName;
    if (access(link.c_str(), F_OK) != 0) symlink(self_.c_str(), link.c_str());
    std::vector<std::string> argv = {COLLBENCH_TEST_MPIEXEC_MPICH, "-launcher", "ssh",
                                     "-launcher-exec", link, "-localhost", "127.0.0.1",
                                     "-hosts", "alias1:1,alias2:1", "-n", "2"};
    argv.insert(argv.end(), program.begin(), program.end());
    return argv;
  }

  int DaemonLaunches(absl::string_view daemon) const {
    int count = 0;
    for (const std::string& command : recorder_.commands()) {
      count += absl::StrContains(command, daemon) ? 1 : 0;
    }
    return count;
  }

  RecordingRunner recorder_;
  std::unique_ptr<ExecManager> manager_;
  std::unique_ptr<ExecService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::map<std::string, std::string> env_;
  std::string self_;
  std::string dir_;         // the run's private directory
  std::string token_file_;
  std::unique_ptr<ProcessRunner> launcher_runner_ = NewPosixProcessRunner();
  std::unique_ptr<Process> launcher_;
};

TEST_F(LaunchE2eTest, OpenMpiStartsOrtedThroughTheShim) {
  if (!IsExecutable(COLLBENCH_TEST_MPIRUN)) GTEST_SKIP() << "no Open MPI mpirun";
  ProcessResult result = RunLauncher(OpenMpiCommand({"/bin/sh", "-c", "echo rank=$OMPI_COMM_WORLD_RANK"}));
  EXPECT_EQ(result.exit_code, 0) << result.stdout_data << result.stderr_data;
  EXPECT_THAT(result.stdout_data, HasSubstr("rank=0"));
  EXPECT_THAT(result.stdout_data, HasSubstr("rank=1"));
  EXPECT_THAT(result.stderr_data, ::testing::Not(HasSubstr("ERROR")));
  EXPECT_EQ(DaemonLaunches("orted"), 2);
  EXPECT_TRUE(Eventually([this] { return manager_->running() == 0; }));
}

TEST_F(LaunchE2eTest, OpenMpiRunsCollbenchRankAcrossTwoAliases) {
  if (!IsExecutable(COLLBENCH_TEST_MPIRUN)) GTEST_SKIP() << "no Open MPI mpirun";
  const std::string rank = self_.substr(0, self_.rfind('/')) + "/collbench-rank";
  if (!IsExecutable(rank)) GTEST_SKIP() << "collbench-rank not built next to " << self_;
  ProcessResult result = RunLauncher(
      OpenMpiCommand({rank, "allreduce", "--sizes", "8,1K", "-n", "5", "-w", "1", "--check",
                      "--format", "jsonl"}));
  EXPECT_EQ(result.exit_code, 0) << result.stdout_data << result.stderr_data;
  EXPECT_THAT(result.stdout_data, HasSubstr("\"kind\":\"size\""));
  EXPECT_EQ(DaemonLaunches("orted"), 2);
}

TEST_F(LaunchE2eTest, RevokeTearsTheWholeRunDown) {
  if (!IsExecutable(COLLBENCH_TEST_MPIRUN)) GTEST_SKIP() << "no Open MPI mpirun";
  const std::string marker = absl::StrCat("1234", getpid(), ".5");
  StartLauncher(OpenMpiCommand({"sleep", marker}));
  ASSERT_TRUE(Eventually([&] { return CountSleeps(marker) == 2; }, absl::Seconds(30)))
      << LauncherOutputAfterKill();
  manager_->Revoke(kE2eRun);  // what the coordinator's cancel does on a peer
  absl::StatusOr<ProcessResult> result = CollectOutput(launcher_.get(), absl::Seconds(60));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_NE(result->exit_code, 0);
  EXPECT_TRUE(Eventually([this] { return manager_->running() == 0; }));
  EXPECT_TRUE(Eventually([&] { return CountSleeps(marker) == 0; }));
}

TEST_F(LaunchE2eTest, MpichHydraStartsProxiesThroughTheShim) {
  if (!IsExecutable(COLLBENCH_TEST_MPIEXEC_MPICH)) GTEST_SKIP() << "no MPICH mpiexec";
  ProcessResult result = RunLauncher(HydraCommand({"/bin/sh", "-c", "echo rank=$PMI_RANK"}));
  EXPECT_EQ(result.exit_code, 0) << result.stdout_data << result.stderr_data;
  EXPECT_THAT(result.stdout_data, HasSubstr("rank=0"));
  EXPECT_THAT(result.stdout_data, HasSubstr("rank=1"));
  EXPECT_EQ(DaemonLaunches("hydra_pmi_proxy"), 2);
  EXPECT_TRUE(Eventually([this] { return manager_->running() == 0; }));
}

TEST_F(LaunchE2eTest, MpichRunsCollbenchRankMpichAcrossTwoAliases) {
  if (!IsExecutable(COLLBENCH_TEST_MPIEXEC_MPICH)) GTEST_SKIP() << "no MPICH mpiexec";
  const std::string rank = self_.substr(0, self_.rfind('/')) + "/collbench-rank-mpich";
  if (!IsExecutable(rank)) GTEST_SKIP() << "collbench-rank-mpich not built next to " << self_;
  ProcessResult result =
      RunLauncher(HydraCommand({rank, "allreduce", "--sizes", "8,1K", "-n", "5", "-w", "1",
                                "--check", "--format", "jsonl"}));
  EXPECT_EQ(result.exit_code, 0) << result.stdout_data << result.stderr_data;
  EXPECT_THAT(result.stdout_data, HasSubstr("\"kind\":\"size\""));
}

TEST_F(LaunchE2eTest, RevokeTearsHydraRunDown) {
  if (!IsExecutable(COLLBENCH_TEST_MPIEXEC_MPICH)) GTEST_SKIP() << "no MPICH mpiexec";
  const std::string marker = absl::StrCat("1235", getpid(), ".5");
  StartLauncher(HydraCommand({"sleep", marker}));
  ASSERT_TRUE(Eventually([&] { return CountSleeps(marker) == 2; }, absl::Seconds(30)))
      << LauncherOutputAfterKill();
  manager_->Revoke(kE2eRun);
  absl::StatusOr<ProcessResult> result = CollectOutput(launcher_.get(), absl::Seconds(60));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_NE(result->exit_code, 0);
  EXPECT_TRUE(Eventually([this] { return manager_->running() == 0; }));
  EXPECT_TRUE(Eventually([&] { return CountSleeps(marker) == 0; }));
}

// Every process of the run (mpirun, shims, daemons, ranks): the token is
// in none's environment or command line.
TEST_F(LaunchE2eTest, TokenIsInNoEnvironmentOrCommandLineOfTheRun) {
  if (!IsExecutable(COLLBENCH_TEST_MPIRUN)) GTEST_SKIP() << "no Open MPI mpirun";
  const std::string marker = absl::StrCat("1236", getpid(), ".5");
  StartLauncher(OpenMpiCommand({"sleep", marker}));
  ASSERT_TRUE(Eventually([&] { return CountSleeps(marker) == 2; }, absl::Seconds(30)))
      << LauncherOutputAfterKill();
  int scanned = 0;
  DIR* dir = opendir("/proc");
  while (dirent* entry = dir != nullptr ? readdir(dir) : nullptr) {
    const int pid = std::atoi(entry->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    for (const char* file : {"environ", "cmdline"}) {
      std::ifstream in(absl::StrCat("/proc/", pid, "/", file), std::ios::binary);
      const std::string data((std::istreambuf_iterator<char>(in)), {});
      EXPECT_EQ(data.find(kE2eToken), std::string::npos) << "pid " << pid << " " << file;
      scanned += data.empty() ? 0 : 1;
    }
  }
  if (dir != nullptr) closedir(dir);
  EXPECT_GT(scanned, 8);  // mpirun, 2 shims, 2 orted, 2 ranks at least
  launcher_->Kill(absl::Seconds(1));
  ASSERT_TRUE(CollectOutput(launcher_.get(), absl::Seconds(60)).ok());
}

// A "rank" that leaves a setsid'd child behind, which would write a proof
// file after 3 seconds: nothing of it outlives the run.
TEST_F(LaunchE2eTest, SetsidChildOfARankDoesNotOutliveTheRun) {
  if (!IsExecutable(COLLBENCH_TEST_MPIRUN)) GTEST_SKIP() << "no Open MPI mpirun";
  const std::string proof = dir_ + "/proof-$OMPI_COMM_WORLD_RANK";
  ProcessResult result = RunLauncher(OpenMpiCommand(
      {"/bin/sh", "-c",
       "setsid /bin/sh -c 'sleep 3; touch " + proof + "' </dev/null >/dev/null 2>&1 & echo left"}));
  EXPECT_EQ(result.exit_code, 0) << result.stdout_data << result.stderr_data;
  EXPECT_THAT(result.stdout_data, HasSubstr("left"));
  EXPECT_TRUE(Eventually([this] { return manager_->running() == 0; }));
  absl::SleepFor(absl::Seconds(4));
  EXPECT_NE(access((dir_ + "/proof-0").c_str(), F_OK), 0) << "a rank's setsid'd child survived";
  EXPECT_NE(access((dir_ + "/proof-1").c_str(), F_OK), 0) << "a rank's setsid'd child survived";
}

}  // namespace
}  // namespace collbench
