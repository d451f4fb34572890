// SPDX-License-Identifier: Apache-2.0
// Exec's daemon check: only the installed MPI daemon, verbatim arguments
// of the kinds the MPI launchers pass.
#include "worker/agent/daemon_command.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;

DaemonPaths Installed() {
  DaemonPaths paths;
  paths["orted"] = "/usr/lib/openmpi/bin/orted";
  paths["hydra_pmi_proxy"] = "/usr/lib/mpich/bin/hydra_pmi_proxy";
  return paths;
}

// The library whose daemon `argv` names (so a refusal below is for the
// arguments, not for the library).
v1::MpiImplementation MpiOf(const std::vector<std::string>& argv) {
  return !argv.empty() && absl::StrContains(argv[0], "hydra") ? v1::MPICH : v1::OPENMPI;
}

absl::StatusOr<std::vector<std::string>> Check(const std::vector<std::string>& argv,
                                               const std::string& tuning_dir = "") {
  return CheckDaemonArgv(argv, Installed(), MpiOf(argv), tuning_dir);
}

TEST(CheckDaemonArgvTest, OrtedAsMpirunLaunchesIt) {
  const std::vector<std::string> argv = {
      " orted", "-mca", "ess", "env", "-mca", "ess_base_jobid", "1320222720", "-mca",
      "orte_hnp_uri", "1320222720.0;tcp://127.0.0.1:51943", "--mca", "pml", "ob1", "-mca",
      "plm_rsh_agent", "/opt/cb/collbench-worker launch-shim", "-mca",
      "coll_tuned_use_dynamic_rules", "1", "-mca", "coll_tuned_allreduce_algorithm", "3"};
  absl::StatusOr<std::vector<std::string>> checked = Check(argv);
  ASSERT_TRUE(checked.ok()) << checked.status();
  EXPECT_EQ((*checked)[0], "/usr/lib/openmpi/bin/orted");
  EXPECT_EQ(std::vector<std::string>(checked->begin() + 1, checked->end()),
            std::vector<std::string>(argv.begin() + 1, argv.end()));
}

TEST(CheckDaemonArgvTest, TheRequestNamesTheDaemonNeverItsPath) {
  absl::StatusOr<std::vector<std::string>> checked =
      Check({"/tmp/evil/hydra_pmi_proxy", "--proxy-id", "1"});
  ASSERT_TRUE(checked.ok()) << checked.status();
  EXPECT_EQ((*checked)[0], "/usr/lib/mpich/bin/hydra_pmi_proxy");
}

TEST(CheckDaemonArgvTest, RefusesWhatIsNotADaemonsLaunch) {
  const std::vector<std::vector<std::string>> refused = {
      {},
      {"/bin/sh", "-c", "touch /tmp/p"},
      {"sh"},
      {"orted.sh"},
      {"prted"},  // not installed here
      {"orted", "-mca", "orte_fork_agent", "/bin/sh"},
      {"orted", "-mca", "mca_base_param_files", "/tmp/p.conf"},
      {"orted", "-mca", "coll_tuned_dynamic_rules_filename", "/tmp/rules"},
      {"orted", "-mca", "plm_rsh_agent", "/bin/sh -c"},
      {"orted", "-mca", "btl", "tcp;touch"},
      {"orted", "-mca", "ess"},
      {"orted", "--prefix", "/tmp"},
      {"orted", "-mca", "ess", std::string("env\0x", 5)},
      {"hydra_pmi_proxy", "--launcher-exec", "/bin/sh"},
      {"hydra_pmi_proxy", "--exec", "/bin/sh"},
      {"hydra_pmi_proxy", "--proxy-id"},
  };
  for (const std::vector<std::string>& argv : refused) {
    absl::StatusOr<std::vector<std::string>> checked = Check(argv);
    EXPECT_EQ(checked.status().code(), absl::StatusCode::kInvalidArgument)
        << (argv.empty() ? "(empty)" : argv.back());
    EXPECT_THAT(checked.status().message(), HasSubstr("Exec argv"));
  }
}

