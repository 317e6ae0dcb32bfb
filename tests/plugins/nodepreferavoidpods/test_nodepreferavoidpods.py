"""NodePreferAvoidPods (legacy v1.21/v1.22 plugin): upstream node_prefer_avoid_pods_test.go's
TestNodePreferAvoidPods, plus the json.Unmarshal semantics of the annotation and batch
equivalence."""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np
import pytest
from builders import make_node, make_pod, obj

from kubesched._runtime.handle import FrameworkHandle
from kubesched.errors import PluginError
from kubesched.framework import MAX_NODE_SCORE, CycleState
from kubesched.objects import Node, Pod
from kubesched.plugins import nodepreferavoidpods
from kubesched.plugins.nodepreferavoidpods import NAME
from kubesched.plugins.nodepreferavoidpods.plugin import PREFER_AVOID_PODS_ANNOTATION_KEY, avoided_controllers

M = MAX_NODE_SCORE
KEY = PREFER_AVOID_PODS_ANNOTATION_KEY


def entry(kind: str, uid: str, name: str = "foo", **extra: Any) -> dict[str, Any]:
    return {"podSignature": {"podController": {"apiVersion": "v1", "kind": kind, "name": name, "uid": uid,
                                               "controller": True}},
            "reason": "some reason", "message": "some message", **extra}


def annotation(*entries: dict[str, Any]) -> str:
    return json.dumps({"preferAvoidPods": list(entries)}, indent=4)


def node(name: str, value: str | None = None) -> Node:
    b = make_node().name(name)
    if value is not None:
        b = b.annotation(KEY, value)
    return b.obj()


def pod(*owners: tuple[str, str, bool]) -> Pod:
    m = make_pod().name("p").manifest()
    m["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": kind, "name": "foo", "uid": uid, **({"controller": True} if ctl else {})}
        for kind, uid, ctl in owners]
    p: Pod = obj(m)
    return p


NODES = [node("machine1", annotation(entry("ReplicationController", "abcdef123456"))),
         node("machine2", annotation(entry("ReplicaSet", "qwert12345"))),
         node("machine3")]


def scores(p: Pod, nodes: list[Node]) -> list[int]:
    handle = FrameworkHandle.for_nodes(nodes)
    pl = nodepreferavoidpods.new(None, handle)
    state = CycleState()
    infos = [handle.snapshot.get(n.meta.name) for n in nodes]
    got = [pl.score(state, p, ni) for ni in infos if ni is not None]
    rows = np.array([ni.index for ni in infos if ni is not None], np.int64)
    assert pl.score_batch(state, p, handle.snapshot.table, rows).tolist() == got
    return got


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        pytest.param(pod(("ReplicationController", "abcdef123456", True)), [0, M, M],
                     id="a pod of a replication controller the node avoids scores 0 there"),
        pytest.param(pod(("RandomController", "abcdef123456", True)), [M, M, M],
                     id="ownership by another kind of controller is ignored"),
        pytest.param(pod(("ReplicationController", "abcdef123456", False)), [M, M, M],
                     id="an owner that is not the controller is ignored"),
        pytest.param(pod(("ReplicaSet", "qwert12345", True)), [M, 0, M],
                     id="a pod of a replica set the node avoids scores 0 there"),
        # ---- beyond upstream
        pytest.param(pod(), [M, M, M], id="a pod without owner scores the maximum everywhere"),
        pytest.param(pod(("ReplicaSet", "abcdef123456", True)), [M, M, M],
                     id="kind and uid must both match the avoided controller"),
        pytest.param(pod(("ReplicaSet", "other", False), ("ReplicationController", "abcdef123456", True)), [0, M, M],
                     id="the first owner marked controller is the one compared"),
    ],
)
def test_score(p: Pod, expected: list[int]) -> None:
    assert scores(p, NODES) == expected


