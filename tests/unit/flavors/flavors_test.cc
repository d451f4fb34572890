// SPDX-License-Identifier: Apache-2.0
// The MPI flavours (flavors/): registration, identity against the proto's
// MpiImplementation, binaries and daemons, the launch command each writes,
// the daemon arguments each accepts, algorithm parameters and version lines.
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "collbench/v1/run.pb.h"
#include "flavors/mpi_flavor.h"
#include "flavors/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

const MpiFlavor& OpenMpi() { return *FindFlavor("openmpi"); }
const MpiFlavor& Mpich() { return *FindFlavor("mpich"); }

std::string Joined(const std::vector<std::string>& argv) { return absl::StrJoin(argv, " ") + " "; }

TEST(FlavorRegistryTest, BuiltinFlavorsAreRegisteredExplicitlyOpenMpiFirst) {
  FlavorRegistry empty;
  EXPECT_TRUE(empty.List().empty());
  FlavorRegistry registry;
  RegisterBuiltinFlavors(&registry);
  std::vector<std::string> names;
  for (const MpiFlavor* f : registry.List()) names.emplace_back(f->name());
  EXPECT_THAT(names, ElementsAre("openmpi", "mpich"));
  EXPECT_EQ(registry.Default().name(), "openmpi");
  EXPECT_EQ(Flavors().List().size(), 2u);
}

// A flavour's name and id are RunSpec.mpi's: the enum value and its
// lower-case name; unspecified (and unknown) is the default, Open MPI.
TEST(FlavorRegistryTest, NamesAndIdsAreThoseOfTheProtoEnum) {
  for (const MpiFlavor* f : Flavors().List()) {
    ASSERT_TRUE(v1::MpiImplementation_IsValid(f->id())) << f->name();
    EXPECT_EQ(absl::AsciiStrToLower(
                  v1::MpiImplementation_Name(static_cast<v1::MpiImplementation>(f->id()))),
              f->name());
    EXPECT_EQ(&FlavorFor(f->id()), f);
    EXPECT_EQ(FindFlavor(f->name()), f);
  }
  EXPECT_EQ(FlavorFor(v1::MPI_IMPLEMENTATION_UNSPECIFIED).name(), "openmpi");
  EXPECT_EQ(FlavorFor(v1::OPENMPI).name(), "openmpi");
  EXPECT_EQ(FlavorFor(v1::MPICH).name(), "mpich");
  EXPECT_EQ(FlavorFor(99).name(), "openmpi");
  EXPECT_EQ(FindFlavor("intelmpi"), nullptr);
  EXPECT_EQ(FindFlavor("MPICH"), nullptr);  // names are lower case, as --mpi takes them
  EXPECT_EQ(Flavors().NamesText(), "openmpi or mpich");
}

TEST(FlavorRegistryTest, BinariesAndDaemons) {
  EXPECT_EQ(OpenMpi().launcher_program(), "mpirun.openmpi");
  EXPECT_EQ(OpenMpi().rank_binary(), "collbench-rank");
  EXPECT_THAT(OpenMpi().daemons(), ElementsAre("orted", "prted"));
  EXPECT_EQ(Mpich().launcher_program(), "mpiexec.mpich");
  EXPECT_EQ(Mpich().rank_binary(), "collbench-rank-mpich");
  EXPECT_THAT(Mpich().daemons(), ElementsAre("hydra_pmi_proxy"));
  EXPECT_EQ(Flavors().OfDaemon("orted"), &OpenMpi());
  EXPECT_EQ(Flavors().OfDaemon("prted"), &OpenMpi());
  EXPECT_EQ(Flavors().OfDaemon("hydra_pmi_proxy"), &Mpich());
  EXPECT_EQ(Flavors().OfDaemon("sh"), nullptr);
  EXPECT_EQ(Flavors().DaemonsText(), "orted, prted or hydra_pmi_proxy");
  EXPECT_FALSE(OpenMpi().needs_shim_link());
  EXPECT_TRUE(Mpich().needs_shim_link());
}

