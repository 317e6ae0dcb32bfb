"""The live cluster: kubeconfig / in-cluster configuration, a rate-limited HTTP client,
informers fed by kubesched's own reflector, listers over them, and the scheduler's actions
on the API (bind, status patches, events, victim deletion).

- :func:`load_cluster_config` reads a kubeconfig (``--kubeconfig``, ``$KUBECONFIG``,
  ``~/.kube/config``: current or named context; tokens, token files, exec credential
  plugins returning a token, client certificates, CA, insecure-skip-tls-verify,
  tls-server-name) or the in-cluster service account.
- :class:`ApiClient` is an httpx client with clientConnection qps/burst rate limiting (a
  token bucket, as client-go's flowcontrol) that records every call by (verb, group,
  resource, subresource) and refuses any call missing from :data:`API_CALLS`, the one table
  of what kubesched asks of the API (the ClusterRole is checked against it).
- :class:`Informer` runs the reflector: LIST, then WATCH from the list's resourceVersion with
  ``allowWatchBookmarks``, resuming from the last resourceVersion seen (bookmarks included)
  when a stream ends or breaks, relisting on 410 Gone (and on any other error status a watch
  is answered with, but 429), with exponential backoff (and jitter) on errors. Objects are decoded straight from JSON with :data:`kubesched.objects.parse.PARSERS`
  (the API defaulting the simulator applies); a relist is diffed against the store, so
  handlers see the adds and deletes they missed, and an update for every object kept
  (DeltaFIFO.Replace: unchanged ones too).
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
import json
import logging
import os
import queue
import random
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from kubesched.cluster.resources import RESOURCES, ApiResource, Json, format_micro_time, format_time
from kubesched.config.types import ClientConnection
from kubesched.errors import ApiError, ConfigError, FieldError, KubeschedError
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
    Service,
    StorageClass,
    Workload,
)
from kubesched.objects.parse import PARSERS

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

API_CALLS: tuple[ApiCall, ...] = (
    *(ApiCall(verb, RESOURCES[p].group, p) for p in INFORMED_RESOURCES for verb in ("list", "watch")),
    ApiCall("create", "", "pods", "binding"),  # DefaultBinder
    ApiCall("patch", "", "pods", "status"),  # PodScheduled condition, nominatedNodeName, DisruptionTarget
    ApiCall("delete", "", "pods"),  # preemption victims (UID precondition)
    ApiCall("create", "events.k8s.io", "events"),  # Scheduled / FailedScheduling / Preempted
    # VolumeBinding's PreBind (BindPodVolumes): a PV's claimRef, a claim's selected-node.
    ApiCall("update", "", "persistentvolumes"),
    ApiCall("update", "", "persistentvolumeclaims"),
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
    env: tuple[tuple[str, str], ...] = ()
    api_version: str = "client.authentication.k8s.io/v1"


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """Where the API server is and how to authenticate (a resolved kubeconfig context)."""

    server: str
    token: str = ""
    token_file: str = ""
    ca_file: str = ""
    ca_data: bytes = b""
    cert_file: str = ""
    cert_data: bytes = b""
    key_file: str = ""
    key_data: bytes = b""
    insecure: bool = False
    tls_server_name: str = ""
    username: str = ""
    password: str = ""
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
            doc = yaml.safe_load(Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError) as e:
            raise ConfigError(f"cannot read kubeconfig: {e}", file=path) from None
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
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def acquire(self) -> float:
        wait = self.reserve()
        if wait > 0:
            self._sleep(wait)
        return wait


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
        status = json.loads(out.stdout).get("status") or {}
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        raise ApiError(f"exec credential plugin {ex.command!r} failed: {e}") from None
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
        return True
    if cfg.insecure:
        return False
    ctx = ssl.create_default_context(cafile=cfg.ca_file or None,
                                     cadata=cfg.ca_data.decode() if cfg.ca_data else None)
    cert, key = cfg.cert_file, cfg.key_file
    for data, kind in ((cfg.cert_data, "cert"), (cfg.key_data, "key")):
        if data:
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


class WatchStream:
    """One open watch: iterate :meth:`events` for (type, object); :meth:`abort` (from any
    thread) cuts the connection so a blocked reader returns."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._aborted = False

    def events(self) -> Iterator[tuple[str, Json]]:
        for line in self.response.iter_lines():
            if not line.strip():
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                raise ApiError(f"watch: undecodable event {line[:200]!r}") from None
            yield str(ev.get("type", "")), ev.get("object") or {}

    def abort(self) -> None:
        self._aborted = True
        stream = self.response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    @property
    def aborted(self) -> bool:
        return self._aborted


