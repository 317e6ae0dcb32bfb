"""The binding cycle (schedule_one.go: bindingCycle, handleBindingCycleError) end to end over
the in-memory cluster: PreBind / Bind / PostBind, Bind plugins chaining on Skip, failed binds
retried without binding a pod twice, and a pod waiting at Permit chosen as a preemption
victim (rejected with "preempted", not deleted)."""

from __future__ import annotations

from typing import Any

import pytest
from simkit import Binder, Log, Permitter, Reserver, cluster, config, node, pod, registry

from kubesched.errors import ApiError
from kubesched.framework import Code, CycleState, Status
from kubesched.objects import Pod
from kubesched.simulation import Simulator
from kubesched.timeline import TimelineSimulator

PROFILE = "default-scheduler"


def binders(log: Log, **specs: dict[str, Any]) -> dict[str, Any]:
    """Binder factories by name: binders(log, A={"skip": True})."""
    def factory(name: str, kw: dict[str, Any]) -> Any:
        return lambda args, handle: Binder(name, log, handle, **kw)

    return {name: factory(name, kw) for name, kw in specs.items()}


def bind_profile(*names: str, reserve: tuple[str, ...] = ("R1",), extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A profile whose Bind plugins are exactly ``names``, in this order."""
    plugins: dict[str, Any] = {"bind": {"disabled": [{"name": "*"}], "enabled": [{"name": n} for n in names]},
                               "reserve": {"enabled": [{"name": n} for n in reserve]}}
    plugins.update(extra or {})
    return {"plugins": plugins}


def pods_on(sim: Simulator, node_name: str) -> list[str]:
    return [pi.pod.name for pi in sim.cache.node_infos[node_name].pods]


# ----------------------------------------------------------------------------- retries
def test_a_failed_bind_is_retried_after_backoff_and_binds_once() -> None:
    log = Log()
    reg = registry(R1=lambda args, handle: Reserver("R1", log), **binders(log, Flaky={"fail_times": 1}))
    sim = TimelineSimulator(cluster([node("n1")], [pod("p")]), config(bind_profile("Flaky")), registry=reg)
    res = sim.run()
    assert res.final == {"default/p": "n1"}
    first, second = (s.attempt for s in res.steps)
    assert (first.outcome, first.message) == ("Error", 'running Bind plugin "Flaky": connection reset by peer')
    assert second.outcome == "Scheduled"
    # 1 s backoff after an error, its expiry aligned to the 1 s window (1.36): retried at 2 s.
    assert [round(e.time - res.start, 3) for e in res.events] == [0.0, 2.0]
    assert log.of("Bind") == [("Flaky", "p"), ("Flaky", "p")]
    assert log.of("Unreserve") == [("R1", "p")]
    assert pods_on(sim, "n1") == ["p"]
    assert sim.cache.assumed == set()


def test_a_bind_that_went_through_despite_an_error_is_not_bound_again() -> None:
    # The API call bound the pod but its answer was lost: the failure handler sees the pod
    # assigned and does not requeue it, so there is no second bind (which would get a 409).
    log = Log()
    reg = registry(R1=lambda args, handle: Reserver("R1", log), **binders(log, Lossy={"error_after_bind": True}))
    sim = TimelineSimulator(cluster([node("n1"), node("n2")], [pod("p"), pod("q", arrives=5)]),
                            config(bind_profile("Lossy")), registry=reg)
    res = sim.run()
    assert [s.attempt.outcome for s in res.steps if s.attempt.pod.name == "p"] == ["Error"]
    assert log.of("Bind") == [("Lossy", "p"), ("Lossy", "q")]
    assert res.final["default/p"] is not None
    # The cache counts p exactly once, where it is bound, and q was scheduled around it.
    assert sorted(pods_on(sim, "n1") + pods_on(sim, "n2")) == ["p", "q"]
    assert sim.cache.node_of(sim.current[pod("p").uid]) == res.final["default/p"]


def test_a_bind_that_went_through_despite_an_error_still_emits_assigned_pod_delete() -> None:
    # handleBindingCycleError forgets the assumed pod and emits AssignedPodDelete before the
    # failure handler finds the pod bound: "big", rejected by NodeResourcesFit (which registers
    # Pod/Delete), moves and is retried when p's binding fails at 5 s.
    log = Log()
    reg = registry(R1=lambda args, handle: Reserver("R1", log), **binders(log, Lossy={"error_after_bind": True}))
    sim = TimelineSimulator(cluster([node("n1")], [pod("big", "8"), pod("p", arrives=5)]),
                            config(bind_profile("Lossy")), registry=reg)
    res = sim.run()
    assert [(e.pod, round(e.time - res.start)) for e in res.events if e.reason == "FailedScheduling"][:3] == [
        ("default/big", 0), ("default/p", 5), ("default/big", 5)]
    assert res.metrics.queue_incoming_pods[("active", "AssignedPodDelete")] == 1


def test_the_in_memory_cluster_answers_a_second_bind_with_409() -> None:
    sim = Simulator(cluster([node("n1"), node("n2")], [pod("p")]), deterministic=True)
    attempt = sim.scheduler.schedule_one(sim.objs.pods[0])
    assert attempt.outcome == "Scheduled"
    with pytest.raises(ApiError) as err:
        sim._bind(sim.current[attempt.pod.uid], "n2")  # noqa: SLF001 - the API server's side
    assert err.value.status == 409
    assert str(err.value) == 'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"'
    # DefaultBinder turns it into an Error status; the pod stays where it was bound.
    default_binder = sim.profiles[PROFILE].bind[0]
    s = default_binder.bind(CycleState(), sim.current[attempt.pod.uid], "n2")
    assert s is not None and s.code == Code.ERROR and "already assigned" in s.message
    assert sim.current[attempt.pod.uid].node_name == "n1"


# ----------------------------------------------------------------------------- Bind chain
@pytest.mark.parametrize(
    ("chain", "bound_by", "asked"),
    [
        (("SkipA", "DefaultBinder", "Last"), "DefaultBinder", ["SkipA"]),
        (("SkipA", "SkipB", "Last"), "Last", ["SkipA", "SkipB", "Last"]),
        (("Last", "SkipA"), "Last", ["Last"]),
    ],
    ids=["a skipping binder passes the pod to the next one", "every skip passes it on until a binder binds",
         "the first binder that does not skip wins and the rest are not asked"],
)
def test_bind_plugins_chain_on_skip(chain: tuple[str, ...], bound_by: str, asked: list[str]) -> None:
    log = Log()
    reg = registry(R1=lambda args, handle: Reserver("R1", log),
                   **binders(log, SkipA={"skip": True}, SkipB={"skip": True}, Last={}))
    sim = Simulator(cluster([node("n1")], [pod("p")]), config(bind_profile(*chain)), registry=reg, deterministic=True)
    attempt = sim.scheduler.schedule_one(sim.objs.pods[0])
    assert attempt.outcome == "Scheduled" and sim.current[attempt.pod.uid].node_name == "n1"
    assert [plugin for plugin, _ in log.of("Bind")] == asked
    assert bound_by == "DefaultBinder" or log.of("Bind")[-1][0] == bound_by


def test_every_bind_plugin_skipping_is_an_error_that_unreserves() -> None:
    log = Log()
    reg = registry(R1=lambda args, handle: Reserver("R1", log), **binders(log, SkipA={"skip": True},
                                                                        SkipB={"skip": True}))
    sim = Simulator(cluster([node("n1")], [pod("p")]), config(bind_profile("SkipA", "SkipB")), registry=reg,
                    deterministic=True)
    attempt = sim.scheduler.schedule_one(sim.objs.pods[0])
    assert attempt.outcome == "Error"
    assert attempt.message == "running Bind plugins: every Bind plugin skipped pod default/p"
    assert log.of("Unreserve") == [("R1", "p")]
    assert sim.current[attempt.pod.uid].node_name == "" and pods_on(sim, "n1") == []


def test_a_bind_plugin_rejecting_the_pod_is_a_plain_status_not_a_fit_error() -> None:
    # bindingCycle returns the Bind status as is (handleSchedulingFailure: not a FitError), so
    # the event carries the plugin's message and no rejector plugin is recorded: the pod backs off.
    class Refuse:
        name = "Refuse"

        def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
            return Status.unschedulable("node is being drained")

    log = Log()
    reg = registry(R1=lambda args, handle: Reserver("R1", log), Refuse=lambda args, handle: Refuse())
    sim = Simulator(cluster([node("n1")], [pod("p")]), config(bind_profile("Refuse")), registry=reg,
                    deterministic=True)
    attempt = sim.scheduler.schedule_one(sim.objs.pods[0])
    assert attempt.outcome == "Unschedulable"
    assert attempt.message == "node is being drained"
    assert attempt.diagnosis.unschedulable_plugins == set()
    assert log.of("Unreserve") == [("R1", "p")]


class Hooks:
    """PreBind (optionally failing) and PostBind recorder."""

    def __init__(self, log: Log, fail: bool) -> None:
        self.name = "Hooks"
        self.log = log
        self.fail = fail

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self.log.calls.append((self.name, "PreBind", pod.name))
        return Status.as_error("volume not ready") if self.fail else None

    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self.log.calls.append((self.name, "PostBind", pod.name))


@pytest.mark.parametrize("fail", [False, True], ids=["prebind passes then bind and postbind run",
                                                     "a prebind failure unreserves and skips bind and postbind"])
def test_prebind_and_postbind(fail: bool) -> None:
    log = Log()
    reg = registry(R1=lambda args, handle: Reserver("R1", log), Hooks=lambda args, handle: Hooks(log, fail),
                   **binders(log, B={}))
    profile = bind_profile("B", extra={"preBind": {"enabled": [{"name": "Hooks"}]},
                                       "postBind": {"enabled": [{"name": "Hooks"}]}})
    sim = Simulator(cluster([node("n1")], [pod("p")]), config(profile), registry=reg, deterministic=True)
    attempt = sim.scheduler.schedule_one(sim.objs.pods[0])
    points = [point for _, point, _ in log.calls]
    if fail:
        assert (attempt.outcome, attempt.message) == ("Error", 'running PreBind plugin "Hooks": volume not ready')
        assert points == ["Reserve", "PreBind", "Unreserve"]
    else:
        assert attempt.outcome == "Scheduled"
        assert points == ["Reserve", "PreBind", "Bind", "PostBind"]


# ----------------------------------------------------------------------------- preemption
def test_a_preempted_waiting_pod_is_rejected_not_deleted_and_the_preemptor_binds() -> None:
    log = Log()
    reg = registry(Gate=lambda args, handle: Permitter("Gate", log, Code.WAIT, 600, only_gated=True),
                   R1=lambda args, handle: Reserver("R1", log))
    cfg = config({"plugins": {"permit": {"enabled": [{"name": "Gate"}]}, "reserve": {"enabled": [{"name": "R1"}]}}})
    low = pod("low", cpu="3", labels={"gate": "x"})
    high = pod("high", cpu="3", arrives=5, priority=100)
    sim = TimelineSimulator(cluster([node("n1")], [low, high]), cfg, registry=reg)
    res = sim.run()
    assert res.final == {"default/low": None, "default/high": "n1"}
    assert res.deleted == []  # a waiting victim is rejected, not deleted
    high_first = next(s.attempt for s in res.steps if s.attempt.pod.name == "high")
    assert [v.name for v in high_first.victims] == ["low"] and high_first.nominated_node == "n1"
    low_first = next(s.attempt for s in res.steps if s.attempt.pod.name == "low")
    assert low_first.message == "0/1 nodes are available: 1 preempted."
    assert low_first.diagnosis.unschedulable_plugins == {"DefaultPreemption"}
    assert ("R1", "low") in log.of("Unreserve")
    reasons = [(round(e.time - res.start, 3), e.reason, e.pod) for e in res.events]
    assert (5.0, "FailedScheduling", "default/low") in reasons
    # The Preempted event is recorded for a waiting victim too; it is never deleted.
    assert (5.0, "Preempted", "default/low") in reasons
    assert not any(reason == "Deleted" for _, reason, _ in reasons)
    assert ("Scheduled", "default/high") in [(r, p) for _, r, p in reasons]
    assert pods_on(sim, "n1") == ["high"]
