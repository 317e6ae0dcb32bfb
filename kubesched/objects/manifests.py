"""Load manifests (files, directories, multi-document YAML, ``kubectl get -o yaml`` Lists)
into a :class:`ClusterObjects`, applying what the API server's admission would.

Admission applied to every pod, as a cluster would have done on create:
- Priority admission (plugin/pkg/admission/priority: Admit): priorityClassName -> priority
  and preemptionPolicy; the global default class; the built-in system classes.
- DefaultTolerationSeconds: not-ready / unreachable NoExecute tolerations (300 s).
- creationTimestamp defaulting for manifests without one (2024-01-01T00:00:00Z + (i+1) s, i =
  index among Pod documents), and startTime = creationTimestamp for running pods.
- Every namespace used exists, labelled kubernetes.io/metadata.name.

Kinds (kubesched.objects.kinds): the kinds of ``PARSERS`` are read; kinds that exist in
every cluster but never matter to scheduling (ConfigMap, Secret, RBAC, Events, ...) are
skipped and listed in ``ClusterObjects.ignored``; any other kind is an error naming file,
document and kind, unless ``ignore_unknown_kinds`` (then it is listed too).

Workload controllers (kubesched.objects.workloads): a Deployment, DaemonSet, Job,
ReplicaSet, StatefulSet or ReplicationController whose pods the input lacks gets the pods its
controller would create, as pending pods, at the controller's place in document order (they
count as Pod documents there for creationTimestamp defaulting, unless the controller has a
creationTimestamp: then they are created 1 s after it and after the input's latest
timestamp, the controller syncing "now") and admitted like Pod documents.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

import yaml

from kubesched.errors import FieldError, ManifestError, utf8_error
from kubesched.features import DEFAULT_FEATURES, Features
from kubesched.objects.devices import (
    DRA_API_VERSION,
    DRA_PARSERS,
    POD_CLAIM_NAME_ANNOTATION,
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from kubesched.objects.kinds import api_group, is_ignored_kind
from kubesched.objects.model import (
    Affinity,
    CSIDriver,
    CSINode,
    Namespace,
    Node,
    ObjectMeta,
    OwnerReference,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    PodDisruptionBudget,
    PriorityClass,
    Service,
    StorageClass,
    Toleration,
    Workload,
)
from kubesched.objects.parse import PARSERS, parse_pod
from kubesched.objects.podgroups import (
    POD_GROUP_PARSERS,
    SCHEDULING_API_VERSION,
    PodGroup,
    SchedulingWorkload,
)
from kubesched.objects.workloads import (
    CONTROLLER_KINDS,
    NEW_CONTROLLER_KINDS,
    Expansion,
    Inventory,
    controller_key,
    expand,
    generated_name,
    object_uid,
)

try:  # PyYAML's C loader is an order of magnitude faster on large dumps.
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - pure-Python fallback
    _Loader = yaml.SafeLoader

EPOCH_2024 = 1704067200.0  # 2024-01-01T00:00:00Z
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}
# No Kubernetes object nests anywhere near this deep; deeper input is refused with an error
# naming the field instead of overflowing Python's recursion limit (copy.deepcopy, json) or,
# far deeper, the C stack of libyaml's recursive composer (a segfault).
MAX_NESTING_DEPTH = 100
_FLOW = re.compile(r"[\[\]{}]")
_DASH_RUN = re.compile(r"^[ \t]*((?:-[ \t]+)+)", re.MULTILINE)
_NOT_READY = "node.kubernetes.io/not-ready"
_UNREACHABLE = "node.kubernetes.io/unreachable"


@dataclass(frozen=True, slots=True)
class Source:
    """Where an object came from: file and 0-based document index."""

    file: str
    document: int


class IgnoredObject(NamedTuple):
    """An object the loader skipped: where it was, its kind and ``namespace/name``."""

    file: str
    document: int
    kind: str
    name: str
    api_version: str = ""
    known: bool = True  # False: an unknown kind, skipped because ignore_unknown_kinds


# Which controllers get the pods they lack (load_manifests' ``controllers``).
Controllers = Literal["auto", "all", "none"]


@dataclass(slots=True)
class ClusterObjects:
    """Everything read from the manifests, in document order."""

    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    pvs: list[PersistentVolume] = field(default_factory=list)
    pvcs: list[PersistentVolumeClaim] = field(default_factory=list)
    storage_classes: list[StorageClass] = field(default_factory=list)
    csinodes: list[CSINode] = field(default_factory=list)
    csidrivers: list[CSIDriver] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    services: list[Service] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    namespaces: list[Namespace] = field(default_factory=list)
    # Deployments, DaemonSets and Jobs (ReplicaSets, StatefulSets and RCs are in workloads).
    controllers: list[Workload] = field(default_factory=list)
    ignored: list[IgnoredObject] = field(default_factory=list)
    # Controller ("Deployment default/web") -> keys of the pods synthesized for it, and the
    # other objects synthesized ("ReplicaSet default/web-5d8c7b9f6", PVCs of StatefulSets).
    generated: dict[str, list[str]] = field(default_factory=dict)
    # Controller -> why its pods were created (what its controller saw in the input).
    generated_why: dict[str, str] = field(default_factory=dict)
    generated_objects: list[str] = field(default_factory=list)
    # Controllers left without the pods they lack (controllers="auto": see load_manifests).
    not_expanded: list[str] = field(default_factory=list)
    # Things accepted but worth telling the user (e.g. an admitted pod naming a missing class).
    notes: list[str] = field(default_factory=list)
    sources: dict[int, Source] = field(default_factory=dict)  # id(obj) -> source
    # Latest creationTimestamp/startTime of any pod after defaulting (the trace's T).
    latest_timestamp: float = 0.0
    # The release whose API server admitted these objects.
    features: Features = DEFAULT_FEATURES
    # Dynamic Resource Allocation (resource.k8s.io/v1, from 1.34).
    device_classes: list[DeviceClass] = field(default_factory=list)
    resource_slices: list[ResourceSlice] = field(default_factory=list)
    resource_claims: list[ResourceClaim] = field(default_factory=list)
    resource_claim_templates: list[ResourceClaimTemplate] = field(default_factory=list)
    # The workload API (scheduling.k8s.io/v1alpha2, with GenericWorkload).
    pod_groups: list[PodGroup] = field(default_factory=list)
    scheduling_workloads: list[SchedulingWorkload] = field(default_factory=list)

    def source_of(self, obj: object) -> Source | None:
        return self.sources.get(id(obj))


_LIST_FOR_KIND = {
    "Node": "nodes",
    "Pod": "pods",
    "PersistentVolume": "pvs",
    "PersistentVolumeClaim": "pvcs",
    "StorageClass": "storage_classes",
    "CSINode": "csinodes",
    "CSIDriver": "csidrivers",
    "PriorityClass": "priority_classes",
    "PodDisruptionBudget": "pdbs",
    "Service": "services",
    "ReplicaSet": "workloads",
    "StatefulSet": "workloads",
    "ReplicationController": "workloads",
    "Deployment": "controllers",
    "DaemonSet": "controllers",
    "Job": "controllers",
    "Namespace": "namespaces",
    "DeviceClass": "device_classes",
    "ResourceSlice": "resource_slices",
    "ResourceClaim": "resource_claims",
    "ResourceClaimTemplate": "resource_claim_templates",
    "PodGroup": "pod_groups",
    "Workload": "scheduling_workloads",
}


@dataclass(frozen=True, slots=True)
class Documents:
    """Documents that come from elsewhere than a file (a live cluster's objects,
    kubesched.cluster.snapshot), read exactly as a file's documents are: ``name`` stands for
    the file. With ``labels`` (one per document), each document's label stands for the file
    in its object's source and errors, which then name no document index (the label says
    which object it is, e.g. ``https://host: pods default/web-0``)."""

    name: str
    documents: tuple[Any, ...]
    labels: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.name


