"""kubesched: kube-scheduler's decisions in Python (v1.36 by default, v1.30 with ``--kube-version 1.30``).

The curated public API. Plugin authors use :mod:`kubesched.framework` (extension-point
Protocols, Status, CycleState, NodeInfo); simulation users use :func:`load_manifests` and
:class:`Simulator`; configuration comes from :func:`load_config`.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any


def _defer_httpx_command_line() -> None:
    """Let ``import httpx`` skip httpx's own command line until someone uses it.

    httpx's ``__init__`` imports ``httpx._main`` (its ``httpx`` command: click, rich, pygments)
    whenever those are installed -- and kubesched's CLI installs them. That is ~45 ms of a
    restarted ``kubesched run`` (a third of httpx's import) for a command nobody runs in the
    scheduler. ``httpx._main`` is registered as a stand-in whose ``main`` and other attributes
    load the real module on first use, so ``httpx.main()`` still works.
    """
    if "httpx" in sys.modules or "httpx._main" in sys.modules:
        return
    stand_in = types.ModuleType("httpx._main")

    def real() -> types.ModuleType:
        if sys.modules.get("httpx._main") is stand_in:
            del sys.modules["httpx._main"]
        return importlib.import_module("httpx._main")

    def main(*args: Any, **kwargs: Any) -> Any:
        return real().main(*args, **kwargs)

    def attribute(name: str) -> Any:
        if name.startswith("__"):  # the import system probing (__path__, __spec__...): not a use
            raise AttributeError(name)
        return getattr(real(), name)

    stand_in.main = main  # type: ignore[attr-defined]
    stand_in.__getattr__ = attribute  # type: ignore[method-assign]
    sys.modules["httpx._main"] = stand_in


_defer_httpx_command_line()

# Where each public name lives. They are imported on first use (PEP 562) so that a process
# needing only part of the package -- `kubesched run` restarting after a failover -- does not
# pay for the simulator, the what-if engine or rich at start-up: kube-scheduler binds again
# ~0.24 s after its process starts, and every module imported here counts against that.
_LOCATIONS = {
    "KubeSchedulerConfiguration": "kubesched.config",
    "default_configuration": "kubesched.config",
    "load_config": "kubesched.config",
    "ApiError": "kubesched.errors",
    "ConfigError": "kubesched.errors",
    "FieldError": "kubesched.errors",
    "KubeschedError": "kubesched.errors",
    "ManifestError": "kubesched.errors",
    "PluginError": "kubesched.errors",
    "MAX_NODE_SCORE": "kubesched.framework",
    "Code": "kubesched.framework",
    "CycleState": "kubesched.framework",
    "NodeInfo": "kubesched.framework",
    "NodeScore": "kubesched.framework",
    "PodInfo": "kubesched.framework",
    "PreFilterResult": "kubesched.framework",
    "StateKey": "kubesched.framework",
    "Status": "kubesched.framework",
    "ClusterObjects": "kubesched.objects",
    "Node": "kubesched.objects",
    "Pod": "kubesched.objects",
    "load_manifests": "kubesched.objects",
    "REGISTRY": "kubesched.plugins.registry",
    "SimulationResult": "kubesched.simulation",
    "Simulator": "kubesched.simulation",
}

if TYPE_CHECKING:
    from kubesched.config import KubeSchedulerConfiguration, default_configuration, load_config
    from kubesched.errors import ApiError, ConfigError, FieldError, KubeschedError, ManifestError, PluginError
    from kubesched.framework import (
        MAX_NODE_SCORE,
        Code,
        CycleState,
        NodeInfo,
        NodeScore,
        PodInfo,
        PreFilterResult,
        StateKey,
        Status,
    )
    from kubesched.objects import ClusterObjects, Node, Pod, load_manifests
    from kubesched.plugins.registry import REGISTRY
    from kubesched.simulation import SimulationResult, Simulator


def __getattr__(name: str) -> Any:
    module = _LOCATIONS.get(name)
    if module is None:
        raise AttributeError(f"module 'kubesched' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    # The public names and the package's own dunders; not the helpers imported above.
    return sorted(set(__all__) | {n for n in globals() if n.startswith("__")})


__version__ = "0.1.0"

__all__ = [
    "MAX_NODE_SCORE",
    "REGISTRY",
    "ApiError",
    "ClusterObjects",
    "Code",
    "ConfigError",
    "CycleState",
    "FieldError",
    "KubeSchedulerConfiguration",
    "KubeschedError",
    "ManifestError",
    "Node",
    "NodeInfo",
    "NodeScore",
    "Pod",
    "PodInfo",
    "PluginError",
    "PreFilterResult",
    "SimulationResult",
    "Simulator",
    "StateKey",
    "Status",
    "default_configuration",
    "load_config",
    "load_manifests",
]
