"""NodeResourcesBalancedAllocation: upstream balanced_allocation_test.go (v1.30 cases, where
the plugin never Skips) plus exact float cases. Every case checks score and score_batch."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import pytest

from kubesched.config.args import DEFAULT_RESOURCES, NodeResourcesBalancedAllocationArgs, ResourceSpec
from kubesched.errors import ConfigError
from kubesched.framework import CycleState
from kubesched.objects import Node, Pod
from kubesched.plugins.noderesources import BALANCED_NAME, BalancedAllocation, new_balanced_allocation
from kubesched.plugins.noderesources.resource_allocation import balanced_score

from .util import cluster, empty_pod, infos, make_node_milli, pod, rows_of

GPU = "nvidia.com/gpu"
_SEQ = itertools.count()


def cpu_only(node_name: str) -> Pod:
    return pod({"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"}, node=node_name,
               name=f"cpu-only-{next(_SEQ)}")


def cpu_and_memory(node_name: str = "") -> Pod:
    return pod({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"}, node=node_name,
               name=f"cpu-mem-{next(_SEQ)}")


def cpu_memory_gpu(node_name: str) -> Pod:
    return pod({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000", GPU: "3"}, node=node_name,
               name=f"cpu-mem-gpu-{next(_SEQ)}")


def scores(resources: Sequence[ResourceSpec], requested: Pod, nodes: Sequence[Node], existing: Sequence[Pod],
           run_pre_score: bool = True) -> list[int]:
    h = cluster(nodes, existing)
    plugin = BalancedAllocation(NodeResourcesBalancedAllocationArgs(tuple(resources)), h)
    nis = infos(h, [n.name for n in nodes])
    state = CycleState()
    if run_pre_score:
        assert plugin.pre_score(state, requested, nis) is None
    per_node = [plugin.score(state, requested, ni) for ni in nis]
    assert plugin.score_batch(state, requested, h.snapshot.table, rows_of(nis)).tolist() == per_node
    return per_node


def mk(name: str, milli: int, mem: int, ext: dict[str, int] | None = None) -> Node:
    return make_node_milli(name, milli, mem, ext)


SCALAR = {GPU: 8}
CPU_MEM_GPU = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1), ResourceSpec(GPU, 1))

CASES = [
    ("nothing scheduled, nothing requested", DEFAULT_RESOURCES, empty_pod(),
     [mk("node1", 4000, 10000), mk("node2", 4000, 10000)], [], [100, 100]),
    ("nothing scheduled, resources requested, differently sized nodes", DEFAULT_RESOURCES, cpu_and_memory(),
     [mk("node1", 4000, 10000), mk("node2", 6000, 10000)], [], [87, 100]),
    ("no resources requested, pods without container scheduled", DEFAULT_RESOURCES, empty_pod(),
     [mk("node1", 4000, 10000), mk("node2", 4000, 10000)],
     [empty_pod("node1", "a"), empty_pod("node1", "b"), empty_pod("node2", "c"), empty_pod("node2", "d")],
     [100, 100]),
    ("no resources requested, pods with container scheduled", DEFAULT_RESOURCES, empty_pod(),
     [mk("node1", 250, 1000 * 1024 * 1024), mk("node2", 250, 1000 * 1024 * 1024)],
     [empty_pod("node1", "a"), empty_pod("node1", "b")], [100, 100]),
    ("no resources requested, pods scheduled with resources", DEFAULT_RESOURCES, empty_pod(),
     [mk("node1", 10000, 20000), mk("node2", 10000, 20000)],
     [cpu_only("node1"), cpu_only("node1"), cpu_only("node2"), cpu_and_memory("node2")], [70, 82]),
    ("resources requested, pods scheduled with resources", DEFAULT_RESOURCES, cpu_and_memory(),
     [mk("node1", 10000, 20000), mk("node2", 10000, 20000)], [cpu_only("node1"), cpu_and_memory("node2")], [82, 95]),
    ("resources requested, pods scheduled with resources, differently sized nodes", DEFAULT_RESOURCES,
     cpu_and_memory(), [mk("node1", 10000, 20000), mk("node2", 10000, 50000)],
     [cpu_only("node1"), cpu_and_memory("node2")], [82, 80]),
    ("requested resources at node capacity", DEFAULT_RESOURCES, cpu_only(""),
     [mk("node1", 6000, 10000), mk("node2", 6000, 10000)], [cpu_only("node1"), cpu_and_memory("node2")], [50, 75]),
    ("zero node resources, pods scheduled with resources", DEFAULT_RESOURCES, empty_pod(),
     [mk("node1", 0, 0), mk("node2", 0, 0)], [cpu_only("node1"), cpu_and_memory("node2")], [100, 100]),
    ("include scalar resource on a node for balanced resource allocation", CPU_MEM_GPU,
     pod({"memory": "0", GPU: "1"}), [mk("node1", 3500, 40000, SCALAR), mk("node2", 3500, 40000, SCALAR)],
     [cpu_and_memory("node2"), cpu_memory_gpu("node1")], [70, 65]),
    ("node without the scalar resource results to a higher score", (ResourceSpec("cpu", 1), ResourceSpec(GPU, 1)),
     empty_pod(), [mk("node1", 3500, 40000, SCALAR), mk("node2", 3500, 40000)],
     [cpu_only("node1"), cpu_only("node2")], [100, 100]),
    # kubesched cases
    ("requests are not defaulted: containers without requests count as zero", DEFAULT_RESOURCES, pod(),
     [mk("node1", 1000, 1000)], [pod(node="node1", name="a")], [100]),
    ("over-committed resources are capped at a fraction of 1", DEFAULT_RESOURCES, cpu_and_memory(),
     [mk("node1", 1000, 10000)], [], [75]),
    ("ephemeral-storage is read from Requested", (ResourceSpec("cpu", 1), ResourceSpec("ephemeral-storage", 1)),
     pod({"cpu": "1", "ephemeral-storage": "100"}), [make_node_milli("node1", 4000, 1, {"ephemeral-storage": 400})],
     [pod({"ephemeral-storage": "100"}, node="node1", name="a")], [87]),
]


@pytest.mark.parametrize("run_pre_score", [True, False], ids=["with PreScore", "if PreScore is not called"])
@pytest.mark.parametrize(("resources", "requested", "nodes", "existing", "want"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_balanced_allocation(resources: tuple[ResourceSpec, ...], requested: Pod, nodes: list[Node],
                             existing: list[Pod], want: list[int], run_pre_score: bool) -> None:
    assert scores(resources, requested, nodes, existing, run_pre_score) == want


FLOATS = [
    ("two resources use |f0 - f1| / 2", [3, 5], [4, 10], 87),
    ("float64 arithmetic: (1 - 0.34) * 100 is 65.99999999999999 and truncates to 65", [0, 68], [100, 100], 65),
    ("one resource has no deviation", [3, 0], [4, 0], 100),
    ("no resource has no deviation", [3, 5], [0, 0], 100),
    ("three resources use the population standard deviation", [3000, 5000, 4], [3500, 40000, 8],
     int((1 - math.sqrt(((3000 / 3500 - (3000 / 3500 + 5000 / 40000 + 0.5) / 3) ** 2
                         + (5000 / 40000 - (3000 / 3500 + 5000 / 40000 + 0.5) / 3) ** 2
                         + (0.5 - (3000 / 3500 + 5000 / 40000 + 0.5) / 3) ** 2) / 3)) * 100)),
    ("a left-out middle resource leaves the other two as a pair", [1, 7, 3], [4, 0, 4], 75),
]


@pytest.mark.parametrize(("requested", "allocatable", "want"), [c[1:] for c in FLOATS], ids=[c[0] for c in FLOATS])
def test_balanced_score_formula(requested: list[int], allocatable: list[int], want: int) -> None:
    assert balanced_score(requested, allocatable) == want


def test_weights_are_validated() -> None:
    with pytest.raises(ConfigError) as e:
        BalancedAllocation(NodeResourcesBalancedAllocationArgs((ResourceSpec("cpu", 0),)))
    assert e.value.field == "resources[0].weight"


def test_factory_builds_the_plugin_with_its_name() -> None:
    plugin = new_balanced_allocation(None, cluster([]))
    assert plugin.name == BALANCED_NAME == "NodeResourcesBalancedAllocation"
    assert plugin.resources == DEFAULT_RESOURCES
