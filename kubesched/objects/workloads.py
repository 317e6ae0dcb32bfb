"""The pods workload controllers would create, for controllers whose pods the input lacks.

"What if I apply this Deployment?" needs the Deployment's pods. Given the controllers and
what the cluster already holds, this module does what v1.30's controllers would do on their
next sync, once, and returns the new objects (parsed, not yet admitted: the loader runs the
same admission as for Pod documents):

- Deployment (pkg/controller/deployment): when it controls no ReplicaSet, a ReplicaSet
  ``<deployment>-<pod-template-hash>`` of ``spec.replicas`` owned by it, and that ReplicaSet's
  pods. Nothing while ``spec.paused``.
- ReplicaSet / ReplicationController (pkg/controller/replicaset): ``spec.replicas`` minus
  its active pods, named ``<owner>-<5 chars>``.
- StatefulSet (pkg/controller/statefulset): the missing ``<set>-<ordinal>`` pods of
  ``[ordinals.start, start + replicas)``, labelled with their name and index, and a PVC
  ``<template>-<pod>`` per volumeClaimTemplate that does not exist yet.
- DaemonSet (pkg/controller/daemon): one pod per node the controller targets
  (NodeShouldRunDaemonPod: template nodeName, required node affinity, NoSchedule/NoExecute
  taints against the template's tolerations plus the DaemonSet defaults) and which has no
  active pod of it; the pod requires that node by ``matchFields metadata.name`` and carries
  the default DaemonSet tolerations, so the scheduler decides as for real DaemonSet pods.
- Job (pkg/controller/job): ``min(parallelism, completions - succeeded)`` minus its active
  pods (``parallelism`` while none succeeded when ``completions`` is unset); Indexed jobs get
  the lowest free completion indexes. Nothing while suspended or finished.

"Its pods" are the pods whose controller ownerReference names it, plus the orphans its
selector matches (the controllers' ClaimPods adoption); "active" excludes terminal and
terminating pods (controller.FilterActivePods). Names the controllers draw at random (the
5-character suffix, pod-template-hash, controller-revision-hash) are derived from stable
hashes, so a run is reproducible. Templates are validated like the API server would on
create; errors name the field inside the controller (``spec.template.spec.containers[0]...``).
"""

from __future__ import annotations

import copy
import datetime as _dt
import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesched.errors import FieldError
from kubesched.objects.labels import LabelSelector
from kubesched.objects.model import (
    Node,
    NodeSelectorTerm,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
    Workload,
)
from kubesched.objects.parse import _bool, _int, _list, _map, _str, parse_pod, parse_pvc, parse_workload

# Controllers whose missing pods can be synthesized, and the ones the input format of the
# conformance corpus never carries (so synthesizing their pods changes no existing input).
CONTROLLER_KINDS = ("Deployment", "ReplicaSet", "ReplicationController", "StatefulSet", "DaemonSet", "Job")
NEW_CONTROLLER_KINDS = ("Deployment", "DaemonSet", "Job")

POD_TEMPLATE_HASH = "pod-template-hash"
CONTROLLER_REVISION_HASH = "controller-revision-hash"
DS_TEMPLATE_GENERATION = "pod-template-generation"
DS_TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"
SS_POD_NAME = "statefulset.kubernetes.io/pod-name"
POD_INDEX = "apps.kubernetes.io/pod-index"
JOB_CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
LEGACY_JOB_CONTROLLER_UID = "controller-uid"
LEGACY_JOB_NAME = "job-name"
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class",
                             "storageclass.beta.kubernetes.io/is-default-class")

# utilrand's alphabet (no vowels, no 0, 1, 3: no accidental words), used for generated
# names and, through SafeEncodeString, for template hashes.
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
# names.SimpleNameGenerator: a generateName base is cut to 63 - 5 characters.
_MAX_GENERATED_BASE = 58

# util.AddOrUpdateDaemonPodTolerations, in its order: (key, effect); network-unavailable
# only for hostNetwork pods.
_DAEMON_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
_NETWORK_UNAVAILABLE = ("node.kubernetes.io/network-unavailable", "NoSchedule")


