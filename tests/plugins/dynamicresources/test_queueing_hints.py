"""DynamicResources' 1.36 queueing hints (upstream dynamicresources_test.go
TestIsSchedulableAfterClaimChange and TestIsSchedulableAfterPodChange, rows from the source's
branches) and its registrations under both releases (and with DynamicResourceAllocation off)."""

from __future__ import annotations

from typing import Any

import pytest
from builders import make_node, make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features, features_for
from kubesched.framework import GVK, ActionType, QueueingHint
from kubesched.objects import Pod
from kubesched.objects.devices import ResourceClaim, parse_resource_claim
from kubesched.plugins.dynamicresources.plugin import DynamicResources

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
ALLOCATION = {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}]}}


def claim(name: str, *, uid: str = "", allocated: bool = False, reserved: bool = False,
          finalizers: list[str] | None = None, owner_pod: Pod | None = None) -> ResourceClaim:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": uid or f"uid-claim-{name}"}
    if finalizers:
        meta["finalizers"] = finalizers
    if owner_pod is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner_pod.name, "uid": owner_pod.uid,
                                    "controller": True}]
    status: dict[str, Any] = {}
    if allocated:
        status["allocation"] = ALLOCATION
    if reserved:
        status["reservedFor"] = [{"resource": "pods", "name": "other", "uid": "uid-other"}]
    return parse_resource_claim({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
                                 "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                                     "deviceClassName": "gpu"}}]}}, "status": status})


def pod_with_claims(*, claim_name: str = "", template: bool = False, generated: str | None = None,
                    name: str = "p") -> Pod:
    b = make_pod().name(name)
    ref: dict[str, Any] = {"name": "c0"}
    if template:
        ref["resourceClaimTemplateName"] = "tmpl"
    else:
        ref["resourceClaimName"] = claim_name
    b.m["spec"]["resourceClaims"] = [ref]
    if generated is not None:
        b.m.setdefault("status", {})["resourceClaimStatuses"] = [{"name": "c0", "resourceClaimName": generated}]
    return b.obj()


def plugin(claims: tuple[ResourceClaim, ...] = (), features: Features = FEATURES_1_36) -> DynamicResources:
    handle = FrameworkHandle.for_nodes([make_node().name("n1").obj()], [], MemoryObjects(resource_claims=claims),
                                       features=features)
    return DynamicResources(handle)


POD = pod_with_claims(claim_name="my-claim")
MINE = claim("my-claim")


@pytest.mark.parametrize(("claims", "old", "new_", "want"), [
    pytest.param((MINE,), None, MINE, Q, id="the pod's claim created queues it"),
    pytest.param((), None, MINE, SKIP, id="while the pod's claim is not in the cluster every change is skipped"),
    pytest.param((MINE, claim("other")), None, claim("other"), SKIP, id="another claim created is skipped"),
    pytest.param((MINE, claim("other")), claim("other", allocated=True), claim("other"), Q,
                 id="another claim deallocated frees devices and queues the pod"),
    pytest.param((MINE,), MINE, claim("my-claim", finalizers=["f"]), SKIP,
                 id="the pod's claim updated without a status change is skipped"),
    pytest.param((MINE,), MINE, claim("my-claim", allocated=True), Q,
                 id="the pod's claim allocated queues it"),
    pytest.param((MINE,), claim("my-claim", allocated=True), claim("my-claim", allocated=True, reserved=True), Q,
                 id="the pod's claim reserved for a consumer queues it"),
    pytest.param((MINE, claim("other")), claim("other"), claim("other", allocated=True), SKIP,
                 id="another claim allocated is skipped"),
])
def test_is_schedulable_after_claim_change(claims: tuple[ResourceClaim, ...], old: ResourceClaim | None,
                                           new_: ResourceClaim, want: QueueingHint) -> None:
    assert plugin(claims).is_schedulable_after_claim_change(POD, old, new_) == want


def test_a_claim_status_change_outside_the_model_is_seen() -> None:
    """status.devices is not modelled: the manifest's status decides."""
    old = claim("my-claim", allocated=True)
    new_raw = dict(old.raw)
    new_raw["status"] = {**old.raw["status"], "devices": [{"driver": "gpu.example.com", "pool": "n1",
                                                            "device": "gpu-0", "conditions": [{"type": "Ready"}]}]}
    assert plugin((MINE,)).is_schedulable_after_claim_change(POD, old, parse_resource_claim(new_raw)) == Q


def test_a_claim_hint_given_another_kind_of_object_fails() -> None:
    with pytest.raises(TypeError):
        plugin((MINE,)).is_schedulable_after_claim_change(POD, None, POD)


TEMPLATE_POD = pod_with_claims(template=True)


@pytest.mark.parametrize(("claims", "modified", "want"), [
    pytest.param((), pod_with_claims(template=True, generated="p-c0", name="other"), SKIP,
                 id="another pod's update is skipped"),
    pytest.param((), TEMPLATE_POD, SKIP, id="the pod still without its generated claim's name is skipped"),
    pytest.param((), pod_with_claims(template=True, generated="p-c0"), SKIP,
                 id="the pod naming a generated claim not yet in the cluster is skipped"),
    pytest.param((claim("p-c0", owner_pod=TEMPLATE_POD),), pod_with_claims(template=True, generated="p-c0"), Q,
                 id="the pod naming its existing generated claim queues it"),
    pytest.param((claim("p-c0"),), pod_with_claims(template=True, generated="p-c0"), SKIP,
                 id="the pod naming a claim it does not own is skipped"),
])
def test_is_schedulable_after_pod_change(claims: tuple[ResourceClaim, ...], modified: Pod, want: QueueingHint) -> None:
    assert plugin(claims).is_schedulable_after_pod_change(TEMPLATE_POD, TEMPLATE_POD, modified) == want


def registrations(pl: DynamicResources) -> list[tuple[str, ActionType, str | None]]:
    return [(e.event.resource, e.event.action_type, getattr(e.hint, "__name__", None))
            for e in pl.events_to_register()]


def test_the_v1_30_registration_is_unchanged() -> None:
    assert registrations(plugin(features=FEATURES_1_30)) == [
        (GVK.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE, None),
        (GVK.RESOURCE_SLICE, ActionType.ALL, None),
        (GVK.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE, None),
        (GVK.NODE, ActionType.ADD | ActionType.UPDATE, None),
    ]


def test_the_1_36_registration_is_upstream_s() -> None:
    pl = plugin()
    assert registrations(pl) == [
        (GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE, None),
        (GVK.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE, "is_schedulable_after_claim_change"),
        (GVK.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM, "is_schedulable_after_pod_change"),
        (GVK.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE, None),
        (GVK.RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE, None),
    ]
    assert all(getattr(e.hint, "__self__", pl) is pl for e in pl.events_to_register())


def test_a_disabled_plugin_registers_nothing() -> None:
    off = features_for("1.36", ["DynamicResourceAllocation=false"])
    assert plugin(features=off).events_to_register() == []
