"""Read a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) file: strict decoding,
v1 defaulting, then validation — the order kube-scheduler uses (options.loadConfigFromFile,
scheme defaulting, ValidateKubeSchedulerConfiguration).

Decoding is strict, as kube-scheduler's: an unknown or duplicated field anywhere (top level,
profile, plugins, pluginConfig args of a known kind, extenders) is an error. Args of a plugin
without a known ``<Name>Args`` kind are kept as written (out-of-tree plugins).
Every problem raises :class:`ConfigError` naming the file and the field path, e.g.
``profiles[0].pluginConfig[1].args.scoringStrategy.type: Unsupported value: "Foo": ...``.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import os
from collections.abc import Callable, Collection, Mapping
from typing import Any

import yaml

from kubesched.config import _field as f
from kubesched.config._duration import parse_duration
from kubesched.config.args import (
    DEFAULT_RESOURCES,
    SYSTEM_DEFAULTING,
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeLabelArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    RequestedToCapacityRatioArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    ServiceAffinityArgs,
    UtilizationShapePoint,
    VolumeBindingArgs,
)
from kubesched.config.defaults import default_plugin_config, default_plugins, merge_plugins
from kubesched.config.types import (
    API_VERSION,
    DEFAULT_EXTENDER_TIMEOUT_SECONDS,
    DEFAULT_SCHEDULER_NAME,
    EXTENSION_POINTS,
    KIND,
    ClientConnection,
    Extender,
    ExtenderManagedResource,
    ExtenderTLSConfig,
    KubeSchedulerConfiguration,
    LeaderElection,
    PluginRef,
    Plugins,
    PluginSet,
    Profile,
)
from kubesched.config.validation import configuration_errors, plugin_args_errors, raise_errors
from kubesched.errors import ConfigError, FieldError, utf8_error
from kubesched.features import DEFAULT_FEATURES, Features
from kubesched.objects import NodeAffinity, TopologySpreadConstraint
from kubesched.objects.labels import parse_label_selector
from kubesched.objects.manifests import excessive_aliasing
from kubesched.objects.parse import parse_node_affinity

ARGS_GROUP = "kubescheduler.config.k8s.io"


# ---------------------------------------------------------------- public API
def load_config(path: str | os.PathLike[str], *, features: Features | None = None) -> KubeSchedulerConfiguration:
    """Read, default and validate a KubeSchedulerConfiguration YAML/JSON file, with the defaults
    and validation of ``features``' release (default: the newest supported)."""
    name = os.fspath(path)
    return parse_config(_load_yaml(read_text(name, "configuration"), name), file=name, features=features)


def read_text(name: str, what: str) -> str:
    """A configuration or Policy file's text. Not UTF-8 is a ConfigError naming the line, not a
    UnicodeDecodeError traceback (found by fuzzing: scripts/fuzz.py)."""
    try:
        with open(name, "rb") as fh:
            data = fh.read()
    except OSError as e:
        raise ConfigError(f"cannot read {what}: {e.strerror or e}", file=name) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"cannot read {what}: {utf8_error(data, e)}", file=name) from None


def parse_config(data: Any, file: str | None = None, *, features: Features | None = None) -> KubeSchedulerConfiguration:
    """Decode (strictly), default and validate a configuration already read from YAML/JSON."""
    try:
        config = decode_configuration(data, features=features)
    except FieldError as e:
        raise ConfigError(e.message, file=file, field=e.path) from None
    raise_errors(configuration_errors(config), file)
    return located(config, file)


def located(config: KubeSchedulerConfiguration, file: str | None) -> KubeSchedulerConfiguration:
    """``config`` with ``file`` recorded on its profiles and extenders: errors found only when
    they are built (``kubesched simulate``, ``run``, ``config validate``) then name the file, as
    every loading error does (they did not: found by fuzzing, scripts/fuzz.py)."""
    if not file:
        return config
    return dataclasses.replace(
        config, profiles=tuple(dataclasses.replace(p, file=file) for p in config.profiles),
        extenders=tuple(dataclasses.replace(e, file=file) for e in config.extenders))


