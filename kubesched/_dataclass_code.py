"""A bytecode cache for the methods :mod:`dataclasses` generates, for the ``kubesched`` command.

``@dataclass`` writes each class's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__``... as Python source and compiles it with ``exec`` every time the class is
created, in every process: a compiler run per method that no ``.pyc`` file caches. ``kubesched
run`` creates ~190 dataclasses (~1000 methods) before it can schedule, and those compilations
were ~0.17 s of a restarted scheduler's ~0.6 s of imports (kube-scheduler binds again a few tens
of milliseconds after its process starts).

:func:`install` gives the dataclasses module an ``exec`` of its own (a module global, which its
calls find before the builtin) that compiles a source text only the first time it is seen and
otherwise runs the code compiled before -- the same code: ``exec(text)`` compiles ``text`` as
``compile(text, "<string>", "exec")`` with the dataclasses module's compiler flags, which are
the defaults. The compiled code is kept, as ``.pyc`` files are, next to the package's bytecode
(``kubesched/__pycache__/dataclass-code.<cache tag>.bin``, marked with the interpreter's
bytecode magic number), written by :func:`save` when the process compiled something new unless
bytecode writing is off (``PYTHONDONTWRITEBYTECODE``). An image that runs with bytecode writing
off or a read-only filesystem writes it at build time, after installing the package:
``python -m kubesched._dataclass_code`` (deploy/Containerfile does).

Only the command (:mod:`kubesched._entry`) installs it: ``import kubesched`` in a program of
one's own changes nothing.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import importlib.util
import marshal
import os
import sys
import threading
from pathlib import Path
from types import CodeType
from typing import Any

_MAX_ENTRIES = 20_000  # beyond this many, a save keeps only what this process used (old code's entries go)

_lock = threading.Lock()
_cache: dict[str, CodeType] = {}  # source text -> its code, loaded from the file and compiled since
_used: set[str] = set()  # the texts this process compiled or ran from the cache
_new = 0  # texts compiled since the last save
_installed = False


def cache_file() -> Path | None:
    """Where the cache lives: the package's bytecode directory (``sys.pycache_prefix`` honoured),
    named after the interpreter's cache tag; None when the interpreter caches no bytecode."""
    try:
        pyc = importlib.util.cache_from_source(str(Path(__file__).with_name("__init__.py")))
    except NotImplementedError:  # sys.implementation.cache_tag is None
        return None
    return Path(pyc).with_name(f"dataclass-code.{sys.implementation.cache_tag}.bin")


def _load(path: Path) -> dict[str, CodeType]:
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    magic = importlib.util.MAGIC_NUMBER
    if not data.startswith(magic):  # another interpreter's bytecode: not ours to read
        return {}
    try:
        table = marshal.loads(data[len(magic):])
    except (EOFError, ValueError, TypeError):
        return {}
    # Entries are checked where they are used (_exec), not here: a pass over the ~1000 entries
    # cost ~2 ms of every start, and a key that is no source text is never looked up anyway.
    return table if isinstance(table, dict) else {}


def _exec(source: Any, globals: dict[str, Any] | None = None, locals: Any = None, /) -> None:  # noqa: A002
    """``exec`` for the dataclasses module: a source text is compiled once, then its code reused."""
    global _new
    if not isinstance(source, str):
        builtins.exec(source, globals, locals)
        return
    code = _cache.get(source)
    if type(code) is not CodeType:  # not cached (or a damaged entry: compiled again)
        code = compile(source, "<string>", "exec", dont_inherit=True)
        with _lock:
            _cache[source] = code
            _new += 1
    _used.add(source)
    builtins.exec(code, globals, locals)


def install() -> None:
    """Load the cache file and route the dataclasses module's ``exec`` through it (once)."""
    global _installed
    if _installed:
        return
    _installed = True
    path = cache_file()
    if path is not None:
        _cache.update(_load(path))
    dataclasses.exec = _exec  # type: ignore[attr-defined]  # found before builtins.exec by _create_fn


def uninstall() -> None:
    """Give the dataclasses module the builtin ``exec`` back (tests)."""
    global _installed
    _installed = False
    with contextlib.suppress(AttributeError):
        del dataclasses.exec  # type: ignore[attr-defined]


def save(*, force: bool = False) -> bool:
    """Write the cache when this process compiled something new; not when bytecode writing is off
    (``sys.dont_write_bytecode``) unless ``force``. Never raises: a cache that cannot be written
    is only slower. True when written."""
    global _new
    path = cache_file()
    if path is None or not _new or (sys.dont_write_bytecode and not force):
        return False
    with _lock:
        table = dict(_cache)
        used = set(_used)
        _new = 0
    if len(table) > _MAX_ENTRIES:
        table = {k: v for k, v in table.items() if k in used}
    import tempfile  # only a save needs it

    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(importlib.util.MAGIC_NUMBER)
            f.write(marshal.dumps(table))
        os.chmod(tmp, 0o644)  # readable by whoever runs the command, as .pyc files are
        os.replace(tmp, path)  # atomic: a process starting meanwhile reads the old file or the new one
    except (OSError, ValueError):
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return False
    return True


def main() -> None:
    """``python -m kubesched._dataclass_code``: import what ``kubesched run`` imports before it
    schedules, and write the cache even with bytecode writing off (an image's build step)."""
    install()
    from kubesched._runtime.registry import full_registry
    from kubesched.cli import main as command
    from kubesched.features import features_for
    from kubesched.live import command as run_command
    from kubesched.live import serving

    del command, run_command
    for version in ("1.30", "1.36"):
        full_registry((), features=features_for(version))
    serving.build_app(serving.SchedulerMetrics(), serving.HealthChecks())
    path = cache_file()
    if not save(force=True) and not (path is not None and path.exists()):
        raise SystemExit(f"cannot write the dataclass code cache ({path})")
    print(path)


if __name__ == "__main__":  # pragma: no cover - an image's build step
    main()
