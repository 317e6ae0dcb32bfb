"""1.36 selectHost: the root of Go's container/heap built over the feasible nodes in the order
they were found (heap_root), proven equal to a literal emulation of heap.Init + heap.Pop."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.scheduler import heap_root


def go_heap_pop(scores: list[int], randomizer: list[int] | None = None) -> int:
    """container/heap.Init then Pop with Less = higher score, then higher randomizer."""
    n = len(scores)
    key = [(s, randomizer[i] if randomizer else 0) for i, s in enumerate(scores)]
    h = list(range(n))

    def down(i: int, n: int) -> None:
        while True:
            j1 = 2 * i + 1
            if j1 >= n:
                return
            j = j1
            if j1 + 1 < n and key[h[j1 + 1]] > key[h[j1]]:
                j = j1 + 1
            if not key[h[j]] > key[h[i]]:
                return
            h[i], h[j] = h[j], h[i]
            i = j

    for i in range(n // 2 - 1, -1, -1):
        down(i, n)
    h[0], h[n - 1] = h[n - 1], h[0]
    down(0, n - 1)
    return h[n - 1]


def test_the_examples_of_the_differences_map() -> None:
    assert heap_root([5, 6, 7, 7]) == 3
    assert heap_root([5, 7, 7]) == 1
    assert heap_root([3, 3, 3]) == 0


@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=90))
def test_heap_root_is_what_heap_pop_returns(scores: list[int]) -> None:
    assert heap_root(scores) == go_heap_pop(scores)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=60))
def test_heap_root_with_an_extender_s_randomizer_is_what_heap_pop_returns(pairs: list[tuple[int, int]]) -> None:
    scores = [s for s, _ in pairs]
    rnd = [r for _, r in pairs]
    assert heap_root(scores, rnd) == go_heap_pop(scores, rnd)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2), min_size=100, max_size=3000))
def test_heap_root_over_thousands_of_tied_nodes_is_what_heap_pop_returns(scores: list[int]) -> None:
    assert heap_root(scores) == go_heap_pop(scores)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 1), min_size=100, max_size=3000).filter(lambda s: sum(s) > 64))
def test_heap_root_over_hundreds_of_top_scores_is_what_heap_pop_returns(scores: list[int]) -> None:
    assert heap_root(scores) == go_heap_pop(scores)
