"""Write a kube-scheduler HTTP extender in plain Python.

Declare handlers over typed objects (:class:`kubesched.objects.Pod` / :class:`Node`, parsed
from the request with the same parsers as manifests) and serve the resulting ASGI app
(Starlette) with uvicorn::

    from kubesched.extender.server import ExtenderApp

    app = ExtenderApp()

    @app.filter_node
    def has_gpu(pod, node):
        return None if node.allocatable.get("example.com/gpu") else "no GPU on this node"

    @app.score_node
    def more_gpus(pod, node):
        return min(10, node.allocatable.get("example.com/gpu", 0))

    # kubesched extender serve my_module:app --port 8888

The app speaks kube-scheduler v1.30's wire format exactly (:mod:`kubesched.extender.wire`):
``POST <prefix>/filter``, ``/prioritize``, ``/bind``, ``/preempt`` (the verbs that have a
handler), plus ``GET /healthz`` and ``GET /openapi.json``. A body that is not valid JSON or not
the verb's shape gets HTTP 400 with a one-line message naming the field, never a traceback.

Node cache (``nodeCacheCapable: true``): the scheduler then sends node *names* only. The app
resolves them to Node objects through ``node_lister`` (if given) and then its
:class:`NodeCache`, which every request that carries full nodes refreshes, which a watch of
the cluster keeps (:class:`kubesched.extender.watch.NodeWatch`, ``kubesched extender serve
--kubeconfig``), and which you can fill yourself (``app.node_cache.update(nodes)``). Handlers
registered with ``resolve_nodes=False`` receive the names instead and need no cache. Replies
use the form of the request: NodeNames for NodeNames, Nodes for Nodes.

Batch handlers (``@app.filter_nodes``, ``@app.score_nodes``) judge all the candidates in one
call, one verdict or score per node; at 1000 nodes a Python call per node costs more than the
rest of a request. The verbs are served straight from ASGI (Starlette serves the rest) and, by
:func:`serve` and :class:`ServerThread`, past it: uvicorn runs the app with
:class:`~kubesched.extender._protocol.VerbProtocol`, which answers plain verb requests itself and
hands any other to h11 and the ASGI app. Requests of the plain shape kube-scheduler sends are read
with msgspec, and each distinct pod or node text is parsed once.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import logging
import os
import socket
import ssl
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Annotated, Any, Generic, Literal, TypeVar, cast, overload

import msgspec
import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from kubesched._serving import ThreadedServer
from kubesched.errors import ConfigError, FieldError, KubeschedError
from kubesched.extender import wire
from kubesched.extender._protocol import VerbProtocol
from kubesched.framework import Binding
from kubesched.objects import Node, Pod
from kubesched.objects.parse import parse_node, parse_pod

log = logging.getLogger("kubesched.extender")
_NODE_NAME = attrgetter("meta.name")

F = TypeVar("F", bound=Callable[..., Any])
DEFAULT_MAX_BODY_BYTES = 64 << 20
VERBS = ("filter", "prioritize", "bind", "preempt")


# ================================================================== handler values
@dataclass(frozen=True, slots=True)
class Unresolvable:
    """A per-node filter verdict: the node does not fit and preempting pods on it would not
    help (reported in FailedAndUnresolvableNodes)."""

    reason: str


@dataclass(frozen=True, slots=True)
class FilterResult:
    """What a bulk filter handler returns. ``failed`` / ``unresolvable`` map node names to
    reasons; ``feasible`` lists the nodes kept (None: every candidate not in either map);
    a non-empty ``error`` fails the whole call on the scheduler's side."""

    failed: Mapping[str, str] = field(default_factory=dict)
    unresolvable: Mapping[str, str] = field(default_factory=dict)
    feasible: Sequence[str] | None = None
    error: str = ""


@dataclass(frozen=True, slots=True)
class NodeVictims:
    """The victims proposed for one node in a preempt call: their UIDs, how many of them
    violate a PodDisruptionBudget, and the full pods when the scheduler sent them (it sends
    only UIDs to a nodeCacheCapable extender). Return the ones to keep (by UID)."""

    uids: tuple[str, ...]
    num_pdb_violations: int = 0
    pods: tuple[Pod, ...] = ()


class ExtenderError(Exception):
    """Raise from a filter or bind handler to answer with ``Error`` set: the scheduler fails
    that call with exactly this message."""


class BadRequest(Exception):
    """A request that is not the verb's wire shape (HTTP 400)."""


# ======================================================================= node cache
class NodeCache:
    """Thread-safe name -> Node map: what a nodeCacheCapable extender resolves node names with.
    Fed by every request that carries full nodes, by ``update``/``remove`` from your code, or by a
    watch of the API server (:func:`kubesched.extender.watch.watch_nodes`, ``kubesched extender
    serve --kubeconfig``)."""

    def __init__(self, nodes: Iterable[Node] = ()) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[str, Node] = {n.meta.name: n for n in nodes}

    def update(self, nodes: Iterable[Node]) -> None:
        with self._lock:
            for n in nodes:
                self._nodes[n.meta.name] = n

    def remove(self, name: str) -> None:
        with self._lock:
            self._nodes.pop(name, None)

    def get(self, name: str) -> Node | None:
        return self._nodes.get(name)

    def lookup(self, names: Iterable[str]) -> list[Node | None]:
        """The node of each name (None where unknown), in one pass."""
        return list(map(self._nodes.get, names))

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._nodes)

    def clear(self) -> None:
        with self._lock:
            self._nodes.clear()

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, name: object) -> bool:
        return name in self._nodes


