"""DefaultPreemption's fast path — SelectVictimsOnNode as arithmetic on the node itself — gives
exactly what the per-node path gives (a clone of the node and of the cycle state, every
lower-priority pod removed through RemovePod, the whole Filter chain with the nominated pods
per reprieve): the same candidates, victims in the same order, PDB violations and node
statuses (code, reasons, plugin). So does the scheduler's filtering of nodes holding
nominated pods, against RunFilterPluginsWithNominatedPods.

The random clusters run the default profile's filters (NodeResourcesFit with and without
ignored resources / resource groups): nodes with zero, missing or tiny allocatable, extended
resources and hugepages, full pod slots, over-committed nodes, taints and unschedulable
nodes, pods of every priority relative to the preemptor (ties included), start times that
tie, are missing or come after "now", zero and empty requests, nominated pods of higher,
equal and lower priority (and the preemptor's own nomination), PDBs that are and are not
violated. The table-driven cases say when the fast path is (not) taken.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from builders import make_node, make_pod, obj
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched._runtime.framework import Framework
from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.config.args import NodeResourcesFitArgs
from kubesched.framework import CycleState, NodeInfo, PodInfo, Status
from kubesched.objects import Node, Pod, PodDisruptionBudget
from kubesched.plugins.defaultbinder import DefaultBinder
from kubesched.plugins.defaultpreemption import Candidate, DefaultPreemption
from kubesched.plugins.helpers.filterplan import filter_plan
from kubesched.plugins.queuesort import PrioritySort
from kubesched.plugins.registry import REGISTRY
from kubesched.scheduler import Diagnosis, Scheduler

DEFAULT_FILTERS = ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
                   "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone",
                   "PodTopologySpread", "InterPodAffinity")
SCALARS = ("example.com/gpu", "nvidia.com/gpu", "hugepages-2Mi")
FIT_ARGS: tuple[NodeResourcesFitArgs | None, ...] = (
    None,
    NodeResourcesFitArgs(ignored_resources=("example.com/gpu",)),
    NodeResourcesFitArgs(ignored_resource_groups=("nvidia.com",)),
)


# ----------------------------------------------------------------------------- environment
@dataclass
class Env:
    handle: FrameworkHandle
    fw: Framework
    pl: DefaultPreemption
    pdbs: list[PodDisruptionBudget]

    def nodes(self) -> list[NodeInfo]:
        return list(self.handle.snapshot.list())

    def pre_filter(self, p: Pod) -> CycleState:
        state = CycleState()
        _, s, _ = self.fw.run_pre_filter_plugins(state, p)
        assert s is None or s.is_success(), s
        return state


def make_env(nodes: Sequence[Node], pods: Sequence[Pod], *, pdbs: Sequence[PodDisruptionBudget] = (),
             fit_args: NodeResourcesFitArgs | None = None, extra: Sequence[Any] = (),
             objects: MemoryObjects | None = None, filters: Sequence[str] = DEFAULT_FILTERS) -> Env:
    objects = objects if objects is not None else MemoryObjects(pdbs=pdbs, pods=pods)
    handle = FrameworkHandle.for_nodes(nodes, pods, objects, deterministic=True)
    plugins = [REGISTRY[name](fit_args if name == "NodeResourcesFit" else None, handle) for name in filters]
    plugins += list(extra)
    pl = DefaultPreemption(None, handle)
    points = {
        "QueueSort": [PrioritySort(handle)],
        "PreFilter": [p for p in plugins if hasattr(p, "pre_filter")],
        "Filter": [p for p in plugins if hasattr(p, "filter")],
        "PostFilter": [pl],
        "Score": [REGISTRY["NodeResourcesBalancedAllocation"](None, handle)],
        "Bind": [DefaultBinder(handle)],
    }
    fw = Framework("default-scheduler", points, {}, handle)
    return Env(handle, fw, pl, list(pdbs))


def ts(seconds: int) -> str:
    return f"1970-01-01T00:00:{seconds:02d}Z"


def pdb(app: str, allowed: int, disrupted: Sequence[str] = (), ns: str = "default", name: str = "pdb"
        ) -> PodDisruptionBudget:
    m: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                         "metadata": {"name": name, "namespace": ns},
                         "spec": {"selector": {"matchLabels": {"app": app}}},
                         "status": {"disruptionsAllowed": allowed,
                                    "disruptedPods": {p: "2024-01-01T00:00:00Z" for p in disrupted}}}
    b: PodDisruptionBudget = obj(m)
    return b


# ----------------------------------------------------------------------------- random clusters
def random_requests(rng: random.Random) -> dict[str, str]:
    r: dict[str, str] = {}
    if rng.random() < 0.8:
        r["cpu"] = rng.choice(["0", "100m", "250m", "500m", "1", "1", "2"])
    if rng.random() < 0.7:
        r["memory"] = rng.choice(["0", "100Mi", "512Mi", "1Gi", "2Gi"])
    if rng.random() < 0.15:
        r["ephemeral-storage"] = rng.choice(["0", "1Gi", "5Gi"])
    if rng.random() < 0.25:
        r[rng.choice(SCALARS)] = str(rng.choice([0, 1, 1, 2]))
    if rng.random() < 0.05:
        r["pods"] = "2"
    return r


def random_node(rng: random.Random, i: int) -> Node:
    cap: dict[str, Any] = {"pods": rng.choice([0, 1, 2, 3, 4, 6, 110, 110])}
    if rng.random() < 0.95:
        cap["cpu"] = rng.choice(["0", "500m", "1", "2", "4", "4"])
    if rng.random() < 0.95:
        cap["memory"] = rng.choice(["0", "1Gi", "2Gi", "4Gi", "8Gi"])
    if rng.random() < 0.3:
        cap["ephemeral-storage"] = rng.choice(["0", "2Gi", "10Gi"])
    for s in SCALARS:
        if rng.random() < 0.35:
            cap[s] = str(rng.choice([0, 1, 2, 4]))
    b = make_node().name(f"node-{i:02d}").capacity_map(cap).label("zone", rng.choice("ab"))
    if rng.random() < 0.1:
        b = b.taint("dedicated", "x")
    if rng.random() < 0.05:
        b = b.unschedulable()
    return b.obj()


def random_pod(rng: random.Random, name: str, priority: int, *, on: str = "", nominated: bool = False) -> Pod:
    ns = rng.choice(["default", "default", "other"])
    b = make_pod().name(name).namespace(ns).priority(priority)
    for _ in range(rng.choice([0, 1, 1, 1, 2])):
        req = random_requests(rng)
        b = b.container(requests=req) if req else b.container()
    if on:
        b = b.node(on)
    if not nominated:
        start = rng.choice([None, 1, 2, 2, 3, 5, 8])
        if start is not None:
            b = b.start_time(ts(start))
    if rng.random() < 0.6:
        b = b.label("app", rng.choice("ab"))
    p: Pod = b.obj()
    return p


PRIORITIES = (-5, 0, 0, 5, 10, 20)


@dataclass
class Case:
    env: Env
    pod: Pod
    state: CycleState
    now: float


def random_case(seed: int) -> Case:
    rng = random.Random(seed)
    nodes = [random_node(rng, i) for i in range(rng.randint(1, 10))]
    names = [n.meta.name for n in nodes]
    running = [random_pod(rng, f"run-{i}", rng.choice(PRIORITIES), on=rng.choice(names))
               for i in range(rng.randint(0, 40))]
    pdbs = [pdb(rng.choice("ab"), rng.choice([0, 0, 1, 2]), rng.sample([p.name for p in running], min(len(running), 2))
                if rng.random() < 0.3 else (), ns=rng.choice(["default", "default", "other"]), name=f"pdb-{i}")
            for i in range(rng.choice([0, 0, 1, 2, 3]))]
    env = make_env(nodes, running, pdbs=pdbs, fit_args=rng.choice(FIT_ARGS))
    b = make_pod().name("preemptor").priority(rng.choice((0, 5, 10, 15, 100, 100)))
    for _ in range(rng.choice([0, 1, 1, 2])):
        req = random_requests(rng)
        b = b.container(requests=req) if req else b.container()
    if rng.random() < 0.3:
        b = b.toleration(key="dedicated", operator="Exists")
    if rng.random() < 0.2:
        b = b.node_selector({"zone": "a"})
    preemptor = b.obj()
    for i in range(rng.choice([0, 1, 2, 4])):
        p = random_pod(rng, f"nominee-{i}", rng.choice((0, 5, 10, 15, 100)), nominated=True)
        env.handle.nominator.add(PodInfo(p), rng.choice(names))
    if rng.random() < 0.2:
        env.handle.nominator.add(PodInfo(preemptor), rng.choice(names))
    now = rng.choice([1e9, 1e9, 2.5, 4.0])
    return Case(env, preemptor, env.pre_filter(preemptor), now)


def status_key(s: Status | None) -> tuple[Any, ...] | None:
    return None if s is None or s.is_success() else (s.code, s.reasons, s.plugin)


def victims_key(result: tuple[list[Pod], int, Status | None]) -> tuple[Any, ...]:
    pods, num, status = result
    return [p.uid for p in pods], num, status_key(status)


def candidates_key(candidates: list[Candidate]) -> list[tuple[Any, ...]]:
    return [(c.name, [p.uid for p in c.victims.pods], c.victims.num_pdb_violations) for c in candidates]


def dry_run(case: Case, nodes: Sequence[NodeInfo], offset: int, num: int, fast: bool) -> tuple[Any, ...]:
    pl = case.env.pl
    pl.fast_path = fast
    try:
        candidates, statuses, errors = pl.dry_run_preemption(case.state, case.pod, nodes, case.env.pdbs, offset, num,
                                                             case.now)
    finally:
        pl.fast_path = True
    return (candidates_key(candidates), {n: status_key(s) for n, s in statuses.items()},
            [status_key(s) for s in errors])


# ----------------------------------------------------------------------------- equality
@pytest.mark.parametrize("seed", range(300), ids=lambda s: f"random cluster {s}: fast SelectVictimsOnNode equals "
                                                           "the per-node path on every node")
def test_select_victims_fast_equals_the_per_node_path(seed: int) -> None:
    case = random_case(seed)
    env, pod, state = case.env, case.pod, case.state
    plan = env.pl.filter_plan(state, pod)
    assert plan is not None
    for ni in env.nodes():
        want = env.pl.select_victims_on_node(state.clone(), pod, ni.clone(), env.pdbs, case.now)
        got = env.pl.select_victims_fast(plan, state, pod, ni, env.pdbs, case.now)
        assert victims_key(got) == victims_key(want), ni.name
        # Again: the memoized outcome of an unchanged node.
        assert victims_key(env.pl.select_victims_fast(plan, state, pod, ni, env.pdbs, case.now)) == victims_key(want)


@pytest.mark.parametrize("seed", range(300), ids=lambda s: f"random cluster {s}: fast dry run equals the per-node "
                                                           "dry run")
def test_dry_run_fast_equals_the_per_node_path(seed: int) -> None:
    case = random_case(seed)
    rng = random.Random(-seed - 1)
    nodes = case.env.nodes()
    for _ in range(4):
        rng.shuffle(nodes)
        offset, num = rng.randrange(len(nodes)), rng.randint(1, len(nodes))
        assert dry_run(case, nodes, offset, num, True) == dry_run(case, nodes, offset, num, False)


@pytest.mark.parametrize("seed", range(300), ids=lambda s: f"random cluster {s}: nominated-pod filtering equals "
                                                           "RunFilterPluginsWithNominatedPods")
def test_scheduler_filters_nodes_with_nominated_pods_like_the_per_node_path(seed: int) -> None:
    case = random_case(seed)
    env, pod, state = case.env, case.pod, case.state
    sched = Scheduler({"default-scheduler": env.fw}, env.handle.cache, env.handle.nominator, deterministic=True)
    diagnosis = Diagnosis()
    nodes = env.nodes()
    feasible = sched.find_nodes_that_pass_filters(env.fw, state, pod, diagnosis, nodes)
    want = {ni.name: env.fw.run_filter_plugins_with_nominated_pods(state, pod, ni) for ni in nodes}
    assert sorted(ni.name for ni in feasible) == sorted(n for n, s in want.items() if status_key(s) is None)
    assert {n: status_key(s) for n, s in diagnosis.node_to_status.items()} == {
        n: status_key(s) for n, s in want.items() if status_key(s) is not None}


def dry_run_rows(case: Case, offset: int, num: int, cross: bool) -> tuple[Any, ...]:
    """The dry run as find_candidates calls it: over the snapshot's nodes with their table
    rows, the outcomes kept per row (``cross``) or looked up node by node."""
    pl = case.env.pl
    nodes = case.env.nodes()
    rows = np.array([ni.index for ni in nodes], np.int64)
    pl.cross_cache = cross
    try:
        candidates, statuses, errors = pl.dry_run_preemption(case.state, case.pod, nodes, case.env.pdbs, offset, num,
                                                             case.now, [ni.name for ni in nodes], rows)
    finally:
        pl.cross_cache = True
    return (candidates_key(candidates), [(n, status_key(s)) for n, s in statuses.items()],
            [status_key(s) for s in errors])


@pytest.mark.parametrize("seed", range(200), ids=lambda s: f"random cluster {s}: outcomes kept per table row give the "
                                                           "node-by-node dry run, as pods come and go")
def test_dry_run_over_rows_equals_the_node_by_node_walk(seed: int) -> None:
    case = random_case(seed)
    rng = random.Random(seed + 7)
    cache = case.env.handle.cache
    names = [ni.name for ni in case.env.nodes()]
    for step in range(8):
        n = len(names)
        offset, num = rng.randrange(n), rng.randint(1, n)
        got = dry_run_rows(case, offset, num, True)
        assert got == dry_run_rows(case, offset, num, False)
        # Again, from the kept outcomes.
        assert dry_run_rows(case, offset, num, True) == got
        # The cluster changes: a pod goes, a pod comes (the table's change log tells).
        on_nodes = [pi.pod for ni in case.env.nodes() for pi in ni.pods]
        if on_nodes and rng.random() < 0.6:
            cache.remove_pod(rng.choice(on_nodes))
        if rng.random() < 0.6:
            cache.add_pod(random_pod(rng, f"late-{step}", rng.choice(PRIORITIES), on=rng.choice(names)))
        # ... and nominations come, move and go (the nominator's change log tells).
        nominator = case.env.handle.nominator
        if rng.random() < 0.5:
            nominee = random_pod(rng, f"nominee-late-{step}", rng.choice((0, 5, 10, 15, 100)), nominated=True)
            nominator.add(PodInfo(nominee), rng.choice(names))
        nominated = [pi.pod for _, pis in nominator.nominated_items() for pi in pis]
        if nominated and rng.random() < 0.4:
            nominator.delete(rng.choice(nominated))
        if nominated and rng.random() < 0.3:
            nominator.add(PodInfo(rng.choice(nominated)), rng.choice(names))
        if rng.random() < 0.15:
            nominator.add(PodInfo(case.pod), rng.choice(names))


def _requests(cpu: int, memory: int, gpu: int | None) -> dict[str, str]:
    r = {"cpu": f"{cpu}m", "memory": str(memory)} if cpu >= 0 else {}
    if gpu is not None:
        r["example.com/gpu"] = str(gpu)
    return r


_pod_shape = st.tuples(st.sampled_from([-1, 0, 1, 2]), st.one_of(st.none(), st.integers(0, 5)),
                       st.integers(-1, 2000), st.integers(0, 3000), st.one_of(st.none(), st.integers(0, 2)),
                       st.sampled_from("ab"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(node_cpu=st.integers(0, 4000), node_mem=st.integers(0, 6000), node_pods=st.integers(0, 8),
       node_gpu=st.one_of(st.none(), st.integers(0, 3)), running=st.lists(_pod_shape, max_size=8),
       incoming=st.tuples(st.sampled_from([1, 2]), st.integers(-1, 2000), st.integers(0, 3000),
                          st.one_of(st.none(), st.integers(0, 2))),
       nominated=st.lists(st.tuples(st.sampled_from([0, 1, 2, 3]), st.integers(0, 2000), st.integers(0, 3000)),
                          max_size=3),
       budgets=st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 2)), max_size=2),
       fit_args=st.sampled_from(FIT_ARGS), now=st.sampled_from([1e9, 2.5]))
def test_one_node_fast_equals_per_node(node_cpu: int, node_mem: int, node_pods: int, node_gpu: int | None,
                                       running: list[tuple[int, int | None, int, int, int | None, str]],
                                       incoming: tuple[int, int, int, int | None],
                                       nominated: list[tuple[int, int, int]], budgets: list[tuple[str, int]],
                                       fit_args: NodeResourcesFitArgs | None, now: float) -> None:
    """Hypothesis: one node, exact small numbers (ties, exact fits, zero and empty requests,
    the pod count, an extended resource that may be ignored, nominated pods, PDBs)."""
    cap: dict[str, Any] = {"cpu": f"{node_cpu}m", "memory": str(node_mem), "pods": node_pods}
    if node_gpu is not None:
        cap["example.com/gpu"] = str(node_gpu)
    nodes = [make_node().name("n1").capacity_map(cap).obj()]
    pods = []
    for i, (prio, start, cpu, mem, gpu, app) in enumerate(running):
        b = make_pod().name(f"run-{i}").node("n1").priority(prio).label("app", app)
        req = _requests(cpu, mem, gpu)
        b = b.container(requests=req) if req else b.container()
        if start is not None:
            b = b.start_time(ts(start))
        pods.append(b.obj())
    pdbs = [pdb(app, allowed, name=f"pdb-{i}") for i, (app, allowed) in enumerate(budgets)]
    env = make_env(nodes, pods, pdbs=pdbs, fit_args=fit_args)
    prio, cpu, mem, gpu = incoming
    req = _requests(cpu, mem, gpu)
    b = make_pod().name("preemptor").priority(prio)
    preemptor = (b.container(requests=req) if req else b.container()).obj()
    for i, (nprio, ncpu, nmem) in enumerate(nominated):
        nominee = make_pod().name(f"nominee-{i}").priority(nprio).container(requests=_requests(ncpu, nmem, None)).obj()
        env.handle.nominator.add(PodInfo(nominee), "n1")
    state = env.pre_filter(preemptor)
    plan = env.pl.filter_plan(state, preemptor)
    assert plan is not None
    ni = env.nodes()[0]
    want = env.pl.select_victims_on_node(state.clone(), preemptor, ni.clone(), pdbs, now)
    assert victims_key(env.pl.select_victims_fast(plan, state, preemptor, ni, pdbs, now)) == victims_key(want)
    case = Case(env, preemptor, state, now)
    assert dry_run(case, [ni], 0, 1, True) == dry_run(case, [ni], 0, 1, False)


@pytest.mark.parametrize("seed", range(60), ids=lambda s: f"random cluster {s}: ResourceFit is NodeResourcesFit's "
                                                          "Filter on every node")
def test_resource_fit_is_the_filter_of_node_resources_fit(seed: int) -> None:
    """The resource-arithmetic contract itself: ``fit.status(fit.free(node))`` is the Filter's
    status (code and reasons), and the table's free vectors are the NodeInfos'."""
    case = random_case(seed)
    env = case.env
    fit_plugin = next(p for p in env.fw.filter if p.name == "NodeResourcesFit")
    table = env.handle.snapshot.table
    rng = random.Random(seed)
    for k in range(5):
        pod = case.pod if k == 0 else random_pod(rng, f"incoming-{k}", 0)
        st = CycleState()
        fit_plugin.pre_filter(st, pod)
        fit = fit_plugin.preemption_resource_fit(st, pod)
        assert fit is not None
        nodes = env.nodes()
        free = fit.table_free(table, np.array([ni.index for ni in nodes], np.int64))
        for i, ni in enumerate(nodes):
            assert free[:, i].tolist() == fit.free(ni)
            assert status_key(fit.status(fit.free(ni), fit.alloc(ni))) == status_key(
                None if (s := fit_plugin.filter(st, pod, ni)) is None else s.with_plugin(""))


def test_the_fast_path_clones_nothing_and_runs_no_filter_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    case = random_case(7)
    calls: list[str] = []
    for cls, name in ((NodeInfo, "clone"), (CycleState, "clone")):
        orig = getattr(cls, name)

        def spy(self: Any, _orig: Any = orig, _what: str = f"{cls.__name__}.{name}") -> Any:
            calls.append(_what)
            return _orig(self)
        monkeypatch.setattr(cls, name, spy)
    fw_calls: list[str] = []
    orig_run = case.env.handle.run_filter_plugins_with_nominated_pods

    def run(*a: Any) -> Status | None:
        fw_calls.append("filters")
        return orig_run(*a)
    monkeypatch.setattr(case.env.handle, "run_filter_plugins_with_nominated_pods", run)
    nodes = case.env.nodes()
    dry_run(case, nodes, 0, len(nodes), True)
    assert calls == [] and fw_calls == []
    dry_run(case, nodes, 0, len(nodes), False)
    assert calls and fw_calls


def test_a_node_changed_between_attempts_is_not_served_from_the_memo() -> None:
    nodes = [make_node().name("n1").capacity(cpu="2", memory="4Gi", pods=10).obj()]
    low = [make_pod().name(f"low-{i}").node("n1").priority(0).req(cpu="1").obj() for i in range(2)]
    env = make_env(nodes, low)
    pod = make_pod().name("p").priority(10).req(cpu="1").obj()
    state = env.pre_filter(pod)
    plan = env.pl.filter_plan(state, pod)
    assert plan is not None
    ni = env.nodes()[0]
    first = env.pl.select_victims_fast(plan, state, pod, ni, [], 1e9)
    assert [p.name for p in first[0]] == ["low-1"]
    env.handle.cache.remove_pod(low[1])
    env.handle.cache.add_pod(make_pod().name("low-2").node("n1").priority(5).req(cpu="1").obj())
    got = env.pl.select_victims_fast(plan, state, pod, ni, [], 1e9)
    want = env.pl.select_victims_on_node(state.clone(), pod, ni.clone(), [], 1e9)
    assert victims_key(got) == victims_key(want) and [p.name for p in got[0]] == ["low-0"]


def test_the_memo_follows_the_pdbs() -> None:
    nodes = [make_node().name("n1").capacity(cpu="2", memory="4Gi", pods=10).obj()]
    low = [make_pod().name(f"low-{i}").node("n1").priority(0).label("app", "ab"[i]).req(cpu="1")
           .start_time(ts(i + 1)).obj() for i in range(2)]
    env = make_env(nodes, low)
    pod = make_pod().name("p").priority(10).req(cpu="1").obj()
    state = env.pre_filter(pod)
    plan = env.pl.filter_plan(state, pod)
    assert plan is not None
    ni = env.nodes()[0]
    for pdbs in ([], [pdb("a", 0)], [pdb("a", 0)], [pdb("b", 0)], [pdb("a", 1)], []):
        want = env.pl.select_victims_on_node(state.clone(), pod, ni.clone(), pdbs, 1e9)
        for _ in range(2):
            assert victims_key(env.pl.select_victims_fast(plan, state, pod, ni, pdbs, 1e9)) == victims_key(want)
        case = Case(env, pod, state, 1e9)
        case.env.pdbs = pdbs
        assert dry_run(case, [ni], 0, 1, True) == dry_run(case, [ni], 0, 1, False)


# ----------------------------------------------------------------------------- when the fast path is taken
class UserFilter:
    """An out-of-tree filter without the fast-path contract."""

    name = "UserFilter"

    def filter(self, state: CycleState, p: Pod, ni: NodeInfo) -> Status | None:
        return None


class DeclaredUserFilter(UserFilter):
    """An out-of-tree filter that declares its verdict independent of the node's pods."""

    name = "DeclaredUserFilter"

    def preemption_fast_path(self, state: CycleState, p: Pod) -> bool:
        return True