def parse_plugin_args(plugin: str, raw: Any, *, path: str = "") -> Any:
    """Decode, default and validate the args for ``plugin`` (a pluginConfig ``args`` value).
    Returns the typed args for a known ``<plugin>Args`` kind, else ``raw`` unchanged."""
    try:
        args = _decode_args(plugin, raw, path)
    except FieldError as e:
        raise ConfigError(e.message, field=e.path) from None
    raise_errors(plugin_args_errors(args, path))
    return args


def _load_yaml(text: str, file: str) -> Any:
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
        # A few lines of YAML aliases can stand for billions of values, which decoding would walk
        # for hours ("billion laughs"; found by fuzzing, scripts/fuzz.py): refused as go-yaml does.
        aliasing = excessive_aliasing(data) if "*" in text else None
        if aliasing is not None:
            raise ConfigError(aliasing, file=file)
        return data
    except _DuplicateKey as e:
        raise ConfigError(str(e), file=file) from None
    except RecursionError:
        # PyYAML's pure-Python composer recurses once per nesting level.
        raise ConfigError("invalid YAML: nested too deeply", file=file) from None
    except yaml.YAMLError as e:
        # One line (the CLI prints one line per error): str(e) spans several lines.
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(e, "problem", None) or " ".join(str(e).split())
        raise ConfigError(f"invalid YAML{where}: {problem}", file=file) from None


class _DuplicateKey(Exception):
    pass


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicated mapping keys (strict decoding does too)."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    out: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in out:
            line = key_node.start_mark.line + 1
            raise _DuplicateKey(f'line {line}: duplicate field "{key}"')
        out[key] = loader.construct_object(value_node, deep=deep)
    return out


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


# ---------------------------------------------------------------- readers
def _obj(raw: Any, path: str, allowed: Collection[str]) -> Mapping[str, Any]:
    """An object with only ``allowed`` keys (strict decoding); null reads as empty."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise f.invalid(path, raw, "must be an object")
    for k in raw:
        if not isinstance(k, str) or k not in allowed:
            # Quoted as Go's %q would: a key with a newline must not split the one-line error.
            quoted = json.dumps(str(k), ensure_ascii=False)
            raise FieldError(f.child(path, quoted[1:-1]), f"unknown field {quoted}")
    return raw


def _json_type(value: Any) -> str:
    """The JSON type of a decoded YAML/JSON value, for messages."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else f"a {type(value).__name__}"


def _list(raw: Any, path: str) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise f.invalid(path, raw, "must be a list")
    return raw


def _int(raw: Any, path: str, default: int, bits: int = 32) -> int:
    value = _opt_int(raw, path, bits)
    return default if value is None else value


def _opt_int(raw: Any, path: str, bits: int = 32) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, float) and raw.is_integer():
        raw = int(raw)  # JSON has one number type: 10.0 decodes into an int field
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise f.invalid(path, raw, "must be an integer")
    if not -(2 ** (bits - 1)) <= raw < 2 ** (bits - 1):
        raise f.invalid(path, raw, f"must fit in a {bits}-bit integer")
    return raw


def _float(raw: Any, path: str, default: float) -> float:
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise f.invalid(path, raw, "must be a number")
    return float(raw)


def _str(raw: Any, path: str, default: str = "") -> str:
    if raw is None:
        return default
    if not isinstance(raw, str):
        raise f.invalid(path, raw, "must be a string")
    return raw


def _opt_str(raw: Any, path: str) -> str | None:
    return None if raw is None else _str(raw, path)


def _bool(raw: Any, path: str, default: bool = False) -> bool:
    value = _opt_bool(raw, path)
    return default if value is None else value


def _opt_bool(raw: Any, path: str) -> bool | None:
    if raw is None:
        return None
    if not isinstance(raw, bool):
        raise f.invalid(path, raw, "must be a boolean")
    return raw


def _strings(raw: Any, path: str) -> tuple[str, ...]:
    return tuple(_str(v, f"{path}[{i}]") for i, v in enumerate(_list(raw, path)))


def _duration(raw: Any, path: str, default: float) -> float:
    """metav1.Duration ("15s", "1m30s") -> seconds."""
    if raw is None:
        return default
    ns = parse_duration(raw) if isinstance(raw, str) else None
    if ns is None:
        raise f.invalid(path, raw, 'must be a duration such as "5s" or "1m30s"')
    return ns / 1_000_000_000


