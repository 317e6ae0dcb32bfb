"""The invariant checker: a debug switch that verifies, after every scheduling and binding
cycle, what the scheduler must never break.

Off by default (it costs time); on when ``KUBESCHED_CHECK_INVARIANTS`` is set (``1``; ``full``
also runs the global checks after every cycle) or when a driver is built with
``check_invariants=True``. The test suite turns it on for every test (tests/conftest.py). The
drivers (kubesched.simulation.Simulator, kubesched.timeline.TimelineSimulator,
kubesched.live.runner.LiveScheduler) call :meth:`InvariantChecker.check` after each scheduling
cycle and each binding cycle, once they have done what follows the cycle (requeueing a failed
pod, re-adding a pod whose bind went through), and once at the end of a simulation run.

The invariants (the name in brackets is the one a violation reports):

1. [within-allocatable] A placement never pushes a node over its allocatable: right after the
   pod is assumed (and, in the simulators, again once bound), for every resource the pod requests
   (cpu, memory, ephemeral-storage, every scalar/extended resource) and the pod count, the node's
   requested amount (NodeInfo.requested, assumed pods included) is within allocatable. Only what
   the pod's profile checks counts: with no NodeResourcesFit Filter nothing is checked, and the
   plugin's ignoredResources / ignoredResourceGroups (and the extenders' ignoredByScheduler
   resources) are skipped; such a placement exempts that node and resource from later checks.
   In the simulators the global form holds too: a node and resource within allocatable when the
   run started are within it after every cycle. A node the input over-commits (a dump, static
   pods) is no violation: kube-scheduler only guarantees what it places. Live mode checks
   placements only (nodes shrink and other schedulers bind there).
2. [one-node-per-pod] A pod uid is listed at most once in the cache, on the node its index names.
   [single-binding] The cluster never accepted two bindings for the same pod (the simulators
   count their pods/binding calls; live mode counts the scheduler's successful binding calls).
3. [cache-matches-cluster] Every pod the cache holds is bound to the same node in the cluster, or
   is assumed and in flight (between its scheduling cycle and the end of its binding cycle; in
   live mode also bound by this scheduler with the informer not caught up yet); every bound
   non-terminal pod of the cluster is in the cache on its node. [assumed-in-flight] Every assumed
   pod is in flight: a binding cycle that ended confirmed (finish_binding) or forgot it.
4. [pending-accounted] Every pending pod of this scheduler's profiles (unbound, not Succeeded or
   Failed) is in the queue (activeQ, backoffQ, unschedulablePods), in flight, or has a reason the
   driver recorded: in the conformance procedure, its place in the procedure's order (attempted
   or to come) or the reason it is skipped (gated, being deleted); in the timeline, skipped when
   popped (being deleted), given up, or not arrived yet (creationTimestamp ahead of the clock);
   in live mode, being deleted. Pods of other schedulers and terminal pods are left alone.
5. [nomination-to-existing-node] A nomination the scheduler makes (PostFilter's nominated node)
   names a node that exists when it is made, and the nominator holds the pod there while it is
   pending. Nominations read from the input may name missing nodes: upstream keeps them.
   [nominator-matches-pods] Every pod the nominator holds exists, is unbound and not assumed, and
   (simulators) its status.nominatedNodeName is the nominator's node ("" for an Override to
   nothing); conversely, every pending pod upstream's nominator would hold (queued past
   PreEnqueue, not assumed) has its status.nominatedNodeName in the nominator. Live mode skips
   the comparison with the status, which lags the in-memory nomination by design.

Incremental checks (the pod of the cycle and its node) run after every cycle. The global ones
(every node, every pod, the queue and the nominator) cost O(nodes + pods): they run after a
cycle only once the cycles since the last global check have "paid" for it — at most
:data:`GLOBAL_CHECK_BUDGET` objects visited per cycle on average — so small clusters (the
conformance corpus, most tests) are checked globally after every cycle, a 5000-node benchmark
every few dozen cycles; and always at the end of a simulation run.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from kubesched._cache import Cache
from kubesched._queue import QueueNominator, SchedulingQueue
from kubesched._runtime.framework import Framework
from kubesched.errors import InvariantViolation
from kubesched.framework import NodeInfo
from kubesched.objects import Pod
from kubesched.objects.resources import is_extended_resource_name, is_scalar_resource_name

ENV = "KUBESCHED_CHECK_INVARIANTS"
# Objects (nodes, pods) a global check may visit per scheduling cycle, on average.
GLOBAL_CHECK_BUDGET = 1000
NODE_RESOURCES_FIT = "NodeResourcesFit"
PODS = "pods"
_NATIVE = ("cpu", "memory", "ephemeral-storage")
_PLACED = ("Assumed", "Waiting")


def env_setting() -> str:
    """The switch's value: "" (off), "on", or "full" (global checks after every cycle)."""
    value = os.environ.get(ENV, "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return ""
    return "full" if value == "full" else "on"


def enabled(flag: bool | None) -> bool:
    """A driver's ``check_invariants`` argument: True / False, or None for the environment."""
    return bool(env_setting()) if flag is None else flag


class CycleAttempt(Protocol):
    """What the checker reads of a cycle's outcome (kubesched.scheduler.Attempt)."""

    @property
    def outcome(self) -> str: ...

    @property
    def host(self) -> str: ...

    @property
    def node(self) -> str | None: ...

    @property
    def nominated_node(self) -> str | None: ...


def _no_reason(pod: Pod) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class ClusterView:
    """The cluster as the driver sees it.

    ``pods()``: every pod the cluster has now (deleted ones excluded); ``get(pod)``: the
    cluster's current version of the pod (same uid), None once gone; ``pending_reason(pod)``:
    why a pending pod of our profiles is in no queue and not in flight, None if nothing explains
    it; ``mirrors_nomination(pod)``: whether upstream's nominator holds this pending pod by its
    status.nominatedNodeName (None: the status is not compared, live mode)."""

    pods: Callable[[], Iterable[Pod]]
    get: Callable[[Pod], Pod | None]
    pending_reason: Callable[[Pod], str | None] = _no_reason
    mirrors_nomination: Callable[[Pod], bool] | None = None


@dataclass(frozen=True, slots=True)
class _FitRule:
    """What a profile's NodeResourcesFit Filter checks (None for the profile: nothing)."""

    ignored: frozenset[str]
    ignored_groups: frozenset[str]
    # The resources the plugin leaves to DynamicResources on nodes without allocatable for them
    # (DRAExtendedResource): their devices are what the placement takes there.
    dra_delegated: Callable[[], frozenset[str]] | None = None

    def delegates(self, name: str, allocatable: int) -> bool:
        return allocatable <= 0 and self.dra_delegated is not None and name in self.dra_delegated()

    def checks(self, name: str) -> bool:
        if name == PODS or not is_extended_resource_name(name):
            return True
        return name not in self.ignored and name.split("/", 1)[0] not in self.ignored_groups


def _fit_rule(fwk: Framework) -> _FitRule | None:
    for plugin in fwk.plugins_at("Filter"):
        if getattr(plugin, "name", "") == NODE_RESOURCES_FIT:
            return _FitRule(frozenset(getattr(plugin, "ignored_resources", ())),
                            frozenset(getattr(plugin, "ignored_resource_groups", ())),
                            getattr(plugin, "dra_delegated_names", None))
    return None


def _requested_resources(pod: Pod) -> list[str]:
    """The resources a placement of ``pod`` adds to: the pod count, and every resource it
    requests a positive amount of that NodeInfo accounts (cpu, memory, ephemeral-storage,
    scalar resources)."""
    out = [PODS]
    for name, q in pod.requests.items():
        if q > 0 and name != PODS and (name in _NATIVE or is_scalar_resource_name(name)):
            out.append(name)
    return out


def _used(ni: NodeInfo, name: str) -> int:
    return len(ni.pods) if name == PODS else ni.requested.get(name)


def _amount(name: str, v: int) -> str:
    return f"{v}m" if name == "cpu" else str(v)


class InvariantChecker:
    """See the module docstring. ``profiles``: the scheduler's frameworks by schedulerName;
    ``queue``: the scheduling queue (None for the conformance procedure, which has none);
    ``live``: the cluster view is an informer's (eventually consistent with our own binds)."""

    def __init__(self, cache: Cache, nominator: QueueNominator, profiles: Mapping[str, Framework],
                 cluster: ClusterView, *, queue: SchedulingQueue | None = None, live: bool = False,
                 full: bool | None = None, budget: int = GLOBAL_CHECK_BUDGET) -> None:
        self.cache = cache
        self.nominator = nominator
        self.profiles = profiles
        self.cluster = cluster
        self.queue = queue
        self.live = live
        self.full = env_setting() == "full" if full is None else full
        self.budget = max(budget, 1)
        self._fit = {name: _fit_rule(fwk) for name, fwk in profiles.items()}
        # uid -> the nodes the cluster accepted a binding to (record_bind)
        self.bindings: dict[str, list[str]] = {}
        # uid -> (host, scheduling cycle): assumed pods whose binding cycle has not ended
        self.in_flight: dict[str, tuple[str, int]] = {}
        self.cycle = 0
        self.checks = 0
        self.global_checks = 0
        self.violations: list[InvariantViolation] = []
        self._due = 0  # cycles until the next global check
        # (node, resource) pairs a placement may legitimately push over (not checked by its profile)
        self._exempt: set[tuple[str, str]] = set()
        # (node, resource) pairs already over allocatable when the run started (the input's doing)
        self._baseline: set[tuple[str, str]] = set() if live else self._over_allocated()

    # ------------------------------------------------------------------ driver API
    def record_bind(self, pod: Pod, node: str) -> None:
        """The cluster accepted a binding of ``pod`` to ``node`` (checked at the cycle's end)."""
        self.bindings.setdefault(pod.uid, []).append(node)

    def forget(self, uid: str) -> None:
        """The pod ``uid`` is gone from the cluster (live mode's pod delete handlers): its
        binding record goes too, so that a long run keeps one per live pod, not one per pod
        ever bound. A uid is never reused, so nothing can bind it again."""
        if uid not in self.in_flight:
            self.bindings.pop(uid, None)

    def check(self, cycle: int | None, pod: Pod | None, phase: str, attempt: CycleAttempt | None = None) -> None:
        """Check the invariants after ``phase`` ("scheduling", "binding" or "end") of ``cycle``
        (None for a binding cycle: the cycle that scheduled the pod) for ``pod`` and the
        outcome ``attempt``; the global checks when due (always at "end"). Raises
        InvariantViolation (also kept in :attr:`violations`)."""
        if cycle is None:
            cycle = self.in_flight[pod.uid][1] if pod is not None and pod.uid in self.in_flight else self.cycle
        else:
            self.cycle = max(self.cycle, cycle)
        try:
            if pod is not None:
                self._check_pod(cycle, phase, pod, attempt)
            if phase == "end" or self._global_due():
                self._check_all(cycle, phase)
        except InvariantViolation as e:
            self.violations.append(e)
            raise

    def raise_recorded(self) -> None:
        """Raise the first violation seen (live mode: binding cycles run on worker threads that
        only log their exceptions; the loop and stop() re-raise it)."""
        if self.violations:
            raise self.violations[0]

    # ------------------------------------------------------------------ incremental
    def _global_due(self) -> bool:
        if self.full:
            return True
        self._due -= 1
        return self._due <= 0

    def _check_pod(self, cycle: int, phase: str, pod: Pod, attempt: CycleAttempt | None) -> None:
        self.checks += 1
        cache, uid = self.cache, pod.uid

        def fail(invariant: str, detail: str, node: str = "") -> InvariantViolation:
            return InvariantViolation(invariant, detail, cycle=cycle, phase=phase, pod=pod.key, node=node)

        outcome = attempt.outcome if attempt is not None else ""
        cur = self.cluster.get(pod)
        nodes = self.bindings.get(uid)
        if nodes is not None and len(nodes) > 1:
            raise fail("single-binding", f"the cluster accepted {len(nodes)} bindings: to {', '.join(nodes)}",
                       nodes[-1])
        nominated = attempt.nominated_node if attempt is not None else None
        if nominated:
            ni = cache.node_infos.get(nominated)
            if ni is None or ni.node is None:
                raise fail("nomination-to-existing-node", "the scheduler nominated a node that does not exist",
                           nominated)
            held = self.nominator.nominated_node(pod)
            if cur is not None and not cur.node_name and held != nominated:
                raise fail("nominator-matches-pods", f"nominated by this cycle, but the nominator holds the pod "
                                                     f"on {held or 'no node'}", nominated)
        if outcome in _PLACED:
            assert attempt is not None
            host = attempt.host
            if cache.node_of(pod) != host or uid not in cache.assumed:
                raise fail("cache-matches-cluster", f"the scheduling cycle assumed the pod there, but the cache "
                                                    f"holds it on {cache.node_of(pod) or 'no node'}"
                                                    f"{'' if uid in cache.assumed else ', not assumed'}", host)
            self.in_flight[uid] = (host, cycle)
            self._check_listed_once(pod, host, fail)
            self._check_placement(pod, host, fail)
        elif attempt is not None:
            self.in_flight.pop(uid, None)
            node = cache.node_of(pod)
            if uid in cache.assumed:
                raise fail("assumed-in-flight", f"the cycle ended ({outcome}) but the pod is still assumed: neither "
                                                f"confirmed nor forgotten", node or "")
            if outcome == "Scheduled":
                host = attempt.node or attempt.host
                if node != host and (cur is not None or not self.live):
                    raise fail("cache-matches-cluster", f"bound there, but the cache holds it on "
                                                        f"{node or 'no node'}", host)
                if not self.live:
                    if cur is None or cur.node_name != host:
                        where = "gone" if cur is None else f"bound to {cur.node_name or 'no node'}"
                        raise fail("cache-matches-cluster", f"the binding cycle succeeded but the cluster has the "
                                                            f"pod {where}", host)
                    self._check_placement(pod, host, fail)
                if node is not None:
                    # A live pod deleted since its bind (excused just above) is rightly in no NodeInfo.
                    self._check_listed_once(pod, node, fail)
            elif node is not None and not self._cluster_agrees(cur, uid, node):
                where = "gone" if cur is None else f"bound to {cur.node_name or 'no node'}"
                raise fail("cache-matches-cluster", f"the cycle failed ({outcome}) but the cache holds the pod there, "
                                                    f"the cluster has it {where}", node)
            if cur is not None and self._is_pending(cur) and cache.node_of(cur) is None:
                if self._accounted(cur) is None:
                    raise fail("pending-accounted", f"the cycle failed ({outcome}); the pending pod is in no queue, "
                                                    f"not in flight, and has no recorded reason")
        if cur is not None and not self.live:
            self._check_status_nomination(cur, fail)

    def _check_listed_once(self, pod: Pod, node: str, fail: Callable[..., InvariantViolation]) -> None:
        ni = self.cache.node_infos.get(node)
        if ni is None:
            return
        n = sum(1 for pi in ni.pods if pi.pod.uid == pod.uid)
        if n != 1:
            raise fail("one-node-per-pod", f"the node's NodeInfo lists the pod {n} times", node)

    def _check_placement(self, pod: Pod, host: str, fail: Callable[..., InvariantViolation]) -> None:
        ni = self.cache.node_infos.get(host)
        if ni is None:
            return
        rule = self._fit.get(pod.scheduler_name)
        for name in _requested_resources(pod):
            if rule is None or not rule.checks(name) or rule.delegates(name, ni.allocatable.get(name)):
                self._exempt.add((host, name))
                continue
            if (host, name) in self._exempt:
                continue
            used, alloc = _used(ni, name), ni.allocatable.get(name)
            if used > alloc:
                mine = 1 if name == PODS else pod.requests.get(name, 0)
                raise fail("within-allocatable", f"the placement pushed {name} over allocatable: requested "
                                                 f"{_amount(name, used)} (the pod: {_amount(name, mine)}) > "
                                                 f"allocatable {_amount(name, alloc)}", host)

    def _check_status_nomination(self, cur: Pod, fail: Callable[..., InvariantViolation]) -> None:
        """Simulators: the nominator's node for the pod is its status.nominatedNodeName."""
        mirrors = self.cluster.mirrors_nomination
        held = self.nominator.nominated_node(cur)
        if held or cur.uid in self._nominated_uids():
            if cur.node_name or held != cur.nominated_node_name:
                raise fail("nominator-matches-pods", f"the nominator holds the pod on {held or 'no node'}, its "
                                                     f"status.nominatedNodeName is {cur.nominated_node_name or 'empty'}"
                                                     f"{' and it is bound' if cur.node_name else ''}", held)
        elif (cur.nominated_node_name and not cur.node_name and mirrors is not None and mirrors(cur)
              and self.cache.node_of(cur) is None):
            raise fail("nominator-matches-pods", f"status.nominatedNodeName is {cur.nominated_node_name} but the "
                                                 f"nominator does not hold the pod", cur.nominated_node_name)

    def _nominated_uids(self) -> set[str]:
        return {pi.pod.uid for node in self.nominator.nominated_node_names()
                for pi in self.nominator.nominated_pods_for_node(node)}

    # ------------------------------------------------------------------ helpers
    def _is_pending(self, pod: Pod) -> bool:
        return not pod.node_name and not pod.is_terminal and pod.scheduler_name in self.profiles

    def _accounted(self, pod: Pod) -> str | None:
        """Where a pending pod of our profiles is, or why it is nowhere; None: unaccounted."""
        if pod.uid in self.in_flight:
            return "in flight"
        q = self.queue
        if q is not None:
            qpi = q.get(pod)
            if qpi is not None and qpi.pod.uid == pod.uid:
                return q.queue_of(pod)
        return self.cluster.pending_reason(pod)

    def _cluster_agrees(self, cur: Pod | None, uid: str, node: str) -> bool:
        """Whether the cache may hold the pod on ``node``: the cluster has it bound there, or it
        is in flight there, or (live) this scheduler bound it there and the informer lags."""
        if cur is not None and cur.node_name == node:
            return True
        flight = self.in_flight.get(uid)
        if flight is not None and flight[0] == node:
            return True
        return self.live and cur is not None and not cur.node_name and self.bindings.get(uid) == [node]

    def _over_allocated(self) -> set[tuple[str, str]]:
        out: set[tuple[str, str]] = set()
        for name, ni in self.cache.node_infos.items():
            alloc, req = ni.allocatable, ni.requested
            if len(ni.pods) > alloc.allowed_pod_number:
                out.add((name, PODS))
            if req.milli_cpu > alloc.milli_cpu:
                out.add((name, "cpu"))
            if req.memory > alloc.memory:
                out.add((name, "memory"))
            if req.ephemeral_storage > alloc.ephemeral_storage:
                out.add((name, "ephemeral-storage"))
            for r, v in req.scalar.items():
                if v > alloc.scalar.get(r, 0):
                    out.add((name, r))
        return out

    # ------------------------------------------------------------------ global
    def _check_all(self, cycle: int, phase: str) -> None:
        self.global_checks += 1

        def fail(invariant: str, detail: str, pod: Pod | None = None, node: str = "") -> InvariantViolation:
            return InvariantViolation(invariant, detail, cycle=cycle, phase=phase, pod=pod.key if pod else "",
                                      node=node)

        cache, nominator = self.cache, self.nominator
        visited = 0
        where: dict[str, tuple[str, Pod]] = {}
        for node, pod in cache.placements():
            visited += 1
            prev = where.get(pod.uid)
            if prev is not None:
                detail = "listed twice on the node" if prev[0] == node else f"also listed on {prev[0]}"
                raise fail("one-node-per-pod", f"the cache holds the pod more than once: {detail}", pod, node)
            where[pod.uid] = (node, pod)
            indexed = cache.node_of(pod)
            if indexed != node:
                raise fail("one-node-per-pod", f"the cache lists the pod there but its index says "
                                               f"{indexed or 'no node'}", pod, node)
        if len(cache.pod_nodes) != len(where):
            for uid, node in cache.pod_nodes.items():
                if uid not in where:
                    lost = next((p for p in self.cluster.pods() if p.uid == uid), None)
                    raise fail("one-node-per-pod", f"the cache's index places the pod (uid {uid}) there but no "
                                                   f"NodeInfo holds it: the node does not count it", lost, node)
        for uid in cache.assumed:
            if uid not in self.in_flight:
                held = where.get(uid)
                raise fail("assumed-in-flight", "the pod is assumed but no binding cycle is in flight for it: "
                                                "never confirmed nor forgotten", held[1] if held else None,
                           held[0] if held else "")
        for uid, nodes in self.bindings.items():
            if len(nodes) > 1:
                entry = where.get(uid)
                raise fail("single-binding", f"the cluster accepted {len(nodes)} bindings of pod uid {uid}: to "
                                             f"{', '.join(nodes)}", entry[1] if entry else None, nodes[-1])
        mirrors = self.cluster.mirrors_nomination
        nominated = {pi.pod.uid: (node, pi.pod) for node in nominator.nominated_node_names()
                     for pi in nominator.nominated_pods_for_node(node)}
        unlisted = dict(where)
        for cur in self.cluster.pods():
            visited += 1
            uid = cur.uid
            if cur.is_terminal:
                continue
            entry = unlisted.pop(uid, None)
            cached = entry[0] if entry is not None else None
            if cur.node_name:
                if cached != cur.node_name:
                    raise fail("cache-matches-cluster", f"the pod is bound there in the cluster, but the cache holds "
                                                        f"it on {cached or 'no node'}", cur, cur.node_name)
                continue
            if cached is not None:
                if not self._cluster_agrees(cur, uid, cached):
                    raise fail("cache-matches-cluster", "the pod is pending in the cluster, but the cache holds it "
                                                        "there, neither in flight nor bound by this scheduler",
                               cur, cached)
                continue
            if self._is_pending(cur) and self._accounted(cur) is None:
                raise fail("pending-accounted", f"pending pod of profile {cur.scheduler_name!r} is in no queue "
                                                f"(activeQ, backoffQ, unschedulablePods), not in flight, and has no "
                                                f"recorded reason", cur)
            if (mirrors is not None and cur.nominated_node_name and uid not in nominated and mirrors(cur)):
                raise fail("nominator-matches-pods", f"status.nominatedNodeName is {cur.nominated_node_name} but "
                                                     f"the nominator does not hold the pod", cur,
                           cur.nominated_node_name)
        for uid, (node, pod) in unlisted.items():
            if uid not in self.in_flight:
                raise fail("cache-matches-cluster", "the cache holds a pod the cluster does not have (or has "
                                                    "terminated)", pod, node)
        for node, held_pod in nominated.values():
            if nominator.nominated_node(held_pod) != node:
                raise fail("nominator-matches-pods", f"the nominator lists the pod under {node or 'no node'} but "
                                                     f"its index says {nominator.nominated_node(held_pod) or 'nothing'}",
                           held_pod, node)
            got = self.cluster.get(held_pod)
            if got is None:
                raise fail("nominator-matches-pods", "the nominator holds a pod the cluster does not have", held_pod,
                           node)
            cur = got
            if cur.node_name or cache.node_of(cur) is not None:
                raise fail("nominator-matches-pods", f"the nominator holds a pod that is "
                                                     f"{'bound to ' + cur.node_name if cur.node_name else 'assumed'}",
                           cur, node)
            if not self.live and cur.nominated_node_name != node:
                raise fail("nominator-matches-pods", f"the nominator holds the pod on {node or 'no node'}, its "
                                                     f"status.nominatedNodeName is {cur.nominated_node_name or 'empty'}",
                           cur, node)
        if not self.live:
            visited += len(cache.node_infos)
            for node, name in sorted(self._over_allocated() - self._baseline - self._exempt):
                ni = cache.node_infos[node]
                # The pod this scheduler placed last that asks for the resource, else (the node
                # changed, not its pods) the biggest consumer.
                users = [pi.pod for pi in ni.pods if name == PODS or pi.pod.requests.get(name, 0) > 0]
                mine = [p for p in users if p.uid in self.bindings or p.uid in self.in_flight]
                culprit = mine[-1] if mine else max(users, key=lambda p: p.requests.get(name, 0), default=None)
                raise fail("within-allocatable", f"{name} went over allocatable during the run: requested "
                                                 f"{_amount(name, _used(ni, name))} > allocatable "
                                                 f"{_amount(name, ni.allocatable.get(name))}", culprit, node)
        self._due = math.ceil(visited / self.budget)


def new_checker(flag: bool | None, cache: Cache, nominator: QueueNominator, profiles: Mapping[str, Framework],
                cluster: ClusterView, *, queue: SchedulingQueue | None = None,
                live: bool = False) -> InvariantChecker | None:
    """The checker when the switch (``flag``, else the environment) is on, else None."""
    if not enabled(flag):
        return None
    return InvariantChecker(cache, nominator, profiles, cluster, queue=queue, live=live)


__all__ = ["ENV", "GLOBAL_CHECK_BUDGET", "ClusterView", "CycleAttempt", "InvariantChecker", "enabled", "env_setting",
           "new_checker"]
