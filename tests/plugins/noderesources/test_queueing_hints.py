"""NodeResourcesFit's 1.36 queueing hints (fit.go: EventsToRegister, isSchedulableAfterPodEvent,
isSchedulableAfterNodeChange, isSchedulableAfterDeviceClassEvent, isFit,
haveAnyRequestedResourcesIncreased): rows of upstream fit_test.go (Test_isSchedulableAfterPodChange,
Test_isSchedulableAfterNodeChange, Test_isSchedulableAfterDeviceClassChange, TestIsFit,
TestHaveAnyRequestedResourcesIncreased, TestEventsToRegister) plus the branches of the 1.36 source
they do not reach (nominated pods, DRA extended resources through a DeviceClass)."""

from __future__ import annotations

from typing import Any

import pytest
from builders import make_node, make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features
from kubesched.framework import GVK, ActionType, ClusterEventWithHint, QueueingHint
from kubesched.objects import Node, Pod
from kubesched.objects.devices import DeviceClass, parse_device_class
from kubesched.plugins.noderesources import Fit
from kubesched.plugins.noderesources.fit import have_any_requested_resources_increased, is_fit

A = "example.com/aaa"
B = "example.com/bbb"
GPU = "example.com/gpu"
HP = "hugepages-2Mi"
Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
A_ = ActionType


def shape(events: list[ClusterEventWithHint]) -> list[tuple[str, ActionType, str | None]]:
    return [(e.event.resource, e.event.action_type, getattr(e.hint, "__name__", None)) for e in events]


def plugin(features: Features = FEATURES_1_36, classes: tuple[DeviceClass, ...] = ()) -> Fit:
    return Fit(None, FrameworkHandle.for_nodes([], objects=MemoryObjects(device_classes=classes), features=features))


def pod(name: str = "pod1", *, uid: str = "", node: str = "", nominated: str = "",
        pod_level: dict[str, Any] | None = None, **req: Any) -> Pod:
    """A pod with one container requesting ``req`` (keys with '_' for '-'; use ``ext`` for a
    dict of other names), or with spec.resources.requests ``pod_level``."""
    b = make_pod().name(name).uid(uid or name)
    ext = req.pop("ext", {})
    requests = {k.replace("_", "-"): v for k, v in req.items()} | dict(ext)
    if requests:
        b = b.container(requests=requests)
    if node:
        b = b.node(node)
    if nominated:
        b = b.nominated(nominated)
    if pod_level is not None:
        b.m["spec"]["resources"] = {"requests": dict(pod_level)}
    return b.obj()


def node(res: dict[str, Any] | None = None, name: str = "n") -> Node:
    """st.MakeNode().Capacity(res): capacity = allocatable, with 32000 pods unless given."""
    return make_node().name(name).capacity_map({"pods": "32000", **(res or {})}).obj()


def device_class(name: str = "", extended: str | None = None) -> DeviceClass:
    spec: dict[str, Any] = {} if extended is None else {"extendedResourceName": extended}
    return parse_device_class({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                               "metadata": {"name": name or "class"}, "spec": spec})


# ----------------------------------------------------------------------------- registration
def test_v1_30_registration_is_unchanged() -> None:
    assert shape(plugin(FEATURES_1_30).events_to_register()) == [
        (GVK.POD, A_.DELETE, None), (GVK.NODE, A_.ADD | A_.UPDATE, None)]


REGISTRATIONS = [
    ("1.36 registers scale-down pod updates, allocatable node updates and device classes", FEATURES_1_36, [
        (GVK.POD, A_.DELETE | A_.UPDATE_POD_SCALE_DOWN, "is_schedulable_after_pod_event"),
        (GVK.NODE, A_.ADD | A_.UPDATE_NODE_ALLOCATABLE, "is_schedulable_after_node_change"),
        (GVK.DEVICE_CLASS, A_.ADD | A_.UPDATE, "is_schedulable_after_device_class_event")]),
    ("without InPlacePodVerticalScaling only pod deletions count",
     Features(FEATURES_1_36.version, {"InPlacePodVerticalScaling": False}), [
         (GVK.POD, A_.DELETE, "is_schedulable_after_pod_event"),
         (GVK.NODE, A_.ADD | A_.UPDATE_NODE_ALLOCATABLE, "is_schedulable_after_node_change"),
         (GVK.DEVICE_CLASS, A_.ADD | A_.UPDATE, "is_schedulable_after_device_class_event")]),
    ("without DRAExtendedResource no device class event is registered",
     Features(FEATURES_1_36.version, {"DRAExtendedResource": False}), [
         (GVK.POD, A_.DELETE | A_.UPDATE_POD_SCALE_DOWN, "is_schedulable_after_pod_event"),
         (GVK.NODE, A_.ADD | A_.UPDATE_NODE_ALLOCATABLE, "is_schedulable_after_node_change")]),
]


