"""Permit and waiting pods (framework/runtime: RunPermitPlugins, waitingPodsMap, WaitOnPermit)
and Unreserve, driven through the real Scheduler over the in-memory cluster with a fake
clock. The plugins are tiny test plugins that record what the framework asked of them."""

from __future__ import annotations

from typing import Any

import pytest
from simkit import T0, Log, Permitter, Reserver, cluster, config, enable, node, pod, registry

from kubesched._queue import FakeClock
from kubesched._runtime.waiting_pods import MAX_PERMIT_TIMEOUT, WaitingPod
from kubesched.framework import Code, CycleState, Status
from kubesched.objects import Pod
from kubesched.scheduler import Attempt
from kubesched.simulation import Simulator

PROFILE = "default-scheduler"


class Rig:
    """A Simulator's in-memory cluster and scheduler with a fake clock, one pod to schedule
    on one node, and test plugins at Reserve / Permit."""

    def __init__(self, *, permit: list[tuple[Code, float]] = (), reserve: list[bool] = (),  # type: ignore[assignment]
                 nodes: int = 1) -> None:
        self.log = Log()
        factories: dict[str, Any] = {}
        permit_names = [f"P{i + 1}" for i in range(len(permit))]
        reserve_names = [f"R{i + 1}" for i in range(len(reserve))]
        for name, (code, timeout) in zip(permit_names, permit, strict=True):
            factories[name] = (lambda n, c, t: lambda args, handle: Permitter(n, self.log, c, t))(name, code, timeout)
        for name, reject in zip(reserve_names, reserve, strict=True):
            factories[name] = (lambda n, r: lambda args, handle: Reserver(n, self.log, r))(name, reject)
        self.pod = pod("p")
        cfg = config({"plugins": enable(permit=permit_names, reserve=reserve_names)})
        self.sim = Simulator(cluster([node(f"n{i + 1}") for i in range(nodes)], [self.pod]), cfg,
                             registry=registry(**factories), deterministic=True)
        self.clock = FakeClock(T0)
        self.sim.scheduler.clock = self.clock.now
        self.fwk = self.sim.profiles[PROFILE]
        self.handle = self.fwk.handle

    def schedule(self) -> Attempt:
        return self.sim.scheduler.scheduling_cycle(self.sim.current[self.pod.uid])

    def waiting(self) -> WaitingPod:
        wp = self.handle.get_waiting_pod(self.pod.uid)
        assert wp is not None
        return wp

    def at(self, seconds: float) -> list[WaitingPod]:
        """Move the clock to T0 + seconds and fire the Permit timers due."""
        self.clock.set(T0 + seconds)
        return self.handle.waiting_pods.expire(self.clock.now())

    def bound_to(self) -> str:
        return self.sim.current[self.pod.uid].node_name

    def reserved(self) -> bool:
        return self.sim.cache.node_of(self.pod) is not None


def test_permit_allowed_by_every_plugin_goes_straight_to_binding() -> None:
    rig = Rig(permit=[(Code.SUCCESS, 0), (Code.SUCCESS, 0)], reserve=[False])
    attempt = rig.schedule()
    assert attempt.outcome == "Assumed"
    assert rig.log.of("Permit") == [("P1", "p"), ("P2", "p")]
    assert len(rig.handle.waiting_pods) == 0
    rig.sim.scheduler.binding_cycle(attempt)
    assert (attempt.outcome, attempt.node, rig.bound_to()) == ("Scheduled", "n1", "n1")
    assert rig.log.of("Unreserve") == []


def test_waiting_pod_is_bound_once_every_waiting_plugin_allowed_it() -> None:
    rig = Rig(permit=[(Code.WAIT, 10), (Code.SUCCESS, 0), (Code.WAIT, 20)])
    attempt = rig.schedule()
    assert attempt.outcome == "Waiting"
    assert rig.reserved() and rig.bound_to() == ""  # holds its node while it waits
    wp = rig.waiting()
    assert wp.pending_plugins() == ["P1", "P3"]
    assert wp.deadlines == {"P1": T0 + 10, "P3": T0 + 20}
    wp.allow("P1")
    assert not wp.done and wp.pending_plugins() == ["P3"]
    wp.allow("P2")  # not waiting on P2: nothing changes
    assert not wp.done
    wp.allow("P3")
    assert wp.done and wp.result is not None and wp.result.is_success()
    rig.sim.scheduler.binding_cycle(attempt)
    assert attempt.outcome == "Scheduled" and rig.bound_to() == "n1"
    assert rig.handle.get_waiting_pod(rig.pod.uid) is None


