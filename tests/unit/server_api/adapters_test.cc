// SPDX-License-Identifier: Apache-2.0
// The method table and its two generic adapters (server/api/method_table.h):
// the table serves the Coordinator service whole; every method is served
// by both adapters, and refuses and admits the same tokens on both (its
// one role); an operator-only method refuses a read token on both with
// the same message; a watch streams over gRPC from its replay to the
// run's end.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "collbench/v1/coordinator.grpc.pb.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"
#include "rest_test_support.h"
#include "server/api/grpc_adapter.h"
#include "server/api/handlers.h"
#include "server/api/method_table.h"
#include "server/api/rest_adapter.h"
#include "server/api/rest_router.h"

namespace collbench {
namespace {

using ::testing::ElementsAre;

constexpr char kRead[] = "r-token";
constexpr char kOperator[] = "o-token";
constexpr char kWorker[] = "w-token";

// What a call's answer says of its token.
enum class Verdict { kUnauthenticated, kPermissionDenied, kAdmitted };

Verdict OfGrpc(grpc::StatusCode code) {
  if (code == grpc::StatusCode::UNAUTHENTICATED) return Verdict::kUnauthenticated;
  if (code == grpc::StatusCode::PERMISSION_DENIED) return Verdict::kPermissionDenied;
  return Verdict::kAdmitted;
}

Verdict OfHttp(int http_status) {
  if (http_status == 401) return Verdict::kUnauthenticated;
  if (http_status == 403) return Verdict::kPermissionDenied;
  return Verdict::kAdmitted;
}

// What a token of each role gets from a method that needs `role`.
Verdict Expected(Role role, const std::string& token) {
  if (token.empty()) return Verdict::kUnauthenticated;
  if (token == kWorker) return Verdict::kPermissionDenied;
  if (token == kRead && role == Role::kOperator) return Verdict::kPermissionDenied;
  return Verdict::kAdmitted;
}

class AdaptersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Authorizer> tokens =
        Authorizer::FromText("read r-token\noperator o-token\nworker w-token\n");
    ASSERT_TRUE(tokens.ok()) << tokens.status();
    authorizer_ = *tokens;
    api_ = std::make_unique<CoordinatorApi>(ApiParts{&c_.manager(), &c_.fleet(), &c_.hub(), /*watchers=*/nullptr,
                                                     /*workflows=*/nullptr,
                                                     /*schedules=*/nullptr, RealClock()});
    absl::StatusOr<std::unique_ptr<grpc::Service>> service =
        NewGrpcApiService(GrpcEnv{api_.get(), &authorizer_});
    ASSERT_TRUE(service.ok()) << service.status();
    service_ = *std::move(service);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    channel_ =
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials());
    router_ = std::make_unique<RestRouter>(ApiRestRoutes(api_.get()), &authorizer_, nullptr);
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  // Calls `method` with an empty request, as bytes, and the token; the
  // call's status (a stream is cancelled after its first message).
  grpc::Status CallGrpc(const std::string& method, const std::string& token) {
    grpc::GenericStub stub(channel_);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (!token.empty()) context.AddMetadata("authorization", absl::StrCat("Bearer ", token));
    grpc::CompletionQueue cq;
    std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
        stub.PrepareCall(&context, absl::StrCat("/collbench.v1.Coordinator/", method), &cq);
    void* tag = nullptr;
    bool ok = false;
    call->StartCall(reinterpret_cast<void*>(1));
    cq.Next(&tag, &ok);
    grpc::Slice empty("");
    grpc::ByteBuffer request(&empty, 1);
    call->WriteLast(request, grpc::WriteOptions(), reinterpret_cast<void*>(2));
    cq.Next(&tag, &ok);
    grpc::ByteBuffer reply;
    call->Read(&reply, reinterpret_cast<void*>(3));
    cq.Next(&tag, &ok);
    const bool answered = ok;
    if (answered) context.TryCancel();  // a stream that started: its first message is enough
    grpc::Status status;
    call->Finish(&status, reinterpret_cast<void*>(4));
    cq.Next(&tag, &ok);
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
    return answered ? grpc::Status::OK : status;
  }

