"""The columnar node table: node state as numpy arrays, for batch filters and scorers.

Row ``i`` is the cache's NodeInfo whose ``index`` is ``i``. Columns are int64:
allocatable and requested cpu/memory/ephemeral-storage, the non-zero requested cpu/memory
used for scoring, allowed and current pod counts, and per scalar resource (extended
resources, hugepages...) allocatable/requested columns created on first use.

Batch plugin methods receive the table and an int array of row indices, and must return
exactly what their per-node method would for each of those rows (a parametrized test
proves it for every built-in batch method). Plugins may cache derived per-row data in
``table.extras`` keyed by their name, invalidated through ``table.node_version``.

Per-row data derived from a row's pods (matching-pod counts, affinity sums) is kept up to
date through the *change log*: every pod added to or removed from a row, and every node
set or cleared, appends the row to it. A consumer remembers :attr:`NodeTable.log_position`
and later asks :meth:`NodeTable.changed_since` for the rows touched since, so a scheduling
cycle recomputes the rows that changed instead of visiting every row. The log is bounded:
a consumer too far behind gets None and rebuilds from scratch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, TypeVar, cast, overload

import numpy as np
import numpy.typing as npt

from kubesched.framework.types import NodeInfo
from kubesched.objects import Node, Pod
from kubesched.objects.resources import is_scalar_resource_name

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
_CPU_MEMORY = frozenset(("cpu", "memory"))


class NodeTable:
    __slots__ = ("capacity", "size", "names", "alloc_cpu", "alloc_mem", "alloc_eph", "alloc_pods",
                 "req_cpu", "req_mem", "req_eph", "nz_cpu", "nz_mem", "pod_count", "affinity_count",
                 "anti_affinity_count", "unschedulable", "scalar_alloc", "scalar_req", "nodes", "node_version",
                 "extras", "name_array", "_log", "_log_base")

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = max(capacity, 1)
        self.size = 0
        self.names: list[str] = []
        self.nodes: list[Node | None] = []
        n = self.capacity
        # ``names`` as an object array, for gathering the names of many rows at once.
        self.name_array = np.empty(n, object)
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
        # Pods with any (anti-)affinity (NodeInfo.pods_with_affinity) and with required
        # pod anti-affinity (pods_with_required_anti_affinity), per row.
        self.affinity_count = np.zeros(n, np.int64)
        self.anti_affinity_count = np.zeros(n, np.int64)
        self.unschedulable = np.zeros(n, np.bool_)
        self.scalar_alloc: dict[str, IntArray] = {}
        self.scalar_req: dict[str, IntArray] = {}
        # Bumped whenever any node object (labels, taints, ...) changes; plugins' derived
        # per-row caches in ``extras`` are valid for one version.
        self.node_version = 0
        self.extras: dict[str, Any] = {}
        # The change log: rows whose pods or node changed, oldest first; _log[0] is entry
        # number _log_base of the whole history.
        self._log: list[int] = []
        self._log_base = 0

    _COLUMNS = ("alloc_cpu", "alloc_mem", "alloc_eph", "alloc_pods", "req_cpu", "req_mem", "req_eph",
                "nz_cpu", "nz_mem", "pod_count", "affinity_count", "anti_affinity_count", "unschedulable")
    # Entries the change log keeps at least (see _log_limit).
    LOG_MIN = 1 << 14

    # ---- change log
    @property
    def log_position(self) -> int:
        """The number of changes so far: pass it to :meth:`changed_since` later."""
        return self._log_base + len(self._log)

    def changed_since(self, position: int) -> list[int] | None:
        """The rows changed (pods added or removed, node set or cleared) since
        ``position`` (a former :attr:`log_position`), in order and possibly repeated; None
        when the log no longer reaches back that far (the caller must rebuild)."""
        if position < self._log_base:
            return None
        return self._log[position - self._log_base:]

    def _log_limit(self) -> int:
        """The change log keeps between this many entries and twice as many: a consumer
        further behind than that has more changes to replay than the table has rows, and
        rebuilds instead."""
        return max(self.LOG_MIN, self.capacity)

    def _touch(self, i: int) -> None:
        log = self._log
        log.append(i)
        if len(log) >= 2 * self._log_limit():
            half = len(log) // 2
            del log[:half]
            self._log_base += half

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
        names = np.empty(new, object)
        names[: self.capacity] = self.name_array
        self.name_array = names
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
        self.names[i] = self.name_array[i] = node.meta.name
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
        self._touch(i)

    def clear_row(self, i: int) -> None:
        """Mark a removed node's row as unusable (rows are not compacted)."""
        self.nodes[i] = None
        for col in self._COLUMNS:
            getattr(self, col)[i] = 0
        for d in (self.scalar_alloc, self.scalar_req):
            for arr in d.values():
                arr[i] = 0
        self.node_version += 1
        self._touch(i)

    def pod_changed(self, i: int) -> None:
        """A pod on row ``i`` changed in what the columns do not hold (its labels): the change
        log names the row, so the caches following it look at the row again."""
        self._touch(i)

    def add_pod(self, i: int, pod: Pod, sign: int, *, affinity: bool = False, anti_affinity: bool = False) -> None:
        """Count ``pod`` on row ``i`` (sign 1) or remove it (sign -1); ``affinity`` /
        ``anti_affinity``: it is one of the node's pods with affinity / with required
        anti-affinity."""
        self._touch(i)
        if affinity:
            self.affinity_count[i] += sign
        if anti_affinity:
            self.anti_affinity_count[i] += sign
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


