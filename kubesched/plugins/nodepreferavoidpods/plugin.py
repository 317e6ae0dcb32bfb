"""NodePreferAvoidPods: a node may ask (annotation
``scheduler.alpha.kubernetes.io/preferAvoidPods``) that pods of given ReplicationControllers
/ ReplicaSets avoid it; such pods score 0 there, every other (pod, node) pair scores
MaxNodeScore (Score only).

Mirrors framework/plugins/nodepreferavoidpods/node_prefer_avoid_pods.go as of v1.21/v1.22
(the legacy Policy's NodePreferAvoidPodsPriority, weight 10000 in the default priorities)
and v1helper.GetAvoidPodsFromNodeAnnotations, whose json.Unmarshal semantics are reproduced:
field names match case-insensitively, unknown fields are ignored, and any syntax or type
error (anywhere in the document) makes the annotation unusable — the node then scores
MaxNodeScore ("assume it's schedulable there").
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from kubesched.errors import PluginError
from kubesched.framework import (
    MAX_NODE_SCORE,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    NodeTable,
)
from kubesched.framework.interfaces import IntArray
from kubesched.objects import Node, Pod

NAME = "NodePreferAvoidPods"
PREFER_AVOID_PODS_ANNOTATION_KEY = "scheduler.alpha.kubernetes.io/preferAvoidPods"
_AVOIDABLE_KINDS = ("ReplicationController", "ReplicaSet")


class _DecodeError(Exception):
    """json.Unmarshal would return an error."""


def _reject_constant(name: str) -> Any:
    # Go's decoder has no NaN / Infinity literals.
    raise _DecodeError(name)


def _fold(name: str) -> str:
    """The case folding encoding/json uses to match object keys to field names (ASCII
    case-insensitive, plus the Kelvin sign for k and the long s for s)."""
    return name.replace("\u212a", "k").replace("\u017f", "s").lower()


def _fields(obj: Any, names: tuple[str, ...]) -> list[tuple[str, Any]] | None:
    """The (field, value) pairs of a JSON object, in document order, for the known fields;
    None for JSON null (a no-op in Go); _DecodeError for any other non-object."""
    if obj is None:
        return None
    if not isinstance(obj, _Pairs):
        raise _DecodeError("not an object")
    by_fold = {n.lower(): n for n in names}
    out: list[tuple[str, Any]] = []
    for key, value in obj.pairs:
        field = by_fold.get(_fold(key)) if key not in names else key
        if field is not None:
            out.append((field, value))
    return out


class _Pairs:
    """A decoded JSON object keeping every key/value pair (duplicates included)."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        self.pairs = pairs


