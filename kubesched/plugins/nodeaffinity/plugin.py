"""NodeAffinity: the node must match the pod's nodeSelector and required node affinity, and
the scheduler-enforced addedAffinity (PreFilter/Filter); matching preferred terms add their
weights (PreScore/Score/NormalizeScore).

Mirrors framework/plugins/nodeaffinity/node_affinity.go, with the matching of
component-helpers/scheduling/corev1/nodeaffinity (kubesched.plugins.helpers.nodeaffinity).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.config.args import NodeAffinityArgs
from kubesched.errors import ConfigError
from kubesched.features import DEFAULT_FEATURES
from kubesched.framework import (
    GVK,
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    NodeScore,
    NodeTable,
    PreFilterExtensions,
    PreFilterResult,
    QueueingHint,
    StateKey,
    Status,
)
from kubesched.framework.interfaces import BoolArray, IntArray
from kubesched.framework.nodetable import take_rows
from kubesched.framework.signers import (
    NODE_AFFINITY_SIGNER_NAME,
    NODE_SELECTOR_SIGNER_NAME,
    SignFragment,
    node_affinity_signer,
)
from kubesched.objects import Node, NodeSelector, NodeSelectorTerm, Pod, PreferredSchedulingTerm
from kubesched.plugins.helpers.nodeaffinity import (
    RequiredNodeAffinity,
    aggregate_error_message,
    node_selector_matches,
    node_selector_matches_labels,
    term_matches,
    term_parse_errors,
)
from kubesched.plugins.helpers.normalize import default_normalize_score, default_normalize_score_array

NAME = "NodeAffinity"
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"
_OBJECT_NAME_FIELD = "metadata.name"
# filter_batch_status codes -> the statuses Filter returns (0 = fits).
FILTER_STATUSES: tuple[Status | None, ...] = (
    None, Status.unresolvable(ERR_REASON_ENFORCED), Status.unresolvable(ERR_REASON_POD))
_TABLE_KEY = NAME

# A parsed preferred term: (weight, term); weight-0 and empty terms are already dropped.
WeightedTerm = tuple[int, NodeSelectorTerm]


@dataclass(frozen=True, slots=True)
class PreFilterState:
    """The pod's nodeSelector + required affinity. Independent of other pods: clone is
    the identity, as upstream."""

    required: RequiredNodeAffinity

    def clone(self) -> PreFilterState:
        return self


@dataclass(frozen=True, slots=True)
class PreScoreState:
    """The pod's parsed preferred terms, None when the pod has none."""

    preferred: tuple[WeightedTerm, ...] | None

    def clone(self) -> PreScoreState:
        return self


_PRE_FILTER_KEY: StateKey[PreFilterState] = StateKey("PreFilter" + NAME)
_PRE_SCORE_KEY: StateKey[PreScoreState] = StateKey("PreScore" + NAME)


def parse_preferred_terms(terms: Sequence[PreferredSchedulingTerm]) -> tuple[tuple[WeightedTerm, ...], tuple[str, ...]]:
    """nodeaffinity.NewPreferredSchedulingTerms: terms with weight 0 or an empty preference
    are dropped; returns the kept terms and the parse errors of the others."""
    kept: list[WeightedTerm] = []
    errs: list[str] = []
    for i, t in enumerate(terms):
        if t.weight == 0 or t.preference.is_empty():
            continue
        e = term_parse_errors(t.preference, f"[{i}]")
        if e:
            errs.extend(e)
        else:
            kept.append((t.weight, t.preference))
    return tuple(kept), tuple(errs)


def preferred_score(terms: Sequence[WeightedTerm], labels: Mapping[str, str], node_name: str) -> int:
    """PreferredSchedulingTerms.Score: the sum of the weights of the matching terms."""
    score = 0
    for weight, term in terms:
        if term_matches(term, labels, node_name):
            score += weight
    return score


