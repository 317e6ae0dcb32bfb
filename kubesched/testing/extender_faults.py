"""The extender fault matrix: a misbehaving scheduler extender and full scheduling runs against it.

Every cell of {filter, prioritize, preempt, bind} x {timeout, HTTP 503, malformed JSON,
connection refused, TLS name mismatch, wrong response shape} x {ignorable, non-ignorable}
is one :class:`Case`. :func:`run_case` runs it for real: a KubeSchedulerConfiguration with one
extender (only that verb, ``httpTimeout: 300ms`` in the timeout cells, 5 s in the others) pointing at a :class:`FaultyExtender` on
127.0.0.1 that misbehaves in exactly that way for its first ``faulty`` requests and then heals,
driven by the offline :class:`~kubesched.simulation.Simulator` (the conformance procedure: each
pod attempted once) or the :class:`~kubesched.timeline.TimelineSimulator` (the scheduling queue
on a virtual clock: failed pods are retried with backoff).

What kube-scheduler v1.30 does in each cell (:func:`expected_kind`, :data:`RULES`):

- filter (schedule_one.go: findNodesThatPassExtenders): an ignorable extender's error is
  skipped; a non-ignorable one's fails the scheduling attempt with exactly that error
  (``fwk.AsStatus(err)``: SchedulerError, the pod backs off and is retried);
- prioritize (schedule_one.go: prioritizeNodes): the error is ignored whatever the flag — the
  extender just gives no score;
- preempt (framework/preemption/preemption.go: Evaluator.callExtenders): ignorable -> skipped,
  preemption goes on with the dry run's candidates; else preemption fails with the error
  (DefaultPreemption's PostFilter message ``preemption: <err>``), nothing is evicted;
- bind (schedule_one.go: extendersBinding, ignorable honoured since v1.30, kubernetes#122503):
  ignorable -> skipped, the Bind plugins (DefaultBinder) bind; else the binding cycle fails with
  the error: the assumed pod is forgotten, Unreserve runs and the pod is requeued.

The error texts are HTTPExtender.send's (extender.go): Go's net/http and encoding/json errors.

Shared by ``tests/extender/test_fault_matrix.py`` (asserts every cell) and
``scripts/extender_fault_matrix.py`` (prints the matrix as a markdown table). Needs the
``cryptography`` package (a test dependency) for the TLS cells.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import socket
import ssl
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from kubesched.config import KubeSchedulerConfiguration, parse_config
from kubesched.errors import ApiError
from kubesched.objects import ClusterObjects, Pod
from kubesched.objects.parse import parse_node, parse_pod
from kubesched.simulation import SimulationResult, Simulator, Step
from kubesched.timeline import TimelineResult, TimelineSimulator

VERBS: tuple[str, ...] = ("filter", "prioritize", "preempt", "bind")
PREFIX = "/scheduler"
HTTP_TIMEOUT = "300ms"  # the "timeout" cells' httpTimeout: each stalled request costs this
# Every other cell's httpTimeout: generous, so that a loaded machine cannot turn its fault (a
# 503, malformed JSON...) into a timeout.
OTHER_TIMEOUT = "5s"
# How many requests (connection attempts for "connection refused", TLS handshakes for "TLS
# name mismatch") misbehave before the extender heals.
FAULTY_REQUESTS = 2
# The wrong-name certificate's only subject alternative name.
OTHER_HOST = "other.example"

Mode = Literal["conformance procedure", "virtual-clock queue"]
MODES: tuple[Mode, ...] = ("conformance procedure", "virtual-clock queue")

# What kube-scheduler v1.30 makes of the failure (see the module docstring).
Kind = Literal["skipped", "ignored", "attempt fails", "preemption fails", "binding fails"]


@dataclass(frozen=True, slots=True)
class Fault:
    key: str
    title: str  # the matrix' row label
    phrase: str  # "a filter extender <phrase>"


FAULTS: tuple[Fault, ...] = (
    Fault("timeout", "timeout", "that times out"),
    Fault("5xx", "HTTP 503", "that answers HTTP 503"),
    Fault("malformed-json", "malformed JSON", "that answers malformed JSON"),
    Fault("connection-refused", "connection refused", "that refuses connections"),
    Fault("tls-name-mismatch", "TLS name mismatch", "whose TLS certificate is for another host"),
    Fault("wrong-shape", "wrong response shape", "that answers another verb's JSON shape"),
)
FAULT_BY_KEY: dict[str, Fault] = {f.key: f for f in FAULTS}

# The bodies the misbehaving extender answers with (HTTP 200).
MALFORMED_BODY = b'{"Error":"",}'
WRONG_SHAPE_BODY = {
    # Every verb but prioritize decodes an object: a HostPriorityList (prioritize's reply) is an
    # array; prioritize decodes an array: an ExtenderFilterResult is an object.
    "filter": b'[{"Host":"n1","Score":10}]',
    "prioritize": b'{"NodeNames":["n1"]}',
    "preempt": b'[{"Host":"n1","Score":10}]',
    "bind": b'[{"Host":"n1","Score":10}]',
}
GO_RESULT_TYPE = {
    "filter": "v1.ExtenderFilterResult",
    "prioritize": "v1.HostPriorityList",
    "preempt": "v1.ExtenderPreemptionResult",
    "bind": "v1.ExtenderBindingResult",
}


@dataclass(frozen=True, slots=True)
class Rule:
    ignorable: str
    non_ignorable: str
    source: str


RULES: dict[str, Rule] = {
    "filter": Rule(
        "skipped: the pod is scheduled as without the extender",
        "the scheduling attempt fails with the extender's error (SchedulerError); the pod backs off and is retried",
        "schedule_one.go findNodesThatPassExtenders: `if extender.IsIgnorable() { continue }; return nil, err` "
        "→ schedulingCycle `fwk.AsStatus(err)`",
    ),
    "prioritize": Rule(
        "ignored: the extender gives no score",
        "ignored: the extender gives no score (the flag is not consulted)",
        "schedule_one.go prioritizeNodes: \"Prioritization errors from extender can be ignored\" (both flags)",
    ),
    "preempt": Rule(
        "skipped: preemption goes on with the dry run's candidates",
        "preemption fails with the error (`preemption: <err>`), nothing is evicted; the pod stays unschedulable "
        "until a cluster event or the 5-minute leftover flush retries it",
        "framework/preemption/preemption.go Evaluator.callExtenders: ignorable → `continue`, "
        "else `framework.AsStatus(err)`",
    ),
    "bind": Rule(
        "skipped: DefaultBinder binds the pod",
        "the binding cycle fails with the error: Unreserve, ForgetPod, the pod is requeued and retried",
        "schedule_one.go extendersBinding (ignorable honoured since v1.30, kubernetes#122503) → bind "
        "`fwk.AsStatus(err)` → handleBindingCycleError",
    ),
}


def expected_kind(verb: str, ignorable: bool) -> Kind:
    """kube-scheduler v1.30's outcome for a failing extender of this verb (see :data:`RULES`)."""
    if verb == "prioritize":
        return "ignored"
    if ignorable:
        return "skipped"
    if verb == "filter":
        return "attempt fails"
    if verb == "preempt":
        return "preemption fails"
    if verb == "bind":
        return "binding fails"
    raise ValueError(f"unknown verb {verb!r}")


