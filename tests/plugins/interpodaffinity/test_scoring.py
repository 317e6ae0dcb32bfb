"""InterPodAffinity PreScore / Score / NormalizeScore: the cases of upstream's scoring_test.go
(TestPreferredAffinity, TestPreferredAffinityWithHardPodAffinitySymmetricWeight), each
checked per node and in batch. The two "invalid label syntax" cases are parse-time errors
here and are not repeated."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubesched.config.args import InterPodAffinityArgs
from kubesched.errors import ConfigError
from kubesched.framework import SKIP, CycleState, NodeScore, Status
from kubesched.objects import Node, Pod
from kubesched.plugins.interpodaffinity import InterPodAffinity, new
from kubesched.plugins.interpodaffinity.scoring import normalize_score_array, normalize_scores

from .util import affinity, expr, handle_for, node, pod, term, weighted

CHINA = {"region": "China"}
INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
S1 = {"security": "S1"}
S2 = {"security": "S2"}


def In(key: str, *values: str) -> dict[str, Any]:  # noqa: N802
    return expr(key, "In", list(values))


TEAM1 = {"matchExpressions": [In("team", "team1")]}
STAY_WITH_S1_IN_REGION = affinity(pref=[weighted(5, term("region", In("security", "S1")))])
STAY_WITH_S2_IN_REGION = affinity(pref=[weighted(6, term("region", In("security", "S2")))])
AFFINITY3 = affinity(pref=[
    weighted(8, term("region", expr("security", "NotIn", ["S1"]), In("security", "S2"))),
    weighted(2, term("region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist"))),
])
HARD_AFFINITY = affinity(req=[
    term("region", In("security", "S1", "value2")),
    term("region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist")),
])
AWAY_FROM_S1_IN_AZ = affinity(anti_pref=[weighted(5, term("az", In("security", "S1")))])
AWAY_FROM_S2_IN_AZ = affinity(anti_pref=[weighted(5, term("az", In("security", "S2")))])
STAY_S1_REGION_AWAY_S2_AZ = affinity(pref=[weighted(8, term("region", In("security", "S1")))],
                                     anti_pref=[weighted(5, term("az", In("security", "S2")))])
AFFINITY_NS_SELECTOR = affinity(pref=[weighted(5, term("region", In("security", "S1"), namespaces=["subteam2.team2"],
                                                       ns_selector=TEAM1))])
ANTI_AFFINITY_NS_SELECTOR = affinity(anti_pref=[weighted(5, term("region", In("security", "S1"),
                                                                 namespaces=["subteam2.team2"], ns_selector=TEAM1))])


def run_score(incoming: Pod, pods: list[Pod], nodes: list[Node], args: InterPodAffinityArgs | None = None
              ) -> tuple[Status | None, list[int]]:
    """PreScore over all nodes, Score, NormalizeScore; also asserts the batch methods agree."""
    handle = handle_for(nodes, pods)
    pl = new(args, handle)
    state = CycleState()
    infos = [handle.snapshot.get(n.meta.name) for n in nodes]
    assert all(ni is not None for ni in infos)
    st = pl.pre_score(state, incoming, [ni for ni in infos if ni is not None])
    if st is not None:
        return st, []
    scores = [NodeScore(ni.name, pl.score(state, incoming, ni)) for ni in infos if ni is not None]
    rows = np.array([ni.index for ni in infos if ni is not None], np.int64)
    raw = pl.score_batch(state, incoming, handle.snapshot.table, rows)
    assert list(raw) == [s.score for s in scores]
    assert pl.normalize_score(state, incoming, scores) is None
    assert list(pl.normalize_score_batch(state, incoming, raw)) == [s.score for s in scores]
    return None, [s.score for s in scores]


PREFERRED: list[tuple[str, Pod, list[Pod], list[Node], Status | None, list[int]]] = [
    ("all nodes have the same priority when no pod has affinity",
     pod(labels=S1), [], [node("node1", CHINA), node("node2", INDIA), node("node3", AZ1)], SKIP, []),
    ("affinity: the node matching both topology key and pods scores highest",
     pod(labels=S1, aff=STAY_WITH_S1_IN_REGION),
     [pod(node="node1", labels=S1), pod(node="node2", labels=S2), pod(node="node3", labels=S1)],
     [node("node1", CHINA), node("node2", INDIA), node("node3", AZ1)], None, [100, 0, 0]),
    ("affinity: nodes sharing the topology value of a matching pod score the same",
     pod(aff=STAY_WITH_S1_IN_REGION), [pod(node="node1", labels=S1)],
     [node("node1", CHINA), node("node2", CHINA_AZ1), node("node3", INDIA)], None, [100, 100, 0]),
    ("affinity: the region with more matching pods scores higher",
     pod(labels=S1, aff=STAY_WITH_S2_IN_REGION),
     [pod(node="node1", labels=S2), pod(node="node1", labels=S2), pod(node="node2", labels=S2),
      pod(node="node3", labels=S2), pod(node="node4", labels=S2), pod(node="node5", labels=S2)],
     [node("node1", CHINA), node("node2", INDIA), node("node3", CHINA), node("node4", CHINA), node("node5", INDIA)],
     None, [100, 0, 100, 100, 0]),
    ("affinity: different operators and values, including some match failures",
     pod(labels=S1, aff=AFFINITY3),
     [pod(node="node1", labels=S1), pod(node="node2", labels=S2), pod(node="node3", labels=S1)],
     [node("node1", CHINA), node("node2", INDIA), node("node3", AZ1)], None, [20, 100, 0]),
    ("affinity symmetry: existing pods' preferred affinity terms count",
     pod(labels=S2),
     [pod(node="node1", labels=S1, aff=STAY_WITH_S1_IN_REGION), pod(node="node2", labels=S2, aff=STAY_WITH_S2_IN_REGION)],
     [node("node1", CHINA), node("node2", INDIA), node("node3", AZ1)], None, [0, 100, 0]),
    ("affinity symmetry with a namespace selector",
     pod(ns="subteam1.team1", labels=S1),
     [pod(node="node1", labels=S1, aff=AFFINITY_NS_SELECTOR), pod(node="node2", labels=S2, aff=STAY_WITH_S2_IN_REGION)],
     [node("node1", CHINA), node("node2", INDIA), node("node3", AZ1)], None, [100, 0, 0]),
    ("anti-affinity symmetry with a namespace selector",
     pod(ns="subteam1.team1", labels=S1),
     [pod(node="node1", labels=S1, aff=ANTI_AFFINITY_NS_SELECTOR),
      pod(node="node2", labels=S2, aff=STAY_WITH_S2_IN_REGION)],
     [node("node1", CHINA), node("node2", INDIA), node("node3", AZ1)], None, [0, 100, 100]),
    ("affinity symmetry: existing pods' required affinity terms count with the hard weight",
     pod(labels=S1),
     [pod(node="node1", labels=S1, aff=HARD_AFFINITY), pod(node="node2", labels=S2, aff=HARD_AFFINITY)],
     [node("node1", CHINA), node("node2", INDIA), node("node3", AZ1)], None, [100, 100, 0]),
    ("anti-affinity: the node without matching pods scores highest",
     pod(labels=S1, aff=AWAY_FROM_S1_IN_AZ), [pod(node="node1", labels=S1), pod(node="node2", labels=S2)],
     [node("node1", AZ1), node("node2", CHINA)], None, [0, 100]),
    ("anti-affinity: the node without the topology key scores highest",
     pod(labels=S1, aff=AWAY_FROM_S1_IN_AZ), [pod(node="node1", labels=S1), pod(node="node2", labels=S1)],
     [node("node1", AZ1), node("node2", CHINA)], None, [0, 100]),
    ("anti-affinity: the node with more matching pods scores lower",
     pod(labels=S1, aff=AWAY_FROM_S1_IN_AZ),
     [pod(node="node1", labels=S1), pod(node="node1", labels=S1), pod(node="node2", labels=S2)],
     [node("node1", AZ1), node("node2", INDIA)], None, [0, 100]),
    ("anti-affinity symmetry: existing pods' preferred anti-affinity terms count",
     pod(labels=S2),
     [pod(node="node1", labels=S1, aff=AWAY_FROM_S2_IN_AZ), pod(node="node2", labels=S2, aff=AWAY_FROM_S1_IN_AZ)],
     [node("node1", AZ1), node("node2", AZ2)], None, [0, 100]),
    ("affinity and anti-affinity are both considered",
     pod(labels=S1, aff=STAY_S1_REGION_AWAY_S2_AZ), [pod(node="node1", labels=S1), pod(node="node2", labels=S1)],
     [node("node1", CHINA), node("node2", AZ1)], None, [100, 0]),
    ("affinity and anti-affinity with pods of the same labels spread in a region",
     pod(labels=S1, aff=STAY_S1_REGION_AWAY_S2_AZ),
     [pod(node="node1", labels=S1), pod(node="node1", labels=S1), pod(node="node2", labels=S1),
      pod(node="node3", labels=S1), pod(node="node3", labels=S1), pod(node="node4", labels=S1),
      pod(node="node5", labels=S1)],
     [node("node1", CHINA_AZ1), node("node2", INDIA), node("node3", CHINA), node("node4", CHINA), node("node5", INDIA)],
     None, [100, 0, 100, 100, 0]),
    ("affinity, anti-affinity and symmetry together",
     pod(labels=S1, aff=STAY_S1_REGION_AWAY_S2_AZ),
     [pod(node="node1", labels=S1), pod(node="node2", labels=S2), pod(node="node3", aff=STAY_S1_REGION_AWAY_S2_AZ),
      pod(node="node4", aff=AWAY_FROM_S1_IN_AZ)],
     [node("node1", CHINA), node("node2", AZ1), node("node3", INDIA), node("node4", AZ2)], None, [100, 0, 100, 0]),
    ("no panic when only some nodes of a topology have pods with affinity",
     pod(labels=S1), [pod(node="node1", labels=S1), pod(node="node2", aff=STAY_S1_REGION_AWAY_S2_AZ)],
     [node("node1", CHINA), node("node2", CHINA)], None, [0, 0]),
    ("affinity with pods matching the namespace selector",
     pod(ns="subteam1.team1", labels=S1, aff=AFFINITY_NS_SELECTOR),
     [pod(node="node1", ns="subteam1.team1", labels=S1), pod(node="node1", ns="subteam1.team1", labels=S1),
      pod(node="node1", ns="subteam1.team2", labels=S1), pod(node="node2", ns="subteam2.team1", labels=S1)],
     [node("node1", CHINA), node("node2", INDIA)], None, [100, 0]),
    ("affinity with pods matching both the namespace selector and the namespaces",
     pod(ns="subteam1.team1", labels=S1, aff=AFFINITY_NS_SELECTOR),
     [pod(node="node1", ns="subteam1.team1", labels=S1), pod(node="node1", ns="subteam1.team1", labels=S1),
      pod(node="node1", ns="subteam2.team2", labels=S1), pod(node="node2", ns="subteam2.team1", labels=S1)],
     [node("node1", CHINA), node("node2", INDIA)], None, [100, 0]),
    ("anti-affinity with pods matching the namespace selector",
     pod(ns="subteam1.team1", labels=S1, aff=ANTI_AFFINITY_NS_SELECTOR),
     [pod(node="node1", ns="subteam1.team1", labels=S1), pod(node="node1", ns="subteam1.team1", labels=S1),
      pod(node="node1", ns="subteam1.team2", labels=S1), pod(node="node2", ns="subteam2.team1", labels=S1)],
     [node("node1", CHINA), node("node2", INDIA)], None, [0, 100]),
    ("anti-affinity with pods matching both the namespace selector and the namespaces",
     pod(ns="subteam1.team1", labels=S1, aff=ANTI_AFFINITY_NS_SELECTOR),
     [pod(node="node1", ns="subteam1.team1", labels=S1), pod(node="node1", ns="subteam1.team1", labels=S1),
      pod(node="node1", ns="subteam2.team2", labels=S1), pod(node="node2", ns="subteam2.team1", labels=S1)],
     [node("node1", CHINA), node("node2", INDIA)], None, [0, 100]),
    ("no nodes to score skips the plugin",
     pod(labels=S2), [], [], SKIP, []),
]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "want_status", "want"), [c[1:] for c in PREFERRED],
                         ids=[c[0] for c in PREFERRED])
def test_preferred_affinity(incoming: Pod, pods: list[Pod], nodes: list[Node], want_status: Status | None,
                            want: list[int]) -> None:
    st, got = run_score(incoming, pods, nodes, InterPodAffinityArgs(hard_pod_affinity_weight=1))
    assert st == want_status
    assert got == want


IGNORE: list[tuple[str, bool, Status | None, list[int]]] = [
    ("preferred terms of existing pods are ignored when asked and the pod has none", True, SKIP, []),
    ("preferred terms of existing pods count by default", False, None, [0, 100]),
]


@pytest.mark.parametrize(("ignore", "want_status", "want"), [c[1:] for c in IGNORE], ids=[c[0] for c in IGNORE])
def test_ignore_preferred_terms_of_existing_pods(ignore: bool, want_status: Status | None, want: list[int]) -> None:
    st, got = run_score(
        pod(labels=S2),
        [pod(node="node1", labels=S1, aff=STAY_S1_REGION_AWAY_S2_AZ), pod(node="node2", labels=S2,
                                                                          aff=STAY_WITH_S2_IN_REGION)],
        [node("node1", CHINA), node("node2", INDIA)],
        InterPodAffinityArgs(hard_pod_affinity_weight=1, ignore_preferred_terms_of_existing_pods=ignore))
    assert st == want_status
    assert got == want


def test_ignored_existing_preferences_still_count_when_the_pod_has_its_own() -> None:
    """scoring.go only skips when the incoming pod has no preferred terms; otherwise the
    existing pods' preferred terms are processed as usual."""
    st, got = run_score(
        pod(labels=S2, aff=AWAY_FROM_S1_IN_AZ),
        [pod(node="node1", labels=S2, aff=STAY_WITH_S2_IN_REGION)],
        [node("node1", CHINA), node("node2", INDIA)],
        InterPodAffinityArgs(ignore_preferred_terms_of_existing_pods=True))
    assert st is None
    assert got == [100, 0]


