"""DefaultPreemption: when no node fits, find the node where evicting the fewest and least
important lower-priority pods lets the pod fit, evict them, and nominate the pod there
(PostFilter).

Mirrors framework/plugins/defaultpreemption/default_preemption.go (PostFilter,
calculateNumCandidates, GetOffsetAndNumCandidates, SelectVictimsOnNode,
PodEligibleToPreemptOthers, podTerminatingByPreemption, filterPodsWithPDBViolation),
framework/preemption/preemption.go (Preempt, findCandidates, nodesWherePreemptionMightHelp,
DryRunPreemption, callExtenders (the extenders come from ``handle.extenders``), SelectCandidate, pickOneNodeForPreemption, prepareCandidate,
getLowerPriorityNominatedPods) and scheduler/util/utils.go (MoreImportantPod, GetPodStartTime,
GetEarliestPodStartTime), as of v1.30.

Where upstream runs in parallel or iterates a Go map, this runs serially in a fixed order:

* The dry run checks potential nodes in order ``(offset + i) % n`` and stops where upstream's
  cancel() would (enough candidates, at least one without PDB violations). With
  ``handle.deterministic`` the offset is 0 (the conformance procedure).
* pickOneNodeForPreemption's last tie goes to the first remaining candidate: in dry-run order,
  or, with ``handle.deterministic``, the lexicographically smallest node name.

SelectVictimsOnNode runs upstream's way — on a copy of the node and of the cycle state,
through PreFilter RemovePod/AddPod and the whole Filter chain (with nominated pods) per
reprieve — unless the pod's active Filter chain has a plan
(``kubesched.plugins.helpers.filterplan``: every active filter node-only or resource
arithmetic, by the plugins' own declarations). Then it is arithmetic on the node itself, with
the same victims, PDB violations and statuses (DefaultPreemption._victims_fast; proven equal on
random clusters by tests/plugins/defaultpreemption/test_fast_path.py).

The chosen victims are exposed as ``PreemptionResult.victims`` (the PostFilterResult returned
on success) and as ``plugin.last_victims`` / ``plugin.last_candidate`` (reset on every call).
"""

from __future__ import annotations

import math
import operator
import threading
import time
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.config.args import DefaultPreemptionArgs
from kubesched.errors import ConfigError, KubeschedError
from kubesched.features import DEFAULT_FEATURES
from kubesched.framework import (
    GVK,
    NOMINATING_OVERRIDE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    ExtenderVictims,
    Handle,
    NodeInfo,
    NominatingInfo,
    PodInfo,
    PostFilterResult,
    QueueingHint,
    Status,
)
from kubesched.framework.interfaces import IntArray
from kubesched.objects import Pod, PodDisruptionBudget
from kubesched.plugins.helpers.filterplan import FilterPlan, UsageCache, filter_plan
from kubesched.plugins.helpers.fiterror import fit_error_message

NAME = "DefaultPreemption"

REASON_NOT_HELPFUL = "Preemption is not helpful for scheduling"
REASON_NO_VICTIMS = "No preemption victims found for incoming pod"
MSG_PREEMPT_NEVER = "not eligible due to preemptionPolicy=Never."
MSG_TERMINATING_ON_NOMINATED = "not eligible due to a terminating pod on the nominated node."
MSG_NO_CANDIDATE = "no candidate node for preemption"
WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"
PREEMPT_NEVER = "Never"
# v1.DisruptionTarget / v1.PodReasonPreemptionByScheduler.
DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
_MAX_INT32 = 2**31 - 1
_NO_VICTIMS = Status.unresolvable(REASON_NO_VICTIMS)


# ----------------------------------------------------------------------------- values
@dataclass(frozen=True, slots=True)
class Victims:
    """extenderv1.Victims: the pods to evict on one node, most important first, and how many
    of them violate a PodDisruptionBudget."""

    pods: tuple[Pod, ...]
    num_pdb_violations: int = 0


@dataclass(frozen=True, slots=True)
class Candidate:
    """preemption.Candidate: a node the preemptor fits on once ``victims`` are gone."""

    name: str
    victims: Victims


@dataclass(frozen=True, slots=True)
class PreemptionResult(PostFilterResult):
    """The PostFilterResult of a successful preemption, carrying the evicted pods so the
    scheduler can report them (upstream only logs them)."""

    victims: tuple[Pod, ...] = ()


# ----------------------------------------------------------------------------- utils.go
def pod_start_time(pod: Pod, now: float) -> float:
    """util.GetPodStartTime: status.startTime, or "now" for pods that have not started."""
    return pod.start_time if pod.start_time is not None else now


def importance_key(pod: Pod, now: float) -> tuple[int, float]:
    """A sort key ordering pods as util.MoreImportantPod does: higher priority first, then the
    earlier start time. Python's sort is stable; Go's sort.Slice is too for the <= 12 pods
    it insertion-sorts, and only differs on exact ties beyond that."""
    return (-pod.priority, pod_start_time(pod, now))


def more_important_pod(pod1: Pod, pod2: Pod, now: float) -> bool:
    """util.MoreImportantPod."""
    if pod1.priority != pod2.priority:
        return pod1.priority > pod2.priority
    return pod_start_time(pod1, now) < pod_start_time(pod2, now)


def earliest_pod_start_time(victims: Victims, now: float) -> float | None:
    """util.GetEarliestPodStartTime: the earliest start time among the highest-priority
    victims (None for no victims)."""
    pods = victims.pods
    if not pods:
        return None
    earliest = pod_start_time(pods[0], now)
    max_priority = pods[0].priority
    for p in pods:
        priority = p.priority
        if priority == max_priority:
            st = p.start_time if p.start_time is not None else now  # pod_start_time, inlined
            if st < earliest:
                earliest = st
        elif priority > max_priority:
            max_priority = priority
            earliest = pod_start_time(p, now)
    return earliest


# ----------------------------------------------------------------------------- helpers
def pod_terminating_by_preemption(pod: Pod) -> bool:
    """podTerminatingByPreemption (PodDisruptionConditions on, the v1.30 default): deleting,
    and its first DisruptionTarget condition is True with reason PreemptionByScheduler."""
    if pod.meta.deletion_timestamp is None:
        return False
    for c in pod.conditions:
        if c.type == DISRUPTION_TARGET:
            return c.status == "True" and c.reason == REASON_PREEMPTION_BY_SCHEDULER
    return False


def filter_pods_with_pdb_violation(pod_infos: Sequence[PodInfo], pdbs: Sequence[PodDisruptionBudget]
                                   ) -> tuple[list[PodInfo], list[PodInfo]]:
    """filterPodsWithPDBViolation: split (order kept) into PDB-violating and non-violating pods.

    Each PDB's status.disruptionsAllowed is counted down by every matching pod in turn; a pod
    that takes any budget below zero violates it. A pod without labels matches nothing; a PDB
    with a nil or empty selector matches nothing; pods in status.disruptedPods (already being
    evicted) do not count.
    """
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pi in pod_infos:
        pod = pi.pod
        violated = False
        if pod.labels:
            for i, pdb in enumerate(pdbs):
                if pdb.namespace != pod.namespace:
                    continue
                sel = pdb.selector
                if sel is None or sel.is_empty() or not sel.matches(pod.labels):
                    continue
                if pod.name in pdb.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pi)
    return violating, non_violating


