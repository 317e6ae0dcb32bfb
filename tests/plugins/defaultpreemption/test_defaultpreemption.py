"""DefaultPreemption (upstream default_preemption_test.go: TestPostFilter, TestDryRunPreemption,
TestSelectBestCandidate, TestPodEligibleToPreemptOthers, TestPreempt, and the v1.30
pickOneNodeForPreemption criteria), on a real Framework over a FrameworkHandle.

The resource filter is a small test plugin (``ToyFit``: pods, cpu, memory like
NodeResourcesFit's fitsRequest) so these tests pin preemption, not resource accounting.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from builders import make_node, make_pod, obj

from kubesched._runtime.framework import Framework
from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.config.args import DefaultPreemptionArgs
from kubesched.errors import ApiError, ConfigError
from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features
from kubesched.framework import (
    GVK,
    NOMINATING_OVERRIDE,
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    NodeInfo,
    NominatingInfo,
    PodInfo,
    PostFilterResult,
    QueueingHint,
    StateKey,
    Status,
)
from kubesched.objects import Node, Pod, PodDisruptionBudget
from kubesched.plugins import defaultpreemption
from kubesched.plugins.defaultbinder import DefaultBinder
from kubesched.plugins.defaultpreemption import NAME, Candidate, DefaultPreemption, PreemptionResult, Victims
from kubesched.plugins.defaultpreemption.plugin import (
    earliest_pod_start_time,
    filter_pods_with_pdb_violation,
    more_important_pod,
    pick_one_node_for_preemption,
)
from kubesched.plugins.queuesort import PrioritySort

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
ONE_POD = {"pods": 1}
NODE_RES = {"cpu": "200m", "memory": "400"}


# ----------------------------------------------------------------------------- builders
def ts(seconds: int) -> str:
    return f"1970-01-01T00:00:{seconds:02d}Z"


def node(name: str, res: dict[str, Any] | None = None, **labels: str) -> Node:
    """st.MakeNode().Capacity(res): pods default to 32 unless res says otherwise."""
    cap: dict[str, Any] = {"pods": 32}
    cap.update(res if res is not None else VERY_LARGE)
    b = make_node().name(name).capacity_map(cap)
    for k, v in labels.items():
        b = b.label(k, v)
    return b.obj()


def pod(name: str, prio: int | None = None, on: str = "", req: dict[str, str] | None = None, start: int | None = None,
        labels: dict[str, str] | None = None, policy: str = "", nominated: str = "", terminating: bool = False,
        conditions: list[dict[str, str]] | None = None) -> Pod:
    b = make_pod().name(name)
    if prio is not None:
        b = b.priority(prio)
    if on:
        b = b.node(on)
    if req:
        b = b.container(requests=req)
    if start is not None:
        b = b.start_time(ts(start))
    if labels:
        b = b.labels(labels)
    if policy:
        b = b.preemption_policy(policy)
    if nominated:
        b = b.nominated(nominated)
    if terminating:
        b = b.terminating()
    m = b.manifest()
    if conditions:
        m.setdefault("status", {})["conditions"] = conditions
    p: Pod = obj(m)
    return p


def pdb(selector: dict[str, Any] | None, allowed: int, disrupted: Sequence[str] = (), name: str = "pdb",
        ns: str = "default") -> PodDisruptionBudget:
    m: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                         "metadata": {"name": name, "namespace": ns}, "spec": {},
                         "status": {"disruptionsAllowed": allowed,
                                    "disruptedPods": {p: "2024-01-01T00:00:00Z" for p in disrupted}}}
    if selector is not None:
        m["spec"]["selector"] = selector
    b: PodDisruptionBudget = obj(m)
    return b


# ----------------------------------------------------------------------------- test plugins
_FIT_KEY: StateKey[bool] = StateKey("PreFilterToyFit")


class ToyFit:
    """PreFilter + Filter: NodeResourcesFit's fitsRequest for pods, cpu and memory."""

    name = "ToyFit"

    def pre_filter(self, state: CycleState, p: Pod) -> tuple[None, None]:
        state.write(_FIT_KEY, True)
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, p: Pod, ni: NodeInfo) -> Status | None:
        reasons = []
        if len(ni.pods) + 1 > ni.allocatable.allowed_pod_number:
            reasons.append("Too many pods")
        cpu, mem = p.requests.get("cpu", 0), p.requests.get("memory", 0)
        if cpu > 0 and cpu > ni.allocatable.milli_cpu - ni.requested.milli_cpu:
            reasons.append("Insufficient cpu")
        if mem > 0 and mem > ni.allocatable.memory - ni.requested.memory:
            reasons.append("Insufficient memory")
        return Status.unschedulable(*reasons) if reasons else None


class ErrorOnLabel:
    """Upstream TestPlugin: AddPod/RemovePod fail on nodes labeled error=true."""

    name = "test-plugin"

    def pre_filter(self, state: CycleState, p: Pod) -> tuple[None, None]:
        return None, None

    def pre_filter_extensions(self) -> ErrorOnLabel:
        return self

    def add_pod(self, state: CycleState, p: Pod, pi: PodInfo, ni: NodeInfo) -> Status | None:
        if ni.node is not None and ni.node.labels.get("error") == "true":
            return Status.as_error(f"failed to add pod: {p.name}")
        return None

    def remove_pod(self, state: CycleState, p: Pod, pi: PodInfo, ni: NodeInfo) -> Status | None:
        if ni.node is not None and ni.node.labels.get("error") == "true":
            return Status.as_error(f"failed to remove pod: {p.name}")
        return None

    def filter(self, state: CycleState, p: Pod, ni: NodeInfo) -> Status | None:
        return None


@dataclass
class CountingFilter:
    """Upstream FakeFilterPlugin: counts calls; returns the code configured for the node."""

    codes: dict[str, Code] = field(default_factory=dict)
    calls: int = 0
    name: str = "FakeFilter"

    def filter(self, state: CycleState, p: Pod, ni: NodeInfo) -> Status | None:
        self.calls += 1
        code = self.codes.get(ni.name, Code.SUCCESS)
        return None if code == Code.SUCCESS else Status(code, (f"injecting failure for pod {p.name}",))


