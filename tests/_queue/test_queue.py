"""The scheduling queue (upstream scheduling_queue_test.go cases that apply to v1.30 with
SchedulerQueueingHints off): activeQ order, backoff growth/cap/expiry, requeueing on
cluster events, the move-request cycle, the unschedulable leftover flush, gated pods,
updates, activation, metrics and next_event_time."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kubesched._queue import ACTIVE_Q, BACKOFF_Q, GATED, UNSCHEDULABLE_PODS, FakeClock, QueueError, SchedulingQueue
from kubesched._queue.events import (
    ASSIGNED_POD_DELETE,
    CSI_NODE_ADD,
    NODE_ADD,
    NODE_LABEL_CHANGE,
    NODE_SPEC_UNSCHEDULABLE_CHANGE,
    NODE_TAINT_CHANGE,
    PV_ADD,
    UNSCHEDULABLE_TIMEOUT,
    WILDCARD_EVENT,
)
from kubesched._queue.queue import is_pod_updated
from kubesched.framework import (
    GVK,
    NOMINATING_OVERRIDE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    NominatingInfo,
    PodInfo,
    QueuedPodInfo,
)
from tests._queue.helpers import (
    HIGH,
    LOW,
    MEDIUM,
    MID,
    START,
    AllowlistPreEnqueue,
    add_and_fail,
    fail,
    new_queue,
    pod,
    pop_expect,
    scheduling_gates,
)

NODE_ADD_REG = ClusterEvent(GVK.NODE, ActionType.ADD)
FOO_ON_NODE_ADD = {"fooPlugin": [NODE_ADD_REG]}


def names(pods: list[Any]) -> list[str]:
    return [p.name for p in pods]


def drain(q: SchedulingQueue) -> list[str]:
    out = []
    while (p := q.pop()) is not None:
        out.append(p.pod.name)
    return out


# ============================================================================ activeQ order
ORDER_CASES = [
    # (pods as (name, priority, clock step before adding it), expected pop order)
    ("higher priority pops first whatever the add order",
     [("mpp", MEDIUM, 0.0), ("up", LOW, 0.0), ("hpp", HIGH, 0.0)], ["hpp", "mpp", "up"]),
    ("equal priority pops the pod queued earlier first",
     [("z-first", MID, 0.0), ("a-second", MID, 1.0), ("m-third", MID, 1.0)], ["z-first", "a-second", "m-third"]),
    ("equal priority and equal timestamp pop in arrival order",
     [("z", 0, 0.0), ("a", 0, 0.0), ("m", 0, 0.0)], ["z", "a", "m"]),
    ("priority wins over an earlier timestamp",
     [("old-low", LOW, 0.0), ("new-high", HIGH, 5.0)], ["new-high", "old-low"]),
    ("unset priority counts as zero",
     [("unset", None, 0.0), ("one", 1, 1.0)], ["one", "unset"]),
]


@pytest.mark.parametrize("pods,want", [c[1:] for c in ORDER_CASES], ids=[c[0] for c in ORDER_CASES])
def test_active_q_order(pods: list[tuple[str, int | None, float]], want: list[str]) -> None:
    clock = FakeClock(START)
    q = new_queue(clock=clock)
    for name, prio, step in pods:
        clock.step(step)
        q.add(pod(name, priority=prio))
    assert names(q.pods_in_active_q()) == want
    assert drain(q) == want


def test_add_records_nominations_and_pop_keeps_them() -> None:
    """TestPriorityQueue_Add: pods carrying status.nominatedNodeName are nominated on Add,
    and popping does not drop the nomination."""
    q = new_queue()
    med, unsched, high = pod("mpp", "ns2", MEDIUM, "node1"), pod("up", "ns1", LOW, "node1"), pod("hpp", "ns1", HIGH)
    for p in (med, unsched, high):
        q.add(p)
    assert q.nominator.snapshot() == {"node1": ["ns2/mpp", "ns1/up"]}
    assert drain(q) == ["hpp", "mpp", "up"]
    assert [pi.pod.name for pi in q.nominated_pods_for_node("node1")] == ["mpp", "up"]
    assert q.incoming_pods[(ACTIVE_Q, "PodAdd")] == 3


def test_pop_increments_attempts_and_cycle_and_clears_rejectors() -> None:
    """TestPop: the popped QueuedPodInfo has empty UnschedulablePlugins/PendingPlugins."""
    q = new_queue(FOO_ON_NODE_ADD)
    p = pod("targetpod")
    pinfo = add_and_fail(q, p, "barPlugin", pending=["fooPlugin"])
    assert (pinfo.attempts, q.scheduling_cycle) == (1, 1)
    q.move_all_to_active_or_backoff_queue(NODE_ADD)  # Pending rejector registered it: straight to activeQ
    again = pop_expect(q, p)
    assert again is pinfo
    assert (again.attempts, q.scheduling_cycle) == (2, 2)
    assert again.unschedulable_plugins == set() and again.pending_plugins == set()
    assert q.pop() is None
    assert q.scheduling_cycle == 2, "an empty pop is no scheduling cycle"


def test_recently_tried_pods_go_back() -> None:
    """TestRecentlyTriedPodsGoBack: a pod put back after a failure queues behind pods of
    the same priority that waited meanwhile."""
    clock = FakeClock(START)
    q = new_queue(clock=clock)
    pods = [pod(f"test-pod-{i}", priority=HIGH, nominated="node1") for i in range(5)]
    for p in pods:
        q.add(p)
    clock.step(1e-6)
    p1 = q.pop()
    assert p1 is not None
    fail(q, p1, "plugin")
    clock.step(1.0)
    q.move_all_to_active_or_backoff_queue(UNSCHEDULABLE_TIMEOUT)
    order = drain(q)
    assert order[-1] == p1.pod.name and len(order) == 5


def test_pod_failing_repeatedly_does_not_block_newer_pod() -> None:
    """TestPodFailedSchedulingMultipleTimesDoesNotBlockNewerPod."""
    clock = FakeClock(START)
    q = new_queue(clock=clock)
    unsched = pod("test-pod-unscheduled", priority=HIGH, nominated="node1")
    add_and_fail(q, unsched, "plugin")
    clock.step(2.0)
    q.move_all_to_active_or_backoff_queue(UNSCHEDULABLE_TIMEOUT)
    p1 = pop_expect(q, unsched)
    newer = pod("test-newer-pod", priority=HIGH, nominated="node1")
    q.add(newer)
    fail(q, p1, "plugin")
    clock.step(3.0)
    q.move_all_to_active_or_backoff_queue(UNSCHEDULABLE_TIMEOUT)
    pop_expect(q, newer)


def test_high_priority_unschedulable_pod_does_not_block_others() -> None:
    """TestHighPriorityBackoff."""
    q = new_queue(FOO_ON_NODE_ADD)
    mid, high = pod("test-midpod", priority=MID), pod("test-highpod", priority=HIGH)
    q.add(mid)
    q.add(high)
    p = pop_expect(q, high)
    fail(q, p, "fooPlugin")
    q.move_all_to_active_or_backoff_queue(NODE_ADD)
    pop_expect(q, mid)


# ============================================================================ backoff
BACKOFF_CASES = [
    # (attempts, initial, max, want)
    ("a pod never tried backs off the initial duration", 0, 1.0, 10.0, 1.0),
    ("the first attempt backs off one second", 1, 1.0, 10.0, 1.0),
    ("the second attempt doubles to two seconds", 2, 1.0, 10.0, 2.0),
    ("the third attempt doubles to four seconds", 3, 1.0, 10.0, 4.0),
    ("the fourth attempt doubles to eight seconds", 4, 1.0, 10.0, 8.0),
    ("the fifth attempt is capped at ten seconds", 5, 1.0, 10.0, 10.0),
    ("the sixth attempt stays capped at ten seconds", 6, 1.0, 10.0, 10.0),
    ("a hundredth attempt stays capped at ten seconds", 100, 1.0, 10.0, 10.0),
    ("configured 2s initial and 20s max reach 16s at the fourth attempt", 4, 2.0, 20.0, 16.0),
    ("configured 2s initial and 20s max cap at the fifth attempt", 5, 2.0, 20.0, 20.0),
    ("upstream 'normal': 1ns initial and 32ns max cap at 16 attempts", 16, 1e-9, 32e-9, 32e-9),
    ("a max below the initial duration still gives the initial duration first", 1, 10.0, 5.0, 10.0),
    ("a max below the initial duration caps from the second attempt", 2, 10.0, 5.0, 5.0),
]


@pytest.mark.parametrize("attempts,initial,maximum,want", [c[1:] for c in BACKOFF_CASES],
                         ids=[c[0] for c in BACKOFF_CASES])
def test_backoff_duration(attempts: int, initial: float, maximum: float, want: float) -> None:
    q = new_queue(pod_initial_backoff=initial, pod_max_backoff=maximum)
    pinfo = QueuedPodInfo(PodInfo(pod("p")), timestamp=START, attempts=attempts)
    assert q.backoff_duration(pinfo) == pytest.approx(want, rel=0, abs=1e-15)
    assert q.backoff_time(pinfo) == pytest.approx(START + want, rel=0, abs=1e-12)


def test_backoff_flow_grows_caps_and_expires() -> None:
    """TestBackOffFlow: 1, 2, 4, 8, 10, 10, 10 seconds; still backing off just before the
    expiry, out of backoffQ at it."""
    clock = FakeClock(START)
    q = new_queue(clock=clock)
    p = pod("test-pod", "test-ns")
    q.add(p)
    for i, want in enumerate([1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0]):
        t0 = clock.now()
        pinfo = pop_expect(q, p)
        assert pinfo.attempts == i + 1
        q.add_unschedulable_if_not_present(pinfo, i)  # no rejector plugin: straight to backoffQ
        q.move_all_to_active_or_backoff_queue(UNSCHEDULABLE_TIMEOUT)
        assert q.queue_of(p) == BACKOFF_Q
        assert q.backoff_time(pinfo) - t0 == want
        clock.step(0.001)
        assert q.flush_backoff_q_completed() == 0
        assert q.queue_of(p) == BACKOFF_Q, "an early flush leaves it backing off"
        clock.step(want - 0.001)
        assert q.flush_backoff_q_completed() == 1
        assert q.queue_of(p) == ACTIVE_Q
    assert q.incoming_pods[(BACKOFF_Q, "ScheduleAttemptFailure")] == 7
    assert q.incoming_pods[(ACTIVE_Q, "BackoffComplete")] == 7


def test_backoff_q_flushes_in_expiry_order() -> None:
    clock = FakeClock(START)
    q = new_queue(clock=clock)
    a, b, c = pod("a", priority=LOW), pod("b", priority=HIGH), pod("c", priority=MID)
    for p, step in ((a, 0.0), (b, 0.5), (c, 0.2)):
        clock.step(step)
        q.add(p)
        q.add_unschedulable_if_not_present(pop_expect(q, p), q.scheduling_cycle)
    assert names(q.pods_in_backoff_q()) == ["a", "b", "c"]
    clock.set(START + 1.5)
    assert q.flush_backoff_q_completed() == 2  # a (expires START+1) and b (START+1.5); c at START+1.7
    assert names(q.pods_in_active_q()) == ["b", "a"]
    assert names(q.pods_in_backoff_q()) == ["c"]


# ============================================================================ AddUnschedulableIfNotPresent
FAIL_CASES = [
    # (rejectors, pending, event before pop, event after pop, want queue)
    ("a pod rejected by a plugin waits in unschedulablePods when nothing happened",
     ("fooPlugin",), (), None, None, UNSCHEDULABLE_PODS),
    ("a pod rejected by no plugin goes to backoffQ",
     (), (), None, None, BACKOFF_Q),
    ("a pod rejected by a Pending plugin waits in unschedulablePods when nothing happened",
     (), ("fooPlugin",), None, None, UNSCHEDULABLE_PODS),
    ("a move request for an event of interest during the pod's cycle sends it to backoffQ",
     ("fooPlugin",), (), None, NODE_ADD, BACKOFF_Q),
    ("a move request during the cycle counts even if another plugin registered the event",
     ("barPlugin",), (), None, NODE_ADD, BACKOFF_Q),
    ("a wildcard event during the cycle is a move request",
     ("fooPlugin",), (), None, WILDCARD_EVENT, BACKOFF_Q),
    ("an event no plugin registered is no move request",
     ("fooPlugin",), (), None, PV_ADD, UNSCHEDULABLE_PODS),
    ("a move request before the pod's cycle started does not count",
     ("fooPlugin",), (), NODE_ADD, None, UNSCHEDULABLE_PODS),
]


@pytest.mark.parametrize("rejectors,pending,before,after,want", [c[1:] for c in FAIL_CASES],
                         ids=[c[0] for c in FAIL_CASES])
def test_add_unschedulable_destination(rejectors: tuple[str, ...], pending: tuple[str, ...],
                                       before: ClusterEvent | None, after: ClusterEvent | None, want: str) -> None:
    clock = FakeClock(START)
    q = new_queue(FOO_ON_NODE_ADD, clock=clock)
    p = pod("targetpod")
    q.add(p)
    if before is not None:
        q.move_all_to_active_or_backoff_queue(before)
    pinfo = pop_expect(q, p)
    clock.step(3.0)
    if after is not None:
        q.move_all_to_active_or_backoff_queue(after)
    fail(q, pinfo, *rejectors, pending=pending)
    assert q.queue_of(p) == want
    assert pinfo.timestamp == START + 3.0, "the timestamp is refreshed when the pod is put back"
    assert q.incoming_pods[(want, "ScheduleAttemptFailure")] == 1


def test_move_request_in_the_same_cycle_sends_all_failures_to_backoff() -> None:
    """TestPriorityQueue_AddUnschedulableIfNotPresent_Backoff: pods whose attempts were
    in and before the cycle of a move request go to backoffQ."""
    q = new_queue(FOO_ON_NODE_ADD)
    pods = [pod(f"pod{i}", f"ns{i}", i) for i in range(10)]
    for p in pods:
        q.add(p)
    popped = [pop_expect(q, pods[i]) for i in range(9, 0, -1)]
    q.move_all_to_active_or_backoff_queue(WILDCARD_EVENT)
    old_cycle = q.scheduling_cycle
    pop_expect(q, pods[0])
    for pinfo in popped:
        fail(q, pinfo, "plugin", cycle=old_cycle)
    assert all(q.queue_of(p) == BACKOFF_Q for p in pods[1:])


def test_move_request_cycle_is_set_only_for_events_of_interest() -> None:
    q = new_queue(FOO_ON_NODE_ADD)
    q.add(pod("p"))
    q.pop()
    q.move_all_to_active_or_backoff_queue(PV_ADD)
    assert q.move_request_cycle == -1
    q.move_all_to_active_or_backoff_queue(NODE_ADD)
    assert q.move_request_cycle == 1, "even though no pod moved"
    q.assigned_pod_added(pod("bound", node="n1"))
    assert q.move_request_cycle == 1, "AssignedPodAdd is of interest to nobody here"


ALREADY_CASES = ["activeQ", "backoffQ", "unschedulablePods"]


@pytest.mark.parametrize("where", ALREADY_CASES, ids=[f"putting back a pod already in {w} is an error"
                                                       for w in ALREADY_CASES])
def test_add_unschedulable_rejects_a_queued_pod(where: str) -> None:
    q = new_queue(FOO_ON_NODE_ADD)
    p = pod("p")
    if where == "activeQ":
        q.add(p)
    elif where == "backoffQ":
        add_and_fail(q, p)
    else:
        add_and_fail(q, p, "fooPlugin")
    with pytest.raises(QueueError, match="already present"):
        q.add_unschedulable_if_not_present(q.new_queued_pod_info(p, "fooPlugin"), q.scheduling_cycle)


# ============================================================================ requeueing on events (hints off)
MOVE_CASES: list[tuple[Any, ...]] = [
    # (registrations, rejectors, pending, event, clock step after failing, want queue)
    ("an event the rejector registered moves the pod to backoffQ while it backs off",
     FOO_ON_NODE_ADD, ("fooPlugin",), (), NODE_ADD, 0.0, BACKOFF_Q),
    ("an event the rejector registered moves the pod to activeQ once its backoff is over",
     FOO_ON_NODE_ADD, ("fooPlugin",), (), NODE_ADD, 1.0, ACTIVE_Q),
    ("an event registered only by another plugin leaves the pod unschedulable",
     {"fooPlugin": [NODE_ADD_REG], "barPlugin": [ClusterEvent(GVK.PERSISTENT_VOLUME, ActionType.ADD)]},
     ("fooPlugin",), (), PV_ADD, 1.0, UNSCHEDULABLE_PODS),
    ("an event nobody registered leaves the pod unschedulable",
     FOO_ON_NODE_ADD, ("fooPlugin",), (), CSI_NODE_ADD, 1.0, UNSCHEDULABLE_PODS),
    ("a wildcard event moves a pod whatever its rejectors",
     FOO_ON_NODE_ADD, ("barPlugin",), (), WILDCARD_EVENT, 0.0, BACKOFF_Q),
    ("UnschedulableTimeout is a wildcard event",
     FOO_ON_NODE_ADD, ("barPlugin",), (), UNSCHEDULABLE_TIMEOUT, 1.0, ACTIVE_Q),
    ("an event a Pending rejector registered moves the pod to activeQ even while it backs off",
     FOO_ON_NODE_ADD, ("barPlugin",), ("fooPlugin",), NODE_ADD, 0.0, ACTIVE_Q),
    ("a specific node update matches a Node/Update registration",
     {"fooPlugin": [ClusterEvent(GVK.NODE, ActionType.UPDATE)]}, ("fooPlugin",), (), NODE_LABEL_CHANGE, 1.0,
     ACTIVE_Q),
    ("a Node/Add registration also matches a node taint change",
     FOO_ON_NODE_ADD, ("fooPlugin",), (), NODE_TAINT_CHANGE, 1.0, ACTIVE_Q),
    ("a Node/Add registration also matches a node becoming schedulable",
     FOO_ON_NODE_ADD, ("fooPlugin",), (), NODE_SPEC_UNSCHEDULABLE_CHANGE, 1.0, ACTIVE_Q),
    ("a Node/Add registration does not match a node label change",
     FOO_ON_NODE_ADD, ("fooPlugin",), (), NODE_LABEL_CHANGE, 1.0, UNSCHEDULABLE_PODS),
    ("a registration for resource * matches an add of any resource",
     {"fooPlugin": [ClusterEvent(GVK.WILDCARD, ActionType.ADD)]}, ("fooPlugin",), (), PV_ADD, 1.0, ACTIVE_Q),
    ("a registration with hint is used like a plain one (hints are off)",
     {"fooPlugin": [ClusterEventWithHint(NODE_ADD_REG, hint=object())]}, ("fooPlugin",), (), NODE_ADD, 1.0,
     ACTIVE_Q),
]


@pytest.mark.parametrize("registrations,rejectors,pending,event,step,want", [c[1:] for c in MOVE_CASES],
                         ids=[c[0] for c in MOVE_CASES])
def test_move_all_by_event(registrations: Any, rejectors: tuple[str, ...], pending: tuple[str, ...],
                           event: ClusterEvent, step: float, want: str) -> None:
    clock = FakeClock(START)
    q = new_queue(registrations, clock=clock)
    p = pod("p")
    add_and_fail(q, p, *rejectors, pending=pending)
    assert q.queue_of(p) == UNSCHEDULABLE_PODS
    clock.step(step)
    moved = q.move_all_to_active_or_backoff_queue(event)
    assert q.queue_of(p) == want
    assert moved == (0 if want == UNSCHEDULABLE_PODS else 1)
    if want != UNSCHEDULABLE_PODS:
        assert q.incoming_pods[(want, event.label)] == 1


WORTH_CASES: list[tuple[Any, ...]] = [
    # (registrations, unschedulable plugins, pending plugins, event, want strategy)
    ("no registration of a rejector matching the event means skip",
     {"fooPlugin1": [ClusterEvent(GVK.POD, ActionType.ADD)]}, {"fooPlugin1"}, set(), NODE_ADD, 0),
    ("a wildcard event means queue after backoff",
     {}, {"fooPlugin1"}, set(), WILDCARD_EVENT, 1),
    ("a match of a Pending plugin means queue immediately",
     {"fooPlugin1": [NODE_ADD_REG], "fooPlugin2": [NODE_ADD_REG], "fooPlugin3": [NODE_ADD_REG],
      "fooPlugin4": [NODE_ADD_REG]}, {"fooPlugin1", "fooPlugin3"}, {"fooPlugin2"}, NODE_ADD, 2),
    ("a match of an Unschedulable plugin means queue after backoff",
     {"fooPlugin1": [NODE_ADD_REG], "fooPlugin2": [NODE_ADD_REG]}, {"fooPlugin1", "fooPlugin2"}, set(), NODE_ADD, 1),
    ("a registration of a plugin that did not reject the pod is ignored",
     {"fooPlugin3": [NODE_ADD_REG]}, {"fooPlugin1", "fooPlugin2"}, set(), NODE_ADD, 0),
    ("a specific node update matches Node/UpdateNodeLabel and Node/Update registrations",
     {"fooPlugin1": [ClusterEvent(GVK.NODE, ActionType.UPDATE_NODE_LABEL), ClusterEvent(GVK.NODE, ActionType.UPDATE)]},
     {"fooPlugin1", "fooPlugin2"}, set(), ClusterEvent(GVK.NODE, ActionType.UPDATE_NODE_LABEL), 1),
    ("a resource * registration matches the same action on any resource",
     {"fooPlugin1": [ClusterEvent(GVK.WILDCARD, ActionType.ADD)]}, {"fooPlugin1"}, set(), NODE_ADD, 1),
    ("a wildcard registration matches every event",
     {"fooPlugin1": [ClusterEvent(GVK.WILDCARD, ActionType.ALL)]}, {"fooPlugin1"}, set(),
     ClusterEvent(GVK.NODE, ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT), 1),
    ("a pod rejected by no plugin is worth requeuing on any event",
     {"fooPlugin1": [NODE_ADD_REG]}, set(), set(), PV_ADD, 1),
    ("an Unschedulable match alongside a Pending plugin without match means queue after backoff",
     {"u": [NODE_ADD_REG], "p": [ClusterEvent(GVK.POD, ActionType.ADD)]}, {"u"}, {"p"}, NODE_ADD, 1),
]


@pytest.mark.parametrize("registrations,unsched,pending,event,want", [c[1:] for c in WORTH_CASES],
                         ids=[c[0] for c in WORTH_CASES])
def test_is_pod_worth_requeuing(registrations: Any, unsched: set[str], pending: set[str], event: ClusterEvent,
                                want: int) -> None:
    """Test_isPodWorthRequeuing with every hint "Queue" (the v1.30 default)."""
    q = new_queue(registrations)
    pinfo = QueuedPodInfo(PodInfo(pod("pod1")), unschedulable_plugins=set(unsched), pending_plugins=set(pending))
    assert q._is_pod_worth_requeuing(pinfo, event) == want


def test_pod_of_a_profile_without_registrations_is_requeued() -> None:
    """No hint map for the pod's profile: upstream logs a bug and queues after backoff."""
    fw_queue = new_queue(events_by_profile={"other-scheduler": FOO_ON_NODE_ADD})
    pinfo = QueuedPodInfo(PodInfo(pod("pod1")), unschedulable_plugins={"fooPlugin"})
    assert fw_queue._is_pod_worth_requeuing(pinfo, PV_ADD) == 1
    assert fw_queue.is_event_of_interest(NODE_ADD) and not fw_queue.is_event_of_interest(PV_ADD)


