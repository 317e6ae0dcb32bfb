"""The nominator (scheduling_queue.go: nominator; TestPriorityQueue_UpdateNominatedPodForNode,
TestPriorityQueue_NominatedPodDeleted)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kubesched._queue import QueueNominator
from kubesched.framework import NOMINATING_NOOP, NOMINATING_OVERRIDE, NominatingInfo, PodInfo
from kubesched.objects import Pod
from tests._queue.helpers import HIGH, LOW, MEDIUM, new_queue, pod, pop_expect

MED = pod("mpp", "ns2", MEDIUM, "node1")
UNSCHED = pod("up", "ns1", LOW, "node1")
HIGH_POD = pod("hpp", "ns1", HIGH)
HIGH_NOMINATED = pod("hpp", "ns1", HIGH, "node1")
NON_EXISTENT = pod("ne", "ns1")
SCHEDULED = pod("sp", "ns1", node="foo")


def lister(*pods: Pod) -> Callable[[str, str], Pod | None]:
    by_key = {(p.namespace, p.name): p for p in pods}
    return lambda ns, name: by_key.get((ns, name))


def test_update_nominated_pod_for_node() -> None:
    """TestPriorityQueue_UpdateNominatedPodForNode."""
    scheduled_unbound = pod("sp", "ns1")
    q = new_queue(pod_lister=lister(MED, UNSCHED, HIGH_POD, SCHEDULED))
    q.add(MED)
    q.add_nominated_pod(PodInfo(UNSCHED), NominatingInfo("node5", NOMINATING_OVERRIDE))
    q.add_nominated_pod(PodInfo(HIGH_POD), NominatingInfo("node2", NOMINATING_OVERRIDE))
    want = {"node1": ["ns2/mpp"], "node2": ["ns1/hpp"], "node5": ["ns1/up"]}
    assert q.nominator.snapshot() == want
    pop_expect(q, MED)
    assert q.nominator.snapshot() == want, "popping does not touch nominations"

    q.add_nominated_pod(PodInfo(HIGH_POD), NominatingInfo("node4", NOMINATING_OVERRIDE))
    want = {"node1": ["ns2/mpp"], "node4": ["ns1/hpp"], "node5": ["ns1/up"]}
    assert q.nominator.snapshot() == want

    q.add_nominated_pod(PodInfo(NON_EXISTENT), NominatingInfo("node1", NOMINATING_OVERRIDE))
    assert q.nominator.snapshot() == want, "a pod the informer no longer has is not nominated"
    q.add_nominated_pod(PodInfo(scheduled_unbound), NominatingInfo("node1", NOMINATING_OVERRIDE))
    assert q.nominator.snapshot() == want, "a pod the informer sees bound is not nominated"

    q.delete_nominated_pod_if_exists(HIGH_POD)
    assert q.nominator.snapshot() == {"node1": ["ns2/mpp"], "node5": ["ns1/up"]}


NOMINATED_DELETED_CASES = [
    ("an alive pod gets nominated", MED, True, True),
    ("a deleted pod is not nominated", HIGH_NOMINATED, False, False),
    ("a pod without status.nominatedNodeName is not nominated", HIGH_POD, True, False),
]


@pytest.mark.parametrize("p,alive,want", [c[1:] for c in NOMINATED_DELETED_CASES],
                         ids=[c[0] for c in NOMINATED_DELETED_CASES])
def test_nominated_pod_deleted(p: Pod, alive: bool, want: bool) -> None:
    """TestPriorityQueue_NominatedPodDeleted."""
    n = QueueNominator(lister(p) if alive else lister())
    n.add_nominated_pod(PodInfo(p), None)
    assert (len(n.nominated_pods_for_node(p.nominated_node_name)) == 1) is want


MODE_CASES = [
    ("Noop uses status.nominatedNodeName", NominatingInfo("node9", NOMINATING_NOOP), MED, {"node1": ["ns2/mpp"]}),
    ("Override wins over status.nominatedNodeName", NominatingInfo("node9", NOMINATING_OVERRIDE), MED,
     {"node9": ["ns2/mpp"]}),
    ("no info and no status nomination nominates nothing", None, HIGH_POD, {}),
]


@pytest.mark.parametrize("info,p,want", [c[1:] for c in MODE_CASES], ids=[c[0] for c in MODE_CASES])
def test_nominating_modes(info: NominatingInfo | None, p: Pod, want: dict[str, list[str]]) -> None:
    n = QueueNominator()
    n.add_nominated_pod(PodInfo(p), info)
    assert n.snapshot() == want


def test_renomination_moves_the_pod_and_never_duplicates_it() -> None:
    n = QueueNominator()
    pi = PodInfo(HIGH_POD)
    n.add(pi, "a")
    n.add(pi, "a")
    n.add(pi, "b")
    assert n.snapshot() == {"b": ["ns1/hpp"]}
    assert n.nominated_node(HIGH_POD) == "b"
    assert bool(n) and len(n) == 1
    n.add(pi, "")
    assert n.snapshot() == {} and not n and n.nominated_node(HIGH_POD) == ""


def test_override_to_empty_node_is_kept_but_nominates_no_node() -> None:
    """Upstream stores an Override to "" under the empty node name; no real node sees it."""
    n = QueueNominator()
    n.add_nominated_pod(PodInfo(MED), NominatingInfo("", NOMINATING_OVERRIDE))
    assert n.snapshot() == {"": ["ns2/mpp"]}
    assert not n, "no node has nominated pods"
    assert n.nominated_pods_for_node("node1") == []


UPDATE_CASES = [
    ("an update with no nomination on either side keeps the in-memory one", HIGH_POD,
     pod("hpp", "ns1", HIGH, labels={"a": "b"}), {"node7": ["ns1/hpp"]}),
    ("an update adding a nominatedNodeName uses it", HIGH_POD, HIGH_NOMINATED, {"node1": ["ns1/hpp"]}),
    ("an update removing the nominatedNodeName drops the nomination", HIGH_NOMINATED, HIGH_POD, {}),
]


@pytest.mark.parametrize("old,new,want", [c[1:] for c in UPDATE_CASES], ids=[c[0] for c in UPDATE_CASES])
def test_update_nominated_pod(old: Pod, new: Pod, want: dict[str, list[str]]) -> None:
    n = QueueNominator()
    n.add_nominated_pod(PodInfo(old), NominatingInfo("node7", NOMINATING_OVERRIDE))
    n.update_nominated_pod(old, PodInfo(new))
    assert n.snapshot() == want
    for node, keys in want.items():
        assert [pi.pod for pi in n.nominated_pods_for_node(node)] == [new] * len(keys)
