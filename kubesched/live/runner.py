"""The scheduling loop of live mode (pkg/scheduler: scheduler.go Run, schedule_one.go
ScheduleOne, eventhandlers.go addAllEventHandlers), against a :class:`LiveCluster`.

- The informers feed the cache and the queue as upstream's event handlers do: assigned pods
  -> Cache (add / update / remove) and AssignedPodAdd / AssignedPodUpdate / AssignedPodDelete
  moves; pending pods of our profiles -> SchedulingQueue add / update / delete; nodes -> Cache
  and NodeAdd / the node_update_events of an update (each with preCheckForNode); PV, PVC,
  StorageClass, CSINode and CSIDriver changes -> MoveAllToActiveOrBackoffQueue.
- One scheduling cycle at a time pops the queue and runs :meth:`Scheduler.scheduling_cycle`;
  an assumed pod's binding cycle runs on a worker thread, concurrently with the next
  scheduling cycle, as upstream's binding goroutine. All state (cache, queue, nominator,
  plugins' state, informer stores) is guarded by one lock; a binding cycle gives it up only
  while the bind request (or VolumeBinding's PV/PVC updates) is on the wire, and while it waits
  for the PV controller to bind the pod's claims (kubesched.live.volumes).
- Failures (handleSchedulingFailure): the pod goes back to the queue with its rejector
  plugins (if it still exists and is unbound), gets a FailedScheduling event and the
  PodScheduled=False condition (reason Unschedulable or SchedulerError) plus the
  nominatedNodeName preemption chose. A failed bind (409 because someone else bound it
  first, or any other error) forgets the assumed pod and requeues it.
- Backoff and leftover flushes run on the real clock (every 1 s and 30 s).

:func:`run_scheduler` is the entry point ``kubesched run`` calls (under leader election);
:class:`LiveScheduler` is the same loop as an object for tests and benchmarks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import queue
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kubesched._cache import Cache
from kubesched._queue import QueueError, QueueNominator, RealClock, SchedulingQueue, events
from kubesched._queue.events import node_update_events, node_update_events_136, registrations_by_plugin_of
from kubesched._queue.queue import DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION
from kubesched._runtime.framework import Framework
from kubesched._runtime.handle import FrameworkHandle
from kubesched._runtime.invariants import ClusterView, new_checker
from kubesched._runtime.profile import build_framework
from kubesched._runtime.scavenger import Scavenger
from kubesched.cluster.live import (
    ADD,
    ASSIGNED_PODS,
    DELETE,
    PENDING_PODS,
    ApiClient,
    Change,
    LiveCluster,
    LiveOptions,
    claim_write,
)
from kubesched.config import KubeSchedulerConfiguration, default_configuration
from kubesched.config.types import Profile
from kubesched.errors import ApiError, KubeschedError
from kubesched.features import DEFAULT_FEATURES, Features
from kubesched.framework import (
    GVK,
    NOMINATING_OVERRIDE,
    ActionType,
    ClusterEvent,
    NodeInfo,
    NominatingInfo,
    PodInfo,
    QueuedPodInfo,
    Status,
)
from kubesched.live.volumes import LiveVolumeBinder, bind_timeouts
from kubesched.objects import Pod, PodCondition, tolerations_tolerate_taint
from kubesched.objects.devices import ResourceClaim
from kubesched.objects.model import NO_SCHEDULE
from kubesched.plugins.dynamicresources import plugin as dra
from kubesched.plugins.helpers.fiterror import fit_error_message
from kubesched.plugins.helpers.nodeaffinity import RequiredNodeAffinity
from kubesched.plugins.nodeports.plugin import fits as node_ports_fit
from kubesched.plugins.noderesources import fits as resources_fit
from kubesched.plugins.registry import Factory, registry_for
from kubesched.scheduler import NO_NODES_AVAILABLE, Attempt, Scheduler, truncate_message

if TYPE_CHECKING:
    from kubesched.extender import HTTPExtender

log = logging.getLogger(__name__)

# v1.PodScheduled / v1.PodReasonUnschedulable / v1.PodReasonSchedulerError
POD_SCHEDULED = "PodScheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"
DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
BACKOFF_FLUSH_PERIOD = 1.0
UNSCHEDULABLE_FLUSH_PERIOD = 30.0
# A replica that does not lead (a standby waiting for the lease) is "running" -- LiveScheduler.run's
# on_running -- after this long: it makes no scheduling attempt to wait for.
STANDBY_RUNNING_AFTER = 1.0
# on_running waits for the first attempt's binding cycle at most this long.
RUNNING_BIND_WAIT = 1.0
# The scheduling loop lets binding workers waiting for the lock take it first, for at most this long.
GIVE_WAY_LIMIT = 0.05

# The storage informers' events (eventhandlers.go: buildEvtResHandler, "<Kind><Action>" labels).
_STORAGE_EVENTS: dict[str, tuple[str, str]] = {
    "persistentvolumes": (GVK.PERSISTENT_VOLUME, "Pv"),
    "persistentvolumeclaims": (GVK.PERSISTENT_VOLUME_CLAIM, "Pvc"),
    "storageclasses": (GVK.STORAGE_CLASS, "StorageClass"),
    "csinodes": (GVK.CSI_NODE, "CSINode"),
    "csidrivers": (GVK.CSI_DRIVER, "CSIDriver"),
}
# The resource.k8s.io informers' events (eventhandlers.go: buildEvtResHandler for ResourceClaim —
# through the assume cache —, ResourceSlice and DeviceClass).
_DRA_EVENTS: dict[str, tuple[str, str]] = {
    "resourceclaims": (dra.RESOURCE_CLAIMS, "ResourceClaim"),
    "resourceslices": (dra.RESOURCE_SLICES, "ResourceSlice"),
    "deviceclasses": (dra.DEVICE_CLASSES, "DeviceClass"),
}
_ACTIONS = {ADD: (ActionType.ADD, "Add"), "update": (ActionType.UPDATE, "Update"),
            DELETE: (ActionType.DELETE, "Delete")}


class RunnerMetrics(Protocol):
    """What the loop reports (kubesched.live.serving.SchedulerMetrics has these)."""

    def observe_attempt(self, result: str, profile: str, seconds: float) -> None: ...

    def observe_pod_scheduled(self, attempts: int, sli_seconds: float) -> None: ...

    def preemption_attempt(self) -> None: ...

    def preemption_victims(self, n: int) -> None: ...

    def set_pending(self, counts: Mapping[str, int]) -> None: ...

    def set_cache_size(self, *, nodes: int, pods: int, assumed_pods: int) -> None: ...


@dataclass(slots=True)
class RunStats:
    """Counters of a run (tests, bench)."""

    attempts: Counter[str] = field(default_factory=Counter)  # scheduled / unschedulable / error
    bind_failures: int = 0
    preemptions: int = 0
    victims: int = 0
    skipped: int = 0


@dataclass(frozen=True, slots=True)
class RunResult:
    """Why :func:`run_scheduler` returned: ``stopped`` (the stop event) or ``lost-leadership``."""

    reason: str
    stats: RunStats


class LiveCache(Cache):
    """The cache with upstream's assumed-pod bookkeeping across the informer: an assumed pod
    the informer already confirmed (added as bound) is no longer forgotten by a failed bind."""

    def forget_pod(self, pod: Pod) -> None:
        if pod.uid not in self.assumed:
            return  # confirmed by the informer meanwhile (bound, possibly elsewhere): keep it
        super().forget_pod(pod)

    def add_or_replace_pod(self, pod: Pod) -> None:
        """Informer add of an assigned pod: confirms an assumed pod (it may have been bound
        to another node than the one assumed), else adds it."""
        if self.node_of(pod) is not None:
            self.remove_pod(pod)
        self.add_pod(pod)


def pre_check_for_node(node_info: NodeInfo) -> Callable[[Pod], bool]:
    """preCheckForNode (queueing hints off): a pod is moved by a node event only if it would
    fit that node by NodeResourcesFit.Fits, required NodeAffinity, NodeName, NodePorts, and
    tolerates its NoSchedule taints (AdmissionCheck)."""
    node = node_info.node

    def check(pod: Pod) -> bool:
        if node is None:
            return False
        if resources_fit(pod, node_info):
            return False
        if not RequiredNodeAffinity(pod).match(node):
            return False
        if pod.node_name and pod.node_name != node.meta.name:
            return False
        if not node_ports_fit(pod, node_info):
            return False
        return all(t.effect != NO_SCHEDULE or tolerations_tolerate_taint(pod.tolerations, t) for t in node.taints)

    return check


class _Local(threading.local):
    holds_lock = False


class _BindingWorkers:
    """The threads binding cycles run on (upstream: a goroutine per binding cycle, started by
    ScheduleOne): ``size`` threads, started with the first cycle, taking cycles from one
    queue.SimpleQueue. A ThreadPoolExecutor would do the same, but its submit (a future, an
    idle-semaphore check, a thread count) cost a tenth of the scheduling loop's time at 5000
    nodes; here handing a cycle over is one put."""

    def __init__(self, size: int, name: str) -> None:
        self._size = size
        self._name = name
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._closed = False

    def submit(self, work: Callable[[], None]) -> None:
        if self._closed:
            raise RuntimeError("cannot run a binding cycle after the scheduler stopped")
        # Queued first: the first thread started takes it while the others start (each
        # Thread.start waits for its thread to run; the first bind of a restarted scheduler
        # waited for all of them).
        self._queue.put(work)
        if not self._threads:
            self._threads = [threading.Thread(target=self._run, name=f"{self._name}_{i}", daemon=True)
                             for i in range(self._size)]
            for t in self._threads:
                t.start()

    def _run(self) -> None:
        while True:
            work = self._queue.get()
            if work is None:
                return
            try:
                work()
            except Exception:  # noqa: BLE001 - a worker must never die (a binding cycle logs its own)
                log.exception("binding worker")

    def shutdown(self) -> None:
        """Run what was submitted, then stop the threads (and wait for them)."""
        self._closed = True
        for _ in self._threads:
            self._queue.put(None)
        for t in self._threads:
            t.join()


class LiveScheduler:
    """kube-scheduler's loop over a live cluster: build it, :meth:`start` (informers, cache
    sync), then :meth:`run` (or :meth:`start_loop` in a thread), :meth:`stop`."""

    def __init__(self, config: KubeSchedulerConfiguration | None, cluster: LiveCluster, *,
                 registry: Mapping[str, Factory] | None = None, deterministic: bool = False,
                 seed: int | None = None, bind_workers: int = 16, metrics: RunnerMetrics | None = None,
                 check_invariants: bool | None = None, features: Features | None = None,
                 pod_max_in_unschedulable_pods_duration: float | None = None) -> None:
        """``features``: the release whose semantics decide (default: the configuration's).
        ``pod_max_in_unschedulable_pods_duration``: kube-scheduler's deprecated flag of that name
        (seconds; None: its default, 5 min), which no configuration field holds.
        ``check_invariants``: check the scheduler's invariants after every cycle
        (kubesched._runtime.invariants; None: the KUBESCHED_CHECK_INVARIANTS environment variable).
        A violation found by a binding cycle (a worker thread) is raised by the next
        :meth:`schedule_one` and by :meth:`stop`."""
        self.features = (features if features is not None else config.features if config is not None
                         else DEFAULT_FEATURES)
        self.config = config if config is not None else default_configuration(features=self.features)
        self.cluster = cluster
        self.metrics = metrics
        self.stats = RunStats()
        self._cond = threading.Condition(threading.Lock())
        self._local = _Local()
        self._stopping = threading.Event()
        self._in_flight = 0
        # Binding workers waiting for the lock (see _acquire_before_the_loop).
        self._wanting = 0
        self._wanting_cv = threading.Condition(threading.Lock())
        # run()'s on_running, waiting for the first attempt's binding cycle to end, and until when.
        self._when_bound: Callable[[], None] | None = None
        self._when_bound_by = 0.0
        # Threads waiting on _cond for any change (binding cycles at Permit or waiting for the
        # PV controller, stop(), a replica not leading), as opposed to the scheduling loop,
        # which waits for a pod to pop: see _notify.
        self._change_waiters = 0
        self._pool = _BindingWorkers(max(bind_workers, 1), "binding")
        self.objects = cluster.objects
        self.rng = random.Random(0 if deterministic and seed is None else seed)
        self.cache = LiveCache(64)
        self.nominator = QueueNominator(pod_lister=self.objects.pod)
        self.extenders: list[HTTPExtender] = []
        profiles: tuple[Profile, ...] = tuple(self.config.profiles)
        if self.config.extenders:
            # The extenders' HTTP client (~15 ms of imports) only where they are configured.
            from kubesched.extender import new_http_extenders, with_ignored_extended_resources

            profiles = with_ignored_extended_resources(self.config.profiles, self.config.extenders)
            self.extenders = new_http_extenders(self.config.extenders)
        self.profiles: dict[str, Framework] = {}
        reg = registry if registry is not None else registry_for(self.features)
        for profile in profiles:
            handle = FrameworkHandle(
                self.cache, self.objects, self.nominator, profile_name=profile.scheduler_name,
                binder=self._bind, deleter=self._delete_victim, clear_nomination=self._clear_nomination,
                claim_writer=self._write_claim,
                deterministic=deterministic, rng=self.rng, extenders=self.extenders, features=self.features)
            # Async preemption: its API calls on a thread of their own (upstream's goroutine),
            # activation under the lock.
            handle.async_runner = self._run_in_background
            handle.activator = self._activate_pods
            self.profiles[profile.scheduler_name] = build_framework(profile, reg, handle)
        missing = set(self.profiles) - cluster.scheduler_names
        if missing:
            raise KubeschedError(f"the live cluster does not watch pods of profiles {sorted(missing)}: create it "
                                 "with their schedulerNames")
        self.scheduler = Scheduler(
            self.profiles, self.cache, self.nominator, deterministic=deterministic, rng=self.rng,
            percentage_of_nodes_to_score=self.config.percentage_of_nodes_to_score or 0,
            set_nominated_node=self._set_nominated, clock=time.time, extenders=self.extenders,
            features=self.features)
        # VolumeBinding's BindPodVolumes: write the PV/PVC updates, wait for the PV controller.
        self.volume_binder = LiveVolumeBinder(cluster, bind_timeouts(self.profiles), unlocked=self._unlocked,
                                              wait=self._wait_unlocked, stopping=self._stopping.is_set)
        self.scheduler.volume_binder = self.volume_binder
        self.scheduler.nominate_for_expectation = self._nominate_for_expectation
        first = next(iter(self.profiles.values()))
        self.queue = SchedulingQueue(
            first.less, self._pre_enqueue, RealClock(),
            pod_initial_backoff=float(self.config.pod_initial_backoff_seconds),
            pod_max_backoff=float(self.config.pod_max_backoff_seconds),
            events_by_profile={name: registrations_by_plugin_of(_all_plugins(fwk)) for name, fwk in self.profiles.items()},
            namespace_labels=self._namespace_labels, pod_lister=self.objects.pod, nominator=self.nominator,
            features=self.features,
            pod_max_in_unschedulable_pods_duration=(DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION
                                                    if pod_max_in_unschedulable_pods_duration is None
                                                    else pod_max_in_unschedulable_pods_duration))
        # OpportunisticBatching counts cycles as the queue's pops (skipped pods included).
        self.scheduler.current_cycle = lambda: self.queue.scheduling_cycle
        self._hints = self.features.enabled("SchedulerQueueingHints")
        self.invariants = new_checker(check_invariants, self.cache, self.nominator, self.profiles,
                                      ClusterView(self.objects.all_pods, self._current, self._pending_reason),
                                      queue=self.queue, live=True)
        # Per scheduling cycle: the pod being scheduled (preemption's events name it) and the
        # nomination the failure handler must write (None: leave nominatedNodeName alone).
        self._preemptor: Pod | None = None
        self._nomination: str | None = None
        self._next_backoff_flush = 0.0
        self._next_unschedulable_flush = 0.0
        self._started = False
        self._loop_thread: threading.Thread | None = None
        self.loop_error: BaseException | None = None
        self._is_leader: Callable[[], bool] | None = None  # run()'s: no API write once it turns False
        self._unsent: set[str] = set()  # pods whose bind the stop dropped before it was sent

    # ================================================================ plumbing
    def _pre_enqueue(self, pod: Pod) -> Status | None:
        fwk = self.profiles.get(pod.scheduler_name)
        return fwk.run_pre_enqueue_plugins(pod) if fwk is not None else None

    def _namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        ns = self.objects.namespace(namespace)
        return ns.labels if ns is not None else None

    @property
    def lock(self) -> threading.Condition:
        """The lock guarding the scheduler's state (hold it to read cache or queue safely)."""
        return self._cond

    # ================================================================ informer events
    def _on_change(self, ch: Change) -> None:
        """addAllEventHandlers; called by the informers under the lock."""
        try:
            self._dispatch(ch)
        finally:
            self._notify()

    def _notify(self) -> None:
        """Wake the waiters on the lock's condition after a change (under the lock): those
        waiting for any change, and the scheduling loop only when the activeQ has a pod for it.
        Upstream's loop blocks in activeQ's Pop, which only an add to the activeQ wakes; waking
        it for every informer event (each pod's bind confirmation too) cost two thread
        hand-offs per pod and nothing else."""
        if self._change_waiters or self.queue.num_active:
            self._cond.notify_all()

    def _wait_for_change(self, seconds: float) -> None:
        """Wait on the lock's condition (held) for any change, at most ``seconds``."""
        self._change_waiters += 1
        try:
            self._cond.wait(seconds)
        finally:
            self._change_waiters -= 1

    def _dispatch(self, ch: Change) -> None:
        q, cache = self.queue, self.cache
        if ch.resource == ASSIGNED_PODS:
            if ch.action == ADD:
                cache.add_or_replace_pod(ch.new)  # addPodToCache
                q.assigned_pod_added(ch.new)
            elif ch.action == DELETE:
                cache.remove_pod(ch.old)  # deletePodFromCache
                self._forget_bindings(ch.old)
                q.move_all_to_active_or_backoff_queue(events.ASSIGNED_POD_DELETE, old=ch.old)
            else:
                if ch.old.uid != ch.new.uid:  # recreated under the same name: delete + add
                    cache.remove_pod(ch.old)
                    self._forget_bindings(ch.old)
                    cache.add_or_replace_pod(ch.new)
                    q.move_all_to_active_or_backoff_queue(events.ASSIGNED_POD_DELETE, old=ch.old)
                    q.assigned_pod_added(ch.new)
                    return
                cache.remove_pod(ch.old)  # updatePodInCache
                cache.add_pod(ch.new)
                q.assigned_pod_updated(ch.old, ch.new)
        elif ch.resource == PENDING_PODS:
            if ch.action == ADD:
                q.add(ch.new)  # addPodToSchedulingQueue
            elif ch.action == DELETE:
                self._pending_pod_deleted(ch.old, ch.new)
            else:
                if ch.old.uid != ch.new.uid:  # recreated under the same name (seen by a relist)
                    self._pending_pod_deleted(ch.old, None)
                    q.add(ch.new)
                    return
                # updatePodInSchedulingQueue: nothing for a resync, nor for a pod assumed (bound
                # by us, the informer lagging behind).
                if ch.old.meta.resource_version == ch.new.meta.resource_version:
                    return
                if self.cache.node_of(ch.new) is not None:
                    return
                q.update(ch.old, ch.new)
        elif ch.resource == "nodes":
            if ch.action == ADD:
                ni = cache.add_node(ch.new)  # addNodeToCache
                # 1.36 (queueing hints) drops the preCheck: the hints decide.
                q.move_all_to_active_or_backoff_queue(
                    events.NODE_ADD, None if self._hints else pre_check_for_node(ni), new=ch.new)
            elif ch.action == DELETE:
                cache.remove_node(ch.old.meta.name)  # deleteNodeFromCache: no move
            else:
                ni = cache.update_node(ch.new) if ch.new.meta.name in cache.node_infos else cache.add_node(ch.new)
                if self._hints:
                    for ev in node_update_events_136(ch.old, ch.new,
                                                     self.features.enabled("NodeDeclaredFeatures")):
                        q.move_all_to_active_or_backoff_queue(ev, None, ch.old, ch.new)
                    return
                check = pre_check_for_node(ni)
                for ev in node_update_events(ch.old, ch.new):
                    q.move_all_to_active_or_backoff_queue(ev, check)
        elif ch.resource in _STORAGE_EVENTS or ch.resource in _DRA_EVENTS:
            gvk, short = _STORAGE_EVENTS.get(ch.resource) or _DRA_EVENTS[ch.resource]
            action, suffix = _ACTIONS[ch.action]
            q.move_all_to_active_or_backoff_queue(ClusterEvent(gvk, action, f"{short}{suffix}"), None,
                                                  ch.old, ch.new)

    def _pending_pod_deleted(self, old: Pod, new: Pod | None) -> None:
        """deletePodFromSchedulingQueue: out of the queue; a pod waiting at Permit is rejected
        (its binding cycle then forgets it), which frees what it had reserved."""
        self.queue.delete(old)
        if new is None:  # gone (else it left the pending set: bound)
            self._forget_bindings(old)
        fwk = self.profiles.get(old.scheduler_name)
        if fwk is not None and fwk.handle.reject_waiting_pod(old.uid):
            self.queue.move_all_to_active_or_backoff_queue(events.ASSIGNED_POD_DELETE, old=old)
        if new is None and old.uid not in self.cache.assumed and self.cache.node_of(old) is not None:
            # Deleted after we bound it but before the informer saw the binding: it never
            # reaches the assigned-pod handlers, so it leaves the cache here.
            self.cache.remove_pod(old)
            self.queue.move_all_to_active_or_backoff_queue(events.ASSIGNED_POD_DELETE, old=old)

    def _forget_bindings(self, gone: Pod) -> None:
        if self.invariants is not None:
            self.invariants.forget(gone.uid)

    # ================================================================ cluster actions (handle callbacks)
    @contextlib.contextmanager
    def _unlocked(self) -> Iterator[None]:
        """Inside a binding cycle (which holds the lock): give the lock up for the block, so
        that the next scheduling cycle and the informers go on meanwhile (API requests on
        the wire). Elsewhere: nothing."""
        if not self._local.holds_lock:
            yield
            return
        self._local.holds_lock = False
        self._cond.release()
        try:
            yield
        finally:
            self._acquire_before_the_loop()
            self._local.holds_lock = True

    def _acquire_before_the_loop(self) -> None:
        """Take the lock for a binding cycle ahead of the scheduling loop's next cycle (see
        :meth:`_give_way`). Python's locks are not fair: the loop, releasing the lock and taking
        it again for its next cycle within microseconds, kept a binding worker waiting for as
        long as it found pods to schedule -- a restarted scheduler's first bind went out after
        ~100 of its cycles at times. (Go's sync.Mutex hands itself to a waiter once it has
        waited 1 ms: kube-scheduler's binding goroutines never wait on its loop so.)"""
        with self._wanting_cv:
            self._wanting += 1
        try:
            self._cond.acquire()
        finally:
            with self._wanting_cv:
                self._wanting -= 1
                if not self._wanting:
                    self._wanting_cv.notify_all()

    @contextlib.contextmanager
    def _binder_locked(self) -> Iterator[None]:
        """The lock, held for a binding cycle (taken before the scheduling loop's next cycle)."""
        self._acquire_before_the_loop()
        try:
            yield
        finally:
            self._cond.release()

    def _give_way(self) -> None:
        """The scheduling loop, before it takes the lock: the binding workers waiting for it
        take it first (at most :data:`GIVE_WAY_LIMIT` s of waiting for them)."""
        if self._wanting:  # read unlocked: a hint, checked again under _wanting_cv
            with self._wanting_cv:
                self._wanting_cv.wait_for(lambda: not self._wanting, GIVE_WAY_LIMIT)

    def _wait_unlocked(self, seconds: float) -> None:
        """Inside a binding cycle: wait with the lock released until an informer change (or
        :meth:`stop`) notifies, at most ``seconds``. Elsewhere: sleep unless stopping."""
        if self._local.holds_lock:
            self._wait_for_change(seconds)
        else:
            self._stopping.wait(seconds)

    def _bind(self, pod: Pod, node: str) -> None:
        """DefaultBinder's API call, made with the lock released (see :meth:`_unlocked`).
        Never once leadership is lost (kube-scheduler exits then), nor once the scheduler is
        stopping (binds already on the wire complete)."""
        def still_leading() -> None:
            # Checked again once the rate limiter lets the request go: a bind not yet on the wire
            # is dropped when leadership is lost or the scheduler stops (kube-scheduler's
            # context is cancelled then).
            if not self._leading():
                raise ApiError(f"not binding {pod.key}: leadership was lost")
            if self._stopping.is_set():
                self._unsent.add(pod.uid)
                raise ApiError(f"not binding {pod.key}: the scheduler is stopping")

        still_leading()
        with self._unlocked():
            self.cluster.bind(pod, node, guard=still_leading)
        if self.invariants is not None:
            self.invariants.record_bind(pod, node)

    def _write_claim(self, claim: ResourceClaim) -> None:
        """DynamicResources' claim writes (PreBind's bindClaim, PostFilter's deallocation,
        Unreserve): the API calls, with the lock released in a binding cycle (see
        :meth:`_unlocked`; PostFilter's are made in the scheduling cycle, as upstream's), then
        the stored claim assumed (AssumeClaimAfterAPICall), so that the next cycles see its
        allocation before the informer does. Never once leadership is lost or the scheduler
        is stopping."""
        write = claim_write(claim, self.objects.device_classes(), self.features)
        if write is None:
            return
        if not self._leading():
            raise ApiError(f"not writing ResourceClaim {claim.key}: leadership was lost")
        if self._stopping.is_set():
            raise ApiError(f"not writing ResourceClaim {claim.key}: the scheduler is stopping")
        with self._unlocked():
            stored = self.cluster.write_claim(write, rng=self.rng)
        if stored is not None:
            self.cluster.claims.assume(stored)

    def _delete_victim(self, victim: Pod, reason: str, by: Pod | None = None) -> None:
        """prepareCandidate for one victim: a pod waiting at Permit is rejected; otherwise it
        gets the DisruptionTarget condition and is deleted (UID precondition). Then the
        Preempted event."""
        self.scheduler.victims.append(victim)
        preemptor = by if by is not None else self._preemptor
        current = self.objects.pod(victim.namespace, victim.name)
        if current is not None and current.uid == victim.uid:
            victim = current
        waiting = None
        for fwk in self.profiles.values():
            waiting = fwk.handle.get_waiting_pod(victim.uid)
            if waiting is not None:
                waiting.reject("DefaultPreemption", "preempted")
                break
        if waiting is None:
            # A victim already terminating is no special case upstream: condition, DELETE, event.
            condition = PodCondition(DISRUPTION_TARGET, "True", REASON_PREEMPTION_BY_SCHEDULER, reason)
            self.cluster.patch_pod_status(victim, condition=condition)
            try:
                self.cluster.delete_pod(victim)
            except ApiError as e:
                if e.status != 404:
                    raise
                log.info("victim %s is already deleted", victim.key)
        self.stats.victims += 1
        note = f"Preempted by pod {preemptor.uid if preemptor else ''} on node {victim.node_name}"
        self.cluster.record_event(victim, preemptor, "Normal", "Preempted", "Preempting", note,
                                  controller=preemptor.scheduler_name if preemptor else "default-scheduler")

    def _clear_nomination(self, pod: Pod) -> None:
        """ClearNominatedNodeName: the nominator forgets the pod at once; the API's
        status.nominatedNodeName is cleared (the preemptor's own, by its failure handler)."""
        self.nominator.delete(pod)
        if self._preemptor is not None and pod.uid == self._preemptor.uid:
            self._nomination = ""
            return
        current = self.objects.pod(pod.namespace, pod.name)
        if current is None or current.uid != pod.uid or not current.nominated_node_name:
            return
        self.cluster.patch_pod_status(current, nominated_node_name="")

    def _set_nominated(self, pod: Pod, node: str) -> Pod:
        """The Scheduler decided a nomination (PostFilter's NominatingInfo, mode Override):
        the nominator has it at once; the API gets it with the failure's status patch."""
        self._nomination = node
        return dataclasses.replace(pod, nominated_node_name=node)

    # ================================================================ lifecycle
    def start(self, *, sync_timeout: float | None = 60.0, stop: threading.Event | None = None) -> bool:
        """Start the informers and wait for their first list (WaitForCacheSync). False if
        ``stop`` (or :meth:`stop`) came first; KubeschedError after ``sync_timeout`` s."""
        if not self._started:
            self._started = True
            self.cluster.start(self._on_change, self._cond)
        deadline = None if sync_timeout is None else time.monotonic() + sync_timeout
        while not self.cluster.wait_for_sync(0.2):
            if self._stopping.is_set() or (stop is not None and stop.is_set()):
                return False
            if deadline is not None and time.monotonic() > deadline:
                raise KubeschedError("the informers did not sync in time")
        now = time.time()
        with self._cond:
            self.queue.run(now)
            self._next_backoff_flush = now + BACKOFF_FLUSH_PERIOD
            self._next_unschedulable_flush = now + UNSCHEDULABLE_FLUSH_PERIOD
        return True

    def run(self, stop: threading.Event | None = None, is_leader: Callable[[], bool] | None = None,
            on_running: Callable[[], None] | None = None) -> str:
        """Schedule until ``stop`` is set or :meth:`stop` is called ("stopped"), or until
        ``is_leader`` turns False after having been True ("lost-leadership"). Pods are popped
        only while leading; once leadership is lost nothing is bound and a failed cycle's API
        calls are not made. Call :meth:`wake` when leadership changes: the loop reacts at once
        (else within 50 ms, or the end of a 250 ms wait for a pod). ``on_running`` is called
        once, when the loop has made its first scheduling attempt and that attempt's binding
        cycle, if any, has ended (at most :data:`RUNNING_BIND_WAIT` s later), or when the loop
        has waited :data:`STANDBY_RUNNING_AFTER` s without leading: what can wait for the first
        bind starts then (``kubesched run``'s health and metrics serving, whose imports would
        otherwise take turns on the interpreter with that bind)."""
        stop = stop if stop is not None else threading.Event()
        self._is_leader = is_leader
        led = False
        # Freed C-heap pages back to the OS every few seconds, as Go's runtime scavenger
        # does for kube-scheduler (kubesched._runtime.scavenger).
        scavenger = Scavenger()
        standby_until = time.monotonic() + STANDBY_RUNNING_AFTER
        while not stop.is_set() and not self._stopping.is_set():
            if is_leader is not None and not is_leader():
                if led:
                    return "lost-leadership"
                with self._cond:
                    if not is_leader():
                        self._wait_for_change(0.05)
                if on_running is not None and time.monotonic() >= standby_until:
                    running = on_running
                    on_running = None
                    running()
                continue
            led = True
            self.schedule_one(wait=0.25)
            if on_running is not None:
                running = on_running
                on_running = None
                self._run_when_bound(running)
            elif self._when_bound is not None and time.monotonic() >= self._when_bound_by:
                self._take_when_bound(due=True)
            scavenger.tick()
        return "stopped"

    def _run_when_bound(self, fn: Callable[[], None]) -> None:
        """``fn`` once the binding cycle in flight ends (the first attempt's), or now if none is."""
        with self._cond:
            if self._in_flight:
                self._when_bound, self._when_bound_by = fn, time.monotonic() + RUNNING_BIND_WAIT
                return
        fn()

    def _take_when_bound(self, *, due: bool = False) -> None:
        """Run what waits for the first binding cycle (once: whoever takes it runs it)."""
        with self._cond:
            fn, self._when_bound = self._when_bound, None
        if fn is not None:
            log.debug("running%s", " (the first binding cycle is still under way)" if due else "")
            fn()

    def wake(self) -> None:
        """Wake the scheduling loop (leadership changed: kube-scheduler's OnStartedLeading runs
        the scheduler at once, OnStoppedLeading exits)."""
        with self._cond:
            self._cond.notify_all()

    def _leading(self) -> bool:
        is_leader = self._is_leader
        return is_leader is None or is_leader()

    def start_loop(self, is_leader: Callable[[], bool] | None = None) -> LiveScheduler:
        """:meth:`start`, then :meth:`run` on a background thread (tests, bench)."""
        self.start()

        def loop() -> None:
            try:
                self.run(is_leader=is_leader)
            except BaseException as e:
                # Kept for whoever waits on the loop (loop_alive, stop() re-raises an invariant
                # violation) and logged with its traceback, rather than escaping the thread.
                self.loop_error = e
                log.error("the scheduling loop stopped: %s", e, exc_info=True)

        self._loop_thread = threading.Thread(target=loop, name="scheduling-loop", daemon=True)
        self._loop_thread.start()
        return self

    def loop_alive(self) -> bool:
        """The loop of :meth:`start_loop` is running; when it died, ``loop_error`` says why."""
        return self._loop_thread is not None and self._loop_thread.is_alive()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop popping pods, wait for the binding cycles in flight (a bind already sent
        completes, one not yet sent is dropped and its pod stays pending), then stop the
        informers."""
        self._stopping.set()
        with self._cond:
            self._cond.notify_all()
        if self._loop_thread is not None:
            self._loop_thread.join(timeout)
        deadline = time.monotonic() + timeout
        with self._cond:
            # Pods held at Permit would otherwise wait out their timeout: they go back unbound.
            for fwk in self.profiles.values():
                for wp in fwk.handle.iterate_over_waiting_pods():
                    wp.reject("", "the scheduler is stopping")
            while self._in_flight and time.monotonic() < deadline:
                self._wait_for_change(0.05)
        self._pool.shutdown()
        self.cluster.stop()
        for ext in self.extenders:
            ext.close()
        if self.invariants is not None:
            self.invariants.raise_recorded()

    def __enter__(self) -> LiveScheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def idle(self) -> bool:
        """Nothing to do right now: no binding in flight and an empty activeQ."""
        with self._cond:
            return self._in_flight == 0 and self.queue.num_active == 0

    # ================================================================ the loop
    def _flush(self, now: float) -> None:
        if now >= self._next_backoff_flush:
            self.queue.flush_backoff_q_completed()
            self._next_backoff_flush = now + BACKOFF_FLUSH_PERIOD
        if now >= self._next_unschedulable_flush:
            self.queue.flush_unschedulable_pods_leftover()
            self._next_unschedulable_flush = now + UNSCHEDULABLE_FLUSH_PERIOD

    def schedule_one(self, wait: float = 0.0) -> bool:
        """ScheduleOne: pop a pod (waiting up to ``wait`` s for one) and run its scheduling
        cycle; the binding cycle goes to a worker. False if there was nothing to pop."""
        after: list[Callable[[], None]] = []
        binding: Callable[[], None] | None = None
        if self.invariants is not None:
            self.invariants.raise_recorded()  # found by a binding cycle (a worker thread)
        self._give_way()
        with self._cond:
            now = time.time()
            self._flush(now)
            qpi = self.queue.pop() if not self._stopping.is_set() else None
            if qpi is None:
                if wait > 0 and not self._stopping.is_set():
                    deadline = min(self._next_backoff_flush, self._next_unschedulable_flush)
                    self._cond.wait(max(0.0, min(wait, deadline - now)))
                return False
            self._publish_queue_metrics()
            cycle = self.queue.scheduling_cycle
            pod = self._current(qpi.pod)
            if pod is None or self._skip(pod, after):
                self.queue.done(qpi.pod.uid)
                self.stats.skipped += 1
            else:
                after, binding = self._scheduling_cycle(pod, qpi, cycle)
        if binding is not None:
            # Handed to a worker once the lock is free (counted in flight under it): a worker
            # woken while the loop still held the lock would only block on it again.
            self._pool.submit(binding)
        if self._leading():
            for action in after:
                _safely(action)
        return True

    def _pending_reason(self, pod: Pod) -> str | None:
        """Why a pending pod is in no queue and not in flight (the invariant checker): popped
        while being deleted (skipPodSchedule), it waits for its deletion."""
        return f"skip schedule deleting pod: {pod.key}" if pod.is_terminating else None

    def _current(self, pod: Pod) -> Pod | None:
        cur = self.objects.pod(pod.namespace, pod.name)
        if cur is None or cur.uid != pod.uid:
            return None  # deleted (or recreated: the new one is queued on its own)
        return cur

    def _skip(self, pod: Pod, after: list[Callable[[], None]]) -> bool:
        """skipPodSchedule: a pod being deleted, or already assumed / bound."""
        if pod.is_terminating:
            msg = f"skip schedule deleting pod: {pod.key}"
            after.append(lambda: self._event(pod, None, "Warning", "FailedScheduling", "Scheduling", msg))
            return True
        return bool(pod.node_name) or self.cache.node_of(pod) is not None

    def _scheduling_cycle(self, pod: Pod, qpi: QueuedPodInfo,
                          cycle: int) -> tuple[list[Callable[[], None]], Callable[[], None] | None]:
        """The scheduling cycle (under the lock): the API calls to make once the lock is
        released, and the binding cycle to start then (counted in flight already)."""
        self._preemptor = pod
        self._nomination = None
        start = time.perf_counter()
        attempt = self.scheduler.scheduling_cycle(pod)
        fwk = self.profiles[pod.scheduler_name]
        if fwk.has_post_filter_plugins() and attempt.outcome == "Unschedulable" and attempt.assumed is None \
                and attempt.num_all_nodes:
            self.stats.preemptions += 1
            if self.metrics is not None:
                self.metrics.preemption_attempt()
                if attempt.victims:
                    self.metrics.preemption_victims(len(attempt.victims))
        if attempt.outcome in ("Assumed", "Waiting"):
            self._activate(attempt)  # the end of a successful scheduling cycle: PodsToActivate
            self._in_flight += 1
            if self.invariants is not None:
                self.invariants.check(cycle, pod, "scheduling", attempt)
            return [], functools.partial(self._binding_cycle, attempt, qpi, start)
        after = self._failure(attempt, qpi, cycle, start, binding=False)
        if self.invariants is not None:
            self.invariants.check(cycle, pod, "scheduling", attempt)
        return after, None

    # ================================================================ binding
    def _binding_cycle(self, attempt: Attempt, qpi: QueuedPodInfo, start: float) -> None:
        after: list[Callable[[], None]] = []
        with self._binder_locked():
            try:
                # WaitOnPermit: the lock is free while the pod waits for its Permit plugins.
                while attempt.waiting is not None and not attempt.waiting.done:
                    for fwk in self.profiles.values():
                        fwk.handle.waiting_pods.expire(time.time())
                    if not attempt.waiting.done:
                        self._wait_for_change(0.05)
                self._local.holds_lock = True
                try:
                    self.scheduler.binding_cycle(attempt)
                finally:
                    self._local.holds_lock = False
                if attempt.outcome == "Scheduled":
                    self._activate(attempt)  # and at the end of a successful binding cycle
                    after = self._success(attempt, qpi, start)
                else:
                    self.stats.bind_failures += 1
                    after = self._failure(attempt, qpi, self.queue.scheduling_cycle, start, binding=True)
                if self.invariants is not None:
                    self.invariants.check(None, attempt.pod, "binding", attempt)
            except Exception:  # noqa: BLE001 - a worker must never die silently
                log.exception("binding cycle of %s", attempt.pod.key)
            finally:
                # Out of flight before the lock is given up: one lock round trip per pod less
                # than taking it again for this.
                self._in_flight -= 1
                self._notify()
        unsent = attempt.pod.uid in self._unsent  # dropped by the stop before it went out: nothing to report
        self._unsent.discard(attempt.pod.uid)
        if self._leading() and not unsent:
            for action in after:
                _safely(action)
        if self._when_bound is not None:
            self._take_when_bound()

    def _nominate_for_expectation(self, pod: Pod, node: str) -> None:
        """NominatedNodeNameForExpectation: patch status.nominatedNodeName before PreBind (in the
        binding cycle, the lock released). A failure is logged, not fatal, as upstream."""
        try:
            with self._unlocked():
                self.cluster.patch_pod_status(pod, nominated_node_name=node)
        except ApiError as e:
            log.info("nominatedNodeName %s for %s: %s", node, pod.key, e)

    def _run_in_background(self, fn: Callable[[], None]) -> None:
        threading.Thread(target=_safely, args=(fn,), name="async-preemption", daemon=True).start()

    def _activate_pods(self, pods: Sequence[Pod]) -> None:
        """Handle.Activate from a background thread (a failed async preemption)."""
        with self._cond:
            self.queue.activate(pods)
            self._notify()

    def _activate(self, attempt: Attempt) -> None:
        """SchedulingQueue.Activate for the pods plugins put in PodsToActivate (under the lock)."""
        pods = attempt.take_pods_to_activate()
        if pods:
            self.queue.activate(pods)

    def _success(self, attempt: Attempt, qpi: QueuedPodInfo, start: float) -> list[Callable[[], None]]:
        pod, node = attempt.pod, attempt.node or attempt.host
        self.queue.done(pod.uid)
        self.stats.attempts["scheduled"] += 1
        if self.metrics is not None:
            self.metrics.observe_attempt("scheduled", pod.scheduler_name, time.perf_counter() - start)
            first = qpi.initial_attempt_timestamp
            self.metrics.observe_pod_scheduled(qpi.attempts, time.time() - first if first else 0.0)
        msg = f"Successfully assigned {pod.key} to {node}"
        # Written by this binding worker when the broadcaster can take it at once (its bind is
        # done): no hand-off to an event writer thread.
        return [lambda: self._event(pod, None, "Normal", "Scheduled", "Binding", msg, write=True)]

    # ================================================================ failures
    def _failure(self, attempt: Attempt, qpi: QueuedPodInfo, cycle: int, start: float, *,
                 binding: bool) -> list[Callable[[], None]]:
        """handleSchedulingFailure (and handleBindingCycleError for a failed binding cycle),
        under the lock; returns the API calls to make once the lock is released."""
        pod = attempt.pod
        rejected = attempt.outcome == "Unschedulable"
        result = "unschedulable" if rejected else "error"
        self.stats.attempts[result] += 1
        if self.metrics is not None:
            self.metrics.observe_attempt(result, pod.scheduler_name, time.perf_counter() - start)
        # A failure after the pod was assumed clears its nomination (clearNominatedNode).
        nomination = "" if attempt.assumed is not None else self._nomination
        # Forgetting an assumed pod in the binding cycle is an AssignedPodDelete: before the
        # failure handler for an error, after it (sparing the pod itself) for a rejection. Only
        # if ForgetPod succeeded: a pod the informer confirmed meanwhile (bound by someone else)
        # stays in the cache, nothing was freed.
        forgotten = binding and self.cache.node_of(pod) is None
        if forgotten and not rejected:
            self.queue.move_all_to_active_or_backoff_queue(events.ASSIGNED_POD_DELETE, old=attempt.assumed or pod)
        current = self.objects.pod(pod.namespace, pod.name)
        alive = current is not None and current.uid == pod.uid
        if alive and current is not None and not current.node_name and self.cluster.is_pending(current):
            qpi.pod_info = PodInfo(current)
            qpi.unschedulable_plugins = set(attempt.diagnosis.unschedulable_plugins) if rejected else set()
            qpi.pending_plugins = set(attempt.diagnosis.pending_plugins) if rejected else set()
            try:
                self.queue.add_unschedulable_if_not_present(qpi, cycle)
            except QueueError as e:
                log.info("requeue %s: %s", pod.key, e)
        self.queue.done(pod.uid)
        if nomination is not None:
            # AddNominatedPod with the NominatingInfo: the requeue above read the informer's
            # pod, whose status does not show the new nomination yet.
            self.queue.add_nominated_pod(PodInfo(current if alive and current is not None else pod),
                                         NominatingInfo(nomination, NOMINATING_OVERRIDE))
        if forgotten and rejected:
            self.queue.move_all_to_active_or_backoff_queue(events.ASSIGNED_POD_DELETE, lambda p: p.uid != pod.uid,
                                                           old=attempt.assumed or pod)
        after: list[Callable[[], None]] = []
        event_msg = attempt.message or attempt.error or ""
        after.append(lambda: self._event(pod, None, "Warning", "FailedScheduling", "Scheduling",
                                         truncate_message(event_msg)))
        if alive and current is not None and not current.node_name:
            reason = REASON_UNSCHEDULABLE if rejected else REASON_SCHEDULER_ERROR
            condition = PodCondition(POD_SCHEDULED, "False", reason, _full_message(attempt))
            target = current
            after.append(lambda: self._update_pod(target, condition, nomination))
        return after

    def _update_pod(self, pod: Pod, condition: PodCondition, nomination: str | None) -> None:
        """updatePod: patch only when the condition or the nomination changes."""
        same = any(c.type == condition.type and c.status == condition.status and c.reason == condition.reason
                   and c.message == condition.message for c in pod.conditions)
        nnn_changes = nomination is not None and nomination != pod.nominated_node_name
        if same and not nnn_changes:
            return
        if nnn_changes:
            self.cluster.patch_pod_status(pod, condition=None if same else condition, nominated_node_name=nomination)
        else:
            self.cluster.patch_pod_status(pod, condition=condition)

    def _event(self, pod: Pod, related: Pod | None, event_type: str, reason: str, action: str, note: str, *,
               write: bool = False) -> None:
        self.cluster.record_event(pod, related, event_type, reason, action, note, controller=pod.scheduler_name,
                                  write=write)

    def _publish_queue_metrics(self) -> None:
        if self.metrics is None:
            return
        self.metrics.set_pending(self.queue.pending_counts())
        self.metrics.set_cache_size(nodes=len(self.cache.node_infos),
                                    pods=sum(len(ni.pods) for ni in self.cache.node_infos.values()),
                                    assumed_pods=len(self.cache.assumed))


def _full_message(attempt: Attempt) -> str:
    """The condition's message: the whole error (the event's is truncated to 1024 chars)."""
    d = attempt.diagnosis
    if attempt.outcome != "Unschedulable":
        return attempt.error or attempt.message or ""
    if attempt.assumed is not None:
        return fit_error_message(1, d.node_to_status)
    if attempt.num_all_nodes == 0:
        return NO_NODES_AVAILABLE
    return fit_error_message(attempt.num_all_nodes, d.node_to_status, d.pre_filter_msg, d.post_filter_msg)


def _safely(action: Callable[[], None]) -> None:
    try:
        action()
    except KubeschedError as e:
        log.warning("%s", e)


def _all_plugins(fwk: Framework) -> list[Any]:
    seen: dict[str, Any] = {}
    for point in ("PreEnqueue", "QueueSort", "PreFilter", "Filter", "PostFilter", "PreScore", "Score", "Reserve",
                  "Permit", "PreBind", "Bind", "PostBind"):
        for p in fwk.plugins_at(point):
            seen.setdefault(p.name, p)
    return list(seen.values())


def run_scheduler(config: KubeSchedulerConfiguration | None, client: ApiClient | LiveCluster,
                  stop_event: threading.Event, is_leader: Callable[[], bool] = lambda: True, *,
                  registry: Mapping[str, Factory] | None = None, metrics: RunnerMetrics | None = None,
                  on_synced: Callable[[], None] | None = None, sync_timeout: float | None = None,
                  register_wake: Callable[[Callable[[], None]], None] | None = None,
                  on_running: Callable[[], None] | None = None, **options: Any) -> RunResult:
    """kube-scheduler's Run: start the informers and wait for their sync (whether leading or
    not, as ``delayCacheUntilActive: false``), then schedule while ``is_leader()``. Returns
    when ``stop_event`` is set, or as soon as leadership is lost after having been held
    (kube-scheduler exits then: the caller should too). Binding cycles in flight are waited
    for and the informers stopped before returning. ``on_synced`` is called once the caches
    are synced (readiness; kube-scheduler starts leader election only then).
    ``register_wake`` is given :meth:`LiveScheduler.wake`, to be called when leadership
    changes. ``on_running``: see :meth:`LiveScheduler.run`. ``options`` go to :class:`LiveScheduler` (deterministic, seed, bind_workers,
    pod_max_in_unschedulable_pods_duration)."""
    cfg = config if config is not None else default_configuration()
    if isinstance(client, LiveCluster):
        cluster = client
    else:
        cluster = LiveCluster(client, scheduler_names=[p.scheduler_name for p in cfg.profiles],
                              options=LiveOptions(features=cfg.features))
    sched = LiveScheduler(cfg, cluster, registry=registry, metrics=metrics, **options)
    if register_wake is not None:
        register_wake(sched.wake)
    try:
        if not sched.start(sync_timeout=sync_timeout, stop=stop_event):
            return RunResult("stopped", sched.stats)
        if on_synced is not None:
            on_synced()
        reason = sched.run(stop_event, is_leader, on_running)
        return RunResult(reason, sched.stats)
    finally:
        sched.stop()


__all__ = ["LiveCache", "LiveScheduler", "RunResult", "RunStats", "RunnerMetrics", "pre_check_for_node",
           "run_scheduler"]
