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
imported and at exit, and runs numpy's BLAS (OpenBLAS) on one thread unless the environment
says otherwise: OpenBLAS starts a thread per core when numpy is imported (~60 ms of a restarted
``kubesched run``'s start on two cores, more threads and memory on a big control-plane node),
and kubesched does no linear algebra that more threads would speed up (its numpy work is
element-wise). numpy's shared libraries are mapped by a thread of their own as the command
starts (the dynamic loader runs without the GIL, on another core), so that numpy's import only
initialises them.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading

from kubesched._startup import pause, startup_done

__all__ = ["main", "startup_done"]

# What OpenBLAS reads for its thread count, in its order: any of them set is the user's choice.
_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def _save_code_cache() -> None:
    from kubesched import _code_cache

    _code_cache.save()


def _numpy_extension() -> str | None:
    """The file of numpy's core extension module (numpy 2's ``_core``, numpy 1's ``core``)
    where the import system would find numpy (the first ``sys.path`` entry holding it), or
    None; found without importing anything."""
    from importlib.machinery import EXTENSION_SUFFIXES

    for entry in sys.path:
        package = os.path.join(entry or ".", "numpy")
        if not os.path.isfile(os.path.join(package, "__init__.py")):
            continue
        for core in ("_core", "core"):
            for suffix in EXTENSION_SUFFIXES:
                path = os.path.join(package, core, "_multiarray_umath" + suffix)
                if os.path.isfile(path):
                    return path
        return None
    return None


def _load_numpy_extension() -> None:
    """Map numpy's core extension module and the libraries it links (OpenBLAS among them) into
    the process: the dynamic loader's work, during which ctypes' dlopen lets the interpreter
    run other threads. numpy's import later finds the library loaded and only initialises it.
    Nothing is lost if this fails: the import loads it as ever."""
    path = _numpy_extension()
    if path is None:
        return
    try:
        import _ctypes

        _ctypes.dlopen(path, sys.getdlopenflags())
    except (ImportError, OSError, AttributeError):  # no ctypes, or a library numpy's import will report
        pass


def main() -> None:
    # The code compiled while starting is saved when collection resumes.
    pause(_save_code_cache)
    if not any(os.environ.get(name) for name in _BLAS_THREADS):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"  # read when numpy loads OpenBLAS, later in this process
    # numpy's shared libraries are mapped on the machine's other core while this thread imports
    # the command line (~5-15 ms of a restarted kubesched run's start, out of its way).
    threading.Thread(target=_load_numpy_extension, name="numpy-preload", daemon=True).start()
    from kubesched import _code_cache

    _code_cache.install()
    atexit.register(_code_cache.save)
    from kubesched.cli import main as command

    command()