HARD_POD_AFFINITY = affinity(req=[term("region", In("service", "S1"), namespaces=["", "subteam2.team2"],
                                       ns_selector=TEAM1)])
SERVICE_S1 = {"service": "S1"}

HARD: list[tuple[str, Pod, int, Status | None, list[int]]] = [
    ("existing pods' required affinity counts with the default weight", pod(labels=SERVICE_S1), 1, None, [100, 100, 0]),
    ("existing pods' required affinity does not count with zero weight", pod(labels=SERVICE_S1), 0, SKIP, []),
    ("existing pods' required affinity does not count for another namespace",
     pod(ns="subteam1.team2", labels=SERVICE_S1), 1, SKIP, []),
    ("existing pods' required affinity counts for a namespace the selector matches",
     pod(ns="subteam1.team1", labels=SERVICE_S1), 1, None, [100, 100, 0]),
    ("existing pods' required affinity counts for a listed namespace",
     pod(ns="subteam2.team2", labels=SERVICE_S1), 1, None, [100, 100, 0]),
]


@pytest.mark.parametrize(("incoming", "weight", "want_status", "want"), [c[1:] for c in HARD], ids=[c[0] for c in HARD])
def test_preferred_affinity_with_hard_pod_affinity_symmetric_weight(incoming: Pod, weight: int,
                                                                    want_status: Status | None, want: list[int]) -> None:
    st, got = run_score(
        incoming,
        [pod(node="node1", aff=HARD_POD_AFFINITY), pod(node="node2", aff=HARD_POD_AFFINITY)],
        [node("node1", CHINA), node("node2", INDIA), node("node3", AZ1)],
        InterPodAffinityArgs(hard_pod_affinity_weight=weight))
    assert st == want_status
    assert got == want


