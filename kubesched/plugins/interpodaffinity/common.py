"""Shared pieces of InterPodAffinity: the incoming pod's resolved terms (plugin.go:
mergeAffinityTermNamespacesIfNotEmpty), namespace labels (GetNamespaceLabelsSnapshot), and
the caches that keep a scheduling cycle well below O(all pods) of Python work.

Caching model. Every per-cycle map upstream builds (the three PreFilter counts and the
PreScore topology score) is a sum over nodes of a per-node contribution that depends only
on that node (its pods and labels) and on a hashable *identity* of the incoming pod (its
namespace, namespace labels and the labels the running pods' selectors name -- see
:class:`LabelKeys` -- or its resolved terms). :class:`Aggregate` keeps
that sum for one identity across cycles: each cycle it compares the NodeInfo generations
(bumped by every pod or node change) with those it last saw, recomputes the contribution
of the changed nodes only, and applies the difference. The result is exactly the map
upstream would build; the batch methods read the same sums as numpy arrays.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kubesched.framework import AffinityTerm, Handle, NodeInfo, NodeTable, WeightedAffinityTerm
from kubesched.framework.interfaces import IntArray
from kubesched.objects import LabelSelector, Pod
from kubesched.plugins.helpers.rows import row_node_infos

NAME = "InterPodAffinity"

# (topologyKey, value) -> count (filtering.go: topologyPair / topologyToMatchedTermCount).
TopologyPair = tuple[str, str]
Counts = dict[TopologyPair, int]

SelectorSignature = tuple[tuple[tuple[str, str], ...], tuple[object, ...]] | None


def selector_signature(sel: LabelSelector | None) -> SelectorSignature:
    """A hashable value equal for equal selectors (LabelSelector holds a dict)."""
    if sel is None:
        return None
    return tuple(sorted(sel.match_labels.items())), tuple(sel.match_expressions)


@dataclass(frozen=True, slots=True, eq=False)
class IncomingTerm:
    """One (anti-)affinity term of the pod being scheduled, its namespaceSelector already
    resolved into ``namespaces`` (mergeAffinityTermNamespacesIfNotEmpty).

    A non-empty namespaceSelector is replaced by the names of the namespaces it selects
    and then matches nothing more; an empty one (``{}``, labels.Everything) is left in
    place and matches every namespace (``all_namespaces``); a nil one matches none.
    ``selector`` None (nil labelSelector) matches no pod. ``weight`` is 0 for required terms.
    """

    namespaces: frozenset[str]
    all_namespaces: bool
    selector: LabelSelector | None
    topology_key: str
    weight: int
    signature: Hashable

    def matches(self, pod: Pod) -> bool:
        """AffinityTerm.Matches(pod, nil): the incoming pod's terms never need the other
        pod's namespace labels (their selector was merged into the namespaces)."""
        if self.all_namespaces or pod.namespace in self.namespaces:
            sel = self.selector
            return sel is not None and sel.matches(pod.labels)
        return False


def resolve_term(handle: Handle, term: AffinityTerm, weight: int = 0) -> IncomingTerm:
    """mergeAffinityTermNamespacesIfNotEmpty for one term of the incoming pod."""
    ns_sel = term.namespace_selector
    names = term.namespaces
    all_namespaces = False
    if ns_sel is not None:
        if ns_sel.is_empty():
            all_namespaces = True
        else:
            merged = set(names)
            for ns in handle.objects.namespaces():
                if ns_sel.matches(ns.labels):
                    merged.add(ns.name)
            names = frozenset(merged)
    sig = (tuple(sorted(names)), all_namespaces, selector_signature(term.selector), term.topology_key, weight)
    return IncomingTerm(names, all_namespaces, term.selector, term.topology_key, weight, sig)


def resolve_terms(handle: Handle, terms: Sequence[AffinityTerm]) -> tuple[IncomingTerm, ...]:
    return tuple(resolve_term(handle, t) for t in terms)


def resolve_weighted_terms(handle: Handle, terms: Sequence[WeightedAffinityTerm]) -> tuple[IncomingTerm, ...]:
    return tuple(resolve_term(handle, t.term, t.weight) for t in terms)


def namespace_labels(handle: Handle, namespace: str) -> Mapping[str, str]:
    """GetNamespaceLabelsSnapshot: the namespace's labels, or an empty set when it cannot
    be found (a nil labels.Set, which an empty selector still matches)."""
    ns = handle.objects.namespace(namespace)
    return ns.labels if ns is not None else {}


