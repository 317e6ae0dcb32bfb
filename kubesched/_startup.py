"""The ``kubesched`` command's pause of the cyclic garbage collector while it starts (see
:mod:`kubesched._entry`, which pauses it): :func:`startup_done` resumes it. A module of its own,
below every layer, so that ``kubesched run``'s scheduling loop (kubesched.live.command) can end
the pause without importing the command line."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable

_paused = False
_lock = threading.Lock()
_then: list[Callable[[], None]] = []


def pause(*then: Callable[[], None]) -> None:
    """Pause garbage collection until :func:`startup_done`, which then calls ``then``."""
    global _paused
    with _lock:
        gc.disable()
        _paused = True
        _then[:] = then


def startup_done() -> None:
    """Resume garbage collection if :func:`pause` paused it; what exists by now lives as long as
    the process, so it is frozen out of later collections (gc.freeze) rather than rescanned.
    Called from any thread (``kubesched run``'s scheduling loop, or its timer): only the first
    call does anything."""
    global _paused
    with _lock:
        resume = _paused
        _paused = False
        then = list(_then)
    if resume:
        gc.freeze()
        gc.enable()
        for call in then:
            call()
