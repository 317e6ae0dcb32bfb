"""HTTP/1.1 client mechanics shared by the two fast transports (kubesched.cluster._http for
the API client, kubesched.extender._http for extender POSTs).

A connection with its receive buffer (:class:`Conn`), a minimal reply parser (:func:`read_head`:
status line and headers, 1xx replies skipped; :func:`read_body`: a Content-Length, chunked or
read-to-close body, gzip decoded) and a pool of kept-alive connections to one ``host:port``
(:class:`Pool`, like Go's http.Transport: at most ``max_idle`` idle ones, most recently used
first, an idle one the server has closed meanwhile noticed before reuse). The layering keeps
kubesched.cluster and kubesched.extender apart, so what they share lives here, outside both.

The two transports report failures differently (the API client as client-go's utilnet sees
Go's transport errors, the extender client as net/http's error strings), so this module raises
only neutral errors: :class:`Expired` when a deadline passes, :class:`TooLarge` for a reply over
its limit, and the OSError / ssl.SSLError / http.client.HTTPException / zlib.error of the
exchange; each transport maps them to its own.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
import zlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from kubesched._lazy import lazy_module

if TYPE_CHECKING:
    import http.client as http_client
    import ssl
else:
    # Imported when first used: ssl for a TLS connection, http.client for its exception classes
    # once a reply is malformed (with the email package it brings, ~20 ms of a restarted
    # scheduler's start that a plain-HTTP API server or a well-formed reply never needs).
    http_client = lazy_module("http.client")
    ssl = lazy_module("ssl")

__all__ = ["Conn", "Expired", "Pool", "TooLarge", "read_body", "read_head"]

_RECV = 1 << 16
MAX_HEAD = 1 << 16  # a reply's status line and headers; also a chunk-size line's limit


class Expired(Exception):
    """A deadline or read timeout passed; ``reading_body``: after the reply's head arrived."""

    def __init__(self, reading_body: bool) -> None:
        super().__init__("reading body" if reading_body else "awaiting headers")
        self.reading_body = reading_body


class TooLarge(Exception):
    """The reply (after gzip decoding) is longer than allowed."""


class Conn:
    """A connection and the bytes read from it but not consumed yet.

    The readers take a ``fill`` callable (read more into ``buf``; False at the end of the
    stream) rather than a deadline, since a whole-reply read is bounded by one deadline
    (:meth:`fill`) but a streamed body by a timeout per read (:meth:`more`)."""

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
        # An SSLSocket exists only once ssl has defined the class: a plain connection does not
        # import it (and another thread may be importing it right now: not yet defined then).
        ssl_socket = getattr(sys.modules.get("ssl"), "SSLSocket", None)
        tls = ssl_socket is not None and isinstance(sock, ssl_socket)
        try:
            sock.settimeout(0.0)
            if tls:
                sock.recv(1)
            else:
                sock.recv(1, socket.MSG_PEEK)
        except BlockingIOError:
            return True
        except OSError as e:
            return tls and isinstance(e, (ssl.SSLWantReadError, ssl.SSLWantWriteError))
        return False  # b"": closed; bytes: a reply nobody asked for

    def send(self, data: bytes, deadline: float) -> None:
        """Write ``data`` (one ``sendall``) before ``deadline``."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise Expired(False)
        self.sock.settimeout(remaining)
        try:
            self.sock.sendall(data)
        except TimeoutError:
            raise Expired(False) from None

    def fill(self, deadline: float, reading_body: bool = True) -> bool:
        """Read more into ``buf`` before ``deadline``; False at the end of the stream."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise Expired(reading_body)
        self.sock.settimeout(remaining)
        return self.more(reading_body)

    def more(self, reading_body: bool = True) -> bool:
        """Read more into ``buf`` with the socket's timeout as it is; False at the end of the
        stream."""
        try:
            data = self.sock.recv(_RECV)
        except TimeoutError:
            raise Expired(reading_body) from None
        if not data:
            return False
        self.buf += data
        return True

    def take(self, n: int, fill: Callable[[], bool]) -> bytes:
        """Exactly ``n`` bytes of the body."""
        while len(self.buf) < n:
            if not fill():
                raise http_client.IncompleteRead(bytes(self.buf), n - len(self.buf))
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def line(self, fill: Callable[[], bool]) -> bytes:
        """One CRLF-terminated line of a chunked body, without the CRLF."""
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                out = bytes(self.buf[:i])
                del self.buf[:i + 2]
                return out
            if len(self.buf) > MAX_HEAD:
                raise http_client.LineTooLong("chunk size line")
            if not fill():
                raise http_client.IncompleteRead(bytes(self.buf))