class UserPreFilterExtensions:
    """An out-of-tree PreFilter plugin with AddPod/RemovePod and no Filter."""

    name = "UserPreFilterExtensions"

    def pre_filter(self, state: CycleState, p: Pod) -> tuple[None, None]:
        return None, None

    def pre_filter_extensions(self) -> UserPreFilterExtensions:
        return self

    def add_pod(self, *a: Any) -> None:
        return None

    def remove_pod(self, *a: Any) -> None:
        return None


def _base_pod() -> Any:
    return make_pod().name("p").priority(10).label("app", "web").req(cpu="1")


SERVICE = obj({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
               "spec": {"selector": {"app": "web"}}})
ANTI_AFFINITY = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}
AFFINITY = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}]}}

# (id, the preemptor, pods running on n1, extra plugins, objects, is the fast path taken)
PATH_CASES: list[tuple[str, Pod, list[Pod], list[Any], MemoryObjects | None, bool]] = [
    ("a pod with plain requests takes the fast path",
     _base_pod().obj(), [], [], None, True),
    ("a pod that requests nothing at all takes the fast path (pod count only)",
     make_pod().name("p").priority(10).obj(), [], [], None, True),
    ("a pod with tolerations and a node selector takes the fast path (node-only filters)",
     _base_pod().toleration(key="dedicated", operator="Exists").node_selector({"zone": "a"}).obj(), [], [], None,
     True),
    ("a pod selected by a Service gets the system default spreading, ScheduleAnyway: fast path",
     _base_pod().obj(), [], [], MemoryObjects(services=[SERVICE]), True),
    ("a pod with a DoNotSchedule topology spread constraint takes the per-node path",
     _base_pod().spread(1, "zone", selector={"matchLabels": {"app": "web"}}).obj(), [], [], None, False),
    ("a pod with only a ScheduleAnyway topology spread constraint takes the fast path",
     _base_pod().spread(1, "zone", when="ScheduleAnyway", selector={"matchLabels": {"app": "web"}}).obj(), [], [],
     None, True),
    ("a pod with required pod anti-affinity takes the per-node path",
     _base_pod().affinity(ANTI_AFFINITY).obj(), [], [], None, False),
    ("a pod with required pod affinity takes the per-node path",
     _base_pod().affinity(AFFINITY).obj(), [], [], None, False),
    ("a running pod whose required anti-affinity matches the pod sends it to the per-node path",
     _base_pod().obj(), [make_pod().name("guard").node("n1").affinity(ANTI_AFFINITY).obj()], [], None, False),
    ("a running pod whose required anti-affinity does not match the pod leaves the fast path",
     make_pod().name("p").priority(10).label("app", "api").req(cpu="1").obj(),
     [make_pod().name("guard").node("n1").affinity(ANTI_AFFINITY).obj()], [], None, True),
    ("a pod with a host port takes the per-node path",
     _base_pod().host_port(8080).obj(), [], [], None, False),
    ("a pod with a container port but no host port takes the fast path",
     _base_pod().container(ports=[{"containerPort": 80}]).obj(), [], [], None, True),
    ("a pod with a persistent volume claim takes the per-node path (volume filters run)",
     _base_pod().pvc("data").obj(), [], [],
     MemoryObjects(pvcs=[obj({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                              "metadata": {"name": "data", "namespace": "default",
                                           "annotations": {"pv.kubernetes.io/bind-completed": "true"}},
                              "spec": {"volumeName": "pv-1", "accessModes": ["ReadWriteOnce"]},
                              "status": {"phase": "Bound"}})],
                   pvs=[obj({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1"},
                             "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                      "claimRef": {"name": "data", "namespace": "default"},
                                      "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"}},
                             "status": {"phase": "Bound"}})]), False),
    ("an out-of-tree filter plugin without the contract sends every pod to the per-node path",
     _base_pod().obj(), [], [UserFilter()], None, False),
    ("an out-of-tree filter plugin declaring preemption_fast_path keeps the fast path",
     _base_pod().obj(), [], [DeclaredUserFilter()], None, True),
    ("an out-of-tree PreFilter plugin with AddPod/RemovePod and no contract sends the pod to the per-node path",
     _base_pod().obj(), [], [UserPreFilterExtensions()], None, False),
]


