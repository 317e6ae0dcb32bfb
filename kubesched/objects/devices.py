"""Dynamic Resource Allocation objects (resource.k8s.io/v1), as the scheduler reads them:
DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate.

Parsed once, validated as the API server would (required fields, exactly one of ``exactly`` /
``firstAvailable``, counts, CEL selectors compiled at load: an invalid expression is an error at
its field path). Attribute and capacity names are qualified (``domain/id``; a bare id belongs
to the slice's driver) and every device carries its :class:`~kubesched.objects.cel.DeviceView`,
built once, which selectors evaluate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kubesched.errors import FieldError
from kubesched.objects.cel import (
    AttributeValue,
    CelCompileError,
    DeviceView,
    SelectorProgram,
    Version,
    compile_selector,
)
from kubesched.objects.model import NodeSelector, ObjectMeta
from kubesched.objects.parse import _bool, _int, _list, _map, _str, parse_meta, parse_node_selector, unique_name
from kubesched.objects.quantity import parse_quantity

ALLOCATION_MODE_EXACT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
# resource.k8s.io/v1 limits.
RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE = 256
FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE = 8
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"


@dataclass(frozen=True, slots=True)
class Selector:
    """One CEL selector (DeviceSelector.cel.expression), compiled."""

    expression: str
    program: SelectorProgram = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class DeviceClass:
    meta: ObjectMeta
    selectors: tuple[Selector, ...] = ()
    extended_resource_name: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.meta.name


@dataclass(frozen=True, slots=True)
class Device:
    name: str
    view: DeviceView
    # Per-device node selection (perDeviceNodeSelection slices).
    node_name: str = ""
    node_selector: NodeSelector | None = None
    all_nodes: bool = False
    allow_multiple_allocations: bool = False


@dataclass(frozen=True, slots=True)
class ResourceSlice:
    meta: ObjectMeta
    driver: str
    pool: str
    generation: int
    slice_count: int
    node_name: str = ""
    node_selector: NodeSelector | None = None
    all_nodes: bool = False
    per_device_node_selection: bool = False
    devices: tuple[Device, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.meta.name


@dataclass(frozen=True, slots=True)
class Request:
    """An ExactDeviceRequest or one of a request's firstAvailable subrequests."""

    name: str
    device_class_name: str
    selectors: tuple[Selector, ...] = ()
    allocation_mode: str = ALLOCATION_MODE_EXACT
    count: int = 1
    admin_access: bool = False


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    name: str
    exactly: Request | None = None
    first_available: tuple[Request, ...] = ()


@dataclass(frozen=True, slots=True)
class Constraint:
    requests: tuple[str, ...] = ()
    match_attribute: str = ""
    distinct_attribute: str = ""


@dataclass(frozen=True, slots=True)
class ClaimSpec:
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[Constraint, ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceResult:
    """DeviceRequestAllocationResult: ``request`` is ``<request>`` or ``<request>/<subrequest>``."""

    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool = False

    def describe(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device} ({self.request})"


@dataclass(frozen=True, slots=True)
class AllocationResult:
    devices: tuple[DeviceResult, ...]
    node_selector: NodeSelector | None = None


@dataclass(frozen=True, slots=True)
class ConsumerRef:
    resource: str
    name: str
    uid: str


@dataclass(frozen=True, slots=True, eq=False)
class ResourceClaim:
    meta: ObjectMeta
    spec: ClaimSpec
    allocation: AllocationResult | None = None
    reserved_for: tuple[ConsumerRef, ...] = ()
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

    @property
    def uid(self) -> str:
        return self.meta.uid or self.key


@dataclass(frozen=True, slots=True)
class ResourceClaimTemplate:
    meta: ObjectMeta
    spec: ClaimSpec
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)


# ---------------------------------------------------------------- parsing
def qualified(name: str, driver: str) -> str:
    """parseQualifiedName: a bare id belongs to the driver's domain."""
    return name if "/" in name else f"{driver}/{name}"


def _selectors(raw: Any, path: str) -> tuple[Selector, ...]:
    out = []
    for i, s in enumerate(_list(raw, path)):
        p = f"{path}[{i}]"
        cel = _map(_map(s, p).get("cel"), f"{p}.cel")
        expr = _str(cel.get("expression"), f"{p}.cel.expression")
        if not expr:
            raise FieldError(f"{p}.cel.expression", "Required value")
        try:
            program = compile_selector(expr)
        except CelCompileError as e:
            raise FieldError(f"{p}.cel.expression", f"Invalid value: {expr!r}: {e.message}") from None
        out.append(Selector(expr, program))
    return tuple(out)


