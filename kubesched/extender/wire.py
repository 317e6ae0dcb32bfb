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

Speed (msgspec): the hot bodies — node-name lists, reason maps, host priority lists, the
ExtenderArgs a nodeCacheCapable extender receives — go through msgspec's C codec first. Each fast
path is taken only when its result is provably the one the exact code above gives (no character
Go escapes differently in the output; a body msgspec decodes without complaint, with exactly the
Go field names for typed replies); anything else — an escape, a case-variant key, a wrong type,
trailing data, invalid UTF-8 — falls back to the exact code, which produces Go's text.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from operator import attrgetter
from typing import Annotated, Any

import msgspec

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


_PLAIN_SCALARS = frozenset({str, int, bool, type(None)})


def _is_plain(value: Any) -> bool:
    """Whether ``value`` holds only what JSON has as is (exactly str, int, bool, None, lists and
    str-keyed dicts): no float, timestamp or bytes that :func:`_plain` must convert."""
    t = type(value)
    if t in _PLAIN_SCALARS:
        return True
    if t is dict:
        return all(type(k) is str for k in value) and all(map(_is_plain, value.values()))
    if t is list:
        return all(map(_is_plain, value))
    return False


def go_json(value: Any) -> bytes:
    """json.Marshal(value) for plain JSON-like data: compact, HTML-safe escapes, UTF-8."""
    if _is_plain(value):  # most manifests: msgspec writes them as Go would, escapes aside
        out = _fast_json(value)
        if out is not None:
            return out
    return go_json_exact(value)


