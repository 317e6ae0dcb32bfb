"""The scheduler's lock goes to a binding worker waiting for it before the scheduling loop's next
cycle: Python's locks are not fair, and the loop, releasing the lock and taking it again within
microseconds, kept binding workers waiting for as long as it found pods to schedule."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from kubesched.cluster.live import ApiClient, ClusterConfig, LiveCluster
from kubesched.live import runner
from kubesched.testing.apiserver import LocalApiServer

from .apihelpers import FAST


@pytest.fixture
def sched() -> Iterator[runner.LiveScheduler]:
    with LocalApiServer() as api:
        client = ApiClient(ClusterConfig(server=api.url), qps=0, timeout=10.0)
        try:
            yield runner.LiveScheduler(None, LiveCluster(client, options=FAST), deterministic=True)
        finally:
            client.close()


def test_a_binding_worker_waiting_for_the_lock_takes_it_before_the_loops_next_cycle(
        sched: runner.LiveScheduler) -> None:
    order: list[str] = []
    for _ in range(20):
        order.clear()
        sched._cond.acquire()  # the loop's cycle holds the lock  # noqa: SLF001
        binder = threading.Thread(target=lambda: (sched._acquire_before_the_loop(), order.append("binder"),  # noqa: SLF001
                                                  time.sleep(0.005), sched._cond.release()))  # noqa: SLF001
        binder.start()
        while not sched._wanting:  # noqa: SLF001 - the worker now waits for the lock
            time.sleep(0.0005)
        sched._cond.release()  # the cycle ends  # noqa: SLF001
        sched._give_way()  # the next one begins  # noqa: SLF001
        with sched._cond:  # noqa: SLF001
            order.append("loop")
        binder.join(5)
        assert order == ["binder", "loop"]


def test_the_loop_gives_way_for_at_most_the_limit_when_the_lock_is_held_elsewhere(
        sched: runner.LiveScheduler, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that cannot get the lock (an informer holds it) holds the loop up no longer."""
    monkeypatch.setattr(runner, "GIVE_WAY_LIMIT", 0.1)
    held, release = threading.Event(), threading.Event()

    def informer() -> None:
        with sched._cond:  # noqa: SLF001
            held.set()
            release.wait(5)

    threading.Thread(target=informer, daemon=True).start()
    held.wait(5)
    binder = threading.Thread(target=lambda: (sched._acquire_before_the_loop(), sched._cond.release()),  # noqa: SLF001
                              daemon=True)
    binder.start()
    while not sched._wanting:  # noqa: SLF001
        time.sleep(0.0005)
    started = time.monotonic()
    sched._give_way()  # noqa: SLF001
    waited = time.monotonic() - started
    release.set()
    binder.join(5)
    assert 0.09 <= waited < 1.0
