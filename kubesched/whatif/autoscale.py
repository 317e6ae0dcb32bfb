"""What cluster-autoscaler would do with a cluster: the scale-up it would make for the pods
that cannot be scheduled, the cheapest scale-up, and the nodes it would remove.

The cluster-autoscaler sources mirrored (kubernetes/autoscaler, cluster-autoscaler/):

**The pods that cannot be scheduled** are found by the real scheduler first: the deterministic
simulation (:class:`kubesched.simulation.Simulator`, the conformance procedure) schedules the
pending pods with the configured profile of the chosen release; the pods it leaves pending are
cluster-autoscaler's unschedulable pods, the others stay where the scheduler put them (its
``FilterOutSchedulable`` processor). Every later check runs the profile's real PreFilter and
Filter plugins (the ``CheckPredicates`` of simulator/clustersnapshot/predicate: PreFilter,
then Filter on the one node; no Score, no preemption) over a snapshot of that cluster to
which template nodes are added and from which pods are removed (``Fork`` / ``Revert``).

**Scale-up** (core/scaleup/orchestrator/orchestrator.go ``ScaleUp``):

- the pods are grouped as ``equivalence.BuildPodGroups`` does (same controller, labels and
  spec; pods without a controller alone);
- a group whose size is already ``maxSize`` is skipped: ``max node group size reached``
  (skippedreasons.go ``MaxLimitReachedReason``);
- ``SchedulablePodGroups``: each pod group's first pod is checked against the group's
  template node (``template-node-for-<group>``, with the DaemonSet and mirror pods of a
  member node, podsExpectedOnFreshNode); the failing plugin's reasons are the group's
  scheduling error for those pods;
- ``ComputeExpansionOption`` / ``BinpackingNodeEstimator.Estimate``
  (estimator/binpacking_estimator.go): pod groups ordered by the DecreasingPodOrderer's
  score (cpu/allocatable + memory/allocatable of the template), each pod first tried on the
  new nodes already added (``FitsAnyNodeMatching``, starting after the last node found), then
  on the last new node, else on a fresh template node ``template-node-for-<group>-e-<i>``
  while the limiter allows (threshold_based_limiter.go: the minimum of
  ``--max-nodes-per-scaleup`` 1000, the group's room ``maxSize - size``
  (sng_capacity_threshold.go) and no cluster-wide node limit; the 10 s binpacking duration
  limit is not applied, so the answer does not depend on the machine); an empty new node that
  the pod does not fit on ends the group's packing;
- the option with the pods it takes and its node count; the expander picks one
  (:mod:`kubesched.whatif._autoscale_expanders`); its size is capped at ``maxSize``
  (``BalanceScaleUpBetweenGroups``).
- Each pod no group can help gets cluster-autoscaler's event text
  (processors/status/eventing_scale_up_processor.go ``ReasonsMessage``): ``pod didn't trigger
  scale-up: `` then, per reason, how many node groups gave it (the scheduling error of each
  group it does not fit, and each skipped group's reason), e.g. ``pod didn't trigger
  scale-up: 2 Insufficient cpu, 1 max node group size reached``. Upstream joins a Go map in
  random order; here the most frequent first, then alphabetically.

**The cheapest scale-up** (:mod:`kubesched.whatif._autoscale_optimal`): an integer program on
HiGHS over new nodes of every group, every placement re-verified with the real filters.

**Scale-down** (core/scaledown/planner/planner.go ``categorizeNodes``, eligibility.go,
simulator/cluster.go, simulator/drain.go, simulator/drainability/rules,
core/scaledown/unneeded/nodes.go ``RemovableAt``), for the nodes of the node groups in name
order:

- eligibility (``unremovableReasonAndNodeUtilization``): a node tainted
  ``ToBeDeletedByClusterAutoscaler`` is ``CurrentlyBeingDeleted``; one annotated
  ``cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"`` is
  ``ScaleDownDisabledAnnotation``; a node no group selects is ``NotAutoscaled``; else its
  utilization (simulator/utilization/info.go: max of cpu and memory requests over
  allocatable — pods terminating past their grace period not counted —, or of
  ``nvidia.com/gpu`` on a GPU node) must be under the threshold, else ``NotUnderutilized``;
- removal simulation (``SimulateNodeRemoval``): the drainability rules in their order
  (rules.go ``Default``): mirror pods and pods terminating past their grace period + 30 s are
  skipped; ReplicaCount (the controller must exist in the input); DaemonSet pods, pods
  annotated ``cluster-autoscaler.kubernetes.io/safe-to-evict: "true"`` and terminal pods may
  go; then a pod without a controller blocks (``NotReplicated``), a kube-system pod no PDB
  selects blocks (``UnmovableKubeSystemPod``), ``safe-to-evict: "false"`` blocks
  (``NotSafeToEvictAnnotation``), a hostPath or disk emptyDir volume not listed in
  ``safe-to-evict-local-volumes`` blocks (``LocalStorageRequested``), a PDB with no
  disruption left blocks (``NotEnoughPdb``): the node is ``BlockedByPod`` with the rule's
  error text. Then the pods to move (not the DaemonSet pods) are rescheduled one by one on the
  other nodes (``findPlaceFor``: the real filters, nodes found removable before excluded, moves
  kept for the next nodes); one that fits nowhere makes the node ``NoPlaceToMovePods`` (``can
  reschedule only N out of M pods``). A removable node's pods use up their PDBs' disruptions.
- ``RemovableAt``: empty nodes first, then the others; a node whose group would go below
  ``minSize`` is ``NodeGroupMinSizeReached``.

Defaults are cluster-autoscaler's: ``--scale-down-utilization-threshold`` 0.5 (also the GPU
threshold), skip nodes with system pods, with local storage and with custom-controller pods,
``--min-replica-count`` 0, DaemonSet and mirror pods counted in the utilization.
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.config import KubeSchedulerConfiguration, default_configuration
from kubesched.errors import KubeschedError
from kubesched.framework import PodInfo, Status
from kubesched.objects import ClusterObjects, Node, Pod
from kubesched.objects.parse import parse_node
from kubesched.objects.workloads import object_uid
from kubesched.plugins.registry import Factory
from kubesched.scheduler import Attempt
from kubesched.simulation import MAX_ATTEMPTS, SimulationResult, Simulator
from kubesched.whatif._autoscale_expanders import EXPANDERS, GPU_RESOURCE, RANDOM, Choice, Option, choose
from kubesched.whatif.capacity import without_preemption
from kubesched.whatif.nodegroups import NodeGroup, group_of_nodes
from kubesched.whatif.pack import new_cycle_state

# core/scaleup/orchestrator/skippedreasons.go: MaxLimitReachedReason.
MAX_LIMIT_REACHED = "max node group size reached"
# processors/status/eventing_scale_up_processor.go: the NotTriggerScaleUp event.
NOT_TRIGGER_SCALE_UP = "pod didn't trigger scale-up: "
# config/autoscaling_options.go defaults (--max-nodes-per-scaleup, --scale-down-utilization-threshold).
MAX_NODES_PER_SCALE_UP = 1000
EXPENDABLE_PRIORITY_CUTOFF = -10
DEFAULT_UTILIZATION_THRESHOLD = 0.5
# Annotations and taint (utils/drain/drain.go, core/scaledown/eligibility/eligibility.go,
# utils/taints/taints.go, utils/pod/pod.go).
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
SAFE_TO_EVICT_LOCAL_VOLUMES = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
DAEMONSET_POD = "cluster-autoscaler.kubernetes.io/daemonset-pod"
MIRROR_POD = "kubernetes.io/config.mirror"
TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"
HOSTNAME = "kubernetes.io/hostname"
# drain.PodLongTerminatingExtraThreshold.
LONG_TERMINATING_EXTRA = 30.0
# core/v1: pods without TerminationGracePeriodSeconds (kubesched defaults it at parse).

# UnremovableReason names (simulator/cluster.go) and their klog texts.
CURRENTLY_BEING_DELETED = "CurrentlyBeingDeleted"
SCALE_DOWN_DISABLED_ANNOTATION = "ScaleDownDisabledAnnotation"
NOT_AUTOSCALED = "NotAutoscaled"
NOT_UNDERUTILIZED = "NotUnderutilized"
BLOCKED_BY_POD = "BlockedByPod"
NO_PLACE_TO_MOVE_PODS = "NoPlaceToMovePods"
NODE_GROUP_MIN_SIZE_REACHED = "NodeGroupMinSizeReached"
# BlockingPodReason names (utils/drain/drain.go).
NOT_REPLICATED, LOCAL_STORAGE_REQUESTED = "NotReplicated", "LocalStorageRequested"
NOT_SAFE_TO_EVICT_ANNOTATION, UNMOVABLE_KUBE_SYSTEM_POD = "NotSafeToEvictAnnotation", "UnmovableKubeSystemPod"
NOT_ENOUGH_PDB, CONTROLLER_NOT_FOUND = "NotEnoughPdb", "ControllerNotFound"
# drainability/rules/replicated/rule.go: kinds whose pods are replicated (skipNodesWithCustomControllerPods).
_REPLICATED_KINDS = frozenset(("ReplicationController", "Job", "ReplicaSet", "StatefulSet"))


# ============================================================================ the snapshot
class Snapshot:
    """cluster-autoscaler's ClusterSnapshot over a Simulator's cache: nodes and pods added and
    removed with an undo log (``fork`` / ``revert`` / ``commit``), and the predicate checks of
    its PredicateSnapshot run with the profile's real plugins."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self._log: list[Callable[[], None]] = []
        self._marks: list[int] = []
        self._last_index = 0  # SchedulerPluginRunner.lastIndex

    # ---- fork / revert
    def fork(self) -> None:
        self._marks.append(len(self._log))

    def revert(self) -> None:
        mark = self._marks.pop()
        while len(self._log) > mark:
            self._log.pop()()

    def commit(self) -> None:
        self._marks.pop()
        if not self._marks:
            self._log.clear()

    # ---- changes
    def add_node(self, node: Node, pods: Sequence[Pod] = ()) -> None:
        cache = self.sim.cache
        cache.add_node(node)
        cache.ordered_rows()
        self._log.append(lambda: self._drop_node(node.name))
        for p in pods:
            self.add_pod(p, node.name)

    def _drop_node(self, name: str) -> None:
        self.sim.cache.remove_node(name)
        self.sim.cache.ordered_rows()

    def add_pod(self, pod: Pod, node: str) -> Pod:
        """The pod bound to ``node`` (in the cache and the API's pod lister)."""
        before = self.sim.objects.pod(pod.namespace, pod.name)
        bound = dataclasses.replace(pod, node_name=node, nominated_node_name="")
        self.sim.cache.add_pod(bound)
        self.sim.objects.set_pod(bound)
        self._log.append(lambda: self._unplace(bound, before))
        return bound

    def _unplace(self, bound: Pod, before: Pod | None) -> None:
        self.sim.cache.remove_pod(bound)
        if before is not None:
            self.sim.objects.set_pod(before)
        else:
            self.sim.objects.delete_pod(bound)

    def remove_pod(self, pod: Pod) -> None:
        """UnschedulePod: the pod leaves its node (it is about to be placed elsewhere)."""
        self.sim.cache.remove_pod(pod)
        self._log.append(lambda: self.sim.cache.add_pod(pod))

    # ---- predicates
    def pods_on(self, node: str) -> list[Pod]:
        ni = self.sim.cache.node_infos.get(node)
        return [pi.pod for pi in ni.pods] if ni is not None else []

    def node(self, name: str) -> Node | None:
        ni = self.sim.cache.node_infos.get(name)
        return ni.node if ni is not None else None

    def check(self, pod: Pod, node: str) -> Status | None:
        """CheckPredicates: the profile's PreFilter, then its Filter plugins on ``node``;
        None when the pod fits there, else the failing status (its plugin and reasons)."""
        fwk = self.sim.profiles.get(pod.scheduler_name)
        if fwk is None:
            return Status.unresolvable(f"no profile for scheduler name {pod.scheduler_name!r}")
        ni = self.sim.cache.snapshot.get(node)
        if ni is None or ni.node is None:
            return Status.unresolvable(f"node {node} not found")
        state = new_cycle_state()
        pre, s, _ = fwk.run_pre_filter_plugins(state, pod)
        if s is not None and not s.is_success():
            return s
        if pre is not None and pre.node_names is not None and node not in pre.node_names:
            # RunFiltersOnNode: "PreFilter filtered the Node out", a predicate error without reasons.
            return Status.unresolvable()
        return fwk.run_filter_plugins(state, pod, ni)

    def fits_any(self, pod: Pod, nodes: Sequence[str]) -> str | None:
        """RunFiltersUntilPassingNode over ``nodes`` (PreFilter once, then Filter node by node
        starting after the last node found); the node found, or None. The plugins with a batch
        filter decide every node at once first (the same verdicts as their per-node filter),
        the others run node by node on the nodes left."""
        if not nodes:
            return None
        fwk = self.sim.profiles.get(pod.scheduler_name)
        if fwk is None:
            return None
        state = new_cycle_state()
        pre, s, _ = fwk.run_pre_filter_plugins(state, pod)
        if s is not None and not s.is_success():
            return None
        cache = self.sim.cache
        infos = [cache.node_infos.get(name) for name in nodes]
        rows = np.fromiter((ni.index if ni is not None and ni.node is not None else -1 for ni in infos), np.int64,
                           len(infos))
        ok = rows >= 0
        batch, per_node = fwk.batch_filters(state)
        if batch and ok.any():
            live = np.flatnonzero(ok)
            for _, filter_batch, _ in batch:
                passed = np.asarray(filter_batch(state, pod, cache.table, rows[live]), np.bool_)
                ok[live[~passed]] = False
                live = live[passed]
                if not len(live):
                    break
        n = len(nodes)
        for i in range(n):
            k = (self._last_index + i) % n
            if not ok[k]:
                continue
            name = nodes[k]
            if pre is not None and pre.node_names is not None and name not in pre.node_names:
                continue
            ni = infos[k]
            assert ni is not None
            if fwk.run_filter_plugins_subset(per_node, state, pod, ni):
                self._last_index = k + 1
                return name
        return None


