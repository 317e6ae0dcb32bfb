"""The scheduling framework API for plugin authors (k8s.io/kubernetes/pkg/scheduler/framework).

Write a plugin as a plain class with a ``name`` and any extension-point methods; see
:mod:`kubesched.framework.interfaces` for the contracts.
"""

from kubesched.framework.cycle_state import PODS_TO_ACTIVATE_KEY, CycleState, PodsToActivate, StateData, StateKey
from kubesched.framework.handle import (
    Binding,
    Extender,
    ExtenderVictims,
    Handle,
    NodeInfoGetter,
    NodeInfoLister,
    ObjectLister,
    PodGroupState,
    PodGroupStateLister,
    PodNominator,
)
from kubesched.framework.interfaces import (
    EXTENSION_POINTS,
    BatchFilterPlugin,
    BatchNormalizePlugin,
    BatchScorePlugin,
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScoreExtensions,
    ScorePlugin,
    SignPlugin,
    implements,
)
from kubesched.framework.nodetable import NodeTable
from kubesched.framework.signers import SignFragment
from kubesched.framework.status import SKIP, SUCCESS, Code, Status, is_success
from kubesched.framework.types import (
    GVK,
    MAX_NODE_SCORE,
    MAX_TOTAL_SCORE,
    MIN_NODE_SCORE,
    NOMINATING_NOOP,
    NOMINATING_OVERRIDE,
    ActionType,
    AffinityTerm,
    ClusterEvent,
    ClusterEventWithHint,
    HostPortInfo,
    ImageStateSummary,
    NodeInfo,
    NodeScore,
    NominatingInfo,
    PodInfo,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
    QueueingHint,
    QueueingHintFn,
    Resource,
    WeightedAffinityTerm,
)

__all__ = [
    "EXTENSION_POINTS", "GVK", "MAX_NODE_SCORE", "MAX_TOTAL_SCORE", "MIN_NODE_SCORE", "NOMINATING_NOOP",
    "NOMINATING_OVERRIDE", "PODS_TO_ACTIVATE_KEY", "SKIP", "SUCCESS", "ActionType", "AffinityTerm", "BatchFilterPlugin",
    "BatchNormalizePlugin", "BatchScorePlugin", "BindPlugin", "Binding", "ClusterEvent", "ClusterEventWithHint", "Code",
    "CycleState", "EnqueueExtensions", "Extender", "ExtenderVictims", "FilterPlugin", "Handle", "HostPortInfo", "ImageStateSummary",
    "NodeInfo", "NodeInfoGetter", "NodeInfoLister", "NodeScore", "NodeTable", "NominatingInfo", "ObjectLister", "PermitPlugin",
    "Plugin", "PodGroupState", "PodGroupStateLister", "PodInfo", "PodNominator", "PodsToActivate", "PostBindPlugin", "PostFilterPlugin", "PostFilterResult",
    "PreBindPlugin", "PreEnqueuePlugin", "PreFilterExtensions", "PreFilterPlugin", "PreFilterResult",
    "PreScorePlugin", "QueueSortPlugin", "QueuedPodInfo", "QueueingHint", "QueueingHintFn", "ReservePlugin", "Resource", "ScoreExtensions",
    "ScorePlugin", "SignFragment", "SignPlugin", "StateData", "StateKey", "Status", "WeightedAffinityTerm", "implements", "is_success",
]
