"""In-memory scheduling benchmarks shaped like kube-scheduler's scheduler_perf workloads
(test/integration/scheduler_perf/config/performance-config.yaml).

Every workload runs the default profile and percentageOfNodesToScore over nodes with cpu 4,
memory 32Gi and 110 pods, spread round-robin over 3 zones (``zone1..zone3``) and labelled
with their hostname. *Running* pods are bound to their nodes before the clock starts (added
to the cache directly, never scheduled); only the *measured* pods are scheduled, and
throughput counts their scheduling attempts (the whole cycle: filter, score, reserve, bind)
per wall-clock second. After the run every workload checks that each measured pod was bound,
that no node is over capacity, and its own placement rule:

- ``basic`` (SchedulingBasic): plain pods (cpu 100m, memory 500Mi).
- ``affinity`` (SchedulingNodeAffinity): measured pods require ``zone In [zone1, zone2]``
  and prefer (weight 1) ``foo In [bar]``, which every other node carries; each must land in
  zone1 or zone2.
- ``antiaffinity`` (SchedulingPodAntiAffinity): running pods in namespace sched-0, measured
  pods in sched-1, all labelled color=green with a required anti-affinity to color=green per
  hostname over both namespaces; no two such pods may share a node.
- ``spread`` (TopologySpreading): plain running pods; measured pods labelled color=blue with
  a zone topology spread constraint (maxSkew 1, DoNotSchedule) over color=blue; the final
  zone skew of blue pods must be at most 1.
- ``preemption`` (PreemptionBasic, :func:`run_preemption_bench`): low-priority running pods
  fill the nodes; each measured high-priority pod must preempt, and is run by the scheduling
  queue on a virtual clock (kubesched.timeline) until it is bound.
- ``preemption-pdb`` (PreemptionBasic with PodDisruptionBudgets): the same, with the
  low-priority pods of every other node covered by a PDB allowing no disruption; the
  preemptors must use the unprotected nodes first (pickOneNodeForPreemption's fewest PDB
  violations), so exactly 3 x max(0, pods - unprotected nodes) protected pods are evicted.
- ``daemonset`` (SchedulingDaemonset, config/templates/daemonset-pod.yaml): 15000 nodes, one
  pod per node pinned by node affinity ``matchFields metadata.name In [node]`` (NodeAffinity's
  PreFilterResult narrows the search to that node); each must land on its node.
- ``unschedulable`` (Unschedulable, config/templates/pod-large-cpu.yaml + pod-default.yaml):
  pods requesting 9 cpu, which fit nowhere, mixed among plain pods (every ``1/share``-th
  attempt, 200 of 5200 by default); the large ones must fail with kube-scheduler's message,
  the others must bind. Throughput counts every attempt.
- ``mixed`` (the realistic profile of examples/dump, scaled up): general, high-memory and
  tainted GPU nodes in 3 zones, a DaemonSet pod and Deployment replicas running on them, and
  pending Deployment replicas (selected by Services and ReplicaSets, so default topology
  spreading applies), some with preferred pod anti-affinity per hostname, some with a zone
  spread constraint, some with a nodeSelector, and GPU pods tolerating the taint; each rule
  is checked.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import random
import select
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched._cache import Cache
from kubesched._queue import QueueNominator
from kubesched._runtime.handle import FrameworkHandle
from kubesched._runtime.profile import build_framework
from kubesched.cluster.memory import MemoryObjects
from kubesched.config import default_configuration
from kubesched.errors import KubeschedError
from kubesched.features import DEFAULT_FEATURES, FEATURES_1_30, Features
from kubesched.framework import Extender, QueuedPodInfo
from kubesched.objects import ClusterObjects, Node, ObjectMeta, Pod, PodDisruptionBudget, Service
from kubesched.objects import Workload as WorkloadObject
from kubesched.objects.devices import (
    DeviceClass,
    ResourceClaim,
    ResourceSlice,
    parse_claim_spec,
    parse_device_class,
    parse_resource_slice,
)
from kubesched.objects.model import OwnerReference, PodClaimRef
from kubesched.objects.parse import parse_namespace, parse_node, parse_pdb, parse_pod, parse_service, parse_workload
from kubesched.plugins.registry import registry_for
from kubesched.scheduler import Scheduler
from kubesched.timeline import TimelineSimulator

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


@dataclass(slots=True)
class BenchResult:
    workload: str
    nodes: int
    pods: int
    seconds: float
    latencies: list[float]
    bound: int
    problems: list[str] = field(default_factory=list)
    init_pods: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def pods_per_second(self) -> float:
        return self.pods / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        return float(np.percentile(np.asarray(self.latencies), q)) * 1000 if self.latencies else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"workload": self.workload, "nodes": self.nodes, "init_pods": self.init_pods, "pods": self.pods,
                "seconds": round(self.seconds, 3), "pods_per_second": round(self.pods_per_second, 1),
                "p50_ms": round(self.percentile(50), 3), "p99_ms": round(self.percentile(99), 3),
                "bound": self.bound, "problems": self.problems}

    def summary(self) -> str:
        return (f"workload={self.workload} nodes={self.nodes} running pods={self.init_pods} "
                f"measured pods={self.pods} bound={self.bound}\n"
                f"throughput: {self.pods_per_second:.1f} pods/s ({self.seconds:.2f} s)\n"
                f"scheduling attempt latency: p50 {self.percentile(50):.3f} ms, p99 {self.percentile(99):.3f} ms")


# ----------------------------------------------------------------------------- objects
def basic_nodes(n: int, *, foo_every: int = 0) -> list[Node]:
    """Nodes of node-default.yaml, zones round-robin; with ``foo_every`` > 0, every
    ``foo_every``-th node also carries ``foo=bar``."""
    template = parse_node({
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-0"},
        "status": {"capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
    })
    out = []
    for i in range(n):
        name = f"node-{i}"
        labels = {HOSTNAME: name, ZONE: f"zone{i % 3 + 1}"}
        if foo_every and i % foo_every == 0:
            labels["foo"] = "bar"
        # raw: the manifest an extender is sent (wire.wire_manifest), with this node's identity.
        raw = {**template.raw, "metadata": {"name": name, "labels": dict(labels)}}
        out.append(dataclasses.replace(template, meta=ObjectMeta(name=name, labels=labels), raw=raw))
    return out


_CONTAINERS = [{"name": "pause", "image": "registry.k8s.io/pause:3.9",
                "ports": [{"containerPort": 80}],
                "resources": {"requests": {"cpu": "100m", "memory": "500Mi"},
                              "limits": {"cpu": "100m", "memory": "500Mi"}}}]


def _pods(spec: dict[str, Any], labels: dict[str, str], n: int, prefix: str, namespace: str,
          start: int = 0) -> list[Pod]:
    """``n`` copies of one pod template (parsed once), differing in name, uid and creation time."""
    template = parse_pod({"apiVersion": "v1", "kind": "Pod",
                          "metadata": {"name": "p", "namespace": namespace, "labels": labels},
                          "spec": {"containers": _CONTAINERS, **spec}})
    base = 1704067200.0
    out = []
    for i in range(n):
        meta = ObjectMeta(name=f"{prefix}-{i}", namespace=namespace, uid=f"{namespace}-{prefix}-uid-{i}",
                          labels=dict(labels), creation_timestamp=base + start + i)
        raw = {**template.raw, "metadata": {"name": meta.name, "namespace": namespace, "uid": meta.uid,
                                            "labels": dict(labels)}}
        out.append(dataclasses.replace(template, meta=meta, raw=raw))
    return out


def basic_pods(n: int, prefix: str = "pod", namespace: str = "default") -> list[Pod]:
    """pod-default.yaml: one container requesting cpu 100m and memory 500Mi."""
    return _pods({}, {}, n, prefix, namespace)


def node_affinity_pods(n: int, prefix: str = "node-affinity") -> list[Pod]:
    spec = {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone1", "zone2"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}}],
    }}}
    return _pods(spec, {}, n, prefix, "default", start=1_000_000)


ANTI_AFFINITY_NAMESPACES = ("sched-0", "sched-1")


def anti_affinity_pods(n: int, namespace: str, prefix: str = "anti-affinity-pod", start: int = 0) -> list[Pod]:
    """pod-with-pod-anti-affinity.yaml, with the term over both benchmark namespaces."""
    spec = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": HOSTNAME,
         "namespaces": list(ANTI_AFFINITY_NAMESPACES)}]}}}
    return _pods(spec, {"color": "green"}, n, prefix, namespace, start=start)


def spreading_pods(n: int, prefix: str = "spreading-pod") -> list[Pod]:
    """pod-with-topology-spreading.yaml with maxSkew 1."""
    spec = {"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"color": "blue"}}}]}
    return _pods(spec, {"color": "blue"}, n, prefix, "default", start=1_000_000)


def bind_spread(pods: list[Pod], nodes: list[Node]) -> list[Pod]:
    """Running pods, bound evenly over the nodes (distinct nodes while there are fewer pods
    than nodes)."""
    n, m = len(nodes), len(pods)
    out = []
    for i, p in enumerate(pods):
        j = i * n // m if m <= n else i % n
        out.append(dataclasses.replace(p, node_name=nodes[j].meta.name, phase="Running"))
    return out


# ----------------------------------------------------------------------------- workloads
@dataclass(slots=True)
class Setup:
    nodes: list[Node]
    running: list[Pod]
    measured: list[Pod]
    namespaces: tuple[str, ...] = ()
    # (cache, measured pod key -> node) -> problems
    check: Callable[[Cache, dict[str, str]], list[str]] | None = None
    services: list[Service] = field(default_factory=list)
    workloads: list[WorkloadObject] = field(default_factory=list)
    # Measured pods that fit nowhere: key -> the FailedScheduling message they must get.
    unschedulable: dict[str, str] = field(default_factory=dict)
    # Dynamic Resource Allocation objects (the dra workload).
    device_classes: list[DeviceClass] = field(default_factory=list)
    resource_slices: list[ResourceSlice] = field(default_factory=list)
    resource_claims: list[ResourceClaim] = field(default_factory=list)


def _zone_of(cache: Cache, node: str) -> str:
    ni = cache.node_infos[node]
    assert ni.node is not None
    return ni.node.meta.labels.get(ZONE, "")


def _setup_basic(num_nodes: int, num_pods: int, num_init: int) -> Setup:
    nodes = basic_nodes(num_nodes)
    return Setup(nodes, bind_spread(basic_pods(num_init, "init-pod"), nodes) if num_init else [],
                 basic_pods(num_pods))


def _setup_affinity(num_nodes: int, num_pods: int, num_init: int) -> Setup:
    nodes = basic_nodes(num_nodes, foo_every=2)

    def check(cache: Cache, placed: dict[str, str]) -> list[str]:
        bad = [k for k, n in placed.items() if _zone_of(cache, n) not in ("zone1", "zone2")]
        return [f"{len(bad)} pods outside zone1/zone2 (e.g. {bad[0]} on {placed[bad[0]]})"] if bad else []

    return Setup(nodes, bind_spread(basic_pods(num_init, "init-pod"), nodes), node_affinity_pods(num_pods),
                 check=check)


def _setup_antiaffinity(num_nodes: int, num_pods: int, num_init: int) -> Setup:
    nodes = basic_nodes(num_nodes)

    def check(cache: Cache, placed: dict[str, str]) -> list[str]:
        per_node = Counter(cache.node_of(pi.pod) for ni in cache.node_infos.values() for pi in ni.pods
                           if pi.pod.labels.get("color") == "green")
        crowded = [n for n, c in per_node.items() if c > 1]
        return [f"{len(crowded)} nodes run more than one color=green pod (e.g. {crowded[0]})"] if crowded else []

    running = bind_spread(anti_affinity_pods(num_init, "sched-0"), nodes)
    return Setup(nodes, running, anti_affinity_pods(num_pods, "sched-1", start=1_000_000),
                 namespaces=ANTI_AFFINITY_NAMESPACES, check=check)


def _setup_spread(num_nodes: int, num_pods: int, num_init: int) -> Setup:
    nodes = basic_nodes(num_nodes)

    def check(cache: Cache, placed: dict[str, str]) -> list[str]:
        zones = Counter(_zone_of(cache, n) for n in placed.values())
        counts = [zones.get(f"zone{z}", 0) for z in range(1, min(num_nodes, 3) + 1)]
        skew = max(counts) - min(counts)
        return [f"zone skew of color=blue pods is {skew} ({counts})"] if skew > 1 else []

    return Setup(nodes, bind_spread(basic_pods(num_init, "init-pod"), nodes), spreading_pods(num_pods), check=check)


def daemonset_pods(nodes: list[Node]) -> list[Pod]:
    """config/templates/daemonset-pod.yaml, one per node: required node affinity
    ``matchFields metadata.name In [<node>]`` as the DaemonSet controller writes it."""
    template = _pods({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                "values": ["node-0"]}]}]}}}}, {}, 1, "daemonset", "default")[0]
    out = []
    for i, node in enumerate(nodes):
        affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node.meta.name]}]}]}}}
        parsed = parse_pod({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                            "spec": {"containers": _CONTAINERS, "affinity": affinity}})
        meta = dataclasses.replace(template.meta, name=f"daemonset-{i}", uid=f"default-daemonset-uid-{i}",
                                   creation_timestamp=(template.meta.creation_timestamp or 0.0) + i)
        out.append(dataclasses.replace(template, meta=meta, affinity=parsed.affinity,
                                       raw={**template.raw, "metadata": {"name": meta.name, "namespace": "default",
                                                                          "uid": meta.uid}}))
    return out


def _setup_daemonset(num_nodes: int, num_pods: int, num_init: int) -> Setup:
    nodes = basic_nodes(num_nodes)
    pods = daemonset_pods(nodes[:num_pods] if num_pods < num_nodes else nodes)
    target = {p.key: f"node-{p.name.rsplit('-', 1)[1]}" for p in pods}

    def check(cache: Cache, placed: dict[str, str]) -> list[str]:
        wrong = [k for k, n in placed.items() if target[k] != n]
        return [f"{len(wrong)} daemonset pods off their node (e.g. {wrong[0]} on {placed[wrong[0]]})"] if wrong else []

    return Setup(nodes, bind_spread(basic_pods(num_init, "init-pod"), nodes) if num_init else [], pods, check=check)


UNSCHEDULABLE_SHARE = 26  # every 26th attempt: 200 of 5200


def large_cpu_pods(n: int, prefix: str = "large-cpu-pod", start: int = 0) -> list[Pod]:
    """config/templates/pod-large-cpu.yaml: cpu 9 (more than any node's 4)."""
    containers = [{"name": "pause", "image": "registry.k8s.io/pause:3.9", "ports": [{"containerPort": 80}],
                   "resources": {"requests": {"cpu": "9", "memory": "500Mi"}, "limits": {"cpu": "9", "memory": "500Mi"}}}]
    return _pods({"containers": containers}, {}, n, prefix, "default", start=start)


DRA_DEVICES_PER_NODE = 8
DRA_DRIVER = "gpu.example.com"


def _setup_dra(num_nodes: int, num_pods: int, num_init: int) -> Setup:
    """The dra workload: every node publishes 8 GPUs in a ResourceSlice (a100 or h100 by node, 40Gi
    or 80Gi); each pending pod has one claim, made from one of two templates as the resourceclaim
    controller would: one GPU of a model chosen by CEL, or two GPUs with at least 40Gi
    (``quantity``). Pods fill the devices without overcommitting any."""
    nodes = basic_nodes(num_nodes)
    slices = []
    for i, n in enumerate(nodes):
        model, memory = ("a100", "80Gi") if i % 2 == 0 else ("h100", "40Gi")
        slices.append(parse_resource_slice({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{n.name}-gpus"},
            "spec": {"driver": DRA_DRIVER, "nodeName": n.name, "pool": {"name": n.name, "generation": 1,
                                                                       "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{j}", "attributes": {"model": {"string": model}, "index": {"int": j}},
                                  "capacity": {"memory": {"value": memory}}} for j in range(DRA_DEVICES_PER_NODE)]}}))
    classes = [parse_device_class({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                   "metadata": {"name": "gpu.example.com"},
                                   "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}]}})]
    templates = (
        {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "selectors": [
            {"cel": {"expression": 'device.attributes["gpu.example.com"].model in ["a100", "h100"]'}}]}}]}},
        {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 2,
                                                             "selectors": [{"cel": {"expression":
                                                             'device.capacity["gpu.example.com"].memory.compareTo('
                                                             'quantity("40Gi")) >= 0'}}]}}]}},
    )
    specs = [parse_claim_spec(t, "spec") for t in templates]
    base = basic_pods(1, "gpu-pod")[0]
    measured: list[Pod] = []
    claims: list[ResourceClaim] = []
    for i in range(num_pods):
        name = f"gpu-pod-{i}"
        claim_name = f"{name}-gpu-{i % 100000:05d}"
        meta = ObjectMeta(name=name, namespace="default", uid=f"default-gpu-pod-uid-{i}",
                          creation_timestamp=1704067200.0 + i)
        measured.append(dataclasses.replace(
            base, meta=meta, resource_claims=(PodClaimRef("gpu", resource_claim_template_name=f"t{i % 2}"),),
            resource_claim_statuses={"gpu": claim_name}))
        claims.append(ResourceClaim(ObjectMeta(name=claim_name, namespace="default", uid=f"claim-uid-{i}",
                                               owner_references=(OwnerReference("v1", "Pod", name, meta.uid, True),)),
                                    specs[i % 2]))
    # Checked by run_bench on the claims the binding cycles wrote (_claim_problems).
    return Setup(nodes, [], measured, device_classes=classes, resource_slices=slices, resource_claims=claims)


