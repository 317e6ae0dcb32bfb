"""The extender's fast paths behave as the plain ones: the SDK's batch handlers and where plain
handlers run, the direct ASGI path (same bytes as through Starlette), and the client's own
HTTP/1.1 transport (kept-alive connections, a server that closes them, gzip, chunked replies,
redirects and proxies left to httpx, timeouts and cut replies worded as Go's net/http)."""

from __future__ import annotations

import gzip
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import numpy as np
import pytest
from builders import make_node, make_pod

from kubesched.config.types import Extender
from kubesched.errors import ApiError
from kubesched.extender import HTTPExtender
from kubesched.extender import client as client_module
from kubesched.extender.server import ExtenderApp, ServerThread
from kubesched.objects import Node, Pod

from .conftest import wire_bytes

NODES = [make_node().name(f"n{i}").label("score", str(i)).obj() for i in range(1, 6)]
POD = make_pod().name("web").uid("uid-web").obj()


def _ext(url: str, **kw: Any) -> HTTPExtender:
    cfg: dict[str, Any] = {"url_prefix": url, "filter_verb": "filter", "prioritize_verb": "prioritize", "weight": 1,
                           "http_timeout": 5.0}
    cfg.update(kw)
    return HTTPExtender(Extender(**cfg))


# ================================================================= batch handlers
@pytest.mark.parametrize("cache", [False, True], ids=["full nodes", "nodeCacheCapable"])
@pytest.mark.parametrize("as_array", [False, True], ids=["lists", "numpy arrays"])
def test_filter_nodes_and_score_nodes(cache: bool, as_array: bool) -> None:
    from kubesched.extender.server import Unresolvable

    app = ExtenderApp()
    calls: list[int] = []

    @app.filter_nodes
    def odd_ones(pod: Pod, nodes: list[Node]) -> Any:
        calls.append(len(nodes))
        verdicts: list[Any] = [None, "n2 is even", True, Unresolvable("n4 is gone"), False]
        return verdicts

    @app.score_nodes
    def by_label(pod: Pod, nodes: list[Node]) -> Any:
        scores = [int(n.labels["score"]) * 2 for n in nodes]
        return np.array(scores, dtype=np.int64) if as_array else scores

    app.node_cache.update(NODES)
    with ServerThread(app) as srv, _ext(srv.url, node_cache_capable=cache) as ext:
        kept, failed, unresolvable = ext.filter(POD, NODES)
        assert [n.name for n in kept] == ["n1", "n3"]
        assert failed == {"n2": "n2 is even", "n5": "node(s) rejected by extender filter odd_ones"}
        assert unresolvable == {"n4": "n4 is gone"}
        assert ext.prioritize(POD, NODES[:3]) == ([("n1", 2), ("n2", 4), ("n3", 6)], 1)
    assert calls == [5]  # one call for all the nodes


def test_batch_handlers_can_take_names() -> None:
    app = ExtenderApp()

    @app.filter_nodes(resolve_nodes=False)
    def by_name(pod: Pod, names: list[str]) -> list[str | None]:
        return [None if n.endswith(("1", "3")) else "no" for n in names]

    @app.score_nodes(resolve_nodes=False)
    def name_length(pod: Pod, names: list[str]) -> list[int]:
        return [len(n) for n in names]

    with ServerThread(app) as srv, _ext(srv.url, node_cache_capable=True) as ext:  # nothing in the cache
        assert [n.name for n in ext.filter(POD, NODES)[0]] == ["n1", "n3"]
        assert ext.prioritize(POD, NODES[:2]) == ([("n1", 2), ("n2", 2)], 1)


@pytest.mark.parametrize(("verb", "handler"), [
    ("filter_nodes", lambda pod, nodes: [None]),
    ("filter_nodes", lambda pod, nodes: {"n1": None}),
    ("filter_nodes", lambda pod, nodes: [3] * len(nodes)),
    ("score_nodes", lambda pod, nodes: [1]),
    ("score_nodes", lambda pod, nodes: [11] * len(nodes)),
    ("score_nodes", lambda pod, nodes: [True] * len(nodes)),
    ("score_nodes", lambda pod, nodes: np.full(len(nodes), 2.5)),
], ids=["too few verdicts", "a mapping", "a verdict of the wrong type", "too few scores", "a score above 10",
        "a bool score", "float scores"])
def test_batch_handlers_that_answer_wrong_get_500(verb: str, handler: Callable[..., Any]) -> None:
    app = ExtenderApp()
    getattr(app, verb)(handler)
    with ServerThread(app) as srv, _ext(srv.url) as ext, pytest.raises(ApiError, match="code 500"):
        if verb == "filter_nodes":
            ext.filter(POD, NODES)
        else:
            ext.prioritize(POD, NODES)


