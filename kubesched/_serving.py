"""An ASGI app served by uvicorn from a daemon thread, on a socket bound up front (``port=0``
picks a free port). Shared by the extender SDK (kubesched.extender.server) and the health and
metrics endpoints of ``kubesched run`` (kubesched.live.serving)."""

from __future__ import annotations

import functools
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Self

from kubesched.errors import ConfigError

if TYPE_CHECKING:
    import uvicorn


_BACKLOG = 2048  # uvicorn's default backlog, which it sets again when it serves


class ThreadedServer:
    """A context manager: ``with ThreadedServer(config, host, port, ...) as srv: srv.url``."""

    #: what a start failure is called in its error message ("extender server", "serving", ...)
    what = "server"

    def __init__(self, config: uvicorn.Config | Callable[[], uvicorn.Config], *, host: str, port: int, https: bool,
                 thread_name: str, reuse_port: bool = False) -> None:
        """``config``: uvicorn's, or what makes it when :meth:`start` is called (the socket is
        bound and listening before: connections wait in its backlog until then)."""
        self.host = host
        self._make_config: Callable[[], uvicorn.Config] | None = None
        self._server: uvicorn.Server | None = None
        if callable(config):
            self._make_config = config
        else:  # uvicorn is imported already: a Config was made
            import uvicorn

            self._server = uvicorn.Server(config)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets whose proto says TCP
        # (accepted sockets inherit 0 otherwise), and without it every keep-alive reply waits
        # out the client's delayed ACK (~40 ms).
        self._sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:  # kube-scheduler's --permit-port-sharing
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        try:
            self._sock.bind((host, port))
        except OSError as e:
            self._sock.close()
            raise ConfigError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
        if self._make_config is not None:
            # Served later: listen now, so that a connection made meanwhile waits in the backlog
            # (it is answered once serving starts) instead of being refused.
            self._sock.listen(_BACKLOG)
        self.port: int = self._sock.getsockname()[1]
        self.scheme = "https" if https else "http"
        self._thread_name = f"{thread_name}-{self.port}"
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    def start(self, timeout: float = 10.0) -> Self:
        server = self._server
        if server is None:
            import uvicorn

            assert self._make_config is not None
            server = self._server = uvicorn.Server(self._make_config())
        thread = self._thread = threading.Thread(target=functools.partial(server.run, sockets=[self._sock]),
                                                 name=self._thread_name, daemon=True)
        thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                server.should_exit = True
                self._sock.close()
                raise ConfigError(f"{self.what} on {self.url} did not start")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self._sock.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
