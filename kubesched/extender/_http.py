"""The extender client's fast transport: POST over kept-alive HTTP/1.1 connections.

An extender call is one small POST and its reply, twice per scheduling cycle (filter,
prioritize) on the scheduler's critical path. httpx costs ~0.3-0.45 ms of Python per request
on the 2-core machine the benchmarks run on (request/response models, h11's event machine,
two writes per request), and the stdlib's http.client ~0.2 ms (its header parser is the email
package's); this client writes a request with one ``sendall`` and reads the reply with a
minimal HTTP/1.1 parser (status line, headers, a Content-Length, chunked or read-to-close
body, 1xx replies skipped, gzip decoded as Go's transport does), so
:class:`~kubesched.extender.HTTPExtender` uses it whenever the call needs nothing else: http
or https straight to the extender (no proxy), a reply that is not a redirect. Everything else
— proxies from the environment, redirects, a custom httpx transport — stays with httpx.

Connections are kept alive and reused like Go's http.Transport (at most ``max_idle`` idle
ones, most recently used first); an idle connection the server has closed meanwhile is noticed
before reuse (a non-blocking peek). A request whose write fails on a reused connection is sent
once more on a new one (nothing reached the server: Go's nothingWrittenError retry), and so is
an ``idempotent`` one whose reused connection is closed or reset before any byte of the reply.
Timeouts: ``deadline`` (a time.monotonic() value) bounds the whole exchange, as Go's
Client.Timeout; :class:`Timeout` says whether the reply's headers had arrived.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Mapping

__all__ = ["Pool", "Redirect", "Timeout", "TooLarge"]

REDIRECTS = frozenset({301, 302, 303, 307, 308})
_RECV = 1 << 16
_MAX_HEAD = 1 << 16  # a reply's status line and headers


class Timeout(Exception):
    """The deadline passed; ``reading_body``: after the reply's headers arrived."""

    def __init__(self, reading_body: bool) -> None:
        super().__init__("deadline exceeded while " + ("reading body" if reading_body else "awaiting headers"))
        self.reading_body = reading_body


class TooLarge(Exception):
    """The reply (after gzip decoding) is longer than allowed."""


class Redirect(Exception):
    """A 3xx reply: the caller sends the request again through a client that follows it."""


class _NothingBack(Exception):
    """The connection was closed or reset before any byte of the reply."""

    def __init__(self, error: ConnectionResetError) -> None:
        super().__init__(str(error))
        self.error = error


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

    def fill(self, deadline: float, reading_body: bool) -> bool:
        """Read more into ``buf``; False at the end of the stream."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise Timeout(reading_body)
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(_RECV)
        except TimeoutError:
            raise Timeout(reading_body) from None
        if not data:
            return False
        self.buf += data
        return True

    def take(self, n: int, deadline: float) -> bytes:
        """Exactly ``n`` bytes of the body."""
        while len(self.buf) < n:
            if not self.fill(deadline, True):
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
            if not self.fill(deadline, True):
                raise http.client.IncompleteRead(bytes(self.buf))


def _read_head(conn: _Conn, deadline: float) -> tuple[int, bool, dict[str, str]]:
    """The next final reply's (status, HTTP/1.0?, headers with lower-case names)."""
    while True:
        start = 0
        while True:
            i = conn.buf.find(b"\r\n\r\n", start)
            if i >= 0:
                break
            if len(conn.buf) > _MAX_HEAD:
                raise http.client.LineTooLong("header block")
            start = max(0, len(conn.buf) - 3)
            if not conn.fill(deadline, False):
                if not conn.buf:
                    raise _NothingBack(http.client.RemoteDisconnected("Remote end closed connection without response"))
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
        return status, parts[0] == b"HTTP/1.0", headers


