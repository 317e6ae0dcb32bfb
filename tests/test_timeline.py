"""End-to-end runs of the scheduling queue on a virtual clock (kubesched.timeline).

Each test builds a small cluster, runs TimelineSimulator and checks what kube-scheduler
v1.30 would do, and when: pods arrive at their creationTimestamp; failures back off
(1 s doubling to the 10 s cap) or wait in unschedulablePods for an event one of their
rejector plugins registered, or for the 5-minute leftover flush; preemption victims hold
their resources for terminationGracePeriodSeconds while the preemptor is nominated to their
node; the metrics count attempts, preemptions and what is left in the queue.

Times in the assertions are simulated seconds from the first arrival.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from builders import make_node, make_pod
from click.testing import CliRunner

from kubesched.cli import main
from kubesched.config import KubeSchedulerConfiguration, parse_config
from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features
from kubesched.framework import Code, CycleState, PreFilterResult, Status
from kubesched.objects import ClusterObjects, Node, Pod
from kubesched.plugins.registry import REGISTRY, Factory
from kubesched.timeline import TimelineResult, TimelineSimulator

T0 = datetime(2024, 1, 1, tzinfo=UTC)
PROFILE = "default-scheduler"


# ----------------------------------------------------------------------------- builders
def at(seconds: float) -> str:
    """The RFC 3339 timestamp ``seconds`` after T0."""
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def node(name: str, cpu: str = "4", **labels: str) -> Node:
    b = make_node().name(name).capacity(cpu=cpu, memory="32Gi", pods=110)
    for k, v in labels.items():
        b = b.label(k, v)
    return b.obj()


def pod(name: str, cpu: str = "1", *, arrives: float = 0, priority: int = 0, on: str | None = None,
        grace: int | None = None, never: bool = False, selector: dict[str, str] | None = None,
        labels: dict[str, str] | None = None, spread: bool = False, tolerate: str | None = None) -> Pod:
    """A pod requesting ``cpu``, created ``arrives`` seconds after T0 (bound to ``on`` if given)."""
    b = make_pod().name(name).req(cpu=cpu).priority(priority).creation(at(arrives))
    if on:
        b = b.node(on)
    if never:
        b = b.preemption_policy("Never")
    if selector:
        b = b.node_selector(selector)
    if labels:
        b = b.labels(labels)
    if spread:
        b = b.spread(1, "zone", selector={"matchLabels": labels or {}})
    if tolerate:
        b = b.toleration(key=tolerate, operator="Exists")
    p = b.obj()
    if grace is not None:
        p = dataclasses.replace(p, termination_grace_period_seconds=grace)
    return p


def simulate(nodes: Sequence[Node], pods: Sequence[Pod], config: KubeSchedulerConfiguration | None = None,
             registry: dict[str, Factory] | None = None,
             features: Features | None = None) -> tuple[TimelineSimulator, TimelineResult]:
    latest = max((p.meta.creation_timestamp or 0.0 for p in pods), default=0.0)
    objs = ClusterObjects(nodes=list(nodes), pods=list(pods), latest_timestamp=latest)
    sim = TimelineSimulator(objs, config, registry=registry, features=features)
    return sim, sim.run()


def events(res: TimelineResult, pod_name: str | None = None) -> list[tuple[float, str, str]]:
    """(time, reason, pod name) of every event, or of one pod's."""
    out = [(round(e.time - res.start, 3), e.reason, e.pod.split("/")[1]) for e in res.events]
    return [e for e in out if pod_name is None or e[2] == pod_name]


def attempt_times(res: TimelineResult, pod_name: str) -> list[float]:
    return [t for t, reason, p in events(res, pod_name) if reason in ("Scheduled", "FailedScheduling")]


def message(res: TimelineResult, pod_name: str, t: float) -> str:
    for e in res.events:
        if e.pod.endswith("/" + pod_name) and round(e.time - res.start, 3) == t and e.reason == "FailedScheduling":
            return e.message
    raise AssertionError(f"no FailedScheduling event for {pod_name} at {t}")


