"""The cheapest scale-up: how many new nodes of each group make every unschedulable pod that
some group can host schedulable, at the lowest price per hour — an integer program on HiGHS,
every placement then re-verified with the real filters.

The pods are cluster-autoscaler's pod groups (:func:`kubesched.whatif.autoscale.build_pod_groups`:
same controller, labels and spec), a group's pods are interchangeable. A pod group ``c`` may go
to node group ``g`` when its first pod passes the profile's real PreFilter and Filter plugins on
``g``'s template node (the check cluster-autoscaler's SchedulablePodGroups makes). New nodes of
``g`` are slots ``k < K_g``, ``K_g`` the least of ``maxSize - size`` and the nodes the group's
pods would need each pod group on nodes of its own (an upper bound on what an optimal answer
uses).

Variables: ``y[g,k]`` binary (slot used), ``z[c,g,k]`` integer (pods of ``c`` on it, at most
what fits on an empty template node, 1 with host ports or with a required anti-affinity on
``kubernetes.io/hostname`` that selects the group's own pods). Rows: each pod group places at
most its pods; per slot and resource (cpu, memory, ephemeral-storage, extended resources,
pods) the requests stay within the template's allocatable minus its DaemonSet pods' requests
when the slot is used; at most one pod per slot among pod groups whose host ports conflict;
slots of a group are used in order (symmetry).

Two solves: the most pods placed first, then, with that many placed, the lowest price per
hour (the group's ``pricePerHour`` per node used; among equal prices fewer nodes, by a
per-node tie-break below a tenth of the cheapest node's price over all slots).

Not modelled (reported per pod, left to cluster-autoscaler's own scale-up): pods with
required pod affinity, hard topology spreading, volumes the scheduler tracks, resource
claims, a required anti-affinity with another key than the hostname or selecting other
pending pods, and profiles with filter plugins the model does not know.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import highspy
import numpy as np
from highspy._core import _Highs

from kubesched.config import KubeSchedulerConfiguration
from kubesched.errors import KubeschedError
from kubesched.framework import PodInfo
from kubesched.objects import ClusterObjects, Pod
from kubesched.objects.resources import is_scalar_resource_name
from kubesched.plugins.helpers.volumes import inline_plugin
from kubesched.plugins.nodeports.plugin import get_container_ports
from kubesched.plugins.registry import Factory
from kubesched.simulation import SimulationResult, Simulator
from kubesched.whatif.pack import MODELLED_FILTERS, SOLVER, STATIC_FILTERS, PackVerificationError, place

_TRACKED_VOLUMES = frozenset(("persistentVolumeClaim", "ephemeral", "csi", "gcePersistentDisk",
                              "awsElasticBlockStore", "rbd", "iscsi"))
_WILDCARD = "0.0.0.0"


@dataclass(frozen=True, slots=True)
class OptimalScaleUp:
    """The cheapest scale-up: price per hour, new nodes per group, where each pod goes, the
    pods left out (and why), the solver's figures."""

    cost: float
    nodes: Mapping[str, int]
    placements: tuple[tuple[str, str], ...]
    left: tuple[tuple[str, str], ...]  # (pod, why it is not placed)
    solver: Mapping[str, Any]
    verified: int

    def as_dict(self) -> dict[str, Any]:
        return {"cost": round(self.cost, 6), "nodes": dict(self.nodes), "placements": dict(self.placements),
                "left": dict(self.left), "solver": dict(self.solver), "verified": self.verified}


