"""The scheduler's volume binder: classifies a pod's claims, finds PVs (or dynamic
provisioning) for unbound WaitForFirstConsumer claims on a node, and assumes the chosen
bindings in an in-memory assume cache.

Mirrors framework/plugins/volumebinding/binder.go (v1.30) and the helpers it uses from
component-helpers/storage/volume (FindMatchingVolume, CheckNodeAffinity, GetBindVolumeToClaim,
IsDelayBindingMode). The API updates of BindPodVolumes are made by the caller (live mode:
kubesched.live.volumes; the simulators complete the binding themselves), which then polls
:meth:`VolumeBinder.check_bindings` until the PV controller has bound every claim.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from kubesched.framework import ObjectLister
from kubesched.objects import (
    CSINode,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
    TopologySelectorTerm,
    Volume,
)
from kubesched.plugins.helpers.volumes import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    VOLUME_AVAILABLE,
    WAIT_FOR_FIRST_CONSUMER,
    TranslationError,
    check_node_affinity,
    claim_ref_uid,
    go_quote,
    is_csi_migration_on_for_plugin,
    is_plugin_migrated_to_csi_on_node,
    is_volume_bound_to_claim,
    pod_volume_claim,
    pv_class,
    pv_plugin,
    translate_pv,
    volume_is_for_pod,
)

# ConflictReasons, in the order FindPodVolumes appends them.
ERR_REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
# 1.36 binder.go ErrReasonNodeConflict.
ERR_REASON_NODE_CONFLICT_136 = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"


class BinderError(Exception):
    """An unexpected error (upstream returns ``err``; the plugin turns it into an Error status)."""


@dataclass(frozen=True, slots=True)
class BindingInfo:
    """A decision to bind ``pvc`` to the pre-provisioned ``pv``."""

    pvc: PersistentVolumeClaim
    pv: PersistentVolume

    def storage_class_name(self) -> str:
        return self.pv.storage_class_name

    def storage_resource(self) -> tuple[int, int]:
        """(requested, capacity) storage in bytes."""
        return self.pvc.requested_storage, self.pv.capacity.get("storage", 0)


@dataclass(slots=True)
class PodVolumes:
    """A pod's volume decisions for one node: static bindings and claims to provision."""

    static_bindings: list[BindingInfo] = field(default_factory=list)
    dynamic_provisions: list[PersistentVolumeClaim] = field(default_factory=list)


@dataclass(slots=True)
class PodVolumeClaims:
    """The pod's claims split as GetPodVolumeClaims does, plus the candidate PVs per class of
    the delayed-binding claims."""

    bound_claims: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_claims_delay_binding: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_claims_immediate: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_volumes_delay_binding: dict[str, list[PersistentVolume]] = field(default_factory=dict)


K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


class AssumeCache(Generic[K, T]):
    """The informer cache with in-memory "assumed" versions on top (assume_cache.go). An
    assumed object is dropped as soon as the lister returns another object for the key, i.e.
    the cluster caught up (upstream: a newer resourceVersion arrived)."""

    def __init__(self, getter: Callable[[K], T | None]) -> None:
        self._getter = getter
        self._assumed: dict[K, tuple[T | None, T]] = {}

    def get(self, key: K) -> T | None:
        current = self._getter(key)
        entry = self._assumed.get(key)
        if entry is not None:
            if entry[0] is current:
                return entry[1]
            del self._assumed[key]
        return current

    def get_api_obj(self, key: K) -> T | None:
        return self._getter(key)

    def assume(self, key: K, obj: T) -> None:
        self._assumed[key] = (self._getter(key), obj)

    def restore(self, key: K) -> None:
        self._assumed.pop(key, None)


def _resource_version(meta_rv: str) -> int:
    try:
        return int(meta_rv)
    except ValueError:
        return 0