@pytest.mark.parametrize(("pod", "running", "extra", "objects", "fast"), [c[1:] for c in PATH_CASES],
                         ids=[c[0] for c in PATH_CASES])
def test_when_the_fast_path_is_taken(pod: Pod, running: list[Pod], extra: list[Any], objects: MemoryObjects | None,
                                     fast: bool) -> None:
    nodes = [make_node().name("n1").capacity(cpu="2", memory="4Gi", pods=10).label("zone", "a").obj(),
             make_node().name("n2").capacity(cpu="2", memory="4Gi", pods=10).label("zone", "b").obj()]
    low = [make_pod().name(f"low-{n}").node(n).priority(0).label("app", "web").req(cpu="2").obj()
           for n in ("n1", "n2")]
    env = make_env(nodes, [*running, *low], extra=extra, objects=objects)
    state = env.pre_filter(pod)
    plan = env.pl.filter_plan(state, pod)
    assert (plan is not None) == fast
    # Whichever path is taken, the dry run is the per-node path's.
    case = Case(env, pod, state, 1e9)
    all_nodes = env.nodes()
    assert dry_run(case, all_nodes, 0, 2, True) == dry_run(case, all_nodes, 0, 2, False)


def test_without_a_resource_filter_every_pod_is_reprieved_on_both_paths() -> None:
    nodes = [make_node().name("n1").capacity(cpu="1", memory="1Gi", pods=1).obj(),
             make_node().name("n2").capacity(cpu="1", memory="1Gi", pods=1).taint("dedicated", "x").obj()]
    low = [make_pod().name(f"low-{n}").node(n).priority(0).req(cpu="1").obj() for n in ("n1", "n2")]
    env = make_env(nodes, low, filters=[f for f in DEFAULT_FILTERS if f != "NodeResourcesFit"])
    pod = _base_pod().obj()
    state = env.pre_filter(pod)
    plan = env.pl.filter_plan(state, pod)
    assert plan is not None and not plan.resource_steps
    case = Case(env, pod, state, 1e9)
    got = dry_run(case, env.nodes(), 0, 2, True)
    assert got == dry_run(case, env.nodes(), 0, 2, False)
    assert got[1]["n1"][1] == ('expected at least one victim pod on node "n1"',)
    assert got[1]["n2"][2] == "TaintToleration"


