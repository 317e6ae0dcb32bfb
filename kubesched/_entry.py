"""The ``kubesched`` executable: the console script and ``python -m kubesched``.

It only pauses the cyclic garbage collector while the command's modules load. Start-up creates
a few hundred thousand objects that live as long as the process (modules, classes, the methods
dataclasses generate, pydantic's validators), and the collector would walk them again and again
while they are made: ~40 ms, a tenth of a restarted ``kubesched run``'s time to its first bind
(kube-scheduler binds again ~0.24 s after its process starts). The command resumes collection
with :func:`startup_done` once its modules are imported.

It also installs the bytecode cache of the methods dataclasses generate
(:mod:`kubesched._dataclass_code`), written when the modules are imported and at exit.
"""

from __future__ import annotations

import atexit
import gc

_paused = False


def main() -> None:
    global _paused
    gc.disable()
    _paused = True
    from kubesched import _dataclass_code

    _dataclass_code.install()
    atexit.register(_dataclass_code.save)
    from kubesched.cli import main as command

    command()


def startup_done() -> None:
    """Resume garbage collection if :func:`main` paused it; what exists by now lives as long as
    the process, so it is frozen out of later collections (gc.freeze) rather than rescanned."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
        from kubesched import _dataclass_code

        _dataclass_code.save()
