"""The invariant checker (kubesched._runtime.invariants): every invariant broken on purpose —
a broken fit over-committing a node, a pod bound twice, the cache or the nominator changed
behind the scheduler's back, a pending pod dropped from the queue, a nomination to a node that
does not exist — is an InvariantViolation naming the invariant, the pod, the node and the
cycle; and normal runs (the examples, preemption, Permit waits, the legitimate exceptions of a
dump) pass with the checker on. tests/conftest.py turns the checker on for the whole suite."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import make_node, make_pod
from simkit import Log, Permitter, cluster, config, enable, node, pod, registry

from kubesched._cache import Cache
from kubesched._runtime import invariants
from kubesched._runtime.registry import Registry
from kubesched.errors import InvariantViolation, KubeschedError
from kubesched.framework import (
    NOMINATING_OVERRIDE,
    Code,
    CycleState,
    Handle,
    NodeInfo,
    NominatingInfo,
    PodInfo,
    PostFilterResult,
    Status,
)
from kubesched.objects import ClusterObjects, Pod, load_manifests
from kubesched.plugins.noderesources.fit import Fit
from kubesched.plugins.registry import REGISTRY
from kubesched.simulation import Simulator, Step
from kubesched.timeline import TimelineSimulator

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


# ------------------------------------------------------------------------------------ faulty parts
class BrokenFit(Fit):
    """NodeResourcesFit whose Filter lets every pod through (scoring unchanged)."""

    filter_batch_status = None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None

    def filter_batch(self, state: CycleState, pod: Pod, table: Any, rows: Any) -> Any:
        return np.ones(len(rows), np.bool_)


class DoubleBinder:
    """Bind plugin binding the pod through the handle twice: to the chosen node, then to ``again``."""

    name = "DoubleBinder"

    def __init__(self, handle: Handle, again: str) -> None:
        self.handle = handle
        self.again = again

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self.handle.bind_pod(pod, node_name)
        self.handle.bind_pod(pod, self.again or node_name)
        return None


class LaxApiSimulator(Simulator):
    """A simulated API server that forgets a pod's binding before the next one: it accepts a
    second pods/binding instead of answering 409."""

    def _bind(self, pod: Pod, node: str) -> None:
        cur = self.current.get(pod.uid)
        if cur is not None:
            self.current[pod.uid] = dataclasses.replace(cur, node_name="")
        super()._bind(pod, node)


class NominateGhost:
    """PostFilter plugin nominating a node that does not exist."""

    name = "NominateGhost"

    def post_filter(self, state: CycleState, pod: Pod, statuses: dict[str, Status]) -> tuple[PostFilterResult | None,
                                                                                            Status]:
        return PostFilterResult(NominatingInfo("ghost", NOMINATING_OVERRIDE)), Status(Code.UNSCHEDULABLE, ("ghost",))


def bound(p: Pod, node_name: str) -> Pod:
    return dataclasses.replace(p, node_name=node_name)


def two_pods_one_node() -> ClusterObjects:
    """n1 (4 cpu) runs "web" (3 cpu); "p" (2 cpu) fits nowhere."""
    return cluster([node("n1", "4")], [bound(pod("web", "3"), "n1"), pod("p", "2", arrives=1)])


# ------------------------------------------------------------------------------------ violations
@dataclasses.dataclass(frozen=True)
class Case:
    invariant: str
    run: Callable[[], Any]
    pod: str
    node: str
    cycle: int


def broken_fit_registry() -> Registry:
    """The in-tree plugins with NodeResourcesFit replaced by BrokenFit."""
    reg = Registry(REGISTRY)
    reg.unregister("NodeResourcesFit")
    reg.register("NodeResourcesFit", lambda args, handle: BrokenFit(args, handle))
    return reg


def _broken_fit() -> Any:
    return Simulator(two_pods_one_node(), registry=broken_fit_registry(), deterministic=True).run()


def _broken_fit_timeline() -> Any:
    return TimelineSimulator(two_pods_one_node(), registry=broken_fit_registry(), seed=1).run()


def _double_bind(again: str) -> Callable[[], Any]:
    def run() -> Any:
        reg = registry(DoubleBinder=lambda args, handle: DoubleBinder(handle, again))
        cfg = config({"plugins": {"bind": {"enabled": [{"name": "DoubleBinder"}], "disabled": [{"name": "*"}]}}})
        objs = cluster([node("n1"), node("n2")], [pod("p", "1")])
        return LaxApiSimulator(objs, cfg, registry=reg, deterministic=True).run()

    return run


def _after_step(mutate: Callable[[Simulator, Step], None], objs: ClusterObjects | None = None) -> Callable[[], Any]:
    """A deterministic run whose ``on_step`` (called right after each step, before the check)
    mutates the simulator behind the scheduler's back."""

    def run() -> Any:
        sim = Simulator(objs if objs is not None else two_pods_one_node(), deterministic=True)
        sim.on_step = lambda step: mutate(sim, step)
        return sim.run()

    return run


