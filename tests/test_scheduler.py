"""The scheduling cycle (schedule_one.go): node sampling, rotation, host selection,
FitError messages, and the binding path."""

from __future__ import annotations

import random
from typing import Any

import pytest
from builders import make_node, make_pod
from simkit import config, enable, registry

from kubesched._cache import Cache
from kubesched._queue import QueueNominator
from kubesched._runtime.handle import FrameworkHandle
from kubesched._runtime.profile import build_framework
from kubesched.cluster.memory import MemoryObjects
from kubesched.config import default_configuration
from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features
from kubesched.framework import CycleState, NodeInfo, PodInfo, Status
from kubesched.objects import Node, Pod
from kubesched.plugins.registry import registry_for
from kubesched.scheduler import Scheduler, truncate_message


def make_scheduler(nodes: list[Node], pods: list[Pod] = (), *, deterministic: bool = True,  # type: ignore[assignment]
                   percentage: int = 0, profile: Any = None, reg: Any = None,
                   features: Features = FEATURES_1_36) -> Scheduler:
    cache = Cache(len(nodes) or 1)
    cache.add_nodes(nodes)
    for p in pods:
        cache.add_pod(p)
    nominator = QueueNominator()
    profile = profile if profile is not None else default_configuration(features=features).profiles[0]
    handle = FrameworkHandle(cache, MemoryObjects(pods=pods), nominator, deterministic=deterministic,
                             rng=random.Random(1), features=features)
    fwk = build_framework(profile, reg if reg is not None else registry_for(features), handle)
    return Scheduler({profile.scheduler_name: fwk}, cache, nominator, deterministic=deterministic,
                     rng=random.Random(1), percentage_of_nodes_to_score=percentage, features=features)


def nodes(n: int, cpu: str = "4") -> list[Node]:
    return [make_node().name(f"node-{i}").capacity(cpu=cpu, memory="32Gi", pods=110).obj() for i in range(n)]


@pytest.mark.parametrize(
    ("num_nodes", "percentage", "expected"),
    [(10, 0, 10), (99, 0, 99), (100, 0, 100), (1000, 0, 420), (5000, 0, 500), (6000, 0, 300), (10000, 0, 500),
     (1000, 50, 500), (1000, 5, 100), (150, 20, 100)],
    ids=["all of 10 nodes", "all of 99 nodes", "100 nodes is the minimum", "1000 nodes adaptive 42 percent",
         "5000 nodes adaptive 10 percent", "6000 nodes floor 5 percent", "10000 nodes 5 percent",
         "configured 50 percent", "configured 5 percent has a floor of 100", "small percentage floors at 100"],
)
def test_num_feasible_nodes_to_find(num_nodes: int, percentage: int, expected: int) -> None:
    s = make_scheduler([], percentage=percentage)
    assert s.num_feasible_nodes_to_find(s.profiles["default-scheduler"], num_nodes) == expected


@pytest.mark.parametrize(("profile_pct", "expected"), [(None, 500), (0, 420), (20, 200)],
                         ids=["an unset profile percentage uses the global one",
                              "a profile percentage of 0 is adaptive even with a global one",
                              "a profile percentage overrides the global one"])
def test_profile_percentage_of_nodes_to_score(profile_pct: int | None, expected: int) -> None:
    # numFeasibleNodesToFind: the profile's value whenever it is set (non-nil), 0 included.
    s = make_scheduler([], percentage=50)
    fwk = s.profiles["default-scheduler"]
    fwk.percentage_of_nodes_to_score = profile_pct
    assert s.num_feasible_nodes_to_find(fwk, 1000) == expected


def test_filtering_cancels_after_the_kth_feasible_node_and_rotates_the_start_index() -> None:
    s = make_scheduler(nodes(200), percentage=50)
    a = s.schedule_one(make_pod().name("p").req(cpu="100m").obj())
    assert a.outcome == "Scheduled"
    assert len(a.feasible) == 100
    assert s.next_start_node_index == 100
    s.schedule_one(make_pod().name("q").req(cpu="100m").obj())
    assert s.next_start_node_index == 0


class OddNodesOut:
    """A user's per-node Filter plugin (no filter_batch): rejects the nodes listed in its args."""

    name = "OddNodesOut"

    def __init__(self, rejected: set[str]) -> None:
        self.rejected = rejected

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return Status.unschedulable("odd node") if node_info.name in self.rejected else None


