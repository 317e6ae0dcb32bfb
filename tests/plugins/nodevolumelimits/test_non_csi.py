"""EBSLimits / GCEPDLimits / AzureDiskLimits / CinderLimits (upstream non_csi_test.go:
TestEphemeralLimits, TestAzureDiskLimits, TestEBSLimits, TestGCEPDLimits, TestGetMaxVols),
plus default limits, migration and events."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest
from builders import make_node, make_pod, obj

from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.framework import GVK, ActionType, CycleState, Status
from kubesched.objects import Pod
from kubesched.plugins import nodevolumelimits
from kubesched.plugins.nodevolumelimits import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED
from kubesched.plugins.nodevolumelimits.non_csi import NonCSILimits, max_vol_limit_from_env

EXCEEDED = Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
EBS, GCE, AZURE = "EBS", "GCE", "AzureDisk"
FACTORY = {EBS: nodevolumelimits.new_ebs, GCE: nodevolumelimits.new_gce_pd, AZURE: nodevolumelimits.new_azure_disk}
LIMIT_KEY = {EBS: "attachable-volumes-aws-ebs", GCE: "attachable-volumes-gce-pd", AZURE: "attachable-volumes-azure-disk"}
DRIVER = {EBS: "kubernetes.io/aws-ebs", GCE: "", AZURE: ""}


def pod(*vols: tuple[str, dict[str, Any]], pvcs: Sequence[str] = (), name: str = "p") -> Pod:
    b = make_pod().name(name)
    for i, (kind, src) in enumerate(vols):
        b = b.volume(f"v{i}", kind, src)
    for c in pvcs:
        b = b.pvc(c)
    return b.obj()


def claim(name: str, volume: str, sc: str | None, ns: str = "default", owner_uid: str = "") -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": ns}
    if owner_uid:
        md["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "abc", "uid": owner_uid, "controller": True}]
    spec: dict[str, Any] = {}
    if volume:
        spec["volumeName"] = volume
    if sc is not None:
        spec["storageClassName"] = sc
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": md, "spec": spec}


def fake_pvcs(f: str) -> list[dict[str, Any]]:
    """getFakePVCLister."""
    return [
        claim(f"some{f}Vol", f"some{f}Vol", f),
        claim(f"someNon{f}Vol", f"someNon{f}Vol", f),
        claim("pvcWithDeletedPV", "pvcWithDeletedPV", f),
        claim("anotherPVCWithDeletedPV", "anotherPVCWithDeletedPV", f),
        claim("unboundPVC", "", f),
        claim("anotherUnboundPVC", "", f),
        claim("unboundPVCWithDefaultSCPod", "", "standard-sc"),
        claim("unboundPVCWithInvalidSCPod", "", "invalid-sc"),
    ]


def fake_pvs(f: str) -> list[Any]:
    """getFakePVLister: the matching PV is always an EBS volume, as upstream."""
    return [
        obj({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"some{f}Vol"},
             "spec": {"awsElasticBlockStore": {"volumeID": f"{f.lower()}Vol"}}}),
        obj({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"someNon{f}Vol"}, "spec": {}}),
    ]


def run(f: str, new_pod: Pod, existing: Sequence[Pod], max_vols: int,
        extra_claims: Sequence[dict[str, Any]] = ()) -> tuple[Status | None, Status | None]:
    node = make_node().name("node-for-max-pd-test-1").capacity_map(
        {"cpu": "4", "memory": "4Gi", "pods": "110", LIMIT_KEY[f]: str(max_vols)}).obj()
    sc = obj({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": f},
              "provisioner": DRIVER[f] or "other"})
    objects = MemoryObjects(pvs=fake_pvs(f), pvcs=[obj(m) for m in list(fake_pvcs(f)) + list(extra_claims)],
                            storage_classes=[sc])
    placed = [dataclasses.replace(p, meta=dataclasses.replace(p.meta, name=f"e{i}", uid=f"e{i}"),
                                  node_name="node-for-max-pd-test-1") for i, p in enumerate(existing)]
    handle = FrameworkHandle.for_nodes([node], placed, objects)
    pl = FACTORY[f](None, handle)
    state = CycleState()
    _, pre = pl.pre_filter(state, new_pod)
    if pre is not None:
        return pre, None
    ni = handle.snapshot.get("node-for-max-pd-test-1")
    assert ni is not None
    return None, pl.filter(state, new_pod, ni)


def one_pvc(f: str) -> Pod:
    return pod(pvcs=[f"some{f}Vol"])


def split_pvc(f: str) -> Pod:
    return pod(pvcs=[f"someNon{f}Vol", f"some{f}Vol"])


NON_APPLICABLE = pod(("hostPath", {"path": "/"}))
EMPTY = pod()
CM_SECRET = pod(("configMap", {"name": "c"}), ("secret", {"secretName": "s"}))
DELETED_PVC = pod(pvcs=["deletedPVC"])
TWO_DELETED_PVC = pod(pvcs=["deletedPVC", "anotherDeletedPVC"])
DELETED_PV = pod(pvcs=["pvcWithDeletedPV"])
ANOTHER_DELETED_PV = pod(pvcs=["anotherPVCWithDeletedPV"])
UNBOUND = pod(pvcs=["unboundPVC"])
ANOTHER_UNBOUND = pod(pvcs=["anotherUnboundPVC"])
PVC_CM_SECRET = pod(("configMap", {"name": "c"}), ("secret", {"secretName": "s"}), pvcs=["pvcWithDeletedPV"])

EBS_ONE = pod(("awsElasticBlockStore", {"volumeID": "ovp"}))
EBS_TWO = pod(("awsElasticBlockStore", {"volumeID": "tvp1"}), ("awsElasticBlockStore", {"volumeID": "tvp2"}))
EBS_SPLIT = pod(("hostPath", {"path": "/"}), ("awsElasticBlockStore", {"volumeID": "svp"}))
EBS_CM_SECRET = pod(("awsElasticBlockStore", {"volumeID": "ovp"}), ("configMap", {"name": "c"}),
                    ("secret", {"secretName": "s"}))

EBS_CASES = [
    (EBS_ONE, [EBS_TWO, EBS_ONE], 4, None, "fits when node capacity >= new pod's EBS volumes"),
    (EBS_TWO, [EBS_ONE], 2, EXCEEDED, "doesn't fit when node capacity < new pod's EBS volumes"),
    (EBS_SPLIT, [EBS_TWO], 3, None, "new pod's count ignores non-EBS volumes"),
    (EBS_TWO, [EBS_SPLIT, NON_APPLICABLE, EMPTY], 3, None, "existing pods' counts ignore non-EBS volumes"),
    (one_pvc(EBS), [EBS_SPLIT, NON_APPLICABLE, EMPTY], 3, None, "new pod's count considers PVCs backed by EBS volumes"),
    (split_pvc(EBS), [EBS_SPLIT, EBS_ONE], 3, None, "new pod's count ignores PVCs not backed by EBS volumes"),
    (EBS_TWO, [EBS_ONE, one_pvc(EBS)], 3, EXCEEDED, "existing pods' counts considers PVCs backed by EBS volumes"),
    (EBS_TWO, [EBS_ONE, EBS_TWO, one_pvc(EBS)], 4, None, "already-mounted EBS volumes are always ok to allow"),
    (EBS_SPLIT, [EBS_ONE, EBS_ONE, one_pvc(EBS)], 3, None, "the same EBS volumes are not counted multiple times"),
    (one_pvc(EBS), [EBS_ONE, DELETED_PVC], 1, EXCEEDED, "missing PVC is not counted towards the PV limit (limit 1)"),
    (one_pvc(EBS), [EBS_ONE, DELETED_PVC], 2, None, "missing PVC is not counted towards the PV limit (limit 2)"),
    (one_pvc(EBS), [EBS_ONE, TWO_DELETED_PVC], 2, None, "two missing PVCs are not counted towards the PV limit twice"),
    (pod(pvcs=["unboundPVCWithInvalidSCPod"]), [EBS_ONE], 1, None,
     "unbound PVC with invalid SC is not counted towards the PV limit"),
    (pod(pvcs=["unboundPVCWithDefaultSCPod"]), [EBS_ONE], 1, None,
     "unbound PVC from different provisioner is not counted towards the PV limit"),
    (one_pvc(EBS), [EBS_ONE, DELETED_PV], 2, EXCEEDED, "pod with missing PV is counted towards the PV limit (limit 2)"),
    (one_pvc(EBS), [EBS_ONE, DELETED_PV], 3, None, "pod with missing PV is counted towards the PV limit (limit 3)"),
    (DELETED_PV, [EBS_ONE, DELETED_PV], 2, None, "two pods missing the same PV are counted towards the PV limit only once"),
    (ANOTHER_DELETED_PV, [EBS_ONE, DELETED_PV], 2, EXCEEDED,
     "two pods missing different PVs are counted towards the PV limit twice"),
    (one_pvc(EBS), [EBS_ONE, UNBOUND], 2, EXCEEDED, "pod with unbound PVC is counted towards the PV limit (limit 2)"),
    (one_pvc(EBS), [EBS_ONE, UNBOUND], 3, None, "pod with unbound PVC is counted towards the PV limit (limit 3)"),
    (UNBOUND, [EBS_ONE, UNBOUND], 2, None, "the same unbound PVC in multiple pods is counted towards the PV limit only once"),
    (ANOTHER_UNBOUND, [EBS_ONE, UNBOUND], 2, EXCEEDED,
     "two different unbound PVCs are counted towards the PV limit as two volumes"),
    (CM_SECRET, [EBS_TWO, EBS_ONE], 4, "skip", "skip Filter when the pod only uses secrets and configmaps"),
    (PVC_CM_SECRET, [EBS_ONE, DELETED_PV], 2, None, "don't skip Filter when the pod has pvcs"),
    (EBS_CM_SECRET, [EBS_TWO, EBS_ONE], 4, None, "don't skip Filter when the pod has EBS volumes"),
]


@pytest.mark.parametrize(("new_pod", "existing", "max_vols", "want"),
                         [pytest.param(*c[:4], id=c[4]) for c in EBS_CASES])
def test_ebs_limits(new_pod: Pod, existing: list[Pod], max_vols: int, want: Status | str | None) -> None:
    pre, got = run(EBS, new_pod, existing, max_vols)
    if want == "skip":
        assert pre == Status.skip()
    else:
        assert pre is None
        assert got == want


def _family_cases(f: str, kind: str, label: str) -> list[Any]:
    one = pod((kind, {}))
    two = pod((kind, {}), (kind, {}))
    split = pod(("hostPath", {"path": "/"}), (kind, {}))
    with_cm = pod((kind, {}), ("configMap", {"name": "c"}), ("secret", {"secretName": "s"}))
    cases = [
        (one, [two, one], 4, None, f"fits when node capacity >= new pod's {label} volumes"),
        (two, [one], 2, None, f"fit when node capacity < new pod's {label} volumes (same unnamed disk)"),
        (split, [two], 3, None, f"new pod's count ignores non-{label} volumes"),
        (two, [split, NON_APPLICABLE, EMPTY], 3, None, f"existing pods' counts ignore non-{label} volumes"),
        (one_pvc(f), [split, NON_APPLICABLE, EMPTY], 3, None, f"new pod's count considers PVCs backed by {label} volumes"),
        (split_pvc(f), [split, one], 3, None, f"new pod's count ignores PVCs not backed by {label} volumes"),
        (two, [one, one_pvc(f)], 3, None, f"existing pods' counts considers PVCs backed by {label} volumes"),
        (two, [one, two, one_pvc(f)], 4, None, f"already-mounted {label} volumes are always ok to allow"),
        (split, [one, one, one_pvc(f)], 3, None, f"the same {label} volumes are not counted multiple times"),
        (one_pvc(f), [one, DELETED_PVC], 2, None, f"{label}: pod with missing PVC (limit 2)"),
        (one_pvc(f), [one, DELETED_PVC], 3, None, f"{label}: pod with missing PVC (limit 3)"),
        (one_pvc(f), [one, TWO_DELETED_PVC], 3, None, f"{label}: pod with two missing PVCs"),
        (one_pvc(f), [one, DELETED_PV], 2, None, f"{label}: pod with missing PV (limit 2)"),
        (one_pvc(f), [one, DELETED_PV], 3, None, f"{label}: pod with missing PV (limit 3)"),
        (DELETED_PV, [one, DELETED_PV], 2, None, f"{label}: two pods missing the same PV count once"),
        (ANOTHER_DELETED_PV, [one, DELETED_PV], 2, None, f"{label}: two pods missing different PVs"),
        (one_pvc(f), [one, UNBOUND], 2, None, f"{label}: pod with unbound PVC (limit 2)"),
        (one_pvc(f), [one, UNBOUND], 3, None, f"{label}: pod with unbound PVC (limit 3)"),
        (UNBOUND, [one, UNBOUND], 2, None, f"{label}: the same unbound PVC in two pods counts once"),
        (ANOTHER_UNBOUND, [one, UNBOUND], 2, None, f"{label}: two different unbound PVCs"),
        (CM_SECRET, [two, one], 4, "skip", f"{label}: skip Filter when the pod only uses secrets and configmaps"),
        (PVC_CM_SECRET, [one, DELETED_PV], 2, None, f"{label}: don't skip Filter when the pod has pvcs"),
        (with_cm, [two, one], 4, None, f"don't skip Filter when the pod has {label} volumes"),
    ]
    return [pytest.param(f, *c[:4], id=c[4]) for c in cases]


@pytest.mark.parametrize(("f", "new_pod", "existing", "max_vols", "want"),
                         _family_cases(AZURE, "azureDisk", "AzureDisk") + _family_cases(GCE, "gcePersistentDisk", "GCE"))
def test_azure_disk_and_gce_pd_limits(f: str, new_pod: Pod, existing: list[Pod], max_vols: int,
                                      want: Status | str | None) -> None:
    pre, got = run(f, new_pod, existing, max_vols)
    if want == "skip":
        assert pre == Status.skip()
    else:
        assert pre is None
        assert got == want


EPHEMERAL = make_pod().name("abc").namespace("test").uid("12345").volume("xyz", "ephemeral", {}).obj()
EPHEMERAL_CM = make_pod().name("abc").namespace("test").uid("12345").volume("xyz", "ephemeral", {}).volume(
    "c", "configMap", {"name": "c"}).volume("s", "secret", {"secretName": "s"}).obj()
EPHEMERAL_CLAIM = claim("abc-xyz", "missing", GCE, ns="test", owner_uid="12345")
CONFLICTING = claim("abc-xyz", "missing", GCE, ns="test")


@pytest.mark.parametrize(
    ("new_pod", "extra", "max_vols", "want"),
    [
        pytest.param(EPHEMERAL, [], 0,
                     Status.unresolvable('looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found'),
                     id="a missing ephemeral claim is unschedulable and unresolvable"),
        pytest.param(EPHEMERAL, [CONFLICTING], 0,
                     Status.as_error("PVC test/abc-xyz was not created for pod test/abc (pod is not owner)"),
                     id="an ephemeral claim the pod does not own is an error"),
        pytest.param(EPHEMERAL, [EPHEMERAL_CLAIM], 1, None, id="an ephemeral claim under the limit fits"),
        pytest.param(EPHEMERAL, [EPHEMERAL_CLAIM], 0, None,
                     id="an ephemeral claim whose class has another provisioner is not counted"),
        pytest.param(CM_SECRET, [EPHEMERAL_CLAIM], 1, "skip", id="a pod with only secrets and config maps is skipped"),
        pytest.param(EPHEMERAL_CM, [EPHEMERAL_CLAIM], 1, None, id="a pod with an ephemeral volume is not skipped"),
    ],
)
def test_ephemeral_limits(new_pod: Pod, extra: list[dict[str, Any]], max_vols: int, want: Status | str | None) -> None:
    pre, got = run(GCE, new_pod, [], max_vols, extra)
    if want == "skip":
        assert pre == Status.skip()
    else:
        assert pre is None
        assert got == want


def test_ephemeral_claim_of_the_in_tree_provisioner_counts() -> None:
    """Upstream's "volume unbound, exceeds limit": the claim is bound to a missing PV and its
    class provisions the plugin's type, so it counts (limit 0 exceeded)."""
    sc_claim = claim("abc-xyz", "missing", EBS, ns="test", owner_uid="12345")
    pre, got = run(EBS, EPHEMERAL, [], 0, [sc_claim])
    assert pre is None
    assert got == EXCEEDED


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        pytest.param("invalid", -1, id="an unparsable value uses the default"),
        pytest.param("-2", -1, id="a negative value uses the default"),
        pytest.param("40", 40, id="a positive value is used"),
        pytest.param(" 40", -1, id="spaces are not accepted, as strconv.Atoi"),
    ],
)
def test_get_max_vols(monkeypatch: pytest.MonkeyPatch, raw: str, want: int) -> None:
    monkeypatch.setenv("KUBE_MAX_PD_VOLS", raw)
    assert max_vol_limit_from_env() == want