class _Conflicts:
    """Per-node count of pods labeled conflict=yes (mutated by AddPod/RemovePod)."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def clone(self) -> _Conflicts:
        return _Conflicts(dict(self.counts))


_CONFLICT_KEY: StateKey[_Conflicts] = StateKey("PreFilterConflict")


class Conflict:
    """A toy anti-affinity whose Filter reads only the PreFilter state: the pod cannot join
    a node running a conflict=yes pod. Proves RemovePod/AddPod run on a per-node state copy."""

    name = "Conflict"

    handle: FrameworkHandle | None = None

    def pre_filter(self, state: CycleState, p: Pod) -> tuple[None, None]:
        assert self.handle is not None
        counts = {ni.name: sum(1 for pi in ni.pods if pi.pod.labels.get("conflict") == "yes")
                  for ni in self.handle.snapshot.list()}
        state.write(_CONFLICT_KEY, _Conflicts(counts))
        return None, None

    def pre_filter_extensions(self) -> Conflict:
        return self

    def _update(self, state: CycleState, pi: PodInfo, ni: NodeInfo, d: int) -> Status | None:
        if pi.pod.labels.get("conflict") == "yes":
            s = state.read(_CONFLICT_KEY)
            s.counts[ni.name] = s.counts.get(ni.name, 0) + d
        return None

    def add_pod(self, state: CycleState, p: Pod, pi: PodInfo, ni: NodeInfo) -> Status | None:
        return self._update(state, pi, ni, 1)

    def remove_pod(self, state: CycleState, p: Pod, pi: PodInfo, ni: NodeInfo) -> Status | None:
        return self._update(state, pi, ni, -1)

    def filter(self, state: CycleState, p: Pod, ni: NodeInfo) -> Status | None:
        if state.read(_CONFLICT_KEY).counts.get(ni.name, 0) > 0:
            return Status.unschedulable("node(s) had a conflicting pod")
        return None


# ----------------------------------------------------------------------------- environment
@dataclass
class Env:
    handle: FrameworkHandle
    fw: Framework
    pl: DefaultPreemption
    deleted: list[tuple[Pod, str]]
    cleared: list[str]

    def nodes(self) -> list[NodeInfo]:
        return sorted(self.handle.snapshot.list(), key=lambda ni: ni.name)

    def pre_filter(self, p: Pod) -> CycleState:
        state = CycleState()
        _, s, _ = self.fw.run_pre_filter_plugins(state, p)
        assert s is None or s.is_success()
        return state

    def filter_statuses(self, state: CycleState, p: Pod) -> dict[str, Status]:
        out: dict[str, Status] = {}
        for ni in self.handle.snapshot.list():
            s = self.fw.run_filter_plugins_with_nominated_pods(state, p, ni)
            if s is not None and not s.is_success():
                out[ni.name] = s
        return out

    def post_filter(self, p: Pod, statuses: dict[str, Status] | None = None) -> tuple[PostFilterResult | None, Status]:
        state = self.pre_filter(p)
        if statuses is None:
            statuses = self.filter_statuses(state, p)
        return self.pl.post_filter(state, p, statuses)

    def dry_run(self, p: Pod, pdbs: Sequence[PodDisruptionBudget] = (), offset: int | None = None
                ) -> list[Candidate]:
        state = self.pre_filter(p)
        nodes = self.nodes()
        off, num = self.pl.get_offset_and_num_candidates(len(nodes))
        if offset is not None:
            off, num = offset, self.pl.calculate_num_candidates(len(nodes))
        got, _, _ = self.pl.dry_run_preemption(state, p, nodes, pdbs, off, num, now=1e9)
        return got


def make_env(nodes: Sequence[Node], pods: Sequence[Pod] = (), *, plugins: Sequence[Any] | None = None,
             pdbs: Sequence[PodDisruptionBudget] = (), extra_pods: Sequence[Pod] = (),
             args: DefaultPreemptionArgs | None = None, deterministic: bool = True,
             rng: random.Random | None = None, deleter: Callable[[Pod, str], None] | None = None,
             features: Features | None = None) -> Env:
    objects = MemoryObjects(pdbs=pdbs, pods=[*pods, *extra_pods])
    deleted: list[tuple[Pod, str]] = []
    cleared: list[str] = []
    box: list[FrameworkHandle] = []

    def delete(victim: Pod, reason: str) -> None:
        if deleter is not None:
            deleter(victim, reason)
        deleted.append((victim, reason))
        box[0].cache.remove_pod(victim)
        objects.delete_pod(victim)

    def clear(p: Pod) -> None:
        cleared.append(p.name)
        box[0].nominator.delete(p)

    handle = FrameworkHandle.for_nodes(nodes, pods, objects, deterministic=deterministic, rng=rng, deleter=delete,
                                       clear_nomination=clear, features=features)
    box.append(handle)
    pl = defaultpreemption.new(args, handle)
    plugins = list(plugins) if plugins is not None else [ToyFit()]
    points = {
        "QueueSort": [PrioritySort(handle)],
        "PreFilter": [p for p in plugins if hasattr(p, "pre_filter")],
        "Filter": [p for p in plugins if hasattr(p, "filter")],
        "PostFilter": [pl],
        "Bind": [DefaultBinder(handle)],
    }
    fw = Framework("default-scheduler", points, {}, handle)
    return Env(handle, fw, pl, deleted, cleared)


def nominate(env: Env, p: Pod, node_name: str) -> None:
    env.handle.nominator.add(PodInfo(p), node_name)


def override(node_name: str) -> NominatingInfo:
    return NominatingInfo(node_name, NOMINATING_OVERRIDE)


# ----------------------------------------------------------------------------- TestPostFilter
U = Status.unschedulable()
UU = Status.unresolvable()

PostFilterCase = tuple[str, Pod, list[Pod], list[Node], dict[str, Status], list[PodDisruptionBudget], str, Status]
POST_FILTER_CASES: list[PostFilterCase] = [
    ("pod with higher priority can be made schedulable",
     pod("p", HIGH), [pod("p1", on="node1")], [node("node1", ONE_POD)], {"node1": U}, [],
     "node1", Status()),
    ("pod with tied priority is still unschedulable",
     pod("p"), [pod("p1", on="node1")], [node("node1", ONE_POD)], {"node1": U}, [],
     "", Status.unschedulable("preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")),
    ("preemption respects an UnschedulableAndUnresolvable filter status",
     pod("p", HIGH), [pod("p1", on="node1")], [node("node1", ONE_POD)], {"node1": UU}, [],
     "", Status.unschedulable("preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")),
    ("a node absent from the status map counts as UnschedulableAndUnresolvable",
     pod("p", HIGH), [pod("p1", on="node1")], [node("node1", ONE_POD)], {}, [],
     "", Status.unschedulable("preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")),
    ("pod can be made schedulable on the one node with lower-priority pods",
     pod("p", MID), [pod("p1", HIGH, on="node1"), pod("p2", LOW, on="node2")],
     [node("node1", ONE_POD), node("node2", ONE_POD)], {"node1": U, "node2": U}, [],
     "node2", Status()),
    ("pod is nominated to the node whose most important victim has the lowest priority",
     pod("p", VERY_HIGH),
     [pod("p1", HIGH, on="node1", labels={"pdb": "non-violating"}),
      pod("p2", LOW, on="node1", labels={"pdb": "violating"}),
      pod("p3", MID, on="node2", labels={"pdb": "violating"})],
     [node("node1", ONE_POD), node("node2", ONE_POD)], {"node1": U, "node2": U},
     [pdb({"matchLabels": {"pdb": "violating"}}, 0, name="violating-pdb"),
      pdb({"matchLabels": {"pdb": "non-violating"}}, 2**31 - 1, name="non-violating-pdb")],
     "node2", Status()),
    ("no candidate when the pod does not fit even without the lower-priority pods",
     pod("p", HIGH, req=LARGE), [pod("p1", on="node1"), pod("p2", on="node2")],
     [node("node1", NODE_RES), node("node2", NODE_RES)], {"node1": U, "node2": U}, [],
     "", Status.unschedulable("preemption: 0/2 nodes are available: 2 Insufficient cpu.")),
    ("no candidate, mixed reasons: no lower-priority pod and not enough cpu",
     pod("p", HIGH, req=LARGE),
     [pod("p1", HIGH, on="node1"), pod("p2", on="node2"), pod("p3", HIGH, on="node3")],
     [node("node1", ONE_POD), node("node2", NODE_RES), node("node3", ONE_POD)],
     {"node1": U, "node2": U, "node3": U}, [],
     "", Status.unschedulable("preemption: 0/3 nodes are available: 1 Insufficient cpu, "
                              "2 No preemption victims found for incoming pod.")),
    ("no candidate, two unresolvable nodes and two nodes without enough cpu",
     pod("p", HIGH, req=LARGE), [pod("p1", on="node1"), pod("p2", on="node2")],
     [node("node1", NODE_RES), node("node2", NODE_RES), node("node3", NODE_RES), node("node4", NODE_RES)],
     {"node1": U, "node2": U, "node4": UU}, [],
     "", Status.unschedulable("preemption: 0/4 nodes are available: 2 Insufficient cpu, "
                              "2 Preemption is not helpful for scheduling.")),
    ("a node failing in RemovePod does not prevent nominating another node",
     pod("p", HIGH, req=LARGE), [pod("p1", on="node1"), pod("p2", on="node2", req=MEDIUM)],
     [node("node1", LARGE, error="true"), node("node2", LARGE)], {"node1": U, "node2": U}, [],
     "node2", Status()),
    ("the histogram of the no-candidate message sorts its entries as strings",
     pod("p", HIGH, req=LARGE), [pod(f"p{i}", on=f"node{i:02d}") for i in range(12)],
     [node(f"node{i:02d}", NODE_RES) for i in range(12)] + [node("nodeX", ONE_POD)],
     {**{f"node{i:02d}": U for i in range(12)}, "nodeX": U}, [],
     "", Status.unschedulable("preemption: 0/13 nodes are available: 1 No preemption victims found for incoming "
                              "pod, 12 Insufficient cpu.")),
]


@pytest.mark.parametrize(("pod_", "pods", "nodes", "statuses", "pdbs", "want_node", "want_status"),
                         [c[1:] for c in POST_FILTER_CASES], ids=[c[0] for c in POST_FILTER_CASES])
def test_post_filter(pod_: Pod, pods: list[Pod], nodes: list[Node], statuses: dict[str, Status],
                     pdbs: list[PodDisruptionBudget], want_node: str, want_status: Status) -> None:
    env = make_env(nodes, pods, plugins=[ToyFit(), ErrorOnLabel()], pdbs=pdbs)
    result, status = env.post_filter(pod_, statuses)
    assert status.code == want_status.code
    assert status.reasons == want_status.reasons
    assert result is not None
    assert result.nominating_info == override(want_node)


def test_post_filter_error_when_the_only_node_fails_in_remove_pod() -> None:
    env = make_env([node("node1", LARGE, error="true")], [pod("p1", on="node1")], plugins=[ToyFit(), ErrorOnLabel()])
    result, status = env.post_filter(pod("p", HIGH, req=LARGE), {"node1": U})
    assert result is None
    assert status.code == Code.ERROR
    # Upstream quotes the plugin name with %q ("test-plugin"); the framework runner formats it.
    assert re.fullmatch(r"preemption: running RemovePod on PreFilter plugin [\"']test-plugin[\"']: "
                        r"failed to remove pod: p", status.message), status.message


def test_post_filter_runs_through_the_framework() -> None:
    env = make_env([node("node1", ONE_POD)], [pod("p1", on="node1")])
    p = pod("p", HIGH)
    state = env.pre_filter(p)
    statuses = env.filter_statuses(state, p)
    assert statuses["node1"].reasons == ("Too many pods",)
    result, status = env.fw.run_post_filter_plugins(state, p, statuses)
    assert status.is_success()
    assert result is not None and result.nominating_info == override("node1")


# ----------------------------------------------------------------------------- TestDryRunPreemption
Expected = dict[str, tuple[list[str], int]]

DRY_RUN_CASES: list[tuple[str, list[str], Pod, list[Pod], list[PodDisruptionBudget], Code, Expected, int]] = [
    ("a pod that fits on no node even with preemption",
     ["node1", "node2"], pod("p", HIGH), [pod("p1", MID, on="node1"), pod("p2", MID, on="node2")], [],
     Code.UNSCHEDULABLE, {}, 2),
    ("a pod that fits on both nodes when lower priority pods are preempted",
     ["node1", "node2"], pod("p", HIGH, req=LARGE),
     [pod("p1", MID, on="node1", req=LARGE), pod("p2", MID, on="node2", req=LARGE)], [],
     Code.SUCCESS, {"node1": (["p1"], 0), "node2": (["p2"], 0)}, 4),
    ("no preemption when the running pods have higher priority",
     ["node1", "node2"], pod("p", LOW, req=LARGE),
     [pod("p1", MID, on="node1", req=LARGE), pod("p2", MID, on="node2", req=LARGE)], [],
     Code.SUCCESS, {}, 0),
    ("the medium priority pod is preempted but the small lower priority one stays",
     ["node1", "node2"], pod("p", HIGH, req=LARGE),
     [pod("p1.1", LOW, on="node1", req=SMALL), pod("p1.2", MID, on="node1", req=LARGE),
      pod("p2", MID, on="node2", req=LARGE)], [],
     Code.SUCCESS, {"node1": (["p1.2"], 0), "node2": (["p2"], 0)}, 5),
    ("mixed priority pods are preempted",
     ["node1", "node2"], pod("p", HIGH, req=LARGE),
     [pod("p1.1", MID, on="node1", req=SMALL), pod("p1.2", LOW, on="node1", req=SMALL),
      pod("p1.3", MID, on="node1", req=MEDIUM), pod("p1.4", HIGH, on="node1", req=SMALL),
      pod("p2", HIGH, on="node2", req=LARGE)], [],
     Code.SUCCESS, {"node1": (["p1.2", "p1.3"], 0)}, 4),
    ("among equal priorities the pod started later is preempted",
     ["node1", "node2"], pod("p", HIGH, req=LARGE),
     [pod("p1.1", LOW, on="node1", req=SMALL, start=5), pod("p1.2", LOW, on="node1", req=SMALL, start=4),
      pod("p1.3", MID, on="node1", req=MEDIUM, start=3), pod("p1.4", HIGH, on="node1", req=SMALL, start=2),
      pod("p2", HIGH, on="node2", req=LARGE, start=1)], [],
     Code.SUCCESS, {"node1": (["p1.1", "p1.3"], 0)}, 4),
    ("two victims of the same PDB with one disruption allowed count one violation",
     ["node1"], pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, on="node1", req=MEDIUM, labels={"app": "foo"}),
      pod("p1.2", MID, on="node1", req=MEDIUM, labels={"app": "foo"})],
     [pdb({"matchLabels": {"app": "foo"}}, 1)],
     Code.SUCCESS, {"node1": (["p1.1", "p1.2"], 1)}, 3),
    ("a disrupted pod that is not a victim does not change the count",
     ["node1"], pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, on="node1", req=MEDIUM, labels={"app": "foo"}),
      pod("p1.2", MID, on="node1", req=MEDIUM, labels={"app": "foo"})],
     [pdb({"matchLabels": {"app": "foo"}}, 1, disrupted=["p2"])],
     Code.SUCCESS, {"node1": (["p1.1", "p1.2"], 1)}, 3),
    ("a victim already in disruptedPods is not counted against the PDB",
     ["node1"], pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, on="node1", req=MEDIUM, labels={"app": "foo"}),
      pod("p1.2", MID, on="node1", req=MEDIUM, labels={"app": "foo"})],
     [pdb({"matchLabels": {"app": "foo"}}, 1, disrupted=["p1.2"])],
     Code.SUCCESS, {"node1": (["p1.1", "p1.2"], 0)}, 3),
    ("a disrupted victim is non-violating while the other two exhaust the budget",
     ["node1"], pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, on="node1", req=MEDIUM, labels={"app": "foo"}),
      pod("p1.2", MID, on="node1", req=MEDIUM, labels={"app": "foo"}),
      pod("p1.3", MID, on="node1", req=MEDIUM, labels={"app": "foo"})],
     [pdb({"matchLabels": {"app": "foo"}}, 1, disrupted=["p1.3"])],
     Code.SUCCESS, {"node1": (["p1.1", "p1.2", "p1.3"], 1)}, 4),
    ("a PDB with an empty selector protects nothing",
     ["node1"], pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, on="node1", req=MEDIUM, labels={"app": "foo"})],
     [pdb({}, 0)],
     Code.SUCCESS, {"node1": (["p1.1"], 0)}, 2),
    ("a PDB without a selector protects nothing",
     ["node1"], pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, on="node1", req=MEDIUM, labels={"app": "foo"})],
     [pdb(None, 0)],
     Code.SUCCESS, {"node1": (["p1.1"], 0)}, 2),
    ("a PDB in another namespace protects nothing",
     ["node1"], pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, on="node1", req=MEDIUM, labels={"app": "foo"})],
     [pdb({"matchLabels": {"app": "foo"}}, 0, ns="other")],
     Code.SUCCESS, {"node1": (["p1.1"], 0)}, 2),
]


@pytest.mark.parametrize(("node_names", "pod_", "pods", "pdbs", "fake_code", "expected", "calls"),
                         [c[1:] for c in DRY_RUN_CASES], ids=[c[0] for c in DRY_RUN_CASES])
def test_dry_run_preemption(node_names: list[str], pod_: Pod, pods: list[Pod], pdbs: list[PodDisruptionBudget],
                            fake_code: Code, expected: Expected, calls: int) -> None:
    fake = CountingFilter({n: fake_code for n in node_names})
    env = make_env([node(n) for n in node_names], pods, plugins=[fake, ToyFit()], pdbs=pdbs)
    got = env.dry_run(pod_, pdbs)
    assert {c.name: (sorted(p.name for p in c.victims.pods), c.victims.num_pdb_violations) for c in got} == expected
    assert fake.calls == calls


FIVE = ["node1", "node2", "node3", "node4", "node5"]
LIMITED_CASES: list[tuple[str, list[Pod], list[PodDisruptionBudget], int, list[str], int]] = [
    ("all nodes are possible candidates but the args limit the dry run to 2",
     [pod(f"p{i}", MID, on=f"node{i}", req=LARGE) for i in range(1, 6)], [], 1,
     ["node5", "node1"], 4),
    ("some nodes are not possible candidates and the args limit the dry run to 2",
     [pod("p1", MID, on="node1", req=LARGE), pod("p2", VERY_HIGH, on="node2", req=LARGE),
      pod("p3", MID, on="node3", req=LARGE), pod("p4", MID, on="node4", req=LARGE),
      pod("p5", VERY_HIGH, on="node5", req=LARGE)], [], 1,
     ["node1", "node3"], 4),
    ("the dry run looks past numCandidates until a node without PDB violations",
     [pod("p1", MID, on="node1", req=LARGE, labels={"app": "foo"}),
      pod("p2", MID, on="node2", req=LARGE, labels={"app": "foo"}),
      pod("p3", MID, on="node3", req=LARGE), pod("p4", MID, on="node4", req=LARGE),
      pod("p5", MID, on="node5", req=LARGE, labels={"app": "foo"})],
     [pdb({"matchLabels": {"app": "foo"}}, 0)], 2,
     ["node3", "node5", "node1"], 8),
]


@pytest.mark.parametrize(("pods", "pdbs", "absolute", "want", "calls"), [c[1:] for c in LIMITED_CASES],
                         ids=[c[0] for c in LIMITED_CASES])
def test_dry_run_stops_like_upstream_with_offset_4(pods: list[Pod], pdbs: list[PodDisruptionBudget], absolute: int,
                                                     want: list[str], calls: int) -> None:
    """Upstream's serial runs use offset 4 (Go rand seed 4); candidates come non-violating
    first, then violating, each list capped at numCandidates."""
    fake = CountingFilter()
    args = DefaultPreemptionArgs(min_candidate_nodes_percentage=40, min_candidate_nodes_absolute=absolute)
    env = make_env([node(n) for n in FIVE], pods, plugins=[fake, ToyFit()], pdbs=pdbs, args=args,
                   deterministic=False)
    got = env.dry_run(pod("p", HIGH, req=LARGE), pdbs, offset=4)
    assert [c.name for c in got] == want
    assert fake.calls == calls


class _Offsets(random.Random):
    """A random source returning scripted offsets (upstream's rand.NewSource(4) sequence)."""

    def __init__(self, offsets: list[int]) -> None:
        super().__init__(0)
        self.offsets = list(offsets)

    def randrange(self, *args: Any, **kwargs: Any) -> int:
        return self.offsets.pop(0)


def test_dry_run_offsets_across_cycles_wrap_around() -> None:
    args = DefaultPreemptionArgs(min_candidate_nodes_percentage=40, min_candidate_nodes_absolute=1)
    pods = [pod(f"p{i}", MID, on=f"node{i}", req=LARGE) for i in range(1, 6)]
    env = make_env([node(n) for n in FIVE], pods, args=args, deterministic=False, rng=_Offsets([4, 1, 3]))
    got = [sorted(c.name for c in env.dry_run(pod(f"tp{i}", HIGH, req=LARGE))) for i in range(3)]
    assert got == [["node1", "node5"], ["node2", "node3"], ["node4", "node5"]]


@pytest.mark.parametrize(("args", "want"), [
    (DefaultPreemptionArgs(min_candidate_nodes_percentage=40, min_candidate_nodes_absolute=1), ["node1", "node2"]),
    (DefaultPreemptionArgs(), FIVE),
], ids=["custom args stop the dry run at 40 percent of the nodes, from offset 0",
        "the default args (100 candidates at least) examine every node of a small cluster"])
def test_deterministic_dry_run_starts_at_offset_0_and_honours_the_args(args: DefaultPreemptionArgs,
                                                                       want: list[str]) -> None:
    """--deterministic: offset 0 instead of a random one; DryRunPreemption stops as upstream
    does once numCandidates candidates (one without PDB violations) are found."""
    pods = [pod(f"p{i}", MID, on=f"node{i}", req=LARGE) for i in range(1, 6)]
    env = make_env([node(n) for n in FIVE], pods, args=args, deterministic=True)
    assert env.pl.get_offset_and_num_candidates(5) == (0, len(want))
    assert [c.name for c in env.dry_run(pod("p", HIGH, req=LARGE))] == want


def test_state_changes_of_the_dry_run_stay_on_its_copies() -> None:
    """RemovePod runs on each node's own copy of the cycle state: the toy anti-affinity passes
    on both nodes once their conflicting pod is gone, and the real state is untouched."""
    nodes = [node("node1"), node("node2")]
    pods = [pod("c1", LOW, on="node1", labels={"conflict": "yes"}),
            pod("c2", LOW, on="node2", labels={"conflict": "yes"})]
    conflict = Conflict()
    env = make_env(nodes, pods, plugins=[conflict, ToyFit()])
    conflict.handle = env.handle
    p = pod("p", HIGH)
    state = env.pre_filter(p)
    got, statuses, errors = env.pl.dry_run_preemption(state, p, env.nodes(), [], 0, 2, now=1e9)
    assert [(c.name, [v.name for v in c.victims.pods]) for c in got] == [("node1", ["c1"]), ("node2", ["c2"])]
    assert not statuses and not errors
    assert state.read(_CONFLICT_KEY).counts == {"node1": 1, "node2": 1}


def test_nominated_pods_of_higher_priority_are_respected_in_the_dry_run() -> None:
    """The dry run filters with RunFilterPluginsWithNominatedPods: a higher-priority pod
    nominated to node1 keeps its room there, so only node2 is a candidate."""
    pods = [pod("v1", LOW, on="node1", req=LARGE), pod("v2", LOW, on="node2", req=LARGE)]
    env = make_env([node("node1"), node("node2")], pods)
    nominate(env, pod("n", VERY_HIGH, req=LARGE), "node1")
    got = env.dry_run(pod("p", HIGH, req=LARGE))
    assert [c.name for c in got] == ["node2"]


# ----------------------------------------------------------------------------- SelectVictimsOnNode
def test_select_victims_reprieves_pdb_violating_pods_first() -> None:
    """The violating pod is tried first and kept, although it is less important than the
    non-violating one; the victims are then re-sorted by importance."""
    pods = [pod("a", MID, on="node1", req=MEDIUM, start=1),
            pod("b", LOW, on="node1", req=MEDIUM, start=2, labels={"app": "db"}),
            pod("c", LOW, on="node1", req=MEDIUM, start=3)]
    pdbs = [pdb({"matchLabels": {"app": "db"}}, 0)]
    env = make_env([node("node1")], pods, pdbs=pdbs)
    p = pod("p", HIGH, req=LARGE)
    state = env.pre_filter(p)
    ni = env.nodes()[0].clone()
    victims, violations, status = env.pl.select_victims_on_node(state.clone(), p, ni, pdbs, now=1e9)
    assert status is None
    assert [v.name for v in victims] == ["a", "c"]
    assert violations == 0
    assert sorted(pi.pod.name for pi in ni.pods) == ["b"]


def test_select_victims_counts_violating_victims() -> None:
    pods = [pod("a", MID, on="node1", req=LARGE, start=1, labels={"app": "db"}),
            pod("b", LOW, on="node1", req=SMALL, start=2)]
    pdbs = [pdb({"matchLabels": {"app": "db"}}, 0)]
    env = make_env([node("node1")], pods, pdbs=pdbs)
    p = pod("p", HIGH, req=LARGE)
    victims, violations, status = env.pl.select_victims_on_node(env.pre_filter(p), p, env.nodes()[0].clone(), pdbs,
                                                                now=1e9)
    assert status is None
    assert [v.name for v in victims] == ["a"]
    assert violations == 1


def test_select_victims_without_lower_priority_pods_is_unresolvable() -> None:
    env = make_env([node("node1")], [pod("a", HIGH, on="node1")])
    p = pod("p", HIGH)
    victims, _, status = env.pl.select_victims_on_node(env.pre_filter(p), p, env.nodes()[0].clone(), [], now=1e9)
    assert victims == []
    assert status == Status.unresolvable("No preemption victims found for incoming pod")


def test_pdb_split_counts_budgets_down_in_order() -> None:
    pods = [PodInfo(pod(n, LOW, on="node1", labels={"app": "db"})) for n in ("a", "b", "c")]
    violating, ok = filter_pods_with_pdb_violation(pods, [pdb({"matchLabels": {"app": "db"}}, 1)])
    assert [pi.pod.name for pi in ok] == ["a"]
    assert [pi.pod.name for pi in violating] == ["b", "c"]
    unlabeled = [PodInfo(pod("x", LOW, on="node1"))]
    assert filter_pods_with_pdb_violation(unlabeled, [pdb({"matchExpressions": [
        {"key": "app", "operator": "DoesNotExist"}]}, 0)]) == ([], unlabeled)


# ----------------------------------------------------------------------------- TestSelectBestCandidate
BEST_CASES: list[tuple[str, list[str], Pod, list[Pod], str]] = [
    ("a full tie goes to the smallest node name",
     ["node2", "node1"], pod("p", HIGH, req=LARGE),
     [pod("p1", MID, on="node1", req=LARGE, start=0), pod("p2", MID, on="node2", req=LARGE, start=0)],
     "node1"),
    ("the node with the min highest priority pod is picked",
     ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, on="node1", req=MEDIUM, start=0), pod("p1.2", MID, on="node1", req=LARGE, start=0),
      pod("p2.1", MID, on="node2", req=MEDIUM, start=0), pod("p2.2", LOW, on="node2", req=MEDIUM, start=0),
      pod("p3.1", LOW, on="node3", req=MEDIUM, start=0), pod("p3.2", LOW, on="node3", req=MEDIUM, start=0)],
     "node3"),
    ("when highest priorities are the same, the minimum sum of priorities is picked",
     ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, on="node1", req=MEDIUM, start=0), pod("p1.2", MID, on="node1", req=LARGE, start=0),
      pod("p2.1", MID, on="node2", req=LARGE, start=0), pod("p2.2", LOW, on="node2", req=MEDIUM, start=0),
      pod("p3.1", MID, on="node3", req=MEDIUM, start=0), pod("p3.2", MID, on="node3", req=MEDIUM, start=0)],
     "node2"),
    ("when highest priority and sum are the same, the minimum number of pods is picked",
     ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, on="node1", req=SMALL, start=0), pod("p1.2", NEG, on="node1", req=SMALL, start=0),
      pod("p1.3", MID, on="node1", req=SMALL, start=0), pod("p1.4", NEG, on="node1", req=SMALL, start=0),
      pod("p2.1", MID, on="node2", req=LARGE, start=0), pod("p2.2", NEG, on="node2", req=MEDIUM, start=0),
      pod("p3.1", MID, on="node3", req=MEDIUM, start=0), pod("p3.2", NEG, on="node3", req=SMALL, start=0),
      pod("p3.3", LOW, on="node3", req=SMALL, start=0)],
     "node2"),
    ("the sum uses priorities shifted by 2^31",
     ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, on="node1", req=SMALL, start=0), pod("p1.2", NEG, on="node1", req=SMALL, start=0),
      pod("p1.3", NEG, on="node1", req=SMALL, start=0),
      pod("p2.1", MID, on="node2", req=LARGE, start=0), pod("p2.2", NEG, on="node2", req=MEDIUM, start=0),
      pod("p3.1", MID, on="node3", req=MEDIUM, start=0), pod("p3.2", NEG, on="node3", req=SMALL, start=0),
      pod("p3.3", LOW, on="node3", req=SMALL, start=0)],
     "node2"),
    ("non-overlapping lowest high priority, sum priorities, and number of pods",
     ["node1", "node2", "node3", "node4"], pod("p", VERY_HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, on="node1", req=SMALL, start=0), pod("p1.2", LOW, on="node1", req=SMALL, start=0),
      pod("p1.3", LOW, on="node1", req=SMALL, start=0),
      pod("p2.1", HIGH, on="node2", req=LARGE, start=0),
      pod("p3.1", MID, on="node3", req=MEDIUM, start=0), pod("p3.2", LOW, on="node3", req=SMALL, start=0),
      pod("p3.3", LOW, on="node3", req=SMALL, start=0), pod("p3.4", LOW, on="node3", req=MEDIUM, start=0),
      pod("p4.1", MID, on="node4", req=MEDIUM, start=0), pod("p4.2", MID, on="node4", req=SMALL, start=0),
      pod("p4.3", MID, on="node4", req=SMALL, start=0), pod("p4.4", NEG, on="node4", req=SMALL, start=0)],
     "node1"),
    ("same priority and victim count: the node whose victims started latest",
     ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, on="node1", req=MEDIUM, start=2), pod("p1.2", MID, on="node1", req=MEDIUM, start=2),
      pod("p2.1", MID, on="node2", req=MEDIUM, start=3), pod("p2.2", MID, on="node2", req=MEDIUM, start=3),
      pod("p3.1", MID, on="node3", req=MEDIUM, start=1), pod("p3.2", MID, on="node3", req=MEDIUM, start=1)],
     "node2"),
    ("same priority and victim count: the latest earliest start time over all pods",
     ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, on="node1", req=MEDIUM, start=4), pod("p1.2", MID, on="node1", req=MEDIUM, start=2),
      pod("p2.1", MID, on="node2", req=MEDIUM, start=5), pod("p2.2", MID, on="node2", req=MEDIUM, start=1),
      pod("p3.1", MID, on="node3", req=MEDIUM, start=3), pod("p3.2", MID, on="node3", req=MEDIUM, start=6)],
     "node3"),
    ("different priorities: only the highest-priority victims' start times count",
     ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", LOW, on="node1", req=MEDIUM, start=4), pod("p1.2", MID, on="node1", req=MEDIUM, start=2),
      pod("p2.1", MID, on="node2", req=MEDIUM, start=6), pod("p2.2", LOW, on="node2", req=MEDIUM, start=1),
      pod("p3.1", LOW, on="node3", req=MEDIUM, start=3), pod("p3.2", MID, on="node3", req=MEDIUM, start=5)],
     "node2"),
]