def sampled_scheduler(names: list[str], rejected: set[str], per_node: bool) -> Scheduler:
    """120 nodes (numNodesToFind = 100); ``rejected`` fail a filter: by taint on the batch
    path, by a user's per-node plugin on the general one."""
    taint = not per_node
    built = [make_node().name(n).capacity(cpu="4", memory="32Gi", pods=110) for n in names]
    node_objs = [(b.taint("out", "x") if taint and b.obj().name in rejected else b).obj() for b in built]
    if not per_node:
        return make_scheduler(node_objs)
    cfg = config({"plugins": enable(filter=["OddNodesOut"])})
    return make_scheduler(node_objs, profile=cfg.profiles[0],
                          reg=registry(OddNodesOut=lambda args, handle: OddNodesOut(rejected)))


@pytest.mark.parametrize("per_node", [False, True], ids=["with batch filters", "with a per-node user filter"])
@pytest.mark.parametrize(("rejected_at", "feasible", "failures", "next_start"), [
    ([], 100, 0, 100),
    ([100, 101, 102], 100, 3, 103),
    ([5, 100, 101], 100, 3, 103),
    ([10, 20], 100, 2, 102),
    (list(range(100, 120)), 100, 20, 0),
    (list(range(30, 120)), 30, 90, 0),
], ids=["no failure: the 101st feasible node cancels the search uncounted",
        "nodes failing after the 100th feasible node keep their status",
        "failures on both sides of the 100th feasible node are all recorded",
        "failures before the 100th only",
        "every node after the 100th fails: the whole list is searched",
        "fewer feasible nodes than wanted: the whole list is searched"])
def test_the_search_runs_as_one_worker_until_the_node_after_the_kth_feasible_one(
        per_node: bool, rejected_at: list[int], feasible: int, failures: int, next_start: int) -> None:
    # findNodesThatPassFilters with one worker: a node that passes when numNodesToFind are
    # already feasible cancels the search and is dropped; nodes that failed before it stay
    # in the status map, and nextStartNodeIndex moves by feasible + failures.
    names = [f"n{i:03d}" for i in range(120)]
    s = sampled_scheduler(names, {names[i] for i in rejected_at}, per_node)
    a = s.schedule_one(make_pod().name("p").req(cpu="100m").obj())
    assert a.outcome == "Scheduled"
    assert len(a.feasible) == feasible
    assert sorted(a.diagnosis.node_to_status) == sorted(names[i] for i in rejected_at if i < feasible + failures)
    assert len(a.diagnosis.node_to_status) == failures
    assert s.next_start_node_index == next_start


def test_one_feasible_node_is_chosen_without_scoring() -> None:
    ns = nodes(3)
    a = make_scheduler(ns).schedule_one(make_pod().name("p").node_selector({"kubernetes.io/hostname": "node-1"}).obj())
    assert (a.outcome, a.node, a.scores) == ("Scheduled", "node-1", None)


def test_deterministic_ties_go_to_the_lowest_node_name() -> None:
    a = make_scheduler(nodes(12)).schedule_one(make_pod().name("p").obj())
    assert a.node == "node-0"
    assert sorted(a.feasible)[0] == "node-0"


def test_random_ties_spread_over_equal_nodes() -> None:
    s = make_scheduler(nodes(8), deterministic=False)
    chosen = {s.schedule_one(make_pod().name(f"p{i}").obj()).node for i in range(40)}
    assert len(chosen) > 1


@pytest.mark.parametrize(("features", "message"), [
    pytest.param(FEATURES_1_30, "0/4 nodes are available: 1 node(s) had untolerated taint {dedicated: ml}, 3 Insufficient "
                 "cpu. preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, 3 No preemption "
                 "victims found for incoming pod.", id="v1.30"),
    pytest.param(FEATURES_1_36, "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient cpu. no new "
                 "claims to deallocate, preemption: 0/4 nodes are available: 4 Preemption is not helpful for "
                 "scheduling.", id="1.36: 2 cpu on 1-cpu nodes is unresolvable"),
])
def test_fit_error_message_counts_reasons_sorted_as_strings(features: Features, message: str) -> None:
    ns = nodes(3, cpu="1") + [make_node().name("tainted").capacity(cpu="8", memory="32Gi", pods=110)
                               .taint("dedicated", "ml").obj()]
    a = make_scheduler(ns, features=features).schedule_one(make_pod().name("p").req(cpu="2").obj(features))
    assert a.outcome == "Unschedulable"
    assert a.message == message
    assert a.failures["node-0"].plugin == "NodeResourcesFit"