def _newer(written: str, seen: str) -> bool:
    """versioner.CompareResourceVersion(written, seen) > 0: what the informer holds is older
    than what the API server answered to the scheduler's update."""
    return _resource_version(written) > _resource_version(seen)


def _with_annotation(meta_raw: Mapping[str, Any], key: str, value: str) -> dict[str, Any]:
    md = dict(meta_raw.get("metadata") or {})
    ann = dict(md.get("annotations") or {})
    ann[key] = value
    md["annotations"] = ann
    out = dict(meta_raw)
    out["metadata"] = md
    return out


def get_bind_volume_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> tuple[PersistentVolume, bool]:
    """volume.GetBindVolumeToClaim: the PV with claimRef set to the claim (and the
    bound-by-controller annotation when the scheduler made the choice); ``dirty`` when changed."""
    should_set_bound_by_controller = not is_volume_bound_to_claim(pv, pvc)
    new = pv
    dirty = False
    if pv.claim_ref is None or pv.claim_ref != (pvc.namespace, pvc.name) or claim_ref_uid(pv) != pvc.meta.uid:
        raw = dict(new.raw)
        spec = dict(raw.get("spec") or {})
        spec["claimRef"] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": pvc.namespace,
                            "name": pvc.name, "uid": pvc.meta.uid, "resourceVersion": pvc.meta.resource_version}
        raw["spec"] = spec
        new = dataclasses.replace(new, claim_ref=(pvc.namespace, pvc.name), raw=raw)
        dirty = True
    if should_set_bound_by_controller and ANN_BOUND_BY_CONTROLLER not in new.meta.annotations:
        meta = dataclasses.replace(new.meta, annotations={**new.meta.annotations, ANN_BOUND_BY_CONTROLLER: "yes"})
        new = dataclasses.replace(new, meta=meta, raw=_with_annotation(new.raw, ANN_BOUND_BY_CONTROLLER, "yes"))
        dirty = True
    return new, dirty


def with_selected_node(pvc: PersistentVolumeClaim, node_name: str) -> PersistentVolumeClaim:
    """The claim with the ``volume.kubernetes.io/selected-node`` annotation set."""
    meta = dataclasses.replace(pvc.meta, annotations={**pvc.meta.annotations, ANN_SELECTED_NODE: node_name})
    return dataclasses.replace(pvc, meta=meta, raw=_with_annotation(pvc.raw, ANN_SELECTED_NODE, node_name))