def object_uid(kind: str, namespace: str, name: str) -> str:
    """A deterministic UUID-shaped uid for an object the input gave none."""
    import hashlib  # noqa: PLC0415 - OpenSSL's initialisation (~4 ms) off kubesched run's start

    h = hashlib.sha1(f"{kind}/{namespace}/{name}".encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def controller_key(w: Workload) -> str:
    """How reports name a controller: ``Deployment default/web``."""
    return f"{w.kind} {w.namespace}/{w.name}"


def safe_encode(s: str) -> str:
    """rand.SafeEncodeString: each byte mapped into the alphabet."""
    return "".join(_ALPHANUMS[b % len(_ALPHANUMS)] for b in s.encode())


def template_hash(template: Any, collisions: int = 0) -> str:
    """A pod-template-hash / controller-revision-hash: upstream hashes the template with
    FNV-32a (controller.ComputeHash) and writes the decimal value through SafeEncodeString;
    this hashes the template's canonical JSON the same way (stable, not byte-identical)."""
    data = json.dumps(_string_keys(template), sort_keys=True, separators=(",", ":"), default=str)
    if collisions:
        data += f"#{collisions}"
    import hashlib  # noqa: PLC0415

    value = int.from_bytes(hashlib.sha256(data.encode()).digest()[:4], "big")
    return safe_encode(str(value))


def _string_keys(value: Any) -> Any:
    """``value`` with every mapping key a string, as sigs.k8s.io/yaml turns YAML into JSON
    (``1: x`` -> ``"1": x``): sort_keys cannot order mixed int/str keys. The loader bounds
    the nesting depth, so recursing here is safe."""
    if isinstance(value, Mapping):
        return {str(k): _string_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_string_keys(v) for v in value]
    return value


def _suffix(seed: str) -> str:
    import hashlib  # noqa: PLC0415

    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_ALPHANUMS[b % len(_ALPHANUMS)] for b in digest[:5])


def generated_name(base: str, seed: str, attempt: int = 0) -> str:
    """names.SimpleNameGenerator.GenerateName: ``base`` cut to 58 characters + 5 characters
    of utilrand's alphabet, drawn from a stable hash of ``seed`` (and ``attempt``, to retry
    a name already taken) so that a run is reproducible."""
    return base[:_MAX_GENERATED_BASE] + _suffix(f"{seed}#{attempt}" if attempt else seed)


def _rfc3339(ts: float) -> str:
    dt = _dt.datetime.fromtimestamp(ts, _dt.UTC)
    if ts == int(ts):
        return dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _is_active(p: Pod) -> bool:
    """controller.FilterActivePods: neither terminal nor being deleted."""
    return not p.is_terminal and not p.is_terminating


def _go_map(labels: Mapping[str, str]) -> str:
    """A label map as Go's %v prints it in validation messages (keys sorted)."""
    return "map[" + " ".join(f"{k}:{labels[k]}" for k in sorted(labels)) + "]"