@pytest.mark.parametrize(("features", "want"), [r[1:] for r in REGISTRATIONS], ids=[r[0] for r in REGISTRATIONS])
def test_1_36_registration_is_upstreams(features: Features, want: list[Any]) -> None:
    pl = plugin(features)
    events = pl.events_to_register()
    assert shape(events) == want
    assert all(getattr(e.hint, "__self__", None) is pl for e in events)


# ----------------------------------------------------------------------------- pod events
NO_SCALING = Features(FEATURES_1_36.version, {"InPlacePodVerticalScaling": False})
POD_EVENTS = [
    ("an old object that is not a pod queues", pod(), "not-a-pod", None, FEATURES_1_36, Q),
    ("a new object that is not a pod queues", pod(), None, "not-a-pod", FEATURES_1_36, Q),
    ("another bound pod deleted queues", pod(cpu="1"), pod("pod2", cpu="1", node="fake"), None, FEATURES_1_36, Q),
    ("a nominated pod deleted queues", pod(cpu="1"), pod("pod2", cpu="1", nominated="fake"), None, FEATURES_1_36, Q),
    ("an unscheduled pod deleted is skipped", pod(), pod("pod2"), None, FEATURES_1_36, SKIP),
    ("a scale-down is skipped without InPlacePodVerticalScaling", pod(cpu="1"), pod("pod2", cpu="2", node="fake"),
     pod("pod2", cpu="1", node="fake"), NO_SCALING, SKIP),
    ("another unscheduled pod scaled down is skipped", pod(cpu="1"), pod("pod2", cpu="2"), pod("pod2", cpu="1"),
     FEATURES_1_36, SKIP),
    ("another pod scaling down a resource the pod does not request is skipped", pod(cpu="1"),
     pod("pod2", memory="2", node="fake"), pod("pod2", memory="1", node="fake"), FEATURES_1_36, SKIP),
    ("another pod scaling down a pod-level resource the pod does not request is skipped",
     pod(pod_level={"cpu": "1"}), pod("pod2", pod_level={"memory": "2"}, node="fake"),
     pod("pod2", pod_level={"memory": "1"}, node="fake"), FEATURES_1_36, SKIP),
    ("another bound pod scaling down a requested resource queues", pod(cpu="1"), pod("pod2", cpu="2", node="fake"),
     pod("pod2", cpu="1", node="fake"), FEATURES_1_36, Q),
    ("another bound pod scaling down a requested pod-level resource queues", pod(pod_level={"cpu": "1"}),
     pod("pod2", pod_level={"cpu": "2"}, node="fake"), pod("pod2", pod_level={"cpu": "1"}, node="fake"),
     FEATURES_1_36, Q),
    ("another bound pod scaling down a requested extended resource queues", pod(ext={A: 1}),
     pod("pod2", ext={A: 2}, node="fake"), pod("pod2", ext={A: 1}, node="fake"), FEATURES_1_36, Q),
    ("another bound pod scaling down memory and ephemeral storage the pod requests queues",
     pod(ephemeral_storage="1"), pod("pod2", ephemeral_storage="2", node="fake"),
     pod("pod2", ephemeral_storage="1", node="fake"), FEATURES_1_36, Q),
    ("the pod itself scaling down queues", pod(cpu="1"), pod(cpu="2"), pod(cpu="1"), FEATURES_1_36, Q),
    ("the pod itself scaling down a pod-level resource queues", pod(pod_level={"cpu": "1"}),
     pod(pod_level={"cpu": "2"}), pod(pod_level={"cpu": "1"}), FEATURES_1_36, Q),
]


@pytest.mark.parametrize(("target", "old", "new", "features", "want"), [r[1:] for r in POD_EVENTS],
                         ids=[r[0] for r in POD_EVENTS])
def test_is_schedulable_after_pod_event(target: Pod, old: Any, new: Any, features: Features,
                                        want: QueueingHint) -> None:
    assert plugin(features).is_schedulable_after_pod_event(target, old, new) == want