def status_reasons(s: Status) -> tuple[str, ...]:
    """SchedulingError.Reasons of a failing predicate: the failing plugin's reasons (none
    when PreFilter filtered the node out)."""
    return tuple(s.reasons)


# ============================================================================ templates
def fresh_node(template: Node, name: str) -> Node:
    """sanitizeNode: the template under a new name and uid, its hostname label the new name
    (set as the kubelet would, also when the template has none)."""
    md = dict(template.raw.get("metadata") or {})
    labels = {**(md.get("labels") or {}), HOSTNAME: name}
    raw = {**template.raw, "metadata": {**md, "name": name, "uid": object_uid("Node", "", name), "labels": labels}}
    return parse_node(raw)


def fresh_pod(pod: Pod, node: str, suffix: str) -> Pod:
    """sanitizePod: a DaemonSet or mirror pod of the template for a fresh node."""
    name = f"{pod.name}-{suffix}"
    meta = dataclasses.replace(pod.meta, name=name, uid=object_uid("Pod", pod.namespace, name))
    return dataclasses.replace(pod, meta=meta, node_name=node, nominated_node_name="")


def is_mirror_pod(pod: Pod) -> bool:
    return MIRROR_POD in pod.meta.annotations


def is_daemonset_pod(pod: Pod) -> bool:
    """pod_util.IsDaemonSetPod: a DaemonSet controller, or the daemonset-pod annotation."""
    ref = pod.meta.controller_ref()
    if ref is not None and ref.kind == "DaemonSet":
        return True
    return pod.meta.annotations.get(DAEMONSET_POD) == "true"


