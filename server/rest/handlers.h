// SPDX-License-Identifier: Apache-2.0
// The REST handlers, one per route (see RestRoutes() for which is which).
// Each translates JSON and query parameters into the RunManager call the
// gRPC Coordinator service makes for the same operation, so both APIs
// validate and answer alike. Errors come back as JSON error replies with
// the HTTP status HttpStatusFor() assigns. Internal to server/rest.
#ifndef COLLBENCH_SERVER_REST_HANDLERS_H_
#define COLLBENCH_SERVER_REST_HANDLERS_H_

#include "server/rest/handler.h"

namespace collbench::rest_handlers {

// Runs (run_handlers.cc).
RestReply CreateRun(const RestContext& context, const RestRequest& request);
RestReply ListRuns(const RestContext& context, const RestRequest& request);
RestReply GetRun(const RestContext& context, const RestRequest& request);
RestReply CancelRun(const RestContext& context, const RestRequest& request);
RestReply DeleteRun(const RestContext& context, const RestRequest& request);
RestReply GetRunResults(const RestContext& context, const RestRequest& request);
RestReply WatchRun(const RestContext& context, const RestRequest& request);

// Workers and the service itself (service_handlers.cc).
RestReply CreateWorkflow(const RestContext& context, const RestRequest& request);
RestReply ListWorkflows(const RestContext& context, const RestRequest& request);
RestReply GetWorkflow(const RestContext& context, const RestRequest& request);
RestReply CancelWorkflow(const RestContext& context, const RestRequest& request);
RestReply DeleteWorkflow(const RestContext& context, const RestRequest& request);
RestReply GetWorkflowReport(const RestContext& context, const RestRequest& request);
RestReply WatchWorkflow(const RestContext& context, const RestRequest& request);
RestReply CreateBaseline(const RestContext& context, const RestRequest& request);
RestReply ListBaselines(const RestContext& context, const RestRequest& request);
RestReply GetBaseline(const RestContext& context, const RestRequest& request);
RestReply DeleteBaseline(const RestContext& context, const RestRequest& request);
RestReply CreateSchedule(const RestContext& context, const RestRequest& request);
RestReply ListSchedules(const RestContext& context, const RestRequest& request);
RestReply GetSchedule(const RestContext& context, const RestRequest& request);
RestReply PauseSchedule(const RestContext& context, const RestRequest& request);
RestReply ResumeSchedule(const RestContext& context, const RestRequest& request);
RestReply DeleteSchedule(const RestContext& context, const RestRequest& request);
RestReply UiWorkflows(const RestContext& context, const RestRequest& request);
RestReply UiWorkflow(const RestContext& context, const RestRequest& request);
RestReply UiWorkflowReport(const RestContext& context, const RestRequest& request);
// The /ui/schedules pages (ui_schedules.cc).
RestReply UiSchedules(const RestContext& context, const RestRequest& request);
RestReply UiSchedule(const RestContext& context, const RestRequest& request);
RestReply ListWorkers(const RestContext& context, const RestRequest& request);
RestReply GetWorker(const RestContext& context, const RestRequest& request);
RestReply DrainWorker(const RestContext& context, const RestRequest& request);
RestReply UndrainWorker(const RestContext& context, const RestRequest& request);
RestReply ClearWorker(const RestContext& context, const RestRequest& request);
RestReply DeleteWorker(const RestContext& context, const RestRequest& request);
RestReply Healthz(const RestContext& context, const RestRequest& request);
RestReply Readyz(const RestContext& context, const RestRequest& request);
RestReply Metrics(const RestContext& context, const RestRequest& request);

// The browser pages under /ui/ (ui_handlers.cc): HTML rendered by the
// analysis library's reports; a run's live page follows
// /ui/runs/{id}/events (WatchRun's stream, reachable with the login cookie).
RestReply UiRuns(const RestContext& context, const RestRequest& request);
RestReply UiRun(const RestContext& context, const RestRequest& request);
RestReply UiRunFragment(const RestContext& context, const RestRequest& request);
RestReply UiCompare(const RestContext& context, const RestRequest& request);
RestReply UiSuite(const RestContext& context, const RestRequest& request);
RestReply UiLoginForm(const RestContext& context, const RestRequest& request);
RestReply UiLogin(const RestContext& context, const RestRequest& request);
RestReply UiLogout(const RestContext& context, const RestRequest& request);

}  // namespace collbench::rest_handlers

#endif  // COLLBENCH_SERVER_REST_HANDLERS_H_
