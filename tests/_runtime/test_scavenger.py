"""The scavenger: freed C-heap pages go back to the OS at most once per interval of the clock
it is given, from the scheduling loops' ticks."""

from __future__ import annotations

import ctypes
import sys

import pytest

from kubesched._runtime.scavenger import Scavenger, release_free_memory
from kubesched.soak import rss_bytes


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("advances, runs", [
    pytest.param([1.0, 2.0, 3.0], 0, id="ticks within the first interval release nothing"),
    pytest.param([10.0], 1, id="a tick once the interval has passed releases once"),
    pytest.param([10.0, 10.5, 15.0], 1, id="ticks soon after a release wait for the next interval"),
    pytest.param([10.0, 20.0, 30.0], 3, id="one release per interval"),
    pytest.param([1000.0], 1, id="a long quiet time still gives one release, not a burst"),
])
def test_releases_at_most_once_per_interval(advances: list[float], runs: int) -> None:
    clock, calls = _Clock(), []
    s = Scavenger(10.0, clock=clock, release=lambda: calls.append(clock.now))
    start = clock.now
    for a in advances:
        clock.now = start + a
        s.tick()
    assert len(calls) == s.runs == runs


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_freed_holes_in_the_c_heap_leave_the_rss() -> None:
    try:
        ctypes.CDLL(None).malloc_trim  # noqa: B018 - glibc only
    except AttributeError:
        pytest.skip("not glibc")
    # 1 KiB blocks come from the C heap (pymalloc takes 512 bytes at most); keeping one in
    # eight leaves ~7 KiB holes, each holding whole pages glibc keeps resident until trimmed.
    blocks = [bytes(1024) + bytes([i % 251]) for i in range(120_000)]
    kept = blocks[::8]
    del blocks
    before = rss_bytes()
    release_free_memory()
    after = rss_bytes()
    assert before - after > 30 * 2**20, (before, after)
    assert len(kept) == 15_000
