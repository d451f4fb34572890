// SPDX-License-Identifier: Apache-2.0
// Attacks on worker identity and the Agent (issue 19,
// docs/design/security.md#worker-identity), against a real
// collbench-coordinator and two real collbench-worker processes on 127.0.0.1.
// Each test asserts that the attack's effect did not happen:
//   * an impostor registering under a live worker's name with the join
//     token is refused, receives nothing, and the next run still goes to
//     the real worker at its real address;
//   * an Exec flood with client deadlines shorter than any wait leaves the
//     worker alive and serving a normal run;
//   * a registered worker injecting a log line, a result and a status into
//     another worker's run changes neither the stored results, nor the
//     run's state, nor what its watchers see;
//   * with --tls-cert/--tls-key/--tls-client-ca, a plaintext or
//     certificate-less caller gets nothing from a worker's Agent, while a
//     run across both workers (the launch shim dialling with the worker's
//     certificate) succeeds.
// The binaries come from the build (COLLBENCH_*_BIN); runs need Open MPI.
#include <fcntl.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "collbench/v1/agent.grpc.pb.h"
#include "collbench/v1/coordinator.grpc.pb.h"
#include "collbench/v1/gateway.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/security/child_process.h"

namespace collbench {
namespace {

constexpr char kOperatorToken[] = "op-identity-test-token";
constexpr char kJoinToken[] = "join-identity-test-token";

class IdentityAttackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/collbench-identity-attack-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    std::ofstream(dir_ + "/tokens") << "operator " << kOperatorToken << "\nworker " << kJoinToken
                                    << "\n";
    std::ofstream(dir_ + "/join") << kJoinToken << "\n";
    chmod((dir_ + "/tokens").c_str(), 0600);
    chmod((dir_ + "/join").c_str(), 0600);
    coordinator_ = std::make_unique<Child>(
        // No launcher here: the run's rank-0 worker launches it.
        std::vector<std::string>{COLLBENCH_COORDINATOR_BIN, "--grpc-listen", "127.0.0.1:0",
                                 "--store", dir_ + "/store.db", "--tokens", dir_ + "/tokens",
                                 "--worker-launch", "fallback"},
        dir_ + "/coordinator.log");
    ASSERT_TRUE(WaitFor(
        [&] {
          const std::string log = coordinator_->log();
          const size_t at = log.find("serving gRPC on port ");
          if (at == std::string::npos) return false;
          size_t end = at + 21;
          while (end < log.size() && std::isdigit(static_cast<unsigned char>(log[end]))) ++end;
          return absl::SimpleAtoi(log.substr(at + 21, end - at - 21), &port_);
        },
        absl::Seconds(20)))
        << coordinator_->log();
    coordinator_address_ = absl::StrCat("127.0.0.1:", port_);
    auto channel =
        grpc::CreateChannel(coordinator_address_, grpc::InsecureChannelCredentials());
    api_ = v1::Coordinator::NewStub(channel);
    gateway_ = v1::WorkerGateway::NewStub(channel);
    for (const char* name : {"w1", "w2"}) StartWorker(name);
    ASSERT_TRUE(WaitFor([&] { return Ready("workers/w1") && Ready("workers/w2"); },
                        absl::Seconds(30)))
        << workers_[0]->log() << workers_[1]->log() << coordinator_->log();
  }

