"""VolumeBinding (upstream volume_binding_test.go TestVolumeBinding, the cases that apply
without a PV controller), plus FindPodVolumes' static matching and dynamic provisioning rules,
Reserve/Unreserve/PreBind with the assume cache, in-tree PV translation and events."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest
from builders import make_node, make_pod, obj

from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.config.args import UtilizationShapePoint, VolumeBindingArgs
from kubesched.errors import ConfigError
from kubesched.framework import Code, CycleState, PreFilterResult, Status
from kubesched.objects import Node, Pod, StorageClass
from kubesched.objects.parse import parse_csidriver
from kubesched.plugins import volumebinding
from kubesched.plugins.volumebinding import NAME, VolumeBinding, pending_volume_bindings
from kubesched.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT_136,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
)
from kubesched.plugins.volumebinding.plugin import ERR_REASON_UNBOUND_IMMEDIATE

HOSTNAME = "kubernetes.io/hostname"
BIND_CONFLICT = Status.unresolvable(ERR_REASON_BIND_CONFLICT)


def sc(name: str, mode: str | None, provisioner: str = "kubernetes.io/no-provisioner",
       allowed: Sequence[dict[str, list[str]]] = ()) -> StorageClass:
    m: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
                         "provisioner": provisioner, "volumeBindingMode": mode or "Immediate"}
    if allowed:
        m["allowedTopologies"] = [{"matchLabelExpressions": [{"key": k, "values": v} for k, v in t.items()]}
                                  for t in allowed]
    s: StorageClass = obj(m)
    return s if mode is not None else dataclasses.replace(s, volume_binding_mode=None)


IMMEDIATE_SC = sc("immediate-sc", "Immediate")
WAIT_SC = sc("wait-sc", "WaitForFirstConsumer")
WAIT_HDD_SC = sc("wait-hdd-sc", "WaitForFirstConsumer")
CLASSES = [IMMEDIATE_SC, WAIT_SC, WAIT_HDD_SC]


def pv(name: str, class_name: str, *, phase: str = "", capacity: str = "", affinity: dict[str, list[str]] | None = None,
       claim: str = "", labels: dict[str, str] | None = None, access: Sequence[str] = (),
       source: dict[str, Any] | None = None) -> Any:
    """makePV(name, class).withPhase().withCapacity().withNodeAffinity()."""
    spec: dict[str, Any] = {"storageClassName": class_name}
    spec.update(source or {"csi": {"driver": "d", "volumeHandle": name}})
    if capacity:
        spec["capacity"] = {"storage": capacity}
    if affinity:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": k, "operator": "In", "values": v} for k, v in affinity.items()]}]}}
    if claim:
        spec["claimRef"] = {"namespace": "default", "name": claim}
    if access:
        spec["accessModes"] = list(access)
    m: dict[str, Any] = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}
    if labels:
        m["metadata"]["labels"] = labels
    if phase:
        m["status"] = {"phase": phase}
    return obj(m)


def pvc(name: str, class_name: str | None, *, bound_pv: str = "", storage: str = "", phase: str = "",
        annotations: dict[str, str] | None = None, deleting: bool = False, access: Sequence[str] = (),
        ns: str = "default", owner_uid: str = "") -> Any:
    """makePVC(name, class).withBoundPV().withRequestStorage()."""
    md: dict[str, Any] = {"name": name, "namespace": ns, "annotations": dict(annotations or {})}
    spec: dict[str, Any] = {}
    if class_name is not None:
        spec["storageClassName"] = class_name
    if bound_pv:
        spec["volumeName"] = bound_pv
        md["annotations"]["pv.kubernetes.io/bind-completed"] = "true"
    if storage:
        spec["resources"] = {"requests": {"storage": storage}}
    if access:
        spec["accessModes"] = list(access)
    if deleting:
        md["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    if owner_uid:
        md["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "abc", "uid": owner_uid, "controller": True}]
    m: dict[str, Any] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": md, "spec": spec}
    if phase:
        m["status"] = {"phase": phase}
    return obj(m)


def node(name: str, **labels: str) -> Node:
    return make_node().name(name).labels({k.replace("__", "/").replace("_", "."): v for k, v in labels.items()}).obj()


def zone_node(name: str, zone: str, region: str) -> Node:
    return make_node().name(name).labels({"topology.kubernetes.io/zone": zone,
                                          "topology.kubernetes.io/region": region}).obj()


def pod_with(*claims: str) -> Pod:
    b = make_pod().name("pod-a")
    for c in claims:
        b = b.pvc(c)
    return b.obj()


def plugin(nodes: Sequence[Node], pvcs: Sequence[Any] = (), pvs: Sequence[Any] = (), classes: Sequence[Any] = CLASSES,
           *, capacity_priority: bool = False, args: VolumeBindingArgs | None = None,
           csinodes: Sequence[Any] = (), csidrivers: Sequence[Any] = ()) -> tuple[VolumeBinding, FrameworkHandle]:
    objects = MemoryObjects(pvcs=pvcs, pvs=pvs, storage_classes=classes, csinodes=csinodes, csidrivers=csidrivers)
    handle = FrameworkHandle.for_nodes(list(nodes), [], objects)
    return VolumeBinding(handle, args, enable_volume_capacity_priority=capacity_priority), handle


def run_all(pl: VolumeBinding, handle: FrameworkHandle, pod: Pod) -> tuple[CycleState, Status | None, list[Status | None]]:
    state = CycleState()
    _, pre = pl.pre_filter(state, pod)
    if pre is not None:
        return state, pre, []
    statuses = []
    for ni in sorted(handle.snapshot.list(), key=lambda n: n.name):
        statuses.append(pl.filter(state, pod, ni))
    return state, None, statuses


ZONES = [zone_node("zone-a-node-a", "zone-a", "region-a"), zone_node("zone-a-node-b", "zone-a", "region-a"),
         zone_node("zone-b-node-a", "zone-b", "region-b"), zone_node("zone-b-node-b", "zone-b", "region-b"),
         zone_node("zone-c-node-a", "zone-c", "region-c"), zone_node("zone-c-node-b", "zone-c", "region-c")]
ZONE_PVS = [pv(f"pv-{z}-{i}", "wait-sc", phase="Available", capacity=cap,
               affinity={"topology.kubernetes.io/region": [f"region-{z}"], "topology.kubernetes.io/zone": [f"zone-{z}"]})
            for z, cap in (("a", "200Gi"), ("b", "100Gi")) for i in range(2)]
LOCAL_PVS = [pv(f"pv-{n}-{i}", "wait-sc", phase="Available", capacity=cap, affinity={HOSTNAME: [f"node-{n}"]})
             for n, cap in (("a", "200Gi"), ("b", "100Gi")) for i in range(2)]
LOCAL_MULTI_PVS = [pv(f"pv-{n}-{i}", cls, phase="Available", capacity=cap, affinity={HOSTNAME: [f"node-{n}"]})
                   for n, cap in (("a", "200Gi"), ("b", "100Gi"))
                   for i, cls in enumerate(("wait-sc", "wait-sc", "wait-hdd-sc", "wait-hdd-sc"))]
ABC = [node("node-a"), node("node-b"), node("node-c")]


CASES = [
    pytest.param(pod_with(), [node("node-a")], [], [], Status.skip(), [], None, id="a pod without claims is skipped"),
    pytest.param(pod_with("pvc-a"), [node("node-a")], [pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
                 [pv("pv-a", "wait-sc", phase="Available")], None, [None], None, id="all claims bound fit"),
    pytest.param(pod_with("pvc-a"), [node("node-a")], [], [],
                 Status.unresolvable('persistentvolumeclaim "pvc-a" not found'), [], None,
                 id="a missing claim is unresolvable with the API's not-found text"),
    pytest.param(pod_with("pvc-a", "pvc-b"), [node("node-a")], [pvc("pvc-a", "wait-sc", bound_pv="pv-a")], [],
                 Status.unresolvable('persistentvolumeclaim "pvc-b" not found'), [], None,
                 id="one of two claims missing is unresolvable"),
    pytest.param(pod_with("pvc-a"), [node("node-a")], [pvc("pvc-a", "immediate-sc")], [],
                 Status.unresolvable(ERR_REASON_UNBOUND_IMMEDIATE), [], None,
                 id="an unbound claim of an Immediate class is unresolvable"),
    pytest.param(pod_with("pvc-a"), [node("node-a")], [pvc("pvc-a", "wait-sc")], [], None, [BIND_CONFLICT], None,
                 id="an unbound WaitForFirstConsumer claim without matching PV or provisioner does not fit"),
    pytest.param(pod_with("pvc-a", "pvc-b"), [node("node-a", foo="barbar")],
                 [pvc("pvc-a", "wait-sc", bound_pv="pv-a"), pvc("pvc-b", "wait-sc")],
                 [pv("pv-a", "wait-sc", phase="Available", affinity={"foo": ["bar"]})], None,
                 [Status.unresolvable(ERR_REASON_NODE_CONFLICT_136, ERR_REASON_BIND_CONFLICT)], None,
                 id="a bound claim with node affinity conflict and an unmatched unbound claim give both reasons"),
    pytest.param(pod_with("pvc-a"), [node("node-a")], [pvc("pvc-a", "wait-sc", bound_pv="pv-a")], [], None,
                 [Status.unresolvable(ERR_REASON_PV_NOT_EXIST)], None, id="a claim bound to a missing PV does not fit"),
    pytest.param(pod_with("pvc-a"), [node("node-a")], [pvc("pvc-a", "wait-sc", bound_pv="pv-a", phase="Lost")], [],
                 Status.unresolvable('persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"'),
                 [], None, id="a lost claim is unresolvable"),
    pytest.param(pod_with("pvc-a"), ABC, [pvc("pvc-a", "wait-sc", storage="50Gi")], LOCAL_PVS, None,
                 [None, None, BIND_CONFLICT], [25, 50, 0], id="local volumes with close capacity are preferred"),
    pytest.param(pod_with("pvc-0", "pvc-1"), ABC,
                 [pvc("pvc-0", "wait-sc", storage="50Gi"), pvc("pvc-1", "wait-hdd-sc", storage="100Gi")],
                 LOCAL_MULTI_PVS, None, [None, None, BIND_CONFLICT], [38, 75, 0],
                 id="local volumes with close capacity are preferred with several claims"),
    pytest.param(pod_with("pvc-a"), ZONES, [pvc("pvc-a", "wait-sc", storage="50Gi")], ZONE_PVS, None,
                 [None, None, None, None, BIND_CONFLICT, BIND_CONFLICT], [25, 25, 50, 50, 0, 0],
                 id="zonal volumes with close capacity are preferred"),
]


@pytest.mark.parametrize(("pod", "nodes", "pvcs", "pvs", "want_pre", "want_filter", "want_scores"), CASES)
def test_volume_binding(pod: Pod, nodes: list[Node], pvcs: list[Any], pvs: list[Any], want_pre: Status | None,
                        want_filter: list[Status | None], want_scores: list[int] | None) -> None:
    pl, handle = plugin(nodes, pvcs, pvs, capacity_priority=want_scores is not None)
    state, pre, statuses = run_all(pl, handle, pod)
    assert pre == want_pre
    assert statuses == want_filter
    if want_scores is not None:
        feasible = [ni for ni in handle.snapshot.list() if ni.name in state.read(volumebinding.plugin._STATE_KEY).pod_volumes_by_node]
        assert pl.pre_score(state, pod, feasible) is None
        infos = sorted(handle.snapshot.list(), key=lambda n: n.name)
        assert [pl.score(state, pod, ni) for ni in infos] == want_scores


def test_custom_shape_scores() -> None:
    """"zonal volumes with close capacity are preferred (custom shape)"."""
    args = VolumeBindingArgs(shape=(UtilizationShapePoint(0, 0), UtilizationShapePoint(50, 3),
                                    UtilizationShapePoint(100, 5)))
    pl, handle = plugin(ZONES, [pvc("pvc-a", "wait-sc", storage="50Gi")], ZONE_PVS, capacity_priority=True, args=args)
    state, pre, _ = run_all(pl, handle, pod_with("pvc-a"))
    assert pre is None
    infos = sorted(handle.snapshot.list(), key=lambda n: n.name)
    assert [pl.score(state, pod_with("pvc-a"), ni) for ni in infos] == [15, 15, 30, 30, 0, 0]


def test_pre_score_skips_without_volume_capacity_priority() -> None:
    pl, handle = plugin(ABC, [pvc("pvc-a", "wait-sc", storage="50Gi")], LOCAL_PVS)
    state, _, _ = run_all(pl, handle, pod_with("pvc-a"))
    assert pl.pre_score(state, pod_with("pvc-a"), handle.snapshot.list()) == Status.skip()


def test_pre_score_skips_without_static_bindings() -> None:
    pl, handle = plugin(ABC, [pvc("pvc-a", "wait-sc", bound_pv="pv-a")], [pv("pv-a", "wait-sc")],
                        capacity_priority=True)
    state, _, _ = run_all(pl, handle, pod_with("pvc-a"))
    assert pl.pre_score(state, pod_with("pvc-a"), handle.snapshot.list()) == Status.skip()


def test_bound_local_pvs_do_not_restrict_the_candidate_nodes() -> None:
    """GetEligibleNodes (a PreFilterResult from hostname node affinity) was reverted in the
    v1.30 patch releases: the other nodes are filtered and fail with a node affinity conflict."""
    pl, handle = plugin(ABC, [pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
                        [pv("pv-a", "wait-sc", affinity={HOSTNAME: ["node-a"]})])
    state = CycleState()
    result, pre = pl.pre_filter(state, pod_with("pvc-a"))
    assert result is None or result == PreFilterResult()
    assert pre is None
    got = [pl.filter(state, pod_with("pvc-a"), ni) for ni in sorted(handle.snapshot.list(), key=lambda n: n.name)]
    assert got == [None, Status.unresolvable(ERR_REASON_NODE_CONFLICT_136), Status.unresolvable(ERR_REASON_NODE_CONFLICT_136)]


@pytest.mark.parametrize(
    ("claim", "want"),
    [
        pytest.param(pvc("pvc-a", "wait-sc", bound_pv="pv-a", annotations={}) , None, id="a fully bound claim is bound"),
        pytest.param(dataclasses.replace(pvc("pvc-a", "wait-sc", bound_pv="pv-a"),
                                         meta=dataclasses.replace(pvc("pvc-a", "wait-sc").meta, annotations={})),
                     Status.unresolvable(ERR_REASON_UNBOUND_IMMEDIATE),
                     id="a claim with volumeName but without bind-completed is an unbound immediate claim"),
        pytest.param(pvc("pvc-a", None), Status.unresolvable(ERR_REASON_UNBOUND_IMMEDIATE),
                     id="an unbound claim without class is immediate"),
        pytest.param(pvc("pvc-a", "no-such-class"), Status.unresolvable(ERR_REASON_UNBOUND_IMMEDIATE),
                     id="an unbound claim of a missing class is immediate"),
        pytest.param(pvc("pvc-a", "wait-sc", deleting=True),
                     Status.unresolvable('persistentvolumeclaim "pvc-a" is being deleted'),
                     id="a claim being deleted is unresolvable"),
    ],
)
def test_claim_classification(claim: Any, want: Status | None) -> None:
    pl, handle = plugin([node("node-a")], [claim], [pv("pv-a", "wait-sc")])
    _, pre = pl.pre_filter(CycleState(), pod_with("pvc-a"))
    assert pre == want


def test_class_without_binding_mode_is_an_error() -> None:
    pl, _ = plugin([node("node-a")], [pvc("pvc-a", "nil-sc")], [], [sc("nil-sc", None)])
    _, pre = pl.pre_filter(CycleState(), pod_with("pvc-a"))
    assert pre == Status.as_error('VolumeBindingMode not set for StorageClass "nil-sc"')


EPHEMERAL = make_pod().name("abc").namespace("test").uid("12345").volume("xyz", "ephemeral", {}).obj()


@pytest.mark.parametrize(
    ("claims", "want"),
    [
        pytest.param([], Status.unresolvable(
            'waiting for ephemeral volume controller to create the persistentvolumeclaim "abc-xyz"'),
            id="a missing ephemeral claim waits for the ephemeral volume controller"),
        pytest.param([pvc("abc-xyz", "wait-sc", ns="test")],
                     Status.unresolvable("PVC test/abc-xyz was not created for pod test/abc (pod is not owner)"),
                     id="an ephemeral claim the pod does not own is unresolvable"),
        pytest.param([pvc("abc-xyz", "wait-sc", ns="test", owner_uid="12345", bound_pv="pv-a")], None,
                     id="a bound ephemeral claim owned by the pod is accepted"),
    ],
)
def test_ephemeral_claims(claims: list[Any], want: Status | None) -> None:
    pl, _ = plugin([node("node-a")], claims, [pv("pv-a", "wait-sc")])
    _, pre = pl.pre_filter(CycleState(), EPHEMERAL)
    assert pre == want


# ---- FindPodVolumes: static matching of WaitForFirstConsumer claims

STATIC_NODE = node("node-a", zone="z1")


@pytest.mark.parametrize(
    ("claim", "pvs", "want_pv"),
    [
        pytest.param(pvc("c", "wait-sc", storage="5Gi"),
                     [pv("big", "wait-sc", phase="Available", capacity="20Gi"),
                      pv("small", "wait-sc", phase="Available", capacity="10Gi")], "small",
                     id="the smallest available PV that is large enough is chosen"),
        pytest.param(pvc("c", "wait-sc", storage="15Gi"),
                     [pv("small", "wait-sc", phase="Available", capacity="10Gi")], None,
                     id="a PV smaller than the request does not match"),
        pytest.param(pvc("c", "wait-sc"), [pv("pending", "wait-sc", capacity="10Gi")], None,
                     id="a PV that is not Available does not match"),
        pytest.param(pvc("c", "wait-sc"), [pv("other", "wait-hdd-sc", phase="Available", capacity="10Gi")], None,
                     id="a PV of another class does not match"),
        pytest.param(pvc("c", "wait-sc", access=["ReadWriteMany"]),
                     [pv("rwo", "wait-sc", phase="Available", capacity="10Gi", access=["ReadWriteOnce"])], None,
                     id="a PV without the requested access modes does not match"),
        pytest.param(pvc("c", "wait-sc"),
                     [pv("far", "wait-sc", phase="Available", capacity="10Gi", affinity={"zone": ["z2"]})], None,
                     id="a PV whose node affinity excludes the node does not match"),
        pytest.param(pvc("c", "wait-sc"),
                     [pv("taken", "wait-sc", phase="Available", capacity="10Gi", claim="someone-else")], None,
                     id="a PV reserved for another claim does not match"),
        pytest.param(pvc("c", "wait-sc"),
                     [pv("mine", "wait-sc", capacity="10Gi", claim="c"),
                      pv("smaller", "wait-sc", phase="Available", capacity="1Gi")], "mine",
                     id="a PV pre-bound to the claim wins even when not Available"),
    ],
)
def test_static_matching(claim: Any, pvs: list[Any], want_pv: str | None) -> None:
    pl, handle = plugin([STATIC_NODE], [claim], pvs)
    state = CycleState()
    assert pl.pre_filter(state, make_pod().name("p").pvc("c").obj()) == (None, None)
    ni = handle.snapshot.get("node-a")
    assert ni is not None
    got = pl.filter(state, make_pod().name("p").pvc("c").obj(), ni)
    if want_pv is None:
        assert got == BIND_CONFLICT
    else:
        assert got is None
        pv_names = [b.pv.name for b in state.read(volumebinding.plugin._STATE_KEY).pod_volumes_by_node["node-a"].static_bindings]
        assert pv_names == [want_pv]


# ---- FindPodVolumes: dynamic provisioning

@pytest.mark.parametrize(
    ("classes", "claim", "drivers", "want"),
    [
        pytest.param([sc("dyn", "WaitForFirstConsumer", "ebs.csi.aws.com")], pvc("c", "dyn", storage="1Gi"), [], None,
                     id="a provisioner can create the volume on any node"),
        pytest.param([sc("dyn", "WaitForFirstConsumer", "ebs.csi.aws.com", [{"zone": ["z1"]}])],
                     pvc("c", "dyn"), [], None, id="allowed topologies matching the node permit provisioning"),
        pytest.param([sc("dyn", "WaitForFirstConsumer", "ebs.csi.aws.com", [{"zone": ["z2"]}])],
                     pvc("c", "dyn"), [], BIND_CONFLICT, id="allowed topologies excluding the node prevent provisioning"),
        pytest.param([sc("dyn", "WaitForFirstConsumer", "kubernetes.io/no-provisioner")], pvc("c", "dyn"), [],
                     BIND_CONFLICT, id="the no-provisioner class cannot provision"),
        pytest.param([sc("dyn", "WaitForFirstConsumer", "ebs.csi.aws.com")],
                     pvc("c", "dyn", annotations={"volume.kubernetes.io/selected-node": "node-b"}), [], BIND_CONFLICT,
                     id="a claim already being provisioned for another node does not fit"),
        pytest.param([sc("dyn", "WaitForFirstConsumer", "ebs.csi.aws.com")],
                     pvc("c", "dyn", annotations={"volume.kubernetes.io/selected-node": "node-a"}), [], None,
                     id="a claim being provisioned for this node fits"),
        pytest.param([sc("dyn", "WaitForFirstConsumer", "ebs.csi.aws.com")], pvc("c", "dyn", storage="1Gi"),
                     [{"name": "ebs.csi.aws.com", "storageCapacity": True}],
                     Status.unresolvable(ERR_REASON_NOT_ENOUGH_SPACE),
                     id="a driver tracking storage capacity without published capacity has not enough storage"),
        pytest.param([sc("dyn", "WaitForFirstConsumer", "ebs.csi.aws.com")], pvc("c", "dyn"),
                     [{"name": "ebs.csi.aws.com", "storageCapacity": True}], None,
                     id="a claim without storage request skips the capacity check"),
        pytest.param([sc("dyn", "WaitForFirstConsumer", "ebs.csi.aws.com")], pvc("c", "dyn", storage="1Gi"),
                     [{"name": "ebs.csi.aws.com", "storageCapacity": False}], None,
                     id="a driver not tracking storage capacity is not checked"),
    ],
)
def test_dynamic_provisioning(classes: list[Any], claim: Any, drivers: list[dict[str, Any]], want: Status | None) -> None:
    csidrivers = [parse_csidriver({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": d["name"]},
                                   "spec": {"storageCapacity": d["storageCapacity"]}}) for d in drivers]
    pl, handle = plugin([STATIC_NODE], [claim], [], classes, csidrivers=csidrivers)
    state = CycleState()
    pod = make_pod().name("p").pvc("c").obj()
    assert pl.pre_filter(state, pod) == (None, None)
    ni = handle.snapshot.get("node-a")
    assert ni is not None
    assert pl.filter(state, pod, ni) == want


# ---- Reserve / PreBind / Unreserve

def test_reserve_assumes_static_bindings_and_pre_bind_records_them() -> None:
    pvs = [pv("pv-1", "wait-sc", phase="Available", capacity="10Gi")]
    claims = [pvc("c1", "wait-sc", storage="1Gi"), pvc("c2", "wait-sc", storage="1Gi")]
    pl, handle = plugin([STATIC_NODE], claims, pvs)
    ni = handle.snapshot.get("node-a")
    assert ni is not None
    first = make_pod().name("p1").pvc("c1").obj()
    state = CycleState()
    assert pl.pre_filter(state, first) == (None, None)
    assert pl.filter(state, first, ni) is None
    assert pl.reserve(state, first, "node-a") is None
    assert pl.pre_bind(state, first, "node-a") is None
    pending = pending_volume_bindings(state)
    assert pending is not None and len(pending.static_bindings) == 1
    bound = pending.static_bindings[0]
    assert (bound.pv.name, bound.pv.claim_ref, bound.pvc.name) == ("pv-1", ("default", "c1"), "c1")
    assert bound.pv.meta.annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
    # The assumed PV is no longer available to another claim.
    second = make_pod().name("p2").pvc("c2").obj()
    state2 = CycleState()
    assert pl.pre_filter(state2, second) == (None, None)
    assert pl.filter(state2, second, ni) == BIND_CONFLICT
    # Unreserve reverts the assumption.
    pl.unreserve(state, first, "node-a")
    assert pending_volume_bindings(state) is None
    state3 = CycleState()
    assert pl.pre_filter(state3, second) == (None, None)
    assert pl.filter(state3, second, ni) is None


def test_reserve_assumes_the_selected_node_for_provisioning() -> None:
    classes = [sc("dyn", "WaitForFirstConsumer", "ebs.csi.aws.com")]
    pl, handle = plugin([STATIC_NODE, node("node-b", zone="z1")], [pvc("c", "dyn")], [], classes)
    pod = make_pod().name("p").pvc("c").obj()
    state = CycleState()
    pl.pre_filter(state, pod)
    for ni in handle.snapshot.list():
        assert pl.filter(state, pod, ni) is None
    assert pl.reserve(state, pod, "node-b") is None
    assert pl.pre_bind(state, pod, "node-b") is None
    pending = pending_volume_bindings(state)
    assert pending is not None
    assert [c.meta.annotations["volume.kubernetes.io/selected-node"] for c in pending.dynamic_provisions] == ["node-b"]
    # Another pod sharing the claim now only fits node-b.
    state2 = CycleState()
    pl.pre_filter(state2, pod)
    got = {ni.name: pl.filter(state2, pod, ni) for ni in handle.snapshot.list()}
    assert got == {"node-a": BIND_CONFLICT, "node-b": None}


def test_pre_bind_is_a_no_op_when_all_claims_are_bound() -> None:
    pl, handle = plugin([node("node-a")], [pvc("pvc-a", "wait-sc", bound_pv="pv-a")], [pv("pv-a", "wait-sc")])
    pod = pod_with("pvc-a")
    state, pre, statuses = run_all(pl, handle, pod)
    assert pre is None and statuses == [None]
    assert pl.reserve(state, pod, "node-a") is None
    assert pl.pre_bind(state, pod, "node-a") is None
    assert pending_volume_bindings(state) is None


def test_reserve_and_pre_bind_of_a_pod_without_claims() -> None:
    pl, _ = plugin([node("node-a")])
    state = CycleState()
    pod = make_pod().name("p").obj()
    assert pl.pre_filter(state, pod) == (None, Status.skip())
    assert pl.reserve(state, pod, "node-a") is None
    assert pl.pre_bind(state, pod, "node-a") is None
    assert pending_volume_bindings(state) is None


def test_pre_bind_without_decisions_for_the_node_is_an_error() -> None:
    pl, handle = plugin([STATIC_NODE], [pvc("c", "wait-sc")], [pv("p", "wait-sc", phase="Available", capacity="1Gi")])
    pod = make_pod().name("p").pvc("c").obj()
    state = CycleState()
    pl.pre_filter(state, pod)
    state.read(volumebinding.plugin._STATE_KEY).all_bound = False
    s = pl.pre_bind(state, pod, "node-x")
    assert s == Status.as_error('no pod volumes found for node "node-x"')


# ---- in-tree PVs and CSI migration

GCE_PV = pv("gce", "wait-sc", source={"gcePersistentDisk": {"pdName": "disk"}},
            labels={"topology.kubernetes.io/zone": "us-central1-a"})


@pytest.mark.parametrize(
    ("annotation", "labels", "want"),
    [
        pytest.param("", {}, None, id="an in-tree PV is checked as is when the node has not migrated the plugin"),
        pytest.param("kubernetes.io/gce-pd", {}, Status.unresolvable(ERR_REASON_NODE_CONFLICT_136),
                     id="a migrated in-tree PV's zone label becomes CSI topology the node must have"),
        pytest.param("kubernetes.io/gce-pd", {"topology.gke.io/zone": "us-central1-a"}, None,
                     id="a migrated in-tree PV fits a node with the CSI zone label"),
    ],
)
def test_in_tree_pv_translation(annotation: str, labels: dict[str, str], want: Status | None) -> None:
    n = make_node().name("node-a").labels(labels).obj()
    cn = obj({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
              "metadata": {"name": "node-a", "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": annotation}},
              "spec": {"drivers": []}})
    pl, handle = plugin([n], [pvc("pvc-a", "wait-sc", bound_pv="gce")], [GCE_PV], csinodes=[cn])
    _, pre, statuses = run_all(pl, handle, pod_with("pvc-a"))
    assert pre is None
    assert statuses == [want]


def test_invalid_args_and_factory() -> None:
    handle = FrameworkHandle.for_nodes([node("n")], [], MemoryObjects())
    with pytest.raises(ConfigError):
        VolumeBinding(handle, VolumeBindingArgs(bind_timeout_seconds=-1))
    with pytest.raises(ConfigError):
        volumebinding.new(object(), handle)
    assert volumebinding.new(None, handle).args == VolumeBindingArgs()


def test_filter_without_pre_filter_is_an_error() -> None:
    pl, handle = plugin([node("node-a")])
    ni = handle.snapshot.get("node-a")
    assert ni is not None
    s = pl.filter(CycleState(), pod_with("x"), ni)
    assert s is not None and s.code == Code.ERROR


def test_plugin_name() -> None:
    # The registered events (both releases) are checked in test_queueing_hints.py.
    pl, _ = plugin([node("n")])
    assert pl.name == NAME == "VolumeBinding"
