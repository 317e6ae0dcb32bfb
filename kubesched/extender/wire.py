"""The extender wire format (k8s.io/kube-scheduler/extender/v1), as Go's encoding/json speaks it.

Both sides of the HTTP extender protocol use this module: the client
(:mod:`kubesched.extender.client`) to build request bodies byte-identical to kube-scheduler
v1.30's and to decode replies the way it does, the SDK (:mod:`kubesched.extender.server`) to
decode requests and write replies.

Encoding (json.Marshal of the Go types):

- Keys are the Go field names (the v1 extender types have no json tags): ``Pod``, ``Nodes``,
  ``NodeNames``, ``FailedNodes``, ``Host``, ``Score``, ``NumPDBViolations``, ...; struct fields
  come in declaration order, Go maps (node name -> victims) with sorted keys; a nil pointer,
  slice or map is ``null``.
- Compact output, ``<``, ``>``, ``&``, U+2028 and U+2029 escaped as ``\\u003c`` ... (Go's
  HTML-safe default), other non-ASCII written as UTF-8.
- Pods and nodes are sent as the manifest they were read from (``obj.raw``), not re-encoded from
  the typed object, so nothing the typed model drops is lost; ``apiVersion``/``kind`` are
  dropped because objects from kube-scheduler's informers carry neither. Key order inside a
  manifest is the manifest's own (Go would print struct fields in declaration order and map
  keys sorted; a manifest written that way, as the API server returns them, is byte-identical).

Decoding (json.NewDecoder(body).Decode(&result)):

- Only the first JSON value is read; what follows it is ignored. An empty body is ``EOF``.
- Object keys match field names case-insensitively (``NodeNames`` and ``nodeNames`` both
  work, ``node_names`` is ignored); unknown keys are ignored; ``null`` leaves a field at its
  zero value; a value of the wrong JSON type fails with Go's ``json: cannot unmarshal ...``.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from kubesched.objects import Node, Pod

# k8s.io/kube-scheduler/extender/v1: MinExtenderPriority / MaxExtenderPriority.
MIN_EXTENDER_PRIORITY = 0
MAX_EXTENDER_PRIORITY = 10

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


class WireError(ValueError):
    """A body that is not valid for its wire type. The message reads like Go's encoding/json
    error for the same input (``EOF``, ``invalid character 'x' looking for beginning of value``,
    ``json: cannot unmarshal string into Go struct field HostPriority.Score of type int64``)."""


# =============================================================================== encoding
_GO_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})
_SURROGATE = re.compile("[\ud800-\udfff]")


def go_float(value: float) -> str:
    """strconv.FormatFloat(f, 'f' or 'e', -1, 64) as encoding/json picks it (floatEncoder)."""
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"json: unsupported value: {value!r}")
    if value == 0:
        return "-0" if str(value).startswith("-") else "0"
    a = abs(value)
    if 1e-6 <= a < 1e21:
        text = format(Decimal(repr(value)), "f")
        return text
    text = repr(value)
    if "e" not in text:  # cannot happen for these magnitudes; keep Go's exponent form anyway
        text = f"{value:e}"
    mant, exp = text.split("e")
    sign = exp[0] if exp[0] in "+-" else "+"
    digits = exp.lstrip("+-").lstrip("0") or "0"
    if sign == "+" and len(digits) < 2:
        digits = digits.rjust(2, "0")
    return f"{mant}e{sign}{digits}"


def _key(k: Any) -> str:
    if isinstance(k, str):
        return k
    if isinstance(k, bool):
        return "true" if k else "false"
    if k is None:
        return "null"
    if isinstance(k, float):
        return go_float(k)
    return str(k)


def _plain(value: Any, floats: list[str]) -> Any:
    """A JSON-ready copy of a manifest value: YAML timestamps as RFC 3339 (metav1.Time's
    encoding), integral floats as integers (Go prints 1.0 as 1), other floats as a placeholder
    replaced by Go's text after encoding."""
    if isinstance(value, str) or value is None or isinstance(value, bool) or isinstance(value, int):
        return value
    if isinstance(value, Mapping):
        return {_key(k): _plain(v, floats) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, floats) for v in value]
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e21 and not (value == 0 and str(value).startswith("-")):
            return int(value)
        floats.append(go_float(value))
        return f"\x00kubesched-float-{len(floats) - 1}\x00"
    if isinstance(value, _dt.datetime):
        dt = value if value.tzinfo is not None else value.replace(tzinfo=_dt.UTC)
        return dt.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        import base64

        return base64.b64encode(bytes(value)).decode("ascii")  # Go's []byte encoding
    raise TypeError(f"json: unsupported type: {type(value).__name__}")


