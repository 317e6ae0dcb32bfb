"""The legacy (v1.21/v1.22) resource score plugins that v1.30 folded into NodeResourcesFit's
scoring strategies: NodeResourcesLeastAllocated, NodeResourcesMostAllocated and
RequestedToCapacityRatio, each a separate Score-only plugin with the v1.21 formulas."""

from kubesched.plugins.noderesources_legacy.least_allocated import (
    LEAST_ALLOCATED_NAME,
    LeastAllocated,
    new_least_allocated,
)
from kubesched.plugins.noderesources_legacy.most_allocated import (
    MOST_ALLOCATED_NAME,
    MostAllocated,
    new_most_allocated,
)
from kubesched.plugins.noderesources_legacy.requested_to_capacity_ratio import (
    REQUESTED_TO_CAPACITY_RATIO_NAME,
    RequestedToCapacityRatio,
    new_requested_to_capacity_ratio,
)

__all__ = [
    "LEAST_ALLOCATED_NAME", "MOST_ALLOCATED_NAME", "REQUESTED_TO_CAPACITY_RATIO_NAME", "LeastAllocated",
    "MostAllocated", "RequestedToCapacityRatio", "new_least_allocated", "new_most_allocated",
    "new_requested_to_capacity_ratio",
]
