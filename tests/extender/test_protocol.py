"""The SDK's HTTP/1.1 protocol (kubesched.extender._protocol.VerbProtocol), driven by raw sockets:
plain verb requests answered past h11 and ASGI, with the headers uvicorn writes, kept alive,
pipelined or split across reads; anything else handed to h11 with the bytes not consumed yet
(chunked bodies, Expect, HTTP/1.0, other paths, malformed heads); keep-alive expiry and shutdown.
Every wait is bounded; nothing is timed."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from builders import make_node, make_pod

from kubesched.extender import wire
from kubesched.extender._protocol import VerbProtocol
from kubesched.extender.server import ExtenderApp, FilterResult, ServerThread, _uvicorn_config
from kubesched.objects import Node, Pod

NODES = [make_node().name(f"n{i}").capacity(cpu="4", pods=110).obj() for i in range(4)]
POD = make_pod().name("web").uid("uid-web").req(cpu="100m").obj()
NAMES_BODY = wire.extender_args(POD, NODES, True)
FULL_BODY = wire.extender_args(POD, NODES, False)


def build_app(**kw: Any) -> ExtenderApp:
    app = ExtenderApp(prefix="/scheduler", **kw)

    @app.filter_nodes
    def odd_out(pod: Pod, nodes: list[Node]) -> list[str | None]:
        return ["odd" if n.meta.name[-1] in "13" else None for n in nodes]

    @app.score_nodes
    def by_index(pod: Pod, nodes: list[Node]) -> list[int]:
        return [int(n.meta.name[1:]) for n in nodes]

    app.node_cache.update(NODES)
    return app


def expected(app: ExtenderApp, verb: str, body: bytes) -> bytes:
    status, reply = asyncio.run(app.serve_verb(verb, body))
    assert status == 200
    return reply


@pytest.fixture
def served() -> Iterator[tuple[ExtenderApp, ServerThread]]:
    app = build_app()
    with ServerThread(app) as srv:
        yield app, srv


def request(verb: str, body: bytes, *, port: int, extra: bytes = b"", target: bytes | None = None,
            version: bytes = b"HTTP/1.1") -> bytes:
    path = target if target is not None else b"/scheduler/" + verb.encode()
    return (b"POST " + path + b" " + version + b"\r\nHost: 127.0.0.1:%d\r\nUser-Agent: test\r\n" % port + extra
            + b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)


class Conn:
    """A raw client connection that reads replies one by one."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self) -> bool:
        data = self.sock.recv(1 << 16)
        self.buf += data
        return bool(data)

    def reply(self) -> tuple[bytes, dict[bytes, bytes], bytes]:
        """(status line, headers with lower-case names, body) of the next reply."""
        while b"\r\n\r\n" not in self.buf:
            assert self._fill(), f"connection closed; got {self.buf!r}"
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        status, *lines = head.split(b"\r\n")
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(b":", 1) for line in lines)}
        if status.split()[1] == b"100":
            return self.reply()
        length = int(headers.get(b"content-length", b"0"))
        while len(self.buf) < length:
            assert self._fill(), "connection closed in a body"
        body, self.buf = self.buf[:length], self.buf[length:]
        return status, headers, body

    def closed(self) -> bool:
        """Whether the server closes the connection (waits for it, up to the socket timeout)."""
        try:
            while self._fill():
                pass
        except ConnectionResetError:
            pass
        return True

    def close(self) -> None:
        self.sock.close()


def test_an_extender_app_is_served_by_the_verb_protocol() -> None:
    config = _uvicorn_config(build_app(), host="127.0.0.1", port=0, certfile=None, keyfile=None, client_ca=None,
                             log_level="warning")
    assert getattr(config, "http") is VerbProtocol  # noqa: B009 - typed as uvicorn's names, not ours

    class Wrapped(ExtenderApp):
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            await super().__call__(scope, receive, send)

    # An app whose ASGI entry point is its own is served through it, by uvicorn's choice.
    config = _uvicorn_config(Wrapped(), host="127.0.0.1", port=0, certfile=None, keyfile=None, client_ca=None,
                             log_level="warning")
    assert config.http == "auto"


