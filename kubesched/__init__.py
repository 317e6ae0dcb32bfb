"""kubesched: kube-scheduler v1.30's decisions in Python.

The curated public API. Plugin authors use :mod:`kubesched.framework` (extension-point
Protocols, Status, CycleState, NodeInfo); simulation users use :func:`load_manifests` and
:class:`Simulator`; configuration comes from :func:`load_config`.
"""

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
