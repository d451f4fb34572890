// SPDX-License-Identifier: Apache-2.0
// A suite's JSON form (analysis/suites/README.md) into a Suite. Every
// mistake is an InvalidArgument naming where it is ("parts[1].tables[0].kind").
#include <nlohmann/json.hpp>

#include <set>

#include "absl/strings/str_cat.h"
#include "analysis/suite.h"
#include "common/status_macros.h"
#include "common/worker_labels.h"

namespace collbench {
namespace {

using nlohmann::json;

class Reader {
 public:
  Reader(const json& node, std::string where) : node_(node), where_(std::move(where)) {}

  absl::Status Object() const {
    if (node_.is_object()) return absl::OkStatus();
    return Error(where_, "must be an object");
  }
  bool Has(const char* key) const { return node_.contains(key); }
  Reader At(const char* key) const { return Reader(node_.at(key), Path(key)); }

  absl::Status String(const char* key, std::string* out, bool required = false) const {
    if (!Has(key)) return required ? Error(Path(key), "is missing") : absl::OkStatus();
    if (!node_.at(key).is_string()) return Error(Path(key), "must be a string");
    *out = node_.at(key).get<std::string>();
    return absl::OkStatus();
  }
  absl::Status Number(const char* key, double* out) const {
    if (!Has(key)) return absl::OkStatus();
    if (!node_.at(key).is_number()) return Error(Path(key), "must be a number");
    *out = node_.at(key).get<double>();
    return absl::OkStatus();
  }
  absl::Status Bool(const char* key, bool* out) const {
    if (!Has(key)) return absl::OkStatus();
    if (!node_.at(key).is_boolean()) return Error(Path(key), "must be true or false");
    *out = node_.at(key).get<bool>();
    return absl::OkStatus();
  }
  absl::Status Strings(const char* key, std::vector<std::string>* out) const {
    if (!Has(key)) return absl::OkStatus();
    const json& list = node_.at(key);
    if (!list.is_array()) return Error(Path(key), "must be a list of strings");
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_string()) return Error(absl::StrCat(Path(key), "[", i, "]"), "must be a string");
      out->push_back(list[i].get<std::string>());
    }
    return absl::OkStatus();
  }
  absl::Status StringMap(const char* key, std::map<std::string, std::string>* out) const {
    if (!Has(key)) return absl::OkStatus();
    const json& map = node_.at(key);
    if (!map.is_object()) return Error(Path(key), "must be an object of strings");
    for (const auto& [k, v] : map.items()) {
      if (!v.is_string()) return Error(absl::StrCat(Path(key), ".", k), "must be a string");
      (*out)[k] = v.get<std::string>();
    }
    return absl::OkStatus();
  }
  // Calls `each` with a Reader for every element of the list at `key`.
  template <typename F>
  absl::Status List(const char* key, F each) const {
    if (!Has(key)) return absl::OkStatus();
    const json& list = node_.at(key);
    if (!list.is_array()) return Error(Path(key), "must be a list");
    for (size_t i = 0; i < list.size(); ++i) {
      Reader item(list[i], absl::StrCat(Path(key), "[", i, "]"));
      if (absl::Status s = item.Object(); !s.ok()) return s;
      if (absl::Status s = each(item); !s.ok()) return s;
    }
    return absl::OkStatus();
  }
  const json& node() const { return node_; }
  const std::string& where() const { return where_; }

  static absl::Status Error(const std::string& where, const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("suite: ", where, " ", what));
  }

 private:
  std::string Path(const char* key) const {
    return where_.empty() ? std::string(key) : absl::StrCat(where_, ".", key);
  }
  const json& node_;
  std::string where_;
};

