# SPDX-License-Identifier: Apache-2.0
"""The credentials and kubeconfigs of the test Kubernetes API server.

Made with the `openssl` command (EC P-256 keys: quick to make) in the
server's directory:

    ca.crt, ca.key            the CA that signs the others (and that clients trust)
    server.crt, server.key    the server's, for IP 127.0.0.1 and DNS localhost
    client.crt, client.key    a client certificate, CN=collbench-kube
    token                     bearer token of system:serviceaccount:collbench:collbench-kube
    admin-token               bearer token of admin
    serviceaccount/           token, ca.crt, namespace: as a pod's mounted service account
    kubeconfig-admin          admin's token, certificate-authority as a path
    kubeconfig-token          the controller's token, certificate-authority-data inline
    kubeconfig-cert           client-certificate and client-key as paths

The kubeconfigs are written once the server's port is known. Credentials
already in the directory are reused, so a server restarted on the same
directory accepts the clients of the previous one.
"""
import base64
import re
import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ADMIN_USER = "admin"
CONTROLLER_USER = "system:serviceaccount:collbench:collbench-kube"
CERT_USER = "collbench-kube"
SERVICE_ACCOUNT_NAMESPACE = "collbench"
CLUSTER_NAME = "collbench-test"

_OPENSSL_CONFIG = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
[server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""
_NEW_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


@dataclass
class Credentials:
    """Paths of the certificates and keys, and the two bearer tokens."""
    ca_cert: Path
    ca_key: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    token: str
    admin_token: str


def _paths(directory):
    return {name: directory / name for name in
            ("ca.crt", "ca.key", "server.crt", "server.key", "client.crt", "client.key",
             "token", "admin-token")}


def _openssl(*args, cwd):
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {result.stderr.strip()}")


def _signed(directory, name, subject, extensions):
    """A key and a certificate for it signed by the CA (name.key, name.crt)."""
    _openssl("req", "-new", "-config", "openssl.cnf", *_NEW_KEY, "-keyout", f"{name}.key",
             "-out", f"{name}.csr", "-subj", subject, cwd=directory)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-set_serial", "0x" + secrets.token_hex(8), "-days", "3650",
             "-extfile", "openssl.cnf", "-extensions", extensions, "-out", f"{name}.crt", cwd=directory)
    (directory / f"{name}.csr").unlink()


def ensure(directory):
    """The directory's credentials, made unless they are all there."""
    directory = Path(directory).resolve()
    paths = _paths(directory)
    if not all(path.exists() for path in paths.values()):
        if shutil.which("openssl") is None:
            raise RuntimeError("the test API server needs the openssl command")
        (directory / "openssl.cnf").write_text(_OPENSSL_CONFIG)
        _openssl("req", "-x509", "-new", "-config", "openssl.cnf", "-extensions", "ca", *_NEW_KEY,
                 "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650",
                 "-subj", "/CN=collbench-test-ca", cwd=directory)
        _signed(directory, "server", "/CN=localhost", "server")
        _signed(directory, "client", f"/O=collbench/CN={CERT_USER}", "client")
        (directory / "openssl.cnf").unlink()
        paths["token"].write_text(secrets.token_hex(24) + "\n")
        paths["admin-token"].write_text(secrets.token_hex(24) + "\n")
        for key in ("ca.key", "server.key", "client.key", "token", "admin-token"):
            paths[key].chmod(0o600)
    service_account = directory / "serviceaccount"
    service_account.mkdir(exist_ok=True)
    shutil.copyfile(paths["token"], service_account / "token")
    shutil.copyfile(paths["ca.crt"], service_account / "ca.crt")
    (service_account / "namespace").write_text(SERVICE_ACCOUNT_NAMESPACE)
    return Credentials(paths["ca.crt"], paths["ca.key"], paths["server.crt"], paths["server.key"],
                       paths["client.crt"], paths["client.key"],
                       paths["token"].read_text().strip(), paths["admin-token"].read_text().strip())


def _scalar(value):
    """A YAML scalar: plain when that is unambiguous, else double-quoted."""
    if re.fullmatch(r"[A-Za-z0-9_./@=+-][A-Za-z0-9_./:@=+-]*", value) and not re.fullmatch(
            r"[-+.0-9eE]+|true|false|null|yes|no|on|off|~", value, re.IGNORECASE):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _kubeconfig(url, user_name, namespace, cluster_fields, user_fields):
    context = f"{user_name}@{CLUSTER_NAME}"
    lines = ["apiVersion: v1", "clusters:", "- cluster:"]
    lines += [f"    {k}: {_scalar(v)}" for k, v in cluster_fields + [("server", url)]]
    lines += [f"  name: {CLUSTER_NAME}", "contexts:", "- context:", f"    cluster: {CLUSTER_NAME}",
              f"    namespace: {namespace}", f"    user: {_scalar(user_name)}",
              f"  name: {_scalar(context)}", f"current-context: {_scalar(context)}", "kind: Config",
              "preferences: {}", "users:", f"- name: {_scalar(user_name)}", "  user:"]
    lines += [f"    {k}: {_scalar(v)}" for k, v in user_fields]
    return "\n".join(lines) + "\n"


def write_kubeconfigs(directory, url, credentials):
    """kubeconfig-admin, kubeconfig-token and kubeconfig-cert for url."""
    directory = Path(directory).resolve()
    ca_path = [("certificate-authority", str(credentials.ca_cert))]
    ca_data = [("certificate-authority-data",
                base64.b64encode(credentials.ca_cert.read_bytes()).decode())]
    files = {
        "kubeconfig-admin": _kubeconfig(url, ADMIN_USER, "default", ca_path,
                                        [("token", credentials.admin_token)]),
        "kubeconfig-token": _kubeconfig(url, "collbench-kube", SERVICE_ACCOUNT_NAMESPACE, ca_data,
                                        [("token", credentials.token)]),
        "kubeconfig-cert": _kubeconfig(url, CERT_USER, SERVICE_ACCOUNT_NAMESPACE, ca_path,
                                       [("client-certificate", str(credentials.client_cert)),
                                        ("client-key", str(credentials.client_key))]),
    }
    for name, text in files.items():
        path = directory / name
        path.write_text(text)
        path.chmod(0o600)
