"""NodeUnschedulable: a cordoned node (spec.unschedulable) is infeasible unless the pod
tolerates the ``node.kubernetes.io/unschedulable:NoSchedule`` taint (Filter).

Mirrors framework/plugins/nodeunschedulable/node_unschedulable.go.
"""

from __future__ import annotations

import numpy as np

from kubesched.features import DEFAULT_FEATURES
from kubesched.framework import (
    GVK,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    NodeTable,
    QueueingHint,
    Status,
)
from kubesched.framework.interfaces import BoolArray, IntArray
from kubesched.framework.nodetable import read_rows
from kubesched.framework.signers import TOLERATIONS_SIGNER_NAME, SignFragment, tolerations_signer
from kubesched.objects import Node, Pod, Taint, tolerations_tolerate_taint
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
        features = handle.features if handle is not None else DEFAULT_FEATURES
        self._queueing_hints = features.enabled("SchedulerQueueingHints")

    def sign_pod(self, pod: Pod) -> list[SignFragment]:
        """SignPod: the tolerations (TolerationsSigner)."""
        return [SignFragment(TOLERATIONS_SIGNER_NAME, tolerations_signer(pod))]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """NodeUnschedulable.EventsToRegister: any Node Add/Update without queueing hints
        (v1.30); with them (1.36) Node Add | UpdateNodeTaint (a spec.unschedulable flip is
        one) and the pod's own UpdatePodToleration, both hinted."""
        if not self._queueing_hints:
            return [ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE))]
        return [
            ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                                 self.is_schedulable_after_node_change),
            ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.UPDATE_POD_TOLERATION),
                                 self.is_schedulable_after_pod_toleration_change),
        ]

    def is_schedulable_after_pod_toleration_change(self, pod: Pod, old: object | None,
                                                   new: object | None) -> QueueingHint:
        """isSchedulableAfterPodTolerationChange: Queue when the rejected pod itself now
        tolerates the unschedulable taint (a toleration can only be added, and the pod was
        rejected, so it did not tolerate it before); any other update: Skip."""
        if not isinstance(new, Pod) or (old is not None and not isinstance(old, Pod)):
            return QueueingHint.QUEUE
        if pod.uid == new.uid and tolerates_unschedulable(new):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterNodeChange: Queue for a schedulable node added, or a node going
        from unschedulable to schedulable."""
        if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
            return QueueingHint.QUEUE
        if (old is not None and old.unschedulable and not new.unschedulable) or (
                old is None and not new.unschedulable):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

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
        return np.logical_not(read_rows(table.unschedulable, rows))


def new(args: object, handle: Handle) -> NodeUnschedulable:
    """Plugin factory (registry entry). NodeUnschedulable takes no args."""
    return NodeUnschedulable(handle)
