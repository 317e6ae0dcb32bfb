"""Offline simulation: schedule every pending pod of a set of manifests.

The procedure is the conformance trace contract (../shared/conformance/README.md §2): the
schedulable pending pods are sorted once by the QueueSort order (priority, then creation
time, then document order) and each is attempted once; after a successful preemption the
same pod is retried at once (at most 3 attempts). Bound pods get start time
``T + (k+1)`` s, T being the latest timestamp in the input and k the step index.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesched._cache import Cache
from kubesched._queue import QueueNominator, SchedulingQueue
from kubesched._runtime.framework import Framework
from kubesched._runtime.handle import FrameworkHandle
from kubesched._runtime.invariants import ClusterView, InvariantChecker, new_checker
from kubesched._runtime.profile import build_framework
from kubesched.cluster.binding import binding_labels, clears_nomination
from kubesched.cluster.memory import MemoryObjects
from kubesched.cluster.pvcontroller import complete_volume_bindings
from kubesched.config import KubeSchedulerConfiguration, default_configuration
from kubesched.errors import ApiError
from kubesched.extender import HTTPExtender, new_http_extenders, with_ignored_extended_resources
from kubesched.features import Features
from kubesched.framework import CycleState, PodInfo, QueuedPodInfo
from kubesched.objects import ClusterObjects, Node, Pod
from kubesched.objects.devices import AllocationResult
from kubesched.plugins.dynamicresources.plugin import NodeVerdict
from kubesched.plugins.registry import Factory, registry_for
from kubesched.plugins.volumebinding import pending_volume_bindings
from kubesched.scheduler import EXTENDER_SCORE_PREFIX, Attempt, Scheduler

MAX_ATTEMPTS = 3
DYNAMIC_RESOURCES = "DynamicResources"
ORACLE = "kube-scheduler v1.30.12"


@dataclass(slots=True)
class Step:
    attempt: Attempt
    number: int  # 1 for the first attempt of a pod


@dataclass(slots=True)
class SimulationResult:
    steps: list[Step] = field(default_factory=list)
    final: dict[str, str | None] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # pod key -> why it was never attempted
    deleted: list[str] = field(default_factory=list)
    oracle: str = ORACLE  # the kube-scheduler release whose semantics decided

    def trace(self) -> dict[str, Any]:
        """The trace of ../shared/conformance/README.md §3."""
        return {"oracle": self.oracle, "steps": [step_to_json(s) for s in self.steps], "final": dict(self.final)}


def step_to_json(step: Step) -> dict[str, Any]:
    a = step.attempt
    scores = a.scores.as_dict() if a.scores is not None and len(a.feasible) > 1 else {}
    if scores and a.extender_scores is not None:
        # Each extender's final score (score x weight x 10) on the nodes it scored; none in
        # the conformance corpus, which configures no extender.
        for node, per_extender in a.extender_scores.by_node.items():
            if node in scores:
                for name, score in per_extender:
                    key = EXTENDER_SCORE_PREFIX + name
                    scores[node][key] = scores[node].get(key, 0) + score
    total = {ni.name: int(t) for ni, t in zip(a.scores.nodes, a.scores.totals, strict=True)} if scores and a.scores else {}
    return {
        "pod": a.pod.key,
        "attempt": step.number,
        "outcome": "Scheduled" if a.outcome == "Scheduled" else "Unschedulable",
        "node": a.node,
        "feasible": list(a.feasible),
        "failures": {n: {"plugin": s.plugin, "reasons": list(s.reasons)} for n, s in sorted(a.failures.items())},
        "scores": scores,
        "total": total,
        "message": a.message if a.outcome != "Scheduled" else None,
        "nominatedNode": a.nominated_node,
        "victims": sorted(v.key for v in a.victims),
        **({"allocations": allocs} if (allocs := claim_allocations(a)) else {}),
    }


def attempt_allocations(a: Attempt) -> list[tuple[str, AllocationResult]]:
    """(claim key, allocation) of each claim a scheduled pod holds (DynamicResources; also a
    pod without resourceClaims, whose extended resources a DeviceClass may serve)."""
    if a.outcome != "Scheduled" or not a.node or a.framework is None or a.state is None:
        return []
    out: list[tuple[str, AllocationResult]] = []
    for p in a.framework.plugins_at("Reserve"):
        allocations = getattr(p, "allocations", None)
        if p.name == DYNAMIC_RESOURCES and allocations is not None:
            out.extend(allocations(a.state, a.node))
    return out


def claim_allocations(a: Attempt) -> list[dict[str, Any]]:
    """The devices a scheduled pod's claims hold (DynamicResources), for the trace."""
    return [{"claim": key, "devices": [d.describe() for d in alloc.devices]} for key, alloc in attempt_allocations(a)]


