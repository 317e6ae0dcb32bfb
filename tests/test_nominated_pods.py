"""Which pending pods' status.nominatedNodeName reserves room, in both simulators.

kube-scheduler only honours a nomination through its nominator, and a pod reaches the
nominator the way upstream's PriorityQueue adds it (scheduling_queue.go: Add ->
addNominatedPodUnlocked after addToActiveQ): the pod must be one the unscheduled-pod event
handler passes on (eventhandlers.go: !assignedPod && responsibleForPod; the pod informer's
field selector already dropped Succeeded/Failed pods) and it must pass PreEnqueue (a pod held
by schedulingGates stays in unschedulablePods and is never nominated by Add). A pod being
deleted is no exception: Add nominates it, and skipPodSchedule only drops it when popped,
leaving the nominator alone until the pod's Delete event.

Every case runs on one node n1 with 2 CPUs and two pods asking for 2 CPUs each:

- ``nominee``, nominated to n1, which cannot run anywhere itself (its nodeSelector matches
  no node) and never preempts (preemptionPolicy Never keeps its nomination after it fails);
- ``ours``, a plain pod of the default profile, tried after ``nominee`` when both are
  schedulable (lower or equal priority, created later).

If the nominator holds ``nominee`` (priority >= ours), RunFilterPluginsWithNominatedPods adds
it to n1 and ``ours`` does not fit; otherwise ``ours`` binds to n1.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from builders import PodBuilder, make_node, make_pod

from kubesched.objects import ClusterObjects, Pod
from kubesched.simulation import Simulator
from kubesched.timeline import TimelineSimulator

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def at(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def cluster(shape: Callable[[PodBuilder], PodBuilder], priority: int) -> ClusterObjects:
    n1 = make_node().name("n1").capacity(cpu="2", memory="8Gi", pods=110).obj()
    nominee = shape(make_pod().name("nominee").req(cpu="2").priority(priority).creation(at(0))
                    .node_selector({"disk": "ssd"}).preemption_policy("Never").nominated("n1")).obj()
    ours = make_pod().name("ours").req(cpu="2").priority(0).creation(at(1)).obj()
    return ClusterObjects(nodes=[n1], pods=[nominee, ours], latest_timestamp=ours.meta.creation_timestamp or 0.0)


def same(b: PodBuilder) -> PodBuilder:
    return b


# (id, nominee's shape, nominee's priority, where ours ends up, where the nominator has nominee at the end)
CASES: list[tuple[str, Callable[[PodBuilder], PodBuilder], int, str | None, str]] = [
    ("a nominated pod of higher priority reserves room on its node", same, 100, None, "n1"),
    ("a nominated pod of equal priority reserves room on its node", same, 0, None, "n1"),
    ("a nominated pod of lower priority does not keep ours out", same, -1, "n1", "n1"),
    ("a nominated pending pod of another scheduler reserves no room so ours fits",
     lambda b: b.scheduler_name("other-scheduler"), 100, "n1", ""),
    ("a nominated pod held by a scheduling gate reserves no room so ours fits",
     lambda b: b.scheduling_gate("example.com/not-yet"), 100, "n1", ""),
    ("a nominated pod that already failed reserves no room so ours fits",
     lambda b: b.phase("Failed"), 100, "n1", ""),
    ("a nominated pod being deleted still reserves room until it is gone",
     lambda b: b.terminating(at(0)), 100, None, "n1"),
    ("a nomination to a node that does not exist is kept and harmless",
     lambda b: b.nominated("ghost"), 100, "n1", "ghost"),
]


def _nominee(objs: ClusterObjects) -> Pod:
    return next(p for p in objs.pods if p.name == "nominee")


@pytest.mark.parametrize("shape,priority,ours_on,nominee_on", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_deterministic_simulator_reserves_room_only_for_pods_upstreams_queue_nominates(
        shape: Callable[[PodBuilder], PodBuilder], priority: int, ours_on: str | None, nominee_on: str) -> None:
    objs = cluster(shape, priority)
    sim = Simulator(objs, deterministic=True)
    res = sim.run()
    assert res.final["default/ours"] == ours_on
    assert res.final["default/nominee"] is None
    assert sim.nominator.nominated_node(_nominee(objs)) == nominee_on


@pytest.mark.parametrize("shape,priority,ours_on,nominee_on", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_timeline_reserves_room_only_for_pods_upstreams_queue_nominates(
        shape: Callable[[PodBuilder], PodBuilder], priority: int, ours_on: str | None, nominee_on: str) -> None:
    objs = cluster(shape, priority)
    sim = TimelineSimulator(objs)
    res = sim.run()
    assert res.final["default/ours"] == ours_on
    assert res.final["default/nominee"] is None
    assert sim.nominator.nominated_node(_nominee(objs)) == nominee_on


def test_timeline_pops_a_nominated_pod_being_deleted_and_skips_it_as_skip_pod_schedule_does() -> None:
    """The pod is queued like any other (Add, then Pop); ScheduleOne's skipPodSchedule drops
    it with a FailedScheduling event, without a scheduling attempt, keeping its nomination."""
    objs = cluster(lambda b: b.terminating(at(0)), 100)
    sim = TimelineSimulator(objs)
    res = sim.run()
    msg = "skip schedule deleting pod: default/nominee"
    assert res.skipped["default/nominee"] == msg
    got: list[Any] = [(e.reason, e.message) for e in res.events if e.pod == "default/nominee"]
    assert got == [("FailedScheduling", msg)]
    assert [s.attempt.pod.name for s in res.steps] == ["ours"]
    assert res.metrics.queue_incoming_pods[("active", "UnschedulablePodAdd")] == 2  # 1.36's label (v1.30: PodAdd)