absl::Status ReadNeeds(const Reader& r, SuiteNeeds* needs) {
  if (!r.Has("needs")) return absl::OkStatus();
  Reader n = r.At("needs");
  RETURN_IF_ERROR(n.Object());
  // A misspelt or retired need would otherwise be dropped, and the cell
  // would run where it should be skipped.
  static const std::set<std::string> kKnown = {"gpus_per_worker", "memory_kind", "numa_nodes",
                                                "worker_labels",   "labelled",    "missing"};
  for (const auto& item : n.node().items()) {
    if (kKnown.count(item.key()) == 0) {
      return Reader::Error(absl::StrCat(n.where(), ".", item.key()),
                           "is not a need (gpus_per_worker, memory_kind, numa_nodes, "
                           "worker_labels, labelled, missing)");
    }
  }
  double gpus = 0, numa = 0;
  RETURN_IF_ERROR(n.Number("gpus_per_worker", &gpus));
  RETURN_IF_ERROR(n.Number("numa_nodes", &numa));
  needs->gpus_per_worker = static_cast<int>(gpus);
  needs->numa_nodes = static_cast<int>(numa);
  RETURN_IF_ERROR(n.String("memory_kind", &needs->memory_kind));
  RETURN_IF_ERROR(n.StringMap("worker_labels", &needs->worker_labels));
  RETURN_IF_ERROR(n.String("labelled", &needs->labelled));
  for (const auto& [key, value] : needs->worker_labels) {
    if (absl::Status valid = ValidateWorkerLabel(key, value); !valid.ok()) {
      return Reader::Error(absl::StrCat(n.where(), ".worker_labels"),
                           std::string(valid.message()));
    }
  }
  RETURN_IF_ERROR(n.String("missing", &needs->missing));
  return absl::OkStatus();
}

absl::Status ReadCheck(const Reader& r, SuiteCheck* check) {
  RETURN_IF_ERROR(r.String("column", &check->column, true));
  RETURN_IF_ERROR(r.String("relation", &check->relation, true));
  if (check->relation != ">" && check->relation != ">=" && check->relation != "<" &&
      check->relation != "<=" && check->relation != "~") {
    return Reader::Error(r.where() + ".relation", "must be one of > >= < <= ~");
  }
  if (!r.Has("value")) return Reader::Error(r.where() + ".value", "is missing");
  RETURN_IF_ERROR(r.Number("value", &check->value));
  RETURN_IF_ERROR(r.Number("tolerance", &check->tolerance));
  RETURN_IF_ERROR(r.StringMap("where", &check->where));
  RETURN_IF_ERROR(r.String("paper", &check->paper, true));
  return absl::OkStatus();
}

absl::Status ReadTable(const Reader& r, SuiteTable* t) {
  RETURN_IF_ERROR(r.String("id", &t->id, true));
  RETURN_IF_ERROR(r.String("title", &t->title, true));
  RETURN_IF_ERROR(r.String("kind", &t->kind));
  if (t->kind != "pivot" && t->kind != "best" && t->kind != "winner") {
    return Reader::Error(r.where() + ".kind", "must be pivot, best or winner");
  }
  RETURN_IF_ERROR(r.Strings("rows", &t->rows));
  RETURN_IF_ERROR(r.String("pivot", &t->pivot, t->kind != "best"));
  RETURN_IF_ERROR(r.String("measure", &t->measure));
  RETURN_IF_ERROR(r.Bool("higher_is_better", &t->higher_is_better));
  double at = 0;
  RETURN_IF_ERROR(r.Number("at_bytes", &at));
  t->at_bytes = static_cast<uint64_t>(at);
  RETURN_IF_ERROR(r.StringMap("where", &t->where));
  RETURN_IF_ERROR(r.List("ratios", [&](const Reader& item) {
    SuiteRatio ratio;
    RETURN_IF_ERROR(item.String("of", &ratio.of, true));
    RETURN_IF_ERROR(item.String("to", &ratio.to, true));
    RETURN_IF_ERROR(item.String("name", &ratio.name));
    if (ratio.name.empty()) ratio.name = absl::StrCat(ratio.of, "/", ratio.to);
    t->ratios.push_back(ratio);
    return absl::OkStatus();
  }));
  RETURN_IF_ERROR(r.List("checks", [&](const Reader& item) {
    SuiteCheck check;
    RETURN_IF_ERROR(ReadCheck(item, &check));
    t->checks.push_back(check);
    return absl::OkStatus();
  }));
  RETURN_IF_ERROR(r.Strings("notes", &t->notes));
  return absl::OkStatus();
}