def _bytes(raw: Any, path: str) -> bytes:
    """[]byte fields are base64 in JSON/YAML."""
    if raw is None:
        return b""
    if not isinstance(raw, str):
        raise f.invalid(path, raw, "must be base64-encoded data")
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        raise f.invalid(path, raw, "must be base64-encoded data") from None


# ---------------------------------------------------------------- configuration
_TOP_FIELDS = (
    "apiVersion", "kind", "parallelism", "leaderElection", "clientConnection", "enableProfiling",
    "enableContentionProfiling", "percentageOfNodesToScore", "podInitialBackoffSeconds", "podMaxBackoffSeconds",
    "profiles", "extenders", "delayCacheUntilActive",
)  # fmt: skip


def decode_configuration(data: Any, *, features: Features | None = None) -> KubeSchedulerConfiguration:
    """Strictly decode and default (SetDefaults_KubeSchedulerConfiguration) a configuration;
    raises FieldError. Does not validate."""
    if data is None:
        raise FieldError("", "empty configuration: expected a KubeSchedulerConfiguration object")
    if not isinstance(data, Mapping):
        # The whole document: there is no field to name (was `Invalid value: "a": must be an object`).
        raise FieldError("", f"the document must be a KubeSchedulerConfiguration object, got {_json_type(data)}")
    m = _obj(data, "", _TOP_FIELDS)
    api_version = _str(m.get("apiVersion"), "apiVersion")
    if not api_version:
        raise f.required("apiVersion")
    if api_version != API_VERSION:
        raise f.not_supported("apiVersion", api_version, (API_VERSION,))
    kind = _str(m.get("kind"), "kind")
    if not kind:
        raise f.required("kind")
    if kind != KIND:
        raise f.not_supported("kind", kind, (KIND,))

    leader_election = _leader_election(m.get("leaderElection"), "leaderElection")
    client_connection = _client_connection(m.get("clientConnection"), "clientConnection")
    enable_profiling = _bool(m.get("enableProfiling"), "enableProfiling", True)
    contention = _opt_bool(m.get("enableContentionProfiling"), "enableContentionProfiling")
    if contention is None:
        contention = enable_profiling  # defaulted to true only when profiling is on

    feats = features if features is not None else DEFAULT_FEATURES
    raw_profiles = _list(m.get("profiles"), "profiles") or [{}]
    profiles = tuple(
        _profile(rp, f"profiles[{i}]", only_profile=len(raw_profiles) == 1, features=feats)
        for i, rp in enumerate(raw_profiles)
    )
    extenders = tuple(_extender(e, f"extenders[{i}]") for i, e in enumerate(_list(m.get("extenders"), "extenders")))
    return KubeSchedulerConfiguration(
        parallelism=_int(m.get("parallelism"), "parallelism", 16),
        percentage_of_nodes_to_score=_int(m.get("percentageOfNodesToScore"), "percentageOfNodesToScore", 0),
        pod_initial_backoff_seconds=_int(m.get("podInitialBackoffSeconds"), "podInitialBackoffSeconds", 1, 64),
        pod_max_backoff_seconds=_int(m.get("podMaxBackoffSeconds"), "podMaxBackoffSeconds", 10, 64),
        profiles=profiles,
        extenders=extenders,
        leader_election=leader_election,
        client_connection=client_connection,
        enable_profiling=enable_profiling,
        enable_contention_profiling=contention,
        delay_cache_until_active=_bool(m.get("delayCacheUntilActive"), "delayCacheUntilActive"),
        features=feats,
    )


def _leader_election(raw: Any, path: str) -> LeaderElection:
    """v1alpha1 LeaderElectionConfiguration + RecommendedDefaultLeaderElectionConfiguration and
    the scheduler's lock defaults (empty or zero values are defaulted, as upstream)."""
    m = _obj(
        raw,
        path,
        ("leaderElect", "leaseDuration", "renewDeadline", "retryPeriod", "resourceLock", "resourceName",
         "resourceNamespace"),
    )  # fmt: skip
    d = LeaderElection()
    return LeaderElection(
        leader_elect=_bool(m.get("leaderElect"), f"{path}.leaderElect", True),
        lease_duration=_duration(m.get("leaseDuration"), f"{path}.leaseDuration", 0.0) or d.lease_duration,
        renew_deadline=_duration(m.get("renewDeadline"), f"{path}.renewDeadline", 0.0) or d.renew_deadline,
        retry_period=_duration(m.get("retryPeriod"), f"{path}.retryPeriod", 0.0) or d.retry_period,
        resource_lock=_str(m.get("resourceLock"), f"{path}.resourceLock") or d.resource_lock,
        resource_name=_str(m.get("resourceName"), f"{path}.resourceName") or d.resource_name,
        resource_namespace=_str(m.get("resourceNamespace"), f"{path}.resourceNamespace") or d.resource_namespace,
    )


