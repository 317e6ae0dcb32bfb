"""NodeVolumeLimits (CSILimits): the number of unique CSI volumes attached to a node, per
driver, must stay within the node's limit (PreFilter, Filter).

Volumes are keyed ``<driver>/<volumeHandle>``; in-tree volumes whose migration to CSI is on for
the node are counted under their CSI driver. Limits come from the node's allocatable
``attachable-volumes-*`` resources, overridden by the CSINode drivers' ``allocatable.count``.

Mirrors framework/plugins/nodevolumelimits/csi.go (v1.30).
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Protocol, runtime_checkable

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
    Status,
)
from kubesched.framework.signers import VOLUMES_SIGNER_NAME, SignFragment, volumes_signer
from kubesched.objects import CSINode, PersistentVolumeClaim, Pod, Volume
from kubesched.plugins.helpers.eventobjects import as_objects, present
from kubesched.plugins.helpers.volumes import (
    AWS_EBS_PLUGIN,
    AZURE_DISK_PLUGIN,
    CINDER_PLUGIN,
    GCE_PD_PLUGIN,
    TranslationError,
    csi_attach_limit_key,
    inline_plugin,
    is_csi_migration_on,
    plugin_by_name,
    pod_uses_claim,
    pod_volume_claim,
    pv_plugin,
    translate_inline_volume,
    translate_pv,
)
from kubesched.plugins.nodevolumelimits.utils import (
    ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,
    VolumeLookupError,
    lookup_claim,
    volume_limits,
)

CSI_NAME = "NodeVolumeLimits"


def get_volume_limits(node_info: NodeInfo, csinode: CSINode | None, *, from_node: bool = True) -> dict[str, int]:
    """getVolumeLimits: node allocatable limits, overridden per driver by the CSINode. 1.36
    (CSILimitsFromCSINodeOnly) reads the CSINode's ``allocatable.count`` alone: a Node's
    ``attachable-volumes-csi-*`` allocatable no longer limits anything."""
    limits = volume_limits(node_info) if from_node else {}
    if csinode is not None:
        for d in csinode.drivers:
            if d.allocatable_count is not None:
                limits[csi_attach_limit_key(d.name)] = d.allocatable_count
    return limits


@runtime_checkable
class VolumeAttachment(Protocol):
    """What the VolumeAttachment hint reads of a storage.k8s.io/v1 VolumeAttachment: its
    ``spec.attacher`` (the CSI driver). kubesched loads no VolumeAttachment objects yet (the
    loader skips the kind); any object with this attribute is one."""

    @property
    def attacher(self) -> str: ...


# The in-tree plugins whose inline translation kubesched carries out (translate_inline_volume,
# which may fail on a malformed source); the others' translators cannot fail and name their
# CSI driver.
_TRANSLATED_INLINE = frozenset((AWS_EBS_PLUGIN, GCE_PD_PLUGIN, CINDER_PLUGIN, AZURE_DISK_PLUGIN))


def _csi_allocatable_counts(csinode: CSINode) -> dict[str, int]:
    """Driver -> allocatable.count, 0 when unset (isSchedulableAfterCSINodeUpdated)."""
    return {d.name: d.allocatable_count or 0 for d in csinode.drivers}


class CSILimits:
    name = CSI_NAME

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        self._queueing_hints = handle.features.enabled("SchedulerQueueingHints")
        self._limits_from_node = not handle.features.enabled("CSILimitsFromCSINodeOnly")
        # Unbound claims are keyed with a random prefix so they never collide with a real
        # volume handle (randomVolumeIDPrefix).
        self.random_volume_id_prefix = uuid.uuid4().hex

    def sign_pod(self, pod: Pod) -> list[SignFragment]:
        """SignPod: the volume sources but ConfigMaps and Secrets (VolumesSigner)."""
        return [SignFragment(VOLUMES_SIGNER_NAME, volumes_signer(pod))]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        if not self._queueing_hints:
            return [
                # Any new CSINode may make pods rejected for CSI volumes schedulable.
                ClusterEventWithHint(ClusterEvent(GVK.CSI_NODE, ActionType.ADD)),
                ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.DELETE)),
                ClusterEventWithHint(ClusterEvent(GVK.PERSISTENT_VOLUME_CLAIM, ActionType.ADD)),
            ]
        # 1.36 EventsToRegister: a new CSINode always (no hint), a raised driver limit, a pod
        # with attachable volumes deleted, the pod's claim created, an attachment released.
        return [
            ClusterEventWithHint(ClusterEvent(GVK.CSI_NODE, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(GVK.CSI_NODE, ActionType.UPDATE), self.is_schedulable_after_csi_node_updated),
            ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.DELETE), self.is_schedulable_after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(GVK.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                                 self.is_schedulable_after_pvc_added),
            ClusterEventWithHint(ClusterEvent(GVK.VOLUME_ATTACHMENT, ActionType.DELETE),
                                 self.is_schedulable_after_volume_attachment_deleted),
        ]

    # ---- queueing hints
    def is_schedulable_after_pod_deleted(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterPodDeleted: an assigned (or nominated) pod with a claim, a generic
        ephemeral volume or a migratable inline volume."""
        deleted_or_none, _ = as_objects(Pod, old, new)
        deleted = present(deleted_or_none, "deleted pod")
        if not deleted.volumes:
            return QueueingHint.QUEUE_SKIP
        if not deleted.node_name and not deleted.nominated_node_name:
            return QueueingHint.QUEUE_SKIP
        for v in deleted.volumes:
            if v.kind in ("persistentVolumeClaim", "ephemeral") or inline_plugin(v) is not None:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pvc_added(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterPVCAdded: the claim of one of the pod's persistentVolumeClaim or
        generic ephemeral volumes, in its namespace."""
        _, added = as_objects(PersistentVolumeClaim, old, new)
        pvc = present(added, "PersistentVolumeClaim")
        if pvc.namespace != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if pod_uses_claim(pod, pvc.name) else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_volume_attachment_deleted(self, pod: Pod, old: object | None,
                                                       new: object | None) -> QueueingHint:
        """isSchedulableAfterVolumeAttachmentDeleted: the pod has a persistentVolumeClaim
        volume, or a migratable inline volume whose CSI driver is the attachment's attacher."""
        if new is not None and not isinstance(new, VolumeAttachment):
            raise TypeError(f"expected a VolumeAttachment, but got {type(new).__name__}")
        if not isinstance(old, VolumeAttachment):
            raise TypeError(f"expected a deleted VolumeAttachment, but got {type(old).__name__}")
        attacher = old.attacher
        for v in pod.volumes:
            if v.kind == "persistentVolumeClaim":
                return QueueingHint.QUEUE
            plugin = inline_plugin(v)
            if plugin is None:
                continue
            driver = plugin.csi_driver
            if plugin.name in _TRANSLATED_INLINE:
                try:
                    translated = translate_inline_volume(v)
                except TranslationError:
                    # Upstream: "converting volume(...) from inline to csi" error => Queue.
                    return QueueingHint.QUEUE
                if translated is None:
                    # A translation without a CSI source matches no attacher.
                    continue
                driver = translated[0]
            if driver == attacher:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_csi_node_updated(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterCSINodeUpdated: some driver's allocatable count grew (a driver
        new to the CSINode counts as growing from 0)."""
        original, modified = as_objects(CSINode, old, new)
        old_limits = _csi_allocatable_counts(present(original, "old CSINode"))
        for name, limit in _csi_allocatable_counts(present(modified, "CSINode")).items():
            if limit > old_limits.get(name, 0):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # ---- PreFilter
    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status | None]:
        """PreFilter: Skip unless the pod has a PVC, a generic ephemeral volume or an inline
        volume migratable to CSI."""
        for v in pod.volumes:
            if v.kind in ("persistentVolumeClaim", "ephemeral") or inline_plugin(v) is not None:
                return None, None
        return None, Status.skip()

    def pre_filter_extensions(self) -> None:
        return None

    # ---- Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod.volumes:
            return None
        node = node_info.node
        assert node is not None
        # Without a CSINode the limits may still come from the Node object.
        csinode = self.handle.objects.csinode(node.meta.name)
        new_volumes: dict[str, str] = {}
        try:
            self.filter_attachable_volumes(pod, csinode, True, new_volumes)
        except VolumeLookupError as e:
            # Unresolvable for a missing PVC: the pod can never be scheduled until it exists.
            return e.status()
        if not new_volumes:
            return None
        limits = get_volume_limits(node_info, csinode, from_node=self._limits_from_node)
        if not limits:
            return None
        attached: dict[str, str] = {}
        for pi in node_info.pods:
            try:
                self.filter_attachable_volumes(pi.pod, csinode, False, attached)
            except VolumeLookupError as e:
                return Status.as_error(str(e))
        attached_count: Counter[str] = Counter()
        for unique_name, key in attached.items():
            # A volume already attached for another pod is not counted twice.
            new_volumes.pop(unique_name, None)
            attached_count[key] += 1
        new_count: Counter[str] = Counter(new_volumes.values())
        for key, count in new_count.items():
            limit = limits.get(key)
            if limit is not None and attached_count[key] + count > limit:
                return Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        return None

    def filter_attachable_volumes(self, pod: Pod, csinode: CSINode | None, new_pod: bool,
                                  result: dict[str, str]) -> None:
        """filterAttachableVolumes: add ``driver/handle -> limit key`` for each of the pod's
        CSI volumes. Raises VolumeLookupError as upstream returns an error."""
        objects = self.handle.objects
        for v in pod.volumes:
            claim = pod_volume_claim(pod, v)
            if claim is None:
                # Inline volumes are counted only when migratable and migrated on the node
                # (the others are counted by the in-tree plugins).
                self.check_attachable_inline_volume(v, csinode, pod, result)
                continue
            pvc_name, is_ephemeral = claim
            pvc = lookup_claim(objects, pod, pvc_name, is_ephemeral, new_pod)
            if pvc is None:
                # An existing pod's invalid PVC is not counted.
                continue
            driver, handle = self.get_csi_driver_info(csinode, pvc)
            if not driver or not handle:
                continue
            result[f"{driver}/{handle}"] = csi_attach_limit_key(driver)

    def check_attachable_inline_volume(self, vol: Volume, csinode: CSINode | None, pod: Pod,
                                       result: dict[str, str]) -> None:
        """checkAttachableInlineVolume."""
        plugin = inline_plugin(vol)
        if plugin is None:
            return
        if not is_csi_migration_on(csinode, plugin.name):
            return
        try:
            translated = translate_inline_volume(vol)
        except TranslationError as e:
            raise VolumeLookupError(f"converting volume({vol.name}) from inline to csi: {e}") from None
        if translated is None:
            return
        driver, handle = plugin.csi_driver, translated[1]
        result[f"{driver}/{handle}"] = csi_attach_limit_key(driver)

    def get_csi_driver_info(self, csinode: CSINode | None, pvc: PersistentVolumeClaim) -> tuple[str, str]:
        """getCSIDriverInfo: (driver, volume handle) of the claim's PV, translating migrated
        in-tree PVs; falls back to the StorageClass for unbound claims or missing PVs."""
        pv_name = pvc.volume_name
        if not pv_name:
            return self.get_csi_driver_info_from_sc(csinode, pvc)
        pv = self.handle.objects.pv(pv_name)
        if pv is None:
            # Deleted, or the claim is pre-bound to a PV not created yet.
            return self.get_csi_driver_info_from_sc(csinode, pvc)
        if pv.kind != "csi":
            plugin = pv_plugin(pv)
            if plugin is None:
                return "", ""
            if not is_csi_migration_on(csinode, plugin.name):
                return "", ""
            try:
                pv = translate_pv(pv)
            except TranslationError:
                return "", ""
        return str(pv.source.get("driver") or ""), str(pv.source.get("volumeHandle") or "")

    def get_csi_driver_info_from_sc(self, csinode: CSINode | None, pvc: PersistentVolumeClaim) -> tuple[str, str]:
        """getCSIDriverInfoFromSC: the class's provisioner (or the CSI driver of a migrated
        in-tree provisioner) and a placeholder handle unique to the claim."""
        sc_name = pvc.class_name
        if not sc_name:
            # No class: an immediate-binding claim that must be bound before scheduling.
            return "", ""
        sc = self.handle.objects.storage_class(sc_name)
        if sc is None:
            return "", ""
        handle = f"{self.random_volume_id_prefix}-{pvc.namespace}/{pvc.name}"
        provisioner = sc.provisioner
        plugin = plugin_by_name(provisioner)
        if plugin is not None:
            if not is_csi_migration_on(csinode, provisioner):
                return "", ""
            return plugin.csi_driver, handle
        return provisioner, handle


def new_csi(args: object, handle: Handle) -> CSILimits:
    """Plugin factory (registry entry for NodeVolumeLimits). Takes no args."""
    return CSILimits(handle)
