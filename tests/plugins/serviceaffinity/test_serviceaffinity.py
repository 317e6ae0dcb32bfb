"""ServiceAffinity (legacy v1.21/v1.22 plugin): upstream service_affinity_test.go's
TestServiceAffinity, TestServiceAffinityScore, TestPreFilterStateAddRemovePod,
TestPreFilterStateClone and TestPreFilterDisabled, plus FilterOutPods and events.

Upstream's test objects mostly have the empty namespace (the fake Service lister then
lists every namespace); they are put in "default" here, and upstream's "default" next to
empty-namespace pods becomes "other", which keeps every expected result.
"""

from __future__ import annotations

import itertools

import pytest
from builders import make_node, make_pod, obj

from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.config.args import ServiceAffinityArgs
from kubesched.errors import ConfigError
from kubesched.framework import GVK, MAX_NODE_SCORE, ActionType, Code, CycleState, NodeScore, PodInfo
from kubesched.objects import Node, Pod, Service
from kubesched.plugins import serviceaffinity
from kubesched.plugins.serviceaffinity import ERR_REASON, NAME
from kubesched.plugins.serviceaffinity.plugin import PreFilterState, filter_out_pods

_seq = itertools.count()
SEL = {"foo": "bar"}
M = MAX_NODE_SCORE


def pod(node: str = "", labels: dict[str, str] | None = None, ns: str = "default", name: str = "",
        node_selector: dict[str, str] | None = None, terminating: bool = False) -> Pod:
    b = make_pod().name(name or f"p{next(_seq)}").namespace(ns)
    if labels:
        b = b.labels(labels)
    if node:
        b = b.node(node)
    if node_selector is not None:
        b = b.node_selector(node_selector)
    if terminating:
        b = b.terminating()
    return b.obj()


def service(selector: dict[str, str], ns: str = "default", name: str = "s1") -> Service:
    s: Service = obj({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
                      "spec": {"selector": selector}})
    return s


def node(name: str, labels: dict[str, str]) -> Node:
    return make_node().name(name).labels(labels).capacity(cpu="4", memory="4Gi", pods=110).obj()


def plugin(nodes: list[Node], pods: list[Pod], services: list[Service], args: ServiceAffinityArgs | None
           ) -> tuple[FrameworkHandle, serviceaffinity.ServiceAffinity]:
    handle = FrameworkHandle.for_nodes(nodes, pods, MemoryObjects(services=services))
    return handle, serviceaffinity.new(args, handle)


# ---------------------------------------------------------------- Filter
R1Z11 = {"region": "r1", "zone": "z11"}
R1Z12 = {"region": "r1", "zone": "z12"}
R2Z21 = {"region": "r2", "zone": "z21"}
R2Z22 = {"region": "r2", "zone": "z22"}
FILTER_NODES = [node("machine1", R1Z11), node("machine2", R1Z12), node("machine3", R2Z21), node("machine4", R2Z22),
                node("machine5", R2Z22)]