# ----------------------------------------------------------------------------- node events
NODE_EVENTS = [
    ("a new object that is not a node queues", pod(), None, "not-a-node", (), Q),
    ("an old object that is not a node queues", pod(), "not-a-node", node(), (), Q),
    ("an added node without enough of a resource is skipped", pod(memory="2"), None, node({"memory": "1"}), (), SKIP),
    ("an added node without the requested resource type is skipped", pod(ext={A: 1}), None, node({B: "1"}), (), SKIP),
    ("an added node with enough resources queues", pod(memory="2", ext={A: 1}), None,
     node({"memory": "4", A: "2"}), (), Q),
    ("an update that grows no requested resource is skipped", pod(memory="2", ext={A: 1}),
     node({"memory": "2", A: "2"}), node({"memory": "2", A: "1", B: "2"}), (), SKIP),
    ("an update growing a requested resource queues", pod(memory="2", ext={A: 1}), node({"memory": "2", A: "1"}),
     node({"memory": "2", A: "2"}), (), Q),
    ("a node becoming too small is skipped", pod(memory="2", ext={A: 1}), node({"memory": "4", A: "2"}),
     node({"memory": "1", A: "2"}), (), SKIP),
    ("a node becoming big enough queues", pod(memory="2", ext={A: 1}), node({"memory": "1", A: "2"}),
     node({"memory": "4", A: "2"}), (), Q),
    ("an added node without pod room is skipped", pod(), None, node({"pods": "0"}), (), SKIP),
    ("more pod room on an update queues", pod(), node({"pods": "1"}), node({"pods": "2"}), (), Q),
    ("an added node without a resource a device class provides queues (left to DRA)", pod(ext={GPU: 1}), None,
     node(), (device_class("gpu", GPU),), Q),
    ("an added node without a resource no device class provides is skipped", pod(ext={GPU: 1}), None,
     node(), (device_class("gpu", "example.com/other"),), SKIP),
    ("a node update queues while a requested resource is left to DRA", pod(ext={GPU: 1}), node({"cpu": "1"}),
     node({"cpu": "2"}), (device_class("gpu", GPU),), Q),
    ("an implicit device class resource name counts as left to DRA",
     pod(ext={"deviceclass.resource.kubernetes.io/gpuclass": 1}), None, node(), (device_class("gpuclass"),), Q),
    ("a resource the node's device plugin offers is not left to DRA", pod(ext={GPU: 2}), None,
     node({GPU: "1"}), (device_class("gpu", GPU),), SKIP),
]


@pytest.mark.parametrize(("target", "old", "new", "classes", "want"), [r[1:] for r in NODE_EVENTS],
                         ids=[r[0] for r in NODE_EVENTS])
def test_is_schedulable_after_node_change(target: Pod, old: Any, new: Any, classes: tuple[DeviceClass, ...],
                                          want: QueueingHint) -> None:
    assert plugin(FEATURES_1_36, classes).is_schedulable_after_node_change(target, old, new) == want


def test_device_classes_are_ignored_without_dra_extended_resource() -> None:
    pl = plugin(Features(FEATURES_1_36.version, {"DRAExtendedResource": False}), (device_class("gpu", GPU),))
    assert pl.is_schedulable_after_node_change(pod(ext={GPU: 1}), None, node()) == SKIP


IS_FIT = [
    ("no node never fits", pod(), None, True, False),
    ("an insufficient resource does not fit", pod(cpu="2"), node({"cpu": "1"}), True, False),
    ("a sufficient resource fits", pod(cpu="1"), node({"cpu": "2"}), True, True),
    ("an insufficient pod-level resource does not fit", pod(pod_level={"cpu": "2"}), node({"cpu": "1"}), True, False),
    ("a sufficient pod-level resource fits", pod(pod_level={"cpu": "2"}), node({"cpu": "2"}), True, True),
    ("sufficient pod-level hugepages fit", pod(pod_level={HP: "2Mi"}), node({HP: "2Mi"}), True, True),
    ("insufficient pod-level hugepages do not fit", pod(pod_level={HP: "4Mi"}), node({HP: "2Mi"}), True, False),
]


@pytest.mark.parametrize(("target", "n", "_pod_level", "want"), [r[1:] for r in IS_FIT], ids=[r[0] for r in IS_FIT])
def test_is_fit(target: Pod, n: Node | None, _pod_level: bool, want: bool) -> None:
    assert is_fit(target, n) is want


def _cap(cpu: str, mem: str, eph: str, a: str | None = None, pods: str | None = None) -> Node:
    res = {"cpu": cpu, "memory": mem, "ephemeral-storage": eph}
    if a is not None:
        res[A] = a
    if pods is not None:
        res["pods"] = pods
    return node(res)


