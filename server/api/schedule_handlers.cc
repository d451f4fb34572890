// SPDX-License-Identifier: Apache-2.0
// The schedule methods: thin translations onto ScheduleManager.
#include "common/status_macros.h"
#include "server/api/handlers.h"
#include "server/core/name_pages.h"
#include "server/workflows/schedule_manager.h"

namespace collbench {

absl::StatusOr<ScheduleManager*> CoordinatorApi::Schedules() const {
  if (parts_.schedules == nullptr) return absl::UnavailableError("this server runs no schedules");
  return parts_.schedules;
}

absl::StatusOr<v1::Schedule> CoordinatorApi::CreateSchedule(
    const CallContext& call, const v1::CreateScheduleRequest& request) {
  ASSIGN_OR_RETURN(ScheduleManager * schedules, Schedules());
  return schedules->Create(request, parts_.clock->Now(), call.caller);
}

absl::StatusOr<v1::Schedule> CoordinatorApi::GetSchedule(const CallContext& call,
                                                         const v1::GetScheduleRequest& request) {
  ASSIGN_OR_RETURN(ScheduleManager * schedules, Schedules());
  return schedules->Get(request.name());
}

absl::StatusOr<v1::ListSchedulesResponse> CoordinatorApi::ListSchedules(
    const CallContext& call, const v1::ListSchedulesRequest& request) {
  ASSIGN_OR_RETURN(ScheduleManager * schedules, Schedules());
  v1::ListSchedulesResponse response;
  RETURN_IF_ERROR(PageByName(schedules->List(), request.page_size(), request.page_token(),
                             response.mutable_schedules(), response.mutable_next_page_token()));
  return response;
}

absl::StatusOr<v1::Schedule> CoordinatorApi::PauseSchedule(
    const CallContext& call, const v1::PauseScheduleRequest& request) {
  ASSIGN_OR_RETURN(ScheduleManager * schedules, Schedules());
  return schedules->Pause(request.name(), parts_.clock->Now());
}

absl::StatusOr<v1::Schedule> CoordinatorApi::ResumeSchedule(
    const CallContext& call, const v1::ResumeScheduleRequest& request) {
  ASSIGN_OR_RETURN(ScheduleManager * schedules, Schedules());
  return schedules->Resume(request.name(), parts_.clock->Now());
}

absl::StatusOr<google::protobuf::Empty> CoordinatorApi::DeleteSchedule(
    const CallContext& call, const v1::DeleteScheduleRequest& request) {
  ASSIGN_OR_RETURN(ScheduleManager * schedules, Schedules());
  RETURN_IF_ERROR(schedules->Delete(request.name(), parts_.clock->Now()));
  return google::protobuf::Empty();
}

}  // namespace collbench
