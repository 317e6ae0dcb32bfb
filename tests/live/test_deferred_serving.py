"""``kubesched run`` serves health and metrics once it schedules (its web server's imports must
not delay a restarted scheduler's first bind): the port is bound and listening from the start
(a port in use, or TLS files that cannot serve, still fail the start), a request that comes
early waits and is answered once serving starts, and the scheduling loop says when it runs
(after its first attempt's binding cycle; a standby after a second)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesched.cluster.live import ApiClient, ClusterConfig, LiveCluster
from kubesched.config import parse_config
from kubesched.errors import ConfigError
from kubesched.framework import Code, CycleState, Status
from kubesched.live import runner
from kubesched.live.serving import HealthChecks, SchedulerMetrics, ServingThread, bind_serving, build_app
from kubesched.objects import Pod
from kubesched.plugins.registry import REGISTRY
from kubesched.testing.apiserver import LocalApiServer

from .apihelpers import FAST, node, pod, wait_until


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def bound() -> Iterator[tuple[ServingThread, list[int]]]:
    made: list[int] = []

    def make_app() -> object:
        made.append(1)
        return build_app(SchedulerMetrics(), HealthChecks())

    server = bind_serving(make_app, secure_port=free_port())
    assert server is not None
    try:
        yield server, made
    finally:
        server.stop()


def test_the_port_listens_at_once_and_an_early_request_is_answered_once_serving_starts(
        bound: tuple[ServingThread, list[int]]) -> None:
    server, made = bound
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        conn.settimeout(0.3)
        with pytest.raises(TimeoutError):
            conn.recv(1)  # accepted by the kernel, not answered: nothing serves yet
        assert made == []  # the app (and the web server's modules) not made yet
        server.start()
        conn.settimeout(5)
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 200") and reply.endswith(b"ok")
    assert made == [1]


def test_a_port_in_use_fails_at_once() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(ConfigError, match="cannot listen"):
            bind_serving(lambda: None, secure_port=taken.getsockname()[1])


@pytest.mark.parametrize("files", [("cert", ""), ("missing", "missing"), ("garbage", "garbage")],
                         ids=["a certificate without its key", "files that are not there", "files that are not PEM"])
def test_tls_files_that_cannot_serve_fail_at_once(tmp_path: Path, files: tuple[str, str]) -> None:
    (tmp_path / "garbage").write_text("not a certificate")
    (tmp_path / "cert").write_text("not a certificate")
    cert, key = (str(tmp_path / f) if f else None for f in files)
    with pytest.raises(ConfigError, match="must be given together|cannot serve with --tls-cert-file"):
        bind_serving(lambda: None, secure_port=free_port(), cert_file=cert, key_file=key)


@pytest.fixture
def api() -> Iterator[LocalApiServer]:
    with LocalApiServer(bookmark_interval=0.2) as server:
        server.create(node("n1"))
        yield server


class _HoldAtPermit:
    """A Permit plugin holding every pod (30 s): its binding cycle does not end."""

    name = "HoldAtPermit"

    def events_to_register(self) -> list[Any]:
        return []

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        return Status(Code.WAIT, ("held",)), 30.0


RUNS = [
    ("the leader, once its first attempt's bind is done", True, False),
    ("the leader whose first binding cycle does not end, after the wait for it", True, True),
    ("a standby, after a second", False, False),
]


@pytest.mark.parametrize("leading, held", [r[1:] for r in RUNS], ids=[r[0] for r in RUNS])
def test_the_scheduling_loop_says_when_it_runs(api: LocalApiServer, leading: bool, held: bool,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "STANDBY_RUNNING_AFTER", 0.3)
    monkeypatch.setattr(runner, "RUNNING_BIND_WAIT", 0.3)
    api.create(pod("a"))
    client = ApiClient(ClusterConfig(server=api.url), qps=0, timeout=10.0)
    config = parse_config({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler",
                      "plugins": {"permit": {"enabled": [{"name": "HoldAtPermit"}] if held else []}}}]})
    sched = runner.LiveScheduler(config, LiveCluster(client, options=FAST), deterministic=True,
                                 registry={**REGISTRY, "HoldAtPermit": lambda a, h: _HoldAtPermit()})
    # When on_running was called, and how many binds the API server had seen by then.
    called: list[tuple[float, int]] = []
    stop = threading.Event()
    assert sched.start()
    started = time.monotonic()

    def on_running() -> None:
        called.append((time.monotonic(), len(api.calls("create", "pods", "binding"))))

    loop = threading.Thread(target=sched.run, args=(stop, lambda: leading, on_running), daemon=True)
    loop.start()
    try:
        wait_until(lambda: called, what="on_running")
        at, binds = called[0]
        if leading and not held:
            # Called once the first attempt's binding cycle has ended: its bind already made,
            # so that serving's imports never took turns with it.
            assert binds == 1
        else:
            assert at - started >= 0.3 and binds == 0
        time.sleep(0.4)
        assert len(called) == 1  # once
    finally:
        stop.set()
        loop.join(5)
        sched.stop(timeout=10.0)
        client.close()
