"""Device use per node, for the what-if tools (capacity, explain, the HTML reports): which of
the devices a node's ResourceSlices publish are allocated, to which claim and which pods.

A node's devices are those the structured allocator would consider on it (GatherPools: its
pools at their newest generation, complete pools only, per-device node selection applied), so
"total" is what DynamicResources can ever give a pod there. A device reachable from several
nodes (an ``allNodes`` or ``nodeSelector`` slice) counts on each of them. A device is used
when an allocated claim's results name it without admin access (allocatedDevices: an
admin-access result does not block a device).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kubesched.objects import Node
from kubesched.objects.devices import DeviceClass, ResourceClaim, ResourceSlice
from kubesched.plugins.dynamicresources.allocator import Allocator, DeviceID


@dataclass(frozen=True, slots=True)
class HeldDevice:
    """One allocated device of a node: the claim holding it (``namespace/name``), the request
    it was allocated for, the pods the claim is reserved for (``namespace/name``)."""

    device: DeviceID
    claim: str
    request: str
    pods: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.device.driver}/{self.device.pool}/{self.device.device}"


@dataclass(frozen=True, slots=True)
class NodeDeviceUse:
    """A node's devices: ``total`` usable there, ``held`` the allocated ones (a device shared
    by several claims appears once per claim), ``shared`` how many of the devices are reachable
    from other nodes too."""

    node: str
    total: int
    held: tuple[HeldDevice, ...] = ()
    shared: int = 0

    @property
    def used(self) -> int:
        return len({h.device for h in self.held})

    def as_dict(self) -> dict[str, object]:
        return {"used": self.used, "total": self.total,
                "held": [{"device": h.name, "claim": h.claim, "request": h.request, "pods": list(h.pods)}
                         for h in self.held]}


def holders(claims: Iterable[ResourceClaim]) -> dict[DeviceID, list[HeldDevice]]:
    """Every device an allocated claim holds (admin access aside) -> who holds it."""
    out: dict[DeviceID, list[HeldDevice]] = {}
    for c in claims:
        if c.allocation is None:
            continue
        pods = tuple(f"{c.namespace}/{r.name}" for r in c.reserved_for if r.resource == "pods")
        for r in c.allocation.devices:
            if r.admin_access:
                continue
            d = DeviceID(r.driver, r.pool, r.device)
            out.setdefault(d, []).append(HeldDevice(d, c.key, r.request, pods))
    return out


def device_use(nodes: Sequence[Node], *, classes: Mapping[str, DeviceClass], slices: Sequence[ResourceSlice],
               claims: Iterable[ResourceClaim]) -> list[NodeDeviceUse]:
    """Per node (in the order given), its devices and the allocated ones. Empty when no slice
    publishes any device (a cluster without DRA)."""
    if not any(s.devices for s in slices):
        return []
    held = holders(claims)
    allocator = Allocator(classes=classes, slices=slices, allocated=set(held))
    out = []
    for node in nodes:
        devices = allocator.node_devices(node)
        mine = tuple(h for d in devices for h in held.get(d.id, ()))
        out.append(NodeDeviceUse(node.name, len(devices), mine, sum(1 for d in devices if not d.node_local)))
    return out
