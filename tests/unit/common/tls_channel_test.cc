// SPDX-License-Identifier: Apache-2.0
// --tls-ca / --tls-server-name: a client channel reaches a TLS gRPC server
// whose certificate names another host than the one dialled, and bad flags
// are refused naming the flag and the file.
#include "common/tls_channel.h"

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "collbench/v1/agent.grpc.pb.h"
#include "common/grpc_health.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A self-signed certificate for `name` (its own CA) in `dir`; false when
// there is no openssl command.
bool MakeCertificate(const std::string& dir, const std::string& name) {
  const std::string command =
      "mkdir -p " + dir +
      " && openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=" + name +
      " -addext subjectAltName=DNS:" + name + " -keyout " + dir + "/key.pem -out " + dir +
      "/cert.pem >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

// Whether a health check over `channel` is answered (5 s deadline).
absl::Status Check(const std::shared_ptr<grpc::Channel>& channel) {
  return CheckGrpcHealth(channel, "", absl::Seconds(5)).status();
}

TEST(TlsChannelTest, NoCaFileMeansAnInsecureChannel) {
  absl::StatusOr<ChannelSetup> setup = MakeChannelSetup({});
  ASSERT_TRUE(setup.ok()) << setup.status();
  EXPECT_NE(setup->credentials, nullptr);
}

TEST(TlsChannelTest, UnreadableCaFileIsNamed) {
  absl::StatusOr<ChannelSetup> setup = MakeChannelSetup({"/nonexistent/ca.pem", ""});
  ASSERT_FALSE(setup.ok());
  EXPECT_EQ(setup.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(setup.status().message(),
            "--tls-ca: cannot read '/nonexistent/ca.pem': No such file or directory");
}

TEST(TlsChannelTest, CaFileWithoutCertificateIsRefused) {
  const std::string path = ::testing::TempDir() + "/not-a-ca.pem";
  std::ofstream(path) << "hello\n";
  absl::StatusOr<ChannelSetup> setup = MakeChannelSetup({path, ""});
  ASSERT_FALSE(setup.ok());
  EXPECT_EQ(setup.status().message(), "--tls-ca: '" + path + "' holds no PEM certificate");
}

TEST(TlsChannelTest, ServerNameNeedsACaFile) {
  absl::StatusOr<ChannelSetup> setup = MakeChannelSetup({"", "collbench-coordinator"});
  ASSERT_FALSE(setup.ok());
  EXPECT_EQ(setup.status().message(), "--tls-server-name needs --tls-ca FILE");
}

TEST(TlsChannelTest, ClientCertificateFlagsAreNamed) {
  absl::StatusOr<ChannelSetup> alone = MakeChannelSetup({"ca.pem", "", "cert.pem", ""});
  ASSERT_FALSE(alone.ok());
  EXPECT_EQ(alone.status().message(), "--tls-cert and --tls-key go together");
  absl::StatusOr<ChannelSetup> no_ca = MakeChannelSetup({"", "", "cert.pem", "key.pem"});
  ASSERT_FALSE(no_ca.ok());
  EXPECT_EQ(no_ca.status().message(), "--tls-cert needs --tls-ca FILE to verify the server with");
}

TEST(TlsChannelTest, ServerClientCaNeedsACertificateAndKey) {
  auto credentials = MakeServerCredentials({"", "", "ca.pem"});
  ASSERT_FALSE(credentials.ok());
  EXPECT_EQ(credentials.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(credentials.status().message(), "--tls-client-ca needs --tls-cert and --tls-key");
}

TEST(TlsChannelTest, ReachesATlsServerByItsCertificateName) {
  const std::string dir = ::testing::TempDir() + "/tls_channel";
  if (!MakeCertificate(dir, "collbench-coordinator")) {
    GTEST_SKIP() << "no openssl command to make a certificate";
  }
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({Read(dir + "/key.pem"), Read(dir + "/cert.pem")});
  grpc::EnableDefaultHealthCheckService(true);
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::SslServerCredentials(ssl), &port);
  v1::Agent::Service agent;  // any synchronous service, so health checks are served
  builder.RegisterService(&agent);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  const std::string address = "127.0.0.1:" + std::to_string(port);

  // The certificate names collbench-coordinator, the address is 127.0.0.1.
  absl::StatusOr<ChannelSetup> named =
      MakeChannelSetup({dir + "/cert.pem", "collbench-coordinator"});
  ASSERT_TRUE(named.ok()) << named.status();
  const absl::Status named_status = Check(CreateCoordinatorChannel(address, *named));
  EXPECT_TRUE(named_status.ok()) << named_status;

  absl::StatusOr<ChannelSetup> unnamed = MakeChannelSetup({dir + "/cert.pem", ""});
  ASSERT_TRUE(unnamed.ok());
  EXPECT_FALSE(Check(CreateCoordinatorChannel(address, *unnamed)).ok())
      << "the certificate does not name 127.0.0.1";
  absl::StatusOr<ChannelSetup> plain = MakeChannelSetup({});
  EXPECT_FALSE(Check(CreateCoordinatorChannel(address, *plain)).ok())
      << "a TLS listener answers no plain client";
  server->Shutdown();
}

}  // namespace
}  // namespace collbench
