#include "api/tuning_env.h"

#include <algorithm>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace collbench {
namespace {

using G = TuningGrammar;

constexpr size_t kMaxValueChars = 256;
constexpr size_t kMaxWordChars = 64;
constexpr size_t kMaxFileNameChars = 128;

// Open MPI 4.1 coll/tuned, as `ompi_info --param coll tuned --level 9`
// lists them (the read-only *_count left out; the rules file is in
// kTuningFiles).
constexpr const char* kOmpiTunedAlgorithms[] = {
    "allgather", "allgatherv", "allreduce", "alltoall", "alltoallv", "barrier", "bcast", "exscan",
    "gather", "reduce", "reduce_scatter", "reduce_scatter_block", "scan", "scatter"};
constexpr const char* kOmpiTunedUnsigned[] = {
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
    "init_tree_fanout", "priority"};
constexpr const char* kOmpiTunedSizes[] = {
    "allgather_algorithm_segmentsize", "allgatherv_algorithm_segmentsize",
    "allreduce_algorithm_segmentsize", "alltoall_algorithm_segmentsize",
    "alltoall_small_msg", "alltoall_intermediate_msg", "alltoall_large_msg",
    "bcast_algorithm_segmentsize", "gather_algorithm_segmentsize",
    "reduce_algorithm_segmentsize", "reduce_scatter_algorithm_segmentsize",
    "reduce_scatter_block_algorithm_segmentsize", "scatter_algorithm_segmentsize",
    "scatter_intermediate_msg", "scatter_large_msg"};
constexpr const char* kOmpiCollComponents[] = {"sm",     "tuned",  "self",  "adapt", "sync",
                                               "libnbc", "basic", "inter", "han"};
// Byte transfer layers and their size knobs (ompi_info --param btl tcp|vader|self).
constexpr const char* kOmpiBtlSizeKnobs[] = {
    "eager_limit", "rndv_eager_limit", "max_send_size", "rdma_pipeline_send_length",
    "rdma_pipeline_frag_size", "min_rdma_pipeline_size"};
constexpr const char* kOmpiBtls[] = {"tcp", "vader", "self"};

constexpr TuningParam kOmpiOther[] = {
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

// MPICH 4.0 control variables (`mpivars`): collective algorithm selection
// and the message-size switch points.
constexpr const char* kMpichAlgorithmOps[] = {
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
constexpr const char* kMpichSizes[] = {
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

// UCX (ucp/uct configuration names).
constexpr TuningParam kUcx[] = {
    {"UCX_TLS", G::kIdentifierList},
    {"UCX_NET_DEVICES", G::kInterfaceList},
    {"UCX_SHM_DEVICES", G::kInterfaceList},
    {"UCX_SELF_DEVICES", G::kInterfaceList},
    {"UCX_RNDV_THRESH", G::kUcxSize},
    {"UCX_ZCOPY_THRESH", G::kUcxSize},
    {"UCX_BCOPY_THRESH", G::kUcxSize},
    {"UCX_RNDV_PIPELINE_SEND_THRESH", G::kUcxSize},
    {"UCX_RNDV_FRAG_SIZE", G::kUcxSize},
    {"UCX_RNDV_SCHEME", G::kIdentifier},
    {"UCX_MAX_EAGER_LANES", G::kUnsigned},
    {"UCX_MAX_RNDV_LANES", G::kUnsigned},
    {"UCX_PROTO_ENABLE", G::kIdentifier},
    {"UCX_SEG_SIZE", G::kUcxSize},
    {"UCX_MAX_SHORT", G::kUcxSize},
    {"UCX_TCP_TX_SEG_SIZE", G::kUcxSize},
    {"UCX_TCP_RX_SEG_SIZE", G::kUcxSize},
};

// NCCL 2.28 (docs: Environment Variables).
constexpr TuningParam kNccl[] = {
    {"NCCL_ALGO", G::kIdentifierList},
    {"NCCL_PROTO", G::kIdentifierList},
    {"NCCL_MIN_NCHANNELS", G::kUnsigned},
    {"NCCL_MAX_NCHANNELS", G::kUnsigned},
    {"NCCL_MIN_CTAS", G::kUnsigned},
    {"NCCL_MAX_CTAS", G::kUnsigned},
    {"NCCL_NTHREADS", G::kUnsigned},
    {"NCCL_BUFFSIZE", G::kUnsigned},
    {"NCCL_P2P_DISABLE", G::kBool},
    {"NCCL_P2P_LEVEL", G::kIdentifier},
    {"NCCL_P2P_NET_CHUNKSIZE", G::kUnsigned},
    {"NCCL_SHM_DISABLE", G::kBool},
    {"NCCL_IB_DISABLE", G::kBool},
    {"NCCL_IB_HCA", G::kInterfaceList},
    {"NCCL_NET_GDR_LEVEL", G::kIdentifier},
    {"NCCL_NET", G::kIdentifier},
    {"NCCL_CROSS_NIC", G::kUnsigned},
    {"NCCL_SOCKET_IFNAME", G::kInterfaceList},
    {"NCCL_SOCKET_NTHREADS", G::kUnsigned},
    {"NCCL_NSOCKS_PERTHREAD", G::kUnsigned},
    {"NCCL_NVLS_ENABLE", G::kBool},
    {"NCCL_COLLNET_ENABLE", G::kBool},
    {"NCCL_CUMEM_ENABLE", G::kBool},
    {"NCCL_LAUNCH_MODE", G::kIdentifier},
    {"NCCL_DEBUG", G::kIdentifier},
    {"NCCL_DEBUG_SUBSYS", G::kIdentifierList},
};

std::vector<TuningParam> BuildTable() {
  std::vector<TuningParam> table;
  // The names are assembled once and kept for the life of the process.
  static std::vector<std::string>* names = new std::vector<std::string>();
  auto add = [&](std::string name, G grammar) {
    names->push_back(std::move(name));
    table.push_back({nullptr, grammar});
  };
  for (const char* op : kOmpiTunedAlgorithms) {
    add(absl::StrCat("OMPI_MCA_coll_tuned_", op, "_algorithm"), G::kIdentifier);
  }
  for (const char* n : kOmpiTunedUnsigned) add(absl::StrCat("OMPI_MCA_coll_tuned_", n), G::kUnsigned);
  for (const char* n : kOmpiTunedSizes) add(absl::StrCat("OMPI_MCA_coll_tuned_", n), G::kSize);
  for (const char* c : kOmpiCollComponents) {
    add(absl::StrCat("OMPI_MCA_coll_", c, "_priority"), G::kUnsigned);
  }
  for (const char* btl : kOmpiBtls) {
    for (const char* knob : kOmpiBtlSizeKnobs) {
      add(absl::StrCat("OMPI_MCA_btl_", btl, "_", knob), G::kSize);
    }
  }
  for (const TuningParam& p : kOmpiOther) add(p.name, p.grammar);
  for (const char* op : kMpichAlgorithmOps) {
    add(absl::StrCat("MPIR_CVAR_", op, "_ALGORITHM"), G::kIdentifier);
  }
  for (const char* n : kMpichSizes) add(absl::StrCat("MPIR_CVAR_", n), G::kSize);
  for (const TuningParam& p : kMpichOther) add(p.name, p.grammar);
  for (const TuningParam& p : kUcx) add(p.name, p.grammar);
  for (const TuningParam& p : kNccl) add(p.name, p.grammar);
  for (size_t i = 0; i < table.size(); ++i) table[i].name = (*names)[i].c_str();
  return table;
}

const std::map<std::string, G, std::less<>>& TableByName() {
  static const auto* by_name = [] {
    auto* map = new std::map<std::string, G, std::less<>>();
    for (const TuningParam& p : TuningParams()) map->emplace(p.name, p.grammar);
    return map;
  }();
  return *by_name;
}

// The words of a key that say it names something to load, run, read or write.
constexpr const char* kRefusedWords[] = {
    "agent",  "agents",  "plugin", "plugins", "path",    "paths",   "dir",     "dirs",
    "directory", "file", "files",  "filename", "lib",    "libs",    "library", "libraries",
    "preload", "conf",   "config", "prefix",  "exec",   "command", "cmd",     "program",
    "script", "tmpdir",  "home",   "module",  "modules", "wrapper", "hook",
    "hooks",  "binary",  "dso",    "so"};

bool IsWordChar(char ch) { return absl::ascii_isalnum(ch) || ch == '_' || ch == '.' || ch == '-'; }

bool IsWord(absl::string_view word) {
  return !word.empty() && word.size() <= kMaxWordChars && absl::ascii_isalnum(word[0]) &&
         std::all_of(word.begin(), word.end(), IsWordChar);
}

bool IsUnsigned(absl::string_view text) {
  return !text.empty() && text.size() <= 19 &&
         std::all_of(text.begin(), text.end(), [](char ch) { return absl::ascii_isdigit(ch); });
}

bool IsSize(absl::string_view text) {
  if (!text.empty() && absl::StrContains("KMGkmg", text.back())) text.remove_suffix(1);
  return IsUnsigned(text);
}

bool IsUcxSize(absl::string_view text) {
  if (text == "inf" || text == "auto") return true;
  if (!text.empty() && (text.back() == 'b' || text.back() == 'B')) text.remove_suffix(1);
  return IsSize(text);
}

bool IsCidr(absl::string_view text) {
  // Exactly one '/': a pair from StrSplit would drop anything after a second.
  if (std::count(text.begin(), text.end(), '/') != 1) return false;
  std::pair<absl::string_view, absl::string_view> parts = absl::StrSplit(text, '/');
  int bits = 0;
  if (!absl::SimpleAtoi(parts.second, &bits) || bits < 0 || bits > 32 ||
      !IsUnsigned(parts.second)) {
    return false;
  }
  std::vector<absl::string_view> octets = absl::StrSplit(parts.first, '.');
  if (octets.size() != 4) return false;
  return std::all_of(octets.begin(), octets.end(), [](absl::string_view octet) {
    int value = 0;
    return octet.size() <= 3 && IsUnsigned(octet) && absl::SimpleAtoi(octet, &value) &&
           value <= 255;
  });
}

// eth0, ib0.8001, mlx5_0:1, =eth0 (NCCL's exact match), or an IPv4 CIDR.
bool IsInterface(absl::string_view text) {
  if (absl::StrContains(text, '/')) return IsCidr(text);
  absl::ConsumePrefix(&text, "=");
  std::pair<absl::string_view, absl::string_view> parts = absl::StrSplit(text, ':');
  return IsWord(parts.first) && (parts.second.empty() || IsUnsigned(parts.second)) &&
         std::count(text.begin(), text.end(), ':') <= 1 && text.back() != ':';
}

template <typename Pred>
bool IsList(absl::string_view text, Pred item) {
  absl::ConsumePrefix(&text, "^");
  if (text.empty()) return false;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    if (!item(part)) return false;
  }
  return true;
}

bool Matches(G grammar, absl::string_view value) {
  switch (grammar) {
    case G::kUnsigned: return IsUnsigned(value);
    case G::kSize: return IsSize(value);
    case G::kUcxSize: return IsUcxSize(value);
    case G::kBool: return value == "0" || value == "1";
    case G::kIdentifier: return IsWord(value);
    case G::kIdentifierList: return IsList(value, IsWord);
    case G::kInterfaceList: return IsList(value, IsInterface);
    case G::kTuningFile: return IsTuningFileName(value);
  }
  return false;
}

}  // namespace

const std::vector<TuningParam>& TuningParams() {
  static const auto* table = new std::vector<TuningParam>(BuildTable());
  return *table;
}

absl::string_view TuningGrammarText(TuningGrammar grammar) {
  switch (grammar) {
    case G::kUnsigned: return "an unsigned integer";
    case G::kSize: return "a size (unsigned integer, optional K/M/G suffix)";
    case G::kUcxSize: return "a size (unsigned integer, optional K/M/G and B suffix) or inf/auto";
    case G::kBool: return "0 or 1";
    case G::kIdentifier: return "an identifier ([A-Za-z0-9][A-Za-z0-9_.-]*)";
    case G::kIdentifierList: return "a comma list of identifiers, optionally ^-prefixed";
    case G::kInterfaceList:
      return "a comma list of interface/device names (name, =name, name:port) or IPv4 CIDRs, "
             "optionally ^-prefixed";
    case G::kTuningFile:
      return "a tuning file's bare name in the worker's --tuning-dir ([A-Za-z0-9_][A-Za-z0-9_.-]*, "
             "no '/')";
  }
  return "";
}

bool IsTuningParam(absl::string_view key) { return TableByName().contains(key); }

bool IsTuningFileParam(absl::string_view key) {
  auto it = TableByName().find(key);
  return it != TableByName().end() && it->second == G::kTuningFile;
}

bool IsTuningFileName(absl::string_view name) {
  return !name.empty() && name.size() <= kMaxFileNameChars && name[0] != '.' &&
         name[0] != '-' && std::all_of(name.begin(), name.end(), IsWordChar);
}

bool NamesProgramOrFile(absl::string_view key) {
  if (IsTuningFileParam(key)) return false;  // confined to the worker's --tuning-dir
  const std::string lower = absl::AsciiStrToLower(key);
  if (absl::StartsWith(lower, "ld_") || absl::StrContains(lower, "param_files")) return true;
  for (absl::string_view word : absl::StrSplit(lower, '_')) {
    for (const char* refused : kRefusedWords) {
      if (word == refused) return true;
    }
  }
  return false;
}

absl::Status CheckTuningParam(absl::string_view key, absl::string_view value) {
  const std::string shown = absl::CHexEscape(key);
  if (NamesProgramOrFile(key)) {
    return absl::InvalidArgumentError(absl::StrCat(
        shown, ": names a program, library, plugin, file or directory; such parameters are "
               "refused (docs/tuning-parameters.md)"));
  }
  auto it = TableByName().find(key);
  if (it == TableByName().end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(shown, ": not a tuning parameter collbench knows (see "
                            "docs/tuning-parameters.md for the list and how to propose one)"));
  }
  if (value.size() > kMaxValueChars || !Matches(it->second, value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        shown, ": value '", absl::CHexEscape(value.substr(0, 64)),
        value.size() > 64 ? "...'" : "'", " is not ", TuningGrammarText(it->second)));
  }
  return absl::OkStatus();
}

}  // namespace collbench