def nodes_where_preemption_might_help(nodes: Sequence[NodeInfo], statuses: Mapping[str, Status],
                                      names: Sequence[str] | None = None
                                      ) -> tuple[list[NodeInfo], dict[str, Status]]:
    """nodesWherePreemptionMightHelp: only nodes whose filter status is exactly Unschedulable
    are worth a dry run; every other node (UnschedulableAndUnresolvable, or no status at all)
    gets "Preemption is not helpful for scheduling". ``names``: the nodes' names, if known."""
    potential, _, _, not_helpful = _might_help(nodes, [ni.name for ni in nodes] if names is None else names,
                                               statuses)
    return potential, not_helpful


def _might_help(nodes: Sequence[NodeInfo], names: Sequence[str], statuses: Mapping[str, Status]
                ) -> tuple[list[NodeInfo], list[str], list[int], dict[str, Status]]:
    """nodes_where_preemption_might_help, with the potential nodes' names and positions."""
    get = statuses.get
    unschedulable = Code.UNSCHEDULABLE
    helps = [s is not None and s.code == unschedulable for s in map(get, names)]
    if all(helps):  # every node failed a resolvable filter (a preemption wave): no picking
        return list(nodes), list(names), list(range(len(names))), {}
    positions = [i for i, h in enumerate(helps) if h]
    unresolvable = Status.unresolvable(REASON_NOT_HELPFUL)
    not_helpful = {name: unresolvable for name, h in zip(names, helps, strict=True) if not h}
    return [nodes[i] for i in positions], [names[i] for i in positions], positions, not_helpful


def pick_one_node_for_preemption(nodes_to_victims: Mapping[str, Victims], order: Sequence[str], now: float,
                                 ranks: dict[int, tuple[Victims, VictimsRank]] | None = None) -> str:
    """pickOneNodeForPreemption with the default score functions, in precedence order; each
    keeps the nodes with the highest score, stopping as soon as one node remains:

    1. fewest PDB violations; 2. lowest priority of the most important victim; 3. smallest
    sum of (priority + 2^31) over the victims; 4. fewest victims; 5. latest earliest start
    time among the highest-priority victims. A remaining tie goes to the first of ``order``.

    Keeping the best of each score in turn is taking the lexicographic maximum of the five
    (the first one of ``order`` among equals); the first four and the start times of the
    fifth depend on the victims alone, so they are computed once per Victims (``ranks``: a
    cache by id, holding the Victims alive) and only "now" is applied per call."""
    if not nodes_to_victims:
        return ""
    best_name = ""
    best: tuple[int, int, int, int, float] | None = None
    for name in order:
        v = nodes_to_victims.get(name)
        if v is None:
            continue
        if ranks is None:
            rank = victims_rank(v)
        else:
            got = ranks.get(id(v))
            if got is None or got[0] is not v:
                if len(ranks) >= _RANKS_LIMIT:
                    ranks.clear()
                got = ranks[id(v)] = (v, victims_rank(v))
            rank = got[1]
        head, earliest, started_only = rank
        key = (*head, earliest if started_only else min(earliest, now))
        if best is None or key > best:
            best, best_name = key, name
    return best_name


# (the first four scores, the earliest start time among the highest-priority victims that
# started (inf: none), whether every one of them started)
VictimsRank = tuple[tuple[int, int, int, int], float, bool]
_RANKS_LIMIT = 4096


def victims_rank(v: Victims) -> VictimsRank:
    """The scores of pickOneNodeForPreemption that depend on the victims alone; the fifth,
    util.GetEarliestPodStartTime, is min(earliest, now) when some highest-priority victim has
    not started (its start time is "now"), -inf without victims."""
    pods = v.pods
    if not pods:  # (never a candidate: the dry run and the extenders drop nodes without victims)
        return (-v.num_pdb_violations, 0, 0, 0), -math.inf, True
    # MaxInt32+1 makes every term >= 0, so fewer pods of negative priority never win by having
    # a "smaller" negative sum.
    total = sum([p.priority for p in pods]) + (_MAX_INT32 + 1) * len(pods)
    top = max(p.priority for p in pods)
    starts = [p.start_time for p in pods if p.priority == top]
    started = [t for t in starts if t is not None]
    return ((-v.num_pdb_violations, -pods[0].priority, -total, -len(pods)), min(started, default=math.inf),
            len(started) == len(starts))


def _aggregate_error(errors: Sequence[Status]) -> str:
    """utilerrors.NewAggregate(errs).Error(): one message as is, several de-duplicated and
    bracketed."""
    msgs: list[str] = []
    for s in errors:
        if s.message not in msgs:
            msgs.append(s.message)
    if len(errors) == 1 or len(msgs) == 1:
        return msgs[0]
    return "[" + ", ".join(msgs) + "]"


def _validate(args: DefaultPreemptionArgs) -> None:
    """validation.ValidateDefaultPreemptionArgs."""
    pct, absolute = args.min_candidate_nodes_percentage, args.min_candidate_nodes_absolute
    if pct < 0 or pct > 100:
        raise ConfigError(f"Invalid value: {pct}: not in valid range [0, 100]", field="minCandidateNodesPercentage")
    if absolute < 0:
        raise ConfigError(f"Invalid value: {absolute}: not in valid range [0, inf)", field="minCandidateNodesAbsolute")
    if pct == 0 and absolute == 0:
        raise ConfigError("Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
                          field="minCandidateNodesPercentage")


