#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Kubernetes manifests of deploy/kubernetes: render, validate, lint.

For the base, every overlay under deploy/kubernetes/overlays (and that the
overlays of OVERLAYS are there), the pods of the container test
(tests/containers/pods) and one kustomization that lists every component
(they must compose), it:

  - renders with plain `kubectl kustomize` (what `kubectl apply -k` builds:
    no flag, so every file a kustomization loads is inside its own tree);
  - checks what each rendering must say (manifest_properties.py): the
    disruption budgets, memory limits, hardening, token files and the
    launcher everywhere, and each overlay's feature (gpu, gpu-multi, rdma,
    ingress, node-selection, monitoring) there and nowhere else;
  - validates every rendered document offline against the schema of its
    apiVersion and kind (deploy/kubernetes/validate: kubernetes-models and
    @kubernetes-models/prometheus-operator, pinned by package-lock.json and
    installed with `npm ci` into the build directory): unknown kinds and
    unknown fields fail;
  - lints the rendered YAML with the repository's .yamllint (line length
    off: the dashboards' JSON is embedded as it is);
  - checks every container's command and args: it runs a program of
    PROGRAMS under the image's init, in that program's image; each --flag
    is one the program's --help lists (collbench-coordinator;
    collbench-worker, whose --help collbench-launcher shares, being the
    same binary called by another name; collbench-kube); each $(VAR) is defined by the
    container's env or the ConfigMaps it loads, since Kubernetes leaves an
    undefined one as literal text.

Once: yamllint --strict on the sources (deploy/kubernetes); the
PrometheusRule's expressions through `promtool check rules` (when Debian's
prometheus is installed) and their metric names against the coordinator's
(server/metrics/); the alerts' unit tests (verdict_alerts_test.yaml) through
`promtool test rules` on the PrometheusRule's groups, where every alert a
case names must exist and every alert of TESTED_GROUPS must have a case
where it fires and one where it does not; and the validator itself on
documents with an unknown field, a wrong type and an unknown kind, which it
must refuse.

    manifests_test.py --build-dir DIR --coordinator BIN --worker BIN --kube BIN [-v]

Without kubectl, node or npm it exits 77 (ctest: skipped), saying which.
Exit code: 0 passed, 1 failed, 2 bad usage, 77 skipped.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

import manifest_properties
from manifest_properties import Failure

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
KUBERNETES = os.path.join(ROOT, "deploy", "kubernetes")
VALIDATE = os.path.join(KUBERNETES, "validate")
SKIP = 77
# Each program a container may run: the binary whose --help lists its flags
# (--coordinator or --worker) and the image it comes in (by name prefix:
# collbench-worker-gpu is a collbench-worker too).
PROGRAMS = {
    "collbench-coordinator": ("coordinator", "collbench-coordinator"),
    "collbench-worker": ("worker", "collbench-worker"),
    # The worker's binary called as collbench-launcher (a link in its image).
    "collbench-launcher": ("worker", "collbench-worker"),
    # The controller, in the coordinator's image.
    "collbench-kube": ("kube", "collbench-coordinator"),
}
DASHBOARDS = os.path.join(ROOT, "dashboards")
PROMETHEUS_RULE = os.path.join(KUBERNETES, "components", "monitoring", "prometheus-rule.yaml")
ALERT_TESTS = os.path.join(HERE, "verdict_alerts_test.yaml")
# Rule groups whose every alert the unit tests must show firing and quiet.
TESTED_GROUPS = {"collbench-verdicts"}
# Each overlay's features (manifest_properties.py); every one must exist.
OVERLAYS = {
    "gpu": {"gpu"},
    "gpu-multi": {"gpu", "gpu-multi"},
    "host-network": set(),
    "ingress": {"ingress"},
    "kube-controller": {"kube-controller"},
    "monitoring": {"monitoring"},
    "node-selection": {"node-selection"},
    "node-topology": {"node-topology"},
    "rdma": {"gpu", "rdma"},
    "shared-ipc": set(),
    "tls": set(),
}
ALL_COMPONENTS = {"gpu", "gpu-multi", "ingress", "kube-controller", "monitoring", "node-selection",
                  "node-topology", "rdma"}