def _client_connection(raw: Any, path: str) -> ClientConnection:
    m = _obj(raw, path, ("kubeconfig", "acceptContentTypes", "contentType", "qps", "burst"))
    d = ClientConnection()
    return ClientConnection(
        kubeconfig=_str(m.get("kubeconfig"), f"{path}.kubeconfig"),
        accept_content_types=_str(m.get("acceptContentTypes"), f"{path}.acceptContentTypes"),
        content_type=_str(m.get("contentType"), f"{path}.contentType") or d.content_type,
        qps=_float(m.get("qps"), f"{path}.qps", 0.0) or d.qps,
        burst=_int(m.get("burst"), f"{path}.burst", 0) or d.burst,
    )


# ---------------------------------------------------------------- profiles
def _profile(raw: Any, path: str, *, only_profile: bool, features: Features) -> Profile:
    """A KubeSchedulerProfile, defaulted as setDefaults_KubeSchedulerProfile does."""
    m = _obj(raw, path, ("schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"))
    name = _opt_str(m.get("schedulerName"), f"{path}.schedulerName")
    if name is None:
        # Only a single profile gets the default name; validation requires one otherwise.
        name = DEFAULT_SCHEDULER_NAME if only_profile else ""
    custom = _plugins(m.get("plugins"), f"{path}.plugins") if m.get("plugins") is not None else None
    plugins = merge_plugins(default_plugins(features), custom)
    explicit: dict[str, Any] = {}
    for j, entry in enumerate(_list(m.get("pluginConfig"), f"{path}.pluginConfig")):
        p = f"{path}.pluginConfig[{j}]"
        em = _obj(entry, p, ("name", "args"))
        plugin = _str(em.get("name"), f"{p}.name")
        if plugin in explicit:
            raise FieldError(p, f"repeated config for plugin {plugin}")
        explicit[plugin] = _decode_args(plugin, em.get("args"), f"{p}.args")
    return Profile(
        scheduler_name=name,
        percentage_of_nodes_to_score=_opt_int(m.get("percentageOfNodesToScore"), f"{path}.percentageOfNodesToScore"),
        plugins=plugins,
        plugin_config=default_plugin_config(plugins, explicit, features),
    )


def _plugins(raw: Any, path: str) -> Plugins:
    m = _obj(raw, path, [key for _, key in EXTENSION_POINTS])
    return Plugins(**{attr: _plugin_set(m.get(key), f"{path}.{key}") for attr, key in EXTENSION_POINTS})


def _plugin_set(raw: Any, path: str) -> PluginSet:
    m = _obj(raw, path, ("enabled", "disabled"))
    enabled = tuple(
        _plugin(p, f"{path}.enabled[{i}]") for i, p in enumerate(_list(m.get("enabled"), f"{path}.enabled"))
    )
    disabled = tuple(
        _plugin(p, f"{path}.disabled[{i}]") for i, p in enumerate(_list(m.get("disabled"), f"{path}.disabled"))
    )
    return PluginSet(enabled=enabled, disabled=disabled)


def _plugin(raw: Any, path: str) -> PluginRef:
    m = _obj(raw, path, ("name", "weight"))
    return PluginRef(_str(m.get("name"), f"{path}.name"), _int(m.get("weight"), f"{path}.weight", 0))


