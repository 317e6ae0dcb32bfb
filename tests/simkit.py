"""Small helpers for tests that run plugins written in the test through the real runtime:
configurations, registries with extra factories, in-memory clusters, and a few tiny
plugins that record what the framework asked of them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from builders import make_node, make_pod

from kubesched._runtime.registry import Registry
from kubesched.config import KubeSchedulerConfiguration, parse_config
from kubesched.errors import ApiError
from kubesched.framework import Code, CycleState, Handle, Status
from kubesched.objects import ClusterObjects, Node, Pod
from kubesched.plugins.registry import REGISTRY

T0 = 1_700_000_000.0  # creationTimestamp of the first pod (2023-11-14T22:13:20Z)


def config(*profiles: dict[str, Any]) -> KubeSchedulerConfiguration:
    """A KubeSchedulerConfiguration from v1 profile mappings (defaults merged in)."""
    return parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                         "profiles": list(profiles) or [{}]})


def enable(**points: Sequence[str]) -> dict[str, Any]:
    """``plugins:`` enabling these names at these points: enable(permit=["A"], reserve=["R"])."""
    return {point: {"enabled": [{"name": n} for n in names]} for point, names in points.items()}


def registry(**factories: Callable[[Any, Any], Any]) -> Registry:
    reg = Registry(REGISTRY)
    reg.merge(factories)
    return reg


def node(name: str, cpu: str = "4", **labels: str) -> Node:
    b = make_node().name(name).capacity(cpu=cpu, memory="32Gi", pods=110)
    for k, v in labels.items():
        b = b.label(k, v)
    return b.obj()


def pod(name: str, cpu: str = "1", *, arrives: float = 0, priority: int = 0, labels: dict[str, str] | None = None,
        scheduler: str | None = None, namespace: str = "default") -> Pod:
    from datetime import UTC, datetime

    ts = datetime.fromtimestamp(T0 + arrives, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    b = make_pod().name(name).namespace(namespace).req(cpu=cpu).priority(priority).creation(ts)
    if labels:
        b = b.labels(labels)
    if scheduler:
        b = b.scheduler_name(scheduler)
    return b.obj()


def cluster(nodes: Sequence[Node], pods: Sequence[Pod]) -> ClusterObjects:
    latest = max((p.meta.creation_timestamp or 0.0 for p in pods), default=0.0)
    return ClusterObjects(nodes=list(nodes), pods=list(pods), latest_timestamp=latest)


# ---------------------------------------------------------------- recording test plugins
@dataclass
class Log:
    """What the framework called, in order: (plugin, point, pod name)."""

    calls: list[tuple[str, str, str]] = field(default_factory=list)

    def of(self, point: str) -> list[tuple[str, str]]:
        return [(plugin, pod) for plugin, p, pod in self.calls if p == point]


class Reserver:
    """Reserve/Unreserve plugin that logs; ``reject`` makes its Reserve fail."""

    def __init__(self, name: str, log: Log, reject: bool = False) -> None:
        self.name = name
        self.log = log
        self.reject = reject

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self.log.calls.append((self.name, "Reserve", pod.name))
        return Status.unschedulable(f"{self.name} has no room") if self.reject else None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self.log.calls.append((self.name, "Unreserve", pod.name))


class Permitter:
    """Permit plugin answering ``code`` (Success/Wait/Unschedulable/Error) with ``timeout``,
    for pods carrying label ``gate=<anything>`` only when ``only_gated``."""

    def __init__(self, name: str, log: Log, code: Code = Code.SUCCESS, timeout: float = 0.0,
                 only_gated: bool = False) -> None:
        self.name = name
        self.log = log
        self.code = code
        self.timeout = timeout
        self.only_gated = only_gated

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        self.log.calls.append((self.name, "Permit", pod.name))
        if self.only_gated and "gate" not in pod.labels:
            return None, 0.0
        if self.code == Code.SUCCESS:
            return None, 0.0
        if self.code == Code.WAIT:
            return Status.wait(), self.timeout
        if self.code == Code.ERROR:
            return Status.as_error("boom"), 0.0
        return Status(self.code, (f"{self.name} says no",)), 0.0


class Binder:
    """Bind plugin: ``skip`` -> Skip; ``fail_times`` -> that many Error answers first (the
    bind never reached the API server); ``error_after_bind`` -> binds, then reports an error
    (the API call went through but its answer was lost); else binds through the handle."""

    def __init__(self, name: str, log: Log, handle: Handle, *, skip: bool = False, fail_times: int = 0,
                 error_after_bind: bool = False) -> None:
        self.name = name
        self.log = log
        self.handle = handle
        self.skip = skip
        self.fail_times = fail_times
        self.error_after_bind = error_after_bind

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self.log.calls.append((self.name, "Bind", pod.name))
        if self.skip:
            return Status.skip()
        if self.fail_times > 0:
            self.fail_times -= 1
            return Status.as_error("connection reset by peer")
        try:
            self.handle.bind_pod(pod, node_name)
        except ApiError as e:
            return Status.as_error(e)
        if self.error_after_bind:
            return Status.as_error("http2: response body closed")
        return None
