"""The scoring core of the legacy (v1.21) NodeResourcesLeastAllocated,
NodeResourcesMostAllocated and RequestedToCapacityRatio score plugins.

Mirrors v1.21's noderesources/resource_allocation.go (resourceAllocationScorer.score,
calculateResourceAllocatableRequest, calculatePodResourceRequest), least_allocated.go,
most_allocated.go and requested_to_capacity_ratio.go. It is deliberately *not* v1.30's
NodeResourcesFit scoring (kubesched.plugins.noderesources), which differs in v1.21 in:

- every configured resource counts, also where the node has none (allocatable 0): such a
  resource scores 0 for Least/MostAllocated but still adds its weight to the divisor, and
  scores f(100) for RequestedToCapacityRatio; an extended resource the pod does not request
  is *not* skipped (both changed by kubernetes#103169 in v1.22);
- MostAllocated scores an over-committed resource 0 instead of capping the usage at the
  allocatable (kubernetes#102925, v1.22);
- RequestedToCapacityRatio's utilization is ``100 − (capacity − requested)·100 / capacity``
  (Go integer division), which rounds up where v1.30's ``requested·100 / capacity`` rounds
  down;
- the pod's request is Σ containers, then max with each init container alone (no sidecar
  notion), each container's cpu/memory defaulted to 100m / 200Mi when absent, plus the
  pod overhead taken with ``Quantity.Value()`` — for cpu that is whole cores rounded up, not
  millicores (an upstream quirk reproduced here).

The node side uses the cache's NodeInfo as is (NonZeroRequested for cpu/memory, Requested
for ephemeral-storage and scalar resources), identical to v1.21's for pods without sidecars.

Each strategy exists over Python ints for one node and over numpy arrays of the NodeTable
for many; both use the same integer arithmetic on non-negative values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from kubesched.config.args import MAX_CUSTOM_PRIORITY_SCORE, ResourceSpec, UtilizationShapePoint
from kubesched.errors import ConfigError
from kubesched.framework import MAX_NODE_SCORE, ClusterEventWithHint, CycleState, Handle, NodeInfo, NodeTable, StateKey
from kubesched.framework.interfaces import IntArray
from kubesched.objects import Pod
from kubesched.objects.quantity import base_value, milli_value, saturate
from kubesched.objects.resources import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, is_scalar_resource_name
from kubesched.plugins.helpers.gomath import go_round
from kubesched.plugins.helpers.shape_score import MAX_UTILIZATION, broken_linear, broken_linear_table, scale_shape

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"


# ----------------------------------------------------------------------------- pod side
def non_zero_request(name: str, requests: Mapping[str, Fraction]) -> int:
    """v1.21 schedutil.GetNonzeroRequestForResource: cpu (milli) / memory default to
    100m / 200Mi when the key is absent (an explicit 0 stays 0); ephemeral-storage
    (LocalStorageCapacityIsolation on) and scalar resources default to 0; any other name
    counts 0."""
    q = requests.get(name)
    if name == CPU:
        return DEFAULT_MILLI_CPU_REQUEST if q is None else milli_value(q)
    if name == MEMORY:
        return DEFAULT_MEMORY_REQUEST if q is None else base_value(q)
    if name == EPHEMERAL_STORAGE or is_scalar_resource_name(name):
        return 0 if q is None else base_value(q)
    return 0


def pod_resource_request(pod: Pod, name: str) -> int:
    """v1.21 calculatePodResourceRequest: max(Σ containers, each init container) of the
    non-zero request, plus the overhead's ``Value()`` (PodOverhead on; for cpu this adds
    whole cores rounded up — upstream's unit slip)."""
    total = 0
    for c in pod.containers:
        total += non_zero_request(name, c.requests)
    for c in pod.init_containers:
        v = non_zero_request(name, c.requests)
        if total < v:
            total = v
    if pod.overhead is not None and name in pod.overhead:
        total += base_value(pod.overhead[name])
    return saturate(total)


@dataclass(frozen=True, slots=True)
class PodRequests:
    """The pod's request per configured resource, memoized in the cycle state (the legacy
    plugins are Score-only; upstream recomputed it on every node). Immutable."""

    pod: Pod
    values: tuple[int, ...]

    def clone(self) -> PodRequests:
        return self


def pod_requests(state: CycleState, key: StateKey[PodRequests], pod: Pod, names: Sequence[str]) -> tuple[int, ...]:
    cached = state.get(key)
    if cached is not None and cached.pod is pod:
        return cached.values
    values = tuple(pod_resource_request(pod, n) for n in names)
    state.write(key, PodRequests(pod, values))
    return values


