"""Security defaults (issue 13), each checked for real:

(a) an extender's TLS is verified unless its ``tlsConfig`` says ``insecure: true`` (or gives the CA):
    real TLS handshakes against a local HTTPS extender with a self-signed certificate;
(b) ``kubesched run`` serves /healthz, /readyz and /metrics on 127.0.0.1 by default (kube-scheduler:
    0.0.0.0), and ``--bind-address 0.0.0.0`` is still possible: the listening sockets as the kernel
    lists them;
(c) at the highest verbosity, whole live runs through the local API server double with a bearer
    token, a token file, a client certificate and key, and an exec credential plugin never log the
    token, the key or an Authorization header (every log record at DEBUG, stdout and stderr, and
    the ``kubesched run -v=10`` command line in a subprocess);
(d) the RBAC rules in deploy/ grant nothing beyond kube-scheduler's own ClusterRoles
    (system:kube-scheduler and system:volume-scheduler, as data in tests/live/test_deploy.py with
    their source, plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go) but kubesched's own
    Lease lock, and never reach secrets, RBAC objects or impersonation.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import ipaddress
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kubesched.cluster.live import ClusterConfig, ExecConfig, load_kubeconfig
from kubesched.config import parse_config
from kubesched.errors import ApiError, ConfigError
from kubesched.extender.client import new_http_extenders, run_filter_extenders
from kubesched.extender.server import ExtenderApp, ServerThread
from kubesched.framework import Status
from kubesched.live.command import RunOptions, run
from kubesched.live.flags import LeaderElectionFlags, ServingOptions
from kubesched.live.serving import DEFAULT_BIND_ADDRESS, HealthChecks, SchedulerMetrics, build_app, start_serving
from kubesched.objects import Node, Pod
from kubesched.objects.parse import parse_node, parse_pod
from kubesched.plugins.registry import REGISTRY
from kubesched.testing import LocalApiServer

from .live.apihelpers import make_pki, node, placements, pod, wait_until
from .live.test_deploy import SYSTEM_KUBE_SCHEDULER, SYSTEM_VOLUME_SCHEDULER, by_kind, deploy_grants, one
from .live.test_deploy import scheduler_config as deploy_scheduler_config

ROOT = Path(__file__).resolve().parent.parent


# ================================================================ (a) extender TLS
@dataclass(frozen=True)
class SelfSigned:
    cert: Path
    key: Path
    pem: bytes


def self_signed(directory: Path, name: str) -> SelfSigned:
    """A self-signed certificate for 127.0.0.1 (its own issuer, as an extender's generated one)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    pem = cert.public_bytes(serialization.Encoding.PEM)
    (directory / f"{name}.crt").write_bytes(pem)
    (directory / f"{name}.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return SelfSigned(directory / f"{name}.crt", directory / f"{name}.key", pem)


@dataclass
class HttpsExtender:
    url: str
    own: SelfSigned
    other: SelfSigned
    calls: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def https_extender(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpsExtender]:
    d = tmp_path_factory.mktemp("tls")
    own, other = self_signed(d, "extender"), self_signed(d, "someone-else")
    app = ExtenderApp()
    ext = HttpsExtender("", own, other)

    @app.filter_node
    def not_bad(pod: Pod, node: Node) -> str | None:
        ext.calls.append(node.name)  # the handshake succeeded and the request reached the extender
        return "bad" if node.labels.get("bad") else None

    with ServerThread(app, certfile=str(own.cert), keyfile=str(own.key)) as srv:
        ext.url = srv.url
        yield ext


NODES = [parse_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}),
         parse_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2", "labels": {"bad": "1"}}})]
POD = parse_pod({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                 "spec": {"containers": [{"name": "c", "image": "i"}]}})


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# (sentence, the extender entry's extra fields (from the fixture), whether the handshake is accepted)
TLS_CASES: list[tuple[str, Callable[[HttpsExtender], dict[str, Any]], bool]] = [
    ("an https extender with a self-signed certificate and no tlsConfig is refused", lambda e: {}, False),
    ("enableHTTPS without a CA still verifies (kube-scheduler would not)", lambda e: {"enableHTTPS": True}, False),
    ("an empty tlsConfig still verifies", lambda e: {"tlsConfig": {}}, False),
    ("insecure: false verifies", lambda e: {"tlsConfig": {"insecure": False}}, False),
    ("a serverName alone does not turn verification off", lambda e: {"tlsConfig": {"serverName": "127.0.0.1"}},
     False),
    ("another certificate as the CA does not vouch for it", lambda e: {"tlsConfig": {"caData": _b64(e.other.pem)}},
     False),
    ("insecure: true accepts it", lambda e: {"tlsConfig": {"insecure": True}}, True),
    ("insecure: true with enableHTTPS accepts it", lambda e: {"enableHTTPS": True, "tlsConfig": {"insecure": True}},
     True),
    ("its certificate as caData accepts it", lambda e: {"tlsConfig": {"caData": _b64(e.own.pem)}}, True),
    ("its certificate as caFile accepts it", lambda e: {"tlsConfig": {"caFile": str(e.own.cert)}}, True),
]


def _extenders(ext: HttpsExtender, extra: dict[str, Any], *, ignorable: bool = False) -> Any:
    """The extender as the scheduler builds it from a configuration file's entry."""
    cfg = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                        "extenders": [{"urlPrefix": ext.url, "filterVerb": "filter", "httpTimeout": "5s",
                                       "ignorable": ignorable, **extra}]}, file="kubesched.yaml")
    return new_http_extenders(cfg.extenders)


