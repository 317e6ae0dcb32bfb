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

(kubesched.extender._http is the same idea for extender POSTs; the layering keeps the two
packages apart.)
"""

from __future__ import annotations

import http.client
import logging
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["ConnectFailed", "Pool", "Reply", "Stream", "Timeout"]

log = logging.getLogger(__name__)

_RECV = 1 << 16
_MAX_HEAD = 1 << 16  # a reply's status line and headers
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


class _Conn:
    """A connection and the bytes read from it but not consumed yet."""

    __slots__ = ("buf", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()

    def close(self) -> None:
        self.sock.close()

    def alive(self) -> bool:
        """Whether an idle kept-alive connection can carry another request: the server has
        neither closed it nor sent anything unasked (a non-blocking read; for TLS it also
        consumes a post-handshake session ticket, which is no reason to drop the connection)."""
        if self.buf:
            return False
        sock = self.sock
        try:
            sock.settimeout(0.0)
            if isinstance(sock, ssl.SSLSocket):
                sock.recv(1)
            else:
                sock.recv(1, socket.MSG_PEEK)
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return True
        except OSError:
            return False
        return False  # b"": closed; bytes: a reply nobody asked for

    def fill(self, deadline: float) -> bool:
        """Read more into ``buf``; False at the end of the stream."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise Timeout()
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(_RECV)
        except TimeoutError:
            raise Timeout() from None
        if not data:
            return False
        self.buf += data
        return True

    def take(self, n: int, deadline: float) -> bytes:
        """Exactly ``n`` bytes of the body."""
        while len(self.buf) < n:
            if not self.fill(deadline):
                raise http.client.IncompleteRead(bytes(self.buf), n - len(self.buf))
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def line(self, deadline: float) -> bytes:
        """One CRLF-terminated line of a chunked body, without the CRLF."""
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                out = bytes(self.buf[:i])
                del self.buf[:i + 2]
                return out
            if len(self.buf) > _MAX_HEAD:
                raise http.client.LineTooLong("chunk size line")
            if not self.fill(deadline):
                raise http.client.IncompleteRead(bytes(self.buf))


def _read_head(conn: _Conn, deadline: float) -> tuple[int, str, bool, dict[str, str]]:
    """The next final reply's (status, reason, HTTP/1.0?, headers with lower-case names)."""
    while True:
        start = 0
        while True:
            i = conn.buf.find(b"\r\n\r\n", start)
            if i >= 0:
                break
            if len(conn.buf) > _MAX_HEAD:
                raise http.client.LineTooLong("header block")
            start = max(0, len(conn.buf) - 3)
            if not conn.fill(deadline):
                if not conn.buf:
                    raise http.client.RemoteDisconnected("Remote end closed connection without response")
                raise http.client.IncompleteRead(bytes(conn.buf))
        lines = bytes(conn.buf[:i]).split(b"\r\n")
        del conn.buf[:i + 4]
        parts = lines[0].split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit() or len(parts[1]) != 3:
            raise http.client.BadStatusLine(lines[0].decode("latin-1"))
        status = int(parts[1])
        if 100 <= status < 200 and status != 101:
            continue  # 100 Continue and other informational replies precede the real one
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if sep:
                headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
        reason = parts[2].decode("latin-1") if len(parts) > 2 else ""
        return status, reason, parts[0] == b"HTTP/1.0", headers


