"""InterPodAffinity on random clusters, against a direct transcription of upstream's
algorithm (no caches, no numpy):

- PreFilter maps, Filter statuses and PreScore/Score/NormalizeScore equal the reference;
- filter_batch / score_batch / normalize_score_batch equal the per-node methods on every node,
  also after AddPod / RemovePod on a cloned state;
- one plugin instance kept across many cycles while the cluster changes (its incremental
  caches) gives exactly what the reference computes from scratch.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from kubesched._runtime.handle import FrameworkHandle
from kubesched.config.args import InterPodAffinityArgs
from kubesched.framework import AffinityTerm, CycleState, NodeInfo, NodeScore, NodeTable, PodInfo, StateKey, Status
from kubesched.objects import LabelSelector, Namespace, Node, ObjectMeta, Pod
from kubesched.plugins.interpodaffinity import NAME, InterPodAffinity, new
from kubesched.plugins.interpodaffinity.filtering import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    PreFilterState,
)

from .util import affinity, expr, handle_for, node, pod, term, weighted

KEY: StateKey[PreFilterState] = StateKey("PreFilter" + NAME)

NAMESPACES = [
    Namespace(ObjectMeta(name="default", labels={"kubernetes.io/metadata.name": "default"})),
    Namespace(ObjectMeta(name="ns1", labels={"team": "a", "kubernetes.io/metadata.name": "ns1"})),
    Namespace(ObjectMeta(name="ns2", labels={"team": "b", "kubernetes.io/metadata.name": "ns2"})),
    Namespace(ObjectMeta(name="ns3", labels={"team": "a", "env": "x", "kubernetes.io/metadata.name": "ns3"})),
    Namespace(ObjectMeta(name="nsY", labels={"kubernetes.io/metadata.name": "nsY"})),
]
TOPOLOGY_KEYS = ["zone", "region", "hostname", "rack", "missing"]
POD_LABELS = {"app": ["web", "db", "cache"], "tier": ["fe", "be"], "security": ["S1", "S2"]}
# A key only pods created late in a sequence use, in labels and selectors: its first term
# changes which incoming-pod labels the plugin's caches may ignore.
LATE_LABELS = {**POD_LABELS, "late": ["x", "y"]}


# ----------------------------------------------------------------------------- reference
@dataclasses.dataclass
class RefTerm:
    namespaces: set[str]
    ns_selector: LabelSelector | None  # after merging: None = Nothing, empty = Everything
    selector: LabelSelector | None
    topology_key: str
    weight: int = 0

    def matches(self, p: Pod, ns_labels: Mapping[str, str]) -> bool:
        if p.namespace in self.namespaces or (self.ns_selector is not None and self.ns_selector.matches(ns_labels)):
            return self.selector is not None and self.selector.matches(p.labels)
        return False


def ref_merge(t: AffinityTerm, namespaces: Sequence[Namespace], weight: int = 0) -> RefTerm:
    """newAffinityTerm + mergeAffinityTermNamespacesIfNotEmpty."""
    sel = t.namespace_selector
    names = set(t.namespaces)
    if sel is not None and not sel.is_empty():
        names |= {ns.name for ns in namespaces if sel.matches(ns.labels)}
        sel = None
    return RefTerm(names, sel, t.selector, t.topology_key, weight)


def ref_existing(t: AffinityTerm) -> RefTerm:
    return RefTerm(set(t.namespaces), t.namespace_selector, t.selector, t.topology_key)


def ns_labels_of(namespaces: Sequence[Namespace], name: str) -> Mapping[str, str]:
    for ns in namespaces:
        if ns.name == name:
            return ns.labels
    return {}


@dataclasses.dataclass
class RefPreFilter:
    existing: dict[tuple[str, str], int]
    affinity: dict[tuple[str, str], int]
    anti: dict[tuple[str, str], int]
    aff_terms: list[RefTerm]
    anti_terms: list[RefTerm]
    skip: bool
    self_match: bool


def ref_pre_filter(p: Pod, infos: Sequence[NodeInfo], namespaces: Sequence[Namespace]) -> RefPreFilter:
    pi = PodInfo(p)
    aff = [ref_merge(t, namespaces) for t in pi.required_affinity_terms]
    anti = [ref_merge(t, namespaces) for t in pi.required_anti_affinity_terms]
    nsl = ns_labels_of(namespaces, p.namespace)
    existing: dict[tuple[str, str], int] = {}
    affinity_counts: dict[tuple[str, str], int] = {}
    anti_counts: dict[tuple[str, str], int] = {}
    for ni in infos:
        assert ni.node is not None
        labels = ni.node.meta.labels
        for epi in ni.pods_with_required_anti_affinity:
            for et in epi.required_anti_affinity_terms:
                if ref_existing(et).matches(p, nsl) and et.topology_key in labels:
                    k = (et.topology_key, labels[et.topology_key])
                    existing[k] = existing.get(k, 0) + 1
        for epi in ni.pods:
            if aff and all(t.matches(epi.pod, {}) for t in aff):
                for t in aff:
                    if t.topology_key in labels:
                        k = (t.topology_key, labels[t.topology_key])
                        affinity_counts[k] = affinity_counts.get(k, 0) + 1
            for t in anti:
                if t.matches(epi.pod, {}) and t.topology_key in labels:
                    k = (t.topology_key, labels[t.topology_key])
                    anti_counts[k] = anti_counts.get(k, 0) + 1
    skip = not existing and not aff and not anti
    self_match = bool(aff) and all(t.matches(p, {}) for t in aff)
    return RefPreFilter(existing, affinity_counts, anti_counts, aff, anti, skip, self_match)


def ref_filter(s: RefPreFilter, labels: Mapping[str, str]) -> Status | None:
    exist = True
    for t in s.aff_terms:
        if t.topology_key not in labels:
            return Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
        if s.affinity.get((t.topology_key, labels[t.topology_key]), 0) <= 0:
            exist = False
    if not exist and not (not s.affinity and s.self_match):
        return Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
    for t in s.anti_terms:
        if t.topology_key in labels and s.anti.get((t.topology_key, labels[t.topology_key]), 0) > 0:
            return Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
    for kv in labels.items():
        if s.existing.get(kv, 0) > 0:
            return Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
    return None


def ref_scores(p: Pod, feasible: Sequence[NodeInfo], all_infos: Sequence[NodeInfo], namespaces: Sequence[Namespace],
               args: InterPodAffinityArgs) -> list[int] | None:
    """PreScore + Score + NormalizeScore; None for Skip."""
    if not feasible:
        return None
    pi = PodInfo(p)
    has = bool(pi.preferred_affinity_terms or pi.preferred_anti_affinity_terms)
    if args.ignore_preferred_terms_of_existing_pods and not has:
        return None
    pa = [ref_merge(w.term, namespaces, w.weight) for w in pi.preferred_affinity_terms]
    pan = [ref_merge(w.term, namespaces, w.weight) for w in pi.preferred_anti_affinity_terms]
    nsl = ns_labels_of(namespaces, p.namespace)
    topo: dict[str, dict[str, int]] = {}

    def process(t: RefTerm, weight: int, target: Pod, target_ns: Mapping[str, str], labels: Mapping[str, str]) -> None:
        if t.matches(target, target_ns) and t.topology_key in labels:
            d = topo.setdefault(t.topology_key, {})
            d[labels[t.topology_key]] = d.get(labels[t.topology_key], 0) + weight

    for ni in all_infos:
        if not has and not ni.pods_with_affinity:
            continue
        assert ni.node is not None
        labels = ni.node.meta.labels
        for epi in (ni.pods if has else ni.pods_with_affinity):
            if not labels:
                continue
            for t in pa:
                process(t, t.weight, epi.pod, {}, labels)
            for t in pan:
                process(t, -t.weight, epi.pod, {}, labels)
            if args.hard_pod_affinity_weight > 0:
                for et in epi.required_affinity_terms:
                    process(ref_existing(et), args.hard_pod_affinity_weight, p, nsl, labels)
            for wt in epi.preferred_affinity_terms:
                process(ref_existing(wt.term), wt.weight, p, nsl, labels)
            for wt in epi.preferred_anti_affinity_terms:
                process(ref_existing(wt.term), -wt.weight, p, nsl, labels)
    if not topo:
        return None
    raw = []
    for ni in feasible:
        assert ni.node is not None
        labels = ni.node.meta.labels
        raw.append(sum(vals.get(labels[k], 0) for k, vals in topo.items() if k in labels))
    lo, hi = min(raw), max(raw)
    return [int(100.0 * ((s - lo) / (hi - lo))) if hi > lo else 0 for s in raw]


# ----------------------------------------------------------------------------- random objects
def rand_selector(rng: random.Random, pool: dict[str, list[str]]) -> dict[str, Any] | None:
    r = rng.random()
    if r < 0.08:
        return None
    if r < 0.16:
        return {}
    sel: dict[str, Any] = {}
    exprs = []
    for _ in range(rng.randint(1, 2)):
        key = rng.choice(list(pool))
        op = rng.choice(["In", "In", "NotIn", "Exists", "DoesNotExist"])
        if op in ("In", "NotIn"):
            exprs.append(expr(key, op, rng.sample(pool[key], rng.randint(1, len(pool[key])))))
        else:
            exprs.append(expr(key, op))
    if rng.random() < 0.3:
        key = rng.choice(list(pool))
        sel["matchLabels"] = {key: rng.choice(pool[key])}
    sel["matchExpressions"] = exprs
    return sel


def rand_term(rng: random.Random, pool: dict[str, list[str]]) -> dict[str, Any]:
    sel = rand_selector(rng, pool)
    t = term(rng.choice(TOPOLOGY_KEYS), nil_selector=True)
    if sel is not None:
        t["labelSelector"] = sel
    r = rng.random()
    if r < 0.2:
        t["namespaces"] = rng.sample(["default", "ns1", "ns2", "ns3", "nsX"], rng.randint(1, 2))
    r = rng.random()
    if r < 0.1:
        t["namespaceSelector"] = {}
    elif r < 0.25:
        t["namespaceSelector"] = {"matchExpressions": [expr("team", "In", [rng.choice(["a", "b"])])]}
    elif r < 0.3:
        t["namespaceSelector"] = {"matchExpressions": [expr("team", "DoesNotExist")]}
    return t


def rand_affinity(rng: random.Random, p_required: float, p_preferred: float,
                  pool: dict[str, list[str]]) -> dict[str, Any] | None:
    kw: dict[str, Any] = {}
    for name, prob in (("req", p_required), ("anti_req", p_required), ("pref", p_preferred), ("anti_pref", p_preferred)):
        if rng.random() < prob:
            n = rng.randint(1, 2)
            if name.endswith("pref"):
                kw[name] = [weighted(rng.randint(1, 100), rand_term(rng, pool)) for _ in range(n)]
            else:
                kw[name] = [rand_term(rng, pool) for _ in range(n)]
    return affinity(**kw) if kw else None


def rand_labels(rng: random.Random, pool: dict[str, list[str]]) -> dict[str, str]:
    labels = {k: rng.choice(vs) for k, vs in pool.items() if rng.random() < 0.6}
    if rng.random() < 0.3:
        labels["pod-name"] = f"unique-{rng.random()}"  # never selected: must not defeat caching
    return labels


def rand_pod(rng: random.Random, node_name: str = "", p_required: float = 0.3, p_preferred: float = 0.3,
             pool: dict[str, list[str]] = POD_LABELS) -> Pod:
    return pod(labels=rand_labels(rng, pool), node=node_name, ns=rng.choice(["default", "ns1", "ns2", "ns3", "nsY"]),
               aff=rand_affinity(rng, p_required, p_preferred, pool))


def rand_node_labels(rng: random.Random, name: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    if rng.random() < 0.9:
        labels["zone"] = rng.choice(["a", "b", "c"])
    if rng.random() < 0.8:
        labels["region"] = rng.choice(["r1", "r2"])
    if rng.random() < 0.85:
        labels["hostname"] = name
    if rng.random() < 0.3:
        labels["rack"] = rng.choice(["k1", "k2", "k3"])
    return labels


def rand_cluster(rng: random.Random, n_nodes: int, n_pods: int) -> tuple[list[Node], list[Pod]]:
    nodes = [node(f"n{i}", rand_node_labels(rng, f"n{i}")) for i in range(n_nodes)]
    pods = [rand_pod(rng, rng.choice(nodes).meta.name) for _ in range(n_pods)]
    return nodes, pods


# ----------------------------------------------------------------------------- checks
def check_cycle(pl: InterPodAffinity, handle: FrameworkHandle, incoming: Pod, rng: random.Random) -> None:
    infos = list(handle.snapshot.list())
    table = handle.snapshot.table
    rows = np.array([ni.index for ni in infos], np.int64)
    ref = ref_pre_filter(incoming, infos, NAMESPACES)
    state = CycleState()
    _, st = pl.pre_filter(state, incoming)
    assert (st is not None and st.is_skip()) == ref.skip
    if not ref.skip:
        s = state.read(KEY)
        assert (s.existing_anti_affinity_counts, s.affinity_counts, s.anti_affinity_counts) == (
            ref.existing, ref.affinity, ref.anti)
        per_node = [pl.filter(state, incoming, ni) for ni in infos]
        assert per_node == [ref_filter(ref, ni.node.meta.labels) for ni in infos if ni.node is not None]
        assert list(pl.filter_batch(state, incoming, table, rows)) == [x is None for x in per_node]
        codes, statuses = pl.filter_batch_status(state, incoming, table, rows)
        assert [statuses[c] for c in codes.tolist()] == per_node
        # Any subset of the rows, in any order (the scheduler asks for the rejected ones).
        picked = rng.sample(range(len(infos)), rng.randint(0, len(infos)))
        codes, statuses = pl.filter_batch_status(state, incoming, table, rows[picked])
        assert [statuses[c] for c in codes.tolist()] == [per_node[i] for i in picked]
        # Nominated pods / preemption: AddPod and RemovePod on a clone.
        cloned = state.clone()
        for _ in range(3):
            ni = rng.choice(infos)
            if ni.pods and rng.random() < 0.5:
                pl.remove_pod(cloned, incoming, rng.choice(ni.pods), ni)
            else:
                pl.add_pod(cloned, incoming, PodInfo(rand_pod(rng, ni.name, 0.5, 0.0)), ni)
            per_node = [pl.filter(cloned, incoming, x) for x in infos]
            assert list(pl.filter_batch(cloned, incoming, table, rows)) == [x is None for x in per_node]
            codes, statuses = pl.filter_batch_status(cloned, incoming, table, rows)
            assert [statuses[c] for c in codes.tolist()] == per_node
        assert (s.existing_anti_affinity_counts, s.affinity_counts, s.anti_affinity_counts) == (
            ref.existing, ref.affinity, ref.anti)
    feasible = [ni for ni in infos if rng.random() < 0.7]
    want = ref_scores(incoming, feasible, infos, NAMESPACES, pl.args)
    st = pl.pre_score(state, incoming, feasible)
    assert (st is not None and st.is_skip()) == (want is None)
    if want is not None:
        assert st is None
        scores = [NodeScore(ni.name, pl.score(state, incoming, ni)) for ni in feasible]
        frows = np.array([ni.index for ni in feasible], np.int64)
        raw = pl.score_batch(state, incoming, table, frows)
        assert list(raw) == [x.score for x in scores]
        pl.normalize_score(state, incoming, scores)
        assert [x.score for x in scores] == want
        assert list(pl.normalize_score_batch(state, incoming, raw)) == want


@pytest.mark.parametrize("seed", range(60), ids=[f"random cluster {i} agrees with the reference" for i in range(60)])
def test_random_cluster_matches_reference_per_node_and_batch(seed: int) -> None:
    rng = random.Random(seed)
    nodes, pods = rand_cluster(rng, rng.randint(1, 12), rng.randint(0, 30))
    handle = handle_for(nodes, pods, NAMESPACES)
    args = InterPodAffinityArgs(hard_pod_affinity_weight=rng.choice([0, 1, 5, 100]),
                                ignore_preferred_terms_of_existing_pods=rng.random() < 0.2)
    pl = new(args, handle)
    for _ in range(4):
        check_cycle(pl, handle, rand_pod(rng, p_required=0.5, p_preferred=0.5), rng)


@pytest.mark.parametrize("short_log", [False, True], ids=["", "change log trimmed often"])
@pytest.mark.parametrize("seed", range(16), ids=[f"caches kept across changing cluster {i} stay exact"
                                                 for i in range(16)])
def test_plugin_caches_follow_cluster_changes(seed: int, short_log: bool, monkeypatch: Any) -> None:
    """One plugin instance over many cycles while pods are bound and deleted and nodes are
    relabelled, added and removed; incoming pods repeat so the cached aggregates are reused
    (and, when the table's change log is trimmed often, rebuilt)."""
    if short_log:
        monkeypatch.setattr(NodeTable, "_log_limit", lambda self: 1)
    rng = random.Random(1000 + seed)
    nodes, pods = rand_cluster(rng, 8, 20)
    handle = handle_for(nodes, pods, NAMESPACES)
    pl = new(None, handle)
    pool = [rand_pod(rng, p_required=0.6, p_preferred=0.5, pool=LATE_LABELS) for _ in range(4)]
    running = list(pods)
    next_node = len(nodes)
    for step in range(40):
        incoming = rng.choice(pool)
        # Variants of a few pods: a label no selector names (must share the caches) and the
        # "late" label (which selectors name only once late pods are running).
        labels = {**incoming.labels, "pod-name": f"p{step}"}
        labels.pop("late", None)
        late_value = rng.choice(["x", "y", None])
        if late_value is not None:
            labels["late"] = late_value
        incoming = dataclasses.replace(incoming, meta=dataclasses.replace(incoming.meta, labels=labels))
        check_cycle(pl, handle, incoming, rng)
        r = rng.random()
        infos = list(handle.snapshot.list())
        if r < 0.45 and infos:
            late = LATE_LABELS if step > 20 else POD_LABELS
            template = rng.choice(pool + [rand_pod(rng, pool=late)])
            bound = dataclasses.replace(template, node_name=rng.choice(infos).name,
                                        meta=dataclasses.replace(template.meta, uid=f"u{rng.random()}"))
            handle.cache.add_pod(bound)
            running.append(bound)
        elif r < 0.7 and running:
            victim = running.pop(rng.randrange(len(running)))
            handle.cache.remove_pod(victim)
        elif r < 0.85 and infos:
            ni = rng.choice(infos)
            handle.cache.update_node(node(ni.name, rand_node_labels(rng, ni.name)))
        elif r < 0.93:
            handle.cache.add_node(node(f"n{next_node}", rand_node_labels(rng, f"n{next_node}")))
            next_node += 1
        elif len(infos) > 1:
            gone = rng.choice(infos)
            handle.cache.remove_node(gone.name)
            running = [p for p in running if p.node_name != gone.name]


class _DetachedSnapshot:
    """The cache's snapshot, but listing detached clones (NodeInfos without table rows)."""

    def __init__(self, handle: FrameworkHandle) -> None:
        snap = handle.cache.snapshot
        self._infos = [ni.clone() for ni in snap.list()]
        self.table = snap.table

    def list(self) -> list[NodeInfo]:
        return self._infos

    def get(self, name: str) -> NodeInfo | None:
        return next((ni for ni in self._infos if ni.name == name), None)

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]:
        return [ni for ni in self._infos if ni.pods_with_affinity]

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]:
        return [ni for ni in self._infos if ni.pods_with_required_anti_affinity]


