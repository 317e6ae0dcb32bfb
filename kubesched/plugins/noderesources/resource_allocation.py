"""The scoring core shared by NodeResourcesFit and NodeResourcesBalancedAllocation.

Mirrors noderesources/resource_allocation.go (resourceAllocationScorer: score,
calculateResourceAllocatableRequest, calculatePodResourceRequest), least_allocated.go,
most_allocated.go, requested_to_capacity_ratio.go and helper/shape_score.go.

Every strategy exists twice: over Python ints for one node (the reference, shaped like the
Go code) and over numpy arrays for many nodes of the NodeTable (the hot path, no Python
loop over rows). Both use the same integer arithmetic (Go int64 division of non-negative
values, Go truncation of negative shape slopes) and the same float64 operations in the
same order (RequestedToCapacityRatio's final math.Round is done in integers in the batch
path, provably equal), so they agree exactly; a parametrized test proves it on random
clusters.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesched.config.args import ResourceSpec, UtilizationShapePoint
from kubesched.framework import MAX_NODE_SCORE, NodeInfo, NodeTable, Status
from kubesched.framework.interfaces import BoolArray, IntArray
from kubesched.framework.nodetable import identity_rows, row_span, take_rows
from kubesched.framework.signers import RESOURCES_SIGNER_NAME, SignFragment
from kubesched.objects import Pod
from kubesched.objects.resources import is_scalar_resource_name
from kubesched.plugins.helpers.gomath import go_div, go_round
from kubesched.plugins.helpers.shape_score import MAX_UTILIZATION, broken_linear, broken_linear_table, scale_shape

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"


FloatArray = npt.NDArray[np.float64]


# ----------------------------------------------------------------------------- pod / node side
def pod_resource_request_list(pod: Pod, resources: Sequence[ResourceSpec], use_requested: bool) -> tuple[int, ...]:
    """calculatePodResourceRequestList: the pod's request for each configured resource.

    Fit scoring (use_requested=False) uses PodRequests with cpu=100m / memory=200Mi given to
    every container that lacks the key (``pod.score_requests``); BalancedAllocation uses the
    plain PodRequests (``pod.requests``). Both include init containers, sidecars and overhead.
    """
    reqs = pod.requests if use_requested else pod.score_requests
    return tuple(reqs.get(r.name, 0) for r in resources)


def allocatable_request(node_info: NodeInfo, name: str, pod_request: int, use_requested: bool) -> tuple[int, int]:
    """calculateResourceAllocatableRequest: (allocatable, requested incl. the pod) of one
    resource on a node; (0, 0) means "leave this resource out".

    cpu and memory use NonZeroRequested unless ``use_requested``; ephemeral-storage and
    scalar resources always use Requested. A scalar resource the pod does not request, or
    one the node does not list in its allocatable, is left out.
    """
    if pod_request == 0 and is_scalar_resource_name(name):
        return 0, 0
    requested = node_info.requested if use_requested else node_info.non_zero_requested
    alloc = node_info.allocatable
    if name == CPU:
        return alloc.milli_cpu, requested.milli_cpu + pod_request
    if name == MEMORY:
        return alloc.memory, requested.memory + pod_request
    if name == EPHEMERAL_STORAGE:
        return alloc.ephemeral_storage, node_info.requested.ephemeral_storage + pod_request
    if name in alloc.scalar:
        return alloc.scalar[name], node_info.requested.scalar.get(name, 0) + pod_request
    return 0, 0


def node_vectors(node_info: NodeInfo, resources: Sequence[ResourceSpec], pod_requests: Sequence[int],
                 use_requested: bool) -> tuple[list[int], list[int]]:
    """resourceAllocationScorer.score's loop: (requested, allocatable), both 0 where the
    resource is left out (alloc == 0)."""
    requested = [0] * len(resources)
    allocatable = [0] * len(resources)
    for i, r in enumerate(resources):
        alloc, req = allocatable_request(node_info, r.name, pod_requests[i], use_requested)
        if alloc == 0:
            continue
        allocatable[i] = alloc
        requested[i] = req
    return requested, allocatable


class RowSelection:
    """How a batch method reads table columns for ``rows``.

    A run of consecutive rows (framework.nodetable.row_span) is read as column slices. When
    most of the table is asked for, columns are read as views over ``[:size]`` and the result
    is indexed by ``rows`` once at the end (one gather instead of one per column); otherwise
    each column is gathered by ``rows``. take() may return a view: never write into it.
    """

    __slots__ = ("rows", "full", "n", "lo", "hi")

    def __init__(self, table: NodeTable, rows: IntArray) -> None:
        self.rows = rows
        span = row_span(rows)
        if span is not None:
            self.lo, self.hi = span
            self.full = False
            self.n = len(rows)
        else:
            self.lo = self.hi = -1
            self.n = table.size
            self.full = 2 * len(rows) >= self.n

    def take(self, col: IntArray) -> IntArray:
        if self.hi >= 0:
            return col[self.lo:self.hi]
        return col[: self.n] if self.full else col[self.rows]

    @property
    def size(self) -> int:
        """Length of the arrays take() returns."""
        return self.n if self.full else len(self.rows)

    def result(self, values: IntArray) -> IntArray:
        return values[self.rows] if self.full else values


def table_vectors(table: NodeTable, sel: RowSelection, resources: Sequence[ResourceSpec], pod_requests: Sequence[int],
                  use_requested: bool, added: Sequence[int | IntArray] | None = None
                  ) -> list[tuple[IntArray, IntArray] | None]:
    """allocatable_request over table rows: per resource (allocatable, requested) arrays,
    or None when the resource is left out on every row (unrequested scalar, unknown name,
    or a scalar no node lists). ``added``: what is added to each requested column instead of
    the pod's request (a (k, 1) array gives k rows of requested values per resource)."""
    out: list[tuple[IntArray, IntArray] | None] = []
    adds = pod_requests if added is None else added
    for r, p, add in zip(resources, pod_requests, adds, strict=True):
        name = r.name
        if p == 0 and is_scalar_resource_name(name):
            out.append(None)
        elif name == CPU:
            out.append((sel.take(table.alloc_cpu), sel.take(table.req_cpu if use_requested else table.nz_cpu) + add))
        elif name == MEMORY:
            out.append((sel.take(table.alloc_mem), sel.take(table.req_mem if use_requested else table.nz_mem) + add))
        elif name == EPHEMERAL_STORAGE:
            out.append((sel.take(table.alloc_eph), sel.take(table.req_eph) + add))
        elif is_scalar_resource_name(name) and name in table.scalar_alloc:
            # Rows whose node lacks the key hold 0 there, which leaves the resource out
            # exactly like a missing allocatable key does.
            req_col = table.scalar_req.get(name)
            used = sel.take(req_col) + add if req_col is not None else np.zeros(sel.size, np.int64) + add
            out.append((sel.take(table.scalar_alloc[name]), used))
        else:
            out.append(None)
    return out


