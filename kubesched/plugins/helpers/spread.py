"""The Services / controllers a pod belongs to (framework/plugins/helper/spread.go:
GetPodServices and DefaultSelector), as the legacy SelectorSpread and ServiceAffinity
plugins (v1.21/v1.22) use them.

The selector is apimachinery's ``labels.Selector`` reduced to what these helpers build: a
conjunction of requirements. ``labels.Set.AsSelector`` turns each ``key: value`` into an
Equals requirement (here ``key In (value)``, which matches identically); a selector without
requirements is ``Empty()`` and matches every label set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from kubesched.framework import ObjectLister, PodInfo
from kubesched.objects import Pod, Requirement, Service

# The controller kinds DefaultSelector follows (rcKind, rsKind, ssKind), as (group, version, kind).
_RC = ("", "v1", "ReplicationController")
_RS = ("apps", "v1", "ReplicaSet")
_SS = ("apps", "v1", "StatefulSet")


@dataclass(frozen=True, slots=True)
class Selector:
    """A labels.Selector made of ANDed requirements."""

    requirements: tuple[Requirement, ...] = ()

    def empty(self) -> bool:
        """labels.Selector.Empty(): no requirement at all."""
        return not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        for r in self.requirements:
            if not r.matches(labels):
                return False
        return True


EVERYTHING = Selector()


class PodSelector(Protocol):
    """What count_matching_pods needs of a selector (this module's Selector, or
    PodTopologySpread's)."""

    def empty(self) -> bool: ...

    def matches(self, labels: Mapping[str, str]) -> bool: ...


def count_matching_pods(namespace: str, selector: PodSelector, pods: Sequence[PodInfo]) -> int:
    """countMatchingPods (SelectorSpread), ServiceAffinity's Score and PodTopologySpread's
    countPodsMatchSelector: the pods of ``namespace``, not being deleted, matched by the
    selector; 0 for an empty selector (no Service/controller/constraint selects anything)."""
    if not pods or selector.empty():
        return 0
    n = 0
    for pi in pods:
        p = pi.pod
        if p.meta.namespace == namespace and p.meta.deletion_timestamp is None and selector.matches(p.meta.labels):
            n += 1
    return n


def selector_from_set(label_set: Mapping[str, str]) -> Selector:
    """labels.SelectorFromSet / Set.AsSelector: one Equals requirement per pair (sorted by
    key, as upstream sorts them); an empty set gives the empty selector (Everything)."""
    return Selector(tuple(Requirement(k, "In", (label_set[k],)) for k in sorted(label_set)))


def pod_services(pod: Pod, objects: ObjectLister) -> list[Service]:
    """helper.GetPodServices: the Services of the pod's namespace whose selector matches the
    pod's labels, in lister order. A Service without a selector matches nothing (an empty
    selector map is indistinguishable from a nil one once it went through the API server)."""
    labels = pod.labels
    out: list[Service] = []
    for svc in objects.services(pod.namespace):
        sel = svc.selector
        if not sel:
            continue
        if all(k in labels and labels[k] == v for k, v in sel.items()):
            out.append(svc)
    return out


def _parse_group_version(api_version: str) -> tuple[str, str] | None:
    """schema.ParseGroupVersion: "" and "/" are the empty GroupVersion, "v" is the core
    group, "g/v" a named group; more than one "/" is an error (None)."""
    if api_version in ("", "/"):
        return "", ""
    parts = api_version.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    return None


def default_selector_parts(pod: Pod, objects: ObjectLister) -> tuple[dict[str, str], tuple[Requirement, ...]]:
    """helper.DefaultSelector, as its two parts: the label set (the merged selectors of the
    pod's Services, then its controller's map selector if the controller is exactly a v1
    ReplicationController) and the requirements ANDed to it (an apps/v1 ReplicaSet /
    StatefulSet controller's LabelSelector). The owner's apiVersion goes through
    schema.ParseGroupVersion ("/v1" is the core group too). The controller is looked up by
    name in the pod's namespace; a missing one, or a nil ReplicaSet/StatefulSet selector,
    adds nothing. SelectorSpread and PodTopologySpread each build their own selector type
    from these parts."""
    label_set: dict[str, str] = {}
    # Services, RCs, RSs and SSs matching the pod do not conflict, so merging is safe.
    for svc in pod_services(pod, objects):
        label_set.update(svc.selector)
    extra: tuple[Requirement, ...] = ()
    owner = pod.meta.controller_ref()
    if owner is not None:
        gv = _parse_group_version(owner.api_version)
        if gv is not None:
            gvk = (gv[0], gv[1], owner.kind)
            if gvk in (_RC, _RS, _SS):
                workload = next((w for w in objects.workloads(pod.namespace)
                                 if w.kind == owner.kind and w.name == owner.name), None)
                if workload is not None and workload.selector is not None:
                    ws = workload.selector
                    if gvk == _RC:
                        label_set.update(ws.match_labels)
                    else:
                        # metav1.LabelSelectorAsSelector: matchLabels as Equals, then the expressions.
                        extra = tuple(Requirement(k, "In", (v,)) for k, v in ws.match_labels.items())
                        extra += ws.match_expressions
    return label_set, extra


def default_selector(pod: Pod, objects: ObjectLister) -> Selector:
    """helper.DefaultSelector: the label set's Equals requirements (sorted by key), then the
    controller's requirements (see default_selector_parts)."""
    label_set, extra = default_selector_parts(pod, objects)
    base = selector_from_set(label_set)
    if not extra:
        return base
    return Selector(base.requirements + extra)


__all__ = [
    "EVERYTHING", "PodSelector", "Selector", "count_matching_pods", "default_selector", "default_selector_parts",
    "pod_services", "selector_from_set",
]
