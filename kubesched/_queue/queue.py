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
import functools
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
    HintEntry,
    RegisteredEvent,
    as_136,
    build_hint_fn_map,
    build_queueing_hint_map,
    event_136,
    pod_update_events,
)
from kubesched._queue.nominator import PodLister, QueueNominator
from kubesched.errors import KubeschedError
from kubesched.features import FEATURES_1_30, Features
from kubesched.framework import (
    GVK,
    ActionType,
    ClusterEvent,
    NominatingInfo,
    PodInfo,
    QueuedPodInfo,
    QueueingHint,
    Status,
)
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
# backoff_queue.go: backoffQOrderingWindowDuration (SchedulerPopFromBackoffQ): expiries are
# truncated to whole seconds and the flush runs at each whole second.
BACKOFF_ORDERING_WINDOW = 1.0

# 1.36 queue-internal event labels (framework/events.go).
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"
UNSCHEDULED_POD_ADD_136 = event_136(GVK.UNSCHEDULABLE_POD, ActionType.ADD)
UNSCHEDULED_POD_UPDATE_136 = event_136(GVK.UNSCHEDULABLE_POD, ActionType.UPDATE)
FORCE_ACTIVATE_EVENT = ClusterEvent(GVK.WILDCARD, ActionType.ALL, FORCE_ACTIVATE)

LessFunc = Callable[[QueuedPodInfo, QueuedPodInfo], bool]
PreEnqueueFunc = Callable[[Pod], Status | None]
PreEnqueueCheck = Callable[[Pod], bool]
NamespaceLabels = Callable[[str], Mapping[str, str] | None]
EventsByPlugin = Mapping[str, Sequence[RegisteredEvent]]

# queueingStrategy
_QUEUE_SKIP = 0
_QUEUE_AFTER_BACKOFF = 1
_QUEUE_IMMEDIATELY = 2

# AssignedPodUpdated's test for a scale-down among the update's events (1.36).
_SCALE_DOWN = ClusterEvent(GVK.POD, ActionType.UPDATE_POD_SCALE_DOWN)


