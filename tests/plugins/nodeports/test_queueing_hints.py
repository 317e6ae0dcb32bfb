"""NodePorts' 1.36 queueing hint (node_ports.go: EventsToRegister, isSchedulableAfterPodDeleted):
the rows of upstream node_ports_test.go Test_isSchedulableAfterAssignedPodDeleted, plus the
nominated-pod, host-IP and sidecar branches of the source."""

from __future__ import annotations

from typing import Any

import pytest
from builders import make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.features import FEATURES_1_30, FEATURES_1_36
from kubesched.framework import GVK, ActionType, ClusterEventWithHint, QueueingHint
from kubesched.objects import Pod
from kubesched.plugins import nodeports

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def shape(events: list[ClusterEventWithHint]) -> list[tuple[str, ActionType, str | None]]:
    return [(e.event.resource, e.event.action_type, getattr(e.hint, "__name__", None)) for e in events]


def test_v1_30_registration_is_unchanged() -> None:
    pl = nodeports.new(None, FrameworkHandle.for_nodes([], features=FEATURES_1_30))
    assert shape(pl.events_to_register()) == [
        (GVK.POD, ActionType.DELETE, None), (GVK.NODE, ActionType.ADD | ActionType.UPDATE, None)]


def test_1_36_registration_is_upstreams() -> None:
    pl = nodeports.new(None, FrameworkHandle.for_nodes([], features=FEATURES_1_36))
    events = pl.events_to_register()
    # Node/Add has no hint: always Queue.
    assert shape(events) == [(GVK.POD, ActionType.DELETE, "is_schedulable_after_pod_deleted"),
                             (GVK.NODE, ActionType.ADD, None)]
    assert getattr(events[0].hint, "__self__", None) is pl


def with_port(port: int, name: str = "p", host_ip: str = "", node: str = "", nominated: str = "") -> Pod:
    b = make_pod().name(name).host_port(port, host_ip=host_ip)
    if node:
        b = b.node(node)
    if nominated:
        b = b.nominated(nominated)
    return b.obj()


def sidecar_with_port(port: int, node: str) -> Pod:
    b = make_pod().name("sidecar").node(node).init_container(sidecar=True)
    b.m["spec"]["initContainers"][0]["ports"] = [{"containerPort": port, "hostPort": port, "protocol": "TCP"}]
    return b.obj()


TARGET = with_port(8080)
CASES = [
    ("an old object that is not a pod queues", TARGET, "not-a-pod", Q),
    ("an unscheduled pod deleted is skipped", TARGET, make_pod().name("other").obj(), SKIP),
    ("a bound pod without host ports deleted is skipped", TARGET, make_pod().name("other").node("fake-node").obj(),
     SKIP),
    ("a bound pod with an unrelated host port deleted is skipped", TARGET, with_port(8081, "other", node="fake-node"),
     SKIP),
    ("a bound pod releasing the wanted host port queues", TARGET, with_port(8080, "other", node="fake-node"), Q),
    ("a nominated pod releasing the wanted host port queues", TARGET, with_port(8080, "other", nominated="fake-node"),
     Q),
    ("the same port on another host IP is skipped", with_port(8080, host_ip="127.0.0.1"),
     with_port(8080, "other", host_ip="127.0.0.2", node="fake-node"), SKIP),
    ("a port on 0.0.0.0 conflicts with every IP and queues", with_port(8080, host_ip="127.0.0.1"),
     with_port(8080, "other", node="fake-node"), Q),
    ("a sidecar's host port released queues", TARGET, sidecar_with_port(8080, "fake-node"), Q),
]


@pytest.mark.parametrize(("target", "old", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_is_schedulable_after_pod_deleted(target: Pod, old: Any, want: QueueingHint) -> None:
    pl = nodeports.new(None, FrameworkHandle.for_nodes([]))
    assert pl.is_schedulable_after_pod_deleted(target, old, None) == want