def row_vectors(table: NodeTable, i: int, resources: Sequence[ResourceSpec], pod_requests: Sequence[int],
                use_requested: bool, added: Sequence[int] | None = None) -> tuple[list[int], list[int]]:
    """table_vectors for one row, shaped as node_vectors: (requested, allocatable), both 0
    where the resource is left out (unrequested scalar, unknown name, allocatable 0)."""
    requested = [0] * len(resources)
    allocatable = [0] * len(resources)
    adds = pod_requests if added is None else added
    for k, (r, p, add) in enumerate(zip(resources, pod_requests, adds, strict=True)):
        name = r.name
        if p == 0 and is_scalar_resource_name(name):
            continue
        if name == CPU:
            alloc, used = table.alloc_cpu.item(i), (table.req_cpu if use_requested else table.nz_cpu).item(i)
        elif name == MEMORY:
            alloc, used = table.alloc_mem.item(i), (table.req_mem if use_requested else table.nz_mem).item(i)
        elif name == EPHEMERAL_STORAGE:
            alloc, used = table.alloc_eph.item(i), table.req_eph.item(i)
        elif is_scalar_resource_name(name) and name in table.scalar_alloc:
            alloc = table.scalar_alloc[name].item(i)
            req_col = table.scalar_req.get(name)
            used = req_col.item(i) if req_col is not None else 0
        else:
            continue
        if alloc == 0:
            continue
        allocatable[k] = alloc
        requested[k] = used + add
    return requested, allocatable


