"""The HTTP extender client (pkg/scheduler/extender.go: HTTPExtender) and the scheduler's use
of extenders (schedule_one.go: findNodesThatPassExtenders, prioritizeNodes' extender part,
extendersBinding; preemption.go: callExtenders; scheduler.go: buildExtenders).

One :class:`HTTPExtender` per ``extenders[]`` entry of the KubeSchedulerConfiguration, each
with one ``httpx.Client`` (kept-alive connections, like Go's http.Transport). Every call is a
``POST urlPrefix/verb`` with a JSON body byte-identical to kube-scheduler v1.30's (see
:mod:`kubesched.extender.wire`); any failure — transport, timeout, HTTP status other than 200,
a reply that does not decode, a reply whose ``Error`` is set — raises
:class:`kubesched.errors.ApiError` with the message kube-scheduler would log.
"""

from __future__ import annotations

import dataclasses
import http.client
import ipaddress
import os
import socket
import ssl
import tempfile
import time
import zlib
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import repeat
from typing import TYPE_CHECKING, TypeGuard, TypeVar, cast
from urllib.parse import urlsplit

import numpy as np
import numpy.typing as npt

from kubesched.config.args import NodeResourcesFitArgs
from kubesched.config.types import Extender as ExtenderConfig
from kubesched.config.types import ExtenderTLSConfig, Profile
from kubesched.errors import ApiError, ConfigError
from kubesched.extender import _http, wire
from kubesched.framework import (
    MAX_NODE_SCORE,
    Binding,
    Code,
    Extender,
    ExtenderVictims,
    NodeInfo,
    NodeInfoGetter,
    Status,
)
from kubesched.objects import Node, Pod

if TYPE_CHECKING:
    import httpx
else:
    from kubesched._lazy import lazy_module

    httpx = lazy_module("httpx")  # imported when an extender is configured (a scheduler without any never needs it)

USER_AGENT = "kubesched-extender-client"
# MaxNodeScore / MaxExtenderPriority: an extender's 0..10 scores are scaled to 0..100.
EXTENDER_SCORE_SCALE = MAX_NODE_SCORE // wire.MAX_EXTENDER_PRIORITY
_MAX_REPLY_BYTES = 256 << 20
NODE_RESOURCES_FIT = "NodeResourcesFit"


@dataclass(frozen=True, slots=True)
class Victims:
    """extenderv1.Victims: the pods to evict on one node and how many of them violate a
    PodDisruptionBudget. (Same shape as the DefaultPreemption plugin's ``Victims``.)"""

    pods: tuple[Pod, ...]
    num_pdb_violations: int = 0


# The protocols live in the framework (plugins see extenders through the Handle); these are
# their historical names in this package.
SchedulerExtender = Extender
VictimsLike = ExtenderVictims


# =============================================================================== TLS
def _read(path: str, what: str, *, file: str | None = None, where: str = "tlsConfig") -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except (OSError, ValueError) as e:  # ValueError: a path with a NUL byte (found by fuzzing)
        raise ConfigError(f"extender {what} {path!r}: {getattr(e, 'strerror', None) or e}", file=file,
                          field=f"{where}.{what}") from None


