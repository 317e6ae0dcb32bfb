"""RequestedToCapacityRatio (v1.21 noderesources/requested_to_capacity_ratio.go): score
each configured resource with a user-defined broken-linear function of its utilization
(shape scores 0..10 scaled to 0..100) and take the weighted mean of the resources scoring
above 0, rounded half away from zero. Legacy Policy's ``requestedToCapacityRatioArguments``
priority."""

from __future__ import annotations

from kubesched.config.args import RequestedToCapacityRatioArgs, ResourceSpec
from kubesched.errors import ConfigError
from kubesched.framework import Handle
from kubesched.plugins.noderesources_legacy.resource_allocation import (
    RequestedToCapacityRatioScorer,
    ResourceAllocationPlugin,
    resource_weights,
    validate_requested_to_capacity_ratio,
)

REQUESTED_TO_CAPACITY_RATIO_NAME = "RequestedToCapacityRatio"


class RequestedToCapacityRatio(ResourceAllocationPlugin):
    name = REQUESTED_TO_CAPACITY_RATIO_NAME

    def __init__(self, handle: Handle | None, args: RequestedToCapacityRatioArgs | None = None) -> None:
        # Upstream requires args (the shape has no default): None fails validation.
        a = args if args is not None else RequestedToCapacityRatioArgs()
        validate_requested_to_capacity_ratio(a.shape, a.resources)
        # NewRequestedToCapacityRatio: a weight of 0 means the default weight 1 (unreachable
        # after validation, kept as upstream has it).
        resources = tuple(ResourceSpec(r.name, r.weight or 1) for r in a.resources)
        weights = resource_weights(resources)
        super().__init__(handle, weights, RequestedToCapacityRatioScorer(weights, a.shape))


def new_requested_to_capacity_ratio(args: object, handle: Handle) -> RequestedToCapacityRatio:
    """Plugin factory (registry entry); ``args`` is a RequestedToCapacityRatioArgs."""
    if args is not None and not isinstance(args, RequestedToCapacityRatioArgs):
        raise ConfigError(f"want args to be of type RequestedToCapacityRatioArgs, got {type(args).__name__}")
    return RequestedToCapacityRatio(handle, args)