def _request(raw: Any, path: str, name: str) -> Request:
    m = _map(raw, path)
    cls = _str(m.get("deviceClassName"), f"{path}.deviceClassName")
    if not cls:
        raise FieldError(f"{path}.deviceClassName", "Required value")
    mode = _str(m.get("allocationMode"), f"{path}.allocationMode", ALLOCATION_MODE_EXACT)
    if mode not in (ALLOCATION_MODE_EXACT, ALLOCATION_MODE_ALL):
        raise FieldError(f"{path}.allocationMode", f'Unsupported value: "{mode}": supported values: "All", "ExactCount"')
    count = _int(m.get("count"), f"{path}.count", 1 if mode == ALLOCATION_MODE_EXACT else 0)
    if mode == ALLOCATION_MODE_EXACT and count <= 0:
        raise FieldError(f"{path}.count", f"Invalid value: {count}: must be greater than zero")
    return Request(name, cls, _selectors(m.get("selectors"), f"{path}.selectors"), mode, count,
                   _bool(m.get("adminAccess"), f"{path}.adminAccess"))


def parse_claim_spec(raw: Any, path: str) -> ClaimSpec:
    m = _map(raw, path)
    devices = _map(m.get("devices"), f"{path}.devices")
    requests = []
    names: set[str] = set()
    for i, r in enumerate(_list(devices.get("requests"), f"{path}.devices.requests")):
        p = f"{path}.devices.requests[{i}]"
        rm = _map(r, p)
        name = unique_name(rm, p, names)
        has_exact, has_first = rm.get("exactly") is not None, rm.get("firstAvailable") is not None
        if has_exact == has_first:
            raise FieldError(p, "exactly one of `exactly` or `firstAvailable` is required")
        if has_exact:
            requests.append(DeviceRequest(name, exactly=_request(rm.get("exactly"), f"{p}.exactly", name)))
            continue
        subs = []
        for j, sub in enumerate(_list(rm.get("firstAvailable"), f"{p}.firstAvailable")):
            sp = f"{p}.firstAvailable[{j}]"
            sname = _str(_map(sub, sp).get("name"), f"{sp}.name")
            if not sname:
                raise FieldError(f"{sp}.name", "Required value")
            subs.append(_request(sub, sp, sname))
        if not subs or len(subs) > FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE:
            raise FieldError(f"{p}.firstAvailable", f"must have 1 to {FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE} entries")
        requests.append(DeviceRequest(name, first_available=tuple(subs)))
    constraints = []
    for i, c in enumerate(_list(devices.get("constraints"), f"{path}.devices.constraints")):
        p = f"{path}.devices.constraints[{i}]"
        cm = _map(c, p)
        constraints.append(Constraint(
            tuple(_str(r, f"{p}.requests[{j}]") for j, r in enumerate(_list(cm.get("requests"), f"{p}.requests"))),
            _str(cm.get("matchAttribute"), f"{p}.matchAttribute"),
            _str(cm.get("distinctAttribute"), f"{p}.distinctAttribute")))
    return ClaimSpec(tuple(requests), tuple(constraints))


def parse_device_class(raw: Mapping[str, Any]) -> DeviceClass:
    spec = _map(raw.get("spec"), "spec")
    return DeviceClass(parse_meta(raw, namespaced=False), _selectors(spec.get("selectors"), "spec.selectors"),
                       _str(spec.get("extendedResourceName"), "spec.extendedResourceName"), raw)


def _attribute(raw: Any, path: str) -> AttributeValue:
    m = _map(raw, path)
    kinds = [k for k in ("bool", "int", "string", "version") if m.get(k) is not None]
    if len(kinds) != 1:
        raise FieldError(path, "exactly one value must be specified")
    k = kinds[0]
    if k == "bool":
        return _bool(m[k], f"{path}.bool")
    if k == "int":
        return _int(m[k], f"{path}.int")
    if k == "string":
        return _str(m[k], f"{path}.string")
    try:
        return Version(_str(m[k], f"{path}.version"))
    except ValueError as e:
        raise FieldError(f"{path}.version", f"Invalid value: {e}") from None


