"""NominatedNodeNameForExpectation (1.35 beta, on in 1.36; schedule_one.go bindingCycle): when
some PreBind plugin has work (its PreBindPreFlight says Success) or the pod waited at Permit,
the scheduler writes status.nominatedNodeName = the chosen node before PreBind, for external
components; a plugin whose preflight says Skip gets no PreBind call. The binding then clears the
nomination (ClearingNominatedNodeNameAfterBinding)."""

from __future__ import annotations

from typing import Any

import pytest
from simkit import config, enable, node, pod, registry

from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features
from kubesched.framework import Code, CycleState, Status
from kubesched.objects import ClusterObjects, Pod
from kubesched.simulation import Simulator


class PreBinder:
    """A PreBind plugin that has work (or says Skip) and records the pod's nomination at PreBind."""

    name = "Work"

    def __init__(self, sim: list[Simulator], skip: bool) -> None:
        self.sim = sim
        self.skip = skip
        self.seen: list[tuple[str, str]] = []

    def pre_bind_pre_flight(self, state: CycleState, p: Pod, node_name: str) -> Status | None:
        return Status(Code.SKIP) if self.skip else None

    def pre_bind(self, state: CycleState, p: Pod, node_name: str) -> Status | None:
        self.seen.append((p.name, self.sim[0].current[p.uid].nominated_node_name))
        return None


def run(features: Features, skip: bool) -> tuple[PreBinder, Simulator]:
    box: list[Simulator] = []
    plugin = PreBinder(box, skip)
    reg = registry(Work=lambda args, handle: plugin)
    cfg = config({"plugins": enable(preBind=["Work"])})
    objs = ClusterObjects(nodes=[node("n1")], pods=[pod("p")])
    sim = Simulator(objs, cfg, deterministic=True, registry=reg, features=features)
    box.append(sim)
    sim.run()
    return plugin, sim


CASES: list[Any] = [
    pytest.param(FEATURES_1_36, False, [("p", "n1")], id="1.36: PreBind has work, so the pod is nominated to n1 first"),
    pytest.param(FEATURES_1_36, True, [], id="1.36: a preflight Skip means no nomination and no PreBind call"),
    pytest.param(FEATURES_1_30, False, [("p", "")], id="v1.30: no preflight, no nomination"),
]


@pytest.mark.parametrize(("features", "skip", "seen"), CASES)
def test_the_pod_is_nominated_before_pre_bind_when_pre_bind_has_work(features: Features, skip: bool,
                                                                    seen: list[tuple[str, str]]) -> None:
    plugin, sim = run(features, skip)
    assert plugin.seen == seen
    (bound,) = sim.current.values()
    assert bound.node_name == "n1"
    assert bound.nominated_node_name == ""  # cleared by the binding (1.36), never set (v1.30)
