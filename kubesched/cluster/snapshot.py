"""Read-only snapshots of a live cluster: every object the scheduler reads, consistent at one
resourceVersion, for the what-if commands (``simulate``, ``explain``, ``capacity``,
``compare``, ``pack`` with ``--kubeconfig``) and ``kubesched snapshot``'s dump.

:func:`take_snapshot` LISTs each resource of :func:`snapshot_resources` in pages of
:data:`PAGE_SIZE` (``limit`` + ``continue``, as client-go's pager). The first LIST is a
consistent read of the newest revision; every later one asks for exactly that revision
(``resourceVersion=RV&resourceVersionMatch=Exact``), which the API server serves from etcd's
MVCC history: the objects are the cluster as it was at one instant, not a mix of the states
each LIST happened to see. A continue token carries the same revision. When the revision is
compacted meanwhile (410 Expired, on a LIST or a continuation) the snapshot starts over at a
new revision, at most :data:`MAX_ATTEMPTS` times.

Pods are kept in the order of their last write (``metadata.resourceVersion``), not the LIST's
name order: the order in which a running scheduler's informer received them, which for a pod
never written since its creation (a pending pod, a pod created bound) is the order they were
created in. It is the snapshot's document order, the simulation's last tie-break in the
queue after priority and creationTimestamp (whole seconds: pods created in one second tie).

It only reads: the client it is given may make nothing but the LISTs of
:data:`SNAPSHOT_CALLS` (:class:`~kubesched.cluster.live.ApiClient` refuses any other call),
and deploy/snapshot/rbac.yaml grants exactly get/list/watch on these resources. A resource the
server does not serve (404, e.g. resource.k8s.io/v1 on a cluster before 1.34) is skipped with
a note; a 403 is an error naming the verb and resource and pointing at that ClusterRole.

:meth:`Snapshot.inputs` hands the objects to :func:`kubesched.objects.load_manifests` as
documents labelled ``SERVER: <resource> <namespace/name>`` (so a malformed object is an error
naming it), exactly as it reads the ``kubectl get -A -o yaml``-style List of
:meth:`Snapshot.as_list`: the cluster read from the API and from its dump decide the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kubesched.cluster.live import ApiCall, ApiClient
from kubesched.cluster.resources import RESOURCES, ApiResource, Json
from kubesched.errors import ApiError
from kubesched.features import DEFAULT_FEATURES, Features
from kubesched.objects.manifests import Documents

SNAPSHOT_RESOURCES: tuple[str, ...] = (
    "nodes", "pods", "namespaces", "priorityclasses", "persistentvolumes", "persistentvolumeclaims",
    "storageclasses", "csinodes", "csidrivers", "services", "replicationcontrollers", "replicasets", "statefulsets",
    "poddisruptionbudgets",
)
"""What a snapshot lists, in this order (the order of its dump): every kind kube-scheduler
reads, and PriorityClasses, which admission needs for pods added from manifests."""

DRA_SNAPSHOT_RESOURCES: tuple[str, ...] = ("deviceclasses", "resourceslices", "resourceclaims",
                                          "resourceclaimtemplates")
"""resource.k8s.io/v1, listed when the release decides with DynamicResourceAllocation (a
ResourceClaimTemplate gives a pending pod added from a manifest its claim)."""

ALL_SNAPSHOT_RESOURCES: tuple[str, ...] = SNAPSHOT_RESOURCES + DRA_SNAPSHOT_RESOURCES

SNAPSHOT_CALLS: tuple[ApiCall, ...] = tuple(ApiCall("list", RESOURCES[p].group, p) for p in ALL_SNAPSHOT_RESOURCES)
"""Every call a snapshot makes: LISTs, nothing else (its client refuses the rest)."""

READ_VERBS: tuple[str, ...] = ("get", "list", "watch")
"""The verbs deploy/snapshot/rbac.yaml grants on every resource of a snapshot."""

RBAC_FILE = "deploy/snapshot/rbac.yaml"
CLUSTER_ROLE = "kubesched-snapshot"
USER_AGENT = "kubesched-snapshot"
PAGE_SIZE = 500  # client-go pager.defaultPageSize
MAX_ATTEMPTS = 3


def snapshot_resources(features: Features | None = None) -> tuple[str, ...]:
    """The resources a snapshot for ``features``' release lists: the DRA kinds only when it
    decides with DynamicResourceAllocation (an older release's loader refuses them)."""
    feats = features if features is not None else DEFAULT_FEATURES
    return ALL_SNAPSHOT_RESOURCES if feats.enabled("DynamicResourceAllocation") else SNAPSHOT_RESOURCES


@dataclass(frozen=True, slots=True)
class ResourceList:
    """One resource's objects in a snapshot, in the API server's order, each with its kind and
    apiVersion (a LIST's items have neither: restored as kubectl does)."""

    resource: ApiResource
    items: tuple[Json, ...]
    pages: int


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A cluster's objects at one resourceVersion."""

    server: str
    resource_version: str
    lists: tuple[ResourceList, ...]
    skipped: tuple[str, ...] = ()  # resources the server does not serve (group_resource)
    attempts: int = 1  # 1 + how many times it started over after a 410

    @property
    def count(self) -> int:
        return sum(len(rl.items) for rl in self.lists)

    def items(self) -> Iterator[tuple[ApiResource, Json]]:
        for rl in self.lists:
            for item in rl.items:
                yield rl.resource, item

    @property
    def name(self) -> str:
        """How the snapshot is named where a file name would be (titles, sources)."""
        return f"{self.server} (resourceVersion {self.resource_version})"

    def notes(self) -> list[str]:
        """One line per resource skipped."""
        return [f"{gr} is not served by {self.server}: skipped" for gr in self.skipped]

    def inputs(self) -> Documents:
        """The objects as :func:`kubesched.objects.load_manifests` reads them, each labelled
        ``SERVER: <resource> <namespace/name>`` (its errors name the object)."""
        docs: list[Json] = []
        labels: list[str] = []
        for r, item in self.items():
            docs.append(item)
            labels.append(f"{self.server}: {r.group_resource} {_object_name(item)}")
        return Documents(self.name, tuple(docs), tuple(labels))

    def as_list(self) -> Json:
        """What ``kubectl get <resources> -A -o yaml`` prints: a ``v1 List`` of every object
        with its kind and apiVersion, without managedFields (kubectl's default)."""
        return {"apiVersion": "v1", "kind": "List", "items": [_without_managed_fields(o) for _, o in self.items()],
                "metadata": {"resourceVersion": ""}}


def _revision(item: Json) -> int:
    """The revision of an object's last write (0 when unreadable)."""
    rv = (item.get("metadata") or {}).get("resourceVersion")
    try:
        return int(str(rv))
    except ValueError:
        return 0


def _object_name(item: Json) -> str:
    meta = item.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name, ns = meta.get("name") or "<no name>", meta.get("namespace") or ""
    return f"{ns}/{name}" if ns else str(name)


def _without_managed_fields(item: Json) -> Json:
    meta = item.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        return {**item, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return item


class _Expired(Exception):
    """The snapshot's revision was compacted while it was read: start over."""


Progress = Callable[[str, int, int, int], None]
"""progress(resource plural, resources done, resources in all, objects read so far)."""


def take_snapshot(client: ApiClient, *, resources: tuple[str, ...] | None = None, page_size: int = PAGE_SIZE,
                  attempts: int = MAX_ATTEMPTS, progress: Progress | None = None) -> Snapshot:
    """Read ``resources`` (default: every one of :data:`ALL_SNAPSHOT_RESOURCES`) through
    ``client``, consistent at one resourceVersion (see the module). Raises ApiError: 403
    (naming the RBAC to apply), the revision expiring ``attempts`` times, any other refusal."""
    plurals = resources if resources is not None else ALL_SNAPSHOT_RESOURCES
    last = ""
    for attempt in range(1, attempts + 1):
        try:
            return _read(client, plurals, page_size, attempt, progress)
        except _Expired as e:
            last = str(e)
    raise ApiError(f"{client.config.server}: the snapshot expired {attempts} times (its resourceVersion was "
                   f"compacted before every resource was read: the cluster changes faster than it can be "
                   f"listed); last: {last}", status=410)


def _read(client: ApiClient, plurals: tuple[str, ...], page_size: int, attempt: int,
          progress: Progress | None) -> Snapshot:
    rv = ""
    lists: list[ResourceList] = []
    skipped: list[str] = []
    read = 0
    for done, plural in enumerate(plurals):
        r = RESOURCES[plural]
        if progress is not None:
            progress(plural, done, len(plurals), read)
        items: list[Json] = []
        # The first resource fixes the revision (a consistent read of the newest); every other
        # asks for exactly it. A continuation carries it in its token (and may not repeat it).
        params: dict[str, str] = {"limit": str(page_size)}
        if rv:
            params.update(resourceVersion=rv, resourceVersionMatch="Exact")
        pages = 0
        while True:
            try:
                body = client.request("list", r, params=params)
            except ApiError as e:
                if e.status == 404 and not pages:
                    skipped.append(r.group_resource)
                    break
                if e.status == 410:
                    raise _Expired(f"list {r.group_resource} at resourceVersion {rv or 'newest'}: {e}") from None
                raise _refused(client, r, e) from None
            pages += 1
            meta = body.get("metadata") or {}
            if not rv:
                rv = str(meta.get("resourceVersion") or "")
            for item in body.get("items") or []:
                if isinstance(item, dict):
                    items.append({"apiVersion": r.api_version, "kind": r.kind, **item})
            read += len(body.get("items") or [])
            if progress is not None:
                progress(plural, done, len(plurals), read)
            token = meta.get("continue")
            if not token:
                if plural == "pods":
                    items.sort(key=_revision)
                lists.append(ResourceList(r, tuple(items), pages))
                break
            params = {"limit": str(page_size), "continue": str(token)}
    if progress is not None:
        progress("", len(plurals), len(plurals), read)
    return Snapshot(client.config.server, rv, tuple(lists), tuple(skipped), attempt)


def _refused(client: ApiClient, r: ApiResource, e: ApiError) -> ApiError:
    """The error of a LIST the server refused, naming the verb and resource; a 403 points at
    the ClusterRole to grant."""
    server = client.config.server
    if e.status == 403:
        return ApiError(f"{server}: forbidden to list {r.group_resource} at the cluster scope ({e}); a snapshot "
                        f"needs {'/'.join(READ_VERBS)} on every resource it reads: apply {RBAC_FILE} (ClusterRole "
                        f"{CLUSTER_ROLE}) and bind it to this user", status=403)
    if e.status == 401:
        return ApiError(f"{server}: unauthorized to list {r.group_resource}: the kubeconfig's credentials were "
                        f"refused ({e})", status=401)
    return ApiError(f"{server}: list {r.group_resource}: {e}", status=e.status)


def snapshot_client(kubeconfig: str, *, context: str | None = None, qps: float = 50.0, burst: int = 100) -> ApiClient:
    """A client for ``kubeconfig``'s (``context``'s) cluster that may only make a snapshot's
    LISTs."""
    from kubesched.cluster.live import load_cluster_config

    config = load_cluster_config(kubeconfig, context=context)
    return ApiClient(config, qps=qps, burst=burst, user_agent=USER_AGENT, calls=SNAPSHOT_CALLS)


def dump_yaml(snapshot: Snapshot) -> str:
    """The snapshot's List as YAML (``kubectl get -A -o yaml``)."""
    import yaml

    dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return str(yaml.dump(snapshot.as_list(), Dumper=dumper, sort_keys=False, default_flow_style=False,
                         allow_unicode=True))
