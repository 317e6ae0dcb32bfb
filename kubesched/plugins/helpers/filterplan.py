"""When a pod's Filter chain can be evaluated for "this node with some pods added or removed"
without cloning the node and the cycle state: the fast path of DefaultPreemption's dry run
(SelectVictimsOnNode) and of the scheduler's filtering of nodes with nominated pods
(RunFilterPluginsWithNominatedPods).

:func:`filter_plan` decides it from the active (not Skipped) Filter plugins and their
PreFilter state for this pod, never from the workload. Every active Filter plugin must be one
of:

* **node-only**: ``plugin.preemption_fast_path(state, pod)`` returns True — its Filter
  status on a node does not depend on the pods on the node (NodeUnschedulable, NodeName,
  TaintToleration, NodeAffinity, VolumeZone, NodeLabel; NodePorts when the pod wants no
  host port);
* **resource arithmetic**: ``plugin.preemption_resource_fit(state, pod)`` returns a
  :class:`~kubesched.plugins.helpers.resourcefit.ResourceFit` — its Filter status is exactly
  that fitsRequest over the node's free vector (NodeResourcesFit).

and every active PreFilter plugin with AddPod/RemovePod extensions must be node-only (its
extensions then change no Filter verdict and never fail). A plugin with neither method —
any out-of-tree plugin that does not declare the contract — means no plan: callers take the
per-node path (clones, extensions, the whole chain per trial). Pod-dependent built-in
plugins (NodePorts with host ports, InterPodAffinity, PodTopologySpread, the volume
plugins, ServiceAffinity) have no plan while active; they Skip in PreFilter when they have
nothing to check for the pod (InterPodAffinity: no required (anti-)affinity term and no
existing pod's required anti-affinity term matching it; PodTopologySpread: no
DoNotSchedule constraint once defaulted, the system defaults being ScheduleAnyway; the
volume plugins: no volume of theirs), and a Skipped plugin's Filter and extensions never
run, so the chain is then exactly the plan's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.framework import Code, CycleState, NodeInfo, NodeTable, Status
from kubesched.framework.interfaces import IntArray
from kubesched.objects import Pod
from kubesched.plugins.helpers.resourcefit import ResourceFit


def wrap_filter_status(plugin_name: str, s: Status | None) -> Status | None:
    """A Filter status as RunFilterPlugins reports it (Framework.wrap_filter_status): None
    when the node fits; a non-rejecting code becomes an Error naming the plugin; the plugin
    is set."""
    if s is not None and s.code != Code.SUCCESS:
        if not s.is_rejected():
            s = Status(Code.ERROR, (f"running {json.dumps(plugin_name)} filter plugin: {s.message}",), plugin_name,
                       s.error)
        return s.with_plugin(plugin_name)
    return None


@dataclass(frozen=True, slots=True)
class FilterStep:
    """One active Filter plugin of the chain: node-only (``fit`` None) or resource
    arithmetic over ``free[start:stop]`` of the plan's vector."""

    plugin: Any
    fit: ResourceFit | None = None
    start: int = 0
    stop: int = 0


