"""DefaultPreemption's callExtenders step (preemption.go: Evaluator.callExtenders): the
extenders come from ``handle.extenders`` (objects satisfying kubesched.framework.Extender), each
interested one supporting preemption narrows the node -> victims map in turn."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pytest
from builders import make_node, make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched._runtime.profile import build_framework
from kubesched.config import default_configuration
from kubesched.errors import ApiError
from kubesched.framework import Binding, Code, CycleState, ExtenderVictims, NodeInfoGetter, Status
from kubesched.objects import Node, Pod
from kubesched.plugins.defaultpreemption.plugin import Candidate, DefaultPreemption, Victims
from kubesched.plugins.registry import REGISTRY

NODES = [make_node().name(f"n{i}").capacity(cpu="4", pods=110).obj() for i in (1, 2, 3)]
V = {n: make_pod().name(f"v{n[-1]}").uid(f"uid-v{n[-1]}").node(n).req(cpu="4").obj() for n in ("n1", "n2", "n3")}
POD = make_pod().name("urgent").priority(100).req(cpu="2").obj()
CANDIDATES = [Candidate(n, Victims((V[n],))) for n in ("n1", "n2", "n3")]

Preempt = Callable[[Mapping[str, ExtenderVictims], NodeInfoGetter], Mapping[str, ExtenderVictims]]


class FakeExtender:
    def __init__(self, preempt: Preempt | None, *, ignorable: bool = False, interested: bool = True) -> None:
        self._preempt = preempt
        self._ignorable = ignorable
        self._interested = interested
        self.calls: list[list[str]] = []

    def name(self) -> str:
        return "fake"

    def is_filter(self) -> bool:
        return False

    def is_prioritizer(self) -> bool:
        return False

    def is_binder(self) -> bool:
        return False

    def supports_preemption(self) -> bool:
        return self._preempt is not None

    def is_ignorable(self) -> bool:
        return self._ignorable

    def is_interested(self, pod: Pod) -> bool:
        return self._interested

    def filter(self, pod: Pod, nodes: Sequence[Node]) -> tuple[list[Node], dict[str, str], dict[str, str]]:
        return list(nodes), {}, {}

    def prioritize(self, pod: Pod, nodes: Sequence[Node]) -> tuple[list[tuple[str, int]], int]:
        return [], 0

    def bind(self, binding: Binding) -> None:
        raise ApiError("not a binder")

    def process_preemption(self, pod: Pod, node_name_to_victims: Mapping[str, ExtenderVictims],
                           node_infos: NodeInfoGetter) -> Mapping[str, ExtenderVictims]:
        assert self._preempt is not None
        self.calls.append(sorted(node_name_to_victims))
        return self._preempt(node_name_to_victims, node_infos)


def keep(*names: str) -> Preempt:
    return lambda victims, infos: {n: v for n, v in victims.items() if n in names}


def fail(victims: Mapping[str, ExtenderVictims], infos: NodeInfoGetter) -> Mapping[str, ExtenderVictims]:
    raise ApiError("extender down")


def no_victims_on_n2(victims: Mapping[str, ExtenderVictims], infos: NodeInfoGetter) -> Mapping[str, ExtenderVictims]:
    return {**victims, "n2": Victims(())}


def plugin(*extenders: FakeExtender) -> DefaultPreemption:
    handle = FrameworkHandle.for_nodes(NODES, list(V.values()), extenders=extenders)
    return DefaultPreemption(None, handle)


def names(cands: Sequence[Candidate]) -> list[str]:
    return [c.name for c in cands]


def test_without_extenders_the_candidates_are_unchanged() -> None:
    cands, status = plugin().call_extenders(POD, CANDIDATES)
    assert (cands, status) == (CANDIDATES, None)


def test_extenders_narrow_the_candidates_in_turn_keeping_the_dry_run_order() -> None:
    first, second = FakeExtender(keep("n3", "n1")), FakeExtender(keep("n1", "n3"))
    cands, status = plugin(first, second).call_extenders(POD, CANDIDATES)
    assert status is None
    assert names(cands) == ["n1", "n3"]
    assert cands[0].victims == Victims((V["n1"],))
    assert (first.calls, second.calls) == ([["n1", "n2", "n3"]], [["n1", "n3"]])


def test_an_extender_that_keeps_no_node_stops_the_chain() -> None:
    last = FakeExtender(keep("n1"))
    cands, status = plugin(FakeExtender(keep()), last).call_extenders(POD, CANDIDATES)
    assert (cands, status, last.calls) == ([], None, [])


@pytest.mark.parametrize(("ext", "want"), [
    (FakeExtender(keep("n1"), interested=False), ["n1", "n2", "n3"]),
    (FakeExtender(None), ["n1", "n2", "n3"]),
    (FakeExtender(fail, ignorable=True), ["n1", "n2", "n3"]),
    (FakeExtender(no_victims_on_n2, ignorable=True), ["n1", "n3"]),
], ids=["an uninterested extender is skipped", "an extender without preemptVerb is skipped",
        "an ignorable extender's error skips it", "an ignorable extender's node without victims is dropped"])
def test_skipped_or_tolerated_extenders(ext: FakeExtender, want: list[str]) -> None:
    cands, status = plugin(ext).call_extenders(POD, CANDIDATES)
    assert status is None
    assert names(cands) == want


@pytest.mark.parametrize(("preempt", "message"), [
    (fail, "extender down"),
    (no_victims_on_n2, 'expected at least one victim pod on node "n2"'),
], ids=["a non-ignorable extender's error fails preemption",
        "a non-ignorable extender's node without victims fails preemption"])
def test_non_ignorable_failures_are_errors(preempt: Preempt, message: str) -> None:
    cands, status = plugin(FakeExtender(preempt)).call_extenders(POD, CANDIDATES)
    assert status is not None and status.code == Code.ERROR
    assert status.message == message


def test_a_preempt_error_surfaces_as_the_post_filter_error_without_evicting() -> None:
    deleted: list[str] = []
    handle = FrameworkHandle.for_nodes(NODES, list(V.values()), extenders=[FakeExtender(fail)],
                                       deleter=lambda p, reason: deleted.append(p.key), deterministic=True)
    statuses = {n: Status(Code.UNSCHEDULABLE, ("Insufficient cpu",), "NodeResourcesFit") for n in ("n1", "n2", "n3")}
    fwk = build_framework(default_configuration().profiles[0], REGISTRY, handle)
    state = CycleState()
    s = fwk.run_pre_filter_plugins(state, POD)[1]
    assert s is None or s.is_success()
    result, status = fwk.run_post_filter_plugins(state, POD, statuses)
    assert result is None
    assert status.code == Code.ERROR and status.message == "preemption: extender down"
    assert deleted == []


def test_nodes_an_extender_adds_come_after_the_candidates_by_name() -> None:
    def swap(victims: Mapping[str, ExtenderVictims], infos: NodeInfoGetter) -> Mapping[str, ExtenderVictims]:
        ni = infos.get("n3")
        assert ni is not None
        return {"n3": Victims(tuple(pi.pod for pi in ni.pods)), "n2": victims["n2"]}

    cands, status = plugin(FakeExtender(swap)).call_extenders(POD, CANDIDATES[:2])
    assert status is None
    assert names(cands) == ["n2", "n3"]
    assert cands[1].victims.pods == (V["n3"],)
