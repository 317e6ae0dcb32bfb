"""NodeResourcesFit: the node must have room for the pod's requests (PreFilter/Filter), and
nodes are scored by a resource strategy (PreScore/Score): LeastAllocated (default),
MostAllocated or RequestedToCapacityRatio.

Mirrors noderesources/fit.go (PreFilter, Filter, fitsRequest, Fits, PreScore, Score,
EventsToRegister and its queueing hints) with the scorers of resource_allocation.go.

DRAExtendedResource (shouldDelegateResourceToDRA): a scalar resource of the pod that a
DeviceClass maps (``extendedResourceName`` or ``deviceclass.resource.kubernetes.io/<class>``) is
not checked on a node without allocatable for it — DynamicResources allocates devices for it
there. The mapped names are found once per pod (PreFilter) and the per-node test is
``allocatable <= 0``, on the per-node and the batch paths alike.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from kubesched.config.args import (
    LEAST_ALLOCATED,
    MAX_CUSTOM_PRIORITY_SCORE,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFitArgs,
    ResourceSpec,
    UtilizationShapePoint,
)
from kubesched.errors import ConfigError, PluginError
from kubesched.features import DEFAULT_FEATURES
from kubesched.framework import (
    GVK,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    NodeTable,
    PreFilterResult,
    QueueingHint,
    Resource,
    StateKey,
    Status,
)
from kubesched.framework.interfaces import BoolArray, IntArray
from kubesched.framework.signers import SignFragment
from kubesched.objects import Node, Pod
from kubesched.objects.devices import DeviceClass, is_dra_extended_resource_name
from kubesched.objects.resources import is_extended_resource_name, is_scalar_resource_name
from kubesched.plugins.helpers.codes import group_codes
from kubesched.plugins.helpers.resourcefit import PODS, ResourceFit
from kubesched.plugins.helpers.shape_score import MAX_UTILIZATION
from kubesched.plugins.noderesources.resource_allocation import (
    LeastAllocatedScorer,
    MostAllocatedScorer,
    PreScoreState,
    RequestedToCapacityRatioScorer,
    RowScores,
    RowSelection,
    Scorer,
    node_vectors,
    pod_resource_request_list,
    row_vectors,
    sign_resources,
    table_vectors,
)

NAME = "NodeResourcesFit"
_PRE_FILTER_KEY: StateKey[PodResourceRequest] = StateKey("PreFilter" + NAME)
_PRE_SCORE_KEY: StateKey[PreScoreState] = StateKey("PreScore" + NAME)

REASON_TOO_MANY_PODS = "Too many pods"
_DEVICE_CLASSES = "resource.k8s.io/DeviceClass"
_MISSING_PRE_FILTER_STATE = f'error reading "PreFilter{NAME}" from cycleState: not found'


# ----------------------------------------------------------------------------- fitsRequest
@dataclass(frozen=True, slots=True)
class PodResourceRequest:
    """The pod's effective request as NodeResourcesFit sees it (preFilterState, a
    framework.Resource): cpu (milli), memory, ephemeral-storage and scalar resources; other
    names (``pods``, unqualified custom names) are ignored. Immutable: clone() shares it."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    scalar: tuple[tuple[str, int], ...] = ()
    # The scalar resources a DeviceClass maps (DRAExtendedResource): skipped where the node
    # has no allocatable for them.
    dra_backed: frozenset[str] = frozenset()

    @classmethod
    def of(cls, pod: Pod, dra_classes: Collection[str] = ()) -> PodResourceRequest:
        """computePodResourceRequest: PodRequests (section 3.1) without non-zero defaults;
        ``dra_classes``: the extended resource names DeviceClasses map."""
        r = pod.requests
        scalar = tuple((k, v) for k, v in r.items() if k not in _NATIVE and is_scalar_resource_name(k))
        backed = frozenset(k for k, v in scalar if v != 0 and k in dra_classes) if dra_classes else frozenset()
        return cls(r.get("cpu", 0), r.get("memory", 0), r.get("ephemeral-storage", 0), scalar, backed)

    def is_empty(self) -> bool:
        return self.milli_cpu == 0 and self.memory == 0 and self.ephemeral_storage == 0 and not self.scalar

    def clone(self) -> PodResourceRequest:
        return self


