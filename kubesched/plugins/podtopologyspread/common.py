"""What filtering and scoring share (podtopologyspread/common.go): the parsed constraint,
the selector semantics of labels.Selector as this plugin uses it, pod counting, node
inclusion policies, and the default selector of System/List defaulting
(plugins/helper/spread.go: DefaultSelector)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kubesched.framework import ObjectLister, PodInfo
from kubesched.objects import LabelSelector, Node, Pod, Requirement, TopologySpreadConstraint
from kubesched.plugins.helpers.nodeaffinity import RequiredNodeAffinity
from kubesched.plugins.helpers.spread import count_matching_pods, default_selector_parts
from kubesched.plugins.helpers.taints import find_untolerated_taint

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"

# plugin.go: systemDefaultConstraints (used when defaultingType is System).
SYSTEM_DEFAULT_CONSTRAINTS = (
    TopologySpreadConstraint(max_skew=3, topology_key=LABEL_HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY),
    TopologySpreadConstraint(max_skew=5, topology_key=LABEL_TOPOLOGY_ZONE, when_unsatisfiable=SCHEDULE_ANYWAY),
)


@dataclass(frozen=True, slots=True)
class Selector:
    """A labels.Selector: ``match_labels`` (key = value) AND ``requirements``.

    ``nothing`` is labels.Nothing() (a nil labelSelector): it matches no pod and is not
    "empty". A selector with no requirement at all is labels.Everything(): it matches every
    pod, yet countPodsMatchSelector counts 0 for it. Hashable, so it keys the pod-count
    cache."""

    match_labels: tuple[tuple[str, str], ...] = ()
    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def empty(self) -> bool:
        """labels.Selector.Empty(): no requirement (Nothing is not empty)."""
        return not self.nothing and not self.match_labels and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for k, v in self.match_labels:
            if labels.get(k) != v:
                return False
        for r in self.requirements:
            if not r.matches(labels):
                return False
        return True


NOTHING = Selector(nothing=True)


def selector_from(ls: LabelSelector | None) -> Selector:
    """metav1.LabelSelectorAsSelector: nil -> Nothing, {} -> Everything."""
    if ls is None:
        return NOTHING
    return Selector(tuple(sorted(ls.match_labels.items())), ls.match_expressions)


def merge_match_label_keys(sel: Selector, pod_labels: Mapping[str, str], keys: Sequence[str]) -> Selector:
    """filterTopologySpreadConstraints + mergeLabelSetWithSelector: the pod's values of
    ``matchLabelKeys`` (keys the pod lacks are ignored) are ANDed into the selector; a
    Nothing selector has no requirements to merge with and is returned unchanged."""
    if not keys or sel.nothing:
        return sel
    extra: dict[str, str] = {}
    for k in keys:
        v = pod_labels.get(k)
        if v is not None:
            extra[k] = v
    if not extra:
        return sel
    return Selector(sel.match_labels, tuple(Requirement(k, "In", (v,)) for k, v in extra.items()) + sel.requirements)


@dataclass(frozen=True, slots=True)
class Constraint:
    """common.go: topologySpreadConstraint (policies resolved to booleans)."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int
    honor_affinity: bool
    honor_taints: bool


def filter_constraints(constraints: Sequence[TopologySpreadConstraint], pod_labels: Mapping[str, str],
                       action: str) -> tuple[Constraint, ...]:
    """filterTopologySpreadConstraints: the constraints with ``whenUnsatisfiable == action``.
    minDomains nil -> 1; nodeAffinityPolicy nil -> Honor; nodeTaintsPolicy nil -> Ignore
    (MinDomainsInPodTopologySpread, NodeInclusionPolicyInPodTopologySpread and
    MatchLabelKeysInPodTopologySpread are all on in v1.30)."""
    out: list[Constraint] = []
    for c in constraints:
        if c.when_unsatisfiable != action:
            continue
        sel = merge_match_label_keys(selector_from(c.label_selector), pod_labels, c.match_label_keys)
        out.append(Constraint(
            max_skew=c.max_skew,
            topology_key=c.topology_key,
            selector=sel,
            min_domains=c.min_domains if c.min_domains is not None else 1,
            honor_affinity=(c.node_affinity_policy or HONOR) == HONOR,
            honor_taints=(c.node_taints_policy or IGNORE) == HONOR,
        ))
    return tuple(out)


def default_selector(pod: Pod, objects: ObjectLister) -> Selector:
    """helper.DefaultSelector (plugins.helpers.spread.default_selector_parts) as this
    plugin's Selector: the merged label set as ``match_labels``, the controller's
    LabelSelector requirements as ``requirements``."""
    label_set, requirements = default_selector_parts(pod, objects)
    return Selector(tuple(sorted(label_set.items())), requirements)


def build_default_constraints(defaults: Sequence[TopologySpreadConstraint], pod: Pod, action: str,
                              objects: ObjectLister) -> tuple[Constraint, ...]:
    """buildDefaultConstraints: the default constraints for ``action`` with the pod's
    default selector; none if that selector is empty."""
    constraints = filter_constraints(defaults, pod.labels, action)
    if not constraints:
        return ()
    sel = default_selector(pod, objects)
    if sel.empty():
        return ()
    return tuple(Constraint(c.max_skew, c.topology_key, sel, c.min_domains, c.honor_affinity, c.honor_taints)
                 for c in constraints)


def count_pods_match_selector(pods: Sequence[PodInfo], sel: Selector, namespace: str) -> int:
    """countPodsMatchSelector: pods of ``namespace``, not terminating, matching; an empty
    selector counts 0, and so does Nothing (it matches no pod)."""
    if sel.nothing:
        return 0
    return count_matching_pods(namespace, sel, pods)


def node_has_keys(labels: Mapping[str, str], keys: Iterable[str]) -> bool:
    """nodeLabelsMatchSpreadConstraints: every topology key is a label of the node."""
    for k in keys:
        if k not in labels:
            return False
    return True


def match_node_inclusion(c: Constraint, pod: Pod, node: Node, required: RequiredNodeAffinity) -> bool:
    """topologySpreadConstraint.matchNodeInclusionPolicies."""
    if c.honor_affinity and not required.match(node):
        return False
    if c.honor_taints and find_untolerated_taint(node.taints, pod.tolerations) is not None:
        return False
    return True