# ============================================================= where handlers run
@pytest.mark.parametrize(("mode", "node_level_inline", "verb_level_inline"), [
    ("auto", True, False), ("thread", False, False), ("inline", True, True)])
def test_sync_handlers(mode: str, node_level_inline: bool, verb_level_inline: bool) -> None:
    seen: dict[str, str] = {}
    app = ExtenderApp(sync_handlers=mode)

    @app.filter_node
    def fits(pod: Pod, node: Node) -> None:
        seen["filter_node"] = threading.current_thread().name

    @app.prioritize
    def flat(pod: Pod, nodes: list[Node]) -> dict[str, int]:
        seen["prioritize"] = threading.current_thread().name
        return {}

    with ServerThread(app) as srv, _ext(srv.url) as ext:
        ext.filter(POD, NODES)
        ext.prioritize(POD, NODES)
        loop_thread = f"extender-server-{srv.port}"
    assert (seen["filter_node"] == loop_thread) is node_level_inline
    assert (seen["prioritize"] == loop_thread) is verb_level_inline


def test_sync_handlers_must_be_known() -> None:
    with pytest.raises(ValueError, match="sync_handlers"):
        ExtenderApp(sync_handlers="sometimes")


# ====================================================== direct ASGI path = Starlette's
def test_the_direct_asgi_path_answers_as_starlette(wire_objects: Any) -> None:
    def build() -> ExtenderApp:
        app = ExtenderApp(prefix="/scheduler")

        @app.filter_node
        def gpu(pod: Pod, node: Node) -> str | None:
            return None if node.allocatable.get("example.com/gpu") else "no GPU"

        @app.score_node
        def gpus(pod: Pod, node: Node) -> int:
            return node.allocatable.get("example.com/gpu", 0)

        app.node_cache.update(wire_objects.nodes)
        return app

    requests = [("filter", wire_bytes("filter-cache-false.json")), ("filter", wire_bytes("filter-cache-true.json")),
                ("prioritize", wire_bytes("prioritize-cache-true.json")), ("filter", b"{nope"),
                ("prioritize", b'{"pod":{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c"}]}},"nodeNames":'
                               b'["node-1"]}'), ("bind", b"{}")]
    answers: list[list[tuple[int, str, bytes]]] = []
    for asgi in (lambda a: a, lambda a: a.asgi):
        app = build()
        with ServerThread(asgi(app)) as srv:
            got = []
            for verb, body in requests:
                r = httpx.post(f"{srv.url}/scheduler/{verb}", content=body, timeout=5)
                got.append((r.status_code, r.headers["content-type"], r.content))
            answers.append(got)
    assert answers[0] == answers[1]
    assert [a[0] for a in answers[0]] == [200, 200, 200, 400, 200, 404]