@pytest.mark.parametrize(("node_names", "pod_", "pods", "want"), [c[1:] for c in BEST_CASES],
                         ids=[c[0] for c in BEST_CASES])
def test_select_best_candidate(node_names: list[str], pod_: Pod, pods: list[Pod], want: str) -> None:
    env = make_env([node(n) for n in node_names], pods)
    candidates = env.dry_run(pod_)
    best = env.pl.select_candidate(candidates, now=1e9)
    assert best is not None and best.name == want


def V(*pods: Pod, violations: int = 0) -> Victims:
    return Victims(tuple(pods), violations)


PICK_CASES: list[tuple[str, dict[str, Victims], list[str], str]] = [
    ("fewest PDB violations wins over lower priorities",
     {"a": V(pod("x", LOW), violations=1), "b": V(pod("y", HIGH))}, ["a", "b"], "b"),
    ("then the lowest priority of the most important victim",
     {"a": V(pod("x", MID), pod("x2", LOW)), "b": V(pod("y", LOW), pod("y2", LOW), pod("y3", LOW))}, ["a", "b"], "b"),
    ("then the smallest sum of shifted priorities",
     {"a": V(pod("x", MID), pod("x2", NEG), pod("x3", NEG)), "b": V(pod("y", MID), pod("y2", NEG))}, ["a", "b"], "b"),
    ("then the fewest victims",
     {"a": V(pod("x", LOW), pod("x2", -(2**31))), "b": V(pod("y", LOW))}, ["a", "b"], "b"),
    ("then the latest start among the highest-priority victims",
     {"a": V(pod("x", MID, start=1), pod("x2", LOW, start=9)), "b": V(pod("y", MID, start=2), pod("y2", LOW, start=0))},
     ["a", "b"], "b"),
    ("a pod that has not started counts as starting now",
     {"a": V(pod("x", MID, start=5)), "b": V(pod("y", MID))}, ["a", "b"], "b"),
    ("a remaining tie goes to the first node of the given order",
     {"a": V(pod("x", MID, start=1)), "b": V(pod("y", MID, start=1))}, ["b", "a"], "b"),
]


