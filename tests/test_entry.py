"""The ``kubesched`` executable (kubesched._entry): numpy's BLAS runs on one thread unless the
environment chose a thread count (OpenBLAS starts a thread per core when numpy is imported:
time a restarted scheduler spends before its first bind)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import kubesched

ROOT = Path(kubesched.__file__).resolve().parent.parent
BLAS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def blas_threads_seen(**env: str) -> str:
    """OPENBLAS_NUM_THREADS as the command's process has it once started (``kubesched --version``)."""
    code = ("import os, sys; sys.argv = ['kubesched', '--version']\n"
            "from kubesched._entry import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('BLAS=' + os.environ.get('OPENBLAS_NUM_THREADS', '-'))")
    base = {k: v for k, v in os.environ.items() if k not in BLAS}
    base["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return out.rsplit("BLAS=", 1)[1].strip()


@pytest.mark.parametrize(("env", "expected"), [
    ({}, "1"),
    ({"OPENBLAS_NUM_THREADS": "4"}, "4"),
    ({"OMP_NUM_THREADS": "8"}, "-"),
    ({"GOTO_NUM_THREADS": "2"}, "-"),
], ids=["nothing set: one thread", "the user's OPENBLAS_NUM_THREADS kept", "OMP_NUM_THREADS left to OpenBLAS",
        "GOTO_NUM_THREADS left to OpenBLAS"])
def test_blas_runs_on_one_thread_unless_the_environment_says(env: dict[str, str], expected: str) -> None:
    assert blas_threads_seen(**env) == expected


def test_numpys_extension_is_found_where_the_import_system_finds_numpy() -> None:
    """The file the preload maps is the one ``import numpy`` loads, found without importing."""
    import numpy

    from kubesched import _entry

    core = getattr(numpy, "_core", None) or numpy.core
    assert _entry._numpy_extension() == core._multiarray_umath.__file__


@pytest.mark.parametrize("layout", ["nothing", "numpy without its extension", "a directory named numpy"],
                         ids=["no numpy on the path", "a numpy without its core extension",
                              "a directory named numpy that is no package"])
def test_without_numpys_extension_on_the_path_nothing_is_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                layout: str) -> None:
    from kubesched import _entry

    if layout != "nothing":
        (tmp_path / "numpy" / "_core").mkdir(parents=True)
    if layout == "numpy without its extension":
        (tmp_path / "numpy" / "__init__.py").write_text("")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert _entry._numpy_extension() is None
    _entry._load_numpy_extension()  # a no-op, not an error


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="the process's mappings are read from /proc")
def test_the_preloaded_library_is_the_one_numpy_then_imports() -> None:
    """In a fresh interpreter: mapped first, then imported -- the process has it mapped once."""
    code = ("import sys\nfrom kubesched import _entry\n_entry._load_numpy_extension()\n"
            "maps = open('/proc/self/maps').read()\nbefore = '_multiarray_umath' in maps\n"
            "import numpy\nprint(before, int(numpy.ones(3).sum()))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         timeout=60).stdout.split()
    assert out == ["True", "3"]