def run(argv, stdin=None, cwd=None, env=None):
    return subprocess.run(argv, input=stdin, cwd=cwd, env=env, capture_output=True, text=True)


def must(argv, what, **kwargs):
    result = run(argv, **kwargs)
    if result.returncode != 0:
        raise Failure(f"{what}: exit {result.returncode}\n{result.stdout}{result.stderr}")
    return result


def install_validator(build_dir):
    """npm ci of the pinned validator into the build directory, once per lockfile."""
    target = os.path.join(build_dir, "deploy-validate")
    lock = os.path.join(VALIDATE, "package-lock.json")
    stamp = os.path.join(target, "node_modules", ".package-lock.json")
    if os.path.exists(stamp) and os.path.getmtime(stamp) >= os.path.getmtime(lock):
        return os.path.join(target, "node_modules")
    os.makedirs(target, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy2(os.path.join(VALIDATE, name), target)
    must(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], "npm ci", cwd=target)
    return os.path.join(target, "node_modules")


class Validator:
    def __init__(self, node_modules):
        self.env = dict(os.environ, NODE_PATH=node_modules)

    def __call__(self, text):
        return run(["node", os.path.join(VALIDATE, "validate.js"), "-"], stdin=text, env=self.env)


def render(directory):
    return must(["kubectl", "kustomize", directory],
                f"kubectl kustomize {os.path.relpath(directory, ROOT)}").stdout


def lint_rendered(text, what):
    config = "{extends: %s, rules: {line-length: disable}}" % os.path.join(ROOT, ".yamllint")
    must(["yamllint", "--strict", "-f", "parsable", "-d", config, "-"], f"yamllint of {what}",
         stdin=text)


def program_flags(binary):
    result = run([binary, "--help"])
    if result.returncode != 0:
        raise Failure(f"{binary} --help: exit {result.returncode}\n{result.stderr}")
    return set(re.findall(r"^\s+--([a-z0-9-]+)", result.stdout, re.MULTILINE))


def check_containers(docs, flags, what):
    """Each container runs a known program under the image's init, in that
    program's image; every --flag is the program's; every $(VAR) in args is
    defined."""
    config_maps = {d["metadata"]["name"]: d.get("data", {}) for d in docs
                   if d.get("kind") == "ConfigMap"}
    checked = 0
    for doc in docs:
        spec = doc.get("spec", {}).get("template", {}).get("spec")
        if not spec:
            continue
        for container in spec.get("containers", []):
            workload = f"{what}: {doc['kind']}/{doc['metadata']['name']}"
            command = container.get("command", [])
            if command[:2] != ["/usr/bin/tini", "--"] or len(command) != 3 or \
                    command[2] not in PROGRAMS:
                raise Failure(f"{workload}: command {command} is not the image's init running "
                              f"one of {sorted(PROGRAMS)}")
            program = command[2]
            image = container["image"].rsplit("/", 1)[-1].split(":")[0].split("@")[0]
            if not image.startswith(PROGRAMS[program][1]):
                raise Failure(f"{workload}: image {container['image']} does not have {program} "
                              f"(it is in {PROGRAMS[program][1]})")
            defined = {e["name"] for e in container.get("env", [])}
            for source in container.get("envFrom", []):
                name = source.get("configMapRef", {}).get("name")
                if name not in config_maps:
                    raise Failure(f"{what}: envFrom names ConfigMap {name}, which is not rendered")
                defined |= set(config_maps[name])
            for arg in container.get("command", []) + container.get("args", []):
                match = re.match(r"--([a-z0-9-]+)", arg)
                if match and match.group(1) not in flags[program]:
                    raise Failure(f"{what}: {program} has no flag --{match.group(1)} ({arg})")
                for var in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", arg):
                    if var not in defined:
                        raise Failure(f"{what}: {arg}: $({var}) is not defined in the container")
            checked += 1
    if checked == 0:
        raise Failure(f"{what}: no containers rendered")
    return checked