# ----------------------------------------------------------------------------- plugin
class DefaultPreemption:
    name = NAME

    def __init__(self, args: DefaultPreemptionArgs | None, handle: Handle) -> None:
        args = args or DefaultPreemptionArgs()
        _validate(args)
        self.args = args
        self.handle = handle
        # The outcome of the last post_filter call, for the scheduler's trace.
        self.last_candidate: Candidate | None = None
        self.last_victims: tuple[Pod, ...] = ()
        # False: every dry run takes the per-node path (tests compare both paths).
        self.fast_path = True
        # Per node name: its pods as the fast path needs them, for one NodeInfo generation.
        self._node_pods: dict[str, _NodePods] = {}
        self._plan_ids: dict[object, int] = {}
        self._pdbs_seen: tuple[PodDisruptionBudget, ...] = ()
        self._pdbs_version = 0
        self._names_of: tuple[Sequence[NodeInfo], list[str], IntArray | None] | None = None
        self._usage_cache = UsageCache()
        # False: the dry run looks every node up one by one (tests compare both walks).
        self.cross_cache = True
        # Per (table, plan, preemptor priority, PDBs): every row's outcome (_RowOutcomes).
        self._row_outcomes: dict[tuple[int, int, int, int], _RowOutcomes] = {}
        self._nominated: dict[tuple[int, int], _NominatedTotals] = {}
        self._ranks: dict[int, tuple[Victims, VictimsRank]] = {}
        # SchedulerAsyncPreemption (1.36): victims are deleted after the scheduling cycle
        # (Executor.prepareCandidateAsync); meanwhile PreEnqueue holds the preemptor.
        features = handle.features if handle is not None else DEFAULT_FEATURES
        self._async = features.enabled("SchedulerAsyncPreemption")
        self._skip_terminating = features.enabled("SkipTerminatingVictims")
        self._lock = threading.Lock()
        self.preempting: set[str] = set()  # preemptor uids (Executor.preempting)
        self._last_victims: dict[str, tuple[str, str]] = {}  # lastVictimsPendingPreemption
        if self._async:
            self.pre_enqueue = self._pre_enqueue

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """DefaultPreemption.EventsToRegister: with SchedulerAsyncPreemption, Pod/Delete with
        a hint that always Skips (the pods its PreEnqueue holds back while their preemption
        runs are requeued by the plugins that rejected them). Without async preemption
        (v1.30) PreEnqueue never rejects, so no event concerns it; kubesched also registers
        nothing without queueing hints (v1.30's list)."""
        features = self.handle.features if self.handle is not None else DEFAULT_FEATURES
        if not features.enabled("SchedulerQueueingHints") or not self._async:
            return []
        return [ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.DELETE),
                                     self.is_pod_schedulable_after_pod_deletion)]

    def is_pod_schedulable_after_pod_deletion(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isPodSchedulableAfterPodDeletion: always Skip."""
        return QueueingHint.QUEUE_SKIP

    # ---- PreEnqueue (async preemption)
    def _pre_enqueue(self, pod: Pod) -> Status | None:
        """PreEnqueue: hold a pod whose preemption is still running."""
        if self.is_pod_running_preemption(pod.uid):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (WAITING_FOR_PREEMPTION,))
        return None

    def is_pod_running_preemption(self, uid: str) -> bool:
        """Executor.isRunningPreemption: running until its last victim is being deleted."""
        with self._lock:
            if uid not in self.preempting:
                return False
            last = self._last_victims.get(uid)
        if last is None:
            return True
        victim = self.handle.objects.pod(*last)
        return victim is not None and not victim.is_terminating

    # ---- PostFilter
    def post_filter(self, state: CycleState, pod: Pod, statuses: dict[str, Status]
                    ) -> tuple[PostFilterResult | None, Status]:
        """DefaultPreemption.PostFilter: Preempt, with "preemption: " before any message."""
        self.last_candidate = None
        self.last_victims = ()
        result, status = self.preempt(state, pod, statuses)
        if status.message:
            status = Status(status.code, ("preemption: " + status.message,), status.plugin, status.error)
        return result, status

    def preempt(self, state: CycleState, pod: Pod, statuses: Mapping[str, Status]
                ) -> tuple[PostFilterResult | None, Status]:
        """Evaluator.Preempt.

        * (None, Unschedulable/Error): not eligible or a transient failure — the nomination is
          kept (Noop);
        * (Override "", Unschedulable): preemption cannot help — the nomination is cleared;
        * (PreemptionResult(Override node), Success): victims evicted, pod nominated.
        """
        now = time.time()
        # 0) The latest version of the pod (its nominatedNodeName may have changed).
        latest = self.handle.objects.pod(pod.namespace, pod.name)
        if latest is not None:
            pod = latest

        # 1) Is the pod eligible to preempt?
        ok, msg = self.pod_eligible_to_preempt_others(pod, statuses.get(pod.nominated_node_name))
        if not ok:
            return None, Status.unschedulable(msg)

        # 2) Candidates from a dry run on every node where preemption might help.
        all_nodes = self.handle.snapshot.list()
        if not all_nodes:
            return None, Status.as_error("no nodes available")
        candidates, node_statuses, errors = self.find_candidates(state, pod, all_nodes, statuses, now)
        if errors and not candidates:
            return None, Status(Code.ERROR, (_aggregate_error(errors),), error=errors[0].error)
        if not candidates:
            msg = fit_error_message(len(node_statuses), node_statuses)
            return PostFilterResult(NominatingInfo("", NOMINATING_OVERRIDE)), Status.unschedulable(msg)

        # 3) Extenders supporting preemption may narrow (or change) the candidates.
        candidates, ext_status = self.call_extenders(pod, candidates)
        if ext_status is not None:
            return None, ext_status

        # 4) The best candidate.
        best = self.select_candidate(candidates, now)
        if best is None or not best.name:
            return None, Status.unschedulable(MSG_NO_CANDIDATE)

        # 5) Evict its victims and clear lower-priority nominations on that node.
        status = self.prepare_candidate(best, pod)
        if status is not None and not status.is_success():
            return None, status
        self.last_candidate = best
        self.last_victims = best.victims.pods
        return PreemptionResult(NominatingInfo(best.name, NOMINATING_OVERRIDE), best.victims.pods), Status()

    # ---- eligibility
    def pod_eligible_to_preempt_others(self, pod: Pod, nominated_node_status: Status | None) -> tuple[bool, str]:
        """PodEligibleToPreemptOthers: not with preemptionPolicy Never, and not while a
        lower-priority pod on its nominated node is still terminating because of an earlier
        preemption (unless the filters found that node UnschedulableAndUnresolvable)."""
        if pod.preemption_policy == PREEMPT_NEVER:
            return False, MSG_PREEMPT_NEVER
        nominated = pod.nominated_node_name
        if nominated:
            if nominated_node_status is not None and nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            ni = self.handle.snapshot.get(nominated)
            if ni is not None:
                for pi in ni.pods:
                    if pi.pod.priority < pod.priority and pod_terminating_by_preemption(pi.pod):
                        return False, MSG_TERMINATING_ON_NOMINATED
        return True, ""

    # ---- candidates
    def calculate_num_candidates(self, num_nodes: int) -> int:
        """calculateNumCandidates: max(n * percentage / 100, absolute), at most n."""
        n = num_nodes * self.args.min_candidate_nodes_percentage // 100
        n = max(n, self.args.min_candidate_nodes_absolute)
        return min(n, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """GetOffsetAndNumCandidates: a random offset in [0, n) (0 when deterministic) and
        the number of candidates to shortlist. With the default args (at least 100
        candidates) every potential node of a cluster under 100 nodes is examined."""
        num = self.calculate_num_candidates(num_nodes)
        if self.handle.deterministic:
            return 0, num
        return (self.handle.rng.randrange(num_nodes) if num_nodes > 0 else 0), num

    def find_candidates(self, state: CycleState, pod: Pod, all_nodes: Sequence[NodeInfo],
                        statuses: Mapping[str, Status], now: float
                        ) -> tuple[list[Candidate], dict[str, Status], list[Status]]:
        """findCandidates: (candidates, per-node statuses incl. the not-helpful ones, errors)."""
        names, rows = self._names_and_rows(all_nodes)
        potential, potential_names, positions, not_helpful = _might_help(all_nodes, names, statuses)
        if not potential:
            # Preemption cannot help anywhere: drop any stale nomination of the pod.
            self.handle.clear_nominated_node_name(pod)
            return [], not_helpful, []
        pdbs = list(self.handle.objects.pdbs())
        offset, num_candidates = self.get_offset_and_num_candidates(len(potential))
        candidates, node_statuses, errors = self.dry_run_preemption(
            state, pod, potential, pdbs, offset, num_candidates, now, potential_names,
            rows[np.asarray(positions, np.int64)] if rows is not None else None)
        node_statuses.update(not_helpful)
        return candidates, node_statuses, errors

    def _names_and_rows(self, nodes: Sequence[NodeInfo]) -> tuple[list[str], IntArray | None]:
        """The nodes' names and NodeTable rows (None unless every node is a row of the
        snapshot's table), kept for the snapshot's node list: a new list whenever a node is
        added, updated or removed."""
        cached = self._names_of
        if cached is None or cached[0] is not nodes or len(cached[1]) != len(nodes):
            table = self.handle.snapshot.table
            rows = (np.fromiter((ni.index for ni in nodes), np.int64, len(nodes))
                    if all(ni.table is table for ni in nodes) else None)
            cached = self._names_of = (nodes, [ni.name for ni in nodes], rows)
        return cached[1], cached[2]

    def dry_run_preemption(self, state: CycleState, pod: Pod, potential_nodes: Sequence[NodeInfo],
                           pdbs: Sequence[PodDisruptionBudget], offset: int, num_candidates: int, now: float,
                           names: Sequence[str] | None = None, rows: IntArray | None = None
                           ) -> tuple[list[Candidate], dict[str, Status], list[Status]]:
        """DryRunPreemption: SelectVictimsOnNode on a copy of each node (and of the cycle
        state), from ``offset``; non-violating candidates first, then violating ones, each list
        capped at ``num_candidates``; stops once there is a non-violating candidate and
        enough candidates in all. ``names``, ``rows``: the nodes' names and NodeTable rows
        (of the snapshot's table), if known.

        When the pod's Filter chain has a plan (:func:`filter_plan`: every active filter is
        node-only or resource arithmetic), SelectVictimsOnNode runs as arithmetic on the
        node itself (:meth:`_victims_fast`) — no copies, no AddPod/RemovePod, no filter
        chain per reprieve — with the same victims, violations and statuses."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        node_statuses: dict[str, Status] = {}
        errors: list[Status] = []
        plan = self.filter_plan(state, pod) if self.fast_path else None
        n = len(potential_nodes)
        if names is None:
            names = [ni.name for ni in potential_nodes]
        if plan is not None and rows is not None and self.cross_cache and n:
            return self._dry_run_rows(plan, state, pod, potential_nodes, names, rows, pdbs, offset, num_candidates,
                                      now)
        if plan is not None:
            node_only_ok = self._node_only_batch(plan, state, pod, potential_nodes, rows)
            plan_id = self._plan_id(plan)
            summaries = self._node_pods
            nominated_by_node = dict(self.handle.nominator.nominated_items())
            usage = self._usage_cache.for_plan(plan)
            node_only = node_only_ok if node_only_ok is not None else [False] * n
            prio, neg_prio, uid = pod.priority, -pod.priority, pod.uid
            pdbs_id = self._pdbs_id(pdbs)
        for i in range(n):
            j = (offset + i) % n
            node_info = potential_nodes[j]
            name = names[j]
            c: Candidate | None = None
            if plan is not None:
                summary = summaries.get(name)
                if summary is None or summary.node_info is not node_info or summary.generation != node_info.generation:
                    summary = summaries[name] = _NodePods(node_info)
                nominated: tuple[int, ...] | None = None
                for npi in nominated_by_node.get(name, ()):
                    p = npi.pod
                    if p.priority >= prio and p.uid != uid:
                        u = usage(p)
                        nominated = u if nominated is None else tuple(map(operator.add, nominated, u))
                ok_j = node_only[j]
                outcome = None
                if ok_j and summary.latest_start < now:
                    k = bisect_right(summary.neg_priorities, neg_prio)
                    if k < len(summary.pods):
                        outcome = summary.memo.get((k, plan_id, nominated, pdbs_id))
                if outcome is not None:
                    # The memoized outcome, all node-only steps passing.
                    first, second, c = outcome
                    status = first[1] if first is not None else second[1] if second is not None else None
                    if status is not None:
                        c = None
                else:
                    c, status = self._victims_fast(plan, plan_id, state, pod, node_info, summary, nominated, pdbs,
                                                   pdbs_id, now, ok_j)
            else:
                node_copy = node_info.clone()
                state_copy = state.clone()
                pods, num_violations, status = self.select_victims_on_node(state_copy, pod, node_copy, pdbs, now)
                if (status is None or status.is_success()) and pods:
                    c = Candidate(node_info.name, Victims(tuple(pods), num_violations))
            if c is not None and c.victims.pods:
                target = non_violating if c.victims.num_pdb_violations == 0 else violating
                if len(target) < num_candidates:
                    target.append(c)
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            if status is None or status.is_success():
                status = Status.as_error(f'expected at least one victim pod on node "{name}"')
            if status.code == Code.ERROR:
                errors.append(status)
            node_statuses[name] = status
        return non_violating + violating, node_statuses, errors

    def _dry_run_rows(self, plan: FilterPlan, state: CycleState, pod: Pod, potential_nodes: Sequence[NodeInfo],
                      names: Sequence[str], rows: IntArray, pdbs: Sequence[PodDisruptionBudget], offset: int,
                      num_candidates: int, now: float) -> tuple[list[Candidate], dict[str, Status], list[Status]]:
        """The fast dry run over table rows, with the walk's bookkeeping as array arithmetic.

        A node's outcome (a candidate with or without PDB violations, or its status) depends
        on its pods and allocatable, the plan's resource checks, the preemptor's priority, the
        PDBs and the summed usage of its nominated pods that count — and on nothing else when
        its node-only filters pass (the batch verdict, re-read every cycle) and no pod on it
        started after "now" (the memo's conditions). Such outcomes are kept per table row
        (:class:`_RowOutcomes`, forgotten for the rows the table's change log names), so a
        dry run looks up only the rows that changed; the stopping point (enough candidates,
        one of them without violations) is found with cumulative counts, exactly where the
        node-by-node walk of :meth:`dry_run_preemption` stops."""
        n = len(potential_nodes)
        table = self.handle.snapshot.table
        plan_id = self._plan_id(plan)
        prio = pod.priority
        pdbs_id = self._pdbs_id(pdbs)
        outcomes = self._outcomes_for(table, (id(table), plan_id, prio, pdbs_id))
        order = np.arange(offset, offset + n, dtype=np.int64)
        if offset:
            order[order >= n] -= n
        walk_rows = rows[order]
        node_only_ok = self._node_only_batch(plan, state, pod, potential_nodes, rows)
        ok = np.ones(n, np.bool_) if node_only_ok is None else np.asarray(node_only_ok, np.bool_)[order]
        # Per row, the summed usage of its nominated pods that count (None: none); a kept
        # outcome holds for the nominated usage it was found with.
        walk_nominated = self._nominated_totals(plan, plan_id, pod, table)[walk_rows]
        known = outcomes.valid[walk_rows] & ok & (outcomes.latest[walk_rows] < now)
        known &= outcomes.nominated[walk_rows] == walk_nominated
        kinds = np.where(known, outcomes.kind[walk_rows], _UNKNOWN)
        results: np.ndarray = np.empty(n, object)
        results[known] = outcomes.result[walk_rows[known]]
        summaries = self._node_pods
        # Walk: runs of known outcomes at once, the unknown nodes one by one.
        unknown = np.flatnonzero(~known).tolist()
        unknown.append(n)
        nv = v = 0
        stop = n
        start = 0
        for u in unknown:
            if u > start:
                seg = kinds[start:u]
                is_nv = seg == _NON_VIOLATING
                is_v = seg == _VIOLATING
                cum_nv = np.minimum(np.cumsum(is_nv) + nv, num_candidates)
                cum_v = np.minimum(np.cumsum(is_v) + v, num_candidates)
                done = (is_nv | is_v) & (cum_nv >= 1) & (cum_nv + cum_v >= num_candidates)
                if done.any():
                    stop = start + int(np.argmax(done)) + 1
                    break
                nv, v = int(cum_nv[-1]), int(cum_v[-1])
            if u == n:
                break
            # An unknown node: the per-node fast path, kept for later dry runs when it may be.
            j = int(order[u])
            node_info = potential_nodes[j]
            summary = summaries.get(names[j])
            if summary is None or summary.node_info is not node_info or summary.generation != node_info.generation:
                summary = summaries[names[j]] = _NodePods(node_info)
            row = int(walk_rows[u])
            nominated = walk_nominated[u]
            c, status = self._victims_fast(plan, plan_id, state, pod, node_info, summary, nominated, pdbs, pdbs_id,
                                           now, bool(ok[u]))
            if c is not None and c.victims.pods:
                kind = _NON_VIOLATING if c.victims.num_pdb_violations == 0 else _VIOLATING
                result: Candidate | Status = c
            else:
                if status is None or status.is_success():
                    status = Status.as_error(f'expected at least one victim pod on node "{names[j]}"')
                kind = _ERROR if status.code == Code.ERROR else _STATUS
                result = status
            kinds[u] = kind
            results[u] = result
            if ok[u] and summary.latest_start < now:
                outcomes.put(row, kind, result, summary.latest_start, nominated)
            start = u + 1
            if kind == _NON_VIOLATING:
                nv = min(nv + 1, num_candidates)
            elif kind == _VIOLATING:
                v = min(v + 1, num_candidates)
            else:
                continue
            if nv >= 1 and nv + v >= num_candidates:
                stop = u + 1
                break
        walked = kinds[:stop]
        picked = results[:stop]
        non_violating: list[Candidate] = picked[walked == _NON_VIOLATING][:num_candidates].tolist()
        violating: list[Candidate] = picked[walked == _VIOLATING][:num_candidates].tolist()
        failed = np.flatnonzero(walked <= _ERROR)
        node_statuses: dict[str, Status] = dict(zip(table.name_array[walk_rows[failed]].tolist(),
                                                    picked[failed].tolist(), strict=True))
        errors: list[Status] = picked[walked == _ERROR].tolist()
        return non_violating + violating, node_statuses, errors

    def _nominated_totals(self, plan: FilterPlan, plan_id: int, pod: Pod, table: Any) -> np.ndarray:
        """Per table row, the summed usage (the plan's layout) of the pods nominated to it with
        priority >= the pod's, the pod itself excepted (None: no such pod) — what the node-by-node
        walk sums per node, kept up to date from the nominator's change log."""
        key = (plan_id, pod.priority)
        totals = self._nominated.get(key)
        if totals is None or totals.table is not table:
            if len(self._nominated) >= _ROW_OUTCOMES_LIMIT:
                self._nominated.clear()
            totals = self._nominated[key] = _NominatedTotals(table, pod.priority, self._usage_cache.for_plan(plan))
        nominator = self.handle.nominator
        snapshot = self.handle.snapshot
        out = totals.sync(nominator, snapshot)
        mine = nominator.nominated_node(pod)
        if mine:
            # The pod's own nomination does not count for itself.
            ni = snapshot.get(mine)
            if ni is not None and ni.table is table:
                out = out.copy()
                out[ni.index] = totals.total(nominator.nominated_pods_for_node(mine), pod.uid)
        return out

    def _outcomes_for(self, table: object, key: tuple[int, int, int, int]) -> _RowOutcomes:
        got = self._row_outcomes.get(key)
        if got is None or got.table is not table:
            if len(self._row_outcomes) >= _ROW_OUTCOMES_LIMIT:
                self._row_outcomes.clear()
            got = self._row_outcomes[key] = _RowOutcomes(table)
        got.sync()
        return got

    def filter_plan(self, state: CycleState, pod: Pod) -> FilterPlan | None:
        """The fast path's plan of this pod's Filter chain, or None (per-node path): from the
        profile's active Filter and PreFilter plugins, through ``handle.plugins_at``."""
        plugins_at = getattr(self.handle, "plugins_at", None)
        if not callable(plugins_at):
            return None
        return filter_plan(plugins_at("Filter"), plugins_at("PreFilter"), state, pod)

    def select_victims_fast(self, plan: FilterPlan, state: CycleState, pod: Pod, node_info: NodeInfo,
                            pdbs: Sequence[PodDisruptionBudget], now: float) -> tuple[list[Pod], int, Status | None]:
        """SelectVictimsOnNode as arithmetic, for a pod whose Filter chain has a plan: the
        same (victims, PDB violations, status) as :meth:`select_victims_on_node` on copies of
        the node and the state (see :meth:`_victims_fast`)."""
        summary = self._node_pods.get(node_info.name)
        if summary is None or summary.node_info is not node_info or summary.generation != node_info.generation:
            summary = self._node_pods[node_info.name] = _NodePods(node_info)
        nominated: tuple[int, ...] | None = None
        usage = self._usage_cache.for_plan(plan)
        for npi in self.handle.nominator.nominated_pods_for_node(node_info.name):
            if npi.pod.priority >= pod.priority and npi.pod.uid != pod.uid:
                u = usage(npi.pod)
                nominated = u if nominated is None else tuple(map(operator.add, nominated, u))
        c, status = self._victims_fast(plan, self._plan_id(plan), state, pod, node_info, summary, nominated, pdbs,
                                       self._pdbs_id(pdbs), now, False)
        if c is None:
            return [], 0, status
        return list(c.victims.pods), c.victims.num_pdb_violations, None

    def _victims_fast(self, plan: FilterPlan, plan_id: int, state: CycleState, pod: Pod, node_info: NodeInfo,
                      summary: _NodePods, nominated: tuple[int, ...] | None, pdbs: Sequence[PodDisruptionBudget],
                      pdbs_id: int, now: float, node_only_ok: bool) -> tuple[Candidate | None, Status | None]:
        """SelectVictimsOnNode as arithmetic: (the candidate, which may have no victim, or
        None with the node's status). ``summary``: the node's :class:`_NodePods`;
        ``nominated``: the summed usage of its nominated pods of >= priority (other than the
        pod), None without any.

        Node-only filters are evaluated once (removing pods cannot change them; with
        ``node_only_ok`` the caller's batch filters found that they all pass); the resource
        steps see the node's free vector plus the usage of every lower-priority pod (all
        removed), then each pod is reprieved in upstream's order (PDB-violating first, then
        the others, each most important first) when the free vector still fits once its
        usage is taken back. Nominated pods of >= priority are counted as
        RunFilterPluginsWithNominatedPods adds them: the chain must pass with them, then
        without them.

        The node's pods in importance order and their usage vectors are kept per NodeInfo
        generation (:class:`_NodePods`); the outcome is memoized there too, keyed by
        everything else it depends on: the number of pods of >= priority (the lower-priority
        ones are the rest of that order), the resource checks (``plan_id``), the nominated
        pods' usage and the PDBs (``pdbs_id``)."""
        prio = pod.priority
        if summary.latest_start < now:
            # The cached order is MoreImportantPod's: lower-priority pods are a suffix of it.
            k = bisect_right(summary.neg_priorities, -prio)
            if k == len(summary.pods):
                return None, _NO_VICTIMS
            key = (k, plan_id, nominated, pdbs_id)
            outcome = summary.memo.get(key)
            if outcome is None:
                usages, suffix = summary.vectors(plan)
                outcome = _fast_outcome(plan, node_info, summary.pods[k:], usages[k:], suffix[k], nominated, pdbs,
                                        now)
                if len(summary.memo) >= _MEMO_LIMIT:
                    summary.memo.clear()
                summary.memo[key] = outcome
        else:
            # A pod started after "now": order them as upstream does with this "now".
            lower = [pi for pi in node_info.pods if pi.pod.priority < prio]
            if not lower:
                return None, _NO_VICTIMS
            lower.sort(key=lambda pi: importance_key(pi.pod, now))
            usages = [plan.usage(pi.pod) for pi in lower]
            outcome = _fast_outcome(plan, node_info, lower, usages, [sum(col) for col in zip(*usages, strict=True)],
                                    nominated, pdbs, now)
        first, second, candidate = outcome

        # The chain once every lower-priority pod is gone: with the nominated pods, then
        # (if that passed) without them; node-only steps before a failing resource step first.
        if node_only_ok:
            s = first[1] if first is not None else None
            if s is None and second is not None:
                s = second[1]
        else:
            node_only: dict[int, Status | None] = {}
            s = _first_failure(plan, state, pod, node_info, first, node_only)
            if s is None and nominated is not None:
                s = _first_failure(plan, state, pod, node_info, second, node_only)
        if s is not None:
            return None, s
        assert candidate is not None
        return candidate, None

    def _pdbs_id(self, pdbs: Sequence[PodDisruptionBudget]) -> int:
        """A number for this list of PDBs: the same while it holds the same objects (a PDB
        object never changes; an updated PDB is a new one)."""
        seen = self._pdbs_seen
        if len(seen) != len(pdbs) or any(a is not b for a, b in zip(seen, pdbs, strict=False)):
            self._pdbs_seen = tuple(pdbs)
            self._pdbs_version += 1
        return self._pdbs_version

    def _plan_id(self, plan: FilterPlan) -> int:
        """A small int for the plan's resource checks (memo keys hash it, not the tuple)."""
        ids = self._plan_ids
        got = ids.get(plan.key)
        if got is None:
            if len(ids) >= _PLAN_ID_LIMIT:
                ids.clear()
                self._node_pods.clear()  # ids are reused: forget every memo
            got = ids[plan.key] = len(ids)
        return got

    def _node_only_batch(self, plan: FilterPlan, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo],
                         rows: IntArray | None = None) -> list[bool] | None:
        """Per node: do all the plan's node-only steps pass? From their batch filters over
        the NodeTable (equal to Filter on every node, by the batch contract), when every one
        has one and the nodes are the table's rows; None otherwise (each node then evaluates
        its node-only steps itself, in chain order)."""
        if not plan.node_only_indices:
            return [True] * len(nodes)
        table = self.handle.snapshot.table
        batch = [getattr(plan.steps[k].plugin, "filter_batch", None) for k in plan.node_only_indices]
        if not all(callable(fb) for fb in batch):
            return None
        if rows is None:
            if any(ni.table is not table for ni in nodes):
                return None
            rows = np.fromiter((ni.index for ni in nodes), np.int64, len(nodes))
        ok = np.ones(len(nodes), np.bool_)
        for fb in batch:
            assert fb is not None
            ok &= np.asarray(fb(state, pod, table, rows), np.bool_)
        out: list[bool] = ok.tolist()
        return out

    def select_victims_on_node(self, state: CycleState, pod: Pod, node_info: NodeInfo,
                               pdbs: Sequence[PodDisruptionBudget], now: float
                               ) -> tuple[list[Pod], int, Status | None]:
        """SelectVictimsOnNode (on copies of the node and the state): remove every
        lower-priority pod; if the pod then fits, add them back most important first —
        PDB-violating ones before the others — keeping each that still lets it fit. The rest
        are the victims, most important first, with the number of PDB-violating ones."""
        handle = self.handle

        def remove(pi: PodInfo) -> Status | None:
            node_info.remove_pod(pi.pod)
            return handle.run_pre_filter_extension_remove_pod(state, pod, pi, node_info)

        def add(pi: PodInfo) -> Status | None:
            node_info.add_pod_info(pi)
            return handle.run_pre_filter_extension_add_pod(state, pod, pi, node_info)

        potential = [pi for pi in node_info.pods if pi.pod.priority < pod.priority]
        for pi in potential:
            s = remove(pi)
            if s is not None and not s.is_success():
                return [], 0, _as_error(s)
        if not potential:
            return [], 0, Status.unresolvable(REASON_NO_VICTIMS)

        # If the pod does not fit even with every lower-priority pod gone, this node cannot
        # help (pod affinity to a victim is deliberately not considered).
        s = handle.run_filter_plugins_with_nominated_pods(state, pod, node_info)
        if s is not None and not s.is_success():
            return [], 0, s

        potential.sort(key=lambda pi: importance_key(pi.pod, now))
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []
        num_violating = 0

        def reprieve(pi: PodInfo) -> tuple[bool, Status | None]:
            s = add(pi)
            if s is not None and not s.is_success():
                return False, _as_error(s)
            fs = handle.run_filter_plugins_with_nominated_pods(state, pod, node_info)
            fits = fs is None or fs.is_success()
            if not fits:
                s = remove(pi)
                if s is not None and not s.is_success():
                    return False, _as_error(s)
                victims.append(pi)
            return fits, None

        for pi in violating:
            fits, err = reprieve(pi)
            if err is not None:
                return [], 0, err
            if not fits:
                num_violating += 1
        for pi in non_violating:
            _, err = reprieve(pi)
            if err is not None:
                return [], 0, err
        if violating and non_violating:
            victims.sort(key=lambda pi: importance_key(pi.pod, now))
        return [pi.pod for pi in victims], num_violating, None

    # ---- extenders
    def call_extenders(self, pod: Pod, candidates: list[Candidate]) -> tuple[list[Candidate], Status | None]:
        """Evaluator.callExtenders: each interested extender that supports preemption gets the
        node -> victims map left by the previous one and returns its own choice. A failing
        extender, or one returning a node without victims, is skipped (that node dropped) when
        ignorable, else fails preemption with an Error status. Stops once no node is left.

        The candidates come back in the dry run's order (upstream rebuilds them from a Go map,
        in no particular order); nodes an extender added come last, by name."""
        extenders = self.handle.extenders
        if not extenders or not candidates:
            return candidates, None
        victims: dict[str, ExtenderVictims] = {c.name: c.victims for c in candidates}
        for ext in extenders:
            if not ext.supports_preemption() or not ext.is_interested(pod):
                continue
            try:
                result = dict(ext.process_preemption(pod, victims, self.handle.snapshot))
            except KubeschedError as err:
                if ext.is_ignorable():
                    continue
                return [], Status.as_error(err)
            for node in list(result):
                v = result[node]
                if v is None or not v.pods:
                    if ext.is_ignorable():
                        del result[node]
                        continue
                    return [], Status.as_error(f'expected at least one victim pod on node "{node}"')
            victims = result
            if not victims:
                break
        known = {c.name for c in candidates}
        order = [c.name for c in candidates if c.name in victims]
        order += sorted(n for n in victims if n not in known)
        return [Candidate(n, Victims(tuple(victims[n].pods), victims[n].num_pdb_violations)) for n in order], None

    # ---- selection and eviction
    def select_candidate(self, candidates: Sequence[Candidate], now: float) -> Candidate | None:
        """SelectCandidate: pickOneNodeForPreemption over the candidates."""
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        by_name = {c.name: c for c in candidates}
        order = [c.name for c in candidates]
        if self.handle.deterministic:
            order.sort()
        victims = {name: c.victims for name, c in by_name.items()}
        chosen = pick_one_node_for_preemption(victims, order, now, self._ranks)
        return by_name.get(chosen, candidates[0])

    def prepare_candidate(self, candidate: Candidate, pod: Pod) -> Status | None:
        """prepareCandidate: delete every victim (the cluster adds the DisruptionTarget
        condition first; the simulator deletes at once), then clear the nomination of
        lower-priority pods nominated to the node, which may no longer fit there. From 1.36 a
        victim already being deleted gets no second deletion; with SchedulerAsyncPreemption
        the deletions run after the cycle (prepareCandidateAsync)."""
        reason = f"{pod.scheduler_name}: preempting to accommodate a higher priority pod"
        victims = [v for v in candidate.victims.pods if not (self._skip_terminating and self._terminating(v))]
        if self._async:
            self._prepare_candidate_async(candidate, pod, victims, reason)
            return None
        for victim in victims:
            try:
                self.handle.delete_pod(victim, reason, pod)
            except KubeschedError as err:
                return Status.as_error(err)
        for pi in self.handle.nominator.nominated_pods_for_node(candidate.name):
            if pi.pod.priority < pod.priority:
                self.handle.clear_nominated_node_name(pi.pod)
        return None

    def _terminating(self, victim: Pod) -> bool:
        current = self.handle.objects.pod(victim.namespace, victim.name)
        return (current if current is not None and current.uid == victim.uid else victim).is_terminating

    def _prepare_candidate_async(self, candidate: Candidate, pod: Pod, victims: list[Pod], reason: str) -> None:
        """prepareCandidateAsync: nothing to delete, nothing to run. Else the preemptor is
        "preempting" while, after the cycle, the lower-priority pods nominated to the node lose
        their nomination, every victim but the last is deleted, then the last one (remembered,
        so PreEnqueue lets the preemptor in once it is being deleted). An error stops the
        deletions and activates the preemptor."""
        if not victims:
            return
        with self._lock:
            self.preempting.add(pod.uid)
        lower = [pi.pod for pi in self.handle.nominator.nominated_pods_for_node(candidate.name)
                 if pi.pod.priority < pod.priority]

        def run() -> None:
            failed = False
            try:
                for p in lower:
                    self.handle.clear_nominated_node_name(p)
                for victim in victims[:-1]:
                    self.handle.delete_pod(victim, reason, pod)
                last = victims[-1]
                with self._lock:
                    self._last_victims[pod.uid] = (last.namespace, last.name)
                self.handle.delete_pod(last, reason, pod)
            except KubeschedError:
                failed = True
            finally:
                with self._lock:
                    self.preempting.discard(pod.uid)
                    self._last_victims.pop(pod.uid, None)
            if failed:
                self.handle.activate([pod])

        self.handle.run_async(run)


