"""Several profiles in one scheduler: each pod is scheduled by the profile named in its
spec.schedulerName, with that profile's plugins and weights; pods naming no profile of
this scheduler are left alone and reported as skipped."""

from __future__ import annotations

from typing import Any

import pytest
from simkit import cluster, config, node, pod, registry

from examples.plugins import nodelabelscore
from kubesched.simulation import SimulationResult, Simulator
from kubesched.timeline import TimelineSimulator


def two_profiles() -> Any:
    """Profile "a" prefers the node with the highest ``rank`` label; "b" the lowest, with
    the NodeResourcesFit score turned off; both weigh the label far above the defaults."""
    return config(
        {"schedulerName": "a",
         "plugins": {"score": {"enabled": [{"name": "NodeLabelScore", "weight": 20}]}},
         "pluginConfig": [{"name": "NodeLabelScore", "args": {"label": "rank", "prefer": "Higher"}}]},
        {"schedulerName": "b",
         "plugins": {"score": {"enabled": [{"name": "NodeLabelScore", "weight": 30}],
                               "disabled": [{"name": "NodeResourcesFit"}]}},
         "pluginConfig": [{"name": "NodeLabelScore", "args": {"label": "rank", "prefer": "Lower"}}]},
    )


def run(mode: str) -> tuple[Simulator, SimulationResult]:
    nodes = [node("low", rank="1"), node("mid", rank="5"), node("high", rank="9")]
    pods = [pod("pa", scheduler="a"), pod("pb", scheduler="b", arrives=1), pod("pc", scheduler="c", arrives=2),
            pod("pd", arrives=3)]
    reg = registry(NodeLabelScore=nodelabelscore.new)
    if mode == "timeline":
        sim: Simulator = TimelineSimulator(cluster(nodes, pods), two_profiles(), registry=reg)
    else:
        sim = Simulator(cluster(nodes, pods), two_profiles(), registry=reg, deterministic=True)
    return sim, sim.run()


@pytest.mark.parametrize("mode", ["deterministic", "timeline"])
def test_pods_are_routed_to_their_profile_by_scheduler_name(mode: str) -> None:
    sim, res = run(mode)
    assert set(sim.profiles) == {"a", "b"}
    assert res.final["default/pa"] == "high"
    assert res.final["default/pb"] == "low"
    by_pod = {s.attempt.pod.name: s.attempt for s in res.steps}
    assert set(by_pod) == {"pa", "pb"}
    fwk_a, fwk_b = by_pod["pa"].framework, by_pod["pb"].framework
    assert fwk_a is not None and fwk_a.profile_name == "a"
    assert fwk_b is not None and fwk_b.profile_name == "b"
    # Each profile's own weights and plugins.
    a_scores, b_scores = by_pod["pa"].scores, by_pod["pb"].scores
    assert a_scores is not None and b_scores is not None
    assert a_scores.as_dict()["high"]["NodeLabelScore"] == 100 * 20
    assert b_scores.as_dict()["low"]["NodeLabelScore"] == 100 * 30
    assert "NodeResourcesFit" in a_scores.as_dict()["high"]
    assert "NodeResourcesFit" not in b_scores.as_dict()["low"]


@pytest.mark.parametrize("mode", ["deterministic", "timeline"])
def test_pods_of_an_unknown_scheduler_are_left_alone_and_reported_skipped(mode: str) -> None:
    _, res = run(mode)
    assert res.skipped == {
        "default/pc": "schedulerName 'c' is not one of this scheduler's profiles",
        "default/pd": "schedulerName 'default-scheduler' is not one of this scheduler's profiles",
    }
    assert res.final["default/pc"] is None and res.final["default/pd"] is None