FULL: dict[str, Any] = {"cpu": "2m", "memory": "2", "ephemeral_storage": "2", "ext": {A: 2}}
INCREASED = [
    ("no requested resources never count", pod(), _cap("1", "1", "1", "1", "1"), _cap("2", "2", "2", "2", "1"),
     None, False),
    ("more pods count even without requests", pod(), _cap("1", "1", "1", "1", "1"), _cap("1", "1", "1", "1", "2"),
     None, True),
    ("a requested resource the node offers is not left to DRA", pod(**FULL), _cap("1", "2", "3", "4"),
     _cap("1", "2", "1", "1"), frozenset({A}), False),
    ("a requested resource the node lacks is left to DRA", pod(**FULL), _cap("1", "2", "3"), _cap("1", "2", "1"),
     frozenset({A}), True),
    ("a requested resource at zero capacity is left to DRA", pod(ext={A: 1}), node({A: "0"}), node({A: "0"}),
     frozenset({A}), True),
    ("a requested resource the node lacks without DRA does not count", pod(**FULL), _cap("1", "2", "3"),
     _cap("1", "2", "1"), None, False),
    ("requested resources decreasing do not count", pod(**FULL), _cap("1", "2", "3", "4"), _cap("1", "2", "1", "1"),
     None, False),
    ("requested resources increasing count", pod(**FULL), _cap("1", "2", "3", "4"), _cap("3", "4", "3", "4"),
     None, True),
    ("resources the pod does not request decreasing do not count", pod(cpu="2m", memory="2"),
     _cap("1", "2", "3", "4"), _cap("1", "2", "1", "1"), None, False),
    ("resources the pod does not request increasing do not count", pod(cpu="2m", memory="2"),
     _cap("1", "2", "3", "4"), _cap("1", "2", "5", "6"), None, False),
]


@pytest.mark.parametrize(("target", "old", "new", "dra_names", "want"), [r[1:] for r in INCREASED],
                         ids=[r[0] for r in INCREASED])
def test_have_any_requested_resources_increased(target: Pod, old: Node, new: Node, dra_names: frozenset[str] | None,
                                                want: bool) -> None:
    assert have_any_requested_resources_increased(target, old, new, dra_names) is want


# ----------------------------------------------------------------------------- device class events
IMPLICIT = "deviceclass.resource.kubernetes.io/gpuclass"
CLASS_EVENTS = [
    ("a new object that is not a device class queues", pod(), None, "not-a-class", Q),
    ("an old object that is not a device class queues", pod(), "not-a-class", device_class(), Q),
    ("an update keeping no extended resource name is skipped", pod(memory="2"), device_class(), device_class(), SKIP),
    ("an update keeping the same extended resource name is skipped", pod(memory="2"), device_class(extended=GPU),
     device_class(extended=GPU), SKIP),
    ("an added class whose implicit name the pod requests queues", pod(ext={IMPLICIT: 1}), None,
     device_class("gpuclass", GPU), Q),
    ("an added class whose implicit name the pod does not request is skipped", pod(ext={IMPLICIT: 1}), None,
     device_class("myclass", GPU), SKIP),
    ("an added class whose explicit name the pod does not request is skipped", pod(ext={"example.com/othergpu": 1}),
     None, device_class("myclass", GPU), SKIP),
    ("an update naming an explicit resource the pod does not request is skipped (implicit names never change)",
     pod(ext={IMPLICIT: 1}), device_class("gpuclass"), device_class("gpuclass", GPU), SKIP),
    ("an added class whose explicit name the pod requests queues", pod(ext={GPU: 1}), None,
     device_class(extended=GPU), Q),
    ("an update renaming the explicit resource to one the pod requests queues", pod(ext={GPU: 1}),
     device_class(extended="example.com/gpu1"), device_class(extended=GPU), Q),
]


@pytest.mark.parametrize(("target", "old", "new", "want"), [r[1:] for r in CLASS_EVENTS],
                         ids=[r[0] for r in CLASS_EVENTS])
def test_is_schedulable_after_device_class_event(target: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_device_class_event(target, old, new) == want


def test_a_plugin_without_handle_uses_the_default_release() -> None:
    assert shape(Fit().events_to_register())[0] == (GVK.POD, A_.DELETE | A_.UPDATE_POD_SCALE_DOWN,
                                                     "is_schedulable_after_pod_event")
    # No handle: no DRA manager, so nothing is left to DRA.
    assert Fit().is_schedulable_after_node_change(pod(ext={GPU: 1}), None, node()) == SKIP
