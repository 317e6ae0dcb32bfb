"""DefaultPreemption's 1.36 registration (default_preemption.go: EventsToRegister,
isPodSchedulableAfterPodDeletion): with SchedulerAsyncPreemption, Pod/Delete with a hint that
always Skips; nothing without async preemption or without queueing hints (v1.30)."""

from __future__ import annotations

from builders import make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features
from kubesched.framework import GVK, ActionType, QueueingHint
from kubesched.plugins import defaultpreemption


def test_v1_30_registers_nothing() -> None:
    assert defaultpreemption.new(None, FrameworkHandle.for_nodes([], features=FEATURES_1_30)).events_to_register() == []


def test_1_36_registers_pod_deletion_with_a_hint_that_always_skips() -> None:
    pl = defaultpreemption.new(None, FrameworkHandle.for_nodes([], features=FEATURES_1_36))
    [ev] = pl.events_to_register()
    assert (ev.event.resource, ev.event.action_type) == (GVK.POD, ActionType.DELETE)
    assert getattr(ev.hint, "__name__", None) == "is_pod_schedulable_after_pod_deletion"
    assert ev.hint is not None
    deleted = make_pod().name("victim").node("n").obj()
    assert ev.hint(make_pod().name("p").obj(), deleted, None) == QueueingHint.QUEUE_SKIP


def test_without_async_preemption_nothing_is_registered() -> None:
    features = Features(FEATURES_1_36.version, {"SchedulerAsyncPreemption": False})
    assert defaultpreemption.new(None, FrameworkHandle.for_nodes([], features=features)).events_to_register() == []
