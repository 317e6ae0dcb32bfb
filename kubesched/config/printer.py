"""A configuration back to its v1 (camelCase) form, shaped like the defaulted v1 object
kube-scheduler writes with ``--write-config-to``: keys in alphabetical order, every extension
point present (``{}`` when empty), MultiPoint plugins with their weight (0 when unset), the
full pluginConfig list with ``apiVersion``/``kind`` in each args, ``omitempty`` fields left
out when empty.

``parse_config(dump_config(c)) == c`` for every valid configuration ``c``.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from kubesched.config._duration import format_seconds
from kubesched.config.args import (
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeLabelArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    RequestedToCapacityRatioArgs,
    ResourceSpec,
    ServiceAffinityArgs,
    UtilizationShapePoint,
    VolumeBindingArgs,
)
from kubesched.config.types import (
    API_VERSION,
    KIND,
    Extender,
    KubeSchedulerConfiguration,
    PluginSet,
    Profile,
)
from kubesched.objects import LabelSelector, NodeAffinity, NodeSelectorTerm, Requirement, TopologySpreadConstraint


def dump_config(config: KubeSchedulerConfiguration) -> dict[str, Any]:
    le = config.leader_election
    cc = config.client_connection
    out: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "clientConnection": {
            "acceptContentTypes": cc.accept_content_types,
            "burst": cc.burst,
            "contentType": cc.content_type,
            "kubeconfig": cc.kubeconfig,
            "qps": _number(cc.qps),
        },
        "enableContentionProfiling": config.enable_contention_profiling,
        "enableProfiling": config.enable_profiling,
        "leaderElection": {
            "leaderElect": le.leader_elect,
            "leaseDuration": format_seconds(le.lease_duration),
            "renewDeadline": format_seconds(le.renew_deadline),
            "resourceLock": le.resource_lock,
            "resourceName": le.resource_name,
            "resourceNamespace": le.resource_namespace,
            "retryPeriod": format_seconds(le.retry_period),
        },
        "parallelism": config.parallelism,
        "percentageOfNodesToScore": config.percentage_of_nodes_to_score,
        "podInitialBackoffSeconds": config.pod_initial_backoff_seconds,
        "podMaxBackoffSeconds": config.pod_max_backoff_seconds,
        "profiles": [dump_profile(p) for p in config.profiles],
    }
    if config.extenders:
        out["extenders"] = [dump_extender(e) for e in config.extenders]
    if config.delay_cache_until_active:
        out["delayCacheUntilActive"] = True
    ordered: dict[str, Any] = _sorted_keys(out)
    return ordered


def _sorted_keys(value: Any) -> Any:
    """Keys in alphabetical order at every level, as upstream's YAML output (lists keep order)."""
    if isinstance(value, dict):
        return {k: _sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(v) for v in value]
    return value


def _number(x: float) -> int | float:
    return int(x) if x.is_integer() else x


def dump_plugin_set(ps: PluginSet) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if ps.enabled:
        out["enabled"] = [{"name": p.name, "weight": p.weight} for p in ps.enabled]
    if ps.disabled:
        out["disabled"] = [{"name": p.name} for p in ps.disabled]
    return out


def dump_profile(profile: Profile) -> dict[str, Any]:
    out: dict[str, Any] = {"schedulerName": profile.scheduler_name}
    if profile.percentage_of_nodes_to_score is not None:
        out["percentageOfNodesToScore"] = profile.percentage_of_nodes_to_score
    out["plugins"] = {key: dump_plugin_set(ps) for key, ps in profile.plugins.items()}
    configs = []
    for name, args in profile.plugin_config.items():
        entry: dict[str, Any] = {"name": name}
        if args is not None:
            entry["args"] = dump_plugin_args(args)
        configs.append(entry)
    if configs:
        out["pluginConfig"] = configs
    return out


# ---------------------------------------------------------------- args
def _resources(resources: Sequence[ResourceSpec]) -> list[dict[str, Any]]:
    return [{"name": r.name, "weight": r.weight} for r in resources]


def _shape(shape: Sequence[UtilizationShapePoint]) -> list[dict[str, int]]:
    return [{"utilization": p.utilization, "score": p.score} for p in shape]


def _put_list(out: dict[str, Any], key: str, values: Sequence[Any]) -> None:
    if values:
        out[key] = list(values)