# ========================================================== the client's transport
class RawServer:
    """An HTTP/1.1 server on 127.0.0.1 that answers each request with ``answer(n)`` (the raw
    reply bytes, and whether to close the connection after it; n counts requests)."""

    def __init__(self, answer: Callable[[int], tuple[bytes, bool]]) -> None:
        self.answer = answer
        self.requests: list[bytes] = []
        self.connections = 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _serve(self) -> None:
        self._sock.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:  # stopped
                return
            self.connections += 1
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        buf = b""
        with conn:
            while not self._stop.is_set():
                while b"\r\n\r\n" not in buf:
                    try:
                        chunk = conn.recv(65536)
                    except OSError:
                        return
                    if not chunk:
                        return
                    buf += chunk
                head, _, rest = buf.partition(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                while len(rest) < length:
                    rest += conn.recv(65536)
                self.requests.append(head + b"\r\n\r\n" + rest[:length])
                buf = rest[length:]
                reply, close = self.answer(len(self.requests))
                try:
                    conn.sendall(reply)
                except OSError:
                    return
                if close:
                    return

    def stop(self) -> None:
        self._stop.set()
        self._sock.close()
        self._thread.join(5)


@pytest.fixture
def raw_server() -> Iterator[Callable[[Callable[[int], tuple[bytes, bool]]], RawServer]]:
    started: list[RawServer] = []

    def make(answer: Callable[[int], tuple[bytes, bool]]) -> RawServer:
        s = RawServer(answer)
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()


def ok(body: bytes, *headers: str) -> bytes:
    extra = "".join(f"{h}\r\n" for h in headers)
    return (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
            .encode() + body)


NAMES_REPLY = b'{"NodeNames":["n1"],"FailedNodes":{"n2":"no"}}'


def test_the_fast_transport_is_used_and_keeps_connections(raw_server: Any) -> None:
    srv = raw_server(lambda n: (ok(NAMES_REPLY), False))
    with _ext(srv.url, node_cache_capable=True) as ext:
        assert ext._fast is not None
        for _ in range(4):
            kept, failed, _ = ext.filter(POD, NODES[:2])
            assert [n.name for n in kept] == ["n1"] and failed == {"n2": "no"}
        assert ext._fast.connections_made == 1
    assert srv.connections == 1
    head = srv.requests[0].split(b"\r\n\r\n")[0].decode()
    assert head.startswith("POST /filter HTTP/1.1\r\n")
    for header in (f"Host: 127.0.0.1:{srv.port}", "User-Agent: kubesched-extender-client", "Accept-Encoding: gzip",
                   "Content-Type: application/json"):
        assert header in head.split("\r\n")


def test_a_connection_the_server_closed_is_replaced(raw_server: Any) -> None:
    # Every reply is followed by the server closing the connection (no "Connection: close").
    srv = raw_server(lambda n: (ok(NAMES_REPLY), True))
    with _ext(srv.url, node_cache_capable=True) as ext:
        for _ in range(3):
            assert [n.name for n in ext.filter(POD, NODES[:2])[0]] == ["n1"]
    assert srv.connections == 3 and len(srv.requests) == 3


def test_gzip_and_chunked_replies(raw_server: Any) -> None:
    packed = gzip.compress(NAMES_REPLY)
    chunked = b"".join(f"{len(c):x}\r\n".encode() + c + b"\r\n" for c in (NAMES_REPLY[:10], NAMES_REPLY[10:])) \
        + b"0\r\n\r\n"
    replies = [ok(packed, "Content-Encoding: gzip"),
               b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked,
               ok(packed[:-4], "Content-Encoding: gzip")]
    srv = raw_server(lambda n: (replies[n - 1], False))
    with _ext(srv.url, node_cache_capable=True) as ext:
        assert [n.name for n in ext.filter(POD, NODES[:2])[0]] == ["n1"]
        assert [n.name for n in ext.filter(POD, NODES[:2])[0]] == ["n1"]
        with pytest.raises(ApiError, match=f'^Post "{srv.url}/filter": '):
            ext.filter(POD, NODES[:2])


def test_a_redirect_is_followed_by_httpx(raw_server: Any) -> None:
    target = raw_server(lambda n: (ok(NAMES_REPLY), False))
    srv = raw_server(lambda n: (f"HTTP/1.1 307 Temporary Redirect\r\nLocation: {target.url}/filter\r\n"
                                "Content-Length: 0\r\n\r\n".encode(), False))
    with _ext(srv.url, node_cache_capable=True) as ext:
        assert [n.name for n in ext.filter(POD, NODES[:2])[0]] == ["n1"]
    assert len(target.requests) == 1 and target.requests[0].endswith(srv.requests[-1].split(b"\r\n\r\n", 1)[1])


def test_proxies_and_custom_transports_stay_with_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    with _ext("http://extender.invalid:8888") as remote, _ext("http://127.0.0.1:8888") as loopback:
        assert remote._fast is None  # the environment's proxy applies: httpx decides
        assert loopback._fast is not None  # Go never proxies loopback
    with HTTPExtender(Extender(url_prefix="http://127.0.0.1:1", filter_verb="filter"),
                      transport=httpx.MockTransport(lambda r: httpx.Response(200))) as mocked:
        assert mocked._fast is None


def test_failures_read_as_go_net_http(raw_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()

    def answer(n: int) -> tuple[bytes, bool]:
        if n == 1:
            return b"", True  # closed without a reply
        if n == 2:
            return b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n", False
        if n == 3:  # the headers, then nothing
            return b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{", False
        release.wait(5)
        return ok(b"[" + b"0," * 100 + b"0]"), False

    srv = raw_server(answer)
    with _ext(srv.url, node_cache_capable=True, http_timeout=0.5) as ext:
        with pytest.raises(ApiError) as e:
            ext.filter(POD, NODES[:1])
        assert str(e.value) == f'Post "{srv.url}/filter": EOF'
        with pytest.raises(ApiError) as e:
            ext.filter(POD, NODES[:1])
        assert str(e.value) == f"failed filter with extender at URL {srv.url}/filter, code 503"
        with pytest.raises(ApiError) as e:
            ext.filter(POD, NODES[:1])
        assert str(e.value) == (f'Post "{srv.url}/filter": context deadline exceeded '
                                "(Client.Timeout or context cancellation while reading body)")
        monkeypatch.setattr(client_module, "_MAX_REPLY_BYTES", 100)
        release.set()
        with pytest.raises(ApiError) as e:
            ext.prioritize(POD, NODES[:1])
        assert str(e.value) == f'Post "{srv.url}/prioritize": reply larger than 100 bytes'