@dataclass(frozen=True, slots=True)
class Case:
    verb: str
    fault: Fault
    ignorable: bool

    @property
    def kind(self) -> Kind:
        return expected_kind(self.verb, self.ignorable)

    @property
    def sentence(self) -> str:
        """The case as a sentence (the test id)."""
        who = "an ignorable" if self.ignorable else "a non-ignorable"
        then = {
            "skipped": "is skipped" + (" and DefaultBinder binds" if self.verb == "bind" else ""),
            "ignored": "is ignored",
            "attempt fails": "fails the scheduling attempt with its error",
            "preemption fails": "fails preemption with its error",
            "binding fails": "fails the binding cycle and the pod is retried",
        }[self.kind]
        return f"{who} {self.verb} extender {self.fault.phrase} {then}"


CASES: tuple[Case, ...] = tuple(Case(v, f, ign) for v in VERBS for f in FAULTS for ign in (True, False))


def expected_error(verb: str, fault: str, url: str) -> str:
    """The error kube-scheduler v1.30's HTTPExtender returns (``url`` is urlPrefix/verb): net/http's
    ``*url.Error`` for transport failures, send's own for a status other than 200,
    encoding/json's for a reply that does not decode (those two do not name the extender)."""
    host_port = url.split("/")[2]
    if fault == "timeout":
        return f'Post "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
    if fault == "5xx":
        return f"failed {verb} with extender at URL {url}, code 503"
    if fault == "malformed-json":
        return "invalid character '}' looking for beginning of object key string"
    if fault == "connection-refused":
        return f'Post "{url}": dial tcp {host_port}: connect: connection refused'
    if fault == "tls-name-mismatch":
        # crypto/x509 HostnameError for a certificate with DNS SAN other.example only.
        host = host_port.rsplit(":", 1)[0]
        return (f'Post "{url}": tls: failed to verify certificate: x509: cannot validate certificate for {host} '
                "because it doesn't contain any IP SANs")
    if fault == "wrong-shape":
        kind = "object" if verb == "prioritize" else "array"
        return f"json: cannot unmarshal {kind} into Go value of type {GO_RESULT_TYPE[verb]}"
    raise ValueError(f"unknown fault {fault!r}")


