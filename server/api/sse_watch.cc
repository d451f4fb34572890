// SPDX-License-Identifier: Apache-2.0
#include "server/api/sse_watch.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "server/api/rest_json.h"

namespace collbench {

std::string FormatRunEvent(const v1::RunEvent& event) {
  absl::string_view name = "message";
  switch (event.event_case()) {
    case v1::RunEvent::kStateChange:
      name = "state";
      break;
    case v1::RunEvent::kResult:
      name = "result";
      break;
    case v1::RunEvent::kProgress:
      name = "progress";
      break;
    case v1::RunEvent::kLog:
      name = "log";
      break;
    case v1::RunEvent::EVENT_NOT_SET:
      break;
  }
  return absl::StrCat("event: ", name, "\ndata: ", ProtoToJson(event), "\n\n");
}

std::string FormatWorkflowEvent(const v1::WorkflowEvent& event) {
  return absl::StrCat("event: workflow\ndata: ", ProtoToJson(event), "\n\n");
}

std::string FormatErrorEvent(const absl::Status& status) {
  return absl::StrCat("event: error\ndata: ", ErrorJson(status), "\n\n");
}

}  // namespace collbench