@pytest.mark.parametrize(("extra", "accepted"), [(c[1], c[2]) for c in TLS_CASES], ids=[c[0] for c in TLS_CASES])
def test_extender_tls_is_verified_unless_insecure_or_its_ca_is_given(
        https_extender: HttpsExtender, extra: Callable[[HttpsExtender], dict[str, Any]], accepted: bool) -> None:
    https_extender.calls.clear()
    extenders = _extenders(https_extender, extra(https_extender))
    statuses: dict[str, Status] = {}
    try:
        if accepted:
            kept = run_filter_extenders(extenders, POD, NODES, statuses)
            assert [n.name for n in kept] == ["n1"]
            assert https_extender.calls == ["n1", "n2"]
        else:
            with pytest.raises(ApiError) as e:
                run_filter_extenders(extenders, POD, NODES, statuses)
            assert str(e.value) == (f'Post "{https_extender.url}/filter": tls: failed to verify certificate: '
                                    "x509: certificate signed by unknown authority")
            assert https_extender.calls == [], "the request went out over an unverified connection"
    finally:
        for x in extenders:
            x.close()


def test_an_ignorable_extender_failing_verification_is_skipped_and_never_sent_the_pod(
        https_extender: HttpsExtender) -> None:
    https_extender.calls.clear()
    extenders = _extenders(https_extender, {}, ignorable=True)
    try:
        kept = run_filter_extenders(extenders, POD, NODES, {})
    finally:
        for x in extenders:
            x.close()
    assert [n.name for n in kept] == ["n1", "n2"]
    assert https_extender.calls == []


def test_insecure_together_with_a_ca_is_a_configuration_error_naming_the_field(https_extender: HttpsExtender) -> None:
    with pytest.raises(ConfigError) as e:
        _extenders(https_extender, {"tlsConfig": {"insecure": True, "caData": _b64(https_extender.own.pem)}})
    assert str(e.value) == ("kubesched.yaml: extenders[0].tlsConfig.insecure: specifying a root certificates file "
                            "with the insecure flag is not allowed")


# ================================================================ (b) serving defaults
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening_addresses(port: int) -> set[str]:
    """The IPv4 addresses the kernel lists as listening on ``port`` (/proc/net/tcp, LISTEN)."""
    table = Path("/proc/net/tcp")
    if not table.exists():
        pytest.skip("no /proc/net/tcp: cannot list the listening sockets here")
    out: set[str] = set()
    for line in table.read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, hex_port = local.split(":")
        if state == "0A" and int(hex_port, 16) == port:
            out.add(str(ipaddress.IPv4Address(bytes.fromhex(address)[::-1])))
    return out


