"""PodTopologySpread: pods matching a constraint's selector must spread evenly over the
topology domains (Filter, DoNotSchedule constraints); fewer matching pods in a node's
domains score higher (Score, ScheduleAnyway constraints). Pods without constraints get the
plugin's default constraints (System: hostname maxSkew 3 and zone maxSkew 5, ScheduleAnyway)
with a selector derived from their Services and controller.

Mirrors framework/plugins/podtopologyspread/{plugin,common,filtering,scoring}.go of v1.30.
The per-node methods follow upstream line by line; PreFilter/PreScore and the batch
methods work over the node table (value ids per row, cached matching-pod counts), and are
proven equal to the node-by-node reference path by the tests.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kubesched.config.args import LIST_DEFAULTING, SYSTEM_DEFAULTING, PodTopologySpreadArgs
from kubesched.errors import ConfigError, PluginError
from kubesched.framework import (
    GVK,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    NodeScore,
    NodeTable,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    StateKey,
    Status,
)
from kubesched.framework.interfaces import BoolArray, IntArray
from kubesched.framework.nodetable import RowNodes
from kubesched.framework.signers import SignFragment
from kubesched.objects import Node, Pod, TopologySpreadConstraint
from kubesched.plugins.helpers.eventobjects import as_objects, present
from kubesched.plugins.podtopologyspread import filtering, scoring
from kubesched.plugins.podtopologyspread._index import pod_counts, topology_index
from kubesched.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULT_CONSTRAINTS,
    Constraint,
    build_default_constraints,
    filter_constraints,
    node_has_keys,
)

NAME = "PodTopologySpread"
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

PRE_FILTER_KEY: StateKey[filtering.PreFilterState] = StateKey("PreFilter" + NAME)
PRE_SCORE_KEY: StateKey[scoring.PreScoreState] = StateKey("PreScore" + NAME)

_STATUS_SKEW = Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
_STATUS_LABEL = Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
# filter_batch_status codes -> statuses (0 = fits).
FILTER_STATUSES: tuple[Status | None, ...] = (None, _STATUS_SKEW, _STATUS_LABEL)


def _not_found(key: StateKey[filtering.PreFilterState] | StateKey[scoring.PreScoreState]) -> str:
    return f'reading "{key.name}" from cycleState: not found'


def _involved_in_spreading(incoming: Pod, pod_with_spreading: Pod) -> bool:
    """involvedInTopologySpreading: the pod itself, or an assigned (or nominated) pod of its
    namespace."""
    if incoming.uid == pod_with_spreading.uid:
        return True
    if not incoming.node_name and not incoming.nominated_node_name:
        return False
    return incoming.namespace == pod_with_spreading.namespace


def _labels_match_constraints(constraints: Sequence[Constraint], pod: Pod) -> bool:
    """podLabelsMatchSpreadConstraints: some constraint's selector matches the pod's labels."""
    return any(c.selector.matches(pod.labels) for c in constraints)


class PodTopologySpread:
    name = NAME

    def __init__(self, handle: Handle, args: PodTopologySpreadArgs | None = None) -> None:
        a = args if args is not None else PodTopologySpreadArgs()
        _validate(a)
        self.handle = handle
        # 1.36 counts matching pods per constraint, v1.30 per topology key (filtering.count_keys).
        self._per_constraint = handle.features.enabled("PerConstraintSpreadCounts")
        self._queueing_hints = handle.features.enabled("SchedulerQueueingHints")
        self.system_defaulted = a.defaulting_type == SYSTEM_DEFAULTING
        self.default_constraints: tuple[TopologySpreadConstraint, ...] = (
            SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted else tuple(a.default_constraints))

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """SignPod: a pod with topology spread constraints is not signable, nor is any pod when
        the plugin has default constraints (System defaulting always has): spreading depends on
        where the previous pods went. Otherwise nothing to add."""
        if pod.topology_spread_constraints:
            return Status.unschedulable("pods with topology constraints are not signable")
        if self.default_constraints:
            return Status.unschedulable("pods with default topology constraints are not signable")
        return []

    @property
    def signs_no_pod(self) -> bool:
        """sign_pod refuses every pod (default constraints): the profile's batch can skip
        asking (an optimization; the outcome and the batch metrics are the same)."""
        return bool(self.default_constraints)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Pod/All: an added, updated or deleted pod changes the counts. Node add/delete and
        label/taint updates change domains and inclusion."""
        if not self._queueing_hints:
            return [
                ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.ALL)),
                ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.DELETE
                                                  | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT)),
            ]
        # 1.36 EventsToRegister with enableSchedulingQueueHint: UpdatePodToleration too, for a
        # pod whose NodeTaintsPolicy:Honor constraint may now count a tainted node in.
        return [
            ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL
                                              | ActionType.UPDATE_POD_TOLERATION | ActionType.DELETE),
                                 self.is_schedulable_after_pod_change),
            ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.DELETE
                                              | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT),
                                 self.is_schedulable_after_node_change),
        ]

    # ---- queueing hints
    def is_schedulable_after_pod_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterPodChange: the pod's own toleration change (with a Honor taints
        policy), or an assigned pod of its namespace whose labels start or stop matching a
        DoNotSchedule constraint's selector."""
        original, modified = as_objects(Pod, old, new)
        if ((modified is not None and not _involved_in_spreading(modified, pod))
                or (original is not None and not _involved_in_spreading(original, pod))):
            return QueueingHint.QUEUE_SKIP
        constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        if modified is not None and original is not None:
            if (pod.uid == modified.uid and modified.tolerations != original.tolerations
                    and any(c.honor_taints for c in constraints)):
                return QueueingHint.QUEUE
            if dict(modified.labels) == dict(original.labels):
                return QueueingHint.QUEUE_SKIP
            for c in constraints:
                if c.selector.matches(original.labels) != c.selector.matches(modified.labels):
                    return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if modified is not None:
            return QueueingHint.QUEUE if _labels_match_constraints(constraints, modified) else QueueingHint.QUEUE_SKIP
        deleted = present(original, "deleted pod")
        return QueueingHint.QUEUE if _labels_match_constraints(constraints, deleted) else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterNodeChange: a node having every constraint's topology key added
        or deleted, gaining or losing one of them, or (still having them all) changing a key's
        value or its taints."""
        original, modified = as_objects(Node, old, new)
        constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        keys = [c.topology_key for c in constraints]
        original_matching = original is not None and node_has_keys(original.labels, keys)
        modified_matching = modified is not None and node_has_keys(modified.labels, keys)
        if original is not None and modified is not None:
            if original_matching != modified_matching:
                return QueueingHint.QUEUE
            if modified_matching and (
                    any(original.labels.get(k, "") != modified.labels.get(k, "") for k in keys)
                    or original.taints != modified.taints):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if modified is not None:
            return QueueingHint.QUEUE if modified_matching else QueueingHint.QUEUE_SKIP
        present(original, "node")
        return QueueingHint.QUEUE if original_matching else QueueingHint.QUEUE_SKIP

    # ---- constraints
    def constraints(self, pod: Pod, action: str) -> tuple[Constraint, ...]:
        """The pod's own constraints for ``action``, or (only when it has none at all) the
        default ones (calPreFilterState / initPreScoreState)."""
        if pod.topology_spread_constraints:
            return filter_constraints(pod.topology_spread_constraints, pod.labels, action)
        if not self.default_constraints:
            return ()
        return build_default_constraints(self.default_constraints, pod, action, self.handle.objects)

    # ---- PreFilter
    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status | None]:
        """Skip when the pod has no DoNotSchedule constraint; else count matching pods per
        topology pair over all nodes having every constraint's key."""
        constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        if not constraints:
            return None, Status.skip()
        state.write(PRE_FILTER_KEY, self._pre_filter_state(pod, constraints))
        return None, None

    def _pre_filter_state(self, pod: Pod, constraints: tuple[Constraint, ...]) -> filtering.PreFilterState:
        snap = self.handle.snapshot
        infos = snap.list()
        table = snap.table
        counts = pod_counts(table, infos)
        per = self._per_constraint
        if counts is None:
            return filtering.compute_state_plain(pod, constraints, infos, per_constraint=per)
        return filtering.compute_state(pod, constraints, table, topology_index(table), counts, per_constraint=per)

    def pre_filter_extensions(self) -> PodTopologySpread:
        return self

    def add_pod(self, state: CycleState, pod_to_schedule: Pod, pod_info_to_add: PodInfo,
                node_info: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_KEY)
        if s is None:
            return Status.as_error(_not_found(PRE_FILTER_KEY))
        filtering.update_with_pod(s, pod_info_to_add.pod, pod_to_schedule, node_info.node, 1)
        return None

    def remove_pod(self, state: CycleState, pod_to_schedule: Pod, pod_info_to_remove: PodInfo,
                   node_info: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_KEY)
        if s is None:
            return Status.as_error(_not_found(PRE_FILTER_KEY))
        filtering.update_with_pod(s, pod_info_to_remove.pod, pod_to_schedule, node_info.node, -1)
        return None

    # ---- Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_KEY)
        if s is None:
            return Status.as_error(_not_found(PRE_FILTER_KEY))
        node = node_info.node
        if node is None:
            return Status.as_error("node not found")
        return FILTER_STATUSES[filtering.node_fails(s, node.meta.labels)]

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> BoolArray:
        ok: BoolArray = self.filter_batch_status(state, pod, table, rows)[0] == 0
        return ok

    def filter_batch_status(self, state: CycleState, pod: Pod, table: NodeTable,
                            rows: IntArray) -> tuple[IntArray, tuple[Status | None, ...]]:
        """Per row, the index in :data:`FILTER_STATUSES` (returned too) of the status
        ``filter`` returns: lets a caller build every rejected node's status without
        calling ``filter`` per node."""
        s = state.get(PRE_FILTER_KEY)
        if s is None:
            raise PluginError(_not_found(PRE_FILTER_KEY))
        return filtering.rows_fail(s, table, rows).astype(np.int64), FILTER_STATUSES

    # ---- Score
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Skip when the snapshot has no node or the pod no ScheduleAnyway constraint.
        Unless the pod's constraints are the System defaults, feasible nodes missing a key
        are ignored (score 0)."""
        snap = self.handle.snapshot
        infos = snap.list()
        if not infos:
            return Status.skip()
        constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        if not constraints:
            return Status.skip()
        require_all = bool(pod.topology_spread_constraints) or not self.system_defaulted
        table = snap.table
        counts = pod_counts(table, infos)
        if counts is None or not _rows_of_table(nodes, table):
            st = scoring.compute_state_plain(pod, constraints, nodes, require_all, infos,
                                             per_constraint=self._per_constraint)
        else:
            st = scoring.compute_state(pod, constraints, nodes, require_all, table, topology_index(table), counts,
                                       per_constraint=self._per_constraint)
        state.write(PRE_SCORE_KEY, st)
        return None

    def _pre_score_state(self, state: CycleState) -> scoring.PreScoreState:
        s = state.get(PRE_SCORE_KEY)
        if s is None:
            raise PluginError(f"error {_not_found(PRE_SCORE_KEY)}")
        return s

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return scoring.node_score(self._pre_score_state(state), pod, node_info)

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> IntArray:
        s = self._pre_score_state(state)
        if s.key_ids is None or s.version != table.node_version:
            nodes = table.nodes
            out = np.zeros(rows.size, np.int64)
            for j, r in enumerate(rows.tolist()):
                node = nodes[r]
                assert node is not None
                ni = self.handle.snapshot.get(node.meta.name)
                out[j] = scoring.node_score(s, pod, ni if ni is not None else NodeInfo(node))
            s.scored_rows = rows
            return out
        s.scored_rows = rows
        return scoring.rows_score(s, table, rows)

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        s = state.get(PRE_SCORE_KEY)
        if s is None:
            return Status.as_error(f"error {_not_found(PRE_SCORE_KEY)}")
        ignored = np.fromiter((ns.name in s.ignored for ns in scores), np.bool_, len(scores))
        raw = np.fromiter((ns.score for ns in scores), np.int64, len(scores))
        for ns, v in zip(scores, scoring.normalize(raw, ignored).tolist(), strict=True):
            ns.score = v
        return None

    def normalize_score_batch(self, state: CycleState, pod: Pod, scores: IntArray) -> IntArray:
        """``scores`` are in the order of the last ``score_batch`` rows (or, failing that,
        of the nodes given to ``pre_score``): that is how ignored nodes are found."""
        s = self._pre_score_state(state)
        if not s.ignored:
            ignored = np.zeros(scores.size, np.bool_)
        elif s.ignored_rows is not None and s.scored_rows is not None and s.scored_rows.size == scores.size:
            ignored = s.ignored_rows[s.scored_rows]
        elif s.candidates_ignored.size == scores.size:
            ignored = s.candidates_ignored
        else:
            raise PluginError(f"{NAME}: cannot tell which of {scores.size} scores belong to ignored nodes")
        return scoring.normalize(scores, ignored)


def _rows_of_table(nodes: Sequence[NodeInfo], table: NodeTable) -> bool:
    """Are ``nodes`` rows of ``table`` holding their nodes (the scheduler's RowNodes are)?"""
    if isinstance(nodes, RowNodes):
        return nodes.table is table
    return not any(ni.index < 0 or ni.index >= table.size or table.nodes[ni.index] is not ni.node for ni in nodes)


def _validate(args: PodTopologySpreadArgs) -> None:
    """validation.ValidatePodTopologySpreadArgs (the checks the plugin relies on)."""
    if not isinstance(args, PodTopologySpreadArgs):
        raise ConfigError(f"want args to be of type PodTopologySpreadArgs, got {type(args).__name__}")
    if args.defaulting_type not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        raise ConfigError(f'Unsupported value: "{args.defaulting_type}": supported values: "List", "System"',
                          field="defaultingType")
    if args.defaulting_type == SYSTEM_DEFAULTING and args.default_constraints:
        raise ConfigError(f'Invalid value: "{args.defaulting_type}": when .defaultConstraints are not empty',
                          field="defaultingType")
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(args.default_constraints):
        path = f"defaultConstraints[{i}]"
        if c.max_skew <= 0:
            raise ConfigError(f"Invalid value: {c.max_skew}: must be greater than zero", field=f"{path}.maxSkew")
        if not c.topology_key:
            raise ConfigError("Required value: can not be empty", field=f"{path}.topologyKey")
        if c.when_unsatisfiable not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            raise ConfigError(f'Unsupported value: "{c.when_unsatisfiable}": supported values: "DoNotSchedule", '
                              '"ScheduleAnyway"', field=f"{path}.whenUnsatisfiable")
        pair = (c.topology_key, c.when_unsatisfiable)
        if pair in seen:
            raise ConfigError(f'Duplicate value: "{{{c.topology_key}, {c.when_unsatisfiable}}}"',
                              field=f"{path}.{{topologyKey, whenUnsatisfiable}}")
        seen.add(pair)
        if c.label_selector is not None:
            raise ConfigError("Forbidden: constraint must not define a selector, as they deduced for each pod",
                              field=f"{path}.labelSelector")


def new(args: object, handle: Handle) -> PodTopologySpread:
    """Plugin factory (registry entry): ``args`` is a PodTopologySpreadArgs or None."""
    if args is not None and not isinstance(args, PodTopologySpreadArgs):
        raise ConfigError(f"want args to be of type PodTopologySpreadArgs, got {type(args).__name__}")
    return PodTopologySpread(handle, args)
