"""What the framework gives a plugin at construction: the Handle (framework.Handle)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from kubesched.features import Features
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.nodetable import NodeTable
from kubesched.framework.status import Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.objects import (
    CSIDriver,
    CSINode,
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    PodGroup,
    Service,
    StorageClass,
    Workload,
)
from kubesched.objects.devices import DeviceClass, ResourceClaim, ResourceSlice


class NodeInfoLister(Protocol):
    """The cycle's snapshot of nodes (framework.NodeInfoLister)."""

    def list(self) -> Sequence[NodeInfo]:
        """All nodes, in the snapshot's (zone-interleaved) order."""
        ...

    def get(self, name: str) -> NodeInfo | None: ...

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]: ...

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]: ...

    @property
    def table(self) -> NodeTable: ...


class ObjectLister(Protocol):
    """Read access to the cluster's other objects (the informers' listers)."""

    def pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None: ...

    def pv(self, name: str) -> PersistentVolume | None: ...

    def pvs(self) -> Sequence[PersistentVolume]: ...

    def storage_class(self, name: str) -> StorageClass | None: ...

    def csinode(self, name: str) -> CSINode | None: ...

    def csidriver(self, name: str) -> CSIDriver | None: ...

    def services(self, namespace: str) -> Sequence[Service]: ...

    def workloads(self, namespace: str) -> Sequence[Workload]: ...

    def namespace(self, name: str) -> Namespace | None: ...

    def namespaces(self) -> Sequence[Namespace]: ...

    def pdbs(self) -> Sequence[PodDisruptionBudget]: ...

    def pod(self, namespace: str, name: str) -> Pod | None: ...

    def pods(self, namespace: str) -> Sequence[Pod]:
        """Every pod of the namespace as the API server has it (pending and bound; not
        the scheduler's assumed state), e.g. to count the members of a pod group."""
        ...

    # The workload API (scheduling.k8s.io/v1alpha2, GenericWorkload): the PodGroup lister.
    def pod_group(self, namespace: str, name: str) -> PodGroup | None: ...

    def pod_groups(self, namespace: str) -> Sequence[PodGroup]: ...

    # Dynamic Resource Allocation (resource.k8s.io/v1): the SharedDRAManager's listers.
    def resource_claim(self, namespace: str, name: str) -> ResourceClaim | None: ...

    def resource_claims(self) -> Sequence[ResourceClaim]: ...

    def device_classes(self) -> Mapping[str, DeviceClass]: ...

    def resource_slices(self) -> Sequence[ResourceSlice]: ...

    def extended_resource_classes(self) -> Mapping[str, DeviceClass]:
        """The DeviceClassResolver (DRAExtendedResource): extended resource name -> the
        DeviceClass serving it, as the ExtendedResourceCache knows them. Upstream fills that
        cache only from DeviceClass informer events."""
        ...


class PodNominator(Protocol):
    """Nominated pods per node (the queue's nominator)."""

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]: ...

    def add(self, pod_info: PodInfo, node_name: str) -> None:
        """Nominate the pod to ``node_name`` (replacing any earlier nomination)."""
        ...

    def delete(self, pod: Pod) -> None: ...

    def nominated_node(self, pod: Pod) -> str: ...

    def nominated_node_names(self) -> list[str]:
        """Nodes that have at least one nominated pod."""
        ...

    def nominated_items(self) -> list[tuple[str, list[PodInfo]]]:
        """(node, its nominated pods) for every node that has some: the nominator's own lists,
        not copies (a read per cycle over every nominated node, as addNominatedPods and the
        preemption dry run make); callers must not change them."""
        ...

    def __bool__(self) -> bool:
        """True if any pod is nominated."""
        ...


class WaitingPod(Protocol):
    """A pod held at Permit (framework.WaitingPod)."""

    @property
    def pod(self) -> Pod: ...

    def pending_plugins(self) -> list[str]:
        """Plugins the pod is still waiting on."""
        ...

    def allow(self, plugin: str) -> None:
        """This plugin lets the pod go; it is bound once every waiting plugin allowed it."""
        ...

    def reject(self, plugin: str, message: str) -> None:
        """Reject the pod: it is unreserved and goes back to the queue."""
        ...


class PodGroupState(Protocol):
    """fwk.PodGroupState: what the scheduler knows of a pod group's pods (backend/cache's
    podGroupState). Pods are keyed by UID; a pod is unscheduled (pending, neither assumed nor
    bound), assumed (past Reserve, waiting to bind) or assigned (bound)."""

    def all_pods(self) -> set[str]: ...

    def all_pods_count(self) -> int: ...

    def unscheduled_pods(self) -> dict[str, Pod]:
        """The unscheduled pods by name (the map Handle.Activate takes)."""
        ...

    def assumed_pods(self) -> set[str]: ...

    def assigned_pods(self) -> set[str]: ...

    def scheduled_pods(self) -> list[Pod]:
        """The assigned pods, then the assumed ones."""
        ...

    def scheduled_pods_count(self) -> int:
        """Assumed plus assigned."""
        ...


class PodGroupStateLister(Protocol):
    """fwk.PodGroupStateLister."""

    def get(self, namespace: str, name: str) -> PodGroupState | None:
        """The group's state, None when the scheduler knows none of its pods (upstream: an
        error "pod group state not found for pod group <namespace>/<name>")."""
        ...


class NodeInfoGetter(Protocol):
    """What extender preemption needs of the snapshot (a NodeInfoLister is one)."""

    def get(self, name: str) -> NodeInfo | None: ...


