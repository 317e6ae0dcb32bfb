"""VolumeZone: the zone/region labels of the PVs a pod's bound claims use must match the
node's (PreFilter, Filter).

Mirrors framework/plugins/volumezone/volume_zone.go (v1.30).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubesched.framework import (
    GVK,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    PreFilterResult,
    QueueingHint,
    StateKey,
    Status,
)
from kubesched.framework.signers import VOLUMES_SIGNER_NAME, SignFragment, volumes_signer
from kubesched.objects import PersistentVolume, PersistentVolumeClaim, Pod, StorageClass
from kubesched.plugins.helpers.eventobjects import as_objects, present
from kubesched.plugins.helpers.volumes import (
    LABEL_MULTI_ZONE_DELIMITER,
    LABEL_REGION,
    LABEL_REGION_BETA,
    LABEL_ZONE,
    LABEL_ZONE_BETA,
    RESOURCE_PV,
    RESOURCE_PVC,
    RESOURCE_STORAGE_CLASS,
    WAIT_FOR_FIRST_CONSUMER,
    go_quote,
    not_found,
)

NAME = "VolumeZone"
PRE_FILTER_STATE_KEY_NAME = "PreFilter" + NAME
ERR_REASON_CONFLICT = "node(s) had no available volume zone"

# topologyLabels, in upstream order.
TOPOLOGY_LABELS = (LABEL_ZONE_BETA, LABEL_REGION_BETA, LABEL_ZONE, LABEL_REGION)


def translate_to_ga_label(label: str) -> str:
    """translateToGALabel: beta zone/region keys -> their GA keys."""
    if label == LABEL_REGION_BETA:
        return LABEL_REGION
    if label == LABEL_ZONE_BETA:
        return LABEL_ZONE
    return label


def label_zones_to_set(value: str) -> frozenset[str] | None:
    """volumehelpers.LabelZonesToSet: ``a__b`` -> {a, b}, trimmed; an empty element is an
    error (None), and upstream then ignores the label."""
    zones: set[str] = set()
    for z in value.split(LABEL_MULTI_ZONE_DELIMITER):
        t = z.strip()
        if not t:
            return None
        zones.add(t)
    return frozenset(zones)


@dataclass(frozen=True, slots=True)
class PVTopology:
    """pvTopology: one topology label of a bound PV and the allowed values."""

    pv_name: str
    key: str
    values: frozenset[str]


def pv_topologies(pv: PersistentVolume) -> list[PVTopology]:
    """getPVTopologies: the PV's topology labels in TOPOLOGY_LABELS order; a label that does
    not parse is ignored (upstream logs "failed to parse PV's topology label")."""
    out: list[PVTopology] = []
    labels = pv.meta.labels
    for key in TOPOLOGY_LABELS:
        value = labels.get(key)
        if value is None:
            continue
        zones = label_zones_to_set(value)
        if zones is None:
            continue
        out.append(PVTopology(pv.name, key, zones))
    return out


@dataclass(frozen=True, slots=True)
class StateData:
    """stateData: never changed after PreFilter (upstream Clone returns itself)."""

    pod_pv_topologies: tuple[PVTopology, ...]

    def clone(self) -> StateData:
        return self


_STATE_KEY: StateKey[StateData] = StateKey(PRE_FILTER_STATE_KEY_NAME)


class VolumeZone:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        self._queueing_hints = handle.features.enabled("SchedulerQueueingHints")

    def sign_pod(self, pod: Pod) -> list[SignFragment]:
        """SignPod: the volume sources but ConfigMaps and Secrets (VolumesSigner)."""
        return [SignFragment(VOLUMES_SIGNER_NAME, volumes_signer(pod))]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        if not self._queueing_hints:
            return [
                # A new WaitForFirstConsumer class may make the pod schedulable (the binding mode
                # is immutable, so updates are ignored).
                ClusterEventWithHint(ClusterEvent(GVK.STORAGE_CLASS, ActionType.ADD)),
                ClusterEventWithHint(ClusterEvent(
                    GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT)),
                # A new PVC, or one whose volumeName got filled.
                ClusterEventWithHint(ClusterEvent(GVK.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE)),
                # A new PV, or one whose zone labels changed.
                ClusterEventWithHint(ClusterEvent(GVK.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE)),
            ]
        # 1.36 EventsToRegister with SchedulerQueueingHints: no preCheck, so no UpdateNodeTaint.
        return [
            ClusterEventWithHint(ClusterEvent(GVK.STORAGE_CLASS, ActionType.ADD),
                                 self.is_schedulable_after_storage_class_added),
            ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(ClusterEvent(GVK.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
                                 self.is_schedulable_after_persistent_volume_claim_change),
            ClusterEventWithHint(ClusterEvent(GVK.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE),
                                 self.is_schedulable_after_persistent_volume_change),
        ]

    # ---- queueing hints
    def is_schedulable_after_persistent_volume_claim_change(self, pod: Pod, old: object | None,
                                                            new: object | None) -> QueueingHint:
        """isSchedulableAfterPersistentVolumeClaimChange / isPVCRequestedFromPod: a claim of the
        pod's namespace one of its persistentVolumeClaim volumes names."""
        _, modified = as_objects(PersistentVolumeClaim, old, new)
        if modified is None or modified.namespace != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        for v in pod.volumes:
            if v.kind == "persistentVolumeClaim" and str(v.source.get("claimName") or "") == modified.name:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_storage_class_added(self, pod: Pod, old: object | None,
                                                 new: object | None) -> QueueingHint:
        """isSchedulableAfterStorageClassAdded: only a WaitForFirstConsumer class (unbound
        claims of such a class are skipped by PreFilter)."""
        _, added = as_objects(StorageClass, None, new)
        sc = present(added, "StorageClass")
        if sc.volume_binding_mode != WAIT_FOR_FIRST_CONSUMER:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_persistent_volume_change(self, pod: Pod, old: object | None,
                                                      new: object | None) -> QueueingHint:
        """isSchedulableAfterPersistentVolumeChange: any new PV; an update only when its
        topology labels (getPVTopologies; node affinity is immutable) changed."""
        original, modified = as_objects(PersistentVolume, old, new)
        if original is None:
            return QueueingHint.QUEUE
        if pv_topologies(original) != pv_topologies(present(modified, "PersistentVolume")):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def get_pv_by_pod(self, pod: Pod) -> tuple[tuple[PVTopology, ...], Status | None]:
        """getPVbyPod: the topology labels of the PVs bound to the pod's PVC volumes."""
        objects = self.handle.objects
        out: list[PVTopology] = []
        for v in pod.volumes:
            if v.kind != "persistentVolumeClaim":
                continue
            claim = str(v.source.get("claimName") or "")
            if not claim:
                return (), Status.unresolvable("PersistentVolumeClaim had no name")
            pvc = objects.pvc(pod.namespace, claim)
            if pvc is None:
                return (), Status.unresolvable(not_found(RESOURCE_PVC, claim))
            pv_name = pvc.volume_name
            if not pv_name:
                sc_name = pvc.class_name
                if not sc_name:
                    return (), Status.unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
                sc = objects.storage_class(sc_name)
                if sc is None:
                    return (), Status.unresolvable(not_found(RESOURCE_STORAGE_CLASS, sc_name))
                if sc.volume_binding_mode is None:
                    return (), Status.unresolvable(f"VolumeBindingMode not set for StorageClass {go_quote(sc_name)}")
                if sc.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER:
                    # Unbound volumes of a delayed-binding class are skipped.
                    continue
                return (), Status.unresolvable("PersistentVolume had no name")
            pv = objects.pv(pv_name)
            if pv is None:
                return (), Status.unresolvable(not_found(RESOURCE_PV, pv_name))
            out.extend(pv_topologies(pv))
        return tuple(out), None

    # ---- PreFilter
    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status | None]:
        """PreFilter: collect the PV topologies; Skip when there are none."""
        topologies, status = self.get_pv_by_pod(pod)
        if status is not None:
            return None, status
        if not topologies:
            return None, Status.skip()
        state.write(_STATE_KEY, StateData(topologies))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    # ---- Filter
    def preemption_fast_path(self, state: CycleState, pod: Pod) -> bool:
        """Filter reads the pod's PV topologies and the node's labels, never its pods:
        node-only for preemption's fast path."""
        return True

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Filter: a node with none of the topology labels passes (single-zone clusters);
        otherwise every PV topology must allow the node's value (beta PV keys fall back to
        the node's GA label)."""
        if not pod.volumes:
            return None
        s = state.get(_STATE_KEY)
        if s is None:
            # Upstream falls back to computing the topologies here.
            topologies, status = self.get_pv_by_pod(pod)
            if status is not None:
                return status
        else:
            topologies = s.pod_pv_topologies
        node = node_info.node
        assert node is not None
        labels: Mapping[str, str] = node.meta.labels
        if not any(k in labels for k in TOPOLOGY_LABELS):
            return None
        for t in topologies:
            v = labels.get(t.key)
            if v is None:
                v = labels.get(translate_to_ga_label(t.key))
            if v is None or v not in t.values:
                return Status.unresolvable(ERR_REASON_CONFLICT)
        return None


def new(args: object, handle: Handle) -> VolumeZone:
    """Plugin factory (registry entry). VolumeZone takes no args."""
    return VolumeZone(handle)
