"""`kubesched pack`: the optimal packing of the pending pods (HiGHS), on small clusters solved by
hand, beside the scheduler's greedy placement; every placement verified by the real filters."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import PodBuilder, make_node, make_pod
from click.testing import CliRunner, Result
from simkit import config

from kubesched.cli import main
from kubesched.config import KubeSchedulerConfiguration
from kubesched.objects import ClusterObjects, Node, Pod
from kubesched.whatif import pack as packing
from kubesched.whatif.pack import (
    PackProblem,
    PackResult,
    PackVerificationError,
    build_model,
    first_fit_decreasing,
    pack,
    solve_model,
    verify_placements,
)

from ._manifests import node as node_doc
from ._manifests import pod as pod_doc
from ._manifests import write

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
T0 = 1_700_000_000


def n(name: str, cpu: str = "4", *, pods: int = 110, labels: dict[str, str] | None = None,
      taint: tuple[str, str] | None = None, unschedulable: bool = False, extra: dict[str, Any] | None = None) -> Node:
    b = make_node().name(name).capacity(cpu=cpu, memory="16Gi", pods=pods)
    if extra:
        b = b.capacity_map(extra)
    for k, v in (labels or {}).items():
        b = b.label(k, v)
    if taint:
        b = b.taint(taint[0], taint[1])
    if unschedulable:
        b = b.unschedulable()
    return b.obj()


def p(name: str, cpu: str = "1", *, app: str | None = None) -> PodBuilder:
    b = make_pod().name(name).req(cpu=cpu, memory="256Mi")
    return b.label("app", app) if app else b


def anti(app: str, key: str = HOSTNAME) -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}}


def cluster(nodes: list[Node], pending: list[PodBuilder], running: list[PodBuilder] | None = None) -> ClusterObjects:
    """Pending pods get creation times in list order (the queue order)."""
    pods: list[Pod] = [b.obj() for b in running or []]
    for i, b in enumerate(pending):
        ts = datetime.fromtimestamp(T0 + i + 1, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        pods.append(b.creation(ts).obj())
    return ClusterObjects(nodes=nodes, pods=pods, latest_timestamp=T0 + len(pending))


def placed(result: PackResult) -> dict[str, str | None]:
    return {o.pod.removeprefix("default/"): o.packed for o in result.pods}


def greedy(result: PackResult) -> dict[str, str | None]:
    return {o.pod.removeprefix("default/"): o.greedy for o in result.pods}


@dataclass
class Case:
    id: str
    objs: Callable[[], ClusterObjects]
    packed_nodes: int
    greedy_nodes: int
    packed_placed: int
    greedy_placed: int
    check: Callable[[PackResult], None] = lambda r: None
    cfg: Callable[[], KubeSchedulerConfiguration | None] = lambda: None
    not_modelled: list[str] = field(default_factory=list)


def _on(pod: str, node: str) -> Callable[[PackResult], None]:
    def check(r: PackResult) -> None:
        assert placed(r)[pod] == node, placed(r)
    return check


def _distinct(*pods: str) -> Callable[[PackResult], None]:
    def check(r: PackResult) -> None:
        nodes = [placed(r)[x] for x in pods]
        assert None not in nodes and len(set(nodes)) == len(nodes), placed(r)
    return check


def _zones(nodes_zone: dict[str, str], *pods: str) -> Callable[[PackResult], None]:
    def check(r: PackResult) -> None:
        zones = [nodes_zone[node] for x in pods if (node := placed(r)[x]) is not None]
        assert len(zones) == len(set(zones)), placed(r)
    return check


def _together_on(r: PackResult, nodes: set[str], *pods: str) -> None:
    where = {placed(r)[x] for x in pods}
    assert len(where) == 1 and where <= nodes, placed(r)


def _unplaced(*pods: str, note: str) -> Callable[[PackResult], None]:
    def check(r: PackResult) -> None:
        left = sorted(x for x, node in placed(r).items() if node is None)
        assert left == sorted(pods), placed(r)
        for o in r.pods:
            if o.packed is None:
                assert note in o.note, o.note
    return check


TWO_ZONES = {"a1": "a", "a2": "a", "b1": "b", "b2": "b"}

CASES = [
    Case("three 4-cpu nodes and pods of 3, 1, 2 and 2 cpu pack onto 2 nodes where LeastAllocated uses 3",
         lambda: cluster([n("n1"), n("n2"), n("n3")], [p("a", "3"), p("b", "1"), p("c", "2"), p("d", "2")]),
         packed_nodes=2, greedy_nodes=3, packed_placed=4, greedy_placed=4),
    Case("a taint on two of three nodes forces the pod without a toleration onto the third",
         lambda: cluster([n("n1", taint=("dedicated", "x")), n("n2", taint=("dedicated", "x")), n("n3")],
                         [p("free", "1"),
                          p("tolerant", "1").toleration(key="dedicated", operator="Exists", effect="NoSchedule")]),
         packed_nodes=1, greedy_nodes=2, packed_placed=2, greedy_placed=2, check=_on("free", "n3")),
    Case("a nodeSelector puts its pod on the only labelled node, and the others join it",
         lambda: cluster([n("n1"), n("n2", labels={"disktype": "ssd"}), n("n3")],
                         [p("x", "1"), p("ssd", "1").node_selector({"disktype": "ssd"}), p("y", "1")]),
         packed_nodes=1, greedy_nodes=3, packed_placed=3, greedy_placed=3, check=_on("ssd", "n2")),
    Case("two pods with the same hostPort need two nodes",
         lambda: cluster([n("n1"), n("n2"), n("n3")], [p("web-0", "100m").host_port(8080),
                                                       p("web-1", "100m").host_port(8080)]),
         packed_nodes=2, greedy_nodes=2, packed_placed=2, greedy_placed=2, check=_distinct("web-0", "web-1")),
    Case("the same hostPort on two different host IPs may share a node",
         lambda: cluster([n("n1"), n("n2")], [p("a", "100m").host_port(8080, host_ip="10.0.0.1"),
                                              p("b", "100m").host_port(8080, host_ip="10.0.0.2")]),
         packed_nodes=1, greedy_nodes=2, packed_placed=2, greedy_placed=2),
    Case("a hostPort on 0.0.0.0 conflicts with the same port on any IP",
         lambda: cluster([n("n1"), n("n2"), n("n3")], [p("a", "100m").host_port(8080, host_ip="10.0.0.1"),
                                                       p("b", "100m").host_port(8080, host_ip="10.0.0.2"),
                                                       p("any", "100m").host_port(8080)]),
         packed_nodes=2, greedy_nodes=3, packed_placed=3, greedy_placed=3,
         check=lambda r: (_distinct("a", "any")(r), _distinct("b", "any")(r), _on("a", placed(r)["b"] or "")(r))),
    Case("a running pod's hostPort keeps the pending pod wanting it off that node",
         lambda: cluster([n("n1"), n("n2")], [p("web", "100m").host_port(8080)],
                         running=[p("proxy", "100m").host_port(8080).node("n1")]),
         packed_nodes=2, greedy_nodes=2, packed_placed=1, greedy_placed=1, check=_on("web", "n2")),
    Case("required anti-affinity by hostname spreads three replicas over three nodes",
         lambda: cluster([n("n1"), n("n2"), n("n3"), n("n4")],
                         [p(f"api-{i}", "500m", app="api").affinity(anti("api")) for i in range(3)]),
         packed_nodes=3, greedy_nodes=3, packed_placed=3, greedy_placed=3, check=_distinct("api-0", "api-1", "api-2")),
    Case("anti-affinity by zone places one replica per zone and lists the third as left pending",
         lambda: cluster([n(x, labels={ZONE: z}) for x, z in TWO_ZONES.items()],
                         [p(f"q-{i}", "500m", app="q").affinity(anti("q", ZONE)) for i in range(3)]),
         packed_nodes=2, greedy_nodes=2, packed_placed=2, greedy_placed=2,
         check=lambda r: (_zones(TWO_ZONES, "q-0", "q-1", "q-2")(r),
                          _unplaced("q-2", note="not beside the other pending pods")(r))),
    Case("two deployments that repel each other by hostname (but not themselves) take one node each",
         lambda: cluster([n("n1"), n("n2"), n("n3")],
                         [p("a-0", "500m", app="a").affinity(anti("b")), p("b-0", "500m", app="b"),
                          p("a-1", "500m", app="a").affinity(anti("b")), p("b-1", "500m", app="b")]),
         packed_nodes=2, greedy_nodes=3, packed_placed=4, greedy_placed=4,
         check=lambda r: (_on("a-1", placed(r)["a-0"] or "")(r), _on("b-1", placed(r)["b-0"] or "")(r),
                          _distinct("a-0", "b-0")(r))),
    Case("a running pod's anti-affinity repels a matching pending pod from its node",
         lambda: cluster([n("n1"), n("n2")], [p("web", "1", app="web")],
                         running=[p("guard", "1", app="guard").affinity(anti("web")).node("n1")]),
         packed_nodes=2, greedy_nodes=2, packed_placed=1, greedy_placed=1, check=_on("web", "n2")),
    Case("a pending pod's anti-affinity keeps it off the node of a matching running pod",
         lambda: cluster([n("n1"), n("n2")], [p("app", "1", app="app").affinity(anti("db"))],
                         running=[p("db", "1", app="db").node("n1")]),
         packed_nodes=2, greedy_nodes=2, packed_placed=1, greedy_placed=1, check=_on("app", "n2")),
    Case("more pods than greedy places: 2+2 share a node so one 4-cpu pod fits, the other is listed",
         lambda: cluster([n("n1"), n("n2")], [p("s-0", "2"), p("s-1", "2"), p("big-0", "4"), p("big-1", "4")]),
         packed_nodes=2, greedy_nodes=2, packed_placed=3, greedy_placed=2,
         check=_unplaced("big-1", note="not beside the other pending pods")),
    Case("a pod no node accepts is left pending with kube-scheduler's reason",
         lambda: cluster([n("n1"), n("n2")], [p("lost", "1").node_selector({"disktype": "nvme"}), p("x", "1")]),
         packed_nodes=1, greedy_nodes=1, packed_placed=1, greedy_placed=1,
         check=_unplaced("lost", note="0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector")),
    Case("an unschedulable node takes no pod",
         lambda: cluster([n("n1", unschedulable=True), n("n2", "8")], [p("a", "1"), p("b", "1")]),
         packed_nodes=1, greedy_nodes=1, packed_placed=2, greedy_placed=2,
         check=lambda r: (_on("a", "n2")(r), _on("b", "n2")(r))),
    Case("the pods limit of a node counts running pods",
         lambda: cluster([n("n1", pods=2), n("n2", pods=2)], [p("a", "100m"), p("b", "100m"), p("c", "100m")],
                         running=[p("r", "100m").node("n1")]),
         packed_nodes=2, greedy_nodes=2, packed_placed=3, greedy_placed=3),
    Case("an extended resource: two GPUs per node, three one-GPU pods need two nodes",
         lambda: cluster([n(f"g{i}", extra={"nvidia.com/gpu": "2"}) for i in range(3)],
                         [make_pod().name(f"ml-{i}").container(requests={"cpu": "100m", "nvidia.com/gpu": "1"},
                                                               limits={"nvidia.com/gpu": "1"}) for i in range(3)]),
         packed_nodes=2, greedy_nodes=3, packed_placed=3, greedy_placed=3),
    Case("a profile's addedAffinity applies to every pod",
         lambda: cluster([n("n1", labels={"pool": "b"}), n("n2", labels={"pool": "a"}), n("n3", labels={"pool": "a"})],
                         [p("x", "1"), p("y", "1")]),
         packed_nodes=1, greedy_nodes=2, packed_placed=2, greedy_placed=2,
         check=lambda r: _together_on(r, {"n2", "n3"}, "x", "y"),
         cfg=lambda: config({"pluginConfig": [{"name": "NodeAffinity", "args": {"addedAffinity": {
             "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                 {"key": "pool", "operator": "In", "values": ["a"]}]}]}}}}]})),
    Case("a pod with required pod affinity stays where the scheduler put it, and so does the pod it follows",
         lambda: cluster([n("n1"), n("n2"), n("n3")],
                         [p("db", "1", app="db"), p("filler", "1"),
                          p("proxy", "1", app="proxy").affinity({"podAffinity": {
                              "requiredDuringSchedulingIgnoredDuringExecution": [
                                  {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": HOSTNAME}]}})]),
         packed_nodes=1, greedy_nodes=2, packed_placed=3, greedy_placed=3,
         check=lambda r: (_on("db", greedy(r)["db"] or "")(r), _on("proxy", greedy(r)["proxy"] or "")(r)),
         not_modelled=["db", "proxy"]),
    Case("a pod with a hard topology spread constraint stays where the scheduler put it",
         lambda: cluster([n(x, labels={ZONE: z}) for x, z in TWO_ZONES.items()],
                         [p("s-0", "1", app="s").spread(1, ZONE, selector={"matchLabels": {"app": "s"}}),
                          p("free", "1")]),
         packed_nodes=1, greedy_nodes=2, packed_placed=2, greedy_placed=2,
         check=lambda r: _on("s-0", greedy(r)["s-0"] or "")(r), not_modelled=["s-0"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_packing_is_optimal_and_passes_the_real_filters(case: Case) -> None:
    objs = case.objs()
    cfg = case.cfg()
    r = pack(objs, cfg, time_limit=20)
    assert (len(r.packed_nodes), r.packed_placed) == (case.packed_nodes, case.packed_placed), placed(r)
    assert (len(r.greedy_nodes), r.greedy_placed) == (case.greedy_nodes, case.greedy_placed), greedy(r)
    s = r.solver
    assert s.status == "Optimal" and s.gap == 0.0 and s.bound == s.objective, s
    assert s.placed_proven and s.nodes_gap == 0.0 and s.nodes_used == case.packed_nodes, s
    assert sorted(o.pod.removeprefix("default/") for o in r.pods if not o.modelled) == sorted(case.not_modelled)
    for o in r.pods:
        if not o.modelled:
            assert o.note.startswith("not modelled: "), o.note
    case.check(r)
    # The command verified every placement; doing it again here must agree.
    placements = [(o.pod, o.packed) for o in r.pods if o.packed]
    kept = [pl for pl in placements if pl[0] in {o.pod for o in r.pods if not o.modelled}]
    rest = [pl for pl in placements if pl not in kept]
    assert r.verified == len(placements)
    assert verify_placements(objs, cfg, kept + rest) == len(placements)


def test_pods_the_scheduler_never_attempts_are_listed_not_placed() -> None:
    objs = cluster([n("n1")], [p("gated", "1").scheduling_gate("wait"), p("other", "1").scheduler_name("custom"),
                               p("ok", "1")])
    r = pack(objs)
    assert [o.pod for o in r.pods] == ["default/ok"]
    reasons = dict(r.not_attempted)
    assert set(reasons) == {"default/gated", "default/other"}
    assert "schedulerName 'custom'" in reasons["default/other"]
    assert r.as_dict()["pendingPods"] == 3


def test_running_pods_keep_their_nodes_used_and_are_never_moved() -> None:
    objs = cluster([n("n1"), n("n2"), n("n3")], [p("a", "1")], running=[p("r1", "1").node("n1"),
                                                                       p("r2", "1").node("n3")])
    r = pack(objs)
    assert r.packed_nodes == ("n1", "n3")  # the pending pod joins a used node; no node is emptied
    assert placed(r)["a"] in ("n1", "n3")
    assert any("evicts no running pod" in note for note in r.notes)


def test_the_packing_never_preempts_where_the_scheduler_does() -> None:
    objs = cluster([n("n1")], [p("urgent", "2").priority(1000)], running=[p("low", "3").node("n1")])
    r = pack(objs)
    assert r.greedy_preempted == ("default/low",) and greedy(r) == {"urgent": "n1"}
    assert placed(r) == {"urgent": None}
    assert r.pods[0].note == "0/1 nodes are available: 1 Insufficient cpu."
    assert any("preempted 1 running pod(s); the packing keeps them" in note for note in r.notes)


def test_drainable_nodes_are_those_the_scheduler_uses_and_the_packing_leaves_empty() -> None:
    r = pack(CASES[0].objs())
    assert set(r.drainable) == set(r.greedy_nodes) - set(r.packed_nodes) and len(r.drainable) == 1
    d = r.as_dict()
    assert d["drainable"] == list(r.drainable)
    assert d["greedy"]["nodesUsed"] == 3 and d["packed"]["nodesUsed"] == 2
    assert {m["pod"] for m in d["moved"]} == {o.pod for o in r.pods if o.greedy != o.packed}
    json.dumps(d)  # plain data


# ---------------------------------------------------------------- the verifier
VERIFIER_CASES = [
    ("a pod on a tainted node is rejected by TaintToleration", [("p0", "n1")],
     "pod default/p0 on node n1 is rejected by TaintToleration: node(s) had untolerated taint"),
    ("a third pod over the node's cpu is rejected by NodeResourcesFit", [("p0", "n2"), ("p1", "n2"), ("p2", "n2")],
     "pod default/p2 on node n2 is rejected by NodeResourcesFit: Insufficient cpu"),
    ("two pods repelling each other on one node are rejected by InterPodAffinity", [("a0", "n2"), ("a1", "n2")],
     "pod default/a1 on node n2 is rejected by InterPodAffinity: node(s) didn't match pod anti-affinity rules"),
    ("a node that does not exist is rejected", [("p0", "n9")], "pod default/p0 on node n9 is rejected by"),
]


@pytest.mark.parametrize(("placements", "message"), [c[1:] for c in VERIFIER_CASES], ids=[c[0] for c in VERIFIER_CASES])
def test_the_verifier_catches_a_wrong_placement(placements: list[tuple[str, str]], message: str) -> None:
    objs = cluster([n("n1", taint=("dedicated", "x")), n("n2")],
                   [p("p0", "2"), p("p1", "2"), p("p2", "2"), p("a0", "100m", app="a").affinity(anti("a")),
                    p("a1", "100m", app="a").affinity(anti("a"))])
    with pytest.raises(PackVerificationError, match=re.escape("packing verification failed: " + message)):
        verify_placements(objs, None, [(f"default/{pod}", node) for pod, node in placements])


def test_a_wrong_placement_from_the_model_fails_the_command_with_exit_code_1(monkeypatch: pytest.MonkeyPatch,
                                                                               tmp_path: Path) -> None:
    """The verification runs in the command: a model bug (here: every pod forced onto n1) is
    reported on one line, exit 1, never as a result."""
    def wrong(problem: PackProblem, counts: Any, greedy: Any) -> dict[str, str]:
        return {pod.key: "n1" for cls in problem.classes for pod in cls.pods}

    monkeypatch.setattr(packing, "_assign", wrong)
    f = write(tmp_path / "c.yaml", node_doc("n1"), node_doc("n2"), pod_doc("a", "3"), pod_doc("b", "3"))
    r = CliRunner().invoke(main, ["pack", f])
    assert r.exit_code == 1, r.output
    assert r.stdout == ""
    assert r.stderr.splitlines() == [
        "error: packing verification failed: pod default/b on node n1 is rejected by NodeResourcesFit: Insufficient "
        "cpu (a bug in the packing model)"]


# ---------------------------------------------------------------- the model alone
def test_the_rounded_path_for_large_models_gives_a_valid_packing_and_a_valid_bound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Above EXACT_COLUMN_LIMIT, requests are rounded up for the solution and down for the
    bound: on 3+1+2+2 cpu the rounded-up model alone needs 3 nodes (3008m + 1008m > 4 cpu), but
    the exact first-fit packing uses 2 and the relaxation proves it."""
    monkeypatch.setattr(packing, "EXACT_COLUMN_LIMIT", 0)
    r = pack(CASES[0].objs())
    s = r.solver
    assert s.method == "rounded" and len(s.solves) == 2
    assert (s.status, s.objective, s.bound, s.gap) == ("Optimal", 2.0, 2.0, 0.0)
    assert len(r.packed_nodes) == 2 and r.verified == 4


