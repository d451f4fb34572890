// The collective algorithms the MPI libraries let a user choose, as
// collbench's operations name them: Open MPI's coll_tuned algorithms (by
// number, as its MCA variables and dynamic rules files take them) and
// MPICH's intra-communicator algorithm CVARs (by name). The lists are those
// of the libraries this project builds against (Open MPI 4.1, MPICH 4.0,
// read from `ompi_info --param coll tuned --level 9` and MPICH's CVAR
// descriptions); `collbench sweep` runs them and the advisor writes them.
#ifndef COLLBENCH_ANALYSIS_ALGORITHMS_H_
#define COLLBENCH_ANALYSIS_ALGORITHMS_H_

#include <string>
#include <vector>

#include "collbench/v1/run.pb.h"

namespace collbench {

// Open MPI's algorithms for `operation`: element i is algorithm number i+1
// (0 is "ignore": the library's fixed decision). Empty when coll_tuned has
// no choice for it.
const std::vector<std::string>& OpenMpiAlgorithms(const std::string& operation);

// The number Open MPI gives `algorithm` for `operation` (from 1), 0 when
// it has no algorithm of that name (0 is also its "ignore": its own choice).
int OpenMpiAlgorithmNumber(const std::string& operation, const std::string& algorithm);

// Open MPI's collective id in a dynamic rules file (its COLLTYPE), -1 when
// the operation has none.
int OpenMpiCollectiveId(const std::string& operation);

// "coll_tuned_allreduce_algorithm" for allreduce; reduce_scatter runs
// MPI_Reduce_scatter_block, so it is coll_tuned_reduce_scatter_block_….
std::string OpenMpiAlgorithmParameter(const std::string& operation);

// MPICH's algorithms for `operation` (without "auto"); empty when none.
const std::vector<std::string>& MpichAlgorithms(const std::string& operation);

// "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM" for allreduce.
std::string MpichAlgorithmVariable(const std::string& operation);

// The algorithm a run's environment forces for its operation, as the
// library names it ("ring", "recursive_doubling", "NCCL_ALGO=Tree"), or ""
// when the library chooses. Open MPI's numbered choice counts only with
// coll_tuned_use_dynamic_rules set, as Open MPI reads it.
std::string ForcedAlgorithm(const v1::RunSpec& spec);

// True for the environment keys ForcedAlgorithm reads (and the Open MPI
// switch that enables them): they name an algorithm, not a setting.
bool IsAlgorithmVariable(const std::string& key);

}  // namespace collbench

#endif  // COLLBENCH_ANALYSIS_ALGORITHMS_H_