def test_scores_only_the_given_nodes_but_counts_pods_of_all_nodes() -> None:
    """PreScore receives the feasible nodes; the topology score still sums over every node."""
    nodes = [node("n1", {"zone": "a"}), node("n2", {"zone": "a"}), node("n3", {"zone": "b"}), node("n4", {"zone": "b"})]
    pods = [pod(node="n1", labels=S1), pod(node="n1", labels=S1), pod(node="n3", labels=S1)]
    handle = handle_for(nodes, pods)
    pl = new(None, handle)
    state = CycleState()
    feasible = [handle.snapshot.get("n2"), handle.snapshot.get("n4")]
    incoming = pod(aff=affinity(pref=[weighted(10, term("zone", In("security", "S1")))]))
    assert pl.pre_score(state, incoming, [ni for ni in feasible if ni is not None]) is None
    scores = [NodeScore(ni.name, pl.score(state, incoming, ni)) for ni in feasible if ni is not None]
    assert [s.score for s in scores] == [20, 10]
    pl.normalize_score(state, incoming, scores)
    assert [s.score for s in scores] == [100, 0]


NORMALIZE: list[tuple[str, list[int], list[int]]] = [
    ("equal scores all become zero", [7, 7, 7], [0, 0, 0]),
    ("negative scores are shifted by the minimum", [-10, 0, 10], [0, 50, 100]),
    ("the float quotient is taken before multiplying by 100", [0, 29, 100], [0, 28, 100]),
    ("thirds truncate toward zero", [0, 1, 2, 3], [0, 33, 66, 100]),
    ("a single node scores zero", [42], [0]),
]


