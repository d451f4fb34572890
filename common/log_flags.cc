// SPDX-License-Identifier: Apache-2.0
#include "common/log_flags.h"

#include <utility>

#include "common/log.h"

namespace collbench {

void AddLogFlags(FlagParser& parser, LogFlags* values) {
  parser.String("log-format", "FORMAT", &values->format,
                "auto, json or text: one line per event on stderr, JSON lines unless stderr is a "
                "terminal (default auto)");
  parser.String("log-level", "LEVEL", &values->level,
                "debug, info, warn or error: the least severe lines written; debug adds the "
                "routine ones, such as every successful read request (default info)");
}

absl::Status ApplyLogFlags(const LogFlags& values) {
  absl::StatusOr<LogOptions> options = LogOptionsFromFlags(values.format, values.level);
  if (!options.ok()) return options.status();
  SetLogOptions(*std::move(options));
  return absl::OkStatus();
}

}  // namespace collbench
