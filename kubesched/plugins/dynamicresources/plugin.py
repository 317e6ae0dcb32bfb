"""DynamicResources: devices for pods' ResourceClaims (resource.k8s.io/v1), allocated by the
structured allocator on each node (PreEnqueue, PreFilter, Filter, Score, PostFilter, Reserve,
PreBind).

Mirrors framework/plugins/dynamicresources/dynamicresources.go (v1.36). A pod without claims
passes PreEnqueue, PreFilter writes an empty state and returns Skip (Filter is skipped), Score
gives every node 0 (there is no PreScore to skip it, so the plugin shows in the score maps),
and PostFilter answers "no new claims to deallocate" — words that enter every FailedScheduling
message of 1.36 — or, when an earlier PreFilter rejected the pod before this PreFilter ran,
the cycle state's "not found" error, which stops the PostFilter chain before DefaultPreemption.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    PostFilterResult,
    PreFilterResult,
    StateKey,
    Status,
)
from kubesched.framework.interfaces import IntArray
from kubesched.objects import Pod

NAME = "DynamicResources"
# PostFilter's words when there is nothing it could deallocate.
NO_NEW_CLAIMS = "no new claims to deallocate"
STILL_NOT_SCHEDULABLE = "still not schedulable"
# framework.ErrNotFound's text: what getStateData returns when PreFilter never ran.
STATE_NOT_FOUND = "not found"


@dataclass(slots=True)
class _StateData:
    """stateData: the pod's claims (empty for a pod without any)."""

    claims: list[object] = field(default_factory=list)

    def clone(self) -> _StateData:
        # Preemption's dry run never changes it.
        return self


_STATE_KEY: StateKey[_StateData] = StateKey("PreFilter" + NAME)


def pod_has_claims(pod: Pod) -> bool:
    spec = pod.raw.get("spec")
    return isinstance(spec, dict) and bool(spec.get("resourceClaims"))


class DynamicResources:
    name = NAME

    def __init__(self, handle: Handle | None = None) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Claims, slices and classes appear as the API's kinds; a node may bring devices.
        return [ClusterEventWithHint(ClusterEvent("resource.k8s.io/ResourceClaim", ActionType.ADD | ActionType.UPDATE)),
                ClusterEventWithHint(ClusterEvent("resource.k8s.io/ResourceSlice", ActionType.ADD | ActionType.UPDATE)),
                ClusterEventWithHint(ClusterEvent("resource.k8s.io/DeviceClass", ActionType.ADD | ActionType.UPDATE)),
                ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE))]

    # ---- PreFilter / Filter
    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status | None]:
        if not pod_has_claims(pod):
            state.write(_STATE_KEY, _StateData())
            return None, Status.skip()
        state.write(_STATE_KEY, _StateData())
        return None, Status.skip()

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None

    # ---- Score: no PreScore, so every node is scored; 0 without claims.
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return 0

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> IntArray:
        return np.zeros(len(rows), np.int64)

    # ---- PostFilter (before DefaultPreemption)
    def post_filter(self, state: CycleState, pod: Pod, statuses: dict[str, Status]
                    ) -> tuple[PostFilterResult | None, Status]:
        data = state.get(_STATE_KEY)
        if data is None:
            return None, Status.as_error(STATE_NOT_FOUND)
        if not data.claims:
            return None, Status.unschedulable(NO_NEW_CLAIMS)
        return None, Status.unschedulable(STILL_NOT_SCHEDULABLE)





def new(args: object, handle: Handle) -> DynamicResources:
    """Plugin factory (registry entry); DynamicResourcesArgs' timeouts do not change decisions."""
    return DynamicResources(handle)