def _lose_bound_pod(sim: Simulator, step: Step) -> None:
    web = next(p for p in sim.current.values() if p.name == "web")
    sim.cache.remove_pod(web)


def _assume_behind_the_back(sim: Simulator, step: Step) -> None:
    sim.cache.assume_pod(bound(step.attempt.pod, "n1"))


def _list_twice(sim: Simulator, step: Step) -> None:
    web = next(p for p in sim.current.values() if p.name == "web")
    sim.cache.node_infos["n1"].add_pod(web)


def _nominate_behind_the_back(sim: Simulator, step: Step) -> None:
    sim.nominator.add(PodInfo(step.attempt.pod), "n1")


def _shrink_node(sim: Simulator, step: Step) -> None:
    n1 = sim.cache.node_infos["n1"].node
    assert n1 is not None
    sim.cache.update_node(dataclasses.replace(n1, allocatable={**n1.allocatable, "cpu": 500}))


def _drop_from_queue() -> Any:
    sim = TimelineSimulator(two_pods_one_node(), seed=1)
    sim.queue.add_unschedulable_if_not_present = lambda qpi, cycle: None  # type: ignore[method-assign]
    return sim.run()


def _ghost_nomination() -> Any:
    reg = registry(NominateGhost=lambda args, handle: NominateGhost())
    cfg = config({"plugins": {"postFilter": {"enabled": [{"name": "NominateGhost"}],
                                             "disabled": [{"name": "DefaultPreemption"}]}}})
    return Simulator(two_pods_one_node(), cfg, registry=reg, deterministic=True).run()


CASES = [
    pytest.param(Case("within-allocatable", _broken_fit, "default/p", "n1", 1),
                 id="a broken NodeResourcesFit lets a pod onto a full node"),
    pytest.param(Case("within-allocatable", _broken_fit_timeline, "default/p", "n1", 1),
                 id="the same broken fit is caught by the timeline"),
    pytest.param(Case("single-binding", _double_bind("n2"), "default/p", "n2", 1),
                 id="an API that accepts a second binding sees the pod bound to two nodes"),
    pytest.param(Case("single-binding", _double_bind(""), "default/p", "n1", 1),
                 id="an API that accepts a second binding sees the pod bound twice to one node"),
    pytest.param(Case("cache-matches-cluster", _after_step(_lose_bound_pod), "default/web", "n1", 1),
                 id="a bound pod removed from the cache behind the scheduler's back"),
    pytest.param(Case("assumed-in-flight", _after_step(_assume_behind_the_back), "default/p", "n1", 1),
                 id="a pod assumed behind the scheduler's back is never confirmed nor forgotten"),
    pytest.param(Case("one-node-per-pod", _after_step(_list_twice), "default/web", "n1", 1),
                 id="a pod listed twice on its node"),
    pytest.param(Case("nominator-matches-pods", _after_step(_nominate_behind_the_back), "default/p", "n1", 1),
                 id="a nomination the pod's status does not carry"),
    pytest.param(Case("within-allocatable", _after_step(_shrink_node), "default/web", "n1", 1),
                 id="a node within allocatable when the run started goes over"),
    pytest.param(Case("pending-accounted", _drop_from_queue, "default/p", "", 1),
                 id="a pending pod dropped from the queue after its failure"),
    pytest.param(Case("nomination-to-existing-node", _ghost_nomination, "default/p", "ghost", 1),
                 id="the scheduler nominates a node that does not exist"),
]