def metric(res: TimelineResult, name: str) -> Any:
    return res.metrics.as_dict(PROFILE)[name]


def attempts_by_result(res: TimelineResult) -> dict[str, int]:
    return {m["labels"]["result"]: m["value"] for m in metric(res, "scheduler_schedule_attempts_total")}


def pending_by_queue(res: TimelineResult) -> dict[str, int]:
    return {m["labels"]["queue"]: m["value"] for m in metric(res, "scheduler_pending_pods")}


# ----------------------------------------------------------------------------- a plugin that errors
class Flaky:
    """A PreFilter plugin returning an Error (not a rejection) for the first ``failures``
    scheduling cycles: the pod fails with no rejector plugin, so it always goes to backoffQ."""

    name = "Flaky"

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.cycles = 0

    def events_to_register(self) -> list[Any]:
        return []

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status | None]:
        self.cycles += 1
        if self.cycles <= self.failures:
            return None, Status.as_error("etcd is having a bad day")
        return None, None

    def pre_filter_extensions(self) -> None:
        return None


def flaky_setup(failures: int, features: Features | None = None) -> tuple[KubeSchedulerConfiguration,
                                                                          dict[str, Factory]]:
    config = parse_config({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": PROFILE, "plugins": {"preFilter": {"enabled": [{"name": "Flaky"}]}}}],
    }, features=features)
    registry: dict[str, Factory] = {**REGISTRY, "Flaky": lambda args, handle: Flaky(failures)}
    return config, registry


# ----------------------------------------------------------------------------- backoff
@pytest.mark.parametrize(("features", "want"), [
    pytest.param(FEATURES_1_30, [0, 1, 3, 7, 15, 25, 35], id="v1.30: the backoff ends at failure time + 1, 2, 4, 8, 10, 10 s"),
    # 1.36 (backoff_queue.go): the expiry is truncated to its whole second, and the pod leaves
    # at the first whole-second flush whose window is past it: failure + backoff + 1 s.
    pytest.param(FEATURES_1_36, [0, 2, 5, 10, 19, 30, 41],
                 id="1.36: the expiry is aligned to its second and the pod leaves one window later"),
])
def test_backoff_doubles_from_one_second_up_to_the_ten_second_cap(features: Features, want: list[int]) -> None:
    config, registry = flaky_setup(failures=6, features=features)
    _, res = simulate([node("n1")], [pod("p")], config, registry, features)
    times = attempt_times(res, "p")
    assert times == want
    assert res.final == {"default/p": "n1"}
    assert attempts_by_result(res) == {"error": 6, "scheduled": 1}
    incoming = res.metrics.queue_incoming_pods
    # An error names no rejector plugin: straight to backoffQ, then to activeQ when it expires.
    assert incoming[("backoff", "ScheduleAttemptFailure")] == 6
    assert incoming[("active", "BackoffComplete")] == 6
    assert incoming[("unschedulable", "ScheduleAttemptFailure")] == 0


@pytest.mark.parametrize(("features", "first", "period"), [
    pytest.param(FEATURES_1_30, [0, 1, 3, 7, 15, 25], 10, id="v1.30: every 10 s once capped"),
    pytest.param(FEATURES_1_36, [0, 2, 5, 10, 19, 30], 11, id="1.36: every 11 s once capped (aligned windows)"),
])
def test_a_pod_that_keeps_erroring_is_retried_for_five_minutes_then_the_run_ends(
        features: Features, first: list[int], period: int) -> None:
    config, registry = flaky_setup(failures=10**9, features=features)
    _, res = simulate([node("n1")], [pod("p")], config, registry, features)
    times = attempt_times(res, "p")
    assert times[:6] == first
    assert all(b - a == period for a, b in zip(times[4:], times[5:], strict=False))
    # Retried while it has been failing for less than 5 minutes with no cluster change.
    assert times[-2] < 300 <= times[-1]
    assert res.end - res.start == times[-1]
    assert res.pending == {"default/p": 'running PreFilter plugin "Flaky": etcd is having a bad day'}
    assert pending_by_queue(res)["backoff"] == 1


