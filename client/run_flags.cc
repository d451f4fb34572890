// SPDX-License-Identifier: Apache-2.0
#include "client/run_flags.h"

#include "api/run_flags.h"
#include "common/status_macros.h"

namespace collbench {

absl::StatusOr<RunRequest> ParseRunFlags(const std::vector<std::string>& args) {
  RunRequest request;
  // How the CLI waits and prints, parsed in the same pass as the spec.
  const std::vector<RunFlagExtension> cli = {
      {"--wait", false, [&](const std::string&) {
         request.wait = true;
         return absl::OkStatus();
       }},
      {"--watch", false, [&](const std::string&) {
         request.watch = true;
         return absl::OkStatus();
       }},
      {"--output", true, [&](const std::string& v) -> absl::Status {
         ASSIGN_OR_RETURN(request.output, ParseOutputKind(v));
         return absl::OkStatus();
       }},
      {"--request-id", true, [&](const std::string& v) {
         request.request_id = v;
         return absl::OkStatus();
       }},
  };
  ASSIGN_OR_RETURN(request.spec, SpecFromRunFlags(args, cli));
  return request;
}

std::string RunUsage() {
  return R"(usage: collbench run OPERATION [engine flags] [run flags]
engine flags: as collbench-rank (-b/-e/-f or --sizes, -n/-w or --time-budget,
  --backend, --memory, --dtype, --redop, --root, --check, --scenario ...)
run flags:
  --ranks N                 ranks in all (default 2)
  --placement pack|spread   several ranks per worker, or one per worker
  --workers a,b             exactly these workers (--ranks-per-worker N)
  --share-host              let other runs use the hosts this run touches
  --transport auto|shm|tcp|ucx
  --mpi openmpi|mpich
  --env KEY=VALUE           a tuning parameter from docs/tuning-parameters.md (e.g.
                            OMPI_MCA_coll_tuned_allreduce_algorithm=4, NCCL_ALGO=Ring);
                            each value has a grammar; a tuning file is named by its
                            bare name in the workers' --tuning-dir
  --timeout 30m  --label KEY=VALUE  --request-id ID
  --hang-timeout D          end the run when no rank advances for D, naming the ranks
                            behind (default: 3 time budgets, at least 30s)
  --watch                   print each size as it is measured
  --wait                    wait and print the results
  --output table|jsonl|csv
)";
}

}  // namespace collbench