# ---------------------------------------------------------------- plugin args
def _decode_args(plugin: str, raw: Any, path: str) -> Any:
    """PluginConfig.decodeNestedObjects + scheme defaulting for one pluginConfig entry."""
    kind = plugin + "Args"
    decoder = _ARGS_DECODERS.get(kind)
    if decoder is None:
        # Not a registered kind (out-of-tree plugin, or a plugin without args): kept as written.
        return raw
    m = _obj(raw, path, ("apiVersion", "kind", *_ARGS_FIELDS[kind]))
    api_version = _str(m.get("apiVersion"), f.child(path, "apiVersion"))
    if api_version and api_version != API_VERSION:
        raise f.not_supported(f.child(path, "apiVersion"), api_version, (API_VERSION,))
    got = _str(m.get("kind"), f.child(path, "kind"))
    if got and got != kind:
        raise FieldError(
            f.child(path, "kind"),
            f"args for plugin {plugin} were not of type {kind}.{ARGS_GROUP}, got {got}.{ARGS_GROUP}",
        )
    return decoder(m, path)


def _resource_specs(raw: Any, path: str) -> tuple[ResourceSpec, ...]:
    out = []
    for i, r in enumerate(_list(raw, path)):
        rm = _obj(r, f"{path}[{i}]", ("name", "weight"))
        out.append(
            ResourceSpec(
                _str(rm.get("name"), f"{path}[{i}].name"), _int(rm.get("weight"), f"{path}[{i}].weight", 0, 64)
            )
        )
    return tuple(out)


def _default_resources(resources: tuple[ResourceSpec, ...]) -> tuple[ResourceSpec, ...]:
    """No resources -> cpu and memory with weight 1; a weight of 0 (or unset) -> 1."""
    if not resources:
        return DEFAULT_RESOURCES
    return tuple(r if r.weight != 0 else ResourceSpec(r.name, 1) for r in resources)


def _shape(raw: Any, path: str) -> tuple[UtilizationShapePoint, ...]:
    out = []
    for i, point in enumerate(_list(raw, path)):
        pm = _obj(point, f"{path}[{i}]", ("utilization", "score"))
        out.append(
            UtilizationShapePoint(
                _int(pm.get("utilization"), f"{path}[{i}].utilization", 0),
                _int(pm.get("score"), f"{path}[{i}].score", 0),
            )
        )
    return tuple(out)


def _node_resources_fit(m: Mapping[str, Any], path: str) -> NodeResourcesFitArgs:
    ss = m.get("scoringStrategy")
    if ss is None:
        strategy = ScoringStrategy()  # {LeastAllocated, cpu:1, memory:1}
    else:
        sp = f.child(path, "scoringStrategy")
        sm = _obj(ss, sp, ("type", "resources", "requestedToCapacityRatio"))
        rtcr = sm.get("requestedToCapacityRatio")
        param = None
        if rtcr is not None:
            rp = f"{sp}.requestedToCapacityRatio"
            param = RequestedToCapacityRatioParam(_shape(_obj(rtcr, rp, ("shape",)).get("shape"), f"{rp}.shape"))
        strategy = ScoringStrategy(
            # An explicit strategy without a type stays "" (and fails validation), as upstream.
            type=_str(sm.get("type"), f"{sp}.type"),
            resources=_default_resources(_resource_specs(sm.get("resources"), f"{sp}.resources")),
            requested_to_capacity_ratio=param,
        )
    return NodeResourcesFitArgs(
        ignored_resources=_strings(m.get("ignoredResources"), f.child(path, "ignoredResources")),
        ignored_resource_groups=_strings(m.get("ignoredResourceGroups"), f.child(path, "ignoredResourceGroups")),
        scoring_strategy=strategy,
    )


def _balanced_allocation(m: Mapping[str, Any], path: str) -> NodeResourcesBalancedAllocationArgs:
    return NodeResourcesBalancedAllocationArgs(
        resources=_default_resources(_resource_specs(m.get("resources"), f.child(path, "resources")))
    )


def _default_preemption(m: Mapping[str, Any], path: str) -> DefaultPreemptionArgs:
    return DefaultPreemptionArgs(
        min_candidate_nodes_percentage=_int(
            m.get("minCandidateNodesPercentage"), f.child(path, "minCandidateNodesPercentage"), 10
        ),
        min_candidate_nodes_absolute=_int(
            m.get("minCandidateNodesAbsolute"), f.child(path, "minCandidateNodesAbsolute"), 100
        ),
    )


