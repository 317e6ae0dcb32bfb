"""NodeVerdicts (DynamicResources.filter_batch): Allocate's outcome kept per table row and claim
specs gives, on every row, what the exact allocator gives there — whatever happens between
pods: devices taken and freed, node objects replaced, nodes added and removed, slices
replaced, shared devices or consumed capacity, pools with shared counters, CEL errors. And the
scheduler decides DRA pods with it exactly as node by node."""

from __future__ import annotations

import dataclasses
import random
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kubesched.features import FEATURES_1_36
from kubesched.framework import NodeTable
from kubesched.objects import Node, ObjectMeta, load_manifests
from kubesched.objects.devices import (
    AllocationResult,
    ClaimSpec,
    ResourceClaim,
    ResourceSlice,
    parse_claim_spec,
    parse_device_class,
    parse_resource_slice,
)
from kubesched.plugins.dynamicresources import allocator as allocator_module
from kubesched.plugins.dynamicresources import plugin as plugin_module
from kubesched.plugins.dynamicresources.allocator import AllocatedState, Allocator, DeviceID
from kubesched.plugins.dynamicresources.failures import AllocationError, NodeAllocationError
from kubesched.plugins.dynamicresources.verdicts import CANNOT_ALLOCATE, ERROR, FIT, INVALID_POOLS, NodeVerdicts
from kubesched.simulation import Simulator, step_to_json
from tests.builders import make_node

DRIVER = "gpu.example.com"
CLASSES = {"gpu": parse_device_class({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                      "metadata": {"name": "gpu"},
                                      "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})}


def _request(name: str, count: int = 1, expr: str = "", mode: str = "") -> dict[str, Any]:
    r: dict[str, Any] = {"deviceClassName": "gpu", "count": count}
    if mode:
        r = {"deviceClassName": "gpu", "allocationMode": mode}
    if expr:
        r["selectors"] = [{"cel": {"expression": expr}}]
    return {"name": name, "exactly": r}


A100 = f'device.attributes["{DRIVER}"].model == "a100"'
TEMPLATES: list[dict[str, Any]] = [
    {"requests": [_request("gpu")]},
    {"requests": [_request("gpu", 2, A100)]},
    {"requests": [{"name": "gpu", "firstAvailable": [
        {"name": "big", "deviceClassName": "gpu", "count": 3},
        {"name": "one", "deviceClassName": "gpu", "selectors": [{"cel": {"expression": A100}}]}]}]},
    {"requests": [_request("a"), _request("b")],
     "constraints": [{"requests": ["a", "b"], "matchAttribute": f"{DRIVER}/model"}]},
    {"requests": [_request("a"), _request("b")],
     "constraints": [{"requests": ["a", "b"], "distinctAttribute": f"{DRIVER}/model"}]},
    {"requests": [_request("all", expr=A100, mode="All")]},
    # A CEL runtime error where a device lacks the attribute (AllocationError: never kept).
    {"requests": [_request("gpu", expr=f'device.attributes["{DRIVER}"].extra == 1')]},
    {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "capacity": {"requests": {"memory": "1Gi"}}}}]},
]
SPECS = [parse_claim_spec({"devices": t}, "spec") for t in TEMPLATES]


def _slice(node: str, models: list[str], *, version: int = 1, extra: bool = False) -> ResourceSlice:
    devices = []
    for j, m in enumerate(models):
        attrs: dict[str, Any] = {"model": {"string": m}}
        if extra and j == 0:
            attrs["extra"] = {"int": 1}
        devices.append({"name": f"gpu-{j}", "attributes": attrs, "capacity": {"memory": {"value": "40Gi"}}})
    return parse_resource_slice({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                 "metadata": {"name": f"{node}-gpus-v{version}"},
                                 "spec": {"driver": DRIVER, "nodeName": node,
                                          "pool": {"name": node, "generation": version, "resourceSliceCount": 1},
                                          "devices": devices}})


def _counter_slices(node: str) -> list[ResourceSlice]:
    """A pool of two slices whose partitions share one counter set (the row is never kept; the
    counter set's slice is relevant to every node, but only this one has partitions)."""
    base = {"driver": DRIVER, "nodeName": node, "pool": {"name": f"{node}-parts", "generation": 1,
                                                           "resourceSliceCount": 2}}
    counters = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-counters"},
                "spec": {**base, "sharedCounters": [{"name": "mem", "counters": {"memory": {"value": "40Gi"}}}]}}
    parts = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-parts"},
             "spec": {**base, "devices": [
                 {"name": f"part-{k}", "attributes": {"model": {"string": "a100"}},
                  "consumesCounters": [{"counterSet": "mem", "counters": {"memory": {"value": "20Gi"}}}]}
                 for k in range(3)]}}
    return [parse_resource_slice(counters), parse_resource_slice(parts)]


