"""``kubesched bench --workload live`` at a tiny size: every pod bound once, through the API."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kubesched.bench_live import run_live_bench
from kubesched.cli import main


@pytest.mark.parametrize("subprocess", [True, False], ids=["API server in a child process",
                                                            "API server in a thread"])
def test_live_bench_binds_every_pod(subprocess: bool) -> None:
    res = run_live_bench(4, 12, subprocess=subprocess)
    assert res.ok, res.problems
    assert res.bound == 12 and res.pods_per_second > 0
    assert res.api_requests >= 4 + 12 * 2  # nodes and pods created, pods bound
    # The scheduler's CPU is told apart only when the API server is another process.
    cpu = res.as_dict()["cpu_ms_per_pod"]
    assert (cpu is not None and cpu > 0) if subprocess else cpu is None
    assert ("ms per bound pod" in res.summary()) == subprocess


def test_bench_live_flag_on_the_command_line() -> None:
    out = CliRunner().invoke(main, ["bench", "--live", "--nodes", "3", "--pods", "5", "-o", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["workload"] == "live" and data["bound"] == 5 and data["problems"] == []
    assert data["cpu_ms_per_pod"] > 0 and data["cpu_seconds"] > 0
