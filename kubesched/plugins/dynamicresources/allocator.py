"""The structured allocator (k8s.io/dynamic-resource-allocation/structured): which devices of a
node's ResourceSlices satisfy a pod's claims.

NewAllocator picks the first variant whose supported features cover the enabled ones; with
1.36's defaults (DRAConsumableCapacity and DRADeviceBindingConditions on, DRAListTypeAttributes
off) that is ``internal/incubating``, which this module mirrors:

- GatherPools (pools_incubating.go): the slices relevant to the node (its own, every slice
  without a nodeName and every slice with sharedCounters), grouped by (driver, pool) at the
  newest generation seen; a pool missing slices is re-checked against all slices (obsolete:
  dropped; still missing some: incomplete); buildPool sorts slices by name, separates the
  counter-set slices, and marks a pool invalid for duplicate device names, duplicate counter
  sets or a consumption of an unknown counter set/counter. Pools are sorted by driver then
  pool name, pools with binding conditions after all others.
- Allocate / allocateOne: a first-fit depth-first search over claims, requests and devices with
  backtracking; a request's devices are combinations in pool/slice/device order;
  ``allocationMode: All`` takes every selectable device (an incomplete or invalid pool is an
  error); ``firstAvailable`` tries its subrequests in order; a claim exceeding 32 results stops
  that branch (errAllocationResultMaxSizeExceeded).
- allocateDevice: a device in use (allocated dedicated, or being allocated for any claim;
  admin access: for this claim) is skipped; its counters must fit what its pool's counter sets
  have left (DRAPartitionableDevices); a NoSchedule/NoExecute taint must be tolerated by the
  request (DRADeviceTaints); the claim's constraints must hold; a device allowing multiple
  allocations is shared while the capacity requested fits (DRAConsumableCapacity,
  consumable_capacity.go), each share getting a shareID and its consumedCapacity.
- createNodeSelector: the node's name when a device is node-local or binds to its node, else
  the merged requirements of the slices' node selectors, else none.

Upstream quirks kept on purpose (they decide which device wins): counters taken by a device
that a taint or a constraint then rejects are not given back within that Allocate call, nor
those of a shared device on backtracking; distinctAttribute remembers one value per request
(the last device added), not per device.

A device's selector verdicts are memoized across pods (devices are immutable: a changed slice
is new objects), and the pools of a node across pods while the cluster's slices are the same
objects.
"""

from __future__ import annotations

import uuid
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import compress
from typing import NamedTuple

from kubesched.objects import Node
from kubesched.objects.cel import AttributeValue, CelRuntimeError, DeviceView
from kubesched.objects.devices import (
    ALLOCATION_MODE_ALL,
    TAINT_EFFECT_NO_EXECUTE,
    TAINT_EFFECT_NO_SCHEDULE,
    AllocationResult,
    DeviceCapacity,
    DeviceClass,
    DeviceResult,
    Request,
    ResourceClaim,
    ResourceSlice,
)
from kubesched.objects.devices import Device as SliceDevice
from kubesched.objects.labels import Requirement
from kubesched.objects.model import NodeSelector, NodeSelectorTerm
from kubesched.objects.quantity import base_value
from kubesched.plugins.dynamicresources.failures import INVALID_POOLS, AllocationError, NodeAllocationError
from kubesched.plugins.helpers.nodeaffinity import node_selector_matches

# resourceapi.AllocationResultsMaxSize
ALLOCATION_RESULTS_MAX_SIZE = 32
# Namespace of the deterministic share IDs (upstream draws a random UUID per share).
_SHARE_ID_NAMESPACE = uuid.UUID("6f1c3f0e-6d1b-4f57-9a57-2a3c8f4b9e10")

# id(device view) -> (a weak reference to it, (class selectors, request selectors) -> selectable).
# Keyed by identity (a DeviceView holds dicts: not hashable); the weak reference tells a live
# device from a new object at a reused address. Emptied when large.
_Verdicts = dict[tuple[tuple[str, ...], tuple[str, ...]], bool]
_VERDICTS: dict[int, tuple[weakref.ref[DeviceView], _Verdicts]] = {}
_VERDICTS_LIMIT = 500_000

# The cluster's slices as last seen (identity), and a token naming that state: per-node
# pools computed under one token are reused by later pods while the slices are the same.
_SLICES_SEEN: list[tuple[tuple[ResourceSlice, ...], list[int], object]] = []
# (node name, features) -> (token, pools, candidates, node object).
_POOLS: dict[tuple[str, int], tuple[object, list[_Pool], list[_Candidate], Node]] = {}
# AllocatorFeatures -> a small number (the _POOLS key); the slices grouped by node, per token.
_FEATURE_IDS: dict[AllocatorFeatures, int] = {}
_GROUPED: dict[int, tuple[object, dict[str, list[ResourceSlice]], list[ResourceSlice]]] = {}
_IDS: dict[int, tuple[Sequence[_Candidate], list[DeviceID]]] = {}
_POOLS_LIMIT = 200_000
# Allocate's outcome per node for claims of one spec object (a template's claims share it) and
# one use of the node's devices: pods of one template meet the same nodes again and again, and
# a node's outcome only changes when its own devices are taken or freed. Values keep the node,
# the classes and the specs they were computed for (identity checked on a hit, so a reused id
# never matches); results holding share IDs (made from the claim's uid) are not kept.
_ALLOCS: dict[tuple[object, ...], tuple[Node, object, object, tuple[object, ...], list[AllocationResult] | None]] = {}
_ALLOCS_LIMIT = 100_000


def _verdicts(view: DeviceView) -> _Verdicts:
    entry = _VERDICTS.get(id(view))
    if entry is not None and entry[0]() is view:
        return entry[1]
    if len(_VERDICTS) >= _VERDICTS_LIMIT:
        _VERDICTS.clear()
    out: _Verdicts = {}
    _VERDICTS[id(view)] = (weakref.ref(view), out)
    return out


