"""HTTPS between the client and the SDK server (uvicorn in a thread, 127.0.0.1), with a CA
generated for the test: verification on by default (also with enableHTTPS and no CA, unlike
kube-scheduler), caFile/caData, serverName, insecure, client certificates from files and from
data, and the failures that must happen (untrusted server, hostname mismatch, missing or
untrusted client certificate)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from builders import make_node, make_pod

from kubesched.config.types import Extender, ExtenderTLSConfig
from kubesched.errors import ApiError
from kubesched.extender import HTTPExtender
from kubesched.extender.client import go_hostname_error
from kubesched.extender.server import ExtenderApp, ServerThread
from kubesched.objects import Node, Pod

from .conftest import PKI, Pair

NODES = [make_node().name("n1").obj(), make_node().name("n2").label("bad", "1").obj()]
POD = make_pod().name("p").obj()


def _app() -> ExtenderApp:
    app = ExtenderApp()

    @app.filter_node
    def not_bad(pod: Pod, node: Node) -> str | None:
        return "bad" if node.labels.get("bad") else None

    return app


@contextmanager
def https_server(pair: Pair, client_ca: Pair | None = None) -> Iterator[str]:
    with ServerThread(_app(), certfile=str(pair.cert), keyfile=str(pair.key),
                      client_ca=str(client_ca.cert) if client_ca else None) as srv:
        yield srv.url


def _filter(url: str, tls: ExtenderTLSConfig | None = None, enable_https: bool = False) -> list[str]:
    cfg = Extender(url_prefix=url, filter_verb="filter", tls_config=tls, enable_https=enable_https, http_timeout=5.0)
    with HTTPExtender(cfg) as ext:
        kept, _, _ = ext.filter(POD, NODES)
    return [n.meta.name for n in kept]


OK_CASES = [
    ("caFile", lambda p: ExtenderTLSConfig(ca_file=str(p.ca.cert)), False),
    ("caData", lambda p: ExtenderTLSConfig(ca_data=p.ca.cert_pem), False),
    ("insecure skips verification", lambda p: ExtenderTLSConfig(insecure=True), False),
    ("insecure with enableHTTPS skips verification", lambda p: ExtenderTLSConfig(insecure=True), True),
]


@pytest.mark.parametrize(("case", "tls", "enable_https"), OK_CASES, ids=[c[0] for c in OK_CASES])
def test_https_succeeds(case: str, tls: object, enable_https: bool, pki: PKI) -> None:
    with https_server(pki.server) as url:
        assert _filter(url, tls(pki), enable_https) == ["n1"]  # type: ignore[operator]


# Verification failures read as Go's net/http, crypto/tls and crypto/x509 word them.
TLS_FAILED = "tls: failed to verify certificate: x509: "


def test_verification_is_on_by_default(pki: PKI) -> None:
    with https_server(pki.server) as url, pytest.raises(ApiError) as e:
        _filter(url)
    assert str(e.value) == f'Post "{url}/filter": {TLS_FAILED}certificate signed by unknown authority'


def test_enable_https_without_a_ca_still_verifies(pki: PKI) -> None:
    """A deliberate difference from kube-scheduler, whose makeTransport turns verification off
    for enableHTTPS without a CA: kubesched verifies unless ``insecure: true`` (issue 13)."""
    with https_server(pki.server) as url, pytest.raises(ApiError) as e:
        _filter(url, None, enable_https=True)
    assert str(e.value) == f'Post "{url}/filter": {TLS_FAILED}certificate signed by unknown authority'


def test_a_hostname_mismatch_fails(pki: PKI) -> None:
    with https_server(pki.wrong_name) as url, pytest.raises(ApiError) as e:
        _filter(url, ExtenderTLSConfig(ca_data=pki.ca.cert_pem))
    assert str(e.value) == (f'Post "{url}/filter": {TLS_FAILED}cannot validate certificate for 127.0.0.1 because '
                            "it doesn't contain any IP SANs")


def test_server_name_overrides_the_name_verified(pki: PKI) -> None:
    with https_server(pki.named) as url:
        assert _filter(url, ExtenderTLSConfig(ca_data=pki.ca.cert_pem, server_name="extender.test")) == ["n1"]
        with pytest.raises(ApiError) as e:
            _filter(url, ExtenderTLSConfig(ca_data=pki.ca.cert_pem))
        assert str(e.value).endswith(f"{TLS_FAILED}cannot validate certificate for 127.0.0.1 because it doesn't "
                                     "contain any IP SANs")
        with pytest.raises(ApiError) as e:
            _filter(url, ExtenderTLSConfig(ca_data=pki.ca.cert_pem, server_name="other.test"))
        assert str(e.value) == f'Post "{url}/filter": {TLS_FAILED}certificate is valid for extender.test, not other.test'


@pytest.mark.parametrize(
    ("cert", "host", "want"),
    [
        ({"subjectAltName": (("DNS", "a.test"), ("DNS", "b.test"))}, "c.test",
         "x509: certificate is valid for a.test, b.test, not c.test"),
        ({"subjectAltName": (("IP Address", "10.0.0.1"), ("IP Address", "0:0:0:0:0:0:0:1\n"))}, "127.0.0.1",
         "x509: certificate is valid for 10.0.0.1, ::1, not 127.0.0.1"),
        ({"subjectAltName": (("DNS", "a.test"),)}, "::1",
         "x509: cannot validate certificate for ::1 because it doesn't contain any IP SANs"),
        ({"subjectAltName": (("IP Address", "10.0.0.1"),)}, "a.test",
         "x509: certificate is not valid for any names, but wanted to match a.test"),
        ({"subject": ((("commonName", "*.example.test"),),)}, "api.example.test",
         "x509: certificate relies on legacy Common Name field, use SANs instead"),
        ({"subject": ((("commonName", "other.test"),),)}, "api.example.test",
         "x509: certificate is not valid for any names, but wanted to match api.example.test"),
    ],
    ids=["DNS names", "IP addresses", "an IP host and no IP SAN", "a DNS host and only IP SANs",
         "only a matching Common Name", "only another Common Name"],
)
def test_go_hostname_error_text(cert: dict[str, object], host: str, want: str) -> None:
    assert go_hostname_error(cert, host) == want


CLIENT_CERT_CASES = [
    ("from certFile/keyFile", lambda p: ExtenderTLSConfig(ca_data=p.ca.cert_pem, cert_file=str(p.client.cert),
                                                          key_file=str(p.client.key))),
    ("from certData/keyData", lambda p: ExtenderTLSConfig(ca_data=p.ca.cert_pem, cert_data=p.client.cert_pem,
                                                          key_data=p.client.key_pem)),
]


@pytest.mark.parametrize(("case", "tls"), CLIENT_CERT_CASES, ids=[c[0] for c in CLIENT_CERT_CASES])
def test_client_certificates(case: str, tls: object, pki: PKI) -> None:
    with https_server(pki.server, client_ca=pki.ca) as url:
        assert _filter(url, tls(pki)) == ["n1"]  # type: ignore[operator]


@pytest.mark.parametrize(
    "tls",
    [lambda p: ExtenderTLSConfig(ca_data=p.ca.cert_pem),
     lambda p: ExtenderTLSConfig(ca_data=p.ca.cert_pem, cert_data=p.rogue_client.cert_pem,
                                 key_data=p.rogue_client.key_pem)],
    ids=["no client certificate", "a client certificate from an untrusted CA"],
)
def test_server_requiring_client_certificates_rejects(tls: object, pki: PKI) -> None:
    with https_server(pki.server, client_ca=pki.ca) as url, pytest.raises(ApiError) as e:
        _filter(url, tls(pki))  # type: ignore[operator]
    assert str(e.value).startswith(f'Post "{url}/filter": ')


def test_the_url_scheme_decides_the_protocol(pki: PKI) -> None:
    with ServerThread(_app()) as srv:  # plain HTTP, although TLS settings are given
        assert _filter(srv.url, ExtenderTLSConfig(ca_data=pki.ca.cert_pem), enable_https=False) == ["n1"]
        assert _filter(srv.url, None, enable_https=True) == ["n1"]