@dataclass(frozen=True, slots=True)
class Template:
    """A group's template NodeInfo: the node and the pods a fresh node runs at once."""

    group: NodeGroup
    node: Node
    pods: tuple[Pod, ...]

    def fresh(self, suffix: str) -> tuple[Node, tuple[Pod, ...]]:
        name = f"{self.node.name}-{suffix}"
        return fresh_node(self.node, name), tuple(fresh_pod(p, name, suffix) for p in self.pods)


def build_template(group: NodeGroup, members: Sequence[Node], snap: Snapshot) -> Template:
    """The template NodeInfo: ``spec.template`` with the DaemonSet and mirror pods running on
    the first member node (by name) — podsExpectedOnFreshNode of an example node."""
    node = fresh_node(group.template, group.template.name)
    pods: list[Pod] = []
    if members:
        example = sorted(members, key=lambda n: n.name)[0]
        for p in snap.pods_on(example.name):
            if p.meta.deletion_timestamp is None and (is_mirror_pod(p) or is_daemonset_pod(p)):
                pods.append(fresh_pod(p, node.name, "template"))
    return Template(group, node, tuple(pods))


# ============================================================================ equivalence
def _spec_signature(pod: Pod) -> str:
    """PodSpecSemanticallyEqual, approximately: the spec without the node it is bound or
    nominated to and without hostname/subdomain."""
    spec = dict(pod.raw.get("spec") or {})
    for key in ("nodeName", "hostname", "subdomain"):
        spec.pop(key, None)
    return json.dumps(spec, sort_keys=True, default=str)


@dataclass(slots=True)
class PodGroup:
    """equivalence.PodGroup: pods with equal scheduling properties, the groups they were
    found schedulable on, and each other group's scheduling error (its reasons)."""

    pods: list[Pod]
    errors: dict[str, tuple[str, ...]] = field(default_factory=dict)
    schedulable_groups: list[str] = field(default_factory=list)

    @property
    def exemplar(self) -> Pod:
        return self.pods[0]


