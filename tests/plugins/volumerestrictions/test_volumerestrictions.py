"""VolumeRestrictions (upstream volume_restrictions_test.go: TestGCEDiskConflicts,
TestAWSDiskConflicts, TestRBDDiskConflicts, TestISCSIDiskConflicts, TestAccessModeConflicts),
plus read-only variants, AddPod/RemovePod and events."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from builders import make_node, make_pod, obj

from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.framework import Code, CycleState, NodeInfo, PodInfo, Status
from kubesched.objects import Pod
from kubesched.plugins import volumerestrictions
from kubesched.plugins.volumerestrictions import NAME, VolumeRestrictions
from kubesched.plugins.volumerestrictions.plugin import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT_136,
)

GCE = {"pdName": "foo"}
GCE2 = {"pdName": "bar"}
AWS = {"volumeID": "foo"}
AWS2 = {"volumeID": "bar"}
RBD = {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}
RBD2 = {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}
ISCSI = {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01", "fsType": "ext4", "lun": 0}
ISCSI2 = {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01", "fsType": "ext4", "lun": 0}


def vol_pod(kind: str | None, src: dict[str, Any] | None = None, *, name: str = "p", node: str = "",
            read_only: bool = False) -> Pod:
    b = make_pod().name(name)
    if node:
        b = b.node(node)
    if kind is not None:
        s = dict(src or {})
        if read_only:
            s["readOnly"] = True
        b = b.volume("v", kind, s)
    return b.obj()


def setup(existing: list[Pod], pvcs: Sequence[Any] = ()) -> tuple[VolumeRestrictions, NodeInfo]:
    handle = FrameworkHandle.for_nodes([make_node().name("node-1").capacity(cpu="4", memory="4Gi", pods=110).obj()],
                                       existing, MemoryObjects(pvcs=pvcs))
    ni = handle.snapshot.get("node-1")
    assert ni is not None
    return volumerestrictions.new(None, handle), ni


def run(pl: VolumeRestrictions, pod: Pod, ni: NodeInfo) -> tuple[Status | None, Status | None]:
    state = CycleState()
    _, pre = pl.pre_filter(state, pod)
    if pre is not None and (pre.is_skip() or not pre.is_success()):
        return pre, None
    return pre, pl.filter(state, pod, ni)


CONFLICT_CASES = [
    # (kind, new pod source, existing pod source, conflict?) — upstream tables "nothing", "one
    # state", "same state", "different state" for each volume type.
    pytest.param(None, None, None, False, id="a pod without volumes on an empty node fits"),
]
for kind, a, b, label in (("gcePersistentDisk", GCE, GCE2, "GCE PD"), ("awsElasticBlockStore", AWS, AWS2, "AWS EBS"),
                          ("rbd", RBD, RBD2, "RBD"), ("iscsi", ISCSI, ISCSI2, "iSCSI")):
    CONFLICT_CASES += [
        pytest.param(None, None, (kind, a), False, id=f"a pod without volumes fits next to a {label} user"),
        pytest.param(kind, a, (kind, a), True, id=f"the same {label} disk mounted twice conflicts"),
        pytest.param(kind, b, (kind, a), False, id=f"a different {label} disk does not conflict"),
    ]


@pytest.mark.parametrize(("kind", "src", "existing", "conflict"), CONFLICT_CASES)
def test_disk_conflicts(kind: str | None, src: dict[str, Any] | None, existing: tuple[str, dict[str, Any]] | None,
                        conflict: bool) -> None:
    others = [vol_pod(existing[0], existing[1], name="e", node="node-1")] if existing else []
    pl, ni = setup(others)
    pre, got = run(pl, vol_pod(kind, src), ni)
    if kind is None:
        assert pre is not None and pre.is_skip()
        return
    assert pre is None
    if conflict:
        assert got == Status(Code.UNSCHEDULABLE, (ERR_REASON_DISK_CONFLICT,))
    else:
        assert got is None


@pytest.mark.parametrize(
    ("kind", "src", "other", "new_ro", "old_ro", "conflict"),
    [
        pytest.param("gcePersistentDisk", GCE, GCE, True, True, False, id="a GCE PD mounted read-only by both pods is shared"),
        pytest.param("gcePersistentDisk", GCE, GCE, True, False, True, id="a GCE PD read-write on one side conflicts"),
        pytest.param("awsElasticBlockStore", AWS, AWS, True, True, True, id="an EBS volume conflicts even read-only"),
        pytest.param("iscsi", ISCSI, ISCSI, True, True, False, id="an iSCSI IQN mounted read-only by both pods is shared"),
        pytest.param("iscsi", ISCSI, ISCSI, False, True, True, id="an iSCSI IQN read-write on one side conflicts"),
        pytest.param("rbd", RBD, RBD, True, True, False, id="an RBD image mounted read-only by both pods is shared"),
        pytest.param("rbd", RBD, dict(RBD, monitors=["b", "z"]), False, False, True,
                     id="RBD images sharing one monitor, pool and image conflict"),
        pytest.param("rbd", RBD, dict(RBD, image="other"), False, False, False, id="a different RBD image does not conflict"),
        pytest.param("rbd", {"monitors": ["a"], "image": "i"}, {"monitors": ["a"], "pool": "rbd", "image": "i"},
                     False, False, True, id="an RBD pool left empty defaults to rbd"),
    ],
)
def test_read_only_rules(kind: str, src: dict[str, Any], other: dict[str, Any], new_ro: bool, old_ro: bool,
                         conflict: bool) -> None:
    pl, ni = setup([vol_pod(kind, other, name="e", node="node-1", read_only=old_ro)])
    _, got = run(pl, vol_pod(kind, src, read_only=new_ro), ni)
    assert (got == Status.unschedulable(ERR_REASON_DISK_CONFLICT)) if conflict else got is None


def rwop_pvc(name: str, mode: str = "ReadWriteOncePod") -> Any:
    return obj({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": "default"}, "spec": {"accessModes": [mode]}})


POD_RWOP = make_pod().name("pod-with-rwop").pvc("claim-with-rwop").obj()
POD_RWX = make_pod().name("pod-with-rwx").pvc("claim-with-rwx").obj()
RUNNING_RWOP = make_pod().name("running-rwop").node("node-1").pvc("claim-with-rwop").obj()
RUNNING_RWX = make_pod().name("running-rwx").node("node-1").pvc("claim-with-rwx").obj()
PVCS = [rwop_pvc("claim-with-rwop"), rwop_pvc("claim-with-rwx", "ReadWriteMany")]


@pytest.mark.parametrize(
    ("pod", "existing", "pvcs", "want_pre", "want_filter"),
    [
        pytest.param(make_pod().name("p").obj(), [], [], Status.skip(), None, id="a pod without claims is skipped"),
        pytest.param(POD_RWOP, [], [], Status.unresolvable('persistentvolumeclaim "claim-with-rwop" not found'), None,
                     id="a missing claim is unschedulable and unresolvable with the API's not-found text"),
        pytest.param(POD_RWOP, [RUNNING_RWX], PVCS, Status.skip(), None,
                     id="a ReadWriteOncePod claim nobody uses is no conflict"),
        pytest.param(POD_RWOP, [RUNNING_RWOP, RUNNING_RWX], PVCS, None,
                     Status.unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT_136),
                     id="a ReadWriteOncePod claim already used by a scheduled pod conflicts"),
        pytest.param(POD_RWX, [RUNNING_RWX], PVCS, Status.skip(), None,
                     id="a ReadWriteMany claim in use is no conflict"),
    ],
)
def test_access_mode_conflicts(pod: Pod, existing: list[Pod], pvcs: list[Any], want_pre: Status | None,
                               want_filter: Status | None) -> None:
    pl, ni = setup(existing, pvcs)
    pre, got = run(pl, pod, ni)
    assert pre == want_pre
    assert got == want_filter


def test_conflict_on_another_node_still_rejects_every_node() -> None:
    """The ReadWriteOncePod count is cluster-wide, not per node."""
    nodes = [make_node().name(n).capacity(cpu="4", memory="4Gi", pods=110).obj() for n in ("node-1", "node-2")]
    handle = FrameworkHandle.for_nodes(nodes, [RUNNING_RWOP], MemoryObjects(pvcs=PVCS))
    pl = volumerestrictions.new(None, handle)
    state = CycleState()
    assert pl.pre_filter(state, POD_RWOP) == (None, None)
    for n in ("node-1", "node-2"):
        ni = handle.snapshot.get(n)
        assert ni is not None
        assert pl.filter(state, POD_RWOP, ni) == Status.unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT_136)


def test_add_pod_and_remove_pod_update_the_conflict_count_on_a_clone() -> None:
    pl, ni = setup([RUNNING_RWOP], PVCS)
    state = CycleState()
    _, pre = pl.pre_filter(state, POD_RWOP)
    assert pre is None
    ext = pl.pre_filter_extensions()
    # Removing the user (preemption dry run) clears the conflict on the clone only.
    clone = state.clone()
    assert ext.remove_pod(clone, POD_RWOP, PodInfo(RUNNING_RWOP), ni) is None
    assert pl.filter(clone, POD_RWOP, ni) is None
    assert pl.filter(state, POD_RWOP, ni) == Status.unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT_136)
    # Adding a nominated pod using the claim brings it back.
    nominated = make_pod().name("nominated").pvc("claim-with-rwop").obj()
    assert ext.add_pod(clone, POD_RWOP, PodInfo(nominated), ni) is None
    assert pl.filter(clone, POD_RWOP, ni) == Status.unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT_136)


def test_filter_without_pre_filter_state_is_an_error_when_no_disk_conflict() -> None:
    pl, ni = setup([])
    s = pl.filter(CycleState(), vol_pod("gcePersistentDisk", GCE), ni)
    assert s is not None and s.code == Code.ERROR


def test_plugin_name() -> None:
    # The registered events (both releases) are checked in test_queueing_hints.py.
    pl, _ = setup([])
    assert pl.name == NAME == "VolumeRestrictions"