def test_registrations_are_per_profile() -> None:
    q = new_queue(events_by_profile={"default-scheduler": FOO_ON_NODE_ADD,
                                     "other": {"fooPlugin": [ClusterEvent(GVK.PERSISTENT_VOLUME, ActionType.ADD)]}})
    pinfo = QueuedPodInfo(PodInfo(pod("pod1")), unschedulable_plugins={"fooPlugin"})
    assert q._is_pod_worth_requeuing(pinfo, NODE_ADD) == 1
    assert q._is_pod_worth_requeuing(pinfo, PV_ADD) == 0, "PV/Add is fooPlugin's event only in profile 'other'"


PRE_CHECK_CASES = [
    ("no pre-check moves every pod", None, ["p0", "p1", "p2", "p3", "p4"]),
    ("pods with priority of at least 2", lambda p: p.priority >= 2, ["p2", "p3", "p4"]),
    ("pods with even priority of at least 2", lambda p: p.priority % 2 == 0 and p.priority >= 2, ["p2", "p4"]),
    ("pods with even and negative priority: none", lambda p: p.priority % 2 == 0 and p.priority < 0, []),
]


@pytest.mark.parametrize("pre_check,want", [c[1:] for c in PRE_CHECK_CASES], ids=[c[0] for c in PRE_CHECK_CASES])
def test_move_all_with_pre_check(pre_check: Any, want: list[str]) -> None:
    """TestMoveAllToActiveOrBackoffQueue_PreEnqueueChecks."""
    q = new_queue({"plugin": [NODE_ADD_REG]})
    for i in range(5):
        add_and_fail(q, pod(f"p{i}", priority=i), "plugin")
    q.move_all_to_active_or_backoff_queue(NODE_ADD, pre_check)
    assert names(q.pods_in_backoff_q()) == want


