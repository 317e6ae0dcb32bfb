"""SchedulingGates: a pod with spec.schedulingGates stays out of the active queue (PreEnqueue).

Mirrors framework/plugins/schedulinggates/scheduling_gates.go.
"""

from __future__ import annotations

from kubesched.framework import ClusterEventWithHint, Handle, Status
from kubesched.objects import Pod

NAME = "SchedulingGates"


def go_string_slice(items: tuple[str, ...] | list[str]) -> str:
    """fmt's %v of a []string: ``[a b]``."""
    return "[" + " ".join(items) + "]"


class SchedulingGates:
    name = NAME

    def __init__(self, handle: Handle | None = None) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # With SchedulerQueueingHints off (v1.30 default) upstream returns nil: a gated pod
        # is moved only by its own update (the queue's Update path), never by a cluster event.
        return []

    def pre_enqueue(self, pod: Pod) -> Status | None:
        """SchedulingGates.PreEnqueue."""
        if not pod.scheduling_gates:
            return None
        return Status.unresolvable(f"waiting for scheduling gates: {go_string_slice(pod.scheduling_gates)}")


def new(args: object, handle: Handle) -> SchedulingGates:
    """Plugin factory (registry entry). SchedulingGates takes no args."""
    return SchedulingGates(handle)