# ---- runs of consecutive rows
# Row numbers 0, 1, 2, ... (read-only). When the scheduler's node order is the table's own (nodes
# added in node-tree order, as a cluster's first LIST usually is), the rows it hands to batch
# methods are slices of this array: ``row_span`` recognises them in O(1), and a column is then
# read as a slice instead of a gather (a gather of thousands of rows spread over a large table
# misses the cache on nearly every row).
_IDENTITY: IntArray = np.zeros(0, np.int64)
_Arr = TypeVar("_Arr", bound="np.ndarray[Any, Any]")


def identity_rows(n: int) -> IntArray:
    """Rows 0 .. n-1 as a read-only view that :func:`row_span` recognises (and slices of it)."""
    global _IDENTITY
    if len(_IDENTITY) < n:
        grown = np.arange(max(n, 2 * len(_IDENTITY), 1024), dtype=np.int64)
        grown.flags.writeable = False
        _IDENTITY = grown
    return _IDENTITY[:n]


def row_span(rows: IntArray) -> tuple[int, int] | None:
    """(lo, hi) when ``rows`` is exactly lo, lo+1, ..., hi-1 as a slice of
    :func:`identity_rows`; None otherwise (including for equal values in another array:
    only the identity's slices are known without reading them)."""
    if rows.base is not _IDENTITY or rows.ndim != 1 or rows.strides[0] != 8 or not len(rows):
        return None
    lo = int(rows[0])
    return lo, lo + len(rows)


def take_rows(col: _Arr, rows: IntArray) -> _Arr:
    """``col[rows]`` (a new array), copied from a slice when ``rows`` is a run of consecutive rows."""
    span = row_span(rows)
    if span is None:
        return cast(_Arr, col[rows])
    return cast(_Arr, col[span[0]:span[1]].copy())


def read_rows(col: _Arr, rows: IntArray) -> _Arr:
    """``col[rows]`` for reading only: a view of ``col`` when ``rows`` is a run of consecutive rows."""
    span = row_span(rows)
    if span is None:
        return cast(_Arr, col[rows])
    return cast(_Arr, col[span[0]:span[1]])


class RowNodes(Sequence[NodeInfo]):
    """The NodeInfos of some table rows, in the order of ``rows``, looked up only when read:
    ``nodes[i] is by_row[rows[i]]``. The scheduler hands its feasible nodes to PreScore and
    Score this way, so that batch scorers take ``rows`` as they are instead of reading
    ``index`` off thousands of NodeInfos. A node removed from the cache before it is read
    (a report looking at an old attempt) reads as a NodeInfo with its name only."""

    __slots__ = ("table", "rows", "_by_row", "_list")

    def __init__(self, table: NodeTable, rows: IntArray, by_row: Sequence[NodeInfo | None]) -> None:
        self.table = table
        self.rows = rows
        self._by_row = by_row
        self._list: list[NodeInfo] | None = None

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, i: int) -> NodeInfo: ...

    @overload
    def __getitem__(self, i: slice) -> list[NodeInfo]: ...

    def __getitem__(self, i: int | slice) -> NodeInfo | list[NodeInfo]:
        if isinstance(i, slice):
            return self.as_list()[i]
        r = int(self.rows[i])
        ni = self._by_row[r]
        return ni if ni is not None else self._removed(r)

    def as_list(self) -> list[NodeInfo]:
        if self._list is None:
            by_row = self._by_row
            out = [by_row[r] for r in self.rows.tolist()]
            if None in out:
                out = [ni if ni is not None else self._removed(r) for ni, r in zip(out, self.rows.tolist(), strict=True)]
            self._list = cast("list[NodeInfo]", out)
        return self._list

    def _removed(self, row: int) -> NodeInfo:
        ni = NodeInfo()
        ni.name = self.table.names[row]
        ni.index = row
        return ni

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self.as_list())

    def names(self) -> list[str]:
        """The node names, from the table (valid even after a node is removed)."""
        out: list[str] = self.table.name_array[self.rows].tolist()
        return out

    def __repr__(self) -> str:
        return f"RowNodes({len(self.rows)} rows)"
