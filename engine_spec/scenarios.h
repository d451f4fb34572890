// SPDX-License-Identifier: Apache-2.0
// The scenarios (docs/design/data-plane.md#scenarios) as vocabulary: their names and the
// checks of their options against the job, made by collbench-rank on every
// rank before any communication and by api/ before a run is queued. The
// engine's scenario code (worker/engine/scenarios/) runs them.
#ifndef COLLBENCH_ENGINE_SPEC_SCENARIOS_H_
#define COLLBENCH_ENGINE_SPEC_SCENARIOS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine_spec/job_checks.h"
#include "engine_spec/options.h"

namespace collbench {

inline constexpr char kParameterServer[] = "parameter-server";
inline constexpr char kGradientReplay[] = "gradient-replay";

// parameter-server, gradient-replay.
const std::vector<std::string>& ScenarioNames();
bool IsScenario(absl::string_view name);

// The scenario's rules against a job of `nranks` ranks (ranks, strategy,
// dtype, sizes, model), as engine_spec/job_checks.h's rules: the first
// broken one, or nullopt. ScenarioRules picks by options.scenario.
// REQUIRES: options.scenario is a scenario's name (for ScenarioRules).
std::optional<RuleError> ParameterServerRules(const EngineOptions& options, int nranks);
std::optional<RuleError> GradientReplayRules(const EngineOptions& options, int nranks);
std::optional<RuleError> ScenarioRules(const EngineOptions& options, int nranks);

// The same as EngineError (InvalidArgument naming the flag), for
// collbench-rank before any communication.
absl::Status ValidateParameterServer(const EngineOptions& options, int nranks);
absl::Status ValidateGradientReplay(const EngineOptions& options, int nranks);

}  // namespace collbench

#endif  // COLLBENCH_ENGINE_SPEC_SCENARIOS_H_
