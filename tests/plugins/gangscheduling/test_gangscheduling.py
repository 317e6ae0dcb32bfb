"""GangScheduling's PreEnqueue, Permit, events and queueing hints (gangscheduling.go, v1.36),
over an in-memory cluster: PodGroups in the object lister, the pod group states in a real cache."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest
from builders import make_node, make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.config import default_configuration
from kubesched.features import FEATURES_1_36, features_for
from kubesched.framework import GVK, ActionType, Code, CycleState, QueueingHint
from kubesched.objects import Pod, PodGroup
from kubesched.objects.podgroups import parse_pod_group
from kubesched.plugins import gangscheduling
from kubesched.plugins.gangscheduling.plugin import (
    PERMIT_TIMEOUT,
    WAITING_FOR_MIN_COUNT_IN_QUEUE,
    WAITING_FOR_MIN_COUNT_SCHEDULED,
    GangScheduling,
    waiting_for_pod_group,
)
from kubesched.plugins.registry import registry_for

GANG = features_for("1.36", ["GenericWorkload=true,GangScheduling=true"])
Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def group(name: str = "g", min_count: int | None = 3, namespace: str = "default") -> PodGroup:
    policy: dict[str, Any] = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    return parse_pod_group({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                            "metadata": {"name": name, "namespace": namespace},
                            "spec": {"schedulingPolicy": policy}})


def member(name: str, pod_group: str | None = "g", namespace: str = "default", node: str = "") -> Pod:
    b = make_pod().name(name).namespace(namespace).uid(f"{namespace}-{name}").req(cpu="1")
    if pod_group is not None:
        b = b.scheduling_group(pod_group)
    if node:
        b = b.node(node)
    return b.obj(GANG)


@dataclasses.dataclass
class Cluster:
    handle: FrameworkHandle
    plugin: GangScheduling
    activated: list[Pod]


def cluster(groups: Sequence[PodGroup] = (group(),), *, unscheduled: Sequence[Pod] = (),
            assumed: Sequence[Pod] = (), bound: Sequence[Pod] = ()) -> Cluster:
    """The cache knows ``unscheduled`` (they reached the queue), ``assumed`` (past Reserve, on
    n1) and ``bound`` pods; the lister holds ``groups``."""
    handle = FrameworkHandle.for_nodes([make_node().name("n1").capacity(cpu="64", pods=110).obj()],
                                       objects=MemoryObjects(pod_groups=groups), features=GANG)
    for p in (*unscheduled, *assumed):
        handle.cache.add_pod_group_member(p)
    for p in assumed:
        handle.cache.assume_pod(dataclasses.replace(p, node_name="n1"))
    for p in bound:
        handle.cache.add_pod(p)
    activated: list[Pod] = []
    handle.activator = activated.extend
    return Cluster(handle, gangscheduling.new(None, handle), activated)


# ---------------------------------------------------------------- PreEnqueue
A, B, C = member("a"), member("b"), member("c")
PRE_ENQUEUE = [
    pytest.param(cluster(), member("solo", None), None, id="a pod outside any group is let in"),
    pytest.param(cluster(groups=()), A, (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, waiting_for_pod_group("g")),
                 id="a pod whose PodGroup does not exist waits for it"),
    pytest.param(cluster(groups=(group(min_count=None),), unscheduled=[A]), A, None,
                 id="a pod of a basic-policy group is let in"),
    pytest.param(cluster(unscheduled=[A, B]), A, (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, WAITING_FOR_MIN_COUNT_IN_QUEUE),
                 id="a gang with fewer known pods than minCount waits"),
    pytest.param(cluster(unscheduled=[A, B, C]), A, None, id="a gang with minCount known pods is let in"),
    pytest.param(cluster(unscheduled=[A], assumed=[B], bound=[member("c", node="n1")]), A, None,
                 id="assumed and bound members count as known"),
    pytest.param(cluster(groups=(group(), group(namespace="other")), unscheduled=[A, B, member("c", namespace="other")]),
                 A, (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, WAITING_FOR_MIN_COUNT_IN_QUEUE),
                 id="a pod of the same group name in another namespace does not count"),
    pytest.param(cluster(unscheduled=[]), A, (Code.ERROR, "pod group state not found for pod group default/g"),
                 id="a group the cache knows no pod of is an error"),
]


@pytest.mark.parametrize(("c", "pod", "want"), PRE_ENQUEUE)
def test_pre_enqueue(c: Cluster, pod: Pod, want: tuple[Code, str] | None) -> None:
    s = c.plugin.pre_enqueue(pod)
    assert (None if s is None else (s.code, s.message)) == want


# ---------------------------------------------------------------- Permit
def permit(c: Cluster, pod: Pod) -> tuple[Code, str, float]:
    """Permit of ``pod`` once the scheduler assumed it on n1."""
    assumed = dataclasses.replace(pod, node_name="n1")
    c.handle.cache.assume_pod(assumed)
    s, timeout = c.plugin.permit(CycleState(), assumed, "n1")
    return (Code.SUCCESS, "", timeout) if s is None else (s.code, s.message, timeout)


PERMIT = [
    pytest.param(cluster(), member("solo", None), (Code.SUCCESS, "", 0.0), id="a pod outside any group passes"),
    pytest.param(cluster(groups=(group(min_count=None),), unscheduled=[A]), A, (Code.SUCCESS, "", 0.0),
                 id="a pod of a basic-policy group passes"),
    pytest.param(cluster(unscheduled=[A, B, C]), A, (Code.WAIT, WAITING_FOR_MIN_COUNT_SCHEDULED, PERMIT_TIMEOUT),
                 id="the first member of a gang waits 5 minutes"),
    pytest.param(cluster(unscheduled=[A, C], assumed=[B]), A, (Code.WAIT, WAITING_FOR_MIN_COUNT_SCHEDULED,
                                                                PERMIT_TIMEOUT),
                 id="a member short of the quorum waits"),
    pytest.param(cluster(unscheduled=[C], assumed=[A, B]), C, (Code.SUCCESS, "", 0.0),
                 id="the member completing the quorum passes"),
    pytest.param(cluster(unscheduled=[C], assumed=[A], bound=[member("b", node="n1")]), C, (Code.SUCCESS, "", 0.0),
                 id="a bound member counts toward the quorum"),
    pytest.param(cluster(groups=(), unscheduled=[A]), A,
                 (Code.ERROR, 'failed to get podGroup default/g: podgroup.scheduling.k8s.io "g" not found', 0.0),
                 id="a PodGroup gone meanwhile is an error"),
]


@pytest.mark.parametrize(("c", "pod", "want"), PERMIT)
def test_permit(c: Cluster, pod: Pod, want: tuple[Code, str, float]) -> None:
    assert permit(c, pod) == want


def test_a_waiting_member_activates_the_unscheduled_members_of_its_group() -> None:
    other = member("x", "other")
    c = cluster(groups=(group(), group("other")), unscheduled=[A, B, C, other])
    permit(c, A)
    assert sorted(p.name for p in c.activated) == ["b", "c"]


def test_the_quorum_allows_every_waiting_member_and_no_other_pod() -> None:
    outsider = member("x", "other")
    c = cluster(groups=(group(), group("other")), unscheduled=[C], assumed=[A, B, outsider])
    waits = {p.uid: c.handle.waiting_pods.add(dataclasses.replace(p, node_name="n1"), "n1", 0.0,
                                              {gangscheduling.NAME: PERMIT_TIMEOUT})
             for p in (A, B, outsider)}
    assert permit(c, C)[0] == Code.SUCCESS
    assert [w.result.is_success() if w.result is not None else None for w in (waits[A.uid], waits[B.uid])] == [
        True, True]
    assert waits[outsider.uid].result is None


def test_a_member_forgotten_after_a_timeout_no_longer_counts() -> None:
    c = cluster(unscheduled=[C], assumed=[A, B])
    c.handle.cache.forget_pod(dataclasses.replace(B, node_name="n1"))
    assert permit(c, C)[0] == Code.WAIT
    assert [p.name for p in c.activated] == ["b"]


# ---------------------------------------------------------------- events and hints
def test_events_are_pod_add_and_pod_group_add_with_hints() -> None:
    pl = cluster().plugin
    got = [(e.event.resource, e.event.action_type, getattr(e.hint, "__name__", None)) for e in pl.events_to_register()]
    assert got == [(GVK.POD, ActionType.ADD, "is_schedulable_after_pod_added"),
                   (GVK.POD_GROUP, ActionType.ADD, "is_schedulable_after_pod_group_added")]


POD_ADDED = [
    pytest.param(A, B, Q, id="a pod of the same group queues"),
    pytest.param(A, member("x", "other"), SKIP, id="a pod of another group skips"),
    pytest.param(A, member("b", namespace="other"), SKIP, id="a pod of the same group name in another namespace skips"),
    pytest.param(A, member("x", None), SKIP, id="a pod outside any group skips"),
    pytest.param(member("solo", None), member("x", None), SKIP, id="nothing helps a pod outside any group"),
]


@pytest.mark.parametrize(("pod", "added", "want"), POD_ADDED)
def test_hint_after_pod_added(pod: Pod, added: Pod, want: QueueingHint) -> None:
    assert cluster().plugin.is_schedulable_after_pod_added(pod, None, added) == want


POD_GROUP_ADDED = [
    pytest.param(A, group(), Q, id="the pod's own PodGroup queues"),
    pytest.param(A, group("other"), SKIP, id="another PodGroup skips"),
    pytest.param(A, group(namespace="other"), SKIP, id="a PodGroup of the same name in another namespace skips"),
    pytest.param(member("solo", None), group(), SKIP, id="a PodGroup never helps a pod outside any group"),
]


@pytest.mark.parametrize(("pod", "added", "want"), POD_GROUP_ADDED)
def test_hint_after_pod_group_added(pod: Pod, added: PodGroup, want: QueueingHint) -> None:
    assert cluster().plugin.is_schedulable_after_pod_group_added(pod, None, added) == want


def test_a_hint_given_another_kind_of_object_fails() -> None:
    with pytest.raises(TypeError):
        cluster().plugin.is_schedulable_after_pod_group_added(A, None, B)


# ---------------------------------------------------------------- registry and profile
@pytest.mark.parametrize(("features", "registered"), [
    pytest.param(FEATURES_1_36, False, id="1.36 without the gate has no GangScheduling"),
    pytest.param(GANG, True, id="1.36 with the gate registers GangScheduling"),
])
def test_registered_only_with_the_gate(features: Any, registered: bool) -> None:
    assert (gangscheduling.NAME in registry_for(features)) is registered


def test_the_default_profile_runs_it_at_pre_enqueue_and_permit_with_the_gate() -> None:
    from kubesched._runtime.profile import build_framework

    cfg = default_configuration(features=GANG)
    handle = FrameworkHandle.for_nodes([], features=GANG)
    fwk = build_framework(cfg.profiles[0], registry_for(GANG), handle)
    assert [p.name for p in fwk.plugins_at("PreEnqueue")][-1] == gangscheduling.NAME
    assert [p.name for p in fwk.plugins_at("Permit")] == [gangscheduling.NAME]
