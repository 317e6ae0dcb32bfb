"""Dynamic Resource Allocation in live mode: ``kubesched run`` (in-process, on a thread) against
the local API server, with DeviceClasses, ResourceSlices and ResourceClaims served under
resource.k8s.io/v1. The test plays the resourceclaim controller where one is needed (it creates
a template's claim for the pod and names it in the pod's status.resourceClaimStatuses).

What is checked: a pod with claims is bound to the node whose devices were allocated; its claim
on the server carries the allocation (results, class config, node selector, allocation
timestamp), the pod in reservedFor and the delete-protection finalizer, written with an Update
(finalizer) and an UpdateStatus as upstream's bindClaim; a second pod sharing the claim is only
appended to reservedFor; a 409 is retried after reading the claim again (and conflicts on every
attempt fail the binding cycle: the pod is retried); a claim created later unblocks a pod held at
PreEnqueue; a failed bind takes the pod out of reservedFor again (Unreserve); with the gate off
(``--kube-version 1.30``) no resource.k8s.io watch is opened."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from kubesched.features import features_for
from kubesched.live.command import RunOptions, run
from kubesched.live.flags import LeaderElectionFlags, ServingOptions
from kubesched.plugins.registry import registry_for
from kubesched.testing.apiserver import LocalApiServer

from .apihelpers import node, placements, pod, successful_binds, wait_until

DRIVER = "gpu.example.com"
FINALIZER = "resource.kubernetes.io/delete-protection"
GROUP = "resource.k8s.io"


# ------------------------------------------------------------------------------------ manifests
def device_class(name: str = "gpu") -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
                     "config": [{"opaque": {"driver": DRIVER, "parameters": {"sharing": "none"}}}]}}


def resource_slice(node_name: str, devices: int = 2) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node_name}-gpus"},
            "spec": {"driver": DRIVER, "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}"} for i in range(devices)]}}


def claim_spec() -> dict[str, Any]:
    return {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}


def resource_claim(name: str, *, finalizers: list[str] | None = None,
                   owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if finalizers:
        meta["finalizers"] = finalizers
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner["metadata"]["name"],
                                    "uid": owner["metadata"]["uid"], "controller": True,
                                    "blockOwnerDeletion": True}]
        meta["annotations"] = {"resource.kubernetes.io/pod-claim-name": "gpu"}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta, "spec": claim_spec()}


def claim_template(name: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"spec": claim_spec()}}


def gpu_pod(name: str, *, claim: str = "", template: str = "") -> dict[str, Any]:
    source = {"resourceClaimName": claim} if claim else {"resourceClaimTemplateName": template}
    out = pod(name, resourceClaims=[{"name": "gpu", **source}])
    out["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return out


def create_template_claim(api: LocalApiServer, pod_name: str, template: str) -> str:
    """What the resourceclaim controller does for a pod's template claim: a claim owned by the
    pod, then the pod's status.resourceClaimStatuses naming it."""
    owner = api.get("pods", pod_name, "default")
    name = f"{pod_name}-gpu-x7k2p"
    body = resource_claim(name, owner=owner)
    body["spec"] = api.get("resourceclaimtemplates", template, "default")["spec"]["spec"]
    api.create(body)
    api.patch("pods", pod_name, {"status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": name}]}},
              "default", subresource="status")
    return name


# ------------------------------------------------------------------------------------ fixtures
@pytest.fixture
def api() -> Iterator[LocalApiServer]:
    """Two nodes; only n2 has devices (two GPUs)."""
    with LocalApiServer(bookmark_interval=0.2) as server:
        server.create(node("n1"))
        server.create(node("n2"))
        server.create(device_class())
        server.create(resource_slice("n2"))
        yield server


