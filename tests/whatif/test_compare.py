"""`kubesched compare`: the same pending pods under several configurations, on clusters
checked by hand (the conformance procedure: queue order, ties to the lowest node name)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kubesched.cli import main
from kubesched.config import default_configuration, load_config
from kubesched.objects import load_manifests
from kubesched.whatif.capacity import without_preemption
from kubesched.whatif.compare import BOUND, PREEMPTED, UNSCHEDULABLE, Outcome, compare

from ._manifests import node, pod, priority_class, write

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LEAST = EXAMPLES / "compare" / "leastallocated.yaml"
MOST = EXAMPLES / "compare" / "mostallocated.yaml"
SPREAD_THIRD = math.sqrt(2) / 12  # sd of (1/2, 1/4, 1/4): mean 1/3
PACKED_THIRD = math.sqrt(2) / 3  # sd of (1, 0, 0): mean 1/3


@dataclass
class Expect:
    bound: int
    unschedulable: int = 0
    preempted: int = 0
    empty: tuple[str, ...] = ()
    shares: dict[str, tuple[float, float]] = field(default_factory=dict)  # resource -> (mean, sd)
    placements: dict[str, str | None] = field(default_factory=dict)


@dataclass
class Case:
    id: str
    cluster: list[dict[str, Any]]
    configs: list[str]  # file paths, or "default", or "no-preemption"
    expect: list[Expect]
    differently: dict[str, list[tuple[str, str | None]]]  # pod -> per configuration (state, node)


def four_pods_three_nodes() -> list[dict[str, Any]]:
    """Three empty nodes of 4 cpu / 8Gi; four pods of 1 cpu / 2Gi (cpu and memory in the same
    proportion: BalancedAllocation scores every node 100, only the Fit strategy decides)."""
    return [node("node-a", memory="8Gi"), node("node-b", memory="8Gi"), node("node-c", memory="8Gi"),
            *(pod(f"p{i}", "1", "2Gi") for i in range(1, 5))]


def preemption_cluster() -> list[dict[str, Any]]:
    """One 4-cpu node running a 3-cpu batch pod (priority 0); a pending 2-cpu pod of priority 1000."""
    return [node("n1"), priority_class("high", 1000), pod("batch", "3", "1Gi", node_name="n1"),
            pod("urgent", "2", "1Gi", priorityClassName="high")]


CASES = [
    Case("LeastAllocated spreads the four pods, MostAllocated packs them on node-a and leaves two nodes empty",
         four_pods_three_nodes(), [str(LEAST), str(MOST)],
         [Expect(4, shares={"cpu": (1 / 3, SPREAD_THIRD), "memory": (1 / 3, SPREAD_THIRD),
                            "pods": (4 / 330, math.sqrt(2) / 330)},
                 placements={"default/p1": "node-a", "default/p2": "node-b", "default/p3": "node-c",
                             "default/p4": "node-a"}),
          Expect(4, empty=("node-b", "node-c"), shares={"cpu": (1 / 3, PACKED_THIRD), "memory": (1 / 3, PACKED_THIRD),
                                                        "pods": (4 / 330, 4 * math.sqrt(2) / 330)},
                 placements={f"default/p{i}": "node-a" for i in range(1, 5)})],
         {"default/p2": [(BOUND, "node-b"), (BOUND, "node-a")], "default/p3": [(BOUND, "node-c"), (BOUND, "node-a")]}),
    Case("the default configuration and LeastAllocated spelled out place every pod the same way",
         four_pods_three_nodes(), ["default", str(LEAST)],
         [Expect(4, shares={"cpu": (1 / 3, SPREAD_THIRD)}), Expect(4, shares={"cpu": (1 / 3, SPREAD_THIRD)})], {}),
    Case("with preemption the urgent pod evicts the batch pod; without it the urgent pod stays unschedulable",
         preemption_cluster(), ["default", "no-preemption"],
         [Expect(1, preempted=1, shares={"cpu": (0.5, 0.0)}, placements={"default/urgent": "n1"}),
          Expect(0, unschedulable=1, shares={"cpu": (0.75, 0.0)}, placements={"default/urgent": None})],
         {"default/urgent": [(BOUND, "n1"), (UNSCHEDULABLE, None)],
          "default/batch": [(PREEMPTED, None), (BOUND, "n1")]}),
]


def _config(name: str) -> Any:
    if name == "default":
        return default_configuration()
    if name == "no-preemption":
        return without_preemption(default_configuration())
    return load_config(name)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_compare_reports_each_configuration_and_what_differs(case: Case, tmp_path: Path) -> None:
    objs = load_manifests([write(tmp_path / "c.yaml", *case.cluster)])
    res = compare(objs, [(c, _config(c)) for c in case.configs])
    assert [c.name for c in res.configurations] == case.configs
    for got, want in zip(res.configurations, case.expect, strict=True):
        assert (got.bound, got.unschedulable, got.preempted) == (want.bound, want.unschedulable, want.preempted)
        assert got.empty_nodes == want.empty
        for resource, (mean, sd) in want.shares.items():
            share = got.share(resource)
            assert share is not None
            assert share.mean == pytest.approx(mean, abs=1e-9) and share.stddev == pytest.approx(sd, abs=1e-9)
        for key, node_name in want.placements.items():
            o = got.outcome(key)
            assert o is not None and o.node == node_name
    assert {d.pod: [(o.state, o.node) for o in d.outcomes] for d in res.placed_differently} == case.differently


@pytest.mark.parametrize("timeline", [False, True], ids=["in the conformance procedure", "on the timeline"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_forked_workers_give_the_same_result_as_one_process(case: Case, timeline: bool, tmp_path: Path) -> None:
    objs = load_manifests([write(tmp_path / "c.yaml", *case.cluster)])
    configs = [(c, _config(c)) for c in case.configs]
    one = compare(objs, configs, timeline=timeline, seed=7, jobs=1)
    forked = compare(objs, configs, timeline=timeline, seed=7, jobs=2)
    assert forked == one
    assert forked.as_dict() == one.as_dict()


class _Exploding:
    """A Filter plugin that fails at run time (not when the simulator is built)."""

    name = "Exploding"

    def filter(self, state: Any, pod: Any, node_info: Any) -> Any:
        raise ValueError("boom in the worker")


def test_an_error_inside_a_forked_worker_is_raised_by_compare(tmp_path: Path) -> None:
    import yaml

    from kubesched.plugins.registry import REGISTRY

    cfg_file = tmp_path / "exploding.yaml"
    cfg_file.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", "plugins": {"filter": {"enabled": [{"name": "Exploding"}]}}}]}))
    objs = load_manifests([write(tmp_path / "c.yaml", *four_pods_three_nodes())])
    registry = {**REGISTRY, "Exploding": lambda args, handle: _Exploding()}
    with pytest.raises(Exception, match="boom in the worker"):
        compare(objs, [("default", default_configuration()), ("exploding", load_config(cfg_file))],
                registry=registry, jobs=2)


def test_an_unschedulable_pod_carries_kube_schedulers_message(tmp_path: Path) -> None:
    objs = load_manifests([write(tmp_path / "c.yaml", *preemption_cluster())])
    res = compare(objs, [("a", without_preemption(default_configuration())), ("b", default_configuration())])
    assert res.configurations[0].outcome("default/urgent") == Outcome(
        UNSCHEDULABLE, None, "0/1 nodes are available: 1 Insufficient cpu.")


def test_extended_resources_count_only_on_nodes_that_have_them(tmp_path: Path) -> None:
    gpu_pod = pod("train", "1", "1Gi")
    gpu_pod["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = "1"
    objs = load_manifests([write(tmp_path / "c.yaml", node("gpu", extra={"example.com/gpu": "4"}), node("cpu"),
                                 gpu_pod)])
    res = compare(objs, [("a", default_configuration()), ("b", default_configuration())])
    share = res.configurations[0].share("example.com/gpu")
    assert share is not None and (share.mean, share.stddev, share.nodes) == (0.25, 0.0, 1)
    assert res.configurations[0].empty_nodes == ("cpu",)


def test_daemonset_and_mirror_pods_leave_a_node_empty(tmp_path: Path) -> None:
    ds_pod = pod("agent-x", "100m", node_name="n1")
    ds_pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent",
                                              "uid": "u1", "controller": True}]
    mirror = pod("etcd-n2", "100m", node_name="n2")
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    objs = load_manifests([write(tmp_path / "c.yaml", node("n1"), node("n2"), node("n3"), ds_pod, mirror,
                                 pod("app", "1", node_name="n3"))], controllers="none")
    res = compare(objs, [("a", default_configuration()), ("b", default_configuration())])
    assert res.configurations[0].empty_nodes == ("n1", "n2")


def test_timeline_runs_the_queue_simulation_with_the_seed(tmp_path: Path) -> None:
    objs = load_manifests([write(tmp_path / "c.yaml", *four_pods_three_nodes())])
    res = compare(objs, [(str(LEAST), load_config(LEAST)), (str(MOST), load_config(MOST))], timeline=True, seed=3)
    assert (res.procedure, res.seed) == ("timeline", 3)
    least, most = res.configurations
    assert least.bound == most.bound == 4
    # Packing leaves two nodes empty whatever node the random tie-break starts on.
    assert len(most.empty_nodes) == 2 and not least.empty_nodes


# ----------------------------------------------------------------------------- the command
def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), env={"COLUMNS": "160"})


def test_the_command_prints_both_configurations_on_the_example() -> None:
    r = run("compare", str(EXAMPLES / "compare" / "cluster.yaml"), "--config", str(LEAST), "--config", str(MOST))
    assert r.exit_code == 0, r.output
    assert "nodes left empty │ 0                   │ 2 (node-b, node-c)" in r.output
    assert "cpu requested    │ 33.3% ± 11.8%       │ 33.3% ± 47.1%" in r.output
    assert "default/api-2    │ node-b              │ node-a" in r.output
    assert "default/worker-1 │ node-c              │ node-a" in r.output


def test_json_output_has_the_documented_shape() -> None:
    r = run("compare", str(EXAMPLES / "compare" / "cluster.yaml"), "--config", "default", "--config", str(MOST),
            "-o", "json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["semantics"]["kubeVersion"] == "1.36"
    assert set(out) == {"semantics", "kind", "procedure", "seed", "nodes", "pendingPods", "configurations", "placedDifferently"}
    assert (out["kind"], out["procedure"], out["nodes"], out["pendingPods"]) == ("CompareReview", "deterministic", 3, 4)
    least, most = out["configurations"]
    assert least["name"] == "default" and most["name"] == str(MOST)
    assert set(least) == {"name", "bound", "unschedulable", "preempted", "notAttempted", "emptyNodes",
                          "requestedShare", "outcomes"}
    assert most["emptyNodes"] == ["node-b", "node-c"]
    assert most["requestedShare"]["cpu"] == {"mean": 0.333333, "stddev": 0.471405, "nodes": 3}
    assert least["outcomes"]["default/api-2"] == {"state": "bound", "node": "node-b", "message": ""}
    assert out["placedDifferently"] == [
        {"pod": "default/api-2", "outcomes": [{"state": "bound", "node": "node-b", "message": ""},
                                              {"state": "bound", "node": "node-a", "message": ""}]},
        {"pod": "default/worker-1", "outcomes": [{"state": "bound", "node": "node-c", "message": ""},
                                                 {"state": "bound", "node": "node-a", "message": ""}]}]


def assert_one_line_error(result: Result, expected: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: " + expected), lines[0]


BAD = [
    ("one configuration is not a comparison", ["--config", "default"],
     "compare needs two or more --config (a file, or `default`), got 1"),
    ("an unknown config file is named", ["--config", "default", "--config", "{t}/nope.yaml"],
     "{t}/nope.yaml: cannot read configuration: No such file or directory"),
    ("an invalid config names the field", ["--config", "default", "--config", "{t}/bad.yaml"],
     "{t}/bad.yaml: profiles[0].pluginConfig[0].args.scoringStrategy.type: "),
    ("--seed without --timeline is refused", ["--config", "default", "--config", "default", "--seed", "1"],
     "--seed draws --timeline's random tie-breaks"),
]


@pytest.mark.parametrize(("args", "expected"), [(a, e) for _, a, e in BAD], ids=[i for i, _, _ in BAD])
def test_bad_input_is_one_line_with_exit_code_2(args: list[str], expected: str, tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: Foo\n")
    cluster = str(EXAMPLES / "compare" / "cluster.yaml")
    result = CliRunner().invoke(main, ["compare", cluster, *(a.format(t=tmp_path) for a in args)])
    assert_one_line_error(result, expected.format(t=tmp_path))


def test_the_same_configuration_twice_gets_distinct_names() -> None:
    r = run("compare", str(EXAMPLES / "compare" / "cluster.yaml"), "--config", "default", "--config", "default",
            "-o", "json")
    assert r.exit_code == 0, r.output
    assert [c["name"] for c in json.loads(r.output)["configurations"]] == ["default", "default#2"]