def _load_cert_chain(ctx: ssl.SSLContext, cert: bytes, key: bytes, *, file: str | None = None,
                     where: str = "tlsConfig") -> None:
    """SSLContext can load a client certificate only from files: write the PEM data to a
    private temporary directory for the duration of the call."""
    with tempfile.TemporaryDirectory(prefix="kubesched-extender-") as d:
        cert_path = os.path.join(d, "cert.pem")
        key_path = os.path.join(d, "key.pem")
        for path, data in ((cert_path, cert), (key_path, key)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        try:
            ctx.load_cert_chain(cert_path, key_path)
        except (ssl.SSLError, OSError) as e:
            raise ConfigError(f"extender client certificate/key: {e}", file=file,
                              field=f"{where}.{'certData' if cert else 'certFile'}") from None


def make_ssl_context(config: ExtenderConfig, *, where: str = "tlsConfig") -> ssl.SSLContext:
    """makeTransport + client-go's TLSConfigFor: CA file/data replace the system roots;
    ``insecure`` skips verification; certFile/keyFile or certData/keyData present a client
    certificate (data wins over file); TLS 1.2 minimum. Used only for https:// URLs — the URL
    scheme decides the protocol. ``where`` is the tlsConfig's field path in the configuration
    (``extenders[0].tlsConfig``), for errors, which also name ``config.file``.

    Deliberate deviation: kube-scheduler's makeTransport also skips verification when
    ``enableHTTPS`` is set without a CA (``cfg.Insecure = true``); kubesched verifies against
    the system roots then, so that TLS is verified unless ``insecure: true`` says otherwise
    (issue 13: security defaults; docs/extender.md)."""
    file = config.file
    tls = config.tls_config or ExtenderTLSConfig()
    ca = tls.ca_data or (_read(tls.ca_file, "caFile", file=file, where=where) if tls.ca_file else b"")
    insecure = tls.insecure
    if insecure and (tls.ca_file or tls.ca_data):
        raise ConfigError("specifying a root certificates file with the insecure flag is not allowed", file=file,
                          field=f"{where}.insecure")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif ca:
        try:
            ctx.load_verify_locations(cadata=ca.decode("ascii", errors="replace"))
        except (ssl.SSLError, ValueError) as e:
            raise ConfigError(f"unable to load root certificates: {e}", file=file,
                              field=f"{where}.{'caData' if tls.ca_data else 'caFile'}") from None
    else:
        ctx.load_default_certs()
    cert = tls.cert_data or (_read(tls.cert_file, "certFile", file=file, where=where) if tls.cert_file else b"")
    key = tls.key_data or (_read(tls.key_file, "keyFile", file=file, where=where) if tls.key_file else b"")
    if bool(cert) != bool(key):
        raise ConfigError("extender tlsConfig: a client certificate and its key must be given together", file=file,
                          field=f"{where}.{'keyData' if cert else 'certData'}")
    if cert:
        _load_cert_chain(ctx, cert, key, file=file, where=where)
    return ctx


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# =============================================================================== client
class HTTPExtender:
    """An HTTP extender (NewHTTPExtender). Construction validates the TLS settings and raises
    :class:`ConfigError`; calls raise :class:`ApiError`."""

    def __init__(self, config: ExtenderConfig, *, transport: httpx.BaseTransport | None = None,
                 index: int | None = None) -> None:
        """``index``: the extender's place in ``extenders`` (for the field paths of errors)."""
        self.config = config
        self._url = config.url_prefix
        self._base = config.url_prefix.rstrip("/")
        self._weight = config.weight
        self._managed = frozenset(r.name for r in config.managed_resources)
        timeout = config.http_timeout if config.http_timeout > 0 else 5.0
        self._timeout = timeout
        parts = urlsplit(self._base)
        tls = config.tls_config
        self._extensions: dict[str, str] = {}
        if tls is not None and tls.server_name:
            self._extensions["sni_hostname"] = tls.server_name
        verify: ssl.SSLContext | bool = True
        if parts.scheme == "https" or tls is not None or config.enable_https:
            verify = make_ssl_context(config, where=f"extenders[{index}].tlsConfig" if index is not None
                                      else "tlsConfig")
        custom_transport = transport
        if transport is None:
            # Go's net/http disables Nagle's algorithm (TCP_NODELAY); without it the request's
            # headers and body, written separately, wait out the peer's delayed ACK (~40 ms).
            transport = httpx.HTTPTransport(verify=verify, trust_env=not _is_loopback(parts.hostname or ""),
                                            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
        self._client = httpx.Client(
            verify=verify,
            timeout=httpx.Timeout(timeout),
            # Go's ProxyFromEnvironment never proxies loopback addresses.
            trust_env=not _is_loopback(parts.hostname or ""),
            follow_redirects=True,
            max_redirects=10,
            transport=transport,
            headers={"User-Agent": USER_AGENT, "Accept-Encoding": "gzip"},
        )
        # The fast transport (kubesched.extender._http) for calls straight to the extender;
        # httpx keeps proxies, redirects and custom transports.
        self._fast: _http.Pool | None = None
        self._targets: dict[str, str | None] = {}
        if custom_transport is None and parts.scheme in ("http", "https") and parts.hostname \
                and (_is_loopback(parts.hostname) or not _proxies_from_environment()):
            try:
                port = parts.port or (443 if parts.scheme == "https" else 80)
            except ValueError:
                port = 0
            if port:
                self._fast = _http.Pool(
                    parts.hostname, port, ssl_context=verify if isinstance(verify, ssl.SSLContext) and
                    parts.scheme == "https" else None, server_hostname=self._extensions.get("sni_hostname"),
                    headers={"User-Agent": USER_AGENT, "Accept-Encoding": "gzip"})

    # ---- identity and capabilities (HTTPExtender.Name, IsFilter, ...)
    def name(self) -> str:
        """The URL prefix, verbatim."""
        return self._url

    def is_filter(self) -> bool:
        return self.config.filter_verb != ""

    def is_prioritizer(self) -> bool:
        return self.config.prioritize_verb != ""

    def is_binder(self) -> bool:
        return self.config.bind_verb != ""

    def supports_preemption(self) -> bool:
        return self.config.preempt_verb != ""

    def is_ignorable(self) -> bool:
        return self.config.ignorable

    @property
    def weight(self) -> int:
        return self._weight

    def is_interested(self, pod: Pod) -> bool:
        """IsInterested: with managedResources, only pods whose containers or init containers
        request or limit one of them."""
        if not self._managed:
            return True
        for containers in (pod.containers, pod.init_containers):
            for c in containers:
                if any(r in self._managed for r in c.requests) or any(r in self._managed for r in c.limits):
                    return True
        return False

    def close(self) -> None:
        if self._fast is not None:
            self._fast.close()
        self._client.close()

    def __enter__(self) -> HTTPExtender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"HTTPExtender({self._url!r})"

    # ---- transport (HTTPExtender.send)
    def send(self, verb: str, body: bytes) -> object:
        """POST ``body`` to urlPrefix/verb and decode the reply's first JSON value."""
        try:
            return wire.decode_json(self.post(verb, body))
        except wire.WireError as e:
            raise ApiError(str(e)) from None

    def post(self, verb: str, body: bytes) -> bytes:
        """POST ``body`` to urlPrefix/verb and return the reply's body; anything but a 200
        reply raises :class:`ApiError` with net/http's error, as HTTPExtender.send."""
        url = f"{self._base}/{verb}"
        deadline = time.monotonic() + self._timeout
        if self._fast is not None:
            target = self._targets.get(verb, "")
            if target == "":
                target = self._targets[verb] = _request_target(url)
            if target is not None:
                try:
                    return self._post_fast(url, verb, target, body, deadline)
                except _http.Redirect:
                    pass  # httpx follows it (sending the request again, as it would have)
        return self._post_httpx(url, verb, body, deadline)

    def _post_fast(self, url: str, verb: str, target: str, body: bytes, deadline: float) -> bytes:
        assert self._fast is not None
        try:
            status, data = self._fast.post(target, body, content_type="application/json", deadline=deadline,
                                           max_reply=_MAX_REPLY_BYTES, idempotent=verb != self.config.bind_verb)
        except _http.Timeout as e:
            if e.reading_body:
                raise ApiError(f'Post "{url}": context deadline exceeded '
                               "(Client.Timeout or context cancellation while reading body)") from None
            raise ApiError(f'Post "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)') \
                from None
        except _http.TooLarge:
            raise ApiError(f'Post "{url}": reply larger than {_MAX_REPLY_BYTES} bytes') from None
        except ConnectionRefusedError as e:
            raise ApiError(f'Post "{url}": {_connect_detail(url, e)}') from None
        except ssl.SSLCertVerificationError as e:
            raise ApiError(f'Post "{url}": {self._tls_detail(e) or e}') from None
        except http.client.RemoteDisconnected:
            raise ApiError(f'Post "{url}": EOF') from None  # net/http: closed before any reply
        except http.client.IncompleteRead:
            raise ApiError(f'Post "{url}": unexpected EOF') from None  # a reply cut short
        except (OSError, http.client.HTTPException, zlib.error) as e:
            raise ApiError(f'Post "{url}": {e}') from None
        if status != 200:
            raise ApiError(f"failed {verb} with extender at URL {url}, code {status}", status=status)
        return data

    def _post_httpx(self, url: str, verb: str, body: bytes, deadline: float) -> bytes:
        try:
            with self._client.stream("POST", url, content=body, headers={"Content-Type": "application/json"},
                                     extensions=self._extensions) as resp:
                if resp.status_code != 200:
                    raise ApiError(f"failed {verb} with extender at URL {url}, code {resp.status_code}",
                                   status=resp.status_code)
                chunks: list[bytes] = []
                size = 0
                for chunk in resp.iter_bytes():
                    chunks.append(chunk)
                    size += len(chunk)
                    if time.monotonic() > deadline:
                        raise ApiError(f'Post "{url}": context deadline exceeded '
                                       "(Client.Timeout or context cancellation while reading body)")
                    if size > _MAX_REPLY_BYTES:
                        raise ApiError(f'Post "{url}": reply larger than {_MAX_REPLY_BYTES} bytes')
        except httpx.TimeoutException:
            raise ApiError(f'Post "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)') \
                from None
        except httpx.ConnectError as e:
            raise ApiError(f'Post "{url}": {self._tls_detail(e) or _connect_detail(url, e)}') from None
        except httpx.HTTPError as e:
            raise ApiError(f'Post "{url}": {e}') from None
        return b"".join(chunks)

    def _tls_detail(self, e: BaseException) -> str | None:
        """HTTPExtender.send returns net/http's error, so a certificate that fails verification
        reads as Go's crypto/tls and crypto/x509 say it (``tls: failed to verify certificate:
        x509: ...``), not as OpenSSL does. None when ``e`` is no verification failure, or one
        with no Go equivalent here (an expired certificate: Go's text quotes the validity)."""
        cause = _cause_of(e, ssl.SSLCertVerificationError)
        if cause is None:
            return None
        if cause.verify_code in _UNKNOWN_AUTHORITY:
            return "tls: failed to verify certificate: x509: certificate signed by unknown authority"
        if cause.verify_code in (_HOSTNAME_MISMATCH, _IP_ADDRESS_MISMATCH):
            text = self._hostname_error()
            if text is not None:
                return "tls: failed to verify certificate: " + text
        return None

    def _hostname_error(self) -> str | None:
        """x509.HostnameError's text needs the names the certificate is valid for, which a failed
        handshake does not expose: fetch the certificate again over a second handshake that
        still verifies the chain but not the name (no request is sent on it)."""
        parts = urlsplit(self._base)
        host = parts.hostname or ""
        port = parts.port or 443
        tls = self.config.tls_config
        name = tls.server_name if tls is not None and tls.server_name else host
        try:
            ctx = make_ssl_context(self.config)
        except ConfigError:
            return None
        ctx.check_hostname = False
        try:
            with socket.create_connection((host, port), timeout=self._timeout) as raw, \
                    ctx.wrap_socket(raw, server_hostname=None if _ip(name) else name) as conn:
                cert = conn.getpeercert()
        except (OSError, ValueError):
            return None
        if _valid_for(cert or {}, name):
            return None  # not the certificate that failed (rotated meanwhile?): nothing to explain
        return go_hostname_error(cert or {}, name)

    # ---- verbs
    def filter(self, pod: Pod, nodes: Sequence[Node]) -> tuple[list[Node], dict[str, str], dict[str, str]]:
        """HTTPExtender.Filter: (nodes kept, FailedNodes, FailedAndUnresolvableNodes). Kept
        nodes are the caller's own Node objects, looked up by the names in the reply."""
        if not self.is_filter():
            return list(nodes), {}, {}
        names = [n.meta.name for n in nodes]
        kept_names, failed, unresolvable = self.filter_names(pod, nodes, names)
        try:
            kept = list(map(dict(zip(names, nodes, strict=True)).__getitem__, kept_names))
        except KeyError as e:
            raise _unknown_node(self._url, e.args[0]) from None
        return kept, failed, unresolvable

    def filter_names(self, pod: Pod, nodes: Sequence[Node], names: Sequence[str]
                     ) -> tuple[list[str], dict[str, str], dict[str, str]]:
        """:meth:`filter` for a caller that has the nodes' ``names`` already: the names kept as
        the reply gives them, not yet checked against ``names``. ``nodes`` is read only when
        the extender is not nodeCacheCapable (else only the names are sent)."""
        body = wire.extender_args(pod, nodes, self.config.node_cache_capable, names=names)
        try:
            reply = wire.decode_filter_result(self.post(self.config.filter_verb, body))
        except wire.WireError as e:
            raise ApiError(str(e)) from None
        if reply.error:
            raise ApiError(reply.error)
        kept_names: list[str] | None
        if self.config.node_cache_capable and reply.node_names is not None:
            kept_names = reply.node_names
        else:
            kept_names = reply.node_items
        return kept_names or [], reply.failed, reply.failed_and_unresolvable

    def prioritize(self, pod: Pod, nodes: Sequence[Node]) -> tuple[list[tuple[str, int]], int]:
        """HTTPExtender.Prioritize: ([(host, score)], weight). Without a prioritize verb every
        node scores 0 with weight 0."""
        if not self.is_prioritizer():
            return [(n.meta.name, 0) for n in nodes], 0
        hosts, scores = self.prioritize_columns(pod, nodes)
        return list(zip(hosts, scores, strict=True)), self._weight

    def prioritize_columns(self, pod: Pod, nodes: Sequence[Node], names: Sequence[str] | None = None
                           ) -> tuple[list[str], list[int]]:
        """:meth:`prioritize`'s reply as two aligned lists, hosts and scores (a prioritize verb
        is required); ``names``: the nodes' names, when the caller has them (``nodes`` is then
        read only when the extender is not nodeCacheCapable)."""
        body = wire.extender_args(pod, nodes, self.config.node_cache_capable, names=names)
        try:
            return wire.decode_host_priority_columns(self.post(self.config.prioritize_verb, body))
        except wire.WireError as e:
            raise ApiError(str(e)) from None

    def bind(self, binding: Binding) -> None:
        """HTTPExtender.Bind."""
        if not self.is_binder():
            raise ApiError("unexpected empty bindVerb in extender")
        body = wire.binding_args(binding.name, binding.namespace, binding.uid, binding.node)
        try:
            error = wire.parse_binding_result(self.send(self.config.bind_verb, body))
        except wire.WireError as e:
            raise ApiError(str(e)) from None
        if error:
            raise ApiError(error)

    def process_preemption(self, pod: Pod, node_name_to_victims: Mapping[str, VictimsLike],
                           node_infos: NodeInfoGetter) -> dict[str, Victims]:
        """HTTPExtender.ProcessPreemption: send the candidates' victims (full pods, or only
        UIDs for a nodeCacheCapable extender) and return the extender's choice, its UIDs
        resolved against the pods on each node."""
        if not self.supports_preemption():
            raise ApiError(f"preempt verb is not defined for extender {self._url} but run into ProcessPreemption")
        victims = {n: (tuple(v.pods), v.num_pdb_violations) for n, v in node_name_to_victims.items()}
        body = wire.preemption_args(pod, victims, self.config.node_cache_capable)
        try:
            result = wire.parse_preemption_result(self.send(self.config.preempt_verb, body))
        except wire.WireError as e:
            raise ApiError(str(e)) from None
        out: dict[str, Victims] = {}
        for node_name, meta in (result or {}).items():
            ni = node_infos.get(node_name)
            if ni is None:
                raise ApiError(f"nodeinfo not found for node name {_go_quote(node_name)}")
            meta = meta or wire.MetaVictims()  # Go would dereference a nil *MetaVictims here
            on_node = {pi.pod.uid: pi.pod for pi in ni.pods}
            pods: list[Pod] = []
            for uid in meta.uids:
                p = on_node.get(uid)
                if p is None:
                    raise ApiError(f"extender: {self._url} claims to preempt pod (UID: &{{{uid}}}) on node: "
                                   f"{node_name}, but the pod is not found on that node")
                pods.append(p)
            out[node_name] = Victims(tuple(pods), meta.num_pdb_violations)
        return out


def _go_quote(s: str) -> str:
    """Go's %q (close enough: JSON string quoting keeps printable Unicode as is)."""
    import json

    return json.dumps(s, ensure_ascii=False)


# OpenSSL's X509_V_ERR_* codes that Go reports as x509.UnknownAuthorityError.
_UNKNOWN_AUTHORITY = frozenset({2, 18, 19, 20, 21})
_HOSTNAME_MISMATCH = 62
_IP_ADDRESS_MISMATCH = 64

_E = TypeVar("_E", bound=BaseException)


def _cause_of(e: BaseException, kind: type[_E]) -> _E | None:
    """The first exception of ``kind`` in ``e``'s chain (httpx wraps httpcore wraps ssl)."""
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, kind):
            return cur
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return None


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def _match_hostname(pattern: str, host: str) -> bool:
    """crypto/x509 matchHostnames: case-insensitive, a trailing dot ignored, ``*`` allowed as
    the whole leftmost label."""
    p = pattern.lower().rstrip(".").split(".")
    h = host.lower().rstrip(".").split(".")
    if not pattern or len(p) != len(h):
        return False
    return all(a == b or (i == 0 and a == "*") for i, (a, b) in enumerate(zip(p, h, strict=True)))


def _sans(cert: Mapping[str, object]) -> list[tuple[str, str]]:
    sans = cert.get("subjectAltName")
    return [(str(k), str(v)) for k, v in sans] if isinstance(sans, tuple) else []


def _valid_for(cert: Mapping[str, object], host: str) -> bool:
    """Whether the certificate's SANs match ``host`` (as x509.Certificate.VerifyHostname)."""
    ip = _ip(host)
    if ip is not None:
        return any(k == "IP Address" and _ip(v.strip()) == ip for k, v in _sans(cert))
    return any(k == "DNS" and _match_hostname(v, host) for k, v in _sans(cert))


def go_hostname_error(cert: Mapping[str, object], host: str) -> str:
    """crypto/x509 HostnameError.Error() for a certificate as ``SSLSocket.getpeercert()``
    decodes it and the name that was verified."""
    entries = _sans(cert)
    if "subjectAltName" not in cert:
        subject = cert.get("subject")
        rdns = subject if isinstance(subject, tuple) else ()
        cn = next((str(v) for rdn in rdns for k, v in rdn if k == "commonName"), "")
        if cn and _match_hostname(cn, host):
            return "x509: certificate relies on legacy Common Name field, use SANs instead"
    if _ip(host) is not None:
        ips = [str(_ip(v.strip()) or v.strip()) for k, v in entries if k == "IP Address"]
        if not ips:
            return f"x509: cannot validate certificate for {host} because it doesn't contain any IP SANs"
        valid = ", ".join(ips)
    else:
        valid = ", ".join(v for k, v in entries if k == "DNS")
    if not valid:
        return f"x509: certificate is not valid for any names, but wanted to match {host}"
    return f"x509: certificate is valid for {valid}, not {host}"


def _request_target(url: str) -> str | None:
    """The request-target (path and query) of ``url`` for the fast transport, or None when it
    would need percent-encoding (httpx then sends it)."""
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return target if all("!" <= c <= "~" for c in target) else None


_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")


def _proxies_from_environment() -> bool:
    """Whether the environment names a proxy (for a non-loopback extender, httpx then decides
    which requests go through it, NO_PROXY included)."""
    return any(v and k.lower() in _PROXY_VARIABLES for k, v in os.environ.items())


def _connect_detail(url: str, e: BaseException) -> str:
    text = str(e)
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if "refused" in text.lower():
        return f"dial tcp {parts.hostname}:{port}: connect: connection refused"
    return text or type(e).__name__


# ======================================================================= construction
def new_http_extenders(configs: Sequence[ExtenderConfig]) -> list[HTTPExtender]:
    """buildExtenders: one HTTPExtender per config entry, ignorable ones moved to the tail
    (so a non-ignorable extender always filters before an ignorable one)."""
    built = [HTTPExtender(c, index=i) for i, c in enumerate(configs)]
    return [e for e in built if not e.is_ignorable()] + [e for e in built if e.is_ignorable()]


def ignored_extended_resources(configs: Sequence[ExtenderConfig]) -> tuple[str, ...]:
    """buildExtenders: the managedResources with ignoredByScheduler, in config order. When
    non-empty, kube-scheduler *replaces* NodeResourcesFit's ``ignoredResources`` with this
    list in every profile (and fails if a profile has no NodeResourcesFit args)."""
    return tuple(r.name for c in configs for r in c.managed_resources if r.ignored_by_scheduler)


def with_ignored_extended_resources(profiles: Sequence[Profile], configs: Sequence[ExtenderConfig]
                                    ) -> tuple[Profile, ...]:
    """buildExtenders' second half: when some managedResources are ``ignoredByScheduler``,
    every profile's NodeResourcesFit args get exactly that list as ``ignoredResources``
    (replacing what the configuration said). A profile without NodeResourcesFit args (the
    plugin disabled) is an error, as upstream."""
    ignored = ignored_extended_resources(configs)
    if not ignored:
        return tuple(profiles)
    out: list[Profile] = []
    for prof in profiles:
        if NODE_RESOURCES_FIT not in prof.plugin_config:
            raise ConfigError("can't find NodeResourcesFitArgs in plugin config")
        args = prof.plugin_config[NODE_RESOURCES_FIT]
        if not isinstance(args, NodeResourcesFitArgs):
            raise ConfigError(f"want args to be of type NodeResourcesFitArgs, got {type(args).__name__}")
        plugin_config = dict(prof.plugin_config)
        plugin_config[NODE_RESOURCES_FIT] = dataclasses.replace(args, ignored_resources=ignored)
        out.append(dataclasses.replace(prof, plugin_config=plugin_config))
    return tuple(out)


# ===================================================================== scheduler side
NodeT = TypeVar("NodeT", NodeInfo, Node)


def _node_of(n: NodeInfo | Node) -> Node:
    if isinstance(n, NodeInfo):
        if n.node is None:
            raise ValueError("NodeInfo without a node")
        return n.node
    return n


def _nodes_of(items: Sequence[NodeInfo | Node]) -> list[Node]:
    """[_node_of(n) for n in items], without a Python call per node."""
    plain: list[Node | None]
    try:
        plain = [n.node for n in items]  # type: ignore[union-attr]  # all NodeInfo (the scheduler's case)
    except AttributeError:
        plain = [n.node if isinstance(n, NodeInfo) else n for n in items]
    if None in plain:  # Node compares by identity: a C-level scan
        raise ValueError("NodeInfo without a node")
    return cast("list[Node]", plain)


def _names_of(items: Sequence[NodeInfo | Node]) -> list[str]:
    """The nodes' names (NodeInfo.name or Node.name); ValueError for a NodeInfo without a node."""
    names = [n.name for n in items]
    if "" in names:  # only a NodeInfo without a node has no name
        _nodes_of(items)
    return names


def _by_name(ext: SchedulerExtender, method: str) -> TypeGuard[HTTPExtender]:
    """Whether the scheduler calls the by-name variant of ``ext``'s ``method`` (filter_names,
    prioritize_columns): ``ext`` is an HTTPExtender whose ``method`` is HTTPExtender's own (a
    subclass's override is called as the Extender protocol says)."""
    return isinstance(ext, HTTPExtender) and getattr(type(ext), method) is getattr(HTTPExtender, method)


def _nodes_to_send(ext: HTTPExtender, items: Sequence[NodeInfo | Node]) -> list[Node]:
    """The Node objects a call of ``ext`` with the nodes' names reads: none when it sends
    the names only (nodeCacheCapable), which saves a pass over the candidates."""
    return [] if ext.config.node_cache_capable else _nodes_of(items)


def _unknown_node(extender: str, node: str) -> ApiError:
    """HTTPExtender.Filter's error for a kept node the extender was not sent."""
    return ApiError(f"extender {_go_quote(extender)} claims a filtered node {_go_quote(node)} "
                    "which is not found in the input node list")


def run_filter_extenders(extenders: Sequence[SchedulerExtender], pod: Pod, feasible: Sequence[NodeT],
                         statuses: dict[str, Status]) -> list[NodeT]:
    """findNodesThatPassExtenders (v1.30): the extenders run one after another, each on the
    nodes the previous one kept; an extender not interested in the pod is skipped, and so is
    one that fails while ignorable (a non-ignorable failure raises :class:`ApiError`).

    ``statuses`` (node name -> Status, the Diagnosis' NodeToStatusMap) is updated in place,
    with no plugin name on the statuses written: a FailedAndUnresolvableNodes entry becomes
    UnschedulableAndUnresolvable carrying any earlier reasons of that node plus the extender's;
    a FailedNodes entry (unless the same extender also listed it as unresolvable) becomes
    Unschedulable, or is appended to the node's existing status as one more reason.

    ``feasible`` may hold NodeInfo or Node objects; the same objects come back."""
    current: list[NodeT] = list(feasible)
    fresh: dict[str, Status] = {}  # reason -> the Status of a node that had none
    for ext in extenders:
        if not current:
            break
        if not ext.is_interested(pod):
            continue
        names = _names_of(current)
        by_name = dict(zip(names, current, strict=True))
        try:
            if _by_name(ext, "filter") and ext.is_filter():
                # By name: one list of names and one map back to ``current`` per cycle, where
                # ext.filter would build its own and map its reply to Node objects first.
                kept_names, failed, unresolvable = ext.filter_names(pod, _nodes_to_send(ext, current), names)
            else:
                kept, failed, unresolvable = ext.filter(pod, _nodes_of(current))
                kept_names = [n.meta.name for n in kept]
            try:
                kept_current = list(map(by_name.__getitem__, kept_names))
            except KeyError as e:  # HTTPExtender.filter checks this itself; other implementations may not
                raise _unknown_node(ext.name(), e.args[0]) from None
        except ApiError:
            if ext.is_ignorable():
                continue
            raise
        for node, msg in unresolvable.items():
            prev = statuses.get(node)
            reasons = (prev.reasons if prev is not None else ()) + (msg,)
            statuses[node] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)
        for node, msg in failed.items():
            if node in unresolvable:
                continue
            prev = statuses.get(node)
            if prev is None:
                # Statuses are immutable: nodes failed for the same reason share one.
                status = fresh.get(msg)
                if status is None:
                    status = fresh[msg] = Status(Code.UNSCHEDULABLE, (msg,))
                statuses[node] = status
            else:
                statuses[node] = Status(prev.code, prev.reasons + (msg,), prev.plugin, prev.error)
        current = kept_current
    return current


IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class ExtenderScores:
    """The extenders' part of prioritizeNodes: for each node, (extender name, score × weight ×
    10) per extender that scored it, in extender order. Nodes no extender scored are absent."""

    by_node: Mapping[str, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    # Each node's total, when the builder summed them already (run_prioritize_extenders).
    by_total: Mapping[str, int] | None = field(default=None, compare=False, repr=False)

    def total(self, node: str) -> int:
        return sum(s for _, s in self.by_node.get(node, ()))

    def totals(self, nodes: Sequence[str]) -> IntArray:
        """Totals aligned with ``nodes`` (0 where no extender scored), to add to the plugins'."""
        by_total = self.by_total
        if by_total is None:
            by_total = {k: sum(s for _, s in v) for k, v in self.by_node.items()}
        return np.fromiter(map(by_total.get, nodes, repeat(0)), dtype=np.int64, count=len(nodes))

    def scores_of(self, extender_name: str, nodes: Sequence[str]) -> IntArray:
        """One extender's final scores aligned with ``nodes`` (as a PluginScores column)."""
        out = np.zeros(len(nodes), dtype=np.int64)
        for i, n in enumerate(nodes):
            out[i] = sum(s for name, s in self.by_node.get(n, ()) if name == extender_name)
        return out


def _wrap_int64(v: int) -> int:
    """Go's int64 arithmetic wraps around."""
    return ((v + (1 << 63)) % (1 << 64)) - (1 << 63)


def run_prioritize_extenders(extenders: Sequence[SchedulerExtender], pod: Pod, nodes: Sequence[NodeInfo | Node],
                             *, executor: Executor | None = None) -> ExtenderScores:
    """prioritizeNodes' extender part: every interested prioritizer's Prioritize runs
    concurrently (a thread each, or ``executor``); one that fails is left out (its scores are
    simply missing, whether ignorable or not); each returned score adds
    ``score × weight × (MaxNodeScore / MaxExtenderPriority)`` to its host. Hosts that are not
    among ``nodes`` are dropped, as upstream never reads them."""
    interested = [e for e in extenders if e.is_prioritizer() and e.is_interested(pod)]
    if not interested or not nodes:
        return ExtenderScores()
    names = _names_of(nodes)

    def call(ext: SchedulerExtender) -> tuple[list[str], list[int], int] | None:
        try:
            if _by_name(ext, "prioritize"):
                # Hosts and scores as two lists, straight from the reply: no pair per node.
                hosts, scores = ext.prioritize_columns(pod, _nodes_to_send(ext, nodes), names)
                return hosts, scores, ext.weight
            pairs, weight = ext.prioritize(pod, _nodes_of(nodes))
            return [h for h, _ in pairs], [s for _, s in pairs], weight
        except ApiError:
            return None

    results: list[tuple[list[str], list[int], int] | None]
    if len(interested) == 1:
        results = [call(interested[0])]
    elif executor is not None:
        results = list(executor.map(call, interested))
    else:
        with ThreadPoolExecutor(max_workers=len(interested), thread_name_prefix="extender-prioritize") as pool:
            results = list(pool.map(call, interested))
    columns: list[tuple[str, list[str], list[int]]] = []  # (extender, hosts, score x weight x 10)
    for ext, res in zip(interested, results, strict=True):
        if res is None or not res[0]:
            continue
        hosts, scores, weight = res
        factor = weight * EXTENDER_SCORE_SCALE
        extreme = max(abs(min(scores)), abs(max(scores)))
        if extreme * abs(factor) >= 1 << 63:  # otherwise no product can overflow int64
            columns.append((ext.name(), hosts, [_wrap_int64(s * factor) for s in scores]))
        else:
            columns.append((ext.name(), hosts, [s * factor for s in scores]))
    if len(columns) == 1:
        # One extender that scored every candidate once, in the order sent (the usual reply):
        # its totals are its scores, and by_node follows from them when someone reads it.
        name, hosts, values = columns[0]
        if hosts == names:
            totals = dict(zip(hosts, values, strict=True))
            if len(totals) == len(hosts):  # else a host listed twice counts twice (below)
                return ExtenderScores(_OneExtender(name, totals), totals)
    wanted = set(names)
    by_node: dict[str, tuple[tuple[str, int], ...]] = {}
    totals = {}
    get = by_node.get
    for name, hosts, values in columns:
        for host, value in zip(hosts, values, strict=True):  # a host listed twice counts twice, as upstream
            if host in wanted:
                prev = get(host)
                if prev is None:
                    by_node[host] = ((name, value),)
                    totals[host] = value
                else:
                    by_node[host] = prev + ((name, value),)
                    totals[host] += value
    return ExtenderScores(by_node, totals)


class _OneExtender(Mapping[str, tuple[tuple[str, int], ...]]):
    """ExtenderScores.by_node when a single extender scored: read from its totals on demand
    (the scheduler reads only the totals; traces and reports read by_node)."""

    __slots__ = ("_name", "_totals")

    def __init__(self, name: str, totals: dict[str, int]) -> None:
        self._name = name
        self._totals = totals

    def __getitem__(self, host: str) -> tuple[tuple[str, int], ...]:
        return ((self._name, self._totals[host]),)

    def __iter__(self) -> Iterator[str]:
        return iter(self._totals)

    def __len__(self) -> int:
        return len(self._totals)

    def __repr__(self) -> str:
        return repr(dict(self))


def run_bind_extenders(extenders: Sequence[SchedulerExtender], pod: Pod, node: str) -> tuple[bool, ApiError | None]:
    """extendersBinding: the first binder extender interested in the pod binds it. Returns
    (bound by an extender, its error). An ignorable binder that fails is skipped, so the next
    binder, or the Bind plugins when (False, None) comes back, take over."""
    for ext in extenders:
        if not ext.is_binder() or not ext.is_interested(pod):
            continue
        try:
            ext.bind(Binding.for_pod(pod, node))
        except ApiError as e:
            if ext.is_ignorable():
                continue
            return True, e
        return True, None
    return False, None


def run_preemption_extenders(extenders: Sequence[SchedulerExtender], pod: Pod,
                             victims: Mapping[str, VictimsLike], node_infos: NodeInfoGetter,
                             ) -> dict[str, VictimsLike]:
    """Evaluator.callExtenders: each interested extender that supports preemption narrows the
    node -> victims map in turn; an ignorable extender's error skips it, and its nodes left
    without victims are dropped, while for a non-ignorable one both raise :class:`ApiError`
    (``expected at least one victim pod on node "..."``). Stops once no node is left."""
    current: dict[str, VictimsLike] = dict(victims)
    if not current:
        return current
    for ext in extenders:
        if not ext.supports_preemption() or not ext.is_interested(pod):
            continue
        try:
            result: dict[str, VictimsLike] = dict(ext.process_preemption(pod, current, node_infos))
        except ApiError:
            if ext.is_ignorable():
                continue
            raise
        for node in list(result):
            if not result[node].pods:
                if ext.is_ignorable():
                    del result[node]
                    continue
                raise ApiError(f"expected at least one victim pod on node {_go_quote(node)}")
        current = result
        if not current:
            break
    return current