absl::Status ReadAxis(const Reader& r, SuiteAxis* axis) {
  RETURN_IF_ERROR(r.String("name", &axis->name, true));
  if (!r.Has("values")) return Reader::Error(r.where() + ".values", "is missing");
  RETURN_IF_ERROR(r.List("values", [&](const Reader& item) {
    SuiteAxisValue v;
    RETURN_IF_ERROR(item.String("value", &v.value, true));
    RETURN_IF_ERROR(item.Strings("flags", &v.flags));
    RETURN_IF_ERROR(item.String("operation", &v.operation));
    RETURN_IF_ERROR(item.Strings("profiles", &v.profiles));
    RETURN_IF_ERROR(ReadNeeds(item, &v.needs));
    axis->values.push_back(v);
    return absl::OkStatus();
  }));
  if (axis->values.empty()) return Reader::Error(r.where() + ".values", "is empty");
  return absl::OkStatus();
}

absl::Status ReadPart(const Reader& r, SuitePart* part) {
  RETURN_IF_ERROR(r.String("name", &part->name, true));
  RETURN_IF_ERROR(r.String("operation", &part->operation));
  RETURN_IF_ERROR(r.Strings("flags", &part->flags));
  RETURN_IF_ERROR(r.List("axes", [&](const Reader& item) {
    SuiteAxis axis;
    RETURN_IF_ERROR(ReadAxis(item, &axis));
    part->axes.push_back(axis);
    return absl::OkStatus();
  }));
  if (r.Has("exclude")) {
    const json& list = r.node().at("exclude");
    if (!list.is_array()) return Reader::Error(r.where() + ".exclude", "must be a list");
    for (size_t i = 0; i < list.size(); ++i) {
      Reader item(list[i], absl::StrCat(r.where(), ".exclude[", i, "]"));
      std::map<std::string, std::string> rule;
      RETURN_IF_ERROR(Reader(json{{"rule", list[i]}}, item.where()).StringMap("rule", &rule));
      part->exclude.push_back(rule);
    }
  }
  RETURN_IF_ERROR(r.List("tables", [&](const Reader& item) {
    SuiteTable table;
    RETURN_IF_ERROR(ReadTable(item, &table));
    part->tables.push_back(table);
    return absl::OkStatus();
  }));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Suite> ParseSuite(const std::string& text) {
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return absl::InvalidArgumentError("suite: not valid JSON");
  Reader r(root, "");
  RETURN_IF_ERROR(r.Object());
  Suite suite;
  RETURN_IF_ERROR(r.String("name", &suite.name, true));
  RETURN_IF_ERROR(r.String("seed", &suite.seed));
  RETURN_IF_ERROR(r.String("paper", &suite.paper));
  RETURN_IF_ERROR(r.String("question", &suite.question));
  RETURN_IF_ERROR(r.Strings("notes", &suite.notes));
  if (!r.Has("profiles")) return Reader::Error("profiles", "is missing");
  Reader profiles = r.At("profiles");
  RETURN_IF_ERROR(profiles.Object());
  for (const auto& [name, vars] : root.at("profiles").items()) {
    std::map<std::string, std::string> values;
    RETURN_IF_ERROR(Reader(json{{name, vars}}, "profiles").StringMap(name.c_str(), &values));
    suite.profiles[name] = values;
  }
  RETURN_IF_ERROR(r.List("parts", [&](const Reader& item) {
    SuitePart part;
    RETURN_IF_ERROR(ReadPart(item, &part));
    suite.parts.push_back(part);
    return absl::OkStatus();
  }));
  if (suite.parts.empty()) return Reader::Error("parts", "is missing or empty");
  return suite;
}

}  // namespace collbench
