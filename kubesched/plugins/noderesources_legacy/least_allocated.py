"""NodeResourcesLeastAllocated (v1.21 noderesources/least_allocated.go): favor nodes with
fewer requested resources — Σ w·(allocatable − requested)·100 / allocatable / Σ w over the
configured resources (default cpu and memory, weight 1). Legacy Policy's
LeastRequestedPriority."""

from __future__ import annotations

from kubesched.config.args import NodeResourcesLeastAllocatedArgs
from kubesched.errors import ConfigError
from kubesched.framework import Handle
from kubesched.plugins.noderesources_legacy.resource_allocation import (
    LeastAllocatedScorer,
    ResourceAllocationPlugin,
    resource_weights,
    validate_resources,
)

LEAST_ALLOCATED_NAME = "NodeResourcesLeastAllocated"


class LeastAllocated(ResourceAllocationPlugin):
    name = LEAST_ALLOCATED_NAME

    def __init__(self, handle: Handle | None, args: NodeResourcesLeastAllocatedArgs | None = None) -> None:
        a = args if args is not None else NodeResourcesLeastAllocatedArgs()
        validate_resources(a.resources)
        weights = resource_weights(a.resources)
        super().__init__(handle, weights, LeastAllocatedScorer(weights))


def new_least_allocated(args: object, handle: Handle) -> LeastAllocated:
    """Plugin factory (registry entry); ``args`` is a NodeResourcesLeastAllocatedArgs or None."""
    if args is not None and not isinstance(args, NodeResourcesLeastAllocatedArgs):
        raise ConfigError(f"want args to be of type NodeResourcesLeastAllocatedArgs, got {type(args).__name__}")
    return LeastAllocated(handle, args)
