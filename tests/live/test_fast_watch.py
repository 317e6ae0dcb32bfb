"""Watches through the API client's fast transport (kubesched.cluster._http.Pool.stream): the
body read as it arrives, a stream that ends or is cut ending quietly as client-go's
StreamWatcher does, a blocked read unblocked by abort, and httpx still used where the fast
path cannot go."""

from __future__ import annotations

import gzip
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from kubesched.cluster import _http
from kubesched.cluster.live import ApiClient, ClusterConfig, GoneError, WatchStream
from kubesched.errors import ApiError
from kubesched.testing.apiserver import LocalApiServer

from .apihelpers import node, read_request_head, wait_until


class Scripted:
    """A server on 127.0.0.1 that answers one connection with ``pieces`` (each sent on its
    own), then holds the connection open until ``release`` is set (or closes it at once when
    ``hold`` is False). ``requests``: what it read."""

    def __init__(self, pieces: list[bytes], *, hold: bool = False) -> None:
        self.pieces = pieces
        self.hold = hold
        self.release = threading.Event()
        self.requests: list[bytes] = []
        self.srv = socket.create_server(("127.0.0.1", 0))
        self.port = self.srv.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.srv.accept()
        except OSError:
            return
        with conn:
            data = read_request_head(conn)
            if b"\r\n\r\n" not in data:
                return
            self.requests.append(data)
            for piece in self.pieces:
                conn.sendall(piece)
            if self.hold:
                self.release.wait(30.0)

    def close(self) -> None:
        self.release.set()
        self.srv.close()


@pytest.fixture
def scripted() -> Iterator[list[Scripted]]:
    made: list[Scripted] = []
    yield made
    for s in made:
        s.close()


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


EV1 = b'{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"2"}}}\n'
EV2 = b'{"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"3"}}}\n'
CHUNKED = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
GZIPPED = gzip.compress(EV1 + EV2)

BODIES = [
    ("one event a chunk is read event by event", [CHUNKED, _chunk(EV1), _chunk(EV2), b"0\r\n\r\n"]),
    ("an event split across chunks is joined", [CHUNKED, _chunk(EV1[:10]), _chunk(EV1[10:] + EV2), b"0\r\n\r\n"]),
    ("a chunk split across reads is joined", [CHUNKED, _chunk(EV1)[:7], _chunk(EV1)[7:], _chunk(EV2), b"0\r\n\r\n"]),
    ("a Content-Length body is read to its length",
     [b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(EV1 + EV2), EV1, EV2]),
    ("a body that runs to the end of the connection is read to it", [b"HTTP/1.0 200 OK\r\n\r\n", EV1, EV2]),
    ("a gzip-encoded body is inflated as it arrives",
     [b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
      _chunk(GZIPPED[:20]), _chunk(GZIPPED[20:]), b"0\r\n\r\n"]),
]


@pytest.mark.parametrize("pieces", [b[1] for b in BODIES], ids=[b[0] for b in BODIES])
def test_a_streamed_body_arrives_whole(scripted: list[Scripted], pieces: list[bytes]) -> None:
    srv = Scripted(pieces)
    scripted.append(srv)
    pool = _http.Pool("127.0.0.1", srv.port)
    stream = pool.stream("GET", "/api/v1/pods?watch=1", deadline=_far(), read_timeout=10.0)
    try:
        assert stream.status_code == 200
        assert b"".join(stream.chunks()) == EV1 + EV2
    finally:
        stream.close()
        pool.close()


def _far() -> float:
    return time.monotonic() + 10.0


ENDINGS = [
    ("a stream closed after its last event ends quietly", [CHUNKED, _chunk(EV1), _chunk(EV2), b"0\r\n\r\n"], False,
     ["2", "3"]),
    ("a stream cut mid-event ends quietly without the partial event", [CHUNKED, _chunk(EV1), _chunk(EV2[:15])],
     False, ["2"]),
    ("a stream cut mid-chunk ends quietly", [CHUNKED, _chunk(EV1), _chunk(EV2)[:20]], False, ["2"]),
    ("a stream whose chunk framing is garbled ends quietly", [CHUNKED, _chunk(EV1), b"zz\r\n"], False, ["2"]),
    ("a stream silent past the read timeout ends quietly", [CHUNKED, _chunk(EV1)], True, ["2"]),
]


