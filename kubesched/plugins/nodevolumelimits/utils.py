"""Shared pieces of the volume-limit plugins (nodevolumelimits/utils.go, non_csi.go constants)."""

from __future__ import annotations

from kubesched.framework import NodeInfo
from kubesched.plugins.helpers.volumes import ATTACHABLE_VOLUMES_PREFIX

ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
KUBE_MAX_PD_VOLS = "KUBE_MAX_PD_VOLS"


def volume_limits(node_info: NodeInfo) -> dict[str, int]:
    """volumeLimits: the node's allocatable ``attachable-volumes-*`` scalar resources."""
    return {k: v for k, v in node_info.allocatable.scalar.items() if k.startswith(ATTACHABLE_VOLUMES_PREFIX)}


class VolumeLookupError(Exception):
    """An error while collecting a pod's volumes; ``not_found`` marks a missing PVC of the pod
    being scheduled (UnschedulableAndUnresolvable instead of Error)."""

    def __init__(self, message: str, *, not_found: bool = False) -> None:
        super().__init__(message)
        self.not_found = not_found
