"""Framework runners (framework/runtime/framework.go: RunScorePlugins), driven through the
real Scheduler over the in-memory cluster with tiny Score plugins written here."""

from __future__ import annotations

from typing import Any

import pytest
from simkit import cluster, config, enable, node, pod, registry

from kubesched._runtime.framework import Framework
from kubesched._runtime.handle import FrameworkHandle
from kubesched._runtime.profile import build_framework
from kubesched._runtime.registry import in_tree_registry
from kubesched.config import default_configuration
from kubesched.framework import CycleState, NodeInfo, StateKey, Status
from kubesched.objects import Pod
from kubesched.simulation import Simulator


class Scorer:
    """A Score plugin giving every node ``score``, or failing with an Error when ``fail``."""

    def __init__(self, name: str, score: int, fail: bool = False) -> None:
        self.name = name
        self.value = score
        self.fail = fail

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        if self.fail:
            return 0, Status.as_error("no score today")
        return self.value, None


def _factory(plugin: Scorer) -> Any:
    return lambda args, handle: plugin


def run(scorers: list[Scorer], *, only: bool = False) -> Any:
    """Schedule one pod with ``scorers`` enabled (``only``: the default Score plugins disabled)."""
    factories = {s.name: _factory(s) for s in scorers}
    plugins = enable(score=[s.name for s in scorers])
    if only:
        plugins["score"]["disabled"] = [{"name": "*"}]
    cfg = config({"plugins": plugins})
    p = pod("p")
    sim = Simulator(cluster([node("n1"), node("n2")], [p]), cfg, registry=registry(**factories), deterministic=True)
    return sim.scheduler.schedule_one(sim.current[p.uid])


@pytest.mark.parametrize(
    ("scorers", "error"),
    [
        ([Scorer("Big", 101)],
         'applying score defaultWeights on Score plugins: plugin "Big" returns an invalid score 101, it should in '
         "the range of [0, 100] after normalizing"),
        # Every plugin scores before any score is checked: the later plugin's error wins.
        ([Scorer("Big", 101), Scorer("Broken", 0, fail=True)],
         'running Score plugins: plugin "Broken" failed with: no score today'),
        ([Scorer("Fine", 50), Scorer("Low", -1), Scorer("Big", 101)],
         'applying score defaultWeights on Score plugins: plugin "Low" returns an invalid score -1, it should in '
         "the range of [0, 100] after normalizing"),
    ],
    ids=["an out-of-range score is an error applying the weights",
         "a Score error of a later plugin comes before an earlier plugin's out-of-range score",
         "of two plugins out of range the first in order is reported"],
)
def test_score_plugin_errors_are_reported_as_run_score_plugins_does(scorers: list[Scorer], error: str) -> None:
    a = run(scorers)
    assert (a.outcome, a.error) == ("Error", error)


class _SometimesBatch:
    """A filter with batch methods that hold only in cycles whose state says so."""

    name = "SometimesBatch"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None

    def filter_batch(self, state: CycleState, pod: Pod, table: Any, rows: Any) -> Any:
        raise AssertionError("not called here")

    def filter_batch_applies(self, state: CycleState) -> bool:
        return state.get(_APPLIES) is not None


class _NoHook(_SometimesBatch):
    name = "AlwaysBatch"
    filter_batch_applies = None  # type: ignore[assignment]


_APPLIES: StateKey[bool] = StateKey("applies")


@pytest.mark.parametrize(("plugin", "applies", "batch"), [
    (_SometimesBatch(), True, True),
    (_SometimesBatch(), False, False),
    (_NoHook(), False, True),
], ids=["a plugin whose batch methods apply to the cycle is filtered in batch",
        "a plugin whose batch methods do not apply to the cycle is filtered node by node",
        "a plugin without filter_batch_applies is filtered in batch in every cycle"])
def test_filter_batch_applies_decides_per_cycle(plugin: _SometimesBatch, applies: bool, batch: bool) -> None:
    base = build_framework(default_configuration().profiles[0], in_tree_registry(), FrameworkHandle.for_nodes([]))
    fwk = Framework("p", {"QueueSort": [base.queue_sort], "Bind": base.bind, "Filter": [plugin]}, {},
                    FrameworkHandle.for_nodes([]))
    state = CycleState()
    if applies:
        state.write(_APPLIES, True)
    got_batch, per_node = fwk.batch_filters(state)
    assert ([p for p, _, _ in got_batch], per_node) == (([plugin], []) if batch else ([], [plugin]))


class _ZeroSometimes(Scorer):
    """A Score plugin that says when it scores 0 everywhere (and must then not be called)."""

    def __init__(self, name: str, score: int, all_zero: bool) -> None:
        super().__init__(name, score)
        self.all_zero = all_zero
        self.calls = 0

    def scores_all_zero(self, state: CycleState) -> bool:
        return self.all_zero

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        self.calls += 1
        return super().score(state, pod, node_info)


@pytest.mark.parametrize(("all_zero", "calls", "scores"), [
    (True, 0, {"First": 7, "Zero": 0, "Last": 3}),
    (False, 2, {"First": 7, "Zero": 0, "Last": 3}),
], ids=["a plugin scoring 0 everywhere is not called and still listed in order with its zeros",
        "a plugin that cannot tell is called on every node"])
def test_scores_all_zero_spares_the_calls_not_the_listing(all_zero: bool, calls: int, scores: dict[str, int]) -> None:
    zero = _ZeroSometimes("Zero", 0, all_zero)
    a = run([Scorer("First", 7), zero, Scorer("Last", 3)], only=True)
    assert a.outcome == "Scheduled"
    assert zero.calls == calls
    assert [ps.name for ps in a.scores.plugins] == ["First", "Zero", "Last"]
    assert a.scores.as_dict()[a.node] == scores
    assert a.scores.totals.tolist() == [10, 10]


def test_every_plugin_scoring_0_everywhere_leaves_totals_0() -> None:
    a = run([_ZeroSometimes("Zero", 50, True)], only=True)
    assert a.scores.totals.tolist() == [0, 0]
    assert [ps.scores.tolist() for ps in a.scores.plugins] == [[0, 0]]