class Pool:
    """Kept-alive connections to one ``host:port`` (TLS with ``ssl_context``, verifying and
    sending SNI for ``server_hostname``). :meth:`request` is thread-safe: each call has a
    connection of its own. ``headers`` go with every request."""

    def __init__(self, host: str, port: int, *, ssl_context: ssl.SSLContext | None = None,
                 server_hostname: str | None = None, headers: dict[str, str] | None = None,
                 max_idle: int = 64) -> None:
        self.host = host
        self.port = port
        self._ssl = ssl_context
        self._server_hostname = server_hostname or host
        self._max_idle = max_idle
        self._idle: list[_Conn] = []
        self._lock = threading.Lock()
        self._closed = False
        self.connections_made = 0  # for tests: connections are reused
        shown = f"[{host}]" if ":" in host else host
        default_port = 443 if ssl_context is not None else 80
        lines = [f"Host: {shown}" if port == default_port else f"Host: {shown}:{port}"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self._headers = ("\r\n".join(lines) + "\r\n").encode("latin-1")
        self._origin = f"{'https' if ssl_context is not None else 'http'}://{shown}:{port}"

    def _log(self, method: str, target: str, status: int, reason: str, start: float) -> None:
        """client-go's debugging round tripper at -v=6 (round_trippers.go): the request's
        method, URL, the reply's status and latency; never a header."""
        ms = int((time.monotonic() - start) * 1000)
        log.debug("%s %s%s %d %s in %d milliseconds", method, self._origin, target, status, reason, ms)

    # ---------------------------------------------------------------- connections
    def _connect(self, deadline: float) -> _Conn:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ConnectFailed(None)
        try:
            sock = socket.create_connection((self.host, self.port), timeout=remaining)
        except TimeoutError:
            raise ConnectFailed(None) from None
        except OSError as e:
            raise ConnectFailed(e) from None
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._ssl is not None:
                sock.settimeout(max(deadline - time.monotonic(), 1e-3))
                sock = self._ssl.wrap_socket(sock, server_hostname=self._server_hostname)
        except TimeoutError:
            sock.close()
            raise ConnectFailed(None) from None
        except OSError as e:  # ssl.SSLError included: a failed handshake is a failed connect
            sock.close()
            raise ConnectFailed(e) from None
        except BaseException:
            sock.close()
            raise
        self.connections_made += 1
        return _Conn(sock)

    def _take_idle(self) -> _Conn | None:
        while True:
            with self._lock:
                if not self._idle:
                    return None
                conn = self._idle.pop()
            if conn.alive():
                return conn
            conn.close()

    def _release(self, conn: _Conn) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self._max_idle:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # ---------------------------------------------------------------- the request
    def request(self, method: str, target: str, body: bytes | None, *, headers: str = "",
                deadline: float) -> Reply:
        """Send ``method target`` (path and query) with ``body`` and the extra ``headers``
        (``Name: value\\r\\n`` lines) and return the reply. Raises :class:`Timeout`,
        :class:`ConnectFailed`, or the OSError / ssl.SSLError / http.client.HTTPException /
        zlib.error the exchange failed with once connected (http.client.RemoteDisconnected:
        closed before any reply; IncompleteRead: cut short)."""
        head = f"{method} {target} HTTP/1.1\r\n".encode("latin-1") + self._headers + headers.encode("latin-1")
        if body is not None:
            request = b"".join([head, b"Content-Length: %d\r\n\r\n" % len(body), body])
        else:
            request = head + b"\r\n"
        start = time.monotonic() if log.isEnabledFor(logging.DEBUG) else None
        conn = self._open(request, deadline)
        keep = False
        try:
            reply, keep = self._reply(conn, deadline, head_only=method == "HEAD")
        finally:
            if keep:
                self._release(conn)
            else:
                conn.close()
        if start is not None:
            self._log(method, target, reply.status_code, reply.reason_phrase, start)
        return reply

    def _open(self, request: bytes, deadline: float) -> _Conn:
        """A connection ``request`` was written to: an idle one, else (none, or the write
        failed on it) a new one."""
        conn = self._take_idle()
        if conn is not None:
            try:
                self._send(conn, request, deadline)
            except (BrokenPipeError, ConnectionResetError):
                conn.close()  # closed by the server meanwhile: nothing reached it, try a new one
                conn = None
            except BaseException:
                conn.close()
                raise
        if conn is None:
            conn = self._connect(deadline)
            try:
                self._send(conn, request, deadline)
            except BaseException:
                conn.close()
                raise
        return conn

    def stream(self, method: str, target: str, *, headers: str = "", deadline: float,
               read_timeout: float | None) -> Stream:
        """Send a body-less ``method target`` and return the reply once its head arrived, its
        body to be read as it comes (:meth:`Stream.chunks`): a watch. ``deadline`` bounds the
        connect and the write, ``read_timeout`` (None: none) each read, the head's included
        (httpx's read timeout, which the watch had before). The connection is the stream's
        (closed with it, never back in the pool: a watch ends by being cut). Raises as
        :meth:`request`."""
        head = f"{method} {target} HTTP/1.1\r\n".encode("latin-1") + self._headers + headers.encode("latin-1")
        start = time.monotonic() if log.isEnabledFor(logging.DEBUG) else None
        conn = self._open(head + b"\r\n", deadline)
        try:
            read_deadline = time.monotonic() + (_NO_DEADLINE if read_timeout is None else read_timeout)
            status, reason, _, fields = _read_head(conn, read_deadline)
        except BaseException:
            conn.close()
            raise
        if start is not None:
            self._log(method, target, status, reason, start)
        return Stream(conn, status, reason, fields, read_timeout, head_only=method == "HEAD")

    @staticmethod
    def _send(conn: _Conn, request: bytes, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise Timeout()
        conn.sock.settimeout(remaining)
        try:
            conn.sock.sendall(request)
        except TimeoutError:
            raise Timeout() from None

    @staticmethod
    def _reply(conn: _Conn, deadline: float, *, head_only: bool = False) -> tuple[Reply, bool]:
        status, reason, http10, headers = _read_head(conn, deadline)
        tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
        keep = "keep-alive" in tokens if http10 else "close" not in tokens
        if head_only or status in (204, 304):
            data = b""
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                line = conn.line(deadline)
                try:
                    n = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    raise http.client.HTTPException(f"bad chunk size {line[:20]!r}") from None
                if n == 0:
                    while conn.line(deadline):  # trailers, up to the empty line
                        pass
                    break
                chunks.append(conn.take(n, deadline))
                if conn.take(2, deadline) != b"\r\n":
                    raise http.client.HTTPException("chunk not followed by CRLF")
            data = b"".join(chunks)
        elif "content-length" in headers:
            value = headers["content-length"]
            if not value.isdigit():
                raise http.client.HTTPException(f"bad Content-Length {value!r}")
            data = conn.take(int(value), deadline)
        else:  # the body runs to the end of the connection
            keep = False
            while conn.fill(deadline):
                pass
            data = bytes(conn.buf)
            conn.buf.clear()
        if headers.get("content-encoding", "").strip().lower() == "gzip":
            inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
            data = inflate.decompress(data)
            if not inflate.eof:
                raise zlib.error("unexpected EOF")
        return Reply(status, reason, headers, data), keep


class Stream:
    """A reply whose body is read as it arrives (:meth:`Pool.stream`), with the attribute
    names of an httpx.Response. :meth:`abort` may be called from any thread: a read blocked in
    :meth:`chunks` then sees the end of the stream (as cutting the watch's connection does for
    client-go's reflector)."""

    def __init__(self, conn: _Conn, status: int, reason: str, headers: dict[str, str],
                 read_timeout: float | None, *, head_only: bool = False) -> None:
        self.status_code = status
        self.reason_phrase = reason
        self.headers = headers
        self._conn = conn
        self._head_only = head_only or status in (204, 304)
        self._read_timeout = read_timeout
        conn.sock.settimeout(read_timeout)  # once: each recv then waits at most this long
        self.content = b""

    def _fill(self) -> bool:
        try:
            data = self._conn.sock.recv(_RECV)
        except TimeoutError:
            raise Timeout() from None
        if not data:
            return False
        self._conn.buf += data
        return True

    def _line(self) -> bytes:
        buf = self._conn.buf
        while True:
            i = buf.find(b"\r\n")
            if i >= 0:
                out = bytes(buf[:i])
                del buf[:i + 2]
                return out
            if len(buf) > _MAX_HEAD:
                raise http.client.LineTooLong("chunk size line")
            if not self._fill():
                raise http.client.IncompleteRead(bytes(buf))

    def _raw(self) -> Iterator[bytes]:
        """The body as it arrives, framing (chunked, Content-Length, to the end) undone."""
        if self._head_only:
            return
        buf = self._conn.buf
        encoding = self.headers.get("transfer-encoding", "").lower()
        if "chunked" in encoding:
            while True:
                line = self._line()
                try:
                    n = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    raise http.client.HTTPException(f"bad chunk size {line[:20]!r}") from None
                if n == 0:
                    while self._line():  # trailers, up to the empty line
                        pass
                    return
                while n:
                    if not buf and not self._fill():
                        raise http.client.IncompleteRead(b"", n)
                    piece = bytes(buf[:n])
                    del buf[:len(piece)]
                    n -= len(piece)
                    yield piece
                while len(buf) < 2:
                    if not self._fill():
                        raise http.client.IncompleteRead(bytes(buf), 2 - len(buf))
                if buf[:2] != b"\r\n":
                    raise http.client.HTTPException("chunk not followed by CRLF")
                del buf[:2]
        elif "content-length" in self.headers:
            value = self.headers["content-length"]
            if not value.isdigit():
                raise http.client.HTTPException(f"bad Content-Length {value!r}")
            n = int(value)
            while n:
                if not buf and not self._fill():
                    raise http.client.IncompleteRead(b"", n)
                piece = bytes(buf[:n])
                del buf[:len(piece)]
                n -= len(piece)
                yield piece
        else:  # the body runs to the end of the connection
            while buf or self._fill():
                piece = bytes(buf)
                buf.clear()
                yield piece

    def chunks(self) -> Iterator[bytes]:
        """The body's bytes as they arrive (gzip undone). Raises :class:`Timeout` when a read
        waited ``read_timeout``, OSError / http.client.HTTPException when the connection broke
        or the framing is garbled (IncompleteRead: cut short, :meth:`abort` included),
        zlib.error for a body that does not inflate."""
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
