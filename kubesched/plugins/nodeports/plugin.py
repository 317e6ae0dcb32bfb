"""NodePorts: the pod's host ports must be free on the node (PreFilter/Filter).

Mirrors framework/plugins/nodeports/node_ports.go.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kubesched.features import DEFAULT_FEATURES
from kubesched.framework import (
    GVK,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    HostPortInfo,
    NodeInfo,
    NodeTable,
    PreFilterExtensions,
    PreFilterResult,
    QueueingHint,
    StateKey,
    Status,
)
from kubesched.framework.interfaces import BoolArray, IntArray
from kubesched.framework.signers import HOST_PORTS_SIGNER_NAME, SignFragment, host_ports_signer
from kubesched.objects import Pod
from kubesched.plugins.helpers.rows import row_node_infos

NAME = "NodePorts"
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
PRE_FILTER_STATE_KEY_NAME = "PreFilter" + NAME

# (hostIP, protocol, hostPort) as written in the pod; HostPortInfo sanitizes "" / "".
HostPort = tuple[str, str, int]


@dataclass(frozen=True, slots=True)
class PreFilterState:
    """The pod's wanted host ports. Not affected by adding/removing other pods, so clone
    returns the same (immutable) value, as upstream."""

    ports: tuple[HostPort, ...]

    def clone(self) -> PreFilterState:
        return self


_PRE_FILTER_KEY: StateKey[PreFilterState] = StateKey(PRE_FILTER_STATE_KEY_NAME)


def get_container_ports(pod: Pod) -> tuple[HostPort, ...]:
    """getContainerPorts / 1.36 util.GetHostPorts: ports with hostPort > 0 of the regular
    containers and, from 1.36, of the restartable init containers (``pod.port_containers``; v1.30
    considered no init container, sidecars included)."""
    return tuple((p.host_ip, p.protocol, p.host_port) for c in pod.port_containers for p in c.ports if p.host_port > 0)


def fits_ports(wanted: tuple[HostPort, ...], node_info: NodeInfo) -> bool:
    """fitsPorts: no wanted port conflicts with the node's used ports."""
    used = node_info.used_ports
    for ip, protocol, port in wanted:
        if used.check_conflict(ip, protocol, port):
            return False
    return True


def fits(pod: Pod, node_info: NodeInfo) -> bool:
    """nodeports.Fits (used by the queue's pre-check)."""
    return fits_ports(get_container_ports(pod), node_info)


class NodePorts:
    name = NAME

    def __init__(self, handle: Handle | None = None) -> None:
        self.handle = handle
        features = handle.features if handle is not None else DEFAULT_FEATURES
        self._queueing_hints = features.enabled("SchedulerQueueingHints")

    def sign_pod(self, pod: Pod) -> list[SignFragment]:
        """SignPod: the host ports (HostPortsSigner)."""
        return [SignFragment(HOST_PORTS_SIGNER_NAME, host_ports_signer(pod))]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """NodePorts.EventsToRegister: a deleted pod may free the ports (ports are immutable,
        so pod updates never do); a new node is always worth a try. Without queueing hints
        (v1.30) any Node Add/Update; with them (1.36, no preCheck) Node/Add only, unhinted
        (always Queue), and Pod/Delete hinted."""
        if not self._queueing_hints:
            return [
                ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.DELETE)),
                ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE)),
            ]
        return [
            ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.DELETE), self.is_schedulable_after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD)),
        ]

    def is_schedulable_after_pod_deleted(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterPodDeleted: only a bound (or nominated) pod holding a host port
        that conflicts with one the pod wants can make room."""
        if not isinstance(old, Pod):
            return QueueingHint.QUEUE
        if not old.node_name and not old.nominated_node_name:
            return QueueingHint.QUEUE_SKIP
        ports = get_container_ports(old)
        if not ports:
            return QueueingHint.QUEUE_SKIP
        in_use = HostPortInfo()
        for ip, protocol, port in ports:
            in_use.add(ip, protocol, port)
        if not any(in_use.check_conflict(ip, protocol, port) for ip, protocol, port in get_container_ports(pod)):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    # ---- PreFilter
    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status | None]:
        """NodePorts.PreFilter: Skip when the pod wants no host port."""
        ports = get_container_ports(pod)
        if not ports:
            return None, Status.skip()
        state.write(_PRE_FILTER_KEY, PreFilterState(ports))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        # The state does not depend on other pods.
        return None

    # ---- Filter
    def preemption_fast_path(self, state: CycleState, pod: Pod) -> bool:
        """Node-only for preemption's fast path when the pod wants no host port (Filter then
        never looks at the node's used ports; PreFilter normally Skips such a pod) or has no
        PreFilter state (Filter fails with the same Error on every node)."""
        s = state.get(_PRE_FILTER_KEY)
        return s is None or not s.ports

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """NodePorts.Filter."""
        s = state.get(_PRE_FILTER_KEY)
        if s is None:
            # getPreFilterState: framework.ErrNotFound wrapped, returned via AsStatus.
            return Status.as_error(f'reading "{PRE_FILTER_STATE_KEY_NAME}" from cycleState: not found')
        if fits_ports(s.ports, node_info):
            return None
        return Status.unschedulable(ERR_REASON)

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> BoolArray:
        s = state.get(_PRE_FILTER_KEY)
        if s is None:
            return np.zeros(len(rows), np.bool_)
        assert self.handle is not None
        infos = row_node_infos(table, self.handle.snapshot.list())
        wanted = s.ports
        # Only pods with host ports get here (PreFilter Skips the others), which is rare
        # enough for a per-row loop over the NodeInfos' HostPortInfo.
        return np.fromiter(
            ((ni := infos[r]) is not None and fits_ports(wanted, ni) for r in rows.tolist()),
            np.bool_, len(rows),
        )


def new(args: object, handle: Handle) -> NodePorts:
    """Plugin factory (registry entry). NodePorts takes no args."""
    return NodePorts(handle)
