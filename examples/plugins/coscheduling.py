"""Coscheduling: gang scheduling — a pod group's pods are bound all together or not at all.

In the spirit of kubernetes-sigs/scheduler-plugins' Coscheduling, without the PodGroup CRD:

- a pod joins a group with the label ``scheduling.x-k8s.io/pod-group: NAME`` (groups are
  per namespace); the group's *minMember* is the pod's annotation
  ``scheduling.x-k8s.io/min-member`` or else the args' ``minMember`` entry for the group;
- **PreFilter** rejects a pod whose group has fewer than minMember pods in existence (the
  others have not been created yet: no point reserving anything);
- **Permit** holds each reserved pod (Wait) until minMember pods of its group are reserved,
  then allows all of them at once; a pod waits at most ``permitWaitingTimeSeconds``;
- when a waiting pod is rejected (its wait timed out, it was preempted ...), **Unreserve**
  rejects the group's other waiting pods, so no pod keeps holding a node for a gang that
  will not assemble. The group is then *denied*: its pods are rejected at PreFilter until the
  cluster changes (a pod outside the group comes or goes, a node is added or resized) —
  upstream's PodGroup backoff, keyed on cluster changes rather than time.

Use it (``Reserve`` carries Unreserve; the config enables the three points)::

    kubesched simulate examples/plugins/gang-cluster-fits --config examples/plugins/gang-config.yaml \\
        --plugin examples.plugins.coscheduling:new
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from kubesched.errors import FieldError
from kubesched.framework import (
    GVK,
    PODS_TO_ACTIVATE_KEY,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    PreFilterResult,
    Status,
)
from kubesched.objects import Pod

NAME = "Coscheduling"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
MIN_MEMBER_ANNOTATION = "scheduling.x-k8s.io/min-member"


@dataclass(frozen=True)
class CoschedulingArgs:
    """pluginConfig args: ``permitWaitingTimeSeconds`` (how long a reserved pod waits for its
    group, default 30) and ``minMember`` (group name -> minMember, for pods without the
    annotation)."""

    permit_waiting_time_seconds: int = 30
    min_member: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.permit_waiting_time_seconds <= 0:
            raise FieldError("permitWaitingTimeSeconds", f"Invalid value: {self.permit_waiting_time_seconds}: "
                                                         "must be greater than 0")
        for group, n in self.min_member.items():
            if n < 1:
                raise FieldError(f"minMember[{group}]", f"Invalid value: {n}: must be at least 1")


def group_of(pod: Pod) -> str | None:
    """The pod's group name, or None for a pod outside any group."""
    return pod.labels.get(POD_GROUP_LABEL) or None