# =================================================================== request parsing
@dataclass(frozen=True, slots=True)
class ExtenderArgs:
    """A decoded filter/prioritize request: full nodes (``nodes``) or names only.
    ``raw_nodes``: each node's JSON as received, when the fast decoder read the request."""

    pod: Pod
    nodes: list[Node] | None
    node_names: list[str] | None
    raw_nodes: list[bytes] | None = None


def _located(e: FieldError, prefix: str) -> BadRequest:
    return BadRequest(str(e.under(prefix)))


def _parse_pod(raw: Any, where: str, go_field: str) -> Pod:
    if raw is None:
        raise BadRequest(f"{where}: Required value")
    if not isinstance(raw, dict):
        raise BadRequest(str(wire.type_error(raw, go_field, "v1.Pod")))
    try:
        return parse_pod(raw)
    except FieldError as e:
        raise _located(e, where) from None


def _decode_object(body: bytes, go_type: str) -> Mapping[str, Any]:
    try:
        obj = wire.as_object(wire.decode_json(body), "", go_type)
    except wire.WireError as e:
        raise BadRequest(f"invalid {go_type.removeprefix('v1.')} body: {e}") from None
    if obj is None:
        raise BadRequest(f"invalid {go_type.removeprefix('v1.')} body: null")
    return obj


def parse_extender_args(body: bytes) -> ExtenderArgs:
    """ExtenderArgs{Pod, Nodes, NodeNames}; raises BadRequest naming the field."""
    obj = _decode_object(body, "v1.ExtenderArgs")
    try:
        pod = _parse_pod(wire.get_field(obj, "Pod"), "Pod", "ExtenderArgs.Pod")
        nodes_obj = wire.as_object(wire.get_field(obj, "Nodes"), "ExtenderArgs.Nodes", "v1.NodeList")
        names = wire.as_string_list(wire.get_field(obj, "NodeNames"), "ExtenderArgs.NodeNames")
        nodes: list[Node] | None = None
        if nodes_obj is not None:
            items = wire.as_list(wire.get_field(nodes_obj, "items"), "ExtenderArgs.Nodes.items", "[]v1.Node") or []
            nodes = []
            for i, item in enumerate(items):
                where = f"Nodes.items[{i}]"
                if not isinstance(item, dict):
                    raise BadRequest(str(wire.type_error(item, "ExtenderArgs.Nodes.items", "v1.Node")))
                try:
                    nodes.append(parse_node(item))
                except FieldError as e:
                    raise _located(e, where) from None
    except wire.WireError as e:
        raise BadRequest(str(e)) from None
    if nodes is None and names is None:
        raise BadRequest("ExtenderArgs: one of Nodes or NodeNames is required")
    return ExtenderArgs(pod, nodes, names if nodes is None else None)


T = TypeVar("T")


class _ParsedByText(Generic[T]):
    """JSON text -> the object parsed from it: the scheduler sends the same pod to filter and
    then to prioritize, and (nodeCacheCapable: false) the same nodes on every call; parsing each
    only once per distinct text. Bounded: cleared when full."""

    def __init__(self, parse: Callable[[dict[str, Any]], T], limit: int) -> None:
        self._parse = parse
        self._limit = limit
        self._parsed: dict[bytes, T] = {}

    def __call__(self, text: bytes) -> T:
        hit = self._parsed.get(text)
        if hit is None:
            hit = self._parse(wire.decode_object(text))
            if len(self._parsed) >= self._limit:
                self._parsed.clear()
            self._parsed[text] = hit
        return hit


def parse_binding_args(body: bytes) -> Binding:
    obj = _decode_object(body, "v1.ExtenderBindingArgs")
    try:
        w = "ExtenderBindingArgs"
        b = Binding(
            namespace=wire.as_string(wire.get_field(obj, "PodNamespace"), f"{w}.PodNamespace"),
            name=wire.as_string(wire.get_field(obj, "PodName"), f"{w}.PodName"),
            uid=wire.as_string(wire.get_field(obj, "PodUID"), f"{w}.PodUID"),
            node=wire.as_string(wire.get_field(obj, "Node"), f"{w}.Node"),
        )
    except wire.WireError as e:
        raise BadRequest(str(e)) from None
    if not b.name:
        raise BadRequest("PodName: Required value")
    if not b.node:
        raise BadRequest("Node: Required value")
    return b


def parse_preemption_args(body: bytes) -> tuple[Pod, dict[str, NodeVictims]]:
    obj = _decode_object(body, "v1.ExtenderPreemptionArgs")
    w = "ExtenderPreemptionArgs"
    try:
        pod = _parse_pod(wire.get_field(obj, "Pod"), "Pod", f"{w}.Pod")
        out: dict[str, NodeVictims] = {}
        full = wire.as_object(wire.get_field(obj, "NodeNameToVictims"), f"{w}.NodeNameToVictims",
                              "map[string]*v1.Victims")
        meta = wire.as_object(wire.get_field(obj, "NodeNameToMetaVictims"), f"{w}.NodeNameToMetaVictims",
                              "map[string]*v1.MetaVictims")
        if full is not None:
            for node, v in full.items():
                vo = wire.as_object(v, f"{w}.NodeNameToVictims", "v1.Victims") or {}
                raw_pods = wire.as_list(wire.get_field(vo, "Pods"), f"{w}.NodeNameToVictims.Pods", "[]*v1.Pod") or []
                pods = tuple(_parse_pod(p, f"NodeNameToVictims[{node}].Pods[{i}]", f"{w}.NodeNameToVictims.Pods")
                             for i, p in enumerate(raw_pods))
                num = wire.as_int64(wire.get_field(vo, "NumPDBViolations"), f"{w}.NodeNameToVictims.NumPDBViolations")
                out[node] = NodeVictims(tuple(p.uid for p in pods), num, pods)
        elif meta is not None:
            for node, v in meta.items():
                mv = wire.parse_meta_victims(v, f"{w}.NodeNameToMetaVictims") or wire.MetaVictims()
                out[node] = NodeVictims(mv.uids, mv.num_pdb_violations)
        else:
            raise BadRequest("ExtenderPreemptionArgs: one of NodeNameToVictims or NodeNameToMetaVictims is required")
    except wire.WireError as e:
        raise BadRequest(str(e)) from None
    return pod, out


