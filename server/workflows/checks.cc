// SPDX-License-Identifier: Apache-2.0
#include "server/workflows/checks.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "analysis/baseline.h"
#include "analysis/regression.h"
#include "api/convert.h"

namespace collbench::workflows {
namespace {

void KeyToProto(const ConfigKey& key, google::protobuf::RepeatedPtrField<v1::ConfigField>* out) {
  for (const auto& [name, value] : key) {
    v1::ConfigField* field = out->Add();
    field->set_name(name);
    field->set_value(value);
  }
}

ConfigKey KeyFromProto(const google::protobuf::RepeatedPtrField<v1::ConfigField>& fields) {
  ConfigKey key;
  for (const v1::ConfigField& field : fields) key.emplace_back(field.name(), field.value());
  return key;
}

std::string Percent(double ratio) { return absl::StrFormat("%+.1f%%", (ratio - 1) * 100); }

}  // namespace

absl::StatusOr<std::string> ResourceName(absl::string_view text, absl::string_view collection,
                                         absl::string_view noun, absl::string_view field) {
  absl::string_view id = text;
  absl::ConsumePrefix(&id, absl::StrCat(collection, "/"));
  const bool valid = !id.empty() && id.size() <= 63 && absl::ascii_isalnum(id[0]) &&
                     std::all_of(id.begin(), id.end(), [](char c) {
                       return absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '-' ||
                              c == '.';
                     });
  if (!valid) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": '", text, "' is not a ", noun,
        " name (1-63 of a-z, 0-9, '-' and '.', starting with a letter or digit)"));
  }
  return absl::StrCat(collection, "/", id);
}

absl::StatusOr<std::string> BaselineName(absl::string_view text, absl::string_view field) {
  return ResourceName(text, "baselines", "baseline", field);
}

absl::StatusOr<v1::Baseline> MakeBaseline(const std::string& name,
                                          const std::vector<RunWithResults>& runs) {
  absl::StatusOr<std::vector<BaselineEntry>> entries = BaselineFrom(runs);
  if (!entries.ok()) return entries.status();
  v1::Baseline baseline;
  baseline.set_name(name);
  for (const RunWithResults& run : runs) baseline.add_runs(run.run.name());
  for (const BaselineEntry& entry : *entries) {
    v1::BaselineEntry* out = baseline.add_entries();
    KeyToProto(entry.key, out->mutable_key());
    out->set_key_text(KeyText(entry.key));
    *out->mutable_histogram() = HistogramToProto(entry.histogram);
    out->set_results(entry.results);
    out->set_run(entry.run.name());
    *out->mutable_environment() = entry.run;
  }
  baseline.set_entries_total(baseline.entries_size());
  return baseline;
}

