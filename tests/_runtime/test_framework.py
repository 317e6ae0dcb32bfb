"""Framework runners (framework/runtime/framework.go: RunScorePlugins), driven through the
real Scheduler over the in-memory cluster with tiny Score plugins written here."""

from __future__ import annotations

from typing import Any

import pytest
from simkit import cluster, config, enable, node, pod, registry

from kubesched.framework import CycleState, NodeInfo, Status
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


def run(scorers: list[Scorer]) -> Any:
    factories = {s.name: _factory(s) for s in scorers}
    cfg = config({"plugins": enable(score=[s.name for s in scorers])})
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