def chunk_size(line: bytes) -> int:
    """The size on a chunked body's size line (chunk extensions ignored)."""
    try:
        return int(line.split(b";", 1)[0].strip(), 16)
    except ValueError:
        raise http_client.HTTPException(f"bad chunk size {line[:20]!r}") from None


def content_length(headers: Mapping[str, str]) -> int:
    """The Content-Length header's value (the caller checked it is there)."""
    value = headers["content-length"]
    if not value.isdigit():
        raise http_client.HTTPException(f"bad Content-Length {value!r}")
    return int(value)


def read_head(conn: Conn, fill: Callable[[], bool]) -> tuple[int, str, bool, dict[str, str]]:
    """The next final reply's (status, reason, HTTP/1.0?, headers with lower-case names).
    http.client.RemoteDisconnected (a ConnectionResetError) when the connection ends before any
    byte of it."""
    while True:
        start = 0
        while True:
            i = conn.buf.find(b"\r\n\r\n", start)
            if i >= 0:
                break
            if len(conn.buf) > MAX_HEAD:
                raise http_client.LineTooLong("header block")
            start = max(0, len(conn.buf) - 3)
            if not fill():
                if not conn.buf:
                    raise http_client.RemoteDisconnected("Remote end closed connection without response")
                raise http_client.IncompleteRead(bytes(conn.buf))
        lines = bytes(conn.buf[:i]).split(b"\r\n")
        del conn.buf[:i + 4]
        parts = lines[0].split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit() or len(parts[1]) != 3:
            raise http_client.BadStatusLine(lines[0].decode("latin-1"))
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


def read_body(conn: Conn, status: int, http10: bool, headers: Mapping[str, str], deadline: float, *,
              head_only: bool = False, limit: int | None = None) -> tuple[bytes, bool]:
    """The whole body of the reply whose head :func:`read_head` returned (gzip undone), and
    whether the connection can carry another request. ``limit``: :class:`TooLarge` for a body
    longer than that, raised as soon as the framing or the bytes so far say so."""
    tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
    keep = "keep-alive" in tokens if http10 else "close" not in tokens

    def fill() -> bool:
        return conn.fill(deadline)

    if head_only or status in (204, 304):
        data = b""
    elif "chunked" in headers.get("transfer-encoding", "").lower():
        chunks: list[bytes] = []
        size = 0
        while True:
            n = chunk_size(conn.line(fill))
            if n == 0:
                while conn.line(fill):  # trailers, up to the empty line
                    pass
                break
            size += n
            if limit is not None and size > limit:
                raise TooLarge()
            chunks.append(conn.take(n, fill))
            if conn.take(2, fill) != b"\r\n":
                raise http_client.HTTPException("chunk not followed by CRLF")
        data = b"".join(chunks)
    elif "content-length" in headers:
        length = content_length(headers)
        if limit is not None and length > limit:
            raise TooLarge()
        data = conn.take(length, fill)
    else:  # the body runs to the end of the connection
        keep = False
        while fill():
            if limit is not None and len(conn.buf) > limit:
                raise TooLarge()
        data = bytes(conn.buf)
        conn.buf.clear()
    if headers.get("content-encoding", "").strip().lower() == "gzip":
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        # With a limit, inflate one byte more than it allows: enough to tell, and a small
        # gzip bomb cannot take the memory.
        data = inflate.decompress(data, 0 if limit is None else limit + 1)
        if limit is not None and (len(data) > limit or inflate.unconsumed_tail):
            raise TooLarge()
        if not inflate.eof:
            raise zlib.error("unexpected EOF")
    return data, keep