# ---------------------------------------------------------------- what the controllers see
@dataclass(slots=True)
class Inventory:
    """The cluster as the controllers see it: nodes, pods by controller and orphans, taken
    names. Expanding a controller records what it created, so the next one sees it."""

    nodes: Sequence[Node] = ()
    storage_classes: Sequence[StorageClass] = ()
    # The input's latest timestamp: a controller syncing now creates its pods after it.
    now: float | None = None
    owned: dict[tuple[str, str, str], list[Pod]] = field(default_factory=dict)
    orphans: dict[str, list[Pod]] = field(default_factory=dict)
    claimed: set[int] = field(default_factory=set)
    pod_names: set[tuple[str, str]] = field(default_factory=set)
    pvc_names: set[tuple[str, str]] = field(default_factory=set)
    workload_names: set[tuple[str, str, str]] = field(default_factory=set)
    # (namespace, deployment) of Deployments that own a ReplicaSet, or whose ReplicaSet's pods
    # are present (pods owned by "<deployment>-<their pod-template-hash>").
    deployments_with_replica_sets: set[tuple[str, str]] = field(default_factory=set)
    orphan_replica_sets: dict[str, list[Workload]] = field(default_factory=dict)

    @classmethod
    def of(cls, nodes: Sequence[Node], pods: Iterable[Pod], workloads: Iterable[Workload],
           pvcs: Iterable[PersistentVolumeClaim], storage_classes: Sequence[StorageClass],
           now: float | None = None) -> Inventory:
        inv = cls(nodes=nodes, storage_classes=storage_classes, now=now)
        for p in pods:
            inv.pod_names.add((p.namespace, p.name))
            ref = p.meta.controller_ref()
            if ref is None:
                inv.orphans.setdefault(p.namespace, []).append(p)
                continue
            inv.owned.setdefault((ref.kind, p.namespace, ref.name), []).append(p)
            h = p.labels.get(POD_TEMPLATE_HASH)
            if ref.kind == "ReplicaSet" and h and ref.name.endswith("-" + h):
                inv.deployments_with_replica_sets.add((p.namespace, ref.name[: -len(h) - 1]))
        for w in workloads:
            inv.add_workload(w)
        inv.pvc_names.update((c.namespace, c.name) for c in pvcs)
        return inv

    def add_workload(self, w: Workload) -> None:
        self.workload_names.add((w.kind, w.namespace, w.name))
        if w.kind != "ReplicaSet":
            return
        ref = w.meta.controller_ref()
        if ref is None:
            self.orphan_replica_sets.setdefault(w.namespace, []).append(w)
        elif ref.kind == "Deployment":
            self.deployments_with_replica_sets.add((w.namespace, ref.name))

    def pods_of(self, w: Workload) -> list[Pod]:
        """Pods whose controller reference names ``w`` (same uid when both have one), then
        the orphans its selector matches, which it adopts (ClaimPods): an orphan is adopted
        by the first controller that claims it; terminating orphans are not adopted."""
        uid = w.meta.uid
        out = []
        for p in self.owned.get((w.kind, w.namespace, w.name), ()):
            ref = p.meta.controller_ref()
            if ref is not None and (not uid or not ref.uid or ref.uid == uid):
                out.append(p)
        sel = w.selector
        if sel is not None and not sel.is_empty():
            for p in self.orphans.get(w.namespace, ()):
                if id(p) not in self.claimed and not p.is_terminating and sel.matches(p.labels):
                    self.claimed.add(id(p))
                    out.append(p)
        return out

    def has_replica_sets(self, d: Workload) -> bool:
        """The Deployment controls a ReplicaSet already (or would adopt an orphan one)."""
        if (d.namespace, d.name) in self.deployments_with_replica_sets:
            return True
        sel = d.selector
        if sel is None or sel.is_empty():
            return False
        for rs in self.orphan_replica_sets.get(d.namespace, ()):
            if sel.matches(rs.meta.labels):
                return True
        return False

    def generate_name(self, namespace: str, base: str, seed: str) -> str:
        """generateName: ``base`` (cut to 58 characters) + 5 characters, unique in the namespace."""
        for attempt in itertools.count():
            name = generated_name(base, seed, attempt)
            if (namespace, name) not in self.pod_names:
                self.pod_names.add((namespace, name))
                return name
        raise AssertionError("unreachable")  # pragma: no cover

    def default_storage_class(self) -> str | None:
        """DefaultStorageClass admission: the newest class annotated default (then by name)."""
        defaults = [sc for sc in self.storage_classes
                    if any(sc.meta.annotations.get(a) == "true" for a in DEFAULT_CLASS_ANNOTATIONS)]
        if not defaults:
            return None
        defaults.sort(key=lambda sc: (-(sc.meta.creation_timestamp or 0.0), sc.name))
        return defaults[0].name


@dataclass(slots=True)
class Expansion:
    """What one controller created: pods (in creation order), ReplicaSets, PVCs, and why
    (what the controller saw: "2 of 5 replicas present ...")."""

    pods: list[Pod] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    pvcs: list[PersistentVolumeClaim] = field(default_factory=list)
    why: str = ""


# ---------------------------------------------------------------- templates
@dataclass(frozen=True, slots=True)
class _Template:
    """A controller's pod template: as written, and read as a pod."""

    meta: Mapping[str, Any]  # spec.template.metadata as written
    spec: Mapping[str, Any]  # spec.template.spec as written
    pod: Pod  # the template read as a pod: validated once
    raw: Mapping[str, Any]  # spec.template

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.pod.meta.labels)


def _template(w: Workload, restart_policies: tuple[str, ...]) -> _Template:
    spec = _map(w.raw.get("spec"), "spec")
    if spec.get("template") is None:
        raise FieldError("spec.template", "Required value")
    tmpl = _map(spec.get("template"), "spec.template")
    tmeta = _map(tmpl.get("metadata"), "spec.template.metadata")
    tspec = _map(tmpl.get("spec"), "spec.template.spec")
    try:
        pod = parse_pod({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {**tmeta, "name": w.name, "namespace": w.namespace}, "spec": tspec})
    except FieldError as e:
        raise e.under("spec.template") from None
    # ValidatePodTemplateSpecForReplicaSet & co: Always only; Jobs: OnFailure or Never.
    restart = _str(tspec.get("restartPolicy"), "spec.template.spec.restartPolicy", "Always")
    if restart not in restart_policies:
        supported = ", ".join(f'"{r}"' for r in restart_policies)
        raise FieldError("spec.template.spec.restartPolicy",
                         f'Unsupported value: "{restart}": supported values: {supported}')
    return _Template(tmeta, tspec, pod, tmpl)


