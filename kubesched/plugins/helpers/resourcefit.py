"""NodeResourcesFit's fitsRequest as arithmetic on a vector of free amounts.

Callers that simulate removing or adding pods on a node (DefaultPreemption's dry run, the
scheduler's filtering with nominated pods) use it instead of cloning NodeInfos and running
the Filter chain: a node's *free vector* is ``allocatable - requested`` for every resource
fitsRequest checks for the incoming pod, a pod's *usage vector* is what NodeInfo.AddPod adds
to ``requested`` for them; removing a pod adds its usage back to the free vector.

The checks, their order and the reasons are fitsRequest's (noderesources/fit.go, v1.30):

* ``pods`` always: insufficient when ``len(pods) + 1 > allowedPodNumber`` ("Too many pods");
* then, only for what the pod requests: ``cpu``, ``memory``, ``ephemeral-storage`` when the
  request is > 0, and each scalar resource (extended, hugepages-*, ...) in the pod's request
  order when its request is non-zero and not ignored (ignoredResources,
  ignoredResourceGroups): insufficient when ``request > allocatable - requested``,
  reason ``Insufficient <name>``.

A pod whose request is empty is checked for the pod count only, as in fitsRequest (an empty
request has no positive cpu/memory/ephemeral-storage and no scalar at all). NodeResourcesFit
builds its :class:`ResourceFit` from its own PreFilter state and ignore rules
(``Fit.preemption_resource_fit``), so the list of checks is the plugin's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kubesched.framework import NodeInfo, NodeTable, Status
from kubesched.framework.interfaces import IntArray
from kubesched.framework.nodetable import read_rows
from kubesched.objects import Pod

PODS = "pods"
REASON_TOO_MANY_PODS = "Too many pods"
_NATIVE_COLUMNS = {"cpu": ("alloc_cpu", "req_cpu"), "memory": ("alloc_mem", "req_mem"),
                   "ephemeral-storage": ("alloc_eph", "req_eph")}


@dataclass(frozen=True, slots=True)
class ResourceFit:
    """fitsRequest for one incoming pod: ``names[i]`` is checked with ``need[i]`` and
    reported as ``reasons[i]``. Entry 0 is always the pod count (need 1)."""

    names: tuple[str, ...]
    need: tuple[int, ...]
    reasons: tuple[str, ...]
    # 1.36 fitsRequest: a node whose allocatable itself is below a request is unresolvable.
    oversize_unresolvable: bool = False
    _statuses: dict[tuple[tuple[str, ...], bool], Status] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, milli_cpu: int, memory: int, ephemeral_storage: int,
           scalars: Sequence[tuple[str, int]], *, oversize_unresolvable: bool = False) -> ResourceFit:
        """The checks for a pod requesting ``milli_cpu``, ``memory``, ``ephemeral_storage``
        and ``scalars`` — the scalar resources fitsRequest checks, in its order: non-zero
        and not ignored (the caller applies its ignore rules)."""
        names: list[str] = [PODS]
        need: list[int] = [1]
        for name, q in (("cpu", milli_cpu), ("memory", memory), ("ephemeral-storage", ephemeral_storage)):
            if q > 0:
                names.append(name)
                need.append(q)
        for name, q in scalars:
            if q != 0:
                names.append(name)
                need.append(q)
        reasons = tuple(REASON_TOO_MANY_PODS if n == PODS else f"Insufficient {n}" for n in names)
        return cls(tuple(names), tuple(need), reasons, oversize_unresolvable)

    # ---- one node
    def free(self, node_info: NodeInfo) -> list[int]:
        """allocatable - requested of every checked resource (pods: allowed - len(pods))."""
        alloc = node_info.allocatable
        used = node_info.requested
        out = [alloc.allowed_pod_number - len(node_info.pods)]
        for name in self.names[1:]:
            if name == "cpu":
                out.append(alloc.milli_cpu - used.milli_cpu)
            elif name == "memory":
                out.append(alloc.memory - used.memory)
            elif name == "ephemeral-storage":
                out.append(alloc.ephemeral_storage - used.ephemeral_storage)
            else:
                out.append(alloc.scalar.get(name, 0) - used.scalar.get(name, 0))
        return out

    def alloc(self, node_info: NodeInfo) -> list[int]:
        """The allocatable of every checked resource (pods: allowed pod number)."""
        a = node_info.allocatable
        out = [a.allowed_pod_number]
        for name in self.names[1:]:
            if name == "cpu":
                out.append(a.milli_cpu)
            elif name == "memory":
                out.append(a.memory)
            elif name == "ephemeral-storage":
                out.append(a.ephemeral_storage)
            else:
                out.append(a.scalar.get(name, 0))
        return out

    def table_alloc(self, table: NodeTable, rows: IntArray) -> IntArray:
        """:meth:`alloc` of each row, shape (len(names), len(rows))."""
        out = np.empty((len(self.names), len(rows)), np.int64)
        out[0] = read_rows(table.alloc_pods, rows)
        for i, name in enumerate(self.names[1:], 1):
            cols = _NATIVE_COLUMNS.get(name)
            if cols is not None:
                out[i] = read_rows(getattr(table, cols[0]), rows)
            else:
                col = table.scalar_alloc.get(name)
                out[i] = read_rows(col, rows) if col is not None else 0
        return out

    def oversize(self, alloc: Sequence[int] | None) -> bool:
        """Whether a request (not the pod count) exceeds the node's allocatable, when that
        makes the status unresolvable (1.36) and ``alloc`` is known."""
        if not self.oversize_unresolvable or alloc is None:
            return False
        return any(q > a for q, a in zip(self.need[1:], alloc[1:], strict=True))

    def usage(self, pod: Pod) -> list[int]:
        """What NodeInfo.AddPod adds to ``requested`` (and the pod count) for the checked
        resources: the pod's PodRequests (cpu in milli-units)."""
        r: Mapping[str, int] = pod.requests
        out = [1]
        for name in self.names[1:]:
            out.append(r.get(name, 0))
        return out

    def insufficient(self, free: Sequence[int]) -> tuple[str, ...]:
        """The reasons of every check ``free`` fails, in fitsRequest's order."""
        return tuple(r for r, q, f in zip(self.reasons, self.need, free, strict=True) if q > f)

    def status(self, free: Sequence[int], alloc: Sequence[int] | None = None) -> Status | None:
        """None when the pod fits, else the status NodeResourcesFit's Filter returns (before
        the framework sets the plugin name): Unschedulable, or in 1.36 UnschedulableAndUnresolvable
        when a request exceeds the node's allocatable ``alloc``."""
        reasons = self.insufficient(free)
        if not reasons:
            return None
        over = self.oversize(alloc)
        s = self._statuses.get((reasons, over))
        if s is None:
            s = self._statuses[(reasons, over)] = Status.unresolvable(*reasons) if over else Status.unschedulable(*reasons)
        return s

    # ---- many nodes (NodeTable rows)
    def table_free(self, table: NodeTable, rows: IntArray) -> IntArray:
        """:meth:`free` of each row: an int64 array of shape (len(names), len(rows))."""
        out = np.empty((len(self.names), len(rows)), np.int64)
        out[0] = read_rows(table.alloc_pods, rows) - read_rows(table.pod_count, rows)
        for i, name in enumerate(self.names[1:], 1):
            cols = _NATIVE_COLUMNS.get(name)
            if cols is not None:
                out[i] = read_rows(getattr(table, cols[0]), rows) - read_rows(getattr(table, cols[1]), rows)
                continue
            alloc_col = table.scalar_alloc.get(name)
            req_col = table.scalar_req.get(name)
            out[i] = read_rows(alloc_col, rows) if alloc_col is not None else 0
            if req_col is not None:
                out[i] -= read_rows(req_col, rows)
        return out