# ====================================================================== the app
class HandlerError(Exception):
    """A handler returned something the wire cannot carry (HTTP 500, message only)."""


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn)


def _json(body: bytes, status: int = 200) -> Response:
    return Response(body, status_code=status, media_type="application/json")


def _error_body(message: str) -> bytes:
    return wire.go_json({"Error": message})


def _error(status: int, message: str) -> Response:
    return _json(_error_body(message), status)


def _check_score(value: Any, who: str, node: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise HandlerError(f"{who} returned {value!r} for node {node!r}; a score must be an int")
    if not wire.MIN_EXTENDER_PRIORITY <= value <= wire.MAX_EXTENDER_PRIORITY:
        raise HandlerError(f"{who} returned {value} for node {node!r}; extender scores must be in "
                           f"[{wire.MIN_EXTENDER_PRIORITY}, {wire.MAX_EXTENDER_PRIORITY}]")
    return value


_SCORES = list[Annotated[int, msgspec.Meta(ge=wire.MIN_EXTENDER_PRIORITY, le=wire.MAX_EXTENDER_PRIORITY)]]


def _check_scores(values: list[Any], names: Sequence[str], who: str) -> list[int]:
    """Every value an int in 0..10, as plain ints (one pass in C when they are: msgspec's strict
    conversion refuses bools and floats as _check_score does; the exact message otherwise)."""
    try:
        return msgspec.convert(values, _SCORES)
    except msgspec.ValidationError:
        return [int(_check_score(v, who, n)) for v, n in zip(values, names, strict=True)]


def _aligned(result: Any, count: int, who: str, what: str) -> list[Any]:
    """A batch handler's answer: one value per node, in the order given (a list, tuple, numpy
    array or any sized iterable)."""
    tolist = getattr(result, "tolist", None)
    if callable(tolist):
        result = tolist()
    if isinstance(result, (str, bytes, Mapping)) or not isinstance(result, Iterable):
        raise HandlerError(f"{who} returned {type(result).__name__}; expected one {what} per node, in order")
    values = list(result)
    if len(values) != count:
        raise HandlerError(f"{who} returned {len(values)} values for {count} nodes; expected one {what} per node")
    return values


# Handler shapes: "bulk" fn(pod, nodes) -> FilterResult / {name: score}; "node" fn(pod, node)
# called per node; "nodes" fn(pod, nodes) -> one verdict / score per node, in order.
@dataclass(slots=True)
class _Handler:
    fn: Callable[..., Any]
    shape: str
    resolve_nodes: bool = True

    @property
    def label(self) -> str:
        return getattr(self.fn, "__name__", repr(self.fn))

    @property
    def per_node(self) -> bool:
        return self.shape == "node"


class _Disconnected(Exception):
    """The client went away before its request body arrived."""


class ExtenderApp:
    """An HTTP scheduler extender as an ASGI application.

    ``prefix`` is the path the verbs live under (kube-scheduler's ``urlPrefix`` path, e.g.
    ``"/scheduler"``); ``node_lister(name)`` resolves node names for nodeCacheCapable requests
    before the built-in cache is consulted.

    Where plain (non-async) handlers run, ``sync_handlers``:

    - ``"auto"`` (default): the node-level handlers (``filter_node``, ``score_node``,
      ``filter_nodes``, ``score_nodes``), which judge nodes and are expected to compute, not
      wait, run on the event loop; the verb-level ones (``filter``, ``prioritize``, ``bind``,
      ``preempt``) in a worker thread, so that one that blocks (a quota service, a database)
      does not stall the server;
    - ``"thread"``: every plain handler in a worker thread;
    - ``"inline"``: every plain handler on the event loop.

    A worker-thread hand-off costs two thread wake-ups per call: ~0.05 ms on an idle machine,
    several times that on a loaded one."""

    def __init__(self, *, prefix: str = "", node_lister: Callable[[str], Node | None] | None = None,
                 title: str = "kubesched scheduler extender", max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                 sync_handlers: str = "auto") -> None:
        if sync_handlers not in ("auto", "thread", "inline"):
            raise ValueError(f"sync_handlers must be 'auto', 'thread' or 'inline', not {sync_handlers!r}")
        self.prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
        self.node_lister = node_lister
        self.node_cache = NodeCache()
        self.title = title
        self.max_body_bytes = max_body_bytes
        self.sync_handlers = sync_handlers
        self._filter: _Handler | None = None
        self._prioritize: _Handler | None = None
        self._bind: Callable[..., Any] | None = None
        self._preempt: Callable[..., Any] | None = None
        self._asgi: ASGIApp | None = None
        self._routes: dict[str, str] | None = None
        self._pod_of_text = _ParsedByText(parse_pod, 256)
        self._node_of_text = _ParsedByText(parse_node, 1 << 14)

    # ---- registration
    def _set(self, verb: str, handler: _Handler) -> None:
        current = self._filter if verb == "filter" else self._prioritize
        if current is not None:
            raise ValueError(f"a {verb} handler is already registered ({current.label})")
        if verb == "filter":
            self._filter = handler
        else:
            self._prioritize = handler

    @overload
    def filter(self, fn: F, /) -> F: ...

    @overload
    def filter(self, fn: None = None, /, *, resolve_nodes: bool = True) -> Callable[[F], F]: ...

    def filter(self, fn: F | None = None, /, *, resolve_nodes: bool = True) -> F | Callable[[F], F]:
        """Register ``fn(pod, nodes) -> FilterResult | None`` (None keeps every node); with
        ``resolve_nodes=False`` it gets node names, not Node objects."""
        def register(f: F) -> F:
            self._set("filter", _Handler(f, "bulk", resolve_nodes=resolve_nodes))
            return f
        return register(fn) if fn is not None else register

    def filter_node(self, fn: F) -> F:
        """Register ``fn(pod, node)`` judging one node: ``None``/``True`` fits, a string is the
        reason it does not (``False``: a generic reason), :class:`Unresolvable` means
        preemption cannot help there either."""
        self._set("filter", _Handler(fn, "node"))
        return fn

    @overload
    def filter_nodes(self, fn: F, /) -> F: ...

    @overload
    def filter_nodes(self, fn: None = None, /, *, resolve_nodes: bool = True) -> Callable[[F], F]: ...

    def filter_nodes(self, fn: F | None = None, /, *, resolve_nodes: bool = True) -> F | Callable[[F], F]:
        """Register ``fn(pod, nodes) -> verdicts``: :meth:`filter_node` for all the candidates
        in one call, one verdict per node in the order given (a list, tuple or numpy array).
        With ``resolve_nodes=False`` it gets the node names."""
        def register(f: F) -> F:
            self._set("filter", _Handler(f, "nodes", resolve_nodes=resolve_nodes))
            return f
        return register(fn) if fn is not None else register

    @overload
    def prioritize(self, fn: F, /) -> F: ...

    @overload
    def prioritize(self, fn: None = None, /, *, resolve_nodes: bool = True) -> Callable[[F], F]: ...

    def prioritize(self, fn: F | None = None, /, *, resolve_nodes: bool = True) -> F | Callable[[F], F]:
        """Register ``fn(pod, nodes) -> {node name: score}`` (or an iterable of (name, score)),
        scores in 0..10; the scheduler multiplies them by the extender's weight and by 10."""
        def register(f: F) -> F:
            self._set("prioritize", _Handler(f, "bulk", resolve_nodes=resolve_nodes))
            return f
        return register(fn) if fn is not None else register

    def score_node(self, fn: F) -> F:
        """Register ``fn(pod, node) -> int`` scoring one node, 0..10."""
        self._set("prioritize", _Handler(fn, "node"))
        return fn

    @overload
    def score_nodes(self, fn: F, /) -> F: ...

    @overload
    def score_nodes(self, fn: None = None, /, *, resolve_nodes: bool = True) -> Callable[[F], F]: ...

    def score_nodes(self, fn: F | None = None, /, *, resolve_nodes: bool = True) -> F | Callable[[F], F]:
        """Register ``fn(pod, nodes) -> scores``: :meth:`score_node` for all the candidates in
        one call, one int in 0..10 per node in the order given (a list or a numpy array)."""
        def register(f: F) -> F:
            self._set("prioritize", _Handler(f, "nodes", resolve_nodes=resolve_nodes))
            return f
        return register(fn) if fn is not None else register

    def bind(self, fn: F) -> F:
        """Register ``fn(binding: Binding) -> None``; raise to report a failed binding."""
        if self._bind is not None:
            raise ValueError("a bind handler is already registered")
        self._bind = fn
        return fn

    def preempt(self, fn: F) -> F:
        """Register ``fn(pod, victims: dict[node, NodeVictims]) -> Mapping[node, NodeVictims]``:
        the nodes (and victims on them) the extender agrees to preempt on."""
        if self._preempt is not None:
            raise ValueError("a preempt handler is already registered")
        self._preempt = fn
        return fn

    # ---- description
    def verbs(self) -> dict[str, str]:
        """Verb -> path, for the verbs that have a handler."""
        have = {"filter": self._filter, "prioritize": self._prioritize, "bind": self._bind, "preempt": self._preempt}
        return {v: f"{self.prefix}/{v}" for v in VERBS if have[v] is not None}

    def extender_config(self, url_prefix: str, *, weight: int = 1, node_cache_capable: bool = False,
                        ignorable: bool = False, http_timeout: str = "5s",
                        managed_resources: Sequence[str] = ()) -> dict[str, Any]:
        """The KubeSchedulerConfiguration ``extenders[]`` entry for this app served at
        ``url_prefix`` (e.g. ``http://127.0.0.1:8888/scheduler``)."""
        entry: dict[str, Any] = {"urlPrefix": url_prefix}
        for verb in self.verbs():
            entry[f"{verb}Verb"] = verb
        if "prioritize" in self.verbs():
            entry["weight"] = weight
        entry["nodeCacheCapable"] = node_cache_capable
        entry["ignorable"] = ignorable
        entry["httpTimeout"] = http_timeout
        if managed_resources:
            entry["managedResources"] = [{"name": r, "ignoredByScheduler": False} for r in managed_resources]
        return entry

    def openapi(self) -> dict[str, Any]:
        """An OpenAPI 3.0 document of the registered verbs and the v1 extender types."""
        return _openapi(self.title, self.verbs())

    # ---- ASGI
    @property
    def asgi(self) -> ASGIApp:
        """The Starlette app: /healthz, /openapi.json, the verbs (also served directly by
        ``__call__``), and Starlette's 404 / 405 answers for everything else."""
        if self._asgi is None:
            routes = [Route("/healthz", self._healthz, methods=["GET"]),
                      Route("/openapi.json", self._openapi, methods=["GET"])]
            for verb in VERBS:
                routes.append(Route(f"{self.prefix}/{verb}", self._starlette_endpoint(verb), methods=["POST"]))
            self._asgi = Starlette(routes=routes)
        return self._asgi

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The verbs straight from ASGI: Starlette's request, routing and response objects cost
        # more than the rest of a names-only call.
        if scope["type"] == "http" and scope["method"] == "POST":
            routes = self._routes
            if routes is None:
                routes = self._routes = {f"{self.prefix}/{verb}": verb for verb in VERBS}
            verb = routes.get(_route_path(scope))
            if verb is not None:
                try:
                    status, body = await self._handle(verb, lambda: self._receive_body(scope, receive))
                except _Disconnected:
                    return
                await send({"type": "http.response.start", "status": status,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(body)).encode("ascii"))]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.asgi(scope, receive, send)

    # ---- the verbs without ASGI (kubesched.extender._protocol.VerbProtocol)
    def verb_routes(self) -> dict[bytes, str]:
        """Request path -> verb: the paths :meth:`serve_verb` answers (POST only)."""
        return {f"{self.prefix}/{verb}".encode("ascii"): verb for verb in VERBS}

    async def serve_verb(self, verb: str, body: bytes) -> tuple[int, bytes]:
        """(HTTP status, JSON reply) for a POST of ``body`` to ``verb``, as :meth:`__call__`
        answers it."""
        async def read_body() -> bytes:
            return body
        return await self._handle(verb, read_body)

    def _starlette_endpoint(self, verb: str) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            status, body = await self._handle(verb, lambda: self._body(request))
            return _json(body, status)
        return endpoint

    async def _healthz(self, request: Request) -> Response:
        return PlainTextResponse("ok")

    async def _openapi(self, request: Request) -> Response:
        return _json(wire.go_json(self.openapi()))

    async def _receive_body(self, scope: Scope, receive: Receive) -> bytes:
        for key, value in scope["headers"]:
            if key == b"content-length" and value.isdigit() and int(value) > self.max_body_bytes:
                raise _TooLarge()
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Disconnected()
            chunk = message.get("body", b"")
            if chunk:
                size += len(chunk)
                if size > self.max_body_bytes:
                    raise _TooLarge()
                chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def _body(self, request: Request) -> bytes:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise _TooLarge()
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body_bytes:
                raise _TooLarge()
            chunks.append(chunk)
        return b"".join(chunks)

    async def _handle(self, verb: str, read_body: Callable[[], Awaitable[bytes]]) -> tuple[int, bytes]:
        """(HTTP status, reply body) for a POST to ``verb``."""
        run = {"filter": self._run_filter_call, "prioritize": self._run_prioritize_call, "bind": self._run_bind_call,
               "preempt": self._run_preempt_call}[verb]
        if (self._filter, self._prioritize, self._bind, self._preempt)[VERBS.index(verb)] is None:
            return 404, _error_body(f"this extender has no {verb} handler")
        try:
            body = await read_body()
            return 200, await run(body)
        except _Disconnected:
            raise
        except _TooLarge:
            return 413, _error_body(f"{verb}: request body larger than {self.max_body_bytes} bytes")
        except BadRequest as e:
            return 400, _error_body(f"{verb}: {e}")
        except HandlerError as e:
            log.error("extender %s handler: %s", verb, e)
            return 500, _error_body(f"{verb}: {e}")
        except Exception as e:  # a bug in a handler: log it, answer without a traceback
            log.exception("extender %s handler failed", verb)
            return 500, _error_body(f"{verb}: handler failed: {type(e).__name__}: {e}")

    # ---- running handlers
    def _inline(self, node_level: bool) -> bool:
        return self.sync_handlers == "inline" or (self.sync_handlers == "auto" and node_level)

    async def _call(self, fn: Callable[..., Any], *args: Any, node_level: bool = False) -> Any:
        if _is_async(fn):
            return await fn(*args)
        if self._inline(node_level):
            result = fn(*args)
        else:
            result = await run_in_threadpool(fn, *args)
        if isinstance(result, Awaitable):
            return await result
        return result

    async def _per_node(self, fn: Callable[..., Any], pod: Pod, given: list[Any]) -> list[Any]:
        """``fn(pod, node)`` for every node (in one worker-thread hop, if in a thread)."""
        if _is_async(fn):
            return [await fn(pod, n) for n in given]
        if self._inline(True):
            return [fn(pod, n) for n in given]
        return await run_in_threadpool(lambda: [fn(pod, n) for n in given])

    # ---- request decoding and node resolution
    def _parse_args(self, body: bytes) -> ExtenderArgs:
        """parse_extender_args, with the plain shape kube-scheduler sends read by msgspec and
        each pod and node text parsed once (a request that is anything else, or fails, is read
        again by parse_extender_args, which words the error)."""
        raw = wire.split_extender_args(body)
        if raw is None:
            return parse_extender_args(body)
        try:
            pod = self._pod_of_text(raw.pod)
            nodes = None if raw.nodes is None else list(map(self._node_of_text, raw.nodes))
        except (FieldError, wire.WireError):
            return parse_extender_args(body)
        return ExtenderArgs(pod, nodes, raw.node_names, raw.nodes)

    def _resolve(self, names: Sequence[str]) -> tuple[list[Node], list[str], list[str]]:
        """(Node objects for ``names`` — lister first, then the cache —, the names found, the
        unknown names)."""
        if self.node_lister is None:
            found = self.node_cache.lookup(names)
            if None not in found:  # Node compares by identity: a C-level scan
                return found, list(names), []  # type: ignore[return-value]
        else:
            lister, cache = self.node_lister, self.node_cache
            found = [lister(n) or cache.get(n) for n in names]
        nodes: list[Node] = []
        known: list[str] = []
        unknown: list[str] = []
        for name, node in zip(names, found, strict=True):
            if node is None:
                unknown.append(name)
            else:
                nodes.append(node)
                known.append(name)
        return nodes, known, unknown

    def _candidates(self, args: ExtenderArgs, handler: _Handler) -> tuple[list[Any], list[str], list[str]]:
        """(what the handler gets, the names of those candidates, unknown node names)."""
        if args.nodes is not None:
            self.node_cache.update(args.nodes)
            names = list(map(_NODE_NAME, args.nodes))
            return (list(args.nodes) if handler.resolve_nodes else names), names, []
        names = args.node_names or []
        if not handler.resolve_nodes:
            return list(names), list(names), []
        return self._resolve(names)

    # ---- filter
    async def _run_filter_call(self, body: bytes) -> bytes:
        handler = self._filter
        assert handler is not None
        args = self._parse_args(body)
        given, names, unknown = self._candidates(args, handler)
        try:
            result = await self._run_filter(handler, args.pod, given, names)
        except HandlerError:
            raise
        except Exception as e:
            if isinstance(e, ExtenderError):
                message = str(e) or type(e).__name__
            else:
                log.exception("extender filter handler failed")
                message = f"{type(e).__name__}: {e}"
            return wire.filter_result_json(nodes=None, node_names=None, failed={}, failed_and_unresolvable={},
                                           error=message)
        failed = dict(result.failed)
        for name in unknown:
            failed.setdefault(name, f"node {name!r} is not in this extender's node cache")
        if result.feasible is None:
            if failed or result.unresolvable:
                out = failed.keys() | result.unresolvable.keys()
                kept = [n for n in names if n not in out]
            else:
                kept = names
        else:
            kept = list(result.feasible)
            allowed = set(names)
            stray = [n for n in kept if n not in allowed]
            if stray:
                raise HandlerError(f"filter handler {handler.label} kept {stray[0]!r}, which was not a candidate")
        if args.nodes is not None:
            if args.raw_nodes is not None:  # echo each kept node as it came
                text = dict(zip(names, args.raw_nodes, strict=True))
                nodes = [text[n] for n in kept]
            else:
                by_name = dict(zip(names, args.nodes, strict=True))
                nodes = [wire.object_json(by_name[n]) for n in kept]
            return wire.filter_result_json(nodes=nodes, node_names=None, failed=failed,
                                           failed_and_unresolvable=result.unresolvable, error=result.error)
        return wire.filter_result_json(nodes=None, node_names=kept, failed=failed,
                                       failed_and_unresolvable=result.unresolvable, error=result.error)

    async def _run_filter(self, handler: _Handler, pod: Pod, given: list[Any], names: list[str]) -> FilterResult:
        if handler.shape == "bulk":
            result = await self._call(handler.fn, pod, given)
            if result is None:
                return FilterResult()
            if not isinstance(result, FilterResult):
                raise HandlerError(f"filter handler {handler.label} returned {type(result).__name__}; "
                                   "expected FilterResult or None")
            _check_reasons(result.failed, handler.label)
            _check_reasons(result.unresolvable, handler.label)
            return result
        if handler.shape == "nodes":
            verdicts = _aligned(await self._call(handler.fn, pod, given, node_level=True), len(given),
                                f"filter handler {handler.label}", "verdict")
        else:
            verdicts = await self._per_node(handler.fn, pod, given)
        failed: dict[str, str] = {}
        unresolvable: dict[str, str] = {}
        # Only the nodes turned away need a look.
        for i in [i for i, v in enumerate(verdicts) if v is not None and v is not True]:
            name, verdict = names[i], verdicts[i]
            if verdict is False:
                failed[name] = f"node(s) rejected by extender filter {handler.label}"
            elif isinstance(verdict, Unresolvable):
                unresolvable[name] = verdict.reason
            elif isinstance(verdict, str):
                failed[name] = verdict or f"node(s) rejected by extender filter {handler.label}"
            else:
                raise HandlerError(f"filter handler {handler.label} returned {verdict!r} for node {name!r}; "
                                   "expected None, a bool, a reason string or Unresolvable")
        return FilterResult(failed, unresolvable)

    # ---- prioritize
    async def _run_prioritize_call(self, body: bytes) -> bytes:
        handler = self._prioritize
        assert handler is not None
        args = self._parse_args(body)
        given, names, _unknown = self._candidates(args, handler)
        label = f"prioritize handler {handler.label}"
        if handler.shape == "node":
            values = await self._per_node(handler.fn, args.pod, given)
            return wire.host_priorities_json(names, _check_scores(values, names, label), plain_ints=True)
        if handler.shape == "nodes":
            values = _aligned(await self._call(handler.fn, args.pod, given, node_level=True), len(given), label,
                              "score")
            return wire.host_priorities_json(names, _check_scores(values, names, label), plain_ints=True)
        result = await self._call(handler.fn, args.pod, given)
        pairs: Iterable[Any]
        if isinstance(result, Mapping):
            pairs = result.items()
        elif isinstance(result, Iterable) and not isinstance(result, (str, bytes)):
            pairs = result
        else:
            raise HandlerError(f"{label} returned {type(result).__name__}; expected a mapping of node name to score")
        hosts: list[str] = []
        scores: list[int] = []
        for item in pairs:
            if isinstance(item, wire.HostPriority):
                host, score = item.host, item.score
            elif isinstance(item, tuple) and len(item) == 2:
                host, score = item
            else:
                raise HandlerError(f"{label} returned {item!r}; expected (node name, score)")
            if not isinstance(host, str):
                raise HandlerError(f"{label} returned node name {host!r}; expected a string")
            hosts.append(host)
            scores.append(_check_score(score, label, host))
        return wire.host_priorities_json(hosts, scores)

    # ---- bind
    async def _run_bind_call(self, body: bytes) -> bytes:
        fn = self._bind
        assert fn is not None
        binding = parse_binding_args(body)
        try:
            await self._call(fn, binding)
        except ExtenderError as e:
            return wire.binding_result_json(str(e) or type(e).__name__)
        except Exception as e:
            log.exception("extender bind handler failed")
            return wire.binding_result_json(f"{type(e).__name__}: {e}")
        return wire.binding_result_json("")

    # ---- preempt
    async def _run_preempt_call(self, body: bytes) -> bytes:
        fn = self._preempt
        assert fn is not None
        pod, victims = parse_preemption_args(body)
        result = await self._call(fn, pod, victims)
        if not isinstance(result, Mapping):
            raise HandlerError(f"preempt handler returned {type(result).__name__}; "
                               "expected a mapping of node name to NodeVictims")
        out: dict[str, wire.MetaVictims] = {}
        for node, v in result.items():
            if not isinstance(node, str) or not isinstance(v, NodeVictims):
                raise HandlerError(f"preempt handler returned {node!r}: {v!r}; expected node name: NodeVictims")
            out[node] = wire.MetaVictims(tuple(v.uids), v.num_pdb_violations)
        return wire.preemption_result_json(out)


