"""EBSLimits, GCEPDLimits, AzureDiskLimits and CinderLimits: the deprecated in-tree volume
count limits (PreFilter, Filter). Each counts the unique volumes of its type (inline, or PVCs
backed by such PVs / provisioned by the in-tree provisioner) and defers to NodeVolumeLimits
once the plugin is migrated to CSI on the node.

Mirrors framework/plugins/nodevolumelimits/non_csi.go (v1.30).
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable
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
    Status,
)
from kubesched.objects import CSINode, Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass, Volume
from kubesched.plugins.helpers.volumes import (
    AWS_EBS_PLUGIN,
    AZURE_DISK_PLUGIN,
    AZURE_VOLUME_LIMIT_KEY,
    CINDER_PLUGIN,
    CINDER_VOLUME_LIMIT_KEY,
    DEFAULT_MAX_AZURE_DISK_VOLUMES,
    DEFAULT_MAX_CINDER_VOLUMES,
    DEFAULT_MAX_EBS_NITRO_VOLUME_LIMIT,
    DEFAULT_MAX_EBS_VOLUMES,
    DEFAULT_MAX_GCE_PD_VOLUMES,
    EBS_NITRO_LIMIT_REGEX,
    EBS_VOLUME_LIMIT_KEY,
    GCE_PD_PLUGIN,
    GCE_VOLUME_LIMIT_KEY,
    LABEL_INSTANCE_TYPE,
    LABEL_INSTANCE_TYPE_BETA,
    is_csi_migration_on,
    pod_volume_claim,
)
from kubesched.plugins.nodevolumelimits.utils import (
    ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,
    KUBE_MAX_PD_VOLS,
    VolumeLookupError,
    lookup_claim,
    volume_limits,
)

EBS_NAME = "EBSLimits"
GCE_PD_NAME = "GCEPDLimits"
AZURE_DISK_NAME = "AzureDiskLimits"
CINDER_NAME = "CinderLimits"


@dataclass(frozen=True, slots=True)
class VolumeFilter:
    """VolumeFilter: how one in-tree type is recognised. ``source_kind`` is the pod/PV volume
    source field, ``id_field`` the field identifying the disk, ``plugin`` the in-tree plugin
    (provisioner) name, ``limit_key`` the node allocatable key, ``default_max`` the limit."""

    plugin: str
    source_kind: str
    id_field: str
    limit_key: str
    default_max: Callable[[Node], int]

    def filter_volume(self, vol: Volume) -> str | None:
        """FilterVolume: the disk id of an inline volume of this type."""
        if vol.kind == self.source_kind:
            return str(vol.source.get(self.id_field) or "")
        return None

    def filter_persistent_volume(self, pv: PersistentVolume) -> str | None:
        """FilterPersistentVolume: the disk id of a PV of this type."""
        if pv.kind == self.source_kind:
            return str(pv.source.get(self.id_field) or "")
        return None

    def match_provisioner(self, sc: StorageClass) -> bool:
        return sc.provisioner == self.plugin

    def is_migrated(self, csinode: CSINode | None) -> bool:
        return is_csi_migration_on(csinode, self.plugin)


def _instance_type(node: Node) -> str:
    labels = node.meta.labels
    # Upstream takes whichever of the two labels its map iteration meets first.
    return labels.get(LABEL_INSTANCE_TYPE) or labels.get(LABEL_INSTANCE_TYPE_BETA) or ""


def max_ebs_volumes(node: Node) -> int:
    """getMaxEBSVolume: Nitro instance types have a lower default."""
    if EBS_NITRO_LIMIT_REGEX.search(_instance_type(node)):
        return DEFAULT_MAX_EBS_NITRO_VOLUME_LIMIT
    return DEFAULT_MAX_EBS_VOLUMES


EBS_VOLUME_FILTER = VolumeFilter(AWS_EBS_PLUGIN, "awsElasticBlockStore", "volumeID", EBS_VOLUME_LIMIT_KEY,
                                 max_ebs_volumes)
GCE_PD_VOLUME_FILTER = VolumeFilter(GCE_PD_PLUGIN, "gcePersistentDisk", "pdName", GCE_VOLUME_LIMIT_KEY,
                                    lambda node: DEFAULT_MAX_GCE_PD_VOLUMES)
AZURE_DISK_VOLUME_FILTER = VolumeFilter(AZURE_DISK_PLUGIN, "azureDisk", "diskName", AZURE_VOLUME_LIMIT_KEY,
                                        lambda node: DEFAULT_MAX_AZURE_DISK_VOLUMES)
CINDER_VOLUME_FILTER = VolumeFilter(CINDER_PLUGIN, "cinder", "volumeID", CINDER_VOLUME_LIMIT_KEY,
                                    lambda node: DEFAULT_MAX_CINDER_VOLUMES)


_ATOI = re.compile(r"^[+-]?[0-9]+$")


def max_vol_limit_from_env() -> int:
    """getMaxVolLimitFromEnv: KUBE_MAX_PD_VOLS when a positive integer, else -1."""
    raw = os.environ.get(KUBE_MAX_PD_VOLS, "")
    # strconv.Atoi syntax: optional sign and decimal digits only.
    if raw and _ATOI.match(raw):
        v = int(raw)
        if v > 0:
            return v
    return -1


class NonCSILimits:
    def __init__(self, name: str, volume_filter: VolumeFilter, handle: Handle) -> None:
        self.name = name
        self.volume_filter = volume_filter
        self.handle = handle
        self.random_volume_id_prefix = uuid.uuid4().hex

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # The framework adds Node/UpdateNodeTaint for plugins registering Node/Add.
            ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.DELETE)),
            ClusterEventWithHint(ClusterEvent(GVK.PERSISTENT_VOLUME_CLAIM, ActionType.ADD)),
        ]

    def max_volumes(self, node: Node) -> int:
        """getMaxVolumeFunc: KUBE_MAX_PD_VOLS, else the per-type default."""
        from_env = max_vol_limit_from_env()
        if from_env > 0:
            return from_env
        return self.volume_filter.default_max(node)

    # ---- PreFilter
    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status | None]:
        """PreFilter: Skip unless the pod has a volume of this type, a PVC or an ephemeral volume."""
        for v in pod.volumes:
            if self.volume_filter.filter_volume(v) is not None or v.kind in ("persistentVolumeClaim", "ephemeral"):
                return None, None
        return None, Status.skip()

    def pre_filter_extensions(self) -> None:
        return None

    # ---- Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod.volumes:
            return None
        new_volumes: set[str] = set()
        try:
            self.filter_volumes(pod, True, new_volumes)
        except VolumeLookupError as e:
            return e.status()
        if not new_volumes:
            return None
        node = node_info.node
        if node is None:
            return Status.as_error("node not found")
        # The CSINode only tells whether the plugin is migrated; once it is, NodeVolumeLimits
        # counts these volumes.
        csinode = self.handle.objects.csinode(node.meta.name)
        if self.volume_filter.is_migrated(csinode):
            return None
        existing: set[str] = set()
        for pi in node_info.pods:
            try:
                self.filter_volumes(pi.pod, False, existing)
            except VolumeLookupError as e:
                return Status.as_error(str(e))
        new_volumes -= existing
        max_attach = self.max_volumes(node)
        from_allocatable = volume_limits(node_info).get(self.volume_filter.limit_key)
        if from_allocatable is not None:
            max_attach = from_allocatable
        if len(existing) + len(new_volumes) > max_attach:
            return Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        return None

    def filter_volumes(self, pod: Pod, new_pod: bool, out: set[str]) -> None:
        """filterVolumes: ids of the pod's volumes of this type (unbound claims or claims of
        missing PVs of a matching provisioner count under a placeholder id)."""
        objects = self.handle.objects
        for v in pod.volumes:
            vid = self.volume_filter.filter_volume(v)
            if vid is not None:
                out.add(vid)
                continue
            claim = pod_volume_claim(pod, v)
            if claim is None:
                continue
            pvc_name, is_ephemeral = claim
            pvc = lookup_claim(objects, pod, pvc_name, is_ephemeral, new_pod)
            if pvc is None:
                continue
            # Until the real volume is known, namespace/claim with a random prefix stands in.
            pv_id = f"{self.random_volume_id_prefix}-{pod.namespace}/{pvc_name}"
            pv_name = pvc.volume_name
            if not pv_name:
                # Unbound (or forcefully unbound): counted if its class matches this type.
                if self._match_provisioner(pvc):
                    out.add(pv_id)
                continue
            pv = objects.pv(pv_name)
            if pv is None:
                if self._match_provisioner(pvc):
                    out.add(pv_id)
                continue
            pvid = self.volume_filter.filter_persistent_volume(pv)
            if pvid is not None:
                out.add(pvid)

    def _match_provisioner(self, pvc: PersistentVolumeClaim) -> bool:
        """matchProvisioner: spec.storageClassName only (not the beta annotation)."""
        if pvc.storage_class_name is None:
            return False
        sc = self.handle.objects.storage_class(pvc.storage_class_name)
        if sc is None:
            return False
        return self.volume_filter.match_provisioner(sc)


def new_ebs(args: object, handle: Handle) -> NonCSILimits:
    """Plugin factory for EBSLimits. Takes no args."""
    return NonCSILimits(EBS_NAME, EBS_VOLUME_FILTER, handle)


def new_gce_pd(args: object, handle: Handle) -> NonCSILimits:
    """Plugin factory for GCEPDLimits. Takes no args."""
    return NonCSILimits(GCE_PD_NAME, GCE_PD_VOLUME_FILTER, handle)


def new_azure_disk(args: object, handle: Handle) -> NonCSILimits:
    """Plugin factory for AzureDiskLimits. Takes no args."""
    return NonCSILimits(AZURE_DISK_NAME, AZURE_DISK_VOLUME_FILTER, handle)


def new_cinder(args: object, handle: Handle) -> NonCSILimits:
    """Plugin factory for CinderLimits (registered, not in the default profile). Takes no args."""
    return NonCSILimits(CINDER_NAME, CINDER_VOLUME_FILTER, handle)
