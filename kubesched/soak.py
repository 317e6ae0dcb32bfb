"""``kubesched bench --workload soak``: a long run of pod arrivals and departures, with nodes
joining and leaving, on the scheduling queue's virtual clock (kubesched.timeline), checking
that nothing grows without bound.

The stream (:class:`SoakStream`, deterministic for a seed; ``soak-live`` plays the same one
against the live scheduler, kubesched.soak_live):

- Nodes ``node-<i>``: every fifth one high-memory (8 cpu, 64Gi, ``pool=highmem``), the others
  general (4 cpu, 16Gi, ``pool=general``), 110 pods each, zones ``zone1..zone3`` round-robin.
- Pods arrive with a lifetime (exponential, mean :data:`MEAN_LIFETIME` s) and depart when it
  ends, bound or still pending (deleted). Arrival rate = steady running pods / mean lifetime,
  the steady running pods being what fills :data:`OCCUPANCY` of the cluster's cpu with the
  mean pod of the mix, so occupancy stays level and pods keep fitting. Arrivals are a Poisson
  process; the first ones (one steady population) come :data:`WARMUP_SPEEDUP` times faster:
  the warm-up, filling the cluster within a twentieth of a lifetime.
- The mix (:data:`SHAPES`): plain pods, a zone topology spread constraint, preferred and
  required pod anti-affinity per hostname, a ``pool=highmem`` nodeSelector, high-priority pods
  (which may preempt), and a few pods whose nodeSelector no node matches (pending until their
  short lifetime ends).
- Churn: every :data:`CHURN_EVERY` s a random node is cordoned and drained (its pods evicted,
  i.e. deleted), removed :data:`DRAIN_SECONDS` s later; a new node joins
  :data:`REJOIN_AFTER` s after the drain started.

The simulation (:class:`SoakTimeline`) mirrors what the informers deliver: an arrival is
PriorityQueue.Add; a departure of a bound pod is the cache's RemovePod and an AssignedPodDelete
move, of a pending one the queue's Delete (nominator included); a node joining is AddNode and
a NodeAdd move with preCheckForNode, a cordon an update, a removal RemoveNode (no move). Every
departed pod is forgotten by every structure (the simulator's pod maps, the cache, the queue,
the nominator, the invariant checker's binding records); no step, no event is kept, only
counters. The invariant checker runs (sampled global checks) unless switched off.

The report: arrivals, departures by kind, binds, attempts, what is left at the end, nodes
joined and left, simulated and wall seconds, attempts/s and binds/s, RSS at 10 %, 50 % and
100 % of the arrivals, and the growth from 10 % to 100 % (a problem at 10 % or more), plus
bookkeeping checks that every count adds up and that no structure holds a departed pod.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import heapq
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubesched._queue import events
from kubesched._queue.events import node_update_events
from kubesched._runtime.scavenger import c_heap_bytes
from kubesched.config import KubeSchedulerConfiguration
from kubesched.errors import KubeschedError
from kubesched.framework import NodeInfo, QueuedPodInfo
from kubesched.objects import ClusterObjects, ObjectMeta, Pod, tolerations_tolerate_taint
from kubesched.objects.model import NO_SCHEDULE
from kubesched.objects.parse import parse_namespace, parse_node, parse_pod
from kubesched.plugins.helpers.nodeaffinity import RequiredNodeAffinity
from kubesched.plugins.nodeports.plugin import fits as node_ports_fit
from kubesched.plugins.noderesources import fits as resources_fit
from kubesched.scheduler import Attempt
from kubesched.timeline import TimelineResult, TimelineSimulator

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
NAMESPACE = "default"
START = 1704067200.0  # the virtual clock's start (2024-01-01T00:00:00Z)

SOAK_NODES = 5000
SOAK_ARRIVALS = 1_000_000
OCCUPANCY = 0.7  # of the cluster's cpu, by the steady running pods
MEAN_LIFETIME = 1800.0  # s
CHURN_EVERY = 120.0  # s between two node drains
DRAIN_SECONDS = 30.0  # cordoned -> removed
REJOIN_AFTER = 60.0  # a new node joins this long after a drain started
GRACE_SECONDS = 1  # the pods' terminationGracePeriodSeconds (preemption victims)
GROWTH_LIMIT = 0.10  # RSS growth from the 10 % checkpoint to the end
WARMUP_SPEEDUP = 20.0  # the warm-up arrivals (one steady population) come this much faster
# The invariant checker's global checks (every node and pod, the queue, the nominator) are
# sampled: after a global check visiting V objects, the next one comes V / budget cycles later.
# The checker's default budget (1000) makes them cost 3-5 times the scheduling itself at 5000
# nodes and ~47000 running pods; the soak samples them 10 times less often (the incremental
# checks of each cycle's pod and node still run after every cycle).
INVARIANT_BUDGET = 100
# Departed pods that bounded caches may legitimately still reference at the end (the filter
# plan's usage vectors: 16384 pods); more is a leak.
REFERENCED_LIMIT = 20_000
CHECKPOINTS = (0.1, 0.5, 1.0)
HIGH_PRIORITY = 1000
PRIORITY_CLASS = "soak-critical"


# ----------------------------------------------------------------------------- the stream
@dataclass(frozen=True, slots=True)
class Shape:
    """One kind of pod of the mix: ``share`` per mille of the arrivals."""

    name: str
    share: int
    cpu_m: int
    memory: str
    rule: str = ""  # spread | anti-preferred | anti-required | highmem | nowhere
    priority: int = 0
    lifetime_factor: float = 1.0


SHAPES: tuple[Shape, ...] = (
    Shape("web", 445, 250, "512Mi"),
    Shape("api", 200, 500, "1Gi", "spread"),
    Shape("cache", 150, 250, "256Mi", "anti-preferred"),
    Shape("singleton", 50, 100, "128Mi", "anti-required"),
    Shape("highmem", 50, 1000, "8Gi", "highmem"),
    Shape("critical", 100, 500, "1Gi", priority=HIGH_PRIORITY),
    # nodeSelector pool=gpu, which no node has: pending (unschedulablePods, retried on the
    # 5-minute flush) until its lifetime (1/30 of the others') ends.
    Shape("stuck", 5, 100, "128Mi", "nowhere", lifetime_factor=1 / 30),
)
assert sum(s.share for s in SHAPES) == 1000


def node_name(index: int) -> str:
    return f"node-{index}"


def pod_name(index: int) -> str:
    return f"soak-{index:07d}"


def node_manifest(index: int, *, unschedulable: bool = False) -> dict[str, Any]:
    name = node_name(index)
    highmem = index % 5 == 0
    cap = {"cpu": "8", "memory": "64Gi", "pods": "110"} if highmem else {"cpu": "4", "memory": "16Gi", "pods": "110"}
    labels = {HOSTNAME: name, ZONE: f"zone{index % 3 + 1}", "pool": "highmem" if highmem else "general"}
    out: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                           "status": {"capacity": dict(cap), "allocatable": dict(cap)}}
    if unschedulable:
        out["spec"] = {"unschedulable": True}
    return out


def node_cpu_m(index: int) -> int:
    return 8000 if index % 5 == 0 else 4000


def pod_manifest(shape: Shape, name: str, *, live: bool = False) -> dict[str, Any]:
    """The pod of ``shape``; ``live``: the high priority by its PriorityClass (admission resolves
    it) instead of spec.priority."""
    app = shape.name
    spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": GRACE_SECONDS,
        "containers": [{"name": app, "image": f"registry.example/{app}:1",
                        "resources": {"requests": {"cpu": f"{shape.cpu_m}m", "memory": shape.memory}}}]}
    if shape.rule == "spread":
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                                              "labelSelector": {"matchLabels": {"app": app}}}]
    elif shape.rule == "anti-preferred":
        spec["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": app}},
                                                "topologyKey": HOSTNAME}}]}}
    elif shape.rule == "anti-required":
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOSTNAME}]}}
    elif shape.rule == "highmem":
        spec["nodeSelector"] = {"pool": "highmem"}
    elif shape.rule == "nowhere":
        spec["nodeSelector"] = {"pool": "gpu"}
    if shape.priority:
        if live:
            spec["priorityClassName"] = PRIORITY_CLASS
        else:
            spec["priority"] = shape.priority
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": app, "soak": "true"}},
            "spec": spec}


def priority_class_manifest() -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": PRIORITY_CLASS},
            "value": HIGH_PRIORITY, "description": "kubesched soak: pods that may preempt"}


# Stream event kinds, in the order a tie at the same instant is handled (then by seq).
ARRIVE, DEPART, CORDON, REMOVE, JOIN = "arrive", "depart", "cordon", "remove", "join"


@dataclass(frozen=True, slots=True)
class StreamEvent:
    time: float
    kind: str
    index: int  # the pod's (arrive, depart) or the node's (cordon, remove, join) index
    shape: Shape | None = None  # arrive


class SoakStream:
    """Arrivals, departures and node churn in virtual time, merged in one heap, generated
    lazily (the heap holds one pending arrival, the departures of pods that arrived and have
    not departed yet, and the churn in progress: bounded by the running population)."""

    def __init__(self, nodes: int, arrivals: int, *, seed: int = 1, occupancy: float = OCCUPANCY,
                 mean_lifetime: float = MEAN_LIFETIME, churn_every: float = CHURN_EVERY,
                 drain_seconds: float = DRAIN_SECONDS, rejoin_after: float = REJOIN_AFTER,
                 start: float = START) -> None:
        if nodes < 1 or arrivals < 0:
            raise KubeschedError(f"want at least one node and no negative pod count, got nodes={nodes} "
                                 f"pods={arrivals}")
        self.nodes = nodes
        self.arrivals = arrivals
        self.start = start
        self.mean_lifetime = mean_lifetime
        self.churn_every = churn_every
        self.drain_seconds = drain_seconds
        self.rejoin_after = rejoin_after
        self._rng = random.Random(seed)
        self._shapes = [s for s in SHAPES for _ in range(s.share)]
        mean_cpu = sum(s.share * s.cpu_m for s in SHAPES if s.rule != "nowhere") / sum(
            s.share for s in SHAPES if s.rule != "nowhere")
        cluster_cpu = sum(node_cpu_m(i) for i in range(nodes))
        self.steady_pods = max(1, round(occupancy * cluster_cpu / mean_cpu))
        self.rate = self.steady_pods / mean_lifetime  # arrivals per virtual second
        self.warmup = min(self.steady_pods, arrivals)  # arrivals of the warm-up
        self.arrived = 0
        self.next_node = nodes
        self._alive: list[int] = list(range(nodes))  # nodes not cordoned (drain candidates)
        self._pos = {n: i for i, n in enumerate(self._alive)}
        self._heap: list[tuple[float, int, str, int, Shape | None]] = []
        self._seq = 0
        if arrivals:
            self._push(start, ARRIVE, 0)
            if churn_every > 0:
                self._push(start + churn_every, CORDON, -1)

    @property
    def exhausted(self) -> bool:
        """Every arrival was handed out."""
        return self.arrived >= self.arrivals

    def __len__(self) -> int:
        return len(self._heap)

    def initial_nodes(self) -> range:
        return range(self.nodes)

    def _push(self, t: float, kind: str, index: int, shape: Shape | None = None) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, kind, index, shape))

    def next_time(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def pop(self) -> StreamEvent:
        t, _, kind, index, shape = heapq.heappop(self._heap)
        if kind == ARRIVE:
            shape = self._rng.choice(self._shapes)
            self.arrived += 1
            lifetime = self._rng.expovariate(1.0 / (self.mean_lifetime * shape.lifetime_factor))
            self._push(t + lifetime, DEPART, index)
            if not self.exhausted:
                rate = self.rate * WARMUP_SPEEDUP if self.arrived < self.warmup else self.rate
                gap = self._rng.expovariate(rate)
                self._push(t + gap, ARRIVE, index + 1)
        elif kind == CORDON:
            index = self._take_node()
            if index >= 0:
                self._push(t + self.drain_seconds, REMOVE, index)
                self._push(t + self.rejoin_after, JOIN, self.next_node)
                self.next_node += 1
            if not self.exhausted:
                self._push(t + self.churn_every, CORDON, -1)
        elif kind == JOIN:
            self._pos[index] = len(self._alive)
            self._alive.append(index)
        return StreamEvent(t, kind, index, shape)

    def _take_node(self) -> int:
        """A random schedulable node to drain (-1 when only one is left)."""
        if len(self._alive) <= 1:
            return -1
        i = self._rng.randrange(len(self._alive))
        node = self._alive[i]
        last = self._alive.pop()
        if last != node:
            self._alive[i] = last
            self._pos[last] = i
        del self._pos[node]
        return node


# ----------------------------------------------------------------------------- RSS
def rss_bytes() -> int:
    """The process's resident set size now (/proc/self/statm; elsewhere the peak RSS)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