# ============================================================================ PKI
@dataclass(frozen=True, slots=True)
class _Pem:
    ca: bytes
    good_cert: bytes  # SAN IP 127.0.0.1
    good_key: bytes
    wrong_cert: bytes  # SAN DNS other.example only, same CA
    wrong_key: bytes


@cache
def _pki() -> _Pem:
    """A throwaway CA and two server certificates it signed (generated once per process)."""
    import datetime as dt
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubesched fault-matrix CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(hours=1))
          .not_valid_after(now + dt.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))

    def leaf(name: str, san: x509.GeneralName) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
                .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(days=1))
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                               critical=False)
                .add_extension(x509.SubjectAlternativeName([san]), critical=False)
                .sign(ca_key, hashes.SHA256()))
        return (cert.public_bytes(serialization.Encoding.PEM),
                key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))

    good = leaf("extender", x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    wrong = leaf(OTHER_HOST, x509.DNSName(OTHER_HOST))
    return _Pem(ca.public_bytes(serialization.Encoding.PEM), good[0], good[1], wrong[0], wrong[1])


def _server_context(cert: bytes, key: bytes) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory(prefix="kubesched-fault-matrix-") as d:
        paths = []
        for name, data in (("cert.pem", cert), ("key.pem", key)):
            path = os.path.join(d, name)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            paths.append(path)
        ctx.load_cert_chain(paths[0], paths[1])
    return ctx


# ====================================================================== the extender
@dataclass(slots=True)
class Binding:
    pod: str  # namespace/name
    uid: str
    node: str


class FaultyExtender:
    """An HTTP(S) extender on 127.0.0.1 serving one verb under :data:`PREFIX`, misbehaving in
    the way of ``fault`` for its first ``faulty`` requests, then healthy:

    - ``timeout``: stalls (until stopped, at most ``stall`` s) without answering;
    - ``5xx``: HTTP 503; ``malformed-json``: 200 with :data:`MALFORMED_BODY`;
      ``wrong-shape``: 200 with another verb's JSON shape (:data:`WRONG_SHAPE_BODY`);
    - ``connection-refused``: its port is bound but not listening (the kernel refuses
      connections) until :meth:`note_attempt` has seen ``faulty`` failed attempts;
    - ``tls-name-mismatch``: HTTPS (always) with a certificate for another host name, signed by
      the CA in :attr:`ca_pem`, until :meth:`note_attempt` has seen ``faulty`` failed attempts;
      then the right one.

    ``fault=None`` is healthy from the start. Healthy answers: filter rejects node ``n1``
    (FailedNodes) and keeps the others; prioritize scores ``n2`` 10, others 0; preempt keeps
    the candidates but ``n1``'s; bind records the binding (:attr:`bindings`).
    """

    def __init__(self, verb: str, fault: str | None, *, faulty: int = FAULTY_REQUESTS, stall: float = 10.0) -> None:
        if fault is not None and fault not in FAULT_BY_KEY:
            raise ValueError(f"unknown fault {fault!r}")
        self.verb = verb
        self.fault = fault
        self.stall = stall
        self.requests: Counter[str] = Counter()  # verb -> requests received (healthy or not)
        self.bindings: list[Binding] = []
        self.handshakes = 0
        self.failed_handshakes = 0
        self._faults_left = faulty if fault is not None else 0
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._listening = False
        self._thread: threading.Thread | None = None
        self.tls = fault == "tls-name-mismatch"
        self.ca_pem = _pki().ca if self.tls else b""
        if self.tls:
            pem = _pki()
            self._wrong_ctx: ssl.SSLContext | None = _server_context(pem.wrong_cert, pem.wrong_key)
            self._good_ctx: ssl.SSLContext | None = _server_context(pem.good_cert, pem.good_key)
        else:
            self._wrong_ctx = self._good_ctx = None
        self._server = _Server(self)
        self._server.server_bind()  # the port is ours from now on; listening starts in start()
        self.port: int = self._server.server_address[1]

    # ---- lifecycle
    @property
    def url(self) -> str:
        """The urlPrefix to configure."""
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}{PREFIX}"

    def verb_url(self, verb: str | None = None) -> str:
        return f"{self.url}/{verb or self.verb}"

    def start(self) -> FaultyExtender:
        if self.fault != "connection-refused":
            self._listen()
        return self

    def _listen(self) -> None:
        with self._lock:
            if self._listening:
                return
            self._listening = True
        self._server.server_activate()
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01},
                                        name=f"faulty-extender-{self.port}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._release.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5)
        self._server.server_close()

    def __enter__(self) -> FaultyExtender:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def healed(self) -> bool:
        return self._faults_left == 0

    def note_attempt(self, message: str) -> None:
        """A scheduling attempt ended with ``message``. How a refusing extender counts its
        faults (nothing reaches it), and a TLS one (the client may complete one more handshake
        after a failed one, to read what the certificate is valid for)."""
        sign = {"connection-refused": "connection refused",
                "tls-name-mismatch": "tls: failed to verify certificate"}.get(self.fault or "")
        if sign is None or sign not in message:
            return
        with self._lock:
            if self._faults_left > 0:
                self._faults_left -= 1
            heal = self._faults_left == 0
        if heal:
            self._listen()

    # ---- per connection / request (called from the server's threads)
    def _context_for_next_connection(self) -> ssl.SSLContext | None:
        if not self.tls:
            return None
        with self._lock:
            return self._wrong_ctx if self._faults_left > 0 else self._good_ctx

    def _handshake_done(self, ctx: ssl.SSLContext, ok: bool) -> None:
        with self._lock:
            self.handshakes += 1
            if ctx is self._wrong_ctx and not ok:
                self.failed_handshakes += 1

    def settled_failed_handshakes(self, timeout: float = 5.0) -> int:
        """failed_handshakes once the server's side has caught up: the client gives up on a
        certificate it rejects before the server's thread sees the handshake fail, so a run
        that ended on such an error may read the count a moment too early."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                count = self.failed_handshakes
            if count or not self.tls or time.monotonic() >= deadline:
                return count
            time.sleep(0.01)

    def _take_fault(self, verb: str) -> bool:
        with self._lock:
            self.requests[verb] += 1
            if self.fault in ("timeout", "5xx", "malformed-json", "wrong-shape") and self._faults_left > 0:
                self._faults_left -= 1
                return True
        return False

    def answer(self, verb: str, body: bytes) -> tuple[int, bytes] | None:
        """(status, body) for a POST to ``verb``; None: say nothing (stall)."""
        if verb != self.verb:
            return 404, b"404 page not found\n"
        if self._take_fault(verb):
            if self.fault == "timeout":
                self._release.wait(self.stall)
                return None
            if self.fault == "5xx":
                return 503, b"extender overloaded\n"
            if self.fault == "malformed-json":
                return 200, MALFORMED_BODY
            return 200, WRONG_SHAPE_BODY[verb]
        return 200, json.dumps(self._healthy(verb, json.loads(body))).encode()

    def _healthy(self, verb: str, args: Mapping[str, Any]) -> object:
        if verb == "filter":
            names = args.get("NodeNames")
            if names is not None:
                return {"NodeNames": [n for n in names if n != "n1"], "FailedNodes": {"n1": "rack n1 is full"}}
            items = (args.get("Nodes") or {}).get("items") or []
            return {"Nodes": {"metadata": {}, "items": [n for n in items if n["metadata"]["name"] != "n1"]},
                    "FailedNodes": {"n1": "rack n1 is full"}}
        if verb == "prioritize":
            items = (args.get("Nodes") or {}).get("items") or []
            names = args.get("NodeNames") or [n["metadata"]["name"] for n in items]
            return [{"Host": n, "Score": 10 if n == "n2" else 0} for n in names]
        if verb == "preempt":
            meta: dict[str, Any] = {}
            for node, v in (args.get("NodeNameToVictims") or {}).items():
                meta[node] = {"Pods": [{"UID": p["metadata"]["uid"]} for p in v["Pods"]],
                              "NumPDBViolations": v["NumPDBViolations"]}
            for node, v in (args.get("NodeNameToMetaVictims") or {}).items():
                meta[node] = v
            return {"NodeNameToMetaVictims": {n: v for n, v in meta.items() if n != "n1"}}
        self.bindings.append(Binding(f"{args['PodNamespace']}/{args['PodName']}", args["PodUID"], args["Node"]))
        return {"Error": ""}


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: FaultyExtender) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler, bind_and_activate=False)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, addr = super().get_request()
        ctx = self.owner._context_for_next_connection()  # noqa: SLF001 - the server belongs to it
        if ctx is not None:
            sock = ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def finish_request(self, request: Any, client_address: Any) -> None:
        if isinstance(request, ssl.SSLSocket):
            request.settimeout(5)
            try:
                request.do_handshake()  # in the connection's thread: a failure ends only it
            except (OSError, ValueError):
                self.owner._handshake_done(request.context, ok=False)  # noqa: SLF001
                return
            self.owner._handshake_done(request.context, ok=True)  # noqa: SLF001
        super().finish_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out and hung up, or refused the certificate, is the point


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        verb = self.path.removeprefix(PREFIX + "/")
        answer = self.server.owner.answer(verb, body)
        if answer is None:
            self.close_connection = True
            return
        status, data = answer
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if status == 200 else "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except OSError:
            pass


# ==================================================================== cluster, config
T0 = 1_704_067_200.0  # 2024-01-01T00:00:00Z
TARGET = {"filter": "default/web", "prioritize": "default/web", "preempt": "default/urgent", "bind": "default/web"}


def _ts(offset: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(T0 + offset, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _node(name: str) -> dict[str, Any]:
    res = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"capacity": res, "allocatable": res}}


def _pod(name: str, cpu: str, *, priority: int = 0, node: str = "", created: float = 0.0) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9",
                                            "resources": {"requests": {"cpu": cpu, "memory": "128Mi"}}}],
                            "priority": priority, "terminationGracePeriodSeconds": 0}
    status: dict[str, Any] = {"phase": "Pending"}
    if node:
        spec["nodeName"] = node
        status = {"phase": "Running", "startTime": _ts(created)}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "creationTimestamp": _ts(created)},
            "spec": spec, "status": status}


def cluster_for(verb: str) -> ClusterObjects:
    """Two equal nodes n1 and n2 (4 cpu each). For filter, prioritize and bind one pending pod
    ``web`` (1 cpu): without the extender the scheduler picks n1 (a tie, by name under
    --deterministic). For preempt both nodes are full of low-priority pods (``low-1`` on n1,
    priority 1; ``low-2`` on n2, priority 2) and ``urgent`` (priority 100, 2 cpu) is pending:
    DefaultPreemption alone evicts low-1 on n1."""
    nodes = [parse_node(_node(n)) for n in ("n1", "n2")]
    if verb == "preempt":
        pods = [_pod("low-1", "4", priority=1, node="n1"), _pod("low-2", "4", priority=2, node="n2"),
                _pod("urgent", "2", priority=100, created=10)]
    else:
        pods = [_pod("web", "1", created=10)]
    parsed = [parse_pod(p) for p in pods]
    return ClusterObjects(nodes=nodes, pods=parsed, latest_timestamp=T0 + 10)


def config_for(verb: str, ext: FaultyExtender, ignorable: bool) -> KubeSchedulerConfiguration:
    """A KubeSchedulerConfiguration with one extender implementing only ``verb``."""
    timeout = HTTP_TIMEOUT if ext.fault == "timeout" else OTHER_TIMEOUT
    entry: dict[str, Any] = {"urlPrefix": ext.url, f"{verb}Verb": verb, "httpTimeout": timeout,
                             "ignorable": ignorable}
    if verb == "prioritize":
        entry["weight"] = 1
    if ext.tls:
        entry["tlsConfig"] = {"caData": base64.b64encode(ext.ca_pem).decode("ascii")}
    return parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                         "extenders": [entry]})


# ========================================================================== running
class _CountingSimulator(Simulator):
    """Counts the bindings the (simulated) API server accepted, per pod."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        self.binds: Counter[str] = Counter()
        self.refused_binds: Counter[str] = Counter()
        super().__init__(*args, **kw)

    def _bind(self, pod: Pod, node: str) -> None:
        try:
            super()._bind(pod, node)
        except Exception:
            self.refused_binds[pod.key] += 1
            raise
        self.binds[pod.key] += 1


