"""DynamicResources' Filter verdict on many nodes at once (``filter_batch``), kept per node
across pods.

Upstream runs the structured allocator (Allocator.Allocate) on every node that passed the
earlier filters, for every pod. Its outcome on a node is a pure function of what
:meth:`Allocator.allocate`'s memo key names: the node object, the cluster's slices, the device
classes, the allocator's features, the claims' specs, and which of the node's candidate
devices are in use (dedicated, shared or with consumed capacity) — unless a candidate
consumes counters, whose availability depends on the use of its pool's devices on other
nodes. Pods made from one template (or with equal specs) meet the same nodes again and again
while only the nodes they land on change, so the outcome is kept per table row and per claim
specs, and is valid while neither the row's node object nor the use of one of its devices
changed since it was computed:

- :class:`NodeVerdicts` (one per :class:`NodeTable`, in ``table.extras``, for one set of slices
  and one set of features) knows each row's node object, its candidate devices (GatherPools'
  usable devices, built once per node object, not per pod) and an epoch per row: the last
  time the node was replaced or one of its devices was taken or freed. Once per pod it replays
  the table's change log (rows whose node object changed) and the difference between the
  dedicated devices in use now and at the previous pod (a set difference in C): only the rows
  of the devices that changed get a new epoch.
- Per claim specs (and device classes) a store keeps each row's outcome and the epoch it was
  computed at. A row whose outcome is older than its epoch, a node with a candidate consuming
  counters, or any pod while a device is shared or has consumed capacity
  (DRAConsumableCapacity: the store's dedicated-device epochs do not cover those) runs the
  exact allocator, whose answer is what the row gets. Errors (AllocationError: a broken
  claim or class, a CEL runtime error) are never kept: their message names the claim.

So the fast path returns, on every row, exactly what Allocate returns there; the allocator's
semantics (device order, backtracking, constraints, alternatives, in-flight allocations of
assumed claims) are untouched, as it still decides every outcome once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from kubesched.framework import NodeTable
from kubesched.framework.interfaces import IntArray
from kubesched.objects import Node
from kubesched.objects.devices import AllocationResult, ClaimSpec, DeviceClass, ResourceClaim
from kubesched.plugins.dynamicresources.failures import AllocationError, NodeAllocationError

if TYPE_CHECKING:
    from kubesched.plugins.dynamicresources.allocator import Allocator, DeviceID

# What Allocate says of a node: the claims fit, they cannot all be allocated (None), the node
# has invalid pools (NodeAllocationError), or an AllocationError (never kept).
FIT, CANNOT_ALLOCATE, INVALID_POOLS, ERROR = 0, 1, 2, 3
_EXTRAS_KEY = "DynamicResources/verdicts"
_STORES_LIMIT = 256
_NEVER = -1


class _Store:
    """The outcomes for one list of claim specs and one set of device classes, per row."""

    __slots__ = ("specs", "classes", "code", "at")

    def __init__(self, specs: tuple[ClaimSpec, ...], classes: Mapping[str, DeviceClass], size: int) -> None:
        self.specs = specs  # kept alive: keyed by identity when not by value
        self.classes = classes
        self.code = np.zeros(size, np.int8)
        self.at = np.full(size, _NEVER, np.int64)  # the epoch the outcome was computed at

    def grow(self, size: int) -> None:
        if len(self.at) < size:
            n = max(size, 2 * len(self.at))
            self.code = np.concatenate([self.code, np.zeros(n - len(self.code), np.int8)])
            self.at = np.concatenate([self.at, np.full(n - len(self.at), _NEVER, np.int64)])


def _specs_key(specs: tuple[ClaimSpec, ...]) -> tuple[object, ...]:
    """Specs by value when that covers everything Allocate reads of them (a Request's
    capacity requests take no part in its equality: specs with some are keyed by identity)."""
    for spec in specs:
        for dr in spec.requests:
            subs = (dr.exactly,) if dr.exactly is not None else dr.first_available
            if any(r is not None and r.capacity_requests is not None for r in subs):
                return ("id", *(id(s) for s in specs))
    return ("value", *specs)


class NodeVerdicts:
    """Allocate's outcome per table row, kept while the row's node and its devices' use are
    unchanged (see the module docstring). One per table, for one set of slices (the
    allocator's token) and one set of features."""

    __slots__ = ("token", "features_id", "node_at", "devices_at", "rows_of", "cacheable", "changed_at",
                 "epoch", "log_position", "node_version", "in_use", "synced", "stores")

    def __init__(self, token: object, features_id: int) -> None:
        self.token = token
        self.features_id = features_id
        self.node_at: list[Node | None] = []
        self.devices_at: list[list[DeviceID]] = []
        self.rows_of: dict[DeviceID, list[int]] = {}  # a device -> the rows it is a candidate on
        self.cacheable = np.zeros(0, np.bool_)
        self.changed_at = np.zeros(0, np.int64)
        self.epoch = 0
        self.log_position = 0
        self.node_version = -1
        self.in_use: set[DeviceID] = set()
        self.synced: Allocator | None = None  # the allocator (pod) the rows were last brought up to date for
        self.stores: dict[tuple[object, ...], _Store] = {}

    @staticmethod
    def of(table: NodeTable, alloc: Allocator) -> NodeVerdicts:
        """The table's verdicts for ``alloc``'s slices and features, brought up to date with
        the table's nodes and ``alloc``'s devices in use (once per allocator)."""
        got = table.extras.get(_EXTRAS_KEY)
        if not isinstance(got, NodeVerdicts) or got.token is not alloc.slices_token or \
                got.features_id != alloc.features_id:
            got = table.extras[_EXTRAS_KEY] = NodeVerdicts(alloc.slices_token, alloc.features_id)
        if got.synced is not alloc:
            got._sync(table, alloc)
        return got

    # ---- keeping the rows up to date
    def _grow(self, size: int) -> None:
        if len(self.node_at) < size:
            extra = size - len(self.node_at)
            self.node_at.extend([None] * extra)
            self.devices_at.extend([] for _ in range(extra))
            self.cacheable = np.concatenate([self.cacheable, np.zeros(extra, np.bool_)])
            self.changed_at = np.concatenate([self.changed_at, np.zeros(extra, np.int64)])

    def _sync(self, table: NodeTable, alloc: Allocator) -> None:
        size = table.size
        self._grow(size)
        self.epoch += 1
        epoch = self.epoch
        if table.node_version != self.node_version:
            changed = table.changed_since(self.log_position) if self.node_version >= 0 else None
            rows = range(size) if changed is None else set(changed)
            nodes = table.nodes
            node_at = self.node_at
            for r in rows:
                node = nodes[r]
                if node is not node_at[r]:
                    self._set_row(r, node, alloc, epoch)
            self.node_version = table.node_version
        self.log_position = table.log_position
        # The dedicated devices taken or freed since the previous pod: their rows change.
        # (Kept by reference: an allocator's state is not changed once it is built.)
        now = alloc.allocated.devices
        diff = now ^ self.in_use
        if diff:
            rows_of = self.rows_of
            changed_at = self.changed_at
            for did in diff:
                for r in rows_of.get(did, ()):
                    changed_at[r] = epoch
        self.in_use = now
        self.synced = alloc

    def _set_row(self, r: int, node: Node | None, alloc: Allocator, epoch: int) -> None:
        rows_of = self.rows_of
        for did in self.devices_at[r]:
            held = rows_of.get(did)
            if held is not None:
                held.remove(r)
                if not held:
                    del rows_of[did]
        self.node_at[r] = node
        self.changed_at[r] = epoch
        if node is None:
            self.devices_at[r] = []
            self.cacheable[r] = False
            return
        counters, ids = alloc.node_candidates(node)
        self.devices_at[r] = list(ids)
        for did in ids:
            rows_of.setdefault(did, []).append(r)
        self.cacheable[r] = not counters

    # ---- outcomes
    def _store(self, specs: tuple[ClaimSpec, ...], classes: Mapping[str, DeviceClass], size: int) -> _Store:
        key = (id(classes), *_specs_key(specs))
        store = self.stores.get(key)
        if store is None or store.classes is not classes or \
                (key[1] == "id" and any(a is not b for a, b in zip(store.specs, specs, strict=True))):
            if len(self.stores) >= _STORES_LIMIT:
                self.stores.clear()
            store = self.stores[key] = _Store(specs, classes, size)
        store.grow(size)
        return store

    def codes(self, alloc: Allocator, claims: Sequence[ResourceClaim], table: NodeTable, rows: IntArray,
              found: dict[str, list[AllocationResult]], errors: dict[int, str]) -> IntArray:
        """Per row of ``rows``: FIT, CANNOT_ALLOCATE, INVALID_POOLS or ERROR — what
        ``alloc.allocate(node, claims)`` does there. The allocations computed on the way go
        into ``found`` (by node name), the error messages into ``errors`` (by row)."""
        store = self._store(tuple(c.spec for c in claims), alloc.classes, table.size)
        st = alloc.allocated
        keep = not st.shared and not st.capacity
        if keep:
            valid = (store.at[rows] >= self.changed_at[rows]) & self.cacheable[rows]
            out = store.code[rows].astype(np.int64)
            stale = np.flatnonzero(~valid).tolist()
        else:
            out = np.zeros(len(rows), np.int64)
            stale = list(range(len(rows)))
        if not stale:
            return out
        nodes = table.nodes
        cacheable = self.cacheable
        epoch = self.epoch
        for j in stale:
            r = int(rows[j])
            node = nodes[r]
            assert node is not None, f"row {r} has no node"
            try:
                result = alloc.allocate(node, claims)
            except AllocationError as e:
                out[j] = ERROR
                errors[r] = str(e)
                continue
            except NodeAllocationError:
                code = INVALID_POOLS
            else:
                if result is None:
                    code = CANNOT_ALLOCATE
                else:
                    code = FIT
                    found[node.name] = result
            out[j] = code
            if keep and cacheable[r]:
                store.code[r] = code
                store.at[r] = epoch
        return out
