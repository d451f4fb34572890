#include "analysis/algorithms.h"

#include <algorithm>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace collbench {
namespace {

using Lists = std::map<std::string, std::vector<std::string>>;

const std::vector<std::string>& Lookup(const Lists& lists, const std::string& operation) {
  static const std::vector<std::string>* const kNone = new std::vector<std::string>();
  auto it = lists.find(operation);
  return it == lists.end() ? *kNone : it->second;
}

// Open MPI 4.1's coll_tuned, numbered from 1.
const Lists& OpenMpiLists() {
  static const Lists* const lists = new Lists{
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

// MPICH 4.0's intra-communicator CVAR values, "auto" left out.
const Lists& MpichLists() {
  static const Lists* const lists = new Lists{
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

// reduce_scatter runs MPI_Reduce_scatter_block.
std::string LibraryOperation(const std::string& operation) {
  return operation == "reduce_scatter" ? "reduce_scatter_block" : operation;
}

constexpr char kOpenMpiPrefix[] = "OMPI_MCA_coll_tuned_";
constexpr char kDynamicRules[] = "OMPI_MCA_coll_tuned_use_dynamic_rules";

bool Truthy(const std::string& value) {
  const std::string v = absl::AsciiStrToLower(value);
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

}  // namespace

const std::vector<std::string>& OpenMpiAlgorithms(const std::string& operation) {
  return Lookup(OpenMpiLists(), operation);
}

int OpenMpiAlgorithmNumber(const std::string& operation, const std::string& algorithm) {
  const std::vector<std::string>& names = OpenMpiAlgorithms(operation);
  auto it = std::find(names.begin(), names.end(), algorithm);
  return it == names.end() ? 0 : static_cast<int>(it - names.begin()) + 1;
}

int OpenMpiCollectiveId(const std::string& operation) {
  static const std::map<std::string, int>* const ids = new std::map<std::string, int>{
      {"allgather", 0}, {"allreduce", 2}, {"alltoall", 3},       {"bcast", 7},
      {"gather", 9},    {"reduce", 11},   {"reduce_scatter", 13},
  };
  auto it = ids->find(operation);
  return it == ids->end() ? -1 : it->second;
}

std::string OpenMpiAlgorithmParameter(const std::string& operation) {
  return absl::StrCat("coll_tuned_", LibraryOperation(operation), "_algorithm");
}

const std::vector<std::string>& MpichAlgorithms(const std::string& operation) {
  return Lookup(MpichLists(), operation);
}

std::string MpichAlgorithmVariable(const std::string& operation) {
  return absl::StrCat("MPIR_CVAR_", absl::AsciiStrToUpper(LibraryOperation(operation)),
                      "_INTRA_ALGORITHM");
}

std::string ForcedAlgorithm(const v1::RunSpec& spec) {
  const std::string& op = spec.operation();
  const auto& env = spec.env();
  if (spec.mpi() == v1::MPICH) {
    auto it = env.find(MpichAlgorithmVariable(op));
    if (it != env.end() && absl::AsciiStrToLower(it->second) != "auto") return it->second;
  } else {
    auto it = env.find(absl::StrCat("OMPI_MCA_", OpenMpiAlgorithmParameter(op)));
    auto dynamic = env.find(kDynamicRules);
    if (it != env.end() && dynamic != env.end() && Truthy(dynamic->second)) {
      int number = 0;
      if (!absl::SimpleAtoi(it->second, &number)) return it->second;  // a name
      const std::vector<std::string>& names = OpenMpiAlgorithms(op);
      if (number >= 1 && number <= static_cast<int>(names.size())) return names[number - 1];
    }
  }
  std::string nccl;
  for (const char* key : {"NCCL_ALGO", "NCCL_PROTO"}) {
    auto it = env.find(key);
    if (it == env.end()) continue;
    absl::StrAppend(&nccl, nccl.empty() ? "" : ",", key, "=", it->second);
  }
  return nccl;
}

bool IsAlgorithmVariable(const std::string& key) {
  if (key == kDynamicRules || key == "NCCL_ALGO" || key == "NCCL_PROTO") return true;
  return (absl::StartsWith(key, kOpenMpiPrefix) && absl::EndsWith(key, "_algorithm")) ||
         (absl::StartsWith(key, "MPIR_CVAR_") && absl::EndsWith(key, "_INTRA_ALGORITHM"));
}

}  // namespace collbench