  // Serves `route` (its {id} as "x") with the token through the router.
  HttpReply CallRest(const RestRoute& route, const std::string& token) {
    HttpRequest request;
    request.method = route.method;
    request.path = absl::StrReplaceAll(route.path, {{"{id}", "x"}});
    request.target = request.path;
    request.peer = "127.0.0.1";
    if (!token.empty()) request.authorization = absl::StrCat("Bearer ", token);
    if (route.method != "GET") request.body = "{}";
    HttpDispatch dispatch = router_->Route(request);
    HttpReply reply = dispatch.answer();
    if (reply.stream != nullptr) reply.stream->Detach();
    return reply;
  }

  FakeCoordinator c_;
  Authorizer authorizer_;
  std::unique_ptr<CoordinatorApi> api_;
  std::unique_ptr<grpc::Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<RestRouter> router_;
};

TEST(MethodTableTest, ServesTheCoordinatorServiceWhole) {
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          v1::Coordinator::service_full_name());
  ASSERT_NE(service, nullptr);
  std::map<std::string, bool> in_service, in_table;
  for (int i = 0; i < service->method_count(); ++i) {
    in_service[service->method(i)->name()] = service->method(i)->server_streaming();
  }
  for (const ApiMethod& method : ApiMethods()) {
    EXPECT_TRUE(in_table.emplace(method.name, method.streaming).second) << method.name;
    ASSERT_NE(method.request, nullptr) << method.name;
    EXPECT_EQ(method.request->full_name(),
              service->FindMethodByName(method.name)->input_type()->full_name())
        << method.name;
    EXPECT_FALSE(method.http.empty()) << method.name << " has no HTTP binding";
    EXPECT_NE(method.role, Role::kPublic) << method.name;
  }
  EXPECT_EQ(in_table, in_service);
  EXPECT_EQ(in_service.at("WatchRun"), true);
  EXPECT_EQ(in_service.at("WatchWorkflow"), true);
}

TEST(MethodTableTest, QueryParametersAreTheRequestFieldsOfAGet) {
  std::map<std::string, std::vector<std::string>> query;
  for (const ApiMethod& method : ApiMethods()) {
    query[method.name] = QueryFields(method, method.http.front());
  }
  EXPECT_THAT(query["ListRuns"], ElementsAre("page_size", "page_token", "filter"));
  EXPECT_THAT(query["ListWorkers"], ElementsAre("page_size", "page_token"));
  EXPECT_THAT(query["GetRun"], ElementsAre());     // its one field is the path's
  EXPECT_THAT(query["CreateRun"], ElementsAre());  // the body holds the request
  EXPECT_THAT(query["CancelRun"], ElementsAre());
}

// Every method, through both adapters, with no token, a worker's, a read
// token and an operator token: refused or admitted alike, as its role says.
TEST_F(AdaptersTest, EveryMethodIsServedByBothWithTheSameRole) {
  std::map<std::string, Role> roles;
  for (const ApiMethod& method : ApiMethods()) roles[method.name] = method.role;
  std::set<std::string> rest_served;
  for (const ApiMethod& method : ApiMethods()) {
    for (const HttpBinding& binding : method.http) {
      const RouteMatch match = MatchRoute(router_->routes(), binding.method,
                                          absl::StrReplaceAll(binding.path, {{"{id}", "x"}}));
      ASSERT_NE(match.route, nullptr) << binding.method << " " << binding.path;
      EXPECT_EQ(match.route->role, method.role) << binding.path;
      rest_served.insert(method.name);
    }
  }
  EXPECT_EQ(rest_served.size(), ApiMethods().size());
  for (const ApiMethod& method : ApiMethods()) {
    for (const std::string token : {"", kWorker, kRead, kOperator}) {
      SCOPED_TRACE(absl::StrCat(method.name, " with token '", token, "'"));
      const Verdict expected = Expected(method.role, token);
      const grpc::Status grpc_status = CallGrpc(method.name, token);
      EXPECT_EQ(OfGrpc(grpc_status.error_code()), expected) << grpc_status.error_message();
      for (const HttpBinding& binding : method.http) {
        const RouteMatch match = MatchRoute(router_->routes(), binding.method,
                                            absl::StrReplaceAll(binding.path, {{"{id}", "x"}}));
        const HttpReply reply = CallRest(*match.route, token);
        EXPECT_EQ(OfHttp(reply.http_status), expected) << binding.path << ": " << reply.body;
      }
    }
  }
}