class GoneError(ApiError):
    """The watch's resourceVersion is too old (410): the reflector must relist."""


def _error(verb: str, path: str, resp: httpx.Response) -> ApiError:
    try:
        body = resp.json()
        message = str(body.get("message") or resp.text)
    except ValueError:
        message = resp.text.strip() or resp.reason_phrase
    return ApiError(message or f"{verb} {path}: HTTP {resp.status_code}", status=resp.status_code)


class ApiClient:
    """The scheduler's connection to the API server (clientConnection: qps, burst)."""

    def __init__(self, config: ClusterConfig, *, qps: float = 50.0, burst: int = 100, timeout: float = 30.0,
                 user_agent: str = "kubesched", check_calls: bool = True) -> None:
        self.config = config
        self.limiter = TokenBucket(qps, burst)
        self.timeout = timeout
        self.check_calls = check_calls
        self.calls: Counter[ApiCall] = Counter()
        self._calls_lock = threading.Lock()
        self._temp: list[str] = []
        self._tokens = _TokenSource(config)
        verify = _ssl_context(config, self._temp)
        self._extensions = {"sni_hostname": config.tls_server_name} if config.tls_server_name else {}
        # TCP_NODELAY: a request's headers and body go out in separate writes; with Nagle the
        # body would wait for the server's delayed ACK.
        transport = httpx.HTTPTransport(
            verify=verify, limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
        self._http = httpx.Client(base_url=config.server, timeout=timeout, transport=transport,
                                  headers={"User-Agent": user_agent, "Accept": "application/json"})

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
        self._http.close()
        for path in self._temp:
            with contextlib.suppress(OSError):
                os.unlink(path)
        self._temp.clear()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- plumbing
    def _note(self, verb: str, r: ApiResource, subresource: str) -> None:
        call = ApiCall(verb, r.group, r.plural, subresource)
        if self.check_calls and call not in _DECLARED:
            raise KubeschedError(f"undeclared API call {call}: add it to kubesched.cluster.live.API_CALLS "
                                 "(and to the ClusterRole)")
        with self._calls_lock:
            self.calls[call] += 1

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
                limiter: TokenBucket | None = None) -> Json:
        """One API call; raises ApiError (with ``status`` when the server answered).
        ``timeout`` / ``limiter`` replace the client's own for this call."""
        r = RESOURCES[resource] if isinstance(resource, str) else resource
        self._note(verb, r, subresource)
        path = r.path(namespace, name, subresource)
        (limiter or self.limiter).acquire()
        content = json.dumps(body).encode() if body is not None else None
        try:
            resp = self._http.request(_METHODS[verb], path, params=dict(params or {}), content=content,
                                      headers=self._headers(content_type if content is not None else None),
                                      timeout=self.timeout if timeout is None else timeout,
                                      extensions=self._extensions)
        except httpx.HTTPError as e:
            raise ApiError(f"{verb} {path}: {e}") from None
        if resp.status_code == 401:
            self._tokens.invalidate()
        if resp.status_code >= 400:
            raise _error(verb, path, resp)
        try:
            out = resp.json() if resp.content else {}
        except ValueError:
            raise ApiError(f"{verb} {path}: the response is not JSON") from None
        return out if isinstance(out, dict) else {}

    def list(self, resource: ApiResource | str, *, namespace: str = "", field_selector: str = "",
             label_selector: str = "") -> tuple[list[Json], str]:
        """LIST: (items with kind and apiVersion filled in, the list's resourceVersion).
        Follows ``continue`` tokens when the server pages."""
        r = RESOURCES[resource] if isinstance(resource, str) else resource
        params: dict[str, str] = {}
        if field_selector:
            params["fieldSelector"] = field_selector
        if label_selector:
            params["labelSelector"] = label_selector
        items: list[Json] = []
        rv = ""
        while True:
            body = self.request("list", r, namespace=namespace, params=params)
            meta = body.get("metadata") or {}
            rv = str(meta.get("resourceVersion") or rv)
            for item in body.get("items") or []:
                if isinstance(item, dict):
                    item.setdefault("kind", r.kind)
                    item.setdefault("apiVersion", r.api_version)
                    items.append(item)
            token = meta.get("continue")
            if not token:
                return items, rv
            params["continue"] = str(token)

    @contextlib.contextmanager
    def watch(self, resource: ApiResource | str, resource_version: str, *, namespace: str = "",
              field_selector: str = "", label_selector: str = "", timeout_seconds: int | None = None,
              bookmarks: bool = True) -> Iterator[WatchStream]:
        """WATCH from ``resource_version``; the stream's events are (type, object)."""
        r = RESOURCES[resource] if isinstance(resource, str) else resource
        self._note("watch", r, "")
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
        self.limiter.acquire()
        timeout = httpx.Timeout(self.timeout, read=(timeout_seconds + self.timeout) if timeout_seconds else None)
        try:
            with self._http.stream("GET", path, params=params, headers=self._headers(), timeout=timeout,
                                   extensions=self._extensions) as resp:
                if resp.status_code >= 400:
                    resp.read()
                    err = _error("watch", path, resp)
                    if resp.status_code == 410:
                        raise GoneError(str(err), status=410)
                    raise err
                yield WatchStream(resp)
        except httpx.HTTPError as e:
            raise ApiError(f"watch {path}: {e}") from None