class Pool:
    """Kept-alive connections to one ``host:port`` (TLS with ``ssl_context``, verifying and
    sending SNI for ``server_hostname``); ``headers`` go with every request (``head`` makes
    a request's head with them). Thread-safe: each exchange has a connection of its own.

    :meth:`_connect` raises :class:`Expired` (``reading_body`` False) when ``deadline`` passes
    and the OSError / ssl.SSLError otherwise; the transports map those to their own errors."""

    def __init__(self, host: str, port: int, *, ssl_context: ssl.SSLContext | None,
                 server_hostname: str | None, headers: Mapping[str, str] | None, max_idle: int) -> None:
        self.host = host
        self.port = port
        self._ssl = ssl_context
        self._server_hostname = server_hostname or host
        self._max_idle = max_idle
        self._idle: list[Conn] = []
        self._lock = threading.Lock()
        self._closed = False
        self.connections_made = 0  # for tests: connections are reused
        shown = f"[{host}]" if ":" in host else host
        default_port = 443 if ssl_context is not None else 80
        lines = [f"Host: {shown}" if port == default_port else f"Host: {shown}:{port}"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self._headers = ("\r\n".join(lines) + "\r\n").encode("latin-1")
        self._origin = f"{'https' if ssl_context is not None else 'http'}://{shown}:{port}"

    def head(self, method: str, target: str, headers: str = "") -> bytes:
        """A request's head up to (not including) the empty line that ends it: the request
        line, the pool's headers, then ``headers`` (``Name: value\\r\\n`` lines)."""
        return f"{method} {target} HTTP/1.1\r\n".encode("latin-1") + self._headers + headers.encode("latin-1")

    # ---------------------------------------------------------------- connections
    def _connect(self, deadline: float) -> Conn:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise Expired(False)
        # A str host is encoded by the idna codec inside getaddrinfo (encodings.idna and
        # stringprep imported at the first connection, ~6 ms of a restarted start); an ASCII
        # name or address as bytes skips it.
        host: str | bytes = self.host.encode("ascii") if self.host.isascii() else self.host
        try:
            # create_connection hands the host to getaddrinfo, which takes bytes (typeshed says str).
            sock = socket.create_connection((host, self.port), timeout=remaining)  # type: ignore[arg-type]
        except TimeoutError:
            raise Expired(False) from None
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._ssl is not None:
                sock.settimeout(max(deadline - time.monotonic(), 1e-3))
                sock = self._ssl.wrap_socket(sock, server_hostname=self._server_hostname)
        except TimeoutError:
            sock.close()
            raise Expired(False) from None
        except BaseException:
            sock.close()
            raise
        self.connections_made += 1
        return Conn(sock)

    def _take_idle(self) -> Conn | None:
        while True:
            with self._lock:
                if not self._idle:
                    return None
                conn = self._idle.pop()
            if conn.alive():
                return conn
            conn.close()

    def _release(self, conn: Conn) -> None:
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

    def _send_on_idle(self, request: bytes, deadline: float) -> Conn | None:
        """An idle connection ``request`` was written to, or None: no idle one, or the write
        failed on it (closed by the server meanwhile: nothing reached it, so the request can
        go on a new one, Go's nothingWrittenError retry)."""
        conn = self._take_idle()
        if conn is None:
            return None
        try:
            conn.send(request, deadline)
        except (BrokenPipeError, ConnectionResetError):
            conn.close()
            return None
        except BaseException:
            conn.close()
            raise
        return conn

    def _send_on_new(self, request: bytes, deadline: float) -> Conn:
        """A new connection ``request`` was written to."""
        conn = self._connect(deadline)
        try:
            conn.send(request, deadline)
        except BaseException:
            conn.close()
            raise
        return conn