def test_move_all_without_queueing_hint_scenario() -> None:
    """TestPriorityQueue_MoveAllToActiveOrBackoffQueueWithOutQueueingHint."""
    clock = FakeClock(START)
    q = new_queue(FOO_ON_NODE_ADD, clock=clock)
    med = pod("mpp", "ns2", MEDIUM, "node1")
    unsched = pod("up", "ns1", LOW, "node1")
    high = pod("hpp", "ns1", HIGH)
    hpp1 = pod("hpp1", "ns1", HIGH)
    hpp2 = pod("hpp2", "ns1", HIGH)
    q.add(med)
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(unsched, "fooPlugin"), q.scheduling_cycle)
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(high, "fooPlugin"), q.scheduling_cycle)
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(hpp1), q.scheduling_cycle)  # no rejector: backoffQ
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(hpp2, "barPlugin"), q.scheduling_cycle)
    q.move_all_to_active_or_backoff_queue(NODE_ADD)
    assert q.num_active == 1
    pop_expect(q, med)
    assert q.num_backoff == 3, "hpp2 is not moved: barPlugin registered nothing"
    assert q.queue_of(hpp2) == UNSCHEDULABLE_PODS
    for p in (unsched, high, hpp1):
        q._backoff_q.delete(p.key)  # upstream pops them out of podBackoffQ directly

    q.scheduling_cycle += 1
    infos = [q.new_queued_pod_info(unsched, "fooPlugin"), q.new_queued_pod_info(high, "fooPlugin"),
             q.new_queued_pod_info(hpp1)]
    for pinfo in infos:
        q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
    q.add(med)
    for p in (unsched, high, hpp2):
        assert q.queue_of(p) == UNSCHEDULABLE_PODS
    assert q.queue_of(hpp1) == BACKOFF_Q

    clock.step(1.0)
    q.flush_backoff_q_completed()
    q.move_all_to_active_or_backoff_queue(NODE_ADD)
    assert (q.num_active, q.num_backoff, q.num_unschedulable) == (4, 0, 1)


