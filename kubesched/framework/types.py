"""Framework value types: NodeInfo and PodInfo (framework/types.go), scores, results, events."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum, IntFlag
from typing import TYPE_CHECKING, Protocol

from kubesched.objects import LabelSelector, Node, Pod, PodAffinityTerm
from kubesched.objects.resources import is_scalar_resource_name

if TYPE_CHECKING:
    from kubesched.framework.nodetable import NodeTable

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = 2**63 - 1


# ---------------------------------------------------------------- resources
class Resource:
    """framework.Resource: cpu in milli-units, everything else in base units."""

    __slots__ = ("milli_cpu", "memory", "ephemeral_storage", "allowed_pod_number", "scalar")

    def __init__(self, milli_cpu: int = 0, memory: int = 0, ephemeral_storage: int = 0,
                 allowed_pod_number: int = 0, scalar: dict[str, int] | None = None) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.allowed_pod_number = allowed_pod_number
        self.scalar: dict[str, int] = scalar if scalar is not None else {}

    @classmethod
    def from_list(cls, rl: Mapping[str, int]) -> Resource:
        """NewResource / Resource.Add: known names, and scalar resources; others ignored."""
        r = cls()
        r.add_list(rl)
        return r

    def add_list(self, rl: Mapping[str, int], sign: int = 1) -> None:
        for name, v in rl.items():
            if name == "cpu":
                self.milli_cpu += sign * v
            elif name == "memory":
                self.memory += sign * v
            elif name == "ephemeral-storage":
                self.ephemeral_storage += sign * v
            elif name == "pods":
                self.allowed_pod_number += sign * v
            elif is_scalar_resource_name(name):
                self.scalar[name] = self.scalar.get(name, 0) + sign * v

    def get(self, name: str) -> int:
        if name == "cpu":
            return self.milli_cpu
        if name == "memory":
            return self.memory
        if name == "ephemeral-storage":
            return self.ephemeral_storage
        if name == "pods":
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def clone(self) -> Resource:
        return Resource(self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number, dict(self.scalar))

    def __repr__(self) -> str:
        return (f"Resource(cpu={self.milli_cpu}m, memory={self.memory}, eph={self.ephemeral_storage}, "
                f"pods={self.allowed_pod_number}, scalar={self.scalar})")


# ---------------------------------------------------------------- pod info
@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A pod (anti-)affinity term with its namespaces resolved (framework.AffinityTerm).

    ``selector`` None matches no pod; ``namespace_selector`` None matches no namespace, an
    empty one matches all."""

    namespaces: frozenset[str]
    selector: LabelSelector | None
    topology_key: str
    namespace_selector: LabelSelector | None

    def matches(self, pod: Pod, ns_labels: Mapping[str, str] | None) -> bool:
        """AffinityTerm.Matches: namespace (listed or selected) and labels."""
        if pod.namespace in self.namespaces or (
            self.namespace_selector is not None and self.namespace_selector.matches(ns_labels or {})
        ):
            return self.selector is not None and self.selector.matches(pod.labels)
        return False


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    """framework.WeightedAffinityTerm: a preferred term, pre-processed, and its weight."""

    term: AffinityTerm
    weight: int


def new_affinity_term(pod: Pod, term: PodAffinityTerm) -> AffinityTerm:
    """framework.newAffinityTerm: no namespaces and no selector means the pod's namespace."""
    namespaces = frozenset(term.namespaces)
    if not term.namespaces and term.namespace_selector is None:
        namespaces = frozenset((pod.namespace,))
    return AffinityTerm(namespaces, term.label_selector, term.topology_key, term.namespace_selector)


class PodInfo:
    """A pod plus its pre-processed affinity terms (framework.PodInfo)."""

    __slots__ = ("pod", "required_affinity_terms", "required_anti_affinity_terms",
                 "preferred_affinity_terms", "preferred_anti_affinity_terms")

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        aff = pod.affinity
        pa = aff.pod_affinity if aff is not None else None
        paa = aff.pod_anti_affinity if aff is not None else None
        self.required_affinity_terms = tuple(new_affinity_term(pod, t) for t in pa.required) if pa else ()
        self.required_anti_affinity_terms = tuple(new_affinity_term(pod, t) for t in paa.required) if paa else ()
        self.preferred_affinity_terms = tuple(
            WeightedAffinityTerm(new_affinity_term(pod, w.term), w.weight) for w in pa.preferred) if pa else ()
        self.preferred_anti_affinity_terms = tuple(
            WeightedAffinityTerm(new_affinity_term(pod, w.term), w.weight) for w in paa.preferred) if paa else ()

    @property
    def has_affinity(self) -> bool:
        a = self.pod.affinity
        return a is not None and (a.pod_affinity is not None or a.pod_anti_affinity is not None)

    def __repr__(self) -> str:
        return f"PodInfo({self.pod.key})"


