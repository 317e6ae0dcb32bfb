"""Small manifest writers shared by the what-if tests (YAML text, read by the real loader)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def node(name: str, cpu: str = "4", memory: str = "16Gi", pods: int = 110, labels: dict[str, str] | None = None,
         extra: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "status": {"capacity": {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra or {})}}}


def pod(name: str, cpu: str | None = None, memory: str | None = None, *, node_name: str = "",
        namespace: str = "default", **spec: Any) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    container: dict[str, Any] = {"name": "c", "image": "registry.example.com/app:1"}
    if requests:
        container["resources"] = {"requests": requests}
    if "ports" in spec:
        container["ports"] = spec.pop("ports")
    body: dict[str, Any] = {"containers": [container], **spec}
    if node_name:
        body["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": body}


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value}


def write(path: Path, *docs: dict[str, Any]) -> str:
    """Write ``docs`` as one multi-document YAML file (JSON is valid YAML) and return its path."""
    path.write_text("\n---\n".join(json.dumps(d) for d in docs) + "\n")
    return str(path)