@dataclass(frozen=True, slots=True)
class HeapFigures:
    """Where the RSS goes, to tell a leak from fragmentation: Python's allocated blocks
    (sys.getallocatedblocks: objects alive, flat when nothing leaks) and the C heap's bytes in
    use and free but kept by the allocator (glibc's mallinfo2; -1 elsewhere). Large lists,
    dict tables and numpy arrays live on the C heap; Python's small objects in pymalloc's arenas."""

    python_blocks: int
    malloc_in_use: int = -1
    malloc_free: int = -1


def heap_figures() -> HeapFigures:
    c_heap = c_heap_bytes()
    if c_heap is None:
        return HeapFigures(sys.getallocatedblocks())
    return HeapFigures(sys.getallocatedblocks(), *c_heap)


def in_forked_child(fn: Callable[[], int]) -> int:
    """``fn()`` run in a forked copy of this process (where fork exists), its result sent back
    through a pipe: a scan of every object allocates lists and sets as large as the heap, and
    freeing them leaves holes in the C heap that would show in this process's RSS (and move the
    C allocator's mmap threshold) long after. The copy is thrown away; the parent's heap stays
    as the run left it. Without fork, or if the child fails, ``fn()`` runs here."""
    if not hasattr(os, "fork"):
        return fn()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, report, exit without running any cleanup of the parent's
        code = 1
        try:
            os.close(r)
            os.write(w, str(fn()).encode("ascii"))
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        return fn()
    return int(data)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    fraction: float  # of the arrivals
    arrivals: int  # when it was taken
    rss: int  # bytes
    wall: float  # s since the run started
    departed_referenced: int = -1  # departed pods some object still references (-1: not counted)
    heap: HeapFigures | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"fraction": self.fraction, "arrivals": self.arrivals,
                               "rss_mib": round(self.rss / 2**20, 1), "wall_seconds": round(self.wall, 1),
                               "departed_pods_referenced": self.departed_referenced}
        if self.heap is not None:
            out["python_blocks"] = self.heap.python_blocks
            if self.heap.malloc_in_use >= 0:
                out["malloc_in_use_mib"] = round(self.heap.malloc_in_use / 2**20, 1)
                out["malloc_free_mib"] = round(self.heap.malloc_free / 2**20, 1)
        return out


