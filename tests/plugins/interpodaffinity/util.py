"""Builders for InterPodAffinity tests (the shapes of upstream's st.MakePod().PodAffinityIn...)."""

from __future__ import annotations

import itertools
from typing import Any

from builders import make_node, make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.objects import Namespace, Node, ObjectMeta, Pod

_names = itertools.count()

NS_LABEL_T1 = {"team": "team1"}
NS_LABEL_T2 = {"team": "team2"}
# scoring_test.go: namespaces
NAMESPACES = [
    Namespace(ObjectMeta(name="subteam1.team1", labels=NS_LABEL_T1)),
    Namespace(ObjectMeta(name="subteam2.team1", labels=NS_LABEL_T1)),
    Namespace(ObjectMeta(name="subteam1.team2", labels=NS_LABEL_T2)),
    Namespace(ObjectMeta(name="subteam2.team2", labels=NS_LABEL_T2)),
]


def expr(key: str, op: str, values: list[str] | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values is not None:
        e["values"] = values
    return e


def term(topology: str, *exprs: dict[str, Any], match_labels: dict[str, str] | None = None,
         namespaces: list[str] | None = None, ns_selector: dict[str, Any] | None = None,
         nil_selector: bool = False) -> dict[str, Any]:
    """A PodAffinityTerm; ``exprs`` are the labelSelector's matchExpressions."""
    t: dict[str, Any] = {"topologyKey": topology}
    if not nil_selector:
        sel: dict[str, Any] = {}
        if exprs:
            sel["matchExpressions"] = list(exprs)
        if match_labels:
            sel["matchLabels"] = dict(match_labels)
        t["labelSelector"] = sel
    if namespaces is not None:
        t["namespaces"] = namespaces
    if ns_selector is not None:
        t["namespaceSelector"] = ns_selector
    return t


def weighted(weight: int, t: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": t}


def affinity(*, req: list[dict[str, Any]] | None = None, pref: list[dict[str, Any]] | None = None,
             anti_req: list[dict[str, Any]] | None = None, anti_pref: list[dict[str, Any]] | None = None
             ) -> dict[str, Any]:
    a: dict[str, Any] = {}
    if req is not None or pref is not None:
        a["podAffinity"] = {}
        if req is not None:
            a["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = req
        if pref is not None:
            a["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = pref
    if anti_req is not None or anti_pref is not None:
        a["podAntiAffinity"] = {}
        if anti_req is not None:
            a["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = anti_req
        if anti_pref is not None:
            a["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = anti_pref
    return a


def pod(*, labels: dict[str, str] | None = None, node: str = "", ns: str = "", aff: dict[str, Any] | None = None,
        name: str | None = None) -> Pod:
    b = make_pod().name(name or f"p{next(_names)}").namespace(ns)
    if labels:
        b = b.labels(labels)
    if node:
        b = b.node(node)
    if aff is not None:
        b = b.affinity(aff)
    return b.obj()


def node(name: str, labels: dict[str, str] | None = None) -> Node:
    """A node with exactly these labels (no automatic hostname label, as upstream's tests)."""
    b = make_node().capacity(cpu="100", memory="100Gi", pods=1000)
    b.m["metadata"] = {"name": name, "labels": dict(labels or {})}
    return b.obj()


def handle_for(nodes: list[Node], pods: list[Pod], namespaces: list[Namespace] | None = None) -> FrameworkHandle:
    return FrameworkHandle.for_nodes(nodes, pods, MemoryObjects(namespaces=namespaces or NAMESPACES))