class _CountingTimeline(TimelineSimulator):
    def __init__(self, *args: Any, **kw: Any) -> None:
        self.binds: Counter[str] = Counter()
        self.refused_binds: Counter[str] = Counter()
        super().__init__(*args, **kw)

    def _bind(self, pod: Pod, node: str) -> None:
        try:
            super()._bind(pod, node)
        except Exception:
            self.refused_binds[pod.key] += 1
            raise
        self.binds[pod.key] += 1


@dataclass(frozen=True, slots=True)
class AttemptView:
    outcome: str  # Scheduled | Unschedulable | Error
    node: str | None
    message: str
    victims: tuple[str, ...]
    nominated: str | None
    extender_scored: bool
    at: float = 0.0  # the virtual clock's time of the attempt (the queue; 0 in the procedure)


@dataclass(slots=True)
class CaseRun:
    """What one scheduling run with the faulty extender did."""

    case: Case | None  # None: the healthy baseline
    verb: str
    mode: Mode
    url: str  # urlPrefix/verb
    target: str
    attempts: list[AttemptView] = field(default_factory=list)  # the target pod's, in order
    final: dict[str, str | None] = field(default_factory=dict)  # pod -> node (None: pending)
    bound_before: set[str] = field(default_factory=set)  # pods the input had bound already
    pending: dict[str, str] = field(default_factory=dict)  # pending pod -> recorded reason
    deleted: list[str] = field(default_factory=list)  # preemption victims gone
    preempted: set[str] = field(default_factory=set)  # pods some attempt evicted
    binds: Counter[str] = field(default_factory=Counter)  # pod -> bindings the API server accepted
    refused_binds: Counter[str] = field(default_factory=Counter)  # pod -> bindings it refused (409)
    extender_bindings: list[Binding] = field(default_factory=list)
    requests: int = 0  # requests the extender received for its verb
    handshakes: int = 0  # TLS handshakes the client broke off (TLS cells)
    client_calls: int = 0  # calls of the scheduler's HTTPExtender for the verb
    client_errors: list[str] = field(default_factory=list)  # the errors those calls raised
    failed_scheduling: list[str] = field(default_factory=list)  # the target's FailedScheduling messages
    cache_problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def lost(self) -> list[str]:
        """Pods neither bound, nor pending with a recorded reason, nor evicted by preemption."""
        out = []
        for pod, node in self.final.items():
            if node is None and not self.pending.get(pod):
                out.append(pod)
        out += [p for p in self.deleted if p not in self.preempted]
        return out

    @property
    def double_bound(self) -> list[str]:
        """Pods bound more than once (a second bind is refused with 409 and counted too)."""
        return [p for p, n in (self.binds + self.refused_binds).items() if n + (p in self.bound_before) > 1]


