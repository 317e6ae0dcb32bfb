"""InterPodAffinity's PreScore state, Score and NormalizeScore (interpodaffinity/scoring.go)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from kubesched.framework import MAX_NODE_SCORE, NodeScore, NodeTable
from kubesched.framework.interfaces import IntArray
from kubesched.plugins.interpodaffinity.common import Counts, TopologyIndex

# Per topology key: (value id per table row, score per value id; last slot = no such value).
ScoreColumns = tuple[TopologyIndex, list[tuple[IntArray, IntArray]]]


class PreScoreState:
    """scoring.go preScoreState. ``topology_score`` holds scoreMap flattened to
    (topologyKey, value) -> score and ``keys`` its topology keys. Never mutated after
    PreScore, so ``clone`` returns the same object (as upstream)."""

    __slots__ = ("topology_score", "keys", "columns")

    def __init__(self, topology_score: Counts, keys: list[str], columns: ScoreColumns | None = None) -> None:
        self.topology_score = topology_score
        self.keys = keys
        self.columns = columns

    def clone(self) -> PreScoreState:
        return self

    def score(self, labels: Mapping[str, str]) -> int:
        """Score: Σ over the topology keys the node has of the score of its value."""
        total = 0
        scores = self.topology_score
        for key in self.keys:
            v = labels.get(key)
            if v is not None:
                total += scores.get((key, v), 0)
        return total

    def score_rows(self, table: NodeTable, index: TopologyIndex, rows: IntArray) -> IntArray:
        cached = self.columns
        if cached is None or cached[0] is not index:
            cols: list[tuple[IntArray, IntArray]] = []
            for key in self.keys:
                ids, value_ids = index.column(table, key)
                per_value = np.zeros(len(value_ids) + 1, np.int64)
                for (k, v), s in self.topology_score.items():
                    if k == key:
                        i = value_ids.get(v)
                        if i is not None:
                            per_value[i] = s
                cols.append((ids, per_value))
            cached = self.columns = (index, cols)
        out = np.zeros(len(rows), np.int64)
        for ids, per_value in cached[1]:
            out += per_value[ids[rows]]
        return out


def normalize_scores(scores: list[NodeScore]) -> None:
    """NormalizeScore once the topology score is known to be non-empty: min-max scaling,
    float64(MaxNodeScore) * (float64(s-min) / float64(max-min)) truncated; all 0 if max == min."""
    if not scores:
        return
    lo = min(s.score for s in scores)
    hi = max(s.score for s in scores)
    diff = hi - lo
    for s in scores:
        f = 0.0
        if diff > 0:
            f = float(MAX_NODE_SCORE) * (float(s.score - lo) / float(diff))
        s.score = int(f)


def normalize_score_array(scores: IntArray) -> IntArray:
    """normalize_scores over an array (same float operations in the same order)."""
    if scores.size == 0:
        return scores
    lo = int(scores.min())
    diff = int(scores.max()) - lo
    if diff <= 0:
        return np.zeros_like(scores)
    f = float(MAX_NODE_SCORE) * ((scores - lo).astype(np.float64) / float(diff))
    out: IntArray = f.astype(np.int64)
    return out