def _expired(expiry: float, t: float) -> bool:
    return not expiry > t


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
                 nominator: QueueNominator | None = None,
                 features: Features | None = None) -> None:
        self._less = less
        # v1.30's queue unless told otherwise (this class's tests pin v1.30 tables); the
        # simulators and `run` pass the release in force.
        self.features = features if features is not None else FEATURES_1_30
        self._hints = self.features.enabled("SchedulerQueueingHints")
        self._pop_from_backoff = self.features.enabled("SchedulerPopFromBackoffQ")
        # MatchClusterEvents' specificity rule and the cross-topology pod moves came with the
        # fine-grained pod events.
        self._specific_events = self.features.enabled("FineGrainedQueueEvents")
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
        self._hint_fn_maps: dict[str, dict[ClusterEvent, list[HintEntry]]] = {}
        self._hint_fn_map: dict[ClusterEvent, list[HintEntry]] = {}
        if events_by_profile is not None:
            self._hint_maps = {name: build_queueing_hint_map(m) for name, m in events_by_profile.items()}
            self._hint_fn_maps = {name: build_hint_fn_map(m) for name, m in events_by_profile.items()}
        else:
            self._hint_map = build_queueing_hint_map(events_by_plugin or {})
            self._hint_fn_map = build_hint_fn_map(events_by_plugin or {})
        # plugin -> its registered events (buildEventMap): a gated pod moves only on its
        # gating plugin's events (1.36).
        self._plugin_events: dict[str, list[ClusterEvent]] = {}
        for fm in (list(self._hint_fn_maps.values()) if events_by_profile is not None else [self._hint_fn_map]):
            for ev, entries in fm.items():
                for plugin, _ in entries:
                    self._plugin_events.setdefault(plugin, []).append(ev)
        maps = list(self._hint_maps.values()) if self._per_profile else [self._hint_map]
        registered: dict[ClusterEvent, None] = {}
        for m in maps:
            registered.update(dict.fromkeys(m))
        self._registered = tuple(registered)
        # is_event_of_interest per (resource, actions, label): the registrations never change.
        self._interest: dict[tuple[str, int, str], bool] = {}
        # A hint map's entries whose registration matches an incoming event, in the map's order,
        # per (map, resource, actions): the same registrations, matched once (_matching_entries).
        self._hint_matches: dict[tuple[int, str, int], tuple[HintEntry, ...]] = {}
        self._gating_matches: dict[tuple[str, str, int], bool] = {}

        self._active_q = KeyedHeap(self._active_before)
        self._backoff_q = KeyedHeap(self._backoff_before)
        # 1.36: pods that failed with an Error back off in their own heap (podErrorBackoffQ),
        # never popped early.
        self._error_backoff_q = KeyedHeap(self._error_backoff_before)
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        # 1.36 in-flight tracking (active_queue.go: inFlightPods / inFlightEvents): each popped
        # pod's position in the event log; events are logged while any pod is in flight.
        self._in_flight: dict[str, int] = {}
        self._in_flight_log: list[tuple[ClusterEvent, object | None, object | None]] = []
        self._log_base = 0

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
        if ta != tb:
            return ta < tb
        if self._pop_from_backoff:
            # lessBackoffCompletedWithPriority: equal windows pop in activeQ order.
            return self._active_before(a, b)
        return a.seq < b.seq

    def _error_backoff_before(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        ta, tb = self.backoff_time(a), self.backoff_time(b)
        return ta < tb or (ta == tb and a.seq < b.seq)

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    # ================================================================ backoff
    def backoff_duration(self, pinfo: QueuedPodInfo) -> float:
        """calculateBackoffDuration: initial, doubled (n-1) times, capped at max; n is the
        pod's attempts (v1.30) or, in 1.36, its rejections (UnschedulableCount, or
        ConsecutiveErrorsCount while it keeps failing with errors)."""
        n = self._backoff_count(pinfo) if self._hints else pinfo.attempts
        if self._hints and n == 0:
            return 0.0
        d = self.pod_initial_backoff
        for _ in range(1, n):
            # Upstream compares by subtraction to avoid overflow; kept for identical capping.
            if d > self.pod_max_backoff - d:
                return self.pod_max_backoff
            d += d
        return d

    @staticmethod
    def _backoff_count(pinfo: QueuedPodInfo) -> int:
        return pinfo.consecutive_errors_count if pinfo.consecutive_errors_count > 0 else pinfo.unschedulable_count

    def _align(self, t: float) -> float:
        """alignToWindow: truncated to the ordering window with SchedulerPopFromBackoffQ."""
        if not self._pop_from_backoff:
            return t
        return math.floor(t / BACKOFF_ORDERING_WINDOW) * BACKOFF_ORDERING_WINDOW

    def backoff_time(self, pinfo: QueuedPodInfo) -> float:
        """getBackoffTime: when the pod's backoff completes. 1.36: -inf (zero time) for a pod
        never rejected or with podMaxBackoff 0; computed once per failure and aligned."""
        if not self._hints:
            return pinfo.timestamp + self.backoff_duration(pinfo)
        # Kept until the next failure (_add_unschedulable resets it with the counts it reads).
        expiry = pinfo.backoff_expiration
        if expiry is not None:
            return expiry
        if self.pod_max_backoff == 0 or self._backoff_count(pinfo) == 0:
            return -math.inf
        expiry = pinfo.backoff_expiration = self._align(pinfo.timestamp + self.backoff_duration(pinfo))
        return expiry

    def is_pod_backing_off(self, pinfo: QueuedPodInfo) -> bool:
        """isPodBackingoff. v1.30: a gated pod never is (it was never tried); expiry > now.
        1.36: !expiry.Before(alignToWindow(now)) -- the window the expiry falls in must have
        passed."""
        if not self._hints:
            if pinfo.gated:
                return False
            return self.backoff_time(pinfo) > self.clock.now()
        return not self.backoff_time(pinfo) < self._align(self.clock.now())

    # ================================================================ events of interest
    def is_event_of_interest(self, event: ClusterEvent) -> bool:
        """isEventOfInterest: wildcard, or matching some plugin's registration."""
        key = (event.resource, event.actions, event.label)
        got = self._interest.get(key)
        if got is None:
            got = self._interest[key] = event.is_wildcard() or any(
                self._match(registered, event) for registered in self._registered)
        return got

    def _gating_plugin_matches(self, plugin: str, event: ClusterEvent) -> bool:
        """Whether the plugin gating a pod registered an event matching ``event`` (1.36),
        per (plugin, resource, actions): the registrations never change."""
        key = (plugin, event.resource, event.actions)
        got = self._gating_matches.get(key)
        if got is None:
            got = self._gating_matches[key] = any(
                self._match(e, event) for e in self._plugin_events.get(plugin, []))
        return got

    def _match(self, registered: ClusterEvent, incoming: ClusterEvent) -> bool:
        return registered.match_136(incoming) if self._specific_events else registered.match(incoming)

    def _hint_map_for(self, pod: Pod) -> dict[ClusterEvent, list[str]] | None:
        if self._per_profile:
            return self._hint_maps.get(pod.scheduler_name)
        return self._hint_map

    def _is_pod_worth_requeuing(self, pinfo: QueuedPodInfo, event: ClusterEvent,
                                old: object | None = None, new: object | None = None) -> int:
        """isPodWorthRequeuing: a pod moves when a rejector plugin registered a matching
        event and (1.36) its QueueingHintFn says Queue for the event's objects; Pending
        rejectors skip backoff. v1.30 (hints off): every hint is Queue."""
        rejectors = pinfo.unschedulable_plugins | pinfo.pending_plugins
        if not rejectors:
            # Failed for no plugin's reason (e.g. an Error): retry after backoff.
            return _QUEUE_AFTER_BACKOFF
        if event.is_wildcard():
            # 1.36: a wildcard event about another pod (ForceActivate) leaves this one.
            if self._hints and new is not None and (not isinstance(new, Pod) or new.uid != pinfo.pod.uid):
                return _QUEUE_SKIP
            return _QUEUE_AFTER_BACKOFF
        entries = self._matching_entries(pinfo.pod, event)
        if entries is None:
            # No map for the profile: upstream logs a bug (1.36: "No QueueingHintMap is
            # registered for this profile") and queues.
            return _QUEUE_AFTER_BACKOFF
        strategy = _QUEUE_SKIP
        for plugin, hint_fn in entries:
            if plugin not in rejectors:
                continue
            if hint_fn is not None:  # 1.36's QueueingHintFn; v1.30's entries have none (Queue)
                try:
                    hint = hint_fn(pinfo.pod, old, new)
                except Exception:  # noqa: BLE001 - upstream: a hint's error counts as Queue
                    hint = QueueingHint.QUEUE
                if hint == QueueingHint.QUEUE_SKIP:
                    continue
            if plugin in pinfo.pending_plugins:
                return _QUEUE_IMMEDIATELY
            if not pinfo.pending_plugins:
                return _QUEUE_AFTER_BACKOFF
            strategy = _QUEUE_AFTER_BACKOFF
        return strategy

    def _matching_entries(self, pod: Pod, event: ClusterEvent) -> tuple[HintEntry, ...] | None:
        """The (plugin, hint function) entries of the pod's profile whose registered event
        matches ``event``, in the map's order; None when the profile has no map. 1.36: the
        hint map with its QueueingHintFns; v1.30 (hints off): the plugin names, each with no
        function (every hint is Queue). Kept per (map, resource, actions): matching reads
        nothing else and the registrations never change."""
        table: Mapping[ClusterEvent, Sequence[HintEntry] | Sequence[str]] | None
        if self._hints:
            table = self._hint_fn_maps.get(pod.scheduler_name) if self._per_profile else self._hint_fn_map
        else:
            table = self._hint_map_for(pod)
        if table is None:
            return None
        key = (id(table), event.resource, event.actions)
        got = self._hint_matches.get(key)
        if got is None:
            got = self._hint_matches[key] = tuple(
                entry if isinstance(entry, tuple) else (entry, None)
                for registered, entries in table.items() if self._match_registered(registered, event)
                for entry in entries)
        return got

    def _match_registered(self, registered: ClusterEvent, incoming: ClusterEvent) -> bool:
        """isPodWorthRequeuing's match: 1.36's rules with its hints; v1.30's Match without."""
        return self._match(registered, incoming) if self._hints else registered.match(incoming)

    # ================================================================ in-flight pods (1.36)
    def _log_event(self, event: ClusterEvent, old: object | None, new: object | None) -> None:
        """addEventIfAnyInFlight: kept while some popped pod has not called Done."""
        if self._in_flight:
            self._in_flight_log.append((event, old, new))

    def _events_since_pop(self, uid: str) -> list[tuple[ClusterEvent, object | None, object | None]]:
        """clusterEventsForPod: the events logged after the pod was popped."""
        pos = self._in_flight.get(uid)
        if pos is None:
            return []
        return self._in_flight_log[pos - self._log_base:]

    def in_flight_pods(self) -> list[str]:
        """InFlightPods' uids (1.36)."""
        return list(self._in_flight)

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
            pinfo.gating_plugin = ""
            return True
        plugin = status.plugin or "PreEnqueue"
        pinfo.unschedulable_plugins.add(plugin)
        pinfo.gating_plugin = plugin
        self._reason(plugin, pinfo.pod, 1)
        return False

    def _add_to_active_q(self, pinfo: QueuedPodInfo, from_backoff: bool = False) -> bool:
        """addToActiveQ / moveToActiveQ: PreEnqueue first (1.36 skips it for a pod leaving
        backoffQ, checked on the way in); a gated pod goes to unschedulablePods instead."""
        self._adopt(pinfo)
        if not (self._pop_from_backoff and from_backoff):
            pinfo.gated = not self._run_pre_enqueue(pinfo)
        if pinfo.gated:
            if self._hints and (pinfo.pod.key in self._active_q or self._in_backoff(pinfo.pod.key)):
                return False
            self._unschedulable[pinfo.pod.key] = pinfo
            return False
        if pinfo.initial_attempt_timestamp is None:
            pinfo.initial_attempt_timestamp = self.clock.now()
        self._active_q.add(pinfo)
        return True

    def _in_backoff(self, key: str) -> bool:
        return key in self._backoff_q or key in self._error_backoff_q

    def _add_to_backoff_q(self, pinfo: QueuedPodInfo, event: str) -> bool:
        """moveToBackoffQ (+ backoffQueue.add). 1.36 with SchedulerPopFromBackoffQ runs
        PreEnqueue first (the pod may be popped from backoffQ directly): a gated pod stays in
        unschedulablePods. Error-failed pods go to the error heap."""
        if self._pop_from_backoff:
            self._adopt(pinfo)
            pinfo.gated = not self._run_pre_enqueue(pinfo)
            if pinfo.gated:
                self._unschedulable[pinfo.pod.key] = pinfo
                return False
        self._unschedulable.pop(pinfo.pod.key, None)
        if self._hints and not (pinfo.unschedulable_plugins or pinfo.pending_plugins):
            self._backoff_q.delete(pinfo.pod.key)
            self._error_backoff_q.add(pinfo)
        else:
            self._error_backoff_q.delete(pinfo.pod.key)
            self._backoff_q.add(pinfo)
        self._count(BACKOFF_Q, event)
        return True

    def _requeue(self, pinfo: QueuedPodInfo, strategy: int, event: str) -> str:
        """requeuePodWithQueueingStrategy: the queue the pod lands in."""
        if strategy == _QUEUE_SKIP:
            self._unschedulable[pinfo.pod.key] = pinfo
            self._count(UNSCHEDULABLE_PODS, event)
            return UNSCHEDULABLE_PODS
        if strategy == _QUEUE_AFTER_BACKOFF and self.is_pod_backing_off(pinfo):
            if self._hints:
                return BACKOFF_Q if self._add_to_backoff_q(pinfo, event) else UNSCHEDULABLE_PODS
            self._backoff_q.add(pinfo)
            self._count(BACKOFF_Q, event)
            return BACKOFF_Q
        if self._add_to_active_q(pinfo):
            self._count(ACTIVE_Q, event)
            return ACTIVE_Q
        return UNSCHEDULABLE_PODS  # gated again: addToActiveQ put it back

    def _move_pods(self, pinfos: Iterable[QueuedPodInfo], event: ClusterEvent,
                   old: object | None = None, new: object | None = None) -> int:
        """movePodsToActiveOrBackoffQueue; returns how many pods reached activeQ/backoffQ.
        ``old``/``new`` are the event's objects, for the 1.36 queueing hints."""
        if not self.is_event_of_interest(event):
            return 0
        moved = 0
        for pinfo in list(pinfos):
            if pinfo.gated:
                if self._hints:
                    # 1.36: a gated pod moves only on an event its gating plugin registered.
                    if not self._gating_plugin_matches(pinfo.gating_plugin, event):
                        continue
                elif SCHEDULING_GATES in pinfo.unschedulable_plugins:
                    # Pods held by a scheduling gate only move on their own update; other
                    # gated pods move so that their PreEnqueue plugins are asked again.
                    continue
            strategy = self._is_pod_worth_requeuing(pinfo, event, old, new)
            if strategy == _QUEUE_SKIP:
                continue
            self._unschedulable.pop(pinfo.pod.key, None)
            if self._requeue(pinfo, strategy, event.label) != UNSCHEDULABLE_PODS:
                moved += 1
        self.move_request_cycle = self.scheduling_cycle
        if self._hints:
            self._log_event(event, old, new)
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
        self._error_backoff_q.delete(key)
        self._count(ACTIVE_Q, UNSCHEDULED_POD_ADD_136.label if self._hints else POD_ADD)
        self.nominator.add_nominated_pod(pinfo.pod_info, None)

    def activate(self, pods: Iterable[Pod] | Mapping[str, Pod]) -> None:
        """Activate (PodsToActivate): move pods from unschedulablePods/backoffQ to activeQ.
        1.36: a pod in flight gets a ForceActivate event instead (so its failure requeues it)."""
        for pod in (pods.values() if isinstance(pods, Mapping) else pods):
            if self._activate(pod):
                continue
            if self._hints:
                if pod.uid in self._in_flight:
                    self._in_flight_log.append((FORCE_ACTIVATE_EVENT, None, pod))
                self.move_request_cycle = self.scheduling_cycle

    def _activate(self, pod: Pod) -> bool:
        key = pod.key
        if key in self._active_q:
            return False
        from_backoff = False
        pinfo = self._unschedulable.get(key)
        if pinfo is None:
            pinfo = self._backoff_q.get(key) or self._error_backoff_q.get(key)
            from_backoff = pinfo is not None
        if pinfo is None:
            return False
        if from_backoff and self._pop_from_backoff:
            # activate() deletes it from backoffQ first, then moveToActiveQ skips PreEnqueue.
            self._backoff_q.delete(key)
            self._error_backoff_q.delete(key)
        if not self._add_to_active_q(pinfo, from_backoff=from_backoff):
            return False
        self._unschedulable.pop(key, None)
        self._backoff_q.delete(key)
        self._error_backoff_q.delete(key)
        self._count(ACTIVE_Q, FORCE_ACTIVATE)
        self.nominator.add_nominated_pod(pinfo.pod_info, None)
        return True

    def add_unschedulable_if_not_present(self, pinfo: QueuedPodInfo, pod_scheduling_cycle: int) -> None:
        """AddUnschedulableIfNotPresent (addUnschedulableWithoutQueueingHint): the pod failed.
        Timestamp = now. To backoffQ if a move request came in during/after its cycle or no
        plugin rejected it; else to unschedulablePods. Raises QueueError if already queued."""
        key = pinfo.pod.key
        try:
            if key in self._unschedulable:
                raise QueueError(f"Pod {key} is already present in unschedulable queue")
            if key in self._active_q:
                raise QueueError(f"Pod {key} is already present in the active queue")
            if self._in_backoff(key):
                raise QueueError(f"Pod {key} is already present in the backoff queue")
            self._add_unschedulable(pinfo, pod_scheduling_cycle)
        finally:
            self.done(pinfo.pod.uid)  # defer p.Done(pInfo.Pod.UID)

    def _add_unschedulable(self, pinfo: QueuedPodInfo, pod_scheduling_cycle: int) -> None:
        key = pinfo.pod.key
        rejectors = pinfo.unschedulable_plugins | pinfo.pending_plugins
        if self._hints:
            # 1.36: backoff counts rejections; errors count apart and reset by a rejection.
            if rejectors:
                pinfo.unschedulable_count += 1
                pinfo.consecutive_errors_count = 0
            else:
                pinfo.consecutive_errors_count += 1
            pinfo.backoff_expiration = None
        # Refresh the timestamp (and the tie-break order with it) since the pod is re-added.
        pinfo.timestamp = self.clock.now()
        pinfo.seq = self._next_seq()
        for plugin in sorted(rejectors):
            self._reason(plugin, pinfo.pod, 1)
        if self._hints:
            # determineSchedulingHintForInFlightPod: the events seen while it was in flight.
            strategy = _QUEUE_AFTER_BACKOFF if not rejectors else self._hint_for_in_flight(pinfo)
            self._requeue(pinfo, strategy, SCHEDULE_ATTEMPT_FAILURE)
            self.nominator.add_nominated_pod(pinfo.pod_info, None)
            return
        if self.move_request_cycle >= pod_scheduling_cycle or not rejectors:
            self._backoff_q.add(pinfo)
            self._count(BACKOFF_Q, SCHEDULE_ATTEMPT_FAILURE)
        else:
            self._unschedulable[key] = pinfo
            self._count(UNSCHEDULABLE_PODS, SCHEDULE_ATTEMPT_FAILURE)
        self.nominator.add_nominated_pod(pinfo.pod_info, None)

    def _hint_for_in_flight(self, pinfo: QueuedPodInfo) -> int:
        strategy = _QUEUE_SKIP
        for event, old, new in self._events_since_pop(pinfo.pod.uid):
            s = self._is_pod_worth_requeuing(pinfo, event, old, new)
            if s == _QUEUE_IMMEDIATELY:
                return _QUEUE_IMMEDIATELY
            if s == _QUEUE_AFTER_BACKOFF:
                strategy = _QUEUE_AFTER_BACKOFF
                if not pinfo.pending_plugins:
                    return _QUEUE_AFTER_BACKOFF
        return strategy

    def pop(self) -> QueuedPodInfo | None:
        """Pop (non-blocking: None when nothing can be popped): Attempts += 1, a new
        scheduling cycle, and the rejector sets cleared for the new attempt. 1.36 with
        SchedulerPopFromBackoffQ: an empty activeQ pops backoffQ's head, backoff or not; the
        popped pod is in flight until :meth:`done`."""
        pinfo = self._active_q.pop()
        if pinfo is None and self._pop_from_backoff:
            pinfo = self._backoff_q.pop()
            if pinfo is not None:
                self._count(ACTIVE_Q, POP_FROM_BACKOFF_Q)
        if pinfo is None:
            return None
        pinfo.attempts += 1
        if self._hints:
            self._in_flight[pinfo.pod.uid] = self._log_base + len(self._in_flight_log)
        self.scheduling_cycle += 1
        for plugin in sorted(pinfo.unschedulable_plugins | pinfo.pending_plugins):
            self._reason(plugin, pinfo.pod, -1)
        pinfo.unschedulable_plugins.clear()
        pinfo.pending_plugins.clear()
        return pinfo

    def done(self, uid: str) -> None:
        """Done: the pod's scheduling (and binding) ended; forget its in-flight events.
        In-flight tracking exists only with queueing hints on (1.36)."""
        if self._in_flight.pop(uid, None) is None:
            return
        if not self._in_flight:
            self._log_base += len(self._in_flight_log)
            self._in_flight_log.clear()
            return
        first = min(self._in_flight.values())
        drop = first - self._log_base
        if drop > 0:
            del self._in_flight_log[:drop]
            self._log_base = first

    def update(self, old: Pod | None, new: Pod) -> None:
        """Update of an unscheduled pod: in place in activeQ/backoffQ; out of
        unschedulablePods (to backoffQ if still backing off, else activeQ) only when
        something other than status changed; an unknown pod is added. 1.36: the update's
        PodSchedulingPropertiesChange events go through the queueing hints instead, and an
        in-flight pod's update is logged for its failure to replay."""
        if self._hints:
            self._update_with_hints(old, new)
            return
        if self._update_in_heaps(old, new, (self._active_q, self._backoff_q)):
            return
        pinfo = self._unschedulable_updated(old, new)
        if pinfo is not None:
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

    def _update_in_heaps(self, old: Pod | None, new: Pod, heaps: Iterable[KeyedHeap]) -> bool:
        """A queued pod's update in place (activeQ, backoffQ): True when one held it."""
        if old is None:
            return False
        for heap in heaps:
            pinfo = heap.get(old.key)
            if pinfo is not None:
                pinfo.pod_info = PodInfo(new)
                self.nominator.update_nominated_pod(old, pinfo.pod_info)
                heap.update(pinfo)
                return True
        return False

    def _unschedulable_updated(self, old: Pod | None, new: Pod) -> QueuedPodInfo | None:
        """The unschedulablePods entry of the pod, given its new version (None: not there)."""
        pinfo = self._unschedulable.get(new.key)
        if pinfo is not None:
            pinfo.pod_info = PodInfo(new)
            self.nominator.update_nominated_pod(old if old is not None else new, pinfo.pod_info)
        return pinfo

    def _update_with_hints(self, old: Pod | None, new: Pod) -> None:
        evs = pod_update_events(old, new, self.features.enabled("DynamicResourceAllocation")) if old is not None \
            else [UNSCHEDULED_POD_UPDATE_136]
        if new.uid in self._in_flight:
            for ev in evs:  # addEventsIfPodInFlight
                self._in_flight_log.append((ev, old, new))
            return
        if self._update_in_heaps(old, new, (self._active_q, self._backoff_q, self._error_backoff_q)):
            return
        pinfo = self._unschedulable_updated(old, new)
        if pinfo is not None:
            for ev in evs:
                strategy = self._is_pod_worth_requeuing(pinfo, ev, old, new)
                if strategy != _QUEUE_SKIP:
                    self._unschedulable.pop(new.key, None)
                queue = self._requeue(pinfo, strategy, ev.label)
                if queue == ACTIVE_Q or (self._pop_from_backoff and queue == BACKOFF_Q):
                    break
            return
        pinfo = self.new_queued_pod_info(new)
        if self._add_to_active_q(pinfo):
            self._count(ACTIVE_Q, UNSCHEDULED_POD_UPDATE_136.label)
            self.nominator.add_nominated_pod(pinfo.pod_info, None)

    def delete(self, pod: Pod) -> None:
        """Delete of an unscheduled pod, from whichever structure holds it."""
        self.nominator.delete_nominated_pod_if_exists(pod)
        key = pod.key
        if self._active_q.delete(key) is None:
            if self._backoff_q.delete(key) is None:
                self._error_backoff_q.delete(key)
            self._unschedulable.pop(key, None)

    def move_all_to_active_or_backoff_queue(self, event: ClusterEvent,
                                            pre_check: PreEnqueueCheck | None = None,
                                            old: object | None = None, new: object | None = None) -> int:
        """MoveAllToActiveOrBackoffQueue: every unschedulable pod passing ``pre_check``
        (e.g. preCheckForNode on NodeAdd) is considered for ``event`` (``old``/``new``: its
        objects, for the 1.36 hints). Returns how many pods reached activeQ/backoffQ."""
        if self._specific_events:
            event = as_136(event)
        if not self.is_event_of_interest(event):
            return 0
        pinfos = [p for p in self._unschedulable.values() if pre_check is None or pre_check(p.pod)]
        return self._move_pods(pinfos, event, old, new)

    def assigned_pod_added(self, pod: Pod) -> int:
        """AssignedPodAdded: only pods with a required affinity term matching ``pod`` (1.36:
        and pods PodTopologySpread rejected in its namespace)."""
        event = event_136(GVK.ASSIGNED_POD, ActionType.ADD) if self._specific_events else ASSIGNED_POD_ADD
        return self._move_pods(self._with_matching_affinity_term(pod), event, None, pod)

    def assigned_pod_updated(self, old: Pod, new: Pod, event: ClusterEvent | None = None) -> int:
        """AssignedPodUpdated. v1.30 (InPlacePodVerticalScaling off): always the affinity
        filter. 1.36: one call per PodSchedulingPropertiesChange event (``event``; all of them
        when None); a scale-down considers every unschedulable pod."""
        if not self._specific_events:
            return self._move_pods(self._with_matching_affinity_term(new), ASSIGNED_POD_UPDATE)
        evs = [event] if event is not None else pod_update_events(
            old, new, self.features.enabled("DynamicResourceAllocation"))
        moved = 0
        for ev in evs:
            if _SCALE_DOWN.match_136(ev):
                moved += self.move_all_to_active_or_backoff_queue(ev, None, old, new)
            else:
                moved += self._move_pods(self._with_matching_affinity_term(new), ev, old, new)
        return moved

    def _with_matching_affinity_term(self, pod: Pod) -> list[QueuedPodInfo]:
        """getUnschedulablePodsWithMatchingAffinityTerm (v1.30) /
        getUnschedulablePodsWithCrossTopologyTerm (1.36: also the pods PodTopologySpread
        rejected in the pod's namespace)."""
        ns_labels = self._namespace_labels(pod.namespace) if self._namespace_labels is not None else None
        out = []
        for p in self._unschedulable.values():
            if (self._specific_events and "PodTopologySpread" in p.unschedulable_plugins
                    and p.pod.namespace == pod.namespace):
                out.append(p)
            elif any(t.matches(pod, ns_labels) for t in p.pod_info.required_affinity_terms):
                out.append(p)
        return out

    def flush_backoff_q_completed(self) -> int:
        """flushBackoffQCompleted: expired backoffQ entries to activeQ (PreEnqueue re-run).
        Returns how many reached activeQ."""
        moved = 0
        for heap in (self._backoff_q, self._error_backoff_q):  # popAllBackoffCompleted
            while True:
                head = heap.peek()
                if head is None or self.is_pod_backing_off(head):
                    break
                heap.pop()
                if self._add_to_active_q(head, from_backoff=True):
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
        for heap in (self._backoff_q, self._error_backoff_q):
            head = heap.peek()
            if head is None:
                continue
            if self._pop_from_backoff:
                # The flush ticks at whole seconds (waitUntilAlignedWithOrderingWindow); the
                # pod leaves at the first tick whose window is past its expiry's.
                times.append(self._window_tick(head))
                continue
            expiry = self.backoff_time(head)
            times.append(self._tick(BACKOFF_FLUSH_PERIOD, expiry, functools.partial(_expired, expiry))
                         if aligned else expiry)
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

    def _window_tick(self, pinfo: QueuedPodInfo) -> float:
        """The whole-second flush tick at which the pod's window has passed (its aligned
        expiry + one window), or the next tick if that is already behind."""
        expiry = self.backoff_time(pinfo)
        now = self.clock.now()
        t = expiry + BACKOFF_ORDERING_WINDOW
        if t < now:
            t = math.ceil(now / BACKOFF_ORDERING_WINDOW) * BACKOFF_ORDERING_WINDOW
        return t

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
        return len(self._active_q) + len(self._backoff_q) + len(self._error_backoff_q) + len(self._unschedulable)

    def get(self, pod: Pod) -> QueuedPodInfo | None:
        """The queued entry for ``pod`` (by namespace/name), wherever it is."""
        key = pod.key
        return (self._active_q.get(key) or self._backoff_q.get(key) or self._error_backoff_q.get(key)
                or self._unschedulable.get(key))

    def queue_of(self, pod: Pod) -> str | None:
        """"active", "backoff", "unschedulable", "gated" (an unschedulable gated pod) or None."""
        key = pod.key
        if key in self._active_q:
            return ACTIVE_Q
        if self._in_backoff(key):
            return BACKOFF_Q
        pinfo = self._unschedulable.get(key)
        if pinfo is not None:
            return GATED if pinfo.gated else UNSCHEDULABLE_PODS
        return None

    def pods_in_active_q(self) -> list[Pod]:
        """PodsInActiveQ, in pop order."""
        return [p.pod for p in self._active_q.sorted()]

    def pods_in_backoff_q(self) -> list[Pod]:
        """In backoff-expiry order (1.36: then the error-backoff heap's)."""
        return [p.pod for p in self._backoff_q.sorted()] + [p.pod for p in self._error_backoff_q.sorted()]

    def unschedulable_pods(self) -> list[Pod]:
        """unschedulablePods (gated ones included), in insertion order."""
        return [p.pod for p in self._unschedulable.values()]

    def pending_pods(self) -> list[Pod]:
        """PendingPods: activeQ, backoffQ, then unschedulablePods."""
        return self.pods_in_active_q() + self.pods_in_backoff_q() + self.unschedulable_pods()

    def pending_pods_summary(self) -> str:
        """PendingPods' summary string."""
        return (f"activeQ:{len(self._active_q)}; backoffQ:{len(self._backoff_q) + len(self._error_backoff_q)}; "
                f"unschedulablePods:{len(self._unschedulable)}")

    def pending_counts(self) -> dict[str, int]:
        """scheduler_pending_pods{queue}: active, backoff, unschedulable (tried and failed),
        gated (held by PreEnqueue, never tried)."""
        gated = sum(1 for p in self._unschedulable.values() if p.gated)
        return {ACTIVE_Q: len(self._active_q), BACKOFF_Q: len(self._backoff_q) + len(self._error_backoff_q),
                UNSCHEDULABLE_PODS: len(self._unschedulable) - gated, GATED: gated}

    @property
    def num_active(self) -> int:
        return len(self._active_q)

    @property
    def num_backoff(self) -> int:
        return len(self._backoff_q) + len(self._error_backoff_q)

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
