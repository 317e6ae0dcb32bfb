"""The structured allocator (k8s.io/dynamic-resource-allocation/structured, v1.36's incubating
variant as the default gates select it): which devices of a node's ResourceSlices satisfy a
pod's claims.

Mirrors GatherPools (slices relevant to the node; pools by (driver, pool) at their newest
generation, incomplete pools unusable; pools sorted by driver then pool name, slices by name,
devices in slice order) and Allocator.Allocate / allocateOne: a first-fit depth-first search
over claims, requests and devices with backtracking, where a request's devices are taken in
order after the previous one (combinations, no repeats); ``allocationMode: All`` takes every
matching device; ``firstAvailable`` tries its subrequests in order (the result names
``<request>/<subrequest>``); constraints (matchAttribute, distinctAttribute) are checked as each
device is added; devices already allocated (by allocated claims, or claims being allocated in
flight) are unavailable. A device is selectable when every selector of its class and of the
request evaluates to true; a CEL runtime error aborts the allocation with upstream's words.

Not modelled (gates on in 1.36 but absent from the scenarios kubesched is checked against):
partitionable devices' shared counters, consumable capacity, device taints and binding
conditions. A slice using them is read, its devices allocated whole.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kubesched.objects import Node
from kubesched.objects.cel import AttributeValue, CelRuntimeError, DeviceView
from kubesched.objects.devices import (
    ALLOCATION_MODE_ALL,
    AllocationResult,
    ClaimSpec,
    Device,
    DeviceClass,
    DeviceResult,
    Request,
    ResourceClaim,
    ResourceSlice,
)
from kubesched.objects.labels import Requirement
from kubesched.objects.model import NodeSelector, NodeSelectorTerm
from kubesched.plugins.helpers.nodeaffinity import node_selector_matches

# resourceapi.AllocationResultsMaxSize
ALLOCATION_RESULTS_MAX_SIZE = 32
# id(device view) -> (a weak reference to it, (class selectors, request selectors) -> selectable).
# Keyed by identity (a DeviceView holds dicts: not hashable); the weak reference tells a live
# device from a new object at a reused address. Emptied when large.
_Verdicts = dict[tuple[tuple[str, ...], tuple[str, ...]], bool]
_VERDICTS: dict[int, tuple[weakref.ref[DeviceView], _Verdicts]] = {}
_VERDICTS_LIMIT = 500_000


# node name -> (its slices, their pools' state, the candidates, incomplete) (_candidates).
_CANDIDATES: dict[str, tuple[list[ResourceSlice], tuple[tuple[int, int], ...], list[_Candidate], bool]] = {}
_CANDIDATES_LIMIT = 200_000


def _verdicts(view: DeviceView) -> _Verdicts:
    entry = _VERDICTS.get(id(view))
    if entry is not None and entry[0]() is view:
        return entry[1]
    if len(_VERDICTS) >= _VERDICTS_LIMIT:
        _VERDICTS.clear()
    out: _Verdicts = {}
    _VERDICTS[id(view)] = (weakref.ref(view), out)
    return out


class AllocationError(Exception):
    """What upstream returns as an error (the claim or class is broken): the pod's cycle errs."""


@dataclass(frozen=True, slots=True)
class DeviceID:
    driver: str
    pool: str
    device: str


@dataclass(frozen=True, slots=True)
class NodeDevice:
    """A device usable on a node (Allocator.node_devices)."""

    id: DeviceID
    node_local: bool


@dataclass(frozen=True, slots=True)
class _Candidate:
    id: DeviceID
    device: Device
    node_name: str  # the slice's nodeName ("" for allNodes / nodeSelector slices)
    node_selector: NodeSelector | None


def allocated_devices(claims: Iterable[ResourceClaim]) -> set[DeviceID]:
    """The devices of every allocated claim (admin-access results do not block a device)."""
    out: set[DeviceID] = set()
    for c in claims:
        if c.allocation is not None:
            out.update(DeviceID(r.driver, r.pool, r.device) for r in c.allocation.devices if not r.admin_access)
    return out


def _slice_matches(s: ResourceSlice, node: Node) -> bool:
    """NodeMatches for a slice (or, with perDeviceNodeSelection, any of its devices)."""
    if s.node_name or s.all_nodes or s.node_selector is not None:
        return _matches(node, s.node_name, s.all_nodes, s.node_selector)
    if s.per_device_node_selection:
        return any(_matches(node, d.node_name, d.all_nodes, d.node_selector) for d in s.devices)
    return False