def _limit_for(f: str, labels: dict[str, str]) -> int:
    handle = FrameworkHandle.for_nodes([make_node().name("n").obj()], [], MemoryObjects())
    pl = FACTORY[f](None, handle)
    assert isinstance(pl, NonCSILimits)
    return pl.max_volumes(make_node().name("n").labels(labels).obj())


@pytest.mark.parametrize(
    ("f", "labels", "want"),
    [
        pytest.param(EBS, {}, 39, id="EBS defaults to 39 volumes"),
        pytest.param(EBS, {"node.kubernetes.io/instance-type": "m5.large"}, 25, id="EBS on a Nitro m5 instance allows 25"),
        pytest.param(EBS, {"beta.kubernetes.io/instance-type": "t3.micro"}, 25, id="EBS on t3 (beta label) allows 25"),
        pytest.param(EBS, {"node.kubernetes.io/instance-type": "m4.large"}, 39, id="EBS on m4 allows 39"),
        pytest.param(GCE, {}, 16, id="GCE PD defaults to 16 volumes"),
        pytest.param(AZURE, {}, 16, id="Azure Disk defaults to 16 volumes"),
    ],
)
def test_default_limits(monkeypatch: pytest.MonkeyPatch, f: str, labels: dict[str, str], want: int) -> None:
    monkeypatch.delenv("KUBE_MAX_PD_VOLS", raising=False)
    assert _limit_for(f, labels) == want


