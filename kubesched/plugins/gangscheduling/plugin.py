"""GangScheduling: all-or-nothing scheduling of the pods of a PodGroup whose scheduling policy
is ``gang`` (scheduling.k8s.io/v1alpha2), behind the GangScheduling gate (alpha, off; it needs
GenericWorkload, which serves the API).

Mirrors framework/plugins/gangscheduling/gangscheduling.go (v1.36):

- PreEnqueue holds a pod naming a group until the PodGroup exists and until the scheduler knows
  at least ``minCount`` pods of the group (the cache's pod group state: unscheduled pods that
  reached the queue, assumed and bound ones).
- Permit makes each member wait (at most 5 minutes) until ``minCount`` members are assumed or
  bound, activating the group's unscheduled pods so that they are tried meanwhile; the member
  that completes the quorum allows every waiting (assumed) member. A member whose wait runs out
  is rejected alone by the framework's timer: upstream has no Reserve/Unreserve here, so the
  other members keep waiting until their own deadlines.
- EventsToRegister: Pod/Add (a new member may complete the quorum; a pod's group is immutable,
  so no Pod/Update) and PodGroup/Add (PodGroups are immutable too), both with queueing hints.

Upstream's Permit reads the snapshot's pod group states in a pod group scheduling cycle
(CycleState.IsPodGroupSchedulingCycle, schedule_one_podgroup.go) and the cache's otherwise;
kubesched schedules pod by pod (no pod group cycle), so Permit always reads the cache's.
"""

from __future__ import annotations

from kubesched.framework import (
    GVK,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    PodGroupStateLister,
    QueueingHint,
    Status,
)
from kubesched.objects import Pod, PodGroup
from kubesched.plugins.helpers.eventobjects import as_objects, present
from kubesched.plugins.helpers.podgroup import matching_scheduling_group

NAME = "GangScheduling"
# permitTimeoutDuration: how long gang members wait at Permit for the quorum.
PERMIT_TIMEOUT = 5 * 60.0
WAITING_FOR_MIN_COUNT_IN_QUEUE = "waiting for minCount pods from a gang to appear in scheduling queue"
WAITING_FOR_MIN_COUNT_SCHEDULED = "waiting for minCount pods from a gang to be scheduled"


def waiting_for_pod_group(name: str) -> str:
    """PreEnqueue's message while the PodGroup does not exist (upstream's wording, "pods's")."""
    return f'waiting for pods\'s pod group "{name}" to appear in scheduling queue'


class GangScheduling:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    # ---- EnqueueExtensions
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """GangScheduling.EventsToRegister: Pod/Add and PodGroup/Add, each hinted."""
        return [
            ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.ADD), self.is_schedulable_after_pod_added),
            ClusterEventWithHint(ClusterEvent(GVK.POD_GROUP, ActionType.ADD),
                                 self.is_schedulable_after_pod_group_added),
        ]

    def is_schedulable_after_pod_added(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterPodAdded: only a pod of the same scheduling group may help."""
        _, added = as_objects(Pod, old, new)
        if not matching_scheduling_group(pod, present(added, "added pod")):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_pod_group_added(self, pod: Pod, old: object | None,
                                             new: object | None) -> QueueingHint:
        """isSchedulableAfterPodGroupAdded: only the pod's own PodGroup may help."""
        _, added = as_objects(PodGroup, old, new)
        group = present(added, "added pod group")
        if pod.scheduling_group is None or pod.namespace != group.namespace or pod.scheduling_group != group.name:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    # ---- PreEnqueue
    def pre_enqueue(self, pod: Pod) -> Status | None:
        """GangScheduling.PreEnqueue: a gang member enters the queue once its PodGroup exists
        and the scheduler knows ``minCount`` of its pods; any other pod at once."""
        group_name = pod.scheduling_group
        if group_name is None:
            return None
        group = self.handle.objects.pod_group(pod.namespace, group_name)
        if group is None:
            # The pod is unschedulable until its PodGroup object is created.
            return Status.unresolvable(waiting_for_pod_group(group_name))
        gang = group.scheduling_policy.gang
        if gang is None:
            return None  # a Basic policy: nothing for this plugin
        state = self.handle.pod_group_states().get(pod.namespace, group_name)
        if state is None:
            return _state_not_found(pod.namespace, group_name)
        if state.all_pods_count() < gang.min_count:
            return Status.unresolvable(WAITING_FOR_MIN_COUNT_IN_QUEUE)
        return None

    # ---- Permit
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        """GangScheduling.Permit: wait (PERMIT_TIMEOUT) until ``minCount`` members are
        scheduled (assumed or bound), activating the unscheduled ones; the member completing
        the quorum allows all the waiting ones."""
        group_name = pod.scheduling_group
        if group_name is None:
            return None, 0.0
        group = self.handle.objects.pod_group(pod.namespace, group_name)
        if group is None:
            # Removed meanwhile (or another error): an error retries the pod once it is back.
            return Status.as_error(f"failed to get podGroup {pod.namespace}/{group_name}: "
                                   f'podgroup.scheduling.k8s.io "{group_name}" not found'), 0.0
        gang = group.scheduling_policy.gang
        if gang is None:
            return None, 0.0
        # No pod group scheduling cycle in kubesched: the cache's states (PodGroupManager).
        lister: PodGroupStateLister = self.handle.pod_group_states()
        group_state = lister.get(pod.namespace, group_name)
        if group_state is None:
            return _state_not_found(pod.namespace, group_name), 0.0
        if group_state.scheduled_pods_count() < gang.min_count:
            # Activate the unscheduled members in case they were waiting for this pod.
            self.handle.activate(list(group_state.unscheduled_pods().values()))
            return Status.wait(WAITING_FOR_MIN_COUNT_SCHEDULED), PERMIT_TIMEOUT
        # The quorum is met: allow this pod and every other member waiting at Permit.
        for uid in sorted(group_state.assumed_pods()):
            waiting = self.handle.get_waiting_pod(uid)
            if waiting is not None:
                waiting.allow(NAME)
        return None, 0.0


def _state_not_found(namespace: str, name: str) -> Status:
    return Status.as_error(f"pod group state not found for pod group {namespace}/{name}")


def new(args: object, handle: Handle) -> GangScheduling:
    """Plugin factory (registry entry). GangScheduling takes no args."""
    return GangScheduling(handle)
