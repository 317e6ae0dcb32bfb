"""The in-tree plugin registry: plugin name -> factory ``new(args, handle)``
(framework/plugins/registry.go: NewInTreeRegistry).

Out-of-tree plugins are merged on top of this by the runtime; a duplicate name is an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.features import DEFAULT_FEATURES, Features
from kubesched.plugins import (
    defaultbinder,
    defaultpreemption,
    dynamicresources,
    gangscheduling,
    imagelocality,
    interpodaffinity,
    nodeaffinity,
    nodedeclaredfeatures,
    nodelabel,
    nodename,
    nodeports,
    nodepreferavoidpods,
    noderesources,
    noderesources_legacy,
    nodeunschedulable,
    nodevolumelimits,
    podtopologyspread,
    queuesort,
    schedulinggates,
    selectorspread,
    serviceaffinity,
    tainttoleration,
    volumebinding,
    volumerestrictions,
    volumezone,
)

Factory = Callable[[Any, Any], Any]

# v1.30's in-tree registry (plus the legacy Policy plugins); later releases derive from it.
REGISTRY_1_30: dict[str, Factory] = {
    "SchedulingGates": schedulinggates.new,
    "PrioritySort": queuesort.new,
    "NodeUnschedulable": nodeunschedulable.new,
    "NodeName": nodename.new,
    "TaintToleration": tainttoleration.new,
    "NodeAffinity": nodeaffinity.new,
    "NodePorts": nodeports.new,
    "NodeResourcesFit": noderesources.new_fit,
    "VolumeRestrictions": volumerestrictions.new,
    "EBSLimits": nodevolumelimits.new_ebs,
    "GCEPDLimits": nodevolumelimits.new_gce_pd,
    "NodeVolumeLimits": nodevolumelimits.new_csi,
    "AzureDiskLimits": nodevolumelimits.new_azure_disk,
    "CinderLimits": nodevolumelimits.new_cinder,
    "VolumeBinding": volumebinding.new,
    "VolumeZone": volumezone.new,
    "PodTopologySpread": podtopologyspread.new,
    "InterPodAffinity": interpodaffinity.new,
    "DefaultPreemption": defaultpreemption.new,
    "NodeResourcesBalancedAllocation": noderesources.new_balanced_allocation,
    "ImageLocality": imagelocality.new,
    "DefaultBinder": defaultbinder.new,
    # Legacy (v1.21/v1.22) plugins a `kind: Policy` translates into; not in v1.30's registry.
    "SelectorSpread": selectorspread.new,
    "ServiceAffinity": serviceaffinity.new,
    "NodeLabel": nodelabel.new,
    "NodePreferAvoidPods": nodepreferavoidpods.new,
    "NodeResourcesLeastAllocated": noderesources_legacy.new_least_allocated,
    "NodeResourcesMostAllocated": noderesources_legacy.new_most_allocated,
    "RequestedToCapacityRatio": noderesources_legacy.new_requested_to_capacity_ratio,
}

def registry_for(features: Features | None = None) -> dict[str, Factory]:
    """NewInTreeRegistry of ``features``' release: 1.30's registry, with DynamicResources where
    its gate is on (it implements resource.k8s.io/v1, so only from that API's release),
    NodeDeclaredFeatures and GangScheduling where their gates are on."""
    features = features if features is not None else DEFAULT_FEATURES
    # The in-tree volume limit plugins left the default profile in 1.31 and are refused by a
    # 1.31+ configuration's validation (validation.go invalidPluginsByVersion); their factories
    # stay, like the other legacy ones, for what a legacy Policy translates into.
    reg = dict(REGISTRY_1_30)
    if features.enabled("DynamicResourceAllocation") and features.enabled("DynamicResourcesScoring"):
        reg[dynamicresources.NAME] = dynamicresources.new
    if features.enabled("NodeDeclaredFeatures"):
        reg[nodedeclaredfeatures.NAME] = nodedeclaredfeatures.new
    if features.enabled("GangScheduling"):
        reg[gangscheduling.NAME] = gangscheduling.new
    return reg


# The in-tree registry of the default release (what plugin authors extend).
REGISTRY: dict[str, Factory] = registry_for(DEFAULT_FEATURES)
