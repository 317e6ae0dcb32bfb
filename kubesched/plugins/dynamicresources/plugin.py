"""DynamicResources: devices for pods' ResourceClaims (resource.k8s.io/v1), allocated by the
structured allocator on each node (PreEnqueue, PreFilter, Filter, Score, PostFilter, Reserve,
Unreserve, PreBind).

Mirrors framework/plugins/dynamicresources/dynamicresources.go (v1.36):

- A pod without claims passes PreEnqueue; PreFilter writes an empty state and returns Skip
  (Filter is skipped); Score gives every node 0 (there is no PreScore to skip it, so the plugin
  shows in the score maps); PostFilter answers "no new claims to deallocate" — words that enter
  every FailedScheduling message of 1.36 — or, when an earlier PreFilter rejected the pod before
  this PreFilter ran, the cycle state's "not found" error, which stops the PostFilter chain
  before DefaultPreemption.
- A pod with claims waits at PreEnqueue until they exist (``resourceclaim.Name``: a template's
  claim is the one ``status.resourceClaimStatuses`` names, owned by the pod). PreFilter sorts
  them into allocated ones (their allocation's node selector restricts the nodes) and ones to
  allocate (their device classes must exist), and builds one allocator over the slices and the
  devices already allocated. Filter allocates per node ("cannot allocate all claims",
  "resourceclaim not available on the node", both UnschedulableAndUnresolvable: preemption
  cannot free devices). Score prefers earlier ``firstAvailable`` subrequests. Reserve holds the
  node's allocation in flight; PreBind writes each claim's allocation and ``reservedFor``.
  PostFilter deallocates a claim no other pod uses when it was unavailable on every node
  ("deallocation of ResourceClaim completed"), else "still not schedulable".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kubesched.errors import ApiError
from kubesched.framework import (
    GVK,
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    NodeScore,
    NodeTable,
    PostFilterResult,
    PreFilterResult,
    QueueingHint,
    StateKey,
    Status,
)
from kubesched.framework.interfaces import IntArray
from kubesched.objects import Node, NodeSelector, Pod
from kubesched.objects.devices import (
    FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE,
    RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE,
    AllocationResult,
    ConsumerRef,
    DeviceResult,
    ResourceClaim,
)
from kubesched.plugins.dynamicresources.allocator import (
    AllocationError,
    Allocator,
    DeviceID,
    allocated_devices,
)
from kubesched.plugins.helpers.eventobjects import as_objects, present
from kubesched.plugins.helpers.nodeaffinity import node_selector_matches
from kubesched.plugins.helpers.normalize import default_normalize_score, default_normalize_score_array

NAME = "DynamicResources"
# PostFilter's words when there is nothing it could deallocate.
NO_NEW_CLAIMS = "no new claims to deallocate"
STILL_NOT_SCHEDULABLE = "still not schedulable"
DEALLOCATED = "deallocation of ResourceClaim completed"
# framework.ErrNotFound's text: what getStateData returns when PreFilter never ran.
STATE_NOT_FOUND = "not found"
CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"
CLAIM_IN_USE = "resourceclaim in use"
RESOURCE_CLAIMS = "resource.k8s.io/ResourceClaim"
RESOURCE_SLICES = "resource.k8s.io/ResourceSlice"
DEVICE_CLASSES = "resource.k8s.io/DeviceClass"


@dataclass(slots=True)
class _StateData:
    """stateData: the pod's claims (empty for a pod without any), which of them are allocated
    already (and where), the allocator and the allocations found per node."""

    claims: list[ResourceClaim] = field(default_factory=list)
    to_allocate: list[int] = field(default_factory=list)
    available_on: dict[int, NodeSelector] = field(default_factory=dict)  # claim index -> allocation's selector
    allocator: Allocator | None = None
    node_allocations: dict[str, list[AllocationResult]] = field(default_factory=dict)
    unavailable: set[int] = field(default_factory=set)

    def clone(self) -> _StateData:
        # Preemption's dry run never changes it (upstream's Clone returns the same state).
        return self


_STATE_KEY: StateKey[_StateData] = StateKey("PreFilter" + NAME)


def _unschedulable(reason: str) -> Status:
    """statusUnschedulable: UnschedulableAndUnresolvable (preemption frees no device)."""
    return Status.unresolvable(reason)


def _claim_status(claim: ResourceClaim) -> tuple[object, ...]:
    """A ResourceClaim's status as the claim hint compares it (apiequality.Semantic.DeepEqual
    of .status): the allocation and reservedFor kubesched models, plus the manifest's
    status.devices it does not."""
    raw_status = claim.raw.get("status")
    devices = raw_status.get("devices") if isinstance(raw_status, Mapping) else None
    return claim.allocation, claim.reserved_for, devices or []


class DynamicResources:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        # Reserve -> PreBind: claim uid -> its allocation; what
        # SignalClaimPendingAllocation keeps in the assume cache.
        self.pending: dict[str, AllocationResult] = {}

    def events_to_register(self) -> list[ClusterEventWithHint]:
        features = self.handle.features
        if not features.enabled("SchedulerQueueingHints"):
            # Claims, slices and classes appear or change; a node may bring devices.
            return [ClusterEventWithHint(ClusterEvent(RESOURCE_CLAIMS, ActionType.ADD | ActionType.UPDATE)),
                    ClusterEventWithHint(ClusterEvent(RESOURCE_SLICES, ActionType.ALL)),
                    ClusterEventWithHint(ClusterEvent(DEVICE_CLASSES, ActionType.ADD | ActionType.UPDATE)),
                    ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE))]
        if not features.enabled("DynamicResourceAllocation"):
            # New returns a disabled plugin that registers nothing.
            return []
        # 1.36 EventsToRegister with SchedulerQueueingHints (no preCheck, so no UpdateNodeTaint).
        return [
            # Node labels (topology) and allocatable may matter.
            ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL
                                              | ActionType.UPDATE_NODE_ALLOCATABLE)),
            # Allocation is tracked in the claims.
            ClusterEventWithHint(ClusterEvent(GVK.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE),
                                 self.is_schedulable_after_claim_change),
            # The generated claim's name added to the pod's status.
            ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                                 self.is_schedulable_after_pod_change),
            ClusterEventWithHint(ClusterEvent(GVK.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(ClusterEvent(GVK.RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE)),
        ]

    # ---- queueing hints
    def is_schedulable_after_claim_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterClaimChange: while the pod still waits for one of its claims, no;
        else a deallocated claim (devices freed), or one of the pod's claims created or with
        a changed status."""
        original, modified_or_none = as_objects(ResourceClaim, old, new)
        modified = present(modified_or_none, "ResourceClaim")
        claims, err = self._pod_claims(pod)
        if err:
            # foreachPodResourceClaim fails only for "not schedulable" reasons.
            return QueueingHint.QUEUE_SKIP
        if original is not None and original.allocation is not None and modified.allocation is None:
            return QueueingHint.QUEUE
        if not any(c.uid == modified.uid for c in claims):
            return QueueingHint.QUEUE_SKIP
        if original is None:
            return QueueingHint.QUEUE
        # Only a status change matters (in practice the other updates add a finalizer).
        if _claim_status(original) == _claim_status(modified):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_pod_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterPodChange: the pod itself got the names of its generated claims,
        and every claim it needs now exists."""
        _, modified_or_none = as_objects(Pod, None, new)
        modified = present(modified_or_none, "pod")
        if pod.uid != modified.uid:
            return QueueingHint.QUEUE_SKIP
        _, err = self._pod_claims(modified)
        return QueueingHint.QUEUE_SKIP if err else QueueingHint.QUEUE

    # ---- the pod's claims (foreachPodResourceClaim, resourceclaim.Name / IsForPod)
    def _pod_claims(self, pod: Pod) -> tuple[list[ResourceClaim], str | None]:
        objects = self.handle.objects
        out: list[ResourceClaim] = []
        for ref in pod.resource_claims:
            if ref.resource_claim_name:
                name, must_own = ref.resource_claim_name, False
            else:
                generated = pod.resource_claim_statuses.get(ref.name)
                if generated is None:
                    return out, f'pod "{pod.name}": no resource claim status for claim "{ref.name}"'
                if not generated:
                    continue  # no claim was needed
                name, must_own = generated, True
            claim = objects.resource_claim(pod.namespace, name)
            if claim is None:
                return out, f'resourceclaim.resource.k8s.io "{name}" not found'
            if claim.meta.deletion_timestamp is not None:
                return out, f'resourceclaim "{name}" is being deleted'
            if must_own:
                owner = claim.meta.controller_ref()
                if owner is None or owner.kind != "Pod" or owner.uid != pod.uid:
                    return out, f"ResourceClaim {pod.namespace}/{name} was not created for pod {pod.key} (pod is " \
                                f"not owner)"
            out.append(claim)
        return out, None

    # ---- PreEnqueue
    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.resource_claims:
            return None
        _, err = self._pod_claims(pod)
        return _unschedulable(err) if err else None

    # ---- PreFilter / Filter
    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status | None]:
        s = _StateData()
        state.write(_STATE_KEY, s)
        if not pod.resource_claims:
            return None, Status.skip()
        claims, err = self._pod_claims(pod)
        if err:
            return None, _unschedulable(err)
        if not claims:
            return None, Status.skip()
        objects = self.handle.objects
        classes = objects.device_classes()
        for i, claim in enumerate(claims):
            if claim.allocation is not None:
                reserved_for_pod = any(r.uid == pod.uid for r in claim.reserved_for)
                if len(claim.reserved_for) >= RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE and not reserved_for_pod:
                    return None, _unschedulable(CLAIM_IN_USE)
                if claim.allocation.node_selector is not None:
                    s.available_on[i] = claim.allocation.node_selector
                continue
            s.to_allocate.append(i)
            if claim.uid in self.pending:
                return None, _unschedulable(f"resource claim {claim.key} is in the process of being allocated")
            for req in claim.spec.requests:
                subs = [(req.name, req.exactly)] if req.exactly is not None else \
                    [(f"{req.name}/{sub.name}", sub) for sub in req.first_available]
                for qual, r in subs:
                    assert r is not None
                    if r.device_class_name not in classes:
                        return None, _unschedulable(f"request {qual}: device class {r.device_class_name} does not "
                                                    "exist")
        s.claims = claims
        if s.to_allocate:
            in_use: set[DeviceID] = allocated_devices(objects.resource_claims())
            for alloc in self.pending.values():
                in_use.update(DeviceID(r.driver, r.pool, r.device) for r in alloc.devices if not r.admin_access)
            s.allocator = Allocator(classes=classes, slices=objects.resource_slices(), allocated=in_use)
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = state.get(_STATE_KEY)
        if s is None:
            return Status.as_error(STATE_NOT_FOUND)
        if not s.claims:
            return None
        node = node_info.node
        assert node is not None
        unavailable = [i for i, sel in s.available_on.items() if not node_selector_matches(sel, node)]
        if s.allocator is not None:
            try:
                result = s.allocator.allocate(node, [s.claims[i] for i in s.to_allocate])
            except AllocationError as e:
                return Status.as_error(str(e))
            if result is None:
                return _unschedulable(CANNOT_ALLOCATE)
            s.node_allocations[node.name] = result
        if unavailable:
            s.unavailable.update(unavailable)
            return _unschedulable(NOT_AVAILABLE)
        return None

    # ---- Score (no PreScore: every node is scored)
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        s = state.get(_STATE_KEY)
        if s is None or not s.claims:
            return 0
        allocations = s.node_allocations.get(node_info.name)
        if allocations is None:
            return 0
        return _prioritized_list_score(s, allocations)

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> IntArray:
        s = state.get(_STATE_KEY)
        if s is None or not s.claims or not s.node_allocations:
            return np.zeros(len(rows), np.int64)
        nodes = table.nodes
        out = np.zeros(len(rows), np.int64)
        for j, r in enumerate(rows.tolist()):
            node = nodes[r]
            allocations = s.node_allocations.get(node.name) if node is not None else None
            if allocations is not None:
                out[j] = _prioritized_list_score(s, allocations)
        return out

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return None

    def normalize_score_batch(self, state: CycleState, pod: Pod, scores: IntArray) -> IntArray:
        return default_normalize_score_array(MAX_NODE_SCORE, False, scores)

    # ---- PostFilter (before DefaultPreemption)
    def post_filter(self, state: CycleState, pod: Pod, statuses: dict[str, Status]
                    ) -> tuple[PostFilterResult | None, Status]:
        s = state.get(_STATE_KEY)
        if s is None:
            return None, Status.as_error(STATE_NOT_FOUND)
        if not s.claims:
            return None, Status.unschedulable(NO_NEW_CLAIMS)
        for i in sorted(s.unavailable):
            claim = s.claims[i]
            rf = claim.reserved_for
            if not rf or (len(rf) == 1 and rf[0].uid == pod.uid):
                try:
                    self.handle.update_resource_claim(dataclasses.replace(claim, allocation=None, reserved_for=()))
                except ApiError as e:
                    return None, Status.as_error(str(e))
                return None, Status.unschedulable(DEALLOCATED)
        return None, Status.unschedulable(STILL_NOT_SCHEDULABLE)

    # ---- Reserve / Unreserve / PreBind
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s = state.get(_STATE_KEY)
        if s is None:
            return Status.as_error(STATE_NOT_FOUND)
        if not s.to_allocate:
            return None
        allocations = s.node_allocations.get(node_name)
        if allocations is None or len(allocations) != len(s.to_allocate):
            return Status.as_error("claim allocation not found for node")
        for i, alloc in zip(s.to_allocate, allocations, strict=True):
            self.pending[s.claims[i].uid] = alloc
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Allocations in flight are dropped; a claim PreBind already reserved for the pod (a
        later PreBind or the bind failed) gets the pod out of its reservedFor again (an error
        is left for the pod's next attempt, as upstream logs it)."""
        s = state.get(_STATE_KEY)
        if s is None:
            return
        for i in s.to_allocate:
            self.pending.pop(s.claims[i].uid, None)
        for claim in s.claims:
            if claim.allocation is not None and any(r.uid == pod.uid for r in claim.reserved_for):
                rest = tuple(r for r in claim.reserved_for if r.uid != pod.uid)
                try:
                    self.handle.update_resource_claim(dataclasses.replace(claim, reserved_for=rest))
                except ApiError:
                    pass

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """bindClaim for each claim not reserved for the pod yet: its allocation (from
        Reserve) and the pod in reservedFor. The allocation stays in flight until the write is
        done (then the claim's own allocation holds its devices), and the written claim
        replaces the one in the cycle state, for Unreserve."""
        s = state.get(_STATE_KEY)
        if s is None or not s.claims:
            return None
        consumer = ConsumerRef("pods", pod.name, pod.uid)
        for i, claim in enumerate(s.claims):
            if any(r.uid == pod.uid for r in claim.reserved_for):
                continue  # resourceclaim.IsReservedForPod
            allocating = i in s.to_allocate
            alloc = self.pending.get(claim.uid) if allocating else claim.allocation
            updated = dataclasses.replace(claim, allocation=alloc, reserved_for=(*claim.reserved_for, consumer))
            try:
                self.handle.update_resource_claim(updated)
            except ApiError as e:
                return Status.as_error(str(e))
            finally:
                if allocating:
                    self.pending.pop(claim.uid, None)
            s.claims[i] = self.handle.objects.resource_claim(claim.namespace, claim.name) or updated
        return None

    def node_verdict(self, state: CycleState, pod: Pod, node: Node) -> NodeVerdict | None:
        """What this plugin says of ``node`` for the pod of ``state`` (``kubesched explain``),
        whatever the other filters said: Filter's verdict (recomputed with the cycle's
        allocator where Filter did not run there), the devices the pod's claims would hold
        there, and the node's devices in use when PreFilter ran (when it built an allocator:
        some claim was to be allocated). None for a pod without claims or a cycle that
        stopped before this PreFilter."""
        s = state.get(_STATE_KEY)
        if s is None or not s.claims:
            return None
        status = ""
        new: list[AllocationResult] | None = s.node_allocations.get(node.name)
        if s.allocator is not None and new is None:
            try:
                new = s.allocator.allocate(node, [s.claims[i] for i in s.to_allocate])
            except AllocationError as e:
                status = str(e)
            if new is None and not status:
                status = CANNOT_ALLOCATE
        if not status and any(not node_selector_matches(sel, node) for sel in s.available_on.values()):
            status = NOT_AVAILABLE
        devices: list[tuple[str, DeviceResult]] = []
        if not status:
            fresh = dict(zip(s.to_allocate, new or (), strict=False))
            for i, claim in enumerate(s.claims):
                alloc = fresh.get(i, claim.allocation)
                if alloc is not None:
                    devices.extend((claim.key, r) for r in alloc.devices)
        used = total = None
        if s.allocator is not None:
            on_node = s.allocator.node_devices(node)
            total = len(on_node)
            used = sum(1 for d in on_node if d.id in s.allocator.allocated)
        return NodeVerdict(status, tuple(devices), used, total)

    def allocations(self, state: CycleState, node_name: str) -> list[tuple[str, AllocationResult]]:
        """The devices the pod's claims hold on ``node_name`` (the trace's ``allocations``)."""
        s = state.get(_STATE_KEY)
        if s is None or not s.claims:
            return []
        new = dict(zip(s.to_allocate, s.node_allocations.get(node_name, ()), strict=False))
        out = []
        for i, claim in enumerate(s.claims):
            alloc = new.get(i, claim.allocation)
            if alloc is not None:
                out.append((claim.key, alloc))
        return out


