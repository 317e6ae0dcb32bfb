"""VolumeBinding's 1.36 queueing hints (upstream volume_binding_test.go TestIsSchedulableAfter*:
CSINodeChange, PersistentVolumeClaimChange, StorageClassChange, CSIStorageCapacityChange,
CSIDriverChange, as far as their rows are known, and the source's branches) and its
registrations under both releases."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from builders import make_node, make_pod, obj

from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features
from kubesched.framework import GVK, ActionType, QueueingHint
from kubesched.objects import Pod
from kubesched.objects.parse import parse_csidriver
from kubesched.plugins.volumebinding import VolumeBinding

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
MIGRATED = "storage.alpha.kubernetes.io/migrated-plugins"


def plugin(features: Features = FEATURES_1_36) -> VolumeBinding:
    handle = FrameworkHandle.for_nodes([make_node().name("n").obj()], [], MemoryObjects(), features=features)
    return VolumeBinding(handle)


def csinode(annotations: dict[str, str] | None = None) -> Any:
    meta: dict[str, Any] = {"name": "csinode-a"}
    if annotations is not None:
        meta["annotations"] = annotations
    return obj({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": meta, "spec": {"drivers": []}})


@pytest.mark.parametrize(("old", "new_", "want"), [
    pytest.param(None, csinode(), Q, id="a new CSINode queues the pod"),
    pytest.param(csinode(), csinode({MIGRATED: "kubernetes.io/aws-ebs"}), Q,
                 id="a migrated-plugins annotation added to a CSINode queues the pod"),
    pytest.param(csinode({MIGRATED: "kubernetes.io/aws-ebs"}), csinode({MIGRATED: "kubernetes.io/gce-pd"}), Q,
                 id="a migrated-plugins annotation changed queues the pod"),
    pytest.param(csinode({MIGRATED: "kubernetes.io/aws-ebs", "a": "1"}), csinode({MIGRATED: "kubernetes.io/aws-ebs"}),
                 SKIP, id="a CSINode update keeping its migrated-plugins annotation is skipped"),
])
def test_is_schedulable_after_csi_node_change(old: Any, new_: Any, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_csi_node_change(make_pod().name("p").obj(), old, new_) == want


def test_a_csi_node_hint_given_another_kind_of_object_fails() -> None:
    with pytest.raises(TypeError):
        plugin().is_schedulable_after_csi_node_change(make_pod().name("p").obj(), make_pod().obj(), csinode())


def pvc(name: str, namespace: str = "default") -> Any:
    return obj({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": namespace},
                "spec": {}})


POD_PVC = make_pod().name("pod-a").pvc("pvc-a").obj()
POD_EPHEMERAL = make_pod().name("pod-a").volume("ephemeral", "ephemeral", {"volumeClaimTemplate": {"spec": {}}}).obj()


@pytest.mark.parametrize(("pod", "new_", "want"), [
    pytest.param(make_pod().name("pod-a").obj(), pvc("pvc-a"), SKIP, id="a pod without claims is skipped"),
    pytest.param(POD_PVC, pvc("pvc-a", "other"), SKIP,
                 id="a claim with the pod's claim name in another namespace is skipped"),
    pytest.param(POD_PVC, pvc("pvc-b"), SKIP, id="a claim the pod does not use is skipped"),
    pytest.param(POD_EPHEMERAL, pvc("pod-b-ephemeral"), SKIP,
                 id="a claim that is not the pod's generic ephemeral volume's is skipped"),
    pytest.param(POD_PVC, pvc("pvc-a"), Q, id="the pod's claim queues it"),
    pytest.param(POD_EPHEMERAL, pvc("pod-a-ephemeral"), Q, id="the pod's generic ephemeral volume's claim queues it"),
])
def test_is_schedulable_after_persistent_volume_claim_change(pod: Pod, new_: Any, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_persistent_volume_claim_change(pod, pvc(new_.name, new_.namespace), new_) == want
    assert plugin().is_schedulable_after_persistent_volume_claim_change(pod, None, new_) == want


def test_a_claim_hint_given_another_kind_of_object_fails() -> None:
    with pytest.raises(TypeError):
        plugin().is_schedulable_after_persistent_volume_claim_change(POD_PVC, None, csinode())


def storage_class(topology_values: list[str] | None = None) -> Any:
    m: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "sc-a"},
                         "provisioner": "p"}
    if topology_values is not None:
        m["allowedTopologies"] = [{"matchLabelExpressions": [{"key": "zone", "values": topology_values}]}]
    return obj(m)


@pytest.mark.parametrize(("old", "new_", "want"), [
    pytest.param(None, storage_class(), Q, id="a new storage class queues the pod"),
    pytest.param(storage_class(["a"]), storage_class(["a", "b"]), Q,
                 id="a storage class whose allowed topologies change queues the pod"),
    pytest.param(storage_class(["a"]), storage_class(["a"]), SKIP,
                 id="a storage class update keeping its allowed topologies is skipped"),
])
def test_is_schedulable_after_storage_class_change(old: Any, new_: Any, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_storage_class_change(POD_PVC, old, new_) == want


@dataclass(frozen=True, slots=True)
class Capacity:
    """A CSIStorageCapacity as the hint reads it (kubesched loads none yet)."""

    capacity: int | None = None
    maximum_volume_size: int | None = None


@pytest.mark.parametrize(("old", "new_", "want"), [
    pytest.param(None, Capacity(100), Q, id="a new storage capacity queues the pod"),
    pytest.param(Capacity(100), Capacity(200), Q, id="a capacity that grows queues the pod"),
    pytest.param(Capacity(None, 100), Capacity(None, 200), Q, id="a maximum volume size that grows queues the pod"),
    pytest.param(Capacity(100, 50), Capacity(100, 80), Q,
                 id="the maximum volume size decides when both are set and it grows"),
    pytest.param(Capacity(100, 50), Capacity(200, 40), SKIP,
                 id="a capacity that grows while the maximum volume size shrinks is skipped"),
    pytest.param(Capacity(200), Capacity(100), SKIP, id="a capacity that shrinks is skipped"),
    pytest.param(Capacity(100), Capacity(100), SKIP, id="an unchanged capacity is skipped"),
    pytest.param(Capacity(), Capacity(1), Q, id="a capacity that appears queues the pod"),
    pytest.param(Capacity(1), Capacity(), SKIP, id="a capacity that disappears is skipped"),
])
def test_is_schedulable_after_csi_storage_capacity_change(old: Capacity | None, new_: Capacity,
                                                          want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_csi_storage_capacity_change(POD_PVC, old, new_) == want


def test_a_storage_capacity_hint_given_another_kind_of_object_fails() -> None:
    with pytest.raises(TypeError):
        plugin().is_schedulable_after_csi_storage_capacity_change(POD_PVC, None, csinode())


def csidriver(storage_capacity: bool | None, name: str = "test.csi.driver") -> Any:
    spec: dict[str, Any] = {}
    if storage_capacity is not None:
        spec["storageCapacity"] = storage_capacity
    return parse_csidriver({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name},
                            "spec": spec})


POD_CSI = make_pod().name("pod-a").volume("v", "csi", {"driver": "test.csi.driver"}).obj()


@pytest.mark.parametrize(("pod", "old", "new_", "want"), [
    pytest.param(POD_PVC, csidriver(True), csidriver(False), SKIP, id="a pod without an inline CSI volume is skipped"),
    pytest.param(POD_CSI, csidriver(True, "other"), csidriver(False, "other"), SKIP,
                 id="another driver's change is skipped"),
    pytest.param(POD_CSI, csidriver(True), csidriver(False), Q,
                 id="the pod's driver no longer tracking storage capacity queues it"),
    pytest.param(POD_CSI, csidriver(True), csidriver(None), Q,
                 id="the pod's driver dropping storageCapacity queues it"),
    pytest.param(POD_CSI, csidriver(False), csidriver(True), SKIP,
                 id="the pod's driver starting to track storage capacity is skipped"),
    pytest.param(POD_CSI, csidriver(True), csidriver(True), SKIP, id="an unchanged driver is skipped"),
])
def test_is_schedulable_after_csi_driver_change(pod: Pod, old: Any, new_: Any, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_csi_driver_change(pod, old, new_) == want


def registrations(pl: VolumeBinding) -> list[tuple[str, ActionType, str | None]]:
    return [(e.event.resource, e.event.action_type, getattr(e.hint, "__name__", None))
            for e in pl.events_to_register()]


def test_the_v1_30_registration_is_unchanged() -> None:
    assert registrations(plugin(FEATURES_1_30)) == [
        (GVK.STORAGE_CLASS, ActionType.ADD | ActionType.UPDATE, None),
        (GVK.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE, None),
        (GVK.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE, None),
        (GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT, None),
        (GVK.CSI_NODE, ActionType.ADD | ActionType.UPDATE, None),
        (GVK.CSI_DRIVER, ActionType.ADD | ActionType.UPDATE, None),
        (GVK.CSI_STORAGE_CAPACITY, ActionType.ADD | ActionType.UPDATE, None),
    ]


def test_the_1_36_registration_is_upstream_s() -> None:
    pl = plugin(FEATURES_1_36)
    assert registrations(pl) == [
        (GVK.STORAGE_CLASS, ActionType.ADD | ActionType.UPDATE, "is_schedulable_after_storage_class_change"),
        (GVK.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE,
         "is_schedulable_after_persistent_volume_claim_change"),
        (GVK.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE, None),
        (GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL, None),
        (GVK.CSI_NODE, ActionType.ADD | ActionType.UPDATE, "is_schedulable_after_csi_node_change"),
        (GVK.CSI_DRIVER, ActionType.UPDATE, "is_schedulable_after_csi_driver_change"),
        (GVK.CSI_STORAGE_CAPACITY, ActionType.ADD | ActionType.UPDATE, "is_schedulable_after_csi_storage_capacity_change"),
    ]
    assert all(getattr(e.hint, "__self__", pl) is pl for e in pl.events_to_register())