# ================================================================ informers
@dataclass(frozen=True, slots=True)
class Backoff:
    """Reflector backoff (client-go: 800 ms doubling to 30 s, full jitter, reset after a
    quiet 2 minutes)."""

    initial: float = 0.8
    maximum: float = 30.0
    factor: float = 2.0
    jitter: float = 1.0
    reset_after: float = 120.0


class _BackoffState:
    def __init__(self, cfg: Backoff, rng: random.Random) -> None:
        self.cfg = cfg
        self.rng = rng
        self.current = 0.0
        self.last_error = 0.0

    def next(self) -> float:
        now = time.monotonic()
        if self.current == 0.0 or now - self.last_error > self.cfg.reset_after:
            self.current = self.cfg.initial
        else:
            self.current = min(self.current * self.cfg.factor, self.cfg.maximum)
        self.last_error = now
        return self.current * (1.0 + self.rng.random() * self.cfg.jitter)


ADD, UPDATE, DELETE = "add", "update", "delete"
ASSIGNED_PODS = "pods/assigned"
PENDING_PODS = "pods/pending"


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


def decode(r: ApiResource, raw: Json) -> Any:
    """A JSON object from the API as kubesched's typed object (FieldError if it cannot be read)."""
    raw.setdefault("kind", r.kind)
    raw.setdefault("apiVersion", r.api_version)
    entry = PARSERS.get(r.kind)
    if entry is None:
        return raw
    return entry[1](raw)


