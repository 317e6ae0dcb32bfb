"""VolumeBinding: a pod's claims must be bound to PVs whose node affinity the node satisfies,
or (WaitForFirstConsumer) bindable on the node to an available PV or by dynamic provisioning
(PreFilter, Filter, Reserve/Unreserve, PreBind, PreScore/Score).

Mirrors framework/plugins/volumebinding/volume_binding.go (v1.30). One difference: PreBind
does not itself update the API and wait for the binding (BindPodVolumes); it records the
assumed decisions on the cycle state (see pending_volume_bindings) for the caller to carry out:
live mode writes them and waits for the PV controller (kubesched.live.volumes, the Scheduler's
``volume_binder`` hook, right after PreBind), the simulators complete the binding as the PV
controller would (kubesched.cluster.pvcontroller). VolumeCapacityPriority (Score) is off in
v1.30: PreScore returns Skip unless the plugin is built with ``enable_volume_capacity_priority``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from kubesched.config.args import UtilizationShapePoint, VolumeBindingArgs
from kubesched.errors import ConfigError
from kubesched.framework import (
    GVK,
    SKIP,
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
from kubesched.objects import CSIDriver, CSINode, PersistentVolumeClaim, Pod, StorageClass
from kubesched.plugins.helpers.eventobjects import as_objects, present
from kubesched.plugins.helpers.shape_score import MAX_UTILIZATION, broken_linear, scale_shape
from kubesched.plugins.helpers.volumes import (
    ANN_MIGRATED_PLUGINS,
    CLAIM_LOST,
    RESOURCE_PVC,
    go_quote,
    not_found,
    pod_uses_claim,
    pod_volume_claim,
    volume_is_for_pod,
)
from kubesched.plugins.volumebinding.binder import (
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NODE_CONFLICT_136,
    BinderError,
    PodVolumeClaims,
    PodVolumes,
    VolumeBinder,
)

NAME = "VolumeBinding"
STATE_KEY_NAME = NAME
ERR_REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
# The default shape when VolumeCapacityPriority is on (apis/config/v1 defaults).
DEFAULT_SHAPE = (UtilizationShapePoint(0, 0), UtilizationShapePoint(100, 10))


@dataclass(slots=True)
class StateData:
    """stateData. Shared, not copied, by clones (upstream Clone returns itself): Filter results
    recorded during a preemption dry run stay visible, as upstream."""

    pod_volume_claims: PodVolumeClaims | None = None
    pod_volumes_by_node: dict[str, PodVolumes] = field(default_factory=dict)
    has_static_bindings: bool = False
    all_bound: bool = False
    # What PreBind would have sent to the API server (kubesched: applied by the simulator).
    pending_bindings: PodVolumes | None = None

    def clone(self) -> StateData:
        return self


_STATE_KEY: StateKey[StateData] = StateKey(STATE_KEY_NAME)


def pending_volume_bindings(state: CycleState) -> PodVolumes | None:
    """The volume decisions PreBind recorded for the chosen node: PVs with the claimRef to set
    (static bindings) and claims annotated with the selected node (to provision). None when
    every claim was already bound or the pod has none."""
    s = state.get(_STATE_KEY)
    return s.pending_bindings if s is not None else None


class VolumeCapacityScorer:
    """buildScorerFunction: per storage class, the utilization requested/capacity mapped
    through the shape; the node score is the rounded mean over classes."""

    def __init__(self, shape: Sequence[UtilizationShapePoint]) -> None:
        self._points = scale_shape(shape)

    def _class_score(self, requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return broken_linear(self._points, MAX_UTILIZATION)
        return broken_linear(self._points, requested * MAX_UTILIZATION // capacity)

    def __call__(self, class_resources: dict[str, tuple[int, int]]) -> int:
        if not class_resources:
            return 0
        total = sum(self._class_score(r, c) for r, c in class_resources.values())
        return math.floor(total / len(class_resources) + 0.5)


@runtime_checkable
class StorageCapacity(Protocol):
    """What the CSIStorageCapacity hint reads of a storage.k8s.io/v1 CSIStorageCapacity
    (quantities in bytes, None when unset). kubesched loads no CSIStorageCapacity objects
    yet; any object with these two attributes is one."""

    @property
    def capacity(self) -> int | None: ...

    @property
    def maximum_volume_size(self) -> int | None: ...


def _volume_limit(cap: StorageCapacity) -> int | None:
    """binder.go volumeLimit: maximumVolumeSize when set (it is more precise), else capacity."""
    if cap.maximum_volume_size is not None:
        return cap.maximum_volume_size
    return cap.capacity


class VolumeBinding:
    name = NAME

    def __init__(self, handle: Handle, args: VolumeBindingArgs | None = None, *,
                 enable_volume_capacity_priority: bool = False) -> None:
        self.handle = handle
        self._queueing_hints = handle.features.enabled("SchedulerQueueingHints")
        self.args = args or VolumeBindingArgs()
        if self.args.bind_timeout_seconds < 0:
            raise ConfigError(f"Invalid value: {self.args.bind_timeout_seconds}: invalid BindTimeoutSeconds, "
                              "should not be a negative value", field="bindTimeoutSeconds")
        self.binder = VolumeBinder(handle.objects, node_conflict_reason=(
            ERR_REASON_NODE_CONFLICT_136 if handle.features.enabled("VolumeReasons136") else ERR_REASON_NODE_CONFLICT))
        self.scorer: VolumeCapacityScorer | None = None
        if enable_volume_capacity_priority:
            self.scorer = VolumeCapacityScorer(self.args.shape or DEFAULT_SHAPE)

    def sign_pod(self, pod: Pod) -> list[SignFragment]:
        """SignPod: the volume sources but ConfigMaps and Secrets (VolumesSigner)."""
        return [SignFragment(VOLUMES_SIGNER_NAME, volumes_signer(pod))]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        if not self._queueing_hints:
            return [
                # A missing or mis-configured class (allowedTopologies, volumeBindingMode).
                ClusterEventWithHint(ClusterEvent(GVK.STORAGE_CLASS, ActionType.ADD | ActionType.UPDATE)),
                # Claims and volumes get bound.
                ClusterEventWithHint(ClusterEvent(GVK.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE)),
                ClusterEventWithHint(ClusterEvent(GVK.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE)),
                # Node labels vs allowed topologies / PV node affinity.
                ClusterEventWithHint(ClusterEvent(
                    GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT)),
                # In-tree PVs are translated to CSI using the CSINode.
                ClusterEventWithHint(ClusterEvent(GVK.CSI_NODE, ActionType.ADD | ActionType.UPDATE)),
                # Storage capacity tracking.
                ClusterEventWithHint(ClusterEvent(GVK.CSI_DRIVER, ActionType.ADD | ActionType.UPDATE)),
                ClusterEventWithHint(ClusterEvent(GVK.CSI_STORAGE_CAPACITY, ActionType.ADD | ActionType.UPDATE)),
            ]
        # 1.36 EventsToRegister with SchedulerQueueingHints: no preCheck, so no
        # UpdateNodeTaint; CSIDriver updates only (storage capacity switched off).
        return [
            ClusterEventWithHint(ClusterEvent(GVK.STORAGE_CLASS, ActionType.ADD | ActionType.UPDATE),
                                 self.is_schedulable_after_storage_class_change),
            ClusterEventWithHint(ClusterEvent(GVK.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
                                 self.is_schedulable_after_persistent_volume_claim_change),
            ClusterEventWithHint(ClusterEvent(GVK.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(ClusterEvent(GVK.CSI_NODE, ActionType.ADD | ActionType.UPDATE),
                                 self.is_schedulable_after_csi_node_change),
            ClusterEventWithHint(ClusterEvent(GVK.CSI_DRIVER, ActionType.UPDATE),
                                 self.is_schedulable_after_csi_driver_change),
            ClusterEventWithHint(ClusterEvent(GVK.CSI_STORAGE_CAPACITY, ActionType.ADD | ActionType.UPDATE),
                                 self.is_schedulable_after_csi_storage_capacity_change),
        ]

    # ---- queueing hints
    def is_schedulable_after_csi_node_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterCSINodeChange: a new CSINode, or a change of its migrated-plugins
        annotation (which in-tree PVs are translated to CSI on the node)."""
        if old is None:
            return QueueingHint.QUEUE
        original, modified = as_objects(CSINode, old, new)
        before = present(original, "old CSINode").meta.annotations.get(ANN_MIGRATED_PLUGINS, "")
        after = present(modified, "CSINode").meta.annotations.get(ANN_MIGRATED_PLUGINS, "")
        return QueueingHint.QUEUE if before != after else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_persistent_volume_claim_change(self, pod: Pod, old: object | None,
                                                            new: object | None) -> QueueingHint:
        """isSchedulableAfterPersistentVolumeClaimChange: any creation or update of a claim the
        pod uses (by a persistentVolumeClaim or a generic ephemeral volume) in its namespace."""
        _, modified = as_objects(PersistentVolumeClaim, old, new)
        pvc = present(modified, "PersistentVolumeClaim")
        if pod.namespace != pvc.namespace:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if pod_uses_claim(pod, pvc.name) else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_storage_class_change(self, pod: Pod, old: object | None,
                                                  new: object | None) -> QueueingHint:
        """isSchedulableAfterStorageClassChange: any new class; an update only when its
        allowedTopologies changed (volumeBindingMode is immutable)."""
        original, modified = as_objects(StorageClass, old, new)
        if original is None:
            return QueueingHint.QUEUE
        if present(modified, "StorageClass").allowed_topologies != original.allowed_topologies:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_csi_storage_capacity_change(self, pod: Pod, old: object | None,
                                                         new: object | None) -> QueueingHint:
        """isSchedulableAfterCSIStorageCapacityChange: any new capacity; an update only when
        its volume limit (volumeLimit: maximumVolumeSize, else capacity) appeared or grew."""
        if new is not None and not isinstance(new, StorageCapacity):
            raise TypeError(f"expected a CSIStorageCapacity, but got {type(new).__name__}")
        if old is None:
            return QueueingHint.QUEUE
        if not isinstance(old, StorageCapacity):
            raise TypeError(f"expected a CSIStorageCapacity, but got {type(old).__name__}")
        modified = present(new, "CSIStorageCapacity")
        old_limit, new_limit = _volume_limit(old), _volume_limit(modified)
        if new_limit is not None and (old_limit is None or new_limit > old_limit):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_csi_driver_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterCSIDriverChange: a driver of one of the pod's inline CSI volumes
        stopped tracking storage capacity."""
        original, modified_or_none = as_objects(CSIDriver, old, new)
        modified = present(modified_or_none, "CSIDriver")
        for v in pod.volumes:
            if v.kind != "csi" or v.source.get("driver") != modified.name:
                continue
            if present(original, "old CSIDriver").storage_capacity and not modified.storage_capacity:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # ---- PreFilter
    def pod_has_pvcs(self, pod: Pod) -> tuple[bool, str | None]:
        """podHasPVCs: (has a claim, error text)."""
        objects = self.handle.objects
        has_pvc = False
        for v in pod.volumes:
            claim = pod_volume_claim(pod, v)
            if claim is None:
                continue
            name, is_ephemeral = claim
            has_pvc = True
            pvc = objects.pvc(pod.namespace, name)
            if pvc is None:
                if is_ephemeral:
                    # Normal right after the pod was created.
                    return True, f"waiting for ephemeral volume controller to create the persistentvolumeclaim {go_quote(name)}"
                return True, not_found(RESOURCE_PVC, name)
            if pvc.phase == CLAIM_LOST:
                return True, (f"persistentvolumeclaim {go_quote(pvc.name)} bound to non-existent persistentvolume "
                              f"{go_quote(pvc.volume_name)}")
            if pvc.meta.deletion_timestamp is not None:
                return True, f"persistentvolumeclaim {go_quote(pvc.name)} is being deleted"
            if is_ephemeral:
                err = volume_is_for_pod(pod, pvc)
                if err is not None:
                    return True, err
        return has_pvc, None

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status | None]:
        """PreFilter: Skip without claims; reject at once when an immediate claim is unbound."""
        has_pvc, err = self.pod_has_pvcs(pod)
        if err is not None:
            return None, Status.unresolvable(err)
        if not has_pvc:
            state.write(_STATE_KEY, StateData())
            return None, Status.skip()
        try:
            claims = self.binder.get_pod_volume_claims(pod)
        except BinderError as e:
            return None, Status.as_error(str(e))
        if claims.unbound_claims_immediate:
            # The PV controller has to bind them first.
            return None, Status.unresolvable(ERR_REASON_UNBOUND_IMMEDIATE)
        state.write(_STATE_KEY, StateData(pod_volume_claims=PodVolumeClaims(
            bound_claims=claims.bound_claims,
            unbound_claims_delay_binding=claims.unbound_claims_delay_binding,
            unbound_volumes_delay_binding=claims.unbound_volumes_delay_binding,
        )))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    # ---- Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Filter (FindPodVolumes): bound PVs must fit the node; delayed claims need a PV or
        provisioning on it. All reasons are UnschedulableAndUnresolvable."""
        node = node_info.node
        assert node is not None
        s = state.get(_STATE_KEY)
        if s is None or s.pod_volume_claims is None:
            return Status.as_error(f'reading "{STATE_KEY_NAME}" from cycleState: not found')
        try:
            pod_volumes, reasons = self.binder.find_pod_volumes(pod, s.pod_volume_claims, node)
        except BinderError as e:
            return Status.as_error(str(e))
        if reasons:
            return Status.unresolvable(*reasons)
        s.pod_volumes_by_node[node.meta.name] = pod_volumes
        s.has_static_bindings = s.has_static_bindings or bool(pod_volumes.static_bindings)
        return None

    # ---- Score
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """PreScore: Skip unless VolumeCapacityPriority is on and a static binding exists."""
        if self.scorer is None:
            return Status.skip()
        s = state.get(_STATE_KEY)
        if s is None:
            return Status.as_error(f'reading "{STATE_KEY_NAME}" from cycleState: not found')
        if s.has_static_bindings:
            return None
        return Status.skip()

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        if self.scorer is None:
            return 0
        s = state.read(_STATE_KEY)
        pod_volumes = s.pod_volumes_by_node.get(node_info.name)
        if pod_volumes is None:
            return 0
        # Group the static bindings by storage class.
        class_resources: dict[str, tuple[int, int]] = {}
        for b in pod_volumes.static_bindings:
            requested, capacity = b.storage_resource()
            r, c = class_resources.get(b.storage_class_name(), (0, 0))
            class_resources[b.storage_class_name()] = (r + requested, c + capacity)
        return self.scorer(class_resources)

    def score_extensions(self) -> None:
        return None

    # ---- Reserve
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Reserve: assume the node's decisions in the binder's cache."""
        s = state.get(_STATE_KEY)
        if s is None:
            return Status.as_error(f'reading "{STATE_KEY_NAME}" from cycleState: not found')
        pod_volumes = s.pod_volumes_by_node.get(node_name)
        if pod_volumes is not None:
            try:
                s.all_bound = self.binder.assume_pod_volumes(pod, node_name, pod_volumes)
            except BinderError as e:
                return Status.as_error(str(e))
        else:
            # No decisions: the pod references no claim.
            s.all_bound = True
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Unreserve: drop the assumed objects (idempotent)."""
        s = state.get(_STATE_KEY)
        if s is None:
            return
        pod_volumes = s.pod_volumes_by_node.get(node_name)
        if pod_volumes is None:
            return
        self.binder.revert_assumed_pod_volumes(pod_volumes)
        s.pending_bindings = None

    # ---- PreBind
    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """PreBindPreFlight (1.36): Skip when every claim was bound, else work to do."""
        s = state.get(_STATE_KEY)
        if s is None:
            return Status.as_error(f'reading "{STATE_KEY_NAME}" from cycleState: not found')
        if s.all_bound:
            return SKIP
        if node_name not in s.pod_volumes_by_node:
            return Status.as_error(f"no pod volumes found for node {go_quote(node_name)}")
        return None

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """PreBind: nothing to do when all claims were bound. Otherwise upstream writes the
        assumed PVs/PVCs to the API server and waits for the PV controller; kubesched records
        them (pending_volume_bindings) for the live volume binder (or the simulator) to apply."""
        s = state.get(_STATE_KEY)
        if s is None:
            return Status.as_error(f'reading "{STATE_KEY_NAME}" from cycleState: not found')
        if s.all_bound:
            return None
        pod_volumes = s.pod_volumes_by_node.get(node_name)
        if pod_volumes is None:
            return Status.as_error(f"no pod volumes found for node {go_quote(node_name)}")
        s.pending_bindings = pod_volumes
        return None


def new(args: object, handle: Handle) -> VolumeBinding:
    """Plugin factory (registry entry). Args: VolumeBindingArgs (None -> defaults)."""
    if args is not None and not isinstance(args, VolumeBindingArgs):
        raise ConfigError(f"want args to be of type VolumeBindingArgs, got {type(args).__name__}")
    return VolumeBinding(handle, args)