@pytest.mark.parametrize(
    ("incoming", "pods", "services", "on", "labels", "fits"),
    [
        pytest.param(pod(), [], [], "machine1", ["region"], True, id="nothing scheduled fits"),
        pytest.param(pod(node_selector={"region": "r1"}), [], [], "machine1", ["region"], True,
                     id="a pod whose nodeSelector pins the node's region fits"),
        pytest.param(pod(node_selector={"region": "r2"}), [], [], "machine1", ["region"], False,
                     id="a pod whose nodeSelector pins another region does not fit"),
        pytest.param(pod(labels=SEL), [pod("machine1", SEL)], [service(SEL)], "machine1", ["region"], True,
                     id="a service pod on the same node fits"),
        pytest.param(pod(labels=SEL), [pod("machine2", SEL)], [service(SEL)], "machine1", ["region"], True,
                     id="a service pod on another node of the same region fits"),
        pytest.param(pod(labels=SEL), [pod("machine3", SEL)], [service(SEL)], "machine1", ["region"], False,
                     id="a service pod on a node of another region does not fit"),
        pytest.param(pod(labels=SEL, ns="ns1"), [pod("machine3", SEL, ns="ns1")], [service(SEL, ns="ns2")],
                     "machine1", ["region"], True,
                     id="a service of another namespace does not constrain the pod"),
        pytest.param(pod(labels=SEL, ns="ns1"), [pod("machine3", SEL, ns="ns2")], [service(SEL, ns="ns1")],
                     "machine1", ["region"], True,
                     id="a pod of another namespace does not constrain the pod"),
        pytest.param(pod(labels=SEL, ns="ns1"), [pod("machine3", SEL, ns="ns1")], [service(SEL, ns="ns1")],
                     "machine1", ["region"], False,
                     id="a service and pod of the same namespace in another region do not fit"),
        pytest.param(pod(labels=SEL), [pod("machine2", SEL)], [service(SEL)], "machine1", ["region", "zone"], False,
                     id="with several labels, a node matching only some of them does not fit"),
        pytest.param(pod(labels=SEL), [pod("machine5", SEL)], [service(SEL)], "machine4", ["region", "zone"], True,
                     id="with several labels, a node matching all of them fits"),
        # ---- beyond upstream
        pytest.param(pod(labels=SEL, node_selector={"region": "r2"}), [pod("machine1", SEL)], [service(SEL)],
                     "machine3", ["region", "zone"], False,
                     id="a label the nodeSelector pins is kept and the others are backfilled from the service pod"),
        pytest.param(pod(labels=SEL, node_selector={"region": "r1"}), [pod("machine3", SEL)], [service(SEL)],
                     "machine1", ["region"], True,
                     id="a nodeSelector pinning every label ignores where the service pods run"),
        pytest.param(pod(labels=SEL), [pod("machine3", SEL)], [], "machine1", ["region"], True,
                     id="without a service the matching pods are not consulted"),
        pytest.param(pod(labels=SEL), [pod("machine3", {"foo": "bar", "x": "y"}), pod("machine1", SEL)], [service(SEL)],
                     "machine2", ["region"], True,
                     id="the first matching pod in snapshot node order, not creation order, decides the labels"),
        pytest.param(pod(labels={"foo": "bar", "x": "y"}), [pod("machine3", SEL)], [service(SEL)], "machine1",
                     ["region"], True,
                     id="pods lacking one of the pod's labels do not count as matching"),
    ],
)
def test_filter(incoming: Pod, pods: list[Pod], services: list[Service], on: str, labels: list[str],
                fits: bool) -> None:
    handle, pl = plugin(FILTER_NODES, pods, services, ServiceAffinityArgs(affinity_labels=tuple(labels)))
    state = CycleState()
    assert pl.pre_filter(state, incoming) == (None, None)
    ni = handle.snapshot.get(on)
    assert ni is not None
    got = pl.filter(state, incoming, ni)
    if fits:
        assert got is None
    else:
        assert got is not None and got.code == Code.UNSCHEDULABLE and got.reasons == (ERR_REASON,)


def test_a_label_missing_from_the_backfill_node_still_requires_nothing() -> None:
    # "rack" is on no node: nothing is backfilled, the empty label set matches every node.
    handle, pl = plugin(FILTER_NODES, [pod("machine3", SEL)], [service(SEL)], ServiceAffinityArgs(("rack",)))
    state = CycleState()
    pl.pre_filter(state, pod(labels=SEL))
    ni = handle.snapshot.get("machine1")
    assert ni is not None and pl.filter(state, pod(labels=SEL), ni) is None


def test_filter_without_pre_filter_is_an_error() -> None:
    handle, pl = plugin(FILTER_NODES, [], [], ServiceAffinityArgs(("region",)))
    ni = handle.snapshot.get("machine1")
    assert ni is not None
    got = pl.filter(CycleState(), pod(), ni)
    assert got is not None and got.code == Code.ERROR
    assert got.message == 'error reading "PreFilterServiceAffinity" from cycleState: not found'


