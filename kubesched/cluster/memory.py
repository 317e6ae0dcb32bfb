"""An in-memory cluster: the objects of a simulation (or a test) and their listers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kubesched.objects import (
    ClusterObjects,
    CSIDriver,
    CSINode,
    Namespace,
    ObjectMeta,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    PodGroup,
    Service,
    StorageClass,
    Workload,
)
from kubesched.objects.devices import DeviceClass, ResourceClaim, ResourceSlice, extended_resource_classes


class MemoryObjects:
    """ObjectLister over in-memory objects (kubesched.framework.ObjectLister)."""

    def __init__(
        self,
        *,
        pvcs: Iterable[PersistentVolumeClaim] = (),
        pvs: Iterable[PersistentVolume] = (),
        storage_classes: Iterable[StorageClass] = (),
        csinodes: Iterable[CSINode] = (),
        csidrivers: Iterable[CSIDriver] = (),
        services: Iterable[Service] = (),
        workloads: Iterable[Workload] = (),
        namespaces: Iterable[Namespace] = (),
        pdbs: Iterable[PodDisruptionBudget] = (),
        pods: Iterable[Pod] = (),
        device_classes: Iterable[DeviceClass] = (),
        resource_slices: Iterable[ResourceSlice] = (),
        resource_claims: Iterable[ResourceClaim] = (),
        device_classes_observed: bool = True,
        pod_groups: Iterable[PodGroup] = (),
    ) -> None:
        """``device_classes_observed``: the ExtendedResourceCache has seen the DeviceClasses
        (an informer's initial list); False leaves it empty until :meth:`observe_device_classes`."""
        self._pvcs = {(c.namespace, c.name): c for c in pvcs}
        self._pvs = {v.name: v for v in pvs}
        self._scs = {s.name: s for s in storage_classes}
        self._csinodes = {c.name: c for c in csinodes}
        self._csidrivers = {c.name: c for c in csidrivers}
        self._services: dict[str, list[Service]] = {}
        for s in services:
            self._services.setdefault(s.namespace, []).append(s)
        self._workloads: dict[str, list[Workload]] = {}
        for w in workloads:
            self._workloads.setdefault(w.namespace, []).append(w)
        self._namespaces = {n.name: n for n in namespaces}
        self._pdbs = list(pdbs)
        self._pods = {(p.namespace, p.name): p for p in pods}
        self._device_classes = {c.name: c for c in device_classes}
        self._observed: set[str] = set(self._device_classes) if device_classes_observed else set()
        self._er_cache: dict[str, DeviceClass] | None = None
        self._slices = list(resource_slices)
        self._claims = {(c.namespace, c.name): c for c in resource_claims}
        self._pod_groups = {(g.namespace, g.name): g for g in pod_groups}

    @classmethod
    def from_cluster(cls, objs: ClusterObjects) -> MemoryObjects:
        return cls(
            pvcs=objs.pvcs, pvs=objs.pvs, storage_classes=objs.storage_classes, csinodes=objs.csinodes,
            csidrivers=objs.csidrivers, services=objs.services, workloads=objs.workloads,
            namespaces=objs.namespaces, pdbs=objs.pdbs, pods=objs.pods, device_classes=objs.device_classes,
            resource_slices=objs.resource_slices, resource_claims=objs.resource_claims,
            device_classes_observed=False, pod_groups=objs.pod_groups,
        )

    def pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        return self._pvcs.get((namespace, name))

    def pvcs(self) -> Sequence[PersistentVolumeClaim]:
        return list(self._pvcs.values())

    def pv(self, name: str) -> PersistentVolume | None:
        return self._pvs.get(name)

    def pvs(self) -> Sequence[PersistentVolume]:
        return list(self._pvs.values())

    def storage_class(self, name: str) -> StorageClass | None:
        return self._scs.get(name)

    def csinode(self, name: str) -> CSINode | None:
        return self._csinodes.get(name)

    def csidriver(self, name: str) -> CSIDriver | None:
        return self._csidrivers.get(name)

    def services(self, namespace: str) -> Sequence[Service]:
        return self._services.get(namespace, ())

    def workloads(self, namespace: str) -> Sequence[Workload]:
        return self._workloads.get(namespace, ())

    def namespace(self, name: str) -> Namespace | None:
        ns = self._namespaces.get(name)
        if ns is None and name:
            # Every namespace used exists (the API server would not accept the object
            # otherwise); one without a document has only its name label. Not added to
            # namespaces(), which lists only what the cluster declared.
            ns = Namespace(ObjectMeta(name=name, labels={"kubernetes.io/metadata.name": name}))
        return ns

    def namespaces(self) -> Sequence[Namespace]:
        return list(self._namespaces.values())

    def pdbs(self) -> Sequence[PodDisruptionBudget]:
        return self._pdbs

    def pod(self, namespace: str, name: str) -> Pod | None:
        return self._pods.get((namespace, name))

    def pods(self, namespace: str) -> Sequence[Pod]:
        return [p for (ns, _), p in self._pods.items() if ns == namespace]

    def pod_group(self, namespace: str, name: str) -> PodGroup | None:
        return self._pod_groups.get((namespace, name))

    def pod_groups(self, namespace: str) -> Sequence[PodGroup]:
        return [g for (ns, _), g in self._pod_groups.items() if ns == namespace]

    def add_pod_group(self, group: PodGroup) -> None:
        """A PodGroup created (or replaced: a group of the same name recreated)."""
        self._pod_groups[(group.namespace, group.name)] = group

    def delete_pod_group(self, group: PodGroup) -> None:
        self._pod_groups.pop((group.namespace, group.name), None)

    def resource_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        return self._claims.get((namespace, name))

    def resource_claims(self) -> Sequence[ResourceClaim]:
        return list(self._claims.values())

    def device_classes(self) -> Mapping[str, DeviceClass]:
        return self._device_classes

    def resource_slices(self) -> Sequence[ResourceSlice]:
        return self._slices

    def extended_resource_classes(self) -> Mapping[str, DeviceClass]:
        """The ExtendedResourceCache: fed only by DeviceClass events (:meth:`observe_device_classes`,
        the informer's initial list), as upstream's chained DeviceClass handler is. A run
        that replays no events (the conformance procedure, like the reference harness) has
        it empty: no extended resource is served by DRA there."""
        if self._er_cache is None:
            self._er_cache = extended_resource_classes(
                {n: c for n, c in self._device_classes.items() if n in self._observed})
        return self._er_cache

    def observe_device_classes(self) -> None:
        """The DeviceClass informer's initial list reached the ExtendedResourceCache."""
        self._observed = set(self._device_classes)
        self._er_cache = None

    def set_resource_claim(self, claim: ResourceClaim) -> None:
        """The claim's status written (allocation, reservedFor), or a new claim created."""
        self._claims[(claim.namespace, claim.name)] = claim

    def delete_resource_claim(self, claim: ResourceClaim) -> None:
        self._claims.pop((claim.namespace, claim.name), None)

    # ---- mutation (simulation)
    def set_pod(self, pod: Pod) -> None:
        self._pods[(pod.namespace, pod.name)] = pod

    def delete_pod(self, pod: Pod) -> None:
        self._pods.pop((pod.namespace, pod.name), None)

    def add_pvc(self, pvc: PersistentVolumeClaim) -> None:
        self._pvcs[(pvc.namespace, pvc.name)] = pvc

    def add_pv(self, pv: PersistentVolume) -> None:
        self._pvs[pv.name] = pv