# ============================================================================ unschedulable leftover flush
LEFTOVER_CASES = [
    # (max duration, clock step, gated, want queue)
    ("a pod unschedulable for exactly five minutes stays", 300.0, 300.0, False, UNSCHEDULABLE_PODS),
    ("a pod unschedulable for longer than five minutes moves to activeQ", 300.0, 300.5, False, ACTIVE_Q),
    ("a configured 30s limit moves the pod after 30.5s", 30.0, 30.5, False, ACTIVE_Q),
    ("a configured 30s limit keeps the pod at 29s", 30.0, 29.0, False, UNSCHEDULABLE_PODS),
    ("a pod held by a scheduling gate stays however long it waits", 300.0, 3600.0, True, GATED),
]


@pytest.mark.parametrize("limit,step,gated,want", [c[1:] for c in LEFTOVER_CASES], ids=[c[0] for c in LEFTOVER_CASES])
def test_flush_unschedulable_pods_leftover(limit: float, step: float, gated: bool, want: str) -> None:
    clock = FakeClock(START)
    q = new_queue(FOO_ON_NODE_ADD, clock=clock, pre_enqueue=[scheduling_gates()],
                  pod_max_in_unschedulable_pods_duration=limit)
    if gated:
        p = pod("p", gates=["example.com/gate"])
        q.add(p)
    else:
        p = pod("p")
        add_and_fail(q, p, "barPlugin")
    clock.step(step)
    moved = q.flush_unschedulable_pods_leftover()
    assert q.queue_of(p) == want
    assert moved == (1 if want == ACTIVE_Q else 0)
    assert q.incoming_pods[(ACTIVE_Q, "UnschedulableTimeout")] == moved


def test_leftover_flush_moves_high_priority_first() -> None:
    """TestHighPriorityFlushUnschedulablePodsLeftover."""
    clock = FakeClock(START)
    q = new_queue(FOO_ON_NODE_ADD, clock=clock)
    mid, high = pod("test-midpod", priority=MID, nominated="node1"), pod("test-highpod", priority=HIGH,
                                                                          nominated="node1")
    add_and_fail(q, high, "fakePlugin")
    add_and_fail(q, mid, "fakePlugin")
    clock.step(301.0)
    q.flush_unschedulable_pods_leftover()
    assert drain(q) == ["test-highpod", "test-midpod"]


