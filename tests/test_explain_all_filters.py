"""`kubesched explain --all-filters`: every filter plugin on every node (the framework's former
runAllFilters), so the table shows each reason a node is out — without changing any decision."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubesched.cli import main

ROOT = Path(__file__).resolve().parents[1]


def node(name: str, cpu: str, labels: dict[str, str], taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints or []}, "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "10"}}}


def pod(name: str, cpu: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}], **spec}}


GPU_TAINT = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
CLUSTER = [node("a", "1", {"disk": "hdd"}, [GPU_TAINT]), node("b", "1", {"disk": "ssd"}),
           node("c", "4", {"disk": "hdd"}), node("d", "4", {"disk": "ssd"})]


def explain(tmp_path: Path, *docs: Any, all_filters: bool = True, target: str = "default/p") -> dict[str, Any]:
    f = tmp_path / "m.yaml"
    f.write_text(yaml.safe_dump_all(docs))
    args = ["explain", target, str(f), "-o", "json"] + (["--all-filters"] if all_filters else [])
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    out: dict[str, Any] = json.loads(r.stdout)
    return out


CASES = [
    ("a node failing three filters lists all three in the profile's filter order",
     pod("p", "2", nodeSelector={"disk": "ssd"}),
     {"a": ["TaintToleration", "NodeAffinity", "NodeResourcesFit"], "b": ["NodeResourcesFit"],
      "c": ["NodeAffinity"], "d": []}),
    ("a pod that fits nowhere still gets every reason per node",
     pod("p", "8", nodeSelector={"disk": "ssd"}, tolerations=[{"key": "gpu", "operator": "Exists"}]),
     {"a": ["NodeAffinity", "NodeResourcesFit"], "b": ["NodeResourcesFit"], "c": ["NodeAffinity", "NodeResourcesFit"],
      "d": ["NodeResourcesFit"]}),
]


@pytest.mark.parametrize("the_pod, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_every_failing_filter_is_listed_per_node(tmp_path: Path, the_pod: dict[str, Any],
                                                 expected: dict[str, list[str]]) -> None:
    (attempt,) = explain(tmp_path, *CLUSTER, the_pod)["attempts"]
    got = {n: [s["plugin"] for s in statuses] for n, statuses in attempt["allFilters"].items()}
    assert got == expected
    # The decision's own status per node is the first failing plugin's, as kube-scheduler stops there.
    for n, f in attempt["failures"].items():
        assert f == attempt["allFilters"][n][0]


def test_the_decision_is_the_same_with_and_without_all_filters(tmp_path: Path) -> None:
    docs = [*CLUSTER, pod("q", "1", nodeSelector={"disk": "ssd"}), pod("p", "2", nodeSelector={"disk": "ssd"})]
    plain = explain(tmp_path, *docs, all_filters=False)["attempts"]
    every = explain(tmp_path, *docs)["attempts"]
    assert "allFilters" not in plain[0]
    assert [{k: v for k, v in a.items() if k != "allFilters"} for a in every] == plain


def test_the_table_shows_the_all_failing_filters_column(tmp_path: Path) -> None:
    f = tmp_path / "m.yaml"
    f.write_text(yaml.safe_dump_all([*CLUSTER, pod("p", "2", nodeSelector={"disk": "ssd"})]))
    r = CliRunner().invoke(main, ["explain", "default/p", str(f), "--all-filters"], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    assert "all failing filters" in r.stdout
    row_a = next(line for line in r.stdout.splitlines() if line.startswith("│ a "))
    assert "TaintToleration" in row_a and "NodeAffinity" in row_a and "Insufficient cpu" in row_a