def check_access_modes(pvc: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    """volume.CheckAccessModes: every mode the claim asks for is offered by the PV."""
    return set(pvc.access_modes) <= set(pv.access_modes)


def _has_storage_request(pvc: PersistentVolumeClaim) -> bool:
    spec = pvc.raw.get("spec") if isinstance(pvc.raw, Mapping) else None
    res = spec.get("resources") if isinstance(spec, Mapping) else None
    req = res.get("requests") if isinstance(res, Mapping) else None
    if isinstance(req, Mapping):
        return "storage" in req
    # Built without a manifest: a non-zero request is a request.
    return pvc.requested_storage > 0


def find_matching_volume(pvc: PersistentVolumeClaim, volumes: list[PersistentVolume], node: Node,
                         excluded: Mapping[str, PersistentVolume]) -> PersistentVolume | None:
    """volume.FindMatchingVolume on the scheduler path (node set, delayBinding true): the PV
    pre-bound to the claim if it fits the node, else the smallest available PV of the claim's
    class, size, access modes, volume mode, selector and node affinity."""
    requested = pvc.requested_storage
    requested_class = pvc.class_name
    selector = pvc.selector
    labels = node.meta.labels
    smallest: PersistentVolume | None = None
    smallest_qty = 0
    for volume in volumes:
        if volume.name in excluded:
            continue
        if volume.claim_ref is not None and not is_volume_bound_to_claim(volume, pvc):
            continue
        qty = volume.capacity.get("storage", 0)
        if qty < requested:
            continue
        if (pvc.volume_mode or "Filesystem") != (volume.volume_mode or "Filesystem"):
            continue
        if volume.meta.deletion_timestamp is not None:
            continue
        node_affinity_valid = check_node_affinity(volume.node_affinity, labels)
        if is_volume_bound_to_claim(volume, pvc):
            # A pre-bound PV that does not fit the node means no match on this node.
            return volume if node_affinity_valid else None
        if volume.phase != VOLUME_AVAILABLE:
            continue
        if selector is not None and not selector.matches(volume.meta.labels):
            continue
        if pv_class(volume) != requested_class:
            continue
        if not node_affinity_valid:
            continue
        if not check_access_modes(pvc, volume):
            continue
        if smallest is None or smallest_qty > qty:
            smallest = volume
            smallest_qty = qty
    return smallest


def match_topology_selector_terms(terms: tuple[TopologySelectorTerm, ...], labels: Mapping[str, str]) -> bool:
    """v1helper.MatchTopologySelectorTerms: no terms match everything; a term matches when all
    its expressions do (an empty term, or one with an empty value list, matches nothing)."""
    if not terms:
        return True
    for term in terms:
        exprs = term.match_label_expressions
        if not exprs:
            continue
        if any(not values for _, values in exprs):
            continue  # labels.NewRequirement(In, []) is an error: the term is skipped
        if all(key in labels and labels[key] in values for key, values in exprs):
            return True
    return False


class VolumeBinder:
    """volumeBinder over the cluster's object listers."""

    def __init__(self, objects: ObjectLister, *, node_conflict_reason: str = ERR_REASON_NODE_CONFLICT) -> None:
        self.objects = objects
        self.node_conflict_reason = node_conflict_reason
        self.pv_cache: AssumeCache[str, PersistentVolume] = AssumeCache(objects.pv)
        self.pvc_cache: AssumeCache[tuple[str, str], PersistentVolumeClaim] = AssumeCache(
            lambda key: objects.pvc(key[0], key[1]))

    # ---- lookups
    def list_pvs(self, class_name: str) -> list[PersistentVolume]:
        """pvCache.ListPVs: PVs of a class, assumed versions included."""
        out = []
        for pv in self.objects.pvs():
            cur = self.pv_cache.get(pv.name)
            if cur is not None and pv_class(cur) == class_name:
                out.append(cur)
        return out

    def is_pvc_fully_bound(self, pvc: PersistentVolumeClaim) -> bool:
        """isPVCFullyBound: volumeName set and the bind-completed annotation present."""
        return pvc.is_bound

    def is_volume_bound(self, pod: Pod, vol: Volume) -> tuple[bool, PersistentVolumeClaim | None]:
        """isVolumeBound: (bound, claim); volumes without a claim count as bound."""
        claim = pod_volume_claim(pod, vol)
        if claim is None:
            return True, None
        name, is_ephemeral = claim
        pvc = self.pvc_cache.get((pod.namespace, name))
        if pvc is None:
            raise BinderError(f"error getting PVC {go_quote(f'{pod.namespace}/{name}')}: not found")
        if is_ephemeral:
            err = volume_is_for_pod(pod, pvc)
            if err is not None:
                raise BinderError(err)
        return self.is_pvc_fully_bound(pvc), pvc

    def is_delay_binding_mode(self, pvc: PersistentVolumeClaim) -> bool:
        """volume.IsDelayBindingMode: a missing class (or none) means immediate."""
        class_name = pvc.class_name
        if not class_name:
            return False
        sc = self.objects.storage_class(class_name)
        if sc is None:
            return False
        if sc.volume_binding_mode is None:
            raise BinderError(f"VolumeBindingMode not set for StorageClass {go_quote(class_name)}")
        return sc.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER

    def get_pod_volume_claims(self, pod: Pod) -> PodVolumeClaims:
        """GetPodVolumeClaims: bound, unbound delayed (WaitForFirstConsumer, no volumeName) and
        unbound immediate (everything else, including pre-bound claims) claims."""
        out = PodVolumeClaims()
        for vol in pod.volumes:
            bound, pvc = self.is_volume_bound(pod, vol)
            if pvc is None:
                continue
            if bound:
                out.bound_claims.append(pvc)
            elif self.is_delay_binding_mode(pvc) and not pvc.volume_name:
                out.unbound_claims_delay_binding.append(pvc)
            else:
                out.unbound_claims_immediate.append(pvc)
        for pvc in out.unbound_claims_delay_binding:
            class_name = pvc.class_name
            out.unbound_volumes_delay_binding[class_name] = self.list_pvs(class_name)
        return out

    # ---- FindPodVolumes
    def try_translate_pv_to_csi(self, pv: PersistentVolume, csinode: CSINode | None) -> PersistentVolume:
        """tryTranslatePVToCSI: in-tree PVs whose plugin is migrated on the node (CSINode
        annotation) are checked with their CSI topology."""
        plugin = pv_plugin(pv)
        if plugin is None:
            return pv
        if not is_csi_migration_on_for_plugin(plugin.name):
            return pv
        if not is_plugin_migrated_to_csi_on_node(plugin.name, csinode):
            return pv
        try:
            return translate_pv(pv)
        except TranslationError as e:
            raise BinderError(f"could not translate pv: {e}") from None

    def check_bound_claims(self, claims: list[PersistentVolumeClaim], node: Node) -> tuple[bool, bool]:
        """checkBoundClaims: (node affinity satisfied, all PVs found); stops at the first miss."""
        csinode = self.objects.csinode(node.meta.name)
        for pvc in claims:
            pv = self.pv_cache.get(pvc.volume_name)
            if pv is None:
                return True, False
            pv = self.try_translate_pv_to_csi(pv, csinode)
            if not check_node_affinity(pv.node_affinity, node.meta.labels):
                return False, True
        return True, True

    def find_matching_volumes(self, claims_to_bind: list[PersistentVolumeClaim],
                              unbound_volumes: Mapping[str, list[PersistentVolume]],
                              node: Node) -> tuple[bool, list[BindingInfo], list[PersistentVolumeClaim]]:
        """findMatchingVolumes: smallest claims first, each PV chosen at most once."""
        claims = sorted(claims_to_bind, key=lambda c: c.requested_storage)
        chosen: dict[str, PersistentVolume] = {}
        found = True
        bindings: list[BindingInfo] = []
        unbound: list[PersistentVolumeClaim] = []
        for pvc in claims:
            pvs = unbound_volumes.get(pvc.class_name, [])
            pv = find_matching_volume(pvc, pvs, node, chosen)
            if pv is None:
                unbound.append(pvc)
                found = False
                continue
            chosen[pv.name] = pv
            bindings.append(BindingInfo(pvc, pv))
        return found, bindings, unbound

    def has_enough_capacity(self, provisioner: str, pvc: PersistentVolumeClaim, sc: StorageClass, node: Node) -> bool:
        """hasEnoughCapacity: only CSI drivers opting into storage capacity tracking are
        checked. kubesched has no CSIStorageCapacity objects, so such a driver never has
        capacity (what kube-scheduler does when none is published)."""
        if not _has_storage_request(pvc):
            return True
        driver = self.objects.csidriver(provisioner)
        if driver is None:
            return True
        if not driver.storage_capacity:
            return True
        return False

    def check_volume_provisions(self, claims: list[PersistentVolumeClaim],
                                node: Node) -> tuple[bool, bool, list[PersistentVolumeClaim]]:
        """checkVolumeProvisions: (provisioning possible, enough storage, claims to provision)."""
        dynamic: list[PersistentVolumeClaim] = []
        for claim in claims:
            class_name = claim.class_name
            if not class_name:
                raise BinderError(f"no class for claim {go_quote(f'{claim.namespace}/{claim.name}')}")
            sc = self.objects.storage_class(class_name)
            if sc is None:
                raise BinderError(f"failed to find storage class {go_quote(class_name)}")
            provisioner = sc.provisioner
            if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True, []
            if not match_topology_selector_terms(sc.allowed_topologies, node.meta.labels):
                return False, True, []
            if not self.has_enough_capacity(provisioner, claim, sc, node):
                return True, False, []
            dynamic.append(claim)
        return True, True, dynamic

    def find_pod_volumes(self, pod: Pod, claims: PodVolumeClaims, node: Node) -> tuple[PodVolumes, list[str]]:
        """FindPodVolumes: the node's volume decisions and the conflict reasons (in upstream's
        order: node conflict, bind conflict, not enough space, PV not found)."""
        unbound_satisfied = True
        bound_satisfied = True
        sufficient_storage = True
        bound_pvs_found = True
        static: list[BindingInfo] = []
        dynamic: list[PersistentVolumeClaim] = []
        if claims.bound_claims:
            bound_satisfied, bound_pvs_found = self.check_bound_claims(claims.bound_claims, node)
        if claims.unbound_claims_delay_binding:
            to_find: list[PersistentVolumeClaim] = []
            to_provision: list[PersistentVolumeClaim] = []
            fast_fail = False
            for claim in claims.unbound_claims_delay_binding:
                selected = claim.meta.annotations.get(ANN_SELECTED_NODE)
                if selected is not None:
                    if selected != node.meta.name:
                        # Fast path: provisioning was already started for another node.
                        unbound_satisfied = False
                        fast_fail = True
                        break
                    to_provision.append(claim)
                else:
                    to_find.append(claim)
            if not fast_fail:
                if to_find:
                    unbound_satisfied, static, unbound = self.find_matching_volumes(
                        to_find, claims.unbound_volumes_delay_binding, node)
                    to_provision.extend(unbound)
                if to_provision:
                    unbound_satisfied, sufficient_storage, dynamic = self.check_volume_provisions(to_provision, node)
        reasons: list[str] = []
        if not bound_satisfied:
            reasons.append(self.node_conflict_reason)
        if not unbound_satisfied:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not sufficient_storage:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not bound_pvs_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return PodVolumes(static, dynamic), reasons

    # ---- Reserve / Unreserve
    def are_pod_volumes_bound(self, pod: Pod) -> bool:
        for vol in pod.volumes:
            try:
                bound, _ = self.is_volume_bound(pod, vol)
            except BinderError:
                bound = False
            if not bound:
                return False
        return True

    def assume_pod_volumes(self, pod: Pod, node_name: str, pod_volumes: PodVolumes) -> bool:
        """AssumePodVolumes: assume the PVs pre-bound to their claims and the claims to
        provision annotated with the selected node; True when everything was already bound.
        ``pod_volumes`` is updated with the assumed objects."""
        if self.are_pod_volumes_bound(pod):
            return True
        new_bindings: list[BindingInfo] = []
        for b in pod_volumes.static_bindings:
            new_pv, dirty = get_bind_volume_to_claim(b.pv, b.pvc)
            if dirty:
                self.pv_cache.assume(new_pv.name, new_pv)
            new_bindings.append(BindingInfo(b.pvc, new_pv))
        new_provisioned: list[PersistentVolumeClaim] = []
        for claim in pod_volumes.dynamic_provisions:
            clone = with_selected_node(claim, node_name)
            self.pvc_cache.assume((clone.namespace, clone.name), clone)
            new_provisioned.append(clone)
        pod_volumes.static_bindings = new_bindings
        pod_volumes.dynamic_provisions = new_provisioned
        return False

    def revert_assumed_pod_volumes(self, pod_volumes: PodVolumes) -> None:
        for b in pod_volumes.static_bindings:
            self.pv_cache.restore(b.pv.name)
        for c in pod_volumes.dynamic_provisions:
            self.pvc_cache.restore((c.namespace, c.name))

    # ---- BindPodVolumes (the wait)
    def check_bindings(self, pod: Pod, node: Node, bindings: Sequence[BindingInfo],
                       claims_to_provision: Sequence[PersistentVolumeClaim]) -> bool:
        """checkBindings, over the API objects (the listers, not the assumed versions): True
        once every claim the scheduler updated is fully bound. ``bindings`` and
        ``claims_to_provision`` hold the objects the API server returned for the updates
        (their resourceVersion tells whether the listers caught up). Raises BinderError when
        binding must fail and scheduling be retried: the pod is gone, a PV lost its claimRef
        or does not fit the node, a provisioner gave up (selected-node annotation removed),
        an object was deleted."""
        csinode = self.objects.csinode(node.meta.name)
        current = self.objects.pod(pod.namespace, pod.name)
        if current is None or (pod.uid and current.uid != pod.uid):
            # When the pod is deleted, binding is cancelled.
            raise BinderError(f"pod does not exist any more: pod {go_quote(pod.name)} not found")
        node_name = node.meta.name
        for b in bindings:
            pv = self.pv_cache.get_api_obj(b.pv.name)
            if pv is None:
                raise BinderError(f"failed to check binding: could not find v1.PersistentVolume {go_quote(b.pv.name)}")
            key = f"{b.pvc.namespace}/{b.pvc.name}"
            pvc = self.pvc_cache.get_api_obj((b.pvc.namespace, b.pvc.name))
            if pvc is None:
                raise BinderError(f"failed to check binding: could not find v1.PersistentVolumeClaim {go_quote(key)}")
            if _newer(b.pv.meta.resource_version, pv.meta.resource_version):
                return False  # our update has not reached the informer yet
            try:
                pv = self.try_translate_pv_to_csi(pv, csinode)
            except BinderError as e:
                raise BinderError(f"failed to translate pv to csi: {e}") from None
            if not check_node_affinity(pv.node_affinity, node.meta.labels):
                raise BinderError(f"pv {go_quote(pv.name)} node affinity doesn't match node {go_quote(node_name)}: "
                                  "no matching NodeSelectorTerms")
            if pv.claim_ref is None or not claim_ref_uid(pv):
                # unbindVolume dropped it.
                raise BinderError(f"ClaimRef got reset for pv {go_quote(pv.name)}")
            if not self.is_pvc_fully_bound(pvc):
                return False
        for claim in claims_to_provision:
            key = f"{claim.namespace}/{claim.name}"
            pvc = self.pvc_cache.get_api_obj((claim.namespace, claim.name))
            if pvc is None:
                raise BinderError(f"failed to check provisioning pvc: could not find v1.PersistentVolumeClaim "
                                  f"{go_quote(key)}")
            if _newer(claim.meta.resource_version, pvc.meta.resource_version):
                return False
            if not pvc.meta.annotations:
                raise BinderError(f"selectedNode annotation reset for PVC {go_quote(pvc.name)}")
            if pvc.meta.annotations.get(ANN_SELECTED_NODE, "") != pod.node_name:
                # A provisioner that fails removes the annotation: the scheduler must retry.
                raise BinderError(f"provisioning failed for PVC {go_quote(pvc.name)}")
            if pvc.volume_name:
                bound_pv = self.pv_cache.get_api_obj(pvc.volume_name)
                if bound_pv is None:
                    return False  # possibly not propagated yet; a deleted PV unbinds the claim
                bound_pv = self.try_translate_pv_to_csi(bound_pv, csinode)
                if not check_node_affinity(bound_pv.node_affinity, node.meta.labels):
                    raise BinderError(f"pv {go_quote(bound_pv.name)} node affinity doesn't match node "
                                      f"{go_quote(node_name)}: no matching NodeSelectorTerms")
            if not self.is_pvc_fully_bound(pvc):
                return False
        return True