def dump_plugin_args(args: Any) -> Any:
    """Typed args -> v1 mapping with apiVersion and kind; anything else is returned as is."""
    body: dict[str, Any]
    if isinstance(args, DynamicResourcesArgs):
        body = {"bindingTimeout": format_seconds(args.binding_timeout), "filterTimeout": format_seconds(args.filter_timeout)}
    elif isinstance(args, DefaultPreemptionArgs):
        body = {
            "minCandidateNodesAbsolute": args.min_candidate_nodes_absolute,
            "minCandidateNodesPercentage": args.min_candidate_nodes_percentage,
        }
    elif isinstance(args, InterPodAffinityArgs):
        body = {
            "hardPodAffinityWeight": args.hard_pod_affinity_weight,
            "ignorePreferredTermsOfExistingPods": args.ignore_preferred_terms_of_existing_pods,
        }
    elif isinstance(args, NodeAffinityArgs):
        body = {}
        if args.added_affinity is not None:
            body["addedAffinity"] = dump_node_affinity(args.added_affinity)
    elif isinstance(args, NodeResourcesBalancedAllocationArgs):
        body = {}
        _put_list(body, "resources", _resources(args.resources))
    elif isinstance(args, NodeResourcesFitArgs):
        body = {}
        _put_list(body, "ignoredResources", args.ignored_resources)
        _put_list(body, "ignoredResourceGroups", args.ignored_resource_groups)
        ss = args.scoring_strategy
        strategy: dict[str, Any] = {}
        if ss.type:
            strategy["type"] = ss.type
        _put_list(strategy, "resources", _resources(ss.resources))
        if ss.requested_to_capacity_ratio is not None:
            rtcr: dict[str, Any] = {}
            _put_list(rtcr, "shape", _shape(ss.requested_to_capacity_ratio.shape))
            strategy["requestedToCapacityRatio"] = rtcr
        body["scoringStrategy"] = strategy
    elif isinstance(args, PodTopologySpreadArgs):
        body = {}
        _put_list(body, "defaultConstraints", [dump_topology_spread_constraint(c) for c in args.default_constraints])
        if args.defaulting_type:
            body["defaultingType"] = args.defaulting_type
    elif isinstance(args, VolumeBindingArgs):
        body = {"bindTimeoutSeconds": args.bind_timeout_seconds}
        _put_list(body, "shape", _shape(args.shape))
    elif isinstance(args, NodeLabelArgs):
        body = {}
        _put_list(body, "presentLabels", args.present_labels)
        _put_list(body, "absentLabels", args.absent_labels)
        _put_list(body, "presentLabelsPreference", args.present_labels_preference)
        _put_list(body, "absentLabelsPreference", args.absent_labels_preference)
    elif isinstance(args, ServiceAffinityArgs):
        body = {}
        _put_list(body, "affinityLabels", args.affinity_labels)
        _put_list(body, "antiAffinityLabelsPreference", args.anti_affinity_labels_preference)
    elif isinstance(args, RequestedToCapacityRatioArgs):
        body = {}
        _put_list(body, "shape", _shape(args.shape))
        _put_list(body, "resources", _resources(args.resources))
    else:
        return _plain(args)
    return {"apiVersion": API_VERSION, "kind": type(args).__name__, **body}


def _plain(value: Any) -> Any:
    """A deep copy of raw args made of plain dicts and lists."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _requirement(r: Requirement) -> dict[str, Any]:
    out: dict[str, Any] = {"key": r.key, "operator": r.operator}
    _put_list(out, "values", r.values)
    return out


def _term(t: NodeSelectorTerm) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _put_list(out, "matchExpressions", [_requirement(r) for r in t.match_expressions])
    _put_list(out, "matchFields", [_requirement(r) for r in t.match_fields])
    return out


def dump_node_affinity(affinity: NodeAffinity) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if affinity.required is not None:
        out["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [_term(t) for t in affinity.required.terms]
        }
    _put_list(
        out,
        "preferredDuringSchedulingIgnoredDuringExecution",
        [{"weight": p.weight, "preference": _term(p.preference)} for p in affinity.preferred],
    )
    return out


def dump_label_selector(selector: LabelSelector) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if selector.match_labels:
        out["matchLabels"] = dict(selector.match_labels)
    _put_list(out, "matchExpressions", [_requirement(r) for r in selector.match_expressions])
    return out


def dump_topology_spread_constraint(c: TopologySpreadConstraint) -> dict[str, Any]:
    out: dict[str, Any] = {
        "maxSkew": c.max_skew,
        "topologyKey": c.topology_key,
        "whenUnsatisfiable": c.when_unsatisfiable,
    }
    if c.label_selector is not None:
        out["labelSelector"] = dump_label_selector(c.label_selector)
    if c.min_domains is not None:
        out["minDomains"] = c.min_domains
    if c.node_affinity_policy is not None:
        out["nodeAffinityPolicy"] = c.node_affinity_policy
    if c.node_taints_policy is not None:
        out["nodeTaintsPolicy"] = c.node_taints_policy
    _put_list(out, "matchLabelKeys", c.match_label_keys)
    return out


# ---------------------------------------------------------------- extenders
def dump_extender(e: Extender) -> dict[str, Any]:
    out: dict[str, Any] = {"urlPrefix": e.url_prefix}
    for key, value in (
        ("filterVerb", e.filter_verb),
        ("preemptVerb", e.preempt_verb),
        ("prioritizeVerb", e.prioritize_verb),
        ("weight", e.weight),
        ("bindVerb", e.bind_verb),
        ("enableHTTPS", e.enable_https),
    ):
        if value:
            out[key] = value
    if e.tls_config is not None:
        t = e.tls_config
        tls: dict[str, Any] = {}
        for key, text in (
            ("insecure", t.insecure),
            ("serverName", t.server_name),
            ("certFile", t.cert_file),
            ("keyFile", t.key_file),
            ("caFile", t.ca_file),
        ):
            if text:
                tls[key] = text
        for key, data in (("certData", t.cert_data), ("keyData", t.key_data), ("caData", t.ca_data)):
            if data:
                tls[key] = base64.b64encode(data).decode("ascii")
        out["tlsConfig"] = tls
    out["httpTimeout"] = format_seconds(e.http_timeout)
    if e.node_cache_capable:
        out["nodeCacheCapable"] = True
    if e.managed_resources:
        out["managedResources"] = [
            {"name": r.name, **({"ignoredByScheduler": True} if r.ignored_by_scheduler else {})}
            for r in e.managed_resources
        ]
    if e.ignorable:
        out["ignorable"] = True
    return out
