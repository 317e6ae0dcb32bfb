"""The concrete Handle given to plugins (framework/runtime/framework.go's frameworkImpl
as a Handle): snapshot, listers, nominator and the framework's own runners."""

from __future__ import annotations

import inspect
import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from kubesched._cache import Cache, Snapshot
from kubesched._cache.podgroups import PodGroupStates
from kubesched._queue.nominator import QueueNominator
from kubesched._runtime.waiting_pods import WaitingPod, WaitingPods
from kubesched.cluster.memory import MemoryObjects
from kubesched.errors import ApiError
from kubesched.features import DEFAULT_FEATURES, Features
from kubesched.framework import CycleState, Extender, NodeInfo, PodInfo, Status
from kubesched.framework.handle import ObjectLister, PodNominator
from kubesched.objects import Node, Pod
from kubesched.objects.devices import ResourceClaim


class FrameworkRunners(Protocol):
    """What the handle forwards to the framework it is attached to (framework.go's
    frameworkImpl is its own Handle). A Protocol here, rather than an import of
    kubesched._runtime.framework, keeps the import graph acyclic: the framework imports the
    handle, never the other way round."""

    def run_filter_plugins_with_nominated_pods(self, state: CycleState, pod: Pod,
                                               node_info: NodeInfo) -> Status | None: ...

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: Pod, pod_info: PodInfo,
                                         node_info: NodeInfo) -> Status | None: ...

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: Pod, pod_info: PodInfo,
                                            node_info: NodeInfo) -> Status | None: ...

    def plugins_at(self, point: str) -> list[Any]: ...


