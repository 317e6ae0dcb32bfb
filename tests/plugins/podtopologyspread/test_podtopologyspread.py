"""PodTopologySpread: upstream's filtering_test.go / scoring_test.go cases (v1.30 semantics:
the NodeInclusionPolicy, MinDomains and MatchLabelKeys gates are on), System/List default
constraints, AddPod/RemovePod, batch == per-node on random clusters, and the conformance
corpus' recorded reasons and scores."""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Any

import numpy as np
import pytest
from builders import make_node, make_pod, obj
from plugins.podtopologyspread import conformance_replay

from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.config.args import LIST_DEFAULTING, PodTopologySpreadArgs
from kubesched.errors import ConfigError
from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features
from kubesched.framework import GVK, ActionType, Code, CycleState, NodeInfo, NodeScore, NodeTable, PodInfo, Status
from kubesched.objects import LabelSelector, Node, Pod, Requirement, TopologySpreadConstraint
from kubesched.plugins.helpers.gomath import go_round
from kubesched.plugins.podtopologyspread import NAME, PodTopologySpread, filtering, new, scoring
from kubesched.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    Selector,
    default_selector,
)
from kubesched.plugins.podtopologyspread.plugin import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    FILTER_STATUSES,
    PRE_FILTER_KEY,
    PRE_SCORE_KEY,
)

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
FOO: dict[str, Any] = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR: dict[str, Any] = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
LIST = PodTopologySpreadArgs(defaulting_type=LIST_DEFAULTING)
MAX_INT32 = 2**31 - 1


# ------------------------------------------------------------------------------ helpers
def nd(name: str, labels: dict[str, str], tainted: bool = False) -> Node:
    """A node with exactly these labels (no automatic hostname label); ``tainted`` adds
    upstream's test taint node.kubernetes.io/unschedulable:NoSchedule."""
    spec: dict[str, Any] = {}
    if tainted:
        spec["taints"] = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    return obj({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels)}, "spec": spec,
                "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})


def zn(name: str, zone: str, **extra: str) -> Node:
    """Upstream's usual node: labels zone and node (= name)."""
    return nd(name, {"zone": zone, "node": name, **extra})


def hn(name: str, **labels: str) -> Node:
    """A node labelled kubernetes.io/hostname (and ``labels``)."""
    return nd(name, {HOSTNAME: name, **labels})


def ep(name: str, node: str, *keys: str, ns: str = "default", terminating: bool = False, **labels: str) -> Pod:
    """An existing pod on ``node`` with label ``k: ""`` for each of ``keys`` (and ``labels``)."""
    b = make_pod().name(name).namespace(ns).node(node).labels({k: "" for k in keys}).labels(labels)
    if terminating:
        b.terminating()
    return b.obj()


def incoming(*keys: str, **labels: str) -> Any:
    return make_pod().name("p").labels({k: "" for k in keys}).labels(labels)


A, B, X, Y = zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2"), zn("node-y", "zone2")
ABXY = [A, B, X, Y]
ABY = [A, B, Y]


def setup(nodes: list[Node], pods: list[Pod], args: PodTopologySpreadArgs | None = LIST,
          objects: MemoryObjects | None = None, features: Features = FEATURES_1_30,
          ) -> tuple[FrameworkHandle, PodTopologySpread]:
    """The tables of this module are v1.30's (counts per topology key); the randomized
    equivalence tests run under both releases."""
    h = FrameworkHandle.for_nodes(nodes, pods, objects, features=features)
    return h, new(args, h)


def code_of(st: Status | None) -> str:
    if st is None:
        return "S"
    assert st.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE), st
    if st.code == Code.UNSCHEDULABLE:
        assert st.reasons == (ERR_REASON_CONSTRAINTS_NOT_MATCH,)
        return "U"
    assert st.reasons == (ERR_REASON_NODE_LABEL_NOT_MATCH,)
    return "UU"


def run_filter(pod: Pod, nodes: list[Node], pods: list[Pod]) -> dict[str, str]:
    """Filter codes per node ("S", "U", "UU"), checking filter_batch(_status) agree."""
    h, pl = setup(nodes, pods)
    st = CycleState()
    _, s = pl.pre_filter(st, pod)
    assert s is None
    infos = [h.snapshot.get(n.name) for n in nodes]
    rows = np.array([ni.index for ni in infos if ni is not None], np.int64)
    got = {n.name: code_of(pl.filter(st, pod, ni)) for n, ni in zip(nodes, infos, strict=True) if ni is not None}
    table = h.snapshot.table
    batch = pl.filter_batch(st, pod, table, rows)
    codes, statuses = pl.filter_batch_status(st, pod, table, rows)
    assert statuses is FILTER_STATUSES
    assert [code_of(FILTER_STATUSES[c]) for c in codes.tolist()] == list(got.values())
    assert batch.tolist() == [v == "S" for v in got.values()]
    return got


def sorted_paths(p: filtering.CriticalPaths) -> tuple[tuple[str, int], tuple[str, int]]:
    """Upstream's comparator: values of equal counts compared in alphabetical order."""
    (v0, n0), (v1, n1) = p.as_tuple()
    if n0 == n1 and v0 > v1:
        v0, v1 = v1, v0
    return ((v0, n0), (v1, n1))


def state_view(s: filtering.PreFilterState) -> dict[str, Any]:
    return {k: (s.pair_counts(k), sorted_paths(s.keys[k].paths)) for k in s.keys}


# ------------------------------------------------------------------------------ PreFilter state
SVC_FOO_BAR = obj({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"},
                   "spec": {"selector": {"foo": "bar"}}})
SVC_BAZ_KEP = obj({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"},
                   "spec": {"selector": {"baz": "kep"}}})


def tsc(skew: int, key: str, when: str) -> TopologySpreadConstraint:
    return TopologySpreadConstraint(max_skew=skew, topology_key=key, when_unsatisfiable=when)


