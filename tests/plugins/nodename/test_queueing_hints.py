"""NodeName's 1.36 registration (node_name.go: EventsToRegister): Node/Add only, without a hint
(always Queue)."""

from __future__ import annotations

from kubesched._runtime.handle import FrameworkHandle
from kubesched.features import FEATURES_1_30, FEATURES_1_36
from kubesched.framework import GVK, ActionType, ClusterEventWithHint
from kubesched.plugins import nodename


def shape(events: list[ClusterEventWithHint]) -> list[tuple[str, ActionType, str | None]]:
    return [(e.event.resource, e.event.action_type, getattr(e.hint, "__name__", None)) for e in events]


def test_v1_30_registration_is_unchanged() -> None:
    pl = nodename.new(None, FrameworkHandle.for_nodes([], features=FEATURES_1_30))
    assert shape(pl.events_to_register()) == [(GVK.NODE, ActionType.ADD | ActionType.UPDATE, None)]


def test_1_36_registration_is_node_add_without_hint() -> None:
    pl = nodename.new(None, FrameworkHandle.for_nodes([], features=FEATURES_1_36))
    assert shape(pl.events_to_register()) == [(GVK.NODE, ActionType.ADD, None)]
