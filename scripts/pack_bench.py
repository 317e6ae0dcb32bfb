"""Benchmark of `kubesched pack` on a generated cluster: 200 nodes and 2000 pending pods.

    python scripts/pack_bench.py [--nodes 200] [--pods 2000] [--time-limit 30] [--unique] [--seed 1]
                                 [--write-manifests DIR]

The cluster (seeded, so runs are comparable):

- nodes in 3 zones: 45% of 16 cpu / 64Gi, 45% of 32 cpu / 128Gi (half of them labelled
  disktype=ssd), 10% of 32 cpu / 128Gi with 4 nvidia.com/gpu, tainted gpu=true:NoSchedule;
- running pods bound to the first fifth of the nodes (they keep those nodes used);
- pending pods from 24 Deployment-like groups of replicas created interleaved (the queue mixes
  them): sizes from 100m / 128Mi to 4 cpu / 16Gi, some with a nodeSelector (disktype=ssd),
  one with a hostPort (9100), one with required anti-affinity per hostname, one with required
  anti-affinity per zone (at most one per zone: 3 placed), GPU pods with a toleration.

``--unique`` gives every pending pod its own memory request (``+i Ki``), so no two pods are
interchangeable: the model then has one binary variable per feasible (pod, node) pair, the
worst case for its size.

Prints the model size, the build and solve times, the solver's status, objective, bound and
gap, and nodes used by the packing against the scheduler's greedy schedule (same run, same
input), then the verification of every placement against the real filters.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from kubesched.objects import ClusterObjects
from kubesched.objects.parse import parse_node, parse_pod
from kubesched.whatif.pack import pack

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


def node_manifests(n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        name = f"node-{i:03d}"
        labels = {HOSTNAME: name, ZONE: f"zone-{'abc'[i % 3]}"}
        spec: dict[str, Any] = {}
        share = i / n
        if share < 0.45:
            cap = {"cpu": "16", "memory": "64Gi", "pods": "110"}
        elif share < 0.9:
            cap = {"cpu": "32", "memory": "128Gi", "pods": "110"}
            if i % 2:
                labels["disktype"] = "ssd"
        else:
            cap = {"cpu": "32", "memory": "128Gi", "pods": "110", "nvidia.com/gpu": "4"}
            labels["accelerator"] = "gpu"
            spec["taints"] = [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]
        out.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": spec,
                    "status": {"capacity": cap, "allocatable": cap}})
    return out


# (name, cpu, memory, weight in the mix, extra spec)
GROUPS: list[tuple[str, str, str, int, dict[str, Any]]] = [
    ("web", "500m", "1Gi", 10, {}),
    ("api", "1", "2Gi", 8, {}),
    ("worker", "2", "4Gi", 6, {}),
    ("batch", "3", "6Gi", 4, {}),
    ("cache", "1500m", "8Gi", 4, {"nodeSelector": {"disktype": "ssd"}}),
    ("db", "4", "16Gi", 2, {"nodeSelector": {"disktype": "ssd"}}),
    ("sidecar", "100m", "128Mi", 8, {}),
    ("logs", "250m", "256Mi", 6, {}),
    ("ml", "6", "24Gi", 1, {"tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
                            "gpu": "1"}),
    ("exporter", "100m", "64Mi", 2, {"hostPort": 9100}),
    ("ingress", "1", "1Gi", 1, {"antiAffinity": HOSTNAME}),
    ("quorum", "500m", "512Mi", 1, {"antiAffinity": ZONE}),
    ("report", "700m", "3Gi", 3, {}),
    ("thumb", "300m", "600Mi", 5, {}),
    ("search", "2500m", "10Gi", 2, {}),
    ("queue", "1200m", "1500Mi", 3, {}),
    ("auth", "200m", "400Mi", 4, {}),
    ("mail", "400m", "700Mi", 2, {}),
    ("video", "3500m", "5Gi", 2, {}),
    ("stats", "800m", "2500Mi", 3, {}),
    ("pdf", "600m", "1200Mi", 2, {}),
    ("geo", "1800m", "3500Mi", 2, {}),
    ("crm", "900m", "1800Mi", 2, {}),
    ("etl", "2200m", "7Gi", 2, {}),
]


def pod_manifest(name: str, group: str, cpu: str, memory: str, extra: dict[str, Any], ts: int,
                 node: str = "") -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": f"example/{group}",
                                 "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    spec: dict[str, Any] = {"containers": [container]}
    if node:
        spec["nodeName"] = node
    if "gpu" in extra:
        container["resources"]["requests"]["nvidia.com/gpu"] = extra["gpu"]
        container["resources"]["limits"] = {"nvidia.com/gpu": extra["gpu"]}
    if "hostPort" in extra:
        container["ports"] = [{"containerPort": extra["hostPort"], "hostPort": extra["hostPort"]}]
    if "nodeSelector" in extra:
        spec["nodeSelector"] = extra["nodeSelector"]
    if "tolerations" in extra:
        spec["tolerations"] = extra["tolerations"]
    if "antiAffinity" in extra:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": group}}, "topologyKey": extra["antiAffinity"]}]}}
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_700_000_000 + ts))
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": {"app": group},
                         "creationTimestamp": created},
            "spec": spec}


def generate(num_nodes: int, num_pods: int, *, unique: bool, seed: int,
             running_nodes: int | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rng = random.Random(seed)
    nodes = node_manifests(num_nodes)
    pods: list[dict[str, Any]] = []
    # Running pods on the first fifth of the nodes (general-purpose nodes only).
    for i in range(num_nodes // 5 if running_nodes is None else running_nodes):
        for j in range(3):
            name = f"running-{i:03d}-{j}"
            pods.append(pod_manifest(name, "running", "1", "2Gi", {}, 0, node=nodes[i]["metadata"]["name"]))
    weights = [g[3] for g in GROUPS]
    counters = {g[0]: 0 for g in GROUPS}
    for i in range(num_pods):
        group, cpu, memory, _, extra = rng.choices(GROUPS, weights)[0]
        if "antiAffinity" in extra and extra["antiAffinity"] == ZONE and counters[group] >= 5:
            group, cpu, memory, _, extra = GROUPS[0]
        k = counters[group]
        counters[group] += 1
        if unique:
            memory = f"{_mebibytes(memory) * 1024 + i + 1}Ki"
        pods.append(pod_manifest(f"{group}-{k:04d}", group, cpu, memory, extra, i + 1))
    return nodes, pods


def _mebibytes(q: str) -> int:
    return int(q[:-2]) * 1024 if q.endswith("Gi") else int(q[:-2])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--unique", action="store_true", help="every pending pod different (no aggregation)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--running-nodes", type=int, default=None,
                    help="nodes with 3 running pods each [default: a fifth of the nodes]")
    ap.add_argument("--write-manifests", metavar="DIR", help="also write the generated cluster as YAML there")
    args = ap.parse_args(argv)
    node_docs, pod_docs = generate(args.nodes, args.pods, unique=args.unique, seed=args.seed,
                                   running_nodes=args.running_nodes)
    if args.write_manifests:
        out = Path(args.write_manifests)
        out.mkdir(parents=True, exist_ok=True)
        (out / "cluster.yaml").write_text(yaml.safe_dump_all(node_docs + pod_docs, sort_keys=False))
    objs = ClusterObjects(nodes=[parse_node(m) for m in node_docs], pods=[parse_pod(m) for m in pod_docs],
                          latest_timestamp=1_700_000_000.0 + args.pods)
    pending = sum(1 for m in pod_docs if not m["spec"].get("nodeName"))
    print(f"cluster: {args.nodes} nodes, {len(pod_docs) - pending} running pods, {pending} pending pods"
          f"{' (all different)' if args.unique else ''}, seed {args.seed}")
    t0 = time.perf_counter()
    res = pack(objs, time_limit=args.time_limit)
    total = time.perf_counter() - t0
    s = res.solver
    print(f"model: {res.classes} pod classes, {s.variables} variables, {s.constraints} constraints, "
          f"{s.nonzeros} nonzeros")
    print(f"greedy simulation: {res.greedy_seconds:.2f} s; model build (feasibility from the real filters + "
          f"matrix): {s.build_seconds:.2f} s; solve: {s.solve_seconds:.2f} s (time limit {args.time_limit:g} s for "
          f"build + solve); verification: {res.verify_seconds:.2f} s; total {total:.2f} s")
    gap = f"{s.gap:.2%}" if s.gap is not None else "-"
    print(f"solver: {s.solver} {s.status} ({s.method} model), objective {s.objective}, bound {s.bound}, gap {gap}"
          f"; solution from: {s.start}")
    for line in s.solves:
        print(f"  {line}")
    nodes_gap = f"{s.nodes_gap:.2%}" if s.nodes_gap is not None else "-"
    print(f"  objective = {s.nodes_used} nodes used + {s.weight:g} x {s.pods_left} pods left pending; "
          f"most pods placed {'proven' if s.placed_proven else 'not proven'}; nodes used >= {s.nodes_bound} "
          f"(gap {nodes_gap})")
    print(f"greedy (the scheduler): {res.greedy_placed} pods placed, {len(res.greedy_nodes)} nodes used")
    print(f"packing:                {res.packed_placed} pods placed, {len(res.packed_nodes)} nodes used, "
          f"{len(res.drainable)} nodes drainable, {len(res.moved)} pods on another node")
    print(f"verified: {res.verified} placements passed the real filters")
    within = s.build_seconds + s.solve_seconds <= args.time_limit + 1.0
    print(f"build + solve within the time limit: {'yes' if within else 'NO'}")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
