"""Dynamic Resource Allocation objects (resource.k8s.io/v1), as the scheduler reads them:
DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate.

Parsed once, validated as the API server would (required fields, exactly one of ``exactly`` /
``firstAvailable``, counts, CEL selectors compiled at load: an invalid expression is an error at
its field path). Attribute and capacity names are qualified (``domain/id``; a bare id belongs
to the slice's driver) and every device carries its :class:`~kubesched.objects.cel.DeviceView`,
built once, which selectors evaluate.

The 1.36 beta fields are read and validated as the API server does
(pkg/apis/resource/validation/validation.go): a slice's ``sharedCounters`` and its devices'
``consumesCounters`` (DRAPartitionableDevices), ``allowMultipleAllocations`` with capacity
``requestPolicy`` and requests' ``capacity.requests`` (DRAConsumableCapacity), device ``taints``
and requests' ``tolerations`` (DRADeviceTaints), ``bindsToNode`` / ``bindingConditions`` /
``bindingFailureConditions`` and a claim's ``status.devices`` conditions
(DRADeviceBindingConditions), a class's ``extendedResourceName`` (DRAExtendedResource), and the
allocation result's ``shareID`` / ``consumedCapacity`` / binding conditions. Capacity names stay
as written in :attr:`Device.capacity` (the allocator matches a request's ``capacity.requests``
against them literally, consumable_capacity.go) and are qualified in the CEL view.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from kubesched.errors import FieldError
from kubesched.objects.model import NodeSelector, ObjectMeta
from kubesched.objects.parse import (
    _bool,
    _int,
    _list,
    _map,
    _str,
    parse_meta,
    parse_node_selector,
    parse_time,
    unique_name,
)
from kubesched.objects.quantity import base_value, parse_quantity
from kubesched.objects.resources import is_extended_resource_name

if TYPE_CHECKING:
    from kubesched.objects.cel import AttributeValue, DeviceView, SelectorProgram

# kubesched.objects.cel (the CEL compiler and interpreter, ~5 ms to import) is imported by the
# functions that parse a device or a selector: a cluster without DRA objects (every informer's
# objects go through this module) never needs it, and a restarted `kubesched run` starts sooner.

ALLOCATION_MODE_EXACT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
# resource.k8s.io/v1 limits.
RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE = 256
FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE = 8
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
# The claim the scheduler creates for a pod's extended resources backed by DRA (DRAExtendedResource).
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
# Every class's implicit extended resource name is this prefix + its name.
RESOURCE_DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
TAINT_EFFECT_NO_SCHEDULE = "NoSchedule"
TAINT_EFFECT_NO_EXECUTE = "NoExecute"
TAINT_EFFECT_NONE = "None"
_TAINT_EFFECTS = (TAINT_EFFECT_NO_EXECUTE, TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_NONE)
# resource.k8s.io/v1 limits of the beta fields.
RESOURCE_SLICE_MAX_COUNTER_SETS = 8
RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET = 32
RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE = 2
DEVICE_TAINTS_MAX_LENGTH = 16
BINDING_CONDITIONS_MAX_SIZE = 4
CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS = 10
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_QUALIFIED_NAME = re.compile(r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                             r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


@dataclass(frozen=True, slots=True)
class Selector:
    """One CEL selector (DeviceSelector.cel.expression), compiled."""

    expression: str
    program: SelectorProgram = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class DeviceClass:
    """resource.k8s.io/v1 DeviceClass: its selectors, compiled, and the extended resource it backs."""

    meta: ObjectMeta
    selectors: tuple[Selector, ...] = ()
    extended_resource_name: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.meta.name


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    """resource.k8s.io DeviceTaint of a device."""

    key: str
    value: str = ""
    effect: str = TAINT_EFFECT_NO_SCHEDULE


@dataclass(frozen=True, slots=True)
class DeviceToleration:
    """resource.k8s.io DeviceToleration of a device request."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    def tolerates(self, taint: DeviceTaint) -> bool:
        """resourceclaim.ToleratesTaint: an empty effect or key matches any."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == "Exists"


@dataclass(frozen=True, slots=True)
class CapacityRequestPolicy:
    """DeviceCapacity.requestPolicy: a default, and either valid values (ascending) or a range."""

    default: Fraction | None = None
    valid_values: tuple[Fraction, ...] = ()
    range_min: Fraction | None = None
    range_max: Fraction | None = None
    range_step: Fraction | None = None

    @property
    def has_range(self) -> bool:
        return self.range_min is not None


@dataclass(frozen=True, slots=True)
class DeviceCapacity:
    """resource.k8s.io DeviceCapacity: a capacity's value and how it may be shared."""

    value: Fraction
    request_policy: CapacityRequestPolicy | None = None


