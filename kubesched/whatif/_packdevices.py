"""DRA devices in the packing (kubesched.whatif.pack): which pods with resource claims the
integer program models exactly, the device groups of each node, and each pod's device count
per group.

The scheduler allocates a pod's claims on a node with DynamicResources' allocator, pod after
pod, each taking the first devices that fit. Counting devices is exact when, on every node, the
requests of the modelled pods select sets of free devices that are equal or disjoint: the
devices then fall into *groups* (the devices selected by the same requests), any free device of
a group serves any request that selects it, and a set of pods fits on a node exactly when each
group holds the devices its requests count, whatever order the pods are allocated in. The
model gets one row per node and group: ``sum_c devices[c, g] z[c, n] <= free devices of g``.

Each request's device count on a node is read from the real allocator's answer on that node
(the feasibility matrix's Filter run, before any pending pod is placed). What is not counted
exactly is left out of the model, with the reason, and its pods stay where the scheduler put
them:

- a claim named by several pods (``resourceClaimName``) and not allocated yet: its node and
  devices follow whichever pod gets it first; an allocated one whose ``reservedFor`` would pass
  256 pods;
- ``allocationMode: All`` (every matching device, none in use) and ``adminAccess`` requests;
- ``firstAvailable`` alternatives selecting different devices, or different counts, on a node;
- a constraint (``matchAttribute`` / ``distinctAttribute``) some choice of the selected devices
  would break on a node;
- devices reachable from several nodes (``allNodes`` / ``nodeSelector`` slices): one device
  pool for many nodes;
- requests whose device sets overlap other pods' requests without being equal on some node
  (the first pod allocated could take the devices the other needs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kubesched.errors import KubeschedError
from kubesched.framework import CycleState, NodeInfo
from kubesched.objects import Node, Pod
from kubesched.objects.cel import AttributeValue
from kubesched.objects.devices import (
    ALLOCATION_MODE_ALL,
    RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE,
    Request,
    ResourceClaim,
)
from kubesched.plugins.dynamicresources.allocator import Allocator, DeviceID, allocated_state
from kubesched.plugins.dynamicresources.failures import AllocationError
from kubesched.simulation import Simulator

DYNAMIC_RESOURCES = "DynamicResources"
_Key = tuple[tuple[str, tuple[str, ...]], ...]  # a request: its (class, selectors) per alternative


@dataclass(frozen=True, slots=True)
class _Req:
    claim: str
    name: str
    subs: tuple[Request, ...]

    @property
    def key(self) -> _Key:
        return tuple((r.device_class_name, tuple(s.expression for s in r.selectors)) for r in self.subs)


@dataclass(frozen=True, slots=True, eq=False)
class DeviceGroups:
    """The free devices of each node, grouped by the modelled requests selecting them.
    ``node[g]`` is group g's node (index into the feasibility matrix's nodes), ``room[g]`` its
    free devices, ``label[g]`` a description; ``of_device[n]`` maps node n's grouped devices to
    their group."""

    node: np.ndarray
    room: np.ndarray
    label: tuple[str, ...]
    of_device: tuple[dict[DeviceID, int], ...]
    allocated: frozenset[DeviceID]

    @property
    def count(self) -> int:
        return len(self.room)


def uses_devices(sim: Simulator, pod: Pod) -> bool:
    """The pod has claims and its profile runs DynamicResources' Filter."""
    fwk = sim.profiles.get(pod.scheduler_name)
    return bool(pod.resource_claims) and fwk is not None and any(p.name == DYNAMIC_RESOURCES for p in fwk.filter)


def _claims(sim: Simulator, pod: Pod) -> list[ResourceClaim]:
    """The pod's claims as DynamicResources finds them (a missing one keeps the pod at
    PreEnqueue: it is never attempted, so never here)."""
    out = []
    for ref in pod.resource_claims:
        name = ref.resource_claim_name or pod.resource_claim_statuses.get(ref.name, "")
        claim = sim.objects.resource_claim(pod.namespace, name) if name else None
        if claim is not None:
            out.append(claim)
    return out


def _requests(claim: ResourceClaim) -> list[_Req]:
    return [_Req(claim.key, r.name, (r.exactly,) if r.exactly is not None else r.first_available)
            for r in claim.spec.requests]


def _nodes(sim: Simulator) -> list[Node]:
    return [ni.node for ni in sim.cache.snapshot.list() if ni.node is not None]


def _allocator(sim: Simulator) -> Allocator:
    objects = sim.objects
    return Allocator(classes=objects.device_classes(), slices=objects.resource_slices(),
                     allocated=allocated_state(objects.resource_claims(), consumable=True))


