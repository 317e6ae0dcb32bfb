"""Manifest dicts -> typed objects, with the API server's v1 defaulting.

Every parser takes the raw mapping and raises :class:`FieldError` naming the field path
(``spec.containers[0].resources.requests.cpu``); the loader adds file and document.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, TypeVar

import msgspec

from kubesched.errors import FieldError
from kubesched.features import DEFAULT_FEATURES, Features
from kubesched.objects.labels import (
    NODE_SELECTOR_OPERATORS,
    LabelSelector,
    parse_label_selector,
    parse_requirement,
    parse_string_map,
)
from kubesched.objects.model import (
    Affinity,
    Container,
    ContainerImage,
    ContainerPort,
    CSIDriver,
    CSINode,
    CSINodeDriver,
    Namespace,
    Node,
    NodeAffinity,
    NodeCondition,
    NodeSelector,
    NodeSelectorTerm,
    ObjectMeta,
    OwnerReference,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    PodClaimRef,
    PodCondition,
    PodDisruptionBudget,
    PreferredSchedulingTerm,
    PriorityClass,
    Service,
    StorageClass,
    Taint,
    Toleration,
    TopologySelectorTerm,
    TopologySpreadConstraint,
    Volume,
    WeightedPodAffinityTerm,
    Workload,
)
from kubesched.objects.names import dns1123_subdomain_errors, invalid
from kubesched.objects.quantity import parse_quantity, scheduler_units
from kubesched.objects.resources import compute_pod_resources, is_pod_level_resource, pod_requests

Raw = Mapping[str, Any]

# Volume source field names of core/v1 VolumeSource / PersistentVolumeSource.
VOLUME_SOURCES = (
    "persistentVolumeClaim", "ephemeral", "emptyDir", "hostPath", "configMap", "secret", "projected",
    "downwardAPI", "gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi", "azureDisk", "azureFile",
    "csi", "cinder", "nfs", "glusterfs", "cephfs", "fc", "flocker", "flexVolume", "vsphereVolume",
    "quobyte", "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos", "gitRepo", "local",
    "image",
)


# ---------------------------------------------------------------- small readers
# The small readers take a JSON decoder's plain values first: an informer reads every object
# through them, and isinstance against an ABC (Mapping) or a tuple of types costs more than the
# exact-type test that answers for almost every value.
def _map(raw: Any, path: str) -> Raw:
    if type(raw) is dict:
        return raw
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise FieldError(path, f"must be an object, got {type(raw).__name__}")
    return raw


def _list(raw: Any, path: str) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise FieldError(path, f"must be a list, got {type(raw).__name__}")
    return raw


def _str(raw: Any, path: str, default: str = "") -> str:
    if type(raw) is str:
        return raw
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        raise FieldError(path, f"must be a string, got {type(raw).__name__}")
    return str(raw)


def _int(raw: Any, path: str, default: int | None = None) -> int:
    if type(raw) is int:
        return raw
    if raw is None:
        if default is None:
            raise FieldError(path, "Required value")
        return default
    if isinstance(raw, bool) or not isinstance(raw, int):
        if isinstance(raw, str) and raw.lstrip("-").isdigit():
            return int(raw)
        raise FieldError(path, f"must be an integer, got {raw!r}")
    return raw


def _opt_int(raw: Any, path: str) -> int | None:
    return None if raw is None else _int(raw, path)


def _bool(raw: Any, path: str, default: bool = False) -> bool:
    if raw is None:
        return default
    if not isinstance(raw, bool):
        raise FieldError(path, f"must be a boolean, got {raw!r}")
    return raw


_RFC3339 = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})")


# RFC 3339 text -> seconds, for the timestamps seen before: the pods a controller creates in one
# second share their creationTimestamp (1000 pods of a restarted scheduler's first LIST parse
# one). Bounded: emptied when full. Only valid text is kept.
_TIMES: dict[str, float] = {}
_TIMES_SIZE = 4096


def parse_time(raw: Any, path: str) -> float | None:
    """RFC 3339 timestamp -> seconds since the epoch."""
    if raw is None:
        return None
    if type(raw) is str:
        seen = _TIMES.get(raw)
        if seen is not None:
            return seen
    if isinstance(raw, _dt.datetime):  # YAML may already have parsed it
        dt = raw if raw.tzinfo else raw.replace(tzinfo=_dt.UTC)
        return dt.timestamp()
    # metav1.Time.UnmarshalJSON: time.Parse(time.RFC3339, s); fromisoformat alone would also
    # take a bare date, a blank instead of "T" or a missing offset.
    if not isinstance(raw, str) or _RFC3339.fullmatch(raw) is None:
        raise FieldError(path, f"must be an RFC 3339 timestamp, got {raw!r}")
    try:
        dt = _dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise FieldError(path, f"must be an RFC 3339 timestamp, got {raw!r}") from None
    seconds = dt.timestamp()
    if type(raw) is str:
        if len(_TIMES) >= _TIMES_SIZE:
            _TIMES.clear()
        _TIMES[raw] = seconds
    return seconds


def _resource_list(raw: Any, path: str) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for k, v in _map(raw, path).items():
        q = parse_quantity(v, f"{path}.{k}")
        if q < 0:
            raise FieldError(f"{path}.{k}", "must be greater than or equal to 0")
        out[str(k)] = q
    return out


def _units(raw: Any, path: str) -> dict[str, int]:
    return {k: scheduler_units(k, v) for k, v in _resource_list(raw, path).items()}


def _with_path(fn: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    return fn


# ---------------------------------------------------------------- metadata
def parse_meta(raw: Raw, *, namespaced: bool) -> ObjectMeta:
    md = _map(raw.get("metadata"), "metadata")
    name = md.get("name")
    if name is not None and not isinstance(name, str):
        raise FieldError("metadata.name", f"must be a string, got {type(name).__name__}")
    if not name:
        raise FieldError("metadata.name", "Required value: name is required")
    namespace = _str(md.get("namespace"), "metadata.namespace", "default" if namespaced else "")
    if not namespaced:
        namespace = ""
    # Every object of every informer comes through here: what is usually absent, or a plain
    # string, is read without the general path's calls.
    owners = []
    for i, o in enumerate(_list(md.get("ownerReferences"), "metadata.ownerReferences")
                          if md.get("ownerReferences") is not None else ()):
        p = f"metadata.ownerReferences[{i}]"
        o = _map(o, p)
        owners.append(
            OwnerReference(
                api_version=_str(o.get("apiVersion"), f"{p}.apiVersion"),
                kind=_str(o.get("kind"), f"{p}.kind"),
                name=_str(o.get("name"), f"{p}.name"),
                uid=_str(o.get("uid"), f"{p}.uid"),
                controller=_bool(o.get("controller"), f"{p}.controller"),
            )
        )
    uid, rv, labels, annotations = md.get("uid"), md.get("resourceVersion"), md.get("labels"), md.get("annotations")
    deleted = md.get("deletionTimestamp")
    return ObjectMeta(
        name=name,
        namespace=namespace,
        uid=uid if type(uid) is str else _str(uid, "metadata.uid"),
        labels=parse_string_map(labels, "metadata.labels") if labels is not None else {},
        annotations=parse_string_map(annotations, "metadata.annotations") if annotations is not None else {},
        creation_timestamp=parse_time(md.get("creationTimestamp"), "metadata.creationTimestamp"),
        deletion_timestamp=parse_time(deleted, "metadata.deletionTimestamp") if deleted is not None else None,
        owner_references=tuple(owners) if owners else (),
        resource_version=rv if type(rv) is str else _str(rv, "metadata.resourceVersion"),
    )


# ---------------------------------------------------------------- affinity
def parse_node_selector_term(raw: Any, path: str) -> NodeSelectorTerm:
    t = _map(raw, path)
    exprs = tuple(
        parse_requirement(e, f"{path}.matchExpressions[{i}]", NODE_SELECTOR_OPERATORS)
        for i, e in enumerate(_list(t.get("matchExpressions"), f"{path}.matchExpressions"))
    )
    fields = []
    for i, e in enumerate(_list(t.get("matchFields"), f"{path}.matchFields")):
        r = parse_requirement(e, f"{path}.matchFields[{i}]", NODE_SELECTOR_OPERATORS)
        if r.key != "metadata.name":
            raise FieldError(f"{path}.matchFields[{i}].key", f"Invalid value: {r.key!r}: not a valid field selector key")
        if r.operator not in ("In", "NotIn") or len(r.values) != 1:
            raise FieldError(f"{path}.matchFields[{i}].values", "must be only one value when `operator` is 'In' or 'NotIn' for node field selector")
        fields.append(r)
    return NodeSelectorTerm(exprs, tuple(fields))


def parse_node_selector(raw: Any, path: str) -> NodeSelector | None:
    if raw is None:
        return None
    m = _map(raw, path)
    terms = _list(m.get("nodeSelectorTerms"), f"{path}.nodeSelectorTerms")
    return NodeSelector(tuple(parse_node_selector_term(t, f"{path}.nodeSelectorTerms[{i}]") for i, t in enumerate(terms)))


def parse_node_affinity(raw: Any, path: str) -> NodeAffinity | None:
    if raw is None:
        return None
    m = _map(raw, path)
    required = parse_node_selector(
        m.get("requiredDuringSchedulingIgnoredDuringExecution"), f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    )
    preferred = []
    pp = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, t in enumerate(_list(m.get("preferredDuringSchedulingIgnoredDuringExecution"), pp)):
        tm = _map(t, f"{pp}[{i}]")
        w = _int(tm.get("weight"), f"{pp}[{i}].weight")
        if not 0 <= w <= 100:
            raise FieldError(f"{pp}[{i}].weight", "must be in the range 1-100")
        preferred.append(PreferredSchedulingTerm(w, parse_node_selector_term(tm.get("preference"), f"{pp}[{i}].preference")))
    return NodeAffinity(required, tuple(preferred))


def _pod_affinity_term(raw: Any, path: str) -> PodAffinityTerm:
    m = _map(raw, path)
    key = _str(m.get("topologyKey"), f"{path}.topologyKey")
    if not key:
        raise FieldError(f"{path}.topologyKey", "Required value: can not be empty")
    return PodAffinityTerm(
        label_selector=parse_label_selector(m.get("labelSelector"), f"{path}.labelSelector"),
        topology_key=key,
        namespaces=tuple(_str(n, f"{path}.namespaces[{i}]") for i, n in enumerate(_list(m.get("namespaces"), f"{path}.namespaces"))),
        namespace_selector=parse_label_selector(m.get("namespaceSelector"), f"{path}.namespaceSelector"),
        match_label_keys=tuple(_str(n, f"{path}.matchLabelKeys") for n in _list(m.get("matchLabelKeys"), f"{path}.matchLabelKeys")),
        mismatch_label_keys=tuple(
            _str(n, f"{path}.mismatchLabelKeys") for n in _list(m.get("mismatchLabelKeys"), f"{path}.mismatchLabelKeys")
        ),
    )


def _pod_affinity(raw: Any, path: str) -> PodAffinity | None:
    if raw is None:
        return None
    m = _map(raw, path)
    rp = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    pp = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    required = tuple(_pod_affinity_term(t, f"{rp}[{i}]") for i, t in enumerate(_list(m.get("requiredDuringSchedulingIgnoredDuringExecution"), rp)))
    preferred = []
    for i, t in enumerate(_list(m.get("preferredDuringSchedulingIgnoredDuringExecution"), pp)):
        tm = _map(t, f"{pp}[{i}]")
        w = _int(tm.get("weight"), f"{pp}[{i}].weight")
        if not 1 <= w <= 100:
            raise FieldError(f"{pp}[{i}].weight", "must be in the range 1-100")
        preferred.append(WeightedPodAffinityTerm(w, _pod_affinity_term(tm.get("podAffinityTerm"), f"{pp}[{i}].podAffinityTerm")))
    return PodAffinity(required, tuple(preferred))


def parse_affinity(raw: Any, path: str) -> Affinity | None:
    if raw is None:
        return None
    m = _map(raw, path)
    return Affinity(
        node_affinity=parse_node_affinity(m.get("nodeAffinity"), f"{path}.nodeAffinity"),
        pod_affinity=_pod_affinity(m.get("podAffinity"), f"{path}.podAffinity"),
        pod_anti_affinity=_pod_affinity(m.get("podAntiAffinity"), f"{path}.podAntiAffinity"),
    )


def parse_toleration(raw: Any, path: str) -> Toleration:
    m = _map(raw, path)
    op = _str(m.get("operator"), f"{path}.operator", "Equal")
    if op not in ("Equal", "Exists"):
        raise FieldError(f"{path}.operator", f"Unsupported value: {op!r}: supported values: \"Equal\", \"Exists\"")
    effect = _str(m.get("effect"), f"{path}.effect")
    if effect not in ("", "NoSchedule", "PreferNoSchedule", "NoExecute"):
        raise FieldError(f"{path}.effect", f"Unsupported value: {effect!r}")
    value = _str(m.get("value"), f"{path}.value")
    if op == "Exists" and value:
        raise FieldError(f"{path}.operator", "value must be empty when `operator` is 'Exists'")
    return Toleration(
        key=_str(m.get("key"), f"{path}.key"),
        operator=op,
        value=value,
        effect=effect,
        toleration_seconds=_opt_int(m.get("tolerationSeconds"), f"{path}.tolerationSeconds"),
    )


def parse_topology_spread_constraint(raw: Any, path: str) -> TopologySpreadConstraint:
    m = _map(raw, path)
    skew = _int(m.get("maxSkew"), f"{path}.maxSkew")
    if skew <= 0:
        raise FieldError(f"{path}.maxSkew", "must be greater than zero")
    key = _str(m.get("topologyKey"), f"{path}.topologyKey")
    if not key:
        raise FieldError(f"{path}.topologyKey", "Required value: can not be empty")
    when = _str(m.get("whenUnsatisfiable"), f"{path}.whenUnsatisfiable")
    if when not in ("DoNotSchedule", "ScheduleAnyway"):
        raise FieldError(f"{path}.whenUnsatisfiable", f"Unsupported value: {when!r}: supported values: \"DoNotSchedule\", \"ScheduleAnyway\"")
    min_domains = _opt_int(m.get("minDomains"), f"{path}.minDomains")
    if min_domains is not None and min_domains <= 0:
        raise FieldError(f"{path}.minDomains", "must be greater than zero")
    policies = []
    for name in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
        v = m.get(name)
        if v is not None and v not in ("Honor", "Ignore"):
            raise FieldError(f"{path}.{name}", f"Unsupported value: {v!r}: supported values: \"Honor\", \"Ignore\"")
        policies.append(v)
    return TopologySpreadConstraint(
        max_skew=skew,
        topology_key=key,
        when_unsatisfiable=when,
        label_selector=parse_label_selector(m.get("labelSelector"), f"{path}.labelSelector"),
        min_domains=min_domains,
        node_affinity_policy=policies[0],
        node_taints_policy=policies[1],
        match_label_keys=tuple(_str(k, f"{path}.matchLabelKeys") for k in _list(m.get("matchLabelKeys"), f"{path}.matchLabelKeys")),
    )


# ---------------------------------------------------------------- pods
def _container(raw: Any, path: str, *, init: bool) -> Container:
    m = _map(raw, path)
    name = _str(m.get("name"), f"{path}.name")
    if not name:
        raise FieldError(f"{path}.name", "Required value")
    res = _map(m.get("resources"), f"{path}.resources")
    requests = _resource_list(res.get("requests"), f"{path}.resources.requests")
    limits = _resource_list(res.get("limits"), f"{path}.resources.limits")
    # SetDefaults_Container / defaults for resources: a resource with only a limit gets
    # request = limit.
    for k, v in limits.items():
        requests.setdefault(k, v)
    for k, v in requests.items():
        if k in limits and v > limits[k]:
            raise FieldError(f"{path}.resources.requests.{k}", f"Invalid value: must be less than or equal to {k} limit")
    ports = []
    for i, p in enumerate(_list(m.get("ports"), f"{path}.ports")):
        pp = f"{path}.ports[{i}]"
        pm = _map(p, pp)
        proto = _str(pm.get("protocol"), f"{pp}.protocol", "TCP")
        if proto not in ("TCP", "UDP", "SCTP"):
            raise FieldError(f"{pp}.protocol", f"Unsupported value: {proto!r}: supported values: \"SCTP\", \"TCP\", \"UDP\"")
        cp = _int(pm.get("containerPort"), f"{pp}.containerPort")
        hp = _int(pm.get("hostPort"), f"{pp}.hostPort", 0)
        for field_name, port in (("containerPort", cp), ("hostPort", hp)):
            if not 0 <= port <= 65535 or (field_name == "containerPort" and port == 0):
                raise FieldError(f"{pp}.{field_name}", f"Invalid value: {port}: must be between 1 and 65535, inclusive")
        ports.append(ContainerPort(cp, hp, proto, _str(pm.get("hostIP"), f"{pp}.hostIP")))
    restart = m.get("restartPolicy")
    if restart is not None:
        if not init:
            raise FieldError(f"{path}.restartPolicy", "Forbidden: may not be set for non-init containers")
        if restart != "Always":
            raise FieldError(f"{path}.restartPolicy", f"Unsupported value: {restart!r}: supported values: \"Always\"")
    return Container(
        name=name,
        image=_str(m.get("image"), f"{path}.image"),
        requests=requests,
        limits=limits,
        ports=tuple(ports),
        restart_policy=restart,
    )


def parse_volume(raw: Any, path: str) -> Volume:
    m = _map(raw, path)
    name = _str(m.get("name"), f"{path}.name")
    if not name:
        raise FieldError(f"{path}.name", "Required value")
    kinds = [k for k in m if k != "name"]
    if len(kinds) > 1:
        raise FieldError(path, f"may not specify more than 1 volume type, got {', '.join(sorted(kinds))}")
    kind = kinds[0] if kinds else "emptyDir"
    source = _map(m.get(kind), f"{path}.{kind}")
    if kind == "persistentVolumeClaim" and not source.get("claimName"):
        raise FieldError(f"{path}.persistentVolumeClaim.claimName", "Required value")
    return Volume(name=name, kind=kind, source=source)


_RESOURCE_FIELDS = ("containers", "initContainers", "overhead", "resources")


def _same_resources(prev: Pod, spec: Raw) -> bool:
    """Whether ``spec`` has the containers, init containers and overhead ``prev`` was parsed from."""
    old = prev.raw.get("spec")
    return isinstance(old, Mapping) and all(old.get(k) == spec.get(k) for k in _RESOURCE_FIELDS)


# containers, init containers, overhead, requests, non-zero cpu and memory, score requests
_PodResources = tuple[tuple[Container, ...], tuple[Container, ...], dict[str, Fraction] | None,
                      dict[str, int], int, int, dict[str, int]]

_T = TypeVar("_T")
_RESOURCES_CACHE: dict[bytes, _PodResources] = {}
_TOLERATIONS_CACHE: dict[bytes, tuple[Toleration, ...]] = {}
_AFFINITY_CACHE: dict[bytes, Affinity | None] = {}
_CACHE_SIZE = 1024  # entries of each cache (_memo empties a full one)
# What _container reads of a container: the pods of one template share these while their
# containers differ elsewhere (the service account token's volume mount is named per pod).
_CONTAINER_FIELDS = ("name", "image", "resources", "ports", "restartPolicy")


def _containers_key(raw: Any) -> Any:
    """A JSON-decoded container list reduced to what :func:`_container` reads (the resources
    cache's key); anything else as it is (it parses the same, or fails to, either way)."""
    if type(raw) is not list:
        return raw
    out = []
    for c in raw:
        if type(c) is not dict:
            return raw
        out.append([c.get(k) for k in _CONTAINER_FIELDS])
    return out


def _pod_level_requests(spec: Raw, containers: tuple[Container, ...],
                        init: tuple[Container, ...]) -> dict[str, Fraction] | None:
    """spec.resources (PodLevelResources) requests, defaulted as SetDefaults_Pod's
    defaultPodRequests does when pod-level limits are set: a missing cpu/memory request takes
    the containers' aggregate request, then any other missing one the pod-level limit."""
    raw = spec.get("resources")
    if raw is None:
        return None
    res = _map(raw, "spec.resources")
    requests = _resource_list(res.get("requests"), "spec.resources.requests")
    limits = _resource_list(res.get("limits"), "spec.resources.limits")
    if limits:
        for k, v in pod_requests(containers, init, None).items():
            if k in ("cpu", "memory"):
                requests.setdefault(k, v)
        for k, v in limits.items():
            if is_pod_level_resource(k):
                requests.setdefault(k, v)
    for k in requests:
        if not is_pod_level_resource(k):
            raise FieldError(f"spec.resources.requests[{k}]", f"Unsupported value: {k!r}: supported values: "
                             f'"cpu", "hugepages-*", "memory"')
    return requests or None


def _pod_resources(spec: Raw, features: Features) -> _PodResources:
    """The containers, init containers, overhead and what compute_pod_resources derives from them."""
    containers = tuple(_container(c, f"spec.containers[{i}]", init=False) for i, c in enumerate(_list(spec.get("containers"), "spec.containers")))
    if not containers:
        raise FieldError("spec.containers", "Required value")
    init = tuple(_container(c, f"spec.initContainers[{i}]", init=True) for i, c in enumerate(_list(spec.get("initContainers"), "spec.initContainers")))
    overhead = _resource_list(spec.get("overhead"), "spec.overhead") if spec.get("overhead") is not None else None
    # A release without PodLevelResources drops spec.resources on create (an unknown field).
    pod_level = _pod_level_requests(spec, containers, init) if features.enabled("PodLevelResources") else None
    requests, nz_cpu, nz_mem, score = compute_pod_resources(
        containers, init, overhead, pod_level=pod_level, sidecar_non_zero=features.enabled("SidecarAccounting"))
    return containers, init, overhead, requests, nz_cpu, nz_mem, score


def _status_effective_requests(containers: tuple[Container, ...], init: tuple[Container, ...], spec: Raw,
                               status: Raw, features: Features
                               ) -> tuple[dict[str, int], int, int, dict[str, int]] | None:
    """PodRequests with UseStatusResources (InPlacePodVerticalScaling): a container whose
    status reports ``resources`` counts max(spec, actuated, allocated) of its requests
    (determineEffectiveRequests; max(actuated, allocated) while the resize is Infeasible: a
    PodResizePending condition with reason Infeasible), the regular containers and the
    restartable init containers alike; pod-level requests likewise from ``status.resources``
    with InPlacePodLevelResourcesVerticalScaling. None when no status resources apply."""
    infeasible = any(isinstance(c, Mapping) and c.get("type") == "PodResizePending" and c.get("reason") == "Infeasible"
                     for c in status.get("conditions") or ())

    def effective(spec_reqs: Mapping[str, Fraction], actuated: Mapping[str, Fraction],
                  allocated: Mapping[str, Fraction]) -> dict[str, Fraction]:
        out: dict[str, Fraction] = {} if infeasible else dict(spec_reqs)
        for other in (actuated, allocated):
            for k, v in other.items():
                if k not in out or v > out[k]:
                    out[k] = v
        return out

    by_name: dict[str, Raw] = {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for i, cs in enumerate(_list(status.get(key), f"status.{key}")):
            m = _map(cs, f"status.{key}[{i}]")
            if m.get("resources") is not None:
                by_name[_str(m.get("name"), f"status.{key}[{i}].name")] = m
    changed = False

    def apply(c: Container, path: str) -> Container:
        nonlocal changed
        cs = by_name.get(c.name)
        if cs is None:
            return c
        actuated = _resource_list(_map(cs.get("resources"), f"{path}.resources").get("requests"),
                                  f"{path}.resources.requests")
        allocated = _resource_list(cs.get("allocatedResources"), f"{path}.allocatedResources")
        reqs = effective(c.requests, actuated, allocated)
        if reqs == dict(c.requests):
            return c
        changed = True
        return dataclasses.replace(c, requests=reqs)

    eff_containers = tuple(apply(c, f"status.containerStatuses[{c.name}]") for c in containers)
    eff_init = tuple(apply(c, f"status.initContainerStatuses[{c.name}]") if c.is_sidecar else c for c in init)
    pod_level = _pod_level_requests(spec, containers, init) if features.enabled("PodLevelResources") else None
    if pod_level is not None and features.enabled("InPlacePodLevelResourcesVerticalScaling") \
            and status.get("resources") is not None:
        actuated = _resource_list(_map(status.get("resources"), "status.resources").get("requests"),
                                  "status.resources.requests")
        allocated = _resource_list(status.get("allocatedResources"), "status.allocatedResources")
        eff = effective(pod_level, actuated, allocated)
        new_level = {k: eff.get(k, Fraction(0)) for k in pod_level}
        if new_level != dict(pod_level):
            changed = True
            pod_level = new_level
    if not changed:
        return None
    overhead = _resource_list(spec.get("overhead"), "spec.overhead") if spec.get("overhead") is not None else None
    return compute_pod_resources(eff_containers, eff_init, overhead, pod_level=pod_level,
                                 sidecar_non_zero=features.enabled("SidecarAccounting"))


def _memo(cache: dict[bytes, _T], value: Any, make: Callable[[], _T]) -> _T:
    """``make()``, shared by the pods decoded from the API's JSON whose ``value`` serialises
    alike (the pods of one template: a ReplicaSet's, a Job's). Keyed by the JSON, which for
    JSON-decoded values (str keys; str, number, bool, null, list, dict values) tells apart
    whatever parses differently. What is shared is immutable, as what ``prev`` shares between
    a pod's versions. Bounded: emptied when full. Errors are not cached."""
    key = msgspec.json.encode(value)
    hit = cache.get(key)
    if hit is not None:
        return hit
    out = make()
    if len(cache) >= _CACHE_SIZE:
        cache.clear()
    cache[key] = out
    return out


def _tolerations(spec: Raw) -> tuple[Toleration, ...]:
    return tuple(parse_toleration(t, f"spec.tolerations[{i}]") for i, t in enumerate(_list(spec.get("tolerations"), "spec.tolerations")))


def unique_name(m: Raw, path: str, seen: set[str]) -> str:
    """A list entry's required ``name``, unique in its list (``seen`` collects them)."""
    name = _str(m.get("name"), f"{path}.name")
    if not name:
        raise FieldError(f"{path}.name", "Required value")
    if name in seen:
        raise FieldError(f"{path}.name", f'Duplicate value: "{name}"')
    seen.add(name)
    return name


def _pod_claims(spec: Raw) -> tuple[PodClaimRef, ...]:
    """spec.resourceClaims (validation: a DNS label name, unique, exactly one source)."""
    out: list[PodClaimRef] = []
    seen: set[str] = set()
    for i, c in enumerate(_list(spec.get("resourceClaims"), "spec.resourceClaims")):
        path = f"spec.resourceClaims[{i}]"
        m = _map(c, path)
        name = unique_name(m, path, seen)
        claim = _str(m.get("resourceClaimName"), f"{path}.resourceClaimName")
        template = _str(m.get("resourceClaimTemplateName"), f"{path}.resourceClaimTemplateName")
        if bool(claim) == bool(template):
            raise FieldError(path, "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`")
        out.append(PodClaimRef(name, claim, template))
    return tuple(out)


def _pod_claim_statuses(status: Raw) -> dict[str, str]:
    out: dict[str, str] = {}
    for i, c in enumerate(_list(status.get("resourceClaimStatuses"), "status.resourceClaimStatuses")):
        path = f"status.resourceClaimStatuses[{i}]"
        m = _map(c, path)
        out[_str(m.get("name"), f"{path}.name")] = _str(m.get("resourceClaimName"), f"{path}.resourceClaimName")
    return out


def parse_pod_scheduling_group(spec: Mapping[str, Any]) -> str | None:
    """A pod's ``spec.schedulingGroup.podGroupName`` (core/v1 PodSchedulingGroup), validated as
    validateSchedulingGroup does: the one-of must name a PodGroup, a DNS subdomain."""
    raw = spec.get("schedulingGroup")
    if raw is None:
        return None
    path = "spec.schedulingGroup"
    m = _map(raw, path)
    name = m.get("podGroupName")
    if name is None:
        raise invalid(f"{path}.podGroupName", None, "must specify one of: `podGroupName`")
    value = _str(name, f"{path}.podGroupName")
    errs = dns1123_subdomain_errors(value)
    if errs:
        raise invalid(f"{path}.podGroupName", value, errs[0])
    return value


def parse_pod(raw: Raw, prev: Pod | None = None, *, json_decoded: bool = False,
              features: Features | None = None) -> Pod:
    """``prev``: the same pod's previous version, when an informer sees an update. The
    containers and everything derived from them (requests, non-zero requests) are taken from
    it when the raw containers, init containers and overhead are equal to the ones it was
    parsed from (a bind or a status change leaves them alone): the same immutable values,
    without parsing every quantity again. ``json_decoded``: ``raw`` holds only what a JSON
    decoder makes (an informer's object); a new pod then shares them with an earlier pod of
    the same containers, or the same tolerations (:func:`_memo`): ~35 of the ~55 µs a pod of
    the bench's template took to parse, the Fraction arithmetic of its requests mostly.
    ``features``: the release whose API server admitted the pod and whose scheduler accounts
    for it (pod-level resources, sidecars' non-zero requests); default the newest."""
    feats = features if features is not None else DEFAULT_FEATURES
    meta = parse_meta(raw, namespaced=True)
    spec = _map(raw.get("spec"), "spec")
    status = _map(raw.get("status"), "status")
    if prev is not None and _same_resources(prev, spec):
        containers, init, overhead = prev.containers, prev.init_containers, prev.overhead
        requests, nz_cpu, nz_mem = prev.requests, prev.non_zero_cpu, prev.non_zero_memory
        score = prev.score_requests
    elif json_decoded:
        containers, init, overhead, requests, nz_cpu, nz_mem, score = _memo(
            _RESOURCES_CACHE, [str(feats.version), _containers_key(spec.get("containers")),
                               _containers_key(spec.get("initContainers")), spec.get("overhead"), spec.get("resources")],
            lambda: _pod_resources(spec, feats))
    else:
        containers, init, overhead, requests, nz_cpu, nz_mem, score = _pod_resources(spec, feats)
    if feats.enabled("InPlacePodVerticalScaling") and (status.get("containerStatuses") or status.get(
            "initContainerStatuses") or status.get("resources")):
        effective = _status_effective_requests(containers, init, spec, status, feats)
        if effective is not None:
            requests, nz_cpu, nz_mem, score = effective
    node_selector = parse_string_map(spec.get("nodeSelector"), "spec.nodeSelector") if spec.get("nodeSelector") is not None else None
    gates = []
    for i, g in enumerate(_list(spec.get("schedulingGates"), "spec.schedulingGates")):
        gates.append(_str(_map(g, f"spec.schedulingGates[{i}]").get("name"), f"spec.schedulingGates[{i}].name"))
    # Lists a pod usually lacks are read only when there (each empty read made a generator).
    conditions = tuple(
        PodCondition(
            type=_str(_map(c, f"status.conditions[{i}]").get("type"), f"status.conditions[{i}].type"),
            status=_str(c.get("status"), f"status.conditions[{i}].status"),
            reason=_str(c.get("reason"), f"status.conditions[{i}].reason"),
            message=_str(c.get("message"), f"status.conditions[{i}].message"),
        )
        # _map first: a null entry must read as {} for every field, not only "type".
        for i, c in ((i, _map(c, f"status.conditions[{i}]")) for i, c in enumerate(_list(status.get("conditions"), "status.conditions")))
    ) if status.get("conditions") is not None else ()
    policy = _str(spec.get("preemptionPolicy"), "spec.preemptionPolicy", "")
    if policy not in ("", "Never", "PreemptLowerPriority"):
        raise FieldError("spec.preemptionPolicy", f"Unsupported value: {policy!r}: supported values: \"Never\", \"PreemptLowerPriority\"")
    priority = spec.get("priority")
    return Pod(
        meta=meta,
        containers=containers,
        init_containers=init,
        overhead=overhead,
        node_name=_str(spec.get("nodeName"), "spec.nodeName"),
        scheduler_name=_str(spec.get("schedulerName"), "spec.schedulerName", "") or "default-scheduler",
        priority=_int(priority, "spec.priority", 0),
        priority_class_name=_str(spec.get("priorityClassName"), "spec.priorityClassName"),
        preemption_policy=policy or "PreemptLowerPriority",
        node_selector=node_selector,
        affinity=(_memo(_AFFINITY_CACHE, spec.get("affinity"), lambda: parse_affinity(spec.get("affinity"), "spec.affinity"))
                  if json_decoded and spec.get("affinity") else parse_affinity(spec.get("affinity"), "spec.affinity")),
        tolerations=_memo(_TOLERATIONS_CACHE, spec.get("tolerations"), lambda: _tolerations(spec)) if json_decoded and spec.get("tolerations") else _tolerations(spec),
        topology_spread_constraints=tuple(
            parse_topology_spread_constraint(t, f"spec.topologySpreadConstraints[{i}]")
            for i, t in enumerate(_list(spec.get("topologySpreadConstraints"), "spec.topologySpreadConstraints"))
        ) if spec.get("topologySpreadConstraints") is not None else (),
        volumes=tuple(parse_volume(v, f"spec.volumes[{i}]") for i, v in enumerate(_list(spec.get("volumes"), "spec.volumes")))
        if spec.get("volumes") is not None else (),
        scheduling_gates=tuple(gates),
        termination_grace_period_seconds=_int(spec.get("terminationGracePeriodSeconds"), "spec.terminationGracePeriodSeconds", 30),
        phase=_str(status.get("phase"), "status.phase", "Pending"),
        nominated_node_name=_str(status.get("nominatedNodeName"), "status.nominatedNodeName"),
        start_time=parse_time(status.get("startTime"), "status.startTime"),
        conditions=conditions,
        requests=requests,
        non_zero_cpu=nz_cpu,
        non_zero_memory=nz_mem,
        score_requests=score,
        raw=raw,
        sidecar_ports=tuple(c for c in init if c.is_sidecar and c.ports) if init and feats.enabled("SidecarAccounting") else (),
        # The API server of a release without resource.k8s.io/v1 DRA drops the fields.
        resource_claims=(_pod_claims(spec) if spec.get("resourceClaims") is not None
                         and feats.enabled("DynamicResourceAllocation") else ()),
        resource_claim_statuses=(_pod_claim_statuses(status) if status.get("resourceClaimStatuses") is not None
                                 and feats.enabled("DynamicResourceAllocation") else {}),
        # dropDisabledSchedulingGroup: the API server drops the field without GenericWorkload.
        scheduling_group=parse_pod_scheduling_group(spec) if feats.enabled("GenericWorkload") else None,
    )


# ---------------------------------------------------------------- nodes
def parse_taint(raw: Any, path: str) -> Taint:
    m = _map(raw, path)
    key = _str(m.get("key"), f"{path}.key")
    if not key:
        raise FieldError(f"{path}.key", "Required value")
    effect = _str(m.get("effect"), f"{path}.effect")
    if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
        raise FieldError(f"{path}.effect", f"Unsupported value: {effect!r}: supported values: \"NoExecute\", \"NoSchedule\", \"PreferNoSchedule\"")
    return Taint(key, _str(m.get("value"), f"{path}.value"), effect)


def _node_units(status: Raw) -> tuple[dict[str, int], dict[str, int]]:
    capacity = _units(status.get("capacity"), "status.capacity")
    # SetDefaults_NodeStatus: allocatable defaults to capacity.
    allocatable = _units(status.get("allocatable"), "status.allocatable") if status.get("allocatable") is not None else dict(capacity)
    return capacity, allocatable


_NODE_UNITS_CACHE: dict[bytes, tuple[dict[str, int], dict[str, int]]] = {}


def parse_node(raw: Raw, *, json_decoded: bool = False) -> Node:
    """``json_decoded``: ``raw`` holds only what a JSON decoder makes (an informer's object); its
    capacity and allocatable are then shared with an earlier node of the same ones (the nodes of
    one machine type: their quantities parsed once, :func:`_memo`)."""
    meta = parse_meta(raw, namespaced=False)
    spec = _map(raw.get("spec"), "spec")
    status = _map(raw.get("status"), "status")
    if json_decoded:
        capacity, allocatable = _memo(_NODE_UNITS_CACHE, [status.get("capacity"), status.get("allocatable")],
                                      lambda: _node_units(status))
    else:
        capacity, allocatable = _node_units(status)
    images = []
    for i, im in enumerate(_list(status.get("images"), "status.images")):
        p = f"status.images[{i}]"
        imm = _map(im, p)
        names = tuple(_str(n, f"{p}.names") for n in _list(imm.get("names"), f"{p}.names"))
        images.append(ContainerImage(names, _int(imm.get("sizeBytes"), f"{p}.sizeBytes", 0)))
    conditions = tuple(
        NodeCondition(_str(_map(c, f"status.conditions[{i}]").get("type"), f"status.conditions[{i}].type"), _str(c.get("status"), f"status.conditions[{i}].status"))
        for i, c in ((i, _map(c, f"status.conditions[{i}]")) for i, c in enumerate(_list(status.get("conditions"), "status.conditions")))
    )
    return Node(
        meta=meta,
        unschedulable=_bool(spec.get("unschedulable"), "spec.unschedulable"),
        taints=tuple(parse_taint(t, f"spec.taints[{i}]") for i, t in enumerate(_list(spec.get("taints"), "spec.taints"))),
        capacity=capacity,
        allocatable=allocatable,
        images=tuple(images),
        conditions=conditions,
        raw=raw,
    )


# ---------------------------------------------------------------- storage
def parse_pv(raw: Raw) -> PersistentVolume:
    meta = parse_meta(raw, namespaced=False)
    spec = _map(raw.get("spec"), "spec")
    status = _map(raw.get("status"), "status")
    kinds = [k for k in spec if k in VOLUME_SOURCES]
    kind = kinds[0] if kinds else ""
    claim = spec.get("claimRef")
    claim_ref = None
    if claim is not None:
        c = _map(claim, "spec.claimRef")
        claim_ref = (_str(c.get("namespace"), "spec.claimRef.namespace", "default"), _str(c.get("name"), "spec.claimRef.name"))
    na = _map(spec.get("nodeAffinity"), "spec.nodeAffinity")
    return PersistentVolume(
        meta=meta,
        capacity=_units(spec.get("capacity"), "spec.capacity"),
        access_modes=tuple(_str(a, "spec.accessModes") for a in _list(spec.get("accessModes"), "spec.accessModes")),
        storage_class_name=_str(spec.get("storageClassName"), "spec.storageClassName"),
        node_affinity=parse_node_selector(na.get("required"), "spec.nodeAffinity.required"),
        claim_ref=claim_ref,
        kind=kind,
        source=_map(spec.get(kind), f"spec.{kind}") if kind else {},
        volume_mode=_str(spec.get("volumeMode"), "spec.volumeMode", "Filesystem"),
        phase=_str(status.get("phase"), "status.phase", "Pending"),
        raw=raw,
    )


def parse_pvc(raw: Raw) -> PersistentVolumeClaim:
    meta = parse_meta(raw, namespaced=True)
    spec = _map(raw.get("spec"), "spec")
    status = _map(raw.get("status"), "status")
    res = _map(spec.get("resources"), "spec.resources")
    req = _units(res.get("requests"), "spec.resources.requests")
    scn = spec.get("storageClassName")
    return PersistentVolumeClaim(
        meta=meta,
        access_modes=tuple(_str(a, "spec.accessModes") for a in _list(spec.get("accessModes"), "spec.accessModes")),
        storage_class_name=None if scn is None else _str(scn, "spec.storageClassName"),
        volume_name=_str(spec.get("volumeName"), "spec.volumeName"),
        requested_storage=req.get("storage", 0),
        selector=parse_label_selector(spec.get("selector"), "spec.selector"),
        volume_mode=_str(spec.get("volumeMode"), "spec.volumeMode", "Filesystem"),
        phase=_str(status.get("phase"), "status.phase", "Pending"),
        raw=raw,
    )


def parse_storage_class(raw: Raw) -> StorageClass:
    meta = parse_meta(raw, namespaced=False)
    mode = raw.get("volumeBindingMode")
    if mode is None:
        mode = "Immediate"  # SetDefaults_StorageClass
    if mode not in ("Immediate", "WaitForFirstConsumer"):
        raise FieldError("volumeBindingMode", f"Unsupported value: {mode!r}: supported values: \"Immediate\", \"WaitForFirstConsumer\"")
    terms = []
    for i, t in enumerate(_list(raw.get("allowedTopologies"), "allowedTopologies")):
        p = f"allowedTopologies[{i}]"
        exprs = []
        for j, e in enumerate(_list(_map(t, p).get("matchLabelExpressions"), f"{p}.matchLabelExpressions")):
            em = _map(e, f"{p}.matchLabelExpressions[{j}]")
            exprs.append((_str(em.get("key"), f"{p}.matchLabelExpressions[{j}].key"), tuple(str(v) for v in _list(em.get("values"), f"{p}.matchLabelExpressions[{j}].values"))))
        terms.append(TopologySelectorTerm(tuple(exprs)))
    provisioner = _str(raw.get("provisioner"), "provisioner")
    if not provisioner:
        raise FieldError("provisioner", "Required value")
    return StorageClass(
        meta=meta,
        provisioner=provisioner,
        volume_binding_mode=mode,
        allowed_topologies=tuple(terms),
        parameters=parse_string_map(raw.get("parameters"), "parameters"),
        raw=raw,
    )


def parse_csinode(raw: Raw) -> CSINode:
    meta = parse_meta(raw, namespaced=False)
    spec = _map(raw.get("spec"), "spec")
    drivers = []
    for i, d in enumerate(_list(spec.get("drivers"), "spec.drivers")):
        p = f"spec.drivers[{i}]"
        dm = _map(d, p)
        alloc = _map(dm.get("allocatable"), f"{p}.allocatable")
        drivers.append(
            CSINodeDriver(
                name=_str(dm.get("name"), f"{p}.name"),
                node_id=_str(dm.get("nodeID"), f"{p}.nodeID"),
                allocatable_count=_opt_int(alloc.get("count"), f"{p}.allocatable.count"),
                topology_keys=tuple(_str(k, f"{p}.topologyKeys") for k in _list(dm.get("topologyKeys"), f"{p}.topologyKeys")),
            )
        )
    return CSINode(meta=meta, drivers=tuple(drivers), raw=raw)


def parse_csidriver(raw: Raw) -> CSIDriver:
    meta = parse_meta(raw, namespaced=False)
    spec = _map(raw.get("spec"), "spec")
    return CSIDriver(
        meta=meta,
        attach_required=_bool(spec.get("attachRequired"), "spec.attachRequired", True),
        storage_capacity=_bool(spec.get("storageCapacity"), "spec.storageCapacity", False),
        raw=raw,
    )


# ---------------------------------------------------------------- policy & workloads
def parse_priority_class(raw: Raw) -> PriorityClass:
    meta = parse_meta(raw, namespaced=False)
    policy = _str(raw.get("preemptionPolicy"), "preemptionPolicy", "PreemptLowerPriority")
    if policy not in ("Never", "PreemptLowerPriority"):
        raise FieldError("preemptionPolicy", f"Unsupported value: {policy!r}: supported values: \"Never\", \"PreemptLowerPriority\"")
    return PriorityClass(
        meta=meta,
        value=_int(raw.get("value"), "value"),
        global_default=_bool(raw.get("globalDefault"), "globalDefault"),
        preemption_policy=policy,
        raw=raw,
    )


def parse_pdb(raw: Raw) -> PodDisruptionBudget:
    meta = parse_meta(raw, namespaced=True)
    spec = _map(raw.get("spec"), "spec")
    status = _map(raw.get("status"), "status")
    disrupted = _map(status.get("disruptedPods"), "status.disruptedPods")
    return PodDisruptionBudget(
        meta=meta,
        selector=parse_label_selector(spec.get("selector"), "spec.selector"),
        disruptions_allowed=_int(status.get("disruptionsAllowed"), "status.disruptionsAllowed", 0),
        disrupted_pods=frozenset(str(k) for k in disrupted),
        raw=raw,
    )


def parse_service(raw: Raw) -> Service:
    meta = parse_meta(raw, namespaced=True)
    spec = _map(raw.get("spec"), "spec")
    return Service(meta=meta, selector=parse_string_map(spec.get("selector"), "spec.selector"), raw=raw)


def parse_workload(raw: Raw) -> Workload:
    kind = str(raw.get("kind"))
    meta = parse_meta(raw, namespaced=True)
    spec = _map(raw.get("spec"), "spec")
    selector: LabelSelector | None
    if kind == "ReplicationController":
        sel = parse_string_map(spec.get("selector"), "spec.selector")
        if not sel:
            # SetDefaults_ReplicationController: selector defaults to the template labels.
            tmpl = _map(_map(spec.get("template"), "spec.template").get("metadata"), "spec.template.metadata")
            sel = parse_string_map(tmpl.get("labels"), "spec.template.metadata.labels")
        selector = LabelSelector(sel) if sel else None
    else:
        selector = parse_label_selector(spec.get("selector"), "spec.selector")
    return Workload(kind=kind, meta=meta, selector=selector, raw=raw)


def parse_namespace(raw: Raw) -> Namespace:
    meta = parse_meta(raw, namespaced=False)
    labels = dict(meta.labels)
    labels["kubernetes.io/metadata.name"] = meta.name
    return Namespace(meta=ObjectMeta(**{**{f: getattr(meta, f) for f in meta.__dataclass_fields__}, "labels": labels}), raw=raw)


# kind -> (apiVersions accepted, parser)
PARSERS: dict[str, tuple[tuple[str, ...], Callable[[Raw], Any]]] = {
    "Pod": (("v1",), parse_pod),
    "Node": (("v1",), parse_node),
    "PersistentVolume": (("v1",), parse_pv),
    "PersistentVolumeClaim": (("v1",), parse_pvc),
    "Service": (("v1",), parse_service),
    "ReplicationController": (("v1",), parse_workload),
    "ReplicaSet": (("apps/v1",), parse_workload),
    "StatefulSet": (("apps/v1",), parse_workload),
    # Controllers whose pods the loader synthesizes when the input lacks them (objects.workloads).
    "Deployment": (("apps/v1",), parse_workload),
    "DaemonSet": (("apps/v1",), parse_workload),
    "Job": (("batch/v1",), parse_workload),
    "StorageClass": (("storage.k8s.io/v1", "storage.k8s.io/v1beta1"), parse_storage_class),
    "CSINode": (("storage.k8s.io/v1", "storage.k8s.io/v1beta1"), parse_csinode),
    "CSIDriver": (("storage.k8s.io/v1", "storage.k8s.io/v1beta1"), parse_csidriver),
    "PriorityClass": (("scheduling.k8s.io/v1", "scheduling.k8s.io/v1beta1"), parse_priority_class),
    "PodDisruptionBudget": (("policy/v1", "policy/v1beta1"), parse_pdb),
    "Namespace": (("v1",), parse_namespace),
}