Input = str | os.PathLike[str] | Documents
"""What load_manifests reads: a file, a directory, or documents from elsewhere."""


def _files(paths: Iterable[Input]) -> list[Path | Documents]:
    out: list[Path | Documents] = []
    for p in paths:
        if isinstance(p, Documents):
            out.append(p)
            continue
        path = Path(p)
        if path.is_dir():
            out.extend(sorted(q for q in path.rglob("*") if q.suffix in (".yaml", ".yml", ".json") and q.is_file()))
        elif path.exists():
            out.append(path)
        else:
            raise ManifestError(str(path), None, "", "no such file or directory")
    return out


def _textual_depth(text: str) -> int:
    """An estimate, from the text alone, of how deep the YAML nests: the flow collection depth
    ([ and {, counting those inside strings too) or the longest run of block sequence
    indicators on one line ("- - - x"). Cheap, and enough to keep libyaml's recursive
    composer far from the C stack's end; the exact check runs on the loaded documents."""
    if text.count("[") + text.count("{") <= MAX_NESTING_DEPTH and "- -" not in text:
        return 0
    depth = deepest = 0
    for m in _FLOW.finditer(text):
        depth = depth + 1 if m.group() in "[{" else max(depth - 1, 0)
        deepest = max(deepest, depth)
    runs = (m.group(1).count("-") for m in _DASH_RUN.finditer(text))
    return max(deepest, max(runs, default=0))


def _nests_too_deep(text: str) -> bool:
    """Whether YAML ``text`` nests deeper than libyaml's recursive composer should be asked to
    go: the cheap textual estimate first, the event stream to confirm it."""
    return _textual_depth(text) > 10 * MAX_NESTING_DEPTH and _event_depth(text) > 10 * MAX_NESTING_DEPTH


def load_yaml_document(text: str) -> Any:
    """One YAML document read with the C loader (a kubeconfig), refused with ValueError when it
    nests too deep (:func:`_nests_too_deep`), as load_manifests refuses such a file."""
    if _nests_too_deep(text):
        raise ValueError(f"nested deeper than {MAX_NESTING_DEPTH} levels")
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - the safe loader (CSafeLoader)


def _event_depth(text: str) -> int:
    """The exact collection depth, from libyaml's event stream (the parser does not recurse;
    only the composer does). Slower than _textual_depth, so only run to confirm it: brackets
    inside strings (huge annotations, last-applied-configuration, scripts in args) inflate
    the textual estimate of a real dump."""
    depth = deepest = 0
    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                deepest = max(deepest, depth)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError as e:
        # libyaml's own nesting limit (its scanner stops before the events get that deep);
        # any other error is reported by load_all with its place.
        if "maximum nesting depth" in str(e):
            return max(deepest, 10 * MAX_NESTING_DEPTH + 1)
    return deepest