class _Sets:
    """Per node and request, the free devices it selects (alternatives united)."""

    def __init__(self, alloc: Allocator) -> None:
        self.alloc = alloc
        self._sub: dict[tuple[str, int], frozenset[DeviceID]] = {}
        self._attrs: dict[str, dict[DeviceID, Mapping[str, AttributeValue]]] = {}

    def sub(self, node: Node, request: Request) -> frozenset[DeviceID]:
        k = (node.name, id(request))
        hit = self._sub.get(k)
        if hit is None:
            hit = self._sub[k] = frozenset(d for d in self.alloc.selectable(node, request)
                                           if not self.alloc.allocated.is_allocated(d))
        return hit

    def attributes(self, node: Node) -> dict[DeviceID, Mapping[str, AttributeValue]]:
        hit = self._attrs.get(node.name)
        if hit is None:
            hit = self._attrs[node.name] = self.alloc.device_attributes(node)
        return hit

    def request(self, node: Node, req: _Req) -> frozenset[DeviceID]:
        out: frozenset[DeviceID] = frozenset()
        for r in req.subs:
            out |= self.sub(node, r)
        return out


def _shape_reason(sim: Simulator, pod: Pod, claims: list[ResourceClaim], users: dict[str, int],
                  sets: _Sets, nodes: Sequence[Node], local: dict[str, set[DeviceID]]) -> str | None:
    """Why ``pod``'s claims cannot be counted exactly on their own (None: they can)."""
    for claim in claims:
        if claim.allocation is not None:
            reserved = {r.uid for r in claim.reserved_for}
            if pod.uid not in reserved and len(reserved) + users.get(claim.key, 0) > RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE:
                return (f"ResourceClaim {claim.key} is shared by more pods than its reservedFor takes "
                        f"({RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE}): which ones get it depends on the order")
            continue
        if users.get(claim.key, 0) > 1:
            return (f"ResourceClaim {claim.key} is shared by {users[claim.key]} pods and not allocated yet: its node "
                    f"and devices follow the first of them that is scheduled")
        reqs = _requests(claim)
        for req in reqs:
            for r in req.subs:
                if r.allocation_mode == ALLOCATION_MODE_ALL:
                    return f"claim {claim.key} request {req.name}: allocationMode All takes every matching device"
                if r.admin_access:
                    return f"claim {claim.key} request {req.name}: adminAccess devices are not counted"
        for node in nodes:
            node_local = local[node.name]
            for req in reqs:
                sets_ = [(r, sets.sub(node, r)) for r in req.subs]
                selected = [(r, s) for r, s in sets_ if s]
                if len({s for _, s in selected}) > 1 or len({r.count for r, _ in selected}) > 1:
                    return (f"claim {claim.key} request {req.name}: its firstAvailable alternatives select different "
                            f"devices or counts on node {node.name}")
                shared = sorted((d for _, s in selected for d in s if d not in node_local), key=_order)
                if shared:
                    d = shared[0]
                    return (f"claim {claim.key} request {req.name}: device {d.driver}/{d.pool}/{d.device} is reachable "
                            f"from several nodes (one pool for many nodes)")
            for con in claim.spec.constraints:
                attr = con.match_attribute or con.distinct_attribute
                if not attr:
                    continue
                devices: set[DeviceID] = set()
                for req in reqs:
                    if not con.requests or req.name in con.requests or \
                            any(f"{req.name}/{r.name}" in con.requests for r in req.subs):
                        devices |= sets.request(node, req)
                attributes = sets.attributes(node)
                values = [attributes[d].get(attr) for d in sorted(devices, key=_order)]
                if not values:
                    continue
                if any(v is None for v in values) or (con.match_attribute and len(set(map(repr, values))) > 1) or \
                        (con.distinct_attribute and len(set(map(repr, values))) < len(values)):
                    kind = "matchAttribute" if con.match_attribute else "distinctAttribute"
                    return (f"claim {claim.key}: constraint {kind} {attr} depends on which devices are chosen on node "
                            f"{node.name}")
    return None


def _order(d: DeviceID) -> tuple[str, str, str]:
    return d.driver, d.pool, d.device