def _claim_problems(objects: MemoryObjects, placed: dict[str, str]) -> list[str]:
    """The dra workload's rule: a bound pod's claim is allocated on its node and reserved for
    it, and no device is allocated twice."""
    problems: list[str] = []
    seen: dict[tuple[str, str, str], str] = {}
    for claim in objects.resource_claims():
        owner = claim.meta.controller_ref()
        key = f"{claim.namespace}/{owner.name}" if owner is not None else ""
        node = placed.get(key)
        if node is None:
            if claim.allocation is not None and len(problems) < 5:
                problems.append(f"claim {claim.key} is allocated but its pod is not bound")
            continue
        if claim.allocation is None or not claim.reserved_for:
            problems.append(f"claim {claim.key} of bound pod {key} is not allocated and reserved")
            continue
        for r in claim.allocation.devices:
            if r.pool != node:
                problems.append(f"claim {claim.key} holds {r.describe()}, not on {node}")
            dev = (r.driver, r.pool, r.device)
            if dev in seen and len(problems) < 5:
                problems.append(f"device {r.describe()} given to {seen[dev]} and {claim.key}")
            seen[dev] = claim.key
    return problems[:5]


def oversize_message(num_nodes: int, features: Features) -> str:
    """The FailedScheduling message of a pod requesting more cpu than any node has. DefaultPreemption
    runs too: in 1.30 it finds no victims (nothing has a lower priority than these priority-0
    pods); in 1.36 the request exceeds every node's allocatable, so no node is a candidate, and
    DynamicResources' PostFilter speaks first."""
    if features.enabled("UnresolvableOversize"):
        return (f"0/{num_nodes} nodes are available: {num_nodes} Insufficient cpu. no new claims to deallocate, "
                f"preemption: 0/{num_nodes} nodes are available: {num_nodes} Preemption is not helpful for scheduling.")
    return (f"0/{num_nodes} nodes are available: {num_nodes} Insufficient cpu. preemption: 0/{num_nodes} nodes "
            f"are available: {num_nodes} No preemption victims found for incoming pod.")


