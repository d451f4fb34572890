// SPDX-License-Identifier: Apache-2.0
#include "client/hunt_command.h"

#include <google/protobuf/util/json_util.h>

#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/run_flags.h"
#include "client/verdict_commands.h"
#include "client/workflow_client.h"
#include "common/flag_parser.h"
#include "common/units.h"

namespace collbench {
namespace {

constexpr char kHuntUsage[] =
    R"(usage: collbench hunt [--pattern pairwise|groups|ring|all|topology] [--workers SELECTOR]
                     [--operation bw|bibw|latency] [--group-operation OP] [--sizes LIST]
                     [--group-size K] [--deals N] [--threshold F] [--z Z] [--retest-peers N]
                     [--time-per-size D] [--mpi M] [--transport T] [--no-quarantine]
                     [--rack-keys K1,K2,...]
                     [--output table|json]
Finds the bad node among the selected workers (default: every connected
worker). pairwise measures point-to-point bandwidth between every pair of
workers on distinct hosts, in rounds of disjoint pairs that run at the same
time; groups runs an all-reduce in groups of K (default 4), regrouped N times
(default 3); ring one all-reduce over all; all does the three. topology
measures point-to-point in O(N) pairs per pass that know the racks: within
each rack, across the racks, then two random matchings; a worker's rack is
the first of --rack-keys among its labels (default
fabric.topograph.run/tier-0, network.topology.nvidia.com/leaf,
network.topology.nvidia.com/block, collbench.io/rack,
topology.kubernetes.io/zone; `collbench-worker --label collbench.io/rack=R`).
Each worker and
pair is judged against the fleet median with robust statistics: slow is below
--threshold (default 0.75) of the median and a robust z-score below -Z
(default 3). Suspects are re-tested with healthy peers and classified:
  CONFIRMED_BAD  slow with every healthy peer: marked SUSPECT, so runs that do
                 not name it avoid it, until `collbench workers clear NAME` or
                 a later hunt that measures it healthy (--no-quarantine: report
                 only)
  RACK_SUSPECT   a rack whose hosts are fine with each other and slow with
                 every other rack: its uplink or switch, not its nodes
  LINK_SUSPECT   slow only with the peers named: a link, not the node
  INCONCLUSIVE   the survey's slowness did not reproduce
Exit 0 with no suspect, 3 when one was found.
)";

absl::StatusOr<double> Number(const std::string& text, const char* flag) {
  double value = 0;
  if (text.empty()) return 0.0;
  if (!absl::SimpleAtod(text, &value)) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": '", text, "' is not a number"));
  }
  return value;
}

std::string Json(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

}  // namespace

