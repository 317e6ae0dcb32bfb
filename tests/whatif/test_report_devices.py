"""The per-node device view of the HTML reports (`simulate|capacity|pack --report`): devices
used / total per node in each state, and which pod holds which device. Page data only (the
browser test loads pages)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kubesched.cli import main

from ._manifests import claim_pod, claim_template, device_class, device_request, gpu_slice, node, write

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "dra" / "cluster.yaml")
DEVICES = "Devices per node"
HOLDERS = "Devices per node: which pod holds which device"


def page(tmp_path: Path, *args: str) -> dict[str, Any]:
    out = tmp_path / "r.html"
    r = CliRunner().invoke(main, [*args, "--report", str(out)])
    assert r.exit_code == 0, r.output
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', out.read_text(), re.S)
    assert m is not None
    data: dict[str, Any] = json.loads(m.group(1))
    return data


def tables(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["title"].split(" (", 1)[0]: s for s in data["sections"] if s["k"] == "table"}


def test_simulate_report_shows_devices_before_and_after_and_their_holders(tmp_path: Path) -> None:
    t = tables(page(tmp_path, "simulate", EXAMPLE))
    assert t[DEVICES]["columns"] == ["node", "devices", "used: before", "used: after", "pods holding devices"]
    # Trainers take two a100 each (gpu-node-0 twice, gpu-node-1 once), inference pods the rest.
    assert t[DEVICES]["rows"] == [["gpu-node-0", 4, 0, 4, "ml/trainer-0, ml/trainer-2"],
                                  ["gpu-node-1", 4, 0, 4, "ml/inference-0, ml/inference-1, ml/trainer-1"],
                                  ["gpu-node-2", 2, 0, 2, "ml/inference-2, ml/inference-3"],
                                  ["cpu-node-0", 0, 0, 0, ""]]
    holders = t[HOLDERS]["rows"]
    assert t[HOLDERS]["columns"] == ["node", "device", "claim", "request", "pods"]
    assert len(holders) == 10
    assert [r[1] for r in holders[:2]] == ["gpu.example.com/gpu-node-0/gpu-0", "gpu.example.com/gpu-node-0/gpu-1"]
    assert all(r[4] == "ml/trainer-0" and r[3] == "gpus" and r[2].startswith("ml/trainer-0-gpu-") for r in holders[:2])


def test_capacity_report_shows_the_copies_devices(tmp_path: Path) -> None:
    cluster = write(tmp_path / "c.yaml", device_class(), node("n1", cpu="64"), gpu_slice("n1", 4), node("n2", cpu="64"),
                    gpu_slice("n2", 4), claim_template("two-gpus", device_request(count=2)))
    template = write(tmp_path / "t.yaml", claim_pod("train", template="two-gpus"))
    t = tables(page(tmp_path, "capacity", cluster, "--pod", template))
    assert t[DEVICES]["columns"] == ["node", "devices", "used: before", "used: with the copies", "pods holding devices"]
    assert t[DEVICES]["rows"] == [["n1", 4, 0, 4, "default/train-0, default/train-2"],
                                  ["n2", 4, 0, 4, "default/train-1, default/train-3"]]
    assert t["Templates"]["columns"][-1] == "resource claims"
    assert t["Templates"]["rows"][0][-1] == "gpu: ResourceClaimTemplate two-gpus"


def test_pack_report_shows_devices_after_the_scheduler_and_after_the_packing(tmp_path: Path) -> None:
    t = tables(page(tmp_path, "pack", EXAMPLE))
    assert t[DEVICES]["columns"] == ["node", "devices", "used: before", "used: scheduler", "used: packing",
                                     "pods holding devices"]
    assert [r[:5] for r in t[DEVICES]["rows"]] == [["gpu-node-0", 4, 0, 4, 4], ["gpu-node-1", 4, 0, 4, 4],
                                                   ["gpu-node-2", 2, 0, 2, 2], ["cpu-node-0", 0, 0, 0, 0]]
    # The packing's holders: nine pods, one of them a trainer with two devices.
    pods = [r[4] for r in t[HOLDERS]["rows"]]
    assert len(pods) == 10 and len(set(pods)) == 9


def test_a_cluster_without_devices_has_no_device_tables(tmp_path: Path) -> None:
    cluster = write(tmp_path / "c.yaml", node("n1"), {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                                      "spec": {"containers": [{"name": "c", "image": "x"}]}})
    assert not any(title.startswith(DEVICES) for title in tables(page(tmp_path, "simulate", cluster)))
