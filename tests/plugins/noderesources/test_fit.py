"""NodeResourcesFit PreFilter/Filter: upstream fit_test.go (TestEnoughRequests,
TestNotEnoughRequests, TestStorageRequests, TestRestartableInitContainers,
TestEventsToRegister) plus sidecar, overhead and reason-order cases."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from kubesched._runtime.handle import FrameworkHandle
from kubesched.config.args import NodeResourcesFitArgs
from kubesched.errors import PluginError
from kubesched.features import FEATURES_1_30
from kubesched.framework import GVK, ActionType, Code, CycleState
from kubesched.objects import Pod
from kubesched.plugins.noderesources import FIT_NAME, Fit, InsufficientResource, fits, new_fit
from kubesched.plugins.noderesources.fit import PodResourceRequest, fits_request

from .util import cluster, empty_pod, node, pod, requests, rows_of

A = "example.com/aaa"
B = "example.com/bbb"
K8S_A = "kubernetes.io/something"
K8S_B = "subdomain.kubernetes.io/something"
HP = "hugepages-2Mi"


def res(cpu: int = 0, mem: int = 0, eph: int = 0, ext: Mapping[str, int] | None = None) -> dict[str, str]:
    """newResourcePod's container: cpu, memory and ephemeral-storage always set (maybe 0)."""
    return requests(cpu, mem, eph, ext)


def alloc(cpu_milli: int, memory: int, pods: int, ext_a: int, storage: int, hugepage_a: int) -> dict[str, Any]:
    """makeAllocatableResources."""
    return {"cpu": f"{cpu_milli}m", "memory": memory, "pods": pods, A: ext_a, "ephemeral-storage": storage,
            HP: hugepage_a}


def ir(name: str, requested: int, used: int, capacity: int) -> InsufficientResource:
    reason = "Too many pods" if name == "pods" else f"Insufficient {name}"
    return InsufficientResource(name, reason, requested, used, capacity)


def run_filter(p: Pod, existing: Sequence[Mapping[str, str]], node_res: Mapping[str, Any],
               args: NodeResourcesFitArgs | None = None) -> tuple[Any, list[InsufficientResource], bool]:
    """Filter the pod on one node holding one existing pod with ``existing`` containers;
    returns (status, fitsRequest result, filter_batch verdict)."""
    n = node("n", node_res)
    others = [pod(*existing, node="n", name="existing")]
    h = cluster([n], others)
    plugin = Fit(args, h)
    state = CycleState()
    _, st = plugin.pre_filter(state, p)
    assert st is None
    ni = h.snapshot.get("n")
    assert ni is not None
    status = plugin.filter(state, p, ni)
    insufficient = fits_request(PodResourceRequest.of(p), ni, plugin.ignored_resources, plugin.ignored_resource_groups)
    batch = bool(plugin.filter_batch(state, p, h.snapshot.table, rows_of([ni]))[0])
    return status, insufficient, batch


