"""The live client: kubeconfig and in-cluster configuration, credentials (tokens, token
files, exec plugins, client certificates over TLS), rate limiting, the declared-calls check,
the rest client's retries, the informer (relist diff, re-watching) and the event broadcaster
(series, retries)."""

from __future__ import annotations

import base64
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from kubesched.cluster.live import (
    ApiCall,
    ApiClient,
    Backoff,
    Change,
    ClusterConfig,
    EventBroadcaster,
    Informer,
    LiveCluster,
    TokenBucket,
    TransportError,
    in_cluster_config,
    load_cluster_config,
    load_kubeconfig,
)
from kubesched.cluster.resources import RESOURCES
from kubesched.config.types import ClientConnection
from kubesched.errors import ApiError, ConfigError, KubeschedError
from kubesched.objects.parse import parse_pod
from kubesched.testing.apiserver import LocalApiServer

from .apihelpers import make_pki, node, pod, wait_until


def _kubeconfig(path: Path, *, cluster: dict[str, Any], user: dict[str, Any], context: str = "ctx",
                namespace: str | None = None, extra_contexts: list[dict[str, Any]] | None = None) -> Path:
    ctx: dict[str, Any] = {"cluster": "c", "user": "u"}
    if namespace:
        ctx["namespace"] = namespace
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": context,
           "clusters": [{"name": "c", "cluster": cluster}], "users": [{"name": "u", "user": user}],
           "contexts": [{"name": context, "context": ctx}, *(extra_contexts or [])]}
    path.write_text(yaml.safe_dump(doc))
    return path


# ------------------------------------------------------------------------------------ configuration
def test_kubeconfig_with_a_token_and_relative_paths(tmp_path: Path) -> None:
    (tmp_path / "certs").mkdir()
    cfg_file = _kubeconfig(tmp_path / "config", cluster={"server": "https://k8s.example:6443/",
                                                         "certificate-authority": "certs/ca.crt",
                                                         "tls-server-name": "kubernetes"},
                           user={"tokenFile": "certs/token"}, namespace="sched")
    cfg = load_kubeconfig(str(cfg_file))
    assert cfg.server == "https://k8s.example:6443"
    assert cfg.ca_file == str(tmp_path / "certs" / "ca.crt") and cfg.token_file == str(tmp_path / "certs" / "token")
    assert cfg.tls_server_name == "kubernetes" and cfg.namespace == "sched"


def test_kubeconfig_contexts_data_fields_and_merging(tmp_path: Path) -> None:
    cert = base64.b64encode(b"CERT").decode()
    first = _kubeconfig(tmp_path / "a", cluster={"server": "https://a", "insecure-skip-tls-verify": True},
                        user={"token": "tok", "client-certificate-data": cert, "client-key-data": cert},
                        extra_contexts=[{"name": "other", "context": {"cluster": "c", "user": "missing"}}])
    second = tmp_path / "b"
    second.write_text(yaml.safe_dump({"current-context": "ignored", "clusters": [
        {"name": "c", "cluster": {"server": "https://b"}}, {"name": "d", "cluster": {"server": "https://d"}}],
        "contexts": [{"name": "dctx", "context": {"cluster": "d"}}]}))
    merged = f"{first}:{second}"
    cfg = load_kubeconfig(merged)
    assert cfg.server == "https://a" and cfg.insecure and cfg.token == "tok"
    assert cfg.cert_data == b"CERT" and cfg.key_data == b"CERT"
    assert load_kubeconfig(merged, context="dctx").server == "https://d"
    with pytest.raises(ConfigError, match="user 'missing'"):
        load_kubeconfig(merged, context="other")
    with pytest.raises(ConfigError, match="context 'nope' not found"):
        load_kubeconfig(merged, context="nope")


def test_in_cluster_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "token").write_text("sa-token\n")
    (tmp_path / "ca.crt").write_text("CA")
    (tmp_path / "namespace").write_text("kube-system")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    cfg = in_cluster_config(str(tmp_path))
    assert cfg.server == "https://[fd00::1]:443" and cfg.token_file == str(tmp_path / "token")
    assert cfg.ca_file == str(tmp_path / "ca.crt") and cfg.namespace == "kube-system"
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    with pytest.raises(ConfigError, match="KUBERNETES_SERVICE_HOST"):
        in_cluster_config(str(tmp_path))