// MPI_Get_library_version's first line, as the libraries write it.
TEST(FlavorRegistryTest, VersionLinesNameTheirLibrary) {
  EXPECT_EQ(Flavors().OfVersionLine("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4"),
            &OpenMpi());
  EXPECT_EQ(Flavors().OfVersionLine("MPICH Version:\t4.0.2"), &Mpich());
  EXPECT_EQ(Flavors().OfVersionLine("Intel(R) MPI Library 2021.10"), nullptr);
  EXPECT_EQ(OpenMpi().display_name(), "Open MPI");
  EXPECT_EQ(Mpich().display_name(), "MPICH");
}

LaunchRequest Request() {
  LaunchRequest r;
  r.hosts = {"localhost:2", "w1:1"};
  r.ranks = 3;
  r.launcher = "/usr/bin/LAUNCHER";
  r.rank_binary = "/opt/cb/RANK";
  r.shim_command = "/opt/cb/collbench-worker launch-shim";
  r.shim_link = "/run/dir/collbench-launch-shim";
  r.self_host = "10.0.0.1";
  r.spec_env = {{"NCCL_DEBUG", "INFO"}};
  return r;
}

TEST(OpenMpiLaunchTest, MpirunWithTheShimAsAgentEveryDaemonAttachedAndTheRunsVariables) {
  LaunchRequest request = Request();
  request.transport = LaunchTransport::kTcp;
  request.mpi_interface = "10.0.0.0/16";
  EnvMap env = {{"NCCL_DEBUG", "INFO"}};
  const std::vector<std::string> argv = OpenMpi().LaunchArgv(request, &env);
  const std::string line = Joined(argv);
  EXPECT_EQ(argv.front(), "/usr/bin/LAUNCHER");
  EXPECT_EQ(argv.back(), "/opt/cb/RANK");
  EXPECT_THAT(line, HasSubstr(" --noprefix -np 3 --host localhost:2,w1:1 "));
  EXPECT_THAT(line, HasSubstr(" --mca plm_rsh_agent /opt/cb/collbench-worker launch-shim "));
  EXPECT_THAT(line, HasSubstr(" --mca plm_rsh_no_tree_spawn 1 "));
  EXPECT_THAT(line, HasSubstr(" --mca orte_leave_session_attached 1 "));
  EXPECT_THAT(line, HasSubstr(" --mca oob_tcp_if_include 10.0.0.0/16 "));
  EXPECT_THAT(line, HasSubstr(" --mca btl_tcp_if_include 10.0.0.0/16 "));
  EXPECT_THAT(line, HasSubstr(" --mca pml ob1 --mca btl self,tcp "));
  EXPECT_THAT(line, HasSubstr(" -x NCCL_DEBUG /opt/cb/RANK "));
  EXPECT_EQ(env.at("PMIX_MCA_gds"), "hash");
  EXPECT_EQ(env.count("OMPI_ALLOW_RUN_AS_ROOT"), 0u);
  request.as_root = true;
  env.clear();
  OpenMpi().LaunchArgv(request, &env);
  EXPECT_EQ(env.at("OMPI_ALLOW_RUN_AS_ROOT"), "1");
  EXPECT_EQ(env.at("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"), "1");
}

TEST(OpenMpiLaunchTest, TransportsMapToMca) {
  LaunchRequest request = Request();
  EnvMap env;
  request.transport = LaunchTransport::kShm;
  EXPECT_THAT(Joined(OpenMpi().LaunchArgv(request, &env)), HasSubstr("--mca pml ob1 --mca btl self,vader "));
  request.transport = LaunchTransport::kUcx;
  EXPECT_THAT(Joined(OpenMpi().LaunchArgv(request, &env)), HasSubstr("--mca pml ucx "));
  request.transport = LaunchTransport::kAuto;
  EXPECT_THAT(Joined(OpenMpi().LaunchArgv(request, &env)), Not(HasSubstr("pml")));
}