@dataclass(frozen=True, slots=True)
class CounterConsumption:
    """A device's consumesCounters entry: counters taken from one of the pool's counter sets."""

    counter_set: str
    counters: Mapping[str, Fraction]


@dataclass(frozen=True, slots=True)
class CounterSet:
    """A slice's sharedCounters entry."""

    name: str
    counters: Mapping[str, Fraction]


@dataclass(frozen=True, slots=True)
class Device:
    """resource.k8s.io/v1 Device of a ResourceSlice, with the view CEL selectors read."""

    name: str
    view: DeviceView
    # Per-device node selection (perDeviceNodeSelection slices).
    node_name: str = ""
    node_selector: NodeSelector | None = None
    all_nodes: bool = False
    allow_multiple_allocations: bool = False
    # Capacity names as written (the CEL view qualifies them).
    capacity: Mapping[str, DeviceCapacity] = field(default_factory=dict, compare=False)
    consumes_counters: tuple[CounterConsumption, ...] = ()
    taints: tuple[DeviceTaint, ...] = ()
    binds_to_node: bool = False
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ResourceSlice:
    """resource.k8s.io/v1 ResourceSlice: one driver's devices of a pool, on a node or nodes."""

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
    shared_counters: tuple[CounterSet, ...] = ()

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
    tolerations: tuple[DeviceToleration, ...] = ()
    # capacity.requests (names as written); None when ``capacity`` is unset.
    capacity_requests: Mapping[str, Fraction] | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """resource.k8s.io/v1 DeviceRequest: exactly one request, or the first available of several."""

    name: str
    exactly: Request | None = None
    first_available: tuple[Request, ...] = ()


@dataclass(frozen=True, slots=True)
class Constraint:
    """resource.k8s.io/v1 DeviceConstraint: matchAttribute or distinctAttribute over requests."""

    requests: tuple[str, ...] = ()
    match_attribute: str = ""
    distinct_attribute: str = ""


@dataclass(frozen=True, slots=True)
class ClaimSpec:
    """resource.k8s.io/v1 ResourceClaimSpec: device requests and constraints."""

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
    tolerations: tuple[DeviceToleration, ...] = ()
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    # Consumable capacity: the share of a device allowing multiple allocations.
    share_id: str = ""
    consumed_capacity: Mapping[str, Fraction] | None = field(default=None, compare=False)

    def describe(self) -> str:
        where = f"{self.driver}/{self.pool}/{self.device}"
        if self.share_id:
            where += f"/{self.share_id}"
        return f"{where} ({self.request})"


@dataclass(frozen=True, slots=True)
class AllocationResult:
    """resource.k8s.io/v1 AllocationResult: the devices allocated and where they are usable."""

    devices: tuple[DeviceResult, ...]
    node_selector: NodeSelector | None = None
    # Set by PreBind when binding conditions are in use (DRADeviceBindingConditions).
    allocation_timestamp: float | None = None