def go_json(value: Any) -> bytes:
    """json.Marshal(value) for plain JSON-like data: compact, HTML-safe escapes, UTF-8."""
    floats: list[str] = []
    text = json.dumps(_plain(value, floats), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    text = text.translate(_GO_ESCAPES)
    for i, f in enumerate(floats):
        text = text.replace(f'"\\u0000kubesched-float-{i}\\u0000"', f, 1)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: Go strings hold U+FFFD there
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")


def wire_manifest(obj: Pod | Node) -> Mapping[str, Any]:
    """The manifest kube-scheduler would send for ``obj``: its ``raw`` without
    apiVersion/kind. For a pod, the fields the scheduler itself changes after reading the
    manifest (spec.nodeName on binding, spec.priority from Priority admission,
    status.nominatedNodeName from preemption) are brought up to date when they differ."""
    raw = obj.raw
    if not raw:  # built in code, not from a manifest: the identity is all we have
        meta: dict[str, Any] = {"name": obj.meta.name}
        if obj.meta.namespace:
            meta["namespace"] = obj.meta.namespace
        if obj.meta.uid:
            meta["uid"] = obj.meta.uid
        if obj.meta.labels:
            meta["labels"] = dict(obj.meta.labels)
        return {"metadata": meta}
    out = {k: v for k, v in raw.items() if k not in ("apiVersion", "kind")}
    if isinstance(obj, Pod):
        spec = out.get("spec")
        spec = dict(spec) if isinstance(spec, Mapping) else {}
        changed = False
        if obj.node_name != (spec.get("nodeName") or ""):
            spec["nodeName"] = obj.node_name
            changed = True
        raw_priority = spec.get("priority")
        if obj.priority != (raw_priority if isinstance(raw_priority, int) else 0) or (
            raw_priority is None and obj.priority_class_name
        ):
            spec["priority"] = obj.priority
            changed = True
        if changed:
            out["spec"] = spec
        status = out.get("status")
        status_map = dict(status) if isinstance(status, Mapping) else {}
        if obj.nominated_node_name != (status_map.get("nominatedNodeName") or ""):
            status_map["nominatedNodeName"] = obj.nominated_node_name
            out["status"] = status_map
    return out


_CACHE_LIMIT = 1 << 16
_cache: dict[int, tuple[object, bytes]] = {}
_cache_lock = threading.Lock()


def object_json(obj: Pod | Node) -> bytes:
    """The wire JSON of a pod or node, encoded once per object (objects are immutable; a
    changed pod or node is a new object). Filter and prioritize send every candidate node on
    every call, so this keeps a cycle's cost at one join."""
    key = id(obj)
    hit = _cache.get(key)
    if hit is not None and hit[0] is obj:
        return hit[1]
    data = go_json(wire_manifest(obj))
    with _cache_lock:
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        _cache[key] = (obj, data)  # holding obj keeps id(obj) from being reused while cached
    return data


def _str_json(s: str) -> bytes:
    return go_json(s)


# ----------------------------------------------------------------------- request bodies
def extender_args(pod: Pod, nodes: Sequence[Node], node_cache_capable: bool) -> bytes:
    """ExtenderArgs{Pod, Nodes, NodeNames}: full nodes as a v1.NodeList, or only their names
    for a nodeCacheCapable extender (HTTPExtender.Filter / Prioritize)."""
    parts = [b'{"Pod":', object_json(pod)]
    if node_cache_capable:
        parts.append(b',"Nodes":null,"NodeNames":')
        parts.append(go_json([n.meta.name for n in nodes]))
    else:
        # A NodeList built by appending to a nil Items slice: no nodes -> "items":null.
        items = b"[" + b",".join(object_json(n) for n in nodes) + b"]" if nodes else b"null"
        parts += [b',"Nodes":{"metadata":{},"items":', items, b'},"NodeNames":null']
    parts.append(b"}")
    return b"".join(parts)


def binding_args(name: str, namespace: str, uid: str, node: str) -> bytes:
    """ExtenderBindingArgs{PodName, PodNamespace, PodUID, Node}."""
    return go_json({"PodName": name, "PodNamespace": namespace, "PodUID": uid, "Node": node})


def preemption_args(pod: Pod, victims: Mapping[str, tuple[Sequence[Pod], int]], node_cache_capable: bool) -> bytes:
    """ExtenderPreemptionArgs{Pod, NodeNameToVictims, NodeNameToMetaVictims}: full victim pods,
    or only their UIDs (MetaVictims) for a nodeCacheCapable extender. ``victims`` maps a node
    name to (pods, numPDBViolations)."""
    entries: list[bytes] = []
    for node in sorted(victims):  # Go encodes map keys sorted
        pods, num = victims[node]
        if node_cache_capable:
            pod_json = go_json([{"UID": p.meta.uid} for p in pods])
        else:
            pod_json = b"[" + b",".join(object_json(p) for p in pods) + b"]"
        entries.append(_str_json(node) + b':{"Pods":' + pod_json + b',"NumPDBViolations":' + str(num).encode() + b"}")
    victim_map = b"{" + b",".join(entries) + b"}"
    if node_cache_capable:
        return b'{"Pod":' + object_json(pod) + b',"NodeNameToVictims":null,"NodeNameToMetaVictims":' + victim_map + b"}"
    return b'{"Pod":' + object_json(pod) + b',"NodeNameToVictims":' + victim_map + b',"NodeNameToMetaVictims":null}'


# =============================================================================== decoding
_WS = " \t\r\n"


_GO_CHAR_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                    "\v": "\\v", "\\": "\\\\"}


