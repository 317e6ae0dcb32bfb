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
import operator
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import numpy as np

from kubesched._cache import Cache
from kubesched._runtime.framework import Framework, ScoreResult
from kubesched._runtime.waiting_pods import WaitingPod
from kubesched.errors import ApiError, KubeschedError
from kubesched.extender import ExtenderScores, run_bind_extenders, run_filter_extenders, run_prioritize_extenders
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
from kubesched.objects import Pod
from kubesched.plugins.helpers.filterplan import FilterPlan, UsageCache, filter_plan
from kubesched.plugins.helpers.fiterror import fit_error_message

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


_NAME = operator.attrgetter("name")


def truncate_message(message: str) -> str:
    """truncateMessage: events carry at most 1024 characters."""
    if len(message) <= EVENT_MESSAGE_LIMIT:
        return message
    return message[: EVENT_MESSAGE_LIMIT - 4] + " ..."


@dataclass(slots=True)
class Diagnosis:
    """framework.Diagnosis."""

    node_to_status: dict[str, Status] = field(default_factory=dict)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def add_plugin_status(self, s: Status) -> None:
        if not s.plugin:
            return
        if s.code == Code.PENDING:
            self.pending_plugins.add(s.plugin)
        elif s.is_rejected():
            self.unschedulable_plugins.add(s.plugin)