def test_env_limit_overrides_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBE_MAX_PD_VOLS", "3")
    assert _limit_for(EBS, {}) == 3


def test_cinder_default_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBE_MAX_PD_VOLS", raising=False)
    handle = FrameworkHandle.for_nodes([make_node().name("n").obj()], [], MemoryObjects())
    pl = nodevolumelimits.new_cinder(None, handle)
    assert pl.name == "CinderLimits"
    assert pl.max_volumes(make_node().name("n").obj()) == 256


def test_a_csinode_defers_to_node_volume_limits() -> None:
    """Migration of EBS to CSI is locked on: with any CSINode the in-tree limit is skipped."""
    node = make_node().name("n").capacity_map({"attachable-volumes-aws-ebs": "0"}).obj()
    cn = obj({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "n"}, "spec": {"drivers": []}})
    for csinodes, want in (([], EXCEEDED), ([cn], None)):
        handle = FrameworkHandle.for_nodes([node], [], MemoryObjects(csinodes=csinodes))
        ni = handle.snapshot.get("n")
        assert ni is not None
        assert nodevolumelimits.new_ebs(None, handle).filter(CycleState(), EBS_ONE, ni) == want


def test_names_and_events() -> None:
    handle = FrameworkHandle.for_nodes([make_node().name("n").obj()], [], MemoryObjects())
    names = [nodevolumelimits.new_ebs(None, handle).name, nodevolumelimits.new_gce_pd(None, handle).name,
             nodevolumelimits.new_azure_disk(None, handle).name]
    assert names == [nodevolumelimits.EBS_NAME, nodevolumelimits.GCE_PD_NAME, nodevolumelimits.AZURE_DISK_NAME]
    assert names == ["EBSLimits", "GCEPDLimits", "AzureDiskLimits"]
    events = {(e.event.resource, e.event.action_type) for e in nodevolumelimits.new_ebs(None, handle).events_to_register()}
    assert events == {(GVK.NODE, ActionType.ADD), (GVK.POD, ActionType.DELETE),
                      (GVK.PERSISTENT_VOLUME_CLAIM, ActionType.ADD)}