def _selector_slice(zone: str) -> ResourceSlice:
    """A slice for every node labelled ``zone`` (no nodeName: a candidate on many rows)."""
    return parse_resource_slice({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                 "metadata": {"name": f"zone-{zone}"},
                                 "spec": {"driver": DRIVER, "pool": {"name": f"zone-{zone}", "generation": 1,
                                                                     "resourceSliceCount": 1},
                                          "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                                              {"key": "zone", "operator": "In", "values": [zone]}]}]},
                                          "devices": [{"name": "shared-0", "attributes": {"model": {"string": "h100"}}}]}})


def _node(name: str, zone: str, version: int = 0) -> Node:
    return make_node().name(name).label("zone", zone).label("v", str(version)).capacity(cpu="8", memory="8Gi").obj()


def _claims(specs: list[ClaimSpec], seq: int) -> list[ResourceClaim]:
    return [ResourceClaim(ObjectMeta(name=f"c{seq}-{i}", namespace="default", uid=f"uid-{seq}-{i}"), spec)
            for i, spec in enumerate(specs)]


def _exact(alloc: Allocator, node: Node, claims: list[ResourceClaim]) -> tuple[int, list[AllocationResult] | None]:
    """Allocate on one node with no outcome memoized (the per-node path upstream runs)."""
    allocator_module._ALLOCS.clear()
    try:
        got = alloc.allocate(node, claims)
    except AllocationError:
        return ERROR, None
    except NodeAllocationError:
        return INVALID_POOLS, None
    return (FIT if got is not None else CANNOT_ALLOCATE), got


def _check(table: NodeTable, alloc: Allocator, claims: list[ResourceClaim], rows: np.ndarray) -> list[int]:
    found: dict[str, list[AllocationResult]] = {}
    errors: dict[int, str] = {}
    codes: list[int] = NodeVerdicts.of(table, alloc).codes(alloc, claims, table, rows, found, errors).tolist()
    for r, code in zip(rows.tolist(), codes, strict=True):
        node = table.nodes[r]
        assert node is not None
        want, result = _exact(alloc, node, claims)
        assert code == want, f"row {r} ({node.name}): kept {code}, exact {want}"
        if code == FIT and node.name in found:
            assert found[node.name] == result
        assert (r in errors) == (code == ERROR)
    return codes


def _history(seed: int) -> int:
    """Random pods against a random cluster; returns how many verdicts were checked."""
    rng = random.Random(seed)
    table = NodeTable()
    zones = ["a", "b"]
    nodes: dict[str, Node] = {}
    per_node: dict[str, list[ResourceSlice]] = {}
    version = 0

    def add(name: str) -> None:
        node = _node(name, rng.choice(zones))
        nodes[name] = node
        table.add_node(node)
        kind = rng.random()
        if kind < 0.15:
            per_node[name] = _counter_slices(name)
        elif kind < 0.9:
            per_node[name] = [_slice(name, [rng.choice(["a100", "h100"]) for _ in range(rng.randint(1, 4))],
                                     extra=rng.random() < 0.5)]
        else:
            per_node[name] = []  # no devices of its own

    for i in range(rng.randint(3, 25)):
        add(f"n{i:02d}")
    selector_slices = [_selector_slice(z) for z in zones if rng.random() < 0.5]
    slices = [s for v in per_node.values() for s in v] + selector_slices
    in_use: set[DeviceID] = set()
    checked = 0
    for step in range(40):
        op = rng.random()
        live = [r for r in range(table.size) if table.nodes[r] is not None]
        if op < 0.08 and len(live) > 1:  # a node replaced (new object, maybe another zone)
            r = rng.choice(live)
            old = table.nodes[r]
            assert old is not None
            version += 1
            table.set_node(r, _node(old.name, rng.choice(zones), version))
        elif op < 0.12:  # a node added
            add(f"m{step:02d}")
            slices = [s for v in per_node.values() for s in v] + selector_slices
        elif op < 0.15 and len(live) > 2:  # a node removed (its row cleared)
            table.clear_row(rng.choice(live))
        elif op < 0.2:  # the slices replaced by new objects, one node's devices changed
            name = rng.choice(sorted(per_node))
            version += 1
            if per_node[name] and per_node[name][0].devices:
                per_node[name] = [_slice(name, [rng.choice(["a100", "h100"]) for _ in range(rng.randint(1, 4))],
                                         version=version)]
            slices = [dataclasses.replace(s) for v in per_node.values() for s in v] + selector_slices
        elif op < 0.35 and in_use:  # devices freed
            for did in rng.sample(sorted(in_use), rng.randint(1, len(in_use))):
                in_use.discard(did)
        # Now a pod: its claims' specs, the devices in use (and sometimes a shared one).
        shared: set[tuple[DeviceID, str]] = set()
        if rng.random() < 0.1:
            shared.add((DeviceID(DRIVER, "zone-a", "shared-0"), "share"))
        alloc = Allocator(classes=CLASSES, slices=slices, allocated=AllocatedState(set(in_use), shared))
        specs = rng.sample(SPECS, rng.choice([1, 1, 2]))
        claims = _claims(specs, step)
        live = [r for r in range(table.size) if table.nodes[r] is not None]
        rows = np.asarray(rng.sample(live, rng.randint(1, len(live))), np.int64)  # any subset, any order
        codes = _check(table, alloc, claims, rows)
        checked += len(codes)
        # The pod lands on a fitting node: its devices are taken.
        fits = [r for r, c in zip(rows.tolist(), codes, strict=True) if c == FIT]
        if fits:
            node = table.nodes[rng.choice(fits)]
            assert node is not None
            _, result = _exact(alloc, node, claims)
            assert result is not None
            for a in result:
                in_use.update(DeviceID(d.driver, d.pool, d.device) for d in a.devices if not d.share_id)
    return checked


