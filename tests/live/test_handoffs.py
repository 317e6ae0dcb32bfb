"""Fewer thread hand-offs per bound pod in live mode: the scheduling loop woken only when the
activeQ has a pod for it, a binding worker writing its pod's Scheduled event itself when the
broadcaster can take it at once (TokenBucket.try_acquire), and the same API calls either way."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from kubesched.cluster.live import (
    ADD,
    ASSIGNED_PODS,
    PENDING_PODS,
    ApiClient,
    Change,
    ClusterConfig,
    EventBroadcaster,
    LiveCluster,
    TokenBucket,
)
from kubesched.live.runner import LiveScheduler
from kubesched.objects.parse import parse_pod
from kubesched.testing.apiserver import LocalApiServer

from .apihelpers import pod, wait_until


# ------------------------------------------------------------------------------- TokenBucket
class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        raise AssertionError(f"try_acquire waited {seconds} s")


BUCKETS = [
    ("a token in the bucket is taken at once", 10.0, 2, 1, [True]),
    ("an empty bucket refuses without waiting", 10.0, 1, 1, [True, False, False]),
    ("a qps of 0 never limits", 0.0, 1, 0, [True, True, True]),
]


@pytest.mark.parametrize("qps, burst, spent, expected", [b[1:] for b in BUCKETS], ids=[b[0] for b in BUCKETS])
def test_try_acquire_takes_a_token_only_if_one_is_there_now(qps: float, burst: int, spent: int,
                                                            expected: list[bool]) -> None:
    clock = _Clock()
    bucket = TokenBucket(qps, burst, clock=clock, sleep=clock.sleep)
    assert [bucket.try_acquire() for _ in expected] == expected
    if qps > 0:
        # Refusals borrowed nothing: the next token is one refill away, not more.
        assert bucket.reserve() == pytest.approx(0.0 if burst > spent else 1.0 / qps)


# ------------------------------------------------------------------------------- events
def _writers_of_events(client: ApiClient) -> list[str]:
    """The threads that sent each events request (a test probe on the client)."""
    names: list[str] = []

    def hook(request: httpx.Request) -> None:
        if "/events" in request.url.path:
            names.append(threading.current_thread().name)

    client._http.event_hooks["request"].append(hook)  # noqa: SLF001 - the probe the fault matrix uses
    return names


def _empty(limiter: TokenBucket) -> None:
    assert limiter.try_acquire()


def _keep(limiter: TokenBucket) -> None:
    pass


WRITES = [
    ("an event its caller may write is written by the caller when a token is there", True, _keep, "caller"),
    ("an event its caller may write goes to a writer when the bucket is empty", True, _empty, "writer"),
    ("an event its caller may not write goes to a writer", False, _keep, "writer"),
]


@pytest.mark.parametrize("write, prepare, by", [w[1:] for w in WRITES], ids=[w[0] for w in WRITES])
def test_who_writes_an_event(write: bool, prepare: Callable[[TokenBucket], None], by: str) -> None:
    clock = {"now": 0.0}

    def advance(seconds: float) -> None:  # the writer's wait for a token, without waiting
        clock["now"] += seconds

    limiter = TokenBucket(1.0, 1, clock=lambda: clock["now"], sleep=advance)
    with LocalApiServer() as api, ApiClient(ClusterConfig(server=api.url), qps=0) as client:
        p = parse_pod(api.create(pod("p")))
        writers = _writers_of_events(client)
        rec = EventBroadcaster(client, limiter=limiter)
        prepare(limiter)
        assert rec.event(p, None, "Normal", "Scheduled", "Binding", "bound", write=write)
        assert rec.flush(10.0)
        rec.stop()
        assert [e["note"] for e in api.objects("events")] == ["bound"]
        caller = threading.current_thread().name
        assert len(writers) == 1
        assert (writers[0] == caller) == (by == "caller"), writers


def test_repeats_written_by_their_callers_still_make_a_series() -> None:
    with LocalApiServer() as api, ApiClient(ClusterConfig(server=api.url), qps=0) as client:
        p = parse_pod(api.create(pod("p")))
        writers = _writers_of_events(client)
        rec = EventBroadcaster(client)
        for i in range(3):
            assert rec.event(p, None, "Warning", "FailedScheduling", "Scheduling", f"try {i}", write=True)
        assert rec.flush(5.0)
        rec.stop()
        evs = api.objects("events")
        assert len(evs) == 1 and evs[0]["note"] == "try 0" and evs[0]["series"]["count"] == 2
        assert len(api.calls("create", "events")) == 1 and len(api.calls("patch", "events")) == 1
        assert writers == [threading.current_thread().name] * 2


# ------------------------------------------------------------------------------- the loop's wake-ups
class _CountingCondition(threading.Condition):
    def __init__(self) -> None:
        super().__init__(threading.Lock())
        self.notified = 0

    def notify_all(self) -> None:
        self.notified += 1
        super().notify_all()


def _pending(name: str) -> Any:
    raw = pod(name)
    raw["metadata"].update(uid=f"uid-{name}", resourceVersion="1")
    return parse_pod(raw)


def _assigned(name: str) -> Any:
    raw = pod(name, node_name="n1")
    raw["metadata"].update(uid=f"uid-{name}", resourceVersion="1")
    return parse_pod(raw)


CHANGES = [
    ("a pending pod added wakes the scheduling loop", Change(PENDING_PODS, ADD, None, _pending("a")), 0, 1),
    ("an assigned pod added with nothing to schedule wakes nobody", Change(ASSIGNED_PODS, ADD, None, _assigned("b")),
     0, 0),
    ("any change wakes threads waiting for one", Change(ASSIGNED_PODS, ADD, None, _assigned("c")), 1, 1),
]


@pytest.mark.parametrize("change, waiters, notified", [c[1:] for c in CHANGES], ids=[c[0] for c in CHANGES])
def test_an_informer_change_wakes_only_who_needs_it(change: Change, waiters: int, notified: int) -> None:
    with ApiClient(ClusterConfig(server="http://127.0.0.1:9"), qps=0) as client:
        sched = LiveScheduler(None, LiveCluster(client))
        cond = _CountingCondition()
        sched._cond = cond  # noqa: SLF001 - count the wake-ups
        sched._change_waiters = waiters  # noqa: SLF001 - as a binding cycle waiting at Permit
        with cond:
            sched._on_change(change)  # noqa: SLF001 - as an informer calls it
        assert cond.notified == notified


def test_a_binding_cycle_waiting_for_a_change_is_woken_by_one() -> None:
    with ApiClient(ClusterConfig(server="http://127.0.0.1:9"), qps=0) as client:
        sched = LiveScheduler(None, LiveCluster(client))
        woken = threading.Event()

        def wait() -> None:
            with sched.lock:
                sched._local.holds_lock = True  # noqa: SLF001 - as in a binding cycle
                sched._wait_unlocked(60.0)  # noqa: SLF001 - VolumeBinding waiting for the PV controller
                sched._local.holds_lock = False  # noqa: SLF001
            woken.set()

        waiter = threading.Thread(target=wait, daemon=True)
        waiter.start()
        wait_until(lambda: sched._change_waiters == 1, what="the waiter")  # noqa: SLF001
        with sched.lock:
            sched._on_change(Change(ASSIGNED_PODS, ADD, None, _assigned("d")))  # noqa: SLF001
        waiter.join(30.0)
        assert woken.is_set()
