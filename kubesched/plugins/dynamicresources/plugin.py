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
- Extended resources backed by DRA (DRAExtendedResource, extendeddynamicresources.go): a pod
  requesting an extended resource that a DeviceClass maps (its ``extendedResourceName``, or
  ``deviceclass.resource.kubernetes.io/<class>``) gets a special in-memory claim
  ``<extended-resources>`` (or the one an earlier cycle created for it); on each node whose
  allocatable lacks the resource, Filter gives it one ExactCount request per container and
  resource (createRequestsAndMappings) and allocates it with the pod's claims; PreBind creates
  it as ``<pod>-extended-resources-<5>`` owned by the pod, allocated and reserved for it.
  NodeResourcesFit leaves such resources to this plugin on those nodes.
- Binding conditions (DRADeviceBindingConditions with DRAResourceClaimDeviceStatus): devices
  with binding conditions come last and their conditions are copied into the allocation; a
  claim whose device reports a true binding-failure condition is unavailable (Filter), and
  PreBind waits for the conditions. Offline there is no driver to set them: a condition the
  claim's ``status.devices`` does not already show as true can never become true, so PreBind
  fails at once with upstream's timeout error, the outcome of its wait of ``bindingTimeout``
  (the plugin has no clock to model the wait itself, nor Filter's timeout of an allocation
  made in an earlier cycle).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from kubesched.errors import ApiError
