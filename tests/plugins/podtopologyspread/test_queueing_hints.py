"""PodTopologySpread's 1.36 queueing hints (upstream plugin_test.go Test_isSchedulableAfterNodeChange
and Test_isSchedulableAfterPodChange, plus rows for the toleration, taint and default-constraint
branches those tables leave out) and its registrations under both releases."""

from __future__ import annotations

from typing import Any

import pytest
from builders import PodBuilder, make_node, make_pod, obj

from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.config.args import LIST_DEFAULTING, SYSTEM_DEFAULTING, PodTopologySpreadArgs
from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features
from kubesched.framework import GVK, ActionType, QueueingHint
from kubesched.objects import Node, Pod, Service, TopologySpreadConstraint
from kubesched.plugins.podtopologyspread import PodTopologySpread, new

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
FOO: dict[str, Any] = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR: dict[str, Any] = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
LIST = PodTopologySpreadArgs(defaulting_type=LIST_DEFAULTING)


def plugin(features: Features = FEATURES_1_36, *, args: PodTopologySpreadArgs = LIST,
           services: tuple[Service, ...] = ()) -> PodTopologySpread:
    handle = FrameworkHandle.for_nodes([], [], MemoryObjects(services=services), features=features)
    return new(args, handle)


def target(*constraints: tuple[str, dict[str, Any]], **extra: Any) -> PodBuilder:
    """st.MakePod().Name("p").Label("foo", "").SpreadConstraint(1, key, DoNotSchedule, selector)..."""
    b = make_pod().name("p").label("foo", "")
    for key, sel in constraints:
        b = b.spread(1, key, "DoNotSchedule", sel, **extra)
    return b


ZONE = target(("zone", FOO)).obj()
ZONE_NODE = target(("zone", FOO), ("node", FOO)).obj()
ZONE_FOO_NODE_BAR = target(("zone", FOO), ("node", BAR)).obj()


def node(**labels: str) -> Node:
    return make_node().name("node-a").labels(labels).obj()


def tainted(**labels: str) -> Node:
    return make_node().name("node-a").labels(labels).taint("k", "v").obj()


NODE_CASES = [
    pytest.param(ZONE, node(zone="zone1"), node(zone="zone2"), Q,
                 id="a node changing the topology key's value queues the pod"),
    pytest.param(ZONE, node(foo="bar1"), node(foo="bar2"), SKIP,
                 id="a node outside the constraints changing an unrelated label is skipped"),
    pytest.param(ZONE_NODE, node(zone="zone1", node="node1", foo="bar"), node(zone="zone1", node="node1"), SKIP,
                 id="a node in the topology losing an unrelated label is skipped"),
    pytest.param(ZONE, None, node(foo="bar"), SKIP, id="a new node without the topology key is skipped"),
    pytest.param(ZONE, None, node(zone="zone1"), Q, id="a new node with the topology key queues the pod"),
    pytest.param(ZONE, node(foo="bar"), None, SKIP, id="a deleted node without the topology key is skipped"),
    pytest.param(ZONE, node(zone="zone1"), None, Q, id="a deleted node with the topology key queues the pod"),
    pytest.param(ZONE_NODE, None, node(zone="zone1"), SKIP,
                 id="a new node with only one of two topology keys is skipped"),
    pytest.param(ZONE_NODE, None, node(zone="zone1", node="node1"), Q,
                 id="a new node with every topology key queues the pod"),
    pytest.param(ZONE_NODE, node(zone="zone1"), node(zone="zone1"), SKIP,
                 id="an unchanged node with only one of two topology keys is skipped"),
    pytest.param(ZONE_NODE, node(zone="zone1", node="node1"), node(zone="zone1", node="node2"), Q,
                 id="a node with every topology key changing one's value queues the pod"),
    # Branches the upstream table leaves out.
    pytest.param(ZONE, node(zone="zone1"), node(foo="bar"), Q,
                 id="a node losing the topology key queues the pod"),
    pytest.param(ZONE, node(zone="zone1"), tainted(zone="zone1"), Q,
                 id="a node in the topology whose taints change queues the pod"),
    pytest.param(ZONE, node(foo="a"), tainted(foo="a"), SKIP,
                 id="a node outside the topology whose taints change is skipped"),
]