def test_leftover_flush_keeps_timestamp_order() -> None:
    """TestPriorityQueue_initPodMaxInUnschedulablePodsDuration: the pod unschedulable
    longer (earlier timestamp) pops first after the flush."""
    clock = FakeClock(START)
    q = new_queue(FOO_ON_NODE_ADD, clock=clock)
    p1, p2 = pod("test-pod-1", "ns1", nominated="node1"), pod("test-pod-2", "ns2", nominated="node2")
    i1 = add_and_fail(q, p1, "fooPlugin")
    i2 = add_and_fail(q, p2, "fooPlugin")
    i1.timestamp, i2.timestamp = START - 1.0, START - 2.0
    clock.step(300.0)
    q.flush_unschedulable_pods_leftover()
    assert drain(q) == ["test-pod-2", "test-pod-1"]


# ============================================================================ gated pods
def test_gated_pod_waits_until_its_gate_is_removed() -> None:
    clock = FakeClock(START)
    q = new_queue(FOO_ON_NODE_ADD, clock=clock, pre_enqueue=[scheduling_gates()])
    gated = pod("gated", gates=["example.com/a"])
    q.add(gated)
    pinfo = q.get(gated)
    assert pinfo is not None and pinfo.gated
    assert q.queue_of(gated) == GATED
    assert pinfo.unschedulable_plugins == {"SchedulingGates"}
    assert q.pending_counts() == {ACTIVE_Q: 0, BACKOFF_Q: 0, UNSCHEDULABLE_PODS: 0, GATED: 1}
    assert not q.incoming_pods, "a gated Add counts in no queue"
    assert q.unschedulable_reasons == {("SchedulingGates", "default-scheduler"): 1}

    for event in (WILDCARD_EVENT, NODE_ADD, ASSIGNED_POD_DELETE):
        q.move_all_to_active_or_backoff_queue(event)
    clock.step(3600.0)
    q.flush_unschedulable_pods_leftover()
    assert q.unschedulable_reasons == {("SchedulingGates", "default-scheduler"): 1}, "events skip the pod entirely"
    q.activate([gated])
    assert q.queue_of(gated) == GATED, "no event, flush or activation releases a scheduling gate"

    relabelled = pod("gated", gates=["example.com/a"], labels={"x": "y"})
    q.update(gated, relabelled)
    assert q.queue_of(relabelled) == GATED, "an update that keeps the gate keeps the pod gated"

    released = pod("gated", labels={"x": "y"})
    clock.step(60.0)
    q.update(relabelled, released)
    assert q.queue_of(released) == ACTIVE_Q
    popped = pop_expect(q, released)
    assert popped.attempts == 1
    assert popped.initial_attempt_timestamp == START + 3660.0, "the first attempt starts when the gate lifts"


PRE_ENQUEUE_CASES = [
    # (allowlists of two PreEnqueue plugins, pod labels, admitted)
    ("no PreEnqueue plugin admits every pod", None, {"p": ""}, True),
    ("a pod listed by no plugin is gated", ((), ()), {"p": ""}, False),
    ("a pod failing the second plugin is gated", (("foo", "bar"), ("foo",)), {"bar": ""}, False),
    ("a pod passing every plugin is admitted", (("foo", "bar"), ("bar",)), {"bar": ""}, True),
]


@pytest.mark.parametrize("allowlists,labels,admitted", [c[1:] for c in PRE_ENQUEUE_CASES],
                         ids=[c[0] for c in PRE_ENQUEUE_CASES])
def test_pre_enqueue_gates_add(allowlists: Any, labels: dict[str, str], admitted: bool) -> None:
    """TestPriorityQueue_addToActiveQ: gated pods stay unschedulable through a plain update."""
    plugins = [AllowlistPreEnqueue(*a) for a in allowlists] if allowlists is not None else []
    q = new_queue(pre_enqueue=plugins, pod_initial_backoff=30.0, pod_max_backoff=60.0)
    p = pod("p", labels=labels)
    q.add(p)
    assert q.queue_of(p) == (ACTIVE_Q if admitted else GATED)
    if not admitted:
        pinfo = q.get(p)
        assert pinfo is not None and pinfo.unschedulable_plugins == {"preEnqueuePlugin"}
        annotated = pod("p", labels={**labels, "foo-annotation": ""})
        q.update(p, annotated)
        assert q.queue_of(annotated) == GATED


def test_pod_gated_by_another_plugin_is_rechecked_on_events() -> None:
    """Only SchedulingGates-gated pods are skipped by event moves (v1.30): a pod gated by
    another PreEnqueue plugin runs PreEnqueue again on that plugin's events and leaves as
    soon as it passes (never through backoffQ: it was never tried)."""
    allow = AllowlistPreEnqueue()
    q = new_queue({"preEnqueuePlugin": [NODE_ADD_REG]}, pre_enqueue=[scheduling_gates(), allow])
    p, held = pod("p", labels={"x": ""}), pod("held", labels={"x": ""}, gates=["example.com/g"])
    q.add(p)
    q.add(held)
    assert (q.queue_of(p), q.queue_of(held)) == (GATED, GATED)
    q.move_all_to_active_or_backoff_queue(NODE_ADD)
    assert q.queue_of(p) == GATED, "still rejected by PreEnqueue"
    allow.allowlist = ("x",)
    q.move_all_to_active_or_backoff_queue(PV_ADD)
    assert q.queue_of(p) == GATED, "PV/Add is nobody's event"
    q.move_all_to_active_or_backoff_queue(NODE_ADD)
    assert q.queue_of(p) == ACTIVE_Q
    assert q.queue_of(held) == GATED
    assert q.incoming_pods[(ACTIVE_Q, "NodeAdd")] == 1


# ============================================================================ updates
def _prepare_update(case: str, q: SchedulingQueue, clock: FakeClock) -> tuple[Any, Any]:
    med = pod("mpp", "ns2", MEDIUM, "node1")
    high = pod("hpp", "ns1", HIGH)
    annotated = pod("mpp", "ns2", MEDIUM, "node1", labels={"foo": "test"})
    if case == "unknown":
        return None, high
    if case == "unknown-with-old":
        return med, annotated
    if case == "nominate-in-active":
        q.add(high)
        return high, pod("hpp", "ns1", HIGH, "node1")
    if case == "same-in-active":
        q.update(None, high)
        return high, high
    if case == "in-backoff":
        q._backoff_q.add(q.new_queued_pod_info(med))
        return med, med
    if case == "unsched-backing-off":
        q._unschedulable[med.key] = q.new_queued_pod_info(med, "plugin")
        return med, annotated
    if case == "unsched-backoff-over":
        q._unschedulable[med.key] = q.new_queued_pod_info(med, "plugin")
        clock.step(1.0)
        return med, annotated
    if case == "unsched-status-only":
        q._unschedulable[med.key] = q.new_queued_pod_info(med, "plugin")
        clock.step(1.0)
        return med, dataclasses.replace(med, phase="Pending", nominated_node_name="node9")
    raise AssertionError(case)


UPDATE_CASES = [
    ("update of an unknown pod without old object adds it to activeQ", "unknown", ACTIVE_Q, 0),
    ("update of a pod that is in no queue adds it to activeQ", "unknown-with-old", ACTIVE_Q, 1),
    ("update adding a nominatedNodeName to a pod in activeQ keeps it there and nominates it",
     "nominate-in-active", ACTIVE_Q, 1),
    ("update of a pod in activeQ keeps it in activeQ", "same-in-active", ACTIVE_Q, 0),
    ("update of a pod in backoffQ keeps it in backoffQ", "in-backoff", BACKOFF_Q, 1),
    ("update of an unschedulable pod still backing off moves it to backoffQ", "unsched-backing-off", BACKOFF_Q, 1),
    ("update of an unschedulable pod done backing off moves it to activeQ", "unsched-backoff-over", ACTIVE_Q, 1),
    ("status-only update keeps the pod unschedulable", "unsched-status-only", UNSCHEDULABLE_PODS, 1),
]