  void TearDown() override {
    workers_.clear();
    coordinator_.reset();
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  // Flags every worker gets on top of the common ones.
  virtual std::vector<std::string> WorkerFlags() { return {}; }

  void StartWorker(const std::string& name) {
    std::filesystem::create_directories(dir_ + "/" + name);
    std::vector<std::string> argv = {COLLBENCH_WORKER_BIN, "--coordinator", coordinator_address_,
                                     "--listen", "127.0.0.1:0", "--name", name, "--slots", "1",
                                     "--work-dir", dir_ + "/" + name, "--join-token-file",
                                     dir_ + "/join", "--mpi-interface", "127.0.0.0/8"};
    for (const std::string& flag : WorkerFlags()) argv.push_back(flag);
    workers_.push_back(std::make_unique<Child>(argv, dir_ + "/" + name + ".log"));
  }

  void Authorize(grpc::ClientContext* context) {
    context->AddMetadata("authorization", absl::StrCat("Bearer ", kOperatorToken));
    context->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  }

  absl::StatusOr<v1::Worker> Worker(const std::string& name) {
    grpc::ClientContext context;
    Authorize(&context);
    v1::GetWorkerRequest request;
    request.set_name(name);
    v1::Worker worker;
    grpc::Status status = api_->GetWorker(&context, request, &worker);
    if (!status.ok()) return absl::UnavailableError(status.error_message());
    return worker;
  }

  bool Ready(const std::string& name) {
    absl::StatusOr<v1::Worker> worker = Worker(name);
    return worker.ok() && worker->state() == v1::READY;
  }

  v1::RunSpec TwoRankSpec() {
    v1::RunSpec spec;
    spec.set_operation("allreduce");
    spec.set_ranks(2);
    spec.mutable_placement()->set_policy(v1::EXPLICIT);
    spec.mutable_placement()->add_workers("workers/w1");
    spec.mutable_placement()->add_workers("workers/w2");
    spec.mutable_placement()->set_ranks_per_worker(1);
    spec.add_sizes_bytes(8);
    spec.add_sizes_bytes(1024);
    spec.set_iters(20);
    return spec;
  }

  v1::Run CreateRun(const v1::RunSpec& spec) {
    grpc::ClientContext context;
    Authorize(&context);
    v1::CreateRunRequest request;
    *request.mutable_spec() = spec;
    v1::Run run;
    grpc::Status status = api_->CreateRun(&context, request, &run);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return run;
  }

  v1::GetRunResultsResponse Results(const std::string& run) {
    grpc::ClientContext context;
    Authorize(&context);
    v1::GetRunResultsRequest request;
    request.set_name(run);
    v1::GetRunResultsResponse response;
    (void)api_->GetRunResults(&context, request, &response);
    return response;
  }

  // Waits for a final state; returns the run as it ended.
  v1::Run WaitFinal(const std::string& name) {
    v1::Run run;
    WaitFor(
        [&] {
          grpc::ClientContext context;
          Authorize(&context);
          v1::GetRunRequest request;
          request.set_name(name);
          if (!api_->GetRun(&context, request, &run).ok()) return false;
          return run.state() == v1::SUCCEEDED || run.state() == v1::FAILED ||
                 run.state() == v1::CANCELLED;
        },
        absl::Seconds(120));
    return run;
  }

  std::string Logs() {
    std::string all = "coordinator:\n" + coordinator_->log();
    for (const auto& w : workers_) all += "\nworker:\n" + w->log();
    return all;
  }

  std::string dir_;
  int port_ = 0;
  std::string coordinator_address_;
  std::unique_ptr<Child> coordinator_;
  std::vector<std::unique_ptr<Child>> workers_;
  std::unique_ptr<v1::Coordinator::Stub> api_;
  std::unique_ptr<v1::WorkerGateway::Stub> gateway_;
};

// A hand-made worker stream: registers, then writes what the test says and
// records everything the coordinator sends.
class RogueWorker {
 public:
  RogueWorker(v1::WorkerGateway::Stub* gateway, const std::string& id,
              const std::string& address) {
    context_.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
    stream_ = gateway->Connect(&context_);
    v1::WorkerMessage hello;
    v1::Register* reg = hello.mutable_register_();
    reg->set_worker_id(id);
    reg->set_agent_address(address);
    reg->set_slots(1);
    reg->set_join_token(kJoinToken);
    reg->mutable_inventory()->set_host_id("rogue-host-" + id);
    reg->mutable_inventory()->set_hostname("rogue");
    reg->mutable_inventory()->set_memory_bytes(uint64_t{1} << 30);
    stream_->Write(hello);
    reader_ = std::thread([this] {
      v1::CoordinatorMessage message;
      while (stream_->Read(&message)) {
        absl::MutexLock lock(&mu_);
        received_.push_back(message);
      }
    });
  }
  ~RogueWorker() { Close(); }

