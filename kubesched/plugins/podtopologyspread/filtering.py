"""PreFilter state, AddPod/RemovePod and the skew check (podtopologyspread/filtering.go, v1.30).

v1.30 keys everything by topology *key*, not by constraint: ``TpPairToMatchNum`` is keyed by
(key, value) and ``TpKeyToCriticalPaths`` / ``TpKeyToDomainsNum`` by key, so two constraints
sharing a key share one count map (on a node, the later constraint's count replaces the
earlier one's; AddPod adds once per matching constraint). Reproduced here on purpose
(upstream changed this only in v1.33).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from kubesched.framework import NodeInfo, NodeTable
from kubesched.objects import Node, Pod
from kubesched.plugins.helpers.nodeaffinity import RequiredNodeAffinity
from kubesched.plugins.podtopologyspread._index import KeyColumn, PodCounts, TopologyIndex, domain_sums
from kubesched.plugins.podtopologyspread.common import (
    Constraint,
    count_pods_match_selector,
    match_node_inclusion,
    node_has_keys,
)

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

MAX_INT32 = 2**31 - 1


class CriticalPaths:
    """filtering.go: criticalPaths, the two slots ``[(value, num), (value, num)]``.

    Slot 0 holds the minimum after PreFilter; AddPod/RemovePod only adjust these two slots
    (``update``), which upstream accepts and which this class reproduces exactly."""

    __slots__ = ("v0", "n0", "v1", "n1")

    def __init__(self, v0: str = "", n0: int = MAX_INT32, v1: str = "", n1: int = MAX_INT32) -> None:
        self.v0, self.n0, self.v1, self.n1 = v0, n0, v1, n1

    def update(self, value: str, num: int) -> None:
        """criticalPaths.update."""
        if value == self.v0:
            self.n0 = num
            if self.n0 > self.n1:
                self._swap()
        elif value == self.v1:
            self.n1 = num
            if self.n0 > self.n1:
                self._swap()
        elif num < self.n0:
            self.v1, self.n1 = self.v0, self.n0
            self.v0, self.n0 = value, num
        elif num < self.n1:
            self.v1, self.n1 = value, num

    def _swap(self) -> None:
        self.v0, self.n0, self.v1, self.n1 = self.v1, self.n1, self.v0, self.n0

    def copy(self) -> CriticalPaths:
        return CriticalPaths(self.v0, self.n0, self.v1, self.n1)

    def as_tuple(self) -> tuple[tuple[str, int], tuple[str, int]]:
        return ((self.v0, self.n0), (self.v1, self.n1))

    def __repr__(self) -> str:
        return f"CriticalPaths({self.as_tuple()})"


class KeyCounts:
    """One topology key: TpPairToMatchNum restricted to the key (``match`` indexed by the
    value ids of ``vocab``; values outside it, possible only for a node missing from the
    table, live in ``extra``), its critical paths and its number of domains."""

    __slots__ = ("key", "vocab", "row_ids", "match", "extra", "paths", "domains")

    def __init__(self, key: str, vocab: Mapping[str, int], row_ids: IntArray | None, match: IntArray,
                 paths: CriticalPaths, domains: int) -> None:
        self.key = key
        self.vocab = vocab
        self.row_ids = row_ids  # value id of every table row (batch filter), or None
        self.match = match
        self.extra: dict[str, int] = {}
        self.paths = paths
        self.domains = domains

    def get(self, value: str) -> int:
        vid = self.vocab.get(value)
        if vid is not None:
            return int(self.match[vid])
        return self.extra.get(value, 0)

    def add(self, value: str, delta: int) -> int:
        vid = self.vocab.get(value)
        if vid is not None:
            n = int(self.match[vid]) + delta
            self.match[vid] = n
            return n
        n = self.extra.get(value, 0) + delta
        self.extra[value] = n
        return n

    def clone(self) -> KeyCounts:
        c = KeyCounts(self.key, self.vocab, self.row_ids, self.match.copy(), self.paths.copy(), self.domains)
        c.extra = dict(self.extra)
        return c


class PreFilterState:
    """filtering.go: preFilterState. ``keys`` maps each constraint key to its counts;
    ``self_match[i]`` caches ``constraints[i].selector.Matches(pod.labels)``."""

    __slots__ = ("constraints", "self_match", "keys", "present", "version", "count_keys")

    def __init__(self, constraints: tuple[Constraint, ...], self_match: tuple[int, ...],
                 keys: dict[str, KeyCounts], present: dict[str, list[str]], version: int,
                 count_keys: tuple[str, ...] | None = None) -> None:
        self.constraints = constraints
        self.self_match = self_match
        self.keys = keys
        self.present = present  # values of the pairs PreFilter created, per key
        self.version = version  # table.node_version the row ids belong to (-1: none)
        # constraint i counts in keys[count_keys[i]]: its topology key (v1.30) or its own (1.36).
        self.count_keys = count_keys if count_keys is not None else tuple(c.topology_key for c in constraints)

    def clone(self) -> PreFilterState:
        """Constraints, domains and value ids are shared; counts and paths are copied."""
        return PreFilterState(self.constraints, self.self_match, {k: v.clone() for k, v in self.keys.items()},
                              self.present, self.version, self.count_keys)

    def pair_counts(self, key: str) -> dict[str, int]:
        """TpPairToMatchNum for one key, as a map (tests)."""
        kc = self.keys[key]
        values = list(self.present.get(key, ()))
        values += [v for v in kc.extra if v not in values]
        return {v: kc.get(v) for v in values}


def _paths_from_arrays(values: Sequence[str], match: IntArray, present: BoolArray, rank: IntArray) -> CriticalPaths:
    """The critical paths upstream's update loop leaves after visiting every created pair
    in value order: slot 0 = smallest count (smallest value among ties), slot 1 = next."""
    ids = np.flatnonzero(present)
    paths = CriticalPaths()
    if ids.size == 0:
        return paths
    # Order key: count first, then the value's string rank (rank < len(vocab)).
    order = match[ids] * (rank.size + 1) + rank[ids]
    first = int(np.argmin(order))
    v0 = int(ids[first])
    paths.update(values[v0], int(match[v0]))
    if ids.size > 1:
        order[first] = np.iinfo(np.int64).max
        v1 = int(ids[int(np.argmin(order))])
        paths.update(values[v1], int(match[v1]))
    return paths


def count_keys(constraints: tuple[Constraint, ...], per_constraint: bool) -> tuple[str, ...]:
    """Where each constraint's matching pods are counted. v1.30 keyed the counts by topology key
    (TpPairToMatchNum: constraints on one key share counts and critical paths); 1.36 keeps them
    per constraint (TpValueToMatchNum[i], CriticalPaths[i])."""
    if not per_constraint:
        return tuple(c.topology_key for c in constraints)
    return tuple(f"#{i}" for i in range(len(constraints)))


def compute_state(pod: Pod, constraints: tuple[Constraint, ...], table: NodeTable, index: TopologyIndex,
                  counts: PodCounts, *, per_constraint: bool = False) -> PreFilterState:
    """calPreFilterState over the table: per topology key, the matching pods of the nodes
    having every constraint's key (and passing the constraint's node inclusion policies)
    summed per value — sums kept across cycles (:func:`domain_sums`), so a cycle costs the
    rows changed since the previous one plus one pass over the key's values."""
    keys = list(dict.fromkeys(c.topology_key for c in constraints))
    cols: dict[str, KeyColumn] = {k: index.column(table, k) for k in keys}
    ckeys = count_keys(constraints, per_constraint)
    honor_affinity = any(c.honor_affinity for c in constraints)
    honor_taints = any(c.honor_taints for c in constraints)
    # What the inclusion masks depend on besides the nodes.
    pod_key = (tuple(keys), index.affinity_key(pod) if honor_affinity else None,
               pod.tolerations if honor_taints else None)
    out: dict[str, KeyCounts] = {}
    present_values: dict[str, list[str]] = {}
    for ck in dict.fromkeys(ckeys):
        on_key = [c for c, key in zip(constraints, ckeys, strict=True) if key == ck]
        k = on_key[0].topology_key
        col = cols[k]
        layers = [None if c.selector.empty() or c.selector.nothing
                  else counts.counts(table, pod.namespace, c.selector) for c in on_key]

        def masks(on_key: list[Constraint] = on_key) -> list[BoolArray]:
            listed = np.zeros(table.size, np.bool_)
            listed[counts.rows] = True
            eligible = listed
            for key in keys:
                eligible &= cols[key].ids >= 0
            aff = index.affinity_match(table, pod) if honor_affinity else None
            taint = index.taints_tolerated(table, pod.tolerations) if honor_taints else None
            out: list[BoolArray] = []
            for c in on_key:
                inc = eligible
                if c.honor_affinity and aff is not None:
                    inc = inc & aff
                if c.honor_taints and taint is not None:
                    inc = inc & taint
                out.append(inc)
            return out

        sums_key = ("filter", pod.namespace, k, tuple((c.selector, c.honor_affinity, c.honor_taints) for c in on_key),
                    pod_key)
        ds = domain_sums(table, sums_key, col.ids, len(col.vocab), masks, layers)
        match = ds.sums.copy()
        paths = _paths_from_arrays(col.values, match, ds.present, col.rank)
        out[ck] = KeyCounts(k, col.vocab, col.ids, match, paths, len(ds.present_ids))
        if ds.present_values is None:
            values = col.values
            ds.present_values = [values[i] for i in ds.present_ids]
        present_values[ck] = ds.present_values
    self_match = tuple(int(c.selector.matches(pod.labels)) for c in constraints)
    return PreFilterState(constraints, self_match, out, present_values, table.node_version, ckeys)