@pytest.mark.parametrize(("raw", "want"), [c[1:] for c in NORMALIZE], ids=[c[0] for c in NORMALIZE])
def test_normalize_score(raw: list[int], want: list[int]) -> None:
    scores = [NodeScore(f"n{i}", s) for i, s in enumerate(raw)]
    normalize_scores(scores)
    assert [s.score for s in scores] == want
    assert list(normalize_score_array(np.array(raw, np.int64))) == want


ARGS: list[tuple[str, int]] = [
    ("a negative hard pod affinity weight is rejected", -1),
    ("a hard pod affinity weight above 100 is rejected", 101),
]


@pytest.mark.parametrize("weight", [c[1] for c in ARGS], ids=[c[0] for c in ARGS])
def test_invalid_args(weight: int) -> None:
    with pytest.raises(ConfigError, match=r"hardPodAffinityWeight: Invalid value: .*: not in valid range \[0, 100\]"):
        new(InterPodAffinityArgs(hard_pod_affinity_weight=weight), handle_for([], []))


def test_default_args() -> None:
    pl = new(None, handle_for([], []))
    assert isinstance(pl, InterPodAffinity)
    assert pl.args == InterPodAffinityArgs(hard_pod_affinity_weight=1, ignore_preferred_terms_of_existing_pods=False)
    with pytest.raises(ConfigError):
        new(object(), handle_for([], []))