@pytest.mark.parametrize(("victims", "order", "want"), [c[1:] for c in PICK_CASES], ids=[c[0] for c in PICK_CASES])
def test_pick_one_node_for_preemption(victims: dict[str, Victims], order: list[str], want: str) -> None:
    assert pick_one_node_for_preemption(victims, order, now=100.0) == want


def _pick_stepwise(victims: dict[str, Victims], order: list[str], now: float) -> str:
    """pickOneNodeForPreemption as upstream writes it: keep the best of each score in turn."""
    cands = [(n, victims[n]) for n in order if n in victims]
    scores: list[Any] = [
        lambda v: -v.num_pdb_violations,
        lambda v: -v.pods[0].priority,
        lambda v: -(sum(p.priority for p in v.pods) + (2**31) * len(v.pods)),
        lambda v: -len(v.pods),
        lambda v: earliest_pod_start_time(v, now),
    ]
    for score in scores:
        best = max(score(v) for _, v in cands)
        cands = [(n, v) for n, v in cands if score(v) == best]
        if len(cands) == 1:
            break
    return cands[0][0]


@pytest.mark.parametrize("seed", range(200), ids=lambda s: f"random victims {s}: the lexicographic pick equals "
                                                           "upstream's score-by-score pick")
def test_pick_one_node_equals_the_score_by_score_pick(seed: int) -> None:
    rng = random.Random(seed)
    victims: dict[str, Victims] = {}
    for i in range(rng.randint(1, 8)):
        pods = [pod(f"v{i}-{k}", rng.choice([NEG, LOW, LOW, MID]), start=rng.choice([None, 1, 2, 2, 5]))
                for k in range(rng.randint(1, 4))]
        pods.sort(key=lambda p: (-p.priority, p.start_time if p.start_time is not None else 3.0))
        victims[f"n{i}"] = V(*pods, violations=rng.choice([0, 0, 1]))
    order = list(victims)
    rng.shuffle(order)
    now = rng.choice([0.5, 3.0, 100.0])
    ranks: dict[int, Any] = {}
    want = _pick_stepwise(victims, order, now)
    assert pick_one_node_for_preemption(victims, order, now) == want
    assert pick_one_node_for_preemption(victims, order, now, ranks) == want
    assert pick_one_node_for_preemption(victims, order, now, ranks) == want  # from the kept ranks