def _check_selector(w: Workload, labels: Mapping[str, str], selector: LabelSelector | None) -> None:
    """The controller's selector must exist, select something, and select its template."""
    if selector is None:
        raise FieldError("spec.selector", "Required value")
    if selector.is_empty():
        raise FieldError("spec.selector", f"Invalid value: {{}}: empty selector is invalid for {w.kind.lower()}")
    if not selector.matches(labels):
        raise FieldError("spec.template.metadata.labels",
                         f"Invalid value: {_go_map(labels)}: `selector` does not match template `labels`")


def _count(spec: Mapping[str, Any], name: str, default: int | None) -> int | None:
    raw = spec.get(name)
    if raw is None:
        return default
    n = _int(raw, f"spec.{name}")
    if n < 0:
        raise FieldError(f"spec.{name}", f"Invalid value: {n}: must be greater than or equal to 0")
    return n


def _owner(w: Workload, default_api_version: str) -> dict[str, Any]:
    api_version = w.raw.get("apiVersion")
    return {"apiVersion": api_version if isinstance(api_version, str) else default_api_version, "kind": w.kind,
            "name": w.name, "uid": w.meta.uid or object_uid(w.kind, w.namespace, w.name),
            "controller": True, "blockOwnerDeletion": True}


def _created(w: Workload, inv: Inventory, offset: int = 1) -> float | None:
    """When the controller creates a pod: it syncs now, so 1 s (``offset`` s) after both its
    own creationTimestamp and the input's latest timestamp (a node that joined after the
    DaemonSet gets its pod when it joins). None when the controller has no timestamp:
    admission then defaults it by position, as for a Pod document."""
    ts = w.meta.creation_timestamp
    if ts is None:
        return None
    return max(ts, inv.now if inv.now is not None else ts) + offset