@pytest.mark.parametrize("pieces, hold, rvs", [e[1:] for e in ENDINGS], ids=[e[0] for e in ENDINGS])
def test_a_watch_through_the_fast_transport_ends_as_client_go_s_stream_watcher(
        scripted: list[Scripted], pieces: list[bytes], hold: bool, rvs: list[str]) -> None:
    srv = Scripted(pieces, hold=hold)
    scripted.append(srv)
    # timeout=1: the watch's read timeout is timeoutSeconds (1) + the client's timeout (1).
    with ApiClient(ClusterConfig(server=f"http://127.0.0.1:{srv.port}"), qps=0, timeout=1.0) as client:
        seen = []
        with client.watch("pods", "1", timeout_seconds=1) as stream:
            assert isinstance(stream.response, _http.Stream)
            for etype, obj in stream.events():
                seen.append((etype, obj["metadata"]["resourceVersion"]))
    assert [rv for _, rv in seen] == rvs
    assert srv.requests[0].startswith(b"GET /api/v1/pods?watch=1&resourceVersion=1&allowWatchBookmarks=true"
                                      b"&timeoutSeconds=1 HTTP/1.1\r\n")


def _status(code: int, reason: str, message: str) -> list[bytes]:
    body = b'{"kind":"Status","code":%d,"message":"%s"}' % (code, message.encode())
    return [b"HTTP/1.1 %d %s\r\nContent-Length: %d\r\n\r\n%s" % (code, reason.encode(), len(body), body)]


REFUSALS = [
    ("a line that is not an event is an error", [CHUNKED, _chunk(b"not json\n"), b"0\r\n\r\n"], ApiError, 500,
     "unable to decode"),
    ("a 410 answer is Gone", _status(410, "Gone", "too old resource version"), GoneError, 410, "too old"),
    ("a 403 answer is its status's message", _status(403, "Forbidden", "pods is forbidden"), ApiError, 403,
     "pods is forbidden"),
]


@pytest.mark.parametrize("pieces, error, status, message", [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_a_watch_through_the_fast_transport_fails_as_the_httpx_one_did(
        scripted: list[Scripted], pieces: list[bytes], error: type[ApiError], status: int, message: str) -> None:
    srv = Scripted(pieces)
    scripted.append(srv)
    with ApiClient(ClusterConfig(server=f"http://127.0.0.1:{srv.port}"), qps=0, timeout=2.0) as client:
        with pytest.raises(error) as e, client.watch("pods", "1") as stream:
            list(stream.events())
    assert e.value.status == status and message in str(e.value)


def test_abort_unblocks_a_watch_waiting_for_its_next_event(scripted: list[Scripted]) -> None:
    srv = Scripted([CHUNKED, _chunk(EV1)], hold=True)
    scripted.append(srv)
    seen: list[str] = []
    done = threading.Event()
    with ApiClient(ClusterConfig(server=f"http://127.0.0.1:{srv.port}"), qps=0) as client:
        with client.watch("pods", "1") as stream:
            def read() -> None:
                for etype, _ in stream.events():
                    seen.append(etype)
                done.set()

            reader = threading.Thread(target=read, daemon=True)
            reader.start()
            wait_until(lambda: seen == ["ADDED"], what="the first event")
            stream.abort()
            reader.join(10.0)
            assert done.is_set() and stream.aborted


def test_an_informer_s_watch_goes_through_the_fast_transport_and_test_probes_see_it() -> None:
    with LocalApiServer() as api, ApiClient(ClusterConfig(server=api.url), qps=0) as client:
        api.create(node("n1"))
        _, rv = client.list("nodes")
        sent: list[tuple[str, str]] = []
        client._http.event_hooks["request"].append(  # noqa: SLF001 - the probe the fault matrix uses
            lambda r: sent.append((r.method, r.url.params.get("watch", ""))))
        with client.watch("nodes", "0") as stream:
            assert isinstance(stream.response, _http.Stream)
            etype, obj = next(stream.events())
            assert (etype, obj["metadata"]["name"]) == ("ADDED", "n1")
            stream.abort()
        assert sent == [("GET", "1")] and rv


def test_a_swapped_httpx_client_still_serves_watches() -> None:
    body = EV1 + EV2
    with ApiClient(ClusterConfig(server="http://api.invalid"), qps=0) as client:
        client._http = httpx.Client(  # noqa: SLF001 - as tests swap in a mock transport
            base_url="http://api.invalid", transport=httpx.MockTransport(lambda r: httpx.Response(200, content=body)))
        with client.watch("pods", "1") as stream:
            assert isinstance(stream, WatchStream) and isinstance(stream.response, httpx.Response)
            assert [e for e, _ in stream.events()] == ["ADDED", "MODIFIED"]
