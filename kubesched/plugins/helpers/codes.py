"""Grouping per-node codes (one int per node for each distinct outcome, e.g. a set of
insufficient resources) so that one Status is built per group and shared by its nodes."""

from __future__ import annotations

import numpy as np

from kubesched.framework.interfaces import IntArray


def group_codes(codes: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """``np.unique(codes, return_index=True, return_inverse=True)`` for a 1-D array: the
    distinct codes ascending, the position where each first occurs, and each element's group —
    without the sort when every element has the same code, the usual case in a preemption wave
    (every node short of the same resource)."""
    if codes.size and codes.min() == codes.max():
        return codes[:1], np.zeros(1, np.int64), np.zeros(len(codes), np.int64)
    uniq, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    return uniq, first.astype(np.int64, copy=False), inverse.reshape(-1).astype(np.int64, copy=False)