# ----------------------------------------------------------------------------- the 5-minute flush
def spread_cluster() -> tuple[list[Node], list[Pod]]:
    """"a" is rejected by PodTopologySpread on na (skew 2) and TaintToleration on nb; "b"
    binding to nb at 100 s fixes the skew; "c" arrives at 1000 s."""
    nodes = [node("na", zone="a"), make_node().name("nb").capacity(cpu="4", memory="32Gi", pods=110)
             .label("zone", "b").taint("special").obj()]
    pods = [
        pod("x1", labels={"app": "x"}, on="na"),
        pod("a", labels={"app": "x"}, spread=True),
        pod("b", labels={"app": "x"}, arrives=100, selector={"zone": "b"}, tolerate="special"),
        pod("c", arrives=1000),
    ]
    return nodes, pods


def test_unschedulable_pod_not_moved_by_an_event_is_retried_by_the_five_minute_flush() -> None:
    # "a" is rejected by PodTopologySpread on na (skew 2) and TaintToleration on nb. "b" binding
    # to nb at 100 s fixes the skew, but AssignedPodAdd only moves pods with a matching affinity
    # term: "a" waits for the leftover flush, which runs every 30 s from the start and moves a pod
    # strictly more than 5 min after its failure: at 330 s (at 300 s it has waited exactly 5 min).
    nodes, pods = spread_cluster()
    _, res = simulate(nodes, pods, features=FEATURES_1_30)
    assert events(res) == [
        (0, "FailedScheduling", "a"),
        (100, "Scheduled", "b"),
        (330, "Scheduled", "a"),
        (1000, "Scheduled", "c"),
    ]
    assert "didn't match pod topology spread constraints" in message(res, "a", 0)
    assert res.final["default/a"] == "na"
    incoming = res.metrics.queue_incoming_pods
    assert incoming[("active", "UnschedulableTimeout")] == 1
    assert incoming[("active", "AssignedPodAdd")] == 0


def test_an_assigned_pod_moves_pods_topology_spread_rejected_in_its_namespace_in_1_36() -> None:
    # The same cluster under 1.36: AssignedPodAdd also moves the pods PodTopologySpread rejected
    # in the new pod's namespace (getUnschedulablePodsWithCrossTopologyTerm), so "a" retries
    # when "b" binds at 100 s (its 1 s backoff long over) and fits on na.
    nodes, pods = spread_cluster()
    _, res = simulate(nodes, pods, features=FEATURES_1_36)
    assert events(res) == [
        (0, "FailedScheduling", "a"),
        (100, "Scheduled", "b"),
        (100, "Scheduled", "a"),
        (1000, "Scheduled", "c"),
    ]
    assert res.final["default/a"] == "na"
    assert res.metrics.queue_incoming_pods[("active", "AssignedPodAdd")] == 1


# ----------------------------------------------------------------------------- event-driven requeue
def test_victim_deletion_requeues_a_pod_rejected_by_fit_but_not_one_rejected_by_node_affinity() -> None:
    # "p" preempts "v" (grace 30 s). Meanwhile "fit" (Insufficient cpu: NodeResourcesFit) and
    # "aff" (no node labelled disk=ssd: NodeAffinity) fail. v's deletion is an AssignedPodDelete:
    # NodeResourcesFit registered Pod/Delete, NodeAffinity only Node events.
    pods = [
        pod("v", "3", on="n1", grace=30),
        pod("p", "2", priority=100),
        pod("fit", "1500m", arrives=1),
        pod("aff", "100m", arrives=1, selector={"disk": "ssd"}),
    ]
    _, res = simulate([node("n1")], pods)
    assert attempt_times(res, "p") == [0, 30]
    assert attempt_times(res, "fit") == [1, 30]
    assert "Insufficient cpu" in message(res, "fit", 1)
    # "aff" is only retried by the leftover flush: its first 30-s tick more than 5 minutes after
    # the failure.
    assert attempt_times(res, "aff") == [1, 330]
    assert "didn't match Pod's node affinity/selector" in message(res, "aff", 1)
    assert res.final == {"default/p": "n1", "default/fit": "n1", "default/aff": None}
    assert res.deleted == ["default/v"]
    incoming = res.metrics.queue_incoming_pods
    assert incoming[("active", "AssignedPodDelete")] == 2
    assert incoming[("active", "UnschedulableTimeout")] == 1