@pytest.mark.parametrize("seed", range(40), ids=lambda s: f"random device history {s}: every kept verdict is the "
                                                          "exact allocator's")
def test_kept_verdicts_equal_the_exact_allocator(seed: int) -> None:
    assert _history(seed) > 0


# ---------------------------------------------------------------- what makes a verdict stale
def _one_node(models: list[str]) -> tuple[NodeTable, list[ResourceSlice]]:
    table = NodeTable()
    table.add_node(_node("n1", "a"))
    table.add_node(_node("n2", "a"))
    return table, [_slice("n1", models), _slice("n2", ["h100"])]


ROWS = np.asarray([0, 1], np.int64)


def _codes(table: NodeTable, slices: list[ResourceSlice], in_use: set[DeviceID], spec: ClaimSpec,
           shared: set[tuple[DeviceID, str]] | None = None) -> list[int]:
    alloc = Allocator(classes=CLASSES, slices=slices, allocated=AllocatedState(set(in_use), shared or set()))
    return _check(table, alloc, _claims([spec], 0), ROWS)


def test_a_taken_device_makes_its_node_stale_and_a_freed_one_fits_again() -> None:
    table, slices = _one_node(["a100"])
    taken = {DeviceID(DRIVER, "n1", "gpu-0")}
    assert _codes(table, slices, set(), SPECS[0]) == [FIT, FIT]
    assert _codes(table, slices, taken, SPECS[0]) == [CANNOT_ALLOCATE, FIT]
    assert _codes(table, slices, set(), SPECS[0]) == [FIT, FIT]


def test_a_replaced_slice_is_read_again() -> None:
    table, slices = _one_node(["a100", "a100"])
    assert _codes(table, slices, set(), SPECS[1]) == [FIT, CANNOT_ALLOCATE]
    assert _codes(table, [_slice("n1", ["h100", "a100"], version=2), slices[1]], set(), SPECS[1]) == \
        [CANNOT_ALLOCATE, CANNOT_ALLOCATE]


def test_a_replaced_node_object_is_read_again() -> None:
    table = NodeTable()
    table.add_node(_node("n1", "a"))
    table.add_node(_node("n2", "b"))
    slices = [_selector_slice("a")]
    assert _codes(table, slices, set(), SPECS[0]) == [FIT, CANNOT_ALLOCATE]
    table.set_node(0, _node("n1", "b", 1))  # the zone-a devices no longer reach it
    table.set_node(1, _node("n2", "a", 1))
    assert _codes(table, slices, set(), SPECS[0]) == [CANNOT_ALLOCATE, FIT]


def test_a_device_shared_by_several_nodes_makes_all_of_them_stale() -> None:
    table = NodeTable()
    table.add_node(_node("n1", "a"))
    table.add_node(_node("n2", "a"))
    slices = [_selector_slice("a")]
    assert _codes(table, slices, set(), SPECS[0]) == [FIT, FIT]
    assert _codes(table, slices, {DeviceID(DRIVER, "zone-a", "shared-0")}, SPECS[0]) == [CANNOT_ALLOCATE] * 2


