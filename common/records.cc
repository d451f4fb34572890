// SPDX-License-Identifier: Apache-2.0
#include "common/records.h"

#include <limits>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace collbench {
namespace {

using Json = nlohmann::json;

// nlohmann's get<uint64_t>() and get<int>() convert silently (-1 becomes
// 2^64-1, 2.5 becomes 2, 2^40 wraps in an int), so whole-number fields are
// read through the checked getters below. FieldError never leaves this file:
// ParseJsonLine turns it into a Status like nlohmann's own exceptions.
class FieldError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

uint64_t GetUnsigned(const Json& j, const char* key) {
  const Json& value = j.at(key);
  if (!value.is_number_unsigned()) {
    throw FieldError(absl::StrCat("'", key,
                                  "' must be a non-negative integer, not ",
                                  value.dump()));
  }
  return value.get<uint64_t>();
}

uint64_t GetUnsignedOr(const Json& j, const char* key, uint64_t absent) {
  return j.contains(key) ? GetUnsigned(j, key) : absent;
}

int GetInt(const Json& j, const char* key) {
  const Json& value = j.at(key);
  constexpr int64_t kMin = std::numeric_limits<int>::min();
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  const bool fits =
      value.is_number_unsigned()
          ? value.get<uint64_t>() <= static_cast<uint64_t>(kMax)
          : value.is_number_integer() && value.get<int64_t>() >= kMin &&
                value.get<int64_t>() <= kMax;
  if (!fits) {
    throw FieldError(
        absl::StrCat("'", key, "' must be an integer, not ", value.dump()));
  }
  return value.get<int>();
}

int GetIntOr(const Json& j, const char* key, int absent) {
  return j.contains(key) ? GetInt(j, key) : absent;
}

Json HistogramToJson(const Histogram& h) {
  Json counts = Json::object();
  for (const auto& [index, count] : h.Sparse()) {
    counts[std::to_string(index)] = count;
  }
  return Json{{"sub_buckets", Histogram::kSubBuckets},
              {"counts", counts},
              {"sum_ns", h.sum_ns()},
              {"min_ns", h.min_ns()},
              {"max_ns", h.max_ns()}};
}

absl::StatusOr<Histogram> HistogramFromJson(const Json& j) {
  // Read through GetIntOr: nlohmann's value<int>() casts 1e300 to int, which
  // is undefined behaviour (the records fuzzer found it).
  if (GetIntOr(j, "sub_buckets", 0) != Histogram::kSubBuckets) {
    return absl::InvalidArgumentError(
        absl::StrCat("histogram.sub_buckets must be ", Histogram::kSubBuckets));
  }
  const Json& counts = j.at("counts");
  if (!counts.is_object()) {
    return absl::InvalidArgumentError(
        "histogram.counts must be an object {index: count}");
  }
  std::vector<std::pair<int, uint64_t>> buckets;
  for (const auto& [key, value] : counts.items()) {
    int index = 0;
    if (!absl::SimpleAtoi(key, &index)) {
      return absl::InvalidArgumentError(
          absl::StrCat("histogram.counts key '", key, "' is not an index"));
    }
    if (!value.is_number_unsigned()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "histogram.counts[", key, "] must be a non-negative integer"));
    }
    buckets.emplace_back(index, value.get<uint64_t>());
  }
  auto h = Histogram::FromSparse(buckets);
  if (!h.ok()) return h.status();
  if (j.contains("sum_ns")) {
    h->SetExactStats(GetUnsigned(j, "sum_ns"), GetUnsignedOr(j, "min_ns", 0),
                     GetUnsignedOr(j, "max_ns", 0));
  }
  return h;
}

Json ToJson(const StartRecord& r) {
  return Json{{"kind", "start"},
              {"spec", r.spec},
              {"nranks", r.nranks},
              {"mpi_library", r.mpi_library},
              {"mpi_version", r.mpi_version},
              {"nccl_version", r.nccl_version},
              {"hosts", r.hosts},
              {"environment", r.environment},
              {"fingerprint", r.fingerprint},
              {"collbench_version", r.collbench_version},
              {"sizes_total", r.sizes_total}};
}

Json ToJson(const SizeRecord& r) {
  Json j{{"kind", "size"},       {"operation", r.operation},
         {"bytes", r.bytes},     {"count", r.count},
         {"dtype", r.dtype},     {"iters", r.iters},
         {"avg_s", r.avg_s},     {"min_s", r.min_s},
         {"max_s", r.max_s},     {"p50_s", r.p50_s},
         {"p90_s", r.p90_s},     {"p99_s", r.p99_s},
         {"algbw_Bps", r.algbw_Bps}, {"busbw_Bps", r.busbw_Bps},
         {"wrong", r.wrong},     {"checked", r.checked},
         {"histogram", HistogramToJson(r.histogram)}};
  if (!r.redop.empty()) j["redop"] = r.redop;
  if (r.root >= 0) j["root"] = r.root;
  if (!r.scenario.empty()) j["scenario"] = r.scenario;
  if (!r.sync.empty()) j["sync"] = r.sync;
  if (!r.ranks.empty()) {
    Json ranks = Json::array();
    for (const RankTiming& t : r.ranks) {
      ranks.push_back(Json{{"rank", t.rank},     {"host", t.host},   {"mean_s", t.mean_s},
                           {"p50_s", t.p50_s},   {"p99_s", t.p99_s}, {"straggler", t.straggler}});
    }
    j["ranks"] = std::move(ranks);
    j["slowest_rank"] = r.slowest_rank;
    j["slowest_vs_median"] = r.slowest_vs_median;
  }
  if (r.in_place) j["in_place"] = true;
  return j;
}

