"""Pod group states in the cache (backend/cache/podgroupstate.go, cache.go's *PodGroupMember):
each pod of a group is unscheduled, assumed or assigned as it reaches the queue, is assumed,
forgotten, bound or deleted."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from builders import make_node, make_pod

from kubesched._cache import Cache
from kubesched.features import features_for
from kubesched.objects import Pod

GANG = features_for("1.36", ["GenericWorkload=true,GangScheduling=true"])


def member(name: str, pod_group: str | None = "g", node: str = "") -> Pod:
    b = make_pod().name(name).uid(name)
    if pod_group is not None:
        b = b.scheduling_group(pod_group)
    if node:
        b = b.node(node)
    return b.obj(GANG)


def on_n1(p: Pod) -> Pod:
    return dataclasses.replace(p, node_name="n1")


def fresh() -> Cache:
    c = Cache()
    c.add_nodes([make_node().name("n1").capacity(cpu="8", pods=110).obj()])
    return c


A, B = member("a"), member("b")

Step = Callable[[Cache], None]
CASES: list[tuple[str, list[Step], tuple[set[str], set[str], set[str]] | None]] = [
    ("an unscheduled pod that reached the queue is unscheduled",
     [lambda c: c.add_pod_group_member(A)], ({"a"}, set(), set())),
    ("an assumed member is assumed", [lambda c: c.add_pod_group_member(A), lambda c: c.assume_pod(on_n1(A))],
     (set(), {"a"}, set())),
    ("a forgotten member is unscheduled again",
     [lambda c: c.add_pod_group_member(A), lambda c: c.assume_pod(on_n1(A)), lambda c: c.forget_pod(on_n1(A))],
     ({"a"}, set(), set())),
    ("a bound member is assigned",
     [lambda c: c.add_pod_group_member(A), lambda c: c.assume_pod(on_n1(A)), lambda c: c.finish_binding(on_n1(A))],
     (set(), set(), {"a"})),
    ("a pod bound before the scheduler started is assigned", [lambda c: c.add_pod(member("a", node="n1"))],
     (set(), set(), {"a"})),
    ("a pod the group never saw is assigned when assumed (upstream seeds the new state with the assumed pod)",
     [lambda c: c.assume_pod(on_n1(A))], (set(), set(), {"a"})),
    ("the state goes with its last pod",
     [lambda c: c.add_pod_group_member(A), lambda c: c.remove_pod_group_member(A)], None),
    ("a deleted bound member leaves the group",
     [lambda c: c.add_pod_group_member(A), lambda c: c.add_pod_group_member(B), lambda c: c.assume_pod(on_n1(A)),
      lambda c: c.finish_binding(on_n1(A)), lambda c: c.remove_pod(on_n1(A))], ({"b"}, set(), set())),
    ("a pod outside any group creates no state", [lambda c: c.add_pod_group_member(member("x", None))], None),
]


@pytest.mark.parametrize(("steps", "want"), [pytest.param(s, w, id=i) for i, s, w in CASES])
def test_a_members_state_follows_the_scheduler(steps: list[Step],
                                               want: tuple[set[str], set[str], set[str]] | None) -> None:
    c = fresh()
    for step in steps:
        step(c)
    state = c.pod_groups.get("default", "g")
    if want is None:
        assert state is None and len(c.pod_groups) == 0
        return
    assert state is not None
    unscheduled, assumed, assigned = want
    assert ({p.uid for p in state.unscheduled_pods().values()}, state.assumed_pods(), state.assigned_pods()) == want
    assert state.all_pods_count() == len(unscheduled | assumed | assigned)
    assert state.scheduled_pods_count() == len(assumed | assigned)


def test_groups_are_per_namespace() -> None:
    c = fresh()
    c.add_pod_group_member(A)
    c.add_pod_group_member(make_pod().name("a2").uid("a2").namespace("other").scheduling_group("g").obj(GANG))
    default, other = c.pod_groups.get("default", "g"), c.pod_groups.get("other", "g")
    assert default is not None and other is not None
    assert (default.all_pods_count(), other.all_pods_count()) == (1, 1)


def test_unscheduled_pods_are_keyed_by_name_for_activation() -> None:
    c = fresh()
    c.add_pod_group_member(A)
    c.add_pod_group_member(B)
    state = c.pod_groups.get("default", "g")
    assert state is not None and state.unscheduled_pods() == {"a": A, "b": B}


def test_the_node_accounting_is_unchanged_by_groups() -> None:
    c = fresh()
    c.add_pod_group_member(A)
    c.assume_pod(on_n1(A))
    assert [pi.pod.name for pi in c.node_infos["n1"].pods] == ["a"] and c.assumed == {"a"}
    c.forget_pod(on_n1(A))
    assert c.node_infos["n1"].pods == [] and c.assumed == set()
