// SPDX-License-Identifier: Apache-2.0
// Where rank 0 sends results. Formatting lives here, apart from measuring:
// the table for people, JSON lines for the agent and other tools.
#ifndef COLLBENCH_WORKER_ENGINE_REPORT_REPORTER_H_
#define COLLBENCH_WORKER_ENGINE_REPORT_REPORTER_H_

#include <cstdio>
#include <memory>

#include "common/records.h"
#include "engine_spec/options.h"

namespace collbench {

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void Start(const StartRecord& record) = 0;
  // Called once per size as soon as it is measured; implementations flush so
  // a watcher sees progress while the run goes on.
  virtual void Size(const SizeRecord& record) = 0;
  virtual void End(const EndRecord& record) = 0;
  virtual void Error(const ErrorRecord& record) = 0;
};

// Writes to `out` (not owned; must outlive the reporter).
std::unique_ptr<Reporter> NewTableReporter(std::FILE* out);
std::unique_ptr<Reporter> NewJsonlReporter(std::FILE* out);
std::unique_ptr<Reporter> NewReporter(OutputFormat format, std::FILE* out);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_REPORT_REPORTER_H_
