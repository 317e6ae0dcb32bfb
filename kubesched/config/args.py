"""Plugin args (kubescheduler.config.k8s.io/v1 *Args kinds) as typed values.

Defaults are upstream v1.30's (apis/config/v1/defaults.go); parsing from YAML/JSON and
validation with field paths live in :mod:`kubesched.config.loader`. Plugins receive these
already validated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubesched.objects import NodeAffinity, TopologySpreadConstraint

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
# config.MaxCustomPriorityScore: shape scores are 0..10 (scaled by MaxNodeScore / 10 when scoring).
MAX_CUSTOM_PRIORITY_SCORE = 10


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """config/v1 ResourceSpec: a resource and its weight in scoring."""

    name: str
    weight: int = 1


@dataclass(frozen=True, slots=True)
class UtilizationShapePoint:
    """config/v1 UtilizationShapePoint: a point of RequestedToCapacityRatio's shape."""

    utilization: int
    score: int


@dataclass(frozen=True, slots=True)
class RequestedToCapacityRatioParam:
    """config/v1 RequestedToCapacityRatioParam: the scoring function's shape."""

    shape: tuple[UtilizationShapePoint, ...] = ()


DEFAULT_RESOURCES = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


@dataclass(frozen=True, slots=True)
class ScoringStrategy:
    """config/v1 ScoringStrategy of NodeResourcesFit: the type, resources and shape."""

    type: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None


@dataclass(frozen=True, slots=True)
class NodeResourcesFitArgs:
    """config/v1 NodeResourcesFitArgs."""

    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy = field(default_factory=ScoringStrategy)


@dataclass(frozen=True, slots=True)
class NodeResourcesBalancedAllocationArgs:
    """config/v1 NodeResourcesBalancedAllocationArgs."""

    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES


@dataclass(frozen=True, slots=True)
class NodeAffinityArgs:
    """config/v1 NodeAffinityArgs: the affinity added to every pod of the profile."""

    added_affinity: NodeAffinity | None = None


@dataclass(frozen=True, slots=True)
class InterPodAffinityArgs:
    """config/v1 InterPodAffinityArgs."""

    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False


SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"


@dataclass(frozen=True, slots=True)
class PodTopologySpreadArgs:
    """config/v1 PodTopologySpreadArgs: default constraints and how they are set."""

    default_constraints: tuple[TopologySpreadConstraint, ...] = ()
    defaulting_type: str = SYSTEM_DEFAULTING


@dataclass(frozen=True, slots=True)
class VolumeBindingArgs:
    """config/v1 VolumeBindingArgs."""

    bind_timeout_seconds: int = 600
    shape: tuple[UtilizationShapePoint, ...] = ()


@dataclass(frozen=True, slots=True)
class DefaultPreemptionArgs:
    """config/v1 DefaultPreemptionArgs: how many candidate nodes a dry run considers."""

    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100


@dataclass(frozen=True, slots=True)
class DynamicResourcesArgs:
    """DynamicResourcesArgs (v1, from 1.34): how long Filter may take per node and how long
    PreBind waits for a device's binding conditions (seconds)."""

    filter_timeout: float = 10.0
    binding_timeout: float = 600.0


# ---- legacy (Policy-era) plugin args --------------------------------------------------
@dataclass(frozen=True, slots=True)
class NodeLabelArgs:
    """NodeLabelArgs of the legacy NodeLabel plugin (a Policy's labels predicates and priorities)."""

    present_labels: tuple[str, ...] = ()
    absent_labels: tuple[str, ...] = ()
    present_labels_preference: tuple[str, ...] = ()
    absent_labels_preference: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ServiceAffinityArgs:
    """ServiceAffinityArgs of the legacy ServiceAffinity plugin."""

    affinity_labels: tuple[str, ...] = ()
    anti_affinity_labels_preference: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RequestedToCapacityRatioArgs:
    """RequestedToCapacityRatioArgs of the legacy plugin of that name."""

    shape: tuple[UtilizationShapePoint, ...] = ()
    resources: tuple[ResourceSpec, ...] = ()


# Args kind name (as in pluginConfig `args.kind`) -> type.
ARGS_KINDS: dict[str, type] = {
    "NodeResourcesFitArgs": NodeResourcesFitArgs,
    "NodeResourcesBalancedAllocationArgs": NodeResourcesBalancedAllocationArgs,
    "NodeAffinityArgs": NodeAffinityArgs,
    "InterPodAffinityArgs": InterPodAffinityArgs,
    "PodTopologySpreadArgs": PodTopologySpreadArgs,
    "VolumeBindingArgs": VolumeBindingArgs,
    "DefaultPreemptionArgs": DefaultPreemptionArgs,
    "NodeLabelArgs": NodeLabelArgs,
    "ServiceAffinityArgs": ServiceAffinityArgs,
    "RequestedToCapacityRatioArgs": RequestedToCapacityRatioArgs,
}


# ---- legacy (v1.21/v1.22) NodeResourcesLeastAllocated / NodeResourcesMostAllocated args ----
# v1beta1 SetDefaults_NodeResources{Least,Most}AllocatedArgs: cpu and memory, weight 1 each.
@dataclass(frozen=True, slots=True)
class NodeResourcesLeastAllocatedArgs:
    """NodeResourcesLeastAllocatedArgs of the legacy plugin of that name."""

    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES


@dataclass(frozen=True, slots=True)
class NodeResourcesMostAllocatedArgs:
    """NodeResourcesMostAllocatedArgs of the legacy plugin of that name."""

    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
