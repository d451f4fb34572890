// SPDX-License-Identifier: Apache-2.0
// CoordinatorService's schedule methods: thin translations onto
// ScheduleManager.
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/core/name_pages.h"
#include "server/services/coordinator_service.h"
#include "server/services/unary_reply.h"

namespace collbench {
namespace {

using service_reply::AuthorizationOf;
using service_reply::Fail;
using service_reply::Reply;

absl::Status NoSchedules() { return absl::UnavailableError("this server runs no schedules"); }

}  // namespace

grpc::ServerUnaryReactor* CoordinatorService::CreateSchedule(
    grpc::CallbackServerContext* context, const v1::CreateScheduleRequest* request,
    v1::Schedule* response) {
  if (auto* refused = Refuse(context, Role::kOperator)) return refused;
  if (schedules_ == nullptr) return Fail(context, NoSchedules());
  return Reply(context,
               schedules_->Create(*request, absl::Now(),
                                  authorizer_->CallerOf(AuthorizationOf(context), context->peer())),
               response);
}

grpc::ServerUnaryReactor* CoordinatorService::GetSchedule(grpc::CallbackServerContext* context,
                                                          const v1::GetScheduleRequest* request,
                                                          v1::Schedule* response) {
  if (auto* refused = Refuse(context, Role::kRead)) return refused;
  if (schedules_ == nullptr) return Fail(context, NoSchedules());
  return Reply(context, schedules_->Get(request->name()), response);
}

grpc::ServerUnaryReactor* CoordinatorService::ListSchedules(
    grpc::CallbackServerContext* context, const v1::ListSchedulesRequest* request,
    v1::ListSchedulesResponse* response) {
  if (auto* refused = Refuse(context, Role::kRead)) return refused;
  if (schedules_ == nullptr) return Fail(context, NoSchedules());
  return Fail(context, PageByName(schedules_->List(), request->page_size(), request->page_token(),
                                  response->mutable_schedules(),
                                  response->mutable_next_page_token()));
}

grpc::ServerUnaryReactor* CoordinatorService::PauseSchedule(
    grpc::CallbackServerContext* context, const v1::PauseScheduleRequest* request,
    v1::Schedule* response) {
  if (auto* refused = Refuse(context, Role::kOperator)) return refused;
  if (schedules_ == nullptr) return Fail(context, NoSchedules());
  return Reply(context, schedules_->Pause(request->name(), absl::Now()), response);
}

grpc::ServerUnaryReactor* CoordinatorService::ResumeSchedule(
    grpc::CallbackServerContext* context, const v1::ResumeScheduleRequest* request,
    v1::Schedule* response) {
  if (auto* refused = Refuse(context, Role::kOperator)) return refused;
  if (schedules_ == nullptr) return Fail(context, NoSchedules());
  return Reply(context, schedules_->Resume(request->name(), absl::Now()), response);
}

grpc::ServerUnaryReactor* CoordinatorService::DeleteSchedule(
    grpc::CallbackServerContext* context, const v1::DeleteScheduleRequest* request,
    google::protobuf::Empty* response) {
  if (auto* refused = Refuse(context, Role::kOperator)) return refused;
  if (schedules_ == nullptr) return Fail(context, NoSchedules());
  return Fail(context, schedules_->Delete(request->name(), absl::Now()));
}

}  // namespace collbench
