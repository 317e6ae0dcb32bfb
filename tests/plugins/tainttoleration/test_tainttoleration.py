"""TaintToleration (upstream taint_toleration_test.go TestTaintTolerationScore /
TestTaintTolerationFilter with v1.30 reason strings, plus batch equivalence)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from builders import make_node, make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features
from kubesched.framework import GVK, MAX_NODE_SCORE, ActionType, Code, CycleState, NodeScore
from kubesched.objects import Node, Pod, Taint, Toleration
from kubesched.plugins import tainttoleration
from kubesched.plugins.tainttoleration import NAME
from kubesched.plugins.tainttoleration.plugin import ERR_REASON_UNTOLERATED, find_untolerated_taint

T = dict[str, Any]


def node_with_taints(name: str, taints: list[T]) -> Node:
    b = make_node().name(name).capacity(cpu="4", memory="4Gi", pods=110)
    for t in taints:
        b = b.taint(t["key"], t.get("value", ""), t["effect"])
    return b.obj()


def pod_with_tolerations(tolerations: list[T]) -> Pod:
    b = make_pod().name("pod1")
    for t in tolerations:
        b = b.toleration(**t)
    return b.obj()


def tol(key: str, value: str = "", effect: str = "", operator: str = "Equal") -> T:
    t: T = {"key": key, "operator": operator}
    if value:
        t["value"] = value
    if effect:
        t["effect"] = effect
    return t


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> T:
    return {"key": key, "value": value, "effect": effect}


PNS = "PreferNoSchedule"


@pytest.mark.parametrize(
    ("pod", "nodes", "expected"),
    [
        (pod_with_tolerations([tol("foo", "bar", PNS)]),
         [node_with_taints("nodeA", [taint("foo", "bar", PNS)]), node_with_taints("nodeB", [taint("foo", "blah", PNS)])],
         [MAX_NODE_SCORE, 0]),
        (pod_with_tolerations([tol("cpu-type", "arm64", PNS), tol("disk-type", "ssd", PNS)]),
         [node_with_taints("nodeA", []), node_with_taints("nodeB", [taint("cpu-type", "arm64", PNS)]),
          node_with_taints("nodeC", [taint("cpu-type", "arm64", PNS), taint("disk-type", "ssd", PNS)])],
         [MAX_NODE_SCORE, MAX_NODE_SCORE, MAX_NODE_SCORE]),
        (pod_with_tolerations([tol("foo", "bar", PNS)]),
         [node_with_taints("nodeA", []), node_with_taints("nodeB", [taint("cpu-type", "arm64", PNS)]),
          node_with_taints("nodeC", [taint("cpu-type", "arm64", PNS), taint("disk-type", "ssd", PNS)])],
         [MAX_NODE_SCORE, 50, 0]),
        (pod_with_tolerations([tol("cpu-type", "arm64", "NoSchedule"), tol("disk-type", "ssd", "NoSchedule")]),
         [node_with_taints("nodeA", []), node_with_taints("nodeB", [taint("cpu-type", "arm64", "NoSchedule")]),
          node_with_taints("nodeC", [taint("cpu-type", "arm64", PNS), taint("disk-type", "ssd", PNS)])],
         [MAX_NODE_SCORE, MAX_NODE_SCORE, 0]),
        (pod_with_tolerations([]),
         [node_with_taints("nodeA", []), node_with_taints("nodeB", [taint("cpu-type", "arm64", PNS)])],
         [MAX_NODE_SCORE, 0]),
        # ---- beyond upstream
        (pod_with_tolerations([tol("cpu-type", "arm64")]),
         [node_with_taints("nodeA", [taint("cpu-type", "arm64", PNS)]), node_with_taints("nodeB", [taint("x", "", PNS)])],
         [MAX_NODE_SCORE, 0]),
        (pod_with_tolerations([tol("", operator="Exists")]),
         [node_with_taints("nodeA", [taint("a", "1", PNS)]), node_with_taints("nodeB", [])],
         [MAX_NODE_SCORE, MAX_NODE_SCORE]),
    ],
    ids=[
        "node with taints tolerated by the pod scores higher than one with intolerable taints",
        "nodes whose taints are all tolerated score the same however many taints they have",
        "the more intolerable taints a node has the lower it scores",
        "only PreferNoSchedule taints and tolerations are considered by scoring",
        "pod without tolerations prefers the node without taints",
        "a toleration with an empty effect counts for scoring",
        "a toleration of everything makes every node score the maximum",
    ],
)
def test_score(pod: Pod, nodes: list[Node], expected: list[int]) -> None:
    handle = FrameworkHandle.for_nodes(nodes)
    pl = tainttoleration.new(None, handle)
    state = CycleState()
    infos = [handle.snapshot.get(n.name) for n in nodes]
    nis = [ni for ni in infos if ni is not None]
    assert pl.pre_score(state, pod, nis) is None
    scores = [NodeScore(ni.name, pl.score(state, pod, ni)) for ni in nis]
    raw = [s.score for s in scores]
    rows = np.array([ni.index for ni in nis], np.int64)
    assert pl.score_batch(state, pod, handle.snapshot.table, rows).tolist() == raw
    assert pl.normalize_score(state, pod, scores) is None
    assert [s.score for s in scores] == expected
    assert pl.normalize_score_batch(state, pod, np.array(raw, np.int64)).tolist() == expected


@pytest.mark.parametrize(
    ("pod", "node", "want"),
    [
        (pod_with_tolerations([]), node_with_taints("nodeA", [taint("dedicated", "user1")]),
         "node(s) had untolerated taint {dedicated: user1}"),
        (pod_with_tolerations([tol("dedicated", "user1", "NoSchedule")]),
         node_with_taints("nodeA", [taint("dedicated", "user1")]), None),
        (pod_with_tolerations([tol("dedicated", "user2", "NoSchedule")]),
         node_with_taints("nodeA", [taint("dedicated", "user1")]), "node(s) had untolerated taint {dedicated: user1}"),
        (pod_with_tolerations([tol("foo", effect="NoSchedule", operator="Exists")]),
         node_with_taints("nodeA", [taint("foo", "bar")]), None),
        (pod_with_tolerations([tol("dedicated", "user2", "NoSchedule"), tol("foo", effect="NoSchedule",
                                                                           operator="Exists")]),
         node_with_taints("nodeA", [taint("dedicated", "user2"), taint("foo", "bar")]), None),
        (pod_with_tolerations([tol("foo", "bar", PNS)]), node_with_taints("nodeA", [taint("foo", "bar")]),
         "node(s) had untolerated taint {foo: bar}"),
        (pod_with_tolerations([tol("foo", "bar")]), node_with_taints("nodeA", [taint("foo", "bar")]), None),
        (pod_with_tolerations([tol("dedicated", "user2", "NoSchedule")]),
         node_with_taints("nodeA", [taint("dedicated", "user1", PNS)]), None),
        (pod_with_tolerations([]), node_with_taints("nodeA", [taint("dedicated", "user1", PNS)]), None),
        # ---- beyond upstream
        (pod_with_tolerations([]), node_with_taints("nodeA", [taint("node-role.kubernetes.io/control-plane")]),
         "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"),
        (pod_with_tolerations([tol("a", "1", "NoSchedule")]),
         node_with_taints("nodeA", [taint("a", "1"), taint("b", "2", "NoExecute"), taint("c", "3")]),
         "node(s) had untolerated taint {b: 2}"),
        (pod_with_tolerations([tol("k", effect="NoSchedule", operator="Exists")]),
         node_with_taints("nodeA", [taint("k", "v", "NoExecute")]), "node(s) had untolerated taint {k: v}"),
        (pod_with_tolerations([tol("", operator="Exists")]),
         node_with_taints("nodeA", [taint("a", "1"), taint("b", "2", "NoExecute")]), None),
    ],
    ids=[
        "a pod with no tolerations can't be scheduled onto a node with a taint",
        "a pod tolerating the dedicated NoSchedule taint can be scheduled",
        "a pod tolerating another value can't be scheduled",
        "a toleration with operator Exists tolerates the taint",
        "multiple tolerations tolerating all of multiple taints",
        "a toleration whose non-empty effect differs does not tolerate",
        "a toleration with an empty effect tolerates a NoSchedule taint",
        "a PreferNoSchedule taint never blocks even if not tolerated",
        "a pod with no toleration ignores PreferNoSchedule taints",
        "a taint with an empty value is reported with an empty value",
        "the first untolerated taint in node order is reported, NoExecute included",
        "a NoSchedule toleration does not tolerate a NoExecute taint",
        "an empty-key Exists toleration tolerates every taint",
    ],
)
@pytest.mark.parametrize("features", [FEATURES_1_30, FEATURES_1_36],
                         ids=["v1.30 names the taint", "1.36 gives one reason for any taint"])
def test_filter(pod: Pod, node: Node, want: str | None, features: Features) -> None:
    if want is not None and features.enabled("GenericTaintReason"):
        want = ERR_REASON_UNTOLERATED
    handle = FrameworkHandle.for_nodes([node], features=features)
    pl = tainttoleration.new(None, handle)
    ni = handle.snapshot.get(node.name)
    assert ni is not None
    got = pl.filter(CycleState(), pod, ni)
    if want is None:
        assert got is None
    else:
        assert got is not None
        assert got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert got.reasons == (want,)
    assert pl.filter_batch(CycleState(), pod, handle.snapshot.table,
                           np.array([ni.index], np.int64)).tolist() == [want is None]


@pytest.mark.parametrize("operator", ["Gt", "Lt", "Bogus"],
                         ids=["Gt is not a v1.30 operator", "Lt is not a v1.30 operator", "an unknown operator"])
def test_unknown_toleration_operators_tolerate_nothing(operator: str) -> None:
    # v1.30's Toleration.ToleratesTaint only knows Exists and Equal (or empty); such
    # tolerations cannot even be parsed from a manifest, so build the objects directly.
    tolerations = (Toleration(key="node.kubernetes.io/sla", operator=operator, value="750", effect="NoSchedule"),)
    assert find_untolerated_taint((Taint("node.kubernetes.io/sla", "950"),), tolerations) is not None


def test_pre_score_with_no_nodes_writes_nothing() -> None:
    pl = tainttoleration.new(None, FrameworkHandle.for_nodes([]))
    state = CycleState()
    assert pl.pre_score(state, pod_with_tolerations([]), []) is None
    assert not state._data


KEYS = ["dedicated", "gpu", "node-role.kubernetes.io/control-plane", "zone"]
EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]


def _random_taints(rng: random.Random) -> list[T]:
    out: dict[tuple[str, str], T] = {}
    for _ in range(rng.randint(0, 4)):
        t = taint(rng.choice(KEYS), rng.choice(["", "a", "b"]), rng.choice(EFFECTS))
        out[(t["key"], t["effect"])] = t  # key+effect unique on a node, as the API requires
    return list(out.values())


def _random_toleration(rng: random.Random) -> T:
    op = rng.choice(["Equal", "Exists"])
    key = rng.choice(KEYS + [""]) if op == "Exists" else rng.choice(KEYS)
    value = rng.choice(["", "a", "b"]) if op == "Equal" else ""
    return tol(key, value, rng.choice(EFFECTS + [""]), op)


@pytest.mark.parametrize("seed", range(40), ids=lambda s: f"random cluster {s} gives the same batch and per-node results")
@pytest.mark.parametrize("features", [FEATURES_1_30, FEATURES_1_36], ids=["1.30", "1.36"])
def test_batch_equals_per_node(seed: int, features: Features) -> None:
    rng = random.Random(seed)
    nodes = [node_with_taints(f"node-{i}", _random_taints(rng)) for i in range(rng.randint(1, 14))]
    handle = FrameworkHandle.for_nodes(nodes, features=features)
    pl = tainttoleration.new(None, handle)
    infos = list(handle.snapshot.list())
    by_row = {ni.index: ni for ni in infos}
    rows = np.array([ni.index for ni in infos], np.int64)
    for _ in range(6):
        pod = pod_with_tolerations([_random_toleration(rng) for _ in range(rng.randint(0, 3))])
        order = np.array(rng.sample(rows.tolist(), len(rows)), np.int64)
        state = CycleState()
        for sub in (order, order[: len(order) // 2]):
            per_node = [pl.filter(state, pod, by_row[r]) is None for r in sub.tolist()]
            assert pl.filter_batch(state, pod, handle.snapshot.table, sub).tolist() == per_node
            codes, statuses = pl.filter_batch_status(state, pod, handle.snapshot.table, sub)
            want = [pl.filter(state, pod, by_row[r]) for r in sub.tolist()]
            got = [statuses[c] for c in codes.tolist()]
            assert [None if s is None else (s.code, s.reasons) for s in got] == [
                None if s is None else (s.code, s.reasons) for s in want]
        assert pl.pre_score(state, pod, infos) is None
        raw = [pl.score(state, pod, by_row[r]) for r in order.tolist()]
        assert pl.score_batch(state, pod, handle.snapshot.table, order).tolist() == raw
        scores = [NodeScore(by_row[r].name, s) for r, s in zip(order.tolist(), raw, strict=True)]
        pl.normalize_score(state, pod, scores)
        assert pl.normalize_score_batch(state, pod, np.array(raw, np.int64)).tolist() == [s.score for s in scores]


def test_batch_follows_taint_updates() -> None:
    handle = FrameworkHandle.for_nodes([node_with_taints("a", []), node_with_taints("b", [])])
    pl = tainttoleration.new(None, handle)
    pod = pod_with_tolerations([])
    infos = list(handle.snapshot.list())
    rows = np.array([ni.index for ni in infos], np.int64)
    assert pl.filter_batch(CycleState(), pod, handle.snapshot.table, rows).tolist() == [True, True]
    handle.cache.update_node(node_with_taints("b", [taint("x")]))
    assert pl.filter_batch(CycleState(), pod, handle.snapshot.table, rows).tolist() == [
        ni.name != "b" for ni in infos]


def test_plugin_shape() -> None:
    pl = tainttoleration.new(None, FrameworkHandle.for_nodes([], features=FEATURES_1_30))
    assert pl.name == NAME == "TaintToleration"
    [ev] = pl.events_to_register()
    assert (ev.event.resource, ev.event.action_type) == (GVK.NODE, ActionType.ADD | ActionType.UPDATE)
