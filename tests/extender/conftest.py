"""Shared pieces of the extender tests: the wire fixtures captured from kube-scheduler v1.30,
a hand-written stdlib http.server extender that records what it receives, and a throwaway PKI.

Every server binds 127.0.0.1 only; every wait is bounded.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubesched.objects import Node, Pod
from kubesched.objects.parse import parse_node, parse_pod

WIRE = Path(__file__).resolve().parents[3] / "shared" / "extender-wire"


def wire_bytes(name: str) -> bytes:
    return (WIRE / name).read_bytes()


def wire_json(name: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(wire_bytes(name))
    return value


@dataclass(frozen=True)
class WireObjects:
    """The pod, nodes and preemption victims of the captured requests, parsed from the
    fixtures' own JSON (so each object's raw is exactly what kube-scheduler sent)."""

    pod: Pod
    nodes: list[Node]
    victims: dict[str, tuple[list[Pod], int]]


@pytest.fixture(scope="session")
def wire_objects() -> WireObjects:
    f = wire_json("filter-cache-false.json")
    p = wire_json("preempt-cache-false.json")
    victims = {node: ([parse_pod(x) for x in v["Pods"]], v["NumPDBViolations"])
               for node, v in p["NodeNameToVictims"].items()}
    return WireObjects(parse_pod(f["Pod"]), [parse_node(n) for n in f["Nodes"]["items"]], victims)


# ----------------------------------------------------------------- a stdlib extender
@dataclass
class Answer:
    status: int = 200
    body: bytes = b"{}"
    delay: float = 0.0  # seconds to stall before answering (released early when the server stops)
    content_type: str = "application/json"


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: bytes
    client_port: int


Responder = Callable[[str, bytes], Answer]


@dataclass
class StubExtender:
    """An extender written by hand on http.server (HTTP/1.1, keep-alive): records each POST
    and answers with ``respond(path, body)``."""

    respond: Responder = field(default=lambda path, body: Answer())
    requests: list[Recorded] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._release = threading.Event()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                stub.requests.append(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body,
                                              self.client_address[1]))
                answer = stub.respond(self.path, body)
                if answer.delay:
                    stub._release.wait(answer.delay)
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                try:
                    self.wfile.write(answer.body)
                except OSError:  # the client gave up (timeout tests)
                    pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that timed out and hung up is part of the tests

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> StubExtender:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def bodies(self, verb: str) -> list[bytes]:
        return [r.body for r in self.requests if r.path.endswith("/" + verb)]


@pytest.fixture
def stub_factory() -> Iterator[Callable[[Responder], StubExtender]]:
    started: list[StubExtender] = []

    def make(respond: Responder) -> StubExtender:
        s = StubExtender(respond).start()
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()


def reply(obj: Any, status: int = 200) -> Answer:
    return Answer(status, json.dumps(obj).encode())


# ---------------------------------------------------------------------------- PKI
@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path

    @property
    def cert_pem(self) -> bytes:
        return self.cert.read_bytes()

    @property
    def key_pem(self) -> bytes:
        return self.key.read_bytes()


@dataclass(frozen=True)
class PKI:
    ca: Pair
    server: Pair  # SAN 127.0.0.1, localhost
    wrong_name: Pair  # SAN other.example only
    named: Pair  # SAN extender.test only
    client: Pair  # clientAuth, signed by ca
    rogue_ca: Pair  # a CA nobody trusts
    rogue_client: Pair  # a client certificate signed by rogue_ca


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write(d: Path, name: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> Pair:
    c = d / f"{name}.crt"
    k = d / f"{name}.key"
    c.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    k.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))
    return Pair(c, k)


def _ca(d: Path, name: str) -> tuple[Pair, x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _key()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return _write(d, name, cert, key), cert, key


def _leaf(d: Path, name: str, ca_cert: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey,
          sans: list[x509.GeneralName], usage: x509.ObjectIdentifier) -> Pair:
    key = _key()
    now = dt.datetime.now(dt.UTC)
    builder = (x509.CertificateBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
               .issuer_name(ca_cert.subject).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(hours=1))
               .not_valid_after(now + dt.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return _write(d, name, builder.sign(ca_key, hashes.SHA256()), key)


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    import ipaddress

    d = tmp_path_factory.mktemp("pki")
    ca, ca_cert, ca_key = _ca(d, "test-ca")
    rogue, rogue_cert, rogue_key = _ca(d, "rogue-ca")
    server = ExtendedKeyUsageOID.SERVER_AUTH
    client = ExtendedKeyUsageOID.CLIENT_AUTH
    loopback = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
    return PKI(
        ca=ca,
        server=_leaf(d, "server", ca_cert, ca_key, loopback, server),
        wrong_name=_leaf(d, "wrong-name", ca_cert, ca_key, [x509.DNSName("other.example")], server),
        named=_leaf(d, "named", ca_cert, ca_key, [x509.DNSName("extender.test")], server),
        client=_leaf(d, "client", ca_cert, ca_key, [], client),
        rogue_ca=rogue,
        rogue_client=_leaf(d, "rogue-client", rogue_cert, rogue_key, [], client),
    )
