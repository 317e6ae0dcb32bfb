"""`kubesched autoscale`, scale-down: cluster-autoscaler's eligibility, utilization, drain rules,
PDBs and minSize, each rule on a two-node group: ``a`` (the candidate, one small pod) and ``b``
(room for anything). The texts are cluster-autoscaler's (simulator/drainability/rules/*,
core/scaledown/eligibility/eligibility.go, simulator/cluster.go, core/scaledown/unneeded)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ._autoscale_kit import group, member, owned, pdb, replica_set, run
from ._manifests import node, pod


def _rs_pod(name: str = "p", namespace: str = "default", **spec: Any) -> dict[str, Any]:
    return owned(pod(name, "100m", "100Mi", node_name="a", namespace=namespace, **spec), "ReplicaSet", "web")


def _with(p: dict[str, Any], annotations: dict[str, str]) -> dict[str, Any]:
    p["metadata"]["annotations"] = annotations
    return p


EMPTY_DIR = [{"name": "scratch", "emptyDir": {}}]
MEMORY_DIR = [{"name": "scratch", "emptyDir": {"medium": "Memory"}}]
HOST_PATH = [{"name": "logs", "hostPath": {"path": "/var/log"}}]
RS = replica_set("web")
RS_KS = replica_set("web", "kube-system")


@pytest.mark.parametrize(("docs", "verdict"), [
    ([RS, _rs_pod()], "removable"),
    ([pod("p", "100m", node_name="a")], "BlockedByPod: NotReplicated: default/p is not replicated"),
    ([_with(pod("p", "100m", node_name="a"), {"cluster-autoscaler.kubernetes.io/safe-to-evict": "true"})],
     "removable"),
    ([RS, _with(_rs_pod(), {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"})],
     "BlockedByPod: NotSafeToEvictAnnotation: pod annotated as not safe to evict present: p"),
    ([RS, _rs_pod(volumes=EMPTY_DIR)], "BlockedByPod: LocalStorageRequested: pod with local storage present: p"),
    ([RS, _rs_pod(volumes=HOST_PATH)], "BlockedByPod: LocalStorageRequested: pod with local storage present: p"),
    ([RS, _rs_pod(volumes=MEMORY_DIR)], "removable"),
    ([RS, _with(_rs_pod(volumes=EMPTY_DIR), {"cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes": "scratch"})],
     "removable"),
    ([RS_KS, _rs_pod(namespace="kube-system")],
     "BlockedByPod: UnmovableKubeSystemPod: non-daemonset, non-mirrored, non-pdb-assigned kube-system pod present: p"),
    ([RS_KS, _rs_pod(namespace="kube-system"), pdb("web", "web", 1, "kube-system")], "removable"),
    ([RS, _rs_pod(), pdb("web", "web", 0)],
     "BlockedByPod: NotEnoughPdb: not enough pod disruption budget to move default/p"),
    ([_rs_pod()],
     "BlockedByPod: ControllerNotFound: replication controller for default/p is not available, err: "
     "replicaset.apps \"web\" not found"),
    ([_with(pod("mirror", "100m", node_name="a"), {"kubernetes.io/config.mirror": "x"})], "removable"),
    ([_with(pod("agent", "100m", node_name="a"), {"cluster-autoscaler.kubernetes.io/daemonset-pod": "true"})],
     "removable"),
    ([pod("done", "100m", node_name="a", restartPolicy="Never") | {"status": {"phase": "Succeeded"}}], "removable"),
], ids=[
    "a replicated pod moves and the node can go",
    "a pod without a controller blocks its node",
    "safe-to-evict true lets a pod without a controller go",
    "safe-to-evict false blocks a replicated pod",
    "an emptyDir on disk blocks",
    "a hostPath blocks",
    "an emptyDir in memory does not block",
    "an emptyDir named in safe-to-evict-local-volumes does not block",
    "a kube-system pod without PDB blocks",
    "a kube-system pod with a PDB allowing a disruption moves",
    "a PDB allowing no disruption blocks",
    "a pod whose ReplicaSet is missing blocks",
    "a mirror pod does not block",
    "a DaemonSet pod does not block",
    "a terminal pod does not block",
])
def test_drain_rules(tmp_path: Path, docs: list[dict[str, Any]], verdict: str) -> None:
    nodes = [member("a", "g"), member("b", "g")]
    res = run(tmp_path, [*nodes, *docs], [group("g")])
    down = res.scale_down
    got = "removable" if "a" in down.removable else {n: f"{r}: {m}" for n, r, m in down.blocked}["a"]
    assert got == verdict


def test_a_removable_nodes_pods_move_and_stay_moved_for_the_next_node(tmp_path: Path) -> None:
    res = run(tmp_path, [member("a", "g"), member("b", "g"), RS, _rs_pod()], [group("g")])
    assert dict(res.scale_down.moves) == {"default/p": "b"}
    # b was empty, but the simulation keeps p there once a is found removable, and a is no
    # destination any more: p has nowhere to go.
    assert res.scale_down.removable == ("a",)
    assert ("b", "NoPlaceToMovePods", "can reschedule only 0 out of 1 pods") in res.scale_down.blocked


def test_min_size_keeps_the_last_nodes_of_a_group(tmp_path: Path) -> None:
    # Both nodes are empty and removable; the group may lose one of its two (minSize 1).
    res = run(tmp_path, [member("a", "g"), member("b", "g")], [group("g", min_size=1)])
    assert res.scale_down.removable == ("a",)
    assert ("b", "NodeGroupMinSizeReached", "node group min size reached") in res.scale_down.blocked


@pytest.mark.parametrize(("docs", "groups", "node", "verdict"), [
    ([member("a", "g", annotations={"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"})], [group("g")],
     "a", "ScaleDownDisabledAnnotation: the node is marked as no scale down"),
    ([node("a", "4")], [group("g")], "a", "NotAutoscaled: the node is not autoscaled"),
    ([member("a", "g"), RS, owned(pod("p", "3", node_name="a"), "ReplicaSet", "web")], [group("g")],
     "a", "NotUnderutilized: cpu requested (75% of allocatable) is above the scale-down utilization threshold"),
    ([member("a", "g", "4", "8Gi"), RS, owned(pod("p", "1", "5Gi", node_name="a"), "ReplicaSet", "web")], [group("g")],
     "a", "NotUnderutilized: memory requested (62.5% of allocatable) is above the scale-down utilization threshold"),
    ([member("a", "g"), member("b", "g"), RS, owned(pod("p", "1900m", node_name="a"), "ReplicaSet", "web"),
      pod("q", "3", node_name="b")], [group("g")],
     "a", "NoPlaceToMovePods: can reschedule only 0 out of 1 pods"),
    ([member("a", "g"), member("b", "g")], [group("g", min_size=2)], "a",
     "NodeGroupMinSizeReached: node group min size reached"),
], ids=[
    "a node annotated scale-down-disabled is kept",
    "a node no group selects is not autoscaled",
    "a node at 75% cpu is above the 0.5 threshold",
    "memory decides when it is the higher share",
    "a pod that fits nowhere else keeps its node",
    "a group at its minSize keeps its nodes",
])
def test_node_reasons(tmp_path: Path, docs: list[dict[str, Any]], groups: list[dict[str, Any]], node: str,
                      verdict: str) -> None:
    res = run(tmp_path, docs, groups)
    assert {n: f"{r}: {m}" for n, r, m in res.scale_down.blocked}[node] == verdict


def test_the_threshold_is_a_strict_bound(tmp_path: Path) -> None:
    docs = [member("a", "g"), member("b", "g"), RS, owned(pod("p", "2", node_name="a"), "ReplicaSet", "web")]
    assert "a" not in run(tmp_path, docs, [group("g")], threshold=0.5).scale_down.removable
    assert "a" in run(tmp_path, docs, [group("g")], threshold=0.51).scale_down.removable


def test_a_pdb_allowing_one_disruption_lets_only_one_node_go(tmp_path: Path) -> None:
    docs = [member("a", "g"), member("b", "g"), member("c", "g"), RS, pdb("web", "web", 1),
            owned(pod("p1", "100m", node_name="a"), "ReplicaSet", "web"),
            owned(pod("p2", "100m", node_name="b"), "ReplicaSet", "web")]
    res = run(tmp_path, docs, [group("g")])
    assert "a" in res.scale_down.removable
    assert {n: f"{r}: {m}" for n, r, m in res.scale_down.blocked}["b"] == (
        "BlockedByPod: NotEnoughPdb: not enough pod disruption budget to move default/p2")


def test_utilization_is_requests_over_allocatable(tmp_path: Path) -> None:
    docs = [member("a", "g", "4", "8Gi"), RS, owned(pod("p", "1", "2Gi", node_name="a"), "ReplicaSet", "web")]
    u = {x.node: x for x in run(tmp_path, docs, [group("g")]).scale_down.utilization}["a"]
    assert (u.cpu, u.memory, u.resource, u.utilization) == (0.25, 0.25, "memory", 0.25)
