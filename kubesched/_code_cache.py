"""A bytecode cache, for the ``kubesched`` command, of what CPython compiles anew in every
process and no ``.pyc`` file keeps: the methods :mod:`dataclasses` generates, and the programs
regular expressions compile to.

``@dataclass`` writes each class's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__``... as Python source and compiles it with ``exec`` every time the class is
created, in every process: a compiler run per method. ``kubesched run`` creates ~190 dataclasses
(~1000 methods) before it can schedule, and those compilations were ~0.17 s of a restarted
scheduler's ~0.6 s of imports (kube-scheduler binds again a few tens of milliseconds after its
process starts). :func:`install` gives the dataclasses module an ``exec`` of its own (a module
global, which its calls find before the builtin) that compiles a source text only the first time
it is seen and otherwise runs the code compiled before -- the same code: ``exec(text)`` compiles
``text`` as ``compile(text, "<string>", "exec")`` with the dataclasses module's compiler flags,
which are the defaults.

``re.compile`` parses a pattern and compiles it into a program for the ``_sre`` matching engine,
in Python, the first time a process uses the pattern: ~80 patterns (the libraries' and ours) cost
~28 ms of the same start, a third of it PyYAML's reader's class of printable characters, which
its module compiles at import. :func:`install` routes ``re._compiler.compile`` (what
``re.compile`` calls for a pattern not in its own cache) through the cache, which keeps each
pattern's program -- exactly what ``re._compiler`` hands ``_sre.compile``, recorded by a stand-in
for ``_sre`` in its globals -- and makes the pattern from it with ``_sre.compile``, which checks
the program (it raises on an invalid one, and the pattern is then compiled anew). Programs are
read only by the interpreter build that wrote them (its full ``sys.version`` and ``_sre.MAGIC``:
a patch release may change the parser, not the bytecode magic).

Both are kept, as ``.pyc`` files are, next to the package's bytecode
(``kubesched/__pycache__/start-code.<cache tag>.bin``, marked with the interpreter's bytecode
magic number), written by :func:`save` when the process compiled something new unless bytecode
writing is off (``PYTHONDONTWRITEBYTECODE``). An image that runs with bytecode writing off or a
read-only filesystem writes it at build time, after installing the package: ``python -m
kubesched._code_cache`` (deploy/Containerfile does).

Only the command (:mod:`kubesched._entry`) installs it: ``import kubesched`` in a program of
one's own changes nothing.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib.util
import marshal
import os
import re
import sys
import threading
from types import CodeType
from typing import Any

_MAX_ENTRIES = 20_000  # of either table: beyond, a save keeps only what this process used

# What _sre.compile takes after the pattern: flags, the program, the number of groups, the
# group names' indexes and the index's names (re._compiler.compile).
_Program = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]

_lock = threading.Lock()
_methods: dict[str, CodeType] = {}  # a generated method's source text -> its code
_programs: dict[tuple[str | bytes, int], _Program] = {}  # (pattern, flags) -> its program
_used: set[object] = set()  # the keys (of either table) this process compiled or took from the cache
_new = 0  # entries compiled since the last save
_installed = False

# re._compiler as the interpreter has it (3.11 on); None where it is not as this module knows it.
_re_compiler: Any = getattr(re, "_compiler", None)
if not (hasattr(_re_compiler, "compile") and hasattr(_re_compiler, "_sre") and hasattr(_re_compiler, "SRE_FLAG_DEBUG")):
    _re_compiler = None
_compile_pattern: Any = _re_compiler.compile if _re_compiler is not None else None  # the real one
_sre: Any = _re_compiler._sre if _re_compiler is not None else None  # noqa: SLF001


def _programs_stamp() -> tuple[str, int]:
    """Who may read the programs: the interpreter build and the matching engine's version."""
    return sys.version, int(getattr(_sre, "MAGIC", 0))


def cache_file() -> str | None:
    """Where the cache lives: the package's bytecode directory (``sys.pycache_prefix`` honoured),
    named after the interpreter's cache tag; None when the interpreter caches no bytecode."""
    try:
        pyc = importlib.util.cache_from_source(os.path.join(os.path.dirname(__file__), "__init__.py"))
    except NotImplementedError:  # sys.implementation.cache_tag is None
        return None
    return os.path.join(os.path.dirname(pyc), f"start-code.{sys.implementation.cache_tag}.bin")