def test_non_deterministic_tie_takes_the_first_candidate_in_dry_run_order() -> None:
    env = make_env([node("n1")], deterministic=False)
    cands = [Candidate("zz", V(pod("x", MID, start=1))), Candidate("aa", V(pod("y", MID, start=1)))]
    best = env.pl.select_candidate(cands, now=100.0)
    assert best is not None and best.name == "zz"
    env = make_env([node("n1")], deterministic=True)
    best = env.pl.select_candidate(cands, now=100.0)
    assert best is not None and best.name == "aa"


def test_more_important_pod() -> None:
    assert more_important_pod(pod("a", HIGH), pod("b", LOW), now=10.0)
    assert more_important_pod(pod("a", LOW, start=1), pod("b", LOW, start=2), now=10.0)
    assert not more_important_pod(pod("a", LOW, start=2), pod("b", LOW, start=2), now=10.0)
    assert more_important_pod(pod("a", LOW, start=2), pod("b", LOW), now=10.0)


# ----------------------------------------------------------------------------- TestPodEligibleToPreemptOthers
TERMINATING_BY_PREEMPTION = [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]

ELIGIBLE_CASES: list[tuple[str, Pod, list[Pod], list[str], Status | None, bool]] = [
    ("a pod whose nominated node is unresolvable may preempt again",
     pod("p", HIGH, nominated="node1"),
     [pod("p1", LOW, on="node1", terminating=True, conditions=TERMINATING_BY_PREEMPTION)], ["node1"],
     Status.unresolvable("node(s) had taints that the pod didn't tolerate"), True),
    ("a pod without a nominated node is eligible",
     pod("p", HIGH), [], [], None, True),
    ("a pod with preemptionPolicy Never is not eligible",
     pod("p", HIGH, policy="Never"), [], [], None, False),
    ("a victim terminating because of preemption on the nominated node blocks preemption",
     pod("p", HIGH, nominated="node1"),
     [pod("p1", LOW, on="node1", terminating=True, conditions=TERMINATING_BY_PREEMPTION)], ["node1"], None, False),
    ("a terminating pod without the DisruptionTarget condition does not block",
     pod("p", HIGH, nominated="node1"), [pod("p1", LOW, on="node1", terminating=True)], ["node1"], None, True),
    ("a terminating victim of equal priority does not block",
     pod("p", HIGH, nominated="node1"),
     [pod("p1", HIGH, on="node1", terminating=True, conditions=TERMINATING_BY_PREEMPTION)], ["node1"], None, True),
    ("a DisruptionTarget condition with another reason does not block",
     pod("p", HIGH, nominated="node1"),
     [pod("p1", LOW, on="node1", terminating=True,
          conditions=[{"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}])],
     ["node1"], None, True),
]


@pytest.mark.parametrize(("pod_", "pods", "nodes", "nominated_status", "want"), [c[1:] for c in ELIGIBLE_CASES],
                         ids=[c[0] for c in ELIGIBLE_CASES])
def test_pod_eligible_to_preempt_others(pod_: Pod, pods: list[Pod], nodes: list[str], nominated_status: Status | None,
                                        want: bool) -> None:
    env = make_env([node(n) for n in nodes], pods)
    got, _ = env.pl.pod_eligible_to_preempt_others(pod_, nominated_status)
    assert got is want


def test_preemption_policy_never_keeps_the_nomination() -> None:
    env = make_env([node("node1", ONE_POD)], [pod("p1", LOW, on="node1")])
    result, status = env.post_filter(pod("p", HIGH, policy="Never"), {"node1": U})
    assert result is None
    assert status == Status.unschedulable("preemption: not eligible due to preemptionPolicy=Never.")
    assert env.deleted == []


def test_terminating_victim_on_the_nominated_node_uses_the_latest_pod_object() -> None:
    """Preempt re-reads the pod: the nomination is on the stored object only."""
    victim = pod("p1", LOW, on="node1", terminating=True, conditions=TERMINATING_BY_PREEMPTION)
    stored = pod("p", HIGH, nominated="node1")
    env = make_env([node("node1", ONE_POD)], [victim], extra_pods=[stored])
    result, status = env.post_filter(pod("p", HIGH), {"node1": U})
    assert result is None
    assert status == Status.unschedulable("preemption: not eligible due to a terminating pod on the nominated node.")


# ----------------------------------------------------------------------------- TestPreempt
def test_basic_preemption_evicts_victims_and_clears_lower_nominations() -> None:
    pods = [pod("p1.1", LOW, on="node1", req=SMALL), pod("p1.2", LOW, on="node1", req=SMALL),
            pod("p2.1", HIGH, on="node2", req=LARGE), pod("p3.1", MID, on="node3", req=MEDIUM)]
    env = make_env([node("node1"), node("node2"), node("node3")], pods)
    lower, higher = pod("lower", LOW), pod("higher", VERY_HIGH)
    nominate(env, lower, "node1")
    nominate(env, higher, "node3")
    p = pod("p", HIGH, req=VERY_LARGE)
    result, status = env.post_filter(p)
    assert status == Status()
    assert isinstance(result, PreemptionResult)
    assert result.nominating_info == override("node1")
    assert sorted(v.name for v in result.victims) == ["p1.1", "p1.2"]
    assert [v.name for v in env.pl.last_victims] == [v.name for v in result.victims]
    assert env.pl.last_candidate is not None and env.pl.last_candidate.name == "node1"
    assert sorted(v.name for v, _ in env.deleted) == ["p1.1", "p1.2"]
    assert {r for _, r in env.deleted} == {"default-scheduler: preempting to accommodate a higher priority pod"}
    assert env.cleared == ["lower"]
    assert [pi.pod.name for pi in env.handle.nominator.nominated_pods_for_node("node3")] == ["higher"]
    assert [pi.pod.name for pi in env.handle.snapshot.get("node1").pods] == []  # type: ignore[union-attr]


def test_preemption_walkthrough_picks_the_node_whose_victim_started_latest() -> None:
    """Conformance 0000-preemption-walkthrough: node-a and node-b each need one low-priority
    victim; node-b's started later, and its smaller pod is reprieved."""
    cpu4 = {"cpu": "4", "memory": "8Gi", "pods": 110}
    nodes = [node("node-a", cpu4), node("node-b", cpu4), node("node-c", cpu4)]
    pods = [pod("batch-1", 100, on="node-a", req={"cpu": "3", "memory": "1Gi"}, start=1),
            pod("batch-2", 100, on="node-b", req={"cpu": "2", "memory": "1Gi"}, start=2),
            pod("batch-3", 100, on="node-b", req={"cpu": "1", "memory": "1Gi"}, start=3),
            pod("web-1", 10000, on="node-c", req={"cpu": "3500m", "memory": "1Gi"}, start=4)]
    env = make_env(nodes, pods)
    result, status = env.post_filter(pod("critical", 10000, req={"cpu": "3", "memory": "2Gi"}))
    assert status.is_success()
    assert isinstance(result, PreemptionResult)
    assert result.nominating_info == override("node-b")
    assert [v.name for v in result.victims] == ["batch-2"]


def test_preemption_pdb_prefers_the_node_without_violations() -> None:
    """Conformance 0001-preemption-pdb: node-a's db victim would violate the PDB, so node-b's
    higher-priority job is preempted instead."""
    cpu2 = {"cpu": "2", "memory": "8Gi", "pods": 110}
    pods = [pod("db-0", 100, on="node-a", req={"cpu": "1500m"}, start=1, labels={"app": "db"}),
            pod("db-1", 100, on="node-a", req={"cpu": "500m"}, start=2, labels={"app": "db"}),
            pod("job-0", 500, on="node-b", req={"cpu": "1800m"}, start=3, labels={"app": "job"})]
    pdbs = [pdb({"matchLabels": {"app": "db"}}, 0, name="db-pdb")]
    env = make_env([node("node-a", cpu2), node("node-b", cpu2)], pods, pdbs=pdbs)
    result, status = env.post_filter(pod("urgent", 10000, req={"cpu": "1500m"}, labels={"app": "urgent"}))
    assert status.is_success()
    assert isinstance(result, PreemptionResult)
    assert result.nominating_info == override("node-b")
    assert [v.name for v in result.victims] == ["job-0"]


def test_no_node_where_preemption_might_help_clears_the_pods_own_nomination() -> None:
    env = make_env([node("n1"), node("n2"), node("n3")], [pod("x", LOW, on="n1")])
    p = pod("p", HIGH, nominated="n1")
    nominate(env, p, "n1")
    result, status = env.post_filter(p, {"n1": UU, "n2": UU})
    assert result == PostFilterResult(override(""))
    assert status == Status.unschedulable("preemption: 0/3 nodes are available: 3 Preemption is not helpful for "
                                          "scheduling.")
    assert env.cleared == ["p"]
    assert env.handle.nominator.nominated_pods_for_node("n1") == []


def test_failed_eviction_is_an_error_without_async_preemption() -> None:
    def fail(victim: Pod, reason: str) -> None:
        raise ApiError(f'pods "{victim.name}" is forbidden')

    env = make_env([node("node1", ONE_POD)], [pod("p1", LOW, on="node1")], deleter=fail, features=FEATURES_1_30)
    result, status = env.post_filter(pod("p", HIGH))
    assert result is None
    assert status.code == Code.ERROR
    assert status.message == 'preemption: pods "p1" is forbidden'


def test_async_preemption_succeeds_at_once_and_a_failed_eviction_activates_the_preemptor() -> None:
    # 1.36 (SchedulerAsyncPreemption): PostFilter nominates at once; the deletions run after
    # the cycle; one failing stops them and activates the preemptor (prepareCandidateAsync).
    def fail(victim: Pod, reason: str) -> None:
        raise ApiError(f'pods "{victim.name}" is forbidden')

    env = make_env([node("node1", ONE_POD)], [pod("p1", LOW, on="node1")], deleter=fail, features=FEATURES_1_36)
    later: list[Callable[[], None]] = []
    activated: list[str] = []
    env.handle.async_runner = later.append
    env.handle.activator = lambda pods: activated.extend(p.name for p in pods)
    preemptor = pod("p", HIGH)
    result, status = env.post_filter(preemptor)
    assert status.is_success() and result is not None
    assert result.nominating_info is not None and result.nominating_info.nominated_node_name == "node1"
    pl = env.pl
    assert pl.pre_enqueue(preemptor) == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                               ("waiting for the preemption for this pod to be finished",))
    assert len(later) == 1
    later[0]()
    assert activated == ["p"]
    assert pl.pre_enqueue(preemptor) is None


def test_async_preemption_holds_the_preemptor_until_its_last_victim_is_being_deleted() -> None:
    env = make_env([node("node1", ONE_POD)], [pod("p1", LOW, on="node1")], features=FEATURES_1_36)
    later: list[Callable[[], None]] = []
    env.handle.async_runner = later.append
    preemptor = pod("p", HIGH)
    _, status = env.post_filter(preemptor)
    assert status.is_success()
    assert env.deleted == []  # nothing deleted during the cycle
    assert env.pl.pre_enqueue(preemptor) is not None
    later[0]()
    assert [v.name for v, _ in env.deleted] == ["p1"]
    assert env.pl.pre_enqueue(preemptor) is None


def test_the_v1_30_preemption_has_no_pre_enqueue() -> None:
    env = make_env([node("node1", ONE_POD)], [pod("p1", LOW, on="node1")], features=FEATURES_1_30)
    assert not hasattr(env.pl, "pre_enqueue")
    assert env.pl.events_to_register() == []


def test_a_zero_victim_success_is_an_error() -> None:
    """A node where the pod fits without evicting anything cannot be a candidate: upstream
    reports "expected at least one victim pod on node"."""
    env = make_env([node("node1")], [pod("p1", LOW, on="node1")])
    result, status = env.post_filter(pod("p", HIGH, req=SMALL), {"node1": U})
    assert result is None
    assert status.code == Code.ERROR
    assert status.message == 'preemption: expected at least one victim pod on node "node1"'


# ----------------------------------------------------------------------------- factory
def test_factory_and_registration_shape() -> None:
    env = make_env([node("n1")])
    assert NAME == "DefaultPreemption"
    assert env.pl.name == NAME
    # 1.36 (async preemption): Pod/Delete with a hint that always skips.
    (reg,) = env.pl.events_to_register()
    assert reg.event == ClusterEvent(GVK.POD, ActionType.DELETE)
    assert reg.hint is not None and reg.hint(pod("p", HIGH), pod("v", LOW), None) == QueueingHint.QUEUE_SKIP
    assert defaultpreemption.new(None, FrameworkHandle.for_nodes([], features=FEATURES_1_30)).events_to_register() == []
    assert env.pl.args == DefaultPreemptionArgs()


@pytest.mark.parametrize(
    ("pct", "absolute", "field_"),
    [(-1, 10, "minCandidateNodesPercentage"), (101, 10, "minCandidateNodesPercentage"),
     (10, -1, "minCandidateNodesAbsolute"), (0, 0, "minCandidateNodesPercentage")],
    ids=["a negative percentage is rejected", "a percentage over 100 is rejected",
         "a negative absolute count is rejected", "both zero is rejected"],
)
def test_invalid_args(pct: int, absolute: int, field_: str) -> None:
    handle = FrameworkHandle.for_nodes([node("n1")])
    with pytest.raises(ConfigError) as e:
        defaultpreemption.new(DefaultPreemptionArgs(pct, absolute), handle)
    assert e.value.field == field_


@pytest.mark.parametrize(("pct", "absolute", "nodes", "want"),
                         [(10, 100, 50, 50), (10, 100, 2000, 200), (40, 1, 5, 2), (0, 3, 5, 3), (50, 0, 1, 0)],
                         ids=["the absolute minimum is capped at the node count", "10% of 2000 nodes is 200",
                              "40% of 5 nodes is 2", "0% falls back to the absolute minimum",
                              "half of one node truncates to zero"])
def test_calculate_num_candidates(pct: int, absolute: int, nodes: int, want: int) -> None:
    env = make_env([node("n1")], args=DefaultPreemptionArgs(pct, absolute), deterministic=False)
    assert env.pl.calculate_num_candidates(nodes) == want
