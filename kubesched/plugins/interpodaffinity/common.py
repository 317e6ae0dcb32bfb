"""Shared pieces of InterPodAffinity: the incoming pod's resolved terms (plugin.go:
mergeAffinityTermNamespacesIfNotEmpty), namespace labels (GetNamespaceLabelsSnapshot), and
the caches that keep a scheduling cycle well below O(all pods) of Python work.

Caching model. Every per-cycle map upstream builds (the three PreFilter counts and the
PreScore topology score) is a sum over nodes of a per-node contribution that depends only
on that node (its pods and labels) and on a hashable *identity* of the incoming pod (its
namespace, labels and namespace labels, or its resolved terms). :class:`Aggregate` keeps
that sum for one identity across cycles: each cycle it revisits the nodes, recomputes the
contribution of a node only when the node changed (``NodeInfo.generation`` or the Node
object), and applies the difference. The result is exactly the map upstream would build.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kubesched.framework import AffinityTerm, Handle, NodeInfo, NodeTable, WeightedAffinityTerm
from kubesched.framework.interfaces import IntArray
from kubesched.objects import LabelSelector, Node, Pod
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


def pod_identity(pod: Pod, ns_labels: Mapping[str, str]) -> Hashable:
    """Everything of the incoming pod that other pods' terms look at (AffinityTerm.Matches)."""
    return pod.namespace, frozenset(pod.labels.items()), frozenset(ns_labels.items())


def pod_matches_all_terms(terms: Sequence[IncomingTerm], pod: Pod) -> bool:
    """podMatchesAllAffinityTerms: false for no terms."""
    if not terms:
        return False
    for t in terms:
        if not t.matches(pod):
            return False
    return True


# ----------------------------------------------------------------------------- aggregates
# One node's contribution: per channel, a tuple of (key, delta) pairs.
Contribution = tuple[tuple[tuple[Hashable, int], ...], ...]


class Aggregate:
    """Per-channel sums over nodes of per-node contributions, maintained incrementally.

    ``totals[c]`` maps a key to its sum; keys whose sum drops to 0 are removed, as the
    count maps of filtering.go never hold zero entries. ``hits`` counts the nodes whose
    contribution is not empty (PreScore's "index == -1" test).
    """

    __slots__ = ("totals", "entries", "hits")

    def __init__(self, channels: int) -> None:
        self.totals: list[dict[Hashable, int]] = [{} for _ in range(channels)]
        # id(NodeInfo) -> (NodeInfo, generation, Node, contribution). Holding the NodeInfo
        # keeps its id unique while the entry exists.
        self.entries: dict[int, tuple[NodeInfo, int, Node | None, Contribution]] = {}
        self.hits = 0

    def _apply(self, contrib: Contribution, sign: int) -> None:
        nonempty = False
        for totals, pairs in zip(self.totals, contrib, strict=True):
            for key, delta in pairs:
                nonempty = True
                v = totals.get(key, 0) + sign * delta
                if v == 0:
                    totals.pop(key, None)
                else:
                    totals[key] = v
        if nonempty:
            self.hits += sign

    def refresh(self, infos: Sequence[NodeInfo], compute: Callable[[NodeInfo], Contribution]) -> None:
        """Bring the sums to exactly Σ compute(ni) over ``infos``."""
        entries = self.entries
        for ni in infos:
            e = entries.get(id(ni))
            if e is not None and e[0] is ni and e[1] == ni.generation and e[2] is ni.node:
                continue
            contrib = compute(ni)
            if e is not None:
                self._apply(e[3], -1)
            self._apply(contrib, 1)
            entries[id(ni)] = (ni, ni.generation, ni.node, contrib)
        if len(entries) > len(infos):
            live = {id(ni) for ni in infos}
            for k in [k for k in entries if k not in live]:
                self._apply(entries.pop(k)[3], -1)


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

    def clear(self) -> None:
        self._items.clear()


def nodes_with_pods(handle: Handle) -> list[NodeInfo]:
    """The snapshot's NodeInfos that have at least one pod (the only ones that can
    contribute to any count or score), found through the NodeTable's pod counts."""
    snapshot = handle.snapshot
    infos = snapshot.list()
    table = snapshot.table
    if infos and infos[0].table is not table:
        return [ni for ni in infos if ni.pods]
    by_row = row_node_infos(table, infos)
    rows = np.flatnonzero(table.pod_count[: table.size]).tolist()
    out = [ni for ni in (by_row[r] for r in rows) if ni is not None and ni.pods]
    if len(out) != len(rows):
        # NodeInfos not backed by the table (or out of sync): scan the list.
        return [ni for ni in infos if ni.pods]
    return out


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
