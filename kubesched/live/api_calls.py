"""Every Kubernetes API call kubesched makes, as RBAC sees it.

The one table is :data:`kubesched.cluster.live.API_CALLS`: the live client
(:class:`kubesched.cluster.live.ApiClient`) records each request by (verb, group, resource,
subresource) and refuses any request missing from it, so the table cannot fall behind the code.
This module derives RBAC's view of that table — the Lease calls pinned to the configured lock
(``leaderElection.resourceNamespace`` / ``resourceName``), a reason for each call — and matches
it against RBAC rules: a test checks every call against the manifests in ``deploy/`` with
:func:`authorize` (RBAC's rule matching), and that no rule grants more than kube-scheduler's own
``system:kube-scheduler`` / ``system:volume-scheduler`` roles plus the Lease rule for kubesched's
lock.

The calls mirror kube-scheduler's: list+watch of every informed resource, ``create
pods/binding`` (DefaultBinder), ``patch pods/status`` (PodScheduled condition and
nominatedNodeName), ``delete pods`` (preemption victims), ``create`` and ``patch`` (series) of
``events.k8s.io`` Events, ``update`` of ``persistentvolumes`` / ``persistentvolumeclaims``
(VolumeBinding's PreBind, granted by ``system:volume-scheduler``), ``get``/``create``/``update``
of the leader-election Lease, and, with the DynamicResourceAllocation gate on (1.34+), list+watch
of ``resource.k8s.io`` DeviceClasses, ResourceSlices and ResourceClaims plus DynamicResources'
claim writes: ``update resourceclaims`` (the delete-protection finalizer), ``update
resourceclaims/status`` (allocation and reservedFor; PostFilter's deallocation), ``patch
resourceclaims/status`` (Unreserve) and ``get resourceclaims`` (after a conflict), as granted by
1.36's ``system:kube-scheduler``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.cluster import live
from kubesched.cluster.resources import RESOURCES, ApiResource

Resource = ApiResource
"""An API resource: group ("" = core), version, plural, kind, namespaced (``.path(...)`` gives
its REST path)."""

PODS = RESOURCES["pods"]
NODES = RESOURCES["nodes"]
EVENTS = RESOURCES["events"]
LEASES = RESOURCES["leases"]

INFORMED: tuple[Resource, ...] = tuple(RESOURCES[plural]
                                      for plural in (*live.INFORMED_RESOURCES, *live.DRA_INFORMED_RESOURCES))
"""What the reflectors list and watch, cluster-wide (kube-scheduler's informers for the objects
kubesched models; it has no CSIStorageCapacity objects, so it does not watch those). The
resource.k8s.io ones (DeviceClasses, ResourceSlices, ResourceClaims) are watched only when the
DynamicResourceAllocation gate is on (``--kube-version`` 1.34 and later), as kube-scheduler
creates those informers only then; ResourceClaimTemplates are never read by the scheduler."""

DEFAULT_LEASE_NAMESPACE = "kube-system"
DEFAULT_LEASE_NAME = "kubesched"

_WHY: dict[tuple[str, str, str], str] = {
    ("create", "pods", "binding"): "DefaultBinder: bind the pod to its node",
    ("patch", "pods", "status"): "PodScheduled=False condition, status.nominatedNodeName, DisruptionTarget",
    ("delete", "pods", ""): "preemption: delete the victims",
    ("create", "events", ""): "Scheduled / FailedScheduling / Preempted events",
    ("patch", "events", ""): "event series: the count of a repeated event",
    ("update", "persistentvolumes", ""): "VolumeBinding PreBind: bind a PV to the pod's claim (spec.claimRef)",
    ("update", "persistentvolumeclaims", ""): "VolumeBinding PreBind: the selected-node annotation for provisioning",
    ("get", "resourceclaims", ""): "DynamicResources PreBind: read a claim again after a conflict",
    ("update", "resourceclaims", ""): "DynamicResources PreBind: the claim's delete-protection finalizer",
    ("update", "resourceclaims", "status"): "DynamicResources PreBind: allocation and reservedFor; PostFilter: "
                                            "deallocation",
    ("patch", "resourceclaims", "status"): "DynamicResources Unreserve: the pod out of reservedFor",
    ("get", "leases", ""): "leader election: read the lock",
    ("create", "leases", ""): "leader election: create the lock when absent",
    ("update", "leases", ""): "leader election: acquire, renew, release",
}
_WHY_VERB = {"list": "reflector: initial list / relist", "watch": "reflector: watch"}


@dataclass(frozen=True, slots=True)
class ApiCall:
    """One kind of request. ``namespace``/``name`` restrict it when the call is always made
    there (the Lease); None means any namespace / cluster-wide, any object."""

    verb: str  # RBAC verb: get list watch create update patch delete
    resource: Resource
    subresource: str = ""
    namespace: str | None = None
    name: str | None = None
    why: str = ""

    @property
    def group(self) -> str:
        return self.resource.group

    @property
    def rbac_resource(self) -> str:
        """``pods`` or ``pods/binding``: how RBAC names it."""
        return f"{self.resource.plural}/{self.subresource}" if self.subresource else self.resource.plural

    def __str__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        named = f" {self.name!r}" if self.name else ""
        group = self.group or "core"
        return f"{self.verb} {self.rbac_resource}{named} ({group}){where}"


def rbac_call(call: live.ApiCall, lease_namespace: str = DEFAULT_LEASE_NAMESPACE,
              lease_name: str = DEFAULT_LEASE_NAME) -> ApiCall:
    """RBAC's view of one call of the client's table (Lease calls go to the lock only)."""
    r = RESOURCES[call.resource]
    if r.group != call.group:
        raise ValueError(f"{call}: {call.resource} is in group {r.group!r}")
    why = _WHY.get((call.verb, call.resource, call.subresource)) or _WHY_VERB.get(call.verb, "")
    if r == LEASES:
        return ApiCall(call.verb, r, call.subresource, namespace=lease_namespace, name=lease_name, why=why)
    return ApiCall(call.verb, r, call.subresource, why=why)


def api_calls(lease_namespace: str = DEFAULT_LEASE_NAMESPACE, lease_name: str = DEFAULT_LEASE_NAME,
              leader_elect: bool = True) -> tuple[ApiCall, ...]:
    """:data:`kubesched.cluster.live.API_CALLS` for a given leader-election lock (without the
    Lease calls when leader election is off)."""
    calls = (rbac_call(c, lease_namespace, lease_name) for c in live.API_CALLS)
    return tuple(c for c in calls if leader_elect or c.resource != LEASES)


API_CALLS: tuple[ApiCall, ...] = api_calls()


# =================================================================== RBAC matching
@dataclass(frozen=True, slots=True)
class PolicyRule:
    """rbac.authorization.k8s.io/v1 PolicyRule (resource rules only)."""

    verbs: frozenset[str]
    api_groups: frozenset[str]
    resources: frozenset[str]
    resource_names: frozenset[str] = frozenset()

    @classmethod
    def from_manifest(cls, rule: Mapping[str, Any]) -> PolicyRule:
        def strings(key: str) -> frozenset[str]:
            value = rule.get(key) or []
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"rule {key}: expected a list of strings, got {value!r}")
            return frozenset(value)

        if rule.get("nonResourceURLs"):
            raise ValueError("nonResourceURLs rules are not expected here")
        return cls(strings("verbs"), strings("apiGroups"), strings("resources"), strings("resourceNames"))

    def allows(self, verb: str, group: str, resource: str, name: str | None) -> bool:
        """RBAC's RuleAllows: verb, group, resource (``pods/binding`` for a subresource,
        ``*/binding`` and ``pods/*`` wildcards) and resourceName (a rule with resourceNames never
        matches a request without a name, e.g. create, list)."""
        if "*" not in self.verbs and verb not in self.verbs:
            return False
        if "*" not in self.api_groups and group not in self.api_groups:
            return False
        if not _resource_matches(self.resources, resource):
            return False
        if not self.resource_names:
            return True
        return name is not None and name in self.resource_names


def _resource_matches(rule_resources: frozenset[str], requested: str) -> bool:
    if "*" in rule_resources or requested in rule_resources:
        return True
    base, sep, sub = requested.partition("/")
    if not sep:
        return False
    return f"*/{sub}" in rule_resources or f"{base}/*" in rule_resources


@dataclass(frozen=True, slots=True)
class Grant:
    """Rules in force through one binding: ``namespace`` None for a ClusterRoleBinding (everywhere),
    else a RoleBinding's namespace."""

    rules: tuple[PolicyRule, ...]
    namespace: str | None = None

    @classmethod
    def of(cls, rules: Iterable[Mapping[str, Any]], namespace: str | None = None) -> Grant:
        return cls(tuple(PolicyRule.from_manifest(r) for r in rules), namespace)


def authorize(grants: Sequence[Grant], call: ApiCall) -> bool:
    """Whether the grants allow ``call`` wherever it may be made: a call without a fixed namespace
    (cluster-wide list/watch, or any namespace) needs a cluster-wide grant; a request for a fixed
    object checks its name (``create`` carries no name for RBAC)."""
    name = None if call.verb in ("create", "list", "watch") else call.name
    for grant in grants:
        if grant.namespace is not None and (call.namespace is None or grant.namespace != call.namespace):
            continue
        if any(rule.allows(call.verb, call.group, call.rbac_resource, name) for rule in grant.rules):
            return True
    return False
