"""SelectorSpread (legacy v1.21/v1.22 plugin): upstream selector_spread_test.go's
TestSelectorSpreadScore and TestZoneSelectorSpreadPriority, plus the helper semantics.

Upstream's test pods often have the empty namespace, for which the fake Service lister
lists every namespace (client-go's NamespaceAll); real pods always have a namespace, so
those cases are translated: upstream "" becomes "default" and upstream "default" becomes
"other" wherever both occur, which keeps every expected score.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from builders import make_node, make_pod, obj

from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.errors import PluginError
from kubesched.framework import MAX_NODE_SCORE, Code, CycleState, NodeScore
from kubesched.objects import Node, Pod, Service, Workload
from kubesched.plugins import selectorspread
from kubesched.plugins.helpers.spread import default_selector, pod_services
from kubesched.plugins.selectorspread import NAME
from kubesched.plugins.selectorspread.plugin import zone_key

L1 = {"foo": "bar", "baz": "blah"}
L2 = {"bar": "foo", "baz": "blah"}
_seq = itertools.count()
ZONE = "topology.kubernetes.io/zone"


def pod(node: str = "", labels: dict[str, str] | None = None, ns: str = "default",
        owner: tuple[str, str] | None = None, spread: bool = False, terminating: bool = False,
        owner_api_version: str = "") -> Pod:
    b = make_pod().name(f"p{next(_seq)}").namespace(ns)
    if labels:
        b = b.labels(labels)
    if node:
        b = b.node(node)
    if owner is not None:
        kind, name = owner
        api_version = owner_api_version or ("v1" if kind == "ReplicationController" else "apps/v1")
        b = b.owner(kind, name, api_version=api_version)
    if spread:
        b = b.spread(1, "foo", "DoNotSchedule")
    if terminating:
        b = b.terminating()
    return b.obj()


def service(selector: dict[str, str], ns: str = "default", name: str = "s1") -> Service:
    s: Service = obj({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
                      "spec": {"selector": selector}})
    return s


def rc(name: str, selector: dict[str, str], ns: str = "default") -> Workload:
    w: Workload = obj({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name, "namespace": ns},
                       "spec": {"selector": selector}})
    return w


def apps(kind: str, name: str, match_labels: dict[str, str] | None = None, ns: str = "default",
         expressions: list[dict[str, Any]] | None = None) -> Workload:
    sel: dict[str, Any] = {"matchLabels": match_labels or {}}
    if expressions:
        sel["matchExpressions"] = expressions
    w: Workload = obj({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": ns},
                       "spec": {"selector": sel}})
    return w


def rs(name: str, match_labels: dict[str, str], ns: str = "default") -> Workload:
    return apps("ReplicaSet", name, match_labels, ns)


def ss(name: str, match_labels: dict[str, str], ns: str = "default") -> Workload:
    return apps("StatefulSet", name, match_labels, ns)


def nodes_named(*names: str) -> list[Node]:
    return [make_node().name(n).capacity(cpu="4", memory="4Gi", pods=110).obj() for n in names]


def run(incoming: Pod, pods: list[Pod], nodes: list[Node], services: list[Service] | None = None,
        workloads: list[Workload] | None = None) -> dict[str, int]:
    handle = FrameworkHandle.for_nodes(nodes, pods, MemoryObjects(services=services or (), workloads=workloads or ()))
    pl = selectorspread.new(None, handle)
    state = CycleState()
    infos = [handle.snapshot.get(n.meta.name) for n in nodes]
    nis = [ni for ni in infos if ni is not None]
    assert pl.pre_score(state, incoming, nis) is None
    scores = [NodeScore(ni.name, pl.score(state, incoming, ni)) for ni in nis]
    assert pl.normalize_score(state, incoming, scores) is None
    return {s.name: s.score for s in scores}


N12 = nodes_named("node1", "node2")
M = MAX_NODE_SCORE
RC, RS, SS = "ReplicationController", "ReplicaSet", "StatefulSet"

NODE_CASES = [
    pytest.param(pod(), [], [], [], {"node1": M, "node2": M}, id="nothing scheduled: every node scores the maximum"),
    pytest.param(pod(labels=L1), [pod("node1")], [], [], {"node1": M, "node2": M},
                 id="no services: nothing selects the pod, every node scores the maximum"),
    pytest.param(pod(labels=L1), [pod("node1", L2)], [service({"key": "value"})], [], {"node1": M, "node2": M},
                 id="different services: a service not selecting the pod is ignored"),
    pytest.param(pod(labels=L1), [pod("node1", L2), pod("node2", L1)], [service(L1)], [], {"node1": M, "node2": 0},
                 id="two pods, one service pod: the node running it scores 0"),
    pytest.param(pod(labels=L1),
                 [pod("node1", L2), pod("node1", L1, ns="other"), pod("node1", L1, ns="ns1"), pod("node2", L1),
                  pod("node2", L2)],
                 [service(L1)], [], {"node1": M, "node2": 0},
                 id="five pods, one service pod in the pod's namespace: pods of other namespaces do not count"),
    pytest.param(pod(labels=L1),
                 [pod("node1", L1, ns="other"), pod("node1", L1, ns="ns1"), pod("node2", L1), pod("node2", L2, ns="other")],
                 [service(L1)], [], {"node1": M, "node2": 0},
                 id="four pods, one service pod in the default namespace"),
    pytest.param(pod(labels=L1, ns="ns1"),
                 [pod("node1", L2, ns="other"), pod("node1", L1), pod("node1", L1, ns="ns2"), pod("node2", L1, ns="ns1"),
                  pod("node2", L2, ns="other")],
                 [service(L1, ns="ns1")], [], {"node1": M, "node2": 0},
                 id="five pods, one service pod in a specific namespace"),
    pytest.param(pod(labels=L1), [pod("node1", L2), pod("node1", L1), pod("node2", L1)], [service(L1)], [],
                 {"node1": 0, "node2": 0}, id="three pods, two service pods on different nodes: both score 0"),
    pytest.param(pod(labels=L1), [pod("node1", L2), pod("node1", L1), pod("node2", L1), pod("node2", L1)],
                 [service(L1)], [], {"node1": 50, "node2": 0},
                 id="four pods, three service pods: one against two scores 50 and 0"),
    pytest.param(pod(labels=L1), [pod("node1", L2), pod("node1", L1), pod("node2", L1)], [service({"baz": "blah"})], [],
                 {"node1": 0, "node2": 50}, id="a service with a partial pod label match selects both label sets"),
    pytest.param(pod(labels=L1, owner=(RC, "rc1")), [pod("node1", L2), pod("node1", L1), pod("node2", L1)],
                 [service({"baz": "blah"})], [rc("rc1", {"foo": "bar"}), rc("rc2", {"bar": "foo"})],
                 {"node1": 0, "node2": 0},
                 id="service and replication controller selectors are ANDed: only labels1 pods are spread"),
    pytest.param(pod(labels=L1, owner=(RS, "rs1")), [pod("node1", L2), pod("node1", L1), pod("node2", L1)],
                 [service({"baz": "blah"})], [rs("rs1", {"foo": "bar"}), rs("rs2", {"bar": "foo"})],
                 {"node1": 0, "node2": 0}, id="service and replica set selectors are ANDed"),
    pytest.param(pod(labels=L1, owner=(SS, "ss1")), [pod("node1", L2), pod("node1", L1), pod("node2", L1)],
                 [service({"baz": "blah"})], [ss("ss1", {"foo": "bar"}), ss("ss2", {"bar": "foo"})],
                 {"node1": 0, "node2": 0}, id="service and stateful set selectors are ANDed"),
    pytest.param(pod(labels={"foo": "bar", "bar": "foo"}, owner=(RC, "rc3")),
                 [pod("node1", L2, owner=(RC, "rc2")), pod("node1", L1, owner=(RC, "rc1")),
                  pod("node2", L1, owner=(RC, "rc1"))],
                 [service({"bar": "foo"})], [rc("rc3", {"foo": "bar"})], {"node1": M, "node2": M},
                 id="disjoint service and replication controller selectors match no pod"),
    pytest.param(pod(labels={"foo": "bar", "bar": "foo"}, owner=(RS, "rs3")),
                 [pod("node1", L2, owner=(RS, "rs2")), pod("node1", L1, owner=(RS, "rs1")),
                  pod("node2", L1, owner=(RS, "rs1"))],
                 [service({"bar": "foo"})], [rs("rs3", {"foo": "bar"})], {"node1": M, "node2": M},
                 id="disjoint service and replica set selectors match no pod"),
    pytest.param(pod(labels={"foo": "bar", "bar": "foo"}, owner=(SS, "ss3")),
                 [pod("node1", L2, owner=(SS, "ss2")), pod("node1", L1, owner=(SS, "ss1")),
                  pod("node2", L1, owner=(SS, "ss1"))],
                 [service({"bar": "foo"})], [ss("ss3", {"foo": "bar"})], {"node1": M, "node2": M},
                 id="disjoint service and stateful set selectors match no pod"),
    pytest.param(pod(labels=L1, owner=(RC, "rc1")),
                 [pod("node1", L2, owner=(RC, "rc2")), pod("node1", L1, owner=(RC, "rc1")),
                  pod("node2", L1, owner=(RC, "rc1"))],
                 [], [rc("rc1", {"foo": "bar"})], {"node1": 0, "node2": 0},
                 id="a replication controller alone: both nodes run one of its pods"),
    pytest.param(pod(labels=L1, owner=(RS, "rs1")),
                 [pod("node1", L2, owner=(RS, "rs2")), pod("node1", L1, owner=(RS, "rs1")),
                  pod("node2", L1, owner=(RS, "rs1"))],
                 [], [rs("rs1", {"foo": "bar"})], {"node1": 0, "node2": 0},
                 id="a replica set alone: both nodes run one of its pods"),
    pytest.param(pod(labels=L1, owner=(SS, "ss1")),
                 [pod("node1", L2, owner=(SS, "ss2")), pod("node1", L1, owner=(SS, "ss1")),
                  pod("node2", L1, owner=(SS, "ss1"))],
                 [], [ss("ss1", {"foo": "bar"})], {"node1": 0, "node2": 0},
                 id="a stateful set alone: both nodes run one of its pods"),
    pytest.param(pod(labels=L1, owner=(RC, "rc3")),
                 [pod("node1", L2, owner=(RC, "rc2")), pod("node1", L1, owner=(RC, "rc1")),
                  pod("node2", L1, owner=(RC, "rc1"))],
                 [], [rc("rc3", {"baz": "blah"})], {"node1": 0, "node2": 50},
                 id="another replication controller with a partial pod label match"),
    pytest.param(pod(labels=L1, owner=(RS, "rs3")),
                 [pod("node1", L2, owner=(RS, "rs2")), pod("node1", L1, owner=(RS, "rs1")),
                  pod("node2", L1, owner=(RS, "rs1"))],
                 [], [rs("rs3", {"baz": "blah"})], {"node1": 0, "node2": 50},
                 id="another replica set with a partial pod label match"),
    pytest.param(pod(labels=L1, owner=(SS, "ss3")),
                 [pod("node1", L2, owner=(SS, "ss2")), pod("node1", L1, owner=(SS, "ss1")),
                  pod("node2", L1, owner=(SS, "ss1"))],
                 [], [ss("ss3", {"baz": "blah"})], {"node1": 0, "node2": 50},
                 id="another stateful set with a partial pod label match"),
    pytest.param(pod(labels=L1, owner=(SS, "ss1"), spread=True),
                 [pod("node1", L2, owner=(SS, "ss2")), pod("node1", L1, owner=(SS, "ss1")),
                  pod("node2", L1, owner=(SS, "ss1"))],
                 [], [ss("ss1", {"baz": "blah"})], {"node1": 0, "node2": 0},
                 id="a pod with topologySpreadConstraints is left to PodTopologySpread: every node scores 0"),
    # ---- beyond upstream
    pytest.param(pod(labels=L1), [pod("node1", L1, terminating=True), pod("node2", L1)], [service(L1)], [],
                 {"node1": M, "node2": 0}, id="pods being deleted do not count"),
    pytest.param(pod(labels=L1, owner=(RS, "missing")), [pod("node1", L1), pod("node1", L1), pod("node2", L1)],
                 [service({"foo": "bar"})], [], {"node1": 0, "node2": 50},
                 id="a controller that cannot be found adds nothing to the services' selector"),
    pytest.param(pod(labels=L1, owner=(RS, "rs1"), owner_api_version="extensions/v1beta1"),
                 [pod("node1", L1), pod("node2", L2)], [], [rs("rs1", {"foo": "bar"})], {"node1": M, "node2": M},
                 id="a controller of another group version is not followed"),
    pytest.param(pod(labels=L1, owner=(RS, "rs1")), [pod("node1", L1), pod("node2", L2), pod("node2", L2)], [],
                 [apps("ReplicaSet", "rs1", expressions=[{"key": "bar", "operator": "DoesNotExist"}])],
                 {"node1": 0, "node2": M},
                 id="replica set match expressions are part of the selector"),
]


@pytest.mark.parametrize(("incoming", "pods", "services", "workloads", "expected"), NODE_CASES)
def test_score_on_nodes_without_zones(incoming: Pod, pods: list[Pod], services: list[Service],
                                      workloads: list[Workload], expected: dict[str, int]) -> None:
    assert run(incoming, pods, N12, services, workloads) == expected


Z11, Z12, Z22, Z13, Z23, Z33 = "node1.zone1", "node1.zone2", "node2.zone2", "node1.zone3", "node2.zone3", "node3.zone3"
ZONED = [make_node().name(n).label(ZONE, n.split(".")[1]).capacity(cpu="4", memory="4Gi", pods=110).obj()
         for n in (Z11, Z12, Z22, Z13, Z23, Z33)]
ZL1 = {"label1": "l1", "baz": "blah"}
ZL2 = {"label2": "l2", "baz": "blah"}


def zscores(a: int, b: int, c: int, d: int, e: int, f: int) -> dict[str, int]:
    return {Z11: a, Z12: b, Z22: c, Z13: d, Z23: e, Z33: f}


ZONE_CASES = [
    pytest.param(pod(), [], [], [], zscores(M, M, M, M, M, M), id="zones: nothing scheduled"),
    pytest.param(pod(labels=ZL1), [pod(Z11)], [], [], zscores(M, M, M, M, M, M), id="zones: no services"),
    pytest.param(pod(labels=ZL1), [pod(Z11, ZL2)], [service({"key": "value"})], [], zscores(M, M, M, M, M, M),
                 id="zones: different services"),
    pytest.param(pod(labels=ZL1), [pod(Z11, ZL2), pod(Z12, ZL2)], [service(ZL1)], [], zscores(M, M, M, M, M, M),
                 id="zones: two pods, none matching"),
    pytest.param(pod(labels=ZL1), [pod(Z11, ZL2), pod(Z12, ZL1)], [service(ZL1)], [], zscores(M, 0, 33, M, M, M),
                 id="zones: one matching pod in zone2 zeroes its node and lowers its zone"),
    pytest.param(pod(labels=ZL1), [pod(Z11, ZL2), pod(Z12, ZL1), pod(Z22, ZL1), pod(Z13, ZL2), pod(Z23, ZL1)],
                 [service(ZL1)], [], zscores(M, 0, 0, 66, 33, 66),
                 id="zones: three matching pods, two in zone2 and one in zone3"),
    pytest.param(pod(labels=ZL1), [pod(Z11, ZL1), pod(Z12, ZL1), pod(Z22, ZL2), pod(Z13, ZL1)],
                 [service(ZL1)], [], zscores(0, 0, 33, 0, 33, 33),
                 id="zones: one matching pod in each zone"),
    pytest.param(pod(labels=ZL1), [pod(Z11, ZL1), pod(Z12, ZL1), pod(Z22, ZL1), pod(Z22, ZL2), pod(Z13, ZL1)],
                 [service(ZL1)], [], zscores(33, 0, 0, 33, 66, 66),
                 id="zones: four matching pods, two in zone2"),
    pytest.param(pod(labels=ZL1, owner=(RC, "rc1")), [pod(Z13, ZL1), pod(Z12, ZL1), pod(Z13, ZL1)], [],
                 [rc("rc1", ZL1)], zscores(M, 50, 66, 0, 33, 33),
                 id="zones: replication controller spreading, zone1 empty, zone2 one pod, zone3 two on one node"),
]


@pytest.mark.parametrize(("incoming", "pods", "services", "workloads", "expected"), ZONE_CASES)
def test_score_with_zones(incoming: Pod, pods: list[Pod], services: list[Service], workloads: list[Workload],
                          expected: dict[str, int]) -> None:
    assert run(incoming, pods, ZONED, services, workloads) == expected


def test_nodes_without_zone_labels_only_spread_by_node_when_others_have_zones() -> None:
    nodes = [make_node().name("a").label(ZONE, "z1").obj(), make_node().name("b").label(ZONE, "z1").obj(),
             make_node().name("c").obj()]
    # counts a=1, b=0, c=1; zone z1 total 1 (max 1): a = 100·0/3 + 0 = 0, b = 100/3 + 0 = 33, c (no zone) = 0.
    got = run(pod(labels=L1), [pod("a", L1), pod("c", L1)], nodes, [service(L1)])
    assert got == {"a": 0, "b": 33, "c": 0}


@pytest.mark.parametrize(
    ("labels", "want"),
    [
        ({}, ""),
        ({ZONE: "z"}, ":\x00:z"),
        ({"topology.kubernetes.io/region": "r", ZONE: "z"}, "r:\x00:z"),
        ({"failure-domain.beta.kubernetes.io/zone": "old", ZONE: "new"}, ":\x00:old"),
        ({"failure-domain.beta.kubernetes.io/zone": "", ZONE: "new"}, ""),
        ({"failure-domain.beta.kubernetes.io/region": "r"}, "r:\x00:"),
    ],
    ids=[
        "a node without zone or region labels has no zone",
        "the zone key is region, a NUL separator and zone",
        "region and zone both enter the key",
        "the beta zone label wins over the GA one",
        "an empty beta zone label still wins and leaves no zone",
        "a region alone makes a zone key",
    ],
)
def test_zone_key(labels: dict[str, str], want: str) -> None:
    assert zone_key(make_node().name("n").labels(labels).obj()) == want


def test_default_selector_merges_services_and_adds_replica_set_requirements() -> None:
    p = pod(labels={"app": "a", "tier": "web", "x": "1"}, owner=(RS, "rs1"))
    objects = MemoryObjects(
        services=[service({"app": "a"}, name="s1"), service({"tier": "web"}, name="s2"),
                  service({"app": "b"}, name="s3"), service({}, name="s4")],
        workloads=[rs("rs1", {"x": "1"})],
    )
    assert [s.name for s in pod_services(p, objects)] == ["s1", "s2"]
    sel = default_selector(p, objects)
    assert sel.matches({"app": "a", "tier": "web", "x": "1", "y": "2"})
    assert not sel.matches({"app": "a", "tier": "web"})
    assert not sel.matches({"app": "a", "x": "1"})


def test_a_pod_without_services_or_controller_has_an_empty_selector() -> None:
    assert default_selector(pod(labels=L1), MemoryObjects()).empty()


def test_score_without_pre_score_is_an_error() -> None:
    handle = FrameworkHandle.for_nodes(N12)
    pl = selectorspread.new(None, handle)
    ni = handle.snapshot.get("node1")
    assert ni is not None
    with pytest.raises(PluginError, match='reading "PreScoreSelectorSpread" from cycleState: not found'):
        pl.score(CycleState(), pod(labels=L1), ni)


def test_normalize_reports_an_unknown_node() -> None:
    handle = FrameworkHandle.for_nodes(N12)
    pl = selectorspread.new(None, handle)
    st = pl.normalize_score(CycleState(), pod(), [NodeScore("ghost", 1)])
    assert st is not None and st.code == Code.ERROR
    assert st.message == 'getting node "ghost" from Snapshot: nodeinfo not found for node name "ghost"'


def test_plugin_shape() -> None:
    pl = selectorspread.new(None, FrameworkHandle.for_nodes([]))
    assert pl.name == NAME == "SelectorSpread"
    assert pl.events_to_register() == []
    assert not hasattr(pl, "filter") and not hasattr(pl, "pre_filter")
