# SPDX-License-Identifier: Apache-2.0
"""What the test Kubernetes API server knows about its kinds: the resource
table, the Status errors it answers with, the validation of names, labels
and the few fields Kubernetes checks on these kinds, and label and field
selectors. Messages follow the real API server's wording, so that a client
tested here reads the same text it will read from Kubernetes.
"""
import json
import re
from dataclasses import dataclass

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class Resource:
    """A core v1 resource: its plural name (in paths), kind and shape."""
    name: str
    kind: str
    singular: str
    namespaced: bool
    short_names: tuple
    has_status: bool          # a status subresource; the main resource ignores status changes
    verbs: tuple = ALL_VERBS
    returns_deleted: bool = False   # DELETE answers the object, not a Status


RESOURCES = {r.name: r for r in (
    Resource("nodes", "Node", "node", False, ("no",), True),
    Resource("namespaces", "Namespace", "namespace", False, ("ns",), True,
             tuple(v for v in ALL_VERBS if v != "deletecollection"), True),
    Resource("pods", "Pod", "pod", True, ("po",), True, returns_deleted=True),
    Resource("events", "Event", "event", True, ("ev",), False),
    Resource("configmaps", "ConfigMap", "configmap", True, ("cm",), False),
)}
# Subresources served: (resource, subresource) -> (kind, verbs).
SUBRESOURCES = {
    ("nodes", "status"): ("Node", ("get", "patch", "update")),
    ("namespaces", "status"): ("Namespace", ("get", "patch", "update")),
    ("pods", "status"): ("Pod", ("get", "patch", "update")),
    ("pods", "binding"): ("Binding", ("create",)),
}


def resource_for(name):
    """The Resource named by plural, singular, kind or short name, or None."""
    lowered = name.lower()
    for resource in RESOURCES.values():
        if lowered in (resource.name, resource.singular, resource.kind.lower(), *resource.short_names):
            return resource
    return None


# --- Errors ------------------------------------------------------------------

class ApiError(Exception):
    """An error answered as a metav1.Status with its HTTP code and reason."""

    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self):
        status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": self.message, "reason": self.reason, "code": self.code}
        if not self.reason:
            del status["reason"]  # StatusReasonUnknown, as Kubernetes writes it
        if self.details:
            status["details"] = self.details
        return status


def _named(resource, name):
    return f'{resource} "{name}"' if name else resource


def not_found(resource, name):
    return ApiError(404, "NotFound", f"{_named(resource, name)} not found",
                    {"name": name, "kind": resource})


def already_exists(resource, name):
    return ApiError(409, "AlreadyExists", f"{_named(resource, name)} already exists",
                    {"name": name, "kind": resource})


def conflict(resource, name, why="the object has been modified; please apply your changes "
                                 "to the latest version and try again"):
    return ApiError(409, "Conflict", f"Operation cannot be fulfilled on {_named(resource, name)}: {why}",
                    {"name": name, "kind": resource})


def bad_request(message):
    return ApiError(400, "BadRequest", message)


def invalid(kind, name, causes):
    """422 Invalid; causes are (field, message) pairs."""
    text = [f"{field}: {message}" for field, message in causes]
    joined = text[0] if len(text) == 1 else "[" + ", ".join(text) + "]"
    return ApiError(422, "Invalid", f'{kind} "{name}" is invalid: {joined}', {
        "name": name, "kind": kind,
        "causes": [{"reason": "FieldValueInvalid", "message": m, "field": f} for f, m in causes]})


def forbidden(user, verb, resource, namespace, name):
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    what = _named(resource.split("/")[0], name) if resource else "the request"
    details = {"name": name, "kind": resource.split("/")[0]} if name else {"kind": resource.split("/")[0]}
    return ApiError(403, "Forbidden",
                    f'{what} is forbidden: User "{user}" cannot {verb} resource "{resource}" '
                    f'in API group "" {scope}', details)


# --- Validation ----------------------------------------------------------------

