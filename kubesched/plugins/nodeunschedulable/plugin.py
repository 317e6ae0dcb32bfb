"""NodeUnschedulable: a cordoned node (spec.unschedulable) is infeasible unless the pod
tolerates the ``node.kubernetes.io/unschedulable:NoSchedule`` taint (Filter).

Mirrors framework/plugins/nodeunschedulable/node_unschedulable.go.
"""

from __future__ import annotations

import numpy as np

from kubesched.framework import (
    GVK,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    NodeTable,
    Status,
)
from kubesched.framework.interfaces import BoolArray, IntArray
from kubesched.objects import Pod, Taint, tolerations_tolerate_taint
from kubesched.objects.model import NO_SCHEDULE

NAME = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
# Declared upstream but unused by Filter in v1.30.
ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
_UNSCHEDULABLE_TAINT = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect=NO_SCHEDULE)


def tolerates_unschedulable(pod: Pod) -> bool:
    """A pod tolerating the unschedulable taint also tolerates spec.unschedulable."""
    return tolerations_tolerate_taint(pod.tolerations, _UNSCHEDULABLE_TAINT)


class NodeUnschedulable:
    name = NAME

    def __init__(self, handle: Handle | None = None) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE))]

    def preemption_fast_path(self, state: CycleState, pod: Pod) -> bool:
        """Filter reads only the Node (spec.unschedulable): node-only for preemption's fast path."""
        return True

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """NodeUnschedulable.Filter."""
        node = node_info.node
        assert node is not None
        if not node.unschedulable:
            return None
        if tolerates_unschedulable(pod):
            return None
        return Status.unresolvable(ERR_REASON_UNSCHEDULABLE)

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> BoolArray:
        if tolerates_unschedulable(pod):
            return np.ones(len(rows), np.bool_)
        return np.logical_not(table.unschedulable[rows])


def new(args: object, handle: Handle) -> NodeUnschedulable:
    """Plugin factory (registry entry). NodeUnschedulable takes no args."""
    return NodeUnschedulable(handle)