def _not_modelled(pod: Pod, sim: Simulator, others: Sequence[Pod]) -> str | None:
    fwk = sim.profiles.get(pod.scheduler_name)
    if fwk is None:
        return f"schedulerName {pod.scheduler_name!r} is not a profile"
    unknown = [p.name for p in fwk.filter if p.name not in STATIC_FILTERS and p.name not in MODELLED_FILTERS]
    if unknown:
        return f"its profile runs filter plugins the model does not know: {', '.join(unknown)}"
    if pod.resource_claims:
        return "resource claims: the devices a new node's pods take are not modelled"
    info = PodInfo(pod)
    if info.required_affinity_terms:
        return "required pod affinity: whether a node fits depends on where the other pods go"
    spread = next((p for p in fwk.filter if p.name == "PodTopologySpread"), None)
    constraints = getattr(spread, "constraints", None)
    if constraints is not None and constraints(pod, "DoNotSchedule"):
        return "hard topology spread (DoNotSchedule): whether a node fits depends on where the other pods go"
    tracked = [v.name for v in pod.volumes if v.kind in _TRACKED_VOLUMES or inline_plugin(v) is not None]
    if tracked:
        return f"volumes the scheduler tracks ({', '.join(tracked)})"
    for term in info.required_anti_affinity_terms:
        if term.topology_key != "kubernetes.io/hostname":
            return f"required anti-affinity by {term.topology_key}: only kubernetes.io/hostname is modelled"
        ns = sim.objects.namespace
        for other in others:
            o_ns = ns(other.namespace)
            if term.matches(other, o_ns.meta.labels if o_ns is not None else {}):
                return f"required anti-affinity with other pending pods ({other.key})"
    return None


def _self_repels(pod: Pod, sim: Simulator) -> bool:
    ns = sim.objects.namespace(pod.namespace)
    labels = ns.meta.labels if ns is not None else {}
    return any(t.matches(pod, labels) for t in PodInfo(pod).required_anti_affinity_terms)


def _ports(pod: Pod) -> tuple[tuple[str, str, int], ...]:
    return tuple(sorted({(ip or _WILDCARD, proto or "TCP", port) for ip, proto, port in get_container_ports(pod)}))


def _port_cliques(ports: Sequence[tuple[tuple[str, str, int], ...]]) -> list[list[int]]:
    """Pod groups that may not share a node: per (protocol, port), each specific IP with 0.0.0.0."""
    by_port: dict[tuple[str, int], dict[str, set[int]]] = {}
    for c, ps in enumerate(ports):
        for ip, proto, port in ps:
            by_port.setdefault((proto, port), {}).setdefault(ip, set()).add(c)
    cliques: set[tuple[int, ...]] = set()
    for ips in by_port.values():
        wild = ips.get(_WILDCARD, set())
        specific = [s for ip, s in ips.items() if ip != _WILDCARD]
        for s in specific or [set()]:
            members = tuple(sorted(wild | s))
            if len(members) > 1:
                cliques.add(members)
    return [list(c) for c in sorted(cliques)]


class _Model:
    def __init__(self) -> None:
        self.cost: list[float] = []
        self.upper: list[float] = []
        self.rows: list[tuple[list[int], list[float], float, float]] = []

    def col(self, cost: float, upper: float) -> int:
        self.cost.append(cost)
        self.upper.append(upper)
        return len(self.cost) - 1

    def row(self, cols: list[int], vals: list[float], lower: float, upper: float) -> None:
        if cols:
            self.rows.append((cols, vals, lower, upper))

    def solve(self, cost: Sequence[float], time_limit: float) -> tuple[str, np.ndarray | None, float | None, float]:
        n = len(self.cost)
        h = _Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("time_limit", float(max(time_limit, 0.05)))
        h.setOptionValue("mip_rel_gap", 1e-6)
        starts, index, value = [0], [], []
        lower, upper = [], []
        for cols, vals, lo, up in self.rows:
            index.extend(cols)
            value.extend(vals)
            starts.append(len(index))
            lower.append(lo)
            upper.append(up)
        t0 = time.perf_counter()
        status = h.passModel(
            n, len(self.rows), len(index), 2, 1, 0.0, np.asarray(cost, np.float64), np.zeros(n),
            np.asarray(self.upper, np.float64), np.asarray(lower, np.float64), np.asarray(upper, np.float64),
            np.asarray(starts[:-1], np.int32), np.asarray(index, np.int32), np.asarray(value, np.float64),
            np.ones(n, np.int32))
        if status == highspy.HighsStatus.kError:
            raise KubeschedError("HiGHS rejected the scale-up model (a bug)")
        h.run()
        seconds = time.perf_counter() - t0
        info = h.getInfo()
        name = h.modelStatusToString(h.getModelStatus())
        if int(info.primal_solution_status) != int(highspy.kSolutionStatusFeasible):
            h.clear()
            return name, None, None, seconds
        values = np.rint(np.asarray(h.getSolution().col_value, np.float64)).astype(np.int64)
        bound = float(info.mip_dual_bound) if math.isfinite(info.mip_dual_bound) else None
        h.clear()
        return name, values, bound, seconds