  grpc::Status Close() {
    if (closed_) return status_;
    closed_ = true;
    stream_->WritesDone();
    context_.TryCancel();
    reader_.join();
    status_ = stream_->Finish();
    return status_;
  }
  // Waits for the stream's end (the coordinator refusing it).
  grpc::Status Finish() {
    reader_.join();
    closed_ = true;
    status_ = stream_->Finish();
    return status_;
  }
  void Send(const v1::WorkerMessage& message) { stream_->Write(message); }
  std::vector<v1::CoordinatorMessage> received() {
    absl::MutexLock lock(&mu_);
    return received_;
  }
  bool registered() {
    for (const auto& m : received()) {
      if (m.has_registered()) return true;
    }
    return false;
  }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::WorkerMessage, v1::CoordinatorMessage>> stream_;
  std::thread reader_;
  absl::Mutex mu_;
  std::vector<v1::CoordinatorMessage> received_ ABSL_GUARDED_BY(mu_);
  bool closed_ = false;
  grpc::Status status_;
};

TEST_F(IdentityAttackTest, ImpostorUnderALiveNameIsRefusedAndRunsStayWithTheRealWorker) {
  const std::string real_address = Worker("workers/w1")->agent_address();
  RogueWorker impostor(gateway_.get(), "w1", "127.0.0.1:9");
  const grpc::Status refused = impostor.Finish();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED) << refused.error_message();
  EXPECT_TRUE(impostor.received().empty()) << "the impostor was sent something";
  absl::StatusOr<v1::Worker> w1 = Worker("workers/w1");
  ASSERT_TRUE(w1.ok());
  EXPECT_EQ(w1->agent_address(), real_address);
  EXPECT_EQ(w1->state(), v1::READY);

  const v1::Run run = WaitFinal(CreateRun(TwoRankSpec()).name());
  EXPECT_EQ(run.state(), v1::SUCCEEDED) << run.error() << "\n" << Logs();
  bool on_w1 = false;
  for (const v1::RankHost& host : run.hosts()) on_w1 |= host.worker() == "workers/w1";
  EXPECT_TRUE(on_w1);
  EXPECT_EQ(Worker("workers/w1")->agent_address(), real_address);
  EXPECT_TRUE(impostor.received().empty());
  EXPECT_NE(coordinator_->log().find("registration of workers/w1"), std::string::npos);
}

TEST_F(IdentityAttackTest, ExecFloodWithShortDeadlinesLeavesTheWorkerServing) {
  const std::string agent = Worker("workers/w1")->agent_address();
  auto channel = grpc::CreateChannel(agent, grpc::InsecureChannelCredentials());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto stub = v1::Agent::NewStub(channel);
      for (int i = 0; i < 200; ++i) {
        grpc::ClientContext context;
        context.set_deadline(
            absl::ToChronoTime(absl::Now() + absl::Microseconds((i * 53 + t * 7) % 3000)));
        v1::ExecRequest request;
        request.set_run(i % 2 ? "runs/none" : "runs/flood");
        request.set_token("guess");
        request.add_argv("orted");
        auto reader = stub->Exec(&context, request);
        v1::ExecOutput output;
        while (reader->Read(&output)) {
        }
        (void)reader->Finish();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(workers_[0]->Alive()) << workers_[0]->log();
  absl::SleepFor(absl::Seconds(1));  // let the caller's Exec bucket refill
  const v1::Run run = WaitFinal(CreateRun(TwoRankSpec()).name());
  EXPECT_EQ(run.state(), v1::SUCCEEDED) << run.error() << "\n" << Logs();
  EXPECT_TRUE(workers_[0]->Alive());
}

TEST_F(IdentityAttackTest, ForeignWorkerCannotInjectIntoAnotherWorkersRun) {
  RogueWorker mallory(gateway_.get(), "mallory", "127.0.0.1:9");
  ASSERT_TRUE(WaitFor([&] { return mallory.registered(); }, absl::Seconds(10)));
  const v1::Run created = CreateRun(TwoRankSpec());
  ASSERT_NE(created.launcher(), "workers/mallory");
  // A watcher of the run, from now to its end.
  grpc::ClientContext watch_context;
  Authorize(&watch_context);
  watch_context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(120)));
  v1::WatchRunRequest watch_request;
  watch_request.set_name(created.name());
  auto watch = api_->WatchRun(&watch_context, watch_request);
  std::vector<v1::RunEvent> events;
  std::thread watcher([&] {
    v1::RunEvent event;
    while (watch->Read(&event)) events.push_back(event);
  });
  auto inject = [&] {
    v1::WorkerMessage log;
    log.mutable_log()->set_run(created.name());
    log.mutable_log()->mutable_line()->set_text("INJECTED-LOG");
    mallory.Send(log);
    v1::WorkerMessage result;
    result.mutable_result()->set_run(created.name());
    result.mutable_result()->mutable_result()->set_sequence(0);
    result.mutable_result()->mutable_result()->set_bytes(4242);
    result.mutable_result()->mutable_result()->set_operation("INJECTED");
    mallory.Send(result);
    v1::WorkerMessage status;
    status.mutable_run_status()->set_run(created.name());
    status.mutable_run_status()->set_state(v1::FAILED);
    status.mutable_run_status()->set_error("INJECTED-STATUS");
    mallory.Send(status);
  };
  inject();  // while the run is live
  const v1::Run run = WaitFinal(created.name());
  inject();  // and once it is stored
  absl::SleepFor(absl::Milliseconds(500));
  watcher.join();
  EXPECT_EQ(run.state(), v1::SUCCEEDED) << run.error() << "\n" << Logs();
  EXPECT_EQ(run.error().find("INJECTED"), std::string::npos);
  const v1::GetRunResultsResponse stored = Results(created.name());
  EXPECT_EQ(stored.results_size(), 2);
  for (const v1::SizeResult& result : stored.results()) {
    EXPECT_NE(result.bytes(), 4242u);
    EXPECT_NE(result.operation(), "INJECTED");
  }
  for (const v1::RunEvent& event : events) {
    EXPECT_EQ(event.DebugString().find("INJECTED"), std::string::npos) << event.DebugString();
  }
  for (const v1::CoordinatorMessage& message : mallory.received()) {
    EXPECT_FALSE(message.has_ack() && message.ack().run() == created.name());
    EXPECT_FALSE(message.has_assignment());
    EXPECT_FALSE(message.has_run_token());
  }
  EXPECT_NE(coordinator_->log().find("refused a message from workers/mallory"), std::string::npos);
}

