"""The scheduler's use of extenders (findNodesThatPassExtenders, prioritizeNodes' extender
part, extendersBinding, callExtenders) over real HTTP, and the fault matrix: timeout, HTTP 500,
malformed JSON, connection refused and Error set, each for an ignorable and a non-ignorable
extender."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from typing import Any

import pytest
from builders import make_node, make_pod

from kubesched.config.types import Extender, ExtenderManagedResource
from kubesched.errors import ApiError
from kubesched.extender import (
    HTTPExtender,
    Victims,
    run_bind_extenders,
    run_filter_extenders,
    run_preemption_extenders,
    run_prioritize_extenders,
)
from kubesched.framework import Code, NodeInfo, Status

from .conftest import Answer, StubExtender, reply

StubFactory = Callable[[Callable[[str, bytes], Answer]], StubExtender]

NODES = [make_node().name(f"n{i}").capacity(cpu="4", memory="8Gi", pods=110).obj() for i in range(1, 7)]
POD = make_pod().name("web").uid("uid-web").container(requests={"cpu": "1", "example.com/gpu": 1}).obj()


def infos(*names: str) -> list[NodeInfo]:
    return [NodeInfo(n) for n in NODES if n.meta.name in names]


def ext(url: str, **kw: Any) -> HTTPExtender:
    cfg: dict[str, Any] = {"url_prefix": url, "filter_verb": "filter", "prioritize_verb": "prioritize",
                           "bind_verb": "bind", "preempt_verb": "preempt", "weight": 1, "http_timeout": 2.0}
    cfg.update(kw)
    return HTTPExtender(Extender(**cfg))


def sent_names(body: bytes) -> list[str]:
    args = json.loads(body)
    if args["NodeNames"] is not None:
        return list(args["NodeNames"])
    return [n["metadata"]["name"] for n in args["Nodes"]["items"] or []]


# ============================================================== findNodesThatPassExtenders
def test_extenders_filter_in_sequence_each_seeing_the_previous_ones_nodes(stub_factory: StubFactory) -> None:
    a = stub_factory(lambda p, b: reply({
        "Nodes": {"items": [{"metadata": {"name": n}} for n in ("n3", "n4")]},
        "FailedNodes": {"n1": "a: busy", "n2": "a: also listed as unresolvable"},
        "FailedAndUnresolvableNodes": {"n2": "a: gone"}}))
    b = stub_factory(lambda p, body: reply({"NodeNames": ["n3"], "FailedNodes": {"n4": "b: no licence"}}))
    statuses: dict[str, Status] = {}
    feasible = infos("n1", "n2", "n3", "n4")
    with ext(a.url) as ea, ext(b.url, node_cache_capable=True) as eb:
        kept = run_filter_extenders([ea, eb], POD, feasible, statuses)
    assert [ni.name for ni in kept] == ["n3"]
    assert kept[0] is feasible[2]
    assert sent_names(a.requests[0].body) == ["n1", "n2", "n3", "n4"]
    assert sent_names(b.requests[0].body) == ["n3", "n4"]
    assert statuses == {
        "n1": Status(Code.UNSCHEDULABLE, ("a: busy",)),
        "n2": Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("a: gone",)),
        "n4": Status(Code.UNSCHEDULABLE, ("b: no licence",)),
    }
    assert all(s.plugin == "" for s in statuses.values())


def test_extender_reasons_join_the_nodes_existing_statuses(stub_factory: StubFactory) -> None:
    stub = stub_factory(lambda p, b: reply({"NodeNames": ["n1"], "FailedNodes": {"n5": "ext: busy"},
                                            "FailedAndUnresolvableNodes": {"n6": "ext: gone"}}))
    statuses = {"n5": Status(Code.UNSCHEDULABLE, ("Insufficient cpu",), "NodeResourcesFit"),
                "n6": Status(Code.UNSCHEDULABLE, ("node(s) had untolerated taint",), "TaintToleration")}
    with ext(stub.url, node_cache_capable=True) as e:
        run_filter_extenders([e], POD, infos("n1"), statuses)
    assert statuses["n5"] == Status(Code.UNSCHEDULABLE, ("Insufficient cpu", "ext: busy"), "NodeResourcesFit")
    assert statuses["n6"] == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) had untolerated taint", "ext: gone"))


def test_extender_not_interested_in_the_pod_is_skipped(stub_factory: StubFactory) -> None:
    stub = stub_factory(lambda p, b: reply({"NodeNames": []}))
    res = (ExtenderManagedResource("example.com/fpga"),)
    nodes = infos("n1", "n2")
    with ext(stub.url, managed_resources=res) as e:
        assert run_filter_extenders([e], POD, nodes, {}) == nodes
    assert stub.requests == []


def test_no_feasible_node_calls_no_extender(stub_factory: StubFactory) -> None:
    stub = stub_factory(lambda p, b: reply({}))
    with ext(stub.url) as e:
        assert run_filter_extenders([e], POD, [], {}) == []
    assert stub.requests == []


def test_an_extender_that_keeps_nothing_stops_the_chain(stub_factory: StubFactory) -> None:
    a = stub_factory(lambda p, b: reply({"Nodes": None, "FailedNodes": {"n1": "no"}}))
    b = stub_factory(lambda p, b: reply({}))
    with ext(a.url) as ea, ext(b.url) as eb:
        assert run_filter_extenders([ea, eb], POD, infos("n1"), {}) == []
    assert b.requests == []


def test_plain_nodes_work_too(stub_factory: StubFactory) -> None:
    stub = stub_factory(lambda p, b: reply({"NodeNames": ["n2"]}))
    with ext(stub.url, node_cache_capable=True) as e:
        assert run_filter_extenders([e], POD, NODES[:3], {}) == [NODES[1]]


# ==================================================================== prioritizeNodes
def test_scores_add_score_times_weight_times_ten_per_extender(stub_factory: StubFactory) -> None:
    a = stub_factory(lambda p, b: reply([{"Host": "n1", "Score": 3}, {"Host": "n2", "Score": 10},
                                         {"Host": "n9", "Score": 10}]))
    b = stub_factory(lambda p, b: reply([{"Host": "n1", "Score": 1}]))
    with ext(a.url, weight=2) as ea, ext(b.url, weight=5) as eb:
        scores = run_prioritize_extenders([ea, eb], POD, infos("n1", "n2", "n3"))
    assert scores.by_node == {"n1": ((a.url, 60), (b.url, 50)), "n2": ((a.url, 200),)}
    assert scores.totals(["n1", "n2", "n3"]).tolist() == [110, 200, 0]
    assert scores.scores_of(b.url, ["n1", "n2", "n3"]).tolist() == [50, 0, 0]


@pytest.mark.parametrize(("answer", "by_node"), [
    pytest.param([("n1", 3), ("n2", 1), ("n3", 0)], {"n1": (60,), "n2": (20,), "n3": (0,)},
                 id="every candidate in order"),
    pytest.param([("n3", 0), ("n1", 3)], {"n3": (0,), "n1": (60,)}, id="some, in another order"),
    pytest.param([("n1", 3), ("n1", 1), ("n2", 1)], {"n1": (60, 20), "n2": (20,)}, id="a host twice counts twice"),
    pytest.param([("n1", 3), ("n9", 10), ("n2", 1)], {"n1": (60,), "n2": (20,)},
                 id="a host not a candidate is dropped"),
])
def test_one_prioritizer(answer: list[tuple[str, int]], by_node: dict[str, tuple[int, ...]],
                         stub_factory: StubFactory) -> None:
    stub = stub_factory(lambda p, b: reply([{"Host": h, "Score": s} for h, s in answer]))
    with ext(stub.url, weight=2) as e:
        scores = run_prioritize_extenders([e], POD, infos("n1", "n2", "n3"))
    want = {h: tuple((stub.url, v) for v in values) for h, values in by_node.items()}
    assert scores.by_node == want and dict(scores.by_node) == want
    assert repr(want) in repr(scores)
    totals = [sum(by_node.get(n, ())) for n in ("n1", "n2", "n3")]
    assert scores.totals(["n1", "n2", "n3"]).tolist() == totals
    assert scores.scores_of(stub.url, ["n1", "n2", "n3"]).tolist() == totals


def test_extenders_prioritize_concurrently(stub_factory: StubFactory) -> None:
    # Each extender answers only once both requests are in flight: sequential calls would
    # break the barrier and come back as HTTP 500, i.e. without scores.
    barrier = threading.Barrier(2, timeout=3)

    def respond(path: str, body: bytes) -> Answer:
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            return Answer(500, b"not concurrent")
        return reply([{"Host": "n1", "Score": 1}])

    a, b = stub_factory(respond), stub_factory(respond)
    with ext(a.url, http_timeout=5.0) as ea, ext(b.url, http_timeout=5.0) as eb:
        scores = run_prioritize_extenders([ea, eb], POD, infos("n1"))
    assert scores.total("n1") == 20


def test_a_failing_or_uninterested_prioritizer_adds_nothing(stub_factory: StubFactory) -> None:
    good = stub_factory(lambda p, b: reply([{"Host": "n1", "Score": 4}]))
    bad = stub_factory(lambda p, b: Answer(500, b"boom"))
    other = stub_factory(lambda p, b: reply([{"Host": "n1", "Score": 10}]))
    res = (ExtenderManagedResource("example.com/fpga"),)
    with ext(good.url) as eg, ext(bad.url) as eb, ext(other.url, managed_resources=res) as eo:
        scores = run_prioritize_extenders([eg, eb, eo], POD, infos("n1"))
    assert scores.by_node == {"n1": ((good.url, 40),)}
    assert other.requests == []


# ====================================================================== extendersBinding
def test_the_first_interested_binder_binds(stub_factory: StubFactory) -> None:
    first = stub_factory(lambda p, b: reply({"Error": ""}))
    second = stub_factory(lambda p, b: reply({"Error": ""}))
    with ext(first.url) as e1, ext(second.url) as e2, ext("http://127.0.0.1:9", bind_verb="") as e0:
        assert run_bind_extenders([e0, e1, e2], POD, "n1") == (True, None)
    assert len(first.requests) == 1 and second.requests == []


def test_no_binder_leaves_binding_to_the_plugins() -> None:
    with ext("http://127.0.0.1:9", bind_verb="") as e:
        assert run_bind_extenders([e], POD, "n1") == (False, None)


# ======================================================================= callExtenders
V1 = make_pod().name("v1").uid("uid-v1").node("n1").obj()
V2 = make_pod().name("v2").uid("uid-v2").node("n2").obj()


class Lister:
    def __init__(self) -> None:
        self.infos = {"n1": NodeInfo(NODES[0], V1), "n2": NodeInfo(NODES[1], V2)}

    def get(self, name: str) -> NodeInfo | None:
        return self.infos.get(name)


def test_preemption_extenders_narrow_the_candidates_in_turn(stub_factory: StubFactory) -> None:
    a = stub_factory(lambda p, b: reply({"NodeNameToMetaVictims": {
        "n1": {"Pods": [{"UID": "uid-v1"}]}, "n2": {"Pods": [{"UID": "uid-v2"}], "NumPDBViolations": 1}}}))
    b = stub_factory(lambda p, b: reply({"NodeNameToMetaVictims": {"n2": {"Pods": [{"UID": "uid-v2"}]}}}))
    victims = {"n1": Victims((V1,)), "n2": Victims((V2,))}
    with ext(a.url) as ea, ext(b.url, node_cache_capable=True) as eb:
        out = run_preemption_extenders([ea, eb], POD, victims, Lister())
    assert out == {"n2": Victims((V2,), 0)}
    assert b'"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"uid-v1"}],"NumPDBViolations":0},' \
           b'"n2":{"Pods":[{"UID":"uid-v2"}],"NumPDBViolations":1}}' in b.requests[0].body


@pytest.mark.parametrize("ignorable", [False, True], ids=["non-ignorable", "ignorable"])
def test_a_candidate_left_without_victims(ignorable: bool, stub_factory: StubFactory) -> None:
    stub = stub_factory(lambda p, b: reply({"NodeNameToMetaVictims": {"n1": {"Pods": []},
                                                                      "n2": {"Pods": [{"UID": "uid-v2"}]}}}))
    victims = {"n1": Victims((V1,)), "n2": Victims((V2,))}
    with ext(stub.url, ignorable=ignorable) as e:
        if ignorable:
            assert run_preemption_extenders([e], POD, victims, Lister()) == {"n2": Victims((V2,), 0)}
        else:
            with pytest.raises(ApiError, match='expected at least one victim pod on node "n1"'):
                run_preemption_extenders([e], POD, victims, Lister())


# ========================================================================== fault matrix
def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port: int = s.getsockname()[1]
    s.close()
    return port


FAULTS: dict[str, tuple[Callable[[str, bytes], Answer] | None, str]] = {
    "timeout": (lambda p, b: Answer(delay=3.0, body=b"{}"),
                'Post "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'),
    "HTTP 500": (lambda p, b: Answer(500, b"boom"), "failed {verb} with extender at URL {url}, code 500"),
    "malformed JSON": (lambda p, b: Answer(200, b"<html>oops</html>", content_type="text/html"),
                       "invalid character '<' looking for beginning of value"),
    "connection refused": (None, 'Post "{url}": dial tcp 127.0.0.1:{port}: connect: connection refused'),
    "Error set": (lambda p, b: reply({"Error": "extender says no"}), "extender says no"),
}


def _faulty(fault: str, stub_factory: StubFactory, ignorable: bool) -> tuple[HTTPExtender, str, int]:
    respond, _ = FAULTS[fault]
    if respond is None:
        port = _closed_port()
        base = f"http://127.0.0.1:{port}"
    else:
        stub = stub_factory(respond)
        base = stub.url
        port = int(base.rsplit(":", 1)[1])
    return ext(base, ignorable=ignorable, http_timeout=0.3), base, port


@pytest.mark.parametrize("ignorable", [False, True], ids=["non-ignorable", "ignorable"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_filter_fault(fault: str, ignorable: bool, stub_factory: StubFactory) -> None:
    e, base, port = _faulty(fault, stub_factory, ignorable)
    nodes = infos("n1", "n2")
    statuses: dict[str, Status] = {}
    with e:
        if ignorable:
            assert run_filter_extenders([e], POD, nodes, statuses) == nodes
            assert statuses == {}
        else:
            with pytest.raises(ApiError) as err:
                run_filter_extenders([e], POD, nodes, statuses)
            assert str(err.value) == FAULTS[fault][1].format(url=f"{base}/filter", verb="filter", port=port)


@pytest.mark.parametrize("ignorable", [False, True], ids=["non-ignorable", "ignorable"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_prioritize_fault_is_always_ignored(fault: str, ignorable: bool, stub_factory: StubFactory) -> None:
    e, base, port = _faulty(fault, stub_factory, ignorable)
    with e:
        with pytest.raises(ApiError):
            e.prioritize(POD, NODES[:1])
        assert run_prioritize_extenders([e], POD, infos("n1")).by_node == {}


@pytest.mark.parametrize("ignorable", [False, True], ids=["non-ignorable", "ignorable"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_bind_fault(fault: str, ignorable: bool, stub_factory: StubFactory) -> None:
    e, base, port = _faulty(fault, stub_factory, ignorable)
    with e:
        bound, err = run_bind_extenders([e], POD, "n1")
    if ignorable:
        assert (bound, err) == (False, None)
    else:
        assert bound and err is not None
        assert str(err) == FAULTS[fault][1].format(url=f"{base}/bind", verb="bind", port=port)


@pytest.mark.parametrize("ignorable", [False, True], ids=["non-ignorable", "ignorable"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_preempt_fault(fault: str, ignorable: bool, stub_factory: StubFactory) -> None:
    e, base, port = _faulty(fault, stub_factory, ignorable)
    victims = {"n1": Victims((V1,))}
    with e:
        if fault == "Error set":  # ExtenderPreemptionResult has no Error field: read as "no candidates"
            assert run_preemption_extenders([e], POD, victims, Lister()) == {}
        elif ignorable:
            assert run_preemption_extenders([e], POD, victims, Lister()) == victims
        else:
            with pytest.raises(ApiError):
                run_preemption_extenders([e], POD, victims, Lister())
