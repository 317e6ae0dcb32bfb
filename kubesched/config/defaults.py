"""Defaults by release: the default plugin set, default plugin args and the plugin-set merge.

Mirrors pkg/scheduler/apis/config/v1/default_plugins.go (getDefaultPlugins, mergePlugins,
mergePluginSet) and defaults.go (SetDefaults_KubeSchedulerConfiguration,
setDefaults_KubeSchedulerProfile, SetDefaults_*Args).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubesched.config.args import (
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    VolumeBindingArgs,
)
from kubesched.config.types import (
    DEFAULT_SCHEDULER_NAME,
    EXTENSION_POINTS,
    KubeSchedulerConfiguration,
    PluginRef,
    Plugins,
    PluginSet,
    Profile,
)
from kubesched.features import DEFAULT_FEATURES, Features

# getDefaultPlugins: the MultiPoint list, in this order, with these weights (facts 1.1).
# Weight 0 = not set (the framework scores such a plugin with weight 1).
DEFAULT_MULTI_POINT: tuple[PluginRef, ...] = (
    PluginRef("SchedulingGates"),
    PluginRef("PrioritySort"),
    PluginRef("NodeUnschedulable"),
    PluginRef("NodeName"),
    PluginRef("TaintToleration", 3),
    PluginRef("NodeAffinity", 2),
    PluginRef("NodePorts"),
    PluginRef("NodeResourcesFit", 1),
    PluginRef("VolumeRestrictions"),
    PluginRef("EBSLimits"),
    PluginRef("GCEPDLimits"),
    PluginRef("NodeVolumeLimits"),
    PluginRef("AzureDiskLimits"),
    PluginRef("VolumeBinding"),
    PluginRef("VolumeZone"),
    PluginRef("PodTopologySpread", 2),
    PluginRef("InterPodAffinity", 2),
    PluginRef("DefaultPreemption"),
    PluginRef("NodeResourcesBalancedAllocation", 1),
    PluginRef("ImageLocality", 1),
    PluginRef("DefaultBinder"),
)

DYNAMIC_RESOURCES = "DynamicResources"
NODE_DECLARED_FEATURES = "NodeDeclaredFeatures"
GANG_SCHEDULING = "GangScheduling"
# The in-tree volume limit plugins removed from the default profile (and the registry) in 1.31.
IN_TREE_VOLUME_LIMITS = ("EBSLimits", "GCEPDLimits", "AzureDiskLimits")


def default_plugins(features: Features | None = None, *, dynamic_resource_allocation: bool | None = None) -> Plugins:
    """getDefaultPlugins + applyFeatureGates of ``features``' release (default: the newest).

    1.30's list is DEFAULT_MULTI_POINT. Later releases drop the in-tree volume limit plugins
    (1.31) and, with their gates, put DynamicResources (weight 2 from 1.34's GA) right before
    DefaultPreemption, so that an idle claim is deallocated before any pod is evicted, append
    NodeDeclaredFeatures (1.36) and GangScheduling (alpha). ``dynamic_resource_allocation``
    overrides the DynamicResourceAllocation gate (tests of 1.30's alpha)."""
    f = features if features is not None else DEFAULT_FEATURES
    enabled = DEFAULT_MULTI_POINT
    if f.enabled("InTreeVolumeLimitsRemoved"):
        enabled = tuple(p for p in enabled if p.name not in IN_TREE_VOLUME_LIMITS)
    dra = f.enabled("DynamicResourceAllocation") if dynamic_resource_allocation is None else dynamic_resource_allocation
    if dra:
        i = next(i for i, p in enumerate(enabled) if p.name == "DefaultPreemption")
        weight = 2 if f.enabled("DynamicResourcesScoring") else 0
        enabled = enabled[:i] + (PluginRef(DYNAMIC_RESOURCES, weight),) + enabled[i:]
    if f.enabled("NodeDeclaredFeatures"):
        enabled = enabled + (PluginRef(NODE_DECLARED_FEATURES),)
    if f.enabled("GangScheduling"):
        enabled = enabled + (PluginRef(GANG_SCHEDULING),)
    return Plugins(multi_point=PluginSet(enabled=enabled))


DEFAULT_PLUGINS = default_plugins()

# Plugin name -> its default (v1-defaulted) args, for every plugin whose <Name>Args kind is
# registered in kubescheduler.config.k8s.io/v1 (facts 1.4). VolumeBinding's shape stays empty
# because the VolumeCapacityPriority gate is off in 1.30.
DEFAULT_ARGS: Mapping[str, object] = {
    "DefaultPreemption": DefaultPreemptionArgs(),
    "InterPodAffinity": InterPodAffinityArgs(),
    "NodeAffinity": NodeAffinityArgs(),
    "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocationArgs(),
    "NodeResourcesFit": NodeResourcesFitArgs(),
    "PodTopologySpread": PodTopologySpreadArgs(),
    "VolumeBinding": VolumeBindingArgs(),
}

# Args kinds registered in later v1 releases: kind -> (its default, the change that added it).
LATER_DEFAULT_ARGS: Mapping[str, tuple[object, str]] = {
    "DynamicResources": (DynamicResourcesArgs(), "DynamicResourcesArgs"),
}

# The args kinds registered in v1 (a pluginConfig for these plugins is decoded and defaulted;
# default args are appended only for these).
V1_ARGS_PLUGINS = frozenset(DEFAULT_ARGS)


def default_args(features: Features | None = None) -> Mapping[str, object]:
    """Plugin name -> default args in ``features``' release."""
    f = features if features is not None else DEFAULT_FEATURES
    out = dict(DEFAULT_ARGS)
    for name, (args, change) in LATER_DEFAULT_ARGS.items():
        if f.enabled(change):
            out[name] = args
    return out


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """mergePluginSet: custom ``disabled`` names (or ``"*"``) drop defaults; a custom enabled
    plugin with a default's name replaces that default *in place* (keeps its position, takes
    the custom weight); every other custom plugin is appended in the order given. The result
    keeps the custom and default disabled names so MultiPoint expansion can honour them.
    Duplicated custom entries are kept (the framework rejects them later); as upstream, the
    last of several same-named entries is the one that replaces the default."""
    # Weights of disabled entries are dropped (upstream keeps only the name).
    disabled = tuple(PluginRef(p.name) for p in custom.disabled + default.disabled)
    disabled_set = {p.name for p in disabled}
    custom_index = {p.name: i for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in disabled_set:
        for p in default.enabled:
            if p.name in disabled_set:
                continue
            i = custom_index.get(p.name)
            if i is not None:
                p = custom.enabled[i]
                replaced.add(i)
            enabled.append(p)
    enabled.extend(p for i, p in enumerate(custom.enabled) if i not in replaced)
    return PluginSet(enabled=tuple(enabled), disabled=disabled)


def merge_plugins(default: Plugins, custom: Plugins | None) -> Plugins:
    """mergePlugins: :func:`merge_plugin_set` at every extension point."""
    if custom is None:
        return default
    merged = {attr: merge_plugin_set(getattr(default, attr), getattr(custom, attr)) for attr, _ in EXTENSION_POINTS}
    return Plugins(**merged)


def enabled_plugin_names(plugins: Plugins) -> list[str]:
    """pluginsNames: every plugin enabled at any extension point, sorted (the order in which
    default args are appended)."""
    names: set[str] = set()
    for _, ps in plugins.items():
        names.update(p.name for p in ps.enabled)
    return sorted(names)


def default_plugin_config(plugins: Plugins, explicit: Mapping[str, Any],
                          features: Features | None = None) -> dict[str, Any]:
    """setDefaults_KubeSchedulerProfile: the explicit configs (in order), then default args
    for every enabled plugin with a v1 args kind and no explicit config, by sorted name."""
    out = dict(explicit)
    defaults = default_args(features)
    for name in enabled_plugin_names(plugins):
        if name not in out and name in defaults:
            out[name] = defaults[name]
    return out


def default_profile(
    scheduler_name: str = DEFAULT_SCHEDULER_NAME,
    *,
    plugins: Plugins | None = None,
    plugin_config: Mapping[str, Any] | None = None,
    percentage_of_nodes_to_score: int | None = None,
    features: Features | None = None,
) -> Profile:
    """A defaulted profile: default plugins merged with ``plugins``, and ``plugin_config``
    completed with default args (args given here must already be defaulted)."""
    merged = merge_plugins(default_plugins(features), plugins)
    return Profile(
        scheduler_name=scheduler_name,
        percentage_of_nodes_to_score=percentage_of_nodes_to_score,
        plugins=merged,
        plugin_config=default_plugin_config(merged, plugin_config or {}, features),
    )


def default_configuration(profiles: Iterable[Profile] | None = None, *,
                          features: Features | None = None) -> KubeSchedulerConfiguration:
    """The configuration kube-scheduler of ``features``' release runs with when given no config
    file: one ``default-scheduler`` profile with the default plugins and args, and the global
    defaults (facts 1.5)."""
    f = features if features is not None else DEFAULT_FEATURES
    profs = tuple(profiles) if profiles is not None else (default_profile(features=f),)
    return KubeSchedulerConfiguration(profiles=profs, features=f)
