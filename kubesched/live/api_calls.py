"""Every Kubernetes API call kubesched makes, in one table.

This is the single source of truth for three things that must agree:

- the live client and its reflectors (:mod:`kubesched.cluster.live`) build their URLs from
  :data:`INFORMED` and the :class:`Resource` constants (``resource.path(...)``);
- the fake API server serves (at least) these;
- the RBAC manifests in ``deploy/`` grant exactly what this table needs — a test checks every
  call against them with :func:`authorize` (RBAC's rule matching), and that no rule grants more
  than kube-scheduler's own ``system:kube-scheduler`` / ``system:volume-scheduler`` roles plus the
  Lease rule for kubesched's lock.

The calls mirror kube-scheduler v1.30's: list+watch of every informed resource, ``create
pods/binding`` (DefaultBinder), ``patch pods/status`` (PodScheduled condition and
nominatedNodeName), ``delete pods`` (preemption victims), ``create``/``patch`` of
``events.k8s.io`` Events (the events/v1 recorder; patch updates an event series), and
``get``/``create``/``update`` of the leader-election Lease.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Resource:
    """An API resource: group ("" = core), version, plural name, kind, and whether it is namespaced."""

    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return self.version if not self.group else f"{self.group}/{self.version}"

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str = "") -> str:
        """The REST path: ``/api/v1/pods`` (all namespaces), ``/api/v1/namespaces/ns/pods/p/binding``,
        ``/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kubesched``..."""
        root = "/api/v1" if not self.group else f"/apis/{self.group}/{self.version}"
        if self.namespaced and namespace:
            root += f"/namespaces/{namespace}"
        elif not self.namespaced and namespace:
            raise ValueError(f"{self.resource} is not namespaced")
        path = f"{root}/{self.resource}"
        if name:
            path += f"/{name}"
        if subresource:
            if not name:
                raise ValueError("a subresource needs an object name")
            path += f"/{subresource}"
        return path


PODS = Resource("", "v1", "pods", "Pod", True)
NODES = Resource("", "v1", "nodes", "Node", False)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", False)
SERVICES = Resource("", "v1", "services", "Service", True)
REPLICATION_CONTROLLERS = Resource("", "v1", "replicationcontrollers", "ReplicationController", True)
PERSISTENT_VOLUMES = Resource("", "v1", "persistentvolumes", "PersistentVolume", False)
PERSISTENT_VOLUME_CLAIMS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True)
REPLICA_SETS = Resource("apps", "v1", "replicasets", "ReplicaSet", True)
STATEFUL_SETS = Resource("apps", "v1", "statefulsets", "StatefulSet", True)
POD_DISRUPTION_BUDGETS = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True)
STORAGE_CLASSES = Resource("storage.k8s.io", "v1", "storageclasses", "StorageClass", False)
CSI_NODES = Resource("storage.k8s.io", "v1", "csinodes", "CSINode", False)
CSI_DRIVERS = Resource("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False)
EVENTS = Resource("events.k8s.io", "v1", "events", "Event", True)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)

# What the reflectors list and watch, cluster-wide (kube-scheduler's informers for the objects
# kubesched models; it has no CSIStorageCapacity / DRA objects, so it does not watch those).
INFORMED: tuple[Resource, ...] = (
    PODS, NODES, NAMESPACES, PERSISTENT_VOLUMES, PERSISTENT_VOLUME_CLAIMS, STORAGE_CLASSES, CSI_NODES, CSI_DRIVERS,
    SERVICES, REPLICATION_CONTROLLERS, REPLICA_SETS, STATEFUL_SETS, POD_DISRUPTION_BUDGETS,
)

DEFAULT_LEASE_NAMESPACE = "kube-system"
DEFAULT_LEASE_NAME = "kubesched"


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
        return f"{self.resource.resource}/{self.subresource}" if self.subresource else self.resource.resource

    def __str__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        named = f" {self.name!r}" if self.name else ""
        group = self.group or "core"
        return f"{self.verb} {self.rbac_resource}{named} ({group}){where}"


def api_calls(lease_namespace: str = DEFAULT_LEASE_NAMESPACE, lease_name: str = DEFAULT_LEASE_NAME,
              leader_elect: bool = True) -> tuple[ApiCall, ...]:
    """The table for a given leader-election lock (``leaderElection.resourceNamespace`` /
    ``resourceName``)."""
    calls: list[ApiCall] = []
    for r in INFORMED:
        calls.append(ApiCall("list", r, why="reflector: initial list / relist"))
        calls.append(ApiCall("watch", r, why="reflector: watch"))
    calls += [
        ApiCall("create", PODS, "binding", why="DefaultBinder: bind the pod to its node"),
        ApiCall("patch", PODS, "status", why="PodScheduled=False condition and status.nominatedNodeName"),
        ApiCall("delete", PODS, why="preemption: delete the victims"),
        ApiCall("create", EVENTS, why="Scheduled / FailedScheduling / Preempted events"),
        ApiCall("patch", EVENTS, why="event series: a repeated event updates the existing one"),
    ]
    if leader_elect:
        calls += [
            ApiCall("get", LEASES, namespace=lease_namespace, name=lease_name, why="leader election: read the lock"),
            ApiCall("create", LEASES, namespace=lease_namespace, name=lease_name,
                    why="leader election: create the lock when absent"),
            ApiCall("update", LEASES, namespace=lease_namespace, name=lease_name,
                    why="leader election: acquire, renew, release"),
        ]
    return tuple(calls)


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
