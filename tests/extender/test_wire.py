"""Golden tests: the bytes HTTPExtender POSTs equal, byte for byte, the request bodies the real
kube-scheduler v1.30.12 extender client sent (../shared/extender-wire), for every verb and both
nodeCacheCapable settings; plus the Go encoding/decoding rules behind them."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable
from typing import Any

import pytest
from builders import make_pod

from kubesched.config.types import Extender
from kubesched.extender import Binding, HTTPExtender, Victims, wire
from kubesched.framework import NodeInfo
from kubesched.objects.parse import parse_pod

from .conftest import WIRE, Answer, StubExtender, WireObjects, reply, wire_bytes


class _Lister:
    """A NodeInfoLister over the fixture's nodes, each holding its victims."""

    def __init__(self, objs: WireObjects) -> None:
        self.infos = {n.meta.name: NodeInfo(n, *objs.victims.get(n.meta.name, ([], 0))[0]) for n in objs.nodes}

    def get(self, name: str) -> NodeInfo | None:
        return self.infos.get(name)


def _respond(path: str, body: bytes) -> Answer:
    if path.endswith("/filter"):
        return reply({"NodeNames": [], "Nodes": {"items": []}})
    if path.endswith("/prioritize"):
        return reply([])
    if path.endswith("/preempt"):
        return reply({"NodeNameToMetaVictims": {}})
    return reply({"Error": ""})


def _config(url: str, cache: bool) -> Extender:
    # The fixtures' extender: urlPrefix .../scheduler, all four verbs, weight 3, httpTimeout 2s.
    return Extender(url_prefix=url + "/scheduler", filter_verb="filter", prioritize_verb="prioritize",
                    preempt_verb="preempt", bind_verb="bind", weight=3, node_cache_capable=cache, http_timeout=2.0)


CALLS: dict[str, Callable[[HTTPExtender, WireObjects], object]] = {
    "filter": lambda e, o: e.filter(o.pod, o.nodes),
    "prioritize": lambda e, o: e.prioritize(o.pod, o.nodes),
    "bind": lambda e, o: e.bind(Binding.for_pod(o.pod, "node-1")),
    "preempt": lambda e, o: e.process_preemption(
        o.pod, {n: Victims(tuple(p), k) for n, (p, k) in o.victims.items()}, _Lister(o)),
}


@pytest.mark.parametrize("cache", [False, True], ids=["full nodes", "nodeCacheCapable"])
@pytest.mark.parametrize("verb", list(CALLS))
def test_request_bytes_equal_kube_scheduler_capture(verb: str, cache: bool, wire_objects: WireObjects,
                                                    stub_factory: Callable[..., StubExtender]) -> None:
    stub = stub_factory(_respond)
    with HTTPExtender(_config(stub.url, cache)) as ext:
        CALLS[verb](ext, wire_objects)
    (req,) = stub.requests
    expected = wire_bytes(f"{verb}-cache-{str(cache).lower()}.json")
    assert req.body == expected
    assert req.path == f"/scheduler/{verb}"
    assert req.headers["content-type"] == "application/json"
    assert req.headers["content-length"] == str(len(expected))


def test_fixture_checksums_match_the_readme() -> None:
    readme = (WIRE / "README.md").read_text()
    for f in sorted(WIRE.glob("*.json")):
        assert f"`{f.name}`: sha256 {hashlib.sha256(f.read_bytes()).hexdigest()}" in readme


def test_trailing_slash_of_url_prefix_is_trimmed(wire_objects: WireObjects,
                                                 stub_factory: Callable[..., StubExtender]) -> None:
    stub = stub_factory(_respond)
    with HTTPExtender(Extender(url_prefix=stub.url + "/scheduler//", filter_verb="filter")) as ext:
        ext.filter(wire_objects.pod, wire_objects.nodes)
    assert stub.requests[0].path == "/scheduler/filter"


def test_no_candidate_nodes_is_a_null_item_list(wire_objects: WireObjects) -> None:
    body = wire.extender_args(wire_objects.pod, [], False)
    assert body.endswith(b',"Nodes":{"metadata":{},"items":null},"NodeNames":null}')
    assert wire.extender_args(wire_objects.pod, [], True).endswith(b',"Nodes":null,"NodeNames":[]}')


def test_manifests_drop_api_version_and_kind() -> None:
    pod = make_pod().name("p").obj()
    assert pod.raw["kind"] == "Pod"
    sent = wire.decode_json(wire.object_json(pod))
    assert "kind" not in sent and "apiVersion" not in sent
    assert sent["metadata"]["name"] == "p"


