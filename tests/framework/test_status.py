from __future__ import annotations

import pytest

from kubesched.framework import SKIP, SUCCESS, Code, Status, is_success


@pytest.mark.parametrize(
    ("status", "rejected", "success"),
    [
        (Status.unschedulable("Insufficient cpu"), True, False),
        (Status.unresolvable("node(s) didn't match the requested node name"), True, False),
        (Status.pending("waiting"), True, False),
        (Status.as_error("boom"), False, False),
        (Status.wait("w"), False, False),
        (SKIP, False, False),
        (SUCCESS, False, True),
    ],
    ids=["unschedulable is rejected", "unresolvable is rejected", "pending is rejected", "error is not rejected",
         "wait is not rejected", "skip is not rejected", "success is success"],
)
def test_rejected_and_success(status: Status, rejected: bool, success: bool) -> None:
    assert status.is_rejected() is rejected
    assert status.is_success() is success


def test_message_joins_reasons_with_comma_space() -> None:
    assert Status.unschedulable("Too many pods", "Insufficient cpu").message == "Too many pods, Insufficient cpu"


def test_code_labels_are_upstream_names_in_iota_order() -> None:
    assert [c.label for c in Code] == ["Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Wait",
                                       "Skip", "Pending"]
    assert [int(c) for c in Code] == list(range(7))


def test_none_counts_as_success() -> None:
    assert is_success(None) and is_success(SUCCESS) and not is_success(Status.unschedulable("x"))


def test_with_plugin_sets_the_failing_plugin() -> None:
    s = Status.unschedulable("x").with_plugin("NodePorts")
    assert s.plugin == "NodePorts" and s.reasons == ("x",)