MAX_EQUIVALENCE_GROUPS_BY_CONTROLLER = 10


def build_pod_groups(pods: Sequence[Pod]) -> list[PodGroup]:
    """equivalence.BuildPodGroups (groups in the pods' order)."""
    groups: list[PodGroup] = []
    by_controller: dict[str, list[tuple[int, Pod, str]]] = {}
    for pod in pods:
        ref = pod.meta.controller_ref()
        if ref is None or is_daemonset_pod(pod):
            groups.append(PodGroup([pod]))
            continue
        uid = ref.uid or f"{ref.kind}/{pod.namespace}/{ref.name}"
        egs = by_controller.setdefault(uid, [])
        sig = _spec_signature(pod)
        found = next((gid for gid, rep, rep_sig in egs if dict(rep.labels) == dict(pod.labels) and rep_sig == sig), None)
        if found is not None:
            groups[found].pods.append(pod)
            continue
        if len(egs) < MAX_EQUIVALENCE_GROUPS_BY_CONTROLLER:
            egs.append((len(groups), pod, sig))
        groups.append(PodGroup([pod]))
    return groups


def pod_score(pod: Pod, template: Node) -> float:
    """DecreasingPodOrderer.calculatePodScore: regular containers' cpu and memory requests
    over the template's allocatable."""
    from kubesched.whatif._autoscale_expanders import _container_requests

    cpu, mem = _container_requests(pod)
    score = 0.0
    if template.allocatable.get("cpu", 0) > 0:
        score += cpu / template.allocatable["cpu"]
    if template.allocatable.get("memory", 0) > 0:
        score += mem / template.allocatable["memory"]
    return score


# ============================================================================ results
@dataclass(frozen=True, slots=True)
class ScaleUpOption:
    group: str
    nodes: int
    pods: tuple[str, ...]
    measure: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"group": self.group, "nodes": self.nodes, "pods": list(self.pods),
                **({"measure": self.measure} if self.measure else {})}


@dataclass(frozen=True, slots=True)
class ScaleUp:
    """The scale-up: the expander, the option it chose (None: no scale-up), every option, the
    groups that would not help and why, the pods no group helps with their event text."""

    expander: str
    seed: int
    unschedulable: tuple[str, ...]
    chosen: ScaleUpOption | None
    current_size: int
    new_size: int
    options: tuple[ScaleUpOption, ...]
    no_scale_up: tuple[tuple[str, str], ...]  # (group, reason)
    not_triggered: tuple[tuple[str, str], ...]  # (pod, "pod didn't trigger scale-up: ...")
    placements: tuple[tuple[str, str], ...]  # chosen option: pod -> new node

    def as_dict(self) -> dict[str, Any]:
        return {
            "expander": self.expander, "seed": self.seed, "unschedulablePods": list(self.unschedulable),
            "chosen": None if self.chosen is None else {
                "group": self.chosen.group, "nodes": self.chosen.nodes, "pods": list(self.chosen.pods),
                "currentSize": self.current_size, "newSize": self.new_size},
            "options": [o.as_dict() for o in self.options],
            "noScaleUp": [{"group": g, "reason": r} for g, r in self.no_scale_up],
            "notTriggered": [{"pod": p, "message": m} for p, m in self.not_triggered],
            "placements": dict(self.placements),
        }


@dataclass(frozen=True, slots=True)
class NodeUtilization:
    node: str
    group: str | None
    cpu: float
    memory: float
    resource: str
    utilization: float

    def as_dict(self) -> dict[str, Any]:
        return {"group": self.group, "cpu": round(self.cpu, 6), "memory": round(self.memory, 6),
                "resource": self.resource, "utilization": round(self.utilization, 6)}


@dataclass(frozen=True, slots=True)
class ScaleDown:
    threshold: float
    removable: tuple[str, ...]
    blocked: tuple[tuple[str, str, str], ...]  # (node, UnremovableReason, message)
    moves: tuple[tuple[str, str], ...]  # pod -> node
    utilization: tuple[NodeUtilization, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "removable": list(self.removable),
                "blocked": {n: f"{r}: {m}" if m else r for n, r, m in self.blocked},
                "moves": dict(self.moves),
                "utilization": {u.node: u.as_dict() for u in self.utilization}}


@dataclass(frozen=True, slots=True)
class GroupState:
    """A node group before and after: its size now, after the chosen scale-up, after the
    cheapest one, and after the scale-down."""

    name: str
    min_size: int
    max_size: int
    price_per_hour: float
    size: int
    after_scale_up: int
    after_optimal: int
    after_scale_down: int

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "minSize": self.min_size, "maxSize": self.max_size,
                "pricePerHour": self.price_per_hour, "size": self.size, "afterScaleUp": self.after_scale_up,
                "afterOptimal": self.after_optimal, "afterScaleDown": self.after_scale_down}


@dataclass(frozen=True, slots=True)
class AutoscaleResult:
    groups: tuple[GroupState, ...]
    scale_up: ScaleUp
    optimal: Any  # kubesched.whatif._autoscale_optimal.OptimalScaleUp
    scale_down: ScaleDown
    scheduled: tuple[tuple[str, str], ...]  # pending pods the scheduler places on the cluster as it is
    not_attempted: tuple[tuple[str, str], ...]
    preempted: tuple[str, ...]
    notes: tuple[str, ...]
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "AutoscaleReview",
            "groups": [g.as_dict() for g in self.groups],
            "scheduled": dict(self.scheduled),
            "notAttempted": dict(self.not_attempted),
            "preempted": list(self.preempted),
            "scaleUp": self.scale_up.as_dict(),
            "optimal": self.optimal.as_dict(),
            "scaleDown": self.scale_down.as_dict(),
            "notes": list(self.notes),
            "seconds": round(self.seconds, 3),
        }