def _route_path(scope: Scope) -> str:
    """The path routes match (Starlette's get_route_path: ``path`` less a ``root_path`` prefix)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if not root or not path.startswith(root):
        return path
    if path == root:
        return ""
    return path[len(root):] if path[len(root)] == "/" else path


class _TooLarge(Exception):
    pass


def _check_reasons(m: Mapping[str, str], label: str) -> None:
    for k, v in m.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise HandlerError(f"filter handler {label} returned a reason map with {k!r}: {v!r}; expected str: str")


# ====================================================================== OpenAPI
def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


_K8S_OBJECT = {"type": "object", "description": "A core/v1 object as JSON (metadata, spec, status).",
               "additionalProperties": True}
_SCHEMAS: dict[str, Any] = {
    "Pod": {**_K8S_OBJECT, "description": "core/v1 Pod"},
    "Node": {**_K8S_OBJECT, "description": "core/v1 Node"},
    "NodeList": {"type": "object", "properties": {"metadata": {"type": "object"},
                                                  "items": {"type": "array", "nullable": True, "items": _ref("Node")}}},
    "ExtenderArgs": {
        "type": "object", "required": ["Pod"],
        "description": "Nodes is set for nodeCacheCapable: false, NodeNames for true. Keys match case-insensitively.",
        "properties": {"Pod": _ref("Pod"), "Nodes": {**_ref("NodeList"), "nullable": True},
                       "NodeNames": {"type": "array", "items": {"type": "string"}, "nullable": True}}},
    "FailedNodesMap": {"type": "object", "additionalProperties": {"type": "string"}, "nullable": True},
    "ExtenderFilterResult": {"type": "object", "properties": {
        "Nodes": {**_ref("NodeList"), "nullable": True},
        "NodeNames": {"type": "array", "items": {"type": "string"}, "nullable": True},
        "FailedNodes": _ref("FailedNodesMap"), "FailedAndUnresolvableNodes": _ref("FailedNodesMap"),
        "Error": {"type": "string"}}},
    "HostPriority": {"type": "object", "properties": {
        "Host": {"type": "string"},
        "Score": {"type": "integer", "format": "int64", "minimum": wire.MIN_EXTENDER_PRIORITY,
                  "maximum": wire.MAX_EXTENDER_PRIORITY}}},
    "HostPriorityList": {"type": "array", "items": _ref("HostPriority")},
    "ExtenderBindingArgs": {"type": "object", "required": ["PodName", "Node"], "properties": {
        "PodName": {"type": "string"}, "PodNamespace": {"type": "string"}, "PodUID": {"type": "string"},
        "Node": {"type": "string"}}},
    "ExtenderBindingResult": {"type": "object", "properties": {"Error": {"type": "string"}}},
    "MetaPod": {"type": "object", "properties": {"UID": {"type": "string"}}},
    "Victims": {"type": "object", "properties": {"Pods": {"type": "array", "items": _ref("Pod")},
                                                 "NumPDBViolations": {"type": "integer", "format": "int64"}}},
    "MetaVictims": {"type": "object", "properties": {"Pods": {"type": "array", "items": _ref("MetaPod")},
                                                     "NumPDBViolations": {"type": "integer", "format": "int64"}}},
    "ExtenderPreemptionArgs": {"type": "object", "required": ["Pod"], "properties": {
        "Pod": _ref("Pod"),
        "NodeNameToVictims": {"type": "object", "additionalProperties": _ref("Victims"), "nullable": True},
        "NodeNameToMetaVictims": {"type": "object", "additionalProperties": _ref("MetaVictims"), "nullable": True}}},
    "ExtenderPreemptionResult": {"type": "object", "properties": {
        "NodeNameToMetaVictims": {"type": "object", "additionalProperties": _ref("MetaVictims"), "nullable": True}}},
    "Error": {"type": "object", "properties": {"Error": {"type": "string"}}},
}
_VERB_DOC = {
    "filter": ("ExtenderArgs", "ExtenderFilterResult", "Filter the candidate nodes for a pod."),
    "prioritize": ("ExtenderArgs", "HostPriorityList", "Score the candidate nodes (0..10) for a pod."),
    "bind": ("ExtenderBindingArgs", "ExtenderBindingResult", "Bind a pod to the chosen node."),
    "preempt": ("ExtenderPreemptionArgs", "ExtenderPreemptionResult", "Narrow the preemption candidates and victims."),
}


def _openapi(title: str, verbs: Mapping[str, str]) -> dict[str, Any]:
    def err(desc: str) -> dict[str, Any]:
        return {"description": desc, "content": {"application/json": {"schema": _ref("Error")}}}

    paths: dict[str, Any] = {
        "/healthz": {"get": {"summary": "Liveness", "responses": {
            "200": {"description": "ok", "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
    }
    for verb, path in verbs.items():
        req, resp, summary = _VERB_DOC[verb]
        paths[path] = {"post": {
            "summary": summary, "operationId": verb,
            "requestBody": {"required": True, "content": {"application/json": {"schema": _ref(req)}}},
            "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": _ref(resp)}}},
                          "400": err("The body is not valid JSON or not the verb's shape."),
                          "413": err("The body is too large."),
                          "500": err("The handler failed.")}}}
    return {"openapi": "3.0.3",
            "info": {"title": title, "version": "v1",
                     "description": "A kube-scheduler HTTP extender (k8s.io/kube-scheduler/extender/v1 wire format)."},
            "paths": paths, "components": {"schemas": _SCHEMAS}}


# ====================================================================== serving
def load_app(target: str) -> Any:
    """``module:attr`` or ``path/to/file.py:attr`` -> the object (an ExtenderApp or any ASGI
    app). The current directory is importable, as with ``python -m``."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"{target!r}: expected MODULE:ATTRIBUTE (e.g. my_extender:app)")
    try:
        if module_name.endswith(".py") or os.sep in module_name or "/" in module_name:
            path = os.path.abspath(module_name)
            if not os.path.isfile(path):
                raise ConfigError(f"{target!r}: no such file {module_name!r}")
            name = "_kubesched_extender_" + os.path.splitext(os.path.basename(path))[0]
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise ConfigError(f"{target!r}: cannot import {module_name!r}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        else:
            if os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())
            module = importlib.import_module(module_name)
    except KubeschedError:
        raise
    except Exception as e:
        raise ConfigError(f"{target!r}: cannot import {module_name!r}: {type(e).__name__}: {e}") from None
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"{target!r}: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ConfigError(f"{target!r}: {attr!r} is not an ASGI application")
    return obj


