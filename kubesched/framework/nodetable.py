"""The columnar node table: node state as numpy arrays, for batch filters and scorers.

Row ``i`` is the cache's NodeInfo whose ``index`` is ``i``. Columns are int64:
allocatable and requested cpu/memory/ephemeral-storage, the non-zero requested cpu/memory
used for scoring, allowed and current pod counts, and per scalar resource (extended
resources, hugepages...) allocatable/requested columns created on first use.

Batch plugin methods receive the table and an int array of row indices, and must return
exactly what their per-node method would for each of those rows (a parametrized test
proves it for every built-in batch method). Plugins may cache derived per-row data in
``table.extras`` keyed by their name, invalidated through ``table.node_version``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from kubesched.objects import Node, Pod
from kubesched.objects.resources import is_scalar_resource_name

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
_CPU_MEMORY = frozenset(("cpu", "memory"))


class NodeTable:
    __slots__ = ("capacity", "size", "names", "alloc_cpu", "alloc_mem", "alloc_eph", "alloc_pods",
                 "req_cpu", "req_mem", "req_eph", "nz_cpu", "nz_mem", "pod_count", "unschedulable",
                 "scalar_alloc", "scalar_req", "nodes", "node_version", "extras")

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = max(capacity, 1)
        self.size = 0
        self.names: list[str] = []
        self.nodes: list[Node | None] = []
        n = self.capacity
        self.alloc_cpu = np.zeros(n, np.int64)
        self.alloc_mem = np.zeros(n, np.int64)
        self.alloc_eph = np.zeros(n, np.int64)
        self.alloc_pods = np.zeros(n, np.int64)
        self.req_cpu = np.zeros(n, np.int64)
        self.req_mem = np.zeros(n, np.int64)
        self.req_eph = np.zeros(n, np.int64)
        self.nz_cpu = np.zeros(n, np.int64)
        self.nz_mem = np.zeros(n, np.int64)
        self.pod_count = np.zeros(n, np.int64)
        self.unschedulable = np.zeros(n, np.bool_)
        self.scalar_alloc: dict[str, IntArray] = {}
        self.scalar_req: dict[str, IntArray] = {}
        # Bumped whenever any node object (labels, taints, ...) changes; plugins' derived
        # per-row caches in ``extras`` are valid for one version.
        self.node_version = 0
        self.extras: dict[str, Any] = {}

    _COLUMNS = ("alloc_cpu", "alloc_mem", "alloc_eph", "alloc_pods", "req_cpu", "req_mem", "req_eph",
                "nz_cpu", "nz_mem", "pod_count", "unschedulable")

    def _grow(self) -> None:
        new = self.capacity * 2
        for col in self._COLUMNS:
            old = getattr(self, col)
            arr = np.zeros(new, old.dtype)
            arr[: self.capacity] = old
            setattr(self, col, arr)
        for d in (self.scalar_alloc, self.scalar_req):
            for k, old in d.items():
                arr = np.zeros(new, np.int64)
                arr[: self.capacity] = old
                d[k] = arr
        self.capacity = new

    def scalar_column(self, name: str, *, allocatable: bool) -> IntArray:
        d = self.scalar_alloc if allocatable else self.scalar_req
        col = d.get(name)
        if col is None:
            col = d[name] = np.zeros(self.capacity, np.int64)
        return col

    def add_node(self, node: Node) -> int:
        if self.size == self.capacity:
            self._grow()
        i = self.size
        self.size += 1
        self.names.append(node.meta.name)
        self.nodes.append(None)
        self.set_node(i, node)
        return i

    def set_node(self, i: int, node: Node) -> None:
        a = node.allocatable
        self.nodes[i] = node
        self.names[i] = node.meta.name
        self.alloc_cpu[i] = a.get("cpu", 0)
        self.alloc_mem[i] = a.get("memory", 0)
        self.alloc_eph[i] = a.get("ephemeral-storage", 0)
        self.alloc_pods[i] = a.get("pods", 0)
        self.unschedulable[i] = node.unschedulable
        for col in self.scalar_alloc.values():
            col[i] = 0
        for k, v in a.items():
            if is_scalar_resource_name(k):
                self.scalar_column(k, allocatable=True)[i] = v
        self.node_version += 1

    def clear_row(self, i: int) -> None:
        """Mark a removed node's row as unusable (rows are not compacted)."""
        self.nodes[i] = None
        for col in self._COLUMNS:
            getattr(self, col)[i] = 0
        for d in (self.scalar_alloc, self.scalar_req):
            for arr in d.values():
                arr[i] = 0
        self.node_version += 1

    def add_pod(self, i: int, pod: Pod, sign: int) -> None:
        r = pod.requests
        self.req_cpu[i] += sign * r.get("cpu", 0)
        self.req_mem[i] += sign * r.get("memory", 0)
        eph = r.get("ephemeral-storage")
        if eph:
            self.req_eph[i] += sign * eph
        self.nz_cpu[i] += sign * pod.non_zero_cpu
        self.nz_mem[i] += sign * pod.non_zero_memory
        self.pod_count[i] += sign
        # Any name besides cpu/memory may be a scalar (a pod requesting only an extended
        # resource has a single key).
        if len(r) > 2 or not _CPU_MEMORY.issuperset(r):
            for k, v in r.items():
                if k not in ("cpu", "memory", "ephemeral-storage", "pods") and is_scalar_resource_name(k):
                    self.scalar_column(k, allocatable=False)[i] += sign * v
