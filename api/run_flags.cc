// SPDX-License-Identifier: Apache-2.0
#include "api/run_flags.h"

#include <algorithm>
#include <cmath>
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

struct ServiceFields {
  v1::RunSpec spec;
  bool share_host = false;
};

using Setter = std::function<absl::Status(ServiceFields*, const std::string&)>;

absl::Status Bad(const std::string& flag, absl::string_view value, const std::string& why) {
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

absl::Status WholeNumber(const char* flag, const std::string& v, int* n) {
  if (!absl::SimpleAtoi(v, n) || *n < 1) return Bad(flag, v, "a whole number >= 1");
  return absl::OkStatus();
}

// The service's flags that take a value.
const std::map<std::string, Setter>& ValueFlags() {
  static const auto* flags = new std::map<std::string, Setter>{
      {"--ranks", [](ServiceFields* r, const std::string& v) -> absl::Status {
         int n = 0;
         RETURN_IF_ERROR(WholeNumber("--ranks", v, &n));
         r->spec.set_ranks(n);
         return absl::OkStatus();
       }},
      {"--placement", [](ServiceFields* r, const std::string& v) -> absl::Status {
         ASSIGN_OR_RETURN(const v1::PlacementPolicy policy, PlacementPolicyNamed(v));
         r->spec.mutable_placement()->set_policy(policy);
         return absl::OkStatus();
       }},
      {"--workers", [](ServiceFields* r, const std::string& v) -> absl::Status {
         r->spec.mutable_placement()->set_policy(v1::EXPLICIT);
         for (absl::string_view w : absl::StrSplit(v, ',', absl::SkipEmpty())) {
           r->spec.mutable_placement()->add_workers(std::string(w));
         }
         return absl::OkStatus();
       }},
      {"--ranks-per-worker", [](ServiceFields* r, const std::string& v) -> absl::Status {
         int n = 0;
         RETURN_IF_ERROR(WholeNumber("--ranks-per-worker", v, &n));
         r->spec.mutable_placement()->set_ranks_per_worker(n);
         return absl::OkStatus();
       }},
      {"--transport", [](ServiceFields* r, const std::string& v) -> absl::Status {
         ASSIGN_OR_RETURN(const v1::Transport transport, TransportNamed(v));
         r->spec.set_transport(transport);
         return absl::OkStatus();
       }},
      {"--mpi", [](ServiceFields* r, const std::string& v) -> absl::Status {
         ASSIGN_OR_RETURN(const v1::MpiImplementation mpi, MpiNamed(v));
         r->spec.set_mpi(mpi);
         return absl::OkStatus();
       }},
      {"--env", [](ServiceFields* r, const std::string& v) {
         return KeyValue("--env", v, r->spec.mutable_env());
       }},
      {"--label", [](ServiceFields* r, const std::string& v) {
         return KeyValue("--label", v, r->spec.mutable_labels());
       }},
      {"--timeout", [](ServiceFields* r, const std::string& v) {
         return DurationFlag("--timeout", v, r->spec.mutable_timeout());
       }},
      {"--hang-timeout", [](ServiceFields* r, const std::string& v) {
         return DurationFlag("--hang-timeout", v, r->spec.mutable_hang_timeout());
       }},
  };
  return *flags;
}

// The engine's part, with the service's fields (set by flags) winning.
v1::RunSpec Merge(v1::RunSpec engine, const ServiceFields& service_fields) {
  const v1::RunSpec& service = service_fields.spec;
  v1::RunSpec spec = std::move(engine);
  spec.set_ranks(service.ranks() > 0 ? service.ranks() : 2);
  *spec.mutable_placement() = service.placement();
  spec.mutable_placement()->set_share_host(service_fields.share_host);
  spec.set_transport(service.transport());
  spec.set_mpi(service.mpi());
  *spec.mutable_env() = service.env();
  *spec.mutable_labels() = service.labels();
  if (service.has_timeout()) *spec.mutable_timeout() = service.timeout();
  if (service.has_hang_timeout()) *spec.mutable_hang_timeout() = service.hang_timeout();
  const v1::Placement& p = spec.placement();
  if (p.policy() == v1::EXPLICIT && p.ranks_per_worker() == 0) {
    spec.mutable_placement()->set_ranks_per_worker(
        std::max(1, spec.ranks() / std::max(1, p.workers_size())));
  }
  return spec;
}

}  // namespace

absl::StatusOr<v1::PlacementPolicy> PlacementPolicyNamed(absl::string_view name) {
  if (name == "pack") return v1::PACK;
  if (name == "spread") return v1::SPREAD;
  return Bad("--placement", name, "use pack or spread (or --workers)");
}

absl::StatusOr<v1::Transport> TransportNamed(absl::string_view name) {
  static const auto* kNames = new std::map<std::string, v1::Transport, std::less<>>{
      {"auto", v1::AUTO}, {"shm", v1::SHM}, {"tcp", v1::TCP}, {"ucx", v1::UCX}};
  auto it = kNames->find(name);
  if (it == kNames->end()) return Bad("--transport", name, "use auto, shm, tcp or ucx");
  return it->second;
}

absl::StatusOr<v1::MpiImplementation> MpiNamed(absl::string_view name) {
  const MpiFlavor* flavor = FindFlavor(name);
  if (flavor == nullptr) return Bad("--mpi", name, absl::StrCat("use ", Flavors().NamesText()));
  return static_cast<v1::MpiImplementation>(flavor->id());
}

absl::StatusOr<v1::RunSpec> SpecFromRunFlags(const std::vector<std::string>& args,
                                             const std::vector<RunFlagExtension>& extensions) {
  ServiceFields service;
  std::vector<std::string> engine_args;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i], value;
    bool inline_value = false;
    if (const size_t eq = name.find('='); name.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    const auto extension = std::find_if(extensions.begin(), extensions.end(),
                                        [&](const RunFlagExtension& e) { return e.name == name; });
    const auto service_flag = ValueFlags().find(name);
    const bool takes_value = extension != extensions.end() ? extension->takes_value
                                                           : service_flag != ValueFlags().end();
    if (name == "--share-host") {
      service.share_host = true;
      continue;
    }
    if (extension == extensions.end() && service_flag == ValueFlags().end()) {
      engine_args.push_back(args[i]);  // the engine's parser judges it
      continue;
    }
    if (takes_value && !inline_value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat("flag ", name, " needs a value"));
      }
      value = args[++i];
    }
    RETURN_IF_ERROR(extension != extensions.end() ? extension->set(value)
                                                  : service_flag->second(&service, value));
  }
  ASSIGN_OR_RETURN(v1::RunSpec engine, SpecFromEngineArgs(engine_args));
  return Merge(std::move(engine), service);
}

}  // namespace collbench
