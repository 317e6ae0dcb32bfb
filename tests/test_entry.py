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
