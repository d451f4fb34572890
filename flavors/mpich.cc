// SPDX-License-Identifier: Apache-2.0
// MPICH 4.0 (Debian bookworm: ch4 over UCX, hydra): mpiexec.mpich,
// hydra_pmi_proxy, algorithm CVARs.
#include "flavors/mpich.h"

#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "flavors/daemon_words.h"

namespace collbench {
namespace {

using G = TuningGrammar;

constexpr char kCvarPrefix[] = "MPIR_CVAR_";

// --- Tuning parameters ------------------------------------------------------

// Control variables (`mpivars`): collective algorithm selection and the
// message-size switch points.
constexpr const char* kAlgorithmOps[] = {
    "ALLGATHER_INTRA", "ALLGATHER_INTER", "ALLGATHERV_INTRA", "ALLGATHERV_INTER",
    "ALLREDUCE_INTRA", "ALLREDUCE_INTER", "ALLTOALL_INTRA", "ALLTOALL_INTER",
    "ALLTOALLV_INTRA", "ALLTOALLV_INTER", "ALLTOALLW_INTRA", "ALLTOALLW_INTER",
    "BARRIER_INTRA", "BARRIER_INTER", "BCAST_INTRA", "BCAST_INTER", "EXSCAN_INTRA",
    "GATHER_INTRA", "GATHER_INTER", "GATHERV_INTRA", "GATHERV_INTER", "REDUCE_INTRA",
    "REDUCE_INTER", "REDUCE_SCATTER_INTRA", "REDUCE_SCATTER_INTER",
    "REDUCE_SCATTER_BLOCK_INTRA", "REDUCE_SCATTER_BLOCK_INTER", "SCAN_INTRA", "SCATTER_INTRA",
    "SCATTER_INTER", "SCATTERV_INTRA", "SCATTERV_INTER", "IALLGATHER_INTRA", "IALLGATHERV_INTRA",
    "IALLREDUCE_INTRA", "IALLTOALL_INTRA", "IALLTOALLV_INTRA", "IALLTOALLW_INTRA",
    "IBARRIER_INTRA", "IBCAST_INTRA", "IEXSCAN_INTRA", "IGATHER_INTRA", "IGATHERV_INTRA",
    "IREDUCE_INTRA", "IREDUCE_SCATTER_INTRA", "IREDUCE_SCATTER_BLOCK_INTRA", "ISCAN_INTRA",
    "ISCATTER_INTRA", "ISCATTERV_INTRA", "ALLREDUCE_POSIX_INTRA", "BARRIER_POSIX_INTRA",
    "BCAST_POSIX_INTRA", "REDUCE_POSIX_INTRA"};
constexpr const char* kSizes[] = {
    "ALLGATHERV_PIPELINE_MSG_SIZE", "ALLGATHER_LONG_MSG_SIZE", "ALLGATHER_SHORT_MSG_SIZE",
    "ALLREDUCE_SHORT_MSG_SIZE", "ALLTOALL_MEDIUM_MSG_SIZE", "ALLTOALL_SHORT_MSG_SIZE",
    "BCAST_LONG_MSG_SIZE", "BCAST_SHORT_MSG_SIZE", "GATHER_INTER_SHORT_MSG_SIZE",
    "GATHER_VSMALL_MSG_SIZE", "REDUCE_SCATTER_COMMUTATIVE_LONG_MSG_SIZE",
    "REDUCE_SHORT_MSG_SIZE", "SCATTER_INTER_SHORT_MSG_SIZE", "MAX_SMP_ALLREDUCE_MSG_SIZE",
    "MAX_SMP_BCAST_MSG_SIZE", "MAX_SMP_REDUCE_MSG_SIZE", "CH4_IPC_XPMEM_P2P_THRESHOLD",
    "CH4_IPC_GPU_P2P_THRESHOLD", "IALLREDUCE_TREE_PIPELINE_CHUNK_SIZE",
    "IBCAST_TREE_PIPELINE_CHUNK_SIZE", "IBCAST_RING_CHUNK_SIZE", "IREDUCE_RING_CHUNK_SIZE",
    "IREDUCE_TREE_PIPELINE_CHUNK_SIZE", "BCAST_INTRANODE_BUFFER_TOTAL_SIZE",
    "REDUCE_INTRANODE_BUFFER_TOTAL_SIZE", "CH4_SHM_POSIX_IQUEUE_CELL_SIZE"};
constexpr TuningParam kMpichOther[] = {
    {"MPIR_CVAR_NOLOCAL", G::kBool},
    {"MPIR_CVAR_ODD_EVEN_CLIQUES", G::kBool},
    {"MPIR_CVAR_ENABLE_SMP_COLLECTIVES", G::kBool},
    {"MPIR_CVAR_DEVICE_COLLECTIVES", G::kIdentifier},
    {"MPIR_CVAR_CH4_NETMOD", G::kIdentifier},
    {"MPIR_CVAR_CH4_SHM", G::kIdentifier},
    {"MPIR_CVAR_CH4_SHM_POSIX_EAGER", G::kIdentifier},
    {"MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_NUM_CELLS", G::kUnsigned},
    {"MPIR_CVAR_CH4_NUM_VCIS", G::kUnsigned},
    {"MPIR_CVAR_CH4_XPMEM_ENABLE", G::kBool},
    {"MPIR_CVAR_POLLS_BEFORE_YIELD", G::kUnsigned},
    {"MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE", G::kSize},
    {"MPIR_CVAR_NEMESIS_SHM_EAGER_MAX_SZ", G::kSize},
    // JSON collective selection (`mpivars` of MPICH 4.0.2 lists these
    // three): data only, a file from the worker's --tuning-dir.
    {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE", G::kTuningFile},
    {"MPIR_CVAR_CH4_COLL_SELECTION_TUNING_JSON_FILE", G::kTuningFile},
    {"MPIR_CVAR_CH4_POSIX_COLL_SELECTION_TUNING_JSON_FILE", G::kTuningFile},
};

// --- Collective algorithms ----------------------------------------------------

// The intra-communicator CVAR values, "auto" left out.
const AlgorithmLists& CvarAlgorithms() {
  static const AlgorithmLists* const lists = new AlgorithmLists{
      {"allreduce", {"nb", "smp", "recursive_doubling", "reduce_scatter_allgather"}},
      {"bcast",
       {"binomial", "nb", "smp", "scatter_recursive_doubling_allgather",
        "scatter_ring_allgather"}},
      {"reduce", {"binomial", "nb", "smp", "reduce_scatter_gather"}},
      {"allgather", {"brucks", "nb", "recursive_doubling", "ring"}},
      {"gather", {"binomial", "nb"}},
      {"alltoall", {"brucks", "nb", "pairwise", "pairwise_sendrecv_replace", "scattered"}},
      {"reduce_scatter",
       {"noncommutative", "recursive_doubling", "pairwise", "recursive_halving", "nb"}},
  };
  return *lists;
}

// --- Daemons ------------------------------------------------------------------

// hydra_pmi_proxy's options as mpiexec.hydra passes them; all but --debug
// take one value word.
const std::set<std::string, std::less<>>& ProxyOptions() {
  static const auto* options = new std::set<std::string, std::less<>>{
      "--control-port", "--rmk",     "--launcher",       "--launcher-exec", "--demux",
      "--iface",        "--pgid",    "--retries",        "--usize",         "--pmi-port",
      "--gpus-per-proc", "--gpu-subdevs-per-proc", "--proxy-id", "--tmpdir", "--topolib"};
  return *options;
}

// UCX's transports, and no shared memory between local ranks when TCP is
// asked for.
void TransportEnv(LaunchTransport transport, EnvMap* env) {
  switch (transport) {
    case LaunchTransport::kShm:
      (*env)["UCX_TLS"] = "self,sm";
      break;
    case LaunchTransport::kTcp:
      (*env)["UCX_TLS"] = "self,tcp";
      (*env)["MPIR_CVAR_NOLOCAL"] = "1";
      break;
    case LaunchTransport::kUcx:
    case LaunchTransport::kAuto:
      break;
  }
}

class MpichFlavor final : public MpiFlavor {
 public:
  MpichFlavor()
      : MpiFlavor({.name = "mpich",
                   .id = 2,  // collbench.v1.MPICH
                   .display_name = "MPICH",
                   .launcher_program = "mpiexec.mpich",
                   .rank_binary = "collbench-rank-mpich",
                   .daemons = {"hydra_pmi_proxy"},
                   .root_env = {},
                   .rank_variables = {"PMI_RANK"},
                   .env_prefixes = {kCvarPrefix, "HYDRA_"}}) {}

  // hydra runs its launcher as one word.
  bool needs_shim_link() const override { return true; }

  std::vector<std::string> LaunchArgv(const LaunchRequest& request,
                                      EnvMap* run_env) const override {
    std::vector<std::string> argv = {request.launcher, "-n", absl::StrCat(request.ranks),
                                     "-hosts", absl::StrJoin(request.hosts, ","),
                                     "-launcher", "ssh", "-launcher-exec", request.shim_link};
    // The proxies on peers call mpiexec back at this host, by default its
    // host name, which need not resolve there; the address this worker
    // advertises to its peers reaches it by definition.
    if (!request.self_host.empty()) argv.insert(argv.end(), {"-localhost", request.self_host});
    TransportEnv(request.transport, run_env);
    // SHM between ranks of different workers that share one IPC (and PID)
    // namespace. Hydra makes each worker a node of its own, and MPICH's
    // shared-memory module joins only the ranks of one node; ranks on
    // different nodes go through its network module, UCX on Debian, so that
    // is where shared memory is put: UCX's shared-memory transports (posix
    // and sysv segments, cma) reach any peer on the same kernel (boot id)
    // and IPC namespace. Validation admits this only within one PID
    // namespace (api/ipc_sharing.h). These settings win over the run's own.
    if (request.shared_ipc && request.transport == LaunchTransport::kShm) {
      (*run_env)["UCX_TLS"] = "self,sm";
    }
    // UCX takes devices by name only (a CIDR is left out), and picks the
    // loopback or any other network otherwise. The run's own
    // UCX_NET_DEVICES wins. The proxies always call back the launcher's
    // advertised host (-localhost), so they need no interface for that.
    if (!request.mpi_interface.empty() && request.mpi_interface.find('/') == std::string::npos &&
        !request.spec_env.contains("UCX_NET_DEVICES")) {
      (*run_env)["UCX_NET_DEVICES"] = request.mpi_interface;
    }
    // On mpiexec's command line (-genv): the run's settings.
    for (const auto& [key, value] : *run_env) argv.insert(argv.end(), {"-genv", key, value});
    argv.push_back(request.rank_binary);
    return argv;
  }

  // Only the proxy's own options, each with one value word;
  // --launcher-exec must be the shim link.
  absl::Status CheckDaemonArgs(const std::vector<std::string>& argv,
                               const DaemonArgChecks& checks) const override {
    for (size_t i = 1; i < argv.size(); ++i) {
      const std::string& word = argv[i];
      if (word == "--debug") continue;
      if (!ProxyOptions().contains(word)) {
        return BadDaemonWord(i, word, "not an option mpiexec passes to hydra_pmi_proxy");
      }
      if (i + 1 >= argv.size()) return BadDaemonWord(i, word, "needs a value");
      const std::string& value = argv[i + 1];
      if (word == "--launcher-exec" && PathBasename(value) != checks.shim_link_name) {
        return BadDaemonWord(i + 1, value, "--launcher-exec must be the launch shim");
      }
      ++i;
    }
    return absl::OkStatus();
  }

  EnvMap SegmentDirEnv(const std::string& dir) const override { return {}; }

  // Over UCX's shared-memory transports (see LaunchArgv).
  bool ShmAcrossWorkers() const override { return true; }

  std::vector<FlavorParam> TuningParams() const override {
    std::vector<FlavorParam> params;
    for (const char* op : kAlgorithmOps) {
      params.push_back({absl::StrCat(kCvarPrefix, op, "_ALGORITHM"), G::kIdentifier});
    }
    for (const char* n : kSizes) params.push_back({absl::StrCat(kCvarPrefix, n), G::kSize});
    for (const TuningParam& p : kMpichOther) params.push_back({p.name, p.grammar});
    return params;
  }

  const std::vector<std::string>& Algorithms(absl::string_view operation) const override {
    return MpichAlgorithms(operation);
  }

  EnvMap AlgorithmEnv(absl::string_view operation, absl::string_view algorithm) const override {
    return {{AlgorithmVariable(operation), std::string(algorithm)}};
  }

  std::string ForcedAlgorithm(absl::string_view operation, const EnvMap& env) const override {
    auto it = env.find(AlgorithmVariable(operation));
    if (it == env.end() || absl::AsciiStrToLower(it->second) == "auto") return "";
    return it->second;
  }

  bool IsAlgorithmVariable(absl::string_view key) const override {
    return absl::StartsWith(key, kCvarPrefix) && absl::EndsWith(key, "_INTRA_ALGORITHM");
  }

  std::string AlgorithmVariable(absl::string_view operation) const override {
    return MpichAlgorithmVariable(operation);
  }

  // MPICH's JSON selection files are written by hand, not from numbers.
  int RulesFileCollectiveId(absl::string_view operation) const override { return -1; }
  int AlgorithmNumber(absl::string_view operation, absl::string_view algorithm) const override {
    return 0;
  }
  EnvMap RulesFileEnv(absl::string_view) const override { return {}; }

  // MPICH 4.0's MPI_Reduce reads MPI_IN_PLACE as a buffer at a root other
  // than rank 0 from 64 KiB on (a segfault at its address, 0xff..ff).
  absl::Status CheckInPlace(absl::string_view operation, int root) const override {
    if (operation != "reduce" || root == 0) return absl::OkStatus();
    return absl::InvalidArgumentError(
        "--in-place reduce with a --root other than 0 is refused on MPICH: its MPI_Reduce "
        "crashes on MPI_IN_PLACE at a non-zero root from 64 KiB (MPICH 4.0); use --root 0 or "
        "collbench-rank (Open MPI)");
  }
};

}  // namespace

std::unique_ptr<MpiFlavor> NewMpichFlavor() { return std::make_unique<MpichFlavor>(); }

const std::vector<std::string>& MpichAlgorithms(absl::string_view operation) {
  return AlgorithmsIn(CvarAlgorithms(), operation);
}

std::string MpichAlgorithmVariable(absl::string_view operation) {
  return absl::StrCat(kCvarPrefix, absl::AsciiStrToUpper(LibraryOperation(operation)),
                      "_INTRA_ALGORITHM");
}

}  // namespace collbench