ENOUGH_REQUESTS = [
    # (id, pod, existing pod containers, args, expected insufficient resources)
    ("no resources requested always fits", empty_pod(), [res(10, 20)], None, []),
    ("too many resources fails", pod(res(1, 1)), [res(10, 20)], None, [ir("cpu", 1, 10, 10), ir("memory", 1, 20, 20)]),
    ("too many resources fails due to init container cpu", pod(res(1, 1), init=[res(3, 1)]), [res(8, 19)], None,
     [ir("cpu", 3, 8, 10)]),
    ("too many resources fails due to highest init container cpu", pod(res(1, 1), init=[res(3, 1), res(2, 1)]),
     [res(8, 19)], None, [ir("cpu", 3, 8, 10)]),
    ("too many resources fails due to init container memory", pod(res(1, 1), init=[res(1, 3)]), [res(9, 19)], None,
     [ir("memory", 3, 19, 20)]),
    ("too many resources fails due to highest init container memory", pod(res(1, 1), init=[res(1, 3), res(1, 2)]),
     [res(9, 19)], None, [ir("memory", 3, 19, 20)]),
    ("init container fits because it's the max, not sum, of containers and init containers",
     pod(res(1, 1), init=[res(1, 1)]), [res(9, 19)], None, []),
    ("multiple init containers fit because it's the max, not sum, of containers and init containers",
     pod(res(1, 1), init=[res(1, 1), res(1, 1)]), [res(9, 19)], None, []),
    ("both resources fit", pod(res(1, 1)), [res(5, 5)], None, []),
    ("one resource memory fits", pod(res(2, 1)), [res(9, 5)], None, [ir("cpu", 2, 9, 10)]),
    ("one resource cpu fits", pod(res(1, 2)), [res(5, 19)], None, [ir("memory", 2, 19, 20)]),
    ("equal edge case", pod(res(5, 1)), [res(5, 19)], None, []),
    ("equal edge case for init container", pod(res(4, 1), init=[res(5, 1)]), [res(5, 19)], None, []),
    ("extended resource fits", pod(requests(scalars={A: 1})), [res()], None, []),
    ("extended resource fits for init container", pod(res(), init=[requests(scalars={A: 1})]), [res()], None, []),
    ("extended resource capacity enforced", pod(res(1, 1, ext={A: 10})), [res(ext={A: 0})], None,
     [ir(A, 10, 0, 5)]),
    ("extended resource capacity enforced for init container", pod(res(), init=[res(1, 1, ext={A: 10})]),
     [res(ext={A: 0})], None, [ir(A, 10, 0, 5)]),
    ("extended resource allocatable enforced", pod(res(1, 1, ext={A: 1})), [res(ext={A: 5})], None,
     [ir(A, 1, 5, 5)]),
    ("extended resource allocatable enforced for init container", pod(res(), init=[res(1, 1, ext={A: 1})]),
     [res(ext={A: 5})], None, [ir(A, 1, 5, 5)]),
    ("extended resource allocatable enforced for multiple containers",
     pod(res(1, 1, ext={A: 3}), res(1, 1, ext={A: 3})), [res(ext={A: 2})], None, [ir(A, 6, 2, 5)]),
    ("extended resource allocatable admits multiple init containers",
     pod(res(), init=[res(1, 1, ext={A: 3}), res(1, 1, ext={A: 3})]), [res(ext={A: 2})], None, []),
    ("extended resource allocatable enforced for multiple init containers",
     pod(res(), init=[res(1, 1, ext={A: 6}), res(1, 1, ext={A: 3})]), [res(ext={A: 2})], None, [ir(A, 6, 2, 5)]),
    ("extended resource allocatable enforced for unknown resource", pod(res(1, 1, ext={B: 1})), [res()], None,
     [ir(B, 1, 0, 0)]),
    ("extended resource allocatable enforced for unknown resource for init container",
     pod(res(), init=[res(1, 1, ext={B: 1})]), [res()], None, [ir(B, 1, 0, 0)]),
    ("kubernetes.io resource capacity enforced", pod(res(1, 1, ext={K8S_A: 10})), [res()], None,
     [ir(K8S_A, 10, 0, 0)]),
    ("kubernetes.io resource capacity enforced for init container", pod(res(), init=[res(1, 1, ext={K8S_B: 10})]),
     [res()], None, [ir(K8S_B, 10, 0, 0)]),
    ("hugepages resource capacity enforced", pod(res(1, 1, ext={HP: 10})), [res(ext={HP: 0})], None,
     [ir(HP, 10, 0, 5)]),
    ("hugepages resource capacity enforced for init container", pod(res(), init=[res(1, 1, ext={HP: 10})]),
     [res(ext={HP: 0})], None, [ir(HP, 10, 0, 5)]),
    ("hugepages resource allocatable enforced for multiple containers",
     pod(res(1, 1, ext={HP: 3}), res(1, 1, ext={HP: 3})), [res(ext={HP: 2})], None, [ir(HP, 6, 2, 5)]),
    ("skip checking ignored extended resource", pod(res(1, 1, ext={B: 1})), [res()],
     NodeResourcesFitArgs(ignored_resources=(B,)), []),
    ("resources + pod overhead fits", pod(res(1, 1), overhead={"cpu": "3m", "memory": "13"}), [res(5, 5)], None, []),
    ("requests + overhead does not fit for memory", pod(res(1, 1), overhead={"cpu": "1m", "memory": "15"}),
     [res(5, 5)], None, [ir("memory", 16, 5, 20)]),
    ("skip checking ignored extended resource via resource groups", pod(res(1, 1, ext={B: 1, K8S_A: 1})), [res()],
     NodeResourcesFitArgs(ignored_resource_groups=("example.com",)), [ir(K8S_A, 1, 0, 0)]),
    ("skip checking extended resource request with quantity zero via resource groups", pod(res(1, 1, ext={A: 0})),
     [res(ext={A: 6})], None, []),
    ("skip checking resource request with quantity zero", pod(res(ext={A: 1})), [res(20, 30, ext={A: 1})], None, []),
    # kubesched cases
    ("a pod requesting only an extended resource sees one existing on the node",
     pod(requests(scalars={A: 1})), [requests(scalars={A: 5})], None, [ir(A, 1, 5, 5)]),
    ("ignored resources only apply to extended resources, not to kubernetes.io names",
     pod(res(1, 1, ext={K8S_A: 1, HP: 6})), [res()], NodeResourcesFitArgs(ignored_resources=(K8S_A, HP)),
     [ir(K8S_A, 1, 0, 0), ir(HP, 6, 0, 5)]),
    ("every insufficient resource is reported, cpu, memory and ephemeral-storage first",
     pod(res(11, 21, 21, ext={B: 1, A: 6})), [res()], None,
     [ir("cpu", 11, 0, 10), ir("memory", 21, 0, 20), ir("ephemeral-storage", 21, 0, 20), ir(B, 1, 0, 0),
      ir(A, 6, 0, 5)]),
    ("a sidecar's request is added to the regular containers", pod(res(6, 1), init=[res(5, 1)], sidecars=[0]),
     [res()], None, [ir("cpu", 11, 0, 10)]),
    ("an init container after a sidecar needs room next to it", pod(res(1, 1), init=[res(4, 1), res(7, 1)],
                                                                      sidecars=[0]),
     [res()], None, [ir("cpu", 11, 0, 10)]),
    ("a resource named pods in a container is ignored", pod({"cpu": "1m", "pods": "100"}), [res()], None, []),
]