def non_loopback_address() -> str | None:
    """An IPv4 address of this host other than loopback (the route out), if any."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: no packet is sent for a UDP connect
            address = str(s.getsockname()[0])
    except OSError:
        return None
    return None if ipaddress.ip_address(address).is_loopback else address


def test_the_bind_address_defaults_to_loopback_not_kube_schedulers_0_0_0_0() -> None:
    from kubesched.cli import main

    assert DEFAULT_BIND_ADDRESS == "127.0.0.1"
    assert ServingOptions().bind_address == "127.0.0.1"
    option = next(p for p in main.commands["run"].params if "--bind-address" in p.opts)
    assert option.default == "127.0.0.1"
    assert "kube-scheduler (0.0.0.0)" in (option.help or ""), "the flag's help states the deviation"
    guide = (ROOT / "docs" / "second-scheduler.md").read_text()
    assert "| `--bind-address` | `127.0.0.1` | " in guide and "Difference from kube-scheduler" in guide


@pytest.mark.parametrize(("bind", "listening"), [
    pytest.param(None, {"127.0.0.1"}, id="by default health and metrics listen on 127.0.0.1 only"),
    pytest.param("0.0.0.0", {"0.0.0.0"}, id="--bind-address 0.0.0.0 listens on every interface"),
])
def test_health_and_metrics_listen_where_the_bind_address_says(bind: str | None, listening: set[str]) -> None:
    port = free_port()
    serving = ServingOptions(secure_port=port) if bind is None else ServingOptions(bind_address=bind, secure_port=port)
    server = start_serving(build_app(SchedulerMetrics(), HealthChecks()), bind_address=serving.bind_address,
                           secure_port=serving.secure_port)
    assert server is not None
    try:
        assert listening_addresses(port) == listening
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).text == "ok"
        other = non_loopback_address()
        if other is not None:
            if bind is None:
                with pytest.raises(httpx.TransportError):
                    httpx.get(f"http://{other}:{port}/healthz", timeout=2)
            else:
                assert httpx.get(f"http://{other}:{port}/healthz", timeout=5).text == "ok"
    finally:
        server.stop()


def test_the_deployment_passes_0_0_0_0_explicitly_and_says_why() -> None:
    """The kubelet probes the pod IP: with the loopback default the probes would fail."""
    text = (ROOT / "deploy" / "deployment.yaml").read_text()
    (container,) = one("Deployment", "kubesched")["spec"]["template"]["spec"]["containers"]
    assert "--bind-address=0.0.0.0" in container["args"]
    assert "kubelet probes the pod IP" in " ".join(text.split())


# ================================================================ (c) no credential in any log
@dataclass
class Secrets:
    token: str = ""
    key_pem: bytes = b""

    def leaks(self, text: str) -> list[str]:
        """What of the secrets (or an unmasked Authorization header) ``text`` shows."""
        found: list[str] = []
        if self.token and self.token in text:
            found.append("the bearer token")
        if self.key_pem:
            body = [ln for ln in self.key_pem.decode().splitlines() if ln and not ln.startswith("-----")]
            if any(ln in text for ln in body) or base64.b64encode(self.key_pem).decode()[:40] in text:
                found.append("the client key")
        if "PRIVATE KEY" in text:
            found.append("a PEM private key")
        for m in re.finditer(r"authorization['\"]?\s*[:=,]\s*['\"]?(?:b['\"])?(bearer|basic)\s+(\S+)", text, re.I):
            if m.group(2).strip("'\",)") != "<masked>":
                found.append(f"an Authorization header ({m.group(1)} ...)")
        return sorted(set(found))


class Capture(logging.Handler):
    """Every log record, formatted with its arguments, exception and stack."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
        self.lines: list[str] = []
        self._lock2 = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        text = self.format(record)
        extra = {k: v for k, v in record.__dict__.items() if k not in logging.LogRecord(
            "", 0, "", 0, "", (), None).__dict__ and k not in ("message", "asctime")}
        with self._lock2:
            self.lines.append(f"{text} {extra!r}" if extra else text)


@pytest.fixture
def all_logs() -> Iterator[Capture]:
    """Root at DEBUG (what ``-v=4`` and above set, so ``-v=10`` too) with every logger's records
    captured; levels and handlers put back afterwards."""
    root = logging.getLogger()
    handler = Capture()
    saved = root.level, {name: lg.level for name, lg in logging.root.manager.loggerDict.items()
                         if isinstance(lg, logging.Logger)}
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    for name in ("httpx", "httpcore", "kubesched", "uvicorn", "uvicorn.error", "uvicorn.access", "asyncio"):
        logging.getLogger(name).setLevel(logging.NOTSET)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(saved[0])
        for name, level in saved[1].items():
            logging.getLogger(name).setLevel(level)


