// SPDX-License-Identifier: Apache-2.0
#include "server/store/store_internal.h"

#include <algorithm>
#include <tuple>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/store/store.h"

namespace collbench::store_internal {
namespace {

// Bumped if the token layout changes, so old tokens fail cleanly.
constexpr absl::string_view kTokenVersion = "p1";

absl::Status ValidateName(absl::string_view name, absl::string_view prefix,
                          absl::string_view what) {
  if (!absl::StartsWith(name, prefix) || name.size() == prefix.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " name \"", name, "\" is not of the form ", prefix, "{id}"));
  }
  return absl::OkStatus();
}

absl::Status BadToken(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("page_token: ", why));
}

}  // namespace

absl::Status ValidateRunName(absl::string_view name) {
  return ValidateName(name, "runs/", "run");
}

absl::Status ValidateWorkerName(absl::string_view name) {
  return ValidateName(name, "workers/", "worker");
}

absl::Status ValidateWorkflowName(absl::string_view name) {
  return ValidateName(name, "workflows/", "workflow");
}

absl::Status ValidateBaselineName(absl::string_view name) {
  return ValidateName(name, "baselines/", "baseline");
}

absl::Status ValidateScheduleName(absl::string_view name) {
  return ValidateName(name, "schedules/", "schedule");
}

absl::Status NotFoundNamed(absl::string_view what, absl::string_view name) {
  return absl::NotFoundError(absl::StrCat(what, " ", name, " not found"));
}

absl::Status WorkflowNotFound(absl::string_view name) {
  return absl::NotFoundError(absl::StrCat("workflow ", name, " not found"));
}

void SortWorkflowsNewestFirst(std::vector<v1::Workflow>* workflows) {
  std::sort(workflows->begin(), workflows->end(),
            [](const v1::Workflow& a, const v1::Workflow& b) {
              const int64_t ta = TimestampNs(a.create_time()), tb = TimestampNs(b.create_time());
              return ta != tb ? ta > tb : a.name() > b.name();
            });
}

absl::Status ValidateWorkerSecretHash(absl::string_view name, absl::string_view secret_hash) {
  if (absl::Status valid = ValidateWorkerName(name); !valid.ok()) return valid;
  if (secret_hash.empty()) return absl::InvalidArgumentError("secret_hash: must not be empty");
  return absl::OkStatus();
}

absl::Status RunNotFound(absl::string_view name) {
  return absl::NotFoundError(absl::StrCat("run ", name, " not found"));
}

absl::Status ValidateResultSequence(const v1::SizeResult& result) {
  if (result.sequence() >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "result sequence must not be negative, got ", result.sequence()));
}

int64_t TimestampNs(const google::protobuf::Timestamp& time) {
  return time.seconds() * 1'000'000'000 + time.nanos();
}

int64_t CreateTimeNs(const v1::Run& run) {
  return TimestampNs(run.create_time());
}

bool IsUnfinished(v1::RunState state) {
  return state == v1::QUEUED || state == v1::SCHEDULED || state == v1::RUNNING;
}

bool IsFinished(v1::RunState state) {
  return state == v1::SUCCEEDED || state == v1::FAILED || state == v1::CANCELLED;
}

bool ListedBefore(const RunPosition& a, const RunPosition& b) {
  return std::tie(a.create_time_ns, a.name) >
         std::tie(b.create_time_ns, b.name);
}

absl::StatusOr<int> EffectivePageSize(int page_size) {
  if (page_size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size must not be negative, got ", page_size));
  }
  if (page_size == 0) return Store::kDefaultPageSize;
  return std::min(page_size, Store::kMaxPageSize);
}

std::string EncodePageToken(const RunPosition& last, v1::RunState state) {
  return absl::WebSafeBase64Escape(
      absl::StrCat(kTokenVersion, "|", static_cast<int>(state), "|",
                   last.create_time_ns, "|", last.name));
}

absl::StatusOr<RunPosition> DecodePageToken(absl::string_view token,
                                            v1::RunState state) {
  std::string text;
  if (!absl::WebSafeBase64Unescape(token, &text)) {
    return BadToken("not a token returned by ListRuns");
  }
  std::vector<absl::string_view> parts =
      absl::StrSplit(text, absl::MaxSplits('|', 3));
  int token_state = 0;
  RunPosition position;
  if (parts.size() != 4 || parts[0] != kTokenVersion ||
      !absl::SimpleAtoi(parts[1], &token_state) ||
      !absl::SimpleAtoi(parts[2], &position.create_time_ns) ||
      !ValidateRunName(parts[3]).ok()) {
    return BadToken("not a token returned by ListRuns");
  }
  if (token_state != static_cast<int>(state)) {
    return BadToken("was returned for another state filter");
  }
  position.name = std::string(parts[3]);
  return position;
}

}  // namespace collbench::store_internal