def baseline(checkpoints: list[Checkpoint], warmup: int) -> Checkpoint | None:
    """The growth's starting point: the first checkpoint (the 10 % one) unless the warm-up was
    not over then, else the first one after it (None with fewer than two checkpoints)."""
    if len(checkpoints) < 2:
        return None
    return next((c for c in checkpoints[:-1] if c.arrivals >= warmup), checkpoints[-2])


def growth(checkpoints: list[Checkpoint], warmup: int = 0) -> float | None:
    """RSS growth from the baseline checkpoint to the last (None with fewer than two)."""
    base = baseline(checkpoints, warmup)
    if base is None or base.rss <= 0:
        return None
    return (checkpoints[-1].rss - base.rss) / base.rss


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


# ----------------------------------------------------------------------------- the simulation
def pre_check_for_node(node_info: NodeInfo) -> Callable[[Pod], bool]:
    """preCheckForNode (queueing hints off), as live mode's (kubesched.live.runner, not
    importable from this layer): a node event moves a pod only if it would fit that node by
    NodeResourcesFit.Fits, required NodeAffinity, NodeName, NodePorts, and tolerates its
    NoSchedule taints."""
    node = node_info.node

    def check(pod: Pod) -> bool:
        if node is None or resources_fit(pod, node_info):
            return False
        if not RequiredNodeAffinity(pod).match(node) or (pod.node_name and pod.node_name != node.meta.name):
            return False
        if not node_ports_fit(pod, node_info):
            return False
        return all(t.effect != NO_SCHEDULE or tolerations_tolerate_taint(pod.tolerations, t) for t in node.taints)

    return check