def run_case(case: Case | None, mode: Mode, *, verb: str | None = None, faulty: int = FAULTY_REQUESTS) -> CaseRun:
    """Run ``case`` (or, with ``case=None``, the healthy baseline of ``verb``) in ``mode``."""
    verb = case.verb if case is not None else verb
    if verb not in VERBS:
        raise ValueError(f"unknown verb {verb!r}")
    started = time.perf_counter()
    objs = cluster_for(verb)
    target = TARGET[verb]
    with FaultyExtender(verb, case.fault.key if case is not None else None, faulty=faulty) as ext:
        config = config_for(verb, ext, case.ignorable if case is not None else False)
        run = CaseRun(case, verb, mode, ext.verb_url(), target)
        sim: _CountingSimulator | _CountingTimeline
        if mode == "conformance procedure":
            sim = _CountingSimulator(objs, config, deterministic=True)
        else:
            sim = _CountingTimeline(objs, config, deterministic=True)

        def on_step(step: Step) -> None:
            a = step.attempt
            if a.pod.key != target:
                return
            scored = a.extender_scores is not None and bool(a.extender_scores.by_node)
            at = sim.clock.now() if isinstance(sim, _CountingTimeline) else 0.0
            run.attempts.append(AttemptView(a.outcome, a.node, a.message or a.error or "",
                                            tuple(sorted(v.key for v in a.victims)), a.nominated_node, scored, at))
            ext.note_attempt(a.message or a.error or "")

        sim.on_step = on_step
        _observe(run, sim, verb)
        result = sim.run()
        run.requests = ext.requests[verb]
        run.handshakes = ext.settled_failed_handshakes() if run.client_errors else ext.failed_handshakes
        run.extender_bindings = list(ext.bindings)
    _collect(run, sim, result, objs)
    run.seconds = time.perf_counter() - started
    return run


