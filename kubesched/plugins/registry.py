"""The in-tree plugin registry: plugin name -> factory ``new(args, handle)``
(framework/plugins/registry.go: NewInTreeRegistry).

Out-of-tree plugins are merged on top of this by the runtime; a duplicate name is an error.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from kubesched.features import DEFAULT_FEATURES, Features
from kubesched.plugins import (
    defaultbinder,
    defaultpreemption,
    dynamicresources,
    imagelocality,
    interpodaffinity,
    nodeaffinity,
    nodename,
    nodeports,
    noderesources,
    nodeunschedulable,
    nodevolumelimits,
    podtopologyspread,
    queuesort,
    schedulinggates,
    tainttoleration,
    volumebinding,
    volumerestrictions,
    volumezone,
)

Factory = Callable[[Any, Any], Any]


class _Deferred:
    """The factory ``module.attr``, its module imported when the factory is first called or
    inspected (``__wrapped__``: inspect.signature and the args decoding read the real one):
    for the plugins no default profile enables -- the legacy Policy's, and those of gates off
    by default -- whose modules a restarted ``kubesched run`` would otherwise import on the way
    to its first bind."""

    __slots__ = ("_attr", "_module")

    def __init__(self, module: str, attr: str = "new") -> None:
        self._module = module
        self._attr = attr

    @property
    def __wrapped__(self) -> Factory:
        factory: Factory = getattr(importlib.import_module(self._module), self._attr)
        return factory

    def __call__(self, args: Any, handle: Any) -> Any:
        return self.__wrapped__(args, handle)

    def __repr__(self) -> str:
        return f"<factory {self._module}.{self._attr}>"


_LEGACY = "kubesched.plugins.noderesources_legacy"

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
    "SelectorSpread": _Deferred("kubesched.plugins.selectorspread"),
    "ServiceAffinity": _Deferred("kubesched.plugins.serviceaffinity"),
    "NodeLabel": _Deferred("kubesched.plugins.nodelabel"),
    "NodePreferAvoidPods": _Deferred("kubesched.plugins.nodepreferavoidpods"),
    "NodeResourcesLeastAllocated": _Deferred(_LEGACY, "new_least_allocated"),
    "NodeResourcesMostAllocated": _Deferred(_LEGACY, "new_most_allocated"),
    "RequestedToCapacityRatio": _Deferred(_LEGACY, "new_requested_to_capacity_ratio"),
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
        reg["NodeDeclaredFeatures"] = _Deferred("kubesched.plugins.nodedeclaredfeatures")
    if features.enabled("GangScheduling"):
        reg["GangScheduling"] = _Deferred("kubesched.plugins.gangscheduling")
    return reg


# The in-tree registry of the default release (what plugin authors extend).
REGISTRY: dict[str, Factory] = registry_for(DEFAULT_FEATURES)
