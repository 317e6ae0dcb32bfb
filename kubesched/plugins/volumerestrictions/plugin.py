"""VolumeRestrictions: a pod may not mount a disk another pod on the node already mounts in a
conflicting way (GCE PD, AWS EBS, iSCSI, Ceph RBD), nor a ReadWriteOncePod PVC any scheduled
pod already uses (PreFilter with AddPod/RemovePod, Filter).

Mirrors framework/plugins/volumerestrictions/volume_restrictions.go (v1.30).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.framework import (
    GVK,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    StateKey,
    Status,
)
from kubesched.framework.signers import VOLUMES_SIGNER_NAME, SignFragment, volumes_signer
from kubesched.objects import PersistentVolumeClaim, Pod, Volume
from kubesched.plugins.helpers.eventobjects import as_objects, present
from kubesched.plugins.helpers.volumes import READ_WRITE_ONCE_POD, RESOURCE_PVC, not_found

NAME = "VolumeRestrictions"
PRE_FILTER_STATE_KEY_NAME = "PreFilter" + NAME
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)
# 1.36 volume_restrictions.go ErrReasonReadWriteOncePodConflict.
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT_136 = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)

# Volume sources whose conflicts this plugin checks (needsRestrictionsCheck).
_RESTRICTED_KINDS = frozenset(("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi"))


@dataclass(slots=True)
class PreFilterState:
    """preFilterState: the pod's ReadWriteOncePod claim names and how many references to them
    scheduled pods hold. AddPod/RemovePod change the count, hence ``clone``."""

    read_write_once_pod_pvcs: frozenset[str]
    conflicting_pvc_ref_count: int

    def conflicting_pvc_ref_count_for_pod(self, pod: Pod) -> int:
        """conflictingPVCRefCountForPod: claim names only, as upstream (no namespace check)."""
        n = 0
        for v in pod.volumes:
            if v.kind == "persistentVolumeClaim" and str(v.source.get("claimName") or "") in self.read_write_once_pod_pvcs:
                n += 1
        return n

    def update_with_pod(self, pod: Pod, multiplier: int) -> None:
        self.conflicting_pvc_ref_count += multiplier * self.conflicting_pvc_ref_count_for_pod(pod)

    def clone(self) -> PreFilterState:
        return PreFilterState(self.read_write_once_pod_pvcs, self.conflicting_pvc_ref_count)


_PRE_FILTER_KEY: StateKey[PreFilterState] = StateKey(PRE_FILTER_STATE_KEY_NAME)


def needs_restrictions_check(v: Volume) -> bool:
    """needsRestrictionsCheck: GCE PD, AWS EBS, RBD or iSCSI."""
    return v.kind in _RESTRICTED_KINDS


def _read_only(src: Mapping[str, Any]) -> bool:
    return bool(src.get("readOnly", False))


def _str_list(x: object) -> list[str]:
    return [str(i) for i in x] if isinstance(x, list | tuple) else []


def _rbd_pool(src: Mapping[str, Any]) -> str:
    # SetDefaults_RBDVolumeSource: pool defaults to "rbd".
    return str(src.get("pool") or "rbd")


def is_volume_conflict(volume: Volume, pod: Pod) -> bool:
    """isVolumeConflict: does ``volume`` conflict with any volume of ``pod``?"""
    kind = volume.kind
    src = volume.source
    for ev in pod.volumes:
        if ev.kind != kind:
            continue
        esrc = ev.source
        if kind == "gcePersistentDisk":
            # Same PD conflicts unless both mount it read-only.
            if src.get("pdName", "") == esrc.get("pdName", "") and not (_read_only(src) and _read_only(esrc)):
                return True
        elif kind == "awsElasticBlockStore":
            # Two pods can never mount the same EBS volume.
            if src.get("volumeID", "") == esrc.get("volumeID", ""):
                return True
        elif kind == "iscsi":
            if src.get("iqn", "") == esrc.get("iqn", "") and not (_read_only(src) and _read_only(esrc)):
                return True
        elif kind == "rbd":
            # Same image: a shared Ceph monitor, same pool and image; read-write conflicts.
            if (
                have_overlap(_str_list(src.get("monitors")), _str_list(esrc.get("monitors")))
                and _rbd_pool(src) == _rbd_pool(esrc)
                and src.get("image", "") == esrc.get("image", "")
                and not (_read_only(src) and _read_only(esrc))
            ):
                return True
    return False


def have_overlap(a1: Sequence[str], a2: Sequence[str]) -> bool:
    """haveOverlap: at least one common element."""
    return not set(a1).isdisjoint(a2)


def satisfy_volume_conflicts(pod: Pod, node_info: NodeInfo) -> bool:
    """satisfyVolumeConflicts: none of the pod's restricted volumes conflicts on the node."""
    for v in pod.volumes:
        if not needs_restrictions_check(v):
            continue
        for pi in node_info.pods:
            if is_volume_conflict(v, pi.pod):
                return False
    return True