@dataclass(slots=True)
class Attempt:
    """One scheduling attempt of one pod: its decision and the data behind it."""

    pod: Pod
    outcome: str = "Unschedulable"  # Scheduled | Unschedulable | Error | Assumed | Waiting (in flight)
    node: str | None = None
    feasible: list[str] = field(default_factory=list)
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
    # Carried from the scheduling cycle to the binding cycle.
    framework: Framework | None = field(default=None, repr=False)
    state: CycleState | None = field(default=None, repr=False)
    assumed: Pod | None = field(default=None, repr=False)
    host: str = ""
    waiting: WaitingPod | None = field(default=None, repr=False)
    # Scheduler.all_filters_for: every failing filter plugin per node (explain --all-filters).
    all_filters: dict[str, list[Status]] | None = field(default=None, repr=False)

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
    ) -> None:
        """``extenders``: the configured extenders (kubesched.extender.new_http_extenders),
        ignorable ones last. ``bind``: records in the cluster a binding an extender made (it
        posted the Binding itself; a simulated API server must still learn of it); it may
        raise ApiError (e.g. 409), which fails the binding like the extender's own error."""
        self.profiles = dict(profiles)
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
        # Called in the binding cycle after the PreBind plugins succeeded, before Bind: live
        # mode writes VolumeBinding's decisions to the API and waits for the PV controller
        # there (BindPodVolumes). A non-success Status fails the binding cycle as a PreBind
        # failure would; its message is reported as it is.
        self.volume_binder: Callable[[CycleState, Pod, str], Status | None] | None = None
        self.victims: list[Pod] = []  # filled by the deleter during a cycle
        # Pods whose attempts also record every failing filter plugin on every node
        # (Attempt.all_filters), for `explain --all-filters`; decisions do not change.
        self.all_filters_for: Callable[[Pod], bool] | None = None
        self._rows_cache: tuple[Sequence[NodeInfo], IntArray] | None = None
        # Nominated pods' usage vectors for the filter plan's resources (nominations persist
        # across cycles).
        self._usage_cache = UsageCache()
        self.extenders: tuple[Extender, ...] = tuple(extenders)
        self._has_filter_extenders = any(e.is_filter() for e in self.extenders)
        self._has_prioritizer_extenders = any(e.is_prioritizer() for e in self.extenders)

    # ------------------------------------------------------------------ helpers
    def framework_for(self, pod: Pod) -> Framework | None:
        return self.profiles.get(pod.scheduler_name)

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
                                     nodes: Sequence[NodeInfo]) -> list[NodeInfo]:
        """findNodesThatPassFilters as run by one worker: nodes in order from
        nextStartNodeIndex until a node passes that would be the (k+1)-th feasible one (it is
        dropped; nodes that failed after the k-th feasible node keep their status). Batch filters decide pass/fail over all candidates at
        once; the per-node filters then give the exact status of each rejected node."""
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
        order = [*nodes[start:], *nodes[:start]] if start else nodes
        feasible: list[NodeInfo] = []
        statuses = diagnosis.node_to_status
        # Nodes where RunFilterPluginsWithNominatedPods differs from plain filtering: those
        # with a nominated pod of >= priority other than this one. Only they need the
        # per-node path; every other node keeps the batch filters.
        special = self._relevant_nominations(pod) if self.nominator else {}
        if not per_node:
            table = self.cache.table
            rows = self._rows(nodes, start)
            # Per batch plugin: (codes, statuses) from filter_batch_status, when it has one.
            coded: list[tuple[IntArray, Sequence[Status | None]] | None] = []
            if not batch:
                ok = np.ones(n, np.bool_)
                masks = np.ones((0, n), np.bool_)
            else:
                masks = np.empty((len(batch), n), np.bool_)
                for j, (_, fb, fsb) in enumerate(batch):
                    if fsb is not None:
                        codes, table_statuses = fsb(state, pod, table, rows)
                        masks[j] = codes == 0
                        coded.append((codes, table_statuses))
                    else:
                        masks[j] = fb(state, pod, table, rows)
                        coded.append(None)
                ok = np.logical_and.reduce(masks, axis=0)
            special_status: dict[int, Status] = {}
            plan = filter_plan(fwk.filter, fwk.pre_filter, state, pod) if special else None
            if plan is not None and [step.plugin for step in plan.steps] != [b[0] for b in batch]:
                plan = None
            if special and plan is not None:
                # Every active filter is node-only or resource arithmetic: the nominated pods
                # change only the resource steps (no clones, no AddPod).
                special_status = self._nominated_statuses(plan, state, pod, order, rows, masks, special)
                if special_status:
                    ok = ok.copy()
                    ok[list(special_status)] = False
            elif special:
                ok = ok.copy()
                for pos, ni in enumerate(order):
                    if ni.name not in special:
                        continue
                    st = fwk.run_filter_plugins_with_nominated_pods(state, pod, ni)
                    if st is not None and st.code == Code.ERROR:
                        raise ScheduleError(st.message)
                    ok[pos] = st is None or st.code == Code.SUCCESS
                    if not ok[pos]:
                        assert st is not None
                        special_status[pos] = st
            # One worker's loop: the node that would be the (k+1)-th feasible one cancels the
            # search and is dropped; the nodes that failed before it keep their status.
            passing = np.flatnonzero(ok)
            cutoff = n if passing.size <= k else int(passing[k])
            feasible = [order[pos] for pos in passing[:k].tolist()]
            failing = np.flatnonzero(~ok[:cutoff])
            if special_status:
                rest: list[int] = []
                added: set[int] = set()
                for pos in failing.tolist():
                    st = special_status.get(pos)
                    if st is None:
                        rest.append(pos)
                        continue
                    statuses[order[pos].name] = st
                    if id(st) not in added:  # statuses are shared between nodes; adding is idempotent
                        added.add(id(st))
                        diagnosis.add_plugin_status(st)
                failing = np.asarray(rest, np.int64)
            if failing.size:
                self._rejected_statuses(fwk, state, pod, diagnosis, order, rows, batch, coded, masks, failing)
            return feasible
        # General path: nominated pods or per-node-only (user) filter plugins.
        for ni in order:
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

    def _relevant_nominations(self, pod: Pod) -> dict[str, list[PodInfo]]:
        """addNominatedPods' condition: per node, the nominated pods with priority >= pod's,
        other than the pod (nodes without any are left out)."""
        out: dict[str, list[PodInfo]] = {}
        nominator = self.nominator
        priority, uid = pod.priority, pod.uid
        for node in nominator.nominated_node_names():
            pods = nominator.nominated_pods_for_node(node)
            if len(pods) == 1:  # the usual case, without a list comprehension
                p = pods[0].pod
                if p.priority >= priority and p.uid != uid:
                    out[node] = pods
                continue
            relevant = [pi for pi in pods if pi.pod.priority >= priority and pi.pod.uid != uid]
            if relevant:
                out[node] = relevant
        return out

    def _nominated_statuses(self, plan: FilterPlan, state: CycleState, pod: Pod, order: Sequence[NodeInfo],
                            rows: IntArray, masks: BoolArray, nominated: Mapping[str, list[PodInfo]]
                            ) -> dict[int, Status]:
        """RunFilterPluginsWithNominatedPods on the nodes (positions in ``order``) holding
        relevant nominated pods, for a pod whose filters have a plan: the chain runs with the
        nominated pods added, then, if that passed, without them — the batch result. So a
        node's status is its chain's first failure with the nominated pods' usage taken from
        the resource steps' free vector (node-only steps keep their batch verdict), when
        there is one; the nodes that pass that way keep their batch verdict and status.
        Returns the nodes failing with the nominated pods, with that status."""
        table = self.cache.table
        # Position in ``order`` of each nominated node (-1: not among the nodes filtered).
        position_of_row = np.full(table.size, -1, np.int64)
        position_of_row[rows] = np.arange(len(rows), dtype=np.int64)
        infos = self.cache.node_infos
        usage = self._usage_cache.for_plan(plan)
        total = self._usage_cache.total
        at_rows: list[int] = []
        vectors: list[tuple[int, ...]] = []
        for name, pis in nominated.items():
            ni = infos.get(name)
            if ni is None or not 0 <= ni.index < table.size:
                continue
            at_rows.append(ni.index)
            vectors.append(usage(pis[0].pod) if len(pis) == 1 else total(plan, [pi.pod for pi in pis]))
        width = len(plan.need)
        pos_all = position_of_row[np.asarray(at_rows, np.int64)]
        keep = np.flatnonzero(pos_all >= 0)
        pos_arr = pos_all[keep]
        positions: list[int] = pos_arr.tolist()
        extra = np.array(vectors, np.int64).reshape(len(vectors), width)[keep].T
        free = plan.table_free(self.cache.table, rows[pos_arr]) - extra
        short = np.asarray(plan.need, np.int64)[:, None] > free
        # Per step (row) and node (column): does the step fail with the nominated pods?
        fails = np.empty((len(plan.steps), len(positions)), np.bool_)
        for k, step in enumerate(plan.steps):
            if step.fit is None:
                fails[k] = ~masks[k][pos_arr]
            else:
                fails[k] = short[step.start:step.stop].any(axis=0)
        failing = np.flatnonzero(fails.any(axis=0))
        if not failing.size:
            return {}
        first = np.argmax(fails[:, failing], axis=0).tolist()
        # One code per distinct set of insufficient resources: the status of a resource step
        # is built once per (step, code).
        codes = ((short[:, failing].astype(np.int64) << np.arange(width, dtype=np.int64)[:, None]).sum(axis=0).tolist()
                 if width < 63 else None)
        by_code: dict[tuple[int, int], Status] = {}
        out: dict[int, Status] = {}
        for i, (j, k) in enumerate(zip(failing.tolist(), first, strict=True)):
            pos = positions[j]
            if plan.steps[k].fit is None:
                st = plan.node_only_status(k, state, pod, order[pos])
                if st is None:
                    raise ScheduleError(f"batch and per-node filter {plan.steps[k].plugin.name} disagree for pod "
                                        f"{pod.key} on node {order[pos].name}")
                if st.code == Code.ERROR:
                    raise ScheduleError(st.message)
            elif codes is not None:
                got = by_code.get((k, codes[i]))
                if got is None:
                    got = plan.resource_status(k, free[:, j].tolist())
                    assert got is not None
                    by_code[(k, codes[i])] = got
                st = got
            else:
                got = plan.resource_status(k, free[:, j].tolist())
                assert got is not None
                st = got
            out[pos] = st
        return out

    def _rows(self, nodes: Sequence[NodeInfo], start: int) -> IntArray:
        """The table rows of ``nodes`` rotated to start at ``start``. The rows of the
        snapshot's node list are kept until that list is replaced (a node added, updated
        or removed)."""
        cached = self._rows_cache
        if cached is not None and cached[0] is nodes:
            base = cached[1]
        else:
            base = np.fromiter(map(_INDEX, nodes), np.int64, len(nodes))
            if nodes is self.cache.snapshot.list():
                self._rows_cache = (nodes, base)
        return np.concatenate((base[start:], base[:start])) if start else base

    def _rejected_statuses(self, fwk: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis,
                           order: Sequence[NodeInfo], rows: IntArray, batch: list[tuple[Any, Any, Any]],
                           coded: list[tuple[IntArray, Sequence[Status | None]] | None], masks: BoolArray,
                           failing: IntArray) -> None:
        """The status of every node (position in ``order``) the batch filters rejected: the
        first plugin whose batch rejected the node is the one RunFilterPlugins stops at
        (batch == per-node). Its filter_batch_status codes give the status directly;
        otherwise its per-node filter builds it."""
        first = np.argmin(masks[:, failing], axis=0)
        out = np.empty(failing.size, object)
        for j in np.unique(first).tolist():
            plugin = batch[j][0]
            sel = np.flatnonzero(first == j)
            entry = coded[j] if j < len(coded) else None
            if entry is not None:
                codes = entry[0][failing[sel]]
                wrapped = np.empty(len(entry[1]), object)
                for c in np.unique(codes).tolist():
                    s = fwk.wrap_filter_status(plugin, entry[1][c])
                    if s is None or s.code == Code.SUCCESS:
                        raise ScheduleError(f"batch and per-node filter {plugin.name} disagree for pod {pod.key}")
                    if s.code == Code.ERROR:
                        raise ScheduleError(s.message)
                    wrapped[c] = s
                    diagnosis.add_plugin_status(s)
                out[sel] = wrapped[codes]
                continue
            for i in sel.tolist():
                ni = order[int(failing[i])]
                s = fwk.run_filter_plugin(plugin, state, pod, ni)
                if s is None or s.code == Code.SUCCESS:
                    raise ScheduleError(f"batch and per-node filter {plugin.name} disagree for pod {pod.key} "
                                        f"on node {ni.name}")
                if s.code == Code.ERROR:
                    raise ScheduleError(s.message)
                out[i] = s
                diagnosis.add_plugin_status(s)
        names = self.cache.table.names
        diagnosis.node_to_status.update(zip([names[r] for r in rows[failing].tolist()], out.tolist(), strict=True))

    def find_nodes_that_fit_pod(self, fwk: Framework, state: CycleState, pod: Pod, attempt: Attempt) -> list[NodeInfo]:
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
            names = pre_res.node_names
            nodes = [ni for ni in all_nodes if ni.name in names]
        feasible = self.find_nodes_that_pass_filters(fwk, state, pod, diagnosis, nodes)
        processed = len(feasible) + len(diagnosis.node_to_status)
        # Modulo all nodes, not the PreFilterResult's: that list may even be empty.
        if all_nodes:
            self.next_start_node_index = (self.next_start_node_index + processed) % len(all_nodes)
        after = self.find_nodes_that_pass_extenders(pod, feasible, attempt)
        if len(after) != len(feasible):
            # Extenders have no queueing hints: any cluster event may requeue the pod.
            diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
        return after

    def find_nodes_that_pass_extenders(self, pod: Pod, feasible: list[NodeInfo], attempt: Attempt) -> list[NodeInfo]:
        """findNodesThatPassExtenders: the filter extenders in turn over the feasible nodes;
        their FailedNodes / FailedAndUnresolvableNodes become Unschedulable /
        UnschedulableAndUnresolvable statuses (no plugin name) in the diagnosis. A
        non-ignorable extender's failure raises ApiError."""
        if not self._has_filter_extenders or not feasible:
            return feasible
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
        if self.deterministic:
            nodes = result.nodes
            return min((nodes[i] for i in ties.tolist()), key=_NAME)
        return result.nodes[int(ties[self.rng.randrange(len(ties))])]

    def schedule_pod(self, fwk: Framework, state: CycleState, pod: Pod, attempt: Attempt) -> NodeInfo | None:
        """schedulePod: the chosen node, or None with attempt.diagnosis filled (FitError)."""
        attempt.num_all_nodes = len(self.cache.node_infos)
        if attempt.num_all_nodes == 0:
            return None
        feasible = self.find_nodes_that_fit_pod(fwk, state, pod, attempt)
        attempt.feasible = sorted(map(_NAME, feasible))
        if self.all_filters_for is not None and not attempt.diagnosis.pre_filter_msg and self.all_filters_for(pod):
            # After filtering, before scoring: the state is PreFilter's, as the filters saw it.
            attempt.all_filters = {ni.name: fwk.run_all_filter_plugins(state, pod, ni)
                                   for ni in self.cache.snapshot.list()}
        if not feasible:
            return None
        if len(feasible) == 1:
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
                # Each extender score adds score x weight x 10 to its node (errors ignored).
                ext = run_prioritize_extenders(self.extenders, pod, feasible)
                if ext.by_node:
                    result.totals += ext.totals([ni.name for ni in feasible])
                attempt.extender_scores = ext
        attempt.scores = result
        return self.select_host(result)

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
        attempt = Attempt(pod)
        fwk = self.framework_for(pod)
        if fwk is None:
            attempt.outcome = "Error"
            attempt.error = attempt.message = f"profile not found for scheduler name {pod.scheduler_name!r}"
            return attempt
        state = CycleState()
        state.write(PODS_TO_ACTIVATE_KEY, PodsToActivate())
        attempt.framework = fwk
        attempt.state = state
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
                nominating = result.nominating_info if result is not None else None
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
