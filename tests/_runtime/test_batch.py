"""OpportunisticBatch (framework/runtime/batch.go) and the priority list it keeps
(schedule_one.go's sortedNodeScores): the order Go's container/heap pops the scored nodes in,
and when a batch may hint the next pod's node."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from builders import make_node, make_pod
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched._runtime.batch import (
    BATCH_ATTEMPT_HINT_NOT_USED,
    BATCH_ATTEMPT_HINT_USED,
    BATCH_ATTEMPT_NO_HINT,
    BATCH_FLUSH_EMPTY_LIST,
    BATCH_FLUSH_EXPIRED,
    BATCH_FLUSH_NODE_MISSING,
    BATCH_FLUSH_NODE_NOT_FULL,
    BATCH_FLUSH_POD_INCOMPATIBLE,
    BATCH_FLUSH_POD_NOT_BATCHABLE,
    BATCH_FLUSH_POD_SKIPPED,
    OpportunisticBatch,
    SortedNodeScores,
)
from kubesched._runtime.handle import FrameworkHandle
from kubesched.framework import CycleState, NodeInfo, Status
from kubesched.objects import Pod
from kubesched.scheduler import heap_root


def go_heap_order(scores: list[int], randomizer: list[int] | None = None) -> list[int]:
    """Every index in the order heap.Init then repeated heap.Pop return them (Less = higher
    score, then higher randomizer), written as container/heap is: an index array, Swap/Less."""
    key = [(s, randomizer[i] if randomizer else 0) for i, s in enumerate(scores)]
    h = list(range(len(scores)))

    def less(i: int, j: int) -> bool:
        return key[h[i]] > key[h[j]]

    def down(i0: int, n: int) -> None:
        i = i0
        while True:
            j1 = 2 * i + 1
            if j1 >= n or j1 < 0:
                break
            j = j1
            j2 = j1 + 1
            if j2 < n and less(j2, j1):
                j = j2
            if not less(j, i):
                break
            h[i], h[j] = h[j], h[i]
            i = j

    n = len(h)
    for i in range(n // 2 - 1, -1, -1):
        down(i, n)
    out = []
    while h:
        n = len(h) - 1
        h[0], h[n] = h[n], h[0]
        down(0, n)
        out.append(h.pop())
    return out


def nodes_named(count: int) -> list[NodeInfo]:
    out = []
    for i in range(count):
        ni = NodeInfo()
        ni.name = f"n{i}"
        out.append(ni)
    return out


def rest(scores: list[int], randomizer: list[int] | None = None) -> list[str]:
    s = SortedNodeScores(nodes_named(len(scores)), np.array(scores, np.int64), randomizer)
    out = []
    while len(s):
        out.append(s.pop())
    return out


@pytest.mark.parametrize(("scores", "want"), [
    pytest.param([3, 3, 3, 3, 3, 3], ["n5", "n4", "n3", "n2", "n1"],
                 id="among equal scores the last node found comes next, then the one before"),
    pytest.param([5, 6, 7, 7], ["n2", "n1", "n0"], id="the other top score, then by score"),
    pytest.param([9, 1, 8, 2], ["n2", "n3", "n1"], id="distinct scores in descending order"),
    pytest.param([4], [], id="a single node leaves nothing"),
])
def test_the_rest_of_the_list_comes_in_heap_order(scores: list[int], want: list[str]) -> None:
    assert rest(scores) == want


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=70))
def test_the_rest_is_what_container_heap_pops_after_select_host(scores: list[int]) -> None:
    order = go_heap_order(scores)
    assert order[0] == heap_root(scores)  # selectHost's Pop
    assert rest(scores) == [f"n{i}" for i in order[1:]]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2**63 - 1)), min_size=1, max_size=50))
def test_an_extender_s_randomizer_breaks_ties_in_the_rest_too(pairs: list[tuple[int, int]]) -> None:
    scores, rnd = [s for s, _ in pairs], [r for _, r in pairs]
    assert rest(scores, rnd) == [f"n{i}" for i in go_heap_order(scores, rnd)[1:]]


def test_the_heap_is_built_only_when_a_hint_is_asked_for() -> None:
    s = SortedNodeScores(nodes_named(3), np.array([1, 2, 3], np.int64), None)
    assert (len(s), s._keys) == (2, None)
    assert s.pop() == "n1"
    assert len(s) == 1


# ---------------------------------------------------------------- batchStateCompatible
@dataclass
class Filters:
    """RunFilterPlugins on the last chosen node: the verdict given."""

    verdict: Status | None

    def run_filter_plugins(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return self.verdict


FULL = Status.unschedulable("node(s) didn't have free ports for the requested pod ports")
POD = make_pod().name("p").obj()


def batch_after_n0(verdict: Status | None = FULL, nodes: tuple[str, ...] = ("n0", "n1", "n2")) -> OpportunisticBatch:
    """A batch whose cycle 1 chose n0 out of three equal nodes at t=10 (signature "s")."""
    handle = FrameworkHandle.for_nodes([make_node().name(n).capacity(cpu="1").obj() for n in nodes])
    b = OpportunisticBatch(Filters(verdict), lambda: handle.snapshot)
    b.store_schedule_results(lambda: "s", "", "n0",
                             SortedNodeScores(nodes_named(3), np.array([1, 1, 1], np.int64), None), 1, 10.0)
    return b


@pytest.mark.parametrize(("batch", "cycle", "signature", "now", "hint", "flushed"), [
    pytest.param(lambda: batch_after_n0(), 2, "s", 10.2, "n2", None,
                 id="the next cycle of the same signature gets the next node"),
    pytest.param(lambda: batch_after_n0(), 3, "s", 10.2, "", BATCH_FLUSH_POD_SKIPPED,
                 id="a cycle in between (another profile, a failure) breaks the batch"),
    pytest.param(lambda: batch_after_n0(), 2, "t", 10.2, "", BATCH_FLUSH_POD_INCOMPATIBLE,
                 id="another signature breaks the batch"),
    pytest.param(lambda: batch_after_n0(), 2, None, 10.2, "", BATCH_FLUSH_POD_INCOMPATIBLE,
                 id="an unsigned pod breaks the batch"),
    pytest.param(lambda: batch_after_n0(), 2, "s", 10.5, "n2", None, id="a batch 500 ms old still serves"),
    pytest.param(lambda: batch_after_n0(), 2, "s", 10.51, "", BATCH_FLUSH_EXPIRED,
                 id="a batch older than 500 ms is dropped"),
    pytest.param(lambda: batch_after_n0(None), 2, "s", 10.2, "", BATCH_FLUSH_NODE_NOT_FULL,
                 id="a pod that still fits where the last one went gets no hint"),
    pytest.param(lambda: batch_after_n0(Status.as_error("boom")), 2, "s", 10.2, "", BATCH_FLUSH_NODE_NOT_FULL,
                 id="an error on the last node is no rejection"),
    pytest.param(lambda: batch_after_n0(nodes=("n1", "n2")), 2, "s", 10.2, "", BATCH_FLUSH_NODE_MISSING,
                 id="the last chosen node gone breaks the batch"),
])
def test_a_batch_hints_only_the_very_next_compatible_cycle(batch: Any, cycle: int, signature: str | None,
                                                            now: float, hint: str, flushed: str | None) -> None:
    b: OpportunisticBatch = batch()
    got = b.get_node_hint(POD, lambda: signature, CycleState(), cycle, now)
    assert got == hint
    assert dict(b.flushes) == ({flushed: 1} if flushed else {})
    assert dict(b.attempts) == ({} if hint else {BATCH_ATTEMPT_NO_HINT: 1})


def test_a_used_hint_keeps_the_batch_going() -> None:
    b = batch_after_n0()
    assert b.get_node_hint(POD, lambda: "s", CycleState(), 2, 10.1) == "n2"
    b.store_schedule_results(lambda: "s", "n2", "n2", None, 2, 10.1)
    assert b.get_node_hint(POD, lambda: "s", CycleState(), 3, 10.2) == "n1"
    b.store_schedule_results(lambda: "s", "n1", "n1", None, 3, 10.2)
    # The list is used up: no hint, and nothing flushed (there is nothing left to flush).
    assert b.get_node_hint(POD, lambda: "s", CycleState(), 4, 10.3) == ""
    assert (b.batched_pods, dict(b.attempts), dict(b.flushes)) == (
        2, {BATCH_ATTEMPT_HINT_USED: 2, BATCH_ATTEMPT_NO_HINT: 1}, {})


def test_a_hint_not_taken_replaces_the_batch_with_the_new_cycle_s_list() -> None:
    b = batch_after_n0()
    assert b.get_node_hint(POD, lambda: "s", CycleState(), 2, 10.1) == "n2"
    fresh = SortedNodeScores(nodes_named(2), np.array([5, 1], np.int64), None)
    b.store_schedule_results(lambda: "s", "n2", "n0", fresh, 2, 10.1)
    assert b.attempts[BATCH_ATTEMPT_HINT_NOT_USED] == 1
    assert b.state is not None and b.state.sorted_nodes is fresh and b.state.creation_time == 10.1


@pytest.mark.parametrize(("signature", "others", "reason"), [
    pytest.param(None, [1, 1], BATCH_FLUSH_POD_NOT_BATCHABLE, id="an unsigned pod leaves no batch"),
    pytest.param("s", None, BATCH_FLUSH_EMPTY_LIST, id="a single feasible node leaves no batch"),
    pytest.param("s", [1], BATCH_FLUSH_EMPTY_LIST, id="a list with nothing after the chosen node leaves no batch"),
])
def test_a_cycle_that_cannot_start_a_batch_drops_the_old_one(signature: str | None, others: list[int] | None,
                                                              reason: str) -> None:
    b = batch_after_n0()
    rest_ = (SortedNodeScores(nodes_named(len(others)), np.array(others, np.int64), None)
             if others is not None else None)
    b.store_schedule_results(lambda: signature, "", "n1", rest_, 5, 11.0)
    assert b.state is None
    assert dict(b.flushes) == {reason: 1}
