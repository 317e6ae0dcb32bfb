"""`kubesched bench` workloads at tiny sizes: every measured pod is bound and placed by the
workload's rule (validity only, never timing), and each rule's check catches a violation."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from click.testing import CliRunner

from kubesched._cache import Cache
from kubesched.bench import WORKLOADS, run_bench, run_preemption_bench
from kubesched.cli import main
from kubesched.features import FEATURES_1_30


@pytest.mark.parametrize(
    ("workload", "nodes", "init_pods", "pods"),
    [
        ("basic", 120, 0, 150),
        ("affinity", 120, 120, 80),
        ("antiaffinity", 120, 30, 60),
        ("spread", 120, 120, 90),
        ("daemonset", 150, 0, 150),
        ("unschedulable", 120, 0, 130),
        ("mixed", 120, 240, 120),
    ],
    ids=[
        "basic workload binds every pod without overcommitting",
        "node affinity workload keeps every pod in zone1 or zone2",
        "pod anti-affinity workload never puts two green pods on one node",
        "topology spread workload keeps the blue pods' zone skew at most 1",
        "daemonset workload puts every pod on the node its matchFields names",
        "unschedulable workload fails the large pods with kube-scheduler's message and binds the rest",
        "mixed workload keeps caches on highmem, trainers on GPU nodes and api pods spread over zones",
    ],
)
def test_workload_places_every_measured_pod_by_its_rule(workload: str, nodes: int, init_pods: int, pods: int) -> None:
    res = run_bench(workload, nodes, pods, init_pods=init_pods, seed=7)
    assert res.ok, res.problems
    unschedulable = pods // 26 if workload == "unschedulable" else 0
    # mixed: the pods are split over its apps by share (rounded down), plus a DaemonSet pod per node.
    measured = pods - pods % 12 if workload == "mixed" else pods
    assert res.pods == len(res.latencies) == measured
    assert res.bound == measured - unschedulable
    if workload == "mixed":
        assert res.init_pods == init_pods + nodes
    else:
        assert res.init_pods == init_pods


def test_daemonset_pods_name_their_node_by_match_fields() -> None:
    setup = WORKLOADS["daemonset"].setup(3, 3, 0)
    terms = [p.affinity.node_affinity.required.terms for p in setup.measured]  # type: ignore[union-attr]
    assert [[(r.key, r.values) for t in ts for r in t.match_fields] for ts in terms] == [
        [("metadata.name", ("node-0",))], [("metadata.name", ("node-1",))], [("metadata.name", ("node-2",))]]


def test_unschedulable_workload_expects_the_fit_error_and_the_preemption_message() -> None:
    # One 9-cpu pod in 26 attempts; DefaultPreemption runs and finds no lower-priority pod.
    setup = WORKLOADS["unschedulable"].setup(5, 26, 0)
    (key, message), = setup.unschedulable.items()
    assert key == setup.measured[0].key
    assert message == ("0/5 nodes are available: 5 Insufficient cpu. preemption: 0/5 nodes are available: "
                       "5 No preemption victims found for incoming pod.")


def test_preemption_pdb_workload_evicts_protected_pods_only_once_the_unprotected_nodes_are_used() -> None:
    # 10 nodes, 5 of them with PDB-protected pods; 8 preemptors: 5 on unprotected nodes, then 3 x 3 protected victims.
    res = run_preemption_bench(10, 8, init_pods=40, seed=7, pdbs=True)
    assert res.ok, res.problems
    assert (res.workload, res.bound, res.victims) == ("preemption-pdb", 8, 24)


def test_anti_affinity_workload_reports_pods_that_cannot_fit() -> None:
    # 8 nodes cannot host 5 + 5 mutually anti-affine pods.
    res = run_bench("antiaffinity", 8, 5, init_pods=5)
    assert not res.ok
    assert res.bound == 3
    assert "2 pods not bound" in res.problems


def _cache_for(workload: str, nodes: int, init: int, pods: int) -> tuple[Cache, dict[str, str], list[str]]:
    """A cache holding the workload's nodes and running pods, every measured pod bound to
    one node ignoring every rule (node-2, in zone3, for affinity; node-0 otherwise);
    returns the check's problems."""
    setup = WORKLOADS[workload].setup(nodes, pods, init)
    cache = Cache(nodes)
    cache.add_nodes(setup.nodes)
    for p in setup.running:
        cache.add_pod(p)
    placed: dict[str, str] = {}
    node = setup.nodes[2 if workload == "affinity" else 0].meta.name
    for p in setup.measured:
        cache.add_pod(dataclasses.replace(p, node_name=node))
        placed[p.key] = node
    assert setup.check is not None
    return cache, placed, setup.check(cache, placed)


@pytest.mark.parametrize(
    ("workload", "fragment"),
    [
        ("affinity", "pods outside zone1/zone2"),
        ("antiaffinity", "run more than one color=green pod"),
        ("spread", "zone skew of color=blue pods is 2"),
    ],
    ids=["a pod in zone3 is reported", "two green pods on one node are reported", "a zone skew of 2 is reported"],
)
def test_workload_check_reports_a_broken_placement(workload: str, fragment: str) -> None:
    _, _, problems = _cache_for(workload, 9, 3, 2)
    assert any(fragment in p for p in problems), problems


