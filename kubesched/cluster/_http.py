"""The API client's fast transport: requests over kept-alive HTTP/1.1 connections.

Every bind and every event is one small request to the API server; through httpx each costs
~0.5 ms of Python on the 2-core machine the benchmarks run on (its request and response
models, URL handling, httpcore's connection pool checking every pooled connection, h11's
event machine), more than the scheduling cycle itself at 5000 nodes. This transport writes a
request with one ``sendall`` and reads the reply with a minimal HTTP/1.1 parser (status line,
headers, a Content-Length, chunked or read-to-close body, 1xx replies skipped, gzip decoded),
~0.04 ms: what Go's http.Transport does for client-go. :class:`~kubesched.cluster.live.ApiClient`
uses it for every request, watches included (:meth:`Pool.stream`: the body read as it
arrives, as Go's transport hands a watch's body to client-go's StreamWatcher); anything it
cannot do (a proxy from the environment, a client replaced by a test's mock transport) goes
through httpx.

Connections are kept alive and reused like Go's http.Transport (at most ``max_idle`` idle
ones, most recently used first); an idle connection the server has closed meanwhile is noticed
before reuse (a non-blocking peek, as httpcore and Go's transport do). A request whose write
fails on a reused connection is sent once more on a new one (nothing reached the server: Go's
nothingWrittenError retry); nothing else is retried here — that is the caller's rest-client
logic. ``deadline`` (a time.monotonic() value) bounds the whole exchange.

The connection, the reply parser and the pool's connection handling are kubesched._http1's,
shared with kubesched.extender._http (the same idea for extender POSTs); this module adds what
is the API client's own: :class:`ConnectFailed`, :class:`Reply`, streamed bodies, per-read
timeouts for watches and client-go's request log.
"""

from __future__ import annotations

import logging
import socket
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubesched._http1 import Conn, Expired, chunk_size, content_length, read_body, read_head
from kubesched._http1 import Pool as _BasePool
from kubesched._lazy import lazy_module

if TYPE_CHECKING:
    import http.client as http_client
    import ssl
else:
    http_client = lazy_module("http.client")  # its exception classes, for a malformed reply

__all__ = ["ConnectFailed", "Pool", "Reply", "Stream", "Timeout"]

log = logging.getLogger(__name__)

_NO_DEADLINE = 365 * 86400.0  # "no timeout" as a deadline this far ahead (socket timeouts are finite)


class Timeout(Exception):
    """The deadline passed."""


class ConnectFailed(Exception):
    """No connection could be made (``cause``: the OSError / ssl.SSLError, or None for a timeout)."""

    def __init__(self, cause: BaseException | None) -> None:
        super().__init__(str(cause) if cause is not None else "timed out connecting")
        self.cause = cause


@dataclass(frozen=True, slots=True)
class Reply:
    """A reply, with the attribute names of an httpx.Response."""

    status_code: int
    reason_phrase: str
    headers: dict[str, str]  # lower-case names
    content: bytes


class Pool(_BasePool):
    """Kept-alive connections to one ``host:port`` (TLS with ``ssl_context``, verifying and
    sending SNI for ``server_hostname``). :meth:`request` is thread-safe: each call has a
    connection of its own. ``headers`` go with every request."""

    def __init__(self, host: str, port: int, *, ssl_context: ssl.SSLContext | None = None,
                 server_hostname: str | None = None, headers: dict[str, str] | None = None,
                 max_idle: int = 64) -> None:
        super().__init__(host, port, ssl_context=ssl_context, server_hostname=server_hostname, headers=headers,
                         max_idle=max_idle)

    def _log(self, method: str, target: str, status: int, reason: str, start: float) -> None:
        """client-go's debugging round tripper at -v=6 (round_trippers.go): the request's
        method, URL, the reply's status and latency; never a header."""
        ms = int((time.monotonic() - start) * 1000)
        log.debug("%s %s%s %d %s in %d milliseconds", method, self._origin, target, status, reason, ms)

    def _connect(self, deadline: float) -> Conn:
        # Any failure to connect, a failed TLS handshake included, is client-go's dial error.
        try:
            return super()._connect(deadline)
        except Expired:
            raise ConnectFailed(None) from None
        except OSError as e:
            raise ConnectFailed(e) from None

    # ---------------------------------------------------------------- the request
    def request(self, method: str, target: str, body: bytes | None, *, headers: str = "",
                deadline: float) -> Reply:
        """Send ``method target`` (path and query) with ``body`` and the extra ``headers``
        (``Name: value\\r\\n`` lines) and return the reply. Raises :class:`Timeout`,
        :class:`ConnectFailed`, or the OSError / ssl.SSLError / http.client.HTTPException /
        zlib.error the exchange failed with once connected (http.client.RemoteDisconnected:
        closed before any reply; IncompleteRead: cut short)."""
        head = self.head(method, target, headers)
        if body is not None:
            request = b"".join([head, b"Content-Length: %d\r\n\r\n" % len(body), body])
        else:
            request = head + b"\r\n"
        start = time.monotonic() if log.isEnabledFor(logging.DEBUG) else None
        try:
            conn = self._open(request, deadline)
            keep = False
            try:
                status, reason, http10, fields = read_head(conn, lambda: conn.fill(deadline))
                data, keep = read_body(conn, status, http10, fields, deadline, head_only=method == "HEAD")
            finally:
                if keep:
                    self._release(conn)
                else:
                    conn.close()
        except Expired:
            raise Timeout() from None
        if start is not None:
            self._log(method, target, status, reason, start)
        return Reply(status, reason, fields, data)

    def _open(self, request: bytes, deadline: float) -> Conn:
        """A connection ``request`` was written to: an idle one, else (none, or the write
        failed on it) a new one."""
        conn = self._send_on_idle(request, deadline)
        return conn if conn is not None else self._send_on_new(request, deadline)

    def stream(self, method: str, target: str, *, headers: str = "", deadline: float,
               read_timeout: float | None) -> Stream:
        """Send a body-less ``method target`` and return the reply once its head arrived, its
        body to be read as it comes (:meth:`Stream.chunks`): a watch. ``deadline`` bounds the
        connect and the write, ``read_timeout`` (None: none) each read, the head's included
        (httpx's read timeout, which the watch had before). The connection is the stream's
        (closed with it, never back in the pool: a watch ends by being cut). Raises as
        :meth:`request`."""
        start = time.monotonic() if log.isEnabledFor(logging.DEBUG) else None
        try:
            conn = self._open(self.head(method, target, headers) + b"\r\n", deadline)
            try:
                read_deadline = time.monotonic() + (_NO_DEADLINE if read_timeout is None else read_timeout)
                status, reason, _, fields = read_head(conn, lambda: conn.fill(read_deadline))
            except BaseException:
                conn.close()
                raise
        except Expired:
            raise Timeout() from None
        if start is not None:
            self._log(method, target, status, reason, start)
        return Stream(conn, status, reason, fields, read_timeout, head_only=method == "HEAD")


