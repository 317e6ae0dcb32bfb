"""The Kubernetes API resources kubesched talks to, shared by the live client
(:mod:`kubesched.cluster.live`) and the local API server (:mod:`kubesched.testing.apiserver`):
group, version, plural, kind and scope, plus the wire helpers both sides need (RFC 3339
times, metav1.Status bodies, field and label selectors)."""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ApiResource:
    """One REST resource: ``/api/v1/...`` when ``group`` is empty, else ``/apis/<group>/<version>/...``."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """``plural.group`` (``pods`` for the core group), as API error messages name it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str = "", name: str = "", subresource: str = "") -> str:
        """The request path of the collection, one object, or one of its subresources."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        parts = [base]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name:
            parts.append(name)
            if subresource:
                parts.append(subresource)
        return "/".join(parts)


def _r(group: str, version: str, plural: str, kind: str, namespaced: bool) -> ApiResource:
    return ApiResource(group, version, plural, kind, namespaced)


RESOURCES: dict[str, ApiResource] = {r.plural: r for r in (
    _r("", "v1", "pods", "Pod", True),
    _r("", "v1", "nodes", "Node", False),
    _r("", "v1", "persistentvolumes", "PersistentVolume", False),
    _r("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True),
    _r("", "v1", "services", "Service", True),
    _r("", "v1", "replicationcontrollers", "ReplicationController", True),
    _r("", "v1", "namespaces", "Namespace", False),
    _r("apps", "v1", "replicasets", "ReplicaSet", True),
    _r("apps", "v1", "statefulsets", "StatefulSet", True),
    _r("storage.k8s.io", "v1", "storageclasses", "StorageClass", False),
    _r("storage.k8s.io", "v1", "csinodes", "CSINode", False),
    _r("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    _r("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True),
    _r("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False),
    _r("coordination.k8s.io", "v1", "leases", "Lease", True),
    _r("events.k8s.io", "v1", "events", "Event", True),
    # Dynamic Resource Allocation (GA in 1.34).
    _r("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False),
    _r("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False),
    _r("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True),
    _r("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True),
)}
"""Every resource kubesched reads or writes, by plural."""

RESOURCE_BY_KIND: dict[str, ApiResource] = {r.kind: r for r in RESOURCES.values()}


def resource_for(group: str, version: str, plural: str) -> ApiResource | None:
    r = RESOURCES.get(plural)
    if r is None or r.group != group or r.version != version:
        return None
    return r


# ---------------------------------------------------------------- times
def format_time(t: float) -> str:
    """metav1.Time on the wire: RFC 3339, seconds precision, UTC."""
    return _dt.datetime.fromtimestamp(int(t), _dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(t: float) -> str:
    """metav1.MicroTime on the wire (events' eventTime): microseconds, UTC."""
    return _dt.datetime.fromtimestamp(t, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ---------------------------------------------------------------- metav1.Status
_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
            409: "Conflict", 410: "Expired", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
            503: "ServiceUnavailable", 504: "Timeout"}


def status_body(code: int, message: str, reason: str = "", *, name: str = "", kind: str = "") -> Json:
    """A metav1.Status (Failure) as the API server returns with a non-2xx code."""
    body: Json = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
                  "reason": reason or _REASONS.get(code, ""), "code": code}
    if name or kind:
        body["details"] = {k: v for k, v in (("name", name), ("kind", kind)) if v}
    return body


# ---------------------------------------------------------------- selectors
FIELD_GETTERS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "metadata.name": lambda o: str((o.get("metadata") or {}).get("name") or ""),
    "metadata.namespace": lambda o: str((o.get("metadata") or {}).get("namespace") or ""),
    "spec.nodeName": lambda o: str((o.get("spec") or {}).get("nodeName") or ""),
    "spec.schedulerName": lambda o: str((o.get("spec") or {}).get("schedulerName") or ""),
    "status.phase": lambda o: str((o.get("status") or {}).get("phase") or ""),
    "spec.unschedulable": lambda o: str(bool((o.get("spec") or {}).get("unschedulable"))).lower(),
}
"""Field selector keys the local API server supports (pods: nodeName, schedulerName, phase)."""

FieldTerm = tuple[str, bool, str]  # (field, equal?, value)


def parse_field_selector(s: str) -> list[FieldTerm]:
    """``a=b,c!=d`` (``==`` too) -> terms; raises ValueError on a term it cannot read or an
    unsupported field."""
    terms: list[FieldTerm] = []
    for part in filter(None, (p.strip() for p in s.split(","))):
        if "!=" in part:
            k, v = part.split("!=", 1)
            eq = False
        elif "==" in part:
            k, v = part.split("==", 1)
            eq = True
        elif "=" in part:
            k, v = part.split("=", 1)
            eq = True
        else:
            raise ValueError(f"invalid selector: {part!r}; can't understand {part!r}")
        k = k.strip()
        if k not in FIELD_GETTERS:
            raise ValueError(f'field label not supported: {k}')
        terms.append((k, eq, v.strip()))
    return terms


def field_selector_matches(terms: list[FieldTerm], obj: Mapping[str, Any]) -> bool:
    return all((FIELD_GETTERS[k](obj) == v) == eq for k, eq, v in terms)


LabelTerm = tuple[str, str, tuple[str, ...]]  # (key, op, values): op in = != in notin exists !exists

_SET_TERM = re.compile(r"^\s*([^\s!=(),]+)\s+(in|notin)\s*\(([^)]*)\)\s*$")


def _split_label_selector(s: str) -> list[str]:
    """Split on commas outside parentheses."""
    out: list[str] = []
    depth, cur = 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [p.strip() for p in out if p.strip()]


def parse_label_selector(s: str) -> list[LabelTerm]:
    """The string form of a label selector (``a=b,c!=d,e in (f,g),h,!i``); ValueError if unreadable."""
    terms: list[LabelTerm] = []
    for part in _split_label_selector(s):
        m = _SET_TERM.match(part)
        if m is not None:
            values = tuple(v.strip() for v in m.group(3).split(",") if v.strip())
            terms.append((m.group(1), m.group(2), values))
        elif "!=" in part:
            k, v = part.split("!=", 1)
            terms.append((k.strip(), "!=", (v.strip(),)))
        elif "==" in part or "=" in part:
            k, v = part.split("==", 1) if "==" in part else part.split("=", 1)
            terms.append((k.strip(), "=", (v.strip(),)))
        elif part.startswith("!"):
            terms.append((part[1:].strip(), "!exists", ()))
        elif re.fullmatch(r"[^\s!=(),]+", part):
            terms.append((part, "exists", ()))
        else:
            raise ValueError(f"unable to parse requirement: {part!r}")
    return terms


def label_selector_matches(terms: list[LabelTerm], labels: Mapping[str, str]) -> bool:
    for key, op, values in terms:
        present = key in labels
        value = labels.get(key)
        if op == "=" and value != values[0]:
            return False
        if op == "!=" and value == values[0]:
            return False
        if op == "in" and value not in values:
            return False
        if op == "notin" and present and value in values:
            return False
        if op == "exists" and not present:
            return False
        if op == "!exists" and present:
            return False
    return True
