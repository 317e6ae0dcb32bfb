"""Clocks for the scheduling queue (k8s.io/utils/clock: Clock, RealClock, testing.FakeClock).

Times are float seconds. The queue only ever asks ``now()``; a simulation drives a
:class:`FakeClock` and jumps it to :meth:`SchedulingQueue.next_event_time`.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    def now(self) -> float:
        """The current time in seconds."""
        ...


class RealClock:
    """Wall-clock time (Go's time.Now), seconds since the epoch."""

    def now(self) -> float:
        return time.time()

    def __repr__(self) -> str:
        return "RealClock()"


class FakeClock:
    """A clock that only moves when told to (testingclock.FakeClock: SetTime / Step)."""

    __slots__ = ("_t",)

    def __init__(self, t: float = 0.0) -> None:
        self._t = float(t)

    def now(self) -> float:
        return self._t

    def set(self, t: float) -> None:
        """SetTime. Moving backwards is allowed (tests), as upstream's fake clock allows it."""
        self._t = float(t)

    def step(self, dt: float) -> None:
        """Step: advance by ``dt`` seconds."""
        self._t += dt

    def __repr__(self) -> str:
        return f"FakeClock({self._t!r})"