# ----------------------------------------------------------------------------- fast path
_MEMO_LIMIT = 64
# (step index, status) of the first failing resource step, or None.
ResourceFailure = tuple[int, Status] | None
# (first pass, second pass (None without nominated pods), the candidate (None unless both
#  pass; its victims may be empty))
FastOutcome = tuple[ResourceFailure, ResourceFailure, "Candidate | None"]
_PLAN_ID_LIMIT = 256
# Outcome kinds of one node in a dry run (_RowOutcomes.kind): unknown (to be computed), a
# status (Unschedulable...), an Error status, a candidate without / with PDB violations.
_UNKNOWN, _STATUS, _ERROR, _NON_VIOLATING, _VIOLATING = -1, 0, 1, 2, 3
_ROW_OUTCOMES_LIMIT = 16


class _NominatedTotals:
    """Per table row, the summed usage of the pods nominated to its node with priority >=
    ``priority`` (None: none), for one plan's resource layout; re-summed only for the nodes
    the nominator's change log names, and wholly when a node changed (rows may move)."""

    __slots__ = ("table", "priority", "usage", "position", "node_version", "totals")

    def __init__(self, table: Any, priority: int, usage: Any) -> None:
        self.table = table
        self.priority = priority
        self.usage = usage
        self.position = -1
        self.node_version = -1
        self.totals: np.ndarray = np.empty(0, object)

    def total(self, pod_infos: Sequence[PodInfo], skip_uid: str = "") -> tuple[int, ...] | None:
        usage, priority = self.usage, self.priority
        out: tuple[int, ...] | None = None
        for pi in pod_infos:
            p = pi.pod
            if p.priority >= priority and p.uid != skip_uid:
                u = usage(p)
                out = u if out is None else tuple(map(operator.add, out, u))
        return out

    def sync(self, nominator: Any, snapshot: Any) -> np.ndarray:
        table = self.table
        position_of = getattr(nominator, "change_position", None)
        position = position_of() if callable(position_of) else -1
        changed: list[str] | None = None
        if position >= 0 and self.position >= 0 and table.node_version == self.node_version:
            if position == self.position:
                return self.totals
            changed = nominator.nodes_changed_since(self.position)
        if changed is None:
            totals = self.totals = np.empty(table.capacity, object)
            items: Sequence[tuple[str, Sequence[PodInfo]]] = nominator.nominated_items()
        else:
            totals = self.totals
            items = [(name, nominator.nominated_pods_for_node(name)) for name in dict.fromkeys(changed)]
        for name, pod_infos in items:
            ni = snapshot.get(name) if name else None
            if ni is not None and ni.table is table:
                totals[ni.index] = self.total(pod_infos)
        self.position = position
        self.node_version = table.node_version
        return totals