class _MaxSizeExceeded(Exception):
    """errAllocationResultMaxSizeExceeded: backtrack further up."""


@dataclass(frozen=True, slots=True)
class AllocatorFeatures:
    """structured.Features (dynamicresources.AllocatorFeatures of the gates)."""

    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = True
    device_taints: bool = True
    device_binding: bool = True
    consumable_capacity: bool = True


class DeviceID(NamedTuple):
    """A device by driver, pool and name (a tuple: hashed and compared in C, as the allocator
    looks devices up in sets on every node it tries)."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


@dataclass(frozen=True, slots=True)
class NodeDevice:
    """A device usable on a node (Allocator.node_devices)."""

    id: DeviceID
    node_local: bool


Capacity = dict[str, Fraction]


@dataclass(slots=True)
class AllocatedState:
    """schedulerapi.AllocatedState: dedicated devices, shares of shared devices, and the
    capacity the shares consume per device."""

    devices: set[DeviceID] = field(default_factory=set)
    shared: set[tuple[DeviceID, str]] = field(default_factory=set)
    capacity: dict[DeviceID, Capacity] = field(default_factory=dict)

    def add(self, results: Iterable[DeviceResult], consumable: bool) -> None:
        """foreachAllocatedDevice + allocatedDevices.addDevices: admin-access results hold
        nothing; with consumable capacity a result with a shareID is a share."""
        for r in results:
            if r.admin_access:
                continue
            did = DeviceID(r.driver, r.pool, r.device)
            if consumable and r.share_id:
                self.shared.add((did, r.share_id))
                if r.consumed_capacity is not None:
                    _add_capacity(self.capacity.setdefault(did, {}), r.consumed_capacity)
                continue
            self.devices.add(did)

    def is_allocated(self, did: DeviceID) -> bool:
        """internal.IsDeviceAllocated: dedicated, shared, or with consumed capacity."""
        return did in self.devices or did in self.capacity or any(s[0] == did for s in self.shared)


def allocated_state(claims: Iterable[ResourceClaim], consumable: bool) -> AllocatedState:
    """GatherAllocatedState over every allocated claim."""
    out = AllocatedState()
    for c in claims:
        if c.allocation is not None:
            out.add(c.allocation.devices, consumable)
    return out


class AllocatedTracker:
    """allocatedDevices (dra_manager.go), which upstream keeps from the claims' events: the
    state of every allocated claim, updated from what changed since the last call instead of
    gathered anew for every pod. What changed is found in C: the claim objects that are not
    the ones of the last call at the same place in the list (claims are immutable: a written
    claim is a new object). A claim that lost or changed its allocation, or left, rebuilds it."""

    __slots__ = ("_allocs", "_seen", "_state", "_consumable")

    def __init__(self) -> None:
        self._allocs: dict[str, AllocationResult] = {}  # claim uid -> its allocation
        self._seen: list[ResourceClaim] = []  # the claims of the last call
        self._state = AllocatedState()
        self._consumable: bool | None = None

    def state(self, claims: Iterable[ResourceClaim], consumable: bool) -> AllocatedState:
        """A fresh copy of the current state (the caller may add in-flight allocations)."""
        claims = list(claims)  # ours: the caller's list may change
        seen = self._seen
        # The listers keep their claims in insertion order and a written claim in its place:
        # compared position by position, only the written, added and deleted claims differ.
        # (A deletion shifts the rest: they differ too, and are found unchanged below.)
        differ = _differing(seen, claims, 0, min(len(seen), len(claims)))
        gone = [seen[i] for i in differ] + seen[len(claims):]
        new = [claims[i] for i in differ] + claims[len(seen):]
        self._seen = claims
        allocs = self._allocs
        rebuild = consumable != self._consumable
        added: list[AllocationResult] = []
        if gone or new:
            # Per claim uid named by a change: its allocation now (a new object's) and before.
            after: dict[str, AllocationResult | None] = {}
            for c in gone:
                after.setdefault(c.uid, None)
            for c in new:
                after[c.uid] = c.allocation
            for uid, a in after.items():
                old = allocs.get(uid)
                if old is a:
                    continue
                if a is None:
                    del allocs[uid]
                    rebuild = True  # deallocated or deleted
                    continue
                allocs[uid] = a
                if old is None:
                    added.append(a)
                else:
                    rebuild = True  # re-allocated
        if rebuild:
            self._state = AllocatedState()
            for a in allocs.values():
                self._state.add(a.devices, consumable)
        else:
            for a in added:
                self._state.add(a.devices, consumable)
        self._consumable = consumable
        st = self._state
        return AllocatedState(set(st.devices), set(st.shared), {d: dict(c) for d, c in st.capacity.items()})


def _differing(a: list[ResourceClaim], b: list[ResourceClaim], lo: int, hi: int) -> list[int]:
    """The positions in [lo, hi) where ``a`` and ``b`` hold different claims, found by halving:
    list equality runs in C and takes an identical element as equal without comparing it, so
    a stretch of the same objects costs next to nothing. (A new object equal to the old one
    counts as the same claim: its allocation is equal too.)"""
    if hi - lo <= 8:
        return [i for i in range(lo, hi) if a[i] is not b[i] and a[i] != b[i]]
    if a[lo:hi] == b[lo:hi]:
        return []
    mid = (lo + hi) // 2
    return _differing(a, b, lo, mid) + _differing(a, b, mid, hi)


def _add_capacity(into: Capacity, other: Mapping[str, Fraction]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, Fraction(0)) + v


def _matches(node: Node, node_name: str, all_nodes: bool, selector: NodeSelector | None) -> bool:
    """NodeMatches."""
    if node_name:
        return node_name == node.name
    if all_nodes:
        return True
    return selector is not None and node_selector_matches(selector, node)


# ---------------------------------------------------------------- GatherPools
@dataclass(slots=True, eq=False)
class _Pool:
    """A resource pool of one driver: its slices of the newest generation, and whether it can be used."""

    driver: str
    name: str
    incomplete: bool = False
    invalid: bool = False
    slices: list[ResourceSlice] = field(default_factory=list)  # DeviceSlicesTargetingNode
    not_targeting: list[ResourceSlice] = field(default_factory=list)
    counter_sets: dict[str, Mapping[str, Fraction]] = field(default_factory=dict)

    def has_binding_conditions(self) -> bool:
        return any(d.binding_conditions for s in self.slices for d in s.devices)


@dataclass(frozen=True, slots=True, eq=False)
class _Candidate:
    """A device that may satisfy a request: where it is and the pool it belongs to."""

    id: DeviceID
    device: SliceDevice
    slice: ResourceSlice
    pool: _Pool
    # perDeviceNodeSelection: whether the device itself is reachable from the node (checked
    # after the selectors, as isSelectable does).
    node_ok: bool = True


def _gather_pools(node: Node, for_node: Sequence[ResourceSlice], all_slices: Sequence[ResourceSlice],
                  features: AllocatorFeatures) -> list[_Pool]:
    """GatherPools."""
    pools: dict[tuple[str, str], list[ResourceSlice]] = {}
    for s in for_node:
        if not features.partitionable_devices and (s.per_device_node_selection or s.shared_counters):
            continue
        if s.shared_counters:
            relevant = True
        elif s.node_name or s.all_nodes or s.node_selector is not None:
            relevant = _matches(node, s.node_name, s.all_nodes, s.node_selector)
        elif s.per_device_node_selection:
            relevant = any(_matches(node, d.node_name, d.all_nodes, d.node_selector) for d in s.devices)
        else:
            continue
        if not relevant:
            continue
        key = (s.driver, s.pool)
        have = pools.get(key)
        if have is None or s.generation > have[0].generation:
            pools[key] = [s]
        elif s.generation == have[0].generation:
            have.append(s)
    result: list[_Pool] = []
    with_binding: list[_Pool] = []
    for key, slices in pools.items():
        count = slices[0].slice_count
        if len(slices) == count:
            pool = _build_pool(key, slices, features, None)
        else:
            gen = slices[0].generation
            same = [s for s in all_slices if s.driver == key[0] and s.pool == key[1]]
            if any(s.generation > gen for s in same):
                continue  # obsolete: the driver is replacing this generation
            at_gen = [s for s in same if s.generation == gen]
            if len(at_gen) != count:
                result.append(_Pool(key[0], key[1], incomplete=True))
                continue
            pool = _build_pool(key, slices, features, at_gen)
        (with_binding if pool.has_binding_conditions() else result).append(pool)
    result.sort(key=lambda p: (p.driver, p.name))
    with_binding.sort(key=lambda p: (p.driver, p.name))
    return result + with_binding


def _build_pool(key: tuple[str, str], slices: list[ResourceSlice], features: AllocatorFeatures,
                all_for_pool: list[ResourceSlice] | None) -> _Pool:
    """buildPool."""
    slices = sorted(slices, key=lambda s: s.name)
    if features.partitionable_devices:
        device_slices = [s for s in slices if not s.shared_counters]
        counter_slices = [s for s in slices if s.shared_counters]
    else:
        device_slices, counter_slices = slices, []
    invalid = _Pool(key[0], key[1], invalid=True)
    names: set[str] = set()
    for s in device_slices:
        for d in s.devices:
            if d.name in names:
                return invalid  # duplicate device name
            names.add(d.name)
    if not features.partitionable_devices:
        return _Pool(key[0], key[1], slices=device_slices)
    counter_sets: dict[str, Mapping[str, Fraction]] = {}
    for s in counter_slices:
        for cs in s.shared_counters:
            if cs.name in counter_sets:
                return invalid  # duplicate counter set name
            counter_sets[cs.name] = cs.counters
    if not _consumption_valid(counter_sets, slices):
        return invalid
    if all_for_pool is None or len(slices) == len(all_for_pool):
        return _Pool(key[0], key[1], slices=device_slices, counter_sets=counter_sets)
    seen = {s.name for s in slices}
    others = [s for s in all_for_pool if s.name not in seen]
    if not _consumption_valid(counter_sets, others):
        return invalid
    return _Pool(key[0], key[1], slices=device_slices, not_targeting=others, counter_sets=counter_sets)


def _consumption_valid(counter_sets: Mapping[str, Mapping[str, Fraction]], slices: Iterable[ResourceSlice]) -> bool:
    """validateDeviceCounterConsumption: every consumed counter exists in its counter set."""
    for s in slices:
        for d in s.devices:
            for c in d.consumes_counters:
                cs = counter_sets.get(c.counter_set)
                if cs is None or any(name not in cs for name in c.counters):
                    return False
    return True


def _slices_token(slices: Sequence[ResourceSlice]) -> object:
    """A token for the cluster's slices: the same object while they are the same objects
    (compared by their ids, a list of ints compared in C; the slices seen are kept alive, so
    an id is not reused while it is remembered)."""
    ids = list(map(id, slices))
    if _SLICES_SEEN:
        _, seen_ids, token = _SLICES_SEEN[0]
        if seen_ids == ids:
            return token
    token = object()
    _SLICES_SEEN[:] = [(tuple(slices), ids, token)]
    return token


# ---------------------------------------------------------------- consumable capacity
def _consumed(requested: Fraction | None, cap: DeviceCapacity) -> Fraction:
    """calculateConsumedCapacity: the default (or whole value) without a request, else the
    request rounded up by the policy (range: to min, then a multiple of step from min; values:
    the first option not below it)."""
    policy = cap.request_policy
    if requested is None:
        return policy.default if policy is not None and policy.default is not None else cap.value
    if policy is None:
        return requested
    if policy.range_min is not None:
        lo = policy.range_min
        if requested < lo:
            return lo
        if policy.range_step is None:
            return requested
        step, lo_v = base_value(policy.range_step), base_value(lo)
        added = base_value(requested) - lo_v
        n = abs(added) // step * (1 if added >= 0 else -1)  # Go's truncating division
        if _go_mod(added, step) != 0:
            n += 1
        return Fraction(lo_v + step * n)
    if policy.valid_values:
        for v in policy.valid_values:
            if requested <= v:
                return v
    return requested


def _go_mod(a: int, b: int) -> int:
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _violates_policy(value: Fraction, cap: DeviceCapacity) -> bool:
    """violatesPolicy."""
    policy = cap.request_policy
    if policy is None:
        return False
    if policy.default is not None and value == policy.default:
        return False
    if policy.range_min is not None:
        if policy.range_max is not None and value > policy.range_max:
            return True
        if policy.range_step is not None:
            return _go_mod(base_value(value) - base_value(policy.range_min), base_value(policy.range_step)) != 0
        return False
    if policy.valid_values:
        return value not in policy.valid_values
    return False


def _capacity_fits(current: Mapping[str, Fraction] | None, requests: Mapping[str, Fraction] | None,
                   capacity: Mapping[str, DeviceCapacity], allocating: Mapping[str, Fraction] | None) -> bool:
    """CmpRequestOverCapacity: a request naming a capacity the device lacks fails; each
    capacity's consumption must follow its policy and fit with what is consumed already."""
    if requests is None and not current and not allocating:
        # Without a request each capacity consumes its default (or its whole value), which
        # validation keeps within the value and the policy: it fits an unused device.
        return True
    if requests and any(name not in capacity for name in requests):
        return False
    for name, cap in capacity.items():
        consumed = _consumed(requests.get(name) if requests else None, cap)
        if _violates_policy(consumed, cap):
            return False
        total = consumed + (current.get(name, 0) if current else 0) + (allocating.get(name, 0) if allocating else 0)
        if total > cap.value:
            return False
    return True


