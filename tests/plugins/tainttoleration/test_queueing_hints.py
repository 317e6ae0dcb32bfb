"""TaintToleration's 1.36 queueing hints (taint_toleration.go: EventsToRegister,
isSchedulableAfterNodeChange, isSchedulableAfterPodTolerationChange): the rows of upstream
taint_toleration_test.go TestIsSchedulableAfterNodeChange and
Test_isSchedulableAfterTargetPodTolerationChange, plus the other-pod branch of the source."""

from __future__ import annotations

from typing import Any

import pytest
from builders import make_node, make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.features import FEATURES_1_30, FEATURES_1_36
from kubesched.framework import GVK, ActionType, ClusterEventWithHint, QueueingHint
from kubesched.objects import Node, Pod
from kubesched.plugins import tainttoleration

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def shape(events: list[ClusterEventWithHint]) -> list[tuple[str, ActionType, str | None]]:
    return [(e.event.resource, e.event.action_type, getattr(e.hint, "__name__", None)) for e in events]


def node(*taints: tuple[str, str, str]) -> Node:
    b = make_node().name("nodeA").capacity(cpu="1", pods=10)
    for key, value, effect in taints:
        b = b.taint(key, value, effect)
    return b.obj()


def pod(uid: str = "pod1", *tolerations: dict[str, Any]) -> Pod:
    b = make_pod().name("pod1").uid(uid)
    for t in tolerations:
        b = b.toleration(**t)
    return b.obj()


USER2 = {"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}


def test_v1_30_registration_is_unchanged() -> None:
    pl = tainttoleration.new(None, FrameworkHandle.for_nodes([], features=FEATURES_1_30))
    assert shape(pl.events_to_register()) == [(GVK.NODE, ActionType.ADD | ActionType.UPDATE, None)]


def test_1_36_registration_is_upstreams() -> None:
    pl = tainttoleration.new(None, FrameworkHandle.for_nodes([], features=FEATURES_1_36))
    events = pl.events_to_register()
    assert shape(events) == [
        (GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT, "is_schedulable_after_node_change"),
        (GVK.POD, ActionType.UPDATE_POD_TOLERATION, "is_schedulable_after_pod_toleration_change"),
    ]
    assert all(getattr(e.hint, "__self__", None) is pl for e in events)


NODE_CASES = [
    ("a new object that is not a node queues", pod(), None, "not-a-node", Q),
    ("an old object that is not a node queues", pod(), "not-a-node", node(("dedicated", "user1", "NoSchedule")), Q),
    ("an added node with an untolerated taint is skipped", pod("pod1", USER2), None,
     node(("dedicated", "user1", "NoSchedule")), SKIP),
    ("an added node whose taint is tolerated queues", pod("pod1", USER2), None,
     node(("dedicated", "user2", "NoSchedule")), Q),
    ("an unrelated taint change is skipped", pod("pod1", USER2), node(("dedicated", "user1", "NoSchedule")),
     node(("dedicated", "user1", "NoSchedule"), ("dedicated", "user3", "NoSchedule")), SKIP),
    ("a taint change that makes the node tolerated queues", pod("pod1", USER2),
     node(("dedicated", "user1", "NoSchedule")), node(("dedicated", "user2", "NoSchedule")), Q),
    ("a node that was already tolerated is skipped", pod("pod1", USER2), node(),
     node(("dedicated", "user2", "NoSchedule")), SKIP),
    ("a PreferNoSchedule taint never blocks", pod(), None, node(("dedicated", "user1", "PreferNoSchedule")), Q),
    ("an untolerated NoExecute taint removed queues", pod(), node(("k", "", "NoExecute")), node(), Q),
]


@pytest.mark.parametrize(("target", "old", "new", "want"), [c[1:] for c in NODE_CASES],
                         ids=[c[0] for c in NODE_CASES])
def test_is_schedulable_after_node_change(target: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    pl = tainttoleration.new(None, FrameworkHandle.for_nodes([]))
    assert pl.is_schedulable_after_node_change(target, old, new) == want


FOO = {"key": "foo", "effect": "NoSchedule"}
POD_CASES = [
    ("the pod's own toleration added queues", pod("uid1"), pod("uid1"), pod("uid1", FOO), Q),
    ("another pod's toleration added is skipped", pod("uid1"), pod("uid2"), pod("uid2", FOO), SKIP),
    ("a new object that is not a pod queues", pod("uid1"), None, "not-a-pod", Q),
    ("an old object that is not a pod queues", pod("uid1"), "not-a-pod", pod("uid1", FOO), Q),
]


@pytest.mark.parametrize(("target", "old", "new", "want"), [c[1:] for c in POD_CASES], ids=[c[0] for c in POD_CASES])
def test_is_schedulable_after_pod_toleration_change(target: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    pl = tainttoleration.new(None, FrameworkHandle.for_nodes([]))
    assert pl.is_schedulable_after_pod_toleration_change(target, old, new) == want
