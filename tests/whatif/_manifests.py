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


# ----------------------------------------------------------------------------- DRA (resource.k8s.io/v1)
DRA = "resource.k8s.io/v1"
GPU_DRIVER = "gpu.example.com"


def device_class(name: str = "gpu", expression: str = f'device.driver == "{GPU_DRIVER}"') -> dict[str, Any]:
    return {"apiVersion": DRA, "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def gpu_slice(node_name: str, count: int, *, model: str = "a100", all_nodes: bool = False,
              name: str | None = None, models: list[str] | None = None) -> dict[str, Any]:
    """``count`` devices gpu-0.. of ``node_name`` (or, with ``all_nodes``, reachable from every
    node), of ``model`` or, device by device, of ``models``."""
    where: dict[str, Any] = {"allNodes": True} if all_nodes else {"nodeName": node_name}
    return {"apiVersion": DRA, "kind": "ResourceSlice", "metadata": {"name": name or f"{node_name}-gpus"},
            "spec": {"driver": GPU_DRIVER, **where, "pool": {"name": name or node_name, "generation": 1,
                                                             "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": (models or [])[i]
                                                                                 if models else model}}}
                                 for i in range(count)]}}


def device_request(name: str = "gpu", count: int = 1, device_class_name: str = "gpu", **extra: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": device_class_name, "count": count, **extra}}


def claim_template(name: str, *requests: dict[str, Any], namespace: str = "default",
                   constraints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {"apiVersion": DRA, "kind": "ResourceClaimTemplate", "metadata": {"name": name, "namespace": namespace},
            "spec": {"spec": {"devices": devices}}}


def resource_claim(name: str, *requests: dict[str, Any], namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": DRA, "kind": "ResourceClaim", "metadata": {"name": name, "namespace": namespace},
            "spec": {"devices": {"requests": list(requests)}}}


def claim_pod(name: str, cpu: str | None = "1", *, template: str = "", claim: str = "", **kw: Any) -> dict[str, Any]:
    """A pod with one claim ``gpu`` from ResourceClaimTemplate ``template`` or ResourceClaim ``claim``."""
    p = pod(name, cpu, **kw)
    ref = {"name": "gpu", **({"resourceClaimTemplateName": template} if template else {"resourceClaimName": claim})}
    p["spec"]["resourceClaims"] = [ref]
    p["spec"]["containers"][0].setdefault("resources", {})["claims"] = [{"name": "gpu"}]
    return p