def check_rules(docs, what):
    """The PrometheusRule's PromQL parses and names only exported metrics."""
    rules = [d for d in docs if d.get("kind") == "PrometheusRule"]
    if not rules:
        return []
    exported = set()
    for name in os.listdir(os.path.join(ROOT, "server", "metrics")):
        with open(os.path.join(ROOT, "server", "metrics", name)) as source:
            exported |= set(re.findall(r'"(collbench_[a-z_]+)"', source.read()))
    notes = []
    for rule_doc in rules:
        for group in rule_doc["spec"]["groups"]:
            for rule in group["rules"]:
                for metric in re.findall(r"\bcollbench_[a-z_]+", rule["expr"]):
                    base = re.sub(r"_(bucket|sum|count)$", "", metric)
                    if metric not in exported and base not in exported:
                        raise Failure(f"{what}: alert {rule.get('alert')}: the coordinator "
                                      f"exports no metric {metric}")
        if shutil.which("promtool") is None:
            notes.append("promtool not installed: PromQL syntax not checked")
            continue
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as file:
            yaml.safe_dump(rule_doc["spec"], file)
            file.flush()
            must(["promtool", "check", "rules", file.name], f"{what}: promtool check rules")
    return notes


def check_alert_cases(groups, tests):
    """Every alert a case names exists (a misspelt name would pass its
    "does not fire" cases without testing anything); every alert of
    TESTED_GROUPS has a case where it fires and one where it does not."""
    alerts = {rule["alert"]: group["name"] for group in groups for rule in group["rules"]
              if "alert" in rule}
    cases = [case for test in tests["tests"] for case in test.get("alert_rule_test", [])]
    where = os.path.relpath(ALERT_TESTS, ROOT)
    unknown = sorted({case["alertname"] for case in cases} - set(alerts))
    if unknown:
        raise Failure(f"{where}: {', '.join(unknown)}: no such alert in "
                      f"{os.path.relpath(PROMETHEUS_RULE, ROOT)}")
    for alert in sorted(a for a, group in alerts.items() if group in TESTED_GROUPS):
        expected = [bool(case.get("exp_alerts")) for case in cases if case["alertname"] == alert]
        if True not in expected or False not in expected:
            raise Failure(f"{where}: {alert} needs a case where it fires and one where it "
                          f"does not ({expected.count(True)} firing, "
                          f"{expected.count(False)} quiet)")


def test_alerts():
    """The alerts' promtool unit tests on the PrometheusRule's groups; notes."""
    with open(PROMETHEUS_RULE) as file:
        spec = yaml.safe_load(file)["spec"]
    with open(ALERT_TESTS) as file:
        tests = yaml.safe_load(file)
    check_alert_cases(spec["groups"], tests)
    if shutil.which("promtool") is None:
        return ["promtool not installed: the alerts' unit tests not run"]
    with tempfile.TemporaryDirectory() as directory:
        # promtool reads rule_files relative to the test file: both go here.
        rules = os.path.join(directory, "collbench.rules.yaml")
        with open(rules, "w") as file:
            yaml.safe_dump(spec, file)
        tests["rule_files"] = [rules]
        unit = os.path.join(directory, os.path.basename(ALERT_TESTS))
        with open(unit, "w") as file:
            yaml.safe_dump(tests, file)
        must(["promtool", "test", "rules", unit],
             f"promtool test rules {os.path.relpath(ALERT_TESTS, ROOT)}")
    print(f"ok  alerts: {os.path.relpath(ALERT_TESTS, ROOT)} passed")
    return []


# Documents the validator must refuse, each with a word its message must have.
BAD_DOCUMENTS = [
    ("an unknown field", "runAsNonRot", """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: bad}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      securityContext: {runAsNonRot: true}
      containers: [{name: c, image: i}]
"""),
    ("a wrong type", "must be integer", """
apiVersion: v1
kind: Service
metadata: {name: bad}
spec:
  ports: [{name: grpc, port: "fifty"}]
"""),
    ("an unknown kind", "no schema", """
apiVersion: example.com/v1
kind: Widget
metadata: {name: bad}
"""),
    ("a ServiceMonitor with a misspelt field", "pth", """
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: bad}
spec:
  selector: {matchLabels: {a: b}}
  endpoints: [{port: http, pth: /metrics}]
"""),
]


