"""NodeLabel (legacy v1.21/v1.22 plugin): upstream node_label_test.go's TestNodeLabelFilter,
TestNodeLabelScore and the node-less cases, plus args validation and batch equivalence."""

from __future__ import annotations

import random

import numpy as np
import pytest
from builders import make_node, make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.config.args import NodeLabelArgs
from kubesched.errors import ConfigError
from kubesched.framework import GVK, MAX_NODE_SCORE, ActionType, Code, CycleState, NodeInfo
from kubesched.objects import Node
from kubesched.plugins import nodelabel
from kubesched.plugins.nodelabel import ERR_REASON_PRESENCE_VIOLATED, NAME

POD = make_pod().name("p").obj()


def node(labels: dict[str, str], name: str = "machine1") -> Node:
    return make_node().name(name).labels(labels).obj()


def args(present: tuple[str, ...] = (), absent: tuple[str, ...] = (), present_pref: tuple[str, ...] = (),
         absent_pref: tuple[str, ...] = ()) -> NodeLabelArgs:
    return NodeLabelArgs(present, absent, present_pref, absent_pref)


@pytest.mark.parametrize(
    ("a", "fits"),
    [
        pytest.param(args(present=("baz",)), False, id="a present label the node lacks rejects the node"),
        pytest.param(args(absent=("baz",)), True, id="an absent label the node lacks lets it fit"),
        pytest.param(args(present=("foo", "baz")), False, id="only one of two present labels on the node rejects it"),
        pytest.param(args(absent=("foo", "baz")), False, id="one of two absent labels on the node rejects it"),
        pytest.param(args(present=("foo", "bar")), True, id="all present labels on the node fit"),
        pytest.param(args(absent=("foo", "bar")), False, id="all absent labels on the node reject it"),
        pytest.param(args(present=("foo",), absent=("bar",)), False,
                     id="a present label that matches and an absent one that is there reject the node"),
        pytest.param(args(present=("foz",), absent=("baz",)), False,
                     id="a missing present label rejects the node even when the absent one is missing"),
        pytest.param(args(present=("foo",), absent=("baz",)), True,
                     id="a present label that is there and an absent one that is not fit"),
        pytest.param(args(present=("foz",), absent=("bar",)), False,
                     id="a missing present label and a present absent label reject the node"),
        pytest.param(args(), True, id="no labels configured: every node fits"),
    ],
)
def test_filter(a: NodeLabelArgs, fits: bool) -> None:
    n = node({"foo": "any value", "bar": "any value"})
    handle = FrameworkHandle.for_nodes([n])
    pl = nodelabel.new(a, handle)
    ni = handle.snapshot.get("machine1")
    assert ni is not None
    got = pl.filter(CycleState(), POD, ni)
    if fits:
        assert got is None
    else:
        assert got is not None
        assert got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert got.reasons == (ERR_REASON_PRESENCE_VIOLATED,) == ("node(s) didn't have the requested labels",)
    rows = np.array([ni.index], np.int64)
    assert pl.filter_batch(CycleState(), POD, handle.snapshot.table, rows).tolist() == [fits]


M = MAX_NODE_SCORE


@pytest.mark.parametrize(
    ("a", "want"),
    [
        pytest.param(args(present_pref=("foo",)), M, id="one present label preference that matches"),
        pytest.param(args(present_pref=("somelabel",)), 0, id="one present label preference that does not match"),
        pytest.param(args(present_pref=("foo", "bar")), M, id="two present label preferences that match"),
        pytest.param(args(present_pref=("somelabel1", "somelabel2")), 0,
                     id="two present label preferences that do not match"),
        pytest.param(args(present_pref=("foo", "somelabel")), M // 2,
                     id="two present label preferences, only one matches"),
        pytest.param(args(absent_pref=("foo",)), 0, id="one absent label preference that is on the node"),
        pytest.param(args(absent_pref=("somelabel",)), M, id="one absent label preference that is not on the node"),
        pytest.param(args(absent_pref=("foo", "bar")), 0, id="two absent label preferences both on the node"),
        pytest.param(args(absent_pref=("somelabel1", "somelabel2")), M,
                     id="two absent label preferences neither on the node"),
        pytest.param(args(absent_pref=("foo", "somelabel")), M // 2,
                     id="two absent label preferences, one on the node"),
        pytest.param(args(present_pref=("foo", "bar"), absent_pref=("somelabel1", "somelabel2")), M,
                     id="two present preferences match and two absent preferences are absent"),
        pytest.param(args(present_pref=("somelabel1", "somelabel2"), absent_pref=("foo", "bar")), 0,
                     id="two present preferences missing and two absent preferences there"),
        pytest.param(args(present_pref=("foo", "somelabel"), absent_pref=("somelabel1", "somelabel2")), 3 * M // 4,
                     id="three of four preferences satisfied"),
        pytest.param(args(), 0, id="no label preference scores 0"),
        # ---- beyond upstream
        pytest.param(args(present_pref=("foo", "x", "y")), 33, id="the average is truncated like Go's int division"),
    ],
)
def test_score(a: NodeLabelArgs, want: int) -> None:
    n = node({"foo": "", "bar": ""})
    handle = FrameworkHandle.for_nodes([n])
    pl = nodelabel.new(a, handle)
    ni = handle.snapshot.get("machine1")
    assert ni is not None
    assert pl.score(CycleState(), POD, ni) == want
    assert pl.score_batch(CycleState(), POD, handle.snapshot.table, np.array([ni.index], np.int64)).tolist() == [want]