def _device(raw: Any, path: str, driver: str) -> Device:
    m = _map(raw, path)
    name = _str(m.get("name"), f"{path}.name")
    if not name:
        raise FieldError(f"{path}.name", "Required value")
    attrs = {qualified(k, driver): _attribute(v, f"{path}.attributes[{k}]")
             for k, v in _map(m.get("attributes"), f"{path}.attributes").items()}
    capacity: dict[str, Fraction] = {}
    for k, v in _map(m.get("capacity"), f"{path}.capacity").items():
        cm = _map(v, f"{path}.capacity[{k}]")
        capacity[qualified(k, driver)] = parse_quantity(cm.get("value"), f"{path}.capacity[{k}].value")
    multi = _bool(m.get("allowMultipleAllocations"), f"{path}.allowMultipleAllocations")
    return Device(name, DeviceView(driver, attrs, capacity, multi),
                  _str(m.get("nodeName"), f"{path}.nodeName"),
                  parse_node_selector(m.get("nodeSelector"), f"{path}.nodeSelector"),
                  _bool(m.get("allNodes"), f"{path}.allNodes"), multi)


def parse_resource_slice(raw: Mapping[str, Any]) -> ResourceSlice:
    spec = _map(raw.get("spec"), "spec")
    driver = _str(spec.get("driver"), "spec.driver")
    if not driver:
        raise FieldError("spec.driver", "Required value")
    pool = _map(spec.get("pool"), "spec.pool")
    pool_name = _str(pool.get("name"), "spec.pool.name")
    if not pool_name:
        raise FieldError("spec.pool.name", "Required value")
    node_name = _str(spec.get("nodeName"), "spec.nodeName")
    selector = parse_node_selector(spec.get("nodeSelector"), "spec.nodeSelector")
    all_nodes = _bool(spec.get("allNodes"), "spec.allNodes")
    per_device = _bool(spec.get("perDeviceNodeSelection"), "spec.perDeviceNodeSelection")
    if sum((bool(node_name), selector is not None, all_nodes, per_device)) != 1:
        raise FieldError("spec", "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` "
                                 "is required")
    devices = tuple(_device(d, f"spec.devices[{i}]", driver) for i, d in enumerate(_list(spec.get("devices"),
                                                                                          "spec.devices")))
    return ResourceSlice(parse_meta(raw, namespaced=False), driver, pool_name,
                         _int(pool.get("generation"), "spec.pool.generation", 0),
                         _int(pool.get("resourceSliceCount"), "spec.pool.resourceSliceCount", 1),
                         node_name, selector, all_nodes, per_device, devices, raw)


def _allocation(raw: Any, path: str) -> AllocationResult | None:
    if raw is None:
        return None
    m = _map(raw, path)
    results = []
    for i, r in enumerate(_list(_map(m.get("devices"), f"{path}.devices").get("results"), f"{path}.devices.results")):
        p = f"{path}.devices.results[{i}]"
        rm = _map(r, p)
        results.append(DeviceResult(_str(rm.get("request"), f"{p}.request"), _str(rm.get("driver"), f"{p}.driver"),
                                    _str(rm.get("pool"), f"{p}.pool"), _str(rm.get("device"), f"{p}.device"),
                                    _bool(rm.get("adminAccess"), f"{p}.adminAccess")))
    return AllocationResult(tuple(results), parse_node_selector(m.get("nodeSelector"), f"{path}.nodeSelector"))


def parse_resource_claim(raw: Mapping[str, Any]) -> ResourceClaim:
    status = _map(raw.get("status"), "status")
    reserved = []
    for i, r in enumerate(_list(status.get("reservedFor"), "status.reservedFor")):
        p = f"status.reservedFor[{i}]"
        rm = _map(r, p)
        reserved.append(ConsumerRef(_str(rm.get("resource"), f"{p}.resource"), _str(rm.get("name"), f"{p}.name"),
                                    _str(rm.get("uid"), f"{p}.uid")))
    return ResourceClaim(parse_meta(raw, namespaced=True), parse_claim_spec(raw.get("spec"), "spec"),
                         _allocation(status.get("allocation"), "status.allocation"), tuple(reserved), raw)


def parse_resource_claim_template(raw: Mapping[str, Any]) -> ResourceClaimTemplate:
    spec = _map(raw.get("spec"), "spec")
    return ResourceClaimTemplate(parse_meta(raw, namespaced=True), parse_claim_spec(spec.get("spec"), "spec.spec"), raw)


DRA_API_VERSION = "resource.k8s.io/v1"
DRA_PARSERS: dict[str, Any] = {
    "DeviceClass": parse_device_class,
    "ResourceSlice": parse_resource_slice,
    "ResourceClaim": parse_resource_claim,
    "ResourceClaimTemplate": parse_resource_claim_template,
}


