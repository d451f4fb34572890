// SPDX-License-Identifier: Apache-2.0
// The worker's side of identity and the Agent's robustness
// (docs/design/security.md#worker-identity): refused Exec calls with short
// client deadlines never crash the worker, no call waits for a token, Exec is
// rate limited per caller, the Agent serves TLS (mutual with a client CA), the
// worker keeps its secret in a 0600 file and presents it on every connection,
// and the join token is read from a file or once from the environment.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/secrets.h"
#include "common/tls_channel.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/unit/agent/fake_gateway.h"
#include "tests/unit/agent/test_util.h"
#include "worker/agent/agent_tls.h"
#include "worker/agent/exec_service.h"
#include "worker/agent/worker_agent.h"
#include "worker/agent/worker_state.h"

namespace collbench {
namespace {

using ::collbench::testing::Eventually;

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/collbench-agent-identity-XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class AgentServer {
 public:
  AgentServer(ExecManagerOptions options,
              std::shared_ptr<grpc::ServerCredentials> credentials =
                  grpc::InsecureServerCredentials()) {
    runner_ = NewPosixProcessRunner();
    // Exec runs only an MPI daemon: a stand-in orted runs the tests' scripts.
    options.daemons["orted"] = ::collbench::testing::FakeOrtedPath();
    options.base_env = {{"PATH", "/usr/bin:/bin"}};
    manager_ = std::make_unique<ExecManager>(runner_.get(), options);
    service_ = std::make_unique<ExecService>(manager_.get());
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", credentials, &port_);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
  }
  ~AgentServer() {
    manager_->KillAll();
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    server_->Wait();
  }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  ExecManager* manager() { return manager_.get(); }
  bool serving() const { return server_ != nullptr && port_ > 0; }

 private:
  std::unique_ptr<ProcessRunner> runner_;
  std::unique_ptr<ExecManager> manager_;
  std::unique_ptr<ExecService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

v1::ExecRequest Request(const std::string& run, const std::string& token,
                        const std::string& command = "echo ok") {
  v1::ExecRequest request;
  request.set_run(run);
  request.set_token(token);
  // The stand-in orted (test_util.h) runs its `-mca ess` value as a script.
  for (const char* word : {" orted", "-mca", "ess"}) request.add_argv(word);
  request.add_argv(command);
  return request;
}

grpc::Status Call(v1::Agent::Stub* stub, const v1::ExecRequest& request, absl::Duration deadline,
                  std::string* stdout_data = nullptr) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  auto reader = stub->Exec(&context, request);
  v1::ExecOutput output;
  while (reader->Read(&output)) {
    if (stdout_data != nullptr) *stdout_data += output.stdout();
  }
  return reader->Finish();
}

// The crash that worked before: a refused call whose client deadline
// passes finished its reactor twice and aborted the worker. Every refusal
// kind, deadlines from none at all to a few milliseconds, many times.
TEST(ExecRobustnessTest, RefusedCallsWithShortDeadlinesNeverCrashTheAgent) {
  ExecManagerOptions options;
  options.exec_rate = {/*per_second=*/0, /*burst=*/1};  // no limit: every call reaches Start
  AgentServer agent(options);
  ASSERT_TRUE(agent.serving());
  agent.manager()->Allow("runs/known", TokenDigest("right-token"), v1::OPENMPI);
  auto channel = grpc::CreateChannel(agent.address(), grpc::InsecureChannelCredentials());
  auto stub = v1::Agent::NewStub(channel);
  const v1::ExecRequest refused[] = {Request("runs/unknown", "x"),
                                     Request("runs/known", "wrong-token"),
                                     Request("runs/known", "")};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto own = v1::Agent::NewStub(channel);
      for (int i = 0; i < 150; ++i) {
        const absl::Duration deadline = absl::Microseconds((i * 37 + t * 11) % 3000);
        (void)Call(own.get(), refused[i % 3], deadline);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  // Still alive and still serving a good call.
  std::string out;
  const grpc::Status good =
      Call(stub.get(), Request("runs/known", "right-token", "echo still-here"), absl::Seconds(30),
           &out);
  EXPECT_TRUE(good.ok()) << good.error_message();
  EXPECT_EQ(out, "still-here\n");
}

TEST(ExecRobustnessTest, ExecForARunWithoutTokenYetIsUnavailableAtOnce) {
  AgentServer agent(ExecManagerOptions{});
  auto stub =
      v1::Agent::NewStub(grpc::CreateChannel(agent.address(), grpc::InsecureChannelCredentials()));
  const absl::Time start = absl::Now();
  const grpc::Status status = Call(stub.get(), Request("runs/later", "t"), absl::Seconds(30));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));  // no wait for the token
  // Once the token is there the same call runs; once revoked it is refused
  // for good (not retryable).
  agent.manager()->Allow("runs/later", TokenDigest("t"), v1::OPENMPI);
  EXPECT_TRUE(Call(stub.get(), Request("runs/later", "t"), absl::Seconds(30)).ok());
  agent.manager()->Revoke("runs/later");
  EXPECT_EQ(Call(stub.get(), Request("runs/later", "t"), absl::Seconds(30)).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
}

TEST(ExecRobustnessTest, ExecIsRateLimitedPerCaller) {
  ExecManagerOptions options;
  options.exec_rate = {/*per_second=*/0.01, /*burst=*/3};
  AgentServer agent(options);
  auto stub =
      v1::Agent::NewStub(grpc::CreateChannel(agent.address(), grpc::InsecureChannelCredentials()));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Call(stub.get(), Request("runs/x", "t"), absl::Seconds(30)).error_code(),
              grpc::StatusCode::UNAVAILABLE);
  }
  const grpc::Status limited = Call(stub.get(), Request("runs/x", "t"), absl::Seconds(30));
  EXPECT_EQ(limited.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(limited.error_message().find("too many Exec calls"), std::string::npos);
}

// --- Agent TLS ---------------------------------------------------------------

bool Run(const std::string& command) { return std::system(command.c_str()) == 0; }

// A CA, a server certificate for 127.0.0.1 and a client certificate.
bool MakeCertificates(const std::string& dir) {
  const std::string q = absl::StrCat("cd '", dir, "' && ");
  return Run(q + "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem "
                 "-days 2 -subj /CN=test-ca >/dev/null 2>&1") &&
         Run(q + "printf 'subjectAltName=IP:127.0.0.1\\n' > san.ext && "
                 "openssl req -newkey rsa:2048 -nodes -keyout worker.key -out worker.csr "
                 "-subj /CN=worker >/dev/null 2>&1 && "
                 "openssl x509 -req -in worker.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
                 "-out worker.pem -days 2 -extfile san.ext >/dev/null 2>&1");
}

TEST(AgentTlsTest, AgentServesMutualTlsAndTheShimDialsWithTheWorkersCertificate) {
  TempDir dir;
  if (!MakeCertificates(dir.path())) GTEST_SKIP() << "openssl cannot make test certificates";
  AgentTlsOptions tls;
  tls.cert_file = dir.path() + "/worker.pem";
  tls.key_file = dir.path() + "/worker.key";
  tls.client_ca_file = dir.path() + "/ca.pem";
  tls.peer_ca_file = tls.client_ca_file;
  auto credentials = AgentServerCredentials(tls);
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  AgentServer agent(ExecManagerOptions{}, *credentials);
  ASSERT_TRUE(agent.serving());
  agent.manager()->Allow("runs/r", TokenDigest("t"), v1::OPENMPI);

  // Plaintext is refused.
  auto plain =
      v1::Agent::NewStub(grpc::CreateChannel(agent.address(), grpc::InsecureChannelCredentials()));
  EXPECT_EQ(Call(plain.get(), Request("runs/r", "t"), absl::Seconds(5)).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // TLS without a client certificate is refused.
  auto server_only = MakeChannelSetup({tls.peer_ca_file, "", "", ""});
  ASSERT_TRUE(server_only.ok());
  auto anonymous =
      v1::Agent::NewStub(grpc::CreateChannel(agent.address(), server_only->credentials));
  EXPECT_FALSE(Call(anonymous.get(), Request("runs/r", "t"), absl::Seconds(5)).ok());
  // The shim, told the paths through its environment, gets through.
  for (const auto& [key, value] : ShimTlsEnv(tls)) setenv(key.c_str(), value.c_str(), 1);
  auto shim = ShimOptionsFromEnv();
  for (const auto& [key, value] : ShimTlsEnv(tls)) unsetenv(key.c_str());
  ASSERT_TRUE(shim.ok()) << shim.status();
  ASSERT_NE(shim->credentials, nullptr);
  auto mutual = v1::Agent::NewStub(grpc::CreateChannel(agent.address(), shim->credentials));
  std::string out;
  const grpc::Status status =
      Call(mutual.get(), Request("runs/r", "t", "echo over-tls"), absl::Seconds(30), &out);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(out, "over-tls\n");
}

TEST(AgentTlsTest, TlsNeedsAKeyAndACaForPeers) {
  AgentTlsOptions tls;
  tls.cert_file = "/nonexistent.pem";
  EXPECT_FALSE(AgentServerCredentials(tls).ok());
  tls.key_file = "/nonexistent.key";
  EXPECT_FALSE(AgentServerCredentials(tls).ok());  // no CA for peers
  EXPECT_TRUE(ShimTlsEnv(AgentTlsOptions{}).empty());
}

// --- The worker's secret and join token ----------------------------------------

TEST(WorkerStateTest, SecretIsKeptOwnerOnlyAndReadBack) {
  TempDir dir;
  const std::string path = dir.path() + "/state/sub/worker-secret";
  EXPECT_EQ(*ReadWorkerSecret(path), "");  // none yet
  ASSERT_TRUE(WriteWorkerSecret(path, "abc123").ok());
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((dir.path() + "/state").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(*ReadWorkerSecret(path), "abc123");
  ASSERT_TRUE(WriteWorkerSecret(path, "def456").ok());
  EXPECT_EQ(*ReadWorkerSecret(path), "def456");
  // A file others can read was not written by the worker: refused.
  chmod(path.c_str(), 0644);
  EXPECT_FALSE(ReadWorkerSecret(path).ok());
}

TEST(WorkerStateTest, JoinTokenComesFromAFileOrOnceFromTheEnvironment) {
  TempDir dir;
  const std::string file = dir.path() + "/join-token";
  std::ofstream(file) << "  tok-1  \nignored\n";
  setenv(kJoinTokenEnv, "from-env", 1);
  EXPECT_EQ(*ReadJoinToken(file), "tok-1");
  EXPECT_EQ(std::getenv(kJoinTokenEnv), nullptr);  // scrubbed either way
  setenv(kJoinTokenEnv, "from-env", 1);
  EXPECT_EQ(*ReadJoinToken(""), "from-env");
  EXPECT_EQ(std::getenv(kJoinTokenEnv), nullptr);
  EXPECT_EQ(*ReadJoinToken(""), "");
  EXPECT_FALSE(ReadJoinToken(dir.path() + "/missing").ok());
  std::ofstream(dir.path() + "/empty") << "\n";
  EXPECT_FALSE(ReadJoinToken(dir.path() + "/empty").ok());
}


TEST(WorkerSecretTest, WorkerStoresTheIssuedSecretAndPresentsItOnEveryConnection) {
  TempDir dir;
  ::collbench::testing::FakeGateway gateway(/*issue_secrets=*/true);
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&gateway);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<ProcessRunner> runner = NewPosixProcessRunner();
  ExecManager exec(runner.get());
  ResultSpool spool;
  WorkerAgentOptions options;
  options.coordinator = absl::StrCat("127.0.0.1:", port);
  options.worker_id = "w1";
  options.agent_address = "127.0.0.1:1";
  options.secret_file = dir.path() + "/state/" + kWorkerSecretFile;
  options.min_backoff = absl::Milliseconds(20);
  options.max_backoff = absl::Milliseconds(100);
  auto run_agent = [&](int connections) {
    WorkerAgent agent(options, &exec, &spool);
    // Counted before the agent starts: it may register at once.
    const size_t before = gateway.presented().size();
    std::thread thread([&] { agent.Run(); });
    EXPECT_TRUE(Eventually([&] { return agent.connected(); }));
    for (int i = 1; i < connections; ++i) {
      gateway.DropStreams();
      EXPECT_TRUE(Eventually([&] { return gateway.presented().size() >= before + i + 1; }));
      EXPECT_TRUE(Eventually([&] { return agent.connected(); }));
    }
    agent.Stop();
    gateway.DropStreams();
    thread.join();
  };
  run_agent(2);  // first registration, then a reconnect
  EXPECT_EQ(*ReadWorkerSecret(options.secret_file), "secret-1");
  run_agent(1);  // a restarted worker process reads it back
  const std::vector<std::string> presented = gateway.presented();
  ASSERT_GE(presented.size(), 3u);
  EXPECT_EQ(presented[0], "");
  for (size_t i = 1; i < presented.size(); ++i) EXPECT_EQ(presented[i], "secret-1") << i;
  server->Shutdown();
}

}  // namespace
}  // namespace collbench