# ---------------------------------------------------------------- constraints
def _same(a: AttributeValue, b: AttributeValue) -> bool:
    """Attribute values compare only within their type (a bool is not an int)."""
    return type(a) is type(b) and a == b


class _Constraint:
    def __init__(self, requests: tuple[str, ...], attribute: str) -> None:
        self.requests = frozenset(requests)
        self.attribute = attribute
        self.num = 0

    def applies(self, base: str, sub: str) -> bool:
        if not self.requests:
            return True
        return base in self.requests or (bool(sub) and f"{base}/{sub}" in self.requests)

    def add(self, base: str, sub: str, device: SliceDevice) -> bool:
        raise NotImplementedError

    def remove(self, base: str, sub: str) -> None:
        raise NotImplementedError


class _MatchAttribute(_Constraint):
    """matchAttributeConstraint: every device has the attribute, with the first one's value."""

    def __init__(self, requests: tuple[str, ...], attribute: str) -> None:
        super().__init__(requests, attribute)
        self.value: AttributeValue | None = None

    def add(self, base: str, sub: str, device: SliceDevice) -> bool:
        if not self.applies(base, sub):
            return True
        value = device.view.attributes.get(self.attribute)
        if value is None:
            return False
        if self.num == 0:
            self.value = value
        elif self.value is None or not _same(value, self.value):
            return False
        self.num += 1
        return True

    def remove(self, base: str, sub: str) -> None:
        if self.applies(base, sub):
            self.num -= 1