@pytest.mark.parametrize("case", CASES)
def test_a_broken_invariant_is_an_error_naming_pod_node_and_cycle(case: Case) -> None:
    with pytest.raises(InvariantViolation) as info:
        case.run()
    e = info.value
    assert isinstance(e, KubeschedError)
    assert (e.invariant, e.pod, e.node, e.cycle) == (case.invariant, case.pod, case.node, case.cycle), str(e)
    text = str(e)
    assert f"invariant {case.invariant!r} violated" in text and f"cycle {case.cycle}" in text
    assert f"pod {case.pod}" in text
    if case.node:
        assert f"node {case.node}" in text


def test_the_message_reads_as_one_sentence() -> None:
    with pytest.raises(InvariantViolation) as info:
        _broken_fit()
    assert str(info.value) == ("invariant 'within-allocatable' violated after the binding cycle 1: pod default/p, "
                               "node n1: the placement pushed cpu over allocatable: requested 5000m (the pod: 2000m) "
                               "> allocatable 4000m")


# ------------------------------------------------------------------------------------ live mode
def test_live_mode_reports_a_violation_found_by_the_scheduling_loop_when_stopped() -> None:
    from live.apihelpers import FAST, placements, wait_until
    from live.apihelpers import node as api_node
    from live.apihelpers import pod as api_pod

    from kubesched.cluster.live import ApiClient, ClusterConfig, LiveCluster
    from kubesched.live.runner import LiveScheduler
    from kubesched.testing.apiserver import LocalApiServer

    reg = broken_fit_registry()
    with LocalApiServer(bookmark_interval=0.2) as api:
        client = ApiClient(ClusterConfig(server=api.url), qps=0, timeout=10.0)
        sched = LiveScheduler(None, LiveCluster(client, options=FAST), registry=reg, deterministic=True,
                              check_invariants=True)
        try:
            sched.start_loop()
            api.create(api_node("n1", "2"))
            api.create(api_pod("a", "1500m"))
            wait_until(lambda: placements(api).get("a") == "n1", what="a bound")
            api.create(api_pod("b", "1500m"))
            wait_until(lambda: sched.invariants is not None and sched.invariants.violations, what="the violation")
        finally:
            with pytest.raises(InvariantViolation, match="within-allocatable") as info:
                sched.stop(timeout=10.0)
            client.close()
    assert (info.value.pod, info.value.node) == ("default/b", "n1")


# ------------------------------------------------------------------------------------ normal runs
def _run_both(objs: Callable[[], ClusterObjects], **kw: Any) -> list[Any]:
    out = []
    for sim in (Simulator(objs(), deterministic=True, check_invariants=True, **kw),
                TimelineSimulator(objs(), seed=3, check_invariants=True, **kw)):
        sim.run()
        assert sim.invariants is not None and sim.invariants.global_checks > 0
        out.append(sim)
    return out


@pytest.mark.parametrize("example", ["cluster", "whatif", "dump"], ids=lambda e: f"examples/{e} passes in both simulators")
def test_the_examples_keep_every_invariant(example: str) -> None:
    # (examples/plugins runs in tests/test_plugin_examples.py, with the checker on like every test)
    path = EXAMPLES / example
    for sim in (Simulator(load_manifests([path], controllers="none"), deterministic=True, check_invariants=True),
                TimelineSimulator(load_manifests([path]), seed=1, check_invariants=True)):
        res = sim.run()
        assert sim.invariants is not None and sim.invariants.checks >= len(res.steps)
        assert sim.invariants.global_checks >= 1


def _preemption() -> ClusterObjects:
    low = [bound(pod(f"low-{i}", "1", priority=0), f"n{i % 2 + 1}") for i in range(8)]
    high = [pod(f"high-{i}", "3", priority=100, arrives=i + 1) for i in range(2)]
    return cluster([node("n1", "4"), node("n2", "4")], low + high)