_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + ")*"
_QUALIFIED_NAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = "(" + _QUALIFIED_NAME + ")?"
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def subdomain_errors(value):
    if len(value) > 253:
        return ["must be no more than 253 characters"]
    if not re.fullmatch(_DNS1123_SUBDOMAIN, value):
        return ["a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                "'-' or '.', and must start and end with an alphanumeric character (e.g. "
                f"'example.com', regex used for validation is '{_DNS1123_SUBDOMAIN}')"]
    return []


def dns_label_errors(value):
    if len(value) > 63:
        return ["must be no more than 63 characters"]
    if not re.fullmatch(_DNS1123_LABEL, value):
        return ["a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
                "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
                f"'123-abc', regex used for validation is '{_DNS1123_LABEL}')"]
    return []


def qualified_name_errors(key):
    """A label or annotation key: an optional DNS subdomain prefix and '/',
    then a name of at most 63 characters."""
    prefix, slash, name = key.rpartition("/")
    errors = []
    if slash:
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors += ["prefix part " + e for e in subdomain_errors(prefix)]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    elif not re.fullmatch(_QUALIFIED_NAME, name):
        errors.append("name part must consist of alphanumeric characters, '-', '_' or '.', and must "
                      "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
                      f"or '123-abc', regex used for validation is '{_QUALIFIED_NAME}')")
    return errors


def label_value_errors(value):
    if len(value) > 63:
        return ["must be no more than 63 characters"]
    if not re.fullmatch(_LABEL_VALUE, value):
        return ["a valid label must be an empty string or consist of alphanumeric characters, '-', "
                "'_' or '.', and must start and end with an alphanumeric character (e.g. "
                "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                f"'{_LABEL_VALUE}')"]
    return []


def _invalid_value(value, why):
    return f"Invalid value: {json.dumps(value)}: {why}"


def validate(resource, obj):
    """The causes (field, message) that make obj invalid; empty when valid."""
    causes = []
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return [("metadata", "Required value")]
    name = meta.get("name") or ""
    if not name:
        causes.append(("metadata.name", "Required value: name or generateName is required"))
    else:
        check = dns_label_errors if resource.name == "namespaces" else subdomain_errors
        causes += [("metadata.name", _invalid_value(name, e)) for e in check(name)]
    for field in ("labels", "annotations"):
        values = meta.get(field)
        if values is None:
            continue
        if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
            causes.append((f"metadata.{field}", "Invalid value: must be a map of strings"))
            continue
        for key, value in values.items():
            causes += [(f"metadata.{field}", _invalid_value(key, e)) for e in qualified_name_errors(key)]
            if field == "labels":
                causes += [(f"metadata.{field}", _invalid_value(value, e))
                           for e in label_value_errors(value)]
    spec = obj.get("spec") or {}
    if resource.name == "nodes":
        seen = set()
        for i, taint in enumerate(spec.get("taints") or []):
            field = f"spec.taints[{i}]"
            key = taint.get("key") or ""
            if not key:
                causes.append((f"{field}.key", "Required value"))
            causes += [(f"{field}.key", _invalid_value(key, e)) for e in qualified_name_errors(key) if key]
            if taint.get("value"):
                causes += [(f"{field}.value", _invalid_value(taint["value"], e))
                           for e in label_value_errors(taint["value"])]
            if taint.get("effect") not in TAINT_EFFECTS:
                causes.append((f"{field}.effect", f'Unsupported value: "{taint.get("effect", "")}": '
                               'supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"'))
            if (key, taint.get("effect")) in seen:
                causes.append((f"{field}", "Duplicate value: taints must be unique by key and effect pair"))
            seen.add((key, taint.get("effect")))
    if resource.name == "pods":
        containers = spec.get("containers")
        if not containers:
            causes.append(("spec.containers", "Required value"))
        names = set()
        for i, container in enumerate(containers or []):
            field = f"spec.containers[{i}]"
            cname = container.get("name") or ""
            if not cname:
                causes.append((f"{field}.name", "Required value"))
            else:
                causes += [(f"{field}.name", _invalid_value(cname, e)) for e in dns_label_errors(cname)]
                if cname in names:
                    causes.append((f"{field}.name", f'Duplicate value: "{cname}"'))
                names.add(cname)
            if not container.get("image"):
                causes.append((f"{field}.image", "Required value"))
    return causes


# The pod spec fields an update may change (apart from them a pod's spec is
# immutable: binding goes through pods/binding or the scheduler).
_MUTABLE_POD_SPEC = ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds",
                     "schedulingGates")
