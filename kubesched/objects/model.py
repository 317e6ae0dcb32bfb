"""Typed Kubernetes objects, as the scheduler reads them.

Values are immutable (``frozen=True, slots=True``): a change in the cluster is a new object,
as in the API. Each object keeps the manifest it came from in ``raw`` (excluded from
comparison) so that it can be sent on the wire unchanged (extenders, live mode).
Resource amounts are integers in scheduler units: milli-CPU for ``cpu``, base units for
everything else (see quantity.scheduler_units).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kubesched.objects.labels import LabelSelector, Requirement

# Taint effects and toleration operators (core/v1).
NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"


@dataclass(frozen=True, slots=True)
class OwnerReference:
    """metav1.OwnerReference: the owner a pod's controller is found by."""

    api_version: str
    kind: str
    name: str
    uid: str = ""
    controller: bool = False


@dataclass(frozen=True, slots=True)
class ObjectMeta:
    """metav1.ObjectMeta: what the scheduler reads of an object's metadata."""

    name: str
    namespace: str = ""
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    creation_timestamp: float | None = None  # seconds since the epoch
    deletion_timestamp: float | None = None
    owner_references: tuple[OwnerReference, ...] = ()
    resource_version: str = ""

    def controller_ref(self) -> OwnerReference | None:
        """metav1.GetControllerOf."""
        for ref in self.owner_references:
            if ref.controller:
                return ref
        return None


@dataclass(frozen=True, slots=True)
class Taint:
    """core/v1 Taint of a node."""

    key: str
    value: str = ""
    effect: str = NO_SCHEDULE


@dataclass(frozen=True, slots=True)
class Toleration:
    """core/v1 Toleration of a pod."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        """core/v1 Toleration.ToleratesTaint."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("Equal", ""):
            return self.value == taint.value
        return False


def tolerations_tolerate_taint(tolerations: tuple[Toleration, ...], taint: Taint) -> bool:
    """v1helper.TolerationsTolerateTaint."""
    for t in tolerations:
        if t.tolerates(taint):
            return True
    return False


@dataclass(frozen=True, slots=True)
class ContainerPort:
    """core/v1 ContainerPort: a container's port, and the host port it takes."""

    container_port: int
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = ""