int HuntCommand(CoordinatorClient& client, const std::vector<std::string>& args) {
  std::string pattern, rack_keys, workers, operation, group_operation, sizes, threshold, z,
      time_per_size, mpi, transport, output = "table";
  int group_size = 0, deals = 0, retest_peers = 0;
  bool no_quarantine = false;
  FlagParser flags;
  flags.String("pattern", &pattern, "pairwise (default), groups, ring, all or topology");
  flags.String("rack-keys", &rack_keys,
               "topology: the label keys naming a worker's rack, in order");
  flags.String("workers", &workers, "only these workers: names or KEY=VALUE labels, comma-separated");
  flags.String("operation", &operation, "the pairwise and re-test operation: bw (default), bibw, latency");
  flags.String("group-operation", &group_operation, "groups and ring: the collective (default allreduce)");
  flags.String("sizes", &sizes, "message sizes (default 1M); workers are compared at the largest");
  flags.Int("group-size", &group_size, "groups: workers per group (default 4)");
  flags.Int("deals", &deals, "groups: how many times the workers are regrouped (default 3)");
  flags.String("threshold", &threshold, "slow below this fraction of the fleet median (default 0.75)");
  flags.String("z", &z, "and a robust z-score below -Z (default 3)");
  flags.Int("retest-peers", &retest_peers, "healthy peers each suspect is re-tested with (default 3)");
  flags.String("time-per-size", &time_per_size, "each run's time per size (default 2s)");
  flags.String("mpi", &mpi, "the MPI library (default: the coordinator's default)");
  flags.String("transport", &transport, "auto (default), shm, tcp, ucx");
  flags.Bool("no-quarantine", &no_quarantine, "report only: mark no worker SUSPECT, clear none");
  flags.String("output", &output, "table (default) or json");
  if (std::optional<int> done = ParseCommandFlags(flags, args, kHuntUsage)) return *done;
  if (!flags.rest().empty()) {
    return Report(absl::InvalidArgumentError(
        absl::StrCat("hunt: unexpected argument '", flags.rest()[0], "'")));
  }
  if (output != "table" && output != "json") {
    return Report(absl::InvalidArgumentError(
        absl::StrCat("--output: '", output, "' is not table or json")));
  }
  v1::WorkflowSpec spec;
  spec.set_workers(workers);
  v1::HuntSpec* hunt = spec.mutable_hunt();
  hunt->set_pattern(pattern);
  for (absl::string_view key : absl::StrSplit(rack_keys, ',', absl::SkipWhitespace())) {
    hunt->add_rack_keys(std::string(absl::StripAsciiWhitespace(key)));
  }
  hunt->set_pair_operation(operation);
  hunt->set_group_operation(group_operation);
  if (!sizes.empty()) {
    absl::StatusOr<std::vector<uint64_t>> list = ParseByteList(sizes);
    if (!list.ok()) {
      return Report(absl::InvalidArgumentError(absl::StrCat("--sizes: ", list.status().message())));
    }
    for (uint64_t size : *list) hunt->add_sizes_bytes(size);
  }
  hunt->set_group_size(group_size);
  hunt->set_deals(deals);
  hunt->set_retest_peers(retest_peers);
  hunt->set_no_quarantine(no_quarantine);
  absl::StatusOr<double> ratio = Number(threshold, "threshold");
  if (!ratio.ok()) return Report(ratio.status());
  hunt->set_threshold(*ratio);
  absl::StatusOr<double> deviations = Number(z, "z");
  if (!deviations.ok()) return Report(deviations.status());
  hunt->set_z(*deviations);
  if (!time_per_size.empty()) {
    absl::StatusOr<double> seconds = ParseDurationSeconds(time_per_size);
    if (!seconds.ok()) {
      return Report(absl::InvalidArgumentError(
          absl::StrCat("--time-per-size: ", seconds.status().message())));
    }
    const int64_t ns = static_cast<int64_t>(*seconds * 1e9);
    hunt->mutable_time_per_size()->set_seconds(ns / 1'000'000'000);
    hunt->mutable_time_per_size()->set_nanos(static_cast<int32_t>(ns % 1'000'000'000));
  }
  if (!mpi.empty() || !transport.empty()) {
    // The library and transport as `collbench run` reads them.
    std::vector<std::string> run_args = {"bw"};
    if (!mpi.empty()) run_args.insert(run_args.end(), {"--mpi", mpi});
    if (!transport.empty()) run_args.insert(run_args.end(), {"--transport", transport});
    absl::StatusOr<RunRequest> run = ParseRunFlags(run_args);
    if (!run.ok()) return Report(run.status());
    hunt->set_mpi(run->spec.mpi());
    hunt->set_transport(run->spec.transport());
  }
  absl::StatusOr<v1::Workflow> done = RunWorkflow(client, spec);
  if (!done.ok()) return Report(done.status());
  if (done->state() != v1::WORKFLOW_SUCCEEDED) {
    return Report(absl::InternalError(absl::StrCat(done->name(), ": ", done->error())));
  }
  const v1::HuntOutput& result = done->output().hunt();
  if (output == "json") {
    absl::PrintF("%s\n", Json(result));
  } else {
    PrintWorkflowOutput(*done);
    for (const std::string& note : result.notes()) absl::PrintF("note: %s\n", note);
    for (const std::string& cleared : result.cleared()) {
      absl::PrintF("%s: measured healthy, its SUSPECT state cleared\n", cleared);
    }
    absl::PrintF(
        "\n%s\nthe heat map and the per-worker distribution: /ui/workflows/%s on the "
        "coordinator (the tables again: collbench workflows show %s)\n",
        result.suspects().empty()
            ? "ok: no suspect"
            : absl::StrCat("SUSPECTS: ", result.suspects_size(), " (the first: ",
                           result.suspects(0).worker().empty()
                               ? absl::StrCat("rack ", result.suspects(0).rack())
                               : result.suspects(0).worker(),
                           ", ", result.suspects(0).verdict(), ")"),
        WorkflowId(done->name()), WorkflowId(done->name()));
  }
  return result.suspects().empty() ? kExitOk : kExitRegression;
}

}  // namespace collbench
