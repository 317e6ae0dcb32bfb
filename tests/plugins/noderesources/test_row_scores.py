"""Scores kept per table row for a pod request vector (resource_allocation.RowScores) equal the
per-node scores after every kind of cluster change: pods bound and deleted (a few rows, or
more than RowScores.PER_ROW at once), nodes resized, added and removed, a change log outrun,
the same templates asked again and again over row subsets in random order."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kubesched._runtime.handle import FrameworkHandle
from kubesched.features import features_for
from kubesched.framework import CycleState, NodeTable
from kubesched.framework.nodetable import identity_rows
from kubesched.objects import Pod
from kubesched.plugins.noderesources import BalancedAllocation, Fit
from kubesched.plugins.noderesources.resource_allocation import RowScores

from .test_batch_equivalence import BALANCED_VARIANTS, fit_variants, random_node, random_pod


def _check(plugins: list[Fit | BalancedAllocation], h: FrameworkHandle, incoming: Pod, rng: random.Random) -> None:
    nis = list(h.snapshot.list())
    table = h.snapshot.table
    subsets = [nis, rng.sample(nis, max(1, len(nis) // 3))]
    if nis and all(ni.index == i for i, ni in enumerate(nis)):
        subsets.append(nis)  # as consecutive rows (a slice of the identity rows)
    for j, subset in enumerate(subsets):
        rows = identity_rows(len(subset)) if j == 2 else np.array([ni.index for ni in subset], np.int64)
        for p in plugins:
            state = CycleState()
            p.pre_score(state, incoming, subset)
            want = [p.score(state, incoming, ni) for ni in subset]
            got = p.score_batch(state, incoming, table, rows)
            assert got.tolist() == want, p.args


@pytest.mark.parametrize("kube_version", ["1.30", "1.36"], ids=lambda v: f"under {v}")
@pytest.mark.parametrize("seed", range(40), ids=lambda s: f"random cluster {s}: kept scores equal per-node scores")
def test_kept_scores_follow_every_cluster_change(seed: int, kube_version: str) -> None:
    rng = random.Random(seed)
    nodes = [random_node(rng, i) for i in range(rng.randint(1, 30))]
    h = FrameworkHandle.for_nodes(nodes, [], features=features_for(kube_version))
    plugins: list[Fit | BalancedAllocation] = [Fit(a, h) for a in fit_variants(rng)]
    plugins += [BalancedAllocation(a, h) for a in BALANCED_VARIANTS]
    templates = [random_pod(rng, f"template-{t}") for t in range(3)]
    bound: list[Pod] = []
    next_node = len(nodes)
    for step in range(25):
        _check(plugins, h, rng.choice(templates), rng)
        change = rng.random()
        if change < 0.4:  # a few pods bound (or, now and then, more than PER_ROW rows at once)
            many = RowScores.PER_ROW + rng.randint(1, 10) if rng.random() < 0.3 else rng.randint(1, 3)
            for _ in range(many):
                names = [ni.name for ni in h.snapshot.list()]
                if not names:
                    break
                p = random_pod(rng, f"bound-{step}-{len(bound)}", rng.choice(names))
                h.cache.add_pod(p)
                bound.append(p)
        elif change < 0.6 and bound:
            h.cache.remove_pod(bound.pop(rng.randrange(len(bound))))
        elif change < 0.75:
            i = rng.randrange(next_node)
            if h.snapshot.get(f"node-{i}") is not None:
                h.cache.update_node(random_node(rng, i))
        elif change < 0.85:
            h.cache.add_node(random_node(rng, next_node))
            next_node += 1
        elif change < 0.95 and len(h.snapshot.list()) > 1:
            h.cache.remove_node(rng.choice(h.snapshot.list()).name)
            bound = [p for p in bound if h.snapshot.get(p.node_name) is not None]
        else:
            # A pod bound, then the change log outruns the kept position: every row is
            # scored again.
            p = random_pod(rng, f"bound-{step}-{len(bound)}", rng.choice(h.snapshot.list()).name)
            h.cache.add_pod(p)
            bound.append(p)
            table: NodeTable = h.snapshot.table
            for _ in range(2 * table._log_limit() + 1):
                table._touch(0)


def test_a_vector_asked_once_is_not_kept() -> None:
    """The first pod of a vector is scored on its rows only (a full table is scored from the
    second on)."""
    h = FrameworkHandle.for_nodes([random_node(random.Random(1), i) for i in range(10)], [])
    table = h.snapshot.table
    calls: list[int] = []

    def score_rows(rows: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
        calls.append(len(rows))
        return np.zeros(len(rows), np.int64)

    kept = RowScores()
    rows = np.array([3, 1], np.int64)
    kept.scores(table, rows, ("v",), score_rows, lambda i: 0)
    kept.scores(table, rows, ("v",), score_rows, lambda i: 0)
    kept.scores(table, rows, ("v",), score_rows, lambda i: 0)
    assert calls == [2, 10]
