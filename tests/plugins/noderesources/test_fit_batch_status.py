"""NodeResourcesFit.filter_batch_status gives every row exactly the Status the per-node Filter
returns (same code, same reasons in fitsRequest's order), over the random clusters of
test_batch_equivalence: extended and hugepages resources on some nodes only, zero or missing
allocatable, over-committed nodes, full pod slots, ignored resources, row subsets in random
order (small subsets gather per row, large ones read whole columns)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kubesched.framework import CycleState
from kubesched.plugins.noderesources import Fit

from .test_batch_equivalence import fit_variants, random_node, random_pod
from .util import cluster, node, pod


@pytest.mark.parametrize("seed", range(40), ids=lambda s: f"random cluster {s}: batch statuses equal Filter's")
def test_filter_batch_status_equals_filter_on_every_node(seed: int) -> None:
    rng = random.Random(1000 + seed)
    nodes = [random_node(rng, i) for i in range(rng.randint(1, 25))]
    existing = [random_pod(rng, f"e{i}", rng.choice(nodes).name) for i in range(rng.randint(0, 40))]
    h = cluster(nodes, existing)
    table = h.snapshot.table
    nis = list(h.snapshot.list())
    rng.shuffle(nis)
    subsets = [nis, rng.sample(nis, max(1, len(nis) // 3))]
    fits = [Fit(a, h) for a in fit_variants(rng)]
    for k in range(6):
        incoming = random_pod(rng, f"incoming-{k}")
        for subset in subsets:
            rows = np.array([ni.index for ni in subset], np.int64)
            for f in fits:
                state = CycleState()
                f.pre_filter(state, incoming)
                codes, statuses = f.filter_batch_status(state, incoming, table, rows)
                assert statuses[0] is None
                for ni, code in zip(subset, codes.tolist(), strict=True):
                    want = f.filter(state, incoming, ni)
                    got = statuses[code]
                    if want is None:
                        assert got is None, (ni.name, got)
                    else:
                        assert got is not None and (got.code, got.reasons) == (want.code, want.reasons), ni.name


def test_nodes_short_of_the_same_resources_share_one_status() -> None:
    nodes = [node("full-1", {"cpu": "1", "memory": "1Gi", "pods": "10"}),
             node("full-2", {"cpu": "1", "memory": "1Gi", "pods": "10"}),
             node("roomy", {"cpu": "8", "memory": "8Gi", "pods": "10"}),
             node("no-slot", {"cpu": "1", "memory": "8Gi", "pods": "0"})]
    h = cluster(nodes, [])
    incoming = pod({"cpu": "2", "memory": "2Gi"}, name="incoming")
    f = Fit(None, h)
    state = CycleState()
    f.pre_filter(state, incoming)
    by_name = {ni.name: ni.index for ni in h.snapshot.list()}
    rows = np.array([by_name[n] for n in ("full-1", "roomy", "full-2", "no-slot")], np.int64)
    codes, statuses = f.filter_batch_status(state, incoming, h.snapshot.table, rows)
    assert codes[1] == 0 and codes[0] == codes[2] != 0
    assert statuses[codes[0]].reasons == ("Insufficient cpu", "Insufficient memory")  # type: ignore[union-attr]
    assert statuses[codes[3]].reasons == ("Too many pods", "Insufficient cpu")  # type: ignore[union-attr]
    assert len(statuses) == 3


@pytest.mark.parametrize(("request_", "want_codes", "want_reasons"), [
    pytest.param({"cpu": "2"}, [1, 1, 1], ("Insufficient cpu",), id="every row short of the same resource shares code 1"),
    pytest.param({"cpu": "100m"}, [0, 0, 0], None, id="every row fitting is code 0 with no status"),
])
def test_rows_of_one_shortfall_set(request_: dict[str, str], want_codes: list[int],
                                   want_reasons: tuple[str, ...] | None) -> None:
    nodes = [node(f"n{i}", {"cpu": "1", "memory": "1Gi", "pods": "10"}) for i in range(3)]
    h = cluster(nodes, [])
    incoming = pod(request_, name="incoming")
    f = Fit(None, h)
    state = CycleState()
    f.pre_filter(state, incoming)
    rows = np.array([ni.index for ni in h.snapshot.list()], np.int64)
    codes, statuses = f.filter_batch_status(state, incoming, h.snapshot.table, rows)
    assert codes.tolist() == want_codes
    if want_reasons is None:
        assert statuses == [None]
    else:
        assert len(statuses) == 2 and statuses[1] is not None and statuses[1].reasons == want_reasons


def test_more_reasons_than_bits_in_an_int64_still_match_filter() -> None:
    """63 requested extended resources (plus pods): codes come from the boolean matrix."""
    names = [f"example.com/r{i}" for i in range(63)]
    nodes = [node("some", {"cpu": "1", "memory": "1Gi", "pods": "10", **{n: "1" for n in names[::2]}}),
             node("all", {"cpu": "1", "memory": "1Gi", "pods": "10", **{n: "1" for n in names}}),
             node("none", {"cpu": "1", "memory": "1Gi", "pods": "0"})]
    h = cluster(nodes, [])
    incoming = pod({n: "1" for n in names}, name="incoming")
    f = Fit(None, h)
    state = CycleState()
    f.pre_filter(state, incoming)
    infos = list(h.snapshot.list())
    rows = np.array([ni.index for ni in infos], np.int64)
    codes, statuses = f.filter_batch_status(state, incoming, h.snapshot.table, rows)
    for ni, code in zip(infos, codes.tolist(), strict=True):
        want = f.filter(state, incoming, ni)
        got = statuses[code]
        assert (got.reasons if got else None) == (want.reasons if want else None), ni.name
