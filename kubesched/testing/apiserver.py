"""A local HTTP server that behaves like the Kubernetes API for the resources kubesched uses.

It serves the tests of the live scheduler and ``kubesched bench --workload live``; it is no
cluster (no kubelet, no controllers), but what it answers follows the API's documented
behaviour closely enough for a client written against a real API server:

- One in-memory store with a global resourceVersion counter (etcd's revision): every write
  bumps it and stamps the object's ``metadata.resourceVersion``.
- LIST returns ``<Kind>List`` with ``metadata.resourceVersion`` (items in etcd key order,
  ``namespace/name``, without kind/apiVersion, as the API server sends them). ``limit`` pages the
  list: ``metadata.continue`` is an opaque token (base64 of ``{"v", "rv", "start"}``, the
  storage layer's continueToken) and every page is read at the first page's revision;
  ``remainingItemCount`` without selectors. ``resourceVersion`` / ``resourceVersionMatch`` are
  served as the API server does (the list semantics of api-concepts): unset, a consistent read
  of the newest revision; ``0``, the watch cache (newest, ``limit`` ignored); ``N`` with
  ``NotOlderThan`` (or without a match and without ``limit``), the newest revision, which must
  be at least N; ``N`` with ``Exact`` (or, legacy, without a match but with ``limit``), the
  state at revision N, rebuilt from the event history: 410 Expired once N is older than the
  history kept (the compaction window), 504 "Too large resource version" when N is in the
  future. Invalid combinations are refused as ValidateListOptions / storage.ValidateListOptions
  refuse them (422 / 400).
- WATCH (``?watch=1&resourceVersion=N&allowWatchBookmarks=true&timeoutSeconds=S``): chunked
  JSON lines ``{"type": ..., "object": ...}``; ADDED / MODIFIED / DELETED, BOOKMARK events
  (``bookmark_interval``) carrying only ``metadata.resourceVersion``, and ERROR with a 410
  Status when N is older than the compaction window (``history`` events are kept). Without
  N (or N = 0) the stream starts with a synthetic ADDED per existing object. With a field or
  label selector, an object that stops matching arrives as DELETED and one that starts
  matching as ADDED (the watch cache's filtering).
- fieldSelector on ``metadata.name``, ``metadata.namespace``, ``spec.nodeName``,
  ``spec.schedulerName``, ``status.phase`` (``=``, ``==``, ``!=``); labelSelector in its string
  form (``=``, ``!=``, ``in``, ``notin``, exists, ``!`` not exists).
- POST creates (409 AlreadyExists; ``generateName``; namespaces must exist). Pods go through
  the admission a cluster applies: Priority (priorityClassName -> priority and
  preemptionPolicy, the global default class), DefaultTolerationSeconds, and API defaults
  (schedulerName, terminationGracePeriodSeconds, phase Pending).
- POST ``pods/{name}/binding``: 201; 409 Conflict when already bound, being deleted, gated, or
  the binding's UID is not the pod's. Sets spec.nodeName and PodScheduled=True.
- PUT replaces (409 Conflict when metadata.resourceVersion is given and stale); PUT/PATCH of
  ``/status`` change only the status. PATCH: merge patch (RFC 7386) and strategic merge patch
  (lists of conditions, containers, volumes... merged by their key; ``$patch: delete``).
  A ``metadata.uid`` in the patch that is not the object's is a 409 Conflict.
- DELETE with ``preconditions`` (uid / resourceVersion: 409 on mismatch) and
  ``gracePeriodSeconds``. A bound, non-terminal pod is deleted gracefully: deletionTimestamp
  set (MODIFIED), then removed once its grace period ends (the kubelet's part); grace 0,
  unbound or terminal pods go at once. Other objects go at once.
- Leases (coordination.k8s.io/v1) and Events (events.k8s.io/v1) are plain objects with the
  same create / update-conflict semantics.
- resource.k8s.io/v1 DeviceClasses, ResourceSlices, ResourceClaims and ResourceClaimTemplates
  (validated by kubesched's parsers). A ResourceClaim's status is dropped on create and kept by
  a PUT of the claim (whose spec is immutable); its ``status`` subresource (PUT, PATCH) is
  validated as ValidateResourceClaimStatusUpdate does (reservedFor complete, unique by uid, at
  most 256, only with an allocation, none added while the claim is being deleted; an allocation
  immutable once set, naming the claim's requests); ``reservedFor`` merges by uid in a
  strategic merge patch.
- Finalizers: deleting an object (other than a pod) that has some only sets its
  deletionTimestamp; an update removing the last one deletes it.

Fault injection for tests: :meth:`LocalApiServer.fail_next` (N requests answer an error
code, optionally with a ``Retry-After`` header), :meth:`~LocalApiServer.delay_next` (N requests
are read, then wait before being served: the change is made even if the client gave up),
:meth:`~LocalApiServer.drop_reply_next` (N requests are served but the connection is cut
instead of answering: a lost reply) — all optionally only for some verbs, resources, or one
client's User-Agent (every request is recorded with it, and its arrival time),
:meth:`~LocalApiServer.drop_watches` (every open watch stream ends, abruptly by default: the
connection is cut mid-stream, or in the middle of an event; :attr:`~LocalApiServer.watch_ends`
records when and how each stream ended),
:meth:`~LocalApiServer.expire_next_watch` (the next watches get 410 Gone),
:meth:`~LocalApiServer.compact` (forget the event history) and
:meth:`~LocalApiServer.restart` (close every connection; keep or lose the state; with
``downtime``, connections are refused meanwhile).

Served by uvicorn (starlette app) on 127.0.0.1 from a background thread::

    with LocalApiServer() as api:
        api.create(node_manifest)
        client = ApiClient(ClusterConfig(server=api.url))
"""

from __future__ import annotations

import asyncio
import base64
import copy
import functools
import itertools
import json
import logging
import posixpath
import socket
import ssl
import threading
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from kubesched.cluster.binding import binding_labels, clears_nomination
from kubesched.cluster.resources import (
    RESOURCE_BY_KIND,
    RESOURCES,
    ApiResource,
    FieldTerm,
    Json,
    LabelTerm,
    field_selector_matches,
    format_time,
    label_selector_matches,
    parse_field_selector,
    parse_label_selector,
    resource_for,
    status_body,
)
from kubesched.errors import FieldError
from kubesched.features import DEFAULT_FEATURES, Features
from kubesched.objects.devices import DRA_PARSERS
from kubesched.objects.parse import PARSERS

log = logging.getLogger(__name__)

ADDED, MODIFIED, DELETED, BOOKMARK, ERROR = "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"

SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_NOT_READY = "node.kubernetes.io/not-ready"
_UNREACHABLE = "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION_SECONDS = 300

# Strategic merge patch: the merge key of the lists kubesched's objects carry (patchMergeKey).
MERGE_KEYS = {"conditions": "type", "containers": "name", "initContainers": "name", "ephemeralContainers": "name",
              "volumes": "name", "env": "name", "ports": "containerPort", "volumeMounts": "mountPath",
              "ownerReferences": "uid", "addresses": "type", "imagePullSecrets": "name",
              "reservedFor": "uid"}
RESERVED_FOR_MAX_SIZE = 256  # resource.ResourceClaimReservedForMaxSize


@dataclass(frozen=True, slots=True)
class ListPage:
    """One LIST reply: the items, the revision they were read at, the continue token ("" on
    the last page) and, without selectors, how many items follow."""

    items: list[Json]
    rv: int
    continue_token: str = ""
    remaining: int | None = None


_CONTINUE_EXPIRED = ("The provided continue parameter is too old to display a consistent list result. You can start "
                     "a new list without the continue parameter.")


def _list_key(key: tuple[str, str], scoped: bool) -> str:
    """An object's etcd key relative to the list's prefix: ``namespace/name`` (``name`` for a
    cluster-scoped object or a list within one namespace)."""
    ns, name = key
    return name if scoped or not ns else f"{ns}/{name}"


def _list_key_of(obj: Json, scoped: bool) -> str:
    meta = obj["metadata"]
    return _list_key((meta.get("namespace", ""), meta["name"]), scoped)


