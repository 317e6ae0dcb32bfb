"""The 1.36 scheduling queue (backend/queue: scheduling_queue.go, active_queue.go,
backoff_queue.go with SchedulerQueueingHints GA and SchedulerPopFromBackoffQ on): queueing
hints per plugin, events seen while a pod is in flight, backoff counted by rejections with
aligned windows, errors backing off apart, popping backoffQ when activeQ is empty, gated pods
moved only by their gating plugin's events, and the pod's own updates through the hints.
Each case fails on the v1.30 queue (shown beside it where the answer differs)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched._queue import ACTIVE_Q, BACKOFF_Q, GATED, UNSCHEDULABLE_PODS, FakeClock, SchedulingQueue
from kubesched._queue.events import ASSIGNED_POD_DELETE, NODE_ADD, pod_update_events
from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features, features_for
from kubesched.framework import GVK, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.objects import Pod
from tests._queue.helpers import HIGH, LOW, START, AllowlistPreEnqueue, add_and_fail, fail, new_queue, pod, pop_expect

NODE_ADD_REG = ClusterEvent(GVK.NODE, ActionType.ADD)
POD_DELETE_REG = ClusterEvent(GVK.POD, ActionType.DELETE)


def queue(events: dict[str, list[Any]] | None = None, features: Features = FEATURES_1_36, **kw: Any
          ) -> tuple[SchedulingQueue, FakeClock]:
    clock = FakeClock(START)
    return new_queue(events or {}, clock=clock, features=features, **kw), clock


def hint(answer: QueueingHint) -> Any:
    def fn(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        return answer
    return fn


def boom(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
    raise RuntimeError("lister failed")


# ============================================================================ queueing hints
HINT_CASES = [
    # (rejector's hint, pending rejector?, where the pod goes on a Node/Add)
    ("a hint saying Queue moves the pod (backoff over: to activeQ)", hint(QueueingHint.QUEUE), False, ACTIVE_Q),
    ("a hint saying QueueSkip leaves the pod in unschedulablePods", hint(QueueingHint.QUEUE_SKIP), False,
     UNSCHEDULABLE_PODS),
    ("a hint that raises counts as Queue", boom, False, ACTIVE_Q),
    ("no hint function is the default hint, Queue", None, False, ACTIVE_Q),
    ("a Pending rejector's Queue skips backoff", hint(QueueingHint.QUEUE), True, ACTIVE_Q),
]


@pytest.mark.parametrize(("fn", "pending", "want"), [c[1:] for c in HINT_CASES], ids=[c[0] for c in HINT_CASES])
def test_the_rejector_plugins_queueing_hint_decides(fn: Any, pending: bool, want: str) -> None:
    q, clock = queue({"fooPlugin": [ClusterEventWithHint(NODE_ADD_REG, fn)]})
    p = pod("p")
    if pending:
        add_and_fail(q, p, pending=["fooPlugin"])
    else:
        add_and_fail(q, p, "fooPlugin")
    clock.step(5)  # well past the 1 s backoff
    q.move_all_to_active_or_backoff_queue(NODE_ADD, new=object())
    assert q.queue_of(p) == want


def test_the_hint_gets_the_pod_and_the_events_objects() -> None:
    seen: list[tuple[str, object, object]] = []

    def record(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        seen.append((pod.name, old, new))
        return QueueingHint.QUEUE_SKIP

    q, _ = queue({"fooPlugin": [ClusterEventWithHint(POD_DELETE_REG, record)]})
    add_and_fail(q, pod("p"), "fooPlugin")
    victim = pod("victim", node="n1")
    q.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE, old=victim)
    assert seen == [("p", victim, None)]


def test_a_hint_of_a_plugin_that_did_not_reject_the_pod_is_not_asked() -> None:
    q, _ = queue({"fooPlugin": [ClusterEventWithHint(NODE_ADD_REG, boom)],
                  "barPlugin": [ClusterEventWithHint(NODE_ADD_REG, hint(QueueingHint.QUEUE_SKIP))]})
    p = pod("p")
    add_and_fail(q, p, "barPlugin")
    q.move_all_to_active_or_backoff_queue(NODE_ADD, new=object())
    assert q.queue_of(p) == UNSCHEDULABLE_PODS


# ============================================================================ in-flight events
IN_FLIGHT_CASES = [
    # (events registered, event arriving while the pod is in flight, where its failure puts it)
    ("an event the rejector's hint queues for, seen in flight: to backoffQ",
     hint(QueueingHint.QUEUE), True, BACKOFF_Q),
    ("an event the rejector's hint skips, seen in flight: to unschedulablePods",
     hint(QueueingHint.QUEUE_SKIP), True, UNSCHEDULABLE_PODS),
    ("no event while in flight: to unschedulablePods", hint(QueueingHint.QUEUE), False, UNSCHEDULABLE_PODS),
]


@pytest.mark.parametrize(("fn", "event_in_flight", "want"), [c[1:] for c in IN_FLIGHT_CASES],
                         ids=[c[0] for c in IN_FLIGHT_CASES])
def test_a_failing_pod_replays_the_events_seen_while_it_was_in_flight(fn: Any, event_in_flight: bool,
                                                                      want: str) -> None:
    q, _ = queue({"fooPlugin": [ClusterEventWithHint(NODE_ADD_REG, fn)]})
    p, other = pod("p"), pod("other", priority=LOW)
    q.add(p)
    q.add(other)
    pinfo = pop_expect(q, p)
    assert q.in_flight_pods() == [p.uid]
    if event_in_flight:
        q.move_all_to_active_or_backoff_queue(NODE_ADD, new=object())
    fail(q, pinfo, "fooPlugin")
    assert q.queue_of(p) == want
    assert q.in_flight_pods() == []  # AddUnschedulableIfNotPresent calls Done


def test_events_before_the_pods_pop_are_not_replayed() -> None:
    q, _ = queue({"fooPlugin": [ClusterEventWithHint(NODE_ADD_REG, hint(QueueingHint.QUEUE))]})
    first, p = pod("first", priority=HIGH), pod("p")
    q.add(first)
    q.add(p)
    f = pop_expect(q, first)  # in flight: events are logged from now on
    q.move_all_to_active_or_backoff_queue(NODE_ADD, new=object())
    pinfo = pop_expect(q, p)
    fail(q, pinfo, "fooPlugin")
    assert q.queue_of(p) == UNSCHEDULABLE_PODS
    q.done(f.pod.uid)


def test_the_v1_30_queue_uses_the_move_request_cycle_instead() -> None:
    q, _ = queue({"fooPlugin": [ClusterEventWithHint(NODE_ADD_REG, hint(QueueingHint.QUEUE_SKIP))]},
                 features=FEATURES_1_30)
    p = pod("p")
    q.add(p)
    pinfo = pop_expect(q, p)
    q.move_all_to_active_or_backoff_queue(NODE_ADD)
    fail(q, pinfo, "fooPlugin")
    assert q.queue_of(p) == BACKOFF_Q  # the hint is never asked under v1.30


# ============================================================================ backoff
@pytest.mark.parametrize(("features", "want"), [
    pytest.param(FEATURES_1_30, 4.0, id="v1.30: three pops, 4 s"),
    pytest.param(FEATURES_1_36, 1.0, id="1.36: one rejection, 1 s"),
])
def test_backoff_is_counted_by_rejections_not_by_pops(features: Features, want: float) -> None:
    q, _ = queue({"fooPlugin": [NODE_ADD_REG]}, features=features)
    p = pod("p")
    q.add(p)
    for _ in range(2):  # two errors first
        fail(q, pop_expect(q, p))
        q.activate([p])
    pinfo = pop_expect(q, p)
    fail(q, pinfo, "fooPlugin")
    assert pinfo.attempts == 3
    assert q.backoff_duration(pinfo) == want


def test_errors_count_apart_and_a_rejection_resets_them() -> None:
    q, _ = queue({"fooPlugin": [NODE_ADD_REG]})
    p = pod("p")
    q.add(p)
    for want_errors in (1, 2, 3):
        pinfo = pop_expect(q, p)
        fail(q, pinfo)  # no rejector: an error
        assert (pinfo.consecutive_errors_count, pinfo.unschedulable_count) == (want_errors, 0)
        assert q.backoff_duration(pinfo) == 2.0 ** (want_errors - 1)
        q.activate([p])
    pinfo = pop_expect(q, p)
    fail(q, pinfo, "fooPlugin")
    assert (pinfo.consecutive_errors_count, pinfo.unschedulable_count) == (0, 1)
    assert q.backoff_duration(pinfo) == 1.0


ALIGN_CASES = [
    # (failure time offset, time checked, backing off?)
    ("failed at .3 with 1 s backoff: still backing off at 1.9 (expiry truncated to 1, window 1 not over)",
     0.3, 1.9, True),
    ("failed at .3 with 1 s backoff: done at 2.0, the next window", 0.3, 2.0, False),
    ("failed at .9: the same expiry second as at .3, done at 2.0 too", 0.9, 2.0, False),
]


@pytest.mark.parametrize(("failed_at", "check_at", "backing_off"), [c[1:] for c in ALIGN_CASES],
                         ids=[c[0] for c in ALIGN_CASES])
def test_backoff_expiries_are_aligned_to_one_second_windows(failed_at: float, check_at: float,
                                                            backing_off: bool) -> None:
    q, clock = queue({"fooPlugin": [NODE_ADD_REG]})
    p = pod("p")
    q.add(p)
    pinfo = pop_expect(q, p)
    clock.step(failed_at)
    fail(q, pinfo, "fooPlugin")
    clock.set(START + check_at)
    assert q.is_pod_backing_off(pinfo) is backing_off


def test_without_pop_from_backoff_the_expiry_is_exact() -> None:
    features = features_for("1.36", ["SchedulerPopFromBackoffQ=false"])
    q, clock = queue({"fooPlugin": [NODE_ADD_REG]}, features=features)
    p = pod("p")
    q.add(p)
    pinfo = pop_expect(q, p)
    clock.step(0.3)
    fail(q, pinfo, "fooPlugin")
    clock.set(START + 1.31)
    assert not q.is_pod_backing_off(pinfo)


# ============================================================================ pop from backoffQ
def test_an_empty_activeq_pops_the_backoffq_head_before_its_backoff_ends() -> None:
    q, _ = queue({"fooPlugin": [NODE_ADD_REG]})
    low, high = pod("low", priority=LOW), pod("high", priority=HIGH)
    for p in (low, high):
        q.add(p)
    for p in (high, low):
        pinfo = pop_expect(q, p)
        pinfo.unschedulable_plugins.add("fooPlugin")
        q.move_all_to_active_or_backoff_queue(NODE_ADD, new=object())  # in flight: it goes to backoffQ
        q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
    assert q.pods_in_backoff_q() == [high, low]  # equal windows: activeQ order
    got = q.pop()
    assert got is not None and got.pod is high
    assert q.incoming_pods[(ACTIVE_Q, "PopFromBackoffQ")] == 1


def test_pods_that_failed_with_an_error_are_not_popped_early() -> None:
    q, clock = queue({"fooPlugin": [NODE_ADD_REG]})
    p = pod("p")
    q.add(p)
    fail(q, pop_expect(q, p))  # an error
    assert q.queue_of(p) == BACKOFF_Q
    assert q.pop() is None
    clock.step(2.0)
    q.flush_backoff_q_completed()
    assert pop_expect(q, p).attempts == 2


def test_with_the_gate_off_an_empty_activeq_pops_nothing() -> None:
    features = features_for("1.36", ["SchedulerPopFromBackoffQ=false"])
    q, _ = queue({"fooPlugin": [NODE_ADD_REG]}, features=features)
    p = pod("p")
    q.add(p)
    pinfo = pop_expect(q, p)
    q.move_all_to_active_or_backoff_queue(NODE_ADD, new=object())
    fail(q, pinfo, "fooPlugin")
    assert q.queue_of(p) == BACKOFF_Q
    assert q.pop() is None


def test_the_next_flush_is_the_whole_second_after_the_aligned_expiry() -> None:
    features = FEATURES_1_36
    q, clock = queue({"fooPlugin": [NODE_ADD_REG]}, features=features)
    p = pod("p")
    q.add(p)
    pinfo = pop_expect(q, p)
    clock.step(0.3)
    fail(q, pinfo)  # error heap: never popped early
    assert q.next_event_time(aligned=True) == START + 2.0


# ============================================================================ gated pods
def test_a_gated_pod_moves_only_on_its_gating_plugins_events() -> None:
    gate = AllowlistPreEnqueue("ok")
    q, _ = queue({"preEnqueuePlugin": [NODE_ADD_REG], "fooPlugin": [POD_DELETE_REG]}, pre_enqueue=[gate])
    p = pod("p")
    q.add(p)
    assert q.queue_of(p) == GATED
    assert q.get(p) is not None and q.get(p).gating_plugin == "preEnqueuePlugin"  # type: ignore[union-attr]
    calls: list[str] = []
    orig = gate.pre_enqueue

    def counting(pod: Pod) -> Any:
        calls.append(pod.name)
        return orig(pod)

    gate.pre_enqueue = counting  # type: ignore[method-assign]
    q.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE, old=pod("v", node="n1"))
    assert calls == []  # not an event of its gating plugin: PreEnqueue not even asked
    q.move_all_to_active_or_backoff_queue(NODE_ADD, new=object())
    assert calls == ["p"]


# ============================================================================ the pod's own update
def test_an_unschedulable_pods_own_update_goes_through_the_hints() -> None:
    def toleration_added(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        assert isinstance(old, Pod) and isinstance(new, Pod)
        return QueueingHint.QUEUE if len(new.tolerations) > len(old.tolerations) else QueueingHint.QUEUE_SKIP

    reg = ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.UPDATE_POD_TOLERATION), toleration_added)
    q, clock = queue({"TaintToleration": [reg]})
    from builders import make_pod
    p = make_pod().name("p").namespace("ns1").obj()
    add_and_fail(q, p, "TaintToleration")
    clock.step(5)
    relabelled = make_pod().name("p").namespace("ns1").label("x", "y").obj()
    q.update(p, relabelled)  # UpdatePodLabel: no plugin registered it
    assert q.queue_of(p) == UNSCHEDULABLE_PODS
    tolerating = make_pod().name("p").namespace("ns1").label("x", "y").toleration(key="k", operator="Exists").obj()
    q.update(relabelled, tolerating)
    assert q.queue_of(p) == ACTIVE_Q


POD_UPDATE_CASES = [
    ("a label change", {"labels": {"a": "1"}}, {"labels": {"a": "2"}}, ["UnschedulablePodUpdatePodLabel"]),
    ("nothing the scheduler splits out is a plain Update", {}, {"node_selector": {"a": "b"}},
     ["UnschedulablePodUpdate"]),
    ("scheduling gates removed", {"gates": ["g"]}, {}, ["UnschedulablePodUpdatePodSchedulingGatesEliminated"]),
]


@pytest.mark.parametrize(("old_kw", "new_kw", "labels"), [c[1:] for c in POD_UPDATE_CASES],
                         ids=[c[0] for c in POD_UPDATE_CASES])
def test_pod_scheduling_properties_change(old_kw: dict[str, Any], new_kw: dict[str, Any],
                                          labels: list[str]) -> None:
    from builders import make_pod

    def build(kw: dict[str, Any]) -> Pod:
        b = make_pod().name("p")
        for k, v in kw.get("labels", {}).items():
            b = b.label(k, v)
        for g in kw.get("gates", ()):
            b = b.scheduling_gate(g)
        if "node_selector" in kw:
            b = b.node_selector(kw["node_selector"])
        return b.obj()

    assert [e.label for e in pod_update_events(build(old_kw), build(new_kw))] == labels