def test_configuration_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit = _kubeconfig(tmp_path / "explicit", cluster={"server": "https://explicit"}, user={})
    env = _kubeconfig(tmp_path / "env", cluster={"server": "https://env"}, user={})
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    _kubeconfig(home / ".kube" / "config", cluster={"server": "https://home"}, user={})
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(env))
    assert load_cluster_config(str(explicit)).server == "https://explicit"
    assert load_cluster_config().server == "https://env"
    assert load_cluster_config(master="https://override").server == "https://override"
    with ApiClient.for_client_connection(ClientConnection(kubeconfig=str(explicit), qps=7, burst=9)) as c:
        assert c.config.server == "https://explicit" and (c.limiter.qps, c.limiter.burst) == (7.0, 9)
    monkeypatch.delenv("KUBECONFIG")
    assert load_cluster_config().server == "https://home"
    monkeypatch.setenv("HOME", str(tmp_path / "nowhere"))
    with pytest.raises(ConfigError, match="no cluster configuration"):
        load_cluster_config()


# ------------------------------------------------------------------------------------ credentials
def _capture(client: ApiClient) -> list[httpx.Request]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"kind": "PodList", "metadata": {"resourceVersion": "7"}, "items": []})

    client._http = httpx.Client(base_url=client.config.server, transport=httpx.MockTransport(handler))  # noqa: SLF001
    return seen


def test_token_file_is_reread_when_it_rotates(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("one")
    client = ApiClient(ClusterConfig(server="http://api", token_file=str(token)), qps=0)
    seen = _capture(client)
    client.list("pods")
    token.write_text("two")
    import os

    os.utime(token, (1, 1))  # a new mtime, as a rotated projected token has
    client.list("pods")
    assert [r.headers["Authorization"] for r in seen] == ["Bearer one", "Bearer two"]
    assert seen[0].url.path == "/api/v1/pods"


def test_exec_plugin_token(tmp_path: Path) -> None:
    script = tmp_path / "cred.py"
    script.write_text("import json, os\n"
                      "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
                      "print(json.dumps({'apiVersion': info['apiVersion'], 'kind': 'ExecCredential', "
                      "'status': {'token': 'exec-' + os.environ['SUFFIX']}}))\n")
    cfg_file = _kubeconfig(tmp_path / "config", cluster={"server": "http://api"}, user={"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable, "args": [str(script)],
        "env": [{"name": "SUFFIX", "value": "abc"}]}})
    client = ApiClient(load_kubeconfig(str(cfg_file)), qps=0)
    seen = _capture(client)
    client.list("nodes")
    client.list("nodes")
    assert [r.headers["Authorization"] for r in seen] == ["Bearer exec-abc"] * 2


