from __future__ import annotations

from typing import Any

import pytest

from kubesched._runtime.registry import Registry, in_tree_registry
from kubesched.errors import PluginError


def factory(args: Any, handle: Any) -> Any:
    return object()


def test_in_tree_registry_has_every_default_plugin() -> None:
    reg = in_tree_registry()
    for name in ("SchedulingGates", "PrioritySort", "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
                 "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "EBSLimits", "GCEPDLimits", "NodeVolumeLimits",
                 "AzureDiskLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity",
                 "DefaultPreemption", "NodeResourcesBalancedAllocation", "ImageLocality", "DefaultBinder"):
        assert name in reg


def test_register_rejects_a_duplicate_name() -> None:
    reg = Registry({"A": factory})
    with pytest.raises(PluginError, match="a plugin named A already exists"):
        reg.register("A", factory)


def test_merge_rejects_duplicates() -> None:
    reg = in_tree_registry()
    with pytest.raises(PluginError, match="NodeName"):
        reg.merge({"NodeName": factory})


def test_unregister_removes_and_rejects_unknown_names() -> None:
    reg = Registry({"A": factory})
    reg.unregister("A")
    assert "A" not in reg
    with pytest.raises(PluginError, match="no plugin named A exists"):
        reg.unregister("A")