def _setup_unschedulable(num_nodes: int, num_pods: int, num_init: int) -> Setup:
    nodes = basic_nodes(num_nodes)
    n_large = num_pods // UNSCHEDULABLE_SHARE
    large = large_cpu_pods(n_large)
    plain = basic_pods(num_pods - n_large)
    measured: list[Pod] = []
    for i in range(num_pods):
        k = i // UNSCHEDULABLE_SHARE
        if i % UNSCHEDULABLE_SHARE == 0 and k < n_large:
            measured.append(large[k])
        else:
            measured.append(plain[i - min(k + 1, n_large)])
    message = oversize_message(num_nodes, FEATURES_1_30)
    running = bind_spread(basic_pods(num_init, "init-pod"), nodes) if num_init else []
    return Setup(nodes, running, measured, unschedulable={p.key: message for p in large})


MIXED_APPS = (  # (name, cpu, memory, share of pending pods, kind of placement rule)
    ("web", "250m", "512Mi", 4, "anti"),
    ("api", "500m", "1Gi", 3, "spread"),
    ("cache", "1", "4Gi", 1, "highmem"),
    ("worker", "200m", "256Mi", 3, ""),
    ("trainer", "1", "2Gi", 1, "gpu"),
)


def mixed_nodes(n: int) -> list[Node]:
    """examples/dump's node shapes: 80% general (4 cpu, 16Gi), 15% high-memory (8 cpu, 64Gi,
    pool=highmem), 5% GPU (8 cpu, 32Gi, nvidia.com/gpu 8, tainted gpu=true:NoSchedule)."""
    out = []
    for i in range(n):
        name = f"node-{i}"
        labels = {HOSTNAME: name, ZONE: f"zone{i % 3 + 1}"}
        spec: dict[str, Any] = {}
        kind = i % 20
        if kind == 0:
            cap = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "8"}
            labels["pool"] = "gpu"
            spec["taints"] = [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]
        elif kind in (1, 2, 3):
            cap = {"cpu": "8", "memory": "64Gi", "pods": "110"}
            labels["pool"] = "highmem"
        else:
            cap = {"cpu": "4", "memory": "16Gi", "pods": "110"}
            labels["pool"] = "general"
        out.append(parse_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                               "spec": spec, "status": {"capacity": cap, "allocatable": cap}}))
    return out


def _app_pod(app: str, cpu: str, memory: str, rule: str, i: int, rs: str, start: int) -> Pod:
    labels = {"app": app, "pod-template-hash": rs.rsplit("-", 1)[1]}
    spec: dict[str, Any] = {"containers": [{"name": app, "image": f"registry.example/{app}:1",
                                            "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if rule == "anti":
        spec["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": app}},
                                                "topologyKey": HOSTNAME}}]}}
    elif rule == "spread":
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                                              "labelSelector": {"matchLabels": {"app": app}}}]
    elif rule == "highmem":
        spec["nodeSelector"] = {"pool": "highmem"}
    elif rule == "gpu":
        spec["tolerations"] = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
        spec["nodeSelector"] = {"pool": "gpu"}
        spec["containers"][0]["resources"] = {"requests": {"cpu": cpu, "memory": memory, "nvidia.com/gpu": "1"},
                                              "limits": {"nvidia.com/gpu": "1"}}
    name = f"{rs}-{i}"
    pod = parse_pod({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": name, "namespace": "shop", "uid": f"shop-{name}", "labels": labels,
                                  "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs,
                                                       "uid": f"rs-{rs}", "controller": True}]},
                     "spec": spec})
    return dataclasses.replace(pod, meta=dataclasses.replace(pod.meta, creation_timestamp=1704067200.0 + start + i))


