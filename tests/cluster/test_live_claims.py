"""The live client's ResourceClaim side (kubesched.cluster.live): the claims' assume cache
(util/assumecache), what DynamicResources' claim writes become in API terms (claim_write), and
the allocation as the API stores it (objects.devices.allocation_json)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kubesched.cluster.live import ADD, DELETE, UPDATE, ClaimCache, claim_write
from kubesched.features import FEATURES_1_30, FEATURES_1_36
from kubesched.objects.devices import (
    AllocationResult,
    ConsumerRef,
    DeviceResult,
    allocation_json,
    parse_device_class,
    parse_resource_claim,
)
from kubesched.objects.labels import Requirement
from kubesched.objects.model import NodeSelector, NodeSelectorTerm

DRIVER = "gpu.example.com"


def claim_manifest(name: str = "c", rv: str = "5", *, status: dict[str, Any] | None = None,
                   requests: list[dict[str, Any]] | None = None,
                   config: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": requests or [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}
    if config:
        devices["config"] = config
    out: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                           "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                                        "resourceVersion": rv},
                           "spec": {"devices": devices}}
    if status is not None:
        out["status"] = status
    return out


def device_class(name: str, config: list[dict[str, Any]] | None = None) -> Any:
    return parse_device_class({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
                               "spec": {"config": config or []}})


def opaque(tag: str) -> dict[str, Any]:
    return {"opaque": {"driver": DRIVER, "parameters": {"tag": tag}}}


ON_N1 = NodeSelector((NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", ("n1",)),)),))
ALLOC = AllocationResult((DeviceResult("gpu", DRIVER, "n1", "gpu-0"),), ON_N1)
ALLOC_JSON = {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]},
              "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                  {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}
POD = ConsumerRef("pods", "p", "uid-p")
OTHER = ConsumerRef("pods", "q", "uid-q")
ALLOCATED = {"allocation": ALLOC_JSON, "reservedFor": [{"resource": "pods", "name": "q", "uid": "uid-q"}]}


# ------------------------------------------------------------------------------------ the assume cache
def test_an_assumed_claim_is_seen_until_the_informer_brings_a_newer_one() -> None:
    cache = ClaimCache()
    seen: list[tuple[str, str | None, str | None]] = []
    cache.on_change = lambda action, old, new: seen.append(
        (action, old.meta.resource_version if old else None, new.meta.resource_version if new else None))
    cache.informer_change(ADD, None, parse_resource_claim(claim_manifest(rv="5")))
    assert cache.assume(parse_resource_claim(claim_manifest(rv="7", status=ALLOCATED)))
    claim = cache.get("default", "c")
    assert claim is not None and claim.allocation == ALLOC
    # The informer still delivers older versions (the finalizer update, rv 6) and the same one
    # (rv 7, or a relist's resync): none replaces what the scheduler wrote.
    cache.informer_change(UPDATE, None, parse_resource_claim(claim_manifest(rv="6")))
    cache.informer_change(UPDATE, None, parse_resource_claim(claim_manifest(rv="7", status=ALLOCATED)))
    assert cache.get("default", "c") is claim
    # An older object is not assumed over a newer one.
    assert not cache.assume(parse_resource_claim(claim_manifest(rv="6")))
    cache.informer_change(UPDATE, None, parse_resource_claim(claim_manifest(rv="8")))
    assert cache.get("default", "c").allocation is None  # type: ignore[union-attr]
    cache.informer_change(DELETE, cache.get("default", "c"), None)
    assert cache.get("default", "c") is None and cache.items() == []
    assert not cache.assume(parse_resource_claim(claim_manifest(rv="9")))  # deleted meanwhile: not resurrected
    assert seen == [(ADD, None, "5"), (UPDATE, "5", "7"), (UPDATE, "7", "8"), (DELETE, "8", None)]


# ------------------------------------------------------------------------------------ claim_write
@pytest.mark.parametrize(("status", "change", "expected"), [
    pytest.param(None, {"allocation": ALLOC, "reserved_for": (POD,)},
                 {"allocation": ALLOC_JSON, "reserve": ({"resource": "pods", "name": "p", "uid": "uid-p"},)},
                 id="an unallocated claim gets the allocation and the pod"),
    pytest.param(ALLOCATED, {"reserved_for": (OTHER, POD)},
                 {"reserve": ({"resource": "pods", "name": "p", "uid": "uid-p"},)},
                 id="an allocated claim only gets the pod appended"),
    pytest.param(ALLOCATED, {}, None, id="nothing changed: no write"),
    pytest.param(ALLOCATED, {"reserved_for": ()}, {"unreserve": ("uid-q",)},
                 id="the last consumer left out is unreserved, the allocation kept"),
    pytest.param({"allocation": ALLOC_JSON, "reservedFor": [{"resource": "pods", "name": "q", "uid": "uid-q"},
                                                            {"resource": "pods", "name": "p", "uid": "uid-p"}]},
                 {"reserved_for": (OTHER,)}, {"unreserve": ("uid-p",)},
                 id="the pod left out of reservedFor is unreserved"),
    pytest.param(ALLOCATED, {"allocation": None, "reserved_for": ()}, {"deallocate": True},
                 id="no allocation and no consumer: PostFilter's deallocation"),
])
def test_what_a_claim_update_asks_of_the_api(status: dict[str, Any] | None, change: dict[str, Any],
                                             expected: dict[str, Any] | None) -> None:
    seen = parse_resource_claim(claim_manifest(status=status))
    write = claim_write(dataclasses.replace(seen, **change), {})
    if expected is None:
        assert write is None
        return
    assert write is not None
    got = {"allocation": write.allocation, "reserve": write.reserve, "unreserve": write.unreserve,
           "deallocate": write.deallocate}
    assert got == {"allocation": None, "reserve": (), "unreserve": (), "deallocate": False, **expected}
    assert (write.namespace, write.name, write.uid) == ("default", "c", "uid-c")
    assert write.seen is seen.raw


@pytest.mark.parametrize(("features", "stamped"), [
    pytest.param(FEATURES_1_36, True, id="1.36: DRADeviceBindingConditions stamps the allocation"),
    pytest.param(FEATURES_1_30, False, id="1.30: no allocationTimestamp"),
])
def test_the_allocation_timestamp_follows_the_gates(features: Any, stamped: bool) -> None:
    seen = parse_resource_claim(claim_manifest())
    write = claim_write(dataclasses.replace(seen, allocation=ALLOC, reserved_for=(POD,)), {}, features)
    assert write is not None and write.allocation_timestamp is stamped


# ------------------------------------------------------------------------------------ allocation_json
FIRST_AVAILABLE = [{"name": "gpu", "firstAvailable": [
    {"name": "big", "deviceClassName": "a100"},
    {"name": "small", "deviceClassName": "t4", "tolerations": [{"key": "dirty", "operator": "Exists"}]}]},
    {"name": "nic", "exactly": {"deviceClassName": "t4"}}]


@pytest.mark.parametrize(("requests", "config", "results", "expected"), [
    pytest.param(None, [{"requests": ["gpu"], **opaque("claim")}, opaque("all")],
                 [DeviceResult("gpu", DRIVER, "n1", "gpu-0", admin_access=True)],
                 {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0",
                               "adminAccess": True}],
                  "config": [{"source": "FromClass", "requests": ["gpu"], **opaque("class-gpu")},
                             {"source": "FromClaim", "requests": ["gpu"], **opaque("claim")},
                             {"source": "FromClaim", **opaque("all")}]},
                 id="class config first, then the claim's (one without requests applies to all)"),
    pytest.param(FIRST_AVAILABLE, [{"requests": ["gpu/small"], **opaque("small")},
                                   {"requests": ["gpu/big"], **opaque("big")}],
                 [DeviceResult("gpu/small", DRIVER, "n1", "gpu-1"), DeviceResult("nic", DRIVER, "n1", "nic-0")],
                 {"results": [{"request": "gpu/small", "driver": DRIVER, "pool": "n1", "device": "gpu-1",
                               "tolerations": [{"key": "dirty", "operator": "Exists"}]},
                              {"request": "nic", "driver": DRIVER, "pool": "n1", "device": "nic-0"}],
                  "config": [{"source": "FromClass", "requests": ["gpu/small", "nic"], **opaque("class-t4")},
                             {"source": "FromClaim", "requests": ["gpu/small"], **opaque("small")}]},
                 id="firstAvailable: the chosen subrequest's class (shared, listed once), its tolerations and config"),
])
def test_the_allocation_as_the_api_stores_it(requests: list[dict[str, Any]] | None, config: list[dict[str, Any]],
                                             results: list[DeviceResult], expected: dict[str, Any]) -> None:
    claim = parse_resource_claim(claim_manifest(requests=requests, config=config))
    classes = {n: device_class(n, [opaque(f"class-{n}")]) for n in ("gpu", "a100", "t4")}
    got = allocation_json(claim, AllocationResult(tuple(results), None), classes)
    assert got == {"devices": expected}