# ----------------------------------------------------------------------------- graceful termination
def graceful_cluster(*, with_preemptor: bool = True) -> tuple[list[Node], list[Pod]]:
    """n1 (4 cpu) runs "w" (1 cpu, priority 1000) and "v" (2 cpu, priority 0, grace 30 s).
    "p" (3 cpu, priority 100) arrives at 0 and must preempt v; "late" (1 cpu, priority 50)
    arrives at 10 s, while v terminates: 1 cpu is free, but p's nomination claims 3."""
    pods = [
        pod("w", "1", priority=1000, on="n1"),
        pod("v", "2", on="n1", grace=30),
        pod("late", "1", priority=50, arrives=10),
    ]
    if with_preemptor:
        pods.insert(2, pod("p", "3", priority=100))
    return [node("n1")], pods


def test_preemptor_waits_for_its_victim_to_terminate_and_keeps_the_node_from_lower_priority_pods() -> None:
    sim, res = simulate(*graceful_cluster())
    # 1.36's async preemption deletes the victim after the preemptor's failure is handled: its
    # Preempted event follows p's FailedScheduling and Nominated (v1.30: before, see below).
    assert events(res) == [
        (0, "FailedScheduling", "p"),
        (0, "Nominated", "p"),
        (0, "Preempted", "v"),
        (10, "FailedScheduling", "late"),
        (30, "Deleted", "v"),
        (30, "Scheduled", "p"),
        (30, "FailedScheduling", "late"),
    ]
    # The nominated pod counts in late's filtering, and also in its preemption dry run.
    assert message(res, "late", 10) == ("0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: "
                                        "0/1 nodes are available: 1 Insufficient cpu.")
    assert message(res, "late", 30).endswith("preemption: 0/1 nodes are available: "
                                             "1 No preemption victims found for incoming pod.")
    preempted = next(e for e in res.events if e.reason == "Preempted")
    assert preempted.message == f"Preempted by pod {sim.current['uid-default-p'].uid} on node n1"
    assert res.final == {"default/w": "n1", "default/p": "n1", "default/late": None}
    assert res.deleted == ["default/v"]


def test_v1_30_preemption_deletes_the_victim_within_the_preemptors_cycle() -> None:
    _, res = simulate(*graceful_cluster(), features=FEATURES_1_30)
    assert events(res)[:3] == [(0, "Preempted", "v"), (0, "FailedScheduling", "p"), (0, "Nominated", "p")]


def test_without_the_nomination_the_late_pod_fits_next_to_the_victim() -> None:
    _, res = simulate(*graceful_cluster(with_preemptor=False))
    assert res.start == T0.timestamp() + 10  # the clock starts at the first arrival
    assert events(res) == [(0, "Scheduled", "late")]