PRE_FILTER_CASES = [
    pytest.param(incoming("foo").spread(5, "zone", selector={"matchLabels": {"foo": "bar"}}).obj(), ABXY, [], (),
                 {"zone": ({"zone1": 0, "zone2": 0}, (("zone1", 0), ("zone2", 0)))},
                 id="a clean cluster has every domain at zero"),
    pytest.param(incoming("foo").spread(1, "zone", selector=FOO).obj(), ABXY,
                 [ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a", "foo"), ep("p-b1", "node-b", "foo"),
                  ep("p-y1", "node-y", "foo"), ep("p-y2", "node-y", "foo")], (),
                 {"zone": ({"zone1": 3, "zone2": 2}, (("zone2", 2), ("zone1", 3)))},
                 id="matching pods are counted per zone"),
    pytest.param(incoming("foo").spread(1, "zone").obj(), ABXY,
                 [ep("p-a1", "node-a", "foo"), ep("p-y1", "node-y", "foo")], (),
                 {"zone": ({"zone1": 0, "zone2": 0}, (("zone1", 0), ("zone2", 0)))},
                 id="a null label selector counts no pod"),
    pytest.param(incoming("foo").spread(1, "zone", selector=FOO).obj(),
                 ABXY + [zn("node-o", "zone3"), zn("node-p", "zone3")],
                 [ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a", "foo"), ep("p-b1", "node-b", "foo"),
                  ep("p-y1", "node-y", "foo"), ep("p-y2", "node-y", "foo")], (),
                 {"zone": ({"zone1": 3, "zone2": 2, "zone3": 0}, (("zone3", 0), ("zone2", 2)))},
                 id="a 3-zone cluster keeps the two smallest zones as critical paths"),
    pytest.param(incoming("foo").spread(1, "zone", selector=FOO).obj(), ABXY,
                 [ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a", "foo", ns="ns1"), ep("p-b1", "node-b", "foo"),
                  ep("p-y1", "node-y", "foo", ns="ns2"), ep("p-y2", "node-y", "foo")], (),
                 {"zone": ({"zone1": 2, "zone2": 1}, (("zone2", 1), ("zone1", 2)))},
                 id="pods of another namespace are not counted"),
    pytest.param(incoming("foo").spread(1, "zone", selector=FOO).spread(1, "node", selector=FOO).obj(), ABXY,
                 [ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a", "foo"), ep("p-b1", "node-b", "foo"),
                  ep("p-y1", "node-y", "foo"), ep("p-y2", "node-y", "foo"), ep("p-y3", "node-y", "foo"),
                  ep("p-y4", "node-y", "foo")], (),
                 {"zone": ({"zone1": 3, "zone2": 4}, (("zone1", 3), ("zone2", 4))),
                  "node": ({"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}, (("node-x", 0), ("node-b", 1)))},
                 id="two constraints are counted per key"),
    pytest.param(incoming("foo").spread(1, "zone", "ScheduleAnyway", FOO).spread(1, "zone", selector=FOO)
                 .spread(1, "node", "ScheduleAnyway", FOO).spread(1, "node", selector=FOO).obj(), ABY,
                 [ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a", "foo"), ep("p-b1", "node-b", "foo"),
                  ep("p-y1", "node-y", "foo"), ep("p-y2", "node-y", "foo"), ep("p-y3", "node-y", "foo"),
                  ep("p-y4", "node-y", "foo")], (),
                 {"zone": ({"zone1": 3, "zone2": 4}, (("zone1", 3), ("zone2", 4))),
                  "node": ({"node-a": 2, "node-b": 1, "node-y": 4}, (("node-b", 1), ("node-a", 2)))},
                 id="ScheduleAnyway constraints are not filtering constraints"),
    pytest.param(incoming("foo", "bar").spread(1, "zone", selector=FOO).spread(1, "node", selector=BAR).obj(), ABY,
                 [ep("p-a", "node-a", "foo"), ep("p-b", "node-b", "bar")], (),
                 {"zone": ({"zone1": 1, "zone2": 0}, (("zone2", 0), ("zone1", 1))),
                  "node": ({"node-a": 0, "node-b": 1, "node-y": 0}, (("node-a", 0), ("node-y", 0)))},
                 id="each constraint counts with its own selector"),
    pytest.param(incoming("foo", "bar").spread(1, "zone", selector=FOO).spread(1, "node", selector=BAR).obj(), ABY,
                 [ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a", "foo", "bar"), ep("p-b1", "node-b", "foo"),
                  ep("p-y1", "node-y", "foo"), ep("p-y2", "node-y", "foo", "bar"), ep("p-y3", "node-y", "foo"),
                  ep("p-y4", "node-y", "foo", "bar")], (),
                 {"zone": ({"zone1": 3, "zone2": 4}, (("zone1", 3), ("zone2", 4))),
                  "node": ({"node-a": 1, "node-b": 0, "node-y": 2}, (("node-b", 0), ("node-a", 1)))},
                 id="pods matching both selectors count for both constraints"),
    pytest.param(incoming("foo").node_affinity_in("node", ["node-x"], "NotIn").spread(1, "zone", selector=FOO)
                 .spread(1, "node", selector=FOO).obj(), ABXY,
                 [ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a", "foo"), ep("p-b1", "node-b", "foo"),
                  ep("p-y1", "node-y", "foo"), ep("p-y2", "node-y", "foo"), ep("p-y3", "node-y", "foo"),
                  ep("p-y4", "node-y", "foo")], (),
                 {"zone": ({"zone1": 3, "zone2": 4}, (("zone1", 3), ("zone2", 4))),
                  "node": ({"node-a": 2, "node-b": 1, "node-y": 4}, (("node-b", 1), ("node-a", 2)))},
                 id="nodes excluded by required node affinity are not domains"),
    pytest.param(make_pod().name("p").label("foo", "bar").label("baz", "kar").obj(), [], [],
                 (tsc(3, "node", DO_NOT_SCHEDULE), tsc(2, "node", SCHEDULE_ANYWAY), tsc(5, "rack", DO_NOT_SCHEDULE)),
                 {"node": ({}, (("", MAX_INT32), ("", MAX_INT32))), "rack": ({}, (("", MAX_INT32), ("", MAX_INT32)))},
                 id="List default constraints apply with the service's selector"),
    pytest.param(make_pod().name("p").label("foo", "bar").label("baz", "tar")
                 .spread(1, "zone", selector={"matchLabels": {"baz": "tar"}})
                 .spread(2, "planet", "ScheduleAnyway", {"matchLabels": {"fot": "rok"}}).obj(), [], [],
                 (tsc(2, "node", DO_NOT_SCHEDULE),),
                 {"zone": ({}, (("", MAX_INT32), ("", MAX_INT32)))},
                 id="default constraints are ignored when the pod has its own"),
    pytest.param(incoming("foo").node_selector({"foo": ""}).spread(1, "node", selector=BAR).obj(),
                 [nd("node-a", {"node": "node-a", "foo": ""}), nd("node-b", {"node": "node-b", "foo": ""}),
                  nd("node-c", {"node": "node-c", "bar": ""})],
                 [ep("p-a", "node-a", "bar"), ep("p-b", "node-b", "bar"), ep("p-c", "node-b", "bar"),
                  ep("p-d", "node-c")], (),
                 {"node": ({"node-a": 1, "node-b": 2}, (("node-a", 1), ("node-b", 2)))},
                 id="nodeAffinityPolicy Honor drops nodes outside the nodeSelector"),
    pytest.param(incoming("foo").node_selector({"foo": ""}).spread(1, "node", selector=BAR,
                                                                   nodeAffinityPolicy="Ignore").obj(),
                 [nd("node-a", {"node": "node-a", "foo": ""}), nd("node-b", {"node": "node-b", "foo": ""}),
                  nd("node-c", {"node": "node-c", "bar": ""})],
                 [ep("p-a", "node-a", "bar"), ep("p-b", "node-b", "bar"), ep("p-c", "node-b", "bar"),
                  ep("p-d", "node-c")], (),
                 {"node": ({"node-a": 1, "node-b": 2, "node-c": 0}, (("node-c", 0), ("node-a", 1)))},
                 id="nodeAffinityPolicy Ignore keeps nodes outside the nodeSelector"),
    pytest.param(incoming("foo").node_affinity_in("foo", [""]).spread(1, "node", selector=BAR).obj(),
                 [nd("node-a", {"node": "node-a", "foo": ""}), nd("node-b", {"node": "node-b", "foo": ""}),
                  nd("node-c", {"node": "node-c", "bar": ""})],
                 [ep("p-a", "node-a", "bar"), ep("p-c", "node-b", "bar"), ep("p-d", "node-b", "bar"),
                  ep("p-e", "node-c")], (),
                 {"node": ({"node-a": 1, "node-b": 2}, (("node-a", 1), ("node-b", 2)))},
                 id="nodeAffinityPolicy Honor drops nodes outside the required node affinity"),
    pytest.param(incoming("foo").node_affinity_in("foo", [""]).spread(1, "node", selector=BAR,
                                                                      nodeAffinityPolicy="Ignore").obj(),
                 [nd("node-a", {"node": "node-a", "foo": ""}), nd("node-b", {"node": "node-b", "foo": ""}),
                  nd("node-c", {"node": "node-c", "bar": ""})],
                 [ep("p-a", "node-a", "bar"), ep("p-b", "node-b", "bar"), ep("p-c", "node-b", "bar"),
                  ep("p-d", "node-c")], (),
                 {"node": ({"node-a": 1, "node-b": 2, "node-c": 0}, (("node-c", 0), ("node-a", 1)))},
                 id="nodeAffinityPolicy Ignore keeps nodes outside the required node affinity"),
    pytest.param(incoming("foo").spread(1, "node", selector=BAR).obj(),
                 [nd("node-a", {"node": "node-a"}), nd("node-b", {"node": "node-b"}),
                  nd("node-c", {"node": "node-c", "bar": ""}, tainted=True)],
                 [ep("p-a", "node-a", "bar"), ep("p-b", "node-b", "bar"), ep("p-c", "node-b", "bar"),
                  ep("p-d", "node-c")], (),
                 {"node": ({"node-a": 1, "node-b": 2, "node-c": 0}, (("node-c", 0), ("node-a", 1)))},
                 id="nodeTaintsPolicy defaults to Ignore"),
    pytest.param(incoming("foo").spread(1, "node", selector=BAR, nodeTaintsPolicy="Honor").obj(),
                 [nd("node-a", {"node": "node-a"}), nd("node-b", {"node": "node-b"}),
                  nd("node-c", {"node": "node-c", "bar": ""}, tainted=True)],
                 [ep("p-a", "node-a", "bar"), ep("p-b", "node-b", "bar"), ep("p-c", "node-b", "bar"),
                  ep("p-d", "node-c")], (),
                 {"node": ({"node-a": 1, "node-b": 2}, (("node-a", 1), ("node-b", 2)))},
                 id="nodeTaintsPolicy Honor drops nodes with an untolerated taint"),
    pytest.param(incoming("foo").toleration(key="node.kubernetes.io/unschedulable", operator="Exists",
                                            effect="NoSchedule")
                 .spread(1, "node", selector=BAR, nodeTaintsPolicy="Honor").obj(),
                 [nd("node-a", {"node": "node-a"}), nd("node-b", {"node": "node-b"}),
                  nd("node-c", {"node": "node-c", "bar": ""}, tainted=True)],
                 [ep("p-a", "node-a", "bar"), ep("p-b", "node-b", "bar"), ep("p-c", "node-b", "bar"),
                  ep("p-d", "node-c")], (),
                 {"node": ({"node-a": 1, "node-b": 2, "node-c": 0}, (("node-c", 0), ("node-a", 1)))},
                 id="nodeTaintsPolicy Honor keeps nodes whose taints are tolerated"),
    pytest.param(incoming("foo").node_selector({"foo": ""}).spread(1, "zone", selector=FOO)
                 .spread(1, "node", selector=FOO, nodeAffinityPolicy="Ignore").obj(),
                 [zn("node-a", "zone1", foo=""), zn("node-b", "zone1"), zn("node-x", "zone2", foo="")],
                 [ep("p-b1", "node-b", "foo"), ep("p-b2", "node-b", "foo"), ep("p-x1", "node-x", "foo")], (),
                 {"zone": ({"zone1": 0, "zone2": 1}, (("zone1", 0), ("zone2", 1))),
                  "node": ({"node-a": 0, "node-b": 2, "node-x": 1}, (("node-a", 0), ("node-x", 1)))},
                 id="inclusion policies apply per constraint (zone honors affinity, node ignores it)"),
    pytest.param(incoming("foo").spread(1, "zone", selector=FOO, nodeTaintsPolicy="Honor")
                 .spread(1, "node", selector=FOO).obj(),
                 [zn("node-a", "zone1", foo=""), nd("node-b", {"zone": "zone1", "node": "node-b"}, tainted=True),
                  zn("node-x", "zone2", foo="")],
                 [ep("p-b1", "node-b", "foo"), ep("p-b2", "node-b", "foo"), ep("p-x1", "node-x", "foo")], (),
                 {"zone": ({"zone1": 0, "zone2": 1}, (("zone1", 0), ("zone2", 1))),
                  "node": ({"node-a": 0, "node-b": 2, "node-x": 1}, (("node-a", 0), ("node-x", 1)))},
                 id="inclusion policies apply per constraint (zone honors taints, node ignores them)"),
    pytest.param(incoming("foo").node_selector({"foo": ""}).spread(1, "zone", selector=FOO)
                 .spread(1, "node", selector=FOO).obj(),
                 [zn("node-a", "zone1"), nd("node-b", {"zone": "zone1", "node": "node-b", "foo": ""}, tainted=True),
                  zn("node-x", "zone2", foo=""), zn("node-y", "zone2")],
                 [ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a", "foo"), ep("p-x1", "node-x", "foo"),
                  ep("p-y1", "node-y", "foo")], (),
                 {"zone": ({"zone1": 0, "zone2": 1}, (("zone1", 0), ("zone2", 1))),
                  "node": ({"node-b": 0, "node-x": 1}, (("node-b", 0), ("node-x", 1)))},
                 id="both constraints honoring node affinity count only selected nodes"),
    pytest.param(incoming("foo").node_selector({"foo": ""}).spread(1, "zone", selector=FOO, nodeAffinityPolicy="Ignore")
                 .spread(1, "node", selector=FOO, nodeTaintsPolicy="Honor").obj(),
                 [zn("node-a", "zone1"), nd("node-b", {"zone": "zone1", "node": "node-b", "foo": ""}, tainted=True),
                  zn("node-x", "zone2", foo=""), zn("node-y", "zone2", foo="")],
                 [ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a", "foo"), ep("p-x1", "node-x", "foo"),
                  ep("p-x2", "node-x", "foo"), ep("p-y1", "node-y", "foo")], (),
                 {"zone": ({"zone1": 2, "zone2": 3}, (("zone1", 2), ("zone2", 3))),
                  "node": ({"node-x": 2, "node-y": 1}, (("node-y", 1), ("node-x", 2)))},
                 id="zone ignoring affinity and taints, node honoring both"),
    pytest.param(incoming("foo", bar="a").spread(1, "zone", selector=FOO, matchLabelKeys=["bar"]).obj(), ABXY,
                 [ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a", "foo", bar="a"), ep("p-b1", "node-b", "foo"),
                  ep("p-y1", "node-y", "foo", bar="a"), ep("p-y2", "node-y", "bar")], (),
                 {"zone": ({"zone1": 1, "zone2": 1}, (("zone1", 1), ("zone2", 1)))},
                 id="matchLabelKeys are ANDed with a non-empty label selector"),
    pytest.param(incoming(foo="a").spread(1, "zone", selector={}, matchLabelKeys=["foo"]).obj(), ABXY,
                 [ep("p-a1", "node-a", foo="a"), ep("p-a2", "node-a", foo="a"), ep("p-b1", "node-b", foo="a"),
                  ep("p-y1", "node-y", foo="a"), ep("p-y2", "node-y", foo="a")], (),
                 {"zone": ({"zone1": 3, "zone2": 2}, (("zone2", 2), ("zone1", 3)))},
                 id="matchLabelKeys turn an empty label selector into a selective one"),
    pytest.param(incoming("foo").spread(1, "zone", matchLabelKeys=["bar"]).obj(), ABXY,
                 [ep("p-a1", "node-a", foo="a"), ep("p-y1", "node-y", foo="a")], (),
                 {"zone": ({"zone1": 0, "zone2": 0}, (("zone1", 0), ("zone2", 0)))},
                 id="matchLabelKeys do nothing to a null label selector"),
    pytest.param(incoming("foo").spread(1, "zone", selector=FOO, matchLabelKeys=["bar"]).obj(), ABXY,
                 [ep("p-a1", "node-a", foo="a"), ep("p-a2", "node-a", foo="a"), ep("p-b1", "node-b", foo="a"),
                  ep("p-y1", "node-y", foo="a"), ep("p-y2", "node-y", foo="a")], (),
                 {"zone": ({"zone1": 3, "zone2": 2}, (("zone2", 2), ("zone1", 3)))},
                 id="matchLabelKeys the pod lacks are ignored"),
    # v1.30 keys TpPairToMatchNum by (key, value): on each node the later constraint's count
    # replaces the earlier one's (upstream v1.33+ keeps one map per constraint: 2/1 and 1/3).
    pytest.param(incoming("foo", "bar").spread(1, "zone", selector=FOO).spread(1, "zone", selector=BAR).obj(), ABXY,
                 [ep("p-a1", "node-a", "foo", "bar"), ep("p-b1", "node-b", "foo"), ep("p-x1", "node-x", "bar"),
                  ep("p-y1", "node-y", "foo", "bar"), ep("p-y2", "node-y", "bar")], (),
                 {"zone": ({"zone1": 1, "zone2": 3}, (("zone1", 1), ("zone2", 3)))},
                 id="two constraints on the same key share one count map and the last one wins"),
]


@pytest.mark.parametrize(("pod", "nodes", "pods", "defaults", "want"), PRE_FILTER_CASES)
def test_pre_filter_state(pod: Pod, nodes: list[Node], pods: list[Pod], defaults: tuple[TopologySpreadConstraint, ...],
                          want: dict[str, Any]) -> None:
    h, pl = setup(nodes, pods, PodTopologySpreadArgs(default_constraints=defaults, defaulting_type=LIST_DEFAULTING),
                  MemoryObjects(services=[SVC_FOO_BAR]))
    st = CycleState()
    assert pl.pre_filter(st, pod) == (None, None)
    s = st.read(PRE_FILTER_KEY)
    assert state_view(s) == want
    assert {k: kc.domains for k, kc in s.keys.items()} == {k: len(v[0]) for k, v in want.items()}
    plain = filtering.compute_state_plain(pod, s.constraints, h.snapshot.list())
    assert state_view(plain) == want


@pytest.mark.parametrize(("pod", "defaults", "services"), [
    pytest.param(incoming("foo").obj(), (), [], id="a pod without constraints and no defaults skips"),
    pytest.param(make_pod().name("p").label("foo", "bar").obj(), (tsc(3, "node", DO_NOT_SCHEDULE),), [SVC_BAZ_KEP],
                 id="default constraints with no service selecting the pod skip"),
    pytest.param(make_pod().name("p").label("foo", "bar").obj(), (tsc(2, "node", SCHEDULE_ANYWAY),), [SVC_FOO_BAR],
                 id="default ScheduleAnyway constraints do not filter"),
    pytest.param(incoming("foo").spread(1, "zone", "ScheduleAnyway", FOO).obj(), (), [],
                 id="a pod with only ScheduleAnyway constraints skips"),
])
def test_pre_filter_skips(pod: Pod, defaults: tuple[TopologySpreadConstraint, ...], services: list[Any]) -> None:
    _, pl = setup([A], [], PodTopologySpreadArgs(default_constraints=defaults, defaulting_type=LIST_DEFAULTING),
                  MemoryObjects(services=services))
    st = CycleState()
    _, s = pl.pre_filter(st, pod)
    assert s is not None and s.is_skip()
    assert PRE_FILTER_KEY not in st


def test_system_defaulting_never_filters() -> None:
    _, pl = setup([A], [], None, MemoryObjects(services=[SVC_FOO_BAR]))
    _, s = pl.pre_filter(CycleState(), make_pod().name("p").label("foo", "bar").obj())
    assert s is not None and s.is_skip()


def test_filter_without_pre_filter_state_is_an_error() -> None:
    h, pl = setup([A], [])
    ni = h.snapshot.get("node-a")
    assert ni is not None
    st = pl.filter(CycleState(), incoming("foo").obj(), ni)
    assert st is not None and st.code == Code.ERROR
    assert st.message == 'reading "PreFilterPodTopologySpread" from cycleState: not found'


# ------------------------------------------------------------------------------ AddPod / RemovePod
def node_constraint_pod(*extra: str) -> Pod:
    b = incoming("foo")
    for key in extra:
        b.spread(1, key, selector=FOO)
    return b.spread(1, "node", selector=FOO).obj() if not extra else b.obj()


ZONE_POD = incoming("foo").spread(1, "zone", selector=FOO).obj()
ZONE_NODE_POD = incoming("foo").spread(1, "zone", selector=FOO).spread(1, "node", selector=FOO).obj()
ZONE_FOO_NODE_BAR_POD = incoming("foo", "bar").spread(1, "zone", selector=FOO).spread(1, "node", selector=BAR).obj()
AFFINITY_NOT_BAR_POD = incoming("foo").node_affinity_in("foo", ["bar"], "NotIn").spread(1, "zone", selector=FOO).obj()
NA_FOO_BAR, NB_FOO = zn("node-a", "zone1", foo="bar"), zn("node-b", "zone2", foo="")
NA_TAINTED = nd("node-a", {"zone": "zone1", "node": "node-a"}, tainted=True)
NB_ZONE2 = zn("node-b", "zone2")

ADD_POD_CASES = [
    pytest.param(node_constraint_pod(), ep("p-a1", "node-a", "foo"), [], 0, [zn("node-a", "zone1"), zn("node-b", "zone1")],
                 {"node": ({"node-a": 1, "node-b": 0}, (("node-b", 0), ("node-a", 1)))},
                 id="adding to an empty cluster makes the other node the minimum"),
    pytest.param(node_constraint_pod(), ep("p-a1", "node-a", "foo"), [ep("p-b1", "node-b", "foo")], 0, [A, B],
                 {"node": ({"node-a": 1, "node-b": 1}, (("node-a", 1), ("node-b", 1)))},
                 id="adding to the minimum node raises the minimum"),
    pytest.param(node_constraint_pod(), ep("p-a1", "node-a", "foo", ns="ns1"), [ep("p-b1", "node-b", "foo")], 0, [A, B],
                 {"node": ({"node-a": 0, "node-b": 1}, (("node-a", 0), ("node-b", 1)))},
                 id="adding a pod of another namespace changes nothing"),
    pytest.param(node_constraint_pod(), ep("p-b2", "node-b", "foo"), [ep("p-b1", "node-b", "foo")], 1, [A, B],
                 {"node": ({"node-a": 0, "node-b": 2}, (("node-a", 0), ("node-b", 2)))},
                 id="adding to a non-critical node keeps the minimum"),
    pytest.param(ZONE_NODE_POD, ep("p-a1", "node-a", "foo"), [], 0, [A, X],
                 {"zone": ({"zone1": 1, "zone2": 0}, (("zone2", 0), ("zone1", 1))),
                  "node": ({"node-a": 1, "node-x": 0}, (("node-x", 0), ("node-a", 1)))},
                 id="adding a pod updates both the zone and the node key"),
    pytest.param(ZONE_NODE_POD, ep("p-a1", "node-a", "foo"), [ep("p-x1", "node-x", "foo")], 0, [A, X],
                 {"zone": ({"zone1": 1, "zone2": 1}, (("zone1", 1), ("zone2", 1))),
                  "node": ({"node-a": 1, "node-x": 1}, (("node-a", 1), ("node-x", 1)))},
                 id="adding a pod evens out both keys"),
    pytest.param(ZONE_NODE_POD, ep("p-a1", "node-a", "foo"),
                 [ep("p-b1", "node-b", "foo"), ep("p-b2", "node-b", "foo"), ep("p-x1", "node-x", "foo")], 0, [A, B, X],
                 {"zone": ({"zone1": 3, "zone2": 1}, (("zone2", 1), ("zone1", 3))),
                  "node": ({"node-a": 1, "node-b": 2, "node-x": 1}, (("node-a", 1), ("node-x", 1)))},
                 id="adding a pod moves the node minimum but not the zone minimum"),
    pytest.param(ZONE_FOO_NODE_BAR_POD, ep("p-a1", "node-a", "foo"),
                 [ep("p-b1", "node-b", "foo", "bar"), ep("p-x1", "node-x", "foo", "bar"), ep("p-x2", "node-x", "bar")],
                 0, [A, B, X],
                 {"zone": ({"zone1": 2, "zone2": 1}, (("zone2", 1), ("zone1", 2))),
                  "node": ({"node-a": 0, "node-b": 1, "node-x": 2}, (("node-a", 0), ("node-b", 1)))},
                 id="an added pod counts only for the constraints it matches"),
    pytest.param(ZONE_FOO_NODE_BAR_POD, ep("p-a1", "node-a", "foo", "bar"),
                 [ep("p-b1", "node-b", "bar"), ep("p-x1", "node-x", "foo", "bar"), ep("p-x2", "node-x", "bar")],
                 0, [A, B, X],
                 {"zone": ({"zone1": 1, "zone2": 1}, (("zone1", 1), ("zone2", 1))),
                  "node": ({"node-a": 1, "node-b": 1, "node-x": 2}, (("node-a", 1), ("node-b", 1)))},
                 id="an added pod matching both selectors counts for both constraints"),
    pytest.param(AFFINITY_NOT_BAR_POD, ep("p-a1", "node-a", "foo", zone="zone1"),
                 [ep("p-a2", "node-a", "foo", zone="zone1"), ep("p-b1", "node-b", "foo", zone="zone2")], 0,
                 [NA_FOO_BAR, NB_FOO],
                 {"zone": ({"zone2": 1}, (("zone2", 1), ("", MAX_INT32)))},
                 id="adding to a node outside the preemptor's node affinity changes nothing"),
    pytest.param(ZONE_POD, ep("p-b1", "node-b", "foo", zone="zone2"),
                 [ep("p-a1", "node-a", "foo", zone="zone1"), ep("p-b2", "node-b", "foo", zone="zone2")], 1,
                 [NA_FOO_BAR, NB_FOO],
                 {"zone": ({"zone1": 1, "zone2": 2}, (("zone1", 1), ("zone2", 2)))},
                 id="adding to a node inside the preemptor's node affinity counts"),
    pytest.param(ZONE_POD, ep("p-b1", "node-b", zone="zone2"),
                 [ep("p-a1", "node-a", "foo", zone="zone1"), ep("p-b2", "node-b", "foo", zone="zone2")], 1,
                 [NA_FOO_BAR, NB_FOO],
                 {"zone": ({"zone1": 1, "zone2": 1}, (("zone1", 1), ("zone2", 1)))},
                 id="adding a pod the selector does not match changes nothing"),
    pytest.param(make_pod().name("p").label("foo", "").toleration(key="node.kubernetes.io/unschedulable",
                                                                  operator="Exists", effect="NoSchedule")
                 .spread(1, "zone", selector=FOO).obj(),
                 ep("p-b1", "node-b", "foo", zone="zone2"),
                 [ep("p-a1", "node-a", "foo", zone="zone1"), ep("p-b2", "node-b", "foo", zone="zone2")], 1,
                 [NA_TAINTED, NB_ZONE2],
                 {"zone": ({"zone1": 1, "zone2": 2}, (("zone1", 1), ("zone2", 2)))},
                 id="a tainted node still counts under the default nodeTaintsPolicy"),
]


def _extension(pl: PodTopologySpread, op: str, st: CycleState, pod: Pod, other: Pod, ni: NodeInfo) -> None:
    ext = pl.pre_filter_extensions()
    fn = ext.add_pod if op == "add" else ext.remove_pod
    assert fn(st, pod, PodInfo(other), ni) is None


@pytest.mark.parametrize(("pod", "added", "pods", "node_idx", "nodes", "want"), ADD_POD_CASES)
def test_add_pod(pod: Pod, added: Pod, pods: list[Pod], node_idx: int, nodes: list[Node], want: dict[str, Any]) -> None:
    h, pl = setup(nodes, pods)
    st = CycleState()
    pl.pre_filter(st, pod)
    before = state_view(st.read(PRE_FILTER_KEY))
    ni = h.snapshot.get(nodes[node_idx].name)
    assert ni is not None
    cloned = st.clone()
    _extension(pl, "add", cloned, pod, added, ni)
    assert state_view(cloned.read(PRE_FILTER_KEY)) == want
    assert state_view(st.read(PRE_FILTER_KEY)) == before, "the original state must not change"


REMOVE_POD_CASES = [
    pytest.param(ZONE_POD, [zn("node-a", "zone1"), zn("node-b", "zone1"), X],
                 [ep("p-a1", "node-a", "foo"), ep("p-b1", "node-b", "foo"), ep("p-x1", "node-x", "foo")], 0, None, 0,
                 {"zone": ({"zone1": 1, "zone2": 1}, (("zone1", 1), ("zone2", 1)))},
                 id="removing from the larger zone evens the zones"),
    pytest.param(ZONE_POD, ABXY,
                 [ep("p-a1", "node-a", "foo"), ep("p-b1", "node-b", "foo"), ep("p-x1", "node-x", "foo"),
                  ep("p-y1", "node-y", "foo")], 0, None, 0,
                 {"zone": ({"zone1": 1, "zone2": 2}, (("zone1", 1), ("zone2", 2)))},
                 id="removing a pod lowers the minimum"),
    pytest.param(ZONE_POD, ABXY,
                 [ep("p-a0", "node-a", "bar"), ep("p-a1", "node-a", "foo"), ep("p-b1", "node-b", "foo"),
                  ep("p-x1", "node-x", "foo"), ep("p-y1", "node-y", "foo")], 0, None, 0,
                 {"zone": ({"zone1": 2, "zone2": 2}, (("zone1", 2), ("zone2", 2)))},
                 id="removing a pod the selector does not match changes nothing"),
    pytest.param(ZONE_POD, ABXY,
                 [ep("p-a1", "node-a", "foo"), ep("p-b1", "node-b", "foo"), ep("p-x1", "node-x", "foo"),
                  ep("p-y1", "node-y", "foo")], -1, ep("p-a0", "node-a", "bar"), 0,
                 {"zone": ({"zone1": 2, "zone2": 2}, (("zone1", 2), ("zone2", 2)))},
                 id="removing a pod that does not exist and does not match changes nothing"),
    pytest.param(ZONE_NODE_POD, [zn("node-a", "zone1"), zn("node-b", "zone1"), X],
                 [ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a", "foo"), ep("p-b1", "node-b", "foo"),
                  ep("p-x1", "node-x", "foo"), ep("p-x2", "node-x", "foo")], 3, None, 2,
                 {"zone": ({"zone1": 3, "zone2": 1}, (("zone2", 1), ("zone1", 3))),
                  "node": ({"node-a": 2, "node-b": 1, "node-x": 1}, (("node-b", 1), ("node-x", 1)))},
                 id="removing a pod updates both keys"),
    pytest.param(AFFINITY_NOT_BAR_POD, [NA_FOO_BAR, NB_FOO],
                 [ep("p-a2", "node-a", "foo", zone="zone1"), ep("p-b1", "node-b", "foo", zone="zone2")], -1,
                 ep("p-a1", "node-a", "foo", zone="zone1"), 0,
                 {"zone": ({"zone2": 1}, (("zone2", 1), ("", MAX_INT32)))},
                 id="removing from a node outside the preemptor's node affinity changes nothing"),
    pytest.param(ZONE_POD, [NA_FOO_BAR, NB_FOO],
                 [ep("p-a1", "node-a", "foo", zone="zone1"), ep("p-b2", "node-b", "foo", zone="zone2")], -1,
                 ep("p-b1", "node-b", "foo", zone="zone2"), 1,
                 {"zone": ({"zone1": 1, "zone2": 0}, (("zone2", 0), ("zone1", 1)))},
                 id="removing a matching pod counts down even if it was never counted"),
]


@pytest.mark.parametrize(("pod", "nodes", "pods", "deleted_idx", "deleted", "node_idx", "want"), REMOVE_POD_CASES)
def test_remove_pod(pod: Pod, nodes: list[Node], pods: list[Pod], deleted_idx: int, deleted: Pod | None, node_idx: int,
                    want: dict[str, Any]) -> None:
    h, pl = setup(nodes, pods)
    st = CycleState()
    pl.pre_filter(st, pod)
    victim = pods[deleted_idx] if deleted_idx >= 0 else deleted
    assert victim is not None
    ni = h.snapshot.get(nodes[node_idx].name)
    assert ni is not None
    _extension(pl, "remove", st, pod, victim, ni)
    assert state_view(st.read(PRE_FILTER_KEY)) == want


def test_add_pod_updates_only_the_two_critical_slots() -> None:
    """Three nodes at 1 pod: the paths hold two of them; two AddPods on those two leave the
    minimum at 2 though the third node still has 1 (upstream's accepted two-slot caveat),
    so node-a now passes a maxSkew-1 check it would fail against the true minimum."""
    nodes = [zn("node-a", "z"), zn("node-b", "z"), zn("node-c", "z")]
    h, pl = setup(nodes, [ep("p-a", "node-a", "foo"), ep("p-b", "node-b", "foo"), ep("p-c", "node-c", "foo")])
    pod = node_constraint_pod()
    st = CycleState()
    pl.pre_filter(st, pod)
    assert st.read(PRE_FILTER_KEY).keys["node"].paths.as_tuple() == (("node-a", 1), ("node-b", 1))
    na, nb = h.snapshot.get("node-a"), h.snapshot.get("node-b")
    assert na is not None and nb is not None
    _extension(pl, "add", st, pod, ep("p-a2", "node-a", "foo"), na)
    _extension(pl, "add", st, pod, ep("p-b2", "node-b", "foo"), nb)
    s = st.read(PRE_FILTER_KEY)
    assert s.keys["node"].paths.as_tuple() == (("node-b", 2), ("node-a", 2))
    assert s.pair_counts("node") == {"node-a": 2, "node-b": 2, "node-c": 1}
    assert pl.filter(st, pod, na) is None


def test_critical_paths_update_follows_upstream() -> None:
    p = filtering.CriticalPaths()
    p.update("a", 3)
    assert p.as_tuple() == (("a", 3), ("", MAX_INT32))
    p.update("b", 1)
    assert p.as_tuple() == (("b", 1), ("a", 3))
    p.update("c", 2)
    assert p.as_tuple() == (("b", 1), ("c", 2))
    p.update("b", 5)  # an existing slot: set, then swap if out of order
    assert p.as_tuple() == (("c", 2), ("b", 5))
    p.update("d", 5)  # not smaller than either slot: ignored
    assert p.as_tuple() == (("c", 2), ("b", 5))


# ------------------------------------------------------------------------------ Filter
SINGLE = [
    pytest.param(incoming("foo").spread(1, "zone", selector=FOO).obj(), ABXY, [],
                 {"node-a": "S", "node-b": "S", "node-x": "S", "node-y": "S"}, id="no existing pods: every node fits"),
    pytest.param(incoming("foo").spread(1, "zone", selector=BAR).obj(), ABXY, [],
                 {"node-a": "S", "node-b": "S", "node-x": "S", "node-y": "S"},
                 id="no existing pods and the pod does not match itself: every node fits"),
    pytest.param(incoming("foo").spread(1, "zone", selector=FOO).obj(), ABXY,
                 [ep("p-a1", "node-a", "foo", ns="ns1"), ep("p-b1", "node-a", "foo", ns="ns2"),
                  ep("p-x1", "node-x", "foo"), ep("p-y1", "node-y", "foo")],
                 {"node-a": "S", "node-b": "S", "node-x": "U", "node-y": "U"},
                 id="pods of other namespaces do not count"),
    pytest.param(incoming("foo").spread(1, "zone").obj(), ABXY,
                 [ep("p-x1", "node-x", "foo"), ep("p-y1", "node-y", "foo")],
                 {"node-a": "S", "node-b": "S", "node-x": "S", "node-y": "S"},
                 id="a null selector matches no existing pod"),
    pytest.param(incoming("foo").spread(1, "zone", selector=FOO).obj(), ABXY,
                 [ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a", "foo"), ep("p-b1", "node-b", "foo"),
                  ep("p-y1", "node-y", "foo"), ep("p-y2", "node-y", "foo"), ep("p-y3", "node-y", "foo")],
                 {"node-a": "S", "node-b": "S", "node-x": "S", "node-y": "S"},
                 id="zones spread 3/3: every node fits"),
    pytest.param(incoming("foo").spread(1, "zone", selector=FOO).obj(),
                 [A, nd("node-b", {"zon": "zone1", "node": "node-b"}), X, Y],
                 [ep("p-a1", "node-a", "foo"), ep("p-b1", "node-b", "foo"), ep("p-x1", "node-x", "foo"),
                  ep("p-y1", "node-y", "foo")],
                 {"node-a": "S", "node-b": "UU", "node-x": "U", "node-y": "U"},
                 id="a node without the zone label is unresolvable and does not count"),
    pytest.param(incoming("foo").spread(1, "rack", selector=FOO).obj(), [A, X], [],
                 {"node-a": "UU", "node-x": "UU"}, id="no node has the rack label: every node is unresolvable"),
    pytest.param(incoming("foo").spread(1, "node", selector=FOO).obj(), ABXY,
                 [ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a", "foo"), ep("p-b1", "node-b", "foo"),
                  ep("p-y1", "node-y", "foo"), ep("p-y2", "node-y", "foo"), ep("p-y3", "node-y", "foo")],
                 {"node-a": "U", "node-b": "U", "node-x": "S", "node-y": "U"},
                 id="nodes spread 2/1/0/3: only the empty node fits"),
    pytest.param(incoming("foo").spread(2, "node", selector=FOO).obj(), ABXY,
                 [ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a", "foo"), ep("p-b1", "node-b", "foo"),
                  ep("p-y1", "node-y", "foo"), ep("p-y2", "node-y", "foo"), ep("p-y3", "node-y", "foo")],
                 {"node-a": "U", "node-b": "S", "node-x": "S", "node-y": "U"},
                 id="nodes spread 2/1/0/3 with maxSkew 2: two nodes fit"),
    pytest.param(incoming("bar").spread(1, "node", selector=FOO).obj(), ABXY,
                 [ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a", "foo"), ep("p-b1", "node-b", "foo"),
                  ep("p-y1", "node-y", "foo"), ep("p-y2", "node-y", "foo"), ep("p-y3", "node-y", "foo")],
                 {"node-a": "U", "node-b": "S", "node-x": "S", "node-y": "U"},
                 id="a pod not matching itself may go one above the minimum plus maxSkew"),
    pytest.param(incoming("foo").node_affinity_in("node", ["node-a", "node-y"]).spread(1, "node", selector=FOO).obj(),
                 ABXY,
                 [ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a", "foo"), ep("p-b1", "node-b", "foo"),
                  ep("p-y1", "node-y", "foo"), ep("p-y2", "node-y", "foo"), ep("p-y3", "node-y", "foo")],
                 {"node-a": "S", "node-b": "S", "node-x": "S", "node-y": "U"},
                 id="node affinity leaves only node-a and node-y as domains, so node-a fits"),
    pytest.param(incoming("foo").spread(1, "node", selector=FOO).obj(),
                 [nd("node-a", {"node": "node-a"}), nd("node-b", {"node": "node-b"})],
                 [ep("p-a", "node-a", "foo", terminating=True), ep("p-b", "node-b", "foo")],
                 {"node-a": "S", "node-b": "U"}, id="terminating pods are not counted"),
    pytest.param(incoming("foo").node_affinity_in("node", ["node-b"], "NotIn").spread(1, "zone", selector=FOO).obj(),
                 ABXY, [ep("p-b1", "node-b", "foo"), ep("p-b2", "node-b", "foo"), ep("p-y1", "node-y", "foo")],
                 {"node-a": "S", "node-b": "S", "node-x": "U", "node-y": "U"},
                 id="pods on a node outside the node affinity do not count for its zone"),
    pytest.param(incoming("foo").spread(2, "node", selector=FOO, minDomains=4).obj(),
                 [nd(n, {"node": n}) for n in ("node-a", "node-b", "node-c")],
                 [ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a", "foo"), ep("p-b1", "node-b", "foo"),
                  ep("p-b2", "node-b", "foo"), ep("p-c1", "node-c", "foo")],
                 {"node-a": "U", "node-b": "U", "node-c": "S"},
                 id="fewer domains than minDomains makes the global minimum 0"),
    pytest.param(incoming("foo").spread(2, "node", selector=FOO, minDomains=2).obj(),
                 [nd(n, {"node": n}) for n in ("node-a", "node-b", "node-c")],
                 [ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a", "foo"), ep("p-b1", "node-b", "foo"),
                  ep("p-b2", "node-b", "foo"), ep("p-c1", "node-c", "foo")],
                 {"node-a": "S", "node-b": "S", "node-c": "S"}, id="enough domains for minDomains: every node fits"),
    pytest.param(incoming("foo").spread(2, "zone", selector=FOO, minDomains=3).obj(), ABXY,
                 [ep("p-b1", "node-a", "foo"), ep("p-b2", "node-b", "foo"), ep("p-y1", "node-y", "foo")],
                 {"node-a": "U", "node-b": "U", "node-x": "S", "node-y": "S"},
                 id="two zones under minDomains 3: the fuller zone is rejected"),
    pytest.param(incoming("foo").spread(2, "zone", selector=FOO, minDomains=1).obj(), ABXY,
                 [ep("p-b1", "node-a", "foo"), ep("p-b2", "node-b", "foo"), ep("p-y1", "node-y", "foo")],
                 {"node-a": "S", "node-b": "S", "node-x": "S", "node-y": "S"},
                 id="two zones over minDomains 1: every node fits"),
    pytest.param(incoming("foo").node_selector({"foo": ""}).spread(1, "node", selector=FOO).obj(),
                 [nd("node-a", {"node": "node-a", "foo": ""}), nd("node-b", {"node": "node-b", "foo": ""}),
                  nd("node-x", {"node": "node-x", "foo": ""}), nd("node-y", {"node": "node-y"})],
                 [ep("p-b1", "node-a", "foo"), ep("p-b2", "node-b", "foo"), ep("p-y1", "node-y", "foo")],
                 {"node-a": "U", "node-b": "U", "node-x": "S", "node-y": "S"},
                 id="nodeAffinityPolicy Honor with a nodeSelector leaves the unselected node out of the minimum"),
    pytest.param(incoming("foo").node_selector({"foo": ""}).spread(1, "node", selector=FOO,
                                                                   nodeAffinityPolicy="Ignore").obj(),
                 [nd("node-a", {"node": "node-a", "foo": ""}), nd("node-b", {"node": "node-b", "foo": ""}),
                  nd("node-x", {"node": "node-x", "foo": ""}), nd("node-y", {"node": "node-y"})],
                 [ep("p-b1", "node-a", "foo"), ep("p-b2", "node-b", "foo"), ep("p-y1", "node-y", "foo")],
                 {"node-a": "U", "node-b": "U", "node-x": "S", "node-y": "U"},
                 id="nodeAffinityPolicy Ignore with a nodeSelector counts the unselected node"),
    pytest.param(incoming("foo").node_affinity_in("foo", [""]).spread(1, "node", selector=FOO).obj(),
                 [nd("node-a", {"node": "node-a", "foo": ""}), nd("node-b", {"node": "node-b", "foo": ""}),
                  nd("node-x", {"node": "node-x", "foo": ""}), nd("node-y", {"node": "node-y"})],
                 [ep("p-b1", "node-a", "foo"), ep("p-b2", "node-b", "foo"), ep("p-y1", "node-y", "foo")],
                 {"node-a": "U", "node-b": "U", "node-x": "S", "node-y": "S"},
                 id="nodeAffinityPolicy Honor with node affinity leaves the unselected node out of the minimum"),
    pytest.param(incoming("foo").node_affinity_in("foo", [""]).spread(1, "node", selector=FOO,
                                                                      nodeAffinityPolicy="Ignore").obj(),
                 [nd("node-a", {"node": "node-a", "foo": ""}), nd("node-b", {"node": "node-b", "foo": ""}),
                  nd("node-x", {"node": "node-x", "foo": ""}), nd("node-y", {"node": "node-y"})],
                 [ep("p-b1", "node-a", "foo"), ep("p-b2", "node-b", "foo"), ep("p-y1", "node-y", "foo")],
                 {"node-a": "U", "node-b": "U", "node-x": "S", "node-y": "U"},
                 id="nodeAffinityPolicy Ignore with node affinity counts the unselected node"),
    pytest.param(incoming("foo").spread(1, "node", selector=FOO, nodeTaintsPolicy="Honor").obj(),
                 [nd("node-a", {"node": "node-a", "foo": ""}), nd("node-b", {"node": "node-b", "foo": ""}),
                  nd("node-x", {"node": "node-x", "foo": ""}), nd("node-y", {"node": "node-y"}, tainted=True)],
                 [ep("p-b1", "node-a", "foo"), ep("p-b2", "node-b", "foo"), ep("p-y1", "node-y", "foo")],
                 {"node-a": "U", "node-b": "U", "node-x": "S", "node-y": "S"},
                 id="nodeTaintsPolicy Honor leaves the tainted node out of the minimum"),
    pytest.param(incoming("foo").spread(1, "node", selector=FOO).obj(),
                 [nd("node-a", {"node": "node-a", "foo": ""}), nd("node-b", {"node": "node-b", "foo": ""}),
                  nd("node-x", {"node": "node-x", "foo": ""}), nd("node-y", {"node": "node-y"}, tainted=True)],
                 [ep("p-b1", "node-a", "foo"), ep("p-b2", "node-b", "foo"), ep("p-y1", "node-y", "foo")],
                 {"node-a": "U", "node-b": "U", "node-x": "S", "node-y": "U"},
                 id="nodeTaintsPolicy Ignore counts the tainted node"),
]

MULTIPLE = [
    pytest.param(ZONE_NODE_POD, ABXY,
                 [ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a", "foo"), ep("p-b1", "node-b", "foo"),
                  ep("p-y1", "node-y", "foo"), ep("p-y2", "node-y", "foo"), ep("p-y3", "node-y", "foo")],
                 {"node-a": "U", "node-b": "U", "node-x": "S", "node-y": "U"},
                 id="zone 3/3 and nodes 2/1/0/3: only node-x fits both"),
    pytest.param(ZONE_NODE_POD, ABXY,
                 [ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a", "foo"), ep("p-b1", "node-b", "foo"),
                  ep("p-y1", "node-y", "foo"), ep("p-y2", "node-y", "foo"), ep("p-y3", "node-y", "foo"),
                  ep("p-y4", "node-y", "foo")],
                 {"node-a": "U", "node-b": "U", "node-x": "U", "node-y": "U"},
                 id="zone 3/4 and nodes 2/1/0/4: no node fits both"),
    pytest.param(ZONE_FOO_NODE_BAR_POD, ABXY, [ep("p-a1", "node-a", "foo"), ep("p-y1", "node-y", "bar")],
                 {"node-a": "U", "node-b": "U", "node-x": "S", "node-y": "U"},
                 id="different selectors 1/0 and 1/0/0/1: only node-x fits"),
    pytest.param(ZONE_FOO_NODE_BAR_POD, ABXY,
                 [ep("p-a1", "node-a", "foo"), ep("p-x1", "node-x", "bar"), ep("p-y1", "node-y", "bar")],
                 {"node-a": "U", "node-b": "U", "node-x": "U", "node-y": "U"},
                 id="different selectors 1/0 and 0/0/1/1: no node fits"),
    pytest.param(ZONE_FOO_NODE_BAR_POD, ABXY,
                 [ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a", "foo", "bar"), ep("p-y1", "node-y", "foo"),
                  ep("p-y2", "node-y", "foo", "bar"), ep("p-y3", "node-y", "foo")],
                 {"node-a": "U", "node-b": "S", "node-x": "U", "node-y": "U"},
                 id="different selectors 2/3 and 1/0/0/1: only node-b fits"),
    pytest.param(incoming("bar").spread(1, "zone", selector=FOO).spread(1, "node", selector=BAR).obj(), ABXY,
                 [ep("p-a1", "node-a", "foo"), ep("p-x1", "node-x", "bar"), ep("p-y1", "node-y", "bar")],
                 {"node-a": "S", "node-b": "S", "node-x": "U", "node-y": "U"},
                 id="the pod does not match itself on the zone constraint"),
    pytest.param(ZONE_NODE_POD, [A, B, nd("node-x", {"zone": "zone2"}), Y],
                 [ep("p-a1", "node-a", "foo"), ep("p-y3", "node-y", "foo")],
                 {"node-a": "U", "node-b": "S", "node-x": "UU", "node-y": "U"},
                 id="node-x lacks the node label: unresolvable, and not a zone domain either"),
    pytest.param(incoming("foo").node_selector({"foo": ""}).spread(1, "zone", selector=FOO)
                 .spread(1, "node", selector=FOO, nodeAffinityPolicy="Ignore").obj(),
                 [zn("node-a", "zone1", foo=""), zn("node-b", "zone1", foo=""), zn("node-x", "zone2", foo=""),
                  zn("node-y", "zone2")],
                 [ep("p-a1", "node-a", "foo"), ep("p-b1", "node-b", "foo"), ep("p-y1", "node-y", "foo")],
                 {"node-a": "U", "node-b": "U", "node-x": "S", "node-y": "U"},
                 id="zone honors the nodeSelector, node ignores it"),
    pytest.param(incoming("foo").spread(1, "zone", selector=FOO, nodeTaintsPolicy="Honor")
                 .spread(1, "node", selector=FOO).obj(),
                 [zn("node-a", "zone1", foo=""), zn("node-b", "zone1", foo=""), zn("node-x", "zone2", foo=""),
                  nd("node-y", {"zone": "zone2", "node": "node-y"}, tainted=True)],
                 [ep("p-a1", "node-a", "foo"), ep("p-b1", "node-b", "foo"), ep("p-y1", "node-y", "foo")],
                 {"node-a": "U", "node-b": "U", "node-x": "S", "node-y": "U"},
                 id="zone honors taints, node ignores them"),
    pytest.param(incoming("foo").node_selector({"foo": ""}).spread(1, "zone", selector=FOO)
                 .spread(1, "node", selector=FOO).obj(),
                 [zn("node-a", "zone1", foo=""), zn("node-b", "zone1"), zn("node-x", "zone2", foo=""),
                  nd("node-y", {"zone": "zone2", "node": "node-y", "foo": ""}, tainted=True)],
                 [ep("p-a1", "node-a", "foo"), ep("p-b1", "node-b", "foo"), ep("p-y1", "node-y", "foo")],
                 {"node-a": "U", "node-b": "S", "node-x": "S", "node-y": "U"},
                 id="both honor the nodeSelector and ignore taints"),
    pytest.param(incoming("foo").node_selector({"foo": ""}).spread(1, "zone", selector=FOO, nodeTaintsPolicy="Honor")
                 .spread(1, "node", selector=FOO, nodeAffinityPolicy="Ignore").obj(),
                 [zn("node-a", "zone1", foo=""), zn("node-b", "zone1"), zn("node-x", "zone2", foo=""),
                  nd("node-y", {"zone": "zone2", "node": "node-y", "foo": ""}, tainted=True)],
                 [ep("p-a1", "node-a", "foo"), ep("p-b1", "node-b", "foo"), ep("p-y1", "node-y", "foo")],
                 {"node-a": "U", "node-b": "U", "node-x": "S", "node-y": "U"},
                 id="zone honors both policies, node ignores both"),
    # v1.30: both zone constraints read the same (zone, value) counts, the foo ones (the later
    # constraint's), 3/3 -> every node fits (upstream v1.33+ checks bar 2/1 too: only zone2 fits).
    pytest.param(incoming("foo", "bar").spread(1, "zone", selector=BAR).spread(1, "zone", selector=FOO).obj(), ABXY,
                 [ep("p-a1", "node-a", "foo", "bar"), ep("p-a2", "node-a", "foo"), ep("p-b1", "node-b", "foo", "bar"),
                  ep("p-y1", "node-y", "foo"), ep("p-y2", "node-y", "foo", "bar"), ep("p-y3", "node-y", "foo")],
                 {"node-a": "S", "node-b": "S", "node-x": "S", "node-y": "S"},
                 id="two zone constraints share the later one's counts: 3/3 lets every node fit"),
    pytest.param(incoming("foo", "bar").spread(1, "zone", selector=BAR).spread(1, "zone", selector=FOO).obj(), ABXY,
                 [ep("p-a1", "node-a", "foo", "bar"), ep("p-a2", "node-a", "foo"), ep("p-b1", "node-b", "foo", "bar"),
                  ep("p-y1", "node-y", "foo"), ep("p-y2", "node-y", "foo", "bar"), ep("p-y3", "node-y", "foo"),
                  ep("p-y4", "node-y", "foo")],
                 {"node-a": "S", "node-b": "S", "node-x": "U", "node-y": "U"},
                 id="two zone constraints share the later one's counts: 3/4 rejects the fuller zone"),
]


@pytest.mark.parametrize(("pod", "nodes", "pods", "want"), SINGLE + MULTIPLE)
def test_filter(pod: Pod, nodes: list[Node], pods: list[Pod], want: dict[str, str]) -> None:
    assert run_filter(pod, nodes, pods) == want


def test_filter_with_nominated_pods_through_add_pod() -> None:
    """RunFilterPluginsWithNominatedPods adds nominated pods to a cloned state: node-x at
    1 pod (after the add) makes zone2 the fuller zone."""
    h, pl = setup(ABXY, [ep("p-a1", "node-a", "foo")])
    pod = ZONE_POD
    st = CycleState()
    pl.pre_filter(st, pod)
    nx = h.snapshot.get("node-x")
    assert nx is not None and pl.filter(st, pod, nx) is None
    with_nominated = st.clone()
    _extension(pl, "add", with_nominated, pod, ep("n1", "node-x", "foo"), nx)
    _extension(pl, "add", with_nominated, pod, ep("n2", "node-x", "foo"), nx)
    assert code_of(pl.filter(with_nominated, pod, nx)) == "U"
    assert pl.filter(st, pod, nx) is None


# ------------------------------------------------------------------------------ Score
def sp(name: str, node: str, *keys: str, **kw: Any) -> Pod:
    return ep(name, node, *keys, **kw)


SVC_FOO = obj({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"},
               "spec": {"selector": {"foo": ""}}})
P_4321 = [sp("p-a1", "node-a", "foo"), sp("p-a2", "node-a", "foo"), sp("p-a3", "node-a", "foo"),
          sp("p-a4", "node-a", "foo"), sp("p-b1", "node-b", "foo"), sp("p-b2", "node-b", "foo"),
          sp("p-b3", "node-b", "foo"), sp("p-c1", "node-c", "foo"), sp("p-c2", "node-c", "foo"),
          sp("p-d1", "node-d", "foo")]
P_2103 = [sp("p-a1", "node-a", "foo"), sp("p-a2", "node-a", "foo"), sp("p-b1", "node-b", "foo"),
          sp("p-d1", "node-d", "foo"), sp("p-d2", "node-d", "foo"), sp("p-d3", "node-d", "foo")]
P_421_3 = [sp("p-a1", "node-a", "foo"), sp("p-a2", "node-a", "foo"), sp("p-a3", "node-a", "foo"),
           sp("p-a4", "node-a", "foo"), sp("p-b1", "node-b", "foo"), sp("p-b2", "node-b", "foo"),
           sp("p-x1", "node-x", "foo"), sp("p-y1", "node-y", "foo"), sp("p-y2", "node-y", "foo"),
           sp("p-y3", "node-y", "foo")]
HABCD = [hn("node-a"), hn("node-b"), hn("node-c"), hn("node-d")]
ZH = [hn("node-a", zone="zone1"), hn("node-b", zone="zone1"), hn("node-x", zone="zone2"), hn("node-y", zone="zone2")]
NODE_ABC = [nd("node-a", {"node": "node-a", "foo": ""}), nd("node-b", {"node": "node-b", "foo": ""}),
            nd("node-c", {"node": "node-c"})]
P_AABC = [sp("p-a1", "node-a", "foo"), sp("p-a2", "node-a", "foo"), sp("p-b1", "node-b", "foo"),
          sp("p-c1", "node-c", "foo")]
ZH4 = [hn("node-a", zone="zone1"), hn("node-b", zone="zone1"), hn("node-c", zone="zone2"), hn("node-d", zone="zone2")]

SCORE_CASES = [
    pytest.param(incoming("foo").spread(1, HOSTNAME, "ScheduleAnyway", FOO).obj(), [], HABCD[:2], [], [],
                 {"node-a": 100, "node-b": 100}, id="one constraint on node, no existing pods"),
    pytest.param(incoming("foo").spread(1, HOSTNAME, "ScheduleAnyway", FOO).obj(),
                 [sp("p-a1", "node-a", "foo"), sp("p-a2", "node-a", "foo"), sp("p-b1", "node-b", "foo")],
                 [hn("node-a")], [hn("node-b")], [], {"node-a": 100}, id="a single candidate scores 100"),
    pytest.param(incoming("foo").spread(1, HOSTNAME, "ScheduleAnyway", FOO).obj(),
                 [sp("p-a1", "node-a", "foo"), sp("p-b1", "node-b", "foo")], HABCD[:2], [], [],
                 {"node-a": 100, "node-b": 100}, id="equally loaded nodes score the same"),
    pytest.param(incoming("foo").spread(1, HOSTNAME, "ScheduleAnyway", FOO).obj(), P_2103, HABCD, [], [],
                 {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0}, id="nodes 2/1/0/3 with maxSkew 1"),
    pytest.param(incoming("foo").spread(1, HOSTNAME, "ScheduleAnyway").obj(), P_2103, HABCD, [], [],
                 {"node-a": 100, "node-b": 100, "node-c": 100, "node-d": 100}, id="a null selector scores every node 100"),
    pytest.param(incoming("foo").spread(2, HOSTNAME, "ScheduleAnyway", FOO).obj(), P_2103, HABCD, [], [],
                 {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16}, id="nodes 2/1/0/3 with maxSkew 2"),
    pytest.param(incoming("foo").spread(3, HOSTNAME, "ScheduleAnyway", FOO).obj(), P_4321, HABCD, [], [],
                 {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100}, id="nodes 4/3/2/1 with maxSkew 3"),
    pytest.param(incoming("foo").obj(), P_4321, HABCD, [], [SVC_FOO],
                 {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
                 id="system defaulting on zoneless nodes scores like one hostname constraint"),
    pytest.param(incoming("foo").spread(1, HOSTNAME, "ScheduleAnyway", FOO).obj(), P_421_3,
                 [hn("node-a"), hn("node-b"), hn("node-x")], [hn("node-y")], [],
                 {"node-a": 33, "node-b": 83, "node-x": 100}, id="nodes 4/2/1 among candidates, 3 on a failed node"),
    pytest.param(incoming("foo").spread(1, HOSTNAME, "ScheduleAnyway", FOO).obj(), P_421_3,
                 [hn("node-a"), nd("node-b", {"n": "node-b"}), hn("node-x")], [hn("node-y")], [],
                 {"node-a": 16, "node-b": 0, "node-x": 100}, id="a candidate without the key is ignored and scores 0"),
    pytest.param(incoming("foo").spread(1, "zone", "ScheduleAnyway", FOO).obj(), P_421_3,
                 ZH[:3], ZH[3:], [], {"node-a": 75, "node-b": 75, "node-x": 100},
                 id="one zone constraint counts pods on failed nodes too"),
    pytest.param(incoming("foo").spread(1, "zone", "ScheduleAnyway", FOO).spread(1, HOSTNAME, "ScheduleAnyway", FOO)
                 .obj(),
                 [sp("p-a1", "node-a", "foo"), sp("p-a2", "node-a", "foo"), sp("p-b1", "node-b", "foo"),
                  sp("p-x1", "node-x", "foo"), sp("p-x2", "node-x", "foo"), sp("p-y1", "node-y", "foo"),
                  sp("p-y2", "node-y", "foo"), sp("p-y3", "node-y", "foo"), sp("p-y4", "node-y", "foo")],
                 [ZH[0], ZH[2]], [ZH[1], ZH[3]], [], {"node-a": 100, "node-x": 63},
                 id="zone and node constraints with 2 of 4 candidates"),
    # v1.30: the two zone constraints share the (zone, value) counters (foo + bar pods: 5 and 4)
    # and only the first creates the pairs (weights ln 4 and ln 2); upstream v1.33+ gives 85/100.
    pytest.param(incoming("foo", "bar").spread(1, "zone", "ScheduleAnyway", FOO)
                 .spread(1, "zone", "ScheduleAnyway", BAR).obj(),
                 [sp("p-a1", "node-a", "foo", "bar"), sp("p-a2", "node-a", "foo"), sp("p-b1", "node-b", "foo", "bar"),
                  sp("p-y1", "node-y", "foo"), sp("p-y2", "node-y", "foo", "bar"), sp("p-y3", "node-y", "foo")],
                 [nd("node-a", {"zone": "zone1"}), nd("node-x", {"zone": "zone2"})],
                 [nd("node-b", {"zone": "zone1"}), nd("node-y", {"zone": "zone2"})], [],
                 {"node-a": 80, "node-x": 100}, id="two constraints on the same zone key share counters"),
    pytest.param(incoming("foo", "bar").spread(1, "zone", "ScheduleAnyway", FOO)
                 .spread(1, HOSTNAME, "ScheduleAnyway", BAR).obj(),
                 [sp("p-a1", "node-a", "foo"), sp("p-b1", "node-b", "foo", "bar"), sp("p-y1", "node-y", "foo"),
                  sp("p-y2", "node-y", "bar")], ZH, [], [],
                 {"node-a": 60, "node-b": 20, "node-x": 100, "node-y": 60},
                 id="zone and node constraints with different selectors"),
    pytest.param(incoming("foo", "bar").spread(1, "zone", "ScheduleAnyway", FOO)
                 .spread(1, HOSTNAME, "ScheduleAnyway", BAR).obj(),
                 [sp("p-b1", "node-b", "bar"), sp("p-x1", "node-x", "foo"), sp("p-y1", "node-y", "foo", "bar")],
                 ZH, [], [], {"node-a": 100, "node-b": 60, "node-x": 40, "node-y": 0},
                 id="different selectors with some empty nodes"),
    pytest.param(incoming("foo", "bar").spread(1, "zone", "ScheduleAnyway", FOO)
                 .spread(1, HOSTNAME, "ScheduleAnyway", BAR).obj(),
                 [sp("p-a1", "node-a", "foo"), sp("p-b1", "node-b", "foo", "bar"), sp("p-y1", "node-y", "foo"),
                  sp("p-y2", "node-y", "bar")], ZH[:3], ZH[3:], [],
                 {"node-a": 50, "node-b": 25, "node-x": 100}, id="different selectors with 3 of 4 candidates"),
    pytest.param(incoming("foo").spread(1, HOSTNAME, "ScheduleAnyway", FOO).obj(),
                 [sp("p-a1", "node-a", "foo", ns="ns1"), sp("p-a2", "node-a", "foo"), sp("p-b1", "node-b", "foo"),
                  sp("p-b2", "node-b", "foo")], HABCD[:2], [], [], {"node-a": 100, "node-b": 33},
                 id="pods of other namespaces do not count for scoring"),
    pytest.param(incoming("foo").spread(1, HOSTNAME, "ScheduleAnyway", FOO).obj(),
                 [sp("p-a", "node-a", "foo", terminating=True), sp("p-b", "node-b", "foo")], HABCD[:2], [], [],
                 {"node-a": 100, "node-b": 0}, id="terminating pods do not count for scoring"),
    pytest.param(incoming("foo").spread(2, "node", "ScheduleAnyway", FOO, minDomains=10).obj(),
                 [sp("p-a1", "node-a", "foo"), sp("p-a2", "node-a", "foo"), sp("p-b1", "node-b", "foo"),
                  sp("p-b2", "node-b", "foo"), sp("p-c1", "node-c", "foo")],
                 [nd(n, {"node": n}) for n in ("node-a", "node-b", "node-c")], [], [],
                 {"node-a": 75, "node-b": 75, "node-c": 100}, id="minDomains has no effect on scoring"),
    pytest.param(incoming("foo").node_selector({"foo": ""}).spread(1, "node", "ScheduleAnyway", FOO).obj(), P_AABC,
                 NODE_ABC, [], [], {"node-a": 0, "node-b": 33, "node-c": 100},
                 id="nodeAffinityPolicy Honor does not count the unselected node's domain"),
    pytest.param(incoming("foo").node_selector({"foo": ""}).spread(1, "node", "ScheduleAnyway", FOO,
                                                                   nodeAffinityPolicy="Ignore").obj(), P_AABC,
                 NODE_ABC, [], [], {"node-a": 66, "node-b": 100, "node-c": 100},
                 id="nodeAffinityPolicy Ignore counts the unselected node's domain"),
    pytest.param(incoming("foo").node_affinity_in("foo", [""]).spread(1, "node", "ScheduleAnyway", FOO).obj(), P_AABC,
                 NODE_ABC, [], [], {"node-a": 0, "node-b": 33, "node-c": 100},
                 id="nodeAffinityPolicy Honor with node affinity"),
    pytest.param(incoming("foo").node_affinity_in("foo", [""]).spread(1, "node", "ScheduleAnyway", FOO,
                                                                      nodeAffinityPolicy="Ignore").obj(), P_AABC,
                 NODE_ABC, [], [], {"node-a": 66, "node-b": 100, "node-c": 100},
                 id="nodeAffinityPolicy Ignore with node affinity"),
    pytest.param(incoming("foo").spread(1, "node", "ScheduleAnyway", FOO, nodeTaintsPolicy="Honor").obj(), P_AABC,
                 [nd("node-a", {"node": "node-a"}), nd("node-b", {"node": "node-b"}),
                  nd("node-c", {"node": "node-c"}, tainted=True)], [], [], {"node-a": 0, "node-b": 33, "node-c": 100},
                 id="nodeTaintsPolicy Honor does not count the tainted node's domain"),
    pytest.param(incoming("foo").spread(1, "node", "ScheduleAnyway", FOO).obj(), P_AABC,
                 [nd("node-a", {"node": "node-a"}), nd("node-b", {"node": "node-b"}),
                  nd("node-c", {"node": "node-c"}, tainted=True)], [], [], {"node-a": 66, "node-b": 100, "node-c": 100},
                 id="nodeTaintsPolicy Ignore counts the tainted node's domain"),
    pytest.param(incoming("foo", "bar").spread(1, "zone", "ScheduleAnyway", {}, matchLabelKeys=["foo"])
                 .spread(1, HOSTNAME, "ScheduleAnyway", {}, matchLabelKeys=["bar"]).obj(),
                 [sp("p-a1", "node-a", "foo"), sp("p-b1", "node-b", "foo", "bar"), sp("p-y1", "node-c", "foo"),
                  sp("p-y2", "node-c", "bar")], ZH4, [], [],
                 {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
                 id="matchLabelKeys make empty selectors selective"),
    pytest.param(incoming("foo", "bar", "baz").spread(1, "zone", "ScheduleAnyway", FOO)
                 .spread(1, HOSTNAME, "ScheduleAnyway", BAR, matchLabelKeys=["baz"]).obj(),
                 [sp("p-a1", "node-a", "foo"), sp("p-b1", "node-b", "foo", "bar", "baz"), sp("p-c1", "node-c", "foo"),
                  sp("p-c2", "node-c", "bar"), sp("p-d3", "node-c", "bar", "baz")], ZH4, [], [],
                 {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
                 id="matchLabelKeys are ANDed with a non-empty selector"),
]


def run_score(pod: Pod, pods: list[Pod], nodes: list[Node], failed: list[Node], services: list[Any],
              args: PodTopologySpreadArgs | None = None) -> dict[str, int]:
    """PreScore over ``nodes`` (``failed`` are in the snapshot only), per-node Score and
    NormalizeScore, checking score_batch / normalize_score_batch give the same."""
    h, pl = setup(nodes + failed, pods, args, MemoryObjects(services=services))
    st = CycleState()
    infos = [h.snapshot.get(n.name) for n in nodes]
    assert all(ni is not None for ni in infos)
    fns: list[NodeInfo] = [ni for ni in infos if ni is not None]
    assert pl.pre_score(st, pod, fns) is None
    lst = [NodeScore(ni.name, pl.score(st, pod, ni)) for ni in fns]
    rows = np.array([ni.index for ni in fns], np.int64)
    raw = pl.score_batch(st, pod, h.snapshot.table, rows)
    assert raw.tolist() == [ns.score for ns in lst]
    assert pl.normalize_score(st, pod, lst) is None
    assert pl.normalize_score_batch(st, pod, raw).tolist() == [ns.score for ns in lst]
    return {ns.name: ns.score for ns in lst}


@pytest.mark.parametrize(("pod", "pods", "nodes", "failed", "services", "want"), SCORE_CASES)
def test_score(pod: Pod, pods: list[Pod], nodes: list[Node], failed: list[Node], services: list[Any],
               want: dict[str, int]) -> None:
    assert run_score(pod, pods, nodes, failed, services) == want


def test_score_weights_follow_the_v130_pair_counters() -> None:
    """The same-key case by hand: counters zone1 = 3 foo + 2 bar, zone2 = 3 foo + 1 bar;
    weights ln(2 + 2) (first constraint created both pairs) and ln(0 + 2)."""
    pod = incoming("foo", "bar").spread(1, "zone", "ScheduleAnyway", FOO).spread(1, "zone", "ScheduleAnyway", BAR).obj()
    pods = [sp("p-a1", "node-a", "foo", "bar"), sp("p-a2", "node-a", "foo"), sp("p-b1", "node-b", "foo", "bar"),
            sp("p-y1", "node-y", "foo"), sp("p-y2", "node-y", "foo", "bar"), sp("p-y3", "node-y", "foo")]
    nodes = [nd("node-a", {"zone": "zone1"}), nd("node-x", {"zone": "zone2"})]
    h, pl = setup(nodes + [nd("node-b", {"zone": "zone1"}), nd("node-y", {"zone": "zone2"})], pods, None)
    st = CycleState()
    fns = [h.snapshot.get("node-a"), h.snapshot.get("node-x")]
    assert pl.pre_score(st, pod, [ni for ni in fns if ni is not None]) is None
    s = st.read(PRE_SCORE_KEY)
    assert s.weights == (math.log(4), math.log(2))
    assert s.pairs["zone"].as_dict() == {"zone1": 5, "zone2": 4}
    assert [pl.score(st, pod, ni) for ni in fns if ni is not None] == [go_round(5 * math.log(4) + 5 * math.log(2)),
                                                                        go_round(4 * math.log(4) + 4 * math.log(2))]


@pytest.mark.parametrize(("x", "want"), [
    pytest.param(0.0, 0, id="zero rounds to zero"),
    pytest.param(2.5, 3, id="a half rounds away from zero"),
    pytest.param(3.4999999999999996, 3, id="just below a half rounds down"),
    pytest.param(0.49999999999999994, 0, id="the largest double below 0.5 rounds down"),
    pytest.param(7.5000000000000009, 8, id="just above a half rounds up"),
])
def test_round_half_away(x: float, want: int) -> None:
    assert go_round(x) == want
    fl = np.floor(np.array([x]))
    assert int(np.where(np.array([x]) - fl >= 0.5, fl + 1, fl)[0]) == want


# ------------------------------------------------------------------------------ PreScore state & defaulting
RS1_FOO = obj({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs1", "namespace": "default"},
               "spec": {"selector": FOO}})


def rs_pod(owner: str = "rs1", **labels: str) -> Pod:
    return make_pod().name("p").labels(labels).owner("ReplicaSet", owner).obj()


PRE_SCORE_STATE_CASES = [
    pytest.param(incoming("foo").spread(1, "zone", "ScheduleAnyway", FOO).spread(1, HOSTNAME, "ScheduleAnyway", FOO)
                 .obj(), [hn("node-a", zone="zone1"), hn("node-b", zone="zone1"), hn("node-x", zone="zone2")], LIST,
                 [], frozenset(), {"zone": {"zone1": 0, "zone2": 0}}, (math.log(4), math.log(5)),
                 id="pairs per zone and the hostname size from the candidates"),
    pytest.param(incoming("foo").spread(1, "zone", "ScheduleAnyway").obj(),
                 [hn("node-a", zone="zone1"), hn("node-b", zone="zone1"), hn("node-x", zone="zone2")], LIST,
                 [], frozenset(), {"zone": {"zone1": 0, "zone2": 0}}, (math.log(4),), id="a null selector"),
    pytest.param(incoming("foo").spread(1, "zone", "ScheduleAnyway", FOO).spread(1, HOSTNAME, "ScheduleAnyway", BAR)
                 .obj(), [hn("node-a", zone="zone1"), hn("node-b", zone="zone1"), hn("node-x")], LIST,
                 [], frozenset({"node-x"}), {"zone": {"zone1": 0}}, (math.log(3), math.log(4)),
                 id="a candidate missing a key is ignored"),
    pytest.param(rs_pod(foo="tar", baz="sup"),
                 [hn("node-a", **{ZONE: "mars"}), hn("node-b", **{ZONE: "mars"}), hn("node-c"), hn("node-d")], None,
                 [RS1_FOO], frozenset(), {ZONE: {"mars": 0, "": 0}}, (math.log(6), math.log(4)),
                 id="System defaults: nodes without a zone form the empty-value zone"),
    pytest.param(rs_pod(foo="tar", baz="sup"), [hn("node-a", rack="rack1", planet="mars")],
                 PodTopologySpreadArgs(default_constraints=(tsc(1, HOSTNAME, SCHEDULE_ANYWAY),
                                                            tsc(2, "rack", DO_NOT_SCHEDULE),
                                                            tsc(2, "planet", SCHEDULE_ANYWAY)),
                                       defaulting_type=LIST_DEFAULTING),
                 [RS1_FOO], frozenset(), {"planet": {"mars": 0}}, (math.log(3), math.log(3)),
                 id="List defaults keep only the ScheduleAnyway ones"),
    pytest.param(make_pod().name("p").label("foo", "bar").label("baz", "sup").owner("ReplicaSet", "rs1")
                 .spread(1, "zone", selector=BAR).spread(2, "planet", "ScheduleAnyway", {"matchLabels": {"baz": "sup"}})
                 .obj(), [nd("node-a", {"planet": "mars", "galaxy": "andromeda"})],
                 PodTopologySpreadArgs(default_constraints=(tsc(2, "galaxy", SCHEDULE_ANYWAY),),
                                       defaulting_type=LIST_DEFAULTING),
                 [RS1_FOO], frozenset(), {"planet": {"mars": 0}}, (math.log(3),),
                 id="the pod's own constraints win over defaults"),
    pytest.param(incoming("foo").node_selector({"foo": ""}).spread(1, "zone", "ScheduleAnyway", BAR).obj(),
                 [hn("node-a", zone="zone1", foo=""), hn("node-b", zone="zone1", foo=""), hn("node-x", zone="zone2")],
                 LIST, [], frozenset(), {"zone": {"zone1": 0, "zone2": 0}}, (math.log(4),),
                 id="pairs come from the candidates whatever the inclusion policies"),
]


@pytest.mark.parametrize(("pod", "nodes", "args", "workloads", "ignored", "pairs", "weights"), PRE_SCORE_STATE_CASES)
def test_pre_score_state(pod: Pod, nodes: list[Node], args: PodTopologySpreadArgs | None, workloads: list[Any],
                         ignored: frozenset[str], pairs: dict[str, dict[str, int]], weights: tuple[float, ...]) -> None:
    h, pl = setup(nodes, [], args, MemoryObjects(workloads=workloads))
    st = CycleState()
    infos = list(h.snapshot.list())
    assert pl.pre_score(st, pod, infos) is None
    s = st.read(PRE_SCORE_KEY)
    assert s.ignored == ignored
    assert {k: pc.as_dict() for k, pc in s.pairs.items()} == pairs
    assert s.weights == weights
    plain = scoring.compute_state_plain(pod, s.constraints, infos, bool(pod.topology_spread_constraints)
                                        or args is not None and args.defaulting_type == LIST_DEFAULTING, infos)
    assert (plain.ignored, {k: pc.as_dict() for k, pc in plain.pairs.items()}, plain.weights) == (ignored, pairs, weights)


@pytest.mark.parametrize(("pod", "nodes", "args", "workloads"), [
    pytest.param(make_pod().name("p").obj(), [hn("node-a"), hn("node-b")], LIST, [],
                 id="a pod without ScheduleAnyway constraints skips"),
    pytest.param(rs_pod("rs2", foo="bar", baz="sup"), [nd("node-a", {"planet": "mars"})],
                 PodTopologySpreadArgs(default_constraints=(tsc(2, "planet", SCHEDULE_ANYWAY),),
                                       defaulting_type=LIST_DEFAULTING), [RS1_FOO],
                 id="default constraints for a pod whose replicaset does not exist skip"),
    pytest.param(incoming("foo").spread(1, HOSTNAME, "ScheduleAnyway", FOO).obj(), [], LIST, [],
                 id="an empty snapshot skips"),
])
def test_pre_score_skips(pod: Pod, nodes: list[Node], args: PodTopologySpreadArgs, workloads: list[Any]) -> None:
    h, pl = setup(nodes, [], args, MemoryObjects(workloads=workloads))
    st = CycleState()
    s = pl.pre_score(st, pod, list(h.snapshot.list()))
    assert s is not None and s.is_skip()


def svc(name: str, selector: dict[str, str] | None, ns: str = "default") -> Any:
    spec: dict[str, Any] = {} if selector is None else {"selector": selector}
    return obj({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns}, "spec": spec})


def workload(kind: str, name: str, selector: dict[str, Any] | None, api: str = "apps/v1") -> Any:
    spec: dict[str, Any] = {} if selector is None else {"selector": selector}
    return obj({"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "default"}, "spec": spec})


def labels_sel(**kv: str) -> Selector:
    return Selector(tuple(sorted(kv.items())))


IN = "In"
DEFAULT_SELECTOR_CASES = [
    pytest.param(make_pod().name("p").label("app", "web").label("x", "1").obj(),
                 [svc("web", {"app": "web"}), svc("other", {"app": "db"})], [], labels_sel(app="web"),
                 id="a service selecting the pod gives its selector"),
    pytest.param(make_pod().name("p").label("app", "web").label("tier", "fe").obj(),
                 [svc("a", {"app": "web"}), svc("b", {"tier": "fe"})], [], labels_sel(app="web", tier="fe"),
                 id="the selectors of every selecting service are merged"),
    pytest.param(make_pod().name("p").label("app", "web").obj(), [svc("a", {"app": "web"}, ns="other")], [],
                 Selector(), id="services of other namespaces are ignored"),
    pytest.param(make_pod().name("p").label("app", "web").obj(), [svc("a", None)], [], Selector(),
                 id="a service without selector contributes nothing"),
    pytest.param(make_pod().name("p").label("app", "web").owner("ReplicaSet", "rs").obj(), [],
                 [workload("ReplicaSet", "rs", {"matchLabels": {"app": "web"},
                                                "matchExpressions": [{"key": "v", "operator": "Exists"}]})],
                 Selector((), (Requirement("app", IN, ("web",)), Requirement("v", "Exists"))),
                 id="the controlling replicaset's selector requirements are added"),
    pytest.param(make_pod().name("p").label("app", "web").owner("StatefulSet", "ss").obj(), [svc("s", {"app": "web"})],
                 [workload("StatefulSet", "ss", {"matchLabels": {"id": "1"}})],
                 Selector((("app", "web"),), (Requirement("id", IN, ("1",)),)),
                 id="a statefulset's selector is ANDed with the services'"),
    pytest.param(make_pod().name("p").label("app", "web").owner("ReplicationController", "rc", api_version="v1").obj(),
                 [svc("s", {"app": "web"})], [workload("ReplicationController", "rc", {"rc": "x"}, api="v1")],
                 labels_sel(app="web", rc="x"), id="a replication controller's map selector is merged"),
    pytest.param(make_pod().name("p").label("app", "web").owner("ReplicationController", "rc", api_version="/v1")
                 .obj(), [], [workload("ReplicationController", "rc", {"rc": "x"}, api="v1")], labels_sel(rc="x"),
                 id="an owner apiVersion of /v1 parses as the core group (schema.ParseGroupVersion)"),
    pytest.param(make_pod().name("p").label("app", "web").owner("ReplicaSet", "rs", controller=False).obj(), [],
                 [workload("ReplicaSet", "rs", {"matchLabels": {"app": "web"}})], Selector(),
                 id="a non-controller owner is ignored"),
    pytest.param(make_pod().name("p").label("app", "web").owner("ReplicaSet", "rs", api_version="extensions/v1beta1")
                 .obj(), [], [workload("ReplicaSet", "rs", {"matchLabels": {"app": "web"}})], Selector(),
                 id="an owner of another API version is ignored"),
    pytest.param(make_pod().name("p").label("app", "web").owner("ReplicaSet", "rs").obj(), [],
                 [workload("StatefulSet", "rs", {"matchLabels": {"app": "web"}})], Selector(),
                 id="an owner of another kind with the same name is ignored"),
]


@pytest.mark.parametrize(("pod", "services", "workloads", "want"), DEFAULT_SELECTOR_CASES)
def test_default_selector(pod: Pod, services: list[Any], workloads: list[Any], want: Selector) -> None:
    assert default_selector(pod, MemoryObjects(services=services, workloads=workloads)) == want


def test_system_default_constraints_use_the_default_selector() -> None:
    h, pl = setup([hn("node-a", **{ZONE: "z1"}), hn("node-b", **{ZONE: "z2"})],
                  [ep("e1", "node-a", app="web"), ep("e2", "node-a", app="web"), ep("e3", "node-b", app="db")], None,
                  MemoryObjects(services=[svc("web", {"app": "web"})]))
    pod = make_pod().name("p").label("app", "web").obj()
    cs = pl.constraints(pod, SCHEDULE_ANYWAY)
    assert [(c.topology_key, c.max_skew, c.selector) for c in cs] == [(HOSTNAME, 3, labels_sel(app="web")),
                                                                     (ZONE, 5, labels_sel(app="web"))]
    # node-a: 2·ln 4 + 2 (hostname) + 2·ln 4 + 4 (zone) = 11.55 -> 12; node-b: 2 + 4 = 6.
    # Normalized: 100·(12 + 6 − 12)/12 = 50 and 100·(12 + 6 − 6)/12 = 100.
    assert run_score(pod, [ep("e1", "node-a", app="web"), ep("e2", "node-a", app="web"), ep("e3", "node-b", app="db")],
                     [hn("node-a", **{ZONE: "z1"}), hn("node-b", **{ZONE: "z2"})], [],
                     [svc("web", {"app": "web"})]) == {"node-a": 50, "node-b": 100}
    assert h is not None


# ------------------------------------------------------------------------------ args, events
def test_events_to_register() -> None:
    _, pl = setup([A], [])
    events = [(e.event.resource, e.event.action_type) for e in pl.events_to_register()]
    assert events == [(GVK.POD, ActionType.ALL), (GVK.NODE, ActionType.ADD | ActionType.DELETE
                                                  | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT)]
    assert pl.name == NAME == "PodTopologySpread"


@pytest.mark.parametrize("args", [
    pytest.param(PodTopologySpreadArgs(defaulting_type="Other"), id="an unknown defaulting type"),
    pytest.param(PodTopologySpreadArgs(default_constraints=(tsc(1, "zone", DO_NOT_SCHEDULE),)),
                 id="default constraints with System defaulting"),
    pytest.param(PodTopologySpreadArgs(default_constraints=(tsc(1, "zone", DO_NOT_SCHEDULE),
                                                            tsc(2, "zone", DO_NOT_SCHEDULE)),
                                       defaulting_type=LIST_DEFAULTING), id="duplicate key and action"),
    pytest.param(PodTopologySpreadArgs(default_constraints=(dataclasses.replace(
        tsc(1, "zone", DO_NOT_SCHEDULE), label_selector=LabelSelector()),), defaulting_type=LIST_DEFAULTING),
        id="a default constraint with a selector"),
])
def test_invalid_args_are_rejected(args: PodTopologySpreadArgs) -> None:
    h = FrameworkHandle.for_nodes([A], [])
    with pytest.raises(ConfigError):
        new(args, h)


# ------------------------------------------------------------------------------ batch == per node (random)
def random_cluster(rng: random.Random) -> tuple[list[Node], list[Pod], MemoryObjects]:
    nodes = []
    for i in range(rng.randint(1, 24)):
        labels: dict[str, str] = {}
        if rng.random() < 0.9:
            labels[HOSTNAME] = f"n{i}"
        if rng.random() < 0.85:
            labels[ZONE] = rng.choice(["z1", "z2", "z3", ""])
        if rng.random() < 0.6:
            labels["rack"] = rng.choice(["r1", "r2"])
        if rng.random() < 0.5:
            labels["foo"] = "1"
        nodes.append(nd(f"n{i}", labels, tainted=rng.random() < 0.2))
    pods = []
    for j in range(rng.randint(0, 60)):
        labels = {}
        if rng.random() < 0.7:
            labels["app"] = rng.choice(["a", "b"])
        if rng.random() < 0.5:
            labels["tier"] = rng.choice(["x", "y"])
        pods.append(ep(f"e{j}", rng.choice(nodes).name, ns=rng.choice(["default", "default", "other"]),
                       terminating=rng.random() < 0.1, **labels))
    objects = MemoryObjects(services=[svc("sa", {"app": "a"})],
                            workloads=[workload("ReplicaSet", "rs", {"matchLabels": {"tier": "x"}})])
    return nodes, pods, objects


SELECTORS: list[dict[str, Any] | None] = [None, {}, {"matchLabels": {"app": "a"}},
                                          {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
                                          {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]}]


def random_pod(rng: random.Random) -> Pod:
    b = make_pod().name("incoming")
    if rng.random() < 0.8:
        b.label("app", rng.choice(["a", "b"]))
    if rng.random() < 0.5:
        b.label("tier", rng.choice(["x", "y"]))
    if rng.random() < 0.3:
        b.owner("ReplicaSet", "rs")
    if rng.random() < 0.2:
        b.node_selector({"foo": "1"})
    if rng.random() < 0.15:
        b.node_affinity_in("rack", ["r1"])
    if rng.random() < 0.3:
        b.toleration(key="node.kubernetes.io/unschedulable", operator="Exists")
    if rng.random() < 0.85:
        for _ in range(rng.randint(1, 3)):
            extra: dict[str, Any] = {}
            if rng.random() < 0.3:
                extra["minDomains"] = rng.randint(1, 4)
            if rng.random() < 0.3:
                extra["nodeAffinityPolicy"] = rng.choice(["Honor", "Ignore"])
            if rng.random() < 0.3:
                extra["nodeTaintsPolicy"] = rng.choice(["Honor", "Ignore"])
            if rng.random() < 0.3:
                extra["matchLabelKeys"] = rng.sample(["app", "tier", "missing"], rng.randint(1, 2))
            b.spread(rng.randint(1, 3), rng.choice([HOSTNAME, ZONE, "rack"]),
                     rng.choice(["DoNotSchedule", "ScheduleAnyway"]), rng.choice(SELECTORS), **extra)
    return b.obj()


def pair_maps(s: scoring.PreScoreState) -> dict[str, dict[str, int]]:
    """The created pairs per key (keys without any pair left out)."""
    return {k: d for k, p in s.pairs.items() if (d := p.as_dict())}


def check_equivalence(rng: random.Random, h: FrameworkHandle, pl: PodTopologySpread, pod: Pod) -> None:
    infos = list(h.snapshot.list())
    table = h.snapshot.table
    rows = np.array([ni.index for ni in infos], np.int64)
    # PreFilter / Filter.
    st = CycleState()
    _, pf = pl.pre_filter(st, pod)
    if pf is None:
        s = st.read(PRE_FILTER_KEY)
        plain = filtering.compute_state_plain(pod, s.constraints, infos, per_constraint=pl._per_constraint)
        assert state_view(s) == state_view(plain)
        assert {k: kc.domains for k, kc in s.keys.items()} == {k: kc.domains for k, kc in plain.keys.items()}
        plain_st = CycleState()
        plain_st.write(PRE_FILTER_KEY, plain)
        for step in range(3):
            per_node = [pl.filter(st, pod, ni) for ni in infos]
            assert per_node == [pl.filter(plain_st, pod, ni) for ni in infos]
            assert pl.filter_batch(st, pod, table, rows).tolist() == [x is None for x in per_node]
            codes, statuses = pl.filter_batch_status(st, pod, table, rows)
            assert [statuses[c] for c in codes.tolist()] == per_node
            # Any subset of the rows, in any order (the scheduler asks for the rejected ones).
            picked = rng.sample(range(len(infos)), rng.randint(0, len(infos)))
            codes, statuses = pl.filter_batch_status(st, pod, table, rows[picked])
            assert [statuses[c] for c in codes.tolist()] == [per_node[i] for i in picked]
            if step == 2 or not infos:
                break
            # A preemption-like sequence of RemovePod/AddPod on clones of both states.
            st, plain_st = st.clone(), plain_st.clone()
            for _ in range(rng.randint(1, 4)):
                ni = rng.choice(infos)
                other = ep(f"x{rng.randint(0, 9)}", ni.name, ns=rng.choice(["default", "other"]),
                           **({"app": rng.choice(["a", "b"])} if rng.random() < 0.8 else {}))
                op = rng.choice(["add", "remove"])
                _extension(pl, op, st, pod, other, ni)
                _extension(pl, op, plain_st, pod, other, ni)
            assert state_view(st.read(PRE_FILTER_KEY)) == state_view(plain_st.read(PRE_FILTER_KEY))
    else:
        assert pf.is_skip()
    # PreScore / Score / NormalizeScore over a random subset of candidates.
    cands = [ni for ni in infos if rng.random() < 0.7]
    ss = CycleState()
    ps = pl.pre_score(ss, pod, cands)
    if ps is not None:
        assert ps.is_skip()
        return
    s2 = ss.read(PRE_SCORE_KEY)
    require_all = bool(pod.topology_spread_constraints) or not pl.system_defaulted
    plain2 = scoring.compute_state_plain(pod, s2.constraints, cands, require_all, infos,
                                         per_constraint=pl._per_constraint)
    assert s2.ignored == plain2.ignored and s2.weights == plain2.weights
    assert pair_maps(s2) == pair_maps(plain2)
    plain_ss = CycleState()
    plain_ss.write(PRE_SCORE_KEY, plain2)
    lst = [NodeScore(ni.name, pl.score(ss, pod, ni)) for ni in cands]
    assert [ns.score for ns in lst] == [pl.score(plain_ss, pod, ni) for ni in cands]
    crow = np.array([ni.index for ni in cands], np.int64)
    raw = pl.score_batch(ss, pod, table, crow)
    assert raw.tolist() == [ns.score for ns in lst]
    pl.normalize_score(ss, pod, lst)
    assert pl.normalize_score_batch(ss, pod, raw).tolist() == [ns.score for ns in lst]
    assert all(0 <= ns.score <= 100 for ns in lst)


@pytest.mark.parametrize("seed", [pytest.param(s, id=f"random cluster {s} agrees batch and per node")
                                  for s in range(120)])
@pytest.mark.parametrize("features", [FEATURES_1_30, FEATURES_1_36], ids=["v1.30", "1.36"])
def test_batch_equals_per_node_on_random_clusters(seed: int, features: Features) -> None:
    rng = random.Random(seed)
    nodes, pods, objects = random_cluster(rng)
    args = rng.choice([None, LIST, PodTopologySpreadArgs(default_constraints=(tsc(1, "rack", DO_NOT_SCHEDULE),
                                                                              tsc(2, ZONE, SCHEDULE_ANYWAY)),
                                                         defaulting_type=LIST_DEFAULTING)])
    h, pl = setup(nodes, pods, args, objects, features)
    for _ in range(3):
        check_equivalence(rng, h, pl, random_pod(rng))


@pytest.mark.parametrize("short_log", [False, True], ids=["", "change log trimmed often"])
@pytest.mark.parametrize("seed", [pytest.param(s, id=f"cached counts follow cluster changes {s}") for s in range(25)])
def test_cached_counts_follow_cluster_changes(seed: int, short_log: bool, monkeypatch: Any) -> None:
    """The per-row count cache and the per-value sums survive across cycles: pods bound and
    removed, nodes added, relabelled and removed between cycles must still give the
    node-by-node answer — also when the table's change log is trimmed so often that the
    caches must rebuild from scratch."""
    if short_log:
        monkeypatch.setattr(NodeTable, "_log_limit", lambda self: 1)
    rng = random.Random(1000 + seed)
    nodes, pods, objects = random_cluster(rng)
    h, pl = setup(nodes, pods, None, objects)
    live = {p.uid: p for p in pods}
    fixed = make_pod().name("incoming").label("app", "a").label("tier", "x") \
        .spread(1, ZONE, selector={"matchLabels": {"app": "a"}}) \
        .spread(2, HOSTNAME, "ScheduleAnyway", {"matchLabels": {"app": "a"}}).obj()
    # A few pods coming back cycle after cycle (their cached sums are reused), with node
    # affinity, tolerations and inclusion policies.
    pool = [fixed, *(random_pod(rng) for _ in range(3))]
    for cycle in range(12):
        pod = rng.choice(pool)
        check_equivalence(rng, h, pl, pod)
        names = [ni.name for ni in h.snapshot.list()]
        action = rng.choice(["bind", "bind", "delete", "add-node", "relabel", "remove-node"])
        if action == "bind" and names:
            p = ep(f"b{cycle}", rng.choice(names), app=rng.choice(["a", "b"]))
            h.cache.add_pod(p)
            live[p.uid] = p
        elif action == "delete" and live:
            p = live.pop(rng.choice(sorted(live)))
            h.cache.remove_pod(p)
        elif action == "add-node":
            h.cache.add_node(nd(f"new{cycle}", {HOSTNAME: f"new{cycle}", ZONE: rng.choice(["z1", "z4"])}))
        elif action == "relabel" and names:
            name = rng.choice(names)
            h.cache.update_node(nd(name, {HOSTNAME: name, ZONE: rng.choice(["z1", "z2", "z9"])}))
        elif action == "remove-node" and len(names) > 1:
            name = rng.choice(names)
            for uid, p in list(live.items()):
                if p.node_name == name:
                    h.cache.remove_pod(live.pop(uid))
            h.cache.remove_node(name)


# ------------------------------------------------------------------------------ conformance corpus
@pytest.mark.parametrize("name", conformance_replay.scenario_names())
def test_conformance_corpus(name: str) -> None:
    """Reasons and scores recorded by the real kube-scheduler for PodTopologySpread."""
    rep = conformance_replay.replay(name)
    assert rep.mismatches == []
    if name.endswith("spread"):
        assert rep.checked_filters + rep.checked_scores > 0


def test_1_36_counts_two_constraints_on_one_key_separately() -> None:
    # Zone a holds one app=a pod, zone b one tier=x pod. Constraints (maxSkew 1, zone) on app=a
    # and on tier=x. v1.30 keeps one count per zone, which each node sets from the key's last
    # constraint (tier=x: a 0, b 1), and both constraints read it: app=a fits a, not b. 1.36
    # keeps a count per constraint: app=a (a 1, b 0) skews a, tier=x (a 0, b 1) skews b.
    nodes = [make_node().name(n).label(ZONE, z).label(HOSTNAME, n).capacity(cpu="4", memory="4Gi", pods=110).obj()
             for n, z in (("na", "a"), ("nb", "b"))]
    pods = [make_pod().name("pa").node("na").label("app", "a").obj(),
            make_pod().name("pb").node("nb").label("tier", "x").obj()]
    pod = make_pod().name("p").label("app", "a").label("tier", "x") \
        .spread(1, ZONE, selector={"matchLabels": {"app": "a"}}) \
        .spread(1, ZONE, selector={"matchLabels": {"tier": "x"}}).obj()
    verdicts = {}
    for features in (FEATURES_1_30, FEATURES_1_36):
        h, pl = setup(nodes, pods, None, None, features)
        st = CycleState()
        assert pl.pre_filter(st, pod) == (None, None)
        verdicts[str(features.version)] = [code_of(pl.filter(st, pod, ni)) for ni in h.snapshot.list()]
    assert verdicts == {"1.30": ["S", "U"], "1.36": ["U", "U"]}