TEST_F(AdaptersTest, AnOperatorMethodRefusesAReadTokenOnBothAlike) {
  c_.Register("a");
  const v1::Run run = c_.Create(2);
  std::unique_ptr<v1::Coordinator::Stub> stub = v1::Coordinator::NewStub(channel_);
  grpc::ClientContext context;
  context.AddMetadata("authorization", absl::StrCat("Bearer ", kRead));
  v1::CancelRunRequest cancel;
  cancel.set_name(run.name());
  v1::Run cancelled;
  const grpc::Status grpc_status = stub->CancelRun(&context, cancel, &cancelled);
  EXPECT_EQ(grpc_status.error_code(), grpc::StatusCode::PERMISSION_DENIED);

  HttpRequest request;
  request.method = "POST";
  request.path = absl::StrCat("/v1/", run.name(), ":cancel");
  request.target = request.path;
  request.authorization = absl::StrCat("Bearer ", kRead);
  const HttpReply reply = router_->Route(request).answer();
  EXPECT_EQ(reply.http_status, 403);
  EXPECT_THAT(reply.body, ::testing::HasSubstr(grpc_status.error_message()));
  EXPECT_EQ(grpc_status.error_message(),
            "a read token may not do this; it needs the operator role");
  // Nothing was cancelled by either.
  EXPECT_EQ(c_.manager().GetRun(run.name())->state(), run.state());
}

// WatchRun over gRPC: the replay, then each live event, then the end of the
// stream after the final state (GrpcWatchWriter over RunWatch).
TEST_F(AdaptersTest, WatchRunStreamsFromTheReplayToTheEnd) {
  c_.Register("a");
  const std::string run = c_.Create(2).name();
  c_.Running(run, 2);
  std::unique_ptr<v1::Coordinator::Stub> stub = v1::Coordinator::NewStub(channel_);
  grpc::ClientContext context;
  context.AddMetadata("authorization", absl::StrCat("Bearer ", kRead));
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::WatchRunRequest watch;
  watch.set_name(run);
  std::unique_ptr<grpc::ClientReader<v1::RunEvent>> reader = stub->WatchRun(&context, watch);
  v1::RunEvent event;
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.state_change().state(), v1::RUNNING);  // the replay
  c_.Result(run, 0);
  c_.Result(run, 1);
  c_.Succeeded(run, 2);
  std::vector<v1::RunEvent::EventCase> kinds;
  while (reader->Read(&event)) kinds.push_back(event.event_case());
  EXPECT_THAT(kinds,
              ElementsAre(v1::RunEvent::kResult, v1::RunEvent::kProgress, v1::RunEvent::kResult,
                          v1::RunEvent::kProgress, v1::RunEvent::kStateChange));
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(event.state_change().state(), v1::SUCCEEDED);
}

// A watcher that takes nothing is cut off with RESOURCE_EXHAUSTED and
// counted, whichever writer it has: the same bound, the same watch; the
// gRPC writer ends the call with that status.
TEST_F(AdaptersTest, AWatcherThatFallsBehindIsCutOffWithTheGrpcStatus) {
  WatcherLimits limits(
      WatcherLimitOptions{.max_total = 10, .max_per_client = 10, .buffer_events = 3});
  api_ = std::make_unique<CoordinatorApi>(
      ApiParts{&c_.manager(), &c_.fleet(), &c_.hub(), &limits, nullptr, nullptr, RealClock()});
  c_.Register("a");
  const std::string run = c_.Create(8).name();
  absl::StatusOr<std::shared_ptr<Watch<v1::RunEvent>>> watch =
      api_->WatchRun(CallContext{"token 1"}, [&] {
        v1::WatchRunRequest request;
        request.set_name(run);
        return request;
      }());
  ASSERT_TRUE(watch.ok()) << watch.status();
  // Nobody takes: the replayed state, then the live ones fill the queue.
  c_.Running(run, 8);
  c_.Result(run, 0);
  c_.Result(run, 1);
  const Watch<v1::RunEvent>::Batch batch = (*watch)->Take(1);
  EXPECT_TRUE(batch.events.empty());
  EXPECT_TRUE(batch.last);
  EXPECT_EQ(batch.end.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(batch.end.message()), ::testing::HasSubstr("watcher too slow"));
  EXPECT_EQ(ToGrpcStatus(batch.end).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(limits.rejections().too_slow, 1);
  (*watch)->Detach();
  watch->reset();
  EXPECT_EQ(limits.open(), 0);
}

}  // namespace
}  // namespace collbench