class Coscheduling:
    name = NAME

    def __init__(self, args: CoschedulingArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        # Pods Permit let through (the group had assembled): their later failure (a bind
        # error) is no failure of the group.
        self._allowed: set[str] = set()
        # Denied groups ("namespace/name") -> the cluster as it was when the group failed.
        self._denied: dict[str, Hashable] = {}

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A new member, room freed, a node added or resized may let a rejected group assemble.
        return [ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.ADD | ActionType.DELETE)),
                ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE))]

    # ---- helpers
    def _min_member(self, pod: Pod, group: str) -> int | None:
        raw = pod.meta.annotations.get(MIN_MEMBER_ANNOTATION)
        if raw is not None:
            try:
                return max(int(raw), 1)
            except ValueError:
                return None
        return self.args.min_member.get(group)

    def _assigned(self, pod: Pod, group: str) -> int:
        """Pods of the group on nodes — bound, or reserved and waiting — other than ``pod``
        (upstream's CalculateAssignedPods, from the snapshot)."""
        n = 0
        for ni in self.handle.snapshot.list():
            for pi in ni.pods:
                p = pi.pod
                if p.uid != pod.uid and p.namespace == pod.namespace and group_of(p) == group:
                    n += 1
        return n

    def _cluster_outside(self, namespace: str, group: str) -> Hashable:
        """What could let the group fit that is not the group itself: the nodes and their
        allocatable resources, and the other pods on them."""
        nodes = self.handle.snapshot.list()
        sizes = frozenset((ni.name, ni.allocatable.milli_cpu, ni.allocatable.memory, ni.allocatable.allowed_pod_number)
                          for ni in nodes)
        others = frozenset(pi.pod.uid for ni in nodes for pi in ni.pods
                           if pi.pod.namespace != namespace or group_of(pi.pod) != group)
        return sizes, others

    def _reject_waiting(self, namespace: str, group: str, message: str) -> None:
        for wp in self.handle.iterate_over_waiting_pods():
            if wp.pod.namespace == namespace and group_of(wp.pod) == group:
                wp.reject(NAME, message)

    # ---- PreFilter
    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status | None]:
        group = group_of(pod)
        if group is None:
            return None, None
        key = f"{pod.namespace}/{group}"
        min_member = self._min_member(pod, group)
        if min_member is None:
            return None, Status.unresolvable(
                f"pod group {key} has no minMember: annotate its pods with {MIN_MEMBER_ANNOTATION} "
                f"or set args.minMember[{group}]")
        members = sum(1 for p in self.handle.objects.pods(pod.namespace) if group_of(p) == group and not p.is_terminal)
        if members < min_member:
            return None, Status.unresolvable(
                f"pre-filter pod {pod.name} cannot find enough sibling pods, current pods number: {members}, "
                f"minMember of group: {min_member}")
        denied = self._denied.get(key)
        if denied is not None:
            if denied == self._cluster_outside(pod.namespace, group):
                return None, Status.unresolvable(
                    f"pod group {key} could not gather {min_member} pods; it is retried once the cluster changes")
            del self._denied[key]
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    # ---- Reserve / Unreserve
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """The pod's reservation is undone: if its group had not assembled, the group failed —
        reject the members still waiting (idempotent: a second call finds none) and deny
        the group until the cluster changes."""
        group = group_of(pod)
        if group is None:
            return
        if pod.uid in self._allowed:
            self._allowed.discard(pod.uid)  # e.g. a bind error after the group assembled
        else:
            self._denied[f"{pod.namespace}/{group}"] = self._cluster_outside(pod.namespace, group)
        self._reject_waiting(pod.namespace, group, "rejection in Unreserve")

    # ---- Permit
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        group = group_of(pod)
        if group is None:
            return None, 0
        min_member = self._min_member(pod, group) or 1
        assigned = self._assigned(pod, group)
        if assigned + 1 < min_member:
            self._activate_siblings(state, pod, group)
            return (Status.wait(f"waiting for {min_member - assigned - 1} more pod(s) of group "
                                f"{pod.namespace}/{group}"), float(self.args.permit_waiting_time_seconds))
        # Quorum: let the whole group through.
        self._allowed.add(pod.uid)
        for wp in self.handle.iterate_over_waiting_pods():
            if wp.pod.namespace == pod.namespace and group_of(wp.pod) == group:
                self._allowed.add(wp.pod.uid)
                wp.allow(NAME)
        return None, 0


    def _activate_siblings(self, state: CycleState, pod: Pod, group: str) -> None:
        """ActivateSiblings: the group's pending pods move to activeQ at the end of this cycle,
        so the gang assembles before the wait runs out (PodsToActivate)."""
        pta = state.get(PODS_TO_ACTIVATE_KEY)
        if pta is None:
            return
        for other in self.handle.objects.pods(pod.namespace):
            if other.uid != pod.uid and not other.node_name and group_of(other) == group:
                pta.map[other.key] = other


def new(args: CoschedulingArgs, handle: Handle) -> Coscheduling:
    """Plugin factory: ``args`` arrive decoded into CoschedulingArgs (typed args)."""
    return Coscheduling(args, handle)
