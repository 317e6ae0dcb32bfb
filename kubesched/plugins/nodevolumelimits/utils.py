"""Shared pieces of the volume-limit plugins (nodevolumelimits/utils.go, non_csi.go constants)."""

from __future__ import annotations

from kubesched.framework import NodeInfo, ObjectLister, Status
from kubesched.objects import PersistentVolumeClaim, Pod
from kubesched.plugins.helpers.volumes import ATTACHABLE_VOLUMES_PREFIX, RESOURCE_PVC, not_found, volume_is_for_pod

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

    def status(self) -> Status:
        """What Filter returns for this error: UnschedulableAndUnresolvable for a missing PVC
        of the pod being scheduled, Error otherwise."""
        if self.not_found:
            return Status.unresolvable(str(self))
        return Status.as_error(str(self))


def lookup_claim(objects: ObjectLister, pod: Pod, pvc_name: str, is_ephemeral: bool,
                 new_pod: bool) -> PersistentVolumeClaim | None:
    """The PVC behind one of ``pod``'s claim volumes, as filterAttachableVolumes (csi.go) and
    filterVolumes (non_csi.go) both fetch it. Raises VolumeLookupError for a claim without a
    name, a missing PVC of the pod being scheduled (``new_pod``; not_found) and a generic
    ephemeral volume's PVC the pod does not own; None for an existing pod's missing PVC, which
    is not counted (no guarantee it belongs to that pod)."""
    if not pvc_name:
        raise VolumeLookupError("PersistentVolumeClaim had no name")
    pvc = objects.pvc(pod.namespace, pvc_name)
    if pvc is None:
        if new_pod:
            raise VolumeLookupError(
                f"looking up PVC {pod.namespace}/{pvc_name}: {not_found(RESOURCE_PVC, pvc_name)}", not_found=True)
        return None
    if is_ephemeral:
        err = volume_is_for_pod(pod, pvc)
        if err is not None:
            raise VolumeLookupError(err)
    return pvc
