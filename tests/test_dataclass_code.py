"""kubesched._dataclass_code: the methods dataclasses generate, compiled once and cached on
disk, make the very classes the builtin ``exec`` makes; the cache round-trips through its file
and is read only by the interpreter that wrote it."""

from __future__ import annotations

import dataclasses
import importlib.util
import marshal
import pickle
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesched import _dataclass_code as dc


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The cache in a directory of the test's own, emptied and installed; uninstalled after."""
    path = tmp_path / "__pycache__" / "dataclass-code.test.bin"
    monkeypatch.setattr(dc, "cache_file", lambda: path)
    monkeypatch.setattr(dc, "_cache", {})
    monkeypatch.setattr(dc, "_used", set())
    monkeypatch.setattr(dc, "_new", 0)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    dc.uninstall()
    dc.install()
    try:
        yield path
    finally:
        dc.uninstall()


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


def test_a_class_made_from_cached_code_behaves_as_one_compiled_by_exec(cache: Path) -> None:
    first = make_point()  # compiled and recorded
    assert dc._new > 0
    compiled = dict(dc._cache)
    dc._new = 0
    second = make_point()  # every method from the cache: nothing compiled
    assert dc._new == 0 and dc._cache == compiled
    dc.uninstall()
    builtin = make_point()  # the builtin exec
    assert behaviour(first) == behaviour(second) == behaviour(builtin)


def test_the_cache_round_trips_through_its_file_and_a_new_process_compiles_nothing(cache: Path) -> None:
    make_point()
    assert dc.save() and cache.exists()
    assert not dc.save()  # nothing new since
    loaded = dc._load(cache)
    assert loaded.keys() == dc._cache.keys()
    dc.uninstall()
    dc._cache.clear()
    dc._new = 0
    dc.install()  # as a new process starts: reads the file
    assert dc._cache.keys() == loaded.keys()
    cls = make_point()
    assert dc._new == 0
    assert behaviour(cls) == behaviour(make_point())


@pytest.mark.parametrize("content", [b"", b"not a cache", importlib.util.MAGIC_NUMBER + b"\x00garbage",
                                     b"\x00\x00\r\n" + b"x" * 20, importlib.util.MAGIC_NUMBER + pickle.dumps([1])],
                         ids=["an empty file", "not a cache", "a truncated table", "another interpreter's magic",
                              "not a table"])
def test_a_cache_file_that_is_not_this_interpreters_table_is_ignored(cache: Path, content: bytes) -> None:
    cache.parent.mkdir(parents=True)
    cache.write_bytes(content)
    assert dc._load(cache) == {}


def test_a_damaged_entry_is_compiled_again_rather_than_run(cache: Path) -> None:
    """Entries are checked when used: a table whose values are not code (a file written by
    something else with this interpreter's magic) makes the same class, compiled anew."""
    make_point()
    table = {text: "not code" for text in dc._cache}
    table[b"not a source text"] = 1  # type: ignore[index]  # a key no lookup can match
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(importlib.util.MAGIC_NUMBER + marshal.dumps(table))
    dc.uninstall()
    dc._cache.clear()
    dc._new = 0
    dc.install()
    assert dc._cache == table
    cls = make_point()
    assert dc._new == len(table) - 1
    assert behaviour(cls) == behaviour(make_point())


def test_nothing_is_written_with_bytecode_writing_off_unless_forced(cache: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    make_point()
    assert not dc.save() and not cache.exists()
    assert dc.save(force=True) and cache.exists()


def test_an_unwritable_place_is_only_slower(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = cache.parent.parent / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(dc, "cache_file", lambda: blocker / "dataclass-code.test.bin")  # its directory is a file
    make_point()
    assert not dc.save()
    assert list(cache.parent.parent.iterdir()) == [blocker]


def test_the_builtin_exec_is_back_after_uninstall(cache: Path) -> None:
    assert dataclasses.__dict__.get("exec") is dc._exec
    dc.uninstall()
    assert "exec" not in dataclasses.__dict__