# ============================================================================ scale-up
def _limit(group: NodeGroup, size: int) -> int:
    """thresholdBasedEstimationLimiter.StartEstimation: getMinLimit over the static threshold
    (--max-nodes-per-scaleup) and the group's room (sngCapacityThreshold: -1 when none)."""
    room = group.max_size - size
    limits = (MAX_NODES_PER_SCALE_UP, room if room > 0 else -1)
    out = 0
    for limit in limits:
        if out < 0 or limit < 0:
            return -1
        if (out == 0 or out > limit) and limit > 0:
            out = limit
    return out


@dataclass(slots=True)
class Estimate:
    nodes: int
    pods: list[Pod]
    placements: list[tuple[str, str]]


def estimate(snap: Snapshot, pod_groups: Sequence[PodGroup], template: Template, max_nodes: int) -> Estimate:
    """BinpackingNodeEstimator.Estimate for one group (the snapshot is forked and reverted)."""
    ordered = sorted(pod_groups, key=lambda g: -pod_score(g.exemplar, template.node))  # stable
    snap.fork()
    try:
        new_nodes: list[str] = []
        with_pods: set[str] = set()
        scheduled: list[Pod] = []
        placements: list[tuple[str, str]] = []
        added = 0
        snap._last_index = 0

        def place(pod: Pod, node: str) -> None:
            snap.add_pod(pod, node)
            with_pods.add(node)
            scheduled.append(pod)
            placements.append((pod.key, node))

        for eg in ordered:
            remaining = list(eg.pods)
            # tryToScheduleOnExistingNodes: the new nodes added so far.
            index = 0
            while index < len(remaining):
                found = snap.fits_any(remaining[index], new_nodes)
                if found is None:
                    break
                place(remaining[index], found)
                index += 1
            # tryToScheduleOnNewNodes.
            for pod in remaining[index:]:
                last = new_nodes[-1] if new_nodes else ""
                if last and snap.check(pod, last) is None:
                    place(pod, last)
                    continue
                if last and last not in with_pods:
                    break  # an empty new node did not take it: another would not either
                if max_nodes < 0 or (max_nodes > 0 and added >= max_nodes):
                    break  # PermissionToAddNode
                added += 1
                node, pods = template.fresh(f"e-{len(new_nodes)}")
                snap.add_node(node, pods)
                new_nodes.append(node.name)
                if snap.check(pod, node.name) is not None:
                    break
                place(pod, node.name)
        return Estimate(len(with_pods), scheduled, placements)
    finally:
        snap.revert()


def reasons_message(pod_group: PodGroup, skipped: Mapping[str, str]) -> str:
    """ReasonsMessage: per reason, how many groups gave it (rejected, then skipped groups)."""
    counts: Counter[str] = Counter()
    for reasons in pod_group.errors.values():
        counts.update(reasons)
    counts.update(skipped.values())
    parts = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return NOT_TRIGGER_SCALE_UP + ", ".join(f"{n} {msg}" for msg, n in parts)


def scale_up(snap: Snapshot, groups: Sequence[NodeGroup], templates: Mapping[str, Template],
             sizes: Mapping[str, int], pod_groups: list[PodGroup], *, expander: str, seed: int,
             cluster_size: int, notes: list[str]) -> ScaleUp:
    """ScaleUpOrchestrator.ScaleUp over the unschedulable pods' groups."""
    unschedulable = tuple(p.key for eg in pod_groups for p in eg.pods)
    skipped: dict[str, str] = {}
    valid: list[NodeGroup] = []
    for g in groups:
        if sizes[g.name] >= g.max_size:  # filterValidScaleUpNodeGroups
            skipped[g.name] = MAX_LIMIT_REACHED
        else:
            valid.append(g)
    schedulable: dict[str, list[PodGroup]] = {}
    for g in valid:  # SchedulablePodGroups
        t = templates[g.name]
        snap.fork()
        try:
            snap.add_node(t.node, t.pods)
            ok: list[PodGroup] = []
            for eg in pod_groups:
                s = snap.check(eg.exemplar, t.node.name)
                if s is None:
                    ok.append(eg)
                    eg.schedulable_groups.append(g.name)
                else:
                    eg.errors[g.name] = status_reasons(s)
            schedulable[g.name] = ok
        finally:
            snap.revert()
    options: list[Option] = []
    estimates: dict[str, Estimate] = {}
    no_scale_up: list[tuple[str, str]] = [(g, r) for g, r in skipped.items()]
    for g in valid:  # ComputeExpansionOption
        egs = schedulable[g.name]
        if not egs:
            reasons = sorted({r for eg in pod_groups for r in eg.errors.get(g.name, ())})
            no_scale_up.append((g.name, "no pending pod fits its template node: " + ", ".join(reasons)))
            continue
        est = estimate(snap, egs, templates[g.name], _limit(g, sizes[g.name]))
        estimates[g.name] = est
        if not est.pods or est.nodes == 0:
            no_scale_up.append((g.name, "no pod can fit: the binpacking estimator adds no node"))
            continue
        options.append(Option(g.name, est.nodes, tuple(est.pods)))
    rng = random.Random(seed)
    by_name = {g.name: g for g in groups}
    choice: Choice = choose(expander, options, rng, templates={n: t.node for n, t in templates.items()},
                            prices={g.name: g.price_per_hour for g in groups},
                            priorities={g.name: g.priority for g in groups}, cluster_size=cluster_size, notes=notes)
    chosen = None
    current = new = 0
    placements: tuple[tuple[str, str], ...] = ()
    if choice.option is not None:
        o = choice.option
        g = by_name[o.group]
        current = sizes[g.name]
        new = min(current + o.node_count, g.max_size)  # BalanceScaleUpBetweenGroups caps at MaxSize
        chosen = ScaleUpOption(o.group, new - current, tuple(p.key for p in o.pods), choice.measures.get(o.group, ""))
        placements = tuple(estimates[o.group].placements)
    not_triggered = tuple((p.key, reasons_message(eg, skipped)) for eg in pod_groups if not eg.schedulable_groups
                          for p in eg.pods)
    return ScaleUp(expander, seed, unschedulable, chosen, current, new,
                   tuple(ScaleUpOption(o.group, o.node_count, tuple(p.key for p in o.pods),
                                       choice.measures.get(o.group, "")) for o in options),
                   tuple(no_scale_up), not_triggered, placements)


