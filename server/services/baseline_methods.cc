// SPDX-License-Identifier: Apache-2.0
// CoordinatorService's baseline methods: thin translations onto
// WorkflowManager, which keeps baselines beside the workflows that check
// against them.
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

absl::Status NoBaselines() { return absl::UnavailableError("this server keeps no baselines"); }

}  // namespace

grpc::ServerUnaryReactor* CoordinatorService::CreateBaseline(
    grpc::CallbackServerContext* context, const v1::CreateBaselineRequest* request,
    v1::Baseline* response) {
  if (auto* refused = Refuse(context, Role::kOperator)) return refused;
  if (workflows_ == nullptr) return Fail(context, NoBaselines());
  return Reply(context,
               workflows_->CreateBaseline(
                   *request, absl::Now(),
                   authorizer_->CallerOf(AuthorizationOf(context), context->peer())),
               response);
}

grpc::ServerUnaryReactor* CoordinatorService::GetBaseline(grpc::CallbackServerContext* context,
                                                          const v1::GetBaselineRequest* request,
                                                          v1::Baseline* response) {
  if (auto* refused = Refuse(context, Role::kRead)) return refused;
  if (workflows_ == nullptr) return Fail(context, NoBaselines());
  return Reply(context, workflows_->GetBaseline(request->name()), response);
}

grpc::ServerUnaryReactor* CoordinatorService::ListBaselines(
    grpc::CallbackServerContext* context, const v1::ListBaselinesRequest* request,
    v1::ListBaselinesResponse* response) {
  if (auto* refused = Refuse(context, Role::kRead)) return refused;
  if (workflows_ == nullptr) return Fail(context, NoBaselines());
  absl::StatusOr<std::vector<v1::Baseline>> all = workflows_->ListBaselines();
  if (!all.ok()) return Fail(context, all.status());
  return Fail(context, PageByName(*std::move(all), request->page_size(), request->page_token(),
                                  response->mutable_baselines(),
                                  response->mutable_next_page_token()));
}

grpc::ServerUnaryReactor* CoordinatorService::DeleteBaseline(
    grpc::CallbackServerContext* context, const v1::DeleteBaselineRequest* request,
    google::protobuf::Empty* response) {
  if (auto* refused = Refuse(context, Role::kOperator)) return refused;
  if (workflows_ == nullptr) return Fail(context, NoBaselines());
  return Fail(context, workflows_->DeleteBaseline(request->name()));
}

}  // namespace collbench