def optimal_scale_up(snap: Any, objs: ClusterObjects, result: SimulationResult, groups: Sequence[Any],
                     templates: Mapping[str, Any], sizes: Mapping[str, int], pod_groups: Sequence[Any],
                     config: KubeSchedulerConfiguration | None, *, registry: Mapping[str, Factory] | None,
                     time_limit: float, enabled: bool = True) -> OptimalScaleUp:
    """The cheapest scale-up (see the module docstring); ``snap`` is left as it was."""
    if not enabled:
        return OptimalScaleUp(0.0, {}, (), (), {"solver": SOLVER, "status": "not run"}, 0)
    sim: Simulator = snap.sim
    left: list[tuple[str, str]] = []
    classes: list[Any] = []
    all_pending = [p for eg in pod_groups for p in eg.pods]
    for eg in pod_groups:
        if not eg.schedulable_groups:
            left.extend((p.key, "no node group's template node takes it") for p in eg.pods)
            continue
        others = [p for p in all_pending if p not in eg.pods]
        why = _not_modelled(eg.exemplar, sim, others)
        if why is not None:
            left.extend((p.key, f"not modelled: {why}") for p in eg.pods)
            continue
        classes.append(eg)
    # Resources any class requests (pods counted always).
    resources: list[str] = []
    for eg in classes:
        for r, q in eg.exemplar.requests.items():
            if q > 0 and r not in resources and r != "pods" and (
                    r in ("cpu", "memory", "ephemeral-storage") or is_scalar_resource_name(r)):
                resources.append(r)
    group_list = [g for g in groups if any(g.name in eg.schedulable_groups for eg in classes)]
    room: dict[str, list[int]] = {}
    for g in group_list:
        t = templates[g.name]
        alloc = t.node.allocatable
        room[g.name] = [alloc.get(r, 0) - sum(p.requests.get(r, 0) for p in t.pods) for r in resources]
        room[g.name].append(alloc.get("pods", 110) - len(t.pods))
    req = [[eg.exemplar.requests.get(r, 0) for r in resources] + [1] for eg in classes]
    ports = [_ports(eg.exemplar) for eg in classes]
    single = [bool(ports[c]) or _self_repels(eg.exemplar, sim) for c, eg in enumerate(classes)]
    ub: dict[tuple[int, str], int] = {}
    slots: dict[str, int] = {}
    for g in group_list:
        need = 0
        for c, eg in enumerate(classes):
            if g.name not in eg.schedulable_groups:
                continue
            fit = min((room[g.name][r] // q for r, q in enumerate(req[c]) if q > 0), default=len(eg.pods))
            fit = min(fit, len(eg.pods), 1 if single[c] else len(eg.pods))
            if fit <= 0:
                continue
            ub[(c, g.name)] = fit
            need += -(-len(eg.pods) // fit)
        slots[g.name] = max(0, min(g.max_size - sizes[g.name], need))
    total_slots = sum(slots.values())
    m = _Model()
    y: dict[tuple[str, int], int] = {}
    z: dict[tuple[int, str, int], int] = {}
    positive = [g.price_per_hour for g in group_list if g.price_per_hour > 0]
    tie = (min(positive) if positive else 1.0) / (10.0 * (total_slots + 1))
    for g in group_list:
        for k in range(slots[g.name]):
            y[(g.name, k)] = m.col(g.price_per_hour + tie, 1)
            for c in range(len(classes)):
                u = ub.get((c, g.name))
                if u:
                    z[(c, g.name, k)] = m.col(0.0, u)
    for c, eg in enumerate(classes):
        cols = [col for (cc, _, _), col in z.items() if cc == c]
        m.row(cols, [1.0] * len(cols), 0.0, float(len(eg.pods)))
    cliques = _port_cliques(ports)
    for g in group_list:
        for k in range(slots[g.name]):
            yc = y[(g.name, k)]
            for r in range(len(resources) + 1):
                cols, vals = [], []
                for c in range(len(classes)):
                    col = z.get((c, g.name, k))
                    if col is not None and req[c][r] > 0:
                        cols.append(col)
                        vals.append(float(req[c][r]))
                if cols:
                    m.row([*cols, yc], [*vals, -float(room[g.name][r])], -math.inf, 0.0)
            for clique in cliques:
                cols = [z[(c, g.name, k)] for c in clique if (c, g.name, k) in z]
                if len(cols) > 1:
                    m.row(cols, [1.0] * len(cols), 0.0, 1.0)
            if k + 1 < slots[g.name]:
                m.row([yc, y[(g.name, k + 1)]], [1.0, -1.0], 0.0, math.inf)
    t0 = time.perf_counter()
    solver: dict[str, Any] = {"solver": SOLVER, "variables": len(m.cost), "constraints": len(m.rows)}
    counts: dict[tuple[int, str, int], int] = {}
    if z:
        z_cols = list(z.values())
        most_cost = [0.0] * len(m.cost)
        for col in z_cols:
            most_cost[col] = -1.0
        status, values, _, s1 = m.solve(most_cost, time_limit / 2)
        placed = int(sum(values[col] for col in z_cols)) if values is not None else 0
        m.row(z_cols, [1.0] * len(z_cols), float(placed), math.inf)
        status, values, bound, s2 = m.solve(m.cost, max(time_limit - (time.perf_counter() - t0), 0.05))
        if values is None:
            raise KubeschedError(f"HiGHS found no scale-up within the time limit ({status}): raise --time-limit")
        counts = {key: int(values[col]) for key, col in z.items() if values[col] > 0}
        solver.update({"status": status, "podsPlaced": placed, "bound": None if bound is None else round(bound, 6),
                       "seconds": round(s1 + s2, 3)})
    else:
        solver.update({"status": "Optimal", "podsPlaced": 0, "seconds": 0.0})
    # Concrete nodes and pods: used slots renumbered per group, pods in their group's order.
    placements: list[tuple[str, str]] = []
    nodes_of: dict[str, list[tuple[Any, tuple[Pod, ...]]]] = {}
    names: dict[tuple[str, int], str] = {}
    for g in group_list:
        used = sorted({k for (_, gn, k), n in counts.items() if gn == g.name and n > 0})
        for i, k in enumerate(used):
            node, pods = templates[g.name].fresh(f"opt-{i}")
            names[(g.name, k)] = node.name
            nodes_of.setdefault(g.name, []).append((node, pods))
    for c, eg in enumerate(classes):
        queue = list(eg.pods)
        for (cc, gn, k), n in sorted(counts.items(), key=lambda kv: (kv[0][1], kv[0][2])):
            if cc != c:
                continue
            for _ in range(n):
                placements.append((queue.pop(0).key, names[(gn, k)]))
        left.extend((p.key, "no room left in the node groups (maxSize)") for p in queue)
    verified = _verify(objs, result, nodes_of, placements, config, registry)
    new_nodes = {g: len(v) for g, v in nodes_of.items()}
    cost = sum(next(g.price_per_hour for g in groups if g.name == name) * n for name, n in new_nodes.items())
    return OptimalScaleUp(cost, new_nodes, tuple(placements), tuple(left), solver, verified)


def _verify(objs: ClusterObjects, result: SimulationResult, nodes_of: Mapping[str, Sequence[Any]],
            placements: Sequence[tuple[str, str]], config: KubeSchedulerConfiguration | None,
            registry: Mapping[str, Factory] | None) -> int:
    """Apply the placements one pod at a time on a fresh copy of the cluster (the scheduler's
    placements of the pending pods bound, its victims gone, the new nodes and their DaemonSet
    pods added): each must pass the real filters, then is bound (kubesched.whatif.pack.place).
    A rejection is a bug in the model: PackVerificationError."""
    if not placements:
        return 0
    deleted = set(result.deleted)
    pods = []
    for p in objs.pods:
        if p.key in deleted:
            continue
        node = result.final.get(p.key) if not p.node_name else None
        pods.append(dataclasses.replace(p, node_name=node) if node else p)
    new_nodes = [n for v in nodes_of.values() for n, _ in v]
    ds = [p for v in nodes_of.values() for _, ps in v for p in ps]
    copy = dataclasses.replace(objs, nodes=[*objs.nodes, *new_nodes], pods=[*pods, *ds])
    with Simulator(copy, config, deterministic=True, registry=registry) as sim:
        by_key = {p.key: p for p in copy.pods}
        for key, node in placements:
            s = place(sim, by_key[key], node)
            if s is not None:
                raise PackVerificationError(key, node, s)
    return len(placements)
