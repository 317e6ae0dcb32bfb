"""An ASGI app served by uvicorn from a daemon thread, on a socket bound up front (``port=0``
picks a free port). Shared by the extender SDK (kubesched.extender.server) and the health and
metrics endpoints of ``kubesched run`` (kubesched.live.serving)."""

from __future__ import annotations

import functools
import socket
import threading
import time
from typing import Self

import uvicorn

from kubesched.errors import ConfigError


class ThreadedServer:
    """A context manager: ``with ThreadedServer(config, host, port, ...) as srv: srv.url``."""

    #: what a start failure is called in its error message ("extender server", "serving", ...)
    what = "server"

    def __init__(self, config: uvicorn.Config, *, host: str, port: int, https: bool, thread_name: str,
                 reuse_port: bool = False) -> None:
        self.host = host
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
        self.port: int = self._sock.getsockname()[1]
        self.scheme = "https" if https else "http"
        self._thread = threading.Thread(target=functools.partial(self._server.run, sockets=[self._sock]),
                                        name=f"{thread_name}-{self.port}", daemon=True)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    def start(self, timeout: float = 10.0) -> Self:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self._server.should_exit = True
                self._sock.close()
                raise ConfigError(f"{self.what} on {self.url} did not start")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout)
        self._sock.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
