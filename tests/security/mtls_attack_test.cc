// SPDX-License-Identifier: Apache-2.0
// Mutual TLS on the coordinator (docs/design/security.md#tls: mutual where certificates
// are given, on every gRPC and HTTP listener), against a real
// collbench-coordinator started with --tls-cert/--tls-key/--tls-client-ca
// on 127.0.0.1. Each attack asserts its effect did not happen:
//   * a caller with the operator token but no client certificate, or one
//     from another CA, creates no run over gRPC or HTTP (counted by a
//     caller with a good certificate), and is refused by the handshake;
//   * a caller with a certificate from the CA is served, and still needs
//     its bearer token (mutual TLS is in addition to tokens);
//   * a worker that presents its certificate registers and goes READY; one
//     dialling TLS without a certificate, or with another CA's, never
//     appears among the workers;
//   * the CLI works with --tls-cert/--tls-key and fails without them;
//   * --tls-client-ca without --tls-cert/--tls-key is refused before the
//     store is created, naming the flags.
// The binaries come from the build (COLLBENCH_*_BIN); needs openssl.
#include <sys/stat.h>

#include <cctype>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collbench/v1/coordinator.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/security/child_process.h"
#include "tests/unit/http/http_test_client.h"

namespace collbench {
namespace {

constexpr char kOperatorToken[] = "op-mtls-test-token";
constexpr char kJoinToken[] = "join-mtls-test-token";

// Who calls: no certificate, one from the coordinator's client CA, or one
// from another CA.
enum class Caller { kNoCertificate, kTrusted, kForeign };

bool Shell(const std::string& command) { return std::system(command.c_str()) == 0; }

// In `dir`: ca.pem (the client CA, which also signs the server), server.pem
// for 127.0.0.1, client.pem and worker.pem from ca.pem, and foreign.pem
// from other-ca.pem, a CA the coordinator does not know. Each with its .key.
bool MakeCertificates(const std::string& dir) {
  const std::string in = absl::StrCat("cd '", dir, "' && ");
  auto ca = [&](const std::string& name) {
    return Shell(in + "openssl req -x509 -newkey rsa:2048 -nodes -keyout " + name + ".key -out " +
                 name + ".pem -days 2 -subj /CN=" + name + " >/dev/null 2>&1");
  };
  auto leaf = [&](const std::string& name, const std::string& issuer) {
    return Shell(in + "openssl req -newkey rsa:2048 -nodes -keyout " + name + ".key -out " + name +
                 ".csr -subj /CN=" + name + " >/dev/null 2>&1 && openssl x509 -req -in " + name +
                 ".csr -CA " + issuer + ".pem -CAkey " + issuer + ".key -CAcreateserial -out " +
                 name +
                 ".pem -days 2 -extfile san.ext "
                 ">/dev/null 2>&1");
  };
  return Shell(in + "printf 'subjectAltName=IP:127.0.0.1\\n' > san.ext") && ca("ca") &&
         ca("other-ca") && leaf("server", "ca") && leaf("client", "ca") && leaf("worker", "ca") &&
         leaf("foreign", "other-ca");
}

// The port after `marker` in `log`, 0 when not there yet.
int PortAfter(const std::string& log, const std::string& marker) {
  const size_t at = log.find(marker);
  if (at == std::string::npos) return 0;
  size_t end = at + marker.size();
  while (end < log.size() && std::isdigit(static_cast<unsigned char>(log[end]))) ++end;
  int port = 0;
  return absl::SimpleAtoi(log.substr(at + marker.size(), end - at - marker.size()), &port) ? port
                                                                                           : 0;
}

class MtlsAttackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A refused handshake closes the socket under the client's write,
    // which would end the test with SIGPIPE instead of a failed request.
    signal(SIGPIPE, SIG_IGN);
    char pattern[] = "/tmp/collbench-mtls-attack-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    if (!MakeCertificates(dir_)) GTEST_SKIP() << "openssl cannot make test certificates";
    std::ofstream(dir_ + "/tokens")
        << "operator " << kOperatorToken << "\nworker " << kJoinToken << "\n";
    std::ofstream(dir_ + "/join") << kJoinToken << "\n";
    std::ofstream(dir_ + "/op-token") << kOperatorToken << "\n";
    for (const char* file : {"/tokens", "/join", "/op-token"}) chmod((dir_ + file).c_str(), 0600);
    coordinator_ = std::make_unique<Child>(
        std::vector<std::string>{COLLBENCH_COORDINATOR_BIN, "--grpc-listen", "127.0.0.1:0",
                                 "--http-listen", "127.0.0.1:0", "--store", dir_ + "/store.db",
                                 "--tokens", dir_ + "/tokens", "--tls-cert", Pem("server"),
                                 "--tls-key", Key("server"), "--tls-client-ca", Pem("ca")},
        dir_ + "/coordinator.log");
    ASSERT_TRUE(WaitFor(
        [&] {
          const std::string log = coordinator_->log();
          grpc_port_ = PortAfter(log, "serving gRPC on port ");
          http_port_ = PortAfter(log, "serving HTTP (REST, /metrics) on port ");
          return grpc_port_ != 0 && http_port_ != 0;
        },
        absl::Seconds(20)))
        << coordinator_->log();
    grpc_address_ = absl::StrCat("127.0.0.1:", grpc_port_);
  }

