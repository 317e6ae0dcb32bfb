"""Handing freed C-heap memory back to the operating system, now and then.

kube-scheduler's RSS follows its live heap because Go's runtime has a background scavenger
(runtime/mgcscavenge.go) that returns free pages to the OS. A CPython process has none for
the C heap: Python's small objects live in pymalloc's arenas (returned when empty), but large
lists, dict tables and numpy arrays come from the C allocator, and glibc keeps the pages of
freed chunks resident unless they sit at the top of the heap. Worse, glibc raises its mmap
threshold each time a large mmapped block is freed (the "dynamic mmap threshold"), so after a
while every dict table of a 50,000-pod map is carved out of the heap; as those tables are
resized and freed, holes of free but resident pages accumulate. Measured on the soak
(kubesched.soak, 5,000 nodes, 1,000,000 arrivals): the C heap's in-use bytes stay flat (~30
MiB) while the free part kept by glibc wandered between 1 and 13 MiB, and RSS with it.

:class:`Scavenger` calls glibc's ``malloc_trim(0)`` (which since glibc 2.8 releases every
whole free page anywhere in the heap, not only at its top) at most once per ``interval``
seconds of wall time; it costs 0.1-0.4 ms on that heap. Elsewhere than glibc it does nothing.
It is process housekeeping, not scheduling: it reads the wall clock even in a simulation on
the virtual clock, and changes no decision.
"""

from __future__ import annotations

import ctypes
import functools
import time
from collections.abc import Callable
from typing import Any

# Wall seconds between two trims: like Go's scavenger, often enough that freed memory does
# not linger for minutes, rarely enough to cost nothing measurable.
SCAVENGE_INTERVAL = 10.0


class _MallInfo2(ctypes.Structure):
    # glibc's struct mallinfo2 (malloc.h, glibc >= 2.33): all size_t.
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                "fsmblks", "uordblks", "fordblks", "keepcost")]


@functools.cache
def _libc_function(name: str, restype: Any, argtypes: tuple[Any, ...]) -> Any:
    """The C library's function ``name``, typed; None when it has none (not glibc: musl,
    macOS, Windows; or a glibc too old)."""
    try:
        fn = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


def release_free_memory() -> bool:
    """Return the C heap's free pages to the OS now (glibc ``malloc_trim(0)``); True if some
    memory was released, False if none was or the C library has no such call."""
    trim = _libc_function("malloc_trim", ctypes.c_int, (ctypes.c_size_t,))
    return bool(trim(0)) if trim is not None else False


def c_heap_bytes() -> tuple[int, int] | None:
    """The C heap's (bytes in use, bytes free but kept by the allocator), from glibc's
    ``mallinfo2``: in use = the heap's allocated chunks plus the mmapped ones; free = the heap's
    free chunks, whether or not a trim gave their pages back. None without mallinfo2."""
    info = _libc_function("mallinfo2", _MallInfo2, ())
    if info is None:
        return None
    m = info()
    return int(m.uordblks) + int(m.hblkhd), int(m.fordblks)


class Scavenger:
    """Calls ``release`` (default :func:`release_free_memory`) from :meth:`tick` at most once
    per ``interval`` seconds of ``clock``; the scheduling loops tick it once per cycle."""

    __slots__ = ("interval", "_clock", "_release", "_next", "runs")

    def __init__(self, interval: float = SCAVENGE_INTERVAL, *, clock: Callable[[], float] = time.monotonic,
                 release: Callable[[], object] = release_free_memory) -> None:
        self.interval = interval
        self._clock = clock
        self._release = release
        self._next = clock() + interval
        self.runs = 0

    def tick(self) -> None:
        now = self._clock()
        if now < self._next:
            return
        self._next = now + self.interval
        self.runs += 1
        self._release()


__all__ = ["SCAVENGE_INTERVAL", "Scavenger", "c_heap_bytes", "release_free_memory"]
