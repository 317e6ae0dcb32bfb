"""The extender fault matrix (issue 13): {filter, prioritize, preempt, bind} x {timeout, HTTP 503,
malformed JSON, connection refused, TLS name mismatch, wrong response shape} x {ignorable,
non-ignorable}, each a real scheduling run against a real misbehaving extender on 127.0.0.1
(kubesched.testing.extender_faults, shared with scripts/extender_fault_matrix.py), in the
conformance procedure (each pod attempted once) and on the virtual-clock queue (retries with
backoff; the extender heals after its first FAULTY_REQUESTS faulty requests).

Each case checks kube-scheduler v1.30's outcome for its verb and flag (KEP-1819 ignorable
extenders; prioritize errors ignored whatever the flag; ignorable binders skipped since v1.30),
the exact error HTTPExtender returns, and that no pod is lost: every pod ends bound exactly once,
pending with a recorded reason, or evicted by preemption, with the scheduler's cache agreeing.
"""

from __future__ import annotations

import itertools

import pytest

from kubesched.testing.extender_faults import (
    CASES,
    FAULTY_REQUESTS,
    MODES,
    VERBS,
    Binding,
    Case,
    CaseRun,
    Mode,
    expected_error,
    markdown_table,
    observed_kind,
    run_case,
)
from kubesched.timeline import POST_FILTER_ERROR_FLUSHES

FIT_ERROR = "0/2 nodes are available: 2 Insufficient cpu."


def assert_no_pod_lost(run: CaseRun) -> None:
    assert run.lost == [], f"pods lost: {run.lost}"
    assert run.double_bound == [], f"pods bound twice: {run.double_bound}"
    assert run.cache_problems == []
    for pod, node in run.final.items():
        if pod in run.bound_before:
            assert run.binds[pod] == 0 and node is not None
        elif node is not None:
            assert run.binds[pod] == 1, f"{pod} is on {node} but was bound {run.binds[pod]} times"
        else:
            assert run.binds[pod] == 0 and run.pending[pod], f"{pod}: pending without a reason"


def outcomes(run: CaseRun) -> list[tuple[str, str | None]]:
    return [(a.outcome, a.node) for a in run.attempts]


@pytest.mark.parametrize("case", CASES, ids=[c.sentence for c in CASES])
def test_fault_matrix(case: Case) -> None:
    runs = {mode: run_case(case, mode) for mode in MODES}
    sim, queue = runs["conformance procedure"], runs["virtual-clock queue"]
    for run in runs.values():
        assert_no_pod_lost(run)
        error = expected_error(case.verb, case.fault.key, run.url)
        # The scheduler called the extender, and the call failed with kube-scheduler's error,
        # whether that error is then skipped, ignored or reported.
        assert run.client_errors, "the extender was never called"
        assert run.client_errors[0] == error
        if case.fault.key not in ("connection-refused", "tls-name-mismatch"):
            assert run.requests >= 1
        if case.fault.key == "tls-name-mismatch":
            assert run.handshakes >= 1
        assert observed_kind(run) == case.kind

    error = expected_error(case.verb, case.fault.key, sim.url)
    qerror = expected_error(case.verb, case.fault.key, queue.url)
    target = sim.target
    if case.kind in ("skipped", "ignored") and case.verb != "preempt":
        # As if there were no extender: the plugins' choice (a tie, n1 by name), at once; a
        # healthy extender would have made it n2 (filter, prioritize) or bound it (bind).
        for run in (sim, queue):
            assert outcomes(run) == [("Scheduled", "n1")]
            assert run.final == {target: "n1"}
            assert run.failed_scheduling == []
            assert not any(a.extender_scored for a in run.attempts)
            assert run.extender_bindings == []
            assert run.client_calls == 1
    elif case.kind == "skipped":  # preempt: DefaultPreemption's own choice, low-1 on n1
        for run in (sim, queue):
            first = run.attempts[0]
            assert (first.outcome, first.message, first.victims, first.nominated) == (
                "Unschedulable", FIT_ERROR, ("default/low-1",), "n1")
            assert outcomes(run)[-1] == ("Scheduled", "n1")
            assert run.final == {"default/low-2": "n2", target: "n1"}
            assert run.deleted == ["default/low-1"] and run.preempted == {"default/low-1"}
    elif case.kind == "attempt fails":
        # schedulingCycle: fwk.AsStatus(err) — SchedulerError, the message is the error itself.
        assert [(a.outcome, a.message) for a in sim.attempts] == [("Error", error)]
        assert sim.final == {target: None} and sim.pending == {target: error}
        # Retried with backoff; the extender heals and then rejects n1 (healthy answer): n2.
        assert [(a.outcome, a.message) for a in queue.attempts[:-1]] == [("Error", qerror)] * FAULTY_REQUESTS
        assert outcomes(queue)[-1] == ("Scheduled", "n2")
        assert queue.failed_scheduling == [qerror] * FAULTY_REQUESTS
        assert queue.final == {target: "n2"}
    elif case.kind == "preemption fails":
        # callExtenders -> AsStatus(err); PostFilter's "preemption: " + message joins the FitError.
        failed = ("Unschedulable", f"{FIT_ERROR} preemption: {error}", (), None)
        assert [(a.outcome, a.message, a.victims, a.nominated) for a in sim.attempts] == [failed]
        assert sim.final == {"default/low-1": "n1", "default/low-2": "n2", target: None}
        assert sim.deleted == [] and sim.preempted == set()
        assert sim.pending == {target: f"{FIT_ERROR} preemption: {error}"}
        # The queue: Unschedulable, so only the 5-minute leftover flush retries it (no cluster
        # event comes); once the extender heals, preemption goes its way: low-2 on n2.
        qfailed = ("Unschedulable", f"{FIT_ERROR} preemption: {qerror}", (), None)
        views = [(a.outcome, a.message, a.victims, a.nominated) for a in queue.attempts]
        assert views[:FAULTY_REQUESTS] == [qfailed] * FAULTY_REQUESTS
        assert views[FAULTY_REQUESTS] == ("Unschedulable", FIT_ERROR, ("default/low-2",), "n2")
        assert outcomes(queue)[-1] == ("Scheduled", "n2")
        assert queue.final == {"default/low-1": "n1", target: "n2"}
        assert queue.deleted == ["default/low-2"] and queue.preempted == {"default/low-2"}
        flushes = [b - a for a, b in itertools.pairwise(a.at for a in queue.attempts[:FAULTY_REQUESTS + 1])]
        assert all(300 < gap <= 330 for gap in flushes), flushes
    elif case.kind == "binding fails":
        # bind -> fwk.AsStatus(err) -> handleBindingCycleError: forgotten, requeued.
        assert [(a.outcome, a.message) for a in sim.attempts] == [("Error", error)]
        assert sim.final == {target: None} and sim.pending == {target: error}
        assert sim.binds[target] == 0 and sim.extender_bindings == []
        assert [(a.outcome, a.message) for a in queue.attempts[:-1]] == [("Error", qerror)] * FAULTY_REQUESTS
        assert outcomes(queue)[-1] == ("Scheduled", "n1")
        assert queue.failed_scheduling == [qerror] * FAULTY_REQUESTS
        assert queue.extender_bindings == [Binding("default/web", "uid-web", "n1")]
        assert queue.binds[target] == 1
    else:  # pragma: no cover
        pytest.fail(f"no expectation for {case.kind!r}")


