// SPDX-License-Identifier: Apache-2.0
#include "kube/kube_config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace collbench::kube {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(what, ": cannot read '", path, "'"));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool Present(const YAML::Node& node) { return node.IsDefined() && !node.IsNull(); }

// The entry named `name` of a kubeconfig list (clusters, users, contexts):
// its inner map (`cluster`, `user` or `context`).
YAML::Node Named(const YAML::Node& list, const std::string& name, const char* inner) {
  if (!list.IsDefined() || !list.IsSequence()) return YAML::Node();
  for (const YAML::Node& entry : list) {
    if (entry["name"] && entry["name"].as<std::string>() == name) return entry[inner];
  }
  return YAML::Node();
}

std::string Text(const YAML::Node& map, const char* key) {
  return map && map[key] && map[key].IsScalar() ? map[key].as<std::string>() : std::string();
}

// A file named in the kubeconfig, relative to its folder when not absolute.
std::string Resolve(const std::string& kubeconfig, const std::string& file) {
  if (file.empty() || std::filesystem::path(file).is_absolute()) return file;
  return (std::filesystem::path(kubeconfig).parent_path() / file).string();
}

// `data` (base64) or the file `file`, whichever the entry has; "" neither.
absl::StatusOr<std::string> DataOrFile(const std::string& kubeconfig, const YAML::Node& map,
                                       const char* data_key, const char* file_key,
                                       const std::string& where) {
  if (const std::string data = Text(map, data_key); !data.empty()) {
    std::string decoded;
    if (!absl::Base64Unescape(data, &decoded)) {
      return absl::InvalidArgumentError(
          absl::StrCat(kubeconfig, ": ", where, ".", data_key, " is not base64"));
    }
    return decoded;
  }
  if (const std::string file = Text(map, file_key); !file.empty()) {
    return ReadFile(Resolve(kubeconfig, file),
                    absl::StrCat(kubeconfig, ": ", where, ".", file_key));
  }
  return std::string();
}

absl::StatusOr<KubeConfig> FromYaml(const std::string& path, const YAML::Node& root,
                                    const std::string& wanted_context) {
  auto invalid = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", why));
  };
  const std::string context_name =
      wanted_context.empty() ? Text(root, "current-context") : wanted_context;
  if (context_name.empty()) return invalid("no current-context, and none was named");
  const YAML::Node context = Named(root["contexts"], context_name, "context");
  if (!Present(context)) return invalid(absl::StrCat("no context '", context_name, "'"));
  const std::string cluster_name = Text(context, "cluster");
  const std::string user_name = Text(context, "user");
  const YAML::Node cluster = Named(root["clusters"], cluster_name, "cluster");
  if (!Present(cluster))
    return invalid(absl::StrCat("context '", context_name, "': no cluster '", cluster_name, "'"));
  KubeConfig config;
  config.server = std::string(absl::StripSuffix(Text(cluster, "server"), "/"));
  if (config.server.empty())
    return invalid(absl::StrCat("cluster '", cluster_name, "' has no server"));
  if (!absl::StartsWith(config.server, "https://") && !absl::StartsWith(config.server, "http://")) {
    return invalid(absl::StrCat("cluster '", cluster_name, "': server '", config.server,
                                "' is not an http(s) URL"));
  }
  if (!Text(cluster, "proxy-url").empty()) {
    return invalid(absl::StrCat("cluster '", cluster_name, "': proxy-url is not supported"));
  }
  config.insecure_skip_tls_verify = Text(cluster, "insecure-skip-tls-verify") == "true";
  absl::StatusOr<std::string> ca =
      DataOrFile(path, cluster, "certificate-authority-data", "certificate-authority",
                 absl::StrCat("cluster '", cluster_name, "'"));
  if (!ca.ok()) return ca.status();
  config.ca_pem = *std::move(ca);
  config.namespace_name = Text(context, "namespace");
  config.user = user_name;
  const YAML::Node user = Named(root["users"], user_name, "user");
  if (!user_name.empty() && !Present(user)) {
    return invalid(absl::StrCat("context '", context_name, "': no user '", user_name, "'"));
  }
  if (Present(user)) {
    for (const char* plugin : {"exec", "auth-provider"}) {
      if (Present(user[plugin])) {
        return invalid(absl::StrCat("user '", user_name, "': ", plugin,
                                    " credentials are not supported; give a token or a client "
                                    "certificate"));
      }
    }
    const std::string where = absl::StrCat("user '", user_name, "'");
    config.token = Text(user, "token");
    config.token_file = Resolve(path, Text(user, "tokenFile"));
    absl::StatusOr<std::string> cert =
        DataOrFile(path, user, "client-certificate-data", "client-certificate", where);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key =
        DataOrFile(path, user, "client-key-data", "client-key", where);
    if (!key.ok()) return key.status();
    config.client_cert_pem = *std::move(cert);
    config.client_key_pem = *std::move(key);
    if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
      return invalid(absl::StrCat(where,
                                  ": a client certificate needs its key, and a key its "
                                  "certificate"));
    }
  }
  return config;
}

}  // namespace

absl::StatusOr<KubeConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  absl::StatusOr<std::string> text = ReadFile(path, "--kubeconfig");
  if (!text.ok()) return text.status();
  return ParseKubeconfig(*text, path, context);
}

absl::StatusOr<KubeConfig> ParseKubeconfig(const std::string& text, const std::string& path,
                                           const std::string& context) {
  try {
    return FromYaml(path, YAML::Load(text), context);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a kubeconfig: ", e.what()));
  }
}

absl::StatusOr<KubeConfig> InClusterConfig(const std::string& account_dir,
                                           const std::function<const char*(const char*)>& getenv) {
  auto env = [&](const char* name) -> std::string {
    const char* value = getenv ? getenv(name) : std::getenv(name);
    return value == nullptr ? "" : value;
  };
  const std::string host = env("KUBERNETES_SERVICE_HOST");
  const std::string port = env("KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    return absl::FailedPreconditionError(
        "not in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set; give "
        "--kubeconfig FILE");
  }
  KubeConfig config;
  // An IPv6 service address goes in brackets.
  config.server = absl::StrCat("https://", absl::StrContains(host, ':') ? "[" : "", host,
                               absl::StrContains(host, ':') ? "]" : "", ":", port);
  config.token_file = absl::StrCat(account_dir, "/token");
  if (!ReadFile(config.token_file, "service account").ok()) {
    return absl::FailedPreconditionError(absl::StrCat("in a pod, but no service account token at ",
                                                      config.token_file,
                                                      " (automountServiceAccountToken: false?)"));
  }
  absl::StatusOr<std::string> ca =
      ReadFile(absl::StrCat(account_dir, "/ca.crt"), "service account");
  if (!ca.ok()) return ca.status();
  config.ca_pem = *std::move(ca);
  absl::StatusOr<std::string> ns =
      ReadFile(absl::StrCat(account_dir, "/namespace"), "service account");
  if (ns.ok()) config.namespace_name = std::string(absl::StripAsciiWhitespace(*ns));
  config.user = "serviceaccount";
  return config;
}

}  // namespace collbench::kube