class Stream:
    """A reply whose body is read as it arrives (:meth:`Pool.stream`), with the attribute
    names of an httpx.Response. :meth:`abort` may be called from any thread: a read blocked in
    :meth:`chunks` then sees the end of the stream (as cutting the watch's connection does for
    client-go's reflector)."""

    def __init__(self, conn: Conn, status: int, reason: str, headers: dict[str, str],
                 read_timeout: float | None, *, head_only: bool = False) -> None:
        self.status_code = status
        self.reason_phrase = reason
        self.headers = headers
        self._conn = conn
        self._head_only = head_only or status in (204, 304)
        self._read_timeout = read_timeout
        conn.sock.settimeout(read_timeout)  # once: each recv (Conn.more) then waits at most this long
        self.content = b""

    def _pieces(self, n: int) -> Iterator[bytes]:
        """The next ``n`` bytes of the body, as they arrive."""
        conn = self._conn
        while n:
            if not conn.buf and not conn.more():
                raise http_client.IncompleteRead(b"", n)
            piece = bytes(conn.buf[:n])
            del conn.buf[:len(piece)]
            n -= len(piece)
            yield piece

    def _raw(self) -> Iterator[bytes]:
        """The body as it arrives, framing (chunked, Content-Length, to the end) undone."""
        if self._head_only:
            return
        conn = self._conn
        encoding = self.headers.get("transfer-encoding", "").lower()
        if "chunked" in encoding:
            while True:
                n = chunk_size(conn.line(conn.more))
                if n == 0:
                    while conn.line(conn.more):  # trailers, up to the empty line
                        pass
                    return
                yield from self._pieces(n)
                if conn.take(2, conn.more) != b"\r\n":
                    raise http_client.HTTPException("chunk not followed by CRLF")
        elif "content-length" in self.headers:
            yield from self._pieces(content_length(self.headers))
        else:  # the body runs to the end of the connection
            while conn.buf or conn.more():
                piece = bytes(conn.buf)
                conn.buf.clear()
                yield piece

    def chunks(self) -> Iterator[bytes]:
        """The body's bytes as they arrive (gzip undone). Raises :class:`Timeout` when a read
        waited ``read_timeout``, OSError / http.client.HTTPException when the connection broke
        or the framing is garbled (IncompleteRead: cut short, :meth:`abort` included),
        zlib.error for a body that does not inflate."""
        try:
            if self.headers.get("content-encoding", "").strip().lower() != "gzip":
                yield from self._raw()
                return
            inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
            for piece in self._raw():
                out = inflate.decompress(piece)
                if out:
                    yield out
            if not inflate.eof:
                raise zlib.error("unexpected EOF")
        except Expired:
            raise Timeout() from None

    def read(self) -> bytes:
        """The whole body (an error reply's), also kept as ``content``."""
        self.content = b"".join(self.chunks())
        return self.content

    def abort(self) -> None:
        """Cut the connection (from any thread): a blocked read returns."""
        try:
            self._conn.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def close(self) -> None:
        self._conn.close()
