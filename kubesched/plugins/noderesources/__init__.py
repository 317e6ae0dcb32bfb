"""NodeResourcesFit and NodeResourcesBalancedAllocation (framework/plugins/noderesources)."""

from kubesched.plugins.noderesources.balanced_allocation import NAME as BALANCED_NAME
from kubesched.plugins.noderesources.balanced_allocation import BalancedAllocation, new_balanced_allocation
from kubesched.plugins.noderesources.fit import NAME as FIT_NAME
from kubesched.plugins.noderesources.fit import Fit, InsufficientResource, PodResourceRequest, fits, new_fit

__all__ = [
    "BALANCED_NAME", "FIT_NAME", "BalancedAllocation", "Fit", "InsufficientResource", "PodResourceRequest", "fits",
    "new_balanced_allocation", "new_fit",
]