def _key(meta: Mapping[str, Any]) -> tuple[str, str]:
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class Informer:
    """A reflector (LIST + WATCH) feeding a store of typed objects and a change handler.

    Store updates and handler calls happen under ``lock`` (the scheduler's), one at a time,
    in the order the API sent them."""

    def __init__(self, client: ApiClient, resource: ApiResource, *, on_change: Callable[[str, Any, Any], None],
                 lock: AbstractContextManager[Any], field_selector: str = "", backoff: Backoff = Backoff(),
                 watch_timeout: float = 300.0, rng: random.Random | None = None) -> None:
        self.client = client
        self.resource = resource
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
        self.relists = 0
        self.rewatches = 0
        self.errors = 0
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
        state = _BackoffState(self.backoff, self._rng)
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
                self._watch()
                continue  # the stream ended (timeout, server closed it): watch again from where it stopped
            except GoneError:
                need_list = True
                self.relists += 1
                log.info("informer %s: resourceVersion %s expired, relisting", self.resource.plural,
                         self.resource_version)
            except (ApiError, FieldError, httpx.HTTPError, OSError, ValueError) as e:
                if self._stop.is_set():
                    return
                self.errors += 1
                log.info("informer %s: %s", self.resource.plural, e)
                if not need_list and isinstance(e, ApiError) and e.status is not None and e.status != 429:
                    # client-go: a watch the API server refused (or ended with an ERROR event)
                    # ends ListAndWatch, which relists after backoff; only transport failures
                    # and 429s resume the watch from the last resourceVersion.
                    need_list = True
                    self.relists += 1
            except Exception:  # noqa: BLE001 - a handler bug must not kill the informer silently
                self.errors += 1
                log.exception("informer %s: unexpected error", self.resource.plural)
            self._stop.wait(state.next())

    def _decode(self, raw: Json) -> Any:
        try:
            return decode(self.resource, raw)
        except FieldError as e:
            meta = raw.get("metadata") or {}
            log.warning("informer %s: skipping %s/%s: %s", self.resource.plural, meta.get("namespace", ""),
                        meta.get("name", ""), e)
            return None

    def _list(self) -> None:
        items, rv = self.client.list(self.resource, field_selector=self.field_selector)
        fresh: dict[tuple[str, str], Any] = {}
        for raw in items:
            obj = self._decode(raw)
            if obj is not None:
                fresh[_key(raw.get("metadata") or {})] = obj
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
            self.resource_version = rv
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

    def _watch(self) -> None:
        timeout = int(self.watch_timeout * (1.0 + self._rng.random()))
        with self.client.watch(self.resource, self.resource_version, field_selector=self.field_selector,
                               timeout_seconds=timeout) as stream:
            self._stream = stream
            try:
                if self._stop.is_set():
                    return
                for etype, raw in stream.events():
                    self._event(etype, raw)
                    if self._stop.is_set():
                        return
            except ApiError:
                raise
            except httpx.HTTPError as e:
                if self._stop.is_set():
                    return
                raise ApiError(f"watch {self.resource.plural}: {e}") from None
            finally:
                self._stream = None
                self.rewatches += 1

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
            raise ApiError(f"watch {self.resource.plural}: unknown event type {etype!r}")
        key = _key(meta)
        obj = self._decode(raw) if etype != "DELETED" else None
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


# ================================================================ listers
class LiveObjects:
    """kubesched.framework.ObjectLister over the informer stores."""

    def __init__(self, informers: Mapping[str, Informer]) -> None:
        self._inf = informers

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

    def node(self, name: str) -> Node | None:
        out: Node | None = self._get("nodes", "", name)
        return out

    def nodes(self) -> list[Node]:
        return self._all("nodes")


# ================================================================ events
@dataclass(slots=True)
class _Spam:
    tokens: float
    last: float