def test_without_affinity_labels_there_is_no_filtering_state() -> None:
    handle, pl = plugin(FILTER_NODES, [pod("machine3", SEL)], [service(SEL)], ServiceAffinityArgs())
    state = CycleState()
    assert pl.pre_filter(state, pod(labels=SEL)) == (None, None)
    assert not state._data
    assert pl.pre_filter_extensions() is None
    ni = handle.snapshot.get("machine1")
    assert ni is not None and pl.filter(state, pod(labels=SEL), ni) is None
    assert pl.events_to_register() == []


def test_a_service_pod_with_an_unknown_node_is_an_error() -> None:
    handle, pl = plugin(FILTER_NODES, [], [service(SEL)], ServiceAffinityArgs(("region",)))
    state = CycleState()
    incoming = pod(labels=SEL)
    pl.pre_filter(state, incoming)
    ni = handle.snapshot.get("machine1")
    assert ni is not None
    # A nominated pod (no nodeName) added by the nominated-pods pass becomes the first match.
    assert pl.add_pod(state, incoming, PodInfo(pod(labels=SEL)), ni) is None
    got = pl.filter(state, incoming, ni)
    assert got is not None and got.code == Code.ERROR and got.message == "node not found"


# ---------------------------------------------------------------- FilterOutPods
def test_filter_out_pods_drops_pods_claiming_the_node_but_not_on_it() -> None:
    handle = FrameworkHandle.for_nodes(FILTER_NODES, [pod("machine1", name="on")])
    ni = handle.snapshot.get("machine1")
    assert ni is not None
    on_node = ni.pods[0].pod
    gone = pod("machine1", name="gone")
    elsewhere = pod("machine2", name="elsewhere")
    no_uid = obj({**make_pod().name("nouid").node("machine1").manifest(),
                  "metadata": {"name": "nouid", "namespace": "default", "uid": ""}})
    assert [p.name for p in filter_out_pods(ni, [on_node, gone, elsewhere, no_uid])] == ["on", "elsewhere"]


# ---------------------------------------------------------------- Score
L1 = {"foo": "bar", "baz": "blah"}
L2 = {"bar": "foo", "baz": "blah"}
NOZONE = {"name": "value"}


def labeled(nodes: dict[str, dict[str, str]]) -> list[Node]:
    return [node(n, labels) for n, labels in nodes.items()]


ZONED = labeled({"machine01": NOZONE, "machine02": NOZONE, "machine11": {"zone": "zone1"},
                 "machine12": {"zone": "zone1"}, "machine21": {"zone": "zone2"}, "machine22": {"zone": "zone2"}})
RACKED = labeled({"machine01": NOZONE, "machine02": NOZONE, "machine11": {"zone": "zone1", "rack": "rack1"},
                  "machine12": {"zone": "zone1", "rack": "rack2"}, "machine21": {"zone": "zone2", "rack": "rack1"},
                  "machine22": {"zone": "zone2", "rack": "rack1"}})


def expect(m11: int, m12: int, m21: int, m22: int) -> dict[str, int]:
    return {"machine01": 0, "machine02": 0, "machine11": m11, "machine12": m12, "machine21": m21, "machine22": m22}