from kubesched.framework import (
    GVK,
    MAX_NODE_SCORE,
    SKIP,
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
from kubesched.framework.interfaces import BoolArray, IntArray
from kubesched.framework.signers import SignFragment
from kubesched.objects import Node, NodeSelector, ObjectMeta, OwnerReference, Pod
from kubesched.objects.devices import (
    ALLOCATION_MODE_EXACT,
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE,
    RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE,
    AllocatedDeviceStatus,
    AllocationResult,
    ClaimSpec,
    ConsumerRef,
    DeviceClass,
    DeviceCondition,
    DeviceRequest,
    DeviceResult,
    Request,
    ResourceClaim,
    is_dra_extended_resource_name,
)
from kubesched.objects.resources import is_scalar_resource_name
from kubesched.objects.workloads import generated_name
from kubesched.plugins.dynamicresources.failures import INVALID_POOLS, AllocationError, NodeAllocationError
from kubesched.plugins.dynamicresources.verdicts import ERROR, FIT, NodeVerdicts
from kubesched.plugins.helpers.eventobjects import as_objects, present
from kubesched.plugins.helpers.nodeaffinity import node_selector_matches
from kubesched.plugins.helpers.normalize import default_normalize_score, default_normalize_score_array

if TYPE_CHECKING:
    from kubesched.plugins.dynamicresources.allocator import AllocatedTracker, Allocator, AllocatorFeatures

NAME = "DynamicResources"
# PostFilter's words when there is nothing it could deallocate.
NO_NEW_CLAIMS = "no new claims to deallocate"
STILL_NOT_SCHEDULABLE = "still not schedulable"
DEALLOCATED = "deallocation of ResourceClaim completed"
DELETED = "deletion of ResourceClaim completed"
# framework.ErrNotFound's text: what getStateData returns when PreFilter never ran.
STATE_NOT_FOUND = "not found"
CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"
CLAIM_IN_USE = "resourceclaim in use"
RESOURCE_CLAIMS = "resource.k8s.io/ResourceClaim"
RESOURCE_SLICES = "resource.k8s.io/ResourceSlice"
DEVICE_CLASSES = "resource.k8s.io/DeviceClass"
# The in-memory name of the special claim for extended resources (not a valid name on purpose).
SPECIAL_CLAIM_NAME = "<extended-resources>"
CANNOT_SCHEDULE_EXTENDED = "cannot schedule extended resource claim"
CANNOT_FIT_RESOURCE = "cannot fit resource"
_NATIVE = frozenset(("cpu", "memory", "ephemeral-storage", "pods"))


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
    # Extended resources backed by DRA: the special claim's index in ``claims`` (the last one),
    # the pod's scalar requests, the resolver, and per node the special claim Filter built
    # (None: the node's device plugin provides them).
    extended: int | None = None
    scalar_requests: dict[str, int] = field(default_factory=dict)
    resolver: dict[str, DeviceClass] = field(default_factory=dict)
    node_extended: dict[str, ResourceClaim | None] = field(default_factory=dict)
    # filter_batch: whether Filter's verdict is Allocate's alone (no special claim, no claim
    # allocated elsewhere to check, no binding failure), the claims it allocates, and whether
    # it ran (then node_allocations is filled on demand: see DynamicResources._allocations).
    batch_ok: bool = False
    allocate_claims: list[ResourceClaim] = field(default_factory=list)
    batched: bool = False

    @property
    def user_claims(self) -> int:
        return len(self.claims) if self.extended is None else self.extended

    def clone(self) -> _StateData:
        # Preemption's dry run never changes it (upstream's Clone returns the same state).
        return self


_STATE_KEY: StateKey[_StateData] = StateKey("PreFilter" + NAME)
# The state of every pod without claims (read, never written: see pre_filter).
_NO_CLAIMS = _StateData()


def _asks_scalar(pod: Pod) -> bool:
    """The pod requests something besides cpu, memory, ephemeral-storage and pods (which an
    extended-resource DeviceClass might map)."""
    requests = pod.requests
    if requests.keys() <= _NATIVE:  # most pods: a set comparison in C
        return False
    return any(q != 0 and n not in _NATIVE for n, q in requests.items())


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
        # The devices of every allocated claim, kept across pods (AllocatedTracker); made with the
        # first allocator, when the allocator's module is first imported (see
        # kubesched.plugins.dynamicresources.failures).
        self._allocated: AllocatedTracker | None = None
        self._extended_resources = handle.features.enabled("DRAExtendedResource")
        f = handle.features
        self._binding_conditions_on = f.enabled("DRADeviceBindingConditions") and f.enabled(
            "DRAResourceClaimDeviceStatus")

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """SignPod (OpportunisticBatching): a pod with resource claims is not signable (its
        devices are allocated for it alone); the others add nothing."""
        if pod.resource_claims:
            return Status.unschedulable("pods with dra resource claims are not signable")
        return []

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
    def _features(self) -> AllocatorFeatures:
        """AllocatorFeatures: the allocator's features from the gates."""
        from kubesched.plugins.dynamicresources.allocator import AllocatorFeatures

        f = self.handle.features
        return AllocatorFeatures(
            admin_access=f.enabled("DRAAdminAccess"), prioritized_list=f.enabled("DRAPrioritizedList"),
            partitionable_devices=f.enabled("DRAPartitionableDevices"), device_taints=f.enabled("DRADeviceTaints"),
            device_binding=self._binding_conditions(), consumable_capacity=f.enabled("DRAConsumableCapacity"))

    def _binding_conditions(self) -> bool:
        return self._binding_conditions_on

    def _extended_claim(self, pod: Pod, s: _StateData, classes: Mapping[str, DeviceClass]) -> ResourceClaim | None:
        """preFilterExtendedResources: the special claim when the pod requests an extended
        resource a DeviceClass maps — the one an earlier cycle created (annotated, owned by
        the pod), else a new in-memory one without requests."""
        if not self._extended_resources:
            return None
        # Most pods ask for no extended resource at all: nothing to resolve then.
        asked = [n for n, q in pod.requests.items() if q != 0 and n not in _NATIVE and is_dra_extended_resource_name(n)]
        if not asked:
            return None
        resolver = dict(self.handle.objects.extended_resource_classes())
        if not any(n in resolver for n in asked):
            return None
        s.resolver = resolver
        s.scalar_requests = {n: q for n, q in pod.requests.items() if n not in _NATIVE and is_scalar_resource_name(n)}
        for c in self.handle.objects.resource_claims():
            if c.meta.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true" and c.namespace == pod.namespace \
                    and any(o.controller and o.name == pod.name and o.uid == pod.uid for o in c.meta.owner_references):
                return c
        meta = ObjectMeta(name=SPECIAL_CLAIM_NAME, namespace=pod.namespace, uid=f"{pod.uid or pod.key}/extended-resources",
                          annotations={EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
                          owner_references=(OwnerReference("v1", "Pod", pod.name, pod.uid, True),))
        return ResourceClaim(meta, ClaimSpec())

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.resource_claims and not (self._extended_resources and _asks_scalar(pod)):
            # Most pods: no claim and no extended resource a class could map. Every later
            # phase only reads the empty state (Skip spares Filter), so one is shared.
            state.write(_STATE_KEY, _NO_CLAIMS)
            return None, SKIP
        s = _StateData()
        state.write(_STATE_KEY, s)
        claims: list[ResourceClaim] = []
        if pod.resource_claims:
            claims, err = self._pod_claims(pod)
            if err:
                return None, _unschedulable(err)
        objects = self.handle.objects
        classes = objects.device_classes()
        extended = self._extended_claim(pod, s, classes)
        if extended is not None:
            s.extended = len(claims)
            claims.append(extended)
        if not claims:
            return None, Status.skip()
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
            if i == s.extended:
                continue  # its requests are made per node (Filter)
            for req in claim.spec.requests:
                subs = [(req.name, req.exactly)] if req.exactly is not None else \
                    [(f"{req.name}/{sub.name}", sub) for sub in req.first_available]
                for qual, r in subs:
                    assert r is not None
                    if r.device_class_name not in classes:
                        return None, _unschedulable(f"request {qual}: device class {r.device_class_name} does not "
                                                    "exist")
        s.claims = claims
        s.batch_ok = s.extended is None and not s.available_on and not (
            self._binding_conditions() and any(c.allocation is not None and _binding_failure(c) is not None
                                               for c in claims))
        s.allocate_claims = [claims[i] for i in s.to_allocate]
        if s.to_allocate:
            from kubesched.plugins.dynamicresources.allocator import AllocatedTracker, Allocator

            features = self._features()
            if self._allocated is None:
                self._allocated = AllocatedTracker()
            in_use = self._allocated.state(objects.resource_claims(), features.consumable_capacity)
            for alloc in self.pending.values():
                in_use.add(alloc.devices, features.consumable_capacity)
            s.allocator = Allocator(classes=classes, slices=objects.resource_slices(), allocated=in_use,
                                    features=features)
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def _filter_extended(self, s: _StateData, pod: Pod, node_info: NodeInfo) -> tuple[ResourceClaim | None,
                                                                                       Status | None]:
        """filterExtendedResources: the special claim for this node, with a request for each
        extended resource the node's allocatable lacks and a class provides; None when the
        node provides them all (or nothing is left to allocate)."""
        if s.extended is None:
            return None, None
        claim = s.claims[s.extended]
        if claim.spec.requests:
            # Created in an earlier cycle: PostFilter deletes it, and the pod starts anew.
            return None, _unschedulable(CANNOT_SCHEDULE_EXTENDED)
        allocatable = node_info.allocatable.scalar
        wanted: dict[str, int] = {}
        for name, q in s.scalar_requests.items():
            if q == 0 or not is_dra_extended_resource_name(name):
                continue
            have = allocatable.get(name)
            if name in s.resolver and not have:
                wanted[name] = q
            elif have is None:
                return None, _unschedulable(CANNOT_FIT_RESOURCE)
        if (s.user_claims == 0 and not wanted) or claim.allocation is not None:
            return None, None
        return dataclasses.replace(claim, spec=ClaimSpec(_extended_requests(pod, wanted, s.resolver))), None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = state.get(_STATE_KEY)
        if s is None:
            return Status.as_error(STATE_NOT_FOUND)
        if not s.claims:
            return None
        node = node_info.node
        assert node is not None
        node_claim: ResourceClaim | None = None
        if s.extended is not None:
            node_claim, status = self._filter_extended(s, pod, node_info)
            if status is not None:
                return status
            if node_claim is None and s.user_claims == 0:
                return None
        unavailable = [i for i, sel in s.available_on.items() if not node_selector_matches(sel, node)] \
            if s.available_on else []
        if self._binding_conditions():
            # isClaimReadyForBinding: a true binding-failure condition makes the claim unavailable.
            for i, claim in enumerate(s.claims):
                if claim.allocation is not None and i not in unavailable and _binding_failure(claim) is not None:
                    unavailable.append(i)
        if s.allocator is not None:
            to_allocate = []
            for i in s.to_allocate:
                if i == s.extended:
                    if node_claim is None:
                        # The node's device plugin serves the extended resources: nothing to
                        # allocate for the special claim here. (Upstream passes the claim without
                        # requests on and then fails in Reserve; kubesched leaves it out.)
                        continue
                    to_allocate.append(node_claim)
                else:
                    to_allocate.append(s.claims[i])
            try:
                result = s.allocator.allocate(node, to_allocate)
            except AllocationError as e:
                return Status.as_error(str(e))
            except NodeAllocationError as e:
                return _unschedulable(str(e))  # INVALID_POOLS
            if result is None:
                return _unschedulable(CANNOT_ALLOCATE)
            if s.extended is not None and s.extended in s.to_allocate and node_claim is None:
                # Keep one result per claim to allocate: the special claim's is empty.
                result.insert(s.to_allocate.index(s.extended), AllocationResult(()))
            s.node_allocations[node.name] = result
            s.node_extended[node.name] = node_claim
        if unavailable:
            s.unavailable.update(unavailable)
            return _unschedulable(NOT_AVAILABLE)
        return None

    # ---- Filter over many nodes (verdicts.NodeVerdicts)
    def filter_batch_applies(self, state: CycleState) -> bool:
        """Filter is Allocate's verdict alone, which filter_batch gives: no special claim
        (its requests depend on the node's allocatable), no claim allocated elsewhere, no
        binding failure (those make PostFilter depend on the nodes Filter ran on)."""
        s = state.get(_STATE_KEY)
        return s is not None and s.batch_ok

    def _codes(self, s: _StateData, table: NodeTable, rows: IntArray) -> tuple[IntArray, dict[int, str]]:
        assert s.allocator is not None
        s.batched = True
        errors: dict[int, str] = {}
        verdicts = NodeVerdicts.of(table, s.allocator)
        return verdicts.codes(s.allocator, s.allocate_claims, table, rows, s.node_allocations, errors), errors

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> BoolArray:
        s = state.get(_STATE_KEY)
        assert s is not None and s.batch_ok
        if s.allocator is None:
            return np.ones(len(rows), np.bool_)
        codes, _ = self._codes(s, table, rows)
        return np.equal(codes, FIT)

    def filter_batch_status(self, state: CycleState, pod: Pod, table: NodeTable,
                            rows: IntArray) -> tuple[IntArray, list[Status | None]]:
        s = state.get(_STATE_KEY)
        assert s is not None and s.batch_ok
        if s.allocator is None:
            return np.zeros(len(rows), np.int64), [None]
        codes, errors = self._codes(s, table, rows)
        statuses: list[Status | None] = [None, _unschedulable(CANNOT_ALLOCATE), _unschedulable(INVALID_POOLS)]
        if errors:
            # One Status per message (the rows' ERROR codes become indices past the three).
            at: dict[str, int] = {}
            codes = codes.copy()
            for j in np.flatnonzero(codes == ERROR).tolist():
                msg = errors[int(rows[j])]
                if msg not in at:
                    at[msg] = len(statuses)
                    statuses.append(Status.as_error(msg))
                codes[j] = at[msg]
        return codes, statuses

    def _allocations(self, s: _StateData, node_name: str, node: Node | None = None) -> list[AllocationResult] | None:
        """The allocations Filter found on ``node_name``; where filter_batch passed a node on
        a kept verdict, computed now by the cycle's allocator (the same answer: it depends
        on nothing that changed since)."""
        got = s.node_allocations.get(node_name)
        if got is not None or not s.batched or s.allocator is None:
            return got
        if node is None:
            ni = self.handle.snapshot.get(node_name)
            node = ni.node if ni is not None else None
        if node is None:
            return None
        try:
            got = s.allocator.allocate(node, s.allocate_claims)
        except (AllocationError, NodeAllocationError):
            return None
        if got is not None:
            s.node_allocations[node_name] = got
        return got

    # ---- Score (no PreScore: every node is scored)
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        s = state.get(_STATE_KEY)
        if s is None or not s.claims:
            return 0
        allocations = self._allocations(s, node_info.name, node_info.node)
        if allocations is None:
            return 0
        return _prioritized_list_score(s, allocations)

    def scores_all_zero(self, state: CycleState) -> bool:
        """No claim (most pods), no allocation found, or no firstAvailable request (computeScore
        counts allocated firstAvailable subrequests only): Score is 0 on every node, and
        NormalizeScore keeps zeros."""
        s = state.get(_STATE_KEY)
        return (s is None or not s.claims or not (s.node_allocations or s.batched)
                or not any(req.first_available for claim in s.claims for req in claim.spec.requests))

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> IntArray:
        if self.scores_all_zero(state):
            return np.zeros(len(rows), np.int64)
        s = state.read(_STATE_KEY)
        nodes = table.nodes
        out = np.zeros(len(rows), np.int64)
        for j, r in enumerate(rows.tolist()):
            node = nodes[r]
            allocations = self._allocations(s, node.name, node) if node is not None else None
            if allocations is not None:
                out[j] = _prioritized_list_score(s, allocations)
        return out

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return None

    def normalize_score_batch(self, state: CycleState, pod: Pod, scores: IntArray) -> IntArray:
        s = state.get(_STATE_KEY)
        if s is None or not (s.node_allocations or s.batched):
            return scores  # every score 0 (a pod without claims): normalizing keeps them 0
        return default_normalize_score_array(MAX_NODE_SCORE, False, scores)

    # ---- PostFilter (before DefaultPreemption)
    def post_filter(self, state: CycleState, pod: Pod, statuses: dict[str, Status]
                    ) -> tuple[PostFilterResult | None, Status]:
        s = state.get(_STATE_KEY)
        if s is None:
            return None, Status.as_error(STATE_NOT_FOUND)
        if not s.claims:
            return None, Status.unschedulable(NO_NEW_CLAIMS)
        extended = s.claims[s.extended] if s.extended is not None else None
        for i in sorted(s.unavailable):
            claim = s.claims[i]
            if i == s.extended:
                if extended is not None and extended.name != SPECIAL_CLAIM_NAME:
                    break  # deleted below
                continue
            rf = claim.reserved_for
            if not rf or (len(rf) == 1 and rf[0].uid == pod.uid):
                try:
                    self.handle.update_resource_claim(dataclasses.replace(claim, allocation=None, reserved_for=(),
                                                                          device_statuses=()))
                except ApiError as e:
                    return None, Status.as_error(str(e))
                return None, Status.unschedulable(DEALLOCATED)
        if extended is not None and extended.name != SPECIAL_CLAIM_NAME:
            # A special claim created in an earlier cycle: delete it, the pod starts anew.
            delete = getattr(self.handle, "delete_resource_claim", None)
            if delete is None:
                return None, Status.as_error(f"resourceclaims {extended.key}: deleting ResourceClaims is not "
                                             "supported by this cluster client")
            try:
                delete(extended)
            except ApiError as e:
                return None, Status.as_error(str(e))
            return None, Status.unschedulable(DELETED)
        return None, Status.unschedulable(STILL_NOT_SCHEDULABLE)

    # ---- Reserve / Unreserve / PreBind
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s = state.get(_STATE_KEY)
        if s is None:
            return Status.as_error(STATE_NOT_FOUND)
        if not s.to_allocate:
            return None
        allocations = self._allocations(s, node_name)
        if allocations is None or len(allocations) != len(s.to_allocate):
            if s.to_allocate == [s.extended]:
                return None  # only the special claim, and the node's device plugin serves it
            return Status.as_error("claim allocation not found for node")
        node_claim = s.node_extended.get(node_name)
        for i, alloc in zip(s.to_allocate, allocations, strict=True):
            if i == s.extended and node_claim is None:
                continue
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

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """PreBindPreFlight (1.36): Skip for a pod without claims, else work to do."""
        s = state.get(_STATE_KEY)
        if s is None or not s.claims:
            return SKIP
        return None

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """bindClaim for each claim not reserved for the pod yet: its allocation (from
        Reserve) and the pod in reservedFor; the special claim for extended resources is
        created first. The allocation stays in flight until the write is done (then the
        claim's own allocation holds its devices), and the written claim replaces the one in
        the cycle state, for Unreserve. Then the binding conditions (see the module
        docstring)."""
        s = state.get(_STATE_KEY)
        if s is None or not s.claims:
            return None
        consumer = ConsumerRef("pods", pod.name, pod.uid)
        for i, claim in enumerate(s.claims):
            if any(r.uid == pod.uid for r in claim.reserved_for):
                continue  # resourceclaim.IsReservedForPod
            allocating = i in s.to_allocate
            alloc = self.pending.get(claim.uid) if allocating else claim.allocation
            if i == s.extended:
                node_claim = s.node_extended.get(node_name)
                if alloc is None and not claim.spec.requests:
                    if allocating:
                        self.pending.pop(claim.uid, None)
                    continue  # the node's device plugin serves the extended resources
                if claim.name == SPECIAL_CLAIM_NAME:
                    if node_claim is None:
                        return Status.as_error(f"extended resource claim not found for node {node_name}")
                    claim = self._create_extended_claim(pod, node_claim)
            updated = dataclasses.replace(claim, allocation=alloc, reserved_for=(*claim.reserved_for, consumer))
            try:
                self.handle.update_resource_claim(updated)
            except ApiError as e:
                return Status.as_error(f"binding claim {claim.key}: {e}")
            finally:
                if allocating:
                    self.pending.pop(s.claims[i].uid, None)
            s.claims[i] = self.handle.objects.resource_claim(updated.namespace, updated.name) or updated
        if not self._binding_conditions() or not any(
                c.allocation is not None and any(r.binding_conditions for r in c.allocation.devices) for c in s.claims):
            return None  # hasBindingConditions: nothing to wait for
        for claim in s.claims:
            failed = _binding_failure(claim)
            if failed is not None:
                return Status.as_error(f"device binding failed: claim={claim.name}, reason={failed.reason}, "
                                       f"message={json.dumps(failed.message)}")
        for i, claim in enumerate(s.claims):
            if i == s.extended and claim.allocation is None:
                continue  # served by the node's device plugin
            if not _binding_ready(claim):
                # PreBind's wait: nothing offline sets the device conditions, so it ends in
                # the binding timeout.
                return Status.as_error(f"device binding timeout: claim={claim.name}")
        return None


    def _create_extended_claim(self, pod: Pod, node_claim: ResourceClaim) -> ResourceClaim:
        """createExtendedResourceClaimInAPI: the node's special claim under a generated name
        ``<pod>-extended-resources-<5>`` (the API server's generateName)."""
        objects = self.handle.objects
        base = f"{pod.name}-extended-resources-"
        name = generated_name(base, f"{pod.key}#extended-resources")
        attempt = 0
        while objects.resource_claim(pod.namespace, name) is not None:
            attempt += 1
            name = generated_name(base, f"{pod.key}#extended-resources", attempt)
        meta = dataclasses.replace(node_claim.meta, name=name, uid=f"{pod.uid or pod.key}/{name}")
        return dataclasses.replace(node_claim, meta=meta, allocation=None)

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
            used = sum(1 for d in on_node if s.allocator.allocated.is_allocated(d.id))
        return NodeVerdict(status, tuple(devices), used, total)

    def allocations(self, state: CycleState, node_name: str) -> list[tuple[str, AllocationResult]]:
        """The devices the pod's claims hold on ``node_name`` (the trace's ``allocations``)."""
        s = state.get(_STATE_KEY)
        if s is None or not s.claims:
            return []
        new = dict(zip(s.to_allocate, self._allocations(s, node_name) or (), strict=False))
        out = []
        for i, claim in enumerate(s.claims):
            alloc = claim.allocation if claim.allocation is not None else new.get(i)
            if alloc is not None and (i != s.extended or alloc.devices):
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


def _binding_failure(claim: ResourceClaim) -> DeviceCondition | None:
    """A true binding-failure condition of an allocated device (isClaimReadyForBinding's error)."""
    if claim.allocation is None:
        return None
    for r in claim.allocation.devices:
        if not r.binding_conditions:
            continue
        st = _device_status(claim, r)
        if st is None:
            continue
        for cond in r.binding_failure_conditions:
            for c in st.conditions:
                if c.type == cond and c.status == "True":
                    return c
    return None


def _binding_ready(claim: ResourceClaim) -> bool:
    """isClaimReadyForBinding: every binding condition of every allocated device is true."""
    if claim.allocation is None:
        return False
    for r in claim.allocation.devices:
        if not r.binding_conditions:
            continue
        st = _device_status(claim, r)
        if st is None:
            return False
        true = {c.type for c in st.conditions if c.status == "True"}
        if any(cond not in true for cond in r.binding_conditions):
            return False
    return True


def _device_status(claim: ResourceClaim, r: DeviceResult) -> AllocatedDeviceStatus | None:
    """getAllocatedDeviceStatus: the status.devices entry of the device (driver, pool, name)."""
    for d in claim.device_statuses:
        if d.driver == r.driver and d.pool == r.pool and d.device == r.device:
            return d
    return None


def _extended_requests(pod: Pod, wanted: Mapping[str, int], resolver: Mapping[str, DeviceClass]
                       ) -> tuple[DeviceRequest, ...]:
    """createRequestsAndMappings: per resource (sorted), one ExactCount request
    ``container-<i>-request-<j>`` per long-lived container asking for it (i over init then
    regular containers, j the resource's index among the container's sorted request names);
    the non-sidecar init containers reuse the long-lived requests of later containers and add
    one request for the largest remainder. Requests sorted by name."""
    containers = [*pod.init_containers, *pod.containers]
    n_init = len(pod.init_containers)
    long_lived = [i for i, c in enumerate(containers) if i >= n_init or c.is_sidecar]
    short_lived = [i for i, c in enumerate(containers) if i < n_init and not c.is_sidecar]
    out: list[DeviceRequest] = []
    for resource in sorted(wanted):
        cls = resolver.get(resource)
        if cls is None:
            continue
        long_requests: list[DeviceRequest | None] = [None] * len(containers)
        for i in long_lived:
            long_requests[i] = _container_request(i, containers[i].requests, resource, cls.name, [])
        biggest: DeviceRequest | None = None
        for i in short_lived:
            req = _container_request(i, containers[i].requests, resource, cls.name, long_requests[i:])
            if req is not None and req.exactly is not None and (
                    biggest is None or (biggest.exactly is not None and biggest.exactly.count < req.exactly.count)):
                biggest = req
        if biggest is not None:
            out.append(biggest)
        out.extend(r for r in long_requests if r is not None)
    return tuple(sorted(out, key=lambda r: r.name))


def _container_request(index: int, requests: Mapping[str, Fraction], resource: str, class_name: str,
                       reusable: Sequence[DeviceRequest | None]) -> DeviceRequest | None:
    """createResourceRequestAndMappings: the request for what the container asks beyond the
    reusable requests' counts, None if those cover it (or it asks for none)."""
    q = requests.get(resource)
    if q is None or q.denominator != 1 or q == 0:
        return None
    want = int(q)
    total = 0
    for r in reusable:
        if r is not None and r.exactly is not None:
            total += r.exactly.count
            if total >= want:
                return None
    index_in_container = sorted(requests).index(resource)
    name = f"container-{index}-request-{index_in_container}"
    return DeviceRequest(name, exactly=Request(name, class_name, (), ALLOCATION_MODE_EXACT, want - total))


def new(args: object, handle: Handle) -> DynamicResources:
    """Plugin factory (registry entry); DynamicResourcesArgs' timeouts do not change decisions."""
    return DynamicResources(handle)