@dataclass(frozen=True, slots=True)
class DeviceCondition:
    """metav1.Condition of an allocated device's status (binding conditions)."""

    type: str
    status: str
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True)
class AllocatedDeviceStatus:
    """A claim's status.devices entry (written by the driver): its conditions."""

    driver: str
    pool: str
    device: str
    share_id: str = ""
    conditions: tuple[DeviceCondition, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerRef:
    """resource.k8s.io/v1 ResourceClaimConsumerReference (status.reservedFor)."""

    resource: str
    name: str
    uid: str


@dataclass(frozen=True, slots=True, eq=False)
class ResourceClaim:
    """resource.k8s.io/v1 ResourceClaim: its spec, allocation and consumers."""

    meta: ObjectMeta
    spec: ClaimSpec
    allocation: AllocationResult | None = None
    reserved_for: tuple[ConsumerRef, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)
    device_statuses: tuple[AllocatedDeviceStatus, ...] = ()

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
    """resource.k8s.io/v1 ResourceClaimTemplate: the spec of the claims made from it."""

    meta: ObjectMeta
    spec: ClaimSpec
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)


# ---------------------------------------------------------------- parsing
def _invalid(path: str, value: object, detail: str) -> FieldError:
    shown = f'"{value}"' if isinstance(value, str) else str(value)
    return FieldError(path, f"Invalid value: {shown}: {detail}")