def test_plain_requests_kept_alive_and_pipelined(served: tuple[ExtenderApp, ServerThread]) -> None:
    app, srv = served
    conn = Conn(srv.port)
    try:
        # Two requests in one write, then a third: three replies in order, on one connection.
        conn.send(request("filter", NAMES_BODY, port=srv.port) + request("prioritize", NAMES_BODY, port=srv.port))
        conn.send(request("filter", FULL_BODY, port=srv.port))
        replies = [conn.reply() for _ in range(3)]
    finally:
        conn.close()
    wanted = [expected(app, "filter", NAMES_BODY), expected(app, "prioritize", NAMES_BODY),
              expected(app, "filter", FULL_BODY)]
    assert [body for _, _, body in replies] == wanted
    assert json.loads(wanted[0])["NodeNames"] == ["n0", "n2"]
    for status, headers, body in replies:
        assert status == b"HTTP/1.1 200 OK"
        assert set(headers) == {b"date", b"server", b"content-type", b"content-length"}
        assert headers[b"server"] == b"uvicorn" and headers[b"content-type"] == b"application/json"
        assert int(headers[b"content-length"]) == len(body)


def test_the_same_reply_as_through_asgi(served: tuple[ExtenderApp, ServerThread]) -> None:
    """A query string sends the request through h11 and the ASGI app: same status line,
    headers (but the date) and body."""
    _, srv = served
    conn, other = Conn(srv.port), Conn(srv.port)
    try:
        conn.send(request("prioritize", NAMES_BODY, port=srv.port))
        fast = conn.reply()
        other.send(request("prioritize", NAMES_BODY, port=srv.port, target=b"/scheduler/prioritize?via=asgi"))
        slow = other.reply()
    finally:
        conn.close()
        other.close()
    assert fast[0] == slow[0] and fast[2] == slow[2]
    assert {k: v for k, v in fast[1].items() if k != b"date"} == {k: v for k, v in slow[1].items() if k != b"date"}


def test_a_request_split_across_reads(served: tuple[ExtenderApp, ServerThread]) -> None:
    app, srv = served
    data = request("filter", NAMES_BODY, port=srv.port)
    conn = Conn(srv.port)
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        for cut in (3, 40, len(data) - len(NAMES_BODY) - 2, len(data) - 10):
            conn.send(data[:cut])
            time.sleep(0.01)  # lets the server read what came so far (correct either way)
            conn.send(data[cut:])
            assert conn.reply()[2] == expected(app, "filter", NAMES_BODY)
    finally:
        conn.close()


CHUNKED = b"Transfer-Encoding: chunked\r\n"


def chunked(verb: str, body: bytes, port: int) -> bytes:
    return (b"POST /scheduler/" + verb.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % port + CHUNKED
            + b"Content-Type: application/json\r\n\r\n"
            + b"%x\r\n" % 10 + body[:10] + b"\r\n" + b"%x\r\n" % (len(body) - 10) + body[10:] + b"\r\n0\r\n\r\n")


@pytest.mark.parametrize("first", [
    pytest.param("chunked", id="a chunked body"),
    pytest.param("expect", id="Expect: 100-continue"),
    pytest.param("query", id="a query string"),
    pytest.param("escaped", id="a %-escaped path"),
])
def test_other_requests_are_served_by_h11_then_the_connection_stays_with_it(
        first: str, served: tuple[ExtenderApp, ServerThread]) -> None:
    app, srv = served
    port = srv.port
    data = {
        "chunked": chunked("filter", NAMES_BODY, port),
        "expect": request("filter", NAMES_BODY, port=port, extra=b"Expect: 100-continue\r\n"),
        "query": request("filter", NAMES_BODY, port=port, target=b"/scheduler/filter?x=1"),
        "escaped": request("filter", NAMES_BODY, port=port, target=b"/scheduler/%66ilter"),
    }[first]
    conn = Conn(port)
    try:
        # The odd request and a plain one behind it in the same write: h11 gets both.
        conn.send(data + request("prioritize", NAMES_BODY, port=port))
        assert conn.reply()[2] == expected(app, "filter", NAMES_BODY)
        assert conn.reply()[2] == expected(app, "prioritize", NAMES_BODY)
        conn.send(request("filter", NAMES_BODY, port=port))
        assert conn.reply()[2] == expected(app, "filter", NAMES_BODY)
    finally:
        conn.close()


