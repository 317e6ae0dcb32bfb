"""Build a profile's Framework from configuration (framework/runtime/framework.go:
NewFramework, updatePluginList, expandMultiPointPlugins)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubesched._runtime.args import args_type_of, decode_args
from kubesched._runtime.framework import EXTENSION_POINT_ORDER, Framework
from kubesched._runtime.handle import FrameworkHandle
from kubesched.errors import ConfigError, FieldError, PluginError
from kubesched.framework import implements

Factory = Callable[[Any, Any], Any]

# config attribute of each extension point's PluginSet
POINT_ATTRS = {
    "PreEnqueue": "pre_enqueue", "QueueSort": "queue_sort", "PreFilter": "pre_filter", "Filter": "filter",
    "PostFilter": "post_filter", "PreScore": "pre_score", "Score": "score", "Reserve": "reserve",
    "Permit": "permit", "PreBind": "pre_bind", "Bind": "bind", "PostBind": "post_bind",
}


def build_framework(profile: Any, registry: Mapping[str, Factory], handle: FrameworkHandle, *,
                    index: int | None = None) -> Framework:
    """Instantiate every plugin the profile enables (once each, with its args) and lay
    them out per extension point: explicitly configured ones first (overrides of MultiPoint
    entries keep their explicit order), then MultiPoint plugins implementing the point, then
    the remaining explicit ones.

    A factory whose ``args`` parameter is annotated with a dataclass gets its raw pluginConfig
    args decoded into it (:mod:`kubesched._runtime.args`); errors are ConfigErrors located at
    ``profiles[<index>].pluginConfig[<j>].args.<field>`` (``index`` is the profile's position in
    the configuration; without it the scheduler name stands in)."""
    name = profile.scheduler_name
    where = f"profiles[{index if index is not None else name}]"
    # The file the profile was read from (None when built in code): every error names it.
    file: str | None = getattr(profile, "file", None)
    config_index = {plugin: j for j, plugin in enumerate(profile.plugin_config)}
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
                              file=file, field=f"{where}.plugins")
        args = profile.plugin_config.get(plugin_name)
        args_type, optional = args_type_of(factory)
        if args_type is not None:
            j = config_index.get(plugin_name)
            try:
                args = decode_args(args, args_type, optional=optional)
            except FieldError as e:
                if j is None:  # no pluginConfig entry, and the args have required fields
                    raise ConfigError(f"plugin {plugin_name} needs args ({e.path}: {e.message})",
                                      file=file, field=f"{where}.pluginConfig") from None
                raise ConfigError(e.message, file=file, field=e.under(f"{where}.pluginConfig[{j}]").path) from None
        try:
            plugin = factory(args, handle)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"initializing plugin {plugin_name!r}: {e}", file=file,
                              field=f"{where}.pluginConfig[{config_index[plugin_name]}]" if plugin_name in config_index
                              else f"{where}.plugins") from None
        _check_plugin(plugin, plugin_name)
        instances[plugin_name] = plugin

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
                raise ConfigError(f"plugin {n!r} does not extend {point} plugin", file=file,
                                  field=f"{where}.plugins.{point[0].lower() + point[1:]}")
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
                    raise ConfigError(f"plugin {ref.name!r} already registered as {point!r}", file=file,
                                      field=f"{where}.plugins.multiPoint")
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


def _check_plugin(plugin: Any, registered: str) -> None:
    """What the framework relies on of any plugin, checked once at construction: a ``name``
    equal to the name it is registered (and configured) under — weights, statuses and the
    trace go by it — and an ``unreserve`` next to ``reserve``."""
    name = getattr(plugin, "name", None)
    if not isinstance(name, str) or not name:
        raise PluginError(f"plugin {registered!r}: the object its factory returned has no name "
                          f"(give the class a `name = {registered!r}` attribute)")
    if name != registered:
        raise PluginError(f"plugin registered as {registered!r} calls itself {name!r}: a plugin's name must be the "
                          "name it is registered under")
    if implements(plugin, "Reserve") and not callable(getattr(plugin, "unreserve", None)):
        raise PluginError(f"plugin {registered!r} implements reserve but not unreserve (a Reserve plugin needs both)")
