# SPDX-License-Identifier: Apache-2.0
"""The three patch formats of the test Kubernetes API server.

- JSON merge patch (RFC 7386, `application/merge-patch+json`): maps merge
  recursively, `null` deletes a key, every list is replaced.
- Strategic merge patch (`application/strategic-merge-patch+json`): a merge
  patch, except for the lists Kubernetes declares `patchStrategy: merge` in
  the kinds the server holds (MERGE_KEYS, MERGED_SCALAR_LISTS). Their
  elements are merged by key, and the `$patch`, `$setElementOrder/`,
  `$retainKeys` and `$deleteFromPrimitiveList/` directives that kubectl
  writes are understood. Every other list (`spec.taints`,
  `spec.tolerations`...) is atomic in Kubernetes and is replaced.
- JSON patch (RFC 6902, `application/json-patch+json`): add, remove,
  replace, move, copy, test.

Each function returns a new document and leaves its input alone. A patch
that is malformed raises PatchError with code 400; one that does not apply
to the document (a failed `test`, a missing path) raises it with 422, as
the Kubernetes API server answers.
"""
import copy

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
PATCH_TYPES = (MERGE_PATCH, STRATEGIC_MERGE_PATCH, JSON_PATCH)

# The lists a strategic merge patch merges element by element, by the
# element's key, as the Go types of Node, Pod, Namespace, Event and
# ConfigMap declare them (patchStrategy: merge, patchMergeKey). A path is
# the object's field names from its root; "*" stands for any element of
# the list above it.
_CONTAINER_LISTS = {"env": "name", "ports": "containerPort", "volumeMounts": "mountPath",
                    "volumeDevices": "devicePath"}
MERGE_KEYS = {
    ("metadata", "ownerReferences"): "uid",
    ("status", "conditions"): "type",
    ("status", "addresses"): "type",
    ("spec", "volumes"): "name",
    ("spec", "imagePullSecrets"): "name",
}
for _containers in ("containers", "initContainers", "ephemeralContainers"):
    MERGE_KEYS[("spec", _containers)] = "name"
    for _field, _key in _CONTAINER_LISTS.items():
        MERGE_KEYS[("spec", _containers, "*", _field)] = _key

# Lists of scalars merged as sets (patchStrategy: merge without a key).
MERGED_SCALAR_LISTS = {("metadata", "finalizers")}


class PatchError(Exception):
    """A patch that is malformed (code 400) or does not apply (code 422)."""

    def __init__(self, message, code=422):
        super().__init__(message)
        self.message = message
        self.code = code


def apply_patch(patch_type, document, patch):
    """Applies a patch of the given content type to a copy of document."""
    if patch_type == MERGE_PATCH:
        return merge_patch(document, patch)
    if patch_type == STRATEGIC_MERGE_PATCH:
        return strategic_merge_patch(document, patch)
    if patch_type == JSON_PATCH:
        return json_patch(document, patch)
    raise ValueError(f"not a patch type: {patch_type}")


# --- JSON merge patch ------------------------------------------------------

def merge_patch(document, patch):
    """RFC 7386: the patch's maps merge into the document's, null deletes."""
    if not isinstance(patch, dict):
        raise PatchError("a merge patch must be a JSON object", 400)
    return _merge(copy.deepcopy(document), patch)


