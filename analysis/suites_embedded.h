// SPDX-License-Identifier: Apache-2.0
// The built-in suites' JSON, compiled in from analysis/suites/*.json
// (analysis/CMakeLists.txt generates the definition).
#ifndef COLLBENCH_ANALYSIS_SUITES_EMBEDDED_H_
#define COLLBENCH_ANALYSIS_SUITES_EMBEDDED_H_

#include <vector>

namespace collbench {

struct EmbeddedSuite {
  const char* file;  // "container-locality.json"
  const char* json;
};

const std::vector<EmbeddedSuite>& EmbeddedSuites();

}  // namespace collbench

#endif  // COLLBENCH_ANALYSIS_SUITES_EMBEDDED_H_