class _RowOutcomes:
    """The dry-run outcome of every table row for one (plan, preemptor priority, PDBs): its
    kind, the Candidate or Status, the latest start time of its pods and the nominated usage
    it was found with; valid until the table's change log names the row (its pods or node
    changed)."""

    __slots__ = ("table", "position", "valid", "kind", "result", "latest", "nominated")

    def __init__(self, table: Any) -> None:
        self.table = table
        self.position = table.log_position
        size = table.capacity
        self.valid = np.zeros(size, np.bool_)
        self.kind = np.full(size, _UNKNOWN, np.int8)
        self.result: np.ndarray = np.empty(size, object)
        self.latest = np.zeros(size, np.float64)
        self.nominated: np.ndarray = np.empty(size, object)

    def sync(self) -> None:
        """Forget the rows changed since the last look (all of them past the log's reach)."""
        table = self.table
        if len(self.valid) < table.capacity:
            grow = table.capacity - len(self.valid)
            self.valid = np.concatenate((self.valid, np.zeros(grow, np.bool_)))
            self.kind = np.concatenate((self.kind, np.full(grow, _UNKNOWN, np.int8)))
            self.result = np.concatenate((self.result, np.empty(grow, object)))
            self.latest = np.concatenate((self.latest, np.zeros(grow, np.float64)))
            self.nominated = np.concatenate((self.nominated, np.empty(grow, object)))
        position = table.log_position
        if position == self.position:
            return
        changed = table.changed_since(self.position)
        if changed is None:
            self.valid[:] = False
        elif changed:
            self.valid[np.asarray(changed, np.int64)] = False
        self.position = position

    def put(self, row: int, kind: int, result: Candidate | Status, latest: float,
            nominated: tuple[int, ...] | None) -> None:
        self.valid[row] = True
        self.kind[row] = kind
        self.result[row] = result
        self.latest[row] = latest
        self.nominated[row] = nominated