def test_a_handle_without_plugins_at_takes_the_per_node_path() -> None:
    env = make_env([make_node().name("n1").capacity(cpu="2", memory="4Gi", pods=10).obj()], [])
    pod = _base_pod().obj()
    state = env.pre_filter(pod)

    class OldHandle:
        def __getattr__(self, name: str) -> Any:
            if name == "plugins_at":
                raise AttributeError(name)
            return getattr(env.handle, name)
    env.pl.handle = OldHandle()  # type: ignore[assignment]
    assert env.pl.filter_plan(state, pod) is None


def test_the_plan_lists_the_active_filters_in_order() -> None:
    env = make_env([make_node().name("n1").capacity(cpu="2", memory="4Gi", pods=10).obj()], [])
    pod = _base_pod().toleration(key="dedicated", operator="Exists").obj()
    state = env.pre_filter(pod)
    plan = filter_plan(env.fw.filter, env.fw.pre_filter, state, pod)
    assert plan is not None
    assert [(s.plugin.name, s.fit is not None) for s in plan.steps] == [
        ("NodeUnschedulable", False), ("NodeName", False), ("TaintToleration", False), ("NodeResourcesFit", True)]
    step = plan.steps[3]
    assert step.fit is not None and step.fit.names == ("pods", "cpu")