def test_tls_with_client_certificates_from_kubeconfig_data(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    with LocalApiServer(certfile=pki["server"], keyfile=pki["server_key"], client_ca=pki["ca"]) as api:
        api.create(node("n1"))

        def b64(name: str) -> str:
            return base64.b64encode(pki[f"{name}_pem"]).decode()

        cfg_file = _kubeconfig(tmp_path / "config", cluster={"server": api.url, "certificate-authority-data": b64("ca")},
                               user={"client-certificate-data": b64("client"), "client-key-data": b64("client_key")})
        with ApiClient(load_kubeconfig(str(cfg_file)), qps=0) as client:
            items, rv = client.list("nodes")
            assert [i["metadata"]["name"] for i in items] == ["n1"] and items[0]["kind"] == "Node" and rv
        no_cert = ClusterConfig(server=api.url, ca_file=pki["ca"])
        with ApiClient(no_cert, qps=0) as client, pytest.raises(ApiError):
            client.list("nodes")
        untrusted = ClusterConfig(server=api.url)
        with ApiClient(untrusted, qps=0) as client, pytest.raises(ApiError, match="CERTIFICATE_VERIFY_FAILED"):
            client.list("nodes")


# ------------------------------------------------------------------------------------ client behaviour
def test_token_bucket_allows_a_burst_then_paces() -> None:
    now = [0.0]
    slept: list[float] = []
    bucket = TokenBucket(10.0, 3, clock=lambda: now[0], sleep=slept.append)
    waits = [bucket.acquire() for _ in range(5)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3] == pytest.approx(0.1) and waits[4] == pytest.approx(0.2)
    now[0] = 10.0
    assert bucket.acquire() == 0.0
    assert TokenBucket(0, 1).acquire() == 0.0  # qps <= 0: unlimited


def test_undeclared_calls_are_refused() -> None:
    client = ApiClient(ClusterConfig(server="http://api"), qps=0)
    _capture(client)
    with pytest.raises(KubeschedError, match="undeclared API call"):
        client.request("get", "pods", namespace="default", name="p")
    with pytest.raises(KubeschedError, match="undeclared API call"):
        client.request("update", "nodes", name="n1", body={})


def test_api_errors_carry_the_status() -> None:
    with LocalApiServer() as api, ApiClient(ClusterConfig(server=api.url), qps=0) as client:
        created = api.create(pod("p", node_name="n1"))
        with pytest.raises(ApiError) as e:
            client.request("create", "pods", namespace="default", name="p", subresource="binding",
                           body={"target": {"kind": "Node", "name": "n2"}})
        assert e.value.status == 409 and "already assigned" in str(e.value)
        cluster = LiveCluster(client)
        victim = parse_pod({**created, "metadata": {**created["metadata"], "uid": "not-the-uid"}})
        with pytest.raises(ApiError) as e:
            cluster.delete_pod(victim)
        assert e.value.status == 409 and "Precondition failed: UID in precondition: not-the-uid" in str(e.value)


# ------------------------------------------------------------------------------------ informer
def test_a_relist_delivers_what_the_watch_missed() -> None:
    seen: list[tuple[str, str]] = []
    lock = threading.Lock()
    with LocalApiServer(bookmark_interval=0.1) as api, ApiClient(ClusterConfig(server=api.url), qps=0) as client:
        api.create(node("a"))
        api.create(node("b"))
        inf = Informer(client, RESOURCES["nodes"], lock=lock, backoff=Backoff(0.02, 0.1),
                       on_change=lambda action, old, new: seen.append((action, (new or old).meta.name)))
        inf.start()
        try:
            assert inf.synced.wait(5)
            api.create(node("c"))
            wait_until(lambda: ("add", "c") in seen, what="the watched add")
            api.restart(keep_state=False)  # everything is gone; the old revision is too old
            api.create(node("b"))
            wait_until(lambda: inf.relists >= 1 and sorted(inf.store) == [("", "b")], what="the relist")
            # b was recreated (a new object: an update for the store), a and c were deleted.
            assert seen[:3] == [("add", "a"), ("add", "b"), ("add", "c")]
            assert sorted(seen[3:]) == [("delete", "a"), ("delete", "c"), ("update", "b")]
            assert inf.resource_version == str(api.store.rv) or int(inf.resource_version) <= api.store.rv
        finally:
            inf.stop()


@pytest.mark.parametrize("status", [500, 504], ids=["a watch answered 500 relists",
                                                    "a watch answered 504 (resourceVersion too large) relists"])
def test_a_watch_refused_by_the_server_relists(status: int) -> None:
    """client-go's reflector: a watch request failing with an API status (other than 429) ends
    ListAndWatch, which relists after backoff; only a transport failure (connection refused,
    a stream cut) resumes the watch from the last resourceVersion."""
    lock = threading.Lock()
    with LocalApiServer(bookmark_interval=0.1) as api, ApiClient(ClusterConfig(server=api.url), qps=0) as client:
        api.create(node("a"))
        inf = Informer(client, RESOURCES["nodes"], lock=lock, backoff=Backoff(0.02, 0.1),
                       on_change=lambda action, old, new: None)
        inf.start()
        try:
            assert inf.synced.wait(5)
            lists = len(api.calls("list", "nodes"))
            api.fail_next(1, status, verbs=["watch"])
            api.drop_watches(abrupt=False)
            wait_until(lambda: len(api.calls("list", "nodes")) > lists, timeout=5.0, what="a relist")
            assert inf.relists == 1
            api.create(node("b"))
            wait_until(lambda: sorted(inf.store) == [("", "a"), ("", "b")], what="watching again")
        finally:
            inf.stop()


def test_a_watch_that_ends_is_watched_again_at_once_without_relisting() -> None:
    """client-go's StreamWatcher ends quietly on EOF, a reset or a cut mid-event, and the
    reflector watches again at once from the last resourceVersion: no backoff (the default
    800 ms here), no relist, no error."""
    seen: list[str] = []
    lock = threading.Lock()
    with LocalApiServer(bookmark_interval=0.1) as api, ApiClient(ClusterConfig(server=api.url), qps=0) as client:
        api.create(node("a"))
        inf = Informer(client, RESOURCES["nodes"], lock=lock, on_change=lambda action, old, new: seen.append(new.meta.name))
        inf.start()
        try:
            assert inf.synced.wait(5)
            for cut in ({"abrupt": True, "mid_event": True}, {"abrupt": True}, {"abrupt": False}):
                wait_until(lambda: inf.rewatches == 0 or api.open_watches >= 1, what="watching")
                time.sleep(0.15)  # a bookmark at least: not a "very short watch"
                before = inf.rewatches
                assert api.drop_watches(**cut) == 1
                wait_until(lambda: len(inf.watch_gaps) > before, timeout=2.0, what="watching again")  # noqa: B023
                # At once: no backoff counted (errors stay 0, below) and well under the 800 ms
                # a backoff would wait.
                assert inf.watch_gaps[-1] < 0.5, cut
            api.create(node("b"))
            wait_until(lambda: "b" in seen, what="the add after the cuts")
            assert inf.relists == 0 and inf.errors == 0
        finally:
            inf.stop()


def test_a_very_short_watch_relists_and_a_refused_one_resumes_after_backoff() -> None:
    """watchHandler: a watch that ended within a second without an event is an error (backoff,
    relist); isWatchErrorRetriable: a connection refused resumes the watch after backoff."""
    lock = threading.Lock()
    with LocalApiServer(bookmark_interval=30.0) as api, ApiClient(ClusterConfig(server=api.url), qps=0) as client:
        api.create(node("a"))
        inf = Informer(client, RESOURCES["nodes"], lock=lock, backoff=Backoff(0.05, 0.1),
                       on_change=lambda action, old, new: None)
        inf.start()
        try:
            assert inf.synced.wait(5)
            wait_until(lambda: api.open_watches >= 1, what="watching")
            api.drop_watches(abrupt=False)
            wait_until(lambda: inf.relists == 1, timeout=3.0, what="the relist after a very short watch")
            wait_until(lambda: api.open_watches >= 1, what="watching again")
            lists = len(api.calls("list", "nodes"))
            time.sleep(1.1)  # long enough: ending it is no error
            api.restart(downtime=0.3)
            wait_until(lambda: api.open_watches >= 1, timeout=5.0, what="watching after the restart")
            assert len(api.calls("list", "nodes")) == lists and inf.errors >= 2
        finally:
            inf.stop()


def test_the_client_retries_retry_after_answers_and_broken_gets_not_broken_writes() -> None:
    """client-go's rest client: a 429 / 5xx with Retry-After is retried after those seconds (at
    most 10 times); without the header it is an error; a GET whose connection broke is retried
    after 1 s, a write is not (it may have been applied)."""
    with LocalApiServer() as api, ApiClient(ClusterConfig(server=api.url), qps=0, timeout=5.0) as client:
        api.create(pod("p"))
        binding = {"target": {"kind": "Node", "name": "n1"}}
        api.fail_next(2, 429, verbs=["create"], retry_after=0)
        api.fail_next(1, 503, verbs=["create"], retry_after=0)
        client.request("create", "pods", namespace="default", name="p", subresource="binding", body=binding)
        assert [c.code for c in api.calls("create", "pods", "binding")] == [429, 429, 503, 201]
        api.fail_next(1, 500, verbs=["list"])
        with pytest.raises(ApiError) as e:
            client.list("nodes")
        assert e.value.status == 500
        api.fail_next(11, 429, verbs=["list"], retry_after=0)
        with pytest.raises(ApiError) as e:
            client.list("nodes")
        assert e.value.status == 429 and len(api.calls("list", "nodes", code=429)) == 11
        api.create(pod("q"))
        api.drop_reply_next(1, verbs=["create"])
        with pytest.raises(TransportError) as t:
            client.request("create", "pods", namespace="default", name="q", subresource="binding", body=binding)
        assert t.value.kind == "eof" and len(api.calls("create", "pods", "binding")) == 5
        assert api.get("pods", "q", "default")["spec"]["nodeName"] == "n1"  # applied, the reply lost
        api.drop_reply_next(1, verbs=["list"])
        items, _ = client.list("nodes")
        assert items == []
        assert [c.reply_dropped for c in api.calls("list", "nodes", code=200)][-2:] == [True, False]


def test_the_pod_split_follows_binding_and_deletion() -> None:
    changes: list[Change] = []
    with LocalApiServer(bookmark_interval=0.1) as api, ApiClient(ClusterConfig(server=api.url), qps=0) as client:
        cluster = LiveCluster(client, scheduler_names=["default-scheduler"])
        api.create(pod("ours"))
        api.create(pod("theirs", scheduler="other"))
        cluster.start(lambda c: changes.append(c) if c.resource.startswith("pods") else None, threading.Lock())
        try:
            assert cluster.wait_for_sync(5)
            api.bind("default", "ours", "n1")
            api.delete("pods", "ours", "default", {"gracePeriodSeconds": 0})
            wait_until(lambda: len(changes) >= 4, what="four changes")
            got = [(c.resource, c.action, (c.new or c.old).name, c.new is not None) for c in changes]
            assert got == [("pods/pending", "add", "ours", True), ("pods/assigned", "add", "ours", True),
                           ("pods/pending", "delete", "ours", True), ("pods/assigned", "delete", "ours", False)]
        finally:
            cluster.stop()


def test_event_broadcaster_aggregates_repeats_into_a_series() -> None:
    """tools/events: an event isomorphic to one written (same regarding object, reason...,
    whatever its note) becomes a series: the first repeat patches series.count 2 onto the first
    event, later ones only count (written when the series ends)."""
    with LocalApiServer() as api, ApiClient(ClusterConfig(server=api.url), qps=0) as client:
        rec = EventBroadcaster(client)
        p = parse_pod(api.create(pod("p")))
        sent = []
        for i in range(4):
            sent.append(rec.event(p, None, "Warning", "FailedScheduling", "Scheduling", f"try {i}"))
            assert rec.flush(5.0)
        rec.stop()
        assert sent == [True] * 4
        evs = api.objects("events")
        assert len(evs) == 1, evs
        assert evs[0]["note"] == "try 0" and evs[0]["series"]["count"] == 2
        assert evs[0]["regarding"] == {"kind": "Pod", "apiVersion": "v1", "namespace": "default", "name": "p",
                                       "uid": p.uid, "resourceVersion": p.meta.resource_version}
        assert json.dumps(evs[0]["eventTime"]).count(".") == 1  # MicroTime
        assert len(api.calls("patch", "events")) == 1 and len(api.calls("create", "events")) == 1


def test_event_broadcaster_retries_writes_the_server_did_not_answer_but_not_refusals() -> None:
    """recordEvent: a transport failure is retried (every sleep_duration, 12 tries at most), a
    status answer is final; a 429 / 5xx with Retry-After is retried by the client itself."""
    with LocalApiServer() as api, ApiClient(ClusterConfig(server=api.url), qps=0, timeout=2.0) as client:
        rec = EventBroadcaster(client, sleep_duration=0.2)
        a, b, c = (parse_pod(api.create(pod(name))) for name in ("a", "b", "c"))
        api.fail_next(1, 500, resources=["events"])
        rec.event(a, None, "Normal", "Scheduled", "Binding", "refused")
        assert rec.flush(5.0)
        api.fail_next(2, 429, resources=["events"], retry_after=0)
        rec.event(b, None, "Normal", "Scheduled", "Binding", "throttled")
        assert rec.flush(5.0)
        down = threading.Thread(target=api.restart, kwargs={"downtime": 0.5})
        down.start()
        time.sleep(0.2)
        rec.event(c, None, "Normal", "Scheduled", "Binding", "while down")
        down.join()
        wait_until(lambda: any(e["note"] == "while down" for e in api.objects("events")), what="the retried event")
        rec.stop()
        assert sorted(e["note"] for e in api.objects("events")) == ["throttled", "while down"]
        assert rec.rejected == 1 and rec.retried >= 1 and rec.gave_up == 0
        assert client.retries[ApiCall("create", "events.k8s.io", "events")] == 2




def test_events_arriving_while_every_writer_is_busy_are_queued_not_dropped() -> None:
    """The recorder never blocks and drops only when 1000 (here 2) events wait for the cache
    step: while the only writer waits on a slow API server, the dispatcher takes arriving
    events through the cache to the writers' queue, as upstream's watcher starts a goroutine
    per event."""
    with LocalApiServer() as api, ApiClient(ClusterConfig(server=api.url), qps=0) as client:
        pods = [parse_pod(api.create(pod(f"p{i}"))) for i in range(6)]
        rec = EventBroadcaster(client, workers=1, max_queued=2)
        api.delay_next(1, 1.0, resources=["events"])
        accepted = []
        for p in pods:
            accepted.append(rec.event(p, None, "Normal", "Scheduled", "Binding", f"bound {p.name}"))
            wait_until(lambda: not rec._incoming, what="the event taken off the incoming queue")  # noqa: SLF001
        assert rec.flush(10.0)
        rec.stop()
        assert accepted == [True] * 6 and rec.dropped == 0
        assert sorted(e["note"] for e in api.objects("events")) == [f"bound p{i}" for i in range(6)]