class VolumeRestrictions:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        self._queueing_hints = handle.features.enabled("SchedulerQueueingHints")
        self._rwop_reason = (ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT_136 if handle.features.enabled("VolumeReasons136")
                             else ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)

    def sign_pod(self, pod: Pod) -> list[SignFragment]:
        """SignPod: the volume sources but ConfigMaps and Secrets (VolumesSigner)."""
        return [SignFragment(VOLUMES_SIGNER_NAME, volumes_signer(pod))]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        if not self._queueing_hints:
            return [
                # Deleting a pod may release a conflicting volume.
                ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.DELETE)),
                # A new node may make the pod schedulable (the framework adds UpdateNodeTaint).
                ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD)),
                # The pod may wait for its PVC to exist (its access modes are needed).
                ClusterEventWithHint(ClusterEvent(GVK.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE)),
            ]
        # 1.36 EventsToRegister with SchedulerQueueingHints: spec.volumes is immutable, so only
        # pod deletions; every new node (no hint); a claim's creation only.
        return [
            ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.DELETE), self.is_schedulable_after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(GVK.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                                 self.is_schedulable_after_persistent_volume_claim_added),
        ]

    # ---- queueing hints
    def is_schedulable_after_persistent_volume_claim_added(self, pod: Pod, old: object | None,
                                                           new: object | None) -> QueueingHint:
        """isSchedulableAfterPersistentVolumeClaimAdded: a claim of the pod's namespace that one
        of its persistentVolumeClaim volumes names."""
        _, added = as_objects(PersistentVolumeClaim, old, new)
        pvc = present(added, "PersistentVolumeClaim")
        if pvc.namespace != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        for v in pod.volumes:
            if v.kind == "persistentVolumeClaim" and str(v.source.get("claimName") or "") == pvc.name:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pod_deleted(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterPodDeleted: a pod of the same namespace whose volumes conflicted
        with the pod's (satisfyVolumeConflicts on a node holding just it), or that used one of
        the pod's claims (the ReadWriteOncePod access mode is not looked up, as upstream)."""
        deleted_or_none, _ = as_objects(Pod, old, new)
        deleted = present(deleted_or_none, "deleted pod")
        if deleted.namespace != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        if not satisfy_volume_conflicts(pod, NodeInfo(None, deleted)):
            return QueueingHint.QUEUE
        claims = {str(v.source.get("claimName") or "") for v in pod.volumes if v.kind == "persistentVolumeClaim"}
        for v in deleted.volumes:
            if v.kind == "persistentVolumeClaim" and str(v.source.get("claimName") or "") in claims:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # ---- PreFilter
    def _read_write_once_pod_pvcs(self, pod: Pod) -> tuple[frozenset[str], Status | None]:
        """readWriteOncePodPVCsForPod: every PVC must exist; keep the ReadWriteOncePod ones."""
        objects = self.handle.objects
        names: set[str] = set()
        for v in pod.volumes:
            if v.kind != "persistentVolumeClaim":
                continue
            claim = str(v.source.get("claimName") or "")
            pvc = objects.pvc(pod.namespace, claim)
            if pvc is None:
                return frozenset(), Status.unresolvable(not_found(RESOURCE_PVC, claim))
            if READ_WRITE_ONCE_POD in pvc.access_modes:
                names.add(pvc.name)
        return frozenset(names), None

    def _is_pvc_used_by_pods(self, key: str) -> bool:
        """SharedLister.StorageInfos().IsPVCUsedByPods: any node of the snapshot has a pod
        referencing the claim."""
        for ni in self.handle.snapshot.list():
            if key in ni.pvc_ref_counts:
                return True
        return False

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status | None]:
        """PreFilter: Skip unless the pod has a restricted volume or a ReadWriteOncePod claim
        already in use."""
        needs_check = any(needs_restrictions_check(v) for v in pod.volumes)
        pvcs, status = self._read_write_once_pod_pvcs(pod)
        if status is not None:
            return None, status
        # calPreFilterState: at most one pod can use a ReadWriteOncePod claim, so count claims.
        count = sum(1 for c in pvcs if self._is_pvc_used_by_pods(f"{pod.namespace}/{c}"))
        if not needs_check and count == 0:
            return None, Status.skip()
        state.write(_PRE_FILTER_KEY, PreFilterState(pvcs, count))
        return None, None

    def pre_filter_extensions(self) -> VolumeRestrictions:
        return self

    def add_pod(self, state: CycleState, pod_to_schedule: Pod, pod_info_to_add: PodInfo,
                node_info: NodeInfo) -> Status | None:
        s = state.get(_PRE_FILTER_KEY)
        if s is None:
            return Status.as_error(f'cannot read "{PRE_FILTER_STATE_KEY_NAME}" from cycleState')
        s.update_with_pod(pod_info_to_add.pod, 1)
        return None

    def remove_pod(self, state: CycleState, pod_to_schedule: Pod, pod_info_to_remove: PodInfo,
                   node_info: NodeInfo) -> Status | None:
        s = state.get(_PRE_FILTER_KEY)
        if s is None:
            return Status.as_error(f'cannot read "{PRE_FILTER_STATE_KEY_NAME}" from cycleState')
        s.update_with_pod(pod_info_to_remove.pod, -1)
        return None

    # ---- Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Filter: disk conflicts on this node first, then the (cluster-wide) ReadWriteOncePod
        conflict count."""
        if not satisfy_volume_conflicts(pod, node_info):
            return Status.unschedulable(ERR_REASON_DISK_CONFLICT)
        s = state.get(_PRE_FILTER_KEY)
        if s is None:
            return Status.as_error(f'cannot read "{PRE_FILTER_STATE_KEY_NAME}" from cycleState')
        if s.conflicting_pvc_ref_count > 0:
            return Status.unschedulable(self._rwop_reason)
        return None


def new(args: object, handle: Handle) -> VolumeRestrictions:
    """Plugin factory (registry entry). VolumeRestrictions takes no args."""
    return VolumeRestrictions(handle)
