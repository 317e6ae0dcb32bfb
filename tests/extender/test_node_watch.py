"""A nodeCacheCapable extender's node cache fed by a list+watch of the API server's nodes
(kubesched.extender.watch, kubesched's own reflector), end to end against the local API server:
nodes created, updated and deleted there appear in the SDK's cache, and filter requests that
carry only node names are answered from it — in process (NodeWatch) and through
``kubesched extender serve --kubeconfig``. Every wait is bounded."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from builders import make_pod

from kubesched.cluster.live import ApiClient, ClusterConfig
from kubesched.config.types import Extender
from kubesched.extender import HTTPExtender
from kubesched.extender.server import ExtenderApp, ServerThread
from kubesched.extender.watch import NodeWatch
from kubesched.objects import Node, Pod
from kubesched.objects.parse import parse_node
from kubesched.testing import LocalApiServer

POD = make_pod().name("web").uid("uid-web").req(cpu="100m").obj()


def node_manifest(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels)},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def eventually(check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.02)


def zone_app() -> ExtenderApp:
    """Keeps the nodes labelled zone=a; scores a node by its ``score`` label."""
    app = ExtenderApp(prefix="/scheduler")

    @app.filter_node
    def in_zone_a(pod: Pod, node: Node) -> str | None:
        return None if node.labels.get("zone") == "a" else f"zone {node.labels.get('zone')!r} is not a"

    @app.score_node
    def by_label(pod: Pod, node: Node) -> int:
        return int(node.labels.get("score", "0"))

    return app


def names_only(url: str) -> HTTPExtender:
    return HTTPExtender(Extender(url_prefix=url + "/scheduler", filter_verb="filter", prioritize_verb="prioritize",
                                 weight=1, node_cache_capable=True, http_timeout=5.0))


def stand_ins(*names: str) -> list[Node]:
    """What the scheduler passes: its own Node objects — only their names go on the wire."""
    return [parse_node(node_manifest(n)) for n in names]


@pytest.fixture
def api() -> Iterator[LocalApiServer]:
    with LocalApiServer(bookmark_interval=0.2) as server:
        yield server


def test_the_cache_follows_the_api_server_and_answers_names_only_filters(api: LocalApiServer) -> None:
    api.create(node_manifest("n1", zone="a", score="3"))
    api.create(node_manifest("n2", zone="b"))
    app = zone_app()
    with ApiClient(ClusterConfig(server=api.url), qps=0) as client, NodeWatch(app.node_cache, client) as watch, \
            ServerThread(app) as srv, names_only(srv.url) as ext:
        assert watch.wait_for_sync(10.0)
        # LIST: the nodes that existed before the extender started, before any request.
        assert app.node_cache.names() == ["n1", "n2"]
        kept, failed, _ = ext.filter(POD, stand_ins("n1", "n2"))
        assert [n.name for n in kept] == ["n1"] and failed == {"n2": "zone 'b' is not a"}

        # WATCH: a node created afterwards is known at once, with its labels.
        api.create(node_manifest("n3", zone="a", score="7"))
        eventually(lambda: "n3" in app.node_cache, "n3 in the cache")
        kept, _, _ = ext.filter(POD, stand_ins("n1", "n2", "n3"))
        assert [n.name for n in kept] == ["n1", "n3"]
        assert ext.prioritize(POD, stand_ins("n1", "n3")) == ([("n1", 3), ("n3", 7)], 1)

        # An update replaces the node: n2 moves to zone a and now fits.
        n2 = api.get("nodes", "n2")
        n2["metadata"]["labels"]["zone"] = "a"
        api.update("nodes", "n2", n2)
        eventually(lambda: (app.node_cache.get("n2") or stand_ins("x")[0]).labels.get("zone") == "a", "n2 updated")
        kept, failed, _ = ext.filter(POD, stand_ins("n1", "n2", "n3"))
        assert [n.name for n in kept] == ["n1", "n2", "n3"] and failed == {}

        # A delete removes it: a request naming it finds no node.
        api.delete("nodes", "n1")
        eventually(lambda: "n1" not in app.node_cache, "n1 gone from the cache")
        kept, failed, _ = ext.filter(POD, stand_ins("n1", "n2"))
        assert [n.name for n in kept] == ["n2"]
        assert failed == {"n1": "node 'n1' is not in this extender's node cache"}
    assert [c.verb for c in api.calls(resource="nodes")][:2] == ["list", "watch"]


def test_a_relist_after_an_expired_watch_applies_the_deletes_it_missed(api: LocalApiServer) -> None:
    for name in ("n1", "n2", "n3"):
        api.create(node_manifest(name, zone="a"))
    app = zone_app()
    with ApiClient(ClusterConfig(server=api.url), qps=0) as client, NodeWatch(app.node_cache, client) as watch:
        assert watch.wait_for_sync(10.0)
        assert len(app.node_cache) == 3
        api.compact()  # resuming the watch from its resourceVersion is now 410 Gone: relist
        api.expire_next_watch()
        api.delete("nodes", "n2")
        api.drop_watches()
        api.create(node_manifest("n4", zone="a"))
        eventually(lambda: app.node_cache.names() == ["n1", "n3", "n4"], "the cache equals the API's nodes")
        assert watch.informer.relists >= 1


# ----------------------------------------------------------- kubesched extender serve --kubeconfig
APP_FILE = '''
from kubesched.extender.server import ExtenderApp

app = ExtenderApp(prefix="/scheduler")


@app.filter_node
def in_zone_a(pod, node):
    return None if node.labels.get("zone") == "a" else "not zone a"
'''


def test_extender_serve_kubeconfig_feeds_the_node_cache(api: LocalApiServer, tmp_path: Path) -> None:
    api.create(node_manifest("n1", zone="a"))
    api.create(node_manifest("n2", zone="b"))
    (tmp_path / "zone_extender.py").write_text(APP_FILE)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(textwrap.dedent(f"""\
        apiVersion: v1
        kind: Config
        clusters: [{{name: local, cluster: {{server: "{api.url}"}}}}]
        users: [{{name: me, user: {{}}}}]
        contexts: [{{name: local, context: {{cluster: local, user: me}}}}]
        current-context: local
        """))
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubesched.cli", "extender", "serve", str(tmp_path / "zone_extender.py") + ":app",
         "--port", "0", "--kubeconfig", str(kubeconfig)],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env, cwd=tmp_path)
    try:
        url = _serving_url(proc)
        # Served only once the first LIST is in: names resolve at the first request.
        with names_only(url) as ext:
            kept, failed, _ = ext.filter(POD, stand_ins("n1", "n2"))
            assert [n.name for n in kept] == ["n1"] and failed == {"n2": "not zone a"}
            api.create(node_manifest("n3", zone="a"))

            def n3_kept() -> bool:
                return [n.name for n in ext.filter(POD, stand_ins("n3"))[0]] == ["n3"]

            eventually(n3_kept, "n3 (created after the start) kept by the served extender")
        assert httpx.get(url + "/healthz", timeout=5).text == "ok"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert any(c.user_agent.startswith("kubesched-extender") for c in api.calls(resource="nodes", verb="watch"))


def _serving_url(proc: subprocess.Popen[str]) -> str:
    """The URL from the 'serving on' log line (bounded: the process is killed on timeout).
    A thread reads the lines: select() on the pipe misses lines already in the text
    reader's buffer (two log lines arriving together)."""
    assert proc.stderr is not None
    stderr = proc.stderr
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for line in stderr:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, name="extender-serve-stderr", daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + 60
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        if line is None:
            break
        seen.append(line)
        m = re.search(r"serving on (http://\S+)", line)
        if m:
            return m.group(1)
    proc.kill()
    raise AssertionError("kubesched extender serve did not start:\n" + "".join(seen))


def test_serve_kubeconfig_needs_an_extender_app(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kubesched.cli import main

    (tmp_path / "plain_asgi.py").write_text("async def app(scope, receive, send):\n    pass\n")
    r = CliRunner().invoke(main, ["extender", "serve", str(tmp_path / "plain_asgi.py") + ":app", "--port", "0",
                                  "--master", "http://127.0.0.1:1"])
    assert r.exit_code != 0
    assert "ExtenderApp" in r.output
