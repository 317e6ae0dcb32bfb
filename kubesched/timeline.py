"""Simulation on a virtual clock with kube-scheduler's real scheduling queue.

Pods arrive at their creationTimestamp; the queue (activeQ / backoffQ / unschedulablePods)
orders attempts; failures back off (1 s doubling to 10 s) or wait for a cluster event that
may help (a pod bound, a victim gone, ...) or for the 5-minute leftover flush; preemption
victims terminate gracefully, holding their resources for their grace period; pods held at
Permit wait for their plugins or time out. The queue's periodic flushes run on upstream's
ticks, counted from the start: backoffQ every second (flushBackoffQCompleted), the leftover
unschedulable pods every 30 s (flushUnschedulablePodsLeftover, moving a pod that has waited
more than 5 minutes), so a retry happens at the tick that would move the pod, not at the
instant its backoff or wait ends. Time jumps straight to the next thing that can happen, so
hours of cluster time take milliseconds. The run ends when nothing can change
any more: every pod is bound, or waits for something that will not happen (a pod that
failed after the latest cluster change would fail the same way on every retry; one failing
with an Error, which may be transient, is retried with backoff for 5 minutes first; one
whose preemption failed with an Error, e.g. its preempt extender's, is retried at the
leftover flushes of the next 15 minutes, as upstream's flush would go on retrying it).
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
import itertools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesched._queue import FakeClock, SchedulingQueue, events
from kubesched._queue.events import registrations_by_plugin_of
from kubesched._runtime.scavenger import Scavenger
from kubesched.config import KubeSchedulerConfiguration
from kubesched.features import Features
from kubesched.framework import GVK, ActionType, ClusterEvent, PodInfo, QueuedPodInfo
from kubesched.objects import ClusterObjects, Pod, PodCondition, PodGroup
from kubesched.plugins.registry import Factory
from kubesched.scheduler import EXTENDER_NAME, Attempt
from kubesched.simulation import SimulationResult, Simulator, Step, terminal_pod_reason

# scheduler_preemption_victims buckets: exponential(1, 2, 7)
_VICTIM_BUCKETS = (1, 2, 4, 8, 16, 32, 64)
# A pod that failed this many scheduling attempts is no longer retried. kube-scheduler retries
# forever; plugins can keep a simulation busy forever too (a gang plugin without backoff whose
# members keep getting reserved and timing out at Permit, each release of their nodes counting
# as a cluster change): the run must still end.
MAX_ATTEMPTS_PER_POD = 1000
# A pod whose PostFilter failed with an Error (a preemption that could not run: its preempt
# extender failed) is Unschedulable, so only a cluster event or the leftover flush (every
# podMaxInUnschedulablePodsDuration, 5 min) retries it; upstream's flush does so forever, so
# that an extender that heals is used again. The timeline keeps that many flushes' worth of
# retries after the failure began (with no cluster change) before it counts the pod as
# waiting for nothing.
POST_FILTER_ERROR_FLUSHES = 3


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
    # OpportunisticBatching (1.36): per (profile, result) and (profile, reason); None without it.
    batch_attempts: Counter[tuple[str, str]] | None = None
    batch_cache_flushed: Counter[tuple[str, str]] | None = None

    def as_dict(self, profile: str) -> dict[str, Any]:
        buckets = {str(b): sum(1 for v in self.preemption_victims if v <= b) for b in _VICTIM_BUCKETS}
        batches: dict[str, Any] = {}
        if self.batch_attempts is not None and self.batch_cache_flushed is not None:
            batches = {
                "scheduler_batch_attempts_total": [
                    {"labels": {"profile": p, "result": r}, "value": n} for (p, r), n in sorted(self.batch_attempts.items())],
                "scheduler_batch_cache_flushed_total": [
                    {"labels": {"profile": p, "reason": r}, "value": n}
                    for (p, r), n in sorted(self.batch_cache_flushed.items())],
            }
        return {
            "scheduler_schedule_attempts_total": [
                {"labels": {"result": r, "profile": profile}, "value": n} for r, n in sorted(self.schedule_attempts.items())],
            "scheduler_preemption_attempts_total": self.preemption_attempts,
            "scheduler_preemption_victims": {"count": len(self.preemption_victims), "sum": sum(self.preemption_victims),
                                             "buckets": buckets},
            "scheduler_pending_pods": [{"labels": {"queue": q}, "value": n} for q, n in sorted(self.pending_pods.items())],
            "scheduler_queue_incoming_pods_total": [
                {"labels": {"queue": q, "event": e}, "value": n} for (q, e), n in sorted(self.queue_incoming_pods.items())],
            **batches,
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
                 deterministic: bool = False, max_attempts: int = MAX_ATTEMPTS_PER_POD,
                 check_invariants: bool | None = None, features: Features | None = None) -> None:
        super().__init__(objs, config, deterministic=deterministic, seed=seed, registry=registry,
                         check_invariants=check_invariants, features=features, informer_lists=True)
        self.max_attempts = max_attempts
        self._gave_up: dict[str, str] = {}  # pod key -> last message, for pods no longer retried
        pending_ts = [p.meta.creation_timestamp or 0.0 for p in objs.pods if not p.node_name]
        self.clock = FakeClock(min(pending_ts) if pending_ts else objs.latest_timestamp)
        self.scheduler.clock = self.clock.now
        first = next(iter(self.profiles.values()))
        self.queue = SchedulingQueue(
            first.less, self._pre_enqueue, self.clock,
            pod_initial_backoff=float(self.config.pod_initial_backoff_seconds),
            pod_max_backoff=float(self.config.pod_max_backoff_seconds),
            events_by_profile={name: {**self._extender_events(), **registrations_by_plugin_of(_all_plugins(fwk))}
                               for name, fwk in self.profiles.items()},
            namespace_labels=self._namespace_labels, pod_lister=self.objects.pod, nominator=self.nominator,
            features=self.features,
        )
        # OpportunisticBatching counts cycles as the queue's pops (skipped pods included).
        self.scheduler.current_cycle = lambda: self.queue.scheduling_cycle
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        # Cluster changes so far (binds, victims, nominations), and for each queued pod that
        # failed, how many there had been at its last failure: a retry can only succeed if the
        # cluster changed since.
        self._changes = 0
        self._failed_at_change: dict[str, int] = {}
        # Pods failing with an Error (not a rejection), or whose preemption failed with one,
        # which may be transient: since when, at which change count they have been failing
        # with no cluster change, and for how long such a failure is worth retrying.
        self._erring: dict[str, tuple[float, int, float]] = {}
        self._result = TimelineResult(oracle=self.features.oracle)
        self._attempts: Counter[str] = Counter()
        # Pods held at Permit: their attempt and queue entry, until their binding cycle runs.
        self._in_flight: list[tuple[Attempt, QueuedPodInfo]] = []
        # Freed C-heap pages back to the OS every few wall seconds (a long timeline's RSS
        # follows its live memory; kubesched._runtime.scavenger says why).
        self._scavenger = Scavenger()
        # PodGroups created after the first pending pod exist from their creationTimestamp on.
        for group in objs.pod_groups:
            created = group.meta.creation_timestamp
            if created is not None and created > self.clock.now():
                self.objects.delete_pod_group(group)
                self._at(created, functools.partial(self._pod_group_added, group))
        for name, fwk in self.profiles.items():
            del name
            fwk.handle._deleter = self._delete_gracefully  # noqa: SLF001 - the simulator owns its handles
            fwk.handle._deleter_takes_preemptor = True  # noqa: SLF001
            # Async preemption's API calls complete after the preemptor's failure is handled,
            # at the same virtual instant; activation goes through the queue.
            fwk.handle.async_runner = self._run_after_cycle
            fwk.handle.activator = self._activate_pods

    # ---- plumbing
    def _extender_events(self) -> dict[str, list[ClusterEvent]]:
        """NewFramework: with extenders, the pseudo-plugin "Extender" (recorded when filter
        extenders rejected nodes) registers every resource with action All, since extenders
        have no queueing hints: any cluster event may help such a pod."""
        return {EXTENDER_NAME: events.unroll_wildcard_resource()} if self.extenders else {}

    def _pre_enqueue(self, pod: Pod) -> Any:
        fwk = self.profiles.get(pod.scheduler_name)
        return fwk.run_pre_enqueue_plugins(pod) if fwk is not None else None

    def _namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        ns = self.objects.namespace(namespace)
        return ns.labels if ns is not None else None

    def _run_after_cycle(self, fn: Callable[[], None]) -> None:
        self._at(self.clock.now(), fn)

    def _activate_pods(self, pods: Sequence[Pod]) -> None:
        self.queue.activate([self.current.get(p.uid, p) for p in pods])

    def _at(self, when: float, fn: Callable[[], None]) -> None:
        heapq.heappush(self._timers, (when, next(self._seq), fn))

    def _event(self, reason: str, pod: Pod, message: str) -> None:
        self._result.events.append(TimelineEvent(self.clock.now(), reason, pod.key, message))

    # ---- cluster actions
    def _delete_gracefully(self, victim: Pod, reason: str, preemptor: Pod | None = None) -> None:
        """prepareCandidate: reject a waiting victim, else mark it terminating (DisruptionTarget
        condition, deletionTimestamp) and remove it after its grace period. The Preempted event
        is recorded for every victim, even one already terminating (chosen again by a
        higher-priority preemptor): its second deletion changes nothing."""
        self.scheduler.victims.append(victim)
        by = preemptor.uid if preemptor is not None else self._preemptor_uid
        self._event("Preempted", victim, f"Preempted by pod {by} on node {victim.node_name}")
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
        self._changes += 1
        # The informer's update of the victim (AssignedPodUpdate) arrives after the preemptor's
        # failure is handled.
        self._at(now, functools.partial(self._victim_updated, cur, terminating))
        grace = max(terminating.termination_grace_period_seconds, 0)
        self._at(now + grace, lambda: self._victim_gone(terminating))

    def on_volumes_bound(self) -> None:
        # The PV controller's updates: PVs bound or provisioned, claims bound.
        self._changes += 1
        self.queue.move_all_to_active_or_backoff_queue(events.PV_UPDATE)
        self.queue.move_all_to_active_or_backoff_queue(events.PVC_UPDATE)

    def _victim_updated(self, old: Pod, new: Pod) -> None:
        self.queue.assigned_pod_updated(old, new)

    def _victim_gone(self, pod: Pod) -> None:
        self.cache.remove_pod(pod)
        self.objects.delete_pod(pod)
        self.nominator.delete(pod)
        self.deleted.add(pod.uid)
        self._event("Deleted", pod, f"pod {pod.key} terminated after its grace period")
        self._changes += 1
        self.queue.move_all_to_active_or_backoff_queue(events.ASSIGNED_POD_DELETE, old=pod)

    # ---- the loop
    def run(self) -> TimelineResult:
        res = self._result
        res.start = self.clock.now()
        self._new_invariants(self.queue)
        for p in self.objs.pods:
            if p.node_name:
                continue
            if p.is_terminal:
                res.skipped[p.key] = terminal_pod_reason(p)
                continue
            if p.scheduler_name not in self.profiles:
                res.skipped[p.key] = f"schedulerName {p.scheduler_name!r} is not one of this scheduler's profiles"
                continue
            # A pod being deleted arrives too: upstream's event handlers do not filter it, so
            # PriorityQueue.Add queues (and nominates) it; _schedule skips it once popped.
            self._at(p.meta.creation_timestamp or res.start, functools.partial(self._arrive, p))
        self.queue.run(res.start)
        while True:
            self._fire_due()
            qpi = self.queue.pop()
            if qpi is not None:
                self._schedule(qpi)
                self._scavenger.tick()
                continue
            nxt = self._next_time()
            if nxt is None:
                break
            self.clock.set(max(nxt, self.clock.now()))
            self.queue.flush_backoff_q_completed()
            self.queue.flush_unschedulable_pods_leftover()
        self._finish(res)
        self.close()  # the extenders' HTTP clients
        if self.invariants is not None:
            self.invariants.check(self.queue.scheduling_cycle, None, "end")
        return res

    def _arrive(self, pod: Pod) -> None:
        """addPodToSchedulingQueue: the cache learns the pod's pod group membership
        (AddPodGroupMember), then PriorityQueue.Add, which nominates the pod to its
        status.nominatedNodeName (addNominatedPodUnlocked) only once PreEnqueue let it into
        activeQ: a pod held by schedulingGates reserves no room. With GangScheduling the
        unschedulable pods then see an UnschedulablePodAdd event: a new member may complete
        a gang whose members PreEnqueue holds."""
        self.cache.add_pod_group_member(pod)
        self.queue.add(pod)
        if self.features.enabled("GangScheduling"):
            self.queue.move_all_to_active_or_backoff_queue(
                events.event_136(GVK.UNSCHEDULABLE_POD, ActionType.ADD), None, None, pod)

    def _pod_group_added(self, group: PodGroup) -> None:
        """A PodGroup created after the simulation started (its creationTimestamp): the
        informer's add event (scheduling.k8s.io/PodGroupAdd) reaches the queue."""
        self.objects.add_pod_group(group)
        self._changes += 1
        self.queue.move_all_to_active_or_backoff_queue(events.event_136(GVK.POD_GROUP, ActionType.ADD),
                                                       None, None, group)

    def _fire_due(self) -> None:
        now = self.clock.now()
        while self._timers and self._timers[0][0] <= now:
            _, _, fn = heapq.heappop(self._timers)
            fn()
        if not self._in_flight:
            return
        for fwk in self.profiles.values():
            fwk.handle.waiting_pods.expire(now)
        # A binding cycle may decide other waiting pods (an Unreserve rejecting the pod's
        # siblings), earlier in the list too: run until no decided pod is left, or one could
        # stay reserved forever (a decided pod has no deadline to wake the loop up).
        while True:
            decided = [entry for entry in self._in_flight if entry[0].waiting is None or entry[0].waiting.done]
            if not decided:
                return
            for entry in decided:
                self._in_flight.remove(entry)
                self._finish_binding(*entry)

    def _next_time(self) -> float | None:
        """When something can next happen: a timer (an arrival, a victim gone), a waiting
        pod's deadline, a backoff expiry or the 5-minute leftover flush. A queued pod whose
        last failure came after the latest cluster change would only fail the same way again
        (upstream retries it forever): when nothing but such retries is left, the run ends
        (None). Until then they are all simulated, so the timeline keeps upstream's retries.
        An Error, unlike a rejection, may be transient: such a pod counts as worth retrying
        until it has been failing for podMaxInUnschedulablePodsDuration (5 min) with no change."""
        candidates = []
        if self._timers:
            candidates.append(self._timers[0][0])
        for fwk in self.profiles.values():
            d = fwk.handle.waiting_pods.next_deadline()
            if d is not None:
                candidates.append(d)
        if not candidates and not self._retry_may_help():
            return None
        # The flush tick that would move a pod (wait.Until's 1 s / 30 s periods from Run).
        t = self.queue.next_event_time(aligned=True)
        if t is not None:
            candidates.append(t)
        return min(candidates) if candidates else None

    def _retry_may_help(self) -> bool:
        """Whether some pod waiting in backoffQ/unschedulablePods failed before the latest
        change, or is still within its grace for errors."""
        changes, now = self._changes, self.clock.now()
        for uid, seen in self._failed_at_change.items():
            if seen < changes:
                return True
            erring = self._erring.get(uid)
            if erring is not None and now - erring[0] < erring[2]:
                return True
        return False

    def _set_nominated(self, pod: Pod, node: str) -> Pod:
        if self.current.get(pod.uid, pod).nominated_node_name != node:
            self._changes += 1  # a nomination counts in others' filtering
        return super()._set_nominated(pod, node)

    def _schedule(self, qpi: QueuedPodInfo) -> None:
        pod = self.current.get(qpi.pod.uid, qpi.pod)
        if pod.uid in self.deleted or pod.node_name:
            self.queue.done(pod.uid)
            return
        if pod.is_terminating:
            # skipPodSchedule (case 1): a FailedScheduling event, no attempt, not requeued;
            # its nomination stays in the nominator until the pod's Delete event.
            msg = f"skip schedule deleting pod: {pod.key}"
            self._result.skipped[pod.key] = msg
            self._event("FailedScheduling", pod, msg)
            self.queue.done(pod.uid)
            return
        self._failed_at_change.pop(pod.uid, None)
        cycle = self.queue.scheduling_cycle
        self._preemptor_uid = pod.uid
        attempt = self.scheduler.scheduling_cycle(pod)
        if attempt.victims:
            self._result.metrics.preemption_victims.append(len(attempt.victims))
        if self.profiles[pod.scheduler_name].has_post_filter_plugins() and attempt.outcome == "Unschedulable" \
                and attempt.assumed is None and attempt.num_all_nodes:
            self._result.metrics.preemption_attempts += 1
        if attempt.outcome in ("Waiting", "Assumed"):
            # The end of a successful scheduling cycle: PodsToActivate move up.
            self._activate(attempt)
        if attempt.outcome == "Waiting":
            # The pod stays in flight (not Done in the queue) until its binding cycle.
            self._in_flight.append((attempt, qpi))
            self._check_invariants(attempt, "scheduling", cycle)
            return
        binding = attempt.outcome == "Assumed"
        if binding:
            self._check_invariants(attempt, "scheduling", cycle)
            self._binding_cycle(attempt)
        self._after(attempt, qpi, cycle, binding=binding)
        self._check_invariants(attempt, "binding" if binding else "scheduling", cycle)

    def _binding_cycle(self, attempt: Attempt) -> None:
        self.scheduler.binding_cycle(attempt)
        if attempt.outcome == "Scheduled":
            self._activate(attempt)  # and at the end of a successful binding cycle

    def _activate(self, attempt: Attempt) -> None:
        pods = attempt.take_pods_to_activate()
        if pods:
            self._activate_pods(pods)

    def _finish_binding(self, attempt: Attempt, qpi: QueuedPodInfo) -> None:
        """The binding cycle of a pod held at Permit, once allowed or rejected (its queue entry
        keeps its attempts count, hence its backoff)."""
        self._binding_cycle(attempt)
        self._after(attempt, qpi, self.queue.scheduling_cycle, binding=True)
        self._check_invariants(attempt, "binding")

    def _after(self, attempt: Attempt, qpi: QueuedPodInfo, cycle: int, *, binding: bool = False) -> None:
        """handleSchedulingFailure (or the success path) after a scheduling cycle, or after a
        binding cycle (``binding``) that ran."""
        pod = attempt.pod
        self._record(attempt, qpi)
        limit = self.queue.pod_max_in_unschedulable_pods_duration
        if attempt.outcome == "Error":
            self._erring_since(pod.uid, limit)
        elif attempt.outcome == "Unschedulable" and attempt.post_filter_error:
            self._erring_since(pod.uid, limit * POST_FILTER_ERROR_FLUSHES)
        else:
            self._erring.pop(pod.uid, None)
        if attempt.outcome == "Scheduled":
            self._result.metrics.schedule_attempts["scheduled"] += 1
            self.queue.done(pod.uid)
            bound = self.current[pod.uid]
            self._event("Scheduled", pod, f"Successfully assigned {pod.key} to {attempt.node}")
            self._changes += 1
            self.queue.assigned_pod_added(bound)
            return
        result = "unschedulable" if attempt.outcome == "Unschedulable" else "error"
        self._result.metrics.schedule_attempts[result] += 1
        self._event("FailedScheduling", pod, attempt.message or attempt.error or "")
        if attempt.nominated_node:
            self._event("Nominated", pod, f"nominated to {attempt.nominated_node}")
        # handleBindingCycleError: forgetting the assumed pod is an AssignedPodDelete — before
        # the failure handler for an error (even when the bind went through), after it (sparing
        # the pod itself) for a rejection. A Reserve/Permit failure in the scheduling cycle
        # moves nothing.
        if binding and attempt.outcome != "Unschedulable":
            self.queue.move_all_to_active_or_backoff_queue(events.ASSIGNED_POD_DELETE, old=attempt.assumed or pod)
        bound = self.current.get(pod.uid, pod)
        if bound.node_name:
            # The bind went through although the binding cycle failed (a Bind plugin reported an
            # error after binding): the informer adds the bound pod to the cache, and the failure
            # handler does not requeue it ("Pod has been assigned to node. Abort adding it back").
            if self.cache.node_of(bound) is None:
                self.cache.add_pod(bound)
            self.queue.done(pod.uid)
            self._changes += 1
            if binding and attempt.outcome == "Unschedulable":
                self.queue.move_all_to_active_or_backoff_queue(
                    events.ASSIGNED_POD_DELETE, lambda p: p.uid != pod.uid, old=attempt.assumed or pod)
            self.queue.assigned_pod_added(bound)
            return
        if attempt.assumed is not None:
            self._changes += 1  # what the pod had reserved is free again
            # A failure after assume carries clearNominatedNode (status.nominatedNodeName too).
            if self.current.get(pod.uid, pod).nominated_node_name:
                self.scheduler.set_nomination(self.current.get(pod.uid, pod), "")
        current = self.current.get(pod.uid, pod)
        qpi.pod_info = PodInfo(current)
        # Only a FitError (a rejection) names rejector plugins; an error retries after backoff.
        rejected = attempt.outcome == "Unschedulable"
        qpi.unschedulable_plugins = set(attempt.diagnosis.unschedulable_plugins) if rejected else set()
        qpi.pending_plugins = set(attempt.diagnosis.pending_plugins) if rejected else set()
        if self._attempts[pod.uid] >= self.max_attempts:
            self._gave_up[pod.key] = (f"given up after {self._attempts[pod.uid]} scheduling attempts: "
                                      f"{attempt.message or attempt.error or ''}")
        elif pod.uid not in self.deleted:
            # Done comes with the requeue: with queueing hints (1.36) the events seen while
            # the pod was in flight decide where it goes.
            self.queue.add_unschedulable_if_not_present(qpi, cycle)
            self._failed_at_change[pod.uid] = self._changes
        self.queue.done(pod.uid)
        if binding and rejected:
            self.queue.move_all_to_active_or_backoff_queue(
                events.ASSIGNED_POD_DELETE, lambda p: p.uid != pod.uid, old=attempt.assumed or pod)

    def _erring_since(self, uid: str, window: float) -> None:
        now, changes = self.clock.now(), self._changes
        since, at, _ = self._erring.get(uid, (now, changes, window))
        self._erring[uid] = (since, at, window) if at == changes else (now, changes, window)

    def _record(self, attempt: Attempt, qpi: QueuedPodInfo) -> None:
        if attempt.outcome == "Waiting":
            return
        self._attempts[attempt.pod.uid] += 1
        step = Step(attempt, self._attempts[attempt.pod.uid])
        self._result.steps.append(step)
        if self.on_step is not None:
            self.on_step(step)

    def _pending_reason(self, pod: Pod) -> str | None:
        """Why a pending pod is in no queue and not in flight (the invariant checker)."""
        reason = self._result.skipped.get(pod.key) or self._gave_up.get(pod.key)
        if reason is None and (pod.meta.creation_timestamp or self._result.start) > self.clock.now():
            reason = "not arrived yet"
        return reason

    def _mirrors_nomination(self, pod: Pod) -> bool:
        """Upstream's nominator holds a queued pod that passed PreEnqueue."""
        qpi = self.queue.get(pod)
        return qpi is not None and qpi.pod.uid == pod.uid and not qpi.gated

    def _gated_reason(self, qpi: QueuedPodInfo) -> str:
        """Why PreEnqueue holds a pod: schedulingGates' pods read "waiting for scheduling
        gates"; another PreEnqueue plugin (GangScheduling) gives its own message."""
        if qpi.gating_plugin in ("", "SchedulingGates"):
            return "waiting for scheduling gates"
        status = self._pre_enqueue(qpi.pod)
        return status.message if status is not None and status.message else "waiting for scheduling gates"

    def _finish(self, res: TimelineResult) -> None:
        res.end = self.clock.now()
        batches = [(name, fwk.batch) for name, fwk in self.profiles.items() if fwk.batch is not None]
        if batches:
            attempts: Counter[tuple[str, str]] = Counter()
            flushed: Counter[tuple[str, str]] = Counter()
            res.metrics.batch_attempts, res.metrics.batch_cache_flushed = attempts, flushed
            for name, batch in batches:
                attempts.update({(name, r): n for r, n in batch.attempts.items()})
                flushed.update({(name, r): n for r, n in batch.flushes.items()})
        for attempt, _ in self._in_flight:
            res.pending[attempt.pod.key] = "waiting at Permit"
        res.pending.update(self._gave_up)
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
                    res.pending[p.key] = self._gated_reason(qpi) if qpi is not None and qpi.gated else "not attempted"
        res.metrics.pending_pods = dict(self.queue.pending_counts())
        res.metrics.queue_incoming_pods = Counter(self.queue.incoming_pods)


def _all_plugins(fwk: Any) -> list[Any]:
    seen: dict[str, Any] = {}
    for point in ("PreEnqueue", "QueueSort", "PreFilter", "Filter", "PostFilter", "PreScore", "Score", "Reserve",
                  "Permit", "PreBind", "Bind", "PostBind"):
        for p in fwk.plugins_at(point):
            seen.setdefault(p.name, p)
    return list(seen.values())
