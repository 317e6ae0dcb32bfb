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

The connection, the reply parser and the pool's connection handling are kubesched._http1's,
shared with kubesched.cluster._http (the API client's transport); this module adds what is
the extender client's own: POST only, the reply's size limit, redirects left to httpx, the
retry of idempotent calls, and its errors.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping

from kubesched._http1 import Conn, Expired, TooLarge, read_body, read_head
from kubesched._http1 import Pool as _BasePool

__all__ = ["Pool", "Redirect", "Timeout", "TooLarge"]

REDIRECTS = frozenset({301, 302, 303, 307, 308})


class Timeout(Exception):
    """The deadline passed; ``reading_body``: after the reply's headers arrived."""

    def __init__(self, reading_body: bool) -> None:
        super().__init__("deadline exceeded while " + ("reading body" if reading_body else "awaiting headers"))
        self.reading_body = reading_body


class Redirect(Exception):
    """A 3xx reply: the caller sends the request again through a client that follows it."""


class _NothingBack(Exception):
    """The connection was closed or reset before any byte of the reply."""

    def __init__(self, error: ConnectionResetError) -> None:
        super().__init__(str(error))
        self.error = error


class Pool(_BasePool):
    """Kept-alive connections to one ``host:port`` (TLS with ``ssl_context``, verifying and
    sending SNI for ``server_hostname``). :meth:`post` is thread-safe: each call has a
    connection of its own."""

    def __init__(self, host: str, port: int, *, ssl_context: ssl.SSLContext | None = None,
                 server_hostname: str | None = None, headers: Mapping[str, str] | None = None,
                 max_idle: int = 25) -> None:
        super().__init__(host, port, ssl_context=ssl_context, server_hostname=server_hostname, headers=headers,
                         max_idle=max_idle)

    # ---------------------------------------------------------------- the request
    def post(self, target: str, body: bytes, *, content_type: str, deadline: float, max_reply: int,
             idempotent: bool = False) -> tuple[int, bytes]:
        """POST ``body`` to ``target`` (path and query) and return (status, reply body). The
        body is read only for status 200 (other statuses return b"", the connection closed).
        Raises :class:`Timeout`, :class:`TooLarge`, :class:`Redirect`, or the OSError /
        ssl.SSLError / http.client.HTTPException / zlib.error the exchange failed with
        (http.client.RemoteDisconnected: closed before any reply; IncompleteRead: cut short)."""
        request = b"".join([self.head("POST", target),
                            f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n".encode("latin-1"),
                            body])
        try:
            conn = self._send_on_idle(request, deadline)
            if conn is not None:
                try:
                    return self._finish(conn, deadline, max_reply)
                except _NothingBack as e:
                    if not idempotent:
                        raise e.error from None
            conn = self._send_on_new(request, deadline)
            try:
                return self._finish(conn, deadline, max_reply)
            except _NothingBack as e:
                raise e.error from None
        except Expired as e:
            raise Timeout(e.reading_body) from None

    def _finish(self, conn: Conn, deadline: float, max_reply: int) -> tuple[int, bytes]:
        """The reply on ``conn``; the connection then goes back to the pool or is closed."""
        keep = False
        try:
            status, data, keep = self._reply(conn, deadline, max_reply)
        except ConnectionResetError as e:  # http.client.RemoteDisconnected included
            if conn.buf:
                raise
            raise _NothingBack(e) from None  # closed or reset before any byte of the reply
        finally:
            if keep:
                self._release(conn)
            else:
                conn.close()
        return status, data

    @staticmethod
    def _reply(conn: Conn, deadline: float, max_reply: int) -> tuple[int, bytes, bool]:
        status, _, http10, headers = read_head(conn, lambda: conn.fill(deadline, False))
        if status in REDIRECTS and headers.get("location"):
            raise Redirect(status)
        if status != 200:
            return status, b"", False
        data, keep = read_body(conn, status, http10, headers, deadline, limit=max_reply)
        return 200, data, keep
