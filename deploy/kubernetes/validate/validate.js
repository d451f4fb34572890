#!/usr/bin/env node
// Validates rendered Kubernetes manifests offline: every YAML document is
// checked against the schema of its apiVersion and kind (kubernetes-models
// for the built-in kinds, @kubernetes-models/prometheus-operator for
// ServiceMonitor and PrometheusRule). A document of a kind with no schema
// here fails, and so does any field the schema does not define (the
// API server would drop it, or refuse it with strict field validation).
//
//   kubectl kustomize deploy/kubernetes/base | node validate.js -
//   node validate.js rendered.yaml [more.yaml ...]
//
// Exit status: 0 all valid, 1 a document is invalid, 2 bad usage or input
// that is not YAML.
"use strict";

const fs = require("fs");
const YAML = require("yaml");
const { Model } = require("@kubernetes-models/base");

// apiVersion -> the module exporting its model classes, by kind.
const MODULES = {
  v1: "kubernetes-models/v1",
  "apps/v1": "kubernetes-models/apps/v1",
  "batch/v1": "kubernetes-models/batch/v1",
  "networking.k8s.io/v1": "kubernetes-models/networking.k8s.io/v1",
  "policy/v1": "kubernetes-models/policy/v1",
  "rbac.authorization.k8s.io/v1": "kubernetes-models/rbac.authorization.k8s.io/v1",
  "monitoring.coreos.com/v1": "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1",
};

function modelFor(apiVersion, kind) {
  const module = MODULES[apiVersion];
  if (module === undefined) return undefined;
  const model = require(module)[kind];
  return typeof model === "function" && model.prototype instanceof Model ? model : undefined;
}

// The compiled schema validators read every property the schema defines
// (`data.spec`, `data.spec.template`, ...) and enumerate only objects whose
// keys are free (maps such as labels or ConfigMap data). Proxies record
// both; a key of a checked object that was neither read nor enumerated is a
// field the schema does not have.
function tracked(root) {
  const seen = new Map(); // object -> {read: Set of keys, enumerated: bool}
  const proxies = new Map();
  function wrap(value) {
    if (value === null || typeof value !== "object") return value;
    if (proxies.has(value)) return proxies.get(value);
    const state = { read: new Set(), enumerated: false };
    seen.set(value, state);
    const proxy = new Proxy(value, {
      get(target, key, receiver) {
        if (typeof key === "string") state.read.add(key);
        const result = Reflect.get(target, key, receiver);
        return Object.prototype.hasOwnProperty.call(target, key) ? wrap(result) : result;
      },
      has(target, key) {
        if (typeof key === "string") state.read.add(key);
        return Reflect.has(target, key);
      },
      ownKeys(target) {
        state.enumerated = true;
        return Reflect.ownKeys(target);
      },
    });
    proxies.set(value, proxy);
    return proxy;
  }
  return { proxy: wrap(root), seen };
}

function unknownFields(root, seen) {
  const found = [];
  function walk(value, path) {
    if (value === null || typeof value !== "object") return;
    const state = seen.get(value);
    // Not looked into at all: a free-form value (e.g. preserved unknown
    // fields), which the schema does not describe.
    if (state === undefined) return;
    const isArray = Array.isArray(value);
    for (const key of Object.keys(value)) {
      const child = isArray ? `${path}[${key}]` : `${path}.${key}`;
      if (!isArray && !state.enumerated && !state.read.has(key)) {
        found.push(`${child.slice(1)}: unknown field`);
        continue;
      }
      walk(value[key], child);
    }
  }
  walk(root, "");
  return found;
}

function describe(doc, index) {
  const kind = doc && typeof doc === "object" ? doc.kind : undefined;
  const name = doc && doc.metadata ? doc.metadata.name : undefined;
  return `document ${index + 1} (${kind || "no kind"}${name ? "/" + name : ""})`;
}

// Problems of one parsed document, as strings; empty when it is valid.
function checkDocument(doc) {
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) {
    return ["not a mapping"];
  }
  if (typeof doc.apiVersion !== "string" || typeof doc.kind !== "string") {
    return ["apiVersion and kind are required"];
  }
  if (!doc.metadata || typeof doc.metadata.name !== "string" || doc.metadata.name === "") {
    return ["metadata.name is required"];
  }
  const model = modelFor(doc.apiVersion, doc.kind);
  if (model === undefined) {
    return [`no schema for apiVersion ${doc.apiVersion} kind ${doc.kind}`];
  }
  const { proxy, seen } = tracked(doc);
  const problems = [];
  try {
    model.prototype.validate.call(proxy);
  } catch (error) {
    const details = Array.isArray(error.errors)
      ? error.errors.map((e) => `${e.instancePath || "/"}: ${e.message}`)
      : [error.message];
    problems.push(...new Set(details));
  }
  problems.push(...unknownFields(doc, seen));
  return problems;
}

function readInput(path) {
  return fs.readFileSync(path === "-" ? 0 : path, "utf8");
}

function main(argv) {
  if (argv.length === 0 || argv.includes("--help") || argv.includes("-h")) {
    process.stderr.write("usage: validate.js FILE.yaml... ('-' reads standard input)\n");
    return argv.length === 0 ? 2 : 0;
  }
  let failed = 0;
  let checked = 0;
  for (const path of argv) {
    let text;
    try {
      text = readInput(path);
    } catch (error) {
      process.stderr.write(`validate: ${path}: ${error.message}\n`);
      return 2;
    }
    const docs = YAML.parseAllDocuments(text, { prettyErrors: true });
    for (const [index, parsed] of docs.entries()) {
      if (parsed.errors.length > 0) {
        process.stderr.write(`validate: ${path}: ${describe(null, index)}: ${parsed.errors[0].message}\n`);
        return 2;
      }
      const doc = parsed.toJS({ maxAliasCount: -1 });
      if (doc === null || doc === undefined) continue; // an empty document
      checked++;
      const problems = checkDocument(doc);
      for (const problem of problems) {
        process.stderr.write(`${path}: ${describe(doc, index)}: ${problem}\n`);
      }
      if (problems.length > 0) failed++;
    }
  }
  if (checked === 0) {
    process.stderr.write("validate: no documents\n");
    return 2;
  }
  process.stdout.write(`validate: ${checked} documents, ${failed} invalid\n`);
  return failed > 0 ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