def test_shared_devices_and_nodes_with_partitions_are_never_kept() -> None:
    table, slices = _one_node(["a100"])
    table.add_node(_node("n3", "a"))
    slices += _counter_slices("n3")
    rows = np.asarray([0, 1, 2], np.int64)
    alloc = Allocator(classes=CLASSES, slices=slices, allocated=AllocatedState())
    verdicts = NodeVerdicts.of(table, alloc)
    assert verdicts.cacheable.tolist()[:3] == [True, True, False]
    assert _check(table, alloc, _claims([SPECS[0]], 0), rows) == [FIT, FIT, FIT]
    # Two partitions hold 40Gi of the counter set: a third cannot be allocated.
    held = {DeviceID(DRIVER, "n3-parts", "part-0"), DeviceID(DRIVER, "n3-parts", "part-1")}
    alloc = Allocator(classes=CLASSES, slices=slices, allocated=AllocatedState(held))
    assert _check(table, alloc, _claims([SPECS[0]], 1), rows) == [FIT, FIT, CANNOT_ALLOCATE]
    share = {(DeviceID(DRIVER, "n1", "gpu-0"), "s")}
    assert _codes(table, slices, set(), SPECS[0], share) == [FIT, FIT]


def test_consumed_capacity_of_a_shared_device_is_never_kept() -> None:
    table = NodeTable()
    table.add_node(_node("n1", "a"))
    nic = parse_resource_slice({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                "metadata": {"name": "n1-nics"},
                                "spec": {"driver": DRIVER, "nodeName": "n1",
                                         "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                                         "devices": [{"name": "nic-0", "allowMultipleAllocations": True,
                                                      "capacity": {"bandwidth": {"value": "10G"}}}]}})
    spec = parse_claim_spec({"devices": {"requests": [{"name": "nic", "exactly": {
        "deviceClassName": "gpu", "capacity": {"requests": {"bandwidth": "6G"}}}}]}}, "spec")
    rows = np.asarray([0], np.int64)
    alloc = Allocator(classes=CLASSES, slices=[nic], allocated=AllocatedState())
    assert _check(table, alloc, _claims([spec], 0), rows) == [FIT]
    nic_0 = DeviceID(DRIVER, "n1", "nic-0")
    # Another claim holds a 6G share: no dedicated device changed, yet 6G more no longer fit.
    held = AllocatedState(set(), {(nic_0, "share-1")}, {nic_0: {"bandwidth": Fraction(6_000_000_000)}})
    alloc = Allocator(classes=CLASSES, slices=[nic], allocated=held)
    assert _check(table, alloc, _claims([spec], 1), rows) == [CANNOT_ALLOCATE]


def test_equal_specs_share_their_verdicts_and_capacity_requests_do_not() -> None:
    table, slices = _one_node(["a100"])
    alloc = Allocator(classes=CLASSES, slices=slices, allocated=AllocatedState())
    verdicts = NodeVerdicts.of(table, alloc)
    twin = parse_claim_spec({"devices": TEMPLATES[0]}, "spec")
    _check(table, alloc, _claims([SPECS[0]], 0), ROWS)
    _check(table, alloc, _claims([twin], 1), ROWS)
    assert len(verdicts.stores) == 1
    capacity = parse_claim_spec({"devices": TEMPLATES[-1]}, "spec")
    _check(table, alloc, _claims([SPECS[-1]], 2), ROWS)
    _check(table, alloc, _claims([capacity], 3), ROWS)
    assert len(verdicts.stores) == 3


def test_an_unchanged_cluster_runs_the_allocator_once_per_node() -> None:
    table, slices = _one_node(["a100"])
    calls = 0
    real = Allocator.allocate

    def counting(self: Allocator, node: Node, claims: Any) -> Any:
        nonlocal calls
        calls += 1
        return real(self, node, claims)

    Allocator.allocate = counting  # type: ignore[method-assign]
    try:
        for seq in range(5):
            alloc = Allocator(classes=CLASSES, slices=slices, allocated=AllocatedState())
            NodeVerdicts.of(table, alloc).codes(alloc, _claims([SPECS[0]], seq), table, ROWS, {}, {})
    finally:
        Allocator.allocate = real  # type: ignore[method-assign]
    assert calls == 2


