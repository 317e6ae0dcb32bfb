"""PreScore state, Score and NormalizeScore (podtopologyspread/scoring.go).

As in filtering, v1.30 keys the pair counters by (key, value): constraints sharing a
non-hostname key share one counter per value (each adds its own matching pods to it), and
only the first of them creates the pairs, so the others get topoSize 0 (weight ln 2). 1.36
(TopologyValueToPodCounts[i]) keeps a counter, pairs and topoSize per constraint.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from kubesched.framework import MAX_NODE_SCORE, NodeInfo, NodeTable
from kubesched.framework.nodetable import RowNodes
from kubesched.objects import Pod
from kubesched.plugins.helpers.gomath import go_round
from kubesched.plugins.helpers.nodeaffinity import RequiredNodeAffinity
from kubesched.plugins.podtopologyspread._index import KeyColumn, PodCounts, TopologyIndex, domain_sums
from kubesched.plugins.podtopologyspread.common import (
    LABEL_HOSTNAME,
    Constraint,
    count_pods_match_selector,
    match_node_inclusion,
    node_has_keys,
)
from kubesched.plugins.podtopologyspread.filtering import count_keys

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


def topology_normalizing_weight(size: int) -> float:
    """topologyNormalizingWeight: ln(size + 2)."""
    return math.log(size + 2)


class PairCounts:
    """TopologyPairToPodCounts for one key: ``counter[pid]`` for the pairs created in
    PreScore (``created[pid]``); ``pid`` is the value id in ``vocab``, and ``empty_id`` the
    id of value "" (the pair of nodes lacking the key when not all topologies are required)."""

    __slots__ = ("vocab", "row_ids", "empty_id", "counter", "created")

    def __init__(self, vocab: Mapping[str, int], row_ids: IntArray | None, empty_id: int, counter: IntArray,
                 created: BoolArray) -> None:
        self.vocab = vocab
        self.row_ids = row_ids
        self.empty_id = empty_id
        self.counter = counter
        self.created = created

    def get(self, value: str) -> int:
        pid = self.vocab.get(value, self.empty_id if value == "" else -1)
        if pid < 0 or not self.created[pid]:
            # Upstream dereferences a nil counter here (a scored node always created its pair).
            return 0
        return int(self.counter[pid])

    def as_dict(self) -> dict[str, int]:
        """The created pairs and their counts (tests)."""
        out: dict[str, int] = {}
        for v, pid in self.vocab.items():
            if self.created[pid]:
                out[v] = int(self.counter[pid])
        if self.empty_id == len(self.vocab) and self.created[self.empty_id]:
            out[""] = int(self.counter[self.empty_id])
        return out


class PreScoreState:
    """scoring.go: preScoreState. Shared, never copied (Clone returns itself upstream)."""

    __slots__ = ("constraints", "ignored", "ignored_rows", "pairs", "weights", "host_counts", "key_ids", "version",
                 "candidates_ignored", "scored_rows", "count_keys")

    def __init__(self, constraints: tuple[Constraint, ...], ignored: frozenset[str], ignored_rows: BoolArray | None,
                 pairs: dict[str, PairCounts], weights: tuple[float, ...], host_counts: dict[int, IntArray],
                 key_ids: dict[str, IntArray] | None, version: int, candidates_ignored: BoolArray,
                 count_keys: tuple[str, ...] | None = None) -> None:
        # constraint i counts in pairs[count_keys[i]] (filtering.count_keys).
        self.count_keys = count_keys if count_keys is not None else tuple(c.topology_key for c in constraints)
        self.constraints = constraints
        self.ignored = ignored
        self.ignored_rows = ignored_rows  # per table row (batch), or None
        self.pairs = pairs
        self.weights = weights
        self.host_counts = host_counts  # constraint index -> per-row matching pods (hostname key)
        self.key_ids = key_ids  # topology key -> per-row value id (-1: no such label), or None
        self.version = version
        self.candidates_ignored = candidates_ignored  # per PreScore node, in PreScore's order
        self.scored_rows: IntArray | None = None  # rows of the last score_batch, for normalize_score_batch

    def clone(self) -> PreScoreState:
        return self


def compute_state(pod: Pod, constraints: tuple[Constraint, ...], nodes: Sequence[NodeInfo], require_all: bool,
                  table: NodeTable, index: TopologyIndex, counts: PodCounts, *,
                  per_constraint: bool = False) -> PreScoreState:
    """initPreScoreState + PreScore's counting, vectorized over table rows: pairs and
    weights from the scored nodes, counts over every node (the per-value sums kept across
    cycles by :func:`domain_sums`)."""
    frows = nodes.rows if isinstance(nodes, RowNodes) else np.fromiter((ni.index for ni in nodes), np.int64, len(nodes))
    keys = list(dict.fromkeys(c.topology_key for c in constraints))
    cols: dict[str, KeyColumn] = {k: index.column(table, k) for k in keys}
    size = table.size
    has_all = index.has_all(table, tuple(keys))
    ignored_rows = np.zeros(size, np.bool_)
    ignored: frozenset[str] = frozenset()
    fkeep = np.ones(frows.size, np.bool_)
    if require_all:
        fkeep = has_all[frows]
        ignored_rows[frows[~fkeep]] = True
        ignored = frozenset(nodes[j].name for j in np.flatnonzero(~fkeep).tolist())
    kept = frows[fkeep]

    # Pairs: created by the first non-hostname constraint of each count key, over kept nodes.
    ckeys = count_keys(constraints, per_constraint)
    pairs: dict[str, PairCounts] = {}
    first_of_key: set[int] = set()
    for i, c in enumerate(constraints):
        k = c.topology_key
        if k == LABEL_HOSTNAME or ckeys[i] in pairs:
            continue
        nv = len(cols[k].vocab)
        pids, empty_id = index.pair_ids(table, k)
        created = np.zeros(nv + 1, np.bool_)
        created[pids[kept]] = True
        pairs[ckeys[i]] = PairCounts(cols[k].vocab, pids, empty_id, np.zeros(nv + 1, np.int64), created)
        first_of_key.add(i)
    weights: list[float] = []
    for i, c in enumerate(constraints):
        if c.topology_key == LABEL_HOSTNAME:
            sz = len(nodes) - len(ignored)
        elif i in first_of_key:
            sz = int(pairs[ckeys[i]].created.sum())
        else:
            sz = 0
        weights.append(topology_normalizing_weight(sz))

    # Counting over all snapshot nodes: per pair, the matching pods of the included nodes.
    honor_affinity = any(c.honor_affinity for c in constraints)
    honor_taints = any(c.honor_taints for c in constraints)
    pod_key = (require_all, tuple(keys), index.affinity_key(pod) if honor_affinity else None,
               pod.tolerations if honor_taints else None)
    host_counts: dict[int, IntArray] = {}
    for i, c in enumerate(constraints):
        empty_sel = c.selector.empty() or c.selector.nothing
        if c.topology_key == LABEL_HOSTNAME:
            if empty_sel:
                host_counts[i] = np.zeros(size, np.int64)
            else:
                host_counts[i] = counts.counts(table, pod.namespace, c.selector).copy()
            continue
        if empty_sel:
            continue
        pc = pairs[ckeys[i]]
        assert pc.row_ids is not None

        def masks(c: Constraint = c) -> list[BoolArray]:
            inc = np.zeros(size, np.bool_)
            inc[counts.rows] = True
            if require_all:
                inc &= has_all
            if c.honor_affinity:
                aff = index.affinity_match(table, pod)
                if aff is not None:
                    inc &= aff
            if c.honor_taints:
                inc &= index.taints_tolerated(table, pod.tolerations)
            return [inc]

        layer = counts.counts(table, pod.namespace, c.selector)
        ds = domain_sums(table, ("score", pod.namespace, c.topology_key, c.selector, c.honor_affinity, c.honor_taints,
                                 pod_key), pc.row_ids, pc.counter.size, masks, [layer])
        pc.counter += np.where(pc.created, ds.sums, 0)
    return PreScoreState(constraints, ignored, ignored_rows, pairs, tuple(weights), host_counts,
                         {k: cols[k].ids for k in keys}, table.node_version, ~fkeep, ckeys)


def compute_state_plain(pod: Pod, constraints: tuple[Constraint, ...], nodes: Sequence[NodeInfo], require_all: bool,
                        all_nodes: Sequence[NodeInfo], *, per_constraint: bool = False) -> PreScoreState:
    """initPreScoreState + PreScore node by node, as upstream writes it (reference path)."""
    keys = list(dict.fromkeys(c.topology_key for c in constraints))
    ckeys = count_keys(constraints, per_constraint)
    ignored: set[str] = set()
    counters: dict[str, dict[str, int]] = {}
    topo_size = [0] * len(constraints)
    for ni in nodes:
        node = ni.node
        assert node is not None
        labels = node.meta.labels
        if require_all and not node_has_keys(labels, keys):
            ignored.add(node.meta.name)
            continue
        for i, c in enumerate(constraints):
            if c.topology_key == LABEL_HOSTNAME:
                continue
            m = counters.setdefault(ckeys[i], {})
            v = labels.get(c.topology_key, "")
            if v not in m:
                m[v] = 0
                topo_size[i] += 1
    weights = []
    for i, c in enumerate(constraints):
        sz = len(nodes) - len(ignored) if c.topology_key == LABEL_HOSTNAME else topo_size[i]
        weights.append(topology_normalizing_weight(sz))
    required = RequiredNodeAffinity(pod)
    for ni in all_nodes:
        node = ni.node
        if node is None:
            continue
        labels = node.meta.labels
        if require_all and not node_has_keys(labels, keys):
            continue
        for c, ck in zip(constraints, ckeys, strict=True):
            if not match_node_inclusion(c, pod, node, required):
                continue
            tp = counters.get(ck)
            v = labels.get(c.topology_key, "")
            if tp is None or v not in tp:
                continue
            tp[v] += count_pods_match_selector(ni.pods, c.selector, pod.namespace)
    pairs: dict[str, PairCounts] = {}
    for k, m in counters.items():
        vocab = {v: i for i, v in enumerate(m)}
        pairs[k] = PairCounts(vocab, None, vocab.get("", len(vocab)),
                              np.fromiter(list(m.values()) + [0], np.int64, len(m) + 1),
                              np.array([True] * len(m) + [False], np.bool_))
    cand_ignored = np.fromiter((ni.name in ignored for ni in nodes), np.bool_, len(nodes))
    return PreScoreState(constraints, frozenset(ignored), None, pairs, tuple(weights), {}, None, -1, cand_ignored,
                         ckeys)


def node_score(s: PreScoreState, pod: Pod, node_info: NodeInfo) -> int:
    """Score: Σ over the constraints whose key the node has of cnt·weight + (maxSkew − 1),
    rounded half away from zero; 0 for an ignored node."""
    node = node_info.node
    assert node is not None
    if node.meta.name in s.ignored:
        return 0
    labels = node.meta.labels
    score = 0.0
    for i, c in enumerate(s.constraints):
        v = labels.get(c.topology_key)
        if v is None:
            continue
        if c.topology_key == LABEL_HOSTNAME:
            cnt = count_pods_match_selector(node_info.pods, c.selector, pod.namespace)
        else:
            cnt = s.pairs[s.count_keys[i]].get(v)
        score += float(cnt) * s.weights[i] + float(c.max_skew - 1)
    return go_round(score)


def rows_score(s: PreScoreState, table: NodeTable, rows: IntArray) -> IntArray:
    """:func:`node_score` for table rows (same float operations in the same order)."""
    assert s.key_ids is not None
    score = np.zeros(rows.size, np.float64)
    for i, c in enumerate(s.constraints):
        k = c.topology_key
        ids = s.key_ids[k][rows]
        present = ids >= 0
        if k == LABEL_HOSTNAME:
            cnt = s.host_counts[i][rows]
        else:
            pc = s.pairs[s.count_keys[i]]
            pid = np.where(present, ids, 0)
            cnt = np.where(pc.created[pid], pc.counter[pid], 0) if pc.counter.size else np.zeros(rows.size, np.int64)
        score = score + np.where(present, cnt.astype(np.float64) * s.weights[i] + float(c.max_skew - 1), 0.0)
    fl = np.floor(score)
    out: IntArray = np.where(score - fl >= 0.5, fl + 1.0, fl).astype(np.int64)
    if s.ignored_rows is not None:
        out[s.ignored_rows[rows]] = 0
    return out


def normalize(scores: IntArray, ignored: BoolArray) -> IntArray:
    """NormalizeScore over an array: ignored -> 0; max (from 0) and min over the others;
    max == 0 -> 100; else 100·(max + min − s) / max."""
    keep = ~ignored
    out = np.zeros(scores.size, np.int64)
    if not keep.any():
        return out
    vals = scores[keep]
    max_score = max(int(vals.max()), 0)
    min_score = int(vals.min())
    if max_score == 0:
        out[keep] = MAX_NODE_SCORE
    else:
        out[keep] = MAX_NODE_SCORE * (max_score + min_score - vals) // max_score
    return out