def compute_state_plain(pod: Pod, constraints: tuple[Constraint, ...], infos: Sequence[NodeInfo], *,
                        per_constraint: bool = False) -> PreFilterState:
    """calPreFilterState, node by node as upstream writes it (reference path, and the path
    for a snapshot whose NodeInfos have no table row)."""
    keys = list(dict.fromkeys(c.topology_key for c in constraints))
    ckeys = count_keys(constraints, per_constraint)
    required = RequiredNodeAffinity(pod)
    pair_counts: dict[str, dict[str, int]] = {k: {} for k in dict.fromkeys(ckeys)}
    for ni in infos:
        node = ni.node
        if node is None:
            continue
        labels = node.meta.labels
        if not node_has_keys(labels, keys):
            continue
        # v1.30: per node, the last constraint of a key gives that key's count.
        tp_counts: dict[str, tuple[str, int]] = {}
        for c, ck in zip(constraints, ckeys, strict=True):
            if not match_node_inclusion(c, pod, node, required):
                continue
            tp_counts[ck] = (labels[c.topology_key], count_pods_match_selector(ni.pods, c.selector, pod.namespace))
        for k, (v, n) in tp_counts.items():
            m = pair_counts[k]
            m[v] = m.get(v, 0) + n
    out: dict[str, KeyCounts] = {}
    present_values: dict[str, list[str]] = {}
    for ck, c in dict(zip(ckeys, constraints, strict=True)).items():
        m = pair_counts[ck]
        vocab = {v: i for i, v in enumerate(m)}
        match = np.fromiter(m.values(), np.int64, len(m))
        paths = CriticalPaths()
        for v in sorted(m):
            paths.update(v, m[v])
        out[ck] = KeyCounts(c.topology_key, vocab, None, match, paths, len(m))
        present_values[ck] = list(m)
    self_match = tuple(int(c.selector.matches(pod.labels)) for c in constraints)
    return PreFilterState(constraints, self_match, out, present_values, -1, ckeys)