# ---------------------------------------------------------------- the scheduler, batch vs node by node
def _scenario(rng: random.Random) -> str:
    docs = ["""apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors: [{cel: {expression: device.driver == "gpu.example.com"}}]"""]
    n = rng.choice([rng.randint(3, 30), rng.randint(101, 160)])
    for i in range(n):
        cpu = rng.choice(["2", "4", "8"])
        spec = "{taints: [{key: dedicated, value: x, effect: NoSchedule}]}" if rng.random() < 0.15 else "{}"
        docs.append(f"""apiVersion: v1
kind: Node
metadata: {{name: n{i:03d}, labels: {{kubernetes.io/hostname: n{i:03d}, zone: z{i % 3}}}}}
spec: {spec}
status: {{capacity: {{cpu: "{cpu}", memory: 32Gi, pods: "110"}}}}""")
        if rng.random() < 0.85:
            models = [rng.choice(["a100", "h100"]) for _ in range(rng.randint(1, 4))]
            extra = ", extra: {int: 1}" if rng.random() < 0.5 else ""  # a CEL error where it is missing
            devices = "\n".join(f"  - {{name: gpu-{j}, attributes: {{model: {{string: {m}}}{extra}}}}}"
                                for j, m in enumerate(models))
            docs.append(f"""apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: n{i:03d}-gpus}}
spec:
  driver: gpu.example.com
  nodeName: n{i:03d}
  pool: {{name: n{i:03d}, generation: 1, resourceSliceCount: 1}}
  devices:
{devices}""")
    requests = [
        "[{name: gpu, exactly: {deviceClassName: gpu}}]",
        "[{name: gpu, exactly: {deviceClassName: gpu, count: 2}}]",
        "[{name: gpu, exactly: {deviceClassName: gpu, selectors: [{cel: {expression: "
        "'device.attributes[\"gpu.example.com\"].model == \"a100\"'}}]}}]",
        "[{name: gpu, firstAvailable: [{name: big, deviceClassName: gpu, count: 3}, "
        "{name: one, deviceClassName: gpu}]}]",
    ]
    if rng.random() < 0.3:
        requests.append("[{name: gpu, exactly: {deviceClassName: gpu, selectors: [{cel: {expression: "
                        "'device.attributes[\"gpu.example.com\"].extra == 1'}}]}}]")
    shared_claim = rng.random() < 0.5
    if shared_claim:
        docs.append(f"""apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: shared, namespace: default}}
spec: {{devices: {{requests: {requests[0]}}}}}""")
    for p in range(rng.randint(5, 40)):
        refs = []
        if shared_claim and rng.random() < 0.2:
            refs.append("{name: s, resourceClaimName: shared}")
        for k in range(rng.choice([0, 1, 1, 1, 2])):
            docs.append(f"""apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: p{p}-c{k}, namespace: default}}
spec: {{devices: {{requests: {rng.choice(requests)}}}}}""")
            refs.append(f"{{name: c{k}, resourceClaimName: p{p}-c{k}}}")
        cpu = rng.choice(["100m", "1", "3"])
        tol = "\n  tolerations: [{key: dedicated, operator: Exists}]" if rng.random() < 0.3 else ""
        claims = f"\n  resourceClaims: [{', '.join(refs)}]" if refs else ""
        docs.append(f"""apiVersion: v1
kind: Pod
metadata: {{name: p{p}, namespace: default, uid: uid-p{p}, labels: {{app: a{p % 3}}}}}
spec:
  containers: [{{name: c, image: i, resources: {{requests: {{cpu: "{cpu}"}}}}}}]{claims}{tol}""")
    return "\n---\n".join(docs)


def _trace(path: Path, *, hybrid: bool = True) -> list[dict[str, Any]]:
    objs = load_manifests([path], controllers="none", features=FEATURES_1_36)
    sim = Simulator(objs, deterministic=True, features=FEATURES_1_36)
    sim.scheduler.hybrid_filters = hybrid
    return [step_to_json(s) for s in sim.run().steps]


@pytest.mark.parametrize("seed", range(12), ids=lambda s: f"random DRA cluster {s}: batch Filter decides as node "
                                                          "by node")
def test_the_scheduler_decides_as_node_by_node(tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Batch (DynamicResources in batch), hybrid (it alone per node, the other filters in
    batch around it) and node by node (every filter per node): the same trace, statuses of
    an attempt that ends in a filter's Error included."""
    path = tmp_path / "s.yaml"
    path.write_text(_scenario(random.Random(seed)))
    calls = 0
    real = plugin_module.DynamicResources.filter_batch

    def counting(self: plugin_module.DynamicResources, *args: Any) -> Any:
        nonlocal calls
        calls += 1
        return real(self, *args)

    monkeypatch.setattr(plugin_module.DynamicResources, "filter_batch", counting)
    batched = _trace(path)
    assert calls > 0  # the batch path took part
    monkeypatch.setattr(plugin_module.DynamicResources, "filter_batch_applies", lambda self, state: False)
    assert batched == _trace(path, hybrid=False)
    assert batched == _trace(path, hybrid=True)
    assert any(step.get("allocations") for step in batched)
