"""InterPodAffinity alone on scheduler_perf's SchedulingPodAntiAffinity shape: 5000 nodes,
1000 running pods with required hostname anti-affinity, 1000 incoming pods like them, each
bound to its first feasible node. Prints the plugin's time per pod and extension point.

    .venv/bin/python -m tests.plugins.interpodaffinity.benchmark [nodes init pods [unique_labels]]
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any

import numpy as np

from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.framework import CycleState
from kubesched.objects.parse import parse_node, parse_pod
from kubesched.plugins.interpodaffinity import new

AFFINITY: dict[str, Any] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": "kubernetes.io/hostname",
     "namespaces": ["sched-test", "sched-setup"]}]}}


def _node(i: int) -> Any:
    return parse_node({"apiVersion": "v1", "kind": "Node",
                       "metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}",
                                                                   "topology.kubernetes.io/zone": f"zone-{i % 3}"}},
                       "status": {"capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"}}})


def _pod(name: str, ns: str, node: str = "", unique_label: bool = False) -> Any:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "", "resources": {"requests": {"cpu": "100m"}}}],
                            "affinity": AFFINITY}
    if node:
        spec["nodeName"] = node
    return parse_pod({"apiVersion": "v1", "kind": "Pod", "spec": spec,
                      "metadata": {"name": name, "namespace": ns, "uid": f"{ns}-{name}",
                                   "labels": {"color": "green", **({"pod-name": name} if unique_label else {})}}})


def main(n_nodes: int = 5000, n_init: int = 1000, n_pods: int = 1000, unique_labels: int = 0) -> None:
    """``unique_labels``: give every pod its own extra label (StatefulSet-like)."""
    nodes = [_node(i) for i in range(n_nodes)]
    init = [_pod(f"init-{i}", "sched-setup", f"node-{i}", bool(unique_labels)) for i in range(n_init)]
    pods = [_pod(f"p-{i}", "sched-test", unique_label=bool(unique_labels)) for i in range(n_pods)]
    handle = FrameworkHandle.for_nodes(nodes, init, MemoryObjects())
    pl = new(None, handle)
    table = handle.snapshot.table
    spent = dict.fromkeys(("pre_filter", "filter_batch", "pre_score", "score"), 0.0)
    t0 = time.perf_counter()
    for p in pods:
        infos = handle.snapshot.list()
        rows = np.fromiter((ni.index for ni in infos), np.int64, len(infos))
        a = time.perf_counter()
        state = CycleState()
        _, st = pl.pre_filter(state, p)
        b = time.perf_counter()
        ok = pl.filter_batch(state, p, table, rows) if st is None else np.ones(len(rows), np.bool_)
        c = time.perf_counter()
        feasible = [ni for ni, f in zip(infos, ok.tolist(), strict=True) if f]
        d = time.perf_counter()
        if pl.pre_score(state, p, feasible) is None:
            e = time.perf_counter()
            frows = np.fromiter((ni.index for ni in feasible), np.int64, len(feasible))
            pl.normalize_score_batch(state, p, pl.score_batch(state, p, table, frows))
        else:
            e = time.perf_counter()
        f = time.perf_counter()
        spent["pre_filter"] += b - a
        spent["filter_batch"] += c - b
        spent["pre_score"] += e - d
        spent["score"] += f - e
        handle.cache.add_pod(dataclasses.replace(p, node_name=feasible[0].name))
    total = time.perf_counter() - t0
    print({k: f"{v * 1000 / n_pods:.3f} ms" for k, v in spent.items()}, "per pod")
    print(f"plugin total {sum(spent.values()) * 1000 / n_pods:.3f} ms/pod; loop incl. harness {n_pods / total:.0f} pods/s")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
