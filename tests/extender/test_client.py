"""HTTPExtender against a hand-written http.server extender: how each verb's reply is read
(as kube-scheduler v1.30 reads it), capabilities, managedResources, construction."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from builders import make_node, make_pod

from kubesched.config.types import Extender, ExtenderManagedResource, ExtenderTLSConfig
from kubesched.errors import ApiError, ConfigError
from kubesched.extender import (
    Binding,
    HTTPExtender,
    Victims,
    ignored_extended_resources,
    new_http_extenders,
)
from kubesched.framework import NodeInfo
from kubesched.objects import Node, Pod

from .conftest import Answer, StubExtender, reply

StubFactory = Callable[[Callable[[str, bytes], Answer]], StubExtender]

NODES = [make_node().name(n).capacity(cpu="4", memory="8Gi", pods=110).obj() for n in ("n1", "n2", "n3")]
POD = make_pod().name("web").uid("uid-web").req(cpu="100m").obj()


def _ext(url: str, **kw: Any) -> HTTPExtender:
    cfg: dict[str, Any] = {"url_prefix": url, "filter_verb": "filter", "prioritize_verb": "prioritize",
                           "bind_verb": "bind", "preempt_verb": "preempt", "weight": 2, "http_timeout": 2.0}
    cfg.update(kw)
    return HTTPExtender(Extender(**cfg))


def _names(nodes: list[Node]) -> list[str]:
    return [n.meta.name for n in nodes]


# ------------------------------------------------------------------------------ filter
FILTER_CASES: list[tuple[str, bool, Any, list[str], dict[str, str], dict[str, str]]] = [
    ("full nodes: the kept Nodes.items, failures as sent", False,
     {"Nodes": {"items": [{"metadata": {"name": "n2"}}]}, "FailedNodes": {"n1": "too hot"},
      "FailedAndUnresolvableNodes": {"n3": "gone"}},
     ["n2"], {"n1": "too hot"}, {"n3": "gone"}),
    ("full nodes: NodeNames in the reply are not read", False,
     {"NodeNames": ["n1"], "Nodes": {"items": [{"metadata": {"name": "n3"}}]}}, ["n3"], {}, {}),
    ("full nodes: no Nodes in the reply keeps nothing", False, {"NodeNames": ["n1"]}, [], {}, {}),
    ("node cache: NodeNames are read", True, {"NodeNames": ["n3", "n1"]}, ["n3", "n1"], {}, {}),
    ("node cache: null NodeNames fall back to Nodes", True,
     {"NodeNames": None, "Nodes": {"items": [{"metadata": {"name": "n2"}}]}}, ["n2"], {}, {}),
    ("node cache: an empty NodeNames list keeps nothing", True,
     {"NodeNames": [], "Nodes": {"items": [{"metadata": {"name": "n2"}}]}}, [], {}, {}),
    ("keys match case-insensitively", True,
     {"nodeNames": ["n1"], "failedNodes": {"n2": "x"}, "failedandunresolvablenodes": {"n3": "y"}},
     ["n1"], {"n2": "x"}, {"n3": "y"}),
    ("snake_case keys are silently ignored", True, {"node_names": ["n1"], "failed_nodes": {"n2": "x"}}, [], {}, {}),
    ("a null reply keeps nothing and fails nothing", False, None, [], {}, {}),
]


@pytest.mark.parametrize(("case", "cache", "answer", "kept", "failed", "unresolvable"), FILTER_CASES,
                         ids=[c[0] for c in FILTER_CASES])
def test_filter_reply(case: str, cache: bool, answer: Any, kept: list[str], failed: dict[str, str],
                      unresolvable: dict[str, str], stub_factory: StubFactory) -> None:
    stub = stub_factory(lambda p, b: reply(answer))
    with _ext(stub.url, node_cache_capable=cache) as ext:
        got, f, u = ext.filter(POD, NODES)
    assert _names(got) == kept
    assert (f, u) == (failed, unresolvable)
    for n in got:  # the caller's own objects come back
        assert any(n is orig for orig in NODES)


@pytest.mark.parametrize(
    ("cache", "answer", "message"),
    [
        (True, {"NodeNames": ["n1", "n9"]},
         'extender "{url}" claims a filtered node "n9" which is not found in the input node list'),
        (False, {"Nodes": {"items": [{"metadata": {"name": "n9"}}]}},
         'extender "{url}" claims a filtered node "n9" which is not found in the input node list'),
        (False, {"Error": "quota service down", "NodeNames": ["n1"]}, "quota service down"),
        (False, {"FailedNodes": {"n1": 3}},
         "json: cannot unmarshal number into Go struct field ExtenderFilterResult.FailedNodes of type string"),
        (False, ["n1"], "json: cannot unmarshal array into Go value of type v1.ExtenderFilterResult"),
    ],
    ids=["a node that was not sent (NodeNames)", "a node that was not sent (Nodes)", "the reply's Error is set",
         "a failure reason that is not a string", "a list instead of an object"],
)
def test_filter_reply_errors(cache: bool, answer: Any, message: str, stub_factory: StubFactory) -> None:
    stub = stub_factory(lambda p, b: reply(answer))
    with _ext(stub.url, node_cache_capable=cache) as ext, pytest.raises(ApiError) as e:
        ext.filter(POD, NODES)
    assert str(e.value) == message.format(url=stub.url)


def test_extender_without_filter_verb_keeps_every_node_without_a_call(stub_factory: StubFactory) -> None:
    stub = stub_factory(lambda p, b: reply({}))
    with _ext(stub.url, filter_verb="") as ext:
        assert ext.filter(POD, NODES) == (NODES, {}, {})
    assert stub.requests == []


def test_connections_are_reused(stub_factory: StubFactory) -> None:
    stub = stub_factory(lambda p, b: reply({"NodeNames": ["n1"]}))
    with _ext(stub.url, node_cache_capable=True) as ext:
        for _ in range(3):
            ext.filter(POD, NODES)
    assert len({r.client_port for r in stub.requests}) == 1


# -------------------------------------------------------------------------- prioritize
def test_prioritize_returns_hosts_scores_and_weight(stub_factory: StubFactory) -> None:
    stub = stub_factory(lambda p, b: reply([{"Host": "n1", "Score": 3}, {"host": "n2", "score": 10}]))
    with _ext(stub.url, weight=5) as ext:
        assert ext.prioritize(POD, NODES) == ([("n1", 3), ("n2", 10)], 5)
    assert stub.requests[0].path == "/prioritize"


def test_extender_without_prioritize_verb_scores_zero_with_weight_zero(stub_factory: StubFactory) -> None:
    stub = stub_factory(lambda p, b: reply([]))
    with _ext(stub.url, prioritize_verb="") as ext:
        assert ext.prioritize(POD, NODES) == ([("n1", 0), ("n2", 0), ("n3", 0)], 0)
    assert stub.requests == []


# -------------------------------------------------------------------------------- bind
@pytest.mark.parametrize(("answer", "error"), [({"Error": ""}, None), ({}, None), (None, None),
                                               ({"error": "node is cordoned"}, "node is cordoned")],
                         ids=["empty Error", "no Error field", "null reply", "Error set (any case)"])
def test_bind(answer: Any, error: str | None, stub_factory: StubFactory) -> None:
    stub = stub_factory(lambda p, b: reply(answer))
    with _ext(stub.url) as ext:
        if error is None:
            ext.bind(Binding.for_pod(POD, "n2"))
        else:
            with pytest.raises(ApiError, match=error):
                ext.bind(Binding.for_pod(POD, "n2"))
    assert stub.requests[0].body == b'{"PodName":"web","PodNamespace":"default","PodUID":"uid-web","Node":"n2"}'


def test_bind_without_bind_verb_is_an_error() -> None:
    with _ext("http://127.0.0.1:9", bind_verb="") as ext, pytest.raises(ApiError,
                                                                         match="unexpected empty bindVerb in extender"):
        ext.bind(Binding.for_pod(POD, "n1"))


# ----------------------------------------------------------------------------- preempt
V1 = make_pod().name("v1").uid("uid-v1").node("n1").obj()
V2 = make_pod().name("v2").uid("uid-v2").node("n1").obj()
V3 = make_pod().name("v3").uid("uid-v3").node("n2").obj()


class Lister:
    def __init__(self) -> None:
        self.infos = {"n1": NodeInfo(NODES[0], V1, V2), "n2": NodeInfo(NODES[1], V3)}

    def get(self, name: str) -> NodeInfo | None:
        return self.infos.get(name)


def test_process_preemption_resolves_uids_to_the_pods_on_each_node(stub_factory: StubFactory) -> None:
    stub = stub_factory(lambda p, b: reply({"NodeNameToMetaVictims": {
        "n1": {"Pods": [{"UID": "uid-v2"}], "NumPDBViolations": 1}}}))
    with _ext(stub.url, node_cache_capable=True) as ext:
        out = ext.process_preemption(POD, {"n1": Victims((V1, V2), 2), "n2": Victims((V3,), 0)}, Lister())
    assert out == {"n1": Victims((V2,), 1)}
    assert b'"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"uid-v1"},{"UID":"uid-v2"}],"NumPDBViolations":2},' \
           b'"n2":{"Pods":[{"UID":"uid-v3"}],"NumPDBViolations":0}}' in stub.requests[0].body


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "uid-v3"}]}}},
         "extender: {url} claims to preempt pod (UID: &{{uid-v3}}) on node: n1, but the pod is not found on that node"),
        ({"NodeNameToMetaVictims": {"n7": {"Pods": []}}}, 'nodeinfo not found for node name "n7"'),
    ],
    ids=["a victim that is not on the node", "a node the scheduler does not know"],
)
def test_process_preemption_errors(answer: Any, message: str, stub_factory: StubFactory) -> None:
    stub = stub_factory(lambda p, b: reply(answer))
    with _ext(stub.url) as ext, pytest.raises(ApiError) as e:
        ext.process_preemption(POD, {"n1": Victims((V1,), 0)}, Lister())
    assert str(e.value) == message.format(url=stub.url)


def test_process_preemption_reads_only_meta_victims(stub_factory: StubFactory) -> None:
    stub = stub_factory(lambda p, b: reply({"NodeNameToVictims": {"n1": {"Pods": []}}}))
    with _ext(stub.url) as ext:
        assert ext.process_preemption(POD, {"n1": Victims((V1,), 0)}, Lister()) == {}


def test_process_preemption_without_preempt_verb_is_an_error() -> None:
    with _ext("http://127.0.0.1:9/x", preempt_verb="") as ext, pytest.raises(
            ApiError, match="preempt verb is not defined for extender http://127.0.0.1:9/x but run into"):
        ext.process_preemption(POD, {}, Lister())


# ------------------------------------------------------------- identity, interest, config
def test_capabilities_follow_the_configured_verbs() -> None:
    with _ext("http://127.0.0.1:9/p/", bind_verb="", preempt_verb="", ignorable=True) as ext:
        assert ext.name() == "http://127.0.0.1:9/p/"
        assert (ext.is_filter(), ext.is_prioritizer(), ext.is_binder(), ext.supports_preemption()) == (
            True, True, False, False)
        assert ext.is_ignorable()


GPU = "example.com/gpu"
INTEREST_CASES: list[tuple[str, tuple[str, ...], Pod, bool]] = [
    ("no managed resources: interested in every pod", (), POD, True),
    ("a container requests a managed resource", (GPU,), make_pod().container(requests={GPU: 1}).obj(), True),
    ("a container only limits a managed resource", (GPU,), make_pod().container(limits={GPU: 1}).obj(), True),
    ("an init container requests a managed resource", (GPU,), make_pod().init_container(requests={GPU: 1}).obj(),
     True),
    ("the pod requests other resources only", (GPU,), make_pod().container(requests={"cpu": "1"}).obj(), False),
    ("one of several managed resources", ("example.com/fpga", GPU), make_pod().container(requests={GPU: 2}).obj(),
     True),
]


@pytest.mark.parametrize(("case", "managed", "pod", "interested"), INTEREST_CASES, ids=[c[0] for c in INTEREST_CASES])
def test_is_interested(case: str, managed: tuple[str, ...], pod: Pod, interested: bool) -> None:
    res = tuple(ExtenderManagedResource(m) for m in managed)
    with _ext("http://127.0.0.1:9", managed_resources=res) as ext:
        assert ext.is_interested(pod) is interested


def test_build_puts_ignorable_extenders_last_and_lists_ignored_resources() -> None:
    cfgs = [
        Extender(url_prefix="http://a", ignorable=True,
                 managed_resources=(ExtenderManagedResource("example.com/a", ignored_by_scheduler=True),)),
        Extender(url_prefix="http://b", managed_resources=(ExtenderManagedResource("example.com/b"),)),
        Extender(url_prefix="http://c",
                 managed_resources=(ExtenderManagedResource("example.com/c", ignored_by_scheduler=True),)),
    ]
    exts = new_http_extenders(cfgs)
    try:
        assert [e.name() for e in exts] == ["http://b", "http://c", "http://a"]
    finally:
        for e in exts:
            e.close()
    assert ignored_extended_resources(cfgs) == ("example.com/a", "example.com/c")


@pytest.mark.parametrize(
    ("tls", "message"),
    [
        (ExtenderTLSConfig(insecure=True, ca_data=b"x"),
         "specifying a root certificates file with the insecure flag is not allowed"),
        (ExtenderTLSConfig(ca_file="/nonexistent/ca.pem"), "extender caFile '/nonexistent/ca.pem'"),
        (ExtenderTLSConfig(ca_data=b"not a certificate"), "unable to load root certificates"),
        (ExtenderTLSConfig(cert_data=b"x"), "a client certificate and its key must be given together"),
    ],
    ids=["insecure with a CA", "missing CA file", "CA data that is not PEM", "certificate without key"],
)
def test_bad_tls_config_fails_at_construction(tls: ExtenderTLSConfig, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        HTTPExtender(Extender(url_prefix="https://127.0.0.1:9", filter_verb="filter", tls_config=tls))
