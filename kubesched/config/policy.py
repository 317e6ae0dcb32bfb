"""The legacy scheduler Policy (``kind: Policy``, removed in v1.23) translated to the equivalent
KubeSchedulerConfiguration, the way kube-scheduler v1.21/v1.22 did it.

Mirrors ``pkg/scheduler/factory.go: createFromPolicy, dedupPluginConfigs, defaultPluginConfigArgs``,
``pkg/scheduler/framework/plugins/legacy_registry.go`` (NewLegacyRegistry, AppendPredicateConfigs,
AppendPriorityConfigs, ProcessPredicatePolicy, ProcessPriorityPolicy, appendToPluginSet) and
``pkg/scheduler/apis/config/validation/validation.go: ValidatePolicy`` (facts section 9).

The result is one ``default-scheduler`` profile whose plugins are exactly the translated ones: the
v1.30 MultiPoint defaults are disabled (``multiPoint: {disabled: [{name: "*"}]}``) and every plugin
is enabled at the extension points the legacy producers named, in their order, with their weights.
Printed with :func:`kubesched.config.printer.dump_config` it reloads to the same configuration (except
RequestedToCapacityRatio args without resources, which a v1 file defaults to cpu and memory; a note
says so).

Behaviour choices (deliberate, all documented here):

- Gate ``DefaultPodTopologySpread`` is treated as ON (its v1.21/v1.22 default): SelectorSpreadPriority
  becomes PodTopologySpread with ``defaultingType: System``. ``default_pod_topology_spread=False``
  gives the gate-off translation (the legacy SelectorSpread plugin, PodTopologySpread args ``List``).
- ``appendToPluginSet`` keeps the weight of the *first* producer that adds a plugin. Its source says
  "keep the max weight", but it updates the loop's copy of the entry, so the max never reaches the
  list; kube-scheduler therefore kept the first weight. Only PodTopologySpread is ever added twice
  at Score (EvenPodsSpreadPriority runs before SelectorSpreadPriority, by sorted name), so it gets
  EvenPodsSpreadPriority's weight.
- NoDiskConflict also enables VolumeRestrictions at PreFilter. v1.21's plugin had no PreFilter, but
  v1.30's Filter reads the state its PreFilter writes and fails every pod without it. No other
  translated v1.30 plugin depends on a point the legacy producers leave out.
- The Policy is decoded strictly (unknown or duplicated fields are errors), case-sensitively except
  inside ``extenders`` (their Go type was decoded by encoding/json: ``BindVerb``, ``Insecure`` are
  accepted). Extender ``httpTimeout`` is a Go time.Duration: integer nanoseconds.
- Errors name the Policy field (``priorities[2].argument.labelPreference.label: ...``). Where Go
  printed a struct with a pointer address (``numArgs`` errors) the policy entry's name is printed.
- Cases where kube-scheduler panicked or failed only when building the plugin (a plain ``NodeLabel``,
  ``ServiceAffinity`` or ``RequestedToCapacityRatio`` priority without the arguments it needs, a weight
  that does not fit the plugin's int32 weight, invalid RequestedToCapacityRatio or NodeLabel args) are
  reported here as ConfigError.
- ``alwaysCheckAllPredicates`` has no KubeSchedulerConfiguration equivalent (v1.30 always stops at
  the first failing filter); it is accepted and reported as a note. RequestedToCapacityRatio resources
  are kept as written (not defaulted, as upstream: an empty list scores every node 0).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from kubesched.config import _field as f
from kubesched.config.args import (
    LIST_DEFAULTING,
    SYSTEM_DEFAULTING,
    InterPodAffinityArgs,
    NodeLabelArgs,
    PodTopologySpreadArgs,
    RequestedToCapacityRatioArgs,
    ResourceSpec,
    ServiceAffinityArgs,
    UtilizationShapePoint,
)
from kubesched.config.defaults import default_plugin_config
from kubesched.config.loader import (
    _bool,
    _extender_tls,
    _int,
    _json_type,
    _list,
    _load_yaml,
    _managed_resources,
    _obj,
    _resource_specs,
    _shape,
    _str,
    _strings,
    located,
    read_text,
)
from kubesched.config.types import (
    DEFAULT_EXTENDER_TIMEOUT_SECONDS,
    DEFAULT_SCHEDULER_NAME,
    EXTENSION_POINTS,
    Extender,
    KubeSchedulerConfiguration,
    PluginRef,
    Plugins,
    PluginSet,
    Profile,
)
from kubesched.config.validation import configuration_errors, extender_errors, plugin_args_errors, raise_errors
from kubesched.errors import ConfigError, FieldError
from kubesched.features import FEATURES_1_30

POLICY_KIND = "Policy"
POLICY_API_VERSION = "v1"

# config.MaxWeight (v1.21 apis/config/types.go): MaxTotalScore / MaxCustomPriorityScore.
MAX_WEIGHT = (2**63 - 1) // 10
MAX_INT32 = 2**31 - 1

# ---------------------------------------------------------------- names (legacy_registry.go)
EQUAL_PRIORITY = "EqualPriority"
MOST_REQUESTED_PRIORITY = "MostRequestedPriority"
REQUESTED_TO_CAPACITY_RATIO_PRIORITY = "RequestedToCapacityRatioPriority"  # a name only, not a key
SELECTOR_SPREAD_PRIORITY = "SelectorSpreadPriority"
SERVICE_SPREADING_PRIORITY = "ServiceSpreadingPriority"
INTER_POD_AFFINITY_PRIORITY = "InterPodAffinityPriority"
LEAST_REQUESTED_PRIORITY = "LeastRequestedPriority"
BALANCED_RESOURCE_ALLOCATION = "BalancedResourceAllocation"
NODE_PREFER_AVOID_PODS_PRIORITY = "NodePreferAvoidPodsPriority"
NODE_AFFINITY_PRIORITY = "NodeAffinityPriority"
TAINT_TOLERATION_PRIORITY = "TaintTolerationPriority"
IMAGE_LOCALITY_PRIORITY = "ImageLocalityPriority"
EVEN_PODS_SPREAD_PRIORITY = "EvenPodsSpreadPriority"

MATCH_INTER_POD_AFFINITY = "MatchInterPodAffinity"
CHECK_VOLUME_BINDING = "CheckVolumeBinding"
GENERAL_PREDICATES = "GeneralPredicates"
HOST_NAME = "HostName"
POD_FITS_HOST_PORTS = "PodFitsHostPorts"
POD_FITS_PORTS = "PodFitsPorts"  # alias of PodFitsHostPorts
MATCH_NODE_SELECTOR = "MatchNodeSelector"
POD_FITS_RESOURCES = "PodFitsResources"
NO_DISK_CONFLICT = "NoDiskConflict"
POD_TOLERATES_NODE_TAINTS = "PodToleratesNodeTaints"
CHECK_NODE_UNSCHEDULABLE = "CheckNodeUnschedulable"
CHECK_NODE_LABEL_PRESENCE = "CheckNodeLabelPresence"
CHECK_SERVICE_AFFINITY = "CheckServiceAffinity"
MAX_EBS_VOLUME_COUNT = "MaxEBSVolumeCount"
MAX_GCE_PD_VOLUME_COUNT = "MaxGCEPDVolumeCount"
MAX_AZURE_DISK_VOLUME_COUNT = "MaxAzureDiskVolumeCount"
MAX_CINDER_VOLUME_COUNT = "MaxCinderVolumeCount"
MAX_CSI_VOLUME_COUNT = "MaxCSIVolumeCountPred"
NO_VOLUME_ZONE_CONFLICT = "NoVolumeZoneConflict"
EVEN_PODS_SPREAD = "EvenPodsSpread"

# Plugin names (v1.30 where the plugin still exists, else the legacy plugin's name).
NODE_LABEL = "NodeLabel"
SERVICE_AFFINITY = "ServiceAffinity"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
SELECTOR_SPREAD = "SelectorSpread"
INTER_POD_AFFINITY = "InterPodAffinity"

# predicateOrdering: the order the predicates ran in, so the order their plugins are appended in.
PREDICATE_ORDERING: tuple[str, ...] = (
    CHECK_NODE_UNSCHEDULABLE,
    GENERAL_PREDICATES, HOST_NAME, POD_FITS_HOST_PORTS,
    MATCH_NODE_SELECTOR, POD_FITS_RESOURCES, NO_DISK_CONFLICT,
    POD_TOLERATES_NODE_TAINTS, CHECK_NODE_LABEL_PRESENCE,
    CHECK_SERVICE_AFFINITY, MAX_EBS_VOLUME_COUNT, MAX_GCE_PD_VOLUME_COUNT, MAX_CSI_VOLUME_COUNT,
    MAX_AZURE_DISK_VOLUME_COUNT, MAX_CINDER_VOLUME_COUNT, CHECK_VOLUME_BINDING, NO_VOLUME_ZONE_CONFLICT,
    EVEN_PODS_SPREAD, MATCH_INTER_POD_AFFINITY,
)  # fmt: skip

# Always configured, whatever the Policy lists.
MANDATORY_PREDICATES: frozenset[str] = frozenset({POD_TOLERATES_NODE_TAINTS, CHECK_NODE_UNSCHEDULABLE})

# Used when the Policy's `predicates` / `priorities` is null (absent); `[]` means none.
DEFAULT_PREDICATES: frozenset[str] = frozenset({
    NO_VOLUME_ZONE_CONFLICT, MAX_EBS_VOLUME_COUNT, MAX_GCE_PD_VOLUME_COUNT, MAX_AZURE_DISK_VOLUME_COUNT,
    MAX_CSI_VOLUME_COUNT, MATCH_INTER_POD_AFFINITY, NO_DISK_CONFLICT, GENERAL_PREDICATES,
    POD_TOLERATES_NODE_TAINTS, CHECK_VOLUME_BINDING, CHECK_NODE_UNSCHEDULABLE, EVEN_PODS_SPREAD,
})  # fmt: skip
DEFAULT_PRIORITIES: Mapping[str, int] = {
    SELECTOR_SPREAD_PRIORITY: 1,
    INTER_POD_AFFINITY_PRIORITY: 1,
    LEAST_REQUESTED_PRIORITY: 1,
    BALANCED_RESOURCE_ALLOCATION: 1,
    NODE_PREFER_AVOID_PODS_PRIORITY: 10000,
    NODE_AFFINITY_PRIORITY: 1,
    TAINT_TOLERATION_PRIORITY: 1,
    IMAGE_LOCALITY_PRIORITY: 1,
    EVEN_PODS_SPREAD_PRIORITY: 2,
}


# ---------------------------------------------------------------- the Policy, decoded
@dataclass(frozen=True, slots=True)
class LabelsPresence:
    labels: tuple[str, ...] = ()
    presence: bool = False


@dataclass(frozen=True, slots=True)
class PredicateArgument:
    """Exactly one member must be set (None = absent; ``service_affinity`` holds its labels)."""

    service_affinity: tuple[str, ...] | None = None
    labels_presence: LabelsPresence | None = None

    def count(self) -> int:
        return (self.service_affinity is not None) + (self.labels_presence is not None)


@dataclass(frozen=True, slots=True)
class PredicatePolicy:
    name: str
    argument: PredicateArgument | None = None


@dataclass(frozen=True, slots=True)
class LabelPreference:
    label: str = ""
    presence: bool = False


@dataclass(frozen=True, slots=True)
class RequestedToCapacityRatioArguments:
    shape: tuple[UtilizationShapePoint, ...] = ()
    resources: tuple[ResourceSpec, ...] = ()


@dataclass(frozen=True, slots=True)
class PriorityArgument:
    """Exactly one member must be set (None = absent; ``service_anti_affinity`` holds its label)."""

    service_anti_affinity: str | None = None
    label_preference: LabelPreference | None = None
    requested_to_capacity_ratio_arguments: RequestedToCapacityRatioArguments | None = None

    def count(self) -> int:
        return (
            (self.service_anti_affinity is not None)
            + (self.label_preference is not None)
            + (self.requested_to_capacity_ratio_arguments is not None)
        )


@dataclass(frozen=True, slots=True)
class PriorityPolicy:
    name: str
    weight: int = 0
    argument: PriorityArgument | None = None


@dataclass(frozen=True, slots=True)
class Policy:
    """config.Policy. ``predicates`` / ``priorities`` None = absent (the DefaultProvider sets apply)."""

    predicates: tuple[PredicatePolicy, ...] | None = None
    priorities: tuple[PriorityPolicy, ...] | None = None
    extenders: tuple[Extender, ...] = ()
    hard_pod_affinity_symmetric_weight: int = 0
    always_check_all_predicates: bool = False


@dataclass(frozen=True, slots=True)
class PolicyTranslation:
    """The translated configuration, and notes on what it cannot carry over."""

    config: KubeSchedulerConfiguration
    notes: tuple[str, ...] = ()


# ---------------------------------------------------------------- public API
def load_policy(
    path: str | os.PathLike[str], *, default_pod_topology_spread: bool = True
) -> KubeSchedulerConfiguration:
    """Read a Policy file (JSON or YAML) and translate it (see :func:`parse_policy`)."""
    return load_policy_translation(path, default_pod_topology_spread=default_pod_topology_spread).config


def parse_policy(
    data: Any, file: str | None = None, *, default_pod_topology_spread: bool = True
) -> KubeSchedulerConfiguration:
    """Decode (strictly), validate (ValidatePolicy) and translate a Policy already read from
    JSON/YAML into a validated KubeSchedulerConfiguration; raises ConfigError."""
    return translate_policy_data(data, file, default_pod_topology_spread=default_pod_topology_spread).config


def load_policy_translation(
    path: str | os.PathLike[str], *, default_pod_topology_spread: bool = True
) -> PolicyTranslation:
    name = os.fspath(path)
    return translate_policy_data(_load_text(read_text(name, "policy"), name), name,
                                 default_pod_topology_spread=default_pod_topology_spread)


def translate_policy_data(
    data: Any, file: str | None = None, *, default_pod_topology_spread: bool = True
) -> PolicyTranslation:
    try:
        policy = decode_policy(data)
    except FieldError as e:
        raise ConfigError(e.message, file=file, field=e.path) from None
    raise_errors(policy_errors(policy), file)
    try:
        translation = translate_policy(policy, default_pod_topology_spread=default_pod_topology_spread)
    except FieldError as e:
        raise ConfigError(e.message, file=file, field=e.path) from None
    # Errors found when the profile or the extenders are built name the Policy file too.
    return replace(translation, config=located(translation.config, file))


def _load_text(text: str, file: str) -> Any:
    """JSON (the legacy format, often tab-indented, which YAML rejects) or YAML."""
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text, object_pairs_hook=_no_duplicates)
        except _DuplicateJSONKey as e:
            raise ConfigError(f'duplicate field "{e.args[0]}"', file=file) from None
        except json.JSONDecodeError:
            pass  # not JSON after all: let YAML report
        except RecursionError:
            raise ConfigError("invalid JSON: nested too deeply", file=file) from None
    return _load_yaml(text, file)


class _DuplicateJSONKey(Exception):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateJSONKey(k)
        out[k] = v
    return out


# ---------------------------------------------------------------- strict decoding
_POLICY_FIELDS = (
    "apiVersion", "kind", "predicates", "priorities", "extenders", "hardPodAffinitySymmetricWeight",
    "alwaysCheckAllPredicates",
)  # fmt: skip


def decode_policy(data: Any) -> Policy:
    """Strictly decode a v1 Policy object; raises FieldError. Does not validate."""
    if data is None:
        raise FieldError("", "empty policy: expected a Policy object")
    if not isinstance(data, Mapping):
        # The whole document: there is no field to name (was `Invalid value: "a": must be an object`).
        raise FieldError("", f"the document must be a Policy object, got {_json_type(data)}")
    m = _obj(data, "", _POLICY_FIELDS)
    api_version = _str(m.get("apiVersion"), "apiVersion")
    if api_version not in ("", POLICY_API_VERSION):
        raise f.not_supported("apiVersion", api_version, (POLICY_API_VERSION,))
    kind = _str(m.get("kind"), "kind")
    if not kind:
        raise f.required("kind", f'must be "{POLICY_KIND}"')
    if kind != POLICY_KIND:
        raise f.not_supported("kind", kind, (POLICY_KIND,))
    predicates = None
    if m.get("predicates") is not None:
        predicates = tuple(
            _predicate(p, f"predicates[{i}]") for i, p in enumerate(_list(m["predicates"], "predicates"))
        )
    priorities = None
    if m.get("priorities") is not None:
        priorities = tuple(_priority(p, f"priorities[{i}]") for i, p in enumerate(_list(m["priorities"], "priorities")))
    return Policy(
        predicates=predicates,
        priorities=priorities,
        extenders=tuple(_extender(e, f"extenders[{i}]") for i, e in enumerate(_list(m.get("extenders"), "extenders"))),
        hard_pod_affinity_symmetric_weight=_int(
            m.get("hardPodAffinitySymmetricWeight"), "hardPodAffinitySymmetricWeight", 0
        ),
        always_check_all_predicates=_bool(m.get("alwaysCheckAllPredicates"), "alwaysCheckAllPredicates"),
    )


def _predicate(raw: Any, path: str) -> PredicatePolicy:
    m = _obj(raw, path, ("name", "argument"))
    argument = None
    if m.get("argument") is not None:
        ap = f"{path}.argument"
        am = _obj(m["argument"], ap, ("serviceAffinity", "labelsPresence"))
        service_affinity = None
        if am.get("serviceAffinity") is not None:
            sp = f"{ap}.serviceAffinity"
            sm = _obj(am["serviceAffinity"], sp, ("labels",))
            service_affinity = _strings(sm.get("labels"), f"{sp}.labels")
        labels_presence = None
        if am.get("labelsPresence") is not None:
            lp = f"{ap}.labelsPresence"
            lm = _obj(am["labelsPresence"], lp, ("labels", "presence"))
            labels_presence = LabelsPresence(
                _strings(lm.get("labels"), f"{lp}.labels"), _bool(lm.get("presence"), f"{lp}.presence")
            )
        argument = PredicateArgument(service_affinity, labels_presence)
    return PredicatePolicy(_str(m.get("name"), f"{path}.name"), argument)


def _priority(raw: Any, path: str) -> PriorityPolicy:
    m = _obj(raw, path, ("name", "weight", "argument"))
    argument = None
    if m.get("argument") is not None:
        ap = f"{path}.argument"
        am = _obj(m["argument"], ap, ("serviceAntiAffinity", "labelPreference", "requestedToCapacityRatioArguments"))
        anti = None
        if am.get("serviceAntiAffinity") is not None:
            sp = f"{ap}.serviceAntiAffinity"
            anti = _str(_obj(am["serviceAntiAffinity"], sp, ("label",)).get("label"), f"{sp}.label")
        preference = None
        if am.get("labelPreference") is not None:
            lp = f"{ap}.labelPreference"
            lm = _obj(am["labelPreference"], lp, ("label", "presence"))
            preference = LabelPreference(
                _str(lm.get("label"), f"{lp}.label"), _bool(lm.get("presence"), f"{lp}.presence")
            )
        rtcr = None
        if am.get("requestedToCapacityRatioArguments") is not None:
            rp = f"{ap}.requestedToCapacityRatioArguments"
            rm = _obj(am["requestedToCapacityRatioArguments"], rp, ("shape", "resources"))
            # As written: no defaulting (an empty resource list scores every node 0).
            rtcr = RequestedToCapacityRatioArguments(
                _shape(rm.get("shape"), f"{rp}.shape"), _resource_specs(rm.get("resources"), f"{rp}.resources")
            )
        argument = PriorityArgument(anti, preference, rtcr)
    return PriorityPolicy(_str(m.get("name"), f"{path}.name"), _int(m.get("weight"), f"{path}.weight", 0, 64), argument)


# Legacy v1 Extender JSON names. Its Go type was decoded with encoding/json (a custom
# UnmarshalJSON accepting the 1.7-era "BindVerb"), so keys match case-insensitively.
_EXTENDER_FIELDS = (
    "urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight", "bindVerb", "enableHttps", "tlsConfig",
    "httpTimeout", "nodeCacheCapable", "managedResources", "ignorable",
)  # fmt: skip


def _obj_ci(raw: Any, path: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    """An object whose keys match ``allowed`` ignoring case; returned under the canonical names."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise f.invalid(path, raw, "must be an object")
    canonical = {a.lower(): a for a in allowed}
    out: dict[str, Any] = {}
    for k, v in raw.items():
        name = canonical.get(k.lower()) if isinstance(k, str) else None
        if name is None:
            # Quoted as Go's %q would: a key with a newline must not split the one-line error.
            quoted = json.dumps(str(k), ensure_ascii=False)
            raise FieldError(f.child(path, quoted[1:-1]), f"unknown field {quoted}")
        if name in out:
            raise FieldError(f.child(path, str(k)), f'duplicate field "{k}" (field names are case-insensitive here)')
        out[name] = v
    return out


