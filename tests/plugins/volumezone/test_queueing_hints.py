"""VolumeZone's 1.36 queueing hints (upstream volume_zone_test.go
TestIsSchedulableAfterPersistentVolumeClaimChange, TestIsSchedulableAfterStorageClassAdded and
TestIsSchedulableAfterPersistentVolumeChange) and its registrations under both releases."""

from __future__ import annotations

from typing import Any

import pytest
from builders import make_node, make_pod, obj

from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features
from kubesched.framework import GVK, ActionType, QueueingHint
from kubesched.objects import Pod
from kubesched.plugins import volumezone
from kubesched.plugins.volumezone import VolumeZone

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
ZONE = "topology.kubernetes.io/zone"


def plugin(features: Features = FEATURES_1_36) -> VolumeZone:
    return volumezone.new(None, FrameworkHandle.for_nodes([make_node().name("n").obj()], [], MemoryObjects(),
                                                          features=features))


def pvc(name: str, volume_name: str = "", namespace: str = "default") -> Any:
    return obj({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": namespace},
                "spec": {"volumeName": volume_name}})


POD = make_pod().name("pod_1").pvc("PVC_1").obj()


@pytest.mark.parametrize(("pod", "old", "new_", "want"), [
    pytest.param(POD, None, pvc("PVC_2"), SKIP, id="a new claim the pod does not use is skipped"),
    pytest.param(POD, None, pvc("PVC_1", namespace="other"), SKIP,
                 id="a new claim of the pod's claim name in another namespace is skipped"),
    pytest.param(POD, None, pvc("PVC_1", "Vol_1"), Q, id="the pod's claim created bound queues it"),
    pytest.param(POD, pvc("PVC_1"), pvc("PVC_1", "Vol_1"), Q, id="the pod's claim getting its volume queues it"),
    pytest.param(make_pod().name("pod_1").obj(), pvc("PVC_1"), pvc("PVC_1", "Vol_1"), SKIP,
                 id="a claim update for a pod without claims is skipped"),
])
def test_is_schedulable_after_persistent_volume_claim_change(pod: Pod, old: Any, new_: Any,
                                                             want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_persistent_volume_claim_change(pod, old, new_) == want


def storage_class(mode: str | None) -> Any:
    m: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "SC_1"},
                         "provisioner": "p"}
    if mode is not None:
        m["volumeBindingMode"] = mode
    return obj(m)


@pytest.mark.parametrize(("new_", "want"), [
    pytest.param(storage_class(None), SKIP, id="a new class without a binding mode (Immediate) is skipped"),
    pytest.param(storage_class("Immediate"), SKIP, id="a new Immediate class is skipped"),
    pytest.param(storage_class("WaitForFirstConsumer"), Q, id="a new WaitForFirstConsumer class queues the pod"),
])
def test_is_schedulable_after_storage_class_added(new_: Any, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_storage_class_added(POD, None, new_) == want


def test_a_storage_class_hint_given_another_kind_of_object_fails() -> None:
    with pytest.raises(TypeError):
        plugin().is_schedulable_after_storage_class_added(POD, None, "not-a-storageclass")


def pv(labels: dict[str, str]) -> Any:
    return obj({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "Vol_1", "labels": labels},
                "spec": {}})


@pytest.mark.parametrize(("old", "new_", "want"), [
    pytest.param(None, pv({BETA_ZONE: "us-west1-b"}), Q, id="a new volume queues the pod"),
    pytest.param(pv({BETA_ZONE: "us-west1-a"}), pv({BETA_ZONE: "us-west1-b"}), Q,
                 id="a volume whose zone changes queues the pod"),
    pytest.param(pv({BETA_ZONE: "us-west1-a"}), pv({BETA_ZONE: "us-west1-a", ZONE: "zone"}), Q,
                 id="a volume gaining a topology label queues the pod"),
    pytest.param(pv({BETA_ZONE: "us-west1-a", ZONE: "zone"}), pv({BETA_ZONE: "us-west1-a", ZONE: "zone"}), SKIP,
                 id="a volume update keeping its topology is skipped"),
    pytest.param(pv({ZONE: "a__b"}), pv({ZONE: "b__a", "other": "x"}), SKIP,
                 id="a volume whose zone set is only reordered is skipped"),
    pytest.param(pv({ZONE: "a"}), pv({ZONE: "a__"}), Q,
                 id="a volume whose zone label stops parsing queues the pod"),
])
def test_is_schedulable_after_persistent_volume_change(old: Any, new_: Any, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_persistent_volume_change(POD, old, new_) == want


@pytest.mark.parametrize(("old", "new_"), [
    pytest.param(None, "not-a-pv", id="a new object that is not a volume"),
    pytest.param("not-a-pv", pv({}), id="an old object that is not a volume"),
])
def test_a_volume_hint_given_another_kind_of_object_fails(old: Any, new_: Any) -> None:
    with pytest.raises(TypeError):
        plugin().is_schedulable_after_persistent_volume_change(POD, old, new_)


def registrations(pl: VolumeZone) -> list[tuple[str, ActionType, str | None]]:
    return [(e.event.resource, e.event.action_type, getattr(e.hint, "__name__", None))
            for e in pl.events_to_register()]


def test_the_v1_30_registration_is_unchanged() -> None:
    assert registrations(plugin(FEATURES_1_30)) == [
        (GVK.STORAGE_CLASS, ActionType.ADD, None),
        (GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT, None),
        (GVK.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE, None),
        (GVK.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE, None),
    ]


def test_the_1_36_registration_is_upstream_s() -> None:
    pl = plugin(FEATURES_1_36)
    assert registrations(pl) == [
        (GVK.STORAGE_CLASS, ActionType.ADD, "is_schedulable_after_storage_class_added"),
        (GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL, None),
        (GVK.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE,
         "is_schedulable_after_persistent_volume_claim_change"),
        (GVK.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE, "is_schedulable_after_persistent_volume_change"),
    ]
    assert all(getattr(e.hint, "__self__", pl) is pl for e in pl.events_to_register())