def test_run_permit_plugins_reports_the_wait_and_each_plugins_timeout() -> None:
    rig = Rig(permit=[(Code.WAIT, 10), (Code.WAIT, 2.5)])
    status, waits = rig.fwk.run_permit_plugins(CycleState(), rig.pod, "n1")
    assert status == Status(Code.WAIT, ('one or more plugins asked to wait and no plugin rejected pod "p"',))
    assert waits == {"P1": 10.0, "P2": 2.5}


@pytest.mark.parametrize(
    ("timeouts", "fires_at", "message"),
    [
        ((10, 60), 10, "rejected due to timeout after waiting 10s at plugin P1"),
        ((60, 10), 10, "rejected due to timeout after waiting 10s at plugin P2"),
        ((90, 120), 90, "rejected due to timeout after waiting 1m30s at plugin P1"),
        ((1.5, 30), 1.5, "rejected due to timeout after waiting 1.5s at plugin P1"),
        ((3600, 7200), MAX_PERMIT_TIMEOUT, "rejected due to timeout after waiting 15m0s at plugin P1"),
    ],
    ids=["the first plugin to time out rejects the pod", "the earliest deadline wins whatever the plugin order",
         "minutes are written as Go durations", "fractional seconds are kept",
         "a wait longer than 15 minutes is capped at 15 minutes"],
)
def test_a_plugin_timing_out_rejects_the_pod_and_unreserves_it(timeouts: tuple[float, float], fires_at: float,
                                                               message: str) -> None:
    rig = Rig(permit=[(Code.WAIT, timeouts[0]), (Code.WAIT, timeouts[1])], reserve=[False, False])
    attempt = rig.schedule()
    assert attempt.outcome == "Waiting"
    assert rig.at(fires_at - 0.001) == []
    fired = rig.at(fires_at)
    assert [wp.pod.uid for wp in fired] == [rig.pod.uid]
    result = fired[0].result
    assert result is not None and result.code == Code.UNSCHEDULABLE and result.message == message
    assert result.plugin == message.rsplit(" ", 1)[1]
    rig.sim.scheduler.binding_cycle(attempt)
    assert attempt.outcome == "Unschedulable"
    assert attempt.message == f"0/1 nodes are available: 1 {message}."
    assert attempt.diagnosis.unschedulable_plugins == {result.plugin}
    assert attempt.failures == {"n1": result}
    # Unreserved (in reverse order), forgotten by the cache, out of the waiting map, not bound.
    assert rig.log.of("Unreserve") == [("R2", "p"), ("R1", "p")]
    assert not rig.reserved() and rig.bound_to() == ""
    assert len(rig.handle.waiting_pods) == 0


def test_the_permit_timeout_is_capped_at_15_minutes() -> None:
    rig = Rig(permit=[(Code.WAIT, 24 * 3600)])
    _, waits = rig.fwk.run_permit_plugins(CycleState(), rig.pod, "n1")
    assert waits == {"P1": 15 * 60.0}
    rig.schedule()
    assert rig.waiting().deadlines == {"P1": T0 + 900}
    assert rig.at(899.9) == []
    assert len(rig.at(900)) == 1


def test_a_waiting_pod_rejected_by_a_plugin_is_unreserved_with_its_message() -> None:
    rig = Rig(permit=[(Code.WAIT, 10)], reserve=[False])
    attempt = rig.schedule()
    rig.waiting().reject("Gang", "the gang lost a member")
    # Its timers stopped: nothing fires at the deadline any more.
    assert rig.handle.waiting_pods.next_deadline() is None
    assert rig.at(10) == []
    rig.sim.scheduler.binding_cycle(attempt)
    assert attempt.outcome == "Unschedulable"
    assert attempt.message == "0/1 nodes are available: 1 the gang lost a member."
    assert attempt.diagnosis.unschedulable_plugins == {"Gang"}
    assert rig.log.of("Unreserve") == [("R1", "p")]
    assert not rig.reserved()