@pytest.mark.parametrize("case,want,nominated", [c[1:] for c in UPDATE_CASES], ids=[c[0] for c in UPDATE_CASES])
def test_update(case: str, want: str, nominated: int) -> None:
    """TestPriorityQueue_Update."""
    clock = FakeClock(START)
    q = new_queue(clock=clock)
    old, new = _prepare_update(case, q, clock)
    q.update(old, new)
    assert q.queue_of(new) == want
    pinfo = q.get(new)
    assert pinfo is not None and pinfo.pod is new
    assert len(q.nominator) == nominated


def test_update_in_active_q_resorts_the_heap() -> None:
    q = new_queue()
    a, b = pod("a", priority=LOW), pod("b", priority=LOW)
    q.add(a)
    q.add(b)
    b_high = pod("b", priority=HIGH)
    q.update(b, b_high)
    assert drain(q) == ["b", "a"]


def test_update_keeps_in_memory_nomination_when_api_has_none() -> None:
    """updateNominatedPodUnlocked: an update with no nominatedNodeName on either side keeps
    the nomination the scheduler made in memory."""
    q = new_queue()
    p = pod("p")
    q.add(p)
    q.add_nominated_pod(PodInfo(p), NominatingInfo("node7", NOMINATING_OVERRIDE))
    relabelled = pod("p", labels={"a": "b"})
    q.update(p, relabelled)
    assert [pi.pod for pi in q.nominated_pods_for_node("node7")] == [relabelled]


IS_UPDATED_CASES = [
    ("the same object is not an update", lambda p: p, False),
    ("a new label is an update", lambda p: pod("p", labels={"k": "v"}), True),
    ("a priority change through dataclasses.replace is an update", lambda p: dataclasses.replace(p, priority=5), True),
    ("a nominatedNodeName change is status only", lambda p: pod("p", nominated="n1"), False),
    ("a phase change through replace is status only", lambda p: dataclasses.replace(p, phase="Running"), False),
    ("a resourceVersion change is no update",
     lambda p: dataclasses.replace(p, meta=dataclasses.replace(p.meta, resource_version="42")), False),
    ("an equal pod parsed again is no update", lambda p: pod("p"), False),
]


@pytest.mark.parametrize("change,want", [c[1:] for c in IS_UPDATED_CASES], ids=[c[0] for c in IS_UPDATED_CASES])
def test_is_pod_updated(change: Any, want: bool) -> None:
    old = pod("p")
    assert is_pod_updated(old, change(old)) is want


# ============================================================================ delete / activate
def test_delete_removes_pod_and_nomination() -> None:
    """TestPriorityQueue_Delete."""
    q = new_queue()
    high, high_nominated = pod("hpp", "ns1", HIGH), pod("hpp", "ns1", HIGH, "node1")
    unsched = pod("up", "ns1", LOW, "node1")
    q.update(high, high_nominated)
    q.add(unsched)
    q.delete(high_nominated)
    assert q.queue_of(unsched) == ACTIVE_Q
    assert q.queue_of(high_nominated) is None
    assert q.nominator.snapshot() == {"node1": ["ns1/up"]}
    q.delete(unsched)
    assert q.nominator.snapshot() == {}
    assert len(q) == 0


@pytest.mark.parametrize("where", [BACKOFF_Q, UNSCHEDULABLE_PODS], ids=["a pod deleted from backoffQ is gone",
                                                                      "a pod deleted from unschedulablePods is gone"])
def test_delete_from_other_queues(where: str) -> None:
    q = new_queue(FOO_ON_NODE_ADD)
    p = pod("p")
    add_and_fail(q, p, *(["fooPlugin"] if where == UNSCHEDULABLE_PODS else []))
    assert q.queue_of(p) == where
    q.delete(p)
    assert q.queue_of(p) is None and len(q) == 0


ACTIVATE_CASES = [
    ("a pod already in activeQ stays and is counted once", ACTIVE_Q, 1, 0),
    ("a pod in no queue is not activated", None, 0, 0),
    ("a pod in unschedulablePods is activated", UNSCHEDULABLE_PODS, 1, 1),
    ("a pod in backoffQ is activated", BACKOFF_Q, 1, 1),
]


@pytest.mark.parametrize("where,active,forced", [c[1:] for c in ACTIVATE_CASES], ids=[c[0] for c in ACTIVATE_CASES])
def test_activate(where: str | None, active: int, forced: int) -> None:
    """TestPriorityQueue_Activate."""
    q = new_queue()
    p = pod("hpp", "ns1", HIGH, "node1")
    if where == ACTIVE_Q:
        q._active_q.add(q.new_queued_pod_info(p))
    elif where == UNSCHEDULABLE_PODS:
        q._unschedulable[p.key] = q.new_queued_pod_info(p)
    elif where == BACKOFF_Q:
        q._backoff_q.add(q.new_queued_pod_info(p))
    q.activate({"test_pod": p})
    assert q.num_active == active
    assert len(q) == active
    assert q.incoming_pods[(ACTIVE_Q, "ForceActivate")] == forced
    if forced:
        assert q.nominator.snapshot() == {"node1": ["ns1/hpp"]}


# ============================================================================ assigned pod events
AFFINITY = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchExpressions": [{"key": "service", "operator": "Exists"}]}, "topologyKey": "region"}]}}
NS_SELECTOR_AFFINITY = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchExpressions": [{"key": "service", "operator": "Exists"}]}, "topologyKey": "region",
     "namespaceSelector": {"matchLabels": {"team": "a"}}}]}}

ASSIGNED_CASES = [
    # (affinity of the unschedulable pod, assigned pod namespace, its labels, namespace labels, moved)
    ("a bound pod matching a required affinity term moves the pod", AFFINITY, "ns1", {"service": "securityscan"},
     {}, True),
    ("a bound pod without the selected label moves nothing", AFFINITY, "ns1", {"other": "x"}, {}, False),
    ("a bound pod in another namespace does not match a term without namespaces", AFFINITY, "ns2",
     {"service": "x"}, {}, False),
    ("a namespace selector matches the bound pod's namespace labels", NS_SELECTOR_AFFINITY, "ns2",
     {"service": "x"}, {"ns2": {"team": "a"}}, True),
    ("a namespace selector not matching the namespace labels moves nothing", NS_SELECTOR_AFFINITY, "ns2",
     {"service": "x"}, {"ns2": {"team": "b"}}, False),
]


@pytest.mark.parametrize("affinity,ns,labels,ns_labels,moved", [c[1:] for c in ASSIGNED_CASES],
                         ids=[c[0] for c in ASSIGNED_CASES])
def test_assigned_pod_added(affinity: Any, ns: str, labels: dict[str, str], ns_labels: dict[str, dict[str, str]],
                            moved: bool) -> None:
    """TestPriorityQueue_AssignedPodAdded: only pods with a matching required affinity
    term move; the other unschedulable pod stays."""
    clock = FakeClock(START)
    q = new_queue({"fakePlugin": [ClusterEvent(GVK.POD, ActionType.ADD)]}, clock=clock,
                  namespace_labels=ns_labels.get)
    other = pod("up", "ns1", LOW, "node1")
    affinity_pod = pod("afp", "ns1", MEDIUM, "node1", affinity=affinity)
    add_and_fail(q, other, "fakePlugin")
    add_and_fail(q, affinity_pod, "fakePlugin")
    clock.step(2.0)
    q.assigned_pod_added(pod("lbp", ns, labels=labels, node="node1"))
    assert q.queue_of(affinity_pod) == (ACTIVE_Q if moved else UNSCHEDULABLE_PODS)
    assert q.queue_of(other) == UNSCHEDULABLE_PODS
    if moved:
        assert q.incoming_pods[(ACTIVE_Q, "AssignedPodAdd")] == 1