// A run's token starts only its own library's daemon.
TEST(CheckDaemonArgvTest, ARunStartsOnlyTheDaemonOfItsLibrary) {
  DaemonPaths paths = Installed();
  paths["prted"] = "/usr/lib/openmpi/bin/prted";
  const std::vector<std::string> orted = {"orted", "-mca", "ess", "env"};
  const std::vector<std::string> prted = {"prted", "-mca", "ess", "env"};
  const std::vector<std::string> hydra = {"hydra_pmi_proxy", "--proxy-id", "1"};
  for (v1::MpiImplementation openmpi : {v1::OPENMPI, v1::MPI_IMPLEMENTATION_UNSPECIFIED}) {
    EXPECT_TRUE(CheckDaemonArgv(orted, paths, openmpi, "").ok());
    EXPECT_TRUE(CheckDaemonArgv(prted, paths, openmpi, "").ok());
    absl::StatusOr<std::vector<std::string>> refused = CheckDaemonArgv(hydra, paths, openmpi, "");
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(refused.status().message(), HasSubstr("Open MPI run"));
  }
  EXPECT_TRUE(CheckDaemonArgv(hydra, paths, v1::MPICH, "").ok());
  for (const auto& argv : {orted, prted}) {
    absl::StatusOr<std::vector<std::string>> refused = CheckDaemonArgv(argv, paths, v1::MPICH, "");
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << argv[0];
    EXPECT_THAT(refused.status().message(), HasSubstr("MPICH run"));
  }
}

// The dynamic rules file reaches orted as the path the launcher resolved;
// it must lie in this worker's own --tuning-dir.
TEST(CheckDaemonArgvTest, TuningFileOnlyInsideThisWorkersTuningDir) {
  std::string pattern = absl::StrCat(::testing::TempDir(), "/collbench-daemon-tuning-XXXXXX");
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const std::string root = std::filesystem::canonical(pattern).string();
  const std::string dir = root + "/tune";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/rules.conf") << "1\n";
  std::ofstream(root + "/outside.conf") << "1\n";
  ASSERT_EQ(symlink((root + "/outside.conf").c_str(), (dir + "/escape.conf").c_str()), 0);
  auto argv = [](const std::string& path) {
    return std::vector<std::string>{"orted", "-mca", "coll_tuned_use_dynamic_rules", "1",
                                    "-mca", "coll_tuned_dynamic_rules_filename", path};
  };
  absl::StatusOr<std::vector<std::string>> checked = Check(argv(dir + "/rules.conf"), dir);
  ASSERT_TRUE(checked.ok()) << checked.status();
  EXPECT_EQ(checked->back(), dir + "/rules.conf");
  // Without a tuning folder, or outside it, refused naming the word.
  EXPECT_THAT(Check(argv(dir + "/rules.conf")).status().message(),
              HasSubstr("no tuning folder"));
  for (const std::string& path :
       {root + "/outside.conf", dir + "/../outside.conf", dir + "/escape.conf",
        std::string("/etc/passwd"), std::string("rules.conf"), dir + "/missing.conf"}) {
    absl::StatusOr<std::vector<std::string>> refused = Check(argv(path), dir);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << path;
    EXPECT_THAT(refused.status().message(), HasSubstr("Exec argv[6]")) << path;
    EXPECT_THAT(refused.status().message(),
                HasSubstr("OMPI_MCA_coll_tuned_dynamic_rules_filename")) << path;
  }
  std::filesystem::remove_all(root);
}

TEST(ResolveDaemonPathsTest, FindsTheDaemonsOfThisInstallation) {
  const DaemonPaths paths = ResolveDaemonPaths(
      {{"openmpi", "/usr/bin/mpirun.openmpi"}, {"mpich", "/usr/bin/mpiexec.mpich"}});
  if (access("/usr/bin/orted", X_OK) == 0) EXPECT_EQ(paths.at("orted"), "/usr/bin/orted");
  if (access("/usr/bin/hydra_pmi_proxy", X_OK) == 0) {
    EXPECT_EQ(paths.at("hydra_pmi_proxy"), "/usr/bin/hydra_pmi_proxy");
  }
}

}  // namespace
}  // namespace collbench
