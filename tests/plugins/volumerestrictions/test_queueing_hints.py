"""VolumeRestrictions' 1.36 queueing hints (upstream volume_restrictions_test.go
Test_isSchedulableAfterPodDeleted and Test_isSchedulableAfterPersistentVolumeClaimChange, rows
from the source's branches) and its registrations under both releases."""

from __future__ import annotations

from typing import Any

import pytest
from builders import make_node, make_pod, obj

from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features
from kubesched.framework import GVK, ActionType, QueueingHint
from kubesched.objects import Pod
from kubesched.plugins import volumerestrictions
from kubesched.plugins.volumerestrictions import VolumeRestrictions

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
GCE = {"pdName": "foo"}


def plugin(features: Features = FEATURES_1_36) -> VolumeRestrictions:
    return volumerestrictions.new(None, FrameworkHandle.for_nodes([make_node().name("n").obj()], [], MemoryObjects(),
                                                                  features=features))


def pvc(name: str, namespace: str = "default") -> Any:
    return obj({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": namespace},
                "spec": {"accessModes": ["ReadWriteOncePod"]}})


POD_PVC = make_pod().name("pod1").pvc("claim-with-rwop-1").obj()


@pytest.mark.parametrize(("pod", "new_", "want"), [
    pytest.param(POD_PVC, pvc("claim-with-rwop-1"), Q, id="the claim the pod uses queues it"),
    pytest.param(POD_PVC, pvc("claim-with-rwop-2"), SKIP, id="a claim the pod does not use is skipped"),
    pytest.param(POD_PVC, pvc("claim-with-rwop-1", "other"), SKIP,
                 id="a claim of the pod's name in another namespace is skipped"),
    pytest.param(make_pod().name("pod1").volume("v", "gcePersistentDisk", GCE).obj(), pvc("claim-with-rwop-1"), SKIP,
                 id="a pod without claims is skipped"),
])
def test_is_schedulable_after_persistent_volume_claim_added(pod: Pod, new_: Any, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_persistent_volume_claim_added(pod, None, new_) == want


def test_a_claim_hint_given_another_kind_of_object_fails() -> None:
    with pytest.raises(TypeError):
        plugin().is_schedulable_after_persistent_volume_claim_added(POD_PVC, None, POD_PVC)


def deleted(kind: str, src: dict[str, Any], *, namespace: str = "default") -> Pod:
    return make_pod().name("deleted").namespace(namespace).node("n").volume("v", kind, src).obj()


@pytest.mark.parametrize(("pod", "old", "want"), [
    pytest.param(make_pod().name("pod1").volume("v", "gcePersistentDisk", GCE).obj(),
                 deleted("gcePersistentDisk", GCE), Q, id="a deleted pod with a conflicting disk queues the pod"),
    pytest.param(make_pod().name("pod1").volume("v", "gcePersistentDisk", GCE).obj(),
                 deleted("gcePersistentDisk", {"pdName": "bar"}), SKIP,
                 id="a deleted pod with another disk is skipped"),
    pytest.param(make_pod().name("pod1").volume("v", "gcePersistentDisk", GCE).obj(),
                 deleted("gcePersistentDisk", GCE, namespace="other"), SKIP,
                 id="a deleted pod of another namespace is skipped"),
    pytest.param(POD_PVC, deleted("persistentVolumeClaim", {"claimName": "claim-with-rwop-1"}), Q,
                 id="a deleted pod using the pod's claim queues it"),
    pytest.param(POD_PVC, deleted("persistentVolumeClaim", {"claimName": "claim-with-rwop-2"}), SKIP,
                 id="a deleted pod using another claim is skipped"),
    pytest.param(POD_PVC, make_pod().name("deleted").node("n").obj(), SKIP,
                 id="a deleted pod without volumes is skipped"),
])
def test_is_schedulable_after_pod_deleted(pod: Pod, old: Pod, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_pod_deleted(pod, old, None) == want


def registrations(pl: VolumeRestrictions) -> list[tuple[str, ActionType, str | None]]:
    return [(e.event.resource, e.event.action_type, getattr(e.hint, "__name__", None))
            for e in pl.events_to_register()]


def test_the_v1_30_registration_is_unchanged() -> None:
    assert registrations(plugin(FEATURES_1_30)) == [
        (GVK.POD, ActionType.DELETE, None),
        (GVK.NODE, ActionType.ADD, None),
        (GVK.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE, None),
    ]


def test_the_1_36_registration_is_upstream_s() -> None:
    pl = plugin(FEATURES_1_36)
    assert registrations(pl) == [
        (GVK.POD, ActionType.DELETE, "is_schedulable_after_pod_deleted"),
        (GVK.NODE, ActionType.ADD, None),
        (GVK.PERSISTENT_VOLUME_CLAIM, ActionType.ADD, "is_schedulable_after_persistent_volume_claim_added"),
    ]
    assert all(getattr(e.hint, "__self__", pl) is pl for e in pl.events_to_register())