def _inter_pod_affinity(m: Mapping[str, Any], path: str) -> InterPodAffinityArgs:
    return InterPodAffinityArgs(
        hard_pod_affinity_weight=_int(m.get("hardPodAffinityWeight"), f.child(path, "hardPodAffinityWeight"), 1),
        ignore_preferred_terms_of_existing_pods=_bool(
            m.get("ignorePreferredTermsOfExistingPods"), f.child(path, "ignorePreferredTermsOfExistingPods")
        ),
    )


# Allowed keys of core/v1 objects nested in args (strict decoding): key -> nested shape,
# None for a leaf; a 1-tuple means "list of".
_Shape = Mapping[str, Any]
_REQUIREMENT: _Shape = {"key": None, "operator": None, "values": None}
_NODE_SELECTOR_TERM: _Shape = {"matchExpressions": (_REQUIREMENT,), "matchFields": (_REQUIREMENT,)}
_NODE_AFFINITY: _Shape = {
    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": (_NODE_SELECTOR_TERM,)},
    "preferredDuringSchedulingIgnoredDuringExecution": ({"weight": None, "preference": _NODE_SELECTOR_TERM},),
}
_LABEL_SELECTOR: _Shape = {"matchLabels": None, "matchExpressions": (_REQUIREMENT,)}
_TOPOLOGY_SPREAD_CONSTRAINT = (
    "maxSkew", "topologyKey", "whenUnsatisfiable", "labelSelector", "minDomains", "nodeAffinityPolicy",
    "nodeTaintsPolicy", "matchLabelKeys",
)  # fmt: skip


def _check_shape(raw: Any, path: str, shape: Any) -> None:
    """Reject unknown fields in a nested API object (the parsers check types and values)."""
    if shape is None or raw is None:
        return
    if isinstance(shape, tuple):
        for i, item in enumerate(_list(raw, path)):
            _check_shape(item, f"{path}[{i}]", shape[0])
        return
    m = _obj(raw, path, shape)
    for k, v in m.items():
        _check_shape(v, f"{path}.{k}", shape[k])


def _node_affinity(m: Mapping[str, Any], path: str) -> NodeAffinityArgs:
    raw = m.get("addedAffinity")
    if raw is None:
        return NodeAffinityArgs()
    ap = f.child(path, "addedAffinity")
    _check_shape(raw, ap, _NODE_AFFINITY)
    # parse_node_affinity performs nodeaffinity.NewNodeSelector's checks, with paths.
    affinity: NodeAffinity | None = parse_node_affinity(raw, ap)
    return NodeAffinityArgs(added_affinity=affinity)


def _topology_spread_constraint(raw: Any, path: str) -> TopologySpreadConstraint:
    """A core/v1 TopologySpreadConstraint as decoded (no value checks: the args validation
    reports those with its own wording)."""
    m = _obj(raw, path, _TOPOLOGY_SPREAD_CONSTRAINT)
    _check_shape(m.get("labelSelector"), f"{path}.labelSelector", _LABEL_SELECTOR)
    selector = parse_label_selector(m.get("labelSelector"), f"{path}.labelSelector")
    return TopologySpreadConstraint(
        max_skew=_int(m.get("maxSkew"), f"{path}.maxSkew", 0),
        topology_key=_str(m.get("topologyKey"), f"{path}.topologyKey"),
        when_unsatisfiable=_str(m.get("whenUnsatisfiable"), f"{path}.whenUnsatisfiable"),
        label_selector=selector,
        min_domains=_opt_int(m.get("minDomains"), f"{path}.minDomains"),
        node_affinity_policy=_opt_str(m.get("nodeAffinityPolicy"), f"{path}.nodeAffinityPolicy"),
        node_taints_policy=_opt_str(m.get("nodeTaintsPolicy"), f"{path}.nodeTaintsPolicy"),
        match_label_keys=_strings(m.get("matchLabelKeys"), f"{path}.matchLabelKeys"),
    )


def _pod_topology_spread(m: Mapping[str, Any], path: str) -> PodTopologySpreadArgs:
    cp = f.child(path, "defaultConstraints")
    constraints = tuple(
        _topology_spread_constraint(c, f"{cp}[{i}]") for i, c in enumerate(_list(m.get("defaultConstraints"), cp))
    )
    return PodTopologySpreadArgs(
        default_constraints=constraints,
        defaulting_type=_str(m.get("defaultingType"), f.child(path, "defaultingType")) or SYSTEM_DEFAULTING,
    )