def _encode_continue(start: str, rv: int) -> str:
    """storage.EncodeContinue: base64url (no padding) of ``{"v":"meta.k8s.io/v1","rv":N,"start":KEY}``."""
    data = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _decode_continue(token: str) -> tuple[str, int]:
    """storage.DecodeContinue: (the start key, the revision); 400 for a token it cannot read."""
    def bad(why: str) -> ApiStatusError:
        return ApiStatusError(400, f"invalid continue token: continue key is not valid{why}", "BadRequest")

    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (ValueError, TypeError):
        raise bad("") from None
    if not isinstance(data, dict) or data.get("v") != "meta.k8s.io/v1":
        raise bad(": server does not recognize this encoded version")
    rv, start = data.get("rv"), data.get("start")
    if not isinstance(rv, int) or rv == 0:
        raise bad(": incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    if not isinstance(start, str) or not start:
        raise bad(": encoded start key empty (version meta.k8s.io/v1)")
    key = start if start.startswith("/") else "/" + start
    if posixpath.normpath(key) != key:
        raise bad(f": {start}")  # no path traversal out of the list's prefix
    return key[1:], rv


def _parse_rv(value: str) -> int:
    try:
        rv = int(value)
    except ValueError:
        rv = -1
    if rv < 0:
        raise ApiStatusError(400, f"invalid resource version: {value!r}", "BadRequest")
    return rv


def _validate_list_options(resource_version: str, match: str, continue_token: str) -> None:
    """ValidateListOptions (apimachinery meta/internalversion/validation) for a LIST: 422 Invalid."""
    errors: list[str] = []
    if match:
        if not resource_version:
            errors.append("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion "
                          "is provided")
        if continue_token:
            errors.append("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is "
                          "provided")
        if match not in ("Exact", "NotOlderThan"):
            errors.append(f'resourceVersionMatch: Unsupported value: "{match}": supported values: "Exact", '
                          '"NotOlderThan", ""')
        if match == "Exact" and resource_version == "0":
            errors.append('resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for '
                          'resourceVersion "0"')
    if errors:
        joined = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        raise ApiStatusError(422, f'ListOptions.meta.k8s.io "" is invalid: {joined}', "Invalid")


class ApiStatusError(Exception):
    """A request the API refuses: HTTP ``code`` with a metav1.Status body."""

    def __init__(self, code: int, message: str, reason: str = "", *, name: str = "", kind: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.body = status_body(code, message, reason, name=name, kind=kind)


def _not_found(r: ApiResource, name: str) -> ApiStatusError:
    return ApiStatusError(404, f'{r.group_resource} "{name}" not found', "NotFound", name=name, kind=r.plural)


def _conflict(what: str, name: str, why: str) -> ApiStatusError:
    return ApiStatusError(409, f'Operation cannot be fulfilled on {what} "{name}": {why}', "Conflict", name=name)


_MODIFIED = "the object has been modified; please apply your changes to the latest version and try again"


# ================================================================ the store
@dataclass(slots=True)
class _Event:
    rv: int
    plural: str
    type: str
    obj: Json
    prev: Json | None = None


class _Watch:
    """One open watch: what it selects and the asyncio queue its stream reads."""

    def __init__(self, r: ApiResource, namespace: str, fields: list[FieldTerm], labels: list[LabelTerm],
                 loop: asyncio.AbstractEventLoop) -> None:
        self.resource = r
        self.namespace = namespace
        self.fields = fields
        self.labels = labels
        self.loop = loop
        self.queue: asyncio.Queue[tuple[str, Json] | str] = asyncio.Queue()

    def matches(self, obj: Mapping[str, Any]) -> bool:
        meta = obj.get("metadata") or {}
        if self.namespace and meta.get("namespace") != self.namespace:
            return False
        if self.fields and not field_selector_matches(self.fields, obj):
            return False
        return not self.labels or label_selector_matches(self.labels, meta.get("labels") or {})

    def convert(self, ev: _Event) -> tuple[str, Json] | None:
        """The event this watch sees, after its selectors (cacher: watch filtering)."""
        if ev.plural != self.resource.plural:
            return None
        new_m = self.matches(ev.obj)
        if ev.type != MODIFIED:
            return (ev.type, ev.obj) if new_m else None
        old_m = ev.prev is not None and self.matches(ev.prev)
        if new_m:
            return (MODIFIED if old_m else ADDED), ev.obj
        if old_m and ev.prev is not None:
            gone = copy.deepcopy(ev.prev)
            gone["metadata"]["resourceVersion"] = str(ev.rv)
            return DELETED, gone
        return None

    def push(self, item: tuple[str, Json] | str) -> None:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)
        except RuntimeError:  # the loop is closed: the stream is gone already
            pass


class ApiStore:
    """Objects by resource and namespace/name, the global revision, the event history and
    the open watches. Thread-safe; every method raises :class:`ApiStatusError` for refusals."""

    def __init__(self, *, history: int = 100_000, features: Features | None = None) -> None:
        """``features``: the release whose API server behaviour is served (binding clears the
        nomination and copies topology labels from 1.35 on; /version reports it)."""
        self.features = features if features is not None else DEFAULT_FEATURES
        self._lock = threading.RLock()
        self.rv = 0
        self.history = history
        self._objects: dict[str, dict[tuple[str, str], Json]] = {p: {} for p in RESOURCES}
        self._log: deque[_Event] = deque()
        self._compacted = 0  # events with rv <= this are no longer in the log
        self._watches: set[_Watch] = set()
        self._timers: dict[tuple[str, str], threading.Timer] = {}
        self._names = itertools.count()
        self.clock: Callable[[], float] = time.time
        self.bootstrap()

    def bootstrap(self) -> None:
        """What a new cluster holds: the initial namespaces and the system priority classes."""
        for ns in INITIAL_NAMESPACES:
            self.create("namespaces", "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        for name, value in SYSTEM_PRIORITY_CLASSES.items():
            self.create("priorityclasses", "", {
                "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                "value": value, "description": "Used for system critical pods that must not be moved."})

    # ---------------------------------------------------------------- internals
    def _commit(self, r: ApiResource, etype: str, obj: Json, prev: Json | None = None) -> Json:
        """Stamp a new revision on ``obj``, store (or drop) it, log and fan out the event."""
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        if etype == DELETED:
            self._objects[r.plural].pop(key, None)
        else:
            self._objects[r.plural][key] = obj
        ev = _Event(self.rv, r.plural, etype, obj, prev)
        self._log.append(ev)
        while len(self._log) > self.history:
            self._compacted = self._log.popleft().rv
        for w in self._watches:
            out = w.convert(ev)
            if out is not None:
                w.push(out)
        return obj

    def _get(self, r: ApiResource, namespace: str, name: str) -> Json:
        obj = self._objects[r.plural].get((namespace if r.namespaced else "", name))
        if obj is None:
            raise _not_found(r, name)
        return obj

    def _now(self) -> str:
        return format_time(self.clock())

    # ---------------------------------------------------------------- reads
    def get(self, plural: str, namespace: str, name: str) -> Json:
        with self._lock:
            return copy.deepcopy(self._get(RESOURCES[plural], namespace, name))

    def list_objects(self, plural: str, namespace: str = "", fields: list[FieldTerm] | None = None,
             labels: list[LabelTerm] | None = None) -> tuple[list[Json], int]:
        """(matching objects in key order, the store's revision)."""
        page = self.list_page(plural, namespace, fields, labels)
        return page.items, page.rv

    def list_page(self, plural: str, namespace: str = "", fields: list[FieldTerm] | None = None,
                  labels: list[LabelTerm] | None = None, *, resource_version: str = "", match: str = "",
                  limit: int = 0, continue_token: str = "") -> ListPage:
        """One LIST as the API server serves it (see the module's docstring): the revision it
        is read at from ``resource_version`` / ``match`` / ``continue_token``, at most
        ``limit`` items (0: all) after the token's key. Raises ApiStatusError as the API
        server refuses."""
        _validate_list_options(resource_version, match, continue_token)
        r = RESOURCES[plural]
        # The key prefix of the list (etcd: /registry/<resource>/[<namespace>/]): keys and
        # continue tokens are relative to it.
        scoped = bool(namespace) and r.namespaced
        with self._lock:
            start = ""
            paging = limit > 0
            if continue_token:
                start, at = _decode_continue(continue_token)
                if resource_version not in ("", "0"):
                    raise ApiStatusError(400, "specifying resource version is not allowed when using continue",
                                         "BadRequest")
                at = self.rv if at < 0 else at
            elif resource_version == "":
                at = self.rv  # a consistent read: the newest revision, paged at it
            elif resource_version == "0":
                # Any revision: the watch cache, which ignores the limit (cacher computeListLimit).
                at, paging = self.rv, False
            else:
                wanted = _parse_rv(resource_version)
                if wanted > self.rv:
                    raise ApiStatusError(504, f"Too large resource version: {wanted}, current: {self.rv}", "Timeout")
                exact = match == "Exact" or (match == "" and limit > 0)
                at = wanted if exact else self.rv
            if at < self._compacted and at != self.rv:
                if continue_token:
                    raise ApiStatusError(410, _CONTINUE_EXPIRED, "Expired")
                raise ApiStatusError(410, "The resourceVersion for the provided list is too old.", "Expired")
            objects = self._objects_at(plural, at)
            keyed = sorted((_list_key(key, scoped), key, obj) for key, obj in objects.items()
                           if not scoped or key[0] == namespace)
            items: list[Json] = []
            token, remaining = "", None
            for i, (k, _, obj) in enumerate(keyed):
                if k < start:
                    continue
                if paging and len(items) >= limit:
                    # More keys after a full page: continue after the last key served.
                    token = _encode_continue(_list_key_of(items[-1], scoped) + "\x00", at)
                    if not fields and not labels:
                        remaining = len(keyed) - i
                    break
                if fields and not field_selector_matches(fields, obj):
                    continue
                if labels and not label_selector_matches(labels, (obj.get("metadata") or {}).get("labels") or {}):
                    continue
                items.append(obj)
            return ListPage(items, at, token, remaining)

    def _objects_at(self, plural: str, at: int) -> Mapping[tuple[str, str], Json]:
        """The objects of one resource as they were at revision ``at`` (>= the compaction
        point): the current ones with every later event of the history undone, newest first
        (etcd's MVCC read at a past revision)."""
        current = self._objects[plural]
        if at >= self.rv:
            return current
        objects = dict(current)
        for ev in reversed(self._log):
            if ev.rv <= at:
                break
            if ev.plural != plural:
                continue
            key = (ev.obj["metadata"].get("namespace", ""), ev.obj["metadata"]["name"])
            if ev.type == ADDED or ev.prev is None:
                objects.pop(key, None)
            else:  # MODIFIED or DELETED: what it was before
                objects[key] = ev.prev
        return objects

    def count_bound_pods(self) -> int:
        """How many stored pods have a spec.nodeName (no copies: the bench polls it)."""
        with self._lock:
            return sum(1 for p in self._objects["pods"].values() if (p.get("spec") or {}).get("nodeName"))

    def objects(self, plural: str) -> list[Json]:
        """Every stored object of a resource (copies), sorted by namespace/name."""
        with self._lock:
            return [copy.deepcopy(o) for _, o in sorted(self._objects[plural].items())]

    # ---------------------------------------------------------------- watches
    def open_watch(self, r: ApiResource, namespace: str, fields: list[FieldTerm], labels: list[LabelTerm],
                   rv: str, loop: asyncio.AbstractEventLoop) -> tuple[_Watch, list[tuple[str, Json]]]:
        """Register a watch from ``rv`` and return it with the events it must send first.
        Raises 410 when ``rv`` is older than the history kept."""
        with self._lock:
            w = _Watch(r, namespace, fields, labels, loop)
            initial: list[tuple[str, Json]] = []
            if rv in ("", "0"):
                for (_, _), obj in sorted(self._objects[r.plural].items()):
                    if w.matches(obj):
                        initial.append((ADDED, obj))
            else:
                try:
                    since = int(rv)
                except ValueError:
                    raise ApiStatusError(400, f"invalid resource version: {rv!r}", "BadRequest") from None
                if since < self._compacted:
                    raise ApiStatusError(410, f"too old resource version: {since} ({self._compacted + 1})", "Expired")
                for ev in self._log:
                    if ev.rv > since:
                        out = w.convert(ev)
                        if out is not None:
                            initial.append(out)
            self._watches.add(w)
            return w, initial

    def open_watch_count(self) -> int:
        with self._lock:
            return len(self._watches)

    def close_watch(self, w: _Watch) -> None:
        with self._lock:
            self._watches.discard(w)

    def end_watches(self, how: str) -> int:
        """Tell every open watch stream to end (``"close"``: cleanly; ``"drop"``: cut the
        connection mid-stream, between two events; ``"drop-mid-event"``: cut it in the middle
        of an event's line). Returns how many there were."""
        with self._lock:
            watches = list(self._watches)
            self._watches.clear()
        for w in watches:
            w.push(how)
        return len(watches)

    def compact(self) -> None:
        """Forget the event history: any watch from an older revision gets 410 Gone."""
        with self._lock:
            self._log.clear()
            self._compacted = self.rv

    def reset(self) -> None:
        """Lose every object (the revision keeps growing, the history is gone), then
        bootstrap again as a new cluster would."""
        with self._lock:
            for t in self._timers.values():
                t.cancel()
            self._timers.clear()
            self._objects = {p: {} for p in RESOURCES}
            # A revision with no event: every revision a client holds is now too old (410),
            # so it relists and sees what was lost, not just what came after.
            self.rv += 1
            self.compact()
            self.bootstrap()

    def close(self) -> None:
        with self._lock:
            for t in self._timers.values():
                t.cancel()
            self._timers.clear()

    # ---------------------------------------------------------------- writes
    def create(self, plural: str, namespace: str, body: Mapping[str, Any], *, restore: bool = False) -> Json:
        """POST. With ``restore`` (direct access only, never over HTTP): the object keeps the
        ``metadata.uid`` and ``creationTimestamp`` it carries, as objects restored from an etcd
        backup do (a test loading a recorded cluster; admission still applies)."""
        r = RESOURCES[plural]
        obj = copy.deepcopy(dict(body))
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiStatusError(400, "metadata must be an object", "BadRequest")
        obj["kind"] = obj.get("kind") or r.kind
        obj["apiVersion"] = obj.get("apiVersion") or r.api_version
        if obj["kind"] != r.kind:
            raise ApiStatusError(400, f"the kind {obj['kind']!r} does not match the resource {r.plural!r}", "BadRequest")
        with self._lock:
            if r.namespaced:
                ns = namespace or meta.get("namespace") or "default"
                if meta.get("namespace") and meta["namespace"] != ns:
                    raise ApiStatusError(400, "the namespace of the provided object does not match the namespace "
                                              "sent on the request", "BadRequest")
                meta["namespace"] = ns
                if ("", ns) not in self._objects["namespaces"]:
                    raise ApiStatusError(404, f'namespaces "{ns}" not found', "NotFound", name=ns, kind="namespaces")
            else:
                meta.pop("namespace", None)
            if not meta.get("name"):
                prefix = meta.get("generateName")
                if not prefix:
                    raise ApiStatusError(422, f"{r.kind}.{r.group or 'core'} \"\" is invalid: metadata.name: "
                                              "Required value: name or generateName is required", "Invalid")
                meta["name"] = f"{prefix}{uuid.uuid4().hex[:5]}"
            name = meta["name"]
            if (meta.get("namespace", ""), name) in self._objects[plural]:
                raise ApiStatusError(409, f'{r.group_resource} "{name}" already exists', "AlreadyExists",
                                     name=name, kind=r.plural)
            if not (restore and meta.get("uid")):
                meta["uid"] = str(uuid.uuid4())
            if not (restore and meta.get("creationTimestamp")):
                meta["creationTimestamp"] = self._now()
            for k in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
                meta.pop(k, None)
            if plural == "pods":
                self._admit_pod(obj)
            elif plural == "resourceclaims":
                obj.pop("status", None)  # resourceclaimStrategy.PrepareForCreate: the status is the scheduler's
            elif plural == "namespaces":
                meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = name
                obj.setdefault("spec", {"finalizers": ["kubernetes"]})
                obj["status"] = {"phase": "Active"}
            self._validate(r, obj)
            return copy.deepcopy(self._commit(r, ADDED, obj))

    def _validate(self, r: ApiResource, obj: Json) -> None:
        """The typed objects' parsers as validation (422 Invalid with the field path)."""
        entry = PARSERS.get(r.kind)
        parse = entry[1] if entry is not None else DRA_PARSERS.get(r.kind)
        if parse is None:
            return
        try:
            parse(obj)
        except FieldError as e:
            raise ApiStatusError(422, f'{r.kind} "{obj["metadata"].get("name", "")}" is invalid: {e}', "Invalid",
                                 name=obj["metadata"].get("name", ""), kind=r.plural) from None

    def _admit_pod(self, pod: Json) -> None:
        """Priority and DefaultTolerationSeconds admission, and the API defaults the
        scheduler reads."""
        spec = pod.setdefault("spec", {})
        name = pod["metadata"]["name"]
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("dnsPolicy", "ClusterFirst")
        # Priority admission.
        class_name = spec.get("priorityClassName") or ""
        classes = self._objects["priorityclasses"]
        value, policy = 0, "PreemptLowerPriority"
        if class_name:
            pc = classes.get(("", class_name))
            if pc is None:
                raise ApiStatusError(403, f'pods "{name}" is forbidden: no PriorityClass with name {class_name} '
                                          "was found", "Forbidden", name=name, kind="pods")
            value, policy = int(pc.get("value", 0)), pc.get("preemptionPolicy") or policy
        else:
            defaults = sorted((int(pc.get("value", 0)), key[1], pc) for key, pc in classes.items()
                              if pc.get("globalDefault"))
            if defaults:
                value, class_name = defaults[0][0], defaults[0][1]
                policy = defaults[0][2].get("preemptionPolicy") or policy
                spec["priorityClassName"] = class_name
        if spec.get("priority") is not None and spec["priority"] != value:
            raise ApiStatusError(403, f'pods "{name}" is forbidden: the integer value of priority '
                                      f"({spec['priority']}) must not be provided in pod spec; priority admission "
                                      f"controller computed {value} from the given PriorityClass name",
                                 "Forbidden", name=name, kind="pods")
        if spec.get("preemptionPolicy") is not None and spec["preemptionPolicy"] != policy:
            raise ApiStatusError(403, f'pods "{name}" is forbidden: the string value of PreemptionPolicy '
                                      f"({spec['preemptionPolicy']}) must not be provided in pod spec; priority "
                                      f"admission controller computed {policy} from the given PriorityClass name",
                                 "Forbidden", name=name, kind="pods")
        spec["priority"] = value
        spec["preemptionPolicy"] = policy
        # DefaultTolerationSeconds admission.
        tolerations = list(spec.get("tolerations") or [])
        for key in (_NOT_READY, _UNREACHABLE):
            if not any(t.get("key", "") in (key, "") and t.get("effect", "") in ("NoExecute", "") for t in tolerations):
                tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                                    "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})
        spec["tolerations"] = tolerations
        status = pod.setdefault("status", {})
        status.setdefault("phase", "Pending")

    def update(self, plural: str, namespace: str, name: str, body: Mapping[str, Any], subresource: str = "") -> Json:
        """PUT: replace the object (or, for ``status``, its status). A given
        metadata.resourceVersion must be the current one (409 Conflict)."""
        r = RESOURCES[plural]
        with self._lock:
            cur = self._get(r, namespace, name)
            new = copy.deepcopy(dict(body))
            meta = new.get("metadata") or {}
            if meta.get("name", name) != name:
                raise ApiStatusError(400, "the name of the object does not match the name on the URL", "BadRequest")
            rv = meta.get("resourceVersion")
            if rv and rv != cur["metadata"]["resourceVersion"]:
                raise _conflict(r.group_resource, name, _MODIFIED)
            return copy.deepcopy(self._replace(r, cur, new, subresource))

    def _replace(self, r: ApiResource, cur: Json, new: Json, subresource: str) -> Json:
        uid = (new.get("metadata") or {}).get("uid")
        if uid and uid != cur["metadata"]["uid"]:
            raise _conflict(r.group_resource, cur["metadata"]["name"],
                            f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
                            f"{cur['metadata']['uid']}")
        if subresource == "status":
            out = copy.deepcopy(cur)
            out["status"] = copy.deepcopy(new.get("status") or {})
            if r.plural == "resourceclaims":
                _validate_claim_status(out, cur)
                for key in ("reservedFor", "allocation", "devices"):
                    if not out["status"].get(key):
                        out["status"].pop(key, None)  # omitempty: an empty list is not written
        elif subresource:
            raise ApiStatusError(404, f"the server could not find the requested resource ({subresource})", "NotFound")
        else:
            out = new
            out["kind"], out["apiVersion"] = cur["kind"], cur["apiVersion"]
            meta = out.setdefault("metadata", {})
            for k in ("uid", "creationTimestamp", "namespace", "name", "deletionTimestamp",
                      "deletionGracePeriodSeconds"):
                if k in cur["metadata"]:
                    meta[k] = cur["metadata"][k]
                else:
                    meta.pop(k, None)
            if r.plural == "pods":
                # Pod spec fields the scheduler relies on are immutable once set.
                for k in ("nodeName", "schedulerName", "priority"):
                    old_v, new_v = (cur.get("spec") or {}).get(k), (out.get("spec") or {}).get(k)
                    if old_v and new_v != old_v:
                        raise ApiStatusError(422, f'Pod "{meta["name"]}" is invalid: spec.{k}: Forbidden: '
                                                  "pod updates may not change fields other than mutable ones",
                                             "Invalid")
            elif r.plural == "resourceclaims":
                # resourceclaimStrategy: the spec is immutable, the status is written through
                # the status subresource only.
                if out.get("spec") != cur.get("spec"):
                    raise ApiStatusError(422, f'ResourceClaim.resource.k8s.io "{meta["name"]}" is invalid: spec: '
                                              "Invalid value: field is immutable", "Invalid")
                if "status" in cur:
                    out["status"] = copy.deepcopy(cur["status"])
                else:
                    out.pop("status", None)
            self._validate(r, out)
            if out["metadata"].get("deletionTimestamp") and not out["metadata"].get("finalizers") \
                    and r.plural != "pods":
                # The last finalizer of an object being deleted is gone: the object goes.
                return self._commit(r, DELETED, out, cur)
        return self._commit(r, MODIFIED, out, cur)

    def patch(self, plural: str, namespace: str, name: str, patch: Any, patch_type: str,
              subresource: str = "") -> Json:
        """PATCH with a merge or strategic merge patch."""
        r = RESOURCES[plural]
        if not isinstance(patch, dict):
            raise ApiStatusError(400, "the patch must be a JSON object", "BadRequest")
        strategic = patch_type == "application/strategic-merge-patch+json"
        if not strategic and patch_type != "application/merge-patch+json":
            raise ApiStatusError(415, f"the server does not support patch type {patch_type!r}",
                                 "UnsupportedMediaType")
        with self._lock:
            cur = self._get(r, namespace, name)
            merged = merge_patch(cur, patch, strategic=strategic)
            rv = (patch.get("metadata") or {}).get("resourceVersion")
            if rv and rv != cur["metadata"]["resourceVersion"]:
                raise _conflict(r.group_resource, name, _MODIFIED)
            return copy.deepcopy(self._replace(r, cur, merged, subresource))

    def delete(self, plural: str, namespace: str, name: str, options: Mapping[str, Any] | None = None) -> Json:
        """DELETE: preconditions, then at once, or gracefully for a running pod."""
        r = RESOURCES[plural]
        opts = dict(options or {})
        with self._lock:
            cur = self._get(r, namespace, name)
            pre = opts.get("preconditions") or {}
            meta = cur["metadata"]
            if pre.get("uid") is not None and pre["uid"] != meta["uid"]:
                raise _conflict(r.group_resource, name, f"Precondition failed: UID in precondition: {pre['uid']}, "
                                                         f"UID in object meta: {meta['uid']}")
            if pre.get("resourceVersion") is not None and pre["resourceVersion"] != meta["resourceVersion"]:
                raise _conflict(r.group_resource, name,
                                f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                                f"ResourceVersion in object meta: {meta['resourceVersion']}")
            grace = 0
            if plural == "pods":
                spec, status = cur.get("spec") or {}, cur.get("status") or {}
                g = opts.get("gracePeriodSeconds")
                grace = int(g) if g is not None else int(spec.get("terminationGracePeriodSeconds", 30))
                if grace < 0:
                    grace = 1
                # podStrategy.CheckGracefulDelete: never-scheduled and terminal pods go at once.
                if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
                    grace = 0
                if meta.get("deletionTimestamp") is not None:
                    # Already terminating: only a shorter grace period changes anything.
                    remaining = int(meta.get("deletionGracePeriodSeconds", 0))
                    if grace >= remaining:
                        return copy.deepcopy(cur)
            elif meta.get("finalizers"):
                # Finalizers: the object is only marked as being deleted; it goes once an
                # update removes the last one.
                if meta.get("deletionTimestamp") is not None:
                    return copy.deepcopy(cur)
                out = copy.deepcopy(cur)
                out["metadata"]["deletionTimestamp"] = self._now()
                out["metadata"]["deletionGracePeriodSeconds"] = 0
                return copy.deepcopy(self._commit(r, MODIFIED, out, cur))
            if grace <= 0:
                return copy.deepcopy(self._remove(r, cur))
            out = copy.deepcopy(cur)
            out["metadata"]["deletionTimestamp"] = format_time(self.clock() + grace)
            out["metadata"]["deletionGracePeriodSeconds"] = grace
            committed = self._commit(r, MODIFIED, out, cur)
            key = (namespace, name)
            old = self._timers.pop(key, None)
            if old is not None:
                old.cancel()
            timer = threading.Timer(grace, self._finish_graceful, (r, namespace, name, meta["uid"]))
            timer.daemon = True
            self._timers[key] = timer
            timer.start()
            return copy.deepcopy(committed)

    def _remove(self, r: ApiResource, cur: Json) -> Json:
        gone = copy.deepcopy(cur)
        timer = self._timers.pop((cur["metadata"].get("namespace", ""), cur["metadata"]["name"]), None)
        if timer is not None:
            timer.cancel()
        return self._commit(r, DELETED, gone, cur)

    def _finish_graceful(self, r: ApiResource, namespace: str, name: str, uid: str) -> None:
        """The kubelet confirmed the pod stopped: it goes for good."""
        with self._lock:
            self._timers.pop((namespace, name), None)
            cur = self._objects[r.plural].get((namespace, name))
            if cur is not None and cur["metadata"]["uid"] == uid:
                self._remove(r, cur)

    def bind(self, namespace: str, name: str, binding: Mapping[str, Any]) -> None:
        """pods/binding (BindingREST.Create -> setPodHostAndAnnotations)."""
        r = RESOURCES["pods"]
        target = binding.get("target") or {}
        node = target.get("name") or ""
        if target.get("kind") not in (None, "", "Node") or not node:
            raise ApiStatusError(422, f'Binding "{name}" is invalid: target: Invalid value: a Node name is required',
                                 "Invalid")
        bmeta = binding.get("metadata") or {}
        with self._lock:
            cur = self._get(r, namespace, name)
            meta, spec = cur["metadata"], cur.get("spec") or {}
            uid = bmeta.get("uid")
            if uid and uid != meta["uid"]:
                raise _conflict("pods/binding", name, f"Precondition failed: UID in precondition: {uid}, "
                                                      f"UID in object meta: {meta['uid']}")
            if meta.get("deletionTimestamp") is not None:
                raise _conflict("pods/binding", name, f"pod {name} is being deleted, cannot be assigned to a host")
            if spec.get("nodeName"):
                raise _conflict("pods/binding", name, f'pod {name} is already assigned to node "{spec["nodeName"]}"')
            if spec.get("schedulingGates"):
                raise _conflict("pods/binding", name, f"pod {name} has non-empty .spec.schedulingGates")
            out = copy.deepcopy(cur)
            out.setdefault("spec", {})["nodeName"] = node
            if clears_nomination(self.features) and (out.get("status") or {}).get("nominatedNodeName"):
                out["status"]["nominatedNodeName"] = ""
            if bmeta.get("annotations"):
                out["metadata"].setdefault("annotations", {}).update(bmeta["annotations"])
            # podtopologylabels admission on the Binding, then copyLabelsWithOverwriting.
            node_obj = self._objects["nodes"].get(("", node))
            node_labels = ((node_obj or {}).get("metadata") or {}).get("labels") or {}
            extra = binding_labels(self.features, node_labels)
            if extra:
                out["metadata"]["labels"] = {**(out["metadata"].get("labels") or {}), **extra}
            conditions = [c for c in (out.setdefault("status", {}).get("conditions") or [])]
            now = self._now()
            for i, c in enumerate(conditions):
                if c.get("type") == "PodScheduled":
                    # podutil.UpdatePodCondition: the transition time moves only with the status.
                    since = c.get("lastTransitionTime") if c.get("status") == "True" else now
                    conditions[i] = {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                                     "lastTransitionTime": since}
                    break
            else:
                conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                                   "lastTransitionTime": now})
            out["status"]["conditions"] = conditions
            self._commit(r, MODIFIED, out, cur)


def _validate_claim_status(claim: Json, old: Json) -> None:
    """ValidateResourceClaimStatusUpdate (pkg/apis/resource/validation): reservedFor entries
    complete and unique by uid (at most 256), only with an allocation, none added while the
    claim is being deleted; an allocation is immutable once set, its results must name the
    claim's requests and a device."""
    name = claim["metadata"]["name"]
    status, old_status = claim.get("status") or {}, old.get("status") or {}

    def invalid(path: str, why: str) -> ApiStatusError:
        return ApiStatusError(422, f'ResourceClaim.resource.k8s.io "{name}" is invalid: {path}: {why}', "Invalid",
                              name=name, kind="resourceclaims")

    reserved = status.get("reservedFor") or []
    if not isinstance(reserved, list):
        raise invalid("status.reservedFor", "Invalid value: must be a list")
    if len(reserved) > RESERVED_FOR_MAX_SIZE:
        raise invalid("status.reservedFor", f"Too many: {len(reserved)}: must have at most {RESERVED_FOR_MAX_SIZE} "
                                            "items")
    uids: set[str] = set()
    for i, ref in enumerate(reserved):
        for key in ("resource", "name", "uid"):
            if not isinstance(ref, dict) or not ref.get(key):
                raise invalid(f"status.reservedFor[{i}].{key}", "Required value")
        if ref["uid"] in uids:
            raise invalid(f"status.reservedFor[{i}]", f'Duplicate value: "{ref["uid"]}"')
        uids.add(ref["uid"])
    allocation = status.get("allocation")
    if reserved and not allocation:
        raise invalid("status.reservedFor", "Forbidden: may not be specified when `allocated` is not set")
    if reserved and claim["metadata"].get("deletionTimestamp"):
        before = {r.get("uid") for r in old_status.get("reservedFor") or [] if isinstance(r, dict)}
        if uids - before:
            raise invalid("status.reservedFor", "Forbidden: new entries may not be added while `deallocationRequested` "
                                                "or `deletionTimestamp` are set")
    if old_status.get("allocation") and allocation:
        if allocation != old_status["allocation"]:
            raise invalid("status.allocation", "Invalid value: field is immutable")
    elif allocation:
        requests = {}
        for req in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
            subs = {s.get("name") for s in req.get("firstAvailable") or [] if isinstance(s, dict)}
            requests[req.get("name")] = subs
        results = ((allocation.get("devices") or {}).get("results")) or []
        for i, res in enumerate(results):
            path = f"status.allocation.devices.results[{i}]"
            for key in ("request", "driver", "pool", "device"):
                if not isinstance(res, dict) or not res.get(key):
                    raise invalid(f"{path}.{key}", "Required value")
            req_name, _, sub = str(res["request"]).partition("/")
            if req_name not in requests or (sub and sub not in requests[req_name]) or (not sub and requests[req_name]):
                raise invalid(f"{path}.request", f'Invalid value: "{res["request"]}": must be the name of a request '
                                                 "in the claim or the name of a request and its subrequest separated "
                                                 "by '/'")


# ================================================================ merge patches
def merge_patch(target: Any, patch: Any, *, strategic: bool = False) -> Any:
    """RFC 7386 JSON merge patch; with ``strategic``, lists of objects with a known merge
    key (:data:`MERGE_KEYS`) are merged element by element (``$patch: delete`` removes one)
    and ``$``-directives are otherwise ignored."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if strategic and k.startswith("$"):
            continue
        if v is None:
            out.pop(k, None)
        elif strategic and isinstance(v, list) and k in MERGE_KEYS and isinstance(out.get(k), list):
            out[k] = _merge_list(out[k], v, MERGE_KEYS[k])
        elif isinstance(v, dict):
            out[k] = merge_patch(out.get(k), v, strategic=strategic)
        else:
            out[k] = copy.deepcopy(v) if isinstance(v, list) else v
    return out


def _merge_list(current: list[Any], patch: list[Any], key: str) -> list[Any]:
    out = [copy.deepcopy(x) for x in current]
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            out.append(copy.deepcopy(item))
            continue
        idx = next((i for i, x in enumerate(out) if isinstance(x, dict) and x.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                del out[idx]
            continue
        if idx is None:
            out.append(merge_patch({}, item, strategic=True))
        else:
            out[idx] = merge_patch(out[idx], item, strategic=True)
    return out


# ================================================================ faults
@dataclass(slots=True)
class _Fault:
    count: int
    status: int = 0
    delay: float = 0.0
    verbs: frozenset[str] | None = None
    resources: frozenset[str] | None = None
    watch: bool = True
    user_agent: str | None = None
    retry_after: int | None = None
    drop_reply: bool = False

    def applies(self, verb: str, plural: str, user_agent: str) -> bool:
        if self.verbs is not None and verb not in self.verbs:
            return False
        if self.resources is not None and plural not in self.resources:
            return False
        if self.user_agent is not None and user_agent != self.user_agent:
            return False
        return self.watch or verb != "watch"


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request the server answered: RBAC verb, API group, resource, subresource, code,
    and the client's User-Agent (which replica made it)."""

    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str
    code: int
    body: Any = None  # the request's JSON payload (writes)
    user_agent: str = ""
    at: float = 0.0  # time.monotonic() when it arrived (the same clock in every process of the machine)
    reply_dropped: bool = False  # served, but the connection was cut instead of answering (drop_reply_next)


@dataclass(frozen=True, slots=True)
class WatchEnd:
    """A watch stream that ended: resource, the client's User-Agent, when it was opened and
    ended (time.monotonic()), and how: ``close`` / ``drop`` / ``drop-mid-event``
    (:meth:`LocalApiServer.drop_watches`), ``timeout`` (timeoutSeconds) or ``error`` (the
    client went away, the server stopped)."""

    resource: str
    user_agent: str
    opened: float
    ended: float
    how: str


class _DropConnection(Exception):
    """Raised inside a watch stream to cut its connection mid-response."""


@dataclass(slots=True)
class _Request:
    verb: str
    r: ApiResource
    namespace: str
    name: str
    subresource: str
    user_agent: str = ""
    arrived: float = 0.0


# ================================================================ the server
class LocalApiServer:
    """The API server app (starlette) with its store, served by uvicorn from a background
    thread on 127.0.0.1 (``port=0``: a free port, kept across :meth:`restart`)."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, history: int = 100_000,
                 bookmark_interval: float = 1.0, log_level: str = "critical", certfile: str | None = None,
                 keyfile: str | None = None, client_ca: str | None = None, max_recorded: int = 200_000,
                 features: Features | None = None, unserved: Iterable[str] = ()) -> None:
        """``certfile``/``keyfile`` serve HTTPS; ``client_ca`` then requires client
        certificates signed by it. The last ``max_recorded`` requests are kept in
        :attr:`requests`. ``features``: the Kubernetes release served (default the newest
        kubesched decides). ``unserved``: resources (plurals) this server does not serve, as a
        cluster without their API group (404 on every request, recorded)."""
        self.store = ApiStore(history=history, features=features)
        self.unserved = frozenset(unserved)
        self.host = host
        self._tls = (certfile, keyfile, client_ca)
        self.bookmark_interval = bookmark_interval
        self._log_level = log_level
        self._faults: list[_Fault] = []
        self._expire_watches = 0
        self._expire_http = False
        self._lock = threading.Lock()
        self.requests: deque[RequestRecord] = deque(maxlen=max_recorded)
        self.watch_ends: deque[WatchEnd] = deque(maxlen=max_recorded)
        self.app = Starlette(routes=[Route("/{path:path}", self._endpoint,
                                           methods=["GET", "POST", "PUT", "PATCH", "DELETE"])])
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self.port = port
        self._streams = 0

    # ---------------------------------------------------------------- lifecycle
    @property
    def url(self) -> str:
        return f"{'https' if self._tls[0] else 'http'}://{self.host}:{self.port}"

    def start(self, timeout: float = 10.0) -> LocalApiServer:
        # proto IPPROTO_TCP: asyncio sets TCP_NODELAY on accepted connections only when the
        # listening socket says TCP (else every response waits out a delayed ACK, ~40 ms).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        certfile, keyfile, client_ca = self._tls
        config = uvicorn.Config(self.app, log_level=self._log_level, lifespan="off", http="h11", ws="none",
                                timeout_graceful_shutdown=1, access_log=False, ssl_certfile=certfile,
                                ssl_keyfile=keyfile, ssl_ca_certs=client_ca,
                                ssl_cert_reqs=ssl.CERT_REQUIRED if client_ca else ssl.CERT_NONE)
        server = uvicorn.Server(config)
        thread = threading.Thread(target=functools.partial(server.run, sockets=[sock]),
                                  name=f"local-apiserver-{self.port}", daemon=True)
        self._server, self._thread, self._sock = server, thread, sock
        thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                sock.close()
                raise RuntimeError(f"the local API server on {self.url} did not start")
            time.sleep(0.005)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Close every connection (watch streams are cut) and stop serving."""
        server, thread, sock = self._server, self._thread, self._sock
        if server is None or thread is None:
            return
        # Stop listening first, then cut the watches: a client re-watching at once after the
        # cut (client-go does, after a normal end of stream) then finds the port closed, as
        # with an API server that went away, instead of racing uvicorn's shutdown tick (up to
        # 0.1 s) into a connection the old server accepted and then dropped.
        server.should_exit = True
        deadline = time.monotonic() + timeout
        while thread.is_alive() and time.monotonic() < deadline and (
                not server.servers or any(s.is_serving() for s in server.servers)):
            time.sleep(0.002)
        self.store.end_watches("drop")
        thread.join(timeout)
        if thread.is_alive():
            server.force_exit = True
            thread.join(timeout)
        if sock is not None:
            sock.close()
        self._server = self._thread = self._sock = None

    def restart(self, *, keep_state: bool = True, downtime: float = 0.0) -> None:
        """Stop (every connection closed), optionally lose every object (a new, empty
        cluster whose revision still grows), wait ``downtime`` s, and serve again on the
        same port."""
        self.stop()
        if not keep_state:
            self.store.reset()
        if downtime > 0:
            time.sleep(downtime)
        self.start()

    def close(self) -> None:
        self.stop()
        self.store.close()

    def __enter__(self) -> LocalApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- fault injection
    def fail_next(self, count: int, status: int = 500, *, verbs: Iterable[str] | None = None,
                  resources: Iterable[str] | None = None, watch: bool = True, user_agent: str | None = None,
                  retry_after: int | None = None) -> None:
        """The next ``count`` requests (matching ``verbs`` / ``resources`` if given: RBAC
        verbs and plurals; and ``user_agent``: one client's) answer ``status`` with a Status
        body, doing nothing; with ``retry_after``, and a ``Retry-After`` header of that many
        seconds (as the API server's priority and fairness answers 429)."""
        with self._lock:
            self._faults.append(_Fault(count, status=status, verbs=_set(verbs), resources=_set(resources),
                                       watch=watch, user_agent=user_agent, retry_after=retry_after))

    def drop_reply_next(self, count: int, *, verbs: Iterable[str] | None = None,
                        resources: Iterable[str] | None = None, user_agent: str | None = None) -> None:
        """The next ``count`` matching requests (not watches) are served — their change is
        made — but the connection is cut instead of answering: the client never learns the
        outcome (a reply lost on the network). Recorded with ``reply_dropped``."""
        with self._lock:
            self._faults.append(_Fault(count, verbs=_set(verbs), resources=_set(resources), watch=False,
                                       user_agent=user_agent, drop_reply=True))

    def delay_next(self, count: int, seconds: float, *, verbs: Iterable[str] | None = None,
                   resources: Iterable[str] | None = None, user_agent: str | None = None) -> None:
        """The next ``count`` matching requests wait ``seconds`` before being served."""
        with self._lock:
            self._faults.append(_Fault(count, delay=seconds, verbs=_set(verbs), resources=_set(resources),
                                       user_agent=user_agent))

    def clear_faults(self) -> None:
        """Forget the faults not used up yet."""
        with self._lock:
            self._faults = []

    def faults_left(self) -> int:
        """How many injected failures / delays have not hit a request yet (0: every one of
        them has been taken by an arriving request)."""
        with self._lock:
            return sum(f.count for f in self._faults)

    def drop_watches(self, *, abrupt: bool = True, mid_event: bool = False) -> int:
        """End every open watch stream: ``abrupt`` cuts the connection mid-stream (the
        client sees a broken chunked response) — with ``mid_event``, after half of an event's
        line —, otherwise the stream ends cleanly."""
        return self.store.end_watches(("drop-mid-event" if mid_event else "drop") if abrupt else "close")

    def expire_next_watch(self, count: int = 1, *, http: bool = False) -> None:
        """The next ``count`` watch requests are too old: an ERROR event with a 410 Status
        (or, with ``http``, an HTTP 410 answer)."""
        with self._lock:
            self._expire_watches += count
            self._expire_http = http

    def compact(self) -> None:
        """Forget the event history (etcd compaction): resuming watches get 410."""
        self.store.compact()

    @property
    def open_watches(self) -> int:
        return self._streams

    # ---------------------------------------------------------------- direct access (tests, bench)
    def create(self, obj: Mapping[str, Any], *, restore: bool = False) -> Json:
        """Create an object as a client's POST would (admission included); ``restore``: keep
        its uid and creationTimestamp (:meth:`ApiStore.create`)."""
        r = RESOURCE_BY_KIND[str(obj.get("kind"))]
        return self.store.create(r.plural, str((obj.get("metadata") or {}).get("namespace") or ""), obj,
                                 restore=restore)

    def get(self, plural: str, name: str, namespace: str = "") -> Json:
        return self.store.get(plural, namespace, name)

    def objects(self, plural: str) -> list[Json]:
        return self.store.objects(plural)

    def delete(self, plural: str, name: str, namespace: str = "", options: Mapping[str, Any] | None = None) -> Json:
        return self.store.delete(plural, namespace, name, options)

    def bind(self, namespace: str, name: str, node: str) -> None:
        """Another actor binds the pod (POST pods/binding without UID)."""
        self.store.bind(namespace, name, {"target": {"kind": "Node", "name": node}})

    def update(self, plural: str, name: str, body: Mapping[str, Any], namespace: str = "", *,
               subresource: str = "") -> Json:
        """Replace the object as a client's PUT would (409 if its resourceVersion is stale)."""
        return self.store.update(plural, namespace, name, body, subresource)

    def patch(self, plural: str, name: str, patch: Mapping[str, Any], namespace: str = "", *,
              subresource: str = "", strategic: bool = False) -> Json:
        kind = "application/strategic-merge-patch+json" if strategic else "application/merge-patch+json"
        return self.store.patch(plural, namespace, name, dict(patch), kind, subresource)

    def calls(self, verb: str | None = None, resource: str | None = None, subresource: str | None = None,
              code: int | None = None, *, user_agent: str | None = None) -> list[RequestRecord]:
        """The requests served so far, filtered."""
        with self._lock:
            recs = list(self.requests)
        return [c for c in recs if (verb is None or c.verb == verb) and (resource is None or c.resource == resource)
                and (subresource is None or c.subresource == subresource) and (code is None or c.code == code)
                and (user_agent is None or c.user_agent == user_agent)]

    # ---------------------------------------------------------------- HTTP
    def _take_fault(self, verb: str, plural: str, user_agent: str) -> _Fault | None:
        with self._lock:
            for f in self._faults:
                if f.count > 0 and f.applies(verb, plural, user_agent):
                    f.count -= 1
                    out = _Fault(1, f.status, f.delay, retry_after=f.retry_after, drop_reply=f.drop_reply)
                    self._faults = [x for x in self._faults if x.count > 0]
                    return out
        return None

    def _record(self, req: _Request, code: int, body: Any = None, dropped: bool = False) -> None:
        rec = RequestRecord(req.verb, req.r.group, req.r.plural, req.subresource, req.namespace, req.name, code,
                            body, req.user_agent, req.arrived, dropped)
        with self._lock:
            self.requests.append(rec)

    async def _endpoint(self, request: Request) -> Response:
        path = request.path_params.get("path", "")
        if path in ("healthz", "livez", "readyz"):
            return Response("ok", media_type="text/plain")
        if path == "version":
            v = self.store.features.version
            return JSONResponse({"major": str(v.major), "minor": str(v.minor),
                                 "gitVersion": f"v{v.major}.{v.minor}.0-kubesched-local"})
        if path == "debug/requests":
            # Not a Kubernetes path: the request log, for a client in another process (bench).
            return JSONResponse([{"verb": c.verb, "group": c.group, "resource": c.resource,
                                  "subresource": c.subresource, "namespace": c.namespace, "name": c.name,
                                  "code": c.code, "userAgent": c.user_agent, "at": c.at,
                                  "replyDropped": c.reply_dropped} for c in self.calls()])
        if path == "debug/bound":
            # Not a Kubernetes path either: how many pods are bound, polled by the bench.
            return JSONResponse({"bound": self.store.count_bound_pods()})
        try:
            req = _route(request.method, path, request.query_params)
        except ApiStatusError as e:
            return JSONResponse(e.body, status_code=e.code)
        req.user_agent = request.headers.get("user-agent", "")
        req.arrived = time.monotonic()
        if req.r.plural in self.unserved:
            self._record(req, 404)
            return JSONResponse(status_body(404, f"the server could not find the requested resource ({path})"),
                                status_code=404)
        fault = self._take_fault(req.verb, req.r.plural, req.user_agent)
        payload: Any = None
        if request.method != "GET":
            # The whole request is read first: a slow answer (delay_next) is a slow server, and
            # the change is made even if the client has given up waiting meanwhile.
            try:
                payload = await _json_body(request)
            except ApiStatusError as e:
                self._record(req, e.code)
                return JSONResponse(e.body, status_code=e.code)
            except ClientDisconnect:
                self._record(req, 499)
                return Response(status_code=499)
        if fault is not None:
            if fault.delay:
                await asyncio.sleep(fault.delay)
            if fault.status:
                self._record(req, fault.status, payload)
                headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else None
                return JSONResponse(status_body(fault.status, f"injected failure ({fault.status})"),
                                    status_code=fault.status, headers=headers)
        try:
            if req.verb == "watch":
                return await self._watch(request, req)
            code, body = self._serve(request, req, payload)
        except ApiStatusError as e:
            self._record(req, e.code, payload)
            return JSONResponse(e.body, status_code=e.code)
        except Exception as e:  # noqa: BLE001 - a bug must answer 500, not kill the connection
            log.exception("local API server: %s %s", request.method, path)
            self._record(req, 500, payload)
            return JSONResponse(status_body(500, f"internal error: {e}"), status_code=500)
        if fault is not None and fault.drop_reply:
            self._record(req, code, payload, dropped=True)
            return StreamingResponse(_cut(), status_code=code, media_type="application/json")
        self._record(req, code, payload)
        return JSONResponse(body, status_code=code)

    def _serve(self, request: Request, req: _Request, payload: Any) -> tuple[int, Json]:
        store, r, q = self.store, req.r, request.query_params
        if req.verb == "get":
            return 200, store.get(r.plural, req.namespace, req.name)
        if req.verb == "list":
            fields, labels = _selectors(q)
            try:
                limit = int(q.get("limit") or 0)
            except ValueError:
                raise ApiStatusError(400, f"invalid limit: {q.get('limit')!r}", "BadRequest") from None
            page = store.list_page(r.plural, req.namespace, fields, labels,
                                   resource_version=q.get("resourceVersion", ""),
                                   match=q.get("resourceVersionMatch", ""), limit=max(limit, 0),
                                   continue_token=q.get("continue", ""))
            meta: Json = {"resourceVersion": str(page.rv)}
            if page.continue_token:
                meta["continue"] = page.continue_token
                if page.remaining is not None:
                    meta["remainingItemCount"] = page.remaining
            body = {"kind": f"{r.kind}List", "apiVersion": r.api_version, "metadata": meta,
                    "items": [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in page.items]}
            return 200, body
        if req.verb == "create":
            if req.subresource == "binding":
                store.bind(req.namespace, req.name, payload or {})
                return 201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
            if req.subresource:
                raise ApiStatusError(405, f"POST is not supported on {r.plural}/{req.subresource}", "MethodNotAllowed")
            return 201, store.create(r.plural, req.namespace, payload or {})
        if req.verb == "update":
            return 200, store.update(r.plural, req.namespace, req.name, payload or {}, req.subresource)
        if req.verb == "patch":
            ctype = request.headers.get("content-type", "").split(";")[0].strip()
            return 200, store.patch(r.plural, req.namespace, req.name, payload, ctype, req.subresource)
        if req.verb == "delete":
            opts = dict(payload or {})
            if "gracePeriodSeconds" in q:
                opts["gracePeriodSeconds"] = int(q["gracePeriodSeconds"])
            return 200, store.delete(r.plural, req.namespace, req.name, opts)
        raise ApiStatusError(405, f"{req.verb} is not supported", "MethodNotAllowed")

    async def _watch(self, request: Request, req: _Request) -> Response:
        q = request.query_params
        fields, labels = _selectors(q)
        rv = q.get("resourceVersion", "")
        bookmarks = q.get("allowWatchBookmarks", "") in ("true", "1")
        timeout = float(q["timeoutSeconds"]) if q.get("timeoutSeconds") else None
        with self._lock:
            expire = self._expire_watches > 0
            if expire:
                self._expire_watches -= 1
                expire_http = self._expire_http
        if expire:
            self._record(req, 410)
            gone = status_body(410, f"too old resource version: {rv or 0} ({self.store.rv})", "Expired")
            if expire_http:
                return JSONResponse(gone, status_code=410)
            return StreamingResponse(_lines([(ERROR, gone)]), media_type="application/json")
        try:
            watch, initial = self.store.open_watch(req.r, req.namespace, fields, labels, rv,
                                                   asyncio.get_running_loop())
        except ApiStatusError as e:
            self._record(req, e.code)
            if e.code != 410:
                return JSONResponse(e.body, status_code=e.code)
            return StreamingResponse(_lines([(ERROR, e.body)]), media_type="application/json")
        self._record(req, 200)
        return StreamingResponse(self._stream(watch, initial, bookmarks, timeout, req), media_type="application/json")

    async def _stream(self, watch: _Watch, initial: list[tuple[str, Json]], bookmarks: bool,
                      timeout: float | None, req: _Request) -> AsyncIterator[bytes]:
        self._streams += 1
        how = "error"
        end = time.monotonic() + timeout if timeout else None
        try:
            for etype, obj in initial:
                yield _line(etype, obj)
            while True:
                wait = self.bookmark_interval if bookmarks else 3600.0
                if end is not None:
                    wait = min(wait, end - time.monotonic())
                    if wait <= 0:
                        return
                try:
                    item = await asyncio.wait_for(watch.queue.get(), timeout=wait)
                except TimeoutError:
                    if bookmarks and (end is None or time.monotonic() < end):
                        r = watch.resource
                        yield _line(BOOKMARK, {"kind": r.kind, "apiVersion": r.api_version,
                                               "metadata": {"resourceVersion": str(self.store.rv)}})
                    continue
                if item in ("close", "drop", "drop-mid-event"):
                    how = str(item)
                if item == "close":
                    return
                if item == "drop":
                    raise _DropConnection("watch connection dropped (fault injection)")
                if item == "drop-mid-event":
                    yield b'{"type":"MODIFIED","object":{"kind":"'
                    raise _DropConnection("watch connection dropped mid-event (fault injection)")
                assert not isinstance(item, str)
                yield _line(*item)
        finally:
            if how == "error" and end is not None and time.monotonic() >= end:
                how = "timeout"
            with self._lock:
                self.watch_ends.append(WatchEnd(req.r.plural, req.user_agent, req.arrived, time.monotonic(), how))
            self._streams -= 1
            self.store.close_watch(watch)


def _set(values: Iterable[str] | None) -> frozenset[str] | None:
    return frozenset(values) if values is not None else None


def _line(etype: str, obj: Json) -> bytes:
    return (json.dumps({"type": etype, "object": obj}, separators=(",", ":")) + "\n").encode()


async def _cut() -> AsyncIterator[bytes]:
    """A response body that never comes: the connection is cut after the status line."""
    raise _DropConnection("reply dropped (fault injection)")
    yield b""  # pragma: no cover - makes this an async generator


async def _lines(events: list[tuple[str, Json]]) -> AsyncIterator[bytes]:
    for etype, obj in events:
        yield _line(etype, obj)


async def _json_body(request: Request) -> Any:
    raw = await request.body()
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        raise ApiStatusError(400, "the request body is not valid JSON", "BadRequest") from None


def _selectors(q: Mapping[str, str]) -> tuple[list[FieldTerm], list[LabelTerm]]:
    try:
        return parse_field_selector(q.get("fieldSelector", "")), parse_label_selector(q.get("labelSelector", ""))
    except ValueError as e:
        raise ApiStatusError(400, str(e), "BadRequest") from None


_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def _route(method: str, path: str, query: Mapping[str, str]) -> _Request:
    """Path -> (RBAC verb, resource, namespace, name, subresource)."""
    seg = [s for s in path.split("/") if s]
    if len(seg) >= 2 and seg[0] == "api":
        group, version, rest = "", seg[1], seg[2:]
    elif len(seg) >= 3 and seg[0] == "apis":
        group, version, rest = seg[1], seg[2], seg[3:]
    else:
        raise ApiStatusError(404, f"the server could not find the requested resource ({path})", "NotFound")
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        raise ApiStatusError(404, f"the server could not find the requested resource ({path})", "NotFound")
    r = resource_for(group, version, rest[0])
    if r is None:
        raise ApiStatusError(404, f"the server could not find the requested resource ({path})", "NotFound")
    if namespace and not r.namespaced:
        raise ApiStatusError(404, f"the server could not find the requested resource ({path})", "NotFound")
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if method == "GET":
        if name:
            verb = "get"
        else:
            verb = "watch" if query.get("watch", "") in ("1", "true") else "list"
    else:
        verb = _VERBS[method]
        if not name and verb != "create":
            raise ApiStatusError(405, f"{method} on a collection is not supported", "MethodNotAllowed")
        if name and verb == "create" and not sub:
            raise ApiStatusError(405, "POST to a named object is not supported", "MethodNotAllowed")
    if r.namespaced and not namespace and verb not in ("list", "watch"):
        raise ApiStatusError(404, f"the server could not find the requested resource ({path})", "NotFound")
    return _Request(verb, r, namespace, name, sub)


def main(argv: list[str] | None = None) -> None:
    """``python -m kubesched.testing [--port N] [--bookmark-interval S]``: serve on
    127.0.0.1, print the URL as the first line of stdout, stop when stdin closes."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m kubesched.testing")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--bookmark-interval", type=float, default=5.0)
    args = parser.parse_args(argv)
    with LocalApiServer(port=args.port, bookmark_interval=args.bookmark_interval) as api:
        print(api.url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":  # pragma: no cover - exercised by the live bench
    main()