def _uvicorn_config(app: Any, *, host: str, port: int, certfile: str | None, keyfile: str | None,
                    client_ca: str | None, log_level: str) -> uvicorn.Config:
    if bool(certfile) != bool(keyfile):
        raise ConfigError("--certfile and --keyfile must be given together")
    if client_ca and not certfile:
        raise ConfigError("--client-ca needs --certfile and --keyfile (client certificates need TLS)")
    # An ExtenderApp (with its own __call__, so that serving the verbs past ASGI skips nothing)
    # gets the protocol that answers the verbs itself and hands anything else to h11
    # (kubesched.extender._protocol); any other app, uvicorn's choice.
    http: type[asyncio.Protocol] | Literal["auto"] = "auto"
    if isinstance(app, ExtenderApp) and type(app).__call__ is ExtenderApp.__call__:
        # (uvicorn calls any protocol class; its annotation names only asyncio.Protocol, which a
        # BufferedProtocol is not)
        http = cast("type[asyncio.Protocol]", VerbProtocol)
    return uvicorn.Config(
        app, host=host, port=port, log_level=log_level, lifespan="off", log_config=None, http=http,
        ssl_certfile=certfile, ssl_keyfile=keyfile, ssl_ca_certs=client_ca,
        ssl_cert_reqs=ssl.CERT_REQUIRED if client_ca else ssl.CERT_NONE,
        timeout_graceful_shutdown=2, access_log=False,
    )