# The HTTPExtender method behind each verb: the scheduler calls filter_names and
# prioritize_columns, and HTTPExtender.filter / prioritize go through them too.
_METHOD = {"filter": "filter_names", "prioritize": "prioritize_columns", "preempt": "process_preemption",
           "bind": "bind"}


def _observe(run: CaseRun, sim: Simulator, verb: str) -> None:
    """Record each call the scheduler makes to its HTTPExtender for ``verb``, and the error it
    raised (the scheduler skips or ignores some of them: this is where they are seen)."""
    name = _METHOD[verb]
    for ext in sim.extenders:
        inner = getattr(ext, name)

        def call(*args: Any, _inner: Any = inner, **kw: Any) -> Any:
            run.client_calls += 1
            try:
                return _inner(*args, **kw)
            except ApiError as e:
                run.client_errors.append(str(e))
                raise

        setattr(ext, name, call)


def _collect(run: CaseRun, sim: _CountingSimulator | _CountingTimeline, result: SimulationResult,
             objs: ClusterObjects) -> None:
    run.final = dict(result.final)
    run.bound_before = {p.key for p in objs.pods if p.node_name}
    run.deleted = list(result.deleted)
    run.binds = Counter(sim.binds)
    run.refused_binds = Counter(sim.refused_binds)
    last: dict[str, str] = {}
    for step in result.steps:
        a = step.attempt
        run.preempted.update(v.key for v in a.victims)
        if a.outcome != "Scheduled":
            last[a.pod.key] = a.message or a.error or ""
    if isinstance(result, TimelineResult):
        run.pending = dict(result.pending)
        run.failed_scheduling = [e.message for e in result.events
                                 if e.reason == "FailedScheduling" and e.pod == run.target]
        run.preempted.update(e.pod for e in result.events if e.reason == "Preempted")
    else:
        run.pending = {p: last.get(p, "") for p, n in run.final.items() if n is None}
        run.failed_scheduling = [a.message for a in run.attempts if a.outcome != "Scheduled"]
    # The scheduler's cache must agree with the cluster: bound pods on their node, nothing
    # left assumed, pending pods and victims nowhere.
    cache = sim.cache
    if cache.assumed:
        run.cache_problems.append(f"assumed pods left in the cache: {sorted(cache.assumed)}")
    on_nodes = Counter(pi.pod.uid for ni in cache.node_infos.values() for pi in ni.pods)
    for p in objs.pods:
        want = None if p.key in run.deleted else run.final.get(p.key)
        have = cache.node_of(p)
        if have != want:
            run.cache_problems.append(f"{p.key}: cache says {have}, cluster says {want}")
        if on_nodes[p.uid] != (1 if want else 0):
            run.cache_problems.append(f"{p.key}: on {on_nodes[p.uid]} NodeInfo(s)")