TEST(MpichLaunchTest, MpiexecWithTheShimLinkAndTheRunsSettingsAsGenv) {
  LaunchRequest request = Request();
  request.transport = LaunchTransport::kTcp;
  request.mpi_interface = "eth1";
  EnvMap env = {{"NCCL_DEBUG", "INFO"}};
  const std::vector<std::string> argv = Mpich().LaunchArgv(request, &env);
  const std::string line = Joined(argv);
  EXPECT_EQ(argv.front(), "/usr/bin/LAUNCHER");
  EXPECT_EQ(argv.back(), "/opt/cb/RANK");
  EXPECT_THAT(line, HasSubstr(" -n 3 -hosts localhost:2,w1:1 -launcher ssh -launcher-exec "
                              "/run/dir/collbench-launch-shim -localhost 10.0.0.1 "));
  EXPECT_THAT(line, HasSubstr(" -genv UCX_TLS self,tcp "));
  EXPECT_THAT(line, HasSubstr(" -genv MPIR_CVAR_NOLOCAL 1 "));
  EXPECT_THAT(line, HasSubstr(" -genv NCCL_DEBUG INFO "));
  EXPECT_THAT(line, HasSubstr(" -genv UCX_NET_DEVICES eth1 "));
  EXPECT_EQ(env.at("UCX_TLS"), "self,tcp");
  EXPECT_EQ(env.count("PMIX_MCA_gds"), 0u);
}

TEST(MpichLaunchTest, InterfaceOnlyByNameAndNeverOverTheRunsOwn) {
  LaunchRequest request = Request();
  EnvMap env;
  request.mpi_interface = "10.0.0.0/16";  // UCX takes no CIDR
  EXPECT_THAT(Joined(Mpich().LaunchArgv(request, &env)), Not(HasSubstr("UCX_NET_DEVICES")));
  request.mpi_interface = "eth1";
  request.spec_env["UCX_NET_DEVICES"] = "eth2";
  env = {{"UCX_NET_DEVICES", "eth2"}};
  EXPECT_THAT(Joined(Mpich().LaunchArgv(request, &env)), HasSubstr("-genv UCX_NET_DEVICES eth2 "));
}

// Workers sharing IPC are different nodes to hydra; UCX's shared memory
// joins them, overriding the run's own UCX_TLS.
TEST(MpichLaunchTest, ShmAcrossWorkersSharingIpcGoesThroughUcxSharedMemory) {
  LaunchRequest request = Request();
  request.transport = LaunchTransport::kShm;
  request.shared_ipc = true;
  EnvMap env = {{"UCX_TLS", "tcp"}};
  EXPECT_THAT(Joined(Mpich().LaunchArgv(request, &env)), HasSubstr("-genv UCX_TLS self,sm "));
  EXPECT_TRUE(Mpich().ShmAcrossWorkers());
  EXPECT_FALSE(OpenMpi().ShmAcrossWorkers());
}

