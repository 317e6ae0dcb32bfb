"""NodeResourcesFit scoring: upstream least_allocated_test.go, most_allocated_test.go,
requested_to_capacity_ratio_test.go and fit_test.go's TestFitScore. Every case checks the
per-node score and score_batch."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest

from kubesched.config.args import (
    DEFAULT_RESOURCES,
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFitArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from kubesched.errors import ConfigError, PluginError
from kubesched.framework import CycleState
from kubesched.objects import Node, Pod
from kubesched.plugins.helpers.gomath import go_round
from kubesched.plugins.helpers.shape_score import broken_linear
from kubesched.plugins.noderesources import Fit

from .util import cluster, empty_pod, infos, make_node_milli, node, pod, rows_of

EXT = "abc.com/xyz"
_SEQ = itertools.count()
EXTENDED_SET = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1), ResourceSpec(EXT, 1))


def shape(*points: tuple[int, int]) -> tuple[UtilizationShapePoint, ...]:
    return tuple(UtilizationShapePoint(u, s) for u, s in points)


def fit_args(strategy: str, resources: Sequence[ResourceSpec] = DEFAULT_RESOURCES,
             points: tuple[UtilizationShapePoint, ...] | None = None) -> NodeResourcesFitArgs:
    rtcr = RequestedToCapacityRatioParam(points) if points is not None else None
    return NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(strategy, tuple(resources), rtcr))


def cap(name: str, cpu: str, memory: str, **ext: str) -> Node:
    """st.MakeNode().Name(name).Capacity({cpu, memory, ...}) (cpu in cores)."""
    return node(name, {"cpu": cpu, "memory": memory, **ext})


def req(*containers: dict[str, str], node_name: str = "") -> Pod:
    """st.MakePod().Req(...).Req(...)."""
    return pod(*containers, node=node_name, name=f"p-{next(_SEQ)}")


def scores(args: NodeResourcesFitArgs, requested: Pod, nodes: Sequence[Node], existing: Sequence[Pod],
           run_pre_score: bool = True) -> list[int]:
    h = cluster(nodes, existing)
    plugin = Fit(args, h)
    nis = infos(h, [n.name for n in nodes])
    state = CycleState()
    if run_pre_score:
        assert plugin.pre_score(state, requested, nis) is None
    per_node = [plugin.score(state, requested, ni) for ni in nis]
    batch = plugin.score_batch(state, requested, h.snapshot.table, rows_of(nis)).tolist()
    assert batch == per_node
    return per_node


N4_10 = [cap("node1", "4000", "10000"), cap("node2", "4000", "10000")]
N4_6 = [cap("node1", "4000", "10000"), cap("node2", "6000", "10000")]
N10_20 = [cap("node1", "10000", "20000"), cap("node2", "10000", "20000")]
TWO_CONTAINERS = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})

LEAST_ALLOCATED_CASES = [
    ("nothing scheduled, nothing requested", empty_pod(), N4_10, [], DEFAULT_RESOURCES, [100, 100]),
    ("nothing scheduled, resources requested, differently sized nodes", req(*TWO_CONTAINERS), N4_6, [],
     DEFAULT_RESOURCES, [37, 50]),
    ("no resources requested, pods scheduled", empty_pod(), N4_10,
     [empty_pod("node1", "a"), empty_pod("node1", "b"), empty_pod("node2", "c"), empty_pod("node2", "d")],
     DEFAULT_RESOURCES, [100, 100]),
    ("no resources requested, pods scheduled with resources", empty_pod(), N10_20,
     [req({"cpu": "3000", "memory": "0"}, node_name="node1"), req({"cpu": "3000", "memory": "0"}, node_name="node1"),
      req({"cpu": "3000", "memory": "0"}, node_name="node2"),
      req({"cpu": "3000", "memory": "5000"}, node_name="node2")],
     DEFAULT_RESOURCES, [70, 57]),
    ("resources requested, pods scheduled with resources", req(*TWO_CONTAINERS), N10_20,
     [req({"cpu": "3000", "memory": "0"}, node_name="node1"), req({"cpu": "3000", "memory": "5000"}, node_name="node2")],
     DEFAULT_RESOURCES, [57, 45]),
    ("resources requested, pods scheduled with resources, differently sized nodes", req(*TWO_CONTAINERS),
     [cap("node1", "10000", "20000"), cap("node2", "10000", "50000")],
     [req({"cpu": "3000", "memory": "0"}, node_name="node1"), req({"cpu": "3000", "memory": "5000"}, node_name="node2")],
     DEFAULT_RESOURCES, [57, 60]),
    ("requested resources exceed node capacity", req({"cpu": "3000", "memory": "0"}), N4_10,
     [req({"cpu": "3000", "memory": "0"}, node_name="node1"), req({"cpu": "3000", "memory": "5000"}, node_name="node2")],
     DEFAULT_RESOURCES, [50, 25]),
    ("zero node resources, pods scheduled with resources", empty_pod(),
     [node("node1", {}), node("node2", {})],
     [req({"cpu": "3000", "memory": "0"}, node_name="node1"), req({"cpu": "3000", "memory": "5000"}, node_name="node2")],
     DEFAULT_RESOURCES, [0, 0]),
    ("nothing scheduled, resources requested with different weight on CPU and memory, differently sized nodes",
     req(*TWO_CONTAINERS), N4_6, [], (ResourceSpec("memory", 2), ResourceSpec("cpu", 1)), [41, 50]),
    ("bypass extended resource if the pod does not request", req(*TWO_CONTAINERS),
     [cap("node1", "6000", "10000"), node("node2", {"cpu": "6000", "memory": "10000", EXT: "4"})], [],
     EXTENDED_SET, [50, 50]),
    ("honor extended resource if the pod requests", req({"cpu": "3000", "memory": "5000", EXT: "2"}),
     [node("node1", {"cpu": "6000", "memory": "10000", EXT: "4"}),
      node("node2", {"cpu": "6000", "memory": "10000", EXT: "10"})], [], EXTENDED_SET, [50, 60]),
    ("if the node doesn't have a resource", req({"cpu": "3000", "memory": "4000"}),
     [cap("node1", "6000", "10000"), node("node2", {"cpu": "6000", "memory": "10000", EXT: "4"})], [],
     (ResourceSpec(EXT, 2), ResourceSpec("cpu", 1), ResourceSpec("memory", 1)), [55, 55]),
]


@pytest.mark.parametrize(("requested", "nodes", "existing", "resources", "want"),
                         [c[1:] for c in LEAST_ALLOCATED_CASES], ids=[c[0] for c in LEAST_ALLOCATED_CASES])
def test_least_allocated(requested: Pod, nodes: list[Node], existing: list[Pod], resources: tuple[ResourceSpec, ...],
                         want: list[int]) -> None:
    assert scores(fit_args(LEAST_ALLOCATED, resources), requested, nodes, existing) == want


MOST_ALLOCATED_CASES = [
    ("nothing scheduled, nothing requested", empty_pod(), N4_10, [], DEFAULT_RESOURCES, [0, 0]),
    ("nothing scheduled, resources requested, differently sized nodes", req(*TWO_CONTAINERS), N4_6, [],
     DEFAULT_RESOURCES, [62, 50]),
    ("no resources requested, pods scheduled with resources", empty_pod(), N10_20,
     [req({"cpu": "3000", "memory": "0"}, node_name="node1"), req({"cpu": "3000", "memory": "0"}, node_name="node1"),
      req({"cpu": "3000", "memory": "0"}, node_name="node2"),
      req({"cpu": "3000", "memory": "5000"}, node_name="node2")],
     DEFAULT_RESOURCES, [30, 42]),
    ("resources requested, pods scheduled with resources", req(*TWO_CONTAINERS), N10_20,
     [req({"cpu": "3000", "memory": "0"}, node_name="node1"), req({"cpu": "3000", "memory": "5000"}, node_name="node2")],
     DEFAULT_RESOURCES, [42, 55]),
    ("resources requested equal node capacity",
     req({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
     [cap("node1", "5000", "10000"), cap("node2", "10000", "9000")], [], DEFAULT_RESOURCES, [95, 75]),
    ("nothing scheduled, resources requested with different weight on CPU and memory, differently sized nodes",
     req(*TWO_CONTAINERS), N4_6, [], (ResourceSpec("memory", 2), ResourceSpec("cpu", 1)), [58, 50]),
    ("no resources requested, pods scheduled, nonzero request for resource", pod(),
     [cap("node1", "250m", "1000Mi"), cap("node2", "250m", "1000Mi")],
     [pod(node="node1", name="a"), pod(node="node1", name="b")], DEFAULT_RESOURCES, [80, 30]),
    ("bypass extended resource if the pod does not request", req(*TWO_CONTAINERS),
     [cap("node1", "6000", "10000"), node("node2", {"cpu": "6000", "memory": "10000", EXT: "4"})], [],
     EXTENDED_SET, [50, 50]),
    ("honor extended resource if the pod request", req({"cpu": "3000", "memory": "5000", EXT: "2"}),
     [node("node1", {"cpu": "6000", "memory": "10000", EXT: "4"}),
      node("node2", {"cpu": "6000", "memory": "10000", EXT: "10"})], [], EXTENDED_SET, [50, 40]),
    ("if the node doesn't have a resource", req({"cpu": "3000", "memory": "4000"}),
     [cap("node1", "6000", "10000"), node("node2", {"cpu": "6000", "memory": "10000", EXT: "4"})], [],
     (ResourceSpec(EXT, 2), ResourceSpec("cpu", 1), ResourceSpec("memory", 1)), [45, 45]),
]


@pytest.mark.parametrize(("requested", "nodes", "existing", "resources", "want"),
                         [c[1:] for c in MOST_ALLOCATED_CASES], ids=[c[0] for c in MOST_ALLOCATED_CASES])
def test_most_allocated(requested: Pod, nodes: list[Node], existing: list[Pod], resources: tuple[ResourceSpec, ...],
                        want: list[int]) -> None:
    assert scores(fit_args(MOST_ALLOCATED, resources), requested, nodes, existing) == want


@pytest.mark.parametrize("strategy", [LEAST_ALLOCATED, MOST_ALLOCATED])
@pytest.mark.parametrize(("resources", "field"), [
    ((ResourceSpec("memory", -1), ResourceSpec("cpu", 1)), "scoringStrategy.resources[0].weight"),
    ((ResourceSpec("memory", 1), ResourceSpec("cpu", 0)), "scoringStrategy.resources[1].weight"),
    ((ResourceSpec("memory", 1), ResourceSpec("cpu", 101)), "scoringStrategy.resources[1].weight"),
], ids=["resource with negative weight", "resource with zero weight", "resource weight larger than MaxNodeScore"])
def test_invalid_resource_weight_is_rejected_at_construction(strategy: str, resources: tuple[ResourceSpec, ...],
                                                              field: str) -> None:
    with pytest.raises(ConfigError) as e:
        Fit(fit_args(strategy, resources))
    assert e.value.field == field


@pytest.mark.parametrize("strategy", [LEAST_ALLOCATED, MOST_ALLOCATED])
def test_resources_not_set_is_a_score_error(strategy: str) -> None:
    h = cluster(N4_6)
    plugin = Fit(fit_args(strategy, ()), h)
    state = CycleState()
    p = req(*TWO_CONTAINERS)
    plugin.pre_score(state, p, infos(h, ["node1"]))
    with pytest.raises(PluginError, match="resources not found"):
        plugin.score(state, p, infos(h, ["node1"])[0])
    with pytest.raises(PluginError, match="resources not found"):
        plugin.score_batch(state, p, h.snapshot.table, rows_of(infos(h, ["node1"])))


# ------------------------------------------------------------------ RequestedToCapacityRatio
LEAST_SHAPE = shape((0, 10), (100, 0))
MOST_SHAPE = shape((0, 0), (100, 10))

RTCR_CASES = [
    ("nothing scheduled, nothing requested (default - least requested nodes have priority)", empty_pod(), N4_10,
     [empty_pod("node1", "a"), empty_pod("node1", "b")], [100, 100]),
    ("nothing scheduled, resources requested, differently sized nodes (default - least requested nodes have "
     "priority)", req(*TWO_CONTAINERS), N4_6, [empty_pod("node1", "a"), empty_pod("node1", "b")], [38, 50]),
    ("no resources requested, pods scheduled with resources (default - least requested nodes have priority)",
     empty_pod(), N4_6,
     [req({"cpu": "3000", "memory": "5000"}, node_name="node1"), req({"cpu": "3000", "memory": "5000"},
                                                                     node_name="node2")],
     [38, 50]),
]


@pytest.mark.parametrize(("requested", "nodes", "existing", "want"), [c[1:] for c in RTCR_CASES],
                         ids=[c[0] for c in RTCR_CASES])
def test_requested_to_capacity_ratio(requested: Pod, nodes: list[Node], existing: list[Pod], want: list[int]) -> None:
    assert scores(fit_args(REQUESTED_TO_CAPACITY_RATIO, DEFAULT_RESOURCES, LEAST_SHAPE), requested, nodes,
                  existing, run_pre_score=False) == want


BROKEN_LINEAR = [
    ("increasing shape inside [10, 90]", ((10, 1), (90, 9)),
     [(-10, 1), (0, 1), (9, 1), (10, 1), (15, 1), (19, 1), (20, 2), (89, 8), (90, 9), (99, 9), (100, 9), (110, 9)]),
    ("up then down truncates toward zero on the falling slope", ((0, 2), (40, 10), (100, 0)),
     [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)]),
    ("flat shape", ((0, 2), (40, 2), (100, 2)),
     [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)]),
    ("a falling slope with a remainder truncates toward zero, not down", ((0, 100), (30, 0)),
     [(1, 97), (10, 67), (29, 4)]),
]


@pytest.mark.parametrize(("points", "assertions"), [c[1:] for c in BROKEN_LINEAR], ids=[c[0] for c in BROKEN_LINEAR])
def test_broken_linear_function(points: tuple[tuple[int, int], ...], assertions: list[tuple[int, int]]) -> None:
    for p, want in assertions:
        assert broken_linear(points, p) == want, p


def gpu_node(name: str, ext: dict[str, int]) -> Node:
    return make_node_milli(name, 4000, 10000 * 1024 * 1024, ext)


FOO = "intel.com/foo"
BAR = "intel.com/bar"
SINGLE_NODES = [gpu_node("node1", {FOO: 8}), gpu_node("node2", {FOO: 4})]
MULTI_NODES = [gpu_node("node1", {FOO: 8, BAR: 4}), gpu_node("node2", {FOO: 4, BAR: 8})]

BIN_PACKING = [
    ("single extended resource: nothing scheduled, nothing requested", (ResourceSpec(FOO, 1),), empty_pod(),
     SINGLE_NODES, [], [0, 0]),
    ("single extended resource: resources requested, pods scheduled with less resources", (ResourceSpec(FOO, 1),),
     req({FOO: "2"}), SINGLE_NODES, [empty_pod("node1", "a")], [2, 5]),
    ("single extended resource: resources requested, pods scheduled with resources, on node with existing pod "
     "running", (ResourceSpec(FOO, 1),), req({FOO: "2"}), SINGLE_NODES, [req({FOO: "2"}, node_name="node2")], [2, 10]),
    ("single extended resource: resources requested, pods scheduled with more resources", (ResourceSpec(FOO, 1),),
     req({FOO: "4"}), SINGLE_NODES, [empty_pod("node1", "a")], [5, 10]),
    ("multiple extended resources: nothing scheduled, nothing requested", (ResourceSpec(FOO, 3), ResourceSpec(BAR, 5)),
     empty_pod(), MULTI_NODES, [], [0, 0]),
    ("multiple extended resources: resources requested, pods scheduled with less resources",
     (ResourceSpec(FOO, 3), ResourceSpec(BAR, 5)), req({FOO: "2", BAR: "2"}), MULTI_NODES,
     [empty_pod("node1", "a")], [4, 3]),
    ("multiple extended resources: resources requested, pods scheduled with resources, on node with existing pod "
     "running", (ResourceSpec(FOO, 3), ResourceSpec(BAR, 5)), req({FOO: "2", BAR: "2"}), MULTI_NODES,
     [req({FOO: "4", BAR: "2"}, node_name="node2")], [4, 7]),
    ("multiple extended resources: resources requested, pods scheduled with more resources",
     (ResourceSpec(FOO, 3), ResourceSpec(BAR, 5)), req({FOO: "4", BAR: "2"}), MULTI_NODES,
     [empty_pod("node1", "a")], [5, 5]),
]


@pytest.mark.parametrize(("resources", "requested", "nodes", "existing", "want"), [c[1:] for c in BIN_PACKING],
                         ids=[c[0] for c in BIN_PACKING])
def test_resource_bin_packing(resources: tuple[ResourceSpec, ...], requested: Pod, nodes: list[Node],
                              existing: list[Pod], want: list[int]) -> None:
    args = fit_args(REQUESTED_TO_CAPACITY_RATIO, resources, shape((0, 0), (100, 1)))
    assert scores(args, requested, nodes, existing) == want


# ------------------------------------------------------------------ fit_test.go TestFitScore
FIT_SCORE = [
    ("test case for ScoringStrategy RequestedToCapacityRatio case1",
     fit_args(REQUESTED_TO_CAPACITY_RATIO, DEFAULT_RESOURCES, LEAST_SHAPE), [10, 32]),
    ("test case for ScoringStrategy RequestedToCapacityRatio case2",
     fit_args(REQUESTED_TO_CAPACITY_RATIO, DEFAULT_RESOURCES, MOST_SHAPE), [95, 68]),
    ("test case for ScoringStrategy MostAllocated", fit_args(MOST_ALLOCATED), [67, 36]),
    ("test case for ScoringStrategy LeastAllocated", fit_args(LEAST_ALLOCATED), [32, 63]),
]


@pytest.mark.parametrize("run_pre_score", [True, False], ids=["with PreScore", "if PreScore is not called"])
@pytest.mark.parametrize(("args", "want"), [c[1:] for c in FIT_SCORE], ids=[c[0] for c in FIT_SCORE])
def test_fit_score(args: NodeResourcesFitArgs, want: list[int], run_pre_score: bool) -> None:
    rtcr = args.scoring_strategy.type == REQUESTED_TO_CAPACITY_RATIO
    requested = req({"cpu": "3000", "memory": "5000"}) if rtcr else req({"cpu": "1000", "memory": "2000"})
    existing = [req({"cpu": "2000", "memory": "4000"}, node_name="node1"),
                req({"cpu": "1000", "memory": "2000"}, node_name="node2")]
    assert scores(args, requested, N4_6, existing, run_pre_score) == want


# ------------------------------------------------------------------ kubesched cases
def test_fit_scoring_uses_non_zero_defaults_on_both_sides() -> None:
    """Node side NonZeroRequested (100m / 200Mi per container lacking the key), pod side
    the same defaults; explicit zeros stay zero."""
    nodes = [cap("node1", "1", "1000Mi")]
    existing = [pod(node="node1", name="a"), pod({"cpu": "0", "memory": "0"}, node="node1", name="b")]
    # cpu: (100 + 0 + 100) / 1000 used -> least 80; memory: (200 + 0 + 200) / 1000 -> 60
    assert scores(fit_args(LEAST_ALLOCATED), pod(), nodes, existing) == [70]


def test_rtcr_rounds_half_away_from_zero() -> None:
    # cpu f = 5 on the 0..10 scale -> 50, memory f = 10 -> 100; weights 1 and 2: 250 / 3 = 83.33 -> 83;
    # weights 1 and 1: 75.
    assert go_round(2.5) == 3 and go_round(-2.5) == -3 and go_round(0.49999999999999994) == 0
    nodes = [cap("node1", "10", "100")]
    p = req({"cpu": "5", "memory": "100"})
    args = fit_args(REQUESTED_TO_CAPACITY_RATIO, (ResourceSpec("cpu", 1), ResourceSpec("memory", 1)), MOST_SHAPE)
    assert scores(args, p, nodes, []) == [75]
    args = fit_args(REQUESTED_TO_CAPACITY_RATIO, (ResourceSpec("cpu", 1), ResourceSpec("memory", 2)), MOST_SHAPE)
    assert scores(args, p, nodes, []) == [83]
    # f(cpu) = 50, f(memory) = 75, weights 1 and 1: 62.5 rounds up (banker's rounding would give 62).
    p2 = req({"cpu": "5", "memory": "75"})
    assert scores(fit_args(REQUESTED_TO_CAPACITY_RATIO, DEFAULT_RESOURCES, MOST_SHAPE), p2, nodes, []) == [63]


@pytest.mark.parametrize(("args", "field"), [
    (NodeResourcesFitArgs(ignored_resource_groups=("example.com/foo",)), "ignoredResourceGroups[0]"),
    (fit_args("MostRequested"), "scoringStrategy.type"),
    (fit_args(REQUESTED_TO_CAPACITY_RATIO), "scoringStrategy.shape"),
    (fit_args(REQUESTED_TO_CAPACITY_RATIO, DEFAULT_RESOURCES, ()), "scoringStrategy.shape"),
    (fit_args(REQUESTED_TO_CAPACITY_RATIO, DEFAULT_RESOURCES, shape((50, 1), (50, 2))),
     "scoringStrategy.shape[1].utilization"),
    (fit_args(REQUESTED_TO_CAPACITY_RATIO, DEFAULT_RESOURCES, shape((0, 1), (101, 2))),
     "scoringStrategy.shape[1].utilization"),
    (fit_args(REQUESTED_TO_CAPACITY_RATIO, DEFAULT_RESOURCES, shape((0, 11))), "scoringStrategy.shape[0].score"),
], ids=["a resource group containing a slash", "an unknown strategy type", "ratio strategy without a shape",
        "ratio strategy with an empty shape", "utilizations not increasing", "utilization above 100",
        "shape score above 10"])
def test_invalid_args_are_rejected(args: NodeResourcesFitArgs, field: str) -> None:
    with pytest.raises(ConfigError) as e:
        Fit(args)
    assert e.value.field == field