def claim_reasons(sim: Simulator, candidates: Sequence[Pod]) -> dict[str, str]:
    """uid -> why the model cannot count the devices of the pod's claims, for the pods of
    ``candidates`` with claims (those without a reason are modelled: :func:`device_groups`)."""
    pods = [p for p in candidates if uses_devices(sim, p)]
    if not pods:
        return {}
    alloc = _allocator(sim)
    sets = _Sets(alloc)
    nodes = _nodes(sim)
    local = {n.name: {d.id for d in alloc.node_devices(n) if d.node_local} for n in nodes}
    # Pods naming each claim (a template's claim has one: its owner).
    users: dict[str, int] = {}
    for p in sim.current.values():
        if p.is_terminal or p.uid in sim.deleted:
            continue
        for ref in p.resource_claims:
            name = ref.resource_claim_name or p.resource_claim_statuses.get(ref.name, "")
            if name:
                users[f"{p.namespace}/{name}"] = users.get(f"{p.namespace}/{name}", 0) + 1
    out: dict[str, str] = {}
    requests: dict[str, list[_Req]] = {}
    for pod in pods:
        claims = _claims(sim, pod)
        try:
            why = _shape_reason(sim, pod, claims, users, sets, nodes, local)
        except AllocationError as e:
            why = f"its claims cannot be evaluated: {e}"
        if why is not None:
            out[pod.uid] = f"resource claims: {why}"
        else:
            requests[pod.uid] = [r for c in claims if c.allocation is None for r in _requests(c)]
    # Requests whose device sets overlap without being equal on a node: their pods go.
    while True:
        conflicts: dict[_Key, str] = {}
        keys: dict[_Key, _Req] = {}
        for reqs in requests.values():
            for r in reqs:
                keys.setdefault(r.key, r)
        for node in nodes:
            by_device: dict[DeviceID, set[_Key]] = {}
            for key, r in keys.items():
                for d in sets.request(node, r):
                    by_device.setdefault(d, set()).add(key)
            seen: dict[_Key, frozenset[_Key]] = {}
            for d in sorted(by_device, key=_order):
                group = frozenset(by_device[d])
                for key in sorted(group):
                    if seen.setdefault(key, group) != group:
                        other = min((seen[key] ^ group) - {key}, default=key)
                        conflicts.setdefault(key, f"on node {node.name} the devices claim {keys[key].claim}'s "
                                                  f"request {keys[key].name} selects overlap those of claim "
                                                  f"{keys[other].claim}'s request {keys[other].name} without being "
                                                  f"the same (the first pod allocated may take the other's devices)")
        if not conflicts:
            break
        for uid, reqs in list(requests.items()):
            hit = next((conflicts[r.key] for r in reqs if r.key in conflicts), None)
            if hit is not None:
                out[uid] = f"resource claims: {hit}"
                del requests[uid]
    return out


def device_groups(sim: Simulator, pods: Iterable[Pod], infos: Sequence[NodeInfo]) -> DeviceGroups:
    """The device groups of each node (``infos``, the feasibility matrix's nodes) for the
    modelled pods with claims, on the devices still free (after the kept pods)."""
    alloc = _allocator(sim)
    sets = _Sets(alloc)
    reqs = {r.key: r for p in pods if uses_devices(sim, p) for c in _claims(sim, p) if c.allocation is None
            for r in _requests(c)}
    node_of: list[int] = []
    room: list[int] = []
    labels: list[str] = []
    of_device: list[dict[DeviceID, int]] = []
    for n, ni in enumerate(infos):
        mine: dict[DeviceID, int] = {}
        node = ni.node
        if node is not None and reqs:
            by_device: dict[DeviceID, set[_Key]] = {}
            for key, r in reqs.items():
                for d in sets.request(node, r):
                    by_device.setdefault(d, set()).add(key)
            groups: dict[frozenset[_Key], int] = {}
            for d in sorted(by_device, key=_order):
                sel = frozenset(by_device[d])
                g = groups.get(sel)
                if g is None:
                    g = groups[sel] = len(room)
                    node_of.append(n)
                    room.append(0)
                    names = sorted({f"{reqs[k].subs[0].device_class_name}" for k in sel})
                    labels.append(f"{ni.name}: {', '.join(names)}")
                room[g] += 1
                mine[d] = g
        of_device.append(mine)
    return DeviceGroups(np.asarray(node_of, np.int64), np.asarray(room, np.int64), tuple(labels), tuple(of_device),
                        frozenset(d for d in alloc.allocated.devices))


def demand(sim: Simulator, pod: Pod, state: CycleState, infos: Sequence[NodeInfo], row: np.ndarray,
           groups: DeviceGroups) -> np.ndarray:
    """The devices ``pod`` takes from each group: on each feasible node, the devices the real
    allocator gave its claims there (DynamicResources' Filter in the feasibility run)."""
    out = np.zeros(groups.count, np.int64)
    if not groups.count or not uses_devices(sim, pod):
        return out
    fwk = sim.profiles[pod.scheduler_name]
    plugin = next(p for p in fwk.filter if p.name == DYNAMIC_RESOURCES)
    verdict = getattr(plugin, "node_verdict", None)
    if verdict is None:
        return out
    for n in np.flatnonzero(row).tolist():
        node = infos[n].node
        assert node is not None
        v = verdict(state, pod, node)
        if v is None or v.status:
            continue
        for _, r in v.devices:
            d = DeviceID(r.driver, r.pool, r.device)
            if d in groups.allocated or r.admin_access:
                continue  # an allocated claim's device: held already
            g = groups.of_device[n].get(d)
            if g is None:
                raise KubeschedError(f"pack: device {d.driver}/{d.pool}/{d.device} allocated to {pod.key} on "
                                     f"{node.name} is in no device group (a bug)")
            out[g] += 1
    return out