def test_assigned_pod_updated_uses_the_new_labels() -> None:
    clock = FakeClock(START)
    q = new_queue({"fakePlugin": [ClusterEvent(GVK.POD, ActionType.UPDATE)]}, clock=clock)
    affinity_pod = pod("afp", "ns1", affinity=AFFINITY)
    add_and_fail(q, affinity_pod, "fakePlugin")
    old, new = pod("lbp", "ns1", node="n1"), pod("lbp", "ns1", labels={"service": "s"}, node="n1")
    q.assigned_pod_added(new)
    assert q.queue_of(affinity_pod) == UNSCHEDULABLE_PODS, "Pod/Add is not fakePlugin's event"
    q.assigned_pod_updated(new, old)
    assert q.queue_of(affinity_pod) == UNSCHEDULABLE_PODS, "the new object has no matching label"
    q.assigned_pod_updated(old, new)
    assert q.queue_of(affinity_pod) == BACKOFF_Q
    assert q.incoming_pods[(BACKOFF_Q, "AssignedPodUpdate")] == 1


# ============================================================================ pending pods and metrics
def test_pending_pods_and_summary() -> None:
    """TestPriorityQueue_PendingPods."""
    q = new_queue(FOO_ON_NODE_ADD)
    unsched, high, med = pod("up", "ns1", LOW, "node1"), pod("hpp", "ns1", HIGH), pod("mpp", "ns2", MEDIUM, "node1")
    add_and_fail(q, unsched, "plugin")
    add_and_fail(q, high, "plugin")
    q.add(med)
    assert set(names(q.pending_pods())) == {"up", "hpp", "mpp"}
    assert q.pending_pods_summary() == "activeQ:1; backoffQ:0; unschedulablePods:2"
    q.move_all_to_active_or_backoff_queue(WILDCARD_EVENT)
    assert set(names(q.pending_pods())) == {"up", "hpp", "mpp"}
    assert q.pending_pods_summary() == "activeQ:1; backoffQ:2; unschedulablePods:0"


def _ops_pending(q: SchedulingQueue, clock: FakeClock, case: str) -> None:
    queueable = [pod(f"x-{i}", f"ns{i}", labels={"queueable": ""}) for i in range(1, 51)]
    gated = [pod(f"y-{i}", f"ns{i}", labels={"failme": ""}) for i in range(1, 11)]
    everyone = queueable + gated

    def to_unschedulable(pods: list[Any]) -> None:
        for p in pods:
            pinfo = q.new_queued_pod_info(p)
            pinfo.gated = p.name.startswith("y-")
            q._unschedulable[p.key] = pinfo

    if case == "active and unschedulable":
        for p in everyone[:30]:
            q._active_q.add(q.new_queued_pod_info(p))
        to_unschedulable(everyone[30:])
    elif case == "all queues":
        for p in everyone[:15]:
            q._active_q.add(q.new_queued_pod_info(p))
        for p in everyone[15:40]:
            q._backoff_q.add(q.new_queued_pod_info(p))
        to_unschedulable(everyone[40:])
    elif case == "move all":
        to_unschedulable(everyone)
        clock.step(2.0)
        q.move_all_to_active_or_backoff_queue(UNSCHEDULABLE_TIMEOUT)
    elif case == "delete some":
        for p in everyone[:30]:
            q._active_q.add(q.new_queued_pod_info(p))
        to_unschedulable(everyone[30:])
        for p in everyone[:2] + everyone[30:33] + everyone[50:54]:
            q.delete(p)
    elif case == "update some":
        for p in everyone[:30]:
            q._active_q.add(q.new_queued_pod_info(p))
        to_unschedulable(everyone[30:])
        for p in everyone[50:55]:
            q.update(p, pod(p.name, p.namespace, labels={"queueable": ""}))


PENDING_CASES = [
    ("pods in activeQ and unschedulablePods", "active and unschedulable", (30, 0, 20, 10)),
    ("pods in all kinds of queues", "all queues", (15, 25, 10, 10)),
    ("moving all unschedulable pods leaves the gated ones", "move all", (50, 0, 0, 10)),
    ("deleting pods from activeQ and unschedulablePods", "delete some", (28, 0, 17, 6)),
    ("updating gated pods to be queueable activates them", "update some", (35, 0, 20, 5)),
]


@pytest.mark.parametrize("case,want", [c[1:] for c in PENDING_CASES], ids=[c[0] for c in PENDING_CASES])
def test_pending_counts(case: str, want: tuple[int, int, int, int]) -> None:
    """TestPendingPodsMetric: scheduler_pending_pods{queue}."""
    clock = FakeClock(START)
    q = new_queue(clock=clock, pre_enqueue=[AllowlistPreEnqueue("queueable")])
    _ops_pending(q, clock, case)
    assert q.pending_counts() == dict(zip((ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_PODS, GATED), want, strict=True))


def _pop_requeue(q: SchedulingQueue, p: Any, plugins: tuple[str, ...]) -> None:
    q._active_q.add(q.new_queued_pod_info(p))
    pinfo = pop_expect(q, p)
    pinfo.unschedulable_plugins = set(plugins)
    q.add_unschedulable_if_not_present(pinfo, 1)


INCOMING_CASES = [
    ("adding pods counts PodAdd into active", ["add"], {(ACTIVE_Q, "PodAdd"): 3}),
    ("failed pods count ScheduleAttemptFailure into unschedulable", ["unsched"],
     {(UNSCHEDULABLE_PODS, "ScheduleAttemptFailure"): 3}),
    ("moving backing-off pods counts UnschedulableTimeout into backoff", ["unsched", "move"],
     {(UNSCHEDULABLE_PODS, "ScheduleAttemptFailure"): 3, (BACKOFF_Q, "UnschedulableTimeout"): 3}),
    ("moving backed-off pods counts UnschedulableTimeout into active", ["unsched", "clock", "move"],
     {(UNSCHEDULABLE_PODS, "ScheduleAttemptFailure"): 3, (ACTIVE_Q, "UnschedulableTimeout"): 3}),
    ("flushing backoffQ counts BackoffComplete into active", ["backoff", "clock", "flush"],
     {(BACKOFF_Q, "ScheduleAttemptFailure"): 3, (ACTIVE_Q, "BackoffComplete"): 3}),
]


@pytest.mark.parametrize("ops,want", [c[1:] for c in INCOMING_CASES], ids=[c[0] for c in INCOMING_CASES])
def test_incoming_pods_metric(ops: list[str], want: dict[tuple[str, str], int]) -> None:
    """TestIncomingPodsMetrics: scheduler_queue_incoming_pods_total{queue, event}."""
    clock = FakeClock(START)
    q = new_queue(clock=clock)
    pods = [pod(f"test-pod-{i}", f"ns{i}") for i in range(1, 4)]
    for op in ops:
        if op == "add":
            for p in pods:
                q.add(p)
        elif op == "unsched":
            for p in pods:
                _pop_requeue(q, p, ("unschedulable_plugin",))
        elif op == "backoff":
            for p in pods:
                _pop_requeue(q, p, ())
        elif op == "move":
            q.move_all_to_active_or_backoff_queue(UNSCHEDULABLE_TIMEOUT)
        elif op == "clock":
            clock.step(2.0)
        elif op == "flush":
            clock.step(2.0)
            q.flush_backoff_q_completed()
    assert dict(q.incoming_pods) == want


