// SPDX-License-Identifier: Apache-2.0
// Where a Kubernetes API server is and who we are to it
// (docs/operations/kubernetes.md#the-controller): read from a kubeconfig
// file, as kubectl reads it, or from the service account Kubernetes mounts
// into a pod (in-cluster).
//
// A kubeconfig's current context (or the one named) picks a cluster and a
// user: the server's URL, its CA (a file or inline base64 data), or
// insecure-skip-tls-verify; a bearer token (inline or a tokenFile) or a
// client certificate and key (files or inline data). Relative file names
// are relative to the kubeconfig's folder, as kubectl takes them. What it
// cannot use (exec and auth-provider plugins, a proxy) is refused by name,
// never ignored.
//
// In-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, and the
// account folder's token (re-read by the client, as bound tokens rotate),
// ca.crt and namespace.
#ifndef COLLBENCH_KUBE_KUBE_CONFIG_H_
#define COLLBENCH_KUBE_KUBE_CONFIG_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"

namespace collbench::kube {

inline constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";

struct KubeConfig {
  std::string server;  // https://HOST:PORT, no trailing '/'
  std::string ca_pem;  // empty: the system's CAs
  bool insecure_skip_tls_verify = false;
  std::string token;            // a bearer token, or
  std::string token_file;       // a file holding one, read before each request
  std::string client_cert_pem;  // a client certificate and its key
  std::string client_key_pem;
  std::string namespace_name;  // the context's (or pod's) namespace; "" none given
  std::string user;            // for log lines: the kubeconfig user, or "serviceaccount"
};

// `path`'s context `context` ("" the current one). InvalidArgument naming
// the file and what is missing or malformed; NotFound for a file that is
// not there.
absl::StatusOr<KubeConfig> LoadKubeconfig(const std::string& path, const std::string& context = "");

// The same from the file's text; `path` names it in errors and is where
// relative file names start.
absl::StatusOr<KubeConfig> ParseKubeconfig(const std::string& text, const std::string& path,
                                           const std::string& context = "");

// The pod's service account. `getenv` reads the environment (a test gives
// its own). FailedPrecondition when not in a pod (no KUBERNETES_SERVICE_HOST
// or no token), naming what is missing.
absl::StatusOr<KubeConfig> InClusterConfig(
    const std::string& account_dir = kServiceAccountDir,
    const std::function<const char*(const char*)>& getenv = nullptr);

}  // namespace collbench::kube

#endif  // COLLBENCH_KUBE_KUBE_CONFIG_H_
