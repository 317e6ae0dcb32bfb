"""InterPodAffinity's PreScore state, Score and NormalizeScore (interpodaffinity/scoring.go)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from kubesched.framework import MAX_NODE_SCORE, NodeScore, NodeTable
from kubesched.framework.interfaces import IntArray
from kubesched.plugins.interpodaffinity.common import TopologyIndex

# topologyKey -> topology value -> score (scoring.go: scoreMap).
ScoreMap = dict[str, dict[str, int]]


class PreScoreState:
    """scoring.go preScoreState: the accumulated topology scores. Never mutated after
    PreScore, so ``clone`` returns the same object (as upstream)."""

    __slots__ = ("topology_score", "_columns")

    def __init__(self, topology_score: ScoreMap) -> None:
        self.topology_score = topology_score
        self._columns: tuple[TopologyIndex, list[tuple[IntArray, IntArray]]] | None = None

    def clone(self) -> PreScoreState:
        return self

    def score(self, labels: Mapping[str, str]) -> int:
        """Score: Σ over the topology keys the node has of the score of its value."""
        total = 0
        for key, values in self.topology_score.items():
            v = labels.get(key)
            if v is not None:
                total += values.get(v, 0)
        return total

    def score_rows(self, table: NodeTable, index: TopologyIndex, rows: IntArray) -> IntArray:
        cached = self._columns
        if cached is None or cached[0] is not index:
            cols: list[tuple[IntArray, IntArray]] = []
            for key, values in self.topology_score.items():
                ids, value_ids = index.column(table, key)
                per_value = np.zeros(len(value_ids) + 1, np.int64)  # last slot: label absent
                for v, s in values.items():
                    i = value_ids.get(v)
                    if i is not None:
                        per_value[i] = s
                cols.append((ids, per_value))
            cached = self._columns = (index, cols)
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
