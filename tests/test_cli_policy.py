"""`kubesched config convert-policy` and `kubesched simulate --policy` (legacy scheduler Policy files).

The end-to-end runs of policies using legacy plugins (NodeResourcesLeastAllocated, NodeLabel,
RequestedToCapacityRatio, ...) need those plugins in kubesched.plugins.registry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubesched.cli import main
from kubesched.config import parse_config
from kubesched.config.policy import load_policy
from kubesched.features import FEATURES_1_30

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "examples" / "cluster"
EXAMPLE_POLICY = ROOT / "examples" / "policy" / "policy.yaml"

# Only plugins that exist in v1.30 (runs without the legacy plugins).
V130_POLICY = {
    "kind": "Policy",
    "apiVersion": "v1",
    "predicates": [{"name": n} for n in (
        "PodFitsResources", "PodFitsHostPorts", "MatchNodeSelector", "NoDiskConflict", "NoVolumeZoneConflict",
        "HostName", "MaxEBSVolumeCount", "MaxGCEPDVolumeCount", "MaxAzureDiskVolumeCount", "MatchInterPodAffinity",
        "CheckVolumeBinding")],
    "priorities": [{"name": n, "weight": 1} for n in (
        "BalancedResourceAllocation", "SelectorSpreadPriority", "InterPodAffinityPriority", "NodeAffinityPriority",
        "TaintTolerationPriority", "ImageLocalityPriority")],
}
# Every predicate and priority name of the v1.5-era issue.
ISSUE_POLICY = {
    "kind": "Policy",
    "apiVersion": "v1",
    "predicates": [{"name": n} for n in (
        "NoDiskConflict", "NoVolumeZoneConflict", "PodFitsResources", "PodFitsHostPorts", "HostName",
        "MatchNodeSelector", "MaxEBSVolumeCount", "MaxGCEPDVolumeCount", "MaxAzureDiskVolumeCount",
        "CheckNodeUnschedulable", "PodToleratesNodeTaints", "MatchInterPodAffinity", "CheckVolumeBinding")],
    "priorities": [
        *({"name": n, "weight": 1} for n in (
            "LeastRequestedPriority", "MostRequestedPriority", "BalancedResourceAllocation", "SelectorSpreadPriority",
            "ServiceSpreadingPriority", "InterPodAffinityPriority", "NodeAffinityPriority", "TaintTolerationPriority",
            "ImageLocalityPriority")),
        {"name": "RequestedToCapacityRatioPriority", "weight": 1, "argument": {"requestedToCapacityRatioArguments": {
            "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}],
            "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}}},
    ],
}


def write(tmp_path: Path, data: dict[str, Any], name: str = "policy.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, indent="\t"))  # legacy policies were tab-indented JSON
    return path


def simulate(*args: str) -> dict[str, Any]:
    r = CliRunner().invoke(main, ["simulate", str(CLUSTER), "--deterministic", "-o", "json", *args])
    assert r.exit_code == 0, r.output
    out: dict[str, Any] = json.loads(r.stdout)
    return out


# ---------------------------------------------------------------- convert-policy
def test_convert_policy_prints_the_equivalent_configuration() -> None:
    r = CliRunner().invoke(main, ["config", "convert-policy", str(EXAMPLE_POLICY)])
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    printed = yaml.safe_load(r.stdout)
    assert printed["kind"] == "KubeSchedulerConfiguration"
    assert printed["profiles"][0]["plugins"]["multiPoint"] == {"disabled": [{"name": "*"}]}
    assert parse_config(printed, features=FEATURES_1_30) == load_policy(EXAMPLE_POLICY)


def test_convert_policy_prints_notes_on_stderr(tmp_path: Path) -> None:
    path = write(tmp_path, {"kind": "Policy", "alwaysCheckAllPredicates": True})
    r = CliRunner().invoke(main, ["config", "convert-policy", str(path)])
    assert r.exit_code == 0, r.output
    assert r.stderr.startswith("note: alwaysCheckAllPredicates has no KubeSchedulerConfiguration equivalent")
    assert parse_config(yaml.safe_load(r.stdout), features=FEATURES_1_30) == load_policy(path)


@pytest.mark.parametrize("data, message", [
    pytest.param({"kind": "Policy", "predicates": [{"name": "PodFitsResource"}]},
                 'predicates[0].name: predicate type not found for "PodFitsResource" (valid predicates: ',
                 id="an unknown predicate"),
    pytest.param({"kind": "Policy", "priorities": [{"name": "ImageLocalityPriority", "weight": 0}]},
                 "priorities[0].weight: priority ImageLocalityPriority should have a positive weight",
                 id="a priority without weight"),
    pytest.param({"kind": "Policy", "predicate": []}, 'predicate: unknown field "predicate"',
                 id="an unknown field"),
])
def test_convert_policy_rejects_a_bad_policy_in_one_line(tmp_path: Path, data: dict[str, Any], message: str) -> None:
    path = write(tmp_path, data)
    r = CliRunner().invoke(main, ["config", "convert-policy", str(path)])
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr.startswith(f"error: {path}: {message}")
    assert r.stderr.count("\n") == 1


def test_convert_policy_of_a_missing_file_fails(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["config", "convert-policy", str(tmp_path / "nope.json")])
    assert r.exit_code == 2
    assert "cannot read policy" in r.stderr


# ---------------------------------------------------------------- simulate --policy
def test_simulate_refuses_both_config_and_policy(tmp_path: Path) -> None:
    path = write(tmp_path, V130_POLICY)
    r = CliRunner().invoke(main, ["simulate", str(CLUSTER), "--policy", str(path), "--config", str(path)])
    assert r.exit_code == 2
    assert "--config and --policy are mutually exclusive" in r.output


def test_simulate_reports_a_bad_policy(tmp_path: Path) -> None:
    path = write(tmp_path, {"kind": "Policy", "priorities": [{"name": "Nope", "weight": 1}]})
    r = CliRunner().invoke(main, ["simulate", str(CLUSTER), "--policy", str(path)])
    assert r.exit_code == 2
    assert r.stderr.startswith(f'error: {path}: priorities[0].name: priority type not found for "Nope"')


def test_a_policy_without_predicates_only_checks_cordons_and_taints(tmp_path: Path) -> None:
    out = simulate("--policy", str(write(tmp_path, {"kind": "Policy", "predicates": [], "priorities": []})))
    placed = out["placements"]
    # No PodFitsResources, PodFitsHostPorts or MatchNodeSelector: every pod is placed ...
    assert out["unschedulable"] == {}
    assert all(placed.values())
    # ... but never on the cordoned node, nor on the tainted one unless tolerated.
    assert "node-c2" not in placed.values()
    assert {k for k, n in placed.items() if n == "gpu-c1"} <= {"ml/trainer"}


def test_a_v130_only_policy_schedules_the_example_like_the_defaults(tmp_path: Path) -> None:
    out = simulate("--policy", str(write(tmp_path, V130_POLICY)))
    default = simulate()
    assert out["placements"] == default["placements"]
    assert out["placements"]["ml/trainer"] == "gpu-c1"
    assert set(out["unschedulable"]) == {"shop/frontend-3", "ml/batch-report", "shop/huge-cache"}
    # The policy's filters run in predicateOrdering: NodeAffinity (MatchNodeSelector) before TaintToleration,
    # so the tainted GPU node fails on the selector here, and on the taint with the v1.30 defaults.
    assert out["unschedulable"]["ml/batch-report"].startswith(
        "0/4 nodes are available: 1 node(s) were unschedulable, 3 node(s) didn't match Pod's node affinity/selector.")
    assert "untolerated taint" in default["unschedulable"]["ml/batch-report"]


# ---------------------------------------------------------------- need the legacy plugins
def test_simulate_with_the_example_policy() -> None:
    out = simulate("--policy", str(EXAMPLE_POLICY))
    placed = out["placements"]
    assert placed["ml/trainer"] == "gpu-c1"
    assert set(out["unschedulable"]) == {"shop/frontend-3", "ml/batch-report", "shop/huge-cache"}
    # Both frontends avoid each other's host port; the NodeLabel preference does not override the filters.
    assert {placed["shop/frontend-1"], placed["shop/frontend-2"]} == {"node-a1", "node-b1"}


def test_simulate_with_every_v15_era_predicate_and_priority(tmp_path: Path) -> None:
    out = simulate("--policy", str(write(tmp_path, ISSUE_POLICY)))
    assert out["placements"]["ml/trainer"] == "gpu-c1"
    assert set(out["unschedulable"]) == {"shop/frontend-3", "ml/batch-report", "shop/huge-cache"}
    assert "Insufficient memory" in out["unschedulable"]["shop/huge-cache"]


BUSY_AND_IDLE = """
apiVersion: v1
kind: Node
metadata: {name: a-idle, labels: {kubernetes.io/hostname: a-idle}}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: b-busy, labels: {kubernetes.io/hostname: b-busy, disk: ssd}}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: running, namespace: default}
spec:
  nodeName: b-busy
  containers: [{name: c, image: app, resources: {requests: {cpu: "2", memory: 4Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: pending, namespace: default}
spec:
  containers: [{name: c, image: app, resources: {requests: {cpu: "1", memory: 1Gi}}}]
"""


@pytest.mark.parametrize("priorities, node", [
    pytest.param([], "a-idle", id="without priorities the first feasible node wins"),
    pytest.param([{"name": "LeastRequestedPriority", "weight": 1}], "a-idle", id="LeastRequestedPriority spreads"),
    pytest.param([{"name": "MostRequestedPriority", "weight": 1}], "b-busy", id="MostRequestedPriority packs"),
    pytest.param([{"name": "LeastRequestedPriority", "weight": 1},
                  {"name": "PreferSSD", "weight": 5, "argument": {"labelPreference": {"label": "disk", "presence": True}}}],
                 "b-busy", id="a heavier labelPreference outweighs LeastRequestedPriority"),
    pytest.param([{"name": "Binpack", "weight": 1, "argument": {"requestedToCapacityRatioArguments": {
                     "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
                     "resources": [{"name": "cpu", "weight": 1}]}}}],
                 "b-busy", id="a bin-packing requestedToCapacityRatio shape packs"),
])
def test_the_policy_priorities_decide_the_node(tmp_path: Path, priorities: list[dict[str, Any]], node: str) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(BUSY_AND_IDLE)
    path = write(tmp_path, {"kind": "Policy", "predicates": [{"name": "GeneralPredicates"}], "priorities": priorities})
    r = CliRunner().invoke(main, ["simulate", str(cluster), "--deterministic", "-o", "json", "--policy", str(path)])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["placements"]["default/pending"] == node
