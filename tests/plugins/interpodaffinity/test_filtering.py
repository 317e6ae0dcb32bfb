"""InterPodAffinity PreFilter / Filter / AddPod / RemovePod: the cases of upstream's
filtering_test.go (TestRequiredAffinitySingleNode, TestRequiredAffinityMultipleNodes,
TestPreFilterDisabled, TestPreFilterStateAddRemovePod, TestPreFilterStateClone,
TestGetTPMapMatchingIncomingAffinityAntiAffinity), each checked per node and in batch.

Adaptations: upstream's terms without a topologyKey (rejected by API validation, and by our
parser) use a key the incoming pod's term cannot satisfy either way; the two "invalid label
syntax" cases are parse-time errors here and are not repeated.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubesched.framework import SKIP, Code, CycleState, PodInfo, StateKey, Status
from kubesched.objects import Namespace, Node, ObjectMeta, Pod
from kubesched.plugins.interpodaffinity import NAME, InterPodAffinity, new
from kubesched.plugins.interpodaffinity.filtering import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH as AFF,
)
from kubesched.plugins.interpodaffinity.filtering import (
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH as ANTI,
)
from kubesched.plugins.interpodaffinity.filtering import (
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH as EXISTING,
)
from kubesched.plugins.interpodaffinity.filtering import PreFilterState

from .util import affinity, expr, handle_for, node, pod, term

KEY: StateKey[PreFilterState] = StateKey("PreFilter" + NAME)
UNRES = Status.unresolvable(AFF)
UNSCHED_ANTI = Status.unschedulable(ANTI)
UNSCHED_EXISTING = Status.unschedulable(EXISTING)


def In(key: str, *values: str) -> dict[str, Any]:  # noqa: N802 - reads like the operator
    return expr(key, "In", list(values))


def NotIn(key: str, *values: str) -> dict[str, Any]:  # noqa: N802
    return expr(key, "NotIn", list(values))


def Exists(key: str) -> dict[str, Any]:  # noqa: N802
    return expr(key, "Exists")


def DoesNotExist(key: str) -> dict[str, Any]:  # noqa: N802
    return expr(key, "DoesNotExist")


def run_filter(incoming: Pod, pods: list[Pod], nodes: list[Node], namespaces: list[Namespace] | None = None
               ) -> tuple[Status | None, list[Status | None]]:
    """PreFilter, then Filter on every node; also asserts filter_batch agrees."""
    handle = handle_for(nodes, pods, namespaces)
    pl = new(None, handle)
    state = CycleState()
    _, pre = pl.pre_filter(state, incoming)
    if pre is not None:
        return pre, []
    infos = [handle.snapshot.get(n.meta.name) for n in nodes]
    statuses = [pl.filter(state, incoming, ni) for ni in infos if ni is not None]
    rows = np.array([ni.index for ni in infos if ni is not None], np.int64)
    batch = pl.filter_batch(state, incoming, handle.snapshot.table, rows)
    assert list(batch) == [s is None for s in statuses]
    codes, table_statuses = pl.filter_batch_status(state, incoming, handle.snapshot.table, rows)
    assert [table_statuses[c] for c in codes.tolist()] == statuses
    return None, statuses


POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
LABELS1 = {"region": "r1", "zone": "z11"}


def _existing() -> Pod:
    return pod(labels=POD_LABEL, node="node1")


SINGLE_NODE: list[tuple[str, Pod, list[Pod], Status | None, Status | None]] = [
    # (id, incoming pod, existing pods, PreFilter status, Filter status)
    ("a pod without required pod affinity rules skips the plugin on a node without pods",
     pod(), [], SKIP, None),
    ("a required affinity term with In matching the existing pod is satisfied",
     pod(labels=POD_LABEL2, aff=affinity(req=[term("region", In("service", "securityscan", "value2"))])),
     [_existing()], None, None),
    ("a required affinity term with NotIn matching the existing pod is satisfied",
     pod(labels=POD_LABEL2, aff=affinity(req=[term("region", NotIn("service", "securityscan3", "value3"))])),
     [_existing()], None, None),
    ("an affinity term for another namespace is not satisfied by a pod of the default namespace",
     pod(labels=POD_LABEL2, aff=affinity(req=[term("region", In("service", "securityscan", "value2"),
                                                   namespaces=["DiffNameSpace"])])),
     [pod(labels=POD_LABEL, node="node1", ns="ns")], None, UNRES),
    ("an affinity selector not matching the existing pod is not satisfied",
     pod(labels=POD_LABEL, aff=affinity(req=[term("region", In("service", "antivirusscan", "value2"))])),
     [_existing()], None, UNRES),
    ("several affinity terms with different operators are all satisfied",
     pod(labels=POD_LABEL2, aff=affinity(req=[
         term("region", Exists("service"), DoesNotExist("wrongkey")),
         term("region", In("service", "securityscan"), NotIn("service", "WrongValue"))])),
     [_existing()], None, None),
    ("match expressions are ANDed so one failing expression fails the affinity",
     pod(labels=POD_LABEL2, aff=affinity(req=[
         term("region", Exists("service"), DoesNotExist("wrongkey")),
         term("region", In("service", "securityscan2"), NotIn("service", "WrongValue"))])),
     [_existing()], None, UNRES),
    ("affinity and anti-affinity are both satisfied by the existing pod",
     pod(labels=POD_LABEL2, aff=affinity(req=[term("region", In("service", "securityscan", "value2"))],
                                         anti_req=[term("node", In("service", "antivirusscan", "value2"))])),
     [_existing()], None, None),
    ("affinity, anti-affinity and the existing pod's anti-affinity are all satisfied",
     pod(labels=POD_LABEL2, aff=affinity(req=[term("region", In("service", "securityscan", "value2"))],
                                         anti_req=[term("node", In("service", "antivirusscan", "value2"))])),
     [pod(labels=POD_LABEL, node="node1", aff=affinity(anti_req=[term("node", In("service", "antivirusscan",
                                                                                    "value2"))]))],
     None, None),
    ("affinity is satisfied but the incoming anti-affinity matches the existing pod",
     pod(labels=POD_LABEL2, aff=affinity(req=[term("region", In("service", "securityscan", "value2"))],
                                         anti_req=[term("zone", In("service", "securityscan", "value2"))])),
     [_existing()], None, UNSCHED_ANTI),
    ("affinity and anti-affinity are satisfied but the existing pod's anti-affinity matches the incoming pod",
     pod(labels=POD_LABEL, aff=affinity(req=[term("region", In("service", "securityscan", "value2"))],
                                        anti_req=[term("node", In("service", "antivirusscan", "value2"))])),
     [pod(labels=POD_LABEL, node="node1", aff=affinity(anti_req=[term("zone", In("service", "securityscan",
                                                                                    "value2"))]))],
     None, UNSCHED_EXISTING),
    ("a pod matching its own NotIn affinity term fails when a matching pod runs elsewhere",
     pod(labels=POD_LABEL, aff=affinity(req=[term("region", NotIn("service", "securityscan", "value2"))])),
     [pod(labels=POD_LABEL, node="node2")], None, UNRES),
    ("the existing pod's anti-affinity rejects a pod without anti-affinity of its own",
     pod(labels=POD_LABEL),
     [pod(labels=POD_LABEL, node="node1", aff=affinity(anti_req=[term("zone", In("service", "securityscan",
                                                                                    "value2"))]))],
     None, UNSCHED_EXISTING),
    ("an existing pod's anti-affinity that does not match the incoming pod skips the plugin",
     pod(labels=POD_LABEL),
     [pod(labels=POD_LABEL, node="node1", aff=affinity(anti_req=[term("zone", NotIn("service", "securityscan",
                                                                                       "value2"))]))],
     SKIP, None),
    ("the incoming anti-affinity matches the existing pod while the existing pod's does not match back",
     pod(labels=POD_LABEL, aff=affinity(anti_req=[term("region", Exists("service")), term("region", Exists("security"))])),
     [pod(labels=POD_LABEL2, node="node1", aff=affinity(anti_req=[term("zone", Exists("security"))]))],
     None, UNSCHED_ANTI),
    ("anti-affinity symmetry a1: the incoming pod's terms partially match the existing pod",
     pod(labels=POD_LABEL, aff=affinity(anti_req=[term("zone", Exists("service")), term("zone", Exists("security"))])),
     [pod(labels=POD_LABEL2, node="node1", aff=affinity(anti_req=[term("zone", Exists("security"))]))],
     None, UNSCHED_ANTI),
    ("anti-affinity symmetry a2: the existing pod's terms partially match the incoming pod",
     pod(labels=POD_LABEL2, aff=affinity(anti_req=[term("zone", Exists("security"))])),
     [pod(labels=POD_LABEL, node="node1", aff=affinity(anti_req=[term("zone", Exists("service")),
                                                                  term("zone", Exists("security"))]))],
     None, UNSCHED_EXISTING),
    ("anti-affinity symmetry b1: both pods partially match each other and the incoming terms win",
     pod(labels={"abc": "", "xyz": ""}, aff=affinity(anti_req=[term("zone", Exists("abc")), term("zone", Exists("def"))])),
     [pod(labels={"def": "", "xyz": ""}, node="node1",
          aff=affinity(anti_req=[term("zone", Exists("abc")), term("zone", Exists("def"))]))],
     None, UNSCHED_ANTI),
    ("anti-affinity symmetry b2: both pods partially match each other and the incoming terms win",
     pod(labels={"def": "", "xyz": ""}, aff=affinity(anti_req=[term("zone", Exists("abc")), term("zone", Exists("def"))])),
     [pod(labels={"abc": "", "xyz": ""}, node="node1",
          aff=affinity(anti_req=[term("zone", Exists("abc")), term("zone", Exists("def"))]))],
     None, UNSCHED_ANTI),
    ("affinity with a namespace selector matches a pod of a selected namespace",
     pod(labels=POD_LABEL2, aff=affinity(req=[term("region", In("service", "securityscan", "value2"),
                                                   ns_selector={"matchExpressions": [In("team", "team1")]})])),
     [pod(labels=POD_LABEL, node="node1", ns="subteam1.team1")], None, None),
    ("affinity with a namespace selector ignores a pod of an unselected namespace",
     pod(labels=POD_LABEL2, aff=affinity(req=[term("region", In("service", "securityscan", "value2"),
                                                   ns_selector={"matchExpressions": [In("team", "team1")]})])),
     [pod(labels=POD_LABEL, node="node1", ns="subteam1.team2")], None, UNRES),
    ("anti-affinity with a namespace selector matches a pod of a selected namespace",
     pod(labels=POD_LABEL2, ns="subteam1.team1",
         aff=affinity(anti_req=[term("zone", In("service", "securityscan", "value2"),
                                     ns_selector={"matchExpressions": [In("team", "team1")]})])),
     [pod(labels=POD_LABEL, node="node1", ns="subteam2.team1")], None, UNSCHED_ANTI),
    ("anti-affinity with an empty namespace selector matches pods of every namespace",
     pod(labels=POD_LABEL2, ns="subteam1.team1",
         aff=affinity(anti_req=[term("zone", In("service", "securityscan", "value2"), ns_selector={})])),
     [pod(labels=POD_LABEL, node="node1", ns="subteam2.team1")], None, UNSCHED_ANTI),
    ("anti-affinity with a namespace selector ignores a pod of an unselected namespace",
     pod(labels=POD_LABEL2, ns="subteam1.team1",
         aff=affinity(anti_req=[term("zone", In("service", "securityscan", "value2"),
                                     ns_selector={"matchExpressions": [In("team", "team1")]})])),
     [pod(labels=POD_LABEL, node="node1", ns="subteam1.team2")], None, None),
]


@pytest.mark.parametrize(("incoming", "pods", "want_pre", "want"), [c[1:] for c in SINGLE_NODE],
                         ids=[c[0] for c in SINGLE_NODE])
def test_required_affinity_single_node(incoming: Pod, pods: list[Pod], want_pre: Status | None,
                                       want: Status | None) -> None:
    pre, statuses = run_filter(incoming, pods, [node("node1", LABELS1)])
    assert pre == want_pre
    if pre is None:
        assert statuses == [want]


CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}


def _abc(name: str, zone: str = "z1", region: str = "r1") -> Node:
    return node(name, {"region": region, "zone": zone, "hostname": name})


MULTI_NODE: list[tuple[str, Pod, list[Pod], list[Node], Status | None, list[Status | None]]] = [
    ("nodes sharing the topology value of a node with a matching pod all fit",
     pod(aff=affinity(req=[term("region", In("foo", "bar"))])),
     [pod(name="p1", node="node1", labels={"foo": "bar"})],
     [node("node1", CHINA), node("node2", CHINA_AZ1), node("node3", INDIA)],
     None, [None, None, UNRES]),
    ("the first pod of a collection with zone affinity to itself can go to any node",
     pod(labels={"foo": "bar", "service": "securityscan"},
         aff=affinity(req=[term("zone", In("foo", "bar")), term("zone", In("service", "securityscan"))])),
     [pod(name="p1", node="nodeA", labels={"foo": "bar"})],
     [node("nodeA", {"zone": "az1", "hostname": "h1"}), node("nodeB", {"zone": "az2", "hostname": "h2"})],
     None, [None, None]),
    ("the first pod of a collection can only go to nodes having the topology keys",
     pod(labels={"foo": "bar", "service": "securityscan"},
         aff=affinity(req=[term("zone", In("foo", "bar")), term("zone", In("service", "securityscan"))])),
     [pod(name="p1", node="nodeA", labels={"foo": "bar"})],
     [node("nodeA", {"zoneLabel": "az1", "hostname": "h1"}), node("nodeB", {"zoneLabel": "az2", "hostname": "h2"})],
     None, [UNRES, UNRES]),
    ("anti-affinity rejects every node sharing the region of a matching pod",
     pod(aff=affinity(anti_req=[term("region", In("foo", "abc"))])),
     [pod(node="nodeA", labels={"foo": "abc"})],
     [node("nodeA", {"region": "r1", "hostname": "nodeA"}), node("nodeB", {"region": "r1", "hostname": "nodeB"})],
     None, [UNSCHED_ANTI, UNSCHED_ANTI]),
    ("anti-affinity matches a pod when any of its terms matches",
     pod(aff=affinity(anti_req=[term("region", In("foo", "abc")), term("zone", In("service", "securityscan"))])),
     [pod(node="nodeA", labels={"foo": "abc", "service": "securityscan"})],
     [node("nodeA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
      node("nodeB", {"region": "r1", "zone": "z2", "hostname": "nodeB"})],
     None, [UNSCHED_ANTI, UNSCHED_ANTI]),
    ("anti-affinity rejects the region of a matching pod but not another region",
     pod(aff=affinity(anti_req=[term("region", In("foo", "abc"))])),
     [pod(node="nodeA", labels={"foo": "abc"})],
     [node("nodeA", CHINA), node("nodeB", CHINA_AZ1), node("nodeC", INDIA)],
     None, [UNSCHED_ANTI, UNSCHED_ANTI, None]),
    ("anti-affinity ignores a pod in another namespace whose own anti-affinity targets another namespace",
     pod(ns="NS1", labels={"foo": "123"}, aff=affinity(anti_req=[term("region", In("foo", "bar"))])),
     [pod(node="nodeA", ns="NS1", labels={"foo": "bar"}),
      pod(node="nodeC", ns="NS2", aff=affinity(anti_req=[term("region", In("foo", "123"))]))],
     [node("nodeA", CHINA), node("nodeB", CHINA_AZ1), node("nodeC", INDIA)],
     None, [UNSCHED_ANTI, UNSCHED_ANTI, None]),
    ("an existing anti-affinity term whose topology key no node has is ignored",
     pod(labels={"foo": ""}),
     [pod(node="nodeA", aff=affinity(anti_req=[term("invalid-node-label", Exists("foo"))]))],
     [_abc("nodeA"), _abc("nodeB")], SKIP, []),
    ("an incoming anti-affinity term whose topology key no node has is ignored",
     pod(node="nodeA", aff=affinity(anti_req=[term("invalid-node-label", Exists("foo"))])),
     [pod(node="nodeA", labels={"foo": ""})],
     [_abc("nodeA"), _abc("nodeB")], None, [None, None]),
    ("each existing pod's anti-affinity rejects the incoming pod on every node",
     pod(labels={"foo": "", "bar": ""}),
     [pod(node="nodeA", aff=affinity(anti_req=[term("zone", Exists("foo"))])),
      pod(node="nodeA", aff=affinity(anti_req=[term("region", Exists("bar"))]))],
     [_abc("nodeA"), _abc("nodeB", zone="z2")], None, [UNSCHED_EXISTING, UNSCHED_EXISTING]),
    ("the incoming anti-affinity violated by at least one existing pod rejects every node",
     pod(aff=affinity(anti_req=[term("zone", Exists("foo")), term("region", Exists("bar"))])),
     [pod(node="nodeA", labels={"foo": ""}), pod(node="nodeB", labels={"bar": ""})],
     [_abc("nodeA"), _abc("nodeB", zone="z2")], None, [UNSCHED_ANTI, UNSCHED_ANTI]),
    ("an existing anti-affinity term counts only when both selector and topology key match",
     pod(labels={"foo": "", "bar": ""}),
     [pod(node="nodeA", aff=affinity(anti_req=[term("invalid-node-label", Exists("foo")),
                                               term("zone", Exists("bar"))]))],
     [_abc("nodeA"), _abc("nodeB", zone="z2")], None, [UNSCHED_EXISTING, None]),
    ("an incoming anti-affinity term counts only when both selector and topology key match",
     pod(aff=affinity(anti_req=[term("invalid-node-label", Exists("foo")), term("zone", Exists("bar"))])),
     [pod(name="podA", node="nodeA", labels={"foo": "", "bar": ""})],
     [_abc("nodeA"), _abc("nodeB", zone="z2")], None, [UNSCHED_ANTI, None]),
    ("existing anti-affinity terms with valid topology keys each count",
     pod(labels={"foo": "", "bar": ""}),
     [pod(node="nodeA", aff=affinity(anti_req=[term("region", Exists("foo")), term("zone", Exists("bar"))]))],
     [_abc("nodeA"), _abc("nodeB", zone="z2")], None, [UNSCHED_EXISTING, UNSCHED_EXISTING]),
    ("incoming anti-affinity terms with valid topology keys each count",
     pod(aff=affinity(anti_req=[term("region", Exists("foo")), term("zone", Exists("bar"))])),
     [pod(node="nodeA", labels={"foo": "", "bar": ""})],
     [_abc("nodeA"), _abc("nodeB", zone="z2")], None, [UNSCHED_ANTI, UNSCHED_ANTI]),
    ("existing pods on two nodes whose anti-affinity matches leave only the third zone",
     pod(labels={"foo": "", "bar": ""}),
     [pod(node="nodeA", aff=affinity(anti_req=[term("zone", Exists("foo")), term("zone", Exists("labelA"))])),
      pod(node="nodeB", aff=affinity(anti_req=[term("zone", Exists("bar")), term("zone", Exists("labelB"))]))],
     [_abc("nodeA"), _abc("nodeB", zone="z2"), _abc("nodeC", zone="z3")], None,
     [UNSCHED_EXISTING, UNSCHED_EXISTING, None]),
    ("all affinity terms matched by one pod satisfy every node of the topology",
     pod(aff=affinity(req=[term("region", Exists("foo")), term("zone", Exists("bar"))])),
     [pod(name="pod1", labels={"foo": "", "bar": ""}, node="nodeA")],
     [_abc("nodeA"), _abc("nodeB")], None, [None, None]),
    ("affinity terms must all be matched by the same pod",
     pod(aff=affinity(req=[term("region", Exists("foo")), term("zone", Exists("bar"))])),
     [pod(name="pod1", node="nodeA", labels={"foo": ""}), pod(name="pod2", node="nodeB", labels={"bar": ""})],
     [_abc("nodeA"), _abc("nodeB", zone="z2")], None, [UNRES, UNRES]),
]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "want_pre", "want"), [c[1:] for c in MULTI_NODE],
                         ids=[c[0] for c in MULTI_NODE])
def test_required_affinity_multiple_nodes(incoming: Pod, pods: list[Pod], nodes: list[Node],
                                          want_pre: Status | None, want: list[Status | None]) -> None:
    pre, statuses = run_filter(incoming, pods, nodes, [Namespace(ObjectMeta(name="NS1"))])
    assert pre == want_pre
    if pre is None:
        assert statuses == want


def test_filter_without_pre_filter_state_is_an_error() -> None:
    handle = handle_for([node("n1")], [])
    pl = new(None, handle)
    ni = handle.snapshot.get("n1")
    assert ni is not None
    st = pl.filter(CycleState(), pod(), ni)
    assert st is not None and st.code == Code.ERROR
    assert st.message == 'error reading "PreFilterInterPodAffinity" from cycleState: not found'


# ------------------------------------------------------------------ AddPod / RemovePod
L1 = {"region": "r1", "zone": "z11"}
L2 = {"region": "r1", "zone": "z12"}
L3 = {"region": "r2", "zone": "z21"}
SEL1 = {"foo": "bar"}
ANTI_FOO_BAR = [term("region", In("foo", "bar"))]
COMPLEX = [term("region", In("foo", "bar", "buzz")), term("zone", NotIn("service", "bar", "security", "test"))]


def _nodes3() -> list[Node]:
    return [node("nodeA", L1), node("nodeB", L2), node("nodeC", L3)]


ADD_REMOVE: list[tuple[str, Pod, list[Pod], Pod, dict[tuple[str, str], int], dict[tuple[str, str], int]]] = [
    ("anti-affinity counts follow a pod added and removed on another node of the region",
     pod(name="pending", labels=SEL1, aff=affinity(anti_req=ANTI_FOO_BAR)),
     [pod(name="p1", labels=SEL1, node="nodeA"), pod(name="p2", node="nodeC", aff=affinity(anti_req=ANTI_FOO_BAR))],
     pod(name="addedPod", labels=SEL1, node="nodeB", aff=affinity(anti_req=ANTI_FOO_BAR)),
     {("region", "r1"): 2}, {}),
    ("complex anti-affinity counts follow a pod added and removed on the same node",
     pod(name="pending", labels=SEL1, aff=affinity(anti_req=COMPLEX)),
     [pod(name="p1", labels=SEL1, node="nodeA"), pod(name="p2", node="nodeC", aff=affinity(anti_req=ANTI_FOO_BAR))],
     pod(name="addedPod", labels=SEL1, node="nodeA", aff=affinity(anti_req=COMPLEX)),
     {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1}, {}),
    ("affinity counts follow a pod added and removed",
     pod(name="pending", labels=SEL1, aff=affinity(req=COMPLEX)),
     [pod(name="p1", labels=SEL1, node="nodeA"),
      pod(name="p2", node="nodeC", aff=affinity(req=COMPLEX, anti_req=ANTI_FOO_BAR))],
     pod(name="addedPod", labels=SEL1, node="nodeA", aff=affinity(anti_req=COMPLEX)),
     {}, {("region", "r1"): 2, ("zone", "z11"): 2}),
]


def _pre_filter_state(incoming: Pod, pods: list[Pod]) -> tuple[InterPodAffinity, CycleState, Any]:
    handle = handle_for(_nodes3(), pods)
    pl = new(None, handle)
    cs = CycleState()
    _, st = pl.pre_filter(cs, incoming)
    assert st is None
    return pl, cs, handle


def _maps(s: PreFilterState) -> tuple[dict[Any, int], ...]:
    return s.existing_anti_affinity_counts, s.affinity_counts, s.anti_affinity_counts


@pytest.mark.parametrize(("pending", "existing", "added", "want_anti", "want_affinity"), [c[1:] for c in ADD_REMOVE],
                         ids=[c[0] for c in ADD_REMOVE])
def test_pre_filter_state_add_remove_pod(pending: Pod, existing: list[Pod], added: Pod,
                                         want_anti: dict[tuple[str, str], int],
                                         want_affinity: dict[tuple[str, str], int]) -> None:
    _, all_cs, _ = _pre_filter_state(pending, [*existing, added])
    pl, cs, handle = _pre_filter_state(pending, existing)
    original = cs.read(KEY).clone()
    ni = handle.snapshot.get(added.node_name)
    assert pl.add_pod(cs, pending, PodInfo(added), ni) is None
    state = cs.read(KEY)
    assert state.anti_affinity_counts == want_anti
    assert state.affinity_counts == want_affinity
    assert _maps(state) == _maps(all_cs.read(KEY))
    assert pl.remove_pod(cs, pending, PodInfo(added), ni) is None
    assert _maps(cs.read(KEY)) == _maps(original)


def test_add_pod_without_pre_filter_state_is_an_error() -> None:
    handle = handle_for([node("n1")], [])
    pl = new(None, handle)
    ni = handle.snapshot.get("n1")
    assert ni is not None
    st = pl.add_pod(CycleState(), pod(), PodInfo(pod(node="n1")), ni)
    assert st is not None and st.code == Code.ERROR


def test_pre_filter_state_clone_is_deep_enough_for_add_pod() -> None:
    incoming = pod(labels=SEL1, aff=affinity(anti_req=ANTI_FOO_BAR))
    pl, cs, handle = _pre_filter_state(incoming, [pod(labels=SEL1, node="nodeA")])
    cloned = cs.clone()
    assert _maps(cloned.read(KEY)) == _maps(cs.read(KEY))
    assert cloned.read(KEY) is not cs.read(KEY)
    pl.add_pod(cloned, incoming, PodInfo(pod(labels=SEL1, node="nodeC")), handle.snapshot.get("nodeC"))
    assert cs.read(KEY).anti_affinity_counts == {("region", "r1"): 1}
    assert cloned.read(KEY).anti_affinity_counts == {("region", "r1"): 1, ("region", "r2"): 1}


def test_added_nominated_pod_changes_the_batch_result() -> None:
    incoming = pod(labels=SEL1, aff=affinity(anti_req=[term("zone", In("foo", "bar"))]))
    pl, cs, handle = _pre_filter_state(incoming, [pod(labels=SEL1, node="nodeA")])
    table = handle.snapshot.table
    infos = [handle.snapshot.get(n) for n in ("nodeA", "nodeB", "nodeC")]
    rows = np.array([ni.index for ni in infos], np.int64)
    assert list(pl.filter_batch(cs, incoming, table, rows)) == [False, True, True]
    cloned = cs.clone()
    pl.add_pod(cloned, incoming, PodInfo(pod(labels=SEL1, node="nodeB")), infos[1])
    assert list(pl.filter_batch(cloned, incoming, table, rows)) == [False, False, True]
    assert [pl.filter(cloned, incoming, ni) for ni in infos] == [UNSCHED_ANTI, UNSCHED_ANTI, None]
    assert list(pl.filter_batch(cs, incoming, table, rows)) == [False, True, True]


# ------------------------------------------------------------------ incoming counts
def _normal(*labels: str) -> Pod:
    return pod(name="normal", node="nodeA", labels=dict.fromkeys(labels, ""))


INCOMING: list[tuple[str, list[Pod], Pod, dict[tuple[str, str], int], dict[tuple[str, str], int]]] = [
    ("no existing pod and no terms give empty maps", [], pod(name="aaa-normal"), {}, {}),
    ("an incoming pod without affinity gives empty maps", [_normal("aaa")], pod(name="aaa-normal"), {}, {}),
    ("no pod has a label the incoming terms select",
     [_normal("bbb")], pod(aff=affinity(req=[term("hostname", Exists("aaa"))], anti_req=[term("hostname", Exists("aaa"))])),
     {}, {}),
    ("an existing pod matching a single affinity and anti-affinity term is counted in both",
     [_normal("aaa")], pod(aff=affinity(req=[term("hostname", Exists("aaa"))], anti_req=[term("hostname", Exists("aaa"))])),
     {("hostname", "nodeA"): 1}, {("hostname", "nodeA"): 1}),
    ("an existing pod matching several affinity terms counts once per term",
     [_normal("aaa", "bbb")],
     pod(aff=affinity(req=[term("hostname", Exists("aaa")), term("hostname", Exists("bbb"))],
                      anti_req=[term("hostname", Exists("aaa"))])),
     {("hostname", "nodeA"): 2}, {("hostname", "nodeA"): 1}),
    ("an existing pod matching only some affinity terms counts for anti-affinity only",
     [_normal("aaa")],
     pod(aff=affinity(req=[term("hostname", Exists("aaa")), term("hostname", Exists("bbb"))],
                      anti_req=[term("hostname", Exists("aaa")), term("hostname", Exists("bbb"))])),
     {}, {("hostname", "nodeA"): 1}),
    ("an existing pod violating one of several anti-affinity terms is counted once (case 1)",
     [_normal("aaa", "bbb")],
     pod(aff=affinity(req=[term("hostname", Exists("aaa")), term("hostname", Exists("ccc"))],
                      anti_req=[term("hostname", Exists("aaa")), term("hostname", Exists("ccc"))])),
     {}, {("hostname", "nodeA"): 1}),
    ("an existing pod violating one of several anti-affinity terms is counted once (case 2)",
     [_normal("bbb")],
     pod(aff=affinity(req=[term("hostname", Exists("aaa")), term("hostname", Exists("bbb"))],
                      anti_req=[term("hostname", Exists("aaa")), term("hostname", Exists("bbb"))])),
     {}, {("hostname", "nodeA"): 1}),
]


@pytest.mark.parametrize(("existing", "incoming", "want_affinity", "want_anti"), [c[1:] for c in INCOMING],
                         ids=[c[0] for c in INCOMING])
def test_incoming_affinity_anti_affinity_counts(existing: list[Pod], incoming: Pod,
                                               want_affinity: dict[tuple[str, str], int],
                                               want_anti: dict[tuple[str, str], int]) -> None:
    handle = handle_for([node("nodeA", {"hostname": "nodeA"})], existing)
    pl = new(None, handle)
    cs = CycleState()
    _, st = pl.pre_filter(cs, incoming)
    s = cs.get(KEY)
    got = (s.affinity_counts, s.anti_affinity_counts) if s is not None else ({}, {})
    assert got == (want_affinity, want_anti)
    assert (st == SKIP) == (s is None)


# ------------------------------------------------------------------ plugin surface
def test_plugin_surface() -> None:
    # The registered events (both releases) are checked in test_queueing_hints.py.
    pl = new(None, handle_for([], []))
    assert pl.name == "InterPodAffinity"
    assert pl.pre_filter_extensions() is pl