RankTiming RankTimingFromJson(const Json& j) {
  RankTiming t;
  t.rank = GetInt(j, "rank");
  t.host = j.value("host", "");
  t.mean_s = j.at("mean_s").get<double>();
  t.p50_s = j.at("p50_s").get<double>();
  t.p99_s = j.at("p99_s").get<double>();
  t.straggler = j.value("straggler", false);
  return t;
}

Json ToJson(const EndRecord& r) {
  Json j{{"kind", "end"},
         {"status", r.status},
         {"sizes", r.sizes},
         {"wrong", r.wrong},
         {"elapsed_s", r.elapsed_s}};
  if (r.avg_busbw_Bps > 0) j["avg_busbw_Bps"] = r.avg_busbw_Bps;
  return j;
}

Json ToJson(const ErrorRecord& r) {
  return Json{{"kind", "error"}, {"message", r.message}};
}

absl::StatusOr<Record> FromJson(const Json& j) {
  const std::string kind = j.at("kind").get<std::string>();
  if (kind == "start") {
    StartRecord r;
    r.spec = j.value("spec", std::map<std::string, std::string>{});
    r.nranks = GetInt(j, "nranks");
    r.mpi_library = j.value("mpi_library", "");
    r.mpi_version = j.value("mpi_version", "");
    r.nccl_version = j.value("nccl_version", "");
    r.hosts = j.value("hosts", std::vector<std::string>{});
    r.environment = j.value("environment", std::map<std::string, std::string>{});
    r.fingerprint = j.value("fingerprint", "");
    r.collbench_version = j.value("collbench_version", "");
    r.sizes_total = GetUnsignedOr(j, "sizes_total", 0);
    return r;
  }
  if (kind == "size") {
    SizeRecord r;
    r.operation = j.value("operation", "");
    r.bytes = GetUnsigned(j, "bytes");
    r.count = GetUnsigned(j, "count");
    r.dtype = j.at("dtype").get<std::string>();
    r.redop = j.value("redop", "");
    r.root = GetIntOr(j, "root", -1);
    r.iters = GetUnsigned(j, "iters");
    r.avg_s = j.at("avg_s").get<double>();
    r.min_s = j.at("min_s").get<double>();
    r.max_s = j.at("max_s").get<double>();
    r.p50_s = j.at("p50_s").get<double>();
    r.p90_s = j.at("p90_s").get<double>();
    r.p99_s = j.at("p99_s").get<double>();
    r.algbw_Bps = j.at("algbw_Bps").get<double>();
    r.busbw_Bps = j.at("busbw_Bps").get<double>();
    r.wrong = GetUnsigned(j, "wrong");
    r.checked = j.value("checked", false);
    auto h = HistogramFromJson(j.at("histogram"));
    if (!h.ok()) return h.status();
    r.histogram = *std::move(h);
    r.scenario = j.value("scenario", std::map<std::string, double>{});
    r.sync = j.value("sync", "");
    if (j.contains("ranks")) {
      const Json& ranks = j.at("ranks");
      if (!ranks.is_array()) return absl::InvalidArgumentError("ranks must be an array");
      for (const Json& t : ranks) r.ranks.push_back(RankTimingFromJson(t));
    }
    r.slowest_rank = GetIntOr(j, "slowest_rank", -1);
    r.slowest_vs_median = j.value("slowest_vs_median", 0.0);
    r.in_place = j.value("in_place", false);
    return r;
  }
  if (kind == "end") {
    EndRecord r;
    r.status = j.at("status").get<std::string>();
    r.sizes = GetUnsignedOr(j, "sizes", 0);
    r.wrong = GetUnsignedOr(j, "wrong", 0);
    r.elapsed_s = j.value("elapsed_s", 0.0);
    r.avg_busbw_Bps = j.value("avg_busbw_Bps", 0.0);
    return r;
  }
  if (kind == "error") {
    return ErrorRecord{j.at("message").get<std::string>()};
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown record kind '", kind, "'"));
}

}  // namespace

std::string ToJsonLine(const Record& record) {
  return std::visit([](const auto& r) { return ToJson(r).dump(); }, record);
}

std::string ToStoredJsonLine(const SizeRecord& record, absl::string_view run, int64_t sequence) {
  Json j = ToJson(record);
  j["run"] = std::string(run);
  j["sequence"] = sequence;
  return j.dump();
}

absl::StatusOr<Record> ParseJsonLine(absl::string_view line) {
  Json j = Json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("record is not a JSON object");
  }
  try {
    return FromJson(j);
  } catch (const Json::exception& e) {
    // nlohmann throws on missing or mistyped fields; keep it inside.
    return absl::InvalidArgumentError(absl::StrCat("bad record: ", e.what()));
  } catch (const FieldError& e) {
    return absl::InvalidArgumentError(absl::StrCat("bad record: ", e.what()));
  }
}

}  // namespace collbench