class _DistinctAttribute(_Constraint):
    """distinctAttributeConstraint: the value differs from those remembered, one per request."""

    def __init__(self, requests: tuple[str, ...], attribute: str) -> None:
        super().__init__(requests, attribute)
        self.values: dict[str, AttributeValue] = {}

    def add(self, base: str, sub: str, device: SliceDevice) -> bool:
        if not self.applies(base, sub):
            return True
        value = device.view.attributes.get(self.attribute)
        if value is None:
            return False
        if self.num > 0 and any(_same(value, v) for v in self.values.values()):
            return False
        self.values[base] = value
        self.num += 1
        return True

    def remove(self, base: str, sub: str) -> None:
        if self.applies(base, sub):
            self.values.pop(base, None)
            self.num -= 1


def _candidate_ids(candidates: Sequence[_Candidate]) -> list[DeviceID]:
    """The candidates' device ids, kept with the (cached, never changed) candidate list."""
    got = _IDS.get(id(candidates))
    if got is None or got[0] is not candidates:
        if len(_IDS) >= _POOLS_LIMIT:
            _IDS.clear()
        got = _IDS[id(candidates)] = (candidates, [c.id for c in candidates])
    return got[1]


# ---------------------------------------------------------------- Allocator
class Allocator:
    """NewAllocator: built once per pod (PreFilter), ``allocate`` per node (Filter)."""

    def __init__(self, *, classes: Mapping[str, DeviceClass], slices: Sequence[ResourceSlice],
                 allocated: AllocatedState | set[DeviceID], features: AllocatorFeatures | None = None) -> None:
        self.classes = classes
        self.allocated = allocated if isinstance(allocated, AllocatedState) else AllocatedState(set(allocated))
        self.features = features or AllocatorFeatures()
        self._all = slices
        self._token = _slices_token(slices)
        # Slices by nodeName (the common case); the others (no nodeName, or shared counters)
        # are relevant to every node. Built once per set of slices (an allocator is built per pod).
        grouped = _GROUPED.get(id(self._token))
        if grouped is None or grouped[0] is not self._token:
            by_node: dict[str, list[ResourceSlice]] = {}
            shared: list[ResourceSlice] = []
            for s in slices:
                if not s.node_name or s.shared_counters:
                    shared.append(s)
                else:
                    by_node.setdefault(s.node_name, []).append(s)
            _GROUPED.clear()
            grouped = _GROUPED[id(self._token)] = (self._token, by_node, shared)
        self._by_node: dict[str, list[ResourceSlice]] = grouped[1]
        self._shared: list[ResourceSlice] = grouped[2]
        # GatherPools' cache key: the features by a small number (hashing the dataclass per
        # node was a tenth of Filter).
        self._features_id = _FEATURE_IDS.setdefault(self.features, len(_FEATURE_IDS))
        self._memo_keys: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        # checkAvailableCounters' availableCounters: per pool name, computed once.
        self.available_counters: dict[str, dict[str, dict[str, Fraction]]] = {}
        self._shared_cache: tuple[int, frozenset[DeviceID]] | None = None
        self._key_prefix = (id(self._token), id(classes), hash(self.features))

    def _pools(self, node: Node) -> tuple[list[_Pool], list[_Candidate]]:
        """GatherPools for ``node`` and the devices of its usable pools in allocation order."""
        key = (node.name, self._features_id)
        hit = _POOLS.get(key)
        # The node object too: slices with a node selector (and per-device selections) match
        # its labels, which a new object may change.
        if hit is not None and hit[0] is self._token and hit[3] is node:
            return hit[1], hit[2]
        pools = _gather_pools(node, [*self._by_node.get(node.name, ()), *self._shared], self._all, self.features)
        candidates = []
        for p in pools:
            if p.incomplete or p.invalid:
                continue
            for s in p.slices:
                for d in s.devices:
                    ok = not s.per_device_node_selection or _matches(node, d.node_name, d.all_nodes, d.node_selector)
                    candidates.append(_Candidate(DeviceID(s.driver, s.pool, d.name), d, s, p, ok))
        if len(_POOLS) >= _POOLS_LIMIT:
            _POOLS.clear()
        _POOLS[key] = (self._token, pools, candidates, node)
        return pools, candidates

    # ---- what the per-row verdicts (verdicts.NodeVerdicts) key on
    @property
    def slices_token(self) -> object:
        """The same object while the cluster's slices are the same objects."""
        return self._token

    @property
    def features_id(self) -> int:
        """A small number per set of features."""
        return self._features_id

    def node_candidates(self, node: Node) -> tuple[bool, list[DeviceID]]:
        """What :meth:`allocate`'s outcome on ``node`` reads of the cluster's device use:
        whether a candidate consumes counters (checkAvailableCounters then reads the use of
        every device of its pool, other nodes' included), and the node's candidate devices
        (GatherPools' usable devices, in order)."""
        _, candidates = self._pools(node)
        return any(c.device.consumes_counters for c in candidates), _candidate_ids(candidates)

    # ---- what the what-if tools read (per-node device use, the packing's device groups)
    def node_devices(self, node: Node) -> list[NodeDevice]:
        """The devices GatherPools makes usable on ``node``, in allocation order (allocated or
        not): each with whether it is published for this node alone (a slice's or a device's
        ``nodeName``) rather than reachable from several nodes."""
        _, candidates = self._pools(node)
        return [NodeDevice(c.id, bool(c.slice.node_name or (c.slice.per_device_node_selection and c.device.node_name)))
                for c in candidates if c.node_ok]

    def selectable(self, node: Node, request: Request, claim: ResourceClaim | None = None) -> list[DeviceID]:
        """The devices of ``node`` that ``request`` (with its class's selectors) selects,
        allocated or not, in allocation order. Raises AllocationError as allocate does (a
        missing class, a CEL runtime error)."""
        cls = self.classes.get(request.device_class_name)
        if cls is None:
            raise AllocationError(f"request {request.name}: could not retrieve device class "
                                  f"{request.device_class_name}")
        _, candidates = self._pools(node)
        return [c.id for c in candidates if c.node_ok and self.selectors_match(request, cls, c, claim)]

    def device_attributes(self, node: Node) -> dict[DeviceID, Mapping[str, AttributeValue]]:
        """The attributes (qualified names) of each device usable on ``node``."""
        _, candidates = self._pools(node)
        return {c.id: c.device.view.attributes for c in candidates if c.node_ok}

    # ---- selection
    def selectors_match(self, request: Request, cls: DeviceClass, cand: _Candidate,
                        claim: ResourceClaim | None) -> bool:
        """The class's and then the request's selectors (selectorsMatch); a CEL runtime error
        is an AllocationError in upstream's words. Memoized per device across pods."""
        memo_key = self._memo_keys.get(id(request))
        if memo_key is None:
            memo_key = self._memo_keys[id(request)] = (tuple(s.expression for s in cls.selectors),
                                                       tuple(s.expression for s in request.selectors))
        per_device = _verdicts(cand.device.view)
        verdict = per_device.get(memo_key)
        if verdict is not None:
            return verdict
        ok = True
        claim_name = claim.key if claim is not None else f"request {request.name}"
        for where, selectors in ((f"class {cls.name}", cls.selectors), (f"claim {claim_name}", request.selectors)):
            for i, sel in enumerate(selectors):
                try:
                    if not sel.program.evaluate(cand.device.view):
                        ok = False
                        break
                except CelRuntimeError as e:
                    raise AllocationError(f"{where}: selector #{i}: CEL runtime error: {e.message}") from None
            if not ok:
                break
        per_device[memo_key] = ok
        return ok

    def allocate(self, node: Node, claims: Sequence[ResourceClaim]) -> list[AllocationResult] | None:
        """One AllocationResult per claim, in order, or None when they cannot all be allocated
        on ``node``. Raises AllocationError for a broken claim or class, NodeAllocationError
        when the node failed for a reason to report (invalid pools)."""
        pools, candidates = self._pools(node)
        key = self._memo_key(node, claims, pools, candidates)
        specs = tuple(c.spec for c in claims)
        if key is not None:
            hit = _ALLOCS.get(key)
            if hit is not None and hit[0] is node and hit[1] is self.classes and hit[2] is self._token and \
                    (hit[3][0] is specs[0] if len(specs) == 1 else all(a is b for a, b in zip(hit[3], specs,
                                                                                             strict=True))):
                return list(hit[4]) if hit[4] is not None else None
        search = _Search(self, node, list(claims), pools, candidates)
        if not search.run():
            if any(p.invalid for p in pools):
                raise NodeAllocationError(INVALID_POOLS)
            out = None
        else:
            out = search.results_out()
        if key is not None and not (out and any(r.share_id for a in out for r in a.devices)):
            if len(_ALLOCS) >= _ALLOCS_LIMIT:
                _ALLOCS.clear()
            _ALLOCS[key] = (node, self.classes, self._token, specs, out)
        return list(out) if out is not None else None

    def _memo_key(self, node: Node, claims: Sequence[ResourceClaim], pools: Sequence[_Pool],
                  candidates: Sequence[_Candidate]) -> tuple[object, ...] | None:
        """What Allocate's outcome on ``node`` depends on: the node, the slices, the classes,
        the features, the claims' specs and which of the node's devices are in use (and how
        much of their capacity). None (no memo) when a pool has shared counters: counters can
        be consumed by devices of other nodes."""
        if any(p.counter_sets for p in pools):
            return None
        st = self.allocated
        shared = self._shared_devices()
        ids = _candidate_ids(candidates)
        if not shared and not st.capacity:
            # Only dedicated devices (the usual case): the membership tests run in C.
            used = tuple(compress(range(len(ids)), map(st.devices.__contains__, ids)))
        else:
            used = tuple(i for i, did in enumerate(ids) if did in st.devices or did in shared or did in st.capacity)
        caps = tuple((i, tuple(sorted(st.capacity[candidates[i].id].items()))) for i in used
                     if candidates[i].id in st.capacity) if st.capacity else ()
        shares = tuple((i, tuple(sorted(sh for d, sh in st.shared if d == candidates[i].id))) for i in used
                       if candidates[i].id in shared) if shared else ()
        return (node.meta.name, id(node), self._key_prefix, tuple(id(c.spec) for c in claims), used, caps, shares)

    def _shared_devices(self) -> frozenset[DeviceID]:
        st = self.allocated
        if not st.shared:
            return frozenset()
        n = len(st.shared)
        if self._shared_cache is None or self._shared_cache[0] != n:
            self._shared_cache = (n, frozenset(d for d, _ in st.shared))
        return self._shared_cache[1]


