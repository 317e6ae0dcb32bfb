"""`kubesched pack` with DRA devices: pods with resource claims are in the model (devices
counted per node and device group, from the real allocator), every placement passes the real
filters, and the claim shapes the model cannot count exactly are kept where the scheduler put
them, saying why. Answers worked out by hand."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kubesched.objects import load_manifests
from kubesched.whatif import pack as packing
from kubesched.whatif.pack import PackVerificationError, pack

from ._manifests import (
    claim_pod,
    claim_template,
    device_class,
    device_request,
    gpu_slice,
    node,
    resource_claim,
    write,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
A100 = 'device.attributes["gpu.example.com"].model == "a100"'
L4 = 'device.attributes["gpu.example.com"].model == "l4"'
MIXED = ["a100", "a100", "l4", "l4"]


def gpu_nodes(count: int, gpus: int, models: list[str] | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [device_class(), device_class("a100", A100), device_class("l4", L4)]
    for i in range(1, count + 1):
        out += [node(f"n{i}", cpu="64", memory="256Gi"), gpu_slice(f"n{i}", gpus, models=models)]
    return out


def pods(n: int, template: str, prefix: str = "p") -> list[dict[str, Any]]:
    return [claim_pod(f"{prefix}{i}", template=template) for i in range(n)]


@dataclass
class Case:
    id: str
    docs: list[dict[str, Any]]
    placed: tuple[int, int]  # (scheduler, packing)
    nodes_used: tuple[int, int]
    device_groups: int
    devices_used: int  # after the packing, all nodes


CASES = [
    Case("six one-GPU pods need two of three 4-GPU nodes, not one and not three",
         [*gpu_nodes(3, 4), claim_template("one", device_request()), *pods(6, "one")], (6, 6), (3, 2), 3, 6),
    Case("seven 2-GPU pods on three 4-GPU nodes: the devices bound the packing to six, one left pending",
         [*gpu_nodes(3, 4), claim_template("two", device_request(count=2)), *pods(7, "two")], (6, 6), (3, 3), 3, 12),
    Case("a100 and l4 devices of one node are two groups: two pods of each fit on one node",
         [*gpu_nodes(2, 4, MIXED), claim_template("a100", device_request(device_class_name="a100")),
          claim_template("l4", device_request(device_class_name="l4")), *pods(2, "a100", "a"), *pods(2, "l4", "l")],
         (4, 4), (2, 1), 4, 4),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_pods_with_claims_are_packed_by_their_devices(case: Case, tmp_path: Path) -> None:
    objs = load_manifests([write(tmp_path / "c.yaml", *case.docs)])
    res = pack(objs, time_limit=10)
    assert all(p.modelled for p in res.pods), [p.note for p in res.pods]
    assert (res.greedy_placed, res.packed_placed) == case.placed
    assert (len(res.greedy_nodes), len(res.packed_nodes)) == case.nodes_used
    assert res.solver.status == "Optimal"
    assert res.verified == res.packed_placed
    assert res.device_groups == case.device_groups
    assert sum(u.used for u in res.packed_devices) == case.devices_used
    for p in res.pods:
        if p.packed is None:
            assert p.note.startswith("fits on some node alone, but not beside the other pending pods"), p.note


def test_the_dra_example_places_nine_pods_where_the_scheduler_places_seven() -> None:
    """10 GPUs (4 + 4 a100 on gpu-node-0/1, 2 l4 on gpu-node-2); trainers take two a100 of one
    node, the others one GPU: eight one-GPU pods and one trainer use all ten, 9 pods; the
    scheduler, in queue order, gives three trainers six and stops at 7."""
    objs = load_manifests([EXAMPLES / "dra" / "cluster.yaml"])
    res = pack(objs, time_limit=10)
    assert (res.greedy_placed, res.packed_placed, res.modelled, res.verified) == (7, 9, 11, 9)
    assert res.device_groups == 3
    out = res.as_dict()
    assert out["devices"] == {"gpu-node-0": {"total": 4, "greedy": 4, "packed": 4},
                              "gpu-node-1": {"total": 4, "greedy": 4, "packed": 4},
                              "gpu-node-2": {"total": 2, "greedy": 2, "packed": 2},
                              "cpu-node-0": {"total": 0, "greedy": 0, "packed": 0}}
    packed = {p.pod for p in res.pods if p.packed}
    assert sum(1 for p in packed if "trainer" in p) == 1 and len(packed) == 9


def test_without_the_device_rows_the_verifier_rejects_the_packing(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Seven 2-GPU pods on three 4-GPU nodes: counting no device, the model places all seven,
    and the real filters reject the seventh."""
    objs = load_manifests([write(tmp_path / "c.yaml", *gpu_nodes(3, 4), claim_template("two", device_request(count=2)),
                                 *pods(7, "two"))])
    monkeypatch.setattr(packing, "demand", lambda *a, **k: np.zeros(3, np.int64))
    with pytest.raises(PackVerificationError, match="DynamicResources: cannot allocate all claims"):
        pack(objs, time_limit=10)