def _volume_binding(m: Mapping[str, Any], path: str) -> VolumeBindingArgs:
    return VolumeBindingArgs(
        bind_timeout_seconds=_int(m.get("bindTimeoutSeconds"), f.child(path, "bindTimeoutSeconds"), 600, 64),
        shape=_shape(m.get("shape"), f.child(path, "shape")),
    )


def _node_label(m: Mapping[str, Any], path: str) -> NodeLabelArgs:
    return NodeLabelArgs(
        present_labels=_strings(m.get("presentLabels"), f.child(path, "presentLabels")),
        absent_labels=_strings(m.get("absentLabels"), f.child(path, "absentLabels")),
        present_labels_preference=_strings(m.get("presentLabelsPreference"), f.child(path, "presentLabelsPreference")),
        absent_labels_preference=_strings(m.get("absentLabelsPreference"), f.child(path, "absentLabelsPreference")),
    )


def _service_affinity(m: Mapping[str, Any], path: str) -> ServiceAffinityArgs:
    return ServiceAffinityArgs(
        affinity_labels=_strings(m.get("affinityLabels"), f.child(path, "affinityLabels")),
        anti_affinity_labels_preference=_strings(
            m.get("antiAffinityLabelsPreference"), f.child(path, "antiAffinityLabelsPreference")
        ),
    )


def _requested_to_capacity_ratio(m: Mapping[str, Any], path: str) -> RequestedToCapacityRatioArgs:
    # v1beta1 SetDefaults_RequestedToCapacityRatioArgs: cpu/memory when empty, weight 0 -> 1.
    return RequestedToCapacityRatioArgs(
        shape=_shape(m.get("shape"), f.child(path, "shape")),
        resources=_default_resources(_resource_specs(m.get("resources"), f.child(path, "resources"))),
    )


def _dynamic_resources(m: Mapping[str, Any], path: str) -> DynamicResourcesArgs:
    # SetDefaults_DynamicResourcesArgs: filterTimeout 10 s, bindingTimeout 10 min.
    return DynamicResourcesArgs(
        filter_timeout=_duration(m.get("filterTimeout"), f.child(path, "filterTimeout"), 10.0),
        binding_timeout=_duration(m.get("bindingTimeout"), f.child(path, "bindingTimeout"), 600.0),
    )


_ARGS_DECODERS: dict[str, Callable[[Mapping[str, Any], str], object]] = {
    "DynamicResourcesArgs": _dynamic_resources,
    "DefaultPreemptionArgs": _default_preemption,
    "InterPodAffinityArgs": _inter_pod_affinity,
    "NodeAffinityArgs": _node_affinity,
    "NodeResourcesBalancedAllocationArgs": _balanced_allocation,
    "NodeResourcesFitArgs": _node_resources_fit,
    "PodTopologySpreadArgs": _pod_topology_spread,
    "VolumeBindingArgs": _volume_binding,
    "NodeLabelArgs": _node_label,
    "ServiceAffinityArgs": _service_affinity,
    "RequestedToCapacityRatioArgs": _requested_to_capacity_ratio,
}

# v1 JSON field names of each args kind (besides apiVersion/kind).
_ARGS_FIELDS: dict[str, tuple[str, ...]] = {
    "DynamicResourcesArgs": ("filterTimeout", "bindingTimeout"),
    "DefaultPreemptionArgs": ("minCandidateNodesPercentage", "minCandidateNodesAbsolute"),
    "InterPodAffinityArgs": ("hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"),
    "NodeAffinityArgs": ("addedAffinity",),
    "NodeResourcesBalancedAllocationArgs": ("resources",),
    "NodeResourcesFitArgs": ("ignoredResources", "ignoredResourceGroups", "scoringStrategy"),
    "PodTopologySpreadArgs": ("defaultConstraints", "defaultingType"),
    "VolumeBindingArgs": ("bindTimeoutSeconds", "shape"),
    "NodeLabelArgs": ("presentLabels", "absentLabels", "presentLabelsPreference", "absentLabelsPreference"),
    "ServiceAffinityArgs": ("affinityLabels", "antiAffinityLabelsPreference"),
    "RequestedToCapacityRatioArgs": ("shape", "resources"),
}


