"""The Services / controllers a pod belongs to (framework/plugins/helper/spread.go:
GetPodServices and DefaultSelector), as the legacy SelectorSpread and ServiceAffinity
plugins (v1.21/v1.22) use them.

The selector is apimachinery's ``labels.Selector`` reduced to what these helpers build: a
conjunction of requirements. ``labels.Set.AsSelector`` turns each ``key: value`` into an
Equals requirement (here ``key In (value)``, which matches identically); a selector without
requirements is ``Empty()`` and matches every label set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubesched.framework import ObjectLister
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


def default_selector(pod: Pod, objects: ObjectLister) -> Selector:
    """helper.DefaultSelector: the merged selectors of the pod's Services, then its
    controller's selector if the controller is exactly a v1 ReplicationController (map
    selector merged into the label set) or an apps/v1 ReplicaSet / StatefulSet (its
    LabelSelector's requirements added). The controller is looked up by name in the pod's
    namespace; a missing one, or a nil ReplicaSet/StatefulSet selector, adds nothing."""
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
    base = selector_from_set(label_set)
    if not extra:
        return base
    return Selector(base.requirements + extra)


__all__ = ["EVERYTHING", "Selector", "default_selector", "pod_services", "selector_from_set"]
