"""The legacy resource score plugins with their v1.21 formulas: upstream v1.21
least_allocated_test.go (TestNodeResourcesLeastAllocated), most_allocated_test.go
(TestNodeResourcesMostAllocated) and requested_to_capacity_ratio_test.go
(TestRequestedToCapacityRatio, TestBrokenLinearFunction, TestResourceBinPacking*), the
v1.21-vs-later differences, and batch equivalence.

Upstream's "no resources" pods have no container at all; API validation needs one, so they
get a container requesting cpu 0 and memory 0, which the non-zero defaults keep at 0.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from builders import make_node, make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.config.args import (
    NodeResourcesLeastAllocatedArgs,
    NodeResourcesMostAllocatedArgs,
    RequestedToCapacityRatioArgs,
    ResourceSpec,
    UtilizationShapePoint,
)
from kubesched.errors import ConfigError
from kubesched.framework import CycleState
from kubesched.objects import Node, Pod
from kubesched.plugins import noderesources_legacy as nrl
from kubesched.plugins.helpers.shape_score import broken_linear
from kubesched.plugins.noderesources_legacy.resource_allocation import pod_resource_request

_seq = itertools.count()
CPU_MEM = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
EXT = "abc.com/xyz"


def node(name: str, milli_cpu: int, memory: int, ext: dict[str, int] | None = None) -> Node:
    cap: dict[str, Any] = {"cpu": f"{milli_cpu}m", "memory": str(memory), "pods": 110, **(ext or {})}
    return make_node().name(name).capacity_map(cap).obj()


def pod(on: str = "", *containers: dict[str, Any], overhead: dict[str, Any] | None = None,
        init: list[dict[str, Any]] | None = None) -> Pod:
    b = make_pod().name(f"p{next(_seq)}")
    if on:
        b = b.node(on)
    for c in containers or ({"cpu": "0", "memory": "0"},):
        b = b.container(requests=c)
    for c in init or ():
        b = b.init_container(requests=c)
    if overhead:
        b = b.overhead(**overhead)
    return b.obj()


def no_resources(on: str = "") -> Pod:
    return pod(on)


def cpu_only(on: str = "") -> Pod:
    return pod(on, {"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"})


def cpu_and_memory(on: str = "", ext: dict[str, str] | None = None) -> Pod:
    return pod(on, {"cpu": "1000m", "memory": "2000", **(ext or {})}, {"cpu": "2000m", "memory": "3000"})


def big_cpu_and_memory(on: str = "") -> Pod:
    return pod(on, {"cpu": "2000m", "memory": "4000"}, {"cpu": "3000m", "memory": "5000"})


Factory = Callable[[object, Any], Any]


def run(factory: Factory, args: object, incoming: Pod, nodes: list[Node], pods: list[Pod]) -> list[int]:
    handle = FrameworkHandle.for_nodes(nodes, pods)
    pl = factory(args, handle)
    state = CycleState()
    infos = [handle.snapshot.get(n.meta.name) for n in nodes]
    got = [pl.score(state, incoming, ni) for ni in infos if ni is not None]
    rows = np.array([ni.index for ni in infos if ni is not None], np.int64)
    assert pl.score_batch(state, incoming, handle.snapshot.table, rows).tolist() == got
    return got


# ---------------------------------------------------------------- LeastAllocated
def least(*resources: ResourceSpec) -> NodeResourcesLeastAllocatedArgs:
    return NodeResourcesLeastAllocatedArgs(resources=tuple(resources))


LEAST_CASES = [
    pytest.param(no_resources(), [node("machine1", 4000, 10000), node("machine2", 4000, 10000)], [], least(*CPU_MEM),
                 [100, 100], id="least: nothing scheduled, nothing requested"),
    pytest.param(cpu_and_memory(), [node("machine1", 4000, 10000), node("machine2", 6000, 10000)], [],
                 least(*CPU_MEM), [37, 50], id="least: nothing scheduled, resources requested, differently sized nodes"),
    pytest.param(cpu_and_memory(), [node("machine1", 4000, 10000), node("machine2", 6000, 10000)], [], least(),
                 [0, 0], id="least: no resources configured scores 0"),
    pytest.param(no_resources(), [node("machine1", 4000, 10000), node("machine2", 4000, 10000)],
                 [no_resources("machine1"), no_resources("machine1"), no_resources("machine2"),
                  no_resources("machine2")],
                 least(*CPU_MEM), [100, 100], id="least: no resources requested, pods without requests scheduled"),
    pytest.param(no_resources(), [node("machine1", 10000, 20000), node("machine2", 10000, 20000)],
                 [cpu_only("machine1"), cpu_only("machine1"), cpu_only("machine2"), cpu_and_memory("machine2")],
                 least(*CPU_MEM), [70, 57], id="least: no resources requested, pods scheduled with resources"),
    pytest.param(cpu_and_memory(), [node("machine1", 10000, 20000), node("machine2", 10000, 20000)],
                 [cpu_only("machine1"), cpu_and_memory("machine2")],
                 least(*CPU_MEM), [57, 45], id="least: resources requested, pods scheduled with resources"),
    pytest.param(cpu_and_memory(), [node("machine1", 10000, 20000), node("machine2", 10000, 50000)],
                 [cpu_only("machine1"), cpu_and_memory("machine2")],
                 least(*CPU_MEM), [57, 60], id="least: resources requested, pods scheduled, differently sized nodes"),
    pytest.param(cpu_only(), [node("machine1", 4000, 10000), node("machine2", 4000, 10000)],
                 [cpu_only("machine1"), cpu_and_memory("machine2")],
                 least(*CPU_MEM), [50, 25], id="least: requested resources exceeding the node score 0"),
    pytest.param(no_resources(), [node("machine1", 0, 0), node("machine2", 0, 0)],
                 [cpu_only("machine1"), cpu_and_memory("machine2")],
                 least(*CPU_MEM), [0, 0], id="least: nodes without resources score 0"),
    pytest.param(cpu_and_memory(), [node("machine1", 4000, 10000), node("machine2", 6000, 10000)], [],
                 least(ResourceSpec("memory", 2), ResourceSpec("cpu", 1)), [41, 50],
                 id="least: different weights on cpu and memory"),
    # kubernetes#103169 (v1.22) skips an extended resource the pod does not request (50, 50);
    # v1.21 scores it: machine1 has none (0, weight still counted), machine2 4 free (100).
    pytest.param(cpu_and_memory(), [node("machine1", 6000, 10000), node("machine2", 6000, 10000, {EXT: 4})], [],
                 least(*CPU_MEM, ResourceSpec(EXT, 1)), [33, 66],
                 id="least v1.21: an extended resource the pod does not request still counts"),
    pytest.param(cpu_and_memory(ext={EXT: "2"}),
                 [node("machine1", 6000, 10000, {EXT: 4}), node("machine2", 6000, 10000, {EXT: 10})], [],
                 least(*CPU_MEM, ResourceSpec(EXT, 1)), [50, 60],
                 id="least: an extended resource the pod requests counts"),
]


@pytest.mark.parametrize(("incoming", "nodes", "pods", "args", "expected"), LEAST_CASES)
def test_least_allocated(incoming: Pod, nodes: list[Node], pods: list[Pod], args: NodeResourcesLeastAllocatedArgs,
                         expected: list[int]) -> None:
    assert run(nrl.new_least_allocated, args, incoming, nodes, pods) == expected


# ---------------------------------------------------------------- MostAllocated
def most(*resources: ResourceSpec) -> NodeResourcesMostAllocatedArgs:
    return NodeResourcesMostAllocatedArgs(resources=tuple(resources))


MOST_CASES = [
    pytest.param(no_resources(), [node("machine1", 4000, 10000), node("machine2", 4000, 10000)], [], most(*CPU_MEM),
                 [0, 0], id="most: nothing scheduled, nothing requested"),
    pytest.param(cpu_and_memory(), [node("machine1", 4000, 10000), node("machine2", 6000, 10000)], [],
                 most(*CPU_MEM), [62, 50], id="most: nothing scheduled, resources requested, differently sized nodes"),
    pytest.param(no_resources(), [node("machine1", 10000, 20000), node("machine2", 10000, 20000)],
                 [cpu_only("machine1"), cpu_only("machine1"), cpu_only("machine2"), cpu_and_memory("machine2")],
                 most(*CPU_MEM), [30, 42], id="most: no resources requested, pods scheduled with resources"),
    pytest.param(cpu_and_memory(), [node("machine1", 10000, 20000), node("machine2", 10000, 20000)],
                 [cpu_only("machine1"), cpu_and_memory("machine2")],
                 most(*CPU_MEM), [42, 55], id="most: resources requested, pods scheduled with resources"),
    # kubernetes#102925 (v1.22) caps the usage at the allocatable (95, 75); v1.21 scores 0.
    pytest.param(big_cpu_and_memory(), [node("machine1", 4000, 10000), node("machine2", 10000, 8000)], [],
                 most(*CPU_MEM), [45, 25], id="most v1.21: a resource requested beyond the node scores 0"),
    pytest.param(cpu_and_memory(), [node("machine1", 4000, 10000), node("machine2", 6000, 10000)], [],
                 most(ResourceSpec("memory", 2), ResourceSpec("cpu", 1)), [58, 50],
                 id="most: different weights on cpu and memory"),
    pytest.param(cpu_and_memory(), [node("machine1", 6000, 10000), node("machine2", 6000, 10000, {EXT: 4})], [],
                 most(*CPU_MEM, ResourceSpec(EXT, 1)), [33, 33],
                 id="most v1.21: an extended resource the pod does not request counts as unused"),
    pytest.param(no_resources(), [node("machine1", 0, 0)], [cpu_only("machine1")], most(*CPU_MEM), [0],
                 id="most: a node without resources scores 0"),
]


@pytest.mark.parametrize(("incoming", "nodes", "pods", "args", "expected"), MOST_CASES)
def test_most_allocated(incoming: Pod, nodes: list[Node], pods: list[Pod], args: NodeResourcesMostAllocatedArgs,
                        expected: list[int]) -> None:
    assert run(nrl.new_most_allocated, args, incoming, nodes, pods) == expected


@pytest.mark.parametrize(
    ("factory", "args", "message"),
    [
        (nrl.new_least_allocated, least(ResourceSpec("memory", -1), ResourceSpec("cpu", 1)),
         "resources[0].weight: Invalid value: -1: resource weight of memory not in valid range (0, 100]"),
        (nrl.new_least_allocated, least(ResourceSpec("memory", 1), ResourceSpec("cpu", 0)),
         "resources[1].weight: Invalid value: 0: resource weight of cpu not in valid range (0, 100]"),
        (nrl.new_least_allocated, least(ResourceSpec("memory", 120)),
         "resources[0].weight: Invalid value: 120: resource weight of memory not in valid range (0, 100]"),
        (nrl.new_most_allocated, most(ResourceSpec("memory", -1), ResourceSpec("cpu", 1)),
         "resources[0].weight: Invalid value: -1: resource weight of memory not in valid range (0, 100]"),
        (nrl.new_most_allocated, most(ResourceSpec("memory", 1), ResourceSpec("cpu", 0)),
         "resources[1].weight: Invalid value: 0: resource weight of cpu not in valid range (0, 100]"),
        (nrl.new_most_allocated, most(ResourceSpec("memory", 120)),
         "resources[0].weight: Invalid value: 120: resource weight of memory not in valid range (0, 100]"),
        (nrl.new_requested_to_capacity_ratio, None,
         "shape: Required value: at least one point must be specified"),
        (nrl.new_requested_to_capacity_ratio,
         RequestedToCapacityRatioArgs((UtilizationShapePoint(50, 1), UtilizationShapePoint(50, 2)), CPU_MEM),
         "shape[1].utilization: Invalid value: 50: utilization values must be sorted in increasing order"),
        (nrl.new_requested_to_capacity_ratio,
         RequestedToCapacityRatioArgs((UtilizationShapePoint(0, 11), UtilizationShapePoint(101, 0)), CPU_MEM),
         "[shape[0].score: Invalid value: 11: not in valid range [0, 10], "
         "shape[1].utilization: Invalid value: 101: not in valid range [0, 100]]"),
        (nrl.new_requested_to_capacity_ratio,
         RequestedToCapacityRatioArgs((UtilizationShapePoint(0, 0),), (ResourceSpec("cpu", 0),)),
         "resources[0].weight: Invalid value: 0: resource weight of cpu not in valid range [1, inf)"),
        (nrl.new_least_allocated, most(*CPU_MEM), "want args to be of type NodeResourcesLeastAllocatedArgs"),
    ],
    ids=[
        "least: a negative weight is rejected",
        "least: a zero weight is rejected",
        "least: a weight above 100 is rejected",
        "most: a negative weight is rejected",
        "most: a zero weight is rejected",
        "most: a weight above 100 is rejected",
        "requested to capacity ratio needs args with a shape",
        "requested to capacity ratio needs strictly increasing utilizations",
        "requested to capacity ratio bounds scores and utilizations",
        "requested to capacity ratio weights must be at least 1",
        "args of the wrong kind are rejected",
    ],
)
def test_invalid_args(factory: Factory, args: object, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        factory(args, FrameworkHandle.for_nodes([]))
    assert str(e.value).startswith(message)


def test_default_args_are_cpu_and_memory_with_weight_one() -> None:
    nodes = [node("machine1", 4000, 10000), node("machine2", 6000, 10000)]
    assert run(nrl.new_least_allocated, None, cpu_and_memory(), nodes, []) == [37, 50]
    assert run(nrl.new_most_allocated, None, cpu_and_memory(), nodes, []) == [62, 50]


# ---------------------------------------------------------------- RequestedToCapacityRatio
def rtcr(shape: list[tuple[int, int]], *resources: ResourceSpec) -> RequestedToCapacityRatioArgs:
    return RequestedToCapacityRatioArgs(tuple(UtilizationShapePoint(u, s) for u, s in shape), tuple(resources))


LEAST_SHAPE = rtcr([(0, 10), (100, 0)], ResourceSpec("memory", 1), ResourceSpec("cpu", 1))
FOO, BAR = "intel.com/foo", "intel.com/bar"
GI = 10000 * 1024 * 1024


def ext_pod(on: str = "", **res: str) -> Pod:
    return pod(on, {k.replace("_", "."): v for k, v in res.items()} if res else {})


def ext_node(name: str, foo: int | None = None, bar: int | None = None) -> Node:
    cap: dict[str, Any] = {"cpu": "4", "memory": str(GI), "pods": 110}
    if foo is not None:
        cap[FOO] = foo
    if bar is not None:
        cap[BAR] = bar
    return make_node().name(name).capacity_map(cap).obj()


def foo_bar(on: str = "", foo: str = "", bar: str = "") -> Pod:
    req = {}
    if foo:
        req[FOO] = foo
    if bar:
        req[BAR] = bar
    return pod(on, req) if req else pod(on, {"cpu": "0", "memory": "0"})


SINGLE = rtcr([(0, 0), (100, 1)], ResourceSpec(FOO, 1))
MULTI = rtcr([(0, 0), (100, 1)], ResourceSpec(FOO, 3), ResourceSpec(BAR, 5))
SINGLE_NODES = [ext_node("machine1", foo=8), ext_node("machine2", foo=4)]
MULTI_NODES = [ext_node("machine1", foo=8, bar=4), ext_node("machine2", foo=4, bar=8)]

RTCR_CASES = [
    pytest.param(pod("", {"cpu": "0", "memory": "0"}),
                 [node("node1", 4000, 10000), node("node2", 4000, 10000)],
                 [pod("node1", {"cpu": "0", "memory": "0"}), pod("node2", {"cpu": "0", "memory": "0"})],
                 LEAST_SHAPE, [100, 100], id="ratio: nothing scheduled, nothing requested, least requested preferred"),
    pytest.param(pod("", {"cpu": "3000m", "memory": "5000"}),
                 [node("node1", 4000, 10000), node("node2", 6000, 10000)],
                 [pod("node1", {"cpu": "0", "memory": "0"}), pod("node2", {"cpu": "0", "memory": "0"})],
                 LEAST_SHAPE, [38, 50], id="ratio: resources requested, differently sized nodes, rounded half up"),
    pytest.param(pod("", {"cpu": "0", "memory": "0"}),
                 [node("node1", 4000, 10000), node("node2", 6000, 10000)],
                 [pod("node1", {"cpu": "3000m", "memory": "5000"}), pod("node2", {"cpu": "3000m", "memory": "5000"})],
                 LEAST_SHAPE, [38, 50], id="ratio: nothing requested, pods scheduled with resources"),
    pytest.param(foo_bar(), SINGLE_NODES, [], SINGLE, [0, 0], id="bin packing one extended resource: nothing requested"),
    pytest.param(foo_bar(foo="2"), SINGLE_NODES, [foo_bar()], SINGLE, [2, 5],
                 id="bin packing one extended resource: the fuller node scores higher"),
    pytest.param(foo_bar(foo="2"), SINGLE_NODES, [foo_bar("machine2", foo="2")], SINGLE, [2, 10],
                 id="bin packing one extended resource: a node the pod fills scores the maximum"),
    pytest.param(foo_bar(foo="4"), SINGLE_NODES, [foo_bar()], SINGLE, [5, 10],
                 id="bin packing one extended resource: more requested"),
    pytest.param(foo_bar(), MULTI_NODES, [], MULTI, [0, 0], id="bin packing two extended resources: nothing requested"),
    pytest.param(foo_bar(foo="2", bar="2"), MULTI_NODES, [foo_bar()], MULTI, [4, 3],
                 id="bin packing two extended resources: weighted mean of the resource scores"),
    pytest.param(foo_bar(foo="2", bar="2"), MULTI_NODES, [foo_bar("machine2", foo="2", bar="2")], MULTI, [4, 7],
                 id="bin packing two extended resources: on a node with an existing pod"),
    pytest.param(foo_bar(foo="4", bar="2"), MULTI_NODES, [foo_bar()], MULTI, [5, 5],
                 id="bin packing two extended resources: more requested"),
    # ---- v1.21 specifics
    pytest.param(foo_bar(foo="1"), [ext_node("n", foo=3)], [], rtcr([(0, 0), (100, 10)], ResourceSpec(FOO, 1)),
                 [34], id="ratio v1.21: utilization is 100 minus the free share, 1 of 3 is 34 (v1.30: 33)"),
    pytest.param(pod("", {"cpu": "1000m", "memory": "0"}), [node("n", 4000, 10000)], [],
                 rtcr([(0, 0), (100, 10)], ResourceSpec("cpu", 1), ResourceSpec(FOO, 1)), [63],
                 id="ratio v1.21: a configured resource the node lacks scores f(100) and counts"),
    pytest.param(foo_bar(foo="5"), [ext_node("n", foo=4)], [], rtcr([(0, 0), (50, 10), (100, 2)], ResourceSpec(FOO, 1)),
                 [20], id="ratio: an over-committed resource is at utilization 100"),
]


@pytest.mark.parametrize(("incoming", "nodes", "pods", "args", "expected"), RTCR_CASES)
def test_requested_to_capacity_ratio(incoming: Pod, nodes: list[Node], pods: list[Pod],
                                     args: RequestedToCapacityRatioArgs, expected: list[int]) -> None:
    assert run(nrl.new_requested_to_capacity_ratio, args, incoming, nodes, pods) == expected


@pytest.mark.parametrize(
    ("points", "assertions"),
    [
        ([(10, 1), (90, 9)], [(-10, 1), (0, 1), (9, 1), (10, 1), (15, 1), (19, 1), (20, 2), (89, 8), (90, 9), (99, 9),
                              (100, 9), (110, 9)]),
        ([(0, 2), (40, 10), (100, 0)], [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)]),
        ([(0, 2), (40, 2), (100, 2)], [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)]),
        ([(0, 10), (100, 0)], [(1, 10), (99, 1)]),
    ],
    ids=[
        "a rising function is constant outside its points and truncates between them",
        "a rising then falling function interpolates both slopes",
        "a flat function is constant",
        "a falling slope truncates toward zero like Go",
    ],
)
def test_broken_linear_function(points: list[tuple[int, int]], assertions: list[tuple[int, int]]) -> None:
    for p, want in assertions:
        assert broken_linear(points, p) == want


# ---------------------------------------------------------------- the v1.21 pod request
@pytest.mark.parametrize(
    ("p", "cpu", "memory"),
    [
        (pod("", {}), 100, 200 * 1024 * 1024),
        (pod("", {"cpu": "0", "memory": "0"}), 0, 0),
        (pod("", {"cpu": "100m"}, {"cpu": "200m", "memory": "1Ki"}, init=[{"cpu": "250m"}]), 300, 200 * 1024 * 1024 + 1024),
        (pod("", {"cpu": "100m", "memory": "1"}, init=[{"cpu": "500m", "memory": "1"}]), 500, 1),
        (pod("", {"cpu": "100m", "memory": "1"}, init=[{}]), 100, 200 * 1024 * 1024),
        (pod("", {"cpu": "500m", "memory": "1"}, overhead={"cpu": "250m", "memory": "10"}), 501, 11),
        (pod("", {"cpu": "500m", "memory": "1"}, overhead={"cpu": "2", "memory": "10"}), 502, 11),
    ],
    ids=[
        "a container without requests gets the non-zero defaults",
        "explicit zero requests stay zero",
        "containers add up and an init container only counts if larger",
        "a larger init container wins",
        "an init container without requests gets the defaults too",
        "cpu overhead is added as Quantity.Value(), whole cores rounded up (upstream quirk)",
        "two cores of overhead add 2 millicores",
    ],
)
def test_v121_pod_request(p: Pod, cpu: int, memory: int) -> None:
    assert (pod_resource_request(p, "cpu"), pod_resource_request(p, "memory")) == (cpu, memory)


def test_overhead_quirk_shows_in_the_score() -> None:
    nodes = [node("n", 1000, 10000)]
    p = pod("", {"cpu": "500m", "memory": "0"}, overhead={"cpu": "250m"})
    # used cpu = 500m + Value(250m) = 501: (1000 − 501)·100 / 1000 = 49 (v1.30 would use 750: 25)
    assert run(nrl.new_least_allocated, least(ResourceSpec("cpu", 1)), p, nodes, []) == [49]


def test_pod_request_is_memoized_per_cycle_and_pod() -> None:
    nodes = [node("n", 1000, 10000)]
    handle = FrameworkHandle.for_nodes(nodes)
    pl = nrl.new_least_allocated(least(ResourceSpec("cpu", 1)), handle)
    ni = handle.snapshot.get("n")
    assert ni is not None
    state = CycleState()
    assert pl.score(state, pod("", {"cpu": "500m"}), ni) == 50
    # Another pod in the same state object is not served the first pod's request.
    assert pl.score(state, pod("", {"cpu": "250m"}), ni) == 75


# ---------------------------------------------------------------- batch equivalence
NAMES = ["cpu", "memory", "ephemeral-storage", FOO, BAR, "pods", "hugepages-2Mi"]


def _random_requests(rng: random.Random) -> dict[str, Any]:
    req: dict[str, Any] = {}
    if rng.random() < 0.7:
        req["cpu"] = f"{rng.choice([0, 100, 250, 1000, 3000])}m"
    if rng.random() < 0.7:
        req["memory"] = str(rng.choice([0, 1000, 5000, 10**9]))
    if rng.random() < 0.3:
        req["ephemeral-storage"] = str(rng.choice([0, 10, 1000]))
    for ext in (FOO, BAR, "hugepages-2Mi"):
        if rng.random() < 0.3:
            req[ext] = str(rng.randint(0, 4))
    return req


def _random_pod(rng: random.Random, on: str = "") -> Pod:
    containers = [_random_requests(rng) for _ in range(rng.randint(1, 3))]
    init = [_random_requests(rng) for _ in range(rng.randint(0, 2))]
    overhead = {"cpu": "250m", "memory": "100"} if rng.random() < 0.2 else None
    return pod(on, *containers, init=init, overhead=overhead)


def _random_node(rng: random.Random, i: int) -> Node:
    cap: dict[str, Any] = {"pods": 110}
    if rng.random() < 0.9:
        cap["cpu"] = f"{rng.choice([0, 1000, 4000, 10000])}m"
    if rng.random() < 0.9:
        cap["memory"] = str(rng.choice([0, 10000, 2 * 10**9]))
    if rng.random() < 0.5:
        cap["ephemeral-storage"] = str(rng.choice([0, 100, 5000]))
    for ext in (FOO, BAR, "hugepages-2Mi"):
        if rng.random() < 0.4:
            cap[ext] = rng.randint(0, 8)
    return make_node().name(f"n{i}").capacity_map(cap).obj()


def _random_resources(rng: random.Random) -> tuple[ResourceSpec, ...]:
    return tuple(ResourceSpec(n, rng.randint(1, 5)) for n in rng.sample(NAMES, rng.randint(0, 4)))


@pytest.mark.parametrize("seed", range(30), ids=lambda s: f"random cluster {s} gives the same batch and per-node results")
def test_batch_equals_per_node(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [_random_node(rng, i) for i in range(rng.randint(1, 10))]
    pods = [_random_pod(rng, n.meta.name) for n in nodes for _ in range(rng.randint(0, 2))]
    handle = FrameworkHandle.for_nodes(nodes, pods)
    infos = list(handle.snapshot.list())
    by_row = {ni.index: ni for ni in infos}
    for _ in range(4):
        resources = _random_resources(rng)
        points = sorted(rng.sample(range(0, 101), rng.randint(1, 4)))
        shape = tuple(UtilizationShapePoint(u, rng.randint(0, 10)) for u in points)
        plugins = [nrl.new_least_allocated(least(*resources), handle),
                   nrl.new_most_allocated(most(*resources), handle),
                   nrl.new_requested_to_capacity_ratio(RequestedToCapacityRatioArgs(shape, resources), handle)]
        incoming = _random_pod(rng)
        rows = np.array(rng.sample(list(by_row), len(by_row)), np.int64)
        for pl in plugins:
            state = CycleState()
            want = [pl.score(state, incoming, by_row[r]) for r in rows.tolist()]
            assert pl.score_batch(state, incoming, handle.snapshot.table, rows).tolist() == want
            assert all(0 <= s <= 100 for s in want)


def test_plugin_shapes() -> None:
    h = FrameworkHandle.for_nodes([])
    shape = rtcr([(0, 0), (100, 10)], *CPU_MEM)
    got = [(p.name, p.events_to_register()) for p in (
        nrl.new_least_allocated(None, h), nrl.new_most_allocated(None, h), nrl.new_requested_to_capacity_ratio(shape, h))]
    assert got == [(nrl.LEAST_ALLOCATED_NAME, []), (nrl.MOST_ALLOCATED_NAME, []),
                   (nrl.REQUESTED_TO_CAPACITY_RATIO_NAME, [])]
    assert [n for n, _ in got] == ["NodeResourcesLeastAllocated", "NodeResourcesMostAllocated",
                                   "RequestedToCapacityRatio"]
