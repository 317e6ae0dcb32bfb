"""InterPodAffinity's PreFilter state and Filter checks (interpodaffinity/filtering.go)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from kubesched.framework import NodeTable, PodInfo
from kubesched.framework.interfaces import BoolArray, IntArray
from kubesched.objects import Node, Pod
from kubesched.plugins.interpodaffinity.common import (
    Counts,
    IncomingTerm,
    TopologyIndex,
    pod_matches_all_terms,
)

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"


def _update(m: Counts, labels: Mapping[str, str], key: str, value: int) -> None:
    """topologyToMatchedTermCount.update: entries that drop to zero are deleted."""
    tv = labels.get(key)
    if tv is None:
        return
    pair = (key, tv)
    n = m.get(pair, 0) + value
    if n == 0:
        m.pop(pair, None)
    else:
        m[pair] = n


# A column of topology value ids per row, and per value id whether its count is > 0
# (one extra False slot at the end, which the -1 "label absent" id selects).
Column = tuple[IntArray, BoolArray]


class BatchArrays:
    """Per check, the columns the batch filter reads: for each affinity term, each
    anti-affinity term, and each topology key of the existing pods' anti-affinity counts."""

    __slots__ = ("index", "affinity", "anti_affinity", "existing_anti_affinity")

    def __init__(self, index: TopologyIndex, affinity: list[Column], anti_affinity: list[Column],
                 existing_anti_affinity: list[Column]) -> None:
        self.index = index
        self.affinity = affinity
        self.anti_affinity = anti_affinity
        self.existing_anti_affinity = existing_anti_affinity

    @classmethod
    def from_state(cls, state: PreFilterState, table: NodeTable, index: TopologyIndex) -> BatchArrays:
        existing = state.existing_anti_affinity_counts
        return cls(index,
                   _columns(table, index, state.affinity_counts, [t.topology_key for t in state.affinity_terms]),
                   _columns(table, index, state.anti_affinity_counts,
                            [t.topology_key for t in state.anti_affinity_terms]),
                   _columns(table, index, existing, sorted({k for k, _ in existing})))


def _columns(table: NodeTable, index: TopologyIndex, counts: Counts, keys: list[str]) -> list[Column]:
    positive: dict[str, list[str]] = {}
    for (k, v), n in counts.items():
        if n > 0:
            positive.setdefault(k, []).append(v)
    built: dict[str, Column] = {}
    out: list[Column] = []
    for key in keys:
        col = built.get(key)
        if col is None:
            ids, values = index.column(table, key)
            pos = np.zeros(len(values) + 1, np.bool_)
            for v in positive.get(key, ()):
                i = values.get(v)
                if i is not None:
                    pos[i] = True
            col = built[key] = (ids, pos)
        out.append(col)
    return out