def _pod_preferred_terms(pod: Pod) -> list[PreferredSchedulingTerm] | None:
    aff = pod.affinity
    na = aff.node_affinity if aff is not None else None
    # An absent and an empty preferred list cannot be told apart after parsing; both count
    # as "no preferred affinity" (an empty list would only score 0 everywhere).
    if na is None or not na.preferred:
        return None
    return list(na.preferred)


def _pod_required(pod: Pod) -> NodeSelector | None:
    aff = pod.affinity
    na = aff.node_affinity if aff is not None else None
    return na.required if na is not None else None


class _RowResults:
    """Per-row results of the node-only predicates a batch asks for, over every row of the
    table, for one ``table.node_version``: keyed by the selector / preferred terms, least
    recently used evicted. A selector is evaluated once per row per node version (every
    node has its own hostname label, so grouping rows by label set would not help); each
    cycle then only indexes the cached array. The first batch over a few rows only for a
    key (e.g. a DaemonSet pod's matchFields naming its node) evaluates just those rows: a
    key is cached when it is asked for again."""

    __slots__ = ("version", "size", "results", "seen")

    def __init__(self, table: NodeTable) -> None:
        self.version = table.node_version
        self.size = table.size
        self.results: OrderedDict[Hashable, np.ndarray[Any, Any]] = OrderedDict()
        self.seen: OrderedDict[Hashable, None] = OrderedDict()

    def get(self, table: NodeTable, rows: IntArray, key: Hashable, dtype: type[np.generic],
            fn: Callable[[Mapping[str, str], str], int | bool]) -> np.ndarray[Any, Any]:
        """``fn(labels, name)`` of the node on each of ``rows``."""
        arr = self.results.get(key)
        if arr is not None:
            self.results.move_to_end(key)
            return take_rows(arr, rows)
        nodes = table.nodes
        if len(rows) * 8 < self.size and key not in self.seen:
            self.seen[key] = None
            if len(self.seen) > _MAX_ROW_RESULTS:
                self.seen.popitem(last=False)
            return np.fromiter((fn(node.meta.labels, node.meta.name) if node is not None else 0
                                for node in map(nodes.__getitem__, rows.tolist())), dtype, len(rows))
        arr = np.fromiter((fn(node.meta.labels, node.meta.name) if node is not None else 0
                           for node in nodes[: self.size]), dtype, self.size)
        self.results[key] = arr
        if len(self.results) > _MAX_ROW_RESULTS:
            self.results.popitem(last=False)
        return take_rows(arr, rows)


_MAX_ROW_RESULTS = 64


def _row_results(table: NodeTable) -> _RowResults:
    idx = table.extras.get(_TABLE_KEY)
    if not isinstance(idx, _RowResults) or idx.version != table.node_version or idx.size != table.size:
        idx = _RowResults(table)
        table.extras[_TABLE_KEY] = idx
    return idx


def required_match_or_error(required: RequiredNodeAffinity, node: Node) -> bool | None:
    """RequiredNodeAffinity.Match with its error: the nodeSelector, then the terms of the
    required affinity (a LazyErrorNodeSelector); None when no term matched and some term has
    parse errors (Match then returns them), which a queueing hint answers with Queue."""
    labels, name = node.meta.labels, node.meta.name
    if required.label_selector:
        for k, v in required.label_selector.items():
            if labels.get(k) != v:
                return False
    selector = required.node_selector
    if selector is None:
        return True
    has_errors = False
    for term in selector.terms:
        if term.is_empty():
            continue
        if term_parse_errors(term):
            has_errors = True
            continue
        if term_matches(term, labels, name):
            return True
    return None if has_errors else False


def _required_key(required: RequiredNodeAffinity) -> Hashable:
    sel = required.label_selector
    return "required", tuple(sorted(sel.items())) if sel else None, required.node_selector


