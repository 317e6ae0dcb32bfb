"""An in-memory Lease store with API-server semantics (resourceVersion, 404, 409) and fault
injection: the LeaseClient the leader-election tests run against."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from kubesched.errors import ApiError


class MemoryLeases:
    """kubesched.live.leader.LeaseClient over a dict. ``down`` makes every call fail like an
    unreachable server; ``before_update`` runs just before an update is applied (to interleave
    another writer); ``calls`` records (verb, name)."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.rv = 0
        self.down = False
        self.before_update: Callable[[], None] | None = None
        self.calls: list[tuple[str, str]] = []

    def _unavailable(self, verb: str, name: str) -> None:
        self.calls.append((verb, name))
        if self.down:
            raise ApiError(f"{verb} {name}: connection refused")

    def _store(self, lease: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        stored = copy.deepcopy(lease)
        stored.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        meta = stored["metadata"]
        self.objects[(meta["namespace"], meta["name"])] = stored
        return copy.deepcopy(stored)

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        self._unavailable("get", name)
        found = self.objects.get((namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def create(self, lease: dict[str, Any]) -> dict[str, Any]:
        meta = lease["metadata"]
        self._unavailable("create", meta["name"])
        if (meta["namespace"], meta["name"]) in self.objects:
            raise ApiError(f'leases.coordination.k8s.io "{meta["name"]}" already exists', status=409)
        if meta.get("resourceVersion"):
            raise ApiError("resourceVersion should not be set on objects to be created", status=500)
        return self._store(lease)

    def update(self, lease: dict[str, Any]) -> dict[str, Any]:
        meta = lease["metadata"]
        self._unavailable("update", meta["name"])
        if self.before_update is not None:
            hook, self.before_update = self.before_update, None
            hook()
        current = self.objects.get((meta["namespace"], meta["name"]))
        if current is None:
            raise ApiError(f'leases.coordination.k8s.io "{meta["name"]}" not found', status=404)
        if meta.get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise ApiError(f'Operation cannot be fulfilled on leases.coordination.k8s.io "{meta["name"]}": the object '
                           "has been modified; please apply your changes to the latest version and try again",
                           status=409)
        return self._store(lease)

    def spec(self, name: str = "kubesched", namespace: str = "kube-system") -> dict[str, Any]:
        spec: dict[str, Any] = self.objects[(namespace, name)]["spec"]
        return spec

    def force(self, spec: dict[str, Any], name: str = "kubesched", namespace: str = "kube-system") -> None:
        """Write the lease's spec directly (another writer)."""
        lease = copy.deepcopy(self.objects.get((namespace, name)) or {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"namespace": namespace, "name": name}})
        lease["spec"] = spec
        self._store(lease)