def test_filter_without_node_is_an_error() -> None:
    pl = nodelabel.new(args(), FrameworkHandle.for_nodes([]))
    got = pl.filter(CycleState(), POD, NodeInfo())
    assert got is not None and got.code == Code.ERROR and got.message == "node not found"


@pytest.mark.parametrize(
    ("a", "message"),
    [
        (args(present=("foo",), absent=("foo",)), 'presentLabels[0]: Invalid value: "foo": conflict with absentLabels[0]'),
        (args(present_pref=("a", "b"), absent_pref=("b",)),
         'presentLabelsPreference[1]: Invalid value: "b": conflict with absentLabelsPreference[0]'),
        (args(present=("a",), absent=("a",), present_pref=("b",), absent_pref=("b",)),
         '[presentLabels[0]: Invalid value: "a": conflict with absentLabels[0], '
         'presentLabelsPreference[0]: Invalid value: "b": conflict with absentLabelsPreference[0]]'),
    ],
    ids=[
        "a label both present and absent is rejected",
        "a label both preferred present and absent is rejected",
        "several conflicts are reported together",
    ],
)
def test_conflicting_args_are_rejected(a: NodeLabelArgs, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        nodelabel.new(a, FrameworkHandle.for_nodes([]))
    assert str(e.value) == message


@pytest.mark.parametrize("seed", range(20), ids=lambda s: f"random cluster {s} gives the same batch and per-node results")
def test_batch_equals_per_node(seed: int) -> None:
    rng = random.Random(seed)
    keys = ["a", "b", "c", "d"]
    nodes = [node({k: "v" for k in keys if rng.random() < 0.5}, name=f"n{i}") for i in range(rng.randint(1, 12))]
    handle = FrameworkHandle.for_nodes(nodes)
    for _ in range(5):
        present = tuple(rng.sample(keys, rng.randint(0, 2)))
        absent = tuple(k for k in rng.sample(keys, rng.randint(0, 2)) if k not in present)
        pp = tuple(rng.sample(keys, rng.randint(0, 3)))
        ap = tuple(k for k in rng.sample(keys, rng.randint(0, 3)) if k not in pp)
        pl = nodelabel.new(args(present, absent, pp, ap), handle)
        infos = list(handle.snapshot.list())
        by_row = {ni.index: ni for ni in infos}
        rows = np.array(rng.sample([ni.index for ni in infos], len(infos)), np.int64)
        state = CycleState()
        assert pl.filter_batch(state, POD, handle.snapshot.table, rows).tolist() == [
            pl.filter(state, POD, by_row[r]) is None for r in rows.tolist()]
        assert pl.score_batch(state, POD, handle.snapshot.table, rows).tolist() == [
            pl.score(state, POD, by_row[r]) for r in rows.tolist()]


def test_batch_follows_label_updates() -> None:
    handle = FrameworkHandle.for_nodes([node({}, "a"), node({}, "b")])
    pl = nodelabel.new(args(present=("x",)), handle)
    infos = list(handle.snapshot.list())
    rows = np.array([ni.index for ni in infos], np.int64)
    assert pl.filter_batch(CycleState(), POD, handle.snapshot.table, rows).tolist() == [False, False]
    handle.cache.update_node(node({"x": "1"}, "b"))
    assert pl.filter_batch(CycleState(), POD, handle.snapshot.table, rows).tolist() == [
        ni.name == "b" for ni in infos]


def test_plugin_shape() -> None:
    pl = nodelabel.new(None, FrameworkHandle.for_nodes([]))
    assert pl.name == NAME == "NodeLabel"
    [ev] = pl.events_to_register()
    assert (ev.event.resource, ev.event.action_type) == (GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
    with pytest.raises(ConfigError, match="want args to be of type NodeLabelArgs"):
        nodelabel.new(object(), FrameworkHandle.for_nodes([]))
