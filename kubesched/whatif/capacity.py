"""How many more copies of a pod fit on the cluster as it is: kubernetes-sigs/cluster-capacity's
question, answered by the same faithful engine as ``kubesched simulate``.

The procedure (cluster-capacity's ``ClusterCapacity.Run`` / ``nextPod`` / ``Bind`` loop, with
kube-scheduler v1.30's cycle in place of its embedded scheduler):

- **The cluster as it is**: the nodes and the pods bound to them. Pending pods of the input
  take no room and are never scheduled (cluster-capacity reads the cluster's state, it does not
  simulate its queue), and the input's workload controllers are read as written
  (``controllers="none"``): a Deployment under PATH gets no pods, so a template file that is
  also under PATH is never counted twice. Pods with ``status.nominatedNodeName`` reserve
  nothing.
- **Copies** are stamped from each template one at a time, round-robin over the templates
  (cluster-capacity's ``parsePodsReview`` splits its copies the same way, ``i % len(templates)``),
  and each is scheduled by one scheduling cycle of the configured profile with the real
  plugins, then bound into the scheduler cache, so the next copy sees it. One Scheduler and one
  cache serve the whole run.
- **The run stops** at the first copy that does not fit (a mixed workload stops as a whole:
  its proportions are what is asked about), at ``max_copies`` (cluster-capacity's
  ``--max-limit``: ``LimitReached``), or when a copy cannot even be queued (its
  ``schedulingGates``: ``SchedulingGated``). The stopping copy's FailedScheduling message is
  kube-scheduler's own (``0/3 nodes are available: 3 Insufficient cpu.``), with the per-node
  reasons behind it.
- **No preemption by default**, as cluster-capacity: every profile runs with its PostFilter
  plugins disabled (``postFilter: {disabled: [{name: "*"}]}``, DefaultPreemption being the
  in-tree one), so the message is exactly what such a kube-scheduler reports. With
  ``preempt=True`` the profile is used as configured: a copy that does not fit may preempt
  lower-priority pods (victims deleted at once and the copy retried at once, at most three
  attempts, as in the conformance procedure), and the victims are reported.
- **Devices** (Dynamic Resource Allocation): each copy is created as the API server and the
  resourceclaim controller would make it: a claim of the pod made from a ResourceClaimTemplate
  becomes a claim of the copy's own (``<copy>-<claim>-<5 random>``, owned by the copy, named in
  its ``status.resourceClaimStatuses``), a claim named by ``resourceClaimName`` is the one
  claim every copy shares (its devices allocated once, at most 256 pods reserving it). The
  copies' claims are allocated by DynamicResources as for any pod, so the count stops where the
  devices run out, with its message (``cannot allocate all claims``); each node's devices
  used / total after the run are in the result.
- **Ties**: by default the conformance procedure's (nodes in name order, ties to the lowest
  node name), so a run is repeatable and hand-checkable; with a ``seed``, kube-scheduler's
  random tie-breaks drawn from that seed.

A template file (``--pod``) holds one Pod, Deployment, ReplicaSet, ReplicationController or
Job. A controller's copies are the pods its v1.30 controller would create
(kubesched.objects.workloads: a Deployment's through the ReplicaSet it controls in the input
with the same pod template, else through the ReplicaSet ``<name>-<hash>`` its controller
would create), so
default topology spreading selects them as it would the real replicas; every copy is admitted
as the API server would (Priority and DefaultTolerationSeconds admission against the cluster's
PriorityClasses). Only the template is read from a ``--pod`` file: its other documents (a
Service, a PDB) are applied only when the file is under PATH too.

Copies are named ``<name>-<i>`` for a Pod template (cluster-capacity's ``<pod>-<i>``) and
``<generateName><i>`` for a controller's (``checkout-9bcffd666-0``), ``i`` counting every copy
from 0 over all templates, so the copy that stopped the run carries the total count.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubesched.config import KubeSchedulerConfiguration, default_configuration
from kubesched.config.types import PluginRef, PluginSet
from kubesched.errors import FieldError, KubeschedError, ManifestError
from kubesched.features import Features
from kubesched.objects import ClusterObjects, Pod, Source, Workload, load_manifests
from kubesched.objects.kinds import is_ignored_kind

# The loader's own document reader and admission: a template is read and admitted exactly as
# a Pod document of the input would be. (Private to kubesched.objects.manifests; see the
# report: a public reader/admission entry point there would replace these imports.)
from kubesched.objects.manifests import Documents, Input, admit_pods, expand_lists, read_documents, template_claim
from kubesched.objects.parse import PARSERS, parse_pod
from kubesched.objects.workloads import POD_TEMPLATE_HASH, Inventory, controller_key, expand, object_uid
from kubesched.plugins.dynamicresources.usage import NodeDeviceUse, device_use
from kubesched.plugins.registry import Factory
from kubesched.scheduler import Attempt
from kubesched.simulation import MAX_ATTEMPTS, Simulator

# Kinds a --pod file may hold (one of them); StatefulSets and DaemonSets have no
# interchangeable copies (ordinals and their claims; one pod per node).
TEMPLATE_KINDS = ("Pod", "Deployment", "ReplicaSet", "ReplicationController", "Job")
_NOT_COPYABLE = {
    "DaemonSet": "a DaemonSet runs one pod per node it targets, not copies (use its pod template as a Pod)",
    "StatefulSet": "a StatefulSet's pods are ordinals with their own claims, not copies (use its pod template as a "
                   "Pod, or a Deployment)",
}
# Stop reasons (cluster-capacity's FailType, plus the gate and error cases kube-scheduler has).
UNSCHEDULABLE = "Unschedulable"
LIMIT_REACHED = "LimitReached"
SCHEDULING_GATED = "SchedulingGated"
ERROR = "Error"
_BINARY_SUFFIXES = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_DECIMAL_SUFFIXES = (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))


# ----------------------------------------------------------------------------- values
@dataclass(frozen=True, slots=True)
class PodTemplate:
    """One ``--pod`` file read: the admitted, unbound pod every copy is stamped from.

    ``name`` names the template in reports (``Deployment default/checkout``, ``Pod default/web``);
    ``copy_prefix`` + index is a copy's name; ``replica_set`` is the ReplicaSet a Deployment's
    controller would create for it (it joins the cluster's listers, so default spreading
    selects the copies through it), None otherwise."""

    name: str
    file: str
    document: int
    pod: Pod
    copy_prefix: str
    replica_set: Workload | None = None
    field_prefix: str = ""  # where the pod spec is in the document: "spec.template." for a controller

    @property
    def namespace(self) -> str:
        return self.pod.namespace


@dataclass(frozen=True, slots=True)
class TemplateCount:
    """How many copies of one template fit, and where (nodes in name order, only those with
    at least one copy: cluster-capacity's ``ReplicasOnNodes``)."""

    template: str
    file: str
    namespace: str
    copy_names: str  # "checkout-9bcffd666-<i>"
    count: int
    requests: tuple[tuple[str, int], ...]  # resource -> scheduler units (cpu in millicores, others in base units)
    node_selector: tuple[tuple[str, str], ...]
    priority: int
    replicas_on_nodes: tuple[tuple[str, int], ...]
    # The pod's resource claims: "<claim>: ResourceClaimTemplate <name>" (each copy gets its
    # own claim) or "<claim>: ResourceClaim <name>" (shared by every copy).
    claims: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeCapacity:
    """One node after the run: copies per template (in template order) and, from the attempt
    that stopped the run, why that copy did not fit there (empty when it was not rejected
    there, e.g. the run stopped at its limit)."""

    node: str
    copies: tuple[int, ...]
    reasons: tuple[str, ...]
    devices: NodeDeviceUse | None = None  # DRA devices after the run (None: the cluster publishes none)

    @property
    def total(self) -> int:
        return sum(self.copies)


@dataclass(frozen=True, slots=True)
class StopReason:
    """Why no further copy was placed: ``reason`` is Unschedulable (kube-scheduler's
    FailedScheduling), Error (a scheduling error), LimitReached or SchedulingGated;
    ``message`` is kube-scheduler's message for the copy ``pod`` of ``template``;
    ``fail_summary`` counts the nodes per rejection reason (cluster-capacity's FailSummary),
    most frequent first."""

    reason: str
    message: str
    pod: str | None = None
    template: str | None = None
    fail_summary: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class CapacityResult:
    """The answer of :func:`capacity`; :meth:`as_dict` is its JSON form."""

    total: int
    templates: tuple[TemplateCount, ...]
    nodes: tuple[NodeCapacity, ...]
    stop: StopReason
    preemption: bool
    deterministic: bool
    seed: int | None
    attempts: int  # scheduling cycles run (a preempting copy takes up to three)
    placements: tuple[tuple[str, str], ...]  # copy key -> node, in scheduling order
    preempted: tuple[str, ...]  # victims of preempting copies (``preemption`` only)
    bound_pods: int  # pods of the input occupying the nodes
    pending_pods: int  # pending pods of the input, which take no room
    excluded_nodes: tuple[str, ...]
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON/YAML and the HTML report::

            {"kind": "CapacityReview",
             "total": 11,                       # copies placed, all templates
             "templates": [{"name": "Pod default/web", "file": "web.yaml", "namespace": "default",
                            "copyNames": "web-<i>", "count": 11,
                            "requests": {"cpu": 1000, "memory": 2147483648},   # cpu in millicores, else base units
                            "nodeSelector": {}, "priority": 0,
                            "replicasOnNodes": {"node-a": 4, "node-b": 3, "node-c": 4}}],
             "nodes": [{"name": "node-a", "copies": 4, "perTemplate": [4],   # aligned with "templates"
                        "reasons": ["Insufficient cpu"],                     # why the stopping copy did not fit there
                        "devices": {"used": 8, "total": 8, "held": [          # only when the cluster has DRA devices
                            {"device": "gpu.example.com/node-a/gpu-0", "claim": "default/web-0-gpu-x7k2q",
                             "request": "gpu", "pods": ["default/web-0"]}, ...]}}],
             "stop": {"reason": "Unschedulable",                             # | Error | LimitReached | SchedulingGated
                      "message": "0/3 nodes are available: 3 Insufficient cpu.",
                      "pod": "default/web-11", "template": "Pod default/web",
                      "failSummary": {"Insufficient cpu": 3}},               # nodes per reason, most frequent first
             "preemption": false, "deterministic": true, "seed": null, "attempts": 12,
             "placements": {"default/web-0": "node-a", ...},                 # in scheduling order
             "preempted": [], "boundPods": 1, "pendingPods": 0, "excludedNodes": [], "notes": []}
        """
        return {
            "kind": "CapacityReview",
            "total": self.total,
            "templates": [{
                "name": t.template, "file": t.file, "namespace": t.namespace, "copyNames": t.copy_names,
                "count": t.count, "requests": dict(t.requests), "nodeSelector": dict(t.node_selector),
                "priority": t.priority, "replicasOnNodes": dict(t.replicas_on_nodes),
                **({"claims": list(t.claims)} if t.claims else {}),
            } for t in self.templates],
            "nodes": [{"name": n.node, "copies": n.total, "perTemplate": list(n.copies), "reasons": list(n.reasons),
                       **({"devices": n.devices.as_dict()} if n.devices is not None else {})}
                      for n in self.nodes],
            "stop": {"reason": self.stop.reason, "message": self.stop.message, "pod": self.stop.pod,
                     "template": self.stop.template, "failSummary": dict(self.stop.fail_summary)},
            "preemption": self.preemption,
            "deterministic": self.deterministic,
            "seed": self.seed,
            "attempts": self.attempts,
            "placements": dict(self.placements),
            "preempted": list(self.preempted),
            "boundPods": self.bound_pods,
            "pendingPods": self.pending_pods,
            "excludedNodes": list(self.excluded_nodes),
            "notes": list(self.notes),
        }


@dataclass(slots=True)
class CapacityInput:
    """The cluster as read from PATH and the templates read from the ``--pod`` files."""

    cluster: ClusterObjects
    templates: list[PodTemplate] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------- formatting
def format_resource(name: str, value: int) -> str:
    """A request in scheduler units as a Kubernetes quantity: cpu millicores as ``1`` /
    ``500m``, byte amounts with the largest exact binary (then decimal) suffix, counts as
    they are."""
    if name == "cpu":
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    if value and (name in ("memory", "ephemeral-storage") or name.startswith("hugepages-")):
        for suffixes in (_BINARY_SUFFIXES, _DECIMAL_SUFFIXES):
            for suffix, unit in suffixes:
                if value % unit == 0:
                    return f"{value // unit}{suffix}"
    return str(value)


# ----------------------------------------------------------------------------- input
def _manifest_files(paths: Iterable[Input]) -> set[Path]:
    """The files load_manifests reads under ``paths`` (its rule: a directory's *.yaml, *.yml
    and *.json files, recursively), resolved, to tell whether a template file is one of them
    (documents from elsewhere, a live cluster's snapshot, are no file)."""
    out: set[Path] = set()
    for p in paths:
        if isinstance(p, Documents):
            continue
        path = Path(p)
        if path.is_dir():
            out.update(q.resolve() for q in path.rglob("*") if q.suffix in (".yaml", ".yml", ".json") and q.is_file())
        elif path.exists():
            out.add(path.resolve())
    return out


def load_capacity_input(paths: Sequence[Input], template_files: Sequence[str | os.PathLike[str]],
                        *, ignore_unknown_kinds: bool = False, features: Features | None = None) -> CapacityInput:
    """Read the cluster under ``paths`` as written (no controller creates pods: pending pods
    take no room anyway) and one template per file of ``template_files``."""
    seen: set[Path] = set()
    for f in template_files:
        path = Path(f)
        if not path.exists():
            raise ManifestError(str(f), None, "", "no such file or directory (the --pod template)")
        if path.is_dir():
            raise ManifestError(str(f), None, "", "is a directory: --pod takes one template file")
        if path.resolve() in seen:
            raise ManifestError(str(f), None, "", "given twice as --pod: each template file once")
        seen.add(path.resolve())
    cluster = load_manifests(paths, ignore_unknown_kinds=ignore_unknown_kinds, controllers="none", features=features)
    under_path = _manifest_files(paths)
    out = CapacityInput(cluster)
    for f in template_files:
        template, notes = read_template(f, cluster, applied=Path(f).resolve() in under_path)
        out.templates.append(template)
        out.notes.extend(notes)
    _check_unique_prefixes(out.templates)
    return out


def read_template(file: str | os.PathLike[str], cluster: ClusterObjects, *, applied: bool = False
                  ) -> tuple[PodTemplate, list[str]]:
    """The one Pod, Deployment, ReplicaSet, ReplicationController or Job of ``file``, as the
    pod its copies are stamped from (admitted against ``cluster``'s PriorityClasses).
    ``applied``: the file is under PATH too, so its other documents are already in the
    cluster; otherwise they are listed in the notes as not applied."""
    name = os.fspath(file)
    found: list[tuple[str, Any, int, str]] = []  # kind, raw, document, field prefix
    others: list[str] = []
    for index, doc in enumerate(read_documents(Path(name))):
        for raw, prefix in expand_lists(doc, name, index):
            kind = raw.get("kind")
            if not kind:
                raise ManifestError(name, index, f"{prefix}kind", "Required value: kind is missing")
            if not isinstance(kind, str):
                raise ManifestError(name, index, f"{prefix}kind", f"must be a string, got {type(kind).__name__}")
            if kind in _NOT_COPYABLE:
                raise ManifestError(name, index, f"{prefix}kind", f"{kind} cannot be a --pod template: "
                                    f"{_NOT_COPYABLE[kind]}")
            if kind not in TEMPLATE_KINDS:
                if kind not in PARSERS and not is_ignored_kind(raw.get("apiVersion"), kind):
                    raise ManifestError(name, index, f"{prefix}kind", f"unsupported kind {kind!r} in a --pod template "
                                        f"file (a template is one of {', '.join(TEMPLATE_KINDS)})")
                md = raw.get("metadata")
                obj_name = md.get("name", "") if isinstance(md, Mapping) else ""
                others.append(f"{kind} {obj_name}".rstrip())
                continue
            versions = PARSERS[kind][0]
            if raw.get("apiVersion") not in versions:
                raise ManifestError(name, index, f"{prefix}apiVersion",
                                    f"unsupported apiVersion {raw.get('apiVersion')!r} for kind {kind} "
                                    f"(expected {' or '.join(versions)})")
            found.append((kind, raw, index, prefix))
    if not found:
        raise ManifestError(name, None, "", f"no pod template in it: a --pod file holds one of "
                            f"{', '.join(TEMPLATE_KINDS)}")
    if len(found) > 1:
        (k1, raw1, d1, _), (k2, raw2, d2, p2) = found[0], found[1]
        raise ManifestError(name, d2, p2.rstrip("."), f"a second pod template ({k2} {_raw_name(raw2)}; the first is "
                            f"{k1} {_raw_name(raw1)} in document {d1}): give each template its own --pod")
    kind, raw, index, prefix = found[0]
    notes: list[str] = []
    if others and not applied:
        notes.append(f"{name}: only the template is read from a --pod file; not applied: {', '.join(others)} "
                     f"(list the file under PATH too to apply them)")
    try:
        if kind == "Pod":
            template = _pod_template(name, index, raw, cluster)
        else:
            template = _controller_template(name, index, kind, raw, cluster)
    except FieldError as e:
        raise ManifestError(name, index, prefix + e.path, e.message) from None
    if applied:
        notes.append(f"{name} is also under PATH: {_as_read(template, cluster)}")
    return template, notes


def _as_read(t: PodTemplate, cluster: ClusterObjects) -> str:
    """What the cluster holds of a template file that is also under PATH (read as written)."""
    if not t.name.startswith("Pod "):
        return f"{t.name} there is read as written (it creates no pods), so its copies are counted once"
    path = Path(t.file).resolve()
    for p in cluster.pods:
        src = cluster.source_of(p)
        if src is not None and src.document == t.document and Path(src.file).resolve() == path:
            if p.node_name and not p.is_terminal:
                return f"{p.key} there is bound to {p.node_name} and takes room there"
            break
    return f"{t.name} there is a pending pod, which takes no room"


def _raw_name(raw: Mapping[str, Any]) -> str:
    md = raw.get("metadata")
    md = md if isinstance(md, Mapping) else {}
    name = md.get("name") or md.get("generateName") or ""
    return f"{md.get('namespace') or 'default'}/{name}"


def _admitted(pod: Pod, cluster: ClusterObjects, file: str, document: int, prefix: str) -> Pod:
    """The pod as the API server admits it on create (kubesched.objects.manifests' admission:
    Priority against the cluster's PriorityClasses, DefaultTolerationSeconds, uid)."""
    scratch = ClusterObjects(priority_classes=cluster.priority_classes, sources=dict(cluster.sources))
    admit_pods(scratch, [(pod, Source(file, document), prefix)])
    return scratch.pods[0]


_KEPT_METADATA = ("name", "generateName", "namespace", "labels", "annotations", "ownerReferences")


def _pod_template(file: str, document: int, raw: Mapping[str, Any], cluster: ClusterObjects) -> PodTemplate:
    """A Pod document as a template: its metadata identity and spec, without what the cluster
    gave it (status, nodeName, uid, resourceVersion, timestamps): a copy is a new pod to
    schedule, as cluster-capacity's nextPod resets spec.nodeName."""
    md = raw.get("metadata")
    md = dict(md) if isinstance(md, Mapping) else {}
    kept = {k: md[k] for k in _KEPT_METADATA if k in md}
    generate = kept.get("generateName")
    if not kept.get("name") and isinstance(generate, str) and generate:
        kept["name"] = generate.rstrip("-") or generate
    spec = raw.get("spec")
    if isinstance(spec, Mapping):
        spec = {k: v for k, v in spec.items() if k not in ("nodeName", "nominatedNodeName")}
    clean = {"apiVersion": "v1", "kind": "Pod", "metadata": kept, "spec": spec}
    pod = _admitted(parse_pod(clean, features=cluster.features), cluster, file, document, "")
    base = generate if isinstance(generate, str) and generate and not md.get("name") else f"{pod.name}-"
    return PodTemplate(f"Pod {pod.key}", file, document, pod, base)


def _controller_template(file: str, document: int, kind: str, raw: Mapping[str, Any],
                         cluster: ClusterObjects) -> PodTemplate:
    """A controller's next pod (kubesched.objects.workloads.expand on the controller scaled to
    one pod, everything else as written: a paused Deployment or a suspended or finished Job
    still describes the pods it would run)."""
    w: Workload = PARSERS[kind][1](raw)  # FieldError unless spec is a mapping, selector valid
    replica_set: Workload | None = None
    source: Workload = w
    if kind == "Deployment":
        existing = _current_replica_set(w, cluster)
        if existing is not None:
            # More replicas of the Deployment are more pods of its current ReplicaSet.
            source = existing
    scaled = _scaled(source)
    inv = Inventory.of(cluster.nodes, (), (), (), cluster.storage_classes, now=cluster.latest_timestamp or None)
    exp = expand(scaled, inv)
    if not exp.pods:  # pragma: no cover - a controller scaled to one pod creates one
        raise FieldError("spec", "its controller would create no pod")
    if kind == "Deployment" and source is w:
        replica_set = exp.workloads[0]
    probe = exp.pods[0]
    prefix = "spec.template."
    pod = _admitted(probe, cluster, file, document, prefix)
    md = probe.raw.get("metadata") or {}
    base = md.get("generateName") or f"{probe.name}-"
    return PodTemplate(controller_key(w), file, document, pod, str(base), replica_set, prefix)


def _scaled(w: Workload) -> Workload:
    """``w`` asking for exactly one new pod: replicas 1 (ReplicaSet, RC, Deployment; not
    paused), or parallelism and completions 1 (Job; not suspended, and without the status that
    would make it finished or count its succeeded pods)."""
    spec = w.raw.get("spec")
    s = dict(spec) if isinstance(spec, Mapping) else {}
    raw = dict(w.raw)
    if w.kind == "Job":
        s.update(parallelism=1, completions=1)
        s.pop("suspend", None)
        raw["status"] = {}
    else:
        s["replicas"] = 1
        s.pop("paused", None)
    raw["spec"] = s
    return dataclasses.replace(w, raw=raw)


def _current_replica_set(d: Workload, cluster: ClusterObjects) -> Workload | None:
    """deploymentutil.FindNewReplicaSet: of the ReplicaSets the Deployment controls in the
    input, the oldest whose pod template equals the Deployment's but for the
    pod-template-hash label (EqualIgnoreHash). Its controller scales that one up; when none
    matches (the template changed), a rollout creates a new ReplicaSet."""
    wanted = _without_hash(_template_of(d))
    owned = []
    for rs in cluster.workloads:
        ref = rs.meta.controller_ref()
        if rs.kind == "ReplicaSet" and rs.namespace == d.namespace and ref is not None \
                and ref.kind == "Deployment" and ref.name == d.name:
            owned.append(rs)
    owned.sort(key=lambda rs: (rs.meta.creation_timestamp or 0.0, rs.name))
    return next((rs for rs in owned if _without_hash(_template_of(rs)) == wanted), None)


def _template_of(w: Workload) -> Any:
    spec = w.raw.get("spec")
    return spec.get("template") if isinstance(spec, Mapping) else None


def _without_hash(template: Any) -> Any:
    """A pod template without its pod-template-hash label (EqualIgnoreHash's comparison)."""
    if not isinstance(template, Mapping):
        return template
    md = template.get("metadata")
    if not isinstance(md, Mapping) or not isinstance(md.get("labels"), Mapping):
        return template
    labels = {k: v for k, v in md["labels"].items() if k != POD_TEMPLATE_HASH}
    return {**template, "metadata": {**md, "labels": labels}}


def _check_unique_prefixes(templates: Sequence[PodTemplate]) -> None:
    seen: dict[tuple[str, str], PodTemplate] = {}
    for t in templates:
        key = (t.namespace, t.copy_prefix)
        if key in seen:
            raise ManifestError(t.file, t.document, "metadata.name",
                                f"its copies would be named like those of {seen[key].name} ({seen[key].file}): "
                                f"{t.namespace}/{t.copy_prefix}<i>; give the templates different names")
        seen[key] = t


# ----------------------------------------------------------------------------- the run
def without_preemption(config: KubeSchedulerConfiguration) -> KubeSchedulerConfiguration:
    """Every profile with its PostFilter plugins disabled, as a configuration would write it
    (``postFilter: {disabled: [{name: "*"}]}``): kube-scheduler then reports a FitError
    without the ``preemption: ...`` part, and nominates nothing."""
    off = PluginSet(enabled=(), disabled=(PluginRef("*"),))
    profiles = tuple(dataclasses.replace(p, plugins=dataclasses.replace(p.plugins, post_filter=off))
                     for p in config.profiles)
    return dataclasses.replace(config, profiles=profiles)


def capacity(cluster: ClusterObjects, templates: Sequence[PodTemplate],
             config: KubeSchedulerConfiguration | None = None, *, max_copies: int | None = None,
             preempt: bool = False, seed: int | None = None, exclude_nodes: Sequence[str] = (),
             registry: Mapping[str, Factory] | None = None) -> CapacityResult:
    """Schedule copies of ``templates`` round-robin on ``cluster`` as it is until one does not
    fit (or ``max_copies`` are placed); see the module docstring for the rules."""
    if not templates:
        raise KubeschedError("capacity needs at least one pod template")
    if max_copies is not None and max_copies < 1:
        raise KubeschedError(f"the copy limit must be at least 1, got {max_copies}")
    names = {n.name for n in cluster.nodes}
    unknown = [n for n in exclude_nodes if n not in names]
    if unknown:
        raise KubeschedError(f"excluded node(s) not in the input: {', '.join(unknown)}")
    excluded = set(exclude_nodes)
    cfg = config if config is not None else default_configuration(features=cluster.features)
    profiles = [p.scheduler_name for p in cfg.profiles]
    for t in templates:
        if t.pod.scheduler_name not in profiles:
            # eventhandlers.go responsibleForPod: another scheduler's pods never reach this one.
            raise ManifestError(t.file, t.document, f"{t.field_prefix}spec.schedulerName",
                                f"{t.pod.scheduler_name!r} is not a profile of the configuration "
                                f"({', '.join(profiles)}): its copies would wait for another scheduler")
    if not preempt:
        cfg = without_preemption(cfg)
    bound = [p for p in cluster.pods if p.node_name and not p.is_terminal and p.node_name not in excluded]
    pending = sum(1 for p in cluster.pods if not p.node_name and not p.is_terminal)
    workloads = list(cluster.workloads)
    present = {(w.kind, w.namespace, w.name) for w in workloads}
    for t in templates:
        rs = t.replica_set
        if rs is not None and (rs.kind, rs.namespace, rs.name) not in present:
            workloads.append(rs)
            present.add((rs.kind, rs.namespace, rs.name))
    objs = dataclasses.replace(cluster, nodes=[n for n in cluster.nodes if n.name not in excluded],
                               pods=bound, workloads=workloads)
    with Simulator(objs, cfg, deterministic=seed is None, seed=seed, registry=registry) as sim:
        return _Run(sim, objs, cluster, templates, max_copies, preempt, seed, pending,
                    tuple(sorted(excluded))).result()


class _Run:
    """One capacity run over a Simulator's scheduler and cache."""

    def __init__(self, sim: Simulator, objs: ClusterObjects, cluster: ClusterObjects, templates: Sequence[PodTemplate],
                 max_copies: int | None, preempt: bool, seed: int | None, pending: int,
                 excluded: tuple[str, ...]) -> None:
        self.sim = sim
        self.objs = objs
        self.templates = list(templates)
        self.max_copies = max_copies
        self.preempt = preempt
        self.seed = seed
        self.pending = pending
        self.excluded = excluded
        self.notes: list[str] = []
        taken = {(p.namespace, p.name) for p in cluster.pods}
        self.prefixes = [self._free_prefix(t, taken) for t in self.templates]
        self.placements: list[tuple[str, str]] = []
        self.per_template: list[Counter[str]] = [Counter() for _ in self.templates]
        self.victims: list[str] = []
        self.attempts = 0
        self.pod_limit = self._pod_limit()
        self.claim_templates = {(t.meta.namespace, t.meta.name): t for t in objs.resource_claim_templates}

    def _free_prefix(self, t: PodTemplate, taken: set[tuple[str, str]]) -> str:
        """The template's copy prefix, or ``<prefix>copy-`` when the input already has pods
        named like its copies (names are unique in a namespace)."""
        pattern = re.compile(re.escape(t.copy_prefix) + r"\d+")
        if any(ns == t.namespace and pattern.fullmatch(name) for ns, name in taken):
            self.notes.append(f"{t.name}: the input has pods named {t.copy_prefix}<i>: copies are named "
                              f"{t.copy_prefix}copy-<i>")
            return t.copy_prefix + "copy-"
        return t.copy_prefix

    def _pod_limit(self) -> int | None:
        """When no profile of the templates filters on the pod count (NodeResourcesFit off),
        the kubelet's limit still holds: the free pod slots of the nodes (allocatable pods
        minus the pods they run). None when the filters enforce it themselves."""
        for t in self.templates:
            fwk = self.sim.profiles.get(t.pod.scheduler_name)
            if fwk is not None and not any(p.name == "NodeResourcesFit" for p in fwk.plugins_at("Filter")):
                return sum(max(ni.allocatable.allowed_pod_number - len(ni.pods), 0)
                           for ni in self.sim.cache.node_infos.values() if ni.node is not None)
        return None

    def _stamp(self, index: int) -> tuple[int, Pod]:
        """Copy ``index``: the next template round-robin, with its own name, uid and creation
        time (after everything in the input), created in the API server (the pod lister)."""
        k = index % len(self.templates)
        t = self.templates[k]
        p = t.pod
        name = f"{self.prefixes[k]}{index}"
        uid = object_uid("Pod", p.namespace, name)
        meta = dataclasses.replace(p.meta, name=name, uid=uid,
                                   creation_timestamp=self.objs.latest_timestamp + index + 1)
        md = p.raw.get("metadata")
        raw = {**p.raw, "metadata": {**(md if isinstance(md, Mapping) else {}), "name": name, "uid": uid}}
        pod = self._with_claims(dataclasses.replace(p, meta=meta, raw=raw))
        self.sim.current[uid] = pod
        self.sim.objects.set_pod(pod)
        return k, pod

    def _with_claims(self, pod: Pod) -> Pod:
        """The resourceclaim controller for a new copy: each of its claims made from a
        ResourceClaimTemplate gets a claim of its own, owned by the copy and named in its
        ``status.resourceClaimStatuses`` (kubesched.objects.manifests.template_claim). A claim
        named by ``resourceClaimName`` is shared by every copy as it is (at most
        RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE pods reserve it: DynamicResources' PreFilter). A
        missing template creates nothing: the copy waits at PreEnqueue, as it would."""
        refs = [r for r in pod.resource_claims if r.resource_claim_template_name]
        if not refs:
            return pod
        objects = self.sim.objects
        statuses = dict(pod.resource_claim_statuses)
        for ref in refs:
            template = self.claim_templates.get((pod.namespace, ref.resource_claim_template_name))
            if template is None:
                note = (f"ResourceClaimTemplate {pod.namespace}/{ref.resource_claim_template_name} (claim {ref.name!r} "
                        f"of the template's pods) is not in the cluster: the resourceclaim controller creates no claim "
                        f"and copies wait")
                if note not in self.notes:
                    self.notes.append(note)
                continue
            claim = template_claim(pod, ref.name, template,
                                   lambda name: objects.resource_claim(pod.namespace, name) is not None)
            objects.set_resource_claim(claim)
            statuses[ref.name] = claim.name
        return dataclasses.replace(pod, resource_claim_statuses=statuses)

    def _attempt(self, pod: Pod) -> Attempt:
        """One scheduling cycle of the copy then, on success, its binding cycle (Simulator's
        per-pod step: retried at once after a successful preemption, at most MAX_ATTEMPTS
        times; a pod held at Permit waits for its plugins or its timeout on the simulated
        clock)."""
        sim = self.sim
        number = 1
        while True:
            self.attempts += 1
            sim.now = self.objs.latest_timestamp + self.attempts
            attempt = sim.scheduler.schedule_one(sim.current[pod.uid])
            if attempt.outcome == "Waiting":
                self._wait(attempt)
            self.victims.extend(v.key for v in attempt.victims)
            if attempt.outcome == "Scheduled" or not attempt.nominated_node or number >= MAX_ATTEMPTS:
                return attempt
            number += 1

    def _wait(self, attempt: Attempt) -> None:
        """A copy held at Permit: time runs on to the next Permit deadline until the pod is
        allowed or rejected (Simulator's end-of-run loop), then its binding cycle runs."""
        sim = self.sim
        waiting = [attempt]
        sim.finish_waiting(waiting)
        sim.wait_out(waiting)

    def result(self) -> CapacityResult:
        stop: StopReason | None = None
        last: Attempt | None = None
        for index in itertools.count():
            if self.max_copies is not None and index >= self.max_copies:
                stop = StopReason(LIMIT_REACHED, f"Maximum number of pods simulated: {self.max_copies}")
                break
            if self.pod_limit is not None and index >= self.pod_limit:
                stop = StopReason(LIMIT_REACHED, f"every node runs as many pods as its allocatable pods allows "
                                                 f"({self.pod_limit} copies): the profile does not filter on it "
                                                 f"(NodeResourcesFit is off), the kubelet would admit no more")
                break
            k, pod = self._stamp(index)
            template = self.templates[k].name
            fwk = self.sim.profiles.get(pod.scheduler_name)
            gate = fwk.run_pre_enqueue_plugins(pod) if fwk is not None else None
            if gate is not None:
                # PriorityQueue.Add: a pod PreEnqueue rejects waits in unschedulablePods, never popped.
                stop = StopReason(SCHEDULING_GATED, gate.message, pod.key, template)
                break
            attempt = self._attempt(pod)
            if attempt.outcome == "Scheduled" and attempt.node is not None:
                self.placements.append((pod.key, attempt.node))
                self.per_template[k][attempt.node] += 1
                continue
            last = attempt
            reason = UNSCHEDULABLE if attempt.outcome == "Unschedulable" else ERROR
            message = attempt.message or attempt.error or ("waiting at Permit" if attempt.outcome == "Waiting" else "")
            stop = StopReason(reason, message, pod.key, template, _fail_summary(attempt))
            break
        assert stop is not None
        return self._result(stop, last)

    def _result(self, stop: StopReason, last: Attempt | None) -> CapacityResult:
        failures = last.failures if last is not None else {}
        nodes = []
        live = sorted((ni.node for ni in self.sim.cache.node_infos.values() if ni.node is not None),
                      key=lambda n: n.name)
        objects = self.sim.objects
        devices = {u.node: u for u in device_use(live, classes=objects.device_classes(),
                                                 slices=objects.resource_slices(), claims=objects.resource_claims())}
        for node in live:
            name = node.name
            status = failures.get(name)
            nodes.append(NodeCapacity(name, tuple(c[name] for c in self.per_template),
                                      tuple(status.reasons) if status is not None else (), devices.get(name)))
        counts = []
        for k, t in enumerate(self.templates):
            p = t.pod
            counts.append(TemplateCount(
                template=t.name, file=t.file, namespace=t.namespace, copy_names=f"{self.prefixes[k]}<i>",
                count=sum(self.per_template[k].values()), requests=tuple(sorted(p.requests.items())),
                node_selector=tuple(sorted((p.node_selector or {}).items())), priority=p.priority,
                replicas_on_nodes=tuple(sorted(self.per_template[k].items())),
                claims=tuple(f"{r.name}: ResourceClaimTemplate {r.resource_claim_template_name}"
                             if r.resource_claim_template_name else f"{r.name}: ResourceClaim {r.resource_claim_name}"
                             for r in p.resource_claims)))
        return CapacityResult(
            total=len(self.placements), templates=tuple(counts), nodes=tuple(nodes), stop=stop,
            preemption=self.preempt, deterministic=self.seed is None, seed=self.seed, attempts=self.attempts,
            placements=tuple(self.placements), preempted=tuple(self.victims), bound_pods=len(self.objs.pods),
            pending_pods=self.pending, excluded_nodes=self.excluded, notes=tuple(self.notes))


def _fail_summary(attempt: Attempt) -> tuple[tuple[str, int], ...]:
    """Nodes per rejection reason of the attempt (the counts of kube-scheduler's FitError
    histogram), most frequent first, then by reason."""
    counts: Counter[str] = Counter()
    for status in attempt.failures.values():
        if status is not None:
            counts.update(status.reasons)
    return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def run_capacity(paths: Sequence[Input], template_files: Sequence[str | os.PathLike[str]],
                 config: KubeSchedulerConfiguration | None = None, *, max_copies: int | None = None,
                 preempt: bool = False, seed: int | None = None, exclude_nodes: Sequence[str] = (),
                 registry: Mapping[str, Factory] | None = None,
                 ignore_unknown_kinds: bool = False, features: Features | None = None,
                 ) -> tuple[CapacityResult, CapacityInput]:
    """Read the cluster and the templates (:func:`load_capacity_input`), then :func:`capacity`;
    the input's notes are added to the result's."""
    inp = load_capacity_input(paths, template_files, ignore_unknown_kinds=ignore_unknown_kinds, features=features)
    res = capacity(inp.cluster, inp.templates, config, max_copies=max_copies, preempt=preempt, seed=seed,
                   exclude_nodes=exclude_nodes, registry=registry)
    if inp.notes:
        res = dataclasses.replace(res, notes=(*inp.notes, *res.notes))
    return res, inp
