"""The same cluster and pending pods under two or more scheduler configurations, side by side.

Each configuration runs its own simulation over the same objects (read once):

- by default the conformance procedure (kubesched.simulation.Simulator, ``deterministic``:
  pods in queue order, ties to the lowest node name, nodes in name order), so every
  difference comes from the configurations, not from random tie-breaks;
- with ``timeline=True`` the queue-driven simulation on a virtual clock
  (kubesched.timeline.TimelineSimulator), its random tie-breaks drawn from ``seed``; every
  configuration gets the same seed.

Per configuration the result counts the pending pods bound, left unschedulable, preempted
(pods deleted by preemption: bound ones of the input, or pending ones bound then evicted) and
not attempted (gated, terminal, another scheduler's), the nodes left empty, and the requested
share of every resource over the nodes. The pods placed differently are those whose outcome
(node, or unschedulable / preempted / not attempted) is not the same under every
configuration.

Definitions the numbers rest on:

- **requested share** of a resource on a node: what the pods on it request (the scheduler
  cache's NodeInfo.Requested: the sum NodeResourcesFit checks; for ``pods``, the number of
  pods) over the node's allocatable. Per resource: the mean and the population standard
  deviation of that share over the nodes that have some of it allocatable (a node without
  the resource, e.g. a GPU on a CPU node, is left out rather than counted as 0 %). Resources:
  cpu, memory and pods always, ephemeral-storage and every extended / hugepages resource when
  some node has it allocatable. A low mean spread evenly is LeastAllocated's signature; a high
  standard deviation with empty nodes is MostAllocated's.
- **empty node**: a node whose pods are all DaemonSet pods (controller ownerReference of kind
  DaemonSet) or mirror pods (``kubernetes.io/config.mirror`` annotation), if any: what would be
  left if its workloads moved away — the nodes a bin-packing configuration frees.

The configurations' simulations are independent: with ``jobs`` > 1 they run in that many
forked worker processes at once (each simulation is single-threaded Python; a fork shares the
parsed objects copy-on-write and each child returns its summary). Every simulator is built in
the parent first, so a configuration error is raised as it would be with ``jobs=1``; the
results are the same objects either way (tests/whatif/test_compare.py proves it).
"""

from __future__ import annotations

import math
import multiprocessing
import pickle
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from kubesched.config import KubeSchedulerConfiguration
from kubesched.errors import KubeschedError
from kubesched.framework import NodeInfo
from kubesched.objects import ClusterObjects, Pod
from kubesched.plugins.registry import Factory
from kubesched.simulation import SimulationResult, Simulator
from kubesched.timeline import TimelineResult, TimelineSimulator

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
# Pod outcome states.
BOUND = "bound"
UNSCHEDULABLE = "unschedulable"
PREEMPTED = "preempted"
NOT_ATTEMPTED = "not attempted"
_NATIVE_ORDER = ("cpu", "memory", "ephemeral-storage", "pods")


@dataclass(frozen=True, slots=True)
class ResourceShare:
    """The requested share of one resource over the nodes that have it allocatable:
    ``mean`` and population ``stddev`` of requested / allocatable (fractions, 1.0 = full);
    ``nodes`` counts the nodes averaged over."""

    resource: str
    mean: float
    stddev: float
    nodes: int


@dataclass(frozen=True, slots=True)
class Outcome:
    """Where one pod ended under one configuration: ``state`` is bound (``node`` set), or
    unschedulable / preempted / not attempted (``node`` None; ``message`` says why)."""

    state: str
    node: str | None = None
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"state": self.state, "node": self.node, "message": self.message}


@dataclass(frozen=True, slots=True)
class ConfigOutcome:
    """One configuration's simulation, summed up."""

    name: str  # as given: a file path, or "default"
    bound: int
    unschedulable: int
    preempted: int
    not_attempted: int
    empty_nodes: tuple[str, ...]
    shares: tuple[ResourceShare, ...]
    outcomes: tuple[tuple[str, Outcome], ...]  # pod key -> outcome: every pending pod, then every preempted one

    def share(self, resource: str) -> ResourceShare | None:
        return next((s for s in self.shares if s.resource == resource), None)

    def outcome(self, pod: str) -> Outcome | None:
        return next((o for k, o in self.outcomes if k == pod), None)


@dataclass(frozen=True, slots=True)
class PlacementDiff:
    """A pod whose outcome differs between configurations; ``outcomes`` is aligned with
    :attr:`CompareResult.configurations`."""

    pod: str
    outcomes: tuple[Outcome, ...]