class LabelKeys:
    """The label keys read by the existing pods' terms evaluated so far (it only grows).

    Whether an existing pod's term matches the incoming pod depends on the pod's namespace,
    its namespace's labels, and its labels *under the keys the term's selector names*. So
    incoming pods equal on those share every per-node contribution, even when they differ
    in other labels (e.g. a StatefulSet's per-pod name label). The identity includes
    ``version``: when a term naming a new key shows up, identities change and aggregates
    built before are no longer used.
    """

    __slots__ = ("keys", "version")

    def __init__(self) -> None:
        self.keys: set[str] = set()
        self.version = 0

    def note(self, sel: LabelSelector | None) -> None:
        if sel is None:
            return
        keys = self.keys
        for k in sel.match_labels:
            if k not in keys:
                keys.add(k)
                self.version += 1
        for r in sel.match_expressions:
            if r.key not in keys:
                keys.add(r.key)
                self.version += 1

    def identity(self, pod: Pod, ns_labels: Mapping[str, str]) -> Hashable:
        """Everything of the incoming pod that the existing pods' terms look at
        (AffinityTerm.Matches)."""
        keys = self.keys
        labels = frozenset(kv for kv in pod.labels.items() if kv[0] in keys)
        return pod.namespace, labels, frozenset(ns_labels.items()), self.version


def pod_matches_all_terms(terms: Sequence[IncomingTerm], pod: Pod) -> bool:
    """podMatchesAllAffinityTerms: false for no terms."""
    if not terms:
        return False
    for t in terms:
        if not t.matches(pod):
            return False
    return True


# ----------------------------------------------------------------------------- aggregates
# One node's contribution: per channel, a tuple of ((topologyKey, value), delta) pairs.
Contribution = tuple[tuple[tuple[TopologyPair, int], ...], ...]


@dataclass(frozen=True, slots=True, eq=False)
class NodeSet:
    """The cycle's nodes as the aggregates read them.

    When the snapshot's NodeInfos are rows of its NodeTable, ``by_row`` maps a row to its
    listed NodeInfo (None: not listed) and aggregates follow the table's change log:
    only the rows changed since their last refresh are recomputed, and a full rebuild
    visits only the rows a table column says may contribute (upstream's
    HavePodsWith(RequiredAnti)AffinityNodeInfoList, or the nodes with pods). Otherwise
    ``by_row`` is None and ``infos`` (the listed NodeInfos having pods, the only ones that
    can add to a count or a score) are summed from scratch."""

    table: NodeTable
    source: Sequence[NodeInfo]
    by_row: Sequence[NodeInfo | None] | None = None
    infos: list[NodeInfo] | None = None


def nodes_with_pods(handle: Handle) -> NodeSet:
    """The cycle's :class:`NodeSet` (O(1) when the snapshot is backed by its table)."""
    snapshot = handle.snapshot
    source = snapshot.list()
    table = snapshot.table
    if source and source[0].table is table:
        return NodeSet(table, source, row_node_infos(table, source))
    # NodeInfos not backed by the table: scan the list.
    return NodeSet(table, source, None, [ni for ni in source if ni.pods])


# Table columns whose non-zero rows are the only ones that can contribute (Aggregate.refresh).
WITH_PODS = "pod_count"
WITH_AFFINITY = "affinity_count"
WITH_REQUIRED_ANTI_AFFINITY = "anti_affinity_count"