def _setup_mixed(num_nodes: int, num_pods: int, num_init: int) -> Setup:
    nodes = mixed_nodes(num_nodes)
    # A DaemonSet pod on every node (100m, 128Mi), as the dump's kube-proxy.
    proxy = _pods({"containers": [{"name": "kube-proxy", "image": "registry.k8s.io/kube-proxy:v1.30.0",
                                   "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}],
                   "tolerations": [{"operator": "Exists"}]}, {"k8s-app": "kube-proxy"}, num_nodes, "kube-proxy",
                  "kube-system")
    running = bind_spread(proxy, nodes)
    total_share = sum(share for *_, share, _ in MIXED_APPS)
    services: list[Service] = []
    workloads: list[WorkloadObject] = []
    measured: list[Pod] = []
    init: list[Pod] = []
    for app, cpu, memory, share, rule in MIXED_APPS:
        rs = f"{app}-7d4b9c8f6d"
        services.append(parse_service({"apiVersion": "v1", "kind": "Service",
                                       "metadata": {"name": app, "namespace": "shop"},
                                       "spec": {"selector": {"app": app}}}))
        workloads.append(parse_workload({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                         "metadata": {"name": rs, "namespace": "shop", "uid": f"rs-{rs}"},
                                         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": app}},
                                                  "template": {"metadata": {"labels": {"app": app}},
                                                               "spec": {"containers": [{"name": app}]}}}}))
        n_init = num_init * share // total_share
        n_pending = num_pods * share // total_share
        init.extend(_app_pod(app, cpu, memory, rule, i, rs, 0) for i in range(n_init))
        measured.extend(_app_pod(app, cpu, memory, rule, n_init + i, rs, 1_000_000) for i in range(n_pending))
    # Running replicas on the nodes their rule allows (round-robin over those nodes).
    by_pool: dict[str, list[Node]] = {}
    for nd in nodes:
        by_pool.setdefault(nd.meta.labels["pool"], []).append(nd)
    placed_init: list[Pod] = []
    counters: Counter[str] = Counter()
    for p in init:
        pool = {"cache": "highmem", "trainer": "gpu"}.get(p.labels["app"], "general")
        candidates = by_pool[pool]
        nd = candidates[counters[pool] % len(candidates)]
        counters[pool] += 1
        placed_init.append(dataclasses.replace(p, node_name=nd.meta.name, phase="Running"))
    running.extend(placed_init)
    # Interleave the apps' pending pods as a rollout of several Deployments would.
    measured.sort(key=lambda p: (int(p.name.rsplit("-", 1)[1]), p.labels["app"]))
    pool_of = {nd.meta.name: nd.meta.labels["pool"] for nd in nodes}
    zone_of = {nd.meta.name: nd.meta.labels[ZONE] for nd in nodes}

    def check(cache: Cache, placed: dict[str, str]) -> list[str]:
        problems = []
        app_of = {p.key: p.labels["app"] for p in measured}
        for key, node in placed.items():
            app = app_of[key]
            if app == "cache" and pool_of[node] != "highmem":
                problems.append(f"{key} on {node}, not a highmem node")
            if app == "trainer" and pool_of[node] != "gpu":
                problems.append(f"{key} on {node}, not a GPU node")
            if app not in ("trainer",) and pool_of[node] == "gpu":
                problems.append(f"{key} on the tainted GPU node {node}")
            if len(problems) >= 3:
                break
        zones = Counter(zone_of[cache.node_of(pi.pod) or ""] for ni in cache.node_infos.values() for pi in ni.pods
                        if pi.pod.labels.get("app") == "api")
        if zones and max(zones.values()) - min(zones.get(f"zone{z}", 0) for z in (1, 2, 3)) > 1:
            problems.append(f"api pods' zone skew exceeds 1: {dict(zones)}")
        return problems

    return Setup(nodes, running, measured, namespaces=("shop", "kube-system"), check=check, services=services,
                 workloads=workloads)


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    setup: Callable[[int, int, int], Setup]
    pods: int  # default measured pods
    init_pods: int  # default running pods
    nodes: int = 5000  # default nodes


WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("basic", _setup_basic, 10000, 0),
    Workload("affinity", _setup_affinity, 1000, 5000),
    Workload("antiaffinity", _setup_antiaffinity, 1000, 1000),
    Workload("spread", _setup_spread, 2000, 5000),
    Workload("daemonset", _setup_daemonset, 15000, 0, nodes=15000),
    Workload("unschedulable", _setup_unschedulable, 5200, 0),
    Workload("mixed", _setup_mixed, 5000, 10000),
    Workload("dra", _setup_dra, 4000, 0, nodes=1000),
)}


def default_scheduler(cache: Cache, objects: MemoryObjects, nominator: QueueNominator, rng: random.Random,
                      extenders: Sequence[Extender] = (), features: Features | None = None) -> Scheduler:
    """The scheduling cycle of the default configuration's profile over ``cache`` (the
    in-memory benches schedule pods one by one through it), as ``features``' release decides."""
    f = features if features is not None else DEFAULT_FEATURES
    cfg = default_configuration(features=f)
    profile = cfg.profiles[0]
    handle = FrameworkHandle(cache, objects, nominator, profile_name=profile.scheduler_name, rng=rng,
                             extenders=extenders, features=f)
    fwk = build_framework(profile, registry_for(f), handle)
    return Scheduler({profile.scheduler_name: fwk}, cache, nominator, rng=rng, extenders=extenders,
                     percentage_of_nodes_to_score=cfg.percentage_of_nodes_to_score or 0, features=f)


def run_bench(workload: str, num_nodes: int | None = None, num_pods: int | None = None, *,
              init_pods: int | None = None, seed: int = 1, features: Features | None = None) -> BenchResult:
    """Build the workload, bind its running pods, then schedule the measured pods one by one
    (the autoscale workload: one ``kubesched autoscale`` run, :func:`run_autoscale_bench`)."""
    if workload == "autoscale":
        return run_autoscale_bench(num_nodes, num_pods, features=features)
    run = _BenchRun.prepare(workload, num_nodes, num_pods, init_pods, seed, features)
    run.schedule(run.setup.measured)
    return run.result()


def _table_over_capacity(cache: Cache) -> bool:
    """Some row of the node table requests more cpu, memory or pods than it allows."""
    t = cache.table
    size = t.size
    return bool((t.req_cpu[:size] > t.alloc_cpu[:size]).any() or (t.req_mem[:size] > t.alloc_mem[:size]).any()
                or (t.pod_count[:size] > t.alloc_pods[:size]).any())


def run_bench_versus(workload: str, features: Sequence[Features], num_nodes: int | None = None,
                     num_pods: int | None = None, *, init_pods: int | None = None, seed: int = 1,
                     chunk: int = 50) -> list[BenchResult]:
    """The same workload under several releases (or gates), set up side by side and scheduled
    in alternating chunks of ``chunk`` pods, so that a (virtual) machine's drifting speed weighs
    on each alike: the fair way to compare releases here (``kubesched bench --versus``). The
    order turns every round (A B, B A, A B, ...): the run that follows another one starts with
    caches the other filled, which measurably slows the one always scheduled first (the same
    release twice, in a fixed order: the first 2–3 % slower)."""
    runs = [_BenchRun.prepare(workload, num_nodes, num_pods, init_pods, seed, f) for f in features]
    measured = len(runs[0].setup.measured)
    for k, i in enumerate(range(0, measured, max(chunk, 1))):
        for run in (runs if k % 2 == 0 else runs[::-1]):
            run.schedule(run.setup.measured[i:i + chunk])
    return [run.result() for run in runs]


