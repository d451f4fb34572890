// SPDX-License-Identifier: Apache-2.0
// The /v1/schedules routes: thin translations onto ScheduleManager.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collbench/v1/coordinator.pb.h"
#include "google/protobuf/empty.pb.h"
#include "server/core/name_pages.h"
#include "server/rest/handlers.h"
#include "server/rest/rest_json.h"
#include "server/workflows/schedule_manager.h"

namespace collbench::rest_handlers {
namespace {

std::string ScheduleName(const RestRequest& request) {
  return absl::StrCat("schedules/", request.id);
}

const RestReply* NoSchedules(const RestContext& context) {
  return context.schedules == nullptr ? Unavailable("this server runs no schedules") : nullptr;
}

}  // namespace

RestReply CreateSchedule(const RestContext& context, const RestRequest& request) {
  if (const RestReply* none = NoSchedules(context)) return *none;
  v1::CreateScheduleRequest create;
  if (absl::Status parsed = ProtoFromJson(request.body, /*empty_ok=*/false, &create);
      !parsed.ok()) {
    return ErrorReply(parsed);
  }
  return Answer(context.schedules->Create(create, absl::Now(), request.caller));
}

RestReply ListSchedules(const RestContext& context, const RestRequest& request) {
  if (const RestReply* none = NoSchedules(context)) return *none;
  absl::StatusOr<int32_t> page_size = QueryInt(request, "page_size");
  if (!page_size.ok()) return ErrorReply(page_size.status());
  v1::ListSchedulesResponse response;
  if (absl::Status paged = PageByName(context.schedules->List(), *page_size,
                                      QueryString(request, "page_token"),
                                      response.mutable_schedules(),
                                      response.mutable_next_page_token());
      !paged.ok()) {
    return ErrorReply(paged);
  }
  return JsonReply(response);
}

RestReply GetSchedule(const RestContext& context, const RestRequest& request) {
  if (const RestReply* none = NoSchedules(context)) return *none;
  return Answer(context.schedules->Get(ScheduleName(request)));
}

RestReply PauseSchedule(const RestContext& context, const RestRequest& request) {
  if (const RestReply* none = NoSchedules(context)) return *none;
  return Answer(context.schedules->Pause(ScheduleName(request), absl::Now()));
}

RestReply ResumeSchedule(const RestContext& context, const RestRequest& request) {
  if (const RestReply* none = NoSchedules(context)) return *none;
  return Answer(context.schedules->Resume(ScheduleName(request), absl::Now()));
}

RestReply DeleteSchedule(const RestContext& context, const RestRequest& request) {
  if (const RestReply* none = NoSchedules(context)) return *none;
  absl::Status deleted = context.schedules->Delete(ScheduleName(request), absl::Now());
  if (!deleted.ok()) return ErrorReply(deleted);
  return JsonReply(google::protobuf::Empty());
}

}  // namespace collbench::rest_handlers