@dataclass(frozen=True, slots=True)
class Container:
    """core/v1 Container: its name, image, resources (requests defaulted to limits) and ports."""

    name: str
    image: str = ""
    # Exact quantities; a key is present only when the manifest (after defaulting) sets it,
    # because the scheduler's non-zero defaults apply only to *missing* keys.
    requests: Mapping[str, Fraction] = field(default_factory=dict)
    limits: Mapping[str, Fraction] = field(default_factory=dict)
    ports: tuple[ContainerPort, ...] = ()
    restart_policy: str | None = None

    @property
    def is_sidecar(self) -> bool:
        """A restartable init container (restartPolicy: Always)."""
        return self.restart_policy == "Always"


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """core/v1 NodeSelectorTerm: match expressions and match fields, ANDed."""

    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()

    def is_empty(self) -> bool:
        return not self.match_expressions and not self.match_fields


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """Required node affinity: OR of terms."""

    terms: tuple[NodeSelectorTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    """core/v1 PreferredSchedulingTerm: a weighted node selector term."""

    weight: int
    preference: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class NodeAffinity:
    """core/v1 NodeAffinity: required and preferred node selector terms."""

    required: NodeSelector | None = None
    preferred: tuple[PreferredSchedulingTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """core/v1 PodAffinityTerm: pods matching a selector in namespaces, within a topology key."""

    label_selector: LabelSelector | None
    topology_key: str
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    """core/v1 WeightedPodAffinityTerm: a preferred pod (anti-)affinity term."""

    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True)
class PodAffinity:
    """Used for both podAffinity and podAntiAffinity."""

    required: tuple[PodAffinityTerm, ...] = ()
    preferred: tuple[WeightedPodAffinityTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class Affinity:
    """core/v1 Affinity: node affinity, pod affinity and pod anti-affinity."""

    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    """core/v1 TopologySpreadConstraint of a pod."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Volume:
    """A pod volume. ``kind`` is the source's field name (persistentVolumeClaim,
    gcePersistentDisk, awsElasticBlockStore, rbd, iscsi, azureDisk, csi, ephemeral, ...);
    ``source`` is that field's content as written."""

    name: str
    kind: str
    source: Mapping[str, Any] = field(default_factory=dict)

    @property
    def claim_name(self) -> str | None:
        if self.kind == "persistentVolumeClaim":
            return str(self.source.get("claimName") or "")
        return None

    @property
    def read_only(self) -> bool:
        return bool(self.source.get("readOnly", False))


@dataclass(frozen=True, slots=True)
class PodClaimRef:
    """One entry of ``spec.resourceClaims`` (core/v1 PodResourceClaim): the pod's name for the
    claim and either an existing ResourceClaim's name or a ResourceClaimTemplate's."""

    name: str
    resource_claim_name: str = ""
    resource_claim_template_name: str = ""


@dataclass(frozen=True, slots=True)
class PodCondition:
    """core/v1 PodCondition (status.conditions)."""

    type: str
    status: str
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True, eq=False)
class Pod:
    """core/v1 Pod, read once: what scheduling uses of it, its requests computed, and the object as given."""

    meta: ObjectMeta
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    overhead: Mapping[str, Fraction] | None = None
    node_name: str = ""
    scheduler_name: str = "default-scheduler"
    priority: int = 0
    priority_class_name: str = ""
    preemption_policy: str = "PreemptLowerPriority"
    # None and {} differ: NodeAffinity's PreFilter skips only when nodeSelector is nil.
    node_selector: Mapping[str, str] | None = None
    affinity: Affinity | None = None
    tolerations: tuple[Toleration, ...] = ()
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    volumes: tuple[Volume, ...] = ()
    scheduling_gates: tuple[str, ...] = ()
    termination_grace_period_seconds: int = 30
    phase: str = "Pending"
    nominated_node_name: str = ""
    start_time: float | None = None
    conditions: tuple[PodCondition, ...] = ()
    # Derived once at construction (kubesched.objects.resources.compute_pod_resources).
    requests: Mapping[str, int] = field(default_factory=dict)
    non_zero_cpu: int = 0
    non_zero_memory: int = 0
    score_requests: Mapping[str, int] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)
    # The containers whose host ports the pod holds (GetHostPorts): the regular ones, and from
    # 1.36 (SidecarAccounting) the restartable init containers too. None: the regular ones.
    sidecar_ports: tuple[Container, ...] = ()
    # spec.resourceClaims, and status.resourceClaimStatuses (pod claim name -> the generated
    # ResourceClaim's name; "" when none was needed).
    resource_claims: tuple[PodClaimRef, ...] = ()
    resource_claim_statuses: Mapping[str, str] = field(default_factory=dict)
    # spec.schedulingGroup.podGroupName (GenericWorkload): the PodGroup (scheduling.k8s.io/
    # v1alpha2) of the pod's namespace it belongs to; None outside any group.
    scheduling_group: str | None = None

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def port_containers(self) -> tuple[Container, ...]:
        """Containers whose ``hostPort``s count: regular containers, then sidecars (1.36)."""
        return self.containers + self.sidecar_ports if self.sidecar_ports else self.containers

    @property
    def namespace(self) -> str:
        return self.meta.namespace

    @property
    def uid(self) -> str:
        return self.meta.uid

    @property
    def labels(self) -> Mapping[str, str]:
        return self.meta.labels

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.meta.namespace}/{self.meta.name}"

    @property
    def is_terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def is_terminating(self) -> bool:
        return self.meta.deletion_timestamp is not None

    def __repr__(self) -> str:
        return f"Pod({self.key}, node={self.node_name or '-'}, priority={self.priority})"


@dataclass(frozen=True, slots=True)
class ContainerImage:
    """core/v1 ContainerImage of a node's status: an image's names and size."""

    names: tuple[str, ...]
    size_bytes: int = 0


