// SPDX-License-Identifier: Apache-2.0
// The vocabulary of a tuning parameter a run spec may set (spec.env): the
// grammar its value must match. The table itself is api/tuning_env.h; the
// MPI libraries' own parameters come from their flavours (mpi_flavor.h).
#ifndef COLLBENCH_FLAVORS_TUNING_PARAM_H_
#define COLLBENCH_FLAVORS_TUNING_PARAM_H_

#include <string>

namespace collbench {

enum class TuningGrammar {
  kUnsigned,       // decimal digits: 0, 42
  kSize,           // unsigned with an optional K/M/G suffix: 65536, 64K
  kUcxSize,        // kSize with an optional trailing B, or "inf" / "auto"
  kBool,           // 0 or 1
  kIdentifier,     // [A-Za-z0-9][A-Za-z0-9_.-]*: an algorithm name or number
  kIdentifierList, // identifiers separated by ',', optionally all excluded by a leading '^'
  kInterfaceList,  // interface or device names (eth0, mlx5_0:1, NCCL's =eth0) or IPv4
                   // CIDRs, separated by ','; optionally a leading '^'
  kTuningFile,     // a bare file name in the worker's --tuning-dir: [A-Za-z0-9_][A-Za-z0-9_.-]*
};

struct TuningParam {
  const char* name;  // the environment variable, e.g. "NCCL_ALGO"
  TuningGrammar grammar;
};

// A parameter as a flavour lists it (the name assembled at run time).
struct FlavorParam {
  std::string name;
  TuningGrammar grammar;
};

}  // namespace collbench

#endif  // COLLBENCH_FLAVORS_TUNING_PARAM_H_
