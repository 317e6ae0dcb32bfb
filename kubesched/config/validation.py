"""Validation of a defaulted configuration, with upstream's field paths and wording.

Mirrors pkg/scheduler/apis/config/validation/validation.go (ValidateKubeSchedulerConfiguration,
validateKubeSchedulerProfile, validatePluginConfig, validateCommonQueueSort, validateExtenders)
and validation_pluginargs.go (Validate*Args) of v1.30, plus component-base's client
connection / leader election checks. All errors are collected in upstream's order; one error
is reported as ``path: message``, several as Go's aggregate ``[e1, e2]``.

Differences from upstream, on purpose:
- NodeResourcesFit args are validated here with their full path (upstream's table keys them
  as "NodeResourcesFitArgs", so kube-scheduler only validates them when the plugin is built,
  without a path prefix).
- ``scoringStrategy.type: RequestedToCapacityRatio`` without ``requestedToCapacityRatio`` is
  rejected (Required) instead of crashing the plugin (upstream added this check in 1.34).
- Legacy (Policy-era) args kinds are validated as their v1beta1 validators did.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubesched.config import _field as f
from kubesched.config._duration import format_seconds
from kubesched.config.args import (
    LEAST_ALLOCATED,
    LIST_DEFAULTING,
    MAX_CUSTOM_PRIORITY_SCORE,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    SYSTEM_DEFAULTING,
    DefaultPreemptionArgs,
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
    EXTENSION_POINTS,
    Extender,
    KubeSchedulerConfiguration,
    PluginSet,
    Profile,
)
from kubesched.errors import ConfigError, FieldError

SUPPORTED_SCORING_STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

# Plugin name -> the args type its config must have (validatePluginConfig's table, by name).
ARGS_TYPE_BY_PLUGIN: dict[str, type] = {
    "DefaultPreemption": DefaultPreemptionArgs,
    "InterPodAffinity": InterPodAffinityArgs,
    "NodeAffinity": NodeAffinityArgs,
    "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocationArgs,
    "NodeResourcesFit": NodeResourcesFitArgs,
    "PodTopologySpread": PodTopologySpreadArgs,
    "VolumeBinding": VolumeBindingArgs,
    "NodeLabel": NodeLabelArgs,
    "ServiceAffinity": ServiceAffinityArgs,
    "RequestedToCapacityRatio": RequestedToCapacityRatioArgs,
}


def raise_errors(errors: Sequence[FieldError], file: str | None = None) -> None:
    """Raise ConfigError for ``errors`` (if any): ``path: message`` for one, else the Go
    aggregate form ``[path: message, path: message]``."""
    if not errors:
        return
    if len(errors) == 1:
        raise ConfigError(errors[0].message, file=file, field=errors[0].path)
    raise ConfigError("[" + ", ".join(str(e) for e in errors) + "]", file=file)


def validate_configuration(config: KubeSchedulerConfiguration, *, file: str | None = None) -> None:
    """ValidateKubeSchedulerConfiguration; raises ConfigError."""
    raise_errors(configuration_errors(config), file)


def configuration_errors(cc: KubeSchedulerConfiguration) -> list[FieldError]:
    errs: list[FieldError] = []
    if cc.client_connection.burst < 0:
        errs.append(f.invalid("clientConnection.burst", cc.client_connection.burst, "must be non-negative"))
    errs.extend(_leader_election_errors(cc))
    le = cc.leader_election
    if le.leader_elect and le.resource_lock != "leases":
        errs.append(f.invalid("leaderElection.resourceLock", le.resource_lock, 'resourceLock value must be "leases"'))
    if cc.parallelism <= 0:
        errs.append(f.invalid("parallelism", cc.parallelism, "should be an integer value greater than zero"))

    if not cc.profiles:
        errs.append(f.required("profiles"))
    else:
        seen: dict[str, int] = {}
        for i, prof in enumerate(cc.profiles):
            path = f"profiles[{i}]"
            errs.extend(profile_errors(prof, path))
            if cc.features.enabled("InTreeVolumeLimitsRemoved"):
                errs.extend(_invalid_plugin_errors(prof, path))
            if prof.scheduler_name in seen:
                errs.append(
                    f.duplicate(f"{path}.schedulerName", f"profiles[{seen[prof.scheduler_name]}].schedulerName")
                )
            seen[prof.scheduler_name] = i
        errs.extend(_common_queue_sort_errors(cc.profiles))

    errs.extend(_percentage_errors("percentageOfNodesToScore", cc.percentage_of_nodes_to_score))
    if cc.pod_initial_backoff_seconds <= 0:
        errs.append(f.invalid("podInitialBackoffSeconds", cc.pod_initial_backoff_seconds, "must be greater than 0"))
    if cc.pod_max_backoff_seconds < cc.pod_initial_backoff_seconds:
        errs.append(
            f.invalid(
                "podMaxBackoffSeconds",
                cc.pod_max_backoff_seconds,
                "must be greater than or equal to PodInitialBackoffSeconds",
            )
        )
    errs.extend(extender_errors(cc.extenders))
    return errs


# invalidPluginsByVersion (validation.go, from 1.31): plugins removed from kubescheduler.config.k8s.io/v1.
INVALID_V1_PLUGINS = ("AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits")


def _invalid_plugin_errors(prof: Profile, path: str) -> list[FieldError]:
    """validatePluginSetForInvalidPlugins over every extension point of the profile."""
    errs: list[FieldError] = []
    for attr, key in EXTENSION_POINTS:
        for j, ref in enumerate(getattr(prof.plugins, attr).enabled):
            if ref.name in INVALID_V1_PLUGINS:
                errs.append(f.invalid(f"{path}.plugins.{key}.enabled[{j}]", ref.name,
                                      f'was invalid in version "{API_VERSION}" (KubeSchedulerConfiguration is '
                                      f'version "{API_VERSION}")'))
    return errs


def _leader_election_errors(cc: KubeSchedulerConfiguration) -> list[FieldError]:
    """component-base ValidateLeaderElectionConfiguration."""
    le = cc.leader_election
    if not le.leader_elect:
        return []
    errs = []
    p = "leaderElection"

    def dur(seconds: float) -> f.GoLiteral:
        return f.GoLiteral(format_seconds(seconds))

    if le.lease_duration <= 0:
        errs.append(f.invalid(f"{p}.leaseDuration", dur(le.lease_duration), "must be greater than zero"))
    if le.renew_deadline <= 0:
        errs.append(f.invalid(f"{p}.renewDeadline", dur(le.renew_deadline), "must be greater than zero"))
    if le.retry_period <= 0:
        errs.append(f.invalid(f"{p}.retryPeriod", dur(le.retry_period), "must be greater than zero"))
    if le.lease_duration <= le.renew_deadline:
        errs.append(f.invalid(f"{p}.leaseDuration", dur(le.renew_deadline), "must be greater than `RenewDeadline`"))
    if not le.resource_lock:
        errs.append(f.required(f"{p}.resourceLock"))
    if not le.resource_namespace:
        errs.append(f.required(f"{p}.resourceNamespace"))
    if not le.resource_name:
        errs.append(f.required(f"{p}.resourceName"))
    return errs


def _percentage_errors(path: str, value: int | None) -> list[FieldError]:
    if value is not None and not 0 <= value <= 100:
        return [f.invalid(path, value, "not in valid range [0-100]")]
    return []


def profile_errors(profile: Profile, path: str) -> list[FieldError]:
    """validateKubeSchedulerProfile + validatePluginConfig (v1.30 has no removed plugins for
    v1, so no "was invalid in version" check applies)."""
    errs: list[FieldError] = []
    if not profile.scheduler_name:
        errs.append(f.required(f"{path}.schedulerName"))
    errs.extend(_percentage_errors(f"{path}.percentageOfNodesToScore", profile.percentage_of_nodes_to_score))
    for j, (name, args) in enumerate(profile.plugin_config.items()):
        args_path = f"{path}.pluginConfig[{j}].args"
        want = ARGS_TYPE_BY_PLUGIN.get(name)
        if want is None:
            continue
        if not isinstance(args, want):
            errs.append(f.invalid(args_path, f.GoLiteral(type(args).__name__), "has to match plugin args"))
            continue
        errs.extend(plugin_args_errors(args, args_path))
    return errs


def _plugin_set_value(ps: PluginSet) -> dict[str, Any]:
    return {
        "enabled": [{"name": p.name, "weight": p.weight} for p in ps.enabled],
        "disabled": [{"name": p.name} for p in ps.disabled],
    }


def _common_queue_sort_errors(profiles: Sequence[Profile]) -> list[FieldError]:
    """validateCommonQueueSort: every profile must configure the same QueueSort set (and the
    same args for profile 0's queue sort plugin). Only the explicit queueSort sets are
    compared, as upstream (MultiPoint-enabled queue sorts are not)."""
    errs: list[FieldError] = []
    canon = profiles[0].plugins.queue_sort
    queue_sort_name = canon.enabled[0].name if canon.enabled else ""
    if len(canon.enabled) > 1:
        errs.append(
            f.invalid(
                "profiles[0].plugins.queueSort.Enabled", len(canon.enabled), "only one queue sort plugin can be enabled"
            )
        )
    queue_sort_args = profiles[0].plugin_config.get(queue_sort_name) if queue_sort_name else None
    for i in range(1, len(profiles)):
        curr = profiles[i].plugins.queue_sort
        if curr != canon:
            errs.append(
                f.invalid(
                    f"profiles[{i}].plugins.queueSort", _plugin_set_value(curr), "must be the same for all profiles"
                )
            )
        for name, args in profiles[i].plugin_config.items():
            if queue_sort_name and name == queue_sort_name and args != queue_sort_args:
                errs.append(
                    f.invalid(
                        f"profiles[{i}].pluginConfig.args",
                        f.GoLiteral(repr(args)),
                        "queueSort must be the same for all profiles",
                    )
                )
    return errs


# ---------------------------------------------------------------- extenders
def _is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName."""
    native = "/" not in name or "kubernetes.io/" in name
    if native or name.startswith("requests."):
        return False
    return not f.is_qualified_name("requests." + name)


def extender_errors(extenders: Sequence[Extender], path: str = "extenders") -> list[FieldError]:
    """validateExtenders (facts 8)."""
    errs: list[FieldError] = []
    binders = 0
    managed: set[str] = set()
    for i, ext in enumerate(extenders):
        p = f"{path}[{i}]"
        if ext.prioritize_verb and ext.weight <= 0:
            errs.append(f.invalid(f"{p}.weight", ext.weight, "must have a positive weight applied to it"))
        if ext.bind_verb:
            binders += 1
        for j, res in enumerate(ext.managed_resources):
            rp = f"{p}.managedResources[{j}].name"
            name_errs = [f.invalid(rp, res.name, msg) for msg in f.is_qualified_name(res.name)]
            if not name_errs and not _is_extended_resource_name(res.name):
                name_errs.append(f.invalid(rp, res.name, "is an invalid extended resource name"))
            errs.extend(name_errs)
            if res.name in managed:
                errs.append(f.invalid(rp, res.name, "duplicate extender managed resource name"))
            managed.add(res.name)
    if binders > 1:
        errs.append(
            f.invalid(path, f"found {binders} extenders implementing bind", "only one extender can implement bind")
        )
    return errs


# ---------------------------------------------------------------- plugin args
def plugin_args_errors(args: object, path: str = "") -> list[FieldError]:
    """The Validate<Kind>Args check for a typed args value (paths below ``path``)."""
    if isinstance(args, DefaultPreemptionArgs):
        return _default_preemption(args, path)
    if isinstance(args, InterPodAffinityArgs):
        return _hard_pod_affinity_weight(args.hard_pod_affinity_weight, f.child(path, "hardPodAffinityWeight"))
    if isinstance(args, PodTopologySpreadArgs):
        return _pod_topology_spread(args, path)
    if isinstance(args, NodeResourcesBalancedAllocationArgs):
        return _balanced_allocation(args, path)
    if isinstance(args, VolumeBindingArgs):
        return _volume_binding(args, path)
    if isinstance(args, NodeResourcesFitArgs):
        return _node_resources_fit(args, path)
    if isinstance(args, RequestedToCapacityRatioArgs):
        errs = _function_shape(args.shape, f.child(path, "shape"))
        rp = f.child(path, "resources")
        for i, r in enumerate(args.resources):
            if r.weight < 1:
                msg = f"resource weight of {r.name} not in valid range [1, inf)"
                errs.append(f.invalid(f"{rp}[{i}].weight", r.weight, msg))
        return errs
    if isinstance(args, NodeLabelArgs):
        return _no_conflict(
            args.present_labels, args.absent_labels, f.child(path, "presentLabels"), f.child(path, "absentLabels")
        ) + _no_conflict(
            args.present_labels_preference,
            args.absent_labels_preference,
            f.child(path, "presentLabelsPreference"),
            f.child(path, "absentLabelsPreference"),
        )
    # NodeAffinityArgs are checked while parsing (nodeaffinity.NewNodeSelector);
    # ServiceAffinityArgs had no validation.
    return []


def validate_plugin_args(args: object, path: str = "") -> None:
    """Raise ConfigError if ``args`` is invalid (for args built in code)."""
    raise_errors(plugin_args_errors(args, path))


def _default_preemption(args: DefaultPreemptionArgs, path: str) -> list[FieldError]:
    errs = []
    pp = f.child(path, "minCandidateNodesPercentage")
    ap = f.child(path, "minCandidateNodesAbsolute")
    pct, absolute = args.min_candidate_nodes_percentage, args.min_candidate_nodes_absolute
    if not 0 <= pct <= 100:
        errs.append(f.invalid(pp, pct, "not in valid range [0, 100]"))
    if absolute < 0:
        errs.append(f.invalid(ap, absolute, "not in valid range [0, inf)"))
    if pct == 0 and absolute == 0:
        errs.append(f.invalid(pp, pct, "cannot be zero at the same time as minCandidateNodesAbsolute"))
        errs.append(f.invalid(ap, absolute, "cannot be zero at the same time as minCandidateNodesPercentage"))
    return errs


def _hard_pod_affinity_weight(w: int, path: str) -> list[FieldError]:
    if not 0 <= w <= 100:
        return [f.invalid(path, w, "not in valid range [0, 100]")]
    return []


def _pod_topology_spread(args: PodTopologySpreadArgs, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    dp = f.child(path, "defaultingType")
    if args.defaulting_type not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        errs.append(f.not_supported(dp, args.defaulting_type, (SYSTEM_DEFAULTING, LIST_DEFAULTING)))
    elif args.defaulting_type == SYSTEM_DEFAULTING and args.default_constraints:
        errs.append(f.invalid(dp, args.defaulting_type, "when .defaultConstraints are not empty"))
    cp = f.child(path, "defaultConstraints")
    for i, c in enumerate(args.default_constraints):
        p = f"{cp}[{i}]"
        if c.max_skew <= 0:
            errs.append(f.invalid(f"{p}.maxSkew", c.max_skew, "not in valid range (0, inf)"))
        if not c.topology_key:
            errs.append(f.required(f"{p}.topologyKey", "can not be empty"))
        else:
            errs.extend(f.validate_label_name(c.topology_key, f"{p}.topologyKey"))
        if not c.when_unsatisfiable:
            errs.append(f.required(f"{p}.whenUnsatisfiable", "can not be empty"))
        elif c.when_unsatisfiable not in ("DoNotSchedule", "ScheduleAnyway"):
            errs.append(
                f.not_supported(f"{p}.whenUnsatisfiable", c.when_unsatisfiable, ("DoNotSchedule", "ScheduleAnyway"))
            )
        if c.label_selector is not None:
            errs.append(
                f.forbidden(f"{p}.labelSelector", "constraint must not define a selector, as they deduced for each pod")
            )
        for other in args.default_constraints[:i]:
            if c.topology_key == other.topology_key and c.when_unsatisfiable == other.when_unsatisfiable:
                errs.append(f.duplicate(p, f"{{{c.topology_key}, {c.when_unsatisfiable}}}"))
                break
    return errs


def _balanced_allocation(args: NodeResourcesBalancedAllocationArgs, path: str) -> list[FieldError]:
    errs = []
    seen: set[str] = set()
    rp = f.child(path, "resources")
    for i, r in enumerate(args.resources):
        if r.name in seen:
            errs.append(f.duplicate(f"{rp}[{i}].name", r.name))
        else:
            seen.add(r.name)
        if r.weight != 1:
            errs.append(f.invalid(f"{rp}[{i}].weight", r.weight, "must be 1"))
    return errs


def _volume_binding(args: VolumeBindingArgs, path: str) -> list[FieldError]:
    errs = []
    if args.bind_timeout_seconds < 0:
        errs.append(
            f.invalid(
                f.child(path, "bindTimeoutSeconds"),
                args.bind_timeout_seconds,
                "invalid BindTimeoutSeconds, should not be a negative value",
            )
        )
    # The VolumeCapacityPriority gate is off in 1.30: a shape must not be configured.
    if args.shape:
        errs.append(
            f.invalid(
                f.child(path, "shape"),
                _shape_value(args.shape),
                "unexpected field `shape`, remove it or turn on the feature gate VolumeCapacityPriority",
            )
        )
    return errs


def _shape_value(shape: Sequence[UtilizationShapePoint]) -> list[dict[str, int]]:
    return [{"utilization": p.utilization, "score": p.score} for p in shape]


def _function_shape(shape: Sequence[UtilizationShapePoint], path: str) -> list[FieldError]:
    """validateFunctionShape."""
    if not shape:
        return [f.required(path, "at least one point must be specified")]
    errs = []
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            errs.append(
                f.invalid(
                    f"{path}[{i}].utilization",
                    shape[i].utilization,
                    "utilization values must be sorted in increasing order",
                )
            )
            break
    for i, point in enumerate(shape):
        if not 0 <= point.utilization <= 100:
            errs.append(f.invalid(f"{path}[{i}].utilization", point.utilization, "not in valid range [0, 100]"))
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            errs.append(
                f.invalid(f"{path}[{i}].score", point.score, f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")
            )
    return errs


def _resources(resources: Sequence[ResourceSpec], path: str) -> list[FieldError]:
    """validateResources: weights in (0, 100]."""
    errs = []
    for i, r in enumerate(resources):
        if not 0 < r.weight <= 100:
            errs.append(
                f.invalid(f"{path}[{i}].weight", r.weight, f"resource weight of {r.name} not in valid range (0, 100]")
            )
    return errs


def _node_resources_fit(args: NodeResourcesFitArgs, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    rp = f.child(path, "ignoredResources")
    for i, res in enumerate(args.ignored_resources):
        errs.extend(f.validate_label_name(res, f"{rp}[{i}]"))
    gp = f.child(path, "ignoredResourceGroups")
    for i, group in enumerate(args.ignored_resource_groups):
        if "/" in group:
            errs.append(f.invalid(f"{gp}[{i}]", group, "resource group name can't contain '/'"))
        errs.extend(f.validate_label_name(group, f"{gp}[{i}]"))
    sp = f.child(path, "scoringStrategy")
    strategy = args.scoring_strategy
    if strategy.type not in SUPPORTED_SCORING_STRATEGIES:
        errs.append(f.not_supported(f"{sp}.type", strategy.type, SUPPORTED_SCORING_STRATEGIES))
    errs.extend(_resources(strategy.resources, f"{sp}.resources"))
    if strategy.requested_to_capacity_ratio is not None:
        # v1.30 reports shape errors under scoringStrategy.shape.
        errs.extend(_function_shape(strategy.requested_to_capacity_ratio.shape, f"{sp}.shape"))
    elif strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        errs.append(
            f.required(f"{sp}.requestedToCapacityRatio", "must be specified when type is RequestedToCapacityRatio")
        )
    return errs


def _no_conflict(
    present: Sequence[str], absent: Sequence[str], present_path: str, absent_path: str
) -> list[FieldError]:
    """validateNoConflict (legacy NodeLabelArgs)."""
    where = {label: i for i, label in enumerate(present)}
    errs = []
    for i, label in enumerate(absent):
        j = where.get(label)
        if j is not None:
            errs.append(f.invalid(f"{present_path}[{j}]", label, f"conflict with {absent_path}[{i}]"))
    return errs
