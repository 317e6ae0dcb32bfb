"""Shared builders for the scheduling-queue tests: pods, a queue over the real PrioritySort
(and, when asked, a real Framework running PreEnqueue plugins), and the "pop then fail"
steps upstream's tests repeat."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from builders import make_pod

from kubesched._queue import FakeClock, SchedulingQueue
from kubesched._queue.events import RegisteredEvent
from kubesched._runtime.framework import Framework
from kubesched._runtime.handle import FrameworkHandle
from kubesched.framework import QueuedPodInfo, Status
from kubesched.objects import Pod
from kubesched.plugins import defaultbinder, queuesort, schedulinggates

START = 1000.0
LOW, MID, HIGH = 0, 100, 1000
MEDIUM = (LOW + HIGH) // 2


def pod(name: str, ns: str = "ns1", priority: int | None = None, nominated: str = "", **extra: Any) -> Pod:
    b = make_pod().name(name).namespace(ns)
    if priority is not None:
        b = b.priority(priority)
    if nominated:
        b = b.nominated(nominated)
    for key, value in extra.get("labels", {}).items():
        b = b.label(key, value)
    for gate in extra.get("gates", ()):
        b = b.scheduling_gate(gate)
    if "affinity" in extra:
        b = b.affinity(extra["affinity"])
    if "node" in extra:
        b = b.node(extra["node"])
    return b.obj()


class AllowlistPreEnqueue:
    """upstream's test preEnqueuePlugin: admits a pod carrying one of the listed labels."""

    name = "preEnqueuePlugin"

    def __init__(self, *allowlist: str) -> None:
        self.allowlist = allowlist

    def events_to_register(self) -> list[Any]:
        return []

    def pre_enqueue(self, p: Pod) -> Status | None:
        if any(label in p.labels for label in self.allowlist):
            return None
        return Status.unresolvable("pod name not in allowlists")


def framework(pre_enqueue: Sequence[Any] = ()) -> Framework:
    """A real Framework: PrioritySort, the given PreEnqueue plugins, DefaultBinder."""
    handle = FrameworkHandle.for_nodes([])
    points = {"QueueSort": [queuesort.new(None, handle)], "PreEnqueue": list(pre_enqueue),
              "Bind": [defaultbinder.new(None, handle)]}
    return Framework("default-scheduler", points, {}, handle)


def scheduling_gates() -> Any:
    return schedulinggates.new(None, FrameworkHandle.for_nodes([]))


def new_queue(events: Mapping[str, Sequence[RegisteredEvent]] | None = None, *, pre_enqueue: Sequence[Any] = (),
              clock: FakeClock | None = None, **kw: Any) -> SchedulingQueue:
    fw = framework(pre_enqueue)
    return SchedulingQueue(fw.less, fw.run_pre_enqueue_plugins, clock or FakeClock(START), events_by_plugin=events,
                           **kw)


def fail(q: SchedulingQueue, pinfo: QueuedPodInfo, *plugins: str, pending: Sequence[str] = (),
         cycle: int | None = None) -> None:
    """The scheduler's failure handler: record the rejectors, put the pod back."""
    pinfo.unschedulable_plugins |= set(plugins)
    pinfo.pending_plugins |= set(pending)
    q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle if cycle is None else cycle)


def pop_expect(q: SchedulingQueue, p: Pod) -> QueuedPodInfo:
    got = q.pop()
    assert got is not None, f"activeQ empty, wanted {p.key}"
    assert got.pod is p, f"popped {got.pod.key}, wanted {p.key}"
    return got


def add_and_fail(q: SchedulingQueue, p: Pod, *plugins: str, pending: Sequence[str] = ()) -> QueuedPodInfo:
    """Add, pop (it must come out first) and fail with the given rejectors."""
    q.add(p)
    pinfo = pop_expect(q, p)
    fail(q, pinfo, *plugins, pending=pending)
    return pinfo

