"""Plugin registry (framework/runtime/registry.go): name -> factory ``new(args, handle)``.

The in-tree plugins come from :data:`kubesched.plugins.registry.REGISTRY`; out-of-tree
plugins are merged on top, and a name may be registered only once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kubesched.errors import PluginError
from kubesched.features import DEFAULT_FEATURES, Features

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


def in_tree_registry(features: Features | None = None) -> Registry:
    """The in-tree plugins of ``features``' release (default: the newest supported)."""
    from kubesched.plugins.registry import registry_for

    return Registry(registry_for(features if features is not None else DEFAULT_FEATURES))


ENTRY_POINT_GROUP = "kubesched.plugins"


def _may_declare_entry_points(group: str) -> bool:
    """Whether a distribution on ``sys.path`` may declare entry points in ``group``; False only
    when none can. importlib.metadata costs ~30 ms to import (zipfile, email, csv...) on the way
    to a restarted ``kubesched run``'s first bind, for a group most installations leave empty.

    It looks where importlib.metadata's path finder does (MetadataPathFinder.find_distributions:
    every ``sys.path`` entry's ``*.dist-info`` and ``*.egg-info`` directories, and an ``.egg``
    directory's ``EGG-INFO``) at each ``entry_points.txt`` for the group's name. Whatever it
    cannot read as importlib.metadata would (a zip file on the path, another finder on
    ``sys.meta_path`` that finds distributions) counts as a possible declaration, so a False
    never hides one from :func:`importlib.metadata.entry_points`."""
    import os
    import sys
    from importlib.machinery import PathFinder

    if any(getattr(finder, "find_distributions", None) is not None and finder is not PathFinder
           for finder in sys.meta_path):
        return True
    for entry in sys.path:
        root = entry or "."
        try:
            children = os.listdir(root)
        except NotADirectoryError:
            return True  # a zip file (or some other archive) on the path: not looked into here
        except OSError:
            continue  # gone or unreadable: importlib.metadata finds nothing there either
        is_egg = os.path.basename(root).lower().endswith(".egg")
        for child in children:
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")) or (is_egg and low == "egg-info"):
                try:
                    with open(os.path.join(root, child, "entry_points.txt"), "rb") as f:
                        if group.encode() in f.read():
                            return True
                except FileNotFoundError:
                    continue  # no entry points (or an .egg-info file: the legacy one-file form)
                except NotADirectoryError:
                    continue
                except OSError:
                    return True
    return False


def _load_object(spec: str) -> Any:
    """``module:attribute`` or ``path/to/file.py:attribute`` -> the object. The current
    directory is importable, as with ``python -m`` (``--plugin examples.plugins.coscheduling:new``
    works from the repository root)."""
    import importlib
    import importlib.util
    import os
    import sys

    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise PluginError(f"--plugin {spec!r}: expected MODULE:FACTORY or path/to/file.py:FACTORY")
    try:
        if module_name.endswith(".py") or "/" in module_name or os.sep in module_name:
            path = os.path.abspath(module_name)
            if not os.path.isfile(path):
                raise PluginError(f"--plugin {spec!r}: no such file {module_name!r}")
            name = "_kubesched_plugin_" + os.path.splitext(os.path.basename(path))[0]
            file_spec = importlib.util.spec_from_file_location(name, path)
            if file_spec is None or file_spec.loader is None:
                raise PluginError(f"--plugin {spec!r}: cannot import {module_name!r}")
            module = importlib.util.module_from_spec(file_spec)
            sys.modules[name] = module  # dataclasses and typing resolve names through it
            try:
                file_spec.loader.exec_module(module)
            except BaseException:
                sys.modules.pop(name, None)
                raise
        else:
            if os.getcwd() not in sys.path:
                sys.path.append(os.getcwd())
            module = importlib.import_module(module_name)
    except PluginError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure importing third-party code is reported, not a crash
        raise PluginError(f"--plugin {spec!r}: cannot import {module_name}: {type(e).__name__}: {e}") from None
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
    and from ``--plugin module:factory`` specs (named by their module's NAME). A name given
    twice is an error naming both sources."""
    reg = Registry()
    sources: dict[str, str] = {}

    def add(name: str, factory: Any, source: str) -> None:
        if name in sources:
            raise PluginError(f"a plugin named {name} already exists: {source} and {sources[name]} both register it")
        reg.register(name, factory)
        sources[name] = source

    if entry_points and _may_declare_entry_points(ENTRY_POINT_GROUP):
        from importlib.metadata import entry_points as eps

        for ep in eps(group=ENTRY_POINT_GROUP):
            source = f"entry point {ep.name} = {ep.value} (group {ENTRY_POINT_GROUP}" + (
                f", distribution {ep.dist.name})" if ep.dist is not None else ")")
            try:
                factory = ep.load()
            except Exception as e:  # noqa: BLE001 - a broken third-party plugin is reported, not a crash
                raise PluginError(f"{source}: cannot load: {type(e).__name__}: {e}") from None
            if not callable(factory):
                raise PluginError(f"{source}: {ep.value} is not callable")
            add(ep.name, factory, source)
    for spec in specs:
        factory = _load_object(spec)
        if not callable(factory):
            raise PluginError(f"--plugin {spec!r}: {spec.rpartition(':')[2]} is not callable")
        add(_plugin_name(factory, spec), factory, f"--plugin {spec}")
    return reg


def full_registry(specs: tuple[str, ...] | list[str] = (), *, entry_points: bool = True,
                  features: Features | None = None) -> Registry:
    """In-tree plugins merged with out-of-tree ones (duplicates are errors)."""
    reg = in_tree_registry(features)
    extra = out_of_tree_registry(specs, entry_points=entry_points)
    for name in extra:
        if name in reg:
            raise PluginError(f"a plugin named {name} already exists: an out-of-tree plugin cannot take the name of "
                              "an in-tree plugin (rename it, e.g. with a prefix)")
    reg.merge(extra)
    return reg
