"""NodeName: a pod that names a node (spec.nodeName) fits only that node (Filter).

Mirrors framework/plugins/nodename/node_name.go.
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
    Status,
)
from kubesched.framework.interfaces import BoolArray, IntArray
from kubesched.framework.signers import NODE_NAME_SIGNER_NAME, SignFragment
from kubesched.objects import Pod

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"


def fits(pod: Pod, node_info: NodeInfo) -> bool:
    """nodename.Fits: no nodeName, or the node's name."""
    return not pod.node_name or pod.node_name == node_info.name


class NodeName:
    name = NAME

    def __init__(self, handle: Handle | None = None) -> None:
        self.handle = handle
        features = handle.features if handle is not None else DEFAULT_FEATURES
        self._queueing_hints = features.enabled("SchedulerQueueingHints")

    def sign_pod(self, pod: Pod) -> list[SignFragment]:
        """SignPod: spec.nodeName."""
        return [SignFragment(NODE_NAME_SIGNER_NAME, pod.node_name)]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """NodeName.EventsToRegister: only a new node can be the named one. Without queueing
        hints (v1.30) any Node Add/Update; with them (1.36, no preCheck) Node/Add, unhinted
        (always Queue)."""
        if not self._queueing_hints:
            return [ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE))]
        return [ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD))]

    def preemption_fast_path(self, state: CycleState, pod: Pod) -> bool:
        """Filter reads only the node's name: node-only for preemption's fast path."""
        return True

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """NodeName.Filter."""
        assert node_info.node is not None
        if fits(pod, node_info):
            return None
        return Status.unresolvable(ERR_REASON)

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> BoolArray:
        wanted = pod.node_name
        if not wanted:
            return np.ones(len(rows), np.bool_)
        names = table.names
        return np.fromiter((names[r] == wanted for r in rows.tolist()), np.bool_, len(rows))


def new(args: object, handle: Handle) -> NodeName:
    """Plugin factory (registry entry). NodeName takes no args."""
    return NodeName(handle)
