"""NodeLabel: nodes must have all ``present_labels`` and none of the ``absent_labels``
(Filter), and score by how many preferred labels are present / absent (Score). Values are
ignored: only the label keys count.

Mirrors framework/plugins/nodelabel/node_label.go as of v1.21/v1.22, the plugin the legacy
Policy produced for ``labelsPresence`` predicate arguments and ``labelPreference``
priority arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from kubesched.config.args import NodeLabelArgs
from kubesched.errors import ConfigError
from kubesched.framework import (
    GVK,
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    NodeTable,
    Status,
)
from kubesched.framework.interfaces import BoolArray, IntArray
from kubesched.objects import Pod

NAME = "NodeLabel"
ERR_REASON_PRESENCE_VIOLATED = "node(s) didn't have the requested labels"


def _conflicts(present: Sequence[str], absent: Sequence[str], present_path: str, absent_path: str) -> list[str]:
    """validateNoConflict: a label both required present and absent."""
    where = {label: i for i, label in enumerate(present)}
    out = []
    for i, label in enumerate(absent):
        j = where.get(label)
        if j is not None:
            out.append(f'{present_path}[{j}]: Invalid value: "{label}": conflict with {absent_path}[{i}]')
    return out


def validate_args(args: NodeLabelArgs) -> None:
    """validation.ValidateNodeLabelArgs (raised as an aggregate: one error alone, several
    as ``[a, b]``)."""
    errs = _conflicts(args.present_labels, args.absent_labels, "presentLabels", "absentLabels")
    errs += _conflicts(args.present_labels_preference, args.absent_labels_preference,
                       "presentLabelsPreference", "absentLabelsPreference")
    if len(errs) == 1:
        raise ConfigError(errs[0])
    if errs:
        raise ConfigError("[" + ", ".join(errs) + "]")


class _RowIndex:
    """Per-row filter verdicts and scores; they depend only on the node's labels and the
    args, so they are valid for one ``node_version`` of the table."""

    __slots__ = ("version", "fits", "scores")

    def __init__(self, pl: NodeLabel, table: NodeTable) -> None:
        self.version = table.node_version
        n = table.size
        fits = np.ones(n, np.bool_)
        scores = np.zeros(n, np.int64)
        for i, node in enumerate(table.nodes[:n]):
            if node is None:
                continue
            fits[i] = pl.labels_fit(node.meta.labels)
            scores[i] = pl.labels_score(node.meta.labels)
        self.fits = fits
        self.scores = scores


class NodeLabel:
    name = NAME

    def __init__(self, handle: Handle | None, args: NodeLabelArgs | None = None) -> None:
        a = args if args is not None else NodeLabelArgs()
        validate_args(a)
        self.handle = handle
        self.present_labels = tuple(a.present_labels)
        self.absent_labels = tuple(a.absent_labels)
        self.present_labels_preference = tuple(a.present_labels_preference)
        self.absent_labels_preference = tuple(a.absent_labels_preference)
        # Plugins with the same args share the per-row cache (object ids could be reused).
        self._table_key = repr((NAME, self.present_labels, self.absent_labels, self.present_labels_preference,
                                self.absent_labels_preference))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Only a new node or a node label change can make a rejected pod fit (v1.22's
        EventsToRegister; best recollection)."""
        return [ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL))]

    # ---- the label rules
    def labels_fit(self, labels: Mapping[str, str]) -> bool:
        if not self.present_labels and not self.absent_labels:
            return True
        for label in self.present_labels:
            if label not in labels:
                return False
        for label in self.absent_labels:
            if label in labels:
                return False
        return True

    def labels_score(self, labels: Mapping[str, str]) -> int:
        """MaxNodeScore per satisfied preference, averaged over all preferences (Go int
        division of non-negative values); 0 without preferences."""
        size = len(self.present_labels_preference) + len(self.absent_labels_preference)
        if size == 0:
            return 0
        score = 0
        for label in self.present_labels_preference:
            if label in labels:
                score += MAX_NODE_SCORE
        for label in self.absent_labels_preference:
            if label not in labels:
                score += MAX_NODE_SCORE
        return score // size

    def _index(self, table: NodeTable) -> _RowIndex:
        idx = table.extras.get(self._table_key)
        if not isinstance(idx, _RowIndex) or idx.version != table.node_version:
            idx = _RowIndex(self, table)
            table.extras[self._table_key] = idx
        return idx

    # ---- Filter
    def preemption_fast_path(self, state: CycleState, pod: Pod) -> bool:
        """Filter reads only the node's labels: node-only for preemption's fast path."""
        return True

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Filter: UnschedulableAndUnresolvable when a present label is missing or an
        absent label is there (no labels configured: every node fits)."""
        node = node_info.node
        if node is None:
            return Status.as_error("node not found")
        if self.labels_fit(node.meta.labels):
            return None
        return Status.unresolvable(ERR_REASON_PRESENCE_VIOLATED)

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> BoolArray:
        out: BoolArray = self._index(table).fits[rows]
        return out

    # ---- Score
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        node = node_info.node
        assert node is not None
        return self.labels_score(node.meta.labels)

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> IntArray:
        out: IntArray = self._index(table).scores[rows]
        return out


def new(args: object, handle: Handle) -> NodeLabel:
    """Plugin factory (registry entry); ``args`` is a NodeLabelArgs or None (no labels)."""
    if args is not None and not isinstance(args, NodeLabelArgs):
        raise ConfigError(f"want args to be of type NodeLabelArgs, got {type(args).__name__}")
    return NodeLabel(handle, args)
