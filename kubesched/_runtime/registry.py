"""Plugin registry (framework/runtime/registry.go): name -> factory ``new(args, handle)``.

The in-tree plugins come from :data:`kubesched.plugins.registry.REGISTRY`; out-of-tree
plugins are merged on top, and a name may be registered only once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kubesched.errors import PluginError

Factory = Callable[[Any, Any], Any]


class Registry(Mapping[str, Factory]):
    def __init__(self, factories: Mapping[str, Factory] | None = None) -> None:
        self._factories: dict[str, Factory] = {}
        if factories:
            self.merge(factories)

    def register(self, name: str, factory: Factory) -> None:
        """Registry.Register: a name already registered is an error."""
        if not name:
            raise PluginError("a plugin needs a non-empty name")
        if not callable(factory):
            raise PluginError(f"the factory of plugin {name!r} is not callable")
        if name in self._factories:
            raise PluginError(f"a plugin named {name} already exists")
        self._factories[name] = factory

    def unregister(self, name: str) -> None:
        """Registry.Unregister: an unknown name is an error."""
        if name not in self._factories:
            raise PluginError(f"no plugin named {name} exists")
        del self._factories[name]

    def merge(self, other: Mapping[str, Factory]) -> None:
        """Registry.Merge: register every entry of ``other``; duplicates are errors."""
        for name, factory in other.items():
            self.register(name, factory)

    def __getitem__(self, name: str) -> Factory:
        return self._factories[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._factories)

    def __len__(self) -> int:
        return len(self._factories)


def in_tree_registry() -> Registry:
    from kubesched.plugins.registry import REGISTRY

    return Registry(REGISTRY)


ENTRY_POINT_GROUP = "kubesched.plugins"


def _load_object(spec: str) -> Any:
    """``module:attribute`` -> the object."""
    import importlib

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise PluginError(f"--plugin {spec!r}: expected MODULE:FACTORY")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise PluginError(f"--plugin {spec!r}: cannot import {module_name}: {e}") from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise PluginError(f"--plugin {spec!r}: {module_name} has no attribute {attr}") from None
    return obj


def _plugin_name(factory: Any, spec: str) -> str:
    """The name a factory registers under: its module's NAME, or the factory's ``NAME``."""
    import sys

    for holder in (factory, sys.modules.get(getattr(factory, "__module__", ""), None)):
        name = getattr(holder, "NAME", None)
        if isinstance(name, str) and name:
            return name
    raise PluginError(f"plugin {spec!r}: cannot tell its name: define NAME in its module (or on the factory)")


def out_of_tree_registry(specs: tuple[str, ...] | list[str] = (), *, entry_points: bool = True) -> Registry:
    """Plugins from Python entry points (group ``kubesched.plugins``: ``Name = module:factory``)
    and from ``--plugin module:factory`` specs (named by their module's NAME)."""
    reg = Registry()
    if entry_points:
        from importlib.metadata import entry_points as eps

        for ep in eps(group=ENTRY_POINT_GROUP):
            try:
                factory = ep.load()
            except Exception as e:  # noqa: BLE001 - a broken third-party plugin is reported, not a crash
                raise PluginError(f"entry point {ep.name} = {ep.value} (group {ENTRY_POINT_GROUP}): cannot load: {e}") from None
            reg.register(ep.name, factory)
    for spec in specs:
        factory = _load_object(spec)
        if not callable(factory):
            raise PluginError(f"--plugin {spec!r}: {spec.partition(':')[2]} is not callable")
        reg.register(_plugin_name(factory, spec), factory)
    return reg


def full_registry(specs: tuple[str, ...] | list[str] = (), *, entry_points: bool = True) -> Registry:
    """In-tree plugins merged with out-of-tree ones (duplicates are errors)."""
    reg = in_tree_registry()
    reg.merge(out_of_tree_registry(specs, entry_points=entry_points))
    return reg
