"""The nominator (scheduling_queue.go: nominator; TestPriorityQueue_UpdateNominatedPodForNode,
TestPriorityQueue_NominatedPodDeleted)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kubesched._queue import QueueNominator
from kubesched.framework import NOMINATING_NOOP, NOMINATING_OVERRIDE, NominatingInfo, PodInfo
from kubesched.objects import Pod
from tests._queue.helpers import HIGH, LOW, MEDIUM, new_queue, pod, pop_expect, scheduling_gates

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


# ---------------------------------------------------------------- the queue's paths into the nominator
# A pod's status.nominatedNodeName reaches the nominator only through the PriorityQueue:
# Add / Activate / AddUnschedulableIfNotPresent / the add branch of Update nominate it once
# it is in activeQ (or back in a queue after a failure), Update re-nominates the pod it
# updates wherever it sits, Delete forgets it. Each step below is what an informer event or
# the failure handler does; the lister is the informer's store (a bound or deleted pod is
# never nominated).
GATE = "example.com/not-yet"
GATED_POD = pod("g", "ns1", HIGH, "node1", gates=[GATE])
GATED_UNNOMINATED = pod("g", "ns1", HIGH, gates=[GATE])
GATED_RELABELLED = pod("g", "ns1", HIGH, "node1", gates=[GATE], labels={"team": "a"})
UNGATED = pod("g", "ns1", HIGH, "node1")
P = pod("p", "ns1", HIGH, "node1")
P_NO_NNN = pod("p", "ns1", HIGH)
P_ELSEWHERE = pod("p", "ns1", HIGH, "node2")
P_RELABELLED = pod("p", "ns1", HIGH, labels={"team": "a"})
P_GHOST = pod("p", "ns1", HIGH, "ghost")
P_BOUND = pod("p", "ns1", HIGH, node="node1")

Step = tuple[str, Pod | None, Pod | None]

QUEUE_PATH_CASES: list[tuple[str, list[Step], dict[str, list[str]], str | None]] = [
    ("Add nominates a pod to its status.nominatedNodeName", [("add", None, P)], {"node1": ["ns1/p"]}, "active"),
    ("Add of a pod held by a scheduling gate nominates nothing", [("add", None, GATED_POD)], {}, "gated"),
    ("an update of a gated pod nominates it although it stays gated, as upstream's Update calls "
     "updateNominatedPodUnlocked before PreEnqueue",
     [("add", None, GATED_POD), ("update", GATED_POD, GATED_RELABELLED)], {"node1": ["ns1/g"]}, "gated"),
    ("a status-only update giving a gated pod a nominatedNodeName nominates it and keeps it gated",
     [("add", None, GATED_UNNOMINATED), ("update", GATED_UNNOMINATED, GATED_POD)], {"node1": ["ns1/g"]}, "gated"),
    ("removing the last scheduling gate nominates the pod and moves it to activeQ",
     [("add", None, GATED_POD), ("update", GATED_POD, UNGATED)], {"node1": ["ns1/g"]}, "active"),
    ("deleting a gated pod nominated by an update forgets it",
     [("add", None, GATED_POD), ("update", GATED_POD, GATED_RELABELLED), ("delete", None, GATED_RELABELLED)], {}, None),
    ("an update clearing nominatedNodeName forgets the nomination",
     [("add", None, P), ("update", P, P_NO_NNN)], {}, "active"),
    ("an update changing nominatedNodeName moves the nomination",
     [("add", None, P), ("update", P, P_ELSEWHERE)], {"node2": ["ns1/p"]}, "active"),
    ("an update without nominatedNodeName keeps the node the scheduler nominated in memory",
     [("add", None, P_NO_NNN), ("nominate node3", None, P_NO_NNN), ("update", P_NO_NNN, P_RELABELLED)],
     {"node3": ["ns1/p"]}, "active"),
    ("an update of a pod being scheduled (in no queue) queues and nominates it",
     [("add", None, P_NO_NNN), ("pop", None, P_NO_NNN), ("update", P_NO_NNN, P)], {"node1": ["ns1/p"]}, "active"),
    ("a failed pod is nominated again from its status by AddUnschedulableIfNotPresent",
     [("add", None, P_NO_NNN), ("pop", None, P_NO_NNN), ("fail", None, P)], {"node1": ["ns1/p"]}, "backoff"),
    ("deleting a pod forgets its nomination", [("add", None, P), ("delete", None, P)], {}, None),
    ("a pod that got bound leaves the nominator and is not nominated again",
     [("add", None, P), ("bind", None, P_BOUND), ("delete", None, P), ("nominate node1", None, P)], {}, None),
    ("a nomination to a node that does not exist is kept under that name",
     [("add", None, P_GHOST)], {"ghost": ["ns1/p"]}, "active"),
]


@pytest.mark.parametrize("steps,want,queue", [c[1:] for c in QUEUE_PATH_CASES], ids=[c[0] for c in QUEUE_PATH_CASES])
def test_queue_paths_into_the_nominator(steps: list[Step], want: dict[str, list[str]], queue: str | None) -> None:
    """scheduling_queue.go v1.30: Add, Update, Delete, AddUnschedulableIfNotPresent and the
    nominator's addNominatedPodUnlocked / updateNominatedPodUnlocked / delete."""
    store: dict[tuple[str, str], Pod] = {}
    q = new_queue(pre_enqueue=[scheduling_gates()], pod_lister=lambda ns, name: store.get((ns, name)))
    last: Pod | None = None
    for op, old, new in steps:
        assert new is not None
        if op == "add":
            store[(new.namespace, new.name)] = new
            q.add(new)
        elif op == "update":
            store[(new.namespace, new.name)] = new
            q.update(old, new)
        elif op == "delete":
            store.pop((new.namespace, new.name), None)
            q.delete(new)
        elif op == "bind":  # the informer's store sees the pod bound; its handler then deletes it from the queue
            store[(new.namespace, new.name)] = new
        elif op == "pop":
            pop_expect(q, new)
        elif op == "fail":
            store[(new.namespace, new.name)] = new
            pinfo = q.new_queued_pod_info(new)
            q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
        elif op.startswith("nominate "):
            q.add_nominated_pod(PodInfo(new), NominatingInfo(op.split()[1], NOMINATING_OVERRIDE))
        else:
            raise AssertionError(op)
        last = new
    assert q.nominator.snapshot() == want
    assert last is not None
    assert q.queue_of(last) == queue
    for node, keys in want.items():
        assert [pi.pod for pi in q.nominated_pods_for_node(node)] == [last] * len(keys)
