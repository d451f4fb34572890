// SPDX-License-Identifier: Apache-2.0
// The launcher's pure parts: the result spool (at-least-once delivery) and
// the mpirun / mpiexec command an assignment becomes.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/agent/launch_command.h"
#include "worker/agent/result_spool.h"

namespace collbench {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

v1::SizeResult Bytes(uint64_t bytes) {
  v1::SizeResult r;
  r.set_bytes(bytes);
  return r;
}

TEST(ResultSpoolTest, NumbersResultsAndKeepsThemUntilAcked) {
  ResultSpool spool;
  EXPECT_EQ(spool.AddResult("runs/a", Bytes(8))->result().sequence(), 0);
  EXPECT_EQ(spool.AddResult("runs/a", Bytes(16))->result().sequence(), 1);
  EXPECT_EQ(spool.AddResult("runs/a", Bytes(32))->result().sequence(), 2);
  EXPECT_EQ(spool.UnackedCount(), 3u);
  spool.Ack("runs/a", 1);
  EXPECT_EQ(spool.UnackedCount(), 1u);
  spool.Ack("runs/a", 0);  // an older ack changes nothing
  EXPECT_EQ(spool.UnackedCount(), 1u);
}

TEST(ResultSpoolTest, PendingResendsUnackedResultsThenTheLatestStatus) {
  ResultSpool spool;
  (void)spool.AddResult("runs/a", Bytes(8));
  (void)spool.AddResult("runs/a", Bytes(16));
  spool.Ack("runs/a", 0);
  v1::RunStatus status;
  status.set_state(v1::SUCCEEDED);
  EXPECT_EQ(spool.SetStatus("runs/a", status).results_total(), 2);
  const std::vector<v1::WorkerMessage> pending = spool.Pending();
  ASSERT_EQ(pending.size(), 2u);
  EXPECT_EQ(pending[0].result().result().sequence(), 1);
  EXPECT_EQ(pending[1].run_status().state(), v1::SUCCEEDED);
}

TEST(ResultSpoolTest, ActiveRunsAreThoseNotFinishedOrNotFullyAcked) {
  ResultSpool spool;
  v1::RunStatus running;
  running.set_state(v1::RUNNING);
  spool.SetStatus("runs/running", running);
  v1::RunStatus done;
  done.set_state(v1::SUCCEEDED);
  (void)spool.AddResult("runs/unacked", Bytes(8));
  spool.SetStatus("runs/unacked", done);
  spool.SetStatus("runs/done", done);
  EXPECT_THAT(spool.ActiveRuns(), ElementsAre("runs/running", "runs/unacked"));
  spool.Release("runs/unacked");
  EXPECT_THAT(spool.ActiveRuns(), ElementsAre("runs/running"));
}

class LaunchCommandTest : public ::testing::Test {
 protected:
  LaunchCommandTest() {
    paths_.self = "/opt/cb/collbench-worker";
    paths_.flavors = {{"openmpi", {"/usr/bin/mpirun.openmpi", "/opt/cb/collbench-rank"}},
                      {"mpich", {"/usr/bin/mpiexec.mpich", "/opt/cb/collbench-rank-mpich"}}};
    paths_.shim_link = "/run/dir/collbench-launch-shim";
    environment_.base = {{"PATH", "/usr/bin:/bin"}, {"HOME", "/home/w"}};
    environment_.token_file = "/run/dir/token";
    assignment_.set_run("runs/r1");
    assignment_.set_token("secret");
    assignment_.mutable_spec()->set_operation("allreduce");
    assignment_.mutable_spec()->add_sizes_bytes(1024);
    assignment_.mutable_spec()->set_check(true);
    AddPeer("workers/a", "127.0.0.1:7001", 2);
    AddPeer("workers/b", "127.0.0.1:7002", 1);
  }
  void AddPeer(const std::string& worker, const std::string& address, int slots) {
    v1::Peer* peer = assignment_.add_peers();
    peer->set_worker(worker);
    peer->set_agent_address(address);
    peer->set_slots(slots);
  }
  static std::string Joined(const std::vector<std::string>& argv) {
    std::string out;
    for (const auto& a : argv) out += a + " ";
    return out;
  }
  LaunchPaths paths_;
  LaunchEnvironment environment_;
  v1::Assignment assignment_;
};

TEST_F(LaunchCommandTest, OpenMpiUsesTheShimAndHostsInRankOrder) {
  auto command = BuildLaunchCommand(assignment_, "workers/a", paths_, environment_);
  ASSERT_TRUE(command.ok()) << command.status();
  const std::string line = Joined(command->argv);
  EXPECT_EQ(command->argv[0], "/usr/bin/mpirun.openmpi");
  EXPECT_THAT(line, HasSubstr("-np 3 --host localhost:2,w1:1 "));
  EXPECT_THAT(line, HasSubstr("plm_rsh_agent /opt/cb/collbench-worker launch-shim"));
  EXPECT_THAT(line, HasSubstr("orte_leave_session_attached 1"));
  // Daemons sharing a machine crash writing hwloc's shared topology.
  EXPECT_THAT(line, HasSubstr("rtc_hwloc_vmhole none"));
  EXPECT_THAT(line, HasSubstr("/opt/cb/collbench-rank allreduce"));
  EXPECT_THAT(line, HasSubstr("--format jsonl"));
  EXPECT_EQ(command->env.at("COLLBENCH_RUN"), "runs/r1");
  EXPECT_EQ(command->env.at("COLLBENCH_RUN_TOKEN_FILE"), "/run/dir/token");
  EXPECT_EQ(command->env.at("COLLBENCH_HOSTMAP"), "w1=127.0.0.1:7002");
}

// A launcher (collbench-launcher) hosts no ranks: every worker of the run,
// rank 0's included, is reached through the shim, and MPICH's daemons call
// back to the launcher's own host.
TEST_F(LaunchCommandTest, ALauncherReachesEveryWorkerThroughTheShim) {
  assignment_.mutable_peers(0)->set_host_alias("w0");
  assignment_.mutable_peers(1)->set_host_alias("w1");
  paths_.launcher_host = "198.18.0.9";
  auto command = BuildLaunchCommand(assignment_, "launchers/l1", paths_, environment_);
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_THAT(Joined(command->argv), HasSubstr("-np 3 --host w0:2,w1:1 "));
  EXPECT_THAT(Joined(command->argv), Not(HasSubstr("localhost")));
  EXPECT_EQ(command->env.at("COLLBENCH_HOSTMAP"), "w0=127.0.0.1:7001,w1=127.0.0.1:7002");
  assignment_.mutable_spec()->set_mpi(v1::MPICH);
  auto mpich = BuildLaunchCommand(assignment_, "launchers/l1", paths_, environment_);
  ASSERT_TRUE(mpich.ok()) << mpich.status();
  EXPECT_THAT(Joined(mpich->argv), HasSubstr("-localhost 198.18.0.9"));
  // A worker that is not rank 0's still launches nothing.
  EXPECT_FALSE(BuildLaunchCommand(assignment_, "workers/b", paths_, environment_).ok());
}

TEST_F(LaunchCommandTest, TransportsMapToMcaOrUcx) {
  assignment_.mutable_spec()->set_transport(v1::TCP);
  auto openmpi = BuildLaunchCommand(assignment_, "workers/a", paths_, environment_);
  EXPECT_THAT(Joined(openmpi->argv), HasSubstr("--mca btl self,tcp"));
  assignment_.mutable_spec()->set_mpi(v1::MPICH);
  auto mpich = BuildLaunchCommand(assignment_, "workers/a", paths_, environment_);
  EXPECT_EQ(mpich->argv[0], "/usr/bin/mpiexec.mpich");
  EXPECT_THAT(Joined(mpich->argv), HasSubstr("-launcher ssh -launcher-exec /run/dir/collbench-launch-shim"));
  EXPECT_THAT(Joined(mpich->argv), HasSubstr("-genv UCX_TLS self,tcp"));
  EXPECT_THAT(Joined(mpich->argv), HasSubstr("/opt/cb/collbench-rank-mpich allreduce"));
}

TEST_F(LaunchCommandTest, AllowedEnvironmentReachesEveryRank) {
  (*assignment_.mutable_spec()->mutable_env())["NCCL_DEBUG"] = "INFO";
  auto command = BuildLaunchCommand(assignment_, "workers/a", paths_, environment_);
  EXPECT_EQ(command->env.at("NCCL_DEBUG"), "INFO");
  EXPECT_THAT(Joined(command->argv), HasSubstr("-x NCCL_DEBUG"));
}

TEST_F(LaunchCommandTest, MpiInterfaceRestrictsOpenMpiAndMpichCallsBackTheLauncher) {
  paths_.mpi_interface = "198.18.0.0/24";
  auto openmpi = BuildLaunchCommand(assignment_, "workers/a", paths_, environment_);
  EXPECT_THAT(Joined(openmpi->argv), HasSubstr("--mca oob_tcp_if_include 198.18.0.0/24"));
  EXPECT_THAT(Joined(openmpi->argv), HasSubstr("--mca btl_tcp_if_include 198.18.0.0/24"));
  assignment_.mutable_spec()->set_mpi(v1::MPICH);
  auto mpich = BuildLaunchCommand(assignment_, "workers/a", paths_, environment_);
  EXPECT_THAT(Joined(mpich->argv), HasSubstr("-localhost 127.0.0.1"));
}

TEST_F(LaunchCommandTest, MpichShmAcrossWorkersSharingIpcGoesThroughUcxSharedMemory) {
  assignment_.mutable_spec()->set_transport(v1::SHM);
  assignment_.mutable_spec()->set_mpi(v1::MPICH);
  assignment_.set_shared_ipc(true);
  assignment_.set_single_copy_mechanism("cma");
  auto command = BuildLaunchCommand(assignment_, "workers/a", paths_, environment_);
  EXPECT_THAT(Joined(command->argv), HasSubstr("-genv UCX_TLS self,sm "));
  EXPECT_THAT(Joined(command->argv), Not(HasSubstr("MPIR_CVAR_NOLOCAL")));
}

TEST_F(LaunchCommandTest, ShmWithoutSharedIpcKeepsVader) {
  assignment_.mutable_spec()->set_transport(v1::SHM);
  auto openmpi = BuildLaunchCommand(assignment_, "workers/a", paths_, environment_);
  EXPECT_THAT(Joined(openmpi->argv), HasSubstr("--mca pml ob1 --mca btl self,vader"));
}

TEST_F(LaunchCommandTest, RefusesAnAssignmentForAnotherLauncher) {
  auto command = BuildLaunchCommand(assignment_, "workers/b", paths_, environment_);
  EXPECT_EQ(command.status().code(), absl::StatusCode::kInvalidArgument);
}

// The token is in no argv and no environment of mpirun (and so of no rank):
// only the path of its file is.
TEST_F(LaunchCommandTest, TokenIsInNoArgvAndNoEnvironment) {
  for (v1::MpiImplementation mpi : {v1::OPENMPI, v1::MPICH}) {
    assignment_.mutable_spec()->set_mpi(mpi);
    auto command = BuildLaunchCommand(assignment_, "workers/a", paths_, environment_);
    ASSERT_TRUE(command.ok()) << command.status();
    for (const std::string& arg : command->argv) EXPECT_THAT(arg, Not(HasSubstr("secret")));
    for (const auto& [key, value] : command->env) {
      EXPECT_THAT(value, Not(HasSubstr("secret"))) << key;
    }
    EXPECT_EQ(command->env.count("COLLBENCH_RUN_TOKEN"), 0u);
  }
}

// mpirun's environment is the worker's allowed base plus what the run
// needs, nothing else.
TEST_F(LaunchCommandTest, EnvironmentIsTheBasePlusTheRunsSettings) {
  (*assignment_.mutable_spec()->mutable_env())["OMPI_MCA_coll_tuned_use_dynamic_rules"] = "1";
  auto command = BuildLaunchCommand(assignment_, "workers/a", paths_, environment_);
  ASSERT_TRUE(command.ok()) << command.status();
  std::vector<std::string> keys;
  for (const auto& [key, value] : command->env) keys.push_back(key);
  std::vector<std::string> expected = {"COLLBENCH_HOSTMAP", "COLLBENCH_RUN",
                                       "COLLBENCH_RUN_TOKEN_FILE", "HOME",
                                       "OMPI_MCA_coll_tuned_use_dynamic_rules", "PATH",
                                       "PMIX_MCA_gds"};
  if (geteuid() == 0) {
    expected.push_back("OMPI_ALLOW_RUN_AS_ROOT");
    expected.push_back("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM");
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(keys, expected);
}

// Defense in depth: the launcher refuses what validation would have.
TEST_F(LaunchCommandTest, RefusesHostileTuningParametersAndArgWords) {
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"OMPI_MCA_orte_fork_agent", "/bin/sh"},
           {"NCCL_NET_PLUGIN", "/tmp/x.so"},
           {"LD_PRELOAD", "/tmp/x.so"},
           {"OMPI_MCA_btl", "tcp;touch /tmp/p"},
           {"UCX_UNKNOWN_THING", "1"}}) {
    v1::Assignment hostile = assignment_;
    (*hostile.mutable_spec()->mutable_env())[key] = value;
    auto command = BuildLaunchCommand(hostile, "workers/a", paths_, environment_);
    EXPECT_EQ(command.status().code(), absl::StatusCode::kInvalidArgument) << key;
    EXPECT_THAT(command.status().message(), HasSubstr("spec.env." + key));
  }
  v1::Assignment hostile = assignment_;
  hostile.mutable_spec()->set_memory("--debug-corrupt-rank");
  auto command = BuildLaunchCommand(hostile, "workers/a", paths_, environment_);
  EXPECT_EQ(command.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(command.status().message(), HasSubstr("spec.memory"));
}

