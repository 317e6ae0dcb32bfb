"""Pod resource requests as kube-scheduler computes them.

Mirrors k8s.io/kubernetes/pkg/api/v1/resource/helpers.go: PodRequests (containers, init
containers, restartable sidecars, overhead) and pkg/scheduler/framework/types.go:
calculateResource (the node-side non-zero cpu/memory), plus the pod-side request used by
NodeResourcesFit scoring (noderesources/resource_allocation.go: calculatePodResourceRequest).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction

from kubesched.objects.model import Container
from kubesched.objects.quantity import saturate, scheduler_units

# pkg/scheduler/util/pod_resources.go
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
_NON_MISSING = {"cpu": Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000), "memory": Fraction(DEFAULT_MEMORY_REQUEST)}

ResourceList = dict[str, Fraction]
# validation.IsQualifiedName: optional DNS-subdomain prefix, "/", then a name part.
_QUALIFIED = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$")


def _add(into: ResourceList, other: Mapping[str, Fraction]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, Fraction(0)) + v


def _max(into: ResourceList, other: Mapping[str, Fraction]) -> None:
    for k, v in other.items():
        if k not in into or v > into[k]:
            into[k] = v


def _apply_non_missing(reqs: Mapping[str, Fraction]) -> ResourceList:
    """resource helpers applyNonMissing: default cpu/memory only where the key is absent."""
    out = dict(reqs)
    for k, v in _NON_MISSING.items():
        if k not in reqs:
            out[k] = v
    return out


def pod_requests(
    containers: Iterable[Container],
    init_containers: Iterable[Container],
    overhead: Mapping[str, Fraction] | None,
    *,
    non_missing: bool = False,
    container_fn: Callable[[Mapping[str, Fraction], bool], None] | None = None,
) -> ResourceList:
    """resource.PodRequests. ``container_fn(reqs, is_init)`` sees each container's list as
    upstream's ContainerFn does (for a sidecar: the cumulative sidecar sum)."""
    reqs: ResourceList = {}
    for c in containers:
        cr: Mapping[str, Fraction] = _apply_non_missing(c.requests) if non_missing else c.requests
        if container_fn is not None:
            container_fn(cr, False)
        _add(reqs, cr)
    sidecars: ResourceList = {}
    init_max: ResourceList = {}
    for c in init_containers:
        cr = _apply_non_missing(c.requests) if non_missing else c.requests
        if c.is_sidecar:
            _add(reqs, cr)
            _add(sidecars, cr)
            cr = sidecars
        else:
            tmp: ResourceList = {}
            _add(tmp, cr)
            _add(tmp, sidecars)
            cr = tmp
        if container_fn is not None:
            container_fn(cr, True)
        _max(init_max, cr)
    _max(reqs, init_max)
    if overhead is not None:
        _add(reqs, overhead)
    return reqs


def to_units(reqs: Mapping[str, Fraction]) -> dict[str, int]:
    return {k: scheduler_units(k, v) for k, v in reqs.items()}


def _non_zero(reqs: Mapping[str, Fraction]) -> tuple[int, int]:
    """schedutil.GetNonzeroRequests: defaults only when the key is missing."""
    cpu = scheduler_units("cpu", reqs["cpu"]) if "cpu" in reqs else DEFAULT_MILLI_CPU_REQUEST
    mem = scheduler_units("memory", reqs["memory"]) if "memory" in reqs else DEFAULT_MEMORY_REQUEST
    return cpu, mem


# component-helpers resource.IsSupportedPodLevelResource: what spec.resources may set.
def is_pod_level_resource(name: str) -> bool:
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def _with_pod_level(reqs: ResourceList, pod_level: Mapping[str, Fraction] | None,
                    overhead: Mapping[str, Fraction] | None) -> ResourceList:
    """resource.PodRequests with PodLevelResources: the pod-level requests replace the
    containers' aggregate for the resources they name (cpu, memory, hugepages); the overhead
    is added on top of either."""
    if not pod_level:
        return reqs
    out = dict(reqs)
    if overhead is not None:  # undo the overhead pod_requests added, to re-add it after
        for k, v in overhead.items():
            out[k] = out.get(k, Fraction(0)) - v
    for k, v in pod_level.items():
        if is_pod_level_resource(k):
            out[k] = v
    if overhead is not None:
        _add(out, overhead)
    return out