// Workers whose Agent serves mutual TLS (one CA; a certificate for
// 127.0.0.1 that both workers use).
class AgentTlsAttackTest : public IdentityAttackTest {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/collbench-identity-certs-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    certs_ = pattern;
    const std::string in = absl::StrCat("cd '", certs_, "' && ");
    const bool made =
        std::system((in + "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem "
                          "-days 2 -subj /CN=test-ca >/dev/null 2>&1")
                        .c_str()) == 0 &&
        std::system((in + "printf 'subjectAltName=IP:127.0.0.1\\n' > san.ext && "
                          "openssl req -newkey rsa:2048 -nodes -keyout worker.key -out "
                          "worker.csr -subj /CN=worker >/dev/null 2>&1 && openssl x509 -req -in "
                          "worker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out worker.pem "
                          "-days 2 -extfile san.ext >/dev/null 2>&1")
                        .c_str()) == 0;
    if (!made) GTEST_SKIP() << "openssl cannot make test certificates";
    IdentityAttackTest::SetUp();
  }
  void TearDown() override {
    IdentityAttackTest::TearDown();
    std::filesystem::remove_all(certs_);
  }
  std::vector<std::string> WorkerFlags() override {
    return {"--tls-cert", certs_ + "/worker.pem", "--tls-key", certs_ + "/worker.key",
            "--tls-client-ca", certs_ + "/ca.pem"};
  }

  std::string certs_;
};

TEST_F(AgentTlsAttackTest, CallersWithoutACertificateGetNothingAndRunsGoOverMutualTls) {
  const std::string agent = Worker("workers/w1")->agent_address();
  std::string ca;
  {
    std::ifstream in(certs_ + "/ca.pem");
    std::stringstream text;
    text << in.rdbuf();
    ca = text.str();
  }
  grpc::SslCredentialsOptions server_only;
  server_only.pem_root_certs = ca;
  for (const auto& credentials :
       {grpc::InsecureChannelCredentials(), grpc::SslCredentials(server_only)}) {
    auto stub = v1::Agent::NewStub(grpc::CreateChannel(agent, credentials));
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    v1::ExecRequest request;
    request.set_run("runs/none");
    request.add_argv("orted");
    auto reader = stub->Exec(&context, request);
    v1::ExecOutput output;
    EXPECT_FALSE(reader->Read(&output));
    const grpc::Status status = reader->Finish();
    // Refused by the handshake, before the service could say anything.
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  }
  const v1::Run run = WaitFinal(CreateRun(TwoRankSpec()).name());
  EXPECT_EQ(run.state(), v1::SUCCEEDED) << run.error() << "\n" << Logs();
}

}  // namespace
}  // namespace collbench
