"""NodeResourcesBalancedAllocation: favours nodes whose resource utilizations (after placing
the pod) are close to each other (PreScore/Score, no NormalizeScore).

Mirrors noderesources/balanced_allocation.go with balancedResourceScorer. Unlike
NodeResourcesFit scoring it uses the node's Requested (not NonZeroRequested) and the pod's plain
PodRequests, without defaults. v1.30 never Skips and scores the balance with the pod; 1.36
(change BalancedAllocationDelta) Skips best-effort pods (every configured request 0) and scores
the *change* of balance: 50 + (50 + balance(with pod) - balance(without)) / 2.
"""

from __future__ import annotations

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
from kubesched.objects.resources import is_scalar_resource_name
from kubesched.plugins.noderesources.fit import dra_extended_resource_names
from kubesched.plugins.noderesources.resource_allocation import (
    PreScoreState,
    RowScores,
    RowSelection,
    balanced_score,
    balanced_score_arrays,
    node_vectors,
    pod_resource_request_list,
    row_vectors,
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
        # Scores per table row, per pod request vector (see RowScores).
        self._row_scores = RowScores()
        # 1.36: per set of resources taking part, every table row's 150 − balance without the pod.
        self._without = RowScores()

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
        resources = self.resources
        # The score depends on the pod's requests and the row's columns only: kept per row.
        if not self._delta:
            def score_rows(some: IntArray) -> IntArray:
                sel = RowSelection(table, some)
                return sel.result(balanced_score_arrays(table_vectors(table, sel, resources, pod_requests, True),
                                                        sel.size))

            def score_row(i: int) -> int:
                return balanced_score(*row_vectors(table, i, resources, pod_requests, True))

            return self._row_scores.scores(table, rows, pod_requests, score_rows, score_row)

        def delta_rows(some: IntArray) -> IntArray:
            # The balance without the pod is the node's own (the pod decides only which
            # scalar resources take part): kept per row until the table's change log names
            # the row (as 150 − balance). Then 50 + (50 + with − without) / 2: the dividend is
            # never negative (both balances are in [50, 100]), so a shift divides as Go does.
            sel = RowSelection(table, some)
            with_pod = sel.result(balanced_score_arrays(table_vectors(table, sel, resources, pod_requests, True),
                                                        sel.size))
            delta = with_pod + self._balance_without_pod(table, some, pod_requests)
            delta >>= 1
            return delta

        def delta_row(i: int) -> int:
            requested, allocatable = row_vectors(table, i, resources, pod_requests, True)
            without = [r - p if a else 0 for r, p, a in zip(requested, pod_requests, allocatable, strict=True)]
            return delta_score(balanced_score(requested, allocatable), balanced_score(without, allocatable))

        return self._row_scores.scores(table, rows, pod_requests, delta_rows, delta_row)

    def _balance_without_pod(self, table: NodeTable, rows: IntArray, pod_requests: tuple[int, ...]) -> IntArray:
        """150 − balance(without the pod) of ``rows``: the resources the pod's requests let
        take part (a scalar it does not request is left out), over the node's requested values
        alone — the second row of the with/without computation, kept per table row for each
        set of resources taking part (RowScores)."""
        resources = self.resources
        taking_part = tuple(1 if p != 0 or not is_scalar_resource_name(r.name) else 0
                            for r, p in zip(resources, pod_requests, strict=True))
        zeros = [0] * len(taking_part)

        def offset_rows(some: IntArray) -> IntArray:
            sel = RowSelection(table, some)
            return 3 * _HALF - sel.result(balanced_score_arrays(
                table_vectors(table, sel, resources, taking_part, True, zeros), sel.size))

        def offset_row(i: int) -> int:
            return 3 * _HALF - balanced_score(*row_vectors(table, i, resources, taking_part, True, zeros))

        return self._without.scores(table, rows, taking_part, offset_rows, offset_row)


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