class FilterPlan:
    """The active Filter chain of one pod in one cycle, every step node-only or resource
    arithmetic. The resource steps' checks are concatenated into one vector: ``free`` (of a
    node), ``usage`` (of a pod) and ``need`` all have that layout."""

    __slots__ = ("steps", "resource_steps", "resource_indices", "node_only_indices", "need", "layout", "key",
                 "_wrapped")

    def __init__(self, steps: Sequence[FilterStep]) -> None:
        self.steps = tuple(steps)
        self.resource_steps = tuple(s for s in self.steps if s.fit is not None)
        self.resource_indices = tuple(k for k, s in enumerate(self.steps) if s.fit is not None)
        self.node_only_indices = tuple(k for k, s in enumerate(self.steps) if s.fit is None)
        need: list[int] = []
        layout: list[tuple[str, ...]] = []
        key: list[object] = []
        for k in self.resource_indices:
            fit = self.steps[k].fit
            assert fit is not None
            need.extend(fit.need)
            layout.append(fit.names)
            key.append((k, self.steps[k].plugin.name, fit.names, fit.need))
        self.need = tuple(need)
        # The resources of the vectors (what a pod's usage depends on), and everything the
        # resource steps' outcome on a node depends on besides the node and its pods.
        self.layout = tuple(layout)
        self.key = tuple(key)
        self._wrapped: dict[tuple[int, tuple[str, ...], bool], Status] = {}

    def free(self, node_info: NodeInfo) -> list[int]:
        out: list[int] = []
        for s in self.resource_steps:
            assert s.fit is not None
            out.extend(s.fit.free(node_info))
        return out

    def table_alloc(self, table: NodeTable, rows: IntArray) -> IntArray:
        """The allocatable of table rows, laid out as :meth:`free` (for 1.36's unresolvable
        oversize), shape (len(need), len(rows))."""
        parts = []
        for s in self.resource_steps:
            assert s.fit is not None
            parts.append(s.fit.table_alloc(table, rows))
        if not parts:
            return np.zeros((0, len(rows)), np.int64)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    @property
    def needs_alloc(self) -> bool:
        """Whether a resource step's status depends on the allocatable (1.36)."""
        return any(s.fit is not None and s.fit.oversize_unresolvable for s in self.resource_steps)

    def usage(self, pod: Pod) -> list[int]:
        if len(self.resource_steps) == 1:
            fit = self.resource_steps[0].fit
            assert fit is not None
            return fit.usage(pod)
        out: list[int] = []
        for s in self.resource_steps:
            assert s.fit is not None
            out.extend(s.fit.usage(pod))
        return out

    def fits(self, free: Sequence[int]) -> bool:
        """Every resource step passes."""
        for q, f in zip(self.need, free, strict=True):
            if q > f:
                return False
        return True

    def table_free(self, table: NodeTable, rows: IntArray) -> IntArray:
        """:meth:`free` of table rows, shape (len(need), len(rows))."""
        parts = []
        for s in self.resource_steps:
            assert s.fit is not None
            parts.append(s.fit.table_free(table, rows))
        if not parts:
            return np.zeros((0, len(rows)), np.int64)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def resource_status(self, k: int, free: Sequence[int], alloc: Sequence[int] | None = None,
                        node_info: NodeInfo | None = None) -> Status | None:
        """Step ``k``'s status (plugin set) for a node with this free vector (and allocatable,
        laid out alike, or read from ``node_info`` only when the step fails: 1.36 makes a
        request above it unresolvable)."""
        step = self.steps[k]
        fit = step.fit
        assert fit is not None
        reasons = fit.insufficient(free[step.start:step.stop])
        if not reasons:
            return None
        if alloc is not None:
            over = fit.oversize(alloc[step.start:step.stop])
        elif node_info is not None and fit.oversize_unresolvable:
            over = fit.oversize(fit.alloc(node_info))
        else:
            over = False
        key = (k, reasons, over)
        s = self._wrapped.get(key)
        if s is None:
            base = Status.unresolvable(*reasons) if over else Status.unschedulable(*reasons)
            s = self._wrapped[key] = base.with_plugin(step.plugin.name)
        return s

    def node_only_status(self, k: int, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Step ``k``'s status (a node-only plugin's Filter, wrapped as RunFilterPlugins)."""
        p = self.steps[k].plugin
        return wrap_filter_status(p.name, p.filter(state, pod, node_info))

    def chain_status(self, state: CycleState, pod: Pod, node_info: NodeInfo, free: Sequence[int],
                     node_only: dict[int, Status | None]) -> Status | None:
        """RunFilterPlugins on a node whose free vector is ``free``: the first failing step's
        status, or None. ``node_only`` caches the node-only steps' statuses of this node
        (they do not change with its pods)."""
        for k, step in enumerate(self.steps):
            if step.fit is None:
                if k in node_only:
                    s = node_only[k]
                else:
                    s = node_only[k] = self.node_only_status(k, state, pod, node_info)
            else:
                s = self.resource_status(k, free, node_info=node_info)
            if s is not None:
                return s
        return None


class UsageCache:
    """Usage vectors of pods for one plan layout, kept across cycles: a pod object never
    changes (an updated pod is a new object), so its usage of the same resources does not
    either. Bounded: cleared when full or when the layout changes."""

    __slots__ = ("layout", "by_pod", "limit")

    def __init__(self, limit: int = 16384) -> None:
        self.layout: tuple[tuple[str, ...], ...] | None = None
        self.by_pod: dict[Pod, tuple[int, ...]] = {}
        self.limit = limit

    def for_plan(self, plan: FilterPlan) -> Callable[[Pod], tuple[int, ...]]:
        """pod -> its usage vector in the plan's layout."""
        if plan.layout != self.layout:
            self.layout = plan.layout
            self.by_pod = {}
        by_pod, limit, compute = self.by_pod, self.limit, plan.usage

        def usage(pod: Pod) -> tuple[int, ...]:
            u = by_pod.get(pod)
            if u is None:
                if len(by_pod) >= limit:
                    by_pod.clear()
                u = by_pod[pod] = tuple(compute(pod))
            return u
        return usage

    def total(self, plan: FilterPlan, pods: Iterable[Pod]) -> tuple[int, ...]:
        """The summed usage of ``pods``."""
        usage = self.for_plan(plan)
        out: tuple[int, ...] | None = None
        for p in pods:
            u = usage(p)
            out = u if out is None else tuple(a + b for a, b in zip(out, u, strict=True))
        return out if out is not None else (0,) * len(plan.need)


def filter_plan(filter_plugins: Iterable[Any], pre_filter_plugins: Iterable[Any], state: CycleState,
                pod: Pod) -> FilterPlan | None:
    """The plan of this pod's Filter chain (the plugins in the profile's order, minus those
    its PreFilter Skipped), or None when some active plugin is neither node-only nor
    resource arithmetic for it, or an active PreFilter extension is not node-only."""
    skip = state.skip_filter_plugins
    steps: list[FilterStep] = []
    node_only: set[str] = set()
    width = 0
    for p in filter_plugins:
        name = p.name
        if name in skip:
            continue
        resource_fit = getattr(p, "preemption_resource_fit", None)
        if callable(resource_fit):
            fit = resource_fit(state, pod)
            if not isinstance(fit, ResourceFit):
                return None
            steps.append(FilterStep(p, fit, width, width + len(fit.need)))
            width += len(fit.need)
            continue
        fast = getattr(p, "preemption_fast_path", None)
        if callable(fast) and fast(state, pod) is True:
            steps.append(FilterStep(p))
            node_only.add(name)
            continue
        return None
    for p in pre_filter_plugins:
        name = p.name
        if name in skip or name in node_only:
            continue
        extensions = getattr(p, "pre_filter_extensions", None)
        if not callable(extensions) or extensions() is None:
            continue
        fast = getattr(p, "preemption_fast_path", None)
        if not (callable(fast) and fast(state, pod) is True):
            return None
    return FilterPlan(steps)
