"""kubesched._http1: an idle kept-alive connection's check, whatever state ssl's import is in
(the API client's transport must not import ssl for a plain connection, and another thread --
the web server's start -- may be importing it at that very moment)."""

from __future__ import annotations

import socket
import sys
import types
from collections.abc import Iterator

import pytest

from kubesched._http1 import Conn
from kubesched.cluster.live import _informer_errors


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    try:
        yield a, b
    finally:
        a.close()
        b.close()


SSL_STATES = [
    ("ssl not imported", None),
    ("ssl half imported by another thread", types.ModuleType("ssl")),
    ("ssl imported", "real"),
]


@pytest.mark.parametrize("ssl_module", [s[1] for s in SSL_STATES], ids=[s[0] for s in SSL_STATES])
def test_an_idle_plain_connection_is_alive_and_one_the_server_closed_is_not(
        pair: tuple[socket.socket, socket.socket], ssl_module: object, monkeypatch: pytest.MonkeyPatch) -> None:
    if ssl_module is None:
        monkeypatch.delitem(sys.modules, "ssl", raising=False)
    elif ssl_module != "real":
        monkeypatch.setitem(sys.modules, "ssl", ssl_module)
    else:
        import ssl  # noqa: F401
    ours, server = pair
    assert Conn(ours).alive()
    server.close()
    assert not Conn(ours).alive()


def test_httpx_errors_are_matched_only_once_httpx_has_defined_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "httpx", types.ModuleType("httpx"))  # being imported elsewhere
    assert _informer_errors()[-1] is ValueError
    half = types.ModuleType("httpx")
    half.HTTPError = type("HTTPError", (Exception,), {})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "httpx", half)
    assert _informer_errors()[-1] is half.HTTPError  # type: ignore[attr-defined]
