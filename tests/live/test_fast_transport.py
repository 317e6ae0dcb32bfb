"""The API client's fast transport (kubesched.cluster._http): replies read as Go's transport
reads them, connections kept alive, failures classified as client-go classifies them, and
httpx still used where the fast path cannot go."""

from __future__ import annotations

import gzip
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from kubesched.cluster import _http
from kubesched.cluster.live import ApiClient, ClusterConfig, TransportError
from kubesched.testing.apiserver import LocalApiServer

from .apihelpers import node, read_request_head


@pytest.fixture
def canned() -> Iterator[tuple[int, list[bytes]]]:
    """A server on 127.0.0.1 that answers each connection with the next canned reply (then
    closes it), recording the request it read."""
    replies: list[bytes] = []
    seen: list[bytes] = []
    srv = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                seen.append(read_request_head(conn))
                if replies:
                    conn.sendall(replies.pop(0))

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield srv.getsockname()[1], replies
    finally:
        srv.close()


BODY = b'{"kind":"Status","code":201}'
REPLIES = [
    ("a Content-Length body", b"HTTP/1.1 201 Created\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY), 201),
    ("a chunked body with a trailer",
     b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n" + BODY[:5] + b"\r\n"
     + b"%x\r\n" % (len(BODY) - 5) + BODY[5:] + b"\r\n0\r\nX-Trailer: 1\r\n\r\n", 200),
    ("a gzip-encoded body", b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n"
     % len(gzip.compress(BODY)) + gzip.compress(BODY), 200),
    ("a body that runs to the end of the connection", b"HTTP/1.0 200 OK\r\n\r\n" + BODY, 200),
    ("a 100 Continue before the reply", b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 409 Conflict\r\nContent-Length: %d"
     b"\r\n\r\n%s" % (len(BODY), BODY), 409),
]


@pytest.mark.parametrize("reply, status", [r[1:] for r in REPLIES], ids=[r[0] for r in REPLIES])
def test_replies_are_read_whole(canned: tuple[int, list[bytes]], reply: bytes, status: int) -> None:
    port, replies = canned
    replies.append(reply)
    pool = _http.Pool("127.0.0.1", port, headers={"User-Agent": "t"})
    got = pool.request("POST", "/x", b"{}", headers="Content-Type: application/json\r\n",
                       deadline=_far())
    assert (got.status_code, got.content) == (status, BODY)
    pool.close()


def _far() -> float:
    return time.monotonic() + 10.0


FAILURES = [
    ("nothing listening is a refused connection", "refused", None),
    ("a connection closed before any reply is an EOF", "eof", b""),
    ("a reply cut in its headers is an EOF", "eof", b"HTTP/1.1 200 OK\r\nContent-Le"),
    ("a body shorter than its Content-Length is an EOF", "eof", b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}"),
    ("a garbled status line is an EOF", "eof", b"SMTP ready\r\n\r\n"),
]


@pytest.mark.parametrize("kind, reply", [f[1:] for f in FAILURES], ids=[f[0] for f in FAILURES])
def test_failures_are_classified_as_client_go_does(canned: tuple[int, list[bytes]], kind: str,
                                                   reply: bytes | None) -> None:
    port, replies = canned
    if reply is None:
        probe = socket.create_server(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
    else:
        replies.append(reply)
    with ApiClient(ClusterConfig(server=f"http://127.0.0.1:{port}"), qps=0, timeout=5.0) as client:
        with pytest.raises(TransportError) as e:
            client.request("create", "pods", namespace="default", name="p", subresource="binding", body={})
    assert e.value.kind == kind


def test_requests_share_one_kept_alive_connection_and_test_probes_see_them() -> None:
    with LocalApiServer() as api, ApiClient(ClusterConfig(server=api.url), qps=0) as client:
        api.create(node("n1"))
        sent: list[tuple[str, str]] = []
        client._http.event_hooks["request"].append(  # noqa: SLF001 - the probe the fault matrix uses
            lambda r: sent.append((r.method, r.url.path)))
        for _ in range(5):
            items, _ = client.list("nodes")
            assert [i["metadata"]["name"] for i in items] == ["n1"]
        assert client._fast is not None and client._fast.connections_made == 1  # noqa: SLF001
        assert sent == [("GET", "/api/v1/nodes")] * 5


def test_a_proxy_in_the_environment_leaves_requests_to_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    with ApiClient(ClusterConfig(server="https://api.invalid"), qps=0) as client:
        assert client._fast is None  # noqa: SLF001


def test_a_swapped_httpx_client_is_used() -> None:
    with ApiClient(ClusterConfig(server="http://api.invalid"), qps=0) as client:
        client._http = httpx.Client(  # noqa: SLF001 - as tests swap in a mock transport
            base_url="http://api.invalid",
            transport=httpx.MockTransport(lambda r: httpx.Response(200, json={"metadata": {"resourceVersion": "3"},
                                                                              "items": []})))
        assert client.list("nodes") == ([], "3")