def _quote_char(c: str) -> str:
    """encoding/json's quoteChar: the offending character as a Go rune literal."""
    if c == "'":
        return "'\\''"
    if c == '"':
        return "'\"'"
    if c in _GO_CHAR_ESCAPES:
        return f"'{_GO_CHAR_ESCAPES[c]}'"
    o = ord(c)
    if o < 0x20 or o == 0x7F:
        return f"'\\x{o:02x}'"
    if not c.isprintable():
        return f"'\\u{o:04x}'" if o <= 0xFFFF else f"'\\U{o:08x}'"
    return f"'{c}'"


def _container_at(text: str, pos: int) -> str:
    """The innermost open bracket ('{' or '[') before ``pos``, skipping strings."""
    stack: list[str] = []
    in_str = esc = False
    for ch in text[:pos]:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            stack.append(ch)
        elif ch in "}]" and stack:
            stack.pop()
    return stack[-1] if stack else ""


class _NonFinite(Exception):
    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.token = token


def _reject_constant(token: str) -> Any:
    raise _NonFinite(token)


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def decode_json(body: bytes) -> Any:
    """The first JSON value of ``body`` (Decoder.Decode); raises WireError with Go's message."""
    text = body.decode("utf-8", errors="replace")
    i = 0
    while i < len(text) and text[i] in _WS:
        i += 1
    if i == len(text):
        raise WireError("EOF")
    try:
        value, end = _DECODER.raw_decode(text, i)
    except _NonFinite as e:
        c = "I" if e.token.startswith("-") else e.token[0]
        where = "in numeric literal" if e.token.startswith("-") else "looking for beginning of value"
        raise WireError(f"invalid character {_quote_char(c)} {where}") from None
    except json.JSONDecodeError as e:
        raise WireError(_syntax_message(text, e)) from None
    if not isinstance(value, (dict, list, str)) and end < len(text) and text[end] not in _WS:
        # A number or literal ends only at a delimiter; Go's scanner rejects what follows.
        raise WireError(f"invalid character {_quote_char(text[end])} after top-level value")
    return value


