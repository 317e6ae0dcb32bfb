"""kube-scheduler v1.30's scheduling queue (pkg/scheduler/internal/queue/scheduling_queue.go:
PriorityQueue) with SchedulerQueueingHints off (the v1.30 default), single-threaded and
driven by an injected clock.

Three structures hold pending pods:

- activeQ: a heap in QueueSort order (PrioritySort: priority desc, then Timestamp asc);
  pop() takes its head.
- backoffQ: a heap by backoff expiry (Timestamp + backoff(Attempts)); flush_backoff_q_completed()
  moves expired entries to activeQ (upstream runs it every second).
- unschedulablePods: pods that failed and wait for a cluster event that may help, or are
  gated by a PreEnqueue plugin; flush_unschedulable_pods_leftover() moves those waiting
  longer than podMaxInUnschedulablePodsDuration (upstream runs it every 30 s).

Nothing here blocks or starts threads: the caller (scheduler loop or virtual-clock
simulation) calls the flushes; :meth:`SchedulingQueue.next_event_time` says when the next
one would move something.

Ties the upstream heap leaves to its implementation (equal QueueSort keys, equal backoff
expiries) are broken by QueuedPodInfo.seq, which the queue re-stamps whenever it stamps
Timestamp (pod added, pod put back after a failure): among equal timestamps the pod stamped
first goes first, as it would with a finer clock. The unschedulable pool (a Go map) is
walked in insertion order. Runs are therefore reproducible.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

from kubesched._queue._heap import KeyedHeap
from kubesched._queue.clock import Clock, RealClock
from kubesched._queue.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_UPDATE,
    BACKOFF_COMPLETE,
    FORCE_ACTIVATE,
    POD_ADD,
    SCHEDULE_ATTEMPT_FAILURE,
    UNSCHEDULABLE_TIMEOUT,
    RegisteredEvent,
    build_queueing_hint_map,
)
from kubesched._queue.nominator import PodLister, QueueNominator
from kubesched.errors import KubeschedError
from kubesched.framework import ClusterEvent, NominatingInfo, PodInfo, QueuedPodInfo, Status
from kubesched.objects import ObjectMeta, Pod

# Queue names: the `queue` label of scheduler_queue_incoming_pods_total / scheduler_pending_pods.
ACTIVE_Q = "active"
BACKOFF_Q = "backoff"
UNSCHEDULABLE_PODS = "unschedulable"
GATED = "gated"

SCHEDULING_GATES = "SchedulingGates"  # names.SchedulingGates

DEFAULT_POD_INITIAL_BACKOFF = 1.0
DEFAULT_POD_MAX_BACKOFF = 10.0
DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION = 300.0
BACKOFF_FLUSH_PERIOD = 1.0  # Run: wait.Until(flushBackoffQCompleted, 1s)
UNSCHEDULABLE_FLUSH_PERIOD = 30.0  # Run: wait.Until(flushUnschedulablePodsLeftover, 30s)

LessFunc = Callable[[QueuedPodInfo, QueuedPodInfo], bool]
PreEnqueueFunc = Callable[[Pod], Status | None]
PreEnqueueCheck = Callable[[Pod], bool]
NamespaceLabels = Callable[[str], Mapping[str, str] | None]
EventsByPlugin = Mapping[str, Sequence[RegisteredEvent]]

# queueingStrategy
_QUEUE_SKIP = 0
_QUEUE_AFTER_BACKOFF = 1
_QUEUE_IMMEDIATELY = 2


class QueueError(KubeschedError):
    """A queue operation was called for a pod in the wrong state (upstream returns an error
    the scheduler only logs)."""


def is_pod_updated(old: Pod, new: Pod) -> bool:
    """isPodUpdated: did anything change apart from resourceVersion, generation, status
    (except status.resourceClaimStatuses), managedFields and finalizers?

    Compares the typed spec/metadata fields (so replaced dataclasses count) and the raw
    manifests with those fields stripped (so unmodelled fields count too)."""
    if old is new:
        return False
    if _typed_fields(old) != _typed_fields(new):
        return True
    return _strip_raw(old.raw) != _strip_raw(new.raw)


# Status fields, the raw manifest and values derived from the spec are not compared.
_SKIPPED_POD_FIELDS = frozenset(("meta", "phase", "nominated_node_name", "start_time", "conditions", "raw",
                                 "requests", "non_zero_cpu", "non_zero_memory", "score_requests"))
_SKIPPED_META_FIELDS = frozenset(("resource_version",))


def _values(obj: Pod | ObjectMeta, skipped: frozenset[str]) -> tuple[object, ...]:
    names = [f.name for f in dataclasses.fields(obj)]
    return tuple(_plain(getattr(obj, n)) for n in names if n not in skipped)


def _plain(v: object) -> object:
    return dict(v) if isinstance(v, Mapping) else v


def _typed_fields(pod: Pod) -> tuple[object, ...]:
    return (_values(pod.meta, _SKIPPED_META_FIELDS), *_values(pod, _SKIPPED_POD_FIELDS))


def _strip_raw(raw: Mapping[str, object]) -> object:
    if not raw:
        return None
    out = {k: v for k, v in raw.items() if k != "status"}
    status = raw.get("status")
    if isinstance(status, Mapping) and status.get("resourceClaimStatuses"):
        out["status"] = {"resourceClaimStatuses": status["resourceClaimStatuses"]}
    meta = raw.get("metadata")
    if isinstance(meta, Mapping):
        out["metadata"] = {k: v for k, v in meta.items()
                           if k not in ("resourceVersion", "generation", "managedFields", "finalizers")}
    return out


class SchedulingQueue:
    """The PriorityQueue.

    ``less`` is the profile's QueueSort Less; ``pre_enqueue(pod)`` runs the PreEnqueue
    plugins and returns the first non-success Status with ``plugin`` set (Framework.
    run_pre_enqueue_plugins), or None. ``events_by_plugin`` is each plugin's registered
    events (see :func:`~kubesched._queue.events.events_by_plugin_of`); with several
    profiles pass ``events_by_profile`` (scheduler name -> events_by_plugin) instead, as
    upstream keys its hint map by profile. ``namespace_labels(ns)`` feeds the affinity
    namespaceSelector check of assigned-pod events; ``pod_lister(ns, name)`` is the
    nominator's liveness check (a pod gone or bound is not nominated).
    """

    def __init__(self, less: LessFunc, pre_enqueue: PreEnqueueFunc | None = None, clock: Clock | None = None, *,
                 pod_initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF,
                 pod_max_backoff: float = DEFAULT_POD_MAX_BACKOFF,
                 pod_max_in_unschedulable_pods_duration: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION,
                 events_by_plugin: EventsByPlugin | None = None,
                 events_by_profile: Mapping[str, EventsByPlugin] | None = None,
                 namespace_labels: NamespaceLabels | None = None,
                 pod_lister: PodLister | None = None,
                 nominator: QueueNominator | None = None) -> None:
        self._less = less
        self._pre_enqueue = pre_enqueue
        self.clock: Clock = clock if clock is not None else RealClock()
        self.pod_initial_backoff = float(pod_initial_backoff)
        self.pod_max_backoff = float(pod_max_backoff)
        self.pod_max_in_unschedulable_pods_duration = float(pod_max_in_unschedulable_pods_duration)
        self._namespace_labels = namespace_labels
        self.nominator = nominator if nominator is not None else QueueNominator(pod_lister)

        if events_by_plugin is not None and events_by_profile is not None:
            raise ValueError("pass events_by_plugin or events_by_profile, not both")
        self._per_profile = events_by_profile is not None
        self._hint_maps: dict[str, dict[ClusterEvent, list[str]]] = {}
        self._hint_map: dict[ClusterEvent, list[str]] = {}
        if events_by_profile is not None:
            self._hint_maps = {name: build_queueing_hint_map(m) for name, m in events_by_profile.items()}
        else:
            self._hint_map = build_queueing_hint_map(events_by_plugin or {})
        maps = list(self._hint_maps.values()) if self._per_profile else [self._hint_map]
        registered: dict[ClusterEvent, None] = {}
        for m in maps:
            registered.update(dict.fromkeys(m))
        self._registered = tuple(registered)

        self._active_q = KeyedHeap(self._active_before)
        self._backoff_q = KeyedHeap(self._backoff_before)
        self._unschedulable: dict[str, QueuedPodInfo] = {}

        # schedulingCycle: incremented by every pop. moveRequestCycle: the cycle at the last
        # move request for an event of interest; a pod failing in or before that cycle goes
        # to backoffQ instead of unschedulablePods (the event may have helped it).
        self.scheduling_cycle = 0
        self.move_request_cycle = -1
        self._seq = 0
        self.started_at = self.clock.now()

        # scheduler_queue_incoming_pods_total{queue, event}
        self.incoming_pods: Counter[tuple[str, str]] = Counter()
        # scheduler_unschedulable_pods{plugin, profile} (a gauge)
        self.unschedulable_reasons: Counter[tuple[str, str]] = Counter()

    # ================================================================ configuration views
    @property
    def registered_events(self) -> tuple[ClusterEvent, ...]:
        """Every registered event (all profiles), after the Node/Add taint rule."""
        return self._registered

    def hint_map(self, scheduler_name: str | None = None) -> dict[ClusterEvent, list[str]]:
        """Registered event -> plugins, for a profile (or the single map)."""
        if self._per_profile:
            return dict(self._hint_maps.get(scheduler_name or "", {}))
        return dict(self._hint_map)

    def run(self, now: float | None = None) -> None:
        """Run: the time the periodic flushes start (the phase of aligned next_event_time)."""
        self.started_at = self.clock.now() if now is None else now

    # ================================================================ ordering
    def _active_before(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        if self._less(a, b):
            return True
        return not self._less(b, a) and a.seq < b.seq

    def _backoff_before(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        ta, tb = self.backoff_time(a), self.backoff_time(b)
        return ta < tb or (ta == tb and a.seq < b.seq)

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    # ================================================================ backoff
    def backoff_duration(self, pinfo: QueuedPodInfo) -> float:
        """calculateBackoffDuration: initial, doubled (attempts-1) times, capped at max."""
        d = self.pod_initial_backoff
        for _ in range(1, pinfo.attempts):
            # Upstream compares by subtraction to avoid overflow; kept for identical capping.
            if d > self.pod_max_backoff - d:
                return self.pod_max_backoff
            d += d
        return d

    def backoff_time(self, pinfo: QueuedPodInfo) -> float:
        """getBackoffTime: when the pod's backoff completes."""
        return pinfo.timestamp + self.backoff_duration(pinfo)

    def is_pod_backing_off(self, pinfo: QueuedPodInfo) -> bool:
        """isPodBackingoff: a gated pod never is (it was never tried)."""
        if pinfo.gated:
            return False
        return self.backoff_time(pinfo) > self.clock.now()

    # ================================================================ events of interest
    def is_event_of_interest(self, event: ClusterEvent) -> bool:
        """isEventOfInterest: wildcard, or matching some plugin's registration."""
        if event.is_wildcard():
            return True
        return any(registered.match(event) for registered in self._registered)

    def _hint_map_for(self, pod: Pod) -> dict[ClusterEvent, list[str]] | None:
        if self._per_profile:
            return self._hint_maps.get(pod.scheduler_name)
        return self._hint_map

    def _is_pod_worth_requeuing(self, pinfo: QueuedPodInfo, event: ClusterEvent) -> int:
        """isPodWorthRequeuing with every hint "Queue" (hints off): a pod moves when a
        rejector plugin registered a matching event; Pending rejectors skip backoff."""
        rejectors = pinfo.unschedulable_plugins | pinfo.pending_plugins
        if not rejectors:
            # Failed for no plugin's reason (e.g. an Error): retry after backoff.
            return _QUEUE_AFTER_BACKOFF
        if event.is_wildcard():
            return _QUEUE_AFTER_BACKOFF
        hint_map = self._hint_map_for(pinfo.pod)
        if hint_map is None:
            return _QUEUE_AFTER_BACKOFF  # no map for the profile: upstream logs a bug and queues
        strategy = _QUEUE_SKIP
        for registered, plugins in hint_map.items():
            if not registered.match(event):
                continue
            for plugin in plugins:
                if plugin not in rejectors:
                    continue
                if plugin in pinfo.pending_plugins:
                    return _QUEUE_IMMEDIATELY
                if not pinfo.pending_plugins:
                    return _QUEUE_AFTER_BACKOFF
                strategy = _QUEUE_AFTER_BACKOFF
        return strategy

    # ================================================================ internal moves
    def new_queued_pod_info(self, pod: Pod, *plugins: str) -> QueuedPodInfo:
        """newQueuedPodInfo: timestamped now, optionally with rejector plugins."""
        return QueuedPodInfo(PodInfo(pod), timestamp=self.clock.now(), unschedulable_plugins=set(plugins),
                             seq=self._next_seq())

    def _adopt(self, pinfo: QueuedPodInfo) -> None:
        if pinfo.seq == 0:
            pinfo.seq = self._next_seq()

    def _count(self, queue: str, event: str) -> None:
        self.incoming_pods[(queue, event)] += 1

    def _reason(self, plugin: str, pod: Pod, delta: int) -> None:
        key = (plugin, pod.scheduler_name)
        n = self.unschedulable_reasons[key] + delta
        if n:
            self.unschedulable_reasons[key] = n
        else:
            del self.unschedulable_reasons[key]

    def _run_pre_enqueue(self, pinfo: QueuedPodInfo) -> bool:
        """runPreEnqueuePlugins: the first rejecting plugin becomes a rejector of the pod."""
        if self._pre_enqueue is None:
            return True
        status = self._pre_enqueue(pinfo.pod)
        if status is None or status.is_success():
            return True
        plugin = status.plugin or "PreEnqueue"
        pinfo.unschedulable_plugins.add(plugin)
        self._reason(plugin, pinfo.pod, 1)
        return False

    def _add_to_active_q(self, pinfo: QueuedPodInfo) -> bool:
        """addToActiveQ: PreEnqueue first; a gated pod goes to unschedulablePods instead."""
        self._adopt(pinfo)
        pinfo.gated = not self._run_pre_enqueue(pinfo)
        if pinfo.gated:
            self._unschedulable[pinfo.pod.key] = pinfo
            return False
        if pinfo.initial_attempt_timestamp is None:
            pinfo.initial_attempt_timestamp = self.clock.now()
        self._active_q.add(pinfo)
        return True

    def _requeue(self, pinfo: QueuedPodInfo, strategy: int, event: str) -> str:
        """requeuePodViaQueueingHint: the queue the pod lands in."""
        if strategy == _QUEUE_SKIP:
            self._unschedulable[pinfo.pod.key] = pinfo
            self._count(UNSCHEDULABLE_PODS, event)
            return UNSCHEDULABLE_PODS
        if strategy == _QUEUE_AFTER_BACKOFF and self.is_pod_backing_off(pinfo):
            self._backoff_q.add(pinfo)
            self._count(BACKOFF_Q, event)
            return BACKOFF_Q
        if self._add_to_active_q(pinfo):
            self._count(ACTIVE_Q, event)
            return ACTIVE_Q
        return UNSCHEDULABLE_PODS  # gated again: addToActiveQ put it back

    def _move_pods(self, pinfos: Iterable[QueuedPodInfo], event: ClusterEvent) -> int:
        """movePodsToActiveOrBackoffQueue; returns how many pods reached activeQ/backoffQ."""
        if not self.is_event_of_interest(event):
            return 0
        moved = 0
        for pinfo in list(pinfos):
            # Pods held by a scheduling gate only move on their own update; other gated
            # pods move so that their PreEnqueue plugins are asked again.
            if pinfo.gated and SCHEDULING_GATES in pinfo.unschedulable_plugins:
                continue
            strategy = self._is_pod_worth_requeuing(pinfo, event)
            if strategy == _QUEUE_SKIP:
                continue
            self._unschedulable.pop(pinfo.pod.key, None)
            if self._requeue(pinfo, strategy, event.label) != UNSCHEDULABLE_PODS:
                moved += 1
        self.move_request_cycle = self.scheduling_cycle
        return moved

    # ================================================================ SchedulingQueue API
    def add(self, pod: Pod) -> None:
        """Add: a new unscheduled pod; to activeQ unless a PreEnqueue plugin gates it."""
        pinfo = self.new_queued_pod_info(pod)
        if not self._add_to_active_q(pinfo):
            return
        key = pod.key
        self._unschedulable.pop(key, None)
        self._backoff_q.delete(key)
        self._count(ACTIVE_Q, POD_ADD)
        self.nominator.add_nominated_pod(pinfo.pod_info, None)

    def activate(self, pods: Iterable[Pod] | Mapping[str, Pod]) -> None:
        """Activate (PodsToActivate): move pods from unschedulablePods/backoffQ to activeQ."""
        for pod in (pods.values() if isinstance(pods, Mapping) else pods):
            self._activate(pod)

    def _activate(self, pod: Pod) -> bool:
        key = pod.key
        if key in self._active_q:
            return False
        pinfo = self._unschedulable.get(key) or self._backoff_q.get(key)
        if pinfo is None:
            return False
        if not self._add_to_active_q(pinfo):
            return False
        self._unschedulable.pop(key, None)
        self._backoff_q.delete(key)
        self._count(ACTIVE_Q, FORCE_ACTIVATE)
        self.nominator.add_nominated_pod(pinfo.pod_info, None)
        return True

    def add_unschedulable_if_not_present(self, pinfo: QueuedPodInfo, pod_scheduling_cycle: int) -> None:
        """AddUnschedulableIfNotPresent (addUnschedulableWithoutQueueingHint): the pod failed.
        Timestamp = now. To backoffQ if a move request came in during/after its cycle or no
        plugin rejected it; else to unschedulablePods. Raises QueueError if already queued."""
        key = pinfo.pod.key
        if key in self._unschedulable:
            raise QueueError(f"Pod {key} is already present in unschedulable queue")
        if key in self._active_q:
            raise QueueError(f"Pod {key} is already present in the active queue")
        if key in self._backoff_q:
            raise QueueError(f"Pod {key} is already present in the backoff queue")
        # Refresh the timestamp (and the tie-break order with it) since the pod is re-added.
        pinfo.timestamp = self.clock.now()
        pinfo.seq = self._next_seq()
        rejectors = pinfo.unschedulable_plugins | pinfo.pending_plugins
        for plugin in sorted(rejectors):
            self._reason(plugin, pinfo.pod, 1)
        if self.move_request_cycle >= pod_scheduling_cycle or not rejectors:
            self._backoff_q.add(pinfo)
            self._count(BACKOFF_Q, SCHEDULE_ATTEMPT_FAILURE)
        else:
            self._unschedulable[key] = pinfo
            self._count(UNSCHEDULABLE_PODS, SCHEDULE_ATTEMPT_FAILURE)
        self.nominator.add_nominated_pod(pinfo.pod_info, None)

    def pop(self) -> QueuedPodInfo | None:
        """Pop (non-blocking: None when activeQ is empty): Attempts += 1, a new scheduling
        cycle, and the rejector sets cleared for the new attempt."""
        pinfo = self._active_q.pop()
        if pinfo is None:
            return None
        pinfo.attempts += 1
        self.scheduling_cycle += 1
        for plugin in sorted(pinfo.unschedulable_plugins | pinfo.pending_plugins):
            self._reason(plugin, pinfo.pod, -1)
        pinfo.unschedulable_plugins.clear()
        pinfo.pending_plugins.clear()
        return pinfo

    def done(self, uid: str) -> None:
        """Done: in-flight tracking exists only with queueing hints on; nothing to do."""

    def update(self, old: Pod | None, new: Pod) -> None:
        """Update of an unscheduled pod: in place in activeQ/backoffQ; out of
        unschedulablePods (to backoffQ if still backing off, else activeQ) only when
        something other than status changed; an unknown pod is added."""
        if old is not None:
            for heap in (self._active_q, self._backoff_q):
                pinfo = heap.get(old.key)
                if pinfo is not None:
                    pinfo.pod_info = PodInfo(new)
                    self.nominator.update_nominated_pod(old, pinfo.pod_info)
                    heap.update(pinfo)
                    return
        pinfo = self._unschedulable.get(new.key)
        if pinfo is not None:
            pinfo.pod_info = PodInfo(new)
            self.nominator.update_nominated_pod(old if old is not None else new, pinfo.pod_info)
            if old is None or is_pod_updated(old, new):
                if self.is_pod_backing_off(pinfo):
                    self._backoff_q.add(pinfo)
                    del self._unschedulable[new.key]
                    return
                if self._add_to_active_q(pinfo):
                    del self._unschedulable[new.key]
                return
            # Only status changed: it cannot have become schedulable.
            self._unschedulable[new.key] = pinfo
            return
        pinfo = self.new_queued_pod_info(new)
        if not self._add_to_active_q(pinfo):
            return
        self.nominator.add_nominated_pod(pinfo.pod_info, None)

    def delete(self, pod: Pod) -> None:
        """Delete of an unscheduled pod, from whichever structure holds it."""
        self.nominator.delete_nominated_pod_if_exists(pod)
        key = pod.key
        if self._active_q.delete(key) is None:
            self._backoff_q.delete(key)
            self._unschedulable.pop(key, None)

    def move_all_to_active_or_backoff_queue(self, event: ClusterEvent,
                                            pre_check: PreEnqueueCheck | None = None) -> int:
        """MoveAllToActiveOrBackoffQueue: every unschedulable pod passing ``pre_check``
        (e.g. preCheckForNode on NodeAdd) is considered for ``event``. Returns how many
        pods reached activeQ/backoffQ."""
        if not self.is_event_of_interest(event):
            return 0
        pinfos = [p for p in self._unschedulable.values() if pre_check is None or pre_check(p.pod)]
        return self._move_pods(pinfos, event)

    def assigned_pod_added(self, pod: Pod) -> int:
        """AssignedPodAdded: only pods with a required affinity term matching ``pod``."""
        return self._move_pods(self._with_matching_affinity_term(pod), ASSIGNED_POD_ADD)

    def assigned_pod_updated(self, old: Pod, new: Pod) -> int:
        """AssignedPodUpdated (InPlacePodVerticalScaling off: always the affinity filter)."""
        return self._move_pods(self._with_matching_affinity_term(new), ASSIGNED_POD_UPDATE)

    def _with_matching_affinity_term(self, pod: Pod) -> list[QueuedPodInfo]:
        """getUnschedulablePodsWithMatchingAffinityTerm."""
        ns_labels = self._namespace_labels(pod.namespace) if self._namespace_labels is not None else None
        return [p for p in self._unschedulable.values()
                if any(t.matches(pod, ns_labels) for t in p.pod_info.required_affinity_terms)]

    def flush_backoff_q_completed(self) -> int:
        """flushBackoffQCompleted: expired backoffQ entries to activeQ (PreEnqueue re-run).
        Returns how many reached activeQ."""
        moved = 0
        while True:
            head = self._backoff_q.peek()
            if head is None or self.is_pod_backing_off(head):
                break
            self._backoff_q.pop()
            if self._add_to_active_q(head):
                self._count(ACTIVE_Q, BACKOFF_COMPLETE)
                moved += 1
        return moved

    def flush_unschedulable_pods_leftover(self) -> int:
        """flushUnschedulablePodsLeftover: pods unschedulable for strictly longer than
        podMaxInUnschedulablePodsDuration move with the wildcard UnschedulableTimeout.
        Returns how many reached activeQ/backoffQ."""
        now = self.clock.now()
        limit = self.pod_max_in_unschedulable_pods_duration
        stale = [p for p in self._unschedulable.values() if now - p.timestamp > limit]
        return self._move_pods(stale, UNSCHEDULABLE_TIMEOUT) if stale else 0

    # ================================================================ virtual time
    def next_event_time(self, *, aligned: bool = False) -> float | None:
        """The earliest time a flush would move a pod: the backoffQ head's expiry, or the
        first time an unschedulable pod's wait exceeds podMaxInUnschedulablePodsDuration.
        Gated pods are not counted (they leave on their own update). With ``aligned``, the
        time of the flush tick (every 1 s / 30 s from :attr:`started_at`) that would do it,
        as upstream's periodic loops would; otherwise the exact instant. None: nothing waits."""
        times: list[float] = []
        head = self._backoff_q.peek()
        if head is not None:
            expiry = self.backoff_time(head)
            times.append(self._tick(BACKOFF_FLUSH_PERIOD, expiry, lambda t: not expiry > t) if aligned else expiry)
        stamps = [p.timestamp for p in self._unschedulable.values() if not p.gated]
        if stamps:
            ts = min(stamps)
            limit = self.pod_max_in_unschedulable_pods_duration

            def due(t: float) -> bool:
                return t - ts > limit

            if aligned:
                times.append(self._tick(UNSCHEDULABLE_FLUSH_PERIOD, ts + limit, due))
            else:
                t = ts + limit
                while not due(t):
                    t = math.nextafter(t, math.inf)
                times.append(t)
        return min(times) if times else None

    def _tick(self, period: float, lower: float, ok: Callable[[float], bool]) -> float:
        """The first flush tick (started_at + k*period, k >= 0) at which ``ok`` holds."""
        start = self.started_at
        k = max(0, math.ceil((lower - start) / period))
        while not ok(start + k * period):
            k += 1
        while k > 0 and ok(start + (k - 1) * period):
            k -= 1
        return start + k * period

    # ================================================================ introspection / metrics
    def __len__(self) -> int:
        return len(self._active_q) + len(self._backoff_q) + len(self._unschedulable)

    def get(self, pod: Pod) -> QueuedPodInfo | None:
        """The queued entry for ``pod`` (by namespace/name), wherever it is."""
        key = pod.key
        return self._active_q.get(key) or self._backoff_q.get(key) or self._unschedulable.get(key)

    def queue_of(self, pod: Pod) -> str | None:
        """"active", "backoff", "unschedulable", "gated" (an unschedulable gated pod) or None."""
        key = pod.key
        if key in self._active_q:
            return ACTIVE_Q
        if key in self._backoff_q:
            return BACKOFF_Q
        pinfo = self._unschedulable.get(key)
        if pinfo is not None:
            return GATED if pinfo.gated else UNSCHEDULABLE_PODS
        return None

    def pods_in_active_q(self) -> list[Pod]:
        """PodsInActiveQ, in pop order."""
        return [p.pod for p in self._active_q.sorted()]

    def pods_in_backoff_q(self) -> list[Pod]:
        """In backoff-expiry order."""
        return [p.pod for p in self._backoff_q.sorted()]

    def unschedulable_pods(self) -> list[Pod]:
        """unschedulablePods (gated ones included), in insertion order."""
        return [p.pod for p in self._unschedulable.values()]

    def pending_pods(self) -> list[Pod]:
        """PendingPods: activeQ, backoffQ, then unschedulablePods."""
        return self.pods_in_active_q() + self.pods_in_backoff_q() + self.unschedulable_pods()

    def pending_pods_summary(self) -> str:
        """PendingPods' summary string."""
        return (f"activeQ:{len(self._active_q)}; backoffQ:{len(self._backoff_q)}; "
                f"unschedulablePods:{len(self._unschedulable)}")

    def pending_counts(self) -> dict[str, int]:
        """scheduler_pending_pods{queue}: active, backoff, unschedulable (tried and failed),
        gated (held by PreEnqueue, never tried)."""
        gated = sum(1 for p in self._unschedulable.values() if p.gated)
        return {ACTIVE_Q: len(self._active_q), BACKOFF_Q: len(self._backoff_q),
                UNSCHEDULABLE_PODS: len(self._unschedulable) - gated, GATED: gated}

    @property
    def num_active(self) -> int:
        return len(self._active_q)

    @property
    def num_backoff(self) -> int:
        return len(self._backoff_q)

    @property
    def num_unschedulable(self) -> int:
        return self.pending_counts()[UNSCHEDULABLE_PODS]

    @property
    def num_gated(self) -> int:
        return self.pending_counts()[GATED]

    # ================================================================ nominator (PodNominator)
    def add_nominated_pod(self, pod_info: PodInfo, nominating_info: NominatingInfo | None = None) -> None:
        self.nominator.add_nominated_pod(pod_info, nominating_info)

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        self.nominator.delete_nominated_pod_if_exists(pod)

    def update_nominated_pod(self, old_pod: Pod, new_pod_info: PodInfo) -> None:
        self.nominator.update_nominated_pod(old_pod, new_pod_info)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return self.nominator.nominated_pods_for_node(node_name)
