"""NodeDeclaredFeatures: a pod that needs a node feature (inferred from its spec) only fits
nodes whose ``status.declaredFeatures`` lists it (PreFilter infers, Filter checks).

Mirrors framework/plugins/nodedeclaredfeatures/nodedeclaredfeatures.go (v1.36) and the
inference of k8s.io/component-helpers/nodedeclaredfeatures: in 1.36 two features matter to
scheduling — ``RestartAllContainersOnContainerExits`` (a container or init container with a
``restartPolicyRules`` action ``RestartAllContainers``) and ``UserNamespacesHostNetworkSupport``
(``hostNetwork: true`` with ``hostUsers: false``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.framework import (
    GVK,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    PreFilterResult,
    StateKey,
    Status,
)
from kubesched.objects import Pod

NAME = "NodeDeclaredFeatures"
ERR_REASON = "node(s) didn't match Pod's required features"
RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
_STATE_KEY: StateKey[frozenset[str]] = StateKey("PreFilter" + NAME)


def required_features(pod: Pod) -> frozenset[str]:
    """The node features ``pod`` needs (nodedeclaredfeatures.InferForScheduling)."""
    spec = pod.raw.get("spec")
    if not isinstance(spec, Mapping):
        return frozenset()
    needed: set[str] = set()
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or ():
            if isinstance(c, Mapping) and _restarts_all(c.get("restartPolicyRules")):
                needed.add(RESTART_ALL_CONTAINERS)
    if spec.get("hostNetwork") is True and spec.get("hostUsers") is False:
        needed.add(USER_NAMESPACES_HOST_NETWORK)
    return frozenset(needed)


def _restarts_all(rules: Any) -> bool:
    return isinstance(rules, list) and any(isinstance(r, Mapping) and r.get("action") == "RestartAllContainers"
                                           for r in rules)


def declared_features(node_info: NodeInfo) -> frozenset[str]:
    node = node_info.node
    if node is None:
        return frozenset()
    status = node.raw.get("status")
    declared = status.get("declaredFeatures") if isinstance(status, Mapping) else None
    if not isinstance(declared, list):
        return frozenset()
    return frozenset(f for f in declared if isinstance(f, str))


class NodeDeclaredFeatures:
    name = NAME

    def __init__(self, handle: Handle | None = None) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Node Add / UpdateNodeDeclaredFeature; the pod's own update when its needs change.
        return [ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE)),
                ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.UPDATE))]

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status | None]:
        needed = required_features(pod)
        if not needed:
            return None, Status.skip()
        state.write(_STATE_KEY, needed)
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        needed = state.read(_STATE_KEY)
        if needed <= declared_features(node_info):
            return None
        return Status.unresolvable(ERR_REASON)


def new(args: object, handle: Handle) -> NodeDeclaredFeatures:
    """Plugin factory (registry entry). NodeDeclaredFeatures takes no args."""
    return NodeDeclaredFeatures(handle)