class RowScores:
    """A resource scorer's result on every table row for one pod request vector, kept while
    the table's change log leaves the row alone.

    The pods of one template (a Deployment's replicas, a Job's pods) ask the same vector again
    and again, and between two of them only the rows where pods were bound or deleted change.
    The first pod of a vector is scored on its own rows; from the second on, every row is
    scored once, then only the rows the change log names (one by one when few: numpy's cost
    per call is larger than a row's). Results equal the row-by-row computation exactly, as
    both functions given must.
    """

    __slots__ = ("limit", "_kept", "_seen")

    # Stale rows recomputed one by one up to this many.
    PER_ROW = 16

    def __init__(self, limit: int = 8) -> None:
        self.limit = limit
        self._kept: OrderedDict[Hashable, _KeptScores] = OrderedDict()
        self._seen: OrderedDict[Hashable, None] = OrderedDict()

    def scores(self, table: NodeTable, rows: IntArray, key: Hashable,
               score_rows: Callable[[IntArray], IntArray], score_row: Callable[[int], int]) -> IntArray:
        """The scores of ``rows``: ``score_rows(rows)`` over many rows (in their order) and
        ``score_row(i)`` for one row must give the same values."""
        kept = self._kept.get(key)
        if kept is None or kept.table is not table:
            if key not in self._seen:
                self._seen[key] = None
                if len(self._seen) > 4 * self.limit:
                    self._seen.popitem(last=False)
                return score_rows(rows)
            kept = _KeptScores(table)
            kept.values[: table.size] = score_rows(identity_rows(table.size))
            self._kept[key] = kept
            if len(self._kept) > self.limit:
                self._kept.popitem(last=False)
        else:
            self._kept.move_to_end(key)
            position = table.log_position
            if position != kept.position:
                changed = table.changed_since(kept.position)
                kept.position = position
                self._refresh(kept, changed, score_rows, score_row)
        return take_rows(kept.values, rows)

    def _refresh(self, kept: _KeptScores, changed: list[int] | None, score_rows: Callable[[IntArray], IntArray],
                 score_row: Callable[[int], int]) -> None:
        table = kept.table
        size = table.size
        if len(kept.values) < table.capacity:
            kept.values = np.concatenate((kept.values, np.zeros(table.capacity - len(kept.values), np.int64)))
        if changed is None:
            kept.values[:size] = score_rows(identity_rows(size))
        elif len(changed) <= self.PER_ROW:
            values = kept.values
            for i in set(changed):
                if i < size:  # a removed node's row holds zeros: its value is never read
                    values[i] = score_row(i)
        else:
            stale = np.unique(np.asarray(changed, np.int64))
            stale = stale[stale < size]
            kept.values[stale] = score_rows(stale)


class _KeptScores:
    """RowScores' values for one vector, as of the table's change log ``position``."""

    __slots__ = ("table", "position", "values")

    def __init__(self, table: NodeTable) -> None:
        self.table = table
        self.position = table.log_position
        self.values = np.zeros(table.capacity, np.int64)


class _WeightSum:
    """Σw over the resources kept per row, as a scalar plus per-row corrections for rows
    where a resource is left out (alloc == 0) — rare, so usually no array at all."""

    __slots__ = ("total", "missing")

    def __init__(self) -> None:
        self.total = 0
        self.missing: IntArray | None = None

    def add(self, weight: int, alloc: IntArray) -> IntArray:
        """Count ``weight`` where alloc != 0; returns alloc as a divisor (zeros -> 1)."""
        self.total += weight
        zero = alloc == 0
        if not zero.any():
            return alloc
        self.missing = weight * zero if self.missing is None else self.missing + weight * zero
        divisor: IntArray = alloc | zero
        return divisor

    def array(self, size: int) -> IntArray:
        if self.missing is None:
            return np.full(size, self.total, np.int64)
        out: IntArray = self.total - self.missing
        return out


def _mean(num: IntArray, den: _WeightSum) -> IntArray:
    """Σ(s·w) / Σw with Go int division (both non-negative), 0 where Σw == 0."""
    if den.missing is None:
        if den.total == 0:
            return np.zeros(len(num), np.int64)
        num //= den.total
        return num
    out: IntArray = num // np.maximum(den.array(len(num)), 1)
    return out


# ----------------------------------------------------------------------------- strategies
class Scorer:
    """A scoring strategy over (requested, allocatable) vectors in resource order."""

    def __init__(self, resources: Sequence[ResourceSpec]) -> None:
        self.weights = tuple(r.weight for r in resources)

    def score(self, requested: Sequence[int], allocatable: Sequence[int]) -> int:
        raise NotImplementedError

    def score_arrays(self, vectors: Sequence[tuple[IntArray, IntArray] | None], size: int) -> IntArray:
        raise NotImplementedError