def _pod(w: Workload, t: _Template, name: str, *, generate_name: str | None, labels: Mapping[str, str],
         owner: Mapping[str, Any], created: float | None, annotations: Mapping[str, str] | None = None,
         spec_changes: Mapping[str, Any] | None = None) -> Pod:
    """controller.GetPodFromTemplate: the template's labels, annotations and spec, the owner
    as controller reference, in the controller's namespace."""
    md: dict[str, Any] = {"name": name, "namespace": w.namespace}
    if generate_name is not None:
        md["generateName"] = generate_name
    md["labels"] = dict(labels)
    ann = {**t.pod.meta.annotations, **(annotations or {})}
    if ann:
        md["annotations"] = ann
    md["ownerReferences"] = [dict(owner)]
    if created is not None:
        md["creationTimestamp"] = _rfc3339(created)
    spec = copy.deepcopy(dict(t.spec))
    spec.update(spec_changes or {})
    try:
        return parse_pod({"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec})
    except FieldError as e:  # pragma: no cover - the template was validated
        raise e.under("spec.template") from None


# ---------------------------------------------------------------- the controllers
def expand(w: Workload, inv: Inventory) -> Expansion:
    """What ``w``'s controller creates on its next sync; FieldError names the field of ``w``."""
    if w.kind == "Deployment":
        return _deployment(w, inv)
    if w.kind in ("ReplicaSet", "ReplicationController"):
        return _replicated(w, inv)
    if w.kind == "StatefulSet":
        return _statefulset(w, inv)
    if w.kind == "DaemonSet":
        return _daemonset(w, inv)
    if w.kind == "Job":
        return _job(w, inv)
    raise ValueError(f"{w.kind} is not a workload controller")


def _replicated(w: Workload, inv: Inventory) -> Expansion:
    """ReplicaSetController.manageReplicas: create replicas - active pods."""
    spec = _map(w.raw.get("spec"), "spec")
    replicas = _count(spec, "replicas", 1) or 0
    t = _template(w, ("Always",))
    _check_selector(w, t.labels, w.selector)
    pods = inv.pods_of(w)
    active = [p for p in pods if _is_active(p)]
    out = Expansion(why=_replica_why(w, replicas, len(active), inv))
    owner = _owner(w, "apps/v1" if w.kind == "ReplicaSet" else "v1")
    base = f"{w.name}-"
    for k in range(replicas - len(active)):
        name = inv.generate_name(w.namespace, base, f"{controller_key(w)}/{k}")
        out.pods.append(_pod(w, t, name, generate_name=base, labels=t.labels, owner=owner, created=_created(w, inv)))
    return out


def _replica_why(w: Workload, replicas: int, active: int, inv: Inventory) -> str:
    """Why a ReplicaSet/RC/StatefulSet gets pods: a dump holding some of its pods (with its
    ownerReference) but fewer than spec.replicas shows its controller mid-flight."""
    owned = sum(1 for p in inv.owned.get((w.kind, w.namespace, w.name), ()) if _is_active(p))
    why = f"{active} of {replicas} replicas present"
    if owned:
        return f"{why} (pods with its ownerReference): its controller is mid-flight and creates the rest"
    ref = w.meta.controller_ref()
    if ref is not None:
        return f"{why}; it is owned by {ref.kind} {ref.name}, whose controller scales it"
    return f"{why}; the input shows controllers at work (a controller object or an ownerReference)"


def _deployment(w: Workload, inv: Inventory) -> Expansion:
    """DeploymentController on a Deployment with no ReplicaSet: getNewReplicaSet creates
    ``<name>-<pod-template-hash>`` (template and selector get the hash label) scaled to
    spec.replicas at once (no old ReplicaSet to scale down), whose pods follow."""
    spec = _map(w.raw.get("spec"), "spec")
    replicas = _count(spec, "replicas", 1) or 0
    t = _template(w, ("Always",))
    _check_selector(w, t.labels, w.selector)
    if _bool(spec.get("paused"), "spec.paused") or inv.has_replica_sets(w):
        return Expansion()
    collisions = _int(_map(w.raw.get("status"), "status").get("collisionCount"), "status.collisionCount", 0)
    while True:
        h = template_hash(t.raw, collisions)
        rs_name = f"{w.name}-{h}"
        if ("ReplicaSet", w.namespace, rs_name) not in inv.workload_names:
            break
        collisions += 1
    labels = {**t.labels, POD_TEMPLATE_HASH: h}
    selector = copy.deepcopy(dict(_map(spec.get("selector"), "spec.selector")))
    selector["matchLabels"] = {**(selector.get("matchLabels") or {}), POD_TEMPLATE_HASH: h}
    md: dict[str, Any] = {
        "name": rs_name, "namespace": w.namespace, "uid": object_uid("ReplicaSet", w.namespace, rs_name),
        "labels": labels,
        "annotations": {"deployment.kubernetes.io/desired-replicas": str(replicas),
                        "deployment.kubernetes.io/revision": "1"},
        "ownerReferences": [_owner(w, "apps/v1")],
    }
    if w.meta.creation_timestamp is not None:
        md["creationTimestamp"] = _rfc3339(w.meta.creation_timestamp)
    rs_raw = {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": md,
        "spec": {"replicas": replicas, "selector": selector,
                 "template": {**copy.deepcopy(dict(t.raw)),
                              "metadata": {**copy.deepcopy(dict(t.meta)), "labels": labels}}},
    }
    try:
        rs = parse_workload(rs_raw)
        inv.add_workload(rs)
        out = _replicated(rs, inv)
    except FieldError as e:  # pragma: no cover - built from a validated template
        raise FieldError(e.path, f"in the generated ReplicaSet {rs_name}: {e.message}") from None
    out.workloads.insert(0, rs)
    out.why = f"it controls no ReplicaSet in the input: its controller creates ReplicaSet {rs_name} with " \
              f"{replicas} replicas"
    return out


def _statefulset(w: Workload, inv: Inventory) -> Expansion:
    """StatefulSetControl: the missing ordinals in [start, start + replicas), each with
    its identity labels, hostname/subdomain and its claims (created when missing);
    OrderedReady creates them one after the other, so their timestamps follow ordinals."""
    spec = _map(w.raw.get("spec"), "spec")
    replicas = _count(spec, "replicas", 1) or 0
    t = _template(w, ("Always",))
    _check_selector(w, t.labels, w.selector)
    ordinals = _map(spec.get("ordinals"), "spec.ordinals")
    start = _int(ordinals.get("start"), "spec.ordinals.start", 0)
    if start < 0:
        raise FieldError("spec.ordinals.start", f"Invalid value: {start}: must be greater than or equal to 0")
    policy = _str(spec.get("podManagementPolicy"), "spec.podManagementPolicy", "OrderedReady")
    if policy not in ("OrderedReady", "Parallel"):
        raise FieldError("spec.podManagementPolicy",
                         f'Unsupported value: "{policy}": supported values: "OrderedReady", "Parallel"')
    service = _str(spec.get("serviceName"), "spec.serviceName")
    claims: list[tuple[str, Mapping[str, Any], str]] = []
    for i, c in enumerate(_list(spec.get("volumeClaimTemplates"), "spec.volumeClaimTemplates")):
        path = f"spec.volumeClaimTemplates[{i}]"
        cm = _map(c, path)
        cname = _str(_map(cm.get("metadata"), f"{path}.metadata").get("name"), f"{path}.metadata.name")
        if not cname:
            raise FieldError(f"{path}.metadata.name", "Required value")
        claims.append((cname, cm, path))
        _claim(w, cm, f"{cname}-{w.name}-{start}", path, None)  # validate even if nothing is created
    revision = f"{w.name}-{template_hash(t.raw)}"
    inv.pods_of(w)  # adoption only: the ordinals present are found by name below
    owner = _owner(w, "apps/v1")
    claim_names = {cname for cname, _, _ in claims}
    kept_volumes = [v for v in _list(t.spec.get("volumes"), "spec.template.spec.volumes")
                    if not (isinstance(v, Mapping) and v.get("name") in claim_names)]
    default_class = inv.default_storage_class()
    present = sum(1 for o in range(start, start + replicas) if (w.namespace, f"{w.name}-{o}") in inv.pod_names)
    out = Expansion(why=_replica_why(w, replicas, present, inv))
    for ordinal in range(start, start + replicas):
        name = f"{w.name}-{ordinal}"
        if (w.namespace, name) in inv.pod_names:
            continue
        inv.pod_names.add((w.namespace, name))
        volumes: list[Any] = []
        for cname, cm, path in claims:
            claim_name = f"{cname}-{name}"
            if (w.namespace, claim_name) not in inv.pvc_names:
                inv.pvc_names.add((w.namespace, claim_name))
                out.pvcs.append(_claim(w, cm, claim_name, path, default_class))
            volumes.append({"name": cname, "persistentVolumeClaim": {"claimName": claim_name}})
        volumes.extend(copy.deepcopy(kept_volumes))
        changes: dict[str, Any] = {"hostname": name}
        if service:
            changes["subdomain"] = service
        if volumes:
            changes["volumes"] = volumes
        labels = {**t.labels, SS_POD_NAME: name, POD_INDEX: str(ordinal), CONTROLLER_REVISION_HASH: revision}
        created = _created(w, inv, 1 + (len(out.pods) if policy == "OrderedReady" else 0))
        out.pods.append(_pod(w, t, name, generate_name=None, labels=labels, owner=owner, created=created,
                             spec_changes=changes))
    return out


def _claim(w: Workload, template: Mapping[str, Any], name: str, path: str,
           default_class: str | None) -> PersistentVolumeClaim:
    """getPersistentVolumeClaims: the template's claim in the set's namespace, labelled with
    the set's matchLabels too; DefaultStorageClass admission gives a class-less claim the
    default class. Unbound, as a new claim is."""
    tm = _map(template.get("metadata"), f"{path}.metadata")
    labels = dict(_map(tm.get("labels"), f"{path}.metadata.labels"))
    if w.selector is not None:
        labels.update(w.selector.match_labels)
    md: dict[str, Any] = {"name": name, "namespace": w.namespace, "labels": labels}
    if tm.get("annotations") is not None:
        md["annotations"] = copy.deepcopy(tm.get("annotations"))
    spec = copy.deepcopy(dict(_map(template.get("spec"), f"{path}.spec")))
    if spec.get("storageClassName") is None and default_class is not None:
        spec["storageClassName"] = default_class
    try:
        return parse_pvc({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": md, "spec": spec})
    except FieldError as e:
        raise e.under(path) from None


def _daemon_tolerations(tolerations: list[Any], host_network: bool) -> list[Any]:
    """AddOrUpdateDaemonPodTolerations through v1helper.AddOrUpdateTolerationInPodSpec: a
    toleration with the same key, operator, value and effect (MatchToleration) is replaced
    unless identical; otherwise the default is appended."""
    out = copy.deepcopy(tolerations)
    wanted = list(_DAEMON_TOLERATIONS) + ([_NETWORK_UNAVAILABLE] if host_network else [])
    for key, effect in wanted:
        tol = {"key": key, "operator": "Exists", "effect": effect}
        new: list[Any] = []
        updated = False
        identical = False
        for old in out:
            om = old if isinstance(old, Mapping) else {}
            same = ((om.get("key") or "") == key and (om.get("effect") or "") == effect
                    and (om.get("operator") or "") == "Exists" and (om.get("value") or "") == "")
            if same:
                if om.get("tolerationSeconds") is None:
                    identical = True
                    break
                new.append(dict(tol))
                updated = True
                continue
            new.append(old)
        if identical:
            continue
        if not updated:
            new.append(dict(tol))
        out = new
    return out


def _term_matches(term: NodeSelectorTerm, node: Node) -> bool:
    if term.is_empty():
        return False  # an empty term matches nothing
    fields = {"metadata.name": node.name}
    return all(r.matches(node.labels) for r in term.match_expressions) and all(
        r.matches(fields) for r in term.match_fields)


def _should_run(probe: Pod, node: Node, template_node_name: str) -> bool:
    """NodeShouldRunDaemonPod's shouldRun: template nodeName, then predicates() on the pod
    the controller would create (nodeName = node): required node affinity
    (nodeSelector and required terms) and no untolerated NoSchedule/NoExecute taint."""
    if template_node_name and template_node_name != node.name:
        return False
    if probe.node_selector is not None and any(node.labels.get(k) != v for k, v in probe.node_selector.items()):
        return False
    na = probe.affinity.node_affinity if probe.affinity is not None else None
    if na is not None and na.required is not None and not any(_term_matches(t, node) for t in na.required.terms):
        return False
    for taint in node.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not any(t.tolerates(taint) for t in probe.tolerations):
            return False
    return True


def _target_node(p: Pod) -> str:
    """util.GetTargetNodeName: nodeName, else the matchFields metadata.name In [node]."""
    if p.node_name:
        return p.node_name
    na = p.affinity.node_affinity if p.affinity is not None else None
    if na is None or na.required is None:
        return ""
    for term in na.required.terms:
        for r in term.match_fields:
            if r.key == "metadata.name" and r.operator == "In" and len(r.values) == 1:
                return r.values[0]
    return ""


def _node_name_affinity(affinity: Any, node: str) -> dict[str, Any]:
    """ReplaceDaemonSetPodNodeNameNodeAffinity: the required node affinity becomes exactly
    ``matchFields metadata.name In [node]``; everything else of the affinity is kept."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    out = copy.deepcopy(dict(affinity)) if isinstance(affinity, Mapping) else {}
    na = dict(out.get("nodeAffinity") or {})
    required = dict(na.get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    required["nodeSelectorTerms"] = [term]
    na["requiredDuringSchedulingIgnoredDuringExecution"] = required
    out["nodeAffinity"] = na
    return out


def _daemonset(w: Workload, inv: Inventory) -> Expansion:
    """DaemonSetsController.manage: a pod for every node that should run one and has no
    active pod of the DaemonSet (util.CreatePodTemplate: default tolerations,
    controller-revision-hash and pod-template-generation labels; the node by affinity)."""
    t = _template(w, ("Always",))
    _check_selector(w, t.labels, w.selector)
    host_network = _bool(t.spec.get("hostNetwork"), "spec.template.spec.hostNetwork")
    tolerations = _daemon_tolerations(_list(t.spec.get("tolerations"), "spec.template.spec.tolerations"), host_network)
    owner = _owner(w, "apps/v1")
    probe = _pod(w, t, w.name, generate_name=None, labels=t.labels, owner=owner, created=None,
                 spec_changes={"tolerations": tolerations})
    covered = {_target_node(p) for p in inv.pods_of(w) if _is_active(p)}
    template_node = _str(t.spec.get("nodeName"), "spec.template.spec.nodeName")
    labels = {**t.labels, CONTROLLER_REVISION_HASH: template_hash(t.raw),
              DS_TEMPLATE_GENERATION: w.meta.annotations.get(DS_TEMPLATE_GENERATION_ANNOTATION, "1")}
    base = f"{w.name}-"
    out = Expansion(why="no pod of it on a node it targets")
    for node in inv.nodes:
        if node.name in covered or not _should_run(probe, node, template_node):
            continue
        name = inv.generate_name(w.namespace, base, f"{controller_key(w)}/{node.name}")
        changes = {"tolerations": tolerations, "affinity": _node_name_affinity(t.spec.get("affinity"), node.name)}
        out.pods.append(_pod(w, t, name, generate_name=base, labels=labels, owner=owner, created=_created(w, inv),
                             spec_changes=changes))
    return out


def _completed_indexes(raw: Any, path: str) -> set[int]:
    """status.completedIndexes: "1,3-5,7"."""
    text = _str(raw, path)
    out: set[int] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise FieldError(path, f"Invalid value: {text!r}: not a list of intervals")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def _pod_index(p: Pod) -> int | None:
    v = p.meta.annotations.get(JOB_COMPLETION_INDEX, p.labels.get(JOB_COMPLETION_INDEX))
    return int(v) if v is not None and v.isdigit() else None


def _job(w: Workload, inv: Inventory) -> Expansion:
    """JobController.manageJob: the active pods the Job wants minus those it has."""
    spec = _map(w.raw.get("spec"), "spec")
    t = _template(w, ("OnFailure", "Never"))
    completions = _count(spec, "completions", None)
    parallelism = _count(spec, "parallelism", None)
    if completions is None and parallelism is None:  # SetDefaults_Job
        completions = parallelism = 1
    parallelism = 1 if parallelism is None else parallelism
    mode = _str(spec.get("completionMode"), "spec.completionMode", "NonIndexed")
    if mode not in ("NonIndexed", "Indexed"):
        raise FieldError("spec.completionMode",
                         f'Unsupported value: "{mode}": supported values: "NonIndexed", "Indexed"')
    if mode == "Indexed" and completions is None:
        raise FieldError("spec.completions", "Required value: when completion mode is Indexed")
    uid = w.meta.uid or object_uid(w.kind, w.namespace, w.name)
    labels = t.labels
    selector = w.selector
    if not _bool(spec.get("manualSelector"), "spec.manualSelector"):
        # The Job strategy's generateSelector: the uid and name labels, selected by uid.
        for key, value in ((JOB_CONTROLLER_UID, uid), (JOB_NAME, w.name), (LEGACY_JOB_CONTROLLER_UID, uid),
                           (LEGACY_JOB_NAME, w.name)):
            labels.setdefault(key, value)
        if selector is None:
            selector = LabelSelector({JOB_CONTROLLER_UID: uid})
    _check_selector(w, labels, selector)
    status = _map(w.raw.get("status"), "status")
    finished = any(isinstance(c, Mapping) and c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                   for c in _list(status.get("conditions"), "status.conditions"))
    if _bool(spec.get("suspend"), "spec.suspend") or finished:
        return Expansion()
    pods = inv.pods_of(w)
    active = [p for p in pods if _is_active(p)]
    succeeded_pods = [p for p in pods if p.phase == "Succeeded"]
    succeeded = max(_int(status.get("succeeded"), "status.succeeded", 0), len(succeeded_pods))
    indexes: list[int | None]
    if mode == "NonIndexed":
        if completions is None:
            want = len(active) if succeeded > 0 else parallelism
        else:
            want = max(min(completions - succeeded, parallelism), 0)
        indexes = [None] * max(want - len(active), 0)
    else:
        assert completions is not None
        done = _completed_indexes(status.get("completedIndexes"), "status.completedIndexes")
        done.update(i for p in succeeded_pods if (i := _pod_index(p)) is not None)
        running = {i for p in active if (i := _pod_index(p)) is not None}
        free = [i for i in range(completions) if i not in done and i not in running]
        indexes = list(free[: max(parallelism - len(active), 0)])
    owner = _owner(w, "batch/v1")
    out = Expansion(why=f"{len(active)} active pods of the {len(active) + len(indexes)} it runs at once "
                        f"(parallelism {parallelism}, {succeeded} succeeded)")
    for k, index in enumerate(indexes):
        base = f"{w.name}-" if index is None else f"{w.name}-{index}-"
        name = inv.generate_name(w.namespace, base, f"{controller_key(w)}/{k if index is None else index}")
        pod_labels = dict(labels)
        annotations: dict[str, str] = {}
        changes: dict[str, Any] = {}
        if index is not None:
            pod_labels[JOB_COMPLETION_INDEX] = str(index)
            annotations[JOB_COMPLETION_INDEX] = str(index)
            changes["hostname"] = f"{w.name}-{index}"
        out.pods.append(_pod(w, t, name, generate_name=base, labels=pod_labels, owner=owner,
                             created=_created(w, inv), annotations=annotations, spec_changes=changes))
    return out