@pytest.mark.parametrize(("pod", "old", "new_", "want"), NODE_CASES)
def test_is_schedulable_after_node_change(pod: Pod, old: Node | None, new_: Node | None, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_node_change(pod, old, new_) == want


def other(*labels: tuple[str, str], node_name: str = "fake-node", namespace: str = "default") -> Pod:
    b = make_pod().name("other").namespace(namespace)
    for k, v in labels:
        b = b.label(k, v)
    if node_name:
        b = b.node(node_name)
    return b.obj()


POD_CASES = [
    pytest.param(ZONE, None, other(("foo", "")), Q, id="an added pod matching the selector queues the pod"),
    pytest.param(ZONE, None, other(("foo", ""), node_name=""), SKIP, id="an added unscheduled pod is skipped"),
    pytest.param(ZONE, other(("bar", ""), node_name=""), other(("foo", ""), node_name=""), SKIP,
                 id="an unscheduled pod's update is skipped"),
    pytest.param(ZONE, other(("foo", ""), node_name=""), None, SKIP, id="a deleted unscheduled pod is skipped"),
    pytest.param(ZONE, None, other(("foo", ""), namespace="fake-namespace"), SKIP,
                 id="an added pod of another namespace is skipped"),
    pytest.param(ZONE, None, other(("bar", "")), SKIP, id="an added pod not matching the selector is skipped"),
    pytest.param(ZONE, other(("foo", "")), None, Q, id="a deleted pod matching the selector queues the pod"),
    pytest.param(ZONE, other(("bar", "")), None, SKIP, id="a deleted pod not matching the selector is skipped"),
    pytest.param(ZONE, other(("foo", ""), ("bar", "bar1")), other(("foo", ""), ("bar", "bar2")), SKIP,
                 id="a pod changing an unrelated label is skipped"),
    pytest.param(ZONE, other(), other(("foo", "")), Q, id="a pod gaining a label the selector needs queues the pod"),
    pytest.param(ZONE, other(("foo", "")), other(), Q, id="a pod losing a label the selector needs queues the pod"),
    pytest.param(ZONE, other(("foo", "foo1")), other(("foo", "foo2")), SKIP,
                 id="a pod changing the value of a label the selector only needs to exist is skipped"),
    pytest.param(ZONE_FOO_NODE_BAR, other(("foo", "")), other(("foo", ""), ("bar", "bar2")), Q,
                 id="a pod starting to match a second constraint's selector queues the pod"),
    pytest.param(ZONE_FOO_NODE_BAR, other(("foo", "")), other(("foo", ""), ("baz", "")), SKIP,
                 id="a pod gaining a label no constraint selects on is skipped"),
    pytest.param(ZONE_FOO_NODE_BAR, other(("foo", ""), ("bar", "")), other(("foo", ""), ("bar", "bar2")), SKIP,
                 id="a pod matching both selectors before and after is skipped"),
    # The pod's own toleration update (UpdatePodToleration), which upstream's table leaves out.
    pytest.param(target(("zone", FOO), nodeTaintsPolicy="Honor").obj(),
                 target(("zone", FOO), nodeTaintsPolicy="Honor").obj(),
                 target(("zone", FOO), nodeTaintsPolicy="Honor").toleration(key="k", operator="Exists").obj(), Q,
                 id="a new toleration of the pod with a Honor taints policy queues it"),
    pytest.param(ZONE, ZONE, target(("zone", FOO)).toleration(key="k", operator="Exists").obj(), SKIP,
                 id="a new toleration of the pod whose constraints ignore taints is skipped"),
]


@pytest.mark.parametrize(("pod", "old", "new_", "want"), POD_CASES)
def test_is_schedulable_after_pod_change(pod: Pod, old: Pod | None, new_: Pod | None, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_pod_change(pod, old, new_) == want


SERVICE = obj({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc", "namespace": "default"},
               "spec": {"selector": {"foo": ""}}})
ZONE_DEFAULT = TopologySpreadConstraint(max_skew=1, topology_key="zone", when_unsatisfiable="DoNotSchedule")


@pytest.mark.parametrize(("args", "want"), [
    pytest.param(PodTopologySpreadArgs(default_constraints=(ZONE_DEFAULT,), defaulting_type=LIST_DEFAULTING), Q,
                 id="a DoNotSchedule default constraint selects the pod's service's pods"),
    pytest.param(PodTopologySpreadArgs(defaulting_type=SYSTEM_DEFAULTING), SKIP,
                 id="the System defaults are ScheduleAnyway and select nothing for the hint"),
])
def test_a_pod_without_constraints_uses_the_default_ones(args: PodTopologySpreadArgs, want: QueueingHint) -> None:
    """getConstraints falls back to the default constraints, with the pod's default selector."""
    pl = plugin(args=args, services=(SERVICE,))
    pod = make_pod().name("p").label("foo", "").obj()
    assert pl.is_schedulable_after_pod_change(pod, None, other(("foo", ""))) == want


def registrations(pl: PodTopologySpread) -> list[tuple[str, ActionType, str | None]]:
    return [(e.event.resource, e.event.action_type, getattr(e.hint, "__name__", None))
            for e in pl.events_to_register()]


def test_the_v1_30_registration_is_unchanged() -> None:
    assert registrations(plugin(FEATURES_1_30)) == [
        (GVK.POD, ActionType.ALL, None),
        (GVK.NODE, ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT,
         None),
    ]


def test_the_1_36_registration_is_upstream_s() -> None:
    pl = plugin(FEATURES_1_36)
    assert registrations(pl) == [
        (GVK.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.UPDATE_POD_TOLERATION | ActionType.DELETE,
         "is_schedulable_after_pod_change"),
        (GVK.NODE, ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT,
         "is_schedulable_after_node_change"),
    ]
    assert all(getattr(e.hint, "__self__", None) is pl for e in pl.events_to_register())