def test_preemption_keeps_every_invariant() -> None:
    det, tl = _run_both(_preemption)
    assert det.invariants.checks >= 2 and tl.invariants.checks >= 2
    assert {p.name for p in det.current.values() if p.node_name and p.name.startswith("high")} == {"high-0", "high-1"}


def test_permit_waits_and_timeouts_keep_every_invariant() -> None:
    log = Log()
    reg = registry(P=lambda args, handle: Permitter("P", log, Code.WAIT, timeout=5.0, only_gated=True))
    cfg = config({"plugins": enable(permit=["P"])})

    def objs() -> ClusterObjects:
        gated = make_pod().name("waits").req(cpu="1").labels({"gate": "x"}).creation("2023-11-14T22:13:20Z").obj()
        return cluster([node("n1", "2")], [gated, pod("free", "1", arrives=1)])

    det, tl = _run_both(objs, config=cfg, registry=reg)
    assert not det.invariants.in_flight and not tl.invariants.in_flight


def test_what_the_input_does_is_no_violation() -> None:
    # n1 is over-committed by the input (2 cpu bound on 1); a pod asking no cpu may still go
    # there; a pending pod nominated to a node missing from the dump keeps its nomination; an
    # extended resource the profile's fit ignores may be over-committed; a pod of another
    # scheduler and a terminal pod are left alone.
    n1 = make_node().name("n1").label("tier", "small").capacity(cpu="1", memory="32Gi", pods=110).obj()
    n2 = make_node().name("n2").capacity(cpu="8", memory="32Gi", pods=110, **{"example.com/dongle": "1"}).obj()
    ts = "2023-11-14T22:13:20Z"

    def objs() -> ClusterObjects:
        pods = [
            make_pod().name("hog-1").req(cpu="1").node("n1").creation(ts).obj(),
            make_pod().name("hog-2").req(cpu="1").node("n1").creation(ts).obj(),
            make_pod().name("mem-only").req(memory="1Gi").node_selector({"tier": "small"})
            .creation(ts).obj(),
            make_pod().name("to-ghost").req(cpu="100m").nominated("ghost").creation(ts).obj(),
            make_pod().name("dongle-1").req(cpu="100m", **{"example.com/dongle": "1"}).creation(ts).obj(),
            make_pod().name("dongle-2").req(cpu="100m", **{"example.com/dongle": "1"}).creation(ts).obj(),
            make_pod().name("theirs").req(cpu="100m").scheduler_name("other").creation(ts).obj(),
            make_pod().name("done").req(cpu="100m").phase("Succeeded").creation(ts).obj(),
        ]
        return cluster([n1, n2], pods)

    cfg = config({"pluginConfig": [{"name": "NodeResourcesFit",
                                    "args": {"ignoredResources": ["example.com/dongle"]}}]})
    det, tl = _run_both(objs, config=cfg)
    for sim in (det, tl):
        final = {p.name: p.node_name for p in sim.current.values()}
        assert final["mem-only"] == "n1" and final["dongle-1"] == final["dongle-2"] == "n2"
        assert sim.invariants.global_checks >= 2


def test_the_switch_is_off_unless_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(invariants.ENV, raising=False)
    assert not invariants.enabled(None) and invariants.enabled(True)
    sim = Simulator(two_pods_one_node(), deterministic=True)
    sim.run()
    assert sim.invariants is None
    for value, expected in (("0", ""), ("off", ""), ("1", "on"), ("yes", "on"), ("full", "full")):
        monkeypatch.setenv(invariants.ENV, value)
        assert invariants.env_setting() == expected
    assert not invariants.enabled(False)
    monkeypatch.setenv(invariants.ENV, "full")
    sim = Simulator(_preemption(), deterministic=True)
    res = sim.run()
    assert sim.invariants is not None and sim.invariants.global_checks == len(res.steps) + 1