_NATIVE = frozenset(("cpu", "memory", "ephemeral-storage", "pods"))


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    """One resource the node lacks (fit.go: InsufficientResource)."""

    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int


def _is_ignored(name: str, ignored: Collection[str], ignored_groups: Collection[str]) -> bool:
    """Only extended resources can be ignored, by full name or by the prefix before '/'."""
    if not is_extended_resource_name(name):
        return False
    return name in ignored or (bool(ignored_groups) and name.split("/", 1)[0] in ignored_groups)


def fits_request(req: PodResourceRequest, node_info: NodeInfo, ignored: Collection[str] = (),
                 ignored_groups: Collection[str] = ()) -> list[InsufficientResource]:
    """fitsRequest: every insufficient resource, in the order pods, cpu, memory,
    ephemeral-storage, then scalar resources in the pod's request order (Go iterates a map
    here, so upstream's order among scalars is unspecified). A scalar the request marks
    DRA-backed is not checked where the node has none (shouldDelegateResourceToDRA)."""
    out: list[InsufficientResource] = []
    alloc = node_info.allocatable
    used = node_info.requested
    n_pods = len(node_info.pods)
    if n_pods + 1 > alloc.allowed_pod_number:
        out.append(InsufficientResource("pods", REASON_TOO_MANY_PODS, 1, n_pods, alloc.allowed_pod_number))
    if req.is_empty():
        return out
    if req.milli_cpu > 0 and req.milli_cpu > alloc.milli_cpu - used.milli_cpu:
        out.append(InsufficientResource("cpu", "Insufficient cpu", req.milli_cpu, used.milli_cpu, alloc.milli_cpu))
    if req.memory > 0 and req.memory > alloc.memory - used.memory:
        out.append(InsufficientResource("memory", "Insufficient memory", req.memory, used.memory, alloc.memory))
    if req.ephemeral_storage > 0 and req.ephemeral_storage > alloc.ephemeral_storage - used.ephemeral_storage:
        out.append(InsufficientResource("ephemeral-storage", "Insufficient ephemeral-storage", req.ephemeral_storage,
                                        used.ephemeral_storage, alloc.ephemeral_storage))
    for name, q in req.scalar:
        if q == 0 or _is_ignored(name, ignored, ignored_groups):
            continue
        a = alloc.scalar.get(name, 0)
        if a <= 0 and name in req.dra_backed:
            continue  # shouldDelegateResourceToDRA
        u = used.scalar.get(name, 0)
        if q > a - u:
            out.append(InsufficientResource(name, f"Insufficient {name}", q, u, a))
    return out


def fits(pod: Pod, node_info: NodeInfo, ignored_resources: Collection[str] = (),
         ignored_resource_groups: Collection[str] = (), dra_classes: Collection[str] = ()) -> list[InsufficientResource]:
    """Fits: does the node have room for the pod? (Used by the queue's pre-check, which
    passes no ignored resources.) Empty list = fits. ``dra_classes``: the extended resource
    names DeviceClasses map (DRAExtendedResource)."""
    return fits_request(PodResourceRequest.of(pod, dra_classes), node_info, ignored_resources, ignored_resource_groups)


def dra_extended_resource_names(handle: Handle | None) -> frozenset[str]:
    """The resource names the DeviceClassResolver maps, with DRAExtendedResource on (else none)."""
    if handle is None or not handle.features.enabled("DRAExtendedResource"):
        return frozenset()
    objects = handle.objects
    if objects is None:
        return frozenset()
    return frozenset(objects.extended_resource_classes())


# ----------------------------------------------------------------------------- queueing hints
# resourceapi.ResourceDeviceClassPrefix: the implicit extended resource name of a DeviceClass.
RESOURCE_DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"