def _syntax_message(text: str, e: json.JSONDecodeError) -> str:
    pos = e.pos
    msg = e.msg
    if msg.startswith("Unterminated string") or pos >= len(text):
        return "unexpected EOF"
    c = text[pos]
    if msg.startswith("Expecting value"):
        ctx = "looking for beginning of value"
    elif msg.startswith("Expecting property name"):
        ctx = "looking for beginning of object key string"
    elif msg.startswith("Expecting ':'"):
        ctx = "after object key"
    elif msg.startswith("Expecting ','"):
        ctx = "after object key:value pair" if _container_at(text, pos) == "{" else "after array element"
    elif msg.startswith("Invalid control character"):
        ctx = "in string literal"
    elif msg.startswith("Invalid \\uXXXX"):
        j = pos + 2
        while j < len(text) and j < pos + 6 and text[j] in "0123456789abcdefABCDEF":
            j += 1
        if j >= len(text):
            return "unexpected EOF"
        c, ctx = text[j], "in \\u hexadecimal character escape"
    elif msg.startswith("Invalid \\"):
        if pos + 1 >= len(text):
            return "unexpected EOF"
        c, ctx = text[pos + 1], "in string escape code"
    else:
        ctx = msg[:1].lower() + msg[1:]
    return f"invalid character {_quote_char(c)} {ctx}"


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def type_error(value: Any, where: str, go_type: str) -> WireError:
    """json.UnmarshalTypeError: ``where`` is ``Struct.field.path`` (a struct field) or ``""``
    (the top-level value)."""
    kind = _json_kind(value)
    if kind == "number" and go_type in ("int64", "int32", "int"):
        kind = f"number {json.dumps(value)}"
    if where:
        return WireError(f"json: cannot unmarshal {kind} into Go struct field {where} of type {go_type}")
    return WireError(f"json: cannot unmarshal {kind} into Go value of type {go_type}")


def get_field(obj: Mapping[str, Any], name: str) -> Any:
    """The value of struct field ``name`` in a decoded JSON object. Go sets the field for every
    key equal to its name under case folding, in document order, so the last such key wins."""
    folded = name.casefold()
    found: Any = None
    for k, v in obj.items():
        if k.casefold() == folded:
            found = v
    return found


def as_object(value: Any, where: str, go_type: str) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise type_error(value, where, go_type)
    return value


def as_list(value: Any, where: str, go_type: str) -> list[Any] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise type_error(value, where, go_type)
    return value


