"""NodeUnschedulable's 1.36 queueing hints (node_unschedulable.go: EventsToRegister,
isSchedulableAfterNodeChange, isSchedulableAfterPodTolerationChange): the rows of upstream
node_unschedulable_test.go TestIsSchedulableAfterNodeChange and
TestIsSchedulableAfterPodTolerationChange."""

from __future__ import annotations

from typing import Any

import pytest
from builders import make_node, make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.features import FEATURES_1_30, FEATURES_1_36
from kubesched.framework import GVK, ActionType, ClusterEventWithHint, QueueingHint
from kubesched.objects import Node, Pod
from kubesched.plugins import nodeunschedulable
from kubesched.plugins.nodeunschedulable.plugin import TAINT_NODE_UNSCHEDULABLE

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def shape(events: list[ClusterEventWithHint]) -> list[tuple[str, ActionType, str | None]]:
    return [(e.event.resource, e.event.action_type, getattr(e.hint, "__name__", None)) for e in events]


def node(unschedulable: bool, *taints: tuple[str, str]) -> Node:
    b = make_node().name("n").capacity(cpu="1", pods=10).unschedulable(unschedulable)
    for key, effect in taints:
        b = b.taint(key, effect=effect)
    return b.obj()


def pod(uid: str = "uid", *toleration_keys: str) -> Pod:
    b = make_pod().name("p").uid(uid)
    for key in toleration_keys:
        b = b.toleration(key=key, operator="Exists")  # st.MakePod().Toleration(key)
    return b.obj()


def test_v1_30_registration_is_unchanged() -> None:
    pl = nodeunschedulable.new(None, FrameworkHandle.for_nodes([], features=FEATURES_1_30))
    assert shape(pl.events_to_register()) == [(GVK.NODE, ActionType.ADD | ActionType.UPDATE, None)]


def test_1_36_registration_is_upstreams() -> None:
    pl = nodeunschedulable.new(None, FrameworkHandle.for_nodes([], features=FEATURES_1_36))
    events = pl.events_to_register()
    assert shape(events) == [
        (GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT, "is_schedulable_after_node_change"),
        (GVK.POD, ActionType.UPDATE_POD_TOLERATION, "is_schedulable_after_pod_toleration_change"),
    ]
    assert all(getattr(e.hint, "__self__", None) is pl for e in events)


NOT_READY = ("node.kubernetes.io/not-ready", "NoExecute")
NODE_CASES = [
    ("a new object that is not a node queues", None, "not-a-node", Q),
    ("an old object that is not a node queues", "not-a-node", node(True), Q),
    ("an unschedulable node added is skipped", None, node(True), SKIP),
    ("a schedulable node added queues", None, node(False), Q),
    ("an unrelated change of an unschedulable node is skipped", node(True), node(True, NOT_READY), SKIP),
    ("an unrelated change of a schedulable node is skipped", node(False), node(False, NOT_READY), SKIP),
    ("a node becoming schedulable queues", node(True), node(False), Q),
    ("a node becoming unschedulable is skipped", node(False), node(True), SKIP),
]


@pytest.mark.parametrize(("old", "new", "want"), [c[1:] for c in NODE_CASES], ids=[c[0] for c in NODE_CASES])
def test_is_schedulable_after_node_change(old: Any, new: Any, want: QueueingHint) -> None:
    pl = nodeunschedulable.new(None, FrameworkHandle.for_nodes([]))
    assert pl.is_schedulable_after_node_change(pod(), old, new) == want


POD_CASES = [
    ("a new object that is not a pod queues", pod(), None, "not-a-pod", Q),
    ("an old object that is not a pod queues", pod(), "not-a-pod", pod(), Q),
    ("another pod getting the toleration is skipped", pod("uid"), pod("different-uid"),
     pod("different-uid", TAINT_NODE_UNSCHEDULABLE), SKIP),
    ("the pod getting the unschedulable toleration queues", pod("uid"), pod("uid"),
     pod("uid", TAINT_NODE_UNSCHEDULABLE), Q),
    ("the pod getting an unrelated toleration is skipped", pod("uid"), pod("uid"), pod("uid", "unrelated-key"), SKIP),
]


@pytest.mark.parametrize(("target", "old", "new", "want"), [c[1:] for c in POD_CASES], ids=[c[0] for c in POD_CASES])
def test_is_schedulable_after_pod_toleration_change(target: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    pl = nodeunschedulable.new(None, FrameworkHandle.for_nodes([]))
    assert pl.is_schedulable_after_pod_toleration_change(target, old, new) == want