def should_delegate_resource_to_dra(name: str, allocatable: Resource | None, dra_names: frozenset[str] | None) -> bool:
    """shouldDelegateResourceToDRA with DRAExtendedResource on (``dra_names`` None: no DRA
    manager, or the gate off): not a device-plugin resource of the node (allocatable > 0),
    and some DeviceClass provides it."""
    if allocatable is not None and allocatable.scalar.get(name, 0) > 0:
        return False
    return dra_names is not None and name in dra_names


def is_fit(pod: Pod, node: Node | None, dra_names: frozenset[str] | None = None) -> bool:
    """isFit: Fits on a NodeInfo holding only ``node`` (no pods); False without a node."""
    if node is None:
        return False
    return not fits_request(PodResourceRequest.of(pod, dra_names or ()), NodeInfo(node))


def have_any_requested_resources_increased(pod: Pod, original: Node, modified: Node,
                                           dra_names: frozenset[str] | None = None) -> bool:
    """haveAnyRequestedResourcesIncreased: more allowed pods, or more allocatable of a
    resource the pod requests, or (DRAExtendedResource) a requested scalar now left to DRA."""
    req = PodResourceRequest.of(pod)
    old = Resource.from_list(original.allocatable)
    new = Resource.from_list(modified.allocatable)
    if new.allowed_pod_number > old.allowed_pod_number:
        return True
    if req.is_empty():
        return False
    if ((req.milli_cpu > 0 and new.milli_cpu > old.milli_cpu)
            or (req.memory > 0 and new.memory > old.memory)
            or (req.ephemeral_storage > 0 and new.ephemeral_storage > old.ephemeral_storage)):
        return True
    for name, q in req.scalar:
        if q == 0:
            continue
        if new.scalar.get(name, 0) > old.scalar.get(name, 0):
            return True
        if should_delegate_resource_to_dra(name, new, dra_names):
            return True
    return False


def is_schedulable_after_pod_scale_down(target: Pod, original: Pod, modified: Pod) -> bool:
    """Fit.isSchedulableAfterPodScaleDown: the target pod itself scaled down, or a bound
    pod's request of a resource the target requests got smaller (SetMaxResource of each
    side's PodRequests). kubesched reads requests from the spec: status.containerStatuses'
    actuated resources (UseStatusResources) are not modelled, as everywhere else."""
    if modified.uid == target.uid:
        return True
    if not modified.node_name:
        return False
    old = Resource.from_list(original.requests)
    new = Resource.from_list(modified.requests)
    for name, v in target.requests.items():
        if v == 0:
            continue
        if name == "cpu":
            if old.milli_cpu > new.milli_cpu:
                return True
        elif name == "memory":
            if old.memory > new.memory:
                return True
        elif name == "ephemeral-storage":
            if old.ephemeral_storage > new.ephemeral_storage:
                return True
        elif is_scalar_resource_name(name) and old.scalar.get(name, 0) > new.scalar.get(name, 0):
            return True
    return False


# ----------------------------------------------------------------------------- args
def _validate(args: NodeResourcesFitArgs) -> None:
    """The checks of validation.ValidateNodeResourcesFitArgs that matter at runtime
    (the config loader reports them with field paths first)."""
    for i, group in enumerate(args.ignored_resource_groups):
        if "/" in group:
            raise ConfigError("resource group name can't contain '/'", field=f"ignoredResourceGroups[{i}]")
    strategy = args.scoring_strategy
    if strategy.type not in (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO):
        raise ConfigError(f"Unsupported value: {strategy.type!r}: supported values: \"{LEAST_ALLOCATED}\", "
                          f"\"{MOST_ALLOCATED}\", \"{REQUESTED_TO_CAPACITY_RATIO}\"", field="scoringStrategy.type")
    for i, r in enumerate(strategy.resources):
        if r.weight <= 0 or r.weight > 100:
            raise ConfigError(f"Invalid value: {r.weight}: resource weight of {r.name} not in valid range (0, 100]",
                              field=f"scoringStrategy.resources[{i}].weight")
    rtcr = strategy.requested_to_capacity_ratio
    if rtcr is not None:
        _validate_shape(rtcr.shape)
    elif strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        raise ConfigError("Required value: at least one point must be specified", field="scoringStrategy.shape")