# YAML aliases let a few lines stand for billions of values ("billion laughs": 9 anchors of 9
# aliases each is 9**9 values). PyYAML shares the aliased objects, so loading is quick, but any
# walk over the document (the nesting check, the parsers) then runs for hours: found by fuzzing
# (scripts/fuzz.py). go-yaml, which kubectl and the API server use, refuses such documents
# ("document contains excessive aliasing"); so does kubesched, past this many values when they
# are also more than ALIAS_RATIO times the values written. A dump without aliases is never refused.
MAX_EXPANDED_VALUES = 1_000_000
ALIAS_RATIO = 10


def expanded_size(doc: Any, limit: int = MAX_EXPANDED_VALUES * ALIAS_RATIO) -> tuple[int, int]:
    """(values ``doc`` holds once its YAML aliases are expanded, capped just above ``limit``;
    distinct values written), without expanding anything: each shared object is counted once
    per reference from its memoised size. Iterative, and a recursive alias (an object holding
    itself) counts once: the nesting check reports it."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[Any, bool]] = [(doc, False)]
    while stack:
        value, done = stack.pop()
        key = id(value)
        children = list(value.values()) if isinstance(value, Mapping) else value
        if not done:
            if key in sizes or key in open_:
                continue
            open_.add(key)
            stack.append((value, True))
            stack.extend((c, False) for c in children if isinstance(c, Mapping | list))
            continue
        open_.discard(key)
        total = 1
        for c in children:
            total += sizes.get(id(c), 1) if isinstance(c, Mapping | list) else 1
        sizes[key] = min(total, limit + 1)
    if not isinstance(doc, Mapping | list):
        return 1, 1
    return sizes[id(doc)], len(sizes)


def excessive_aliasing(doc: Any) -> str | None:
    """The message for a document whose aliases expand too far (see MAX_EXPANDED_VALUES), or None."""
    expanded, written = expanded_size(doc)
    if expanded > MAX_EXPANDED_VALUES and expanded > ALIAS_RATIO * written:
        limit = MAX_EXPANDED_VALUES * ALIAS_RATIO
        count = f"more than {limit}" if expanded > limit else str(expanded)
        return (f"document contains excessive aliasing: {count} values once its YAML aliases are expanded, "
                f"from {written} written")
    return None


def _too_deep(doc: Any) -> str | None:
    """The path of the first value nested deeper than MAX_NESTING_DEPTH, or None (iterative:
    the check must not recurse itself)."""
    stack: list[tuple[Any, int, tuple[Any, ...] | None]] = [(doc, 0, None)]
    while stack:
        value, depth, link = stack.pop()
        if depth > MAX_NESTING_DEPTH:
            parts: list[str] = []
            while link is not None:
                key, link = link
                parts.append(f"[{key}]" if isinstance(key, int) else f".{key}")
            return "".join(reversed(parts)).lstrip(".")
        if isinstance(value, Mapping):
            stack.extend((v, depth + 1, (str(k), link)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, depth + 1, (i, link)) for i, v in enumerate(value))
    return None


class _NotJSON(Exception):
    pass


def _reject_constant(token: str) -> Any:
    raise _NotJSON(token)  # NaN / Infinity are no JSON: let YAML read them (as strings)


def _json_document(text: str) -> Any:
    """A file holding one JSON value (``kubectl get -o json``), read as JSON; raises _NotJSON
    otherwise. libyaml refuses the escaped surrogate pairs JSON encoders write for characters
    beyond the BMP (``"\\ud83d\\ude00"``: "found invalid Unicode character escape code"), so a
    valid JSON manifest was rejected as invalid YAML (found by fuzzing: scripts/fuzz.py)."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as e:  # JSONDecodeError is a ValueError
        raise _NotJSON(str(e)) from None


def read_documents(path: Path) -> list[Any]:
    """The documents of one manifest file (YAML, or a single JSON value), checked as
    :func:`load_manifests` checks them: UTF-8, no excessive YAML aliasing, nesting depth;
    ManifestError names the file and document."""
    file = str(path)
    documents, aliases = _documents(path)
    for index, doc in enumerate(documents):
        if aliases:
            aliasing = excessive_aliasing(doc)
            if aliasing is not None:
                raise ManifestError(file, index, "", aliasing)
        deep = _too_deep(doc)
        if deep is not None:
            raise ManifestError(file, index, deep, f"nested deeper than {MAX_NESTING_DEPTH} levels")
    return documents