class Kubesched:
    """``kubesched run --master URL --leader-elect=false --secure-port 0 [--kube-version V]``,
    in-process on a thread."""

    def __init__(self, api: LocalApiServer, kube_version: str | None = None) -> None:
        self.stop = threading.Event()
        self.error: BaseException | None = None
        options = RunOptions(master=api.url, deterministic=True, kube_version=kube_version)
        registry = registry_for(features_for(kube_version))

        def target() -> None:
            try:
                run(options, ServingOptions(secure_port=0), LeaderElectionFlags(leader_elect=False), registry,
                    stop=self.stop)
            except BaseException as e:  # noqa: BLE001 - re-raised by close()
                self.error = e

        self.thread = threading.Thread(target=target, name="kubesched-run-dra", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(20)
        assert not self.thread.is_alive(), "kubesched run did not stop"
        if self.error is not None:
            raise self.error


@pytest.fixture
def kubesched(api: LocalApiServer) -> Iterator[Kubesched]:
    k = Kubesched(api)
    try:
        yield k
    finally:
        k.close()


def bound_to(api: LocalApiServer, name: str) -> str:
    return placements(api).get(name, "")


def claim_writes(api: LocalApiServer) -> list[tuple[str, str, str, int]]:
    """The scheduler's resource.k8s.io requests other than list / watch: (verb, resource,
    subresource, code)."""
    return [(c.verb, c.resource, c.subresource, c.code) for c in api.calls()
            if c.group == GROUP and c.verb not in ("list", "watch")]


def expected_allocation(device: str = "gpu-0") -> dict[str, Any]:
    return {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n2", "device": device}],
                        "config": [{"source": "FromClass", "requests": ["gpu"],
                                    "opaque": {"driver": DRIVER, "parameters": {"sharing": "none"}}}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}}


def allocation_without_timestamp(claim: dict[str, Any]) -> dict[str, Any]:
    allocation = dict(claim["status"]["allocation"])
    assert allocation.pop("allocationTimestamp", None), "1.36 stamps the allocation (DRADeviceBindingConditions)"
    return allocation


def reserved_for(api: LocalApiServer, claim: str) -> list[dict[str, Any]]:
    return list(api.get("resourceclaims", claim, "default").get("status", {}).get("reservedFor") or [])


def consumer(api: LocalApiServer, pod_name: str) -> dict[str, Any]:
    return {"resource": "pods", "name": pod_name, "uid": api.get("pods", pod_name, "default")["metadata"]["uid"]}


# ------------------------------------------------------------------------------------ binding a claim
@pytest.mark.parametrize("source", [
    pytest.param("claim", id="a pod naming its ResourceClaim"),
    pytest.param("template", id="a pod whose claim the resourceclaim controller made from a template"),
])
def test_a_pod_with_a_claim_is_bound_where_its_devices_were_allocated_and_the_claim_records_it(
        api: LocalApiServer, source: str) -> None:
    if source == "claim":
        api.create(resource_claim("gpu-claim"))
        api.create(gpu_pod("p", claim="gpu-claim"))
        claim_name = "gpu-claim"
    else:
        api.create(claim_template("gpu-template"))
        api.create(gpu_pod("p", template="gpu-template"))
        claim_name = create_template_claim(api, "p", "gpu-template")
    k = Kubesched(api)
    try:
        wait_until(lambda: bound_to(api, "p"), what="the pod bound")
    finally:
        k.close()
    assert bound_to(api, "p") == "n2"
    claim = api.get("resourceclaims", claim_name, "default")
    assert claim["metadata"]["finalizers"] == [FINALIZER]
    assert allocation_without_timestamp(claim) == expected_allocation()
    assert claim["status"]["reservedFor"] == [consumer(api, "p")]
    # bindClaim: the finalizer by an Update, then allocation and reservation by one UpdateStatus,
    # both before the pod's binding; the template is never read by the scheduler.
    assert claim_writes(api) == [("update", "resourceclaims", "", 200), ("update", "resourceclaims", "status", 200)]
    status_write = api.calls("update", "resourceclaims", "status")[0]
    assert status_write.at < api.calls("create", "pods", "binding")[0].at
    assert not api.calls(resource="resourceclaimtemplates", user_agent="kubesched")


def test_a_second_pod_sharing_an_allocated_claim_is_only_added_to_its_reserved_for(
        api: LocalApiServer, kubesched: Kubesched) -> None:
    api.create(resource_claim("shared"))
    api.create(gpu_pod("first", claim="shared"))
    wait_until(lambda: bound_to(api, "first"), what="the first pod bound")
    allocation = api.get("resourceclaims", "shared", "default")["status"]["allocation"]
    api.create(gpu_pod("second", claim="shared"))
    wait_until(lambda: bound_to(api, "second"), what="the second pod bound")
    claim = api.get("resourceclaims", "shared", "default")
    assert bound_to(api, "second") == "n2"  # where the allocation is
    assert claim["status"]["allocation"] == allocation
    assert claim["status"]["reservedFor"] == [consumer(api, "first"), consumer(api, "second")]
    # One finalizer update in all; the second pod only has the status written.
    assert claim_writes(api) == [("update", "resourceclaims", "", 200), ("update", "resourceclaims", "status", 200),
                                 ("update", "resourceclaims", "status", 200)]


@pytest.mark.parametrize("slow_write", [
    pytest.param(False, id="claim writes answered at once"),
    pytest.param(True, id="the first claim's write held 1 s: its devices stay taken while it is on the wire"),
])
def test_pods_with_their_own_claims_get_distinct_devices(api: LocalApiServer, slow_write: bool) -> None:
    if slow_write:
        api.delay_next(1, 1.0, verbs=["update"], resources=["resourceclaims"])
    k = Kubesched(api)
    try:
        api.create(resource_claim("claim-a"))
        api.create(gpu_pod("a", claim="claim-a"))
        if slow_write:
            # The next pods are scheduled while a's PreBind waits for the server.
            wait_until(lambda: api.faults_left() == 0, what="a's claim write held by the server")
        for name in ("b", "c"):
            api.create(resource_claim(f"claim-{name}"))
            api.create(gpu_pod(name, claim=f"claim-{name}"))
        wait_until(lambda: bound_to(api, "a") and bound_to(api, "b"), what="two pods bound")
        wait_until(lambda: [e for e in api.objects("events") if e.get("reason") == "FailedScheduling"],
                   what="the third pod found unschedulable")
    finally:
        k.close()
    devices = sorted(api.get("resourceclaims", f"claim-{n}", "default")["status"]["allocation"]["devices"]
                     ["results"][0]["device"] for n in ("a", "b"))
    assert devices == ["gpu-0", "gpu-1"]
    # Two GPUs only: the third pod stays pending, its claim unallocated.
    assert not bound_to(api, "c")
    assert "allocation" not in api.get("resourceclaims", "claim-c", "default").get("status", {})
    assert successful_binds(api) == {"default/a": 1, "default/b": 1}


# ------------------------------------------------------------------------------------ conflicts
@pytest.mark.parametrize(("finalizers", "conflicting"), [
    pytest.param([], "", id="the finalizer update conflicts"),
    pytest.param([FINALIZER], "status", id="the status update conflicts (the finalizer was there)"),
])
def test_a_claim_changed_under_the_scheduler_is_read_again_and_written_on_top_of_the_change(
        api: LocalApiServer, finalizers: list[str], conflicting: str) -> None:
    api.create(resource_claim("c", finalizers=finalizers))
    # The scheduler's first claim write waits on the server while someone else labels the
    # claim: it then answers a real resourceVersion conflict.
    api.delay_next(1, 1.0, verbs=["update"], resources=["resourceclaims"])
    api.create(gpu_pod("p", claim="c"))
    k = Kubesched(api)
    try:
        wait_until(lambda: api.faults_left() == 0, what="the claim write held by the server")
        current = api.get("resourceclaims", "c", "default")
        current["metadata"].setdefault("labels", {})["team"] = "ml"
        api.update("resourceclaims", "c", current, "default")
        wait_until(lambda: bound_to(api, "p"), what="the pod bound")
    finally:
        k.close()
    claim = api.get("resourceclaims", "c", "default")
    assert claim["metadata"]["labels"] == {"team": "ml"}  # kept: the retry started from the new claim
    assert claim["metadata"]["finalizers"] == [FINALIZER]
    assert allocation_without_timestamp(claim) == expected_allocation()
    assert claim["status"]["reservedFor"] == [consumer(api, "p")]
    writes = claim_writes(api)
    assert writes[0] == ("update", "resourceclaims", conflicting, 409)
    assert writes[1] == ("get", "resourceclaims", "", 200)  # RetryOnConflict: the claim read again
    assert writes[-1] == ("update", "resourceclaims", "status", 200)
    assert successful_binds(api) == {"default/p": 1}


def test_conflicts_on_every_attempt_fail_the_binding_cycle_and_the_pod_is_retried(api: LocalApiServer) -> None:
    api.create(resource_claim("c"))
    api.fail_next(5, 409, verbs=["update"], resources=["resourceclaims"])  # retry.DefaultRetry: 5 steps
    api.create(gpu_pod("p", claim="c"))
    k = Kubesched(api)
    try:
        wait_until(lambda: bound_to(api, "p"), timeout=15.0, what="the pod bound on a later attempt")
    finally:
        k.close()
    writes = claim_writes(api)
    first_attempt = writes[:9]
    assert first_attempt == [("update", "resourceclaims", "", 409),
                             *[("get", "resourceclaims", "", 200), ("update", "resourceclaims", "", 409)] * 4]
    assert writes[9:] == [("update", "resourceclaims", "", 200), ("update", "resourceclaims", "status", 200)]
    failed = [e for e in api.objects("events") if e.get("reason") == "FailedScheduling"]
    assert any("add finalizer to claim default/c" in e["note"] for e in failed), [e["note"] for e in failed]
    assert successful_binds(api) == {"default/p": 1}


# ------------------------------------------------------------------------------------ watch events
def test_a_claim_created_later_unblocks_the_pod_waiting_for_it_at_pre_enqueue(
        api: LocalApiServer, kubesched: Kubesched) -> None:
    api.create(gpu_pod("p", claim="late"))
    api.create(pod("plain"))
    wait_until(lambda: bound_to(api, "plain"), what="the scheduler running")
    # DynamicResources' PreEnqueue holds the pod: never attempted, so no FailedScheduling either.
    assert not bound_to(api, "p")
    assert not [e for e in api.objects("events") if e["regarding"]["name"] == "p"]
    api.create(resource_claim("late"))  # a watch event: ResourceClaim/Add
    wait_until(lambda: bound_to(api, "p"), what="the pod bound once its claim exists")
    assert bound_to(api, "p") == "n2"
    assert reserved_for(api, "late") == [consumer(api, "p")]


def test_devices_added_later_unblock_a_pod_whose_claim_could_not_be_allocated(api: LocalApiServer,
                                                                            kubesched: Kubesched) -> None:
    api.create(resource_claim("c"))
    api.create({**resource_claim("big"), "spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 3}}]}}})
    big = gpu_pod("p", claim="big")
    api.create(big)
    wait_until(lambda: [e for e in api.objects("events") if e.get("reason") == "FailedScheduling"],
               what="the pod found unschedulable")
    assert "cannot allocate all claims" in api.objects("events")[0]["note"]
    api.create(resource_slice("n1", devices=3))  # ResourceSlice/Add
    wait_until(lambda: bound_to(api, "p"), timeout=15.0, what="the pod bound on the new devices")
    assert bound_to(api, "p") == "n1"


# ------------------------------------------------------------------------------------ unreserve
def test_a_failed_bind_takes_the_pod_out_of_the_claims_reserved_for(api: LocalApiServer) -> None:
    api.create(resource_claim("c"))
    api.fail_next(1, 500, verbs=["create"], resources=["pods"])  # the first binding answers 500
    api.create(gpu_pod("p", claim="c"))
    k = Kubesched(api)
    try:
        wait_until(lambda: api.calls("patch", "resourceclaims", "status"), what="Unreserve's patch")
        patch = api.calls("patch", "resourceclaims", "status")[0]
        assert patch.body["status"] == {"reservedFor": [{"$patch": "delete", "uid": consumer(api, "p")["uid"]}]}
        wait_until(lambda: bound_to(api, "p"), timeout=15.0, what="the pod bound on its next attempt")
    finally:
        k.close()
    # The allocation stayed (only the reservation was withdrawn); the next attempt reserved again.
    assert reserved_for(api, "c") == [consumer(api, "p")]
    assert successful_binds(api) == {"default/p": 1}


# ------------------------------------------------------------------------------------ the gate
@pytest.mark.parametrize(("kube_version", "watched"), [
    pytest.param("1.30", set(), id="1.30: DynamicResourceAllocation off, no resource.k8s.io watch"),
    pytest.param("1.36", {"deviceclasses", "resourceslices", "resourceclaims"},
                 id="1.36: DeviceClasses, ResourceSlices and ResourceClaims watched, never templates"),
])
def test_resource_k8s_io_is_watched_only_with_the_gate_on(api: LocalApiServer, kube_version: str,
                                                           watched: set[str]) -> None:
    api.create(pod("plain"))
    k = Kubesched(api, kube_version)
    try:
        wait_until(lambda: bound_to(api, "plain"), what="the scheduler running")
    finally:
        k.close()
    dra_calls = [c for c in api.calls() if c.group == GROUP]
    assert {c.resource for c in dra_calls if c.verb == "watch"} == watched
    assert {c.resource for c in dra_calls if c.verb == "list"} == watched
