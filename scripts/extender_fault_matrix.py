"""Run the extender fault matrix and print it as a markdown table (for the README).

    python scripts/extender_fault_matrix.py [--out FILE] [--json FILE] [--only TEXT]

The same cases as tests/extender/test_fault_matrix.py (kubesched.testing.extender_faults.CASES):
{filter, prioritize, preempt, bind} x {timeout, HTTP 503, malformed JSON, connection refused,
TLS name mismatch, wrong response shape} x {ignorable: true, false}, each a real scheduling run
against a misbehaving extender on 127.0.0.1, in the conformance procedure (``sim``) and on the
virtual-clock queue (``queue``, where the extender heals after its first faulty requests).

Every cell is described from what the run did; the exit status is 1 if a cell departs from
kube-scheduler v1.30's rule for its verb and flag, loses a pod or binds one twice.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from kubesched.testing.extender_faults import (
    CASES,
    FAULTY_REQUESTS,
    HTTP_TIMEOUT,
    MODES,
    OTHER_TIMEOUT,
    CaseRun,
    markdown_table,
    observed_kind,
    run_case,
    run_record,
)

INTRO = f"""\
Each cell is a real scheduling run (`kubesched simulate`'s two procedures) with one extender
implementing only that verb (`httpTimeout: {HTTP_TIMEOUT}` in the timeout cells, {OTHER_TIMEOUT} in the others), served on 127.0.0.1 by a server that
misbehaves that way for its first {FAULTY_REQUESTS} requests and then heals. `sim`: the conformance
procedure (each pod attempted once); `queue`: the scheduling queue on a virtual clock (failed pods
retried with backoff). Filter/prioritize/bind: one pending pod `web` on two equal nodes (alone, the
scheduler picks n1; the healthy extender rejects n1 / prefers n2 / binds). Preempt: `urgent` must
evict `low-1` (n1) or `low-2` (n2); DefaultPreemption alone picks low-1, the healthy extender low-2.
Regenerate with `python scripts/extender_fault_matrix.py`.
"""

NOTES = """\
- The error column is what kube-scheduler v1.30's `HTTPExtender` returns (net/http's `*url.Error`,
  `send`'s status error, encoding/json's decoding error): for malformed JSON and a wrong shape that
  is Go's bare decoder error, which does not name the extender — kube-scheduler's neither.
- In `queue`, a pod whose preemption failed is unschedulable (a FitError, not an Error): no cluster
  event comes, so kube-scheduler retries it at the 5-minute unschedulable leftover flush, and again
  every 5 minutes; the timeline keeps three such flushes after the failure began
  (`kubesched.timeline.POST_FILTER_ERROR_FLUSHES`), so the healed extender is used at the third
  attempt, 660 s in (the flush runs every 30 s and moves a pod that has waited more than 5 minutes).
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="write the markdown (intro, table, notes) here too")
    ap.add_argument("--json", type=Path, help="write every run's record here")
    ap.add_argument("--only", default="", help="only the cases whose sentence contains this text")
    args = ap.parse_args(argv)

    started = time.perf_counter()
    cases = [c for c in CASES if args.only in c.sentence]
    runs: list[CaseRun] = []
    problems: list[str] = []
    failing: set[tuple[str, str]] = set()
    for case in cases:
        for mode in MODES:
            run = run_case(case, mode)
            runs.append(run)
            seen = observed_kind(run)
            if seen != case.kind:
                failing.add((case.sentence, mode))
                problems.append(f"{case.sentence} [{mode}]: kube-scheduler's outcome is {case.kind!r}, "
                                f"the run shows {seen!r}")
            if run.lost or run.double_bound or run.cache_problems:
                failing.add((case.sentence, mode))
                problems.append(f"{case.sentence} [{mode}]: lost {run.lost}, bound twice {run.double_bound}, "
                                f"cache {run.cache_problems}")
    elapsed = time.perf_counter() - started

    text = f"{INTRO}\n{markdown_table(runs)}\n{NOTES}"
    print(text)
    total = len(cases) * len(MODES)
    summary = (f"{len(cases)} cases x {len(MODES)} procedures in {elapsed:.1f} s; "
               f"{total - len(failing)}/{total} runs as kube-scheduler v1.30, no pod lost or bound twice"
               if not failing else f"{len(failing)}/{total} runs depart from kube-scheduler v1.30 or lose pods")
    print(summary, file=sys.stderr)
    for p in problems:
        print("MISMATCH: " + p, file=sys.stderr)
    if args.out:
        args.out.write_text(text)
    if args.json:
        args.json.write_text(json.dumps([run_record(r) for r in runs], indent=1, default=sorted))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