class PreFilterState:
    """filtering.go preFilterState: the three count maps, the incoming pod's resolved
    required terms and its namespace labels. AddPod/RemovePod mutate the maps, so
    ``clone`` copies them."""

    __slots__ = ("existing_anti_affinity_counts", "affinity_counts", "anti_affinity_counts", "pod",
                 "affinity_terms", "anti_affinity_terms", "namespace_labels", "matches_own_affinity", "batch")

    def __init__(self, pod: Pod, affinity_terms: tuple[IncomingTerm, ...], anti_affinity_terms: tuple[IncomingTerm, ...],
                 namespace_labels: Mapping[str, str], existing_anti_affinity_counts: Counts, affinity_counts: Counts,
                 anti_affinity_counts: Counts, batch: BatchArrays | None = None) -> None:
        self.pod = pod
        self.affinity_terms = affinity_terms
        self.anti_affinity_terms = anti_affinity_terms
        self.namespace_labels = namespace_labels
        self.existing_anti_affinity_counts = existing_anti_affinity_counts
        self.affinity_counts = affinity_counts
        self.anti_affinity_counts = anti_affinity_counts
        # podMatchesAllAffinityTerms(incoming terms, incoming pod), for the first-pod case.
        self.matches_own_affinity = pod_matches_all_terms(affinity_terms, pod)
        # The batch columns for these exact counts (PreFilter builds them from the plugin's
        # aggregates); dropped when AddPod/RemovePod change the counts.
        self.batch = batch

    def clone(self) -> PreFilterState:
        return PreFilterState(self.pod, self.affinity_terms, self.anti_affinity_terms, self.namespace_labels,
                              dict(self.existing_anti_affinity_counts), dict(self.affinity_counts),
                              dict(self.anti_affinity_counts), self.batch)

    def update_with_pod(self, pod_info: PodInfo, node: Node, multiplier: int) -> None:
        """preFilterState.updateWithPod: account for ``pod_info`` running on ``node``."""
        labels = node.meta.labels
        for t in pod_info.required_anti_affinity_terms:
            if t.matches(self.pod, self.namespace_labels):
                _update(self.existing_anti_affinity_counts, labels, t.topology_key, multiplier)
        other = pod_info.pod
        if pod_matches_all_terms(self.affinity_terms, other):
            for it in self.affinity_terms:
                _update(self.affinity_counts, labels, it.topology_key, multiplier)
        for it in self.anti_affinity_terms:
            if it.matches(other):
                _update(self.anti_affinity_counts, labels, it.topology_key, multiplier)
        self.batch = None

    # ---- per node (satisfyPodAffinity, satisfyPodAntiAffinity, satisfyExistingPodsAntiAffinity)
    def satisfies_pod_affinity(self, labels: Mapping[str, str]) -> bool:
        pods_exist = True
        counts = self.affinity_counts
        for t in self.affinity_terms:
            v = labels.get(t.topology_key)
            if v is None:
                # All topology labels must exist on the node.
                return False
            if counts.get((t.topology_key, v), 0) <= 0:
                pods_exist = False
        if not pods_exist:
            # The first pod of a group with affinity to itself: allowed when no pod in the
            # cluster matches the terms and the pod matches its own terms.
            return not counts and self.matches_own_affinity
        return True

    def satisfies_pod_anti_affinity(self, labels: Mapping[str, str]) -> bool:
        counts = self.anti_affinity_counts
        if counts:
            for t in self.anti_affinity_terms:
                v = labels.get(t.topology_key)
                if v is not None and counts.get((t.topology_key, v), 0) > 0:
                    return False
        return True

    def satisfies_existing_pods_anti_affinity(self, labels: Mapping[str, str]) -> bool:
        counts = self.existing_anti_affinity_counts
        if counts:
            for pair in labels.items():
                if counts.get(pair, 0) > 0:
                    return False
        return True

    # ---- batch: the same three checks over table rows
    def batch_checks(self, table: NodeTable, index: TopologyIndex, rows: IntArray) -> tuple[BoolArray, BoolArray,
                                                                                             BoolArray]:
        """Per row: (affinity ok, anti-affinity ok, existing anti-affinity ok)."""
        arrays = self.batch
        if arrays is None or arrays.index is not index:
            arrays = self.batch = BatchArrays.from_state(self, table, index)
        n = len(rows)
        affinity_ok = np.ones(n, np.bool_)
        if self.affinity_terms:
            exist = np.ones(n, np.bool_)
            for ids, pos in arrays.affinity:
                r = ids[rows]
                affinity_ok &= r >= 0
                exist &= pos[r]
            if not (not self.affinity_counts and self.matches_own_affinity):
                affinity_ok &= exist
        anti_ok = np.ones(n, np.bool_)
        if self.anti_affinity_counts:
            for ids, pos in arrays.anti_affinity:
                anti_ok &= ~pos[ids[rows]]
        existing_ok = np.ones(n, np.bool_)
        for ids, pos in arrays.existing_anti_affinity:
            existing_ok &= ~pos[ids[rows]]
        return affinity_ok, anti_ok, existing_ok
