"""InterPodAffinity's 1.36 queueing hints (upstream plugin_test.go Test_isSchedulableAfterPodChange
and Test_isSchedulableAfterNodeChange, plus rows for the branches those tables leave out) and its
registrations under both releases."""

from __future__ import annotations

from typing import Any

import pytest
from builders import PodBuilder, make_node, make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features
from kubesched.framework import GVK, ActionType, QueueingHint
from kubesched.objects import Node, Pod
from kubesched.plugins.interpodaffinity import InterPodAffinity, new

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def plugin(features: Features = FEATURES_1_36) -> InterPodAffinity:
    return new(None, FrameworkHandle.for_nodes([], [], MemoryObjects(), features=features))


def term(key: str, op: str, values: list[str] | None, topology: str) -> dict[str, Any]:
    expr: dict[str, Any] = {"key": key, "operator": op}
    if values is not None:
        expr["values"] = values
    return {"labelSelector": {"matchExpressions": [expr]}, "topologyKey": topology}


def with_terms(b: PodBuilder, kind: str, *terms: dict[str, Any]) -> PodBuilder:
    return b.affinity({kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}})


def affinity_in(topology: str) -> Pod:
    """st.MakePod().Name("p").PodAffinityIn("service", topology, [securityscan, value2])."""
    return with_terms(make_pod().name("p"), "podAffinity",
                      term("service", "In", ["securityscan", "value2"], topology)).obj()


def anti_affinity_in() -> Pod:
    return with_terms(make_pod().name("p"), "podAntiAffinity",
                      term("service", "In", ["securityscan", "value2"], "region")).obj()


def anti_affinity_zone() -> Pod:
    """PodAntiAffinity("zone", {matchLabels: {another: label}})."""
    return with_terms(make_pod().name("p"), "podAntiAffinity",
                      {"labelSelector": {"matchLabels": {"another": "label"}}, "topologyKey": "zone"}).obj()


def other(labels: dict[str, str], *, node: str = "fake-node", name: str = "other") -> Pod:
    b = make_pod().name(name).labels(labels)
    if node:
        b = b.node(node)
    return b.obj()


MULTI = with_terms(make_pod().name("p"), "podAffinity", term("aaa", "Exists", None, "hostname"),
                   term("bbb", "Exists", None, "hostname")).obj()

POD_CASES = [
    pytest.param(affinity_in("region"), None, other({"service": "securityscan"}), Q,
                 id="an added pod matching the pod's affinity queues it"),
    pytest.param(affinity_in("region"), None, other({"service": "securityscan"}, node=""), SKIP,
                 id="an added unscheduled pod is skipped"),
    pytest.param(affinity_in("region"), None, other({"aaa": "a"}), SKIP,
                 id="an added pod not matching the pod's affinity is skipped"),
    pytest.param(affinity_in("region"), other({"aaa": "a"}), other({"service": "securityscan"}), Q,
                 id="a pod relabelled to match the pod's affinity queues it"),
    pytest.param(affinity_in("region"), other({"service": "value2"}), other({"service": "securityscan"}), SKIP,
                 id="a pod matching the affinity before and after its relabelling is skipped"),
    pytest.param(affinity_in("region"), other({"service": "securityscan"}, node=""),
                 other({"service": "securityscan"}, node=""), SKIP,
                 id="an unscheduled pod's update is skipped"),
    pytest.param(affinity_in("region"), other({"service": "securityscan"}), other({"aaa": "a"}), SKIP,
                 id="a pod relabelled to stop matching the pod's affinity is skipped"),
    pytest.param(MULTI, other({"aaa": "a"}), other({"service": "securityscan"}), SKIP,
                 id="a pod relabelled to match none of several affinity terms is skipped"),
    pytest.param(MULTI, other({"aaa": "a"}), other({"aaa": "", "bbb": ""}), Q,
                 id="a pod relabelled to match all of several affinity terms queues it"),
    pytest.param(anti_affinity_in(), other({"service": "securityscan"}), other({"service": "aaaa"}), Q,
                 id="a pod relabelled to stop matching the pod's anti-affinity queues it"),
    pytest.param(anti_affinity_in(), other({"service": "bbb"}), other({"service": "securityscan"}), SKIP,
                 id="a pod relabelled to start matching the pod's anti-affinity is skipped"),
    pytest.param(anti_affinity_in(), other({"aaa": "a"}), None, SKIP,
                 id="a deleted pod not matching the pod's anti-affinity is skipped"),
    pytest.param(anti_affinity_in(), other({"service": "securityscan"}), None, Q,
                 id="a deleted pod matching the pod's anti-affinity queues it"),
    # Branches the upstream table leaves out.
    pytest.param(affinity_in("region"), make_pod().name("p").label("v", "1").obj(),
                 make_pod().name("p").label("v", "2").obj(), Q,
                 id="the pod's own label update queues it"),
    pytest.param(make_pod().name("p").label("app", "web").obj(),
                 with_terms(make_pod().name("e").node("fake-node"), "podAntiAffinity",
                            term("app", "In", ["web"], "zone")).obj(), None, Q,
                 id="a deleted pod whose anti-affinity rejected the pod queues it"),
    pytest.param(make_pod().name("p").label("app", "db").obj(),
                 with_terms(make_pod().name("e").node("fake-node"), "podAntiAffinity",
                            term("app", "In", ["web"], "zone")).obj(), None, SKIP,
                 id="a deleted pod whose anti-affinity does not match the pod is skipped"),
    pytest.param(anti_affinity_in(), other({"service": "securityscan"}, node=""), None, SKIP,
                 id="a deleted unscheduled pod is skipped"),
    pytest.param(affinity_in("region"), None, make_pod().name("other").label("service", "securityscan")
                 .nominated("n1").obj(), Q,
                 id="an added pod only nominated to a node counts as scheduled"),
]