class Pool:
    """Kept-alive connections to one ``host:port`` (TLS with ``ssl_context``, verifying and
    sending SNI for ``server_hostname``). :meth:`post` is thread-safe: each call has a
    connection of its own."""

    def __init__(self, host: str, port: int, *, ssl_context: ssl.SSLContext | None = None,
                 server_hostname: str | None = None, headers: Mapping[str, str] | None = None,
                 max_idle: int = 25) -> None:
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

    # ---------------------------------------------------------------- connections
    def _connect(self, deadline: float) -> _Conn:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise Timeout(False)
        try:
            sock = socket.create_connection((self.host, self.port), timeout=remaining)
        except TimeoutError:
            raise Timeout(False) from None
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._ssl is not None:
                sock.settimeout(max(deadline - time.monotonic(), 1e-3))
                sock = self._ssl.wrap_socket(sock, server_hostname=self._server_hostname)
        except TimeoutError:
            sock.close()
            raise Timeout(False) from None
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
    def post(self, target: str, body: bytes, *, content_type: str, deadline: float, max_reply: int,
             idempotent: bool = False) -> tuple[int, bytes]:
        """POST ``body`` to ``target`` (path and query) and return (status, reply body). The
        body is read only for status 200 (other statuses return b"", the connection closed).
        Raises :class:`Timeout`, :class:`TooLarge`, :class:`Redirect`, or the OSError /
        ssl.SSLError / http.client.HTTPException / zlib.error the exchange failed with
        (http.client.RemoteDisconnected: closed before any reply; IncompleteRead: cut short)."""
        request = b"".join([f"POST {target} HTTP/1.1\r\n".encode("latin-1"), self._headers,
                            f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n".encode("latin-1"),
                            body])
        conn = self._take_idle()
        if conn is not None:
            try:
                self._send(conn, request, deadline)
            except (BrokenPipeError, ConnectionResetError):
                conn.close()  # closed by the server meanwhile: nothing reached it
            except BaseException:
                conn.close()
                raise
            else:
                try:
                    return self._finish(conn, deadline, max_reply)
                except _NothingBack as e:
                    if not idempotent:
                        raise e.error from None
        conn = self._connect(deadline)
        try:
            self._send(conn, request, deadline)
        except BaseException:
            conn.close()
            raise
        try:
            return self._finish(conn, deadline, max_reply)
        except _NothingBack as e:
            raise e.error from None

    @staticmethod
    def _send(conn: _Conn, request: bytes, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise Timeout(False)
        conn.sock.settimeout(remaining)
        try:
            conn.sock.sendall(request)
        except TimeoutError:
            raise Timeout(False) from None

    def _finish(self, conn: _Conn, deadline: float, max_reply: int) -> tuple[int, bytes]:
        """The reply on ``conn``; the connection then goes back to the pool or is closed."""
        keep = False
        try:
            status, data, keep = self._reply(conn, deadline, max_reply)
        except ConnectionResetError as e:
            if conn.buf:
                raise
            raise _NothingBack(e) from None  # reset before any byte of the reply
        finally:
            if keep:
                self._release(conn)
            else:
                conn.close()
        return status, data

    @staticmethod
    def _reply(conn: _Conn, deadline: float, max_reply: int) -> tuple[int, bytes, bool]:
        status, http10, headers = _read_head(conn, deadline)
        if status in REDIRECTS and headers.get("location"):
            raise Redirect(status)
        if status != 200:
            return status, b"", False
        tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
        keep = "keep-alive" in tokens if http10 else "close" not in tokens
        if "chunked" in headers.get("transfer-encoding", "").lower():
            chunks: list[bytes] = []
            size = 0
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
                size += n
                if size > max_reply:
                    raise TooLarge()
                chunks.append(conn.take(n, deadline))
                if conn.take(2, deadline) != b"\r\n":
                    raise http.client.HTTPException("chunk not followed by CRLF")
            data = b"".join(chunks)
        elif "content-length" in headers:
            value = headers["content-length"]
            if not value.isdigit():
                raise http.client.HTTPException(f"bad Content-Length {value!r}")
            length = int(value)
            if length > max_reply:
                raise TooLarge()
            data = conn.take(length, deadline)
        else:  # the body runs to the end of the connection
            keep = False
            while conn.fill(deadline, True):
                if len(conn.buf) > max_reply:
                    raise TooLarge()
            data = bytes(conn.buf)
            conn.buf.clear()
        if headers.get("content-encoding", "").strip().lower() == "gzip":
            inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
            data = inflate.decompress(data, max_reply + 1)
            if len(data) > max_reply or inflate.unconsumed_tail:
                raise TooLarge()
            if not inflate.eof:
                raise zlib.error("unexpected EOF")
        return 200, data, keep