def test_handle_reject_waiting_pod_says_removed_and_false_for_an_unknown_uid() -> None:
    rig = Rig(permit=[(Code.WAIT, 10)])
    attempt = rig.schedule()
    assert rig.handle.reject_waiting_pod("no-such-uid") is False
    assert rig.handle.reject_waiting_pod(rig.pod.uid) is True
    rig.sim.scheduler.binding_cycle(attempt)
    assert attempt.message == "0/1 nodes are available: 1 removed."
    assert attempt.diagnosis.unschedulable_plugins == set()


def test_the_first_decision_wins_and_unreserve_runs_once() -> None:
    rig = Rig(permit=[(Code.WAIT, 10)], reserve=[False, False])
    attempt = rig.schedule()
    wp = rig.waiting()
    wp.reject("P1", "first")
    wp.reject("P1", "second")
    wp.allow("P1")
    assert rig.at(10) == []
    assert wp.result is not None and wp.result.message == "first"
    rig.sim.scheduler.binding_cycle(attempt)
    # Rejecting the pod again once it left the waiting map is a no-op.
    assert rig.handle.reject_waiting_pod(rig.pod.uid) is False
    assert rig.log.of("Unreserve") == [("R2", "p"), ("R1", "p")]


def test_an_allowed_pod_ignores_a_later_reject() -> None:
    rig = Rig(permit=[(Code.WAIT, 10)])
    attempt = rig.schedule()
    wp = rig.waiting()
    wp.allow("P1")
    wp.reject("P1", "too late")
    rig.sim.scheduler.binding_cycle(attempt)
    assert attempt.outcome == "Scheduled"


def test_unreserve_runs_on_every_reserve_plugin_in_reverse_order_when_reserve_fails() -> None:
    rig = Rig(reserve=[False, True, False])
    attempt = rig.schedule()
    assert attempt.outcome == "Unschedulable"
    # Reserve stops at the first failure; Unreserve runs on all of them, last first — also on
    # R3, whose Reserve never ran (Unreserve must be idempotent / tolerate that).
    assert rig.log.of("Reserve") == [("R1", "p"), ("R2", "p")]
    assert rig.log.of("Unreserve") == [("R3", "p"), ("R2", "p"), ("R1", "p")]
    assert attempt.message == "0/1 nodes are available: 1 R2 has no room."
    assert attempt.diagnosis.unschedulable_plugins == {"R2"}
    assert not rig.reserved()


@pytest.mark.parametrize(
    ("code", "outcome", "message"),
    [
        (Code.UNSCHEDULABLE, "Unschedulable", "0/1 nodes are available: 1 P2 says no."),
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "Unschedulable", "0/1 nodes are available: 1 P2 says no."),
        (Code.ERROR, "Error", 'running Permit plugin "P2": boom'),
    ],
    ids=["a rejection at Permit is a FitError on the chosen node", "an unresolvable rejection too",
         "an error at Permit names the plugin"],
)
def test_a_permit_failure_in_the_scheduling_cycle_unreserves_at_once(code: Code, outcome: str, message: str) -> None:
    rig = Rig(permit=[(Code.WAIT, 10), (code, 0), (Code.SUCCESS, 0)], reserve=[False, False])
    attempt = rig.schedule()
    assert (attempt.outcome, attempt.message) == (outcome, message)
    # The first rejection stops Permit: P3 is not asked, and nothing waits.
    assert rig.log.of("Permit") == [("P1", "p"), ("P2", "p")]
    assert len(rig.handle.waiting_pods) == 0
    assert rig.log.of("Unreserve") == [("R2", "p"), ("R1", "p")]
    assert not rig.reserved()


def test_a_permit_plugin_may_return_a_bare_status() -> None:
    class Bare:
        name = "Bare"

        def permit(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
            return Status.unschedulable("nope")

    sim = Simulator(cluster([node("n1")], [pod("p")]), config({"plugins": enable(permit=["Bare"])}),
                    registry=registry(Bare=lambda args, handle: Bare()))
    attempt = sim.scheduler.scheduling_cycle(sim.objs.pods[0])
    assert attempt.message == "0/1 nodes are available: 1 nope."