@dataclass
class _BenchRun:
    """One in-memory bench run: the workload set up and its measured pods scheduled in as many
    calls to :meth:`schedule` as wanted (the time is the sum of those calls)."""

    workload: str
    num_nodes: int
    setup: Setup
    cache: Cache
    objects: MemoryObjects
    sched: Scheduler
    latencies: list[float] = field(default_factory=list)
    placed: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    elapsed: float = 0.0

    @classmethod
    def prepare(cls, workload: str, num_nodes: int | None, num_pods: int | None, init_pods: int | None, seed: int,
                features: Features | None) -> _BenchRun:
        w = WORKLOADS.get(workload)
        if w is None:
            raise KubeschedError(f"unknown workload {workload!r}: want one of {', '.join(WORKLOADS)}")
        num_nodes = w.nodes if num_nodes is None else num_nodes
        num_pods = w.pods if num_pods is None else num_pods
        num_init = w.init_pods if init_pods is None else init_pods
        if num_nodes < 1 or num_pods < 0 or num_init < 0:
            raise KubeschedError(f"want at least one node and no negative pod count, got nodes={num_nodes} "
                                 f"pods={num_pods} init pods={num_init}")
        features = features if features is not None else DEFAULT_FEATURES
        setup = w.setup(num_nodes, num_pods, num_init)
        if setup.unschedulable and workload == "unschedulable":
            message = oversize_message(num_nodes, features)
            setup = dataclasses.replace(setup, unschedulable={k: message for k in setup.unschedulable})
        cache = Cache(num_nodes)
        cache.add_nodes(setup.nodes)
        for p in setup.running:
            cache.add_pod(p)
        nominator = QueueNominator()
        rng = random.Random(seed)
        namespaces = [parse_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
                      for ns in ("default", *setup.namespaces)]
        objects = MemoryObjects(pods=[*setup.running, *setup.measured], namespaces=namespaces,
                                services=setup.services, workloads=setup.workloads,
                                device_classes=setup.device_classes, resource_slices=setup.resource_slices,
                                resource_claims=setup.resource_claims)
        sched = default_scheduler(cache, objects, nominator, rng, features=features)
        return cls(workload, num_nodes, setup, cache, objects, sched)

    def schedule(self, pods: Sequence[Pod]) -> None:
        sched, setup, problems, placed, latencies = self.sched, self.setup, self.problems, self.placed, self.latencies
        clock = time.perf_counter
        start = clock()
        for pod in pods:
            t0 = clock()
            a = sched.schedule_one(pod)
            latencies.append(clock() - t0)
            if a.outcome == "Scheduled" and a.node is not None:
                placed[pod.key] = a.node
                if pod.key in setup.unschedulable and len(problems) < 5:
                    problems.append(f"{pod.key} was bound to {a.node}: it fits nowhere")
            elif pod.key in setup.unschedulable:
                if a.message != setup.unschedulable[pod.key] and len(problems) < 5:
                    problems.append(f"{pod.key}: {a.message!r}, want {setup.unschedulable[pod.key]!r}")
            elif len(problems) < 5:
                problems.append(f"{pod.key}: {a.message}")
        self.elapsed += clock() - start

    def result(self) -> BenchResult:
        """The run's figures, after checking what it placed against the workload's rules."""
        workload, num_nodes, setup, cache, objects = self.workload, self.num_nodes, self.setup, self.cache, self.objects
        placed, problems, elapsed, latencies = self.placed, list(self.problems), self.elapsed, self.latencies
        bound = len(placed)
        if bound != len(setup.measured) - len(setup.unschedulable):
            problems.append(f"{len(setup.measured) - len(setup.unschedulable) - bound} pods not bound")
        t = cache.table
        if _table_over_capacity(cache):
            problems.append("a node is over capacity")
        # Cross-check the table against the NodeInfos it mirrors.
        for ni in cache.node_infos.values():
            if ni.requested.milli_cpu != t.req_cpu[ni.index] or len(ni.pods) != t.pod_count[ni.index]:
                problems.append(f"node table out of sync for {ni.name}")
                break
            if ni.requested.milli_cpu > ni.allocatable.milli_cpu or len(ni.pods) > ni.allocatable.allowed_pod_number:
                problems.append(f"node {ni.name} is over capacity")
                break
        if setup.check is not None and placed:
            problems.extend(setup.check(cache, placed))
        if setup.resource_claims:
            problems.extend(_claim_problems(objects, placed))
        return BenchResult(workload, num_nodes, len(setup.measured), elapsed, latencies, bound, problems,
                           len(setup.running))


# ----------------------------------------------------------------------------- extender
# The extender workload measures what one local HTTP extender (filter + prioritize, written
# with kubesched's SDK, served by uvicorn on 127.0.0.1) adds to a scheduling attempt: the same
# basic pods on the same nodes, scheduled once without the extender and once with it per
# nodeCacheCapable setting; the figure is the difference of the per-attempt latencies. The
# extender runs where a real one does — in a process of its own (``process``) — and, as before,
# in a thread of the scheduler's process (``thread``: it shares the GIL with the scheduler).
# It rejects every node whose index ends in 9 and scores node i with i % 11 (batch handlers:
# ExtenderApp.filter_nodes / score_nodes); every run checks that each pod was bound, never on
# a rejected node, and (with the extender) that the extender's scores reached the scheduler.
EXTENDER_NODE_COUNTS = (100, 1000)
EXTENDER_DEFAULT_PODS = 100
EXTENDER_REJECT = "bench extender: node index ends in 9"
EXTENDER_SERVERS = ("process", "thread")


def _node_index(name: str) -> int:
    return int(name.rsplit("-", 1)[1])


def _extender_rejects(name: str) -> bool:
    return _node_index(name) % 10 == 9


@dataclass(slots=True)
class ExtenderRun:
    """One scheduling run of the extender workload: ``mode`` is ``none`` (no extender),
    ``nodes`` (nodeCacheCapable false: full nodes on the wire) or ``names`` (true); ``server``
    where the extender ran: ``process`` (its own) or ``thread`` (the scheduler's process)."""

    nodes: int
    mode: str
    latencies: list[float]
    bound: int
    server: str = ""

    def mean_ms(self) -> float:
        return float(np.mean(self.latencies)) * 1000 if self.latencies else 0.0

    def p50_ms(self) -> float:
        return float(np.percentile(np.asarray(self.latencies), 50)) * 1000 if self.latencies else 0.0


@dataclass(slots=True)
class ExtenderBenchResult:
    pods: int
    runs: list[ExtenderRun] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    workload: str = "extender"

    @property
    def ok(self) -> bool:
        return not self.problems

    def baseline(self, nodes: int) -> ExtenderRun | None:
        return next((r for r in self.runs if r.nodes == nodes and r.mode == "none"), None)

    def added(self, run: ExtenderRun) -> tuple[float, float]:
        """(mean, p50) ms the extender adds per attempt over the run without it."""
        base = self.baseline(run.nodes)
        if base is None:
            return 0.0, 0.0
        return run.mean_ms() - base.mean_ms(), run.p50_ms() - base.p50_ms()

    def as_dict(self) -> dict[str, Any]:
        rows = []
        for r in self.runs:
            row: dict[str, Any] = {"nodes": r.nodes, "nodeCacheCapable": None if r.mode == "none" else r.mode == "names",
                                   "extender": r.mode != "none", "server": r.server or None,
                                   "mean_ms": round(r.mean_ms(), 3), "p50_ms": round(r.p50_ms(), 3), "bound": r.bound}
            if r.mode != "none":
                mean, p50 = self.added(r)
                row["added_mean_ms"] = round(mean, 3)
                row["added_p50_ms"] = round(p50, 3)
            rows.append(row)
        return {"workload": self.workload, "pods": self.pods, "runs": rows, "problems": self.problems}

    def summary(self) -> str:
        lines = [f"workload=extender pods per run={self.pods} (one local extender: filter + prioritize, SDK "
                 "server on 127.0.0.1 in a process of its own, or in a thread of the scheduler's)",
                 f"{'nodes':>6}  {'server':<8}  {'nodeCacheCapable':<16}  {'mean ms':>9}  {'p50 ms':>9}  "
                 f"{'added mean':>10}  {'added p50':>9}"]
        for r in self.runs:
            label = "no extender" if r.mode == "none" else str(r.mode == "names").lower()
            if r.mode == "none":
                lines.append(f"{r.nodes:>6}  {'':<8}  {label:<16}  {r.mean_ms():>9.3f}  {r.p50_ms():>9.3f}")
            else:
                mean, p50 = self.added(r)
                lines.append(f"{r.nodes:>6}  {r.server:<8}  {label:<16}  {r.mean_ms():>9.3f}  {r.p50_ms():>9.3f}  "
                             f"{mean:>+10.3f}  {p50:>+9.3f}")
        return "\n".join(lines)