def _extender(raw: Any, path: str) -> Extender:
    m = _obj_ci(raw, path, _EXTENDER_FIELDS)
    tls = _extender_tls(m.get("tlsConfig"), f"{path}.tlsConfig", _obj_ci)
    resources = _managed_resources(m.get("managedResources"), f"{path}.managedResources", _obj_ci)
    timeout_ns = _int(m.get("httpTimeout"), f"{path}.httpTimeout", 0, 64)
    if timeout_ns < 0:
        raise f.invalid(f"{path}.httpTimeout", timeout_ns, "must not be negative (nanoseconds)")
    return Extender(
        url_prefix=_str(m.get("urlPrefix"), f"{path}.urlPrefix"),
        filter_verb=_str(m.get("filterVerb"), f"{path}.filterVerb"),
        preempt_verb=_str(m.get("preemptVerb"), f"{path}.preemptVerb"),
        prioritize_verb=_str(m.get("prioritizeVerb"), f"{path}.prioritizeVerb"),
        weight=_int(m.get("weight"), f"{path}.weight", 0, 64),
        bind_verb=_str(m.get("bindVerb"), f"{path}.bindVerb"),
        enable_https=_bool(m.get("enableHttps"), f"{path}.enableHttps"),
        tls_config=tls,
        # NewHTTPExtender: a zero timeout means DefaultExtenderTimeout (5 s).
        http_timeout=timeout_ns / 1_000_000_000 if timeout_ns else DEFAULT_EXTENDER_TIMEOUT_SECONDS,
        node_cache_capable=_bool(m.get("nodeCacheCapable"), f"{path}.nodeCacheCapable"),
        managed_resources=resources,
        ignorable=_bool(m.get("ignorable"), f"{path}.ignorable"),
    )


