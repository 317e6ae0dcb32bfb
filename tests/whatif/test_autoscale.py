"""`kubesched autoscale`, scale-up: cluster-autoscaler's binpacking estimator, its expanders,
maxSize, its event texts, and the cheapest scale-up on HiGHS — on clusters solved by hand.

Every cluster has one full node outside the node groups (``busy``), so the pending pods cannot
be scheduled and only new nodes can take them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubesched.cli import main
from kubesched.whatif import _autoscale_expanders as expanders

from ._autoscale_kit import group, member, owned, pending, replica_set, run
from ._manifests import node, pod, write

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "autoscale"
BUSY = [node("busy", "1", "1Gi"), pod("filler", "1", "1Gi", node_name="busy")]
GPU_TAINT = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]


def _chosen(res: Any) -> tuple[str, int, int] | None:
    c = res.scale_up.chosen
    return None if c is None else (c.group, c.nodes, len(c.pods))


# ----------------------------------------------------------------------------- expanders
@pytest.mark.parametrize(("expander", "groups", "pods", "seed", "want"), [
    # small (2 cpu, maxSize 1): one node, two pods; big (4 cpu): one node, four pods.
    ("most-pods", [group("small", "2", max_size=1), group("big", "4")], 4, 0, ("big", 1, 4)),
    # a: 1 node of 4 cpu / 4Gi for 3 pods of 1 cpu / 1Gi wastes 1/4 + 1/4 = 0.5;
    # b: 1 node of 8 cpu / 8Gi wastes 5/8 + 5/8 = 1.25.
    ("least-waste", [group("b", "8", "8Gi"), group("a", "4", "4Gi")], 3, 0, ("a", 1, 3)),
    # Same node, same pods: the lower price per hour gives the lower score.
    ("price", [group("dear", price=1.0), group("cheap", price=0.1)], 2, 0, ("cheap", 1, 2)),
    # The highest priority wins; a group without one is not used.
    ("priority", [group("low", priority=5), group("high", priority=10), group("none")], 2, 0, ("high", 1, 2)),
    # Two equal options: random.Random(0).randrange(2) is 1, random.Random(1).randrange(2) is 0.
    ("random", [group("first"), group("second")], 2, 0, ("second", 1, 2)),
    ("random", [group("first"), group("second")], 2, 1, ("first", 1, 2)),
    # most-pods with a tie falls back to random among the tied options (seed 0 -> the second).
    ("most-pods", [group("first"), group("second")], 2, 0, ("second", 1, 2)),
], ids=[
    "most-pods takes the group whose new nodes schedule the most pods",
    "least-waste takes the group wasting the least cpu and memory share",
    "price takes the cheaper of two identical groups",
    "priority takes the highest-priority group and ignores groups without priority",
    "random with seed 0 takes the second of two equal options",
    "random with seed 1 takes the first of two equal options",
    "most-pods breaks a tie at random",
])
def test_expander_picks(tmp_path: Path, expander: str, groups: list[dict[str, Any]], pods: int, seed: int,
                        want: tuple[str, int, int]) -> None:
    res = run(tmp_path, [*BUSY, *pending(pods)], groups, expander=expander, seed=seed)
    assert _chosen(res) == want


def test_priority_expander_says_which_groups_it_does_not_use(tmp_path: Path) -> None:
    res = run(tmp_path, [*BUSY, *pending(1)], [group("high", priority=10), group("none")], expander="priority")
    assert ("Priority expander: node group none not found in priority expander configuration. The group won't be "
            "used.") in res.notes


def test_least_waste_measure_is_cluster_autoscalers_blended_percentage(tmp_path: Path) -> None:
    res = run(tmp_path, [*BUSY, *pending(3)], [group("a", "4", "4Gi")], expander="least-waste")
    # wastedScore 0.5; cluster-autoscaler logs wastedScore * 50 as the blended percentage.
    assert [o.measure for o in res.scale_up.options] == ["waste 25.00% blended"]


def test_price_score_matches_the_formula_by_hand() -> None:
    """One 4-cpu node at 1.0/h for one pod of 1 cpu / 1Gi in a 3-node cluster (preferred node:
    2 cpu): pods price 0.033174 + 0.004446, stabilization 0.016587 + 0.004446 * 500/1024;
    unfitness max(2/4, 4/2) = 2, not suppressed for one node (tanh(0) = 0)."""
    from kubesched.objects.parse import parse_node, parse_pod

    tmpl = parse_node(node("t", "4", "16Gi"))
    one = parse_pod(pod("x", "1", "1Gi"))
    stab = 0.016587 + 0.004446 * 500 / 1024
    want = 2.0 * (1.0 + stab) / (0.033174 + 0.004446 + stab)
    got = expanders.price_score(expanders.Option("g", 1, (one,)), tmpl, 1.0, 3)
    assert got == pytest.approx(want, rel=1e-12)


# ----------------------------------------------------------------------------- estimator and maxSize
def test_binpacking_fills_each_new_node_before_adding_the_next(tmp_path: Path) -> None:
    # 4-cpu template, 7 pods of 1.5 cpu: two per node -> 4 nodes.
    res = run(tmp_path, [*BUSY, *pending(7, "1500m")], [group("g")])
    assert _chosen(res) == ("g", 4, 7)
    per_node: dict[str, int] = {}
    for _, n in res.scale_up.placements:
        per_node[n] = per_node.get(n, 0) + 1
    assert per_node == {"template-node-for-g-e-0": 2, "template-node-for-g-e-1": 2, "template-node-for-g-e-2": 2,
                        "template-node-for-g-e-3": 1}


def test_max_size_caps_the_estimate_at_the_groups_room(tmp_path: Path) -> None:
    # The group has 1 node of 3; each pod takes a whole 4-cpu node: 2 nodes, 2 pods.
    docs = [*BUSY, member("g-1", "g"), pod("hog", "4", node_name="g-1"), *pending(5, "3")]
    res = run(tmp_path, docs, [group("g", max_size=3)])
    assert _chosen(res) == ("g", 2, 2)
    assert (res.scale_up.current_size, res.scale_up.new_size) == (1, 3)


def test_a_group_at_max_size_is_skipped_with_cluster_autoscalers_reason(tmp_path: Path) -> None:
    docs = [*BUSY, member("g-1", "g"), pod("hog", "4", node_name="g-1"), *pending(1)]
    res = run(tmp_path, docs, [group("g", max_size=1)])
    assert res.scale_up.chosen is None
    assert res.scale_up.no_scale_up == (("g", "max node group size reached"),)
    assert res.scale_up.not_triggered == (("default/p-0", "pod didn't trigger scale-up: 1 max node group size reached"),)


def test_the_event_text_counts_each_reason_over_the_groups(tmp_path: Path) -> None:
    docs = [*BUSY, member("full-1", "full"), pod("hog", "4", node_name="full-1"), *pending(1, "6")]
    groups = [group("a", "4"), group("b", "2"), group("full", max_size=1)]
    res = run(tmp_path, docs, groups)
    assert dict(res.scale_up.not_triggered) == {
        "default/p-0": "pod didn't trigger scale-up: 2 Insufficient cpu, 1 max node group size reached"}


def test_a_taint_the_pod_does_not_tolerate_is_the_groups_reason(tmp_path: Path) -> None:
    res = run(tmp_path, [*BUSY, *pending(1)], [group("gpu", taints=GPU_TAINT)])
    assert dict(res.scale_up.not_triggered) == {
        "default/p-0": "pod didn't trigger scale-up: 1 node(s) had untolerated taint(s)"}


def test_daemonset_pods_of_a_member_node_take_room_on_every_new_node(tmp_path: Path) -> None:
    # A DaemonSet pod of 1 cpu runs on the member node: a fresh 4-cpu node has 3 cpu left,
    # so the 2-cpu pods go one per node (two per node without it).
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "default"},
          "spec": {"selector": {"matchLabels": {"app": "agent"}},
                   "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "c"}]}}}}
    agent = owned(pod("agent-1", "1", node_name="g-1"), "DaemonSet", "agent")
    docs = [*BUSY, ds, member("g-1", "g"), agent, pod("hog", "3", node_name="g-1"), *pending(2, "2")]
    res = run(tmp_path, docs, [group("g")])
    assert _chosen(res) == ("g", 2, 2)


def test_pods_of_one_controller_are_one_equivalence_group(tmp_path: Path) -> None:
    from kubesched.objects.parse import parse_pod
    from kubesched.whatif.autoscale import build_pod_groups

    a = [parse_pod(owned(pod(f"w-{i}", "1"), "ReplicaSet", "web")) for i in range(3)]
    bare = [parse_pod(pod(f"b-{i}", "1")) for i in range(2)]
    groups = build_pod_groups([a[0], bare[0], a[1], bare[1], a[2]])
    assert [[p.name for p in g.pods] for g in groups] == [["w-0", "w-1", "w-2"], ["b-0"], ["b-1"]]


def test_daemonset_pods_never_trigger_a_scale_up(tmp_path: Path) -> None:
    stuck = owned(pod("agent-x", "8"), "DaemonSet", "agent")
    res = run(tmp_path, [*BUSY, stuck], [group("g")])
    assert res.scale_up.unschedulable == ()
    assert res.scale_up.chosen is None


# ----------------------------------------------------------------------------- the cheapest scale-up
def test_the_cheapest_scale_up_mixes_groups(tmp_path: Path) -> None:
    # 6 pods of 3 cpu / 6Gi. highmem (8 cpu / 64Gi, 0.48/h) takes 2 per node; compute (4 cpu /
    # 8Gi, 0.15/h, room for 4 new nodes) takes 1. Cheapest: 4 compute + 1 highmem = 1.08/h
    # (3 highmem: 1.44; 2 highmem + 2 compute: 1.26).
    docs = [*BUSY, member("c-1", "compute", "4", "8Gi"), pod("hog", "4", node_name="c-1"), *pending(6, "3", "6Gi")]
    groups = [group("highmem", "8", "64Gi", price=0.48), group("compute", "4", "8Gi", max_size=5, price=0.15)]
    res = run(tmp_path, docs, groups)
    assert dict(res.optimal.nodes) == {"highmem": 1, "compute": 4}
    assert res.optimal.cost == pytest.approx(1.08)
    assert len(res.optimal.placements) == 6 and res.optimal.verified == 6
    assert res.optimal.left == ()


def test_the_cheapest_scale_up_leaves_pods_no_group_takes(tmp_path: Path) -> None:
    docs = [*BUSY, *pending(2), *pending(1, "16", prefix="huge")]
    res = run(tmp_path, docs, [group("g", price=0.2)])
    assert dict(res.optimal.nodes) == {"g": 1}
    assert dict(res.optimal.left) == {"default/huge-0": "no node group's template node takes it"}


def test_the_cheapest_scale_up_stops_at_max_size(tmp_path: Path) -> None:
    res = run(tmp_path, [*BUSY, *pending(3, "3")], [group("g", max_size=2, price=0.2)])
    assert dict(res.optimal.nodes) == {"g": 2}
    assert sorted(dict(res.optimal.left).values()) == ["no room left in the node groups (maxSize)"]


def test_host_ports_put_one_pod_per_new_node(tmp_path: Path) -> None:
    port = [{"containerPort": 80, "hostPort": 8080}]
    res = run(tmp_path, [*BUSY, *pending(3, "100m", ports=port)], [group("g", price=0.1)])
    assert dict(res.optimal.nodes) == {"g": 3}
    assert res.optimal.cost == pytest.approx(0.3)


def test_a_group_taint_sends_the_cheapest_scale_up_elsewhere(tmp_path: Path) -> None:
    groups = [group("tainted", price=0.01, taints=GPU_TAINT), group("plain", price=0.5)]
    res = run(tmp_path, [*BUSY, *pending(2)], groups)
    assert dict(res.optimal.nodes) == {"plain": 1}


def test_replicas_of_a_controller_with_self_anti_affinity_go_one_per_node(tmp_path: Path) -> None:
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    pods = [owned(pod(f"web-{i}", "100m", affinity=anti), "ReplicaSet", "web") for i in range(3)]
    res = run(tmp_path, [*BUSY, replica_set("web"), *pods], [group("g", price=0.1)])
    assert dict(res.optimal.nodes) == {"g": 3}
    assert _chosen(res) == ("g", 3, 3)


# ----------------------------------------------------------------------------- the command
def test_the_example_answers_as_its_readme_says() -> None:
    out = CliRunner().invoke(main, ["autoscale", str(EXAMPLES / "cluster"), "--node-groups",
                                    str(EXAMPLES / "nodegroups.yaml"), "--expander", "price", "-o", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["scaleUp"]["chosen"]["group"] == "compute" and data["scaleUp"]["chosen"]["nodes"] == 4
    assert data["optimal"]["nodes"] == {"highmem": 1, "compute": 4}
    assert data["scaleDown"]["removable"] == ["compute-1"]
    assert data["scaleDown"]["blocked"]["general-2"] == (
        "BlockedByPod: NotEnoughPdb: not enough pod disruption budget to move default/web-6d8f9-b1")


def test_the_table_names_the_choice_and_the_report_is_written(tmp_path: Path) -> None:
    report = tmp_path / "r.html"
    out = CliRunner().invoke(main, ["autoscale", str(EXAMPLES / "cluster"), "--node-groups",
                                    str(EXAMPLES / "nodegroups.yaml"), "--report", str(report)])
    assert out.exit_code == 0, out.output
    assert "pod didn't trigger scale-up: 2 Insufficient nvidia.com/gpu, 2 max node group size reached, 1 Insufficient" \
           " memory" in out.output
    assert report.read_text().startswith("<!DOCTYPE html>") or "<html" in report.read_text()


@pytest.mark.parametrize(("doc", "field", "message"), [
    ({"kind": "NodeGroup", "apiVersion": "v1"}, "apiVersion", "must be kubesched.io/v1alpha1"),
    (group("g") | {"spec": {**group("g")["spec"], "maxSize": -1}}, "spec.maxSize", "must be at least minSize (0)"),
    (group("g") | {"spec": {k: v for k, v in group("g")["spec"].items() if k != "pricePerHour"}},
     "spec.pricePerHour", "Required value"),
    (group("g") | {"spec": {**group("g")["spec"], "members": {}}}, "spec.members", "must select by at least one label"),
    (group("g") | {"spec": {**group("g")["spec"], "template": {"status": {"capacity": {"pods": "10"}}}}},
     "spec.template.status.allocatable.cpu", "Required value"),
    (group("g") | {"spec": {**group("g")["spec"], "maxsize": 3}}, "spec.maxsize", "unknown field"),
], ids=[
    "a wrong apiVersion names the field",
    "maxSize below minSize names the field",
    "a missing price names the field",
    "an empty member selector is refused",
    "a template without cpu names the field",
    "a misspelt spec field is refused",
])
def test_bad_node_groups_exit_2_naming_file_document_field(tmp_path: Path, doc: dict[str, Any], field: str,
                                                            message: str) -> None:
    groups = write(tmp_path / "groups.yaml", group("ok"), doc)
    out = CliRunner().invoke(main, ["autoscale", str(EXAMPLES / "cluster"), "--node-groups", groups])
    assert out.exit_code == 2
    assert f"groups.yaml: document 1: {field}: " in out.output and message in out.output


def test_a_node_two_groups_select_is_an_error(tmp_path: Path) -> None:
    both = group("b")
    both["spec"]["members"] = {"matchLabels": {"kubernetes.io/hostname": "general-1"}}
    groups = write(tmp_path / "groups.yaml", group("general"), both)
    out = CliRunner().invoke(main, ["autoscale", str(EXAMPLES / "cluster"), "--node-groups", groups])
    assert out.exit_code == 2
    assert "node general-1 is selected by node groups 'general' (document 0) and 'b'" in out.output


def test_the_autoscale_bench_workload_runs_on_a_small_cluster() -> None:
    from kubesched.bench import run_bench

    res = run_bench("autoscale", 25, 40)
    assert res.ok, res.problems
    assert "workload=autoscale nodes=25 node groups=5" in res.summary()


def test_identical_pods_that_failed_are_not_attempted_again_and_stay_pending(tmp_path: Path) -> None:
    # The shortcut of schedule_pending changes no outcome: the 3 identical pods of 2 cpu still
    # fill the 4-cpu member node with two and leave the third pending.
    docs = [member("g-1", "g"), *[owned(pod(f"w-{i}", "2"), "ReplicaSet", "w") for i in range(3)], replica_set("w")]
    res = run(tmp_path, docs, [group("g")])
    assert sorted(dict(res.scheduled).values()) == ["g-1", "g-1"]
    assert res.scale_up.unschedulable == ("default/w-2",)
