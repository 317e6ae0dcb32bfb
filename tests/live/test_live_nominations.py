"""Live mode: which pending pods' status.nominatedNodeName reserves room, through the local
API server. As upstream, a nomination counts only once the pod reached the scheduling queue
the way PriorityQueue adds it (eventhandlers.go: !assignedPod && responsibleForPod; Add runs
PreEnqueue first), or once an Update re-nominated it (updateNominatedPodUnlocked).

Every test has one node n1 with 1 CPU, a ``nominee`` nominated to n1 that asks for 1 CPU but
cannot run itself (its nodeSelector matches no node; its class never preempts, so failing
keeps the nomination), and ``ours``, a plain pod asking for 1 CPU at a lower priority."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.cluster.live import ADD, DELETE, PENDING_PODS, UPDATE, ApiClient, ClusterConfig, LiveCluster
from kubesched.live.runner import LiveScheduler
from kubesched.objects import Pod
from kubesched.objects.parse import parse_pod
from kubesched.testing.apiserver import LocalApiServer

from .apihelpers import events, live_scheduler, node, placements, pod, wait_until

GATE = "example.com/not-yet"


@pytest.fixture
def api() -> Any:
    with LocalApiServer(bookmark_interval=0.2) as server:
        server.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                       "metadata": {"name": "high-never"}, "value": 1000, "preemptionPolicy": "Never"})
        server.create(node("n1", "1"))
        yield server


def create_nominee(api: LocalApiServer, *, gated: bool = False, scheduler: str = "") -> None:
    """The nominee, with status.nominatedNodeName n1 written as another component would."""
    extra: dict[str, Any] = {"schedulingGates": [{"name": GATE}]} if gated else {}
    api.create(pod("nominee", "1", priority_class="high-never", scheduler=scheduler,
                   nodeSelector={"disk": "ssd"}, **extra))
    api.patch("pods", "nominee", {"status": {"nominatedNodeName": "n1"}}, "default", subresource="status")


def nominated_node(sched: LiveScheduler, name: str) -> str:
    with sched.lock:
        cur = sched.objects.pod("default", name)
        return sched.nominator.nominated_node(cur) if cur is not None else ""


def ours_fails_for_lack_of_cpu(api: LocalApiServer) -> bool:
    return any(e["regarding"]["name"] == "ours" and "Insufficient cpu" in e["note"]
               for e in events(api, "FailedScheduling"))


def test_a_nominated_pending_pod_of_another_scheduler_reserves_no_room_so_ours_fits(api: LocalApiServer) -> None:
    create_nominee(api, scheduler="other-scheduler")
    api.create(pod("ours", "1"))
    with live_scheduler(api) as sched:
        wait_until(lambda: placements(api).get("ours") == "n1", what="ours bound to n1")
        assert nominated_node(sched, "nominee") == ""
    assert placements(api)["nominee"] == ""


def test_a_gated_nominated_pod_reserves_no_room_so_ours_fits(api: LocalApiServer) -> None:
    create_nominee(api, gated=True)
    api.create(pod("ours", "1"))
    with live_scheduler(api) as sched:
        wait_until(lambda: placements(api).get("ours") == "n1", what="ours bound to n1")
        assert nominated_node(sched, "nominee") == ""
        with sched.lock:
            assert sched.queue.num_gated == 1


def test_an_eligible_nominated_pod_of_higher_priority_reserves_room_so_ours_waits(api: LocalApiServer) -> None:
    create_nominee(api)
    with live_scheduler(api) as sched:
        wait_until(lambda: events(api, "FailedScheduling"), what="the nominee's failure")
        api.create(pod("ours", "1"))
        wait_until(lambda: ours_fails_for_lack_of_cpu(api), what="ours failing on n1's reserved CPU")
        assert nominated_node(sched, "nominee") == "n1"
    assert placements(api)["ours"] == ""


def test_removing_the_scheduling_gate_of_a_nominated_pod_makes_it_reserve_room(api: LocalApiServer) -> None:
    create_nominee(api, gated=True)
    with live_scheduler(api) as sched:
        wait_until(lambda: sched.idle(), what="the scheduler idle")
        assert nominated_node(sched, "nominee") == ""
        api.patch("pods", "nominee", {"spec": {"schedulingGates": None}}, "default")
        wait_until(lambda: nominated_node(sched, "nominee") == "n1", what="the ungated nominee nominated")
        wait_until(lambda: events(api, "FailedScheduling"), what="the nominee's failure")
        api.create(pod("ours", "1"))
        wait_until(lambda: ours_fails_for_lack_of_cpu(api), what="ours failing on n1's reserved CPU")
        assert nominated_node(sched, "nominee") == "n1"
    assert placements(api)["ours"] == ""


def test_a_gated_pod_nominated_by_an_update_reserves_room_as_upstreams_update_nominates_before_pre_enqueue(
        api: LocalApiServer) -> None:
    """PriorityQueue.Update calls updateNominatedPodUnlocked for a pod in unschedulablePods
    before asking PreEnqueue again: a pod still held by its gate gets nominated."""
    extra = {"schedulingGates": [{"name": GATE}]}
    api.create(pod("nominee", "1", priority_class="high-never", nodeSelector={"disk": "ssd"}, **extra))
    with live_scheduler(api) as sched:
        wait_until(lambda: sched.idle(), what="the scheduler idle")
        api.patch("pods", "nominee", {"status": {"nominatedNodeName": "n1"}}, "default", subresource="status")
        wait_until(lambda: nominated_node(sched, "nominee") == "n1", what="the gated nominee nominated")
        with sched.lock:
            assert sched.queue.num_gated == 1
        api.create(pod("ours", "1"))
        wait_until(lambda: ours_fails_for_lack_of_cpu(api), what="ours failing on n1's reserved CPU")
    assert placements(api)["ours"] == ""


# ------------------------------------------------------------------------------------ the pending-pod filter
def _pod(**kw: Any) -> Pod:
    m = pod("p", **{k: v for k, v in kw.items() if k in ("node_name", "scheduler")})
    m["metadata"]["uid"] = "uid-p"
    if kw.get("phase"):
        m["status"] = {"phase": kw["phase"]}
    if kw.get("terminating"):
        m["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return parse_pod(m)


PENDING_CASES = [
    ("an unbound pod of our profile is pending", {}, True),
    ("a pod of another scheduler is not ours", {"scheduler": "other-scheduler"}, False),
    ("a bound pod is not pending", {"node_name": "n1"}, False),
    ("a failed pod is dropped as the informer's field selector drops it", {"phase": "Failed"}, False),
    ("an unbound pod of ours being deleted is still pending until it is gone", {"terminating": True}, True),
]


@pytest.mark.parametrize("shape,want", [c[1:] for c in PENDING_CASES], ids=[c[0] for c in PENDING_CASES])
def test_the_pending_pod_filter_is_upstreams_unscheduled_pod_filter(shape: dict[str, Any], want: bool) -> None:
    """addAllEventHandlers: the scheduling queue's FilterFunc is !assignedPod && responsibleForPod."""
    cluster = LiveCluster(ApiClient(ClusterConfig(server="http://127.0.0.1:9")))
    try:
        assert cluster.is_pending(_pod(**shape)) is want
    finally:
        cluster.client.close()


def test_a_pending_pod_of_ours_starting_to_terminate_is_an_update_of_the_queue_not_a_delete() -> None:
    """FilteringResourceEventHandler: the pod still passes the filter, so the queue gets an
    Update (it keeps its place and its nomination) and only the real deletion is a Delete."""
    cluster = LiveCluster(ApiClient(ClusterConfig(server="http://127.0.0.1:9")))
    got: list[tuple[str, str]] = []
    cluster._handler = lambda ch: got.append((ch.resource, ch.action))  # what start() installs
    try:
        plain, terminating = _pod(), _pod(terminating=True)
        cluster._pod_change(ADD, None, plain)
        cluster._pod_change(UPDATE, plain, terminating)
        cluster._pod_change(DELETE, terminating, None)
    finally:
        cluster.client.close()
    assert got == [(PENDING_PODS, ADD), (PENDING_PODS, UPDATE), (PENDING_PODS, DELETE)]
