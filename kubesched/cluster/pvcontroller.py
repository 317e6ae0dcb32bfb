"""What the PV controller (and an external provisioner) would do after kube-scheduler's
VolumeBinding PreBind, for the in-memory cluster of a simulation.

Upstream, PreBind writes the assumed bindings (PV.spec.claimRef for a static binding, the
``volume.kubernetes.io/selected-node`` annotation on a claim to provision) and waits until
the PV controller has bound every claim. A simulation has no controller, so this module
completes the binding the way it would: static PVs become Bound to their claim; a claim to
provision gets a new PV (``pvc-<claim uid>``) whose node affinity follows the driver's
topology on the selected node (CSINode topologyKeys), or the class' allowedTopologies. Later
pods then see bound claims, exactly as they would in a cluster.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from kubesched.cluster.memory import MemoryObjects
from kubesched.objects import (
    Node,
    NodeSelector,
    NodeSelectorTerm,
    ObjectMeta,
    PersistentVolume,
    PersistentVolumeClaim,
    Requirement,
)

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"


def _bound_claim(pvc: PersistentVolumeClaim, pv_name: str) -> PersistentVolumeClaim:
    annotations = {**pvc.meta.annotations, ANN_BIND_COMPLETED: "yes", ANN_BOUND_BY_CONTROLLER: "yes"}
    raw: dict[str, Any] = dict(pvc.raw)
    raw["metadata"] = {**dict(raw.get("metadata") or {}), "annotations": annotations}
    raw["spec"] = {**dict(raw.get("spec") or {}), "volumeName": pv_name}
    raw["status"] = {**dict(raw.get("status") or {}), "phase": "Bound"}
    return dataclasses.replace(pvc, meta=dataclasses.replace(pvc.meta, annotations=annotations), volume_name=pv_name,
                               phase="Bound", raw=raw)


def _provisioned_affinity(objects: MemoryObjects, node: Node, provisioner: str,
                          allowed: tuple[Any, ...]) -> NodeSelector | None:
    csinode = objects.csinode(node.name)
    if csinode is not None:
        for drv in csinode.drivers:
            if drv.name == provisioner and drv.topology_keys:
                exprs = tuple(Requirement(k, "In", (node.labels[k],)) for k in drv.topology_keys if k in node.labels)
                return NodeSelector((NodeSelectorTerm(exprs),)) if exprs else None
    if allowed:
        terms = tuple(NodeSelectorTerm(tuple(Requirement(k, "In", tuple(v)) for k, v in t.match_label_expressions))
                      for t in allowed)
        return NodeSelector(terms)
    return None


def complete_volume_bindings(objects: MemoryObjects, node: Node, static: Any, dynamic: Any) -> list[str]:
    """Apply PreBind's decisions for a pod bound to ``node``: ``static`` is a list of
    (claim, PV with claimRef) pairs, ``dynamic`` a list of claims to provision. Returns what
    changed, for the timeline."""
    changed: list[str] = []
    for pvc, pv in static:
        bound_pv = dataclasses.replace(pv, phase="Bound", claim_ref=(pvc.namespace, pvc.name))
        objects.add_pv(bound_pv)
        objects.add_pvc(_bound_claim(objects.pvc(pvc.namespace, pvc.name) or pvc, pv.name))
        changed.append(f"bound {pvc.namespace}/{pvc.name} to {pv.name}")
    for pvc in dynamic:
        sc = objects.storage_class(pvc.class_name)
        if sc is None:
            continue
        name = f"pvc-{pvc.meta.uid or pvc.namespace + '-' + pvc.name}"
        storage = pvc.requested_storage
        pv = PersistentVolume(
            meta=ObjectMeta(name=name, annotations={ANN_PROVISIONED_BY: sc.provisioner}),
            capacity={"storage": storage}, access_modes=pvc.access_modes, storage_class_name=sc.name,
            node_affinity=_provisioned_affinity(objects, node, sc.provisioner, sc.allowed_topologies),
            claim_ref=(pvc.namespace, pvc.name), kind="csi", source={"driver": sc.provisioner, "volumeHandle": name},
            volume_mode=pvc.volume_mode, phase="Bound",
            raw=_pv_manifest(name, sc.provisioner, storage, pvc),
        )
        objects.add_pv(pv)
        objects.add_pvc(_bound_claim(objects.pvc(pvc.namespace, pvc.name) or pvc, name))
        changed.append(f"provisioned {name} for {pvc.namespace}/{pvc.name} on {node.name}")
    return changed


def _pv_manifest(name: str, provisioner: str, storage: int, pvc: PersistentVolumeClaim) -> Mapping[str, Any]:
    return {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {ANN_PROVISIONED_BY: provisioner}},
        "spec": {"capacity": {"storage": str(storage)}, "accessModes": list(pvc.access_modes),
                 "storageClassName": pvc.class_name,
                 "claimRef": {"namespace": pvc.namespace, "name": pvc.name, "uid": pvc.meta.uid},
                 "csi": {"driver": provisioner, "volumeHandle": name}},
        "status": {"phase": "Bound"},
    }