def configure_logging(log_level: str) -> None:
    """Log to stderr at ``log_level`` unless the program configured logging itself."""
    if not logging.getLogger().handlers:
        logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def serve(app: Any, *, host: str = "127.0.0.1", port: int = 8888, certfile: str | None = None,
          keyfile: str | None = None, client_ca: str | None = None, log_level: str = "info") -> None:
    """Serve ``app`` with uvicorn until interrupted. With ``certfile``/``keyfile`` it serves
    HTTPS; with ``client_ca`` too, it requires client certificates signed by that CA."""
    configure_logging(log_level)
    config = _uvicorn_config(app, host=host, port=port, certfile=certfile, keyfile=keyfile, client_ca=client_ca,
                             log_level=log_level)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # Bound here with proto IPPROTO_TCP so that asyncio sets TCP_NODELAY on every connection
    # (see ServerThread); uvicorn's own socket would leave Nagle's algorithm on.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    shown = f"[{host}]" if ":" in host else host
    log.info("serving on %s://%s:%d", "https" if certfile else "http", shown, sock.getsockname()[1])
    uvicorn.Server(config).run(sockets=[sock])


class ServerThread(ThreadedServer):
    """Serve an ASGI app from a background thread, on a port bound before it starts (``port=0``
    picks a free one): for tests, notebooks and embedding. A context manager::

        with ServerThread(app) as srv:
            print(srv.url)   # http://127.0.0.1:PORT
    """

    what = "extender server"

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0, certfile: str | None = None,
                 keyfile: str | None = None, client_ca: str | None = None, log_level: str = "warning") -> None:
        config = _uvicorn_config(app, host=host, port=port, certfile=certfile, keyfile=keyfile,
                                 client_ca=client_ca, log_level=log_level)
        super().__init__(config, host=host, port=port, https=bool(certfile), thread_name="extender-server")