@pytest.mark.parametrize(("p", "existing", "args", "want"), [c[1:] for c in ENOUGH_REQUESTS],
                         ids=[c[0] for c in ENOUGH_REQUESTS])
def test_enough_requests(p: Pod, existing: list[dict[str, str]], args: NodeResourcesFitArgs | None,
                         want: list[InsufficientResource]) -> None:
    status, insufficient, batch = run_filter(p, existing, alloc(10, 20, 32, 5, 20, 5), args)
    assert insufficient == want
    if want:
        assert status is not None
        assert status.code == Code.UNSCHEDULABLE
        assert status.reasons == tuple(r.reason for r in want)
    else:
        assert status is None
    assert batch == (status is None)


NOT_ENOUGH_PODS = [
    ("even without specified resources, predicate fails when there's no space for additional pod",
     empty_pod(), [res(10, 20)]),
    ("even if both resources fit, predicate fails when there's no space for additional pod", pod(res(1, 1)),
     [res(5, 5)]),
    ("even for equal edge case, predicate fails when there's no space for additional pod", pod(res(5, 1)),
     [res(5, 19)]),
    ("even for equal edge case, predicate fails when there's no space for additional pod due to init container",
     pod(res(5, 1), init=[res(5, 1)]), [res(5, 19)]),
]