def _bench_extender_app(nodes: list[Node], *, per_node: bool = False) -> Any:
    """The bench extender; ``per_node``: with the per-node decorators (a Python call per node)
    instead of the batch ones."""
    from kubesched.extender.server import ExtenderApp

    app = ExtenderApp(prefix="/bench", title="kubesched bench extender")
    if per_node:
        @app.filter_node
        def reject_index_nine(pod: Pod, node: Node) -> str | None:
            return EXTENDER_REJECT if _extender_rejects(node.meta.name) else None

        @app.score_node
        def index_mod_eleven(pod: Pod, node: Node) -> int:
            return _node_index(node.meta.name) % 11
    else:
        # What the extender knows of each node, computed when it learns of the node (here: up
        # front), as an extender keeps per-node data beside its informer.
        index = {n.meta.name: _node_index(n.meta.name) for n in nodes}

        @app.filter_nodes
        def reject_index_nine_batch(pod: Pod, batch: list[Node]) -> list[str | None]:
            return [EXTENDER_REJECT if index[n.meta.name] % 10 == 9 else None for n in batch]

        @app.score_nodes
        def index_mod_eleven_batch(pod: Pod, batch: list[Node]) -> list[int]:
            return [index[n.meta.name] % 11 for n in batch]

    app.node_cache.update(nodes)  # what an informer would hold, for nodeCacheCapable requests
    return app


def serve_bench_extender(num_nodes: int) -> None:
    """The bench extender in a process of its own (``python -c``): serves on a free port of
    127.0.0.1, prints it, and stops when its standard input closes (its parent ended)."""
    from kubesched.extender.server import ServerThread

    with ServerThread(_bench_extender_app(basic_nodes(num_nodes))) as srv:
        print(srv.port, flush=True)
        sys.stdin.read()


@contextlib.contextmanager
def _extender_server(where: str, nodes: list[Node]) -> Iterator[str]:
    """The bench extender's URL, served in a thread here or in a child process."""
    from kubesched.extender.server import ServerThread

    if where == "thread":
        with ServerThread(_bench_extender_app(nodes)) as srv:
            yield srv.url
        return
    code = f"from kubesched.bench import serve_bench_extender; serve_bench_extender({len(nodes)})"
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None
        ready, _, _ = select.select([child.stdout], [], [], 60.0)
        line = child.stdout.readline() if ready else b""
        if not line.strip().isdigit():
            raise KubeschedError(f"the bench extender process did not start (exit code {child.poll()})")
        yield f"http://127.0.0.1:{int(line)}"
    finally:
        if child.stdin is not None:
            child.stdin.close()
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _run_extender_once(nodes: list[Node], pods: list[Pod], extenders: list[Any], seed: int
                       ) -> tuple[list[float], dict[str, str], list[str]]:
    cache = Cache(len(nodes))
    cache.add_nodes(nodes)
    nominator = QueueNominator()
    rng = random.Random(seed)
    namespaces = [parse_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})]
    objects = MemoryObjects(pods=pods, namespaces=namespaces)
    sched = default_scheduler(cache, objects, nominator, rng, extenders)
    latencies: list[float] = []
    placed: dict[str, str] = {}
    problems: list[str] = []
    clock = time.perf_counter
    unscored = 0
    for pod in pods:
        t0 = clock()
        a = sched.schedule_one(pod)
        latencies.append(clock() - t0)
        if a.outcome == "Scheduled" and a.node is not None:
            placed[pod.key] = a.node
        elif len(problems) < 5:
            problems.append(f"{pod.key}: {a.message}")
        if extenders and len(a.feasible) > 1 and (a.extender_scores is None or not a.extender_scores.by_node):
            unscored += 1
    if unscored:
        problems.append(f"{unscored} attempts got no extender scores")
    bad = [k for k, n in placed.items() if extenders and _extender_rejects(n)]
    if bad:
        problems.append(f"{len(bad)} pods on nodes the extender rejects (e.g. {bad[0]} on {placed[bad[0]]})")
    if len(placed) != len(pods):
        problems.append(f"{len(pods) - len(placed)} pods not bound")
    for ni in cache.node_infos.values():
        if ni.requested.milli_cpu > ni.allocatable.milli_cpu or len(ni.pods) > ni.allocatable.allowed_pod_number:
            problems.append(f"node {ni.name} is over capacity")
            break
    return latencies, placed, problems


def run_extender_bench(node_counts: tuple[int, ...] = EXTENDER_NODE_COUNTS, num_pods: int | None = None, *,
                       seed: int = 1, servers: tuple[str, ...] = EXTENDER_SERVERS) -> ExtenderBenchResult:
    """For each node count: the basic pods scheduled without extender, then, for each place the
    extender may run (``servers``: ``process``, ``thread``), with the bench extender sending full
    nodes (nodeCacheCapable false), then node names (true)."""
    from kubesched.config.types import Extender as ExtenderConfig
    from kubesched.extender import HTTPExtender

    num_pods = EXTENDER_DEFAULT_PODS if num_pods is None else num_pods
    if not node_counts or min(node_counts) < 1 or num_pods < 0:
        raise KubeschedError(f"want at least one node and no negative pod count, got nodes={list(node_counts)} "
                             f"pods={num_pods}")
    res = ExtenderBenchResult(num_pods)
    for n in node_counts:
        nodes = basic_nodes(n)
        pods = basic_pods(num_pods)
        latencies, placed, problems = _run_extender_once(nodes, pods, [], seed)
        res.runs.append(ExtenderRun(n, "none", latencies, len(placed)))
        res.problems.extend(f"{n} nodes, no extender: {p}" for p in problems)
        for where in servers:
            with _extender_server(where, nodes) as url:
                for cache_capable in (False, True):
                    cfg = ExtenderConfig(url_prefix=url + "/bench", filter_verb="filter",
                                         prioritize_verb="prioritize", weight=1, node_cache_capable=cache_capable)
                    with HTTPExtender(cfg) as ext:
                        latencies, placed, problems = _run_extender_once(nodes, pods, [ext], seed)
                    mode = "names" if cache_capable else "nodes"
                    res.runs.append(ExtenderRun(n, mode, latencies, len(placed), where))
                    res.problems.extend(f"{n} nodes, {where}, nodeCacheCapable={str(cache_capable).lower()}: {p}"
                                        for p in problems)
    return res


# ----------------------------------------------------------------------------- preemption
# PreemptionBasic (performance-config.yaml, 500Nodes): the init pods (pod-low-priority.yaml:
# cpu 900m, memory 500Mi, priority 0, terminationGracePeriodSeconds 0) fill every node 4 to a
# node (3.6 of 4 cpu); the measured pods (pod-high-priority.yaml: cpu 3, memory 500Mi,
# priority 10), all created at once, fit nowhere: each must preempt 3 low-priority pods. The
# run is the scheduling queue on a virtual clock (kubesched.timeline): a preemptor fails,
# evicts its victims (deleted at once, grace 0), waits nominated to their node while other
# preemptors go around it, and binds when the deletion has moved it and its backoff is over.
# Throughput counts measured pods bound per wall-clock second of the whole run (every attempt:
# the failed ones with their preemption dry run, and the binding ones); latencies are per attempt.
PREEMPTION_NODES, PREEMPTION_INIT_PODS, PREEMPTION_PODS = 500, 2000, 500
_LOW_PRIORITY_CPU, _HIGH_PRIORITY_CPU, _HIGH_PRIORITY = "900m", "3000m", 10


@dataclass(slots=True)
class PreemptionBenchResult(BenchResult):
    victims: int = 0
    preemption_attempts: int = 0
    attempts: int = 0
    simulated_seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**BenchResult.as_dict(self), "attempts": self.attempts, "preemption_attempts": self.preemption_attempts,
                "victims": self.victims, "simulated_seconds": round(self.simulated_seconds, 3)}

    def summary(self) -> str:
        return (BenchResult.summary(self) + f"\nscheduling attempts: {self.attempts} ({self.preemption_attempts} "
                f"preempting, {self.victims} victims); simulated time {self.simulated_seconds:.1f} s")


def _priority_containers(cpu: str) -> list[dict[str, Any]]:
    return [{"name": "pause", "image": "registry.k8s.io/pause:3.9", "ports": [{"containerPort": 80}],
             "resources": {"requests": {"cpu": cpu, "memory": "500Mi"}, "limits": {"cpu": cpu, "memory": "500Mi"}}}]


