"""Simulation on a virtual clock with kube-scheduler's real scheduling queue.

Pods arrive at their creationTimestamp; the queue (activeQ / backoffQ / unschedulablePods)
orders attempts; failures back off (1 s doubling to 10 s) or wait for a cluster event that
may help (a pod bound, a victim gone, ...) or for the 5-minute leftover flush; preemption
victims terminate gracefully, holding their resources for their grace period; pods held at
Permit wait for their plugins or time out. Time jumps straight to the next thing that can
happen, so hours of cluster time take milliseconds. The run ends when nothing can change
any more: every pod is bound, or waits for something that will not happen.
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
import itertools
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched._queue import FakeClock, SchedulingQueue, events, events_by_plugin_of
from kubesched.config import KubeSchedulerConfiguration
from kubesched.framework import PodInfo, QueuedPodInfo
from kubesched.objects import ClusterObjects, Pod, PodCondition
from kubesched.plugins.registry import Factory
from kubesched.scheduler import Attempt
from kubesched.simulation import SimulationResult, Simulator, Step

# scheduler_preemption_victims buckets: exponential(1, 2, 7)
_VICTIM_BUCKETS = (1, 2, 4, 8, 16, 32, 64)


@dataclass(slots=True)
class TimelineEvent:
    """One event as kube-scheduler would record it (events.k8s.io reasons)."""

    time: float
    reason: str  # Scheduled | FailedScheduling | Preempted | Nominated | Deleted
    pod: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"time": self.time, "reason": self.reason, "pod": self.pod, "message": self.message}


@dataclass(slots=True)
class Metrics:
    """The run's counters under kube-scheduler's metric names."""

    schedule_attempts: Counter[str] = field(default_factory=Counter)  # result -> count
    preemption_attempts: int = 0
    preemption_victims: list[int] = field(default_factory=list)
    pending_pods: dict[str, int] = field(default_factory=dict)
    queue_incoming_pods: Counter[tuple[str, str]] = field(default_factory=Counter)

    def as_dict(self, profile: str) -> dict[str, Any]:
        buckets = {str(b): sum(1 for v in self.preemption_victims if v <= b) for b in _VICTIM_BUCKETS}
        return {
            "scheduler_schedule_attempts_total": [
                {"labels": {"result": r, "profile": profile}, "value": n} for r, n in sorted(self.schedule_attempts.items())],
            "scheduler_preemption_attempts_total": self.preemption_attempts,
            "scheduler_preemption_victims": {"count": len(self.preemption_victims), "sum": sum(self.preemption_victims),
                                             "buckets": buckets},
            "scheduler_pending_pods": [{"labels": {"queue": q}, "value": n} for q, n in sorted(self.pending_pods.items())],
            "scheduler_queue_incoming_pods_total": [
                {"labels": {"queue": q, "event": e}, "value": n} for (q, e), n in sorted(self.queue_incoming_pods.items())],
        }


@dataclass(slots=True)
class TimelineResult(SimulationResult):
    events: list[TimelineEvent] = field(default_factory=list)
    metrics: Metrics = field(default_factory=Metrics)
    pending: dict[str, str] = field(default_factory=dict)  # still-pending pod -> last message
    start: float = 0.0
    end: float = 0.0


class TimelineSimulator(Simulator):
    """Simulator driven by the scheduling queue on a virtual clock."""

    def __init__(self, objs: ClusterObjects, config: KubeSchedulerConfiguration | None = None, *,
                 seed: int | None = None, registry: Mapping[str, Factory] | None = None,
                 deterministic: bool = False) -> None:
        super().__init__(objs, config, deterministic=deterministic, seed=seed, registry=registry)
        pending_ts = [p.meta.creation_timestamp or 0.0 for p in objs.pods if not p.node_name]
        self.clock = FakeClock(min(pending_ts) if pending_ts else objs.latest_timestamp)
        self.scheduler.clock = self.clock.now
        first = next(iter(self.profiles.values()))
        self.queue = SchedulingQueue(
            first.less, self._pre_enqueue, self.clock,
            pod_initial_backoff=float(self.config.pod_initial_backoff_seconds),
            pod_max_backoff=float(self.config.pod_max_backoff_seconds),
            events_by_profile={name: events_by_plugin_of(_all_plugins(fwk)) for name, fwk in self.profiles.items()},
            namespace_labels=self._namespace_labels, pod_lister=self.objects.pod, nominator=self.nominator,
        )
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._changed = False  # a cluster change since the last unschedulable flush
        self._result = TimelineResult()
        self._attempts: Counter[str] = Counter()
        self._in_flight: list[Attempt] = []  # pods waiting at Permit
        for name, fwk in self.profiles.items():
            del name
            fwk.handle._deleter = self._delete_gracefully  # noqa: SLF001 - the simulator owns its handles

    # ---- plumbing
    def _pre_enqueue(self, pod: Pod) -> Any:
        fwk = self.profiles.get(pod.scheduler_name)
        return fwk.run_pre_enqueue_plugins(pod) if fwk is not None else None

    def _namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        ns = self.objects.namespace(namespace)
        return ns.labels if ns is not None else None

    def _at(self, when: float, fn: Callable[[], None]) -> None:
        heapq.heappush(self._timers, (when, next(self._seq), fn))

    def _event(self, reason: str, pod: Pod, message: str) -> None:
        self._result.events.append(TimelineEvent(self.clock.now(), reason, pod.key, message))

    # ---- cluster actions
    def _delete_gracefully(self, victim: Pod, reason: str) -> None:
        """prepareCandidate: reject a waiting victim, else mark it terminating (DisruptionTarget
        condition, deletionTimestamp) and remove it after its grace period."""
        self.scheduler.victims.append(victim)
        for fwk in self.profiles.values():
            wp = fwk.handle.get_waiting_pod(victim.uid)
            if wp is not None:
                wp.reject("DefaultPreemption", "preempted")
                return
        now = self.clock.now()
        cur = self.current.get(victim.uid, victim)
        if cur.is_terminating:
            return
        terminating = dataclasses.replace(
            cur, meta=dataclasses.replace(cur.meta, deletion_timestamp=now),
            conditions=cur.conditions + (PodCondition("DisruptionTarget", "True", "PreemptionByScheduler", reason),))
        self.cache.remove_pod(cur)
        self.cache.add_pod(terminating)
        self.current[victim.uid] = terminating
        self.objects.set_pod(terminating)
        self._event("Preempted", victim, f"Preempted by pod {self._preemptor_uid} on node {victim.node_name}")
        grace = max(terminating.termination_grace_period_seconds, 0)
        self._at(now + grace, lambda: self._victim_gone(terminating))

    def _victim_gone(self, pod: Pod) -> None:
        self.cache.remove_pod(pod)
        self.objects.delete_pod(pod)
        self.nominator.delete(pod)
        self.deleted.add(pod.uid)
        self._event("Deleted", pod, f"pod {pod.key} terminated after its grace period")
        self._changed = True
        self._count_moves(self.queue.move_all_to_active_or_backoff_queue(events.ASSIGNED_POD_DELETE))

    def _count_moves(self, moved: int) -> None:
        del moved  # the queue counts incoming pods itself

    # ---- the loop
    def run(self) -> TimelineResult:
        res = self._result
        res.start = self.clock.now()
        for p in self.objs.pods:
            if p.node_name or p.is_terminal:
                continue
            if p.scheduler_name not in self.profiles:
                res.skipped[p.key] = f"schedulerName {p.scheduler_name!r} is not one of this scheduler's profiles"
                continue
            if p.is_terminating:
                res.skipped[p.key] = f"skip schedule deleting pod: {p.key}"
                continue
            self._at(p.meta.creation_timestamp or res.start, functools.partial(self._arrive, p))
        self.queue.run(res.start)
        while True:
            self._fire_due()
            qpi = self.queue.pop()
            if qpi is not None:
                self._schedule(qpi)
                continue
            nxt = self._next_time()
            if nxt is None:
                break
            self.clock.set(max(nxt, self.clock.now()))
            self.queue.flush_backoff_q_completed()
            if self.queue.flush_unschedulable_pods_leftover():
                self._changed = False
        self._finish(res)
        return res

    def _arrive(self, pod: Pod) -> None:
        if pod.nominated_node_name:
            self.nominator.add(PodInfo(pod), pod.nominated_node_name)
        self.queue.add(pod)

    def _fire_due(self) -> None:
        now = self.clock.now()
        while self._timers and self._timers[0][0] <= now:
            _, _, fn = heapq.heappop(self._timers)
            fn()
        for attempt in list(self._in_flight):
            fwk = attempt.framework
            assert fwk is not None
            fwk.handle.waiting_pods.expire(now)
            if attempt.waiting is not None and attempt.waiting.done:
                self._in_flight.remove(attempt)
                self._finish_binding(attempt)

    def _next_time(self) -> float | None:
        """When something can next happen: a timer, a waiting pod's deadline, a backoff
        expiry — or the 5-minute leftover flush, but only if the cluster changed since the
        pods there last failed (otherwise they would fail again, forever)."""
        candidates = []
        if self._timers:
            candidates.append(self._timers[0][0])
        for fwk in self.profiles.values():
            d = fwk.handle.waiting_pods.next_deadline()
            if d is not None:
                candidates.append(d)
        if self.queue.num_backoff:
            t = self.queue.next_event_time()
            if t is not None:
                candidates.append(t)
        if not candidates and self._changed and self.queue.num_unschedulable - self.queue.num_gated > 0:
            t = self.queue.next_event_time()
            if t is not None:
                candidates.append(t)
        return min(candidates) if candidates else None

    def _schedule(self, qpi: QueuedPodInfo) -> None:
        pod = self.current.get(qpi.pod.uid, qpi.pod)
        if pod.uid in self.deleted or pod.node_name:
            self.queue.done(pod.uid)
            return
        cycle = self.queue.scheduling_cycle
        self._preemptor_uid = pod.uid
        attempt = self.scheduler.scheduling_cycle(pod)
        if attempt.victims:
            self._result.metrics.preemption_victims.append(len(attempt.victims))
        if self.profiles[pod.scheduler_name].has_post_filter_plugins() and attempt.outcome == "Unschedulable" \
                and attempt.assumed is None and attempt.num_all_nodes:
            self._result.metrics.preemption_attempts += 1
        if attempt.outcome == "Waiting":
            self._in_flight.append(attempt)
            self._record(attempt, qpi)
            return
        if attempt.outcome == "Assumed":
            self.scheduler.binding_cycle(attempt)
        self._after(attempt, qpi, cycle)

    def _finish_binding(self, attempt: Attempt) -> None:
        self.scheduler.binding_cycle(attempt)
        pod = attempt.pod
        qpi = self.queue.new_queued_pod_info(pod)
        self._after(attempt, qpi, self.queue.scheduling_cycle)

    def _after(self, attempt: Attempt, qpi: QueuedPodInfo, cycle: int) -> None:
        pod = attempt.pod
        self._record(attempt, qpi)
        if attempt.outcome == "Scheduled":
            self._result.metrics.schedule_attempts["scheduled"] += 1
            self.queue.done(pod.uid)
            bound = self.current[pod.uid]
            self._event("Scheduled", pod, f"Successfully assigned {pod.key} to {attempt.node}")
            self._changed = True
            self.queue.assigned_pod_added(bound)
            return
        result = "unschedulable" if attempt.outcome == "Unschedulable" else "error"
        self._result.metrics.schedule_attempts[result] += 1
        self._event("FailedScheduling", pod, attempt.message or attempt.error or "")
        if attempt.nominated_node:
            self._event("Nominated", pod, f"nominated to {attempt.nominated_node}")
        if attempt.assumed is not None:
            # A rejected binding frees what the pod had reserved: AssignedPodDelete (excluding itself).
            self._count_moves(self.queue.move_all_to_active_or_backoff_queue(events.ASSIGNED_POD_DELETE))
        current = self.current.get(pod.uid, pod)
        qpi.pod_info = PodInfo(current)
        qpi.unschedulable_plugins = set(attempt.diagnosis.unschedulable_plugins)
        qpi.pending_plugins = set(attempt.diagnosis.pending_plugins)
        self.queue.done(pod.uid)
        if pod.uid not in self.deleted:
            self.queue.add_unschedulable_if_not_present(qpi, cycle)

    def _record(self, attempt: Attempt, qpi: QueuedPodInfo) -> None:
        if attempt.outcome == "Waiting":
            return
        self._attempts[attempt.pod.uid] += 1
        self._result.steps.append(Step(attempt, self._attempts[attempt.pod.uid]))

    def _finish(self, res: TimelineResult) -> None:
        res.end = self.clock.now()
        for attempt in self._in_flight:
            res.pending[attempt.pod.key] = "waiting at Permit"
        last: dict[str, Attempt] = {}
        for step in res.steps:
            last[step.attempt.pod.key] = step.attempt
        for p in self.objs.pods:
            if p.uid in self.deleted:
                res.deleted.append(p.key)
                continue
            cur = self.current[p.uid]
            res.final[p.key] = cur.node_name or None
            if not cur.node_name and p.key not in res.skipped and p.key not in res.pending:
                a = last.get(p.key)
                if a is not None:
                    res.pending[p.key] = a.message or a.error or ""
                else:
                    qpi = self.queue.get(p)
                    res.pending[p.key] = "waiting for scheduling gates" if qpi is not None and qpi.gated else "not attempted"
        res.metrics.pending_pods = dict(self.queue.pending_counts())
        res.metrics.queue_incoming_pods = Counter(self.queue.incoming_pods)


def _all_plugins(fwk: Any) -> list[Any]:
    seen: dict[str, Any] = {}
    for point in ("PreEnqueue", "QueueSort", "PreFilter", "Filter", "PostFilter", "PreScore", "Score", "Reserve",
                  "Permit", "PreBind", "Bind", "PostBind"):
        for p in fwk.plugins_at(point):
            seen.setdefault(p.name, p)
    return list(seen.values())
