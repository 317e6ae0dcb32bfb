"""The workload API of scheduling.k8s.io/v1alpha2 (k8s.io/api/scheduling/v1alpha2/types.go):
PodGroup, the runtime group of pods a pod names in ``spec.schedulingGroup.podGroupName``, and
Workload, the templates PodGroups are made from.

Served by the 1.36 API server only with the GenericWorkload gate (alpha, off): the loader reads
these kinds only then (kubesched.objects.manifests). Each object is validated as the API server
would on create (pkg/apis/scheduling/v1alpha2/zz_generated.validations.go, the declarative
validation, and validation.go's ValidatePodGroup / ValidateWorkload for the metadata); fields
whose gates kubesched does not know (schedulingConstraints: TopologyAwareWorkloadScheduling;
resourceClaims: DRAWorkloadResourceClaims; disruptionMode, priorityClassName, priority:
WorkloadAwarePreemption) are dropped as the registry strategy's dropDisabledPodGroupFields does
with those gates off.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.errors import FieldError
from kubesched.objects.model import ObjectMeta
from kubesched.objects.names import dns1123_label_errors, dns1123_subdomain_errors, invalid, shown
from kubesched.objects.parse import parse_meta

SCHEDULING_API_VERSION = "scheduling.k8s.io/v1alpha2"
POD_GROUP = "PodGroup"
WORKLOAD = "Workload"
# WorkloadMaxPodGroupTemplates.
MAX_POD_GROUP_TEMPLATES = 8


# ---------------------------------------------------------------- types
@dataclass(frozen=True, slots=True)
class GangSchedulingPolicy:
    """GangSchedulingPolicy: all-or-nothing, at least ``min_count`` pods at once."""

    min_count: int


@dataclass(frozen=True, slots=True)
class PodGroupSchedulingPolicy:
    """PodGroupSchedulingPolicy, a union: exactly one of Basic (``basic``) and ``gang``."""

    basic: bool = False
    gang: GangSchedulingPolicy | None = None


@dataclass(frozen=True, slots=True)
class PodGroupTemplateReference:
    """PodGroupTemplateReference.Workload (its only member): the Workload and the template in
    it the PodGroup was made from."""

    workload_name: str
    pod_group_template_name: str


@dataclass(frozen=True, slots=True, eq=False)
class PodGroup:
    """scheduling.k8s.io/v1alpha2 PodGroup (its spec; the status is the scheduler's output)."""

    meta: ObjectMeta
    scheduling_policy: PodGroupSchedulingPolicy
    template_ref: PodGroupTemplateReference | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def namespace(self) -> str:
        return self.meta.namespace

    @property
    def key(self) -> str:
        return f"{self.meta.namespace}/{self.meta.name}"


@dataclass(frozen=True, slots=True)
class PodGroupTemplate:
    """scheduling.k8s.io PodGroupTemplate of a Workload: a group's name and policy."""

    name: str
    scheduling_policy: PodGroupSchedulingPolicy


@dataclass(frozen=True, slots=True)
class TypedLocalObjectReference:
    """core/v1 TypedLocalObjectReference (a Workload's controllerRef)."""

    api_group: str
    kind: str
    name: str


@dataclass(frozen=True, slots=True, eq=False)
class SchedulingWorkload:
    """scheduling.k8s.io/v1alpha2 Workload (named apart from kubesched.objects.Workload, the
    apps/batch controllers)."""

    meta: ObjectMeta
    pod_group_templates: tuple[PodGroupTemplate, ...]
    controller_ref: TypedLocalObjectReference | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def namespace(self) -> str:
        return self.meta.namespace

    def template(self, name: str) -> PodGroupTemplate | None:
        return next((t for t in self.pod_group_templates if t.name == name), None)


# ---------------------------------------------------------------- validation helpers
def _long_name(value: str, path: str) -> None:
    errs = dns1123_subdomain_errors(value)
    if errs:
        raise invalid(path, value, errs[0])


def _short_name(value: str, path: str) -> None:
    errs = dns1123_label_errors(value)
    if errs:
        raise invalid(path, value, errs[0])


def _path_segment_name(value: str, path: str) -> None:
    """path.IsValidPathSegmentName (format=k8s-path-segment-name)."""
    if value in (".", ".."):
        raise invalid(path, value, f"may not be '{value}'")
    for bad in ("/", "%"):
        if bad in value:
            raise invalid(path, value, f"may not contain '{bad}'")


def _map(raw: Any, path: str) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise FieldError(path, f"must be an object, got {type(raw).__name__}")
    return raw


def _str(raw: Any, path: str) -> str:
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise FieldError(path, f"must be a string, got {type(raw).__name__}")
    return raw


def _int32(raw: Any, path: str) -> int:
    if raw is None:
        return 0
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise FieldError(path, f"must be an integer, got {raw!r}")
    if not -(2**31) <= raw < 2**31:
        raise FieldError(path, f"must be a 32-bit integer, got {raw}")
    return raw


def _required_str(raw: Mapping[str, Any], key: str, path: str) -> str:
    value = _str(raw.get(key), f"{path}.{key}")
    if not value:
        raise FieldError(f"{path}.{key}", "Required value")
    return value


# ---------------------------------------------------------------- parsing
def parse_scheduling_policy(raw: Any, path: str) -> PodGroupSchedulingPolicy:
    """Validate_PodGroupSchedulingPolicy: the basic/gang union, then Validate_GangSchedulingPolicy
    (minCount required, at least 1)."""
    m = _map(raw, path)
    basic, gang = m.get("basic") is not None, m.get("gang") is not None
    if basic and gang:
        raise invalid(path, "{basic, gang}", "must specify exactly one of: basic, gang")
    if not basic and not gang:
        raise invalid(path, "", "must specify one of: basic, gang")
    if basic:
        _map(m.get("basic"), f"{path}.basic")
        return PodGroupSchedulingPolicy(basic=True)
    g = _map(m.get("gang"), f"{path}.gang")
    min_count = _int32(g.get("minCount"), f"{path}.gang.minCount")
    if min_count == 0:
        raise FieldError(f"{path}.gang.minCount", "Required value")
    if min_count < 1:
        raise invalid(f"{path}.gang.minCount", min_count, "must be greater than or equal to 1")
    return PodGroupSchedulingPolicy(gang=GangSchedulingPolicy(min_count))


def _template_ref(raw: Any, path: str) -> PodGroupTemplateReference | None:
    """Validate_PodGroupTemplateReference: a union of one member (workload), then
    Validate_WorkloadPodGroupTemplateReference."""
    if raw is None:
        return None
    m = _map(raw, path)
    if m.get("workload") is None:
        raise invalid(path, "", "must specify one of: workload")
    w = _map(m.get("workload"), f"{path}.workload")
    wpath = f"{path}.workload"
    workload = _required_str(w, "workloadName", wpath)
    _long_name(workload, f"{wpath}.workloadName")
    template = _required_str(w, "podGroupTemplateName", wpath)
    _short_name(template, f"{wpath}.podGroupTemplateName")
    return PodGroupTemplateReference(workload, template)


def _meta(raw: Mapping[str, Any]) -> ObjectMeta:
    meta = parse_meta(raw, namespaced=True)
    _long_name(meta.name, "metadata.name")  # ValidatePodGroupName / validateWorkloadName
    return meta


def parse_pod_group(raw: Mapping[str, Any]) -> PodGroup:
    """A PodGroup as the API server admits it (ValidatePodGroup + Validate_PodGroupSpec)."""
    meta = _meta(raw)
    spec = _map(raw.get("spec"), "spec")
    ref = _template_ref(spec.get("podGroupTemplateRef"), "spec.podGroupTemplateRef")
    policy = parse_scheduling_policy(spec.get("schedulingPolicy"), "spec.schedulingPolicy")
    return PodGroup(meta, policy, ref, raw)


def parse_scheduling_workload(raw: Mapping[str, Any]) -> SchedulingWorkload:
    """A Workload as the API server admits it (ValidateWorkload + Validate_WorkloadSpec)."""
    meta = _meta(raw)
    spec = _map(raw.get("spec"), "spec")
    controller: TypedLocalObjectReference | None = None
    if spec.get("controllerRef") is not None:
        path = "spec.controllerRef"
        c = _map(spec.get("controllerRef"), path)
        api_group = _str(c.get("apiGroup"), f"{path}.apiGroup")
        if api_group:
            _long_name(api_group, f"{path}.apiGroup")
        kind = _required_str(c, "kind", path)
        _path_segment_name(kind, f"{path}.kind")
        name = _required_str(c, "name", path)
        _path_segment_name(name, f"{path}.name")
        controller = TypedLocalObjectReference(api_group, kind, name)
    path = "spec.podGroupTemplates"
    items = spec.get("podGroupTemplates")
    if items is not None and not isinstance(items, list):
        raise FieldError(path, f"must be a list, got {type(items).__name__}")
    items = items or []
    if len(items) > MAX_POD_GROUP_TEMPLATES:
        raise FieldError(path, f"Too many: {len(items)}: must have at most {MAX_POD_GROUP_TEMPLATES} items")
    if not items:
        raise FieldError(path, "Required value")
    templates: list[PodGroupTemplate] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        p = f"{path}[{i}]"
        t = _map(item, p)
        name = _required_str(t, "name", p)
        _short_name(name, f"{p}.name")
        if name in seen:
            # listType=map, listMapKey=name: validate.Unique.
            raise FieldError(f"{p}.name", f"Duplicate value: {shown(name)}")
        seen.add(name)
        templates.append(PodGroupTemplate(name, parse_scheduling_policy(t.get("schedulingPolicy"),
                                                                         f"{p}.schedulingPolicy")))
    return SchedulingWorkload(meta, tuple(templates), controller, raw)


# kind -> (apiVersions, parser), served with GenericWorkload (kubesched.objects.manifests).
POD_GROUP_PARSERS: dict[str, tuple[tuple[str, ...], Any]] = {
    POD_GROUP: ((SCHEDULING_API_VERSION,), parse_pod_group),
    WORKLOAD: ((SCHEDULING_API_VERSION,), parse_scheduling_workload),
}
