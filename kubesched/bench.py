"""In-memory scheduling benchmarks shaped like kube-scheduler's scheduler_perf workloads.

``basic`` is SchedulingBasic: nodes with cpu 4, memory 32Gi, 110 pods, spread round-robin
over 3 zones; pods with one container requesting cpu 100m and memory 500Mi; the default
profile and percentageOfNodesToScore. Throughput counts scheduling attempts (the whole
cycle: filter, score, reserve, bind) per wall-clock second.
"""

from __future__ import annotations

import dataclasses
import random
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched._cache import Cache
from kubesched._runtime.handle import FrameworkHandle, Nominator
from kubesched._runtime.profile import build_framework
from kubesched.cluster.memory import MemoryObjects
from kubesched.config import default_configuration
from kubesched.objects import Node, ObjectMeta, Pod
from kubesched.objects.parse import parse_node, parse_pod
from kubesched.plugins.registry import REGISTRY
from kubesched.scheduler import Scheduler


@dataclass(slots=True)
class BenchResult:
    workload: str
    nodes: int
    pods: int
    seconds: float
    latencies: list[float]
    bound: int
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def pods_per_second(self) -> float:
        return self.pods / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        return float(np.percentile(np.asarray(self.latencies), q)) * 1000 if self.latencies else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"workload": self.workload, "nodes": self.nodes, "pods": self.pods, "seconds": round(self.seconds, 3),
                "pods_per_second": round(self.pods_per_second, 1), "p50_ms": round(self.percentile(50), 3),
                "p99_ms": round(self.percentile(99), 3), "bound": self.bound, "problems": self.problems}

    def summary(self) -> str:
        return (f"workload={self.workload} nodes={self.nodes} pods={self.pods} bound={self.bound}\n"
                f"throughput: {self.pods_per_second:.1f} pods/s ({self.seconds:.2f} s)\n"
                f"scheduling attempt latency: p50 {self.percentile(50):.3f} ms, p99 {self.percentile(99):.3f} ms")


def basic_nodes(n: int) -> list[Node]:
    template = parse_node({
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-0"},
        "status": {"capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
    })
    out = []
    for i in range(n):
        name = f"node-{i}"
        labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": f"zone{i % 3 + 1}"}
        out.append(dataclasses.replace(template, meta=ObjectMeta(name=name, labels=labels)))
    return out


def basic_pods(n: int, prefix: str = "pod") -> list[Pod]:
    template = parse_pod({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.9",
                                 "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}]},
    })
    base = 1704067200.0
    return [dataclasses.replace(template, meta=ObjectMeta(name=f"{prefix}-{i}", namespace="default", uid=f"{prefix}-uid-{i}",
                                                          creation_timestamp=base + i)) for i in range(n)]


def run_bench(workload: str, num_nodes: int, num_pods: int, *, seed: int = 1) -> BenchResult:
    if workload != "basic":
        raise ValueError(f"unknown workload {workload!r}")
    nodes = basic_nodes(num_nodes)
    pods = basic_pods(num_pods)
    cache = Cache(num_nodes)
    cache.add_nodes(nodes)
    nominator = Nominator()
    rng = random.Random(seed)
    objects = MemoryObjects(pods=pods)
    cfg = default_configuration()
    profile = cfg.profiles[0]
    handle = FrameworkHandle(cache, objects, nominator, profile_name=profile.scheduler_name, rng=rng)
    fwk = build_framework(profile, REGISTRY, handle)
    sched = Scheduler({profile.scheduler_name: fwk}, cache, nominator, rng=rng,
                      percentage_of_nodes_to_score=cfg.percentage_of_nodes_to_score or 0)
    latencies: list[float] = []
    bound = 0
    problems: list[str] = []
    clock = time.perf_counter
    start = clock()
    for pod in pods:
        t0 = clock()
        a = sched.schedule_one(pod)
        latencies.append(clock() - t0)
        if a.outcome == "Scheduled":
            bound += 1
        elif len(problems) < 5:
            problems.append(f"{pod.key}: {a.message}")
    elapsed = clock() - start
    t = cache.table
    size = t.size
    if bound != num_pods:
        problems.append(f"{num_pods - bound} pods not bound")
    if (t.req_cpu[:size] > t.alloc_cpu[:size]).any() or (t.req_mem[:size] > t.alloc_mem[:size]).any() or (
            t.pod_count[:size] > t.alloc_pods[:size]).any():
        problems.append("a node is over capacity")
    # Cross-check the table against the NodeInfos it mirrors.
    for ni in cache.node_infos.values():
        if ni.requested.milli_cpu != t.req_cpu[ni.index] or len(ni.pods) != t.pod_count[ni.index]:
            problems.append(f"node table out of sync for {ni.name}")
            break
    return BenchResult(workload, num_nodes, num_pods, elapsed, latencies, bound, problems)