# ============================================================================ scale-down
def _long_terminating(pod: Pod, now: float) -> bool:
    """drain.IsPodLongTerminating: deleted more than grace period + 30 s ago."""
    d = pod.meta.deletion_timestamp
    return d is not None and d + pod.termination_grace_period_seconds + LONG_TERMINATING_EXTRA < now


def _is_terminal(pod: Pod) -> bool:
    """drain.IsPodTerminal."""
    restart = str((pod.raw.get("spec") or {}).get("restartPolicy") or "Always")
    if restart == "Never" and pod.phase in ("Succeeded", "Failed"):
        return True
    if restart == "OnFailure" and pod.phase == "Succeeded":
        return True
    return pod.phase == "Failed"


def _has_blocking_local_storage(pod: Pod) -> bool:
    """drain.HasBlockingLocalStorage: a hostPath, or an emptyDir not in memory, not named in
    the safe-to-evict-local-volumes annotation."""
    allowed = set(filter(None, pod.meta.annotations.get(SAFE_TO_EVICT_LOCAL_VOLUMES, "").split(",")))
    for v in pod.volumes:
        local = v.kind == "hostPath" or (v.kind == "emptyDir" and (v.source or {}).get("medium") != "Memory")
        if local and v.name not in allowed:
            return True
    return False


def utilization(snap: Snapshot, node: Node, now: float) -> NodeUtilization:
    """utilization.Calculate (DaemonSet and mirror pods counted, as by default)."""
    pods = [p for p in snap.pods_on(node.name) if not _long_terminating(p, now)]

    def of(resource: str) -> float:
        alloc = node.allocatable.get(resource, 0)
        if alloc <= 0:
            return 0.0
        return sum(p.requests.get(resource, 0) for p in pods) / alloc

    if node.allocatable.get(GPU_RESOURCE, 0) > 0:  # GetNodeGpuConfig: a GPU node
        gpu = of(GPU_RESOURCE)
        return NodeUtilization(node.name, None, 0.0, 0.0, GPU_RESOURCE, gpu)
    cpu, mem = of("cpu"), of("memory")
    return NodeUtilization(node.name, None, cpu, mem, "cpu" if cpu > mem else "memory", max(cpu, mem))


class _PdbTracker:
    """pdb.BasicRemainingPdbTracker: the disruptions each PDB has left."""

    def __init__(self, objs: ClusterObjects) -> None:
        self.pdbs = list(objs.pdbs)
        self.left = {id(p): p.disruptions_allowed for p in self.pdbs}

    def matching(self, pod: Pod) -> list[Any]:
        return [p for p in self.pdbs if p.namespace == pod.namespace and p.selector is not None
                and p.selector.matches(pod.labels)]

    def remove_pods(self, pods: Sequence[Pod]) -> None:
        for pod in pods:
            for p in self.matching(pod):
                self.left[id(p)] -= 1


_LISTER_RESOURCE = {"ReplicationController": 'replicationcontroller "{}" not found',
                    "ReplicaSet": 'replicaset.apps "{}" not found', "Job": 'job.batch "{}" not found',
                    "StatefulSet": 'statefulset.apps "{}" not found', "DaemonSet": 'daemonset.apps "{}" not found'}


def _drainable(pod: Pod, pdbs: _PdbTracker, controllers: set[tuple[str, str, str]], now: float
               ) -> tuple[str, str, str] | None:
    """rules.Default's Drainable: ("skip" | "ok" | "block", blocking reason, error text) or
    None (undefined: the pod is moved)."""
    if is_mirror_pod(pod):
        return ("skip", "", "")
    if _long_terminating(pod, now):
        return ("skip", "", "")
    ref = pod.meta.controller_ref()
    # replicacount/rule.go (skipNodesWithCustomControllerPods, minReplicaCount 0).
    if ref is not None and ref.kind in _LISTER_RESOURCE:
        daemonset = is_daemonset_pod(pod)
        checked = ref.kind != "DaemonSet" or (daemonset and ref.api_version.split("/")[0] == "apps")
        if checked and (ref.kind, pod.namespace, ref.name) not in controllers:
            err = _LISTER_RESOURCE[ref.kind].format(ref.name)
            if ref.kind == "ReplicationController":
                text = f"replication controller for {pod.key} is not available, err: {err}"
            elif ref.kind == "ReplicaSet":
                text = f"replication controller for {pod.key} is not available, err: {err}"
            elif ref.kind == "Job":
                text = f"job for {pod.key} is not available: err: {err}"
            elif ref.kind == "StatefulSet":
                text = f"statefulset for {pod.key} is not available: err: {err}"
            else:
                text = f"daemonset for {pod.key} is not present, err: {err}"
            return ("block", CONTROLLER_NOT_FOUND, text)
    if is_daemonset_pod(pod):
        return ("ok", "", "")
    if pod.meta.annotations.get(SAFE_TO_EVICT) == "true":
        return ("ok", "", "")
    if _is_terminal(pod):
        return ("ok", "", "")
    if ref is None or ref.kind not in _REPLICATED_KINDS:
        return ("block", NOT_REPLICATED, f"{pod.key} is not replicated")
    if pod.namespace == "kube-system" and not pdbs.matching(pod):
        return ("block", UNMOVABLE_KUBE_SYSTEM_POD,
                f"non-daemonset, non-mirrored, non-pdb-assigned kube-system pod present: {pod.name}")
    if pod.meta.annotations.get(SAFE_TO_EVICT) == "false":
        return ("block", NOT_SAFE_TO_EVICT_ANNOTATION, f"pod annotated as not safe to evict present: {pod.name}")
    if _has_blocking_local_storage(pod):
        return ("block", LOCAL_STORAGE_REQUESTED, f"pod with local storage present: {pod.name}")
    for p in pdbs.matching(pod):
        if pdbs.left[id(p)] < 1:
            return ("block", NOT_ENOUGH_PDB, f"not enough pod disruption budget to move {pod.key}")
    return None


