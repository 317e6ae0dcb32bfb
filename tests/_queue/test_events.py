"""Queue events (events.go v1.30): labels and (resource, action) of every cluster event,
the node-update split (NodeSchedulingPropertiesChange), and the registration map
(buildQueueingHintMap, fillEnqueueExtensions)."""

from __future__ import annotations

from typing import Any

import pytest
from builders import make_node

from kubesched._queue import CLUSTER_EVENTS, build_queueing_hint_map, events_by_plugin_of, node_update_events
from kubesched._queue.events import unroll_wildcard_resource
from kubesched._runtime.handle import FrameworkHandle
from kubesched.features import FEATURES_1_30, FEATURES_1_36
from kubesched.framework import GVK, ActionType, ClusterEvent, ClusterEventWithHint, Status
from kubesched.objects import Node, Pod
from kubesched.plugins import (
    defaultbinder,
    defaultpreemption,
    imagelocality,
    interpodaffinity,
    noderesources,
    queuesort,
    schedulinggates,
)

A = ActionType

UPSTREAM_EVENTS = [
    # (label, resource, action) exactly as events.go declares them
    ("AssignedPodAdd", GVK.POD, A.ADD),
    ("NodeAdd", GVK.NODE, A.ADD),
    ("AssignedPodUpdate", GVK.POD, A.UPDATE),
    ("UnschedulablePodUpdate", GVK.POD, A.UPDATE),
    ("AssignedPodDelete", GVK.POD, A.DELETE),
    ("NodeSpecUnschedulableChange", GVK.NODE, A.UPDATE_NODE_TAINT),
    ("NodeAllocatableChange", GVK.NODE, A.UPDATE_NODE_ALLOCATABLE),
    ("NodeLabelChange", GVK.NODE, A.UPDATE_NODE_LABEL),
    ("NodeAnnotationChange", GVK.NODE, A.UPDATE_NODE_ANNOTATION),
    ("NodeTaintChange", GVK.NODE, A.UPDATE_NODE_TAINT),
    ("NodeConditionChange", GVK.NODE, A.UPDATE_NODE_CONDITION),
    ("PvAdd", GVK.PERSISTENT_VOLUME, A.ADD),
    ("PvUpdate", GVK.PERSISTENT_VOLUME, A.UPDATE),
    ("PvcAdd", GVK.PERSISTENT_VOLUME_CLAIM, A.ADD),
    ("PvcUpdate", GVK.PERSISTENT_VOLUME_CLAIM, A.UPDATE),
    ("StorageClassAdd", GVK.STORAGE_CLASS, A.ADD),
    ("StorageClassUpdate", GVK.STORAGE_CLASS, A.UPDATE),
    ("CSINodeAdd", GVK.CSI_NODE, A.ADD),
    ("CSINodeUpdate", GVK.CSI_NODE, A.UPDATE),
    ("CSIDriverAdd", GVK.CSI_DRIVER, A.ADD),
    ("CSIDriverUpdate", GVK.CSI_DRIVER, A.UPDATE),
    ("CSIStorageCapacityAdd", GVK.CSI_STORAGE_CAPACITY, A.ADD),
    ("CSIStorageCapacityUpdate", GVK.CSI_STORAGE_CAPACITY, A.UPDATE),
    ("WildCardEvent", GVK.WILDCARD, A.ALL),
    ("UnschedulableTimeout", GVK.WILDCARD, A.ALL),
]


@pytest.mark.parametrize("label,resource,action", UPSTREAM_EVENTS,
                         ids=[f"{c[0]} is {c[1]}/{int(c[2])}" for c in UPSTREAM_EVENTS])
def test_cluster_event_constants(label: str, resource: str, action: ActionType) -> None:
    e = CLUSTER_EVENTS[label]
    assert (e.resource, e.action_type, e.label) == (resource, action, label)


def test_every_cluster_event_is_listed() -> None:
    assert set(CLUSTER_EVENTS) == {c[0] for c in UPSTREAM_EVENTS}
    assert CLUSTER_EVENTS["UnschedulableTimeout"].is_wildcard()