def go_json_exact(value: Any) -> bytes:
    """:func:`go_json` through Python's encoder alone (every value it accepts)."""
    floats: list[str] = []
    text = json.dumps(_plain(value, floats), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    text = text.translate(_GO_ESCAPES)
    for i, f in enumerate(floats):
        text = text.replace(f'"\\u0000kubesched-float-{i}\\u0000"', f, 1)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: Go strings hold U+FFFD there
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")


# ---------------------------------------------------------------- msgspec fast paths
_ENCODER = msgspec.json.Encoder()
_DECODER_FAST = msgspec.json.Decoder()


def _go_differs(out: bytes) -> bool:
    """Whether msgspec's output may differ from go_json's: it holds an escape (msgspec and Go
    escape control characters differently), or a character Go escapes and msgspec does not
    (``<``, ``>``, ``&``, U+2028, U+2029). Each test is a memchr-speed scan."""
    return (b"\\" in out or b"<" in out or b">" in out or b"&" in out
            or (b"\xe2\x80" in out and (b"\xe2\x80\xa8" in out or b"\xe2\x80\xa9" in out)))


def _fast_json(value: Any) -> bytes | None:
    """msgspec's encoding of ``value`` — only str, int, bool, None, and lists / str-keyed dicts
    of them, or HostPriority structs (str, int), which the callers guarantee — when it is
    byte-identical to :func:`go_json`'s."""
    try:
        out = _ENCODER.encode(value)
    except (TypeError, ValueError, msgspec.EncodeError):  # e.g. a lone surrogate (UnicodeEncodeError)
        return None
    return None if _go_differs(out) else out


def go_json_strings(items: Sequence[str]) -> bytes:
    """go_json(list(items)) for a list of strings (node names), ~20x faster."""
    out = _fast_json(items if isinstance(items, list) else list(items))
    return out if out is not None else go_json(list(items))


def go_json_string_map(m: Mapping[str, str]) -> bytes:
    """go_json of a map[string]string: keys sorted, as Go's encoder writes maps."""
    ordered = dict(sorted(m.items()))
    out = _fast_json(ordered)
    return out if out is not None else go_json(ordered)


def go_json_string(s: str) -> bytes:
    out = _fast_json(s)
    return out if out is not None else go_json(s)


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
_NODE_NAME = attrgetter("meta.name")
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
def extender_args(pod: Pod, nodes: Sequence[Node], node_cache_capable: bool, *,
                  names: Sequence[str] | None = None) -> bytes:
    """ExtenderArgs{Pod, Nodes, NodeNames}: full nodes as a v1.NodeList, or only their names
    for a nodeCacheCapable extender (HTTPExtender.Filter / Prioritize). ``names``: the nodes'
    names when the caller has them already."""
    parts = [b'{"Pod":', object_json(pod)]
    if node_cache_capable:
        parts.append(b',"Nodes":null,"NodeNames":')
        parts.append(go_json_strings(list(map(_NODE_NAME, nodes)) if names is None else names))
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


class _LongNumber:
    """An integer literal longer than Python converts from text (sys.get_int_max_str_digits(),
    4300 digits by default), kept as its text. No int64 holds it, so in Go it can only be an
    ignored field or an UnmarshalTypeError quoting the literal; int() would raise a bare
    ValueError instead of the decoder's WireError."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def _parse_int(text: str) -> int | _LongNumber:
    limit = sys.get_int_max_str_digits()
    return int(text) if not limit or len(text.lstrip("-")) <= limit else _LongNumber(text)


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_int=_parse_int)


def decode_json(body: bytes) -> Any:
    """The first JSON value of ``body`` (Decoder.Decode); raises WireError with Go's message."""
    try:
        # A body msgspec decodes is one JSON value, with only whitespace around it, valid UTF-8
        # and no lone surrogate, number out of range or non-finite literal: the value
        # decode_json_exact gives (tests/extender/test_wire_fast.py compares them).
        return _DECODER_FAST.decode(body)
    except (msgspec.MsgspecError, ValueError, RecursionError):
        return decode_json_exact(body)


def decode_json_exact(body: bytes) -> Any:
    """:func:`decode_json` with Python's decoder alone: every body, Go's messages."""
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
    except RecursionError:
        # Python's decoder recurses once per nesting level and gives up near 1000; Go's scanner
        # stops at 10000 levels with this text. A reply that deep was a RecursionError
        # traceback (found by fuzzing: scripts/fuzz.py).
        raise WireError("exceeded max depth") from None
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
    if isinstance(value, (int, float, _LongNumber)):
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
        kind = f"number {value}" if isinstance(value, _LongNumber) else f"number {json.dumps(value)}"
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


# The reply structs are decoded by the thousand (a HostPriority or a node per candidate) and
# never take part in a reference cycle: gc=False keeps them out of the cyclic collector, whose
# generation-0 passes a thousand tracked objects would trigger (~25% of a decode).
class _HostPriorityWire(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    Host: str = ""
    # int64 checked by the decoder: a score out of range takes the exact path (Go's error).
    Score: Annotated[int, msgspec.Meta(ge=_INT64_MIN, le=_INT64_MAX)] = 0


class _ObjectMetaWire(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """metav1.ObjectMeta's JSON fields: any other key (a case variant Go would still match)
    sends the reply to the exact path."""

    name: str = ""
    generateName: msgspec.Raw = msgspec.Raw(b"null")  # noqa: N815 - the JSON names
    namespace: msgspec.Raw = msgspec.Raw(b"null")
    selfLink: msgspec.Raw = msgspec.Raw(b"null")  # noqa: N815
    uid: msgspec.Raw = msgspec.Raw(b"null")
    resourceVersion: msgspec.Raw = msgspec.Raw(b"null")  # noqa: N815
    generation: msgspec.Raw = msgspec.Raw(b"null")
    creationTimestamp: msgspec.Raw = msgspec.Raw(b"null")  # noqa: N815
    deletionTimestamp: msgspec.Raw = msgspec.Raw(b"null")  # noqa: N815
    deletionGracePeriodSeconds: msgspec.Raw = msgspec.Raw(b"null")  # noqa: N815
    labels: msgspec.Raw = msgspec.Raw(b"null")
    annotations: msgspec.Raw = msgspec.Raw(b"null")
    ownerReferences: msgspec.Raw = msgspec.Raw(b"null")  # noqa: N815
    finalizers: msgspec.Raw = msgspec.Raw(b"null")
    managedFields: msgspec.Raw = msgspec.Raw(b"null")  # noqa: N815


class _NodeWire(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    apiVersion: msgspec.Raw = msgspec.Raw(b"null")  # noqa: N815
    kind: msgspec.Raw = msgspec.Raw(b"null")
    metadata: _ObjectMetaWire | None = None
    spec: msgspec.Raw = msgspec.Raw(b"null")
    status: msgspec.Raw = msgspec.Raw(b"null")


class _NodeListReplyWire(msgspec.Struct, forbid_unknown_fields=True):
    apiVersion: msgspec.Raw = msgspec.Raw(b"null")  # noqa: N815
    kind: msgspec.Raw = msgspec.Raw(b"null")
    metadata: msgspec.Raw = msgspec.Raw(b"null")
    items: list[_NodeWire] | None = None


class _FilterResultWire(msgspec.Struct, forbid_unknown_fields=True):
    Nodes: _NodeListReplyWire | None = None
    NodeNames: list[str] | None = None
    FailedNodes: dict[str, str] | None = None
    FailedAndUnresolvableNodes: dict[str, str] | None = None
    Error: str = ""


_HOST_PRIORITIES = msgspec.json.Decoder(list[_HostPriorityWire])
_FILTER_RESULT = msgspec.json.Decoder(_FilterResultWire)


def decode_host_priority_list(body: bytes) -> list[tuple[str, int]]:
    """A prioritize reply body as (host, score) pairs: parse_host_priority_list(decode_json(body)),
    decoded in one pass when every entry has exactly the keys ``Host`` (a string) and ``Score``
    (an int64); raises WireError with Go's message."""
    return list(zip(*decode_host_priority_columns(body), strict=True))


def decode_host_priority_columns(body: bytes) -> tuple[list[str], list[int]]:
    """:func:`decode_host_priority_list` as two aligned lists, hosts and scores (no Python
    object per entry on the fast path)."""
    try:
        items = _HOST_PRIORITIES.decode(body)
    except (msgspec.MsgspecError, ValueError, RecursionError):
        pairs = parse_host_priority_list(decode_json(body))
        return [s.host for s in pairs], [s.score for s in pairs]
    return [h.Host for h in items], [h.Score for h in items]


def decode_filter_result(body: bytes) -> FilterReply:
    """A filter reply body: parse_filter_result(decode_json(body)), decoded in one pass when it
    has only the exact Go (and, in full nodes, JSON) field names and their types; raises
    WireError with Go's message."""
    try:
        r = _FILTER_RESULT.decode(body)
    except (msgspec.MsgspecError, ValueError, RecursionError):
        return parse_filter_result(decode_json(body))  # the generic fast decoder may still read it
    items: list[str] | None = None
    if r.Nodes is not None:
        items = [n.metadata.name if n.metadata is not None else "" for n in r.Nodes.items or ()]
    return FilterReply(items, r.NodeNames, r.FailedNodes or {}, r.FailedAndUnresolvableNodes or {}, r.Error)


class _NodeListWire(msgspec.Struct, forbid_unknown_fields=True):
    metadata: msgspec.Raw = msgspec.Raw(b"null")  # a ListMeta nobody reads
    items: list[msgspec.Raw] | None = None


class _ExtenderArgsWire(msgspec.Struct, forbid_unknown_fields=True):
    Pod: msgspec.Raw = msgspec.Raw(b"null")
    Nodes: _NodeListWire | None = None
    NodeNames: list[str] | None = None


_EXTENDER_ARGS = msgspec.json.Decoder(_ExtenderArgsWire)


@dataclass(frozen=True, slots=True)
class RawExtenderArgs:
    """ExtenderArgs with the pod and each node still as their JSON text (for a decoder that
    caches what it parsed from identical text)."""

    pod: bytes
    nodes: list[bytes] | None
    node_names: list[str] | None


def split_extender_args(body: bytes) -> RawExtenderArgs | None:
    """The fast way to read an ExtenderArgs body: its pod and nodes as raw JSON objects, its
    NodeNames as strings. None when the body is anything but the plain shape kube-scheduler sends
    (exact Go field names, a pod object, null or object Nodes whose items are objects, null or
    string NodeNames, nothing else): the caller then takes the exact path, which gives Go's
    errors and case-insensitive keys."""
    try:
        args = _EXTENDER_ARGS.decode(body)
    except (msgspec.MsgspecError, ValueError, RecursionError):
        return None
    pod = bytes(args.Pod)
    if not pod.startswith(b"{"):
        return None
    nodes: list[bytes] | None = None
    if args.Nodes is not None:
        nodes = [bytes(r) for r in args.Nodes.items or ()]
        if not all(n.startswith(b"{") for n in nodes):
            return None
    if nodes is None and args.NodeNames is None:
        return None
    return RawExtenderArgs(pod, nodes, args.NodeNames if nodes is None else None)


def decode_object(raw: bytes) -> dict[str, Any]:
    """A JSON object cut out of a body :func:`split_extender_args` accepted."""
    value = decode_json(raw)
    if not isinstance(value, dict):
        raise WireError("json: not an object")
    return value


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
        b',"NodeNames":', go_json_strings(node_names) if node_names is not None else b"null",
        b',"FailedNodes":', go_json_string_map(failed),
        b',"FailedAndUnresolvableNodes":', go_json_string_map(failed_and_unresolvable),
        b',"Error":', go_json_string(error), b"}",
    ])


def host_priority_list_json(scores: Iterable[HostPriority]) -> bytes:
    items = list(scores)
    return host_priorities_json([s.host for s in items], [s.score for s in items])


def host_priorities_json(hosts: Sequence[str], scores: Sequence[int], *, plain_ints: bool = False) -> bytes:
    """HostPriorityList for ``hosts[i]`` scored ``scores[i]`` (ints; ``plain_ints``: the caller
    checked that each is an ``int`` and no subclass)."""
    if len(hosts) != len(scores):
        raise ValueError(f"{len(hosts)} hosts, {len(scores)} scores")
    # msgspec writes a struct's fields in declaration order, compact: Go's HostPriority exactly
    # (int scores only: a bool or float subclass would print differently).
    if hosts and (plain_ints or set(map(type, scores)) <= {int}):
        out = _fast_json(list(map(_HostPriorityWire, hosts, scores)))
        if out is not None:
            return out
    return go_json([{"Host": h, "Score": s} for h, s in zip(hosts, scores, strict=True)])


def binding_result_json(error: str) -> bytes:
    return go_json({"Error": error})


def preemption_result_json(victims: Mapping[str, MetaVictims]) -> bytes:
    return go_json({"NodeNameToMetaVictims": {
        node: {"Pods": [{"UID": u} for u in v.uids], "NumPDBViolations": v.num_pdb_violations}
        for node, v in sorted(victims.items())
    }})
