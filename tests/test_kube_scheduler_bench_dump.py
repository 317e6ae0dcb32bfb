"""scripts/kube_scheduler_bench.py's dump: the objects of kubesched's bench workloads as the Go
harness (bench/kube-scheduler) loads them into its fake clientset. No Go here."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from kubesched.objects.parse import parse_node, parse_pod

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "kube_scheduler_bench.py"


def _script() -> Any:
    spec = importlib.util.spec_from_file_location("kube_scheduler_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


ksb = _script()

# (workload, nodes, pods, init pods) -> (nodes, running, pending, fit nowhere, PDBs, services, ReplicaSets)
COUNTS = [
    pytest.param("basic", 10, 30, None, (10, 0, 30, 0, 0, 0, 0), id="basic dumps nodes and pending pods only"),
    pytest.param("basic", 10, 30, 20, (10, 20, 30, 0, 0, 0, 0), id="basic with init pods dumps them as running pods"),
    pytest.param("preemption", 8, 6, 32, (8, 32, 6, 0, 0, 0, 0), id="preemption dumps low-priority running pods and preemptors"),
    pytest.param("preemption-pdb", 8, 6, 32, (8, 32, 6, 0, 1, 0, 0), id="preemption-pdb adds one PDB"),
    pytest.param("preemption", None, None, None, (500, 2000, 500, 0, 0, 0, 0), id="preemption defaults to kubesched bench sizes"),
    pytest.param("unschedulable", 10, 52, None, (10, 0, 52, 2, 0, 0, 0), id="unschedulable names the pods that fit nowhere"),
    pytest.param("mixed", 20, 24, 36, (20, 20 + 36, 24, 0, 0, 5, 5), id="mixed dumps its Services and ReplicaSets"),
]


@pytest.mark.parametrize(("workload", "nodes", "pods", "init", "want"), COUNTS)
def test_counts(workload: str, nodes: int | None, pods: int | None, init: int | None,
                want: tuple[int, ...]) -> None:
    doc = ksb.workload_objects(workload, nodes, pods, init)
    got = tuple(len(doc[k]) for k in ("nodes", "running", "pending", "unschedulable", "pdbs", "services",
                                       "replicasets"))
    assert got == want
    assert doc["workload"] == workload
    assert "default" in {ns["metadata"]["name"] for ns in doc["namespaces"]}


WORKLOADS = [pytest.param(w, id=w) for w in ksb.WORKLOADS]


def _small(workload: str) -> dict[str, Any]:
    init = {"basic": 20, "unschedulable": 0, "mixed": 36}.get(workload, 32)
    pods = 52 if workload == "unschedulable" else 6 if workload.startswith("preemption") else 24
    doc: dict[str, Any] = ksb.workload_objects(workload, 20 if workload == "mixed" else 8, pods, init)
    return doc


@pytest.mark.parametrize("workload", WORKLOADS)
def test_nodes_have_capacity_and_allocatable(workload: str) -> None:
    for node in _small(workload)["nodes"]:
        status = node["status"]
        assert status["capacity"]["cpu"] and status["capacity"]["pods"] == "110"
        assert status["allocatable"] == status["capacity"]
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == node["metadata"]["name"]


@pytest.mark.parametrize("workload", WORKLOADS)
def test_running_pods_are_bound_and_pending_pods_are_not(workload: str) -> None:
    doc = _small(workload)
    names = {n["metadata"]["name"] for n in doc["nodes"]}
    assert all(p["spec"]["nodeName"] in names and p["status"]["phase"] == "Running" for p in doc["running"])
    for p in doc["pending"]:
        assert "nodeName" not in p["spec"]
        assert p["spec"]["schedulerName"] == "default-scheduler"
        assert p["metadata"]["uid"] and p["metadata"]["creationTimestamp"].endswith("Z")


@pytest.mark.parametrize("workload", WORKLOADS)
def test_the_dump_is_what_kubesched_parses(workload: str) -> None:
    """Parsed back, every object is the one kubesched's bench schedules (both sides see the same)."""
    doc = json.loads(json.dumps(_small(workload)))
    setup_pods = {p.key: p for p in _setup_pods(workload)}
    for manifest in (*doc["running"], *doc["pending"]):
        pod = parse_pod(manifest)
        want = setup_pods[pod.key]
        assert (pod.node_name, pod.priority, dict(pod.labels), dict(pod.requests), pod.tolerations, pod.affinity,
                pod.topology_spread_constraints) == (want.node_name, want.priority, dict(want.labels),
                                                     dict(want.requests), want.tolerations, want.affinity,
                                                     want.topology_spread_constraints)
    for manifest in doc["nodes"]:
        node = parse_node(manifest)
        assert node.allocatable == node.capacity and node.capacity["cpu"] >= 4000


def _setup_pods(workload: str) -> list[Any]:
    if workload in ksb.PREEMPTION:
        setup, _ = ksb._preemption_objects(8, 6, 32, workload == "preemption-pdb")
    else:
        init = {"basic": 20, "unschedulable": 0, "mixed": 36}[workload]
        pods = 52 if workload == "unschedulable" else 24
        setup = ksb.bench.WORKLOADS[workload].setup(20 if workload == "mixed" else 8, pods, init)
    return [*setup.running, *setup.measured]


@pytest.mark.parametrize(("workload", "protected"), [pytest.param("preemption", 0, id="preemption dumps low-priority running pods and preemptors"),
                                                     pytest.param("preemption-pdb", 16, id="preemption-pdb adds one PDB")])
def test_preemption_priorities_and_pdbs(workload: str, protected: int) -> None:
    doc = ksb.workload_objects(workload, 8, 6, 32)
    assert {p["spec"]["priority"] for p in doc["pending"]} == {10}
    assert {p["spec"]["priority"] for p in doc["running"]} == {0}
    assert all(p["spec"]["terminationGracePeriodSeconds"] == 0 for p in doc["running"])
    labelled = [p for p in doc["running"] if p["metadata"].get("labels", {}).get("protected") == "true"]
    assert len(labelled) == protected
    if protected:
        (pdb,) = doc["pdbs"]
        assert pdb["spec"]["selector"] == {"matchLabels": {"protected": "true"}}
        assert pdb["status"]["disruptionsAllowed"] == 0 and pdb["spec"]["maxUnavailable"] == 0
        # 6 preemptors, 4 unprotected nodes: the last 2 each evict 3 protected pods.
        assert doc["expect"] == {"victims": 18, "protected_victims": 6}
    else:
        assert doc["expect"] == {"victims": 18}


def test_unschedulable_pods_are_named_and_too_large() -> None:
    doc = ksb.workload_objects("unschedulable", 10, 52)
    large = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in doc["pending"]
             if p["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "9"}
    assert sorted(large) == doc["unschedulable"]


def test_dump_writes_the_document(tmp_path: Path) -> None:
    path = tmp_path / "basic.json"
    doc = ksb.dump("basic", path, 3, 4)
    assert json.loads(path.read_text()) == json.loads(json.dumps(doc))