def as_string(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise type_error(value, where, "string")
    return value


def as_int64(value: Any, where: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise type_error(value, where, "int64")
    if isinstance(value, float) or not _INT64_MIN <= value <= _INT64_MAX:
        raise type_error(value, where, "int64")
    return value


def as_string_list(value: Any, where: str) -> list[str] | None:
    items = as_list(value, where, "[]string")
    if items is None:
        return None
    return [as_string(v, where) for v in items]


def as_string_map(value: Any, where: str, go_type: str) -> dict[str, str] | None:
    m = as_object(value, where, go_type)
    if m is None:
        return None
    return {k: as_string(v, where) for k, v in m.items()}


# ------------------------------------------------------------------------------ replies
@dataclass(frozen=True, slots=True)
class FilterReply:
    """ExtenderFilterResult as decoded. ``node_items`` holds the names of ``Nodes.items``
    (None when Nodes is null), ``node_names`` the ``NodeNames`` list (None when null)."""

    node_items: list[str] | None = None
    node_names: list[str] | None = None
    failed: dict[str, str] = field(default_factory=dict)
    failed_and_unresolvable: dict[str, str] = field(default_factory=dict)
    error: str = ""


def parse_filter_result(value: Any) -> FilterReply:
    obj = as_object(value, "", "v1.ExtenderFilterResult")
    if obj is None:
        return FilterReply()
    where = "ExtenderFilterResult"
    node_items: list[str] | None = None
    nodes = as_object(get_field(obj, "Nodes"), f"{where}.Nodes", "v1.NodeList")
    if nodes is not None:
        items = as_list(get_field(nodes, "items"), f"{where}.Nodes.items", "[]v1.Node") or []
        node_items = []
        for item in items:
            node = as_object(item, f"{where}.Nodes.items", "v1.Node") or {}
            meta = as_object(get_field(node, "metadata"), f"{where}.Nodes.items.metadata", "v1.ObjectMeta") or {}
            node_items.append(as_string(get_field(meta, "name"), f"{where}.Nodes.items.metadata.name"))
    return FilterReply(
        node_items=node_items,
        node_names=as_string_list(get_field(obj, "NodeNames"), f"{where}.NodeNames"),
        failed=as_string_map(get_field(obj, "FailedNodes"), f"{where}.FailedNodes", "v1.FailedNodesMap") or {},
        failed_and_unresolvable=as_string_map(
            get_field(obj, "FailedAndUnresolvableNodes"), f"{where}.FailedAndUnresolvableNodes", "v1.FailedNodesMap"
        ) or {},
        error=as_string(get_field(obj, "Error"), f"{where}.Error"),
    )


@dataclass(frozen=True, slots=True)
class HostPriority:
    """extenderv1.HostPriority: a node and the extender's score for it (0..10 by contract)."""

    host: str
    score: int


def parse_host_priority_list(value: Any) -> list[HostPriority]:
    items = as_list(value, "", "v1.HostPriorityList")
    out: list[HostPriority] = []
    for item in items or []:
        obj = as_object(item, "", "v1.HostPriority") or {}
        out.append(HostPriority(as_string(get_field(obj, "Host"), "HostPriority.Host"),
                                as_int64(get_field(obj, "Score"), "HostPriority.Score")))
    return out


def parse_binding_result(value: Any) -> str:
    """ExtenderBindingResult -> its Error."""
    obj = as_object(value, "", "v1.ExtenderBindingResult")
    if obj is None:
        return ""
    return as_string(get_field(obj, "Error"), "ExtenderBindingResult.Error")


@dataclass(frozen=True, slots=True)
class MetaVictims:
    """extenderv1.MetaVictims: victim pods by UID, and their PodDisruptionBudget violations."""

    uids: tuple[str, ...] = ()
    num_pdb_violations: int = 0


def parse_meta_victims(value: Any, where: str) -> MetaVictims | None:
    obj = as_object(value, where, "v1.MetaVictims")
    if obj is None:
        return None
    pods = as_list(get_field(obj, "Pods"), f"{where}.Pods", "[]*v1.MetaPod") or []
    uids: list[str] = []
    for p in pods:
        mp = as_object(p, f"{where}.Pods", "v1.MetaPod") or {}
        uids.append(as_string(get_field(mp, "UID"), f"{where}.Pods.UID"))
    return MetaVictims(tuple(uids), as_int64(get_field(obj, "NumPDBViolations"), f"{where}.NumPDBViolations"))


def parse_preemption_result(value: Any) -> dict[str, MetaVictims | None] | None:
    """ExtenderPreemptionResult -> NodeNameToMetaVictims (None when null; a node mapped to
    null stays None, for the caller to judge)."""
    obj = as_object(value, "", "v1.ExtenderPreemptionResult")
    if obj is None:
        return None
    where = "ExtenderPreemptionResult.NodeNameToMetaVictims"
    m = as_object(get_field(obj, "NodeNameToMetaVictims"), where, "map[string]*v1.MetaVictims")
    if m is None:
        return None
    return {node: parse_meta_victims(v, where) for node, v in m.items()}


# ------------------------------------------------------------------------ reply bodies
def filter_result_json(*, nodes: Iterable[bytes] | None, node_names: Sequence[str] | None,
                       failed: Mapping[str, str], failed_and_unresolvable: Mapping[str, str], error: str) -> bytes:
    """ExtenderFilterResult as a Go extender writes it (every field, Go order, sorted maps).
    ``nodes`` are already-encoded node manifests (None -> ``"Nodes":null``)."""
    if nodes is None:
        nodes_json = b"null"
    else:
        encoded = list(nodes)
        items = b"[" + b",".join(encoded) + b"]" if encoded else b"null"
        nodes_json = b'{"metadata":{},"items":' + items + b"}"
    return b"".join([
        b'{"Nodes":', nodes_json,
        b',"NodeNames":', go_json(list(node_names)) if node_names is not None else b"null",
        b',"FailedNodes":', go_json(dict(sorted(failed.items()))),
        b',"FailedAndUnresolvableNodes":', go_json(dict(sorted(failed_and_unresolvable.items()))),
        b',"Error":', go_json(error), b"}",
    ])


def host_priority_list_json(scores: Iterable[HostPriority]) -> bytes:
    return go_json([{"Host": s.host, "Score": s.score} for s in scores])


def binding_result_json(error: str) -> bytes:
    return go_json({"Error": error})


def preemption_result_json(victims: Mapping[str, MetaVictims]) -> bytes:
    return go_json({"NodeNameToMetaVictims": {
        node: {"Pods": [{"UID": u} for u in v.uids], "NumPDBViolations": v.num_pdb_violations}
        for node, v in sorted(victims.items())
    }})
