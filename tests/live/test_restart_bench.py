"""``kubesched bench --workload restart`` at a tiny size: real ``kubesched run`` processes,
SIGKILLed and started again, each timed to its first bind; with leader election the restart
waits for the dead leader's lease."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubesched import bench_restart
from kubesched.bench_restart import run_restart_bench
from kubesched.cli import main


def test_every_start_binds_and_the_restart_with_leader_election_waits_for_the_lease() -> None:
    res = run_restart_bench(3, 8, restarts=2)
    assert res.ok, res.problems
    starts = [res.cold, *res.restarts, res.election_cold, res.election_restart]
    assert all(s is not None and s.seconds is not None and s.seconds > 0 and s.bound >= 1 for s in starts)
    assert [s.leader_elect for s in starts if s is not None] == [False, False, False, True, True]
    assert res.median is not None and len(res.restarts) == 2
    assert res.election_restart is not None and res.election_restart.seconds is not None
    assert res.election_restart.seconds >= 10.0  # leaseDuration 15 s after the last renewal it saw
    data = res.as_dict()
    assert data["workload"] == "restart" and data["restart_median_seconds"] == round(res.median, 3)
    assert "restart to first bind" in res.summary() and "leader election" in res.summary()
    assert f"`{res.command} run`" in res.summary() and data["command"] == res.command


@pytest.mark.parametrize(("script", "expected"), [
    ("executable", ["{bin}/kubesched"]),
    ("not executable", ["{bin}/python", "-m", "kubesched"]),
    ("absent", ["{bin}/python", "-m", "kubesched"]),
], ids=["the installed kubesched executable is started as a deployment starts it",
        "a kubesched file that cannot be executed is not",
        "without one the package is run with python -m"])
def test_each_start_runs_the_command_a_deployment_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        script: str, expected: list[str]) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    if script != "absent":
        (tmp_path / "kubesched").write_text("#!/bin/sh\n")
        (tmp_path / "kubesched").chmod(0o755 if script == "executable" else 0o644)
    assert bench_restart._command() == [part.format(bin=tmp_path) for part in expected]  # noqa: SLF001


def test_the_bench_command_offers_the_restart_workload() -> None:
    out = CliRunner().invoke(main, ["bench", "--help"])
    assert out.exit_code == 0 and "restart:" in out.output


def test_the_restart_workload_rejects_an_empty_cluster_with_exit_code_2() -> None:
    out = CliRunner().invoke(main, ["bench", "--workload", "restart", "--nodes", "0", "-o", "json"])
    assert out.exit_code == 2 and "at least one node" in out.output