def _documents(path: Path) -> tuple[list[Any], bool]:
    """The file's documents, and whether it may hold YAML aliases."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ManifestError(str(path), None, "", f"cannot read: {e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        # The document and line of the bad byte, not the codec's byte offset (found by fuzzing).
        at = len(data[: e.start].decode("utf-8", errors="replace"))
        raise ManifestError(str(path), _document_at(data.decode("utf-8", errors="replace"), at), "",
                            f"cannot read: {utf8_error(data, e)}") from None
    if text.lstrip("\ufeff \t\r\n").startswith(("{", "[")):
        try:
            return [_json_document(text.lstrip("\ufeff"))], False
        except _NotJSON:
            pass  # YAML flow style, or broken: the YAML reader decides and reports
    if _nests_too_deep(text):
        raise ManifestError(str(path), None, "", f"nested deeper than {MAX_NESTING_DEPTH} levels")
    try:
        return list(yaml.load_all(text, Loader=_Loader)), "*" in text
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        doc = _document_at(text, mark.index) if mark is not None else None
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(e, "problem", None) or " ".join(str(e).split())  # one line
        raise ManifestError(str(path), doc, "", f"invalid YAML{where}: {problem}") from None


def _document_at(text: str, index: int) -> int:
    """The 0-based index (as load_all counts) of the document holding character ``index``:
    the number of documents started at or before it, minus one. Counting "\n---" instead
    would be off by one when the file opens with comments and then "---"."""
    starts = 0
    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, yaml.DocumentStartEvent):
                start = event.start_mark
                if start is not None and start.index > index:
                    break
                starts += 1
    except yaml.YAMLError:
        pass  # the events before the error are all we need
    return max(starts - 1, 0)


def expand_lists(doc: Any, file: str, index: int | None, prefix: str = "") -> list[tuple[Mapping[str, Any], str]]:
    """A document, or the items of a ``kind: List`` / ``*List``, each with its field prefix.
    Lists nest (``kubectl get`` of several resources, concatenated dumps wrapped in a List):
    a List item that is itself a List is expanded in place."""
    if doc is None:
        return []
    if not isinstance(doc, Mapping):
        raise ManifestError(file, index, prefix.rstrip("."), f"a document must be an object, got {type(doc).__name__}")
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise ManifestError(file, index, f"{prefix}items", "must be a list")
        out: list[tuple[Mapping[str, Any], str]] = []
        for i, item in enumerate(items):
            where = f"{prefix}items[{i}]"
            if not isinstance(item, Mapping):
                raise ManifestError(file, index, where, "must be an object")
            item = dict(item)
            if kind != "List":
                # A typed list (NodeList, PodList, ... as the API returns it) omits the items'
                # kind and apiVersion: they are the list's.
                if "kind" not in item:
                    item["kind"] = kind[: -len("List")]
                if "apiVersion" not in item and "apiVersion" in doc:
                    item["apiVersion"] = doc["apiVersion"]
            out.extend(expand_lists(item, file, index, f"{where}."))
        return out
    return [(doc, prefix)]


def _without_managed_fields(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """metadata.managedFields (server-side apply bookkeeping, often the largest part of a
    dumped object) never matters to scheduling: dropped so that the objects kept in memory
    are not twice their size."""
    md = raw.get("metadata")
    if isinstance(md, Mapping) and "managedFields" in md:
        return {**raw, "metadata": {k: v for k, v in md.items() if k != "managedFields"}}
    return raw


def _named(raw: Mapping[str, Any], kind: str, seed: str, seen: Mapping[tuple[str, str, str], Source],
           generated: list[str]) -> Mapping[str, Any]:
    """An object with metadata.generateName and no name gets the name the API server's
    create would give it (names.SimpleNameGenerator: the base + 5 random characters; here
    drawn from a stable hash of its place in the input), unique among the objects read."""
    md = raw.get("metadata")
    if not isinstance(md, Mapping) or md.get("name"):
        return raw
    base = md.get("generateName")
    if not isinstance(base, str) or not base:
        return raw
    ns = md.get("namespace") or ""
    ns = ns if isinstance(ns, str) else ""
    for attempt in range(100):
        name = generated_name(base, seed, attempt)
        if (kind, ns, name) not in seen:
            break
    generated.append(f"{kind} {ns}/{name}" if ns else f"{kind} {name}")
    return {**raw, "metadata": {**md, "name": name}}


def _ignored(raw: Mapping[str, Any], file: str, index: int, kind: str, known: bool) -> IgnoredObject:
    md = raw.get("metadata")
    md = md if isinstance(md, Mapping) else {}
    name = md.get("name") or md.get("generateName") or ""
    ns = md.get("namespace") or ""
    api_version = raw.get("apiVersion")
    return IgnoredObject(file, index, kind, f"{ns}/{name}" if ns else str(name),
                         api_version if isinstance(api_version, str) else "", known)


def load_manifests(paths: Iterable[Input], *, ignore_unknown_kinds: bool = False,
                   controllers: Controllers = "auto", features: Features | None = None) -> ClusterObjects:
    """Read every manifest under ``paths``; raise ManifestError naming file, document, field.

    ``controllers`` chooses which workload controllers lacking pods get them:
    ``"all"``; ``"none"`` (objects are read as written); ``"auto"``: Deployments,
    DaemonSets and Jobs always, ReplicaSets, StatefulSets and ReplicationControllers only
    when the input shows controllers at work (a Deployment, DaemonSet, Job or CronJob, or an
    object with a controller ownerReference). Without that, a ReplicaSet, StatefulSet or RC
    only carries a selector for default topology spreading, as in the conformance corpus'
    format; those left without their pods are listed in ``not_expanded``.

    ``features``: the release whose API server admits the objects (default: the newest
    supported): which kinds and fields exist, and what admission adds."""
    feats = features if features is not None else DEFAULT_FEATURES
    objs = ClusterObjects(features=feats)
    parsers = dict(PARSERS)
    if feats.enabled("DynamicResourceAllocation"):
        # resource.k8s.io/v1 is served from the release DRA went GA in.
        parsers.update({k: ((DRA_API_VERSION,), p) for k, p in DRA_PARSERS.items()})
    if feats.enabled("GenericWorkload"):
        # scheduling.k8s.io/v1alpha2 (PodGroup, Workload) is served only with its alpha gate.
        parsers.update(POD_GROUP_PARSERS)
    # Pods and controllers in document order: where synthesized pods go.
    slots: list[tuple[Pod | Workload, Source, str]] = []
    seen: dict[tuple[str, str, str], Source] = {}
    controllers_at_work = False
    generated_names: list[str] = []
    for source in _files(paths):
        documents = source.documents if isinstance(source, Documents) else read_documents(source)
        labels = source.labels if isinstance(source, Documents) else ()
        for index, doc in enumerate(documents):
            file = labels[index] if labels else str(source)
            at = None if labels else index  # the document errors name
            for raw, prefix in expand_lists(doc, file, at):
                kind = raw.get("kind")
                if not kind:
                    raise ManifestError(file, at, f"{prefix}kind", "Required value: kind is missing")
                api_version = raw.get("apiVersion")
                known = isinstance(kind, str) and kind in parsers
                if known:
                    versions = parsers[kind][0]
                    if api_version not in versions:
                        # A kind of the same name in another group is a custom resource.
                        other_group = api_group(api_version) not in {api_group(v) for v in versions}
                        if not (other_group and ignore_unknown_kinds):
                            raise ManifestError(file, at, f"{prefix}apiVersion",
                                                f"unsupported apiVersion {api_version!r} for kind {kind} "
                                                f"(expected {' or '.join(versions)})")
                        known = False
                if not known:
                    if isinstance(kind, str) and is_ignored_kind(api_version, kind):
                        objs.ignored.append(_ignored(raw, file, index, kind, True))
                        controllers_at_work |= kind == "CronJob"
                        continue
                    if isinstance(kind, str) and ignore_unknown_kinds:
                        objs.ignored.append(_ignored(raw, file, index, kind, False))
                        continue
                    hint = "; --ignore-unknown-kinds skips it" if isinstance(kind, str) else ""
                    if isinstance(kind, str) and kind in DRA_PARSERS and api_version == DRA_API_VERSION:
                        hint = (f"; {DRA_API_VERSION} {kind} is served from Kubernetes 1.34 (Dynamic Resource "
                                f"Allocation), not by the --kube-version {feats.version} API server")
                    if isinstance(kind, str) and kind in POD_GROUP_PARSERS and api_version == SCHEDULING_API_VERSION:
                        hint = (f"; {SCHEDULING_API_VERSION} {kind} is served only with the GenericWorkload feature "
                                f"gate (alpha, off by default; GangScheduling needs it too): --feature-gates "
                                f"GenericWorkload=true,GangScheduling=true"
                                if "GenericWorkload" in feats.gate_names() else
                                f"; {SCHEDULING_API_VERSION} {kind} does not exist in Kubernetes {feats.version} "
                                f"(the workload API is alpha from 1.35)")
                    raise ManifestError(file, at, f"{prefix}kind",
                                        f"unsupported kind {kind!r} (supported: {', '.join(sorted(parsers))}{hint})")
                assert isinstance(kind, str)
                parser = parsers[kind][1]
                if kind == "Pod":
                    parser = functools.partial(parse_pod, features=feats)
                raw = _named(_without_managed_fields(raw), kind, f"{file}#{index}#{prefix}", seen, generated_names)
                try:
                    obj = parser(raw)
                except FieldError as e:
                    raise ManifestError(file, at, prefix + e.path, e.message) from None
                key = (kind, obj.meta.namespace, obj.meta.name)
                if key in seen:
                    first = seen[key]
                    raise ManifestError(file, at, f"{prefix}metadata.name", f"duplicate {kind} {'/'.join(k for k in key[1:] if k)} (first defined in {first.file}: document {first.document})")
                src = Source(file, index)
                seen[key] = src
                getattr(objs, _LIST_FOR_KIND[kind]).append(obj)
                objs.sources[id(obj)] = src
                if kind == "Pod" or kind in CONTROLLER_KINDS:
                    slots.append((obj, src, prefix))
                controllers_at_work |= kind in NEW_CONTROLLER_KINDS or obj.meta.controller_ref() is not None
    if generated_names:
        more = f", {len(generated_names) - 5} more" if len(generated_names) > 5 else ""
        objs.notes.append(f"named {len(generated_names)} object(s) that had only metadata.generateName, as the API "
                          f"server would on create: {', '.join(generated_names[:5])}{more}")
    expansions = _expand_controllers(objs, slots, controllers, controllers_at_work)
    pod_sources: list[tuple[Pod, Source, str]] = []
    for obj, src, prefix in slots:
        if isinstance(obj, Pod):
            pod_sources.append((obj, src, prefix))
        elif id(obj) in expansions:
            pod_sources.extend((p, src, f"{prefix}spec.template.") for p in expansions[id(obj)].pods)
    objs.pods = [p for p, _, _ in pod_sources]
    admit_pods(objs, pod_sources)
    if controllers != "none" and objs.resource_claim_templates:
        _generate_template_claims(objs)
    _note_pods_on_missing_nodes(objs)
    _check_pod_group_workloads(objs)
    return objs


def _check_pod_group_workloads(objs: ClusterObjects) -> None:
    """The PodGroupWorkloadExists admission plugin (plugin/pkg/admission/podgroup, on by
    default): a PodGroup naming a Workload template is refused unless that Workload (same
    namespace) exists and has the template."""
    workloads = {(w.namespace, w.name): w for w in objs.scheduling_workloads}
    for pg in objs.pod_groups:
        ref = pg.template_ref
        if ref is None:
            continue
        src = objs.source_of(pg)
        assert src is not None
        forbidden = f'podgroups.scheduling.k8s.io "{pg.name}" is forbidden: PodGroup rejected: '
        w = workloads.get((pg.namespace, ref.workload_name))
        if w is None:
            raise ManifestError(src.file, src.document, "spec.podGroupTemplateRef.workload.workloadName",
                                f'{forbidden}Workload "{ref.workload_name}" not found')
        if w.meta.deletion_timestamp is not None:
            raise ManifestError(src.file, src.document, "spec.podGroupTemplateRef.workload.workloadName",
                                f'{forbidden}Workload "{ref.workload_name}" is being deleted')
        if w.template(ref.pod_group_template_name) is None:
            raise ManifestError(src.file, src.document, "spec.podGroupTemplateRef.workload.podGroupTemplateName",
                                f'{forbidden}PodGroupTemplate "{ref.pod_group_template_name}" not found in Workload '
                                f'"{ref.workload_name}"')


def _note_pods_on_missing_nodes(objs: ClusterObjects) -> None:
    """A dump taken while a node was removed holds pods bound to it. kube-scheduler's cache
    keeps such pods on a NodeInfo without a node (cache.go: AddPod -> addPod creates one),
    which no snapshot lists: they take no room anywhere and match no affinity term."""
    names = {n.name for n in objs.nodes}
    lost = [p for p in objs.pods if p.node_name and p.node_name not in names and not p.is_terminal]
    if lost:
        shown = ", ".join(f"{p.key} on {p.node_name}" for p in lost[:5])
        more = f", {len(lost) - 5} more" if len(lost) > 5 else ""
        objs.notes.append(f"{len(lost)} pod(s) bound to nodes missing from the input take no room on any node, as in "
                          f"kube-scheduler's cache: {shown}{more}")


def _expand_controllers(objs: ClusterObjects, slots: list[tuple[Pod | Workload, Source, str]],
                        mode: Controllers, controllers_at_work: bool) -> dict[int, Expansion]:
    """Run each controller lacking pods once (kubesched.objects.workloads), in document
    order; record what was synthesized. Returns id(controller) -> its expansion."""
    out: dict[int, Expansion] = {}
    if mode == "none":
        return out
    metas = [n.meta for n in objs.nodes] + [w.meta for w in (*objs.workloads, *objs.controllers)]
    metas += [p.meta for p in objs.pods]
    stamps = [t for t in (*(m.creation_timestamp for m in metas), *(p.start_time for p in objs.pods)) if t is not None]
    inv = Inventory.of(objs.nodes, objs.pods, objs.workloads, objs.pvcs, objs.storage_classes,
                       now=max(stamps) if stamps else None)
    for obj, src, prefix in slots:
        if not isinstance(obj, Workload):
            continue
        if mode == "auto" and obj.kind not in NEW_CONTROLLER_KINDS and not controllers_at_work:
            # Read as written; only note that its controller would have created pods.
            try:
                if expand(obj, inv).pods:
                    objs.not_expanded.append(controller_key(obj))
            except FieldError:
                pass
            continue
        try:
            exp = expand(obj, inv)
        except FieldError as e:
            raise ManifestError(src.file, src.document, prefix + e.path,
                                f"{e.message} (while creating the pods its controller would create; "
                                f"--controllers none reads it as written)") from None
        for rs in exp.workloads:
            objs.workloads.append(rs)
            objs.sources[id(rs)] = src
            objs.generated_objects.append(f"{rs.kind} {rs.namespace}/{rs.name}")
        for pvc in exp.pvcs:
            objs.pvcs.append(pvc)
            objs.sources[id(pvc)] = src
            objs.generated_objects.append(f"PersistentVolumeClaim {pvc.namespace}/{pvc.name}")
        if exp.pods:
            objs.generated[controller_key(obj)] = [p.key for p in exp.pods]
            objs.generated_why[controller_key(obj)] = exp.why
            out[id(obj)] = exp
    return out


_uid = object_uid


def _check_priority_classes(objs: ClusterObjects) -> None:
    for pc in objs.priority_classes:
        src = objs.sources[id(pc)]
        if pc.name.startswith("system-"):
            if pc.name not in SYSTEM_PRIORITY_CLASSES:
                raise ManifestError(src.file, src.document, "metadata.name", f"{pc.name} is not a known system priority class")
            if pc.value != SYSTEM_PRIORITY_CLASSES[pc.name]:
                raise ManifestError(src.file, src.document, "value", f"value of {pc.name} PriorityClass must be {SYSTEM_PRIORITY_CLASSES[pc.name]}")
        elif pc.value > HIGHEST_USER_DEFINABLE_PRIORITY:
            raise ManifestError(src.file, src.document, "value", f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}")


def _merge_terms(terms: tuple[PodAffinityTerm, ...], labels: Mapping[str, str]) -> tuple[PodAffinityTerm, ...]:
    out = []
    for t in terms:
        if t.label_selector is not None and (t.match_label_keys or t.mismatch_label_keys):
            sel = t.label_selector.with_label_values(labels, t.match_label_keys, "In")
            sel = sel.with_label_values(labels, t.mismatch_label_keys, "NotIn")
            t = dataclasses.replace(t, label_selector=sel)
        out.append(t)
    return tuple(out)


def _merge_affinity(a: PodAffinity | None, labels: Mapping[str, str]) -> PodAffinity | None:
    if a is None:
        return None
    preferred = tuple(dataclasses.replace(w, term=_merge_terms((w.term,), labels)[0]) for w in a.preferred)
    return PodAffinity(_merge_terms(a.required, labels), preferred)


def merged_label_keys(pod: Pod, features: Features) -> dict[str, Any]:
    """The API server's pod create (pkg/registry/core/pod/strategy.go
    applyMatchLabelKeysAndMismatchLabelKeys, applyMatchLabelKeys): with MatchLabelKeysInPodAffinity
    each (anti-)affinity term's ``matchLabelKeys`` become ``key In [pod's value]`` and
    ``mismatchLabelKeys`` ``key NotIn [pod's value]`` in its labelSelector; with
    MatchLabelKeysInPodTopologySpreadSelectorMerge a spread constraint's ``matchLabelKeys`` are
    merged likewise. Terms without a labelSelector and labels the pod lacks are skipped.
    Without the gates (1.30) the API server dropped the affinity fields: the scheduler never
    reads them. Returns the Pod fields that change."""
    changes: dict[str, Any] = {}
    labels = pod.labels
    aff = pod.affinity
    if aff is not None and features.enabled("MatchLabelKeysInPodAffinity"):
        new = Affinity(aff.node_affinity, _merge_affinity(aff.pod_affinity, labels),
                       _merge_affinity(aff.pod_anti_affinity, labels))
        if new != aff:
            changes["affinity"] = new
    tsc = pod.topology_spread_constraints
    if tsc and features.enabled("MatchLabelKeysInPodTopologySpreadSelectorMerge"):
        merged = tuple(dataclasses.replace(c, label_selector=c.label_selector.with_label_values(
            labels, c.match_label_keys, "In")) if c.label_selector is not None and c.match_label_keys else c
            for c in tsc)
        if merged != tsc:
            changes["topology_spread_constraints"] = merged
    return changes


def template_claim(pod: Pod, claim_name: str, template: ResourceClaimTemplate,
                   taken: Callable[[str], bool]) -> ResourceClaim:
    """The claim the resourceclaim controller creates for the pod's claim ``claim_name`` from
    ``template`` (pkg/controller/resourceclaim handleClaim): named ``<pod>-<claim>-<5
    random>`` (a stable hash here, retried while ``taken(name)``), in the pod's namespace,
    owned by the pod (controller reference), annotated with the pod's claim name, with the
    template's spec."""
    base = f"{pod.name}-{claim_name}-"
    name = generated_name(base, f"{pod.key}#{claim_name}")
    attempt = 0
    while taken(name):
        attempt += 1
        name = generated_name(base, f"{pod.key}#{claim_name}", attempt)
    return ResourceClaim(
        ObjectMeta(name=name, namespace=pod.namespace, uid=_uid("ResourceClaim", pod.namespace, name),
                   annotations={POD_CLAIM_NAME_ANNOTATION: claim_name},
                   creation_timestamp=pod.meta.creation_timestamp,
                   owner_references=(OwnerReference("v1", "Pod", pod.name, pod.uid, True),)),
        template.spec)


def _taken(taken: set[tuple[str, str]], namespace: str, name: str) -> bool:
    return (namespace, name) in taken


def _generate_template_claims(objs: ClusterObjects) -> None:
    """The resourceclaim controller (pkg/controller/resourceclaim): for each pod claim made from
    a ResourceClaimTemplate that has no claim yet (no ``status.resourceClaimStatuses`` entry), a
    ResourceClaim ``<pod>-<claim>-<5 random>`` in the pod's namespace, owned by the pod, annotated
    with the pod's claim name, with the template's spec; the pod's status names it. A missing
    template leaves the pod without its claim (it waits at DynamicResources' PreEnqueue)."""
    templates = {(t.meta.namespace, t.meta.name): t for t in objs.resource_claim_templates}
    taken = {(c.namespace, c.name) for c in objs.resource_claims}
    generated: list[str] = []
    pods: list[Pod] = []
    for pod in objs.pods:
        statuses = dict(pod.resource_claim_statuses)
        for ref in pod.resource_claims:
            if not ref.resource_claim_template_name or ref.name in statuses or pod.node_name:
                continue
            template = templates.get((pod.namespace, ref.resource_claim_template_name))
            if template is None:
                continue
            claim = template_claim(pod, ref.name, template, functools.partial(_taken, taken, pod.namespace))
            taken.add((pod.namespace, claim.name))
            objs.resource_claims.append(claim)
            statuses[ref.name] = claim.name
            generated.append(claim.key)
        if statuses != pod.resource_claim_statuses:
            new = dataclasses.replace(pod, resource_claim_statuses=statuses)
            if id(pod) in objs.sources:
                objs.sources[id(new)] = objs.sources[id(pod)]
            pod = new
        pods.append(pod)
    objs.pods = pods
    if generated:
        more = f", {len(generated) - 5} more" if len(generated) > 5 else ""
        objs.notes.append(f"created {len(generated)} ResourceClaim(s) from ResourceClaimTemplates, as the resourceclaim "
                          f"controller would: {', '.join(generated[:5])}{more}")


def admit_pods(objs: ClusterObjects, pod_sources: list[tuple[Pod, Source, str]]) -> None:
    """The API server's admission of pods (priority from their PriorityClass, the global
    default class, the system classes; errors name the pod's file, document and field): what
    load_manifests does to every pod it reads, for callers making pods of their own (capacity's
    copies of a template)."""
    _check_priority_classes(objs)
    classes = {pc.name: (pc.value, pc.preemption_policy) for pc in objs.priority_classes}
    for name, value in SYSTEM_PRIORITY_CLASSES.items():
        classes.setdefault(name, (value, "PreemptLowerPriority"))
    defaults = sorted((pc.value, pc.name) for pc in objs.priority_classes if pc.global_default)
    default_class = defaults[0][1] if defaults else ""

    # Namespaces: every one used exists (labels from a Namespace document, if any).
    known = {ns.name for ns in objs.namespaces}
    for group in (objs.pods, objs.pvcs, objs.pdbs, objs.services, objs.workloads, objs.controllers):
        for o in group:
            ns_name = o.meta.namespace
            if ns_name and ns_name not in known:
                known.add(ns_name)
                objs.namespaces.append(Namespace(ObjectMeta(name=ns_name, labels={"kubernetes.io/metadata.name": ns_name})))

    latest = 0.0
    admitted: list[Pod] = []
    for i, (pod, src, prefix) in enumerate(pod_sources):
        meta = pod.meta
        changes: dict[str, Any] = {}
        meta_changes: dict[str, Any] = {}
        if meta.creation_timestamp is None:
            meta_changes["creation_timestamp"] = EPOCH_2024 + i + 1
        if not meta.uid:
            meta_changes["uid"] = _uid("Pod", meta.namespace, meta.name)
        # Priority admission.
        class_name = pod.priority_class_name or default_class
        spec = pod.raw.get("spec") or {}
        explicit_priority = spec.get("priority") is not None
        explicit_policy = spec.get("preemptionPolicy") is not None
        if class_name and class_name not in classes and explicit_priority and (pod.node_name or meta.resource_version):
            # A pod read back from a cluster (running, or carrying a resourceVersion) was
            # admitted when its class existed: it keeps the priority it carries (reported,
            # never silently 0). A pod to create still needs its class, as the Priority
            # admission plugin would demand.
            objs.notes.append(f"{src.file}: document {src.document}: pod {pod.key} names PriorityClass {class_name} "
                              f"which is not in the input; using its spec.priority {pod.priority}")
        elif class_name:
            if class_name not in classes:
                raise ManifestError(src.file, src.document, f"{prefix}spec.priorityClassName", f"no PriorityClass with name {class_name} was found")
            value, policy = classes[class_name]
            if explicit_priority and pod.priority != value:
                raise ManifestError(src.file, src.document, f"{prefix}spec.priority", f"the integer value of priority ({pod.priority}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name")
            if explicit_policy and pod.preemption_policy != policy:
                raise ManifestError(src.file, src.document, f"{prefix}spec.preemptionPolicy", f"the string value of PreemptionPolicy ({pod.preemption_policy}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name")
            changes.update(priority=value, preemption_policy=policy, priority_class_name=class_name)
        else:
            # No class and no global default: priority 0 and PreemptLowerPriority
            # (getDefaultPriority), which an explicit pod value must not contradict either.
            if explicit_priority and pod.priority != 0:
                raise ManifestError(src.file, src.document, f"{prefix}spec.priority", f"the integer value of priority ({pod.priority}) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name")
            if explicit_policy and pod.preemption_policy != "PreemptLowerPriority":
                raise ManifestError(src.file, src.document, f"{prefix}spec.preemptionPolicy", f"the string value of PreemptionPolicy ({pod.preemption_policy}) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name")
        # DefaultTolerationSeconds admission.
        tolerations = list(pod.tolerations)
        for key in (_NOT_READY, _UNREACHABLE):
            if not any((t.key in (key, "")) and t.effect in ("NoExecute", "") for t in pod.tolerations):
                tolerations.append(Toleration(key=key, operator="Exists", effect="NoExecute", toleration_seconds=300))
        if len(tolerations) != len(pod.tolerations):
            changes["tolerations"] = tuple(tolerations)
        changes.update(merged_label_keys(pod, objs.features))
        if meta_changes:
            meta = dataclasses.replace(meta, **meta_changes)
            changes["meta"] = meta
        if pod.node_name and pod.start_time is None and not pod.is_terminal:
            changes["start_time"] = meta.creation_timestamp
        new = dataclasses.replace(pod, **changes) if changes else pod
        objs.sources[id(new)] = src
        admitted.append(new)
        latest = max(latest, new.meta.creation_timestamp or 0.0, new.start_time or 0.0)
    objs.pods = admitted
    objs.latest_timestamp = latest