def _merge(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = target if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


# --- Strategic merge patch -------------------------------------------------

def strategic_merge_patch(document, patch):
    """Kubernetes' strategic merge patch over the lists of MERGE_KEYS."""
    if not isinstance(patch, dict):
        raise PatchError("a strategic merge patch must be a JSON object", 400)
    result = _strategic_map(copy.deepcopy(document), patch, ())
    return {} if result is None else result


def _without_directives(value):
    """A value from a patch, its $-directives removed, for a new field."""
    if isinstance(value, dict):
        if value.get("$patch") == "delete":
            return None
        return {k: _without_directives(v) for k, v in value.items()
                if not k.startswith("$") and v is not None}
    if isinstance(value, list):
        return [_without_directives(v) for v in value
                if not (isinstance(v, dict) and "$patch" in v)]
    return value


def _strategic_map(original, patch, path):
    """Merges a patch map into original; None when the map is to go."""
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    if directive == "replace":
        return _without_directives({k: v for k, v in patch.items() if k != "$patch"})
    if directive is not None:
        raise PatchError(f"unknown patch directive: {directive!r}", 400)
    result = original if isinstance(original, dict) else {}
    # Deletions from lists of scalars first, then the fields themselves.
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if not isinstance(value, list):
                raise PatchError(f"{key} must be a list", 400)
            if isinstance(result.get(field), list):
                result[field] = [item for item in result[field] if item not in value]
    for key, value in patch.items():
        if key.startswith("$"):
            continue  # $setElementOrder/..., $retainKeys, $deleteFromPrimitiveList/...
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = _strategic_map(result.get(key), value, path + (key,))
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _strategic_list(result.get(key), value, path + (key,))
        else:
            result[key] = value
    return result


def _strategic_list(original, patch, path):
    """Merges a patch list into original by the list's key, or replaces it."""
    if path in MERGED_SCALAR_LISTS:
        result = list(original) if isinstance(original, list) else []
        result.extend(item for item in patch if item not in result)
        return result
    merge_key = MERGE_KEYS.get(path)
    replace = any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch)
    if merge_key is None or replace:
        return _without_directives(patch)
    result = list(original) if isinstance(original, list) else []
    for element in patch:
        if not isinstance(element, dict) or merge_key not in element:
            raise PatchError(f"map: {element!r} does not contain declared merge key: {merge_key}")
        index = next((i for i, item in enumerate(result)
                      if isinstance(item, dict) and item.get(merge_key) == element[merge_key]), None)
        if element.get("$patch") == "delete":
            if index is not None:
                del result[index]
            continue
        merged = _strategic_map(None if index is None else result[index], element, path + ("*",))
        if index is None:
            if merged is not None:
                result.append(merged)
        elif merged is None:
            del result[index]
        else:
            result[index] = merged
    return result


# --- JSON patch --------------------------------------------------------------

def json_patch(document, operations):
    """RFC 6902: applies the operations in order to a copy of document."""
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be a JSON array of operations", 400)
    result = copy.deepcopy(document)
    for operation in operations:
        if not isinstance(operation, dict) or not isinstance(operation.get("op"), str):
            raise PatchError(f"invalid JSON patch operation: {operation!r}", 400)
        op = operation["op"]
        path = _pointer(operation, "path")
        if op in ("add", "replace", "test") and "value" not in operation:
            raise PatchError(f"{op} operation at {operation['path']} has no value", 400)
        if op == "add":
            result = _add(result, path, copy.deepcopy(operation["value"]), operation["path"])
        elif op == "remove":
            result, _ = _remove(result, path, operation["path"])
        elif op == "replace":
            result, _ = _remove(result, path, operation["path"], "replace")
            result = _add(result, path, copy.deepcopy(operation["value"]), operation["path"])
        elif op == "test":
            if not _json_equal(_get(result, path, operation["path"], "test"), operation["value"]):
                raise PatchError(f"testing value {operation['path']} failed: test failed")
        elif op in ("move", "copy"):
            source = _pointer(operation, "from")
            if op == "move":
                if path[:len(source)] == source and len(path) > len(source):
                    raise PatchError(f"cannot move {operation['from']} into its own child")
                result, value = _remove(result, source, operation["from"], "move")
            else:
                value = copy.deepcopy(_get(result, source, operation["from"], "copy"))
            result = _add(result, path, value, operation["path"])
        else:
            raise PatchError(f"unknown JSON patch operation: {op!r}", 400)
    return result


def _pointer(operation, field):
    """The reference tokens of a JSON pointer (RFC 6901) in operation[field]."""
    text = operation.get(field)
    if not isinstance(text, str) or (text and not text.startswith("/")):
        raise PatchError(f"invalid JSON pointer in {field!r}: {text!r}", 400)
    if not text:
        return []
    return [token.replace("~1", "/").replace("~0", "~") for token in text[1:].split("/")]


def _index(container, token, pointer, allow_end):
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise PatchError(f"invalid array index {token!r} in {pointer}")
    index = int(token)
    if index > len(container) or (index == len(container) and not allow_end):
        raise PatchError(f"array index out of bounds in {pointer}")
    return index


def _get(document, tokens, pointer, op):
    node = document
    for token in tokens:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, pointer, False)]
        else:
            raise PatchError(f"{op} operation does not apply: doc is missing path: {pointer}")
    return node


def _add(document, tokens, value, pointer):
    if not tokens:
        return value
    parent = _get(document, tokens[:-1], pointer, "add")
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, pointer, True), value)
    else:
        raise PatchError(f"add operation does not apply: doc is missing path: {pointer}")
    return document


def _remove(document, tokens, pointer, op="remove"):
    if not tokens:
        return None, document
    parent = _get(document, tokens[:-1], pointer, op)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return document, parent.pop(last)
    if isinstance(parent, list):
        return document, parent.pop(_index(parent, last, pointer, False))
    raise PatchError(f"{op} operation does not apply: doc is missing path: {pointer}")


def _json_equal(a, b):
    """Equality of JSON values: true is not 1, 1 is 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b
