"""SchedulingGates (upstream scheduling_gates_test.go TestPreEnqueue)."""

from __future__ import annotations

import pytest
from builders import make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.features import FEATURES_1_30
from kubesched.framework import Code, PreEnqueuePlugin
from kubesched.objects import Pod
from kubesched.plugins import schedulinggates
from kubesched.plugins.schedulinggates import NAME


def gated(*gates: str) -> Pod:
    b = make_pod().name("p")
    for g in gates:
        b = b.scheduling_gate(g)
    return b.obj()


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        (gated(), None),
        (gated("foo", "bar"), "waiting for scheduling gates: [foo bar]"),
        (gated("example.com/a"), "waiting for scheduling gates: [example.com/a]"),
        (gated("example.com/a", "example.com/b", "c"), "waiting for scheduling gates: [example.com/a example.com/b c]"),
    ],
    ids=[
        "pod without scheduling gates is enqueued",
        "pod carrying two gates waits, listed like a Go string slice",
        "pod carrying one prefixed gate waits",
        "gates keep their spec order in the message",
    ],
)
def test_pre_enqueue(pod: Pod, want: str | None) -> None:
    pl = schedulinggates.new(None, FrameworkHandle.for_nodes([]))
    got = pl.pre_enqueue(pod)
    if want is None:
        assert got is None
    else:
        assert got is not None
        assert got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert got.message == want
        assert got.reasons == (want,)


def test_plugin_shape_registers_no_event_in_v1_30() -> None:
    pl = schedulinggates.new(None, FrameworkHandle.for_nodes([], features=FEATURES_1_30))
    assert pl.name == NAME == "SchedulingGates"
    assert isinstance(pl, PreEnqueuePlugin)
    assert pl.events_to_register() == []
