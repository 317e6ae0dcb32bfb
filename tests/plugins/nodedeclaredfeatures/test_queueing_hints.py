"""NodeDeclaredFeatures' queueing hints (nodedeclaredfeatures.go: EventsToRegister,
isSchedulableAfterNodeChange, isSchedulableAfterPodUpdate), written from the branches of the
1.36 source (its tests are not vendored)."""

from __future__ import annotations

from typing import Any

import pytest
from builders import make_node, make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features
from kubesched.framework import GVK, ActionType, ClusterEventWithHint, QueueingHint
from kubesched.objects import Node, Pod
from kubesched.objects.parse import parse_node
from kubesched.plugins import nodedeclaredfeatures

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
RESTART_ALL = [{"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}]


def shape(events: list[ClusterEventWithHint]) -> list[tuple[str, ActionType, str | None]]:
    return [(e.event.resource, e.event.action_type, getattr(e.hint, "__name__", None)) for e in events]


def plugin(features: Features = FEATURES_1_36) -> nodedeclaredfeatures.NodeDeclaredFeatures:
    return nodedeclaredfeatures.new(None, FrameworkHandle.for_nodes([], features=features))


def node(*declared: str, listed: bool = True) -> Node:
    m = make_node().name("n").capacity(cpu="1", pods=10).manifest()
    if listed:
        m["status"]["declaredFeatures"] = list(declared)
    return parse_node(m)


def pod(uid: str = "uid", *, restart_all: bool = False, host_network_userns: bool = False) -> Pod:
    b = make_pod().name("p").uid(uid).container("img")
    if restart_all:
        b.m["spec"]["containers"][0]["restartPolicyRules"] = RESTART_ALL
    if host_network_userns:
        b.m["spec"]["hostNetwork"] = True
        b.m["spec"]["hostUsers"] = False
    return b.obj()


def test_v1_30_registration_is_unchanged() -> None:
    assert shape(plugin(FEATURES_1_30).events_to_register()) == [
        (GVK.NODE, ActionType.ADD | ActionType.UPDATE, None), (GVK.POD, ActionType.UPDATE, None)]


def test_1_36_registration_is_upstreams() -> None:
    pl = plugin()
    events = pl.events_to_register()
    assert shape(events) == [
        (GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE, "is_schedulable_after_node_change"),
        (GVK.POD, ActionType.UPDATE, "is_schedulable_after_pod_update"),
    ]
    assert all(getattr(e.hint, "__self__", None) is pl for e in events)


def test_a_disabled_plugin_registers_nothing() -> None:
    assert plugin(Features(FEATURES_1_36.version, {"NodeDeclaredFeatures": False})).events_to_register() == []


NODE_CASES = [
    ("a new object that is not a node queues", None, "not-a-node", Q),
    ("an old object that is not a node queues", "not-a-node", node(), Q),
    ("an added node queues", None, node(), Q),
    ("an update keeping the declared features is skipped", node("A", "B"), node("A", "B"), SKIP),
    ("a declared feature added queues", node("A"), node("A", "B"), Q),
    ("the declared features reordered queue (slices.Equal)", node("A", "B"), node("B", "A"), Q),
    ("an absent and an empty list are equal", node(listed=False), node(), SKIP),
]


@pytest.mark.parametrize(("old", "new", "want"), [c[1:] for c in NODE_CASES], ids=[c[0] for c in NODE_CASES])
def test_is_schedulable_after_node_change(old: Any, new: Any, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_node_change(pod(), old, new) == want


POD_CASES = [
    ("another pod's update is skipped", pod("uid"), pod("other"), pod("other", restart_all=True), SKIP),
    ("the pod's update keeping its required features is skipped", pod("uid", restart_all=True),
     pod("uid", restart_all=True), pod("uid", restart_all=True), SKIP),
    ("the pod's update changing its required features queues", pod("uid", restart_all=True),
     pod("uid", restart_all=True), pod("uid"), Q),
    ("the pod's update adding a required feature queues", pod("uid"), pod("uid"),
     pod("uid", host_network_userns=True), Q),
    ("a new object that is not a pod queues", pod("uid"), None, "not-a-pod", Q),
    ("an old object that is not a pod queues", pod("uid"), "not-a-pod", pod("uid"), Q),
]


@pytest.mark.parametrize(("target", "old", "new", "want"), [c[1:] for c in POD_CASES], ids=[c[0] for c in POD_CASES])
def test_is_schedulable_after_pod_update(target: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_pod_update(target, old, new) == want