def compute_pod_resources(
    containers: tuple[Container, ...],
    init_containers: tuple[Container, ...],
    overhead: Mapping[str, Fraction] | None,
    *,
    pod_level: Mapping[str, Fraction] | None = None,
    sidecar_non_zero: bool = False,
) -> tuple[dict[str, int], int, int, dict[str, int]]:
    """(requests, non_zero_cpu, non_zero_memory, score_requests) of a pod.

    - requests: PodRequests, used by Filter and NodeInfo.Requested;
    - non_zero_*: calculateResource's node-side non-zero cpu/memory (NodeInfo.NonZeroRequested),
      including its quirk that a sidecar only counts through the init-container maximum;
    - score_requests: PodRequests with missing cpu/memory defaulted per container, the pod
      side of NodeResourcesFit scoring.

    ``pod_level``: spec.resources.requests (PodLevelResources, 1.34+), which replace the
    containers' cpu/memory/hugepages sums. ``sidecar_non_zero``: 1.36's PodInfo.CalculateResource,
    where the node-side non-zero cpu/memory is the full PodRequests with per-container
    defaults (restartable init containers added), not 1.30's calculateResource quirk.
    """
    acc = {"cpu": 0, "mem": 0, "icpu": 0, "imem": 0}

    def fn(reqs: Mapping[str, Fraction], is_init: bool) -> None:
        cpu, mem = _non_zero(reqs)
        if is_init:
            acc["icpu"] = max(acc["icpu"], cpu)
            acc["imem"] = max(acc["imem"], mem)
        else:
            acc["cpu"] += cpu
            acc["mem"] += mem

    requests = _with_pod_level(pod_requests(containers, init_containers, overhead, container_fn=fn), pod_level,
                               overhead)
    nz_cpu = max(acc["cpu"], acc["icpu"])
    nz_mem = max(acc["mem"], acc["imem"])
    if overhead is not None:
        if "cpu" in overhead:
            nz_cpu += scheduler_units("cpu", overhead["cpu"])
        if "memory" in overhead:
            nz_mem += scheduler_units("memory", overhead["memory"])
    # NodeResourcesFit scores the incoming pod by its containers alone: 1.36's Fit builds its
    # resourceAllocationScorer without the PodLevelResources flag (fit.go getScorer), so
    # PodRequests skips spec.resources there (BalancedAllocation's scorer has the flag).
    score = pod_requests(containers, init_containers, overhead, non_missing=True)
    if sidecar_non_zero or pod_level:
        # PodInfo.CalculateResource: PodRequests, with cpu/memory defaults per container only for a
        # resource neither the containers nor the pod level request (getNonMissingContainerRequests).
        non_zero = _with_pod_level(score, pod_level, overhead)
        nz_cpu = scheduler_units("cpu", requests["cpu"] if pod_level and "cpu" in requests else non_zero["cpu"])
        nz_mem = scheduler_units("memory", requests["memory"] if pod_level and "memory" in requests
                                 else non_zero["memory"])
    return to_units(requests), saturate(nz_cpu), saturate(nz_mem), to_units(score)


@functools.lru_cache(maxsize=4096)
def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: not native (has a '/', no "kubernetes.io/"), not
    ``requests.*``, and a qualified name once prefixed with ``requests.``."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return _QUALIFIED.match(name) is not None


@functools.lru_cache(maxsize=4096)
def is_scalar_resource_name(name: str) -> bool:
    """schedutil / v1helper.IsScalarResourceName: extended, hugepages-*, prefixed native,
    attachable-volumes-*."""
    return (
        is_extended_resource_name(name)
        or name.startswith("hugepages-")
        or "kubernetes.io/" in name
        or name.startswith("attachable-volumes-")
    )