def _start_or_last(pi: PodInfo) -> tuple[int, float]:
    """importance_key without "now": pods that have not started sort after the others of
    their priority — the same order as importance_key whenever every start time is earlier
    than "now"."""
    st = pi.pod.start_time
    return -pi.pod.priority, (st if st is not None else math.inf)


class _NodePods:
    """The pods of one NodeInfo at one generation for the fast path: in importance order
    (stable, so ties keep the node's order as upstream's sort of the lower-priority pods
    does), their negated priorities (ascending, for bisect), the latest start time, their
    usage vectors and suffix sums per resource layout, and memoized outcomes."""

    __slots__ = ("node_info", "generation", "pods", "neg_priorities", "latest_start", "_vectors", "memo")

    def __init__(self, node_info: NodeInfo) -> None:
        self.node_info = node_info
        self.generation = node_info.generation
        self.pods = sorted(node_info.pods, key=_start_or_last)
        self.neg_priorities = [-pi.pod.priority for pi in self.pods]
        self.latest_start = max((pi.pod.start_time for pi in self.pods if pi.pod.start_time is not None),
                                default=-math.inf)
        self._vectors: dict[tuple[tuple[str, ...], ...], tuple[list[list[int]], list[list[int]]]] = {}
        self.memo: dict[object, FastOutcome] = {}

    def vectors(self, plan: FilterPlan) -> tuple[list[list[int]], list[list[int]]]:
        """(usage of each pod, suffix sums: [k] = total usage of pods[k:])."""
        layout = plan.layout
        got = self._vectors.get(layout)
        if got is None:
            usages = [plan.usage(pi.pod) for pi in self.pods]
            suffix = [[0] * len(plan.need)]
            for u in reversed(usages):
                suffix.append([a + b for a, b in zip(suffix[-1], u, strict=True)])
            suffix.reverse()
            got = self._vectors[layout] = (usages, suffix)
        return got


