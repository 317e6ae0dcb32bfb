"""`kubesched simulate` on the bundled example, and the bench smoke run."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubesched.bench import run_bench
from kubesched.cli import main

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cluster"


def test_simulate_example_prints_a_placement_table() -> None:
    r = CliRunner().invoke(main, ["simulate", str(EXAMPLE), "--deterministic"])
    assert r.exit_code == 0, r.output
    assert "shop/frontend-1" in r.output and "ml/trainer" in r.output
    assert "bound" in r.output


def test_simulate_example_json_explains_every_pending_pod() -> None:
    r = CliRunner().invoke(main, ["simulate", str(EXAMPLE), "--deterministic", "-o", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    placements = out["placements"]
    assert placements["ml/trainer"] == "gpu-c1"
    # Three frontends with hostPort 8080 on two schedulable nodes: the third cannot fit.
    assert sum(1 for k in ("shop/frontend-1", "shop/frontend-2", "shop/frontend-3") if placements[k]) == 2
    assert out["unschedulable"]["shop/frontend-3"].startswith("0/4 nodes are available:")
    assert "Insufficient memory" in out["unschedulable"]["shop/huge-cache"]
    assert "node(s) were unschedulable" in out["unschedulable"]["ml/batch-report"]
    # Every pending pod is either placed or has a reason.
    for key, node in placements.items():
        assert node or key in out["unschedulable"] or key in out["skipped"]


def test_simulate_writes_the_conformance_trace(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    r = CliRunner().invoke(main, ["simulate", str(EXAMPLE), "--deterministic", "--trace", str(trace)])
    assert r.exit_code == 0, r.output
    data = json.loads(trace.read_text())
    assert data["oracle"] == "kube-scheduler v1.36.2"
    assert {s["pod"] for s in data["steps"]} >= {"shop/frontend-1", "ml/trainer"}


def test_bench_basic_binds_every_pod_without_overcommitting() -> None:
    res = run_bench("basic", 300, 600, seed=3)
    assert res.ok, res.problems
    assert res.bound == 600


def test_config_print_defaults_round_trips_through_validate(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["config", "print-defaults"])
    assert r.exit_code == 0
    f = tmp_path / "c.yaml"
    f.write_text(r.output)
    r2 = CliRunner().invoke(main, ["config", "validate", str(f)])
    assert r2.exit_code == 0, r2.output


def test_config_validate_names_the_field_path(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
                 "- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: Foo\n")
    r = CliRunner().invoke(main, ["config", "validate", str(f)])
    assert r.exit_code == 2
    assert "profiles[0].pluginConfig[0].args.scoringStrategy.type" in r.output


def test_explain_shows_every_node_with_its_verdict() -> None:
    r = CliRunner().invoke(main, ["simulate", str(EXAMPLE), "--deterministic", "--explain", "shop/frontend-2"],
                           env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "TaintToleration: node(s) had untolerated taint(s)" in r.output
    assert "NodeUnschedulable: node(s) were unschedulable" in r.output
    assert "node-b1 *" in r.output


def test_explain_json_has_the_trace_of_each_attempt() -> None:
    r = CliRunner().invoke(main, ["simulate", str(EXAMPLE), "--deterministic", "-o", "json", "--explain", "shop/frontend-1"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    step = data["attempts"][0]
    assert step["node"] == "node-a1"
    assert set(step["scores"]) == {"node-a1", "node-b1"}
    assert step["total"]["node-a1"] == sum(step["scores"]["node-a1"].values())


def test_explain_of_an_unknown_pod_exits_2() -> None:
    r = CliRunner().invoke(main, ["simulate", str(EXAMPLE), "--explain", "shop/nope"])
    assert r.exit_code == 2
    assert "no scheduling attempt for shop/nope" in r.output


def test_explain_command_prints_only_the_pods_tables() -> None:
    r = CliRunner().invoke(main, ["explain", "shop/frontend-1", str(EXAMPLE)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "shop/frontend-1, attempt 1: Scheduled on node-a1" in r.output
    assert "TaintToleration" in r.output and "NodeResourcesFit" in r.output
    assert "bound," not in r.output  # no placement table
