"""Pod group states in the scheduler cache (backend/cache/podgroupstate.go and cache.go's
*PodGroupMember functions): for each pod group (namespace, spec.schedulingGroup.podGroupName)
the pods the scheduler knows, split into unscheduled, assumed and assigned.

The pods enter as the event handlers see them (AddPodGroupMember when an unscheduled pod
reaches the queue, the cache's AddPod for a bound one), move with assume / forget / bind, and
leave with the pod. A pod is a member only when it carries ``scheduling_group``, which the
API server keeps only with GenericWorkload (upstream's cache checks the gate; here the parsed
pod already reflects it).
"""

from __future__ import annotations

from kubesched.objects import Pod


class PodGroupState:
    """podGroupState: a group's pods by UID. Implements kubesched.framework.PodGroupState."""

    __slots__ = ("_all", "_unscheduled", "_assumed", "_assigned", "generation")

    def __init__(self) -> None:
        self._all: dict[str, Pod] = {}
        self._unscheduled: dict[str, None] = {}  # ordered sets: deterministic activation order
        self._assumed: dict[str, Pod] = {}
        self._assigned: dict[str, None] = {}
        self.generation = 0

    # ---- podGroupStateData's mutations
    def add_pod(self, pod: Pod) -> None:
        """addPod: assigned if it has a node, unscheduled otherwise."""
        self.generation += 1
        self._all[pod.uid] = pod
        if pod.node_name:
            self._assigned[pod.uid] = None
        else:
            self._unscheduled[pod.uid] = None

    def update_pod(self, old: Pod, new: Pod) -> None:
        """updatePod: a bind (no node -> node) moves the pod to assigned."""
        self.generation += 1
        self._all[new.uid] = new
        if not old.node_name and new.node_name:
            self._assigned[new.uid] = None
            self._unscheduled.pop(new.uid, None)
            self._assumed.pop(new.uid, None)

    def delete_pod(self, uid: str) -> None:
        self.generation += 1
        self._all.pop(uid, None)
        self._unscheduled.pop(uid, None)
        self._assumed.pop(uid, None)
        self._assigned.pop(uid, None)

    def assume_pod(self, pod: Pod) -> None:
        """assumePod: a pod the group does not hold (removed from the cluster meanwhile) is
        ignored; a stored pod already bound counts as assigned."""
        stored = self._all.get(pod.uid)
        if stored is None:
            return
        self.generation += 1
        if stored.node_name:
            self._assigned[pod.uid] = None
        else:
            self._assumed[pod.uid] = pod
        self._unscheduled.pop(pod.uid, None)

    def forget_pod(self, uid: str) -> None:
        """forgetPod: back from assumed to unscheduled (or assigned if the stored pod is)."""
        pod = self._all.get(uid)
        if pod is None:
            return
        self.generation += 1
        self._assumed.pop(uid, None)
        if pod.node_name:
            self._assigned[uid] = None
        else:
            self._unscheduled[uid] = None

    def empty(self) -> bool:
        return not self._all

    def clone(self) -> PodGroupState:
        """deepCopy (the snapshot a pod group scheduling cycle would work on)."""
        c = PodGroupState()
        c._all = dict(self._all)
        c._unscheduled = dict(self._unscheduled)
        c._assumed = dict(self._assumed)
        c._assigned = dict(self._assigned)
        c.generation = self.generation
        return c

    # ---- fwk.PodGroupState
    def all_pods(self) -> set[str]:
        return set(self._all)

    def all_pods_count(self) -> int:
        return len(self._all)

    def unscheduled_pods(self) -> dict[str, Pod]:
        """unscheduledPodsMap: by pod name."""
        return {self._all[uid].name: self._all[uid] for uid in self._unscheduled}

    def assumed_pods(self) -> set[str]:
        return set(self._assumed)

    def assigned_pods(self) -> set[str]:
        return set(self._assigned)

    def scheduled_pods(self) -> list[Pod]:
        return [self._all[uid] for uid in self._assigned] + list(self._assumed.values())

    def scheduled_pods_count(self) -> int:
        return len(self._assumed) + len(self._assigned)

    def __repr__(self) -> str:
        return (f"PodGroupState(all={len(self._all)}, unscheduled={len(self._unscheduled)}, "
                f"assumed={len(self._assumed)}, assigned={len(self._assigned)})")


class PodGroupStates:
    """The cache's podGroupStates map and its *PodGroupMember functions; the
    PodGroupStateLister handed to plugins (Handle.pod_group_states)."""

    __slots__ = ("_states",)

    def __init__(self) -> None:
        self._states: dict[tuple[str, str], PodGroupState] = {}

    @staticmethod
    def _key(pod: Pod) -> tuple[str, str] | None:
        return (pod.namespace, pod.scheduling_group) if pod.scheduling_group is not None else None

    def get(self, namespace: str, name: str) -> PodGroupState | None:
        return self._states.get((namespace, name))

    def __len__(self) -> int:
        return len(self._states)

    def add(self, pod: Pod) -> None:
        """addPodGroupMember: the state is created with its first pod."""
        key = self._key(pod)
        if key is None:
            return
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = PodGroupState()
        state.add_pod(pod)

    def update(self, old: Pod, new: Pod) -> None:
        """updatePodGroupMember (a missing state is a missed add: ignored, as upstream logs it)."""
        key = self._key(new)
        state = self._states.get(key) if key is not None else None
        if state is not None:
            state.update_pod(old, new)

    def remove(self, pod: Pod) -> None:
        """removePodGroupMember: the state goes with its last pod."""
        key = self._key(pod)
        state = self._states.get(key) if key is not None else None
        if key is None or state is None:
            return
        state.delete_pod(pod.uid)
        if state.empty():
            del self._states[key]

    def assume(self, pod: Pod) -> None:
        """assumePodGroupMember: a group unknown so far starts with this pod."""
        key = self._key(pod)
        if key is None:
            return
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = PodGroupState()
            state._all[pod.uid] = pod  # noqa: SLF001 - upstream seeds allPods directly
        state.assume_pod(pod)

    def forget(self, pod: Pod) -> None:
        """forgetPodGroupMember."""
        key = self._key(pod)
        state = self._states.get(key) if key is not None else None
        if state is not None:
            state.forget_pod(pod.uid)