class RequireToken:
    """An ASGI wrapper for the local API server: answers 401 to a request without
    ``Authorization: Bearer <token>`` (so a run can only succeed if the token is sent), and
    records the headers seen."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token
        self.seen: set[str] = set()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self.token:
            got = dict(scope["headers"]).get(b"authorization", b"").decode()
            self.seen.add(got)
            if got != f"Bearer {self.token}":
                body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 401,
                                   "reason": "Unauthorized", "message": "Unauthorized"}).encode()
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def _config_file(directory: Path, kubeconfig: str = "") -> str:
    path = directory / "kubesched.yaml"
    # With --config, kube-scheduler ignores its deprecated --kubeconfig: the file names it.
    client_connection = f"clientConnection:\n  kubeconfig: {kubeconfig}\n" if kubeconfig else ""
    path.write_text(client_connection + """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  resourceLock: leases
  resourceNamespace: kube-system
  resourceName: kubesched
  leaseDuration: 4s
  renewDeadline: 2s
  retryPeriod: 400ms
profiles:
- schedulerName: kubesched
""")
    return str(path)


def _kubeconfig(path: Path, cluster: dict[str, Any], user: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "ctx",
        "clusters": [{"name": "c", "cluster": cluster}], "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}]}))
    return str(path)


@dataclass
class Credential:
    """One way of authenticating: whether it needs HTTPS with client certificates, the
    kubeconfig user (given the directory and the PKI), and the secrets it must not log."""

    tls: bool
    user: Callable[[Path, dict[str, Any], Secrets], dict[str, Any]]


def _exec_plugin(d: Path, pki: dict[str, Any], s: Secrets) -> dict[str, Any]:
    script = d / "credential.py"
    script.write_text("import json, os\n"
                      "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', 'kind': 'ExecCredential',"
                      " 'status': {'token': os.environ['TOKEN'], 'expirationTimestamp': '2099-01-01T00:00:00Z'}}))\n")
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                     "args": [str(script)], "env": [{"name": "TOKEN", "value": s.token}]}}


def _token_file(d: Path, pki: dict[str, Any], s: Secrets) -> dict[str, Any]:
    (d / "token").write_text(s.token + "\n")
    return {"tokenFile": str(d / "token")}


CREDENTIALS: dict[str, Credential] = {
    "a bearer token in the kubeconfig is never logged": Credential(False, lambda d, p, s: {"token": s.token}),
    "a token file's token is never logged": Credential(False, _token_file),
    "an exec credential plugin's token is never logged": Credential(False, _exec_plugin),
    "a client key file is never logged": Credential(True, lambda d, p, s: {
        "client-certificate": p["client"], "client-key": p["client_key"]}),
    "inline client key data is never logged": Credential(True, lambda d, p, s: {
        "client-certificate-data": _b64(p["client_pem"]), "client-key-data": _b64(p["client_key_pem"])}),
}



@dataclass
class Cluster:
    api: LocalApiServer
    kubeconfig: str
    secrets: Secrets
    guard: RequireToken | None


@contextlib.contextmanager
def cluster(tmp_path: Path, credential: Credential, *, token: bool, key: bool) -> Iterator[Cluster]:
    """The local API server (HTTPS requiring a client certificate when the credential is one,
    else refusing requests without the token) with three nodes, and a kubeconfig for it."""
    pki = make_pki(tmp_path)
    secrets = Secrets(token=f"kubesched-secret-{os.urandom(12).hex()}" if token else "",
                      key_pem=pki["client_key_pem"] if key else b"")
    user = credential.user(tmp_path, pki, secrets)
    api = LocalApiServer(bookmark_interval=0.2, certfile=pki["server"] if credential.tls else None,
                         keyfile=pki["server_key"] if credential.tls else None,
                         client_ca=pki["ca"] if credential.tls else None)
    guard = RequireToken(api.app, secrets.token) if secrets.token else None
    if guard is not None:
        api.app = guard  # type: ignore[assignment]
    with api:
        cluster_entry = {"server": api.url, **({"certificate-authority": pki["ca"]} if credential.tls else {})}
        for name in ("n1", "n2", "n3"):
            api.create(node(name))
        yield Cluster(api, _kubeconfig(tmp_path / "kubeconfig", cluster_entry, user), secrets, guard)


def _bound(api: LocalApiServer, names: list[str]) -> bool:
    placed = placements(api)
    return all(placed.get(n) for n in names)


@pytest.fixture
def no_ambient_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


@pytest.mark.parametrize("credential", list(CREDENTIALS.values()), ids=list(CREDENTIALS))
@pytest.mark.usefixtures("no_ambient_cluster")
def test_a_whole_live_run_at_debug_never_logs_a_credential(credential: Credential, tmp_path: Path,
                                                           all_logs: Capture, capfd: pytest.CaptureFixture[str]
                                                           ) -> None:
    key = credential.tls
    with cluster(tmp_path, credential, token=not key, key=key) as c:
        api = c.api
        # Failures on the way, so that the error paths log too: a 401 (an exec token is fetched
        # again), a 500 on a list (the reflector backs off), a 429 with Retry-After on a bind (the
        # client retries), a failed event write.
        api.fail_next(1, 401, verbs=["list"], resources=["pods"])
        api.fail_next(1, 500, verbs=["list"], resources=["nodes"])
        api.fail_next(1, 429, verbs=["create"], resources=["pods"], retry_after=1)
        api.fail_next(1, 500, verbs=["create"], resources=["events"])
        names = ["a", "b", "c"]
        for name in names:
            api.create(pod(name, scheduler="kubesched"))
        stop = threading.Event()
        port = free_port()
        errors: list[BaseException] = []

        def target() -> None:
            try:
                run(RunOptions(config=_config_file(tmp_path), kubeconfig=c.kubeconfig), ServingOptions(
                    secure_port=port), LeaderElectionFlags(), REGISTRY, stop=stop)
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        thread = threading.Thread(target=target, name="kubesched-run-security", daemon=True)
        thread.start()
        try:
            wait_until(lambda: _bound(api, names) or errors, timeout=30, what="the pods bound")
            assert not errors, errors
            health = httpx.get(f"http://127.0.0.1:{port}/healthz?verbose", timeout=5).text
        finally:
            stop.set()
            thread.join(20)
        assert not thread.is_alive() and not errors, errors
    assert "[+]ping ok" in health
    if c.guard is not None:
        assert c.guard.seen >= {f"Bearer {c.secrets.token}"}, "the token was not what authenticated the run"
    out, err = capfd.readouterr()
    logs = "\n".join(all_logs.lines)
    assert any(line.startswith("DEBUG ") for line in all_logs.lines), "DEBUG records were not captured"
    assert f"serving health and metrics on http://127.0.0.1:{port}" in logs
    for where, text in (("the log records", logs), ("stdout", out), ("stderr", err)):
        assert not c.secrets.leaks(text), f"{where} show {c.secrets.leaks(text)}"


@pytest.mark.usefixtures("no_ambient_cluster")
def test_kubesched_run_at_v10_on_the_command_line_never_logs_the_token_or_key(tmp_path: Path) -> None:
    """The real command line, in its own process (its logging set up by ``-v=10`` itself): a
    client certificate and key over HTTPS plus a bearer token; it serves on loopback only."""
    both = Credential(True, lambda d, p, s: {"client-certificate": p["client"], "client-key": p["client_key"],
                                             "token": s.token})
    with cluster(tmp_path, both, token=True, key=True) as c:
        api = c.api
        api.fail_next(1, 500, verbs=["list"], resources=["pods"])
        names = ["a", "b"]
        for name in names:
            api.create(pod(name, scheduler="kubesched"))
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE") or k.startswith("KUBESCHED")}
        env["HOME"] = str(tmp_path)
        # To files, not pipes: -v=10 writes more than a pipe holds before it is read.
        out_path, err_path = tmp_path / "run.stdout", tmp_path / "run.stderr"
        with out_path.open("w") as out_file, err_path.open("w") as err_file:
            proc = subprocess.Popen(
                [sys.executable, "-m", "kubesched.cli", "run", f"--config={_config_file(tmp_path, c.kubeconfig)}",
                 "-v=10", f"--secure-port={port}"],
                stdout=out_file, stderr=err_file, env=env, text=True)
            try:
                wait_until(lambda: _bound(api, names) or proc.poll() is not None, timeout=60, what="the pods bound")
                listening = listening_addresses(port)
            finally:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=30)
        out, err = out_path.read_text(), err_path.read_text()
    assert proc.returncode == 0, err[-3000:]
    assert _bound(api, names)
    assert listening == {"127.0.0.1"}
    assert f"serving health and metrics on http://127.0.0.1:{port}" in err
    # The API client's own transport (kubesched.cluster._http) carries every request, watches included.
    assert re.search(r" D kubesched\.cluster\._http\] GET https://\S+/api/v1/pods\?\S*watch=1\S* 200 OK in ", err), \
        "-v=10 did not log the HTTP layer at debug"
    for where, text in (("stdout", out), ("stderr", err)):
        assert not c.secrets.leaks(text), f"{where} of kubesched run -v=10 shows {c.secrets.leaks(text)}"


@pytest.mark.parametrize(("text", "what"), [
    pytest.param("users:\n- name: u\n  user:\n    token: {token}: x\n", "token",
                 id="a kubeconfig YAML error does not quote the line holding the token"),
    pytest.param("users:\n- name: u\n  user:\n    client-key-data: {key}\n    x: [\n", "key",
                 id="a kubeconfig YAML error does not quote the client key data"),
])
def test_kubeconfig_errors_never_quote_a_credential(text: str, what: str, tmp_path: Path) -> None:
    token = "kubesched-secret-" + os.urandom(8).hex()
    key = _b64(b"-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n")
    path = tmp_path / "kubeconfig"
    path.write_text(text.format(token=token, key=key))
    with pytest.raises(ConfigError) as e:
        load_kubeconfig(str(path))
    message = str(e.value)
    assert token not in message and key[:20] not in message and "\n" not in message
    assert message.startswith(f"{path}: cannot read kubeconfig: invalid YAML (line ")


def test_a_kubeconfig_nested_too_deep_is_refused_with_its_file_named(tmp_path: Path) -> None:
    """Read with libyaml's C loader, whose composer recurses: refused before it is asked to go
    that deep (as load_manifests refuses such a manifest), not a crash."""
    path = tmp_path / "kubeconfig"
    path.write_text("users: " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(ConfigError) as e:
        load_kubeconfig(str(path))
    assert str(e.value) == f"{path}: cannot read kubeconfig: nested deeper than 100 levels"


def test_a_cluster_configuration_printed_or_logged_hides_its_secrets() -> None:
    cfg = ClusterConfig(server="https://k8s", token="tok-secret", key_data=b"key-secret", username="admin",
                        password="pw-secret",
                        exec=ExecConfig(command="aws", env=(("AWS_SECRET_ACCESS_KEY", "env-secret"),)))
    text = repr(cfg) + str(cfg)
    for secret in ("tok-secret", "key-secret", "pw-secret", "env-secret"):
        assert secret not in text
    assert "https://k8s" in text and "admin" in text


# ================================================================ (d) RBAC no wider than kube-scheduler's
# Every grant deploy/ gives the ServiceAccount, as (verb, apiGroup, resource, resourceName or None,
# namespace or None for cluster-wide). kube-scheduler's own rules are SYSTEM_KUBE_SCHEDULER and
# SYSTEM_VOLUME_SCHEDULER (tests/live/test_deploy.py, copied from
# plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go, ClusterRoles "system:kube-scheduler" and
# "system:volume-scheduler", v1.30, plus v1.36's resource.k8s.io rules). Its Lease rules name its own lock, "kube-scheduler"; kubesched's
# name its lock (deploy/configmap.yaml's leaderElection.resourceName) and only in that namespace.
Atom = tuple[str, str, str, "str | None", "str | None"]


def _atoms(rules: list[dict[str, Any]], namespace: str | None) -> set[Atom]:
    out: set[Atom] = set()
    for r in rules:
        assert not r.get("nonResourceURLs"), f"a non-resource rule: {r}"
        names: list[str | None] = list(r.get("resourceNames") or [None])
        out |= {(v, g, res, n, namespace) for v in r["verbs"] for g in r["apiGroups"] for res in r["resources"]
                for n in names}
    return out


def _granted() -> set[Atom]:
    builtin = {"system:volume-scheduler": SYSTEM_VOLUME_SCHEDULER}

    def rules(kind: str, name: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = builtin.get(name) if kind == "ClusterRole" and name in builtin \
            else one(kind, name)["rules"]
        return found

    atoms: set[Atom] = set()
    for binding in by_kind("ClusterRoleBinding"):
        atoms |= _atoms(rules("ClusterRole", binding["roleRef"]["name"]), None)
    for binding in by_kind("RoleBinding"):
        role = binding["roleRef"]
        atoms |= _atoms(rules(role["kind"], role["name"]), binding["metadata"]["namespace"])
    return atoms


def _covered(atom: Atom, reference: set[Atom], lock: str) -> bool:
    verb, group, resource, name, _namespace = atom
    if resource == "leases" and name == lock:
        name = "kube-scheduler"  # the same grant on kubesched's own lock instead of kube-scheduler's
    for rv, rg, rr, rn, _ in reference:
        if rv in (verb, "*") and rg in (group, "*") and rr in (resource, "*") and (rn is None or rn == name):
            return True
    return False


def test_rbac_in_deploy_grants_nothing_kube_scheduler_does_not_hold() -> None:
    reference = _atoms(SYSTEM_KUBE_SCHEDULER, None) | _atoms(SYSTEM_VOLUME_SCHEDULER, None)
    lock = deploy_scheduler_config().leader_election.resource_name
    extra = sorted(a for a in _granted() if not _covered(a, reference, lock))
    assert not extra, f"deploy/ grants beyond system:kube-scheduler + system:volume-scheduler: {extra}"


def test_rbac_in_deploy_holds_no_wildcard_secret_rbac_or_impersonation_access() -> None:
    granted = _granted()
    assert not [a for a in granted if "*" in a[:3]], "a wildcard verb, group or resource"
    assert not [a for a in granted if a[2] in ("secrets", "configmaps", "serviceaccounts", "serviceaccounts/token")]
    assert not [a for a in granted if a[1] == "rbac.authorization.k8s.io" or a[0] in ("escalate", "bind",
                                                                                     "impersonate")]
    # Writes: exactly kube-scheduler's (bindings, pod status, victim deletion, events, PV/PVC
    # binding, ResourceClaims' finalizer and status) and the lock.
    writes = {(v, r) for v, _, r, _, _ in granted if v not in ("get", "list", "watch")}
    assert writes <= {("create", "bindings"), ("create", "pods/binding"), ("patch", "pods/status"),
                      ("update", "pods/status"), ("delete", "pods"), ("create", "events"), ("patch", "events"),
                      ("update", "events"), ("patch", "persistentvolumes"), ("update", "persistentvolumes"),
                      ("patch", "persistentvolumeclaims"), ("update", "persistentvolumeclaims"),
                      ("create", "leases"), ("update", "leases"), ("update", "resourceclaims"),
                      ("update", "resourceclaims/status"), ("patch", "resourceclaims/status"),
                      ("update", "resourceclaims/binding"), ("patch", "resourceclaims/binding")}, writes


def test_the_lease_grants_are_namespaced_to_the_lock_and_no_other_lease() -> None:
    le = deploy_scheduler_config().leader_election
    leases = {a for a in _granted() if a[2] == "leases"}
    assert leases == {("create", "coordination.k8s.io", "leases", None, le.resource_namespace),
                      ("get", "coordination.k8s.io", "leases", le.resource_name, le.resource_namespace),
                      ("update", "coordination.k8s.io", "leases", le.resource_name, le.resource_namespace)}
    # kube-scheduler may create leases anywhere and update its lock in any namespace: narrower here.
    assert len(deploy_grants()) == len(by_kind("ClusterRoleBinding")) + len(by_kind("RoleBinding"))


@pytest.mark.parametrize(("message", "masked"), [
    pytest.param("request headers: {'Authorization': 'Bearer abc.def-123'}",
                 "request headers: {'Authorization': 'Bearer <masked>'}", id="a bearer token in a header dict"),
    pytest.param("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic <masked>", id="basic credentials"),
    pytest.param("headers=[(b'authorization', b'Bearer abc')]", "headers=[(b'authorization', b'Bearer <masked>')]",
                 id="raw header tuples"),
    pytest.param("key: -----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----", "key: <masked EC PRIVATE KEY>",
                 id="a PEM private key"),
])
def test_the_run_commands_log_handlers_mask_credentials_as_client_go(message: str, masked: str) -> None:
    """What a library or plugin might log at -v=10 is masked by the filter `kubesched run` puts
    on its log handlers (client-go prints ``Authorization: Bearer <masked>``)."""
    from kubesched.live.command import RedactCredentials

    record = logging.LogRecord("lib", logging.DEBUG, __file__, 1, "%s", (message,), None)
    assert RedactCredentials().filter(record)
    assert record.getMessage() == masked