  void TearDown() override {
    workers_.clear();
    coordinator_.reset();
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  std::string Pem(const std::string& name) const { return dir_ + "/" + name + ".pem"; }
  std::string Key(const std::string& name) const { return dir_ + "/" + name + ".key"; }

  std::unique_ptr<v1::Coordinator::Stub> Api(Caller caller) const {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ReadFile(Pem("ca"));
    if (caller != Caller::kNoCertificate) {
      const std::string name = caller == Caller::kTrusted ? "client" : "foreign";
      ssl.pem_cert_chain = ReadFile(Pem(name));
      ssl.pem_private_key = ReadFile(Key(name));
    }
    return v1::Coordinator::NewStub(grpc::CreateChannel(grpc_address_, grpc::SslCredentials(ssl)));
  }

  std::unique_ptr<test_http::SSLClient> Http(Caller caller) const {
    std::unique_ptr<test_http::SSLClient> client;
    if (caller == Caller::kNoCertificate) {
      client = std::make_unique<test_http::SSLClient>("127.0.0.1", http_port_);
    } else {
      const std::string name = caller == Caller::kTrusted ? "client" : "foreign";
      client = std::make_unique<test_http::SSLClient>("127.0.0.1", http_port_, Pem(name), Key(name));
    }
    client->set_ca_cert_path(Pem("ca").c_str());
    client->enable_server_certificate_verification(true);
    client->set_connection_timeout(5, 0);
    client->set_read_timeout(5, 0);
    return client;
  }

  static void Authorize(grpc::ClientContext* context, bool with_token = true) {
    if (with_token) {
      context->AddMetadata("authorization", absl::StrCat("Bearer ", kOperatorToken));
    }
    context->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  }

  static grpc::Status CreateRun(v1::Coordinator::Stub* api, bool with_token = true) {
    grpc::ClientContext context;
    Authorize(&context, with_token);
    v1::CreateRunRequest request;
    request.mutable_spec()->set_operation("allreduce");
    request.mutable_spec()->set_ranks(1);
    request.mutable_spec()->add_sizes_bytes(8);
    v1::Run run;
    return api->CreateRun(&context, request, &run);
  }

  // The runs the coordinator holds, asked with a trusted certificate.
  int RunCount() const {
    grpc::ClientContext context;
    Authorize(&context);
    v1::ListRunsRequest request;
    request.set_page_size(1000);
    v1::ListRunsResponse response;
    const grpc::Status status = Api(Caller::kTrusted)->ListRuns(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.runs_size();
  }

  // The worker's state name, or "" when the coordinator does not know it.
  std::string WorkerState(const std::string& name) const {
    grpc::ClientContext context;
    Authorize(&context);
    v1::GetWorkerRequest request;
    request.set_name(name);
    v1::Worker worker;
    if (!Api(Caller::kTrusted)->GetWorker(&context, request, &worker).ok()) return "";
    return v1::WorkerState_Name(worker.state());
  }

  // A worker dialling the coordinator over TLS, presenting `cert` (its
  // Agent certificate) when not empty.
  void StartWorker(const std::string& name, const std::string& cert) {
    std::filesystem::create_directories(dir_ + "/" + name);
    std::vector<std::string> argv = {COLLBENCH_WORKER_BIN,
                                     "--coordinator",
                                     grpc_address_,
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--name",
                                     name,
                                     "--slots",
                                     "1",
                                     "--work-dir",
                                     dir_ + "/" + name,
                                     "--join-token-file",
                                     dir_ + "/join",
                                     "--tls-ca",
                                     Pem("ca")};
    if (!cert.empty()) {
      for (const std::string& flag :
           {std::string("--tls-cert"), Pem(cert), std::string("--tls-key"), Key(cert),
            std::string("--tls-client-ca"), Pem("ca")}) {
        argv.push_back(flag);
      }
    }
    workers_.push_back(std::make_unique<Child>(argv, dir_ + "/" + name + ".log"));
  }

  // The CLI's exit code for `collbench ... workers` with `tls_flags`.
  int CliWorkers(const std::vector<std::string>& tls_flags, std::string* out) {
    std::vector<std::string> argv = {COLLBENCH_CLI_BIN, "--coordinator",    grpc_address_,
                                     "--token-file",    dir_ + "/op-token", "--tls-ca",
                                     Pem("ca")};
    argv.insert(argv.end(), tls_flags.begin(), tls_flags.end());
    argv.push_back("workers");
    const std::string log = dir_ + "/cli-" + std::to_string(cli_calls_++) + ".log";
    Child cli(argv, log);
    const int code = cli.ExitCode(absl::Seconds(30));
    *out = ReadFile(log);
    return code;
  }

  std::string Logs() const {
    std::string all = "coordinator:\n" + coordinator_->log();
    for (const auto& w : workers_) all += "\nworker:\n" + w->log();
    return all;
  }

  std::string dir_;
  int grpc_port_ = 0;
  int http_port_ = 0;
  int cli_calls_ = 0;
  std::string grpc_address_;
  std::unique_ptr<Child> coordinator_;
  std::vector<std::unique_ptr<Child>> workers_;
};

TEST_F(MtlsAttackTest, GrpcCreatesNothingForCallersWithoutACertificateFromTheCa) {
  for (Caller caller : {Caller::kNoCertificate, Caller::kForeign}) {
    const grpc::Status refused = CreateRun(Api(caller).get());
    // The handshake fails: the service never sees the call.
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
  }
  EXPECT_EQ(RunCount(), 0) << "a call without a trusted certificate created a run";

  // With a certificate from the CA: served, and the bearer token still counts.
  const grpc::Status no_token = CreateRun(Api(Caller::kTrusted).get(), /*with_token=*/false);
  EXPECT_EQ(no_token.error_code(), grpc::StatusCode::UNAUTHENTICATED) << no_token.error_message();
  EXPECT_EQ(RunCount(), 0);
  const grpc::Status created = CreateRun(Api(Caller::kTrusted).get());
  EXPECT_TRUE(created.ok()) << created.error_message();
  EXPECT_EQ(RunCount(), 1);
}

TEST_F(MtlsAttackTest, HttpCreatesNothingForCallersWithoutACertificateFromTheCa) {
  const test_http::Headers auth = {{"Authorization", absl::StrCat("Bearer ", kOperatorToken)}};
  const std::string body =
      R"({"spec": {"operation": "allreduce", "ranks": 1, "sizesBytes": ["8"]}})";
  for (Caller caller : {Caller::kNoCertificate, Caller::kForeign}) {
    std::unique_ptr<test_http::SSLClient> http = Http(caller);
    test_http::Result created = http->Post("/v1/runs", auth, body, "application/json");
    // Refused by the handshake: no HTTP answer at all, not even a 401.
    EXPECT_FALSE(created) << "HTTP " << created->status << ": " << created->body;
    test_http::Result health = http->Get("/healthz");
    EXPECT_FALSE(health) << "HTTP " << health->status;
  }
  EXPECT_EQ(RunCount(), 0) << "a request without a trusted certificate created a run";

  std::unique_ptr<test_http::SSLClient> trusted = Http(Caller::kTrusted);
  test_http::Result health = trusted->Get("/healthz");
  ASSERT_TRUE(health) << test_http::to_string(health.error()) << "\n" << Logs();
  EXPECT_EQ(health->status, 200);
  test_http::Result no_token = trusted->Post("/v1/runs", body, "application/json");
  ASSERT_TRUE(no_token);
  EXPECT_EQ(no_token->status, 401) << no_token->body;
  EXPECT_EQ(RunCount(), 0);
  test_http::Result created = trusted->Post("/v1/runs", auth, body, "application/json");
  ASSERT_TRUE(created);
  EXPECT_EQ(created->status, 200) << created->body;
  EXPECT_EQ(RunCount(), 1);
}

TEST_F(MtlsAttackTest, OnlyAWorkerWithACertificateFromTheCaRegisters) {
  StartWorker("certified", "worker");
  StartWorker("anonymous", "");
  StartWorker("foreign", "foreign");
  EXPECT_TRUE(
      WaitFor([&] { return WorkerState("workers/certified") == "READY"; }, absl::Seconds(30)))
      << Logs();
  // The others have had as long, and a few more seconds of retries.
  absl::SleepFor(absl::Seconds(3));
  EXPECT_EQ(WorkerState("workers/anonymous"), "") << Logs();
  EXPECT_EQ(WorkerState("workers/foreign"), "") << Logs();
}

TEST_F(MtlsAttackTest, CliPresentsItsCertificate) {
  StartWorker("w1", "worker");
  ASSERT_TRUE(WaitFor([&] { return WorkerState("workers/w1") == "READY"; }, absl::Seconds(30)))
      << Logs();
  std::string out;
  EXPECT_EQ(CliWorkers({"--tls-cert", Pem("client"), "--tls-key", Key("client")}, &out), 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "w1")) << out;
  EXPECT_NE(CliWorkers({}, &out), 0) << out;
  EXPECT_FALSE(absl::StrContains(out, "w1")) << out;
  EXPECT_NE(CliWorkers({"--tls-cert", Pem("foreign"), "--tls-key", Key("foreign")}, &out), 0)
      << out;
  EXPECT_FALSE(absl::StrContains(out, "w1")) << out;
  EXPECT_EQ(CliWorkers({"--tls-cert", Pem("client")}, &out), 2) << out;
  EXPECT_TRUE(absl::StrContains(out, "--tls-cert and --tls-key go together")) << out;
}

TEST(MtlsFlagsTest, ClientCaWithoutACertificateIsRefusedBeforeTheStore) {
  char pattern[] = "/tmp/collbench-mtls-flags-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  std::ofstream(dir + "/ca.pem") << "-----BEGIN CERTIFICATE-----\n";
  Child coordinator({COLLBENCH_COORDINATOR_BIN, "--grpc-listen", "127.0.0.1:0", "--store",
                     dir + "/store.db", "--tls-client-ca", dir + "/ca.pem"},
                    dir + "/coordinator.log");
  EXPECT_EQ(coordinator.ExitCode(absl::Seconds(20)), 2) << coordinator.log();
  EXPECT_TRUE(
      absl::StrContains(coordinator.log(), "--tls-client-ca needs --tls-cert and --tls-key"))
      << coordinator.log();
  EXPECT_FALSE(std::filesystem::exists(dir + "/store.db"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace collbench
