"""The msgspec fast paths of kubesched.extender.wire give exactly what the exact (Python json,
Go-worded) paths give: the same value or the same error, the same bytes out. Differential
tests over generated and hand-picked inputs, and the captured kube-scheduler bodies."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.extender import wire
from kubesched.extender.server import ExtenderApp, parse_extender_args

from .conftest import wire_bytes

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Strings with what makes encoders differ: HTML characters, U+2028/9, controls, quotes,
# backslashes, non-ASCII, astral characters, lone surrogates.
TRICKY = st.text(alphabet=st.sampled_from(list("ab-.09<>&\"\\\n\t\x00\x7f\u2028\u2029éü€😀") + ["\ud800"]),
                 max_size=8)
NAMES = st.one_of(st.from_regex(r"[a-z0-9]([-a-z0-9.]{0,20}[a-z0-9])?", fullmatch=True), TRICKY)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(1 << 70), max_value=1 << 70),
                    st.floats(allow_nan=False, allow_infinity=False), NAMES)
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(NAMES, inner, max_size=4)), max_leaves=20)


def _outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args)
    except wire.WireError as e:
        return "error", str(e)


def _same(a: Any, b: Any) -> bool:
    """Equal, with floats compared by their bits (-0.0 vs 0.0) and NaN never produced."""
    # default=str: an integer literal longer than int() reads is kept as its text (wire._LongNumber).
    return json.dumps(a, sort_keys=False, default=str) == json.dumps(b, sort_keys=False, default=str) \
        and type(a) is type(b)


def _mutations(body: bytes) -> list[bytes]:
    """The body and a few broken variants: cut short, trailing data, a byte flipped, invalid UTF-8."""
    out = [body, body[:-1], body + b" x", body + b"  ", b" \n" + body, body.replace(b'"', b"'", 1),
           body + b"\xff", body.replace(b"a", b"\xc3", 1)]
    if len(body) > 2:
        out.append(body[: len(body) // 2])
    return out


# ------------------------------------------------------------------------------ decoding
@SETTINGS
@given(JSON)
def test_decode_json_fast_equals_exact(value: Any) -> None:
    raw = json.dumps(value, ensure_ascii=False).encode("utf-8", errors="surrogatepass")
    escaped = json.dumps(value).encode()  # \uXXXX escapes, lone surrogates included
    for b in _mutations(raw) + _mutations(escaped):
        fast, exact = _outcome(wire.decode_json, b), _outcome(wire.decode_json_exact, b)
        assert fast[0] == exact[0], b
        assert _same(fast[1], exact[1]) if fast[0] == "ok" else fast[1] == exact[1], b


@pytest.mark.parametrize("body", [
    b"1" * 5000, b"1e-400", b"1.8e308", b"[1e400]", b'"\\ud800"', b'"\\ud83d\\ude00"', b'"\xff"', b"\xef\xbb\xbf{}",
    b"[" * 1500 + b"]" * 1500, b'{"a":1,"a":2}', b"-0", b"NaN", b"[Infinity]", b"-Infinity", b"", b"   ",
    b'{"Error":', b"12345678901234567890123", b'"\x7f"', b"\t[1]\r\n",
], ids=repr)
def test_decode_json_edge_cases(body: bytes) -> None:
    exact = _outcome(wire.decode_json_exact, body)
    fast = _outcome(wire.decode_json, body)
    assert fast[0] == exact[0]
    assert _same(fast[1], exact[1]) if fast[0] == "ok" else fast[1] == exact[1]


HOST_PRIORITY_ITEMS = st.one_of(
    st.fixed_dictionaries({"Host": NAMES, "Score": st.integers(min_value=-(1 << 65), max_value=1 << 65)}),
    st.dictionaries(st.sampled_from(["Host", "host", "Score", "score", "SCORE", "Other"]),
                    st.one_of(NAMES, st.integers(-20, 20), st.none(), st.floats(allow_nan=False,
                                                                                allow_infinity=False),
                              st.booleans()), max_size=4),
    st.none(), st.integers(), NAMES)


@SETTINGS
@given(st.one_of(st.lists(HOST_PRIORITY_ITEMS, max_size=6), JSON))
def test_decode_host_priority_list_fast_equals_exact(value: Any) -> None:
    body = json.dumps(value, ensure_ascii=False).encode("utf-8", errors="surrogatepass")
    for b in _mutations(body):
        fast = _outcome(wire.decode_host_priority_list, b)
        exact = _outcome(lambda x: [(s.host, s.score) for s in wire.parse_host_priority_list(
            wire.decode_json_exact(x))], b)
        assert fast == exact, b


FILTER_FIELDS = st.sampled_from(["Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error",
                                 "nodeNames", "failedNodes", "error", "Other"])
NODE_ITEMS = st.one_of(
    st.fixed_dictionaries({"metadata": st.fixed_dictionaries({"name": NAMES}, optional={
        "uid": NAMES, "labels": st.dictionaries(NAMES, NAMES, max_size=2), "Name": NAMES, "resourceVersion": NAMES,
        "name2": NAMES})}, optional={"spec": JSON, "status": JSON, "kind": NAMES, "Metadata": JSON, "extra": JSON}),
    st.just({"metadata": {"name": None}}), st.just({"metadata": None}), st.just({}), st.none(), st.integers())
NODE_LISTS = st.fixed_dictionaries({}, optional={"items": st.one_of(st.none(), st.lists(NODE_ITEMS, max_size=3)),
                                                 "metadata": JSON, "kind": NAMES, "Items": JSON})
FILTER_VALUES = st.one_of(st.none(), NAMES, st.lists(NAMES, max_size=4), st.dictionaries(NAMES, NAMES, max_size=3),
                          st.dictionaries(NAMES, st.integers(), max_size=2), NODE_LISTS, st.integers())


@SETTINGS
@given(st.one_of(st.dictionaries(FILTER_FIELDS, FILTER_VALUES, max_size=6), JSON))
def test_decode_filter_result_fast_equals_exact(value: Any) -> None:
    body = json.dumps(value, ensure_ascii=False).encode("utf-8", errors="surrogatepass")
    for b in _mutations(body):
        fast = _outcome(wire.decode_filter_result, b)
        exact = _outcome(lambda x: wire.parse_filter_result(wire.decode_json_exact(x)), b)
        assert fast == exact, b


# ------------------------------------------------------------------------------ encoding
MANIFESTS = st.recursive(st.one_of(SCALARS, st.datetimes(), st.binary(max_size=4)),
                         lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner),
                                                 st.dictionaries(st.one_of(NAMES, st.integers(), st.booleans()),
                                                                 inner, max_size=4)), max_leaves=25)


@SETTINGS
@given(MANIFESTS)
def test_go_json_fast_equals_exact(value: Any) -> None:
    try:
        exact = wire.go_json_exact(value)
    except (TypeError, ValueError) as e:
        with pytest.raises(type(e)):
            wire.go_json(value)
        return
    assert wire.go_json(value) == exact


def test_captured_manifests_encode_as_kube_scheduler_sent_them() -> None:
    for item in json.loads(wire_bytes("filter-cache-false.json"))["Nodes"]["items"]:
        assert wire.go_json(item) == wire.go_json_exact(item)
    assert wire.go_json(json.loads(wire_bytes("filter-cache-false.json"))) == wire_bytes("filter-cache-false.json")

@SETTINGS
@given(st.lists(NAMES, max_size=8))
def test_name_lists_encode_as_go(names: list[str]) -> None:
    assert wire.go_json_strings(names) == wire.go_json(names)


@SETTINGS
@given(st.dictionaries(NAMES, NAMES, max_size=6), NAMES)
def test_reason_maps_and_errors_encode_as_go(reasons: dict[str, str], error: str) -> None:
    assert wire.go_json_string_map(reasons) == wire.go_json(dict(sorted(reasons.items())))
    assert wire.go_json_string(error) == wire.go_json(error)


@SETTINGS
@given(st.lists(st.tuples(NAMES, st.integers(min_value=-(1 << 70), max_value=1 << 70)), max_size=8))
def test_host_priority_lists_encode_as_go(pairs: list[tuple[str, int]]) -> None:
    hosts, scores = [h for h, _ in pairs], [s for _, s in pairs]
    assert wire.host_priorities_json(hosts, scores) == wire.go_json([{"Host": h, "Score": s} for h, s in pairs])


def test_filter_result_bytes_are_unchanged() -> None:
    got = wire.filter_result_json(nodes=None, node_names=["n2", "n1"], failed={"z": "<no>", "a": "x"},
                                  failed_and_unresolvable={"q": "gone\u2028"}, error="e&")
    assert got == (b'{"Nodes":null,"NodeNames":["n2","n1"],"FailedNodes":{"a":"x","z":"\\u003cno\\u003e"},'
                   b'"FailedAndUnresolvableNodes":{"q":"gone\\u2028"},"Error":"e\\u0026"}')


# ----------------------------------------------------------------------- ExtenderArgs
def _args_outcome(fn: Any, body: bytes) -> tuple[str, Any]:
    from kubesched.extender.server import BadRequest

    try:
        a = fn(body)
    except BadRequest as e:
        return "error", str(e)
    return "ok", (a.pod.raw, None if a.nodes is None else [n.raw for n in a.nodes], a.node_names)


POD = {"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": [{"name": "c"}]}}
NODE = {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}}
ARGS_BODIES = [
    wire_bytes("filter-cache-false.json"), wire_bytes("filter-cache-true.json"),
    json.dumps({"Pod": POD, "Nodes": None, "NodeNames": ["a", "b"]}).encode(),
    json.dumps({"Pod": POD, "NodeNames": []}).encode(),
    json.dumps({"pod": POD, "nodeNames": ["a"]}).encode(),  # Go matches keys case-insensitively
    json.dumps({"Pod": POD, "NodeNames": ["a"], "Extra": 1}).encode(),
    json.dumps({"Pod": POD, "Nodes": {"items": [NODE]}, "NodeNames": ["x"]}).encode(),
    json.dumps({"Pod": POD, "Nodes": {"metadata": {}, "items": None}}).encode(),
    json.dumps({"Pod": POD, "Nodes": {"kind": "NodeList", "items": [NODE]}}).encode(),
    json.dumps({"Pod": POD, "Nodes": {"items": [NODE, 3]}}).encode(),
    json.dumps({"Pod": POD, "Nodes": {"items": [{"metadata": {}}]}}).encode(),
    json.dumps({"Pod": None, "NodeNames": []}).encode(), json.dumps({"Pod": "p", "NodeNames": []}).encode(),
    json.dumps({"Pod": {"metadata": {"name": "p"}}, "NodeNames": []}).encode(),
    json.dumps({"Pod": POD, "NodeNames": [1]}).encode(), json.dumps({"Pod": POD}).encode(),
    b'{"Pod":{"metadata":{"name":"first"}},"Pod":' + json.dumps(POD).encode() + b',"NodeNames":["a"]}',  # last wins
    b'{"Pod":' + json.dumps(POD).encode() + b',"NodeNames":["a"]} trailing', b"null", b"[]", b"", b"{",
]


@pytest.mark.parametrize("body", ARGS_BODIES, ids=range(len(ARGS_BODIES)))
def test_extender_args_fast_equals_exact(body: bytes) -> None:
    app = ExtenderApp()
    for _ in range(2):  # the second time from the app's parse caches
        assert _args_outcome(app._parse_args, body) == _args_outcome(parse_extender_args, body)


def test_parsed_pods_and_nodes_are_reused_for_identical_text() -> None:
    app = ExtenderApp()
    body = wire_bytes("filter-cache-false.json")
    a, b = app._parse_args(body), app._parse_args(body)
    assert a.pod is b.pod and a.nodes is not None and b.nodes is not None
    assert all(x is y for x, y in zip(a.nodes, b.nodes, strict=True))
    assert a.raw_nodes is not None and [json.loads(r) for r in a.raw_nodes] == json.loads(body)["Nodes"]["items"]
