"""NodeUnschedulable (upstream node_unschedulable_test.go, plus batch equivalence)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from builders import make_node, make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.features import FEATURES_1_30
from kubesched.framework import GVK, ActionType, Code, CycleState
from kubesched.objects import Node, Pod
from kubesched.plugins import nodeunschedulable
from kubesched.plugins.nodeunschedulable import NAME

UNSCHEDULABLE_KEY = "node.kubernetes.io/unschedulable"


def node(unschedulable: bool, name: str = "n1") -> Node:
    return make_node().name(name).capacity(cpu="1", memory="1Gi", pods=10).unschedulable(unschedulable).obj()


def pod(*tolerations: dict[str, str]) -> Pod:
    b = make_pod().name("p")
    for t in tolerations:
        b = b.toleration(**t)
    return b.obj()


@pytest.mark.parametrize(
    ("p", "n", "fits"),
    [
        (pod(), node(True), False),
        (pod(), node(False), True),
        (pod({"key": UNSCHEDULABLE_KEY, "effect": "NoSchedule"}), node(True), True),
        (pod({"key": UNSCHEDULABLE_KEY, "operator": "Exists"}), node(True), True),
        (pod({"operator": "Exists"}), node(True), True),
        (pod({"key": UNSCHEDULABLE_KEY, "operator": "Exists", "effect": "NoExecute"}), node(True), False),
        (pod({"key": UNSCHEDULABLE_KEY, "operator": "Equal", "value": "x"}), node(True), False),
        (pod({"key": "other", "operator": "Exists"}), node(True), False),
    ],
    ids=[
        "pod is not scheduled to an unschedulable node",
        "pod is scheduled to a normal node",
        "pod tolerating the unschedulable taint fits an unschedulable node",
        "pod tolerating the unschedulable key with Exists and any effect fits",
        "pod tolerating everything fits an unschedulable node",
        "a NoExecute toleration does not tolerate the NoSchedule unschedulable taint",
        "an Equal toleration with a value does not match the empty taint value",
        "a toleration for another key does not help",
    ],
)
def test_filter(p: Pod, n: Node, fits: bool) -> None:
    handle = FrameworkHandle.for_nodes([n])
    pl = nodeunschedulable.new(None, handle)
    ni = handle.snapshot.get(n.name)
    assert ni is not None
    got = pl.filter(CycleState(), p, ni)
    if fits:
        assert got is None
    else:
        assert got is not None
        assert got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert got.reasons == ("node(s) were unschedulable",)


TOLERATIONS = [
    {"key": UNSCHEDULABLE_KEY, "effect": "NoSchedule"},
    {"key": UNSCHEDULABLE_KEY, "operator": "Exists", "effect": "NoExecute"},
    {"key": "k", "operator": "Exists"},
    {"operator": "Exists"},
]


def _random_case(seed: int) -> tuple[list[Node], list[Pod]]:
    rng = random.Random(seed)
    nodes = [node(rng.random() < 0.5, f"node-{i}") for i in range(rng.randint(1, 12))]
    pods = [pod(*rng.sample(TOLERATIONS, rng.randint(0, 2))) for _ in range(4)]
    return nodes, pods


@pytest.mark.parametrize("seed", range(25), ids=lambda s: f"random cluster {s} gives the same batch and per-node result")
def test_filter_batch_equals_filter(seed: int) -> None:
    nodes, pods = _random_case(seed)
    handle = FrameworkHandle.for_nodes(nodes)
    pl = nodeunschedulable.new(None, handle)
    infos = list(handle.snapshot.list())
    rows = np.array([ni.index for ni in infos], np.int64)
    for p in pods:
        per_node = [pl.filter(CycleState(), p, ni) is None for ni in infos]
        batch = pl.filter_batch(CycleState(), p, handle.snapshot.table, rows)
        assert batch.dtype == np.bool_
        assert batch.tolist() == per_node


def test_filter_batch_on_a_subset_of_rows_after_a_node_update() -> None:
    nodes = [node(False, f"node-{i}") for i in range(4)]
    handle = FrameworkHandle.for_nodes(nodes)
    handle.cache.update_node(node(True, "node-2"))
    pl = nodeunschedulable.new(None, handle)
    ni2 = handle.snapshot.get("node-2")
    ni0 = handle.snapshot.get("node-0")
    assert ni2 is not None and ni0 is not None
    rows = np.array([ni2.index, ni0.index], np.int64)
    assert pl.filter_batch(CycleState(), pod(), handle.snapshot.table, rows).tolist() == [False, True]
    assert pl.filter_batch(CycleState(), pod(TOLERATIONS[0]), handle.snapshot.table, rows).tolist() == [True, True]
    assert pl.filter_batch(CycleState(), pod(), handle.snapshot.table, rows[:0]).tolist() == []


def test_plugin_shape() -> None:
    pl = nodeunschedulable.new(None, FrameworkHandle.for_nodes([], features=FEATURES_1_30))
    assert pl.name == NAME == "NodeUnschedulable"
    [ev] = pl.events_to_register()
    assert ev.event.resource == GVK.NODE
    assert ev.event.action_type == ActionType.ADD | ActionType.UPDATE
