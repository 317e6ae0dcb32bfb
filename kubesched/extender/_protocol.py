"""The SDK's HTTP/1.1 server protocol: the hot verbs without h11 and ASGI, everything else by uvicorn.

A filter or prioritize call is one small POST on a kept-alive connection, twice per scheduling
cycle on the scheduler's critical path. Through uvicorn's h11 protocol and the ASGI interface a
request costs ~0.1 ms of Python on each side of the handler on the 2-core machine the benchmarks
run on (h11's event machine, the scope, receive/send messages, a task per request), which was the
largest part of what one extender adds at 1000 nodes. :class:`VerbProtocol` is the protocol
uvicorn runs for an :class:`~kubesched.extender.server.ExtenderApp` (``uvicorn.Config(http=...)``):
it reads requests of the plain shape kube-scheduler's and kubesched's clients send — ``POST
<prefix>/<verb> HTTP/1.1`` with exactly one Host and one Content-Length within the app's
``max_body_bytes``, well-formed header lines, no Transfer-Encoding, Expect, Upgrade or
``Connection`` other than keep-alive, no query — itself, from a receive buffer it reuses, passes
the body straight to the app's verb handling (run at once, not in a task started on the next
loop iteration, unless the handler suspends), and writes the reply's status line, uvicorn's
default headers (date, server), Content-Type, Content-Length and body in one write, as uvicorn
would have written them.

The first request that is anything else hands the connection, with every byte not consumed yet,
to uvicorn's h11 protocol for good (the way uvicorn itself hands a connection to its WebSocket
protocol): h11 then validates it, decodes chunked bodies, answers 100-continue, 400 or 431, and
the ASGI app serves the path. The handoff happens only between requests, so each side sees whole
requests. Keep-alive is uvicorn's: an idle connection closes after ``timeout_keep_alive``, and
at shutdown an idle connection closes at once, a busy one after its reply.
"""

from __future__ import annotations

import asyncio
import http
import re
from collections.abc import Awaitable, Coroutine, Generator
from typing import Any, Generic, Protocol, TypeVar, cast

from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

__all__ = ["VerbProtocol", "VerbServer"]


class VerbServer(Protocol):
    """What the protocol needs from the app (ExtenderApp)."""

    max_body_bytes: int

    def verb_routes(self) -> dict[bytes, str]:
        """Request path -> verb, for the paths served by :meth:`serve_verb`."""

    def serve_verb(self, verb: str, body: bytes) -> Awaitable[tuple[int, bytes]]:
        """(HTTP status, JSON reply) for a POST of ``body`` to ``verb``."""


