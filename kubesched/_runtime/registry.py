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
