// SPDX-License-Identifier: Apache-2.0
// Kubeconfig files as kubectl reads them (kube/kube_config.h): the current
// context or a named one; CA, certificate and key as files (relative to
// the kubeconfig's folder) or inline base64; a token or a token file; what
// is not supported refused by name; and the in-cluster service account.
#include "kube/kube_config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace collbench::kube {
namespace {

class KubeConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kubeconfig-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    Write("ca.crt", "CA PEM");
    Write("client.crt", "CERT PEM");
    Write("client.key", "KEY PEM");
    Write("token", "file-token\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  std::string dir_;
};

constexpr char kTwoContexts[] = R"(apiVersion: v1
kind: Config
current-context: with-token
clusters:
- name: lab
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority: ca.crt
- name: inline
  cluster:
    server: https://10.0.0.1:443
    certificate-authority-data: Q0EgREFUQQ==
contexts:
- name: with-token
  context: {cluster: lab, user: robot, namespace: collbench}
- name: with-cert
  context: {cluster: inline, user: person}
users:
- name: robot
  user:
    token: abc.def
- name: person
  user:
    client-certificate: client.crt
    client-key: client.key
)";

TEST_F(KubeConfigTest, TheCurrentContextsClusterAndUser) {
  const std::string path = Write("config", kTwoContexts);
  absl::StatusOr<KubeConfig> config = LoadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://127.0.0.1:6443");
  EXPECT_EQ(config->ca_pem, "CA PEM");  // relative to the kubeconfig's folder
  EXPECT_EQ(config->token, "abc.def");
  EXPECT_EQ(config->namespace_name, "collbench");
  EXPECT_TRUE(config->client_cert_pem.empty());
}

TEST_F(KubeConfigTest, ANamedContextWithInlineCaAndCertificateFiles) {
  const std::string path = Write("config", kTwoContexts);
  absl::StatusOr<KubeConfig> config = LoadKubeconfig(path, "with-cert");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.0.0.1:443");
  EXPECT_EQ(config->ca_pem, "CA DATA");
  EXPECT_EQ(config->client_cert_pem, "CERT PEM");
  EXPECT_EQ(config->client_key_pem, "KEY PEM");
  EXPECT_TRUE(config->token.empty());
}

TEST_F(KubeConfigTest, WhatIsMissingOrUnsupportedIsNamed) {
  auto error = [&](const std::string& text, const std::string& context = "") {
    const absl::StatusOr<KubeConfig> config = LoadKubeconfig(Write("bad", text), context);
    return config.ok() ? std::string("ok") : std::string(config.status().message());
  };
  EXPECT_NE(error(kTwoContexts, "nowhere").find("no context 'nowhere'"), std::string::npos);
  EXPECT_NE(error("clusters: []\n").find("no current-context"), std::string::npos);
  EXPECT_NE(error("current-context: a\ncontexts: [{name: a, context: {cluster: x}}]\n")
                .find("no cluster 'x'"),
            std::string::npos);
  EXPECT_NE(error("current-context: a\ncontexts: [{name: a, context: {cluster: c, user: u}}]\n"
                  "clusters: [{name: c, cluster: {server: 'https://h:1'}}]\n"
                  "users: [{name: u, user: {exec: {command: aws}}}]\n")
                .find("exec credentials are not supported"),
            std::string::npos);
  EXPECT_NE(error("current-context: a\ncontexts: [{name: a, context: {cluster: c, user: u}}]\n"
                  "clusters: [{name: c, cluster: {server: 'https://h:1'}}]\n"
                  "users: [{name: u, user: {client-certificate: client.crt}}]\n")
                .find("needs its key"),
            std::string::npos);
  EXPECT_NE(error("current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
                  "clusters: [{name: c, cluster: {server: 'ftp://h'}}]\n")
                .find("not an http(s) URL"),
            std::string::npos);
  EXPECT_NE(error("current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
                  "clusters: [{name: c, cluster: {server: 'https://h', "
                  "certificate-authority: missing.crt}}]\n")
                .find("missing.crt"),
            std::string::npos);
  EXPECT_NE(error("{ not: [yaml").find("not a kubeconfig"), std::string::npos);
  EXPECT_EQ(LoadKubeconfig(dir_ + "/absent").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(KubeConfigTest, ATokenFileIsKeptToBeReadAtEachRequest) {
  const std::string path =
      Write("config",
            "current-context: a\ncontexts: [{name: a, context: {cluster: c, user: u}}]\n"
            "clusters: [{name: c, cluster: {server: 'https://h:1', insecure-skip-tls-verify: "
            "true}}]\nusers: [{name: u, user: {tokenFile: token}}]\n");
  absl::StatusOr<KubeConfig> config = LoadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->token_file, dir_ + "/token");
  EXPECT_TRUE(config->insecure_skip_tls_verify);
}

TEST_F(KubeConfigTest, InClusterFromTheServiceAccountAndTheServiceVariables) {
  Write("namespace", "collbench\n");
  std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "fd00::1"},
                                            {"KUBERNETES_SERVICE_PORT", "443"}};
  auto getenv = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  absl::StatusOr<KubeConfig> config = InClusterConfig(dir_, getenv);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://[fd00::1]:443");
  EXPECT_EQ(config->token_file, dir_ + "/token");
  EXPECT_EQ(config->ca_pem, "CA PEM");
  EXPECT_EQ(config->namespace_name, "collbench");
  env.clear();
  EXPECT_EQ(InClusterConfig(dir_, getenv).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace collbench::kube
