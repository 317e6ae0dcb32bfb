"""The live cluster: kubeconfig / in-cluster configuration, a rate-limited HTTP client,
informers fed by kubesched's own reflector, listers over them, and the scheduler's actions
on the API (bind, status patches, events, victim deletion).

- :func:`load_cluster_config` reads a kubeconfig (``--kubeconfig``, ``$KUBECONFIG``,
  ``~/.kube/config``: current or named context; tokens, token files, exec credential
  plugins returning a token, client certificates, CA, insecure-skip-tls-verify,
  tls-server-name) or the in-cluster service account.
- :class:`ApiClient` is an HTTP client (kept-alive HTTP/1.1 through
  :mod:`kubesched.cluster._http`, watches included; httpx for proxies; JSON through msgspec) with
  clientConnection qps/burst rate limiting (a
  token bucket, as client-go's flowcontrol) and the rest client's retries (Retry-After
  answers; GETs on a reset connection) that records every call by (verb, group, resource,
  subresource) and refuses any call missing from :data:`API_CALLS`, the one table of what
  kubesched asks of the API (the ClusterRole is checked against it).
- :class:`Informer` runs client-go's reflector: LIST (first from the watch cache,
  resourceVersion "0"), then WATCH from the list's resourceVersion with
  ``allowWatchBookmarks``; a stream that ends or breaks is watched again at once from the
  last resourceVersion seen (bookmarks included); a refused connection or a 429 resumes the
  watch after the backoff manager's wait (800 ms doubling to 30 s), any other error (410
  Gone, an error status) relists after it. Objects are decoded straight from JSON with
  :data:`kubesched.objects.parse.PARSERS` (the API defaulting the simulator applies); a
  relist is diffed against the store, so handlers see the adds and deletes they missed, and
  an update for every object kept (DeltaFIFO.Replace: unchanged ones too).
- :class:`EventBroadcaster` writes events.k8s.io/v1 Events as client-go's tools/events
  does: asynchronously, on a rate limiter of its own, with series and retries.
- :class:`LiveCluster` owns the informers of every resource the scheduler reads and splits
  pods as kube-scheduler does: assigned pods (``spec.nodeName`` set) go to the cache
  handlers, unassigned pods of our schedulerNames that are neither terminal nor being deleted
  to the queue handlers, other schedulers' pods nowhere. A pod moving between the two sets
  (bound, deleted gracefully) is a delete for one and an add for the other.
  :class:`LiveObjects` is the framework's ObjectLister over the informer stores.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import functools
import heapq
import json
import logging
import os
import random
import socket
import sys
import threading
import time
import zlib
from collections import Counter, deque
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote, urlencode, urlsplit

import msgspec

from kubesched._lazy import lazy_module
from kubesched.cluster import _http
from kubesched.cluster._http import Pool as FastPool
from kubesched.cluster.resources import RESOURCES, ApiResource, Json, format_micro_time, format_time
from kubesched.config.types import ClientConnection
from kubesched.errors import ApiError, ConfigError, FieldError, KubeschedError
from kubesched.features import DEFAULT_FEATURES, Features
from kubesched.objects import (
    CSIDriver,
    CSINode,
    Namespace,
    Node,
    ObjectMeta,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodCondition,
    PodDisruptionBudget,
    PodGroup,
    Service,
    StorageClass,
    Workload,
)
from kubesched.objects.devices import (
    DRA_PARSERS,
    DeviceClass,
    ResourceClaim,
    ResourceSlice,
    allocation_json,
    extended_resource_classes,
    parse_resource_claim,
)
from kubesched.objects.manifests import load_yaml_document
from kubesched.objects.parse import PARSERS, parse_node, parse_pod

if TYPE_CHECKING:
    import http.client as http_client
    import ssl
    import subprocess

    import httpx
    import yaml
else:
    # Imported on first use: every request goes through the fast transport (kubesched.cluster._http)
    # unless a proxy is configured, and only a kubeconfig needs YAML (a restarted scheduler's
    # time to its first bind counts every import; httpx alone was ~50 ms of it). Likewise ssl
    # (an https server), subprocess (a kubeconfig's exec credential plugin) and http.client
    # (its exception classes, for a malformed reply; with the email package ~20 ms).
    httpx = lazy_module("httpx")
    yaml = lazy_module("yaml")
    http_client = lazy_module("http.client")
    ssl = lazy_module("ssl")
    subprocess = lazy_module("subprocess")

log = logging.getLogger(__name__)


# ================================================================ the API calls kubesched makes
@dataclass(frozen=True, slots=True, order=True)
class ApiCall:
    """One kind of request, as RBAC sees it."""

    verb: str  # get | list | watch | create | update | patch | delete
    group: str  # "" for the core group
    resource: str  # plural
    subresource: str = ""


INFORMED_RESOURCES: tuple[str, ...] = (
    "pods", "nodes", "namespaces", "persistentvolumes", "persistentvolumeclaims", "storageclasses", "csinodes",
    "csidrivers", "services", "replicationcontrollers", "replicasets", "statefulsets", "poddisruptionbudgets",
)
"""Resources the scheduler keeps an informer on (LIST + WATCH). PriorityClasses are not
among them: the API server's admission already resolved every pod's priority."""

DRA_INFORMED_RESOURCES: tuple[str, ...] = ("deviceclasses", "resourceslices", "resourceclaims")
"""resource.k8s.io/v1 resources informed when the DynamicResourceAllocation gate is on
(scheduler.go: the ResourceClaim informer behind the assume cache, the ResourceSlice tracker's
informer, DeviceClasses). ResourceClaimTemplates are not among them: kube-scheduler never reads
them (the resourceclaim controller creates a template's claim and names it in the pod's
status.resourceClaimStatuses), and system:kube-scheduler may not list them."""

API_CALLS: tuple[ApiCall, ...] = (
    *(ApiCall(verb, RESOURCES[p].group, p) for p in INFORMED_RESOURCES for verb in ("list", "watch")),
    *(ApiCall(verb, RESOURCES[p].group, p) for p in DRA_INFORMED_RESOURCES for verb in ("list", "watch")),
    ApiCall("create", "", "pods", "binding"),  # DefaultBinder
    ApiCall("patch", "", "pods", "status"),  # PodScheduled condition, nominatedNodeName, DisruptionTarget
    ApiCall("delete", "", "pods"),  # preemption victims (UID precondition)
    ApiCall("create", "events.k8s.io", "events"),  # Scheduled / FailedScheduling / Preempted
    ApiCall("patch", "events.k8s.io", "events"),  # an event series' count
    # VolumeBinding's PreBind (BindPodVolumes): a PV's claimRef, a claim's selected-node.
    ApiCall("update", "", "persistentvolumes"),
    ApiCall("update", "", "persistentvolumeclaims"),
    # DynamicResources (bindClaim, PostFilter, Unreserve): the claim's finalizer, its status
    # (allocation, reservedFor), the claim read again after a conflict.
    ApiCall("get", "resource.k8s.io", "resourceclaims"),
    ApiCall("update", "resource.k8s.io", "resourceclaims"),
    ApiCall("update", "resource.k8s.io", "resourceclaims", "status"),
    ApiCall("patch", "resource.k8s.io", "resourceclaims", "status"),
    # Leader election (ApiLeaseClient below, for kubesched.live.leader).
    ApiCall("get", "coordination.k8s.io", "leases"),
    ApiCall("create", "coordination.k8s.io", "leases"),
    ApiCall("update", "coordination.k8s.io", "leases"),
)
"""Every API call the live cluster client makes: (verb, group, resource, subresource).
:class:`ApiClient` refuses anything else, so the table cannot fall behind the code. It is the
one table: kubesched.live.api_calls derives RBAC's view of it (the Lease calls pinned to the
configured lock), which tests/live/test_deploy.py checks against the ClusterRole and Role in
deploy/."""

_DECLARED = frozenset(API_CALLS)
_METHODS = {"get": "GET", "list": "GET", "watch": "GET", "create": "POST", "update": "PUT", "patch": "PATCH",
            "delete": "DELETE"}
PATCH_MERGE = "application/merge-patch+json"
PATCH_STRATEGIC = "application/strategic-merge-patch+json"


# ================================================================ configuration
@dataclass(frozen=True, slots=True)
class ExecConfig:
    """users[].exec: a credential plugin printing an ExecCredential (token only)."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # may hold credentials: never printed
    api_version: str = "client.authentication.k8s.io/v1"


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """Where the API server is and how to authenticate (a resolved kubeconfig context). Its
    repr leaves out the secrets (token, client key, password), as client-go's Config.String
    redacts them: a config printed or logged must not give them away."""

    server: str
    token: str = field(default="", repr=False)
    token_file: str = ""
    ca_file: str = ""
    ca_data: bytes = b""
    cert_file: str = ""
    cert_data: bytes = b""
    key_file: str = ""
    key_data: bytes = field(default=b"", repr=False)
    insecure: bool = False
    tls_server_name: str = ""
    username: str = ""
    password: str = field(default="", repr=False)
    exec: ExecConfig | None = None
    namespace: str = "default"


SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def in_cluster_config(sa_dir: str = SERVICE_ACCOUNT_DIR) -> ClusterConfig:
    """rest.InClusterConfig: KUBERNETES_SERVICE_HOST/PORT, the service account token (re-read
    as it rotates) and CA."""
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST", ""), os.environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise ConfigError("unable to load in-cluster configuration: KUBERNETES_SERVICE_HOST and "
                          "KUBERNETES_SERVICE_PORT must be defined")
    token_file = os.path.join(sa_dir, "token")
    if not os.path.exists(token_file):
        raise ConfigError(f"unable to load in-cluster configuration: no service account token at {token_file}")
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    ns_file = Path(sa_dir, "namespace")
    namespace = ns_file.read_text().strip() if ns_file.exists() else "default"
    ca = os.path.join(sa_dir, "ca.crt")
    return ClusterConfig(server=f"https://{host}:{port}", token_file=token_file,
                         ca_file=ca if os.path.exists(ca) else "", namespace=namespace)


def _b64(value: Any, what: str) -> bytes:
    try:
        return base64.b64decode(str(value), validate=False)
    except ValueError:
        raise ConfigError(f"{what} is not valid base64") from None