def _matches(node: Node, node_name: str, all_nodes: bool, selector: NodeSelector | None) -> bool:
    if node_name:
        return node_name == node.name
    if all_nodes:
        return True
    return selector is not None and node_selector_matches(selector, node)


class Allocator:
    """NewAllocator: built once per pod (PreFilter), ``allocate`` per node (Filter)."""

    def __init__(self, *, classes: Mapping[str, DeviceClass], slices: Sequence[ResourceSlice],
                 allocated: set[DeviceID]) -> None:
        self.classes = classes
        self.allocated = allocated
        # Newest generation per pool over every slice: a pool whose slices for this node are
        # of an older generation is being replaced (ignored).
        self._newest: dict[tuple[str, str], int] = {}
        self._counts: dict[tuple[str, str, int], int] = {}
        for s in slices:
            key = (s.driver, s.pool)
            self._newest[key] = max(self._newest.get(key, s.generation), s.generation)
            self._counts[(s.driver, s.pool, s.generation)] = self._counts.get((s.driver, s.pool, s.generation), 0) + 1
        # Slices by nodeName (the common case), the others checked per node.
        self._by_node: dict[str, list[ResourceSlice]] = {}
        self._other: list[ResourceSlice] = []
        for s in slices:
            if s.node_name:
                self._by_node.setdefault(s.node_name, []).append(s)
            else:
                self._other.append(s)
        self._selectable: dict[tuple[int, DeviceID], bool] = {}
        self._memo_keys: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {}

    # ---- GatherPools
    def _candidates(self, node: Node) -> tuple[list[_Candidate], bool]:
        """The usable devices for ``node`` in allocation order, and whether an incomplete pool
        was seen (allocationMode All then fails). Kept across pods while the node's slices are
        the same objects (slices are immutable: a change is a new object)."""
        mine = self._by_node.get(node.name, [])
        if not self._other:
            hit = _CANDIDATES.get(node.name)
            if hit is not None and len(hit[0]) == len(mine) and all(a is b for a, b in zip(hit[0], mine, strict=True)) \
                    and hit[1] == self._pool_state(mine):
                return hit[2], hit[3]
        pools: dict[tuple[str, str], list[ResourceSlice]] = {}
        for s in mine:
            pools.setdefault((s.driver, s.pool), []).append(s)
        for s in self._other:
            if _slice_matches(s, node):
                pools.setdefault((s.driver, s.pool), []).append(s)
        out: list[_Candidate] = []
        incomplete = False
        for key in sorted(pools):
            slices = pools[key]
            gen = max(s.generation for s in slices)
            if gen < self._newest[key]:
                continue  # obsolete generation: the driver is replacing it
            slices = sorted((s for s in slices if s.generation == gen), key=lambda s: s.name)
            if self._counts[(key[0], key[1], gen)] != slices[0].slice_count:
                incomplete = True
                continue
            for s in slices:
                for d in s.devices:
                    if s.per_device_node_selection and not _matches(node, d.node_name, d.all_nodes, d.node_selector):
                        continue
                    out.append(_Candidate(DeviceID(s.driver, s.pool, d.name), d,
                                          s.node_name or d.node_name,
                                          s.node_selector if not s.per_device_node_selection else d.node_selector))
        if not self._other:
            if len(_CANDIDATES) >= _CANDIDATES_LIMIT:
                _CANDIDATES.clear()
            _CANDIDATES[node.name] = (list(mine), self._pool_state(mine), out, incomplete)
        return out, incomplete

    def _pool_state(self, slices: Sequence[ResourceSlice]) -> tuple[tuple[int, int], ...]:
        """What else the node's pools depend on: each pool's newest generation and slice count."""
        return tuple((self._newest[(s.driver, s.pool)], self._counts.get((s.driver, s.pool, s.generation), 0))
                     for s in slices)

    # ---- what the what-if tools read (per-node device use, the packing's device groups)
    def node_devices(self, node: Node) -> list[NodeDevice]:
        """The devices GatherPools makes usable on ``node``, in allocation order (allocated or
        not): each with whether it is published for this node alone (a slice's or a device's
        ``nodeName``) rather than reachable from several nodes."""
        candidates, _ = self._candidates(node)
        return [NodeDevice(c.id, bool(c.node_name)) for c in candidates]

    def selectable(self, node: Node, request: Request) -> list[DeviceID]:
        """The devices of ``node`` that ``request`` (with its class's selectors) selects,
        allocated or not, in allocation order. Raises AllocationError as allocate does (a
        missing class, a CEL runtime error)."""
        candidates, _ = self._candidates(node)
        return [c.id for c in candidates if self._is_selectable(request, c)]

    def device_attributes(self, node: Node) -> dict[DeviceID, Mapping[str, AttributeValue]]:
        """The attributes (qualified names) of each device usable on ``node``."""
        candidates, _ = self._candidates(node)
        return {c.id: c.device.view.attributes for c in candidates}

    # ---- selection
    def _is_selectable(self, request: Request, cand: _Candidate) -> bool:
        key = (id(request), cand.id)
        hit = self._selectable.get(key)
        if hit is not None:
            return hit
        cls = self.classes.get(request.device_class_name)
        if cls is None:
            raise AllocationError(f"request {request.name}: could not retrieve device class "
                                  f"{request.device_class_name}")
        # A device's attributes never change (a new slice is new objects): the verdict of one set
        # of selectors on one device is kept for later pods, as long as the device lives.
        memo_key = self._memo_keys.get(id(request))
        if memo_key is None:
            memo_key = self._memo_keys[id(request)] = (tuple(s.expression for s in cls.selectors),
                                                       tuple(s.expression for s in request.selectors))
        per_device = _verdicts(cand.device.view)
        verdict = per_device.get(memo_key)
        if verdict is not None:
            self._selectable[key] = verdict
            return verdict
        ok = True
        for where, selectors in (("class " + cls.name, cls.selectors), ("request " + request.name, request.selectors)):
            for i, sel in enumerate(selectors):
                try:
                    if not sel.program.evaluate(cand.device.view):
                        ok = False
                        break
                except CelRuntimeError as e:
                    raise AllocationError(f"{where}: selector #{i}: CEL runtime error: {e.message}") from None
            if not ok:
                break
        self._selectable[key] = ok
        per_device[memo_key] = ok
        return ok

    # ---- Allocate
    def allocate(self, node: Node, claims: Sequence[ResourceClaim]) -> list[AllocationResult] | None:
        """One AllocationResult per claim, in order, or None when they cannot all be allocated
        on ``node``. Raises AllocationError for a broken claim or class."""
        candidates, incomplete = self._candidates(node)
        search = _Search(self, candidates, incomplete)
        picked: list[list[tuple[str, _Candidate, bool]]] = [[] for _ in claims]
        if not search.claim(list(claims), 0, picked):
            return None
        out = []
        for devices in picked:
            results = tuple(DeviceResult(req, c.id.driver, c.id.pool, c.id.device, admin) for req, c, admin in devices)
            out.append(AllocationResult(results, _node_selector(node, [c for _, c, _ in devices])))
        return out