@pytest.mark.parametrize(("p", "existing"), [c[1:] for c in NOT_ENOUGH_PODS], ids=[c[0] for c in NOT_ENOUGH_PODS])
def test_not_enough_requests(p: Pod, existing: list[dict[str, str]]) -> None:
    status, insufficient, batch = run_filter(p, existing, alloc(10, 20, 1, 0, 0, 0))
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert status.reasons == ("Too many pods",)
    assert insufficient == [InsufficientResource("pods", "Too many pods", 1, 1, 1)]
    assert not batch


STORAGE = [
    ("empty storage requested, and pod fits", pod(res(1, 1)), [res(2, 10)], None),
    ("storage ephemeral local storage request exceeds allocatable", pod(res(eph=25)), [res(2, 2)],
     "Insufficient ephemeral-storage"),
    ("ephemeral local storage is sufficient", pod(res(eph=5)), [res(2, 2, 10)], None),
    ("pod fits", pod(res(eph=10)), [res(2, 2)], None),
]


@pytest.mark.parametrize(("p", "existing", "want"), [c[1:] for c in STORAGE], ids=[c[0] for c in STORAGE])
def test_storage_requests(p: Pod, existing: list[dict[str, str]], want: str | None) -> None:
    status, _, batch = run_filter(p, existing, alloc(10, 20, 32, 5, 20, 5))
    if want is None:
        assert status is None
    else:
        assert status is not None and status.reasons == (want,) and status.code == Code.UNSCHEDULABLE
    assert batch == (status is None)


def test_pod_with_restartable_init_container_passes_prefilter_and_filter() -> None:
    """SidecarContainers is on in v1.30: no 'Pod has a restartable init container' rejection."""
    p = pod(res(), init=[{}], sidecars=[0])
    h = cluster([node("n", alloc(0, 0, 1, 0, 0, 0))])
    plugin = Fit(None, h)
    state = CycleState()
    assert plugin.pre_filter(state, p) == (None, None)
    ni = h.snapshot.get("n")
    assert ni is not None
    assert plugin.filter(state, p, ni) is None


def test_filter_without_prefilter_state_is_an_error_status() -> None:
    h = cluster([node("n", alloc(10, 20, 32, 5, 20, 5))])
    ni = h.snapshot.get("n")
    assert ni is not None
    status = Fit(None, h).filter(CycleState(), empty_pod(), ni)
    assert status is not None and status.code == Code.ERROR
    assert status.message == 'error reading "PreFilterNodeResourcesFit" from cycleState: not found'
    with pytest.raises(PluginError):
        Fit(None, h).filter_batch(CycleState(), empty_pod(), h.snapshot.table, rows_of([ni]))


def test_v1_30_events_to_register_are_pod_delete_and_node_add_or_update() -> None:
    events = [e.event for e in Fit(None, FrameworkHandle.for_nodes([], features=FEATURES_1_30)).events_to_register()]
    assert [(e.resource, e.action_type) for e in events] == [
        (GVK.POD, ActionType.DELETE), (GVK.NODE, ActionType.ADD | ActionType.UPDATE)]


FITS = [
    ("insufficient resource", pod({"cpu": "2"}), {"cpu": "1", "pods": "1"}, ["Insufficient cpu"]),
    ("sufficient resource", pod({"cpu": "1"}), {"cpu": "2", "pods": "1"}, []),
    ("a node without pods allocatable fits nothing", pod({"cpu": "1"}), {"cpu": "2"}, ["Too many pods"]),
    ("extended resources are never ignored by the Fits helper", pod(res(ext={B: 1})), {"pods": "1"},
     ["Insufficient example.com/bbb"]),
]


@pytest.mark.parametrize(("p", "node_res", "want"), [c[1:] for c in FITS], ids=[c[0] for c in FITS])
def test_fits_helper(p: Pod, node_res: dict[str, str], want: list[str]) -> None:
    h = cluster([node("n", node_res)])
    ni = h.snapshot.get("n")
    assert ni is not None
    assert [r.reason for r in fits(p, ni)] == want


def test_factory_builds_the_plugin_with_its_name() -> None:
    h = cluster([])
    plugin = new_fit(None, h)
    assert plugin.name == FIT_NAME == "NodeResourcesFit"
