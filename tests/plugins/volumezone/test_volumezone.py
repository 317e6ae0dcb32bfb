"""VolumeZone (upstream volume_zone_test.go: TestSingleZone, TestMultiZone, TestWithBinding),
plus label parsing and events."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest
from builders import make_node, make_pod, obj

from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.framework import CycleState, Status
from kubesched.objects import StorageClass, Volume
from kubesched.plugins import volumezone
from kubesched.plugins.volumezone import NAME
from kubesched.plugins.volumezone.plugin import ERR_REASON_CONFLICT, label_zones_to_set

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
CONFLICT = Status.unresolvable(ERR_REASON_CONFLICT)


def pv(name: str, labels: dict[str, str]) -> Any:
    return obj({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": labels},
                "spec": {"capacity": {"storage": "1Gi"}, "csi": {"driver": "d", "volumeHandle": name}}})


def pvc(name: str, volume: str = "", sc: str | None = None) -> Any:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"]}
    if volume:
        spec["volumeName"] = volume
    if sc is not None:
        spec["storageClassName"] = sc
    return obj({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": "default"}, "spec": spec})


SINGLE_PVS = [
    pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", {BETA_REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_3", {BETA_REGION: "us-west1"}),
    pv("Vol_Stable_1", {ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", {REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_Stable_3", {ZONE: "us-west1-a", REGION: "us-west1-a"}),
]
SINGLE_PVCS = [pvc("PVC_1", "Vol_1"), pvc("PVC_2", "Vol_2"), pvc("PVC_3", "Vol_3"), pvc("PVC_4", "Vol_not_exist"),
               pvc("PVC_Stable_1", "Vol_Stable_1"), pvc("PVC_Stable_2", "Vol_Stable_2"),
               pvc("PVC_Stable_3", "Vol_Stable_3")]

MULTI_PVS = [
    pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", {BETA_ZONE: "us-west1-b", "uselessLabel": "none"}),
    pv("Vol_3", {BETA_ZONE: "us-west1-c__us-west1-a"}),
    pv("Vol_Stable_1", {ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", {ZONE: "us-west1-c__us-west1-a"}),
]
MULTI_PVCS = [pvc("PVC_1", "Vol_1"), pvc("PVC_2", "Vol_2"), pvc("PVC_3", "Vol_3"), pvc("PVC_4", "Vol_not_exist"),
              pvc("PVC_Stable_1", "Vol_Stable_1"), pvc("PVC_Stable_2", "Vol_Stable_2")]


def wait_class(name: str, mode: str | None) -> StorageClass:
    sc: StorageClass = obj({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
                            "provisioner": "p", "volumeBindingMode": mode or "Immediate"})
    if mode is None:
        # A class read without API defaulting (upstream's nil VolumeBindingMode).
        sc = dataclasses.replace(sc, volume_binding_mode=None)
    return sc


BINDING_CLASSES = [wait_class("Class_Immediate", "Immediate"), wait_class("Class_Wait", "WaitForFirstConsumer"),
                   wait_class("Class_Nil", None)]
BINDING_PVS = [pv("Vol_1", {BETA_ZONE: "us-west1-a"}), pv("Vol_Bad", {ZONE: "a____b"}),
               pv("Vol_Empty", {ZONE: ""})]
BINDING_PVCS = [pvc("PVC_1", "Vol_1"), pvc("PVC_NoSC", sc="Class_0"), pvc("PVC_EmptySC"),
                pvc("PVC_WaitSC", sc="Class_Wait"), pvc("PVC_ImmediateSC", sc="Class_Immediate"),
                pvc("PVC_NilSC", sc="Class_Nil"), pvc("PVC_Bad", "Vol_Bad"), pvc("PVC_Empty", "Vol_Empty")]


def run(claim: str | None, node_labels: dict[str, str], pvs: list[Any], pvcs: list[Any],
        classes: Sequence[Any] = ()) -> tuple[Status | None, Status | None]:
    node = make_node().name("host1").labels(node_labels).obj()
    handle = FrameworkHandle.for_nodes([node], [], MemoryObjects(pvs=pvs, pvcs=pvcs, storage_classes=classes))
    pl = volumezone.new(None, handle)
    b = make_pod().name("pod_1")
    if claim is not None:
        b = b.pvc(claim)
    pod = b.obj()
    state = CycleState()
    _, pre = pl.pre_filter(state, pod)
    ni = handle.snapshot.get("host1")
    assert ni is not None
    return pre, pl.filter(state, pod, ni)


@pytest.mark.parametrize(
    ("claim", "labels", "want_pre", "want_filter"),
    [
        pytest.param(None, {BETA_ZONE: "us-west1-a"}, Status.skip(), None, id="a pod without volume is skipped"),
        pytest.param("PVC_1", {}, None, None, id="a node without topology labels fits"),
        pytest.param("PVC_1", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, None, None,
                     id="a matching beta zone label fits"),
        pytest.param("PVC_2", {BETA_REGION: "us-west1", "uselessLabel": "none"}, None, None,
                     id="a matching beta region label fits"),
        pytest.param("PVC_2", {BETA_REGION: "no_us-west1", "uselessLabel": "none"}, None, CONFLICT,
                     id="a different beta region does not fit"),
        pytest.param("PVC_1", {BETA_ZONE: "no_us-west1-a", "uselessLabel": "none"}, None, CONFLICT,
                     id="a different beta zone does not fit"),
        pytest.param("PVC_Stable_1", {ZONE: "us-west1-a", "uselessLabel": "none"}, None, None,
                     id="a matching zone label fits"),
        pytest.param("PVC_Stable_2", {REGION: "us-west1", "uselessLabel": "none"}, None, None,
                     id="a matching region label fits"),
        pytest.param("PVC_Stable_2", {REGION: "no_us-west1", "uselessLabel": "none"}, None, CONFLICT,
                     id="a different region does not fit"),
        pytest.param("PVC_Stable_1", {ZONE: "no_us-west1-a", "uselessLabel": "none"}, None, CONFLICT,
                     id="a different zone does not fit"),
        pytest.param("PVC_Stable_3", {ZONE: "us-west1-a"}, None, CONFLICT,
                     id="a PV with zone and region does not fit a node with only the zone"),
        pytest.param("PVC_Stable_1", {BETA_ZONE: "us-west1-a"}, None, CONFLICT,
                     id="a GA zone PV does not fall back to the node's beta zone"),
        pytest.param("PVC_1", {ZONE: "us-west1-a"}, None, None, id="a beta zone PV matches the node's GA zone"),
        pytest.param("PVC_1", {ZONE: "us-west1-b"}, None, CONFLICT,
                     id="a beta zone PV does not match a different GA zone"),
        pytest.param("PVC_4", {ZONE: "us-west1-b"}, Status.unresolvable('persistentvolume "Vol_not_exist" not found'),
                     Status.unresolvable('persistentvolume "Vol_not_exist" not found'),
                     id="a claim bound to a missing PV is unresolvable with the API's not-found text"),
        pytest.param("PVC_missing", {ZONE: "us-west1-b"},
                     Status.unresolvable('persistentvolumeclaim "PVC_missing" not found'),
                     Status.unresolvable('persistentvolumeclaim "PVC_missing" not found'),
                     id="a missing claim is unresolvable with the API's not-found text"),
    ],
)
def test_single_zone(claim: str | None, labels: dict[str, str], want_pre: Status | None,
                     want_filter: Status | None) -> None:
    pre, got = run(claim, labels, SINGLE_PVS, SINGLE_PVCS)
    assert pre == want_pre
    assert got == want_filter


@pytest.mark.parametrize(
    ("claim", "labels", "want_filter"),
    [
        pytest.param("PVC_3", {}, None, id="a node without labels fits a multi-zone PV"),
        pytest.param("PVC_3", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, None,
                     id="a node in one of a multi-zone PV's beta zones fits"),
        pytest.param("PVC_1", {BETA_ZONE: "us-west1-b", "uselessLabel": "none"}, CONFLICT,
                     id="a node in another beta zone does not fit"),
        pytest.param("PVC_Stable_2", {ZONE: "us-west1-a", "uselessLabel": "none"}, None,
                     id="a node in one of a multi-zone PV's zones fits"),
        pytest.param("PVC_Stable_1", {ZONE: "us-west1-b", "uselessLabel": "none"}, CONFLICT,
                     id="a node in another zone does not fit"),
    ],
)
def test_multi_zone(claim: str, labels: dict[str, str], want_filter: Status | None) -> None:
    pre, got = run(claim, labels, MULTI_PVS, MULTI_PVCS)
    assert pre is None
    assert got == want_filter


NODE = {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}


@pytest.mark.parametrize(
    ("claim", "want_pre", "want_filter"),
    [
        pytest.param("PVC_1", None, None, id="a bound claim in the node's zone fits"),
        pytest.param("PVC_EmptySC", Status.unresolvable("PersistentVolumeClaim had no pv name and storageClass name"),
                     Status.unresolvable("PersistentVolumeClaim had no pv name and storageClass name"),
                     id="an unbound claim without a class is unresolvable"),
        pytest.param("PVC_NoSC", Status.unresolvable('storageclass.storage.k8s.io "Class_0" not found'),
                     Status.unresolvable('storageclass.storage.k8s.io "Class_0" not found'),
                     id="an unbound claim of a missing class is unresolvable with the API's not-found text"),
        pytest.param("PVC_ImmediateSC", Status.unresolvable("PersistentVolume had no name"),
                     Status.unresolvable("PersistentVolume had no name"),
                     id="an unbound claim of an Immediate class is unresolvable"),
        pytest.param("PVC_WaitSC", Status.skip(), None,
                     id="an unbound claim of a WaitForFirstConsumer class is ignored"),
        pytest.param("PVC_NilSC", Status.unresolvable('VolumeBindingMode not set for StorageClass "Class_Nil"'),
                     Status.unresolvable('VolumeBindingMode not set for StorageClass "Class_Nil"'),
                     id="a class without binding mode is unresolvable"),
        pytest.param("PVC_Bad", Status.skip(), None, id="a zone label with an empty element is ignored"),
        pytest.param("PVC_Empty", Status.skip(), None, id="an empty zone label is ignored"),
    ],
)
def test_with_binding(claim: str, want_pre: Status | None, want_filter: Status | None) -> None:
    pre, got = run(claim, NODE, BINDING_PVS, BINDING_PVCS, BINDING_CLASSES)
    assert pre == want_pre
    assert got == want_filter


def test_pvc_without_claim_name_is_unresolvable() -> None:
    pod = make_pod().name("p").obj()
    pod = dataclasses.replace(pod, volumes=(Volume("v", "persistentVolumeClaim", {"claimName": ""}),))
    handle = FrameworkHandle.for_nodes([make_node().name("n").obj()], [], MemoryObjects())
    _, pre = volumezone.new(None, handle).pre_filter(CycleState(), pod)
    assert pre == Status.unresolvable("PersistentVolumeClaim had no name")


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param("a", frozenset({"a"}), id="one zone"),
        pytest.param("a__b", frozenset({"a", "b"}), id="two zones split on a double underscore"),
        pytest.param(" a __ b ", frozenset({"a", "b"}), id="zones are trimmed"),
        pytest.param("a____b", None, id="an empty element is an error"),
        pytest.param("", None, id="an empty value is an error"),
    ],
)
def test_label_zones_to_set(value: str, want: frozenset[str] | None) -> None:
    assert label_zones_to_set(value) == want


def test_plugin_name() -> None:
    # The registered events (both releases) are checked in test_queueing_hints.py.
    handle = FrameworkHandle.for_nodes([make_node().name("n").obj()], [], MemoryObjects())
    pl = volumezone.new(None, handle)
    assert pl.name == NAME == "VolumeZone"
