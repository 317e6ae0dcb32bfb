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

from kubesched.framework import (
    GVK,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    PreFilterResult,
    Status,
)
from kubesched.objects import CSINode, PersistentVolumeClaim, Pod, Volume
from kubesched.plugins.helpers.volumes import (
    TranslationError,
    csi_attach_limit_key,
    inline_plugin,
    is_csi_migration_on,
    plugin_by_name,
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


class CSILimits:
    name = CSI_NAME

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        self._limits_from_node = not handle.features.enabled("CSILimitsFromCSINodeOnly")
        # Unbound claims are keyed with a random prefix so they never collide with a real
        # volume handle (randomVolumeIDPrefix).
        self.random_volume_id_prefix = uuid.uuid4().hex

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Any new CSINode may make pods rejected for CSI volumes schedulable.
            ClusterEventWithHint(ClusterEvent(GVK.CSI_NODE, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.DELETE)),
            ClusterEventWithHint(ClusterEvent(GVK.PERSISTENT_VOLUME_CLAIM, ActionType.ADD)),
        ]

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