def _validate_shape(shape: Sequence[UtilizationShapePoint]) -> None:
    """validateFunctionShape."""
    if not shape:
        raise ConfigError("Required value: at least one point must be specified", field="scoringStrategy.shape")
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            raise ConfigError(f"Invalid value: {shape[i].utilization}: utilization values must be sorted in "
                              "increasing order", field=f"scoringStrategy.shape[{i}].utilization")
    for i, p in enumerate(shape):
        if not 0 <= p.utilization <= MAX_UTILIZATION:
            raise ConfigError(f"Invalid value: {p.utilization}: not in valid range [0, {MAX_UTILIZATION}]",
                              field=f"scoringStrategy.shape[{i}].utilization")
        if not 0 <= p.score <= MAX_CUSTOM_PRIORITY_SCORE:
            raise ConfigError(f"Invalid value: {p.score}: not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]",
                              field=f"scoringStrategy.shape[{i}].score")


def _make_scorer(args: NodeResourcesFitArgs) -> Scorer:
    """nodeResourceStrategyTypeMap."""
    strategy = args.scoring_strategy
    if strategy.type == MOST_ALLOCATED:
        return MostAllocatedScorer(strategy.resources)
    if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        assert strategy.requested_to_capacity_ratio is not None  # _validate
        return RequestedToCapacityRatioScorer(strategy.resources, strategy.requested_to_capacity_ratio.shape)
    return LeastAllocatedScorer(strategy.resources)