def test_cli_bench_json_reports_the_workload() -> None:
    r = CliRunner().invoke(main, ["bench", "--workload", "spread", "--nodes", "30", "--init-pods", "30",
                                  "--pods", "12", "-o", "json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert (data["workload"], data["nodes"], data["init_pods"], data["pods"], data["bound"]) == ("spread", 30, 30, 12, 12)
    assert data["problems"] == []


def test_cli_bench_offers_every_workload() -> None:
    r = CliRunner().invoke(main, ["bench", "--help"])
    assert r.exit_code == 0
    for name in WORKLOADS:
        assert name in r.output


def test_cli_bench_rejects_an_empty_cluster_with_exit_code_2() -> None:
    r = CliRunner().invoke(main, ["bench", "--nodes", "0", "--pods", "1"])
    assert r.exit_code == 2
    assert "at least one node" in r.output


def test_preemption_workload_binds_every_high_priority_pod_after_preempting_three_low_priority_pods() -> None:
    # PreemptionBasic at 30 nodes: 4 low-priority pods (900m) per node, 30 high-priority pods (3 cpu).
    res = run_preemption_bench(30, 30, init_pods=120, seed=7)
    assert res.ok, res.problems
    assert (res.bound, res.pods, res.init_pods) == (30, 30, 120)
    # Each pod fails once (and preempts 3 pods to make room), then binds on its nominated node.
    assert (res.attempts, res.preemption_attempts, res.victims) == (60, 30, 90)
    assert len(res.latencies) == 60
    # The victims go at once (grace 0); 1.36 then pops the preemptors from backoffQ at once
    # (activeQ empty, SchedulerPopFromBackoffQ), where v1.30 waited for the 1 s backoff.
    assert res.simulated_seconds == 0.0
    assert run_preemption_bench(30, 30, init_pods=120, seed=7, features=FEATURES_1_30).simulated_seconds == 1.0


def test_preemption_workload_reports_high_priority_pods_left_without_a_node() -> None:
    # 12 pods that each need a node of their own, on 10 nodes.
    res = run_preemption_bench(10, 12, init_pods=40)
    assert not res.ok
    assert res.bound == 10
    assert any(p.startswith("2 pods not bound") for p in res.problems), res.problems


def test_cli_bench_preemption_json_reports_the_victims() -> None:
    r = CliRunner().invoke(main, ["bench", "--workload", "preemption", "--nodes", "12", "--init-pods", "48",
                                  "--pods", "12", "-o", "json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert (data["workload"], data["nodes"], data["pods"], data["bound"], data["victims"]) == (
        "preemption", 12, 12, 12, 36)
    assert data["problems"] == []


def test_versus_schedules_both_releases_side_by_side_exactly_as_separate_runs_place() -> None:
    """bench --versus: both runs interleaved in chunks place every pod exactly where a run of
    its own would (the chunks change the timing, never the decisions)."""
    from kubesched.bench import _BenchRun, run_bench_versus
    from kubesched.features import FEATURES_1_36
    mine, theirs = run_bench_versus("spread", (FEATURES_1_36, FEATURES_1_30), 40, 60, init_pods=40, chunk=7)
    assert mine.ok and theirs.ok and mine.bound == theirs.bound == 60
    side = [_BenchRun.prepare("spread", 40, 60, 40, 1, f) for f in (FEATURES_1_36, FEATURES_1_30)]
    for i in range(0, 60, 7):
        for run in side:
            run.schedule(run.setup.measured[i:i + 7])
    for features, interleaved in zip((FEATURES_1_36, FEATURES_1_30), side, strict=True):
        alone = _BenchRun.prepare("spread", 40, 60, 40, 1, features)
        alone.schedule(alone.setup.measured)
        assert interleaved.placed == alone.placed and len(alone.placed) == 60
    r = CliRunner().invoke(main, ["bench", "--workload", "basic", "--nodes", "30", "--pods", "40", "--versus", "1.30",
                                  "-o", "json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["bound"] == data["versus"]["bound"] == 40 and data["ratio"] > 0
    assert data["versus"]["semantics"]["kubeVersion"] == "1.30"
    r = CliRunner().invoke(main, ["bench", "--workload", "live", "--versus", "1.30"])
    assert r.exit_code == 2 and "--versus compares in-memory workloads" in r.output


def test_versus_on_preemption_alternates_whole_runs_turning_the_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """bench --workload preemption --versus: whole runs (the queue's timeline cannot be cut into
    chunks), --rounds of each, 1.36 1.30 then 1.30 1.36 ...; the ratio is of the median runs and
    every run's problems count."""
    import kubesched.bench as bench_module
    order: list[str] = []
    real = bench_module.run_preemption_bench

    def recording(*args: Any, **kwargs: Any) -> Any:
        order.append(str(kwargs["features"].version))
        return real(*args, **kwargs)

    monkeypatch.setattr(bench_module, "run_preemption_bench", recording)
    r = CliRunner().invoke(main, ["bench", "--workload", "preemption-pdb", "--nodes", "12", "--pods", "12",
                                  "--init-pods", "48", "--versus", "1.30", "--rounds", "3", "-o", "json"])
    assert r.exit_code == 0, r.output
    assert order == ["1.36", "1.30", "1.30", "1.36", "1.36", "1.30"]
    data = json.loads(r.output)
    mine, theirs = data["runs_pods_per_second"], data["versus"]["runs_pods_per_second"]
    assert len(mine) == len(theirs) == 3
    assert data["workload"] == "preemption-pdb" and data["bound"] == data["versus"]["bound"] == 12
    assert data["pods_per_second"] == sorted(mine)[1] and data["versus"]["pods_per_second"] == sorted(theirs)[1]
    assert data["ratio"] == pytest.approx(sorted(mine)[1] / sorted(theirs)[1], rel=0.01)