# ---------------------------------------------------------------- Allocate
@dataclass(slots=True)
class _RequestData:
    """A request (or a firstAvailable subrequest) as the allocator works on it."""

    request: Request
    parent: str  # the firstAvailable request's name, "" for an exact request
    cls: DeviceClass
    num: int
    all_devices: list[_Candidate] = field(default_factory=list)

    @property
    def result_name(self) -> str:
        return f"{self.parent}/{self.request.name}" if self.parent else self.request.name


@dataclass(slots=True)
class _Result:
    """A device allocated for a request, with the share or capacity it takes."""

    data: _RequestData
    cand: _Candidate
    share_id: str = ""
    consumed: Capacity | None = None


class _Search:
    """One Allocate call: the search state (allocator in allocator_incubating.go)."""

    def __init__(self, alloc: Allocator, node: Node, claims: list[ResourceClaim], pools: list[_Pool],
                 candidates: list[_Candidate]) -> None:
        self.alloc = alloc
        self.features = alloc.features
        self.node = node
        self.claims = claims
        self.pools = pools
        self.candidates = candidates
        self.data: dict[tuple[int, int, int], _RequestData] = {}
        self.subs: dict[tuple[int, int], int] = {}  # (claim, request) -> number of subrequests
        self.constraints: list[list[_Constraint]] = []
        self.selectable: dict[tuple[int, int, int, DeviceID], bool] = {}
        self.allocating: dict[DeviceID, set[int]] = {}
        self.allocating_capacity: dict[DeviceID, Capacity] = {}
        self.consumed_counters: dict[str, dict[str, dict[str, Fraction]]] = {}
        self.results: list[list[_Result]] = [[] for _ in claims]

    # ---- setup (Allocate before allocateOne)
    def run(self) -> bool:
        for ci, claim in enumerate(self.claims):
            min_devices = 0
            for ri, dr in enumerate(claim.spec.requests):
                if dr.first_available:
                    if not self.features.prioritized_list:
                        raise AllocationError(f"claim {claim.key}, request {dr.name}: has subrequests, but the "
                                              "DRAPrioritizedList feature is disabled")
                    self.subs[(ci, ri)] = len(dr.first_available)
                    least = min(self._validate(ci, ri, si, sub, dr.name).num
                                for si, sub in enumerate(dr.first_available))
                    min_devices += least
                else:
                    assert dr.exactly is not None
                    if not self.features.consumable_capacity and dr.exactly.capacity_requests is not None:
                        raise AllocationError(f"claim {claim.key}, request {dr.name}: has capacity requests, but the "
                                              "DRAConsumableCapacity feature is disabled")
                    min_devices += self._validate(ci, ri, 0, dr.exactly, "").num
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(f"claim {claim.key}: number of requested devices {min_devices} exceeds the claim "
                                      f"limit of {ALLOCATION_RESULTS_MAX_SIZE}")
            constraints: list[_Constraint] = []
            for i, con in enumerate(claim.spec.constraints):
                if con.match_attribute:
                    constraints.append(_MatchAttribute(con.requests, con.match_attribute))
                elif con.distinct_attribute:
                    constraints.append(_DistinctAttribute(con.requests, con.distinct_attribute))
                else:
                    raise AllocationError(f"claim {claim.key}, constraint #{i}: empty constraint (unsupported "
                                          "constraint type?)")
            self.constraints.append(constraints)
        return self._one(0, 0, 0, 0, False, 0)

    def _validate(self, ci: int, ri: int, si: int, request: Request, parent: str) -> _RequestData:
        """validateDeviceRequest."""
        claim = self.claims[ci]
        if not self.features.consumable_capacity and parent and request.capacity_requests is not None:
            raise AllocationError(f"claim {claim.key}, subrequest {request.name}: has capacity requests, but the "
                                  "DRAConsumableCapacity feature is disabled")
        if not self.features.admin_access and request.admin_access:
            raise AllocationError(f"claim {claim.key}, request {request.name}: admin access is requested, but the "
                                  "feature is disabled")
        cls = self.alloc.classes.get(request.device_class_name)
        if cls is None:
            raise AllocationError(f"claim {claim.key}, request {request.name}: could not retrieve device class "
                                  f"{request.device_class_name}: deviceclass.resource.k8s.io "
                                  f'"{request.device_class_name}" not found')
        data = _RequestData(request, parent, cls, request.count)
        self.data[(ci, ri, si)] = data
        if request.allocation_mode == ALLOCATION_MODE_ALL:
            for p in self.pools:
                if p.incomplete:
                    raise AllocationError(f"claim {claim.key}, request {request.name}: asks for all devices, but "
                                          f"resource pool {p.driver}/{p.name} is currently being updated")
                if p.invalid:
                    raise AllocationError(f"claim {claim.key}, request {request.name}: asks for all devices, but "
                                          f"resource pool {p.driver}/{p.name} is currently invalid")
            for c in self.candidates:
                if not self._is_selectable(ci, ri, si, data, c):
                    continue
                if self.features.consumable_capacity and not self._capacity_ok(request, c):
                    continue
                data.all_devices.append(c)
            data.num = len(data.all_devices)
        return data

    # ---- allocateOne
    def _one(self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: int) -> bool:
        if ci >= len(self.claims):
            return True
        claim = self.claims[ci]
        if ri >= len(claim.spec.requests):
            try:
                return self._one(ci + 1, 0, 0, 0, False, 0)
            except _MaxSizeExceeded:
                return False
        n_subs = self.subs.get((ci, ri))
        if n_subs is not None and not in_sub:
            all_exceeded = True
            for sub in range(n_subs):
                try:
                    ok = self._one(ci, ri, sub, di, True, 0)
                except _MaxSizeExceeded:
                    continue
                all_exceeded = False
                if ok:
                    return True
            if all_exceeded:
                raise _MaxSizeExceeded
            return False
        data = self.data[(ci, ri, si)]
        request = data.request
        do_all = request.allocation_mode == ALLOCATION_MODE_ALL
        if do_all and not data.all_devices:
            return False
        if di >= data.num:
            return self._one(ci, ri + 1, 0, 0, False, 0)
        if len(self.results[ci]) + data.num - di > ALLOCATION_RESULTS_MAX_SIZE:
            raise _MaxSizeExceeded
        if do_all:
            undo = self._allocate_device(ci, data, data.all_devices[di], True)
            if undo is None:
                return False
            try:
                done = self._one(ci, ri, si, di + 1, in_sub, 0)
            except _MaxSizeExceeded:
                undo()
                raise
            if not done:
                undo()
            return done
        admin = request.admin_access
        consumable = self.features.consumable_capacity
        candidates = self.candidates
        for idx in range(start, len(candidates)):
            c = candidates[idx]
            if admin:
                if ci in self.allocating.get(c.id, ()):
                    continue
            elif self._in_use(c.id):
                continue
            if not self._is_selectable(ci, ri, si, data, c):
                continue
            if consumable and not self._capacity_ok(request, c):
                continue
            undo = self._allocate_device(ci, data, c, False)
            if undo is None:
                continue
            try:
                done = self._one(ci, ri, si, di + 1, in_sub, idx + 1)
            except _MaxSizeExceeded:
                undo()
                raise
            if done:
                return True
            undo()
        return False

    def _in_use(self, did: DeviceID) -> bool:
        return did in self.alloc.allocated.devices or bool(self.allocating.get(did))

    def _is_selectable(self, ci: int, ri: int, si: int, data: _RequestData, c: _Candidate) -> bool:
        """isSelectable: binding conditions need their feature; the class's and request's
        selectors; a per-device node selection must reach the node."""
        if not self.features.device_binding and c.device.binding_conditions:
            return False
        key = (ci, ri, si, c.id)
        hit = self.selectable.get(key)
        if hit is not None:
            return hit
        ok = self.alloc.selectors_match(data.request, data.cls, c, self.claims[ci]) and c.node_ok
        self.selectable[key] = ok
        return ok

    def _capacity_ok(self, request: Request, c: _Candidate) -> bool:
        return _capacity_fits(self.alloc.allocated.capacity.get(c.id), request.capacity_requests, c.device.capacity,
                              self.allocating_capacity.get(c.id))

    # ---- allocateDevice
    def _allocate_device(self, ci: int, data: _RequestData, c: _Candidate, must: bool) -> Callable[[], None] | None:
        """The device for request ``data`` of claim ``ci`` if it is available and the claim's
        constraints hold: the search state updated, and the function undoing that; else None."""
        request = data.request
        device = c.device
        did = c.id
        multi = self.features.consumable_capacity and device.allow_multiple_allocations
        if not multi and request.admin_access and ci in self.allocating.get(did, ()):
            return None
        if not request.admin_access and self._in_use(did):
            return None
        if not self.features.partitionable_devices and device.consumes_counters:
            return None
        skip_counters = multi and (did in self.alloc.allocated.capacity or did in self.allocating_capacity)
        if not skip_counters and device.consumes_counters and not self._take_counters(c):
            return None
        base, sub = (data.parent, request.name) if data.parent else (request.name, "")
        if self.features.device_taints and _taint_prevents(device, request):
            return None
        constraints = self.constraints[ci]
        for i, con in enumerate(constraints):
            if not con.add(base, sub, device):
                if must:
                    raise AllocationError(f"claim {self.claims[ci].key}, request {request.name}: cannot add device "
                                          f"{did} because a claim constraint would not be satisfied")
                for prev in constraints[:i]:
                    prev.remove(base, sub)
                return None
        if not multi:
            self.allocating.setdefault(did, set()).add(ci)
        consumed: Capacity | None = None
        share_id = ""
        if self.features.consumable_capacity:
            if not self._capacity_ok(request, c):
                return None
            if multi:
                consumed = {name: _consumed(request.capacity_requests.get(name) if request.capacity_requests else None,
                                            cap) for name, cap in device.capacity.items()}
                share_id = str(uuid.uuid5(_SHARE_ID_NAMESPACE, f"{self.claims[ci].uid}/{did}/{len(self.results[ci])}"))
                _add_capacity(self.allocating_capacity.setdefault(did, {}), consumed)
        results = self.results[ci]
        n = len(results)
        results.append(_Result(data, c, share_id, consumed or None))

        def undo() -> None:
            for con in constraints:
                con.remove(base, sub)
            held = self.allocating.get(did)
            if held is not None:
                held.discard(ci)
            if multi:
                if consumed:
                    have = self.allocating_capacity.get(did)
                    if have is not None:
                        for k, v in consumed.items():
                            if k in have:
                                have[k] -= v
                        if all(v == 0 for v in have.values()):
                            del self.allocating_capacity[did]
            elif self.features.partitionable_devices and device.consumes_counters:
                self._release_counters(c)
            del results[n:]

        return undo

    # ---- counters (checkAvailableCounters / deallocateCountersForDevice)
    def _take_counters(self, c: _Candidate) -> bool:
        pool = c.pool
        available = self.alloc.available_counters.get(pool.name)
        if available is None:
            available = {name: dict(counters) for name, counters in pool.counter_sets.items()}
            allocated = self.alloc.allocated
            for s in (*pool.slices, *pool.not_targeting):
                for d in s.devices:
                    if not d.consumes_counters or not allocated.is_allocated(DeviceID(s.driver, s.pool, d.name)):
                        continue
                    for cc in d.consumes_counters:
                        left = available.get(cc.counter_set, {})
                        for name, q in cc.counters.items():
                            if name in left:
                                left[name] -= q
            self.alloc.available_counters[pool.name] = available
        consumed = self.consumed_counters.setdefault(pool.name, {})
        for cc in c.device.consumes_counters:
            per_set = consumed.setdefault(cc.counter_set, {})
            for name, q in cc.counters.items():
                per_set[name] = per_set.get(name, Fraction(0)) + q
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            for name, have in counters.items():
                if have < used.get(name, 0):
                    self._release_counters(c)
                    return False
        return True

    def _release_counters(self, c: _Candidate) -> None:
        consumed = self.consumed_counters.get(c.pool.name, {})
        for cc in c.device.consumes_counters:
            per_set = consumed.setdefault(cc.counter_set, {})
            for name, q in cc.counters.items():
                per_set[name] = per_set.get(name, Fraction(0)) - q

    # ---- the result
    def results_out(self) -> list[AllocationResult]:
        out = []
        binding = self.features.device_binding
        for results in self.results:
            devices = tuple(DeviceResult(
                r.data.result_name, r.cand.id.driver, r.cand.id.pool, r.cand.id.device, r.data.request.admin_access,
                r.data.request.tolerations,
                r.cand.device.binding_conditions if binding else (),
                r.cand.device.binding_failure_conditions if binding else (),
                r.share_id, r.consumed) for r in results)
            out.append(AllocationResult(devices, _node_selector(self.node, [r.cand for r in results])))
        return out