# ---------------------------------------------------------------- node updates
def base() -> Any:
    return (make_node().name("n1").capacity(cpu="4", memory="8Gi", pods=110).label("zone", "a")
            .annotation("note", "x").taint("k", "v", "NoSchedule"))


def with_conditions(node: Node, conds: list[dict[str, str]]) -> Node:
    from kubesched.objects.parse import parse_node

    m = dict(node.raw)
    m["status"] = {**m.get("status", {}), "conditions": conds}
    return parse_node(m)


NODE_CASES: list[tuple[str, Any, list[str]]] = [
    ("an identical node produces no event", lambda b: b.obj(), []),
    ("a node becoming schedulable is NodeSpecUnschedulableChange",
     ("unschedulable", lambda b: b.obj()), ["NodeSpecUnschedulableChange"]),
    ("a node becoming unschedulable produces no event", ("schedulable", lambda b: b.unschedulable().obj()), []),
    ("more allocatable is NodeAllocatableChange",
     lambda b: b.capacity(cpu="8").obj(), ["NodeAllocatableChange"]),
    ("an equal quantity written differently is no change",
     lambda b: b.capacity(cpu="4000m").obj(), []),
    ("a new label is NodeLabelChange", lambda b: b.label("disk", "ssd").obj(), ["NodeLabelChange"]),
    ("a new taint is NodeTaintChange", lambda b: b.taint("k2", "", "NoExecute").obj(), ["NodeTaintChange"]),
    ("a new annotation is NodeAnnotationChange", lambda b: b.annotation("other", "y").obj(),
     ["NodeAnnotationChange"]),
    ("several changes come in upstream order",
     lambda b: b.capacity(cpu="8").label("disk", "ssd").taint("k2").annotation("o", "y").obj(),
     ["NodeAllocatableChange", "NodeLabelChange", "NodeTaintChange", "NodeAnnotationChange"]),
]


@pytest.mark.parametrize("change,want", [c[1:] for c in NODE_CASES], ids=[c[0] for c in NODE_CASES])
def test_node_update_events(change: Any, want: list[str]) -> None:
    if isinstance(change, tuple):
        kind, make_new = change
        old = base().unschedulable().obj() if kind == "unschedulable" else base().obj()
        new = make_new(base())
    else:
        old, new = base().obj(), change(base())
    assert [e.label for e in node_update_events(old, new)] == want


CONDITION_CASES = [
    ("a condition status flip is NodeConditionChange",
     [{"type": "Ready", "status": "True"}], [{"type": "Ready", "status": "False"}], ["NodeConditionChange"]),
    ("a new condition type is NodeConditionChange",
     [{"type": "Ready", "status": "True"}],
     [{"type": "Ready", "status": "True"}, {"type": "DiskPressure", "status": "False"}], ["NodeConditionChange"]),
    ("reordered conditions are no change",
     [{"type": "Ready", "status": "True"}, {"type": "DiskPressure", "status": "False"}],
     [{"type": "DiskPressure", "status": "False"}, {"type": "Ready", "status": "True"}], []),
    ("only reason or message changed is no change",
     [{"type": "Ready", "status": "True", "reason": "a"}], [{"type": "Ready", "status": "True", "reason": "b"}], []),
]


@pytest.mark.parametrize("old,new,want", [c[1:] for c in CONDITION_CASES], ids=[c[0] for c in CONDITION_CASES])
def test_node_condition_events(old: list[dict[str, str]], new: list[dict[str, str]], want: list[str]) -> None:
    n = base().obj()
    assert [e.label for e in node_update_events(with_conditions(n, old), with_conditions(n, new))] == want


# ---------------------------------------------------------------- registrations
NODE_ADD_REG = ClusterEvent(GVK.NODE, A.ADD)
TAINT_REG = ClusterEvent(GVK.NODE, A.UPDATE_NODE_TAINT)