def scale_down(snap: Snapshot, objs: ClusterObjects, groups: Sequence[NodeGroup], membership: Mapping[str, NodeGroup],
               *, threshold: float, now: float) -> ScaleDown:
    """Planner.categorizeNodes then Nodes.RemovableAt (see the module docstring)."""
    nodes = sorted(objs.nodes, key=lambda n: n.name)
    blocked: list[tuple[str, str, str]] = []
    utils: list[NodeUtilization] = []
    candidates: list[Node] = []
    for node in nodes:
        g = membership.get(node.name)
        if any(t.key == TO_BE_DELETED_TAINT for t in node.taints):
            blocked.append((node.name, CURRENTLY_BEING_DELETED, "the node is currently being deleted"))
            continue
        if node.meta.annotations.get(SCALE_DOWN_DISABLED) == "true":
            blocked.append((node.name, SCALE_DOWN_DISABLED_ANNOTATION, "the node is marked as no scale down"))
            continue
        if g is None:
            blocked.append((node.name, NOT_AUTOSCALED, "the node is not autoscaled"))
            continue
        u = dataclasses.replace(utilization(snap, node, now), group=g.name)
        utils.append(u)
        if u.utilization >= threshold:
            blocked.append((node.name, NOT_UNDERUTILIZED,
                            f"{u.resource} requested ({u.utilization * 100:.6g}% of allocatable) is above the "
                            f"scale-down utilization threshold"))
            continue
        candidates.append(node)
    controllers = {(w.kind, w.namespace, w.name) for w in (*objs.workloads, *objs.controllers)}
    pdbs = _PdbTracker(objs)
    destinations = [n.name for n in nodes]
    removable: list[tuple[str, list[tuple[str, str]]]] = []  # (node, moves)
    for node in candidates:  # SimulateNodeRemoval
        to_move: list[Pod] = []
        block: tuple[str, str, str] | None = None
        for pod in snap.pods_on(node.name):
            verdict = _drainable(pod, pdbs, controllers, now)
            if verdict is None:
                if not is_daemonset_pod(pod):
                    to_move.append(pod)
            elif verdict[0] == "block":
                block = verdict
                break
            elif verdict[0] == "ok" and not is_daemonset_pod(pod):
                to_move.append(pod)
        if block is not None:
            blocked.append((node.name, BLOCKED_BY_POD, f"{block[1]}: {block[2]}"))
            continue
        snap.fork()
        targets = [d for d in destinations if d != node.name]
        moves: list[tuple[str, str]] = []
        for pod in to_move:  # findPlaceFor
            snap.remove_pod(pod)
        for pod in to_move:
            unbound = dataclasses.replace(pod, node_name="")
            found = snap.fits_any(unbound, targets)
            if found is None:
                break
            snap.add_pod(unbound, found)
            moves.append((pod.key, found))
        if len(moves) != len(to_move):
            snap.revert()
            blocked.append((node.name, NO_PLACE_TO_MOVE_PODS,
                            f"can reschedule only {len(moves)} out of {len(to_move)} pods"))
            continue
        snap.commit()
        destinations.remove(node.name)
        pdbs.remove_pods(to_move)
        removable.append((node.name, moves))
    # RemovableAt: empty nodes first, then the ones to drain; minSize per group.
    size = Counter(membership[n.name].name for n in objs.nodes if n.name in membership)
    final: list[str] = []
    all_moves: list[tuple[str, str]] = []
    for name, moves in sorted(removable, key=lambda r: (bool(r[1]), r[0])):
        g = membership[name]
        if size[g.name] <= g.min_size:
            blocked.append((name, NODE_GROUP_MIN_SIZE_REACHED, "node group min size reached"))
            continue
        size[g.name] -= 1
        final.append(name)
        all_moves.extend(moves)
    blocked.sort(key=lambda b: b[0])
    return ScaleDown(threshold, tuple(sorted(final)), tuple(blocked), tuple(all_moves), tuple(utils))


# ============================================================================ the pipeline
def _pod_signature(pod: Pod) -> tuple[Any, ...]:
    return (pod.scheduler_name, pod.namespace, pod.priority, tuple(sorted(pod.labels.items())), _spec_signature(pod))


def schedule_pending(sim: Simulator, objs: ClusterObjects) -> tuple[SimulationResult, list[str]]:
    """The simulation's procedure (Simulator.run: queue order, one attempt, at once again after
    a preemption, Permit waits on the simulated clock), with one shortcut that changes no
    outcome: a pod identical to one that just failed (same profile, namespace, priority, labels
    and spec) while the cluster has not changed since (no bind, no nomination, no victim, no
    pod waiting) fails the same way, so it is not attempted again. Returns the result (final
    node per pod, skipped pods, victims) and the pods attempted, in order."""
    result = SimulationResult(oracle=sim.features.oracle)
    order, result.skipped = sim.pending()
    for p in order:
        if p.nominated_node_name:
            sim.nominator.add_nominated_pod(PodInfo(p))
    attempted: list[str] = []
    failed: set[tuple[Any, ...]] = set()
    waiting: list[Attempt] = []
    cycles = 0
    try:
        for pod in order:
            if pod.uid in sim.deleted:
                continue
            attempted.append(pod.key)
            signature = _pod_signature(pod)
            if signature in failed and not waiting:
                continue
            number = 1
            while True:
                cycles += 1
                sim.now = objs.latest_timestamp + cycles
                attempt = sim.scheduler.schedule_one(sim.current[pod.uid])
                if attempt.outcome == "Waiting":
                    waiting.append(attempt)
                sim.finish_waiting(waiting)
                if attempt.outcome == "Scheduled" or not attempt.nominated_node or number >= MAX_ATTEMPTS:
                    break
                number += 1
            if attempt.outcome == "Unschedulable" and not attempt.nominated_node and not attempt.victims:
                failed.add(signature)
            else:
                failed.clear()
        sim.wait_out(waiting)
    finally:
        sim.close()
    for p in objs.pods:
        if p.uid in sim.deleted:
            result.deleted.append(p.key)
            continue
        result.final[p.key] = sim.current[p.uid].node_name or None
    return result, attempted