# ----------------------------------------------------------------------------- node side
def allocatable_requested(node_info: NodeInfo, name: str, pod_request: int) -> tuple[int, int]:
    """v1.21 calculateResourceAllocatableRequest: (allocatable, requested + pod) for cpu and
    memory from NonZeroRequested, ephemeral-storage and scalar resources from Requested
    (0 allocatable where the node lacks the scalar); (0, 0) for any other name."""
    alloc = node_info.allocatable
    if name == CPU:
        return alloc.milli_cpu, node_info.non_zero_requested.milli_cpu + pod_request
    if name == MEMORY:
        return alloc.memory, node_info.non_zero_requested.memory + pod_request
    if name == EPHEMERAL_STORAGE:
        return alloc.ephemeral_storage, node_info.requested.ephemeral_storage + pod_request
    if is_scalar_resource_name(name):
        return alloc.scalar.get(name, 0), node_info.requested.scalar.get(name, 0) + pod_request
    return 0, 0


def table_allocatable_requested(table: NodeTable, rows: IntArray, name: str,
                                pod_request: int) -> tuple[IntArray, IntArray]:
    """allocatable_requested over table rows."""
    if name == CPU:
        return table.alloc_cpu[rows], table.nz_cpu[rows] + pod_request
    if name == MEMORY:
        return table.alloc_mem[rows], table.nz_mem[rows] + pod_request
    if name == EPHEMERAL_STORAGE:
        return table.alloc_eph[rows], table.req_eph[rows] + pod_request
    if is_scalar_resource_name(name):
        a = table.scalar_alloc.get(name)
        r = table.scalar_req.get(name)
        alloc = a[rows] if a is not None else np.zeros(rows.size, np.int64)
        used = r[rows] + pod_request if r is not None else np.full(rows.size, pod_request, np.int64)
        return alloc, used
    zeros = np.zeros(rows.size, np.int64)
    return zeros, zeros.copy()


# ----------------------------------------------------------------------------- args
def resource_weights(resources: Sequence[ResourceSpec]) -> tuple[tuple[str, int], ...]:
    """resourceToWeightMap: a map, so a repeated resource name keeps its last weight."""
    m: dict[str, int] = {}
    for r in resources:
        m[r.name] = r.weight
    return tuple(m.items())


def _aggregate(errs: list[str]) -> None:
    if len(errs) == 1:
        raise ConfigError(errs[0])
    if errs:
        raise ConfigError("[" + ", ".join(errs) + "]")


def validate_resources(resources: Sequence[ResourceSpec]) -> None:
    """validateResources (Least/MostAllocated args): weights in (0, 100]."""
    errs = []
    for i, r in enumerate(resources):
        if r.weight <= 0 or r.weight > MAX_NODE_SCORE:
            errs.append(f"resources[{i}].weight: Invalid value: {r.weight}: "
                        f"resource weight of {r.name} not in valid range (0, 100]")
    _aggregate(errs)


def validate_requested_to_capacity_ratio(shape: Sequence[UtilizationShapePoint],
                                         resources: Sequence[ResourceSpec]) -> None:
    """ValidateRequestedToCapacityRatioArgs: validateFunctionShape (at least one point,
    strictly increasing utilization in [0, 100], scores in [0, 10]) and
    validateResourcesNoMax (weights >= 1)."""
    if not shape:
        raise ConfigError("shape: Required value: at least one point must be specified")
    errs = []
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            errs.append(f"shape[{i}].utilization: Invalid value: {shape[i].utilization}: "
                        "utilization values must be sorted in increasing order")
            break
    for i, p in enumerate(shape):
        if not 0 <= p.utilization <= MAX_UTILIZATION:
            errs.append(f"shape[{i}].utilization: Invalid value: {p.utilization}: not in valid range [0, 100]")
        if not 0 <= p.score <= MAX_CUSTOM_PRIORITY_SCORE:
            errs.append(f"shape[{i}].score: Invalid value: {p.score}: not in valid range [0, 10]")
    for i, r in enumerate(resources):
        if r.weight < 1:
            errs.append(f"resources[{i}].weight: Invalid value: {r.weight}: "
                        f"resource weight of {r.name} not in valid range [1, inf)")
    _aggregate(errs)


# ----------------------------------------------------------------------------- strategies
def least_requested_score(requested: int, capacity: int) -> int:
    """leastRequestedScore: unused share on 0..100; 0 for no capacity or over-commit."""
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    """v1.21 mostRequestedScore: used share on 0..100; 0 for no capacity or over-commit."""
    if capacity == 0 or requested > capacity:
        return 0
    return requested * MAX_NODE_SCORE // capacity


