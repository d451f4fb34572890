// SPDX-License-Identifier: Apache-2.0
// REST bodies into a RunSpec (server/api/rest_json) and its validation
// (api/validation), as POST /v1/runs does them: a JSON CreateRunRequest,
// then ValidateRunSpec with the CLI's limits (workers unknown) and with a
// coordinator's (two small workers). A refusal is InvalidArgument whose
// message starts with "request body: " (the JSON parser) or with the field
// path the error body reports; a spec that
// passes gives collbench-rank arguments the engine's parser accepts.
#include "absl/strings/match.h"
#include "google/protobuf/util/field_comparator.h"
#include "google/protobuf/util/message_differencer.h"
#include "api/convert.h"
#include "collbench/v1/coordinator.pb.h"
#include "api/validation.h"
#include "server/api/rest_json.h"
#include "tests/fuzz/fuzz_check.h"
#include "engine_spec/options.h"

namespace collbench {
namespace {

ValidationLimits CoordinatorLimits() {
  ValidationLimits limits;
  limits.max_total_slots = 8;
  limits.worker_count = 2;
  limits.max_worker_slots = 4;
  limits.min_worker_memory_bytes = uint64_t{8} << 30;
  limits.min_gpu_memory_bytes = uint64_t{16} << 30;
  return limits;
}

void CheckValidation(const v1::RunSpec& spec, const ValidationLimits& limits) {
  const absl::Status valid = ValidateRunSpec(spec, limits);
  if (!valid.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(valid), valid.ToString());
    const std::string field = FieldOf(valid.message());
    FUZZ_CHECK(absl::StartsWith(field, "spec"), "no field named: " + valid.ToString());
    FUZZ_CHECK(absl::StrContains(ErrorJson(valid), field), ErrorJson(valid));
    return;
  }
  (void)ResolvedSync(spec);
  const std::vector<std::string> args = EngineArgs(spec);
  const absl::StatusOr<EngineOptions> engine = ParseEngineArgs(args);
  FUZZ_CHECK(engine.ok(), "a valid spec the engine refuses: " + engine.status().ToString() +
                              "\n  spec: " + spec.ShortDebugString());
}

void FuzzOne(absl::string_view body) {
  v1::CreateRunRequest create;
  const absl::Status parsed = ProtoFromJson(body, /*empty_ok=*/false, &create);
  if (!parsed.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(parsed), parsed.ToString());
    // The parser's own errors say "request body: "; an enum value that is
    // no name of its type (in any case) is refused naming its field path.
    FUZZ_CHECK(absl::StartsWith(parsed.message(), "request body: ") ||
                   !FieldOf(parsed.message()).empty(),
               parsed.ToString());
    (void)ErrorJson(parsed);
    return;
  }
  // What the API prints of an accepted body reads back as the same request.
  v1::CreateRunRequest again;
  FUZZ_CHECK(ProtoFromJson(ProtoToJson(create), false, &again).ok(), ProtoToJson(create));
  google::protobuf::util::DefaultFieldComparator comparator;
  comparator.set_treat_nan_as_equal(true);
  google::protobuf::util::MessageDifferencer differencer;
  differencer.set_field_comparator(&comparator);
  FUZZ_CHECK(differencer.Compare(again, create), ProtoToJson(create));
  CheckValidation(create.spec(), ValidationLimits{});
  CheckValidation(create.spec(), CoordinatorLimits());
}

}  // namespace
}  // namespace collbench

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  collbench::FuzzOne(collbench::fuzz::AsText(data, size));
  return 0;
}
