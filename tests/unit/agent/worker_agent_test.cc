// SPDX-License-Identifier: Apache-2.0
// The worker's readiness: its gRPC health status is SERVING exactly while it
// is registered with the coordinator (a Kubernetes `grpc:` readiness probe
// on the worker's --listen port relies on it).
#include "worker/agent/worker_agent.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/grpc_health.h"
#include "gtest/gtest.h"
#include "tests/unit/agent/fake_gateway.h"
#include "tests/unit/agent/test_util.h"

namespace collbench {
namespace {

using ::collbench::testing::Eventually;

using ::collbench::testing::FakeGateway;

// The worker's overall ("") health status, or the error as text.
std::string OverallHealth(const std::shared_ptr<grpc::Channel>& channel) {
  absl::StatusOr<std::string> status = CheckGrpcHealth(channel, "", absl::Seconds(5));
  return status.ok() ? *status : absl::StrCat("error ", status.status().message());
}

std::unique_ptr<grpc::Server> StartServer(grpc::Service* service, int* port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), port);
  builder.RegisterService(service);
  return builder.BuildAndStart();
}

class WorkerAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::EnableDefaultHealthCheckService(true);
    runner_ = NewPosixProcessRunner();
    exec_ = std::make_unique<ExecManager>(runner_.get(), ExecManagerOptions{});
    exec_service_ = std::make_unique<ExecService>(exec_.get());
    int port = 0;
    // The worker's own server, with its Agent service as in the binary.
    worker_server_ = StartServer(exec_service_.get(), &port);
    ASSERT_NE(worker_server_, nullptr);
    worker_channel_ =
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials());
    gateway_server_ = StartServer(&gateway_, &gateway_port_);
    ASSERT_NE(gateway_server_, nullptr);
  }

  void TearDown() override {
    if (agent_ != nullptr) agent_->Stop();
    if (agent_thread_.joinable()) agent_thread_.join();
    if (gateway_server_ != nullptr) gateway_server_->Shutdown();
    if (worker_server_ != nullptr) worker_server_->Shutdown();
  }

  void StartAgent(const std::string& coordinator) {
    WorkerAgentOptions options;
    options.coordinator = coordinator;
    options.worker_id = "w1";
    options.agent_address = "127.0.0.1:1";
    options.min_backoff = absl::Milliseconds(20);
    options.max_backoff = absl::Milliseconds(100);
    std::function<void(bool)> report = ReportRegistrationAsHealth(worker_server_.get());
    options.on_registration = [this, report](bool registered) {
      report(registered);
      absl::MutexLock lock(&mu_);
      transitions_.push_back(registered);
    };
    agent_ = std::make_unique<WorkerAgent>(options, exec_.get(), &spool_);
    agent_thread_ = std::thread([this] { agent_->Run(); });
  }

  bool HealthBecomes(const std::string& expected) {
    return Eventually([&] { return OverallHealth(worker_channel_) == expected; },
                      absl::Seconds(10));
  }

  std::vector<bool> transitions() {
    absl::MutexLock lock(&mu_);
    return transitions_;
  }

  FakeGateway gateway_;
  int gateway_port_ = 0;
  std::unique_ptr<grpc::Server> gateway_server_;
  std::unique_ptr<grpc::Server> worker_server_;
  std::shared_ptr<grpc::Channel> worker_channel_;
  std::unique_ptr<ProcessRunner> runner_;
  std::unique_ptr<ExecManager> exec_;
  std::unique_ptr<ExecService> exec_service_;
  ResultSpool spool_;
  std::unique_ptr<WorkerAgent> agent_;
  std::thread agent_thread_;
  absl::Mutex mu_;
  std::vector<bool> transitions_ ABSL_GUARDED_BY(mu_);  // what on_registration was told
};

TEST_F(WorkerAgentTest, NotServingBeforeRegistration) {
  ReportRegistrationAsHealth(worker_server_.get());
  EXPECT_EQ(OverallHealth(worker_channel_), "NOT_SERVING");
}

TEST_F(WorkerAgentTest, ServingWhileRegisteredAndNotServingWhenTheStreamIsLost) {
  StartAgent(absl::StrCat("127.0.0.1:", gateway_port_));
  ASSERT_TRUE(HealthBecomes("SERVING"));
  EXPECT_TRUE(agent_->connected());

  // The coordinator ends the stream: not ready until registered again.
  gateway_.DropStreams();
  gateway_server_->Shutdown();
  gateway_server_.reset();
  EXPECT_TRUE(HealthBecomes("NOT_SERVING"));
  EXPECT_FALSE(agent_->connected());
  EXPECT_EQ(transitions(), (std::vector<bool>{true, false}));
}

TEST_F(WorkerAgentTest, ServingAgainAfterReconnecting) {
  StartAgent(absl::StrCat("127.0.0.1:", gateway_port_));
  ASSERT_TRUE(HealthBecomes("SERVING"));
  gateway_.DropStreams();
  // The gateway still answers, so the agent registers again after its backoff.
  ASSERT_TRUE(Eventually([&] { return transitions().size() >= 3; }));
  EXPECT_EQ(transitions(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(OverallHealth(worker_channel_), "SERVING");
}

TEST_F(WorkerAgentTest, NeverServingWithoutACoordinator) {
  int unused_port = 0;
  {
    // A port that was free a moment ago: nothing answers there.
    FakeGateway unused;
    std::unique_ptr<grpc::Server> probe = StartServer(&unused, &unused_port);
    probe->Shutdown();
  }
  StartAgent(absl::StrCat("127.0.0.1:", unused_port));
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_EQ(OverallHealth(worker_channel_), "NOT_SERVING");
  EXPECT_FALSE(agent_->connected());
  EXPECT_TRUE(transitions().empty());
}

}  // namespace
}  // namespace collbench
