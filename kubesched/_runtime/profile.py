"""Build a profile's Framework from configuration (framework/runtime/framework.go:
NewFramework, updatePluginList, expandMultiPointPlugins)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubesched._runtime.framework import EXTENSION_POINT_ORDER, Framework
from kubesched._runtime.handle import FrameworkHandle
from kubesched.errors import ConfigError
from kubesched.framework import implements

Factory = Callable[[Any, Any], Any]

# config attribute of each extension point's PluginSet
POINT_ATTRS = {
    "PreEnqueue": "pre_enqueue", "QueueSort": "queue_sort", "PreFilter": "pre_filter", "Filter": "filter",
    "PostFilter": "post_filter", "PreScore": "pre_score", "Score": "score", "Reserve": "reserve",
    "Permit": "permit", "PreBind": "pre_bind", "Bind": "bind", "PostBind": "post_bind",
}


def build_framework(profile: Any, registry: Mapping[str, Factory], handle: FrameworkHandle) -> Framework:
    """Instantiate every plugin the profile enables (once each, with its args) and lay
    them out per extension point: explicitly configured ones first (overrides of MultiPoint
    entries keep their explicit order), then MultiPoint plugins implementing the point, then
    the remaining explicit ones."""
    name = profile.scheduler_name
    plugins = profile.plugins
    multi = list(plugins.multi_point.enabled)
    wanted: list[str] = []
    for ref in multi:
        wanted.append(ref.name)
    for attr in POINT_ATTRS.values():
        for ref in getattr(plugins, attr).enabled:
            wanted.append(ref.name)
    instances: dict[str, Any] = {}
    for plugin_name in wanted:
        if plugin_name in instances:
            continue
        factory = registry.get(plugin_name)
        if factory is None:
            raise ConfigError(f"plugin {plugin_name!r} does not exist (known plugins: {', '.join(sorted(registry))})",
                              field=f"profiles[{name}].plugins")
        args = profile.plugin_config.get(plugin_name)
        try:
            instances[plugin_name] = factory(args, handle)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"initializing plugin {plugin_name!r}: {e}") from None

    points: dict[str, list[Any]] = {}
    weights: dict[str, int] = {}
    for ref in multi:
        if ref.weight:
            weights.setdefault(ref.name, ref.weight)
    for ref in plugins.score.enabled:
        if ref.weight:
            weights[ref.name] = ref.weight  # the Score-level weight wins over MultiPoint's
    for point in EXTENSION_POINT_ORDER:
        pset = getattr(plugins, POINT_ATTRS[point])
        explicit = [ref.name for ref in pset.enabled]
        for n in explicit:
            if not implements(instances[n], point):
                raise ConfigError(f"plugin {n!r} does not extend {point} plugin", field=f"profiles[{name}].plugins.{point[0].lower() + point[1:]}")
        disabled = {ref.name for ref in pset.disabled}
        multi_names: list[str] = []
        overrides: set[str] = set()
        if "*" not in disabled:
            for ref in multi:
                if not implements(instances[ref.name], point) or ref.name in disabled:
                    continue
                if ref.name in explicit:
                    overrides.add(ref.name)
                    continue
                if ref.name in multi_names:
                    raise ConfigError(f"plugin {ref.name!r} already registered as {point!r}")
                multi_names.append(ref.name)
        order = [n for n in explicit if n in overrides] + multi_names + [n for n in explicit if n not in overrides]
        seen: set[str] = set()
        lst = []
        for n in order:
            if n not in seen:
                seen.add(n)
                lst.append(instances[n])
        points[point] = lst
    return Framework(name, points, weights, handle, percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score)
