"""ServiceAffinity: keep the pods of a Service on nodes with the same values of the
configured labels (PreFilter/Filter with AddPod/RemovePod), and spread them over the
values of the anti-affinity labels (Score/NormalizeScore).

Mirrors framework/plugins/serviceaffinity/service_affinity.go as of v1.21/v1.22, the plugin
the legacy Policy produced for ``serviceAffinity`` predicate arguments (affinityLabels)
and ``serviceAntiAffinity`` priority arguments (antiAffinityLabelsPreference).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from kubesched.config.args import ServiceAffinityArgs
from kubesched.errors import ConfigError
from kubesched.framework import (
    GVK,
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    NodeScore,
    PodInfo,
    PreFilterResult,
    StateKey,
    Status,
)
from kubesched.objects import Pod, Service
from kubesched.plugins.helpers.spread import EVERYTHING, Selector, count_matching_pods, pod_services, selector_from_set

NAME = "ServiceAffinity"
ERR_REASON = "node(s) didn't match service affinity"
_PRE_FILTER_KEY_NAME = "PreFilter" + NAME
# framework.ErrNotFound wrapped by getPreFilterState.
_ERR_STATE_NOT_FOUND = f'error reading "{_PRE_FILTER_KEY_NAME}" from cycleState: not found'
# The Service events upstream registered (framework.Service); v1.30 has no such resource.
SERVICE_RESOURCE = "Service"


class PreFilterState:
    """preFilterState: the pods (any node, same namespace) whose labels include all of the
    incoming pod's labels, and the Services selecting the incoming pod. AddPod/RemovePod
    mutate the pod list, so clone() copies both lists."""

    __slots__ = ("matching_pod_list", "matching_pod_services")

    def __init__(self, matching_pod_list: list[Pod], matching_pod_services: list[Service]) -> None:
        self.matching_pod_list = matching_pod_list
        self.matching_pod_services = matching_pod_services

    def clone(self) -> PreFilterState:
        return PreFilterState(list(self.matching_pod_list), list(self.matching_pod_services))


_PRE_FILTER_KEY: StateKey[PreFilterState] = StateKey(_PRE_FILTER_KEY_NAME)
# Score's per-cycle memo of the selector of the pod's first Service (upstream recomputes
# GetPodServices on every node; the listers do not change within a cycle here).
_SCORE_SELECTOR_KEY: StateKey[tuple[Pod, Selector]] = StateKey("Score" + NAME + "Selector")


def create_selector_from_labels(labels: Mapping[str, str]) -> Selector:
    """createSelectorFromLabels: Everything for no labels, else every pair must match."""
    if not labels:
        return EVERYTHING
    return selector_from_set(labels)


def _set_selector_matches(pairs: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """labels.Set(pairs).AsSelector().Matches(labels) (an empty set matches everything)."""
    for k, v in pairs.items():
        if k not in labels or labels[k] != v:
            return False
    return True


def filter_out_pods(node_info: NodeInfo, pods: Sequence[Pod]) -> list[Pod]:
    """NodeInfo.FilterOutPods: drop the pods that claim this node but are not among its pods
    (preemption simulates removals on a NodeInfo copy). Pods are compared by UID
    (GetPodKey), and a pod of this node with an empty UID is always dropped."""
    node = node_info.node
    if node is None:
        return list(pods)
    name = node.meta.name
    out: list[Pod] = []
    present: set[str] | None = None
    for p in pods:
        if p.node_name != name:
            out.append(p)
            continue
        if not p.uid:
            continue
        if present is None:
            present = {pi.pod.uid for pi in node_info.pods if pi.pod.uid}
        if p.uid in present:
            out.append(p)
    return out


def _go_quote(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


class ServiceAffinity:
    name = NAME

    def __init__(self, handle: Handle, args: ServiceAffinityArgs | None = None) -> None:
        a = args if args is not None else ServiceAffinityArgs()
        self.handle = handle
        self.affinity_labels: tuple[str, ...] = tuple(a.affinity_labels)
        self.anti_affinity_labels_preference: tuple[str, ...] = tuple(a.anti_affinity_labels_preference)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """v1.22's EventsToRegister (best recollection, not verified against the source): no
        events without affinity labels (Filter never fails then); otherwise the deletion of a
        pod backing the Service, node additions and label changes, and Service updates and
        deletions (which may break the correlation with the pods that backed it)."""
        if not self.affinity_labels:
            return []
        return [
            ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.DELETE)),
            ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(ClusterEvent(SERVICE_RESOURCE, ActionType.UPDATE | ActionType.DELETE)),
        ]

    # ---- PreFilter
    def _create_pre_filter_state(self, pod: Pod) -> PreFilterState:
        """createPreFilterState: the Services selecting the pod, and every pod in the snapshot
        (snapshot node order, then each node's pod order) of the same namespace whose labels
        contain all of the pod's labels."""
        services = pod_services(pod, self.handle.objects)
        selector = create_selector_from_labels(pod.labels)
        ns = pod.namespace
        matching: list[Pod] = []
        for ni in self.handle.snapshot.list():
            for pi in ni.pods:
                p = pi.pod
                if p.meta.namespace == ns and selector.matches(p.meta.labels):
                    matching.append(p)
        return PreFilterState(matching, services)

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status | None]:
        if not self.affinity_labels:
            return None, None
        state.write(_PRE_FILTER_KEY, self._create_pre_filter_state(pod))
        return None, None

    def pre_filter_extensions(self) -> ServiceAffinity | None:
        return self if self.affinity_labels else None

    def add_pod(self, state: CycleState, pod_to_schedule: Pod, pod_info_to_add: PodInfo,
                node_info: NodeInfo) -> Status | None:
        """AddPod: a pod of the same namespace whose labels contain the incoming pod's
        labels joins the matching list (at its end)."""
        s = state.get(_PRE_FILTER_KEY)
        if s is None:
            return Status.as_error(_ERR_STATE_NOT_FOUND)
        added = pod_info_to_add.pod
        if added.namespace != pod_to_schedule.namespace:
            return None
        if create_selector_from_labels(pod_to_schedule.labels).matches(added.labels):
            s.matching_pod_list.append(added)
        return None

    def remove_pod(self, state: CycleState, pod_to_schedule: Pod, pod_info_to_remove: PodInfo,
                   node_info: NodeInfo) -> Status | None:
        """RemovePod: drop the first matching pod with the same name and namespace (checked
        only when the namespace is the one of the first matching pod)."""
        s = state.get(_PRE_FILTER_KEY)
        if s is None:
            return Status.as_error(_ERR_STATE_NOT_FOUND)
        removed = pod_info_to_remove.pod
        lst = s.matching_pod_list
        if not lst or removed.namespace != lst[0].namespace:
            return None
        for i, p in enumerate(lst):
            if p.name == removed.name and p.namespace == removed.namespace:
                del lst[i]
                break
        return None

    # ---- Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Filter: the node must carry the pod's nodeSelector values of the affinity labels;
        labels the nodeSelector lacks are backfilled from the node of the first matching pod
        (when the pod has a Service), so that a Service's pods share the label values."""
        if not self.affinity_labels:
            return None
        node = node_info.node
        if node is None:
            return Status.as_error("node not found")
        s = state.get(_PRE_FILTER_KEY)
        if s is None:
            return Status.as_error(_ERR_STATE_NOT_FOUND)
        filtered = filter_out_pods(node_info, s.matching_pod_list)
        # findLabelsInSet over the pod's nodeSelector.
        node_selector = pod.node_selector or {}
        affinity: dict[str, str] = {}
        for label in self.affinity_labels:
            if label in node_selector:
                affinity[label] = node_selector[label]
        # Step 1: backfill the labels the nodeSelector does not pin.
        if len(self.affinity_labels) > len(affinity) and s.matching_pod_services and filtered:
            other = self.handle.snapshot.get(filtered[0].node_name)
            if other is None or other.node is None:
                return Status.as_error("node not found")
            other_labels = other.node.meta.labels
            # addUnsetLabelsToMap: never overwrite, backfill only labels the node has.
            for label in self.affinity_labels:
                if label not in affinity and label in other_labels:
                    affinity[label] = other_labels[label]
        # Step 2: the node must match every collected label.
        if _set_selector_matches(affinity, node.meta.labels):
            return None
        return Status.unschedulable(ERR_REASON)

    # ---- Score
    def _score_selector(self, state: CycleState, pod: Pod) -> Selector:
        cached = state.get(_SCORE_SELECTOR_KEY)
        if cached is not None and cached[0] is pod:
            return cached[1]
        services = pod_services(pod, self.handle.objects)
        # labels.SelectorFromSet(services[0].Spec.Selector), else labels.NewSelector()
        # (empty). services[0] is the lister's first; upstream's order is map order.
        sel = selector_from_set(services[0].selector) if services else EVERYTHING
        state.write(_SCORE_SELECTOR_KEY, (pod, sel))
        return sel

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """Score: the number of pods on the node (same namespace, not being deleted) matched
        by the selector of the pod's first Service; 0 without a Service."""
        return count_matching_pods(pod.namespace, self._score_selector(state, pod), node_info.pods)

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        """NormalizeScore: for each anti-affinity label, nodes carrying it get
        MaxNodeScore × (total − pods in their label value) / total (MaxNodeScore when the
        total is 0), divided by the number of labels, summed over labels (float64) and
        truncated; nodes without the label get nothing for it. Without labels every score
        becomes 0."""
        reduce_result = [0.0] * len(scores)
        for label in self.anti_affinity_labels_preference:
            err = self._update_node_scores_for_label(scores, reduce_result, label)
            if err is not None:
                return err
        for i, v in enumerate(reduce_result):
            scores[i].score = int(v)
        return None

    def _update_node_scores_for_label(self, scores: list[NodeScore], reduce_result: list[float],
                                      label: str) -> Status | None:
        """updateNodeScoresForLabel."""
        snapshot = self.handle.snapshot
        num_service_pods = 0
        pod_counts: dict[str, int] = {}
        label_nodes_status: dict[str, str] = {}
        for s in scores:
            num_service_pods += s.score
            ni = snapshot.get(s.name)
            if ni is None or ni.node is None:
                return Status.as_error(f"nodeinfo not found for node name {_go_quote(s.name)}")
            labels = ni.node.meta.labels
            if label not in labels:
                continue
            value = labels[label]
            label_nodes_status[s.name] = value
            pod_counts[value] = pod_counts.get(value, 0) + s.score
        max_priority = float(MAX_NODE_SCORE)
        n_labels = float(len(self.anti_affinity_labels_preference))
        for i, s in enumerate(scores):
            value_or_none = label_nodes_status.get(s.name)
            if value_or_none is None:
                continue
            f_score = max_priority
            if num_service_pods > 0:
                f_score = max_priority * (float(num_service_pods - pod_counts[value_or_none]) / float(num_service_pods))
            reduce_result[i] += f_score / n_labels
        return None


def new(args: object, handle: Handle) -> ServiceAffinity:
    """Plugin factory (registry entry); ``args`` is a ServiceAffinityArgs or None (no labels;
    upstream had no validation for these args)."""
    if args is not None and not isinstance(args, ServiceAffinityArgs):
        raise ConfigError(f"want args to be of type ServiceAffinityArgs, got {type(args).__name__}")
    return ServiceAffinity(handle, args)
