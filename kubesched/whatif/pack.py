"""The optimal packing of the pending pods: an integer program solved with HiGHS, beside the
scheduler's own (greedy) decisions.

``kubesched pack`` asks how few nodes the cluster's pending pods need, under the same hard
constraints the profile's Filter plugins enforce, and compares the answer with what the
scheduler does one pod at a time. The pipeline (:func:`pack`):

1. **Greedy**: the real deterministic simulation (the conformance procedure,
   :class:`kubesched.simulation.Simulator` with ``deterministic=True``) schedules the pending
   pods; its placements are the baseline and the fallback for every pod the model leaves out.
2. **Not modelled, kept where the scheduler put them**: pods whose feasibility depends on the
   other pods in ways the model does not express (required pod affinity, hard topology spread
   — their own DoNotSchedule constraints or the profile's defaults —, volumes that VolumeBinding,
   VolumeRestrictions, VolumeZone or the volume-limit plugins track, filter plugins the model
   does not know, filter extenders interested in the pod), and the pending pods such a pod's
   affinity or spread selector counts (moving them could break its constraint). Pods the
   scheduler never attempts (other schedulers, scheduling gates, terminating) stay pending.
3. **Feasibility from the real plugins**: on a fresh copy of the cluster where the kept pods are
   bound (each one through the real filters), every other pending pod runs the profile's
   PreFilter and Filter plugins against every node — *before any of them is placed*. That
   matrix carries everything that depends on the node or the running pods alone: node
   selectors and required node affinity (with a profile's addedAffinity), taints and
   tolerations, unschedulable nodes, host ports and anti-affinity against running pods, room
   left. Filters only get stricter as pods are added (for pods without required pod affinity
   or hard spread), so a pair the matrix rejects stays rejected.
4. **What depends on the other pending pods** becomes linear constraints: resources
   (NodeResourcesFit's cpu, memory, ephemeral-storage, extended and hugepages resources, the
   pods count), host ports (at most one pod per node among those whose ports conflict),
   required pod anti-affinity among the pending pods by any topology key (hostname, zone...),
   and DRA devices: per node and device group (the free devices the same claim requests
   select), the devices the real allocator gives each pod's claims there
   (:mod:`kubesched.whatif._packdevices`, which also says which claim shapes are kept instead:
   shared claims, ``allocationMode: All``, choices that depend on the devices taken).
5. **Solve** (:func:`solve_problem`: :func:`build_model`, then :func:`solve_model`), then **verify**: every placement
   is applied one pod at a time onto a fresh copy of the cluster, running the profile's real
   PreFilter and Filter plugins on the assigned node before the pod is bound through the real
   scheduling cycle (:func:`verify_placements`). A rejection is a bug in the model and raises
   :class:`PackVerificationError`.

The model
---------
Identical pending pods (same profile, namespace, labels, requests, host ports, anti-affinity
terms and feasible nodes: a Deployment's replicas) form a *class* ``c`` of ``count_c`` pods.

- ``z[c,n]`` (integer, ``0..ub[c,n]``): pods of class c placed on node n, for the feasible pairs
  only. ``ub`` is the most that could ever fit: count, room left for each resource and for pods,
  1 with host ports, 1 per domain with anti-affinity to itself.
- ``y[n]`` (binary): node n is used, for the nodes that have no pod yet; a node with a running
  (or kept) pod is used whatever happens.
- ``u[c,K,D]`` (binary): class c is present in topology domain D, for classes of an
  anti-affinity clique K that do not repel themselves.

Constraints: ``sum_n z[c,n] <= count_c``; per node and resource ``sum_c req[c,r] z[c,n] <=
room[n,r] * y[n]`` (quantities divided by the gcd of the requests: exact); per node ``sum_c
z[c,n] <= pods_room[n] * y[n]``; per device group g of node n ``sum_c devices[c,g] z[c,n] <=
free devices of g``; per node and host-port clique ``sum z <= 1``; per
anti-affinity clique and domain "at most one member present" (a member that repels itself
counts its pods there, the others their ``u``, with ``sum_{n in D} z[c,n] <= count_c u``); and
``y[a] >= y[b]`` between interchangeable empty nodes (symmetry breaking). Host-port cliques:
pods conflict on a node when they want the same protocol and port and either IP is 0.0.0.0 or
both are the same, so the cliques are, per (protocol, port), each IP with 0.0.0.0. Anti-affinity
cliques come from a greedy edge-clique cover of the conflict graph per topology key (a pair
conflicts when either pod's required anti-affinity term with that key selects the other).

The rows are never looser than the filters: a resource row counts every modelled pod's
request as soon as one pod's profile checks that resource, a port or anti-affinity row applies
as soon as one of the pods' profiles runs NodePorts / InterPodAffinity (with several profiles,
a stricter model than the scheduler's order-dependent checks; with one profile, exact).

Objective, lexicographic: first place as many pods as possible, then use as few nodes as
possible: minimise ``nodes used + W * pods left pending`` with ``W = (empty nodes) + 1``, so one
more pod placed always outweighs any number of nodes. The objective value is therefore the
number of nodes used when every pod is placed.

HiGHS starts from the better of the scheduler's own placement and a first-fit-decreasing
packing (both checked against every constraint), so a time limit still returns a solution at
least as good as the scheduler's (unless the scheduler preempted: the packing evicts nothing).
Models with more than EXACT_COLUMN_LIMIT class x node variables are solved through rounded
requests instead (see :class:`SolverStats`).

Why HiGHS (via highspy): MIT licence, wheels on PyPI for every platform we support (no solver
to install beside it), a MIP solver that reports the best bound and the gap when it stops at
the time limit, and the solver already chosen for the project (a declared dependency).

What the packing does not do: it evicts no running pod (no preemption: pods already bound
stay where they are and keep their nodes used), it does not score (preferred affinities,
spreading preferences and image locality are ignored: only hard constraints count), it does
not call extenders, and nominations (``status.nominatedNodeName``) reserve nothing: every
pending pod is placed by the plan or not at all.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

import highspy
import numpy as np
import numpy.typing as npt
from highspy._core import _Highs

from kubesched.config import KubeSchedulerConfiguration
from kubesched.errors import KubeschedError
from kubesched.framework import PODS_TO_ACTIVATE_KEY, AffinityTerm, CycleState, PodInfo, PodsToActivate, Status
from kubesched.framework.interfaces import BoolArray, IntArray
from kubesched.objects import ClusterObjects, Pod
from kubesched.objects.resources import is_extended_resource_name, is_scalar_resource_name
from kubesched.plugins.dynamicresources.usage import NodeDeviceUse, device_use
from kubesched.plugins.helpers.fiterror import fit_error_message
from kubesched.plugins.helpers.volumes import inline_plugin
from kubesched.plugins.nodeports.plugin import get_container_ports
from kubesched.plugins.registry import Factory
from kubesched.scheduler import NO_NODES_AVAILABLE
from kubesched.simulation import SimulationResult, Simulator
from kubesched.whatif._packdevices import claim_reasons, demand, device_groups
from kubesched.whatif.report import devices_after

FloatArray = npt.NDArray[np.float64]

DEFAULT_TIME_LIMIT = 30.0
SOLVER = f"HiGHS {highspy.HIGHS_VERSION_MAJOR}.{highspy.HIGHS_VERSION_MINOR}.{highspy.HIGHS_VERSION_PATCH}"
NO_EVICTION_NOTE = ("the packing evicts no running pod (no preemption): pods already bound stay where they are, "
                    "and their nodes count as used")

# Filter plugins whose verdict depends only on the node and the pods already bound, for a pod
# without tracked volumes: the feasibility matrix captures them exactly.
STATIC_FILTERS = frozenset((
    "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodeLabel",
    "VolumeRestrictions", "EBSLimits", "GCEPDLimits", "NodeVolumeLimits", "AzureDiskLimits", "CinderLimits",
    "VolumeBinding", "VolumeZone", "NodeDeclaredFeatures",
    # For a pod with claims, what depends on the other pending pods (the devices they take) is
    # the model's device rows (kubesched.whatif._packdevices).
    "DynamicResources",
))
FIT, PORTS, INTER_POD_AFFINITY, SPREAD = "NodeResourcesFit", "NodePorts", "InterPodAffinity", "PodTopologySpread"
MODELLED_FILTERS = frozenset((FIT, PORTS, INTER_POD_AFFINITY, SPREAD))
# Volume sources some filter plugin tracks (claims, inline disks with conflicts or limits).
_TRACKED_VOLUMES = frozenset(("persistentVolumeClaim", "ephemeral", "csi", "gcePersistentDisk",
                              "awsElasticBlockStore", "rbd", "iscsi"))
_WILDCARD_IP = "0.0.0.0"
_DO_NOT_SCHEDULE = "DoNotSchedule"


class PackVerificationError(KubeschedError):
    """A placement of the packing was rejected by the real filters: a bug in the model (not
    bad input). ``pod``, ``node`` and ``status`` say which and why."""

    def __init__(self, pod: str, node: str, status: Status | None, message: str = "") -> None:
        why = message or (f"{status.plugin or 'the scheduling cycle'}: {status.message}" if status else "rejected")
        super().__init__(f"packing verification failed: pod {pod} on node {node} is rejected by {why} "
                         f"(a bug in the packing model)")
        self.pod = pod
        self.node = node
        self.status = status


# ============================================================================ the problem
@dataclass(frozen=True, slots=True, eq=False)
class PodClass:
    """Identical pending pods, interchangeable in the model (queue order)."""

    pods: tuple[Pod, ...]
    requests: IntArray  # per PackProblem.resources, unscaled
    ports: tuple[tuple[str, str, int], ...]  # (ip, protocol, port), sanitized
    # Everything but the requests that makes pods interchangeable (profile, namespace, labels,
    # ports, anti-affinity terms, feasible nodes, devices): classes with equal signatures
    # differ only in their requests, and may be merged by rounding them (coarsen).
    signature: Any = None
    # DRA devices each pod takes from each device group of PackProblem (empty: none).
    devices: IntArray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def count(self) -> int:
        return len(self.pods)

    @property
    def representative(self) -> Pod:
        return self.pods[0]


@dataclass(frozen=True, slots=True)
class AntiAffinityClique:
    """Classes that pairwise repel each other under ``topology_key``: at most one of them may
    be present in any domain of that key. ``repels_itself[i]``: two pods of member i may not
    share a domain either."""

    topology_key: str
    members: tuple[int, ...]
    repels_itself: tuple[bool, ...]


@dataclass(frozen=True, slots=True, eq=False)
class PackProblem:
    """What the model needs, in plain arrays: nodes (N), checked resources (R), pod classes (C).

    ``room[n, r]`` and ``pods_room[n]`` are what is left once running and kept pods are
    counted; ``feasible[c, n]`` is the real filters' verdict before any pending pod is placed;
    ``domains[key][n]`` numbers the node's value of that label (-1: the node lacks it)."""

    nodes: tuple[str, ...]
    used: BoolArray
    resources: tuple[str, ...]
    room: IntArray
    pods_room: IntArray
    classes: tuple[PodClass, ...]
    feasible: BoolArray
    port_cliques: tuple[tuple[int, ...], ...] = ()
    anti_cliques: tuple[AntiAffinityClique, ...] = ()
    domains: Mapping[str, IntArray] = field(default_factory=dict)
    # DRA device groups (G): the node of each (index into nodes), its free devices, a label.
    device_node: IntArray = field(default_factory=lambda: np.zeros(0, np.int64))
    device_room: IntArray = field(default_factory=lambda: np.zeros(0, np.int64))
    device_labels: tuple[str, ...] = ()

    @property
    def counts(self) -> IntArray:
        return np.fromiter((c.count for c in self.classes), np.int64, len(self.classes))

    @property
    def demand(self) -> IntArray:
        """devices[c, g]: the devices a pod of class c takes from device group g."""
        g = len(self.device_room)
        if not g or not self.classes:
            return np.zeros((len(self.classes), g), np.int64)
        return np.stack([c.devices if len(c.devices) == g else np.zeros(g, np.int64) for c in self.classes])

    def device_load(self, counts: IntArray) -> IntArray:
        """Devices taken from each group by the assignment ``counts``."""
        if not len(self.device_room) or not len(self.classes):
            return np.zeros(len(self.device_room), np.int64)
        return np.asarray((self.demand * counts[:, self.device_node]).sum(axis=0), np.int64)

    def upper_bounds(self) -> IntArray:
        """ub[c, n]: the most pods of class c node n could ever take (0 where infeasible)."""
        c_count, n_count = len(self.classes), len(self.nodes)
        if not c_count:
            return np.zeros((0, n_count), np.int64)
        ub = np.minimum(self.counts[:, None], self.pods_room[None, :])
        if self.resources:
            req = np.stack([c.requests for c in self.classes])  # (C, R)
            big = np.iinfo(np.int64).max
            for r in range(len(self.resources)):
                q = req[:, r]
                fit = np.where(q[:, None] > 0, self.room[None, :, r] // np.maximum(q[:, None], 1), big)
                ub = np.minimum(ub, fit)
        for clique in self.port_cliques:
            ub[list(clique), :] = np.minimum(ub[list(clique), :], 1)
        if len(self.device_room):
            big = np.iinfo(np.int64).max
            demand = self.demand
            for g in np.flatnonzero(demand.any(axis=0)).tolist():
                q = demand[:, g]
                n = int(self.device_node[g])
                ub[:, n] = np.minimum(ub[:, n], np.where(q > 0, int(self.device_room[g]) // np.maximum(q, 1), big))
        for k in self.anti_cliques:
            dom = self.domains[k.topology_key]
            for c, itself in zip(k.members, k.repels_itself, strict=True):
                if itself:
                    ub[c, dom >= 0] = np.minimum(ub[c, dom >= 0], 1)
        return np.where(self.feasible, ub, 0)

    @property
    def weight(self) -> float:
        """W, the cost of a pod left pending in nodes: more than all the empty nodes."""
        return float((~self.used).sum() + 1)

    def objective(self, counts: IntArray) -> float:
        """Nodes used + W x pods left pending."""
        newly = (counts.sum(axis=0) > 0) & ~self.used if len(self.classes) else np.zeros(len(self.nodes), np.bool_)
        return float(self.used.sum() + newly.sum()) + self.weight * float(self.counts.sum() - counts.sum())

    def violations(self, counts: IntArray) -> list[str]:
        """Every constraint ``counts[c, n]`` breaks, checked exactly in integers (empty: the
        assignment satisfies the model)."""
        out: list[str] = []
        if counts.shape != (len(self.classes), len(self.nodes)):
            return [f"counts has shape {counts.shape}"]
        if not len(self.classes):
            return out
        if (counts < 0).any():
            out.append("negative count")
        bad = np.argwhere((counts > 0) & ~self.feasible)
        out.extend(f"class {c} on infeasible node {self.nodes[n]}" for c, n in bad.tolist())
        over = np.flatnonzero(counts.sum(axis=1) > self.counts)
        out.extend(f"class {c} placed more than its {self.classes[c].count} pods" for c in over.tolist())
        if self.resources:
            req = np.stack([c.requests for c in self.classes])
            load = req.T @ counts  # (R, N)
            for r, n in np.argwhere(load.T > self.room).tolist():
                out.append(f"{self.resources[r]} over on {self.nodes[n]}")
        for n in np.flatnonzero(counts.sum(axis=0) > self.pods_room).tolist():
            out.append(f"too many pods on {self.nodes[n]}")
        for g in np.flatnonzero(self.device_load(counts) > self.device_room).tolist():
            out.append(f"devices over in group {self.device_labels[g] if g < len(self.device_labels) else g}")
        for clique in self.port_cliques:
            for n in np.flatnonzero(counts[list(clique), :].sum(axis=0) > 1).tolist():
                out.append(f"host port conflict on {self.nodes[n]}")
        for k in self.anti_cliques:
            dom = self.domains[k.topology_key]
            for d in range(int(dom.max(initial=-1)) + 1):
                in_d = counts[:, dom == d].sum(axis=1)
                present = [c for c in k.members if in_d[c] > 0]
                if len(present) > 1 or any(in_d[c] > 1 for c, s in zip(k.members, k.repels_itself, strict=True) if s):
                    out.append(f"anti-affinity ({k.topology_key}) broken in domain {d}")
        return out


# ============================================================================ the model
@dataclass(frozen=True, slots=True, eq=False)
class PackModel:
    """The integer program, as HiGHS takes it: columns (z, then y, then u), rows in compressed
    sparse row form, an objective offset. :meth:`column_values` turns an assignment into a
    column vector (for a MIP start); :meth:`counts_of` reads one back."""

    problem: PackProblem
    col_cost: FloatArray
    col_lower: FloatArray
    col_upper: FloatArray
    integrality: npt.NDArray[np.int32]
    row_lower: FloatArray
    row_upper: FloatArray
    a_start: npt.NDArray[np.int32]
    a_index: npt.NDArray[np.int32]
    a_value: FloatArray
    offset: float
    weight: float  # W: the cost of one pod left pending, in nodes
    z_class: IntArray
    z_node: IntArray
    y_node: IntArray
    u_class: IntArray
    u_clique: IntArray
    u_domain: IntArray

    @property
    def num_cols(self) -> int:
        return len(self.col_cost)

    @property
    def num_rows(self) -> int:
        return len(self.row_lower)

    @property
    def num_nonzeros(self) -> int:
        return len(self.a_value)

    def counts_of(self, values: FloatArray) -> IntArray:
        p = self.problem
        counts = np.zeros((len(p.classes), len(p.nodes)), np.int64)
        z = np.rint(values[: len(self.z_class)]).astype(np.int64)
        np.add.at(counts, (self.z_class, self.z_node), z)
        return counts

    def column_values(self, counts: IntArray) -> FloatArray:
        """The column vector of an assignment: z from ``counts``, y = node gets a pod, u =
        class present in the domain."""
        p = self.problem
        values = np.zeros(self.num_cols, np.float64)
        z_count = len(self.z_class)
        values[:z_count] = counts[self.z_class, self.z_node]
        per_node = counts.sum(axis=0)
        values[z_count: z_count + len(self.y_node)] = per_node[self.y_node] > 0
        base = z_count + len(self.y_node)
        for j, (c, k, d) in enumerate(zip(self.u_class.tolist(), self.u_clique.tolist(), self.u_domain.tolist(),
                                          strict=True)):
            dom = p.domains[p.anti_cliques[k].topology_key]
            values[base + j] = counts[c, dom == d].sum() > 0
        return values

    def objective_of(self, counts: IntArray) -> float:
        return float(self.col_cost @ self.column_values(counts) + self.offset)


class _Rows:
    """Rows accumulated as (row, column, value) blocks, then turned into CSR."""

    def __init__(self) -> None:
        self.rows: list[IntArray] = []
        self.cols: list[IntArray] = []
        self.vals: list[FloatArray] = []
        self.lower: list[FloatArray] = []
        self.upper: list[FloatArray] = []
        self.count = 0

    def add(self, lower: FloatArray, upper: FloatArray) -> int:
        """New rows; returns the index of the first."""
        start = self.count
        self.lower.append(np.asarray(lower, np.float64))
        self.upper.append(np.asarray(upper, np.float64))
        self.count += len(lower)
        return start

    def entries(self, rows: IntArray, cols: IntArray, vals: FloatArray | float) -> None:
        rows = np.asarray(rows, np.int64)
        self.rows.append(rows)
        self.cols.append(np.asarray(cols, np.int64))
        self.vals.append(np.broadcast_to(np.asarray(vals, np.float64), rows.shape).copy())

    def csr(self) -> tuple[FloatArray, FloatArray, npt.NDArray[np.int32], npt.NDArray[np.int32], FloatArray]:
        rows = np.concatenate(self.rows) if self.rows else np.zeros(0, np.int64)
        cols = np.concatenate(self.cols) if self.cols else np.zeros(0, np.int64)
        vals = np.concatenate(self.vals) if self.vals else np.zeros(0, np.float64)
        keep = vals != 0
        rows, cols, vals = rows[keep], cols[keep], vals[keep]
        order = np.lexsort((cols, rows))
        rows, cols, vals = rows[order], cols[order], vals[order]
        start = np.zeros(self.count, np.int64)
        if self.count:
            counts = np.bincount(rows, minlength=self.count)
            start[1:] = np.cumsum(counts)[:-1]
        lower = np.concatenate(self.lower) if self.lower else np.zeros(0)
        upper = np.concatenate(self.upper) if self.upper else np.zeros(0)
        return lower, upper, start.astype(np.int32), cols.astype(np.int32), vals


def _scaled(problem: PackProblem) -> tuple[IntArray, IntArray]:
    """Requests (C, R) and room (N, R) divided by each resource's gcd of the requests (room
    rounded down): ``sum req <= room`` holds exactly as before, with smaller numbers."""
    req = np.stack([c.requests for c in problem.classes]) if problem.classes else np.zeros((0, len(problem.resources)),
                                                                                             np.int64)
    room = problem.room.copy()
    req = req.copy()
    for r in range(len(problem.resources)):
        positive = [int(v) for v in req[:, r] if v > 0]
        g = reduce(math.gcd, positive, 0)
        if g > 1:
            req[:, r] //= g
            room[:, r] //= g
    return req, room


def interchangeable_nodes(problem: PackProblem, ub: IntArray | None = None,
                          room: IntArray | None = None) -> list[list[int]]:
    """Groups (of two or more) of empty nodes that any assignment may swap: same room, same
    feasible classes and bounds, and in the same domain of every anti-affinity key (or each
    alone in its own)."""
    p = problem
    ub = p.upper_bounds() if ub is None else ub
    room = p.room if room is None else room
    keys = sorted(p.domains)
    sizes = {key: np.bincount(p.domains[key][p.domains[key] >= 0]) for key in keys}
    devices: dict[int, list[tuple[bytes, int]]] = {}
    if len(p.device_room):
        demand = p.demand
        for g in range(len(p.device_room)):
            devices.setdefault(int(p.device_node[g]), []).append((demand[:, g].tobytes(), int(p.device_room[g])))
    signature: dict[tuple[Any, ...], list[int]] = {}
    for n in np.flatnonzero(~p.used).tolist():
        where: list[int] = []
        for key in keys:
            d = int(p.domains[key][n])
            where.append(-1 if d < 0 else (-2 if int(sizes[key][d]) == 1 else d))
        sig = (ub[:, n].tobytes(), room[n].tobytes(), int(p.pods_room[n]), tuple(where),
               tuple(sorted(devices.get(n, ()))))
        signature.setdefault(sig, []).append(n)
    return [group for group in signature.values() if len(group) > 1]


def relabel(problem: PackProblem, counts: IntArray, prefer: IntArray) -> IntArray:
    """``counts`` with the contents of interchangeable nodes permuted so that as many pods as
    possible sit where ``prefer`` (class x node counts, e.g. the scheduler's placement) has
    them: the same packing, fewer pods moved. Greedy matching, largest overlap first."""
    out = counts.copy()
    for group in interchangeable_nodes(problem):
        g = np.asarray(group, np.int64)
        # overlap[i, j]: pods of node g[i]'s contents that prefer node g[j].
        overlap = np.minimum(counts[:, g][:, :, None], prefer[:, g][:, None, :]).sum(axis=0)
        target = np.full(len(g), -1, np.int64)
        taken = np.zeros(len(g), np.bool_)
        for flat in np.argsort(-overlap, axis=None, kind="stable").tolist():
            i, j = divmod(flat, len(g))
            if target[i] < 0 and not taken[j]:
                target[i] = j
                taken[j] = True
        out[:, g[target]] = counts[:, g]
    return out


def build_model(problem: PackProblem) -> PackModel:
    """The integer program of ``problem`` (see the module docstring), with numpy only."""
    p = problem
    c_count, n_count = len(p.classes), len(p.nodes)
    ub = p.upper_bounds()
    z_class, z_node = (a.astype(np.int64) for a in np.nonzero(ub > 0))
    z_count = len(z_class)
    z_ub = ub[z_class, z_node]
    # y: nodes with no pod yet that some pod could take.
    candidate = np.zeros(n_count, np.bool_)
    candidate[z_node] = True
    y_node = np.flatnonzero(candidate & ~p.used).astype(np.int64)
    y_col = np.full(n_count, -1, np.int64)
    y_col[y_node] = z_count + np.arange(len(y_node))
    weight = p.weight
    req, room = _scaled(p)
    rows = _Rows()

    # Each class places at most its pods.
    start = rows.add(np.full(c_count, -np.inf), p.counts.astype(np.float64))
    rows.entries(start + z_class, np.arange(z_count), 1.0)

    # Resources, then pods: sum_c q[c] z[c,n] <= room[n] * y[n] (or <= room[n] on a used node,
    # where the row is kept only if it can bind).
    for r in range(len(p.resources) + 1):
        if r < len(p.resources):
            q = req[z_class, r].astype(np.float64)
            cap = room[:, r].astype(np.float64)
        else:
            q = np.ones(z_count, np.float64)
            cap = np.minimum(p.pods_room, np.bincount(z_node, weights=z_ub, minlength=n_count)).astype(np.float64)
        most = np.bincount(z_node, weights=q * z_ub, minlength=n_count)
        need = ((y_col >= 0) & (most > 0)) | (most > cap)
        nodes = np.flatnonzero(need)
        if not len(nodes):
            continue
        row_of = np.full(n_count, -1, np.int64)
        row_of[nodes] = np.arange(len(nodes))
        with_y = y_col[nodes] >= 0
        start = rows.add(np.full(len(nodes), -np.inf), np.where(with_y, 0.0, cap[nodes]))
        sel = need[z_node]
        rows.entries(start + row_of[z_node[sel]], np.flatnonzero(sel), q[sel])
        rows.entries(start + np.flatnonzero(with_y), y_col[nodes[with_y]], -cap[nodes[with_y]])

    # DRA devices: per device group, sum_c devices[c, g] z[c, node(g)] <= free devices of g
    # (only where the most the pods could take passes them).
    if len(p.device_room) and z_count:
        demand = p.demand
        by_node = np.argsort(z_node, kind="stable")
        bounds = np.searchsorted(z_node[by_node], np.arange(n_count + 1))
        for g in np.flatnonzero(demand.any(axis=0)).tolist():
            n = int(p.device_node[g])
            idx = by_node[bounds[n]:bounds[n + 1]]
            q = demand[z_class[idx], g].astype(np.float64)
            idx, q = idx[q > 0], q[q > 0]
            if not len(idx) or float((q * z_ub[idx]).sum()) <= float(p.device_room[g]):
                continue
            row = rows.add(np.array([-np.inf]), np.array([float(p.device_room[g])]))
            rows.entries(np.full(len(idx), row, np.int64), idx, q)

    # Host ports: per clique and node, at most one pod.
    for clique in p.port_cliques:
        members = np.isin(z_class, np.asarray(clique, np.int64))
        per_node = np.bincount(z_node[members], weights=z_ub[members], minlength=n_count)
        nodes = np.flatnonzero(per_node > 1)
        if not len(nodes):
            continue
        row_of = np.full(n_count, -1, np.int64)
        row_of[nodes] = np.arange(len(nodes))
        start = rows.add(np.full(len(nodes), -np.inf), np.ones(len(nodes)))
        sel = members & (row_of[z_node] >= 0)
        rows.entries(start + row_of[z_node[sel]], np.flatnonzero(sel), 1.0)

    # Anti-affinity: per clique and domain, at most one member present. A member that repels
    # itself counts its pods there; any other member its presence u[c, D], with
    # sum_{n in D} z[c, n] <= most * u[c, D].
    u_class: list[IntArray] = []
    u_clique: list[IntArray] = []
    u_domain: list[IntArray] = []
    u_next = z_count + len(y_node)
    for ki, k in enumerate(p.anti_cliques):
        dom = p.domains[k.topology_key]
        z_dom = dom[z_node]
        position = np.full(c_count, -1, np.int64)
        position[list(k.members)] = np.arange(len(k.members))
        itself = np.asarray(k.repels_itself, np.bool_)
        in_k = (position[z_class] >= 0) & (z_dom >= 0)
        selfish = np.flatnonzero(in_k & itself[np.maximum(position[z_class], 0)])
        others = np.flatnonzero(in_k & ~itself[np.maximum(position[z_class], 0)])
        # Presence columns: one per (class, domain) pair among the other members.
        pair_keys = z_class[others] * (int(dom.max(initial=0)) + 1) + z_dom[others]
        pairs, inverse = np.unique(pair_keys, return_inverse=True)
        pair_class = pairs // (int(dom.max(initial=0)) + 1)
        pair_domain = pairs % (int(dom.max(initial=0)) + 1)
        u_cols = u_next + np.arange(len(pairs))
        u_next += len(pairs)
        u_class.append(pair_class)
        u_clique.append(np.full(len(pairs), ki, np.int64))
        u_domain.append(pair_domain)
        if len(pairs):
            most = np.bincount(inverse, weights=z_ub[others], minlength=len(pairs))
            most = np.minimum(most, p.counts[pair_class])
            link = rows.add(np.full(len(pairs), -np.inf), np.zeros(len(pairs)))
            rows.entries(link + inverse, others, 1.0)
            rows.entries(link + np.arange(len(pairs)), u_cols, -most)
        # The clique rows, for the domains where more than one presence is possible.
        n_dom = int(dom.max(initial=-1)) + 1
        total = (np.bincount(z_dom[selfish], weights=z_ub[selfish], minlength=n_dom)
                 + np.bincount(pair_domain, minlength=n_dom))
        doms = np.flatnonzero(total > 1)
        if not len(doms):
            continue
        row_of = np.full(n_dom, -1, np.int64)
        row_of[doms] = np.arange(len(doms))
        start = rows.add(np.full(len(doms), -np.inf), np.ones(len(doms)))
        s_sel = selfish[row_of[z_dom[selfish]] >= 0]
        rows.entries(start + row_of[z_dom[s_sel]], s_sel, 1.0)
        p_sel = np.flatnonzero(row_of[pair_domain] >= 0)
        rows.entries(start + row_of[pair_domain[p_sel]], u_cols[p_sel], 1.0)

    # Symmetry: interchangeable empty nodes are used in order.
    for group in interchangeable_nodes(p, ub, room):
        group = [n for n in group if y_col[n] >= 0]
        if len(group) < 2:
            continue
        m = len(group) - 1
        start = rows.add(np.zeros(m), np.full(m, np.inf))
        rows.entries(start + np.arange(m), y_col[group[:-1]], 1.0)
        rows.entries(start + np.arange(m), y_col[group[1:]], -1.0)

    num_cols = u_next
    col_cost = np.zeros(num_cols)
    col_cost[:z_count] = -weight
    col_cost[z_count: z_count + len(y_node)] = 1.0
    col_upper = np.ones(num_cols)
    col_upper[:z_count] = z_ub
    lower, upper, a_start, a_index, a_value = rows.csr()
    return PackModel(
        problem=p, col_cost=col_cost, col_lower=np.zeros(num_cols), col_upper=col_upper,
        integrality=np.ones(num_cols, np.int32), row_lower=lower, row_upper=upper,
        a_start=a_start, a_index=a_index, a_value=a_value,
        offset=float(p.used.sum()) + weight * float(p.counts.sum()), weight=weight,
        z_class=z_class, z_node=z_node, y_node=y_node,
        u_class=np.concatenate(u_class) if u_class else np.zeros(0, np.int64),
        u_clique=np.concatenate(u_clique) if u_clique else np.zeros(0, np.int64),
        u_domain=np.concatenate(u_domain) if u_domain else np.zeros(0, np.int64),
    )


# ============================================================================ heuristics
def first_fit_decreasing(problem: PackProblem) -> IntArray:
    """A packing by hand, for the MIP start: classes by decreasing size (their largest share
    of a node), each pod on the used node it leaves the least room on (best fit), else on a
    new node (largest first)."""
    p = problem
    c_count, n_count = len(p.classes), len(p.nodes)
    counts = np.zeros((c_count, n_count), np.int64)
    if not c_count:
        return counts
    ub = p.upper_bounds()
    req = np.stack([c.requests for c in p.classes]).astype(np.float64)
    room = p.room.astype(np.float64).copy()
    pods_room = p.pods_room.copy()
    scale = np.maximum(room.max(axis=0, initial=0.0), 1.0) if p.resources else np.ones(0)
    share = (req / scale).max(axis=1, initial=0.0)
    opened = p.used.copy()
    capacity = (room / scale).sum(axis=1) if p.resources else np.zeros(n_count)
    open_order = np.lexsort((np.arange(n_count), -capacity))
    open_rank = np.empty(n_count, np.int64)
    open_rank[open_order] = np.arange(n_count)
    demand = p.demand
    device_room = p.device_room.copy()
    port_taken = np.zeros((len(p.port_cliques), n_count), np.bool_)
    ports_of: list[list[int]] = [[] for _ in range(c_count)]
    for i, clique in enumerate(p.port_cliques):
        for c in clique:
            ports_of[c].append(i)
    # Anti-affinity: per clique, the member present in each domain (-1: none) and how many.
    present = [np.full(int(p.domains[k.topology_key].max(initial=-1)) + 1, -1, np.int64) for k in p.anti_cliques]
    anti_of: list[list[tuple[int, bool]]] = [[] for _ in range(c_count)]
    for i, k in enumerate(p.anti_cliques):
        for c, itself in zip(k.members, k.repels_itself, strict=True):
            anti_of[c].append((i, itself))
    for c in np.lexsort((np.arange(c_count), -share)).tolist():
        q = req[c]
        for _ in range(p.classes[c].count):
            ok = (counts[c] < ub[c]) & (pods_room > 0)
            if p.resources:
                ok &= (room >= q).all(axis=1)
            for i in ports_of[c]:
                ok &= ~port_taken[i]
            groups = np.flatnonzero(demand[c]) if demand.shape[1] else np.zeros(0, np.int64)
            if len(groups):
                short = groups[device_room[groups] < demand[c, groups]]
                ok[p.device_node[short]] = False
            for i, itself in anti_of[c]:
                dom = p.domains[p.anti_cliques[i].topology_key]
                if not len(present[i]):
                    continue
                here = np.where(dom >= 0, present[i][np.maximum(dom, 0)], -1)
                ok &= (dom < 0) | (here == -1) | ((here == c) & (not itself))
            if not ok.any():
                break
            used_ok = ok & opened
            if used_ok.any():
                slack = ((room - q) / scale).sum(axis=1) if p.resources else -counts.sum(axis=0).astype(np.float64)
                cand = np.flatnonzero(used_ok)
                n = int(cand[np.argmin(slack[cand])])
            else:
                cand = np.flatnonzero(ok)
                n = int(cand[np.argmin(open_rank[cand])])
            counts[c, n] += 1
            room[n] -= q
            pods_room[n] -= 1
            if len(groups):
                here = groups[p.device_node[groups] == n]
                device_room[here] -= demand[c, here]
            opened[n] = True
            for i in ports_of[c]:
                port_taken[i, n] = True
            for i, _ in anti_of[c]:
                d = int(p.domains[p.anti_cliques[i].topology_key][n])
                if d >= 0:
                    present[i][d] = c
    return counts


# ============================================================================ solving
@dataclass(frozen=True, slots=True)
class SolverStats:
    """How the solve went. ``objective`` is nodes used + W x pods left pending (W in
    :attr:`weight`); with every pod placed it is the number of nodes used, and ``bound`` a
    proven lower bound on it (rounded up: the objective takes integer values). ``gap`` =
    (objective - bound) / objective.

    ``method``: ``exact`` (one model, one binary or integer variable per class and feasible
    node), or ``rounded`` for models too large to solve directly: pods whose requests differ
    by less than :data:`ROUNDING` are merged, their requests rounded *up* for the model whose
    solutions are used (any of them fits the real requests) and rounded *down* for the model
    whose bound is reported (a relaxation: its bound holds for the real problem). ``solves``
    describes each HiGHS run."""

    solver: str
    status: str  # Optimal | TimeLimit | Feasible | Infeasible | Interrupted | ... (HiGHS's model status)
    has_solution: bool
    objective: float | None
    bound: float | None
    gap: float | None
    weight: float
    time_limit: float
    build_seconds: float
    solve_seconds: float
    variables: int
    constraints: int
    nonzeros: int
    start: str  # the MIP start given to HiGHS / the origin of the solution kept
    start_objective: float | None
    method: str = "exact"
    solves: tuple[str, ...] = ()
    nodes_in_use: int = 0  # nodes with a pod before placement (part of every objective)

    @property
    def pods_left(self) -> int | None:
        """Pods the solution leaves pending: objective = nodes used + W x pods left, with
        nodes used - nodes in use < W."""
        if self.objective is None:
            return None
        return int((self.objective - self.nodes_in_use + 1e-6) // self.weight)

    @property
    def nodes_used(self) -> int | None:
        left = self.pods_left
        return None if left is None or self.objective is None else int(round(self.objective - self.weight * left))

    @property
    def placed_proven(self) -> bool:
        """No assignment places more pods (the bound rules out one fewer pod left pending)."""
        left = self.pods_left
        if left is None:
            return False
        if left == 0:
            return True
        # Leaving one pod fewer pending costs at most every node + W x (left - 1).
        most = self.nodes_in_use + (self.weight - 1) + self.weight * (left - 1)
        return self.bound is not None and self.bound > most + 1e-6

    @property
    def nodes_bound(self) -> float | None:
        """A lower bound on the nodes used by any assignment placing as many pods."""
        left = self.pods_left
        if left is None or self.bound is None or not self.placed_proven:
            return None
        return max(float(self.nodes_in_use), self.bound - self.weight * left)

    @property
    def nodes_gap(self) -> float | None:
        return _gap(None if self.nodes_used is None else float(self.nodes_used), self.nodes_bound)

    def as_dict(self) -> dict[str, Any]:
        return {
            "solver": self.solver, "status": self.status, "hasSolution": self.has_solution,
            "objective": self.objective, "bound": self.bound, "gap": self.gap, "podWeight": self.weight,
            "timeLimitSeconds": self.time_limit, "buildSeconds": round(self.build_seconds, 3),
            "solveSeconds": round(self.solve_seconds, 3), "variables": self.variables,
            "constraints": self.constraints, "nonzeros": self.nonzeros, "start": self.start,
            "startObjective": self.start_objective, "method": self.method, "solves": list(self.solves),
            "podsLeft": self.pods_left, "nodesUsed": self.nodes_used, "maxPlacedProven": self.placed_proven,
            "nodesBound": self.nodes_bound, "nodesGap": self.nodes_gap,
        }


_STATUS_NAMES = {
    "kOptimal": "Optimal", "kTimeLimit": "TimeLimit", "kInfeasible": "Infeasible", "kInterrupt": "Interrupted",
    "kIterationLimit": "IterationLimit", "kSolutionLimit": "SolutionLimit", "kUnbounded": "Unbounded",
    "kUnboundedOrInfeasible": "UnboundedOrInfeasible", "kMemoryLimit": "MemoryLimit", "kObjectiveBound": "ObjectiveBound",
    "kObjectiveTarget": "ObjectiveTarget", "kModelEmpty": "Optimal", "kSolveError": "SolveError",
    "kNotset": "NotSolved", "kLoadError": "LoadError", "kModelError": "ModelError", "kPresolveError": "PresolveError",
    "kPostsolveError": "PostsolveError", "kUnknown": "Unknown",
}
# Models with more z columns than this are solved through rounded requests (see SolverStats).
EXACT_COLUMN_LIMIT = 25_000
# Requests are rounded to a power-of-two step of at most this share of their value.
ROUNDING = 0.02


def _status_name(status: Any) -> str:
    name = str(getattr(status, "name", status)).rsplit(".", 1)[-1]
    return _STATUS_NAMES.get(name, name.removeprefix("k"))


def _finite(v: float) -> float | None:
    return float(v) if math.isfinite(v) and abs(v) < 1e29 else None


def _integral_bound(bound: float | None, objective: float | None) -> float | None:
    """A lower bound on an integer objective may be rounded up (never past the objective)."""
    if bound is None:
        return None
    b = float(math.ceil(bound - 1e-6))
    return min(b, objective) if objective is not None else b


def _gap(objective: float | None, bound: float | None) -> float | None:
    if objective is None or bound is None:
        return None
    return max(0.0, (objective - bound) / abs(objective)) if objective else 0.0


def solve_model(model: PackModel, *, time_limit: float = DEFAULT_TIME_LIMIT,
                starts: Sequence[tuple[str, IntArray]] = ()) -> tuple[IntArray, SolverStats]:
    """Solve with HiGHS within ``time_limit`` seconds, starting from the best of ``starts``
    (name, counts) that satisfies the model. Returns the assignment (class x node counts) and
    the solver's figures. Should HiGHS stop without a solution, the best start is returned."""
    p = model.problem
    best_name, best_counts, best_obj = "none", np.zeros((len(p.classes), len(p.nodes)), np.int64), None
    for name, counts in starts:
        if p.violations(counts):
            continue
        obj = model.objective_of(counts)
        if best_obj is None or obj < best_obj:
            best_name, best_counts, best_obj = name, counts, obj
    t0 = time.perf_counter()
    if model.num_cols == 0:
        # Nothing to decide: no pending pod can go anywhere (or there is none).
        obj = model.offset
        return best_counts, SolverStats(SOLVER, "Optimal", True, obj, obj, 0.0, model.weight, time_limit, 0.0,
                                        time.perf_counter() - t0, 0, 0, 0, best_name, best_obj)
    # highspy.Highs() prints HiGHS's banner on stdout (C level) before any option can be set,
    # which would corrupt -o json: use the core class (exported by highspy) with output off.
    h = _Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", float(max(time_limit, 0.01)))
    h.setOptionValue("mip_rel_gap", 0.0)
    # The objective takes integer values: a gap below 1 proves optimality.
    h.setOptionValue("mip_abs_gap", 0.999)
    if model.num_cols > EXACT_COLUMN_LIMIT:
        # Symmetry detection on large models overruns the time limit (it is not interrupted).
        h.setOptionValue("mip_detect_symmetry", False)
    status = h.passModel(
        model.num_cols, model.num_rows, model.num_nonzeros, 2, 1, model.offset,  # row-wise, minimise
        model.col_cost, model.col_lower, model.col_upper, model.row_lower, model.row_upper,
        model.a_start, model.a_index, model.a_value, model.integrality)
    if status == highspy.HighsStatus.kError:
        raise KubeschedError("HiGHS rejected the packing model (a bug)")
    if best_obj is not None:
        values = model.column_values(best_counts)
        h.setSolution(len(values), np.arange(len(values), dtype=np.int32), values)
    h.run()
    seconds = time.perf_counter() - t0
    info = h.getInfo()
    status_name = _status_name(h.getModelStatus())
    has_solution = int(info.primal_solution_status) == int(highspy.kSolutionStatusFeasible)
    counts, objective, origin = best_counts, best_obj, best_name
    bound = _finite(info.mip_dual_bound)
    if has_solution:
        found = model.counts_of(np.asarray(h.getSolution().col_value, np.float64))
        # Rounding or tolerances may break a constraint: then the checked start stays.
        if not p.violations(found):
            counts, objective = found, model.objective_of(found)
            origin = best_name if best_obj is not None and objective >= best_obj else "HiGHS"
    if status_name == "Infeasible":
        bound = None  # cannot be (placing nothing is feasible): reported as it is
    bound = _integral_bound(bound, objective)
    h.clear()
    return counts, SolverStats(SOLVER, status_name, objective is not None, objective, bound, _gap(objective, bound),
                               model.weight, time_limit, 0.0, seconds, model.num_cols, model.num_rows,
                               model.num_nonzeros, origin, best_obj,
                               solves=(f"{status_name} in {seconds:.2f} s",))


def _rounded(v: int, up: bool) -> int:
    """``v`` rounded to a power-of-two step of at most ROUNDING x v (exact below 1 / ROUNDING)."""
    if v <= 0:
        return v
    step = 1 << max(0, int(math.floor(math.log2(v * ROUNDING))) if v * ROUNDING >= 1 else 0)
    return -(-v // step) * step if up else (v // step) * step


def coarsen(problem: PackProblem, *, up: bool) -> tuple[PackProblem, IntArray]:
    """``problem`` with classes of equal signatures merged after rounding their requests up
    (a restriction: its solutions fit the real requests) or down (a relaxation: its bound
    holds). Returns the coarse problem and, per class of ``problem``, its coarse class."""
    p = problem
    index: dict[tuple[Any, ...], int] = {}
    members: list[list[int]] = []
    requests: list[IntArray] = []
    of = np.zeros(len(p.classes), np.int64)
    for c, cls in enumerate(p.classes):
        req = np.asarray([_rounded(int(v), up) for v in cls.requests.tolist()], np.int64)
        key = (cls.signature if cls.signature is not None else ("class", c), req.tobytes())
        k = index.get(key)
        if k is None:
            k = index[key] = len(members)
            members.append([])
            requests.append(req)
        members[k].append(c)
        of[c] = k
    classes = tuple(PodClass(tuple(pod for c in ms for pod in p.classes[c].pods), requests[k], p.classes[ms[0]].ports,
                             p.classes[ms[0]].signature, p.classes[ms[0]].devices) for k, ms in enumerate(members))
    feasible = np.stack([p.feasible[ms[0]] for ms in members]) if members else p.feasible[:0]
    ports = tuple(sorted({tuple(sorted({int(of[c]) for c in clique})) for clique in p.port_cliques}))
    anti: dict[tuple[str, tuple[int, ...]], tuple[bool, ...]] = {}
    for clique in p.anti_cliques:
        merged = sorted({int(of[c]): itself for c, itself in zip(clique.members, clique.repels_itself,
                                                                  strict=True)}.items())
        anti[(clique.topology_key, tuple(c for c, _ in merged))] = tuple(s for _, s in merged)
    cliques = tuple(AntiAffinityClique(key, ms, selfs) for (key, ms), selfs in sorted(anti.items()))
    return dataclasses.replace(p, classes=classes, feasible=feasible, port_cliques=ports, anti_cliques=cliques), of


def _refine(problem: PackProblem, coarse: PackProblem, of: IntArray, counts: IntArray) -> IntArray:
    """Coarse class counts back to ``problem``'s classes (each coarse class's pods on a node,
    taken from its classes in order)."""
    out = np.zeros((len(problem.classes), len(problem.nodes)), np.int64)
    left = problem.counts.copy()
    for k in range(len(coarse.classes)):
        fine = np.flatnonzero(of == k)
        for n in np.flatnonzero(counts[k]).tolist():
            need = int(counts[k, n])
            for c in fine.tolist():
                take = min(need, int(left[c]))
                out[c, n] += take
                left[c] -= take
                need -= take
                if not need:
                    break
    return out


def solve_problem(problem: PackProblem, *, time_limit: float = DEFAULT_TIME_LIMIT,
                  starts: Sequence[tuple[str, IntArray]] = ()) -> tuple[IntArray, SolverStats]:
    """Build and solve ``problem`` within ``time_limit`` seconds (building included): the
    exact model when it has at most EXACT_COLUMN_LIMIT class x node variables, else the
    rounded pair of models (see SolverStats). ``starts`` are assignments of ``problem``."""
    t0 = time.perf_counter()
    columns = int((problem.upper_bounds() > 0).sum())
    if columns <= EXACT_COLUMN_LIMIT:
        model = build_model(problem)
        built = time.perf_counter() - t0
        counts, stats = solve_model(model, time_limit=max(time_limit - built, 0.5),
                                    starts=[*starts, ("first-fit decreasing", first_fit_decreasing(problem))])
        return counts, dataclasses.replace(stats, time_limit=time_limit, build_seconds=built)
    # Rounded: the relaxation first (a third of the time, for the bound), then the restriction.
    low, _ = coarsen(problem, up=False)
    high, of = coarsen(problem, up=True)
    low_model, high_model = build_model(low), build_model(high)
    built = time.perf_counter() - t0
    remaining = max(time_limit - built, 1.0)
    _, low_stats = solve_model(low_model, time_limit=remaining / 3,
                               starts=[("first-fit decreasing", first_fit_decreasing(low))])
    high_starts = [("first-fit decreasing", first_fit_decreasing(high))]
    for name, counts in starts:
        coarse = np.zeros((len(high.classes), len(high.nodes)), np.int64)
        np.add.at(coarse, of, counts)
        high_starts.append((name, coarse))
    high_counts, high_stats = solve_model(high_model, time_limit=max(time_limit - (time.perf_counter() - t0), 0.5),
                                          starts=high_starts)
    # The best real assignment: the restricted model's, or a start of the real problem.
    candidates = [("HiGHS (requests rounded up)", _refine(problem, high, of, high_counts)),
                  *starts, ("first-fit decreasing", first_fit_decreasing(problem))]
    best_name, best_counts, best_obj = "none", np.zeros((len(problem.classes), len(problem.nodes)), np.int64), None
    for name, counts in candidates:
        if problem.violations(counts):
            continue
        obj = problem.objective(counts)
        if best_obj is None or obj < best_obj:
            best_name, best_counts, best_obj = name, counts, obj
    bound = _integral_bound(low_stats.bound, best_obj)
    if best_obj is not None and bound is not None and bound >= best_obj:
        status = "Optimal"
    elif "TimeLimit" in (low_stats.status, high_stats.status):
        status = "TimeLimit"
    else:
        status = "Feasible"
    solves = (f"requests rounded down (bound), {len(low.classes)} classes: {low_stats.status} in "
              f"{low_stats.solve_seconds:.2f} s, bound {low_stats.bound}",
              f"requests rounded up (solution), {len(high.classes)} classes: {high_stats.status} in "
              f"{high_stats.solve_seconds:.2f} s, objective {high_stats.objective}")
    return best_counts, SolverStats(
        SOLVER, status, best_obj is not None, best_obj, bound, _gap(best_obj, bound), problem.weight, time_limit,
        built, low_stats.solve_seconds + high_stats.solve_seconds, low_model.num_cols + high_model.num_cols,
        low_model.num_rows + high_model.num_rows, low_model.num_nonzeros + high_model.num_nonzeros, best_name,
        high_stats.start_objective, method="rounded", solves=solves)


# ============================================================================ the cluster
def new_cycle_state() -> CycleState:
    """A scheduling cycle's fresh CycleState, with PodsToActivate as every cycle has."""
    state = CycleState()
    state.write(PODS_TO_ACTIVATE_KEY, PodsToActivate())
    return state


def place(sim: Simulator, pod: Pod, node: str) -> Status | None:
    """Bind ``pod`` to ``node`` in ``sim`` if the profile's real PreFilter and Filter plugins
    accept it there (RunFilterPluginsWithNominatedPods on that node); returns the rejecting
    status (None: bound). The bind runs the real scheduling cycle with the pod nominated to
    that node, which the scheduler evaluates first: Reserve, Permit, PreBind (volumes), Bind."""
    fwk = sim.profiles.get(pod.scheduler_name)
    if fwk is None:
        return Status.unresolvable(f"profile not found for scheduler name {pod.scheduler_name!r}")
    ni = sim.cache.snapshot.get(node)
    if ni is None or ni.node is None:
        return Status.unresolvable(f"node {node} not found")
    state = new_cycle_state()
    pre, s, _ = fwk.run_pre_filter_plugins(state, pod)
    if s is not None and not s.is_success():
        return s
    if pre is not None and pre.node_names is not None and node not in pre.node_names:
        return Status.unresolvable(f"node {node} is not in the PreFilter result")
    s = fwk.run_filter_plugins_with_nominated_pods(state, pod, ni)
    if s is not None and not s.is_success():
        return s
    current = sim.current.get(pod.uid, pod)
    attempt = sim.scheduler.schedule_one(dataclasses.replace(current, nominated_node_name=node))
    if attempt.outcome != "Scheduled" or attempt.node != node:
        why = attempt.message or attempt.outcome
        return Status.unschedulable(f"the scheduling cycle did not bind it there ({attempt.outcome}"
                                    f"{' on ' + attempt.node if attempt.node else ''}: {why})")
    return None


def verify_placements(objs: ClusterObjects, config: KubeSchedulerConfiguration | None,
                      placements: Sequence[tuple[str, str]], *,
                      registry: Mapping[str, Factory] | None = None) -> int:
    """Apply ``placements`` (pod key, node), in order, one pod at a time onto a fresh copy of
    the cluster: each must pass the profile's real filters on its node, then is bound. Raises
    :class:`PackVerificationError` at the first rejection; returns how many were verified."""
    return _verify(objs, config, placements, registry=registry)[0]


def _verify(objs: ClusterObjects, config: KubeSchedulerConfiguration | None, placements: Sequence[tuple[str, str]], *,
            registry: Mapping[str, Factory] | None = None) -> tuple[int, list[NodeDeviceUse]]:
    """verify_placements, and the DRA devices of each node once every placement is bound."""
    with Simulator(objs, config, deterministic=True, registry=registry) as sim:
        by_key = {p.key: p for p in objs.pods}
        for key, node in placements:
            pod = by_key.get(key)
            if pod is None:
                raise PackVerificationError(key, node, None, "nothing: the pod is not in the input")
            if pod.node_name:
                raise PackVerificationError(key, node, None, "nothing: the pod is already bound")
            s = place(sim, pod, node)
            if s is not None:
                raise PackVerificationError(key, node, s)
        o = sim.objects
        devices = device_use(objs.nodes, classes=o.device_classes(), slices=o.resource_slices(),
                             claims=o.resource_claims())
    return len(placements), devices


def _feasible_row(sim: Simulator, pod: Pod, rows: IntArray) -> tuple[BoolArray, Status | None, CycleState]:
    """The real PreFilter + Filter verdict of every node for ``pod`` (batch filters where the
    plugin has one); with a PreFilter rejection, that status; the cycle state (where
    DynamicResources keeps the allocation it found on each node)."""
    fwk = sim.profiles[pod.scheduler_name]
    infos = sim.cache.snapshot.list()
    state = new_cycle_state()
    pre, s, _ = fwk.run_pre_filter_plugins(state, pod)
    if s is not None and not s.is_success():
        if not s.is_rejected():
            raise KubeschedError(f"pod {pod.key}: {s.message}")
        return np.zeros(len(infos), np.bool_), s, state
    batch, per_node = fwk.batch_filters(state)
    ok = np.ones(len(infos), np.bool_)
    for _, fb, _ in batch:
        ok &= np.asarray(fb(state, pod, sim.cache.table, rows), np.bool_)
    for plugin in per_node:
        for j in np.flatnonzero(ok).tolist():
            if fwk.run_filter_plugin(plugin, state, pod, infos[j]) is not None:
                ok[j] = False
    if pre is not None and pre.node_names is not None:
        ok &= np.fromiter((ni.name in pre.node_names for ni in infos), np.bool_, len(infos))
    return ok, None, state


def _rejection_message(sim: Simulator, pod: Pod, pre_status: Status | None) -> str:
    """kube-scheduler's FitError message for ``pod`` on the cluster before placement."""
    infos = sim.cache.snapshot.list()
    if not infos:
        return NO_NODES_AVAILABLE
    if pre_status is not None:
        return fit_error_message(len(infos), {}, pre_status.message)
    fwk = sim.profiles[pod.scheduler_name]
    state = new_cycle_state()
    fwk.run_pre_filter_plugins(state, pod)
    statuses = {ni.name: fwk.run_filter_plugins(state, pod, ni) for ni in infos}
    return fit_error_message(len(infos), {n: s for n, s in statuses.items() if s is not None})


def _tracked_volumes(pod: Pod) -> list[str]:
    return [v.name for v in pod.volumes if v.kind in _TRACKED_VOLUMES or inline_plugin(v) is not None]


def _not_modelled_reason(sim: Simulator, pod: Pod) -> str | None:
    """Why the model cannot place ``pod`` (None: it can)."""
    fwk = sim.profiles[pod.scheduler_name]
    names = [p.name for p in fwk.filter]
    unknown = [n for n in names if n not in STATIC_FILTERS and n not in MODELLED_FILTERS]
    if unknown:
        return f"its profile {pod.scheduler_name!r} runs filter plugins the model does not know: {', '.join(unknown)}"
    for ext in sim.extenders:
        if ext.is_filter() and ext.is_interested(pod):
            return f"filter extender {ext.name()} decides too (the packing calls no extender)"
    if INTER_POD_AFFINITY in names and PodInfo(pod).required_affinity_terms:
        return "required pod affinity: whether a node fits depends on where the other pods go"
    spread = next((p for p in fwk.filter if p.name == SPREAD), None)
    if spread is not None and getattr(spread, "constraints", None) is not None and spread.constraints(pod, _DO_NOT_SCHEDULE):
        return "hard topology spread (DoNotSchedule): whether a node fits depends on where the other pods go"
    volumes = _tracked_volumes(pod)
    if volumes:
        return (f"volumes the scheduler tracks ({', '.join(volumes)}): volume binding, zones and limits are not "
                "modelled")
    return None


def _ns_labels(sim: Simulator, namespace: str) -> Mapping[str, str]:
    ns = sim.objects.namespace(namespace)
    return ns.meta.labels if ns is not None else {}


def _counted_by_kept(sim: Simulator, kept: Sequence[Pod], candidates: Sequence[Pod]) -> dict[str, str]:
    """Pending pods that a kept pod's required affinity terms or hard spread selectors count:
    moving them could break that pod's constraint, so they are kept too (uid -> reason)."""
    out: dict[str, str] = {}
    for f in kept:
        fwk = sim.profiles.get(f.scheduler_name)
        if fwk is None:
            continue
        names = {p.name for p in fwk.filter}
        terms: tuple[AffinityTerm, ...] = PodInfo(f).required_affinity_terms if INTER_POD_AFFINITY in names else ()
        spread = next((p for p in fwk.filter if p.name == SPREAD), None)
        constraints = spread.constraints(f, _DO_NOT_SCHEDULE) if spread is not None and hasattr(spread, "constraints") else ()
        if not terms and not constraints:
            continue
        for m in candidates:
            if m.uid in out or m.uid == f.uid:
                continue
            if any(t.matches(m, _ns_labels(sim, m.namespace)) for t in terms):
                out[m.uid] = f"the required pod affinity of {f.key} (kept where the scheduler put it) counts it"
            elif m.namespace == f.namespace and any(c.selector.matches(m.labels) for c in constraints):
                out[m.uid] = f"the topology spread constraint of {f.key} (kept where the scheduler put it) counts it"
    return out


def _sanitized_ports(pod: Pod) -> tuple[tuple[str, str, int], ...]:
    return tuple(sorted({(ip or _WILDCARD_IP, proto or "TCP", port) for ip, proto, port in get_container_ports(pod)}))


def _port_cliques(classes: Sequence[PodClass]) -> tuple[tuple[int, ...], ...]:
    """Per (protocol, port): each specific IP with 0.0.0.0, or 0.0.0.0 alone."""
    by_port: dict[tuple[str, int], dict[str, set[int]]] = {}
    for c, cls in enumerate(classes):
        for ip, proto, port in cls.ports:
            by_port.setdefault((proto, port), {}).setdefault(ip, set()).add(c)
    cliques: set[tuple[int, ...]] = set()
    for ips in by_port.values():
        wild = ips.get(_WILDCARD_IP, set())
        specific = [members for ip, members in ips.items() if ip != _WILDCARD_IP]
        for members in specific or [set()]:
            clique = tuple(sorted(members | wild))
            if clique:
                cliques.add(clique)
    return tuple(sorted(cliques))


def _anti_cliques(sim: Simulator, classes: Sequence[PodClass],
                  ipa: Sequence[bool]) -> tuple[AntiAffinityClique, ...]:
    """An edge-clique cover of the anti-affinity conflict graph, per topology key."""
    edges: dict[str, set[tuple[int, int]]] = {}
    # Classes sharing namespace and labels match the same terms.
    groups: dict[tuple[str, tuple[tuple[str, str], ...]], list[int]] = {}
    for c, cls in enumerate(classes):
        rep = cls.representative
        groups.setdefault((rep.namespace, tuple(sorted(rep.labels.items()))), []).append(c)
    for a, cls in enumerate(classes):
        terms = PodInfo(cls.representative).required_anti_affinity_terms
        for t in terms:
            for members in groups.values():
                rep = classes[members[0]].representative
                if not t.matches(rep, _ns_labels(sim, rep.namespace)):
                    continue
                for b in members:
                    if ipa[a] or ipa[b]:
                        edges.setdefault(t.topology_key, set()).add((min(a, b), max(a, b)))
    out: list[AntiAffinityClique] = []
    for key in sorted(edges):
        selfish = {a for a, b in edges[key] if a == b}
        adj: dict[int, set[int]] = {}
        for a, b in edges[key]:
            if a != b:
                adj.setdefault(a, set()).add(b)
                adj.setdefault(b, set()).add(a)
        uncovered = {(a, b) for a, b in edges[key] if a != b}
        in_clique: set[int] = set()
        while uncovered:
            a, b = min(uncovered)
            clique = [a, b]
            cand = adj[a] & adj[b]
            while cand:
                v = min(cand)
                clique.append(v)
                cand &= adj[v]
            clique.sort()
            for i, x in enumerate(clique):
                for y in clique[i + 1:]:
                    uncovered.discard((x, y))
            in_clique.update(clique)
            out.append(AntiAffinityClique(key, tuple(clique), tuple(c in selfish for c in clique)))
        # A class that repels itself is bounded to one pod per domain by every clique it is in;
        # one in no clique gets its own.
        for c in sorted(selfish - in_clique):
            out.append(AntiAffinityClique(key, (c,), (True,)))
    return tuple(out)


# ============================================================================ the result
@dataclass(frozen=True, slots=True)
class PodOutcome:
    """One pending pod: the scheduler's node and the packing's (None: left pending)."""

    pod: str
    greedy: str | None
    packed: str | None
    modelled: bool
    note: str = ""  # why not modelled / why left pending
    greedy_message: str = ""  # the scheduler's FailedScheduling message when it left the pod pending

    @property
    def moved(self) -> bool:
        return self.greedy != self.packed

    def as_dict(self) -> dict[str, Any]:
        return {"pod": self.pod, "greedy": self.greedy, "packed": self.packed, "modelled": self.modelled,
                "moved": self.moved, "note": self.note, "greedyMessage": self.greedy_message}


@dataclass(frozen=True, slots=True)
class PackResult:
    """The packing beside the scheduler's greedy schedule. :meth:`as_dict` gives plain data
    (for ``-o json`` and the HTML report)."""

    nodes: tuple[str, ...]
    pods: tuple[PodOutcome, ...]  # pending pods the scheduler attempts, queue order
    not_attempted: tuple[tuple[str, str], ...]  # (pod, why the scheduler never attempts it)
    greedy_nodes: tuple[str, ...]  # nodes with a pod after the greedy schedule
    packed_nodes: tuple[str, ...]  # nodes with a pod after the packing
    greedy_preempted: tuple[str, ...]
    solver: SolverStats
    verified: int
    classes: int
    seconds: float  # the whole run
    greedy_seconds: float = 0.0  # the scheduler's simulation
    verify_seconds: float = 0.0  # applying every placement through the real filters
    notes: tuple[str, ...] = ()
    # DRA: device groups in the model; each node's devices after the greedy schedule and after
    # the packing (input order; empty when the cluster publishes no device).
    device_groups: int = 0
    greedy_devices: tuple[NodeDeviceUse, ...] = ()
    packed_devices: tuple[NodeDeviceUse, ...] = ()

    @property
    def greedy_placed(self) -> int:
        return sum(1 for p in self.pods if p.greedy)

    @property
    def packed_placed(self) -> int:
        return sum(1 for p in self.pods if p.packed)

    @property
    def drainable(self) -> tuple[str, ...]:
        """Nodes the greedy schedule uses that the packing leaves empty."""
        packed = set(self.packed_nodes)
        return tuple(n for n in self.greedy_nodes if n not in packed)

    @property
    def relieved(self) -> tuple[str, ...]:
        """Nodes still used (running pods) whose pending pods, as the scheduler put them, all
        go elsewhere in the packing."""
        greedy_pending = {p.greedy for p in self.pods if p.greedy}
        packed_pending = {p.packed for p in self.pods if p.packed}
        packed = set(self.packed_nodes)
        return tuple(n for n in self.nodes if n in greedy_pending and n not in packed_pending and n in packed)

    @property
    def moved(self) -> tuple[PodOutcome, ...]:
        return tuple(p for p in self.pods if p.moved)

    @property
    def modelled(self) -> int:
        return sum(1 for p in self.pods if p.modelled)

    def as_dict(self) -> dict[str, Any]:
        return {
            "nodes": len(self.nodes),
            "pendingPods": len(self.pods) + len(self.not_attempted),
            "modelledPods": self.modelled,
            "podClasses": self.classes,
            "greedy": {"placed": self.greedy_placed, "nodesUsed": len(self.greedy_nodes),
                       "nodes": list(self.greedy_nodes), "preempted": list(self.greedy_preempted)},
            "packed": {"placed": self.packed_placed, "nodesUsed": len(self.packed_nodes),
                       "nodes": list(self.packed_nodes)},
            "drainable": list(self.drainable),
            "relieved": list(self.relieved),
            "solver": self.solver.as_dict(),
            "verified": self.verified,
            "moved": [p.as_dict() for p in self.moved],
            "pods": [p.as_dict() for p in self.pods],
            "notModelled": {p.pod: p.note for p in self.pods if not p.modelled},
            "unplaced": {p.pod: p.note for p in self.pods if p.packed is None},
            "notAttempted": dict(self.not_attempted),
            "seconds": round(self.seconds, 3),
            "greedySeconds": round(self.greedy_seconds, 3),
            "verifySeconds": round(self.verify_seconds, 3),
            "notes": list(self.notes),
            **({"deviceGroups": self.device_groups,
                "devices": {g.node: {"total": g.total, "greedy": g.used, "packed": p.used}
                            for g, p in zip(self.greedy_devices, self.packed_devices, strict=True)}}
               if self.greedy_devices and self.packed_devices else {}),
        }


# ============================================================================ the pipeline
@dataclass(slots=True)
class _Setup:
    problem: PackProblem
    outcomes: dict[str, PodOutcome]  # pod uid -> outcome of pods not in the model
    kept: list[tuple[str, str]]  # (pod key, node) bound before the model's pods, in greedy order
    modelled: list[Pod]  # queue order
    static_reasons: dict[str, str] = field(default_factory=dict)  # uid -> why no node fits at all


def _greedy_used(objs: ClusterObjects, result: SimulationResult) -> tuple[str, ...]:
    names = {n.meta.name for n in objs.nodes}
    terminal = {p.key for p in objs.pods if p.is_terminal}
    used = {node for key, node in result.final.items() if node and node in names and key not in terminal}
    return tuple(sorted(used))


def _class_key(pod: Pod, row: BoolArray, *, requests: bool = True, devices: IntArray | None = None
               ) -> tuple[Any, ...]:
    """What makes pending pods interchangeable in the model (with or without their requests):
    also the devices they take from each device group."""
    aff = pod.affinity
    anti = aff.pod_anti_affinity if aff is not None else None
    return (pod.scheduler_name, pod.namespace, tuple(sorted(pod.labels.items())),
            tuple(sorted(pod.requests.items())) if requests else (), _sanitized_ports(pod),
            repr(anti.required) if anti else "", row.tobytes(), b"" if devices is None else devices.tobytes())


def _setup(sim: Simulator, greedy: SimulationResult, order: Sequence[Pod]) -> _Setup:
    last = {s.attempt.pod.key: s.attempt for s in greedy.steps}

    def greedy_message(pod: Pod) -> str:
        a = last.get(pod.key)
        return (a.message or "") if a is not None and a.outcome != "Scheduled" else ""

    reasons: dict[str, str] = {}
    for pod in order:
        why = _not_modelled_reason(sim, pod)
        if why is not None:
            reasons[pod.uid] = why
    # Pods with claims: modelled when their devices can be counted exactly (_packdevices).
    reasons.update(claim_reasons(sim, [p for p in order if p.uid not in reasons]))
    kept_pods = [p for p in order if p.uid in reasons]
    reasons.update(_counted_by_kept(sim, kept_pods, [p for p in order if p.uid not in reasons]))

    # Kept pods go where the scheduler put them, in the order it bound them.
    outcomes: dict[str, PodOutcome] = {}
    kept: list[tuple[str, str]] = []
    by_key = {p.key: p for p in order}
    bound_order = [s.attempt.pod.key for s in greedy.steps if s.attempt.outcome == "Scheduled"]
    for key in bound_order:
        kept_pod = by_key.get(key)
        if kept_pod is None or kept_pod.uid not in reasons:
            continue
        node = greedy.final.get(key)
        if not node:
            continue
        s = place(sim, kept_pod, node)
        why = reasons[kept_pod.uid]
        if s is None:
            kept.append((key, node))
            outcomes[kept_pod.uid] = PodOutcome(key, node, node, False, f"not modelled: {why}")
        else:
            outcomes[kept_pod.uid] = PodOutcome(
                key, node, None, False,
                f"not modelled: {why}; the scheduler's node {node} does not take it without evicting "
                f"(the scheduler preempted for it, the packing evicts nothing): {s.plugin}: {s.message}")
    for pod in order:
        if pod.uid in reasons and pod.uid not in outcomes:
            outcomes[pod.uid] = PodOutcome(pod.key, greedy.final.get(pod.key) or None, None, False,
                                           f"not modelled: {reasons[pod.uid]}; the scheduler leaves it pending too",
                                           greedy_message(pod))

    # The model's pods: the real filters' verdict on every node, before any is placed.
    infos = sim.cache.snapshot.list()
    node_names = tuple(ni.name for ni in infos)
    rows = np.fromiter((ni.index for ni in infos), np.int64, len(infos))
    modelled = [p for p in order if p.uid not in reasons]
    dev_groups = device_groups(sim, modelled, infos)
    class_of: dict[tuple[Any, ...], int] = {}
    members: list[list[Pod]] = []
    feasible_rows: list[BoolArray] = []
    class_devices: list[IntArray] = []
    static_reasons: dict[str, str] = {}
    for pod in modelled:
        row, pre_status, state = _feasible_row(sim, pod, rows)
        if not row.any():
            static_reasons[pod.uid] = _rejection_message(sim, pod, pre_status)
        devices = demand(sim, pod, state, infos, row, dev_groups)
        ckey = _class_key(pod, row, devices=devices)
        c = class_of.get(ckey)
        if c is None:
            c = class_of[ckey] = len(members)
            members.append([])
            feasible_rows.append(row)
            class_devices.append(devices)
        members[c].append(pod)

    # Resources some modelled pod's profile checks.
    fits = {name: next((p for p in fwk.filter if p.name == FIT), None) for name, fwk in sim.profiles.items()}
    resources: list[str] = []
    for pod in modelled:
        fit = fits[pod.scheduler_name]
        if fit is None:
            continue
        ignored: frozenset[str] = getattr(fit, "ignored_resources", frozenset())
        groups: frozenset[str] = getattr(fit, "ignored_resource_groups", frozenset())
        for name, q in pod.requests.items():
            if q <= 0 or name == "pods" or name in resources:
                continue
            if name not in ("cpu", "memory", "ephemeral-storage") and not is_scalar_resource_name(name):
                continue
            if is_extended_resource_name(name) and (name in ignored or name.split("/", 1)[0] in groups):
                continue
            resources.append(name)
    room = np.zeros((len(infos), len(resources)), np.int64)
    for n, ni in enumerate(infos):
        for r, name in enumerate(resources):
            room[n, r] = max(0, ni.allocatable.get(name) - ni.requested.get(name))
    any_fit = any(fits[p.scheduler_name] is not None for p in modelled)
    total = len(modelled)
    pods_room = np.fromiter(
        (max(0, ni.allocatable.allowed_pod_number - len(ni.pods)) if any_fit else total for ni in infos),
        np.int64, len(infos))
    used = np.fromiter((len(ni.pods) > 0 for ni in infos), np.bool_, len(infos))
    classes = tuple(PodClass(tuple(ps), np.asarray([ps[0].requests.get(r, 0) for r in resources], np.int64),
                             _sanitized_ports(ps[0]),
                             _class_key(ps[0], feasible_rows[c], requests=False, devices=class_devices[c]),
                             class_devices[c])
                    for c, ps in enumerate(members))
    filters = {name: {p.name for p in fwk.filter} for name, fwk in sim.profiles.items()}
    with_ports = any(PORTS in filters[c.representative.scheduler_name] for c in classes)
    ipa = [INTER_POD_AFFINITY in filters[c.representative.scheduler_name] for c in classes]
    port_cliques = _port_cliques(classes) if with_ports else ()
    anti = _anti_cliques(sim, classes, ipa)
    domains: dict[str, IntArray] = {}
    for key in sorted({k.topology_key for k in anti}):
        values: dict[str, int] = {}
        dom = np.full(len(infos), -1, np.int64)
        for n, ni in enumerate(infos):
            assert ni.node is not None
            v = ni.node.meta.labels.get(key)
            if v is not None:
                dom[n] = values.setdefault(v, len(values))
        domains[key] = dom
    feasible = np.stack(feasible_rows) if feasible_rows else np.zeros((0, len(infos)), np.bool_)
    problem = PackProblem(node_names, used, tuple(resources), room, pods_room, classes, feasible, port_cliques,
                          anti, domains, dev_groups.node, dev_groups.room, dev_groups.label)
    return _Setup(problem, outcomes, kept, modelled, static_reasons)


def _assign(problem: PackProblem, counts: IntArray, greedy: Mapping[str, str | None]) -> dict[str, str]:
    """Concrete pods for the class counts, keeping each pod on the scheduler's node where the
    count allows (fewer spurious moves)."""
    out: dict[str, str] = {}
    for c, cls in enumerate(problem.classes):
        want = {problem.nodes[n]: int(k) for n, k in enumerate(counts[c].tolist()) if k > 0}
        rest: list[Pod] = []
        for pod in cls.pods:
            g = greedy.get(pod.key)
            if g is not None and want.get(g, 0) > 0:
                out[pod.key] = g
                want[g] -= 1
            else:
                rest.append(pod)
        slots = [node for node, k in want.items() for _ in range(k)]
        for pod, node in zip(rest, slots, strict=False):
            out[pod.key] = node
    return out


def _greedy_counts(problem: PackProblem, greedy: Mapping[str, str | None]) -> IntArray:
    index = {n: i for i, n in enumerate(problem.nodes)}
    counts = np.zeros((len(problem.classes), len(problem.nodes)), np.int64)
    for c, cls in enumerate(problem.classes):
        for pod in cls.pods:
            node = greedy.get(pod.key)
            if node is not None and node in index:
                counts[c, index[node]] += 1
    return counts


@contextlib.contextmanager
def _timer() -> Iterator[list[float]]:
    box = [0.0]
    t0 = time.perf_counter()
    try:
        yield box
    finally:
        box[0] = time.perf_counter() - t0


def pack(objs: ClusterObjects, config: KubeSchedulerConfiguration | None = None, *,
         time_limit: float = DEFAULT_TIME_LIMIT, registry: Mapping[str, Factory] | None = None,
         verify: bool = True) -> PackResult:
    """Pack the pending pods of ``objs`` optimally (see the module docstring) and compare with
    the scheduler's deterministic simulation. ``time_limit`` bounds building and solving the
    integer program (the simulation and the verification come on top). Every placement is
    verified against the real filters unless ``verify`` is False (tests of the verifier)."""
    if not time_limit > 0:
        raise KubeschedError(f"the time limit must be a positive number of seconds, not {time_limit}")
    t0 = time.perf_counter()
    with _timer() as greedy_time:
        greedy = Simulator(objs, config, deterministic=True, registry=registry).run()
    greedy_final = dict(greedy.final)
    with Simulator(objs, config, deterministic=True, registry=registry) as sim:
        order, skipped = sim.pending()
        with _timer() as setup_time:
            setup = _setup(sim, greedy, order)
    problem = setup.problem
    counts, stats = solve_problem(problem, time_limit=max(time_limit - setup_time[0], 0.5),
                                  starts=[("the scheduler's placement", _greedy_counts(problem, greedy_final))])
    stats = dataclasses.replace(stats, time_limit=time_limit, build_seconds=setup_time[0] + stats.build_seconds,
                                nodes_in_use=int(problem.used.sum()))
    counts = relabel(problem, counts, _greedy_counts(problem, greedy_final))
    problems = problem.violations(counts)
    if problems:
        raise KubeschedError(f"the packing breaks its own model: {'; '.join(problems[:5])} (a bug)")
    assigned = _assign(problem, counts, greedy_final)

    last = {s.attempt.pod.key: s.attempt for s in greedy.steps}
    outcomes: list[PodOutcome] = []
    for pod in order:
        done = setup.outcomes.get(pod.uid)
        if done is not None:
            outcomes.append(done)
            continue
        g = greedy_final.get(pod.key) or None
        message = ""
        if g is None and pod.key in last:
            message = last[pod.key].message or ""
        node = assigned.get(pod.key)
        note = ""
        if node is None:
            note = setup.static_reasons.get(pod.uid) or (
                "fits on some node alone, but not beside the other pending pods: the packing places as many pods as "
                "possible")
        outcomes.append(PodOutcome(pod.key, g, node, True, note, message))
    placements = list(setup.kept) + [(o.pod, o.packed) for o in outcomes if o.modelled and o.packed]
    with _timer() as verify_time:
        verified, packed_devices = _verify(objs, config, placements, registry=registry) if verify else (0, [])

    packed_used = set(np.asarray(problem.nodes)[problem.used].tolist()) if len(problem.nodes) else set()
    packed_used.update(node for _, node in setup.kept)
    packed_used.update(o.packed for o in outcomes if o.packed)
    notes = [NO_EVICTION_NOTE]
    kept_count = sum(1 for o in outcomes if not o.modelled)
    if kept_count:
        notes.append(f"{kept_count} pending pod(s) are not modelled and stay where the scheduler put them "
                     "(each one says why)")
    if greedy.deleted:
        notes.append(f"the scheduler preempted {len(greedy.deleted)} running pod(s); the packing keeps them")
    if len(problem.device_room):
        notes.append(f"DRA devices are counted in {len(problem.device_room)} device group(s): the free devices of a "
                     f"node that the same claim requests select; each pod takes the devices the real allocator gives "
                     f"its claims on an otherwise empty node")
    return PackResult(
        nodes=problem.nodes, pods=tuple(outcomes), not_attempted=tuple(sorted(skipped.items())),
        greedy_nodes=_greedy_used(objs, greedy), packed_nodes=tuple(n for n in problem.nodes if n in packed_used),
        greedy_preempted=tuple(greedy.deleted), solver=stats, verified=verified, classes=len(problem.classes),
        seconds=time.perf_counter() - t0, greedy_seconds=greedy_time[0], verify_seconds=verify_time[0],
        notes=tuple(notes), device_groups=len(problem.device_room), greedy_devices=tuple(devices_after(objs, greedy)),
        packed_devices=tuple(packed_devices),
    )