def test_first_fit_decreasing_and_the_scheduler_start_are_checked_before_use() -> None:
    objs = CASES[0].objs()
    r = pack(objs)
    assert r.solver.start in ("first-fit decreasing", "the scheduler's placement", "HiGHS")
    # A start that breaks the model is never given to HiGHS.
    problem = PackProblem(("n1",), np.zeros(1, np.bool_), ("cpu",), np.array([[4000]]), np.array([110]),
                          (packing.PodClass((objs.pods[0],), np.array([3000]), ()),), np.ones((1, 1), np.bool_))
    model = build_model(problem)
    bad = np.array([[2]])
    counts, stats = solve_model(model, starts=[("bad", bad)])
    assert stats.start_objective is None and counts.tolist() == [[1]] and stats.status == "Optimal"
    assert first_fit_decreasing(problem).tolist() == [[1]]


def test_time_limit_and_solver_figures_are_reported() -> None:
    r = pack(CASES[0].objs(), time_limit=7.5)
    d = r.as_dict()["solver"]
    assert d["timeLimitSeconds"] == 7.5 and d["solver"].startswith("HiGHS ")
    assert d["variables"] > 0 and d["constraints"] > 0 and d["nonzeros"] > 0
    assert set(d) >= {"status", "objective", "bound", "gap", "nodesBound", "nodesGap", "maxPlacedProven"}


