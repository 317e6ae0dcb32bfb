"""End to end: a legacy Policy using every legacy plugin (SelectorSpread with the
DefaultPodTopologySpread gate off, ServiceAffinity, NodeLabel, NodePreferAvoidPods,
NodeResourcesLeast/MostAllocated, RequestedToCapacityRatio) translated by
kubesched.config.policy and run by the real scheduler with the in-tree registry."""

from __future__ import annotations

import json
import random
from typing import Any

from builders import make_node, make_pod, obj

from kubesched._cache import Cache
from kubesched._queue import QueueNominator
from kubesched._runtime.handle import FrameworkHandle
from kubesched._runtime.profile import build_framework
from kubesched.cluster.memory import MemoryObjects
from kubesched.config.policy import parse_policy
from kubesched.objects import Node, Pod
from kubesched.plugins.registry import REGISTRY
from kubesched.scheduler import Scheduler

POLICY: dict[str, Any] = {
    "kind": "Policy", "apiVersion": "v1",
    "predicates": [
        {"name": "GeneralPredicates"},
        {"name": "ZoneRequired", "argument": {"labelsPresence": {"labels": ["zone"], "presence": True}}},
        {"name": "RegionAffinity", "argument": {"serviceAffinity": {"labels": ["region"]}}},
    ],
    "priorities": [
        {"name": "SelectorSpreadPriority", "weight": 1},
        {"name": "LeastRequestedPriority", "weight": 1},
        {"name": "MostRequestedPriority", "weight": 1},
        {"name": "NodePreferAvoidPodsPriority", "weight": 10000},
        {"name": "PreferSSD", "weight": 2, "argument": {"labelPreference": {"label": "ssd", "presence": True}}},
        {"name": "SpreadRacks", "weight": 1, "argument": {"serviceAntiAffinity": {"label": "rack"}}},
        {"name": "BinPack", "weight": 1, "argument": {"requestedToCapacityRatioArguments": {
            "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
            "resources": [{"name": "cpu", "weight": 1}]}}},
    ],
}


def node(name: str, labels: dict[str, str], annotations: dict[str, str] | None = None) -> Node:
    b = make_node().name(name).labels(labels).capacity(cpu="4", memory="8Gi", pods=110)
    for k, v in (annotations or {}).items():
        b = b.annotation(k, v)
    return b.obj()


def test_a_policy_with_every_legacy_plugin_schedules() -> None:
    cfg = parse_policy(POLICY, default_pod_topology_spread=False)
    profile = cfg.profiles[0]
    avoid = json.dumps({"preferAvoidPods": [{"podSignature": {"podController": {
        "kind": "ReplicaSet", "uid": "uid-rs1"}}}]})
    nodes = [
        node("a", {"zone": "z1", "region": "r1", "rack": "k1", "ssd": "true"}, {
            "scheduler.alpha.kubernetes.io/preferAvoidPods": avoid}),
        node("b", {"zone": "z1", "region": "r1", "rack": "k2", "ssd": "true"}),
        node("c", {"zone": "z2", "region": "r2", "rack": "k3"}),
        node("d", {"region": "r1", "rack": "k4", "ssd": "true"}),
    ]
    running: list[Pod] = [make_pod().name("web-0").labels({"app": "web"}).node("b").req(cpu="1").obj()]
    objects = MemoryObjects(
        services=[obj({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
                       "spec": {"selector": {"app": "web"}}})],
        workloads=[obj({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                        "metadata": {"name": "rs1", "namespace": "default"},
                        "spec": {"selector": {"matchLabels": {"app": "web"}}}})],
        pods=running,
    )
    cache = Cache(len(nodes))
    cache.add_nodes(nodes)
    for p in running:
        cache.add_pod(p)
    nominator = QueueNominator()
    handle = FrameworkHandle(cache, objects, nominator, deterministic=True, rng=random.Random(1))
    fwk = build_framework(profile, REGISTRY, handle)
    assert {p.name for p in fwk.plugins_at("Filter")} >= {"NodeLabel", "ServiceAffinity"}
    assert {p.name for p in fwk.plugins_at("Score")} == {
        "SelectorSpread", "NodeResourcesLeastAllocated", "NodeResourcesMostAllocated", "NodePreferAvoidPods",
        "NodeLabel", "ServiceAffinity", "RequestedToCapacityRatio"}
    sched = Scheduler({profile.scheduler_name: fwk}, cache, nominator, deterministic=True, rng=random.Random(1))
    incoming = make_pod().name("web-1").labels({"app": "web"}).owner("ReplicaSet", "rs1").req(cpu="1").obj()
    attempt = sched.schedule_one(incoming)
    # d has no zone label (NodeLabel), c is in another region than web-0 (ServiceAffinity);
    # a is avoided by the pod's ReplicaSet (weight 10000), so b wins.
    assert attempt.outcome == "Scheduled"
    assert sorted(attempt.feasible) == ["a", "b"]
    assert attempt.node == "b"