def _preemption_possible(objs: ClusterObjects) -> bool:
    """Whether some pending pod outranks some running pod (the only pods preemption evicts)."""
    bound = [p.priority for p in objs.pods if p.node_name and not p.is_terminal]
    pending = [p.priority for p in objs.pods if not p.node_name and not p.is_terminal]
    return bool(bound) and bool(pending) and max(pending) > min(bound)


def autoscale(objs: ClusterObjects, groups: Sequence[NodeGroup], config: KubeSchedulerConfiguration | None = None, *,
              expander: str = RANDOM, seed: int = 0, threshold: float = DEFAULT_UTILIZATION_THRESHOLD,
              time_limit: float = 10.0, registry: Mapping[str, Factory] | None = None,
              optimal: bool = True) -> AutoscaleResult:
    """cluster-autoscaler's decisions on ``objs`` with ``groups`` (see the module docstring)."""
    from kubesched.whatif._autoscale_optimal import OptimalScaleUp, optimal_scale_up

    if expander not in EXPANDERS:
        raise KubeschedError(f"unknown expander {expander!r}: want one of {', '.join(EXPANDERS)}")
    if not 0.0 <= threshold <= 1.0:
        raise KubeschedError(f"the scale-down utilization threshold must be between 0 and 1, got {threshold}")
    t0 = time.perf_counter()
    notes: list[str] = []
    membership = group_of_nodes(groups, objs.nodes)
    sizes = {g.name: sum(1 for n in objs.nodes if membership.get(n.name) is g) for g in groups}
    for g in groups:
        if sizes[g.name] > g.max_size:
            notes.append(f"node group {g.name} has {sizes[g.name]} nodes, more than its maxSize {g.max_size}")
        if sizes[g.name] < g.min_size:
            notes.append(f"node group {g.name} has {sizes[g.name]} nodes, fewer than its minSize {g.min_size}: "
                         f"cluster-autoscaler would scale it up to its minimum (ScaleUpToNodeGroupMinSize)")
    cfg = config
    if not _preemption_possible(objs):
        # DefaultPreemption evicts only pods of lower priority: with none running, its dry
        # run finds no victim for any pending pod; the profile without PostFilter decides the
        # same, without the dry run over every node for each unschedulable pod.
        cfg = without_preemption(config if config is not None else default_configuration(features=objs.features))
    sim = Simulator(objs, cfg, deterministic=True, registry=registry)
    result, attempted = schedule_pending(sim, objs)
    by_key = {p.key: p for p in objs.pods}
    deleted = set(result.deleted)
    scheduled = tuple((k, placed) for k in attempted if (placed := result.final.get(k)))
    pending = [dataclasses.replace(by_key[k], nominated_node_name="") for k in attempted
               if not result.final.get(k) and k not in deleted]
    # The pod list processors: FilterOutDaemonSetPodListProcessor (a DaemonSet pod is never a
    # reason to add a node) and FilterOutExpendablePodListProcessor (priority below
    # --expendable-pods-priority-cutoff, -10).
    ignored = [p.key for p in pending if is_daemonset_pod(p) or p.priority < EXPENDABLE_PRIORITY_CUTOFF]
    if ignored:
        notes.append(f"{len(ignored)} unschedulable pod(s) are DaemonSet pods or expendable (priority below "
                     f"{EXPENDABLE_PRIORITY_CUTOFF}): cluster-autoscaler does not scale up for them "
                     f"({', '.join(ignored[:5])}{', ...' if len(ignored) > 5 else ''})")
        pending = [p for p in pending if p.key not in set(ignored)]
    if result.deleted:
        notes.append(f"the scheduler preempted {len(result.deleted)} running pod(s) to place pending ones: "
                     f"{', '.join(result.deleted[:5])}{', ...' if len(result.deleted) > 5 else ''}")
    if any(p.resource_claims for p in pending):
        notes.append("pending pods with resource claims: their devices are checked by DynamicResources' filter on "
                     "each node, but the estimator does not allocate them as it places pods")
    snap = Snapshot(sim)
    members: dict[str, list[Node]] = {g.name: [] for g in groups}
    for n in objs.nodes:
        if n.name in membership:
            members[membership[n.name].name].append(n)
    templates = {g.name: build_template(g, members[g.name], snap) for g in groups}
    pod_groups = build_pod_groups(pending)
    up = scale_up(snap, groups, templates, sizes, pod_groups, expander=expander, seed=seed,
                  cluster_size=len(objs.nodes), notes=notes)
    opt: OptimalScaleUp = optimal_scale_up(snap, objs, result, groups, templates, sizes, pod_groups, config,
                                           registry=registry, time_limit=time_limit, enabled=optimal)
    now = objs.latest_timestamp
    down = scale_down(snap, objs, groups, membership, threshold=threshold, now=now)
    missing = sorted({b[2].split(": ", 1)[0] for b in down.blocked if CONTROLLER_NOT_FOUND in b[2]})
    if missing:
        notes.append("pods name a controller the input lacks: cluster-autoscaler's ReplicaCount rule blocks their "
                     "nodes (ControllerNotFound); give the input the controllers to evaluate those nodes")
    removed = Counter(membership[n].name for n in down.removable)
    up_nodes = {up.chosen.group: up.chosen.nodes} if up.chosen is not None else {}
    states = tuple(GroupState(g.name, g.min_size, g.max_size, g.price_per_hour, sizes[g.name],
                              sizes[g.name] + up_nodes.get(g.name, 0), sizes[g.name] + opt.nodes.get(g.name, 0),
                              sizes[g.name] - removed.get(g.name, 0)) for g in groups)
    return AutoscaleResult(states, up, opt, down, scheduled, tuple(sorted(result.skipped.items())),
                           tuple(result.deleted), tuple(notes), time.perf_counter() - t0)
