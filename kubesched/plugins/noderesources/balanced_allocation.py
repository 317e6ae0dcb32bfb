"""NodeResourcesBalancedAllocation: favours nodes whose resource utilizations (after placing
the pod) are close to each other (PreScore/Score, no NormalizeScore).

Mirrors noderesources/balanced_allocation.go (v1.30: never Skips; the best-effort-pod Skip
came later) with balancedResourceScorer. Unlike NodeResourcesFit scoring it uses the node's
Requested (not NonZeroRequested) and the pod's plain PodRequests, without defaults.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubesched.config.args import NodeResourcesBalancedAllocationArgs, ResourceSpec
from kubesched.errors import ConfigError, PluginError
from kubesched.framework import CycleState, Handle, NodeInfo, NodeTable, StateKey, Status
from kubesched.framework.interfaces import IntArray
from kubesched.objects import Pod
from kubesched.plugins.noderesources.resource_allocation import (
    PreScoreState,
    RowSelection,
    balanced_score,
    balanced_score_arrays,
    node_vectors,
    pod_resource_request_list,
    table_vectors,
)

NAME = "NodeResourcesBalancedAllocation"
_PRE_SCORE_KEY: StateKey[PreScoreState] = StateKey("PreScore" + NAME)


def _validate(args: NodeResourcesBalancedAllocationArgs) -> None:
    """validation.ValidateNodeResourcesBalancedAllocationArgs: weights in (0, 100]."""
    for i, r in enumerate(args.resources):
        if r.weight <= 0 or r.weight > 100:
            raise ConfigError(f"Invalid value: {r.weight}: resource weight of {r.name} not in valid range (0, 100]",
                              field=f"resources[{i}].weight")


class BalancedAllocation:
    name = NAME

    def __init__(self, args: NodeResourcesBalancedAllocationArgs | None = None, handle: Handle | None = None) -> None:
        args = args or NodeResourcesBalancedAllocationArgs()
        _validate(args)
        self.handle = handle
        self.args = args
        # Weights are validated but unused by the std formula, exactly as upstream.
        self.resources: tuple[ResourceSpec, ...] = tuple(args.resources)

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(_PRE_SCORE_KEY, PreScoreState(pod_resource_request_list(pod, self.resources, True)))
        return None

    def _pod_requests(self, state: CycleState, pod: Pod) -> tuple[int, ...]:
        s = state.get(_PRE_SCORE_KEY)
        if s is None:  # Score without PreScore computes the request itself
            return pod_resource_request_list(pod, self.resources, True)
        return s.pod_requests

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        if not self.resources:
            raise PluginError("resources not found")
        requested, allocatable = node_vectors(node_info, self.resources, self._pod_requests(state, pod), True)
        return balanced_score(requested, allocatable)

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> IntArray:
        if not self.resources:
            raise PluginError("resources not found")
        sel = RowSelection(table, rows)
        vectors = table_vectors(table, sel, self.resources, self._pod_requests(state, pod), True)
        return sel.result(balanced_score_arrays(vectors, sel.size))


def new_balanced_allocation(args: object, handle: Handle) -> BalancedAllocation:
    """Plugin factory (registry entry)."""
    if args is not None and not isinstance(args, NodeResourcesBalancedAllocationArgs):
        raise ConfigError(f"want args to be of type NodeResourcesBalancedAllocationArgs, got {type(args).__name__}")
    return BalancedAllocation(args, handle)


new = new_balanced_allocation