def _load(path: str) -> tuple[dict[str, CodeType], dict[tuple[str | bytes, int], _Program]]:
    """The file's two tables; empty ones for a file that is missing, another interpreter's, or
    not a cache. Entries are checked where they are used (_exec, _compile), not here: a pass
    over the ~1000 entries cost ~2 ms of every start, and a key no lookup matches is never used."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return {}, {}
    magic = importlib.util.MAGIC_NUMBER
    if not data.startswith(magic):  # another interpreter's bytecode: not ours to read
        return {}, {}
    try:
        content = marshal.loads(data[len(magic):])
    except (EOFError, ValueError, TypeError):
        return {}, {}
    if not (isinstance(content, tuple) and len(content) == 3 and isinstance(content[0], dict)
            and isinstance(content[2], dict)):
        return {}, {}
    methods, stamp, programs = content
    return methods, (programs if stamp == _programs_stamp() else {})


def _exec(source: Any, globals: dict[str, Any] | None = None, locals: Any = None, /) -> None:  # noqa: A002
    """``exec`` for the dataclasses module: a source text is compiled once, then its code reused."""
    global _new
    if not isinstance(source, str):
        builtins.exec(source, globals, locals)
        return
    code = _methods.get(source)
    if type(code) is not CodeType:  # not cached (or a damaged entry: compiled again)
        code = compile(source, "<string>", "exec", dont_inherit=True)
        with _lock:
            _methods[source] = code
            _new += 1
    _used.add(source)
    builtins.exec(code, globals, locals)


class _ProgramRecorder:
    """Stands in for the ``_sre`` module in ``re._compiler``'s globals: the program
    ``re._compiler.compile`` hands ``_sre.compile`` is kept, per thread, for :func:`_compile`;
    every other name is ``_sre``'s own (copied, so that the compiler's lookups cost no more)."""

    def __init__(self) -> None:
        # (compile is this class's: an instance attribute of that name would hide it)
        self.__dict__.update({k: v for k, v in vars(_sre).items() if not k.startswith("__") and k != "compile"})
        self.local = threading.local()

    def compile(self, *args: Any, **kwargs: Any) -> Any:
        pattern = _sre.compile(*args, **kwargs)  # first: whatever _sre says of the call stands
        if len(args) == 6 and not kwargs:  # (pattern, flags, code, groups, groupindex, indexgroup)
            _, flags, code, groups, groupindex, indexgroup = args
            # The program's opcodes are int subclasses (re._constants' named constants): plain
            # ints for marshal. What does not read so is not kept (another interpreter's call).
            with contextlib.suppress(TypeError, ValueError, AttributeError):
                self.local.program = (int(flags), [int(c) for c in code], int(groups),
                                      {str(k): int(v) for k, v in groupindex.items()}, tuple(indexgroup))
        return pattern


_recorder: _ProgramRecorder | None = None


def _compile(p: Any, flags: int = 0) -> Any:
    """``re._compiler.compile`` through the cache: a pattern's program is compiled once, then
    handed to ``_sre.compile`` as it was the first time."""
    global _new
    if (type(p) is not str and type(p) is not bytes) or flags & _re_compiler.SRE_FLAG_DEBUG or _recorder is None:
        return _compile_pattern(p, flags)  # a parsed pattern (re.Scanner), or DEBUG's printout
    key = (p, int(flags))
    program = _programs.get(key)
    if program is not None:
        try:
            pattern = _sre.compile(p, *program)
        except Exception:  # noqa: BLE001 - not a program _sre takes (a damaged entry): compiled again
            pass
        else:
            _used.add(key)
            return pattern
    _recorder.local.program = None
    pattern = _compile_pattern(p, flags)
    recorded = _recorder.local.program
    if recorded is not None:
        with _lock:
            _programs[key] = recorded
            _new += 1
        _used.add(key)
    return pattern


def install() -> None:
    """Load the cache file and route the dataclasses module's ``exec`` and ``re``'s compiler
    through it (once)."""
    global _installed, _recorder
    if _installed:
        return
    _installed = True
    path = cache_file()
    if path is not None:
        methods, programs = _load(path)
        _methods.update(methods)
        _programs.update(programs)
    # re first: what the dataclasses module imports (inspect, tokenize) compiles patterns.
    if _re_compiler is not None:
        _recorder = _ProgramRecorder()
        _re_compiler._sre = _recorder  # noqa: SLF001
        _re_compiler.compile = _compile
    import dataclasses

    dataclasses.exec = _exec  # type: ignore[attr-defined]  # found before builtins.exec by _create_fn


def uninstall() -> None:
    """Give the dataclasses module the builtin ``exec`` and ``re`` its compiler back (tests)."""
    global _installed, _recorder
    _installed = False
    import dataclasses

    with contextlib.suppress(AttributeError):
        del dataclasses.exec  # type: ignore[attr-defined]
    if _re_compiler is not None and _recorder is not None:
        _re_compiler._sre = _sre  # noqa: SLF001
        _re_compiler.compile = _compile_pattern
        _recorder = None


def save(*, force: bool = False) -> bool:
    """Write the cache when this process compiled something new; not when bytecode writing is off
    (``sys.dont_write_bytecode``) unless ``force``. Never raises: a cache that cannot be written
    is only slower. True when written."""
    global _new
    path = cache_file()
    if path is None or not _new or (sys.dont_write_bytecode and not force):
        return False
    with _lock:
        methods = dict(_methods)
        programs = dict(_programs)
        used = set(_used)
        _new = 0
    if len(methods) > _MAX_ENTRIES:
        methods = {k: v for k, v in methods.items() if k in used}
    if len(programs) > _MAX_ENTRIES:
        programs = {k: v for k, v in programs.items() if k in used}
    import tempfile  # only a save needs it

    tmp: str | None = None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=os.path.basename(path), suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(importlib.util.MAGIC_NUMBER)
            f.write(marshal.dumps((methods, _programs_stamp(), programs)))
        os.chmod(tmp, 0o644)  # readable by whoever runs the command, as .pyc files are
        os.replace(tmp, path)  # atomic: a process starting meanwhile reads the old file or the new one
    except (OSError, ValueError):
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return False
    return True


def main() -> None:
    """``python -m kubesched._code_cache``: import what ``kubesched run`` imports before it
    schedules, and write the cache even with bytecode writing off (an image's build step)."""
    install()
    from kubesched._runtime.registry import full_registry
    from kubesched.cli import main as command
    from kubesched.features import features_for
    from kubesched.live import command as run_command
    from kubesched.live import runner, serving

    del command, run_command, runner  # runner: what run imports once its first LISTs are sent
    for version in ("1.30", "1.36"):
        full_registry((), features=features_for(version))
    serving.build_app(serving.SchedulerMetrics(), serving.HealthChecks())
    path = cache_file()
    if not save(force=True) and not (path is not None and os.path.exists(path)):
        raise SystemExit(f"cannot write the start-up code cache ({path})")
    print(path)


if __name__ == "__main__":  # pragma: no cover - an image's build step
    main()