def check_validator_refuses(validate):
    for what, word, text in BAD_DOCUMENTS:
        result = validate(text)
        if result.returncode != 1 or word not in result.stderr:
            raise Failure(f"the validator accepted {what} (exit {result.returncode}):\n"
                          f"{result.stdout}{result.stderr}")


def combined_kustomization(directory):
    """A kustomization of every component, as a user would write one."""
    components = sorted(os.listdir(os.path.join(KUBERNETES, "components")))
    # tls patches the ServiceMonitor that monitoring adds: monitoring first.
    components.sort(key=lambda name: name != "monitoring")
    relative = os.path.relpath(KUBERNETES, directory)
    with open(os.path.join(directory, "kustomization.yaml"), "w") as file:
        yaml.safe_dump({
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "namespace": "collbench-test",
            "resources": [f"{relative}/base"],
            "components": [f"{relative}/components/{name}" for name in components],
        }, file)
    return components


def targets(combined_dir):
    """(what, directory, features) of every rendering checked."""
    overlays = os.path.join(KUBERNETES, "overlays")
    present = sorted(os.listdir(overlays))
    missing = sorted(set(OVERLAYS) - set(present))
    if missing:
        raise Failure(f"deploy/kubernetes/overlays: {', '.join(missing)} missing")
    result = [("base", os.path.join(KUBERNETES, "base"), set())]
    result += [(f"overlays/{name}", os.path.join(overlays, name), OVERLAYS.get(name, set()))
               for name in present]
    # The pods the container test runs (tests/containers/pods).
    pods = os.path.join(ROOT, "tests", "containers", "pods")
    result += [(f"tests/containers/pods/{name}", os.path.join(pods, name), set())
               for name in ("private", "shared")]
    components = combined_kustomization(combined_dir)
    result.append((f"all components ({', '.join(components)})", combined_dir, ALL_COMPONENTS))
    return result


def check_rendering(what, directory, features, validate, flags):
    """Render, validate, lint and check one kustomization; returns notes."""
    text = render(directory)
    docs = [d for d in yaml.safe_load_all(text) if d]
    result = validate(text)
    if result.returncode != 0:
        raise Failure(f"{what}: validation failed\n{result.stdout}{result.stderr}")
    lint_rendered(text, what)
    containers = check_containers(docs, flags, what)
    notes = check_rules(docs, what)
    manifest_properties.check(docs, features, DASHBOARDS, what)
    kinds = sorted({d["kind"] for d in docs})
    print(f"ok  {what}: {len(docs)} documents ({', '.join(kinds)}), "
          f"{containers} containers; {result.stdout.strip()}")
    return notes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--coordinator", required=True, help="collbench-coordinator binary")
    parser.add_argument("--worker", required=True, help="collbench-worker binary")
    parser.add_argument("--kube", required=True, help="collbench-kube binary")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()

    missing = [tool for tool in ("kubectl", "node", "npm", "yamllint") if not shutil.which(tool)]
    if missing:
        print(f"manifests_test: skipped: {', '.join(missing)} not installed "
              "(scripts/setup installs node, npm and yamllint; kubectl is not in Debian)")
        return SKIP
    try:
        binaries = {"coordinator": args.coordinator, "worker": args.worker, "kube": args.kube}
        helps = {name: program_flags(binary) for name, binary in binaries.items()}
        flags = {program: helps[binary] for program, (binary, _) in PROGRAMS.items()}
        validate = Validator(install_validator(os.path.abspath(args.build_dir)))
        check_validator_refuses(validate)
        must(["yamllint", "--strict", "-f", "parsable", KUBERNETES], "yamllint of the sources",
             cwd=ROOT)

        notes = test_alerts()
        with tempfile.TemporaryDirectory(dir=os.path.abspath(args.build_dir)) as combined:
            for what, directory, features in targets(combined):
                notes += check_rendering(what, directory, features, validate, flags)
        for note in sorted(set(notes)):
            print(f"note: {note}")
    except Failure as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        return 1
    print("manifests_test: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
