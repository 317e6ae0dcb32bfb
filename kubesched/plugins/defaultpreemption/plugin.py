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

The chosen victims are exposed as ``PreemptionResult.victims`` (the PostFilterResult returned
on success) and as ``plugin.last_victims`` / ``plugin.last_candidate`` (reset on every call).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kubesched.config.args import DefaultPreemptionArgs
from kubesched.errors import ConfigError, KubeschedError
from kubesched.framework import (
    NOMINATING_OVERRIDE,
    ClusterEventWithHint,
    Code,
    CycleState,
    ExtenderVictims,
    Handle,
    NodeInfo,
    NominatingInfo,
    PodInfo,
    PostFilterResult,
    Status,
)
from kubesched.objects import Pod, PodDisruptionBudget
from kubesched.plugins.helpers.fiterror import fit_error_message

NAME = "DefaultPreemption"

REASON_NOT_HELPFUL = "Preemption is not helpful for scheduling"
REASON_NO_VICTIMS = "No preemption victims found for incoming pod"
MSG_PREEMPT_NEVER = "not eligible due to preemptionPolicy=Never."
MSG_TERMINATING_ON_NOMINATED = "not eligible due to a terminating pod on the nominated node."
MSG_NO_CANDIDATE = "no candidate node for preemption"
PREEMPT_NEVER = "Never"
# v1.DisruptionTarget / v1.PodReasonPreemptionByScheduler.
DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
_MAX_INT32 = 2**31 - 1


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
    if not victims.pods:
        return None
    earliest = pod_start_time(victims.pods[0], now)
    max_priority = victims.pods[0].priority
    for p in victims.pods:
        if p.priority == max_priority:
            st = pod_start_time(p, now)
            if st < earliest:
                earliest = st
        elif p.priority > max_priority:
            max_priority = p.priority
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


def nodes_where_preemption_might_help(nodes: Sequence[NodeInfo], statuses: Mapping[str, Status]
                                      ) -> tuple[list[NodeInfo], dict[str, Status]]:
    """nodesWherePreemptionMightHelp: only nodes whose filter status is exactly Unschedulable
    are worth a dry run; every other node (UnschedulableAndUnresolvable, or no status at all)
    gets "Preemption is not helpful for scheduling"."""
    potential: list[NodeInfo] = []
    not_helpful: dict[str, Status] = {}
    unresolvable = Status.unresolvable(REASON_NOT_HELPFUL)
    for ni in nodes:
        s = statuses.get(ni.name)
        if s is not None and s.code == Code.UNSCHEDULABLE:
            potential.append(ni)
        else:
            not_helpful[ni.name] = unresolvable
    return potential, not_helpful


def pick_one_node_for_preemption(nodes_to_victims: Mapping[str, Victims], order: Sequence[str], now: float) -> str:
    """pickOneNodeForPreemption with the default score functions, in precedence order; each
    keeps the nodes with the highest score, stopping as soon as one node remains:

    1. fewest PDB violations; 2. lowest priority of the most important victim; 3. smallest
    sum of (priority + 2^31) over the victims; 4. fewest victims; 5. latest earliest start
    time among the highest-priority victims. A remaining tie goes to the first of ``order``.
    """
    if not nodes_to_victims:
        return ""

    def min_pdb_violations(node: str) -> float:
        return -nodes_to_victims[node].num_pdb_violations

    def min_highest_priority(node: str) -> float:
        return -nodes_to_victims[node].pods[0].priority

    def min_sum_priorities(node: str) -> float:
        # MaxInt32+1 makes every term >= 0, so fewer pods of negative priority never win by
        # having a "smaller" negative sum.
        return -sum(p.priority + _MAX_INT32 + 1 for p in nodes_to_victims[node].pods)

    def min_num_pods(node: str) -> float:
        return -len(nodes_to_victims[node].pods)

    def latest_start_time(node: str) -> float:
        earliest = earliest_pod_start_time(nodes_to_victims[node], now)
        return -math.inf if earliest is None else earliest

    candidates = [n for n in order if n in nodes_to_victims]
    for score in (min_pdb_violations, min_highest_priority, min_sum_priorities, min_num_pods, latest_start_time):
        best = -math.inf
        selected: list[str] = []
        for node in candidates:
            s = score(node)
            if s > best:
                best = s
                selected = []
            if s == best:
                selected.append(node)
        if len(selected) == 1:
            return selected[0]
        candidates = selected
    return candidates[0]


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

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Without async preemption (v1.30) PreEnqueue never rejects, so no event concerns it.
        return []

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
        potential, not_helpful = nodes_where_preemption_might_help(all_nodes, statuses)
        if not potential:
            # Preemption cannot help anywhere: drop any stale nomination of the pod.
            self.handle.clear_nominated_node_name(pod)
            return [], not_helpful, []
        pdbs = list(self.handle.objects.pdbs())
        offset, num_candidates = self.get_offset_and_num_candidates(len(potential))
        candidates, node_statuses, errors = self.dry_run_preemption(state, pod, potential, pdbs, offset,
                                                                    num_candidates, now)
        node_statuses.update(not_helpful)
        return candidates, node_statuses, errors

    def dry_run_preemption(self, state: CycleState, pod: Pod, potential_nodes: Sequence[NodeInfo],
                           pdbs: Sequence[PodDisruptionBudget], offset: int, num_candidates: int, now: float
                           ) -> tuple[list[Candidate], dict[str, Status], list[Status]]:
        """DryRunPreemption: SelectVictimsOnNode on a copy of each node (and of the cycle
        state), from ``offset``; non-violating candidates first, then violating ones, each list
        capped at ``num_candidates``; stops once there is a non-violating candidate and
        enough candidates in all."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        node_statuses: dict[str, Status] = {}
        errors: list[Status] = []
        n = len(potential_nodes)
        for i in range(n):
            node_copy = potential_nodes[(offset + i) % n].clone()
            state_copy = state.clone()
            pods, num_violations, status = self.select_victims_on_node(state_copy, pod, node_copy, pdbs, now)
            ok = status is None or status.is_success()
            if ok and pods:
                c = Candidate(node_copy.name, Victims(tuple(pods), num_violations))
                target = non_violating if num_violations == 0 else violating
                if len(target) < num_candidates:
                    target.append(c)
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            if ok:
                status = Status.as_error(f'expected at least one victim pod on node "{node_copy.name}"')
            assert status is not None
            if status.code == Code.ERROR:
                errors.append(status)
            node_statuses[node_copy.name] = status
        return non_violating + violating, node_statuses, errors

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
        chosen = pick_one_node_for_preemption(victims, order, now)
        return by_name.get(chosen, candidates[0])

    def prepare_candidate(self, candidate: Candidate, pod: Pod) -> Status | None:
        """prepareCandidate: delete every victim (the cluster adds the DisruptionTarget
        condition first; the simulator deletes at once), then clear the nomination of
        lower-priority pods nominated to the node, which may no longer fit there."""
        reason = f"{pod.scheduler_name}: preempting to accommodate a higher priority pod"
        for victim in candidate.victims.pods:
            try:
                self.handle.delete_pod(victim, reason)
            except KubeschedError as err:
                return Status.as_error(err)
        for pi in self.handle.nominator.nominated_pods_for_node(candidate.name):
            if pi.pod.priority < pod.priority:
                self.handle.clear_nominated_node_name(pi.pod)
        return None


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