// A tuning file named by its bare name reaches mpirun / mpiexec as its
// real path in the worker's --tuning-dir; without the folder or the file
// the run fails naming the key and the file.
TEST_F(LaunchCommandTest, TuningFileIsResolvedInTheWorkersTuningDir) {
  std::string pattern = absl::StrCat(::testing::TempDir(), "/collbench-launch-tuning-XXXXXX");
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const std::string dir = std::filesystem::canonical(pattern).string();
  std::ofstream(dir + "/openmpi-rules.conf") << "1\n";
  std::ofstream(dir + "/mpich.json") << "{}\n";
  ASSERT_EQ(symlink("/etc/passwd", (dir + "/passwd").c_str()), 0);
  auto& env = *assignment_.mutable_spec()->mutable_env();
  env["OMPI_MCA_coll_tuned_use_dynamic_rules"] = "1";
  env["OMPI_MCA_coll_tuned_dynamic_rules_filename"] = "openmpi-rules.conf";
  paths_.tuning_dir = dir;
  auto openmpi = BuildLaunchCommand(assignment_, "workers/a", paths_, environment_);
  ASSERT_TRUE(openmpi.ok()) << openmpi.status();
  EXPECT_EQ(openmpi->env.at("OMPI_MCA_coll_tuned_dynamic_rules_filename"),
            dir + "/openmpi-rules.conf");
  EXPECT_THAT(Joined(openmpi->argv), HasSubstr("-x OMPI_MCA_coll_tuned_dynamic_rules_filename"));

  assignment_.mutable_spec()->set_mpi(v1::MPICH);
  env.clear();
  env["MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"] = "mpich.json";
  auto mpich = BuildLaunchCommand(assignment_, "workers/a", paths_, environment_);
  ASSERT_TRUE(mpich.ok()) << mpich.status();
  EXPECT_THAT(Joined(mpich->argv),
              HasSubstr("-genv MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE " + dir + "/mpich.json "));

  // Missing, a link out of the folder, a path, or no folder on this worker.
  for (const auto& [name, tuning_dir, code, why] :
       std::vector<std::tuple<std::string, std::string, absl::StatusCode, std::string>>{
           {"missing.json", dir, absl::StatusCode::kFailedPrecondition, "no such file"},
           {"passwd", dir, absl::StatusCode::kFailedPrecondition, "outside the tuning folder"},
           {"../mpich.json", dir, absl::StatusCode::kInvalidArgument, "bare"},
           {"/etc/passwd", dir, absl::StatusCode::kInvalidArgument, "bare"},
           {"mpich.json", "", absl::StatusCode::kFailedPrecondition, "--tuning-dir"}}) {
    env["MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"] = name;
    paths_.tuning_dir = tuning_dir;
    auto refused = BuildLaunchCommand(assignment_, "workers/a", paths_, environment_);
    EXPECT_EQ(refused.status().code(), code) << name;
    EXPECT_THAT(refused.status().message(),
                HasSubstr("spec.env.MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE")) << name;
    EXPECT_THAT(refused.status().message(), HasSubstr(why)) << name;
  }
  std::filesystem::remove_all(dir);
}

TEST(ResultSpoolTest, RefusesBeyondItsBoundNamingIt) {
  ResultSpool spool(/*max_unacked=*/2);
  ASSERT_TRUE(spool.AddResult("runs/a", Bytes(8)).ok());
  ASSERT_TRUE(spool.AddResult("runs/b", Bytes(8)).ok());
  absl::StatusOr<v1::RunResult> refused = spool.AddResult("runs/a", Bytes(16));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("result spool full"));
  spool.Ack("runs/a", 0);
  EXPECT_TRUE(spool.AddResult("runs/a", Bytes(16)).ok());
  spool.Release("runs/b");
  EXPECT_TRUE(spool.AddResult("runs/c", Bytes(8)).ok());
}

}  // namespace
}  // namespace collbench
