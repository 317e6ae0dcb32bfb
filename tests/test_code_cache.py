"""kubesched._code_cache: the methods dataclasses generate and the programs regular expressions
compile to, compiled once and cached on disk, make the very classes and patterns the builtin
``exec`` and ``re`` make; the cache round-trips through its file and is read only by the
interpreter that wrote it."""

from __future__ import annotations

import dataclasses
import importlib.util
import marshal
import os
import pickle
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesched import _code_cache as cc


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The cache in a directory of the test's own, emptied and installed; uninstalled after."""
    path = tmp_path / "__pycache__" / "start-code.test.bin"
    monkeypatch.setattr(cc, "cache_file", lambda: str(path))
    monkeypatch.setattr(cc, "_methods", {})
    monkeypatch.setattr(cc, "_programs", {})
    monkeypatch.setattr(cc, "_used", set())
    monkeypatch.setattr(cc, "_new", 0)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    cc.uninstall()
    cc.install()
    re.purge()  # re's own cache would answer before its compiler is asked
    try:
        yield path
    finally:
        cc.uninstall()
        re.purge()


def restart() -> None:
    """As a new process starts: the tables emptied, then read from the file by install()."""
    cc.uninstall()
    cc._methods.clear()
    cc._programs.clear()
    cc._used.clear()
    cc._new = 0
    cc.install()
    re.purge()


def make_point() -> type[Any]:
    """A frozen, slotted dataclass with a default and a factory, as kubesched writes them."""

    @dataclasses.dataclass(frozen=True, slots=True)
    class Point:
        x: int
        y: int = 0
        tags: tuple[str, ...] = dataclasses.field(default_factory=tuple)

    return Point


def behaviour(cls: type[Any]) -> tuple[Any, ...]:
    p = cls(1, tags=("a",))
    try:
        p.x = 2
        frozen = False
    except dataclasses.FrozenInstanceError:
        frozen = True
    return (repr(p), p == cls(1, 0, ("a",)), p != cls(2), hash(p) == hash(cls(1, 0, ("a",))), frozen,
            hasattr(p, "__dict__"), dataclasses.astuple(p), cls.__init__.__defaults__, p.__match_args__)


# Patterns as the libraries and kubesched write them, with what each is asked to match.
PATTERNS = [
    pytest.param("[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010ffff]", 0,
                 ["abc", "a\x00b", "\ufffe", "\U0001F600"], id="PyYAML's class of printable characters"),
    pytest.param("(?P<value>\\d*\\.?\\d*)(?P<unit>[a-zµμ]+)", 0, ["1.5h", "300ms", "10µs", "x"],
                 id="named groups and non-ASCII letters"),
    pytest.param("""^(?:[-+]?0b[0-1_]+
                    |[-+]?0[0-7_]+
                    |[-+]?(?:0|[1-9][0-9_]*)
                    |[-+]?0x[0-9a-fA-F_]+)$""", re.VERBOSE, ["0b101", "017", "-42", "0xff", "4.2"],
                 id="a verbose alternation"),
    pytest.param("(authorization['\"]?\\s*[:=]\\s*)(bearer|basic)", re.IGNORECASE,
                 ["Authorization: Bearer x", "AUTHORIZATION=basic", "auth"], id="ignoring case"),
    pytest.param(b"\\r\\n(\\d+)", 0, [b"\r\n42", b"42"], id="a bytes pattern"),
    pytest.param("(a)(b)?(?(2)c|d)", 0, ["abc", "ad", "abd"], id="a conditional group"),
]


def outcome(pattern: re.Pattern[Any], subjects: list[Any]) -> tuple[Any, ...]:
    found = [(m.span(), m.groups(), m.groupdict()) if (m := pattern.search(s)) else None for s in subjects]
    return (pattern.pattern, pattern.flags, pattern.groups, dict(pattern.groupindex), found,
            [pattern.sub(b"_" if isinstance(s, bytes) else "_", s) for s in subjects])


def test_a_class_made_from_cached_code_behaves_as_one_compiled_by_exec(cache: Path) -> None:
    first = make_point()  # compiled and recorded
    assert cc._new > 0
    compiled = dict(cc._methods)
    cc._new = 0
    second = make_point()  # every method from the cache: nothing compiled
    assert cc._new == 0 and cc._methods == compiled
    cc.uninstall()
    builtin = make_point()  # the builtin exec
    assert behaviour(first) == behaviour(second) == behaviour(builtin)


@pytest.mark.parametrize(("source", "flags", "subjects"), PATTERNS)
def test_a_pattern_made_from_its_cached_program_matches_as_one_re_compiled(cache: Path, source: Any, flags: int,
                                                                           subjects: list[Any]) -> None:
    first = re.compile(source, flags)  # compiled, its program recorded
    assert (source, flags) in cc._programs and cc._new == 1
    assert cc.save()
    restart()
    cached = re.compile(source, flags)  # made from the program read back: nothing compiled
    assert cc._new == 0 and (source, flags) in cc._used
    cc.uninstall()
    re.purge()
    builtin = re.compile(source, flags)
    assert cached is not first and cached is not builtin
    assert outcome(first, subjects) == outcome(cached, subjects) == outcome(builtin, subjects)


def test_the_cache_round_trips_through_its_file_and_a_new_process_compiles_nothing(cache: Path) -> None:
    make_point()
    re.compile("round-(trip)+")
    assert cc.save() and cache.exists()
    assert not cc.save()  # nothing new since
    methods, programs = cc._load(str(cache))
    assert methods.keys() == cc._methods.keys() and programs.keys() == cc._programs.keys() != set()
    restart()
    assert cc._methods.keys() == methods.keys() and cc._programs.keys() == programs.keys()
    cls = make_point()
    assert re.compile("round-(trip)+").fullmatch("round-triptrip")
    assert cc._new == 0
    assert behaviour(cls) == behaviour(make_point())