class Aggregate:
    """Per-channel sums over nodes of per-node contributions, maintained incrementally.

    ``totals[c]`` maps a (topologyKey, value) pair to its sum; pairs whose sum drops to 0
    are removed, as the count maps of filtering.go never hold zero entries. ``hits``
    counts the nodes whose contribution is not empty (PreScore's "index == -1" test).
    ``array(c, key)`` gives the same sums for one topology key as an array indexed by the
    TopologyIndex value ids of the table (last slot: values no node has), for the batch
    methods; built on first use and then kept up to date.
    """

    __slots__ = ("channels", "totals", "keys", "hits", "table", "node_version", "index", "arrays", "position",
                 "contributions")

    def __init__(self, channels: int) -> None:
        self.channels = channels
        self._reset(None)

    def _reset(self, table: NodeTable | None) -> None:
        n = self.channels
        self.totals: list[Counts] = [{} for _ in range(n)]
        # Per channel, topology key -> number of pairs with that key in totals.
        self.keys: list[dict[str, int]] = [{} for _ in range(n)]
        self.hits = 0
        self.table = table
        self.node_version = -1
        self.index: TopologyIndex | None = None
        self.arrays: list[dict[str, tuple[IntArray, dict[str, int]]]] = [{} for _ in range(n)]
        # The table's change log position the sums are up to date with (-1: never built).
        self.position = -1
        # Per table row: its contribution in the sums (None: none).
        self.contributions: list[Contribution | None] = []

    def _apply(self, contrib: Contribution, sign: int) -> None:
        nonempty = False
        for c, pairs in enumerate(contrib):
            if not pairs:
                continue
            nonempty = True
            totals = self.totals[c]
            keys = self.keys[c]
            arrays = self.arrays[c]
            for pair, delta in pairs:
                d = sign * delta
                old = totals.get(pair)
                v = (old or 0) + d
                if v == 0:
                    if old is not None:
                        del totals[pair]
                        keys[pair[0]] -= 1
                else:
                    totals[pair] = v
                    if old is None:
                        keys[pair[0]] = keys.get(pair[0], 0) + 1
                col = arrays.get(pair[0])
                if col is not None:
                    i = col[1].get(pair[1])
                    if i is not None:
                        col[0][i] += d
        if nonempty:
            self.hits += sign

    def refresh(self, nodes: NodeSet, compute: Callable[[NodeInfo], Contribution], candidates: str) -> None:
        """Bring the sums to exactly Σ compute(ni) over the listed nodes, recomputing only
        the rows changed since the previous refresh. ``candidates`` names the table column
        (WITH_PODS, WITH_AFFINITY, WITH_REQUIRED_ANTI_AFFINITY) outside whose non-zero
        rows ``compute`` gives nothing: a rebuild visits only those rows."""
        by_row = nodes.by_row
        if by_row is None:
            self._reset(None)
            for ni in nodes.infos or ():
                self._apply(compute(ni), 1)
            return
        table = nodes.table
        if table is not self.table:
            self._reset(table)
        if self.node_version != table.node_version:
            # Node objects changed (their rows are in the change log too): new value ids.
            self.node_version = table.node_version
            self.index = topology_index(table)
            self.arrays = [{} for _ in range(self.channels)]
        size = table.size
        contributions = self.contributions
        if len(contributions) < size:
            contributions.extend([None] * (size - len(contributions)))
        changed = table.changed_since(self.position) if self.position >= 0 else None
        self.position = table.log_position
        if changed is None:
            # Rebuild: the sums from scratch over the rows that may contribute.
            index, node_version = self.index, self.node_version
            self._reset(table)
            self.index, self.node_version, self.position = index, node_version, table.log_position
            contributions = self.contributions = [None] * size
            rows: list[int] = np.flatnonzero(getattr(table, candidates)[:size]).tolist()
        else:
            rows = list(dict.fromkeys(changed)) if len(changed) > 1 else changed
        for r in rows:
            old = contributions[r]
            if old is not None:
                self._apply(old, -1)
            info = by_row[r] if r < len(by_row) else None
            if info is not None:
                new = compute(info)
                self._apply(new, 1)
                contributions[r] = new
            else:
                contributions[r] = None

    def channel_keys(self, c: int) -> list[str]:
        return [k for k, n in self.keys[c].items() if n > 0]

    def array(self, c: int, key: str) -> tuple[IntArray, IntArray] | None:
        """(value id per table row, sum per value id) for ``key``; None when the NodeInfos
        are not table rows."""
        index = self.index
        table = self.table
        if index is None or table is None:
            return None
        ids, values = index.column(table, key)
        col = self.arrays[c].get(key)
        if col is None:
            sums = np.zeros(len(values) + 1, np.int64)
            for (k, v), n in self.totals[c].items():
                if k == key:
                    i = values.get(v)
                    if i is not None:
                        sums[i] = n
            col = self.arrays[c][key] = (sums, values)
        return ids, col[0]


class AggregateCache:
    """A few Aggregates, least recently used evicted (one per incoming-pod identity)."""

    __slots__ = ("_items", "_size")

    def __init__(self, size: int = 16) -> None:
        self._items: OrderedDict[Hashable, Aggregate] = OrderedDict()
        self._size = size

    def get(self, key: Hashable, channels: int) -> Aggregate:
        agg = self._items.get(key)
        if agg is None:
            agg = Aggregate(channels)
            self._items[key] = agg
            if len(self._items) > self._size:
                self._items.popitem(last=False)
        else:
            self._items.move_to_end(key)
        return agg


# ----------------------------------------------------------------------------- topology index
class TopologyIndex:
    """Per table row, the id of the node's value for a label key (-1 if absent), built
    lazily per key and valid for one ``table.node_version``."""

    __slots__ = ("version", "size", "_columns")

    def __init__(self, table: NodeTable) -> None:
        self.version = table.node_version
        self.size = table.size
        self._columns: dict[str, tuple[IntArray, dict[str, int]]] = {}

    def column(self, table: NodeTable, key: str) -> tuple[IntArray, dict[str, int]]:
        col = self._columns.get(key)
        if col is None:
            values: dict[str, int] = {}
            ids = np.full(self.size, -1, np.int64)
            for i, node in enumerate(table.nodes[: self.size]):
                if node is not None:
                    v = node.meta.labels.get(key)
                    if v is not None:
                        ids[i] = values.setdefault(v, len(values))
            col = (ids, values)
            self._columns[key] = col
        return col


def topology_index(table: NodeTable) -> TopologyIndex:
    idx = table.extras.get(NAME)
    if not isinstance(idx, TopologyIndex) or idx.version != table.node_version or idx.size != table.size:
        idx = TopologyIndex(table)
        table.extras[NAME] = idx
    return idx
