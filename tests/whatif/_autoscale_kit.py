"""Builders for the autoscale tests: node groups, pods with controllers, one run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubesched.objects import load_manifests
from kubesched.whatif.autoscale import AutoscaleResult, autoscale
from kubesched.whatif.nodegroups import load_node_groups

from ._manifests import node, pod, write


def group(name: str, cpu: str = "4", memory: str = "16Gi", *, max_size: int = 5, min_size: int = 0,
          price: float = 1.0, priority: int | None = None, taints: list[dict[str, Any]] | None = None,
          extra: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "minSize": min_size, "maxSize": max_size, "pricePerHour": price, "members": {"matchLabels": {"pool": name}},
        "template": {"metadata": {"labels": {"pool": name}},
                     "status": {"capacity": {"cpu": cpu, "memory": memory, "pods": "110", **(extra or {})}}}}
    if priority is not None:
        spec["priority"] = priority
    if taints:
        spec["template"]["spec"] = {"taints": taints}
    return {"apiVersion": "kubesched.io/v1alpha1", "kind": "NodeGroup", "metadata": {"name": name}, "spec": spec}


def member(name: str, pool: str, cpu: str = "4", memory: str = "16Gi", **kw: Any) -> dict[str, Any]:
    n = node(name, cpu, memory, labels={"pool": pool})
    if kw.get("annotations"):
        n["metadata"]["annotations"] = kw["annotations"]
    return n


def replica_set(name: str, namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}}


def owned(p: dict[str, Any], kind: str, name: str, api_version: str = "apps/v1") -> dict[str, Any]:
    p["metadata"]["ownerReferences"] = [{"apiVersion": api_version, "kind": kind, "name": name,
                                         "uid": f"uid-{name}", "controller": True}]
    p["metadata"].setdefault("labels", {})["app"] = name
    return p


def pending(n: int, cpu: str = "1", memory: str = "1Gi", prefix: str = "p", **spec: Any) -> list[dict[str, Any]]:
    return [pod(f"{prefix}-{i}", cpu, memory, **spec) for i in range(n)]


def pdb(name: str, app: str, allowed: int, namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": namespace},
            "spec": {"maxUnavailable": allowed, "selector": {"matchLabels": {"app": app}}},
            "status": {"disruptionsAllowed": allowed}}


def run(tmp_path: Path, docs: list[dict[str, Any]], groups: list[dict[str, Any]], **kw: Any) -> AutoscaleResult:
    cluster = tmp_path / "cluster"
    cluster.mkdir(exist_ok=True)
    write(cluster / "all.yaml", *docs)
    groups_file = write(tmp_path / "groups.yaml", *groups)
    objs = load_manifests([cluster], controllers="none")
    return autoscale(objs, load_node_groups(groups_file), **kw)
