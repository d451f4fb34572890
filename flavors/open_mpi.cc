// SPDX-License-Identifier: Apache-2.0
// Open MPI 4.1 (Debian bookworm): mpirun.openmpi, orted, coll_tuned.
#include "flavors/open_mpi.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "flavors/daemon_words.h"

namespace collbench {
namespace {

using G = TuningGrammar;

constexpr char kMcaEnvPrefix[] = "OMPI_MCA_";
constexpr char kTunedPrefix[] = "OMPI_MCA_coll_tuned_";
constexpr char kDynamicRules[] = "OMPI_MCA_coll_tuned_use_dynamic_rules";

// --- Tuning parameters ------------------------------------------------------

// coll/tuned, as `ompi_info --param coll tuned --level 9` lists them (the
// read-only *_count left out; the rules file is in kOpenMpiOther).
constexpr const char* kTunedAlgorithms[] = {
    "allgather", "allgatherv", "allreduce", "alltoall", "alltoallv", "barrier", "bcast", "exscan",
    "gather", "reduce", "reduce_scatter", "reduce_scatter_block", "scan", "scatter"};
constexpr const char* kTunedUnsigned[] = {
    "allgather_algorithm_chain_fanout", "allgather_algorithm_tree_fanout",
    "allgatherv_algorithm_chain_fanout", "allgatherv_algorithm_tree_fanout",
    "allreduce_algorithm_chain_fanout", "allreduce_algorithm_tree_fanout",
    "alltoall_algorithm_chain_fanout", "alltoall_algorithm_tree_fanout",
    "alltoall_algorithm_max_requests", "alltoall_min_procs", "bcast_algorithm_chain_fanout",
    "bcast_algorithm_tree_fanout", "bcast_algorithm_knomial_radix",
    "gather_algorithm_chain_fanout", "gather_algorithm_tree_fanout",
    "reduce_algorithm_chain_fanout", "reduce_algorithm_tree_fanout",
    "reduce_algorithm_max_requests", "reduce_scatter_algorithm_chain_fanout",
    "reduce_scatter_algorithm_tree_fanout", "reduce_scatter_block_algorithm_tree_fanout",
    "scatter_algorithm_chain_fanout", "scatter_algorithm_tree_fanout",
    "scatter_algorithm_max_requests", "scatter_min_procs", "init_chain_fanout",
    "init_tree_fanout"};  // coll_tuned_priority: with the other components' in kCollComponents
constexpr const char* kTunedSizes[] = {
    "allgather_algorithm_segmentsize", "allgatherv_algorithm_segmentsize",
    "allreduce_algorithm_segmentsize", "alltoall_algorithm_segmentsize",
    "alltoall_small_msg", "alltoall_intermediate_msg", "alltoall_large_msg",
    "bcast_algorithm_segmentsize", "gather_algorithm_segmentsize",
    "reduce_algorithm_segmentsize", "reduce_scatter_algorithm_segmentsize",
    "reduce_scatter_block_algorithm_segmentsize", "scatter_algorithm_segmentsize",
    "scatter_intermediate_msg", "scatter_large_msg"};
constexpr const char* kCollComponents[] = {"sm",     "tuned",  "self",  "adapt", "sync",
                                           "libnbc", "basic", "inter", "han"};
// Byte transfer layers and their size knobs (ompi_info --param btl tcp|vader|self).
constexpr const char* kBtlSizeKnobs[] = {
    "eager_limit", "rndv_eager_limit", "max_send_size", "rdma_pipeline_send_length",
    "rdma_pipeline_frag_size", "min_rdma_pipeline_size"};
constexpr const char* kBtls[] = {"tcp", "vader", "self"};

constexpr TuningParam kOpenMpiOther[] = {
    {"OMPI_MCA_coll", G::kIdentifierList},
    {"OMPI_MCA_coll_tuned_use_dynamic_rules", G::kBool},
    {"OMPI_MCA_coll_tuned_dynamic_rules_filename", G::kTuningFile},
    {"OMPI_MCA_coll_base_verbose", G::kIdentifier},
    {"OMPI_MCA_coll_han_bcast_segsize", G::kSize},
    {"OMPI_MCA_coll_han_reduce_segsize", G::kSize},
    {"OMPI_MCA_coll_han_allreduce_segsize", G::kSize},
    {"OMPI_MCA_pml", G::kIdentifierList},
    {"OMPI_MCA_btl", G::kIdentifierList},
    {"OMPI_MCA_osc", G::kIdentifierList},
    {"OMPI_MCA_btl_tcp_if_include", G::kInterfaceList},
    {"OMPI_MCA_btl_tcp_if_exclude", G::kInterfaceList},
    {"OMPI_MCA_oob_tcp_if_include", G::kInterfaceList},
    {"OMPI_MCA_oob_tcp_if_exclude", G::kInterfaceList},
    {"OMPI_MCA_btl_tcp_links", G::kUnsigned},
    {"OMPI_MCA_btl_tcp_sndbuf", G::kSize},
    {"OMPI_MCA_btl_tcp_rcvbuf", G::kSize},
    {"OMPI_MCA_btl_tcp_use_nagle", G::kBool},
    {"OMPI_MCA_btl_vader_single_copy_mechanism", G::kIdentifier},
    {"OMPI_MCA_btl_vader_fbox_threshold", G::kUnsigned},
    {"OMPI_MCA_btl_vader_fbox_max", G::kUnsigned},
    {"OMPI_MCA_btl_vader_fbox_size", G::kSize},
    {"OMPI_MCA_btl_vader_segment_size", G::kSize},
    {"OMPI_MCA_btl_vader_max_inline_send", G::kSize},
    {"OMPI_MCA_btl_vader_memcpy_limit", G::kSize},
    {"OMPI_MCA_pml_ucx_tls", G::kIdentifierList},
    {"OMPI_MCA_pml_ucx_devices", G::kInterfaceList},
    {"OMPI_MCA_pml_ucx_priority", G::kUnsigned},
    {"OMPI_MCA_mpi_leave_pinned", G::kBool},
    {"OMPI_MCA_mpi_yield_when_idle", G::kBool},
};

// --- Collective algorithms ----------------------------------------------------

// coll_tuned's algorithms, numbered from 1 (0 is "ignore": the fixed decision).
const AlgorithmLists& TunedAlgorithms() {
  static const AlgorithmLists* const lists = new AlgorithmLists{
      {"allreduce",
       {"basic_linear", "nonoverlapping", "recursive_doubling", "ring", "segmented_ring",
        "rabenseifner"}},
      {"bcast",
       {"basic_linear", "chain", "pipeline", "split_binary_tree", "binary_tree", "binomial",
        "knomial", "scatter_allgather", "scatter_allgather_ring"}},
      {"reduce",
       {"linear", "chain", "pipeline", "binary", "binomial", "in-order_binary", "rabenseifner"}},
      {"allgather",
       {"linear", "bruck", "recursive_doubling", "ring", "neighbor", "two_proc"}},
      {"gather", {"basic_linear", "binomial", "linear_sync"}},
      {"alltoall", {"linear", "pairwise", "modified_bruck", "linear_sync", "two_proc"}},
      {"reduce_scatter",
       {"basic_linear", "recursive_doubling", "recursive_halving", "butterfly"}},
  };
  return *lists;
}

// "OMPI_MCA_coll_tuned_allreduce_algorithm".
std::string AlgorithmParameter(absl::string_view operation) {
  return absl::StrCat(kTunedPrefix, LibraryOperation(operation), "_algorithm");
}

bool Truthy(absl::string_view value) {
  const std::string v = absl::AsciiStrToLower(value);
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

// --- Daemons ------------------------------------------------------------------

// MCA parameters mpirun itself puts on orted's command line, plus the ones
// LaunchArgv sets with --mca. Observed with tests/unit/agent/launch_e2e_test.cc.
const std::set<std::string, std::less<>>& OrtedKeys() {
  static const auto* keys = new std::set<std::string, std::less<>>{
      "ess", "ess_base_jobid", "ess_base_vpid", "ess_base_num_procs", "orte_hnp_uri",
      "orte_parent_uri", "orte_node_regex", "orte_leave_session_attached", "plm",
      "plm_rsh_agent", "plm_rsh_no_tree_spawn", "hwloc_base_binding_policy", "pmix",
      "rtc_hwloc_vmhole", "routed", "pml", "btl", "oob_tcp_if_include", "btl_tcp_if_include",
      "orte_abort_on_non_zero_status", "orte_tag_output", "orte_report_uri"};
  return *keys;
}

// "<path>/<binary> launch-shim": the launcher's own agent.
bool IsShimAgent(absl::string_view value, absl::string_view shim_word) {
  std::vector<absl::string_view> words = absl::StrSplit(value, ' ', absl::SkipEmpty());
  return words.size() == 2 && words[1] == shim_word && !absl::StrContains(words[0], '=');
}

// Choose the byte transfer layers (or UCX) by MCA parameter.
void TransportMca(LaunchTransport transport, std::vector<std::string>* argv) {
  auto mca = [argv](const char* name, const char* value) {
    argv->insert(argv->end(), {"--mca", name, value});
  };
  switch (transport) {
    case LaunchTransport::kShm:
      mca("pml", "ob1");
      mca("btl", "self,vader");
      break;
    case LaunchTransport::kTcp:
      mca("pml", "ob1");
      mca("btl", "self,tcp");
      break;
    case LaunchTransport::kUcx:
      mca("pml", "ucx");
      break;
    case LaunchTransport::kAuto:
      break;
  }
}

class OpenMpiFlavor final : public MpiFlavor {
 public:
  OpenMpiFlavor()
      : MpiFlavor({.name = "openmpi",
                   .id = 1,  // collbench.v1.OPENMPI
                   .display_name = "Open MPI",
                   .launcher_program = "mpirun.openmpi",
                   .rank_binary = "collbench-rank",
                   .daemons = {"orted", "prted"},
                   // mpirun refuses to run as root unless told.
                   .root_env = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"},
                                {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}},
                   .rank_variables = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK"},
                   .env_prefixes = {kMcaEnvPrefix},
                   // mpirun's per-job settings: its URIs, session folders,
                   // job family, working folder and process counts.
                   .launch_env_prefixes = {"OMPI_MCA_orte_", "OMPI_MCA_initial_wdir",
                                           "OMPI_MCA_ess", "OMPI_MCA_pmix",
                                           "OMPI_MCA_shmem_RUNTIME_QUERY_hint"}}) {}

  bool needs_shim_link() const override { return false; }

  std::vector<std::string> LaunchArgv(const LaunchRequest& request,
                                      EnvMap* run_env) const override {
    if (request.as_root) {
      for (const auto& [key, value] : RootEnv()) (*run_env)[key] = value;
    }
    // mpirun starts every daemon itself (no tree spawn), and the daemons
    // stay in the Exec call's process group (leave_session_attached) so
    // ending the call ends them. Several daemons on one machine need the
    // PMIx hash store instead of the shared-memory one.
    (*run_env)["PMIX_MCA_gds"] = "hash";
    // Each daemon would also write its hwloc topology into a shared-memory
    // mapping placed in the largest hole of its address space; with several
    // daemons starting on one machine, about one start in eight crashed
    // there (SIGSEGV in hwloc_shmem_topology_write). Ranks then read the
    // topology themselves, which costs start-up time only.
    // --noprefix: started by its absolute path, mpirun would otherwise put
    // `PATH=<prefix>/bin:$PATH ; export PATH ; ...` in front of orted, a
    // command line only a shell can run (the shim refuses it).
    std::vector<std::string> argv = {
        request.launcher, "--noprefix", "-np", absl::StrCat(request.ranks), "--host",
        absl::StrJoin(request.hosts, ","),
        "--mca", "plm_rsh_agent", request.shim_command,
        "--mca", "plm_rsh_no_tree_spawn", "1", "--mca", "orte_leave_session_attached", "1",
        "--mca", "rtc_hwloc_vmhole", "none", "--bind-to", "none"};
    if (!request.mpi_interface.empty()) {  // daemons call back, and ranks connect, only there
      argv.insert(argv.end(), {"--mca", "oob_tcp_if_include", request.mpi_interface, "--mca",
                               "btl_tcp_if_include", request.mpi_interface});
    }
    TransportMca(request.transport, &argv);
    for (const auto& [key, value] : request.spec_env) argv.insert(argv.end(), {"-x", key});
    argv.push_back(request.rank_binary);
    return argv;
  }

  // Only `-mca KEY VALUE` / `--mca KEY VALUE` triples (and --tree-spawn /
  // --leave-session-attached). KEY is one mpirun itself passes or a tuning
  // parameter whose VALUE matches its grammar; a tuning file must be the
  // resolved path inside this worker's tuning folder; plm_rsh_agent must be
  // the launch shim.
  absl::Status CheckDaemonArgs(const std::vector<std::string>& argv,
                               const DaemonArgChecks& checks) const override {
    for (size_t i = 1; i < argv.size(); ++i) {
      const std::string& word = argv[i];
      if (word == "--tree-spawn" || word == "--leave-session-attached") continue;
      if (word != "-mca" && word != "--mca") {
        return BadDaemonWord(i, word, "not an option mpirun passes to orted (only -mca KEY VALUE)");
      }
      if (i + 2 >= argv.size()) return BadDaemonWord(i, word, "-mca needs a KEY and a VALUE");
      const std::string& key = argv[i + 1];
      const std::string& value = argv[i + 2];
      const std::string env_key = absl::StrCat(kMcaEnvPrefix, key);
      if (key == "plm_rsh_agent") {
        if (!IsShimAgent(value, checks.shim_word)) {
          return BadDaemonWord(i + 2, value, "plm_rsh_agent must be the launch shim");
        }
      } else if (checks.is_tuning_file_param(env_key)) {
        // The launcher resolved the run's bare name in its tuning folder;
        // this worker's ranks read the same path, so it must be in ours.
        if (absl::Status s = checks.check_tuning_file(env_key, value); !s.ok()) {
          return BadDaemonWord(i + 2, value, s.message());
        }
      } else if (checks.is_tuning_param(env_key) || !OrtedKeys().contains(key)) {
        // A tuning parameter (also one mpirun passes, such as btl) holds to
        // its grammar; anything else mpirun does not pass is refused.
        if (absl::Status s = checks.check_tuning_param(env_key, value); !s.ok()) {
          return BadDaemonWord(i + 1, key, absl::StrCat("not an MCA parameter mpirun passes to orted: ",
                                                        s.message()));
        }
      }
      i += 2;
    }
    return absl::OkStatus();
  }

  // Open MPI names a rank's shared-memory segment after the host name, the
  // job and the rank's index on its node; two workers on one machine would
  // share those names, so each worker's ranks get their own folder.
  EnvMap SegmentDirEnv(const std::string& dir) const override {
    if (dir.empty()) return {};
    return {{"OMPI_MCA_btl_vader_backing_directory", dir}};
  }

  // mpirun gives other nodes network addresses only.
  bool ShmAcrossWorkers() const override { return false; }

  std::vector<FlavorParam> TuningParams() const override {
    std::vector<FlavorParam> params;
    for (const char* op : kTunedAlgorithms) {
      params.push_back({absl::StrCat(kTunedPrefix, op, "_algorithm"), G::kIdentifier});
    }
    for (const char* n : kTunedUnsigned) params.push_back({absl::StrCat(kTunedPrefix, n), G::kUnsigned});
    for (const char* n : kTunedSizes) params.push_back({absl::StrCat(kTunedPrefix, n), G::kSize});
    for (const char* c : kCollComponents) {
      params.push_back({absl::StrCat(kMcaEnvPrefix, "coll_", c, "_priority"), G::kUnsigned});
    }
    for (const char* btl : kBtls) {
      for (const char* knob : kBtlSizeKnobs) {
        params.push_back({absl::StrCat(kMcaEnvPrefix, "btl_", btl, "_", knob), G::kSize});
      }
    }
    for (const TuningParam& p : kOpenMpiOther) params.push_back({p.name, p.grammar});
    return params;
  }

  const std::vector<std::string>& Algorithms(absl::string_view operation) const override {
    return OpenMpiAlgorithms(operation);
  }

  // The numbered choice counts only with coll_tuned_use_dynamic_rules set.
  EnvMap AlgorithmEnv(absl::string_view operation, absl::string_view algorithm) const override {
    return {{kDynamicRules, "1"},
            {AlgorithmParameter(operation), absl::StrCat(AlgorithmNumber(operation, algorithm))}};
  }

  std::string ForcedAlgorithm(absl::string_view operation, const EnvMap& env) const override {
    auto it = env.find(AlgorithmParameter(operation));
    auto dynamic = env.find(kDynamicRules);
    if (it == env.end() || dynamic == env.end() || !Truthy(dynamic->second)) return "";
    int number = 0;
    if (!absl::SimpleAtoi(it->second, &number)) return it->second;  // a name
    const std::vector<std::string>& names = Algorithms(operation);
    if (number >= 1 && number <= static_cast<int>(names.size())) return names[number - 1];
    return "";
  }

  bool IsAlgorithmVariable(absl::string_view key) const override {
    return key == kDynamicRules ||
           (absl::StartsWith(key, kTunedPrefix) && absl::EndsWith(key, "_algorithm"));
  }

  // The numbered variable needs the dynamic-rules switch: no by-name variable.
  std::string AlgorithmVariable(absl::string_view operation) const override { return ""; }

  int RulesFileCollectiveId(absl::string_view operation) const override {
    return OpenMpiCollectiveId(operation);
  }

  int AlgorithmNumber(absl::string_view operation, absl::string_view algorithm) const override {
    return OpenMpiAlgorithmNumber(operation, algorithm);
  }

  EnvMap RulesFileEnv(absl::string_view file_name) const override {
    return {{kDynamicRules, "1"},
            {"OMPI_MCA_coll_tuned_dynamic_rules_filename", std::string(file_name)}};
  }

  absl::Status CheckInPlace(absl::string_view, int) const override { return absl::OkStatus(); }
};

}  // namespace

std::unique_ptr<MpiFlavor> NewOpenMpiFlavor() { return std::make_unique<OpenMpiFlavor>(); }

const std::vector<std::string>& OpenMpiAlgorithms(absl::string_view operation) {
  return AlgorithmsIn(TunedAlgorithms(), operation);
}

int OpenMpiAlgorithmNumber(absl::string_view operation, absl::string_view algorithm) {
  const std::vector<std::string>& names = OpenMpiAlgorithms(operation);
  auto it = std::find(names.begin(), names.end(), algorithm);
  return it == names.end() ? 0 : static_cast<int>(it - names.begin()) + 1;
}

int OpenMpiCollectiveId(absl::string_view operation) {
  static const auto* const ids = new std::map<std::string, int, std::less<>>{
      {"allgather", 0}, {"allreduce", 2}, {"alltoall", 3},       {"bcast", 7},
      {"gather", 9},    {"reduce", 11},   {"reduce_scatter", 13},
  };
  auto it = ids->find(operation);
  return it == ids->end() ? -1 : it->second;
}

}  // namespace collbench