# ---------------------------------------------------------------- host ports
DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"


class HostPortInfo:
    """Used host ports of a node: ip -> {(protocol, port)} (framework.HostPortInfo)."""

    __slots__ = ("_ports",)

    def __init__(self) -> None:
        self._ports: dict[str, set[tuple[str, int]]] = {}

    @staticmethod
    def _sanitize(ip: str, protocol: str) -> tuple[str, str]:
        return ip or DEFAULT_BIND_ALL_HOST_IP, protocol or "TCP"

    def add(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = self._sanitize(ip, protocol)
        self._ports.setdefault(ip, set()).add((protocol, port))

    def remove(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = self._sanitize(ip, protocol)
        s = self._ports.get(ip)
        if s is not None:
            s.discard((protocol, port))
            if not s:
                del self._ports[ip]

    def check_conflict(self, ip: str, protocol: str, port: int) -> bool:
        """HostPortInfo.CheckConflict: 0.0.0.0 conflicts with every IP."""
        if port <= 0:
            return False
        ip, protocol = self._sanitize(ip, protocol)
        pp = (protocol, port)
        if ip == DEFAULT_BIND_ALL_HOST_IP:
            return any(pp in s for s in self._ports.values())
        for key in (DEFAULT_BIND_ALL_HOST_IP, ip):
            s = self._ports.get(key)
            if s is not None and pp in s:
                return True
        return False

    def __len__(self) -> int:
        return sum(len(s) for s in self._ports.values())

    def clone(self) -> HostPortInfo:
        c = HostPortInfo()
        c._ports = {k: set(v) for k, v in self._ports.items()}
        return c


@dataclass(frozen=True, slots=True)
class ImageStateSummary:
    """Size of an image and how many nodes have it (framework.ImageStateSummary)."""

    size: int
    num_nodes: int


# ---------------------------------------------------------------- node info
def _pod_has_required_anti_affinity(pod: Pod) -> bool:
    a = pod.affinity
    return a is not None and a.pod_anti_affinity is not None and len(a.pod_anti_affinity.required) > 0


class NodeInfo:
    """Node-level aggregated information (framework.NodeInfo): the node, its pods, the
    resources they request, used host ports, image states and PVC references.

    When the NodeInfo belongs to the scheduler cache, ``table``/``index`` point at its row
    in the columnar :class:`~kubesched.framework.nodetable.NodeTable`, kept in sync by
    add_pod/remove_pod. Clones (nominated-pod and preemption simulations) are detached.
    """

    __slots__ = ("node", "name", "pods", "pods_with_affinity", "pods_with_required_anti_affinity", "used_ports",
                 "requested", "non_zero_requested", "allocatable", "image_states", "pvc_ref_counts",
                 "generation", "index", "table")

    def __init__(self, node: Node | None = None, *pods: Pod) -> None:
        self.node: Node | None = None
        # The node's name ("" without a node): a plain attribute, read per node per cycle.
        self.name = ""
        self.pods: list[PodInfo] = []
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        self.used_ports = HostPortInfo()
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.allocatable = Resource()
        # image name -> summary; the cache's NodeInfos read theirs from its image states.
        self.image_states: Mapping[str, ImageStateSummary] = {}
        self.pvc_ref_counts: dict[str, int] = {}
        self.generation = 0
        self.index = -1
        self.table: NodeTable | None = None
        if node is not None:
            self.set_node(node)
        for p in pods:
            self.add_pod(p)

    def set_node(self, node: Node) -> None:
        self.node = node
        self.name = node.meta.name
        self.allocatable = Resource.from_list(node.allocatable)
        self.generation += 1

    def add_pod(self, pod: Pod | PodInfo) -> None:
        pi = pod if isinstance(pod, PodInfo) else PodInfo(pod)
        self.add_pod_info(pi)

    def add_pod_info(self, pi: PodInfo) -> None:
        """NodeInfo.AddPodInfo."""
        p = pi.pod
        self.pods.append(pi)
        affinity = pi.has_affinity
        if affinity:
            self.pods_with_affinity.append(pi)
        anti = _pod_has_required_anti_affinity(p)
        if anti:
            self.pods_with_required_anti_affinity.append(pi)
        self._update(p, 1)
        if self.table is not None:
            self.table.add_pod(self.index, p, 1, affinity=affinity, anti_affinity=anti)

    def remove_pod(self, pod: Pod) -> bool:
        """NodeInfo.RemovePod (matched by UID); False if the pod is not on this node."""
        uid = pod.uid
        found = [False, False]
        for k, lst in enumerate((self.pods_with_affinity, self.pods_with_required_anti_affinity)):
            for i, pi in enumerate(lst):
                if pi.pod.uid == uid:
                    lst[i] = lst[-1]
                    lst.pop()
                    found[k] = True
                    break
        for i, pi in enumerate(self.pods):
            if pi.pod.uid == uid:
                # Upstream swaps with the last element; keep the same order semantics.
                self.pods[i] = self.pods[-1]
                self.pods.pop()
                self._update(pi.pod, -1)
                if self.table is not None:
                    self.table.add_pod(self.index, pi.pod, -1, affinity=found[0], anti_affinity=found[1])
                return True
        return False

    def replace_pod(self, pod: Pod) -> bool:
        """RemovePod then AddPod of a pod (matched by UID) whose metadata alone changed (the
        labels the 1.36 binding copies from the node): the same order effects (it takes the last
        one's place, then goes last) without counting its requests, ports and claims out and in
        again; the node's row is marked changed. False if the pod is not on this node."""
        uid = pod.uid
        pods = self.pods
        at = next((i for i, pi in enumerate(pods) if pi.pod.uid == uid), -1)
        if at < 0:
            return False
        new = PodInfo(pod)
        for lst in (self.pods_with_affinity, self.pods_with_required_anti_affinity):
            for i, pi in enumerate(lst):
                if pi.pod.uid == uid:
                    lst[i] = lst[-1]
                    lst[-1] = new
                    break
        pods[at] = pods[-1]
        pods[-1] = new
        self.generation += 1
        if self.table is not None:
            self.table.pod_changed(self.index)
        return True

    def _update(self, pod: Pod, sign: int) -> None:
        r = self.requested
        for name, v in pod.requests.items():
            if name == "cpu":
                r.milli_cpu += sign * v
            elif name == "memory":
                r.memory += sign * v
            elif name == "ephemeral-storage":
                r.ephemeral_storage += sign * v
            elif name != "pods" and is_scalar_resource_name(name):
                r.scalar[name] = r.scalar.get(name, 0) + sign * v
        self.non_zero_requested.milli_cpu += sign * pod.non_zero_cpu
        self.non_zero_requested.memory += sign * pod.non_zero_memory
        for c in pod.port_containers:
            for port in c.ports:
                if sign > 0:
                    self.used_ports.add(port.host_ip, port.protocol, port.host_port)
                else:
                    self.used_ports.remove(port.host_ip, port.protocol, port.host_port)
        # updatePVCRefCounts: only persistentVolumeClaim volumes (not generic ephemeral ones).
        for vol in pod.volumes:
            claim = vol.claim_name
            if claim:
                key = f"{pod.namespace}/{claim}"
                n = self.pvc_ref_counts.get(key, 0) + sign
                if n <= 0:
                    self.pvc_ref_counts.pop(key, None)
                else:
                    self.pvc_ref_counts[key] = n
        self.generation += 1

    def clone(self) -> NodeInfo:
        """A detached deep-enough copy (NodeInfo.Snapshot)."""
        c = NodeInfo()
        c.node = self.node
        c.name = self.name
        c.pods = list(self.pods)
        c.pods_with_affinity = list(self.pods_with_affinity)
        c.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        c.used_ports = self.used_ports.clone()
        c.requested = self.requested.clone()
        c.non_zero_requested = self.non_zero_requested.clone()
        c.allocatable = self.allocatable.clone()
        c.image_states = self.image_states
        c.pvc_ref_counts = dict(self.pvc_ref_counts)
        c.generation = self.generation
        c.index = self.index
        return c

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"


# ---------------------------------------------------------------- cycle results
@dataclass(slots=True)
class NodeScore:
    """framework.NodeScore: a node's name and score."""

    name: str
    score: int


@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """A PreFilter plugin's restriction of the candidate nodes; ``None`` names = all nodes."""

    node_names: frozenset[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return other
        return PreFilterResult(self.node_names & other.node_names)


NOMINATING_NOOP = 0
NOMINATING_OVERRIDE = 1


@dataclass(frozen=True, slots=True)
class NominatingInfo:
    """framework.NominatingInfo: the node a PostFilter nominates, and whether to set it."""

    nominated_node_name: str = ""
    mode: int = NOMINATING_NOOP


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    """framework.PostFilterResult."""

    nominating_info: NominatingInfo | None = None


# ---------------------------------------------------------------- queue & events
@dataclass(slots=True)
class QueuedPodInfo:
    """A pod in the scheduling queue (framework.QueuedPodInfo)."""

    pod_info: PodInfo
    timestamp: float = 0.0
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gated: bool = False
    seq: int = 0  # insertion order; final tie-break so queue order is deterministic
    # 1.36 (backoff_queue.go): backoff counts rejections, not pops; errors count apart, and
    # the expiry is computed once per failure (BackoffExpiration, None = not yet computed).
    unschedulable_count: int = 0
    consecutive_errors_count: int = 0
    backoff_expiration: float | None = None
    gating_plugin: str = ""  # 1.36: the PreEnqueue plugin holding the pod (GatingPlugin)

    @property
    def pod(self) -> Pod:
        return self.pod_info.pod


class ActionType(IntFlag):
    """framework.ActionType bits (k8s.io/kube-scheduler/framework/types.go). v1.30 events only
    ever carry the node bits; the pod bits and UpdateNodeDeclaredFeature are 1.36's finer
    update kinds (PodSchedulingPropertiesChange / NodeSchedulingPropertiesChange)."""

    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_NODE_DECLARED_FEATURE = 128
    UPDATE_POD_LABEL = 256
    UPDATE_POD_SCALE_DOWN = 512
    UPDATE_POD_TOLERATION = 1024
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 2048
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 4096
    UPDATE = 8188  # every Update* bit
    ALL = 8191
    NONE = 0


class GVK:
    """Resource names used in cluster events (framework.EventResource)."""

    POD = "Pod"
    # 1.36's internal resources for incoming pod events (framework/types.go: assignedPod,
    # unschedulablePod); a registration for POD matches both. Never registered by plugins.
    ASSIGNED_POD = "AssignedPod"
    UNSCHEDULABLE_POD = "UnschedulablePod"
    NODE = "Node"
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    CSI_NODE = "storage.k8s.io/CSINode"
    CSI_DRIVER = "storage.k8s.io/CSIDriver"
    CSI_STORAGE_CAPACITY = "storage.k8s.io/CSIStorageCapacity"
    STORAGE_CLASS = "storage.k8s.io/StorageClass"
    VOLUME_ATTACHMENT = "storage.k8s.io/VolumeAttachment"
    RESOURCE_CLAIM = "resource.k8s.io/ResourceClaim"
    RESOURCE_SLICE = "resource.k8s.io/ResourceSlice"
    DEVICE_CLASS = "resource.k8s.io/DeviceClass"
    POD_SCHEDULING_CONTEXT = "PodSchedulingContext"
    POD_GROUP = "scheduling.k8s.io/PodGroup"
    WILDCARD = "*"


_ALL_ACTIONS = int(ActionType.ALL)


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """framework.ClusterEvent: a resource and the actions on it a plugin's pods wait for."""

    resource: str
    action_type: ActionType
    label: str = ""
    # action_type as a plain int, for matching: enum.Flag's operators are slow Python.
    actions: int = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "actions", int.__int__(self.action_type))

    def is_wildcard(self) -> bool:
        return self.resource == GVK.WILDCARD and self.action_type == ActionType.ALL

    def match(self, other: ClusterEvent) -> bool:
        """v1.30's ClusterEvent.Match: wildcard, or same resource and overlapping actions."""
        return self.is_wildcard() or (
            (self.resource == GVK.WILDCARD or self.resource == other.resource)
            and bool(self.actions & other.actions)
        )

    def match_136(self, incoming: ClusterEvent) -> bool:
        """1.36's MatchClusterEvents(registered=self, incoming): the incoming event must be
        the same or more specific (its action bits within ours), and a Pod registration
        matches the internal AssignedPod/UnschedulablePod resources."""
        r = self.resource
        ours = self.actions
        if r == GVK.WILDCARD and ours == _ALL_ACTIONS:
            return True
        theirs = incoming.actions
        resource_ok = (r == GVK.WILDCARD or r == incoming.resource
                       or (r == GVK.POD and incoming.resource in (GVK.ASSIGNED_POD, GVK.UNSCHEDULABLE_POD)))
        return resource_ok and bool(ours & theirs) and theirs <= ours


class QueueingHint(IntEnum):
    """fwk.QueueingHint: what a plugin's hint says about an event for a pod it rejected."""

    QUEUE_SKIP = 0
    QUEUE = 1


class QueueingHintFn(Protocol):
    """fwk.QueueingHintFn(logger, pod, oldObj, newObj): may the event make ``pod`` (which
    this plugin rejected) schedulable? ``old``/``new`` are the event's objects (None for an
    add's old / a delete's new). Raising counts as QUEUE, as upstream treats an error."""

    def __call__(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint: ...


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """An event a plugin wants to requeue on. ``hint`` is its QueueingHintFn (None = always
    QUEUE); with SchedulerQueueingHints off (v1.30's default) it is never consulted."""

    event: ClusterEvent
    hint: QueueingHintFn | None = None


def pods_on(infos: Iterable[NodeInfo]) -> Iterable[Pod]:
    for ni in infos:
        for pi in ni.pods:
            yield pi.pod