@dataclass(frozen=True, slots=True)
class NodeVerdict:
    """DynamicResources on one node for one pod (DynamicResources.node_verdict): ``status`` is
    "" when the claims fit, else Filter's reason; ``devices`` the (claim key, device) pairs the
    pod's claims would hold there; ``used`` / ``total`` the node's devices allocated / usable
    when PreFilter ran (None when it had nothing to allocate)."""

    status: str
    devices: tuple[tuple[str, DeviceResult], ...] = ()
    used: int | None = None
    total: int | None = None


def _prioritized_list_score(s: _StateData, allocations: Sequence[AllocationResult]) -> int:
    """computeScore: for each claim, FirstAvailableDeviceRequestMaxSize - i for each allocated
    subrequest i of a firstAvailable request (earlier alternatives score higher)."""
    new = dict(zip(s.to_allocate, allocations, strict=False))
    score = 0
    for i, claim in enumerate(s.claims):
        alloc = new.get(i, claim.allocation)
        if alloc is None:
            continue
        used = {r.request for r in alloc.devices if "/" in r.request}
        for req in claim.spec.requests:
            for j, sub in enumerate(req.first_available):
                if f"{req.name}/{sub.name}" in used:
                    score += FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE - j
    return score


def new(args: object, handle: Handle) -> DynamicResources:
    """Plugin factory (registry entry); DynamicResourcesArgs' timeouts do not change decisions."""
    return DynamicResources(handle)