def low_priority_pods(n: int, prefix: str = "low-priority-pod") -> list[Pod]:
    """pod-low-priority.yaml: cpu 900m, memory 500Mi, priority 0, terminationGracePeriodSeconds 0."""
    return _pods({"terminationGracePeriodSeconds": 0, "containers": _priority_containers(_LOW_PRIORITY_CPU)}, {}, n,
                 prefix, "default")


def high_priority_pods(n: int, prefix: str = "high-priority-pod") -> list[Pod]:
    """pod-high-priority.yaml: cpu 3, memory 500Mi, priority 10; created at the same instant."""
    pods = _pods({"priority": _HIGH_PRIORITY, "containers": _priority_containers(_HIGH_PRIORITY_CPU)}, {}, n, prefix,
                 "default", start=1_000_000)
    if not pods:
        return pods
    created = pods[0].meta
    return [dataclasses.replace(p, meta=dataclasses.replace(p.meta, creation_timestamp=created.creation_timestamp))
            for p in pods]


class _TimedTimeline(TimelineSimulator):
    """The timeline simulator, timing each scheduling attempt (cycle, then binding)."""

    def __init__(self, objs: ClusterObjects, *, seed: int) -> None:
        super().__init__(objs, seed=seed)
        self.latencies: list[float] = []

    def _schedule(self, qpi: QueuedPodInfo) -> None:
        t0 = time.perf_counter()
        super()._schedule(qpi)
        self.latencies.append(time.perf_counter() - t0)


PROTECTED = "protected"


def protect_every_other_node(running: list[Pod]) -> tuple[list[Pod], list[PodDisruptionBudget]]:
    """``preemption-pdb``: the low-priority pods of every other node (by node index) get the
    label ``protected=true``, selected by one PDB allowing no disruption."""
    out = []
    for p in running:
        if _node_index(p.node_name) % 2 == 0:
            p = dataclasses.replace(p, meta=dataclasses.replace(p.meta, labels={**p.labels, PROTECTED: "true"}))
        out.append(p)
    pdb = parse_pdb({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                     "metadata": {"name": "protected", "namespace": "default"},
                     "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {PROTECTED: "true"}}},
                     "status": {"disruptionsAllowed": 0}})
    return out, [pdb]


def preemption_setup(num_nodes: int, num_pods: int, num_init: int, *,
                     pdbs: bool = False) -> tuple[Setup, list[PodDisruptionBudget]]:
    """PreemptionBasic's objects: ``num_init`` low-priority pods spread over ``num_nodes`` basic
    nodes, ``num_pods`` high-priority preemptors; with ``pdbs``, every other node's pods under a
    PDB allowing no disruption (also dumped for kube-scheduler by scripts/kube_scheduler_bench.py)."""
    nodes = basic_nodes(num_nodes)
    running = bind_spread(low_priority_pods(num_init), nodes) if num_init else []
    budgets: list[PodDisruptionBudget] = []
    if pdbs:
        running, budgets = protect_every_other_node(running)
    return Setup(nodes, running, high_priority_pods(num_pods)), budgets


def run_preemption_bench(num_nodes: int = PREEMPTION_NODES, num_pods: int | None = None, *,
                         init_pods: int | None = None, seed: int = 1, pdbs: bool = False,
                         features: Features | None = None) -> PreemptionBenchResult:
    """PreemptionBasic: bind the low-priority pods, then run the queue until every
    high-priority pod is bound or nothing can change; check that each one was bound (after
    its victims were deleted), that every victim was a low-priority pod and no node is over
    capacity."""
    num_pods = PREEMPTION_PODS if num_pods is None else num_pods
    num_init = PREEMPTION_INIT_PODS if init_pods is None else init_pods
    if num_nodes < 1 or num_pods < 0 or num_init < 0:
        raise KubeschedError(f"want at least one node and no negative pod count, got nodes={num_nodes} "
                             f"pods={num_pods} init pods={num_init}")
    setup, budgets = preemption_setup(num_nodes, num_pods, num_init, pdbs=pdbs)
    nodes, running, measured = setup.nodes, setup.running, setup.measured
    latest = max((p.meta.creation_timestamp or 0.0 for p in (*running, *measured)), default=0.0)
    objs = ClusterObjects(nodes=nodes, pods=[*running, *measured], pdbs=budgets, latest_timestamp=latest,
                          features=features if features is not None else DEFAULT_FEATURES)
    sim = _TimedTimeline(objs, seed=seed)
    clock = time.perf_counter
    start = clock()
    res = sim.run()
    elapsed = clock() - start

    problems: list[str] = []
    placed = {p.key: node for p in measured if (node := res.final.get(p.key))}
    if len(placed) != num_pods:
        missing = [p.key for p in measured if p.key not in placed]
        why = "preempted" if missing[0] in res.deleted else res.pending.get(missing[0], "not attempted")
        problems.append(f"{len(missing)} pods not bound (e.g. {missing[0]}: {why})")
    low = {p.key for p in running}
    wrong = [k for k in res.deleted if k not in low]
    if wrong:
        problems.append(f"{len(wrong)} evicted pods were not low-priority pods (e.g. {wrong[0]})")
    if res.pending and len(placed) == num_pods:
        problems.append(f"{len(res.pending)} pods left pending (e.g. {next(iter(res.pending.items()))})")
    if pdbs:
        # Fewest PDB violations first: the unprotected nodes are used up before any protected
        # pod is evicted; each preemptor (3 cpu) evicts 3 low-priority pods (900m each).
        unprotected = sum(1 for n in nodes if _node_index(n.meta.name) % 2 == 1)
        protected_low = {p.key for p in running if p.labels.get(PROTECTED)}
        evicted = sum(1 for k in res.deleted if k in protected_low)
        want = 3 * max(0, len(placed) - unprotected)
        if evicted != want:
            problems.append(f"{evicted} PDB-protected pods evicted, want {want} (3 per preemptor beyond the "
                            f"{unprotected} unprotected nodes)")
    cache = sim.cache
    if _table_over_capacity(cache):
        problems.append("a node is over capacity")
    for ni in cache.node_infos.values():
        if ni.requested.milli_cpu > ni.allocatable.milli_cpu or ni.requested.memory > ni.allocatable.memory \
                or len(ni.pods) > ni.allocatable.allowed_pod_number:
            problems.append(f"node {ni.name} is over capacity")
            break
        if any(pi.pod.meta.deletion_timestamp is not None for pi in ni.pods):
            problems.append(f"node {ni.name} still holds a terminating victim")
            break
    m = res.metrics
    return PreemptionBenchResult(
        "preemption-pdb" if pdbs else "preemption", num_nodes, num_pods, elapsed, list(sim.latencies), len(placed), problems, len(running),
        victims=sum(m.preemption_victims), preemption_attempts=m.preemption_attempts, attempts=len(res.steps),
        simulated_seconds=res.end - res.start)


def run_preemption_versus(features: Sequence[Features], num_nodes: int = PREEMPTION_NODES,
                          num_pods: int | None = None, *, init_pods: int | None = None, seed: int = 1,
                          pdbs: bool = False, rounds: int = 6) -> list[list[PreemptionBenchResult]]:
    """The preemption workload under several releases as whole runs, ``rounds`` each, the order
    turning every round (A B, B A, ...): a run drives the scheduling queue on its virtual clock
    from start to end, so it cannot be cut into interleaved chunks as
    :func:`run_bench_versus` does; alternating whole runs spreads the machine's drift (whole
    runs vary by ±20 % on a busy machine) over both. One list of runs per release, in order."""
    if rounds < 1:
        raise KubeschedError(f"want at least one round, got {rounds}")
    runs: list[list[PreemptionBenchResult]] = [[] for _ in features]
    order = list(range(len(features)))
    for r in range(rounds):
        for i in (order if r % 2 == 0 else order[::-1]):
            runs[i].append(run_preemption_bench(num_nodes, num_pods, init_pods=init_pods, seed=seed, pdbs=pdbs,
                                                features=features[i]))
    return runs