def device_verdicts(a: Attempt, nodes: Sequence[Node]) -> dict[str, NodeVerdict]:
    """DynamicResources' view of each node for an attempt of a pod with claims (``explain``):
    its verdict, the devices the claims would hold there, the node's device use. Empty for a
    pod without claims or a profile without the plugin."""
    if a.framework is None or a.state is None or not a.pod.resource_claims:
        return {}
    for p in a.framework.plugins_at("Filter"):
        verdict = getattr(p, "node_verdict", None)
        if p.name == DYNAMIC_RESOURCES and verdict is not None:
            out: dict[str, NodeVerdict] = {}
            for node in nodes:
                v = verdict(a.state, a.pod, node)
                if v is None:
                    return {}
                out[node.name] = v
            return out
    return {}


def terminal_pod_reason(pod: Pod) -> str:
    """Why a pending pod in phase Succeeded/Failed is never attempted: kube-scheduler's pod
    informer lists with the field selector status.phase!=Succeeded,status.phase!=Failed
    (scheduler.go: NewInformerFactory), so it never sees such a pod."""
    return (f"status.phase is {pod.phase}: a terminal pod is never scheduled (kube-scheduler's informer excludes "
            f"Succeeded and Failed pods)")


class Simulator:
    """Loads the objects into an in-memory cluster and runs the scheduler over it.

    The configuration's ``extenders`` are called over HTTP (one client each, closed when
    :meth:`run` ends, or by :meth:`close` / leaving a ``with`` block)."""

    def __init__(self, objs: ClusterObjects, config: KubeSchedulerConfiguration | None = None, *,
                 deterministic: bool = False, seed: int | None = None,
                 registry: Mapping[str, Factory] | None = None, check_invariants: bool | None = None,
                 features: Features | None = None, informer_lists: bool | None = None) -> None:
        """``check_invariants``: check the scheduler's invariants after every cycle of :meth:`run`
        (kubesched._runtime.invariants; None: the KUBESCHED_CHECK_INVARIANTS environment variable).
        ``features``: the kube-scheduler release (and gates) that decides; default the one the
        objects were admitted with (``objs.features``). ``informer_lists``: the objects reach
        the caches fed only by informer events (the ExtendedResourceCache of DeviceClasses) as
        an informer's initial list; default: unless ``deterministic`` — the conformance
        procedure, like its reference harness, replays no events, so no DeviceClass serves an
        extended resource there."""
        self.objs = objs
        self.features = features if features is not None else objs.features
        self.config = config if config is not None else default_configuration(features=self.features)
        self.deterministic = deterministic
        self.rng = random.Random(0 if deterministic and seed is None else seed)
        self.cache = Cache(max(len(objs.nodes), 1), by_name=deterministic)
        self.cache.add_nodes(objs.nodes)
        for p in objs.pods:
            if p.node_name and not p.is_terminal:
                self.cache.add_pod(p)
        self.objects = MemoryObjects.from_cluster(objs)
        if informer_lists if informer_lists is not None else not deterministic:
            self.objects.observe_device_classes()
        self.nominator = QueueNominator(pod_lister=self.objects.pod)
        self.current: dict[str, Pod] = {p.uid: p for p in objs.pods}
        self.deleted: set[str] = set()
        self.volume_changes: list[str] = []  # what the PV controller did (claims bound, PVs provisioned)
        self._time = objs.latest_timestamp
        self.profiles: dict[str, Framework] = {}
        reg = registry if registry is not None else registry_for(self.features)
        # buildExtenders: ignoredByScheduler resources replace NodeResourcesFit's ignoredResources.
        profiles = with_ignored_extended_resources(self.config.profiles, self.config.extenders)
        self.extenders: list[HTTPExtender] = new_http_extenders(self.config.extenders)
        try:
            for index, profile in enumerate(profiles):
                handle = FrameworkHandle(
                    self.cache, self.objects, self.nominator, profile_name=profile.scheduler_name,
                    binder=self._bind, deleter=self._delete, clear_nomination=self._clear_nomination,
                    deterministic=deterministic, rng=self.rng, extenders=self.extenders, features=self.features,
                )
                self.profiles[profile.scheduler_name] = build_framework(profile, reg, handle, index=index)
        except BaseException:
            self.close()
            raise
        self.scheduler = Scheduler(
            self.profiles, self.cache, self.nominator, deterministic=deterministic, rng=self.rng,
            percentage_of_nodes_to_score=self.config.percentage_of_nodes_to_score or 0,
            set_nominated_node=self._set_nominated, clock=lambda: self._time,
            extenders=self.extenders, bind=self._bind, features=self.features,
        )
        self.scheduler.on_bound = self._complete_volume_bindings
        self.scheduler.nominate_for_expectation = self._nominate_for_expectation
        # Called with every recorded step (the CLI's progress bar); never changes a decision.
        self.on_step: Callable[[Step], None] | None = None
        self.check_invariants = check_invariants
        self.invariants: InvariantChecker | None = None  # created by run() when switched on
        self._procedure: tuple[set[str], dict[str, str], set[str]] = (set(), {}, set())

    def close(self) -> None:
        """Close the extenders' HTTP clients."""
        for ext in self.extenders:
            ext.close()

    def __enter__(self) -> Simulator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- cluster actions (what the API server would do)
    def _bind(self, pod: Pod, node: str) -> None:
        """pods/binding: a pod binds at most once (a second bind is a 409 Conflict)."""
        cur = self.current.get(pod.uid)
        if cur is not None and cur.node_name:
            raise ApiError(f'Operation cannot be fulfilled on pods/binding "{pod.name}": pod {pod.name} is already '
                           f"assigned to node \"{cur.node_name}\"", status=409)
        if pod.uid in self.deleted:
            raise ApiError(f'pods "{pod.name}" not found', status=404)
        base = cur or pod
        # The API server's side of the binding (kubesched.cluster.binding): 1.36 clears the
        # nomination and copies the node's zone/region labels onto the pod.
        nominated = "" if clears_nomination(self.features) else base.nominated_node_name
        ni = self.cache.node_infos.get(node)
        extra = binding_labels(self.features, ni.node.meta.labels) if ni is not None and ni.node is not None else {}
        relabelled = bool(extra) and any(base.meta.labels.get(k) != v for k, v in extra.items())
        meta = dataclasses.replace(base.meta, labels={**base.meta.labels, **extra}) if relabelled else base.meta
        bound = dataclasses.replace(base, meta=meta, node_name=node, nominated_node_name=nominated,
                                    start_time=pod.start_time)
        self.current[pod.uid] = bound
        self.objects.set_pod(bound)
        if relabelled:
            self._relabel_in_cache(bound)
        if self.invariants is not None:
            self.invariants.record_bind(pod, node)

    def _complete_volume_bindings(self, state: CycleState, pod: Pod, node: str) -> None:
        """The PV controller's part after VolumeBinding's PreBind (kubesched.cluster.pvcontroller)."""
        pending = pending_volume_bindings(state)
        ni = self.cache.node_infos.get(node)
        if pending is None or ni is None or ni.node is None:
            return
        static = [(b.pvc, b.pv) for b in pending.static_bindings]
        if static or pending.dynamic_provisions:
            self.volume_changes.extend(complete_volume_bindings(self.objects, ni.node, static,
                                                                pending.dynamic_provisions))
            self.on_volumes_bound()

    def on_volumes_bound(self) -> None:
        """Hook for the timeline (cluster events for the bound claims)."""

    def _nominate_for_expectation(self, pod: Pod, node: str) -> None:
        """The status patch of NominatedNodeNameForExpectation: the pod's view only (an assumed
        pod's informer update reaches neither the queue nor the nominator)."""
        cur = self.current.get(pod.uid, pod)
        if cur.nominated_node_name != node and not cur.node_name:
            new = dataclasses.replace(cur, nominated_node_name=node)
            self.current[pod.uid] = new
            self.objects.set_pod(new)

    def _relabel_in_cache(self, bound: Pod) -> None:
        """The informer's view of a pod the binding relabelled replaces the assumed one."""
        if self.cache.node_of(bound) != bound.node_name:
            return
        self.cache.update_pod_metadata(bound)

    def _delete(self, victim: Pod, reason: str, preemptor: Pod | None = None) -> None:
        """Preemption deletes a victim at once (the trace procedure: no graceful termination)."""
        self.cache.remove_pod(victim)
        self.objects.delete_pod(victim)
        self.nominator.delete(victim)
        self.deleted.add(victim.uid)
        self.scheduler.victims.append(victim)

    def _set_nominated(self, pod: Pod, node: str) -> Pod:
        cur = self.current.get(pod.uid, pod)
        new = dataclasses.replace(cur, nominated_node_name=node)
        self.current[pod.uid] = new
        self.objects.set_pod(new)
        return new

    def _clear_nomination(self, pod: Pod) -> None:
        self.nominator.delete(pod)
        if pod.uid in self.current and self.current[pod.uid].nominated_node_name:
            self._set_nominated(pod, "")

    # ---- the run
    def pending(self) -> tuple[list[Pod], dict[str, str]]:
        """Schedulable pending pods in queue order, and why the others are left alone."""
        order, skipped, _ = self._enqueue()
        return order, skipped

    def _enqueue(self) -> tuple[list[Pod], dict[str, str], list[Pod]]:
        """What upstream's informer and PriorityQueue.Add make of the input's pods: the pods
        to attempt in queue order, why the others are left alone, and (in document order,
        the informer's initial list) the pods Add put in activeQ, hence in the nominator."""
        skipped: dict[str, str] = {}
        queue: list[tuple[Any, ...]] = []
        enqueued: list[Pod] = []
        # The informer's initial list: every pending pod of our profiles reached
        # addPodToSchedulingQueue, which makes it known to its pod group in the cache
        # (AddPodGroupMember) before PreEnqueue decides (GangScheduling counts the members;
        # the UnschedulablePodAdd events re-run PreEnqueue for the members gated meanwhile).
        for p in self.objs.pods:
            if not p.node_name and not p.is_terminal and p.scheduler_name in self.profiles:
                self.cache.add_pod_group_member(p)
        for i, p in enumerate(self.objs.pods):
            if p.node_name:
                continue
            if p.is_terminal:
                skipped[p.key] = terminal_pod_reason(p)
                continue
            fwk = self.profiles.get(p.scheduler_name)
            if fwk is None:
                skipped[p.key] = f"schedulerName {p.scheduler_name!r} is not one of this scheduler's profiles"
                continue
            # Add runs PreEnqueue (addToActiveQ): a gated pod waits in unschedulablePods and
            # is never popped, whether or not it is being deleted.
            gate = fwk.run_pre_enqueue_plugins(p)
            if gate is not None:
                skipped[p.key] = gate.message
                continue
            enqueued.append(p)
            # ScheduleOne's skipPodSchedule drops a pod being deleted only once popped; it
            # stays in the nominator (see _run).
            if p.is_terminating:
                skipped[p.key] = f"skip schedule deleting pod: {p.key}"
                continue
            queue.append((p, fwk, i))
        # Sort with the profile's QueueSort (stable, document order last).
        import functools

        infos = [(QueuedPodInfo(PodInfo(p), timestamp=p.meta.creation_timestamp or 0.0, seq=i), fwk) for p, fwk, i in queue]

        def cmp(a: tuple[QueuedPodInfo, Framework], b: tuple[QueuedPodInfo, Framework]) -> int:
            if a[1].less(a[0], b[0]):
                return -1
            if a[1].less(b[0], a[0]):
                return 1
            return a[0].seq - b[0].seq

        infos.sort(key=functools.cmp_to_key(cmp))
        return [qi.pod for qi, _ in infos], skipped, enqueued

    @property
    def now(self) -> float:
        """The simulated clock (seconds): what plugins' and Permit timers' clock reads. A
        caller stepping pods itself (kubesched.whatif.capacity) moves it forward."""
        return self._time

    @now.setter
    def now(self, value: float) -> None:
        self._time = value

    def wait_out(self, waiting: list[Attempt]) -> None:
        """Advance the clock from one Permit deadline to the next until every pod in
        ``waiting`` is decided and through its binding cycle (a Permit wait is at most 15
        minutes)."""
        while waiting:
            deadlines = [d for fwk in self.profiles.values()
                         if (d := fwk.handle.waiting_pods.next_deadline()) is not None]
            if not deadlines:
                break
            self._time = max(self._time, min(deadlines))
            self.finish_waiting(waiting)

    def finish_waiting(self, waiting: list[Attempt]) -> None:
        """Fire the Permit timers due at the current time, then run the binding cycle of every
        waiting pod that was allowed or rejected (one binding cycle may decide others: an
        Unreserve rejecting a pod's siblings); ``waiting`` keeps the undecided ones."""
        if not waiting:
            return
        for fwk in self.profiles.values():
            fwk.handle.waiting_pods.expire(self._time)
        while decided := [a for a in waiting if a.waiting is None or a.waiting.done]:
            for attempt in decided:
                waiting.remove(attempt)
                self.scheduler.binding_cycle(attempt)
                self._adopt_if_bound(attempt)
                self._check_invariants(attempt, "binding")

    def _adopt_if_bound(self, attempt: Attempt) -> None:
        """A binding cycle that failed after the bind went through (a Bind plugin erring after
        binding) leaves a bound pod the cache forgot: the informer would add it back. Any other
        failure after assume carries clearNominatedNode (handleSchedulingFailure): the nominator
        dropped the pod when it was assumed, its status.nominatedNodeName is cleared too."""
        cur = self.current.get(attempt.pod.uid)
        if attempt.outcome != "Scheduled" and cur is not None and cur.node_name and self.cache.node_of(cur) is None:
            self.cache.add_pod(cur)
        elif (attempt.outcome not in ("Scheduled", "Waiting") and attempt.assumed is not None and cur is not None
              and cur.nominated_node_name):
            self.scheduler.set_nomination(cur, "")

    def run(self) -> SimulationResult:
        try:
            return self._run()
        finally:
            self.close()

    def _run(self) -> SimulationResult:
        result = SimulationResult(oracle=self.features.oracle)
        order, result.skipped, enqueued = self._enqueue()
        self._procedure = ({p.uid for p in order}, result.skipped, {p.uid for p in enqueued})
        self._new_invariants()
        # status.nominatedNodeName reserves room only through the nominator, which upstream
        # fills from PriorityQueue.Add (addNominatedPodUnlocked with no NominatingInfo: the
        # status' node, if the pod lister has the pod unbound), called only for pods of our
        # profiles (eventhandlers.go: responsibleForPod), not Succeeded/Failed (the informer's
        # field selector), past PreEnqueue (no schedulingGates). A pod being deleted is
        # nominated all the same; a nomination to a missing node matches no NodeInfo.
        for p in enqueued:
            self.nominator.add_nominated_pod(PodInfo(p))
        waiting: list[Attempt] = []  # held at Permit; their steps are completed in place
        for pod in order:
            if pod.uid in self.deleted:
                continue
            number = 1
            while True:
                current = self.current[pod.uid]
                self._time = self.objs.latest_timestamp + len(result.steps) + 1
                attempt = self.scheduler.schedule_one(current)
                step = Step(attempt, number)
                result.steps.append(step)
                if self.on_step is not None:
                    self.on_step(step)
                if attempt.outcome == "Waiting":
                    waiting.append(attempt)
                self._adopt_if_bound(attempt)
                self._check_invariants(attempt, "binding" if attempt.outcome == "Scheduled" else "scheduling",
                                       len(result.steps))
                self.finish_waiting(waiting)
                if attempt.outcome == "Scheduled" or not attempt.nominated_node or number >= MAX_ATTEMPTS:
                    break
                number += 1
        # Pods still held at Permit once every pod was attempted: time runs on to the next
        # deadline until each is decided (a Permit wait is at most 15 minutes).
        self.wait_out(waiting)
        for p in self.objs.pods:
            if p.uid in self.deleted:
                result.deleted.append(p.key)
                continue
            cur = self.current[p.uid]
            result.final[p.key] = cur.node_name or None
        if self.invariants is not None:
            self.invariants.check(len(result.steps), None, "end")
        return result

    # ---- the invariant checker's view (kubesched._runtime.invariants)
    def _new_invariants(self, queue: SchedulingQueue | None = None) -> None:
        view = ClusterView(self._cluster_pods, self._cluster_pod, self._pending_reason, self._mirrors_nomination)
        self.invariants = new_checker(self.check_invariants, self.cache, self.nominator, self.profiles, view,
                                      queue=queue)

    def _check_invariants(self, attempt: Attempt, phase: str, cycle: int | None = None) -> None:
        if self.invariants is not None:
            self.invariants.check(cycle, attempt.pod, phase, attempt)

    def _cluster_pods(self) -> Iterator[Pod]:
        deleted = self.deleted
        return (p for uid, p in self.current.items() if uid not in deleted)

    def _cluster_pod(self, pod: Pod) -> Pod | None:
        return None if pod.uid in self.deleted else self.current.get(pod.uid)

    def _pending_reason(self, pod: Pod) -> str | None:
        """The conformance procedure has no queue: a pending pod is skipped with a reason, or in
        the procedure's order (still to come, or attempted: its step says why it is pending)."""
        order, skipped, _ = self._procedure
        reason = skipped.get(pod.key)
        if reason is None and pod.uid in order:
            reason = "in the procedure's queue order"
        return reason

    def _mirrors_nomination(self, pod: Pod) -> bool:
        """Whether upstream's nominator holds the pending pod (PriorityQueue.Add took it)."""
        return pod.uid in self._procedure[2]