class RecordingSimulator(TimelineSimulator):
    """Records each victim as the cluster held it when its grace period ended."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gone: list[tuple[float, Pod]] = []

    def _victim_gone(self, pod: Pod) -> None:
        self.gone.append((self.clock.now() - self._result.start, pod))
        super()._victim_gone(pod)


def test_victim_terminates_by_preemption_for_its_grace_period() -> None:
    nodes, pods = graceful_cluster()
    objs = ClusterObjects(nodes=nodes, pods=pods, latest_timestamp=T0.timestamp() + 10)
    sim = RecordingSimulator(objs)
    sim.run()
    [(t, victim)] = sim.gone
    assert (t, victim.name) == (30, "v")
    assert victim.meta.deletion_timestamp == T0.timestamp()
    [cond] = [c for c in victim.conditions if c.type == "DisruptionTarget"]
    assert (cond.status, cond.reason) == ("True", "PreemptionByScheduler")
    assert cond.message == "default-scheduler: preempting to accommodate a higher priority pod"


def test_preemptor_retried_while_its_victim_terminates_is_not_eligible_to_preempt_again() -> None:
    # A 10-minute grace period: the leftover flush retries p at 330 s while v still terminates on
    # p's nominated node, so p may not preempt again; its nomination is kept (Noop).
    pods = [pod("v", "4", on="n1", grace=600), pod("p", "4", priority=100)]
    sim, res = simulate([node("n1")], pods)
    assert events(res, "p") == [(0, "FailedScheduling", "p"), (0, "Nominated", "p"), (330, "FailedScheduling", "p"),
                                (600, "Scheduled", "p")]
    assert message(res, "p", 330) == ("0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: "
                                      "not eligible due to a terminating pod on the nominated node.")
    assert metric(res, "scheduler_preemption_attempts_total") == 2
    assert metric(res, "scheduler_preemption_victims")["count"] == 1
    assert res.final == {"default/p": "n1"}
    assert sim.current["uid-default-p"].node_name == "n1"


def test_pod_with_preemption_policy_never_waits_instead_of_preempting() -> None:
    pods = [pod("v", "4", on="n1", grace=30), pod("p", "4", priority=100, never=True)]
    _, res = simulate([node("n1")], pods)
    assert events(res) == [(0, "FailedScheduling", "p")]
    assert message(res, "p", 0) == ("0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: "
                                    "not eligible due to preemptionPolicy=Never.")
    assert res.final == {"default/v": "n1", "default/p": None}
    assert metric(res, "scheduler_preemption_attempts_total") == 1
    assert metric(res, "scheduler_preemption_victims")["count"] == 0


def test_higher_priority_preemptor_displaces_an_earlier_nomination_on_the_same_node() -> None:
    # v1.30: "mid" preempts v and is nominated to n1; "high" arrives at 10 s: mid's nomination
    # does not count against a higher-priority pod, so high preempts on n1 too (v again, still
    # there) and prepareCandidate clears mid's nomination. When v is gone, high binds; mid cannot.
    pods = [pod("v", "2", on="n1", grace=60), pod("mid", "2", priority=50), pod("high", "2", priority=100, arrives=10)]
    sim, res = simulate([node("n1", cpu="2")], pods, features=FEATURES_1_30)
    assert events(res) == [
        (0, "Preempted", "v"),
        (0, "FailedScheduling", "mid"),
        (0, "Nominated", "mid"),
        (10, "Preempted", "v"),
        (10, "FailedScheduling", "high"),
        (10, "Nominated", "high"),
        (60, "Deleted", "v"),
        (60, "Scheduled", "high"),
        (60, "FailedScheduling", "mid"),
    ]
    assert res.final == {"default/mid": None, "default/high": "n1"}
    assert sim.current["uid-default-mid"].nominated_node_name == ""
    assert sim.nominator.snapshot() == {}
    assert message(res, "mid", 60).endswith("1 No preemption victims found for incoming pod.")
    assert metric(res, "scheduler_preemption_victims")["count"] == 2


class _Probe(TimelineSimulator):
    """Records mid's nomination when high's failure has been handled."""

    seen: str | None = None

    def _after(self, attempt: Any, qpi: Any, cycle: int, *, binding: bool = False) -> None:
        super()._after(attempt, qpi, cycle, binding=binding)
        if attempt.pod.name == "high" and self.seen is None:
            self._at(self.clock.now(), lambda: setattr(self, "seen", self.current["uid-default-mid"].nominated_node_name))


def test_in_1_36_a_preemption_whose_only_victim_already_terminates_deletes_nothing_and_clears_no_nomination() -> None:
    # 1.36: v is already being deleted when "high" preempts, so it gets no second deletion (no
    # Preempted event), and prepareCandidateAsync, with no victim left to delete, returns before
    # clearing the lower-priority nominations: mid stays nominated to n1 until its next failure.
    pods = [pod("v", "2", on="n1", grace=60), pod("mid", "2", priority=50), pod("high", "2", priority=100, arrives=10)]
    latest = max(p.meta.creation_timestamp or 0.0 for p in pods)
    sim = _Probe(ClusterObjects(nodes=[node("n1", cpu="2")], pods=pods, latest_timestamp=latest), features=FEATURES_1_36)
    res = sim.run()
    assert events(res) == [
        (0, "FailedScheduling", "mid"),
        (0, "Nominated", "mid"),
        (0, "Preempted", "v"),
        (10, "FailedScheduling", "high"),
        (10, "Nominated", "high"),
        (60, "Deleted", "v"),
        (60, "Scheduled", "high"),
        (60, "FailedScheduling", "mid"),
    ]
    assert sim.seen == "n1"
    assert res.final == {"default/mid": None, "default/high": "n1"}
    assert sim.current["uid-default-mid"].nominated_node_name == ""  # its failed preemption at 60 cleared it
    assert metric(res, "scheduler_preemption_victims")["count"] == 2


# ----------------------------------------------------------------------------- clearNominatedNode
def test_a_scheduling_error_clears_the_pods_nomination() -> None:
    # schedulingCycle returns clearNominatedNode with an Error: the failure handler drops the
    # nominator entry and status.nominatedNodeName, so the retry scores every node (n2, empty,
    # wins) instead of taking the nominated n1 first.
    for features, times in ((FEATURES_1_30, [0, 1]), (FEATURES_1_36, [0, 2])):
        config, registry = flaky_setup(failures=1, features=features)
        busy = pod("busy", "3", on="n1")
        p = dataclasses.replace(pod("p"), nominated_node_name="n1")
        sim, res = simulate([node("n1"), node("n2")], [busy, p], config, registry, features)
        assert attempt_times(res, "p") == times
    assert res.final["default/p"] == "n2"


class RejectOnce:
    """A Reserve plugin rejecting the first pod it sees on n1 (registers every event)."""

    name = "RejectOnce"

    def __init__(self) -> None:
        self.rejected = False

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        if node_name == "n1" and not self.rejected:
            self.rejected = True
            return Status(Code.UNSCHEDULABLE, ("not now",))
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        return None


def test_a_reserve_rejection_clears_the_pods_nomination() -> None:
    # The nominated node n1 passes the filters, so p is assumed there and Reserve rejects it:
    # clearNominatedNode again (status.nominatedNodeName and the nominator entry).
    config = parse_config({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": PROFILE, "plugins": {"reserve": {"enabled": [{"name": "RejectOnce"}]}}}],
    })
    registry: dict[str, Factory] = {**REGISTRY, "RejectOnce": lambda args, handle: RejectOnce()}
    busy = pod("busy", "3", on="n1")
    p = dataclasses.replace(pod("p"), nominated_node_name="n1")
    sim, res = simulate([node("n1"), node("n2")], [busy, p], config, registry)
    assert message(res, "p", 0) == "0/1 nodes are available: 1 not now."
    assert sim.current["uid-default-p"].nominated_node_name == ""
    assert sim.nominator.snapshot() == {}


# ----------------------------------------------------------------------------- a rejected binding
class Hold:
    """A Permit plugin holding "gang" pods for 10 s (nothing ever allows them: they time out).
    It registers no event, so only the leftover flush can move a pod it rejected."""

    name = "Hold"

    def events_to_register(self) -> list[Any]:
        return []

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        if pod.name.startswith("gang"):
            return Status(Code.WAIT, ("waiting for the rest of the gang",)), 10.0
        return None, 0.0


def test_pod_rejected_in_its_binding_cycle_waits_for_an_event_and_its_reservation_moves_the_others() -> None:
    # gang is assumed on n1 at 0 and held at Permit; "other" (1 s later) finds n1 full. At 10 s
    # the wait times out: handleBindingCycleError forgets gang, puts it in unschedulablePods
    # (rejector Hold), then emits AssignedPodDelete sparing gang — which moves "other".
    config = parse_config({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": PROFILE, "plugins": {"permit": {"enabled": [{"name": "Hold"}]}}}],
    })
    registry: dict[str, Factory] = {**REGISTRY, "Hold": lambda args, handle: Hold()}
    _, res = simulate([node("n1", cpu="2")], [pod("gang", "2"), pod("other", "1", arrives=1)], config, registry)
    assert events(res) == [
        (1, "FailedScheduling", "other"),
        (10, "FailedScheduling", "gang"),
        (10, "Scheduled", "other"),
        # Not retried after its backoff: it waits for the leftover flush (the 30-s tick at 330 s).
        (330, "FailedScheduling", "gang"),
    ]
    assert message(res, "gang", 10) == ("0/1 nodes are available: 1 rejected due to timeout after waiting 10s "
                                        "at plugin Hold.")
    assert res.final == {"default/gang": None, "default/other": "n1"}
    incoming = res.metrics.queue_incoming_pods
    assert incoming[("active", "AssignedPodDelete")] == 1
    assert incoming[("active", "UnschedulableTimeout")] == 1


# ----------------------------------------------------------------------------- arrivals and metrics
_ARRIVALS_130 = {
    "preemption": [(7, "Preempted", "a"), (7, "FailedScheduling", "c"), (7, "Nominated", "c")],
    # The deletion moved c; it retries when its 1 s backoff is over.
    "c_scheduled": 8,
    "pending": ("0/1 nodes are available: 1 Insufficient cpu. preemption: "
                "0/1 nodes are available: 1 No preemption victims found for incoming pod."),
    "incoming": {
        ("active", "PodAdd"): 4,
        ("unschedulable", "ScheduleAttemptFailure"): 2,
        ("backoff", "AssignedPodDelete"): 1,
        ("active", "BackoffComplete"): 1,
    },
}
_ARRIVALS_136 = {
    # The deletion moved c to backoffQ; activeQ being empty, it is popped from there at once
    # (SchedulerPopFromBackoffQ) instead of waiting for its backoff. The victim is deleted after
    # c's failure is handled (async preemption).
    "preemption": [(7, "FailedScheduling", "c"), (7, "Nominated", "c"), (7, "Preempted", "a")],
    "c_scheduled": 7,
    "pending": ("0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: "
                "0/1 nodes are available: 1 No preemption victims found for incoming pod."),
    "incoming": {
        ("active", "UnschedulablePodAdd"): 4,
        ("unschedulable", "ScheduleAttemptFailure"): 2,
        ("backoff", "AssignedPodDelete"): 1,
        ("active", "PopFromBackoffQ"): 1,
    },
}


@pytest.mark.parametrize(("features", "want"), [
    pytest.param(FEATURES_1_30, _ARRIVALS_130, id="v1.30: the preemptor retries after its backoff"),
    pytest.param(FEATURES_1_36, _ARRIVALS_136, id="1.36: the preemptor is popped from backoffQ as activeQ is empty"),
])
def test_pods_arrive_at_their_creation_time_in_priority_order_and_the_metrics_count_the_run(
        features: Features, want: dict[str, Any]) -> None:
    # n1 has 4 cpu: "a" and "b" arrive together (b has the higher priority, so it goes first),
    # "c" at 7 s preempts the low-priority "a" (grace 0: gone at once), "d" at 20 s cannot fit
    # and cannot preempt (every pod there has a higher priority).
    pods = [
        pod("a", "2", priority=1),
        pod("b", "2", priority=5),
        pod("c", "2", priority=10, arrives=7),
        pod("d", "3", priority=2, arrives=20),
    ]
    pods = [dataclasses.replace(p, termination_grace_period_seconds=0) for p in pods]
    _, res = simulate([node("n1")], pods, features=features)
    assert events(res) == [
        (0, "Scheduled", "b"),
        (0, "Scheduled", "a"),
        *want["preemption"],
        (7, "Deleted", "a"),
        (want["c_scheduled"], "Scheduled", "c"),
        (20, "FailedScheduling", "d"),
    ]
    assert res.final == {"default/b": "n1", "default/c": "n1", "default/d": None}
    assert res.deleted == ["default/a"]
    assert res.end - res.start == 20
    assert res.pending == {"default/d": want["pending"]}
    data = res.metrics.as_dict(PROFILE)
    assert data["scheduler_schedule_attempts_total"] == [
        {"labels": {"result": "scheduled", "profile": PROFILE}, "value": 3},
        {"labels": {"result": "unschedulable", "profile": PROFILE}, "value": 2},
    ]
    assert data["scheduler_preemption_attempts_total"] == 2
    assert data["scheduler_preemption_victims"] == {
        "count": 1, "sum": 1, "buckets": {"1": 1, "2": 1, "4": 1, "8": 1, "16": 1, "32": 1, "64": 1}}
    assert pending_by_queue(res) == {"active": 0, "backoff": 0, "unschedulable": 1, "gated": 0}
    incoming = {(m["labels"]["queue"], m["labels"]["event"]): m["value"]
                for m in data["scheduler_queue_incoming_pods_total"]}
    assert incoming == want["incoming"]


def test_gated_pod_is_reported_pending_in_the_gated_queue() -> None:
    gated = make_pod().name("g").req(cpu="1").creation(at(0)).scheduling_gate("example.com/wait").obj()
    _, res = simulate([node("n1")], [gated, pod("p", arrives=5)])
    assert events(res) == [(5, "Scheduled", "p")]
    assert res.pending == {"default/g": "waiting for scheduling gates"}
    assert pending_by_queue(res) == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 1}
    assert res.metrics.schedule_attempts == {"scheduled": 1}


# ----------------------------------------------------------------------------- CLI
SCENARIO = f"""\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: high}}
value: 100
---
apiVersion: v1
kind: Node
metadata: {{name: n1}}
status: {{capacity: {{cpu: "2", memory: 4Gi, pods: "10"}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: victim, namespace: default, creationTimestamp: "{at(0)}"}}
spec:
  nodeName: n1
  terminationGracePeriodSeconds: 30
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: "2"}}}}}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: preemptor, namespace: default, creationTimestamp: "{at(60)}"}}
spec:
  priorityClassName: high
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: "2"}}}}}}]
"""


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO)
    return path


def test_cli_simulate_json_has_the_timeline_metrics_and_pending_pods(scenario: Path) -> None:
    r = CliRunner().invoke(main, ["simulate", str(scenario), "--timeline", "-o", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert [(e["time"], e["reason"], e["pod"]) for e in out["timeline"]] == [
        (0, "FailedScheduling", "default/preemptor"),
        (0, "Nominated", "default/preemptor"),
        (0, "Preempted", "default/victim"),  # async preemption (1.36): after the failure
        (30, "Deleted", "default/victim"),
        (30, "Scheduled", "default/preemptor"),
    ]
    assert out["simulatedSeconds"] == 30
    assert out["placements"] == {"default/preemptor": "n1"}
    assert out["preempted"] == ["default/victim"]
    assert out["pending"] == {}
    metrics = out["metrics"]
    assert metrics["scheduler_preemption_attempts_total"] == 1
    assert metrics["scheduler_preemption_victims"]["sum"] == 1
    assert {m["labels"]["result"]: m["value"] for m in metrics["scheduler_schedule_attempts_total"]} == {
        "scheduled": 1, "unschedulable": 1}


def test_cli_simulate_timeline_prints_the_events_with_their_times(scenario: Path) -> None:
    r = CliRunner().invoke(main, ["simulate", str(scenario), "--timeline"], terminal_width=200)
    assert r.exit_code == 0, r.output
    assert "timeline (simulated seconds from the first arrival)" in r.output
    lines = [line for line in r.output.splitlines() if "30.0" in line]
    assert any("Deleted" in line and "default/victim" in line for line in lines), r.output
    assert any("Scheduled" in line and "default/preemptor" in line for line in lines), r.output


def test_cli_simulate_deterministic_has_no_timeline(scenario: Path) -> None:
    r = CliRunner().invoke(main, ["simulate", str(scenario), "--deterministic", "-o", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert "timeline" not in out and "metrics" not in out
    assert out["placements"] == {"default/preemptor": "n1"}
