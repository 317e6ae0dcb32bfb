"""helpers/fiterror.py: FitError.Error() and the event note truncation (framework/types.go,
schedule_one.go: truncateMessage), checked by hand and against every FailedScheduling message
of the conformance corpus."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pytest
import yaml

from kubesched.framework import Status
from kubesched.plugins.helpers.fiterror import fit_error_message, reasons_histogram, truncate_event_message

U = Status.unschedulable
UU = Status.unresolvable

CASES: list[tuple[str, int, dict[str, Status | None], str, str, str]] = [
    ("reasons are counted per node and sorted as strings",
     3, {"n1": U("Insufficient cpu"), "n2": U("Insufficient cpu"), "n3": UU("node(s) had untolerated taint {k: v}")},
     "", "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
     "0/3 nodes are available: 1 node(s) had untolerated taint {k: v}, 2 Insufficient cpu. "
     "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."),
    ("a count of 10 sorts before a count of 2",
     12, {**{f"a{i}": U("Y") for i in range(10)}, "b1": U("X"), "b2": U("X")}, "", "",
     "0/12 nodes are available: 10 Y, 2 X."),
    ("every reason of a status counts on its own",
     2, {"n1": U("Insufficient cpu", "Insufficient memory"), "n2": U("Insufficient memory")}, "", "",
     "0/2 nodes are available: 1 Insufficient cpu, 2 Insufficient memory."),
    ("a PreFilter message replaces the histogram",
     3, {"n1": UU("x"), "n2": UU("x"), "n3": UU("x")}, "node(s) didn't satisfy plugin NodeAffinity", "",
     "0/3 nodes are available: node(s) didn't satisfy plugin NodeAffinity."),
    ("without any status only the PostFilter message follows",
     6, {}, "", "preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling.",
     "0/6 nodes are available: preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling."),
    ("success statuses add nothing",
     2, {"n1": None, "n2": Status()}, "", "", "0/2 nodes are available:"),
]


@pytest.mark.parametrize(("n", "statuses", "pre", "post", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_fit_error_message(n: int, statuses: dict[str, Status | None], pre: str, post: str, want: str) -> None:
    assert fit_error_message(n, statuses, pre, post) == want


def test_reasons_histogram_ignores_missing_statuses() -> None:
    assert reasons_histogram([None, U("a"), U("a", "b")]) == ["1 b", "2 a"]


SHARED = U("Insufficient cpu", "Insufficient memory")


@pytest.mark.parametrize("statuses", [
    pytest.param([SHARED, SHARED, U("Insufficient cpu"), None, SHARED, None], id="a list sharing one status object"),
    pytest.param((SHARED, SHARED, U("Insufficient cpu"), None, SHARED, None), id="a tuple"),
    pytest.param({"a": SHARED, "b": SHARED, "c": U("Insufficient cpu"), "d": None, "e": SHARED, "f": None}.values(),
                 id="a dict's values, as fit_error_message passes them"),
    pytest.param(iter([SHARED, U("Insufficient cpu"), SHARED, SHARED, None]), id="a one-shot iterator"),
])
def test_reasons_histogram_counts_a_shared_status_once_per_node(statuses: Iterable[Status | None]) -> None:
    # Nodes with the same failure share one Status object: it counts once per node holding it.
    assert reasons_histogram(statuses) == ["3 Insufficient memory", "4 Insufficient cpu"]


@pytest.mark.parametrize(
    ("message", "want"),
    [("x" * 1024, "x" * 1024), ("x" * 1025, "x" * 1020 + " ..."), ("é" * 600, "é" * 510 + " ...")],
    ids=["a 1024-byte note is kept", "a longer note is cut to 1020 bytes plus an ellipsis",
         "the limit counts UTF-8 bytes, not characters"],
)
def test_truncate_event_message(message: str, want: str) -> None:
    assert truncate_event_message(message) == want


def test_truncation_inside_a_character_is_replaced() -> None:
    got = truncate_event_message("a" + "é" * 600)
    assert got.endswith("\ufffd ...")


CORPUS = Path(__file__).resolve().parents[4] / "shared" / "conformance"


@pytest.mark.skipif(not (CORPUS / "expected").is_dir(), reason="conformance corpus not available")
def test_every_corpus_message_is_rebuilt_from_its_failures() -> None:
    """Each Unschedulable step's message equals FitError.Error() over its failures (N = the
    scenario's node count), given the PostFilter part; PreFilter rejections use their one
    shared reason as PreFilterMsg."""
    checked = 0
    for path in sorted((CORPUS / "expected").glob("*.json")):
        scenario = CORPUS / "scenarios" / (path.stem + ".yaml")
        with scenario.open() as fh:
            num_nodes = sum(1 for d in yaml.safe_load_all(fh) if d and d.get("kind") == "Node")
        for step in json.loads(path.read_text())["steps"]:
            if step["outcome"] != "Unschedulable":
                continue
            msg: str = step["message"]
            statuses: dict[str, Status | None] = {
                k: U(*v["reasons"]) for k, v in step["failures"].items()}
            post = ""
            if " preemption: " in msg:
                post = "preemption: " + msg.split(" preemption: ", 1)[1]
            got = truncate_event_message(fit_error_message(num_nodes, statuses, post_filter_msg=post))
            if got != msg:
                shared = {tuple(v["reasons"]) for v in step["failures"].values()}
                assert len(shared) == 1, (path.name, msg, got)
                (reasons,) = shared
                got = truncate_event_message(fit_error_message(num_nodes, statuses, ", ".join(reasons), post))
            assert got == msg, path.name
            checked += 1
    assert checked > 0
