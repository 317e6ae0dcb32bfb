"""NodeResourcesMostAllocated (v1.21 noderesources/most_allocated.go): favor nodes with
more requested resources — Σ w·requested·100 / allocatable / Σ w over the configured
resources (default cpu and memory, weight 1), an over-committed resource scoring 0 (v1.22
caps it at the allocatable instead). Legacy Policy's MostRequestedPriority."""

from __future__ import annotations

from kubesched.config.args import NodeResourcesMostAllocatedArgs
from kubesched.errors import ConfigError
from kubesched.framework import Handle
from kubesched.plugins.noderesources_legacy.resource_allocation import (
    MostAllocatedScorer,
    ResourceAllocationPlugin,
    resource_weights,
    validate_resources,
)

MOST_ALLOCATED_NAME = "NodeResourcesMostAllocated"


class MostAllocated(ResourceAllocationPlugin):
    name = MOST_ALLOCATED_NAME

    def __init__(self, handle: Handle | None, args: NodeResourcesMostAllocatedArgs | None = None) -> None:
        a = args if args is not None else NodeResourcesMostAllocatedArgs()
        validate_resources(a.resources)
        weights = resource_weights(a.resources)
        super().__init__(handle, weights, MostAllocatedScorer(weights))


def new_most_allocated(args: object, handle: Handle) -> MostAllocated:
    """Plugin factory (registry entry); ``args`` is a NodeResourcesMostAllocatedArgs or None."""
    if args is not None and not isinstance(args, NodeResourcesMostAllocatedArgs):
        raise ConfigError(f"want args to be of type NodeResourcesMostAllocatedArgs, got {type(args).__name__}")
    return MostAllocated(handle, args)