@dataclass(slots=True)
class SoakCounts:
    """What happened, as counters only."""

    arrivals: int = 0
    departed_bound: int = 0  # lifetime ended while bound
    departed_pending: int = 0  # lifetime ended before the pod was bound
    evicted: int = 0  # bound on a drained node
    preempted: int = 0  # preemption victims gone after their grace period
    gone_before_departure: int = 0  # departure of a pod already evicted / preempted
    departing_while_terminating: int = 0  # departure of a preemption victim in its grace period
    binds: int = 0
    attempts: Counter[str] = field(default_factory=Counter)  # scheduled / unschedulable / error
    events: Counter[str] = field(default_factory=Counter)  # Scheduled, FailedScheduling, ...
    nodes_joined: int = 0
    nodes_drained: int = 0
    nodes_left: int = 0
    deferred_departures: int = 0  # a pod in flight when its lifetime ended: deleted 1 s later


class SoakTimeline(TimelineSimulator):
    """The timeline simulator fed by a :class:`SoakStream`; keeps counters, not steps."""

    def __init__(self, stream: SoakStream, config: KubeSchedulerConfiguration | None = None, *, seed: int = 1,
                 check_invariants: bool | None = True,
                 on_checkpoint: Callable[[SoakTimeline, float], None] | None = None,
                 on_progress: Callable[[SoakTimeline], None] | None = None,
                 invariant_budget: int | None = None) -> None:
        """``on_checkpoint(sim, fraction)``: called once 10 % and 50 % of the arrivals arrived (at
        the first tick after); ``on_progress(sim)``: every 5 % of the arrivals;
        ``invariant_budget``: the checker's global-check budget (objects visited per cycle on
        average; None: its default, kubesched._runtime.invariants.GLOBAL_CHECK_BUDGET)."""
        self.invariant_budget = invariant_budget
        self.stream = stream
        self._templates = {s.name: parse_pod(pod_manifest(s, "template")) for s in SHAPES}
        nodes = [parse_node(node_manifest(i)) for i in stream.initial_nodes()]
        namespace = parse_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        objs = ClusterObjects(nodes=nodes, namespaces=[namespace], latest_timestamp=stream.start)
        super().__init__(objs, config, seed=seed, check_invariants=check_invariants)
        self.counts = SoakCounts()
        self.on_checkpoint = on_checkpoint
        self.on_progress = on_progress
        self._progress_every = max(1, stream.arrivals // 20)
        self._pending_checkpoints = [f for f in CHECKPOINTS if f < 1.0]
        self._stream_done = stream.arrivals == 0
        self._victim_sizes: Counter[int] = Counter()

    # ---- the stream
    def run(self) -> TimelineResult:
        t = self.stream.next_time()
        if t is not None:
            self._at(t, self._tick)
        return super().run()

    def _tick(self) -> None:
        stream, now = self.stream, self.clock.now()
        while self._pending_checkpoints and stream.arrived >= self._pending_checkpoints[0] * stream.arrivals:
            fraction = self._pending_checkpoints.pop(0)
            if self.on_checkpoint is not None:
                self.on_checkpoint(self, fraction)
        while not self._stream_done:
            t = stream.next_time()
            if t is None or t > now:
                break
            ev = stream.pop()
            if ev.kind == ARRIVE:
                assert ev.shape is not None
                self._arrive_new(ev.index, ev.shape, ev.time)
                self._stream_done = stream.exhausted
            elif ev.kind == DEPART:
                self._depart(f"soak-uid-{ev.index}", evicted=False)
            elif ev.kind == CORDON:
                self._cordon(ev.index)
            elif ev.kind == REMOVE:
                self._remove_node(ev.index)
            elif ev.kind == JOIN:
                self._join(ev.index)
        if not self._stream_done:
            t = stream.next_time()
            if t is not None:
                self._at(t, self._tick)

    def _next_time(self) -> float | None:
        # The run ends once the last arrival was attempted (the queue's activeQ is empty):
        # what is left (running pods, pods in backoff or unschedulable) is reported.
        return None if self._stream_done else super()._next_time()

    def _new_pod(self, index: int, shape: Shape, t: float) -> Pod:
        template = self._templates[shape.name]
        name, uid = pod_name(index), f"soak-uid-{index}"
        meta = ObjectMeta(name=name, namespace=NAMESPACE, uid=uid, labels=template.meta.labels, creation_timestamp=t)
        raw = {**template.raw, "metadata": {"name": name, "namespace": NAMESPACE, "uid": uid,
                                            "labels": dict(template.meta.labels)}}
        return dataclasses.replace(template, meta=meta, raw=raw)

    def _arrive_new(self, index: int, shape: Shape, t: float) -> None:
        """The pod informer's Add of a new pending pod: PriorityQueue.Add."""
        pod = self._new_pod(index, shape, t)
        self.counts.arrivals += 1
        if self.on_progress is not None and self.counts.arrivals % self._progress_every == 0:
            self.on_progress(self)
        self.current[pod.uid] = pod
        self.objects.set_pod(pod)
        self._arrive(pod)

    def _in_flight_uids(self) -> set[str]:
        return {a.pod.uid for a, _ in self._in_flight}

    def _depart(self, uid: str, *, evicted: bool) -> None:
        """The pod is deleted (its lifetime ended, or its node is drained): the informers'
        delete: a bound pod leaves the cache (AssignedPodDelete moves the unschedulable pods),
        a pending one the queue and the nominator. Every trace of it is then dropped."""
        pod = self.current.get(uid)
        if pod is None:
            self.counts.gone_before_departure += 1
            return
        if pod.is_terminating:
            self.counts.departing_while_terminating += 1
            return  # a preemption victim: gone after its grace period (_victim_gone)
        if uid in self.cache.assumed or uid in self._in_flight_uids():
            # Between its scheduling and binding cycles (held at Permit): delete it once decided.
            self.counts.deferred_departures += 1
            self._at(self.clock.now() + 1.0, functools.partial(self._depart, uid, evicted=evicted))
            return
        if pod.node_name:
            self.cache.remove_pod(pod)
            self.objects.delete_pod(pod)
            self._changes += 1
            if evicted:
                self.counts.evicted += 1
            else:
                self.counts.departed_bound += 1
            self._forget(pod)
            self.queue.move_all_to_active_or_backoff_queue(events.ASSIGNED_POD_DELETE)
            return
        self.queue.delete(pod)
        self.objects.delete_pod(pod)
        self.counts.departed_pending += 1
        self._forget(pod)

    def _forget(self, pod: Pod) -> None:
        """Drop every per-pod entry the simulator, the nominator and the checker keep."""
        uid, key = pod.uid, pod.key
        self.current.pop(uid, None)
        self.deleted.discard(uid)
        self._attempts.pop(uid, None)
        self._failed_at_change.pop(uid, None)
        self._erring.pop(uid, None)
        self._gave_up.pop(key, None)
        self._result.skipped.pop(key, None)
        self._result.pending.pop(key, None)
        self.nominator.delete(pod)
        if self.invariants is not None:
            self.invariants.bindings.pop(uid, None)
            self.invariants.in_flight.pop(uid, None)

    def _victim_gone(self, pod: Pod) -> None:
        super()._victim_gone(pod)
        self.counts.preempted += 1
        self._forget(pod)

    # ---- node churn
    def _join(self, index: int) -> None:
        """addNodeToCache, then a NodeAdd move with preCheckForNode."""
        ni = self.cache.add_node(parse_node(node_manifest(index)))
        self.counts.nodes_joined += 1
        self._changes += 1
        self.queue.move_all_to_active_or_backoff_queue(events.NODE_ADD, pre_check_for_node(ni))

    def _cordon(self, index: int) -> None:
        """kubectl drain: cordon (a node update), then evict every pod on the node."""
        if index < 0:
            return
        name = node_name(index)
        ni = self.cache.node_infos.get(name)
        if ni is None or ni.node is None:
            return
        old = ni.node
        new = parse_node(node_manifest(index, unschedulable=True))
        ni = self.cache.update_node(new)
        self.counts.nodes_drained += 1
        check = pre_check_for_node(ni)
        for ev in node_update_events(old, new):
            self.queue.move_all_to_active_or_backoff_queue(ev, check)
        self._evict_all(name)

    def _evict_all(self, name: str) -> None:
        ni = self.cache.node_infos.get(name)
        if ni is None:
            return
        for uid in [pi.pod.uid for pi in ni.pods]:
            self._depart(uid, evicted=True)

    def _remove_node(self, index: int) -> None:
        """deleteNodeFromCache (no move); a pod still there (none: the node was cordoned) is
        evicted first."""
        name = node_name(index)
        self._evict_all(name)
        if name in self.cache.node_infos:
            self.cache.remove_node(name)
            self.counts.nodes_left += 1

    def _new_invariants(self, queue: Any = None) -> None:
        super()._new_invariants(queue)
        if self.invariants is not None and self.invariant_budget is not None:
            self.invariants.budget = max(1, self.invariant_budget)

    # ---- counters instead of steps and events
    def _record(self, attempt: Attempt, qpi: QueuedPodInfo) -> None:
        if attempt.outcome == "Waiting":
            return
        self._attempts[attempt.pod.uid] += 1
        self.counts.attempts[{"Scheduled": "scheduled", "Unschedulable": "unschedulable"}.get(
            attempt.outcome, "error")] += 1

    def _event(self, reason: str, pod: Pod, message: str) -> None:
        self.counts.events[reason] += 1

    def _bind(self, pod: Pod, node: str) -> None:
        super()._bind(pod, node)
        self.counts.binds += 1

    def _after(self, attempt: Attempt, qpi: QueuedPodInfo, cycle: int, *, binding: bool = False) -> None:
        super()._after(attempt, qpi, cycle, binding=binding)
        cur = self.current.get(attempt.pod.uid)
        if cur is not None and cur.node_name:
            self._attempts.pop(cur.uid, None)  # bound: no more attempts to count

    def _schedule(self, qpi: QueuedPodInfo) -> None:
        super()._schedule(qpi)
        sizes = self._result.metrics.preemption_victims
        if len(sizes) >= 1024:
            self._victim_sizes.update(sizes)
            sizes.clear()

    def victims(self) -> int:
        return sum(k * n for k, n in self._victim_sizes.items()) + sum(self._result.metrics.preemption_victims)

    # ---- the end
    def running_pods(self) -> list[Pod]:
        return [p for p in self.current.values() if p.node_name]

    def pending_pods(self) -> list[Pod]:
        return [p for p in self.current.values() if not p.node_name]

    def departed_referenced(self) -> int:
        """Departed soak pods some live object still references (any structure: a leak shows
        here whatever holds it; bounded caches, e.g. the filter plan's usage vectors, may hold
        a few). The scan runs in a forked copy of the process (:func:`in_forked_child`)."""
        alive = self.current

        def scan() -> int:
            gc.collect()
            uids = {o.meta.uid for o in gc.get_objects() if type(o) is Pod}
            return sum(1 for u in uids if u.startswith("soak-uid-") and u not in alive)

        return in_forked_child(scan)

    def bookkeeping(self) -> list[str]:
        """Every count adds up and no structure holds a departed pod."""
        c, problems = self.counts, []
        running, pending = self.running_pods(), self.pending_pods()
        departed = c.departed_bound + c.departed_pending + c.evicted + c.preempted
        if c.arrivals != departed + len(running) + len(pending):
            problems.append(f"arrivals {c.arrivals} != departed {departed} + running {len(running)} + pending "
                            f"{len(pending)}")
        if c.binds != c.departed_bound + c.evicted + c.preempted + len(running):
            problems.append(f"binds {c.binds} != departed bound {c.departed_bound} + evicted {c.evicted} + preempted "
                            f"{c.preempted} + running {len(running)}")
        if c.arrivals != self.stream.arrived:
            problems.append(f"{c.arrivals} pods arrived, the stream handed out {self.stream.arrived}")
        cache = self.cache
        placed = sum(len(ni.pods) for ni in cache.node_infos.values())
        if not len(cache.pod_nodes) == placed == len(running):
            problems.append(f"the cache holds {len(cache.pod_nodes)} pods ({placed} on its nodes), the cluster runs "
                            f"{len(running)}")
        if cache.assumed:
            problems.append(f"{len(cache.assumed)} pods still assumed at the end")
        in_flight = len(self._in_flight)
        if len(self.queue) + in_flight != len(pending):
            problems.append(f"the queue holds {len(self.queue)} pods (+{in_flight} in flight), {len(pending)} are "
                            "pending")
        listed = len(self.objects.pods(NAMESPACE))
        if listed != len(self.current):
            problems.append(f"the pod lister holds {listed} pods, the cluster {len(self.current)}")
        alive = self.current
        for what, keys in (("the nominator", self._nominated_uids()), ("the attempt counters", self._attempts),
                           ("the failure marks", self._failed_at_change), ("the error marks", self._erring),
                           ("the deleted set", self.deleted)):
            stale = [u for u in keys if u not in alive]
            if stale:
                problems.append(f"{what} still hold{'s' if what.startswith('the n') else ''} {len(stale)} departed "
                                f"pods (e.g. {stale[0]})")
        pending_uids = {p.uid for p in pending}
        wrong = [u for u in self._attempts if u not in pending_uids]
        if wrong:
            problems.append(f"attempt counters kept for {len(wrong)} pods no longer pending (e.g. {wrong[0]})")
        if self.invariants is not None:
            bound = {p.uid for p in running}
            extra = [u for u in self.invariants.bindings if u not in bound]
            if extra:
                problems.append(f"the invariant checker keeps the bindings of {len(extra)} pods not running "
                                f"(e.g. {extra[0]})")
        res = self._result
        if res.steps or res.events:
            problems.append(f"{len(res.steps)} steps and {len(res.events)} events retained")
        # The stream holds one departure per pod whose lifetime has not ended (evicted and
        # preempted ones included), the next arrival and the churn in progress.
        lifetimes = c.arrivals - c.departed_bound - c.departed_pending - c.gone_before_departure \
            - c.departing_while_terminating
        if len(self.stream) > lifetimes + 8:
            problems.append(f"the stream holds {len(self.stream)} events for {lifetimes} pod lifetimes")
        nodes = len(cache.node_infos)
        want_nodes = self.stream.nodes + c.nodes_joined - c.nodes_left
        if nodes != want_nodes:
            problems.append(f"the cache has {nodes} nodes, want {want_nodes}")
        return problems

    def _nominated_uids(self) -> list[str]:
        return [pi.pod.uid for node in self.nominator.nominated_node_names()
                for pi in self.nominator.nominated_pods_for_node(node)]


# ----------------------------------------------------------------------------- the bench
@dataclass(slots=True)
class SoakResult:
    nodes: int
    arrivals: int
    counts: SoakCounts
    seconds: float  # wall, the run only
    simulated_seconds: float
    checkpoints: list[Checkpoint]
    running: int
    pending: dict[str, int]  # queue -> pods left pending at the end
    in_flight: int
    nodes_at_end: int
    table_rows: int  # rows of the cache's node table (removed nodes' rows are not reused)
    invariants: bool
    invariant_checks: int = 0
    global_checks: int = 0
    setup_seconds: float = 0.0
    steady_pods: int = 0
    warmup: int = 0
    victims: int = 0
    growth_limit: float | None = GROWTH_LIMIT
    invariant_budget: int = INVARIANT_BUDGET
    problems: list[str] = field(default_factory=list)
    workload: str = "soak"

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def attempts(self) -> int:
        return sum(self.counts.attempts.values())

    @property
    def attempts_per_second(self) -> float:
        return self.attempts / self.seconds if self.seconds else 0.0

    @property
    def binds_per_second(self) -> float:
        return self.counts.binds / self.seconds if self.seconds else 0.0

    @property
    def baseline(self) -> Checkpoint | None:
        return baseline(self.checkpoints, self.warmup)

    @property
    def growth(self) -> float | None:
        return growth(self.checkpoints, self.warmup)

    def as_dict(self) -> dict[str, Any]:
        c = self.counts
        g = self.growth
        return {
            "workload": self.workload, "nodes": self.nodes, "arrivals": self.arrivals,
            "steady_running_pods": self.steady_pods, "warmup_arrivals": self.warmup,
            "departures": {"lifetime_bound": c.departed_bound, "lifetime_pending": c.departed_pending,
                           "evicted": c.evicted, "preempted": c.preempted},
            "binds": c.binds, "attempts": dict(sorted(c.attempts.items())), "victims": self.victims,
            "running_at_end": self.running, "pending_at_end": dict(self.pending), "in_flight_at_end": self.in_flight,
            "nodes_joined": c.nodes_joined, "nodes_drained": c.nodes_drained, "nodes_left": c.nodes_left,
            "nodes_at_end": self.nodes_at_end, "node_table_rows": self.table_rows,
            "simulated_seconds": round(self.simulated_seconds, 1), "seconds": round(self.seconds, 1),
            "setup_seconds": round(self.setup_seconds, 1),
            "attempts_per_second": round(self.attempts_per_second, 1),
            "binds_per_second": round(self.binds_per_second, 1),
            "rss": [cp.as_dict() for cp in self.checkpoints],
            "rss_growth": None if g is None else round(g, 4),
            "rss_growth_from": None if self.baseline is None else self.baseline.fraction,
            "invariants": {"on": self.invariants, "checks": self.invariant_checks,
                           "global_checks": self.global_checks, "global_check_budget": self.invariant_budget},
            "problems": self.problems,
        }

    def summary(self) -> str:
        c, g, base = self.counts, self.growth, self.baseline
        pending = sum(self.pending.values()) + self.in_flight
        lines = [
            f"workload=soak nodes={self.nodes} arrivals={self.arrivals} (steady ~{self.steady_pods} running pods, "
            f"the first {self.warmup} arrivals {WARMUP_SPEEDUP:g}x faster as warm-up)",
            f"departures: {c.departed_bound} after running, {c.departed_pending} before being bound, "
            f"{c.evicted} evicted by drains, {c.preempted} preempted",
            f"binds {c.binds}; attempts {self.attempts} ({', '.join(f'{k} {v}' for k, v in sorted(c.attempts.items()))})"
            f"; at the end: {self.running} running, {pending} pending "
            f"({', '.join(f'{k} {v}' for k, v in sorted(self.pending.items()) if v) or 'none'})",
            f"nodes: {c.nodes_drained} drained, {c.nodes_left} left, {c.nodes_joined} joined; {self.nodes_at_end} at "
            f"the end ({self.table_rows} node-table rows)",
            f"simulated {self.simulated_seconds:.0f} s in {self.seconds:.1f} s wall (setup {self.setup_seconds:.1f} s): "
            f"{self.attempts_per_second:.1f} attempts/s, {self.binds_per_second:.1f} binds/s",
            "RSS: " + ", ".join(f"{cp.fraction:.0%} ({cp.arrivals} arrivals) {_mib(cp.rss)}" for cp in self.checkpoints)
            + ("" if g is None or base is None else f"; growth {base.fraction:.0%}->100%: {g:+.1%}"
               + (" (the warm-up ended after the 10% checkpoint)" if base.fraction > 0.1 else "")),
            *self._heap_lines(),
            "departed pods still referenced: " + ", ".join(
                f"{cp.fraction:.0%}: {cp.departed_referenced}" for cp in self.checkpoints
                if cp.departed_referenced >= 0),
            f"invariant checker: {'on' if self.invariants else 'off'}"
            + (f" ({self.invariant_checks} checks after every cycle, {self.global_checks} global checks sampled at "
               f"a budget of {self.invariant_budget} objects per cycle)" if self.invariants else ""),
        ]
        return "\n".join(lines)

    def _heap_lines(self) -> list[str]:
        heaps = [(cp.fraction, cp.heap) for cp in self.checkpoints if cp.heap is not None]
        if not heaps:
            return []
        line = "heap: Python blocks " + ", ".join(f"{f:.0%} {h.python_blocks}" for f, h in heaps)
        if all(h.malloc_in_use >= 0 for _, h in heaps):
            line += "; C heap in use / free " + ", ".join(
                f"{f:.0%} {_mib(h.malloc_in_use)} / {_mib(h.malloc_free)}" for f, h in heaps)
        return [line]


def run_soak(num_nodes: int = SOAK_NODES, arrivals: int = SOAK_ARRIVALS, *, seed: int = 1,
             check_invariants: bool = True, growth_limit: float | None = GROWTH_LIMIT,
             progress: Callable[[str], None] | None = None, stream: SoakStream | None = None,
             simulator: type[SoakTimeline] = SoakTimeline, count_references: bool = True,
             invariant_budget: int = INVARIANT_BUDGET) -> SoakResult:
    """Run the soak; ``progress`` gets a line every 5 % of the arrivals. ``growth_limit``: the
    RSS growth (10 % -> 100 %, from the first checkpoint after the warm-up) that is a problem
    (None: never). ``simulator``: the class (tests inject leaks). ``count_references``: count
    the departed pods still referenced at each checkpoint (a scan of every object).
    ``invariant_budget``: the checker's global-check budget (:data:`INVARIANT_BUDGET`)."""
    t_setup = time.perf_counter()
    stream = stream if stream is not None else SoakStream(num_nodes, arrivals, seed=seed)
    checkpoints: list[Checkpoint] = []
    t0 = [0.0]

    def checkpoint(sim: SoakTimeline, fraction: float) -> None:
        # The RSS first, then the scan for departed pods (in a forked child, so that its
        # transient allocations do not show in this process's later samples either).
        gc.collect()
        rss, heap, wall = rss_bytes(), heap_figures(), time.perf_counter() - t0[0]
        referenced = sim.departed_referenced() if count_references else -1
        checkpoints.append(Checkpoint(fraction, sim.stream.arrived, rss, wall, referenced, heap))

    sim = simulator(stream, seed=seed, check_invariants=check_invariants, on_checkpoint=checkpoint,
                    on_progress=_progress_line(progress, t0) if progress is not None else None,
                    invariant_budget=invariant_budget)
    problems: list[str] = []
    t0[0] = time.perf_counter()
    setup = t0[0] - t_setup
    try:
        res = sim.run()
        simulated = res.end - res.start
    except KubeschedError as e:  # an invariant violation
        problems.append(str(e))
        simulated = sim.clock.now() - stream.start
    elapsed = time.perf_counter() - t0[0]
    checkpoint(sim, 1.0)
    problems.extend(sim.bookkeeping())
    out = SoakResult(
        num_nodes, stream.arrivals, sim.counts, elapsed, simulated, checkpoints, len(sim.running_pods()),
        dict(sim.queue.pending_counts()), len(sim._in_flight), len(sim.cache.node_infos),  # noqa: SLF001
        sim.cache.table.size, sim.invariants is not None, setup_seconds=setup, steady_pods=stream.steady_pods,
        warmup=stream.warmup, victims=sim.victims(), growth_limit=growth_limit, invariant_budget=invariant_budget,
        problems=problems)
    if sim.invariants is not None:
        out.invariant_checks, out.global_checks = sim.invariants.checks, sim.invariants.global_checks
    g, base = out.growth, out.baseline
    if growth_limit is not None and g is not None and base is not None and g >= growth_limit:
        problems.append(f"RSS grew {g:.1%} from {base.fraction:.0%} to 100% of the arrivals "
                        f"({_mib(base.rss)} -> {_mib(checkpoints[-1].rss)}): limit {growth_limit:.0%}")
    referenced = checkpoints[-1].departed_referenced
    if referenced > REFERENCED_LIMIT:
        problems.append(f"{referenced} departed pods are still referenced at the end (bounded caches hold at most "
                        f"{REFERENCED_LIMIT})")
    return out


def _progress_line(progress: Callable[[str], None], t0: list[float]) -> Callable[[SoakTimeline], None]:
    def report(sim: SoakTimeline) -> None:
        wall = time.perf_counter() - t0[0]
        attempts = sum(sim.counts.attempts.values())
        progress(f"soak: {sim.counts.arrivals}/{sim.stream.arrivals} arrivals, {attempts} attempts, "
                 f"{len(sim.current)} pods in the cluster, {len(sim.cache.node_infos)} nodes, "
                 f"RSS {_mib(rss_bytes())}, {wall:.0f} s")

    return report


__all__ = ["CHECKPOINTS", "GROWTH_LIMIT", "INVARIANT_BUDGET", "REFERENCED_LIMIT", "SHAPES", "SOAK_ARRIVALS", "SOAK_NODES", "Checkpoint", "HeapFigures", "Shape",
           "SoakCounts", "SoakResult", "SoakStream", "SoakTimeline", "StreamEvent", "baseline", "growth", "heap_figures", "in_forked_child", "node_manifest",
           "pod_manifest", "pre_check_for_node", "rss_bytes", "run_soak"]