def test_fields_the_scheduler_changed_are_brought_up_to_date() -> None:
    import dataclasses

    pod = make_pod().name("p").obj()
    bound = dataclasses.replace(pod, node_name="n1", priority=7, nominated_node_name="n2")
    sent = wire.decode_json(wire.object_json(bound))
    assert sent["spec"]["nodeName"] == "n1" and sent["spec"]["priority"] == 7
    assert sent["status"]["nominatedNodeName"] == "n2"
    assert "nodeName" not in pod.raw["spec"]  # the manifest itself is left alone


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"a": "<b>&"}, b'{"a":"\\u003cb\\u003e\\u0026"}'),
        ("caf\u00e9 \u2028\u2029", '"caf\u00e9 \\u2028\\u2029"'.encode()),
        ("\x01\b\f\n\r\t", b'"\\u0001\\b\\f\\n\\r\\t"'),
        ([1.0, 2.5, 1e-7, 0.00001, 1e21, -0.0], b"[1,2.5,1e-7,0.00001,1e+21,-0]"),
        (dt.datetime(2025, 1, 1, 1, 0, tzinfo=dt.timezone(dt.timedelta(hours=1))), b'"2025-01-01T00:00:00Z"'),
        ({1: True, None: 0}, b'{"1":true,"null":0}'),
    ],
    ids=["html characters are escaped", "non-ASCII stays UTF-8 but line separators are escaped",
         "control characters use Go's escapes", "floats print as Go prints them",
         "YAML timestamps print as metav1.Time", "non-string keys become strings"],
)
def test_go_json_encoding(value: object, expected: bytes) -> None:
    assert wire.go_json(value) == expected


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "EOF"),
        (b" \n", "EOF"),
        (b'{"Error":', "unexpected EOF"),
        (b"<html>", "invalid character '<' looking for beginning of value"),
        (b"{Error:1}", "invalid character 'E' looking for beginning of object key string"),
        (b'{"a" 1}', "invalid character '1' after object key"),
        (b'{"a":1 "b":2}', "invalid character '\"' after object key:value pair"),
        (b"[1 2]", "invalid character '2' after array element"),
        (b"NaN", "invalid character 'N' looking for beginning of value"),
        (b'"\\x"', "invalid character 'x' in string escape code"),
        (b"12x", "invalid character 'x' after top-level value"),
    ],
    ids=["empty body", "blank body", "truncated object", "an HTML error page", "unquoted key", "missing colon",
         "missing comma in object", "missing comma in array", "NaN", "bad escape", "garbage after a number"],
)
def test_decode_errors_read_like_go(body: bytes, message: str) -> None:
    with pytest.raises(wire.WireError) as e:
        wire.decode_json(body)
    assert str(e.value) == message


def test_only_the_first_json_value_is_read() -> None:
    assert wire.decode_json(b'{"Error":""} trailing <junk>') == {"Error": ""}


def test_field_names_match_case_insensitively_last_one_wins() -> None:
    assert wire.get_field({"nodenames": ["a"]}, "NodeNames") == ["a"]
    assert wire.get_field({"NodeNames": ["a"], "nodeNAMES": ["b"]}, "NodeNames") == ["b"]
    assert wire.get_field({"node_names": ["a"]}, "NodeNames") is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([{"Host": "n", "Score": "5"}],
         "json: cannot unmarshal string into Go struct field HostPriority.Score of type int64"),
        ([{"Host": "n", "Score": 1.5}],
         "json: cannot unmarshal number 1.5 into Go struct field HostPriority.Score of type int64"),
        ({"Host": "n"}, "json: cannot unmarshal object into Go value of type v1.HostPriorityList"),
        ([{"Host": 3, "Score": 1}], "json: cannot unmarshal number into Go struct field HostPriority.Host of type string"),
    ],
    ids=["score as a string", "fractional score", "an object instead of a list", "numeric host"],
)
def test_type_errors_read_like_go(value: object, message: str) -> None:
    with pytest.raises(wire.WireError) as e:
        wire.parse_host_priority_list(value)
    assert str(e.value) == message


LONG = "9" * 5000  # more digits than Python's int() reads from text (4300 by default)


@pytest.mark.parametrize(
    ("body", "decode", "outcome"),
    [
        pytest.param(f'[{{"Host":"n1","Score":{LONG}}}]', wire.decode_host_priority_list,
                     f"json: cannot unmarshal number {LONG} into Go struct field HostPriority.Score of type int64",
                     id="a score of 5000 digits is Go's type error quoting the literal"),
        pytest.param(f'{{"Error":-{LONG}}}', wire.decode_filter_result,
                     "json: cannot unmarshal number into Go struct field ExtenderFilterResult.Error of type string",
                     id="a 5000-digit number for a string field is Go's type error"),
        pytest.param(f'{{"NodeNames":["a"],"Unknown":{LONG}}}', wire.decode_filter_result, ["a"],
                     id="a 5000-digit number in a field Go ignores is ignored"),
    ],
)
def test_numbers_longer_than_pythons_int_limit_decode_as_go_does(body: str, decode: Any, outcome: object) -> None:
    if isinstance(outcome, str):
        with pytest.raises(wire.WireError) as e:
            decode(body.encode())
        assert str(e.value) == outcome
    else:
        assert decode(body.encode()).node_names == outcome


def test_filter_result_reply_is_what_a_go_extender_writes() -> None:
    pod_json = wire.object_json(parse_pod({"metadata": {"name": "x"}, "spec": {"containers": [{"name": "c"}]}}))
    body = wire.filter_result_json(nodes=None, node_names=["b", "a"], failed={"z": "no", "c": "full"},
                                   failed_and_unresolvable={}, error="")
    assert body == (b'{"Nodes":null,"NodeNames":["b","a"],"FailedNodes":{"c":"full","z":"no"},'
                    b'"FailedAndUnresolvableNodes":{},"Error":""}')
    assert pod_json.startswith(b'{"metadata":{"name":"x"}')
