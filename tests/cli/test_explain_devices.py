"""`kubesched explain` for a pod with resource claims: per node DynamicResources' verdict, the
devices its claims would get there, and the node's devices in use when the pod was attempted
(examples/dra and small clusters, worked out by hand)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubesched.cli import main

from ..whatif._manifests import claim_pod, claim_template, device_class, device_request, gpu_slice, node, write

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "dra" / "cluster.yaml")
CANNOT = "cannot allocate all claims"


def explain_json(pod: str, *paths: str) -> dict[str, Any]:
    r = CliRunner().invoke(main, ["explain", pod, *paths, "-o", "json"])
    assert r.exit_code == 0, r.output
    out: dict[str, Any] = json.loads(r.output)
    return out


def brief(devices: dict[str, Any]) -> dict[str, tuple[str, list[str], str]]:
    """node -> (verdict, devices as driver/pool/device (request), used/total)."""
    return {n: (v["verdict"] or "fits", [f"{d['device']} ({d['request']})" for d in v["devices"]],
                f"{v['used']}/{v['total']}") for n, v in devices.items()}


# The three trainers (two a100 each) took gpu-node-0's four devices and two of gpu-node-1's.
CASES = [
    ("the first inference pod fits where an a100 or any GPU is free, preferring the a100",
     "ml/inference-0",
     {"cpu-node-0": (CANNOT, [], "0/0"), "gpu-node-0": (CANNOT, [], "4/4"),
      "gpu-node-1": ("fits", ["gpu.example.com/gpu-node-1/gpu-2 (gpu/a100)"], "2/4"),
      "gpu-node-2": ("fits", ["gpu.example.com/gpu-node-2/gpu-0 (gpu/any)"], "0/2")}),
    ("a batch pod finds all ten devices taken",
     "ml/batch-0",
     {"cpu-node-0": (CANNOT, [], "0/0"), "gpu-node-0": (CANNOT, [], "4/4"), "gpu-node-1": (CANNOT, [], "4/4"),
      "gpu-node-2": (CANNOT, [], "2/2")}),
    ("the third trainer gets the two a100 gpu-node-0 has left, and no l4",
     "ml/trainer-2",
     {"cpu-node-0": (CANNOT, [], "0/0"),
      "gpu-node-0": ("fits", ["gpu.example.com/gpu-node-0/gpu-2 (gpus)", "gpu.example.com/gpu-node-0/gpu-3 (gpus)"],
                     "2/4"),
      "gpu-node-1": ("fits", ["gpu.example.com/gpu-node-1/gpu-2 (gpus)", "gpu.example.com/gpu-node-1/gpu-3 (gpus)"],
                     "2/4"),
      "gpu-node-2": (CANNOT, [], "0/2")}),
]


@pytest.mark.parametrize(("pod", "expected"), [(p, e) for _, p, e in CASES], ids=[i for i, _, _ in CASES])
def test_explain_json_gives_dynamicresources_view_per_node(pod: str, expected: dict[str, Any]) -> None:
    (attempt,) = explain_json(pod, EXAMPLE)["attempts"]
    assert brief(attempt["devices"]) == expected


def test_the_verdict_is_given_where_another_filter_rejected_the_node_first(tmp_path: Path) -> None:
    """n1 is cordoned: NodeUnschedulable rejects it before DynamicResources runs, yet its
    devices are shown."""
    cordoned = node("n1")
    cordoned["spec"] = {"unschedulable": True}
    cluster = write(tmp_path / "c.yaml", device_class(), cordoned, gpu_slice("n1", 2), node("n2"),
                    claim_template("one", device_request()), claim_pod("w", template="one"))
    (attempt,) = explain_json("default/w", cluster)["attempts"]
    assert attempt["failures"]["n1"]["plugin"] == "NodeUnschedulable"
    assert brief(attempt["devices"]) == {"n1": ("fits", ["gpu.example.com/n1/gpu-0 (gpu)"], "0/2"),
                                         "n2": (CANNOT, [], "0/0")}


def test_the_table_has_the_device_columns_and_a_pod_without_claims_has_none(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["explain", "ml/inference-0", EXAMPLE], env={"COLUMNS": "300"})
    assert r.exit_code == 0, r.output
    assert re.search(r"DynamicResources +┃ devices +┃ devices used", r.output), r.output
    assert re.search(r"gpu-node-1 \* +│ feasible +│ fits +│ gpu.example.com/gpu-node-1/gpu-2 \(gpu/a100\) +│ +2/4", r.output)
    plain = write(tmp_path / "c.yaml", node("n1"), {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                                    "spec": {"containers": [{"name": "c", "image": "x"}]}})
    r = CliRunner().invoke(main, ["explain", "default/p", plain], env={"COLUMNS": "300"})
    assert r.exit_code == 0 and "devices used" not in r.output
    (attempt,) = explain_json("default/p", plain)["attempts"]
    assert "devices" not in attempt
