"""PrioritySort: the default QueueSort plugin — higher priority first, then the earlier
queue timestamp.

Mirrors framework/plugins/queuesort/priority_sort.go.
"""

from __future__ import annotations

from kubesched.framework import ClusterEventWithHint, Handle, QueuedPodInfo

NAME = "PrioritySort"


class PrioritySort:
    name = NAME

    def __init__(self, handle: Handle | None = None) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Upstream PrioritySort is no EnqueueExtensions; a QueueSort plugin never rejects a
        # pod, so no event can concern it.
        return []

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """PrioritySort.Less: corev1helpers.PodPriority (spec.priority, 0 when unset) higher
        first; equal priorities by the earlier queue timestamp."""
        p1 = a.pod.priority
        p2 = b.pod.priority
        return p1 > p2 or (p1 == p2 and a.timestamp < b.timestamp)


def new(args: object, handle: Handle) -> PrioritySort:
    """Plugin factory (registry entry). PrioritySort takes no args."""
    return PrioritySort(handle)