def test_global_checks_are_sampled_by_their_cost() -> None:
    # 300 nodes and 300 running pods: a global check visits ~900 objects, so with a budget of
    # 100 objects per cycle it runs about every 9 cycles, and once more at the end.
    nodes = [node(f"n{i:03d}") for i in range(300)]
    running = [bound(pod(f"r{i:03d}", "100m"), f"n{i:03d}") for i in range(300)]
    pending = [pod(f"p{i:02d}", "100m", arrives=i) for i in range(40)]
    sim = Simulator(cluster(nodes, running + pending), deterministic=True, check_invariants=True)
    checker_budget = 100
    sim._new_invariants = lambda queue=None: setattr(  # type: ignore[method-assign]
        sim, "invariants", invariants.InvariantChecker(
            sim.cache, sim.nominator, sim.profiles,
            invariants.ClusterView(sim._cluster_pods, sim._cluster_pod, sim._pending_reason, sim._mirrors_nomination),
            full=False, budget=checker_budget))
    res = sim.run()
    assert sim.invariants is not None and sim.invariants.checks == len(res.steps) == 40
    assert 3 <= sim.invariants.global_checks <= 8


# ------------------------------------------------------------------------------------ bugs it found
def test_a_failure_after_assume_clears_the_nomination_in_the_conformance_procedure_too() -> None:
    # The checker found the deterministic procedure keeping status.nominatedNodeName after a
    # Permit rejection of a nominated preemptor, while the nominator had dropped the pod at
    # assume: upstream's handleSchedulingFailure clears it (clearNominatedNode), as the timeline does.
    log = Log()
    reg = registry(P=lambda args, handle: Permitter("P", log, Code.UNSCHEDULABLE, only_gated=True))
    low = bound(pod("low", "3"), "n1")
    high = pod("high", "3", priority=100, arrives=1, labels={"gate": "x"})
    sim = Simulator(cluster([node("n1", "4")], [low, high]), config({"plugins": enable(permit=["P"])}),
                    registry=reg, deterministic=True, check_invariants=True)
    res = sim.run()
    assert [(s.attempt.outcome, s.attempt.nominated_node) for s in res.steps] == [("Unschedulable", "n1"),
                                                                                  ("Unschedulable", None)]
    assert sim.current[high.uid].nominated_node_name == "" and sim.nominator.nominated_node(high) == ""


def test_a_node_removed_and_added_back_still_counts_its_pods() -> None:
    # The checker found live mode's cache dropping a deleted node's pods with it (the uid index
    # kept them): a node coming back under the same name counted none of them, and a pod was
    # placed over its allocatable. Upstream's RemoveNode keeps the pods until their own deletes.
    cache = Cache()
    cache.add_node(make_node().name("n").capacity(cpu="2", memory="1Gi", pods=10).obj())
    running = make_pod().name("a").req(cpu="1500m").node("n").obj()
    cache.add_pod(running)
    cache.remove_node("n")
    assert "n" not in cache.node_infos and cache.node_of(running) == "n"
    assert list(cache.placements()) == [("n", running)]
    ni = cache.add_node(make_node().name("n").capacity(cpu="2", memory="1Gi", pods=10).obj())
    assert ni.requested.milli_cpu == 1500 and [pi.pod.name for pi in ni.pods] == ["a"]
    cache.remove_node("n")
    cache.remove_pod(running)
    assert list(cache.placements()) == [] and cache.node_of(running) is None


def test_live_mode_counts_the_pods_of_a_node_that_comes_back() -> None:
    from live.apihelpers import live_scheduler, placements, wait_until
    from live.apihelpers import node as api_node
    from live.apihelpers import pod as api_pod

    from kubesched.testing.apiserver import LocalApiServer

    with LocalApiServer(bookmark_interval=0.2) as api, live_scheduler(api) as sched:
        assert sched.invariants is not None  # on for the suite
        api.create(api_node("n1", "2"))
        api.create(api_pod("a", "1500m"))
        wait_until(lambda: placements(api).get("a") == "n1", what="a bound")
        api.delete("nodes", "n1")
        wait_until(lambda: "n1" not in sched.cache.node_infos, what="the node gone from the cache")
        api.create(api_node("n1", "2"))
        api.create(api_pod("b", "1500m"))
        wait_until(lambda: sched.stats.attempts["unschedulable"] >= 1, what="b attempted")
        time.sleep(0.2)
        assert placements(api)["b"] == ""