# ---------------------------------------------------------------- ValidatePolicy
def policy_errors(policy: Policy) -> list[FieldError]:
    """ValidatePolicy: every error, in upstream's order (priorities, extenders,
    hardPodAffinitySymmetricWeight)."""
    errs: list[FieldError] = []
    seen: dict[str, PriorityPolicy] = {}
    for i, priority in enumerate(policy.priorities or ()):
        if priority.weight <= 0 or priority.weight >= MAX_WEIGHT:
            errs.append(
                FieldError(
                    f"priorities[{i}].weight",
                    f"priority {priority.name} should have a positive weight applied to it or it has overflown",
                )
            )
        err = _custom_priority_error(seen, priority)
        if err is not None:
            errs.append(FieldError(f"priorities[{i}].argument", err))
    errs.extend(extender_errors(policy.extenders))
    w = policy.hard_pod_affinity_symmetric_weight
    if not 0 <= w <= 100:
        errs.append(f.invalid("hardPodAffinitySymmetricWeight", w, "not in valid range [0-100]"))
    return errs


def _custom_priority_error(seen: dict[str, PriorityPolicy], priority: PriorityPolicy) -> str | None:
    """validateCustomPriorities: RequestedToCapacityRatio at most once; every LabelPreference
    (and every ServiceAntiAffinity) priority with one weight; an argument must set a member."""
    arg = priority.argument
    if arg is None:
        return None
    if arg.label_preference is not None or arg.service_anti_affinity is not None:
        kind = "LabelPreference" if arg.label_preference is not None else "ServiceAntiAffinity"
        existing = seen.get(kind)
        seen[kind] = priority
        if existing is not None and existing.weight != priority.weight:
            # Upstream's message has the double space.
            return f"{kind}  priority {f.quote(priority.name)} has a different weight with {f.quote(existing.name)}"
        return None
    if arg.requested_to_capacity_ratio_arguments is not None:
        existing = seen.get("RequestedToCapacityRatio")
        if existing is not None:
            return (
                f"priority {f.quote(priority.name)} redeclares custom priority "
                f'"RequestedToCapacityRatio", from: {f.quote(existing.name)}'
            )
        seen["RequestedToCapacityRatio"] = priority
        return None
    return f"no priority arguments set for priority {priority.name}"