def _resource_failure(plan: FilterPlan, free: Sequence[int], node_info: NodeInfo | None = None) -> ResourceFailure:
    for k in plan.resource_indices:
        s = plan.resource_status(k, free, node_info=node_info)
        if s is not None:
            return k, s
    return None


def _fast_outcome(plan: FilterPlan, node_info: NodeInfo, lower: Sequence[PodInfo], usages: Sequence[Sequence[int]],
                  lower_sum: Sequence[int], nominated: Sequence[int] | None, pdbs: Sequence[PodDisruptionBudget],
                  now: float) -> FastOutcome:
    """The resource side of SelectVictimsOnNode for the lower-priority pods ``lower`` (in
    importance order, with their usage vectors): the resource steps' first failure once
    they are all gone (with the nominated pods, then without them), and when both pass the
    candidate: the victims of upstream's reprieve, with their number of PDB violations."""
    free = [f + x for f, x in zip(plan.free(node_info), lower_sum, strict=True)]
    if nominated is not None:
        first = _resource_failure(plan, [f - x for f, x in zip(free, nominated, strict=True)], node_info)
        second = _resource_failure(plan, free, node_info)
    else:
        first, second = _resource_failure(plan, free, node_info), None
    if first is not None or second is not None:
        return first, second, None
    usage_of = {id(pi): u for pi, u in zip(lower, usages, strict=True)}
    if pdbs:
        violating, non_violating = filter_pods_with_pdb_violation(lower, pdbs)
    else:
        violating, non_violating = [], list(lower)
    fits = plan.fits
    victims: list[PodInfo] = []
    num_violating = 0
    for group, is_violating in ((violating, True), (non_violating, False)):
        for pi in group:
            u = usage_of[id(pi)]
            trial = [f - x for f, x in zip(free, u, strict=True)]
            if nominated is not None:
                ok = fits([f - x for f, x in zip(trial, nominated, strict=True)]) and fits(trial)
            else:
                ok = fits(trial)
            if ok:
                free = trial
            else:
                victims.append(pi)
                if is_violating:
                    num_violating += 1
    if violating and non_violating:
        victims.sort(key=lambda pi: importance_key(pi.pod, now))
    return None, None, Candidate(node_info.name, Victims(tuple(pi.pod for pi in victims), num_violating))


def _first_failure(plan: FilterPlan, state: CycleState, pod: Pod, node_info: NodeInfo, resource: ResourceFailure,
                   node_only: dict[int, Status | None]) -> Status | None:
    """RunFilterPlugins' status given the first failing resource step: a node-only step
    before it may fail first (evaluated in order, each at most once per node)."""
    limit = resource[0] if resource is not None else len(plan.steps)
    for k in plan.node_only_indices:
        if k >= limit:
            break
        if k in node_only:
            s = node_only[k]
        else:
            s = node_only[k] = plan.node_only_status(k, state, pod, node_info)
        if s is not None:
            return s
    return resource[1] if resource is not None else None


def _as_error(s: Status) -> Status:
    """framework.AsStatus(status.AsError()): the same message as an Error status."""
    if s.code == Code.ERROR:
        return s
    return Status(Code.ERROR, (s.message,), s.plugin, s.error)


def new(args: object, handle: Handle) -> DefaultPreemption:
    """Plugin factory (registry entry)."""
    if args is not None and not isinstance(args, DefaultPreemptionArgs):
        raise ConfigError(f"want args to be of type DefaultPreemptionArgs, got {type(args).__name__}")
    return DefaultPreemption(args, handle)