class EventRecorder:
    """events.k8s.io/v1 Events, sent from a background thread (a full queue drops events, as
    the broadcaster's channel does) and rate-limited per regarding object (client-go's spam
    filter: a burst of 25, then one per 5 minutes)."""

    def __init__(self, client: ApiClient, *, burst: int = 25, refill_seconds: float = 300.0,
                 max_queued: int = 1000, hostname: str | None = None) -> None:
        self.client = client
        self.burst = burst
        self.refill_seconds = refill_seconds
        self.hostname = hostname or socket.gethostname()
        self._queue: queue.Queue[Json | None] = queue.Queue(max_queued)
        self._spam: dict[str, _Spam] = {}
        self._lock = threading.Lock()
        self.sent = 0
        self.dropped = 0
        self.failed = 0
        self._thread = threading.Thread(target=self._run, name="event-recorder", daemon=True)
        self._thread.start()

    def _allow(self, key: str) -> bool:
        now = time.monotonic()
        with self._lock:
            s = self._spam.get(key)
            if s is None:
                s = self._spam[key] = _Spam(float(self.burst), now)
            s.tokens = min(float(self.burst), s.tokens + (now - s.last) / self.refill_seconds)
            s.last = now
            if s.tokens < 1.0:
                return False
            s.tokens -= 1.0
            return True

    def event(self, regarding: Pod, related: Pod | None, event_type: str, reason: str, action: str, note: str,
              *, controller: str = "default-scheduler") -> bool:
        """Queue one Event; False if the rate limit or a full queue dropped it."""
        if not self._allow(regarding.uid or regarding.key):
            self.dropped += 1
            return False
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
        try:
            self._queue.put_nowait(body)
        except queue.Full:
            self.dropped += 1
            return False
        return True

    def _run(self) -> None:
        while True:
            body = self._queue.get()
            if body is None:
                return
            try:
                self.client.request("create", "events", namespace=body["metadata"]["namespace"], body=body)
                self.sent += 1
            except KubeschedError as e:
                self.failed += 1
                log.info("event %s for %s not recorded: %s", body.get("reason"),
                         body["regarding"].get("name"), e)

    def flush(self, timeout: float = 5.0) -> None:
        """Wait (at most ``timeout``) until the queued events were sent."""
        deadline = time.monotonic() + timeout
        while not self._queue.empty() and time.monotonic() < deadline:
            time.sleep(0.01)

    def stop(self, timeout: float = 5.0) -> None:
        self.flush(timeout)
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(None)
        self._thread.join(timeout)


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


class LiveCluster:
    """Informers over every resource the scheduler reads, the pod split, and the scheduler's
    actions on the API. ``scheduler_names``: the profiles' schedulerNames (pods of other
    schedulers are ignored)."""

    def __init__(self, client: ApiClient, *, scheduler_names: Collection[str] = ("default-scheduler",),
                 options: LiveOptions | None = None, owns_client: bool = False) -> None:
        self.client = client
        self.scheduler_names = frozenset(scheduler_names)
        self.options = options or LiveOptions()
        self.informers: dict[str, Informer] = {}
        self.objects = LiveObjects(self.informers)
        self.events: EventRecorder | None = None
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
        self.events = EventRecorder(self.client)
        opts = self.options
        for plural in INFORMED_RESOURCES:
            r = RESOURCES[plural]
            on_change = self._pod_change if plural == "pods" else self._other_change(plural)
            self.informers[plural] = Informer(
                self.client, r, on_change=on_change, lock=lock,
                field_selector=POD_FIELD_SELECTOR if plural == "pods" else "",
                backoff=opts.backoff, watch_timeout=opts.watch_timeout)
        for inf in self.informers.values():
            inf.start()

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
    def bind(self, pod: Pod, node: str) -> None:
        """POST pods/binding (DefaultBinder): the UID guards against a recreated pod."""
        body = {"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        self.client.request("create", "pods", namespace=pod.namespace, name=pod.name, subresource="binding",
                            body=body)

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

    def record_event(self, regarding: Pod, related: Pod | None, event_type: str, reason: str, action: str,
                     note: str, *, controller: str = "default-scheduler") -> bool:
        if self.events is None:
            return False
        return self.events.event(regarding, related, event_type, reason, action, note, controller=controller)


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
