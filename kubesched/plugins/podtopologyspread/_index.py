"""Per-row data PodTopologySpread derives from the node table, cached across cycles.

- :class:`TopologyIndex` (one ``table.node_version``): per topology key, each row's value id
  (-1 when the node lacks the key) and the value vocabulary; per-row taint signatures;
  per-pod node-affinity masks.
- :class:`PodCounts`: per (namespace, selector), each row's number of matching pods
  (countPodsMatchSelector). Rows are recounted only when the table's change log says they
  changed (a pod added or removed, or the node updated), so a cycle recounts the nodes that
  changed since the previous one instead of visiting every pod or node in Python.

Upstream recomputes all of this in every PreFilter/PreScore; the cache changes the cost,
never the result.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesched.framework import NodeInfo, NodeTable
from kubesched.objects import NodeSelector, Pod, Taint, Toleration
from kubesched.plugins.helpers.nodeaffinity import RequiredNodeAffinity
from kubesched.plugins.helpers.rows import row_node_infos
from kubesched.plugins.helpers.taints import find_untolerated_taint
from kubesched.plugins.podtopologyspread.common import Selector, count_pods_match_selector

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_INDEX_KEY = "PodTopologySpread/index"
_COUNTS_KEY = "PodTopologySpread/counts"
_MAX_AFFINITY_MASKS = 64
_MAX_COUNT_ENTRIES = 128
_SUMS_KEY = "PodTopologySpread/sums"
_MAX_SUMS = 64


class KeyColumn:
    """One topology key over the table rows."""

    __slots__ = ("vocab", "values", "ids", "rank")

    def __init__(self, table: NodeTable, key: str) -> None:
        vocab: dict[str, int] = {}
        ids = np.full(table.size, -1, np.int64)
        for i, node in enumerate(table.nodes[: table.size]):
            if node is None:
                continue
            v = node.meta.labels.get(key)
            if v is not None:
                ids[i] = vocab.setdefault(v, len(vocab))
        self.vocab = vocab
        self.values = list(vocab)
        self.ids = ids
        # rank[vid] = position of the value in string order: critical paths are built by
        # visiting pairs in value order (upstream visits a Go map, i.e. a random order; any
        # fixed order gives the same minimum, only ties between equal counts differ).
        rank = np.empty(len(vocab), np.int64)
        if vocab:
            order = sorted(range(len(self.values)), key=self.values.__getitem__)
            rank[np.asarray(order, np.int64)] = np.arange(len(vocab), dtype=np.int64)
        self.rank = rank


class TopologyIndex:
    __slots__ = ("version", "size", "columns", "_taint_ids", "_taint_sigs", "_affinity", "_has_all", "_pair_ids")

    def __init__(self, table: NodeTable) -> None:
        self.version = table.node_version
        self.size = table.size
        self.columns: dict[str, KeyColumn] = {}
        self._has_all: dict[tuple[str, ...], BoolArray] = {}
        self._pair_ids: dict[str, tuple[IntArray, int]] = {}
        self._taint_ids: IntArray | None = None
        self._taint_sigs: list[tuple[Taint, ...]] = []
        self._affinity: OrderedDict[Any, BoolArray] = OrderedDict()

    def column(self, table: NodeTable, key: str) -> KeyColumn:
        col = self.columns.get(key)
        if col is None:
            col = self.columns[key] = KeyColumn(table, key)
        return col

    def has_all(self, table: NodeTable, keys: tuple[str, ...]) -> BoolArray:
        """Per row: the node has every one of ``keys`` (do not modify)."""
        out = self._has_all.get(keys)
        if out is None:
            out = np.ones(table.size, np.bool_)
            for k in keys:
                out &= self.column(table, k).ids >= 0
            if len(self._has_all) >= _MAX_AFFINITY_MASKS:
                self._has_all.clear()
            self._has_all[keys] = out
        return out

    def pair_ids(self, table: NodeTable, key: str) -> tuple[IntArray, int]:
        """(per row, the id of the node's value for ``key``, the id of value "" — one past
        the vocabulary when no node has it — for nodes lacking the key; that id): scoring's
        topology pairs (do not modify)."""
        got = self._pair_ids.get(key)
        if got is None:
            col = self.column(table, key)
            empty_id = col.vocab.get("", len(col.vocab))
            got = self._pair_ids[key] = (np.where(col.ids >= 0, col.ids, empty_id), empty_id)
        return got

    def taints_tolerated(self, table: NodeTable, tolerations: tuple[Toleration, ...]) -> BoolArray:
        """Per row: no NoSchedule/NoExecute taint left untolerated (nodeTaintsPolicy Honor)."""
        if self._taint_ids is None:
            sigs: dict[tuple[Taint, ...], int] = {}
            ids = np.zeros(table.size, np.int64)
            for i, node in enumerate(table.nodes[: table.size]):
                ids[i] = sigs.setdefault(node.taints if node is not None else (), len(sigs))
            self._taint_ids = ids
            self._taint_sigs = list(sigs)
        ok = np.fromiter((find_untolerated_taint(sig, tolerations) is None for sig in self._taint_sigs),
                         np.bool_, len(self._taint_sigs))
        return ok[self._taint_ids]

    @staticmethod
    def affinity_key(pod: Pod) -> Hashable:
        """What :meth:`affinity_match` depends on: None when the pod has neither a
        nodeSelector nor required node affinity."""
        req = RequiredNodeAffinity(pod)
        if req.label_selector is None and req.node_selector is None:
            return None
        sel: Mapping[str, str] = req.label_selector or {}
        ns: NodeSelector | None = req.node_selector
        return (frozenset(sel.items()), ns)

    def affinity_match(self, table: NodeTable, pod: Pod) -> BoolArray | None:
        """Per row: RequiredNodeAffinity(pod).Match(node); None when the pod has neither a
        nodeSelector nor required node affinity (every node matches)."""
        key = self.affinity_key(pod)
        if key is None:
            return None
        req = RequiredNodeAffinity(pod)
        mask = self._affinity.get(key)
        if mask is not None:
            self._affinity.move_to_end(key)
            return mask
        mask = np.fromiter((node is not None and req.match(node) for node in table.nodes[: table.size]),
                           np.bool_, table.size)
        self._affinity[key] = mask
        if len(self._affinity) > _MAX_AFFINITY_MASKS:
            self._affinity.popitem(last=False)
        return mask


def topology_index(table: NodeTable) -> TopologyIndex:
    idx = table.extras.get(_INDEX_KEY)
    if not isinstance(idx, TopologyIndex) or idx.version != table.node_version or idx.size != table.size:
        idx = TopologyIndex(table)
        table.extras[_INDEX_KEY] = idx
    return idx


class _CountEntry:
    __slots__ = ("counts", "position")

    def __init__(self, size: int) -> None:
        self.counts = np.zeros(size, np.int64)
        # The table's change log position the counts are up to date with (-1: never counted).
        self.position = -1

    def grow(self, size: int) -> None:
        if self.counts.size < size:
            counts = np.zeros(size, np.int64)
            counts[: self.counts.size] = self.counts
            self.counts = counts


class PodCounts:
    """Row-indexed matching-pod counts for the snapshot's NodeInfos."""

    __slots__ = ("version", "source", "infos", "rows", "by_row", "entries")

    def __init__(self, table: NodeTable, infos: Sequence[NodeInfo], rows: IntArray) -> None:
        self.version = table.node_version
        self.source = infos
        self.infos = infos
        self.rows = rows  # rows[j] = infos[j].index
        self.by_row = row_node_infos(table, infos)
        self.entries: OrderedDict[tuple[str, Selector], _CountEntry] = OrderedDict()

    def rebind(self, table: NodeTable, infos: Sequence[NodeInfo], rows: IntArray) -> None:
        """A new node list (nodes added/removed/updated): keep the counts, rows never move
        (and the nodes' changes are in the table's change log)."""
        self.version = table.node_version
        self.source = infos
        self.infos = infos
        self.rows = rows
        self.by_row = row_node_infos(table, infos)
        for e in self.entries.values():
            e.grow(table.size)

    def counts(self, table: NodeTable, namespace: str, sel: Selector) -> IntArray:
        """``result[row]``: pods on that row's node matching ``sel`` in ``namespace`` (valid
        for the rows in ``self.rows``). Only the rows changed since the entry was last
        brought up to date are recounted (all rows with pods the first time)."""
        key = (namespace, sel)
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = _CountEntry(table.size)
            if len(self.entries) > _MAX_COUNT_ENTRIES:
                self.entries.popitem(last=False)
        else:
            self.entries.move_to_end(key)
            entry.grow(table.size)
        changed = table.changed_since(entry.position) if entry.position >= 0 else None
        entry.position = table.log_position
        counts = entry.counts
        if changed is None:
            counts[:] = 0
            rows: Iterable[int] = np.flatnonzero(table.pod_count[: table.size]).tolist()
        else:
            rows = dict.fromkeys(changed) if len(changed) > 1 else changed
        by_row = self.by_row
        for r in rows:
            ni = by_row[r] if r < len(by_row) else None
            counts[r] = count_pods_match_selector(ni.pods, sel, namespace) if ni is not None else 0
        return counts