// What Exec's check hands a flavour: a fake tuning table with one plain
// parameter and one tuning-file parameter, and a tuning folder /tune.
DaemonArgChecks FakeChecks(std::vector<std::string>* seen_files) {
  DaemonArgChecks c;
  c.is_tuning_param = [](absl::string_view key) { return key == "OMPI_MCA_btl"; };
  c.is_tuning_file_param = [](absl::string_view key) {
    return key == "OMPI_MCA_coll_tuned_dynamic_rules_filename";
  };
  c.check_tuning_param = [](absl::string_view key, absl::string_view value) {
    if (key == "OMPI_MCA_btl" && value.find(';') == absl::string_view::npos) {
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(std::string(key) + ": refused");
  };
  c.check_tuning_file = [seen_files](absl::string_view key, absl::string_view path) {
    seen_files->emplace_back(path);
    return absl::StartsWith(path, "/tune/") ? absl::OkStatus()
                                            : absl::InvalidArgumentError("outside the tuning folder");
  };
  c.shim_word = "launch-shim";
  c.shim_link_name = "collbench-launch-shim";
  return c;
}

TEST(OpenMpiDaemonTest, OnlyMcaTriplesMpirunPassesOrTuningParameters) {
  std::vector<std::string> files;
  const DaemonArgChecks checks = FakeChecks(&files);
  EXPECT_TRUE(OpenMpi().CheckDaemonArgs({"orted", "-mca", "ess", "env", "--mca", "orte_hnp_uri",
                                         "1.0;tcp://10.0.0.1:1", "--leave-session-attached",
                                         "-mca", "plm_rsh_agent", "/x/collbench-worker launch-shim",
                                         "-mca", "btl", "self,tcp"},
                                        checks).ok());
  for (const std::vector<std::string>& argv : std::vector<std::vector<std::string>>{
           {"orted", "--exec", "x"},
           {"orted", "-mca", "orte_fork_agent", "/bin/sh"},
           {"orted", "-mca", "plm_rsh_agent", "/bin/sh -c"},
           {"orted", "-mca", "btl", "tcp;touch"},
           {"orted", "-mca", "ess"}}) {
    absl::Status s = OpenMpi().CheckDaemonArgs(argv, checks);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << Joined(argv);
    EXPECT_THAT(s.message(), HasSubstr("Exec argv[")) << Joined(argv);
  }
  EXPECT_TRUE(OpenMpi().CheckDaemonArgs(
      {"orted", "-mca", "coll_tuned_dynamic_rules_filename", "/tune/rules.conf"}, checks).ok());
  EXPECT_THAT(OpenMpi().CheckDaemonArgs(
                  {"orted", "-mca", "coll_tuned_dynamic_rules_filename", "/etc/passwd"}, checks)
                  .message(),
              HasSubstr("Exec argv[3] '/etc/passwd': outside the tuning folder"));
  EXPECT_THAT(files, ElementsAre("/tune/rules.conf", "/etc/passwd"));
}

TEST(MpichDaemonTest, OnlyTheProxysOwnOptionsAndTheShimLink) {
  std::vector<std::string> files;
  const DaemonArgChecks checks = FakeChecks(&files);
  EXPECT_TRUE(Mpich().CheckDaemonArgs({"hydra_pmi_proxy", "--control-port", "10.0.0.1:4000",
                                       "--debug", "--proxy-id", "1", "--launcher-exec",
                                       "/run/dir/collbench-launch-shim"},
                                      checks).ok());
  for (const std::vector<std::string>& argv : std::vector<std::vector<std::string>>{
           {"hydra_pmi_proxy", "--exec", "/bin/sh"},
           {"hydra_pmi_proxy", "--launcher-exec", "/bin/sh"},
           {"hydra_pmi_proxy", "--proxy-id"}}) {
    EXPECT_EQ(Mpich().CheckDaemonArgs(argv, checks).code(), absl::StatusCode::kInvalidArgument)
        << Joined(argv);
  }
  EXPECT_TRUE(files.empty());
}

// Each flavour reads back the algorithm its own variables force, for every
// algorithm of every operation, and those variables are its algorithm
// variables.
TEST(AlgorithmParametersTest, EveryForcedAlgorithmReadsBack) {
  for (const MpiFlavor* f : Flavors().List()) {
    for (const char* op : {"allreduce", "bcast", "reduce", "allgather", "gather", "alltoall",
                           "reduce_scatter"}) {
      ASSERT_FALSE(f->Algorithms(op).empty()) << f->name() << " " << op;
      EXPECT_EQ(f->ForcedAlgorithm(op, {}), "") << f->name();
      for (const std::string& algorithm : f->Algorithms(op)) {
        const EnvMap env = f->AlgorithmEnv(op, algorithm);
        EXPECT_EQ(f->ForcedAlgorithm(op, env), algorithm) << f->name() << " " << op;
        for (const auto& [key, value] : env) EXPECT_TRUE(f->IsAlgorithmVariable(key)) << key;
      }
    }
    EXPECT_TRUE(f->Algorithms("latency").empty());
  }
}

TEST(AlgorithmParametersTest, OpenMpiNumbersItsAlgorithmsAndNeedsDynamicRules) {
  EXPECT_EQ(OpenMpi().AlgorithmNumber("allreduce", "ring"), 4);
  EXPECT_EQ(OpenMpi().AlgorithmNumber("allreduce", "no-such"), 0);
  EXPECT_EQ(OpenMpi().RulesFileCollectiveId("bcast"), 7);
  EXPECT_EQ(OpenMpi().RulesFileCollectiveId("latency"), -1);
  EXPECT_EQ(OpenMpi().AlgorithmVariable("allreduce"), "");
  const EnvMap env = OpenMpi().AlgorithmEnv("reduce_scatter", "recursive_halving");
  EXPECT_EQ(env.at("OMPI_MCA_coll_tuned_reduce_scatter_block_algorithm"), "3");
  EXPECT_EQ(env.at("OMPI_MCA_coll_tuned_use_dynamic_rules"), "1");
  EXPECT_EQ(OpenMpi().ForcedAlgorithm(
                "allreduce", {{"OMPI_MCA_coll_tuned_allreduce_algorithm", "4"}}),
            "");  // without use_dynamic_rules Open MPI ignores the number
}

TEST(AlgorithmParametersTest, MpichNamesItsAlgorithmsByOneVariable) {
  EXPECT_EQ(Mpich().AlgorithmVariable("reduce_scatter"),
            "MPIR_CVAR_REDUCE_SCATTER_BLOCK_INTRA_ALGORITHM");
  EXPECT_EQ(Mpich().RulesFileCollectiveId("allreduce"), -1);
  EXPECT_EQ(Mpich().AlgorithmNumber("allreduce", "nb"), 0);
  EXPECT_EQ(Mpich().ForcedAlgorithm("bcast", {{"MPIR_CVAR_BCAST_INTRA_ALGORITHM", "AUTO"}}), "");
  EXPECT_FALSE(Mpich().IsAlgorithmVariable("MPIR_CVAR_NOLOCAL"));
}

// Each library's parameters lie in its own namespace and no two flavours
// list the same one.
TEST(TuningParamsTest, EachFlavourListsItsOwnParametersOnce) {
  std::set<std::string> seen;
  for (const MpiFlavor* f : Flavors().List()) {
    ASSERT_FALSE(f->TuningParams().empty()) << f->name();
    for (const FlavorParam& p : f->TuningParams()) {
      EXPECT_TRUE(seen.insert(p.name).second) << p.name;
      bool owned = false;
      for (const std::string& prefix : f->EnvPrefixes()) owned |= absl::StartsWith(p.name, prefix);
      EXPECT_TRUE(owned) << f->name() << " " << p.name;
    }
  }
  EXPECT_TRUE(seen.contains("OMPI_MCA_coll_tuned_allreduce_algorithm"));
  EXPECT_TRUE(seen.contains("MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"));
}

TEST(FlavorEnvironmentTest, SegmentsRootAndRankVariables) {
  EXPECT_EQ(OpenMpi().SegmentDirEnv("/dev/shm/x").at("OMPI_MCA_btl_vader_backing_directory"),
            "/dev/shm/x");
  EXPECT_TRUE(OpenMpi().SegmentDirEnv("").empty());
  EXPECT_TRUE(Mpich().SegmentDirEnv("/dev/shm/x").empty());
  EXPECT_EQ(OpenMpi().RootEnv().size(), 2u);
  EXPECT_TRUE(Mpich().RootEnv().empty());
  EXPECT_THAT(OpenMpi().RankVariables(), ElementsAre("OMPI_COMM_WORLD_RANK", "PMIX_RANK"));
  EXPECT_THAT(Mpich().RankVariables(), ElementsAre("PMI_RANK"));
}

}  // namespace
}  // namespace collbench