# ---------------------------------------------------------------- the API's view of an allocation
def node_selector_json(selector: NodeSelector) -> dict[str, Any]:
    """A core/v1 NodeSelector as the API writes it (empty lists left out, as omitempty does)."""
    def requirements(reqs: Any) -> list[dict[str, Any]]:
        return [{"key": r.key, "operator": r.operator, **({"values": list(r.values)} if r.values else {})}
                for r in reqs]

    terms = []
    for t in selector.terms:
        term: dict[str, Any] = {}
        if t.match_expressions:
            term["matchExpressions"] = requirements(t.match_expressions)
        if t.match_fields:
            term["matchFields"] = requirements(t.match_fields)
        terms.append(term)
    return {"nodeSelectorTerms": terms}


def _raw_requests(claim: ResourceClaim) -> list[Mapping[str, Any]]:
    devices = (claim.raw.get("spec") or {}).get("devices") or {}
    return [r for r in devices.get("requests") or () if isinstance(r, Mapping)]


def _raw_request(claim: ResourceClaim, qualified_name: str) -> Mapping[str, Any]:
    """The manifest of request ``<request>`` (its ``exactly``) or ``<request>/<subrequest>``."""
    name, _, sub = qualified_name.partition("/")
    for r in _raw_requests(claim):
        if r.get("name") != name:
            continue
        if not sub:
            exactly = r.get("exactly")
            return exactly if isinstance(exactly, Mapping) else {}
        for s in r.get("firstAvailable") or ():
            if isinstance(s, Mapping) and s.get("name") == sub:
                return s
    return {}


def _class_config(cls: DeviceClass | None) -> list[Mapping[str, Any]]:
    if cls is None:
        return []
    return [c for c in (cls.raw.get("spec") or {}).get("config") or () if isinstance(c, Mapping)]


def allocation_json(claim: ResourceClaim, allocation: AllocationResult,
                    classes: Mapping[str, DeviceClass]) -> dict[str, Any]:
    """``status.allocation`` as the structured allocator builds it (Allocator.Allocate's result
    for one claim, allocator_incubating.go): ``devices.results`` (request, driver, pool, device,
    adminAccess, the request's tolerations), ``devices.config`` — every config of the class of
    each allocated (sub)request, once per class with the requests using it (source FromClass),
    then the claim's own configs that apply to its allocated requests (source FromClaim, one
    entry per matching request, as upstream appends them) — and ``nodeSelector``."""
    results: list[dict[str, Any]] = []
    for d in allocation.devices:
        out: dict[str, Any] = {"request": d.request, "driver": d.driver, "pool": d.pool, "device": d.device}
        if d.admin_access:
            out["adminAccess"] = True
        tolerations = _raw_request(claim, d.request).get("tolerations")
        if tolerations:
            out["tolerations"] = [dict(t) for t in tolerations]
        results.append(out)
    allocated = {d.request for d in allocation.devices}
    # The subrequest chosen for each firstAvailable request: the one its results name.
    chosen = {q.partition("/")[0]: q for q in allocated if "/" in q}
    config: list[dict[str, Any]] = []
    class_ranges: dict[str, tuple[int, int]] = {}
    for req in claim.spec.requests:
        if req.exactly is not None:
            qual, class_name = req.name, req.exactly.device_class_name
        else:
            qual = chosen.get(req.name, "")
            sub = next((s for s in req.first_available if f"{req.name}/{s.name}" == qual), None)
            if sub is None:
                continue
            class_name = sub.device_class_name
        cls = classes.get(class_name)
        if cls is None:
            continue
        if class_name in class_ranges:
            start, end = class_ranges[class_name]
            for entry in config[start:end]:
                entry["requests"].append(qual)
            continue
        start = len(config)
        for c in _class_config(cls):
            config.append({"source": "FromClass", "requests": [qual], **{k: v for k, v in c.items()
                                                                         if k != "requests"}})
        class_ranges[class_name] = (start, len(config))
    devices = (claim.raw.get("spec") or {}).get("devices") or {}
    for c in devices.get("config") or ():
        if not isinstance(c, Mapping):
            continue
        wanted = list(c.get("requests") or ())
        entry = {"source": "FromClaim", **({"requests": wanted} if wanted else {}),
                 **{k: v for k, v in c.items() if k != "requests"}}
        if not wanted:
            config.append(entry)
            continue
        for req in claim.spec.requests:
            if req.name in wanted or (req.name in chosen and chosen[req.name] in wanted):
                config.append(dict(entry))
    out_devices: dict[str, Any] = {"results": results}
    if config:
        out_devices["config"] = config
    body: dict[str, Any] = {"devices": out_devices}
    if allocation.node_selector is not None:
        body["nodeSelector"] = node_selector_json(allocation.node_selector)
    return body