@dataclass(frozen=True, slots=True)
class NodeCondition:
    """core/v1 NodeCondition (status.conditions)."""

    type: str
    status: str


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    """core/v1 Node: labels, taints, capacity and allocatable in scheduler units, images, conditions."""

    meta: ObjectMeta
    unschedulable: bool = False
    taints: tuple[Taint, ...] = ()
    capacity: Mapping[str, int] = field(default_factory=dict)
    allocatable: Mapping[str, int] = field(default_factory=dict)
    images: tuple[ContainerImage, ...] = ()
    conditions: tuple[NodeCondition, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def labels(self) -> Mapping[str, str]:
        return self.meta.labels

    def __repr__(self) -> str:
        return f"Node({self.meta.name})"


@dataclass(frozen=True, slots=True, eq=False)
class PersistentVolume:
    """core/v1 PersistentVolume: what volume binding and the volume plugins read."""

    meta: ObjectMeta
    capacity: Mapping[str, int] = field(default_factory=dict)
    access_modes: tuple[str, ...] = ()
    storage_class_name: str = ""
    node_affinity: NodeSelector | None = None
    claim_ref: tuple[str, str] | None = None  # (namespace, name)
    kind: str = ""  # volume source field name (csi, gcePersistentDisk, ...)
    source: Mapping[str, Any] = field(default_factory=dict)
    volume_mode: str = "Filesystem"
    phase: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name


@dataclass(frozen=True, slots=True, eq=False)
class PersistentVolumeClaim:
    """core/v1 PersistentVolumeClaim: what volume binding and the volume plugins read."""

    meta: ObjectMeta
    access_modes: tuple[str, ...] = ()
    storage_class_name: str | None = None
    volume_name: str = ""
    requested_storage: int = 0
    selector: LabelSelector | None = None
    volume_mode: str = "Filesystem"
    phase: str = "Pending"
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def namespace(self) -> str:
        return self.meta.namespace

    @property
    def class_name(self) -> str:
        """storagehelpers.GetPersistentVolumeClaimClass: the beta annotation wins."""
        ann = self.meta.annotations.get("volume.beta.kubernetes.io/storage-class")
        if ann is not None:
            return ann
        return self.storage_class_name or ""

    @property
    def is_bound(self) -> bool:
        """Bound as kube-scheduler requires: volumeName set and bind-completed annotated."""
        return bool(self.volume_name) and "pv.kubernetes.io/bind-completed" in self.meta.annotations


@dataclass(frozen=True, slots=True)
class TopologySelectorTerm:
    """One allowedTopologies term: key -> allowed values, all must match."""

    match_label_expressions: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class StorageClass:
    """storage/v1 StorageClass: provisioner, binding mode and allowed topologies."""

    meta: ObjectMeta
    provisioner: str = ""
    volume_binding_mode: str | None = "Immediate"
    allowed_topologies: tuple[TopologySelectorTerm, ...] = ()
    parameters: Mapping[str, str] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name


@dataclass(frozen=True, slots=True)
class CSINodeDriver:
    """storage/v1 CSINodeDriver: a CSI driver on a node and its volume limit."""

    name: str
    node_id: str = ""
    allocatable_count: int | None = None
    topology_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class CSINode:
    """storage/v1 CSINode: the CSI drivers of one node."""

    meta: ObjectMeta
    drivers: tuple[CSINodeDriver, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name


@dataclass(frozen=True, slots=True, eq=False)
class CSIDriver:
    """storage/v1 CSIDriver: what the volume plugins read of a CSI driver."""

    meta: ObjectMeta
    attach_required: bool = True
    storage_capacity: bool = False
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name


@dataclass(frozen=True, slots=True, eq=False)
class PriorityClass:
    """scheduling/v1 PriorityClass: the priority a pod naming it gets."""

    meta: ObjectMeta
    value: int
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name


@dataclass(frozen=True, slots=True, eq=False)
class PodDisruptionBudget:
    """policy/v1 PodDisruptionBudget: its selector and the disruptions it allows."""

    meta: ObjectMeta
    selector: LabelSelector | None = None
    disruptions_allowed: int = 0
    disrupted_pods: frozenset[str] = frozenset()
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def namespace(self) -> str:
        return self.meta.namespace


@dataclass(frozen=True, slots=True, eq=False)
class Service:
    """core/v1 Service: its selector (SelectorSpread and the default spreading read it)."""

    meta: ObjectMeta
    selector: Mapping[str, str] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def namespace(self) -> str:
        return self.meta.namespace


@dataclass(frozen=True, slots=True, eq=False)
class Workload:
    """ReplicaSet, StatefulSet or ReplicationController: what default spreading needs.

    ``selector`` is a LabelSelector for ReplicaSet/StatefulSet; a ReplicationController's
    map selector is turned into matchLabels."""

    kind: str
    meta: ObjectMeta
    selector: LabelSelector | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def namespace(self) -> str:
        return self.meta.namespace


@dataclass(frozen=True, slots=True, eq=False)
class Namespace:
    """core/v1 Namespace: its labels (pod affinity's namespace selectors read them)."""

    meta: ObjectMeta
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def labels(self) -> Mapping[str, str]:
        return self.meta.labels
