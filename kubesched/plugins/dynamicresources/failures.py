"""How the structured allocator (kubesched.plugins.dynamicresources.allocator) says an
allocation failed, apart from the allocator itself: the plugin and its verdicts catch these on
every pod with claims, while the allocator's module (and the CEL interpreter it brings) is
imported only once a pod has a claim to allocate -- a cluster without DRA never needs it, and
a restarted ``kubesched run`` binds sooner."""

from __future__ import annotations

# ErrFailedAllocationOnNode's cause when a pool was invalid.
INVALID_POOLS = "invalid resource pools were encountered"


class AllocationError(Exception):
    """What upstream returns as an error (the claim or class is broken): the pod's cycle errs."""


class NodeAllocationError(Exception):
    """ErrFailedAllocationOnNode: allocation failed on this node for a reason worth reporting
    (invalid pools); the node is unschedulable with this message."""


__all__ = ["INVALID_POOLS", "AllocationError", "NodeAllocationError"]