class LeastAllocatedScorer:
    """leastResourceScorer: Σ w·leastRequestedScore / Σ w over every configured resource."""

    def __init__(self, weights: Sequence[tuple[str, int]]) -> None:
        self.weights = tuple(weights)
        self.weight_sum = sum(w for _, w in self.weights)

    def score(self, vectors: Sequence[tuple[int, int]]) -> int:
        node_score = 0
        for (_, w), (alloc, used) in zip(self.weights, vectors, strict=True):
            node_score += least_requested_score(used, alloc) * w
        return 0 if self.weight_sum == 0 else node_score // self.weight_sum

    def score_arrays(self, vectors: Sequence[tuple[IntArray, IntArray]], size: int) -> IntArray:
        num = np.zeros(size, np.int64)
        for (_, w), (alloc, used) in zip(self.weights, vectors, strict=True):
            bad = (alloc == 0) | (used > alloc)
            s = np.where(bad, 0, (alloc - used) * MAX_NODE_SCORE // np.where(bad, 1, alloc))
            num += s * w
        if self.weight_sum == 0:
            return np.zeros(size, np.int64)
        out: IntArray = num // self.weight_sum
        return out


class MostAllocatedScorer(LeastAllocatedScorer):
    """v1.21 mostResourceScorer: Σ w·mostRequestedScore / Σ w over every configured resource."""

    def score(self, vectors: Sequence[tuple[int, int]]) -> int:
        node_score = 0
        for (_, w), (alloc, used) in zip(self.weights, vectors, strict=True):
            node_score += most_requested_score(used, alloc) * w
        return 0 if self.weight_sum == 0 else node_score // self.weight_sum

    def score_arrays(self, vectors: Sequence[tuple[IntArray, IntArray]], size: int) -> IntArray:
        num = np.zeros(size, np.int64)
        for (_, w), (alloc, used) in zip(self.weights, vectors, strict=True):
            bad = (alloc == 0) | (used > alloc)
            s = np.where(bad, 0, used * MAX_NODE_SCORE // np.where(bad, 1, alloc))
            num += s * w
        if self.weight_sum == 0:
            return np.zeros(size, np.int64)
        out: IntArray = num // self.weight_sum
        return out


class RequestedToCapacityRatioScorer:
    """v1.21 buildRequestedToCapacityRatioScorerFunction: per resource f(utilization) on the
    shape scaled to 0..100, utilization = 100 − (capacity − requested)·100 / capacity (100
    for no capacity or over-commit); only resources with f > 0 enter the weighted mean,
    which is math.Round-ed."""

    def __init__(self, weights: Sequence[tuple[str, int]], shape: Sequence[UtilizationShapePoint]) -> None:
        self.weights = tuple(weights)
        self.shape = scale_shape(shape)
        # Utilization is an integer in [0, 100] here, so f is a 101-entry table.
        self.table = broken_linear_table(self.shape)

    def resource_score(self, requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return broken_linear(self.shape, MAX_UTILIZATION)
        return broken_linear(self.shape, MAX_UTILIZATION - (capacity - requested) * MAX_UTILIZATION // capacity)

    def score(self, vectors: Sequence[tuple[int, int]]) -> int:
        node_score = weight_sum = 0
        for (_, w), (alloc, used) in zip(self.weights, vectors, strict=True):
            s = self.resource_score(used, alloc)
            if s > 0:
                node_score += s * w
                weight_sum += w
        if weight_sum == 0:
            return 0
        return go_round(float(node_score) / float(weight_sum))

    def score_arrays(self, vectors: Sequence[tuple[IntArray, IntArray]], size: int) -> IntArray:
        num = np.zeros(size, np.int64)
        den = np.zeros(size, np.int64)
        for (_, w), (alloc, used) in zip(self.weights, vectors, strict=True):
            bad = (alloc == 0) | (used > alloc)
            util = np.where(bad, MAX_UTILIZATION,
                            MAX_UTILIZATION - (alloc - used) * MAX_UTILIZATION // np.where(bad, 1, alloc))
            s = self.table[util]
            keep = s > 0
            num += s * w * keep
            den += w * keep
        # math.Round(float64(num) / float64(den)) for 0 <= num < 2**51, den > 0 equals the
        # integer half-away rounding (2·num + den) // (2·den): the float quotient is within
        # one ulp of num/den and cannot cross a .5 boundary unless it lies exactly on one.
        d = np.maximum(den, 1)
        out: IntArray = np.where(den > 0, (2 * num + d) // (2 * d), 0)
        return out


# ----------------------------------------------------------------------------- plugin base
Scorer = LeastAllocatedScorer | RequestedToCapacityRatioScorer


class ResourceAllocationPlugin:
    """resourceAllocationScorer as a Score-only plugin (no PreScore, no NormalizeScore):
    score the node with ``scorer`` over the configured resources."""

    name = ""

    def __init__(self, handle: Handle | None, weights: Sequence[tuple[str, int]], scorer: Scorer) -> None:
        self.handle = handle
        self.resource_names = tuple(n for n, _ in weights)
        self.scorer = scorer
        self._requests_key: StateKey[PodRequests] = StateKey(f"Score{self.name}PodRequests")

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Score-only plugin: nothing it does can make a pod unschedulable.
        return []

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        requests = pod_requests(state, self._requests_key, pod, self.resource_names)
        vectors = [allocatable_requested(node_info, n, r) for n, r in zip(self.resource_names, requests, strict=True)]
        return self.scorer.score(vectors)

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> IntArray:
        requests = pod_requests(state, self._requests_key, pod, self.resource_names)
        vectors = [table_allocatable_requested(table, rows, n, r)
                   for n, r in zip(self.resource_names, requests, strict=True)]
        return self.scorer.score_arrays(vectors, rows.size)
