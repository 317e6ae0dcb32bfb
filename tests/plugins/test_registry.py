"""The in-tree registry: factories deferred for the plugins no default profile enables."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from kubesched._runtime.args import args_type_of
from kubesched._runtime.handle import FrameworkHandle
from kubesched.features import features_for
from kubesched.plugins.registry import _Deferred, registry_for

ALL_GATES = features_for("1.36", ["GangScheduling=true", "GenericWorkload=true", "NodeDeclaredFeatures=true"])
DEFERRED = sorted(name for name, f in registry_for(ALL_GATES).items() if isinstance(f, _Deferred))


def test_only_plugins_outside_every_default_profile_are_deferred() -> None:
    assert DEFERRED == ["GangScheduling", "NodeDeclaredFeatures", "NodeLabel", "NodePreferAvoidPods",
                        "NodeResourcesLeastAllocated", "NodeResourcesMostAllocated", "RequestedToCapacityRatio",
                        "SelectorSpread", "ServiceAffinity"]


def _build(factory: Any) -> Any:
    try:
        return factory(None, FrameworkHandle.for_nodes([], features=ALL_GATES))
    except Exception as e:  # noqa: BLE001 - compared between the two factories
        return type(e)


@pytest.mark.parametrize("name", DEFERRED)
def test_a_deferred_factory_reads_and_builds_as_the_plugin_modules_own(name: str) -> None:
    deferred = registry_for(ALL_GATES)[name]
    real = deferred.__wrapped__
    assert not isinstance(real, _Deferred) and inspect.isfunction(real)
    assert inspect.signature(deferred) == inspect.signature(real)
    assert args_type_of(deferred) == args_type_of(real)
    built, expected = _build(deferred), _build(real)
    assert type(built) is type(expected) or built is expected
    if not isinstance(built, type):
        assert built.name == name