# ----------------------------------------------------------------------------- plugin
class Fit:
    name = NAME

    def __init__(self, args: NodeResourcesFitArgs | None = None, handle: Handle | None = None) -> None:
        args = args or NodeResourcesFitArgs()
        _validate(args)
        self.handle = handle
        self.args = args
        self.ignored_resources = frozenset(args.ignored_resources)
        self.ignored_resource_groups = frozenset(args.ignored_resource_groups)
        self.resources: tuple[ResourceSpec, ...] = tuple(args.scoring_strategy.resources)
        self.scorer = _make_scorer(args)
        # Scores per table row, per pod request vector (see RowScores).
        self._row_scores = RowScores()
        self._resource_fits: dict[PodResourceRequest, ResourceFit] = {}
        features = handle.features if handle is not None else DEFAULT_FEATURES
        self._oversize_unresolvable = features.enabled("UnresolvableOversize")
        self._queueing_hints = features.enabled("SchedulerQueueingHints")
        self._in_place_scaling = features.enabled("InPlacePodVerticalScaling")
        self._dra_extended_resource = features.enabled("DRAExtendedResource")

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """SignPod: the pod's requests (computePodResourceRequest); not signable when a
        requested extended resource is one a DeviceClass provides (DRAExtendedResource)."""
        return sign_resources(pod, self._dra_names)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Fit.EventsToRegister. Without queueing hints (v1.30): Pod/Delete and any Node
        Add/Update. With them (1.36): Pod/Delete (| UpdatePodScaleDown with
        InPlacePodVerticalScaling), Node Add | UpdateNodeAllocatable (no preCheck, so no
        label/taint bits) and, with DRAExtendedResource, DeviceClass Add | Update."""
        if not self._queueing_hints:
            return [
                ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.DELETE)),
                ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE)),
            ]
        pod_action = ActionType.DELETE
        if self._in_place_scaling:
            pod_action |= ActionType.UPDATE_POD_SCALE_DOWN
        events = [
            ClusterEventWithHint(ClusterEvent(GVK.POD, pod_action), self.is_schedulable_after_pod_event),
            ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
                                 self.is_schedulable_after_node_change),
        ]
        if self._dra_extended_resource:
            events.append(ClusterEventWithHint(ClusterEvent(GVK.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE),
                                               self.is_schedulable_after_device_class_event))
        return events

    # ---- queueing hints (fit.go)
    def is_schedulable_after_pod_event(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterPodEvent: a deleted pod that was bound or nominated may free
        room; an update (UpdatePodScaleDown) only with InPlacePodVerticalScaling, when
        isSchedulableAfterPodScaleDown says so. Objects that are not pods: Queue (error)."""
        if not _pods_or_none(old, new) or (old is None and new is None):
            return QueueingHint.QUEUE
        if new is None:
            assert isinstance(old, Pod)
            if not old.node_name and not old.nominated_node_name:
                return QueueingHint.QUEUE_SKIP
            return QueueingHint.QUEUE
        if not self._in_place_scaling:
            return QueueingHint.QUEUE_SKIP
        assert isinstance(new, Pod)
        if not isinstance(old, Pod):
            return QueueingHint.QUEUE  # an update always has its old pod
        if not is_schedulable_after_pod_scale_down(pod, old, new):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def _dra_names(self) -> frozenset[str] | None:
        """The DeviceClass-backed extended resource names (the SharedDRAManager's
        DeviceClassResolver), only with DRAExtendedResource."""
        if not self._dra_extended_resource or self.handle is None:
            return None
        return dra_extended_resource_names(self.handle)

    def is_schedulable_after_node_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterNodeChange: Skip unless the pod fits the (new) node alone; a
        fitting added node Queues; an update Queues only when a requested resource (or the
        pod count) grew, or a requested scalar is now DRA's (DRAExtendedResource)."""
        if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
            return QueueingHint.QUEUE
        dra_names = self._dra_names()
        if not is_fit(pod, new, dra_names):
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        if not have_any_requested_resources_increased(pod, old, new, dra_names):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_device_class_event(self, pod: Pod, old: object | None,
                                                new: object | None) -> QueueingHint:
        """isSchedulableAfterDeviceClassEvent: an update that keeps the extended resource
        name is Skipped; an added class Queues when the pod requests its implicit
        ``deviceclass.resource.kubernetes.io/<name>``; either Queues when the pod requests the
        class's (new) extendedResourceName."""
        if not isinstance(new, DeviceClass) or (old is not None and not isinstance(old, DeviceClass)):
            return QueueingHint.QUEUE
        requests = pod.requests
        if old is not None:
            if old.extended_resource_name == new.extended_resource_name:
                return QueueingHint.QUEUE_SKIP
        elif RESOURCE_DEVICE_CLASS_PREFIX + new.name in requests:
            return QueueingHint.QUEUE
        if new.extended_resource_name and new.extended_resource_name in requests:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def dra_delegated_names(self) -> frozenset[str]:
        """The resource names left to DynamicResources where a node has no allocatable for them."""
        return dra_extended_resource_names(self.handle)

    # ---- PreFilter / Filter
    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status | None]:
        # SidecarContainers is on in v1.30, so restartable init containers are accepted
        # (and counted by PodRequests); NodeResourcesFit never Skips.
        mapped: Collection[str] = ()
        requests = pod.requests
        if self._dra_extended_resource and self.handle is not None and not requests.keys() <= _NATIVE \
                and any(q != 0 and n not in _NATIVE and is_dra_extended_resource_name(n) for n, q in requests.items()):
            mapped = dra_extended_resource_names(self.handle)
        state.write(_PRE_FILTER_KEY, PodResourceRequest.of(pod, mapped))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def preemption_resource_fit(self, state: CycleState, pod: Pod) -> ResourceFit | None:
        """Filter is exactly fitsRequest: the pod's PreFilter request, the scalar resources it
        checks (non-zero, not ignored), as a ResourceFit over a node's free vector — the
        resource-arithmetic contract of DefaultPreemption's fast path
        (kubesched.framework.interfaces.ResourceFitPlugin). None without PreFilter state
        (Filter then fails with an Error: the per-node path reports it)."""
        req = state.get(_PRE_FILTER_KEY)
        if req is None or req.dra_backed:
            # A resource left to DynamicResources on some nodes is no arithmetic (and that
            # plugin's Filter has no fast path either).
            return None
        fit = self._resource_fits.get(req)
        if fit is None:
            ignored, groups = self.ignored_resources, self.ignored_resource_groups
            fit = ResourceFit.of(req.milli_cpu, req.memory, req.ephemeral_storage,
                                 [(n, q) for n, q in req.scalar if q != 0 and not _is_ignored(n, ignored, groups)],
                                 oversize_unresolvable=self._oversize_unresolvable)
            if len(self._resource_fits) >= 256:
                self._resource_fits.clear()
            self._resource_fits[req] = fit  # requests of the same shape share one (immutable)
        return fit

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        req = state.get(_PRE_FILTER_KEY)
        if req is None:
            return Status.as_error(_MISSING_PRE_FILTER_STATE)
        insufficient = fits_request(req, node_info, self.ignored_resources, self.ignored_resource_groups)
        if not insufficient:
            return None
        reasons = tuple(r.reason for r in insufficient)
        if self._oversize_unresolvable and any(r.resource_name != PODS and r.requested > r.capacity
                                               for r in insufficient):
            # 1.36 fitsRequest: no eviction can make room for more than the node has.
            return Status.unresolvable(*reasons)
        return Status.unschedulable(*reasons)

    def _shortfalls(self, state: CycleState, table: NodeTable,
                    sel: RowSelection) -> tuple[list[str], list[BoolArray], BoolArray | None]:
        """fitsRequest's checks over the selected rows, in its order (pods, cpu, memory,
        ephemeral-storage, then the pod's scalar resources): each check's reason and the rows
        it rejects, and (1.36) the rows where some request exceeds the allocatable itself.
        The one computation behind filter_batch and filter_batch_status."""
        req = state.get(_PRE_FILTER_KEY)
        if req is None:
            raise PluginError(_MISSING_PRE_FILTER_STATE)
        reasons = [REASON_TOO_MANY_PODS]
        short = [sel.take(table.pod_count) >= sel.take(table.alloc_pods)]  # n_pods + 1 > allowed
        over: BoolArray | None = None

        def check(reason: str, q: int, alloc: IntArray, used: IntArray | None, delegated: bool = False) -> None:
            nonlocal over
            reasons.append(reason)
            lacking = q > (alloc - used if used is not None else alloc)
            too_big = q > alloc
            if delegated:  # shouldDelegateResourceToDRA where the node has none
                lacking &= alloc > 0
                too_big &= alloc > 0
            short.append(lacking)
            if self._oversize_unresolvable:
                over = too_big if over is None else over | too_big

        if not req.is_empty():
            if req.milli_cpu > 0:
                check("Insufficient cpu", req.milli_cpu, sel.take(table.alloc_cpu), sel.take(table.req_cpu))
            if req.memory > 0:
                check("Insufficient memory", req.memory, sel.take(table.alloc_mem), sel.take(table.req_mem))
            if req.ephemeral_storage > 0:
                check("Insufficient ephemeral-storage", req.ephemeral_storage, sel.take(table.alloc_eph),
                      sel.take(table.req_eph))
            for name, q in req.scalar:
                if q == 0 or _is_ignored(name, self.ignored_resources, self.ignored_resource_groups):
                    continue
                alloc_col = table.scalar_alloc.get(name)
                req_col = table.scalar_req.get(name)
                alloc = sel.take(alloc_col) if alloc_col is not None else np.zeros(sel.size, np.int64)
                check(f"Insufficient {name}", q, alloc, sel.take(req_col) if req_col is not None else None,
                      name in req.dra_backed)
        return reasons, short, over

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> BoolArray:
        sel = RowSelection(table, rows)
        _, short, _ = self._shortfalls(state, table, sel)
        ok: BoolArray = ~np.logical_or.reduce(short) if len(short) > 1 else ~short[0]
        return ok[rows] if sel.full else ok

    def filter_batch_status(self, state: CycleState, pod: Pod, table: NodeTable,
                            rows: IntArray) -> tuple[IntArray, list[Status | None]]:
        """Filter's status for every row at once: each row's set of insufficient resources
        (fitsRequest's checks, in its order) is one code, and each distinct set one
        Unschedulable status with fitsRequest's reasons. Saves the per-node Filter on every
        rejected node, which the scheduler needs for the diagnosis."""
        sel = RowSelection(table, rows)
        reasons, short, over = self._shortfalls(state, table, sel)
        if len(rows) == 0:
            return np.zeros(0, np.int64), [None]
        n_reasons = len(reasons)
        if over is not None:
            # One more flag: the set is Unresolvable where a request exceeds the allocatable
            # (it is only ever set together with the check it fails).
            short = [*short, over]
        # One code per distinct set of insufficient resources (a bit per reason while they fit
        # in an int64, else a row of the boolean matrix); the empty set (fits) is code 0.
        if len(short) < 63:
            bits = np.zeros(sel.size, np.int64)
            for b, s in enumerate(short):
                bits |= s.astype(np.int64) << b
            if sel.full:
                bits = bits[rows]
            uniq, _, inverse = group_codes(bits)
            sets = [[bool(u >> b & 1) for b in range(len(short))] for u in uniq.tolist()]
        else:
            matrix = np.stack(short, axis=1)
            if sel.full:
                matrix = matrix[rows]
            uniq_rows, inverse = np.unique(matrix, axis=0, return_inverse=True)
            sets = uniq_rows.tolist()
        inverse = inverse.reshape(-1).astype(np.int64, copy=False)
        statuses: list[Status | None] = [None]
        offset = 0 if not any(sets[0]) else 1
        for flags in sets[1 - offset:]:
            failed = tuple(r for r, short_of in zip(reasons, flags[:n_reasons], strict=True) if short_of)
            oversize = len(flags) > n_reasons and bool(flags[n_reasons])
            statuses.append(Status.unresolvable(*failed) if oversize else Status.unschedulable(*failed))
        codes: IntArray = inverse + offset
        return codes, statuses

    # ---- PreScore / Score
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(_PRE_SCORE_KEY, PreScoreState(pod_resource_request_list(pod, self.resources, False)))
        return None

    def _pod_requests(self, state: CycleState, pod: Pod) -> tuple[int, ...]:
        s = state.get(_PRE_SCORE_KEY)
        if s is None:  # Score without PreScore computes the request itself (fit.go: Score)
            return pod_resource_request_list(pod, self.resources, False)
        return s.pod_requests

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        if not self.resources:
            raise PluginError("resources not found")
        requested, allocatable = node_vectors(node_info, self.resources, self._pod_requests(state, pod), False)
        return self.scorer.score(requested, allocatable)

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> IntArray:
        if not self.resources:
            raise PluginError("resources not found")
        pod_requests = self._pod_requests(state, pod)
        resources, scorer = self.resources, self.scorer

        def score_rows(some: IntArray) -> IntArray:
            sel = RowSelection(table, some)
            return sel.result(scorer.score_arrays(table_vectors(table, sel, resources, pod_requests, False), sel.size))

        def score_row(i: int) -> int:
            return scorer.score(*row_vectors(table, i, resources, pod_requests, False))

        # The score depends on the pod's requests and the row's columns only: kept per row.
        return self._row_scores.scores(table, rows, pod_requests, score_rows, score_row)


def _pods_or_none(*objs: object | None) -> bool:
    """schedutil.As[*v1.Pod]: every object is a Pod or absent."""
    return all(o is None or isinstance(o, Pod) for o in objs)


def new_fit(args: object, handle: Handle) -> Fit:
    """Plugin factory (registry entry)."""
    if args is not None and not isinstance(args, NodeResourcesFitArgs):
        raise ConfigError(f"want args to be of type NodeResourcesFitArgs, got {type(args).__name__}")
    return Fit(args, handle)


new = new_fit