# ---------------------------------------------------------------- the translation
@dataclass(slots=True)
class _ProducerArgs:
    """ConfigProducerArgs, shared by every producer (custom predicates/priorities fill it)."""

    default_pod_topology_spread: bool
    weight: int = 0
    node_label: NodeLabelArgs | None = None
    requested_to_capacity_ratio: RequestedToCapacityRatioArgs | None = None
    service_affinity: ServiceAffinityArgs | None = None
    inter_pod_affinity: InterPodAffinityArgs | None = None


class _Plugins:
    """Per extension point, the enabled plugins in the order they were appended."""

    def __init__(self) -> None:
        self.sets: dict[str, list[PluginRef]] = {attr: [] for attr, _ in EXTENSION_POINTS}

    def add(self, point: str, name: str, weight: int | None = None) -> None:
        """appendToPluginSet: a plugin already at ``point`` keeps its entry and weight (see the
        module docstring: upstream's "keep the max" updated a copy)."""
        entries = self.sets[point]
        if any(p.name == name for p in entries):
            return
        entries.append(PluginRef(name, weight or 0))

    def build(self) -> Plugins:
        # MultiPoint: every v1.30 default disabled, so the profile runs exactly these plugins.
        sets = {attr: PluginSet(enabled=tuple(refs)) for attr, refs in self.sets.items()}
        sets["multi_point"] = PluginSet(disabled=(PluginRef("*"),))
        return Plugins(**sets)