def update_with_pod(s: PreFilterState, updated: Pod, preemptor: Pod, node: Node | None, delta: int) -> None:
    """updateWithPod (AddPod: +1, RemovePod: -1)."""
    if updated.namespace != preemptor.namespace or node is None:
        return
    labels = node.meta.labels
    if not node_has_keys(labels, [c.topology_key for c in s.constraints]):
        return
    required = RequiredNodeAffinity(preemptor)
    pod_labels = updated.labels
    for c, ck in zip(s.constraints, s.count_keys, strict=True):
        if not c.selector.matches(pod_labels):
            continue
        if not match_node_inclusion(c, preemptor, node, required):
            continue
        kc = s.keys[ck]
        v = labels[c.topology_key]
        kc.paths.update(v, kc.add(v, delta))


def node_fails(s: PreFilterState, labels: Mapping[str, str]) -> int:
    """Filter's verdict for a node with these labels: 0 fits, 1 skew too large
    (Unschedulable), 2 missing topology label (UnschedulableAndUnresolvable)."""
    for i, c in enumerate(s.constraints):
        v = labels.get(c.topology_key)
        if v is None:
            return 2
        kc = s.keys[s.count_keys[i]]
        if kc.domains == 0:
            # minMatchNum: the key is absent from TpKeyToDomainsNum -> error, logged, and
            # the constraint is skipped.
            continue
        min_match = kc.paths.n0 if kc.domains >= c.min_domains else 0
        if kc.get(v) + s.self_match[i] - min_match > c.max_skew:
            return 1
    return 0


def rows_fail(s: PreFilterState, table: NodeTable, rows: IntArray) -> npt.NDArray[np.int8]:
    """:func:`node_fails` for table rows, vectorized (first failing constraint wins)."""
    out = np.zeros(rows.size, np.int8)
    if s.version != table.node_version or any(kc.row_ids is None for kc in s.keys.values()):
        nodes = table.nodes
        for j, r in enumerate(rows.tolist()):
            node = nodes[r]
            out[j] = node_fails(s, node.meta.labels if node is not None else {})
        return out
    undecided = np.ones(rows.size, np.bool_)
    for i, c in enumerate(s.constraints):
        kc = s.keys[s.count_keys[i]]
        assert kc.row_ids is not None
        vids = kc.row_ids[rows]
        missing = vids < 0
        out[undecided & missing] = 2
        undecided &= ~missing
        if kc.domains == 0:
            continue
        min_match = kc.paths.n0 if kc.domains >= c.min_domains else 0
        match = kc.match[np.where(missing, 0, vids)] if kc.match.size else np.zeros(rows.size, np.int64)
        skewed = undecided & (match + s.self_match[i] - min_match > c.max_skew)
        out[skewed] = 1
        undecided &= ~skewed
    return out
