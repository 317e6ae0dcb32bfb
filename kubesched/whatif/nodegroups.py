"""Node groups for ``kubesched autoscale``: the cloud provider's side of cluster-autoscaler,
read from a file of ``kubesched.io/v1alpha1`` ``NodeGroup`` documents.

A document::

    apiVersion: kubesched.io/v1alpha1
    kind: NodeGroup
    metadata: {name: general}
    spec:
      minSize: 1                 # cloudprovider.NodeGroup.MinSize
      maxSize: 10                # MaxSize; the group's current size is its member nodes
      pricePerHour: 0.19         # the price expander's and the cheapest scale-up's node price
      priority: 20               # optional: the priority expander's priority for this group
      members:                   # a label selector: the input's nodes of this group
        matchLabels: {pool: general}
      template:                  # a Node: what a new node of the group looks like
        metadata: {labels: {pool: general, topology.kubernetes.io/zone: a}}
        spec: {taints: []}
        status:
          capacity: {cpu: "4", memory: 16Gi, pods: "110"}
          allocatable: {cpu: 3900m, memory: 15Gi, pods: "110"}

cluster-autoscaler asks the cloud provider which group each node belongs to
(``NodeGroupForNode``); here a node belongs to the group whose ``members`` select it, and a
node selected by two groups is an error (a node is in one group). Nodes no group selects are
not autoscaled. Every error names the file, the document and the field, and the command
exits with status 2.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubesched.errors import FieldError, ManifestError
from kubesched.objects import LabelSelector, Node
from kubesched.objects.labels import parse_label_selector
from kubesched.objects.manifests import expand_lists, read_documents
from kubesched.objects.parse import parse_node

API_VERSION = "kubesched.io/v1alpha1"
KIND = "NodeGroup"
_SPEC_FIELDS = frozenset(("minSize", "maxSize", "pricePerHour", "priority", "members", "template"))
# A node group id names template nodes (template-node-for-<id>-...), so it must be a DNS label-ish name.
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-.")


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """One node group: sizes, price, priority, the selector of its nodes and its template."""

    name: str
    min_size: int
    max_size: int
    price_per_hour: float
    members: LabelSelector
    template: Node
    priority: int | None = None
    file: str = ""
    document: int = 0

    def selects(self, node: Node) -> bool:
        return self.members.matches(node.meta.labels)


def _int_field(spec: Mapping[str, Any], name: str, *, required: bool) -> int | None:
    v = spec.get(name)
    if v is None:
        if required:
            raise FieldError(f"spec.{name}", "Required value")
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise FieldError(f"spec.{name}", f"must be an integer, got {v!r}")
    return v


def _parse(raw: Mapping[str, Any]) -> NodeGroup:
    if raw.get("apiVersion") != API_VERSION:
        raise FieldError("apiVersion", f"must be {API_VERSION}, got {raw.get('apiVersion')!r}")
    if raw.get("kind") != KIND:
        raise FieldError("kind", f"must be {KIND}, got {raw.get('kind')!r}")
    md = raw.get("metadata")
    if not isinstance(md, Mapping):
        raise FieldError("metadata", "Required value: the group needs metadata.name")
    name = md.get("name")
    if not isinstance(name, str) or not name:
        raise FieldError("metadata.name", "Required value: the group's name (its id) is required")
    if not set(name) <= _NAME_CHARS or name[0] in "-." or name[-1] in "-.":
        raise FieldError("metadata.name", f"{name!r}: must be lower-case letters, digits, '-' and '.', starting and "
                                          "ending with a letter or digit")
    spec = raw.get("spec")
    if not isinstance(spec, Mapping):
        raise FieldError("spec", "Required value: minSize, maxSize, pricePerHour, members and template")
    unknown = sorted(str(k) for k in spec if k not in _SPEC_FIELDS)
    if unknown:
        raise FieldError(f"spec.{unknown[0]}", f"unknown field (known: {', '.join(sorted(_SPEC_FIELDS))})")
    min_size = _int_field(spec, "minSize", required=True)
    max_size = _int_field(spec, "maxSize", required=True)
    assert min_size is not None and max_size is not None
    if min_size < 0:
        raise FieldError("spec.minSize", f"must be at least 0, got {min_size}")
    if max_size < min_size:
        raise FieldError("spec.maxSize", f"must be at least minSize ({min_size}), got {max_size}")
    priority = _int_field(spec, "priority", required=False)
    price = spec.get("pricePerHour")
    if price is None:
        raise FieldError("spec.pricePerHour", "Required value: the price of one node of the group per hour")
    if isinstance(price, bool) or not isinstance(price, int | float) or not math.isfinite(price) or price < 0:
        raise FieldError("spec.pricePerHour", f"must be a non-negative number, got {price!r}")
    if "members" not in spec:
        raise FieldError("spec.members", "Required value: a label selector picking the group's nodes "
                                         "(matchLabels / matchExpressions)")
    try:
        members = parse_label_selector(spec.get("members"), "spec.members")
    except FieldError:
        raise
    if members is None or (not members.match_labels and not members.match_expressions):
        raise FieldError("spec.members", "must select by at least one label: an empty selector would take every node")
    template = spec.get("template")
    if not isinstance(template, Mapping):
        raise FieldError("spec.template", "Required value: a Node (metadata.labels, spec.taints, status.capacity/"
                                          "allocatable, status.images)")
    for key in ("apiVersion", "kind"):
        want = "v1" if key == "apiVersion" else "Node"
        if key in template and template[key] != want:
            raise FieldError(f"spec.template.{key}", f"must be {want!r} (a Node), got {template[key]!r}")
    tmd = template.get("metadata")
    if tmd is not None and not isinstance(tmd, Mapping):
        raise FieldError("spec.template.metadata", "must be an object")
    node_raw: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", **template,
                                "metadata": {**(tmd or {}), "name": f"template-node-for-{name}"}}
    try:
        node = parse_node(node_raw)
    except FieldError as e:
        raise e.under("spec.template") from None
    for resource in ("cpu", "memory"):
        if node.allocatable.get(resource, 0) <= 0:
            raise FieldError(f"spec.template.status.allocatable.{resource}",
                             "Required value: a new node's allocatable cpu and memory (status.capacity, or "
                             "status.allocatable, must give both)")
    return NodeGroup(name, min_size, max_size, float(price), members, node, priority)


def load_node_groups(path: str | os.PathLike[str]) -> tuple[NodeGroup, ...]:
    """Read and check the node groups of ``path`` (documents in order); ManifestError names
    file, document and field."""
    file = str(path)
    p = Path(path)
    if not p.is_file():
        raise ManifestError(file, None, "", "no such file" if not p.exists() else "not a file")
    groups: list[NodeGroup] = []
    seen: dict[str, int] = {}
    for index, doc in enumerate(read_documents(p)):
        for raw, prefix in expand_lists(doc, file, index):
            try:
                g = _parse(raw)
            except FieldError as e:
                raise ManifestError(file, index, f"{prefix}{e.path}", e.message) from None
            if g.name in seen:
                raise ManifestError(file, index, f"{prefix}metadata.name",
                                    f"duplicate node group {g.name!r} (first in document {seen[g.name]})")
            seen[g.name] = index
            groups.append(NodeGroup(g.name, g.min_size, g.max_size, g.price_per_hour, g.members, g.template,
                                    g.priority, file, index))
    if not groups:
        raise ManifestError(file, None, "", f"no {KIND} document ({API_VERSION})")
    return tuple(groups)


def group_of_nodes(groups: Sequence[NodeGroup], nodes: Sequence[Node]) -> dict[str, NodeGroup]:
    """NodeGroupForNode: node name -> its group (nodes no group selects are absent).
    A node two groups select is an error naming both."""
    out: dict[str, NodeGroup] = {}
    for node in nodes:
        for g in groups:
            if not g.selects(node):
                continue
            other = out.get(node.name)
            if other is not None:
                raise ManifestError(g.file, g.document, "spec.members",
                                    f"node {node.name} is selected by node groups {other.name!r} (document "
                                    f"{other.document}) and {g.name!r}: a node belongs to one group")
            out[node.name] = g
    return out
