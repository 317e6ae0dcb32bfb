"""Typed Kubernetes objects parsed once from manifests."""

from kubesched.objects.labels import LabelSelector, Requirement
from kubesched.objects.manifests import ClusterObjects, Source, load_manifests
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
    tolerations_tolerate_taint,
)
from kubesched.objects.podgroups import PodGroup, SchedulingWorkload
from kubesched.objects.quantity import parse_quantity

__all__ = [
    "Affinity", "CSIDriver", "CSINode", "CSINodeDriver", "ClusterObjects", "Container", "ContainerImage",
    "ContainerPort", "LabelSelector", "Namespace", "Node", "NodeAffinity", "NodeCondition", "NodeSelector",
    "NodeSelectorTerm", "ObjectMeta", "OwnerReference", "PersistentVolume", "PersistentVolumeClaim", "Pod",
    "PodAffinity", "PodAffinityTerm", "PodCondition", "PodDisruptionBudget", "PodGroup", "PreferredSchedulingTerm",
    "PriorityClass", "Requirement", "SchedulingWorkload", "Service", "Source", "StorageClass", "Taint", "Toleration",
    "TopologySelectorTerm", "TopologySpreadConstraint", "Volume", "WeightedPodAffinityTerm", "Workload",
    "load_manifests", "parse_quantity", "tolerations_tolerate_taint",
]
