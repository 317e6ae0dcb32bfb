"""Volume-source inspection shared by the volume plugins (VolumeRestrictions, VolumeZone,
NodeVolumeLimits, VolumeBinding).

Mirrors the small upstream helpers these plugins call:
- k8s.io/component-helpers/storage/ephemeral (VolumeClaimName, VolumeIsForPod);
- k8s.io/component-helpers/storage/volume (GetPersistentVolumeClass, CheckNodeAffinity, annotations);
- k8s.io/apimachinery api/errors NewNotFound (the lister's "not found" text);
- k8s.io/csi-translation-lib (v1.30): which in-tree sources are migratable to CSI, the CSI driver
  replacing each in-tree plugin, and the translation of an in-tree source to a CSI
  driver/volumeHandle (and, for PVs, to CSI topology in the node affinity);
- pkg/volume/util attach-limit keys.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.objects import (
    CSINode,
    NodeSelector,
    NodeSelectorTerm,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    Requirement,
    Volume,
)
from kubesched.plugins.helpers.gomath import go_quote
from kubesched.plugins.helpers.nodeaffinity import term_matches

# ---------------------------------------------------------------- well-known names
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_STORAGE_CLASS_BETA = "volume.beta.kubernetes.io/storage-class"
ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
LABEL_REGION_BETA = "failure-domain.beta.kubernetes.io/region"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"
LABEL_INSTANCE_TYPE = "node.kubernetes.io/instance-type"
LABEL_INSTANCE_TYPE_BETA = "beta.kubernetes.io/instance-type"
LABEL_MULTI_ZONE_DELIMITER = "__"

# Access modes / phases.
READ_WRITE_ONCE = "ReadWriteOnce"
READ_ONLY_MANY = "ReadOnlyMany"
READ_WRITE_MANY = "ReadWriteMany"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
CLAIM_LOST = "Lost"
VOLUME_AVAILABLE = "Available"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"

# Resource names in the informer listers' NotFound errors (lister-gen: lowercase singular kind,
# qualified by the group for non-core resources).
RESOURCE_PVC = "persistentvolumeclaim"
RESOURCE_PV = "persistentvolume"
RESOURCE_STORAGE_CLASS = "storageclass.storage.k8s.io"
RESOURCE_CSI_NODE = "csinode.storage.k8s.io"


def not_found(resource: str, name: str) -> str:
    """apierrors.NewNotFound(...).Error(): ``<resource> "<name>" not found``."""
    return f'{resource} "{name}" not found'


# ---------------------------------------------------------------- pod volumes & claims
def ephemeral_claim_name(pod: Pod, vol: Volume) -> str:
    """ephemeral.VolumeClaimName: ``<pod name>-<volume name>``."""
    return f"{pod.name}-{vol.name}"


def volume_is_for_pod(pod: Pod, pvc: PersistentVolumeClaim) -> str | None:
    """ephemeral.VolumeIsForPod: the error text when the PVC of a generic ephemeral volume is
    not controlled by the pod, else None."""
    ref = pvc.meta.controller_ref()
    if pod.namespace != pvc.namespace or ref is None or ref.uid != pod.uid:
        return (f"PVC {pvc.namespace}/{pvc.name} was not created for pod "
                f"{pod.namespace}/{pod.name} (pod is not owner)")
    return None


def pod_volume_claim(pod: Pod, vol: Volume) -> tuple[str, bool] | None:
    """(claim name, is generic ephemeral) for a PVC or ephemeral volume, else None."""
    if vol.kind == "persistentVolumeClaim":
        return str(vol.source.get("claimName") or ""), False
    if vol.kind == "ephemeral":
        return ephemeral_claim_name(pod, vol), True
    return None


def pod_uses_claim(pod: Pod, claim_name: str) -> bool:
    """Does one of the pod's persistentVolumeClaim or generic ephemeral volumes name the claim
    ``claim_name`` (of the pod's namespace)?"""
    for v in pod.volumes:
        claim = pod_volume_claim(pod, v)
        if claim is not None and claim[0] == claim_name:
            return True
    return False


def pv_class(pv: PersistentVolume) -> str:
    """storagehelpers.GetPersistentVolumeClass: the beta annotation wins."""
    ann = pv.meta.annotations.get(ANN_STORAGE_CLASS_BETA)
    if ann is not None:
        return ann
    return pv.storage_class_name


def check_node_affinity(affinity: NodeSelector | None, labels: Mapping[str, str]) -> bool:
    """volume.CheckNodeAffinity: true when the PV's required node affinity matches a node with
    these labels. Upstream builds a Node that has only labels, so matchFields on metadata.name
    never match; a selector without any non-empty term matches nothing."""
    if affinity is None:
        return True
    for term in affinity.terms:
        if term.is_empty():
            continue
        if term_matches(term, labels, ""):
            return True
    return False


def is_volume_bound_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> bool:
    """volume.IsVolumeBoundToClaim: claimRef names this claim (and its UID, when set)."""
    if pv.claim_ref is None:
        return False
    ns, name = pv.claim_ref
    if pvc.name != name or pvc.namespace != ns:
        return False
    uid = claim_ref_uid(pv)
    return not uid or uid == pvc.meta.uid


def claim_ref_uid(pv: PersistentVolume) -> str:
    spec = pv.raw.get("spec") if isinstance(pv.raw, Mapping) else None
    ref = spec.get("claimRef") if isinstance(spec, Mapping) else None
    uid = ref.get("uid") if isinstance(ref, Mapping) else None
    return str(uid) if uid else ""


# ---------------------------------------------------------------- attach limits (pkg/volume/util)
EBS_VOLUME_LIMIT_KEY = "attachable-volumes-aws-ebs"
GCE_VOLUME_LIMIT_KEY = "attachable-volumes-gce-pd"
AZURE_VOLUME_LIMIT_KEY = "attachable-volumes-azure-disk"
CINDER_VOLUME_LIMIT_KEY = "attachable-volumes-cinder"
CSI_ATTACH_LIMIT_PREFIX = "attachable-volumes-csi-"
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"
RESOURCE_NAME_LENGTH_LIMIT = 63
DEFAULT_MAX_EBS_VOLUMES = 39
DEFAULT_MAX_EBS_NITRO_VOLUME_LIMIT = 25
EBS_NITRO_LIMIT_REGEX = re.compile(r"^[cmr]5.*|t3|z1d")
DEFAULT_MAX_GCE_PD_VOLUMES = 16
DEFAULT_MAX_AZURE_DISK_VOLUMES = 16
DEFAULT_MAX_CINDER_VOLUMES = 256


def csi_attach_limit_key(driver: str) -> str:
    """volumeutil.GetCSIAttachLimitKey: long driver names are truncated and hashed."""
    if len(CSI_ATTACH_LIMIT_PREFIX) + len(driver) >= RESOURCE_NAME_LENGTH_LIMIT:
        import hashlib  # noqa: PLC0415 - OpenSSL's initialisation (~4 ms) off kubesched run's start

        hashed = hashlib.sha1(driver.encode()).hexdigest()[:16]
        return CSI_ATTACH_LIMIT_PREFIX + driver[:23] + hashed
    return CSI_ATTACH_LIMIT_PREFIX + driver


# ---------------------------------------------------------------- CSI migration (csi-translation-lib)
AWS_EBS_PLUGIN = "kubernetes.io/aws-ebs"
GCE_PD_PLUGIN = "kubernetes.io/gce-pd"
AZURE_DISK_PLUGIN = "kubernetes.io/azure-disk"
AZURE_FILE_PLUGIN = "kubernetes.io/azure-file"
CINDER_PLUGIN = "kubernetes.io/cinder"
VSPHERE_PLUGIN = "kubernetes.io/vsphere-volume"
PORTWORX_PLUGIN = "kubernetes.io/portworx-volume"
RBD_PLUGIN = "kubernetes.io/rbd"


@dataclass(frozen=True, slots=True)
class InTreePlugin:
    """One csi-translation-lib InTreePlugin: in-tree name, replacing CSI driver, the volume
    source field it handles, and the CSI zonal topology key (None: no topology translation)."""

    name: str
    csi_driver: str
    source_kind: str
    topology_key: str | None


# translate.go's inTreePlugins (v1.30: RBD still present; removed in v1.31).
IN_TREE_PLUGINS: tuple[InTreePlugin, ...] = (
    InTreePlugin(GCE_PD_PLUGIN, "pd.csi.storage.gke.io", "gcePersistentDisk", "topology.gke.io/zone"),
    InTreePlugin(AWS_EBS_PLUGIN, "ebs.csi.aws.com", "awsElasticBlockStore", "topology.ebs.csi.aws.com/zone"),
    InTreePlugin(CINDER_PLUGIN, "cinder.csi.openstack.org", "cinder", "topology.cinder.csi.openstack.org/zone"),
    InTreePlugin(AZURE_DISK_PLUGIN, "disk.csi.azure.com", "azureDisk", None),
    InTreePlugin(AZURE_FILE_PLUGIN, "file.csi.azure.com", "azureFile", None),
    InTreePlugin(VSPHERE_PLUGIN, "csi.vsphere.vmware.com", "vsphereVolume", None),
    InTreePlugin(PORTWORX_PLUGIN, "pxd.portworx.com", "portworxVolume", None),
    InTreePlugin(RBD_PLUGIN, "rbd.csi.ceph.com", "rbd", None),
)
_BY_KIND = {p.source_kind: p for p in IN_TREE_PLUGINS}
_BY_NAME = {p.name: p for p in IN_TREE_PLUGINS}


def inline_plugin(vol: Volume) -> InTreePlugin | None:
    """The plugin whose CanSupportInline accepts this pod volume (IsInlineMigratable)."""
    return _BY_KIND.get(vol.kind)


def pv_plugin(pv: PersistentVolume) -> InTreePlugin | None:
    """The plugin whose CanSupport accepts this PV (IsPVMigratable)."""
    return _BY_KIND.get(pv.kind)


def plugin_by_name(name: str) -> InTreePlugin | None:
    """IsMigratableIntreePluginByName / GetCSINameFromInTreeName."""
    return _BY_NAME.get(name)


def migrated_plugins(csinode: CSINode | None) -> frozenset[str]:
    """The CSINode's ``storage.alpha.kubernetes.io/migrated-plugins`` annotation as a set."""
    if csinode is None:
        return frozenset()
    mpa = csinode.meta.annotations.get(ANN_MIGRATED_PLUGINS, "")
    return frozenset(mpa.split(",")) if mpa else frozenset()


def is_csi_migration_on(csinode: CSINode | None, plugin: str) -> bool:
    """nodevolumelimits/utils.go isCSIMigrationOn (v1.30): no CSINode -> off. EBS, GCE PD,
    Azure Disk and Cinder migration is GA and locked on, so any CSINode counts as migrated
    without looking at the annotation; Portworx (gate CSIMigrationPortworx) and RBD (gate
    CSIMigrationRBD) are off by default in v1.30; every other plugin is never migrated."""
    if csinode is None or not plugin:
        return False
    return plugin in (AWS_EBS_PLUGIN, GCE_PD_PLUGIN, AZURE_DISK_PLUGIN, CINDER_PLUGIN)


def is_csi_migration_on_for_plugin(plugin: str) -> bool:
    """volumebinding/binder.go isCSIMigrationOnForPlugin (Portworx gate off in v1.30)."""
    return plugin in (AWS_EBS_PLUGIN, GCE_PD_PLUGIN, AZURE_DISK_PLUGIN, CINDER_PLUGIN)


def is_plugin_migrated_to_csi_on_node(plugin: str, csinode: CSINode | None) -> bool:
    """volumebinding/binder.go isPluginMigratedToCSIOnNode: the CSINode annotation lists it."""
    return plugin in migrated_plugins(csinode)


class TranslationError(Exception):
    """A csi-translation-lib translation failed (malformed in-tree source)."""


_AWS_VOLUME_RE = re.compile(r"^vol-[^/]*$")


def ebs_volume_id(kubernetes_id: str) -> str:
    """KubernetesVolumeIDToEBSVolumeID: ``aws://<zone>/<vol-id>`` -> ``vol-id``; a bare id is
    kept as is."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    rest = kubernetes_id[len("aws://"):]
    # url.Parse: host up to the first '/', then the path (query/fragment would be split off).
    rest = rest.split("?", 1)[0].split("#", 1)[0]
    slash = rest.find("/")
    path = rest[slash:] if slash >= 0 else ""
    aws_id = path.strip("/")
    if not _AWS_VOLUME_RE.match(aws_id):
        raise TranslationError(f"failed to translate Kubernetes ID to EBS Volume ID Invalid format for AWS volume ({kubernetes_id})")
    return aws_id


def _src_str(source: Mapping[str, Any], key: str) -> str:
    v = source.get(key)
    return "" if v is None else str(v)


def _gce_region_from_zones(zones: list[str]) -> str:
    """gce_pd.go getRegionFromZones."""
    if not zones:
        raise TranslationError("no zones specified")
    regions: set[str] = set()
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            raise TranslationError(f"zone in unexpected format, expected: {{locale}}-{{region}}-{{zone}}, got: {zone}")
        regions.add("-".join(parts[:2]))
    if len(regions) != 1:
        raise TranslationError(f"multiple or no regions gotten from zones, got: {sorted(regions)}")
    return next(iter(regions))


def translate_inline_volume(vol: Volume) -> tuple[str, str] | None:
    """TranslateInTreeInlineVolumeToCSI reduced to what the scheduler uses: (CSI driver,
    volumeHandle) of a migratable inline volume, or None when the translation has no CSI
    source. Raises TranslationError on malformed sources."""
    plugin = inline_plugin(vol)
    if plugin is None:
        raise TranslationError(f"could not find in-tree plugin translation logic for {vol.name!r}")
    src = vol.source
    if plugin.name == AWS_EBS_PLUGIN:
        return plugin.csi_driver, ebs_volume_id(_src_str(src, "volumeID"))
    if plugin.name == GCE_PD_PLUGIN:
        return plugin.csi_driver, f"projects/UNSPECIFIED/zones/UNSPECIFIED/disks/{_src_str(src, 'pdName')}"
    if plugin.name == CINDER_PLUGIN:
        return plugin.csi_driver, _src_str(src, "volumeID")
    if plugin.name == AZURE_DISK_PLUGIN:
        return plugin.csi_driver, _src_str(src, "diskURI")
    # Translators of plugins whose migration is never on in v1.30 (Azure File, vSphere,
    # Portworx, RBD) are not reachable from the scheduler.
    raise TranslationError(f"translation of inline {plugin.name} volumes is not supported")


def _topology_values(affinity: NodeSelector | None, key: str) -> list[str]:
    """in_tree_volume.go getTopologyValues: unique values of ``key`` across all terms, sorted."""
    if affinity is None or not affinity.terms:
        return []
    values: set[str] = set()
    for term in affinity.terms:
        for r in term.match_expressions:
            if r.key == key:
                values.update(r.values)
    return sorted(values)


def _topology_key_exists(affinity: NodeSelector | None, key: str) -> bool:
    if affinity is None:
        return False
    return any(r.key == key for term in affinity.terms for r in term.match_expressions)


def _topology_labels(pv: PersistentVolume) -> tuple[str, str]:
    """in_tree_volume.go getTopologyLabel: GA or beta zone/region keys, node affinity first."""
    if _topology_key_exists(pv.node_affinity, LABEL_ZONE):
        return LABEL_ZONE, LABEL_REGION
    if _topology_key_exists(pv.node_affinity, LABEL_ZONE_BETA):
        return LABEL_ZONE_BETA, LABEL_REGION_BETA
    if LABEL_ZONE in pv.meta.labels:
        return LABEL_ZONE, LABEL_REGION
    if LABEL_ZONE_BETA in pv.meta.labels:
        return LABEL_ZONE_BETA, LABEL_REGION_BETA
    return LABEL_ZONE, LABEL_REGION


def _replace_topology(affinity: NodeSelector | None, old: str, new: str) -> NodeSelector | None:
    if affinity is None or not affinity.terms:
        return affinity
    terms = tuple(
        NodeSelectorTerm(
            tuple(Requirement(new, r.operator, r.values) if r.key == old else r for r in t.match_expressions),
            t.match_fields,
        )
        for t in affinity.terms
    )
    return NodeSelector(terms)


def _add_topology(affinity: NodeSelector | None, key: str, zones: list[str]) -> NodeSelector | None:
    """in_tree_volume.go addTopology (its "no valid zones" error is ignored by the caller)."""
    filtered = sorted({z.strip() for z in zones if z.strip()})
    if not filtered:
        return affinity
    terms = affinity.terms if affinity is not None and affinity.terms else (NodeSelectorTerm(),)
    req = Requirement(key, "In", tuple(filtered))
    return NodeSelector(tuple(NodeSelectorTerm(t.match_expressions + (req,), t.match_fields) for t in terms))


def _translate_topology(pv: PersistentVolume, csi_key: str) -> NodeSelector | None:
    """in_tree_volume.go translateTopologyFromInTreeToCSI (node affinity part)."""
    zone_label, region_label = _topology_labels(pv)
    affinity = pv.node_affinity
    if _topology_values(affinity, zone_label):
        affinity = _replace_topology(affinity, zone_label, csi_key)
    elif zone_label in pv.meta.labels:
        affinity = _add_topology(affinity, csi_key, pv.meta.labels[zone_label].split(LABEL_MULTI_ZONE_DELIMITER))
    if region_label == LABEL_REGION_BETA and _topology_values(affinity, region_label):
        affinity = _replace_topology(affinity, region_label, LABEL_REGION)
    return affinity


def translate_pv(pv: PersistentVolume) -> PersistentVolume:
    """TranslateInTreePVToCSI: a copy of an in-tree PV with a ``csi`` source (driver and
    volumeHandle) and, for zonal drivers, the zone topology of its node affinity rewritten to
    the driver's key. Raises TranslationError on malformed sources."""
    plugin = pv_plugin(pv)
    if plugin is None:
        raise TranslationError(f"could not find in-tree plugin translation logic for {pv.name!r}")
    src = pv.source
    affinity = pv.node_affinity
    if plugin.name == AWS_EBS_PLUGIN:
        handle = ebs_volume_id(_src_str(src, "volumeID"))
    elif plugin.name == GCE_PD_PLUGIN:
        zones_label = pv.meta.labels.get(LABEL_ZONE_BETA, "") or pv.meta.labels.get(LABEL_ZONE, "")
        zones = zones_label.split(LABEL_MULTI_ZONE_DELIMITER)
        pd = _src_str(src, "pdName")
        if len(zones) == 1 and zones[0]:
            handle = f"projects/UNSPECIFIED/zones/{zones[0]}/disks/{pd}"
        elif len(zones) > 1:
            handle = f"projects/UNSPECIFIED/regions/{_gce_region_from_zones(zones)}/disks/{pd}"
        else:
            handle = f"projects/UNSPECIFIED/zones/UNSPECIFIED/disks/{pd}"
    elif plugin.name == CINDER_PLUGIN:
        handle = _src_str(src, "volumeID")
    elif plugin.name == AZURE_DISK_PLUGIN:
        handle = _src_str(src, "diskURI")
    else:
        raise TranslationError(f"translation of {plugin.name} persistent volumes is not supported")
    if plugin.topology_key is not None:
        affinity = _translate_topology(pv, plugin.topology_key)
    return dataclasses.replace(
        pv, kind="csi", source={"driver": plugin.csi_driver, "volumeHandle": handle}, node_affinity=affinity)


__all__ = [
    "ANN_BIND_COMPLETED", "ANN_BOUND_BY_CONTROLLER", "ANN_MIGRATED_PLUGINS", "ANN_SELECTED_NODE",
    "ANN_STORAGE_CLASS_BETA", "ATTACHABLE_VOLUMES_PREFIX", "AWS_EBS_PLUGIN", "AZURE_DISK_PLUGIN",
    "AZURE_FILE_PLUGIN", "AZURE_VOLUME_LIMIT_KEY", "CINDER_PLUGIN", "CINDER_VOLUME_LIMIT_KEY", "CLAIM_LOST",
    "CSI_ATTACH_LIMIT_PREFIX", "DEFAULT_MAX_AZURE_DISK_VOLUMES", "DEFAULT_MAX_CINDER_VOLUMES",
    "DEFAULT_MAX_EBS_NITRO_VOLUME_LIMIT", "DEFAULT_MAX_EBS_VOLUMES", "DEFAULT_MAX_GCE_PD_VOLUMES",
    "EBS_NITRO_LIMIT_REGEX", "EBS_VOLUME_LIMIT_KEY", "GCE_PD_PLUGIN", "GCE_VOLUME_LIMIT_KEY", "IN_TREE_PLUGINS",
    "InTreePlugin", "LABEL_HOSTNAME", "LABEL_INSTANCE_TYPE", "LABEL_INSTANCE_TYPE_BETA",
    "LABEL_MULTI_ZONE_DELIMITER", "LABEL_REGION", "LABEL_REGION_BETA", "LABEL_ZONE", "LABEL_ZONE_BETA",
    "NOT_SUPPORTED_PROVISIONER", "PORTWORX_PLUGIN", "RBD_PLUGIN", "READ_ONLY_MANY", "READ_WRITE_MANY",
    "READ_WRITE_ONCE", "READ_WRITE_ONCE_POD", "RESOURCE_CSI_NODE", "RESOURCE_PV", "RESOURCE_PVC",
    "RESOURCE_STORAGE_CLASS", "TranslationError", "VOLUME_AVAILABLE", "VSPHERE_PLUGIN",
    "WAIT_FOR_FIRST_CONSUMER", "check_node_affinity", "claim_ref_uid", "csi_attach_limit_key", "ebs_volume_id",
    "ephemeral_claim_name", "go_quote", "inline_plugin", "is_csi_migration_on", "is_csi_migration_on_for_plugin",
    "is_plugin_migrated_to_csi_on_node", "is_volume_bound_to_claim", "migrated_plugins", "not_found",
    "plugin_by_name", "pod_volume_claim", "pv_class", "pv_plugin", "translate_inline_volume", "translate_pv",
    "volume_is_for_pod",
]