def median_run(runs: Sequence[BenchResult]) -> BenchResult:
    """The run of median throughput (the lower middle one of an even number)."""
    ranked = sorted(runs, key=lambda r: r.pods_per_second)
    return ranked[(len(ranked) - 1) // 2]


# ----------------------------------------------------------------------------- autoscale
# ``kubesched autoscale`` on a 2000-node dump with 5 node groups (issue 20's figure): 400 nodes
# per group (8/16/32 cpu, one group of tainted GPU nodes), 1% of them running one small pod
# (scale-down candidates), the others with 1 cpu left; pending: Deployment replicas of 2 cpu / 4Gi
# and 4 cpu / 16Gi, more than the free room holds. Measured: the whole run (the scheduler's
# simulation, the scale-up of every group, the cheapest scale-up on HiGHS and its verification,
# the scale-down simulation).
AUTOSCALE_NODES, AUTOSCALE_PODS, AUTOSCALE_GROUPS = 2000, 1000, 5
_AUTOSCALE_SHAPES = (("small", "8", "32Gi", 0.38), ("medium", "16", "64Gi", 0.76), ("large", "32", "128Gi", 1.52),
                     ("highmem", "16", "128Gi", 1.01), ("gpu", "16", "64Gi", 2.48))


@dataclass(slots=True)
class AutoscaleBenchResult(BenchResult):
    groups: int = 0
    scale_up: str = ""
    optimal: str = ""
    removable: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"workload": self.workload, "nodes": self.nodes, "groups": self.groups, "pods": self.pods,
                "init_pods": self.init_pods, "seconds": round(self.seconds, 3), "scale_up": self.scale_up,
                "optimal": self.optimal, "removable": self.removable, "problems": self.problems}

    def summary(self) -> str:
        return (f"workload=autoscale nodes={self.nodes} node groups={self.groups} running pods={self.init_pods} "
                f"pending pods={self.pods}\nkubesched autoscale in {self.seconds:.2f} s: scale-up {self.scale_up}; "
                f"cheapest {self.optimal}; {self.removable} nodes could go")


def autoscale_cluster(num_nodes: int = AUTOSCALE_NODES, num_pods: int = AUTOSCALE_PODS,
                      features: Features | None = None) -> tuple[ClusterObjects, list[dict[str, Any]]]:
    """The autoscale workload's cluster and its NodeGroup documents."""
    nodes: list[Node] = []
    pods: list[Pod] = []
    workloads: list[WorkloadObject] = []
    groups: list[dict[str, Any]] = []
    base = 1704067200.0
    per = max(1, num_nodes // len(_AUTOSCALE_SHAPES))
    gpu_taint = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]

    def rs(name: str) -> OwnerReference:
        workloads.append(parse_workload({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                         "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
                                         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                                                  "template": {"metadata": {"labels": {"app": name}},
                                                               "spec": {"containers": [{"name": "c"}]}}}}))
        return OwnerReference("apps/v1", "ReplicaSet", name, f"uid-{name}", True)

    def stamp(template: Pod, name: str, owner: OwnerReference, node: str = "", seq: int = 0) -> Pod:
        labels = {"app": owner.name}
        meta = ObjectMeta(name=name, namespace="default", uid=f"uid-{name}", labels=labels,
                          creation_timestamp=base + seq, owner_references=(owner,))
        raw = {**template.raw, "metadata": {"name": name, "namespace": "default", "uid": meta.uid, "labels": labels}}
        return dataclasses.replace(template, meta=meta, raw=raw, node_name=node)

    def shape(cpu: str, memory: str, **spec: Any) -> Pod:
        return parse_pod({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                          "spec": {"containers": [{"name": "c", "image": "registry.example.com/app:1", "resources": {
                              "requests": {"cpu": cpu, "memory": memory}}}], **spec}})

    filler_owner, small_owner = rs("filler"), rs("tiny")
    seq = 0
    for g, (pool, cpu, memory, price) in enumerate(_AUTOSCALE_SHAPES):
        taints = gpu_taint if pool == "gpu" else []
        extra = {"nvidia.com/gpu": "8"} if pool == "gpu" else {}
        capacity = {"cpu": cpu, "memory": memory, "pods": "110", **extra}
        groups.append({"apiVersion": "kubesched.io/v1alpha1", "kind": "NodeGroup", "metadata": {"name": pool},
                       "spec": {"minSize": 1, "maxSize": per + 200, "pricePerHour": price, "priority": g,
                                "members": {"matchLabels": {"pool": pool}},
                                "template": {"metadata": {"labels": {"pool": pool, ZONE: f"zone{g % 3 + 1}"}},
                                             "spec": {"taints": taints},
                                             "status": {"capacity": capacity}}}})
        cores = int(cpu)
        fill = shape(f"{cores - 1}", "1Gi", tolerations=[{"operator": "Exists"}])
        tiny = shape("1", "1Gi", tolerations=[{"operator": "Exists"}])
        count = per if g < len(_AUTOSCALE_SHAPES) - 1 else num_nodes - per * (len(_AUTOSCALE_SHAPES) - 1)
        for i in range(count):
            name = f"{pool}-{i}"
            nodes.append(parse_node({"apiVersion": "v1", "kind": "Node",
                                     "metadata": {"name": name, "labels": {HOSTNAME: name, "pool": pool,
                                                                           ZONE: f"zone{i % 3 + 1}"}},
                                     "spec": {"taints": taints}, "status": {"capacity": capacity}}))
            seq += 1
            if i % 100 == 0:
                pods.append(stamp(tiny, f"tiny-{name}", small_owner, name, seq))
            else:
                pods.append(stamp(fill, f"filler-{name}", filler_owner, name, seq))
    a_owner, b_owner = rs("api-7c9d"), rs("batch-5f6b")
    api, batch = shape("2", "4Gi"), shape("4", "16Gi")
    for i in range(num_pods):
        seq += 1
        if i % 5 < 3:
            pods.append(stamp(api, f"api-7c9d-{i}", a_owner, seq=seq))
        else:
            pods.append(stamp(batch, f"batch-5f6b-{i}", b_owner, seq=seq))
    objs = ClusterObjects(nodes=nodes, pods=pods, workloads=workloads, latest_timestamp=base + seq,
                          features=features if features is not None else DEFAULT_FEATURES)
    return objs, groups


def run_autoscale_bench(num_nodes: int | None = None, num_pods: int | None = None, *,
                        features: Features | None = None) -> AutoscaleBenchResult:
    """The autoscale workload: build the cluster, then time one ``autoscale`` run."""
    import tempfile

    from kubesched.whatif.autoscale import autoscale
    from kubesched.whatif.nodegroups import load_node_groups

    n = AUTOSCALE_NODES if num_nodes is None else num_nodes
    p = AUTOSCALE_PODS if num_pods is None else num_pods
    if n < len(_AUTOSCALE_SHAPES) or p < 0:
        raise KubeschedError(f"the autoscale workload wants at least {len(_AUTOSCALE_SHAPES)} nodes and no negative "
                             f"pod count, got nodes={n} pods={p}")
    objs, docs = autoscale_cluster(n, p, features)
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/groups.yaml"
        with open(path, "w") as f:
            f.write("\n---\n".join(json.dumps(d) for d in docs))
        groups = load_node_groups(path)
    start = time.perf_counter()
    res = autoscale(objs, groups)
    elapsed = time.perf_counter() - start
    problems: list[str] = []
    up = res.scale_up
    if up.chosen is None:
        problems.append("no scale-up chosen")
    if res.optimal.verified != len(res.optimal.placements):
        problems.append("the cheapest scale-up was not verified")
    chosen = f"+{up.chosen.nodes} {up.chosen.group} for {len(up.chosen.pods)} pods" if up.chosen else "none"
    optimal = (", ".join(f"+{k} {g}" for g, k in res.optimal.nodes.items()) +
               f" at {res.optimal.cost:.2f}/h for {len(res.optimal.placements)} pods ({res.optimal.solver.get('status')})")
    running = sum(1 for x in objs.pods if x.node_name)
    return AutoscaleBenchResult("autoscale", n, p, elapsed, [], len(res.scheduled), problems, running,
                                groups=len(groups), scale_up=chosen, optimal=optimal,
                                removable=len(res.scale_down.removable))