# ---------------------------------------------------------------- the command
def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_the_example_packs_ten_pods_on_three_nodes_where_the_scheduler_uses_five() -> None:
    r = run("pack", str(EXAMPLES / "pack"))
    assert r.exit_code == 0, r.output
    assert "Optimal" in r.stdout
    lines = r.stdout.splitlines()
    assert any(line.split() == ["nodes", "used", "5", "3"] for line in lines), r.stdout
    assert "10 placements pass the real filters" in r.stdout


def test_json_output_is_the_result_as_plain_data() -> None:
    r = run("pack", str(EXAMPLES / "pack"), "-o", "json", "--time-limit", "10")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["solver"]["status"] == "Optimal" and d["solver"]["timeLimitSeconds"] == 10
    assert d["greedy"]["nodesUsed"] == 5 and d["packed"]["nodesUsed"] == 3
    assert set(d["notModelled"]) == {"default/cache-0", "default/cache-proxy"}
    assert d["verified"] == 10 and len(d["pods"]) == 10


def assert_one_line_error(result: Result, expected: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: " + expected), lines[0]


BAD_INPUT = [
    ("a missing path", ["{t}/nope.yaml"], "{t}/nope.yaml"),
    ("a time limit of zero", ["{ok}", "--time-limit", "0"], "--time-limit 0: expected a positive number of seconds"),
    ("a negative time limit", ["{ok}", "--time-limit", "-3"], "--time-limit -3: expected a positive number"),
    ("a time limit that is not a number", ["{ok}", "--time-limit", "soon"], "--time-limit soon: expected a positive"),
    ("an invalid configuration", ["{ok}", "--config", "{bad_cfg}"], "{bad_cfg}"),
    ("an invalid quantity", ["{bad_pod}"], "{bad_pod}: document 1"),
]


@pytest.mark.parametrize(("args", "expected"), [c[1:] for c in BAD_INPUT], ids=[c[0] for c in BAD_INPUT])
def test_bad_input_is_one_line_with_exit_code_2(args: list[str], expected: str, tmp_path: Path) -> None:
    ok = write(tmp_path / "ok.yaml", node_doc("n1"), pod_doc("a", "1"))
    bad_cfg = tmp_path / "cfg.yaml"
    bad_cfg.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                       "profiles: [{schedulerName: 7}]\n")
    bad_pod = write(tmp_path / "bad.yaml", node_doc("n1"), pod_doc("a", "lots"))
    fmt = {"t": tmp_path, "ok": ok, "bad_cfg": bad_cfg, "bad_pod": bad_pod}
    assert_one_line_error(run("pack", *[a.format(**fmt) for a in args]), expected.format(**fmt))