class _DetachedHandle(FrameworkHandle):
    def __init__(self, base: FrameworkHandle) -> None:
        super().__init__(base.cache, base.objects)
        self._snap = _DetachedSnapshot(base)

    @property
    def snapshot(self) -> Any:
        return self._snap


@pytest.mark.parametrize("seed", range(8), ids=[f"node infos without table rows are scanned ({i})" for i in range(8)])
def test_snapshot_not_backed_by_the_table(seed: int) -> None:
    rng = random.Random(5000 + seed)
    nodes, pods = rand_cluster(rng, rng.randint(1, 10), rng.randint(0, 25))
    handle = _DetachedHandle(handle_for(nodes, pods, NAMESPACES))
    pl = new(None, handle)
    for _ in range(4):
        check_cycle(pl, handle, rand_pod(rng, p_required=0.5, p_preferred=0.5), rng)


def test_a_term_naming_a_new_label_key_is_not_answered_from_older_caches() -> None:
    """Incoming pods differing only in a label no running pod's term names share cached
    counts; once a term naming that key runs, they must not any more."""
    nodes = [node("a", {"hostname": "a"}), node("b", {"hostname": "b"})]
    running = [pod(name="e1", node="a", labels={"app": "db"},
                   aff=affinity(anti_req=[term("hostname", expr("app", "In", ["web"]))]))]
    handle = handle_for(nodes, running, NAMESPACES)
    pl = new(None, handle)
    rng = random.Random(0)
    with_late = pod(name="in1", labels={"app": "web", "late": "x"})
    without_late = pod(name="in2", labels={"app": "web"})
    for incoming in (with_late, with_late, without_late):
        check_cycle(pl, handle, incoming, rng)
    handle.cache.add_pod(pod(name="e2", node="b", aff=affinity(anti_req=[term("hostname", expr("late", "In", ["x"]))])))
    for incoming in (with_late, without_late, with_late, without_late):
        check_cycle(pl, handle, incoming, rng)
