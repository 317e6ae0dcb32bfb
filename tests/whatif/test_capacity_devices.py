"""`kubesched capacity` with DRA devices: each copy of a pod whose claim comes from a
ResourceClaimTemplate gets its own claim (as the resourceclaim controller would), a claim
named by ``resourceClaimName`` is shared by every copy, and "how many more fit" counts devices.
Small clusters, answers worked out by hand."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubesched.cli import main
from kubesched.whatif.capacity import SCHEDULING_GATED, UNSCHEDULABLE, run_capacity

from ._manifests import (
    GPU_DRIVER,
    claim_pod,
    claim_template,
    device_class,
    device_request,
    gpu_slice,
    node,
    pod,
    resource_claim,
    write,
)


def gpu_nodes(count: int, gpus: int, *, cpu: str = "64") -> list[dict[str, Any]]:
    """``count`` nodes n1.. with ``gpus`` devices each, the class ``gpu`` selecting them."""
    out: list[dict[str, Any]] = [device_class()]
    for i in range(1, count + 1):
        out += [node(f"n{i}", cpu=cpu, pods=300), gpu_slice(f"n{i}", gpus)]
    return out


def held_by_bound_pod(node_name: str, devices: list[str]) -> list[dict[str, Any]]:
    """A pod bound to ``node_name`` whose allocated claim holds ``devices`` of that node."""
    claim = resource_claim("held", device_request(count=len(devices)))
    claim["status"] = {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": GPU_DRIVER, "pool": node_name, "device": d} for d in devices]}},
        "reservedFor": [{"resource": "pods", "name": "holder", "uid": "holder-uid"}]}
    holder = claim_pod("holder", "1", claim="held", node_name=node_name)
    holder["metadata"]["uid"] = "holder-uid"
    return [claim, holder]


SHARED = [device_class(), node("n0", pods=300), node("n1", pods=300), gpu_slice("n1", 1),
          resource_claim("shared", device_request())]


@dataclass
class Case:
    id: str
    cluster: list[dict[str, Any]]
    template: dict[str, Any]
    total: int
    per_node: dict[str, int]
    devices: dict[str, tuple[int, int]]  # node -> (used, total) after the run
    reason: str
    message: str
    notes: list[str] = field(default_factory=list)


CASES = [
    Case("three 8-GPU nodes take 12 copies of a 2-GPU pod, 4 each, and DynamicResources says why no 13th",
         [*gpu_nodes(3, 8), claim_template("two-gpus", device_request(count=2))],
         claim_pod("train", template="two-gpus"), 12, {"n1": 4, "n2": 4, "n3": 4},
         {"n1": (8, 8), "n2": (8, 8), "n3": (8, 8)}, UNSCHEDULABLE,
         "0/3 nodes are available: 3 cannot allocate all claims."),
    Case("a 3-GPU pod fits twice on an 8-GPU node: 6 copies, two devices left on each node",
         [*gpu_nodes(3, 8), claim_template("three-gpus", device_request(count=3))],
         claim_pod("train", template="three-gpus"), 6, {"n1": 2, "n2": 2, "n3": 2},
         {"n1": (6, 8), "n2": (6, 8), "n3": (6, 8)}, UNSCHEDULABLE,
         "0/3 nodes are available: 3 cannot allocate all claims."),
    Case("two GPUs a bound pod's claim holds are not given again: 11 copies, 3 on that node",
         [*gpu_nodes(3, 8), claim_template("two-gpus", device_request(count=2)),
          *held_by_bound_pod("n1", ["gpu-0", "gpu-1"])],
         claim_pod("train", template="two-gpus"), 11, {"n1": 3, "n2": 4, "n3": 4},
         {"n1": (8, 8), "n2": (8, 8), "n3": (8, 8)}, UNSCHEDULABLE,
         "0/3 nodes are available: 3 cannot allocate all claims."),
    Case("cpu runs out before the devices: 2 copies of a 3-cpu pod on 4-cpu nodes, NodeResourcesFit's message",
         [*gpu_nodes(2, 8, cpu="4"), claim_template("one-gpu", device_request())],
         claim_pod("train", "3", template="one-gpu"), 2, {"n1": 1, "n2": 1}, {"n1": (1, 8), "n2": (1, 8)},
         UNSCHEDULABLE, "0/2 nodes are available: 2 Insufficient cpu."),
    Case("a shared ResourceClaim goes with its one device to n1, and every copy after it: 4 copies until cpu runs out",
         SHARED, claim_pod("w", claim="shared"), 4, {"n0": 0, "n1": 4}, {"n0": (0, 0), "n1": (1, 1)}, UNSCHEDULABLE,
         "0/2 nodes are available: 1 Insufficient cpu, 1 resourceclaim not available on the node."),
    Case("a shared ResourceClaim is reserved for at most 256 pods: the 257th copy finds it in use",
         SHARED, claim_pod("w", "10m", claim="shared"), 256, {"n0": 0, "n1": 256}, {"n0": (0, 0), "n1": (1, 1)},
         UNSCHEDULABLE, "0/2 nodes are available: resourceclaim in use."),
    Case("a template missing from the cluster: no claim is created and the first copy waits at PreEnqueue",
         gpu_nodes(1, 8), claim_pod("w", template="nowhere"), 0, {"n1": 0}, {"n1": (0, 8)}, SCHEDULING_GATED,
         'pod "w-0": no resource claim status for claim "gpu"',
         ["ResourceClaimTemplate default/nowhere (claim 'gpu' of the template's pods) is not in the cluster: the "
          "resourceclaim controller creates no claim and copies wait"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_capacity_counts_devices(case: Case, tmp_path: Path) -> None:
    res, _ = run_capacity([write(tmp_path / "c.yaml", *case.cluster)], [write(tmp_path / "t.yaml", case.template)])
    assert (res.total, res.stop.reason, res.stop.message) == (case.total, case.reason, case.message)
    assert {n.node: n.total for n in res.nodes} == case.per_node
    assert {n.node: (n.devices.used, n.devices.total) for n in res.nodes if n.devices} == case.devices
    assert list(res.notes) == case.notes


def test_each_copy_gets_its_own_claim_owned_by_it_and_named_after_it(tmp_path: Path) -> None:
    cluster = write(tmp_path / "c.yaml", *gpu_nodes(1, 8), claim_template("two-gpus", device_request(count=2)))
    res, _ = run_capacity([cluster], [write(tmp_path / "t.yaml", claim_pod("train", template="two-gpus"))],
                          max_copies=2)
    assert res.total == 2
    (n1,) = res.nodes
    assert n1.devices is not None
    by_claim: dict[str, list[str]] = {}
    for h in n1.devices.held:
        assert h.request == "gpu"
        by_claim.setdefault(h.claim, []).append(h.device.device)
        assert h.pods == (re.sub(r"-gpu-[a-z0-9]{5}$", "", h.claim),)
    # <pod>-<pod's claim name>-<5 random>: one claim of two devices per copy, first devices first.
    assert sorted(by_claim.values()) == [["gpu-0", "gpu-1"], ["gpu-2", "gpu-3"]]
    assert all(re.fullmatch(r"default/train-[01]-gpu-[a-z0-9]{5}", c) for c in by_claim)
    assert res.templates[0].claims == ("gpu: ResourceClaimTemplate two-gpus",)


def test_a_cluster_without_devices_keeps_the_json_as_it_was(tmp_path: Path) -> None:
    cluster = write(tmp_path / "c.yaml", node("n1"))
    res, _ = run_capacity([cluster], [write(tmp_path / "t.yaml", pod("web", "1"))])
    out = res.as_dict()
    assert set(out["nodes"][0]) == {"name", "copies", "perTemplate", "reasons"}
    assert "claims" not in out["templates"][0]


def test_the_command_shows_devices_used_per_node_in_table_and_json(tmp_path: Path) -> None:
    cluster = write(tmp_path / "c.yaml", *gpu_nodes(2, 4), claim_template("two-gpus", device_request(count=2)))
    template = write(tmp_path / "t.yaml", claim_pod("train", template="two-gpus"))
    r = CliRunner().invoke(main, ["capacity", cluster, "--pod", template], env={"COLUMNS": "160"})
    assert r.exit_code == 0, r.output
    assert "The cluster can schedule 4 more copies of Pod default/train." in r.output
    assert "claims gpu: ResourceClaimTemplate two-gpus" in r.output
    assert re.search(r"│ n1 +│ +2 │ +4/4 │ cannot allocate all claims", r.output), r.output
    out = json.loads(CliRunner().invoke(main, ["capacity", cluster, "--pod", template, "-o", "json"]).output)
    assert out["templates"][0]["claims"] == ["gpu: ResourceClaimTemplate two-gpus"]
    assert [(n["name"], n["devices"]["used"], n["devices"]["total"]) for n in out["nodes"]] == [("n1", 4, 4),
                                                                                                ("n2", 4, 4)]
    held = out["nodes"][0]["devices"]["held"]
    assert [h["device"] for h in held] == [f"{GPU_DRIVER}/n1/gpu-{i}" for i in range(4)]
    assert {tuple(h["pods"]) for h in held} == {("default/train-0",), ("default/train-2",)}
