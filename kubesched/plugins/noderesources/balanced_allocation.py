"""NodeResourcesBalancedAllocation: favours nodes whose resource utilizations (after placing
the pod) are close to each other (PreScore/Score, no NormalizeScore).

Mirrors noderesources/balanced_allocation.go with balancedResourceScorer. Unlike
NodeResourcesFit scoring it uses the node's Requested (not NonZeroRequested) and the pod's plain
PodRequests, without defaults. v1.30 never Skips and scores the balance with the pod; 1.36
(change BalancedAllocationDelta) Skips best-effort pods (every configured request 0) and scores
the *change* of balance: 50 + (50 + balance(with pod) - balance(without)) / 2.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, overload

import numpy as np

from kubesched.config.args import NodeResourcesBalancedAllocationArgs, ResourceSpec
from kubesched.errors import ConfigError, PluginError
from kubesched.features import DEFAULT_FEATURES
from kubesched.framework import MAX_NODE_SCORE, CycleState, Handle, NodeInfo, NodeTable, StateKey, Status
from kubesched.framework.interfaces import IntArray
from kubesched.framework.signers import SignFragment
from kubesched.objects import Pod
from kubesched.plugins.noderesources.fit import dra_extended_resource_names
from kubesched.plugins.noderesources.resource_allocation import (
    PreScoreState,
    RowSelection,
    balanced_score,
    balanced_score_arrays,
    node_vectors,
    pod_resource_request_list,
    sign_resources,
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
        features = handle.features if handle is not None else DEFAULT_FEATURES
        self._delta = features.enabled("BalancedAllocationDelta")
        self._dra_extended_resource = features.enabled("DRAExtendedResource")

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """SignPod: as NodeResourcesFit's (the same fragment, the same refusal)."""
        return sign_resources(pod, self._dra_names)

    def _dra_names(self) -> frozenset[str] | None:
        """The DeviceClass-backed extended resource names, only with DRAExtendedResource."""
        if not self._dra_extended_resource or self.handle is None:
            return None
        return dra_extended_resource_names(self.handle)

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        requests = pod_resource_request_list(pod, self.resources, True)
        if self._delta and not any(requests):
            # isBestEffortPod: scoring them would pile best-effort pods onto one node.
            return Status.skip()
        state.write(_PRE_SCORE_KEY, PreScoreState(requests))
        return None

    def _pod_requests(self, state: CycleState, pod: Pod) -> tuple[int, ...]:
        s = state.get(_PRE_SCORE_KEY)
        if s is None:  # Score without PreScore computes the request itself
            return pod_resource_request_list(pod, self.resources, True)
        return s.pod_requests

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        if not self.resources:
            raise PluginError("resources not found")
        pod_requests = self._pod_requests(state, pod)
        if self._delta and not any(pod_requests):
            return 0
        requested, allocatable = node_vectors(node_info, self.resources, pod_requests, True)
        with_pod = balanced_score(requested, allocatable)
        if not self._delta:
            return with_pod
        allocated = [r - p if a else 0 for r, p, a in zip(requested, pod_requests, allocatable, strict=True)]
        return delta_score(with_pod, balanced_score(allocated, allocatable))

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> IntArray:
        if not self.resources:
            raise PluginError("resources not found")
        pod_requests = self._pod_requests(state, pod)
        if self._delta and not any(pod_requests):
            return np.zeros(len(rows), np.int64)
        sel = RowSelection(table, rows)
        if not self._delta:
            return sel.result(balanced_score_arrays(table_vectors(table, sel, self.resources, pod_requests, True),
                                                    sel.size))
        # With and without the pod as two rows of one computation (per element the same
        # float64 operations as two calls), then 50 + (50 + with − without) / 2: the dividend
        # is never negative (both balances are in [50, 100]), so a shift divides as Go does.
        added = [_with_and_without(p) for p in pod_requests]
        both = balanced_score_arrays(table_vectors(table, sel, self.resources, pod_requests, True, added), sel.size)
        delta = both[0] - both[1]
        delta += 3 * _HALF
        delta >>= 1
        return sel.result(delta)


@functools.lru_cache(maxsize=4096)
def _with_and_without(request: int) -> IntArray:
    """[[request], [0]]: added to a requested column, the rows with and without the pod."""
    out = np.array([[request], [0]], np.int64)
    out.flags.writeable = False
    return out


_HALF = MAX_NODE_SCORE // 2


@overload
def delta_score(with_pod: int, without: int) -> int: ...
@overload
def delta_score(with_pod: IntArray, without: IntArray) -> IntArray: ...
def delta_score(with_pod: Any, without: Any) -> Any:
    """1.36 balancedResourceScorer: MaxNodeScore/2 + (MaxNodeScore/2 + with - without) / 2, in
    [50, 100] (Go's integer division; the dividend is never negative)."""
    if isinstance(with_pod, int):
        return _HALF + (_HALF + with_pod - without) // 2
    out = with_pod - without  # a fresh array: the rest in place
    out += _HALF
    out //= 2
    out += _HALF
    return out


def new_balanced_allocation(args: object, handle: Handle) -> BalancedAllocation:
    """Plugin factory (registry entry)."""
    if args is not None and not isinstance(args, NodeResourcesBalancedAllocationArgs):
        raise ConfigError(f"want args to be of type NodeResourcesBalancedAllocationArgs, got {type(args).__name__}")
    return BalancedAllocation(args, handle)


new = new_balanced_allocation