class LeastAllocatedScorer(Scorer):
    """least_allocated.go: Σ w·((alloc − used)·100 / alloc) / Σw, a resource scoring 0
    when over-committed; resources with alloc == 0 are left out."""

    def score(self, requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for i, alloc in enumerate(allocatable):
            if alloc == 0:
                continue
            used = requested[i]
            s = 0 if used > alloc else go_div((alloc - used) * MAX_NODE_SCORE, alloc)
            node_score += s * self.weights[i]
            weight_sum += self.weights[i]
        return 0 if weight_sum == 0 else go_div(node_score, weight_sum)

    def score_arrays(self, vectors: Sequence[tuple[IntArray, IntArray] | None], size: int) -> IntArray:
        num = np.zeros(size, np.int64)
        den = _WeightSum()
        for w, v in zip(self.weights, vectors, strict=True):
            if v is None:
                continue
            alloc, used = v
            divisor = den.add(w, alloc)
            # max(alloc − used, 0) is 0 when over-committed, and on alloc == 0 rows (used >= 0);
            # the operands are non-negative, so // is Go's division.
            s = alloc - used
            np.maximum(s, 0, out=s)
            s *= MAX_NODE_SCORE
            s //= divisor
            if w != 1:
                s *= w
            num += s
        return _mean(num, den)


class MostAllocatedScorer(Scorer):
    """most_allocated.go: Σ w·(min(used, alloc)·100 / alloc) / Σw."""

    def score(self, requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for i, alloc in enumerate(allocatable):
            if alloc == 0:
                continue
            used = min(requested[i], alloc)
            node_score += go_div(used * MAX_NODE_SCORE, alloc) * self.weights[i]
            weight_sum += self.weights[i]
        return 0 if weight_sum == 0 else go_div(node_score, weight_sum)

    def score_arrays(self, vectors: Sequence[tuple[IntArray, IntArray] | None], size: int) -> IntArray:
        num = np.zeros(size, np.int64)
        den = _WeightSum()
        for w, v in zip(self.weights, vectors, strict=True):
            if v is None:
                continue
            alloc, used = v
            divisor = den.add(w, alloc)
            s = np.minimum(used, alloc)  # 0 on alloc == 0 rows (used >= 0)
            s *= MAX_NODE_SCORE
            s //= divisor
            if w != 1:
                s *= w
            num += s
        return _mean(num, den)


class RequestedToCapacityRatioScorer(Scorer):
    """requested_to_capacity_ratio.go: per resource f(utilization) on the shape scaled to
    0..100; only resources with f > 0 enter the weighted mean, which is math.Round-ed."""

    def __init__(self, resources: Sequence[ResourceSpec], shape: Sequence[UtilizationShapePoint]) -> None:
        super().__init__(resources)
        self.shape = scale_shape(shape)
        # Utilization is always an integer in [0, 100] here, so f is a 101-entry table.
        self.table = broken_linear_table(self.shape)

    def resource_score(self, requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return broken_linear(self.shape, MAX_UTILIZATION)
        return broken_linear(self.shape, go_div(requested * MAX_UTILIZATION, capacity))

    def score(self, requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for i, alloc in enumerate(allocatable):
            if alloc == 0:
                continue
            s = self.resource_score(requested[i], alloc)
            if s > 0:
                node_score += s * self.weights[i]
                weight_sum += self.weights[i]
        if weight_sum == 0:
            return 0
        return go_round(float(node_score) / float(weight_sum))

    def score_arrays(self, vectors: Sequence[tuple[IntArray, IntArray] | None], size: int) -> IntArray:
        num = np.zeros(size, np.int64)
        den = np.zeros(size, np.int64)
        for w, v in zip(self.weights, vectors, strict=True):
            if v is None:
                continue
            alloc, used = v
            zero = alloc == 0
            # min(used, alloc)·100 / alloc is 100 exactly when used >= alloc (Go's "requested >
            # capacity -> maxUtilization" included), and in [0, 100] otherwise.
            util = np.minimum(used, alloc)
            util *= MAX_UTILIZATION
            util //= alloc | zero
            s = self.table[util]
            keep = s > 0
            if zero.any():
                keep &= ~zero
                s = s * keep
            num += s * w
            den += keep * w
        # math.Round(float64(num) / float64(den)) for 0 <= num < 2**51, den > 0 is exactly the
        # integer half-away rounding (2·num + den) // (2·den): a float quotient within one ulp
        # of a/b cannot cross a .5 boundary, which is at least 1/(2·den) away unless hit exactly.
        d = np.maximum(den, 1)
        out: IntArray = (2 * num + d) // (2 * d)
        return out


def balanced_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """balanced_allocation.go: balancedResourceScorer. fraction = used / alloc (float64,
    capped at 1) per resource with alloc != 0; std is |f0 − f1| / 2 for two resources, the
    population standard deviation for more, 0 otherwise; score = int64((1 − std)·100)."""
    fractions: list[float] = []
    total = 0.0
    for i, alloc in enumerate(allocatable):
        if alloc == 0:
            continue
        fraction = float(requested[i]) / float(alloc)
        if fraction > 1:
            fraction = 1.0
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / float(len(fractions))
        acc = 0.0
        for f in fractions:
            acc = acc + (f - mean) * (f - mean)
        std = math.sqrt(acc / float(len(fractions)))
    return int((1 - std) * float(MAX_NODE_SCORE))


def balanced_score_arrays(vectors: Sequence[tuple[IntArray, IntArray] | None], size: int) -> IntArray:
    """balanced_score over arrays: the same float64 operations in the same order per row
    (adding 0.0 for a left-out resource is an exact identity)."""
    present = [v for v in vectors if v is not None]
    if len(present) == 2 and all(bool(alloc.all()) for alloc, _ in present):
        # The usual cpu + memory case with no zero allocatable: std = |(f0 − f1) / 2|.
        (a0, u0), (a1, u1) = present
        f0 = np.minimum(u0 / a0, 1.0)
        d = np.minimum(u1 / a1, 1.0)
        np.subtract(f0, d, out=d)
        d /= 2
        np.abs(d, out=d)
        return _balanced_result(d)
    if any(used.ndim > 1 for _, used in present):
        # Several rows of requested values (table_vectors' ``added``): one row at a time.
        k = next(used.shape[0] for _, used in present)
        return np.stack([balanced_score_arrays([None if v is None else (v[0], v[1][j]) for v in vectors], size)
                         for j in range(k)])
    count = np.zeros(size, np.int64)
    first = np.zeros(size, np.float64)
    second = np.zeros(size, np.float64)
    fracs: list[tuple[FloatArray, BoolArray]] = []
    for alloc, used in present:
        valid = alloc != 0
        f = np.minimum(used / (alloc | ~valid), 1.0)
        np.copyto(first, f, where=valid & (count == 0))
        np.copyto(second, f, where=valid & (count == 1))
        if len(present) > 2:
            fracs.append((np.where(valid, f, 0.0), valid))
        count += valid
    std = np.where(count == 2, np.abs((first - second) / 2), 0.0)
    if fracs:
        total = np.zeros(size, np.float64)
        for f, _ in fracs:
            total = total + f
        n = np.maximum(count, 1).astype(np.float64)
        mean = total / n
        acc = np.zeros(size, np.float64)
        for f, valid in fracs:
            dev = f - mean
            acc = acc + np.where(valid, dev * dev, 0.0)
        std = np.where(count > 2, np.sqrt(acc / n), std)
    return _balanced_result(std)


def _balanced_result(std: FloatArray) -> IntArray:
    """int64((1 − std) · MaxNodeScore), truncating like Go."""
    out = 1 - std
    out *= float(MAX_NODE_SCORE)
    return out.astype(np.int64)


@dataclass(frozen=True, slots=True)
class PreScoreState:
    """The pod's request per configured resource (preScoreState / balancedAllocation
    preScoreState). Immutable, so clone() shares it."""

    pod_requests: tuple[int, ...]

    def clone(self) -> PreScoreState:
        return self


# ----------------------------------------------------------------------------- signing
_NATIVE_SIGNED = (CPU, MEMORY, EPHEMERAL_STORAGE)
_NOT_SIGNABLE_DRA = "signature disabled when dra extended resources are used in the cluster"


def sign_resources(pod: Pod, dra_names: Callable[[], frozenset[str] | None]) -> list[SignFragment] | Status:
    """Fit's and BalancedAllocation's SignPod (OpportunisticBatching): computePodResourceRequest
    (PodRequests into a framework.Resource by SetMaxResource: milli-CPU, memory, ephemeral
    storage, AllowedPodNumber 0 and the scalar resources, zero-valued ones included, nil when
    none). Not signable when DRAExtendedResource is on and a requested (non-zero) resource is
    one the DeviceClassResolver maps (shouldDelegateResourceToDRA with no node): DRA then
    decides per node. ``dra_names`` gives the mapped names (None: the gate is off); it is
    called only for a pod with a non-zero scalar request."""
    requests = pod.requests
    scalar = {n: v for n, v in requests.items() if n not in _NATIVE_SIGNED and is_scalar_resource_name(n)}
    if any(v != 0 for v in scalar.values()):
        mapped = dra_names()
        if mapped and any(v != 0 and n in mapped for n, v in scalar.items()):
            return Status.unschedulable(_NOT_SIGNABLE_DRA)
    value = {"MilliCPU": requests.get(CPU, 0), "Memory": requests.get(MEMORY, 0),
             "EphemeralStorage": requests.get(EPHEMERAL_STORAGE, 0), "AllowedPodNumber": 0,
             "ScalarResources": scalar or None}
    return [SignFragment(RESOURCES_SIGNER_NAME, value)]
