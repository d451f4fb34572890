// SPDX-License-Identifier: Apache-2.0
#include "client/run_flags.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "api/convert.h"
#include "api/validation.h"
#include "common/status_macros.h"
#include "common/units.h"
#include "flavors/registry.h"

namespace collbench {
namespace {

using Setter = std::function<absl::Status(RunRequest*, const std::string&)>;

absl::Status Bad(const std::string& flag, const std::string& value, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("invalid ", flag, " '", value, "': ", why));
}

// A positive duration flag (--timeout, --hang-timeout) within the
// service's limit, into `d`. Checked before the conversion: a double beyond
// int64 seconds does not convert (found by the run_flags fuzzer).
absl::Status DurationFlag(const char* flag, const std::string& v, google::protobuf::Duration* d) {
  absl::StatusOr<double> s = ParseDurationSeconds(v);
  if (!s.ok()) return Bad(flag, v, std::string(s.status().message()));
  const double max_s = ValidationLimits().max_timeout_s;
  if (*s > max_s) return Bad(flag, v, absl::StrCat("longer than the limit of ", FormatDuration(max_s)));
  const double whole_s = std::floor(*s);
  d->set_seconds(static_cast<int64_t>(whole_s));
  d->set_nanos(static_cast<int32_t>(std::min(999'999'999.0, std::round((*s - whole_s) * 1e9))));
  return absl::OkStatus();
}

absl::Status KeyValue(const std::string& flag, const std::string& value,
                      google::protobuf::Map<std::string, std::string>* into) {
  const size_t eq = value.find('=');
  if (eq == std::string::npos || eq == 0) return Bad(flag, value, "expected KEY=VALUE");
  (*into)[value.substr(0, eq)] = value.substr(eq + 1);
  return absl::OkStatus();
}

// Flags that take a value.
const std::map<std::string, Setter>& ValueFlags() {
  static const auto* flags = new std::map<std::string, Setter>{
      {"--ranks", [](RunRequest* r, const std::string& v) -> absl::Status {
         int n = 0;
         if (!absl::SimpleAtoi(v, &n) || n < 1) return Bad("--ranks", v, "a whole number >= 1");
         r->spec.set_ranks(n);
         return absl::OkStatus();
       }},
      {"--placement", [](RunRequest* r, const std::string& v) -> absl::Status {
         if (v == "pack") r->spec.mutable_placement()->set_policy(v1::PACK);
         else if (v == "spread") r->spec.mutable_placement()->set_policy(v1::SPREAD);
         else return Bad("--placement", v, "use pack or spread (or --workers)");
         return absl::OkStatus();
       }},
      {"--workers", [](RunRequest* r, const std::string& v) -> absl::Status {
         r->spec.mutable_placement()->set_policy(v1::EXPLICIT);
         for (absl::string_view w : absl::StrSplit(v, ',', absl::SkipEmpty())) {
           r->spec.mutable_placement()->add_workers(std::string(w));
         }
         return absl::OkStatus();
       }},
      {"--ranks-per-worker", [](RunRequest* r, const std::string& v) -> absl::Status {
         int n = 0;
         if (!absl::SimpleAtoi(v, &n) || n < 1) return Bad("--ranks-per-worker", v, "a whole number >= 1");
         r->spec.mutable_placement()->set_ranks_per_worker(n);
         return absl::OkStatus();
       }},
      {"--transport", [](RunRequest* r, const std::string& v) -> absl::Status {
         static const std::map<std::string, v1::Transport> kNames = {
             {"auto", v1::AUTO}, {"shm", v1::SHM}, {"tcp", v1::TCP}, {"ucx", v1::UCX}};
         auto it = kNames.find(v);
         if (it == kNames.end()) return Bad("--transport", v, "use auto, shm, tcp or ucx");
         r->spec.set_transport(it->second);
         return absl::OkStatus();
       }},
      {"--mpi", [](RunRequest* r, const std::string& v) -> absl::Status {
         const MpiFlavor* flavor = FindFlavor(v);
         if (flavor == nullptr) return Bad("--mpi", v, absl::StrCat("use ", Flavors().NamesText()));
         r->spec.set_mpi(static_cast<v1::MpiImplementation>(flavor->id()));
         return absl::OkStatus();
       }},
      {"--env", [](RunRequest* r, const std::string& v) {
         return KeyValue("--env", v, r->spec.mutable_env());
       }},
      {"--label", [](RunRequest* r, const std::string& v) {
         return KeyValue("--label", v, r->spec.mutable_labels());
       }},
      {"--timeout", [](RunRequest* r, const std::string& v) {
         return DurationFlag("--timeout", v, r->spec.mutable_timeout());
       }},
      {"--hang-timeout", [](RunRequest* r, const std::string& v) {
         return DurationFlag("--hang-timeout", v, r->spec.mutable_hang_timeout());
       }},
      {"--output", [](RunRequest* r, const std::string& v) -> absl::Status {
         ASSIGN_OR_RETURN(r->output, ParseOutputKind(v));
         return absl::OkStatus();
       }},
      {"--request-id", [](RunRequest* r, const std::string& v) {
         r->request_id = v;
         return absl::OkStatus();
       }},
  };
  return *flags;
}

}  // namespace

absl::StatusOr<RunRequest> ParseRunFlags(const std::vector<std::string>& args) {
  RunRequest request;
  std::vector<std::string> engine_args;
  bool share_host = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i], value;
    bool inline_value = false;
    if (const size_t eq = name.find('='); name.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    if (name == "--wait") request.wait = true;
    else if (name == "--watch") request.watch = true;
    else if (name == "--share-host") share_host = true;
    else if (auto it = ValueFlags().find(name); it != ValueFlags().end()) {
      if (!inline_value) {
        if (i + 1 >= args.size()) {
          return absl::InvalidArgumentError(absl::StrCat("flag ", name, " needs a value"));
        }
        value = args[++i];
      }
      RETURN_IF_ERROR(it->second(&request, value));
    } else {
      engine_args.push_back(args[i]);  // the engine's parser judges it
    }
  }
  ASSIGN_OR_RETURN(v1::RunSpec engine, SpecFromEngineArgs(engine_args));
  // The service fields set above win; the engine part fills the rest.
  v1::RunSpec service = request.spec;
  request.spec = engine;
  request.spec.set_ranks(service.ranks() > 0 ? service.ranks() : 2);
  *request.spec.mutable_placement() = service.placement();
  request.spec.mutable_placement()->set_share_host(share_host);
  request.spec.set_transport(service.transport());
  request.spec.set_mpi(service.mpi());
  *request.spec.mutable_env() = service.env();
  *request.spec.mutable_labels() = service.labels();
  if (service.has_timeout()) *request.spec.mutable_timeout() = service.timeout();
  if (service.has_hang_timeout()) *request.spec.mutable_hang_timeout() = service.hang_timeout();
  const v1::Placement& p = request.spec.placement();
  if (p.policy() == v1::EXPLICIT && p.ranks_per_worker() == 0) {
    request.spec.mutable_placement()->set_ranks_per_worker(
        std::max(1, request.spec.ranks() / std::max(1, p.workers_size())));
  }
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
