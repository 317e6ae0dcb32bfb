"""`kubesched bench --workload extender` at tiny sizes: validity only, never timing. Every run
(no extender, nodeCacheCapable false, true) binds every pod, never on a node the bench
extender rejects; and the check catches an extender that was not honoured."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from click.testing import CliRunner

from kubesched.bench import (
    _bench_extender_app,
    _extender_rejects,
    _run_extender_once,
    basic_nodes,
    basic_pods,
    run_extender_bench,
)
from kubesched.cli import main
from kubesched.framework import Binding, Extender, ExtenderVictims, NodeInfoGetter
from kubesched.objects import Node, Pod


def test_every_run_binds_every_pod_and_honours_the_extender() -> None:
    res = run_extender_bench((12, 25), 8, seed=3, servers=("thread",))
    assert res.ok, res.problems
    assert [(r.nodes, r.mode) for r in res.runs] == [
        (12, "none"), (12, "nodes"), (12, "names"), (25, "none"), (25, "nodes"), (25, "names")]
    assert all(r.bound == 8 and len(r.latencies) == 8 for r in res.runs)
    assert "added mean" in res.summary()


def test_cli_reports_the_added_latency_per_run_as_json() -> None:
    # The extender in a process of its own (as deployed), then in a thread of the scheduler's.
    r = CliRunner().invoke(main, ["bench", "--workload", "extender", "--nodes", "15", "--pods", "4", "-o", "json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert (data["workload"], data["pods"], data["problems"]) == ("extender", 4, [])
    rows = data["runs"]
    assert [(row["nodes"], row["server"], row["nodeCacheCapable"]) for row in rows] == [
        (15, None, None), (15, "process", False), (15, "process", True), (15, "thread", False), (15, "thread", True)]
    assert all("added_mean_ms" in row and "added_p50_ms" in row for row in rows[1:])
    assert all(row["bound"] == 4 for row in rows)


def test_the_per_node_handlers_give_the_same_decisions() -> None:
    from kubesched.config.types import Extender as ExtenderConfig
    from kubesched.extender import HTTPExtender
    from kubesched.extender.server import ServerThread

    nodes, pods = basic_nodes(30), basic_pods(10)
    placements = []
    for per_node in (False, True):
        with ServerThread(_bench_extender_app(nodes, per_node=per_node)) as srv, HTTPExtender(ExtenderConfig(
                url_prefix=srv.url + "/bench", filter_verb="filter", prioritize_verb="prioritize", weight=1,
                node_cache_capable=True)) as ext:
            _, placed, problems = _run_extender_once(nodes, pods, [ext], seed=1)
        assert problems == []
        placements.append(placed)
    assert placements[0] == placements[1]


class AcceptEverything:
    """An in-process extender (the framework's Extender protocol) that filters nothing out."""

    def name(self) -> str:
        return "accept-everything"

    def is_filter(self) -> bool:
        return True

    def is_prioritizer(self) -> bool:
        return False

    def is_binder(self) -> bool:
        return False

    def supports_preemption(self) -> bool:
        return False

    def is_ignorable(self) -> bool:
        return False

    def is_interested(self, pod: Pod) -> bool:
        return True

    def filter(self, pod: Pod, nodes: Sequence[Node]) -> tuple[list[Node], dict[str, str], dict[str, str]]:
        return list(nodes), {}, {}

    def prioritize(self, pod: Pod, nodes: Sequence[Node]) -> tuple[list[tuple[str, int]], int]:
        return [], 0

    def bind(self, binding: Binding) -> None:
        raise AssertionError("not a binder")

    def process_preemption(self, pod: Pod, node_name_to_victims: Mapping[str, ExtenderVictims],
                           node_infos: NodeInfoGetter) -> Mapping[str, ExtenderVictims]:
        raise AssertionError("no preemption")


def test_the_check_catches_pods_on_nodes_the_bench_extender_rejects() -> None:
    ext = AcceptEverything()
    assert isinstance(ext, Extender)
    nodes = basic_nodes(10)
    _, placed, problems = _run_extender_once(nodes, basic_pods(30), [ext], seed=1)
    assert any(_extender_rejects(n) for n in placed.values())  # node-9 got pods
    assert any("pods on nodes the extender rejects" in p for p in problems), problems
    assert any("attempts got no extender scores" in p for p in problems), problems