def _merged_kubeconfig(paths: Sequence[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """clientcmd's merge of several kubeconfig files: the first file defining a name (or the
    current-context) wins. Also returns each entry's file, for relative paths."""
    merged: dict[str, Any] = {"clusters": {}, "users": {}, "contexts": {}, "current-context": ""}
    origin: dict[str, str] = {}
    for path in paths:
        try:
            # The C loader (the pure-Python one took ~3 ms of a restarted scheduler's start).
            doc = load_yaml_document(Path(path).read_text()) or {}
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise ConfigError(f"cannot read kubeconfig: {e}", file=path) from None
        except yaml.YAMLError as e:
            # Only the problem and its place: PyYAML's own text quotes the offending line, which
            # in a kubeconfig may be a token or a client key (and spans several lines).
            mark = getattr(e, "problem_mark", None)
            where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
            problem = getattr(e, "problem", None) or type(e).__name__
            raise ConfigError(f"cannot read kubeconfig: invalid YAML{where}: {problem}", file=path) from None
        if not isinstance(doc, dict):
            raise ConfigError("a kubeconfig must be a mapping", file=path)
        if not merged["current-context"] and doc.get("current-context"):
            merged["current-context"] = str(doc["current-context"])
        for section, inner in (("clusters", "cluster"), ("users", "user"), ("contexts", "context")):
            for entry in doc.get(section) or []:
                if isinstance(entry, dict) and entry.get("name") is not None:
                    name = str(entry["name"])
                    if name not in merged[section]:
                        merged[section][name] = entry.get(inner) or {}
                        origin[f"{section}/{name}"] = path
    return merged, origin


def load_kubeconfig(paths: str | Sequence[str], *, context: str | None = None) -> ClusterConfig:
    """Resolve a context of the kubeconfig file(s) (``path1:path2`` as in $KUBECONFIG)."""
    files = [p for p in (paths.split(os.pathsep) if isinstance(paths, str) else paths) if p]
    if not files:
        raise ConfigError("no kubeconfig file given")
    cfg, origin = _merged_kubeconfig(files)
    ctx_name = context or cfg["current-context"]
    if not ctx_name:
        raise ConfigError("the kubeconfig has no current-context; name one with --context", file=files[0])
    ctx = cfg["contexts"].get(ctx_name)
    if ctx is None:
        raise ConfigError(f"context {ctx_name!r} not found", file=files[0])
    cluster_name, user_name = str(ctx.get("cluster", "")), str(ctx.get("user", ""))
    cluster = cfg["clusters"].get(cluster_name)
    if cluster is None:
        raise ConfigError(f"cluster {cluster_name!r} (of context {ctx_name!r}) not found", file=files[0])
    user = cfg["users"].get(user_name, {}) if user_name else {}
    if user_name and user_name not in cfg["users"]:
        raise ConfigError(f"user {user_name!r} (of context {ctx_name!r}) not found", file=files[0])

    def rel(section: str, name: str, value: Any) -> str:
        if not value:
            return ""
        p = Path(str(value)).expanduser()
        if not p.is_absolute():
            p = Path(origin.get(f"{section}/{name}", files[0])).parent / p
        return str(p)

    server = str(cluster.get("server") or "")
    if not server:
        raise ConfigError(f"cluster {cluster_name!r} has no server", file=files[0])
    exec_cfg = None
    ex = user.get("exec")
    if isinstance(ex, dict) and ex.get("command"):
        exec_cfg = ExecConfig(
            command=str(ex["command"]), args=tuple(str(a) for a in ex.get("args") or ()),
            env=tuple((str(e.get("name")), str(e.get("value", ""))) for e in ex.get("env") or () if isinstance(e, dict)),
            api_version=str(ex.get("apiVersion") or "client.authentication.k8s.io/v1"))
    elif user.get("auth-provider"):
        raise ConfigError(f"user {user_name!r}: auth-provider plugins are not supported; use a token or exec plugin",
                          file=files[0])
    return ClusterConfig(
        server=server.rstrip("/"),
        token=str(user.get("token") or ""),
        token_file=rel("users", user_name, user.get("tokenFile")),
        ca_file=rel("clusters", cluster_name, cluster.get("certificate-authority")),
        ca_data=_b64(cluster["certificate-authority-data"], "certificate-authority-data")
        if cluster.get("certificate-authority-data") else b"",
        cert_file=rel("users", user_name, user.get("client-certificate")),
        cert_data=_b64(user["client-certificate-data"], "client-certificate-data")
        if user.get("client-certificate-data") else b"",
        key_file=rel("users", user_name, user.get("client-key")),
        key_data=_b64(user["client-key-data"], "client-key-data") if user.get("client-key-data") else b"",
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        tls_server_name=str(cluster.get("tls-server-name") or ""),
        username=str(user.get("username") or ""),
        password=str(user.get("password") or ""),
        exec=exec_cfg,
        namespace=str(ctx.get("namespace") or "default"),
    )


def load_cluster_config(kubeconfig: str = "", *, context: str | None = None,
                        master: str = "") -> ClusterConfig:
    """The configuration kube-scheduler would use: ``kubeconfig`` if given, else
    $KUBECONFIG, else the in-cluster service account, else ``~/.kube/config``. ``master``
    overrides the server URL."""
    cfg: ClusterConfig | None = None
    if kubeconfig:
        cfg = load_kubeconfig(kubeconfig, context=context)
    elif os.environ.get("KUBECONFIG"):
        cfg = load_kubeconfig(os.environ["KUBECONFIG"], context=context)
    elif os.environ.get("KUBERNETES_SERVICE_HOST"):
        cfg = in_cluster_config()
    else:
        default = Path.home() / ".kube" / "config"
        if default.exists():
            cfg = load_kubeconfig(str(default), context=context)
        elif master:
            cfg = ClusterConfig(server=master)
    if cfg is None:
        raise ConfigError("no cluster configuration: give --kubeconfig, set KUBECONFIG, or run in a pod")
    return dataclasses.replace(cfg, server=master.rstrip("/")) if master else cfg


# ================================================================ rate limiting
class TokenBucket:
    """client-go's token bucket (flowcontrol.NewTokenBucketRateLimiter): ``burst`` tokens,
    refilled at ``qps`` per second; :meth:`acquire` waits for one, first come first served.
    A qps <= 0 disables limiting."""

    def __init__(self, qps: float, burst: int, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.qps = float(qps)
        self.burst = max(int(burst), 1)
        self._tokens = float(self.burst)
        self._clock = clock
        self._sleep = sleep
        self._last = clock()
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Take a token (possibly borrowed from the future); seconds to wait before using it."""
        if self.qps <= 0:
            return 0.0
        with self._lock:
            self._refill()
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def _refill(self) -> None:
        """Add the tokens earned since the last call, up to ``burst`` (the lock held)."""
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now

    def acquire(self) -> float:
        wait = self.reserve()
        if wait > 0:
            self._sleep(wait)
        return wait

    def try_acquire(self) -> bool:
        """TryAccept: take a token if one is there now (never borrowed, never waited for)."""
        if self.qps <= 0:
            return True
        with self._lock:
            self._refill()
            if self._tokens < 1.0:
                return False
            self._tokens -= 1.0
            return True


# ================================================================ the HTTP client
class _TokenSource:
    """The bearer token: static, a file re-read when it changes (projected service account
    tokens rotate), or an exec plugin's output cached until it expires."""

    def __init__(self, cfg: ClusterConfig) -> None:
        self._cfg = cfg
        self._token = cfg.token
        self._mtime = 0.0
        self._expires = 0.0
        self._lock = threading.Lock()

    def header(self) -> str | None:
        cfg = self._cfg
        with self._lock:
            if cfg.token_file and not cfg.token:
                try:
                    mtime = os.stat(cfg.token_file).st_mtime
                    if mtime != self._mtime:
                        self._token = Path(cfg.token_file).read_text().strip()
                        self._mtime = mtime
                except OSError as e:
                    raise ApiError(f"cannot read the token file {cfg.token_file}: {e}") from None
            elif cfg.exec is not None and not cfg.token and (not self._token or time.time() >= self._expires):
                self._token, self._expires = _run_exec(cfg.exec)
            if self._token:
                return f"Bearer {self._token}"
        if cfg.username:
            basic = base64.b64encode(f"{cfg.username}:{cfg.password}".encode()).decode()
            return f"Basic {basic}"
        return None

    def invalidate(self) -> None:
        """A 401: an exec token is fetched again on the next request."""
        with self._lock:
            if self._cfg.exec is not None:
                self._expires = 0.0


def _run_exec(ex: ExecConfig) -> tuple[str, float]:
    env = {**os.environ, **dict(ex.env),
           "KUBERNETES_EXEC_INFO": json.dumps({"apiVersion": ex.api_version, "kind": "ExecCredential",
                                               "spec": {"interactive": False}})}
    try:
        out = subprocess.run([ex.command, *ex.args], env=env, capture_output=True, timeout=60, check=True, text=True)
        credential = json.loads(out.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        raise ApiError(f"exec credential plugin {ex.command!r} failed: {e}") from None
    status = (credential.get("status") or {}) if isinstance(credential, dict) else None
    if not isinstance(status, dict):  # printed JSON that is no ExecCredential: not an AttributeError
        raise ApiError(f"exec credential plugin {ex.command!r} printed no ExecCredential with a status")
    token = str(status.get("token") or "")
    if not token:
        raise ApiError(f"exec credential plugin {ex.command!r} returned no token")
    expires = status.get("expirationTimestamp")
    until = time.time() + 3600.0
    if expires:
        from kubesched.objects.parse import parse_time

        try:
            until = (parse_time(expires, "status.expirationTimestamp") or until) - 30.0
        except FieldError:
            pass
    return token, until


def _ssl_context(cfg: ClusterConfig, temp: list[str]) -> ssl.SSLContext | bool:
    if not cfg.server.startswith("https"):
        # Plain HTTP: no TLS. False spares httpx building a context with the system's whole CA
        # store (~25 ms of a restarted scheduler's start) that no request would use.
        return False
    if cfg.insecure:
        return False
    ctx = ssl.create_default_context(cafile=cfg.ca_file or None,
                                     cadata=cfg.ca_data.decode() if cfg.ca_data else None)
    cert, key = cfg.cert_file, cfg.key_file
    for data, kind in ((cfg.cert_data, "cert"), (cfg.key_data, "key")):
        if data:
            import tempfile  # only for a kubeconfig's inline client certificate (~8 ms of imports)

            fd, path = tempfile.mkstemp(prefix=f"kubesched-{kind}-", suffix=".pem")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            temp.append(path)
            if kind == "cert":
                cert = path
            else:
                key = path
    if cert:
        try:
            ctx.load_cert_chain(cert, key or None)
        except (OSError, ssl.SSLError) as e:
            raise ConfigError(f"cannot load the client certificate: {e}") from None
    return ctx


class TransportError(ApiError):
    """A request the API server did not answer (``status`` None). ``kind`` says how it failed,
    as client-go's utilnet classifies it: ``"refused"`` (connection refused:
    IsConnectionRefused), ``"eof"`` (the connection was reset or closed mid-request:
    IsConnectionReset / IsProbableEOF), ``"timeout"`` (IsTimeout) or ``"other"``."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def _caused_by(e: BaseException, kind: type[BaseException], text: str) -> bool:
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, kind) or text in str(cur):
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def _transport_error(what: str, e: BaseException) -> TransportError:
    """An httpx failure as a :class:`TransportError` of the right kind."""
    if isinstance(e, httpx.TimeoutException):
        kind = "timeout"
    elif isinstance(e, httpx.ConnectError):
        kind = "refused" if _caused_by(e, ConnectionRefusedError, "Connection refused") else "other"
    elif isinstance(e, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
        kind = "eof"  # reset, broken pipe, closed mid-response: IsConnectionReset / IsProbableEOF
    else:
        kind = "other"
    return TransportError(f"{what}: {e}" if str(e) else f"{what}: {type(e).__name__}", kind)


class WatchStream:
    """One open watch: iterate :meth:`events` for (type, object); :meth:`abort` (from any
    thread) cuts the connection so a blocked reader returns. ``response``: the fast
    transport's stream (kubesched.cluster._http.Stream) or, when requests go through httpx,
    an httpx.Response."""

    def __init__(self, response: httpx.Response | _http.Stream) -> None:
        self.response = response
        self._aborted = False

    def _chunks(self) -> Iterator[bytes]:
        """The body as it arrives; a connection that ends — closed, reset, cut mid-event, timed
        out (EOF, io.ErrUnexpectedEOF, IsProbableEOF, IsTimeout) — ends it quietly, any other
        failure is a :class:`TransportError`."""
        resp = self.response
        if isinstance(resp, _http.Stream):
            try:
                yield from resp.chunks()
            except (_http.Timeout, OSError, http_client.HTTPException):
                return
            except zlib.error as e:
                raise TransportError(f"watch: cannot decode the response: {e}", "other") from None
            return
        try:
            yield from resp.iter_bytes()
        except httpx.HTTPError as e:
            err = _transport_error("watch", e)
            if err.kind in ("eof", "timeout"):
                return
            raise err from None

    def events(self) -> Iterator[tuple[str, Json]]:
        """The stream's events, as client-go's StreamWatcher decodes them (one JSON object a
        line): the stream ends quietly when the connection does (a partial last line is
        dropped); a line that is not an event is an error (the reflector relists)."""
        buf = b""
        for chunk in self._chunks():
            if b"\n" not in chunk:
                buf += chunk
                continue
            *lines, buf = (buf + chunk).split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                try:
                    ev = msgspec.json.decode(line)  # straight from the bytes, in C
                except (msgspec.DecodeError, ValueError):
                    raise ApiError(f"unable to decode an event from the watch stream: {line[:200]!r}",
                                   status=500) from None
                if not isinstance(ev, dict):
                    raise ApiError(f"unable to decode an event from the watch stream: {line[:200]!r}",
                                   status=500)
                yield str(ev.get("type", "")), ev.get("object") or {}

    def abort(self) -> None:
        self._aborted = True
        resp = self.response
        if isinstance(resp, _http.Stream):
            resp.abort()
            return
        stream = resp.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    @property
    def aborted(self) -> bool:
        return self._aborted


class GoneError(ApiError):
    """The watch's resourceVersion is too old (410): the reflector must relist."""


class _Answer(Protocol):
    """A reply as the client reads it: an httpx.Response, or the fast transport's
    (kubesched.cluster._http.Reply)."""

    @property
    def status_code(self) -> int: ...

    @property
    def reason_phrase(self) -> str: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def content(self) -> bytes: ...


def _error(verb: str, path: str, status: int, reason: str, content: bytes) -> ApiError:
    """The ApiError of an error reply: its metav1.Status message, else its text."""
    text = content.decode("utf-8", "replace")
    try:
        body = msgspec.json.decode(content)
        message = str((body.get("message") if isinstance(body, dict) else None) or text)
    except (msgspec.DecodeError, ValueError):
        message = text.strip() or reason
    return ApiError(message or f"{verb} {path}: HTTP {status}", status=status)


MAX_RETRIES = 10
"""client-go's rest.Request maxRetries: how many times one request is retried after a
Retry-After answer (or, for GET, a reset connection)."""


def retry_after(resp: _Answer) -> int | None:
    """checkWait: the seconds a 429 or 5xx answer asks to wait before retrying (its
    ``Retry-After`` header, whole seconds only); None when the answer is not to be retried."""
    if resp.status_code != 429 and resp.status_code < 500:
        return None
    value = resp.headers.get("retry-after", "").strip()
    try:
        return int(value)
    except ValueError:
        return None


def _fast_error(e: BaseException) -> TransportError:
    """A fast-transport failure as a :class:`TransportError` of the kind client-go's utilnet
    would see in Go's transport error."""
    if isinstance(e, _http.Timeout):
        return TransportError("timed out", "timeout")
    if isinstance(e, _http.ConnectFailed):
        if e.cause is None:
            return TransportError("timed out connecting", "timeout")
        kind = "refused" if isinstance(e.cause, ConnectionRefusedError) else "other"
        return TransportError(str(e.cause) or type(e.cause).__name__, kind)
    if isinstance(e, zlib.error):
        return TransportError(f"cannot decode the response: {e}", "other")
    # Reset, broken pipe, closed or cut mid-reply, garbled: IsConnectionReset / IsProbableEOF.
    return TransportError(str(e) or type(e).__name__, "eof")


def _informer_errors() -> tuple[type[Exception], ...]:
    """What ends an informer's ListAndWatch with an error (then backoff and relist): API and
    transport errors, undecodable objects, and httpx's errors once httpx is imported (before
    that, none can be raised: matching them must not import it)."""
    errors: tuple[type[Exception], ...] = (ApiError, FieldError, OSError, ValueError)
    # getattr: another thread may be importing httpx right now (its class not defined yet).
    http_error = getattr(sys.modules.get("httpx"), "HTTPError", None)
    return (*errors, http_error) if http_error is not None else errors


def _header_lines(headers: Mapping[str, str]) -> str:
    """Headers as the fast transport takes them: ``Name: value\r\n`` lines."""
    return "".join(f"{k}: {v}\r\n" for k, v in headers.items())


_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")


def _fast_pool(config: ClusterConfig, verify: ssl.SSLContext | bool, user_agent: str) -> _http.Pool | None:
    """The fast transport to ``config.server``, or None when requests must go through httpx:
    a proxy named in the environment (httpx decides which requests use it, NO_PROXY included)
    or a URL it does not handle."""
    if any(v and k.lower() in _PROXY_VARIABLES for k, v in os.environ.items()):
        return None
    parts = urlsplit(config.server)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    ctx: ssl.SSLContext | None = None
    if parts.scheme == "https":
        if isinstance(verify, ssl.SSLContext):
            ctx = verify
        else:  # insecure-skip-tls-verify, as httpx's verify=False
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
    # Accept-Encoding: gzip, as Go's transport adds (and undoes) for client-go.
    return _http.Pool(parts.hostname, port, ssl_context=ctx, server_hostname=config.tls_server_name or None,
                      headers={"User-Agent": user_agent, "Accept": "application/json", "Accept-Encoding": "gzip"})


class ApiClient:
    """The scheduler's connection to the API server (clientConnection: qps, burst).

    Like client-go's rest client it retries a request by itself (at most :data:`MAX_RETRIES`
    times, each after a new rate-limiter token) when the server answers 429 or 5xx with a
    ``Retry-After`` header — after those seconds — and, for GETs only, when the connection was
    reset or closed mid-request — after 1 s. Writes whose connection failed are not retried
    (they may have been applied). ``timeout`` bounds a request and its retries together (the
    context deadline client-go's Timeout sets); the first rate-limiter wait is not counted."""

    def __init__(self, config: ClusterConfig, *, qps: float = 50.0, burst: int = 100, timeout: float = 30.0,
                 user_agent: str = "kubesched", check_calls: bool = True,
                 calls: Collection[ApiCall] | None = None) -> None:
        """``calls``: the only calls this client may make (default :data:`API_CALLS`, the
        scheduler's); a read-only client (kubesched.cluster.snapshot) passes its LISTs."""
        self.config = config
        self.limiter = TokenBucket(qps, burst)
        self.timeout = timeout
        self.check_calls = check_calls
        self._declared = _DECLARED if calls is None else frozenset(calls)
        self.calls: Counter[ApiCall] = Counter()
        self.retries: Counter[ApiCall] = Counter()
        self._calls_lock = threading.Lock()
        self._temp: list[str] = []
        self._tokens = _TokenSource(config)
        self._verify = _ssl_context(config, self._temp)
        self._extensions = {"sni_hostname": config.tls_server_name} if config.tls_server_name else {}
        self._user_agent = user_agent
        # The httpx client (proxies, tests' mock transports and hooks) is built on first use: see
        # :attr:`_http`. Every request but watches goes through the fast transport
        # (kubesched.cluster._http) when it can: while _http is still the client built here (a test
        # may swap in a mock transport) and no proxy is configured.
        self._httpx: httpx.Client | None = None
        self._own_http: httpx.Client | None = None
        self._httpx_lock = threading.Lock()
        self._fast = _fast_pool(config, self._verify, user_agent)
        self._prefix = urlsplit(config.server).path.rstrip("/")

    @property
    def _http(self) -> httpx.Client:
        """The httpx client: this client's own (built, and httpx imported, on first use), or one
        a test swapped in."""
        http = self._httpx
        if http is None:
            with self._httpx_lock:
                if self._httpx is None:
                    # TCP_NODELAY: a request's headers and body go out in separate writes; with
                    # Nagle the body would wait for the server's delayed ACK.
                    transport = httpx.HTTPTransport(
                        verify=self._verify, limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
                        socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
                    self._httpx = self._own_http = httpx.Client(
                        base_url=self.config.server, timeout=self.timeout, transport=transport,
                        headers={"User-Agent": self._user_agent, "Accept": "application/json"})
                http = self._httpx
        return http

    @_http.setter
    def _http(self, client: httpx.Client) -> None:
        self._httpx = client

    @classmethod
    def from_kubeconfig(cls, kubeconfig: str = "", *, context: str | None = None, qps: float = 50.0,
                        burst: int = 100) -> ApiClient:
        return cls(load_cluster_config(kubeconfig, context=context), qps=qps, burst=burst)

    @classmethod
    def for_client_connection(cls, cc: ClientConnection, *, kubeconfig: str = "", master: str = "",
                              context: str | None = None, user_agent: str = "kubesched") -> ApiClient:
        """The client kube-scheduler builds from ``clientConnection`` (kubeconfig, qps, burst);
        a ``--kubeconfig`` / ``--master`` flag overrides the configuration's kubeconfig /
        server."""
        cfg = load_cluster_config(kubeconfig or cc.kubeconfig, context=context, master=master)
        return cls(cfg, qps=cc.qps, burst=cc.burst, user_agent=user_agent)

    def close(self) -> None:
        if self._httpx is not None:
            self._httpx.close()
        if self._fast is not None:
            self._fast.close()
        for path in self._temp:
            with contextlib.suppress(OSError):
                os.unlink(path)
        self._temp.clear()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- plumbing
    def _note(self, verb: str, r: ApiResource, subresource: str) -> ApiCall:
        call = ApiCall(verb, r.group, r.plural, subresource)
        if self.check_calls and call not in self._declared:
            if self._declared is not _DECLARED:
                raise KubeschedError(f"undeclared API call {call}: this client may only make {len(self._declared)} "
                                     "declared calls")
            raise KubeschedError(f"undeclared API call {call}: add it to kubesched.cluster.live.API_CALLS "
                                 "(and to the ClusterRole)")
        with self._calls_lock:
            self.calls[call] += 1
        return call

    def _retry_wait(self, call: ApiCall, attempts: int, wait: float, deadline: float, why: str) -> bool:
        """withRetry.IsNextRetry + Before: whether to try ``call`` again (then after sleeping
        ``wait`` s); not beyond :data:`MAX_RETRIES` nor past the request's deadline."""
        if attempts >= MAX_RETRIES or time.monotonic() + wait >= deadline:
            return False
        log.debug("retrying %s in %.0f s (attempt %d): %s", call, wait, attempts + 1, why)
        with self._calls_lock:
            self.retries[call] += 1
        if wait > 0:
            time.sleep(wait)
        return True

    def _headers(self, content_type: str | None = None) -> dict[str, str]:
        h: dict[str, str] = {}
        auth = self._tokens.header()
        if auth:
            h["Authorization"] = auth
        if content_type:
            h["Content-Type"] = content_type
        return h

    def request(self, verb: str, resource: ApiResource | str, *, namespace: str = "", name: str = "",
                subresource: str = "", params: Mapping[str, str] | None = None, body: Any = None,
                content_type: str = "application/json", timeout: float | None = None,
                limiter: TokenBucket | None = None, guard: Callable[[], None] | None = None,
                prepaid: bool = False) -> Json:
        """One API call (with the rest client's retries, see the class); raises ApiError (with
        ``status`` when the server answered, a :class:`TransportError` when it did not).
        ``timeout`` / ``limiter`` replace the client's own for this call; ``guard`` is called
        before each attempt goes out, once the rate limiter let it (it may raise). ``prepaid``:
        the first attempt's token was taken already (TokenBucket.try_acquire)."""
        r = RESOURCES[resource] if isinstance(resource, str) else resource
        call = self._note(verb, r, subresource)
        path = r.path(namespace, name, subresource)
        method = _METHODS[verb]
        limiter = limiter or self.limiter
        if not prepaid:
            limiter.acquire()  # the first throttle is not part of the timeout (client-go: tryThrottle, then the ctx)
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        # Encoded once, by msgspec (a JSON encoder in C), for every attempt.
        content = msgspec.json.encode(body) if body is not None else None
        attempts = 0
        while True:
            if guard is not None:
                guard()
            try:
                resp = self._send(method, path, params, content, content_type, deadline)
            except TransportError as e:
                err = TransportError(f"{verb} {path}: {e}", e.kind)
                # Only a GET is retried after a broken connection: a write may have been applied.
                if method == "GET" and err.kind == "eof" and self._retry_wait(call, attempts, 1.0, deadline, str(err)):
                    attempts += 1
                    limiter.acquire()
                    continue
                raise err from None
            if resp.status_code == 401:
                self._tokens.invalidate()
            if resp.status_code >= 400:
                wait = retry_after(resp)
                if wait is not None and self._retry_wait(call, attempts, float(wait), deadline,
                                                         f"HTTP {resp.status_code}, Retry-After {wait}"):
                    attempts += 1
                    limiter.acquire()
                    continue
                raise _error(verb, path, resp.status_code, resp.reason_phrase, resp.content)
            try:
                out = msgspec.json.decode(resp.content) if resp.content else {}
            except (msgspec.DecodeError, ValueError):
                raise ApiError(f"{verb} {path}: the response is not JSON") from None
            return out if isinstance(out, dict) else {}

    def get_json(self, path: str, timeout: float | None = None) -> Json:
        """GET a non-resource path (``/version``, ``/healthz``) once; raises ApiError."""
        self.limiter.acquire()
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        try:
            resp = self._send("GET", path, None, None, "application/json", deadline)
        except TransportError as e:
            raise TransportError(f"get {path}: {e}", e.kind) from None
        if resp.status_code >= 400:
            raise _error("get", path, resp.status_code, resp.reason_phrase, resp.content)
        try:
            out = msgspec.json.decode(resp.content) if resp.content else {}
        except (msgspec.DecodeError, ValueError):
            raise ApiError(f"get {path}: the response is not JSON") from None
        return out if isinstance(out, dict) else {}

    def _send(self, method: str, path: str, params: Mapping[str, str] | None, content: bytes | None,
              content_type: str, deadline: float) -> _Answer:
        """One attempt of a request: through the fast transport when the client may use it,
        else through httpx; a failure to get an answer is a :class:`TransportError`."""
        headers = self._headers(content_type if content is not None else None)
        fast = self._fast_for(method, path, params, content, headers)
        if fast is None:
            try:
                return self._http.request(method, path, params=dict(params or {}), content=content, headers=headers,
                                          timeout=max(deadline - time.monotonic(), 0.001),
                                          extensions=self._extensions)
            except httpx.HTTPError as e:
                raise TransportError(str(e) or type(e).__name__, _transport_error("", e).kind) from None
        if content is None and method not in ("GET", "HEAD"):
            content = b""
        lines = _header_lines(headers)
        try:
            return fast.request(method, self._target(path, params), content, headers=lines, deadline=deadline)
        except (_http.Timeout, _http.ConnectFailed, zlib.error, OSError, http_client.HTTPException) as e:
            raise _fast_error(e) from None

    def _fast_for(self, method: str, path: str, params: Mapping[str, str] | None, content: bytes | None,
                  headers: Mapping[str, str]) -> FastPool | None:
        """The fast transport for this request, or None when it must go through httpx (no
        fast transport, a swapped httpx client or response hooks: a test's). A test's request
        hooks see the request first, as httpx would show it."""
        http = self._httpx
        if http is None:  # no httpx client yet: none swapped in, no hooks on it
            return self._fast
        fast = self._fast if http is self._own_http and not http.event_hooks["response"] else None
        if fast is not None and http.event_hooks["request"]:
            probe = http.build_request(method, path, params=dict(params or {}), content=content, headers=headers)
            for hook in http.event_hooks["request"]:
                hook(probe)
        return fast

    def _target(self, path: str, params: Mapping[str, str] | None) -> str:
        """The request target (path and query) the fast transport sends."""
        target = quote(self._prefix + path, safe="/:@!$&'()*+,;=~")
        if params:
            target += "?" + urlencode(params)
        return target

    def list_pages(self, resource: ApiResource | str, *, namespace: str = "", field_selector: str = "",
                   label_selector: str = "", resource_version: str = "",
                   limit: int = 0) -> tuple[list[Json], str, bool]:
        """LIST as client-go's pager does it: ``limit`` items per page (0: one page), following
        ``continue`` tokens (later pages drop the resourceVersion); a continuation that expired
        (410) falls back to one unpaginated list. Returns (items with kind and apiVersion filled
        in, the list's resourceVersion, whether the server paginated)."""
        r = RESOURCES[resource] if isinstance(resource, str) else resource
        params: dict[str, str] = {}
        if field_selector:
            params["fieldSelector"] = field_selector
        if label_selector:
            params["labelSelector"] = label_selector
        first = dict(params)
        if resource_version:
            first["resourceVersion"] = resource_version
        if limit > 0:
            first["limit"] = str(limit)
        items: list[Json] = []
        rv = ""
        paginated = False
        page = first
        while True:
            try:
                body = self.request("list", r, namespace=namespace, params=page)
            except ApiError as e:
                if page is first or e.status != 410:
                    raise
                # pager.FullListIfExpired: start again without paging.
                body = self.request("list", r, namespace=namespace,
                                    params={k: v for k, v in first.items() if k != "limit"})
                items.clear()
            meta = body.get("metadata") or {}
            rv = str(meta.get("resourceVersion") or rv)
            for item in body.get("items") or []:
                if isinstance(item, dict):
                    item.setdefault("kind", r.kind)
                    item.setdefault("apiVersion", r.api_version)
                    items.append(item)
            token = meta.get("continue")
            if not token:
                return items, rv, paginated
            paginated = True
            page = {**params, "continue": str(token)}
            if limit > 0:
                page["limit"] = str(limit)

    def list(self, resource: ApiResource | str, *, namespace: str = "", field_selector: str = "",
             label_selector: str = "") -> tuple[list[Json], str]:
        """LIST (the current state, one page): (items with kind and apiVersion filled in, the
        list's resourceVersion). Follows ``continue`` tokens when the server pages."""
        items, rv, _ = self.list_pages(resource, namespace=namespace, field_selector=field_selector,
                                       label_selector=label_selector)
        return items, rv

    @contextlib.contextmanager
    def watch(self, resource: ApiResource | str, resource_version: str, *, namespace: str = "",
              field_selector: str = "", label_selector: str = "", timeout_seconds: int | None = None,
              bookmarks: bool = True) -> Iterator[WatchStream]:
        """WATCH from ``resource_version``; the stream's events are (type, object). Opening it
        is retried as client-go's Request.Watch does: after a Retry-After answer, or after 1 s
        when the connection broke or timed out (not when it was refused). Only those retries
        wait for the rate limiter."""
        r = RESOURCES[resource] if isinstance(resource, str) else resource
        call = self._note("watch", r, "")
        params = {"watch": "1", "resourceVersion": resource_version}
        if bookmarks:
            params["allowWatchBookmarks"] = "true"
        if field_selector:
            params["fieldSelector"] = field_selector
        if label_selector:
            params["labelSelector"] = label_selector
        if timeout_seconds:
            params["timeoutSeconds"] = str(timeout_seconds)
        path = r.path(namespace)
        # Not rate limited (client-go's Request.Watch: "We specifically don't want to rate limit
        # watches"): a watch re-opened after a cut must not queue behind binds. Retries are.
        read_timeout = (timeout_seconds + self.timeout) if timeout_seconds else None
        deadline = time.monotonic() + self.timeout
        headers = self._headers()
        fast = self._fast_for("GET", path, params, None, headers)
        if fast is not None:
            with self._watch_fast(fast, call, path, params, headers, read_timeout, deadline) as stream:
                yield stream
            return
        timeout = httpx.Timeout(self.timeout, read=read_timeout)
        attempts = 0
        while True:
            with contextlib.ExitStack() as stack:
                try:
                    resp = stack.enter_context(self._http.stream(
                        "GET", path, params=params, headers=headers, timeout=timeout,
                        extensions=self._extensions))
                except httpx.HTTPError as e:
                    err = _transport_error(f"watch {path}", e)
                    if err.kind in ("eof", "timeout") and self._retry_wait(call, attempts, 1.0, deadline, str(err)):
                        attempts += 1
                        self.limiter.acquire()
                        continue
                    raise err from None
                if resp.status_code >= 400:
                    try:
                        resp.read()
                    except httpx.HTTPError as e:
                        raise _transport_error(f"watch {path}", e) from None
                    if self._watch_refused(call, path, attempts, deadline, resp):
                        attempts += 1
                        self.limiter.acquire()
                        continue
                try:
                    yield WatchStream(resp)
                except httpx.HTTPError as e:
                    raise _transport_error(f"watch {path}", e) from None
                return

    @contextlib.contextmanager
    def _watch_fast(self, fast: FastPool, call: ApiCall, path: str, params: Mapping[str, str],
                    headers: Mapping[str, str], read_timeout: float | None, deadline: float) -> Iterator[WatchStream]:
        """:meth:`watch` through the fast transport: the same retries, the stream read by
        kubesched.cluster._http (httpx's streaming response cost the informers 5-7 % of the
        scheduler's CPU at 5000 pods)."""
        target = self._target(path, params)
        lines = _header_lines(headers)
        attempts = 0
        while True:
            try:
                stream = fast.stream("GET", target, headers=lines, deadline=deadline, read_timeout=read_timeout)
            except (_http.Timeout, _http.ConnectFailed, OSError, http_client.HTTPException) as e:
                err = _fast_error(e)
                err = TransportError(f"watch {path}: {err}", err.kind)
                if err.kind in ("eof", "timeout") and self._retry_wait(call, attempts, 1.0, deadline, str(err)):
                    attempts += 1
                    self.limiter.acquire()
                    continue
                raise err from None
            with contextlib.closing(stream):
                if stream.status_code >= 400:
                    try:
                        stream.read()
                    except (_http.Timeout, zlib.error, OSError, http_client.HTTPException) as e:
                        err = _fast_error(e)
                        raise TransportError(f"watch {path}: {err}", err.kind) from None
                    if self._watch_refused(call, path, attempts, deadline, stream):
                        attempts += 1
                        self.limiter.acquire()
                        continue
                yield WatchStream(stream)
                return

    def _watch_refused(self, call: ApiCall, path: str, attempts: int, deadline: float, resp: _Answer) -> bool:
        """A watch answered with an error status: True to try again (Retry-After, after
        sleeping it), else raises its ApiError (:class:`GoneError` for 410)."""
        wait = retry_after(resp)
        if wait is not None and self._retry_wait(call, attempts, float(wait), deadline,
                                                 f"HTTP {resp.status_code}, Retry-After {wait}"):
            return True
        refused = _error("watch", path, resp.status_code, resp.reason_phrase, resp.content)
        if resp.status_code == 410:
            raise GoneError(str(refused), status=410)
        raise refused


# ================================================================ informers
@dataclass(frozen=True, slots=True)
class Backoff:
    """The reflector's backoff manager (client-go: wait.NewExponentialBackoffManager(800ms,
    30s, 2min, 2.0, 1.0)): 800 ms doubling to 30 s, each wait jittered up to twice its
    length, back to 800 ms when the previous backoff started more than 2 minutes ago."""

    initial: float = 0.8
    maximum: float = 30.0
    factor: float = 2.0
    jitter: float = 1.0
    reset_after: float = 120.0


class _BackoffState:
    """exponentialBackoffManagerImpl.getNextBackoff over :class:`Backoff`."""

    def __init__(self, cfg: Backoff, rng: random.Random) -> None:
        self.cfg = cfg
        self.rng = rng
        self.duration = cfg.initial
        self.last_start = time.monotonic()

    def next(self) -> float:
        now = time.monotonic()
        if now - self.last_start > self.cfg.reset_after:
            self.duration = self.cfg.initial
        self.last_start = now
        d = self.duration
        self.duration = min(self.duration * self.cfg.factor, self.cfg.maximum)
        return d * (1.0 + self.rng.random() * self.cfg.jitter)


ADD, UPDATE, DELETE = "add", "update", "delete"
ASSIGNED_PODS = "pods/assigned"
PENDING_PODS = "pods/pending"
LIST_PAGE_SIZE = 500  # client-go pager.defaultPageSize
ListAnswer = tuple[list[Json], str, bool]  # ApiClient.list_pages': items, resourceVersion, paginated
MIN_WATCH_DURATION = 1.0  # watchHandler: a watch shorter than this that saw no event is an error


@dataclass(frozen=True, slots=True)
class Change:
    """What an informer saw: ``resource`` is a plural (``pods/assigned`` and ``pods/pending``
    for the two pod sets), ``action`` add / update / delete; ``old`` is None for an add. For a
    delete, ``new`` is None when the object is gone, or the object after an update that made
    it leave the pod set (e.g. a pending pod bound)."""

    resource: str
    action: str
    old: Any
    new: Any


ChangeHandler = Callable[[Change], None]


def decode(r: ApiResource, raw: Json, prev: Any = None, features: Features | None = None) -> Any:
    """A JSON object from the API as kubesched's typed object (FieldError if it cannot be read).
    ``prev``: the informer's previous version of the object, whose unchanged parts a pod's
    parse reuses (parse_pod). ``features``: the release whose semantics read pods."""
    raw.setdefault("kind", r.kind)
    raw.setdefault("apiVersion", r.api_version)
    if r.kind == "Pod":
        return parse_pod(raw, prev if isinstance(prev, Pod) else None, json_decoded=True, features=features)
    if r.kind == "Node":
        return parse_node(raw, json_decoded=True)
    dra = DRA_PARSERS.get(r.kind)
    if dra is not None:
        return dra(raw)
    entry = PARSERS.get(r.kind)
    if entry is None:
        return raw
    return entry[1](raw)


def _key(meta: Mapping[str, Any]) -> tuple[str, str]:
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _rv_unavailable(e: ApiError) -> bool:
    """isExpiredError || isTooLargeResourceVersionError: a list at this resourceVersion cannot
    be served (a quorum read, resourceVersion "", will be)."""
    return e.status == 410 or "too large resource version" in str(e).lower()


class _WatchEnded(Exception):
    """ListAndWatch returns (the reflector backs off, then relists)."""


class Informer:
    """A reflector (LIST + WATCH) feeding a store of typed objects and a change handler.

    It is client-go's Reflector.ListAndWatch under wait.BackoffUntil:

    - LIST at resourceVersion "0" the first time (the API server's watch cache, in pages of
      500), at the last resourceVersion seen on a relist, or at "" (a quorum read) when that
      one is unavailable (410 / too large);
    - WATCH from the last resourceVersion seen (bookmarks included). A stream that ends —
      closed by the server, reset, cut mid-event, timed out — is watched again at once from
      there: no backoff, no relist. Only a watch that lasted under a second without a single
      event counts as an error;
    - a watch request refused at the connection, or answered 429 (also as an ERROR event),
      is sent again after the backoff; any other error (410 Gone, another status, an
      undecodable event, a failed list) ends ListAndWatch: backoff, then relist.

    Store updates and handler calls happen under ``lock`` (the scheduler's), one at a time,
    in the order the API sent them."""

    def __init__(self, client: ApiClient, resource: ApiResource, *, on_change: Callable[[str, Any, Any], None],
                 lock: AbstractContextManager[Any], field_selector: str = "", backoff: Backoff = Backoff(),
                 watch_timeout: float = 300.0, rng: random.Random | None = None,
                 features: Features | None = None, first_list: Callable[[], ListAnswer | None] | None = None) -> None:
        """``first_list``: the answer to this informer's first LIST, sent ahead of it
        (:class:`FirstLists`); None from it, or no ``first_list``, and the informer sends it."""
        self.client = client
        self._first_list = first_list
        self.resource = resource
        self.features = features
        self.field_selector = field_selector
        self._on_change = on_change
        self._lock = lock
        self.backoff = backoff
        self.watch_timeout = watch_timeout
        self._rng = rng if rng is not None else random.Random()
        self.store: dict[tuple[str, str], Any] = {}
        self.by_namespace: dict[str, dict[str, Any]] = {}
        self.resource_version = ""
        self.synced = threading.Event()
        self.relists = 0  # lists tried after the first one succeeded
        self.rewatches = 0  # watches that ended (and were, or will be, followed by another)
        self.errors = 0  # ListAndWatch ending with an error, watch requests backed off
        self.watch_gaps: deque[float] = deque(maxlen=1000)
        """Seconds from the end of a watch to the next watch's answer (the time the informer
        was blind), one per re-watch."""
        self._rv_gone = False  # isLastSyncResourceVersionUnavailable
        self._paginated = False
        self._watch_ended_at: float | None = None
        self._stop = threading.Event()
        self._stream: WatchStream | None = None
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"informer-{self.resource.plural}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        stream = self._stream
        if stream is not None:
            stream.abort()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    # ---------------------------------------------------------------- reads
    def get(self, namespace: str, name: str) -> Any:
        return self.store.get((namespace, name))

    def items(self) -> list[Any]:
        return list(self.store.values())

    def in_namespace(self, namespace: str) -> list[Any]:
        return list(self.by_namespace.get(namespace, {}).values())

    # ---------------------------------------------------------------- the reflector
    def _run(self) -> None:
        """Reflector.Run: wait.BackoffUntil(ListAndWatch, backoffManager, sliding)."""
        backoff = _BackoffState(self.backoff, self._rng)
        while not self._stop.is_set():
            try:
                self._list_and_watch(backoff)
            except _WatchEnded as e:
                log.info("informer %s: %s", self.resource.plural, e)
            except _informer_errors() as e:
                if self._stop.is_set():
                    return
                self.errors += 1
                log.info("informer %s: %s", self.resource.plural, e)
            except Exception:  # noqa: BLE001 - a handler bug must not kill the informer silently
                self.errors += 1
                log.exception("informer %s: unexpected error", self.resource.plural)
            if self._stop.is_set():
                return
            self._stop.wait(backoff.next())

    def _list_and_watch(self, backoff: _BackoffState) -> None:
        self._list()
        while not self._stop.is_set():
            start = time.monotonic()
            try:
                count = self._watch()
            except TransportError as e:
                if e.kind != "refused":
                    raise
                # isWatchErrorRetriable: the API server is not there; resume the watch after backoff.
                self.errors += 1
                log.info("informer %s: %s - backing off", self.resource.plural, e)
                self._stop.wait(backoff.next())
                continue
            except GoneError as e:
                raise _WatchEnded(f"watch closed with: {e}") from None
            except ApiError as e:
                if e.status != 429:
                    raise
                self.errors += 1
                log.info("informer %s: watch returned 429 - backing off", self.resource.plural)
                self._stop.wait(backoff.next())
                continue
            if self._stop.is_set():
                return
            if count == 0 and time.monotonic() - start < MIN_WATCH_DURATION:
                self.errors += 1
                raise _WatchEnded("very short watch: unexpected watch close - watch lasted less than a second "
                                  "and no items received")

    def _decode(self, raw: Json, prev: Any = None) -> Any:
        try:
            return decode(self.resource, raw, prev, self.features)
        except FieldError as e:
            meta = raw.get("metadata") or {}
            log.warning("informer %s: skipping %s/%s: %s", self.resource.plural, meta.get("namespace", ""),
                        meta.get("name", ""), e)
            return None

    def _list(self) -> None:
        """Reflector.list: resourceVersion and paging as relistResourceVersion and the pager."""
        if self._rv_gone:
            rv = ""
        else:
            rv = self.resource_version or "0"
        limit = 0 if rv not in ("", "0") and not self._paginated else LIST_PAGE_SIZE
        if self.synced.is_set():
            self.relists += 1
        first, self._first_list = self._first_list, None
        answer = first() if first is not None and rv == "0" else None
        if answer is not None:  # this very LIST, sent ahead (FirstLists)
            items, list_rv, paginated = answer
        else:
            try:
                items, list_rv, paginated = self.client.list_pages(
                    self.resource, field_selector=self.field_selector, resource_version=rv, limit=limit)
            except ApiError as e:
                if not _rv_unavailable(e):
                    raise
                self._rv_gone = True
                items, list_rv, paginated = self.client.list_pages(
                    self.resource, field_selector=self.field_selector, resource_version="", limit=LIST_PAGE_SIZE)
        if rv == "0" and paginated:
            self._paginated = True  # no watch cache: keep paging
        self._rv_gone = False
        fresh: dict[tuple[str, str], Any] = {}
        for raw in items:
            key = _key(raw.get("metadata") or {})
            # The store is written by this thread only: reading it unlocked is safe.
            obj = self._decode(raw, self.store.get(key))
            if obj is not None:
                fresh[key] = obj
        with self._lock:
            # DeltaFIFO.Replace: adds and updates in list order, then deletes of what is gone.
            # Every listed object the store held is an update, unchanged ones included (the
            # handlers decide: a pending pod's same-resourceVersion update is skipped, an
            # assigned pod's is AssignedPodUpdated, a PV's a PvUpdate move).
            old_store = self.store
            for key, obj in fresh.items():
                old = old_store.get(key)
                self._put(key, obj)
                if old is None:
                    self._on_change(ADD, None, obj)
                else:
                    self._on_change(UPDATE, old, obj)
            for key in [k for k in old_store if k not in fresh]:
                gone = self._pop(key)
                if gone is not None:
                    self._on_change(DELETE, gone, None)
            self.resource_version = list_rv
        self.synced.set()

    def _put(self, key: tuple[str, str], obj: Any) -> None:
        self.store[key] = obj
        self.by_namespace.setdefault(key[0], {})[key[1]] = obj

    def _pop(self, key: tuple[str, str]) -> Any:
        obj = self.store.pop(key, None)
        ns = self.by_namespace.get(key[0])
        if ns is not None:
            ns.pop(key[1], None)
            if not ns:
                del self.by_namespace[key[0]]
        return obj

    def _watch(self) -> int:
        """One watch until its stream ends; returns how many events it delivered. Raises what
        the watch request or an ERROR event failed with."""
        timeout = int(self.watch_timeout * (1.0 + self._rng.random()))
        count = 0
        with self.client.watch(self.resource, self.resource_version, field_selector=self.field_selector,
                               timeout_seconds=timeout) as stream:
            self._stream = stream
            if self._watch_ended_at is not None:
                self.watch_gaps.append(time.monotonic() - self._watch_ended_at)
                self._watch_ended_at = None
            try:
                if self._stop.is_set():
                    return count
                for etype, raw in stream.events():
                    self._event(etype, raw)
                    count += 1
                    if self._stop.is_set():
                        return count
            finally:
                self._stream = None
                self._watch_ended_at = time.monotonic()
                self.rewatches += 1
        return count

    def _event(self, etype: str, raw: Json) -> None:
        meta = raw.get("metadata") or {}
        if etype == "ERROR":
            code = raw.get("code")
            message = str(raw.get("message") or "watch error")
            if code == 410:
                raise GoneError(message, status=410)
            raise ApiError(f"watch {self.resource.plural}: {message}", status=code if isinstance(code, int) else None)
        rv = str(meta.get("resourceVersion") or "")
        if etype == "BOOKMARK":
            if rv:
                self.resource_version = rv
            return
        if etype not in ("ADDED", "MODIFIED", "DELETED"):
            log.warning("informer %s: unable to understand watch event %r", self.resource.plural, etype)
            return
        key = _key(meta)
        # The store is written by this thread only: reading it unlocked is safe.
        obj = self._decode(raw, self.store.get(key)) if etype != "DELETED" else None
        with self._lock:
            old = self.store.get(key)
            if etype == "DELETED":
                if old is not None:
                    self._pop(key)
                    self._on_change(DELETE, old, None)
            elif obj is not None:
                self._put(key, obj)
                if old is None:
                    self._on_change(ADD, None, obj)
                else:
                    self._on_change(UPDATE, old, obj)
            if rv:
                self.resource_version = rv


# ================================================================ the claims' assume cache
def _version(claim: ResourceClaim) -> int | None:
    """getObjVersion: the resourceVersion as an integer (None when it is not one)."""
    try:
        return int(claim.meta.resource_version)
    except ValueError:
        return None


class ClaimCache:
    """The ResourceClaims the scheduler sees: util/assumecache's AssumeCache over the claims'
    informer. An object the scheduler wrote (:meth:`assume`, with what the API server returned)
    is seen at once, before the informer delivers it, so that the devices it allocated are not
    free again meanwhile; the informer's objects replace it only when newer (by
    resourceVersion), never an older one (a relist's unchanged objects are no change either).
    Every change — informer or assume — goes to ``on_change`` (action, old, new), as the
    cache's event handlers (the scheduling queue's ResourceClaim events) get them. Called
    under the scheduler's lock."""

    def __init__(self) -> None:
        self._latest: dict[tuple[str, str], ResourceClaim] = {}
        self.on_change: Callable[[str, Any, Any], None] | None = None

    def _emit(self, action: str, old: Any, new: Any) -> None:
        if self.on_change is not None:
            self.on_change(action, old, new)

    def informer_change(self, action: str, old: Any, new: Any) -> None:
        """The informer's add / update / delete (AssumeCache.add / update / delete)."""
        if action == DELETE:
            gone = self._latest.pop((old.namespace, old.name), None)
            self._emit(DELETE, gone if gone is not None else old, None)
            return
        if not isinstance(new, ResourceClaim):
            return
        key = (new.namespace, new.name)
        cur = self._latest.get(key)
        if cur is not None:
            have, got = _version(cur), _version(new)
            if have is not None and got is not None and got <= have:
                return  # not newer: an assumed object stays, a resync is no change
        self._latest[key] = new
        self._emit(ADD if cur is None else UPDATE, cur, new)

    def assume(self, claim: ResourceClaim) -> bool:
        """AssumeClaimAfterAPICall: ``claim`` as the API server stored it after the scheduler's
        write; False (nothing changes) when the cache holds no such claim (deleted meanwhile)
        or a newer version of it already."""
        key = (claim.namespace, claim.name)
        cur = self._latest.get(key)
        if cur is None:
            return False
        have, got = _version(cur), _version(claim)
        if have is not None and got is not None and got < have:
            log.debug("ResourceClaim %s is out of sync (stored: %d, assume: %d)", claim.key, have, got)
            return False
        self._latest[key] = claim
        self._emit(UPDATE, cur, claim)
        return True

    def get(self, namespace: str, name: str) -> ResourceClaim | None:
        return self._latest.get((namespace, name))

    def items(self) -> list[ResourceClaim]:
        return list(self._latest.values())


# ================================================================ listers
class LiveObjects:
    """kubesched.framework.ObjectLister over the informer stores (ResourceClaims through the
    :class:`ClaimCache`)."""

    def __init__(self, informers: Mapping[str, Informer], claims: ClaimCache | None = None) -> None:
        self._inf = informers
        self.claims = claims if claims is not None else ClaimCache()

    def _get(self, plural: str, namespace: str, name: str) -> Any:
        inf = self._inf.get(plural)
        return inf.get(namespace, name) if inf is not None else None

    def _all(self, plural: str) -> list[Any]:
        inf = self._inf.get(plural)
        return inf.items() if inf is not None else []

    def _ns(self, plural: str, namespace: str) -> list[Any]:
        inf = self._inf.get(plural)
        return inf.in_namespace(namespace) if inf is not None else []

    def pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        out: PersistentVolumeClaim | None = self._get("persistentvolumeclaims", namespace, name)
        return out

    def pvcs(self) -> Sequence[PersistentVolumeClaim]:
        return self._all("persistentvolumeclaims")

    def pv(self, name: str) -> PersistentVolume | None:
        out: PersistentVolume | None = self._get("persistentvolumes", "", name)
        return out

    def pvs(self) -> Sequence[PersistentVolume]:
        return self._all("persistentvolumes")

    def storage_class(self, name: str) -> StorageClass | None:
        out: StorageClass | None = self._get("storageclasses", "", name)
        return out

    def csinode(self, name: str) -> CSINode | None:
        out: CSINode | None = self._get("csinodes", "", name)
        return out

    def csidriver(self, name: str) -> CSIDriver | None:
        out: CSIDriver | None = self._get("csidrivers", "", name)
        return out

    def services(self, namespace: str) -> Sequence[Service]:
        return self._ns("services", namespace)

    def workloads(self, namespace: str) -> Sequence[Workload]:
        return [*self._ns("replicationcontrollers", namespace), *self._ns("replicasets", namespace),
                *self._ns("statefulsets", namespace)]

    def namespace(self, name: str) -> Namespace | None:
        ns: Namespace | None = self._get("namespaces", "", name)
        if ns is None and name:
            # Informer lag: the namespace exists (the pod could not exist otherwise); as
            # MemoryObjects does, it has only its name label until the informer catches up.
            ns = Namespace(ObjectMeta(name=name, labels={"kubernetes.io/metadata.name": name}))
        return ns

    def namespaces(self) -> Sequence[Namespace]:
        return self._all("namespaces")

    def pdbs(self) -> Sequence[PodDisruptionBudget]:
        return self._all("poddisruptionbudgets")

    def pod(self, namespace: str, name: str) -> Pod | None:
        out: Pod | None = self._get("pods", namespace, name)
        return out

    def pods(self, namespace: str) -> Sequence[Pod]:
        return self._ns("pods", namespace)

    def all_pods(self) -> list[Pod]:
        return self._all("pods")

    # resource.k8s.io/v1 (informed only when the DynamicResourceAllocation gate is on; without
    # it there are none, and DynamicResources is not in the registry either).
    def resource_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        return self.claims.get(namespace, name)

    def resource_claims(self) -> Sequence[ResourceClaim]:
        return self.claims.items()

    def device_classes(self) -> Mapping[str, DeviceClass]:
        return {c.name: c for c in self._all("deviceclasses")}

    def extended_resource_classes(self) -> Mapping[str, DeviceClass]:
        """The ExtendedResourceCache, fed by the DeviceClass informer: every class it holds."""
        return extended_resource_classes(self.device_classes())

    def resource_slices(self) -> Sequence[ResourceSlice]:
        return self._all("resourceslices")

    # scheduling.k8s.io/v1alpha2 (GenericWorkload): no informer for the workload API yet, so no
    # PodGroup is ever known live. GangScheduling's PreEnqueue then holds a pod naming a group
    # ("waiting for pods's pod group ... to appear"), as kube-scheduler would before the group
    # is created. Watching podgroups is left for when live mode takes on the alpha API.
    def pod_group(self, namespace: str, name: str) -> PodGroup | None:
        return None

    def pod_groups(self, namespace: str) -> Sequence[PodGroup]:
        return ()

    def node(self, name: str) -> Node | None:
        out: Node | None = self._get("nodes", "", name)
        return out

    def nodes(self) -> list[Node]:
        return self._all("nodes")


# ================================================================ events
EVENT_MAX_TRIES = 12  # tools/events maxTriesPerEvent
EVENT_RETRY_SLEEP = 10.0  # defaultSleepDuration, jittered by up to 25 %
EVENT_FINISH_TIME = 360.0  # finishTime: a series quiet this long is finished, a single event forgotten
EVENT_REFRESH_TIME = 1800.0  # refreshTime: every series is written again this often
MAX_QUEUED_EVENTS = 1000  # maxQueuedEvents


@dataclass(slots=True)
class _Cached:
    """An event of the broadcaster's cache (eventCache): its body as first written and its
    series (count 0: not repeated yet)."""

    body: Json
    event_time: float
    count: int = 0
    last_observed: float = 0.0


def _frozen(value: Any) -> Any:
    """A JSON value as a hashable one that compares as the value does (mappings by their items)."""
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _frozen(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    return value


def _event_key(body: Json) -> tuple[Any, ...]:
    """getKey: type, action, reason, reporting controller and instance, and the full
    references of the regarding and related objects (resourceVersion included); not the note.
    A tuple (as upstream's eventKey struct), not a serialisation: one per event written."""
    return (body.get("type"), body.get("action"), body.get("reason"), body.get("reportingController"),
            body.get("reportingInstance"), _frozen(body.get("regarding")), _frozen(body.get("related") or {}))


def _copy_event(body: Json) -> Json:
    """A copy of an event body that can be changed where the broadcaster changes one: its
    top-level keys (``series``) and its metadata (``resourceVersion``). The rest (references,
    note) is never changed after :meth:`EventBroadcaster.event` built it, so it is shared
    rather than deep-copied."""
    out = dict(body)
    meta = body.get("metadata")
    if isinstance(meta, dict):
        out["metadata"] = dict(meta)
    return out


class EventBroadcaster:
    """events.k8s.io/v1 Events as kube-scheduler v1.30 writes them: client-go's
    ``tools/events`` broadcaster (``events.NewEventBroadcasterAdapter`` over a client of its
    own, so with its own rate limiter: same qps and burst, apart from the scheduler's).

    - :meth:`event` never blocks: the event is queued (at most 1000 waiting; more are
      dropped) and written by background threads, several at once (upstream: a goroutine per
      event), so binds never wait for events.
    - Series (recordToSink): an event isomorphic to one already written (same type, action,
      reason, reporting controller and instance, regarding and related objects, note aside)
      becomes a series: the first repeat PATCHes ``series: {count: 2, lastObservedTime}`` onto
      the first event (creating it if it is gone); later repeats only count, written when the
      series ends (no repeat for 6 minutes) and every 30 minutes.
    - Retries (attemptRecording / recordEvent): a write the API server did not answer
      (connection refused or reset, timeout) is tried again after 10 s (jittered up to 12.5 s),
      at most 12 tries in all; a write it answered with an error status is not retried (a
      series create answered AlreadyExists is). 429 / 5xx answers with Retry-After are retried
      by the client itself, as client-go's rest client does.

    ``sleep_duration`` (the retry interval) is shortened by tests."""

    def __init__(self, client: ApiClient, *, limiter: TokenBucket | None = None,
                 sleep_duration: float = EVENT_RETRY_SLEEP, max_tries: int = EVENT_MAX_TRIES, workers: int = 4,
                 max_queued: int = MAX_QUEUED_EVENTS, hostname: str | None = None,
                 rng: random.Random | None = None) -> None:
        self.client = client
        self.limiter = limiter if limiter is not None else TokenBucket(client.limiter.qps, client.limiter.burst)
        self.sleep_duration = sleep_duration
        self.max_tries = max_tries
        self.max_queued = max_queued
        self.hostname = hostname or socket.gethostname()
        self._rng = rng or random.Random()
        # One lock, three conditions: writers wait for work, the dispatcher for timers (and for
        # events no writer is free to take), flush() for the pending count to reach 0. An event
        # wakes one idle writer and nothing else (one thread hand-off per event).
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)  # flush()
        self._writers_cv = threading.Condition(self._lock)
        self._dispatch_cv = threading.Condition(self._lock)
        self._idle_writers = 0
        self._incoming: deque[Json] = deque()  # events not yet through the cache step (bounded)
        self._ready: deque[tuple[Json, int]] = deque()  # (event, failed tries): writes to make
        self._timers: list[tuple[float, int, Json, int]] = []  # (due, seq, event, failed tries): retries
        self._seq = 0
        self._pending = 0  # events queued, handed to a writer or being written (not those waiting to retry)
        self._cache: dict[tuple[Any, ...], _Cached] = {}
        self._mu = threading.Lock()  # the cache (e.mu)
        self._stopped = False
        now = time.monotonic()
        self._next_finish = now + EVENT_FINISH_TIME
        self._next_refresh = now + EVENT_REFRESH_TIME
        self.sent = 0  # writes that succeeded (creates and series patches)
        self.dropped = 0  # events dropped because the queue was full
        self.rejected = 0  # writes the API server refused with a status: not retried
        self.retried = 0  # writes tried again after a failure
        self.gave_up = 0  # events dropped after max_tries failed writes
        self._threads = [threading.Thread(target=self._dispatch, name="event-broadcaster", daemon=True)]
        self._threads += [threading.Thread(target=self._write_loop, name=f"event-sink-{i}", daemon=True)
                          for i in range(max(workers, 1))]
        for t in self._threads:
            t.start()

    # ---------------------------------------------------------------- the recorder
    def event(self, regarding: Pod, related: Pod | None, event_type: str, reason: str, action: str, note: str,
              *, controller: str = "default-scheduler", write: bool = False) -> bool:
        """recorder.Eventf: queue one Event; False if the queue was full (dropped).

        ``write``: the caller may make the write itself (a binding worker whose bind is done:
        upstream's recordToSink goroutine would run meanwhile), which it does only when
        nothing else is waiting to be written and the rate limiter has a token now, so that it
        never waits for the limiter and events stay in order; the event takes the same steps
        (cache, series, retries) as a writer's. That spares waking a writer thread: at 5000
        pods, two thread hand-offs per bound pod."""
        now = time.time()
        body: Json = {
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": f"{regarding.name}.{time.time_ns():x}", "namespace": regarding.namespace or "default"},
            "eventTime": format_micro_time(now),
            "reportingController": controller,
            "reportingInstance": f"{controller}-{self.hostname}",
            "action": action, "reason": reason, "note": note[:1024], "type": event_type,
            "regarding": _object_reference(regarding),
        }
        if related is not None:
            body["related"] = _object_reference(related)
        with self._lock:
            if self._stopped or len(self._incoming) >= self.max_queued:
                self.dropped += 1
                return False
            self._pending += 1
            inline = write and not self._incoming and not self._ready and self.limiter.try_acquire()
            if not inline:
                self._incoming.append(body)
                if self._idle_writers:
                    self._writers_cv.notify()
                else:  # every writer is busy: the dispatcher takes it through the cache meanwhile
                    self._dispatch_cv.notify()
        if inline:
            record = self._to_record(body)
            if record is None:  # only added to a series
                with self._lock:
                    self._done_locked(1)
            else:
                self._write(record, 0, prepaid=True)
        return True

    # ---------------------------------------------------------------- the broadcaster
    def _dispatch(self) -> None:
        """The event watcher's other duties: events that arrive while every writer is busy go
        through the cache (recordToSink) to the writers' queue, so that the bounded incoming
        queue never waits for the API server; retries whose time has come; the periodic
        series work."""
        while True:
            with self._lock:
                while True:
                    if self._stopped:
                        return
                    now = time.monotonic()
                    due = bool(self._timers) and self._timers[0][0] <= now
                    drain = bool(self._incoming) and not self._idle_writers
                    if drain or due or now >= min(self._next_finish, self._next_refresh):
                        break
                    wake = min(self._next_finish, self._next_refresh, self._timers[0][0] if self._timers else now + 60)
                    # With events waiting for a writer, look again soon (a writer that frees up
                    # takes them itself and is not announced).
                    if self._incoming:
                        wake = min(wake, now + 0.05)
                    self._dispatch_cv.wait(max(wake - now, 0.0))
                incoming = self._take_incoming() if drain else []
                retries: list[tuple[Json, int]] = []
                while self._timers and self._timers[0][0] <= now:
                    _, _, ev, tries = heapq.heappop(self._timers)
                    retries.append((ev, tries))
                self._pending += len(retries)
            self._queue_records(incoming, retries)
            if now >= self._next_finish:
                self._next_finish = now + EVENT_FINISH_TIME
                self._finish_series()
            if now >= self._next_refresh:
                self._next_refresh = now + EVENT_REFRESH_TIME
                self._refresh_series()

    def _take_incoming(self) -> list[Json]:
        """Every event queued so far (the lock held)."""
        out = list(self._incoming)
        self._incoming.clear()
        return out

    def _queue_records(self, incoming: list[Json], retries: list[tuple[Json, int]]) -> None:
        """Put events through the cache step and queue the writes (and ``retries``) for the writers."""
        records = [(out, 0) for out in map(self._to_record, incoming) if out is not None]
        records += retries
        with self._lock:
            self._ready.extend(records)
            self._done_locked(len(incoming) - (len(records) - len(retries)))  # only added to a series
            if records:
                self._writers_cv.notify(len(records))

    def _done_locked(self, n: int) -> None:
        if n:
            self._pending -= n
            if self._pending <= 0:
                self._cond.notify_all()

    def _to_record(self, body: Json) -> Json | None:
        """recordToSink's cache step: the event to write (a copy), or None when it only adds to
        a series already written."""
        key = _event_key(body)
        now = time.time()
        with self._mu:
            cached = self._cache.get(key)
            if cached is None:
                self._cache[key] = _Cached(_copy_event(body), now)
                return body
            cached.count = cached.count + 1 if cached.count else 2
            cached.last_observed = now
            cached.body["series"] = {"count": cached.count, "lastObservedTime": format_micro_time(now)}
            return _copy_event(cached.body) if cached.count == 2 else None

    def _write_loop(self) -> None:
        """A writer (upstream: the goroutine recordToSink starts per event): takes the events
        queued so far through the cache step itself, then makes one write at a time."""
        while True:
            with self._lock:
                while not (self._stopped or self._incoming or self._ready):
                    self._idle_writers += 1
                    try:
                        self._writers_cv.wait()
                    finally:
                        self._idle_writers -= 1
                if self._stopped:
                    return
                incoming = self._take_incoming()
            if incoming:
                self._queue_records(incoming, [])
            with self._lock:
                if not self._ready:
                    continue
                body, tries = self._ready.popleft()
            self._write(body, tries)

    def _write(self, body: Json, tries: int, *, prepaid: bool = False) -> None:
        """One write of a pending event (its ``tries`` so far): done, or a retry scheduled."""
        try:
            retry = self._record(body, prepaid=prepaid)
        except Exception:  # noqa: BLE001 - a writer must not die
            log.exception("writing event %s", body.get("reason"))
            retry = False
        with self._lock:
            if retry:
                tries += 1
                if tries >= self.max_tries or self._stopped:
                    self.gave_up += 1
                    log.error("unable to write event %s for %s (retry limit exceeded!)", body.get("reason"),
                              (body.get("regarding") or {}).get("name"))
                else:
                    # Randomized so that many clients do not retry in step when the API server is back.
                    due = time.monotonic() + self.sleep_duration * (1.0 + 0.25 * self._rng.random())
                    self._seq += 1
                    heapq.heappush(self._timers, (due, self._seq, body, tries))
                    self.retried += 1
                    self._dispatch_cv.notify()
            self._done_locked(1)

    def _record(self, body: Json, *, prepaid: bool = False) -> bool:
        """recordEvent: one write (series: PATCH, or POST if the event is gone); True if it
        should be tried again. ``prepaid``: a limiter token was taken for the first request."""
        ns = str(body["metadata"]["namespace"])
        series = body.get("series")
        try:
            if series:
                try:
                    self.client.request("patch", "events", namespace=ns, name=str(body["metadata"]["name"]),
                                        body={"series": series}, content_type=PATCH_STRATEGIC, limiter=self.limiter,
                                        prepaid=prepaid)
                    self.sent += 1
                    return False
                except ApiError as e:
                    if e.status != 404:
                        raise
                prepaid = False  # spent on the patch
            fresh = _copy_event(body)
            fresh["metadata"].pop("resourceVersion", None)
            self.client.request("create", "events", namespace=ns, body=fresh, limiter=self.limiter, prepaid=prepaid)
            self.sent += 1
            return False
        except ApiError as e:
            what = f"event {body.get('reason')} for {(body.get('regarding') or {}).get('name')}"
            if e.status is not None:
                if e.status == 409 and series:
                    return True  # a series' create raced with its first write: safe to retry
                self.rejected += 1
                log.log(logging.DEBUG if e.status == 409 else logging.ERROR,
                        "server rejected %s (will not retry!): %s", what, e)
                return False
            log.info("unable to write %s (may retry after sleeping): %s", what, e)
            return True

    def _finish_series(self) -> None:
        """finishSeries: write the final count of series quiet for 6 minutes; forget them, and
        single events older than that."""
        limit = time.time() - EVENT_FINISH_TIME
        with self._mu:
            for key, cached in list(self._cache.items()):
                if cached.count:
                    if cached.last_observed < limit and not self._record(_copy_event(cached.body)):
                        del self._cache[key]
                elif cached.event_time < limit:
                    del self._cache[key]

    def _refresh_series(self) -> None:
        """refreshExistingEventSeries: write every series' count again (the Event's TTL)."""
        with self._mu:
            for cached in self._cache.values():
                if cached.count:
                    self._record(_copy_event(cached.body))

    # ---------------------------------------------------------------- lifecycle
    def flush(self, timeout: float = 5.0) -> bool:
        """Wait (at most ``timeout``) until every queued event was written or given up (events
        waiting to retry excepted); True if that happened."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def stop(self, timeout: float = 5.0) -> None:
        """Flush (at most ``timeout``), then stop: events waiting to retry are abandoned (the
        broadcaster's context is cancelled)."""
        self.flush(timeout)
        with self._lock:
            self._stopped = True
            self._cond.notify_all()
            self._writers_cv.notify_all()
            self._dispatch_cv.notify_all()
        for t in self._threads:
            t.join(timeout)


def _object_reference(pod: Pod) -> Json:
    return {"kind": "Pod", "apiVersion": "v1", "namespace": pod.namespace, "name": pod.name, "uid": pod.uid,
            "resourceVersion": pod.meta.resource_version}


# ================================================================ the cluster
_UNSET: Any = object()

# The pod informer ignores terminal pods (kube-scheduler: newPodInformer's field selector).
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"


@dataclass(slots=True)
class LiveOptions:
    """Knobs of the informers (tests shorten them)."""

    backoff: Backoff = field(default_factory=Backoff)
    watch_timeout: float = 300.0
    event_retry_sleep: float = EVENT_RETRY_SLEEP
    # The release whose semantics read the objects (pods' pod-level resources, sidecars).
    features: Features | None = None


def informed_resources(features: Features | None = None) -> tuple[str, ...]:
    """The plurals the live cluster keeps informers on: resource.k8s.io's only with the
    DynamicResourceAllocation gate on (scheduler.go creates those informers only then)."""
    features = features if features is not None else DEFAULT_FEATURES
    dra = DRA_INFORMED_RESOURCES if features.enabled("DynamicResourceAllocation") else ()
    return (*INFORMED_RESOURCES, *dra)


class FirstLists:
    """The informers' first LISTs -- each exactly as its informer sends it (Reflector.list at
    resourceVersion "0", in pages of :data:`LIST_PAGE_SIZE`, the pod informer's field selector)
    -- sent at once, one thread each, before there is a scheduler to feed: ``kubesched run``
    sends them as soon as its API client exists and imports and builds the scheduler (its
    plugins, cache and queue) while the API server answers. A :class:`LiveCluster` given them
    hands each informer the answer to its first LIST (:meth:`take`); a LIST that failed is sent
    again by its informer, as its first one."""

    def __init__(self, client: ApiClient, features: Features | None = None) -> None:
        self.client = client
        self._answers: dict[str, ListAnswer | None] = {}
        self._threads: dict[str, threading.Thread] = {}
        for plural in informed_resources(features):
            thread = threading.Thread(target=self._list, args=(plural,), name=f"first-list-{plural}", daemon=True)
            self._threads[plural] = thread
            thread.start()

    def _list(self, plural: str) -> None:
        answer: ListAnswer | None = None
        try:
            answer = self.client.list_pages(RESOURCES[plural], field_selector=POD_FIELD_SELECTOR if plural == "pods"
                                            else "", resource_version="0", limit=LIST_PAGE_SIZE)
        except Exception as e:  # noqa: BLE001 - the informer sends it again, and handles what fails then
            log.debug("first list of %s sent ahead: %s", plural, e)
        self._answers[plural] = answer

    def take(self, plural: str) -> ListAnswer | None:
        """The answer to the first LIST of ``plural`` once it has come (None: failed, not sent
        or taken already)."""
        thread = self._threads.pop(plural, None)
        if thread is None:
            return None
        thread.join()
        return self._answers.pop(plural, None)


class LiveCluster:
    """Informers over every resource the scheduler reads, the pod split, and the scheduler's
    actions on the API. ``scheduler_names``: the profiles' schedulerNames (pods of other
    schedulers are ignored). ``first_lists``: the informers' first LISTs, sent ahead."""

    def __init__(self, client: ApiClient, *, scheduler_names: Collection[str] = ("default-scheduler",),
                 options: LiveOptions | None = None, owns_client: bool = False,
                 first_lists: FirstLists | None = None) -> None:
        self.client = client
        self._first_lists = first_lists
        self.scheduler_names = frozenset(scheduler_names)
        self.options = options or LiveOptions()
        self.informers: dict[str, Informer] = {}
        self.claims = ClaimCache()
        self.objects = LiveObjects(self.informers, self.claims)
        self.events: EventBroadcaster | None = None
        self._handler: ChangeHandler | None = None
        self._owns_client = owns_client
        self._started = False

    @classmethod
    def connect(cls, kubeconfig: str = "", *, context: str | None = None, qps: float = 50.0, burst: int = 100,
                scheduler_names: Collection[str] = ("default-scheduler",),
                options: LiveOptions | None = None) -> LiveCluster:
        """Load the configuration (see :func:`load_cluster_config`) and connect."""
        client = ApiClient(load_cluster_config(kubeconfig, context=context), qps=qps, burst=burst)
        return cls(client, scheduler_names=scheduler_names, options=options, owns_client=True)

    # ---------------------------------------------------------------- pod split
    def is_pending(self, pod: Pod) -> bool:
        """An unassigned pod this scheduler is responsible for: addAllEventHandlers' filter for
        the scheduling queue (!assignedPod && responsibleForPod), on what the pod informer
        lists (its field selector drops Succeeded and Failed pods). A pod being deleted still
        is one: upstream keeps it queued and in the nominator until it is gone, and
        ScheduleOne's skipPodSchedule skips it when popped."""
        return not pod.node_name and pod.scheduler_name in self.scheduler_names and not pod.is_terminal

    @staticmethod
    def is_assigned(pod: Pod) -> bool:
        return bool(pod.node_name) and not pod.is_terminal

    def _pod_change(self, action: str, old: Pod | None, new: Pod | None) -> None:
        """FilteringResourceEventHandler for each pod set: a pod entering a set is an add,
        leaving it a delete, staying an update."""
        handler = self._handler
        if handler is None:
            return
        for resource, member in ((ASSIGNED_PODS, self.is_assigned), (PENDING_PODS, self.is_pending)):
            was = old is not None and member(old)
            now = new is not None and member(new)
            if was and now:
                handler(Change(resource, UPDATE, old, new))
            elif was:
                # Leaving the set: ``new`` is the object after the change, None if it is gone.
                handler(Change(resource, DELETE, old, new))
            elif now:
                handler(Change(resource, ADD, None, new))

    def _other_change(self, plural: str) -> Callable[[str, Any, Any], None]:
        def on_change(action: str, old: Any, new: Any) -> None:
            if self._handler is not None:
                self._handler(Change(plural, action, old, new))

        return on_change

    # ---------------------------------------------------------------- lifecycle
    def start(self, handler: ChangeHandler, lock: AbstractContextManager[Any]) -> None:
        """Start every informer; ``handler`` gets each change, called under ``lock``."""
        if self._started:
            raise KubeschedError("the live cluster is already started")
        self._started = True
        self._handler = handler
        opts = self.options
        self.events = EventBroadcaster(self.client, sleep_duration=opts.event_retry_sleep)
        for plural in self.informed_resources():
            r = RESOURCES[plural]
            on_change: Callable[[str, Any, Any], None]
            if plural == "pods":
                on_change = self._pod_change
            elif plural == "resourceclaims":
                # Through the assume cache, which tells the handler what changed.
                self.claims.on_change = self._other_change(plural)
                on_change = self.claims.informer_change
            else:
                on_change = self._other_change(plural)
            first = self._first_lists
            self.informers[plural] = Informer(
                self.client, r, on_change=on_change, lock=lock,
                field_selector=POD_FIELD_SELECTOR if plural == "pods" else "",
                backoff=opts.backoff, watch_timeout=opts.watch_timeout, features=opts.features,
                first_list=functools.partial(first.take, plural) if first is not None else None)
        for inf in self.informers.values():
            inf.start()

    def informed_resources(self) -> tuple[str, ...]:
        """The plurals this cluster keeps informers on (:func:`informed_resources`)."""
        return informed_resources(self.options.features)

    def wait_for_sync(self, timeout: float | None = None, stop: threading.Event | None = None) -> bool:
        """WaitForCacheSync: True once every informer listed once."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for inf in self.informers.values():
            while not inf.synced.wait(0.05):
                if (stop is not None and stop.is_set()) or (deadline is not None and time.monotonic() > deadline):
                    return False
        return True

    def stop(self) -> None:
        for inf in self.informers.values():
            inf._stop.set()  # noqa: SLF001 - all first, then wait: they stop in parallel
        for inf in self.informers.values():
            inf.stop()
        if self.events is not None:
            self.events.stop()
        if self._owns_client:
            self.client.close()

    # ---------------------------------------------------------------- actions
    def bind(self, pod: Pod, node: str, *, guard: Callable[[], None] | None = None) -> None:
        """POST pods/binding (DefaultBinder): the UID guards against a recreated pod. ``guard``
        is called right before the request goes out (after the rate limiter's wait): raising
        there stops it."""
        body = {"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        self.client.request("create", "pods", namespace=pod.namespace, name=pod.name, subresource="binding",
                            body=body, guard=guard)

    def patch_pod_status(self, pod: Pod, *, condition: PodCondition | None = None,
                         nominated_node_name: str | None = _UNSET) -> None:
        """PatchPodStatus: one strategic merge patch of pods/status with a condition (merged
        by type; lastTransitionTime moves only when the status changes) and/or
        status.nominatedNodeName (``""`` or None clears it)."""
        status: Json = {}
        if condition is not None:
            since = format_time(time.time())
            for c in (pod.raw.get("status") or {}).get("conditions") or []:
                if isinstance(c, dict) and c.get("type") == condition.type and c.get("status") == condition.status:
                    since = c.get("lastTransitionTime") or since
            status["conditions"] = [{"type": condition.type, "status": condition.status, "reason": condition.reason,
                                     "message": condition.message, "lastProbeTime": None,
                                     "lastTransitionTime": since}]
        if nominated_node_name is not _UNSET:
            status["nominatedNodeName"] = nominated_node_name or None
        if not status:
            return
        self.client.request("patch", "pods", namespace=pod.namespace, name=pod.name, subresource="status",
                            body={"metadata": {"uid": pod.uid}, "status": status}, content_type=PATCH_STRATEGIC)

    def delete_pod(self, pod: Pod, *, grace_period_seconds: int | None = None) -> None:
        """DELETE the pod with a UID precondition (a pod recreated under the same name is
        not touched: 409)."""
        body: Json = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": pod.uid}}
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        self.client.request("delete", "pods", namespace=pod.namespace, name=pod.name, body=body)

    def update_pv(self, pv: PersistentVolume) -> PersistentVolume:
        """PUT the PV (VolumeBinding: spec.claimRef set to the chosen claim). Its
        metadata.resourceVersion makes it conditional (409 if the PV changed meanwhile).
        Returns the PV as the API server stored it."""
        out: PersistentVolume = decode(RESOURCES["persistentvolumes"], self.client.request(
            "update", "persistentvolumes", name=pv.name, body=_json_body(pv.raw)))
        return out

    def update_pvc(self, pvc: PersistentVolumeClaim) -> PersistentVolumeClaim:
        """PUT the claim (VolumeBinding: the ``volume.kubernetes.io/selected-node`` annotation
        for its provisioner), conditional on its resourceVersion. Returns the stored claim."""
        out: PersistentVolumeClaim = decode(RESOURCES["persistentvolumeclaims"], self.client.request(
            "update", "persistentvolumeclaims", namespace=pvc.namespace, name=pvc.name, body=_json_body(pvc.raw)))
        return out

    def write_claim(self, write: ClaimWrite, *, sleep: Callable[[float], None] = time.sleep,
                    rng: random.Random | None = None) -> ResourceClaim | None:
        """Make the API calls of a :class:`ClaimWrite`; returns the claim as the API server
        stored it last (None when nothing was to be written). Raises ApiError with upstream's
        words when it cannot be done (the pod's binding cycle then fails and it is retried).

        - Deallocation (DynamicResources.PostFilter): one UpdateStatus without allocation
          and reservedFor, from the claim the scheduler saw (a conflict is an error).
        - Unreserve: a strategic merge patch of the status deleting the pod's reservedFor entry
          (by uid: no need for the latest claim), the claim's UID as precondition.
        - bindClaim: retry.RetryOnConflict(retry.DefaultRetry, ...): at most 5 attempts, 10 ms
          apart (10 % jitter); each attempt after a conflict GETs the claim first. An attempt
          fails when the claim is being deleted, or (to allocate) when it got allocated
          meanwhile; to allocate, the finalizer ``resource.kubernetes.io/delete-protection`` is
          added by an Update first (unless there), then one UpdateStatus sets
          ``status.allocation`` (with ``allocationTimestamp`` when DRADeviceBindingConditions
          and DRAResourceClaimDeviceStatus are on) and appends the pod to
          ``status.reservedFor``."""
        ns, name = write.namespace, write.name
        if write.deallocate:
            body = _json_body(write.seen)
            status = body.setdefault("status", {})
            status.pop("allocation", None)
            status.pop("reservedFor", None)
            return parse_resource_claim(self.client.request(
                "update", "resourceclaims", namespace=ns, name=name, subresource="status", body=body))
        stored: Json | None = None
        for uid in write.unreserve:
            patch = {"metadata": {"uid": write.uid}, "status": {"reservedFor": [{"$patch": "delete", "uid": uid}]}}
            stored = self.client.request("patch", "resourceclaims", namespace=ns, name=name, subresource="status",
                                         body=patch, content_type=PATCH_STRATEGIC)
        if write.allocation is None and not write.reserve:
            return parse_resource_claim(stored) if stored is not None else None
        rng = rng if rng is not None else random.Random()
        claim = _json_body(write.seen)
        for attempt in range(CLAIM_UPDATE_STEPS):
            if attempt:
                sleep(CLAIM_UPDATE_INTERVAL * (1.0 + CLAIM_UPDATE_JITTER * rng.random()))
                try:
                    claim = self.client.request("get", "resourceclaims", namespace=ns, name=name)
                except ApiError as e:
                    raise ApiError(f"get updated claim {ns}/{name} after conflict: {e}", status=e.status) from None
                log.debug("retrying the update of ResourceClaim %s/%s after a conflict", ns, name)
            try:
                return parse_resource_claim(self._bind_claim(write, claim))
            except ApiError as e:
                if e.status != 409 or attempt == CLAIM_UPDATE_STEPS - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _bind_claim(self, write: ClaimWrite, claim: Json) -> Json:
        """One attempt of bindClaim's RetryOnConflict function on ``claim`` (a copy of the
        API's object, changed in place)."""
        ns, name = write.namespace, write.name
        meta = claim.setdefault("metadata", {})
        status = claim.setdefault("status", {})
        if meta.get("deletionTimestamp"):
            raise ApiError(f"claim {ns}/{name} got deleted in the meantime")
        if write.allocation is not None:
            if status.get("allocation"):
                raise ApiError(f"claim {ns}/{name} got allocated elsewhere in the meantime")
            finalizers = list(meta.get("finalizers") or [])
            if CLAIM_FINALIZER not in finalizers:
                meta["finalizers"] = [*finalizers, CLAIM_FINALIZER]
                try:
                    claim = self.client.request("update", "resourceclaims", namespace=ns, name=name, body=claim)
                except ApiError as e:
                    raise ApiError(f"add finalizer to claim {ns}/{name}: {e}", status=e.status) from None
                status = claim.setdefault("status", {})
            status["allocation"] = _json_body(write.allocation)
        status["reservedFor"] = [*(status.get("reservedFor") or []), *(_json_body(c) for c in write.reserve)]
        if write.allocation_timestamp:
            allocation = status.get("allocation")
            if not allocation:
                raise ApiError(f"claim {ns}/{name} got deallocated elsewhere in the meantime")
            allocation.setdefault("allocationTimestamp", format_time(time.time()))
        try:
            return self.client.request("update", "resourceclaims", namespace=ns, name=name, subresource="status",
                                       body=claim)
        except ApiError as e:
            what = "allocation and reservation" if write.allocation is not None else "reservation"
            raise ApiError(f"add {what} to claim {ns}/{name}: {e}", status=e.status) from None

    def record_event(self, regarding: Pod, related: Pod | None, event_type: str, reason: str, action: str,
                     note: str, *, controller: str = "default-scheduler", write: bool = False) -> bool:
        """``write``: see :meth:`EventBroadcaster.event`."""
        if self.events is None:
            return False
        return self.events.event(regarding, related, event_type, reason, action, note, controller=controller,
                                 write=write)


CLAIM_FINALIZER = "resource.kubernetes.io/delete-protection"  # resourceapi.Finalizer
# client-go's retry.DefaultRetry: Steps 5, Duration 10 ms, Factor 1.0, Jitter 0.1.
CLAIM_UPDATE_STEPS = 5
CLAIM_UPDATE_INTERVAL = 0.01
CLAIM_UPDATE_JITTER = 0.1


@dataclass(frozen=True, slots=True)
class ClaimWrite:
    """What DynamicResources asks of one ResourceClaim, in the API's terms (see
    :func:`claim_write`): ``seen`` is the claim as the scheduler read it (the first attempt
    starts from it: its resourceVersion makes the update conditional)."""

    namespace: str
    name: str
    uid: str
    seen: Mapping[str, Any]
    allocation: Json | None = None  # status.allocation to store (the claim is not allocated)
    reserve: tuple[Json, ...] = ()  # consumers to append to status.reservedFor
    unreserve: tuple[str, ...] = ()  # uids to remove from status.reservedFor
    deallocate: bool = False
    allocation_timestamp: bool = False  # set status.allocation.allocationTimestamp


def claim_write(desired: ResourceClaim, classes: Mapping[str, DeviceClass],
                features: Features | None = None) -> ClaimWrite | None:
    """The API writes that turn the claim the scheduler read (``desired.raw``, the API's object)
    into ``desired`` (what Handle.update_resource_claim was given): None when nothing changes.

    - ``desired`` without allocation and reservations, of an allocated claim: PostFilter's
      deallocation.
    - An allocation the API's claim lacks: bindClaim's allocation (its JSON as the structured
      allocator builds it, from the claim's requests and the device classes' configs).
    - Consumers ``desired`` has and the API's claim does not (by uid): appended to
      ``reservedFor``; consumers the API's claim has and ``desired`` does not: removed
      (Unreserve)."""
    features = features if features is not None else DEFAULT_FEATURES
    raw = desired.raw
    status = raw.get("status") or {}
    allocated = bool(status.get("allocation"))
    seen_uids = [str(r.get("uid", "")) for r in status.get("reservedFor") or () if isinstance(r, Mapping)]
    base = ClaimWrite(desired.namespace, desired.name, desired.meta.uid, raw)
    if desired.allocation is None and not desired.reserved_for:
        return dataclasses.replace(base, deallocate=True) if allocated or seen_uids else None
    want = {r.uid for r in desired.reserved_for}
    reserve = tuple({"resource": r.resource, "name": r.name, "uid": r.uid} for r in desired.reserved_for
                    if r.uid not in seen_uids)
    unreserve = tuple(uid for uid in seen_uids if uid not in want)
    allocation = allocation_json(desired, desired.allocation, classes) \
        if desired.allocation is not None and not allocated else None
    if allocation is None and not reserve and not unreserve:
        return None
    stamp = features.enabled("DRADeviceBindingConditions") and features.enabled("DRAResourceClaimDeviceStatus")
    return dataclasses.replace(base, allocation=allocation, reserve=reserve, unreserve=unreserve,
                               allocation_timestamp=stamp)


def _json_body(value: Any) -> Any:
    """A typed object's manifest as plain JSON values (mappings may be read-only views)."""
    if isinstance(value, Mapping):
        return {str(k): _json_body(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_body(v) for v in value]
    return value


def lease_request_timeout(renew_deadline: float) -> float:
    """The timeout of one Lease request: a third of the renew deadline (at least 1 s), so that
    the (at most) three requests of one renewal attempt end within the deadline. client-go
    gets the same bound from the context the renew loop cancels at the deadline (its client's
    own timeout is renewDeadline / 2, at least 1 s): a renewal hanging on the network must not
    keep a leader leading past its deadline, while a standby takes the lease at expiry."""
    return max(renew_deadline / 3.0, 1.0)


class ApiLeaseClient:
    """The Lease calls leader election needs (kubesched.live.leader.LeaseClient), through the
    same authenticated :class:`ApiClient` as everything else, but — as kube-scheduler's separate
    leader-election client — with its own rate limiter (same qps / burst: a burst of binds
    must not delay renewals) and ``timeout`` per request (see :func:`lease_request_timeout`;
    None: the client's)."""

    def __init__(self, api: ApiClient, *, timeout: float | None = None) -> None:
        self.api = api
        self.timeout = timeout
        self.limiter = TokenBucket(api.limiter.qps, api.limiter.burst)

    def _request(self, verb: str, namespace: str, name: str = "", body: Any = None) -> dict[str, Any]:
        return dict(self.api.request(verb, "leases", namespace=namespace, name=name, body=body,
                                     timeout=self.timeout, limiter=self.limiter))

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self._request("get", namespace, name)
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    def create(self, lease: dict[str, Any]) -> dict[str, Any]:
        ns = str((lease.get("metadata") or {}).get("namespace", ""))
        return self._request("create", ns, body=lease)

    def update(self, lease: dict[str, Any]) -> dict[str, Any]:
        md = lease.get("metadata") or {}
        return self._request("update", str(md.get("namespace", "")), str(md.get("name", "")), body=lease)
