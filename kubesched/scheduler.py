"""The scheduling cycle and binding cycle (pkg/scheduler/schedule_one.go).

:class:`Scheduler` holds the profiles (one Framework per schedulerName), the cache, the
nominator and the cluster client. :meth:`Scheduler.schedule_one` runs one scheduling
attempt for a pod — schedulePod (PreFilter, nominated node first, filtering with the
adaptive number of feasible nodes and the rotating start index, scoring, host selection),
then on failure PostFilter (preemption), or on success Reserve, Permit and binding — and
returns an :class:`Attempt` recording everything the trace and ``--explain`` need.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from kubesched._cache import Cache
from kubesched._queue.nominated_rows import NominatedRows
from kubesched._runtime.batch import OpportunisticBatch, SortedNodeScores
from kubesched._runtime.framework import Framework, ScoreResult
from kubesched._runtime.waiting_pods import WaitingPod
from kubesched.errors import ApiError, KubeschedError
from kubesched.features import DEFAULT_FEATURES, Features
from kubesched.framework import (
    NOMINATING_OVERRIDE,
    PODS_TO_ACTIVATE_KEY,
    Code,
    CycleState,
    Extender,
    NodeInfo,
    NominatingInfo,
    PodInfo,
    PodsToActivate,
    Status,
)
from kubesched.framework.handle import PodNominator
from kubesched.framework.interfaces import BoolArray, IntArray
from kubesched.framework.nodetable import RowNodes
from kubesched.objects import Pod
from kubesched.plugins.helpers.codes import group_codes
from kubesched.plugins.helpers.filterplan import FilterPlan, UsageCache, filter_plan
from kubesched.plugins.helpers.fiterror import fit_error_message

if TYPE_CHECKING:
    # The HTTP extenders' client (kubesched.extender: http.client, its wire format, a thread
    # pool) is imported where an extender is configured, not on a restarted `kubesched run`'s
    # way to its first bind.
    from kubesched.extender import ExtenderScores

# schedule_one.go constants
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
NO_NODES_AVAILABLE = "no nodes available to schedule pods"
# framework.ExtenderName: the fake plugin name recorded when filter extenders rejected nodes.
EXTENDER_NAME = "Extender"
# The trace's / --explain's score key of one extender's contribution: EXTENDER_SCORE_PREFIX + its name.
EXTENDER_SCORE_PREFIX = "Extender:"
EVENT_MESSAGE_LIMIT = 1024
_NAME = attrgetter("name")
_INDEX = attrgetter("index")


def truncate_message(message: str) -> str:
    """truncateMessage: events carry at most 1024 characters."""
    if len(message) <= EVENT_MESSAGE_LIMIT:
        return message
    return message[: EVENT_MESSAGE_LIMIT - 4] + " ..."


class Diagnosis:
    """framework.Diagnosis.

    The statuses of nodes the batch filters rejected are recorded in bulk (node names and
    statuses as arrays, :meth:`defer_statuses`) and enter ``node_to_status`` the first time
    it is read: a scheduled pod's thousands of rejected nodes then cost no dict building
    unless someone looks at them. Reading ``node_to_status`` always gives the full map, in
    the order the statuses were recorded."""

    __slots__ = ("_node_to_status", "_deferred", "unschedulable_plugins", "pending_plugins", "pre_filter_msg",
                 "post_filter_msg")

    def __init__(self, node_to_status: dict[str, Status] | None = None, unschedulable_plugins: set[str] | None = None,
                 pending_plugins: set[str] | None = None, pre_filter_msg: str = "", post_filter_msg: str = "") -> None:
        self._node_to_status: dict[str, Status] = node_to_status if node_to_status is not None else {}
        self._deferred: list[tuple[Any, Any]] = []
        self.unschedulable_plugins: set[str] = unschedulable_plugins if unschedulable_plugins is not None else set()
        self.pending_plugins: set[str] = pending_plugins if pending_plugins is not None else set()
        self.pre_filter_msg = pre_filter_msg
        self.post_filter_msg = post_filter_msg

    @property
    def node_to_status(self) -> dict[str, Status]:
        if self._deferred:
            d = self._node_to_status
            for names, statuses in self._deferred:
                if isinstance(statuses, Status):
                    # defer_absent: every node of the list without a status, but the kept ones.
                    nodes, kept = names
                    for ni in nodes:
                        name = ni.name
                        if name not in d and name not in kept:
                            d[name] = statuses
                else:
                    d.update(zip(names.tolist(), statuses.tolist(), strict=True))
            self._deferred = []
        return self._node_to_status

    @node_to_status.setter
    def node_to_status(self, value: dict[str, Status]) -> None:
        self._deferred = []
        self._node_to_status = value

    def defer_statuses(self, names: Any, statuses: Any) -> None:
        """Record ``statuses[i]`` for node ``names[i]`` (object arrays of distinct nodes)."""
        if len(names):
            self._deferred.append((names, statuses))

    def defer_absent(self, nodes: Sequence[NodeInfo], kept: set[str], status: Status) -> None:
        """NodeToStatus.SetAbsentNodesStatus, as upstream in O(1): ``status`` for every node of
        ``nodes`` not in ``kept`` that has no status when the map is read. ``nodes`` is kept as
        it is: a list nobody changes (the cache's node list is replaced, never edited)."""
        self._deferred.append(((nodes, kept), status))

    def status_count(self) -> int:
        """``len(node_to_status)``, without building it when that is not needed."""
        if any(isinstance(statuses, Status) for _, statuses in self._deferred):
            return len(self.node_to_status)
        if self._deferred and self._node_to_status:
            return len(self.node_to_status)
        return len(self._node_to_status) + sum(len(names) for names, _ in self._deferred)

    def add_plugin_status(self, s: Status) -> None:
        if not s.plugin:
            return
        if s.code == Code.PENDING:
            self.pending_plugins.add(s.plugin)
        elif s.is_rejected():
            self.unschedulable_plugins.add(s.plugin)

    def __repr__(self) -> str:
        return (f"Diagnosis(node_to_status={self.node_to_status!r}, unschedulable_plugins={self.unschedulable_plugins!r}, "
                f"pending_plugins={self.pending_plugins!r}, pre_filter_msg={self.pre_filter_msg!r}, "
                f"post_filter_msg={self.post_filter_msg!r})")


@dataclass(slots=True)
class Attempt:
    """One scheduling attempt of one pod: its decision and the data behind it."""

    pod: Pod
    outcome: str = "Unschedulable"  # Scheduled | Unschedulable | Error | Assumed | Waiting (in flight)
    node: str | None = None
    # The feasible nodes found by filtering (and the filter extenders); ``feasible`` has
    # their names, sorted, built when first read.
    feasible_nodes: Sequence[NodeInfo] = ()
    diagnosis: Diagnosis = field(default_factory=Diagnosis)
    scores: ScoreResult | None = None
    # The extenders' part of the scores (already in scores.totals), per node and extender.
    extender_scores: ExtenderScores | None = None
    # Nodes whose status the filter extenders set or added a reason to.
    extender_failed: set[str] = field(default_factory=set)
    message: str | None = None
    nominated_node: str | None = None
    victims: list[Pod] = field(default_factory=list)
    num_all_nodes: int = 0
    error: str | None = None
    # PostFilter returned an Error (a preemption that failed, e.g. its extender's call): the
    # attempt is still Unschedulable (a FitError with "preemption: <err>"), but the failure may
    # be transient, unlike a rejection.
    post_filter_error: bool = False
    # Carried from the scheduling cycle to the binding cycle.
    framework: Framework | None = field(default=None, repr=False)
    state: CycleState | None = field(default=None, repr=False)
    assumed: Pod | None = field(default=None, repr=False)
    host: str = ""
    waiting: WaitingPod | None = field(default=None, repr=False)
    # Scheduler.all_filters_for: every failing filter plugin per node (explain --all-filters).
    all_filters: dict[str, list[Status]] | None = field(default=None, repr=False)
    # OpportunisticBatching: the node the profile's batch hinted this cycle ("" = none). When
    # the pod went there, it was checked with the filters alone, never scored.
    node_hint: str = ""
    _feasible: list[str] | None = field(default=None, init=False, repr=False)

    @property
    def feasible(self) -> list[str]:
        """The names of the feasible nodes, sorted."""
        if self._feasible is None:
            nodes = self.feasible_nodes
            self._feasible = sorted(nodes.names() if isinstance(nodes, RowNodes) else map(_NAME, nodes))
        return self._feasible

    @feasible.setter
    def feasible(self, names: Sequence[str]) -> None:
        self._feasible = list(names)

    @property
    def failures(self) -> dict[str, Status]:
        return self.diagnosis.node_to_status

    def take_pods_to_activate(self) -> list[Pod]:
        """The pods plugins asked to activate during this attempt (emptied: upstream activates
        after the scheduling cycle and again after the binding cycle)."""
        if self.state is None:
            return []
        pta = self.state.get(PODS_TO_ACTIVATE_KEY)
        if pta is None or not pta.map:
            return []
        pods = list(pta.map.values())
        pta.map.clear()
        return pods


class ScheduleError(KubeschedError):
    """An Error status during a cycle (a plugin failed, not a pod that does not fit)."""


class _BatchCycle:
    """One scheduling cycle's dealings with its profile's OpportunisticBatch: the cycle count,
    the hint given, and the pod's signature, computed at most once and only when the batch
    needs it (upstream signs every pod when it is queued; a signature depends on the pod and
    the profile only, so signing it here gives the same value)."""

    __slots__ = ("batch", "fwk", "pod", "cycle", "hint", "_signature", "_signed")

    def __init__(self, batch: OpportunisticBatch, fwk: Framework, pod: Pod, cycle: int) -> None:
        self.batch = batch
        self.fwk = fwk
        self.pod = pod
        self.cycle = cycle
        self.hint = ""
        self._signature: str | None = None
        self._signed = False

    def signature(self) -> str | None:
        if not self._signed:
            self._signature = self.fwk.sign_pod(self.pod)
            self._signed = True
        return self._signature


def heap_root(scores: Sequence[int] | IntArray, randomizer: Sequence[int] | None = None) -> int:
    """1.36 selectHost: the index Go's ``heap.Init`` puts at the root of the feasible nodes'
    priority list (in the order they were found), which ``heap.Pop`` returns. ``Less(i, j)`` is
    a higher total, then a higher Randomizer (set only on nodes an extender scored; 0 otherwise),
    so among equal top scores the winner depends on the list's order as container/heap's
    sift-down moves it (container/heap.Init and down).

    Init sifts down every internal node, last first; nothing touches a subtree between its
    root's sift-down and its parent's, so right after node i's sift-down i holds its own element
    unless the larger child (the left one on ties) holds a strictly greater one, then that
    child's. The root ends with a top element; following that rule from the root, a node holding
    a top element keeps it, else the left child wins when its subtree has a top element (the
    right child's is never strictly greater), else the right child: one path down."""
    key = np.asarray(scores, np.int64)
    if randomizer is not None:
        rnd = np.asarray(randomizer, np.int64)
        top_total = key == key.max()
        key = np.where(top_total, rnd - rnd[top_total].min() + 1, 0)  # only the top totals compete
    top = key.max()
    if key[0] == top:  # the first node found holds a top total: nothing climbs over it
        return 0
    return heap_root_of_tops(np.flatnonzero(key == top))


def heap_root_of_tops(tops: IntArray) -> int:
    """heap_root given the ascending indices of the top keys: the walk in closed form. It
    goes left whenever the left subtree holds a top and stops at the first top on its way, so
    it ends at the first top in pre-order (a node, its left subtree, its right subtree): the
    top whose path from the root (the bits of index + 1 after the leading 1; 0 = left) is the
    smallest, compared left-aligned, the shallower first on a tie."""
    if len(tops) == 1 or tops[0] == 0:
        return int(tops[0])
    keys = _preorder_keys(int(tops[-1]) + 1)
    return int(tops[int(keys[tops].argmin())])


# Pre-order keys of heap indices (index + 1 shifted to _DEEPEST's width, then the depth; the
# order does not depend on the heap's size), grown on demand: read, never written in place.
_DEEPEST = 40
_preorder: IntArray = np.zeros(0, np.int64)


def _preorder_keys(n: int) -> IntArray:
    global _preorder
    keys = _preorder
    if len(keys) < n:
        p = np.arange(1, max(n, 1024, 2 * len(keys)) + 1, dtype=np.int64)
        depth = np.frexp(p.astype(np.float64))[1].astype(np.int64) - 1  # exact: p < 2**53
        keys = ((p << (_DEEPEST - depth)) << 6) + depth
        _preorder = keys
    return keys


class Scheduler:
    """Profiles + cache + nominator + cluster actions; one pod at a time."""

    def __init__(
        self,
        profiles: Mapping[str, Framework],
        cache: Cache,
        nominator: PodNominator,
        *,
        deterministic: bool = False,
        rng: random.Random | None = None,
        percentage_of_nodes_to_score: int = 0,
        bind: Callable[[Pod, str], object] | None = None,
        set_nominated_node: Callable[[Pod, str], Pod] | None = None,
        clock: Callable[[], float] | None = None,
        extenders: Sequence[Extender] = (),
        features: Features | None = None,
    ) -> None:
        """``extenders``: the configured extenders (kubesched.extender.new_http_extenders),
        ignorable ones last. ``bind``: records in the cluster a binding an extender made (it
        posted the Binding itself; a simulated API server must still learn of it); it may
        raise ApiError (e.g. 409), which fails the binding like the extender's own error."""
        self.profiles = dict(profiles)
        self.features = features if features is not None else DEFAULT_FEATURES
        # 1.36's selectHost walks a container/heap; 1.30 samples ties at random.
        self._heap_select = self.features.enabled("HeapSelectHost")
        # False: pods with per-node-only filters go node by node through every filter (tests
        # compare both).
        self.hybrid_filters = True
        self._absent_statuses = self.features.enabled("PreFilterAbsentNodes")
        self.cache = cache
        self.nominator = nominator
        self.deterministic = deterministic
        self.rng = rng if rng is not None else random.Random()
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.next_start_node_index = 0
        self._bind = bind
        self._set_nominated = set_nominated_node
        self.clock = clock
        # Called after a successful bind with the cycle state (the simulator completes volume
        # bindings there, as the PV controller would).
        self.on_bound: Callable[[CycleState, Pod, str], None] | None = None
        # NominatedNodeNameForExpectation: the driver writes status.nominatedNodeName (the API
        # call in `run`, the pod's view in the simulators). None: nothing to write.
        self.nominate_for_expectation: Callable[[Pod, str], None] | None = None
        # Called in the binding cycle after the PreBind plugins succeeded, before Bind: live
        # mode writes VolumeBinding's decisions to the API and waits for the PV controller
        # there (BindPodVolumes). A non-success Status fails the binding cycle as a PreBind
        # failure would; its message is reported as it is.
        self.volume_binder: Callable[[CycleState, Pod, str], Status | None] | None = None
        self.victims: list[Pod] = []  # filled by the deleter during a cycle
        # Pods whose attempts also record every failing filter plugin on every node
        # (Attempt.all_filters), for `explain --all-filters`; decisions do not change.
        self.all_filters_for: Callable[[Pod], bool] | None = None
        # The rows and row positions of the last node list that is not the snapshot's.
        self._rows_cache: tuple[Sequence[NodeInfo], IntArray, IntArray] | None = None
        # Nominated pods' usage vectors for the filter plan's resources (nominations persist
        # across cycles).
        self._usage_cache = UsageCache()
        # The nominations addNominatedPods reads, as rows, kept in step with the nominator.
        self._nominations = NominatedRows()
        self.extenders: tuple[Extender, ...] = tuple(extenders)
        self._has_filter_extenders = any(e.is_filter() for e in self.extenders)
        # OpportunisticBatching's cycle count (sched.CurrentCycle: the queue's scheduling
        # cycle, one per pop). A driver with a queue sets ``current_cycle`` to it; without one,
        # every schedulePod counts as a cycle.
        self.current_cycle: Callable[[], int] | None = None
        self._cycles = 0
        self._has_prioritizer_extenders = any(e.is_prioritizer() for e in self.extenders)

    # ------------------------------------------------------------------ helpers
    def framework_for(self, pod: Pod) -> Framework | None:
        return self.profiles.get(pod.scheduler_name)

    def start_attempt(self, pod: Pod) -> Attempt:
        """A new attempt for ``pod`` with its profile's framework and a fresh CycleState (with
        PodsToActivate), or failed with an Error when no profile has its schedulerName."""
        attempt = Attempt(pod)
        fwk = self.framework_for(pod)
        if fwk is None:
            attempt.outcome = "Error"
            attempt.error = attempt.message = f"profile not found for scheduler name {pod.scheduler_name!r}"
            return attempt
        state = CycleState()
        state.write(PODS_TO_ACTIVATE_KEY, PodsToActivate())
        attempt.framework, attempt.state = fwk, state
        return attempt

    def num_feasible_nodes_to_find(self, fwk: Framework, num_all_nodes: int) -> int:
        """numFeasibleNodesToFind: all nodes below 100, else an adaptive percentage."""
        if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
            return num_all_nodes
        # The profile's value whenever it is set (0 included: adaptive), else the global one.
        pct = fwk.percentage_of_nodes_to_score
        if pct is None:
            pct = self.percentage_of_nodes_to_score
        if pct == 0:
            pct = 50 - num_all_nodes // 125
            if pct < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
                pct = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
        k = num_all_nodes * pct // 100
        if k < MIN_FEASIBLE_NODES_TO_FIND:
            return MIN_FEASIBLE_NODES_TO_FIND
        return k

    # ------------------------------------------------------------------ filtering
    def find_nodes_that_pass_filters(self, fwk: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis,
                                     nodes: Sequence[NodeInfo]) -> Sequence[NodeInfo]:
        """findNodesThatPassFilters as run by one worker: nodes in order from
        nextStartNodeIndex until a node passes that would be the (k+1)-th feasible one (it is
        dropped; nodes that failed before it keep their status).

        With batch filters only, the nodes are evaluated in chunks of rows from the start
        index, each chunk sized from the pass rate seen so far, until k+1 nodes passed or
        every node was evaluated: a batch filter's verdict on a row does not depend on the
        other rows, so this is exactly the one-worker loop, at a cost that grows with k
        rather than with the cluster. The filters' exact statuses are then built only for
        the rejected nodes before the cutoff."""
        n = len(nodes)
        if n == 0:
            return []
        k = self.num_feasible_nodes_to_find(fwk, n)
        # One feasible node is enough only when nothing will compare them: no filter extender
        # may still reject it, and neither Score plugins nor prioritizing extenders score.
        if not self._has_filter_extenders and not fwk.has_score_plugins() and not self._has_prioritizer_extenders:
            k = 1
        start = self.next_start_node_index % n
        if not fwk.has_filter_plugins():
            return [nodes[(start + i) % n] for i in range(min(k, n))]
        batch, per_node = fwk.batch_filters(state)
        if per_node:
            if batch and self.hybrid_filters:
                return self._filter_hybrid(fwk, state, pod, diagnosis, nodes, start, k, batch)
            return self._filter_node_by_node(fwk, state, pod, diagnosis, nodes, start, k)
        table = self.cache.table
        by_row = self.cache.by_row
        base, positions = self._rows(nodes)
        # Nodes where RunFilterPluginsWithNominatedPods differs from plain filtering: those
        # with a nominated pod of >= priority other than this one, by their position in the
        # rotated order (sorted) and their slot in the nominations view. Only they need more
        # than the batch filters.
        nom_at, nom_slots, override = self._nominated_positions(pod, positions, start, n)
        plan = filter_plan(fwk.filter, fwk.pre_filter, state, pod) if nom_at.size else None
        if plan is not None and [step.plugin for step in plan.steps] != [b[0] for b in batch]:
            plan = None
        view = self._nominations
        rows_parts: list[IntArray] = []
        masks_parts: list[BoolArray] = []
        ok_parts: list[BoolArray] = []
        # The nodes failing with their nominated pods: (positions, names, statuses) per batch.
        special_parts: list[tuple[IntArray, list[str], list[Status]]] = []
        evaluated = 0
        passed = 0
        size = self._first_chunk(k, n)
        while True:
            stop = min(n, evaluated + size)
            rows = self._rotated(base, start, evaluated, stop)
            masks = np.empty((len(batch), stop - evaluated), np.bool_)
            for j, (_, fb, _) in enumerate(batch):
                masks[j] = fb(state, pod, table, rows)
            ok = np.logical_and.reduce(masks, axis=0) if batch else np.ones(stop - evaluated, np.bool_)
            lo, hi = np.searchsorted(nom_at, (evaluated, stop)).tolist() if nom_at.size else (0, 0)
            if hi > lo:
                here, slots = nom_at[lo:hi], nom_slots[lo:hi]
                ok = ok.copy()
                if plan is not None:
                    # Every active filter is node-only or resource arithmetic: the nominated
                    # pods change only the resource steps (no clones, no AddPod).
                    failed, found = self._nominated_statuses(plan, state, pod, slots, override,
                                                             masks[:, here - evaluated])
                    if failed.size:
                        ok[here[failed] - evaluated] = False
                        names = view.names
                        special_parts.append((here[failed], [names[i] for i in slots[failed].tolist()], found))
                else:
                    for p, slot in zip(here.tolist(), slots.tolist(), strict=True):
                        ni = by_row[int(view.rows[slot])]
                        assert ni is not None
                        nst = fwk.run_filter_plugins_with_nominated_pods(state, pod, ni)
                        if nst is not None and nst.code == Code.ERROR:
                            raise ScheduleError(nst.message)
                        if nst is not None and nst.code != Code.SUCCESS:
                            ok[p - evaluated] = False
                            special_parts.append((np.array([p], np.int64), [ni.name], [nst]))
                        else:
                            ok[p - evaluated] = True
            rows_parts.append(rows)
            masks_parts.append(masks)
            ok_parts.append(ok)
            passed += int(np.count_nonzero(ok))
            evaluated = stop
            if passed > k or evaluated >= n:
                break
            # The next chunk: what the pass rate so far says the remaining nodes need (with a
            # margin), at least as many rows as evaluated so far (so chunks grow geometrically).
            need = k + 1 - passed
            size = max(evaluated, -(-need * 5 * evaluated // (4 * passed)) if passed else 0)
        if len(rows_parts) == 1:
            rows, masks, ok = rows_parts[0], masks_parts[0], ok_parts[0]
        else:
            rows = np.concatenate(rows_parts)
            masks = np.concatenate(masks_parts, axis=1)
            ok = np.concatenate(ok_parts)
        # One worker's loop: the node that would be the (k+1)-th feasible one cancels the
        # search and is dropped; the nodes that failed before it keep their status.
        passing = np.flatnonzero(ok)
        cutoff = evaluated if passing.size <= k else int(passing[k])
        m = min(k, passing.size)
        # The first m evaluated all passed (passing ascends): a slice keeps a run of
        # consecutive rows recognisable (framework.nodetable.row_span).
        feasible = RowNodes(table, rows[:m] if m and int(passing[m - 1]) == m - 1 else rows[passing[:k]], by_row)
        failing = np.flatnonzero(~ok[:cutoff])
        special_at = np.empty(0, np.int64)
        if special_parts and failing.size:
            # Positions ascend across the parts (chunks in order, each sorted), and every one
            # of them failed: those before the cutoff keep their status with nominated pods.
            special_at = np.concatenate([part[0] for part in special_parts])
            special = np.zeros(cutoff, np.bool_)
            special[special_at[:int(np.searchsorted(special_at, cutoff))]] = True
            failing = failing[~special[failing]]
        error = self._rejected_statuses(fwk, state, pod, diagnosis, rows[failing], batch, masks[:, failing]) \
            if failing.size else None
        if special_at.size:
            # Recorded up to the cutoff, or up to the node whose Error stopped the search.
            before = int(np.searchsorted(special_at, cutoff if error is None else int(failing[error[0]])))
            names = [name for part in special_parts for name in part[1]]
            found = [st for part in special_parts for st in part[2]]
            diagnosis.node_to_status.update(zip(names[:before], found[:before], strict=True))
            added: set[int] = set()
            for sst in found[:before]:
                if id(sst) not in added:  # statuses are shared between nodes; adding is idempotent
                    added.add(id(sst))
                    diagnosis.add_plugin_status(sst)
        if error is not None:
            raise ScheduleError(error[1])
        return feasible

    @staticmethod
    def _first_chunk(k: int, n: int) -> int:
        """Rows in the search's first chunk: the k+1 nodes it needs if all pass, and a margin."""
        return min(n, k + 1 + max(k // 8, 16))

    @staticmethod
    def _filter_node_by_node(fwk: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis,
                             nodes: Sequence[NodeInfo], start: int, k: int) -> list[NodeInfo]:
        """The general path (per-node-only filter plugins): every filter plugin node by
        node, nominated pods included, in order from ``start``."""
        feasible: list[NodeInfo] = []
        statuses = diagnosis.node_to_status
        for ni in itertools.chain(nodes[start:], nodes[:start]):
            s = fwk.run_filter_plugins_with_nominated_pods(state, pod, ni)
            if s is None or s.code == Code.SUCCESS:
                if len(feasible) >= k:
                    break  # the (k+1)-th feasible node cancels the search, uncounted
                feasible.append(ni)
                continue
            if s.code == Code.ERROR:
                raise ScheduleError(s.message)
            statuses[ni.name] = s
            diagnosis.add_plugin_status(s)
        return feasible

    def _filter_hybrid(self, fwk: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis,
                       nodes: Sequence[NodeInfo], start: int, k: int, batch: list[tuple[Any, Any, Any]]
                       ) -> list[NodeInfo]:
        """The node-by-node loop of :meth:`_filter_node_by_node` when only some active filters
        are per-node (a pod with DRA claims: DynamicResources), with the others' verdicts from
        their batch filters: per node, RunFilterPlugins stops at the first failing plugin in
        chain order, so a per-node plugin runs on a node only when every batch plugin before
        it passed there (as in the chain), and a node failing a batch plugin first gets that
        plugin's status (built for all of them at once, as the batch path does). Nodes with
        nominated pods of >= priority take RunFilterPluginsWithNominatedPods whole. Same
        nodes, statuses, order and cutoff as the node-by-node loop; the per-node plugins see
        the same nodes in the same order."""
        n = len(nodes)
        skip = state.skip_filter_plugins
        chain = [p for p in fwk.filter if p.name not in skip]
        position = {p.name: i for i, p in enumerate(chain)}
        batch_names = {b[0].name for b in batch}
        per_node = [(position[p.name], p) for p in chain if p.name not in batch_names]
        batch_at = np.fromiter((position[b[0].name] for b in batch), np.int64, len(batch))
        first_per_node = per_node[0][0]
        table = self.cache.table
        by_row = self.cache.by_row
        base, positions = self._rows(nodes)
        nom_at, _, _ = self._nominated_positions(pod, positions, start, n)
        nominated = set(nom_at.tolist())
        statuses = diagnosis.node_to_status
        feasible: list[NodeInfo] = []
        failed_rows: list[IntArray] = []
        failed_masks: list[BoolArray] = []
        evaluated = 0
        size = self._first_chunk(k, n)
        done = False
        while not done and evaluated < n:
            stop = min(n, evaluated + size)
            rows = self._rotated(base, start, evaluated, stop)
            masks = np.empty((len(batch), stop - evaluated), np.bool_)
            for j, (_, fb, _) in enumerate(batch):
                masks[j] = fb(state, pod, table, rows)
            ok = np.logical_and.reduce(masks, axis=0)
            # Per node, the chain position of its first failing batch plugin (past the end: none).
            fail_at = np.where(ok, len(chain), batch_at[np.argmin(masks, axis=0)])
            by_batch: list[int] = []
            for j, (row, fails_at) in enumerate(zip(rows.tolist(), fail_at.tolist(), strict=True)):
                if evaluated + j in nominated:
                    ni = by_row[row]
                    assert ni is not None
                    st = fwk.run_filter_plugins_with_nominated_pods(state, pod, ni)
                elif fails_at < first_per_node:
                    by_batch.append(j)
                    continue
                else:
                    ni = by_row[row]
                    assert ni is not None
                    st = None
                    for at, p in per_node:
                        if at > fails_at:
                            break
                        st = fwk.run_filter_plugin(p, state, pod, ni)
                        if st is not None:
                            break
                    if st is None and fails_at < len(chain):
                        by_batch.append(j)
                        continue
                if st is None or st.code == Code.SUCCESS:
                    if len(feasible) >= k:
                        done = True  # the (k+1)-th feasible node cancels the search, uncounted
                        break
                    feasible.append(ni)
                    continue
                if st.code == Code.ERROR:
                    # The search stops here: the nodes the batch filters rejected before this
                    # one keep their status, as in the node-by-node loop.
                    if by_batch:
                        failed_rows.append(rows[np.asarray(by_batch, np.int64)])
                        failed_masks.append(masks[:, np.asarray(by_batch, np.int64)])
                    if failed_rows:
                        error = self._rejected_statuses(fwk, state, pod, diagnosis, np.concatenate(failed_rows),
                                                        batch, np.concatenate(failed_masks, axis=1))
                        if error is not None:
                            raise ScheduleError(error[1])
                    raise ScheduleError(st.message)
                statuses[ni.name] = st
                diagnosis.add_plugin_status(st)
            if by_batch:
                sel = np.asarray(by_batch, np.int64)
                failed_rows.append(rows[sel])
                failed_masks.append(masks[:, sel])
            evaluated = stop
            need = k + 1 - len(feasible)
            size = max(evaluated, -(-need * 5 * evaluated // (4 * len(feasible))) if feasible else 0)
        if failed_rows:
            rows = failed_rows[0] if len(failed_rows) == 1 else np.concatenate(failed_rows)
            masks = failed_masks[0] if len(failed_masks) == 1 else np.concatenate(failed_masks, axis=1)
            error = self._rejected_statuses(fwk, state, pod, diagnosis, rows, batch, masks)
            if error is not None:
                raise ScheduleError(error[1])
        return feasible

    def _nominated_positions(self, pod: Pod, positions: IntArray, start: int, n: int
                             ) -> tuple[IntArray, IntArray, tuple[int, list[PodInfo]] | None]:
        """addNominatedPods' condition: the nodes with nominated pods of priority >= the
        pod's, other than the pod itself, among the ``n`` nodes of this cycle (``positions``:
        per table row, its position in the node list, or -1) — as their positions in the
        order rotated to ``start`` (sorted), their slots in :attr:`_nominations`, and the slot
        whose pods, without this pod, differ from the view's (None if the pod is not
        nominated among them)."""
        empty = np.empty(0, np.int64)
        nominator = self.nominator
        if not nominator:
            return empty, empty, None
        view = self._nominations
        view.sync(nominator, pod.priority, self.cache.node_infos, self.cache.table.node_version)
        slots = view.live()
        override = None
        mine = nominator.nominated_node(pod)
        if mine:
            override = view.without(pod.uid, mine)
            if override is not None and not override[1]:
                slots = slots[slots != override[0]]
                override = None
        if not slots.size:
            return empty, empty, None
        rows = view.rows[slots]
        inside = rows < len(positions)
        pos = np.full(len(rows), -1, np.int64)
        pos[inside] = positions[rows[inside]]
        keep = pos >= 0
        rel = (pos[keep] - start) % n
        order = np.argsort(rel, kind="stable")
        return rel[order], slots[keep][order], override

    def _nominated_statuses(self, plan: FilterPlan, state: CycleState, pod: Pod, slots: IntArray,
                            override: tuple[int, list[PodInfo]] | None, masks: BoolArray
                            ) -> tuple[IntArray, list[Status]]:
        """RunFilterPluginsWithNominatedPods on nodes holding relevant nominated pods
        (``slots`` of :attr:`_nominations`, with ``override``: one slot's pods without this
        pod; ``masks[:, i]``: the batch verdict of each filter on ``slots[i]``'s node), for
        a pod whose filters have a plan: the chain runs with the nominated pods added, then,
        if that passed, without them — the batch result. So a node's status is its chain's
        first failure with the nominated pods' usage taken from the resource steps' free
        vector (node-only steps keep their batch verdict), when there is one; the nodes that
        pass that way keep their batch verdict and status. Returns the nodes (indices into
        ``slots``, ascending) failing with the nominated pods, and their statuses."""
        view = self._nominations
        cache = self._usage_cache
        width = len(plan.need)

        def total(pods: Sequence[Pod]) -> tuple[int, ...]:
            return cache.total(plan, pods)

        extra = view.usage(slots, plan.layout, width, total)
        if override is not None:
            hit = np.flatnonzero(slots == override[0])
            if hit.size:
                extra = extra.copy()
                extra[hit[0]] = total([pi.pod for pi in override[1]])
        extra = extra.T
        at_rows = view.rows[slots]
        free = plan.table_free(self.cache.table, at_rows) - extra
        short = np.asarray(plan.need, np.int64)[:, None] > free
        # Per step (row) and node (column): does the step fail with the nominated pods?
        fails = np.empty((len(plan.steps), len(slots)), np.bool_)
        for k, step in enumerate(plan.steps):
            if step.fit is None:
                fails[k] = ~masks[k]
            else:
                fails[k] = short[step.start:step.stop].any(axis=0)
        failing = np.flatnonzero(fails.any(axis=0))
        if not failing.size:
            return failing, []
        first = np.argmax(fails[:, failing], axis=0)
        # The statuses by failing node, as an object array: a status is shared by the nodes
        # with the same shortfalls and handed to them by one fancy assignment, not a loop.
        out = np.empty(len(failing), object)
        node_only_step = np.fromiter((step.fit is None for step in plan.steps), np.bool_, len(plan.steps))
        at_node_only = node_only_step[first]
        by_row = self.cache.by_row
        for i in np.flatnonzero(at_node_only).tolist():
            k = int(first[i])
            ni = by_row[int(at_rows[failing[i]])]
            assert ni is not None
            st = plan.node_only_status(k, state, pod, ni)
            if st is None:
                raise ScheduleError(f"batch and per-node filter {plan.steps[k].plugin.name} disagree for pod "
                                    f"{pod.key} on node {ni.name}")
            if st.code == Code.ERROR:
                raise ScheduleError(st.message)
            out[i] = st
        at_resources = np.flatnonzero(~at_node_only)
        if at_resources.size:
            # 1.36's unresolvable oversize reads the allocatable, only where a resource step fails.
            alloc = plan.table_alloc(self.cache.table, at_rows) if plan.needs_alloc else None
            cols = failing[at_resources]
            steps = first[at_resources]
            if width < 63:
                # One code per distinct set of insufficient resources: the status of a resource
                # step is built once per (step, code), from the first node that has it.
                codes = (short[:, cols].astype(np.int64) << np.arange(width, dtype=np.int64)[:, None]).sum(axis=0)
                statuses = np.empty(len(cols), object)
                lo, hi = int(steps.min()), int(steps.max())
                distinct = [lo] if lo == hi else sorted(set(steps.tolist()))
                for k in distinct:
                    at = np.flatnonzero(steps == k) if len(distinct) > 1 else np.arange(len(steps))
                    step_codes = codes[at]
                    if alloc is not None:
                        # 1.36: nodes with the same shortfalls differ when a request exceeds the
                        # allocatable itself (unresolvable): one more bit.
                        st_k = plan.steps[k]
                        over = (np.asarray(plan.need[st_k.start + 1:st_k.stop], np.int64)[:, None]
                                > alloc[st_k.start + 1:st_k.stop][:, cols[at]]).any(axis=0)
                        step_codes = step_codes * 2 + over
                    # The status of each code, built from the first node that has it.
                    _, first_of, which = group_codes(step_codes)
                    built = np.empty(len(first_of), object)
                    for j, col in enumerate(cols[at[first_of]].tolist()):
                        got = plan.resource_status(k, free[:, col].tolist(),
                                                   alloc[:, col].tolist() if alloc is not None else None)
                        assert got is not None
                        built[j] = got
                    statuses[at] = built[which]
            else:
                statuses = np.empty(len(cols), object)
                for i, (k, j) in enumerate(zip(steps.tolist(), cols.tolist(), strict=True)):
                    got = plan.resource_status(k, free[:, j].tolist(),
                                               alloc[:, j].tolist() if alloc is not None else None)
                    assert got is not None
                    statuses[i] = got
            out[at_resources] = statuses
        return failing, cast(list[Status], out.tolist())

    def _rows(self, nodes: Sequence[NodeInfo]) -> tuple[IntArray, IntArray]:
        """(the table rows of ``nodes``, in order; per table row, its position in ``nodes``
        or -1). The snapshot's node list has them cached with it; another list (a
        PreFilterResult's nodes) gets them computed."""
        snapshot = self.cache.snapshot
        if nodes is snapshot.list():
            return snapshot.rows(), snapshot.positions()
        cached = self._rows_cache
        if cached is not None and cached[0] is nodes:
            return cached[1], cached[2]
        base = np.fromiter(map(_INDEX, nodes), np.int64, len(nodes))
        positions = np.full(self.cache.table.size, -1, np.int64)
        positions[base] = np.arange(len(nodes), dtype=np.int64)
        self._rows_cache = (nodes, base, positions)
        return base, positions

    @staticmethod
    def _rotated(base: IntArray, start: int, a: int, b: int) -> IntArray:
        """Positions ``a`` to ``b`` (exclusive) of ``base`` rotated to begin at ``start``."""
        n = len(base)
        lo, hi = start + a, start + b
        if lo >= n:
            return base[lo - n:hi - n]
        if hi <= n:
            return base[lo:hi]
        return np.concatenate((base[lo:], base[:hi - n]))

    def _rejected_statuses(self, fwk: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis,
                           rows: IntArray, batch: list[tuple[Any, Any, Any]], masks: BoolArray) -> tuple[int, str] | None:
        """The status of every node (table ``rows``, in the search's order) the batch filters
        rejected (``masks``: the batch verdicts on those rows): the first plugin whose batch
        rejected the node is the one RunFilterPlugins stops at (batch == per-node). Its
        filter_batch_status, called on just those rows, gives the statuses; otherwise its
        per-node filter builds each. When a status is an Error, the node-by-node search
        stops at the first such node: only the nodes before it keep their status, and that
        node's index into ``rows`` and its message are returned (the caller raises)."""
        first = np.argmin(masks, axis=0)
        out = np.empty(rows.size, object)
        table = self.cache.table
        errors: list[int] = []  # rows (indices into ``rows``) whose status is an Error
        rejected: list[Status] = []  # the other statuses built
        for j in np.flatnonzero(np.bincount(first, minlength=len(batch))).tolist():
            plugin, _, fsb = batch[j]
            sel = np.flatnonzero(first == j) if len(batch) > 1 else np.arange(rows.size)
            if fsb is not None:
                codes, table_statuses = fsb(state, pod, table, rows[sel])
                codes = np.asarray(codes, np.int64)
                wrapped = np.empty(len(table_statuses), object)
                for c in np.flatnonzero(np.bincount(codes, minlength=len(table_statuses))).tolist():
                    s = fwk.wrap_filter_status(plugin, table_statuses[c])
                    if s is None or s.code == Code.SUCCESS:
                        raise ScheduleError(f"batch and per-node filter {plugin.name} disagree for pod {pod.key}")
                    if s.code == Code.ERROR:
                        errors.append(int(sel[np.argmax(codes == c)]))
                    wrapped[c] = s
                    rejected.append(s)
                out[sel] = wrapped[codes]
                continue
            by_row = self.cache.by_row
            for i in sel.tolist():
                ni = by_row[int(rows[i])]
                assert ni is not None
                s = fwk.run_filter_plugin(plugin, state, pod, ni)
                if s is None or s.code == Code.SUCCESS:
                    raise ScheduleError(f"batch and per-node filter {plugin.name} disagree for pod {pod.key} "
                                        f"on node {ni.name}")
                out[i] = s
                if s.code == Code.ERROR:
                    errors.append(i)
                    break  # the rows after it are not reached
                rejected.append(s)
        if not errors:
            for s in rejected:
                diagnosis.add_plugin_status(s)
            diagnosis.defer_statuses(table.name_array[rows], out)
            return None
        stop = min(errors)
        seen: set[int] = set()
        for s in out[:stop].tolist():
            if id(s) not in seen:  # statuses are shared between nodes; adding is idempotent
                seen.add(id(s))
                diagnosis.add_plugin_status(s)
        diagnosis.defer_statuses(table.name_array[rows[:stop]], out[:stop])
        return stop, out[stop].message

    def find_nodes_that_fit_pod(self, fwk: Framework, state: CycleState, pod: Pod,
                                attempt: Attempt, *, batch_cycle: _BatchCycle | None = None) -> Sequence[NodeInfo]:
        diagnosis = attempt.diagnosis
        all_nodes = self.cache.snapshot.list()
        pre_res, s, plugins_with_nodes = fwk.run_pre_filter_plugins(state, pod)
        diagnosis.unschedulable_plugins = set(plugins_with_nodes)
        if s is not None and s.code != Code.SUCCESS:
            if not s.is_rejected():
                raise ScheduleError(s.message)
            for ni in all_nodes:
                diagnosis.node_to_status[ni.name] = s
            diagnosis.pre_filter_msg = s.message
            diagnosis.add_plugin_status(s)
            return []
        nominated = pod.nominated_node_name
        if batch_cycle is not None:
            # GetNodeHint (even with a nominated node, which is tried instead: the hint is then
            # used up). A hint is evaluated exactly like a nominated node: filters (with the
            # nominated pods) and filter extenders on it alone; if it passes, it is the only
            # feasible node and nothing is scored.
            hint = batch_cycle.batch.get_node_hint(pod, batch_cycle.signature, state, batch_cycle.cycle,
                                                   self._now())
            batch_cycle.hint = attempt.node_hint = hint
            nominated = nominated or hint
        elif fwk.batch is not None:
            fwk.batch.count_unsigned(hinted=True)
        if nominated:
            nominated_info = self.cache.snapshot.get(nominated)
            if nominated_info is not None:
                # evaluateNominatedNode: Diagnosis passed by value upstream, so a failure
                # lands in the status map but not in UnschedulablePlugins.
                scratch = Diagnosis(node_to_status=diagnosis.node_to_status)
                st = fwk.run_filter_plugins_with_nominated_pods(state, pod, nominated_info)
                if st is None or st.code == Code.SUCCESS:
                    try:
                        passed = self.find_nodes_that_pass_extenders(pod, [nominated_info], attempt)
                    except ApiError:
                        passed = []  # only logged upstream: evaluation falls through to all nodes
                    if passed:
                        return passed
                elif st.code != Code.ERROR:
                    scratch.node_to_status[nominated_info.name] = st
        nodes = all_nodes
        if pre_res is not None and pre_res.node_names is not None:
            # The listed nodes among the PreFilterResult's, in list order (found by name).
            infos = self.cache.node_infos
            positions = self.cache.snapshot.positions()
            found = [p for name in pre_res.node_names if (info := infos.get(name)) is not None
                     and 0 <= info.index < len(positions) and (p := int(positions[info.index])) >= 0]
            found.sort()
            nodes = [all_nodes[p] for p in found]
        feasible = self.find_nodes_that_pass_filters(fwk, state, pod, diagnosis, nodes)
        processed = len(feasible) + diagnosis.status_count()
        # Modulo all nodes, not the PreFilterResult's: that list may even be empty.
        if all_nodes:
            self.next_start_node_index = (self.next_start_node_index + processed) % len(all_nodes)
        if nodes is not all_nodes and self._absent_statuses:
            # 1.36 NodeToStatus.SetAbsentNodesStatus: every node the PreFilterResult left out,
            # and no status was set for, counts in the message (no plugin name). Absent
            # statuses are not in NodeToStatus.Len(): added after the start index moved.
            absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                            (f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins_with_nodes))}]",))
            # Set when the map is read (a scheduled DaemonSet pod's thousands of other nodes
            # cost nothing unless someone looks).
            diagnosis.defer_absent(all_nodes, {ni.name for ni in nodes}, absent)
        after = self.find_nodes_that_pass_extenders(pod, feasible, attempt)
        if len(after) != len(feasible):
            # Extenders have no queueing hints: any cluster event may requeue the pod.
            diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
        return after

    def find_nodes_that_pass_extenders(self, pod: Pod, feasible: Sequence[NodeInfo],
                                       attempt: Attempt) -> Sequence[NodeInfo]:
        """findNodesThatPassExtenders: the filter extenders in turn over the feasible nodes;
        their FailedNodes / FailedAndUnresolvableNodes become Unschedulable /
        UnschedulableAndUnresolvable statuses (no plugin name) in the diagnosis. A
        non-ignorable extender's failure raises ApiError."""
        if not self._has_filter_extenders or not feasible:
            return feasible
        from kubesched.extender import run_filter_extenders

        statuses = attempt.diagnosis.node_to_status
        before = dict(statuses)
        try:
            return run_filter_extenders(self.extenders, pod, feasible, statuses)
        finally:
            attempt.extender_failed.update(n for n, s in statuses.items() if before.get(n) is not s)

    # ------------------------------------------------------------------ scoring
    def select_host(self, result: ScoreResult) -> NodeInfo:
        """selectHost: the highest total; ties at random (reservoir sampling upstream), or
        the lexicographically smallest node name under --deterministic."""
        totals = result.totals
        best = int(totals.max())
        ties = np.flatnonzero(totals == best)
        if len(ties) == 1:
            return result.nodes[int(ties[0])]
        if self._heap_select:
            if result.randomizer is not None:
                return result.nodes[heap_root(totals, result.randomizer)]
            return result.nodes[heap_root_of_tops(ties)]
        if self.deterministic:
            nodes = result.nodes
            return min((nodes[i] for i in ties.tolist()), key=_NAME)
        return result.nodes[int(ties[self.rng.randrange(len(ties))])]

    def _now(self) -> float:
        """The scheduler's clock (virtual in the simulators), else the monotonic clock."""
        return self.clock() if self.clock is not None else time.monotonic()

    def schedule_pod(self, fwk: Framework, state: CycleState, pod: Pod, attempt: Attempt) -> NodeInfo | None:
        """schedulePod: the chosen node, or None with attempt.diagnosis filled (FitError).
        With OpportunisticBatching, the chosen node and the rest of the priority list go to
        the profile's batch (StoreScheduleResults), which may hint the next pod's node."""
        self._cycles += 1
        attempt.num_all_nodes = len(self.cache.node_infos)
        if attempt.num_all_nodes == 0:
            return None
        bc: _BatchCycle | None = None
        if fwk.batch is not None and not fwk.signs_no_pod:
            cycle = self.current_cycle() if self.current_cycle is not None else self._cycles
            bc = _BatchCycle(fwk.batch, fwk, pod, cycle)
        feasible = self.find_nodes_that_fit_pod(fwk, state, pod, attempt, batch_cycle=bc)
        attempt.feasible_nodes = feasible
        if self.all_filters_for is not None and not attempt.diagnosis.pre_filter_msg and self.all_filters_for(pod):
            # After filtering, before scoring: the state is PreFilter's, as the filters saw it.
            attempt.all_filters = {ni.name: fwk.run_all_filter_plugins(state, pod, ni)
                                   for ni in self.cache.snapshot.list()}
        if not feasible:
            return None
        if len(feasible) == 1:
            if bc is not None:
                bc.batch.store_schedule_results(bc.signature, bc.hint, feasible[0].name, None, bc.cycle, self._now())
            elif fwk.batch is not None:
                fwk.batch.count_unsigned(chosen_among=1)
            return feasible[0]
        if not fwk.has_score_plugins() and not self.extenders:
            # prioritizeNodes without scorers: every node scores 1.
            result = ScoreResult(feasible, np.ones(len(feasible), np.int64))
        else:
            s = fwk.run_pre_score_plugins(state, pod, feasible)
            if s is not None and not s.is_success():
                raise ScheduleError(s.message)
            result = fwk.run_score_plugins(state, pod, feasible)
            if self._has_prioritizer_extenders:
                from kubesched.extender import run_prioritize_extenders

                # Each extender score adds score x weight x 10 to its node (errors ignored).
                ext = run_prioritize_extenders(self.extenders, pod, feasible)
                if ext.by_node:
                    result.totals += ext.totals([ni.name for ni in feasible])
                    if self._heap_select:
                        # prioritizeNodes: rand.Int() for the nodes the extenders scored.
                        result.randomizer = [self.rng.getrandbits(63) if ni.name in ext.by_node else 0
                                             for ni in feasible]
                attempt.extender_scores = ext
        attempt.scores = result
        chosen = self.select_host(result)
        if bc is not None:
            # The rest of the list in heap order, built only if a later cycle asks for a hint.
            rest = SortedNodeScores(result.nodes, result.totals, result.randomizer)
            bc.batch.store_schedule_results(bc.signature, bc.hint, chosen.name, rest, bc.cycle, self._now())
        elif fwk.batch is not None:
            fwk.batch.count_unsigned(chosen_among=len(result.nodes))
        return chosen

    # ------------------------------------------------------------------ the cycle
    def schedule_one(self, pod: Pod) -> Attempt:
        """One scheduling cycle followed at once, on success, by the binding cycle (unless a
        Permit plugin made the pod wait: then ``attempt.outcome == "Waiting"``)."""
        attempt = self.scheduling_cycle(pod)
        if attempt.outcome == "Assumed":
            self.binding_cycle(attempt)
        return attempt

    def scheduling_cycle(self, pod: Pod) -> Attempt:
        """schedulingCycle: schedulePod, then PostFilter on failure, or assume + Reserve +
        Permit on success. Outcomes: Unschedulable / Error (failed), Assumed (ready for the
        binding cycle) or Waiting (held at Permit)."""
        attempt = self.start_attempt(pod)
        fwk, state = attempt.framework, attempt.state
        if fwk is None or state is None:
            return attempt
        self.victims = []
        try:
            chosen = self.schedule_pod(fwk, state, pod, attempt)
        except (ScheduleError, KubeschedError) as e:
            attempt.outcome = "Error"
            attempt.error = attempt.message = str(e)
            # schedulingCycle returns clearNominatedNode with any error but a FitError.
            self.set_nomination(pod, "")
            return attempt
        if chosen is None:
            self._handle_fit_error(fwk, state, pod, attempt)
            return attempt
        return self._assume_reserve_permit(fwk, state, pod, chosen.name, attempt)

    def _handle_fit_error(self, fwk: Framework, state: CycleState, pod: Pod, attempt: Attempt) -> None:
        d = attempt.diagnosis
        nominating: NominatingInfo | None = None
        if attempt.num_all_nodes == 0:
            attempt.message = NO_NODES_AVAILABLE
            nominating = NominatingInfo("", NOMINATING_OVERRIDE)
        else:
            if fwk.has_post_filter_plugins():
                result, status = fwk.run_post_filter_plugins(state, pod, dict(d.node_to_status))
                d.post_filter_msg = status.message
                attempt.post_filter_error = status.code == Code.ERROR
                nominating = result.nominating_info if result is not None else None
                # The chosen victims, even when their deletion runs after the cycle (async
                # preemption); otherwise those the deleter saw.
                chosen_victims = getattr(result, "victims", None)
                if chosen_victims and not self.victims:
                    self.victims = list(chosen_victims)
            attempt.message = truncate_message(
                fit_error_message(attempt.num_all_nodes, d.node_to_status, d.pre_filter_msg, d.post_filter_msg))
        attempt.victims = list(self.victims)
        if nominating is not None and nominating.mode == NOMINATING_OVERRIDE:
            node = nominating.nominated_node_name
            if node:
                attempt.nominated_node = node
            self.set_nomination(pod, node)

    def set_nomination(self, pod: Pod, node: str) -> Pod:
        """Record status.nominatedNodeName (empty clears) and the nominator entry."""
        if self._set_nominated is not None:
            pod = self._set_nominated(pod, node)
        else:
            pod = dataclasses.replace(pod, nominated_node_name=node)
        if node:
            self.nominator.add(PodInfo(pod), node)
        else:
            self.nominator.delete(pod)
        return pod

    def _assume_reserve_permit(self, fwk: Framework, state: CycleState, pod: Pod, host: str,
                               attempt: Attempt) -> Attempt:
        now = self.clock() if self.clock is not None else None
        # The pod's start time stands for the moment the kubelet starts it: bind time here.
        assumed = dataclasses.replace(pod, node_name=host, nominated_node_name="",
                                      start_time=now if now is not None else pod.start_time)
        self.cache.assume_pod(assumed)
        self.nominator.delete(pod)
        attempt.assumed = assumed
        attempt.host = host
        s = fwk.run_reserve_plugins_reserve(state, assumed, host)
        if s is not None and not s.is_success():
            return self._fail_after_assume(attempt, s)
        s, waits = fwk.run_permit_plugins(state, assumed, host)
        if s is not None and s.code == Code.WAIT:
            attempt.waiting = fwk.handle.waiting_pods.add(assumed, host, now or 0.0, waits)
            attempt.outcome = "Waiting"
            return attempt
        if s is not None and not s.is_success():
            return self._fail_after_assume(attempt, s)
        attempt.outcome = "Assumed"
        return attempt

    def binding_cycle(self, attempt: Attempt) -> Attempt:
        """bindingCycle: WaitOnPermit, PreBind (then :attr:`volume_binder`), Bind (first
        non-Skip plugin), PostBind. Any failure runs Unreserve (reverse order), forgets the
        assumed pod and reports.

        A pod held at Permit must have been decided (allowed or rejected) before its binding
        cycle runs: the simulators run it once ``attempt.waiting.done``."""
        fwk, state, assumed, host = attempt.framework, attempt.state, attempt.assumed, attempt.host
        assert fwk is not None and state is not None and assumed is not None
        if self.features.enabled("NominatedNodeNameForExpectation"):
            # 1.36: when PreBind has work or the pod waited at Permit, tell the world where the
            # pod is about to go (status.nominatedNodeName; the binding clears it again).
            flight = fwk.run_pre_bind_pre_flights(state, assumed, host)
            if flight is not None and (flight.code == Code.ERROR or flight.is_rejected()):
                return self._fail_after_assume(attempt, flight, fit_error=False)
            if (flight is None or flight.is_success() or attempt.waiting is not None) \
                    and self.nominate_for_expectation is not None:
                self.nominate_for_expectation(assumed, host)
        if attempt.waiting is not None:
            # WaitOnPermit: the pod leaves the waiting map whatever the decision.
            wp = attempt.waiting
            fwk.handle.waiting_pods.remove(assumed.uid)
            attempt.waiting = None
            s = wp.result
            if s is None:
                s = Status(Code.ERROR, (f"waiting on permit for pod: pod {assumed.key} is still waiting on "
                                        f"plugin(s) {', '.join(wp.pending_plugins())}",))
            elif not s.is_success() and not s.is_rejected():
                s = Status(Code.ERROR, (f"waiting on permit for pod: {s.message}",), s.plugin, s.error)
            if not s.is_success():
                return self._fail_after_assume(attempt, s)
        s = fwk.run_pre_bind_plugins(state, assumed, host)
        if (s is None or s.is_success()) and self.volume_binder is not None:
            s = self.volume_binder(state, assumed, host)
        if s is None or s.is_success():
            s = self.bind_pod(fwk, state, assumed, host)
            if s is not None and s.code == Code.SKIP:
                # Every Bind plugin skipped: nothing bound the pod (a scheduler error upstream,
                # with an empty message there).
                s = Status(Code.ERROR, (f"running Bind plugins: every Bind plugin skipped pod {assumed.key}",))
        if s is not None and not s.is_success():
            # PreBind/Bind failures are plain statuses upstream, not a FitError: no rejector
            # plugins (so the pod backs off) and the status message as the event.
            return self._fail_after_assume(attempt, s, fit_error=False)
        self.cache.finish_binding(assumed)
        if self.on_bound is not None:
            self.on_bound(state, assumed, host)
        fwk.run_post_bind_plugins(state, assumed, host)
        attempt.outcome = "Scheduled"
        attempt.node = host
        return attempt

    def bind_pod(self, fwk: Framework, state: CycleState, assumed: Pod, host: str) -> Status | None:
        """Scheduler.bind: the first interested binder extender binds the pod (its error fails
        the binding cycle); without one, the Bind plugins do."""
        if self.extenders:
            from kubesched.extender import run_bind_extenders

            try:
                bound, err = run_bind_extenders(self.extenders, assumed, host)
                if bound and err is None and self._bind is not None:
                    self._bind(assumed, host)
            except ApiError as e:
                bound, err = True, e
            if bound:
                return Status.as_error(err) if err is not None else None
        return fwk.run_bind_plugins(state, assumed, host)

    def _fail_after_assume(self, attempt: Attempt, s: Status, *, fit_error: bool = True) -> Attempt:
        """Unreserve (reverse order), forget the assumed pod, report. A Reserve / Permit /
        WaitOnPermit rejection is a FitError over the selected node alone, with only the
        rejecting plugin counting for requeueing (not the filters of the cycle)."""
        fwk, state, assumed, host = attempt.framework, attempt.state, attempt.assumed, attempt.host
        assert fwk is not None and state is not None and assumed is not None
        fwk.run_reserve_plugins_unreserve(state, assumed, host)
        self.cache.forget_pod(assumed)
        attempt.outcome = "Unschedulable" if s.is_rejected() else "Error"
        if fit_error and s.is_rejected():
            attempt.diagnosis = Diagnosis(node_to_status={host: s})
            attempt.diagnosis.add_plugin_status(s)
            attempt.message = truncate_message(fit_error_message(1, {host: s}))
        else:
            attempt.diagnosis = Diagnosis()
            attempt.message = truncate_message(s.message)
            if not s.is_rejected():
                attempt.error = s.message
        return attempt