@pytest.mark.parametrize(
    ("incoming", "pods", "nodes", "services", "labels", "expected"),
    [
        pytest.param(pod(), [], ZONED, [], ["zone"], expect(M, M, M, M),
                     id="nothing scheduled: zoned nodes score the maximum, unzoned ones 0"),
        pytest.param(pod(labels=L1), [pod("machine11")], ZONED, [], ["zone"], expect(M, M, M, M),
                     id="no services"),
        pytest.param(pod(labels=L1), [pod("machine11", L2)], ZONED, [service({"key": "value"})], ["zone"],
                     expect(M, M, M, M), id="different services"),
        pytest.param(pod(labels=L1), [pod("machine01", L2), pod("machine11", L2), pod("machine21", L1)], ZONED,
                     [service(L1)], ["zone"], expect(M, M, 0, 0),
                     id="three pods, one service pod: its zone scores 0"),
        pytest.param(pod(labels=L1), [pod("machine11", L2), pod("machine11", L1), pod("machine21", L1)], ZONED,
                     [service(L1)], ["zone"], expect(50, 50, 50, 50),
                     id="three pods, two service pods in different zones"),
        pytest.param(pod(labels=L1),
                     [pod("machine11", L1, ns="other"), pod("machine11", L1), pod("machine21", L1, ns="other"),
                      pod("machine21", L1, ns="ns1")],
                     ZONED, [service(L1)], ["zone"], expect(0, 0, M, M),
                     id="service label matching pods of other namespaces do not count"),
        pytest.param(pod(labels=L1), [pod("machine11", L2), pod("machine11", L1), pod("machine21", L1),
                                      pod("machine21", L1)],
                     ZONED, [service(L1)], ["zone"], expect(66, 66, 33, 33), id="four pods, three service pods"),
        pytest.param(pod(labels=L1), [pod("machine11", L2), pod("machine11", L1), pod("machine21", L1)], ZONED,
                     [service({"baz": "blah"})], ["zone"], expect(33, 33, 66, 66),
                     id="a service with a partial pod label match"),
        pytest.param(pod(labels=L1), [pod("machine01", L1), pod("machine11", L1), pod("machine21", L1),
                                      pod("machine21", L1)],
                     ZONED, [service(L1)], ["zone"], expect(75, 75, 50, 50),
                     id="a service pod on an unzoned node counts in the total only"),
        pytest.param(pod(labels=L1), [pod("machine01", L2), pod("machine11", L1), pod("machine21", L1)], RACKED,
                     [service(L1)], ["zone", "rack"], expect(25, 75, 25, 25),
                     id="three pods, two service pods, zone and rack labels each weigh half"),
        # ---- beyond upstream
        pytest.param(pod(labels=L1), [pod("machine11", L1, terminating=True), pod("machine21", L1)], ZONED,
                     [service(L1)], ["zone"], expect(M, M, 0, 0), id="pods being deleted do not count"),
        pytest.param(pod(labels=L1), [pod("machine11", L1)], ZONED, [service(L1)], [], expect(0, 0, 0, 0),
                     id="without anti-affinity labels every score is 0"),
    ],
)
def test_score(incoming: Pod, pods: list[Pod], nodes: list[Node], services: list[Service], labels: list[str],
               expected: dict[str, int]) -> None:
    handle, pl = plugin(nodes, pods, services, ServiceAffinityArgs(anti_affinity_labels_preference=tuple(labels)))
    state = CycleState()
    scores = []
    for n in nodes:
        ni = handle.snapshot.get(n.meta.name)
        assert ni is not None
        scores.append(NodeScore(ni.name, pl.score(state, incoming, ni)))
    assert pl.normalize_score(state, incoming, scores) is None
    assert {s.name: s.score for s in scores} == expected


def test_score_uses_the_first_service_only() -> None:
    nodes = [node("a", {"zone": "z1"}), node("b", {"zone": "z2"})]
    pods = [pod("a", {"app": "x", "tier": "web"}), pod("b", {"app": "x"})]
    incoming = pod(labels={"app": "x", "tier": "web"})
    handle, pl = plugin(nodes, pods, [service({"tier": "web"}, name="s1"), service({"app": "x"}, name="s2")],
                        ServiceAffinityArgs(anti_affinity_labels_preference=("zone",)))
    state = CycleState()
    raw = {n: pl.score(state, incoming, ni) for n in ("a", "b") if (ni := handle.snapshot.get(n)) is not None}
    assert raw == {"a": 1, "b": 0}


def test_normalize_reports_an_unknown_node() -> None:
    _, pl = plugin(ZONED, [], [], ServiceAffinityArgs(anti_affinity_labels_preference=("zone",)))
    st = pl.normalize_score(CycleState(), pod(), [NodeScore("ghost", 0)])
    assert st is not None and st.code == Code.ERROR
    assert st.message == 'nodeinfo not found for node name "ghost"'


