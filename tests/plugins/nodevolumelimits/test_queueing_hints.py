"""NodeVolumeLimits (CSILimits)' 1.36 queueing hints (upstream csi_test.go's
isSchedulableAfterPodDeleted, isSchedulableAfterPVCAdded, isSchedulableAfterVolumeAttachmentDeleted
and isSchedulableAfterCSINodeUpdated tables, rows from the source's branches) and its registrations
under both releases. kubesched loads no VolumeAttachment objects: the hint reads any object with an
``attacher``, as the tests' stand-in has."""

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
from kubesched.plugins import nodevolumelimits
from kubesched.plugins.nodevolumelimits import CSILimits

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def plugin(features: Features = FEATURES_1_36) -> CSILimits:
    return nodevolumelimits.new_csi(None, FrameworkHandle.for_nodes([make_node().name("n").obj()], [], MemoryObjects(),
                                                                    features=features))


def pod_with(kind: str | None, src: dict[str, Any] | None = None, *, name: str = "pod", node: str = "",
             nominated: str = "") -> Pod:
    b = make_pod().name(name)
    if kind is not None:
        b = b.volume("v", kind, src or {})
    if node:
        b = b.node(node)
    if nominated:
        b = b.nominated(nominated)
    return b.obj()


EBS = {"volumeID": "vol-1"}