def test_no_nodes_is_its_own_message() -> None:
    a = make_scheduler([]).schedule_one(make_pod().name("p").obj())
    assert (a.outcome, a.message) == ("Unschedulable", "no nodes available to schedule pods")


def test_prefilter_rejection_gives_every_node_the_same_status() -> None:
    pod = make_pod().name("p").affinity({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["ghost"]}]}]}}}).obj()
    a = make_scheduler(nodes(3), features=FEATURES_1_30).schedule_one(pod)
    assert a.message == ("0/3 nodes are available: preemption: 0/3 nodes are available: "
                         "3 Preemption is not helpful for scheduling.")
    assert a.failures == {}
    # 1.36: the PreFilterResult names no existing node, so every node is absent and counted.
    a = make_scheduler(nodes(3)).schedule_one(pod)
    assert a.message == ("0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [NodeAffinity]. no new claims to "
                         "deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
    assert a.failures["node-0"].plugin == ""


def test_start_index_advances_modulo_all_nodes_when_prefilter_narrows_the_list() -> None:
    # findNodesThatFitPod: nextStartNodeIndex = (index + processed) % len(allNodes), not the
    # PreFilterResult's node count (2 processed of 5 nodes: 2, not 0).
    s = make_scheduler(nodes(5))
    pod = make_pod().name("p").affinity({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n]}]}
                              for n in ("node-1", "node-3")]}}}).obj()
    assert s.schedule_one(pod).outcome == "Scheduled"
    assert s.next_start_node_index == 2


def test_bound_pod_counts_in_the_next_cycle() -> None:
    s = make_scheduler(nodes(1, cpu="1"))
    assert s.schedule_one(make_pod().name("a").req(cpu="600m").obj()).outcome == "Scheduled"
    b = s.schedule_one(make_pod().name("b").req(cpu="600m").obj())
    assert b.outcome == "Unschedulable"
    assert "1 Insufficient cpu" in (b.message or "")


def test_messages_over_1024_characters_are_truncated_like_events() -> None:
    assert truncate_message("x" * 1024) == "x" * 1024
    t = truncate_message("y" * 2000)
    assert len(t) == 1024 and t.endswith(" ...")


def test_pod_for_an_unknown_profile_is_an_error_not_a_crash() -> None:
    a = make_scheduler(nodes(1)).schedule_one(make_pod().name("p").scheduler_name("other").obj())
    assert a.outcome == "Error" and "other" in (a.error or "")