_Config = list[tuple[str, object]]
_Producer = Callable[[_ProducerArgs, _Plugins, _Config], None]


def _points(*placements: tuple[str, str]) -> _Producer:
    """A producer that only enables plugins: (point, plugin) pairs, in order."""

    def produce(args: _ProducerArgs, plugins: _Plugins, config: _Config) -> None:
        for point, name in placements:
            plugins.add(point, name)

    return produce


def _general_predicates(args: _ProducerArgs, plugins: _Plugins, config: _Config) -> None:
    plugins.add("filter", "NodeResourcesFit")
    plugins.add("pre_filter", "NodeResourcesFit")
    # (args.NodeResourcesFitArgs is never set by createFromPolicy: default args apply.)
    plugins.add("filter", "NodeName")
    plugins.add("filter", "NodePorts")
    plugins.add("pre_filter", "NodePorts")
    plugins.add("filter", "NodeAffinity")
    plugins.add("pre_filter", "NodeAffinity")


def _check_node_label_presence(args: _ProducerArgs, plugins: _Plugins, config: _Config) -> None:
    plugins.add("filter", NODE_LABEL)
    if args.node_label is not None:
        config.append((NODE_LABEL, args.node_label))


def _check_service_affinity(args: _ProducerArgs, plugins: _Plugins, config: _Config) -> None:
    plugins.add("filter", SERVICE_AFFINITY)
    if args.service_affinity is not None:
        config.append((SERVICE_AFFINITY, args.service_affinity))
    plugins.add("pre_filter", SERVICE_AFFINITY)