def _string(value: Any) -> str | None:
    """A Go string field: null leaves it unset (None here), a non-string is a type error."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise _DecodeError("not a string")
    return value


def _bool(value: Any) -> None:
    if value is not None and not isinstance(value, bool):
        raise _DecodeError("not a bool")


_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-](\d{2}):(\d{2}))")
_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _time(value: Any) -> None:
    """metav1.Time.UnmarshalJSON: null, or a string time.Parse(time.RFC3339) accepts
    (fractional seconds allowed; ranges checked; best effort on Go's zone rules)."""
    if value is None:
        return
    if not isinstance(value, str):
        raise _DecodeError("time is not a string")
    m = _RFC3339.fullmatch(value)
    if m is None:
        raise _DecodeError("bad time")
    year, month, day, hour, minute, sec = (int(m.group(i)) for i in range(1, 7))
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= month <= 12:
        raise _DecodeError("month out of range")
    days = 29 if month == 2 and leap else (28 if month == 2 else _DAYS[month - 1])
    if not 1 <= day <= days or hour > 23 or minute > 59 or sec > 59:
        raise _DecodeError("out of range")
    if m.group(9) is not None and (int(m.group(9)) > 24 or int(m.group(10)) > 59):
        raise _DecodeError("bad zone offset")


class _Entry:
    """A PreferAvoidPodsEntry being decoded; ``controller`` is its podSignature.podController
    as [kind, uid], None while the pointer is nil."""

    __slots__ = ("controller",)

    def __init__(self) -> None:
        self.controller: list[str] | None = None


_OWNER_FIELDS = ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")


def _decode_entry(entry: _Entry, item: Any) -> None:
    """Decode one array element into ``entry`` the way encoding/json does: null leaves a
    struct untouched, a null pointer resets it, an object decodes into the existing
    pointee (fields it lacks keep their values)."""
    for field, value in _fields(item, ("podSignature", "evictionTime", "reason", "message")) or ():
        if field == "podSignature":
            for _, ctrl in _fields(value, ("podController",)) or ():
                if ctrl is None:
                    entry.controller = None
                    continue
                if entry.controller is None:
                    entry.controller = ["", ""]
                for f2, v2 in _fields(ctrl, _OWNER_FIELDS) or ():
                    if f2 in ("controller", "blockOwnerDeletion"):
                        _bool(v2)
                        continue
                    s = _string(v2)
                    if s is None:
                        continue
                    if f2 == "kind":
                        entry.controller[0] = s
                    elif f2 == "uid":
                        entry.controller[1] = s
        elif field == "evictionTime":
            _time(value)
        else:
            _string(value)


AvoidList = tuple[tuple[str, str] | None, ...]


def avoided_controllers(annotations: Mapping[str, str]) -> AvoidList | None:
    """v1helper.GetAvoidPodsFromNodeAnnotations reduced to what Score uses: each entry's
    podController as (kind, uid), in order, None for an entry without a podController; the
    whole result is None when json.Unmarshal would return an error."""
    raw = annotations.get(PREFER_AVOID_PODS_ANNOTATION_KEY, "")
    if not raw:
        return ()
    try:
        doc = json.loads(raw, object_pairs_hook=_Pairs, parse_constant=_reject_constant)
        entries: list[_Entry] = []
        # v1.AvoidPods{preferAvoidPods []PreferAvoidPodsEntry}; a repeated key decodes into
        # the same slice again (elements reused, length reset to the new array's).
        for _, value in _fields(doc, ("preferAvoidPods",)) or ():
            if value is None:
                entries = []
                continue
            if not isinstance(value, list):
                raise _DecodeError("preferAvoidPods is not an array")
            decoded: list[_Entry] = []
            for i, item in enumerate(value):
                entry = entries[i] if i < len(entries) else _Entry()
                _decode_entry(entry, item)
                decoded.append(entry)
            entries = decoded
        return tuple(None if e.controller is None else (e.controller[0], e.controller[1]) for e in entries)
    except (_DecodeError, ValueError, RecursionError):
        return None


def avoidable_controller(pod: Pod) -> tuple[str, str] | None:
    """metav1.GetControllerOf(pod), kept only for a ReplicationController or ReplicaSet
    (by kind alone): (kind, uid)."""
    ref = pod.meta.controller_ref()
    if ref is None or ref.kind not in _AVOIDABLE_KINDS:
        return None
    return ref.kind, ref.uid


def score_for(controller: tuple[str, str] | None, avoids: AvoidList | None) -> int:
    """0 when an entry (in annotation order) names the pod's controller by kind and UID,
    else MaxNodeScore. An entry without podController before any match dereferences a nil
    pointer upstream (a scheduler panic); here it aborts the cycle with a PluginError."""
    if controller is None or avoids is None:
        # No avoidable controller; or the annotation cannot be read: assume it's schedulable there.
        return MAX_NODE_SCORE
    for avoid in avoids:
        if avoid is None:
            raise PluginError(f"{NAME}: a {PREFER_AVOID_PODS_ANNOTATION_KEY} entry has no podController "
                              "(upstream dereferences a nil pointer)")
        if avoid == controller:
            return 0
    return MAX_NODE_SCORE


def node_score(controller: tuple[str, str] | None, node: Node) -> int:
    """Score of a node for a pod whose avoidable controller is ``controller``."""
    if controller is None:
        return MAX_NODE_SCORE
    return score_for(controller, avoided_controllers(node.meta.annotations))


class _RowIndex:
    """Per-row parsed annotations, valid for one ``node_version`` of the table."""

    __slots__ = ("version", "avoids")

    def __init__(self, table: NodeTable) -> None:
        self.version = table.node_version
        self.avoids: list[AvoidList | None] = [
            avoided_controllers(node.meta.annotations) if node is not None else None
            for node in table.nodes[: table.size]
        ]


class NodePreferAvoidPods:
    name = NAME

    def __init__(self, handle: Handle | None = None) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Score-only plugin: nothing it does can make a pod unschedulable.
        return []

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        node = node_info.node
        assert node is not None
        return node_score(avoidable_controller(pod), node)

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> IntArray:
        controller = avoidable_controller(pod)
        if controller is None:
            return np.full(rows.size, MAX_NODE_SCORE, np.int64)
        idx = table.extras.get(NAME)
        if not isinstance(idx, _RowIndex) or idx.version != table.node_version:
            idx = _RowIndex(table)
            table.extras[NAME] = idx
        avoids = idx.avoids
        return np.fromiter((score_for(controller, avoids[r]) for r in rows.tolist()), np.int64, rows.size)


def new(args: object, handle: Handle) -> NodePreferAvoidPods:
    """Plugin factory (registry entry). NodePreferAvoidPods takes no args."""
    return NodePreferAvoidPods(handle)
