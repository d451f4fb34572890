#include "worker/agent/daemon_command.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "api/tuning_env.h"
#include "worker/agent/tuning_files.h"

namespace collbench {
namespace {

constexpr char kOrted[] = "orted";
constexpr char kPrted[] = "prted";
constexpr char kHydraProxy[] = "hydra_pmi_proxy";
// The name of the link the launcher gives hydra as -launcher-exec
// (launch_shim.h, kShimLinkName) and the word Open MPI's agent ends with.
constexpr char kShimLink[] = "collbench-launch-shim";
constexpr char kShimWord[] = "launch-shim";

// MCA parameters mpirun (Open MPI 4.1) itself puts on orted's command line,
// plus the ones the launcher sets with --mca (launch_command.cc). Observed
// with tests/unit/agent/launch_e2e_test.cc.
const std::set<std::string, std::less<>>& OrtedKeys() {
  static const auto* keys = new std::set<std::string, std::less<>>{
      "ess", "ess_base_jobid", "ess_base_vpid", "ess_base_num_procs", "orte_hnp_uri",
      "orte_parent_uri", "orte_node_regex", "orte_leave_session_attached", "plm",
      "plm_rsh_agent", "plm_rsh_no_tree_spawn", "hwloc_base_binding_policy", "pmix",
      "rtc_hwloc_vmhole", "routed", "pml", "btl", "oob_tcp_if_include", "btl_tcp_if_include",
      "orte_abort_on_non_zero_status", "orte_tag_output", "orte_report_uri"};
  return *keys;
}

// hydra_pmi_proxy's options as mpiexec.hydra (MPICH 4.0) passes them; all
// but --debug take one value word.
const std::set<std::string, std::less<>>& HydraOptions() {
  static const auto* options = new std::set<std::string, std::less<>>{
      "--control-port", "--rmk",     "--launcher",       "--launcher-exec", "--demux",
      "--iface",        "--pgid",    "--retries",        "--usize",         "--pmi-port",
      "--gpus-per-proc", "--gpu-subdevs-per-proc", "--proxy-id", "--tmpdir", "--topolib"};
  return *options;
}

absl::Status BadWord(size_t index, const std::string& word, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("Exec argv[", index, "] '",
                                                 absl::CHexEscape(word.substr(0, 200)), "': ", why));
}

std::string Basename(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == absl::string_view::npos ? path : path.substr(slash + 1));
}

// "<path>/<binary> launch-shim": the launcher's own agent.
bool IsShimAgent(absl::string_view value) {
  std::vector<absl::string_view> words = absl::StrSplit(value, ' ', absl::SkipEmpty());
  return words.size() == 2 && words[1] == kShimWord && !absl::StrContains(words[0], '=');
}

absl::Status CheckOrtedArgs(const std::vector<std::string>& argv, const std::string& tuning_dir) {
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& word = argv[i];
    if (word == "--tree-spawn" || word == "--leave-session-attached") continue;
    if (word != "-mca" && word != "--mca") {
      return BadWord(i, word, "not an option mpirun passes to orted (only -mca KEY VALUE)");
    }
    if (i + 2 >= argv.size()) return BadWord(i, word, "-mca needs a KEY and a VALUE");
    const std::string& key = argv[i + 1];
    const std::string& value = argv[i + 2];
    const std::string env_key = absl::StrCat("OMPI_MCA_", key);
    if (key == "plm_rsh_agent") {
      if (!IsShimAgent(value)) return BadWord(i + 2, value, "plm_rsh_agent must be the launch shim");
    } else if (IsTuningFileParam(env_key)) {
      // The launcher resolved the run's bare name in its tuning folder;
      // this worker's ranks read the same path, so it must be in ours.
      if (absl::Status s = CheckResolvedTuningFile(tuning_dir, env_key, value); !s.ok()) {
        return BadWord(i + 2, value, s.message());
      }
    } else if (IsTuningParam(env_key) || !OrtedKeys().contains(key)) {
      // A tuning parameter (also one mpirun passes, such as btl) holds to
      // its grammar; anything else mpirun does not pass is refused.
      if (absl::Status s = CheckTuningParam(env_key, value); !s.ok()) {
        return BadWord(i + 1, key, absl::StrCat("not an MCA parameter mpirun passes to orted: ",
                                                s.message()));
      }
    }
    i += 2;
  }
  return absl::OkStatus();
}