class NodeAffinity:
    name = NAME

    def __init__(self, handle: Handle | None = None, args: NodeAffinityArgs | None = None) -> None:
        self.handle = handle
        features = handle.features if handle is not None else DEFAULT_FEATURES
        self._queueing_hints = features.enabled("SchedulerQueueingHints")
        args = args or NodeAffinityArgs()
        self.added_node_selector: NodeSelector | None = None
        self.added_pref_terms: tuple[WeightedTerm, ...] | None = None
        added = args.added_affinity
        if added is not None:
            if added.required is not None:
                errs = [e for i, t in enumerate(added.required.terms) if not t.is_empty()
                        for e in term_parse_errors(t, f"nodeSelectorTerms[{i}]")]
                if errs:
                    raise ConfigError("parsing addedAffinity.requiredDuringSchedulingIgnoredDuringExecution: "
                                      + aggregate_error_message(errs))
                self.added_node_selector = added.required
            if added.preferred:
                terms, perrs = parse_preferred_terms(added.preferred)
                if perrs:
                    raise ConfigError("parsing addedAffinity.preferredDuringSchedulingIgnoredDuringExecution: "
                                      + aggregate_error_message(perrs))
                self.added_pref_terms = terms

    def sign_pod(self, pod: Pod) -> list[SignFragment]:
        """SignPod: the node affinity (canonical: NodeAffinitySigner) and the nodeSelector (a
        nil one and an empty one differ, as they do for PreFilter)."""
        selector = dict(pod.node_selector) if pod.node_selector is not None else None
        return [SignFragment(NODE_AFFINITY_SIGNER_NAME, node_affinity_signer(pod)),
                SignFragment(NODE_SELECTOR_SIGNER_NAME, selector)]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """NodeAffinity.EventsToRegister: any Node Add/Update without queueing hints (v1.30);
        with them (1.36, no preCheck) Node Add | UpdateNodeLabel, hinted."""
        if not self._queueing_hints:
            return [ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE))]
        return [ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                                     self.is_schedulable_after_node_change)]

    def is_schedulable_after_node_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterNodeChange: Skip when the new node fails addedAffinity or the
        pod's required affinity; an added matching node Queues; an update Queues only when
        the node did not match before (unmatched -> matched). A parse error: Queue."""
        if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
            return QueueingHint.QUEUE
        if self.added_node_selector is not None and not node_selector_matches(self.added_node_selector, new):
            return QueueingHint.QUEUE_SKIP
        required = RequiredNodeAffinity(pod)
        matched = required_match_or_error(required, new)
        if matched is None:
            return QueueingHint.QUEUE
        if not matched:
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        was_matched = required_match_or_error(required, old)
        if was_matched is None:
            return QueueingHint.QUEUE
        if was_matched:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    # ---- PreFilter
    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status | None]:
        """NodeAffinity.PreFilter: Skip when there is nothing to check; a PreFilterResult when
        every required term names nodes with ``matchFields metadata.name In``."""
        required = _pod_required(pod)
        # Skip only for a nil nodeSelector: an explicitly empty one does not skip.
        if required is None and self.added_node_selector is None and pod.node_selector is None:
            return None, Status.skip()
        state.write(_PRE_FILTER_KEY, PreFilterState(RequiredNodeAffinity(pod)))
        if required is None or not required.terms:
            return None, None
        node_names: set[str] | None = None
        for term in required.terms:
            term_names: set[str] | None = None
            for r in term.match_fields:
                if r.key == _OBJECT_NAME_FIELD and r.operator == "In":
                    # Requirements of a term are ANDed: intersect.
                    s = set(r.values)
                    term_names = s if term_names is None else term_names & s
            if term_names is None:
                # Terms are ORed: one term without a node name admits every node.
                return None, None
            node_names = term_names if node_names is None else node_names | term_names
        if node_names is not None and not node_names:
            return None, Status.unresolvable(ERR_REASON_CONFLICT)
        if node_names:
            return PreFilterResult(frozenset(node_names)), None
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        # The state does not depend on other pods.
        return None

    # ---- Filter
    def _required(self, state: CycleState, pod: Pod) -> RequiredNodeAffinity:
        s = state.get(_PRE_FILTER_KEY)
        # Fallback when PreFilter did not run (upstream does the same).
        return s.required if s is not None else RequiredNodeAffinity(pod)

    def preemption_fast_path(self, state: CycleState, pod: Pod) -> bool:
        """Filter reads only the node's labels and name (and its PreFilter state, which no
        AddPod/RemovePod changes): node-only for preemption's fast path."""
        return True

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """NodeAffinity.Filter: addedAffinity first, then nodeSelector + required affinity."""
        node = node_info.node
        assert node is not None
        labels, name = node.meta.labels, node.meta.name
        if self.added_node_selector is not None and not node_selector_matches_labels(
                self.added_node_selector, labels, name):
            return Status.unresolvable(ERR_REASON_ENFORCED)
        if not self._required(state, pod).match_labels(labels, name):
            return Status.unresolvable(ERR_REASON_POD)
        return None

    def filter_batch_status(self, state: CycleState, pod: Pod, table: NodeTable,
                            rows: IntArray) -> tuple[IntArray, tuple[Status | None, ...]]:
        """Per row, the index in :data:`FILTER_STATUSES` of the status ``filter`` returns
        (addedAffinity is checked first)."""
        required = self._required(state, pod)
        results = _row_results(table)
        codes = np.where(results.get(table, rows, _required_key(required), np.bool_, required.match_labels), 0, 2)
        added = self.added_node_selector
        if added is not None:
            added_ok = results.get(table, rows, ("added", added), np.bool_,
                                   lambda labels, name: node_selector_matches_labels(added, labels, name))
            codes[~added_ok] = 1
        out: IntArray = codes.astype(np.int64, copy=False)
        return out, FILTER_STATUSES

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> BoolArray:
        required = self._required(state, pod)
        results = _row_results(table)
        ok: BoolArray = results.get(table, rows, _required_key(required), np.bool_, required.match_labels)
        added = self.added_node_selector
        if added is not None:
            ok &= results.get(table, rows, ("added", added), np.bool_,
                              lambda labels, name: node_selector_matches_labels(added, labels, name))
        return ok

    # ---- Score
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """NodeAffinity.PreScore: Skip when neither the pod nor addedAffinity has preferred
        terms; an invalid pod preferred term is an error (NewPreferredSchedulingTerms)."""
        if not nodes:
            return None
        raw = _pod_preferred_terms(pod)
        preferred: tuple[WeightedTerm, ...] | None = None
        if raw is not None:
            preferred, errs = parse_preferred_terms(raw)
            if errs:
                return Status.as_error(aggregate_error_message(errs))
        if preferred is None and self.added_pref_terms is None:
            return Status.skip()
        state.write(_PRE_SCORE_KEY, PreScoreState(preferred))
        return None

    def _score_terms(self, state: CycleState, pod: Pod) -> tuple[WeightedTerm, ...]:
        s = state.get(_PRE_SCORE_KEY)
        if s is not None:
            preferred = s.preferred or ()
        else:
            # Fallback when PreScore did not run; invalid terms then simply never match.
            raw = _pod_preferred_terms(pod)
            preferred = parse_preferred_terms(raw)[0] if raw is not None else ()
        return (self.added_pref_terms or ()) + preferred

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """NodeAffinity.Score: addedAffinity's then the pod's matching preferred weights."""
        node = node_info.node
        assert node is not None
        return preferred_score(self._score_terms(state, pod), node.meta.labels, node.meta.name)

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> IntArray:
        terms = self._score_terms(state, pod)
        if not terms:
            return np.zeros(len(rows), np.int64)
        out: IntArray = _row_results(table).get(table, rows, ("preferred", terms), np.int64,
                                                lambda labels, name: preferred_score(terms, labels, name))
        return out

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return None

    def normalize_score_batch(self, state: CycleState, pod: Pod, scores: IntArray) -> IntArray:
        return default_normalize_score_array(MAX_NODE_SCORE, False, scores)


def new(args: object, handle: Handle) -> NodeAffinity:
    """Plugin factory (registry entry); ``args`` is a NodeAffinityArgs or None (defaults)."""
    if args is not None and not isinstance(args, NodeAffinityArgs):
        raise ConfigError(f"args are not of type NodeAffinityArgs, got {type(args).__name__}")
    return NodeAffinity(handle, args)