@pytest.mark.parametrize("content", [b"", b"not a cache", importlib.util.MAGIC_NUMBER + b"\x00garbage",
                                     b"\x00\x00\r\n" + b"x" * 20, importlib.util.MAGIC_NUMBER + pickle.dumps([1]),
                                     importlib.util.MAGIC_NUMBER + marshal.dumps(({}, "stamp"))],
                         ids=["an empty file", "not a cache", "a truncated table", "another interpreter's magic",
                              "not a table", "two tables of three"])
def test_a_cache_file_that_is_not_this_interpreters_table_is_ignored(cache: Path, content: bytes) -> None:
    cache.parent.mkdir(parents=True)
    cache.write_bytes(content)
    assert cc._load(str(cache)) == ({}, {})


def test_programs_another_interpreter_build_wrote_are_not_read(cache: Path) -> None:
    """Same bytecode magic, another build (a patch release may change re's parser): the methods
    are read, the programs are not."""
    make_point()
    re.compile("other-(build)")
    cc.save()
    methods, programs = cc._load(str(cache))
    stamp = (cc._programs_stamp()[0] + " (another build)", cc._programs_stamp()[1])
    cache.write_bytes(importlib.util.MAGIC_NUMBER + marshal.dumps((methods, stamp, programs)))
    assert cc._load(str(cache)) == (methods, {})


def test_a_damaged_entry_is_compiled_again_rather_than_run(cache: Path) -> None:
    """Entries are checked when used: a table whose values are not code or not a valid program
    (a file written by something else with this interpreter's magic) makes the same class and
    the same pattern, compiled anew."""
    make_point()
    regex = re.compile("(dam)aged?")
    methods: dict[Any, Any] = {text: "not code" for text in cc._methods}
    methods[b"not a source text"] = 1  # a key no lookup can match
    flags, code, *rest = cc._programs[("(dam)aged?", 0)]
    programs = {("(dam)aged?", 0): (flags, [*code[:-1], 12345], *rest)}  # _sre refuses the program
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(importlib.util.MAGIC_NUMBER + marshal.dumps((methods, cc._programs_stamp(), programs)))
    restart()
    assert cc._methods == methods
    cls = make_point()
    again = re.compile("(dam)aged?")
    assert cc._new == len(methods) - 1 + 1
    assert behaviour(cls) == behaviour(make_point())
    assert outcome(again, ["damage", "damaged"]) == outcome(regex, ["damage", "damaged"])


def test_what_the_compiler_takes_besides_pattern_text_bypasses_the_cache(cache: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """re.DEBUG prints the program as it compiles (re does not cache such patterns either), and
    re.Scanner hands the compiler a parsed pattern."""
    re.compile("debug-(me)", re.DEBUG)
    assert capsys.readouterr().out
    scanner = re.Scanner([(r"\d+", lambda s, t: int(t)), (r"\s+", None)])  # type: ignore[attr-defined]
    assert scanner.scan("1 22 333") == ([1, 22, 333], "")
    assert not any(isinstance(k[0], str) and k[0].startswith("debug") for k in cc._programs)


def test_nothing_is_written_with_bytecode_writing_off_unless_forced(cache: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    make_point()
    assert not cc.save() and not cache.exists()
    assert cc.save(force=True) and cache.exists()


def test_an_unwritable_place_is_only_slower(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = cache.parent.parent / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(cc, "cache_file", lambda: str(blocker / "start-code.test.bin"))  # its directory is a file
    make_point()
    assert not cc.save()
    assert list(cache.parent.parent.iterdir()) == [blocker]


def test_the_builtin_exec_and_re_compiler_are_back_after_uninstall(cache: Path) -> None:
    compiler = re._compiler  # type: ignore[attr-defined]
    assert dataclasses.__dict__.get("exec") is cc._exec
    assert compiler.compile is cc._compile and compiler._sre is not cc._sre
    cc.uninstall()
    assert "exec" not in dataclasses.__dict__
    assert compiler.compile is cc._compile_pattern and compiler._sre is cc._sre


def test_after_the_build_step_a_start_compiles_nothing(tmp_path: Path) -> None:
    """``python -m kubesched._code_cache`` (deploy/Containerfile's build step) caches every
    method and pattern ``kubesched run`` makes on its way to scheduling: a process that then
    imports that way and builds the default plugins compiles none anew. (A bytecode directory
    of the test's own: PYTHONPYCACHEPREFIX; nothing is written next to the sources.)"""
    root = Path(cc.__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    build = subprocess.run([sys.executable, "-m", "kubesched._code_cache"], env=env, capture_output=True, text=True,
                           check=True, timeout=300)
    written = Path(build.stdout.strip().splitlines()[-1])
    assert written.is_file() and str(written).startswith(str(tmp_path))
    start = ("from kubesched import _code_cache as cc\ncc.install()\n"
             "import kubesched.cli, kubesched.live.command, kubesched.live.runner\n"
             "from kubesched._runtime.registry import full_registry\nfrom kubesched.features import features_for\n"
             "for v in ('1.30', '1.36'):\n    full_registry((), features=features_for(v))\n"
             "print(cc._new, len(cc._methods), len(cc._programs))")
    new, methods, programs = map(int, subprocess.run([sys.executable, "-c", start], env=env, capture_output=True,
                                                     text=True, check=True, timeout=300).stdout.split())
    assert new == 0 and methods > 500 and programs > 40