class FrameworkHandle:
    """Handle implementation shared by a profile's plugins."""

    def __init__(self, cache: Cache, objects: ObjectLister | None = None, nominator: PodNominator | None = None,
                 *, profile_name: str = "default-scheduler",
                 binder: Callable[[Pod, str], None] | None = None,
                 deleter: Callable[..., None] | None = None,
                 clear_nomination: Callable[[Pod], None] | None = None,
                 claim_writer: Callable[[ResourceClaim], None] | None = None,
                 deterministic: bool = False, rng: random.Random | None = None,
                 extenders: Sequence[Extender] = (), features: Features | None = None) -> None:
        self.cache = cache
        self._objects: ObjectLister = objects if objects is not None else MemoryObjects()
        self._nominator = nominator if nominator is not None else QueueNominator()
        self._profile_name = profile_name
        self._binder = binder
        self._deleter = deleter
        self._deleter_takes_preemptor = _positional_arity(deleter) >= 3
        self._clear_nomination = clear_nomination
        self._claim_writer = claim_writer
        self._deterministic = deterministic
        self._rng = rng if rng is not None else random.Random()
        self.framework: FrameworkRunners | None = None
        self.waiting_pods = WaitingPods()
        self._extenders: tuple[Extender, ...] = tuple(extenders)
        self._features = features if features is not None else DEFAULT_FEATURES
        # Set by the driver (simulator, timeline, `run`): where background work runs, and
        # how pods are activated in its queue.
        self.async_runner: Callable[[Callable[[], None]], None] | None = None
        self.activator: Callable[[Sequence[Pod]], None] | None = None

    @classmethod
    def for_nodes(cls, nodes: Sequence[Node], pods: Sequence[Pod] = (), objects: ObjectLister | None = None,
                  **kwargs: Any) -> FrameworkHandle:
        """A handle over a fresh cache holding ``nodes`` and the bound ``pods`` (tests)."""
        cache = Cache(max(len(nodes), 1))
        cache.add_nodes(nodes)
        for p in pods:
            if p.node_name:
                cache.add_pod(p)
        return cls(cache, objects, **kwargs)

    @property
    def features(self) -> Features:
        return self._features

    def update_resource_claim(self, claim: ResourceClaim) -> None:
        """The ``claim_writer`` given (live mode: the API calls of bindClaim), else the
        object lister's ``set_resource_claim`` (an in-memory cluster stores the claim)."""
        if self._claim_writer is not None:
            self._claim_writer(claim)
            return
        setter = getattr(self._objects, "set_resource_claim", None)
        if setter is None:
            raise ApiError(f"resourceclaims {claim.key}: writing ResourceClaims is not supported by this cluster "
                           "client")
        setter(claim)

    def delete_resource_claim(self, claim: ResourceClaim) -> None:
        deleter = getattr(self._objects, "delete_resource_claim", None)
        if deleter is None:
            raise ApiError(f"resourceclaims {claim.key}: deleting ResourceClaims is not supported by this cluster "
                           "client")
        deleter(claim)

    @property
    def snapshot(self) -> Snapshot:
        return self.cache.snapshot

    @property
    def objects(self) -> ObjectLister:
        return self._objects

    @property
    def nominator(self) -> PodNominator:
        return self._nominator

    @property
    def profile_name(self) -> str:
        return self._profile_name

    @property
    def deterministic(self) -> bool:
        return self._deterministic

    @property
    def rng(self) -> random.Random:
        return self._rng

    @property
    def extenders(self) -> Sequence[Extender]:
        return self._extenders

    def _fw(self) -> FrameworkRunners:
        if self.framework is None:
            raise RuntimeError("the handle is not attached to a framework")
        return self.framework

    def run_filter_plugins_with_nominated_pods(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return self._fw().run_filter_plugins_with_nominated_pods(state, pod, node_info)

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: Pod, pod_info: PodInfo, node_info: NodeInfo) -> Status | None:
        return self._fw().run_pre_filter_extension_add_pod(state, pod, pod_info, node_info)

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: Pod, pod_info: PodInfo, node_info: NodeInfo) -> Status | None:
        return self._fw().run_pre_filter_extension_remove_pod(state, pod, pod_info, node_info)

    def plugins_at(self, extension_point: str) -> list[Any]:
        return self._fw().plugins_at(extension_point)

    def bind_pod(self, pod: Pod, node_name: str) -> None:
        if self._binder is not None:
            self._binder(pod, node_name)

    def delete_pod(self, pod: Pod, reason: str, preemptor: Pod | None = None) -> None:
        """``deleter(pod, reason)``, or ``deleter(pod, reason, preemptor)`` if it takes three
        (async preemption deletes after the cycle, when the driver no longer knows whose)."""
        if self._deleter is None:
            return
        if self._deleter_takes_preemptor:
            self._deleter(pod, reason, preemptor)
        else:
            self._deleter(pod, reason)

    def run_async(self, fn: Callable[[], None]) -> None:
        """Work a plugin starts in the background (async preemption's API calls). The driver
        decides when it runs (``async_runner``); by default at once."""
        if self.async_runner is not None:
            self.async_runner(fn)
        else:
            fn()

    def activate(self, pods: Sequence[Pod]) -> None:
        """Handle.Activate: move the pods to activeQ (no-op without a queue)."""
        if self.activator is not None:
            self.activator(pods)

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting_pods.get(uid)

    def iterate_over_waiting_pods(self) -> Iterator[WaitingPod]:
        return iter(self.waiting_pods)

    def reject_waiting_pod(self, uid: str) -> bool:
        wp = self.waiting_pods.get(uid)
        if wp is None:
            return False
        wp.reject("", "removed")
        return True

    def pod_group_states(self) -> PodGroupStates:
        """Handle.PodGroupManager().PodGroupStates(): the cache's pod group states."""
        return self.cache.pod_groups

    def clear_nominated_node_name(self, pod: Pod) -> None:
        if self._clear_nomination is not None:
            self._clear_nomination(pod)
        else:
            self._nominator.delete(pod)


def _positional_arity(fn: Callable[..., None] | None) -> int:
    if fn is None:
        return 0
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 3
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
