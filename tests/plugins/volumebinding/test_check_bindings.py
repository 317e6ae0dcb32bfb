"""VolumeBinder.check_bindings (binder.go checkBindings; the cases of upstream's
TestCheckBindings that apply): the wait of BindPodVolumes after the scheduler's PV/PVC updates,
over the API objects — done, not yet, or an error that fails the binding and retries the pod."""

from __future__ import annotations

from typing import Any

import pytest
from builders import make_node, make_pod, obj

from kubesched.cluster.memory import MemoryObjects
from kubesched.objects import Node, PersistentVolume, PersistentVolumeClaim, Pod
from kubesched.plugins.volumebinding import BindingInfo
from kubesched.plugins.volumebinding.binder import BinderError, VolumeBinder

HOSTNAME = "kubernetes.io/hostname"
SELECTED = "volume.kubernetes.io/selected-node"
NODE: Node = make_node().name("node1").labels({HOSTNAME: "node1"}).obj()
POD: Pod = make_pod().name("pod").uid("pod-uid").node("node1").pvc("claim").obj()


def pv(*, rv: str = "5", claim_uid: str | None = "claim-uid", host: str = "node1", name: str = "pv") -> PersistentVolume:
    spec: dict[str, Any] = {"storageClassName": "wait", "csi": {"driver": "d", "volumeHandle": name},
                            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                                {"key": HOSTNAME, "operator": "In", "values": [host]}]}]}}}
    if claim_uid is not None:
        spec["claimRef"] = {"namespace": "default", "name": "claim", "uid": claim_uid}
    out: PersistentVolume = obj({"apiVersion": "v1", "kind": "PersistentVolume",
                                 "metadata": {"name": name, "resourceVersion": rv}, "spec": spec})
    return out


def pvc(*, rv: str = "5", volume: str = "", bind_completed: bool = False,
        annotations: dict[str, str] | None = None) -> PersistentVolumeClaim:
    ann = dict(annotations or {})
    if bind_completed:
        ann["pv.kubernetes.io/bind-completed"] = "yes"
    spec: dict[str, Any] = {"storageClassName": "wait"}
    if volume:
        spec["volumeName"] = volume
    out: PersistentVolumeClaim = obj({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "claim", "namespace": "default", "uid": "claim-uid", "resourceVersion": rv,
                     "annotations": ann}, "spec": spec})
    return out


WRITTEN_PV = pv()
WRITTEN_CLAIM = pvc(annotations={SELECTED: "node1"})
BOUND_CLAIM = pvc(rv="6", volume="pv", bind_completed=True)
PROVISIONED_CLAIM = pvc(rv="6", volume="pv", bind_completed=True, annotations={SELECTED: "node1"})

# (id, api PVs, api PVCs, pod in the lister, static bindings written, claims written, want: bool or error)
CASES: list[tuple[str, list[PersistentVolume], list[PersistentVolumeClaim], bool, bool, bool, bool | str]] = [
    ("nothing to bind is done", [], [], True, False, False, True),
    ("a bound static binding is done", [pv(rv="6")], [BOUND_CLAIM], True, True, False, True),
    ("a claim not bound yet by the PV controller waits", [pv(rv="6")], [pvc()], True, True, False, False),
    ("an informer older than the update waits", [pv(rv="4")], [BOUND_CLAIM], True, True, False, False),
    ("a deleted PV fails", [], [BOUND_CLAIM], True, True, False,
     'failed to check binding: could not find v1.PersistentVolume "pv"'),
    ("a deleted claim fails", [pv()], [], True, True, False,
     'failed to check binding: could not find v1.PersistentVolumeClaim "default/claim"'),
    ("a PV whose claimRef was dropped fails", [pv(claim_uid=None)], [BOUND_CLAIM], True, True, False,
     'ClaimRef got reset for pv "pv"'),
    ("a PV whose claimRef lost its uid fails", [pv(claim_uid="")], [BOUND_CLAIM], True, True, False,
     'ClaimRef got reset for pv "pv"'),
    ("a PV no longer fitting the node fails", [pv(host="node2")], [BOUND_CLAIM], True, True, False,
     'pv "pv" node affinity doesn\'t match node "node1": no matching NodeSelectorTerms'),
    ("a provisioned and bound claim is done", [pv()], [PROVISIONED_CLAIM], True, False, True, True),
    ("a claim still being provisioned waits", [], [pvc(rv="6", annotations={SELECTED: "node1"})], True, False, True,
     False),
    ("a claim bound to a PV not seen yet waits", [], [PROVISIONED_CLAIM], True, False, True, False),
    ("a provisioned PV not fitting the node fails", [pv(host="node2")], [PROVISIONED_CLAIM], True, False, True,
     'pv "pv" node affinity doesn\'t match node "node1": no matching NodeSelectorTerms'),
    ("a claim left without annotations fails", [], [pvc(rv="6")], True, False, True,
     'selectedNode annotation reset for PVC "claim"'),
    ("a claim whose provisioner removed the selected node fails", [],
     [pvc(rv="6", annotations={"volume.kubernetes.io/storage-provisioner": "d"})], True, False, True,
     'provisioning failed for PVC "claim"'),
    ("a claim selected for another node fails", [], [pvc(rv="6", annotations={SELECTED: "node2"})], True, False, True,
     'provisioning failed for PVC "claim"'),
    ("a deleted claim to provision fails", [], [], True, False, True,
     'failed to check provisioning pvc: could not find v1.PersistentVolumeClaim "default/claim"'),
    ("a deleted pod fails", [pv(rv="6")], [BOUND_CLAIM], False, True, False,
     'pod does not exist any more: pod "pod" not found'),
]


@pytest.mark.parametrize(("pvs", "pvcs", "pod_exists", "static", "dynamic", "want"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_check_bindings(pvs: list[PersistentVolume], pvcs: list[PersistentVolumeClaim], pod_exists: bool,
                        static: bool, dynamic: bool, want: bool | str) -> None:
    binder = VolumeBinder(MemoryObjects(pvs=pvs, pvcs=pvcs, pods=[POD] if pod_exists else []))
    bindings = [BindingInfo(pvc(), WRITTEN_PV)] if static else []
    claims = [WRITTEN_CLAIM] if dynamic else []
    if isinstance(want, str):
        with pytest.raises(BinderError) as err:
            binder.check_bindings(POD, NODE, bindings, claims)
        assert str(err.value) == want
    else:
        assert binder.check_bindings(POD, NODE, bindings, claims) is want