def iter_runs(cases: tuple[Case, ...] = CASES, modes: tuple[Mode, ...] = MODES) -> Iterator[CaseRun]:
    for case in cases:
        for mode in modes:
            yield run_case(case, mode)


# ============================================================================ report
def observed_kind(run: CaseRun) -> Kind | None:
    """Which of kube-scheduler's outcomes the run shows for the first failing call (None:
    none of them — e.g. the extender was not called, or its error surfaced some other way)."""
    if not run.client_errors or not run.attempts:
        return None
    error, first = run.client_errors[0], run.attempts[0]
    if run.verb == "preempt":
        if first.victims and first.outcome != "Scheduled" and not first.message.endswith(error):
            return "skipped"
        if not first.victims and first.message.endswith(". preemption: " + error):
            return "preemption fails"
        return None
    if first.outcome == "Scheduled" and error not in first.message:
        if run.verb == "prioritize":
            return "ignored" if not first.extender_scored else None
        if run.verb == "bind" and run.extender_bindings:
            return None
        return "skipped"
    if first.outcome == "Error" and first.message == error and run.verb != "prioritize":
        return "attempt fails" if run.verb == "filter" else "binding fails"
    return None


def normalized(message: str, run: CaseRun) -> str:
    """A message with this run's port replaced by PORT, for the table."""
    port = run.url.split("/")[2].rsplit(":", 1)[1]
    return message.replace(f":{port}", ":PORT")