absl::Status CheckHydraArgs(const std::vector<std::string>& argv) {
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& word = argv[i];
    if (word == "--debug") continue;
    if (!HydraOptions().contains(word)) {
      return BadWord(i, word, "not an option mpiexec passes to hydra_pmi_proxy");
    }
    if (i + 1 >= argv.size()) return BadWord(i, word, "needs a value");
    const std::string& value = argv[i + 1];
    if (word == "--launcher-exec" && Basename(value) != kShimLink) {
      return BadWord(i + 1, value, "--launcher-exec must be the launch shim");
    }
    ++i;
  }
  return absl::OkStatus();
}

std::string Beside(const std::string& program, const char* daemon) {
  if (program.empty() || program.find('/') == std::string::npos) return "";
  const std::string candidate = program.substr(0, program.rfind('/') + 1) + daemon;
  return access(candidate.c_str(), X_OK) == 0 ? candidate : "";
}

std::string OnPath(const char* daemon) {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path != nullptr ? path : "/usr/bin", ':')) {
    if (dir.empty() || dir[0] != '/') continue;  // never relative to the cwd
    const std::string candidate = absl::StrCat(dir, "/", daemon);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string Find(const std::string& launcher, const char* daemon) {
  if (std::string found = Beside(launcher, daemon); !found.empty()) return found;
  char resolved[PATH_MAX];
  if (!launcher.empty() && realpath(launcher.c_str(), resolved) != nullptr) {
    if (std::string found = Beside(resolved, daemon); !found.empty()) return found;
  }
  return OnPath(daemon);
}

}  // namespace

DaemonPaths ResolveDaemonPaths(const std::string& openmpi_mpirun, const std::string& mpich_mpiexec) {
  DaemonPaths paths;
  paths.orted = Find(openmpi_mpirun, kOrted);
  paths.prted = Find(openmpi_mpirun, kPrted);
  paths.hydra_pmi_proxy = Find(mpich_mpiexec, kHydraProxy);
  return paths;
}

absl::StatusOr<std::vector<std::string>> CheckDaemonArgv(const std::vector<std::string>& argv,
                                                         const DaemonPaths& paths,
                                                         v1::MpiImplementation mpi,
                                                         const std::string& tuning_dir) {
  if (argv.empty()) return absl::InvalidArgumentError("Exec argv: empty");
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i].find_first_of(std::string("\0\n\r", 3)) != std::string::npos) {
      return BadWord(i, argv[i], "contains a NUL or a line break");
    }
  }
  const std::string daemon = Basename(absl::StripAsciiWhitespace(argv[0]));
  const std::string* path = nullptr;
  absl::Status args;
  const bool mpich_run = mpi == v1::MPICH;
  if (daemon == kOrted || daemon == kPrted) {
    if (mpich_run) return BadWord(0, argv[0], "an MPICH run starts only hydra_pmi_proxy here");
    path = daemon == kOrted ? &paths.orted : &paths.prted;
    args = CheckOrtedArgs(argv, tuning_dir);
  } else if (daemon == kHydraProxy) {
    if (!mpich_run) return BadWord(0, argv[0], "an Open MPI run starts only orted or prted here");
    path = &paths.hydra_pmi_proxy;
    args = CheckHydraArgs(argv);
  } else {
    return BadWord(0, argv[0],
                   "Exec runs only an MPI daemon (orted, prted or hydra_pmi_proxy)");
  }
  if (path->empty()) return BadWord(0, argv[0], "this MPI daemon is not installed on this worker");
  if (!args.ok()) return args;
  std::vector<std::string> out = argv;
  out[0] = *path;
  return out;
}

}  // namespace collbench