def test_a_preempt_extender_that_never_heals_is_retried_at_three_leftover_flushes_then_left_pending() -> None:
    """Upstream's flush would retry the pod every 5 minutes forever; the timeline keeps
    POST_FILTER_ERROR_FLUSHES of them after the failure began, then counts the pod as waiting."""
    case = next(c for c in CASES if c.verb == "preempt" and c.fault.key == "5xx" and not c.ignorable)
    run = run_case(case, "virtual-clock queue", faulty=100)
    assert_no_pod_lost(run)
    assert [a.outcome for a in run.attempts] == ["Unschedulable"] * (1 + POST_FILTER_ERROR_FLUSHES)
    assert all(not a.victims for a in run.attempts)
    assert run.final[run.target] is None and run.pending[run.target].endswith(
        "preemption: " + expected_error("preempt", "5xx", run.url))
    assert run.deleted == []


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("verb", VERBS)
def test_a_healthy_extender_changes_the_outcome(verb: str, mode: Mode) -> None:
    """The baseline the skipped cells are compared with: the same extender, healthy, decides."""
    run = run_case(None, mode, verb=verb)
    assert_no_pod_lost(run)
    assert run.client_errors == []
    if verb == "filter":
        assert outcomes(run) == [("Scheduled", "n2")]
    elif verb == "prioritize":
        assert outcomes(run) == [("Scheduled", "n2")] and run.attempts[0].extender_scored
    elif verb == "preempt":
        assert run.attempts[0].victims == ("default/low-2",) and run.final[run.target] == "n2"
    else:
        assert run.extender_bindings == [Binding("default/web", "uid-web", "n1")] and run.binds[run.target] == 1


def test_the_matrix_table_has_a_row_per_verb_and_fault() -> None:
    few = [run_case(c, m) for c in CASES if c.fault.key == "5xx" and c.verb == "bind" for m in MODES]
    table = markdown_table(few).splitlines()
    assert len(table) == 3
    row = table[2].split(" | ")
    assert row[0] == "| bind" and row[1] == "HTTP 503"
    assert row[2] == "`failed bind with extender at URL http://127.0.0.1:PORT/scheduler/bind, code 503`"
    assert row[3] == "sim/queue: **skipped**: bound to n1 by DefaultBinder at attempt 1"
    assert row[4].startswith("sim: **binding fails**: Error with the error, assumed pod forgotten; pending")
    assert "bound to n1 by the extender exactly once" in row[4]
    assert row[-1] == "0 / 0 |"