def _random_cluster(rng: random.Random) -> tuple[list[Node], list[Pod], Pod]:
    zones = ["a", "b", "c"]
    ns: list[Node] = []
    for i in range(rng.randint(5, 60)):
        b = make_node().name(f"node-{i:02d}").capacity(cpu=rng.choice(["1", "2", "4"]), memory="8Gi", pods=110)
        b = b.label("kubernetes.io/hostname", f"node-{i:02d}")
        if rng.random() < 0.9:
            b = b.label("zone", rng.choice(zones))
        if rng.random() < 0.15:
            b = b.taint("dedicated", "x")
        ns.append(b.obj())
    running: list[Pod] = []
    for j in range(rng.randint(0, 40)):
        b = make_pod().name(f"run-{j}").uid(f"run-{j}").node(rng.choice(ns).name).req(cpu=rng.choice(["100m", "900m"]))
        if rng.random() < 0.5:
            b = b.label("app", rng.choice(["x", "y"]))
        if rng.random() < 0.2:
            b = b.affinity({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}})
        running.append(b.obj())
    p = make_pod().name("incoming").uid("incoming").label("app", "x").req(cpu=rng.choice(["100m", "1500m"]))
    if rng.random() < 0.5:
        p = p.node_affinity_in("zone", rng.sample(zones, rng.randint(1, 2)))
    if rng.random() < 0.5:
        p = p.spread(1, "zone", selector={"matchLabels": {"app": "x"}})
    if rng.random() < 0.5:
        p = p.affinity({**p.m["spec"].get("affinity", {}), "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}})
    if rng.random() < 0.3:
        p = p.toleration(key="dedicated", operator="Exists")
    return ns, running, p.obj()


@pytest.mark.parametrize("seed", range(40), ids=lambda s: f"random cluster {s}: batch filtering gives every "
                                                         "node the status RunFilterPlugins gives it")
def test_batch_filtering_statuses_equal_run_filter_plugins(seed: int) -> None:
    ns, running, pod = _random_cluster(random.Random(seed))
    s = make_scheduler(ns, running, percentage=100)
    fwk = s.profiles["default-scheduler"]
    state = CycleState()
    _, pre, _ = fwk.run_pre_filter_plugins(state, pod)
    if pre is not None:
        return
    want = {ni.name: fwk.run_filter_plugins(state, pod, ni) for ni in s.cache.snapshot.list()}
    a = s.schedule_one(pod)
    assert a.failures == {n: st for n, st in want.items() if st is not None}
    assert a.feasible == sorted(n for n, st in want.items() if st is None)
    assert a.diagnosis.unschedulable_plugins == {st.plugin for st in want.values() if st is not None}


class RecordingRejecter:
    """A user's per-node Filter plugin (no filter_batch) in the middle of the chain: rejects
    the nodes it is given and records every node it was asked about, in order."""

    name = "RecordingRejecter"

    def __init__(self, rejected: set[str], calls: list[str]) -> None:
        self.rejected = rejected
        self.calls = calls

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        self.calls.append(node_info.name)
        return Status.unschedulable("rejected by the user's plugin") if node_info.name in self.rejected else None


def _hybrid_case(seed: int, hybrid: bool) -> list[Any]:
    rng = random.Random(seed)
    n = rng.randint(5, 260)
    built = []
    for i in range(n):
        b = make_node().name(f"n{i:03d}").capacity(cpu=rng.choice(["1", "2", "4"]), memory="8Gi", pods=110)
        if rng.random() < 0.2:
            b = b.taint("dedicated", rng.choice(["a", "b"]))
        built.append(b.obj())
    running = [make_pod().name(f"r{i}").node(rng.choice(built).name).req(cpu=rng.choice(["500m", "1"])).obj()
               for i in range(rng.randint(0, n))]
    rejected = {node.name for node in built if rng.random() < 0.3}
    calls: list[str] = []
    # The user's plugin before TaintToleration and NodeResourcesFit (moved after it): batch
    # verdicts on both sides of it.
    moved = [{"name": "TaintToleration"}, {"name": "NodeResourcesFit"}]
    cfg = config({"plugins": {"filter": {"enabled": [{"name": "RecordingRejecter"}, *moved], "disabled": moved}}})
    s = make_scheduler(built, running, profile=cfg.profiles[0], percentage=rng.choice([0, 10, 50, 100]),
                       reg=registry(RecordingRejecter=lambda args, handle: RecordingRejecter(rejected, calls)))
    s.hybrid_filters = hybrid
    for i in range(rng.randint(0, 6)):
        nominee = make_pod().name(f"nominee-{i}").priority(rng.choice([0, 10])).req(cpu=rng.choice(["1", "2"])).obj()
        s.nominator.add(PodInfo(nominee), rng.choice(built).name)
    out: list[Any] = []
    for j in range(4):
        b = make_pod().name(f"p{j}").req(cpu=rng.choice(["100m", "1", "3"]))
        if rng.random() < 0.5:
            b = b.toleration(key="dedicated", operator="Exists")
        a = s.schedule_one(b.obj())
        out.append((a.outcome, a.node, a.feasible, sorted((k, v.code, v.reasons, v.plugin)
                                                          for k, v in a.diagnosis.node_to_status.items()),
                    a.message, s.next_start_node_index, list(calls)))
        calls.clear()
    return out


@pytest.mark.parametrize("seed", range(60), ids=lambda s: f"random cluster {s}: batch filters around a per-node "
                                                          "plugin decide as the node-by-node loop")
def test_batch_filters_around_a_per_node_plugin_equal_the_node_by_node_loop(seed: int) -> None:
    got = _hybrid_case(seed, True)
    assert got == _hybrid_case(seed, False)
    assert any(calls for *_, calls in got)  # the per-node plugin took part
