// SPDX-License-Identifier: Apache-2.0
#include "server/metrics/schedule_metrics.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "server/metrics/text_format.h"

namespace collbench {
namespace {

std::string Number(double value) { return absl::StrCat(value); }

struct Family {
  const char* name;
  const char* type;
  const char* help;
  std::string samples;
};

}  // namespace

std::string ScheduleMetricsText(
    const std::vector<v1::Schedule>& schedules,
    const std::map<std::string, v1::CheckOutput>& last_checks,
    const std::map<std::string, std::map<std::string, int64_t>>& ended) {
  Family period{"collbench_schedule_period_seconds", "gauge", "A schedule's period."};
  Family paused{"collbench_schedule_paused", "gauge", "1 while a schedule is paused."};
  Family last_fire{"collbench_schedule_last_fire_timestamp_seconds", "gauge",
                   "When a schedule last fired (0: not yet)."};
  Family last_success{"collbench_schedule_last_success_timestamp_seconds", "gauge",
                      "When a schedule's firing last succeeded with no regression (its "
                      "creation until then)."};
  Family last_regressions{"collbench_schedule_last_regressions", "gauge",
                          "Regressed configurations in the last firing that checked."};
  Family regressions{"collbench_schedule_regressions_total", "counter",
                     "Regressed configurations over all of a schedule's firings."};
  Family firings{"collbench_schedule_firings_total", "counter",
                 "A schedule's firings ended since the coordinator started, by outcome."};
  Family ratio{"collbench_check_ratio", "gauge",
               "The last check's median latency now over the baseline's, per configuration."};
  for (const v1::Schedule& schedule : schedules) {
    const std::string id(absl::StripPrefix(schedule.name(), "schedules/"));
    const std::string label = absl::StrCat("{schedule=\"", EscapedLabelValue(id), "\"}");
    absl::StrAppend(&period.samples, period.name, label, " ",
                    Number(schedule.spec().every_seconds()), "\n");
    absl::StrAppend(&paused.samples, paused.name, label, " ", schedule.paused() ? 1 : 0, "\n");
    absl::StrAppend(&last_fire.samples, last_fire.name, label, " ",
                    Number(schedule.last_fire_time().seconds()), "\n");
    const auto& success = schedule.has_last_success_time() ? schedule.last_success_time()
                                                           : schedule.create_time();
    absl::StrAppend(&last_success.samples, last_success.name, label, " ",
                    Number(success.seconds()), "\n");
    int last = 0;
    std::map<std::string, int64_t> outcomes = {
        {"succeeded", 0}, {"regression", 0}, {"failed", 0}, {"skipped", 0}, {"cancelled", 0}};
    if (auto counted = ended.find(schedule.name()); counted != ended.end()) {
      for (const auto& [outcome, count] : counted->second) outcomes[outcome] = count;
    }
    for (const v1::ScheduleFiring& firing : schedule.history()) {
      if (firing.outcome() == "succeeded" || firing.outcome() == "regression") {
        last = firing.regressions();
        break;
      }
    }
    absl::StrAppend(&last_regressions.samples, last_regressions.name, label, " ", last, "\n");
    absl::StrAppend(&regressions.samples, regressions.name, label, " ",
                    schedule.regressions_found(), "\n");
    for (const auto& [outcome, count] : outcomes) {
      absl::StrAppend(&firings.samples, firings.name, "{schedule=\"", EscapedLabelValue(id),
                      "\",outcome=\"", outcome, "\"} ", count, "\n");
    }
    auto check = last_checks.find(schedule.name());
    if (check == last_checks.end()) continue;
    const std::string baseline(absl::StripPrefix(check->second.baseline(), "baselines/"));
    for (const v1::CheckRow& row : check->second.rows()) {
      std::string operation, bytes;
      for (const v1::ConfigField& field : row.key()) {
        if (field.name() == "operation") operation = field.value();
        if (field.name() == "bytes") bytes = field.value();
      }
      absl::StrAppend(&ratio.samples, ratio.name, "{schedule=\"", EscapedLabelValue(id),
                      "\",baseline=\"", EscapedLabelValue(baseline), "\",operation=\"",
                      EscapedLabelValue(operation), "\",size_bytes=\"", EscapedLabelValue(bytes),
                      "\",configuration=\"", EscapedLabelValue(row.key_text()), "\"} ",
                      Number(row.ratio()), "\n");
    }
  }
  std::string out;
  for (const Family* family : {&period, &paused, &last_fire, &last_success, &last_regressions,
                               &regressions, &firings, &ratio}) {
    if (family->samples.empty()) continue;
    absl::StrAppend(&out, "# HELP ", family->name, " ", family->help, "\n# TYPE ", family->name,
                    " ", family->type, "\n", family->samples);
  }
  return out;
}

}  // namespace collbench