def describe(run: CaseRun) -> str:
    """What happened to the case's pod in one run, from the run's own record."""
    a = run.attempts
    node = run.final.get(run.target)
    by = ""
    if run.verb == "bind" and node:
        by = " by the extender" if run.extender_bindings else " by DefaultBinder"
    if run.verb == "prioritize" and node:
        by = ", with the extender's scores" if any(x.extender_scored for x in a) else ", no extender score"
    if run.verb == "preempt" and a:
        first = a[0]

        def evicts(x: AttemptView) -> str:
            return f"evicts {', '.join(v.split('/')[1] for v in x.victims)}, nominates {x.nominated}"

        if first.victims:
            text = evicts(first)
        else:
            post = first.message.split(". preemption: ", 1)
            shown = f"{post[0]}. preemption: <error>" if len(post) == 2 and post[1] in run.client_errors \
                else normalized(first.message, run)
            failed = [x for x in a if not x.victims and x.outcome != "Scheduled"]
            healed = next((x for x in a if x.victims), None)
            text = f"{first.outcome} `{shown}`" + (f" ×{len(failed)}" if len(failed) > 1 else "") + ", evicts nothing"
            if healed is not None:
                text += f"; retried at the 5-minute leftover flush, once the extender heals: {evicts(healed)}"
        return text + (f"; bound to {node}" if node else "; pending with that reason")
    failed = [x for x in a if x.outcome != "Scheduled"]
    if not failed:
        return f"bound to {node}{by} at attempt 1"
    with_error = all(x.message in run.client_errors for x in failed)
    what = f"{failed[0].outcome}{' with the error' if with_error else ''}"
    if run.verb == "bind" and not run.cache_problems:
        what += ", assumed pod forgotten"
    if node is None:
        return f"{what}; pending with it as reason"
    return f"{what} ×{len(failed)}, retried with backoff; once the extender heals, bound to {node}{by} exactly once"


def _cell(runs: list[CaseRun]) -> str:
    texts = []
    for run in runs:
        label = "sim" if run.mode == "conformance procedure" else "queue"
        kind = observed_kind(run)
        texts.append((label, f"**{kind or 'unexpected'}**: {describe(run)}"))
    if len({t for _, t in texts}) == 1:
        return f"{'/'.join(label for label, _ in texts)}: {texts[0][1]}"
    return "<br>".join(f"{label}: {t}" for label, t in texts)


def markdown_table(runs: list[CaseRun]) -> str:
    """The matrix: a row per verb x fault with the error the extender call fails with, then per
    flag the outcome in the conformance procedure (``sim``: one attempt per pod) and on the
    virtual-clock queue (``queue``: retries; the extender heals after its first faulty
    requests), the rule's upstream source and the pods lost / bound twice over those runs."""
    by: dict[tuple[str, str, bool], list[CaseRun]] = {}
    for r in runs:
        if r.case is not None:
            by.setdefault((r.verb, r.case.fault.key, r.case.ignorable), []).append(r)
    lines = [
        "| verb | fault | the extender call fails with | `ignorable: true` | `ignorable: false` "
        "| kube-scheduler v1.30 rule | pods lost / double-bound |",
        "|---|---|---|---|---|---|---|",
    ]
    for verb in VERBS:
        for fault in FAULTS:
            cells = [by.get((verb, fault.key, ignorable), []) for ignorable in (True, False)]
            both = cells[0] + cells[1]
            if not both:
                continue
            lost = sum(len(r.lost) + len(r.cache_problems) for r in both)
            double = sum(len(r.double_bound) for r in both)
            error = next((f"`{normalized(r.client_errors[0], r)}`" for r in both if r.client_errors), "")
            row = [verb, fault.title, error, _cell(cells[0]), _cell(cells[1]), RULES[verb].source,
                   f"{lost} / {double}"]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    return "\n".join(lines) + "\n"


def run_record(run: CaseRun) -> dict[str, Any]:
    """A JSON-ready record of a run."""
    d = {f.name: getattr(run, f.name) for f in dataclasses.fields(run)}
    d["case"] = run.case.sentence if run.case is not None else None
    d["attempts"] = [dataclasses.asdict(x) for x in run.attempts]
    d["extender_bindings"] = [dataclasses.asdict(x) for x in run.extender_bindings]
    d["binds"], d["refused_binds"] = dict(run.binds), dict(run.refused_binds)
    d["preempted"], d["bound_before"] = sorted(run.preempted), sorted(run.bound_before)
    d["observed"] = observed_kind(run)
    d["lost"] = run.lost
    d["double_bound"] = run.double_bound
    return d