@pytest.mark.parametrize(("deleted", "want"), [
    pytest.param(pod_with(None, node="n"), SKIP, id="a deleted pod without volumes is skipped"),
    pytest.param(pod_with("persistentVolumeClaim", {"claimName": "c"}), SKIP,
                 id="a deleted pod neither bound nor nominated is skipped"),
    pytest.param(pod_with("persistentVolumeClaim", {"claimName": "c"}, node="n"), Q,
                 id="a deleted bound pod with a claim queues the pod"),
    pytest.param(pod_with("persistentVolumeClaim", {"claimName": "c"}, nominated="n"), Q,
                 id="a deleted nominated pod with a claim queues the pod"),
    pytest.param(pod_with("ephemeral", {"volumeClaimTemplate": {"spec": {}}}, node="n"), Q,
                 id="a deleted pod with a generic ephemeral volume queues the pod"),
    pytest.param(pod_with("awsElasticBlockStore", EBS, node="n"), Q,
                 id="a deleted pod with a migratable inline volume queues the pod"),
    pytest.param(pod_with("emptyDir", {}, node="n"), SKIP, id="a deleted pod with only an emptyDir is skipped"),
])
def test_is_schedulable_after_pod_deleted(deleted: Pod, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_pod_deleted(make_pod().name("p").pvc("c").obj(), deleted, None) == want


def pvc(name: str, namespace: str = "default") -> Any:
    return obj({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": namespace},
                "spec": {}})


@pytest.mark.parametrize(("pod", "added", "want"), [
    pytest.param(pod_with("persistentVolumeClaim", {"claimName": "pvc-a"}), pvc("pvc-a"), Q,
                 id="the pod's claim queues it"),
    pytest.param(pod_with("persistentVolumeClaim", {"claimName": "pvc-a"}), pvc("pvc-a", "other"), SKIP,
                 id="a claim of the pod's claim name in another namespace is skipped"),
    pytest.param(pod_with("persistentVolumeClaim", {"claimName": "pvc-a"}), pvc("pvc-b"), SKIP,
                 id="a claim the pod does not use is skipped"),
    pytest.param(pod_with("ephemeral", {"volumeClaimTemplate": {"spec": {}}}), pvc("pod-v"), Q,
                 id="the pod's generic ephemeral volume's claim queues it"),
    pytest.param(pod_with("awsElasticBlockStore", EBS), pvc("pvc-a"), SKIP,
                 id="a pod without claims is skipped"),
])
def test_is_schedulable_after_pvc_added(pod: Pod, added: Any, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_pvc_added(pod, None, added) == want


@dataclass(frozen=True, slots=True)
class Attachment:
    """A deleted VolumeAttachment as the hint reads it (spec.attacher)."""

    attacher: str


@pytest.mark.parametrize(("pod", "want"), [
    pytest.param(pod_with("persistentVolumeClaim", {"claimName": "c"}), Q, id="a pod with a claim is queued"),
    pytest.param(pod_with("awsElasticBlockStore", EBS), Q,
                 id="a pod whose inline EBS volume migrates to the attacher's driver is queued"),
    pytest.param(pod_with("gcePersistentDisk", {"pdName": "d"}), SKIP,
                 id="a pod whose inline volume migrates to another driver is skipped"),
    pytest.param(pod_with("emptyDir", {}), SKIP, id="a pod without attachable volumes is skipped"),
    pytest.param(pod_with("awsElasticBlockStore", {"volumeID": "aws://zone/not-a-volume"}), Q,
                 id="a pod whose inline volume cannot be translated is queued"),
])
def test_is_schedulable_after_volume_attachment_deleted(pod: Pod, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_volume_attachment_deleted(pod, Attachment("ebs.csi.aws.com"), None) == want


def test_an_attachment_hint_given_another_kind_of_object_fails() -> None:
    with pytest.raises(TypeError):
        plugin().is_schedulable_after_volume_attachment_deleted(pod_with(None), pvc("x"), None)


def csinode(**counts: int | None) -> Any:
    drivers = []
    for name, count in counts.items():
        d: dict[str, Any] = {"name": name, "nodeID": "n"}
        if count is not None:
            d["allocatable"] = {"count": count}
        drivers.append(d)
    return obj({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "n"},
                "spec": {"drivers": drivers}})


@pytest.mark.parametrize(("old", "new_", "want"), [
    pytest.param(csinode(a=1), csinode(a=2), Q, id="a driver's limit raised queues the pod"),
    pytest.param(csinode(a=2), csinode(a=1), SKIP, id="a driver's limit lowered is skipped"),
    pytest.param(csinode(a=1), csinode(a=1), SKIP, id="unchanged limits are skipped"),
    pytest.param(csinode(a=1), csinode(a=1, b=1), Q, id="a new driver with a limit queues the pod"),
    pytest.param(csinode(a=1), csinode(a=1, b=None), SKIP, id="a new driver without a limit is skipped"),
    pytest.param(csinode(a=None), csinode(a=3), Q, id="a limit set on a driver without one queues the pod"),
])
def test_is_schedulable_after_csi_node_updated(old: Any, new_: Any, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_csi_node_updated(pod_with(None), old, new_) == want


def registrations(pl: CSILimits) -> list[tuple[str, ActionType, str | None]]:
    return [(e.event.resource, e.event.action_type, getattr(e.hint, "__name__", None))
            for e in pl.events_to_register()]


def test_the_v1_30_registration_is_unchanged() -> None:
    assert registrations(plugin(FEATURES_1_30)) == [
        (GVK.CSI_NODE, ActionType.ADD, None),
        (GVK.POD, ActionType.DELETE, None),
        (GVK.PERSISTENT_VOLUME_CLAIM, ActionType.ADD, None),
    ]


def test_the_1_36_registration_is_upstream_s() -> None:
    pl = plugin(FEATURES_1_36)
    assert registrations(pl) == [
        (GVK.CSI_NODE, ActionType.ADD, None),
        (GVK.CSI_NODE, ActionType.UPDATE, "is_schedulable_after_csi_node_updated"),
        (GVK.POD, ActionType.DELETE, "is_schedulable_after_pod_deleted"),
        (GVK.PERSISTENT_VOLUME_CLAIM, ActionType.ADD, "is_schedulable_after_pvc_added"),
        (GVK.VOLUME_ATTACHMENT, ActionType.DELETE, "is_schedulable_after_volume_attachment_deleted"),
    ]
    assert all(getattr(e.hint, "__self__", pl) is pl for e in pl.events_to_register())
