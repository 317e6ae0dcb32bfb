"""SchedulingGates: a pod with spec.schedulingGates stays out of the active queue (PreEnqueue).

Mirrors framework/plugins/schedulinggates/scheduling_gates.go.
"""

from __future__ import annotations

from kubesched.features import DEFAULT_FEATURES
from kubesched.framework import GVK, ActionType, ClusterEvent, ClusterEventWithHint, Handle, QueueingHint, Status
from kubesched.objects import Pod

NAME = "SchedulingGates"


def go_string_slice(items: tuple[str, ...] | list[str]) -> str:
    """fmt's %v of a []string: ``[a b]``."""
    return "[" + " ".join(items) + "]"


class SchedulingGates:
    name = NAME

    def __init__(self, handle: Handle | None = None) -> None:
        self.handle = handle
        features = handle.features if handle is not None else DEFAULT_FEATURES
        self._queueing_hints = features.enabled("SchedulerQueueingHints")

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """SchedulingGates.EventsToRegister. With SchedulerQueueingHints off (v1.30 default)
        upstream returns nil: a gated pod is moved only by its own update (the queue's Update
        path), never by a cluster event. With them (1.36) the queue asks the hint of the
        pod's own UpdatePodSchedulingGatesEliminated."""
        if not self._queueing_hints:
            return []
        return [ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                                     self.is_schedulable_after_update_pod_scheduling_gates_eliminated)]

    def is_schedulable_after_update_pod_scheduling_gates_eliminated(
            self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterUpdatePodSchedulingGatesEliminated: only the gated pod's own
        update (its last gate removed) Queues it."""
        if not isinstance(new, Pod) or (old is not None and not isinstance(old, Pod)):
            return QueueingHint.QUEUE
        if new.uid != pod.uid:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def pre_enqueue(self, pod: Pod) -> Status | None:
        """SchedulingGates.PreEnqueue."""
        if not pod.scheduling_gates:
            return None
        return Status.unresolvable(f"waiting for scheduling gates: {go_string_slice(pod.scheduling_gates)}")


def new(args: object, handle: Handle) -> SchedulingGates:
    """Plugin factory (registry entry). SchedulingGates takes no args."""
    return SchedulingGates(handle)
