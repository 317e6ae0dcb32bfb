"""filter_batch / score_batch equal the per-node methods on every node, over random
clusters: extended and hugepages resources (present on some nodes only, sometimes 0),
zero or missing allocatable, over-committed nodes, full pod slots, init containers,
sidecars, overhead, pods added and removed after the table was built, and row subsets in
random order."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from kubesched._runtime.handle import FrameworkHandle
from kubesched.config.args import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from kubesched.features import features_for
from kubesched.framework import CycleState
from kubesched.objects import Node, Pod
from kubesched.plugins.noderesources import BalancedAllocation, Fit

from .util import cluster, node, pod

SCALARS = ["example.com/gpu", "nvidia.com/gpu", "hugepages-2Mi", "kubernetes.io/batch", "attachable-volumes-csi-x"]


def _cpu(rng: random.Random, big: bool) -> str:
    return rng.choice(["0", "1", "2", "4", "16", "64", "64", "1500m"] if big else
                      ["0", "1m", "100m", "250m", "1", "1500m", "2", "4"])


def _mem(rng: random.Random, big: bool) -> str:
    return rng.choice(["0", "1000", "1Gi", "16Gi", "64Gi", "64Gi", "3Gi"] if big else
                      ["0", "1", "1000", "128Mi", "200Mi", "1Gi", "3Gi", "16Gi"])


def random_node(rng: random.Random, i: int) -> Node:
    res: dict[str, Any] = {}
    if rng.random() < 0.95:
        res["cpu"] = _cpu(rng, True)
    if rng.random() < 0.95:
        res["memory"] = _mem(rng, True)
    if rng.random() < 0.5:
        res["ephemeral-storage"] = rng.choice(["0", "1Gi", "10Gi", "100Gi", "500Gi"])
    if rng.random() < 0.95:
        res["pods"] = str(rng.choice([0, 1, 2, 3, 5, 110, 110, 110]))
    for s in SCALARS:
        if rng.random() < 0.5:
            res[s] = str(rng.choice([0, 1, 2, 4, 8, 16]))
    return node(f"node-{i}", res)


def random_requests(rng: random.Random) -> dict[str, str]:
    r: dict[str, str] = {}
    if rng.random() < 0.6:
        r["cpu"] = _cpu(rng, False)
    if rng.random() < 0.6:
        r["memory"] = _mem(rng, False)
    if rng.random() < 0.2:
        r["ephemeral-storage"] = rng.choice(["0", "1Gi", "5Gi", "50Gi"])
    if rng.random() < 0.15:
        r[rng.choice(SCALARS)] = str(rng.choice([0, 1, 2, 3]))
    if rng.random() < 0.05:
        r["pods"] = "3"
    return r


def random_pod(rng: random.Random, name: str, node_name: str = "") -> Pod:
    containers = [random_requests(rng) for _ in range(rng.choice([1, 1, 2, 3]))]
    init = [random_requests(rng) for _ in range(rng.choice([0, 0, 1, 2, 3]))]
    sidecars = [i for i in range(len(init)) if rng.random() < 0.4]
    overhead = {"cpu": "10m", "memory": "20Mi"} if rng.random() < 0.15 else None
    return pod(*containers, init=init, sidecars=sidecars, overhead=overhead, node=node_name, name=name)


def _shape(rng: random.Random) -> tuple[UtilizationShapePoint, ...]:
    utils = sorted(rng.sample(range(0, 101), rng.choice([1, 2, 3, 4])))
    return tuple(UtilizationShapePoint(u, rng.randint(0, 10)) for u in utils)


def fit_variants(rng: random.Random) -> list[NodeResourcesFitArgs]:
    many = (ResourceSpec("cpu", 3), ResourceSpec("memory", 1), ResourceSpec("ephemeral-storage", 2),
            ResourceSpec("example.com/gpu", 5), ResourceSpec("hugepages-2Mi", 1), ResourceSpec("pods", 1),
            ResourceSpec("storage", 1), ResourceSpec("kubernetes.io/batch", 7))
    return [
        NodeResourcesFitArgs(),
        NodeResourcesFitArgs(ignored_resources=("example.com/gpu", "kubernetes.io/batch"),
                             ignored_resource_groups=("nvidia.com",),
                             scoring_strategy=ScoringStrategy(MOST_ALLOCATED, many)),
        NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(LEAST_ALLOCATED, many)),
        NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(
            REQUESTED_TO_CAPACITY_RATIO, many, RequestedToCapacityRatioParam(_shape(rng)))),
        NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(
            REQUESTED_TO_CAPACITY_RATIO, (ResourceSpec("cpu", 1), ResourceSpec("memory", 2)),
            RequestedToCapacityRatioParam(_shape(rng)))),
    ]


BALANCED_VARIANTS = [
    NodeResourcesBalancedAllocationArgs(),
    NodeResourcesBalancedAllocationArgs((ResourceSpec("cpu", 1), ResourceSpec("memory", 1),
                                         ResourceSpec("example.com/gpu", 1))),
    NodeResourcesBalancedAllocationArgs((ResourceSpec("cpu", 1), ResourceSpec("memory", 1),
                                         ResourceSpec("ephemeral-storage", 1), ResourceSpec("nvidia.com/gpu", 1),
                                         ResourceSpec("hugepages-2Mi", 1), ResourceSpec("pods", 1))),
    NodeResourcesBalancedAllocationArgs((ResourceSpec("hugepages-2Mi", 1), ResourceSpec("cpu", 1))),
]


@pytest.mark.parametrize("kube_version", ["1.30", "1.36"], ids=lambda v: f"under {v}")
@pytest.mark.parametrize("seed", range(60), ids=lambda s: f"random cluster {s}: batch equals per-node")
def test_batch_methods_equal_per_node_methods(seed: int, kube_version: str) -> None:
    rng = random.Random(seed)
    nodes = [random_node(rng, i) for i in range(rng.randint(1, 25))]
    existing = [random_pod(rng, f"e{i}", rng.choice(nodes).name) for i in range(rng.randint(0, 40))]
    h = FrameworkHandle.for_nodes(nodes, existing[: len(existing) // 2], features=features_for(kube_version))
    # Pods arriving and leaving after the table exists (scalar columns appear lazily).
    for p in existing[len(existing) // 2:]:
        h.cache.add_pod(p)
    removed = rng.sample(existing, len(existing) // 4)
    for p in removed:
        h.cache.remove_pod(p)
    bound = [p for p in existing if all(p is not r for r in removed)]
    table = h.snapshot.table
    nis = list(h.snapshot.list())
    rng.shuffle(nis)
    subsets = [nis, rng.sample(nis, max(1, len(nis) // 3))]
    fits = [Fit(a, h) for a in fit_variants(rng)]
    balanced = [BalancedAllocation(a, h) for a in BALANCED_VARIANTS]
    for k in range(6):
        incoming = random_pod(rng, f"incoming-{k}")
        for subset in subsets:
            rows = np.array([ni.index for ni in subset], np.int64)
            for f in fits:
                state = CycleState()
                f.pre_filter(state, incoming)
                want_ok = [f.filter(state, incoming, ni) is None for ni in subset]
                assert f.filter_batch(state, incoming, table, rows).tolist() == want_ok, f.args
                f.pre_score(state, incoming, subset)
                want = [f.score(state, incoming, ni) for ni in subset]
                assert f.score_batch(state, incoming, table, rows).tolist() == want, f.args
                assert all(0 <= s <= 100 for s in want)
            for b in balanced:
                state = CycleState()
                b.pre_score(state, incoming, subset)
                want = [b.score(state, incoming, ni) for ni in subset]
                assert b.score_batch(state, incoming, table, rows).tolist() == want, b.args
                assert all(0 <= s <= 100 for s in want)
        # The cluster changes between pods: per-row caches (1.36's balance without the pod)
        # must follow pods bound and deleted and nodes resized.
        added = random_pod(rng, f"bound-{k}", rng.choice(nodes).name)
        h.cache.add_pod(added)
        bound.append(added)
        if rng.random() < 0.5:
            h.cache.remove_pod(bound.pop(rng.randrange(len(bound))))
        if rng.random() < 0.3:
            i = rng.randrange(len(nodes))
            h.cache.update_node(random_node(rng, i))


def test_table_rows_match_node_infos_for_pods_requesting_only_an_extended_resource() -> None:
    """Regression: NodeTable.add_pod skipped the scalar columns of a pod whose only request
    is an extended resource."""
    n = node("n", {"cpu": "1", "memory": "1Gi", "pods": "10", "example.com/gpu": "2"})
    p = pod({"example.com/gpu": "2"}, node="n", name="gpu")
    h = cluster([n], [p])
    ni = h.snapshot.get("n")
    assert ni is not None
    assert int(h.snapshot.table.scalar_req["example.com/gpu"][ni.index]) == ni.requested.scalar["example.com/gpu"] == 2
    incoming = pod({"example.com/gpu": "1"}, name="incoming")
    f = Fit(None, h)
    state = CycleState()
    f.pre_filter(state, incoming)
    status = f.filter(state, incoming, ni)
    assert status is not None and status.reasons == ("Insufficient example.com/gpu",)
    assert f.filter_batch(state, incoming, h.snapshot.table, np.array([ni.index], np.int64)).tolist() == [False]
