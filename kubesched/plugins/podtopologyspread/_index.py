"""Per-row data PodTopologySpread derives from the node table, cached across cycles.

- :class:`TopologyIndex` (one ``table.node_version``): per topology key, each row's value id
  (-1 when the node lacks the key) and the value vocabulary; per-row taint signatures;
  per-pod node-affinity masks.
- :class:`PodCounts`: per (namespace, selector), each row's number of matching pods
  (countPodsMatchSelector). Rows are recounted only when their NodeInfo's ``generation``
  moved (a pod added or removed, or the node updated), so a cycle costs one pass over the
  generations instead of one over every pod.

Upstream recomputes all of this in every PreFilter/PreScore; the cache changes the cost,
never the result.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from operator import attrgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesched.framework import NodeInfo, NodeTable
from kubesched.objects import NodeSelector, Pod, Taint, Toleration
from kubesched.plugins.helpers.nodeaffinity import RequiredNodeAffinity
from kubesched.plugins.helpers.taints import find_untolerated_taint
from kubesched.plugins.podtopologyspread.common import Selector, count_pods_match_selector

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_INDEX_KEY = "PodTopologySpread/index"
_COUNTS_KEY = "PodTopologySpread/counts"
_MAX_AFFINITY_MASKS = 64
_MAX_COUNT_ENTRIES = 128
_GENERATION = attrgetter("generation")


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
    __slots__ = ("version", "size", "columns", "_taint_ids", "_taint_sigs", "_affinity")

    def __init__(self, table: NodeTable) -> None:
        self.version = table.node_version
        self.size = table.size
        self.columns: dict[str, KeyColumn] = {}
        self._taint_ids: IntArray | None = None
        self._taint_sigs: list[tuple[Taint, ...]] = []
        self._affinity: OrderedDict[Any, BoolArray] = OrderedDict()

    def column(self, table: NodeTable, key: str) -> KeyColumn:
        col = self.columns.get(key)
        if col is None:
            col = self.columns[key] = KeyColumn(table, key)
        return col

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

    def affinity_match(self, table: NodeTable, pod: Pod) -> BoolArray | None:
        """Per row: RequiredNodeAffinity(pod).Match(node); None when the pod has neither a
        nodeSelector nor required node affinity (every node matches)."""
        req = RequiredNodeAffinity(pod)
        if req.label_selector is None and req.node_selector is None:
            return None
        sel: Mapping[str, str] = req.label_selector or {}
        ns: NodeSelector | None = req.node_selector
        key = (frozenset(sel.items()), ns)
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
    __slots__ = ("counts", "gens")

    def __init__(self, size: int) -> None:
        self.counts = np.zeros(size, np.int64)
        self.gens = np.full(size, -1, np.int64)

    def grow(self, size: int) -> None:
        if self.counts.size < size:
            counts = np.zeros(size, np.int64)
            counts[: self.counts.size] = self.counts
            gens = np.full(size, -1, np.int64)
            gens[: self.gens.size] = self.gens
            self.counts, self.gens = counts, gens


class PodCounts:
    """Row-indexed matching-pod counts for the snapshot's NodeInfos."""

    __slots__ = ("version", "source", "infos", "rows", "entries")

    def __init__(self, table: NodeTable, infos: Sequence[NodeInfo], rows: IntArray) -> None:
        self.version = table.node_version
        self.source = infos
        self.infos = infos
        self.rows = rows  # rows[j] = infos[j].index
        self.entries: OrderedDict[tuple[str, Selector], _CountEntry] = OrderedDict()

    def rebind(self, table: NodeTable, infos: Sequence[NodeInfo], rows: IntArray) -> None:
        """A new node list (nodes added/removed/updated): keep the counts, rows never move."""
        self.version = table.node_version
        self.source = infos
        self.infos = infos
        self.rows = rows
        for e in self.entries.values():
            e.grow(table.size)

    def generations(self) -> IntArray:
        """The current generation of every NodeInfo, in ``infos`` order."""
        return np.fromiter(map(_GENERATION, self.infos), np.int64, len(self.infos))

    def counts(self, table: NodeTable, namespace: str, sel: Selector, gens: IntArray) -> IntArray:
        """``result[row]``: pods on that row's node matching ``sel`` in ``namespace`` (valid
        for the rows in ``self.rows``; ``gens`` from :meth:`generations`)."""
        key = (namespace, sel)
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = _CountEntry(table.size)
            if len(self.entries) > _MAX_COUNT_ENTRIES:
                self.entries.popitem(last=False)
        else:
            self.entries.move_to_end(key)
            entry.grow(table.size)
        stale = np.flatnonzero(entry.gens[self.rows] != gens)
        if stale.size:
            counts, egens, infos, rows = entry.counts, entry.gens, self.infos, self.rows
            for j in stale.tolist():
                r = int(rows[j])
                counts[r] = count_pods_match_selector(infos[j].pods, sel, namespace)
                egens[r] = gens[j]
        return entry.counts


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
