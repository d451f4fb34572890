// Exec's daemon check: only the installed MPI daemon, verbatim arguments
// of the kinds the MPI launchers pass.
#include "worker/agent/daemon_command.h"

#include <unistd.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;

DaemonPaths Installed() {
  DaemonPaths paths;
  paths.orted = "/usr/lib/openmpi/bin/orted";
  paths.hydra_pmi_proxy = "/usr/lib/mpich/bin/hydra_pmi_proxy";
  return paths;
}

TEST(CheckDaemonArgvTest, OrtedAsMpirunLaunchesIt) {
  const std::vector<std::string> argv = {
      " orted", "-mca", "ess", "env", "-mca", "ess_base_jobid", "1320222720", "-mca",
      "orte_hnp_uri", "1320222720.0;tcp://127.0.0.1:51943", "--mca", "pml", "ob1", "-mca",
      "plm_rsh_agent", "/opt/cb/collbench-worker launch-shim", "-mca",
      "coll_tuned_use_dynamic_rules", "1", "-mca", "coll_tuned_allreduce_algorithm", "3"};
  absl::StatusOr<std::vector<std::string>> checked = CheckDaemonArgv(argv, Installed());
  ASSERT_TRUE(checked.ok()) << checked.status();
  EXPECT_EQ((*checked)[0], "/usr/lib/openmpi/bin/orted");
  EXPECT_EQ(std::vector<std::string>(checked->begin() + 1, checked->end()),
            std::vector<std::string>(argv.begin() + 1, argv.end()));
}

TEST(CheckDaemonArgvTest, TheRequestNamesTheDaemonNeverItsPath) {
  absl::StatusOr<std::vector<std::string>> checked =
      CheckDaemonArgv({"/tmp/evil/hydra_pmi_proxy", "--proxy-id", "1"}, Installed());
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
    absl::StatusOr<std::vector<std::string>> checked = CheckDaemonArgv(argv, Installed());
    EXPECT_EQ(checked.status().code(), absl::StatusCode::kInvalidArgument)
        << (argv.empty() ? "(empty)" : argv.back());
    EXPECT_THAT(checked.status().message(), HasSubstr("Exec argv"));
  }
}

TEST(ResolveDaemonPathsTest, FindsTheDaemonsOfThisInstallation) {
  const DaemonPaths paths = ResolveDaemonPaths("/usr/bin/mpirun.openmpi", "/usr/bin/mpiexec.mpich");
  if (access("/usr/bin/orted", X_OK) == 0) EXPECT_EQ(paths.orted, "/usr/bin/orted");
  if (access("/usr/bin/hydra_pmi_proxy", X_OK) == 0) {
    EXPECT_EQ(paths.hydra_pmi_proxy, "/usr/bin/hydra_pmi_proxy");
  }
}

}  // namespace
}  // namespace collbench
