"""The extender SDK (ExtenderApp) served by uvicorn in a thread on 127.0.0.1, driven by the
real client (HTTPExtender) and by raw HTTP: every verb, nodeCacheCapable both ways, request
validation, health and OpenAPI, handler errors."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from builders import make_node, make_pod

from kubesched.config import parse_config
from kubesched.config.types import Extender
from kubesched.errors import ApiError
from kubesched.extender import Binding, HTTPExtender, Victims
from kubesched.extender.server import (
    ExtenderApp,
    ExtenderError,
    FilterResult,
    NodeVictims,
    ServerThread,
    Unresolvable,
)
from kubesched.framework import NodeInfo
from kubesched.objects import Node, Pod

from .conftest import WireObjects, wire_bytes, wire_json

NODES = [
    make_node().name("ok-1").label("score", "3").capacity(cpu="4", pods=110).obj(),
    make_node().name("bad-2").label("bad", "yes").capacity(cpu="4", pods=110).obj(),
    make_node().name("gone-3").label("gone", "yes").capacity(cpu="4", pods=110).obj(),
    make_node().name("ok-4").label("score", "7").capacity(cpu="8", pods=110).obj(),
]
POD = make_pod().name("web").uid("uid-web").req(cpu="100m").obj()
V1 = make_pod().name("v1").uid("uid-v1").node("ok-1").obj()
V2 = make_pod().name("v2").uid("uid-v2").node("ok-1").obj()
V4 = make_pod().name("v4").uid("uid-v4").node("ok-4").obj()


class Recorder:
    def __init__(self) -> None:
        self.bindings: list[Binding] = []
        self.preempt_inputs: list[dict[str, NodeVictims]] = []


def build_app(rec: Recorder, **kw: Any) -> ExtenderApp:
    app = ExtenderApp(prefix="/scheduler", **kw)

    @app.filter_node
    def check(pod: Pod, node: Node) -> str | Unresolvable | None:
        if node.labels.get("gone"):
            return Unresolvable("node is being decommissioned")
        if node.labels.get("bad"):
            return "node is flagged bad"
        return None

    @app.score_node
    def score(pod: Pod, node: Node) -> int:
        return int(node.labels.get("score", "0"))

    @app.bind
    def bind(binding: Binding) -> None:
        if binding.node == "bad-2":
            raise ExtenderError("refusing to bind to bad-2")
        rec.bindings.append(binding)

    @app.preempt
    def preempt(pod: Pod, victims: dict[str, NodeVictims]) -> dict[str, NodeVictims]:
        rec.preempt_inputs.append(victims)
        # Agree only on ok-1, and to evict one pod fewer there.
        return {n: NodeVictims(v.uids[1:], v.num_pdb_violations) for n, v in victims.items() if n == "ok-1"}

    return app


@pytest.fixture
def served() -> Iterator[tuple[ExtenderApp, Recorder, str]]:
    rec = Recorder()
    app = build_app(rec)
    with ServerThread(app) as srv:
        yield app, rec, srv.url


def client(url: str, cache: bool, **kw: Any) -> HTTPExtender:
    return HTTPExtender(Extender(url_prefix=url + "/scheduler", filter_verb="filter", prioritize_verb="prioritize",
                                 bind_verb="bind", preempt_verb="preempt", weight=2, node_cache_capable=cache,
                                 http_timeout=5.0, **kw))


class Lister:
    def __init__(self) -> None:
        self.infos = {"ok-1": NodeInfo(NODES[0], V1, V2), "ok-4": NodeInfo(NODES[3], V4)}

    def get(self, name: str) -> NodeInfo | None:
        return self.infos.get(name)


# ====================================================================== every verb
@pytest.mark.parametrize("cache", [False, True], ids=["full nodes", "nodeCacheCapable"])
def test_every_verb_through_the_real_client(cache: bool, served: tuple[ExtenderApp, Recorder, str]) -> None:
    app, rec, url = served
    app.node_cache.update(NODES)  # for the names-only requests
    with client(url, cache) as ext:
        kept, failed, unresolvable = ext.filter(POD, NODES)
        assert [n.meta.name for n in kept] == ["ok-1", "ok-4"]
        assert failed == {"bad-2": "node is flagged bad"}
        assert unresolvable == {"gone-3": "node is being decommissioned"}

        assert ext.prioritize(POD, kept) == ([("ok-1", 3), ("ok-4", 7)], 2)

        ext.bind(Binding.for_pod(POD, "ok-4"))
        assert rec.bindings == [Binding("default", "web", "uid-web", "ok-4")]
        with pytest.raises(ApiError, match="^refusing to bind to bad-2$"):
            ext.bind(Binding.for_pod(POD, "bad-2"))

        out = ext.process_preemption(POD, {"ok-1": Victims((V1, V2), 1), "ok-4": Victims((V4,), 0)}, Lister())
        assert out == {"ok-1": Victims((V2,), 1)}
    (seen,) = rec.preempt_inputs
    assert seen["ok-1"].uids == ("uid-v1", "uid-v2") and seen["ok-1"].num_pdb_violations == 1
    # Full victim pods arrive only when the extender is not nodeCacheCapable.
    assert [p.name for p in seen["ok-1"].pods] == ([] if cache else ["v1", "v2"])


def test_full_node_requests_feed_the_node_cache_used_by_names_only_requests(
        served: tuple[ExtenderApp, Recorder, str]) -> None:
    app, _, url = served
    with client(url, cache=True) as names_only:
        kept, failed, _ = names_only.filter(POD, NODES[:2])
        assert kept == [] and set(failed) == {"ok-1", "bad-2"}
        assert failed["ok-1"] == "node 'ok-1' is not in this extender's node cache"
        assert names_only.prioritize(POD, NODES[:1]) == ([], 2)  # unknown nodes stay unscored
    with client(url, cache=False) as full:
        full.filter(POD, NODES)
    assert app.node_cache.names() == sorted(n.meta.name for n in NODES)
    with client(url, cache=True) as names_only:
        kept, _, _ = names_only.filter(POD, NODES)
        assert [n.meta.name for n in kept] == ["ok-1", "ok-4"]


def test_a_node_lister_resolves_names() -> None:
    by_name = {n.meta.name: n for n in NODES}
    app = build_app(Recorder(), node_lister=by_name.get)
    with ServerThread(app) as srv, client(srv.url, cache=True) as ext:
        kept, _, _ = ext.filter(POD, NODES)
    assert [n.meta.name for n in kept] == ["ok-1", "ok-4"]
    assert len(app.node_cache) == 0


@pytest.mark.parametrize("cache", [False, True], ids=["full nodes", "nodeCacheCapable"])
def test_handlers_can_take_node_names(cache: bool) -> None:
    app = ExtenderApp()
    got: list[list[str]] = []

    @app.filter(resolve_nodes=False)
    def by_name(pod: Pod, names: list[str]) -> FilterResult:
        got.append(names)
        return FilterResult(failed={"ok-4": "odd one out"})

    @app.prioritize(resolve_nodes=False)
    def prio(pod: Pod, names: list[str]) -> dict[str, int]:
        return {n: len(n) for n in names}

    with ServerThread(app) as srv, HTTPExtender(Extender(url_prefix=srv.url, filter_verb="filter",
                                                         prioritize_verb="prioritize", weight=1,
                                                         node_cache_capable=cache)) as ext:
        kept, failed, _ = ext.filter(POD, NODES)
        scores, _ = ext.prioritize(POD, NODES[:2])
    assert got == [[n.meta.name for n in NODES]]
    assert [n.meta.name for n in kept] == ["ok-1", "bad-2", "gone-3"] and failed == {"ok-4": "odd one out"}
    assert scores == [("ok-1", 4), ("bad-2", 5)]


def test_async_bulk_handlers() -> None:
    app = ExtenderApp()

    @app.filter
    async def keep_some(pod: Pod, nodes: list[Node]) -> FilterResult:
        await asyncio.sleep(0)
        return FilterResult(feasible=[nodes[-1].meta.name], error="")

    @app.prioritize
    async def flat(pod: Pod, nodes: list[Node]) -> list[tuple[str, int]]:
        return [(n.meta.name, 10) for n in nodes]

    with ServerThread(app) as srv, HTTPExtender(Extender(url_prefix=srv.url, filter_verb="filter",
                                                         prioritize_verb="prioritize", weight=1)) as ext:
        kept, failed, unresolvable = ext.filter(POD, NODES)
        assert ([n.meta.name for n in kept], failed, unresolvable) == (["ok-4"], {}, {})
        assert ext.prioritize(POD, NODES[:1]) == ([("ok-1", 10)], 1)


# ====================================================== the captured requests, replayed
@pytest.fixture
def wire_app() -> Iterator[tuple[str, Recorder]]:
    rec = Recorder()
    app = ExtenderApp(prefix="/scheduler")

    @app.filter_node
    def gpu_nodes(pod: Pod, node: Node) -> str | None:
        return None if node.allocatable.get("example.com/gpu") else "no GPU"

    @app.score_node
    def gpus(pod: Pod, node: Node) -> int:
        return node.allocatable.get("example.com/gpu", 0)

    @app.bind
    def bind(b: Binding) -> None:
        rec.bindings.append(b)

    @app.preempt
    def preempt(pod: Pod, victims: dict[str, NodeVictims]) -> dict[str, NodeVictims]:
        rec.preempt_inputs.append(victims)
        return victims

    with ServerThread(app) as srv:
        yield srv.url + "/scheduler", rec


def _post(url: str, body: bytes) -> httpx.Response:
    return httpx.post(url, content=body, headers={"Content-Type": "application/json"}, timeout=5)


def test_kube_schedulers_filter_request_full_nodes(wire_app: tuple[str, Recorder]) -> None:
    url, _ = wire_app
    resp = _post(url + "/filter", wire_bytes("filter-cache-false.json"))
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/json"
    sent = wire_json("filter-cache-false.json")["Nodes"]["items"]
    compact = [json.dumps(n, separators=(",", ":")).encode() for n in sent]
    # The kept nodes are echoed as received, byte for byte, in a Go-shaped ExtenderFilterResult.
    assert resp.content == (b'{"Nodes":{"metadata":{},"items":[' + compact[0] + b"," + compact[3] + b"]},"
                            b'"NodeNames":null,"FailedNodes":{"node-bad-2":"no GPU","node-gone-3":"no GPU"},'
                            b'"FailedAndUnresolvableNodes":{},"Error":""}')


def test_kube_schedulers_requests_names_only(wire_app: tuple[str, Recorder], wire_objects: WireObjects) -> None:
    url, _ = wire_app
    _post(url + "/filter", wire_bytes("filter-cache-false.json"))  # feeds the node cache
    resp = _post(url + "/filter", wire_bytes("filter-cache-true.json"))
    assert resp.json() == {"Nodes": None, "NodeNames": ["node-1", "node-4"],
                           "FailedNodes": {"node-bad-2": "no GPU", "node-gone-3": "no GPU"},
                           "FailedAndUnresolvableNodes": {}, "Error": ""}
    resp = _post(url + "/prioritize", wire_bytes("prioritize-cache-true.json"))
    assert resp.content == (b'[{"Host":"node-1","Score":2},{"Host":"node-bad-2","Score":0},'
                            b'{"Host":"node-gone-3","Score":0},{"Host":"node-4","Score":4}]')


def test_kube_schedulers_bind_and_preempt_requests(wire_app: tuple[str, Recorder]) -> None:
    url, rec = wire_app
    assert _post(url + "/bind", wire_bytes("bind-cache-true.json")).content == b'{"Error":""}'
    assert rec.bindings == [Binding("default", "web-0", "11111111-2222-3333-4444-555555555555", "node-1")]
    for cache in ("false", "true"):
        resp = _post(url + "/preempt", wire_bytes(f"preempt-cache-{cache}.json"))
        assert resp.content == (
            b'{"NodeNameToMetaVictims":{"node-1":{"Pods":[{"UID":"bbbbbbbb-0000-0000-0000-00000000000a"},'
            b'{"UID":"bbbbbbbb-0000-0000-0000-00000000000b"}],"NumPDBViolations":1},'
            b'"node-4":{"Pods":[{"UID":"bbbbbbbb-0000-0000-0000-00000000000d"}],"NumPDBViolations":0},'
            b'"node-bad-2":{"Pods":[{"UID":"bbbbbbbb-0000-0000-0000-00000000000c"}],"NumPDBViolations":0}}}')
    full, meta = rec.preempt_inputs
    assert [p.name for p in full["node-1"].pods] == ["low-a", "low-b"] and meta["node-1"].pods == ()
    assert full["node-1"].uids == meta["node-1"].uids


# ========================================================================= validation
POD_JSON = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}
BAD_REQUESTS: list[tuple[str, str, bytes, str]] = [
    ("not JSON", "filter", b"{nope", "filter: invalid ExtenderArgs body: "
     "invalid character 'n' looking for beginning of object key string"),
    ("an empty body", "filter", b"", "filter: invalid ExtenderArgs body: EOF"),
    ("a JSON list", "prioritize", b"[]", "prioritize: invalid ExtenderArgs body: "
     "json: cannot unmarshal array into Go value of type v1.ExtenderArgs"),
    ("null", "filter", b"null", "filter: invalid ExtenderArgs body: null"),
    ("no Pod", "filter", b'{"NodeNames":[]}', "filter: Pod: Required value"),
    ("a Pod that is a string", "filter", b'{"Pod":"p","NodeNames":[]}',
     "filter: json: cannot unmarshal string into Go struct field ExtenderArgs.Pod of type v1.Pod"),
    ("a Pod without containers", "filter", b'{"Pod":{"metadata":{"name":"p"}},"NodeNames":[]}',
     "filter: Pod.spec.containers: Required value"),
    ("a bad quantity", "filter",
     json.dumps({"Pod": {"metadata": {"name": "p"}, "spec": {"containers": [
         {"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}}, "NodeNames": []}).encode(),
     "filter: Pod.spec.containers[0].resources.requests.cpu: "),
    ("Nodes that are a list", "filter", json.dumps({"Pod": POD_JSON, "Nodes": []}).encode(),
     "filter: json: cannot unmarshal array into Go struct field ExtenderArgs.Nodes of type v1.NodeList"),
    ("a node without a name", "filter",
     json.dumps({"Pod": POD_JSON, "Nodes": {"items": [{"metadata": {"name": "a"}}, {"metadata": {}}]}}).encode(),
     "filter: Nodes.items[1].metadata.name: Required value"),
    ("NodeNames that are not strings", "filter", json.dumps({"Pod": POD_JSON, "NodeNames": [1]}).encode(),
     "filter: json: cannot unmarshal number into Go struct field ExtenderArgs.NodeNames of type string"),
    ("neither Nodes nor NodeNames", "prioritize", json.dumps({"Pod": POD_JSON}).encode(),
     "prioritize: ExtenderArgs: one of Nodes or NodeNames is required"),
    ("a binding without a node", "bind", b'{"PodName":"p","PodNamespace":"default","PodUID":"u"}',
     "bind: Node: Required value"),
    ("a binding with a numeric name", "bind", b'{"PodName":5,"Node":"n"}',
     "bind: json: cannot unmarshal number into Go struct field ExtenderBindingArgs.PodName of type string"),
    ("preemption without victims", "preempt", json.dumps({"Pod": POD_JSON}).encode(),
     "preempt: ExtenderPreemptionArgs: one of NodeNameToVictims or NodeNameToMetaVictims is required"),
    ("a victim that is not a pod", "preempt",
     json.dumps({"Pod": POD_JSON, "NodeNameToVictims": {"n": {"Pods": [{"metadata": {}}]}}}).encode(),
     "preempt: NodeNameToVictims[n].Pods[0].metadata.name: Required value"),
]


@pytest.mark.parametrize(("case", "verb", "body", "message"), BAD_REQUESTS, ids=[c[0] for c in BAD_REQUESTS])
def test_bad_requests_get_400_with_a_clear_message(case: str, verb: str, body: bytes, message: str,
                                                   served: tuple[ExtenderApp, Recorder, str]) -> None:
    _, _, url = served
    resp = _post(f"{url}/scheduler/{verb}", body)
    assert resp.status_code == 400
    assert resp.json()["Error"].startswith(message)
    assert "Traceback" not in resp.text


def test_too_large_bodies_get_413() -> None:
    app = build_app(Recorder(), max_body_bytes=100)
    with ServerThread(app) as srv:
        resp = _post(srv.url + "/scheduler/filter", b" " * 101)
    assert resp.status_code == 413


def test_unregistered_verbs_and_paths(served: tuple[ExtenderApp, Recorder, str]) -> None:
    app = ExtenderApp()

    @app.filter_node
    def ok(pod: Pod, node: Node) -> None:
        return None

    with ServerThread(app) as srv:
        resp = _post(srv.url + "/prioritize", b"{}")
        assert resp.status_code == 404 and resp.json() == {"Error": "this extender has no prioritize handler"}
        assert httpx.get(srv.url + "/filter", timeout=5).status_code == 405
        assert _post(srv.url + "/nope", b"{}").status_code == 404


def test_healthz_and_openapi(served: tuple[ExtenderApp, Recorder, str]) -> None:
    _, _, url = served
    health = httpx.get(url + "/healthz", timeout=5)
    assert (health.status_code, health.text) == (200, "ok")
    doc = httpx.get(url + "/openapi.json", timeout=5).json()
    assert doc["openapi"].startswith("3.")
    assert set(doc["paths"]) == {"/healthz", "/scheduler/filter", "/scheduler/prioritize", "/scheduler/bind",
                                 "/scheduler/preempt"}
    post = doc["paths"]["/scheduler/filter"]["post"]
    assert post["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ExtenderArgs"}
    assert "ExtenderFilterResult" in doc["components"]["schemas"]


# ====================================================================== handler errors
def _app_with(**handlers: Any) -> ExtenderApp:
    app = ExtenderApp()
    for verb, fn in handlers.items():
        getattr(app, verb)(fn)
    return app


def _raise(exc: Exception) -> Any:
    def handler(*args: Any) -> Any:
        raise exc
    return handler


HANDLER_ERRORS: list[tuple[str, dict[str, Any], str, str]] = [
    ("ExtenderError from a filter answers with Error set", {"filter_node": _raise(ExtenderError("quota lookup failed"))},
     "filter", "^quota lookup failed$"),
    ("a crashing filter answers with Error set, no traceback", {"filter_node": _raise(KeyError("zone"))},
     "filter", "^KeyError: 'zone'$"),
    ("a filter returning nonsense", {"filter": lambda pod, nodes: 42},
     "filter", "code 500"),
    ("a filter keeping a node that was not a candidate", {"filter": lambda pod, nodes: FilterResult(feasible=["x"])},
     "filter", "code 500"),
    ("a per-node verdict of the wrong type", {"filter_node": lambda pod, node: 3}, "filter", "code 500"),
    ("a score above 10", {"score_node": lambda pod, node: 11}, "prioritize", "code 500"),
    ("a score that is not an int", {"prioritize": lambda pod, nodes: {"ok-1": 2.5}}, "prioritize", "code 500"),
    ("a crashing prioritizer", {"score_node": _raise(RuntimeError("boom"))}, "prioritize", "code 500"),
    ("a crashing binder answers with Error set", {"bind": _raise(RuntimeError("apiserver down"))},
     "bind", "^RuntimeError: apiserver down$"),
    ("a preempt handler returning nonsense", {"preempt": lambda pod, v: ["ok-1"]}, "preempt", "code 500"),
]


@pytest.mark.parametrize(("case", "handlers", "verb", "message"), HANDLER_ERRORS, ids=[c[0] for c in HANDLER_ERRORS])
def test_handler_errors(case: str, handlers: dict[str, Any], verb: str, message: str) -> None:
    app = _app_with(**handlers)
    cfg = Extender(url_prefix="", filter_verb="filter", prioritize_verb="prioritize", bind_verb="bind",
                   preempt_verb="preempt", weight=1)
    calls = {"filter": lambda e: e.filter(POD, NODES), "prioritize": lambda e: e.prioritize(POD, NODES),
             "bind": lambda e: e.bind(Binding.for_pod(POD, "ok-1")),
             "preempt": lambda e: e.process_preemption(POD, {"ok-1": Victims((V1,))}, Lister())}
    with ServerThread(app) as srv:
        import dataclasses

        with HTTPExtender(dataclasses.replace(cfg, url_prefix=srv.url)) as ext, pytest.raises(ApiError,
                                                                                             match=message):
            calls[verb](ext)


def test_a_verb_takes_one_handler() -> None:
    app = ExtenderApp()
    app.filter_node(lambda pod, node: None)
    with pytest.raises(ValueError, match="a filter handler is already registered"):
        app.filter(lambda pod, nodes: None)


def test_extender_config_is_a_loadable_configuration_entry(served: tuple[ExtenderApp, Recorder, str]) -> None:
    app, _, url = served
    entry = app.extender_config(url + "/scheduler", weight=4, node_cache_capable=True)
    cfg = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                        "extenders": [entry]})
    (ext_cfg,) = cfg.extenders
    assert (ext_cfg.filter_verb, ext_cfg.prioritize_verb, ext_cfg.bind_verb, ext_cfg.preempt_verb, ext_cfg.weight) == (
        "filter", "prioritize", "bind", "preempt", 4)
    app.node_cache.update(NODES)
    with HTTPExtender(ext_cfg) as ext:
        assert [n.meta.name for n in ext.filter(POD, NODES)[0]] == ["ok-1", "ok-4"]
