"""PrioritySort (upstream priority_sort_test.go TestLess, plus ties)."""

from __future__ import annotations

import functools

import pytest
from builders import make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.framework import PodInfo, QueuedPodInfo, QueueSortPlugin
from kubesched.plugins import queuesort
from kubesched.plugins.queuesort import NAME, PrioritySort

LOW, HIGH = 10, 100
T1 = 1_700_000_000.0
T2 = T1 + 1.0


def qpi(priority: int | None, timestamp: float = 0.0, name: str = "p") -> QueuedPodInfo:
    b = make_pod().name(name)
    if priority is not None:
        b = b.priority(priority)
    return QueuedPodInfo(PodInfo(b.obj()), timestamp=timestamp)


def plugin() -> PrioritySort:
    return queuesort.new(None, FrameworkHandle.for_nodes([]))


@pytest.mark.parametrize(
    ("p1", "p2", "expected"),
    [
        (qpi(LOW), qpi(HIGH), False),
        (qpi(HIGH), qpi(LOW), True),
        (qpi(HIGH, T1), qpi(HIGH, T2), True),
        (qpi(HIGH, T2), qpi(HIGH, T1), False),
        (qpi(HIGH, T1), qpi(HIGH, T1), False),
        (qpi(None, T2), qpi(-5, T1), True),
        (qpi(LOW, T1), qpi(HIGH, T2), False),
    ],
    ids=[
        "p1 with lower priority than p2 goes after it",
        "p1 with higher priority than p2 goes first",
        "equal priority and p1 queued earlier goes first",
        "equal priority and p2 queued earlier goes first",
        "equal priority and equal timestamp is not less",
        "unset priority counts as 0 and beats a negative priority",
        "an earlier timestamp does not beat a higher priority",
    ],
)
def test_less(p1: QueuedPodInfo, p2: QueuedPodInfo, expected: bool) -> None:
    assert plugin().less(p1, p2) is expected


def test_sorting_with_less_orders_by_priority_then_timestamp() -> None:
    pl = plugin()
    infos = [qpi(1, 3.0, "a"), qpi(5, 9.0, "b"), qpi(1, 1.0, "c"), qpi(5, 2.0, "d"), qpi(None, 0.0, "e")]

    def cmp(a: QueuedPodInfo, b: QueuedPodInfo) -> int:
        return -1 if pl.less(a, b) else (1 if pl.less(b, a) else 0)

    ordered = sorted(infos, key=functools.cmp_to_key(cmp))
    assert [i.pod.name for i in ordered] == ["d", "b", "c", "a", "e"]


def test_plugin_shape() -> None:
    pl = plugin()
    assert pl.name == NAME == "PrioritySort"
    assert isinstance(pl, QueueSortPlugin)
    assert pl.events_to_register() == []