def _node_selector(node: Node, devices: Sequence[_Candidate]) -> NodeSelector | None:
    """createNodeSelector: the node's name when a device is node-local, else the slices'
    selector, else none (devices reachable from every node)."""
    for c in devices:
        if c.node_name:
            return NodeSelector((NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", (node.name,)),)),))
    for c in devices:
        if c.node_selector is not None:
            return c.node_selector
    return None


class _Search:
    """allocateOne's depth-first search."""

    def __init__(self, alloc: Allocator, candidates: list[_Candidate], incomplete: bool) -> None:
        self.alloc = alloc
        self.candidates = candidates
        self.incomplete = incomplete
        self.in_use: set[DeviceID] = set()

    def claim(self, claims: list[ResourceClaim], ci: int, picked: list[list[tuple[str, _Candidate, bool]]]) -> bool:
        if ci == len(claims):
            return True
        return self.request(claims, ci, 0, picked)

    def request(self, claims: list[ResourceClaim], ci: int, ri: int,
                picked: list[list[tuple[str, _Candidate, bool]]]) -> bool:
        spec: ClaimSpec = claims[ci].spec
        if ri == len(spec.requests):
            return self.claim(claims, ci + 1, picked)
        dr = spec.requests[ri]
        if dr.exactly is not None:
            return self.devices(claims, ci, ri, dr.name, dr.exactly, picked)
        for sub in dr.first_available:
            if self.devices(claims, ci, ri, f"{dr.name}/{sub.name}", sub, picked):
                return True
        return False

    def devices(self, claims: list[ResourceClaim], ci: int, ri: int, result_name: str, request: Request,
                picked: list[list[tuple[str, _Candidate, bool]]]) -> bool:
        if request.allocation_mode == ALLOCATION_MODE_ALL:
            # "All" is every selectable device of the node, allocated or not: one in use
            # makes the request fail (allocateDevice), an incomplete pool is an error.
            if self.incomplete:
                raise AllocationError(f"claim {claims[ci].key}, request {result_name}: asks for all devices, but a "
                                      "resource pool is currently being updated")
            chosen = [c for c in self.candidates if self.alloc._is_selectable(request, c)]
            if not chosen:
                return False
            if not request.admin_access and any(c.id in self.in_use or c.id in self.alloc.allocated for c in chosen):
                return False
            if len(picked[ci]) + len(chosen) > ALLOCATION_RESULTS_MAX_SIZE:
                return False
            if not all(self._constraints_ok(claims[ci], result_name, c, picked[ci]) for c in chosen):
                return False
            return self._with(claims, ci, ri, result_name, request, chosen, picked)
        if len(picked[ci]) + request.count > ALLOCATION_RESULTS_MAX_SIZE:
            return False
        matching = [c for c in self.candidates if self._usable(request, c)]
        return self._choose(claims, ci, ri, result_name, request, matching, 0, [], picked)

    def _choose(self, claims: list[ResourceClaim], ci: int, ri: int, result_name: str, request: Request,
                matching: list[_Candidate], start: int, chosen: list[_Candidate],
                picked: list[list[tuple[str, _Candidate, bool]]]) -> bool:
        if len(chosen) == request.count:
            return self._with(claims, ci, ri, result_name, request, chosen, picked)
        for i in range(start, len(matching)):
            c = matching[i]
            if c.id in self.in_use and not request.admin_access:
                continue
            if not self._constraints_ok(claims[ci], result_name, c, [*picked[ci], *((result_name, x, False)
                                                                                    for x in chosen)]):
                continue
            self.in_use.add(c.id)
            chosen.append(c)
            if self._choose(claims, ci, ri, result_name, request, matching, i + 1, chosen, picked):
                return True
            chosen.pop()
            self.in_use.discard(c.id)
        return False

    def _with(self, claims: list[ResourceClaim], ci: int, ri: int, result_name: str, request: Request,
              chosen: list[_Candidate], picked: list[list[tuple[str, _Candidate, bool]]]) -> bool:
        n = len(picked[ci])
        picked[ci].extend((result_name, c, request.admin_access) for c in chosen)
        added = [c.id for c in chosen if c.id not in self.in_use]
        self.in_use.update(added)
        if self.request(claims, ci, ri + 1, picked):
            return True
        del picked[ci][n:]
        self.in_use.difference_update(added)
        return False

    def _usable(self, request: Request, c: _Candidate) -> bool:
        if not request.admin_access and (c.id in self.alloc.allocated):
            return False
        return self.alloc._is_selectable(request, c)

    def _constraints_ok(self, claim: ResourceClaim, result_name: str, c: _Candidate,
                        so_far: Sequence[tuple[str, _Candidate, bool]]) -> bool:
        """matchAttribute: every device of the constrained requests has the attribute, with one
        value; distinctAttribute: all values differ."""
        base = result_name.split("/", 1)[0]
        for con in claim.spec.constraints:
            if con.requests and base not in con.requests and result_name not in con.requests:
                continue
            attr = con.match_attribute or con.distinct_attribute
            if not attr:
                continue
            value = _attribute(c.device, attr)
            if value is None:
                return False
            others = [_attribute(x.device, attr) for name, x, _ in so_far
                      if not con.requests or name.split("/", 1)[0] in con.requests or name in con.requests]
            if con.match_attribute and any(o != value for o in others):
                return False
            if con.distinct_attribute and any(o == value for o in others):
                return False
        return True


def _attribute(device: Device, name: str) -> AttributeValue | None:
    return device.view.attributes.get(name)
