"""NodeAffinity (upstream node_affinity_test.go TestNodeAffinity / TestNodeAffinityPriority,
plus parse-error semantics, args, and batch equivalence)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from builders import make_node, make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.config.args import NodeAffinityArgs
from kubesched.errors import ConfigError
from kubesched.features import FEATURES_1_30
from kubesched.framework import (
    GVK,
    MAX_NODE_SCORE,
    ActionType,
    Code,
    CycleState,
    NodeInfo,
    NodeScore,
    PreFilterPlugin,
    ScorePlugin,
)
from kubesched.objects import Node, Pod
from kubesched.objects.parse import parse_node_affinity
from kubesched.plugins import nodeaffinity
from kubesched.plugins.nodeaffinity import NAME, NodeAffinity

ERR_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_CONFLICT = "pod affinity terms conflict"
SKIP = "skip"


# ---------------------------------------------------------------- builders
def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def name_field(op: str, name: str) -> dict[str, Any]:
    return {"key": "metadata.name", "operator": op, "values": [name]}


def term(exprs: list[dict[str, Any]] | None = None, fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {}
    if exprs is not None:
        t["matchExpressions"] = exprs
    if fields is not None:
        t["matchFields"] = fields
    return t


def node_affinity(required: list[dict[str, Any]] | None = None,
                  preferred: list[tuple[int, dict[str, Any]]] | None = None) -> dict[str, Any]:
    na: dict[str, Any] = {}
    if required is not None:
        na["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": required}
    if preferred is not None:
        na["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "preference": p} for w, p in preferred]
    return na


def pod(required: list[dict[str, Any]] | None = None, preferred: list[tuple[int, dict[str, Any]]] | None = None,
        node_selector: dict[str, str] | None = None, affinity: dict[str, Any] | None = None) -> Pod:
    b = make_pod().name("p")
    if node_selector is not None:
        b = b.node_selector(node_selector)
    if affinity is not None:
        b = b.affinity(affinity)
    elif required is not None or preferred is not None:
        b = b.affinity({"nodeAffinity": node_affinity(required, preferred)})
    return b.obj()


def args(required: list[dict[str, Any]] | None = None,
         preferred: list[tuple[int, dict[str, Any]]] | None = None) -> NodeAffinityArgs:
    return NodeAffinityArgs(added_affinity=parse_node_affinity(node_affinity(required, preferred), "addedAffinity"))


def node(name: str, labels: dict[str, str] | None = None) -> Node:
    return make_node().name(name).labels(labels or {}).capacity(cpu="4", memory="4Gi", pods=110).obj()


def node_info(handle: FrameworkHandle, name: str) -> NodeInfo:
    ni = handle.snapshot.get(name)
    assert ni is not None
    return ni


# ---------------------------------------------------------------- TestNodeAffinity
GPU_EXISTS_NOT_AMD = term([expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")])
ADDED_NODE2 = args(required=[term(fields=[name_field("In", "node2")])])

FILTER_CASES: list[tuple[str, Pod, dict[str, str], str, object, frozenset[str] | None, str | None,
                         NodeAffinityArgs | None, bool]] = [
    # id, pod, labels, node name, want PreFilter status, want PreFilterResult, want Filter reason, args, run PreFilter
    ("missing labels", pod(node_selector={"foo": "bar"}), {}, "node1", None, None, ERR_POD, None, True),
    ("same labels", pod(node_selector={"foo": "bar"}), {"foo": "bar"}, "node1", None, None, None, None, True),
    ("node labels are superset", pod(node_selector={"foo": "bar"}), {"foo": "bar", "baz": "blah"}, "node1",
     None, None, None, None, True),
    ("node labels are subset", pod(node_selector={"foo": "bar", "baz": "blah"}), {"foo": "bar"}, "node1",
     None, None, ERR_POD, None, True),
    ("pod with matchExpressions using In that matches the node",
     pod([term([expr("foo", "In", "bar", "value2")])]), {"foo": "bar"}, "node1", None, None, None, None, True),
    ("pod with matchExpressions using Gt that matches the node",
     pod([term([expr("kernel-version", "Gt", "0204")])]), {"kernel-version": "0206"}, "node1",
     None, None, None, None, True),
    ("pod with matchExpressions using NotIn that matches the node",
     pod([term([expr("mem-type", "NotIn", "DDR", "DDR2")])]), {"mem-type": "DDR3"}, "node1",
     None, None, None, None, True),
    ("pod with matchExpressions using Exists that matches the node",
     pod([term([expr("GPU", "Exists")])]), {"GPU": "NVIDIA-GRID-K1"}, "node1", None, None, None, None, True),
    ("pod with affinity that doesn't match the node's labels won't schedule onto it",
     pod([term([expr("foo", "In", "value1", "value2")])]), {"foo": "bar"}, "node1", None, None, ERR_POD, None, True),
    ("pod with empty matchExpressions matches no node",
     pod([term([])]), {"foo": "bar"}, "node1", None, None, ERR_POD, None, True),
    ("pod with no affinity skips and schedules onto a node",
     pod(), {"foo": "bar"}, "node1", SKIP, None, None, None, True),
    ("pod with node affinity but nil required selector skips",
     pod(affinity={"nodeAffinity": {}}), {"foo": "bar"}, "node1", SKIP, None, None, None, True),
    ("pod with multiple matchExpressions ANDed that match the node",
     pod([GPU_EXISTS_NOT_AMD]), {"GPU": "NVIDIA-GRID-K1"}, "node1", None, None, None, None, True),
    ("pod with multiple matchExpressions ANDed that don't match the node",
     pod([term([expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")])]), {"GPU": "NVIDIA-GRID-K1"}, "node1",
     None, None, ERR_POD, None, True),
    ("pod with multiple terms ORed, one matching, schedules onto the node",
     pod([term([expr("foo", "In", "bar", "value2")]), term([expr("diffkey", "In", "wrong", "value2")])]),
     {"foo": "bar"}, "node1", None, None, None, None, True),
    ("pod with affinity and nodeSelector both satisfied schedules onto the node",
     pod([term([expr("foo", "Exists")])], node_selector={"foo": "bar"}), {"foo": "bar"}, "node1",
     None, None, None, None, True),
    ("pod with affinity matching but nodeSelector not satisfied won't schedule",
     pod([term([expr("foo", "Exists")])], node_selector={"foo": "bar"}), {"foo": "barrrrrr"}, "node1",
     None, None, ERR_POD, None, True),
    ("pod with an invalid value in an affinity term won't be scheduled onto the node",
     pod([term([expr("foo", "NotIn", "invalid value: ___@#$%^")])]), {"foo": "bar"}, "node1",
     None, None, ERR_POD, None, True),
    ("pod with matchFields In that matches the node",
     pod([term(fields=[name_field("In", "node1")])]), {}, "node1", None, frozenset({"node1"}), None, None, True),
    ("pod with matchFields In that does not match the node",
     pod([term(fields=[name_field("In", "node1")])]), {}, "node2", None, frozenset({"node1"}), ERR_POD, None, True),
    ("pod with two terms where matchFields fails but matchExpressions matches",
     pod([term(fields=[name_field("In", "node1"), name_field("In", "node2")]), term([expr("foo", "In", "bar")])]),
     {"foo": "bar"}, "node2", None, None, None, None, True),
    ("pod with one term where matchFields fails but matchExpressions matches",
     pod([term([expr("foo", "In", "bar")], [name_field("In", "node1")])]), {"foo": "bar"}, "node2",
     None, frozenset({"node1"}), ERR_POD, None, True),
    ("pod with one term where both matchFields and matchExpressions match",
     pod([term([expr("foo", "In", "bar")], [name_field("In", "node1")])]), {"foo": "bar"}, "node1",
     None, frozenset({"node1"}), None, None, True),
    ("pod with two terms where neither matchFields nor matchExpressions match",
     pod([term(fields=[name_field("In", "node1")]), term([expr("foo", "In", "not-match-to-bar")])]),
     {"foo": "bar"}, "node2", None, None, ERR_POD, None, True),
    ("pod with two terms of node name affinity gets both names",
     pod([term(fields=[name_field("In", "node1")]), term(fields=[name_field("In", "node2")])]), {}, "node2",
     None, frozenset({"node1", "node2"}), None, None, True),
    ("pod with two conflicting matchFields requirements conflicts",
     pod([term(fields=[name_field("In", "node1"), name_field("In", "node2")])]), {"foo": "bar"}, "node2",
     ERR_CONFLICT, None, ERR_POD, None, True),
    ("node matching added affinity and the pod's node affinity fits",
     pod([term([expr("zone", "In", "foo")])]), {"zone": "foo"}, "node2", None, None, None, ADDED_NODE2, True),
    ("node matching added affinity but not the pod's node affinity fails",
     pod([term([expr("zone", "In", "bar")])]), {"zone": "foo"}, "node2", None, None, ERR_POD, ADDED_NODE2, True),
    ("node not matching added affinity fails with the enforced reason",
     pod(), {"zone": "foo"}, "node2", None, None, ERR_ENFORCED, args(required=[term([expr("zone", "In", "bar")])]),
     True),
    ("node selector matches correctly even if PreFilter is not called",
     pod(node_selector={"foo": "bar"}), {"foo": "bar", "baz": "blah"}, "node1", None, None, None, None, False),
    ("node affinity matches correctly even if PreFilter is not called",
     pod([GPU_EXISTS_NOT_AMD]), {"GPU": "NVIDIA-GRID-K1"}, "node1", None, None, None, None, False),
    # ---- beyond upstream
    ("an explicitly empty nodeSelector does not skip and matches every node",
     pod(node_selector={}), {}, "node1", None, None, None, None, True),
    ("added affinity alone prevents the skip",
     pod(), {"zone": "foo"}, "node2", None, None, None, ADDED_NODE2, True),
    ("matchFields NotIn gives no PreFilterResult",
     pod([term(fields=[name_field("NotIn", "node1")])]), {}, "node1", None, None, ERR_POD, None, True),
    ("matchFields In and NotIn in one term restrict to the In name",
     pod([term(fields=[name_field("In", "node1"), name_field("NotIn", "node2")])]), {}, "node1",
     None, frozenset({"node1"}), None, None, True),
    ("an empty term next to a matchFields term admits every node in PreFilter",
     pod([term(fields=[name_field("In", "node1")]), term([])]), {}, "node2", None, None, ERR_POD, None, True),
    ("Gt against a non-integer node label does not match",
     pod([term([expr("ver", "Gt", "1")])]), {"ver": "v2"}, "node1", None, None, ERR_POD, None, True),
    ("Gt against a label with an underscore does not parse as an integer",
     pod([term([expr("ver", "Gt", "1")])]), {"ver": "1_0"}, "node1", None, None, ERR_POD, None, True),
    ("Lt with leading zeros compares numerically",
     pod([term([expr("ver", "Lt", "010")])]), {"ver": "009"}, "node1", None, None, None, None, True),
    ("Gt with a non-integer value is a parse error and the term never matches",
     pod([term([expr("ver", "Gt", "abc")])]), {"ver": "5"}, "node1", None, None, ERR_POD, None, True),
    ("an invalid term does not stop another term from matching",
     pod([term([expr("foo", "In", "bad value")]), term([expr("foo", "Exists")])]), {"foo": "bar"}, "node1",
     None, None, None, None, True),
    ("Gt with a negative value is a parse error since label values start alphanumeric",
     pod([term([expr("ver", "Gt", "-1")])]), {"ver": "5"}, "node1", None, None, ERR_POD, None, True),
    ("Gt against a label beyond int64 does not parse",
     pod([term([expr("ver", "Gt", "1")])]), {"ver": "99999999999999999999"}, "node1", None, None, ERR_POD, None, True),
    ("DoesNotExist matches a node without the label",
     pod([term([expr("gpu", "DoesNotExist")])]), {"foo": "bar"}, "node1", None, None, None, None, True),
]


@pytest.mark.parametrize(
    ("pod_", "labels", "node_name", "want_pre", "want_result", "want_reason", "args_", "run_pre_filter"),
    [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES])
def test_pre_filter_and_filter(pod_: Pod, labels: dict[str, str], node_name: str, want_pre: object,
                               want_result: frozenset[str] | None, want_reason: str | None,
                               args_: NodeAffinityArgs | None, run_pre_filter: bool) -> None:
    handle = FrameworkHandle.for_nodes([node(node_name, labels)])
    pl = nodeaffinity.new(args_, handle)
    state = CycleState()
    if run_pre_filter:
        result, status = pl.pre_filter(state, pod_)
        if want_pre is None:
            assert status is None
        elif want_pre == SKIP:
            assert status is not None and status.code == Code.SKIP
        else:
            assert status is not None
            assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            assert status.reasons == (want_pre,)
        if want_result is None:
            assert result is None
        else:
            assert result is not None and result.node_names == want_result
    ni = node_info(handle, node_name)
    got = pl.filter(state, pod_, ni)
    if want_reason is None:
        assert got is None
    else:
        assert got is not None
        assert got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert got.reasons == (want_reason,)
    batch = pl.filter_batch(state, pod_, handle.snapshot.table, np.array([ni.index], np.int64))
    assert batch.tolist() == [want_reason is None]
    codes, statuses = pl.filter_batch_status(state, pod_, handle.snapshot.table, np.array([ni.index], np.int64))
    assert [statuses[c] for c in codes.tolist()] == [got]


# ---------------------------------------------------------------- TestNodeAffinityPriority
LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}
PREF1 = [(2, term([expr("foo", "In", "bar")]))]
PREF2 = [
    (2, term([expr("foo", "In", "bar")])),
    (4, term([expr("key", "In", "value")])),
    (5, term([expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1")])),
]

SCORE_CASES: list[tuple[str, Pod, list[tuple[str, dict[str, str]]], list[int], NodeAffinityArgs | None, bool]] = [
    ("all nodes score the same when the pod has no node affinity", pod(),
     [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)], [0, 0, 0], None, True),
    ("no node matches the preferred terms so every score is zero", pod(preferred=PREF1),
     [("node1", LABEL4), ("node2", LABEL2), ("node3", LABEL3)], [0, 0, 0], None, True),
    ("only node1 matches the preferred terms", pod(preferred=PREF1),
     [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)], [MAX_NODE_SCORE, 0, 0], None, True),
    ("all nodes match preferred terms with different weights", pod(preferred=PREF2),
     [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)], [18, MAX_NODE_SCORE, 36], None, True),
    ("added preferred affinity scores a pod without affinity", pod(),
     [("node1", LABEL1), ("node2", LABEL2)], [MAX_NODE_SCORE, 0], args(preferred=PREF1), True),
    ("added preferred affinity adds to the pod's own preferred terms", pod(preferred=PREF1),
     [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL5)], [40, 60, MAX_NODE_SCORE],
     args(preferred=[(3, term([expr("key", "In", "value")]))]), True),
    ("scores are right even if PreScore is not called", pod(preferred=PREF2),
     [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)], [18, MAX_NODE_SCORE, 36], None, False),
    # ---- beyond upstream
    ("weight-0 and empty preferred terms are ignored",
     pod(preferred=[(0, term([expr("foo", "In", "bar")])), (7, term([])), (3, term([expr("key", "Exists")]))]),
     [("node1", LABEL1), ("node2", LABEL2)], [0, MAX_NODE_SCORE], None, True),
    ("preferred matchFields score the named node",
     pod(preferred=[(10, term(fields=[name_field("In", "node2")])), (5, term([expr("foo", "Exists")]))]),
     [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL5)], [50, 100, 50], None, True),
    ("added preferred terms of weight 0 only still score, all zero", pod(),
     [("node1", LABEL1), ("node2", LABEL2)], [0, 0], args(preferred=[(0, term([expr("foo", "Exists")]))]), True),
]


@pytest.mark.parametrize(("pod_", "nodes", "expected", "args_", "run_pre_score"), [c[1:] for c in SCORE_CASES],
                         ids=[c[0] for c in SCORE_CASES])
def test_score_and_normalize(pod_: Pod, nodes: list[tuple[str, dict[str, str]]], expected: list[int],
                             args_: NodeAffinityArgs | None, run_pre_score: bool) -> None:
    handle = FrameworkHandle.for_nodes([node(n, lbl) for n, lbl in nodes])
    pl = nodeaffinity.new(args_, handle)
    state = CycleState()
    infos = [node_info(handle, n) for n, _ in nodes]
    if run_pre_score:
        status = pl.pre_score(state, pod_, infos)
        assert status is None or status.code == Code.SKIP
    scores = [NodeScore(ni.name, pl.score(state, pod_, ni)) for ni in infos]
    raw = np.array([s.score for s in scores], np.int64)
    rows = np.array([ni.index for ni in infos], np.int64)
    assert pl.score_batch(state, pod_, handle.snapshot.table, rows).tolist() == raw.tolist()
    assert pl.normalize_score(state, pod_, scores) is None
    assert [s.score for s in scores] == expected
    assert pl.normalize_score_batch(state, pod_, raw).tolist() == expected


@pytest.mark.parametrize(
    ("pod_", "args_", "want"),
    [
        (pod(), None, SKIP),
        (pod(preferred=PREF1), None, None),
        (pod(), args(preferred=PREF1), None),
        (pod(), args(required=[term([expr("foo", "Exists")])]), SKIP),
        (pod(preferred=[(3, term([expr("foo", "In", "bad value!")]))]), None,
         '[0].matchExpressions[0].values[0][foo]: Invalid value: "bad value!": a valid label must be an empty string or '
         "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
         " (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
         "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
        (pod(preferred=[(0, term([expr("foo", "In", "bad value!")]))]), None, None),
        (pod(preferred=[(1, term([expr("v", "Gt", "x")])), (2, term([expr("foo", "Exists")])),
                        (3, term([expr("v", "Lt", "-1")]))]), None,
         '[[0].matchExpressions[0].values[0]: Invalid value: "x": for \'Gt\', \'Lt\' operators, the value must be '
         'an integer, [2].matchExpressions[0].values[0][v]: Invalid value: "-1": a valid label must be an empty '
         "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric"
         " character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
         "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')]"),
    ],
    ids=[
        "pod without preferred terms and no added preferred terms skips scoring",
        "pod with preferred terms scores",
        "added preferred terms make every pod score",
        "added required terms alone do not make a pod score",
        "an invalid preferred term is a PreScore error",
        "an invalid preferred term of weight 0 is ignored",
        "several invalid preferred terms give an aggregated error",
    ],
)
def test_pre_score(pod_: Pod, args_: NodeAffinityArgs | None, want: str | None) -> None:
    handle = FrameworkHandle.for_nodes([node("node1", LABEL1)])
    pl = nodeaffinity.new(args_, handle)
    state = CycleState()
    status = pl.pre_score(state, pod_, list(handle.snapshot.list()))
    if want is None:
        assert status is None
    elif want == SKIP:
        assert status is not None and status.code == Code.SKIP
    else:
        assert status is not None and status.code == Code.ERROR
        assert status.message == want


def test_pre_score_with_no_nodes_succeeds_without_state() -> None:
    pl = nodeaffinity.new(None, FrameworkHandle.for_nodes([]))
    state = CycleState()
    assert pl.pre_score(state, pod(), []) is None
    assert not state._data


@pytest.mark.parametrize(
    ("added", "message"),
    [
        ({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "foo", "operator": "Gt", "values": ["x"]}]}]}},
         "parsing addedAffinity.requiredDuringSchedulingIgnoredDuringExecution: "),
        ({"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {
            "matchExpressions": [{"key": "foo", "operator": "In", "values": ["a b"]}]}}]},
         "parsing addedAffinity.preferredDuringSchedulingIgnoredDuringExecution: "),
    ],
    ids=["an invalid added required term is rejected", "an invalid added preferred term is rejected"],
)
def test_invalid_added_affinity_is_a_config_error(added: dict[str, Any], message: str) -> None:
    a = NodeAffinityArgs(added_affinity=parse_node_affinity(added, "addedAffinity"))
    with pytest.raises(ConfigError, match=message):
        nodeaffinity.new(a, FrameworkHandle.for_nodes([]))


def test_wrong_args_type_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="args are not of type NodeAffinityArgs"):
        nodeaffinity.new(object(), FrameworkHandle.for_nodes([]))


def test_plugin_shape() -> None:
    pl = nodeaffinity.new(None, FrameworkHandle.for_nodes([], features=FEATURES_1_30))
    assert isinstance(pl, NodeAffinity)
    assert pl.name == NAME == "NodeAffinity"
    assert isinstance(pl, PreFilterPlugin) and isinstance(pl, ScorePlugin)
    assert pl.pre_filter_extensions() is None
    [ev] = pl.events_to_register()
    assert (ev.event.resource, ev.event.action_type) == (GVK.NODE, ActionType.ADD | ActionType.UPDATE)


def test_pre_filter_state_survives_cycle_state_clone() -> None:
    handle = FrameworkHandle.for_nodes([node("node1", {"foo": "bar"})])
    pl = nodeaffinity.new(None, handle)
    state = CycleState()
    p = pod(node_selector={"foo": "baz"})
    pl.pre_filter(state, p)
    ni = node_info(handle, "node1")
    got = pl.filter(state.clone(), p, ni)
    assert got is not None and got.reasons == (ERR_POD,)


def test_batch_follows_node_label_updates() -> None:
    handle = FrameworkHandle.for_nodes([node("node1", {"foo": "bar"}), node("node2", {})])
    pl = nodeaffinity.new(None, handle)
    p = pod(node_selector={"foo": "bar"}, preferred=PREF1)
    state = CycleState()
    pl.pre_filter(state, p)
    infos = list(handle.snapshot.list())
    pl.pre_score(state, p, infos)
    rows = np.array([ni.index for ni in infos], np.int64)
    assert pl.filter_batch(state, p, handle.snapshot.table, rows).tolist() == [ni.name == "node1" for ni in infos]
    handle.cache.update_node(node("node2", {"foo": "bar"}))
    handle.cache.update_node(node("node1", {"foo": "baz"}))
    assert pl.filter_batch(state, p, handle.snapshot.table, rows).tolist() == [ni.name == "node2" for ni in infos]
    codes, statuses = pl.filter_batch_status(state, p, handle.snapshot.table, rows)
    assert [statuses[c] for c in codes.tolist()] == [pl.filter(state, p, ni) for ni in infos]
    assert pl.score_batch(state, p, handle.snapshot.table, rows).tolist() == [
        pl.score(state, p, ni) for ni in infos]


# ---------------------------------------------------------------- batch == per node
KEYS = ["zone", "disk", "gpu", "ver"]
VALUES = {"zone": ["a", "b", "c"], "disk": ["ssd", "hdd"], "gpu": ["", "nvidia", "amd"],
          "ver": ["1", "2", "10", "007", "1_0", "v2", "99999999999999999999"]}


def _random_expr(rng: random.Random) -> dict[str, Any]:
    key = rng.choice(KEYS)
    op = rng.choice(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
    if op in ("Exists", "DoesNotExist"):
        return expr(key, op)
    if op in ("Gt", "Lt"):
        return expr(key, op, rng.choice(["0", "1", "5", "-4", "x"]))
    vals = rng.sample(VALUES[key], rng.randint(1, 2))
    if rng.random() < 0.05:
        vals.append("not valid!")
    return expr(key, op, *vals)


def _random_term(rng: random.Random, n_nodes: int, valid_only: bool = False) -> dict[str, Any]:
    exprs = [_random_expr(rng) for _ in range(rng.randint(0, 2))]
    if valid_only:
        exprs = [e for e in exprs if not {"not valid!", "x", "-4"} & set(e.get("values", ()))]
    fields = None
    if rng.random() < 0.3:
        fields = [name_field(rng.choice(["In", "NotIn"]), f"node-{rng.randrange(n_nodes + 1)}")]
    return term(exprs, fields)


def _random_preferred(rng: random.Random, n_nodes: int, valid_only: bool = False) -> list[tuple[int, dict[str, Any]]]:
    return [(rng.choice([0, 1, 5, 50, 100]), _random_term(rng, n_nodes, valid_only)) for _ in range(rng.randint(0, 3))]


def _random_pod(rng: random.Random, n_nodes: int) -> Pod:
    sel = rng.choice([None, {}, {"zone": rng.choice(VALUES["zone"])}])
    required = [_random_term(rng, n_nodes) for _ in range(rng.randint(0, 2))] if rng.random() < 0.7 else None
    preferred = _random_preferred(rng, n_nodes) if rng.random() < 0.7 else None
    return pod(required, preferred, node_selector=sel)


def _random_args(rng: random.Random, n_nodes: int) -> NodeAffinityArgs | None:
    r = rng.random()
    if r < 0.5:
        return None
    required = [_random_term(rng, n_nodes, valid_only=True) for _ in range(rng.randint(1, 2))] if r < 0.75 else None
    preferred = _random_preferred(rng, n_nodes, valid_only=True) if rng.random() < 0.6 else None
    return args(required, preferred)


def _random_nodes(rng: random.Random) -> list[Node]:
    out = []
    for i in range(rng.randint(1, 14)):
        labels = {k: rng.choice(VALUES[k]) for k in KEYS if rng.random() < 0.6}
        out.append(node(f"node-{i}", labels))
    return out


@pytest.mark.parametrize("seed", range(60), ids=lambda s: f"random cluster {s} gives the same batch and per-node results")
def test_batch_equals_per_node(seed: int) -> None:
    rng = random.Random(seed)
    nodes = _random_nodes(rng)
    handle = FrameworkHandle.for_nodes(nodes)
    pl = nodeaffinity.new(_random_args(rng, len(nodes)), handle)
    table = handle.snapshot.table
    infos = list(handle.snapshot.list())
    by_row = {ni.index: ni for ni in infos}
    rows = np.array([ni.index for ni in infos], np.int64)
    for _ in range(6):
        p = _random_pod(rng, len(nodes))
        state = CycleState()
        pl.pre_filter(state, p)
        order = np.array(rng.sample(rows.tolist(), len(rows)), np.int64)
        for sub in (order, order[: len(order) // 2]):
            statuses = [pl.filter(state, p, by_row[r]) for r in sub.tolist()]
            assert pl.filter_batch(state, p, table, sub).tolist() == [s is None for s in statuses]
            codes, table_statuses = pl.filter_batch_status(state, p, table, sub)
            assert [table_statuses[c] for c in codes.tolist()] == statuses
        status = pl.pre_score(state, p, infos)
        if status is not None:
            assert status.code in (Code.SKIP, Code.ERROR)
            continue
        raw = [pl.score(state, p, by_row[r]) for r in order.tolist()]
        batch = pl.score_batch(state, p, table, order)
        assert batch.dtype == np.int64
        assert batch.tolist() == raw
        scores = [NodeScore(by_row[r].name, s) for r, s in zip(order.tolist(), raw, strict=True)]
        pl.normalize_score(state, p, scores)
        assert pl.normalize_score_batch(state, p, np.array(raw, np.int64)).tolist() == [s.score for s in scores]


@pytest.mark.parametrize(
    "raw",
    [[], [0], [0, 0, 0], [7], [1, 2, 3], [100, 50, 0], [3, 3, 3], [200, 1, 0]],
    ids=["no nodes", "one zero score", "all zero scores", "one positive score", "increasing scores",
         "max already 100", "equal positive scores", "scores above 100"],
)
def test_normalize_batch_equals_normalize_on_edge_cases(raw: list[int]) -> None:
    pl = nodeaffinity.new(None, FrameworkHandle.for_nodes([]))
    scores = [NodeScore(f"n{i}", s) for i, s in enumerate(raw)]
    pl.normalize_score(CycleState(), pod(), scores)
    got = pl.normalize_score_batch(CycleState(), pod(), np.array(raw, np.int64))
    assert got.tolist() == [s.score for s in scores]


@pytest.mark.parametrize("seed", range(10), ids=lambda s: f"random large cluster {s}: batches over a few rows agree "
                                                         "with per node, before and after the selector is cached")
def test_batch_over_few_rows_of_a_large_table_equals_per_node(seed: int) -> None:
    rng = random.Random(1000 + seed)
    nodes = [node(f"node-{i}", {k: rng.choice(VALUES[k]) for k in KEYS if rng.random() < 0.6}) for i in range(60)]
    handle = FrameworkHandle.for_nodes(nodes)
    pl = nodeaffinity.new(_random_args(rng, len(nodes)), handle)
    table = handle.snapshot.table
    by_row = {ni.index: ni for ni in handle.snapshot.list()}
    p = _random_pod(rng, len(nodes))
    state = CycleState()
    pl.pre_filter(state, p)
    scored = pl.pre_score(state, p, list(by_row.values())) is None
    for _ in range(3):  # first ask evaluates the rows only, the next ones read the cached table
        sub = np.array(rng.sample(sorted(by_row), rng.randint(1, 5)), np.int64)
        statuses = [pl.filter(state, p, by_row[r]) for r in sub.tolist()]
        assert pl.filter_batch(state, p, table, sub).tolist() == [s is None for s in statuses]
        codes, table_statuses = pl.filter_batch_status(state, p, table, sub)
        assert [table_statuses[c] for c in codes.tolist()] == statuses
        if scored:
            assert pl.score_batch(state, p, table, sub).tolist() == [pl.score(state, p, by_row[r]) for r in sub.tolist()]