POD_SPEC_FORBIDDEN = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set "
    "to 1 if it was previously negative)")


def pod_spec_change_allowed(old_spec, new_spec):
    """Whether an update changes only what Kubernetes lets a pod update change."""
    def comparable(spec, images_from):
        spec = dict(spec or {})
        for field in _MUTABLE_POD_SPEC:
            spec.pop(field, None)
        for list_name in ("containers", "initContainers"):
            donors = {c.get("name"): c.get("image") for c in (images_from or {}).get(list_name) or []}
            spec[list_name] = [dict(c, image=donors.get(c.get("name"), c.get("image")))
                               for c in spec.get(list_name) or []]
        return spec
    return comparable(old_spec, new_spec) == comparable(new_spec, new_spec)


# --- Selectors -------------------------------------------------------------------

class LabelSelector:
    """A parsed labelSelector: requirements (key, operator, values) ANDed.
    Operators: = == != (equality), in notin (sets), exists, !exists."""

    _REQUIREMENT = re.compile(
        r"\s*(?:(?P<not>!)\s*(?P<nkey>[^\s!=,()]+)"
        r"|(?P<key>[^\s!=,()]+)(?:\s*(?P<op>==|=|!=)\s*(?P<value>[^\s!=,()]*)"
        r"|\s+(?P<setop>in|notin)\s*\((?P<values>[^()]*)\))?)\s*")

    def __init__(self, text):
        self.requirements = []
        text = (text or "").strip()
        position = 0
        while text and position <= len(text):
            match = self._REQUIREMENT.match(text, position)
            end = match.end() if match else position
            if not match or (end < len(text) and text[end] != ","):
                raise bad_request(f"unable to parse requirement: found '{text[position:]}', "
                                  "expected: identifier, '!', 'in', 'notin', '=', '==', '!='")
            if match.group("nkey"):
                self.requirements.append((match.group("nkey"), "!exists", ()))
            elif match.group("op"):
                op = "!=" if match.group("op") == "!=" else "="
                self.requirements.append((match.group("key"), op, (match.group("value"),)))
            elif match.group("setop"):
                values = tuple(v.strip() for v in match.group("values").split(",") if v.strip())
                self.requirements.append((match.group("key"), match.group("setop"), values))
            else:
                self.requirements.append((match.group("key"), "exists", ()))
            position = end + 1

    def matches(self, labels):
        labels = labels or {}
        for key, op, values in self.requirements:
            present = key in labels
            if op == "exists" and not present:
                return False
            if op == "!exists" and present:
                return False
            if op in ("=", "in") and (not present or labels[key] not in values):
                return False
            if op in ("!=", "notin") and present and labels[key] in values:
                return False
        return True


# The fields each kind can be selected by (as Kubernetes registers them).
FIELD_SELECTORS = {
    "nodes": {"metadata.name", "spec.unschedulable"},
    "namespaces": {"metadata.name", "status.phase"},
    "pods": {"metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy",
             "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
             "status.podIP", "status.nominatedNodeName"},
    "events": {"metadata.name", "metadata.namespace", "involvedObject.kind",
               "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
               "involvedObject.apiVersion", "involvedObject.resourceVersion",
               "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"},
    "configmaps": {"metadata.name", "metadata.namespace"},
}


class FieldSelector:
    """A parsed fieldSelector: field=value, field==value, field!=value, ANDed."""

    def __init__(self, text, resource):
        self.requirements = []
        for part in filter(None, (p.strip() for p in (text or "").split(","))):
            match = re.fullmatch(r"([^=!]+?)\s*(==|=|!=)\s*(.*)", part)
            if not match:
                raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
            field, op, value = match.groups()
            if field not in FIELD_SELECTORS[resource.name]:
                raise bad_request(f'field label not supported: {field}')
            self.requirements.append((field, op != "!=", value))

    @staticmethod
    def value_of(obj, field):
        if field == "source":
            field = "source.component"
        node = obj
        for part in field.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, bool):
            return "true" if node else "false"
        return "" if node is None else str(node)

    def matches(self, obj):
        return all((self.value_of(obj, field) == value) == equal
                   for field, equal, value in self.requirements)