HINT_MAP_CASES: list[tuple[str, dict[str, list[Any]], dict[ClusterEvent, list[str]]]] = [
    ("a plugin registering Node/Add also gets Node/UpdateNodeTaint",
     {"p": [NODE_ADD_REG]}, {NODE_ADD_REG: ["p"], TAINT_REG: ["p"]}),
    ("a plugin registering Node/Add and a taint bit gets nothing extra",
     {"p": [ClusterEvent(GVK.NODE, A.ADD | A.UPDATE_NODE_TAINT)]},
     {ClusterEvent(GVK.NODE, A.ADD | A.UPDATE_NODE_TAINT): ["p"]}),
    ("a taint bit in a separate registration also counts",
     {"p": [NODE_ADD_REG, ClusterEvent(GVK.NODE, A.UPDATE)]},
     {NODE_ADD_REG: ["p"], ClusterEvent(GVK.NODE, A.UPDATE): ["p"]}),
    ("a plugin registering Node/All gets nothing extra",
     {"p": [ClusterEvent(GVK.NODE, A.ALL)]}, {ClusterEvent(GVK.NODE, A.ALL): ["p"]}),
    ("a plugin registering no Node/Add gets nothing extra",
     {"p": [ClusterEvent(GVK.POD, A.ADD)]}, {ClusterEvent(GVK.POD, A.ADD): ["p"]}),
    ("a plugin registering no event is left out",
     {"gates": [], "p": [ClusterEvent(GVK.POD, A.DELETE)]}, {ClusterEvent(GVK.POD, A.DELETE): ["p"]}),
    ("plugins sharing an event are listed in order",
     {"a": [NODE_ADD_REG], "b": [ClusterEventWithHint(NODE_ADD_REG)]},
     {NODE_ADD_REG: ["a", "b"], TAINT_REG: ["a", "b"]}),
]


@pytest.mark.parametrize("events,want", [c[1:] for c in HINT_MAP_CASES], ids=[c[0] for c in HINT_MAP_CASES])
def test_build_queueing_hint_map(events: dict[str, list[Any]], want: dict[ClusterEvent, list[str]]) -> None:
    assert build_queueing_hint_map(events) == want


class _FilterWithoutEvents:
    name = "Legacy"

    def filter(self, state: Any, pod: Pod, node_info: Any) -> Status | None:
        return None


class _ScoreOnly:
    name = "ScoreOnly"

    def score(self, state: Any, pod: Pod, node_info: Any) -> int:
        return 0


def test_events_by_plugin_of_follows_fill_enqueue_extensions() -> None:
    """Rejecting plugins without EventsToRegister register every resource (All); plugins
    that cannot reject (Score, QueueSort, Bind, PostFilter only) register nothing. (v1.30's
    registrations: 1.36's, with queueing hints, are the plugins' own tests' business.)"""
    handle = FrameworkHandle.for_nodes([], features=FEATURES_1_30)
    factories = [schedulinggates.new, queuesort.new, defaultbinder.new, imagelocality.new, defaultpreemption.new,
                 interpodaffinity.new, noderesources.new_balanced_allocation]
    plugins = [f(None, handle) for f in factories] + [_FilterWithoutEvents(), _ScoreOnly()]
    got = events_by_plugin_of(plugins + plugins)
    assert got["Legacy"] == unroll_wildcard_resource()
    assert all(e.action_type == A.ALL for e in got["Legacy"])
    for absent in ("ScoreOnly", "PrioritySort", "DefaultBinder", "ImageLocality", "NodeResourcesBalancedAllocation"):
        assert absent not in got
    # v1.30's DefaultPreemption rejects nothing; 1.36's is a PreEnqueue plugin (async
    # preemption) registering Pod/Delete.
    assert "DefaultPreemption" not in got
    v136 = FrameworkHandle.for_nodes([], features=FEATURES_1_36)
    assert events_by_plugin_of([defaultpreemption.new(None, v136)])["DefaultPreemption"] == [
        ClusterEvent(GVK.POD, A.DELETE)]
    assert got["SchedulingGates"] == []
    assert ClusterEvent(GVK.NODE, A.ADD | A.UPDATE_NODE_LABEL | A.UPDATE_NODE_TAINT) in got["InterPodAffinity"]