MODEL = [device_class(), device_class("a100", A100), node("n1", cpu="64"), node("n2", cpu="64")]
MIXED_N1 = gpu_slice("n1", 4, models=MIXED)
NOT_MODELLED = [
    ("a claim two pods name, not allocated yet, follows whichever is scheduled first",
     [*MODEL, MIXED_N1, gpu_slice("n2", 4), resource_claim("s", device_request()), claim_pod("a", claim="s"),
      claim_pod("b", claim="s")],
     "ResourceClaim default/s is shared by 2 pods and not allocated yet: its node and devices follow the first of "
     "them that is scheduled"),
    ("allocationMode All takes every matching device",
     [*MODEL, MIXED_N1, claim_template("all", {"name": "gpu", "exactly": {"deviceClassName": "gpu",
                                                                          "allocationMode": "All"}}),
      claim_pod("a", template="all")],
     "claim default/{claim} request gpu: allocationMode All takes every matching device"),
    ("a matchAttribute constraint over devices of two models depends on the devices chosen",
     [*MODEL, MIXED_N1, claim_template("same", device_request(count=2),
                                       constraints=[{"requests": ["gpu"], "matchAttribute": "gpu.example.com/model"}]),
      claim_pod("a", template="same")],
     "claim default/{claim}: constraint matchAttribute gpu.example.com/model depends on which devices are chosen on "
     "node n1"),
    ("devices of an allNodes slice are one pool for many nodes",
     [*MODEL, gpu_slice("", 4, all_nodes=True, name="net"), claim_template("one", device_request()),
      claim_pod("a", template="one")],
     "claim default/{claim} request gpu: device gpu.example.com/net/gpu-0 is reachable from several nodes (one pool "
     "for many nodes)"),
    ("any-GPU and a100-only requests overlap on a mixed node: the first allocated may take the other's device",
     [*MODEL, MIXED_N1, claim_template("one", device_request()),
      claim_template("a100", device_request(device_class_name="a100")), claim_pod("a", template="one"),
      claim_pod("b", template="a100")],
     "on node n1 the devices claim default/{claim}'s request gpu selects overlap those of claim default/{other}'s "
     "request gpu without being the same (the first pod allocated may take the other's devices)"),
    ("firstAvailable alternatives selecting different devices on a node",
     [*MODEL, MIXED_N1, claim_template("pref", {"name": "gpu", "firstAvailable": [
         {"name": "a100", "deviceClassName": "a100"}, {"name": "any", "deviceClassName": "gpu"}]}),
      claim_pod("a", template="pref")],
     "claim default/{claim} request gpu: its firstAvailable alternatives select different devices or counts on node n1"),
]


@pytest.mark.parametrize(("docs", "why"), [(d, w) for _, d, w in NOT_MODELLED], ids=[i for i, _, _ in NOT_MODELLED])
def test_claims_the_model_cannot_count_exactly_stay_where_the_scheduler_put_them(
        docs: list[dict[str, Any]], why: str, tmp_path: Path) -> None:
    objs = load_manifests([write(tmp_path / "c.yaml", *docs)])
    claims = {p.name: p.resource_claim_statuses.get("gpu", "") for p in objs.pods}
    res = pack(objs, time_limit=10)
    a = next(p for p in res.pods if p.pod == "default/a")
    assert not a.modelled and a.packed == a.greedy == "n1"
    assert a.note == "not modelled: resource claims: " + why.format(claim=claims["a"], other=claims.get("b", ""))
    # The others are modelled unless they share a's claim.
    assert all(p.modelled or "is shared by" in p.note for p in res.pods if p.pod != "default/a")
    assert res.verified == res.packed_placed