PREDICATE_PRODUCERS: Mapping[str, _Producer] = {
    GENERAL_PREDICATES: _general_predicates,
    POD_TOLERATES_NODE_TAINTS: _points(("filter", "TaintToleration")),
    POD_FITS_RESOURCES: _points(("filter", "NodeResourcesFit"), ("pre_filter", "NodeResourcesFit")),
    HOST_NAME: _points(("filter", "NodeName")),
    POD_FITS_HOST_PORTS: _points(("filter", "NodePorts"), ("pre_filter", "NodePorts")),
    MATCH_NODE_SELECTOR: _points(("filter", "NodeAffinity"), ("pre_filter", "NodeAffinity")),
    CHECK_NODE_UNSCHEDULABLE: _points(("filter", "NodeUnschedulable")),
    CHECK_VOLUME_BINDING: _points(
        ("pre_filter", "VolumeBinding"),
        ("filter", "VolumeBinding"),
        ("reserve", "VolumeBinding"),
        ("pre_bind", "VolumeBinding"),
    ),
    # PreFilter added on purpose (not upstream): v1.30's VolumeRestrictions Filter needs it.
    NO_DISK_CONFLICT: _points(("filter", "VolumeRestrictions"), ("pre_filter", "VolumeRestrictions")),
    NO_VOLUME_ZONE_CONFLICT: _points(("filter", "VolumeZone")),
    MAX_CSI_VOLUME_COUNT: _points(("filter", "NodeVolumeLimits")),
    MAX_EBS_VOLUME_COUNT: _points(("filter", "EBSLimits")),
    MAX_GCE_PD_VOLUME_COUNT: _points(("filter", "GCEPDLimits")),
    MAX_AZURE_DISK_VOLUME_COUNT: _points(("filter", "AzureDiskLimits")),
    MAX_CINDER_VOLUME_COUNT: _points(("filter", "CinderLimits")),
    MATCH_INTER_POD_AFFINITY: _points(("filter", INTER_POD_AFFINITY), ("pre_filter", INTER_POD_AFFINITY)),
    CHECK_NODE_LABEL_PRESENCE: _check_node_label_presence,
    CHECK_SERVICE_AFFINITY: _check_service_affinity,
    EVEN_PODS_SPREAD: _points(("pre_filter", POD_TOPOLOGY_SPREAD), ("filter", POD_TOPOLOGY_SPREAD)),
}


def _scored(*before: str, plugin: str, after: tuple[str, ...] = ()) -> _Producer:
    """A producer enabling ``plugin`` at Score with the priority's weight, and at the
    points in ``before`` / ``after`` (PreScore) in upstream's order."""

    def produce(args: _ProducerArgs, plugins: _Plugins, config: _Config) -> None:
        for point in before:
            plugins.add(point, plugin)
        plugins.add("score", plugin, args.weight)
        for point in after:
            plugins.add(point, plugin)

    return produce


def _selector_spread(args: _ProducerArgs, plugins: _Plugins, config: _Config) -> None:
    if not args.default_pod_topology_spread:
        plugins.add("score", SELECTOR_SPREAD, args.weight)
        plugins.add("pre_score", SELECTOR_SPREAD)
        return
    plugins.add("score", POD_TOPOLOGY_SPREAD, args.weight)
    plugins.add("pre_score", POD_TOPOLOGY_SPREAD)
    system = PodTopologySpreadArgs(defaulting_type=SYSTEM_DEFAULTING)
    # EvenPodsSpreadPriority may have configured the plugin already: override.
    for i, (name, _) in enumerate(config):
        if name == POD_TOPOLOGY_SPREAD:
            config[i] = (name, system)
            return
    config.append((POD_TOPOLOGY_SPREAD, system))


def _inter_pod_affinity_priority(args: _ProducerArgs, plugins: _Plugins, config: _Config) -> None:
    plugins.add("pre_score", INTER_POD_AFFINITY)
    plugins.add("score", INTER_POD_AFFINITY, args.weight)
    if args.inter_pod_affinity is not None:
        config.append((INTER_POD_AFFINITY, args.inter_pod_affinity))


def _requested_to_capacity_ratio(args: _ProducerArgs, plugins: _Plugins, config: _Config) -> None:
    if args.requested_to_capacity_ratio is None:
        # Upstream built the plugin without args and failed there.
        raise FieldError(
            "name",
            f'priority "{REQUESTED_TO_CAPACITY_RATIO}" needs a requestedToCapacityRatioArguments argument, and a '
            f"priority of that name ignores its argument: name it differently, e.g. "
            f'"{REQUESTED_TO_CAPACITY_RATIO_PRIORITY}"',
        )
    plugins.add("score", REQUESTED_TO_CAPACITY_RATIO, args.weight)
    config.append((REQUESTED_TO_CAPACITY_RATIO, args.requested_to_capacity_ratio))


def _int32_weight(weight: int, what: str) -> int:
    """The (int32) weight of a plugin; upstream converted int64 weights with int32()."""
    if weight > MAX_INT32:
        raise FieldError("weight", f"the weight {weight} of {what} does not fit in an int32")
    return weight


def _node_label_priority(args: _ProducerArgs, plugins: _Plugins, config: _Config) -> None:
    if args.node_label is None:  # upstream dereferenced the nil args and panicked
        raise FieldError("name", f'priority "{NODE_LABEL}" needs a labelPreference argument')
    # n LabelPreference priorities (validated to share one weight) score with n * weight.
    nl = args.node_label
    weight = _int32_weight(
        args.weight * (len(nl.present_labels_preference) + len(nl.absent_labels_preference)), "plugin NodeLabel"
    )
    plugins.add("score", NODE_LABEL, weight)
    config.append((NODE_LABEL, nl))


def _service_affinity_priority(args: _ProducerArgs, plugins: _Plugins, config: _Config) -> None:
    if args.service_affinity is None:  # upstream dereferenced the nil args and panicked
        raise FieldError("name", f'priority "{SERVICE_AFFINITY}" needs a serviceAntiAffinity argument')
    sa = args.service_affinity
    weight = _int32_weight(args.weight * len(sa.anti_affinity_labels_preference), "plugin ServiceAffinity")
    plugins.add("score", SERVICE_AFFINITY, weight)
    config.append((SERVICE_AFFINITY, sa))


def _even_pods_spread_priority(args: _ProducerArgs, plugins: _Plugins, config: _Config) -> None:
    plugins.add("pre_score", POD_TOPOLOGY_SPREAD)
    plugins.add("score", POD_TOPOLOGY_SPREAD, args.weight)
    if args.default_pod_topology_spread and not any(name == POD_TOPOLOGY_SPREAD for name, _ in config):
        # Not configured yet: the pod's own constraints only (system defaults disabled).
        config.append((POD_TOPOLOGY_SPREAD, PodTopologySpreadArgs(defaulting_type=LIST_DEFAULTING)))


