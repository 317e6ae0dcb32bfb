"""InterPodAffinity: required pod (anti-)affinity of the incoming pod and of the pods already
running (PreFilter/Filter, with AddPod/RemovePod), preferred pod (anti-)affinity and the
symmetric weights of existing pods' terms (PreScore/Score/NormalizeScore).

Mirrors framework/plugins/interpodaffinity/plugin.go, filtering.go and scoring.go of
kube-scheduler v1.30. matchLabelKeys / mismatchLabelKeys are not read: in v1.30 they are
behind the alpha MatchLabelKeysInPodAffinity gate (off by default) and are applied by the
API server, never by the scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from kubesched.config.args import InterPodAffinityArgs
from kubesched.errors import ConfigError, PluginError
from kubesched.framework import (
    GVK,
    SKIP,
    ActionType,
    AffinityTerm,
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
from kubesched.framework.signers import LABELS_SIGNER_NAME, SignFragment
from kubesched.objects import Node, Pod
from kubesched.plugins.helpers.eventobjects import as_objects, present
from kubesched.plugins.interpodaffinity.common import (
    NAME,
    WITH_AFFINITY,
    WITH_PODS,
    WITH_REQUIRED_ANTI_AFFINITY,
    Aggregate,
    AggregateCache,
    Contribution,
    Counts,
    IncomingTerm,
    LabelKeys,
    NodeSet,
    namespace_labels,
    nodes_with_pods,
    pod_matches_all_terms,
    resolve_terms,
    resolve_weighted_terms,
    topology_index,
)
from kubesched.plugins.interpodaffinity.filtering import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    BatchArrays,
    Column,
    PreFilterState,
)
from kubesched.plugins.interpodaffinity.scoring import (
    PreScoreState,
    normalize_score_array,
    normalize_scores,
)

__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH", "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH", "NAME", "InterPodAffinity", "new",
]

MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100

PRE_FILTER_STATE_KEY_NAME = "PreFilter" + NAME
PRE_SCORE_STATE_KEY_NAME = "PreScore" + NAME
_PRE_FILTER_KEY: StateKey[PreFilterState] = StateKey(PRE_FILTER_STATE_KEY_NAME)
_PRE_SCORE_KEY: StateKey[PreScoreState] = StateKey(PRE_SCORE_STATE_KEY_NAME)
# The cycle's nodes with pods, found once in PreFilter and reused by PreScore (the snapshot
# does not change within a scheduling cycle).
_NODES_KEY: StateKey[NodeSet] = StateKey(NAME + "/nodes")


# filter_batch_status codes -> the statuses Filter returns (0 = fits).
FILTER_STATUSES: tuple[Status | None, ...] = (
    None,
    Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH),
    Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH),
    Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH),
)


def _not_found(key: str) -> str:
    return f'error reading "{key}" from cycleState: not found'


def validate_args(args: InterPodAffinityArgs) -> None:
    """validation.ValidateInterPodAffinityArgs."""
    w = args.hard_pod_affinity_weight
    if w < MIN_HARD_POD_AFFINITY_WEIGHT or w > MAX_HARD_POD_AFFINITY_WEIGHT:
        raise ConfigError(f"Invalid value: {w}: not in valid range [{MIN_HARD_POD_AFFINITY_WEIGHT}, "
                          f"{MAX_HARD_POD_AFFINITY_WEIGHT}]", field="hardPodAffinityWeight")


def _matches_all(terms: Sequence[AffinityTerm], pod: Pod) -> bool:
    """filtering.go podMatchesAllAffinityTerms: no term matches nothing; the incoming pod's
    namespace selector was merged into its namespaces, so no namespace labels are passed."""
    if not terms:
        return False
    return all(t.matches(pod, None) for t in terms)


class InterPodAffinity:
    name = NAME

    def __init__(self, args: InterPodAffinityArgs | None, handle: Handle) -> None:
        self.args = args or InterPodAffinityArgs()
        validate_args(self.args)
        self.handle = handle
        # Per incoming-pod identity, the count / score maps kept up to date across cycles.
        self._aggregates = AggregateCache()
        self._label_keys = LabelKeys()
        self._queueing_hints = handle.features.enabled("SchedulerQueueingHints")

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """SignPod: a pod with pod affinity or anti-affinity is not signable. Otherwise its
        labels, which other pods' terms may select, unless ignorePreferredTermsOfExistingPods:
        then only pods with terms of their own count, and this pod has none."""
        affinity = pod.affinity
        if affinity is not None and (affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None):
            return Status.unschedulable("pods with InterPodAffinity are not signable")
        if self.args.ignore_preferred_terms_of_existing_pods:
            return []
        return [SignFragment(LABELS_SIGNER_NAME, dict(pod.labels))]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        if not self._queueing_hints:
            return [
                # A pod added, updated or deleted may satisfy or stop violating a term.
                ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.ALL)),
                # A new node or new labels may match a topology; the taint bit is what
                # buildQueueingHintMap adds for every Node/Add registration.
                ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL
                                                  | ActionType.UPDATE_NODE_TAINT)),
            ]
        # 1.36 EventsToRegister with enableSchedulingQueueHint: an assigned pod added, relabelled
        # or deleted; a node added or relabelled (no preCheck, so no UpdateNodeTaint).
        return [
            ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
                                 self.is_schedulable_after_pod_change),
            ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                                 self.is_schedulable_after_node_change),
        ]

    # ------------------------------------------------------------------ queueing hints
    def is_schedulable_after_pod_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterPodChange. Terms are matched as podMatchesAllAffinityTerms does:
        namespaces listed (or the pod's own), the namespace selector against no labels."""
        original, modified = as_objects(Pod, old, new)
        if modified is not None and original is not None and pod.uid == modified.uid:
            # The only update of the pod itself registered is UpdatePodLabel: another pod's
            # anti-affinity may no longer match it.
            return QueueingHint.QUEUE
        # An unscheduled pod (neither bound nor nominated) affects no placement; a change of
        # node or nomination comes as an Add/Delete.
        if ((modified is not None and not modified.node_name and not modified.nominated_node_name)
                or (original is not None and not original.node_name and not original.nominated_node_name)):
            return QueueingHint.QUEUE_SKIP
        info = PodInfo(pod)
        terms = info.required_affinity_terms
        anti_terms = info.required_anti_affinity_terms
        # One existing pod must satisfy all affinity terms at once, so the terms are not
        # looked at one by one.
        if modified is not None and original is not None:
            if not _matches_all(terms, original) and _matches_all(terms, modified):
                return QueueingHint.QUEUE
            if _matches_all(anti_terms, original) and not _matches_all(anti_terms, modified):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if modified is not None:
            # Added: it may satisfy the pod's affinity.
            return QueueingHint.QUEUE if _matches_all(terms, modified) else QueueingHint.QUEUE_SKIP
        deleted = present(original, "deleted pod")
        # Deleted: it may have been what the pod's anti-affinity, or its own anti-affinity
        # against the pod, rejected.
        if _matches_all(anti_terms, deleted):
            return QueueingHint.QUEUE
        if _matches_all(PodInfo(deleted).required_anti_affinity_terms, pod):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterNodeChange: a node added or relabelled so that it gains (affinity)
        or loses (anti-affinity) a term's topology key, or moves to another domain of it."""
        original, modified_or_none = as_objects(Node, old, new)
        modified = present(modified_or_none, "node")
        info = PodInfo(pod)
        for term in info.required_affinity_terms:
            key = term.topology_key
            if original is None:
                if key in modified.labels:
                    return QueueingHint.QUEUE
                continue
            had, has = key in original.labels, key in modified.labels
            if not had and has:
                return QueueingHint.QUEUE
            if had and has and original.labels[key] != modified.labels[key]:
                return QueueingHint.QUEUE
        for term in info.required_anti_affinity_terms:
            if original is None:
                # A new node may be outside every topology of the pods the pod hates; which
                # pods are in its domain is not this hint's business.
                return QueueingHint.QUEUE
            key = term.topology_key
            had, has = key in original.labels, key in modified.labels
            # Gaining the key never helps: a node without it always accepts the pod.
            if had and not has:
                return QueueingHint.QUEUE
            if had and has and original.labels[key] != modified.labels[key]:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _nodes(self, state: CycleState) -> NodeSet:
        nodes = state.get(_NODES_KEY)
        if nodes is None or nodes.source is not self.handle.snapshot.list():
            nodes = nodes_with_pods(self.handle)
            state.write(_NODES_KEY, nodes)
        return nodes

    # ------------------------------------------------------------------ PreFilter
    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status | None]:
        handle = self.handle
        pod_info = PodInfo(pod)
        affinity_terms = resolve_terms(handle, pod_info.required_affinity_terms)
        anti_affinity_terms = resolve_terms(handle, pod_info.required_anti_affinity_terms)
        ns_labels = namespace_labels(handle, pod.namespace)
        nodes = self._nodes(state)

        existing = self._existing_anti_affinity_counts(nodes, pod, ns_labels)
        incoming = self._incoming_affinity_anti_affinity_counts(nodes, affinity_terms, anti_affinity_terms)
        if not existing.totals[0] and not affinity_terms and not anti_affinity_terms:
            return None, SKIP

        batch = None
        if existing.index is not None:
            # The batch filter's columns, straight from the aggregates' arrays.
            def columns(agg: Aggregate, channel: int, keys: Sequence[str]) -> list[Column]:
                out: list[Column] = []
                for key in keys:
                    col = agg.array(channel, key)
                    assert col is not None
                    out.append((col[0], col[1] > 0))
                return out

            batch = BatchArrays(existing.index,
                                columns(incoming, 0, [t.topology_key for t in affinity_terms]),
                                columns(incoming, 1, [t.topology_key for t in anti_affinity_terms]),
                                columns(existing, 0, existing.channel_keys(0)))
        state.write(_PRE_FILTER_KEY, PreFilterState(pod, affinity_terms, anti_affinity_terms, ns_labels,
                                                    dict(existing.totals[0]), dict(incoming.totals[0]),
                                                    dict(incoming.totals[1]), batch))
        return None, None

    def _existing_anti_affinity_counts(self, nodes: NodeSet, pod: Pod, ns_labels: Mapping[str, str]) -> Aggregate:
        """getExistingAntiAffinityCounts: for every existing pod's required anti-affinity
        term matching the incoming pod, +1 on (topologyKey, that pod's node's value).
        (Upstream visits the nodes of HavePodsWithRequiredAntiAffinityList; the others
        contribute nothing.)"""
        label_keys = self._label_keys
        agg = self._aggregates.get(("existing", label_keys.identity(pod, ns_labels)), 1)

        def contribution(ni: NodeInfo) -> Contribution:
            node = ni.node
            if node is None or not ni.pods_with_required_anti_affinity:
                return ((),)
            labels = node.meta.labels
            counts: Counts = {}
            for pi in ni.pods_with_required_anti_affinity:
                for t in pi.required_anti_affinity_terms:
                    label_keys.note(t.selector)
                    if t.matches(pod, ns_labels):
                        v = labels.get(t.topology_key)
                        if v is not None:
                            pair = (t.topology_key, v)
                            counts[pair] = counts.get(pair, 0) + 1
            return (tuple(counts.items()),)

        agg.refresh(nodes, contribution, WITH_REQUIRED_ANTI_AFFINITY)
        return agg

    def _incoming_affinity_anti_affinity_counts(self, nodes: NodeSet, affinity_terms: tuple[IncomingTerm, ...],
                                                anti_affinity_terms: tuple[IncomingTerm, ...]) -> Aggregate:
        """getIncomingAffinityAntiAffinityCounts: over every existing pod, +1 on each
        affinity term's pair when the pod matches *all* affinity terms (channel 0), and +1
        on an anti-affinity term's pair for each term it matches (channel 1)."""
        key = ("incoming", tuple(t.signature for t in affinity_terms), tuple(t.signature for t in anti_affinity_terms))
        agg = self._aggregates.get(key, 2)
        if not affinity_terms and not anti_affinity_terms:
            return agg  # always empty

        def contribution(ni: NodeInfo) -> Contribution:
            node = ni.node
            if node is None:
                return ((), ())
            labels = node.meta.labels
            affinity: Counts = {}
            anti: Counts = {}
            for pi in ni.pods:
                p = pi.pod
                if affinity_terms and pod_matches_all_terms(affinity_terms, p):
                    for t in affinity_terms:
                        v = labels.get(t.topology_key)
                        if v is not None:
                            pair = (t.topology_key, v)
                            affinity[pair] = affinity.get(pair, 0) + 1
                for t in anti_affinity_terms:
                    if t.matches(p):
                        v = labels.get(t.topology_key)
                        if v is not None:
                            pair = (t.topology_key, v)
                            anti[pair] = anti.get(pair, 0) + 1
            return tuple(affinity.items()), tuple(anti.items())

        agg.refresh(nodes, contribution, WITH_PODS)
        return agg

    def pre_filter_extensions(self) -> InterPodAffinity:
        return self

    def add_pod(self, state: CycleState, pod_to_schedule: Pod, pod_info_to_add: PodInfo,
                node_info: NodeInfo) -> Status | None:
        return self._update(state, pod_info_to_add, node_info, 1)

    def remove_pod(self, state: CycleState, pod_to_schedule: Pod, pod_info_to_remove: PodInfo,
                   node_info: NodeInfo) -> Status | None:
        return self._update(state, pod_info_to_remove, node_info, -1)

    @staticmethod
    def _update(state: CycleState, pod_info: PodInfo, node_info: NodeInfo, multiplier: int) -> Status | None:
        s = state.get(_PRE_FILTER_KEY)
        if s is None:
            return Status.as_error(_not_found(PRE_FILTER_STATE_KEY_NAME))
        if node_info.node is None:
            return Status.as_error("node not found")
        s.update_with_pod(pod_info, node_info.node, multiplier)
        return None

    # ------------------------------------------------------------------ Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.as_error("node not found")
        s = state.get(_PRE_FILTER_KEY)
        if s is None:
            return Status.as_error(_not_found(PRE_FILTER_STATE_KEY_NAME))
        labels = node.meta.labels
        if not s.satisfies_pod_affinity(labels):
            return Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
        if not s.satisfies_pod_anti_affinity(labels):
            return Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
        if not s.satisfies_existing_pods_anti_affinity(labels):
            return Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
        return None

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> BoolArray:
        s = state.get(_PRE_FILTER_KEY)
        if s is None:
            raise PluginError(_not_found(PRE_FILTER_STATE_KEY_NAME))
        affinity_ok, anti_ok, existing_ok = s.batch_checks(table, topology_index(table), rows)
        out: BoolArray = affinity_ok & anti_ok & existing_ok
        return out

    def filter_batch_status(self, state: CycleState, pod: Pod, table: NodeTable,
                            rows: IntArray) -> tuple[IntArray, tuple[Status | None, ...]]:
        """Per row, the index in :data:`FILTER_STATUSES` of the status ``filter`` returns
        (its checks in the same order: the first failing one decides)."""
        s = state.get(_PRE_FILTER_KEY)
        if s is None:
            raise PluginError(_not_found(PRE_FILTER_STATE_KEY_NAME))
        affinity_ok, anti_ok, existing_ok = s.batch_checks(table, topology_index(table), rows)
        codes = np.zeros(len(rows), np.int64)
        codes[~existing_ok] = 3
        codes[~anti_ok] = 2
        codes[~affinity_ok] = 1
        return codes, FILTER_STATUSES

    # ------------------------------------------------------------------ Score
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        if not nodes:
            return SKIP
        handle = self.handle
        pod_info = PodInfo(pod)
        has_constraints = bool(pod_info.preferred_affinity_terms or pod_info.preferred_anti_affinity_terms)
        # Optionally ignore the existing pods' preferences when the incoming pod has none.
        if self.args.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return SKIP
        preferred_affinity = resolve_weighted_terms(handle, pod_info.preferred_affinity_terms)
        preferred_anti_affinity = resolve_weighted_terms(handle, pod_info.preferred_anti_affinity_terms)
        ns_labels = namespace_labels(handle, pod.namespace)
        hard_weight = self.args.hard_pod_affinity_weight

        # Unless the incoming pod has preferred terms, only pods with affinity matter (the
        # other pods, and nodes without pods, contribute nothing).
        with_pods = self._nodes(state)
        label_keys = self._label_keys
        key = ("score", has_constraints, tuple(t.signature for t in preferred_affinity),
               tuple(t.signature for t in preferred_anti_affinity), label_keys.identity(pod, ns_labels))
        agg = self._aggregates.get(key, 1)

        def contribution(ni: NodeInfo) -> Contribution:
            """processExistingPod over the node's pods (all, or those with affinity)."""
            node = ni.node
            if node is None or not node.meta.labels:
                return ((),)
            labels = node.meta.labels
            acc: Counts = {}

            def add(topology_key: str, weight: int) -> None:
                v = labels.get(topology_key)
                if v is not None:
                    pair = (topology_key, v)
                    acc[pair] = acc.get(pair, 0) + weight

            for epi in (ni.pods if has_constraints else ni.pods_with_affinity):
                existing = epi.pod
                for it in preferred_affinity:
                    if it.matches(existing):
                        add(it.topology_key, it.weight)
                for it in preferred_anti_affinity:
                    if it.matches(existing):
                        add(it.topology_key, -it.weight)
                if hard_weight > 0:
                    for t in epi.required_affinity_terms:
                        label_keys.note(t.selector)
                        if t.matches(pod, ns_labels):
                            add(t.topology_key, hard_weight)
                for wt in epi.preferred_affinity_terms:
                    label_keys.note(wt.term.selector)
                    if wt.term.matches(pod, ns_labels):
                        add(wt.term.topology_key, wt.weight)
                for wt in epi.preferred_anti_affinity_terms:
                    label_keys.note(wt.term.selector)
                    if wt.term.matches(pod, ns_labels):
                        add(wt.term.topology_key, -wt.weight)
            return (tuple(acc.items()),)

        agg.refresh(with_pods, contribution, WITH_PODS if has_constraints else WITH_AFFINITY)
        if agg.hits == 0:
            return SKIP
        keys = agg.channel_keys(0)
        columns = None
        if agg.index is not None:
            cols = []
            for k in keys:
                col = agg.array(0, k)
                assert col is not None
                cols.append((col[0], col[1].copy()))
            columns = (agg.index, cols)
        state.write(_PRE_SCORE_KEY, PreScoreState(dict(agg.totals[0]), keys, columns))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        node = node_info.node
        if node is None:
            raise PluginError(f"node {node_info.name!r} not found")
        return state.read(_PRE_SCORE_KEY).score(node.meta.labels)

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> IntArray:
        return state.read(_PRE_SCORE_KEY).score_rows(table, topology_index(table), rows)

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        # PreScore skipped whenever nothing was accumulated, so the topology score is
        # never empty here (upstream's early return cannot trigger).
        state.read(_PRE_SCORE_KEY)
        normalize_scores(scores)
        return None

    def normalize_score_batch(self, state: CycleState, pod: Pod, scores: IntArray) -> IntArray:
        state.read(_PRE_SCORE_KEY)
        return normalize_score_array(np.asarray(scores, np.int64))


def new(args: object, handle: Handle) -> InterPodAffinity:
    """Plugin factory (registry entry)."""
    if args is not None and not isinstance(args, InterPodAffinityArgs):
        raise ConfigError(f"want args to be of type InterPodAffinityArgs, got {type(args).__name__}")
    return InterPodAffinity(args, handle)