def test_other_paths_and_methods(served: tuple[ExtenderApp, ServerThread]) -> None:
    _, srv = served
    conn = Conn(srv.port)
    try:
        conn.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert conn.reply()[2] == b"ok"
    finally:
        conn.close()
    conn = Conn(srv.port)
    try:
        conn.send(request("filter", b"{}", port=srv.port, target=b"/elsewhere"))
        assert conn.reply()[0] == b"HTTP/1.1 404 Not Found"
    finally:
        conn.close()


def test_http_1_0_is_answered_and_closed(served: tuple[ExtenderApp, ServerThread]) -> None:
    app, srv = served
    conn = Conn(srv.port)
    try:
        conn.send(request("filter", NAMES_BODY, port=srv.port, version=b"HTTP/1.0"))
        status, _, body = conn.reply()
        assert status.startswith(b"HTTP/1.1 200") and body == expected(app, "filter", NAMES_BODY)
        assert conn.closed()
    finally:
        conn.close()


@pytest.mark.parametrize("extra", [
    pytest.param(b"Bad Header: x\r\n", id="a space in a header name"),
    pytest.param(b"no colon\r\n", id="a line without a colon"),
    pytest.param(b"Content-Length: 3\r\n", id="two different Content-Lengths"),
])
def test_malformed_requests_get_400_from_h11(extra: bytes, served: tuple[ExtenderApp, ServerThread]) -> None:
    _, srv = served
    conn = Conn(srv.port)
    try:
        conn.send(request("filter", NAMES_BODY, port=srv.port, extra=extra))
        assert conn.reply()[0] == b"HTTP/1.1 400 Bad Request"
        assert conn.closed()
    finally:
        conn.close()


def test_a_body_over_the_limit_gets_413() -> None:
    with ServerThread(build_app(max_body_bytes=100)) as srv:
        conn = Conn(srv.port)
        try:
            conn.send(request("filter", NAMES_BODY, port=srv.port))
            status, _, body = conn.reply()
        finally:
            conn.close()
    assert status == b"HTTP/1.1 413 Request Entity Too Large"
    assert json.loads(body) == {"Error": "filter: request body larger than 100 bytes"}


def test_handlers_that_suspend() -> None:
    """An async handler and a verb-level one (run in a worker thread) suspend the request:
    it goes on in a task, and the requests behind it wait their turn."""
    app = ExtenderApp(prefix="/scheduler")

    @app.filter
    def in_a_thread(pod: Pod, nodes: list[Node]) -> FilterResult:
        return FilterResult(failed={"n1": "no"})

    @app.score_nodes
    async def later(pod: Pod, nodes: list[Node]) -> list[int]:
        await asyncio.sleep(0.01)
        return [1 for _ in nodes]

    app.node_cache.update(NODES)
    with ServerThread(app) as srv:
        conn = Conn(srv.port)
        try:
            conn.send(request("prioritize", NAMES_BODY, port=srv.port) + request("filter", NAMES_BODY, port=srv.port)
                      + request("prioritize", NAMES_BODY, port=srv.port))
            bodies = [conn.reply()[2] for _ in range(3)]
        finally:
            conn.close()
    scores = [{"Host": n.meta.name, "Score": 1} for n in NODES]
    assert [json.loads(b) for b in bodies] == [
        scores, {"Nodes": None, "NodeNames": ["n0", "n2", "n3"], "FailedNodes": {"n1": "no"},
                 "FailedAndUnresolvableNodes": {}, "Error": ""}, scores]


def test_idle_connections_close_after_the_keep_alive_timeout() -> None:
    srv = ServerThread(build_app())
    srv._server.config.timeout_keep_alive = 0.05  # type: ignore[assignment]  # read as a float by call_later
    with srv:
        conn = Conn(srv.port)
        try:
            conn.send(request("filter", NAMES_BODY, port=srv.port))
            assert conn.reply()[0] == b"HTTP/1.1 200 OK"
            assert conn.closed()
        finally:
            conn.close()


def test_stopping_the_server_closes_kept_alive_connections() -> None:
    srv = ServerThread(build_app()).start()
    conn = Conn(srv.port)
    try:
        conn.send(request("filter", NAMES_BODY, port=srv.port))
        assert conn.reply()[0] == b"HTTP/1.1 200 OK"
        srv.stop()
        assert conn.closed()
    finally:
        conn.close()
        srv.stop()