def test_unschedulable_reasons_gauge() -> None:
    """scheduler_unschedulable_pods{plugin, profile}: +1 per rejector when put back, -1 on pop."""
    clock = FakeClock(START)
    q = new_queue(FOO_ON_NODE_ADD, clock=clock)
    p = pod("p")
    add_and_fail(q, p, "fooPlugin", "barPlugin")
    assert q.unschedulable_reasons == {("fooPlugin", "default-scheduler"): 1, ("barPlugin", "default-scheduler"): 1}
    clock.step(1.0)
    q.move_all_to_active_or_backoff_queue(NODE_ADD)
    assert q.unschedulable_reasons, "moving does not change the gauge"
    pop_expect(q, p)
    assert not q.unschedulable_reasons


PER_POD_CASES = [
    ("a pod scheduled at its first attempt", "once", 1, 0.0),
    ("a pod scheduled at its second attempt keeps its first attempt's timestamp", "twice", 2, 0.0),
    ("an update between the attempts does not reset it", "twice-update", 2, 0.0),
]


@pytest.mark.parametrize("scenario,attempts,initial_offset", [c[1:] for c in PER_POD_CASES],
                         ids=[c[0] for c in PER_POD_CASES])
def test_per_pod_scheduling_metrics(scenario: str, attempts: int, initial_offset: float) -> None:
    """TestPerPodSchedulingMetrics: Attempts and InitialAttemptTimestamp."""
    clock = FakeClock(START)
    q = new_queue(clock=clock)
    p = pod("test-pod", "test-ns")
    q.add(p)
    if scenario.startswith("twice"):
        pinfo = pop_expect(q, p)
        pinfo.unschedulable_plugins = {"plugin"}
        q.add_unschedulable_if_not_present(pinfo, 1)
        clock.set(START + 300.000001)
        q.flush_unschedulable_pods_leftover()
        if scenario == "twice-update":
            q.update(p, pod("test-pod", "test-ns", labels={"gen": "1"}))
    got = q.pop()
    assert got is not None
    assert got.attempts == attempts
    assert got.initial_attempt_timestamp == START + initial_offset


# ============================================================================ next_event_time
def test_next_event_time_of_an_empty_queue_is_none() -> None:
    q = new_queue()
    assert q.next_event_time() is None
    q.add(pod("p"))
    assert q.next_event_time() is None, "activeQ needs no flush"


NEXT_CASES = [
    # (setup, aligned, started_at offset, expected offset from START)
    ("the backoffQ head's expiry", "backoff", False, 0.0, 1.0),
    ("the backoffQ head's expiry after a later failure", "backoff-at-0.3", False, 0.0, 1.3),
    ("the backoff flush tick at or after the expiry", "backoff-at-0.3", True, 0.0, 2.0),
    ("a backoff expiry on a tick is that tick", "backoff", True, 0.0, 1.0),
    ("ticks are counted from when the flush loops started", "backoff-at-0.3", True, 0.5, 1.5),
    ("the leftover flush tick strictly after five minutes", "unsched", True, 0.0, 330.0),
    ("the leftover flush tick after a phase shift", "unsched", True, 10.0, 310.0),
    ("the earliest of backoff and leftover", "both", False, 0.0, 1.0),
]


@pytest.mark.parametrize("setup,aligned,started,want", [c[1:] for c in NEXT_CASES], ids=[c[0] for c in NEXT_CASES])
def test_next_event_time(setup: str, aligned: bool, started: float, want: float) -> None:
    clock = FakeClock(START)
    q = new_queue(FOO_ON_NODE_ADD, clock=clock)
    q.run(START + started)
    if setup.startswith("backoff") or setup == "both":
        if setup == "backoff-at-0.3":
            clock.step(0.3)
        add_and_fail(q, pod("b"))
    if setup in ("unsched", "both"):
        clock.set(START)
        add_and_fail(q, pod("u"), "fooPlugin")
    assert q.next_event_time(aligned=aligned) == pytest.approx(START + want, abs=1e-9)


def test_next_event_time_for_leftover_is_the_first_instant_the_flush_moves_the_pod() -> None:
    clock = FakeClock(START)
    q = new_queue(FOO_ON_NODE_ADD, clock=clock)
    p = pod("u")
    add_and_fail(q, p, "fooPlugin")
    t = q.next_event_time()
    assert t is not None and t > START + 300.0
    clock.set(START + 300.0)
    assert q.flush_unschedulable_pods_leftover() == 0
    clock.set(t)
    assert q.flush_unschedulable_pods_leftover() == 1
    assert q.queue_of(p) == ACTIVE_Q


def test_next_event_time_ignores_gated_pods() -> None:
    q = new_queue(pre_enqueue=[scheduling_gates()])
    q.add(pod("g", gates=["x"]))
    assert q.next_event_time() is None


def test_virtual_clock_simulation_reaches_every_pod() -> None:
    """Jumping the fake clock to next_event_time and flushing there drains the queue: a
    failing pod returns after 1 s, 2 s, 4 s ... backoffs and a 5-minute leftover flush."""
    clock = FakeClock(0.0)
    q = new_queue(FOO_ON_NODE_ADD, clock=clock)
    q.run(0.0)
    stubborn, lucky = pod("stubborn"), pod("lucky", priority=1)
    q.add(stubborn)
    q.add(lucky)
    seen: list[tuple[str, float]] = []
    for _ in range(20):
        pinfo = q.pop()
        if pinfo is None:
            t = q.next_event_time(aligned=True)
            if t is None:
                break
            clock.set(t)
            q.flush_backoff_q_completed()
            q.flush_unschedulable_pods_leftover()
            continue
        seen.append((pinfo.pod.name, clock.now()))
        if pinfo.pod is stubborn and pinfo.attempts < 3:
            fail(q, pinfo, *(["fooPlugin"] if pinfo.attempts == 2 else []))
    assert seen == [("lucky", 0.0), ("stubborn", 0.0), ("stubborn", 1.0), ("stubborn", 330.0)]


# ============================================================================ nominator through the queue
def test_nominated_pods_for_node() -> None:
    """TestPriorityQueue_NominatedPodsForNode."""
    q = new_queue()
    med, unsched, high = pod("mpp", "ns2", MEDIUM, "node1"), pod("up", "ns1", LOW, "node1"), pod("hpp", "ns1", HIGH)
    for p in (med, unsched, high):
        q.add(p)
    pop_expect(q, high)
    got = q.nominated_pods_for_node("node1")
    assert [pi.pod for pi in got] == [med, unsched]
    got.clear()
    assert len(q.nominated_pods_for_node("node1")) == 2, "callers get a copy"
    assert q.nominated_pods_for_node("node2") == []


def test_failed_pod_keeps_its_nomination() -> None:
    """TestPriorityQueue_AddUnschedulableIfNotPresent: AddUnschedulableIfNotPresent
    nominates from status.nominatedNodeName."""
    q = new_queue()
    unsched, high = pod("up", "ns1", LOW, "node1"), pod("hpp", "ns1", HIGH, "node1")
    q.add(unsched)
    pop_expect(q, unsched)
    q.add(high)
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(unsched, "plugin"), q.scheduling_cycle)
    assert q.nominator.snapshot() == {"node1": ["ns1/hpp", "ns1/up"]}
    pop_expect(q, high)
    assert q.queue_of(unsched) == UNSCHEDULABLE_PODS
