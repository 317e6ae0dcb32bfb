"""helper.DefaultNormalizeScore (framework/plugins/helper/normalize_score.go)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from kubesched.framework import MAX_NODE_SCORE, NodeScore


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> None:
    """Scale to [0, max_priority] by the maximum; ``reverse`` flips (max - score).
    All-zero scores stay 0, or become max_priority when reversed."""
    max_count = 0
    for s in scores:
        if s.score > max_count:
            max_count = s.score
    if max_count == 0:
        if reverse:
            for s in scores:
                s.score = max_priority
        return
    for s in scores:
        score = max_priority * s.score // max_count
        s.score = max_priority - score if reverse else score


def default_normalize_score_array(max_priority: int, reverse: bool, scores: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """default_normalize_score over an array (same results)."""
    if scores.size == 0:
        return scores
    max_count = int(scores.max())
    if max_count <= 0:
        if reverse:
            return np.full_like(scores, max_priority)
        return scores
    out = (max_priority * scores) // max_count
    return max_priority - out if reverse else out


__all__ = ["MAX_NODE_SCORE", "default_normalize_score", "default_normalize_score_array"]
