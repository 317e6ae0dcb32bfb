"""helper.BuildBrokenLinearFunction (framework/plugins/helper/shape_score.go) and the shape
handling around it shared by NodeResourcesFit's and the legacy RequestedToCapacityRatio
scoring and by VolumeBinding's capacity scoring."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from kubesched.config.args import MAX_CUSTOM_PRIORITY_SCORE, UtilizationShapePoint
from kubesched.framework import MAX_NODE_SCORE
from kubesched.plugins.helpers.gomath import go_div

# maxUtilization (requested_to_capacity_ratio.go, volumebinding/scorer.go).
MAX_UTILIZATION = 100


def scale_shape(shape: Sequence[UtilizationShapePoint]) -> tuple[tuple[int, int], ...]:
    """The shape as (utilization, score) points, scores scaled from 0..MaxCustomPriorityScore
    to 0..MaxNodeScore, as both scorers do before building the broken linear function."""
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    return tuple((p.utilization, p.score * scale) for p in shape)


def broken_linear(shape: Sequence[tuple[int, int]], p: int) -> int:
    """The broken linear function through the (utilization, score) points of ``shape`` at
    ``p``: constant outside them, Go int64 division between them (truncation toward zero;
    slopes may be negative)."""
    for i, (util, score) in enumerate(shape):
        if p <= util:
            if i == 0:
                return score
            prev_util, prev_score = shape[i - 1]
            return prev_score + go_div((score - prev_score) * (p - prev_util), util - prev_util)
    return shape[-1][1]


def broken_linear_table(shape: Sequence[tuple[int, int]]) -> npt.NDArray[np.int64]:
    """broken_linear at every integer utilization 0..MAX_UTILIZATION (index = utilization),
    for batch scoring where the utilization is always such an integer."""
    return np.array([broken_linear(shape, u) for u in range(MAX_UTILIZATION + 1)], np.int64)


__all__ = ["MAX_UTILIZATION", "broken_linear", "broken_linear_table", "scale_shape"]