PRIORITY_PRODUCERS: Mapping[str, _Producer] = {
    SELECTOR_SPREAD_PRIORITY: _selector_spread,
    TAINT_TOLERATION_PRIORITY: _scored("pre_score", plugin="TaintToleration"),
    NODE_AFFINITY_PRIORITY: _scored("pre_score", plugin="NodeAffinity"),
    IMAGE_LOCALITY_PRIORITY: _scored(plugin="ImageLocality"),
    INTER_POD_AFFINITY_PRIORITY: _inter_pod_affinity_priority,
    NODE_PREFER_AVOID_PODS_PRIORITY: _scored(plugin="NodePreferAvoidPods"),
    MOST_REQUESTED_PRIORITY: _scored(plugin="NodeResourcesMostAllocated"),
    BALANCED_RESOURCE_ALLOCATION: _scored(plugin="NodeResourcesBalancedAllocation"),
    LEAST_REQUESTED_PRIORITY: _scored(plugin="NodeResourcesLeastAllocated"),
    REQUESTED_TO_CAPACITY_RATIO: _requested_to_capacity_ratio,
    NODE_LABEL: _node_label_priority,
    SERVICE_AFFINITY: _service_affinity_priority,
    EVEN_PODS_SPREAD_PRIORITY: _even_pods_spread_priority,
}

# Names a Policy may use as is (aliases included); custom ones need an argument.
VALID_PREDICATE_NAMES: tuple[str, ...] = tuple(sorted({*PREDICATE_PRODUCERS, POD_FITS_PORTS}))
VALID_PRIORITY_NAMES: tuple[str, ...] = tuple(
    sorted(
        ({*PRIORITY_PRODUCERS} - {NODE_LABEL, SERVICE_AFFINITY, REQUESTED_TO_CAPACITY_RATIO})
        | {SERVICE_SPREADING_PRIORITY, EQUAL_PRIORITY}
    )
)


def _process_predicate(p: PredicatePolicy, path: str, args: _ProducerArgs) -> str:
    """ProcessPredicatePolicy: the registry key ``p`` selects, updating ``args`` for custom ones."""
    if p.argument is not None and p.argument.count() != 1:
        raise FieldError(
            f"{path}.argument",
            f"exactly 1 predicate argument is required, numArgs: {p.argument.count()}, predicate {f.quote(p.name)}",
        )
    name = POD_FITS_HOST_PORTS if p.name == POD_FITS_PORTS else p.name
    if name in PREDICATE_PRODUCERS:
        return name  # a registered predicate: any argument is ignored, as upstream
    arg = p.argument
    if arg is None:
        raise FieldError(
            f"{path}.name",
            f"predicate type not found for {f.quote(name)} (valid predicates: {', '.join(VALID_PREDICATE_NAMES)}; "
            "a custom predicate needs a serviceAffinity or labelsPresence argument)",
        )
    if arg.service_affinity is not None:
        sa = args.service_affinity or ServiceAffinityArgs()
        args.service_affinity = replace(sa, affinity_labels=sa.affinity_labels + arg.service_affinity)
        name = CHECK_SERVICE_AFFINITY
    if arg.labels_presence is not None:
        nl = args.node_label or NodeLabelArgs()
        lp = arg.labels_presence
        if lp.presence:
            nl = replace(nl, present_labels=nl.present_labels + lp.labels)
        else:
            nl = replace(nl, absent_labels=nl.absent_labels + lp.labels)
        args.node_label = nl
        name = CHECK_NODE_LABEL_PRESENCE
    return name


def _process_priority(p: PriorityPolicy, path: str, args: _ProducerArgs) -> str:
    """ProcessPriorityPolicy: the registry key ``p`` selects, updating ``args`` for custom ones."""
    if p.argument is not None and p.argument.count() != 1:
        raise FieldError(
            f"{path}.argument",
            f"exactly 1 priority argument is required, numArgs: {p.argument.count()}, priority {f.quote(p.name)}",
        )
    name = SELECTOR_SPREAD_PRIORITY if p.name == SERVICE_SPREADING_PRIORITY else p.name
    if name in PRIORITY_PRODUCERS:
        return name  # a registered priority: any argument is ignored, as upstream
    arg = p.argument
    if arg is None:
        raise FieldError(
            f"{path}.name",
            f"priority type not found for {f.quote(name)} (valid priorities: {', '.join(VALID_PRIORITY_NAMES)}; "
            "a custom priority needs a serviceAntiAffinity, labelPreference or requestedToCapacityRatioArguments "
            "argument)",
        )
    if arg.service_anti_affinity is not None:
        name = SERVICE_AFFINITY
        sa = args.service_affinity or ServiceAffinityArgs()
        args.service_affinity = replace(
            sa, anti_affinity_labels_preference=sa.anti_affinity_labels_preference + (arg.service_anti_affinity,)
        )
    if arg.label_preference is not None:
        name = NODE_LABEL
        nl = args.node_label or NodeLabelArgs()
        pref = arg.label_preference
        if pref.presence:
            nl = replace(nl, present_labels_preference=nl.present_labels_preference + (pref.label,))
        else:
            nl = replace(nl, absent_labels_preference=nl.absent_labels_preference + (pref.label,))
        args.node_label = nl
    if arg.requested_to_capacity_ratio_arguments is not None:
        rtcr = arg.requested_to_capacity_ratio_arguments
        # Copied as written (no defaulting); the plugin validated them when built.
        produced = RequestedToCapacityRatioArgs(shape=rtcr.shape, resources=rtcr.resources)
        errs = plugin_args_errors(produced, f"{path}.argument.requestedToCapacityRatioArguments")
        if errs:
            raise errs[0]
        args.requested_to_capacity_ratio = produced
        name = REQUESTED_TO_CAPACITY_RATIO  # custom names are not kept (#83472)
    return name


