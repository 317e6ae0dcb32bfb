"""The local API server's resource.k8s.io/v1 kinds (kubesched.testing.apiserver): DeviceClasses,
ResourceSlices, ResourceClaims and ResourceClaimTemplates through HTTP (list, watch, get,
create, update) with the live client, and the ResourceClaim semantics of the real API server:
the status subresource, an immutable spec, resourceVersion conflicts, the status validation
(ValidateResourceClaimStatusUpdate) and finalizers holding a deletion."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from kubesched.cluster.live import ApiClient, ClusterConfig, decode
from kubesched.cluster.resources import RESOURCES
from kubesched.errors import ApiError
from kubesched.objects.devices import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from kubesched.testing.apiserver import ApiStatusError, LocalApiServer

from .test_dynamic_resources import (
    FINALIZER,
    claim_template,
    device_class,
    resource_claim,
    resource_slice,
)

RESULT = {"request": "gpu", "driver": "gpu.example.com", "pool": "n2", "device": "gpu-0"}
ALLOCATION = {"devices": {"results": [RESULT]}}
POD_P = {"resource": "pods", "name": "p", "uid": "uid-p"}


@pytest.fixture
def api() -> Iterator[LocalApiServer]:
    with LocalApiServer(bookmark_interval=0.2) as server:
        yield server


@pytest.fixture
def client(api: LocalApiServer) -> Iterator[ApiClient]:
    with ApiClient(ClusterConfig(server=api.url), qps=0, timeout=5.0, check_calls=False) as c:
        yield c


@pytest.mark.parametrize(("manifest", "plural", "typed"), [
    pytest.param(device_class(), "deviceclasses", DeviceClass, id="DeviceClass"),
    pytest.param(resource_slice("n2"), "resourceslices", ResourceSlice, id="ResourceSlice"),
    pytest.param(resource_claim("c"), "resourceclaims", ResourceClaim, id="ResourceClaim"),
    pytest.param(claim_template("t"), "resourceclaimtemplates", ResourceClaimTemplate, id="ResourceClaimTemplate"),
])
def test_each_kind_is_served_and_read_by_the_live_client(api: LocalApiServer, client: ApiClient,
                                                         manifest: dict[str, Any], plural: str, typed: type) -> None:
    r = RESOURCES[plural]
    ns = manifest["metadata"].get("namespace", "") if r.namespaced else ""
    created = client.request("create", r, namespace=ns, body=manifest)
    items, rv = client.list(r)
    assert [i["metadata"]["name"] for i in items] == [manifest["metadata"]["name"]]
    assert isinstance(decode(r, items[0]), typed)
    with client.watch(r, "0") as stream:
        etype, obj = next(stream.events())
    assert (etype, obj["metadata"]["name"]) == ("ADDED", manifest["metadata"]["name"])
    got = client.request("get", r, namespace=ns, name=manifest["metadata"]["name"])
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    labelled = copy.deepcopy(got)
    labelled["metadata"]["labels"] = {"a": "b"}
    client.request("update", r, namespace=ns, name=manifest["metadata"]["name"], body=labelled)
    with pytest.raises(ApiError) as stale:  # the old resourceVersion
        client.request("update", r, namespace=ns, name=manifest["metadata"]["name"], body=got)
    assert stale.value.status == 409
    assert int(rv) < int(api.get(plural, manifest["metadata"]["name"], ns)["metadata"]["resourceVersion"])


def test_a_claims_status_is_written_only_through_its_status_subresource(api: LocalApiServer) -> None:
    created = api.create({**resource_claim("c"), "status": {"allocation": ALLOCATION}})
    assert "status" not in created  # dropped on create
    created["status"] = {"allocation": ALLOCATION, "reservedFor": [POD_P]}
    created["metadata"]["finalizers"] = [FINALIZER]
    updated = api.update("resourceclaims", "c", created, "default")
    assert updated["metadata"]["finalizers"] == [FINALIZER] and "status" not in updated  # the main resource
    updated["status"] = {"allocation": ALLOCATION, "reservedFor": [POD_P]}
    updated["metadata"]["labels"] = {"ignored": "yes"}
    stored = api.update("resourceclaims", "c", updated, "default", subresource="status")
    assert stored["status"] == {"allocation": ALLOCATION, "reservedFor": [POD_P]}
    assert "labels" not in stored["metadata"]  # the status subresource changes only the status
    with pytest.raises(ApiStatusError) as stale:
        api.update("resourceclaims", "c", updated, "default", subresource="status")
    assert stale.value.code == 409
    spec_change = api.get("resourceclaims", "c", "default")
    spec_change["spec"]["devices"]["requests"][0]["name"] = "other"
    with pytest.raises(ApiStatusError) as immutable:
        api.update("resourceclaims", "c", spec_change, "default")
    assert immutable.value.code == 422 and "spec: Invalid value: field is immutable" in str(immutable.value)
    # Unreserve's strategic merge patch: one reservedFor entry deleted by uid.
    patched = api.patch("resourceclaims", "c", {"status": {"reservedFor": [{"$patch": "delete", "uid": "uid-p"}]}},
                        "default", subresource="status", strategic=True)
    assert patched["status"] == {"allocation": ALLOCATION}


@pytest.mark.parametrize(("old", "new", "message"), [
    pytest.param({}, {"reservedFor": [POD_P]}, "status.reservedFor: Forbidden: may not be specified when `allocated` "
                 "is not set", id="reservedFor without an allocation"),
    pytest.param({}, {"allocation": ALLOCATION, "reservedFor": [POD_P, POD_P]},
                 'status.reservedFor[1]: Duplicate value: "uid-p"', id="a consumer twice"),
    pytest.param({}, {"allocation": ALLOCATION, "reservedFor": [{"resource": "pods", "name": "p"}]},
                 "status.reservedFor[0].uid: Required value", id="a consumer without uid"),
    pytest.param({"allocation": ALLOCATION},
                 {"allocation": {"devices": {"results": [{**RESULT, "device": "gpu-1"}]}}},
                 "status.allocation: Invalid value: field is immutable", id="an allocation changed"),
    pytest.param({}, {"allocation": {"devices": {"results": [{**RESULT, "request": "nic"}]}}},
                 'status.allocation.devices.results[0].request: Invalid value: "nic"', id="a result of no request"),
    pytest.param({}, {"allocation": {"devices": {"results": [{**RESULT, "device": ""}]}}},
                 "status.allocation.devices.results[0].device: Required value", id="a result without device"),
])
def test_invalid_claim_status_updates_are_refused(api: LocalApiServer, old: dict[str, Any], new: dict[str, Any],
                                                  message: str) -> None:
    claim = api.create(resource_claim("c"))
    if old:
        claim = api.update("resourceclaims", "c", {**claim, "status": old}, "default", subresource="status")
    with pytest.raises(ApiStatusError) as refused:
        api.update("resourceclaims", "c", {**claim, "status": new}, "default", subresource="status")
    assert refused.value.code == 422
    assert message in str(refused.value)


def test_a_claim_with_a_finalizer_is_only_marked_deleted_until_the_finalizer_goes(api: LocalApiServer) -> None:
    api.create(resource_claim("c", finalizers=[FINALIZER]))
    claim = api.update("resourceclaims", "c", {**api.get("resourceclaims", "c", "default"),
                                               "status": {"allocation": ALLOCATION, "reservedFor": [POD_P]}},
                       "default", subresource="status")
    api.delete("resourceclaims", "c", "default")
    marked = api.get("resourceclaims", "c", "default")
    assert marked["metadata"]["deletionTimestamp"]
    # No new consumer while being deleted; dropping one is fine.
    more = {**marked, "status": {**claim["status"], "reservedFor": [POD_P, {**POD_P, "name": "q", "uid": "uid-q"}]}}
    with pytest.raises(ApiStatusError) as refused:
        api.update("resourceclaims", "c", more, "default", subresource="status")
    assert "new entries may not be added while" in str(refused.value)
    released = api.update("resourceclaims", "c", {**marked, "status": {}}, "default", subresource="status")
    released["metadata"]["finalizers"] = []
    api.update("resourceclaims", "c", released, "default")
    assert api.objects("resourceclaims") == []
