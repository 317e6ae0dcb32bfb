"""SchedulingGates' 1.36 queueing hint (scheduling_gates.go: EventsToRegister,
isSchedulableAfterUpdatePodSchedulingGatesEliminated): only the gated pod's own update counts."""

from __future__ import annotations

from typing import Any

import pytest
from builders import make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.features import FEATURES_1_30, FEATURES_1_36
from kubesched.framework import GVK, ActionType, QueueingHint
from kubesched.objects import Pod
from kubesched.plugins import schedulinggates

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def test_v1_30_registers_nothing() -> None:
    assert schedulinggates.new(None, FrameworkHandle.for_nodes([], features=FEATURES_1_30)).events_to_register() == []


def test_1_36_registers_the_pods_own_gates_eliminated_update() -> None:
    pl = schedulinggates.new(None, FrameworkHandle.for_nodes([], features=FEATURES_1_36))
    [ev] = pl.events_to_register()
    assert (ev.event.resource, ev.event.action_type) == (GVK.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    assert getattr(ev.hint, "__name__", None) == "is_schedulable_after_update_pod_scheduling_gates_eliminated"
    assert getattr(ev.hint, "__self__", None) is pl


def pod(uid: str, *gates: str) -> Pod:
    b = make_pod().name("p").uid(uid)
    for g in gates:
        b = b.scheduling_gate(g)
    return b.obj()


CASES = [
    ("the pod's own gates removed queues", pod("uid", "g"), pod("uid", "g"), pod("uid"), Q),
    ("another pod's gates removed is skipped", pod("uid", "g"), pod("other", "g"), pod("other"), SKIP),
    ("a new object that is not a pod queues", pod("uid", "g"), None, "not-a-pod", Q),
    ("an old object that is not a pod queues", pod("uid", "g"), "not-a-pod", pod("uid"), Q),
]


@pytest.mark.parametrize(("target", "old", "new", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_is_schedulable_after_update_pod_scheduling_gates_eliminated(target: Pod, old: Any, new: Any,
                                                                     want: QueueingHint) -> None:
    pl = schedulinggates.new(None, FrameworkHandle.for_nodes([]))
    assert pl.is_schedulable_after_update_pod_scheduling_gates_eliminated(target, old, new) == want