def _dedup(config: _Config) -> dict[str, object]:
    """dedupPluginConfigs: the first config of each plugin; a different repeat is an error."""
    out: dict[str, object] = {}
    for name, args in config:
        if name not in out:
            out[name] = args
        elif out[name] != args:
            raise FieldError("", f"inconsistent configuration produced for plugin {name}")
    return out


def translate_policy(policy: Policy, *, default_pod_topology_spread: bool = True) -> PolicyTranslation:
    """createFromPolicy for an already validated Policy; raises FieldError (paths name the
    Policy's fields)."""
    args = _ProducerArgs(default_pod_topology_spread=default_pod_topology_spread)
    notes: list[str] = []

    if policy.predicates is None:
        predicate_keys = set(DEFAULT_PREDICATES)
    else:
        predicate_keys = {_process_predicate(p, f"predicates[{i}]", args) for i, p in enumerate(policy.predicates)}

    priority_keys: dict[str, int] = {}
    priority_index: dict[str, int] = {}  # key -> the (last) policy entry that selected it
    if policy.priorities is None:
        priority_keys = dict(DEFAULT_PRIORITIES)
    else:
        for i, p in enumerate(policy.priorities):
            if p.name == EQUAL_PRIORITY:
                continue  # every node scored the same: nothing to run
            # A later priority mapping to the same key replaces the weight (a Go map).
            key = _process_priority(p, f"priorities[{i}]", args)
            priority_keys[key] = p.weight
            priority_index[key] = i

    if policy.hard_pod_affinity_symmetric_weight != 0:
        args.inter_pod_affinity = InterPodAffinityArgs(
            hard_pod_affinity_weight=policy.hard_pod_affinity_symmetric_weight
        )
        if INTER_POD_AFFINITY_PRIORITY not in priority_keys:
            notes.append(
                "hardPodAffinitySymmetricWeight is ignored without InterPodAffinityPriority (as kube-scheduler did)"
            )
    if policy.always_check_all_predicates:
        notes.append(
            "alwaysCheckAllPredicates has no KubeSchedulerConfiguration equivalent and is ignored "
            "(v1.30 stops at the first filter that rejects a node)"
        )

    # PrioritySort, DefaultPreemption and DefaultBinder were neither predicates nor priorities.
    plugins = _Plugins()
    plugins.add("queue_sort", "PrioritySort")
    plugins.add("post_filter", "DefaultPreemption")
    plugins.add("bind", "DefaultBinder")
    config: _Config = []

    # AppendPredicateConfigs: predicateOrdering first, then any other key by name.
    remaining = predicate_keys | MANDATORY_PREDICATES
    for key in PREDICATE_ORDERING:
        if key in remaining:
            PREDICATE_PRODUCERS[key](args, plugins, config)
            remaining.discard(key)
    for key in sorted(remaining):
        PREDICATE_PRODUCERS[key](args, plugins, config)

    # AppendPriorityConfigs: by sorted key, each with its (int32) weight.
    for key in sorted(priority_keys):
        try:
            args.weight = _int32_weight(priority_keys[key], f"priority {key}")
            PRIORITY_PRODUCERS[key](args, plugins, config)
        except FieldError as e:  # producers name the field of the priority entry
            raise FieldError(f"priorities[{priority_index.get(key, 0)}].{e.path}", e.message) from None

    explicit = _dedup(config)
    built = plugins.build()
    enabled = {ref.name for _, ps in built.items() for ref in ps.enabled}
    if not default_pod_topology_spread and POD_TOPOLOGY_SPREAD in enabled and POD_TOPOLOGY_SPREAD not in explicit:
        # v1beta1 defaulting with the gate off.
        explicit[POD_TOPOLOGY_SPREAD] = PodTopologySpreadArgs(defaulting_type=LIST_DEFAULTING)
    for produced in explicit.values():
        if isinstance(produced, NodeLabelArgs):
            errs = plugin_args_errors(produced)
            if errs:
                raise FieldError(
                    "", f"the NodeLabel args built from labelsPresence/labelPreference arguments are invalid: {errs[0]}"
                )
        if isinstance(produced, RequestedToCapacityRatioArgs) and not produced.resources:
            notes.append(
                "RequestedToCapacityRatio has no resources, so it scores every node 0 (as kube-scheduler did); "
                "a KubeSchedulerConfiguration file cannot say so: reloaded, its args default to cpu and memory"
            )

    profile = Profile(
        scheduler_name=DEFAULT_SCHEDULER_NAME,
        plugins=built,
        plugin_config=default_plugin_config(built, explicit),
    )
    # A Policy names plugins only v1.30's configuration still accepts (EBSLimits, ...): the
    # translation is a v1.30 configuration, whichever release then decides with it.
    result = KubeSchedulerConfiguration(profiles=(profile,), extenders=policy.extenders, features=FEATURES_1_30)
    errs = configuration_errors(result)
    if errs:  # not expected: the translation only produces valid configurations
        raise FieldError("", "the translated configuration is invalid: " + "; ".join(str(e) for e in errs))
    return PolicyTranslation(result, tuple(notes))


__all__ = [
    "DEFAULT_PREDICATES", "DEFAULT_PRIORITIES", "MANDATORY_PREDICATES", "PREDICATE_ORDERING", "VALID_PREDICATE_NAMES",
    "VALID_PRIORITY_NAMES", "LabelPreference", "LabelsPresence", "Policy", "PolicyTranslation", "PredicateArgument",
    "PredicatePolicy", "PriorityArgument", "PriorityPolicy", "RequestedToCapacityRatioArguments", "decode_policy",
    "load_policy", "load_policy_translation", "parse_policy", "policy_errors", "translate_policy",
    "translate_policy_data",
]  # fmt: skip
