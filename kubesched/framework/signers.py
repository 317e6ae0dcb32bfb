"""Pod signatures for OpportunisticBatching (KEP-5598; k8s.io/kube-scheduler/framework/signers.go).

A plugin that filters or scores (PreFilter, Filter, PreScore, Score) tells the framework which
parts of a pod its decisions depend on, as :class:`SignFragment` s (``SignPlugin.sign_pod``);
the framework joins every plugin's fragments and the pod's schedulerName into one JSON object,
the pod's signature. Two pods with equal signatures get the same feasibility and scores on the
same nodes in the same state, so the scheduler may reuse one pod's scoring for the next.

A fragment's value must be JSON-serializable and canonical: lists whose order does not matter
are sorted, as upstream's signers do. Signatures are compared for equality only, so the values
here need not be byte-identical to Go's encoding; they mirror its structure (upstream's field
names, its sorting) so that two pods get equal signatures exactly when upstream's are equal.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.objects import Pod
from kubesched.objects.labels import Requirement
from kubesched.objects.model import NodeSelectorTerm, PreferredSchedulingTerm

# Signer names (signers.go): the keys of the signature object. Plugins that depend on the same
# part of the pod use the same key; the value is the same whoever writes it.
DYNAMIC_RESOURCES_SIGNER_NAME = "v1.Pod.Spec.DynamicResources"
IMAGE_NAMES_SIGNER_NAME = "v1.Pod.Spec.CanonicalImageNames()"
LABELS_SIGNER_NAME = "v1.Pod.Labels"
NODE_NAME_SIGNER_NAME = "v1.Pod.Spec.NodeName"
NODE_AFFINITY_SIGNER_NAME = "v1.Pod.Spec.Affinity.NodeAffinity"
NODE_SELECTOR_SIGNER_NAME = "v1.Pod.Spec.Affinity.NodeSelector"
HOST_PORTS_SIGNER_NAME = "v1.Pod.Spec.HostPorts()"
RESOURCES_SIGNER_NAME = "v1.Pod.Spec.ContainerRequestsAndOverheads()"
SCHEDULER_NAME_SIGNER_NAME = "v1.Pod.Spec.SchedulerName"
TOLERATIONS_SIGNER_NAME = "v1.Pod.Spec.Tolerations"
VOLUMES_SIGNER_NAME = "v1.Pod.Spec.Volumes.NonSyntheticSources()"
FEATURES_SIGNER_NAME = "v1.Pod.Spec.RequiredFeatures()"


@dataclass(frozen=True, slots=True)
class SignFragment:
    """fwk.SignFragment: one part of a pod's signature. ``value`` is JSON-serializable."""

    key: str
    value: Any


def _go_json(value: Any) -> str:
    """json.Marshal's compact form (no blanks); keys in the order given (struct field order)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def host_ports_signer(pod: Pod) -> list[int]:
    """HostPortsSigner: the distinct non-zero host ports of the containers and of every init
    container (not only restartable ones), sorted."""
    ports = {p.host_port for c in (*pod.containers, *pod.init_containers) for p in c.ports if p.host_port != 0}
    return sorted(ports)


def _requirement(r: Requirement) -> dict[str, Any]:
    # v1.NodeSelectorRequirement's JSON: key, operator, values (omitempty), values sorted.
    out: dict[str, Any] = {"key": r.key, "operator": r.operator}
    if r.values:
        out["values"] = sorted(r.values)
    return out


def node_selector_requirements_signer(reqs: Sequence[Requirement]) -> list[str]:
    """NodeSelectorRequirementsSigner: each requirement (values sorted) as JSON, sorted."""
    return sorted(_go_json(_requirement(r)) for r in reqs)


def node_selector_term_signer(term: NodeSelectorTerm) -> dict[str, list[str]]:
    """NodeSelectorTermSigner."""
    return {"MatchExpressions": node_selector_requirements_signer(term.match_expressions),
            "MatchFields": node_selector_requirements_signer(term.match_fields)}


def preferred_scheduling_term_signer(terms: Sequence[PreferredSchedulingTerm]) -> list[str]:
    """PreferredSchedulingTermSigner: each {Weight, Preference} as JSON, sorted."""
    return sorted(_go_json({"Weight": t.weight, "Preference": node_selector_term_signer(t.preference)})
                  for t in terms)


def node_selector_terms_signer(terms: Sequence[NodeSelectorTerm]) -> list[str]:
    """NodeSelectorTermsSigner: each term's signature as JSON, sorted."""
    return sorted(_go_json(node_selector_term_signer(t)) for t in terms)


def node_affinity_signer(pod: Pod) -> dict[str, list[str]] | None:
    """NodeAffinitySigner: the required terms and the preferred terms, each canonical; None
    (JSON null) without a node affinity."""
    affinity = pod.affinity
    if affinity is None or affinity.node_affinity is None:
        return None
    na = affinity.node_affinity
    required = node_selector_terms_signer(na.required.terms) if na.required is not None else []
    return {"Required": required, "Preferred": preferred_scheduling_term_signer(na.preferred)}


def tolerations_signer(pod: Pod) -> list[dict[str, Any]]:
    """TolerationsSigner: the tolerations ordered by (key, value), each as v1.Toleration's JSON
    (empty fields omitted). Upstream's sort.Slice is an insertion sort below 12 elements, hence
    stable there, as Python's sort is always."""
    out: list[dict[str, Any]] = []
    for t in sorted(pod.tolerations, key=lambda t: (t.key, t.value)):
        d: dict[str, Any] = {}
        if t.key:
            d["key"] = t.key
        if t.operator:
            d["operator"] = t.operator
        if t.value:
            d["value"] = t.value
        if t.effect:
            d["effect"] = t.effect
        if t.toleration_seconds is not None:
            d["tolerationSeconds"] = t.toleration_seconds
        out.append(d)
    return out


def volumes_signer(pod: Pod) -> list[str]:
    """VolumesSigner: every volume source but ConfigMap and Secret ones (they never change a
    scheduling decision and differ from pod to pod), as JSON, sorted. The volume's name is not
    part of it, only its source."""
    out = []
    for v in pod.volumes:
        if v.kind in ("configMap", "secret"):
            continue
        out.append(json.dumps({v.kind: v.source}, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                              default=str))
    return sorted(out)

