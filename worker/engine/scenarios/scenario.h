// SPDX-License-Identifier: Apache-2.0
// Scenarios: the seed experiments as first-class workloads
// (docs/design/data-plane.md#scenarios). Each drives the shared timing loop
// (timing.h) with its own per-iteration pattern and reports SizeRecords through
// the Reporter, with scenario-specific numbers in SizeRecord::scenario.
#ifndef COLLBENCH_WORKER_ENGINE_SCENARIOS_SCENARIO_H_
#define COLLBENCH_WORKER_ENGINE_SCENARIOS_SCENARIO_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine_spec/options.h"
#include "engine_spec/scenarios.h"  // ValidateParameterServer, ValidateGradientReplay
#include "worker/engine/sweep.h"

namespace collbench {

class BackendRegistry;
class Communicator;
class DeviceRuntime;
class MemoryKindRegistry;
class Reporter;

struct ScenarioEnv {
  const EngineOptions* options = nullptr;
  Communicator* comm = nullptr;  // MpiCommunicator of this build's MPI
  const BackendRegistry* backends = nullptr;
  const MemoryKindRegistry* memory = nullptr;
  DeviceRuntime* device = nullptr;  // never null; may be the no-CUDA stub
  Reporter* reporter = nullptr;     // rank 0 only; null elsewhere
  // Host name of every rank, by rank (rank 0 only).
  const std::vector<std::string>* hosts = nullptr;
};

// Both return the sizes measured and the wrong elements found (over every
// rank), the same on every rank.
absl::StatusOr<SweepTotals> RunParameterServer(const ScenarioEnv& env);
absl::StatusOr<SweepTotals> RunGradientReplay(const ScenarioEnv& env);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_SCENARIOS_SCENARIO_H_