def _taint_prevents(device: SliceDevice, request: Request) -> bool:
    """taintPreventsAllocation: an untolerated NoSchedule or NoExecute taint (other effects,
    None included, are ignored)."""
    for taint in device.taints:
        if taint.effect in (TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE) and \
                not any(t.tolerates(taint) for t in request.tolerations):
            return True
    return False


def _node_selector(node: Node, devices: Sequence[_Candidate]) -> NodeSelector | None:
    """createNodeSelector: the node's name when a device is node-local or binds to its node;
    else the union of the slices' (or per-device) single-term selectors; else none."""
    fields: list[Requirement] = []
    exprs: list[Requirement] = []
    for c in devices:
        if c.slice.per_device_node_selection:
            node_name, selector = c.device.node_name, c.device.node_selector
        else:
            node_name, selector = c.slice.node_name, c.slice.node_selector
        if node_name or c.device.binds_to_node:
            return NodeSelector((NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", (node.name,)),)),))
        if selector is not None and selector.terms:
            if len(selector.terms) > 1:
                raise AllocationError(f"create NodeSelector for claim: unsupported ResourceSlice.NodeSelector with "
                                      f"{len(selector.terms)} terms")
            term = selector.terms[0]
            _merge(term.match_fields, fields)
            _merge(term.match_expressions, exprs)
    if fields or exprs:
        return NodeSelector((NodeSelectorTerm(match_expressions=tuple(exprs), match_fields=tuple(fields)),))
    return None


def _merge(src: Iterable[Requirement], into: list[Requirement]) -> None:
    """addNewNodeSelectorRequirements: a requirement is added unless one with the same key,
    operator and set of values is there."""
    for r in src:
        if not any(x.key == r.key and x.operator == r.operator and set(x.values) == set(r.values) for x in into):
            into.append(r)