# ---------------------------------------------------------------- AddPod / RemovePod / Clone
AB_NODES = [node("nodeA", R1Z11), node("nodeB", R1Z12), node("nodeC", R2Z21)]


def _state(pods: list[Pod], services: list[Service], pending: Pod) -> tuple[FrameworkHandle,
                                                                              serviceaffinity.ServiceAffinity,
                                                                              CycleState]:
    handle, pl = plugin(AB_NODES, pods, services, ServiceAffinityArgs(("region",)))
    state = CycleState()
    pl.pre_filter(state, pending)
    return handle, pl, state


def _summary(state: CycleState) -> tuple[list[str], list[str]]:
    s = state._data["PreFilterServiceAffinity"]
    assert isinstance(s, PreFilterState)
    return sorted(p.name for p in s.matching_pod_list), sorted(x.name for x in s.matching_pod_services)


@pytest.mark.parametrize(
    "services",
    [[], [service(SEL)]],
    ids=["adding and removing a pod without any service", "adding and removing a pod backing a service"],
)
def test_add_and_remove_pod_update_the_state_like_a_fresh_pre_filter(services: list[Service]) -> None:
    pending = pod(labels=SEL, name="pending")
    existing = [pod("nodeA", SEL, name="p1"), pod("nodeC", name="p2")]
    added = pod("nodeB", SEL, name="addedPod")
    _, _, all_state = _state([*existing, added], services, pending)
    handle, pl, state = _state(existing, services, pending)
    original = _summary(state.clone())
    ni = handle.snapshot.get("nodeB")
    assert ni is not None
    assert pl.add_pod(state, pending, PodInfo(added), ni) is None
    assert _summary(state) == _summary(all_state) == (["addedPod", "p1"], [s.name for s in services])
    assert pl.remove_pod(state, pending, PodInfo(added), ni) is None
    assert _summary(state) == original


def test_add_pod_ignores_other_namespaces_and_non_matching_pods() -> None:
    pending = pod(labels=SEL, name="pending")
    handle, pl, state = _state([], [], pending)
    ni = handle.snapshot.get("nodeA")
    assert ni is not None
    pl.add_pod(state, pending, PodInfo(pod("nodeA", SEL, ns="ns1")), ni)
    pl.add_pod(state, pending, PodInfo(pod("nodeA", {"other": "x"})), ni)
    assert _summary(state) == ([], [])


def test_clone_copies_the_lists() -> None:
    s = PreFilterState([pod(name="pod1"), pod(name="pod2")], [service(SEL, name="service1")])
    c = s.clone()
    assert c is not s and c.matching_pod_list is not s.matching_pod_list
    assert c.matching_pod_list == s.matching_pod_list and c.matching_pod_services == s.matching_pod_services
    c.matching_pod_list.pop()
    assert len(s.matching_pod_list) == 2


def test_add_and_remove_without_state_are_errors() -> None:
    handle, pl = plugin(AB_NODES, [], [], ServiceAffinityArgs(("region",)))
    ni = handle.snapshot.get("nodeA")
    assert ni is not None
    for st in (pl.add_pod(CycleState(), pod(), PodInfo(pod()), ni), pl.remove_pod(CycleState(), pod(), PodInfo(pod()), ni)):
        assert st is not None and st.code == Code.ERROR
        assert st.message == 'error reading "PreFilterServiceAffinity" from cycleState: not found'


# ---------------------------------------------------------------- shape
def test_plugin_shape() -> None:
    pl = serviceaffinity.new(ServiceAffinityArgs(affinity_labels=("region",)), FrameworkHandle.for_nodes([]))
    assert pl.name == NAME == "ServiceAffinity"
    assert pl.pre_filter_extensions() is pl
    events = {(e.event.resource, e.event.action_type) for e in pl.events_to_register()}
    assert events == {(GVK.POD, ActionType.DELETE), (GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                      ("Service", ActionType.UPDATE | ActionType.DELETE)}
    with pytest.raises(ConfigError, match="want args to be of type ServiceAffinityArgs"):
        serviceaffinity.new(object(), FrameworkHandle.for_nodes([]))