def _dns_label(value: str, path: str) -> None:
    """validation.IsDNS1123Label."""
    if not value:
        raise FieldError(path, "Required value")
    if len(value) > 63 or _DNS_LABEL.fullmatch(value) is None:
        raise _invalid(path, value, "a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                                    "or '-', and must start and end with an alphanumeric character")


def _label_key(value: str, path: str) -> None:
    """validation.IsQualifiedName (a label key: an optional DNS subdomain prefix and a name)."""
    name = value.rsplit("/", 1)[-1]
    if _QUALIFIED_NAME.fullmatch(value) is None or len(name) > 63 or len(value) - len(name) > 254:
        raise _invalid(path, value, "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
                                    "start and end with an alphanumeric character")


def _label_value(value: str, path: str) -> None:
    if len(value) > 63 or _LABEL_VALUE.fullmatch(value) is None:
        raise _invalid(path, value, "a valid label must be an empty string or consist of alphanumeric characters, "
                                    "'-', '_' or '.', and must start and end with an alphanumeric character")


def _strings(raw: Any, path: str) -> tuple[str, ...]:
    return tuple(_str(v, f"{path}[{i}]") for i, v in enumerate(_list(raw, path)))


def _too_many(path: str, items: list[Any], limit: int) -> None:
    if len(items) > limit:
        raise FieldError(path, f"Too many: {len(items)}: must have at most {limit} items")


def _tolerations(raw: Any, path: str) -> tuple[DeviceToleration, ...]:
    """validateDeviceToleration, after defaulting ``operator`` to Equal."""
    out = []
    for i, t in enumerate(_list(raw, path)):
        p = f"{path}[{i}]"
        m = _map(t, p)
        key = _str(m.get("key"), f"{p}.key")
        if key:
            _label_key(key, f"{p}.key")
        operator = _str(m.get("operator"), f"{p}.operator") or "Equal"
        value = _str(m.get("value"), f"{p}.value")
        if operator == "Exists":
            if value:
                raise _invalid(f"{p}.value", value, "must be empty for operator `Exists`")
        elif operator == "Equal":
            _label_value(value, f"{p}.value")
        else:
            raise FieldError(f"{p}.operator", f'Unsupported value: "{operator}": supported values: "Equal", "Exists"')
        effect = _str(m.get("effect"), f"{p}.effect")
        if effect and effect not in _TAINT_EFFECTS:
            raise FieldError(f"{p}.effect", f'Unsupported value: "{effect}": supported values: "NoExecute", '
                                            '"NoSchedule", "None"')
        seconds = m.get("tolerationSeconds")
        out.append(DeviceToleration(key, operator, value, effect,
                                    None if seconds is None else _int(seconds, f"{p}.tolerationSeconds")))
    return tuple(out)


def _device_taint(raw: Any, path: str) -> DeviceTaint:
    """validateDeviceTaint."""
    m = _map(raw, path)
    key = _str(m.get("key"), f"{path}.key")
    if not key:
        raise FieldError(f"{path}.key", "Required value")
    _label_key(key, f"{path}.key")
    value = _str(m.get("value"), f"{path}.value")
    if value:
        _label_value(value, f"{path}.value")
    effect = _str(m.get("effect"), f"{path}.effect")
    if not effect:
        raise FieldError(f"{path}.effect", "Required value")
    if effect not in _TAINT_EFFECTS:
        raise FieldError(f"{path}.effect", f'Unsupported value: "{effect}": supported values: "NoExecute", '
                                           '"NoSchedule", "None"')
    return DeviceTaint(key, value, effect)


def _counters(raw: Any, path: str) -> dict[str, Fraction]:
    """A counter set's (or a consumption's) counters: DNS labels, at most 32, at least one."""
    m = _map(raw, path)
    if not m:
        raise FieldError(path, "Required value")
    if len(m) > RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET:
        raise FieldError(path, f"Too many: {len(m)}: must have at most {RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET} "
                               "items")
    out = {}
    for k, v in m.items():
        name = str(k)
        _dns_label(name, path)
        out[name] = parse_quantity(_map(v, f"{path}[{name}]").get("value"), f"{path}[{name}].value")
    return out


def _go_mod(a: int, b: int) -> int:
    """Go's % (truncated toward zero)."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _request_policy(raw: Any, value: Fraction, path: str) -> CapacityRequestPolicy:
    """validateRequestPolicy: exactly one of validValues / validRange, a default valid for it,
    every option within the capacity's value."""
    m = _map(raw, path)
    default = None if m.get("default") is None else parse_quantity(m.get("default"), f"{path}.default")
    vv_raw = _list(m.get("validValues"), f"{path}.validValues")
    valid_values = tuple(parse_quantity(v, f"{path}.validValues[{i}]") for i, v in enumerate(vv_raw))
    if m.get("validRange") is not None:
        rp = f"{path}.validRange"
        r = _map(m.get("validRange"), rp)
        if valid_values:
            raise FieldError(path, 'Forbidden: exactly one policy can be specified, cannot specify "validValues" and '
                                   '"validRange" at the same time')
        if default is None:
            raise FieldError(f"{path}.default", "Required value: required when validRange is defined")
        if r.get("min") is None:
            raise FieldError(f"{rp}.min", "Required value: required when validRange is defined")
        lo = parse_quantity(r.get("min"), f"{rp}.min")
        hi = None if r.get("max") is None else parse_quantity(r.get("max"), f"{rp}.max")
        step = None if r.get("step") is None else parse_quantity(r.get("step"), f"{rp}.step")
        if lo > value:
            raise _invalid(f"{rp}.min", str(r.get("min")), "min is larger than capacity value")
        if default < lo:
            raise _invalid(f"{rp}.min", str(m.get("default")), f"default is less than min: {r.get('min')}")
        if hi is not None:
            if lo > hi:
                raise _invalid(f"{rp}.max", str(r.get("min")), f"min is larger than max: {r.get('max')}")
            if hi > value:
                raise _invalid(f"{rp}.max", str(r.get("max")), "max is larger than capacity value")
            if default > hi:
                raise _invalid(f"{rp}.max", str(m.get("default")), f"default is more than max: {r.get('max')}")
        if step is not None:
            if step <= 0:
                raise _invalid(f"{rp}.step", str(r.get("step")), "must be greater than zero")
            if lo + step > value:
                raise _invalid(f"{rp}.step", str(r.get("step")), "one step is larger than capacity value")
            for checked, text in ((default, m.get("default")), (hi, r.get("max"))):
                if checked is not None and _go_mod(base_value(checked) - base_value(lo), base_value(step)) != 0:
                    raise _invalid(f"{rp}.step", str(text), f"value is not a multiple of a given step "
                                                            f"({r.get('step')}) from ({r.get('min')})")
        return CapacityRequestPolicy(default, (), lo, hi, step)
    if valid_values:
        vp = f"{path}.validValues"
        if default is None:
            raise FieldError(f"{path}.default", "Required value: required when validValues is defined")
        _too_many(vp, vv_raw, CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS)
        for i in range(1, len(valid_values)):
            if valid_values[i - 1] >= valid_values[i]:
                raise _invalid(f"{vp}[{i}]", str(vv_raw[i]), "values must be sorted in ascending order")
        for i, option in enumerate(valid_values):
            if option > value:
                raise _invalid(f"{vp}[{i}]", str(vv_raw[i]), "option is larger than capacity value")
        if default not in valid_values:
            raise _invalid(vp, str(m.get("default")), "default value is not valid according to the requestPolicy")
    return CapacityRequestPolicy(default, valid_values)


def _binding_parameters(conds: tuple[str, ...], failures: tuple[str, ...], path: str) -> None:
    """validateDeviceBindingParameters: both lists or neither, at most 4 each, no overlap."""
    for what, items in (("bindingConditions", conds), ("bindingFailureConditions", failures)):
        _too_many(f"{path}.{what}", list(items), BINDING_CONDITIONS_MAX_SIZE)
        for i, c in enumerate(items):
            _label_key(c, f"{path}.{what}[{i}]")
    for i, c in enumerate(failures):
        if c in conds:
            raise _invalid(f"{path}.bindingFailureConditions[{i}]", c,
                           "bindingFailureConditions must not overlap with bindingConditions")
    if failures and not conds:
        raise FieldError(f"{path}.bindingConditions", "Invalid value: null: bindingConditions are required to use "
                                                     "bindingFailureConditions")
    if conds and not failures:
        raise FieldError(f"{path}.bindingFailureConditions", "Invalid value: null: bindingFailureConditions are "
                                                            "required to use bindingConditions")


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
        from kubesched.objects.cel import CelCompileError, compile_selector

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
    capacity = None
    if m.get("capacity") is not None:
        cm = _map(m.get("capacity"), f"{path}.capacity")
        rp = f"{path}.capacity.requests"
        capacity = {str(k): parse_quantity(v, f"{rp}[{k}]") for k, v in _map(cm.get("requests"), rp).items()}
        for k in capacity:
            _label_key(k, rp)
    return Request(name, cls, _selectors(m.get("selectors"), f"{path}.selectors"), mode, count,
                   _bool(m.get("adminAccess"), f"{path}.adminAccess"),
                   _tolerations(m.get("tolerations"), f"{path}.tolerations"), capacity)


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
    ext = _str(spec.get("extendedResourceName"), "spec.extendedResourceName")
    if spec.get("extendedResourceName") is not None and not is_extended_resource_name(ext):
        # validateDeviceClassSpec: v1helper.IsExtendedResourceName.
        raise _invalid("spec.extendedResourceName", ext, "must be a valid extended resource name")
    return DeviceClass(parse_meta(raw, namespaced=False), _selectors(spec.get("selectors"), "spec.selectors"),
                       ext, raw)


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
    from kubesched.objects.cel import Version

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
    multi = _bool(m.get("allowMultipleAllocations"), f"{path}.allowMultipleAllocations")
    capacity: dict[str, DeviceCapacity] = {}
    for k, v in _map(m.get("capacity"), f"{path}.capacity").items():
        cp = f"{path}.capacity[{k}]"
        cm = _map(v, cp)
        value = parse_quantity(cm.get("value"), f"{cp}.value")
        policy = None
        if cm.get("requestPolicy") is not None:
            if not multi:
                raise FieldError(f"{cp}.requestPolicy", "Forbidden: allowMultipleAllocations must be true")
            policy = _request_policy(cm.get("requestPolicy"), value, f"{cp}.requestPolicy")
        capacity[str(k)] = DeviceCapacity(value, policy)
    taints_raw = _list(m.get("taints"), f"{path}.taints")
    _too_many(f"{path}.taints", taints_raw, DEVICE_TAINTS_MAX_LENGTH)
    taints = tuple(_device_taint(t, f"{path}.taints[{i}]") for i, t in enumerate(taints_raw))
    cc_raw = _list(m.get("consumesCounters"), f"{path}.consumesCounters")
    _too_many(f"{path}.consumesCounters", cc_raw, RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE)
    consumes: list[CounterConsumption] = []
    for i, c in enumerate(cc_raw):
        cp = f"{path}.consumesCounters[{i}]"
        cm = _map(c, cp)
        counter_set = _str(cm.get("counterSet"), f"{cp}.counterSet")
        _dns_label(counter_set, f"{cp}.counterSet")
        if any(o.counter_set == counter_set for o in consumes):
            raise FieldError(f"{cp}.counterSet", f'Duplicate value: "{counter_set}"')
        consumes.append(CounterConsumption(counter_set, _counters(cm.get("counters"), f"{cp}.counters")))
    conds = _strings(m.get("bindingConditions"), f"{path}.bindingConditions")
    failures = _strings(m.get("bindingFailureConditions"), f"{path}.bindingFailureConditions")
    _binding_parameters(conds, failures, path)
    from kubesched.objects.cel import DeviceView

    view = DeviceView(driver, attrs, {qualified(k, driver): c.value for k, c in capacity.items()}, multi)
    return Device(name, view,
                  _str(m.get("nodeName"), f"{path}.nodeName"),
                  parse_node_selector(m.get("nodeSelector"), f"{path}.nodeSelector"),
                  _bool(m.get("allNodes"), f"{path}.allNodes"), multi, capacity, tuple(consumes), taints,
                  _bool(m.get("bindsToNode"), f"{path}.bindsToNode"), conds, failures)


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
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        raise FieldError("spec", 'Invalid value: "": only one of `sharedCounters` or `devices` is allowed')
    devices = tuple(_device(d, f"spec.devices[{i}]", driver) for i, d in enumerate(_list(spec.get("devices"),
                                                                                          "spec.devices")))
    seen: set[str] = set()
    for i, d in enumerate(devices):
        if d.name in seen:
            raise FieldError(f"spec.devices[{i}].name", f'Duplicate value: "{d.name}"')
        seen.add(d.name)
    counters_raw = _list(spec.get("sharedCounters"), "spec.sharedCounters")
    _too_many("spec.sharedCounters", counters_raw, RESOURCE_SLICE_MAX_COUNTER_SETS)
    counter_sets: list[CounterSet] = []
    for i, c in enumerate(counters_raw):
        cp = f"spec.sharedCounters[{i}]"
        cm = _map(c, cp)
        name = _str(cm.get("name"), f"{cp}.name")
        _dns_label(name, f"{cp}.name")
        if any(o.name == name for o in counter_sets):
            raise FieldError(f"{cp}.name", f'Duplicate value: "{name}"')
        counter_sets.append(CounterSet(name, _counters(cm.get("counters"), f"{cp}.counters")))
    return ResourceSlice(parse_meta(raw, namespaced=False), driver, pool_name,
                         _int(pool.get("generation"), "spec.pool.generation", 0),
                         _int(pool.get("resourceSliceCount"), "spec.pool.resourceSliceCount", 1),
                         node_name, selector, all_nodes, per_device, devices, raw, tuple(counter_sets))


def _allocation(raw: Any, path: str) -> AllocationResult | None:
    if raw is None:
        return None
    m = _map(raw, path)
    results = []
    for i, r in enumerate(_list(_map(m.get("devices"), f"{path}.devices").get("results"), f"{path}.devices.results")):
        p = f"{path}.devices.results[{i}]"
        rm = _map(r, p)
        consumed = rm.get("consumedCapacity")
        results.append(DeviceResult(
            _str(rm.get("request"), f"{p}.request"), _str(rm.get("driver"), f"{p}.driver"),
            _str(rm.get("pool"), f"{p}.pool"), _str(rm.get("device"), f"{p}.device"),
            _bool(rm.get("adminAccess"), f"{p}.adminAccess"), _tolerations(rm.get("tolerations"), f"{p}.tolerations"),
            _strings(rm.get("bindingConditions"), f"{p}.bindingConditions"),
            _strings(rm.get("bindingFailureConditions"), f"{p}.bindingFailureConditions"),
            _str(rm.get("shareID"), f"{p}.shareID"),
            None if consumed is None else {str(k): parse_quantity(v, f"{p}.consumedCapacity[{k}]")
                                           for k, v in _map(consumed, f"{p}.consumedCapacity").items()}))
    return AllocationResult(tuple(results), parse_node_selector(m.get("nodeSelector"), f"{path}.nodeSelector"),
                            parse_time(m.get("allocationTimestamp"), f"{path}.allocationTimestamp"))


def _device_statuses(raw: Any, path: str) -> tuple[AllocatedDeviceStatus, ...]:
    """status.devices: what drivers report per allocated device (only the conditions matter here)."""
    out = []
    for i, d in enumerate(_list(raw, path)):
        p = f"{path}[{i}]"
        dm = _map(d, p)
        conds = []
        for j, c in enumerate(_list(dm.get("conditions"), f"{p}.conditions")):
            cp = f"{p}.conditions[{j}]"
            cm = _map(c, cp)
            conds.append(DeviceCondition(_str(cm.get("type"), f"{cp}.type"), _str(cm.get("status"), f"{cp}.status"),
                                         _str(cm.get("reason"), f"{cp}.reason"),
                                         _str(cm.get("message"), f"{cp}.message")))
        out.append(AllocatedDeviceStatus(_str(dm.get("driver"), f"{p}.driver"), _str(dm.get("pool"), f"{p}.pool"),
                                         _str(dm.get("device"), f"{p}.device"), _str(dm.get("shareID"), f"{p}.shareID"),
                                         tuple(conds)))
    return tuple(out)


def parse_resource_claim(raw: Mapping[str, Any]) -> ResourceClaim:
    status = _map(raw.get("status"), "status")
    reserved = []
    for i, r in enumerate(_list(status.get("reservedFor"), "status.reservedFor")):
        p = f"status.reservedFor[{i}]"
        rm = _map(r, p)
        reserved.append(ConsumerRef(_str(rm.get("resource"), f"{p}.resource"), _str(rm.get("name"), f"{p}.name"),
                                    _str(rm.get("uid"), f"{p}.uid")))
    return ResourceClaim(parse_meta(raw, namespaced=True), parse_claim_spec(raw.get("spec"), "spec"),
                         _allocation(status.get("allocation"), "status.allocation"), tuple(reserved), raw,
                         _device_statuses(status.get("devices"), "status.devices"))


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


# ---------------------------------------------------------------- extended resources (DRAExtendedResource)
def is_dra_extended_resource_name(name: str) -> bool:
    """schedutil.IsDRAExtendedResourceName: an extended resource name, or a class's implicit one."""
    return is_extended_resource_name(name) or name.startswith(RESOURCE_DEVICE_CLASS_PREFIX)


def extended_resource_classes(classes: Mapping[str, DeviceClass]) -> dict[str, DeviceClass]:
    """The DeviceClassResolver (extendedresourcecache.ExtendedResourceCache) over the current
    classes: every class under ``deviceclass.resource.kubernetes.io/<name>``, and under its
    ``extendedResourceName`` the newest class naming it (equal creation times: the smaller
    name). Computed from the set of classes, not from the order their events arrived."""
    out: dict[str, DeviceClass] = {}
    explicit: dict[str, DeviceClass] = {}
    for cls in classes.values():
        out[RESOURCE_DEVICE_CLASS_PREFIX + cls.name] = cls
        name = cls.extended_resource_name
        if not name:
            continue
        have = explicit.get(name)
        if have is None or _newer(cls, have):
            explicit[name] = cls
    out.update(explicit)
    return out


def _newer(a: DeviceClass, b: DeviceClass) -> bool:
    ta, tb = a.meta.creation_timestamp or 0.0, b.meta.creation_timestamp or 0.0
    return ta > tb or (ta == tb and a.name < b.name)