class ExtenderVictims(Protocol):
    """extenderv1.Victims: the pods to evict on one node, and how many violate a PDB."""

    @property
    def pods(self) -> Sequence[Pod]: ...

    @property
    def num_pdb_violations(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Binding:
    """The v1.Binding kube-scheduler hands an extender binder (extendersBinding)."""

    namespace: str
    name: str
    uid: str
    node: str

    @staticmethod
    def for_pod(pod: Pod, node: str) -> Binding:
        return Binding(pod.namespace, pod.name, pod.uid, node)


@runtime_checkable
class Extender(Protocol):
    """framework.Extender: an HTTP scheduler extender (``extenders:`` in the configuration) as
    the scheduler and plugins see it. ``kubesched.extender.HTTPExtender`` implements it; any
    object with these methods works the same way. Failed calls raise
    :class:`kubesched.errors.KubeschedError` (``ApiError``)."""

    def name(self) -> str:
        """The extender's name (its URL prefix for HTTPExtender)."""
        ...

    def is_filter(self) -> bool: ...

    def is_prioritizer(self) -> bool: ...

    def is_binder(self) -> bool: ...

    def supports_preemption(self) -> bool: ...

    def is_ignorable(self) -> bool:
        """True if the scheduler may go on without this extender when a call fails."""
        ...

    def is_interested(self, pod: Pod) -> bool:
        """False for pods the extender does not manage (managedResources): it is not called."""
        ...

    def filter(self, pod: Pod, nodes: Sequence[Node]) -> tuple[list[Node], dict[str, str], dict[str, str]]:
        """(nodes kept, FailedNodes, FailedAndUnresolvableNodes)."""
        ...

    def prioritize(self, pod: Pod, nodes: Sequence[Node]) -> tuple[list[tuple[str, int]], int]:
        """([(node, score 0..10)], weight)."""
        ...

    def bind(self, binding: Binding) -> None: ...

    def process_preemption(self, pod: Pod, node_name_to_victims: Mapping[str, ExtenderVictims],
                           node_infos: NodeInfoGetter) -> Mapping[str, ExtenderVictims]:
        """The candidates (node -> victims) the extender agrees with, possibly changed."""
        ...


class Handle(Protocol):
    """Passed to every plugin factory: ``new(args, handle)``."""

    @property
    def snapshot(self) -> NodeInfoLister:
        """The current cycle's node snapshot."""
        ...

    @property
    def objects(self) -> ObjectLister: ...

    @property
    def nominator(self) -> PodNominator: ...

    def run_filter_plugins_with_nominated_pods(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Run the profile's filters with nominated pods accounted for (used by preemption)."""
        ...

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: Pod, pod_info: PodInfo, node_info: NodeInfo) -> Status | None: ...

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: Pod, pod_info: PodInfo, node_info: NodeInfo) -> Status | None: ...

    def plugins_at(self, extension_point: str) -> Sequence[Any]:
        """The profile's plugins at an extension point ("PreFilter", "Filter", ...), in the
        order they run (DefaultPreemption reads the Filter chain to decide its fast path)."""
        ...

    def bind_pod(self, pod: Pod, node_name: str) -> None:
        """Ask the cluster to bind (DefaultBinder). Raises ApiError on failure."""
        ...

    def delete_pod(self, pod: Pod, reason: str, preemptor: Pod | None = None) -> None:
        """Delete a pod (preemption victims; ``preemptor`` names who preempts it). Raises
        ApiError on failure."""
        ...

    def run_async(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` in the background, as upstream's goroutines (async preemption): after
        the current scheduling cycle in the simulators, on a worker thread in `run`."""
        ...

    def activate(self, pods: Sequence[Pod]) -> None:
        """Handle.Activate: move these pending pods to activeQ."""
        ...

    def update_resource_claim(self, claim: ResourceClaim) -> None:
        """Write a ResourceClaim's status (DynamicResources' PreBind: allocation, reservedFor;
        its PostFilter: deallocation). Raises ApiError on failure."""
        ...

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        """The pod waiting at Permit with this UID, if any."""
        ...

    def iterate_over_waiting_pods(self) -> Iterator[WaitingPod]: ...

    def reject_waiting_pod(self, uid: str) -> bool:
        """Reject a waiting pod (e.g. preempted); False if no such waiting pod."""
        ...

    def clear_nominated_node_name(self, pod: Pod) -> None:
        """Clear a pod's status.nominatedNodeName (preemption: lower-priority nominees)."""
        ...

    def pod_group_states(self) -> PodGroupStateLister:
        """Handle.PodGroupManager().PodGroupStates(): the pod groups' runtime state in the
        scheduler cache (pods added as they reach the queue, assumed, bound, forgotten)."""
        ...

    @property
    def profile_name(self) -> str: ...

    @property
    def deterministic(self) -> bool:
        """True under ``--deterministic``: plugins must not use randomness (e.g. preemption
        examines every node from offset 0 and breaks ties by the lowest node name)."""
        ...

    @property
    def rng(self) -> random.Random:
        """The scheduler's random source (seedable), for upstream's random choices."""
        ...

    @property
    def features(self) -> Features:
        """The release and feature gates in force (plugins ask ``features.enabled(NAME)``, as
        upstream's plugins read their feature.Features at construction)."""
        ...

    @property
    def extenders(self) -> Sequence[Extender]:
        """The scheduler's extenders (Handle.Extenders), ignorable ones last; empty without any."""
        ...