RC_POD = pod(("ReplicationController", "u1", True))
RC = {"podSignature": {"podController": {"kind": "ReplicationController", "uid": "u1"}}}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(json.dumps({"preferAvoidPods": [RC]}), 0, id="a minimal entry is enough"),
        pytest.param(json.dumps({"PreferAvoidPods": [{"PODSIGNATURE": {"podcontroller": {"Kind":
                     "ReplicationController", "UID": "u1"}}}]}), 0,
                     id="field names match case-insensitively like encoding/json"),
        pytest.param(json.dumps({"preferAvoidPods": [RC], "extra": {"x": [1, 2]}}), 0,
                     id="unknown fields are ignored"),
        pytest.param("", M, id="an empty annotation avoids nothing"),
        pytest.param("{not json", M, id="an annotation that is not JSON is ignored"),
        pytest.param(json.dumps([RC]), M, id="a top-level array is a type error and the annotation is ignored"),
        pytest.param(json.dumps({"preferAvoidPods": [RC, {"reason": 5}]}), M,
                     id="a type error in any entry makes the whole annotation unusable"),
        pytest.param(json.dumps({"preferAvoidPods": [RC], "preferavoidpods": "x"}), M,
                     id="a later duplicate key of the wrong type is an error"),
        pytest.param(json.dumps({"preferAvoidPods": [{**RC, "evictionTime": "2021-02-30T00:00:00Z"}]}), M,
                     id="an invalid eviction time is an error"),
        pytest.param(json.dumps({"preferAvoidPods": [{**RC, "evictionTime": "2021-04-08T10:00:00.5+02:00"}]}), 0,
                     id="an RFC 3339 eviction time with fractional seconds is fine"),
        pytest.param(json.dumps({"preferAvoidPods": None}), M, id="a null list avoids nothing"),
        pytest.param(json.dumps(None), M, id="a null document avoids nothing"),
        pytest.param('{"preferAvoidPods": [{"podSignature": {"podController": {"kind": "ReplicationController",'
                     ' "uid": "u1", "controller": NaN}}}]}', M, id="NaN is not JSON for Go"),
        pytest.param(json.dumps({"preferAvoidPods": [RC, {}]}), 0,
                     id="an entry without controller after the match is never dereferenced"),
        pytest.param(json.dumps({"preferAvoidPods": [RC], "PreferAvoidPods": []}), M,
                     id="the last duplicate key wins"),
    ],
)
def test_annotation_decoding(value: str, expected: int) -> None:
    assert scores(RC_POD, [node("n", value)]) == [expected]


def test_an_entry_without_pod_controller_before_a_match_aborts_the_cycle() -> None:
    # Upstream dereferences a nil PodController here (a panic); kubesched reports a PluginError.
    value = json.dumps({"preferAvoidPods": [{"reason": "no signature"}, RC]})
    assert avoided_controllers({KEY: value}) == (None, ("ReplicationController", "u1"))
    handle = FrameworkHandle.for_nodes([node("n", value)])
    pl = nodepreferavoidpods.new(None, handle)
    ni = handle.snapshot.get("n")
    assert ni is not None
    with pytest.raises(PluginError, match="no podController"):
        pl.score(CycleState(), RC_POD, ni)
    # A pod without an avoidable controller never reads the annotation.
    assert pl.score(CycleState(), pod(), ni) == M


def test_a_repeated_pod_controller_merges_into_the_same_reference() -> None:
    doc = ('{"preferAvoidPods": [{"podSignature": {"podController": {"kind": "ReplicationController", "uid": "x"},'
           ' "podController": {"uid": "u1"}}}]}')
    assert avoided_controllers({KEY: doc}) == (("ReplicationController", "u1"),)


@pytest.mark.parametrize("seed", range(20), ids=lambda s: f"random cluster {s} gives the same batch and per-node results")
def test_batch_equals_per_node(seed: int) -> None:
    rng = random.Random(seed)
    kinds = ["ReplicationController", "ReplicaSet", "StatefulSet"]
    uids = ["u1", "u2", "u3"]
    nodes = []
    for i in range(rng.randint(1, 10)):
        r = rng.random()
        if r < 0.2:
            nodes.append(node(f"n{i}"))
        elif r < 0.3:
            nodes.append(node(f"n{i}", "{bad"))
        else:
            es = [entry(rng.choice(kinds), rng.choice(uids)) for _ in range(rng.randint(0, 3))]
            nodes.append(node(f"n{i}", annotation(*es)))
    for _ in range(5):
        p = pod((rng.choice(kinds), rng.choice(uids), rng.random() < 0.8))
        scores(p, nodes)


def test_plugin_shape() -> None:
    pl = nodepreferavoidpods.new(None, FrameworkHandle.for_nodes([]))
    assert pl.name == NAME == "NodePreferAvoidPods"
    assert pl.events_to_register() == []
    assert not hasattr(pl, "normalize_score") and not hasattr(pl, "pre_score")