# ---------------------------------------------------------------- extenders
_EXTENDER_FIELDS = (
    "urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight", "bindVerb", "enableHTTPS", "tlsConfig",
    "httpTimeout", "nodeCacheCapable", "managedResources", "ignorable",
)  # fmt: skip
_TLS_FIELDS = ("insecure", "serverName", "certFile", "keyFile", "caFile", "certData", "keyData", "caData")


# How an extender decoder reads a nested object: strictly here, case-insensitively in the
# legacy Policy (kubesched.config.policy), which shares the two readers below.
ObjectReader = Callable[[Any, str, tuple[str, ...]], Mapping[str, Any]]


def _extender_tls(raw: Any, path: str, read: ObjectReader) -> ExtenderTLSConfig | None:
    """An extender's ``tlsConfig`` (``raw`` at ``path``); None when absent or null."""
    if raw is None:
        return None
    tm = read(raw, path, _TLS_FIELDS)
    return ExtenderTLSConfig(
        insecure=_bool(tm.get("insecure"), f"{path}.insecure"),
        server_name=_str(tm.get("serverName"), f"{path}.serverName"),
        cert_file=_str(tm.get("certFile"), f"{path}.certFile"),
        key_file=_str(tm.get("keyFile"), f"{path}.keyFile"),
        ca_file=_str(tm.get("caFile"), f"{path}.caFile"),
        cert_data=_bytes(tm.get("certData"), f"{path}.certData"),
        key_data=_bytes(tm.get("keyData"), f"{path}.keyData"),
        ca_data=_bytes(tm.get("caData"), f"{path}.caData"),
    )


def _managed_resources(raw: Any, path: str, read: ObjectReader) -> tuple[ExtenderManagedResource, ...]:
    """An extender's ``managedResources`` list (``raw`` at ``path``)."""
    resources = []
    for j, r in enumerate(_list(raw, path)):
        rm = read(r, f"{path}[{j}]", ("name", "ignoredByScheduler"))
        resources.append(
            ExtenderManagedResource(
                name=_str(rm.get("name"), f"{path}[{j}].name"),
                ignored_by_scheduler=_bool(rm.get("ignoredByScheduler"), f"{path}[{j}].ignoredByScheduler"),
            )
        )
    return tuple(resources)


def _extender(raw: Any, path: str) -> Extender:
    m = _obj(raw, path, _EXTENDER_FIELDS)
    tls = _extender_tls(m.get("tlsConfig"), f"{path}.tlsConfig", _obj)
    resources = _managed_resources(m.get("managedResources"), f"{path}.managedResources", _obj)
    return Extender(
        url_prefix=_str(m.get("urlPrefix"), f"{path}.urlPrefix"),
        filter_verb=_str(m.get("filterVerb"), f"{path}.filterVerb"),
        preempt_verb=_str(m.get("preemptVerb"), f"{path}.preemptVerb"),
        prioritize_verb=_str(m.get("prioritizeVerb"), f"{path}.prioritizeVerb"),
        weight=_int(m.get("weight"), f"{path}.weight", 0, 64),
        bind_verb=_str(m.get("bindVerb"), f"{path}.bindVerb"),
        enable_https=_bool(m.get("enableHTTPS"), f"{path}.enableHTTPS"),
        tls_config=tls,
        # NewHTTPExtender: a zero timeout means DefaultExtenderTimeout (5 s).
        http_timeout=_duration(m.get("httpTimeout"), f"{path}.httpTimeout", 0.0) or DEFAULT_EXTENDER_TIMEOUT_SECONDS,
        node_cache_capable=_bool(m.get("nodeCacheCapable"), f"{path}.nodeCacheCapable"),
        managed_resources=resources,
        ignorable=_bool(m.get("ignorable"), f"{path}.ignorable"),
    )


# ---------------------------------------------------------------- helpers for the runtime
def plugin_names_used(config: KubeSchedulerConfiguration) -> tuple[str, ...]:
    """Every plugin name enabled at any extension point of any profile, sorted — the runtime
    checks them against its registry (upstream fails with ``<Point> "<name>" does not exist``
    when building the framework). Disabled names and pluginConfig names are not included:
    upstream ignores those when the plugin is unknown."""
    names: set[str] = set()
    for prof in config.profiles:
        for _, ps in prof.plugins.items():
            names.update(p.name for p in ps.enabled)
    return tuple(sorted(names))