absl::Status ValidateCheckOptions(double threshold, double alpha) {
  if (threshold < 0 || threshold >= 10) {
    return absl::InvalidArgumentError(
        absl::StrCat("threshold: ", threshold, " is not a fraction in [0, 10) (0.05 is 5%)"));
  }
  if (alpha < 0 || alpha >= 1) {
    return absl::InvalidArgumentError(absl::StrCat("alpha: ", alpha, " is not in (0, 1)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::CheckOutput> CheckAgainst(const v1::Baseline& baseline,
                                             const std::vector<RunWithResults>& runs,
                                             double threshold, double alpha) {
  if (absl::Status valid = ValidateCheckOptions(threshold, alpha); !valid.ok()) return valid;
  CompareOptions options;
  if (threshold != 0) options.threshold = threshold;
  if (alpha != 0) options.alpha = alpha;
  std::vector<BaselineEntry> entries;
  for (const v1::BaselineEntry& entry : baseline.entries()) {
    absl::StatusOr<Histogram> histogram = HistogramFromProto(entry.histogram());
    if (!histogram.ok()) {
      return absl::DataLossError(absl::StrCat(baseline.name(), ": entry '", entry.key_text(),
                                              "': ", histogram.status().message()));
    }
    entries.push_back({KeyFromProto(entry.key()), *std::move(histogram), entry.environment(),
                       entry.results()});
  }
  const CheckResult result = Check(entries, runs, options);
  v1::CheckOutput out;
  out.set_baseline(baseline.name());
  out.set_threshold(options.threshold);
  out.set_alpha(options.alpha);
  std::map<std::string, int> regressed_environment;  // line -> regressed rows naming it
  for (const CheckRow& row : result.rows) {
    v1::CheckRow* r = out.add_rows();
    KeyToProto(row.key, r->mutable_key());
    r->set_key_text(KeyText(row.key));
    r->set_baseline_median_s(row.comparison.baseline_median_ns * 1e-9);
    r->set_candidate_median_s(row.comparison.candidate_median_ns * 1e-9);
    r->set_ratio(row.comparison.ratio);
    r->set_ratio_low(row.comparison.ratio_low);
    r->set_ratio_high(row.comparison.ratio_high);
    r->set_p_value(row.comparison.p_value);
    r->set_verdict(row.comparison.verdict);
    r->set_baseline_run(row.baseline_run);
    r->set_candidate_run(row.candidate_run);
    for (const std::string& line : row.environment) r->add_environment(line);
    if (row.comparison.verdict == "regression") {
      out.set_regressions(out.regressions() + 1);
      for (const std::string& line : row.environment) ++regressed_environment[line];
    }
  }
  if (out.rows_size() == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "nothing to compare: none of the runs' configurations is in ", baseline.name(), " (",
        result.only_candidate.size(), " measured now, ", result.only_baseline.size(),
        " in the baseline; a failed run or one without results counts none)"));
  }
  out.set_regressed(out.regressions() > 0);
  for (const auto& [line, rows] : regressed_environment) {
    if (rows == out.regressions()) out.add_environment(line);
  }
  // A one-sided configuration names a run where one is known.
  std::map<std::string, std::string> baseline_runs;
  for (const v1::BaselineEntry& entry : baseline.entries()) baseline_runs[entry.key_text()] = entry.run();
  for (const ConfigKey& key : result.only_baseline) {
    v1::CheckUnmatched* unmatched = out.add_only_baseline();
    KeyToProto(key, unmatched->mutable_key());
    unmatched->set_key_text(KeyText(key));
    unmatched->set_run(baseline_runs[unmatched->key_text()]);
  }
  for (const ConfigKey& key : result.only_candidate) {
    v1::CheckUnmatched* unmatched = out.add_only_candidate();
    KeyToProto(key, unmatched->mutable_key());
    unmatched->set_key_text(KeyText(key));
  }
  return out;
}

v1::OutputTable CheckTable(const v1::CheckOutput& check) {
  v1::OutputTable table;
  table.set_id("check");
  table.set_title(absl::StrCat("Check against ", check.baseline(), ": ", check.regressions(),
                               check.regressions() == 1 ? " regression" : " regressions", " in ",
                               check.rows_size(), " configurations (threshold ",
                               absl::StrFormat("%.3g%%", check.threshold() * 100), ", alpha ",
                               absl::StrFormat("%.3g", check.alpha()), ")"));
  for (const char* column : {"verdict", "configuration", "baseline p50", "now p50", "change",
                             "95% interval", "p", "runs"}) {
    table.add_columns(column);
  }
  std::vector<const v1::CheckRow*> rows;
  for (const v1::CheckRow& row : check.rows()) rows.push_back(&row);
  static const std::map<std::string, int> kOrder = {
      {"regression", 0}, {"slower", 1}, {"faster", 2}, {"ok", 3}};
  std::stable_sort(rows.begin(), rows.end(), [](const v1::CheckRow* a, const v1::CheckRow* b) {
    auto rank = [](const std::string& verdict) {
      auto it = kOrder.find(verdict);
      return it == kOrder.end() ? 4 : it->second;
    };
    return rank(a->verdict()) < rank(b->verdict());
  });
  for (const v1::CheckRow* row : rows) {
    v1::OutputTable::Row* out = table.add_rows();
    out->add_cells(row->verdict());
    out->add_cells(row->key_text());
    out->add_cells(absl::StrFormat("%.2f us", row->baseline_median_s() * 1e6));
    out->add_cells(absl::StrFormat("%.2f us", row->candidate_median_s() * 1e6));
    out->add_cells(Percent(row->ratio()));
    out->add_cells(absl::StrCat("[", Percent(row->ratio_low()), ", ", Percent(row->ratio_high()), "]"));
    out->add_cells(absl::StrFormat("%.2g", row->p_value()));
    out->add_cells(absl::StrCat(row->baseline_run(), " -> ", row->candidate_run()));
  }
  for (const v1::CheckUnmatched& only : check.only_baseline()) {
    table.add_notes(absl::StrCat("in the baseline only (not measured now): ", only.key_text()));
  }
  for (const v1::CheckUnmatched& only : check.only_candidate()) {
    table.add_notes(absl::StrCat("measured now only (not in the baseline): ", only.key_text()));
  }
  for (const std::string& line : check.environment()) {
    table.add_notes(absl::StrCat("environment changed where it regressed: ", line));
  }
  return table;
}

}  // namespace collbench::workflows