def pod_counts(table: NodeTable, infos: Sequence[NodeInfo]) -> PodCounts | None:
    """The count cache for ``infos`` (the snapshot list), or None when some NodeInfo has no
    row of ``table`` (a snapshot not backed by the table: callers use the plain path)."""
    pc = table.extras.get(_COUNTS_KEY)
    if isinstance(pc, PodCounts) and pc.version == table.node_version and pc.source is infos:
        return pc
    rows = np.fromiter((ni.index for ni in infos), np.int64, len(infos))
    nodes = table.nodes
    for j, ni in enumerate(infos):
        r = int(rows[j])
        if r < 0 or r >= table.size or nodes[r] is not ni.node:
            return None
    if isinstance(pc, PodCounts):
        pc.rebind(table, infos, rows)
    else:
        pc = PodCounts(table, infos, rows)
        table.extras[_COUNTS_KEY] = pc
    return pc


class DomainSums:
    """Per domain (value id of a topology key), the sum over the included rows of each
    row's count, and which domains have an included row.

    A row's count comes from *layers*, each an inclusion mask over the table rows and a
    per-row count array (None: 0): the last layer including the row gives its count
    (calPreFilterState: a later constraint on the same key replaces the count). The masks
    depend only on the nodes (and on the incoming pod through the caller's key), so they
    are built once per ``table.node_version``; the sums then follow the table's change log,
    row by row."""

    __slots__ = ("version", "position", "ids", "masks", "included", "summed", "sums", "present", "present_ids",
                 "present_values")

    def __init__(self, table: NodeTable, ids: IntArray, size: int, masks: list[BoolArray],
                 layers: Sequence[IntArray | None]) -> None:
        self.version = table.node_version
        self.position = table.log_position
        n = table.size
        self.ids = ids
        self.masks = masks
        eff = np.zeros(n, np.int64)
        included = np.zeros(n, np.bool_)
        for mask, cnt in zip(masks, layers, strict=True):
            eff = np.where(mask, cnt[:n] if cnt is not None else 0, eff)
            included |= mask
        self.included = included
        self.summed = np.where(included, eff, 0)
        vids = ids[included]
        self.sums = np.bincount(vids, weights=self.summed[included], minlength=size).astype(np.int64)
        self.present = np.bincount(vids, minlength=size) > 0
        self.present_ids: list[int] = np.flatnonzero(self.present).tolist()
        # The values of present_ids, filled by the caller on first use.
        self.present_values: list[str] | None = None

    def update(self, rows: Iterable[int], layers: Sequence[IntArray | None]) -> None:
        included, summed, sums, ids, masks = self.included, self.summed, self.sums, self.ids, self.masks
        for r in rows:
            if not included[r]:
                continue
            v = 0
            for mask, cnt in zip(masks, layers, strict=True):
                if mask[r]:
                    v = int(cnt[r]) if cnt is not None else 0
            d = v - int(summed[r])
            if d:
                sums[ids[r]] += d
                summed[r] = v
        self.position = -1  # set by the caller


def domain_sums(table: NodeTable, key: Hashable, ids: IntArray, size: int,
                masks: Callable[[], list[BoolArray]], layers: Sequence[IntArray | None]) -> DomainSums:
    """The :class:`DomainSums` cached for ``key`` (which must determine ``masks()``, the
    layers' inclusion masks, for one node version), brought up to date with ``layers``'
    current counts (kept up to date by :class:`PodCounts`): only the rows the change log
    names are revisited. The arrays returned are the cache's: copy before modifying."""
    cache = table.extras.get(_SUMS_KEY)
    if not isinstance(cache, OrderedDict):
        cache = table.extras[_SUMS_KEY] = OrderedDict()
    ds = cache.get(key)
    changed = None
    if isinstance(ds, DomainSums) and ds.version == table.node_version:
        changed = table.changed_since(ds.position)
    if changed is None or not isinstance(ds, DomainSums):
        ds = DomainSums(table, ids, size, masks(), layers)
        cache[key] = ds
        if len(cache) > _MAX_SUMS:
            cache.popitem(last=False)
        return ds
    cache.move_to_end(key)
    if changed:
        ds.update(dict.fromkeys(changed) if len(changed) > 1 else changed, layers)
    ds.position = table.log_position
    return ds
