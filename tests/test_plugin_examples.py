"""The example plugins of examples/plugins: Coscheduling (gang scheduling through PreFilter,
Permit and Unreserve) and NodeLabelScore (Score + NormalizeScore), run the way a user runs
them — ``kubesched simulate --config ... --plugin MODULE:FACTORY`` — and unit by unit."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from simkit import cluster, config, node, pod, registry

from examples.plugins import coscheduling, nodelabelscore
from kubesched._cache import Cache
from kubesched._runtime.handle import FrameworkHandle
from kubesched._runtime.registry import full_registry
from kubesched.cli import main
from kubesched.cluster.memory import MemoryObjects
from kubesched.config import load_config
from kubesched.framework import Code, CycleState, NodeScore
from kubesched.objects import load_manifests
from kubesched.simulation import Simulator
from kubesched.timeline import TimelineSimulator

REPO = Path(__file__).resolve().parents[1]
PLUGINS = REPO / "examples" / "plugins"
GANG_CONFIG = PLUGINS / "gang-config.yaml"
TRAINERS = [f"ml/trainer-{i}" for i in range(4)]
GROUP = {coscheduling.POD_GROUP_LABEL: "trainer"}


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # --plugin examples.plugins.coscheduling:new imports from the current directory


def simulate(cluster_dir: str, *extra: str) -> dict[str, Any]:
    r = CliRunner().invoke(main, ["simulate", f"examples/plugins/{cluster_dir}", "--config", str(GANG_CONFIG),
                                  "--plugin", "examples.plugins.coscheduling:new", "-o", "json", *extra])
    assert r.exit_code == 0, r.output
    out: dict[str, Any] = json.loads(r.output)
    return out


def timeline_run(cluster_dir: str) -> tuple[TimelineSimulator, Any]:
    objs = load_manifests([str(PLUGINS / cluster_dir)])
    sim = TimelineSimulator(objs, load_config(GANG_CONFIG), registry=full_registry(["examples.plugins.coscheduling:new"]))
    return sim, sim.run()


# ----------------------------------------------------------------------------- the gang, end to end
def test_a_gang_that_fits_is_bound_all_together() -> None:
    out = simulate("gang-cluster-fits")
    placements = out["placements"]
    assert all(placements[k] for k in TRAINERS)
    assert len({placements[k] for k in TRAINERS}) == 4  # 3 of 4 CPUs each: one per node
    assert placements["shop/web"]
    # Pods arrive one second apart; the first three wait at Permit until the fourth is
    # reserved, then all four bind at that moment.
    scheduled = {e["pod"]: e["time"] for e in out["timeline"] if e["reason"] == "Scheduled"}
    assert {scheduled[k] for k in TRAINERS} == {3.0}
    assert not [e for e in out["timeline"] if e["reason"] == "FailedScheduling"]


def test_a_gang_that_does_not_fit_binds_none_and_releases_every_reservation() -> None:
    out = simulate("gang-cluster-too-small")
    assert [out["placements"][k] for k in TRAINERS] == [None] * 4
    assert out["placements"]["shop/web"]
    failed = [(e["time"], e["pod"], e["message"]) for e in out["timeline"] if e["reason"] == "FailedScheduling"]
    # trainer-3 finds no room (the three others hold a node each while they wait at Permit).
    assert failed[0] == (3.0, "ml/trainer-3", "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes "
                                              "are available: 3 No preemption victims found for incoming pod.")
    # 30 s after it was reserved, trainer-0's wait times out; its Unreserve rejects the others.
    assert (30.0, "ml/trainer-0", "0/1 nodes are available: 1 rejected due to timeout after waiting 30s at plugin "
                                  "Coscheduling.") in failed
    assert (30.0, "ml/trainer-1", "0/1 nodes are available: 1 rejection in Unreserve.") in failed
    assert (30.0, "ml/trainer-2", "0/1 nodes are available: 1 rejection in Unreserve.") in failed
    # The denied group is not reserved again while the cluster stays the same: the run ends.
    for key in TRAINERS:
        assert out["unschedulable"][key].startswith("0/3 nodes are available: pod group ml/trainer could not gather "
                                                    "4 pods; it is retried once the cluster changes.")
    assert out["simulatedSeconds"] < 60


def test_after_a_failed_gang_no_pod_holds_a_node_or_waits() -> None:
    sim, res = timeline_run("gang-cluster-too-small")
    assert all(res.final[k] is None for k in TRAINERS)
    on_nodes = sorted(pi.pod.key for ni in sim.cache.node_infos.values() for pi in ni.pods)
    assert on_nodes == ["shop/web"]
    assert sim.cache.assumed == set()
    assert all(len(fwk.handle.waiting_pods) == 0 for fwk in sim.profiles.values())
    assert res.pending.keys() == set(TRAINERS)


@pytest.mark.parametrize(("cluster_dir", "bound"), [("gang-cluster-fits", 4), ("gang-cluster-too-small", 0)],
                         ids=["deterministic mode binds the gang that fits", "deterministic mode binds none of the "
                                                                             "gang that does not fit"])
def test_the_gang_in_deterministic_mode(cluster_dir: str, bound: int) -> None:
    out = simulate(cluster_dir, "--deterministic")
    assert sum(1 for k in TRAINERS if out["placements"][k]) == bound


def test_the_plugin_can_be_given_as_a_file_path() -> None:
    r = CliRunner().invoke(main, ["simulate", "examples/plugins/gang-cluster-fits", "--config", str(GANG_CONFIG),
                                  "--plugin", "examples/plugins/coscheduling.py:new"])
    assert r.exit_code == 0, r.output
    assert "5 bound" in r.output


# ----------------------------------------------------------------------------- Coscheduling, unit
def gang_handle(pods: list[Any], nodes: list[Any] | None = None) -> FrameworkHandle:
    nodes = nodes or [node("n1")]
    cache = Cache(len(nodes))
    cache.add_nodes(nodes)
    for p in pods:
        if p.node_name:
            cache.add_pod(p)
    return FrameworkHandle(cache, MemoryObjects(pods=pods))


def trainer(i: int, *, min_member: str | None = None, on: str | None = None) -> Any:
    p = pod(f"trainer-{i}", labels=GROUP)
    if min_member is not None:
        p = dataclasses.replace(p, meta=dataclasses.replace(
            p.meta, annotations={coscheduling.MIN_MEMBER_ANNOTATION: min_member}))
    if on is not None:
        p = dataclasses.replace(p, node_name=on)
    return p


@pytest.mark.parametrize(
    ("pods", "min_member", "code", "message"),
    [
        ([trainer(0), trainer(1), trainer(2)], {"trainer": 4}, Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
         "pre-filter pod trainer-0 cannot find enough sibling pods, current pods number: 3, minMember of group: 4"),
        ([trainer(i) for i in range(4)], {"trainer": 4}, None, ""),
        ([trainer(0, min_member="2"), trainer(1)], {"trainer": 4}, None, ""),
        ([trainer(0, min_member="3"), trainer(1)], {}, Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
         "pre-filter pod trainer-0 cannot find enough sibling pods, current pods number: 2, minMember of group: 3"),
        ([trainer(0)], {}, Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
         "pod group default/trainer has no minMember: annotate its pods with scheduling.x-k8s.io/min-member or set "
         "args.minMember[trainer]"),
        ([pod("loner")], {}, None, ""),
    ],
    ids=["a group with fewer pods than minMember is rejected", "a complete group passes",
         "the pod's annotation overrides the args", "the annotation alone sets minMember",
         "a group without minMember is rejected", "a pod outside any group is not concerned"],
)
def test_coscheduling_pre_filter(pods: list[Any], min_member: dict[str, int], code: Code | None, message: str) -> None:
    plugin = coscheduling.new(coscheduling.CoschedulingArgs(min_member=min_member), gang_handle(pods))
    _, s = plugin.pre_filter(CycleState(), pods[0])
    assert (s.code if s else None, s.message if s else "") == (code, message)


def test_a_late_member_of_an_assembled_group_is_allowed_at_once() -> None:
    bound = [trainer(i, on="n1") for i in range(2)]
    late = trainer(2)
    handle = gang_handle([*bound, late])
    plugin = coscheduling.new(coscheduling.CoschedulingArgs(min_member={"trainer": 2}), handle)
    assert plugin.permit(CycleState(), late, "n1") == (None, 0)


def test_a_failed_group_is_denied_until_the_cluster_changes() -> None:
    pods = [trainer(i) for i in range(2)]
    handle = gang_handle(pods, [node("n1"), node("n2")])
    plugin = coscheduling.new(coscheduling.CoschedulingArgs(min_member={"trainer": 2}), handle)
    s, timeout = plugin.permit(CycleState(), pods[0], "n1")
    assert s is not None and s.code == Code.WAIT and timeout == 30.0
    assert s.message == "waiting for 1 more pod(s) of group default/trainer"
    plugin.unreserve(CycleState(), pods[0], "n1")
    plugin.unreserve(CycleState(), pods[0], "n1")  # idempotent
    _, s = plugin.pre_filter(CycleState(), pods[1])
    assert s is not None and s.message == ("pod group default/trainer could not gather 2 pods; it is retried once "
                                           "the cluster changes")
    # Another pod lands on a node: the group may fit differently now, so it is tried again.
    handle.cache.add_pod(dataclasses.replace(pod("other"), node_name="n2"))
    assert plugin.pre_filter(CycleState(), pods[1]) == (None, None)


# ----------------------------------------------------------------------------- NodeLabelScore
@pytest.mark.parametrize(
    ("prefer", "labels", "expected"),
    [
        ("Higher", {"n1": "1", "n2": "3", "n3": "5"}, {"n1": 0, "n2": 50, "n3": 100}),
        ("Lower", {"n1": "1", "n2": "3", "n3": "5"}, {"n1": 100, "n2": 50, "n3": 0}),
        ("Higher", {"n1": "7", "n2": "7"}, {"n1": 100, "n2": 100, "n3": 0}),
        ("Higher", {"n1": "-10", "n2": "x", "n3": "10"}, {"n1": 0, "n2": 0, "n3": 100}),
        ("Higher", {}, {"n1": 0, "n2": 0, "n3": 0}),
    ],
    ids=["the highest value scores 100 and the lowest 0", "prefer Lower inverts the scale",
         "equal values all score 100 and a node without the label 0", "a non-integer value counts as no label",
         "no node labelled: every node scores 0"],
)
def test_node_label_score_normalizes_label_values(prefer: str, labels: dict[str, str], expected: dict[str, int]) -> None:
    nodes = [node(n, **({"rank": labels[n]} if n in labels else {})) for n in ("n1", "n2", "n3")]
    handle = FrameworkHandle.for_nodes(nodes)
    plugin = nodelabelscore.new(nodelabelscore.NodeLabelScoreArgs(label="rank", prefer=prefer), handle)  # type: ignore[arg-type]
    scores = [NodeScore(ni.name, plugin.score(CycleState(), pod("p"), ni)) for ni in handle.snapshot.list()]
    assert plugin.normalize_score(CycleState(), pod("p"), scores) is None
    assert {s.name: s.score for s in scores} == expected


def test_node_label_score_places_pods_on_the_preferred_node() -> None:
    cfg = config({"plugins": {"score": {"enabled": [{"name": "NodeLabelScore", "weight": 10}]}},
                  "pluginConfig": [{"name": "NodeLabelScore", "args": {"label": "example.com/generation"}}]})
    nodes = [node("old", **{"example.com/generation": "1"}), node("new", **{"example.com/generation": "3"}),
             node("bare")]
    sim = Simulator(cluster(nodes, [pod("p")]), cfg, registry=registry(NodeLabelScore=nodelabelscore.new),
                    deterministic=True)
    res = sim.run()
    assert res.final == {"default/p": "new"}
    scores = res.steps[0].attempt.scores
    assert scores is not None and {n: s["NodeLabelScore"] for n, s in scores.as_dict().items()} == {
        "old": 0, "new": 1000, "bare": 0}


def test_a_gang_retried_forever_is_given_up_after_max_attempts() -> None:
    """Without its denial, the group's members would be reserved, time out and be retried
    forever (each release of their nodes is a cluster change): the timeline stops retrying a
    pod after max_attempts failures, and ends with nothing reserved."""

    class NoDenial(coscheduling.Coscheduling):
        def pre_filter(self, state: CycleState, pod: Any) -> Any:
            self._denied.clear()
            return super().pre_filter(state, pod)

    def new(args: coscheduling.CoschedulingArgs, handle: Any) -> NoDenial:
        return NoDenial(args, handle)

    objs = load_manifests([str(PLUGINS / "gang-cluster-too-small")])
    sim = TimelineSimulator(objs, load_config(GANG_CONFIG), registry=registry(Coscheduling=new), max_attempts=5)
    res = sim.run()
    assert all(res.final[k] is None for k in TRAINERS)
    assert all(res.pending[k].startswith("given up after 5 scheduling attempts: 0/") for k in TRAINERS)
    assert sim.cache.assumed == set()
    assert [pi.pod.key for ni in sim.cache.node_infos.values() for pi in ni.pods] == ["shop/web"]


def test_config_validate_knows_out_of_tree_plugins_and_checks_their_args(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["config", "validate", str(GANG_CONFIG)])
    assert r.exit_code == 2 and "plugin 'Coscheduling' does not exist" in r.output
    r = CliRunner().invoke(main, ["config", "validate", str(GANG_CONFIG), "--plugin", "examples.plugins.coscheduling:new"])
    assert r.exit_code == 0, r.output
    bad = tmp_path / "bad.yaml"
    bad.write_text(GANG_CONFIG.read_text().replace("permitWaitingTimeSeconds: 30", "permitWaitingTimeSeconds: soon"))
    r = CliRunner().invoke(main, ["config", "validate", str(bad), "--plugin", "examples.plugins.coscheduling:new"])
    assert r.exit_code == 2
    assert r.output.strip() == (f"error: {bad}: profiles[0].pluginConfig[0].args.permitWaitingTimeSeconds: Invalid "
                                "value: 'soon': expected integer, got string")
