"""NodeVolumeLimits (CSI) and the in-tree EBSLimits, GCEPDLimits, AzureDiskLimits and
CinderLimits (framework/plugins/nodevolumelimits: csi.go, non_csi.go, utils.go)."""

from kubesched.plugins.nodevolumelimits.csi import CSI_NAME, CSILimits, new_csi
from kubesched.plugins.nodevolumelimits.non_csi import (
    AZURE_DISK_NAME,
    CINDER_NAME,
    EBS_NAME,
    GCE_PD_NAME,
    NonCSILimits,
    new_azure_disk,
    new_cinder,
    new_ebs,
    new_gce_pd,
)
from kubesched.plugins.nodevolumelimits.utils import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED

# The package's primary plugin is the CSI one, registered as "NodeVolumeLimits".
NAME = CSI_NAME
new = new_csi

__all__ = [
    "AZURE_DISK_NAME", "CINDER_NAME", "CSI_NAME", "CSILimits", "EBS_NAME", "ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED",
    "GCE_PD_NAME", "NAME", "NonCSILimits", "new", "new_azure_disk", "new_cinder", "new_csi", "new_ebs", "new_gce_pd",
]