# RFC 9110 field-name (a token) and field-value (visible characters and inner spaces or tabs);
# a line that is anything else goes to h11, which accepts or rejects it (400) by its own rules.
_HEADER = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*((?:[\x21-\x7e\x80-\xff](?:[\x20-\x7e\x80-\xff\t]*"
                     rb"[\x21-\x7e\x80-\xff])?)?)[ \t]*")
_MAX_HEAD = 16 * 1024  # h11's default maximum for an incomplete request head
_REASONS = {s.value: s.phrase.encode("ascii") for s in http.HTTPStatus}
_PAUSE_AT = 1 << 20  # bytes buffered behind a request in flight before reading pauses
# One receive buffer per connection, reused: asyncio's plain protocols get a fresh 256 KiB bytes
# object per read, which glibc serves with mmap + mremap + munmap (three syscalls and page
# faults per request).
_READ_SIZE = 256 * 1024

T = TypeVar("T")


class _Rest(Generic[T]):
    """The rest of a coroutine that already ran up to its first suspension (it yielded
    ``yielded``), as an awaitable for a task: Python 3.12's eager task start, by hand."""

    def __init__(self, coro: Coroutine[Any, Any, T], yielded: Any) -> None:
        self.coro = coro
        self.yielded = yielded

    def __await__(self) -> Generator[Any, Any, T]:
        coro, yielded = self.coro, self.yielded
        while True:
            try:
                sent = yield yielded
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as e:  # noqa: B036 - cancellation included: the coroutine sees it
                try:
                    yielded = coro.throw(e)
                except StopIteration as done:
                    return cast(T, done.value)
            else:
                try:
                    yielded = coro.send(sent)
                except StopIteration as done:
                    return cast(T, done.value)


class VerbProtocol(asyncio.BufferedProtocol):
    """uvicorn's HTTP protocol interface (``Config(http=VerbProtocol)``) for a :class:`VerbServer`
    app (``config.app``)."""

    def __init__(self, config: Config, server_state: ServerState, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None) -> None:
        if not config.loaded:
            config.load()
        self.config = config
        self.server_state = server_state
        self.app_state = app_state
        self.loop = _loop or asyncio.get_event_loop()
        self.app = cast(VerbServer, config.app)
        self.routes = self.app.verb_routes()
        self.max_head = config.h11_max_incomplete_event_size or _MAX_HEAD
        self.transport: asyncio.Transport | None = None
        self.read_view: memoryview | None = None
        self.buf = bytearray()  # received, not consumed yet
        self.busy = False  # a request is being answered; bytes after it wait in buf
        self.read_paused = False
        self.write_paused = False
        self.close_when_done = False
        self.keep_alive: asyncio.TimerHandle | None = None

    # ---------------------------------------------------------------- asyncio protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.server_state.connections.add(self)  # type: ignore[arg-type]  # uvicorn only calls shutdown()
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.server_state.connections.discard(self)
        self._cancel_keep_alive()
        self.transport = None
        self.buf.clear()

    def get_buffer(self, sizehint: int) -> memoryview:
        if self.read_view is None:
            self.read_view = memoryview(bytearray(_READ_SIZE))
        return self.read_view

    def buffer_updated(self, nbytes: int) -> None:
        assert self.read_view is not None
        self._cancel_keep_alive()
        self.buf += self.read_view[:nbytes]
        if self.busy:
            if len(self.buf) > _PAUSE_AT and not self.read_paused and self.transport is not None:
                self.read_paused = True
                self.transport.pause_reading()
            return
        self._serve()

    def eof_received(self) -> bool | None:
        return None  # the transport closes: a half-closed client sends no further request

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        if not self.busy:
            self._serve()

    # ---------------------------------------------------------------- uvicorn's interface
    def shutdown(self) -> None:
        """The server is stopping: close now if idle, else after the reply in progress."""
        if self.busy:
            self.close_when_done = True
        elif self.transport is not None:
            self.transport.close()

    # ---------------------------------------------------------------- requests
    def _serve(self) -> None:
        """Answer the complete requests in ``buf``, one at a time, then wait for more (with the
        keep-alive timer when nothing is pending); hand the connection to h11 at the first
        request that is not of the plain shape."""
        while not self.busy:
            transport = self.transport
            if transport is None or transport.is_closing():
                return
            if self.write_paused:
                return  # resume_writing comes back here
            request = self._take_request()
            if request is None:
                break
            verb, body = request
            self.busy = True
            coro = self._answer(verb, body)
            # The handler runs right here, not in a task started on the next loop iteration:
            # a sync node-level handler finishes without ever suspending. One that suspends
            # (an async or worker-thread handler) goes on in a task.
            try:
                yielded = coro.send(None)
            except StopIteration:
                continue
            task = self.loop.create_task(self._finish(coro, yielded))
            self.server_state.tasks.add(task)
            task.add_done_callback(self.server_state.tasks.discard)
            return
        if not self.buf and self.transport is not None and not self.transport.is_closing():
            self.keep_alive = self.loop.call_later(self.config.timeout_keep_alive, self._expire)

    async def _finish(self, coro: Coroutine[Any, Any, None], yielded: Any) -> None:
        await _Rest(coro, yielded)
        self._serve()

    def _take_request(self) -> tuple[str, bytes] | None:
        """The next complete request of the plain shape, taken out of ``buf``; None when it is
        incomplete, or when the connection went to h11."""
        buf = self.buf
        if not buf:
            return None
        if not buf.startswith(b"POST "[:len(buf)]):
            self._hand_off()
            return None
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            if len(buf) > self.max_head:
                self._hand_off()
            return None
        request = self._plain_request(bytes(buf[:end])) if end <= self.max_head else None
        if request is None:
            self._hand_off()
            return None
        verb, length = request
        start = end + 4
        if len(buf) < start + length:
            return None  # the body is still on its way
        body = bytes(buf[start:start + length])
        del buf[:start + length]
        return verb, body

    def _plain_request(self, head: bytes) -> tuple[str, int] | None:
        """(verb, Content-Length) of a request head of the plain shape, else None."""
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ")
        if len(parts) != 3 or parts[2] != b"HTTP/1.1":
            return None
        verb = self.routes.get(parts[1])  # a query, %-escapes or any other path: not ours
        if verb is None:
            return None
        length = -1
        hosts = 0
        for line in lines[1:]:
            m = _HEADER.fullmatch(line)
            if m is None:
                return None
            name = m[1].lower()
            if name == b"content-length":
                value = m[2]
                if length >= 0 or not value.isdigit() or len(value) > 18:
                    return None
                length = int(value)
            elif name == b"host":
                hosts += 1
            elif name == b"connection":
                if any(t.strip().lower() != b"keep-alive" for t in m[2].split(b",")):
                    return None  # close, upgrade, ...: h11 knows what they mean
            elif name in (b"transfer-encoding", b"expect", b"upgrade"):
                return None
        if hosts != 1 or length < 0 or length > self.app.max_body_bytes:
            return None
        return verb, length

    async def _answer(self, verb: str, body: bytes) -> None:
        """Answer one request; ``busy`` until its reply is written."""
        try:
            status, reply = await self.app.serve_verb(verb, body)
        except BaseException:
            if self.transport is not None:
                self.transport.close()
            raise
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        head = [b"HTTP/1.1 %d %s\r\n" % (status, _REASONS.get(status, b""))]
        head += [b"%s: %s\r\n" % kv for kv in self.server_state.default_headers]
        head.append(b"content-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(reply))
        head.append(reply)
        transport.write(b"".join(head))  # one write: no segment waits for the peer's delayed ACK
        self.server_state.total_requests += 1
        self.busy = False
        if self.close_when_done:
            transport.close()
        elif self.read_paused:
            self.read_paused = False
            transport.resume_reading()

    def _expire(self) -> None:
        self.keep_alive = None
        if not self.busy and self.transport is not None:
            self.transport.close()

    def _cancel_keep_alive(self) -> None:
        if self.keep_alive is not None:
            self.keep_alive.cancel()
            self.keep_alive = None

    def _hand_off(self) -> None:
        """The rest of the connection to uvicorn's h11 protocol, starting with ``buf``."""
        transport = self.transport
        assert transport is not None and not self.busy
        self._cancel_keep_alive()
        self.server_state.connections.discard(self)
        inner = H11Protocol(config=self.config, server_state=self.server_state, app_state=self.app_state,
                            _loop=self.loop)
        inner.connection_made(transport)
        transport.set_protocol(inner)
        if self.write_paused:
            inner.pause_writing()
        data = bytes(self.buf)
        self.buf.clear()
        self.transport = None
        if data:
            inner.data_received(data)
