"""NodeName (upstream node_name_test.go, plus batch equivalence)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from builders import make_node, make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.features import FEATURES_1_30
from kubesched.framework import GVK, ActionType, Code, CycleState
from kubesched.objects import Pod
from kubesched.plugins import nodename
from kubesched.plugins.nodename import NAME


def pod(node_name: str = "") -> Pod:
    b = make_pod().name("p")
    if node_name:
        b = b.node(node_name)
    return b.obj()


@pytest.mark.parametrize(
    ("p", "node_name", "fits"),
    [
        (pod(), "foo", True),
        (pod("foo"), "foo", True),
        (pod("bar"), "foo", False),
        (pod("foo-1"), "foo", False),
    ],
    ids=[
        "pod without a node name fits any node",
        "pod naming the node fits it",
        "pod naming another node does not fit",
        "a name prefix is not a match",
    ],
)
def test_filter(p: Pod, node_name: str, fits: bool) -> None:
    handle = FrameworkHandle.for_nodes([make_node().name(node_name).obj()])
    pl = nodename.new(None, handle)
    ni = handle.snapshot.get(node_name)
    assert ni is not None
    got = pl.filter(CycleState(), p, ni)
    if fits:
        assert got is None
    else:
        assert got is not None
        assert got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert got.reasons == ("node(s) didn't match the requested node name",)


@pytest.mark.parametrize("seed", range(20), ids=lambda s: f"random cluster {s} gives the same batch and per-node result")
def test_filter_batch_equals_filter(seed: int) -> None:
    rng = random.Random(seed)
    names = [f"node-{i}" for i in range(rng.randint(1, 15))]
    handle = FrameworkHandle.for_nodes([make_node().name(n).obj() for n in names])
    pl = nodename.new(None, handle)
    infos = list(handle.snapshot.list())
    rows = np.array([ni.index for ni in infos], np.int64)
    rows = np.array(rng.sample(rows.tolist(), len(rows)), np.int64)
    by_row = {ni.index: ni for ni in infos}
    for wanted in ["", rng.choice(names), "absent-node"]:
        p = pod(wanted)
        per_node = [pl.filter(CycleState(), p, by_row[r]) is None for r in rows.tolist()]
        assert pl.filter_batch(CycleState(), p, handle.snapshot.table, rows).tolist() == per_node


def test_filter_batch_ignores_a_removed_node_with_the_same_name() -> None:
    handle = FrameworkHandle.for_nodes([make_node().name("a").obj(), make_node().name("b").obj()])
    old = handle.snapshot.get("a")
    assert old is not None
    old_row = old.index
    handle.cache.remove_node("a")
    handle.cache.add_node(make_node().name("a").obj())
    pl = nodename.new(None, handle)
    infos = list(handle.snapshot.list())
    rows = np.array([ni.index for ni in infos], np.int64)
    assert old_row not in rows.tolist()
    got = pl.filter_batch(CycleState(), pod("a"), handle.snapshot.table, rows)
    assert got.tolist() == [ni.name == "a" for ni in infos]


def test_plugin_shape() -> None:
    pl = nodename.new(None, FrameworkHandle.for_nodes([], features=FEATURES_1_30))
    assert pl.name == NAME == "NodeName"
    [ev] = pl.events_to_register()
    assert (ev.event.resource, ev.event.action_type) == (GVK.NODE, ActionType.ADD | ActionType.UPDATE)
