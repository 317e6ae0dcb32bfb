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

from kubesched.features import DEFAULT_FEATURES
from kubesched.framework import (
    GVK,
    SKIP,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    PreFilterResult,
    QueueingHint,
    StateKey,
    Status,
)
from kubesched.framework.signers import FEATURES_SIGNER_NAME, SignFragment
from kubesched.objects import Node, Pod

NAME = "NodeDeclaredFeatures"
ERR_REASON = "node(s) didn't match Pod's required features"
RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
_STATE_KEY: StateKey[frozenset[str]] = StateKey("PreFilter" + NAME)


_NONE: frozenset[str] = frozenset()
# Pods of one template share their raw spec: what each spec needs, by the spec's identity (the
# spec kept with it, so the id is not reused while the entry lives).
_BY_SPEC: dict[int, tuple[object, frozenset[str]]] = {}
_BY_SPEC_LIMIT = 1024


def required_features(pod: Pod) -> frozenset[str]:
    """The node features ``pod`` needs (nodedeclaredfeatures.InferForScheduling)."""
    spec = pod.raw.get("spec")
    if not isinstance(spec, Mapping):
        return _NONE
    got = _BY_SPEC.get(id(spec))
    if got is not None and got[0] is spec:
        return got[1]
    needed = _required(spec)
    if len(_BY_SPEC) >= _BY_SPEC_LIMIT:
        _BY_SPEC.clear()
    _BY_SPEC[id(spec)] = (spec, needed)
    return needed


def _required(spec: Mapping[str, Any]) -> frozenset[str]:
    needed: set[str] = set()
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or ():
            if isinstance(c, Mapping) and _restarts_all(c.get("restartPolicyRules")):
                needed.add(RESTART_ALL_CONTAINERS)
    if spec.get("hostNetwork") is True and spec.get("hostUsers") is False:
        needed.add(USER_NAMESPACES_HOST_NETWORK)
    return frozenset(needed) if needed else _NONE


def _restarts_all(rules: Any) -> bool:
    return isinstance(rules, list) and any(isinstance(r, Mapping) and r.get("action") == "RestartAllContainers"
                                           for r in rules)


def declared_feature_list(node: Node) -> tuple[str, ...]:
    """The node's status.declaredFeatures, in order (absent or not a list: empty)."""
    status = node.raw.get("status")
    declared = status.get("declaredFeatures") if isinstance(status, Mapping) else None
    if not isinstance(declared, list):
        return ()
    return tuple(f for f in declared if isinstance(f, str))


def declared_features(node_info: NodeInfo) -> frozenset[str]:
    node = node_info.node
    if node is None:
        return frozenset()
    return frozenset(declared_feature_list(node))


class NodeDeclaredFeatures:
    name = NAME

    def __init__(self, handle: Handle | None = None) -> None:
        self.handle = handle
        features = handle.features if handle is not None else DEFAULT_FEATURES
        self._queueing_hints = features.enabled("SchedulerQueueingHints")
        self._enabled = features.enabled("NodeDeclaredFeatures")

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """SignPod: the features the pod needs (InferForPodScheduling's set, as a canonical
        string). With the gate off upstream's plugin has no framework nor version and its
        inference fails, so every pod is unsignable (an Error status)."""
        if not self._enabled:
            return Status.as_error("target version cannot be nil")
        return [SignFragment(FEATURES_SIGNER_NAME, ",".join(sorted(required_features(pod))))]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """NodeDeclaredFeatures.EventsToRegister: Node Add | UpdateNodeDeclaredFeature and
        the pod's own update when its needs change, both hinted; nothing when the plugin is
        disabled (its gate off). Without queueing hints the registration kubesched always
        had: any Node Add/Update and Pod/Update, unhinted."""
        if not self._queueing_hints:
            return [ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE)),
                    ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.UPDATE))]
        if not self._enabled:
            return []
        return [
            ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
                                 self.is_schedulable_after_node_change),
            ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.UPDATE), self.is_schedulable_after_pod_update),
        ]

    def is_schedulable_after_pod_update(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterPodUpdate: only the rejected pod's own update, and only when the
        features inferred from its spec changed."""
        if not isinstance(new, Pod) or (old is not None and not isinstance(old, Pod)):
            return QueueingHint.QUEUE
        if pod.uid != new.uid:
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE  # upstream reads the old spec: an update always has one
        if required_features(new) == required_features(old):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_node_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterNodeChange: an added node, or a change of the node's
        status.declaredFeatures (slices.Equal: order counts), Queues."""
        if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
            return QueueingHint.QUEUE
        if old is not None and declared_feature_list(old) == declared_feature_list(new):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status | None]:
        needed = required_features(pod)
        if not needed:
            return None, SKIP
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
