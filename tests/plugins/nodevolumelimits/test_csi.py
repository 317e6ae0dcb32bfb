"""NodeVolumeLimits, the CSI plugin (upstream csi_test.go TestCSILimits, without the
VolumeAttachment cases of later releases), plus limit sources, key hashing, GCE PD
translation and events."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest
from builders import make_node, make_pod, obj

from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.features import FEATURES_1_30, FEATURES_1_36
from kubesched.framework import Code, CycleState, Status
from kubesched.objects import Pod
from kubesched.plugins import nodevolumelimits
from kubesched.plugins.helpers.volumes import csi_attach_limit_key
from kubesched.plugins.nodevolumelimits import CSI_NAME, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, NAME

EBS_CSI = "ebs.csi.aws.com"
GCE_CSI = "pd.csi.storage.gke.io"
EBS_IN_TREE = "kubernetes.io/aws-ebs"
HOSTPATH_IN_TREE = "kubernetes.io/hostpath"
SC_NAME = "csi-sc"
NODE = "node-for-max-pd-test-1"
EXCEEDED = Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)


def fake_pvs(drivers: Sequence[str]) -> list[Any]:
    """getFakeCSIPVLister: 4 PVs per driver named csi-<driver>-<j>."""
    out = []
    for d in drivers:
        for j in range(4):
            name = f"csi-{d}-{j}"
            if d == EBS_IN_TREE:
                src: dict[str, Any] = {"awsElasticBlockStore": {"volumeID": name}}
            elif d == HOSTPATH_IN_TREE:
                src = {"hostPath": {"path": "/tmp"}}
            else:
                src = {"csi": {"driver": d, "volumeHandle": name}}
            out.append(obj({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                            "spec": {"capacity": {"storage": "1Gi"}, **src}}))
    return out


def pvc_manifest(name: str, ns: str = "default", volume: str = "", sc: str | None = None,
                 owner_uid: str = "", owner: str = "") -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": ns}
    if owner_uid:
        md["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner, "uid": owner_uid, "controller": True}]
    spec: dict[str, Any] = {}
    if volume:
        spec["volumeName"] = volume
    if sc is not None:
        spec["storageClassName"] = sc
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": md, "spec": spec}


def fake_pvcs(drivers: Sequence[str]) -> list[Any]:
    """getFakeCSIPVCLister."""
    out = [obj(pvc_manifest(f"csi-{d}-{j}", volume=f"csi-{d}-{j}")) for d in drivers for j in range(4)]
    out.append(obj(pvc_manifest("csi-4", sc=SC_NAME)))
    out.append(obj(pvc_manifest("csi-5")))
    # A claim pre-bound to a missing PV, with a valid class.
    out.append(obj(pvc_manifest("csi-6", sc=SC_NAME, volume="missing-in-action")))
    return out


def csinode(drivers: Sequence[str], limit: int | None, migrated: str = EBS_IN_TREE) -> Any:
    ds = []
    for d in drivers:
        dm: dict[str, Any] = {"name": d, "nodeID": NODE}
        if limit is not None:
            dm["allocatable"] = {"count": limit}
        ds.append(dm)
    return obj({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                "metadata": {"name": NODE, "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": migrated}},
                "spec": {"drivers": ds}})


def pvc_pod(*claims: str, name: str = "p") -> Pod:
    b = make_pod().name(name)
    for c in claims:
        b = b.pvc(c)
    return b.obj()


def inline_pod(kind: str, src: dict[str, Any], *extra: tuple[str, dict[str, Any]]) -> Pod:
    b = make_pod().name("inline").volume("v0", kind, src)
    for i, (k, s) in enumerate(extra):
        b = b.volume(f"v{i + 1}", k, s)
    return b.obj()


def ephemeral_pod(uid: str, *vols: str, extra: Sequence[tuple[str, dict[str, Any]]] = ()) -> Pod:
    b = make_pod().name("abc").namespace("test").uid(uid)
    for v in vols:
        b = b.volume(v, "ephemeral", {})
    for i, (k, s) in enumerate(extra):
        b = b.volume(f"x{i}", k, s)
    return b.obj()


RUNNING = pvc_pod("csi-ebs.csi.aws.com-3", name="running")
PENDING_VOLUME = pvc_pod("csi-4", name="pending")
UNBOUND_PVC_POD2 = pvc_pod("csi-4", name="pending2")
MISSING_PV = pvc_pod("csi-6", name="missing-pv")
NO_SC_PVC = pvc_pod("csi-5", name="no-sc")
GCE_TWO = pvc_pod(f"csi-{GCE_CSI}-1", f"csi-{GCE_CSI}-2", name="gce-two")
IN_TREE_ONE = pvc_pod(f"csi-{EBS_IN_TREE}-0", name="in-tree-one")
IN_TREE_TWO = pvc_pod(f"csi-{EBS_IN_TREE}-1", f"csi-{EBS_IN_TREE}-2", name="in-tree-two")
CSI_EBS_ONE = pvc_pod(f"csi-{EBS_CSI}-0", name="csi-one")
CSI_EBS_TWO = pvc_pod(f"csi-{EBS_CSI}-1", f"csi-{EBS_CSI}-2", name="csi-two")
NON_MIGRATABLE = pvc_pod(f"csi-{HOSTPATH_IN_TREE}-0", name="hostpath")
IN_TREE_INLINE = inline_pod("awsElasticBlockStore", {"volumeID": "aws-inline1"})
IN_TREE_INLINE_SAME_ID = inline_pod("awsElasticBlockStore", {"volumeID": "csi-ebs.csi.aws.com-1"})
ONLY_CM_SECRET = inline_pod("configMap", {"name": "c"}, ("secret", {"secretName": "s"}))
PVC_CM_SECRET = make_pod().name("pvc-cm").volume("a", "configMap", {"name": "c"}).volume(
    "b", "secret", {"secretName": "s"}).pvc(f"csi-{EBS_CSI}-0").obj()
EPHEMERAL = ephemeral_pod("12345", "xyz")
EPHEMERAL_TWO = ephemeral_pod("12345II", "x", "y")
EPHEMERAL_CM_SECRET = ephemeral_pod("12345", "xyz", extra=[("configMap", {"name": "c"}), ("secret", {"secretName": "s"})])
INLINE_MIGRATABLE_CM_SECRET = inline_pod("configMap", {"name": "c"}, ("secret", {"secretName": "s"}),
                                         ("awsElasticBlockStore", {"volumeID": "aws-inline1"}))

EPHEMERAL_CLAIM = pvc_manifest("abc-xyz", ns="test", sc=SC_NAME, owner_uid="12345", owner="abc")
CONFLICTING_CLAIM = pvc_manifest("abc-xyz", ns="test", sc=SC_NAME)
CLAIM_X = pvc_manifest("abc-x", ns="test", sc=SC_NAME, owner_uid="12345II", owner="abc")
CLAIM_Y = pvc_manifest("abc-y", ns="test", sc=SC_NAME, owner_uid="12345II", owner="abc")


def run_csi(new_pod: Pod, existing: Sequence[Pod], drivers: Sequence[str], limit_source: str, max_vols: int = 0,
            extra_claims: Sequence[dict[str, Any]] = ()) -> tuple[Status | None, Status | None]:
    node = make_node().name(NODE).capacity(cpu="4", memory="4Gi", pods=110).obj()
    csinodes = []
    if limit_source == "csinode":
        csinodes = [csinode(drivers, max_vols)]
    elif limit_source == "csinode-with-no-limit":
        csinodes = [csinode(drivers, None)]
    sc = obj({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": SC_NAME},
              "provisioner": drivers[0]})
    objects = MemoryObjects(pvs=fake_pvs(drivers), pvcs=fake_pvcs(drivers) + [obj(m) for m in extra_claims],
                            storage_classes=[sc], csinodes=csinodes)
    handle = FrameworkHandle.for_nodes([node], _place(existing), objects)
    pl = nodevolumelimits.new_csi(None, handle)
    state = CycleState()
    _, pre = pl.pre_filter(state, new_pod)
    if pre is not None and pre.is_skip():
        return pre, None
    ni = handle.snapshot.get(NODE)
    assert ni is not None
    return pre, pl.filter(state, new_pod, ni)


def _place(pods: Sequence[Pod]) -> list[Pod]:
    """Existing pods on the test node; a pod listed twice becomes two distinct pods (the
    copy renamed, which is fine for pods without generic ephemeral volumes)."""
    seen: set[str] = set()
    out = []
    for i, p in enumerate(pods):
        if p.key in seen:
            out.append(_on_node(p, i))
        else:
            seen.add(p.key)
            out.append(dataclasses.replace(p, meta=dataclasses.replace(p.meta, uid=p.meta.uid or f"uid-{i}"),
                                           node_name=NODE))
    return out


def _on_node(p: Pod, i: int) -> Pod:
    """An existing pod on the test node, renamed."""
    meta = dataclasses.replace(p.meta, name=f"{p.name}-{i}", uid=p.meta.uid or f"uid-{i}")
    return dataclasses.replace(p, meta=meta, node_name=NODE)


CASES = [
    pytest.param(CSI_EBS_ONE, [RUNNING, CSI_EBS_TWO], [EBS_CSI], "csinode", 4, [], None,
                 id="fits when the node volume limit is at least the pods' CSI volumes"),
    pytest.param(CSI_EBS_ONE, [RUNNING, CSI_EBS_TWO], [EBS_CSI], "csinode", 2, [], EXCEEDED,
                 id="does not fit when the node volume limit is below the pods' CSI volumes"),
    pytest.param(CSI_EBS_ONE, [RUNNING, CSI_EBS_TWO], [EBS_CSI], "csinode-with-no-limit", 2, [], None,
                 id="fits when the driver does not report a limit"),
    pytest.param(CSI_EBS_ONE, [PENDING_VOLUME, CSI_EBS_TWO], [EBS_CSI], "csinode", 2, [], EXCEEDED,
                 id="pending claims count towards the limit"),
    pytest.param(CSI_EBS_ONE, [PENDING_VOLUME, UNBOUND_PVC_POD2, CSI_EBS_TWO], [EBS_CSI], "csinode", 4, [], None,
                 id="the same pending claim in two pods counts once"),
    pytest.param(CSI_EBS_ONE, [MISSING_PV, CSI_EBS_TWO], [EBS_CSI], "csinode", 2, [], EXCEEDED,
                 id="a claim bound to a missing PV counts through its class"),
    pytest.param(CSI_EBS_ONE, [RUNNING, NO_SC_PVC], [EBS_CSI], "csinode", 2, [], None,
                 id="a claim without class does not count"),
    pytest.param(CSI_EBS_ONE, [GCE_TWO, CSI_EBS_TWO], [EBS_CSI, GCE_CSI], "csinode", 2, [], EXCEEDED,
                 id="volumes of the same driver count towards its limit"),
    pytest.param(GCE_TWO, [CSI_EBS_TWO, RUNNING], [EBS_CSI, GCE_CSI], "csinode", 2, [], None,
                 id="volumes of another driver do not count"),
    pytest.param(IN_TREE_ONE, [IN_TREE_TWO], [EBS_IN_TREE, EBS_CSI], "csinode", 2, [], EXCEEDED,
                 id="in-tree PVs count under their CSI driver once migrated"),
    pytest.param(IN_TREE_INLINE, [IN_TREE_TWO], [EBS_IN_TREE, EBS_CSI], "", 0, [], None,
                 id="without a CSINode in-tree volumes are not migrated"),
    pytest.param(PENDING_VOLUME, [IN_TREE_TWO], [EBS_IN_TREE, EBS_CSI], "csinode", 2, [], EXCEEDED,
                 id="an unbound claim of the in-tree provisioner counts under the CSI driver"),
    pytest.param(IN_TREE_ONE, [IN_TREE_TWO], [EBS_IN_TREE, EBS_CSI], "csinode-with-no-limit", 2, [], None,
                 id="in-tree volumes are not limited when the driver reports no limit"),
    pytest.param(NON_MIGRATABLE, [CSI_EBS_TWO], [HOSTPATH_IN_TREE, EBS_CSI], "csinode", 2, [], None,
                 id="non-migratable in-tree PVs do not count"),
    pytest.param(IN_TREE_INLINE, [IN_TREE_TWO], [EBS_IN_TREE, EBS_CSI], "csinode", 2, [], EXCEEDED,
                 id="inline in-tree volumes count once migrated"),
    pytest.param(IN_TREE_ONE, [CSI_EBS_TWO], [EBS_IN_TREE, EBS_CSI], "csinode", 2, [], EXCEEDED,
                 id="in-tree and CSI volumes count together when scheduling an in-tree volume"),
    pytest.param(IN_TREE_INLINE, [CSI_EBS_TWO, IN_TREE_ONE], [EBS_IN_TREE, EBS_CSI], "csinode", 3, [], EXCEEDED,
                 id="in-tree, inline and CSI volumes count together"),
    pytest.param(IN_TREE_INLINE_SAME_ID, [CSI_EBS_TWO, IN_TREE_ONE], [EBS_IN_TREE, EBS_CSI], "csinode", 3, [], None,
                 id="an inline volume with an attached CSI volume's handle is not counted twice"),
    pytest.param(CSI_EBS_ONE, [IN_TREE_TWO], [EBS_IN_TREE, EBS_CSI], "csinode", 2, [], EXCEEDED,
                 id="in-tree and CSI volumes count together when scheduling a CSI volume"),
    pytest.param(EPHEMERAL, [], [EBS_CSI], "csinode-with-no-limit", 0, [],
                 Status.unresolvable('looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found'),
                 id="a missing ephemeral claim is unschedulable and unresolvable"),
    pytest.param(EPHEMERAL, [], [EBS_CSI], "csinode-with-no-limit", 0, [CONFLICTING_CLAIM],
                 Status.as_error("PVC test/abc-xyz was not created for pod test/abc (pod is not owner)"),
                 id="an ephemeral claim not owned by the pod is an error"),
    pytest.param(EPHEMERAL, [], [EBS_CSI], "csinode-with-no-limit", 0, [EPHEMERAL_CLAIM], None,
                 id="an unbound ephemeral claim fits without limit"),
    pytest.param(EPHEMERAL, [RUNNING, CSI_EBS_TWO], [EBS_CSI], "csinode", 2, [EPHEMERAL_CLAIM], EXCEEDED,
                 id="an ephemeral claim counts towards the limit"),
    pytest.param(CSI_EBS_ONE, [RUNNING, EPHEMERAL_TWO], [EBS_CSI], "csinode", 2, [CLAIM_X, CLAIM_Y], EXCEEDED,
                 id="existing pods' ephemeral claims count towards the limit"),
    pytest.param(CSI_EBS_ONE, [RUNNING, EPHEMERAL, CSI_EBS_TWO], [EBS_CSI], "csinode", 3, [EPHEMERAL_CLAIM], EXCEEDED,
                 id="ephemeral and persistent claims count together"),
    pytest.param(CSI_EBS_ONE, [RUNNING, EPHEMERAL, CSI_EBS_TWO], [EBS_CSI], "csinode", 5, [EPHEMERAL_CLAIM], None,
                 id="ephemeral and persistent claims fit under a high enough limit"),
    pytest.param(ONLY_CM_SECRET, [], [EBS_CSI], "csinode", 2, [], "skip",
                 id="a pod with only secrets and config maps is skipped"),
    pytest.param(PVC_CM_SECRET, [], [EBS_CSI], "csinode", 2, [], None,
                 id="a pod with a claim is not skipped"),
    pytest.param(EPHEMERAL_CM_SECRET, [], [EBS_CSI], "csinode-with-no-limit", 0, [],
                 Status.unresolvable('looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found'),
                 id="a pod with an ephemeral volume is not skipped"),
    pytest.param(INLINE_MIGRATABLE_CM_SECRET, [IN_TREE_TWO], [EBS_IN_TREE, EBS_CSI], "csinode", 2, [], EXCEEDED,
                 id="a pod with an inline migratable volume is not skipped"),
]


@pytest.mark.parametrize(("new_pod", "existing", "drivers", "limit_source", "max_vols", "extra", "want"), CASES)
def test_csi_limits(new_pod: Pod, existing: list[Pod], drivers: list[str], limit_source: str, max_vols: int,
                    extra: list[dict[str, Any]], want: Status | str | None) -> None:
    pre, got = run_csi(new_pod, existing, drivers, limit_source, max_vols, extra)
    if want == "skip":
        assert pre == Status.skip()
        return
    assert pre is None
    assert got == want


def test_limits_from_node_allocatable_and_csinode_override() -> None:
    """v1.30 getVolumeLimits: attachable-volumes-* from the Node, the CSINode count wins; 1.36
    reads the CSINode only."""
    key = csi_attach_limit_key(EBS_CSI)
    node = make_node().name(NODE).capacity_map({"cpu": "4", "memory": "4Gi", "pods": "110", key: "1"}).obj()
    objects = MemoryObjects(pvs=fake_pvs([EBS_CSI]), pvcs=fake_pvcs([EBS_CSI]))
    existing = _on_node(CSI_EBS_TWO, 0)
    handle = FrameworkHandle.for_nodes([node], [existing], objects, features=FEATURES_1_30)
    pl = nodevolumelimits.new_csi(None, handle)
    ni = handle.snapshot.get(NODE)
    assert ni is not None
    assert pl.filter(CycleState(), CSI_EBS_ONE, ni) == EXCEEDED
    handle_136 = FrameworkHandle.for_nodes([node], [existing], objects, features=FEATURES_1_36)
    ni_136 = handle_136.snapshot.get(NODE)
    assert ni_136 is not None
    assert nodevolumelimits.new_csi(None, handle_136).filter(CycleState(), CSI_EBS_ONE, ni_136) is None
    # A CSINode count overrides the node's allocatable.
    objects2 = MemoryObjects(pvs=fake_pvs([EBS_CSI]), pvcs=fake_pvcs([EBS_CSI]), csinodes=[csinode([EBS_CSI], 3)])
    handle2 = FrameworkHandle.for_nodes([node], [existing], objects2)
    ni2 = handle2.snapshot.get(NODE)
    assert ni2 is not None
    assert nodevolumelimits.new_csi(None, handle2).filter(CycleState(), CSI_EBS_ONE, ni2) is None


@pytest.mark.parametrize(
    ("driver", "want"),
    [
        pytest.param("ebs.csi.aws.com", "attachable-volumes-csi-ebs.csi.aws.com", id="a short driver name is kept"),
        pytest.param("a" * 40, "attachable-volumes-csi-" + "a" * 23 + "a56559418dc7908c",
                     id="a long driver name is truncated and hashed"),
    ],
)
def test_csi_attach_limit_key(driver: str, want: str) -> None:
    got = csi_attach_limit_key(driver)
    assert got == want
    assert len(got) < 63


def test_migrated_gce_pd_pvs_are_keyed_by_zone() -> None:
    """A zonal GCE PD PV translates to projects/UNSPECIFIED/zones/<zone>/disks/<pd>: the same
    disk inline (UNSPECIFIED zone) is a different handle, so both count."""
    pv = obj({"apiVersion": "v1", "kind": "PersistentVolume",
              "metadata": {"name": "gce-pv", "labels": {"topology.kubernetes.io/zone": "us-central1-a"}},
              "spec": {"capacity": {"storage": "1Gi"}, "gcePersistentDisk": {"pdName": "disk-1"}}})
    claim = obj(pvc_manifest("gce-claim", volume="gce-pv"))
    node = make_node().name(NODE).obj()
    existing = _on_node(inline_pod("gcePersistentDisk", {"pdName": "disk-1"}), 0)
    handle = FrameworkHandle.for_nodes([node], [existing], MemoryObjects(
        pvs=[pv], pvcs=[claim], csinodes=[csinode([GCE_CSI], 1, migrated="")]))
    pl = nodevolumelimits.new_csi(None, handle)
    ni = handle.snapshot.get(NODE)
    assert ni is not None
    new_volumes: dict[str, str] = {}
    pl.filter_attachable_volumes(pvc_pod("gce-claim"), handle.objects.csinode(NODE), True, new_volumes)
    assert list(new_volumes) == [f"{GCE_CSI}/projects/UNSPECIFIED/zones/us-central1-a/disks/disk-1"]
    assert pl.filter(CycleState(), pvc_pod("gce-claim"), ni) == EXCEEDED


def test_invalid_inline_ebs_id_is_an_error() -> None:
    node = make_node().name(NODE).obj()
    handle = FrameworkHandle.for_nodes([node], [], MemoryObjects(csinodes=[csinode([EBS_CSI], 1)]))
    ni = handle.snapshot.get(NODE)
    assert ni is not None
    s = nodevolumelimits.new_csi(None, handle).filter(
        CycleState(), inline_pod("awsElasticBlockStore", {"volumeID": "aws://zone/not-a-volume"}), ni)
    assert s is not None and s.code == Code.ERROR
    assert s.message.startswith("converting volume(v0) from inline to csi: ")


def test_plugin_name() -> None:
    # The registered events (both releases) are checked in test_queueing_hints.py.
    handle = FrameworkHandle.for_nodes([make_node().name(NODE).obj()], [], MemoryObjects())
    pl = nodevolumelimits.new(None, handle)
    assert pl.name == NAME == CSI_NAME == "NodeVolumeLimits"