@dataclass(frozen=True, slots=True)
class CompareResult:
    """The answer of :func:`compare`; :meth:`as_dict` is its JSON form."""

    procedure: str  # "deterministic" | "timeline"
    seed: int | None
    nodes: int
    pending_pods: int
    configurations: tuple[ConfigOutcome, ...]
    placed_differently: tuple[PlacementDiff, ...]

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON/YAML and the HTML report::

            {"kind": "CompareReview",
             "procedure": "deterministic",          # or "timeline" (then "seed")
             "seed": null, "nodes": 3, "pendingPods": 4,
             "configurations": [
               {"name": "leastallocated.yaml", "bound": 4, "unschedulable": 0, "preempted": 0,
                "notAttempted": 0, "emptyNodes": [],
                "requestedShare": {"cpu": {"mean": 0.333333, "stddev": 0.117851, "nodes": 3}, ...},
                "outcomes": {"default/p1": {"state": "bound", "node": "node-a", "message": ""}, ...}},
               ...],
             "placedDifferently": [                 # outcomes aligned with "configurations"
               {"pod": "default/p2", "outcomes": [{"state": "bound", "node": "node-b", "message": ""},
                                                  {"state": "bound", "node": "node-a", "message": ""}]}]}

        Shares are fractions (1.0 = the whole allocatable), rounded to 6 decimals."""
        return {
            "kind": "CompareReview",
            "procedure": self.procedure,
            "seed": self.seed,
            "nodes": self.nodes,
            "pendingPods": self.pending_pods,
            "configurations": [{
                "name": c.name, "bound": c.bound, "unschedulable": c.unschedulable, "preempted": c.preempted,
                "notAttempted": c.not_attempted, "emptyNodes": list(c.empty_nodes),
                "requestedShare": {s.resource: {"mean": round(s.mean, 6), "stddev": round(s.stddev, 6),
                                                "nodes": s.nodes} for s in c.shares},
                "outcomes": {k: o.as_dict() for k, o in c.outcomes},
            } for c in self.configurations],
            "placedDifferently": [{"pod": d.pod, "outcomes": [o.as_dict() for o in d.outcomes]}
                                  for d in self.placed_differently],
        }


def compare(objs: ClusterObjects, configs: Sequence[tuple[str, KubeSchedulerConfiguration]], *,
            timeline: bool = False, seed: int | None = None,
            registry: Mapping[str, Factory] | None = None, jobs: int = 1) -> CompareResult:
    """Simulate ``objs`` once per (name, configuration) and compare the outcomes; ``jobs``
    simulations at a time (forked processes when > 1 and the platform can fork)."""
    pending = [p for p in objs.pods if not p.node_name]
    names = [name for name, _ in configs]

    def build(cfg: KubeSchedulerConfiguration) -> Simulator:
        if timeline:
            return TimelineSimulator(objs, cfg, seed=seed, registry=registry)
        return Simulator(objs, cfg, deterministic=True, registry=registry)

    workers = min(jobs, len(configs))
    if workers > 1 and "fork" in multiprocessing.get_all_start_methods():
        outcomes = _run_forked(objs, names, [build(cfg) for _, cfg in configs], pending, workers)
    else:  # one simulator alive at a time
        outcomes = []
        for name, cfg in configs:
            sim = build(cfg)
            outcomes.append(_summarize(name, objs, pending, sim, sim.run()))
    diffs = []
    keys = [k for k, _ in outcomes[0].outcomes] if outcomes else []
    for c in outcomes[1:]:
        keys.extend(k for k, _ in c.outcomes if k not in keys)
    for key in keys:
        per = tuple(c.outcome(key) or Outcome(BOUND, _bound_node(objs, key)) for c in outcomes)
        if len({(o.state, o.node) for o in per}) > 1:
            diffs.append(PlacementDiff(key, per))
    return CompareResult("timeline" if timeline else "deterministic", seed if timeline else None, len(objs.nodes),
                         len(pending), tuple(outcomes), tuple(diffs))


# What a forked worker reads: set by _run_forked just before the fork, inherited by the children
# (the simulators hold plugin instances and the cluster's objects: sharing them by fork avoids
# pickling them, and user plugins need not be picklable).
_FORK_INPUT: tuple[ClusterObjects, list[str], list[Simulator], list[Pod]] | None = None


def _run_forked(objs: ClusterObjects, names: list[str], sims: list[Simulator], pending: list[Pod],
                workers: int) -> list[ConfigOutcome]:
    global _FORK_INPUT
    _FORK_INPUT = (objs, names, sims, pending)
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as pool:
            results = list(pool.map(_forked_summary, range(len(sims))))
    finally:
        _FORK_INPUT = None
    outcomes: list[ConfigOutcome] = []
    for r in results:
        if isinstance(r, BaseException):
            raise r
        outcomes.append(r)
    return outcomes


def _forked_summary(index: int) -> ConfigOutcome | BaseException:
    """One configuration's simulation, in a forked worker. An exception comes back as a value:
    as itself when it pickles, else as a KubeschedError / RuntimeError with its message (some of
    ours need their fields to be rebuilt), so the parent raises it rather than a pool error."""
    assert _FORK_INPUT is not None
    objs, names, sims, pending = _FORK_INPUT
    try:
        return _summarize(names[index], objs, pending, sims[index], sims[index].run())
    except Exception as e:  # noqa: BLE001 - handed to the parent, which raises it
        try:
            pickle.loads(pickle.dumps(e))
            return e
        except Exception:  # noqa: BLE001
            return KubeschedError(str(e)) if isinstance(e, KubeschedError) else RuntimeError(f"{type(e).__name__}: {e}")


def _bound_node(objs: ClusterObjects, key: str) -> str | None:
    """Where a pod of the input is bound (a pod another configuration preempted stayed there)."""
    return next((p.node_name or None for p in objs.pods if p.key == key), None)


def _summarize(name: str, objs: ClusterObjects, pending: Sequence[Pod], sim: Simulator,
               res: SimulationResult) -> ConfigOutcome:
    last: dict[str, str] = {}
    for step in res.steps:
        a = step.attempt
        last[a.pod.key] = a.message or a.error or ""
    if isinstance(res, TimelineResult):
        last.update(res.pending)
    deleted = set(res.deleted)
    outcomes: list[tuple[str, Outcome]] = []
    counts = {BOUND: 0, UNSCHEDULABLE: 0, PREEMPTED: 0, NOT_ATTEMPTED: 0}
    for p in pending:
        key = p.key
        if key in deleted:
            o = Outcome(PREEMPTED, message="preemption victim")
        elif key in res.skipped:
            o = Outcome(NOT_ATTEMPTED, message=res.skipped[key])
        elif res.final.get(key):
            o = Outcome(BOUND, res.final[key])
        else:
            o = Outcome(UNSCHEDULABLE, message=last.get(key, "not attempted"))
        counts[o.state] += 1
        outcomes.append((key, o))
    pending_keys = {p.key for p in pending}
    for key in res.deleted:
        if key not in pending_keys:
            outcomes.append((key, Outcome(PREEMPTED, message="preemption victim")))
    infos = sorted((ni for ni in sim.cache.node_infos.values() if ni.node is not None), key=lambda ni: ni.name)
    empty = tuple(ni.name for ni in infos if all(_leaves_node_empty(pi.pod) for pi in ni.pods))
    return ConfigOutcome(name, counts[BOUND], counts[UNSCHEDULABLE], len(deleted), counts[NOT_ATTEMPTED], empty,
                         requested_shares(infos), tuple(outcomes))


def _leaves_node_empty(pod: Pod) -> bool:
    """A DaemonSet or mirror pod: it runs on every (targeted) node whatever the placement."""
    ref = pod.meta.controller_ref()
    return (ref is not None and ref.kind == "DaemonSet") or MIRROR_ANNOTATION in pod.meta.annotations


def requested_shares(infos: Sequence[NodeInfo]) -> tuple[ResourceShare, ...]:
    """Mean and population standard deviation, over the nodes having some of it allocatable,
    of each resource's requested / allocatable (see the module docstring)."""
    names = ["cpu", "memory", "pods"]
    if any(ni.allocatable.ephemeral_storage > 0 for ni in infos):
        names.append("ephemeral-storage")
    scalars = sorted({n for ni in infos for n, v in ni.allocatable.scalar.items() if v > 0})
    names.sort(key=_NATIVE_ORDER.index)
    out = []
    for name in [*names, *scalars]:
        ratios = []
        for ni in infos:
            alloc = ni.allocatable.get(name)
            if alloc <= 0:
                continue
            used = len(ni.pods) if name == "pods" else ni.requested.get(name)
            ratios.append(used / alloc)
        if not ratios:
            continue
        mean = math.fsum(ratios) / len(ratios)
        std = math.sqrt(math.fsum((r - mean) ** 2 for r in ratios) / len(ratios))
        out.append(ResourceShare(name, mean, std, len(ratios)))
    return tuple(out)
