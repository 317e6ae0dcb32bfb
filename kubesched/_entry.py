"""The ``kubesched`` executable: the console script and ``python -m kubesched``.

It only pauses the cyclic garbage collector while the command's modules load. Start-up creates
a few hundred thousand objects that live as long as the process (modules, classes, the methods
dataclasses generate, pydantic's validators), and the collector would walk them again and again
while they are made: ~40 ms, a tenth of a restarted ``kubesched run``'s time to its first bind
(kube-scheduler binds again ~0.24 s after its process starts). The command resumes collection
with :func:`startup_done` (kubesched._startup) once its modules are imported; ``kubesched run`` once its scheduling
loop's first attempt and its binding cycle are done (its informers' stores and cache, built
meanwhile, cost the collector another ~50 ms), or after at most a few seconds (kubesched.live.command).

It also installs the bytecode cache of the methods dataclasses generate and the programs
regular expressions compile to (:mod:`kubesched._code_cache`), written when the modules are
imported and at exit, and
runs numpy's BLAS (OpenBLAS) on one thread unless the environment says otherwise: OpenBLAS
starts a thread per core when numpy is imported (~60 ms of a restarted ``kubesched run``'s
start on two cores, more threads and memory on a big control-plane node), and kubesched does
no linear algebra that more threads would speed up (its numpy work is element-wise).
"""

from __future__ import annotations

import atexit
import os

from kubesched._startup import pause, startup_done

__all__ = ["main", "startup_done"]

# What OpenBLAS reads for its thread count, in its order: any of them set is the user's choice.
_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def _save_code_cache() -> None:
    from kubesched import _code_cache

    _code_cache.save()


def main() -> None:
    # The code compiled while starting is saved when collection resumes.
    pause(_save_code_cache)
    if not any(os.environ.get(name) for name in _BLAS_THREADS):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"  # read when numpy loads OpenBLAS, later in this process
    from kubesched import _code_cache

    _code_cache.install()
    atexit.register(_code_cache.save)
    from kubesched.cli import main as command

    command()
