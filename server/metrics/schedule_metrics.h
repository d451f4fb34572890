// SPDX-License-Identifier: Apache-2.0
// The scheduled checks' metrics (docs/design/observability.md#fleet-metrics),
// in Prometheus' text format, appended to the coordinator's /metrics:
//
//   collbench_schedule_period_seconds{schedule}                gauge
//   collbench_schedule_paused{schedule}                        gauge, 0 or 1
//   collbench_schedule_last_fire_timestamp_seconds{schedule}   gauge, 0 before the first
//   collbench_schedule_last_success_timestamp_seconds{schedule} gauge; the creation time
//                                                              until the first success
//   collbench_schedule_last_regressions{schedule}              gauge, regressed
//                                                              configurations of the last
//                                                              firing that checked
//   collbench_schedule_regressions_total{schedule}             counter, over all firings
//   collbench_schedule_firings_total{schedule, outcome}        counter (succeeded,
//                                                              regression, failed,
//                                                              skipped, cancelled) of
//                                                              the firings ended since
//                                                              the process started
//   collbench_check_ratio{schedule, baseline, operation, size_bytes, configuration}
//                                                              gauge, the last check's
//                                                              median now/then per
//                                                              configuration
// `schedule` is the bare id. A configuration is a baseline entry, so the
// series are bounded by the baselines' sizes.
#ifndef COLLBENCH_SERVER_METRICS_SCHEDULE_METRICS_H_
#define COLLBENCH_SERVER_METRICS_SCHEDULE_METRICS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "collbench/v1/baseline.pb.h"
#include "collbench/v1/schedule.pb.h"

namespace collbench {

// `last_checks`: the last check of each schedule, by schedule name;
// `outcomes`: firings ended since the process started, by schedule name and
// outcome.
std::string ScheduleMetricsText(
    const std::vector<v1::Schedule>& schedules,
    const std::map<std::string, v1::CheckOutput>& last_checks,
    const std::map<std::string, std::map<std::string, int64_t>>& outcomes);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_METRICS_SCHEDULE_METRICS_H_