@pytest.mark.parametrize(("pod", "old", "new_", "want"), POD_CASES)
def test_is_schedulable_after_pod_change(pod: Pod, old: Pod | None, new_: Pod | None, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_pod_change(pod, old, new_) == want


def node(**labels: str) -> Node:
    return make_node().name("node-a").labels(labels).obj()


NODE_CASES = [
    # affinity
    pytest.param(affinity_in("zone"), None, node(zone="zone1"), Q,
                 id="a new node with the affinity's topology key queues the pod"),
    pytest.param(affinity_in("region"), None, node(zone="zone1"), SKIP,
                 id="a new node without the affinity's topology key is skipped"),
    pytest.param(affinity_in("zone"), node(aaa="a"), node(aaa="b"), SKIP,
                 id="a node label update not touching the topology key is skipped"),
    pytest.param(affinity_in("zone"), node(zone="zone1"), node(zone="zone1", unrelated="unrelated"), SKIP,
                 id="an unrelated label added to a node in the topology is skipped"),
    pytest.param(affinity_in("zone"), node(zone="zone1"), node(zone="zone2"), Q,
                 id="a node moved to another affinity domain queues the pod"),
    pytest.param(affinity_in("zone"), node(aaa="a"), node(zone="zone1"), Q,
                 id="a node gaining the affinity's topology key queues the pod"),
    # anti-affinity
    pytest.param(anti_affinity_zone(), None, node(zone="zone1"), Q,
                 id="a new node with the anti-affinity's topology key queues the pod"),
    pytest.param(anti_affinity_zone(), None, node(), Q,
                 id="a new node without the anti-affinity's topology key queues the pod"),
    pytest.param(anti_affinity_zone(), node(zone="zone1"), node(zone="zone1", unrelated="unrelated"), SKIP,
                 id="an unrelated label added to a node is skipped for anti-affinity"),
    pytest.param(anti_affinity_zone(), node(zone="zone1"), node(zone="zone2"), Q,
                 id="a node moved to another anti-affinity domain queues the pod"),
    pytest.param(anti_affinity_zone(), node(aaa="a"), node(zone="zone1"), SKIP,
                 id="a node gaining the anti-affinity's topology key is skipped"),
    pytest.param(anti_affinity_zone(), node(zone="zone1"), node(aaa="a"), Q,
                 id="a node losing the anti-affinity's topology key queues the pod"),
    pytest.param(make_pod().name("p").obj(), None, node(zone="zone1"), SKIP,
                 id="a pod without any required term skips every node event"),
]


@pytest.mark.parametrize(("pod", "old", "new_", "want"), NODE_CASES)
def test_is_schedulable_after_node_change(pod: Pod, old: Node | None, new_: Node, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_node_change(pod, old, new_) == want


def test_a_hint_given_another_kind_of_object_fails() -> None:
    with pytest.raises(TypeError):
        plugin().is_schedulable_after_pod_change(affinity_in("zone"), None, node(zone="z"))


def registrations(pl: InterPodAffinity) -> list[tuple[str, ActionType, str | None]]:
    return [(e.event.resource, e.event.action_type, getattr(e.hint, "__name__", None))
            for e in pl.events_to_register()]


def test_the_v1_30_registration_is_unchanged() -> None:
    assert registrations(plugin(FEATURES_1_30)) == [
        (GVK.POD, ActionType.ALL, None),
        (GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT, None),
    ]


def test_the_1_36_registration_is_upstream_s() -> None:
    pl = plugin(FEATURES_1_36)
    assert registrations(pl) == [
        (GVK.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE, "is_schedulable_after_pod_change"),
        (GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL, "is_schedulable_after_node_change"),
    ]
    assert all(getattr(e.hint, "__self__", None) is pl for e in pl.events_to_register())
